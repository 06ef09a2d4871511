//! `parley-bench`: drives a real Parley server over HTTP and prints every
//! figure beside a reference measured in the same run (see
//! docs/benchmarks.md).
//!
//! It starts Parley itself on a fresh database (or targets a running one
//! with `--target`), sets up its own tenant through the admin API, starts
//! the reference app as its own process, and runs the scenarios one after
//! another with the same client.

mod ceiling;
mod client;
mod files;
mod load;
mod process;
mod pushes;
mod receiver;
mod report;
mod scale;
mod scenarios;
mod setup;
mod streams;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::process::Server;
use crate::scenarios::{Bench, Load};

#[derive(Parser)]
#[command(name = "parley-bench", about = "Load benchmark of Parley beside the stack's ceiling")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum Command {
    /// The reference app (started by the bench itself).
    #[command(hide = true)]
    CeilingServer {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        conversations: i64,
        #[arg(long)]
        messages: i64,
    },
}

#[derive(clap::Args, Clone)]
struct RunArgs {
    /// Seconds per closed-loop scenario, in each round.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Rounds of the closed-loop scenarios (reference and Parley in turn);
    /// the report shows the median round.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Connections of the closed-loop scenarios.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Visitors of the mix, each on its own connection.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    visitors: u32,
    /// Seconds between a visitor's polls in the mix.
    #[arg(long, default_value_t = 3)]
    poll_every: u64,
    /// Messages per second in the mix.
    #[arg(long, default_value_t = 50.0)]
    rate: f64,
    /// Operators (besides the admin) in the inbox scenarios and the mix.
    #[arg(long, default_value_t = 10)]
    operators: usize,
    /// Seconds of the mix.
    #[arg(long, default_value_t = 30)]
    mix_duration: u64,
    /// Conversations the `scale` scenario writes into the database.
    #[arg(long, default_value_t = 100_000)]
    scale_conversations: u32,
    /// Messages in each of them.
    #[arg(long, default_value_t = 10)]
    scale_messages: u32,
    /// Conversations the closed-loop scenarios spread over.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    conversations: u32,
    /// Messages in each of them (latest polls return them).
    #[arg(long, default_value_t = 20)]
    messages: usize,
    /// Conversations the pushes scenario spreads its messages over, each
    /// assigned to one operator.
    #[arg(long, default_value_t = 1000)]
    push_conversations: usize,
    /// Devices registered in the pushes scenario, two per operator.
    #[arg(long, default_value_t = 2000)]
    push_devices: usize,
    /// Scenarios to run, comma-separated: post, poll-empty, poll-latest,
    /// inbox, webhooks, mix, streams, pushes, files, scale (all by default;
    /// `pushes` needs the bench to start the server, whose relay it is, and
    /// `scale` its database, which it fills with `--scale-conversations`). `streams` holds one
    /// stream per visitor (`--visitors`) while `--rate` messages a second
    /// arrive for `--mix-duration` seconds; a server given with `--target`
    /// needs `PARLEY_STREAMS_PER_ADDRESS` above `--visitors`.
    #[arg(long, value_delimiter = ',', value_parser = SCENARIOS)]
    only: Vec<String>,
    /// A running server to measure instead of starting one.
    #[arg(long)]
    target: Option<String>,
    /// The process id of the server at `--target`, for its CPU and memory.
    #[arg(long)]
    server_pid: Option<u32>,
    /// The admin to set up with on `--target`.
    #[arg(long)]
    admin_email: Option<String>,
    /// Their password.
    #[arg(long)]
    admin_password: Option<String>,
    /// The `parley` binary (default: next to this one).
    #[arg(long)]
    parley: Option<PathBuf>,
    /// Database of the started server (default: a fresh SQLite file).
    #[arg(long)]
    database_url: Option<String>,
    /// A shell command run once the data is set up, before measuring
    /// (`scripts/bench --postgres` gathers PostgreSQL's statistics, which
    /// a running database has and one filled seconds ago does not).
    #[arg(long)]
    after_setup: Option<String>,
    /// Measure Parley alone, without the reference app (for profiling).
    #[arg(long)]
    no_reference: bool,
    /// Also write the report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The Python of the S3 peer (`tests/s3/peer.py`), for the `files`
    /// scenario's object-store figures (`scripts/bench` makes its venv).
    #[arg(long, requires = "s3_peer")]
    s3_python: Option<PathBuf>,
    /// The S3 peer's script.
    #[arg(long, requires = "s3_python")]
    s3_peer: Option<PathBuf>,
}

fn main() -> ExitCode {
    // Thousands of connections: one descriptor each.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("parley-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Some(Command::CeilingServer { db, conversations, messages }) => ceiling::serve(db, conversations, messages).await,
            None => run(cli.run).await,
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parley-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The scenarios `--only` may name.
const SCENARIOS: [&str; 10] = ["post", "poll-empty", "poll-latest", "inbox", "webhooks", "mix", "streams", "pushes", "files", "scale"];

fn wants(args: &RunArgs, scenario: &str) -> bool {
    args.only.is_empty() || args.only.iter().any(|s| s == scenario)
}

async fn run(args: RunArgs) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let own = std::env::current_exe().map_err(|e| e.to_string())?;
    let parley_bin = args.parley.clone().unwrap_or_else(|| own.with_file_name("parley"));
    // The server runs in a temporary folder: a relative path would not reach it.
    let parley_bin = std::fs::canonicalize(&parley_bin).map_err(|e| format!("cannot find {}: {e}", parley_bin.display()))?;

    let s3 = match (&args.s3_python, &args.s3_peer) {
        (Some(python), Some(script)) => Some(files::S3Args { python: python.clone(), script: script.clone() }),
        _ => None,
    };
    // Attachments alone start servers of their own: nothing else is set up.
    if !args.only.is_empty() && args.only.iter().all(|s| s == "files") {
        let figures = files::run(&parley_bin, s3).await?;
        if let Some(path) = &args.json {
            std::fs::write(path, serde_json::to_string_pretty(&figures).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        }
        return Ok(());
    }

    // The server under test: started here, or given.
    let mut push_receiver = None;
    let mut seed_url = None;
    let (parley, admin_token, label) = match &args.target {
        Some(url) => {
            let addr: SocketAddr =
                url.trim_start_matches("http://").trim_end_matches('/').parse().map_err(|_| format!("{url} is not http://HOST:PORT"))?;
            let (email, password) = (
                args.admin_email.clone().ok_or("--target needs --admin-email")?,
                args.admin_password.clone().ok_or("--target needs --admin-password")?,
            );
            let token = setup::login(addr, &email, &password).await?;
            (None, token, format!("run{}", std::process::id()))
        }
        None => {
            let database_url = args.database_url.clone().unwrap_or_else(|| format!("sqlite://{}/parley.sqlite3", dir.path().display()));
            seed_url = Some(database_url.clone());
            let create = [
                "tenant",
                "create",
                "--slug",
                "bench",
                "--name",
                "Bench",
                "--admin-email",
                "admin@bench.example",
                "--admin-password",
                setup::ADMIN_PASSWORD,
            ];
            let status = process::parley(&parley_bin, dir.path(), &database_url, &create)
                .status()
                .await
                .map_err(|e| format!("cannot run {}: {e}", parley_bin.display()))?;
            if !status.success() {
                return Err("creating the bench tenant failed".into());
            }
            // The mix holds one connection per visitor, plus the senders and
            // operators: the server's connection cap must leave room for all,
            // and one address may hold streams on half of it at most.
            let cap = (2 * args.visitors + 1024).max(10_000).to_string();
            let mut serve = process::parley(&parley_bin, dir.path(), &database_url, &["serve"]);
            serve.env("PARLEY_MAX_CONNECTIONS", cap);
            // Every stream of the bench comes from one address.
            serve.env("PARLEY_STREAMS_PER_ADDRESS", (args.visitors + 64).to_string());
            if wants(&args, "pushes") {
                let receiver = pushes::PushReceiver::start().await?;
                serve.env("PARLEY_PUSH_RELAY_URL", &receiver.url).env("PARLEY_PUSH_RELAY_SECRET", pushes::RELAY_SECRET);
                push_receiver = Some(receiver);
            }
            let server = Server::start(serve).await?;
            // A fresh instance that has served nothing yet, settled.
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            println!(
                "Idle: {:.1} MB resident (a fresh `parley serve`, before any request; target under 30 MB)\n",
                process::resident_mb(server.pid)
            );
            let token = setup::login(server.addr, "admin@bench.example", setup::ADMIN_PASSWORD).await?;
            (Some(server), token, "local".to_owned())
        }
    };
    let addr = parley
        .as_ref()
        .map_or_else(|| args.target.as_deref().unwrap_or_default().trim_start_matches("http://").parse().ok(), |s| Some(s.addr))
        .ok_or("no address")?;

    println!(
        "Setting up: {} conversations of {} messages, {} visitors, {} operators",
        args.conversations, args.messages, args.visitors, args.operators
    );
    let tenant = setup::tenant(addr, admin_token, args.operators, &label).await?;
    let conversations =
        setup::conversations(addr, &tenant.widget_token, args.conversations as usize, args.messages, &format!("{label}-closed")).await?;
    // Set up last, so they lead the inbox the reply scenario answers from.
    let writes = setup::conversations(addr, &tenant.widget_token, args.conversations as usize, 1, &format!("{label}-writes")).await?;
    if let Some(command) = &args.after_setup {
        let status =
            tokio::process::Command::new("sh").args(["-c", command]).status().await.map_err(|e| format!("cannot run {command}: {e}"))?;
        if !status.success() {
            return Err(format!("{command} failed: {status}"));
        }
    }
    let reference = if args.no_reference {
        None
    } else {
        let mut cmd = tokio::process::Command::new(&own);
        cmd.args(["ceiling-server", "--db"]).arg(dir.path().join("reference.sqlite3")).args([
            "--conversations",
            &args.conversations.to_string(),
            "--messages",
            &args.messages.to_string(),
        ]);
        Some(Server::start(cmd).await?)
    };
    let load = Load {
        duration: Duration::from_secs(args.duration),
        connections: args.connections,
        poll_every: Duration::from_secs(args.poll_every),
        messages_per_second: args.rate,
        mix_duration: Duration::from_secs(args.mix_duration),
    };
    let watched = parley.as_ref().map(|s| s.pid).or(args.server_pid);
    let mut bench = Bench::new(addr, watched, reference.as_ref().map(|r| r.addr), tenant, conversations, writes, load);

    let rounds = args.rounds.max(1);
    for round in 1..=rounds {
        if reference.is_some() {
            println!("Round {round} of {rounds}: measuring the reference app");
            bench.ceiling().await;
        }
        for (name, step) in [("post", 0), ("poll-empty", 1), ("poll-latest", 2), ("inbox", 3)] {
            if !wants(&args, name) {
                continue;
            }
            println!("Round {round} of {rounds}: measuring {name}");
            match step {
                0 => bench.posts().await,
                1 => bench.empty_polls().await,
                2 => bench.latest_polls().await,
                _ => bench.operators().await,
            }
        }
    }
    if wants(&args, "streams") {
        println!("Setting up the streams: {} conversations", args.visitors);
        let visitors =
            setup::conversations(addr, &bench.tenant.widget_token, args.visitors as usize, 1, &format!("{label}-streams")).await?;
        let length = Duration::from_secs(args.mix_duration);
        let count = visitors.len();
        let public_ids = visitors.into_iter().map(|c| c.public_id).collect();
        let routes: Arc<dyn streams::Routes> = Arc::new(streams::Parley { token: bench.tenant.widget_token.clone(), public_ids });
        println!("Measuring {count} streams for {} s", args.mix_duration);
        let outcome = streams::run(addr, bench.parley_process, routes, count, args.rate, length).await;
        outcome.print("parley");
        bench.report.notes.push(("streams: parley".into(), outcome.json()));
        if let Some(reference) = &reference {
            println!("Measuring {count} streams of the reference app for {} s", args.mix_duration);
            let outcome = streams::run(reference.addr, Some(reference.pid), Arc::new(streams::Reference), count, args.rate, length).await;
            outcome.print("reference");
            bench.report.notes.push(("streams: reference".into(), outcome.json()));
        }
    }
    drop(reference);
    if wants(&args, "webhooks") {
        println!("Measuring webhooks");
        bench.webhooks().await?;
    }
    if wants(&args, "mix") {
        println!("Setting up the mix: {} visitors", args.visitors);
        let visitors = setup::conversations(addr, &bench.tenant.widget_token, args.visitors as usize, 1, &format!("{label}-mix")).await?;
        println!("Measuring the mix for {} s", args.mix_duration);
        bench.mix(visitors).await;
    }
    // After the mix: the pushes leave the tenant with a thousand
    // operators and their devices, and each conversation the mix opened
    // afterwards would queue a push to every one of them.
    if let Some(receiver) = &push_receiver {
        let load = pushes::PushLoad {
            conversations: args.push_conversations.max(1),
            operators: (args.push_devices / 2).max(1),
            devices_per_operator: 2,
            messages_per_second: args.rate,
            duration: Duration::from_secs(args.mix_duration),
        };
        let figures = pushes::run(addr, bench.parley_process, &bench.tenant, receiver, &load).await?;
        bench.report.notes.push(("pushes".into(), figures));
    }
    if wants(&args, "scale") {
        let url = seed_url.as_deref().ok_or("`scale` needs the bench to start the server (no --target)")?;
        println!("Writing {} conversations of {} messages into the database", args.scale_conversations, args.scale_messages);
        let started = std::time::Instant::now();
        scale::seed(url, bench.tenant.site_id, args.scale_conversations, args.scale_messages).await?;
        println!("Written in {:.0} s; measuring the inbox and search at that size", started.elapsed().as_secs_f64());
        bench.scale().await;
    }
    if wants(&args, "files") {
        println!("Measuring attachments");
        let figures = files::run(&parley_bin, s3).await?;
        bench.report.notes.push(("files".into(), figures));
    }
    bench.report.print();
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&bench.report.json()).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        println!("JSON report: {}", path.display());
    }
    drop(parley);
    Ok(())
}
