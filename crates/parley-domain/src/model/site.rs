use super::{SiteId, TenantId};
use crate::clock::Timestamp;

#[derive(Clone, Debug)]
pub struct Site {
    pub id: SiteId,
    pub tenant_id: TenantId,
    pub name: String,
    /// Host names the widget may run on. Empty means "anywhere"; otherwise a
    /// browser `Origin` must be one of them or a subdomain of one.
    pub domains: Vec<String>,
    pub appearance: WidgetAppearance,
    pub created_at: Timestamp,
    /// The widget's language, its texts per language, business hours.
    pub settings: SiteSettings,
}

/// What a site sets beyond its look (`PATCH admin/sites/{id}`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteSettings {
    /// One of `locale::LANGUAGES`; `None`: each visitor's browser chooses.
    pub locale: Option<String>,
    /// The title, greeting and privacy text in other languages, by language.
    pub texts: std::collections::BTreeMap<String, SiteTexts>,
    /// `None`: always open.
    pub hours: Option<crate::hours::BusinessHours>,
    /// The kinds of file visitors and operators may attach; `None`: the
    /// default (`FileKind::DEFAULT`).
    pub file_kinds: Option<Vec<crate::attachments::kinds::FileKind>>,
}

impl SiteSettings {
    /// Whether the site takes files of `kind`.
    pub fn takes(&self, kind: crate::attachments::kinds::FileKind) -> bool {
        match &self.file_kinds {
            Some(kinds) => kinds.contains(&kind),
            None => crate::attachments::kinds::FileKind::DEFAULT.contains(&kind),
        }
    }
}

/// A site's own texts in one language; what is not given falls back to
/// the site's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SiteTexts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greeting: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy_text: Option<String>,
}

impl Site {
    /// The widget's look in `language`: the site's texts in it where it
    /// has them, its defaults otherwise.
    pub fn appearance_in(&self, language: &str) -> WidgetAppearance {
        let mut look = self.appearance.clone();
        if let Some(texts) = self.settings.texts.get(language) {
            look.title = texts.title.clone().unwrap_or(look.title);
            look.greeting = texts.greeting.clone().unwrap_or(look.greeting);
            look.privacy_text = texts.privacy_text.clone().unwrap_or(look.privacy_text);
        }
        look
    }

    /// Whether a page or origin host may use this site's widget.
    pub fn allows_host(&self, host: &str) -> bool {
        if self.domains.is_empty() {
            return true;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.domains.iter().any(|d| {
            host == *d || (host.len() > d.len() && host.ends_with(d.as_str()) && host.as_bytes()[host.len() - d.len() - 1] == b'.')
        })
    }
}

/// What the widget shows; set per site so every installation of a site
/// looks the same.
#[derive(Clone, Debug, Default)]
pub struct WidgetAppearance {
    pub title: String,
    pub greeting: String,
    /// CSS hex colour such as `#2563eb`.
    pub accent_color: String,
    pub privacy_text: String,
    pub privacy_url: Option<String>,
}

#[derive(Clone, Debug)]
pub struct NewSite {
    pub name: String,
    pub domains: Vec<String>,
    pub appearance: WidgetAppearance,
    pub created_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(domains: &[&str]) -> Site {
        Site {
            id: SiteId(1),
            tenant_id: TenantId(1),
            name: "s".into(),
            domains: domains.iter().map(|d| d.to_string()).collect(),
            appearance: WidgetAppearance::default(),
            created_at: Timestamp::from_millis(0),
            settings: SiteSettings::default(),
        }
    }

    #[test]
    fn host_matching_accepts_domain_and_subdomains_only() {
        let s = site(&["example.com"]);
        assert!(s.allows_host("example.com"));
        assert!(s.allows_host("WWW.Example.com"));
        assert!(s.allows_host("a.b.example.com"));
        assert!(!s.allows_host("badexample.com"));
        assert!(!s.allows_host("example.com.evil.net"));
        assert!(site(&[]).allows_host("anything.net"));
    }
}
