//! Canned responses: the tenant's texts under shortcuts.

use parley_domain::Timestamp;
use parley_domain::canned::{CannedResponse, CannedText};
use parley_domain::model::*;
use parley_domain::store::ops::{CannedRead, CannedWrite};
use parley_domain::store::{StoreError, StoreResult};

use super::{Row, Tx, statements};

const COLS: &str = "r.id AS id, r.shortcut AS shortcut, r.body AS body, r.created_at AS created_at, r.updated_at AS updated_at";

statements! {
    CANNED_RESPONSES(tenant: TenantId) => |_|
        format!("SELECT {COLS} FROM canned_responses r WHERE r.tenant_id = :tenant ORDER BY r.shortcut"),
    INSERT_CANNED<'a>(tenant: TenantId, shortcut: &'a str, body: &'a str, at: Timestamp) => |_|
        "INSERT INTO canned_responses (tenant_id, shortcut, body, created_at, updated_at)
         VALUES (:tenant, :shortcut, :body, :at, :at) RETURNING id".into(),
    UPDATE_CANNED<'a>(tenant: TenantId, id: CannedId, shortcut: &'a str, body: &'a str, at: Timestamp) => |_|
        "UPDATE canned_responses SET shortcut = :shortcut, body = :body, updated_at = :at
         WHERE tenant_id = :tenant AND id = :id".into(),
    DELETE_CANNED(tenant: TenantId, id: CannedId) => |_|
        "DELETE FROM canned_responses WHERE tenant_id = :tenant AND id = :id RETURNING shortcut".into(),
}

fn canned(r: &dyn Row) -> StoreResult<CannedResponse> {
    Ok(CannedResponse {
        id: CannedId(r.i64("id")?),
        shortcut: r.string("shortcut")?,
        body: r.string("body")?,
        created_at: r.ts("created_at")?,
        updated_at: r.ts("updated_at")?,
    })
}

impl Tx<'_> {
    /// Units that change one tenant's responses run one after the other.
    fn lock_canned(&mut self, tenant: TenantId) -> StoreResult<()> {
        self.transaction_lock(crate::locks::named(&format!("canned responses of {}", tenant.0)))
    }
}

impl CannedRead for Tx<'_> {
    fn canned_responses(&mut self, tenant: TenantId) -> StoreResult<Vec<CannedResponse>> {
        self.all(CANNED_RESPONSES { tenant }, canned)
    }
}

impl CannedWrite for Tx<'_> {
    fn lock_canned_responses(&mut self, tenant: TenantId) -> StoreResult<Vec<CannedResponse>> {
        self.lock_canned(tenant)?;
        self.all(CANNED_RESPONSES { tenant }, canned)
    }

    fn insert_canned_response(&mut self, tenant: TenantId, text: &CannedText, at: Timestamp) -> StoreResult<CannedResponse> {
        let id = self.insert(INSERT_CANNED { tenant, shortcut: &text.shortcut, body: &text.body, at })?;
        Ok(CannedResponse { id: CannedId(id), shortcut: text.shortcut.clone(), body: text.body.clone(), created_at: at, updated_at: at })
    }

    fn update_canned_response(&mut self, tenant: TenantId, id: CannedId, text: &CannedText, at: Timestamp) -> StoreResult<()> {
        match self.exec(UPDATE_CANNED { tenant, id, shortcut: &text.shortcut, body: &text.body, at })? {
            1 => Ok(()),
            _ => Err(StoreError::Internal("the canned response to update is gone".into())),
        }
    }

    fn delete_canned_response(&mut self, tenant: TenantId, id: CannedId) -> StoreResult<Option<String>> {
        self.lock_canned(tenant)?;
        self.one(DELETE_CANNED { tenant, id }, |r| r.string("shortcut"))
    }
}
