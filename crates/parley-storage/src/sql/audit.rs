//! The audit log: one row per admin change, read newest first.

use parley_domain::Timestamp;
use parley_domain::audit::{Action, Actor, AuditEntry, NewAuditEntry};
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{AuditRead, AuditWrite};

use super::row::to_json;
use super::{Row, Tx, statements};

const COLS: &str = "e.id AS id, e.operator_id AS operator_id, e.actor AS actor, e.client_address AS client_address, \
     e.action AS action, e.target_id AS target_id, e.details AS details, e.created_at AS created_at";

statements! {
    AUDIT_ENTRIES(tenant: TenantId, limit: u32, offset: u64) => |_| format!(
        "SELECT {COLS} FROM audit_entries e WHERE e.tenant_id = :tenant ORDER BY e.id DESC LIMIT :limit OFFSET :offset"
    ),
    COUNT_AUDIT_ENTRIES(tenant: TenantId) => |_| "SELECT COUNT(*) AS n FROM audit_entries WHERE tenant_id = :tenant".into(),
    /// The operator is the tenant's or none: an entry cannot name
    /// another tenant's operator as its author.
    INSERT_AUDIT_ENTRY<'a>(
        tenant: TenantId, operator: Option<OperatorId>, actor: &'a str, client_address: Option<&'a str>, action: &'a str,
        target_id: Option<i64>, details: &'a str, created_at: Timestamp,
    ) => |_| "INSERT INTO audit_entries (tenant_id, operator_id, actor, client_address, action, target_id, details, created_at)
         SELECT :tenant, :operator, :actor, :client_address, :action, :target_id, :details, :created_at
         WHERE :operator IS NULL OR EXISTS (SELECT 1 FROM operators o WHERE o.id = :operator AND o.tenant_id = :tenant)".into(),
}

fn entry(r: &dyn Row) -> StoreResult<AuditEntry> {
    Ok(AuditEntry {
        id: AuditId(r.i64("id")?),
        actor: Actor {
            operator: r.int("operator_id")?.map(OperatorId),
            name: r.string("actor")?,
            address: r.text("client_address")?.and_then(|a| a.parse().ok()),
        },
        action: r.parsed("action", Action::parse)?,
        target_id: r.int("target_id")?,
        details: r.json("details")?,
        created_at: r.ts("created_at")?,
    })
}

impl AuditRead for Tx<'_> {
    fn audit_entries(&mut self, tenant: TenantId, limit: u32, offset: u64) -> StoreResult<Vec<AuditEntry>> {
        self.all(AUDIT_ENTRIES { tenant, limit, offset }, entry)
    }

    fn count_audit_entries(&mut self, tenant: TenantId) -> StoreResult<u64> {
        self.count(COUNT_AUDIT_ENTRIES { tenant })
    }
}

impl AuditWrite for Tx<'_> {
    fn insert_audit_entry(&mut self, tenant: TenantId, e: &NewAuditEntry<'_>) -> StoreResult<()> {
        let address = e.actor.address.map(|a| a.to_string());
        let written = self.exec(INSERT_AUDIT_ENTRY {
            tenant,
            operator: e.actor.operator,
            actor: &e.actor.name,
            client_address: address.as_deref(),
            action: e.action.as_str(),
            target_id: e.target_id,
            details: &to_json(e.details)?,
            created_at: e.created_at,
        })?;
        match written {
            1 => Ok(()),
            _ => Err(parley_domain::store::StoreError::Internal("an audit entry named another tenant's operator".into())),
        }
    }
}
