//! [`ClaimPace`]: when the crawl loop may claim page batches.
//!
//! Every page batch costs its fixed share at both ends, whatever its size: the
//! downloader creates, fsyncs and renames it; the application claims it, reads it,
//! moves it into the repository (two synced catalog writes, an index file), and
//! each claim tends to end in a seen-set merge and a request file. The downloaders
//! keep batches large by holding an application's next batch while its previous one
//! is still unclaimed (DESIGN.md section 2, "eager when idle, batched when busy").
//! An application that claims every batch the moment it appears defeats that rule
//! whenever it is quick, which is exactly what a split crawl's parts are: each sees
//! a share of the pages, so they came in batches of 17-20 pages instead of 260, and
//! the crawl spent 1.3-1.4 times the CPU per page of one part (BENCHMARKS.md,
//! issue 24, "Four parts").
//!
//! So claims are paced: at most one claim every `claim_interval`, except when the
//! crawl is short of this application's URLs (the manager's last progress report
//! says its queue holds less than a couple of rounds of what is in flight, or no
//! report came yet), when new links are worth more than batching. The batches a
//! pause leaves in the folder are claimed together at its end, and the downloader's
//! batch behind them grows meanwhile. A pause adds at most `claim_interval` to the
//! time from a fetch to its links being requested.
//!
//! This type never sleeps and never looks at a folder: it only answers "may the
//! loop claim now" and "how long until it may". O(1) time and memory.

use std::time::{Duration, Instant};

use spool::protocol::AppProgress;

/// The queue is short when it holds fewer URLs than this many times what is in
/// flight (but at least [`SHORT_QUEUE_MIN`]).
const SHORT_QUEUE_ROUNDS: u64 = 2;

/// A queue below this many URLs is always short.
const SHORT_QUEUE_MIN: u64 = 256;

/// When the crawl loop may claim page batches (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct ClaimPace {
    interval: Duration,
    /// When batches were last claimed.
    last: Option<Instant>,
}

impl ClaimPace {
    /// Claims at most once per `interval` while the crawl has URLs to spare;
    /// `Duration::ZERO` claims whenever there is room.
    pub(crate) fn new(interval: Duration) -> ClaimPace {
        ClaimPace {
            interval,
            last: None,
        }
    }

    /// Whether the loop may claim now. `progress` is the manager's last report on
    /// this application (`None`: none yet).
    pub(crate) fn may_claim(&self, now: Instant, progress: Option<&AppProgress>) -> bool {
        self.wait(now).is_none() || short_of_urls(progress)
    }

    /// The loop claimed at least one batch at `now`.
    pub(crate) fn claimed(&mut self, now: Instant) {
        self.last = Some(now);
    }

    /// How long until the pace allows a claim whatever the queue (`None`: now).
    pub(crate) fn wait(&self, now: Instant) -> Option<Duration> {
        let due = self.last? + self.interval;
        (due > now).then(|| due - now)
    }
}

/// Whether the manager is short of this application's URLs, so that links should
/// reach it without delay.
fn short_of_urls(progress: Option<&AppProgress>) -> bool {
    match progress {
        None => true,
        Some(p) => {
            let enough = (SHORT_QUEUE_ROUNDS * p.in_flight).max(SHORT_QUEUE_MIN);
            p.queued_urls < enough
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool::AppId;

    fn report(queued: u64, in_flight: u64) -> AppProgress {
        let mut p = AppProgress::new(AppId::new("bfs".to_owned()).unwrap());
        p.queued_urls = queued;
        p.in_flight = in_flight;
        p
    }

    #[test]
    fn claims_at_once_until_the_first_claim() {
        let pace = ClaimPace::new(Duration::from_millis(50));
        let now = Instant::now();
        assert!(pace.may_claim(now, Some(&report(100_000, 50))));
        assert_eq!(pace.wait(now), None);
    }

    #[test]
    fn a_long_queue_waits_out_the_interval() {
        let mut pace = ClaimPace::new(Duration::from_millis(50));
        let t0 = Instant::now();
        pace.claimed(t0);
        let busy = report(10_000, 200);
        assert!(!pace.may_claim(t0 + Duration::from_millis(10), Some(&busy)));
        assert_eq!(
            pace.wait(t0 + Duration::from_millis(10)),
            Some(Duration::from_millis(40))
        );
        assert!(pace.may_claim(t0 + Duration::from_millis(50), Some(&busy)));
        assert_eq!(pace.wait(t0 + Duration::from_millis(60)), None);
    }

    #[test]
    fn a_short_queue_or_no_report_claims_at_once() {
        let mut pace = ClaimPace::new(Duration::from_millis(50));
        let t0 = Instant::now();
        pace.claimed(t0);
        let soon = t0 + Duration::from_millis(1);
        assert!(pace.may_claim(soon, None));
        // Fewer than two rounds of what is in flight.
        assert!(pace.may_claim(soon, Some(&report(399, 200))));
        assert!(!pace.may_claim(soon, Some(&report(400, 200))));
        // Small crawls: below the floor whatever is in flight.
        assert!(pace.may_claim(soon, Some(&report(255, 0))));
        assert!(!pace.may_claim(soon, Some(&report(256, 0))));
    }

    #[test]
    fn a_zero_interval_never_waits() {
        let mut pace = ClaimPace::new(Duration::ZERO);
        let t0 = Instant::now();
        pace.claimed(t0);
        assert!(pace.may_claim(t0, Some(&report(1_000_000, 1))));
        assert_eq!(pace.wait(t0), None);
    }
}
