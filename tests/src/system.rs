//! The crawling system as separate processes, wired to a running websim: a
//! `polycrawl manager`, resolvers and downloaders, each owned by a
//! [`ProcessGuard`] (so killed on drop), sharing one config file, spool and state
//! directory in a temporary directory.
//!
//! - [`Knobs`]: the few settings tests vary; [`Knobs::config`] renders the whole
//!   RON config (websim's DNS for the resolver, its CA and private addresses for the
//!   downloader, short timers everywhere).
//! - [`System`]: start / kill -9 / restart the manager (a restart listens on the
//!   same ports, so connected components and browsers find it again), start and
//!   kill downloaders and resolvers, publish request files, talk to the manager's
//!   admin port ([`System::status`], [`System::admin`]) and its admin page's JSON
//!   API ([`System::api`]), collect ERROR log lines, and read the downloaders'
//!   wire log ([`System::wire_log`]: every request's send and receive stamps).
//!
//! Readiness: the manager prints `manager listening addr=IP:PORT` and then
//! `manager admin listening addr=IP:PORT` on stdout; downloaders and resolvers
//! print nothing, so [`System::wait_components`] asks the manager's status until
//! they are listed.

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spool::formats::{Hints, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{
    AdminCommand, AdminReply, ByeReason, DEFAULT_HANDSHAKE_TIMEOUT, Hello, Limits, Message, Role,
    StatusSnapshot, Token, client_handshake,
};
use spool::publish::Publisher;
use spool::{AppId, ComponentId, Spool};

use crate::bin;
use crate::http::{Client, Response};
use crate::process::ProcessGuard;
use crate::websim::Websim;

/// The downloaders' `max_batch_age_ms`: a page is durable (its batch published)
/// at most about this long after it was fetched.
pub const BATCH_AGE_MS: u64 = 300;

/// The downloaders' shared wire log (`downloader.wire_log`), in [`System::dir`]:
/// read it with [`System::wire_log`].
pub const WIRE_LOG: &str = "wire.tsv";

/// How long the manager may take to print its ready line.
pub const MANAGER_READY: Duration = Duration::from_secs(30);
/// How often a test polls a running system's state (the manager's status, the
/// spool): each look costs the system under test a connection or a folder scan, so
/// not every `test_support::wait::POLL`.
pub const STATUS_POLL: Duration = Duration::from_millis(100);

/// The settings tests vary; everything else is fixed by [`Knobs::config`].
#[derive(Debug, Clone)]
pub struct Knobs {
    /// `manager.frontier.interval_ms` (also `min_interval_ms`).
    pub interval_ms: u64,
    /// `manager.frontier.connections_per_host`.
    pub connections_per_host: u32,
    /// `manager.frontier.ip_max_in_flight`.
    pub ip_max_in_flight: u32,
    /// `manager.frontier.ip_min_interval_ms`.
    pub ip_min_interval_ms: u64,
    /// `manager.frontier.max_crawl_delay_ms`.
    pub max_crawl_delay_ms: u64,
    /// `manager.frontier.target_pages_per_sec`.
    pub target_pages_per_sec: f64,
    /// `manager.frontier.max_failures`.
    pub max_failures: u32,
    /// `downloader.concurrency`.
    pub downloader_concurrency: u32,
    /// `manager.jobs_per_downloader_factor`.
    pub jobs_per_downloader_factor: f64,
    /// `manager.speed.min_connections`. By default equal to `max_connections`
    /// and `downloader_concurrency`, so connection counts stay as configured.
    pub min_connections: u32,
    /// `manager.speed.max_connections`: the most connections the manager gives a
    /// downloader (which starts with `downloader_concurrency`).
    pub max_connections: u32,
    /// `manager.speed.connection_headroom`.
    pub connection_headroom: f64,
    /// `manager.speed.schedule`: `(from, to, pages_per_sec)`, times `"HH:MM"` UTC.
    pub speed_schedule: Vec<(String, String, f64)>,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            interval_ms: 100,
            connections_per_host: 1,
            ip_max_in_flight: 2,
            ip_min_interval_ms: 50,
            max_crawl_delay_ms: 1000,
            target_pages_per_sec: 1000.0,
            max_failures: 3,
            downloader_concurrency: 32,
            jobs_per_downloader_factor: 2.0,
            min_connections: 32,
            max_connections: 32,
            connection_headroom: 2.0,
            speed_schedule: Vec::new(),
        }
    }
}

impl Knobs {
    /// A `polycrawl crawl` config file `dir/name` for `ws` (its DNS server and CA):
    /// 20 ms per host, 10 ms per address, Crawl-delay capped at 100 ms, every
    /// domain allowed, small request files scanned every 200 ms; the rest the
    /// documented defaults. Its path.
    ///
    /// # Panics
    /// If the file cannot be written.
    pub fn crawl_config(ws: &Websim, dir: &Path, name: &str) -> PathBuf {
        let knobs = Knobs {
            interval_ms: 20,
            ip_min_interval_ms: 10,
            max_crawl_delay_ms: 100,
            ..Knobs::default()
        };
        let text = knobs.crawl_text(ws);
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }

    /// The RON config of `polycrawl crawl` on `ws` with these knobs: [`Knobs::config`]
    /// (no admin token) plus an open scope, every domain allowed, and small request
    /// files scanned every 200 ms.
    pub fn crawl_text(&self, ws: &Websim) -> String {
        self.config(ws, "unused-admin-token").replacen(
            "(\n",
            "(\n    app: (scope: open, allowed_domains: [], urls_per_request_file: 200, scan_interval_ms: 200),\n",
            1,
        )
    }

    /// The RON config for a system crawling `ws`, with `admin_token`; the admin page
    /// on a port of the kernel's choosing (never the default 7401, which another
    /// crawl on this machine may hold; `System` names its own with `--admin-listen`).
    pub fn config(&self, ws: &Websim, admin_token: &str) -> String {
        let ca = ws.path("ca").display().to_string();
        format!(
            r#"(
    spool: (notify: true),
    control: (heartbeat_interval_ms: 500, heartbeat_timeout_ms: 3000),
    resolver: (name_servers: [{dns:?}], timeout_ms: 1000, attempts: 2),
    downloader: (
        allow_private: true,
        extra_ca_file: Some({ca:?}),
        concurrency: {conc},
        max_batch_age_ms: {batch_age},
        connect_timeout_ms: 2000,
        first_byte_timeout_ms: 5000,
        total_timeout_ms: 10000,
    ),
    manager: (
        admin_http: "127.0.0.1:0",
        admin_token: {admin_token:?},
        status_interval_ms: 2000,
        progress_interval_ms: 500,
        jobs_per_downloader_factor: {factor:?},
        speed: (
            min_connections: {min_conn},
            max_connections: {max_conn},
            connection_headroom: {headroom:?},
            adjust_interval_ms: 1000,
            schedule: [{schedule}],
        ),
        frontier: (
            target_pages_per_sec: {rate:?},
            interval_ms: {interval},
            min_interval_ms: {interval},
            max_crawl_delay_ms: {delay},
            connections_per_host: {conns},
            ip_max_in_flight: {ipn},
            ip_min_interval_ms: {ipd},
            backoff_ms: [200, 500],
            max_failures: {fails},
            max_url_attempts: 2,
            allow_private_addresses: true,
            request_scan_interval_ms: 200,
            outcome_max_age_ms: 300,
            restored_commit_wait_ms: 4000,
            connect_timeout_ms: 2000,
            first_byte_timeout_ms: 5000,
            total_timeout_ms: 10000,
            dns_retry_ms: 5000,
        ),
    ),
)
"#,
            dns = ws.dns.to_string(),
            conc = self.downloader_concurrency,
            factor = self.jobs_per_downloader_factor,
            rate = self.target_pages_per_sec,
            interval = self.interval_ms,
            delay = self.max_crawl_delay_ms,
            conns = self.connections_per_host,
            ipn = self.ip_max_in_flight,
            ipd = self.ip_min_interval_ms,
            fails = self.max_failures,
            batch_age = BATCH_AGE_MS,
            min_conn = self.min_connections,
            max_conn = self.max_connections,
            headroom = self.connection_headroom,
            schedule = self
                .speed_schedule
                .iter()
                .map(|(from, to, rate)| format!(
                    "(from: {from:?}, to: {to:?}, pages_per_sec: {rate:?})"
                ))
                .collect::<Vec<_>>()
                .join(", "),
        )
    }

    /// Jobs the manager may have handed to `downloaders` downloaders at once: the
    /// most URLs a manager crash can leave "in flight" (fetched, maybe not reported).
    pub fn jobs_bound(&self, downloaders: usize) -> usize {
        let connections = self.downloader_concurrency.max(self.max_connections);
        (downloaders as f64 * f64::from(connections) * self.jobs_per_downloader_factor).ceil()
            as usize
    }
}

/// A crawling system of separate processes.
#[derive(Debug)]
pub struct System {
    dir: tempfile::TempDir,
    /// The config file every process reads.
    pub config: PathBuf,
    /// The spool root.
    pub spool: PathBuf,
    /// The manager's state directory.
    pub state: PathBuf,
    token: String,
    admin_token: String,
    manager: Option<ProcessGuard>,
    managers_started: usize,
    /// The manager's control address (kept across restarts).
    pub addr: Option<SocketAddr>,
    /// The manager's admin page address (kept across restarts).
    pub admin_addr: Option<SocketAddr>,
    resolvers: Vec<ProcessGuard>,
    downloaders: HashMap<String, ProcessGuard>,
    /// stderr of processes already killed, by name.
    dead_logs: Vec<(String, String)>,
}

impl System {
    /// Writes the config for `ws`; starts nothing.
    pub fn new(ws: &Websim, knobs: &Knobs) -> System {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let admin_token = "admin-secret-for-tests".to_owned();
        let config = dir.path().join("config.ron");
        let wire_log = dir.path().join(WIRE_LOG);
        let text = knobs.config(ws, &admin_token).replacen(
            "downloader: (",
            &format!(
                "downloader: (\n        wire_log: Some({:?}),",
                wire_log.display().to_string()
            ),
            1,
        );
        std::fs::write(&config, text).expect("writing the config");
        let spool = dir.path().join("spool");
        let state = dir.path().join("state");
        std::fs::create_dir_all(&spool).expect("spool dir");
        System {
            config,
            spool,
            state,
            token: "control-token-for-tests".to_owned(),
            admin_token,
            manager: None,
            managers_started: 0,
            addr: None,
            admin_addr: None,
            resolvers: Vec::new(),
            downloaders: HashMap::new(),
            dead_logs: Vec::new(),
            dir,
        }
    }

    /// The control token every process of this system presents (for a process a
    /// test starts itself, e.g. an application).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The admin token the manager was given.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The temporary directory (config, spool, state, `*.stderr`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Every line of the downloaders' wire log so far (see
    /// [`crate::wirelog::WireLine`]).
    ///
    /// # Panics
    /// On a malformed line.
    pub fn wire_log(&self) -> Vec<crate::wirelog::WireLine> {
        crate::wirelog::read(&self.dir.path().join(WIRE_LOG))
    }

    fn command(&self, sub: &str) -> Command {
        let mut cmd = Command::new(bin::polycrawl());
        cmd.arg(sub).arg("--config").arg(&self.config);
        cmd.env("POLYCRAWL_TOKEN", &self.token)
            .env_remove("POLYCRAWL_ADMIN_TOKEN")
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info");
        cmd
    }

    /// Starts the manager (on the previous ports after a kill) and waits for its
    /// ready lines.
    ///
    /// # Panics
    /// If it does not start, with its output.
    pub fn start_manager(&mut self) -> SocketAddr {
        assert!(self.manager.is_none(), "the manager is already running");
        self.managers_started += 1;
        let port_or_zero =
            |a: Option<SocketAddr>| a.map_or_else(|| "127.0.0.1:0".to_owned(), |a| a.to_string());
        let listen = port_or_zero(self.addr);
        let admin_listen = port_or_zero(self.admin_addr);
        let mut cmd = self.command("manager");
        cmd.args(["--listen", &listen])
            .args(["--admin-listen", &admin_listen])
            .arg("--state")
            .arg(&self.state)
            .arg("--spool")
            .arg(&self.spool);
        let name = format!("manager-{}", self.managers_started);
        let mut p = ProcessGuard::spawn(&name, cmd, self.dir.path()).expect("starting manager");
        let line = p
            .wait_for_line(|l| l.starts_with("manager listening "), MANAGER_READY)
            .unwrap_or_else(|report| panic!("{report}"));
        let addr: SocketAddr = crate::websim::parse_ready(&line)
            .get("addr")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no addr= in {line:?}"));
        let line = p
            .wait_for_line(|l| l.starts_with("manager admin listening "), MANAGER_READY)
            .unwrap_or_else(|report| panic!("{report}"));
        let admin: SocketAddr = crate::websim::parse_ready(&line)
            .get("addr")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no addr= in {line:?}"));
        self.addr = Some(addr);
        self.admin_addr = Some(admin);
        self.manager = Some(p);
        addr
    }

    /// Waits up to `timeout` for the manager to exit by itself (after an admin's
    /// shutdown) and returns how it exited; it is no longer running afterwards.
    ///
    /// # Panics
    /// If it is still running after `timeout`, with the processes' output.
    pub fn wait_manager_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let mut p = self.manager.take().expect("the manager is running");
        let status = p.wait_exit(timeout).expect("waiting for the manager");
        let report = p.report("running");
        self.bury(p);
        status.unwrap_or_else(|| panic!("the manager did not exit within {timeout:?}\n{report}"))
    }

    /// Forgets resolvers and downloaders that exited (after a drain), killing any
    /// still running, so they can be started again under the same ids.
    pub fn bury_components(&mut self) {
        let resolvers = std::mem::take(&mut self.resolvers);
        let downloaders = std::mem::take(&mut self.downloaders);
        for p in resolvers.into_iter().chain(downloaders.into_values()) {
            self.bury(p);
        }
    }

    /// One request to the admin page's API: `method` `path` with a JSON `body`
    /// (empty: none), with the admin token if `with_token`.
    ///
    /// # Panics
    /// If the manager's admin page was never started or does not answer.
    pub fn api(&self, method: &str, path: &str, body: &str, with_token: bool) -> Response {
        let addr = self.admin_addr.expect("the manager was started");
        let bearer = format!("Bearer {}", self.admin_token);
        let mut headers = vec![("Content-Type", "application/json")];
        if with_token {
            headers.push(("Authorization", bearer.as_str()));
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let host = addr.to_string();
        rt.block_on(Client::plain().send(
            addr,
            false,
            method,
            &host,
            path,
            &headers,
            body.as_bytes(),
        ))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// The running manager's process id.
    pub fn manager_pid(&self) -> Option<u32> {
        self.manager.as_ref().map(ProcessGuard::pid)
    }

    /// kill -9 of the manager; its state and spool stay.
    pub fn kill_manager(&mut self) {
        let p = self.manager.take().expect("the manager is running");
        self.bury(p);
    }

    /// kill -9 of the manager, then waits (up to `timeout`) until every running
    /// resolver and downloader has logged that it lost the manager connection: the
    /// outage as they live it, before a test starts the manager again.
    ///
    /// # Panics
    /// If one has not said so within `timeout`, with the processes' output.
    pub fn kill_manager_and_wait_lost(&mut self, timeout: Duration) {
        const LOST: &str = "lost the manager connection";
        let lost = |p: &ProcessGuard| p.stderr().matches(LOST).count();
        let before: Vec<usize> = self.components().map(lost).collect();
        self.kill_manager();
        let noticed = test_support::wait::poll_every(timeout, Duration::from_millis(20), || {
            let mut now = self.components().map(lost);
            before
                .iter()
                .all(|b| now.next().is_some_and(|n| n > *b))
                .then_some(())
        });
        assert!(
            noticed.is_some(),
            "not every component logged {LOST:?} within {timeout:?}\n{}",
            self.reports()
        );
    }

    /// The running resolvers and downloaders, in a fixed order.
    fn components(&self) -> impl Iterator<Item = &ProcessGuard> {
        let mut downloaders: Vec<(&String, &ProcessGuard)> = self.downloaders.iter().collect();
        downloaders.sort_by_key(|(id, _)| *id);
        self.resolvers
            .iter()
            .chain(downloaders.into_iter().map(|(_, p)| p))
    }

    fn bury(&mut self, p: ProcessGuard) {
        let (name, stderr) = (p.name().to_owned(), p.stderr());
        drop(p); // SIGKILL and reap.
        self.dead_logs.push((name, stderr));
    }

    fn manager_arg(&self) -> String {
        self.addr.expect("the manager was started").to_string()
    }

    /// Starts a resolver registered with the manager.
    pub fn start_resolver(&mut self) {
        let n = self.resolvers.len() + 1;
        let mut cmd = self.command("resolver");
        cmd.args([
            "--manager",
            &self.manager_arg(),
            "--id",
            &format!("res-{n}"),
        ]);
        let p = ProcessGuard::spawn(&format!("resolver-{n}"), cmd, self.dir.path())
            .expect("starting resolver");
        self.resolvers.push(p);
    }

    /// Starts downloader `id` writing to the spool.
    pub fn start_downloader(&mut self, id: &str) {
        assert!(!self.downloaders.contains_key(id), "{id} is running");
        let mut cmd = self.command("downloader");
        cmd.args(["--manager", &self.manager_arg(), "--id", id])
            .arg("--spool")
            .arg(&self.spool);
        let p = ProcessGuard::spawn(id, cmd, self.dir.path()).expect("starting downloader");
        self.downloaders.insert(id.to_owned(), p);
    }

    /// kill -9 of downloader `id`.
    pub fn kill_downloader(&mut self, id: &str) {
        let p = self.downloaders.remove(id).expect("the downloader runs");
        self.bury(p);
    }

    /// Waits until the manager lists `downloaders` downloaders and `resolvers`
    /// resolvers.
    ///
    /// # Panics
    /// After `timeout`, with the processes' output.
    pub fn wait_components(&mut self, downloaders: usize, resolvers: usize, timeout: Duration) {
        let registered = test_support::wait::poll_every(timeout, STATUS_POLL, || {
            let s = self.try_status().ok()?;
            let count = |r: Role| s.components.iter().filter(|c| c.role == r).count();
            (count(Role::Downloader) >= downloaders && count(Role::Resolver) >= resolvers)
                .then_some(())
        });
        assert!(
            registered.is_some(),
            "components did not register within {timeout:?}\n{}",
            self.reports()
        );
    }

    /// Publishes a request file of `urls` for `app` (spool's writer and publisher).
    pub fn publish_requests(&mut self, app: &str, priority: u8, urls: &[String]) -> PathBuf {
        let app = AppId::new(app).expect("app id");
        let dir = Spool::new(&self.spool)
            .requests(&app)
            .expect("requests dir");
        let publisher =
            Publisher::new(dir, ComponentId::new("tester").expect("id")).expect("publisher");
        let header = RequestHeader {
            priority: Priority::new(priority).expect("priority"),
        };
        let mut file = publisher
            .begin(header.priority, FileKind::Requests)
            .expect("begin");
        let mut writer = RequestWriter::new(Vec::new(), header).expect("writer");
        for u in urls {
            writer.write(u, &Hints::default()).expect("a valid URL");
        }
        file.write_all(&writer.finish().expect("finish"))
            .expect("write");
        file.commit().expect("publish")
    }

    /// Sends one admin command (with the admin token) and returns the answer.
    pub fn admin(&self, cmd: AdminCommand) -> Result<AdminReply, String> {
        let addr = self.manager_arg();
        let token = Token::new(self.admin_token.clone()).expect("token");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let stream = tokio::net::TcpStream::connect(&addr)
                .await
                .map_err(|e| format!("connect {addr}: {e}"))?;
            let limits = Limits {
                max_frame: 16 << 20,
                handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            };
            let id = ComponentId::new("test-admin").expect("id");
            let (mut conn, _) =
                client_handshake(stream, Hello::new(Role::Admin, id, token), limits)
                    .await
                    .map_err(|e| format!("handshake: {e}"))?;
            conn.send(&Message::Admin(cmd))
                .await
                .map_err(|e| e.to_string())?;
            let answer = async {
                loop {
                    match conn.recv().await {
                        Ok(Some(Message::AdminReply(r))) => return Ok(r),
                        Ok(Some(_)) => continue,
                        Ok(None) => return Err("closed without answering".to_owned()),
                        Err(e) => return Err(e.to_string()),
                    }
                }
            };
            let r = tokio::time::timeout(Duration::from_secs(10), answer)
                .await
                .map_err(|_| "no answer within 10 s".to_owned())??;
            let _ = conn.close(ByeReason::ShuttingDown, "test done").await;
            Ok(r)
        })
    }

    /// The manager's status snapshot, or why there is none.
    pub fn try_status(&self) -> Result<StatusSnapshot, String> {
        match self.admin(AdminCommand::Status)? {
            AdminReply::Status(s) => Ok(*s),
            other => Err(format!("unexpected answer {other:?}")),
        }
    }

    /// The manager's status snapshot.
    ///
    /// # Panics
    /// If the manager does not answer.
    pub fn status(&self) -> StatusSnapshot {
        self.try_status().unwrap_or_else(|e| panic!("status: {e}"))
    }

    /// Adds a blacklist entry through the admin port.
    ///
    /// # Panics
    /// If the manager refuses.
    pub fn blacklist_add(&self, entry: &str) {
        match self.admin(AdminCommand::BlacklistAdd {
            entry: entry.to_owned(),
        }) {
            Ok(AdminReply::Done { .. }) => {}
            other => panic!("blacklisting {entry}: {other:?}"),
        }
    }

    /// Writes this system's config with an `app:` section for one breadth-first
    /// application (state and repository in this system's folder, `ws`'s seeds,
    /// open scope, fast scans; `app_extra` lines added inside it), then `edit`
    /// applied to the whole text. Returns the app's (state, repository) folders.
    pub fn write_app_config(
        &mut self,
        ws: &Websim,
        app_extra: &str,
        edit: impl FnOnce(String) -> String,
    ) -> (PathBuf, PathBuf) {
        let state = self.dir().join("app-state");
        let repo = self.dir().join("repository");
        let app_section = format!(
            "    app: (\n        state_dir: {:?},\n        repository_dir: {:?},\n        \
             seeds_file: Some({:?}),\n        scope: open,\n        scan_interval_ms: 200,\n        \
             idle_check_ms: 500,\n{app_extra}    ),\n",
            state.display().to_string(),
            repo.display().to_string(),
            ws.path("seeds").display().to_string(),
        );
        let config = std::fs::read_to_string(&self.config)
            .expect("reading the config")
            .replacen("(\n", &format!("(\n{app_section}"), 1);
        std::fs::write(&self.config, edit(config)).expect("writing the config");
        (state, repo)
    }

    /// `polycrawl app` for this system's running manager: application `id`, its
    /// state and repository folders and seeds file, this system's config, spool
    /// and token, info logs.
    pub fn app_command(&self, id: &str, state: &Path, repo: &Path, seeds: &Path) -> Command {
        let addr = self.addr.expect("the manager runs").to_string();
        let mut cmd = Command::new(bin::polycrawl());
        cmd.arg("app")
            .arg("--config")
            .arg(&self.config)
            .args(["--manager", &addr, "--id", id])
            .arg("--spool")
            .arg(&self.spool)
            .arg("--state")
            .arg(state)
            .arg("--repo")
            .arg(repo)
            .arg("--seeds")
            .arg(seeds)
            .env("POLYCRAWL_TOKEN", self.token())
            .env_remove("POLYCRAWL_ADMIN_TOKEN")
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info");
        cmd
    }

    /// Runs `cmd` (an application) until it exits by itself within `timeout`;
    /// panics with every process's report if it does not, or exits non-zero.
    /// Returns its last `app ` summary line (empty if none).
    pub fn run_app_to_end(&self, cmd: Command, timeout: Duration) -> String {
        let mut app = ProcessGuard::spawn("app", cmd, self.dir()).expect("starting polycrawl app");
        let status = app.wait_exit(timeout).expect("waiting for the app");
        let Some(status) = status else {
            panic!(
                "the crawl did not end by itself in {timeout:?}\n{}",
                self.reports()
            );
        };
        assert!(status.success(), "app exited {status}\n{}", self.reports());
        app.stdout()
            .into_iter()
            .rev()
            .find(|l| l.starts_with("app "))
            .unwrap_or_default()
    }

    /// Every running and killed process's stdout and stderr, for a failure message.
    pub fn reports(&self) -> String {
        let mut out = String::new();
        for p in self.manager.iter().chain(&self.resolvers) {
            out.push_str(&tail(&p.report("running"), 60));
        }
        for p in self.downloaders.values() {
            out.push_str(&tail(&p.report("running"), 60));
        }
        for (name, err) in &self.dead_logs {
            out.push_str(&format!("{name} (killed)\n{}\n", tail(err, 30)));
        }
        out
    }

    /// Log lines at ERROR level of every process so far, as `name: line`.
    pub fn error_lines(&self) -> Vec<String> {
        let mut logs: Vec<(String, String)> = self.dead_logs.clone();
        let running = self.manager.iter().chain(&self.resolvers);
        for p in running.chain(self.downloaders.values()) {
            logs.push((p.name().to_owned(), p.stderr()));
        }
        logs.iter()
            .flat_map(|(name, err)| {
                err.lines()
                    .filter(|l| l.contains(" ERROR "))
                    .map(move |l| format!("{name}: {l}"))
            })
            .collect()
    }
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(n);
    let mut s = lines[from..].join("\n");
    s.push('\n');
    s
}
