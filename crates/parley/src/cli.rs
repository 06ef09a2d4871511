//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "parley", version, about = "Parley: a self-hosted, multi-tenant customer chat platform")]
pub struct Cli {
    /// A file of PARLEY_* = value lines; the environment overrides it.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the service.
    Serve,
    /// Run the service with a seeded sandbox tenant, in its own database
    /// file (./parley-data/demo.sqlite3), and the /sandbox pages.
    Demo,
    /// Apply database migrations and exit.
    Migrate,
    /// Print the configuration in effect (credentials hidden) and test
    /// each dependency live: database, mail server, SMS gateway, file
    /// store, push providers. Exits non-zero when any test fails.
    Check,
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Work on whole databases.
    #[command(subcommand)]
    Db(DbCommand),
}

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Copy a whole installation into a new, empty database, SQLite or
    /// PostgreSQL either way. Stop every instance using the source first.
    Copy(DbCopy),
}

#[derive(Args, Debug)]
pub struct DbCopy {
    /// The database to copy: sqlite://PATH or postgres://USER@HOST/DB.
    /// It is only read.
    #[arg(long, value_name = "URL")]
    pub from: String,
    /// Where to copy it: a new SQLite file, or an empty PostgreSQL
    /// database. It is migrated first; one that holds rows is refused.
    #[arg(long, value_name = "URL")]
    pub to: String,
}

#[derive(Subcommand, Debug)]
pub enum TenantCommand {
    /// Create a tenant and its first admin operator.
    Create(TenantCreate),
}

#[derive(Args, Debug)]
pub struct TenantCreate {
    #[arg(long)]
    pub slug: String,
    #[arg(long)]
    pub name: String,
    #[arg(long)]
    pub admin_email: String,
    /// At least 10 characters. Prefer PARLEY_ADMIN_PASSWORD-free shells'
    /// history settings: the value is visible in the process list.
    #[arg(long)]
    pub admin_password: String,
}
