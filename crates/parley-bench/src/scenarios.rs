//! The scenarios, each run against Parley and, where one exists, beside its
//! same-run reference.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::task::JoinSet;

use crate::client::{Call, once};
use crate::load::{CONNECT_FAILED, Stats, TASK_FAILED, Window, closed_loop, gather, paced};
use crate::process::Usage;
use crate::receiver::Receiver;
use crate::report::{Report, Target, UsageRow};
use crate::setup::{Conversation, Tenant};

/// The route name of the webhook scenario's posts.
const POSTED: &str = "widget message POST (delivered)";

/// Messages sent one at a time, each waited for, for the idle-queue lag.
const IDLE_SAMPLES: usize = 200;

/// How hard and how long.
#[derive(Clone, Debug)]
pub struct Load {
    pub duration: Duration,
    pub connections: usize,
    pub poll_every: Duration,
    pub messages_per_second: f64,
    pub mix_duration: Duration,
}

/// The servers under test and what they serve.
pub struct Bench {
    pub parley: SocketAddr,
    /// The server's process, when known (for /proc figures).
    pub parley_process: Option<u32>,
    /// The reference app, unless measuring Parley alone.
    pub reference: Option<SocketAddr>,
    pub tenant: Tenant,
    /// Conversations that are only read: their messages stay as set up.
    pub conversations: Arc<Vec<Conversation>>,
    /// Conversations the write scenarios post to (newest in the inbox).
    pub writes: Arc<Vec<Conversation>>,
    pub load: Load,
    pub report: Report,
}

/// Calls prepared once and sent in turn, each connection starting at its
/// own place, so the client spends nothing on building requests.
fn rotate(route: &'static str, calls: Vec<Call>) -> impl Fn(usize, u64) -> (&'static str, Call) + Send + Sync + 'static {
    let calls = Arc::new(calls);
    move |c, i| (route, calls[(c + i as usize * 7) % calls.len()].clone())
}

impl Bench {
    pub fn new(
        parley: SocketAddr,
        parley_process: Option<u32>,
        reference: Option<SocketAddr>,
        tenant: Tenant,
        conversations: Vec<Conversation>,
        writes: Vec<Conversation>,
        load: Load,
    ) -> Self {
        Self {
            parley,
            parley_process,
            reference,
            tenant,
            conversations: Arc::new(conversations),
            writes: Arc::new(writes),
            load,
            report: Report::default(),
        }
    }

    fn usage(&self) -> Option<Usage> {
        self.parley_process.map(Usage::of)
    }

    /// Runs `f`, then adds its routes (and the server's CPU time over it) to
    /// the report, with a row for failures that belong to no route. With a
    /// `window`, rates and CPU time count from the window's opening.
    async fn measure<F, Fut>(&mut self, scenario: &str, rows: &[(&str, Option<&str>, Target)], window: Option<Arc<Window>>, f: F)
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Stats>,
    {
        if let Some(pid) = self.parley_process {
            crate::process::reset_peak(pid);
        }
        let before = self.usage();
        let started = Instant::now();
        let stats = f().await;
        let seconds = window.as_ref().map_or_else(|| started.elapsed().as_secs_f64(), |w| w.length.as_secs_f64());
        let before = window.as_ref().and_then(|w| w.usage_at_start.get().copied()).or(before);
        let failures = [(CONNECT_FAILED, None, Target::default()), (TASK_FAILED, None, Target::default())];
        for (route, reference, target) in rows.iter().chain(failures.iter()) {
            self.report.add(scenario, route, &stats, seconds, *reference, *target);
        }
        if let (Some(before), Some(after)) = (before, self.usage()) {
            let usage = Usage { peak_rss_mb: after.peak_rss_mb, cpu_seconds: after.cpu_seconds - before.cpu_seconds };
            let max_rss_mb = (scenario == "mix").then_some(200.0);
            let requests = stats.values().map(|s| s.count()).sum();
            self.report.usage.push(UsageRow { scenario: scenario.to_owned(), usage, seconds, requests, max_rss_mb });
        }
    }

    /// The reference app: a trivial GET, a naive insert, naive polls.
    pub async fn ceiling(&mut self) {
        let Some(addr) = self.reference else { return };
        let load = self.load.clone();
        let conversations = self.conversations.len().max(1) as i64;
        let per = |f: &dyn Fn(i64) -> Call| (1..=conversations).map(f).collect::<Vec<Call>>();
        // Inserts go to conversations of their own, as Parley's posts go to
        // its `writes`: the polled ones keep their seeded rows, so the
        // 20-row poll returns 20 rows in every round.
        let insert = |c: i64| {
            Call::post(
                "/naive/messages",
                &json!({"conversation_id": conversations + c, "body": "a message of about the size a visitor writes"}),
            )
        };
        let runs: [(&'static str, Vec<Call>); 4] = [
            ("trivial GET", vec![Call::get("/trivial")]),
            ("naive insert", per(&insert)),
            ("naive poll, empty", per(&|c| Call::get(format!("/naive/messages?conversation_id={c}&after_id=9223372036854775806")))),
            ("naive poll, 20 rows", per(&|c| Call::get(format!("/naive/messages?conversation_id={c}&after_id=0")))),
        ];
        for (name, calls) in runs {
            let started = Instant::now();
            let stats = closed_loop(addr, load.connections, load.duration, rotate(name, calls)).await;
            let seconds = started.elapsed().as_secs_f64();
            self.report.add("reference", name, &stats, seconds, None, Target::default());
        }
    }

    /// Durable message posts across many conversations.
    pub async fn posts(&mut self) {
        let (addr, load, token, list) = (self.parley, self.load.clone(), self.tenant.widget_token.clone(), Arc::clone(&self.writes));
        // No target against the naive insert, which is not durable
        // (docs/benchmarks.md); PostgreSQL's is printed by `scripts/bench
        // --postgres` against pgbench's naive durable post.
        let target = Target::default();
        let body = json!({"token": token, "body": "a message of about the size a visitor writes"});
        let calls = list.iter().map(|c| Call::post(format!("/api/v1/widget/conversations/{}/messages", c.public_id), &body)).collect();
        self.measure("post", &[("widget message POST", Some("naive insert"), target)], None, || {
            closed_loop(addr, load.connections, load.duration, rotate("widget message POST", calls))
        })
        .await;
    }

    /// Polls that find nothing new: the request a widget makes most.
    pub async fn empty_polls(&mut self) {
        let (addr, load, token, list) = (self.parley, self.load.clone(), self.tenant.widget_token.clone(), Arc::clone(&self.conversations));
        let target = Target { min_ratio: Some(0.4), max_p99_ms: Some(10.0) };
        let calls = list
            .iter()
            .map(|c| Call::get(format!("/api/v1/widget/conversations/{}/messages?token={token}&after_id=9223372036854775806", c.public_id)))
            .collect();
        self.measure("poll-empty", &[("widget poll, after_id, empty", Some("trivial GET"), target)], None, || {
            closed_loop(addr, load.connections, load.duration, rotate("widget poll, after_id, empty", calls))
        })
        .await;
    }

    /// Polls of the latest messages (a widget opening a conversation).
    pub async fn latest_polls(&mut self) {
        let (addr, load, token, list) = (self.parley, self.load.clone(), self.tenant.widget_token.clone(), Arc::clone(&self.conversations));
        let calls =
            list.iter().map(|c| Call::get(format!("/api/v1/widget/conversations/{}/messages?token={token}", c.public_id))).collect();
        self.measure("poll-latest", &[("widget poll, latest", Some("naive poll, 20 rows"), Target::default())], None, || {
            closed_loop(addr, load.connections, load.duration, rotate("widget poll, latest", calls))
        })
        .await;
    }

    /// Operators reading their inbox and replying.
    pub async fn operators(&mut self) {
        let (addr, load, list) = (self.parley, self.load.clone(), Arc::clone(&self.writes));
        let tokens: Vec<String> = std::iter::once(self.tenant.admin_token.clone()).chain(self.tenant.operator_tokens.clone()).collect();
        let inbox = tokens.iter().map(|t| Call::get("/api/v1/mobile/conversations?per_page=20").bearer(t)).collect();
        self.measure("inbox", &[("operator inbox, 20 per page", Some("trivial GET"), Target::default())], None, || {
            closed_loop(addr, load.connections, load.duration, rotate("operator inbox, 20 per page", inbox))
        })
        .await;
        let ids = inbox_ids(addr, &self.tenant.admin_token, list.len()).await;
        let body = json!({"body": "an operator's answer of a usual length"});
        let replies =
            ids.iter().map(|id| Call::post(format!("/api/v1/mobile/conversations/{id}/messages"), &body).bearer(&tokens[0])).collect();
        self.measure("reply", &[("operator reply POST", Some("naive insert"), Target::default())], None, || {
            closed_loop(addr, load.connections, load.duration, rotate("operator reply POST", replies))
        })
        .await;
    }

    /// The inbox and search of an admin whose tenant holds the `scale`
    /// data (`scale::seed`), a few requests at a time: the figure is the
    /// time one request takes on a big tenant, not a saturated server's
    /// queue. Searches rotate through a common word (one message in
    /// ten), a rare one and a visitor's name.
    pub async fn scale(&mut self) {
        let (addr, load) = (self.parley, self.load.clone());
        let admin = self.tenant.admin_token.clone();
        let connections = load.connections.min(4);
        // Issue 36 holds the inbox to 25 ms on both databases; issue 35
        // the searches to 50.
        let inbox_target = Target { max_p99_ms: Some(25.0), ..Target::default() };
        let target = Target { max_p99_ms: Some(50.0), ..Target::default() };
        let inbox: Vec<Call> = ["", "&status=open", "&status=closed"]
            .iter()
            .map(|filter| Call::get(format!("/api/v1/mobile/conversations?per_page=20{filter}")).bearer(&admin))
            .collect();
        self.measure("scale", &[("inbox at scale, 20 per page", None, inbox_target)], None, || {
            closed_loop(addr, connections, load.duration, rotate("inbox at scale, 20 per page", inbox))
        })
        .await;
        for (route, q) in [
            ("search at scale, a common word", "refund"),
            ("search at scale, a rare word", "zebra"),
            ("search at scale, a visitor's name", "Scale%20visitor%204242"),
        ] {
            let call = vec![Call::get(format!("/api/v1/mobile/search?q={q}&per_page=20")).bearer(&admin)];
            self.measure("scale", &[(route, None, target)], None, || closed_loop(addr, connections, load.duration, rotate(route, call)))
                .await;
        }
    }

    /// Webhook delivery: every message posted for a while is delivered to a
    /// receiver in the bench; throughput and commit-to-delivery lag, under
    /// that load and then one message at a time.
    pub async fn webhooks(&mut self) -> Result<(), String> {
        let receiver = Receiver::start().await?;
        let hook = json!({"url": receiver.url, "events": ["message.created"]});
        let (status, body) = once(self.parley, Call::post("/api/v1/admin/webhooks", &hook).bearer(&self.tenant.admin_token))
            .await
            .map_err(|e| e.to_string())?;
        if status != 201 {
            return Err(format!("registering the endpoint failed with {status}: {body}"));
        }
        let endpoint = body["webhook"]["id"].as_i64().ok_or_else(|| format!("the endpoint's answer has no id: {body}"))?;
        let (addr, load, token, list) = (self.parley, self.load.clone(), self.tenant.widget_token.clone(), Arc::clone(&self.writes));
        let started = Instant::now();
        let body = json!({"token": token, "body": "a message a partner hears about"});
        let calls: Arc<Vec<Call>> =
            Arc::new(list.iter().map(|c| Call::post(format!("/api/v1/widget/conversations/{}/messages", c.public_id), &body)).collect());
        // 16 connections: the posts already outrun the deliveries with them.
        self.measure("webhooks", &[(POSTED, Some("naive insert"), Target::default())], None, || {
            closed_loop(addr, load.connections.min(16), load.duration, move |c, i| {
                (POSTED, calls[(c + i as usize * 7) % calls.len()].clone())
            })
        })
        .await;
        // Only what was answered 201 was committed and is owed a delivery.
        let expected = self.report.rows.iter().rev().find(|r| r.route == POSTED).map_or(0, |r| r.stats.ok);
        let deadline = Instant::now() + Duration::from_secs(120);
        while receiver.count() < expected && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let seconds = started.elapsed().as_secs_f64();
        let (p50, p99, max) = receiver.lag();
        self.report.notes.push((
            "webhooks".into(),
            json!({
                "posted": expected,
                "delivered": receiver.count(),
                "deliveries_per_second": receiver.count() as f64 / seconds,
                "commit_to_delivery_ms": {"p50": p50, "p99": p99, "max": max},
            }),
        ));
        // The same on an idle queue: one message at a time, each waited
        // for, so the lag is the worker's reaction, not a backlog.
        receiver.reset_lag();
        let single = Call::post(format!("/api/v1/widget/conversations/{}/messages", self.writes[0].public_id), &body);
        let (mut samples, mut failed, mut late) = (0, 0, 0);
        for _ in 0..IDLE_SAMPLES {
            let before = receiver.count();
            if !matches!(once(self.parley, single.clone()).await, Ok((201, _))) {
                failed += 1;
                continue;
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while receiver.count() == before && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            if receiver.count() == before {
                late += 1;
            } else {
                samples += 1;
            }
        }
        let (p50, p99, max) = receiver.lag();
        self.report.notes.push((
            "webhooks, idle queue".into(),
            json!({
                "samples": samples,
                "posts_failed": failed,
                "not_delivered_within_5_s": late,
                "commit_to_delivery_ms": {"p50": p50, "p99": p99, "max": max},
            }),
        ));
        // Leave no endpoint behind to slow the next scenarios.
        let _ = once(self.parley, Call::delete(format!("/api/v1/admin/webhooks/{endpoint}")).bearer(&self.tenant.admin_token)).await;
        Ok(())
    }

    /// The day-to-day mix: many visitors, each on its own connection,
    /// polling every few seconds, messages arriving at a steady rate, and
    /// operators reading their inbox and answering.
    pub async fn mix(&mut self, visitors: Vec<Conversation>) {
        let (addr, load, token) = (self.parley, self.load.clone(), self.tenant.widget_token.clone());
        let visitors = Arc::new(visitors);
        let operator_tokens: Vec<String> =
            std::iter::once(self.tenant.admin_token.clone()).chain(self.tenant.operator_tokens.clone()).collect();
        let ids = inbox_ids(addr, &self.tenant.admin_token, 200).await;
        let target = Target { min_ratio: None, max_p99_ms: Some(25.0) };
        let rows = [
            ("mix: widget poll", None, target),
            ("mix: widget message POST", None, target),
            ("mix: operator inbox", None, target),
            ("mix: operator reply POST", None, target),
        ];
        // Each visitor, each sender, and two per operator.
        const SENDERS: usize = 16;
        let window = Window::new(visitors.len() + SENDERS + 2 * operator_tokens.len(), load.mix_duration, self.parley_process);
        let measured = Arc::clone(&window);
        self.measure("mix", &rows, Some(measured), || async move {
            let mut tasks = JoinSet::new();
            let n = visitors.len().max(1);
            for (v, conv) in visitors.iter().enumerate() {
                let (token, conv) = (token.clone(), conv.clone());
                let phase = load.poll_every.mul_f64(v as f64 / n as f64);
                let call =
                    Call::get(format!("/api/v1/widget/conversations/{}/messages?token={token}&after_id={}", conv.public_id, conv.last_id));
                let window = Arc::clone(&window);
                tasks.spawn(async move { paced(addr, window, load.poll_every, phase, move |_| ("mix: widget poll", call.clone())).await });
            }
            // Messages at the set rate, spread over a few senders.
            let period = Duration::from_secs_f64(SENDERS as f64 / load.messages_per_second.max(0.001));
            let body = json!({"token": token, "body": "a visitor's question"});
            let posts: Arc<Vec<Call>> = Arc::new(
                visitors.iter().map(|c| Call::post(format!("/api/v1/widget/conversations/{}/messages", c.public_id), &body)).collect(),
            );
            for s in 0..SENDERS {
                let (posts, window) = (Arc::clone(&posts), Arc::clone(&window));
                let phase = period.mul_f64(s as f64 / SENDERS as f64);
                tasks.spawn(async move {
                    paced(addr, window, period, phase, move |i| {
                        ("mix: widget message POST", posts[(s + i as usize * SENDERS) % posts.len()].clone())
                    })
                    .await
                });
            }
            // Operators: each reads its inbox every 3 s and answers one
            // conversation every 3 s.
            let ids = Arc::new(ids);
            for (o, op) in operator_tokens.iter().enumerate() {
                let op = op.clone();
                let every = Duration::from_secs(3);
                let phase = every.mul_f64(o as f64 / operator_tokens.len() as f64);
                let inbox = Call::get("/api/v1/mobile/conversations?per_page=20").bearer(&op);
                let inbox_window = Arc::clone(&window);
                tasks.spawn(async move { paced(addr, inbox_window, every, phase, move |_| ("mix: operator inbox", inbox.clone())).await });
                let body = json!({"body": "an operator's answer"});
                let replies: Vec<Call> =
                    ids.iter().map(|id| Call::post(format!("/api/v1/mobile/conversations/{id}/messages"), &body).bearer(&op)).collect();
                let reply_window = Arc::clone(&window);
                tasks.spawn(async move {
                    paced(addr, reply_window, every, phase + every / 2, move |i| {
                        ("mix: operator reply POST", replies[(o + i as usize) % replies.len().max(1)].clone())
                    })
                    .await
                });
            }
            gather(tasks).await
        })
        .await;
    }
}

/// Ids of conversations the admin sees, for the operator routes.
async fn inbox_ids(addr: SocketAddr, admin: &str, want: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut page = 1;
    while ids.len() < want {
        let call = Call::get(format!("/api/v1/mobile/conversations?per_page=100&page={page}")).bearer(admin);
        let Ok((200, body)) = once(addr, call).await else { break };
        let list: Vec<i64> =
            body["conversations"].as_array().map(|l| l.iter().filter_map(|c| c["id"].as_i64()).collect()).unwrap_or_default();
        if list.is_empty() {
            break;
        }
        ids.extend(list);
        page += 1;
    }
    if ids.is_empty() {
        ids.push(1);
    }
    ids
}
