//! The reference: a minimal axum app the bench starts as its own process
//! (`parley-bench ceiling-server`), so the stack's ceiling is measured in
//! the same run, on the same machine, with the same client:
//!
//! - `GET /trivial`: the cheapest answer axum and hyper can give;
//! - `POST /naive/messages`: one insert per request on a small pool of
//!   SQLite connections, WAL with `synchronous=NORMAL`: what a quick app
//!   does, and not durable (a power loss can lose acknowledged rows);
//! - `GET /naive/messages`: one indexed query per request for the messages
//!   after an id, on the same pool;
//! - `GET /naive/events?conversation_id=N`: a stream of that conversation's
//!   new messages, fed by an in-process broadcast of every insert (every
//!   stream sees every message and keeps its own): no durable feed, no
//!   resume, nothing shared between processes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use rusqlite::Connection;
use serde::Deserialize;
use serde_json::{Value, json};

/// Connections of the naive pool, one per core and a few more.
const POOL: usize = 8;

struct Pool {
    conns: Vec<Mutex<Connection>>,
    next: AtomicUsize,
}

impl Pool {
    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StatusCode> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) % self.conns.len();
        let conn = self.conns[n].lock().map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
        f(&conn).map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)
    }
}

fn open(path: &PathBuf) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    Ok(conn)
}

/// Creates the reference's table with `conversations` × `messages` rows.
fn seed(path: &PathBuf, conversations: i64, messages: i64) -> rusqlite::Result<()> {
    let mut conn = open(path)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation_id, id);",
    )?;
    let tx = conn.transaction()?;
    for c in 1..=conversations {
        for m in 0..messages {
            tx.execute("INSERT INTO messages (conversation_id, body, created_at) VALUES (?1, ?2, ?3)", (c, format!("message {m}"), m))?;
        }
    }
    tx.commit()
}

#[derive(Deserialize)]
struct InsertBody {
    conversation_id: i64,
    body: String,
}

#[derive(Deserialize)]
struct PollQuery {
    conversation_id: i64,
    after_id: i64,
}

async fn trivial() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

#[derive(Clone)]
struct App {
    pool: Arc<Pool>,
    inserted: tokio::sync::broadcast::Sender<(i64, i64, String)>,
}

impl axum::extract::FromRef<App> for Arc<Pool> {
    fn from_ref(app: &App) -> Self {
        Arc::clone(&app.pool)
    }
}

#[derive(Deserialize)]
struct EventsQuery {
    conversation_id: i64,
}

async fn events(
    State(app): State<App>,
    Query(q): Query<EventsQuery>,
) -> axum::response::sse::Sse<impl futures::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let receiver = app.inserted.subscribe();
    let stream = futures::stream::unfold(receiver, move |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok((conversation, id, body)) if conversation == q.conversation_id => {
                    let data = json!({"message": {"id": id, "body": body}}).to_string();
                    let event = Event::default().id(id.to_string()).event("message.created").data(data);
                    return Some((Ok(event), receiver));
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().text("keep-alive"))
}

async fn insert(State(app): State<App>, Json(b): Json<InsertBody>) -> Result<(StatusCode, Json<Value>), StatusCode> {
    let pool = Arc::clone(&app.pool);
    let (conversation, body) = (b.conversation_id, b.body.clone());
    let id = tokio::task::spawn_blocking(move || {
        pool.with(|c| {
            c.prepare_cached("INSERT INTO messages (conversation_id, body, created_at) VALUES (?1, ?2, ?3)")?.execute((
                b.conversation_id,
                &b.body,
                0,
            ))?;
            Ok(c.last_insert_rowid())
        })
    })
    .await
    .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)??;
    let _ = app.inserted.send((conversation, id, body));
    Ok((StatusCode::CREATED, Json(json!({"message": {"id": id}}))))
}

async fn poll(State(pool): State<Arc<Pool>>, Query(q): Query<PollQuery>) -> Result<Json<Value>, StatusCode> {
    let messages = tokio::task::spawn_blocking(move || {
        pool.with(|c| {
            let mut stmt =
                c.prepare_cached("SELECT id, body, created_at FROM messages WHERE conversation_id = ?1 AND id > ?2 ORDER BY id LIMIT 100")?;
            let rows = stmt.query_map((q.conversation_id, q.after_id), |r| {
                Ok(json!({"id": r.get::<_, i64>("id")?, "body": r.get::<_, String>("body")?, "created_at": r.get::<_, i64>("created_at")?}))
            })?;
            rows.collect::<rusqlite::Result<Vec<Value>>>()
        })
    })
    .await
    .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)??;
    Ok(Json(json!({"messages": messages})))
}

/// Runs the reference app until killed; prints where it listens.
pub async fn serve(db: PathBuf, conversations: i64, messages: i64) -> Result<(), String> {
    seed(&db, conversations, messages).map_err(|e| format!("cannot seed the reference database: {e}"))?;
    let conns = (0..POOL).map(|_| open(&db).map(Mutex::new)).collect::<rusqlite::Result<Vec<_>>>().map_err(|e| e.to_string())?;
    let pool = Arc::new(Pool { conns, next: AtomicUsize::new(0) });
    let (inserted, _) = tokio::sync::broadcast::channel(4096);
    let app = Router::new()
        .route("/trivial", get(trivial))
        .route("/naive/messages", get(poll).post(insert))
        .route("/naive/events", get(events))
        .with_state(App { pool, inserted });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
    println!("reference listening on http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}
