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
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
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
