//! Operators, their site memberships and their bearer tokens.

use std::collections::HashMap;

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::ops::{OperatorsRead, OperatorsWrite};
use parley_domain::store::{StoreError, StoreResult};

use super::tenancy::{TENANT_COLS, tenant};
use super::{Row, Tx, args, id_list, statements};

const OPERATOR_COLS: &str = "o.id AS o_id, o.tenant_id AS o_tenant_id, o.email AS o_email, o.name AS o_name, \
     o.role AS o_role, o.active AS o_active, o.created_at AS o_created_at";

fn operator(r: &dyn Row) -> StoreResult<Operator> {
    Ok(Operator {
        id: OperatorId(r.i64("o_id")?),
        tenant_id: TenantId(r.i64("o_tenant_id")?),
        email: r.string("o_email")?,
        name: r.string("o_name")?,
        role: r.parsed("o_role", Role::parse)?,
        active: r.flag("o_active")?,
        site_ids: Vec::new(),
        created_at: r.ts("o_created_at")?,
    })
}

statements! {
    SESSION[Bytes](_) => format!(
        "SELECT {OPERATOR_COLS}, {TENANT_COLS}, tok.id AS tok_id, tok.kind AS tok_kind, tok.expires_at AS tok_expires_at,
             tok.last_used_at AS tok_last_used_at
         FROM operator_tokens tok
         JOIN operators o ON o.id = tok.operator_id AND o.tenant_id = tok.tenant_id
         JOIN tenants t ON t.id = tok.tenant_id
         WHERE tok.token_hash = ?1 AND tok.revoked_at IS NULL"
    ),
    TOKEN_HOLDS[Bytes, Int, Int, Int, Text](_) =>
        "SELECT tok.id AS held FROM operator_tokens tok
         JOIN operators o ON o.id = tok.operator_id AND o.tenant_id = tok.tenant_id
         WHERE tok.token_hash = ?1 AND tok.revoked_at IS NULL AND tok.expires_at > ?2
           AND tok.tenant_id = ?3 AND o.id = ?4 AND o.role = ?5 AND o.active = TRUE".into(),
    /// Emails are unique whatever their case, and found the same way.
    LOGIN_OPERATOR[Text](_) => format!("SELECT {OPERATOR_COLS}, o.password_hash AS o_password_hash FROM operators o WHERE lower(o.email) = lower(?1)"),
    OPERATORS[Int](_) => format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = ?1 ORDER BY o.id"),
    OPERATOR[Int, Int](_) => format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = ?1 AND o.id = ?2"),
    OPERATOR_BY_EMAIL[Int, Text](_) => format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = ?1 AND lower(o.email) = lower(?2)"),
    OPERATOR_SITES[Int, Int](_) => "SELECT site_id FROM operator_sites WHERE tenant_id = ?1 AND operator_id = ?2 ORDER BY site_id".into(),
    TENANT_MEMBERSHIPS[Int](_) => "SELECT operator_id, site_id FROM operator_sites WHERE tenant_id = ?1 ORDER BY operator_id, site_id".into(),
    INSERT_OPERATOR[Int, Text, Text, Text, Text, Int](_) => "INSERT INTO operators (tenant_id, email, name, password_hash, role, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id".into(),
    /// Only sites of the operator's tenant are added; the caller compares
    /// the count with the sites it asked for.
    ADD_MEMBERSHIPS[Int, Int, Text](d) => format!(
        "INSERT INTO operator_sites (tenant_id, operator_id, site_id)
         SELECT ?1, ?2, s.id FROM sites s WHERE s.tenant_id = ?1 AND s.id IN ({})",
        d.id_list("?3")
    ),
    CLEAR_MEMBERSHIPS[Int, Int](_) => "DELETE FROM operator_sites WHERE tenant_id = ?1 AND operator_id = ?2".into(),
    UPDATE_OPERATOR[Int, Int, Text, Text, Bool, Text](_) => "UPDATE operators SET name = COALESCE(?3, name), role = COALESCE(?4, role),
             active = COALESCE(?5, active), password_hash = COALESCE(?6, password_hash)
         WHERE tenant_id = ?1 AND id = ?2".into(),
    INSERT_TOKEN[Int, Int, Text, Bytes, Text, Int, Int](_) =>
        "INSERT INTO operator_tokens (tenant_id, operator_id, kind, token_hash, device_name, created_at, expires_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (SELECT 1 FROM operators WHERE id = ?2 AND tenant_id = ?1)
         RETURNING id".into(),
    /// Live and expired ones alike (the list says which), newest first;
    /// revoked ones are gone.
    PERSONAL_TOKENS[Int, Int](_) => "SELECT id, device_name, created_at, expires_at, last_used_at FROM operator_tokens
         WHERE tenant_id = ?1 AND operator_id = ?2 AND kind = 'personal' AND revoked_at IS NULL ORDER BY id DESC".into(),
    REVOKE_PERSONAL_TOKEN[Int, Int, Int, Int](_) => "UPDATE operator_tokens SET revoked_at = ?4
         WHERE tenant_id = ?1 AND operator_id = ?2 AND id = ?3 AND kind = 'personal' AND revoked_at IS NULL".into(),
    /// At most once a minute per token, whichever instance gets there.
    TOUCH_TOKEN[Int, Int, Int](_) => "UPDATE operator_tokens SET last_used_at = ?3
         WHERE tenant_id = ?1 AND id = ?2 AND (last_used_at IS NULL OR last_used_at < ?3 - 60000)".into(),
    REVOKE_TOKEN[Int, Int, Int](_) => "UPDATE operator_tokens SET revoked_at = ?3 WHERE tenant_id = ?1 AND id = ?2 AND revoked_at IS NULL".into(),
    REVOKE_OPERATOR_TOKENS[Int, Int, Int](_) =>
        "UPDATE operator_tokens SET revoked_at = ?3 WHERE tenant_id = ?1 AND operator_id = ?2 AND revoked_at IS NULL".into(),
}

impl Tx<'_> {
    fn with_sites(&mut self, mut op: Operator) -> StoreResult<Operator> {
        op.site_ids = self.all(&OPERATOR_SITES, args![op.tenant_id, op.id], |r| Ok(SiteId(r.i64("site_id")?)))?;
        Ok(op)
    }

    /// Adds site memberships; a site of another tenant is refused.
    fn add_memberships(&mut self, tenant: TenantId, operator: OperatorId, sites: &[SiteId]) -> StoreResult<()> {
        let mut wanted: Vec<i64> = sites.iter().map(|s| s.0).collect();
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(());
        }
        let added = self.exec(&ADD_MEMBERSHIPS, args![tenant, operator, &id_list(wanted.iter().copied())])?;
        if added != wanted.len() {
            return Err(StoreError::Internal(format!("a site of {sites:?} is not in tenant {}", tenant.0)));
        }
        Ok(())
    }
}

impl OperatorsRead for Tx<'_> {
    fn session(&mut self, token_hash: &[u8]) -> StoreResult<Option<Session>> {
        let found = self.one(&SESSION, args![token_hash], |r| {
            Ok(Session {
                operator: operator(r)?,
                tenant: tenant(r)?,
                token_id: TokenId(r.i64("tok_id")?),
                kind: r.parsed("tok_kind", TokenKind::parse)?,
                expires_at: r.ts("tok_expires_at")?,
                last_used_at: r.opt_ts("tok_last_used_at")?,
            })
        })?;
        let Some(mut session) = found else {
            return Ok(None);
        };
        session.operator = self.with_sites(session.operator)?;
        Ok(Some(session))
    }

    fn token_holds(&mut self, token_hash: &[u8], scope: OperatorScope, now: Timestamp) -> StoreResult<bool> {
        let found = self.one(&TOKEN_HOLDS, args![token_hash, now, scope.tenant, scope.operator, scope.role.as_str()], |r| r.i64("held"))?;
        Ok(found.is_some())
    }

    fn login_operator(&mut self, email: &str) -> StoreResult<Option<(Operator, String)>> {
        let Some((op, hash)) = self.one(&LOGIN_OPERATOR, args![email], |r| Ok((operator(r)?, r.string("o_password_hash")?)))? else {
            return Ok(None);
        };
        Ok(Some((self.with_sites(op)?, hash)))
    }

    fn operators(&mut self, tenant: TenantId) -> StoreResult<Vec<Operator>> {
        let mut list = self.all(&OPERATORS, args![tenant], operator)?;
        let mut sites: HashMap<i64, Vec<SiteId>> = HashMap::new();
        for (op, site) in self.all(&TENANT_MEMBERSHIPS, args![tenant], |r| Ok((r.i64("operator_id")?, SiteId(r.i64("site_id")?))))? {
            sites.entry(op).or_default().push(site);
        }
        for op in &mut list {
            op.site_ids = sites.remove(&op.id.0).unwrap_or_default();
        }
        Ok(list)
    }

    fn operator(&mut self, tenant: TenantId, id: OperatorId) -> StoreResult<Option<Operator>> {
        match self.one(&OPERATOR, args![tenant, id], operator)? {
            Some(op) => Ok(Some(self.with_sites(op)?)),
            None => Ok(None),
        }
    }

    fn personal_tokens(&mut self, tenant: TenantId, operator: OperatorId) -> StoreResult<Vec<PersonalToken>> {
        if self.writing {
            // A unit that decides on the list (the bound, a repeated
            // name) waits for another doing the same for this operator.
            self.transaction_lock(crate::locks::named(&format!("personal tokens of {}", operator.0)))?;
        }
        self.all(&PERSONAL_TOKENS, args![tenant, operator], |r| {
            Ok(PersonalToken {
                id: TokenId(r.i64("id")?),
                name: r.text("device_name")?.unwrap_or_default(),
                created_at: r.ts("created_at")?,
                expires_at: r.ts("expires_at")?,
                last_used_at: r.opt_ts("last_used_at")?,
            })
        })
    }

    fn operator_by_email(&mut self, tenant: TenantId, email: &str) -> StoreResult<Option<Operator>> {
        match self.one(&OPERATOR_BY_EMAIL, args![tenant, email], operator)? {
            Some(op) => Ok(Some(self.with_sites(op)?)),
            None => Ok(None),
        }
    }
}

impl OperatorsWrite for Tx<'_> {
    fn insert_operator(&mut self, tenant: TenantId, o: &NewOperator) -> StoreResult<Operator> {
        let id =
            OperatorId(self.insert(&INSERT_OPERATOR, args![tenant, &o.email, &o.name, &o.password_hash, o.role.as_str(), o.created_at])?);
        self.add_memberships(tenant, id, &o.site_ids)?;
        Ok(Operator {
            id,
            tenant_id: tenant,
            email: o.email.clone(),
            name: o.name.clone(),
            role: o.role,
            active: true,
            site_ids: o.site_ids.clone(),
            created_at: o.created_at,
        })
    }

    fn update_operator(&mut self, tenant: TenantId, id: OperatorId, ch: &OperatorChanges) -> StoreResult<()> {
        self.exec(&UPDATE_OPERATOR, args![tenant, id, &ch.name, ch.role.map(Role::as_str), ch.active, &ch.password_hash])?;
        if let Some(sites) = &ch.site_ids {
            self.exec(&CLEAR_MEMBERSHIPS, args![tenant, id])?;
            self.add_memberships(tenant, id, sites)?;
        }
        Ok(())
    }

    fn insert_operator_token(&mut self, tenant: TenantId, t: &NewOperatorToken) -> StoreResult<TokenId> {
        let args = args![tenant, t.operator_id, t.kind.as_str(), &t.token_hash, &t.device_name, t.created_at, t.expires_at];
        Ok(TokenId(self.insert(&INSERT_TOKEN, args)?))
    }

    fn revoke_personal_token(&mut self, tenant: TenantId, operator: OperatorId, token: TokenId, at: Timestamp) -> StoreResult<bool> {
        Ok(self.exec(&REVOKE_PERSONAL_TOKEN, args![tenant, operator, token, at])? == 1)
    }

    fn touch_token(&mut self, tenant: TenantId, token: TokenId, at: Timestamp) -> StoreResult<()> {
        self.exec(&TOUCH_TOKEN, args![tenant, token, at])?;
        Ok(())
    }

    fn revoke_token(&mut self, tenant: TenantId, token: TokenId, at: Timestamp) -> StoreResult<()> {
        self.exec(&REVOKE_TOKEN, args![tenant, token, at])?;
        Ok(())
    }

    fn revoke_operator_tokens(&mut self, tenant: TenantId, operator: OperatorId, at: Timestamp) -> StoreResult<()> {
        self.exec(&REVOKE_OPERATOR_TOKENS, args![tenant, operator, at])?;
        Ok(())
    }
}
