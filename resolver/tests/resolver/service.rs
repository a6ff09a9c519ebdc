//! The service end to end: `resolver::run` against test-support's fake manager (a
//! real `server_handshake` on 127.0.0.1:0) and websim's DNS server.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use resolver::{Config, ControlSettings, ResolverError};
use spool::ComponentId;
use spool::protocol::{ByeReason, Message, RequestId, Role, Token};
use test_support::manager::{FakeManager, WAIT, next_non_heartbeat};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};
use tokio_util::sync::CancellationToken;

use crate::support::{config_for, dns_server, negative, positive, silent_server};

const TOKEN: &str = "s3cret";
const ID: &str = "resolver-test";

/// The fake manager, expecting [`TOKEN`], heartbeats every `interval_ms`.
async fn manager(interval_ms: u64, timeout_ms: u64) -> FakeManager {
    FakeManager::with_heartbeats(TOKEN, interval_ms, timeout_ms).await
}

/// Starts `resolver::run` with fast reconnects; returns its task and stop token.
fn start(
    config: Config,
    manager: SocketAddr,
) -> (JoinHandle<Result<(), ResolverError>>, CancellationToken) {
    let mut control = ControlSettings::new(
        manager.to_string(),
        Token::new(TOKEN).unwrap(),
        ComponentId::new(ID).unwrap(),
    );
    control.reconnect_min = Duration::from_millis(20);
    control.reconnect_max = Duration::from_millis(200);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let task = tokio::spawn(async move { resolver::run(&config, control, stop).await });
    (task, shutdown)
}

async fn finished(task: JoinHandle<Result<(), ResolverError>>) -> Result<(), ResolverError> {
    timeout(WAIT, task)
        .await
        .expect("run() returns in time")
        .unwrap()
}

#[tokio::test]
async fn serves_batches_heartbeats_concurrency_and_drain() {
    let dns = dns_server(10, 300).await;
    let manager = manager(50, 5000).await;
    let (task, _shutdown) = start(config_for(dns.local_addr()), manager.addr());
    let (mut conn, hello) = manager.accept().await;
    assert_eq!((hello.role, hello.id.as_str()), (Role::Resolver, ID));

    let hosts = ["name-0.test", "missing.test", "name-3.test"].map(String::from);
    let batch = Message::ResolveBatch {
        request: RequestId(7),
        hosts: hosts.to_vec(),
    };
    conn.send(&batch).await.unwrap();
    let (reply, _) = next_non_heartbeat(&mut conn).await;
    let Message::ResolveAnswers { request, answers } = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(request, RequestId(7));
    let got: BTreeSet<&str> = answers.iter().map(|a| a.host.as_str()).collect();
    assert_eq!(got, hosts.iter().map(String::as_str).collect());
    for answer in &answers {
        match answer.host.as_str() {
            "missing.test" => {
                negative(answer);
            }
            _ => {
                positive(answer);
            }
        }
    }

    // Heartbeats keep coming, and carry the concurrency the manager sets.
    conn.send(&Message::SetConcurrency { limit: 3 })
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "no heartbeat showed the new limit"
        );
        match timeout(WAIT, conn.recv()).await.unwrap().unwrap() {
            Some(Message::Heartbeat { load }) if load.concurrency == 3 => break,
            Some(Message::Heartbeat { .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    conn.send(&Message::Drain { grace_ms: 2000 }).await.unwrap();
    let (bye, _) = next_non_heartbeat(&mut conn).await;
    assert!(
        matches!(
            bye,
            Message::Bye {
                reason: ByeReason::Drained,
                ..
            }
        ),
        "{bye:?}"
    );
    finished(task).await.unwrap();
}

#[tokio::test]
async fn reconnects_after_the_connection_drops_then_stops_on_cancel() {
    let dns = dns_server(10, 300).await;
    let manager = manager(100, 5000).await;
    let (task, shutdown) = start(config_for(dns.local_addr()), manager.addr());
    let (first, _) = manager.accept().await;
    drop(first); // the manager "restarts"

    let (mut conn, hello) = manager.accept().await;
    assert_eq!(hello.id.as_str(), ID);
    let batch = Message::ResolveBatch {
        request: RequestId(1),
        hosts: vec!["name-5.test".into()],
    };
    conn.send(&batch).await.unwrap();
    let (reply, _) = next_non_heartbeat(&mut conn).await;
    let Message::ResolveAnswers { request, answers } = reply else {
        panic!("{reply:?}")
    };
    assert_eq!((request, answers.len()), (RequestId(1), 1));
    positive(&answers[0]);

    shutdown.cancel();
    let (bye, _) = next_non_heartbeat(&mut conn).await;
    assert!(
        matches!(
            bye,
            Message::Bye {
                reason: ByeReason::ShuttingDown,
                ..
            }
        ),
        "{bye:?}"
    );
    finished(task).await.unwrap();
}

#[tokio::test]
async fn drain_hands_back_batches_that_cannot_finish_in_the_grace_time() {
    let silent = silent_server().await;
    let config = Config {
        timeout_ms: 5000,
        ..config_for(silent.local_addr().unwrap())
    };
    let manager = manager(100, 5000).await;
    let (task, _shutdown) = start(config, manager.addr());
    let (mut conn, _) = manager.accept().await;
    let batch = Message::ResolveBatch {
        request: RequestId(3),
        hosts: vec!["slow.test".into()],
    };
    conn.send(&batch).await.unwrap();
    let asked = Instant::now();
    conn.send(&Message::Drain { grace_ms: 200 }).await.unwrap();
    let (bye, _) = next_non_heartbeat(&mut conn).await;
    let Message::Bye { reason, detail } = bye else {
        panic!("{bye:?}")
    };
    assert_eq!(reason, ByeReason::Drained);
    assert!(detail.contains("handed back 1 unanswered"), "{detail}");
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    finished(task).await.unwrap();
}

#[tokio::test]
async fn manager_silence_ends_the_connection_and_the_resolver_comes_back() {
    let dns = dns_server(1, 300).await;
    let manager = manager(50, 300).await;
    let (task, shutdown) = start(config_for(dns.local_addr()), manager.addr());
    let (mut conn, _) = manager.accept().await;
    // The test manager sends nothing: after 300 ms the resolver gives up on it.
    let (bye, heartbeats) = next_non_heartbeat(&mut conn).await;
    assert!(
        matches!(
            bye,
            Message::Bye {
                reason: ByeReason::TimedOut,
                ..
            }
        ),
        "{bye:?}"
    );
    assert!(
        heartbeats >= 2,
        "{heartbeats} heartbeats before the timeout"
    );
    let (_again, _) = manager.accept().await;
    shutdown.cancel();
    finished(task).await.unwrap();
}

#[tokio::test]
async fn a_refused_handshake_is_fatal() {
    let dns = dns_server(1, 300).await;
    let mut config = FakeManager::config("another-secret");
    config.heartbeat_interval_ms = 100;
    let manager = FakeManager::start(config).await;
    let (task, _shutdown) = start(config_for(dns.local_addr()), manager.addr());
    manager.accept_refused().await;
    let err = finished(task).await.unwrap_err();
    assert!(matches!(err, ResolverError::Refused { .. }), "{err}");
    assert!(err.to_string().contains("wrong token"), "{err}");
}

#[tokio::test]
async fn being_replaced_stops_the_service() {
    let dns = dns_server(1, 300).await;
    let manager = manager(100, 5000).await;
    let (task, _shutdown) = start(config_for(dns.local_addr()), manager.addr());
    let (conn, _) = manager.accept().await;
    conn.close(ByeReason::Replaced, "a newer resolver-test registered")
        .await
        .unwrap();
    let err = finished(task).await.unwrap_err();
    assert!(matches!(err, ResolverError::Replaced { .. }), "{err}");
}

#[tokio::test]
async fn cancel_while_the_manager_is_unreachable_returns_at_once() {
    let dns = dns_server(1, 300).await;
    let gone = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = gone.local_addr().unwrap();
    drop(gone);
    let (task, shutdown) = start(config_for(dns.local_addr()), addr);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!task.is_finished(), "keeps retrying an unreachable manager");
    let cancelled = Instant::now();
    shutdown.cancel();
    finished(task).await.unwrap();
    assert!(cancelled.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn past_max_pending_names_batches_wait_unread() {
    let silent = silent_server().await;
    let config = Config {
        timeout_ms: 300,
        max_pending_names: 1,
        ..config_for(silent.local_addr().unwrap())
    };
    let manager = manager(100, 5000).await;
    let (task, shutdown) = start(config, manager.addr());
    let (mut conn, _) = manager.accept().await;
    let sent = Instant::now();
    for request in [1, 2] {
        let batch = Message::ResolveBatch {
            request: RequestId(request),
            hosts: vec![format!("slow-{request}.test")],
        };
        conn.send(&batch).await.unwrap();
    }
    let mut order = Vec::new();
    for _ in 0..2 {
        let (reply, _) = next_non_heartbeat(&mut conn).await;
        let Message::ResolveAnswers { request, answers } = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(
            negative(&answers[0]),
            spool::protocol::NegativeKind::Failure
        );
        order.push((request, sent.elapsed()));
    }
    assert_eq!(order[0].0, RequestId(1));
    assert_eq!(order[1].0, RequestId(2));
    // The second batch was read only once the first was answered: two timeouts.
    assert!(order[1].1 >= Duration::from_millis(600), "{order:?}");
    shutdown.cancel();
    finished(task).await.unwrap();
}

#[tokio::test]
async fn absurd_periods_from_the_manager_do_not_panic() {
    let dns = dns_server(1, 300).await;
    let manager = manager(u64::MAX, u64::MAX).await;
    let (task, _shutdown) = start(config_for(dns.local_addr()), manager.addr());
    let (mut conn, _) = manager.accept().await;
    let batch = Message::ResolveBatch {
        request: RequestId(9),
        hosts: vec!["name-0.test".into()],
    };
    conn.send(&batch).await.unwrap();
    let (reply, _) = next_non_heartbeat(&mut conn).await;
    assert!(matches!(reply, Message::ResolveAnswers { .. }), "{reply:?}");
    conn.send(&Message::Drain { grace_ms: u64::MAX })
        .await
        .unwrap();
    let (bye, _) = next_non_heartbeat(&mut conn).await;
    assert!(
        matches!(
            bye,
            Message::Bye {
                reason: ByeReason::Drained,
                ..
            }
        ),
        "{bye:?}"
    );
    finished(task).await.unwrap();
}
