//! Where the crawl's time goes at the dispatch stage (issue 24). Each moment with a
//! downloader registered is one of:
//! - **fed**: every downloader window was full, or the speed target held jobs back;
//! - **held**: downloaders had room, no host was ready, and URLs were queued: every
//!   host with URLs had its requests in flight (`connections_per_host`), rested its
//!   interval, or waited for DNS or robots.txt (politeness and the crawl's shape
//!   bound the speed, not the pipeline);
//! - **starved**: downloaders had room and no URL was queued beyond those in
//!   flight: the stage before dispatch (the application's request files, their
//!   loading) did not keep up.
//!
//! The engine tells [`StageClock::note`] what each dispatch round found; a state
//! lasts until the next round, so the time between two rounds goes to the state the
//! first one found. Time before the first downloader registered counts nowhere.
//! At the end the manager prints the figures on one stdout line
//! ([`StageTimes::line`]), which `polycrawl crawl` turns into its `starved:` line.
//!
//! Cost: O(1) per dispatch round. This module must never look into the frontier:
//! the engine says what a round found.

use std::time::Duration;

use tokio::time::Instant;

/// What one dispatch round found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Feed {
    /// No downloader is registered: nothing is measured.
    NoDownloaders,
    /// Every downloader window is full, or the speed target held jobs back.
    Fed,
    /// Downloaders had room, fewer jobs came, and URLs were queued.
    Held,
    /// Downloaders had room, fewer jobs came, and no URL was queued but those in
    /// flight.
    Starved,
}

/// The dispatch stage's clock.
#[derive(Debug)]
pub(crate) struct StageClock {
    state: Feed,
    since: Instant,
    fed: Duration,
    held: Duration,
    starved: Duration,
}

impl StageClock {
    /// A clock that has measured nothing yet.
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            state: Feed::NoDownloaders,
            since: now,
            fed: Duration::ZERO,
            held: Duration::ZERO,
            starved: Duration::ZERO,
        }
    }

    /// A dispatch round at `now` found `feed`.
    pub(crate) fn note(&mut self, now: Instant, feed: Feed) {
        self.close(now);
        self.state = feed;
    }

    /// The figures up to `now`.
    pub(crate) fn times(&mut self, now: Instant) -> StageTimes {
        self.close(now);
        StageTimes {
            measured: self.fed + self.held + self.starved,
            held: self.held,
            starved: self.starved,
        }
    }

    fn close(&mut self, now: Instant) {
        let spell = now.saturating_duration_since(self.since);
        match self.state {
            Feed::NoDownloaders => {}
            Feed::Fed => self.fed += spell,
            Feed::Held => self.held += spell,
            Feed::Starved => self.starved += spell,
        }
        self.since = now;
    }
}

/// The dispatch stage's figures over the manager's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageTimes {
    /// Time with at least one downloader registered.
    pub measured: Duration,
    /// Of it, time with downloader room, no host ready and URLs queued.
    pub held: Duration,
    /// Of it, time with downloader room and no URL queued but those in flight.
    pub starved: Duration,
}

impl StageTimes {
    /// `manager stages measured_ms=N held_ms=N starved_ms=N`, the line the manager
    /// prints when it stops (`polycrawl` reads it).
    pub fn line(&self) -> String {
        format!(
            "manager stages measured_ms={} held_ms={} starved_ms={}",
            self.measured.as_millis(),
            self.held.as_millis(),
            self.starved.as_millis()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spell_goes_to_the_state_its_round_found() {
        let t0 = Instant::now();
        let mut clock = StageClock::new(t0);
        let ms = Duration::from_millis;
        clock.note(t0 + ms(100), Feed::Starved); // 100 ms before any downloader: nowhere
        clock.note(t0 + ms(130), Feed::Fed); // 30 ms starved
        clock.note(t0 + ms(200), Feed::Starved); // 70 ms fed
        clock.note(t0 + ms(210), Feed::Held); // 10 ms starved
        clock.note(t0 + ms(260), Feed::NoDownloaders); // 50 ms held
        let times = clock.times(t0 + ms(500)); // 240 ms without downloaders
        assert_eq!(times.starved, ms(40));
        assert_eq!(times.held, ms(50));
        assert_eq!(times.measured, ms(160));
        assert_eq!(
            times.line(),
            "manager stages measured_ms=160 held_ms=50 starved_ms=40"
        );
    }
}
