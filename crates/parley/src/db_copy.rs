//! `parley db copy`: the storage layer copies, this draws its progress and
//! prints what it did.

use std::io::Write;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use parley_storage::{CopyError, CopyReport, Progress};

use crate::cli::DbCopy;

/// One bar over every row of every table. indicatif hides it when
/// standard error is not a terminal, so logs and scripts get no bar.
struct Bar(ProgressBar);

impl Bar {
    fn new() -> Self {
        let bar = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {human_pos}/{human_len} rows, {eta} left: {msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        Self(bar)
    }
}

impl Progress for Bar {
    fn start(&self, total_rows: u64) {
        self.0.set_length(total_rows);
    }

    fn table(&self, name: &str, _rows: u64) {
        self.0.set_message(name.to_owned());
    }

    fn copied(&self, rows: u64) {
        self.0.inc(rows);
    }
}

/// Blocking: run it where blocking is allowed (`spawn_blocking`).
pub fn run(args: &DbCopy) -> ExitCode {
    let bar = Bar::new();
    let copied = parley_storage::copy(&args.from, &args.to, &bar);
    bar.0.finish_and_clear();
    match copied {
        Ok(report) => {
            print_report(&report);
            ExitCode::SUCCESS
        }
        Err(e @ CopyError::Url { .. }) => {
            eprintln!("parley: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("parley: the copy failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Written, not printed: output piped into a closed reader (`| head`)
/// must not turn a finished copy into a panic.
fn print_report(report: &CopyReport) {
    let width = report.tables.iter().map(|t| t.name.len()).max().unwrap_or(0);
    let mut out = std::io::stdout().lock();
    let _ =
        writeln!(out, "Copied {} rows in {} tables; every table has as many rows as in the source:", report.rows(), report.tables.len());
    for t in &report.tables {
        let _ = writeln!(out, "  {:width$}  {:>10}", t.name, t.rows);
    }
    if report.tables.iter().any(|t| t.name == "attachments" && t.rows > 0) {
        let _ = writeln!(
            out,
            "The attachments' rows were copied, not their files: point the new service's PARLEY_FILES_URL at the same \
             store, or copy the folder (or bucket) it names as it is (see docs/attachments.md)."
        );
    }
}
