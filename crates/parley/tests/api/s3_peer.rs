//! The S3-compatible peer (`tests/s3/peer.py`: moto with signatures
//! checked, itself checked against boto3) for the attachments' tests.
//!
//! `scripts/test` makes its Python (a venv from `tests/s3/requirements.txt`)
//! and names it in `PARLEY_TEST_S3_PYTHON`. Without it the S3 tests are
//! skipped with a warning, except under `CI=true`, where that fails.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use crate::helpers::Spawn;

pub struct S3Peer {
    _child: Child,
    /// Where `list` is asked and answered.
    talk: Mutex<(ChildStdin, BufReader<ChildStdout>)>,
    endpoint: String,
    region: String,
    access_key: String,
    secret_key: String,
    bucket: String,
}

impl S3Peer {
    /// The peer, ready; `None` when there is no Python for it here.
    pub async fn start() -> Option<Self> {
        let Some(python) = std::env::var("PARLEY_TEST_S3_PYTHON").ok().filter(|p| !p.is_empty()) else {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "PARLEY_TEST_S3_PYTHON is required in CI: scripts/test sets it");
            eprintln!("warning: PARLEY_TEST_S3_PYTHON is not set (scripts/test sets it); this S3 test is skipped");
            return None;
        };
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/s3/peer.py");
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the S3 peer starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("its output"));
        let stdin = child.stdin.take().expect("its input");
        let mut line = String::new();
        let read = tokio::time::timeout(std::time::Duration::from_secs(60), stdout.read_line(&mut line)).await;
        assert!(matches!(read, Ok(Ok(n)) if n > 0), "the S3 peer did not get ready");
        let ready: Value = serde_json::from_str(&line).expect("the peer's line");
        let field = |k: &str| ready[k].as_str().expect(k).to_owned();
        Some(Self {
            endpoint: field("endpoint"),
            region: field("region"),
            access_key: field("access_key"),
            secret_key: field("secret_key"),
            bucket: field("bucket"),
            talk: Mutex::new((stdin, stdout)),
            _child: child,
        })
    }

    /// A server keeping its files under `prefix` of the peer's bucket.
    pub fn serve(&self, spawn: Spawn, prefix: &str) -> Spawn {
        let url = format!("s3://{}/{prefix}?endpoint={}&region={}", self.bucket, self.endpoint, self.region);
        spawn
            .var("PARLEY_FILES_URL", &url)
            .var("PARLEY_S3_ACCESS_KEY_ID", &self.access_key)
            .var("PARLEY_S3_SECRET_ACCESS_KEY", &self.secret_key)
    }

    /// The keys the bucket holds now, and the multipart uploads still
    /// open, as the S3 API lists them.
    pub async fn contents(&self) -> (Vec<String>, usize) {
        let mut talk = self.talk.lock().await;
        let (stdin, stdout) = &mut *talk;
        stdin.write_all(b"list\n").await.expect("ask the peer");
        let mut line = String::new();
        stdout.read_line(&mut line).await.expect("the peer's answer");
        let listed: Value = serde_json::from_str(&line).expect("json");
        let keys = listed["keys"].as_array().expect("keys").iter().filter_map(|k| k.as_str().map(str::to_owned)).collect();
        (keys, listed["uploads"].as_u64().unwrap_or(0) as usize)
    }
}
