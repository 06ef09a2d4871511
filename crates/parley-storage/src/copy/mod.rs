//! Copying a whole installation from one database to another, SQLite or
//! PostgreSQL either way (`parley db copy`).
//!
//! The source is read in one snapshot and never written; the target is
//! migrated, must hold no row, and receives everything in one transaction
//! that also advances its sequences and is committed only once every
//! table's row count matches the source's. Any failure rolls it all back,
//! and an SQLite file the copy created is removed again, so a failed copy
//! can simply be run again.
//!
//! Blocking: run it on a thread that is not an async runtime's.

mod catalog;
mod db;
mod error;
mod order;
mod postgres;
mod read;
mod run;
mod shape;
mod sqlite;
mod statements;
#[cfg(test)]
mod tests;
mod value;
mod verify;
mod write;

use std::path::Path;

use db::Db;
pub use error::{CopyError, Side};
pub use shape::schema_differences;

use crate::{Location, OpenError};

/// Told how the copy goes, to show it (the storage layer draws nothing).
pub trait Progress {
    /// Every table was counted: this many rows are to be copied.
    fn start(&self, _total_rows: u64) {}
    /// The copy moves on to a table of `rows` rows.
    fn table(&self, _name: &str, _rows: u64) {}
    /// This many more rows were written.
    fn copied(&self, _rows: u64) {}
}

/// For callers that show nothing.
impl Progress for () {}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableReport {
    pub name: String,
    pub rows: u64,
}

/// What was copied: every table, in the order written, with its rows
/// (the same count on both sides, or the copy would have failed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyReport {
    pub tables: Vec<TableReport>,
}

impl CopyReport {
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }
}

/// Copies the installation at `from` into the empty database at `to`.
pub fn copy(from: &str, to: &str, progress: &dyn Progress) -> Result<CopyReport, CopyError> {
    let source_at = parse(Side::Source, from)?;
    let target_at = parse(Side::Target, to)?;
    if same(&source_at, &target_at) {
        return Err(CopyError::SameDatabase);
    }
    let mut source = open_source(&source_at)?;
    let known = source.catalog().map_err(CopyError::failed(Side::Source))?;
    let created = match &target_at {
        Location::Sqlite(path) if !path.exists() => Some(path.clone()),
        _ => None,
    };
    // The target is closed at the end of this expression, before its
    // files may be removed.
    let copied = open_target(&target_at, &known).and_then(|mut target| run::run(&mut *source, &known, &mut *target, progress));
    if copied.is_err()
        && let Some(path) = created
    {
        remove_files(&path);
    }
    let _ = source.rollback();
    copied
}

fn parse(side: Side, url: &str) -> Result<Location, CopyError> {
    Location::parse(url).map_err(|e| match e {
        // The scheme alone: the rest of the URL may carry a password.
        OpenError::Unsupported(scheme) => CopyError::Url { side, scheme },
        other => CopyError::Url { side, scheme: other.to_string() },
    })
}

fn same(a: &Location, b: &Location) -> bool {
    match (a, b) {
        (Location::Sqlite(x), Location::Sqlite(y)) => x == y || matches!((x.canonicalize(), y.canonicalize()), (Ok(x), Ok(y)) if x == y),
        (Location::Postgres(x), Location::Postgres(y)) => x == y,
        _ => false,
    }
}

fn open_source(at: &Location) -> Result<Box<dyn Db>, CopyError> {
    let unavailable = CopyError::unavailable(Side::Source);
    let mut db: Box<dyn Db> = match at {
        Location::Sqlite(path) if !path.is_file() => return Err(CopyError::SourceMissing(path.display().to_string())),
        Location::Sqlite(path) => Box::new(sqlite::open_source(path).map_err(&unavailable)?),
        Location::Postgres(url) => Box::new(postgres::connect(url).map_err(&unavailable)?),
    };
    db.begin_snapshot().map_err(&unavailable)?;
    let expected = db.latest_version();
    let found = db.version().map_err(&unavailable)?.unwrap_or(0);
    let advice = match found {
        _ if found == expected => return Ok(db),
        0 => "it holds no Parley installation; check the --from URL",
        _ if found < expected => "bring it up to date first (`parley migrate` with PARLEY_DATABASE_URL set to it), then copy again",
        _ => "copy it with the Parley version that last ran on it, or a newer one",
    };
    Err(CopyError::Version { side: Side::Source, found, expected, advice })
}

/// Opens (or creates) the target, refuses it if it holds rows or tables
/// that are not Parley's (`known`: the source's), and migrates it: a
/// database that holds anything, or belongs to something else, is left as
/// it was.
fn open_target(at: &Location, known: &catalog::Catalog) -> Result<Box<dyn Db>, CopyError> {
    let unavailable = CopyError::unavailable(Side::Target);
    let mut db: Box<dyn Db> = match at {
        Location::Sqlite(path) => Box::new(sqlite::open_target(path).map_err(&unavailable)?),
        Location::Postgres(url) => Box::new(postgres::connect(url).map_err(&unavailable)?),
    };
    let existing = db.catalog().map_err(CopyError::failed(Side::Target))?;
    let foreign: Vec<&str> = existing.keys().filter(|name| !known.contains_key(*name)).map(String::as_str).collect();
    if !foreign.is_empty() {
        return Err(CopyError::Schema(format!(
            "the target holds tables that are not Parley's ({}); copy into a database of its own",
            foreign.join(", ")
        )));
    }
    verify::empty(&mut *db)?;
    db.migrate().map_err(&unavailable)?;
    Ok(db)
}

/// Removes an SQLite database the copy created, with its WAL files.
fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(&name) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(file = %Path::new(&name).display(), error = %e, "could not remove the file of a failed copy"),
        }
    }
}
