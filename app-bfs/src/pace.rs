//! [`Pace`]: when the crawl loop claims page batches and merges its seen set.
//!
//! Every page batch costs its fixed share at both ends, whatever its size: the
//! downloader creates, fsyncs and renames it; the application claims it, reads it,
//! moves it into the repository (two synced catalog writes, an index file). Every
//! merge of the seen set rewrites its whole file and ends in a request file the
//! manager loads. The downloaders keep batches large by holding an application's
//! next batch while its previous one is still unclaimed, and the seen set keeps
//! merges large by buffering while a merge runs (DESIGN.md section 2, "eager when
//! idle, batched when busy"). An application that claims every batch the moment it
//! appears and merges after each one defeats both whenever it is quick, which is
//! exactly what a split crawl's parts are: each sees a share of the pages, so they
//! came in batches of 17-20 pages instead of 260, merged 20 times as often, and the
//! crawl spent 1.3-1.4 times the CPU per page of one part (BENCHMARKS.md, issue
//! 24, "Four parts").
//!
//! So both are paced while the crawl has URLs to spare, and eager when it is short
//! of them (the manager's last progress report says this application's queue holds
//! less than a couple of rounds of what is in flight, or no report came yet):
//! - **Claims**: at most one every `claim_interval`. The batches a pause leaves in
//!   the folder are claimed together at its end, and the downloader's batch behind
//!   them grows meanwhile.
//! - **Merges**: once the buffer holds 1/[`MERGE_RATIO`] of the keys on disk
//!   (so merging costs O(`MERGE_RATIO`) key copies per new key, not O(file) per
//!   batch), or [`MERGE_DELAY`] after the last merge when no page batch is being
//!   read (a batch's links are then milliseconds away and go into the same
//!   merge). A manager short of URLs gets a merge at once, batch being read or
//!   not: under steady load the readers are never all idle, and merging only
//!   between reads let the manager run dry before each breadth-first round.
//!
//! A link thus reaches the manager at most `claim_interval` + [`MERGE_DELAY`] later
//! than it would unpaced, and only while the manager holds two rounds of URLs.
//!
//! This type never sleeps and never looks at a folder or a file: it only answers
//! "may the loop claim (merge) now" and "how long until it may". O(1) time and
//! memory.

use std::time::{Duration, Instant};

use spool::protocol::AppProgress;

/// The queue is short when it holds fewer URLs than this many times what is in
/// flight (but at least [`SHORT_QUEUE_MIN`]).
const SHORT_QUEUE_ROUNDS: u64 = 2;

/// A queue below this many URLs is always short.
const SHORT_QUEUE_MIN: u64 = 256;

/// An idle merge waits, while the crawl has URLs to spare, until the buffer holds
/// at least 1/`MERGE_RATIO` of the keys on disk...
pub(crate) const MERGE_RATIO: u64 = 16;

/// ... or this long after the last merge.
pub(crate) const MERGE_DELAY: Duration = Duration::from_millis(500);

/// When the crawl loop may claim page batches and merge (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Pace {
    interval: Duration,
    /// When batches were last claimed.
    last: Option<Instant>,
    /// When the last merge started (or the pace was made).
    last_merge: Instant,
}

impl Pace {
    /// Claims at most once per `interval` while the crawl has URLs to spare;
    /// `Duration::ZERO` claims whenever there is room and merges whenever idle.
    pub(crate) fn new(interval: Duration) -> Pace {
        Pace {
            interval,
            last: None,
            last_merge: Instant::now(),
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

    /// Whether the loop may merge `buffered` keys into a set of `on_disk` now.
    /// While a page batch is being `read`, its links are milliseconds away and
    /// would go into the same merge, so only a buffer of 1/[`MERGE_RATIO`] of the
    /// file or a manager short of URLs starts one then: under steady load the
    /// readers are never all idle, and a loop that merged only between reads
    /// published a breadth-first round only once the manager had run dry
    /// (BENCHMARKS.md, issue 39, session 33).
    pub(crate) fn may_merge(
        &self,
        now: Instant,
        progress: Option<&AppProgress>,
        buffered: u64,
        on_disk: u64,
        reading: bool,
    ) -> bool {
        let due = buffered >= on_disk / MERGE_RATIO || short_of_urls(progress);
        let idle_due = self.interval.is_zero() || now >= self.last_merge + MERGE_DELAY;
        buffered > 0 && (due || (!reading && idle_due))
    }

    /// A merge started at `now`.
    pub(crate) fn merged(&mut self, now: Instant) {
        self.last_merge = now;
    }

    /// How long until a merge of buffered keys is due whatever the queue.
    pub(crate) fn merge_wait(&self, now: Instant) -> Duration {
        (self.last_merge + MERGE_DELAY).saturating_duration_since(now)
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
        let pace = Pace::new(Duration::from_millis(50));
        let now = Instant::now();
        assert!(pace.may_claim(now, Some(&report(100_000, 50))));
        assert_eq!(pace.wait(now), None);
    }

    #[test]
    fn a_long_queue_waits_out_the_interval() {
        let mut pace = Pace::new(Duration::from_millis(50));
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
        let mut pace = Pace::new(Duration::from_millis(50));
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
    fn idle_merges_wait_for_a_share_of_the_file_or_the_delay_unless_urls_are_short() {
        let mut pace = Pace::new(Duration::from_millis(50));
        let t0 = Instant::now();
        pace.merged(t0);
        let busy = report(10_000, 200);
        let soon = t0 + Duration::from_millis(10);
        assert!(
            !pace.may_merge(soon, Some(&busy), 0, 0, false),
            "nothing buffered"
        );
        assert!(
            pace.may_merge(soon, Some(&busy), 5, 0, false),
            "an empty set merges"
        );
        assert!(!pace.may_merge(soon, Some(&busy), 99, 1_600, false));
        assert!(
            pace.may_merge(soon, Some(&busy), 100, 1_600, false),
            "1/16 of the file"
        );
        assert!(
            pace.may_merge(soon, Some(&report(10, 200)), 1, 1_600, false),
            "short"
        );
        assert!(pace.may_merge(soon, None, 1, 1_600, false), "no report yet");
        assert_eq!(
            pace.merge_wait(soon),
            MERGE_DELAY - Duration::from_millis(10)
        );
        let late = t0 + MERGE_DELAY;
        assert!(
            pace.may_merge(late, Some(&busy), 1, 1_600, false),
            "the delay is over"
        );
        assert_eq!(pace.merge_wait(late), Duration::ZERO);
    }

    #[test]
    fn while_a_batch_is_read_only_a_due_merge_starts() {
        let mut pace = Pace::new(Duration::from_millis(50));
        let t0 = Instant::now();
        pace.merged(t0);
        let busy = report(10_000, 200);
        let late = t0 + MERGE_DELAY;
        assert!(
            !pace.may_merge(late, Some(&busy), 99, 1_600, true),
            "the delay waits for the batch's links"
        );
        assert!(pace.may_merge(late, Some(&busy), 99, 1_600, false));
        assert!(
            pace.may_merge(late, Some(&busy), 100, 1_600, true),
            "1/16 of the file"
        );
        assert!(
            pace.may_merge(t0, Some(&report(10, 200)), 1, 1_600, true),
            "short"
        );
        assert!(!pace.may_merge(t0, Some(&report(10, 200)), 0, 1_600, true));
        let eager = Pace::new(Duration::ZERO);
        assert!(!eager.may_merge(t0, Some(&busy), 1, 1_600, true));
        assert!(eager.may_merge(t0, Some(&busy), 1, 1_600, false));
    }

    #[test]
    fn a_zero_interval_never_waits() {
        let mut pace = Pace::new(Duration::ZERO);
        let t0 = Instant::now();
        pace.claimed(t0);
        assert!(pace.may_claim(t0, Some(&report(1_000_000, 1))));
        assert_eq!(pace.wait(t0), None);
        pace.merged(t0);
        assert!(pace.may_merge(t0, Some(&report(1_000_000, 1)), 1, 1_000_000, false));
    }
}
