//! Creating tenants and what belongs to them: sites, installations and
//! operators. Used by the CLI, the demo and (later) the admin API.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::audit::{self, Action, Actor};
use crate::clock::{Clock, Timestamp};
use crate::error::{DomainError, FieldErrors};
use crate::ids;
use crate::model::*;
use crate::password;
use crate::store::{Database, StoreError};
use crate::validate;

pub struct NewTenantInput {
    pub slug: String,
    pub name: String,
    pub admin_email: String,
    pub admin_password: String,
}

pub struct NewSiteInput {
    pub name: String,
    pub domains: Vec<String>,
    pub appearance: WidgetAppearance,
}

pub struct NewOperatorInput {
    pub email: String,
    pub name: String,
    pub password: String,
    pub role: Role,
    pub site_ids: Vec<SiteId>,
}

#[derive(Clone)]
pub struct Tenancy {
    db: Database,
    clock: Arc<dyn Clock>,
}

impl Tenancy {
    pub fn new(db: Database, clock: Arc<dyn Clock>) -> Self {
        Self { db, clock }
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Creates a tenant and its first admin in one transaction.
    pub async fn create_tenant(&self, input: NewTenantInput) -> Result<(Tenant, Operator), DomainError> {
        let mut errors = FieldErrors::new();
        let slug = validate::slug(&input.slug).map_err(|e| errors.add("slug", e)).ok();
        let name = match validate::name(&input.name) {
            Ok(Some(n)) => Some(n),
            Ok(None) => {
                errors.add("name", "must not be blank");
                None
            }
            Err(e) => {
                errors.add("name", e);
                None
            }
        };
        let email = validate::email(&input.admin_email).map_err(|e| errors.add("admin_email", e)).ok();
        let password = validate::new_password(&input.admin_password).map_err(|e| errors.add("admin_password", e)).ok();
        let (Some(slug), Some(name), Some(email), Some(password)) = (slug, name, email, password) else {
            return Err(DomainError::Validation(errors));
        };
        let password_hash = password::hash(password).await?;
        let now = self.clock.now();
        self.db
            .write(move |tx| {
                if tx.tenant_by_slug(&slug)?.is_some() {
                    return Err(DomainError::Conflict("a tenant with this slug already exists"));
                }
                let tenant = tx.insert_tenant(&NewTenant { slug, name, created_at: now })?;
                let operator = tx
                    .insert_operator(
                        tenant.id,
                        &NewOperator {
                            name: email.split('@').next().unwrap_or("Admin").to_owned(),
                            email,
                            password_hash,
                            role: Role::Admin,
                            site_ids: Vec::new(),
                            created_at: now,
                        },
                    )
                    .map_err(|e| match e {
                        StoreError::Duplicate(_) => DomainError::Conflict("an operator with this email already exists"),
                        e => e.into(),
                    })?;
                Ok((tenant, operator))
            })
            .await
    }

    /// `by`: the admin to record in the audit log; none for the service's
    /// own setup (a new tenant, the sandbox).
    pub async fn create_site(&self, tenant: TenantId, input: NewSiteInput, by: Option<Actor>) -> Result<Site, DomainError> {
        let mut errors = FieldErrors::new();
        let mut domains = Vec::new();
        for d in &input.domains {
            match validate::domain(d) {
                Ok(d) if !domains.contains(&d) => domains.push(d),
                Ok(_) => {}
                Err(e) => errors.add("domains", e),
            }
        }
        if !errors.is_empty() {
            return Err(DomainError::Validation(errors));
        }
        let site = NewSite { name: input.name, domains, appearance: input.appearance, created_at: self.clock.now() };
        self.db
            .write(move |tx| {
                let made = tx.insert_site(tenant, &site)?;
                if let Some(by) = by {
                    let details = json!({"name": made.name, "domains": made.domains});
                    audit::record(tx, tenant, &by, site.created_at, Action::SiteCreated, Some(made.id.0), details)?;
                }
                Ok(made)
            })
            .await
    }

    pub async fn create_installation(
        &self,
        scope: SiteScope,
        name: String,
        installation_type: String,
        by: Option<Actor>,
    ) -> Result<Installation, DomainError> {
        let new = NewInstallation { token: ids::installation_token()?, name, installation_type, created_at: self.clock.now() };
        self.db
            .write(move |tx| {
                let made = tx.insert_installation(scope, &new)?;
                if let Some(by) = by {
                    let details = json!({"site_id": scope.site.0, "name": made.name, "installation_type": made.installation_type});
                    audit::record(tx, scope.tenant, &by, new.created_at, Action::InstallationCreated, Some(made.id.0), details)?;
                }
                Ok(made)
            })
            .await
    }

    pub async fn create_operator(&self, tenant: TenantId, input: NewOperatorInput, by: Option<Actor>) -> Result<Operator, DomainError> {
        let NewOperatorInput { email, name, password, role, site_ids } = input;
        let password_hash = password::hash(password).await?;
        let new = NewOperator { email, name, password_hash, role, site_ids, created_at: self.clock.now() };
        self.db
            .write(move |tx| {
                let made = tx.insert_operator(tenant, &new)?;
                if let Some(by) = by {
                    let details = json!({"email": made.email, "name": made.name, "role": made.role.as_str(), "site_ids": new.site_ids});
                    audit::record(tx, tenant, &by, new.created_at, Action::OperatorCreated, Some(made.id.0), details)?;
                }
                Ok(made)
            })
            .await
    }

    /// Issues a bearer token for an operator and returns it; only its digest
    /// is stored.
    pub async fn issue_operator_token(
        &self,
        operator: &Operator,
        device_name: Option<String>,
        ttl: Duration,
    ) -> Result<String, DomainError> {
        self.issue(ids::operator_token()?, TokenKind::Login, operator, device_name, ttl).await
    }

    /// A web app session: stored like a bearer token (a digest, an
    /// expiry), so logout, disabling the operator and a password change
    /// end it the same way.
    pub async fn issue_session(&self, operator: &Operator, ttl: Duration) -> Result<String, DomainError> {
        self.issue(ids::session_token()?, TokenKind::Session, operator, Some("web app".into()), ttl).await
    }

    async fn issue(
        &self,
        token: String,
        kind: TokenKind,
        operator: &Operator,
        device_name: Option<String>,
        ttl: Duration,
    ) -> Result<String, DomainError> {
        let new = token_record(&token, kind, operator, device_name, self.clock.now(), ttl);
        let tenant = operator.tenant_id;
        self.db.write(move |tx| Ok(tx.insert_operator_token(tenant, &new)?)).await?;
        Ok(token)
    }
}

/// What is stored of `token`: its digest, never the token itself.
pub(crate) fn token_record(
    token: &str,
    kind: TokenKind,
    operator: &Operator,
    device_name: Option<String>,
    now: Timestamp,
    ttl: Duration,
) -> NewOperatorToken {
    NewOperatorToken {
        operator_id: operator.id,
        kind,
        token_hash: password::token_digest(token),
        device_name,
        created_at: now,
        expires_at: now.plus(ttl),
    }
}
