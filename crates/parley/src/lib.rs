//! The `parley` program: configuration, start-up, background work and the
//! command line. The layers it wires together live in `parley-domain`,
//! `parley-storage` and `parley-http`.

pub mod check;
pub mod cli;
pub mod config;
pub mod db_copy;
mod resources;
pub mod startup;
pub mod telemetry;

pub use config::Config;
pub use startup::{Application, Mode, StartError};
