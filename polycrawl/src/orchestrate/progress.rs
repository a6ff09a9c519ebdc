//! Live progress on stderr while a crawl runs: an indicatif bar (or spinner when
//! the total is unknown) fed with the manager's status snapshots. When stderr is
//! not a terminal the bar draws nothing, so a plain line is printed every
//! [`PLAIN_EVERY`] instead (logs of scripted runs and tests stay readable).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use spool::protocol::StatusSnapshot;

/// How often a plain progress line is printed when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The progress display of one run.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    terminal: bool,
    last_plain: Instant,
    started: Instant,
}

impl Progress {
    /// A bar up to `expected` pages, or a spinner if the total is unknown.
    pub fn new(expected: Option<u64>) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = match expected {
            Some(n) => {
                let bar = ProgressBar::with_draw_target(Some(n), target);
                bar.set_style(
                    ProgressStyle::with_template(
                        "{elapsed_precise} [{bar:30}] {pos}/{len} pages  {msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                bar
            }
            None => {
                let bar = ProgressBar::with_draw_target(None, target);
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {elapsed_precise} {pos} pages  {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar
            }
        };
        bar.enable_steady_tick(Duration::from_millis(200));
        bar.set_message("starting");
        Progress {
            bar,
            terminal,
            last_plain: Instant::now(),
            started: Instant::now(),
        }
    }

    /// Shows the figures of a status snapshot.
    pub fn update(&mut self, s: &StatusSnapshot) {
        let pages = s.pages_total;
        if let Some(len) = self.bar.length() {
            if pages > len {
                self.bar.set_length(pages);
            }
        }
        self.bar.set_position(pages);
        let msg = format!(
            "{:.1} pages/s | queued {} URLs | hosts {} ready, {} waiting, {} in all",
            s.pages_per_sec,
            s.queued_urls,
            s.hosts.ready,
            s.hosts.waiting + s.hosts.backed_off,
            s.hosts.total()
        );
        if !self.terminal && self.last_plain.elapsed() >= PLAIN_EVERY {
            self.last_plain = Instant::now();
            eprintln!(
                "progress: {:.0}s {pages} pages fetched | {msg}",
                self.started.elapsed().as_secs_f64()
            );
        }
        self.bar.set_message(msg);
    }

    /// Prints a line above the bar.
    pub fn println(&self, line: &str) {
        if self.terminal {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
