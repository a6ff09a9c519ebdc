//! websim for the service bench: finds the `polycrawl` binary, starts
//! `polycrawl websim` in a temporary directory (killed when the handle is dropped,
//! even on panic; `--exit-with-parent` covers an abort), waits for its ready line
//! and turns `manifest.tsv` + `hosts.tsv` into fetch targets with their socket
//! addresses, so no DNS is needed. The formats are documented in
//! `websim/src/outfiles.rs` and `cli.rs`; this is a reader of its own because
//! the downloader must not depend on `polycrawl` or `tests`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long websim may take to generate its web and print the ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The websim flags the bench passes.
#[derive(Debug, Clone)]
pub struct Args {
    pub hosts: u32,
    pub pages: u32,
    pub seed: u64,
    pub slow_ms: u64,
    /// websim's tokio worker threads.
    pub threads: u16,
    /// Where websim writes its files (manifest, request log, ...), kept after the
    /// bench; `None`: a temporary directory, removed.
    pub out: Option<PathBuf>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            hosts: 2000,
            pages: 100_000,
            seed: 7,
            slow_ms: 5,
            threads: 1,
            out: None,
        }
    }
}

/// One URL of the manifest, ready to become a `FetchJob`.
#[derive(Debug, Clone)]
pub struct SimUrl {
    pub url: String,
    /// The host's address from `hosts.tsv`, the port from the URL.
    pub addr: SocketAddr,
    /// The status websim answers (manifest column 2).
    pub status: u16,
    pub https: bool,
}

/// A running websim, killed (SIGKILL by pid) and reaped on drop.
pub struct Websim {
    child: Child,
    ready: HashMap<String, String>,
    _dir: tempfile::TempDir,
}

/// The `polycrawl` binary: `POLYCRAWL_BIN`, or next to this bench executable's
/// directory (`<target>/release/deps/service-*` -> `<target>/release/polycrawl`),
/// as `tests/src/bin.rs` finds it. Nothing is built here.
pub fn polycrawl_bin() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("POLYCRAWL_BIN") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("POLYCRAWL_BIN={} does not exist", p.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("the bench's own path: {e}"))?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|profile| profile.join("polycrawl"))
        .ok_or_else(|| format!("{} is not in <target>/<profile>/deps", exe.display()))?;
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "{} does not exist: run `cargo build --release -p polycrawl --bin polycrawl` first \
             (same CARGO_TARGET_DIR), or set POLYCRAWL_BIN",
            bin.display()
        ))
    }
}

impl Websim {
    /// Starts websim and waits for its ready line.
    ///
    /// # Panics
    /// If it cannot start or is not ready within [`READY_TIMEOUT`], with its stderr.
    pub fn start(bin: &Path, args: &Args) -> Websim {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let stderr_path = dir.path().join("websim.stderr");
        let stderr = std::fs::File::create(&stderr_path).expect("websim.stderr");
        let mut child = Command::new(bin)
            .arg("websim")
            .args(["--hosts", &args.hosts.to_string()])
            .args(["--pages", &args.pages.to_string()])
            .args(["--seed", &args.seed.to_string()])
            .args(["--slow-ms", &args.slow_ms.to_string()])
            .args(["--threads", &args.threads.to_string()])
            .arg("--out")
            .arg(args.out.clone().unwrap_or_else(|| dir.path().join("out")))
            .arg("--exit-with-parent")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let stdout = child.stdout.take().expect("websim's stdout");
        let (tx, lines) = mpsc::channel();
        // Reads stdout to the end, so the pipe never fills.
        std::thread::Builder::new()
            .name("websim-stdout".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            })
            .expect("a thread");
        // From here on, a panic kills websim through Drop.
        let mut sim = Websim {
            child,
            ready: HashMap::new(),
            _dir: dir,
        };
        let line = loop {
            match lines.recv_timeout(READY_TIMEOUT) {
                Ok(l) if l.starts_with("websim ready ") => break l,
                Ok(l) => println!("  {l}"),
                Err(e) => panic!(
                    "websim not ready ({e}); stderr:\n{}",
                    std::fs::read_to_string(&stderr_path).unwrap_or_default()
                ),
            }
        };
        sim.ready = line
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        sim
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A path of the ready line (`manifest`, `hosts`, `ca`, ...).
    pub fn path(&self, key: &str) -> PathBuf {
        PathBuf::from(
            self.ready
                .get(key)
                .unwrap_or_else(|| panic!("no {key}= in websim's ready line")),
        )
    }

    /// Every manifest URL in manifest order (breadth-first), with its address.
    pub fn urls(&self) -> Vec<SimUrl> {
        let hosts: HashMap<String, Ipv4Addr> = rows(&self.path("hosts"), |f| {
            (f[0].to_owned(), f[2].parse().expect("hosts.tsv: address"))
        })
        .into_iter()
        .collect();
        rows(&self.path("manifest"), |f| {
            let target = downloader::Target::parse(f[0]).expect("manifest URL");
            let ip = hosts
                .get(target.host())
                .unwrap_or_else(|| panic!("{}: host not in hosts.tsv", f[0]));
            SimUrl {
                url: f[0].to_owned(),
                addr: SocketAddr::from((*ip, target.port())),
                status: f[1].parse().expect("manifest.tsv: status"),
                https: target.scheme() == downloader::Scheme::Https,
            }
        })
    }
}

impl Drop for Websim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `row` applied to every data row of a websim TSV file (header lines start with
/// `#`), split on tabs.
fn rows<T>(path: &Path, mut row: impl FnMut(&[&str]) -> T) -> Vec<T> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| row(&l.split('\t').collect::<Vec<_>>()))
        .collect()
}
