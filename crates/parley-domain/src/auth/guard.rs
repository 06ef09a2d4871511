//! What an operator's follower of the feed checks in every read: that the
//! token it was opened with still holds, with the operator's scope, in the
//! same snapshot as the entries the read hands out. An entry committed
//! after a logout, a revocation, a new password or disabling is then
//! never handed to the token's holder, whichever instance ended the token:
//! the snapshot that sees the entry sees the end too.

use crate::clock::Timestamp;
use crate::model::OperatorScope;
use crate::password;
use crate::store::{ReadTx, StoreResult};

#[derive(Clone, Debug)]
pub struct SessionGuard {
    /// The token's digest, as it is stored.
    digest: Vec<u8>,
    scope: OperatorScope,
}

impl SessionGuard {
    /// The guard of `token` (a bearer token or a session cookie) that was
    /// authenticated with `scope`.
    pub fn new(token: &str, scope: OperatorScope) -> Self {
        Self { digest: password::token_digest(token), scope }
    }

    /// Whether the token is still live, of an active operator whose role
    /// has not changed (with a new one the client reconnects and reads
    /// with its new scope; sites are read with the entries themselves).
    pub(crate) fn holds(&self, r: &mut dyn ReadTx, now: Timestamp) -> StoreResult<bool> {
        r.token_holds(&self.digest, self.scope, now)
    }
}
