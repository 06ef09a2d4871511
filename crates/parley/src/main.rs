use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use parley::cli::{Cli, Command, DbCommand, TenantCommand};
use parley::config::Config;
use parley::{Application, Mode, telemetry};
use parley_domain::sandbox::DemoCredentials;
use parley_domain::tenancy::{NewTenantInput, Tenancy};
use parley_domain::{DomainError, SystemClock};
use tokio_util::sync::CancellationToken;

/// glibc's allocator takes a lock its threads then queue on; a busy server
/// allocates on every request, from every runtime thread. mimalloc also
/// kept the most connections in the least memory (docs/benchmarks.md).
/// It is built without transparent huge pages (`no_thp`): it asked the
/// kernel for them on its first 32 MiB arena, and a few bytes touched
/// there made whole 2 MiB pages resident, 17 MB of an idle instance.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (mut config, warnings) = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(errors) => {
            eprintln!("parley: invalid configuration:\n{errors}");
            return ExitCode::from(2);
        }
    };
    telemetry::init(config.log_format, &config.log_filter);
    for w in warnings {
        tracing::warn!("{w}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("parley: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        match cli.command {
            Command::Serve => serve(config, Mode::Serve).await,
            Command::Demo => {
                // The demo never touches the configured database.
                config.database_url = config.demo_database_url.clone();
                serve(config, Mode::Demo).await
            }
            Command::Migrate => migrate(&config).await,
            Command::Check => parley::check::run(&config).await,
            Command::Tenant(TenantCommand::Create(args)) => create_tenant(&config, args).await,
            // Blocking from start to end: the copy's PostgreSQL client blocks.
            Command::Db(DbCommand::Copy(args)) => {
                tokio::task::spawn_blocking(move || parley::db_copy::run(&args)).await.unwrap_or(ExitCode::FAILURE)
            }
        }
    });
    // Blocking work still running (a DNS lookup of a webhook host, say)
    // must not hold the exit past the shutdown time.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

async fn serve(config: Config, mode: Mode) -> ExitCode {
    let app = match Application::build(&config, mode, Arc::new(SystemClock)).await {
        Ok(app) => app,
        Err(e) => {
            eprintln!("parley: {e}");
            return ExitCode::FAILURE;
        }
    };
    release_startup_memory();
    println!("Parley listening on {}", app.public_url());
    if let Some(credentials) = app.demo_credentials() {
        print_demo(app.public_url(), credentials);
    }
    tracing::info!(addr = %app.local_addr(), "listening");
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    match app.run(shutdown).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("parley: server error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Hands back to the system what starting took and let go of (the
/// migrations, the statements' first preparation): mimalloc keeps freed
/// memory for a while to reuse it, but only frees it on later activity,
/// which an idle instance never has.
fn release_startup_memory() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any
    // thread at any time; it only returns memory mimalloc no longer uses.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

fn print_demo(base: &str, c: &DemoCredentials) {
    println!();
    println!("Web app (operators): {base}/app");
    println!("Sandbox page:        {base}/sandbox");
    println!("Credentials (JSON):  {base}/sandbox/credentials");
    println!("API description:     {base}/openapi.json");
    println!("Demo widget token:   {}", c.widget_token);
    println!("Demo mobile token:   {}", c.mobile_token);
    for (email, password, role) in &c.operators {
        println!("Operator ({}), signs in at {base}/app: {email} / {password}", role.as_str());
    }
    println!();
}

async fn stop_on_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                shutdown.cancel();
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutting down: finishing in-flight requests");
    shutdown.cancel();
}

async fn migrate(config: &Config) -> ExitCode {
    match parley_storage::migrate(&config.database_url).await {
        Ok(applied) if applied.is_empty() => {
            println!("The database is up to date.");
            ExitCode::SUCCESS
        }
        Ok(applied) => {
            println!("Applied migrations: {applied:?}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("parley: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn create_tenant(config: &Config, args: parley::cli::TenantCreate) -> ExitCode {
    let db = match parley_storage::open(&config.database_url, config.storage_options()).await {
        Ok(db) => db,
        Err(e) => {
            eprintln!("parley: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tenancy = Tenancy::new(db.clone(), Arc::new(SystemClock));
    let input = NewTenantInput { slug: args.slug, name: args.name, admin_email: args.admin_email, admin_password: args.admin_password };
    let result = tenancy.create_tenant(input).await;
    db.close().await;
    match result {
        Ok((tenant, admin)) => {
            println!("Created tenant {} ({}) with admin {} (operator id {}).", tenant.slug, tenant.name, admin.email, admin.id.0);
            ExitCode::SUCCESS
        }
        Err(DomainError::Validation(fields)) => {
            eprintln!("parley: invalid values:");
            for (field, problems) in fields.fields() {
                eprintln!("  --{}: {}", field.replace('_', "-"), problems.join("; "));
            }
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("parley: {e}");
            ExitCode::FAILURE
        }
    }
}
