//! The engine on tokio's paused clock: pacing and the wake logic are about time, so
//! they are tested in virtual time, exactly and without real waiting.
//!
//! A test drives the engine the way `run.rs`'s loop does, without sockets: a
//! burst of events ([`Engine::handle`]) and then [`Engine::step`], or a sleep
//! until [`Engine::next_wake`] and then a step. A fake downloader holds the other
//! end of its outbox ([`Sent`]) and answers every `FetchBatch` at once: each job
//! reported stored, then committed. It sends no heartbeat, so its window stays
//! `jobs_per_downloader_factor` x `ASSUMED_CONCURRENCY` (32) and the speed control
//! never changes its connection count: the token bucket is what bounds dispatch.
//!
//! Which clock each part reads:
//! - the token bucket (`pacing.rs`), the speed control's interval (`speed/`), the
//!   engine's own timers (progress, status, checkpoints) and `next_wake` read
//!   tokio's [`Instant`]: the paused clock, which these tests move;
//! - the frontier's politeness, DNS and robots.txt ages, request scans and outcome
//!   files read the wall clock in ms ([`wall_clock_ms`]), which the paused clock
//!   does not move. So the frontier is made ready before the engine starts (every
//!   host resolved, its robots.txt a 404, all URLs loaded) and runs with per-host
//!   and per-IP intervals of 0: a host is ready again as soon as its report is in,
//!   whatever the wall clock says, and 64 hosts with 10 URLs each are always more
//!   than the bucket lets out. Frontier timers that are due in wall time are not
//!   reached here; `next_wake` still sleeps until them (capped at one second),
//!   never less.
//!
//! These tests must never wait on the real clock nor open a socket: a test that
//! takes real seconds has stopped testing the logic in virtual time.
//!
//! Every figure is exact: the bucket starts full (one second of tokens), then a
//! token comes every `1 / rate` s. Each test stops at a half token past a whole
//! second, so float rounding of the bucket cannot move the count by one.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use spool::formats::{Hints, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{
    AdminCommand, AdminReply, FetchJob, FetchPurpose, FetchReport, Hello, Message, Resolution,
    Role, TargetSource, Token,
};
use spool::publish::Publisher;
use spool::{AppId, ComponentId, Spool};
use tokio::time::{Instant, sleep_until};

use super::Engine;
use crate::FrontierConfig;
use crate::frontier::{Frontier, wall_clock_ms};
use crate::service::config::ManagerConfig;
use crate::service::conn::{ConnId, Event, Sent};

/// Hosts in the test crawl, each on an address of its own.
const HOSTS: usize = 64;
/// URLs per host: 640 in all, more than any test dispatches.
const URLS_PER_HOST: usize = 10;
/// Half a token at 20 pages/s: where the tests stop counting.
const HALF_TOKEN: Duration = Duration::from_millis(25);
/// The fake downloader's connection.
const DOWNLOADER: ConnId = 1;
/// An operator tool's connection.
const ADMIN: ConnId = 2;

/// An engine over a ready frontier, a fake downloader, and what it was sent.
struct Crawl {
    /// The engine under test.
    engine: Engine,
    /// The fake downloader's end of its outbox.
    downloader: Sent,
    /// Every `FetchBatch`: when, and how many jobs.
    batches: Vec<(Instant, usize)>,
    /// Loop turns that began with a sleep until `next_wake` (not with an event).
    wakes: u64,
    /// Each of those sleeps.
    sleeps: Vec<Duration>,
    /// The spool and the state directory (last: removed after the database closed).
    _dir: tempfile::TempDir,
}

impl Crawl {
    /// An engine at `rate` pages/s whose frontier holds `urls_per_host` URLs of
    /// each of [`HOSTS`] hosts, ready; the fake downloader has joined.
    fn start(rate: f64, urls_per_host: usize) -> Crawl {
        let dir = tempfile::tempdir().unwrap();
        let (frontier, config, robots_dir) = ready_frontier(dir.path(), rate, urls_per_host);
        let mut engine =
            Engine::new(frontier, config, robots_dir, true, Duration::from_secs(10)).unwrap();
        let (outbox, downloader) = Sent::pair();
        engine
            .handle(Event::Joined {
                conn: DOWNLOADER,
                hello: hello(Role::Downloader, "d1"),
                outbox,
            })
            .unwrap();
        Crawl {
            engine,
            downloader,
            batches: Vec::new(),
            wakes: 0,
            sleeps: Vec::new(),
            _dir: dir,
        }
    }

    /// Runs the loop until `until`: a sleep until `next_wake` and a step, and the
    /// downloader's answers as event turns. At `until` one more step runs, as any
    /// event arriving then would cause.
    async fn run_until(&mut self, until: Instant) {
        self.engine.step().unwrap();
        loop {
            self.answer();
            let now = Instant::now();
            let wake = self.engine.next_wake();
            assert!(
                wake > now,
                "next_wake is not in the future: the loop would spin"
            );
            if wake > until {
                sleep_until(until).await;
                self.engine.step().unwrap();
                self.answer();
                return;
            }
            sleep_until(wake).await;
            self.sleeps.push(wake - now);
            self.wakes += 1;
            self.engine.step().unwrap();
        }
    }

    /// The fake downloader reads its outbox and answers every batch at once: all
    /// jobs stored, then committed; each answer is one event turn (a burst, then
    /// a step), as in `run.rs`.
    fn answer(&mut self) {
        loop {
            let mut jobs: Vec<FetchJob> = Vec::new();
            for msg in self.downloader.take() {
                match msg {
                    Message::FetchBatch { jobs: batch } => {
                        self.batches.push((Instant::now(), batch.len()));
                        jobs.extend(batch);
                    }
                    Message::Bye { reason, detail } => {
                        panic!("the engine dropped the downloader: {reason}: {detail}")
                    }
                    _ => {}
                }
            }
            if jobs.is_empty() {
                return;
            }
            for job in &jobs {
                assert_eq!(job.purpose, FetchPurpose::Page, "robots.txt known already");
            }
            let file = "00-d1-00000000000000000001.warc.gz".to_owned();
            let reports = jobs.iter().map(|job| stored(job, &file)).collect();
            self.received(DOWNLOADER, Message::FetchReports { reports });
            let ids = jobs.iter().map(|job| job.job).collect();
            self.received(DOWNLOADER, Message::Committed { file, jobs: ids });
            self.engine.step().unwrap();
        }
    }

    /// One step, and the jobs it sent the fake downloader (left unanswered).
    fn first_jobs(&mut self) -> Vec<FetchJob> {
        self.engine.step().unwrap();
        let mut jobs = Vec::new();
        for msg in self.downloader.take() {
            if let Message::FetchBatch { jobs: batch } = msg {
                jobs.extend(batch);
            }
        }
        jobs
    }

    /// `conn` sent `msg`.
    fn received(&mut self, conn: ConnId, msg: Message) {
        self.engine.handle(Event::Received { conn, msg }).unwrap();
    }

    /// Jobs dispatched in all.
    fn dispatched(&self) -> usize {
        self.batches.iter().map(|(_, n)| n).sum()
    }

    /// Jobs dispatched in `from..to`.
    fn dispatched_in(&self, from: Instant, to: Instant) -> usize {
        self.batches
            .iter()
            .filter(|(at, _)| (from..to).contains(at))
            .map(|(_, n)| n)
            .sum()
    }

    /// The most jobs dispatched in one second, over the windows that start at a
    /// batch at or after `from`.
    fn busiest_second_from(&self, from: Instant) -> usize {
        self.batches
            .iter()
            .filter(|(at, _)| *at >= from)
            .map(|(at, _)| self.dispatched_in(*at, *at + Duration::from_secs(1)))
            .max()
            .unwrap_or(0)
    }
}

/// A frontier at `rate` pages/s in `dir` with no politeness interval, with the
/// manager config around it and the spool's `robots/`. With `urls_per_host`
/// above 0 its [`HOSTS`] hosts are loaded, resolved and have their robots.txt (a
/// 404: allow all); with 0 it is empty.
fn ready_frontier(
    dir: &Path,
    rate: f64,
    urls_per_host: usize,
) -> (Frontier, ManagerConfig, PathBuf) {
    let spool = Spool::new(dir.join("spool"));
    let frontier_config = FrontierConfig {
        target_pages_per_sec: rate,
        interval_ms: 0,
        min_interval_ms: 0,
        ip_max_in_flight: 0,
        ip_min_interval_ms: 0,
        allow_private_addresses: true,
        ..FrontierConfig::default()
    };
    let config = ManagerConfig {
        state_dir: dir.join("state"),
        frontier: frontier_config.clone(),
        ..ManagerConfig::default()
    };
    config.validate().unwrap();
    let mut frontier =
        Frontier::open(&dir.join("state/db"), spool.clone(), frontier_config).unwrap();
    let robots_dir = spool.robots().unwrap().path().to_owned();
    if urls_per_host == 0 {
        return (frontier, config, robots_dir);
    }
    publish_urls(&spool, urls_per_host);
    let wall = wall_clock_ms();
    frontier.tick(wall).unwrap();
    let names = frontier.hosts_needing_dns(wall);
    assert_eq!(names.len(), HOSTS, "every host loaded and waiting for DNS");
    for (i, name) in names.iter().enumerate() {
        let ip = IpAddr::from([10, 0, (i >> 8) as u8, i as u8 + 1]);
        let addrs = Resolution::Addresses {
            addrs: vec![ip],
            ttl_secs: 86_400,
        };
        frontier.on_dns(name, &addrs, wall).unwrap();
    }
    let robots = frontier.next_jobs(wall, HOSTS).unwrap();
    assert_eq!(robots.len(), HOSTS, "one robots.txt job per host");
    for job in robots {
        assert_eq!(job.purpose, FetchPurpose::Robots);
        frontier
            .on_robots_fetched(job.job, 404, Some(b""), None, wall)
            .unwrap();
    }
    (frontier, config, robots_dir)
}

/// Publishes one request file of `urls_per_host` URLs of each of [`HOSTS`] hosts.
fn publish_urls(spool: &Spool, urls_per_host: usize) {
    let app = AppId::new("bfs").unwrap();
    let publisher = Publisher::new(
        spool.requests(&app).unwrap(),
        ComponentId::new("test").unwrap(),
    )
    .unwrap();
    let priority = Priority::new(10).unwrap();
    let mut w = RequestWriter::new(Vec::new(), RequestHeader { priority }).unwrap();
    for p in 0..urls_per_host {
        for h in 0..HOSTS {
            w.write(&format!("http://h{h}.test/p{p}"), &Hints::default())
                .unwrap();
        }
    }
    publisher
        .publish(priority, FileKind::Requests, &w.finish().unwrap())
        .unwrap();
}

fn hello(role: Role, id: &str) -> Hello {
    Hello::new(
        role,
        ComponentId::new(id).unwrap(),
        Token::new("test-token").unwrap(),
    )
}

/// A 200 stored in `file`.
fn stored(job: &FetchJob, file: &str) -> FetchReport {
    let mut report = test_support::reports::stored(job.job, 200, file);
    let page = test_support::reports::page_mut(&mut report);
    page.wire_bytes = 100;
    page.body_bytes = 10;
    report
}

/// At 20 pages/s for 10 virtual seconds: one second of tokens at once, then one
/// job every 50 ms, to the job; no second holds more than rate + burst, and once
/// the saved-up second is spent none holds more than the rate (+1 for a token
/// whose wake rounds up to the next millisecond).
#[tokio::test(start_paused = true)]
async fn the_target_holds_in_virtual_time() {
    let real = std::time::Instant::now();
    let rate = 20;
    let mut crawl = Crawl::start(f64::from(rate), URLS_PER_HOST);
    let t0 = Instant::now();
    crawl
        .run_until(t0 + Duration::from_secs(10) + HALF_TOKEN)
        .await;

    assert_eq!(
        crawl.dispatched_in(t0, t0 + Duration::from_millis(1)),
        20,
        "the bucket starts full"
    );
    // 20 + floor(20 x 10.025) = 20 + 200.
    assert_eq!(crawl.dispatched(), 220);
    assert!(
        crawl.batches[1..].iter().all(|(_, n)| *n == 1),
        "after the start, each token is dispatched on its own as it comes"
    );
    assert_eq!(crawl.engine.figures.metrics.jobs_dispatched, 220);
    assert_eq!(crawl.engine.figures.metrics.pages_stored, 220);
    let busiest = crawl.busiest_second_from(t0);
    assert!(
        busiest <= 2 * rate as usize,
        "{busiest} jobs in one second: above rate + burst"
    );
    let steady = crawl.busiest_second_from(t0 + Duration::from_secs(1));
    assert!(
        steady <= rate as usize + 1,
        "{steady} jobs in one second after the burst"
    );
    assert!(real.elapsed() < Duration::from_secs(5), "no real waiting");
}

/// An operator's `SetSpeed` (an admin connection's control message) changes the
/// bucket's rate from that moment: 5 s at 20 pages/s, then 5 s at 50, exact.
#[tokio::test(start_paused = true)]
async fn set_speed_changes_the_rate_from_then_on() {
    let mut crawl = Crawl::start(20.0, URLS_PER_HOST);
    let t0 = Instant::now();
    let t1 = t0 + Duration::from_secs(5) + HALF_TOKEN;
    crawl.run_until(t1).await;
    // 20 + floor(20 x 5.025) = 20 + 100; half a token is left in the bucket.
    assert_eq!(crawl.dispatched(), 120);

    let (outbox, mut admin) = Sent::pair();
    let joined = Event::Joined {
        conn: ADMIN,
        hello: hello(Role::Admin, "op"),
        outbox,
    };
    crawl.engine.handle(joined).unwrap();
    let command = AdminCommand::SetSpeed {
        pages_per_sec: 50.0,
    };
    crawl.received(ADMIN, Message::Admin(command));
    match admin.take().as_slice() {
        [Message::AdminReply(AdminReply::Done { .. })] => {}
        other => panic!("SetSpeed not done: {other:?}"),
    }
    let target = crawl.engine.speed.target();
    assert_eq!(
        (target.pages_per_sec, target.source),
        (50.0, TargetSource::Operator)
    );

    crawl.run_until(t1 + Duration::from_secs(5)).await;
    // From t1: floor(0.5 + 50 x 5) = 250 more, none of them early.
    assert_eq!(
        crawl.dispatched_in(t0, t1),
        120,
        "nothing more before the change"
    );
    assert_eq!(crawl.dispatched(), 120 + 250);
    let steady = crawl.busiest_second_from(t1 + Duration::from_secs(1));
    assert!(steady <= 51, "{steady} jobs in one second at 50 pages/s");
    assert!(steady >= 49, "{steady} jobs in one second at 50 pages/s");
}

/// The wake logic never spins. Held by the bucket, the engine sleeps until the
/// next token: never longer than one token's time (1 ms rounding aside), and it
/// wakes about once per token plus its timers (progress every 1 s, speed
/// interval every 2 s). With nothing to dispatch it sleeps until its timers
/// only: one wake a second, never "now" in a loop.
#[tokio::test(start_paused = true)]
async fn next_wake_is_the_next_token_or_timer_and_never_spins() {
    let mut busy = Crawl::start(20.0, URLS_PER_HOST);
    let t0 = Instant::now();
    busy.run_until(t0 + Duration::from_secs(10) + HALF_TOKEN)
        .await;
    let longest = busy.sleeps.iter().max().copied().unwrap_or_default();
    assert!(
        longest <= Duration::from_millis(51),
        "slept {longest:?} with URLs ready and a token due every 50 ms"
    );
    // 200 tokens, 10 progress rounds and 5 speed intervals at most.
    assert!(busy.wakes >= 200, "{} wakes for 200 tokens", busy.wakes);
    assert!(
        busy.wakes <= 215,
        "{} wakes in 10 s at 20 pages/s",
        busy.wakes
    );

    let mut idle = Crawl::start(20.0, 0);
    let t0 = Instant::now();
    idle.run_until(t0 + Duration::from_secs(10)).await;
    assert_eq!(idle.dispatched(), 0);
    // The progress round (every 1 s) is the soonest timer: one wake a second.
    assert!(
        idle.wakes <= 11,
        "{} wakes in 10 s with nothing to do",
        idle.wakes
    );
    assert!(
        idle.wakes >= 5,
        "{} wakes: the timers still run",
        idle.wakes
    );
    assert!(
        idle.sleeps.iter().all(|s| *s >= Duration::from_millis(500)),
        "short sleeps with nothing to do: {:?}",
        idle.sleeps
    );
}

/// A downloader that leaves while the engine is behind on its events: its pages
/// were reported stored, then it sent their `Committed` and `Bye`, and its
/// connection's task ended, but those two still wait in the event queue when a
/// step dispatches to it.
/// The send fails (its outbox is closed); the downloader must stay registered
/// until its `Left`, which comes after them, so its stored pages are committed
/// and only the jobs it never read go back. Dropping it at the failed send put
/// the stored pages back in the queues and ignored the commit: after a SIGTERM
/// the resumed demo fetched them again.
#[tokio::test(start_paused = true)]
async fn a_downloader_that_left_keeps_its_last_commit() {
    let mut crawl = Crawl::start(20.0, URLS_PER_HOST);
    let jobs = crawl.first_jobs();
    assert_eq!(jobs.len(), 20, "one second of tokens at 20 pages/s");
    let file = "00-d1-00000000000000000001.warc.gz".to_owned();
    let reports = jobs.iter().map(|job| stored(job, &file)).collect();
    let ids: Vec<_> = jobs.iter().map(|job| job.job).collect();
    crawl.received(DOWNLOADER, Message::FetchReports { reports });
    crawl.engine.step().unwrap();

    // `Committed` and `Bye` were read by the connection's task, which then
    // ended; they are not handled yet.
    crawl.downloader.close();
    tokio::time::advance(Duration::from_secs(1)).await;
    // Steps run before the engine gets to those messages: one dispatches 20
    // more jobs into the closed outbox, the next would reap a doomed connection.
    crawl.engine.step().unwrap();
    crawl.engine.step().unwrap();
    assert_eq!(crawl.engine.figures.metrics.jobs_dispatched, 40);
    crawl.received(DOWNLOADER, Message::Committed { file, jobs: ids });
    crawl
        .engine
        .handle(Event::Left {
            conn: DOWNLOADER,
            why: "connection closed by the peer".to_owned(),
        })
        .unwrap();

    let metrics = &crawl.engine.figures.metrics;
    assert_eq!(
        metrics.pages_requeued, 0,
        "stored and committed pages requeued"
    );
    assert_eq!(
        metrics.jobs_reclaimed, 20,
        "the jobs it never read come back"
    );
    assert_eq!(
        crawl.engine.frontier.stats().urls_queued,
        (HOSTS * URLS_PER_HOST - 20) as u64,
        "every URL but the 20 committed is queued"
    );
}

/// A downloader that stops on its own (SIGTERM) says so with a `Status`: from
/// then on it is sent no job, though tokens and URLs are there, and the jobs it
/// hands back wait for another downloader. Before, it was sent jobs until it
/// left, handed each back, and was sent them again.
#[tokio::test(start_paused = true)]
async fn a_downloader_that_says_it_drains_gets_no_more_jobs() {
    let mut crawl = Crawl::start(20.0, URLS_PER_HOST);
    let jobs = crawl.first_jobs();
    assert_eq!(jobs.len(), 20);
    let draining = spool::protocol::ComponentState {
        draining: true,
        ..Default::default()
    };
    crawl.received(DOWNLOADER, Message::Status(Box::new(draining)));
    let reports = jobs
        .iter()
        .map(|job| FetchReport {
            job: job.job,
            result: spool::protocol::FetchResult::Returned,
        })
        .collect();
    crawl.received(DOWNLOADER, Message::FetchReports { reports });
    for _ in 0..10 {
        tokio::time::advance(Duration::from_secs(1)).await;
        crawl.engine.step().unwrap();
    }
    let sent: Vec<Message> = crawl.downloader.take();
    assert!(
        !sent.iter().any(|m| matches!(m, Message::FetchBatch { .. })),
        "jobs sent to a draining downloader: {sent:?}"
    );
    assert_eq!(crawl.engine.figures.metrics.jobs_dispatched, 20);
    assert_eq!(
        crawl.engine.frontier.stats().urls_queued,
        (HOSTS * URLS_PER_HOST) as u64,
        "the returned jobs are queued again"
    );
}
