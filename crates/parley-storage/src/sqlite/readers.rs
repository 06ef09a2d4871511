//! Reader threads: each owns a read-only connection and runs read units
//! inside a short read transaction, so a unit sees one consistent snapshot.

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use parley_domain::store::ReadJob;
use rusqlite::Connection;

use super::error::map;
use super::queries::Handle;

pub(super) fn spawn(n: usize, conn: Connection, jobs: Arc<Mutex<Receiver<ReadJob>>>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(format!("sqlite-reader-{n}")).spawn(move || {
        loop {
            let job = match jobs.lock() {
                Ok(rx) => match rx.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                },
                Err(_) => return,
            };
            if let Err(e) = conn.execute_batch("BEGIN") {
                job(Err(map(e)));
                continue;
            }
            job(Ok(&mut Handle::new(&conn)));
            if conn.execute_batch("COMMIT").is_err() {
                let _ = conn.execute_batch("ROLLBACK");
            }
        }
    })
}
