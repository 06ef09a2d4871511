//! Webhook delivery figures: throughput against a local receiver and the
//! time from commit to first attempt on an idle queue.
//!
//! Run with `cargo bench -p parley --bench webhooks`. It prints figures; it
//! asserts nothing. Record them in docs/benchmarks.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use parley::{Application, Config, Mode};
use parley_domain::events::{EventKind, OutboxEvent};
use parley_domain::model::{SiteScope, WidgetAppearance};
use parley_domain::tenancy::{NewSiteInput, NewTenantInput, Tenancy};
use parley_domain::{SystemClock, Timestamp};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const BACKLOG: usize = 20_000;
const LATENCY_SAMPLES: usize = 300;

#[derive(Clone)]
struct Counter {
    seen: Arc<AtomicU64>,
    arrived: Arc<Notify>,
}

async fn receive(State(c): State<Counter>) -> StatusCode {
    c.seen.fetch_add(1, Ordering::Relaxed);
    c.arrived.notify_one();
    StatusCode::NO_CONTENT
}

async fn receiver() -> (String, Counter) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind receiver");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let counter = Counter { seen: Arc::new(AtomicU64::new(0)), arrived: Arc::new(Notify::new()) };
    let app = Router::new().fallback(receive).with_state(counter.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, counter)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().expect("temp dir");
    let vars = [
        ("PARLEY_LISTEN", "127.0.0.1:0".to_owned()),
        ("PARLEY_DATABASE_URL", format!("sqlite://{}/bench.sqlite3", dir.path().display())),
        ("PARLEY_RATE_LIMITS", "off".to_owned()),
        ("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("PARLEY_LOG", "error".to_owned()),
    ];
    let vars = vars.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let (config, _) = Config::from_vars(&vars).expect("config");
    let app = Application::build(&config, Mode::Serve, Arc::new(SystemClock)).await.expect("start");
    let base = app.public_url().to_owned();
    let db = app.database().clone();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(app.run(shutdown.clone()));
    let tenancy = Tenancy::new(db.clone(), Arc::new(SystemClock));
    let (tenant, _) = tenancy
        .create_tenant(NewTenantInput {
            slug: "bench".into(),
            name: "Bench".into(),
            admin_email: "admin@bench.example".into(),
            admin_password: "benchmark password".into(),
        })
        .await
        .expect("tenant");
    let site = tenancy
        .create_site(tenant.id, NewSiteInput { name: "Site".into(), domains: vec![], appearance: WidgetAppearance::default() })
        .await
        .expect("site");
    let installation = tenancy
        .create_installation(SiteScope { tenant: tenant.id, site: site.id }, "Web".into(), "web".into())
        .await
        .expect("installation");

    let client = reqwest::Client::new();
    let login: Value = client
        .post(format!("{base}/api/v1/mobile/login"))
        .json(&json!({"email": "admin@bench.example", "password": "benchmark password"}))
        .send()
        .await
        .expect("login")
        .json()
        .await
        .expect("login body");
    let token = login["token"].as_str().expect("token").to_owned();
    let (url, counter) = receiver().await;
    let res =
        client.post(format!("{base}/api/v1/admin/webhooks")).bearer_auth(&token).json(&json!({"url": url})).send().await.expect("register");
    assert_eq!(res.status(), 201, "webhook registered");

    // Throughput: a backlog of events written in large units, then the
    // time until the receiver has them all.
    let payload = json!({"event": "message.created", "data": {"message": {"body": "x".repeat(200)}}}).to_string();
    let tenant_id = tenant.id;
    let started = Instant::now();
    let mut writes = Vec::new();
    for chunk in 0..(BACKLOG / 500) {
        let (db, payload) = (db.clone(), payload.clone());
        writes.push(tokio::spawn(async move {
            db.write(move |tx| {
                for n in 0..500 {
                    let event = OutboxEvent {
                        event_id: format!("evt_bench_{chunk}_{n}"),
                        kind: EventKind::MessageCreated,
                        occurred_at: Timestamp::from_millis(0),
                        payload: payload.clone(),
                    };
                    tx.insert_event(tenant_id, &event)?;
                }
                Ok(())
            })
            .await
        }));
    }
    for w in writes {
        w.await.expect("join").expect("write");
    }
    let written = started.elapsed();
    while counter.seen.load(Ordering::Relaxed) < BACKLOG as u64 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    println!("backlog of {BACKLOG} events written in {:.0} ms", written.as_secs_f64() * 1000.0);
    println!(
        "throughput: {BACKLOG} deliveries in {:.2} s = {:.0} deliveries/s (one endpoint, 16 in flight)",
        elapsed.as_secs_f64(),
        BACKLOG as f64 / elapsed.as_secs_f64()
    );
    // Let the last attempts be recorded so the queue is idle.
    loop {
        let stats = db.read(|r| Ok(r.outbox_stats()?)).await.expect("stats");
        if stats.pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Latency on an idle queue: from the commit's acknowledgement (the 201
    // of a widget write that records conversation.created and
    // message.created) to the first delivery reaching the receiver.
    let mut samples = Vec::with_capacity(LATENCY_SAMPLES);
    for n in 0..LATENCY_SAMPLES {
        let before = counter.seen.load(Ordering::Relaxed);
        let arrived = counter.arrived.notified();
        tokio::pin!(arrived);
        arrived.as_mut().enable();
        let res = client
            .post(format!("{base}/api/widget/conversations"))
            .json(&json!({"token": installation.token, "visitor_uuid": format!("v{n}"), "message": "hi", "privacy_accepted": true}))
            .send()
            .await
            .expect("open");
        let acknowledged = Instant::now();
        assert_eq!(res.status(), 201);
        while counter.seen.load(Ordering::Relaxed) == before {
            arrived.as_mut().await;
            arrived.set(counter.arrived.notified());
            arrived.as_mut().enable();
        }
        samples.push(acknowledged.elapsed());
        // Wait for both deliveries so the next sample starts idle.
        while counter.seen.load(Ordering::Relaxed) < before + 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    samples.sort();
    let pct = |p: f64| samples[((samples.len() as f64 * p).ceil() as usize).saturating_sub(1)].as_secs_f64() * 1000.0;
    println!(
        "commit to first attempt, idle queue ({LATENCY_SAMPLES} samples): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        pct(0.50),
        pct(0.99),
        pct(1.0)
    );

    shutdown.cancel();
    let _ = server.await;
}
