//! The one fake manager: the test side of the control protocol. It listens on
//! 127.0.0.1:0, runs the real `spool::protocol::server_handshake` for each service
//! that connects, and hands the connection to the test, which sends what a manager
//! would and checks what the service says. [`FakeManager::report_progress`] is
//! the manager an application needs to run: it registers applications and reports
//! their crawl busy or idle on a cadence.
//!
//! This module must never decide anything a real manager decides (no frontier, no
//! dispatch): the test does, message by message. It binds only 127.0.0.1 port 0.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use spool::protocol::{
    AppProgress, Connection, Hello, Message, Role, ServerConfig, Token, server_handshake,
};
use spool::{AppId, ComponentId};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// Longest wait for anything a service should do promptly (connect, answer).
pub const WAIT: Duration = Duration::from_secs(10);

/// A manager's control port on 127.0.0.1:0 that accepts services one at a time.
pub struct FakeManager {
    listener: TcpListener,
    config: ServerConfig,
}

impl FakeManager {
    /// A `Manager` server config named `manager` expecting `token`, with the
    /// protocol's default heartbeats (the test sets others on the result).
    pub fn config(token: &str) -> ServerConfig {
        ServerConfig::new(
            Role::Manager,
            ComponentId::new("manager").expect("a valid component id"),
            Token::new(token).expect("a valid token"),
        )
    }

    /// Listens on 127.0.0.1:0 with `config`; an error if the port cannot be bound
    /// (for callers that report errors instead of panicking, as `polycrawl bench`).
    pub async fn bind(config: ServerConfig) -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        Ok(Self { listener, config })
    }

    /// Listens on 127.0.0.1:0 with `config`.
    pub async fn start(config: ServerConfig) -> Self {
        Self::bind(config).await.expect("bind 127.0.0.1:0")
    }

    /// Listens with [`FakeManager::config`]`(token)` and heartbeats every
    /// `interval_ms`, dropping a peer after `timeout_ms` of silence.
    pub async fn with_heartbeats(token: &str, interval_ms: u64, timeout_ms: u64) -> Self {
        let mut config = Self::config(token);
        config.heartbeat_interval_ms = interval_ms;
        config.heartbeat_timeout_ms = timeout_ms;
        Self::start(config).await
    }

    /// The address services connect to.
    pub fn addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The server config the handshakes run with.
    pub fn server_config(&self) -> &ServerConfig {
        &self.config
    }

    /// Accepts the next service (within [`WAIT`]) and completes the handshake.
    pub async fn accept(&self) -> (Connection, Hello) {
        let stream = self.next_stream().await;
        server_handshake(stream, &self.config)
            .await
            .expect("the service's handshake succeeds")
    }

    /// Accepts the next connection (within [`WAIT`]) and expects its handshake
    /// to be refused.
    pub async fn accept_refused(&self) {
        let stream = self.next_stream().await;
        let refused = server_handshake(stream, &self.config).await;
        assert!(refused.is_err(), "the handshake should be refused");
    }

    async fn next_stream(&self) -> tokio::net::TcpStream {
        let (stream, _) = timeout(WAIT, self.listener.accept())
            .await
            .expect("the service connects in time")
            .expect("accept a connection");
        stream
    }

    /// Serves applications from now on, in a task that runs until the runtime
    /// ends or the returned handle is aborted: every application that connects is registered and, every `every`, sent an
    /// `AppProgress` for `app` with one queued URL while `idle` is false and none
    /// once it is set, echoing the newest `SyncProgress` the application sent (as
    /// the real manager does once it has listed the request folders). A
    /// connection that ends or fails is dropped; the next one is served alike.
    pub fn report_progress(
        self,
        app: AppId,
        idle: Arc<AtomicBool>,
        every: Duration,
    ) -> JoinHandle<()> {
        tokio::spawn(async move {
            while let Ok((stream, _)) = self.listener.accept().await {
                let Ok((conn, _hello)) = server_handshake(stream, &self.config).await else {
                    continue;
                };
                tokio::spawn(report_to(conn, app.clone(), idle.clone(), every));
            }
        })
    }
}

/// One application's connection: echo its sync sequence, report busy or idle.
async fn report_to(conn: Connection, app: AppId, idle: Arc<AtomicBool>, every: Duration) {
    let (mut reader, writer) = conn.into_split();
    let synced = Arc::new(AtomicU64::new(0));
    let seen = synced.clone();
    let listening = tokio::spawn(async move {
        while let Ok(Some(msg)) = reader.recv().await {
            if let Message::SyncProgress { seq, .. } = msg {
                seen.fetch_max(seq, Ordering::SeqCst);
            }
        }
    });
    let mut tick = tokio::time::interval(every);
    while !listening.is_finished() {
        tick.tick().await;
        let mut progress = AppProgress::new(app.clone());
        progress.queued_urls = u64::from(!idle.load(Ordering::SeqCst));
        progress.synced = synced.load(Ordering::SeqCst);
        if writer.send(&Message::AppProgress(progress)).await.is_err() {
            return;
        }
    }
}

/// The next message on `conn` that is not a heartbeat (within [`WAIT`]), and how
/// many heartbeats came before it; panics if the connection ends first.
pub async fn next_non_heartbeat(conn: &mut Connection) -> (Message, usize) {
    let mut heartbeats = 0;
    loop {
        match timeout(WAIT, conn.recv()).await.expect("a message in time") {
            Ok(Some(Message::Heartbeat { .. })) => heartbeats += 1,
            Ok(Some(msg)) => return (msg, heartbeats),
            other => panic!("the connection ended: {other:?}"),
        }
    }
}
