//! Reading a `postgres://` URL into connection settings.

use std::path::PathBuf;

use tokio_postgres::config::SslMode;

use super::tls::Verify;

/// Where and how to connect.
pub(super) struct Target {
    pub config: tokio_postgres::Config,
    pub verify: Verify,
}

/// Takes `sslmode` and `sslrootcert` out of the URL (the client library
/// knows only `disable`, `prefer` and `require`) and reads the rest.
pub(super) fn parse(url: &str) -> Result<Target, String> {
    let mut parsed = url::Url::parse(url).map_err(|e| format!("not a database URL: {e}"))?;
    let (mut mode, mut root) = (None, None);
    for (k, v) in parsed.query_pairs() {
        match k.as_ref() {
            "sslmode" => mode = Some(v.into_owned()),
            "sslrootcert" => root = Some(PathBuf::from(v.as_ref())),
            _ => {}
        }
    }
    // The other parameters as written: encoded again, a space would become
    // a `+`, which the client library reads as a plus.
    let kept: Vec<String> = parsed
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty() && !matches!(pair.split('=').next(), Some("sslmode" | "sslrootcert")))
        .map(str::to_owned)
        .collect();
    let kept = kept.join("&");
    parsed.set_query(if kept.is_empty() { None } else { Some(&kept) });
    let mut config: tokio_postgres::Config = parsed.as_str().parse().map_err(|e| format!("{e}"))?;
    let (ssl_mode, verify) = match mode.as_deref() {
        None | Some("prefer" | "allow") => (SslMode::Prefer, Verify::None),
        Some("disable") => (SslMode::Disable, Verify::None),
        // libpq checks the chain under `require` when given an authority.
        Some("require") => (SslMode::Require, root.map_or(Verify::None, |r| Verify::Full(Some(r)))),
        Some("verify-ca" | "verify-full") => (SslMode::Require, Verify::Full(root)),
        Some(other) => return Err(format!("sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full")),
    };
    config.ssl_mode(ssl_mode);
    // A server that does not answer must not hold a pool thread for the
    // operating system's TCP timeout (minutes).
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_secs(5));
    }
    if config.get_application_name().is_none() {
        config.application_name("parley");
    }
    Ok(Target { config, verify })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_passed_on_as_written() {
        let t = parse("postgres://u@db/app?options=-c%20statement_timeout%3D5000&sslmode=disable").unwrap();
        assert_eq!(t.config.get_options(), Some("-c statement_timeout=5000"));
    }

    #[test]
    fn ssl_settings_are_read_and_the_rest_kept() {
        let t = parse("postgres://u:p%40ss@db.example.com:6432/app?sslmode=verify-full&sslrootcert=/etc/ca.pem&connect_timeout=5").unwrap();
        assert_eq!(t.verify, Verify::Full(Some(PathBuf::from("/etc/ca.pem"))));
        assert_eq!(t.config.get_ssl_mode(), SslMode::Require);
        assert_eq!(t.config.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(t.config.get_dbname(), Some("app"));
        assert_eq!(t.config.get_connect_timeout(), Some(&std::time::Duration::from_secs(5)));

        let t = parse("postgresql://u@h/db?sslmode=require").unwrap();
        assert_eq!((t.verify, t.config.get_ssl_mode()), (Verify::None, SslMode::Require));
        assert_eq!(parse("postgres://u@h/db").unwrap().config.get_ssl_mode(), SslMode::Prefer);
        assert!(parse("postgres://u@h/db?sslmode=allow-ish").is_err());
        let t = parse("postgres://u@h/db?sslmode=require&sslrootcert=/ca.pem").unwrap();
        assert_eq!(t.verify, Verify::Full(Some(PathBuf::from("/ca.pem"))), "an authority given is checked");
    }
}
