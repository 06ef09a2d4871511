//! The processes the bench starts (Parley, the reference app) and what
//! /proc tells about them: peak resident memory and CPU time.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A server process the bench started; killed when dropped.
pub struct Server {
    /// Held so the process lives as long as this (killed on drop).
    _child: Child,
    pub addr: SocketAddr,
    pub pid: u32,
}

impl Server {
    /// Starts `cmd` and waits for its `… listening on http://ADDR` line.
    pub async fn start(mut cmd: Command) -> Result<Self, String> {
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).stdin(Stdio::null()).kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| format!("cannot start the server: {e}"))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let stdout = child.stdout.take().ok_or("no standard output")?;
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.split("listening on ").nth(1) {
                    return url.trim().trim_start_matches("http://").parse::<SocketAddr>().ok();
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .ok_or("the server did not say where it listens")?;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self { _child: child, addr, pid })
    }
}

/// The process's resident memory now.
pub fn resident_mb(pid: u32) -> f64 {
    status_mb(pid, "VmRSS:")
}

/// A memory figure of `/proc/PID/status` (given in kB there), in MB; 0
/// when the process or the line is gone.
fn status_mb(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Starts counting a process's peak resident memory afresh.
pub fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// Peak resident memory and CPU time of a process so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub peak_rss_mb: f64,
    pub cpu_seconds: f64,
}

impl Usage {
    pub fn of(pid: u32) -> Self {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command name (which may hold spaces) are plain.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // utime and stime are fields 14 and 15 of stat, 12 and 13 here.
        let per_second = clock_ticks();
        Self { peak_rss_mb: status_mb(pid, "VmHWM:"), cpu_seconds: (ticks(11) + ticks(12)) / per_second }
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions and only reads a constant.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if n > 0 { n as f64 } else { 100.0 }
}

/// `parley` with a fresh database in `dir` and the settings a benchmark
/// wants: rate limits off, private webhook targets allowed, quiet logs.
pub fn parley(binary: &Path, dir: &Path, database_url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(binary);
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PARLEY_LISTEN", "127.0.0.1:0")
        .env("PARLEY_DATABASE_URL", database_url)
        .env("PARLEY_RATE_LIMITS", "off")
        .env("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .env("PARLEY_LOG", "error")
        .args(args);
    // The PostgreSQL pool size is worth trying from the command line.
    if let Ok(pool) = std::env::var("PARLEY_DATABASE_POOL") {
        cmd.env("PARLEY_DATABASE_POOL", pool);
    }
    cmd
}
