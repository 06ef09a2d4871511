//! Configuration from `PARLEY_*` variables (and an optional file of
//! `NAME=value` lines that the environment overrides).
//!
//! Every variable is checked at start-up; a bad value stops the process
//! with a message naming the variable. Secrets (SMTP credentials, gateway
//! token) are held here but never printed: `Config` has no `Debug`.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use ipnet::IpNet;
use parley_domain::limits::{Rate, RateLimitSettings, parse_duration};
use parley_domain::verification::limits::VerificationLimits;
use url::Url;

mod continuity;
mod files;
mod push;
mod shown;

pub use continuity::ContinuityConfig;
pub use files::{DEFAULT_FILES_URL, DEMO_FILES_URL, FilesConfig};
pub use push::{ExtraRoots, PushConfig};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    /// As `PARLEY_LOG_FORMAT` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

pub struct Config {
    pub listen: SocketAddr,
    pub database_url: String,
    /// PostgreSQL connections (`PARLEY_DATABASE_POOL`).
    pub database_pool: usize,
    /// Where `parley demo` keeps its data: never the real database.
    pub demo_database_url: String,
    /// Base address used in links and the embed snippet; defaults to the
    /// listening address.
    pub public_url: Option<Url>,
    /// This instance's name in `/health` and the metrics
    /// (`PARLEY_INSTANCE`); by default the host name and listening port.
    pub instance: Option<String>,
    pub smtp_url: Option<String>,
    pub mail_from: Option<String>,
    pub sms_gateway_url: Option<Url>,
    pub sms_gateway_token: Option<String>,
    pub webhook_retry_schedule: Vec<Duration>,
    pub webhook_allow_private: bool,
    pub webhook_timeout: Duration,
    pub webhook_lease: Duration,
    pub webhook_poll_interval: Duration,
    pub webhook_concurrency: usize,
    pub webhook_endpoints_per_tenant: usize,
    pub mobile_token_ttl: Duration,
    /// Lifetime of a web app session (`PARLEY_SESSION_TTL`).
    pub session_ttl: Duration,
    pub heartbeat_stale_after: Duration,
    pub auto_close_after: Duration,
    pub sweep_interval: Duration,
    /// How long events, delivery logs, spent tokens and challenges are kept.
    pub event_retention: Duration,
    /// `PARLEY_CONVERSATION_RETENTION`: conversations without a message for
    /// this long are erased with their files; `None` (the default) keeps
    /// them.
    pub conversation_retention: Option<Duration>,
    pub log_format: LogFormat,
    pub log_filter: String,
    pub rate_limits: RateLimitSettings,
    pub verification_limits: VerificationLimits,
    pub trusted_proxies: Vec<IpNet>,
    pub metrics_listen: Option<SocketAddr>,
    /// Pending webhook deliveries older than this degrade `/health`.
    pub health_queue_max_age: Duration,
    /// `PARLEY_METRICS_TOKEN`: the bearer token `/metrics` requires.
    pub metrics_token: Option<String>,
    /// A request head must arrive within this time.
    pub request_header_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// How long a response may wait for the client to read some of it.
    pub response_write_timeout: Duration,
    /// A request body must arrive whole within this time.
    pub request_read_timeout: Duration,
    pub max_connections: usize,
    /// How long a stopping process waits for requests and background work.
    pub shutdown_timeout: Duration,
    /// A live stream sends a comment at least this often.
    pub stream_keepalive: Duration,
    /// Live streams one client address may hold open on an instance.
    pub streams_per_address: usize,
    /// Operator pushes: content and providers.
    pub push: PushConfig,
    /// Visitors who leave: email fallback and replies by email.
    pub continuity: ContinuityConfig,
    /// `PARLEY_EXTRA_CA_FILE`.
    pub extra_roots: Option<ExtraRoots>,
    /// Attachments: where they are kept, their limits.
    pub files: FilesConfig,
    /// Every variable as `parley check` prints it (credentials hidden).
    pub shown: Vec<Setting>,
    /// The credentials' values (secrets, URLs' passwords), which `parley
    /// check` masks in whatever else it prints: a client library's error
    /// may quote a URL whole.
    pub credential_values: Vec<String>,
}

/// A variable and its value in effect, for `parley check`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: String,
    /// As set, credentials hidden; or the default.
    pub value: String,
    /// Set (in the environment or the file), not the default.
    pub set: bool,
}

pub const DEFAULT_DATABASE_URL: &str = "sqlite://parley-data/parley.sqlite3";
pub const DEFAULT_DEMO_DATABASE_URL: &str = "sqlite://parley-data/demo.sqlite3";

#[derive(Debug)]
pub struct ConfigError {
    pub variable: String,
    pub reason: String,
}

/// All problems found, one per line.
#[derive(Debug)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.0 {
            writeln!(f, "  {}: {}", e.variable, e.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Reads `name` with `parse`, recording a failure under the variable name,
/// and every name it is asked for: what is set and never asked for is a
/// misspelling to report.
struct Reader<'a> {
    vars: &'a BTreeMap<String, String>,
    errors: Vec<ConfigError>,
    read: Vec<String>,
    /// The variables read with [`Reader::secret`]: never shown.
    secrets: Vec<String>,
    /// Every variable's default, as `parley check` shows it.
    defaults: Vec<String>,
}

impl Reader<'_> {
    /// The value `name` is set to, if it is set to something.
    fn set(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    fn get<T: shown::Shown>(&mut self, name: &str, default: T, parse: impl FnOnce(&str) -> Result<T, String>) -> T {
        self.read.push(name.to_owned());
        self.defaults.push(default.shown());
        match self.set(name) {
            None => default,
            Some(raw) => parse(raw).unwrap_or_else(|reason| {
                self.errors.push(ConfigError { variable: name.to_owned(), reason });
                default
            }),
        }
    }

    /// Like `get`, for a credential: `parley check` shows it as hidden.
    fn secret<T: shown::Shown>(&mut self, name: &str, default: T, parse: impl FnOnce(&str) -> Result<T, String>) -> T {
        self.secrets.push(name.to_owned());
        self.get(name, default, parse)
    }

    /// Every variable, in the order read, as `parley check` shows it:
    /// the value set (a credential hidden, a URL's password masked) or
    /// the default.
    fn shown(&self) -> Vec<Setting> {
        self.read
            .iter()
            .zip(&self.defaults)
            .map(|(name, default)| match self.set(name) {
                Some(_) if self.secrets.contains(name) => Setting { name: name.clone(), value: "(hidden)".into(), set: true },
                Some(value) => Setting { name: name.clone(), value: without_password(value), set: true },
                None => Setting { name: name.clone(), value: default.clone(), set: false },
            })
            .collect()
    }

    /// The values of the credentials set: every secret variable's, and
    /// every credential within a URL (as written and decoded), as
    /// `without_password` finds them.
    fn credential_values(&self) -> Vec<String> {
        let mut values = Vec::new();
        for name in &self.read {
            let Some(value) = self.set(name) else { continue };
            if self.secrets.contains(name) {
                values.push(value.to_owned());
            } else {
                url_credentials(value, &mut values);
            }
        }
        let decoded: Vec<String> = values.iter().map(|v| percent_decoded(v)).collect();
        values.extend(decoded);
        values.sort();
        values.dedup();
        values
    }

    fn duration(&mut self, name: &str, default: Duration) -> Duration {
        self.get(name, default, |s| match parse_duration(s)? {
            d if d.is_zero() => Err("must be longer than zero".into()),
            d => Ok(d),
        })
    }

    /// A whole number within `range`.
    fn number(&mut self, name: &str, default: usize, range: std::ops::RangeInclusive<usize>) -> usize {
        self.get(name, default, |s| match s.parse::<usize>() {
            Ok(n) if range.contains(&n) => Ok(n),
            _ => Err(format!("{s:?} is not a number from {} to {}", range.start(), range.end())),
        })
    }

    fn flag(&mut self, name: &str, default: bool) -> bool {
        self.get(name, default, |s| match s.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(format!("{s:?} is not true or false")),
        })
    }

    fn rate(&mut self, name: &str, default: Option<Rate>) -> Option<Rate> {
        self.get(name, default, |s| s.parse().map(Some))
    }
}

/// The credentials within `value`, when it is a URL: all its user
/// information (read from the text itself, since a parser may take a
/// password that starts with `/`, `?` or `#` for a port and a path), the
/// values of credential parameters as written and decoded, and those of
/// URLs within its parameters.
fn url_credentials(value: &str, into: &mut Vec<String>) {
    if let Some(range) = userinfo_range(value) {
        let userinfo = &value[range];
        into.push(userinfo.to_owned());
        into.extend(userinfo.split_once(':').map(|(user, password)| [user.to_owned(), password.to_owned()]).into_iter().flatten());
    }
    let Ok(url) = Url::parse(&without_userinfo(value)) else { return };
    // As written too: a client's error quotes the URL as it was sent.
    for pair in url.query().unwrap_or_default().split('&') {
        if let Some((key, raw)) = pair.split_once('=')
            && credential_key(key)
        {
            into.push(raw.to_owned());
        }
    }
    for (key, v) in url.query_pairs() {
        if credential_key(&key) {
            into.push(v.into_owned());
        } else {
            url_credentials(&v, into);
        }
    }
}

/// `text` with its `%XX` escapes decoded (a `+` stays a plus: user
/// information is not form-encoded).
fn percent_decoded(text: &str) -> String {
    url::form_urlencoded::parse(format!("p={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map_or_else(|| text.to_owned(), |(_, v)| v.into_owned())
}

/// Whether a URL's query parameter `key` holds a credential (a password,
/// a token, a signature, an API key).
fn credential_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["pass", "pwd", "secret", "token", "key", "sig", "auth", "credential"].iter().any(|word| key.contains(word))
}

/// `value` with a URL's credentials masked: all its user information
/// (`scheme://user:password@host`: a provider's token may be either, and
/// a password starting with `/`, `?` or `#` reads to a parser as a port
/// and a path), the values of credential parameters, and those of URLs
/// within parameters (an S3 `endpoint=`). Anything else as it is.
pub(crate) fn without_password(value: &str) -> String {
    let value = without_userinfo(value);
    let Ok(mut url) = Url::parse(&value) else { return value };
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let shown = if credential_key(&k) { "****".to_owned() } else { without_password(&v) };
            (k.into_owned(), shown)
        })
        .collect();
    if pairs.iter().zip(url.query_pairs()).any(|((_, shown), (_, v))| *shown != v) {
        url.query_pairs_mut().clear().extend_pairs(pairs);
        return url.to_string();
    }
    value
}

/// Where `value` looks like a URL with credentials but is not one a
/// parser reads (a password with an unencoded `/`, `#` or `?`; several
/// hosts): the range between `://` and the last `@`, whose text it is.
fn userinfo_range(value: &str) -> Option<std::ops::Range<usize>> {
    let start = value.find("://")? + 3;
    // Up to a URL within this one (an S3 `endpoint=`), whose own user
    // information is its own.
    let end = value[start..].find("://").map_or(value.len(), |nested| start + nested);
    let at = value[start..end].rfind('@')? + start;
    Some(start..at)
}

fn without_userinfo(value: &str) -> String {
    match userinfo_range(value) {
        Some(range) => format!("{}****{}", &value[..range.start], &value[range.end..]),
        None => value.to_owned(),
    }
}

fn http_url(s: &str) -> Result<Url, String> {
    let url = Url::parse(s).map_err(|e| format!("{:?} is not a URL: {e}", without_password(s)))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an http:// or https:// URL".into());
    }
    Ok(url)
}

impl Config {
    /// The base of the links Parley gives: `PARLEY_PUBLIC_URL`, or the
    /// address `bound` (an unspecified one, `0.0.0.0`, as loopback).
    pub fn public_base(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(url) => url.as_str().trim_end_matches('/').to_owned(),
            None if bound.ip().is_unspecified() => format!("http://127.0.0.1:{}", bound.port()),
            None => format!("http://{bound}"),
        }
    }

    /// How storage is sized.
    pub fn storage_options(&self) -> parley_storage::Options {
        parley_storage::Options { pool: self.database_pool, ..Default::default() }
    }

    /// Reads the configuration from the process environment, after the
    /// optional file.
    pub fn load(file: Option<&Path>) -> Result<(Self, Vec<String>), ConfigErrors> {
        let mut vars = BTreeMap::new();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| {
                ConfigErrors(vec![ConfigError { variable: "--config".into(), reason: format!("cannot read {}: {e}", path.display()) }])
            })?;
            let mut unread = Vec::new();
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            // Comments as systemd's EnvironmentFile takes them (`#`, `;`),
            // and a shell's `export`.
            let lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
            for (number, line) in lines.filter(|(_, l)| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';')) {
                let line = line.strip_prefix("export ").map_or(line, str::trim_start);
                match line.split_once('=') {
                    // Quoted as a shell or systemd's EnvironmentFile takes it.
                    Some((k, v)) => {
                        let v = v.trim();
                        let unquoted =
                            ['"', '\''].iter().find_map(|q| v.strip_prefix(*q).and_then(|rest| rest.strip_suffix(*q))).unwrap_or(v);
                        vars.insert(k.trim().to_owned(), unquoted.to_owned());
                    }
                    None => unread.push(ConfigError {
                        variable: "--config".into(),
                        reason: format!("{} line {number} is not NAME=value", path.display()),
                    }),
                }
            }
            if !unread.is_empty() {
                return Err(ConfigErrors(unread));
            }
        }
        vars.extend(std::env::vars().filter(|(k, _)| k.starts_with("PARLEY_")));
        Self::from_vars(&vars)
    }

    /// Builds the configuration; also returns warnings (unknown variables).
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<(Self, Vec<String>), ConfigErrors> {
        let (config, read, _) = Self::read(vars);
        let warnings = vars
            .keys()
            .filter(|k| k.starts_with("PARLEY_") && !k.starts_with("PARLEY_TEST_") && !read.contains(k))
            .map(|k| format!("unknown configuration variable {k} is ignored"))
            .collect();
        Ok((config?, warnings))
    }

    /// Every variable this build reads.
    pub fn variables() -> Vec<String> {
        Self::read(&BTreeMap::new()).1
    }

    /// The configuration `vars` give, the names of every variable read
    /// (whether set or not), and of those that are credentials.
    fn read(vars: &BTreeMap<String, String>) -> (Result<Self, ConfigErrors>, Vec<String>, Vec<String>) {
        let mut r = Reader { vars, errors: Vec::new(), read: Vec::new(), secrets: Vec::new(), defaults: Vec::new() };
        let default_listen = SocketAddr::from(([127, 0, 0, 1], 8080));
        let listen =
            r.get("PARLEY_LISTEN", default_listen, |s| s.parse().map_err(|_| format!("{s:?} is not an address such as 127.0.0.1:8080")));
        let database_url = r.get("PARLEY_DATABASE_URL", DEFAULT_DATABASE_URL.to_owned(), |s| {
            parley_storage::Location::parse(s).map(|_| s.to_owned()).map_err(|e| e.to_string())
        });
        let demo_database_url = r.get("PARLEY_DEMO_DATABASE_URL", DEFAULT_DEMO_DATABASE_URL.to_owned(), |s| {
            parley_storage::Location::parse(s).map(|_| s.to_owned()).map_err(|e| e.to_string())
        });
        let database_pool = r.number("PARLEY_DATABASE_POOL", parley_storage::Options::default().pool, 1..=1000);
        let public_url = r.get("PARLEY_PUBLIC_URL", None, |s| http_url(s).map(Some));
        let instance = r.get("PARLEY_INSTANCE", None, |s| {
            let fits = (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
            if fits { Ok(Some(s.to_owned())) } else { Err("must be 1 to 64 letters, digits, '.', '_', ':' or '-'".into()) }
        });
        let smtp_url = r.get("PARLEY_SMTP_URL", None, |s| {
            let url = Url::parse(s).map_err(|_| "is not a URL such as smtp://user:pass@host:587".to_owned())?;
            match url.scheme() {
                "smtp" | "smtps" if url.host_str().is_some() => Ok(Some(s.to_owned())),
                _ => Err("must be an smtp:// or smtps:// URL with a host".into()),
            }
        });
        let mail_from = r.get("PARLEY_MAIL_FROM", None, |s| {
            if s.contains('@') { Ok(Some(s.to_owned())) } else { Err("must contain an email address".into()) }
        });
        let sms_gateway_url = r.get("PARLEY_SMS_GATEWAY_URL", None, |s| http_url(s).map(Some));
        let sms_gateway_token = r.secret("PARLEY_SMS_GATEWAY_TOKEN", None, |s| Ok(Some(s.to_owned())));
        let default_schedule =
            ["5s", "30s", "2m", "10m", "30m", "1h", "3h", "6h", "12h", "24h"].iter().filter_map(|d| parse_duration(d).ok()).collect();
        let webhook_retry_schedule =
            r.get("PARLEY_WEBHOOK_RETRY_SCHEDULE", default_schedule, |s| s.split(',').map(|d| parse_duration(d.trim())).collect());
        let webhook_allow_private = r.flag("PARLEY_WEBHOOK_ALLOW_PRIVATE", false);
        let webhook_timeout = r.duration("PARLEY_WEBHOOK_TIMEOUT", Duration::from_secs(10));
        let webhook_lease = r.duration("PARLEY_WEBHOOK_LEASE", Duration::from_secs(60));
        let webhook_poll_interval = r.duration("PARLEY_WEBHOOK_POLL_INTERVAL", Duration::from_secs(1));
        let webhook_concurrency = r.number("PARLEY_WEBHOOK_CONCURRENCY", 128, 1..=4096);
        let webhook_endpoints_per_tenant = r.number("PARLEY_WEBHOOK_ENDPOINTS_PER_TENANT", 10, 1..=1000);
        if webhook_lease <= webhook_timeout {
            r.errors
                .push(ConfigError { variable: "PARLEY_WEBHOOK_LEASE".into(), reason: "must be longer than PARLEY_WEBHOOK_TIMEOUT".into() });
        }
        let mobile_token_ttl = r.duration("PARLEY_MOBILE_TOKEN_TTL", Duration::from_secs(30 * 86_400));
        let session_ttl = r.duration("PARLEY_SESSION_TTL", Duration::from_secs(7 * 86_400));
        let heartbeat_stale_after = r.duration("PARLEY_HEARTBEAT_STALE_AFTER", Duration::from_secs(86_400));
        let auto_close_after = r.duration("PARLEY_AUTO_CLOSE_AFTER", Duration::from_secs(86_400));
        let sweep_interval = r.duration("PARLEY_SWEEP_INTERVAL", Duration::from_secs(60));
        // The verification limits count stored challenges over windows of up
        // to a day (the SMS budget): keeping less would reset them.
        let event_retention = r.get("PARLEY_EVENT_RETENTION", Duration::from_secs(30 * 86_400), |s| match parse_duration(s)? {
            d if d < Duration::from_secs(86_400) => Err("must be at least 1d: the verification limits count a day of challenges".into()),
            d => Ok(d),
        });
        let conversation_retention = r.get("PARLEY_CONVERSATION_RETENTION", None, |s| match s {
            "off" => Ok(None),
            s => match parse_duration(s)? {
                d if d < Duration::from_secs(86_400) => Err("must be at least 1d, or off".into()),
                d => Ok(Some(d)),
            },
        });
        let log_format = r.get("PARLEY_LOG_FORMAT", LogFormat::Text, |s| {
            [LogFormat::Text, LogFormat::Json].into_iter().find(|f| f.as_str() == s).ok_or_else(|| format!("{s:?} is not text or json"))
        });
        let log_filter = r.get("PARLEY_LOG", "info".to_owned(), |s| {
            tracing_subscriber::EnvFilter::try_new(s).map(|_| s.to_owned()).map_err(|e| e.to_string())
        });
        let limits_on = r.flag("PARLEY_RATE_LIMITS", true);
        let defaults = RateLimitSettings::defaults();
        let widget_writes = r.rate("PARLEY_RATE_LIMIT_WIDGET_WRITES", defaults.widget_writes);
        let conversation_messages = r.rate("PARLEY_RATE_LIMIT_CONVERSATION_MESSAGES", defaults.conversation_messages);
        let login_failures_per_email = r.rate("PARLEY_RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL", defaults.login_failures_per_email);
        let login_failures_per_address = r.rate("PARLEY_RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS", defaults.login_failures_per_address);
        let logins_per_address = r.rate("PARLEY_RATE_LIMIT_LOGINS_PER_ADDRESS", defaults.logins_per_address);
        let rate_limits = if limits_on {
            RateLimitSettings {
                widget_writes,
                conversation_messages,
                login_failures_per_email,
                login_failures_per_address,
                logins_per_address,
                // Not tuned on their own: on or off with the rest.
                password_links_per_tenant: defaults.password_links_per_tenant,
                password_guesses: defaults.password_guesses,
            }
        } else {
            RateLimitSettings::off()
        };
        let v = VerificationLimits::defaults();
        let verification_limits = VerificationLimits {
            per_address: r.rate("PARLEY_VERIFY_LIMIT_PER_ADDRESS", v.per_address),
            per_tenant: r.rate("PARLEY_VERIFY_LIMIT_PER_TENANT", v.per_tenant),
            sms_per_number: r.rate("PARLEY_SMS_LIMIT_PER_NUMBER", v.sms_per_number),
            sms_daily_budget: r.get("PARLEY_SMS_DAILY_BUDGET", v.sms_daily_budget, |s| match s.parse::<u32>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(format!("{s:?} is not a positive number")),
            }),
            email_per_recipient: r.rate("PARLEY_VERIFY_EMAIL_LIMIT_PER_RECIPIENT", v.email_per_recipient),
            test_sends_per_tenant: r.rate("PARLEY_VERIFY_TEST_LIMIT_PER_TENANT", v.test_sends_per_tenant),
            per_conversation: v.per_conversation,
        };
        let verification_limits = if limits_on { verification_limits } else { VerificationLimits::off() };
        if smtp_url.is_some() && mail_from.is_none() {
            r.errors.push(ConfigError { variable: "PARLEY_MAIL_FROM".into(), reason: "is required when PARLEY_SMTP_URL is set".into() });
        }
        let trusted_proxies = r.get("PARLEY_TRUSTED_PROXIES", Vec::new(), |s| {
            s.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| {
                    p.parse::<IpNet>()
                        .or_else(|_| p.parse::<std::net::IpAddr>().map(IpNet::from))
                        .map_err(|_| format!("{p:?} is not an address or CIDR block"))
                })
                .collect()
        });
        let metrics_listen = r.get("PARLEY_METRICS_LISTEN", None, |s| s.parse().map(Some).map_err(|_| format!("{s:?} is not an address")));
        let health_queue_max_age = r.duration("PARLEY_HEALTH_QUEUE_MAX_AGE", Duration::from_secs(15 * 60));
        let metrics_token = r.secret("PARLEY_METRICS_TOKEN", None, |s| {
            if s.len() >= 16 && s.bytes().all(|b| b.is_ascii_graphic()) {
                Ok(Some(s.to_owned()))
            } else {
                Err("must be at least 16 printable characters without spaces".into())
            }
        });
        let request_header_timeout = r.duration("PARLEY_REQUEST_HEADER_TIMEOUT", Duration::from_secs(10));
        let request_read_timeout = r.duration("PARLEY_REQUEST_READ_TIMEOUT", Duration::from_secs(30));
        let idle_timeout = r.duration("PARLEY_IDLE_TIMEOUT", Duration::from_secs(60));
        let response_write_timeout = r.duration("PARLEY_RESPONSE_WRITE_TIMEOUT", Duration::from_secs(30));
        let max_connections = r.number("PARLEY_MAX_CONNECTIONS", 10_000, 1..=1_000_000);
        let shutdown_timeout = r.duration("PARLEY_SHUTDOWN_TIMEOUT", Duration::from_secs(15));
        // Every keep-alive may recheck the stream's holder in the database.
        let stream_keepalive = r.get("PARLEY_STREAM_KEEPALIVE", Duration::from_secs(15), |s| match parse_duration(s)? {
            d if d < Duration::from_millis(100) => Err("must be at least 100ms".into()),
            d => Ok(d),
        });
        let streams_per_address = r.number("PARLEY_STREAMS_PER_ADDRESS", 200, 1..=1_000_000);
        let push = push::read(&mut r);
        let extra_roots = push::read_extra_roots(&mut r);
        let continuity = continuity::read(&mut r);
        let files = files::read(&mut r);
        if !r.errors.is_empty() {
            return (Err(ConfigErrors(r.errors)), r.read, r.secrets);
        }
        let shown = r.shown();
        let credential_values = r.credential_values();
        let config = Config {
            shown,
            credential_values,
            listen,
            database_url,
            database_pool,
            demo_database_url,
            public_url,
            instance,
            smtp_url,
            mail_from,
            sms_gateway_url,
            sms_gateway_token,
            webhook_retry_schedule,
            webhook_allow_private,
            webhook_timeout,
            webhook_lease,
            webhook_poll_interval,
            webhook_concurrency,
            webhook_endpoints_per_tenant,
            mobile_token_ttl,
            session_ttl,
            heartbeat_stale_after,
            auto_close_after,
            sweep_interval,
            event_retention,
            conversation_retention,
            log_format,
            log_filter,
            rate_limits,
            verification_limits,
            trusted_proxies,
            metrics_listen,
            health_queue_max_age,
            metrics_token,
            request_header_timeout,
            idle_timeout,
            response_write_timeout,
            request_read_timeout,
            max_connections,
            shutdown_timeout,
            stream_keepalive,
            streams_per_address,
            push,
            continuity,
            extra_roots,
            files,
        };
        (Ok(config), r.read, r.secrets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let (c, warnings) = Config::from_vars(&BTreeMap::new()).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.database_url, DEFAULT_DATABASE_URL);
        assert_eq!(c.webhook_retry_schedule.len(), 10);
        assert_eq!(c.mobile_token_ttl, Duration::from_secs(30 * 86_400));
        assert!(c.rate_limits.widget_writes.is_some());
        assert!(warnings.is_empty());
    }

    #[test]
    fn every_bad_value_is_named() {
        let err = Config::from_vars(&vars(&[
            ("PARLEY_LISTEN", "nowhere"),
            ("PARLEY_AUTO_CLOSE_AFTER", "soon"),
            ("PARLEY_WEBHOOK_ALLOW_PRIVATE", "maybe"),
            ("PARLEY_DATABASE_URL", "mysql://x"),
            ("PARLEY_SMTP_URL", "http://mail"),
            ("PARLEY_TRUSTED_PROXIES", "10.0.0.0/8, banana"),
            ("PARLEY_STREAM_KEEPALIVE", "10ms"),
            ("PARLEY_STREAMS_PER_ADDRESS", "0"),
        ]))
        .err()
        .unwrap();
        let named: Vec<_> = err.0.iter().map(|e| e.variable.as_str()).collect();
        for v in [
            "PARLEY_LISTEN",
            "PARLEY_AUTO_CLOSE_AFTER",
            "PARLEY_WEBHOOK_ALLOW_PRIVATE",
            "PARLEY_DATABASE_URL",
            "PARLEY_SMTP_URL",
            "PARLEY_TRUSTED_PROXIES",
            "PARLEY_STREAM_KEEPALIVE",
            "PARLEY_STREAMS_PER_ADDRESS",
        ] {
            assert!(named.contains(&v), "{v} not reported in {named:?}");
        }
    }

    #[test]
    fn rate_limits_can_be_switched_off_and_tuned() {
        let (c, _) = Config::from_vars(&vars(&[("PARLEY_RATE_LIMITS", "off")])).unwrap();
        assert!(c.rate_limits.widget_writes.is_none() && c.rate_limits.conversation_messages.is_none());
        let (c, _) = Config::from_vars(&vars(&[("PARLEY_RATE_LIMIT_WIDGET_WRITES", "5/1h")])).unwrap();
        assert_eq!(c.rate_limits.widget_writes, Some(Rate { count: 5, period: Duration::from_secs(3600) }));
    }

    #[test]
    fn the_inbound_domain_and_token_go_together() {
        let named = |pairs: &[(&str, &str)]| -> Vec<String> {
            Config::from_vars(&vars(pairs)).err().map(|e| e.0.into_iter().map(|e| e.variable).collect()).unwrap_or_default()
        };
        assert_eq!(named(&[("PARLEY_INBOUND_DOMAIN", "reply.example.com")]), ["PARLEY_INBOUND_TOKEN"]);
        assert_eq!(named(&[("PARLEY_INBOUND_TOKEN", "a-long-enough-token")]), ["PARLEY_INBOUND_DOMAIN"]);
        assert_eq!(named(&[("PARLEY_INBOUND_DOMAIN", "not a domain"), ("PARLEY_INBOUND_TOKEN", "short")]).len(), 2);
        let (c, _) =
            Config::from_vars(&vars(&[("PARLEY_INBOUND_DOMAIN", "Reply.Example.com"), ("PARLEY_INBOUND_TOKEN", "a-long-enough-token")]))
                .unwrap();
        assert_eq!(c.continuity.inbound_domain.as_deref(), Some("reply.example.com"));
        assert_eq!(c.continuity.email_delay, Duration::from_secs(120));
    }

    #[test]
    fn conversations_are_kept_unless_a_retention_of_a_day_or_more_is_set() {
        let retention =
            |value: &str| Config::from_vars(&vars(&[("PARLEY_CONVERSATION_RETENTION", value)])).map(|(c, _)| c.conversation_retention);
        assert_eq!(Config::from_vars(&BTreeMap::new()).unwrap().0.conversation_retention, None);
        assert_eq!(retention("off").unwrap(), None);
        assert_eq!(retention("1d").unwrap(), Some(Duration::from_secs(86_400)));
        assert_eq!(retention("365d").unwrap(), Some(Duration::from_secs(365 * 86_400)));
        for bad in ["12h", "0s", "soon", "-1d"] {
            let err = retention(bad).err().unwrap_or_else(|| panic!("{bad} taken"));
            assert_eq!(err.0[0].variable, "PARLEY_CONVERSATION_RETENTION");
        }
    }

    /// `parley check` prints the variables set: a credential never, a
    /// URL's password masked, and every variable named like a credential
    /// is read as one (a new one cannot be forgotten).
    #[test]
    fn credentials_are_never_shown() {
        let (c, _) = Config::from_vars(&vars(&[
            ("PARLEY_DATABASE_URL", "postgres://parley:db-pass@db:5432/parley?sslmode=require"),
            ("PARLEY_SMTP_URL", "smtps://mailer:smtp-pass@mail.example.com:465"),
            ("PARLEY_MAIL_FROM", "support@example.com"),
            ("PARLEY_SMS_GATEWAY_URL", "https://sms.example.com/send"),
            ("PARLEY_SMS_GATEWAY_TOKEN", "sms-token-value"),
            ("PARLEY_METRICS_TOKEN", "metrics-token-value"),
            ("PARLEY_INBOUND_DOMAIN", "reply.example.com"),
            ("PARLEY_INBOUND_TOKEN", "inbound-token-value"),
            ("PARLEY_FILES_URL", "s3://bucket/parley?region=eu-west-1"),
            ("PARLEY_S3_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("PARLEY_S3_SECRET_ACCESS_KEY", "s3-secret-value"),
            ("PARLEY_PUSH_RELAY_URL", "https://relay.example.com/push"),
            ("PARLEY_PUSH_RELAY_SECRET", "whsec_cGFybGV5LXJlbGF5LXRlc3Qtc2VjcmV0"),
        ]))
        .unwrap();
        let shown: BTreeMap<_, _> = c.shown.iter().filter(|s| s.set).map(|s| (s.name.clone(), s.value.clone())).collect();
        let text = format!("{shown:?}");
        for secret in
            ["db-pass", "smtp-pass", "sms-token-value", "metrics-token-value", "inbound-token-value", "s3-secret-value", "cGFybGV5"]
        {
            assert!(!text.contains(secret), "{secret} shown in {text}");
        }
        assert_eq!(shown["PARLEY_DATABASE_URL"], "postgres://****@db:5432/parley?sslmode=require");
        assert_eq!(shown["PARLEY_SMS_GATEWAY_TOKEN"], "(hidden)");
        assert_eq!(shown["PARLEY_S3_ACCESS_KEY_ID"], "AKIAEXAMPLE");
        assert_eq!(without_password("postgres://db/parley?user=p&password=x"), "postgres://db/parley?user=p&password=****");
        assert_eq!(without_password("not a url"), "not a url");
        // Credentials in other places a URL keeps them.
        for (url, credential) in [
            ("postgres://parley:pa/ss#w0rd@db:5432/parley", "pa/ss#w0rd"),
            ("postgres://u:multi-host-pw@h1:5432,h2:5432/db", "multi-host-pw"),
            ("smtp://server-token-123:server-token-123@smtp.example.com:587", "server-token-123"),
            ("https://sms.example.com/send?api_key=key-in-query", "key-in-query"),
            ("s3://bucket/p?endpoint=http://minio:minio-password@minio:9000&region=x", "minio-password"),
            // A password a parser reads as a port and a path.
            ("postgres://parley:12/ss#w0rd@db:5432/parley", "12/ss#w0rd"),
            ("smtps://mailer:#pw9@mail.example.com:465", "#pw9"),
            // A token as the user, alone.
            ("https://rk_live_ABC123@relay.example.com/push", "rk_live_ABC123"),
            ("https://sms.example.com/send?user=me&pwd=S3cretPWD", "S3cretPWD"),
        ] {
            let shown = without_password(url);
            assert!(!shown.contains(credential), "{credential} shown in {shown}");
            let mut found = Vec::new();
            url_credentials(url, &mut found);
            assert!(found.iter().any(|c| c == credential), "{credential} not among {found:?}");
        }
        // As written, since a client's error quotes the URL as it sent it.
        let mut found = Vec::new();
        url_credentials("https://sms.example.com/send?api_key=abc%2Fdef", &mut found);
        assert!(found.iter().any(|c| c == "abc%2Fdef") && found.iter().any(|c| c == "abc/def"), "{found:?}");

        let (_, read, secrets) = Config::read(&BTreeMap::new());
        for name in read.iter().filter(|n| n.ends_with("_TOKEN") || n.contains("SECRET") || n.contains("PASSWORD")) {
            assert!(secrets.contains(name), "{name} looks like a credential but is not read with Reader::secret");
        }
    }

    /// The defaults `parley check` shows are values the variables take,
    /// giving the same configuration when set.
    #[test]
    fn every_default_shown_is_a_value_its_variable_takes() {
        let (c, _) = Config::from_vars(&BTreeMap::new()).unwrap();
        assert!(c.shown.iter().all(|s| !s.set));
        let vars: BTreeMap<String, String> =
            c.shown.iter().filter(|s| s.value != "none").map(|s| (s.name.clone(), s.value.clone())).collect();
        assert!(vars.len() > 40, "{vars:?}");
        let (again, warnings) = Config::from_vars(&vars).unwrap_or_else(|e| panic!("{e}"));
        assert!(warnings.is_empty(), "{warnings:?}");
        let values = |c: &Config| c.shown.iter().map(|s| (s.name.clone(), s.value.clone())).collect::<Vec<_>>();
        assert_eq!(values(&again), values(&c));
    }

    #[test]
    fn unknown_variables_are_warned_about() {
        let (_, warnings) = Config::from_vars(&vars(&[("PARLEY_LISTN", "x")])).unwrap();
        assert_eq!(warnings.len(), 1);
    }

    /// The variables the README documents are exactly those read: none is
    /// reported unknown when set, and none is read undocumented.
    #[test]
    fn the_readme_documents_every_variable_read_and_no_other() {
        let readme = include_str!("../../../../README.md");
        let documented: std::collections::BTreeSet<String> = readme
            .lines()
            .filter_map(|l| l.strip_prefix("| `PARLEY_"))
            .map(|rest| format!("PARLEY_{}", rest.split('`').next().unwrap_or_default()))
            .collect();
        let read: std::collections::BTreeSet<String> = Config::variables().into_iter().collect();
        assert_eq!(documented, read);
        let all: BTreeMap<String, String> = documented.iter().map(|k| (k.clone(), String::new())).collect();
        let (_, warnings) = Config::from_vars(&all).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
