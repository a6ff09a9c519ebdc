//! test-support's fake manager (the real `server_handshake` on 127.0.0.1:0),
//! recording what a downloader tells it, plus helpers to start `downloader::run`, build jobs
//! and read the spool.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use downloader::{ControlSettings, DownloaderConfig, DownloaderError};
use spool::protocol::{
    ByeReason, ComponentState, Connection, FetchJob, FetchLimits, FetchPurpose, FetchResult, Hello,
    JobId, Load, Message, StoredPage, Token,
};
use spool::warc::{Record, WarcReader};
use spool::{AppId, ComponentId};
use test_support::manager::FakeManager;
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

pub const TOKEN: &str = "s3cret";
pub const APP: &str = "app1";
pub use test_support::manager::WAIT;

/// test-support's fake manager, recording what a downloader says.
pub struct TestManager {
    manager: FakeManager,
}

impl TestManager {
    /// Heartbeats every 100 ms, dropped after 5 s of silence.
    pub async fn start() -> Self {
        Self::with_token(TOKEN).await
    }

    /// A manager expecting `token`.
    pub async fn with_token(token: &str) -> Self {
        let manager = FakeManager::with_heartbeats(token, 100, 5000).await;
        Self { manager }
    }

    pub fn addr(&self) -> SocketAddr {
        self.manager.addr()
    }

    /// Accepts the next connection and expects the handshake to be refused.
    pub async fn accept_refused(&self) {
        self.manager.accept_refused().await;
    }

    /// Accepts the next downloader; `spool` is where it writes.
    pub async fn accept(&self, spool: &Path) -> ManagerConn {
        let (conn, hello) = self.manager.accept().await;
        ManagerConn {
            conn,
            hello,
            spool: spool.to_owned(),
            seen: Seen::default(),
            sent: HashSet::new(),
        }
    }
}

/// A stored report, and whether its file existed when the report arrived.
#[derive(Debug, Clone)]
pub struct Report {
    pub result: FetchResult,
    pub file_existed: bool,
}

/// Everything a downloader said on one connection.
#[derive(Debug, Default)]
pub struct Seen {
    /// One report per job (a second one fails the test).
    pub reports: HashMap<JobId, Report>,
    /// Order in which the reports arrived.
    pub order: Vec<JobId>,
    /// `(file, jobs, file existed when the message arrived)`.
    pub committed: Vec<(String, Vec<JobId>, bool)>,
    pub heartbeats: Vec<Load>,
    /// Every `Status`, with how many reports had arrived before it.
    pub states: Vec<(ComponentState, usize)>,
    pub bye: Option<(ByeReason, String)>,
    /// The connection ended.
    pub closed: bool,
}

impl Seen {
    /// The result of `job`.
    pub fn result(&self, job: u64) -> &FetchResult {
        &self
            .reports
            .get(&JobId(job))
            .unwrap_or_else(|| panic!("no report for job {job}: {self:#?}"))
            .result
    }

    /// Every job named by a `Committed`.
    pub fn committed_jobs(&self) -> Vec<JobId> {
        let mut jobs: Vec<JobId> = self.committed.iter().flat_map(|c| c.1.clone()).collect();
        jobs.sort();
        jobs
    }
}

/// One accepted downloader connection.
pub struct ManagerConn {
    pub conn: Connection,
    pub hello: Hello,
    spool: PathBuf,
    pub seen: Seen,
    /// Jobs sent on this connection.
    sent: HashSet<JobId>,
}

impl ManagerConn {
    pub async fn send(&self, msg: Message) {
        self.conn.send(&msg).await.unwrap();
    }

    pub async fn fetch(&mut self, jobs: Vec<FetchJob>) {
        self.sent.extend(jobs.iter().map(|j| j.job));
        self.send(Message::FetchBatch { jobs }).await;
    }

    /// Receives until `done(seen)` holds; fails after [`WAIT`].
    pub async fn until(&mut self, what: &str, done: impl Fn(&Seen) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !done(&self.seen) {
            assert!(
                !self.seen.closed,
                "connection closed before {what}: {:#?}",
                self.seen
            );
            let msg = tokio::time::timeout_at(deadline, self.conn.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}: {:#?}", self.seen));
            match msg {
                Ok(Some(msg)) => self.record(msg),
                Ok(None) | Err(_) => self.seen.closed = true,
            }
        }
    }

    /// Waits for reports of all of `jobs`.
    pub async fn reports_for(&mut self, jobs: &[u64]) {
        let what = format!("reports for {jobs:?}");
        self.until(&what, |s| {
            jobs.iter().all(|j| s.reports.contains_key(&JobId(*j)))
        })
        .await;
    }

    /// Waits for `Committed` of all of `jobs`.
    pub async fn committed(&mut self, jobs: &[u64]) {
        let what = format!("Committed for {jobs:?}");
        self.until(&what, |s| {
            let got = s.committed_jobs();
            jobs.iter().all(|j| got.contains(&JobId(*j)))
        })
        .await;
    }

    fn record(&mut self, msg: Message) {
        match msg {
            Message::Heartbeat { load } => self.seen.heartbeats.push(load),
            Message::FetchReports { reports } => {
                for r in reports {
                    let file_existed = match &r.result {
                        FetchResult::Stored(page) => find_file(&self.spool, &page.file).is_some(),
                        _ => false,
                    };
                    let report = Report {
                        result: r.result,
                        file_existed,
                    };
                    let old = self.seen.reports.insert(r.job, report);
                    assert!(old.is_none(), "job {} reported twice", r.job);
                    self.seen.order.push(r.job);
                }
            }
            Message::Committed { file, jobs } => {
                let existed = find_file(&self.spool, &file).is_some();
                // A job of this connection only after its `Stored` report naming
                // the file; one of an earlier connection (never sent here) with none.
                for job in &jobs {
                    let stored = self.seen.reports.get(job).map(|r| &r.result);
                    assert!(
                        matches!(stored, Some(FetchResult::Stored(p)) if p.file == file)
                            || (!self.sent.contains(job) && stored.is_none()),
                        "{job} committed in {file} before being reported Stored there"
                    );
                }
                self.seen.committed.push((file, jobs, existed));
            }
            Message::Status(state) => self.seen.states.push((*state, self.seen.order.len())),
            Message::Bye { reason, detail } => self.seen.bye = Some((reason, detail)),
            other => panic!("unexpected message from the downloader: {other:?}"),
        }
    }
}

/// A published file named `name` in `robots/` or any `pages/<app>/`.
pub fn find_file(spool: &Path, name: &str) -> Option<PathBuf> {
    let robots = spool.join("robots").join(name);
    if robots.is_file() {
        return Some(robots);
    }
    let pages = std::fs::read_dir(spool.join("pages")).ok()?;
    pages
        .filter_map(Result::ok)
        .map(|app| app.path().join(name))
        .find(|p| p.is_file())
}

/// The published files of a spool folder (no temp, claimed or bad files), sorted.
pub fn published(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Every record of a WARC file.
pub fn records(path: &Path) -> Vec<Record> {
    let file = std::fs::File::open(path).unwrap();
    WarcReader::new(std::io::BufReader::new(file))
        .map(|r| r.unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}

/// Runs `warcio check` on `path`; panics with its output unless it passes.
pub fn warcio_check(path: &Path) {
    let out = std::process::Command::new("warcio")
        .arg("check")
        .arg("-v")
        .arg(path)
        .output()
        .expect("warcio is installed (pip install warcio)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "warcio check {}: {text}",
        path.display()
    );
}

/// A running `downloader::run`.
pub struct Running {
    pub task: JoinHandle<Result<(), DownloaderError>>,
    pub shutdown: CancellationToken,
    pub spool: tempfile::TempDir,
}

impl Running {
    /// `pages/<APP>/`.
    pub fn pages(&self) -> PathBuf {
        self.spool.path().join("pages").join(APP)
    }

    /// Waits for `run` to return (the spool stays until `self` is dropped).
    pub async fn join(&mut self) -> Result<(), DownloaderError> {
        timeout(WAIT, &mut self.task)
            .await
            .expect("run() returns in time")
            .unwrap()
    }
}

/// Loopback allowed, short timeouts and batches.
pub fn config() -> DownloaderConfig {
    DownloaderConfig {
        allow_private: true,
        connect_timeout_ms: 1000,
        first_byte_timeout_ms: 3000,
        total_timeout_ms: 5000,
        max_batch_age_ms: 300,
        ..DownloaderConfig::default()
    }
}

/// Starts `downloader::run` with fast reconnects against `manager`.
pub fn start(config: DownloaderConfig, manager: SocketAddr) -> Running {
    start_with_token(config, manager, TOKEN)
}

pub fn start_with_token(config: DownloaderConfig, manager: SocketAddr, token: &str) -> Running {
    let spool = tempfile::tempdir().unwrap();
    let mut control = ControlSettings::new(
        manager.to_string(),
        Token::new(token).unwrap(),
        ComponentId::new("dl-test").unwrap(),
    );
    control.reconnect_min = Duration::from_millis(20);
    control.reconnect_max = Duration::from_millis(200);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let root = spool::Spool::new(spool.path());
    let task = tokio::spawn(async move { downloader::run(&config, control, root, stop).await });
    Running {
        task,
        shutdown,
        spool,
    }
}

/// Limits that leave the config's in force.
pub fn no_limits() -> FetchLimits {
    FetchLimits {
        max_body_bytes: 0,
        connect_timeout_ms: 0,
        first_byte_timeout_ms: 0,
        total_timeout_ms: 0,
        min_ip_spacing_ms: 0,
        min_host_spacing_ms: 0,
    }
}

/// A page job of [`APP`].
pub fn page(id: u64, url: &str, addr: SocketAddr) -> FetchJob {
    FetchJob {
        job: JobId(id),
        app: AppId::new(APP).unwrap(),
        url: url.to_owned(),
        addr,
        purpose: FetchPurpose::Page,
        keep_alive: true,
        limits: no_limits(),
        depth: None,
        hops: None,
        validators: Default::default(),
        after: None,
    }
}

/// A robots.txt job with a body cap.
pub fn robots(id: u64, url: &str, addr: SocketAddr, max_body_bytes: u64) -> FetchJob {
    FetchJob {
        purpose: FetchPurpose::Robots,
        limits: FetchLimits {
            max_body_bytes,
            ..no_limits()
        },
        ..page(id, url, addr)
    }
}

/// The page of a `Stored` report (panics on any other result).
pub fn stored(result: &FetchResult) -> &StoredPage {
    match result {
        FetchResult::Stored(page) => page,
        other => panic!("expected Stored, got {other:?}"),
    }
}

/// An address nothing listens on (a port just released).
pub async fn closed_port() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr
}
