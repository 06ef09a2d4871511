//! Erasing conversations: at an admin's request (a visitor asking to be
//! forgotten), and by retention (`PARLEY_CONVERSATION_RETENTION`).
//!
//! An erasure removes the conversation with everything that records it in
//! one write unit (docs/operations.md lists what), and its visitor when no
//! other conversation is theirs. The attachments' objects are queued in
//! that unit and removed from the file store after the commit; what the
//! store refuses then stays queued for the sweeper, so none is forgotten.
//!
//! Nothing announces an erasure on the feed: its entries become empty
//! tombstones that no reader shows. Clients find the conversation gone
//! (404) at their next read of it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::attachments::{AttachmentService, removal_due};
use crate::audit::{self, Action, Actor};
use crate::clock::Clock;
use crate::error::DomainError;
use crate::model::*;
use crate::store::Database;

pub struct ErasureService {
    db: Database,
    clock: Arc<dyn Clock>,
    attachments: Arc<AttachmentService>,
    /// `PARLEY_CONVERSATION_RETENTION`: conversations without a message
    /// for this long are erased; `None` keeps them.
    retention: Option<Duration>,
}

impl ErasureService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, attachments: Arc<AttachmentService>, retention: Option<Duration>) -> Self {
        Self { db, clock, attachments, retention }
    }

    /// Erases conversation `id` of the admin's tenant, whatever its state.
    /// Agents are refused: an erasure cannot be undone.
    pub async fn erase(&self, session: &Session, id: ConversationId) -> Result<(), DomainError> {
        crate::admin::require_admin(session)?;
        let scope: ConversationScope = session.operator.scope().into();
        let (by, now) = (Actor::of(session), self.clock.now());
        let files = self
            .db
            .write(move |tx| {
                let found = tx.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
                let files = tx.erase_conversation(scope.tenant, id, now, removal_due(now))?;
                let details = json!({"public_id": found.public_id});
                audit::record(tx, scope.tenant, &by, now, Action::ConversationErased, Some(id.0), details)?;
                Ok(files)
            })
            .await?;
        tracing::info!(tenant = scope.tenant.0, conversation = id.0, operator = session.operator.id.0, "conversation erased");
        self.attachments.remove_files(files).await;
        Ok(())
    }

    /// Erases up to `limit` conversations whose last message is older
    /// than the retention, one write unit each (a long unit would hold
    /// other writers back); returns how many went.
    pub async fn sweep(&self, limit: u32) -> Result<usize, DomainError> {
        let Some(retention) = self.retention else { return Ok(0) };
        let now = self.clock.now();
        let cutoff = now.minus(retention);
        let mut erased = 0;
        while erased < limit as usize {
            let gone = self
                .db
                .write(move |tx| {
                    let Some((tenant, id)) = tx.expired_conversations(cutoff, 1)?.into_iter().next() else { return Ok(None) };
                    let files = tx.erase_conversation(tenant, id, now, removal_due(now))?;
                    let details = json!({"retention_days": retention.as_secs() / 86_400});
                    audit::record(tx, tenant, &Actor::retention(), now, Action::ConversationErased, Some(id.0), details)?;
                    Ok(Some((tenant, id, files)))
                })
                .await?;
            let Some((tenant, id, files)) = gone else { break };
            tracing::info!(tenant = tenant.0, conversation = id.0, "conversation erased: no message within the retention");
            self.attachments.remove_files(files).await;
            erased += 1;
        }
        Ok(erased)
    }
}
