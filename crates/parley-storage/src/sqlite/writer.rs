//! The writer thread and its group commit.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use parley_domain::store::{StoreError, StoreResult, WriteJob};
use rusqlite::Connection;

use super::conn::SqliteConn;
use super::error::map;
use super::readers::statement;
use crate::backend::Signals;
use crate::sql::{Effects, Tx};

pub(super) fn spawn(
    conn: Connection,
    jobs: Receiver<WriteJob>,
    max_batch: usize,
    signals: Arc<Signals>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name("sqlite-writer".into()).spawn(move || {
        // `recv` keeps returning queued jobs after every sender is gone, so
        // everything accepted before shutdown is still committed.
        while let Ok(first) = jobs.recv() {
            let mut batch = Vec::with_capacity(16);
            batch.push(first);
            while batch.len() < max_batch {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            run_batch(&conn, batch, &signals);
        }
        let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
    })
}

/// Runs every unit of the batch in one transaction, each in a savepoint,
/// then commits once and answers every unit with the commit's outcome.
fn run_batch(conn: &Connection, batch: Vec<WriteJob>, signals: &Signals) {
    if let Err(e) = statement(conn, "BEGIN IMMEDIATE") {
        tracing::error!(error = %map(e), "could not begin a write transaction");
        return; // dropping the jobs answers their callers "unavailable"
    }
    let mut finishers = Vec::with_capacity(batch.len());
    let mut effects = Effects::default();
    let mut changed = Vec::new();
    let mut jobs = batch.into_iter();
    for job in jobs.by_ref() {
        if statement(conn, "SAVEPOINT unit").is_err() {
            continue;
        }
        let mut sql = SqliteConn::new(conn);
        let mut tx = Tx::write(&mut sql);
        let outcome = job(&mut tx);
        let unit_effects = tx.effects;
        let unit_changed = std::mem::take(&mut tx.changed);
        let released = outcome.keep && statement(conn, "RELEASE unit").is_ok();
        if !released {
            let _ = statement(conn, "ROLLBACK TO unit");
            let _ = statement(conn, "RELEASE unit");
        }
        // A unit that wanted its changes kept but lost them must hear so.
        let lost = outcome.keep && !released;
        if released {
            effects.add(unit_effects);
            changed.extend(unit_changed);
        }
        finishers.push((outcome.on_commit, lost));
        // On some errors (disk full, I/O) SQLite rolls the whole transaction
        // back by itself. Running on would start a new one behind our back,
        // so the batch stops here and every unit so far hears it failed;
        // the rest are dropped and answered "unavailable".
        if conn.is_autocommit() {
            tracing::error!(units = finishers.len(), "the write transaction was rolled back by the database");
            for (finish, _) in finishers {
                finish(Err(StoreError::Unavailable("the write transaction was rolled back".into())));
            }
            return;
        }
    }
    let commit: StoreResult<()> = statement(conn, "COMMIT").map_err(map);
    if commit.is_ok() {
        signals.conversations_changed(&changed);
        signals.after_commit(effects);
    }
    if let Err(e) = &commit {
        tracing::error!(error = %e, units = finishers.len(), "write batch failed to commit");
        let _ = statement(conn, "ROLLBACK");
    }
    for (finish, lost) in finishers {
        if lost {
            finish(Err(StoreError::Internal("the unit's savepoint could not be released".into())));
        } else {
            finish(commit.clone());
        }
    }
}
