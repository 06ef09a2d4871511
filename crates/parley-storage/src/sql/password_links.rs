//! Set-password links: invitations and resets, kept as digests.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{PasswordLinksRead, PasswordLinksWrite};

use super::{Row, Tx, statements};

statements! {
    /// The operator must be the tenant's.
    INSERT_PASSWORD_LINK<'a>(
        tenant: TenantId, operator: OperatorId, token_hash: &'a [u8], created_at: Timestamp, expires_at: Timestamp,
    ) => |_| "INSERT INTO password_links (tenant_id, operator_id, token_hash, created_at, expires_at)
         SELECT :tenant, :operator, :token_hash, :created_at, :expires_at
         WHERE EXISTS (SELECT 1 FROM operators WHERE id = :operator AND tenant_id = :tenant)".into(),
    PASSWORD_LINK<'a>(token_hash: &'a [u8]) locked PASSWORD_LINK_LOCKED => |_|
        "SELECT l.tenant_id AS tenant_id, l.operator_id AS operator_id, l.expires_at AS expires_at, l.used_at AS used_at
         FROM password_links l WHERE l.token_hash = :token_hash".into(),
    SPEND_PASSWORD_LINKS(tenant: TenantId, operator: OperatorId, at: Timestamp) => |_|
        "UPDATE password_links SET used_at = :at WHERE tenant_id = :tenant AND operator_id = :operator AND used_at IS NULL".into(),
}

fn link(r: &dyn Row) -> StoreResult<PasswordLink> {
    Ok(PasswordLink {
        tenant: TenantId(r.i64("tenant_id")?),
        operator: OperatorId(r.i64("operator_id")?),
        expires_at: r.ts("expires_at")?,
        used_at: r.opt_ts("used_at")?,
    })
}

impl PasswordLinksRead for Tx<'_> {
    fn password_link(&mut self, token_hash: &[u8]) -> StoreResult<Option<PasswordLink>> {
        self.one(self.locking(PASSWORD_LINK { token_hash }), link)
    }
}

impl PasswordLinksWrite for Tx<'_> {
    fn insert_password_link(&mut self, tenant: TenantId, l: &NewPasswordLink) -> StoreResult<()> {
        let params = INSERT_PASSWORD_LINK {
            tenant,
            operator: l.operator,
            token_hash: &l.token_hash,
            created_at: l.created_at,
            expires_at: l.expires_at,
        };
        match self.exec(params)? {
            1 => Ok(()),
            _ => Err(parley_domain::store::StoreError::Internal("a password link for another tenant's operator".into())),
        }
    }

    fn spend_password_links(&mut self, tenant: TenantId, operator: OperatorId, at: Timestamp) -> StoreResult<()> {
        self.exec(SPEND_PASSWORD_LINKS { tenant, operator, at }).map(|_| ())
    }
}
