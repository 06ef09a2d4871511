//! Where attachments are kept and how large they may be.

use parley_domain::attachments::AttachmentSettings;

use super::Reader;

pub const DEFAULT_FILES_URL: &str = "file://parley-data/files";
/// `parley demo` keeps its files apart, as it keeps its database.
pub const DEMO_FILES_URL: &str = "file://parley-data/demo-files";

pub struct FilesConfig {
    /// `PARLEY_FILES_URL`: `file://<folder>` or `s3://bucket/prefix?…`.
    pub url: String,
    /// Whether `PARLEY_FILES_URL` was set (the demo keeps its own folder
    /// unless it was).
    pub url_set: bool,
    /// `PARLEY_ATTACHMENT_MAX` and `PARLEY_FILES_QUOTA_PER_TENANT`.
    pub limits: AttachmentSettings,
    /// `PARLEY_S3_ACCESS_KEY_ID` and `PARLEY_S3_SECRET_ACCESS_KEY`.
    pub credentials: Option<parley_storage::files::S3Credentials>,
}

pub(super) fn read(r: &mut Reader<'_>) -> FilesConfig {
    let url_set = r.vars.contains_key("PARLEY_FILES_URL");
    let url = r.get("PARLEY_FILES_URL", DEFAULT_FILES_URL.to_owned(), |s| {
        parley_storage::files::check(s).map(|()| s.to_owned()).map_err(|e| e.to_string())
    });
    let defaults = AttachmentSettings::default();
    let max_size = r.get("PARLEY_ATTACHMENT_MAX", Size(defaults.max_size), |s| size(s, 1024, 1 << 30).map(Size)).0;
    let quota = r.get("PARLEY_FILES_QUOTA_PER_TENANT", Size(defaults.quota), |s| size(s, 1, u64::MAX).map(Size)).0;
    let key = r.get("PARLEY_S3_ACCESS_KEY_ID", None, |s| Ok(Some(s.to_owned())));
    let secret = r.secret("PARLEY_S3_SECRET_ACCESS_KEY", None, |s| Ok(Some(s.to_owned())));
    let credentials = match (key, secret) {
        (Some(access_key_id), Some(secret_access_key)) => Some(parley_storage::files::S3Credentials { access_key_id, secret_access_key }),
        (None, None) => None,
        (Some(_), None) => {
            r.errors.push(super::ConfigError {
                variable: "PARLEY_S3_SECRET_ACCESS_KEY".into(),
                reason: "is required with PARLEY_S3_ACCESS_KEY_ID".into(),
            });
            None
        }
        (None, Some(_)) => {
            r.errors.push(super::ConfigError {
                variable: "PARLEY_S3_ACCESS_KEY_ID".into(),
                reason: "is required with PARLEY_S3_SECRET_ACCESS_KEY".into(),
            });
            None
        }
    };
    FilesConfig { url, url_set, limits: AttachmentSettings { max_size, quota }, credentials }
}

/// A number of bytes, shown in the largest whole unit.
pub(super) struct Size(pub u64);

impl super::shown::Shown for Size {
    fn shown(&self) -> String {
        let n = self.0;
        match [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")].into_iter().find(|(unit, _)| n > 0 && n.is_multiple_of(*unit)) {
            Some((unit, name)) => format!("{}{name}", n / unit),
            None => n.to_string(),
        }
    }
}

/// A size in bytes, or with `KiB`, `MiB` or `GiB` (`K`, `M`, `G` and
/// `KB`, `MB`, `GB` mean the same, binary, units), within `min..=max`.
fn size(s: &str, min: u64, max: u64) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = t.split_at(digits);
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "k" | "KB" | "KiB" => 1 << 10,
        "M" | "m" | "MB" | "MiB" => 1 << 20,
        "G" | "g" | "GB" | "GiB" => 1 << 30,
        _ => return Err(format!("{s:?} is not a size such as 10MiB")),
    };
    let bytes =
        number.parse::<u64>().ok().and_then(|n| n.checked_mul(factor)).ok_or_else(|| format!("{s:?} is not a size such as 10MiB"))?;
    if (min..=max).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(format!("must be from {} to {}", parley_domain::attachments::names::bytes(min), parley_domain::attachments::names::bytes(max)))
    }
}

#[cfg(test)]
mod tests {
    use super::size;

    #[test]
    fn sizes_take_units() {
        assert_eq!(size("10MiB", 1, u64::MAX), Ok(10 << 20));
        assert_eq!(size("5G", 1, u64::MAX), Ok(5 << 30));
        assert_eq!(size("4096", 1, u64::MAX), Ok(4096));
        assert!(size("10 parsecs", 1, u64::MAX).is_err());
        assert!(size("", 1, u64::MAX).is_err());
        assert!(size("512", 1024, 1 << 30).is_err());
    }
}
