//! [`SpeedHistory`]: pages per second now, over the last minute and over the last
//! hour, and the hour's chart, from samples of the pages-stored counter.
//!
//! Two rings of counts, both fixed in size: 60 one-second steps and
//! [`Speed::CHART_STEPS`] steps of [`Speed::CHART_STEP_SECS`] (one hour), plus one
//! step each still filling up, so memory is about 3.4 KiB whatever the crawl does. Each sample adds the counter's increase
//! to the step it falls in; a step the loop slept through stays at zero. Figures
//! are taken over complete steps only, so they never jump while a step fills up,
//! and over the manager's age when it is younger than the window.
//!
//! This module must never read the clock itself (the caller passes `now`, so tests
//! control time) or grow with the crawl. Cost: O(1) per sample (amortised over the
//! steps skipped), O(steps) per figure.

use spool::protocol::Speed;
use tokio::time::Instant;

/// One-second steps kept: the last minute.
const SECONDS: usize = 60;

/// A ring of counts per fixed-width step, indexed by whole steps since `start`.
/// It holds one slot more than its window, for the step still filling up.
#[derive(Debug)]
struct Ring {
    width_secs: u64,
    /// Complete steps a figure may cover.
    window: u64,
    counts: Vec<u64>,
    /// The step the newest count belongs to.
    current: u64,
}

impl Ring {
    fn new(width_secs: u64, window: usize) -> Self {
        Self {
            width_secs,
            window: window as u64,
            counts: vec![0; window + 1],
            current: 0,
        }
    }

    fn slots(&self) -> u64 {
        self.window + 1
    }

    fn slot(&self, step: u64) -> usize {
        // The remainder is below `counts.len()`, a usize.
        (step % self.slots()) as usize
    }

    /// Moves the ring to `step`, zeroing the steps passed over.
    fn advance(&mut self, step: u64) {
        if step <= self.current {
            return;
        }
        let skipped = (step - self.current).min(self.slots());
        for s in (step + 1 - skipped)..=step {
            let i = self.slot(s);
            self.counts[i] = 0;
        }
        self.current = step;
    }

    fn add(&mut self, step: u64, n: u64) {
        self.advance(step);
        let i = self.slot(step);
        self.counts[i] += n;
    }

    /// The counts of the last `n` complete steps before `step`, oldest first (fewer
    /// if the ring is younger than that or `n` exceeds the window).
    fn complete(&self, step: u64, n: u64) -> Vec<u64> {
        let n = n.min(step).min(self.window);
        (step - n..step)
            .map(|s| {
                // Steps after `current` were never written; steps a whole ring
                // before it were overwritten: both count zero.
                if s > self.current || self.current - s >= self.slots() {
                    0
                } else {
                    self.counts[self.slot(s)]
                }
            })
            .collect()
    }
}

/// The speed figures of the admin status. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct SpeedHistory {
    start: Instant,
    last_value: Option<u64>,
    seconds: Ring,
    chart: Ring,
}

impl SpeedHistory {
    /// An empty history starting at `start`.
    pub fn new(start: Instant) -> Self {
        Self {
            start,
            last_value: None,
            seconds: Ring::new(1, SECONDS),
            chart: Ring::new(Speed::CHART_STEP_SECS, Speed::CHART_STEPS),
        }
    }

    fn secs(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.start).as_secs()
    }

    /// Records the counter's value at `now` (the first sample only sets the base).
    pub fn sample(&mut self, now: Instant, value: u64) {
        let added = self.last_value.map_or(0, |last| value.saturating_sub(last));
        self.last_value = Some(value);
        let secs = self.secs(now);
        self.seconds.add(secs, added);
        self.chart.add(secs / self.chart.width_secs, added);
    }

    /// Pages per second over the last `window` complete seconds (at most 60).
    fn over_seconds(&self, now: Instant, window: u64) -> f64 {
        let counts = self.seconds.complete(self.secs(now), window);
        if counts.is_empty() {
            return 0.0;
        }
        counts.iter().sum::<u64>() as f64 / counts.len() as f64
    }

    /// Pages per second over the last few seconds ([`Speed::NOW_SECS`]).
    pub fn now_per_sec(&self, now: Instant) -> f64 {
        self.over_seconds(now, Speed::NOW_SECS)
    }

    /// Pages per second over the last minute.
    pub fn per_sec(&self, now: Instant) -> f64 {
        self.over_seconds(now, SECONDS as u64)
    }

    /// Pages per second over the last hour (complete chart steps; the last minute
    /// while not one step is complete).
    pub fn hour_per_sec(&self, now: Instant) -> f64 {
        let steps = self.chart_counts(now);
        if steps.is_empty() {
            return self.per_sec(now);
        }
        let secs = steps.len() as u64 * self.chart.width_secs;
        steps.iter().sum::<u64>() as f64 / secs as f64
    }

    fn chart_counts(&self, now: Instant) -> Vec<u64> {
        let step = self.secs(now) / self.chart.width_secs;
        self.chart.complete(step, self.chart.window)
    }

    /// Pages per second of each complete chart step of the last hour, oldest first.
    pub fn chart(&self, now: Instant) -> Vec<f32> {
        let width = self.chart.width_secs as f64;
        self.chart_counts(now)
            .into_iter()
            .map(|n| (n as f64 / width) as f32)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(t0: Instant, secs: u64) -> Instant {
        t0 + Duration::from_secs(secs)
    }

    #[test]
    fn figures_cover_complete_steps_of_their_windows() {
        let t0 = Instant::now();
        let mut h = SpeedHistory::new(t0);
        h.sample(t0, 1_000); // The base: a restart's persistent counter is not speed.
        assert_eq!(h.per_sec(t0), 0.0);
        // 10 pages/s for 30 s: 10 pages counted in each of seconds 0 to 29.
        for k in 0..30 {
            h.sample(at(t0, k) + Duration::from_millis(500), 1_000 + 10 * (k + 1));
        }
        let t30 = at(t0, 30);
        assert_eq!(h.now_per_sec(t30), 10.0);
        assert_eq!(h.per_sec(t30), 10.0, "over the 30 s the manager lived");
        assert_eq!(h.hour_per_sec(t30), 10.0);
        assert_eq!(h.chart(t30), vec![10.0, 10.0, 10.0]);
        // Then nothing: now drops at once, the minute once the busy seconds left it.
        h.sample(at(t0, 33), 1_300);
        assert_eq!(h.now_per_sec(at(t0, 33)), 4.0, "seconds 28 to 32");
        assert_eq!(h.per_sec(at(t0, 80)), 100.0 / 60.0, "seconds 20 to 79");
        h.sample(at(t0, 100), 1_300);
        let t100 = at(t0, 100);
        assert_eq!(h.now_per_sec(t100), 0.0);
        assert_eq!(h.per_sec(t100), 0.0);
        assert_eq!(h.hour_per_sec(t100), 3.0);
        let mut want = vec![10.0, 10.0, 10.0];
        want.resize(10, 0.0);
        assert_eq!(h.chart(t100), want);
        // Two hours later only the last hour is charted.
        let late = at(t0, 2 * 3600);
        h.sample(late, 1_300);
        assert_eq!(h.chart(late).len(), Speed::CHART_STEPS);
        assert!(h.chart(late).iter().all(|v| *v == 0.0));
        assert_eq!(h.hour_per_sec(late), 0.0);
    }

    #[test]
    fn a_long_sleep_clears_the_steps_it_skipped() {
        let t0 = Instant::now();
        let mut h = SpeedHistory::new(t0);
        h.sample(t0, 0);
        h.sample(at(t0, 1), 60);
        // 61 s later the ring wrapped: the old second must not count again.
        h.sample(at(t0, 62), 60);
        assert_eq!(h.per_sec(at(t0, 62)), 0.0);
        // The step still filling up never counts.
        h.sample(at(t0, 62) + Duration::from_millis(900), 600);
        assert_eq!(h.per_sec(at(t0, 62)), 0.0);
        assert_eq!(h.per_sec(at(t0, 63)), 540.0 / 60.0);
    }
}
