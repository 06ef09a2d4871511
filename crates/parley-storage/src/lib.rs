//! Storage backends behind `parley_domain::store`.
//!
//! [`open`] reads the database URL once and returns the domain's
//! [`Database`] handle; nothing above this crate knows which backend runs.

mod sqlite;

use std::path::PathBuf;

use parley_domain::store::Database;

pub use sqlite::SqliteOptions;

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("unsupported database URL {0:?}: use sqlite://PATH")]
    Unsupported(String),
    #[error("PostgreSQL is not supported by this build yet; use sqlite://PATH")]
    PostgresNotYet,
    #[error("cannot open {path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("migration {version} failed: {reason}")]
    Migration { version: u32, reason: String },
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
            .ok_or_else(|| OpenError::Unsupported(url.to_owned()))?;
        let path = path.split('?').next().unwrap_or(path);
        Ok(Self::Sqlite(PathBuf::from(path)))
    }
}

/// Opens the database, applies pending migrations and starts its threads.
pub async fn open(url: &str, options: SqliteOptions) -> Result<Database, OpenError> {
    match Location::parse(url)? {
        Location::Sqlite(path) => sqlite::open(path, options).await,
        Location::Postgres(_) => Err(OpenError::PostgresNotYet),
    }
}

/// Applies migrations only (for `parley migrate`).
pub async fn migrate(url: &str) -> Result<Vec<u32>, OpenError> {
    match Location::parse(url)? {
        Location::Sqlite(path) => sqlite::migrate_only(path).await,
        Location::Postgres(_) => Err(OpenError::PostgresNotYet),
    }
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
    }
}
