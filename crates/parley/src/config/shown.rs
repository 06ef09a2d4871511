//! How `parley check` writes a setting's default: the value a variable
//! takes when it is not set, in the form one would set it.

use std::net::SocketAddr;
use std::time::Duration;

use ipnet::IpNet;
use parley_domain::limits::Rate;
use parley_domain::push::PushContent;
use parley_worker::push::ServiceAccount;
use parley_worker::push::jwt::EcKey;

use super::{ExtraRoots, LogFormat};

/// A setting's value, written as its variable takes it.
pub trait Shown {
    fn shown(&self) -> String;
}

/// `d` as the configuration writes durations: the largest whole unit.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match (d.subsec_millis(), s) {
        (ms, _) if ms > 0 => format!("{}ms", d.as_millis()),
        (_, s) if s > 0 && s.is_multiple_of(86_400) => format!("{}d", s / 86_400),
        (_, s) if s > 0 && s.is_multiple_of(3600) => format!("{}h", s / 3600),
        (_, s) if s > 0 && s.is_multiple_of(60) => format!("{}m", s / 60),
        (_, s) => format!("{s}s"),
    }
}

impl Shown for Duration {
    fn shown(&self) -> String {
        duration(*self)
    }
}

impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> String {
        self.as_ref().map_or_else(|| "none".into(), Shown::shown)
    }
}

impl<T: Shown> Shown for Vec<T> {
    fn shown(&self) -> String {
        if self.is_empty() { "none".into() } else { self.iter().map(Shown::shown).collect::<Vec<_>>().join(",") }
    }
}

impl Shown for Rate {
    fn shown(&self) -> String {
        format!("{}/{}", self.count, duration(self.period))
    }
}

impl Shown for LogFormat {
    fn shown(&self) -> String {
        self.as_str().into()
    }
}

impl Shown for PushContent {
    fn shown(&self) -> String {
        self.as_str().into()
    }
}

/// Written with `Display`.
macro_rules! displayed {
    ($($t:ty),*) => {$(
        impl Shown for $t {
            fn shown(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
displayed!(String, usize, u32, bool, SocketAddr, IpNet, url::Url);

/// What a file held: shown as set (its path is the variable's value).
macro_rules! loaded {
    ($($t:ty),*) => {$(
        impl Shown for $t {
            fn shown(&self) -> String {
                "(loaded)".into()
            }
        }
    )*};
}
loaded!(EcKey, ServiceAccount, ExtraRoots);
