//! The figures: per route requests per second, latency percentiles,
//! failures, the same-run reference and its ratio, and the targets; as a
//! table and as JSON.
//!
//! On a shared machine one measurement can be a fifth off the next, so a
//! run measures every closed-loop route in several rounds, Parley and
//! reference in turn, and reports the round with the median throughput,
//! with the spread of all rounds beside it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::load::{RouteStats, Stats};
use crate::process::Usage;

/// What a figure must reach.
#[derive(Clone, Copy, Debug, Default)]
pub struct Target {
    /// Requests per second as a share of the reference's.
    pub min_ratio: Option<f64>,
    pub max_p99_ms: Option<f64>,
}

/// One route measured once.
pub struct Row {
    pub scenario: String,
    pub route: String,
    pub stats: RouteStats,
    pub seconds: f64,
    /// The reference route this one is compared with.
    pub reference: Option<String>,
    pub target: Target,
}

impl Row {
    pub fn rps(&self) -> f64 {
        self.stats.count() as f64 / self.seconds.max(1e-9)
    }

    fn ms(&self, q: f64) -> f64 {
        self.stats.latency.value_at_quantile(q) as f64 / 1000.0
    }
}

/// A route over every round: its median round, the spread, the reference.
struct Figure<'a> {
    median: &'a Row,
    rounds: Vec<f64>,
    /// The reference's name and median requests per second.
    reference: Option<(String, f64)>,
}

impl Figure<'_> {
    fn ratio(&self) -> Option<f64> {
        self.reference.as_ref().map(|(_, r)| self.median.rps() / r.max(1e-9))
    }

    /// Whether the route meets its target (`None` without one).
    fn met(&self) -> Option<bool> {
        let (t, row) = (self.median.target, self.median);
        if t.min_ratio.is_none() && t.max_p99_ms.is_none() {
            return None;
        }
        let ratio_ok = t.min_ratio.is_none_or(|min| self.ratio().is_some_and(|r| r >= min));
        let p99_ok = t.max_p99_ms.is_none_or(|max| row.ms(0.99) <= max);
        Some(ratio_ok && p99_ok && row.stats.errors == 0 && row.stats.non_2xx == 0)
    }

    fn spread(&self) -> String {
        let min = self.rounds.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.rounds.iter().copied().fold(0.0, f64::max);
        if self.rounds.len() < 2 { String::new() } else { format!("{min:.0}-{max:.0}") }
    }

    fn target(&self) -> String {
        let mut target = Vec::new();
        if let Some(min) = self.median.target.min_ratio {
            target.push(format!(">= {min}x"));
        }
        if let Some(max) = self.median.target.max_p99_ms {
            target.push(format!("p99 <= {max} ms"));
        }
        let verdict = match self.met() {
            Some(true) => " met",
            Some(false) => " NOT met",
            None => "",
        };
        format!("{}{verdict}", target.join(", "))
    }

    fn json(&self) -> Value {
        let r = self.median;
        json!({
            "scenario": r.scenario,
            "route": r.route,
            "requests": r.stats.count(),
            "requests_per_second": r.rps(),
            "rounds_requests_per_second": self.rounds,
            "p50_ms": r.ms(0.50),
            "p95_ms": r.ms(0.95),
            "p99_ms": r.ms(0.99),
            "max_ms": r.stats.latency.max() as f64 / 1000.0,
            "non_2xx": r.stats.non_2xx,
            "errors": r.stats.errors,
            "reconnects": r.stats.reconnects,
            "reference": self.reference.as_ref().map(|(name, rps)| json!({"name": name, "requests_per_second": rps})),
            "ratio": self.ratio(),
            "target": {"min_ratio": r.target.min_ratio, "max_p99_ms": r.target.max_p99_ms},
            "target_met": self.met(),
        })
    }
}

/// Resource use of the server during one scenario, in one round.
pub struct UsageRow {
    pub scenario: String,
    pub usage: Usage,
    pub seconds: f64,
    /// Requests the scenario made, for CPU time per request.
    pub requests: u64,
    pub max_rss_mb: Option<f64>,
}

impl UsageRow {
    fn cpu_per_request(&self) -> f64 {
        self.usage.cpu_seconds * 1e6 / (self.requests.max(1) as f64)
    }
}

#[derive(Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub usage: Vec<UsageRow>,
    /// Other findings: name and value (webhook throughput, lag, …).
    pub notes: Vec<(String, Value)>,
}

/// The middle element by `key` (the upper one of an even count).
fn median_by<'a, T>(items: &[&'a T], key: impl Fn(&T) -> f64) -> &'a T {
    let mut sorted = items.to_vec();
    sorted.sort_by(|a, b| key(a).total_cmp(&key(b)));
    sorted[sorted.len() / 2]
}

impl Report {
    /// Adds the row of `route` if it was measured.
    pub fn add(&mut self, scenario: &str, route: &str, stats: &Stats, seconds: f64, reference: Option<&str>, target: Target) {
        if let Some(s) = stats.get(route) {
            self.rows.push(Row {
                scenario: scenario.to_owned(),
                route: route.to_owned(),
                stats: s.clone(),
                seconds,
                reference: reference.map(str::to_owned),
                target,
            });
        }
    }

    /// Rows grouped by scenario and route, in the order first measured.
    fn grouped(&self) -> Vec<Vec<&Row>> {
        let mut order: Vec<(&str, &str)> = Vec::new();
        let mut groups: BTreeMap<(&str, &str), Vec<&Row>> = BTreeMap::new();
        for r in &self.rows {
            let key = (r.scenario.as_str(), r.route.as_str());
            if !groups.contains_key(&key) {
                order.push(key);
            }
            groups.entry(key).or_default().push(r);
        }
        order.into_iter().filter_map(|k| groups.remove(&k)).collect()
    }

    fn figures(&self) -> Vec<Figure<'_>> {
        let groups = self.grouped();
        let reference_rps =
            |name: &str| groups.iter().find(|g| g[0].scenario == "reference" && g[0].route == name).map(|g| median_by(g, Row::rps).rps());
        groups
            .iter()
            .map(|g| {
                let median = median_by(g, Row::rps);
                let reference = median.reference.as_ref().and_then(|n| reference_rps(n).map(|rps| (n.clone(), rps)));
                Figure { median, rounds: g.iter().map(|r| r.rps()).collect(), reference }
            })
            .collect()
    }

    /// Per scenario: CPU per request of the median round, the highest peak
    /// RSS of any round, and the limit.
    fn usage_by_scenario(&self) -> Vec<(&str, &UsageRow, f64, Option<f64>)> {
        let mut order: Vec<&str> = Vec::new();
        for u in &self.usage {
            if !order.contains(&u.scenario.as_str()) {
                order.push(&u.scenario);
            }
        }
        order
            .into_iter()
            .map(|name| {
                let rounds: Vec<&UsageRow> = self.usage.iter().filter(|u| u.scenario == name).collect();
                let median = median_by(&rounds, UsageRow::cpu_per_request);
                let peak = rounds.iter().map(|u| u.usage.peak_rss_mb).fold(0.0, f64::max);
                (name, median, peak, median.max_rss_mb)
            })
            .collect()
    }

    pub fn print(&self) {
        println!();
        println!(
            "{:<12} {:<32} {:>8} {:>13} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6}  {:<28} {:>6}  target",
            "scenario",
            "route",
            "req/s",
            "rounds",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
            "non2xx",
            "errors",
            "reference (req/s)",
            "ratio"
        );
        for f in self.figures() {
            let r = f.median;
            let reference = f.reference.as_ref().map(|(n, rps)| format!("{n} ({rps:.0})")).unwrap_or_default();
            let ratio = f.ratio().map(|x| format!("{x:.2}x")).unwrap_or_default();
            println!(
                "{:<12} {:<32} {:>8.0} {:>13} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>6} {:>6}  {:<28} {:>6}  {}",
                r.scenario,
                r.route,
                r.rps(),
                f.spread(),
                r.ms(0.50),
                r.ms(0.95),
                r.ms(0.99),
                r.stats.latency.max() as f64 / 1000.0,
                r.stats.non_2xx,
                r.stats.errors,
                reference,
                ratio,
                f.target(),
            );
        }
        for f in self.figures().iter().filter(|f| f.median.stats.reconnects > 0) {
            let r = f.median;
            println!("note: {} {}: {} calls found their connection closed and reconnected", r.scenario, r.route, r.stats.reconnects);
        }
        println!();
        println!("{:<12} {:>14} {:>18} {:>14}  target", "scenario", "server CPU s", "CPU us / request", "peak RSS MB");
        for (name, median, peak, limit) in self.usage_by_scenario() {
            let target = limit.map(|m| format!("<= {m} MB{}", if peak <= m { " met" } else { " NOT met" }));
            println!(
                "{:<12} {:>14.1} {:>18.0} {:>14.1}  {}",
                name,
                median.usage.cpu_seconds,
                median.cpu_per_request(),
                peak,
                target.unwrap_or_default()
            );
        }
        for (name, value) in &self.notes {
            println!("{name}: {value}");
        }
    }

    pub fn json(&self) -> Value {
        json!({
            "routes": self.figures().iter().map(Figure::json).collect::<Vec<_>>(),
            "server": self.usage_by_scenario().iter().map(|(name, u, peak, limit)| json!({
                "scenario": name,
                "cpu_seconds": u.usage.cpu_seconds,
                "peak_rss_mb": peak,
                "seconds": u.seconds,
                "requests": u.requests,
                "cpu_us_per_request": u.cpu_per_request(),
                "max_rss_mb": limit,
            })).collect::<Vec<_>>(),
            "notes": self.notes.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
        })
    }
}
