//! The client session driver (`spool::protocol::client::run`) against
//! test-support's fake manager (a real TCP listener on 127.0.0.1 that speaks the
//! server handshake): it reconnects after the
//! server drops it, its back-off grows and resets after a session that lasted,
//! heartbeats keep their cadence and carry the role's load, and a shutdown or a
//! `Drain` ends within the grace with the right `Bye`.
//!
//! The test role resolves nothing: each `ResolveBatch` starts a task that sleeps
//! for the role's job time and is then answered with an empty `ResolveAnswers`.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::sync::{Arc, Mutex};
use std::time::Duration;

use spool::ComponentId;
use spool::protocol::client::{self, ClientRole, ControlSettings, Link, Outcome, Step, Stop};
use spool::protocol::{
    ByeReason, Connection, Load, Message, ProtocolError, RequestId, Role, Token, Welcome,
};
use test_support::manager::FakeManager;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep, timeout};
use tokio_util::sync::CancellationToken;

fn token(s: &str) -> Token {
    Token::new(s).unwrap()
}

/// test-support's fake manager expecting `s3cret`: heartbeats every
/// `heartbeat_ms`, a silent peer dropped after 20 of them.
async fn manager(heartbeat_ms: u64) -> FakeManager {
    FakeManager::with_heartbeats("s3cret", heartbeat_ms, heartbeat_ms * 20).await
}

fn control(addr: &str) -> ControlSettings {
    let mut control = ControlSettings::new(addr, token("s3cret"), ComponentId::new("t-1").unwrap());
    control.reconnect_min = Duration::from_millis(50);
    control.reconnect_max = Duration::from_millis(400);
    control
}

/// What the role saw, in order.
type Seen = Arc<Mutex<Vec<String>>>;

struct TestRole {
    job_time: Duration,
    jobs: JoinSet<RequestId>,
    seen: Seen,
}

impl TestRole {
    fn new(job_time: Duration) -> (Self, Seen) {
        let seen = Seen::default();
        let role = Self {
            job_time,
            jobs: JoinSet::new(),
            seen: Arc::clone(&seen),
        };
        (role, seen)
    }

    fn note(&self, what: String) {
        self.seen.lock().unwrap().push(what);
    }
}

impl ClientRole for TestRole {
    type Work = RequestId;
    type Error = String;
    const ROLE: Role = Role::Resolver;
    const NAME: &'static str = "test";

    async fn on_connected(
        &mut self,
        _link: &Link,
        _welcome: &Welcome,
        session: u64,
    ) -> Result<(), ProtocolError> {
        self.note(format!("connected {session}"));
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.jobs.len()
    }

    fn load(&mut self) -> Load {
        Load {
            in_flight: 7,
            ..Load::default()
        }
    }

    async fn next_work(&mut self) -> RequestId {
        match self.jobs.join_next().await {
            Some(Ok(request)) => request,
            _ => std::future::pending().await,
        }
    }

    async fn on_work(&mut self, link: &Link, request: RequestId) -> Step<String> {
        let answers = Message::ResolveAnswers {
            request,
            answers: Vec::new(),
        };
        match link.send(&answers).await {
            Ok(()) => Step::Continue,
            Err(e) => Step::Lost(e.to_string()),
        }
    }

    async fn on_message(&mut self, _link: &Link, msg: Message) -> Step<String> {
        match msg {
            Message::ResolveBatch { request, .. } => {
                let time = self.job_time;
                self.jobs.spawn(async move {
                    sleep(time).await;
                    request
                });
                Step::Continue
            }
            Message::SetConcurrency { limit } => Step::Fail(format!("limit {limit}")),
            other => Step::Unexpected(other.kind()),
        }
    }

    async fn begin_drain(&mut self, _link: &Link) -> Step<String> {
        self.note("drain".into());
        Step::Continue
    }

    async fn wind_down(&mut self, _link: &Link) -> Step<String> {
        if self.jobs.is_empty() {
            Step::Leave("all done".into())
        } else {
            Step::Continue
        }
    }

    async fn grace_over(&mut self, _link: &Link) -> Step<String> {
        let left = self.jobs.len();
        self.jobs.abort_all();
        Step::Leave(format!("handed back {left}"))
    }

    fn on_disconnected(&mut self) {
        self.note("disconnected".into());
        self.jobs = JoinSet::new();
    }
}

/// The next connection to `manager`, handshake done.
async fn accept(manager: &FakeManager) -> Connection {
    manager.accept().await.0
}

/// The next message other than a heartbeat (bounded).
async fn next_non_heartbeat(conn: &mut Connection) -> Message {
    test_support::manager::next_non_heartbeat(conn).await.0
}

type Running = tokio::task::JoinHandle<(Result<Outcome, Stop<String>>, TestRole)>;

fn start(control: ControlSettings, mut role: TestRole, shutdown: &CancellationToken) -> Running {
    let shutdown = shutdown.clone();
    tokio::spawn(async move {
        let outcome = client::run(&control, &mut role, &shutdown).await;
        (outcome, role)
    })
}

#[tokio::test]
async fn reconnects_after_the_server_drops_the_connection() {
    let manager = manager(50).await;
    let addr = manager.addr().to_string();

    let (role, seen) = TestRole::new(Duration::from_secs(60));
    let shutdown = CancellationToken::new();
    let running = start(control(&addr), role, &shutdown);

    let mut first = accept(&manager).await;
    first
        .send(&Message::ResolveBatch {
            request: RequestId(1),
            hosts: vec!["a.example".into()],
        })
        .await
        .unwrap();
    // A heartbeat after the batch proves the batch was read.
    assert!(matches!(
        first.recv().await.unwrap(),
        Some(Message::Heartbeat { .. })
    ));
    drop(first);
    let mut second = accept(&manager).await;
    assert!(matches!(
        second.recv().await.unwrap(),
        Some(Message::Heartbeat { .. })
    ));
    shutdown.cancel();
    // No work in flight: it leaves at once with ShuttingDown.
    match next_non_heartbeat(&mut second).await {
        Message::Bye { reason, detail } => {
            assert_eq!(reason, ByeReason::ShuttingDown);
            assert_eq!(detail, "all done");
        }
        other => panic!("expected Bye, got {other:?}"),
    }
    let (outcome, role) = running.await.unwrap();
    assert_eq!(outcome.unwrap(), Outcome::ShutDown);
    assert!(
        role.jobs.is_empty(),
        "the lost connection's work was dropped"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        ["connected 1", "disconnected", "connected 2", "drain"]
    );
}

#[tokio::test]
async fn backoff_grows_and_resets_after_a_session_that_lasted() {
    let manager = manager(50).await;
    let addr = manager.addr().to_string();

    let (role, _seen) = TestRole::new(Duration::from_secs(60));
    let shutdown = CancellationToken::new();
    let running = start(control(&addr), role, &shutdown);

    // Four short sessions: pauses of about 50, 100, 200, 400 ms (+ up to 25 %).
    let mut gaps = Vec::new();
    drop(accept(&manager).await);
    for _ in 0..4 {
        let dropped = Instant::now();
        drop(accept(&manager).await);
        gaps.push(dropped.elapsed());
    }
    let ms: Vec<u128> = gaps.iter().map(Duration::as_millis).collect();
    for (got, base) in ms.iter().zip([50, 100, 200, 400]) {
        assert!(
            (base..base + base / 4 + 100).contains(got),
            "gaps {ms:?} ms"
        );
    }
    // A session that lasts reconnect_max (400 ms) resets the pause to 50 ms.
    let kept = accept(&manager).await;
    sleep(Duration::from_millis(500)).await;
    drop(kept);
    let dropped = Instant::now();
    drop(accept(&manager).await);
    let after_reset = dropped.elapsed();
    assert!(
        after_reset < Duration::from_millis(160),
        "{after_reset:?} after a long session (gaps {ms:?} ms)"
    );
    shutdown.cancel();
    let (outcome, _) = running.await.unwrap();
    assert_eq!(outcome.unwrap(), Outcome::ShutDown);
}

#[tokio::test]
async fn heartbeats_keep_their_cadence_and_carry_the_load() {
    let manager = manager(50).await;
    let addr = manager.addr().to_string();

    let (role, _seen) = TestRole::new(Duration::from_secs(60));
    let shutdown = CancellationToken::new();
    let running = start(control(&addr), role, &shutdown);

    let mut conn = accept(&manager).await;
    let started = Instant::now();
    let mut beats = 0;
    while started.elapsed() < Duration::from_millis(520) {
        match timeout(Duration::from_millis(200), conn.recv()).await {
            Ok(Ok(Some(Message::Heartbeat { load }))) => {
                assert_eq!(load.in_flight, 7, "the role's load");
                beats += 1;
            }
            other => panic!("expected a heartbeat, got {other:?}"),
        }
    }
    // One at once, then one every 50 ms: about 11 in 520 ms.
    assert!((8..=13).contains(&beats), "{beats} heartbeats in 520 ms");
    shutdown.cancel();
    let (outcome, _) = running.await.unwrap();
    assert_eq!(outcome.unwrap(), Outcome::ShutDown);
}

#[tokio::test]
async fn shutdown_hands_back_running_work_at_the_end_of_the_grace() {
    let manager = manager(50).await;
    let addr = manager.addr().to_string();

    let (role, seen) = TestRole::new(Duration::from_secs(60));
    let shutdown = CancellationToken::new();
    let mut settings = control(&addr);
    settings.shutdown_grace = Duration::from_millis(300);
    let running = start(settings, role, &shutdown);

    let mut conn = accept(&manager).await;
    conn.send(&Message::ResolveBatch {
        request: RequestId(1),
        hosts: vec!["a.example".into()],
    })
    .await
    .unwrap();
    // Two heartbeats (50 ms apart) after the batch: the batch was read.
    for _ in 0..2 {
        assert!(matches!(
            conn.recv().await.unwrap(),
            Some(Message::Heartbeat { .. })
        ));
    }
    let asked = Instant::now();
    shutdown.cancel();
    match next_non_heartbeat(&mut conn).await {
        Message::Bye { reason, detail } => {
            assert_eq!(reason, ByeReason::ShuttingDown);
            assert_eq!(detail, "handed back 1");
        }
        other => panic!("expected Bye, got {other:?}"),
    }
    let took = asked.elapsed();
    assert!(
        (Duration::from_millis(290)..Duration::from_millis(1500)).contains(&took),
        "left after {took:?}, grace 300 ms"
    );
    let (outcome, _) = running.await.unwrap();
    assert_eq!(outcome.unwrap(), Outcome::ShutDown);
    assert_eq!(*seen.lock().unwrap(), ["connected 1", "drain"]);
}

#[tokio::test]
async fn drain_lets_running_work_finish_within_the_grace() {
    let manager = manager(50).await;
    let addr = manager.addr().to_string();

    let (role, _seen) = TestRole::new(Duration::from_millis(150));
    let shutdown = CancellationToken::new();
    let running = start(control(&addr), role, &shutdown);

    let mut conn = accept(&manager).await;
    for request in [RequestId(1), RequestId(2)] {
        conn.send(&Message::ResolveBatch {
            request,
            hosts: vec!["a.example".into()],
        })
        .await
        .unwrap();
    }
    conn.send(&Message::Drain { grace_ms: 5_000 })
        .await
        .unwrap();
    let asked = Instant::now();
    let mut answered = Vec::new();
    loop {
        match next_non_heartbeat(&mut conn).await {
            Message::ResolveAnswers { request, .. } => answered.push(request),
            Message::Bye { reason, detail } => {
                assert_eq!(reason, ByeReason::Drained);
                assert_eq!(detail, "all done");
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    answered.sort_by_key(|r| r.0);
    assert_eq!(answered, [RequestId(1), RequestId(2)]);
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    let (outcome, _) = running.await.unwrap();
    assert_eq!(outcome.unwrap(), Outcome::Drained);
}

#[tokio::test]
async fn silence_unexpected_messages_and_failures() {
    let manager = manager(20).await;
    let addr = manager.addr().to_string();
    // The manager says it beats every 20 ms; after 400 ms of silence we give up.
    let (role, seen) = TestRole::new(Duration::from_secs(60));
    let shutdown = CancellationToken::new();
    let running = start(control(&addr), role, &shutdown);

    // Silence: the client says TimedOut and reconnects.
    let mut silent = accept(&manager).await;
    match next_non_heartbeat(&mut silent).await {
        Message::Bye { reason, .. } => assert_eq!(reason, ByeReason::TimedOut),
        other => panic!("expected Bye, got {other:?}"),
    }
    // A message the role does not take: ProtocolViolation, and reconnect.
    let mut second = accept(&manager).await;
    second
        .send(&Message::FetchReports {
            reports: Vec::new(),
        })
        .await
        .unwrap();
    let violation = loop {
        match timeout(Duration::from_secs(5), second.recv())
            .await
            .unwrap()
        {
            Ok(Some(Message::Heartbeat { .. })) => {}
            other => break other,
        }
    };
    assert!(
        matches!(violation, Err(ProtocolError::PeerRejected { ref detail }) if detail.contains("does not take")),
        "{violation:?}"
    );
    // A role failure ends run without reconnecting.
    let third = accept(&manager).await;
    third
        .send(&Message::SetConcurrency { limit: 3 })
        .await
        .unwrap();
    let (outcome, _) = timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome, Err(Stop::Role(ref e)) if e == "limit 3"),
        "{outcome:?}"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "connected 1",
            "disconnected",
            "connected 2",
            "disconnected",
            "connected 3",
            "disconnected"
        ]
    );
}

#[tokio::test]
async fn a_refusal_is_final_and_the_token_is_not_printed() {
    let manager = FakeManager::start(FakeManager::config("other-secret")).await;
    let addr = manager.addr().to_string();
    let (role, _seen) = TestRole::new(Duration::from_secs(60));
    let shutdown = CancellationToken::new();
    let running = start(control(&addr), role, &shutdown);
    manager.accept_refused().await;
    let (outcome, _) = timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap();
    let Err(Stop::Refused(e)) = outcome else {
        panic!("expected a refusal, got {outcome:?}");
    };
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
}
