//! [`System`]: the crawling system and the breadth-first application started as
//! separate child processes of this binary, wired exactly as on many machines:
//! every child gets the generated config file, the control token in
//! `POLYCRAWL_TOKEN` (the manager also gets the admin token in
//! `POLYCRAWL_ADMIN_TOKEN`) and the manager's address, which it prints when it
//! listens on a port chosen by the kernel.
//!
//! Start order: manager (wait for `manager listening addr=` and, when the admin
//! page is on, `manager admin listening addr=`), resolver, downloaders,
//! application. The admin token is random per run and written to
//! `<out>/admin-token` (mode 0600) for the operator to paste into the admin page. The run ends when the application exits 0 (the crawl
//! is complete or reached `--max-pages`); any other process exiting first is an
//! error naming it and quoting its log. Stop order: application, then downloaders
//! and resolver (SIGTERM, so in-flight work is published), then the manager.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use spool::protocol::{StatusSnapshot, Token};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::child::{Child, describe};
use super::progress::Progress;
use crate::config::Config;

/// How long the manager may take to print its listening line.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a process gets to finish after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// How often the manager's status is read for the progress display.
const STATUS_EVERY: Duration = Duration::from_millis(500);
/// How often the children are checked.
const TICK: Duration = Duration::from_millis(100);

/// Where a run keeps its files, all under one output directory.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The output directory (absolute).
    pub out: PathBuf,
    /// The generated config, `<out>/config.ron`.
    pub config: PathBuf,
    /// The spool, `<out>/spool`.
    pub spool: PathBuf,
    /// The manager's state, `<out>/state/manager`.
    pub manager_state: PathBuf,
    /// The application's state, `<out>/state/app`.
    pub app_state: PathBuf,
    /// The WARC repository, `<out>/repository`.
    pub repository: PathBuf,
    /// Every process's stderr and stdout, `<out>/logs`.
    pub logs: PathBuf,
    /// The run's admin token (readable by the owner only), `<out>/admin-token`.
    pub admin_token: PathBuf,
}

impl Layout {
    /// The layout under `out` (made absolute).
    pub fn new(out: &Path) -> anyhow::Result<Layout> {
        let out =
            std::path::absolute(out).with_context(|| format!("resolving {}", out.display()))?;
        Ok(Layout {
            config: out.join("config.ron"),
            spool: out.join("spool"),
            manager_state: out.join("state").join("manager"),
            app_state: out.join("state").join("app"),
            repository: out.join("repository"),
            logs: out.join("logs"),
            admin_token: out.join("admin-token"),
            out,
        })
    }

    /// Creates the folders.
    pub fn create(&self) -> anyhow::Result<()> {
        for dir in [
            &self.spool,
            &self.manager_state,
            &self.app_state,
            &self.repository,
            &self.logs,
        ] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(())
    }

    /// Points the config's directories at this layout. Every process of the run
    /// sees the spool through this machine's file system, so the application's
    /// "idle" verdict needs no confirmation delay (`app.idle_check_ms = 0`).
    pub fn apply(&self, config: &mut Config) {
        config.app.idle_check_ms = 0;
        config.spool.root = self.spool.clone();
        config.manager.state_dir = self.manager_state.clone();
        config.app.state_dir = self.app_state.clone();
        config.app.repository_dir = self.repository.clone();
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where the files go.
    pub layout: Layout,
    /// The config every process reads (written to `layout.config`).
    pub config: Config,
    /// The seed URLs.
    pub seeds: PathBuf,
    /// Number of downloader processes (at least 1).
    pub downloaders: u32,
    /// Stop after this many stored pages.
    pub max_pages: Option<u64>,
    /// Pages expected, for the progress bar.
    pub expected_pages: Option<u64>,
}

/// How a completed run went.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The application's one-line summary.
    pub app_summary: Option<String>,
    /// Time from the manager's start to the application's exit.
    pub elapsed: Duration,
    /// The manager's last status snapshot.
    pub last_status: Option<StatusSnapshot>,
    /// The manager's address.
    pub manager_addr: String,
}

/// How the processes ended.
#[derive(Debug, Clone)]
pub struct Stopped {
    /// The processes that did not exit cleanly, with how they ended.
    pub unclean: Vec<String>,
    /// CPU time (user + system) of each process over its life, by name.
    pub cpu: Vec<(String, Duration)>,
}

/// Writes `token` to `path`, readable and writable by the owner only.
fn write_secret(path: &Path, token: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    writeln!(file, "{token}").with_context(|| format!("writing {}", path.display()))
}

/// The running processes.
#[derive(Debug)]
pub struct System {
    manager: Child,
    resolver: Child,
    downloaders: Vec<Child>,
    app: Option<Child>,
    manager_addr: String,
    admin_addr: Option<String>,
    admin_token: String,
    max_frame: u32,
}

/// A random secret: 32 hex digits from the kernel's generator.
pub fn random_token() -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `config` as RON, with a comment saying where it came from.
pub fn write_config(path: &Path, config: &Config, origin: &str) -> anyhow::Result<()> {
    let pretty = ron::ser::PrettyConfig::default();
    let body = ron::ser::to_string_pretty(config, pretty).context("writing the config as RON")?;
    let text = format!(
        "// Written by {origin}; every process of the run reads it. Tokens are not\n\
         // here: they go to the processes in POLYCRAWL_TOKEN / POLYCRAWL_ADMIN_TOKEN.\n{body}\n"
    );
    // Check it reads back exactly as the processes will read it.
    let back = Config::parse(&text, &path.display().to_string())
        .context("the generated config does not read back")?;
    anyhow::ensure!(
        &back == config,
        "the generated config does not read back unchanged"
    );
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn base_command(exe: &Path, sub: &str, config: &Path, token: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg(sub).arg("--config").arg(config);
    cmd.env("POLYCRAWL_TOKEN", token);
    cmd.env_remove("POLYCRAWL_ADMIN_TOKEN");
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "info");
    }
    cmd
}

impl System {
    /// Writes the config and starts every process; returns once they are started
    /// (the manager listening).
    pub fn start(plan: &Plan, shutdown: &CancellationToken) -> anyhow::Result<System> {
        let l = &plan.layout;
        l.create()?;
        write_config(&l.config, &plan.config, "polycrawl")?;
        let exe = std::env::current_exe().context("finding the polycrawl binary")?;
        let token = random_token()?;
        let admin_token = random_token()?;
        write_secret(&l.admin_token, &admin_token)?;

        let mut cmd = base_command(&exe, "manager", &l.config, &token);
        cmd.args(["--listen", "127.0.0.1:0"])
            .arg("--state")
            .arg(&l.manager_state)
            .arg("--spool")
            .arg(&l.spool)
            .env("POLYCRAWL_ADMIN_TOKEN", &admin_token);
        let mut manager = Child::spawn("manager", cmd, &l.logs)?;
        let line = manager.wait_line(
            |l| l.starts_with("manager listening addr="),
            READY_TIMEOUT,
            || shutdown.is_cancelled(),
        )?;
        let manager_addr = line
            .trim_start_matches("manager listening addr=")
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let admin_addr = if plan.config.manager.admin_http.is_empty() {
            None
        } else {
            let line = manager.wait_line(
                |l| admin_address(l).is_some(),
                READY_TIMEOUT,
                || shutdown.is_cancelled(),
            )?;
            admin_address(&line).map(str::to_owned)
        };

        let service = |sub: &str| {
            let mut cmd = base_command(&exe, sub, &l.config, &token);
            cmd.arg("--manager").arg(&manager_addr);
            cmd
        };
        let mut cmd = service("resolver");
        cmd.args(["--id", "resolver-1"]);
        let resolver = Child::spawn("resolver", cmd, &l.logs)?;
        let mut downloaders = Vec::new();
        for n in 1..=plan.downloaders.max(1) {
            let id = format!("dl-{n}");
            let mut cmd = service("downloader");
            cmd.arg("--spool").arg(&l.spool).args(["--id", &id]);
            downloaders.push(Child::spawn(&id, cmd, &l.logs)?);
        }
        let mut cmd = service("app");
        cmd.arg("--spool")
            .arg(&l.spool)
            .arg("--state")
            .arg(&l.app_state)
            .arg("--repo")
            .arg(&l.repository)
            .arg("--seeds")
            .arg(&plan.seeds);
        if let Some(n) = plan.max_pages {
            cmd.arg("--max-pages").arg(n.to_string());
        }
        let app = Child::spawn("app", cmd, &l.logs)?;
        Ok(System {
            manager,
            resolver,
            downloaders,
            app: Some(app),
            manager_addr,
            admin_addr,
            admin_token,
            max_frame: plan.config.control.max_frame_bytes,
        })
    }

    /// The manager's control address.
    pub fn manager_addr(&self) -> &str {
        &self.manager_addr
    }

    /// The admin page's address, if it is on.
    pub fn admin_addr(&self) -> Option<&str> {
        self.admin_addr.as_deref()
    }

    /// Prints `admin: http://ADDR/` on stdout (where to point a browser) and where
    /// the admin token is on stderr; nothing when the admin page is off.
    pub fn announce_admin(&self, layout: &Layout) {
        if let Some(addr) = &self.admin_addr {
            println!("admin: http://{addr}/");
            eprintln!(
                "admin page: the admin token is in {}",
                layout.admin_token.display()
            );
        }
    }

    /// Every process, as (name, pid).
    pub fn pids(&self) -> Vec<(String, u32)> {
        let mut all = vec![&self.manager, &self.resolver];
        all.extend(self.downloaders.iter());
        all.extend(self.app.iter());
        all.iter().map(|c| (c.name().to_owned(), c.pid())).collect()
    }

    /// Reads the manager's status (admin role); `None` if it does not answer.
    pub fn status(&self, rt: &Handle) -> Option<StatusSnapshot> {
        let token = Token::new(self.admin_token.clone()).ok()?;
        let fetch = crate::status::fetch(&self.manager_addr, token, self.max_frame);
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(2), fetch).await })
            .ok()?
            .ok()
    }

    /// Runs until the application exits: shows progress, watches every process.
    pub fn wait(
        &mut self,
        progress: &mut Progress,
        shutdown: &CancellationToken,
        rt: &Handle,
    ) -> anyhow::Result<Finished> {
        let started = Instant::now();
        let mut last_status = None;
        let mut next_status = Instant::now();
        let mut app_lines = Vec::new();
        loop {
            anyhow::ensure!(!shutdown.is_cancelled(), "interrupted");
            let app = self.app.as_mut().context("the application is gone")?;
            app_lines.extend(app.new_lines());
            if let Some(status) = app.exited()? {
                app_lines.extend(app.new_lines());
                // The reader thread may still hold the last line for a moment.
                std::thread::sleep(Duration::from_millis(50));
                app_lines.extend(app.new_lines());
                anyhow::ensure!(
                    status.success(),
                    "the application exited ({status}){}",
                    app.log_tail(15)
                );
                if let Some(s) = self.status(rt) {
                    progress.update(&s);
                    last_status = Some(s);
                }
                let app_summary = app_lines
                    .iter()
                    .rev()
                    .find(|l| l.starts_with("app "))
                    .cloned();
                return Ok(Finished {
                    app_summary,
                    elapsed: started.elapsed(),
                    last_status,
                    manager_addr: self.manager_addr.clone(),
                });
            }
            let others = std::iter::once(&mut self.manager)
                .chain(std::iter::once(&mut self.resolver))
                .chain(self.downloaders.iter_mut());
            for child in others {
                if let Some(status) = child.exited()? {
                    anyhow::bail!(
                        "{} (pid {}) exited unexpectedly ({}){}",
                        child.name(),
                        child.pid(),
                        describe(Some(status)),
                        child.log_tail(15)
                    );
                }
            }
            if Instant::now() >= next_status {
                next_status = Instant::now() + STATUS_EVERY;
                if let Some(s) = self.status(rt) {
                    progress.update(&s);
                    last_status = Some(s);
                }
            }
            std::thread::sleep(TICK);
        }
    }

    /// Stops everything in order (application, then downloaders and resolver, then
    /// the manager), each with SIGTERM and a grace period, then SIGKILL. Returns the
    /// processes that did not exit cleanly and the CPU time each one used.
    pub fn stop(mut self) -> Stopped {
        let mut unclean = Vec::new();
        let mut note = |c: &Child, s: Option<std::process::ExitStatus>| {
            if !s.is_some_and(|s| s.success()) {
                unclean.push(format!("{} ({})", c.name(), describe(s)));
            }
        };
        let mut app_cpu = None;
        if let Some(mut app) = self.app.take() {
            let s = app.stop(STOP_GRACE);
            note(&app, s);
            app_cpu = Some((app.name().to_owned(), app.cpu()));
        }
        let deadline = Instant::now() + STOP_GRACE;
        for c in self.downloaders.iter_mut().chain([&mut self.resolver]) {
            c.terminate();
        }
        for c in self.downloaders.iter_mut().chain([&mut self.resolver]) {
            let s = c.wait_or_kill(deadline);
            note(c, s);
        }
        let s = self.manager.stop(STOP_GRACE);
        note(&self.manager, s);
        let mut cpu = vec![(self.manager.name().to_owned(), self.manager.cpu())];
        cpu.push((self.resolver.name().to_owned(), self.resolver.cpu()));
        for c in &mut self.downloaders {
            cpu.push((c.name().to_owned(), c.cpu()));
        }
        cpu.extend(app_cpu);
        Stopped { unclean, cpu }
    }
}

/// The admin page's address if `line` is the manager's
/// `manager admin listening addr=IP:PORT`.
fn admin_address(line: &str) -> Option<&str> {
    line.strip_prefix("manager admin listening addr=")?
        .split_whitespace()
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_lines() {
        assert_eq!(
            admin_address("manager admin listening addr=127.0.0.1:7401"),
            Some("127.0.0.1:7401")
        );
        assert_eq!(admin_address("manager listening addr=127.0.0.1:1"), None);
    }

    #[test]
    fn secrets_are_for_the_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin-token");
        write_secret(&path, "abc").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "abc\n");
    }

    #[test]
    fn tokens_are_random_hex() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn generated_config_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path()).unwrap();
        let mut config = Config::default();
        layout.apply(&mut config);
        config.downloader.extra_ca_file = Some(dir.path().join("ca.pem"));
        config.resolver.name_servers = vec!["127.0.0.1:5353".parse().unwrap()];
        write_config(&layout.config, &config, "a test").unwrap();
        assert_eq!(Config::load(&layout.config).unwrap(), config);
    }
}
