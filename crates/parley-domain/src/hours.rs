//! Business hours: when a site's team is there, in the site's own time
//! zone (IANA, from the zone database bundled with `jiff`, so a change of
//! daylight saving time moves nothing a site set). A site without hours
//! is always open.

use std::collections::BTreeSet;

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::error::FieldErrors;

/// Openings a week may have.
pub const OPENINGS_MAX: usize = 50;
/// The longest time zone name a form takes and an error repeats (IANA's
/// longest is 32).
pub const MAX_TIME_ZONE_CHARS: usize = 64;
/// Closed dates a site may list.
pub const CLOSED_DATES_MAX: usize = 400;
/// How far ahead the next opening is looked for.
const LOOK_AHEAD_DAYS: i32 = 400;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Day {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

impl Day {
    pub const NAMES: [&'static str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

    fn of(weekday: Weekday) -> Self {
        match weekday {
            Weekday::Monday => Self::Monday,
            Weekday::Tuesday => Self::Tuesday,
            Weekday::Wednesday => Self::Wednesday,
            Weekday::Thursday => Self::Thursday,
            Weekday::Friday => Self::Friday,
            Weekday::Saturday => Self::Saturday,
            Weekday::Sunday => Self::Sunday,
        }
    }
}

/// One weekly opening: `open` to `close` on `day`, as `HH:MM` in the
/// site's time zone; `close` may be `24:00`. An opening past midnight is
/// two openings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opening {
    pub day: Day,
    pub open: String,
    pub close: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusinessHours {
    /// An IANA time zone such as `Europe/Berlin`.
    pub time_zone: String,
    pub weekly: Vec<Opening>,
    /// `YYYY-MM-DD` dates (in the site's time zone) without any opening.
    #[serde(default)]
    pub closed_dates: Vec<String>,
}

/// Whether the team is there now, and when it is next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Availability {
    pub online: bool,
    /// When closed: the start of the next opening (none within a year,
    /// or no opening at all: `None`).
    pub next_open_at: Option<Timestamp>,
}

impl Availability {
    pub const ALWAYS: Availability = Availability { online: true, next_open_at: None };
}

/// Minutes since midnight of `HH:MM` (`24:00` is 1440 when `end`).
fn minutes(text: &str, end: bool) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    if h.len() != 2 || m.len() != 2 || !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    match (h, m) {
        (24, 0) if end => Some(1440),
        (0..=23, 0..=59) => Some(h * 60 + m),
        _ => None,
    }
}

impl BusinessHours {
    /// Every problem, under `field`'s name.
    pub fn check(&self, field: &str) -> FieldErrors {
        let mut errors = FieldErrors::new();
        if TimeZone::get(&self.time_zone).is_err() {
            errors.add(
                field,
                format!(
                    "time_zone: {} is not an IANA time zone such as Europe/Berlin",
                    self.time_zone.chars().take(MAX_TIME_ZONE_CHARS).collect::<String>()
                ),
            );
        }
        if self.weekly.len() > OPENINGS_MAX {
            errors.add(field, format!("weekly: at most {OPENINGS_MAX} openings"));
        }
        for (i, o) in self.weekly.iter().enumerate() {
            match (minutes(&o.open, false), minutes(&o.close, true)) {
                (Some(open), Some(close)) if open < close => {}
                (Some(_), Some(_)) => {
                    errors.add(field, format!("weekly item {}: close must come after open (split an opening past midnight in two)", i + 1))
                }
                _ => errors.add(field, format!("weekly item {}: open and close are HH:MM, close up to 24:00", i + 1)),
            }
        }
        if self.closed_dates.len() > CLOSED_DATES_MAX {
            errors.add(field, format!("closed_dates: at most {CLOSED_DATES_MAX} dates"));
        }
        for d in &self.closed_dates {
            if d.len() != 10 || d.parse::<Date>().is_err() {
                errors.add(field, format!("closed_dates: {} is not a date such as 2026-12-25", d.chars().take(32).collect::<String>()));
            }
        }
        errors
    }

    /// `at` on the site's clock, as `2026-11-30 09:00 (Europe/Berlin)`:
    /// the same in every language, for what the server writes.
    pub fn local(&self, at: Timestamp) -> String {
        let local = TimeZone::get(&self.time_zone)
            .ok()
            .zip(jiff::Timestamp::from_millisecond(at.as_millis()).ok())
            .map(|(tz, instant)| instant.to_zoned_datetime(tz).strftime("%Y-%m-%d %H:%M").to_string());
        format!("{} ({})", local.unwrap_or_else(|| at.to_rfc3339()), self.time_zone)
    }

    /// Whether the team is there at `now`, and when it is next.
    pub fn availability(&self, now: Timestamp) -> Availability {
        let (Ok(tz), Ok(instant)) = (TimeZone::get(&self.time_zone), jiff::Timestamp::from_millisecond(now.as_millis())) else {
            return Availability::ALWAYS;
        };
        let closed: BTreeSet<Date> = self.closed_dates.iter().filter_map(|d| d.parse().ok()).collect();
        let mut openings: Vec<(Day, u32, u32)> =
            self.weekly.iter().filter_map(|o| Some((o.day, minutes(&o.open, false)?, minutes(&o.close, true)?))).collect();
        openings.sort();
        let here = instant.to_zoned_datetime(tz.clone());
        let today = here.date();
        let minute = minute_of_day(&here);
        let day = Day::of(today.weekday());
        let online = !closed.contains(&today) && openings.iter().any(|(d, open, close)| *d == day && (*open..*close).contains(&minute));
        if online {
            return Availability::ALWAYS;
        }
        Availability { online: false, next_open_at: next_opening(&tz, instant, today, &closed, &openings) }
    }
}

/// The first opening that starts after `instant`.
fn next_opening(
    tz: &TimeZone,
    instant: jiff::Timestamp,
    today: Date,
    closed: &BTreeSet<Date>,
    openings: &[(Day, u32, u32)],
) -> Option<Timestamp> {
    if openings.is_empty() {
        return None;
    }
    let mut date = today;
    for _ in 0..LOOK_AHEAD_DAYS {
        if !closed.contains(&date) {
            let day = Day::of(date.weekday());
            for (_, open, close) in openings.iter().filter(|(d, ..)| *d == day) {
                let (h, m) = (i8::try_from(open / 60).ok()?, i8::try_from(open % 60).ok()?);
                let start = opening_instant(tz, date.at(h, m, 0, 0))?;
                // An opening the skipped hour swallows whole never opens.
                let shown = start.to_zoned_datetime(tz.clone());
                if shown.date() == date && minute_of_day(&shown) >= *close {
                    continue;
                }
                if start > instant {
                    return Some(Timestamp::from_millis(start.as_millisecond()));
                }
            }
        }
        date = date.tomorrow().ok()?;
    }
    None
}

/// Minutes since midnight on the site's clock, as openings count them.
fn minute_of_day(at: &jiff::ZonedDateTime) -> u32 {
    u32::from(at.hour().unsigned_abs()) * 60 + u32::from(at.minute().unsigned_abs())
}

/// When the site's clock first shows `wall` or later: that moment, or,
/// for a time the clock skips (moved forward), the moment it jumps, which
/// is when `availability` starts calling the site open.
fn opening_instant(tz: &TimeZone, wall: jiff::civil::DateTime) -> Option<jiff::Timestamp> {
    let ambiguous = tz.to_ambiguous_timestamp(wall);
    match ambiguous.offset() {
        jiff::tz::AmbiguousOffset::Gap { .. } => {
            let before_the_jump = ambiguous.earlier().ok()?;
            tz.following(before_the_jump).next().map(|t| t.timestamp())
        }
        _ => ambiguous.compatible().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hours(weekly: &[(Day, &str, &str)], closed: &[&str]) -> BusinessHours {
        BusinessHours {
            time_zone: "Europe/Berlin".into(),
            weekly: weekly.iter().map(|(day, open, close)| Opening { day: *day, open: (*open).into(), close: (*close).into() }).collect(),
            closed_dates: closed.iter().map(|d| (*d).to_owned()).collect(),
        }
    }

    /// Milliseconds of an RFC 3339 instant.
    fn at(text: &str) -> Timestamp {
        Timestamp::from_millis(text.parse::<jiff::Timestamp>().unwrap().as_millisecond())
    }

    #[test]
    fn open_and_closed_follow_the_sites_clock_across_daylight_saving_time() {
        let weekdays = hours(&[(Day::Monday, "09:00", "17:00"), (Day::Friday, "09:00", "12:30")], &[]);
        // Monday 30 March 2026 is summer time (UTC+2): 09:30 there is 07:30 UTC.
        assert!(weekdays.availability(at("2026-03-30T07:30:00Z")).online);
        assert!(!weekdays.availability(at("2026-03-30T06:59:00Z")).online, "08:59 there");
        // Monday 23 March 2026 is winter time (UTC+1): the same 09:30 is 08:30 UTC.
        assert!(weekdays.availability(at("2026-03-23T08:30:00Z")).online);
        assert!(!weekdays.availability(at("2026-03-23T07:30:00Z")).online, "08:30 there, before the opening");

        // Friday 12:30 closes; next is Monday 09:00 (after the clocks change on Sunday 29 March).
        let friday = weekdays.availability(at("2026-03-27T11:45:00Z"));
        assert_eq!(friday, Availability { online: false, next_open_at: Some(at("2026-03-30T07:00:00Z")) });
    }

    #[test]
    fn an_opening_the_clock_skips_starts_when_the_clock_jumps() {
        // Sunday 29 March 2026, Berlin: 02:00 becomes 03:00 (01:00 UTC).
        let h = hours(&[(Day::Sunday, "02:30", "10:00")], &[]);
        let saturday = h.availability(at("2026-03-28T12:00:00Z"));
        assert_eq!(saturday.next_open_at, Some(at("2026-03-29T01:00:00Z")));
        assert!(h.availability(at("2026-03-29T01:00:00Z")).online, "open as soon as it says so");
        assert!(!h.availability(at("2026-03-29T00:59:00Z")).online);
        let swallowed = hours(&[(Day::Sunday, "02:00", "02:45"), (Day::Sunday, "09:00", "10:00")], &[]);
        assert_eq!(swallowed.availability(at("2026-03-28T12:00:00Z")).next_open_at, Some(at("2026-03-29T07:00:00Z")));
    }

    #[test]
    fn closed_dates_skip_their_openings_and_24_00_ends_the_day() {
        let h = hours(&[(Day::Thursday, "00:00", "24:00"), (Day::Friday, "10:00", "11:00")], &["2026-12-24"]);
        // Thursday 24 December 2026 is closed; Friday 25th opens at 10:00 (UTC+1).
        let christmas_eve = h.availability(at("2026-12-24T12:00:00Z"));
        assert_eq!(christmas_eve, Availability { online: false, next_open_at: Some(at("2026-12-25T09:00:00Z")) });
        assert!(h.availability(at("2026-12-31T22:59:00Z")).online, "23:59 on a Thursday");
        assert!(!h.availability(at("2026-12-31T23:00:00Z")).online, "midnight ends it");
    }

    #[test]
    fn no_openings_is_closed_without_a_next_and_bad_hours_are_named() {
        let none = hours(&[], &[]);
        assert_eq!(none.availability(at("2026-01-05T10:00:00Z")), Availability { online: false, next_open_at: None });
        let bad = BusinessHours {
            time_zone: "Mars/Olympus".into(),
            weekly: vec![
                Opening { day: Day::Monday, open: "17:00".into(), close: "09:00".into() },
                Opening { day: Day::Monday, open: "9:00".into(), close: "25:00".into() },
                Opening { day: Day::Monday, open: "+9:00".into(), close: "10:00".into() },
            ],
            closed_dates: vec!["2026-02-30".into()],
        };
        let errors = bad.check("business_hours");
        let all: Vec<&String> = errors.fields().values().flatten().collect();
        assert_eq!(all.len(), 5, "{all:?}");
        assert!(hours(&[(Day::Monday, "09:00", "24:00")], &["2026-12-25"]).check("h").is_empty());
    }
}
