//! Webhook events, endpoints, deliveries and attempts.

use std::collections::HashMap;

use parley_domain::Timestamp;
use parley_domain::events::{EventKind, OutboxEvent};
use parley_domain::model::*;
use parley_domain::store::ops::{WebhooksRead, WebhooksWrite};
use parley_domain::store::{OutboxStats, StoreError, StoreResult};
use parley_domain::webhooks::fairness::{DueDelivery, EndpointHealth, Pause};
use parley_domain::webhooks::{Attempt, AttemptRecord, ClaimedDelivery, Delivery, DeliveryStatus, NewWebhook, NextStep, Webhook};

use super::{Row, Tx, args, id_list, statements};

const WEBHOOK_COLS: &str = "w.id AS w_id, w.tenant_id AS w_tenant_id, w.url AS w_url, w.events AS w_events, w.secret AS w_secret, \
     w.previous_secret AS w_previous_secret, w.previous_secret_expires_at AS w_previous_secret_expires_at, \
     w.enabled AS w_enabled, w.disabled_reason AS w_disabled_reason, w.created_at AS w_created_at, \
     w.failure_streak AS w_failure_streak, w.paused_until AS w_paused_until";

fn webhook(r: &dyn Row) -> StoreResult<Webhook> {
    let events = match r.text("w_events")? {
        Some(json) => {
            let names: Vec<String> = serde_json::from_str(&json).map_err(|e| StoreError::Internal(format!("column w_events: {e}")))?;
            Some(names.iter().filter_map(|n| EventKind::parse_webhook(n)).collect())
        }
        None => None,
    };
    Ok(Webhook {
        id: WebhookId(r.i64("w_id")?),
        tenant_id: TenantId(r.i64("w_tenant_id")?),
        url: r.string("w_url")?,
        events,
        secret: r.string("w_secret")?,
        previous_secret: r.text("w_previous_secret")?,
        previous_secret_expires_at: r.opt_ts("w_previous_secret_expires_at")?,
        enabled: r.flag("w_enabled")?,
        disabled_reason: r.text("w_disabled_reason")?,
        created_at: r.ts("w_created_at")?,
        failure_streak: r.u32("w_failure_streak")?,
        paused_until: r.opt_ts("w_paused_until")?,
    })
}

fn due_delivery(r: &dyn Row) -> StoreResult<DueDelivery> {
    Ok(DueDelivery {
        id: DeliveryId(r.i64("id")?),
        tenant_id: TenantId(r.i64("tenant_id")?),
        endpoint_id: WebhookId(r.i64("endpoint_id")?),
        endpoint_failures: r.u32("failure_streak")?,
    })
}

const DELIVERY_COLS: &str = "d.id AS d_id, d.endpoint_id AS d_endpoint_id, ev.event_id AS ev_event_id, ev.kind AS ev_kind, \
     d.status AS d_status, d.next_attempt_at AS d_next_attempt_at, d.last_error AS d_last_error, \
     d.created_at AS d_created_at, d.finished_at AS d_finished_at";

const DELIVERY_FROM: &str = "FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id AND ev.tenant_id = d.tenant_id";

fn delivery(r: &dyn Row) -> StoreResult<Delivery> {
    let status = r.parsed("d_status", DeliveryStatus::parse)?;
    Ok(Delivery {
        id: DeliveryId(r.i64("d_id")?),
        endpoint_id: WebhookId(r.i64("d_endpoint_id")?),
        event_id: r.string("ev_event_id")?,
        kind: r.parsed("ev_kind", EventKind::parse)?,
        next_attempt_at: if status == DeliveryStatus::Pending { Some(r.ts("d_next_attempt_at")?) } else { None },
        status,
        last_error: r.text("d_last_error")?,
        created_at: r.ts("d_created_at")?,
        finished_at: r.opt_ts("d_finished_at")?,
        attempts: Vec::new(),
    })
}

fn due_deliveries() -> String {
    "SELECT d.id, d.tenant_id, d.endpoint_id, w.failure_streak
         FROM webhook_endpoints w CROSS JOIN webhook_deliveries d
         WHERE d.id IN (
             SELECT d2.id FROM webhook_deliveries d2
             WHERE d2.endpoint_id = w.id AND d2.tenant_id = w.tenant_id AND d2.status = 'pending'
               AND d2.next_attempt_at <= ?1 AND (d2.lease_until IS NULL OR d2.lease_until <= ?1)
             ORDER BY d2.next_attempt_at, d2.id LIMIT ?2)
           AND w.enabled = TRUE AND (w.paused_until IS NULL OR w.paused_until <= ?1)
         ORDER BY d.next_attempt_at, d.id"
        .into()
}

statements! {
    RECENT_EVENTS[Int, Int](_) =>
        "SELECT event_id, kind, occurred_at, payload FROM events WHERE tenant_id = ?1 AND webhook = TRUE ORDER BY id DESC LIMIT ?2".into(),
    WEBHOOKS[Int](_) => format!("SELECT {WEBHOOK_COLS} FROM webhook_endpoints w WHERE w.tenant_id = ?1 ORDER BY w.id"),
    WEBHOOK[Int, Int](_) => format!("SELECT {WEBHOOK_COLS} FROM webhook_endpoints w WHERE w.tenant_id = ?1 AND w.id = ?2"),
    /// In a write unit the endpoint is locked until the commit: a change
    /// decided on what was read (a rotation checked against the secret a
    /// page showed, one test at a time) cannot interleave with another.
    WEBHOOK_LOCKED[Int, Int](d) => d.locked(format!("SELECT {WEBHOOK_COLS} FROM webhook_endpoints w WHERE w.tenant_id = ?1 AND w.id = ?2")),
    DELIVERIES[Int, Int, Int, Int](_) => format!(
        "SELECT {DELIVERY_COLS} {DELIVERY_FROM} WHERE d.tenant_id = ?1 AND d.endpoint_id = ?2 ORDER BY d.id DESC LIMIT ?3 OFFSET ?4"
    ),
    DELIVERY[Int, Int, Int](_) => format!("SELECT {DELIVERY_COLS} {DELIVERY_FROM} WHERE d.tenant_id = ?1 AND d.endpoint_id = ?2 AND d.id = ?3"),
    /// The attempts of several deliveries in one statement.
    ATTEMPTS[Int, Text](d) => format!(
        "SELECT delivery_id, attempted_at, duration_ms, status_code, error FROM webhook_attempts
         WHERE tenant_id = ?1 AND delivery_id IN ({}) ORDER BY delivery_id, id",
        d.id_list("?2")
    ),
    PENDING_TEST[Int, Int](_) => "SELECT d.id FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id AND ev.tenant_id = d.tenant_id
         WHERE d.tenant_id = ?1 AND d.endpoint_id = ?2 AND d.status = 'pending' AND ev.webhook = FALSE LIMIT 1".into(),
    COUNT_DELIVERIES[Int, Int](_) => "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE tenant_id = ?1 AND endpoint_id = ?2".into(),
    OUTBOX_STATS[](_) => "SELECT COUNT(*) AS pending, MIN(created_at) AS oldest,
             COUNT(DISTINCT CASE WHEN attempts > 0 THEN endpoint_id END) AS failing
         FROM webhook_deliveries WHERE status = 'pending'".into(),
    /// The oldest delivery due now (`?1`) and not in flight, of an endpoint
    /// that may be sent to: each such endpoint's first through its
    /// (endpoint, due time) index, past at most its attempts in flight.
    /// Paused and disabled endpoints are left out before their deliveries
    /// are read, so a long backlog behind a broken endpoint costs nothing.
    OLDEST_DUE_DELIVERY[Int](_) => "SELECT MIN((SELECT d.next_attempt_at FROM webhook_deliveries d
                  WHERE d.endpoint_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= ?1
                    AND (d.lease_until IS NULL OR d.lease_until <= ?1)
                  ORDER BY d.next_attempt_at LIMIT 1)) AS due
         FROM webhook_endpoints w
         WHERE w.enabled = TRUE AND (w.paused_until IS NULL OR w.paused_until <= ?1)".into(),
    /// When the next pending delivery falls due: each enabled endpoint's
    /// earliest through its (endpoint, due time) index, or the end of its
    /// pause if later. The endpoint id is the table's key, so no tenant
    /// filter is needed to stay within its own rows (and one would cost the
    /// index its MIN shortcut). CASE, because scalar MAX takes several
    /// arguments in SQLite only.
    NEXT_DELIVERY_DUE[](_) => "SELECT MIN(CASE WHEN COALESCE(paused_until, 0) > due THEN paused_until ELSE due END) AS due
         FROM (SELECT w.paused_until,
                      (SELECT MIN(d.next_attempt_at) FROM webhook_deliveries d
                       WHERE d.endpoint_id = w.id AND d.status = 'pending') AS due
               FROM webhook_endpoints w WHERE w.enabled = TRUE) AS e
         WHERE due IS NOT NULL".into(),
    /// Each endpoint's oldest due deliveries (`?1` now, `?2` how many),
    /// through its (endpoint, due time) index: a backlog at one endpoint
    /// cannot push the others out of a claim. CROSS JOIN keeps the
    /// endpoints as SQLite's outer loop: left to choose, it scans every
    /// delivery and runs the subquery for each, which made a claim cost
    /// the whole backlog.
    DUE_DELIVERIES[Int, Int](_) => due_deliveries(),
    /// The same, locked for a claim (see `Dialect::claim`).
    CLAIMABLE_DELIVERIES[Int, Int](d) => d.claim(due_deliveries(), "d"),
    /// A delivery of the event (by its public id) for every enabled
    /// endpoint of the tenant subscribed to its kind (`events` null means
    /// every kind).
    FAN_OUT[Int, Text, Text, Int](d) => format!(
        "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
         SELECT ?1, w.id, ev.id, ?4, ?4 FROM events ev CROSS JOIN webhook_endpoints w
         WHERE ev.event_id = ?2 AND ev.tenant_id = ?1
           AND w.tenant_id = ?1 AND w.enabled = TRUE AND (w.events IS NULL OR {})",
        d.json_array_has("w.events", "?3")
    ),
    INSERT_WEBHOOK[Int, Text, Text, Text, Int](_) =>
        "INSERT INTO webhook_endpoints (tenant_id, url, events, secret, created_at) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id".into(),
    DELETE_WEBHOOK[Int, Int](_) => "DELETE FROM webhook_endpoints WHERE tenant_id = ?1 AND id = ?2".into(),
    ROTATE_SECRET[Int, Int, Text, Int](_) =>
        "UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = ?4, secret = ?3
         WHERE tenant_id = ?1 AND id = ?2".into(),
    REDELIVER[Int, Int, Int, Int](_) => "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
         SELECT d.tenant_id, d.endpoint_id, d.event_id, ?4, ?4 FROM webhook_deliveries d
         WHERE d.tenant_id = ?1 AND d.endpoint_id = ?2 AND d.id = ?3
         RETURNING id".into(),
    DELIVER_TO[Int, Int, Text, Int](_) => "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
         SELECT ?1, w.id, ev.id, ?4, ?4 FROM events ev CROSS JOIN webhook_endpoints w
         WHERE ev.event_id = ?3 AND ev.tenant_id = ?1 AND w.tenant_id = ?1 AND w.id = ?2
         RETURNING id".into(),
    /// Exactly the rows this statement leased come back: another
    /// claimer's leases, whatever their time, are never read as ours.
    LEASE[Int, Int, Text](d) => format!(
        "UPDATE webhook_deliveries SET lease_until = ?2
         WHERE id IN ({}) AND status = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1)
         RETURNING id",
        d.id_list("?3")
    ),
    CLAIMED[Text](d) => format!(
        "SELECT d.id AS d_id, d.tenant_id AS d_tenant_id, d.attempts AS d_attempts, {WEBHOOK_COLS},
                ev.event_id AS ev_event_id, ev.kind AS ev_kind, ev.payload AS ev_payload
         FROM webhook_deliveries d
         JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.tenant_id = d.tenant_id
         JOIN events ev ON ev.id = d.event_id AND ev.tenant_id = d.tenant_id
         WHERE d.id IN ({})
         ORDER BY d.next_attempt_at, d.id",
        d.id_list("?1")
    ),
    COUNT_SUCCESS[Int, Int](_) => "UPDATE webhook_endpoints SET failure_streak = 0, paused_until = NULL, pause_count = 0
         WHERE tenant_id = ?1 AND id = ?2 RETURNING failure_streak, paused_until, pause_count".into(),
    COUNT_FAILURE[Int, Int](_) => "UPDATE webhook_endpoints SET failure_streak = failure_streak + 1
         WHERE tenant_id = ?1 AND id = ?2 RETURNING failure_streak, paused_until, pause_count".into(),
    PAUSE_ENDPOINT[Int, Int, Int, Int](_) => "UPDATE webhook_endpoints SET paused_until = ?3, pause_count = ?4 WHERE tenant_id = ?1 AND id = ?2".into(),
    /// The outer conditions repeat the inner ones: on PostgreSQL a row a
    /// worker changed meanwhile is checked again against them only.
    EXPIRE_DELIVERIES[Int, Int, Int](_) => "UPDATE webhook_deliveries
         SET status = 'failed', finished_at = ?2, lease_until = NULL,
             last_error = 'given up: still undelivered when its retry schedule had run out'
         WHERE id IN (SELECT id FROM webhook_deliveries
                      WHERE status = 'pending' AND created_at < ?1 AND (lease_until IS NULL OR lease_until <= ?2)
                      ORDER BY created_at LIMIT ?3)
           AND status = 'pending' AND (lease_until IS NULL OR lease_until <= ?2)".into(),
    INSERT_ATTEMPT[Int, Int, Int, Int, Int, Text](_) => "INSERT INTO webhook_attempts (tenant_id, delivery_id, attempted_at, duration_ms, status_code, error)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ?2 AND tenant_id = ?1)".into(),
    /// Only a pending delivery changes: if its lease ran out and another
    /// worker finished it meanwhile, the attempt is logged and no more.
    FINISH_ATTEMPT[Int, Int, Text, Int, Text, Int](_) => "UPDATE webhook_deliveries
         SET status = ?3, attempts = attempts + 1, next_attempt_at = ?4, lease_until = NULL, last_error = ?5, finished_at = ?6
         WHERE tenant_id = ?1 AND id = ?2 AND status = 'pending'".into(),
    DISABLE_ENDPOINT[Int, Int](_) =>
        "UPDATE webhook_endpoints SET enabled = FALSE, disabled_reason = 'the endpoint answered 410 Gone' WHERE tenant_id = ?1 AND id = ?2".into(),
    FAIL_ENDPOINT_DELIVERIES[Int, Int, Int](_) =>
        "UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint disabled', finished_at = ?3, lease_until = NULL
         WHERE tenant_id = ?1 AND endpoint_id = ?2 AND status = 'pending'".into(),
}

impl Tx<'_> {
    /// Fills in the attempts of `list`, in one statement.
    fn with_attempts(&mut self, tenant: TenantId, list: &mut [Delivery]) -> StoreResult<()> {
        if list.is_empty() {
            return Ok(());
        }
        let ids = id_list(list.iter().map(|d| d.id.0));
        let mut by_delivery: HashMap<i64, Vec<Attempt>> = HashMap::new();
        for (delivery, attempt) in self.all(&ATTEMPTS, args![tenant, &ids], |r| {
            Ok((
                r.i64("delivery_id")?,
                Attempt {
                    attempted_at: r.ts("attempted_at")?,
                    duration_ms: r.u64("duration_ms")?,
                    status_code: r.int("status_code")?.and_then(|c| u16::try_from(c).ok()),
                    error: r.text("error")?,
                },
            ))
        })? {
            by_delivery.entry(delivery).or_default().push(attempt);
        }
        for d in list {
            d.attempts = by_delivery.remove(&d.id.0).unwrap_or_default();
        }
        Ok(())
    }
}

impl WebhooksRead for Tx<'_> {
    fn recent_events(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxEvent>> {
        let mut list = self.all(&RECENT_EVENTS, args![tenant, limit], |r| {
            Ok(OutboxEvent {
                event_id: r.string("event_id")?,
                kind: r.parsed("kind", EventKind::parse)?,
                occurred_at: r.ts("occurred_at")?,
                payload: r.string("payload")?,
            })
        })?;
        list.reverse();
        Ok(list)
    }

    fn webhooks(&mut self, tenant: TenantId) -> StoreResult<Vec<Webhook>> {
        if self.writing {
            // A unit that decides on the whole list (the bound, a repeated
            // registration) waits for another doing the same.
            self.transaction_lock(crate::locks::named(&format!("webhook endpoints of {}", tenant.0)))?;
        }
        self.all(&WEBHOOKS, args![tenant], webhook)
    }

    fn webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<Option<Webhook>> {
        let stmt = self.locking(&WEBHOOK, &WEBHOOK_LOCKED);
        self.one(stmt, args![tenant, id], webhook)
    }

    fn deliveries(&mut self, tenant: TenantId, endpoint: WebhookId, offset: u64, limit: u32) -> StoreResult<Vec<Delivery>> {
        let mut list = self.all(&DELIVERIES, args![tenant, endpoint, limit, offset], delivery)?;
        self.with_attempts(tenant, &mut list)?;
        Ok(list)
    }

    fn count_deliveries(&mut self, tenant: TenantId, endpoint: WebhookId) -> StoreResult<u64> {
        self.count(&COUNT_DELIVERIES, args![tenant, endpoint])
    }

    fn pending_test(&mut self, tenant: TenantId, endpoint: WebhookId) -> StoreResult<bool> {
        Ok(self.one(&PENDING_TEST, args![tenant, endpoint], |r| r.i64("id"))?.is_some())
    }

    fn delivery(&mut self, tenant: TenantId, endpoint: WebhookId, id: DeliveryId) -> StoreResult<Option<Delivery>> {
        let Some(d) = self.one(&DELIVERY, args![tenant, endpoint, id], delivery)? else {
            return Ok(None);
        };
        let mut list = [d];
        self.with_attempts(tenant, &mut list)?;
        let [d] = list;
        Ok(Some(d))
    }

    fn outbox_stats(&mut self) -> StoreResult<OutboxStats> {
        let stats = self.one(&OUTBOX_STATS, args![], |r| {
            Ok(OutboxStats { pending: r.u64("pending")?, oldest_pending_at: r.opt_ts("oldest")?, failing_endpoints: r.u64("failing")? })
        })?;
        Ok(stats.unwrap_or_default())
    }

    fn oldest_due_delivery(&mut self, now: Timestamp) -> StoreResult<Option<Timestamp>> {
        // Deliveries of a paused endpoint wait by design: they are its
        // tenant's concern (its log, `failing_endpoints`), not lag.
        Ok(self.one(&OLDEST_DUE_DELIVERY, args![now], |r| r.opt_ts("due"))?.flatten())
    }

    fn next_delivery_due(&mut self) -> StoreResult<Option<Timestamp>> {
        Ok(self.one(&NEXT_DELIVERY_DUE, args![], |r| r.opt_ts("due"))?.flatten())
    }

    fn due_deliveries(&mut self, now: Timestamp, per_endpoint: u32) -> StoreResult<Vec<DueDelivery>> {
        self.all(&DUE_DELIVERIES, args![now, per_endpoint], due_delivery)
    }
}

impl WebhooksWrite for Tx<'_> {
    fn insert_webhook(&mut self, tenant: TenantId, w: &NewWebhook) -> StoreResult<Webhook> {
        let events = match &w.events {
            Some(kinds) => Some(
                serde_json::to_string(&kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>())
                    .map_err(|e| StoreError::Internal(e.to_string()))?,
            ),
            None => None,
        };
        let id = self.insert(&INSERT_WEBHOOK, args![tenant, &w.url, &events, &w.secret, w.created_at])?;
        Ok(Webhook {
            id: WebhookId(id),
            tenant_id: tenant,
            url: w.url.clone(),
            events: w.events.clone(),
            secret: w.secret.clone(),
            previous_secret: None,
            previous_secret_expires_at: None,
            enabled: true,
            disabled_reason: None,
            created_at: w.created_at,
            failure_streak: 0,
            paused_until: None,
        })
    }

    fn delete_webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<bool> {
        Ok(self.exec(&DELETE_WEBHOOK, args![tenant, id])? == 1)
    }

    fn rotate_webhook_secret(&mut self, tenant: TenantId, id: WebhookId, secret: &str, previous_expires_at: Timestamp) -> StoreResult<()> {
        self.exec(&ROTATE_SECRET, args![tenant, id, secret, previous_expires_at])?;
        Ok(())
    }

    fn redeliver(&mut self, tenant: TenantId, endpoint: WebhookId, delivery: DeliveryId, at: Timestamp) -> StoreResult<Option<DeliveryId>> {
        let id = self.one(&REDELIVER, args![tenant, endpoint, delivery, at], |r| r.i64("id"))?;
        if id.is_some() {
            self.effects.deliveries_added += 1;
        }
        Ok(id.map(DeliveryId))
    }

    fn deliver_to(&mut self, tenant: TenantId, endpoint: WebhookId, event_id: &str, at: Timestamp) -> StoreResult<Option<DeliveryId>> {
        let id = self.one(&DELIVER_TO, args![tenant, endpoint, event_id, at], |r| r.i64("id"))?;
        if id.is_some() {
            self.effects.deliveries_added += 1;
        }
        Ok(id.map(DeliveryId))
    }

    fn claimable_deliveries(&mut self, now: Timestamp, per_endpoint: u32) -> StoreResult<Vec<DueDelivery>> {
        self.all(&CLAIMABLE_DELIVERIES, args![now, per_endpoint], due_delivery)
    }

    fn lease_deliveries(&mut self, ids: &[DeliveryId], now: Timestamp, lease_until: Timestamp) -> StoreResult<Vec<ClaimedDelivery>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let leased = self.all(&LEASE, args![now, lease_until, &id_list(ids.iter().map(|d| d.0))], |r| r.i64("id"))?;
        if leased.is_empty() {
            return Ok(Vec::new());
        }
        self.all(&CLAIMED, args![&id_list(leased)], |r| {
            Ok(ClaimedDelivery {
                delivery_id: DeliveryId(r.i64("d_id")?),
                tenant_id: TenantId(r.i64("d_tenant_id")?),
                attempts: r.u32("d_attempts")?,
                webhook: webhook(r)?,
                event_id: r.string("ev_event_id")?,
                kind: r.parsed("ev_kind", EventKind::parse)?,
                payload: r.string("ev_payload")?,
            })
        })
    }

    fn count_endpoint_outcome(&mut self, tenant: TenantId, endpoint: WebhookId, answered: bool) -> StoreResult<EndpointHealth> {
        let stmt = if answered { &COUNT_SUCCESS } else { &COUNT_FAILURE };
        let health = self.one(stmt, args![tenant, endpoint], |r| {
            Ok(EndpointHealth {
                failures: r.u32("failure_streak")?,
                paused_until: r.opt_ts("paused_until")?,
                pauses: r.u32("pause_count")?,
            })
        })?;
        Ok(health.unwrap_or(EndpointHealth { failures: 0, paused_until: None, pauses: 0 }))
    }

    fn pause_endpoint(&mut self, tenant: TenantId, endpoint: WebhookId, pause: Pause) -> StoreResult<()> {
        self.exec(&PAUSE_ENDPOINT, args![tenant, endpoint, pause.until, pause.pauses])?;
        Ok(())
    }

    fn expire_deliveries(&mut self, created_before: Timestamp, now: Timestamp, limit: u32) -> StoreResult<usize> {
        self.exec(&EXPIRE_DELIVERIES, args![created_before, now, limit])
    }

    fn record_attempt(&mut self, rec: &AttemptRecord) -> StoreResult<()> {
        let a = &rec.attempt;
        let (tenant, id, at) = (rec.tenant_id, rec.delivery_id, a.attempted_at);
        self.exec(&INSERT_ATTEMPT, args![tenant, id, at, a.duration_ms, a.status_code, &a.error])?;
        let error = a.error.clone().or_else(|| a.status_code.map(|c| format!("HTTP {c}")));
        let none = Option::<&str>::None;
        match &rec.next {
            NextStep::Delivered => self.exec(&FINISH_ATTEMPT, args![tenant, id, "delivered", at, none, Some(at)])?,
            NextStep::RetryAt(t) => self.exec(&FINISH_ATTEMPT, args![tenant, id, "pending", *t, &error, Option::<Timestamp>::None])?,
            NextStep::Failed => self.exec(&FINISH_ATTEMPT, args![tenant, id, "failed", at, &error, Some(at)])?,
            NextStep::DisableEndpoint => {
                self.exec(&FINISH_ATTEMPT, args![tenant, id, "failed", at, &error, Some(at)])?;
                self.exec(&DISABLE_ENDPOINT, args![tenant, rec.endpoint_id])?;
                self.exec(&FAIL_ENDPOINT_DELIVERIES, args![tenant, rec.endpoint_id, at])?
            }
        };
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod plan_queries {
    pub(crate) use super::{DUE_DELIVERIES, NEXT_DELIVERY_DUE, OLDEST_DUE_DELIVERY};
}
