//! `--only files`: a 5 MB attachment uploaded to Parley and downloaded
//! through its link, beside the same bytes copied and read on the same
//! disk and, with an S3 peer (`--s3-python`, `--s3-peer`), put and got
//! from the object store directly and through a Parley that keeps its
//! files there. Then Parley's peak memory while 20 uploads of 10 MB run
//! at once, beside its memory at rest.
//!
//! Each Parley here is a server of its own on a fresh SQLite file, so the
//! rest of the bench neither waits for nor disturbs it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::client::{Call, Conn, once};
use crate::process::{self, Server, Usage};
use crate::setup;

/// The file of the throughput figures.
const SIZE: usize = 5 * 1000 * 1000;
/// Transfers per figure (the median is reported).
const REPEAT: usize = 9;
/// The memory figure: this many uploads at once, of this size each.
const AT_ONCE: usize = 20;
const LARGE: usize = 10 * 1000 * 1000;
const BOUNDARY: &str = "parleyBenchBoundary";

/// A PDF's signature, then bytes that do not compress: a page cache or a
/// store cannot cheat, and the sites' default types take it.
fn payload(size: usize, seed: u64) -> Bytes {
    let mut state = seed | 1;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(b"%PDF-1.7\n");
    while out.len() < size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(size);
    Bytes::from(out)
}

fn form(name: &str, bytes: &Bytes) -> Bytes {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    Bytes::from(body)
}

fn median(mut seconds: Vec<f64>) -> f64 {
    seconds.sort_by(f64::total_cmp);
    seconds.get(seconds.len() / 2).copied().unwrap_or(0.0)
}

fn mb_per_s(bytes: usize, seconds: f64) -> f64 {
    if seconds > 0.0 { bytes as f64 / 1e6 / seconds } else { 0.0 }
}

/// One line of the report: what, uploads (or writes) and downloads (or
/// reads) in MB/s.
struct Line {
    what: &'static str,
    up: f64,
    down: f64,
}

/// Where the S3 peer is.
pub struct S3Args {
    pub python: PathBuf,
    pub script: PathBuf,
}

pub async fn run(parley_bin: &Path, s3: Option<S3Args>) -> Result<Value, String> {
    let data = payload(SIZE, 7);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut lines = vec![disk(dir.path(), &data)?];

    let local = Parley::start(parley_bin, &dir.path().join("local"), &[]).await?;
    lines.push(local.throughput("parley, file://", &data).await?);
    let memory = local.memory().await?;

    if let Some(s3) = s3 {
        let peer = Peer::start(&s3).await?;
        lines.push(peer.direct(&data).await?);
        let env = peer.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let remote = Parley::start(parley_bin, &dir.path().join("s3"), &env).await?;
        lines.push(remote.throughput("parley, s3://", &data).await?);
    }

    println!("\nAttachments: a {} MB file, median of {REPEAT} transfers (MB/s)", SIZE / 1_000_000);
    println!("  {:<28} {:>10} {:>10}", "", "up", "down");
    for l in &lines {
        println!("  {:<28} {:>10.1} {:>10.1}", l.what, l.up, l.down);
    }
    println!(
        "  Parley's memory: {:.1} MB at rest, peak {:.1} MB while {AT_ONCE} uploads of {} MB ran at once ({:.1} s)",
        memory.rest_mb,
        memory.peak_mb,
        LARGE / 1_000_000,
        memory.seconds
    );
    Ok(json!({
        "size_bytes": SIZE,
        "throughput_mb_per_s": lines.iter().map(|l| json!({"what": l.what, "up": l.up, "down": l.down})).collect::<Vec<_>>(),
        "memory": {"rest_mb": memory.rest_mb, "peak_mb": memory.peak_mb, "uploads": AT_ONCE, "upload_bytes": LARGE, "seconds": memory.seconds},
    }))
}

/// The reference on disk: the same bytes copied (written, synced) and read.
fn disk(dir: &Path, data: &Bytes) -> Result<Line, String> {
    let source = dir.join("source.bin");
    std::fs::write(&source, data).map_err(|e| e.to_string())?;
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for i in 0..REPEAT {
        let target = dir.join(format!("copy-{i}.bin"));
        let started = Instant::now();
        std::fs::copy(&source, &target).map_err(|e| e.to_string())?;
        std::fs::File::open(&target).and_then(|f| f.sync_all()).map_err(|e| e.to_string())?;
        up.push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let read = std::fs::read(&target).map_err(|e| e.to_string())?;
        down.push(started.elapsed().as_secs_f64());
        if read.len() != data.len() {
            return Err("the copy is not whole".into());
        }
    }
    Ok(Line { what: "file copy (reference)", up: mb_per_s(SIZE, median(up)), down: mb_per_s(SIZE, median(down)) })
}

struct Memory {
    rest_mb: f64,
    peak_mb: f64,
    seconds: f64,
}

/// A Parley server of its own, with a tenant and a conversation for each
/// upload the memory figure sends at once (one side of a conversation
/// holds twenty unsent uploads at most).
struct Parley {
    server: Server,
    widget_token: String,
    public_ids: Vec<String>,
}

impl Parley {
    async fn start(binary: &Path, dir: &Path, env: &[(&str, &str)]) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let database_url = format!("sqlite://{}/parley.sqlite3", dir.display());
        let create = ["tenant", "create", "--slug", "files", "--name", "Files", "--admin-email", "admin@files.example", "--admin-password"];
        let mut args: Vec<&str> = create.to_vec();
        args.push(setup::ADMIN_PASSWORD);
        let status = process::parley(binary, dir, &database_url, &args).status().await.map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("creating the files tenant failed".into());
        }
        let mut serve = process::parley(binary, dir, &database_url, &["serve"]);
        for (k, v) in env {
            serve.env(k, v);
        }
        let server = Server::start(serve).await?;
        let admin = setup::login(server.addr, "admin@files.example", setup::ADMIN_PASSWORD).await?;
        let tenant = setup::tenant(server.addr, admin, 0, "files").await?;
        let conversations = setup::conversations(server.addr, &tenant.widget_token, AT_ONCE, 1, "files").await?;
        let public_ids = conversations.into_iter().map(|c| c.public_id).collect();
        Ok(Self { server, widget_token: tenant.widget_token, public_ids })
    }

    fn upload_call(&self, conversation: usize, name: &str, data: &Bytes) -> Call {
        let public_id = &self.public_ids[conversation % self.public_ids.len()];
        let path = format!("/api/v1/widget/conversations/{public_id}/attachments?token={}", self.widget_token);
        Call::post_raw(path, &format!("multipart/form-data; boundary={BOUNDARY}"), form(name, data))
    }

    async fn upload(conn: &mut Conn, call: &Call) -> Result<(String, f64), String> {
        let answer = conn.send(call).await.map_err(|e| e.to_string())?;
        if answer.status != 201 {
            return Err(format!("an upload failed with {}: {}", answer.status, String::from_utf8_lossy(&answer.body)));
        }
        let body: Value = serde_json::from_slice(&answer.body).map_err(|e| e.to_string())?;
        let id = body["attachment"]["id"].as_str().ok_or("no attachment id")?.to_owned();
        Ok((id, answer.latency.as_secs_f64()))
    }

    async fn throughput(&self, what: &'static str, data: &Bytes) -> Result<Line, String> {
        let addr = self.server.addr;
        let mut conn = Conn::open(addr).await.map_err(|e| e.to_string())?;
        let call = self.upload_call(0, "bench.bin", data);
        let (mut up, mut ids) = (Vec::new(), Vec::new());
        for _ in 0..REPEAT {
            let (id, seconds) = Self::upload(&mut conn, &call).await?;
            up.push(seconds);
            ids.push(id);
        }
        let path = format!("/api/v1/widget/conversations/{}/messages", self.public_ids[0]);
        let (status, sent) = once(addr, Call::post(path, &json!({"token": self.widget_token, "attachment_ids": [ids[0]]})))
            .await
            .map_err(|e| e.to_string())?;
        if status != 201 {
            return Err(format!("naming the file failed with {status}: {sent}"));
        }
        let url = sent["message"]["attachments"][0]["url"].as_str().ok_or("no link")?;
        let link = url.find("/api/").map(|at| &url[at..]).ok_or("not a link")?;
        let get = Call::get(link);
        let mut down = Vec::new();
        for _ in 0..REPEAT {
            let answer = conn.send(&get).await.map_err(|e| e.to_string())?;
            if answer.status != 200 || answer.body.len() != data.len() {
                return Err(format!("a download failed with {} ({} bytes)", answer.status, answer.body.len()));
            }
            down.push(answer.latency.as_secs_f64());
        }
        Ok(Line { what, up: mb_per_s(SIZE, median(up)), down: mb_per_s(SIZE, median(down)) })
    }

    async fn memory(&self) -> Result<Memory, String> {
        let pid = self.server.pid;
        let rest_mb = crate::process::resident_mb(pid);
        process::reset_peak(pid);
        let data = payload(LARGE, 11);
        let calls: Vec<Arc<Call>> = (0..AT_ONCE).map(|i| Arc::new(self.upload_call(i, "large.bin", &data))).collect();
        drop(data);
        let addr = self.server.addr;
        let started = Instant::now();
        let uploads = futures::stream::iter(calls)
            .map(|call| async move {
                let mut conn = Conn::open(addr).await.map_err(|e| e.to_string())?;
                Self::upload(&mut conn, &call).await
            })
            .buffer_unordered(AT_ONCE)
            .collect::<Vec<_>>()
            .await;
        let seconds = started.elapsed().as_secs_f64();
        for outcome in uploads {
            outcome?;
        }
        Ok(Memory { rest_mb, peak_mb: Usage::of(pid).peak_rss_mb, seconds })
    }
}

/// The S3-compatible peer of the test suite (moto, signatures checked).
struct Peer {
    _child: tokio::process::Child,
    ready: Value,
}

impl Peer {
    async fn start(args: &S3Args) -> Result<Self, String> {
        let mut child = tokio::process::Command::new(&args.python)
            .arg(&args.script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start the S3 peer: {e}"))?;
        let stdout = child.stdout.take().ok_or("no output")?;
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(60), BufReader::new(stdout).read_line(&mut line))
            .await
            .map_err(|_| "the S3 peer did not get ready")?
            .map_err(|e| e.to_string())?;
        let ready: Value = serde_json::from_str(&line).map_err(|e| format!("the S3 peer said {line:?}: {e}"))?;
        Ok(Self { _child: child, ready })
    }

    fn field(&self, k: &str) -> String {
        self.ready[k].as_str().unwrap_or_default().to_owned()
    }

    fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}?endpoint={}&region={}", self.field("bucket"), self.field("endpoint"), self.field("region"))
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("PARLEY_FILES_URL", self.url("parley")),
            ("PARLEY_S3_ACCESS_KEY_ID", self.field("access_key")),
            ("PARLEY_S3_SECRET_ACCESS_KEY", self.field("secret_key")),
        ]
    }

    /// The same bytes put and got through the object store client alone.
    async fn direct(&self, data: &Bytes) -> Result<Line, String> {
        let credentials =
            parley_storage::files::S3Credentials { access_key_id: self.field("access_key"), secret_access_key: self.field("secret_key") };
        let store = parley_storage::files::open(&self.url("direct"), Some(credentials)).map_err(|e| e.to_string())?;
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for i in 0..REPEAT {
            let key = format!("direct{i}");
            let body = futures::stream::once({
                let data = data.clone();
                async move { Ok(data) }
            })
            .boxed();
            let started = Instant::now();
            store.put(&key, body, u64::MAX).await.map_err(|e| e.to_string())?;
            up.push(started.elapsed().as_secs_f64());
            let started = Instant::now();
            let (_, mut stream) = store.get(&key).await.map_err(|e| e.to_string())?;
            let mut read = 0;
            while let Some(chunk) = stream.next().await {
                read += chunk.map_err(|e| e.to_string())?.len();
            }
            down.push(started.elapsed().as_secs_f64());
            if read != data.len() {
                return Err("a direct get is not whole".into());
            }
        }
        Ok(Line { what: "S3 put/get direct (reference)", up: mb_per_s(SIZE, median(up)), down: mb_per_s(SIZE, median(down)) })
    }
}
