//! Test support: a real manager (`manager::run_with_admin` in-process on
//! 127.0.0.1:0, its admin page on another port 0, with a temp state directory and
//! spool), and test-side components speaking the real protocol: a downloader that
//! writes real robots files, a resolver, an application, an admin client, and a
//! small HTTP client for the admin page ([`web`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use manager::{FrontierConfig, ManagerConfig, ManagerError, Settings};
use spool::formats::{Hints, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{
    AdminCommand, AdminReply, AppProgress, ByeReason, ConnReader, ConnWriter, FetchJob,
    FetchPurpose, FetchReport, FetchResult, Hello, HostAnswer, JobId, Limits, Load, Message,
    ProtocolError, RequestId, Resolution, Role, Token, client_handshake,
};
use spool::publish::Publisher;
use spool::warc::{Capture, RecordId, WarcDate, WarcHeaders, WarcWriter, payload_digest};
use spool::{AppId, ComponentId, Spool};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

/// The control token of every test.
pub const TOKEN: &str = "test-token";
/// The admin token of every test that sets one.
pub const ADMIN_TOKEN: &str = "admin-token";
/// How long a test waits for any one thing before failing.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Waits at most [`PATIENCE`] for `f`.
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    match timeout(PATIENCE, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Fast settings: short politeness interval, no per-IP limit, loopback allowed.
pub fn test_config(state_dir: PathBuf) -> ManagerConfig {
    ManagerConfig {
        state_dir,
        admin_token: ADMIN_TOKEN.into(),
        dns_batch_size: 64,
        progress_interval_ms: 100,
        status_interval_ms: 1_000,
        shutdown_grace_ms: 500,
        frontier: FrontierConfig {
            interval_ms: 200,
            min_interval_ms: 0,
            ip_max_in_flight: 0,
            ip_min_interval_ms: 0,
            allow_private_addresses: true,
            request_scan_interval_ms: 100,
            outcome_max_age_ms: 0,
            target_pages_per_sec: 1_000.0,
            // The fake downloaders here take one job per host at a time; chained
            // jobs have their own tests (frontier `chaining.rs`, the downloader's).
            chain_max_interval_ms: 0,
            // Restored pages: the fake downloaders claim theirs at once.
            restored_commit_wait_ms: 1_500,
            ..FrontierConfig::default()
        },
        ..ManagerConfig::default()
    }
}

/// A manager running in this process, with its temp folders.
pub struct Harness {
    /// Holds the temp folders until the test ends.
    pub _dir: tempfile::TempDir,
    pub spool: Spool,
    pub config: ManagerConfig,
    pub addr: SocketAddr,
    /// The admin page's address.
    pub web: SocketAddr,
    pub shutdown: CancellationToken,
    pub task: Option<JoinHandle<Result<(), ManagerError>>>,
}

impl Harness {
    /// Starts a manager with [`test_config`] changed by `adjust`.
    pub async fn start(adjust: impl FnOnce(&mut ManagerConfig)) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let mut config = test_config(dir.path().join("state"));
        adjust(&mut config);
        let mut h = Harness {
            _dir: dir,
            spool,
            config,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            web: SocketAddr::from(([127, 0, 0, 1], 0)),
            shutdown: CancellationToken::new(),
            task: None,
        };
        h.launch().await;
        h
    }

    async fn launch(&mut self) {
        let listener = manager::bind("127.0.0.1:0").await.unwrap();
        self.addr = listener.local_addr().unwrap();
        let web = manager::bind("127.0.0.1:0").await.unwrap();
        self.web = web.local_addr().unwrap();
        let mut settings = Settings::new(
            self.config.clone(),
            self.spool.clone(),
            Token::new(TOKEN).unwrap(),
        );
        settings.heartbeat_interval = Duration::from_millis(100);
        settings.heartbeat_timeout = Duration::from_millis(1_500);
        self.shutdown = CancellationToken::new();
        let shutdown = self.shutdown.clone();
        let run = manager::run_with_admin(listener, Some(web), settings, shutdown);
        self.task = Some(tokio::spawn(run));
    }

    /// kill -9: drops the running manager mid-crawl, then starts a new one on the
    /// same state directory and spool (on a new port).
    pub async fn crash_and_restart(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        self.launch().await;
    }

    /// SIGTERM: cancels the token and waits for `run` to return.
    pub async fn stop(&mut self) -> Result<(), ManagerError> {
        self.shutdown.cancel();
        let task = self.task.take().expect("running");
        within("the manager to stop", task).await.unwrap()
    }

    /// Publishes a request file of `urls` for `app`.
    pub fn publish_requests(&self, app: &str, urls: &[String]) {
        let app = AppId::new(app).unwrap();
        let publisher = Publisher::new(
            self.spool.requests(&app).unwrap(),
            ComponentId::new("test-app").unwrap(),
        )
        .unwrap();
        let priority = Priority::NORMAL;
        let mut w = RequestWriter::new(Vec::new(), RequestHeader { priority }).unwrap();
        for url in urls {
            w.write(url, &Hints::default()).unwrap();
        }
        publisher
            .publish(priority, FileKind::Requests, &w.finish().unwrap())
            .unwrap();
    }

    /// Files left in `robots/` (the manager deletes those it read).
    pub fn robots_files(&self) -> Vec<String> {
        let dir = self.spool.robots().unwrap();
        dir.list()
            .unwrap()
            .into_iter()
            .map(|n| n.to_string())
            .collect()
    }

    /// Connects a component with `role`, `id` and `token`.
    pub async fn connect(
        &self,
        role: Role,
        id: &str,
        token: &str,
    ) -> Result<(ConnReader, ConnWriter), ProtocolError> {
        let stream = TcpStream::connect(self.addr).await.unwrap();
        let hello = Hello::new(
            role,
            ComponentId::new(id).unwrap(),
            Token::new(token).unwrap(),
        );
        let (conn, _welcome) = client_handshake(stream, hello, Limits::default()).await?;
        Ok(conn.into_split())
    }
}

/// A task aborted when dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A registered test component that heartbeats in the background.
pub struct Client {
    /// In a mutex only to make `Client` `Sync` (tasks hold `&Client` across sends).
    pub reader: tokio::sync::Mutex<ConnReader>,
    pub writer: ConnWriter,
    _beat: AbortOnDrop,
}

impl Client {
    pub async fn join(h: &Harness, role: Role, id: &str, token: &str, load: Load) -> Client {
        let (reader, writer) = h.connect(role, id, token).await.unwrap();
        let w = writer.clone();
        let beat = tokio::spawn(async move {
            loop {
                if w.send(&Message::Heartbeat { load }).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Client {
            reader: tokio::sync::Mutex::new(reader),
            writer,
            _beat: AbortOnDrop(beat),
        }
    }

    /// The next message that is not a heartbeat (`None`: the manager closed).
    pub async fn next(&mut self) -> Option<Message> {
        loop {
            match self.reader.get_mut().recv().await {
                Ok(Some(Message::Heartbeat { .. })) => continue,
                Ok(other) => return other,
                Err(_) => return None,
            }
        }
    }

    /// Sends `msg`; a closed connection is not an error here (the tests look at
    /// what the manager did, and a crashed manager is part of some tests).
    pub async fn send(&self, msg: Message) {
        let _ = self.writer.send(&msg).await;
    }
}

/// A test downloader: takes `FetchBatch`es, writes robots files into the spool,
/// reports and commits as the test says.
pub struct Downloader {
    pub client: Client,
    pub robots: Publisher,
    pub id: String,
}

impl Downloader {
    pub async fn join(h: &Harness, id: &str, concurrency: u32) -> Downloader {
        let load = Load {
            concurrency,
            ..Load::default()
        };
        let client = Client::join(h, Role::Downloader, id, TOKEN, load).await;
        let robots =
            Publisher::new(h.spool.robots().unwrap(), ComponentId::new(id).unwrap()).unwrap();
        Downloader {
            client,
            robots,
            id: id.to_owned(),
        }
    }

    /// The jobs of the next `FetchBatch`.
    pub async fn batch(&mut self) -> Vec<FetchJob> {
        loop {
            match within("a FetchBatch", self.client.next()).await {
                Some(Message::FetchBatch { jobs }) => return jobs,
                Some(_) => continue,
                None => panic!("{}: the manager closed the connection", self.id),
            }
        }
    }

    /// The jobs of the next `FetchBatch` if one comes within `wait`.
    pub async fn batch_within(&mut self, wait: Duration) -> Option<Vec<FetchJob>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.client.next()).await {
                Err(_) => return None,
                Ok(Some(Message::FetchBatch { jobs })) => return Some(jobs),
                Ok(Some(_)) => continue,
                Ok(None) => panic!("{}: the manager closed the connection", self.id),
            }
        }
    }

    /// Fetches everything it is sent, at once: robots.txt answers 404, pages are
    /// reported stored and committed. The URLs of stored pages go to `log`. Ends
    /// when the connection does.
    pub fn serve(mut self, log: Arc<Mutex<Vec<String>>>) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut seq = 0;
            while let Some(msg) = self.client.next().await {
                let jobs = match msg {
                    Message::FetchBatch { jobs } => jobs,
                    Message::Drain { .. } => {
                        let bye = Message::Bye {
                            reason: ByeReason::Drained,
                            detail: String::new(),
                        };
                        let _ = self.client.writer.send(&bye).await;
                        return;
                    }
                    _ => continue,
                };
                for job in jobs {
                    if job.purpose == FetchPurpose::Robots {
                        self.robots_stored(&job, ROBOTS_404).await;
                        continue;
                    }
                    seq += 1;
                    let file = format!("50-{}-{seq:020}.warc.gz", self.id);
                    self.report(vec![stored(&job, 200, &file)]).await;
                    self.commit(&file, vec![job.job]).await;
                    log.lock().unwrap().push(job.url.clone());
                }
            }
        })
    }

    /// Publishes a robots file holding `raw_response` and reports it stored.
    pub async fn robots_stored(&self, job: &FetchJob, raw_response: &[u8]) {
        let mut pending = self
            .robots
            .begin(Priority::MOST_URGENT, FileKind::Robots)
            .unwrap();
        let name = pending.name().to_string();
        let capture = Capture {
            target_uri: &job.url,
            date: WarcDate::now(),
            ip: Some(job.addr.ip()),
            warcinfo_id: None,
        };
        {
            let mut w = WarcWriter::new(&mut pending);
            let response =
                WarcHeaders::response(RecordId::random(), &capture, payload_digest(b"")).unwrap();
            w.write_record(&response, raw_response).unwrap();
            let request = WarcHeaders::request(RecordId::random(), &capture).unwrap();
            w.write_record(&request, b"GET /robots.txt HTTP/1.1\r\n\r\n")
                .unwrap();
            w.finish().unwrap();
        }
        pending.commit().unwrap();
        let status = parse_status(raw_response);
        self.report(vec![stored(job, status, &name)]).await;
    }

    /// Reports `raw_response` stored with the response in the report itself (no
    /// robots file), as a downloader does for a small robots.txt.
    pub async fn robots_inline(&self, job: &FetchJob, raw_response: &[u8]) {
        let mut report = stored(job, parse_status(raw_response), "");
        if let FetchResult::Stored(page) = &mut report.result {
            page.response = Some(raw_response.to_vec());
        }
        self.report(vec![report]).await;
    }

    pub async fn report(&self, reports: Vec<FetchReport>) {
        self.client.send(Message::FetchReports { reports }).await;
    }

    pub async fn commit(&self, file: &str, jobs: Vec<JobId>) {
        let file = file.to_owned();
        self.client.send(Message::Committed { file, jobs }).await;
    }
}

fn parse_status(raw: &[u8]) -> u16 {
    let line = String::from_utf8_lossy(&raw[..raw.len().min(12)]).to_string();
    line.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// A `Stored` report for `job` in `file`.
pub fn stored(job: &FetchJob, status: u16, file: &str) -> FetchReport {
    test_support::reports::stored(job.job, status, file)
}

/// The host of a URL.
pub fn host_of(url: &str) -> String {
    url::Url::parse(url).unwrap().host_str().unwrap().to_owned()
}

/// A test resolver: answers 127.0.0.1 for every name.
pub struct Resolver {
    pub client: Client,
}

impl Resolver {
    pub async fn join(h: &Harness, id: &str) -> Resolver {
        let client = Client::join(h, Role::Resolver, id, TOKEN, Load::default()).await;
        Resolver { client }
    }

    /// The next `ResolveBatch`.
    pub async fn batch(&mut self) -> (RequestId, Vec<String>) {
        loop {
            match within("a ResolveBatch", self.client.next()).await {
                Some(Message::ResolveBatch { request, hosts }) => return (request, hosts),
                Some(_) => continue,
                None => panic!("resolver: the manager closed the connection"),
            }
        }
    }

    pub async fn answer(&self, request: RequestId, hosts: &[String]) {
        let answers = hosts
            .iter()
            .map(|h| HostAnswer {
                host: h.clone(),
                result: Resolution::Addresses {
                    addrs: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
                    ttl_secs: 3_600,
                },
            })
            .collect();
        self.client
            .send(Message::ResolveAnswers { request, answers })
            .await;
    }

    /// Answers every batch until the connection ends.
    pub fn serve(mut self) -> JoinHandle<()> {
        tokio::spawn(async move {
            while let Some(msg) = self.client.next().await {
                if let Message::ResolveBatch { request, hosts } = msg {
                    self.answer(request, &hosts).await;
                }
            }
        })
    }
}

/// A test application subscribed to `app`.
pub struct App {
    pub client: Client,
}

impl App {
    pub async fn join(h: &Harness, app: &str) -> App {
        let client = Client::join(h, Role::Application, "test-app", TOKEN, Load::default()).await;
        let app = AppId::new(app).unwrap();
        client.send(Message::Subscribe { app }).await;
        App { client }
    }

    /// Waits for a progress report satisfying `done`; returns it.
    pub async fn progress_until(&mut self, done: impl Fn(&AppProgress) -> bool) -> AppProgress {
        within("the application's progress", async {
            loop {
                match self.client.next().await {
                    Some(Message::AppProgress(p)) if done(&p) => return p,
                    Some(_) => continue,
                    None => panic!("app: the manager closed the connection"),
                }
            }
        })
        .await
    }
}

/// Sends one admin command on a fresh admin connection and returns the reply.
pub async fn admin(
    h: &Harness,
    token: &str,
    command: AdminCommand,
) -> Result<AdminReply, ProtocolError> {
    let (mut reader, writer) = h.connect(Role::Admin, "test-admin", token).await?;
    writer.send(&Message::Admin(command)).await?;
    loop {
        match within("an admin reply", reader.recv()).await? {
            Some(Message::AdminReply(reply)) => {
                let _ = writer.close(ByeReason::ShuttingDown, "done").await;
                return Ok(reply);
            }
            Some(_) => continue,
            None => return Err(ProtocolError::Closed),
        }
    }
}

/// A robots.txt response: chunked, gzip-encoded, as a server may send it.
pub fn robots_response(body: &str) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(body.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let mut raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n\
        Transfer-Encoding: chunked\r\n\r\n"
        .to_vec();
    let (a, b) = gz.split_at(gz.len() / 2);
    for part in [a, b] {
        raw.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        raw.extend_from_slice(part);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    raw
}

/// A 404 response for robots.txt (allow all).
pub const ROBOTS_404: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

/// URLs `http://<host>/p<i>` for each host and `i < per_host`.
pub fn urls(hosts: &[&str], per_host: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..per_host {
        for host in hosts {
            out.push(format!("http://{host}/p{i}"));
        }
    }
    out
}

/// An answer of the admin page's server.
#[derive(Debug)]
pub struct WebAnswer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl WebAnswer {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One HTTP request to the admin page's server at `addr` (`Connection: close`, as
/// the server answers), with `extra` header lines (`Host: addr` unless one is
/// given) and `body`.
pub async fn web(
    addr: SocketAddr,
    method: &str,
    target: &str,
    extra: &[(&str, &str)],
    body: &str,
) -> WebAnswer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !extra
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in extra {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = String::from_utf8(within("an admin page answer", exchange).await).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a whole response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    WebAnswer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}
