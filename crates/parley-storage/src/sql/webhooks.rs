//! Webhook events, endpoints, deliveries and attempts.

use std::collections::HashMap;

use parley_domain::Timestamp;
use parley_domain::events::{EventKind, OutboxEvent};
use parley_domain::model::*;
use parley_domain::store::ops::{WebhooksRead, WebhooksWrite};
use parley_domain::store::{OutboxStats, StoreError, StoreResult};
use parley_domain::webhooks::fairness::{DueDelivery, EndpointHealth, Pause};
use parley_domain::webhooks::{Attempt, AttemptRecord, ClaimedDelivery, Delivery, DeliveryStatus, NewWebhook, NextStep, Webhook};

use super::{Dialect, IdList, Row, Tx, statements};

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

fn due_deliveries(d: Dialect) -> String {
    let endpoints_due = "SELECT d2.id FROM webhook_deliveries d2
             WHERE d2.endpoint_id = w.id AND d2.tenant_id = w.tenant_id AND d2.status = 'pending'
               AND d2.next_attempt_at <= :now AND (d2.lease_until IS NULL OR d2.lease_until <= :now)
             ORDER BY d2.next_attempt_at, d2.id LIMIT :per_endpoint";
    format!(
        "SELECT d.id, d.tenant_id, d.endpoint_id, w.failure_streak
         FROM webhook_endpoints w CROSS JOIN webhook_deliveries d
         WHERE {}
           AND w.enabled = TRUE AND (w.paused_until IS NULL OR w.paused_until <= :now)
         ORDER BY d.next_attempt_at, d.id",
        d.among("d.id", endpoints_due)
    )
}

/// The insert of deliveries, one per endpoint the `SELECT` after it
/// names (see [`subscribed`]).
pub(super) const DELIVERY_INSERT: &str = "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)";

/// Whether endpoint `w` gets an event of kind `:kind` of tenant
/// `:tenant`: enabled and subscribed to the kind (`events` null means
/// every kind).
pub(super) fn subscribed(d: Dialect) -> String {
    format!("w.tenant_id = :tenant AND w.enabled = TRUE AND (w.events IS NULL OR {})", d.json_array_has("w.events", ":kind"))
}

statements! {
    RECENT_EVENTS(tenant: TenantId, limit: u32) => |_| "SELECT event_id, kind, occurred_at, payload FROM events
         WHERE tenant_id = :tenant AND webhook = TRUE ORDER BY id DESC LIMIT :limit".into(),
    WEBHOOKS(tenant: TenantId) => |_| format!("SELECT {WEBHOOK_COLS} FROM webhook_endpoints w WHERE w.tenant_id = :tenant ORDER BY w.id"),
    /// In a write unit the endpoint is locked until the commit: a change
    /// decided on what was read (a rotation checked against the secret a
    /// page showed, one test at a time) cannot interleave with another.
    WEBHOOK(tenant: TenantId, id: WebhookId) locked WEBHOOK_LOCKED => |_|
        format!("SELECT {WEBHOOK_COLS} FROM webhook_endpoints w WHERE w.tenant_id = :tenant AND w.id = :id"),
    DELIVERIES(tenant: TenantId, endpoint: WebhookId, limit: u32, offset: u64) => |_| format!(
        "SELECT {DELIVERY_COLS} {DELIVERY_FROM} WHERE d.tenant_id = :tenant AND d.endpoint_id = :endpoint
         ORDER BY d.id DESC LIMIT :limit OFFSET :offset"
    ),
    DELIVERY(tenant: TenantId, endpoint: WebhookId, id: DeliveryId) => |_|
        format!("SELECT {DELIVERY_COLS} {DELIVERY_FROM} WHERE d.tenant_id = :tenant AND d.endpoint_id = :endpoint AND d.id = :id"),
    /// The attempts of several deliveries in one statement.
    ATTEMPTS<'a>(tenant: TenantId, deliveries: &'a IdList) => |d| format!(
        "SELECT delivery_id, attempted_at, duration_ms, status_code, error FROM webhook_attempts
         WHERE tenant_id = :tenant AND delivery_id IN ({}) ORDER BY delivery_id, id",
        d.id_list(":deliveries")
    ),
    PENDING_TEST(tenant: TenantId, endpoint: WebhookId) => |_|
        "SELECT d.id FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id AND ev.tenant_id = d.tenant_id
         WHERE d.tenant_id = :tenant AND d.endpoint_id = :endpoint AND d.status = 'pending' AND ev.webhook = FALSE LIMIT 1".into(),
    COUNT_DELIVERIES(tenant: TenantId, endpoint: WebhookId) => |_|
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE tenant_id = :tenant AND endpoint_id = :endpoint".into(),
    OUTBOX_STATS() => |_| "SELECT COUNT(*) AS pending, MIN(created_at) AS oldest,
             COUNT(DISTINCT CASE WHEN attempts > 0 THEN endpoint_id END) AS failing
         FROM webhook_deliveries WHERE status = 'pending'".into(),
    /// The oldest delivery due `now` and not in flight, of an endpoint
    /// that may be sent to: each such endpoint's first through its
    /// (endpoint, due time) index, past at most its attempts in flight.
    /// Paused and disabled endpoints are left out before their deliveries
    /// are read, so a long backlog behind a broken endpoint costs nothing.
    OLDEST_DUE_DELIVERY(now: Timestamp) => |_| "SELECT MIN((SELECT d.next_attempt_at FROM webhook_deliveries d
                  WHERE d.endpoint_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= :now
                    AND (d.lease_until IS NULL OR d.lease_until <= :now)
                  ORDER BY d.next_attempt_at LIMIT 1)) AS due
         FROM webhook_endpoints w
         WHERE w.enabled = TRUE AND (w.paused_until IS NULL OR w.paused_until <= :now)".into(),
    /// When the next pending delivery falls due: each enabled endpoint's
    /// earliest through its (endpoint, due time) index, or the end of its
    /// pause if later. The endpoint id is the table's key, so no tenant
    /// filter is needed to stay within its own rows (and one would cost the
    /// index its MIN shortcut). CASE, because scalar MAX takes several
    /// arguments in SQLite only.
    NEXT_DELIVERY_DUE() => |_| "SELECT MIN(CASE WHEN COALESCE(paused_until, 0) > due THEN paused_until ELSE due END) AS due
         FROM (SELECT w.paused_until,
                      (SELECT MIN(d.next_attempt_at) FROM webhook_deliveries d
                       WHERE d.endpoint_id = w.id AND d.status = 'pending') AS due
               FROM webhook_endpoints w WHERE w.enabled = TRUE) AS e
         WHERE due IS NOT NULL".into(),
    /// Each endpoint's oldest due deliveries (`now`, `per_endpoint` of
    /// them), through its (endpoint, due time) index: a backlog at one
    /// endpoint cannot push the others out of a claim. CROSS JOIN keeps
    /// the endpoints as SQLite's outer loop: left to choose, it scans every
    /// delivery and runs the subquery for each, which made a claim cost
    /// the whole backlog.
    ///
    /// Planned at each run: deliveries come in bursts, and a plan made
    /// while the table was nearly empty (a fresh database, or one whose
    /// statistics are behind) would read every delivery for each endpoint
    /// once the burst arrives. A claim is rare next to the deliveries it
    /// sends, so planning it anew costs nothing that shows.
    DUE_DELIVERIES(now: Timestamp, per_endpoint: u32) planned EachRun => due_deliveries,
    /// The same, locked for a claim (see `Dialect::claim`).
    CLAIMABLE_DELIVERIES(now: Timestamp, per_endpoint: u32) planned EachRun => |d| d.claim(due_deliveries(d), "d"),
    /// A delivery of the event (by its public id) for every endpoint
    /// [`subscribed`] to it, where its entry did not insert them
    /// (`Dialect::chains_writes`).
    FAN_OUT<'a>(tenant: TenantId, event_id: &'a str, kind: &'a str, at: Timestamp) => |d| format!(
        "{DELIVERY_INSERT} SELECT :tenant, w.id, ev.id, :at, :at FROM events ev CROSS JOIN webhook_endpoints w
         WHERE ev.event_id = :event_id AND ev.tenant_id = :tenant AND {}",
        subscribed(d)
    ),
    INSERT_WEBHOOK<'a>(tenant: TenantId, url: &'a str, events: Option<&'a str>, secret: &'a str, created_at: Timestamp) => |_|
        "INSERT INTO webhook_endpoints (tenant_id, url, events, secret, created_at)
         VALUES (:tenant, :url, :events, :secret, :created_at) RETURNING id".into(),
    DELETE_WEBHOOK(tenant: TenantId, id: WebhookId) => |_| "DELETE FROM webhook_endpoints WHERE tenant_id = :tenant AND id = :id".into(),
    DELETE_WEBHOOK_DELIVERIES(tenant: TenantId, id: WebhookId) => |_|
        "DELETE FROM webhook_deliveries WHERE tenant_id = :tenant AND endpoint_id = :id".into(),
    ROTATE_SECRET<'a>(tenant: TenantId, id: WebhookId, secret: &'a str, previous_expires_at: Timestamp) => |_|
        "UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = :previous_expires_at, secret = :secret
         WHERE tenant_id = :tenant AND id = :id".into(),
    REDELIVER(tenant: TenantId, endpoint: WebhookId, delivery: DeliveryId, at: Timestamp) => |_|
        "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
         SELECT d.tenant_id, d.endpoint_id, d.event_id, :at, :at FROM webhook_deliveries d
         WHERE d.tenant_id = :tenant AND d.endpoint_id = :endpoint AND d.id = :delivery
         RETURNING id".into(),
    DELIVER_TO<'a>(tenant: TenantId, endpoint: WebhookId, event_id: &'a str, at: Timestamp) => |_|
        "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
         SELECT :tenant, w.id, ev.id, :at, :at FROM events ev CROSS JOIN webhook_endpoints w
         WHERE ev.event_id = :event_id AND ev.tenant_id = :tenant AND w.tenant_id = :tenant AND w.id = :endpoint
         RETURNING id".into(),
    /// Exactly the rows this statement leased come back: another
    /// claimer's leases, whatever their time, are never read as ours.
    LEASE<'a>(now: Timestamp, lease_until: Timestamp, deliveries: &'a IdList) => |d| format!(
        "UPDATE webhook_deliveries SET lease_until = :lease_until
         WHERE id IN ({}) AND status = 'pending' AND next_attempt_at <= :now AND (lease_until IS NULL OR lease_until <= :now)
         RETURNING id",
        d.id_list(":deliveries")
    ),
    CLAIMED<'a>(deliveries: &'a IdList) => |d| format!(
        "SELECT d.id AS d_id, d.tenant_id AS d_tenant_id, d.attempts AS d_attempts, {WEBHOOK_COLS},
                ev.event_id AS ev_event_id, ev.kind AS ev_kind, ev.payload AS ev_payload
         FROM webhook_deliveries d
         JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.tenant_id = d.tenant_id
         JOIN events ev ON ev.id = d.event_id AND ev.tenant_id = d.tenant_id
         WHERE d.id IN ({})
         ORDER BY d.next_attempt_at, d.id",
        d.id_list(":deliveries")
    ),
    COUNT_SUCCESS(tenant: TenantId, endpoint: WebhookId) => |_|
        "UPDATE webhook_endpoints SET failure_streak = 0, paused_until = NULL, pause_count = 0
         WHERE tenant_id = :tenant AND id = :endpoint RETURNING failure_streak, paused_until, pause_count".into(),
    COUNT_FAILURE(tenant: TenantId, endpoint: WebhookId) => |_| "UPDATE webhook_endpoints SET failure_streak = failure_streak + 1
         WHERE tenant_id = :tenant AND id = :endpoint RETURNING failure_streak, paused_until, pause_count".into(),
    PAUSE_ENDPOINT(tenant: TenantId, endpoint: WebhookId, until: Timestamp, pauses: u32) => |_|
        "UPDATE webhook_endpoints SET paused_until = :until, pause_count = :pauses WHERE tenant_id = :tenant AND id = :endpoint".into(),
    /// The outer conditions repeat the inner ones: on PostgreSQL a row a
    /// worker changed meanwhile is checked again against them only.
    EXPIRE_DELIVERIES(created_before: Timestamp, now: Timestamp, limit: u32) => |_| "UPDATE webhook_deliveries
         SET status = 'failed', finished_at = :now, lease_until = NULL,
             last_error = 'given up: still undelivered when its retry schedule had run out'
         WHERE id IN (SELECT id FROM webhook_deliveries
                      WHERE status = 'pending' AND created_at < :created_before AND (lease_until IS NULL OR lease_until <= :now)
                      ORDER BY created_at LIMIT :limit)
           AND status = 'pending' AND (lease_until IS NULL OR lease_until <= :now)".into(),
    INSERT_ATTEMPT<'a>(
        tenant: TenantId, delivery: DeliveryId, at: Timestamp, duration_ms: u64, status_code: Option<u16>, error: Option<&'a str>,
    ) => |_| "INSERT INTO webhook_attempts (tenant_id, delivery_id, attempted_at, duration_ms, status_code, error)
         SELECT :tenant, :delivery, :at, :duration_ms, :status_code, :error
         WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = :delivery AND tenant_id = :tenant)".into(),
    /// Only a pending delivery changes: if its lease ran out and another
    /// worker finished it meanwhile, the attempt is logged and no more.
    FINISH_ATTEMPT<'a>(
        tenant: TenantId, delivery: DeliveryId, status: &'a str, next_attempt_at: Timestamp, error: Option<&'a str>,
        finished_at: Option<Timestamp>,
    ) => |_| "UPDATE webhook_deliveries
         SET status = :status, attempts = attempts + 1, next_attempt_at = :next_attempt_at, lease_until = NULL,
             last_error = :error, finished_at = :finished_at
         WHERE tenant_id = :tenant AND id = :delivery AND status = 'pending'".into(),
    DISABLE_ENDPOINT(tenant: TenantId, endpoint: WebhookId) => |_|
        "UPDATE webhook_endpoints SET enabled = FALSE, disabled_reason = 'the endpoint answered 410 Gone'
         WHERE tenant_id = :tenant AND id = :endpoint".into(),
    FAIL_ENDPOINT_DELIVERIES(tenant: TenantId, endpoint: WebhookId, at: Timestamp) => |_|
        "UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint disabled', finished_at = :at, lease_until = NULL
         WHERE tenant_id = :tenant AND endpoint_id = :endpoint AND status = 'pending'".into(),
}

impl Tx<'_> {
    /// Fills in the attempts of `list`, in one statement.
    fn with_attempts(&mut self, tenant: TenantId, list: &mut [Delivery]) -> StoreResult<()> {
        if list.is_empty() {
            return Ok(());
        }
        let deliveries = &IdList::new(list.iter().map(|d| d.id.0));
        let mut by_delivery: HashMap<i64, Vec<Attempt>> = HashMap::new();
        for (delivery, attempt) in self.all(ATTEMPTS { tenant, deliveries }, |r| {
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
        let mut list = self.all(RECENT_EVENTS { tenant, limit }, |r| {
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
        self.all(WEBHOOKS { tenant }, webhook)
    }

    fn webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<Option<Webhook>> {
        self.one(self.locking(WEBHOOK { tenant, id }), webhook)
    }

    fn deliveries(&mut self, tenant: TenantId, endpoint: WebhookId, offset: u64, limit: u32) -> StoreResult<Vec<Delivery>> {
        let mut list = self.all(DELIVERIES { tenant, endpoint, limit, offset }, delivery)?;
        self.with_attempts(tenant, &mut list)?;
        Ok(list)
    }

    fn count_deliveries(&mut self, tenant: TenantId, endpoint: WebhookId) -> StoreResult<u64> {
        self.count(COUNT_DELIVERIES { tenant, endpoint })
    }

    fn pending_test(&mut self, tenant: TenantId, endpoint: WebhookId) -> StoreResult<bool> {
        Ok(self.one(PENDING_TEST { tenant, endpoint }, |r| r.i64("id"))?.is_some())
    }

    fn delivery(&mut self, tenant: TenantId, endpoint: WebhookId, id: DeliveryId) -> StoreResult<Option<Delivery>> {
        let Some(d) = self.one(DELIVERY { tenant, endpoint, id }, delivery)? else {
            return Ok(None);
        };
        let mut list = [d];
        self.with_attempts(tenant, &mut list)?;
        let [d] = list;
        Ok(Some(d))
    }

    fn outbox_stats(&mut self) -> StoreResult<OutboxStats> {
        let stats = self.one(OUTBOX_STATS {}, |r| {
            Ok(OutboxStats { pending: r.u64("pending")?, oldest_pending_at: r.opt_ts("oldest")?, failing_endpoints: r.u64("failing")? })
        })?;
        Ok(stats.unwrap_or_default())
    }

    fn oldest_due_delivery(&mut self, now: Timestamp) -> StoreResult<Option<Timestamp>> {
        // Deliveries of a paused endpoint wait by design: they are its
        // tenant's concern (its log, `failing_endpoints`), not lag.
        Ok(self.one(OLDEST_DUE_DELIVERY { now }, |r| r.opt_ts("due"))?.flatten())
    }

    fn next_delivery_due(&mut self) -> StoreResult<Option<Timestamp>> {
        Ok(self.one(NEXT_DELIVERY_DUE {}, |r| r.opt_ts("due"))?.flatten())
    }

    fn due_deliveries(&mut self, now: Timestamp, per_endpoint: u32) -> StoreResult<Vec<DueDelivery>> {
        self.all(DUE_DELIVERIES { now, per_endpoint }, due_delivery)
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
        let params = INSERT_WEBHOOK { tenant, url: &w.url, events: events.as_deref(), secret: &w.secret, created_at: w.created_at };
        let id = self.insert(params)?;
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

    /// The deliveries first, then the endpoint: the order in which an
    /// attempt's unit locks them (it records the attempt on its delivery,
    /// then counts the outcome on the endpoint). The endpoint first, with
    /// the deliveries going by cascade, could deadlock with one on
    /// PostgreSQL, and the admin was told to try again.
    fn delete_webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<bool> {
        self.exec(DELETE_WEBHOOK_DELIVERIES { tenant, id })?;
        Ok(self.exec(DELETE_WEBHOOK { tenant, id })? == 1)
    }

    fn rotate_webhook_secret(&mut self, tenant: TenantId, id: WebhookId, secret: &str, previous_expires_at: Timestamp) -> StoreResult<()> {
        self.exec(ROTATE_SECRET { tenant, id, secret, previous_expires_at })?;
        Ok(())
    }

    fn redeliver(&mut self, tenant: TenantId, endpoint: WebhookId, delivery: DeliveryId, at: Timestamp) -> StoreResult<Option<DeliveryId>> {
        let id = self.one(REDELIVER { tenant, endpoint, delivery, at }, |r| r.i64("id"))?;
        if id.is_some() {
            self.effects.deliveries_added += 1;
        }
        Ok(id.map(DeliveryId))
    }

    fn deliver_to(&mut self, tenant: TenantId, endpoint: WebhookId, event_id: &str, at: Timestamp) -> StoreResult<Option<DeliveryId>> {
        let id = self.one(DELIVER_TO { tenant, endpoint, event_id, at }, |r| r.i64("id"))?;
        if id.is_some() {
            self.effects.deliveries_added += 1;
        }
        Ok(id.map(DeliveryId))
    }

    fn claimable_deliveries(&mut self, now: Timestamp, per_endpoint: u32) -> StoreResult<Vec<DueDelivery>> {
        self.all(CLAIMABLE_DELIVERIES { now, per_endpoint }, due_delivery)
    }

    fn lease_deliveries(&mut self, ids: &[DeliveryId], now: Timestamp, lease_until: Timestamp) -> StoreResult<Vec<ClaimedDelivery>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let deliveries = &IdList::new(ids.iter().map(|d| d.0));
        let leased = self.all(LEASE { now, lease_until, deliveries }, |r| r.i64("id"))?;
        if leased.is_empty() {
            return Ok(Vec::new());
        }
        self.all(CLAIMED { deliveries: &IdList::new(leased) }, |r| {
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
        let health = |r: &dyn Row| {
            Ok(EndpointHealth {
                failures: r.u32("failure_streak")?,
                paused_until: r.opt_ts("paused_until")?,
                pauses: r.u32("pause_count")?,
            })
        };
        let health = match answered {
            true => self.one(COUNT_SUCCESS { tenant, endpoint }, health)?,
            false => self.one(COUNT_FAILURE { tenant, endpoint }, health)?,
        };
        Ok(health.unwrap_or(EndpointHealth { failures: 0, paused_until: None, pauses: 0 }))
    }

    fn pause_endpoint(&mut self, tenant: TenantId, endpoint: WebhookId, pause: Pause) -> StoreResult<()> {
        self.exec(PAUSE_ENDPOINT { tenant, endpoint, until: pause.until, pauses: pause.pauses })?;
        Ok(())
    }

    fn expire_deliveries(&mut self, created_before: Timestamp, now: Timestamp, limit: u32) -> StoreResult<usize> {
        self.exec(EXPIRE_DELIVERIES { created_before, now, limit })
    }

    fn record_attempt(&mut self, rec: &AttemptRecord) -> StoreResult<()> {
        let a = &rec.attempt;
        let (tenant, delivery, at) = (rec.tenant_id, rec.delivery_id, a.attempted_at);
        let (duration_ms, status_code) = (a.duration_ms, a.status_code);
        self.exec(INSERT_ATTEMPT { tenant, delivery, at, duration_ms, status_code, error: a.error.as_deref() })?;
        let error = a.error.clone().or_else(|| a.status_code.map(|c| format!("HTTP {c}")));
        let error = error.as_deref();
        let finish =
            |status, next_attempt_at, error, finished_at| FINISH_ATTEMPT { tenant, delivery, status, next_attempt_at, error, finished_at };
        match &rec.next {
            NextStep::Delivered => self.exec(finish("delivered", at, None, Some(at)))?,
            NextStep::RetryAt(t) => self.exec(finish("pending", *t, error, None))?,
            NextStep::Failed => self.exec(finish("failed", at, error, Some(at)))?,
            NextStep::DisableEndpoint => {
                self.exec(finish("failed", at, error, Some(at)))?;
                self.exec(DISABLE_ENDPOINT { tenant, endpoint: rec.endpoint_id })?;
                self.exec(FAIL_ENDPOINT_DELIVERIES { tenant, endpoint: rec.endpoint_id, at })?
            }
        };
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod plan_queries {
    pub(crate) use super::{DUE_DELIVERIES, NEXT_DELIVERY_DUE, OLDEST_DUE_DELIVERY};
}
