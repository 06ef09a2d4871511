//! The `scale` scenario's data: a tenant's site grown to many
//! conversations and messages, written straight into the database (the
//! API would take hours), from `seed/sqlite.sql` or `seed/postgres.sql`
//! with the same rows. The server keeps running; nothing it caches
//! depends on these rows.

use std::path::Path;

/// Fills site `site` with `conversations` conversations of `per`
/// messages each, on the database at `url`.
pub async fn seed(url: &str, site: i64, conversations: u32, per: u32) -> Result<(), String> {
    // Ten milliseconds apart, the last a moment ago: recent enough that
    // the idle sweep closes none of them while the bench measures.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_millis() as i64;
    let start = now - i64::from(conversations) * 10 - 60_000;
    let fill = |sql: &str| {
        sql.replace("{site}", &site.to_string())
            .replace("{conversations}", &conversations.to_string())
            .replace("{per}", &per.to_string())
            .replace("{start}", &start.to_string())
    };
    match url.strip_prefix("sqlite://") {
        Some(path) => {
            let sql = fill(include_str!("../seed/sqlite.sql"));
            let path = path.to_owned();
            tokio::task::spawn_blocking(move || seed_sqlite(Path::new(&path), &sql)).await.map_err(|e| e.to_string())?
        }
        None => {
            let sql = fill(include_str!("../seed/postgres.sql"));
            let file = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
            std::fs::write(file.path(), sql).map_err(|e| e.to_string())?;
            let status = tokio::process::Command::new("psql")
                .args(["-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-f"])
                .arg(file.path())
                .status()
                .await
                .map_err(|e| format!("cannot run psql: {e}"))?;
            if status.success() { Ok(()) } else { Err(format!("seeding PostgreSQL failed: {status}")) }
        }
    }
}

fn seed_sqlite(path: &Path, sql: &str) -> Result<(), String> {
    let mut conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    conn.busy_timeout(std::time::Duration::from_secs(60)).map_err(|e| e.to_string())?;
    let tx = conn.transaction().map_err(|e| e.to_string())?;
    tx.execute_batch(sql).map_err(|e| e.to_string())?;
    tx.commit().map_err(|e| e.to_string())?;
    conn.execute_batch("ANALYZE").map_err(|e| e.to_string())
}
