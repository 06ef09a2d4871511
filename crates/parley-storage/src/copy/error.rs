//! What can stop a copy, said so that the operator knows which database
//! to look at and what to do next. Every error leaves the target as it
//! was before the copy: the copy writes in one transaction.

use std::fmt;

/// Which of the two databases a problem is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Source,
    Target,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Source => "source",
            Side::Target => "target",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// `scheme` is the URL up to its first colon: the rest may hold a password.
    #[error("the {side} URL (beginning {scheme:?}) is not a database URL: use sqlite://PATH or postgres://USER@HOST/DB")]
    Url { side: Side, scheme: String },
    #[error("the source and the target are the same database: copy into a new, empty database")]
    SameDatabase,
    #[error("the source database {0} does not exist: check the --from path")]
    SourceMissing(String),
    #[error("the {side} database cannot be used: {reason}")]
    Unavailable { side: Side, reason: String },
    #[error("the {side} database is at schema version {found}, but this build's latest is {expected}: {advice}")]
    Version { side: Side, found: i64, expected: i64, advice: &'static str },
    #[error("the target database is not empty: table {table} has {rows} row{}; copy only into a new, empty database", if *rows == 1 { "" } else { "s" })]
    NotEmpty { table: String, rows: u64 },
    #[error("the schemas cannot be copied as they are ({0}); nothing was copied: both databases must be at this version's schema")]
    Schema(String),
    #[error("{side} table {table}, column {column}: {reason}; nothing was copied: correct the value in the source, then copy again")]
    Value { side: Side, table: String, column: String, reason: String },
    #[error("the {side} database failed during the copy: {reason}; nothing was copied, so the copy can run again once that is fixed")]
    Failed { side: Side, reason: String },
    #[error(
        "table {table} has {source_rows} rows in the source but {target_rows} in the target after the copy; nothing was copied: \
         check that nothing else writes to the target, then copy again"
    )]
    Count { table: String, source_rows: u64, target_rows: u64 },
}

impl CopyError {
    /// A failure of one side's database in the middle of the copy.
    pub(super) fn failed(side: Side) -> impl Fn(String) -> CopyError {
        move |reason| CopyError::Failed { side, reason }
    }

    /// The database could not be opened or reached.
    pub(super) fn unavailable(side: Side) -> impl Fn(String) -> CopyError {
        move |reason| CopyError::Unavailable { side, reason }
    }
}
