//! `amanctl index`'s progress: a bar (indicatif) on a terminal, first over files, then over
//! chunks embedded; plain lines elsewhere (a log, a pipe, CI), one when a phase starts and
//! after that at most one a second, when the count moved.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use indicatif::{ProgressBar, ProgressStyle};

/// What the progress shows now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Files,
    /// The pass after a quick one: every file searchable, now parsed.
    Parsing,
    Vectors,
}

impl Phase {
    fn label(self) -> &'static str {
        match self {
            Phase::Files => "files",
            Phase::Parsing => "files parsed",
            Phase::Vectors => "chunks embedded",
        }
    }
}

/// The progress of one `amanctl index`.
pub struct Progress {
    bar: Option<ProgressBar>,
    phase: Option<Phase>,
    last_line: Option<Instant>,
    last_done: u64,
}

impl Progress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "  {bar:40.cyan/blue} {pos}/{len} {msg} ({per_sec}, {eta} left)",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            phase: None,
            last_line: None,
            last_done: 0,
        }
    }

    /// Show `status`: files until the first pass is done, then the files parsed after a
    /// quick pass, then the vectors.
    pub fn show(&mut self, status: &pb::ProjectStatus) {
        let (phase, done, total) = match &status.vectors {
            _ if status.passes > 0 && status.provisional_files > 0 => {
                (Phase::Parsing, status.files_done, status.files_total)
            }
            Some(v) if status.passes > 0 => (Phase::Vectors, v.embedded, v.embedded + v.pending),
            _ => (Phase::Files, status.files_done, status.files_total),
        };
        let new_phase = self.phase != Some(phase);
        self.phase = Some(phase);
        match &self.bar {
            Some(bar) => {
                if new_phase {
                    bar.reset();
                    bar.set_message(phase.label());
                }
                bar.set_length(total);
                bar.set_position(done);
            }
            None => {
                let due = self
                    .last_line
                    .is_none_or(|at| at.elapsed() >= Duration::from_secs(1));
                if new_phase || (due && done != self.last_done) {
                    eprintln!("  {done}/{total} {}", phase.label());
                    self.last_line = Some(Instant::now());
                    self.last_done = done;
                }
            }
        }
    }

    /// Take the bar off the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
