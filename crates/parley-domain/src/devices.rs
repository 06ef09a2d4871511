//! The devices an operator's sign-ins are notified on.
//!
//! A device belongs to the sign-in (a login token or a web session) that
//! registered it: whatever ends the sign-in (logout, revocation, a new
//! password, disabling the operator) removes it in the same unit, and one
//! whose sign-in has expired is neither listed nor pushed to. A push
//! token is one device's across the service: registering it again moves
//! it to the new sign-in.

use std::sync::Arc;

use crate::clock::Clock;
use crate::error::DomainError;
use crate::model::{Device, DeviceId, NewDevice, Platform, Session, WebPushKeys};
use crate::store::Database;
use crate::webhooks::target;

/// A device to register, as the request gave it (its fields checked for
/// their shape; a browser's endpoint is checked here, where the address
/// rules live).
#[derive(Clone, Debug)]
pub struct DeviceInput {
    pub platform: Platform,
    pub push_token: String,
    pub web_keys: Option<WebPushKeys>,
    pub app_id: Option<String>,
    pub name: Option<String>,
    pub locale: Option<String>,
}

/// Devices an operator may have at once: phones, tablets and browsers
/// enough for anyone, few enough that a token cannot fan one push out to
/// a crowd of endpoints.
pub const MAX_DEVICES_PER_OPERATOR: usize = 20;

#[derive(Clone)]
pub struct DevicesService {
    db: Database,
    clock: Arc<dyn Clock>,
    /// Whether a browser's push endpoint may be inside the network (the
    /// webhook rule, `PARLEY_WEBHOOK_ALLOW_PRIVATE`).
    allow_private: bool,
}

impl DevicesService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, allow_private: bool) -> Self {
        Self { db, clock, allow_private }
    }

    /// Registers a device for the caller's sign-in.
    pub async fn register(&self, session: &Session, input: DeviceInput) -> Result<Device, DomainError> {
        if input.platform == Platform::Web {
            // Browsers name their push service; it is fetched from here
            // like a webhook, so it passes the same address rules, and
            // only over TLS (RFC 8030 requires it).
            let url = target::check_url(&input.push_token, self.allow_private).await.map_err(|m| DomainError::invalid("push_token", m))?;
            if url.scheme() != "https" {
                return Err(DomainError::invalid("push_token", "a web subscription's endpoint must be an https URL"));
            }
        }
        let tenant = session.tenant.id;
        let device = NewDevice {
            operator_id: session.operator.id,
            token_id: session.token_id,
            platform: input.platform,
            // Per platform: one provider's token cannot displace another's.
            push_key: crate::password::token_digest(&format!("{}:{}", input.platform.as_str(), input.push_token)),
            push_token: input.push_token,
            web_keys: input.web_keys,
            app_id: input.app_id,
            name: input.name,
            locale: input.locale,
            created_at: self.clock.now(),
        };
        let now = device.created_at;
        self.db
            .write(move |tx| {
                // Counted in the write, so registrations side by side cannot
                // pass the cap; the device being registered again is not a
                // new one.
                if tx.other_devices(tenant, device.operator_id, &device.push_key, now)? >= MAX_DEVICES_PER_OPERATOR as u64 {
                    return Err(DomainError::invalid(
                        "push_token",
                        format!("an operator may have at most {MAX_DEVICES_PER_OPERATOR} devices: remove one first"),
                    ));
                }
                // A sign-in that ended between its check and this write (a
                // logout on another connection) registers nothing.
                tx.insert_device(tenant, &device)?.ok_or(DomainError::Unauthenticated)
            })
            .await
    }

    /// The caller's devices whose sign-in still holds, oldest first.
    pub async fn list(&self, session: &Session) -> Result<Vec<Device>, DomainError> {
        let (tenant, operator, now) = (session.tenant.id, session.operator.id, self.clock.now());
        self.db.read(move |r| Ok(r.devices(tenant, operator, now)?)).await
    }

    /// Removes one of the caller's devices; another's is not found.
    pub async fn remove(&self, session: &Session, id: DeviceId) -> Result<(), DomainError> {
        let (tenant, operator) = (session.tenant.id, session.operator.id);
        let removed = self.db.write(move |tx| Ok(tx.delete_device(tenant, operator, id)?)).await?;
        if removed { Ok(()) } else { Err(DomainError::NotFound) }
    }
}
