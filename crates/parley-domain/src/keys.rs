//! The installation's own secret, made at the first start and kept in the
//! database, so that every instance sharing it agrees and a restart keeps
//! what was issued valid. Each use gets a key of its own derived from it
//! (HMAC-SHA256 of the use's name), so no two uses ever share a key.

use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::clock::Clock;
use crate::error::DomainError;
use crate::store::{Database, StoreError};

/// The name the secret is kept under.
const MASTER: &str = "master";

/// What a derived key is for.
#[derive(Clone, Copy, Debug)]
pub enum Purpose {
    /// Sealing visitors' feed cursors (AES-SIV).
    VisitorCursor,
    /// Signing the marks of browsers and apps that signed in before.
    DeviceMark,
    /// The reply addresses and unsubscribe links of visitors' emails.
    VisitorMail,
    /// Links to attachments.
    FileLink,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::VisitorCursor => b"parley visitor cursor v1",
            Purpose::DeviceMark => b"parley device mark v1",
            Purpose::VisitorMail => b"parley visitor mail v1",
            Purpose::FileLink => b"parley file link v1",
        }
    }
}

/// The keys derived from the installation's secret, one per use.
#[derive(Clone)]
pub struct ServerKeys {
    visitor_cursor: [u8; 32],
    device_mark: [u8; 32],
    visitor_mail: [u8; 32],
    file_link: [u8; 32],
}

impl std::fmt::Debug for ServerKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerKeys(..)")
    }
}

impl ServerKeys {
    /// The installation's secret: made and kept by the first instance to
    /// start, read by every other (two starting at once keep the first).
    pub async fn load(db: &Database, clock: &Arc<dyn Clock>) -> Result<Self, DomainError> {
        let kept = keep(db, clock, MASTER, crate::ids::random_bytes::<32>()?.to_vec()).await?;
        let master: [u8; 32] = kept.try_into().map_err(|_| StoreError::Internal("the installation's secret is not 32 bytes".into()))?;
        Ok(Self::from_secret(master))
    }

    /// The keys of a given secret.
    pub fn from_secret(master: [u8; 32]) -> Self {
        Self {
            visitor_cursor: derive(&master, Purpose::VisitorCursor),
            device_mark: derive(&master, Purpose::DeviceMark),
            visitor_mail: derive(&master, Purpose::VisitorMail),
            file_link: derive(&master, Purpose::FileLink),
        }
    }

    /// The key of one use.
    pub fn key(&self, purpose: Purpose) -> &[u8; 32] {
        match purpose {
            Purpose::VisitorCursor => &self.visitor_cursor,
            Purpose::DeviceMark => &self.device_mark,
            Purpose::VisitorMail => &self.visitor_mail,
            Purpose::FileLink => &self.file_link,
        }
    }
}

/// The server key kept under `name`: `fresh` when this is the first
/// instance to start, otherwise (another instance made one first) what
/// that one kept. Every instance sharing the database ends with the same.
pub async fn keep(db: &Database, clock: &Arc<dyn Clock>, name: &'static str, fresh: Vec<u8>) -> Result<Vec<u8>, DomainError> {
    let now = clock.now();
    Ok(db
        .write(move |tx| {
            tx.insert_server_key(name, &fresh, now)?;
            Ok(tx.server_key(name)?)
        })
        .await?
        .ok_or_else(|| StoreError::Internal(format!("the server key {name:?} was not kept")))?)
}

/// HMAC-SHA256 of the use's name under the secret.
fn derive(master: &[u8; 32], purpose: Purpose) -> [u8; 32] {
    let mut mac = hmac(master);
    mac.update(purpose.label());
    mac.finalize().into_bytes().into()
}

/// HMAC-SHA256 under a 32-byte key. Such a key fits the hash's 64-byte
/// block, so it is padded, never hashed first: no length can fail, and
/// nothing here needs to handle an error.
pub(crate) fn hmac(key: &[u8; 32]) -> Hmac<Sha256> {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    <Hmac<Sha256> as KeyInit>::new(&block.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uses_get_different_keys_and_the_same_secret_gives_the_same_keys() {
        let a = ServerKeys::from_secret([7; 32]);
        assert_ne!(a.key(Purpose::VisitorCursor), a.key(Purpose::DeviceMark));
        assert_eq!(a.key(Purpose::DeviceMark), ServerKeys::from_secret([7; 32]).key(Purpose::DeviceMark));
        assert_ne!(a.key(Purpose::DeviceMark), ServerKeys::from_secret([8; 32]).key(Purpose::DeviceMark));
        // HMAC-SHA256 of the label under the secret, as any HMAC computes it.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&[7; 32]).unwrap();
        mac.update(b"parley device mark v1");
        assert_eq!(a.key(Purpose::DeviceMark).as_slice(), mac.finalize().into_bytes().as_slice());
    }
}
