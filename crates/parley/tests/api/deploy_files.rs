//! The files of `deploy/` held to Parley's own figures: the image builds
//! what `cargo build --release` builds and runs it as a user with a volume
//! and a health check; every supervisor waits longer than Parley's
//! shutdown; every proxy takes Parley's largest body and waits longer than
//! its longest silence; and every variable they set is one Parley reads.
//! `scripts/deploy-test` runs nginx, Caddy and `systemd-analyze` on the
//! same files; this machine has no container engine to build the image.

use std::collections::BTreeMap;
use std::time::Duration;

use parley::config::Config;

fn read(name: &str) -> String {
    let path = format!("{}/../../deploy/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn defaults() -> Config {
    Config::from_vars(&BTreeMap::new()).expect("the defaults are valid").0
}

/// A Dockerfile's instructions, continuation lines joined and comments
/// left out: (keyword in capitals, arguments).
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(start) => {
                current.push_str(start);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (keyword, args) = current.trim().split_once(char::is_whitespace).unwrap_or((current.trim(), ""));
                out.push((keyword.to_ascii_uppercase(), args.trim().to_owned()));
                current.clear();
            }
        }
    }
    out
}

/// `value` as a duration: `20s`, `2m`, or seconds without a unit (nginx,
/// systemd).
fn seconds(value: &str) -> Duration {
    let value = value.trim().trim_end_matches(';');
    let value = if value.bytes().all(|b| b.is_ascii_digit()) { format!("{value}s") } else { value.to_owned() };
    parley_domain::limits::parse_duration(&value).unwrap_or_else(|e| panic!("{value:?}: {e}"))
}

/// `value` in bytes: `11m`, `11MiB`.
fn bytes(value: &str) -> u64 {
    let value = value.trim().trim_end_matches(';');
    let (number, unit) = value.split_at(value.find(|c: char| !c.is_ascii_digit()).unwrap_or(value.len()));
    let n: u64 = number.parse().unwrap_or_else(|_| panic!("{value:?} is not a size"));
    n * match unit.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        other => panic!("unit {other:?} in {value:?}"),
    }
}

/// The value after `directive` on the lines of `text` that are not
/// comments, each occurrence.
fn directive<'a>(text: &'a str, directive: &str) -> Vec<&'a str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix(directive).filter(|rest| rest.starts_with(char::is_whitespace)))
        .map(str::trim)
        .collect()
}

/// The longest Parley keeps a healthy connection silent: a long poll's
/// wait or the gap between a stream's keep-alives.
fn longest_silence(config: &Config) -> Duration {
    Duration::from_secs(u64::from(parley_http::LONG_POLL_MAX_WAIT)).max(config.stream_keepalive)
}

/// Parley's largest request body: an attachment with its form around it,
/// or an email to the inbound route.
fn largest_body(config: &Config) -> u64 {
    (config.files.limits.max_size + parley_http::extract::FORM_OVERHEAD).max(parley_http::INBOUND_LIMIT as u64)
}

#[test]
fn the_image_builds_the_release_binary_and_runs_it_unprivileged_with_a_volume_and_a_health_check() {
    let steps = instructions(&read("Dockerfile"));
    let stages: Vec<usize> = steps.iter().enumerate().filter(|(_, (k, _))| k == "FROM").map(|(i, _)| i).collect();
    assert!(stages.len() >= 2, "a builder stage and a runtime stage");
    let (build, run) = steps.split_at(*stages.last().unwrap());
    let builder = steps[stages[0]].1.split_whitespace().collect::<Vec<_>>();
    assert!(builder[0].starts_with("rust:"), "the builder is Rust's image: {builder:?}");
    let builder_name = builder.iter().position(|w| w.eq_ignore_ascii_case("AS")).map(|i| builder[i + 1]).expect("the builder is named");

    let compile = build.iter().find(|(k, a)| k == "RUN" && a.contains("cargo build")).expect("the builder runs cargo build");
    for part in ["--release", "--locked", "-p parley", "--bin parley"] {
        assert!(compile.1.contains(part), "cargo build lacks {part}: {}", compile.1);
    }
    // The whole workspace is in the context the build sees.
    let copied: Vec<&str> = build.iter().filter(|(k, _)| k == "COPY").flat_map(|(_, a)| a.split_whitespace()).collect();
    for needed in ["Cargo.toml", "Cargo.lock", "crates", ".cargo"] {
        assert!(copied.iter().any(|c| c.trim_end_matches('/') == needed || c.trim_start_matches("./") == needed), "{needed} is not copied");
    }

    let runtime = &run[0].1;
    assert!(runtime.contains("slim"), "a slim runtime: {runtime}");
    let installs = run.iter().filter(|(k, _)| k == "RUN").map(|(_, a)| a.as_str()).collect::<Vec<_>>().join(" ");
    assert!(installs.contains("ca-certificates"), "outbound TLS needs the CA certificates");
    assert!(
        run.iter().any(|(k, a)| k == "COPY" && a.contains(&format!("--from={builder_name}")) && a.contains("parley")),
        "the binary comes from the builder"
    );
    let user = run.iter().rev().find(|(k, _)| k == "USER").map(|(_, a)| a.as_str()).expect("a USER");
    assert!(!["root", "0", "0:0"].contains(&user), "runs as {user}");
    let volume = run.iter().find(|(k, _)| k == "VOLUME").map(|(_, a)| a.as_str()).expect("a VOLUME");
    assert!(volume.contains("/var/lib/parley"), "{volume}");
    let health = run.iter().find(|(k, _)| k == "HEALTHCHECK").map(|(_, a)| a.as_str()).expect("a HEALTHCHECK");
    assert!(health.contains("/health"), "{health}");
    assert!(run.iter().any(|(k, a)| k == "STOPSIGNAL" && a == "SIGTERM"), "Parley drains on SIGTERM");
    assert!(run.iter().any(|(k, a)| k == "ENTRYPOINT" && a.contains("\"parley\"")), "the entry point is parley");
    assert!(run.iter().any(|(k, a)| k == "CMD" && a.contains("\"serve\"")), "it serves");

    // Configuration by environment, with variables Parley reads, listening
    // beyond the container's loopback.
    let known = Config::variables();
    let env: Vec<(&str, &str)> =
        run.iter().filter(|(k, _)| k == "ENV").flat_map(|(_, a)| a.split_whitespace()).filter_map(|pair| pair.split_once('=')).collect();
    for (name, _) in &env {
        assert!(known.iter().any(|k| k == name), "{name} is not a variable Parley reads");
    }
    assert!(env.iter().any(|(k, v)| *k == "PARLEY_LISTEN" && v.starts_with("0.0.0.0:")), "{env:?}");
}

#[test]
fn supervisors_wait_longer_than_parleys_shutdown() {
    let shutdown = defaults().shutdown_timeout;
    let unit = read("parley.service");
    let settings: BTreeMap<&str, &str> =
        unit.lines().map(str::trim).filter(|l| !l.starts_with('#')).filter_map(|l| l.split_once('=')).collect();
    let stop = settings.get("TimeoutStopSec").map(|v| seconds(v)).expect("TimeoutStopSec");
    assert!(stop > shutdown, "TimeoutStopSec {stop:?} must exceed PARLEY_SHUTDOWN_TIMEOUT {shutdown:?}");
    for (key, value) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("PrivateTmp", "yes"),
        ("StateDirectory", "parley"),
        ("Restart", "on-failure"),
        ("KillSignal", "SIGTERM"),
    ] {
        assert_eq!(settings.get(key).copied(), Some(value), "{key}");
    }
    assert!(settings.get("LimitNOFILE").and_then(|v| v.parse::<u64>().ok()).is_some_and(|n| n >= 65_536), "LimitNOFILE");
    assert!(
        settings.get("DynamicUser").is_some_and(|v| *v == "yes") || settings.get("User").is_some_and(|u| *u != "root"),
        "a user of its own"
    );

    let compose = read("compose.yaml");
    let grace: Vec<Duration> = directive(&compose, "stop_grace_period:").into_iter().map(seconds).collect();
    assert!(!grace.is_empty(), "compose gives Parley a stop grace period");
    for g in grace {
        assert!(g > shutdown, "stop_grace_period {g:?} must exceed PARLEY_SHUTDOWN_TIMEOUT {shutdown:?}");
    }
}

/// What both proxies' files hold to Parley: the body limit, the read
/// timeout and the upstream keep-alive, each written with the proxy's
/// own directive.
fn holds_to_parleys_limits(text: &str, body_limit: &str, read_timeout: &str, keepalive: &str) {
    let config = defaults();
    let body = directive(text, body_limit).into_iter().map(bytes).collect::<Vec<_>>();
    assert!(!body.is_empty() && body.iter().all(|b| *b >= largest_body(&config)), "{body_limit} {body:?}");
    let read_timeouts = directive(text, read_timeout).into_iter().map(seconds).collect::<Vec<_>>();
    assert!(!read_timeouts.is_empty(), "{read_timeout} is set");
    for t in read_timeouts {
        assert!(t > longest_silence(&config), "{read_timeout} {t:?} cuts a long poll or a stream");
    }
    // Upstream connections are closed by the proxy before Parley would.
    for t in directive(text, keepalive).into_iter().map(seconds) {
        assert!(t < config.idle_timeout, "an upstream connection kept past PARLEY_IDLE_TIMEOUT");
    }
}

#[test]
fn nginx_takes_parleys_largest_body_streams_unbuffered_and_waits_past_its_longest_silence() {
    let nginx = read("nginx.conf");
    holds_to_parleys_limits(&nginx, "client_max_body_size", "proxy_read_timeout", "keepalive_timeout");
    assert_eq!(directive(&nginx, "proxy_buffering"), ["off;"], "streams are not buffered");
    assert_eq!(directive(&nginx, "gzip"), ["off;"], "Parley compresses, nginx does not again");
    assert!(directive(&nginx, "proxy_set_header").iter().any(|h| h.starts_with("X-Forwarded-For ")), "the client's address is passed on");
    assert!(directive(&nginx, "proxy_set_header").iter().any(|h| h.starts_with("Host ")), "the browser's Host is passed on");
    assert!(directive(&nginx, "listen").iter().any(|l| l.contains("ssl") && l.contains("http2")), "TLS and HTTP/2 to clients");
}

#[test]
fn caddy_takes_parleys_largest_body_streams_unbuffered_and_waits_past_its_longest_silence() {
    let caddy = read("Caddyfile");
    holds_to_parleys_limits(&caddy, "max_size", "read_timeout", "keepalive");
    assert_eq!(directive(&caddy, "flush_interval"), ["-1"], "streams are not buffered");
    assert!(directive(&caddy, "encode").is_empty(), "Parley compresses, Caddy does not again");
}

/// The settings a self-hoster copies name only variables Parley reads (an
/// unknown one is only warned about at start, and would silently do
/// nothing).
#[test]
fn the_example_settings_name_only_variables_parley_reads() {
    let known = Config::variables();
    let example = read("parley.env.example");
    let compose = read("compose.yaml");
    let named = example
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .chain(compose.lines().filter_map(|l| l.trim().trim_start_matches('#').trim().split_once(':').map(|(k, _)| k)))
        .filter(|k| k.starts_with("PARLEY_"))
        .collect::<Vec<_>>();
    assert!(named.len() >= 3, "{named:?}");
    for name in named {
        assert!(known.iter().any(|k| k == name), "{name} is not a variable Parley reads");
    }
    // As copied, before a value is changed, the file is a configuration
    // Parley takes (the format of `--config` and systemd's EnvironmentFile).
    let vars: BTreeMap<String, String> = example
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    let (config, warnings) = Config::from_vars(&vars).unwrap_or_else(|e| panic!("parley.env.example:\n{e}"));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(config.database_url.starts_with("postgres://"), "the Compose file's database");
    assert!(!config.trusted_proxies.is_empty(), "the proxy in front is trusted");
}

/// Compose builds the image from this Dockerfile with the repository as
/// its context, and reads the files the docs tell to make beside it.
#[test]
fn compose_builds_this_image_and_names_the_files_the_docs_make() {
    let compose = read("compose.yaml");
    assert_eq!(directive(&compose, "context:"), [".."], "the repository's root");
    assert_eq!(directive(&compose, "dockerfile:"), ["deploy/Dockerfile"]);
    assert!(std::path::Path::new(&format!("{}/../../deploy/Dockerfile", env!("CARGO_MANIFEST_DIR"))).exists());
    assert!(directive(&compose, "env_file:").contains(&"parley.env"), "{compose}");
    assert!(directive(&compose, "file:").contains(&"./db_password"), "{compose}");
    let docs = std::fs::read_to_string(format!("{}/../../docs/deploy.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    assert!(docs.contains("> parley.env") && docs.contains("> db_password"), "docs/deploy.md makes both files");
    let ignored = std::fs::read_to_string(format!("{}/../../.gitignore", env!("CARGO_MANIFEST_DIR"))).unwrap();
    for secret in ["/deploy/parley.env", "/deploy/db_password"] {
        assert!(ignored.lines().any(|l| l == secret), "{secret} is kept out of git");
    }
}

/// A default written beside its variable in the docs or the deploy files
/// (`PARLEY_SHUTDOWN_TIMEOUT (15 s)`) is the default Parley has: a
/// changed default fails here until the prose follows.
#[test]
fn figures_quoted_beside_a_variable_are_its_default() {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let mut texts = vec![format!("{root}/README.md")];
    for folder in ["deploy", "docs"] {
        for entry in std::fs::read_dir(format!("{root}/{folder}")).unwrap() {
            texts.push(entry.unwrap().path().display().to_string());
        }
    }
    let defaults: BTreeMap<String, String> = defaults().shown.into_iter().map(|s| (s.name, s.value)).collect();
    let mut checked = 0;
    for path in texts {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        for (at, _) in text.match_indices("PARLEY_") {
            let rest = &text[at..];
            let name_len = rest.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')).unwrap_or(rest.len());
            let (name, after) = rest.split_at(name_len);
            let Some(quoted) = after.trim_start_matches('`').trim_start_matches(',').strip_prefix(" (") else { continue };
            let Some(figure) = quoted.split(')').next().and_then(figure) else { continue };
            let Some(default) = defaults.get(name) else { continue };
            assert!(same(&figure, default), "{path}: {name} ({figure}), but its default is {default}");
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} figures found");
}

/// A figure as the prose writes it (`15 s`, `15 minutes`, `10,000`,
/// `` default `2m` ``), in the configuration's own form; `None` for words.
fn figure(text: &str) -> Option<String> {
    let text = text.trim().trim_start_matches("default ").trim_matches('`').replace(',', "");
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    if digits == 0 {
        return None;
    }
    let (number, unit) = text.split_at(digits);
    let unit = match unit.trim() {
        "" => "",
        "s" | "second" | "seconds" => "s",
        "m" | "minute" | "minutes" => "m",
        "h" | "hour" | "hours" => "h",
        "d" | "day" | "days" => "d",
        "ms" => "ms",
        unit @ ("KiB" | "MiB" | "GiB") => unit,
        _ => return None,
    };
    Some(format!("{number}{unit}"))
}

/// Whether two values are the same setting: as durations when both are.
fn same(a: &str, b: &str) -> bool {
    use parley_domain::limits::parse_duration;
    match (parse_duration(a), parse_duration(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
