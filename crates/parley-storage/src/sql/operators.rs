//! Operators, their site memberships and their bearer tokens.

use std::collections::HashMap;

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::ops::{OperatorsRead, OperatorsWrite};
use parley_domain::store::{StoreError, StoreResult};

use super::tenancy::{TENANT_COLS, tenant};
use super::{IdList, Row, Tx, statements};

const OPERATOR_COLS: &str = "o.id AS o_id, o.tenant_id AS o_tenant_id, o.email AS o_email, o.name AS o_name, \
     o.role AS o_role, o.active AS o_active, o.created_at AS o_created_at, \
     CASE WHEN o.password_hash = '' THEN FALSE ELSE TRUE END AS o_password_set, \
     o.notify_unassigned AS o_notify_unassigned, o.notify_mine AS o_notify_mine";

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
        password_set: r.flag("o_password_set")?,
        notify: NotifyChoices { unassigned: r.flag("o_notify_unassigned")?, mine: r.flag("o_notify_mine")? },
    })
}

statements! {
    SESSION<'a>(token_hash: &'a [u8]) => |_| format!(
        "SELECT {OPERATOR_COLS}, {TENANT_COLS}, tok.id AS tok_id, tok.kind AS tok_kind, tok.expires_at AS tok_expires_at,
             tok.last_used_at AS tok_last_used_at
         FROM operator_tokens tok
         JOIN operators o ON o.id = tok.operator_id AND o.tenant_id = tok.tenant_id
         JOIN tenants t ON t.id = tok.tenant_id
         WHERE tok.token_hash = :token_hash AND tok.revoked_at IS NULL"
    ),
    TOKEN_HOLDS<'a>(token_hash: &'a [u8], now: Timestamp, tenant: TenantId, operator: OperatorId, role: &'a str) => |_|
        "SELECT tok.id AS held FROM operator_tokens tok
         JOIN operators o ON o.id = tok.operator_id AND o.tenant_id = tok.tenant_id
         WHERE tok.token_hash = :token_hash AND tok.revoked_at IS NULL AND tok.expires_at > :now
           AND tok.tenant_id = :tenant AND o.id = :operator AND o.role = :role AND o.active = TRUE".into(),
    /// Emails are unique whatever their case, and found the same way.
    LOGIN_OPERATOR<'a>(email: &'a str) => |_|
        format!("SELECT {OPERATOR_COLS}, o.password_hash AS o_password_hash FROM operators o WHERE lower(o.email) = lower(:email)"),
    OPERATORS(tenant: TenantId) => |_| format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = :tenant ORDER BY o.id"),
    OPERATOR(tenant: TenantId, id: OperatorId) => |_|
        format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = :tenant AND o.id = :id"),
    OPERATOR_BY_EMAIL<'a>(tenant: TenantId, email: &'a str) => |_|
        format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = :tenant AND lower(o.email) = lower(:email)"),
    OPERATOR_SITES(tenant: TenantId, operator: OperatorId) => |_|
        "SELECT site_id FROM operator_sites WHERE tenant_id = :tenant AND operator_id = :operator ORDER BY site_id".into(),
    TENANT_MEMBERSHIPS(tenant: TenantId) => |_|
        "SELECT operator_id, site_id FROM operator_sites WHERE tenant_id = :tenant ORDER BY operator_id, site_id".into(),
    INSERT_OPERATOR<'a>(tenant: TenantId, email: &'a str, name: &'a str, password_hash: &'a str, role: &'a str, created_at: Timestamp) => |_|
        "INSERT INTO operators (tenant_id, email, name, password_hash, role, created_at)
         VALUES (:tenant, :email, :name, :password_hash, :role, :created_at) RETURNING id".into(),
    /// Only sites of the operator's tenant are added; the caller compares
    /// the count with the sites it asked for.
    ADD_MEMBERSHIPS<'a>(tenant: TenantId, operator: OperatorId, sites: &'a IdList) => |d| format!(
        "INSERT INTO operator_sites (tenant_id, operator_id, site_id)
         SELECT :tenant, :operator, s.id FROM sites s WHERE s.tenant_id = :tenant AND s.id IN ({})",
        d.id_list(":sites")
    ),
    CLEAR_MEMBERSHIPS(tenant: TenantId, operator: OperatorId) => |_|
        "DELETE FROM operator_sites WHERE tenant_id = :tenant AND operator_id = :operator".into(),
    UPDATE_OPERATOR<'a>(
        tenant: TenantId, id: OperatorId, name: Option<&'a str>, role: Option<&'a str>, active: Option<bool>,
        password_hash: Option<&'a str>, notify_unassigned: Option<bool>, notify_mine: Option<bool>,
    ) => |_| "UPDATE operators SET name = COALESCE(:name, name), role = COALESCE(:role, role),
             active = COALESCE(:active, active), password_hash = COALESCE(:password_hash, password_hash),
             notify_unassigned = COALESCE(:notify_unassigned, notify_unassigned), notify_mine = COALESCE(:notify_mine, notify_mine)
         WHERE tenant_id = :tenant AND id = :id".into(),
    PASSWORD_HASH(tenant: TenantId, operator: OperatorId) => |_|
        "SELECT password_hash FROM operators WHERE tenant_id = :tenant AND id = :operator".into(),
    SIGN_INS(tenant: TenantId, operator: OperatorId, now: Timestamp) => |_|
        "SELECT id, kind, device_name, created_at, expires_at, last_used_at FROM operator_tokens
         WHERE tenant_id = :tenant AND operator_id = :operator AND revoked_at IS NULL AND expires_at > :now
         ORDER BY COALESCE(last_used_at, created_at) DESC, id DESC".into(),
    REVOKE_OTHER_TOKENS(tenant: TenantId, operator: OperatorId, keep: TokenId, at: Timestamp) => |_|
        "UPDATE operator_tokens SET revoked_at = :at
         WHERE tenant_id = :tenant AND operator_id = :operator AND id <> :keep AND revoked_at IS NULL".into(),
    FORGET_OTHER_DEVICES(tenant: TenantId, operator: OperatorId, keep: TokenId) => |_|
        "DELETE FROM devices WHERE tenant_id = :tenant AND operator_id = :operator AND token_id <> :keep".into(),
    REVOKE_SIGN_IN(tenant: TenantId, operator: OperatorId, token: TokenId, at: Timestamp) => |_|
        "UPDATE operator_tokens SET revoked_at = :at
         WHERE tenant_id = :tenant AND operator_id = :operator AND id = :token AND revoked_at IS NULL RETURNING kind".into(),
    INSERT_TOKEN<'a>(
        tenant: TenantId, operator: OperatorId, kind: &'a str, token_hash: &'a [u8], device_name: Option<&'a str>,
        created_at: Timestamp, expires_at: Timestamp,
    ) => |_| "INSERT INTO operator_tokens (tenant_id, operator_id, kind, token_hash, device_name, created_at, expires_at)
         SELECT :tenant, :operator, :kind, :token_hash, :device_name, :created_at, :expires_at
         WHERE EXISTS (SELECT 1 FROM operators WHERE id = :operator AND tenant_id = :tenant)
         RETURNING id".into(),
    /// Live and expired ones alike (the list says which), newest first;
    /// revoked ones are gone.
    PERSONAL_TOKENS(tenant: TenantId, operator: OperatorId) => |_|
        "SELECT id, device_name, created_at, expires_at, last_used_at FROM operator_tokens
         WHERE tenant_id = :tenant AND operator_id = :operator AND kind = 'personal' AND revoked_at IS NULL ORDER BY id DESC".into(),
    REVOKE_PERSONAL_TOKEN(tenant: TenantId, operator: OperatorId, token: TokenId, at: Timestamp) => |_|
        "UPDATE operator_tokens SET revoked_at = :at
         WHERE tenant_id = :tenant AND operator_id = :operator AND id = :token AND kind = 'personal' AND revoked_at IS NULL".into(),
    /// At most once a minute per token, whichever instance gets there.
    TOUCH_TOKEN(tenant: TenantId, token: TokenId, at: Timestamp) => |_| "UPDATE operator_tokens SET last_used_at = :at
         WHERE tenant_id = :tenant AND id = :token AND (last_used_at IS NULL OR last_used_at < :at - 60000)".into(),
    REVOKE_TOKEN(tenant: TenantId, token: TokenId, at: Timestamp) => |_|
        "UPDATE operator_tokens SET revoked_at = :at WHERE tenant_id = :tenant AND id = :token AND revoked_at IS NULL".into(),
    REVOKE_OPERATOR_TOKENS(tenant: TenantId, operator: OperatorId, at: Timestamp) => |_|
        "UPDATE operator_tokens SET revoked_at = :at WHERE tenant_id = :tenant AND operator_id = :operator AND revoked_at IS NULL".into(),
    /// A device goes with the sign-in that registered it.
    FORGET_TOKEN_DEVICES(tenant: TenantId, token: TokenId) => |_|
        "DELETE FROM devices WHERE tenant_id = :tenant AND token_id = :token".into(),
    FORGET_OPERATOR_DEVICES(tenant: TenantId, operator: OperatorId) => |_|
        "DELETE FROM devices WHERE tenant_id = :tenant AND operator_id = :operator".into(),
}

impl Tx<'_> {
    fn with_sites(&mut self, mut op: Operator) -> StoreResult<Operator> {
        op.site_ids = self.all(OPERATOR_SITES { tenant: op.tenant_id, operator: op.id }, |r| Ok(SiteId(r.i64("site_id")?)))?;
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
        let added = self.exec(ADD_MEMBERSHIPS { tenant, operator, sites: &IdList::new(wanted.iter().copied()) })?;
        if added != wanted.len() {
            return Err(StoreError::Internal(format!("a site of {sites:?} is not in tenant {}", tenant.0)));
        }
        Ok(())
    }
}

impl OperatorsRead for Tx<'_> {
    fn session(&mut self, token_hash: &[u8]) -> StoreResult<Option<Session>> {
        let found = self.one(SESSION { token_hash }, |r| {
            Ok(Session {
                operator: operator(r)?,
                tenant: tenant(r)?,
                token_id: TokenId(r.i64("tok_id")?),
                kind: r.parsed("tok_kind", TokenKind::parse)?,
                expires_at: r.ts("tok_expires_at")?,
                last_used_at: r.opt_ts("tok_last_used_at")?,
                client: None,
            })
        })?;
        let Some(mut session) = found else {
            return Ok(None);
        };
        session.operator = self.with_sites(session.operator)?;
        Ok(Some(session))
    }

    fn token_holds(&mut self, token_hash: &[u8], scope: OperatorScope, now: Timestamp) -> StoreResult<bool> {
        let found = self
            .one(TOKEN_HOLDS { token_hash, now, tenant: scope.tenant, operator: scope.operator, role: scope.role.as_str() }, |r| {
                r.i64("held")
            })?;
        Ok(found.is_some())
    }

    fn login_operator(&mut self, email: &str) -> StoreResult<Option<(Operator, String)>> {
        let Some((op, hash)) = self.one(LOGIN_OPERATOR { email }, |r| Ok((operator(r)?, r.string("o_password_hash")?)))? else {
            return Ok(None);
        };
        Ok(Some((self.with_sites(op)?, hash)))
    }

    fn operators(&mut self, tenant: TenantId) -> StoreResult<Vec<Operator>> {
        let mut list = self.all(OPERATORS { tenant }, operator)?;
        let mut sites: HashMap<i64, Vec<SiteId>> = HashMap::new();
        for (op, site) in self.all(TENANT_MEMBERSHIPS { tenant }, |r| Ok((r.i64("operator_id")?, SiteId(r.i64("site_id")?))))? {
            sites.entry(op).or_default().push(site);
        }
        for op in &mut list {
            op.site_ids = sites.remove(&op.id.0).unwrap_or_default();
        }
        Ok(list)
    }

    fn operator(&mut self, tenant: TenantId, id: OperatorId) -> StoreResult<Option<Operator>> {
        match self.one(OPERATOR { tenant, id }, operator)? {
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
        self.all(PERSONAL_TOKENS { tenant, operator }, |r| {
            Ok(PersonalToken {
                id: TokenId(r.i64("id")?),
                name: r.text("device_name")?.unwrap_or_default(),
                created_at: r.ts("created_at")?,
                expires_at: r.ts("expires_at")?,
                last_used_at: r.opt_ts("last_used_at")?,
            })
        })
    }

    fn password_hash(&mut self, tenant: TenantId, operator: OperatorId) -> StoreResult<Option<String>> {
        self.one(PASSWORD_HASH { tenant, operator }, |r| r.string("password_hash"))
    }

    fn sign_ins(&mut self, tenant: TenantId, operator: OperatorId, now: Timestamp) -> StoreResult<Vec<SignInRecord>> {
        self.all(SIGN_INS { tenant, operator, now }, |r| {
            Ok(SignInRecord {
                id: TokenId(r.i64("id")?),
                kind: r.parsed("kind", TokenKind::parse)?,
                name: r.text("device_name")?,
                created_at: r.ts("created_at")?,
                expires_at: r.ts("expires_at")?,
                last_used_at: r.opt_ts("last_used_at")?,
            })
        })
    }

    fn operator_by_email(&mut self, tenant: TenantId, email: &str) -> StoreResult<Option<Operator>> {
        match self.one(OPERATOR_BY_EMAIL { tenant, email }, operator)? {
            Some(op) => Ok(Some(self.with_sites(op)?)),
            None => Ok(None),
        }
    }
}

impl OperatorsWrite for Tx<'_> {
    fn insert_operator(&mut self, tenant: TenantId, o: &NewOperator) -> StoreResult<Operator> {
        let id = OperatorId(self.insert(INSERT_OPERATOR {
            tenant,
            email: &o.email,
            name: &o.name,
            password_hash: &o.password_hash,
            role: o.role.as_str(),
            created_at: o.created_at,
        })?);
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
            password_set: o.password_hash != parley_domain::invitations::NO_PASSWORD,
            notify: NotifyChoices::default(),
        })
    }

    fn update_operator(&mut self, tenant: TenantId, id: OperatorId, ch: &OperatorChanges) -> StoreResult<()> {
        self.exec(UPDATE_OPERATOR {
            tenant,
            id,
            name: ch.name.as_deref(),
            role: ch.role.map(Role::as_str),
            active: ch.active,
            password_hash: ch.password_hash.as_deref(),
            notify_unassigned: ch.notify_unassigned,
            notify_mine: ch.notify_mine,
        })?;
        if let Some(sites) = &ch.site_ids {
            self.exec(CLEAR_MEMBERSHIPS { tenant, operator: id })?;
            self.add_memberships(tenant, id, sites)?;
        }
        Ok(())
    }

    fn insert_operator_token(&mut self, tenant: TenantId, t: &NewOperatorToken) -> StoreResult<TokenId> {
        Ok(TokenId(self.insert(INSERT_TOKEN {
            tenant,
            operator: t.operator_id,
            kind: t.kind.as_str(),
            token_hash: &t.token_hash,
            device_name: t.device_name.as_deref(),
            created_at: t.created_at,
            expires_at: t.expires_at,
        })?))
    }

    fn revoke_personal_token(&mut self, tenant: TenantId, operator: OperatorId, token: TokenId, at: Timestamp) -> StoreResult<bool> {
        let revoked = self.exec(REVOKE_PERSONAL_TOKEN { tenant, operator, token, at })? == 1;
        if revoked {
            self.exec(FORGET_TOKEN_DEVICES { tenant, token })?;
        }
        Ok(revoked)
    }

    fn touch_token(&mut self, tenant: TenantId, token: TokenId, at: Timestamp) -> StoreResult<()> {
        self.exec(TOUCH_TOKEN { tenant, token, at })?;
        Ok(())
    }

    fn revoke_token(&mut self, tenant: TenantId, token: TokenId, at: Timestamp) -> StoreResult<()> {
        self.exec(REVOKE_TOKEN { tenant, token, at })?;
        self.exec(FORGET_TOKEN_DEVICES { tenant, token })?;
        Ok(())
    }

    fn revoke_operator_tokens(&mut self, tenant: TenantId, operator: OperatorId, at: Timestamp) -> StoreResult<()> {
        self.exec(REVOKE_OPERATOR_TOKENS { tenant, operator, at })?;
        self.exec(FORGET_OPERATOR_DEVICES { tenant, operator })?;
        Ok(())
    }

    fn revoke_other_tokens(&mut self, tenant: TenantId, operator: OperatorId, keep: TokenId, at: Timestamp) -> StoreResult<()> {
        self.exec(REVOKE_OTHER_TOKENS { tenant, operator, keep, at })?;
        self.exec(FORGET_OTHER_DEVICES { tenant, operator, keep })?;
        Ok(())
    }

    fn revoke_sign_in(&mut self, tenant: TenantId, operator: OperatorId, token: TokenId, at: Timestamp) -> StoreResult<Option<TokenKind>> {
        let revoked = self.one(REVOKE_SIGN_IN { tenant, operator, token, at }, |r| r.parsed("kind", TokenKind::parse))?;
        if revoked.is_some() {
            self.exec(FORGET_TOKEN_DEVICES { tenant, token })?;
        }
        Ok(revoked)
    }
}
