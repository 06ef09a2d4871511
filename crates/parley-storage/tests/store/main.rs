//! The storage layer's own suite: the operations of `ReadTx`/`WriteTx`
//! and the units that run them, driven on a real database (an SQLite
//! file, or PostgreSQL with `PARLEY_TEST_DATABASE_URL`) with a manual
//! clock and no HTTP server, so `cargo test -p parley-storage` runs them.

mod conformance;
mod harness;
mod units;
mod writes;
