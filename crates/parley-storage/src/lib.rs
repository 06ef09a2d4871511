//! Storage backends behind `parley_domain::store`.
//!
//! [`open`] reads the database URL once and returns the domain's
//! [`Database`] handle; nothing above this crate knows which backend runs.

mod backend;
mod copy;
pub mod files;
mod locks;
mod postgres;
mod sql;
mod sqlite;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::path::PathBuf;

use parley_domain::store::Database;

pub use copy::{CopyError, CopyReport, Progress, Side, TableReport, copy, schema_differences};
pub use sqlite::SqliteOptions;

/// How a backend is sized.
#[derive(Clone, Debug)]
pub struct Options {
    /// PostgreSQL connections, each with its thread (`PARLEY_DATABASE_POOL`).
    pub pool: usize,
    pub sqlite: SqliteOptions,
}

impl Default for Options {
    fn default() -> Self {
        Self { pool: 16, sqlite: SqliteOptions::default() }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Holds only what precedes the URL's first colon: the rest may carry
    /// a password.
    #[error("unsupported database URL (scheme {0:?}): use sqlite://PATH or postgres://USER@HOST/DB")]
    Unsupported(String),
    #[error("PostgreSQL: {0}")]
    Postgres(String),
    #[error("cannot open {path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("migration {version} failed: {reason}")]
    Migration { version: u32, reason: String },
}

/// The scheme of what should be a URL, for an error message: only when it
/// looks like one (letters, digits, `+-.`), since the rest of a value that
/// is not a URL may be a password (`password=… host=…`).
pub(crate) fn scheme_of(url: &str) -> String {
    match url.split_once(':') {
        Some((scheme, _))
            if !scheme.is_empty() && scheme.len() <= 20 && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) =>
        {
            scheme.to_owned()
        }
        _ => "(not a URL)".into(),
    }
}

/// Where a database URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    /// Accepts `sqlite://relative/or/absolute/path`, `sqlite:path` and
    /// `postgres://…` / `postgresql://…`.
    pub fn parse(url: &str) -> Result<Self, OpenError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .filter(|p| !p.is_empty())
            .ok_or_else(|| OpenError::Unsupported(scheme_of(url)))?;
        let path = path.split('?').next().unwrap_or(path);
        // A database lives in a file: not in memory, not a folder.
        if path.is_empty() || path.starts_with(":memory:") || path.ends_with('/') {
            return Err(OpenError::Io { path: PathBuf::from(path), reason: "sqlite:// needs the path of a database file".into() });
        }
        Ok(Self::Sqlite(PathBuf::from(path)))
    }
}

/// Opens the database, applies pending migrations and starts its threads.
pub async fn open(url: &str, options: Options) -> Result<Database, OpenError> {
    match Location::parse(url)? {
        Location::Sqlite(path) => sqlite::open(path, options.sqlite).await,
        Location::Postgres(url) => postgres::open(url, options.pool).await,
    }
}

/// Applies migrations only (for `parley migrate`).
pub async fn migrate(url: &str) -> Result<Vec<u32>, OpenError> {
    match Location::parse(url)? {
        Location::Sqlite(path) => sqlite::migrate_only(path).await,
        Location::Postgres(url) => postgres::migrate_only(url).await,
    }
}

/// What `parley check` reports of a database it reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// Whether the database exists: a SQLite file is made by the first
    /// start, in a folder `inspect` found it can write.
    pub made: bool,
    /// The migrations applied there (0 for a database not made yet).
    pub version: u32,
    /// The migrations this build has: `serve` and `migrate` apply those
    /// above `version`; a `version` above it is a newer build's database.
    pub latest: u32,
    /// The database software and its version.
    pub server: String,
}

/// Reaches the database at `url` and reads how far its schema is,
/// changing nothing: no migration, no file made.
pub async fn inspect(url: &str) -> Result<Schema, OpenError> {
    let location = Location::parse(url)?;
    tokio::task::spawn_blocking(move || match location {
        Location::Sqlite(path) => sqlite::inspect(&path),
        Location::Postgres(url) => postgres::inspect(&url),
    })
    .await
    .map_err(|e| OpenError::Io { path: PathBuf::new(), reason: e.to_string() })?
}

/// Whether a file or folder can be made at `path`: the nearest part of it
/// that exists must be a folder this process can write in (tried with a
/// file made and removed at once), so that what `serve` would make there
/// at start is known to work without making it.
pub fn can_be_made(path: &std::path::Path) -> Result<(), String> {
    let mut folder = path.parent();
    while let Some(part) = folder {
        // A relative path's last part is the working folder.
        let candidate = if part.as_os_str().is_empty() { std::path::Path::new(".") } else { part };
        match std::fs::metadata(candidate) {
            Ok(meta) if meta.is_dir() => {
                // The clock's nanoseconds beside the pid: a leftover of
                // another process (a container's same pid) must not make
                // every check fail.
                let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
                let probe = candidate.join(format!(".parley-check-{}-{nanos}", std::process::id()));
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&probe)
                    .map_err(|e| format!("{} cannot be made: cannot write in {}: {e}", path.display(), candidate.display()))?;
                return std::fs::remove_file(&probe).map_err(|e| format!("cannot remove {}: {e}", probe.display()));
            }
            Ok(_) => return Err(format!("{} cannot be made: {} is not a folder", path.display(), candidate.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !part.as_os_str().is_empty() => folder = part.parent(),
            Err(e) => return Err(format!("{} cannot be made: {}: {e}", path.display(), candidate.display())),
        }
    }
    Ok(())
}

/// Prepares every statement of the storage layer on the database at
/// `url` (migrated first) and returns how many there are, so SQL that one
/// backend would reject only in production fails the tests instead.
pub async fn prepare_all_statements(url: &str) -> Result<usize, String> {
    let location = Location::parse(url).map_err(|e| e.to_string())?;
    tokio::task::spawn_blocking(move || match location {
        Location::Sqlite(path) => sqlite::prepare_all(&path),
        Location::Postgres(url) => postgres::prepare_all(&url),
    })
    .await
    .map_err(|e| e.to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        assert_eq!(Location::parse("sqlite://./a/b.db").unwrap(), Location::Sqlite("./a/b.db".into()));
        assert_eq!(Location::parse("sqlite:///tmp/x.db").unwrap(), Location::Sqlite("/tmp/x.db".into()));
        assert!(matches!(Location::parse("postgres://u@h/db").unwrap(), Location::Postgres(_)));
        assert!(Location::parse("mysql://x").is_err());
        assert!(Location::parse("sqlite://").is_err());
        // Not a file: refused, where SQLite would fail later or keep
        // nothing.
        for not_a_file in ["sqlite://newdir/", "sqlite://?mode=memory", "sqlite::memory:", "sqlite://:memory:"] {
            assert!(Location::parse(not_a_file).is_err(), "{not_a_file}");
        }
        // An error never quotes what may be a password.
        let e = Location::parse("password=S3cret host=db").err().unwrap().to_string();
        assert!(!e.contains("S3cret"), "{e}");
        let e = files::check("S3://AKIAX:AbCsecret@bucket/p").err().unwrap().to_string();
        assert!(!e.contains("AbCsecret"), "{e}");
        // An S3 endpoint the object store client could not take.
        for endpoint in ["minio:9000", "127.0.0.1:9000", "minio.example.com", "http://a/b%20c"] {
            assert!(files::check(&format!("s3://bucket/p?endpoint={endpoint}")).is_err(), "{endpoint}");
        }
        assert!(files::check("s3://bucket/p?endpoint=https://minio.example.com:9000&region=x").is_ok());
    }
}
