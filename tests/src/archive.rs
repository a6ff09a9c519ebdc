//! The archive readers nobody here wrote, run on a crawl's WARC files: `warcio
//! check`, `wacz validate` on what `polycrawl wacz` packs, and pywb's `wayback`
//! replay server on loopback ([`Pywb`]). The replay, recrawl and HTTP/2 tests judge
//! their archives with them.
//!
//! These helpers only start processes on loopback, each killed when its guard
//! drops; they must never judge what a page should contain (the tests do).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::bin;
use crate::http::Client;
use crate::process::{ProcessGuard, run_ok};

/// A free loopback port, for servers that cannot be told to take port 0 and say
/// which they took (pywb, nginx). Another process may take it first: rare, and the
/// server then fails to start with a clear error.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
    l.local_addr().expect("its address").port()
}

/// `warcio check` on `warcs` (run in `dir`); panics with its output if it fails.
pub fn warcio_check(warcs: &[PathBuf], dir: &Path) {
    let mut check = Command::new("python3");
    check.args(["-m", "warcio.cli", "check"]).args(warcs);
    run_ok("warcio check", check, dir);
}

/// Packs `repo` with `polycrawl wacz` into `dir/crawl.wacz` and checks it with
/// `wacz validate`; returns the file.
pub fn wacz_validated(repo: &Path, dir: &Path) -> PathBuf {
    let wacz = dir.join("crawl.wacz");
    let mut pack = Command::new(bin::polycrawl());
    pack.arg("wacz")
        .arg("--repo")
        .arg(repo)
        .arg("--out")
        .arg(&wacz);
    run_ok("polycrawl wacz", pack, dir);
    let mut validate = Command::new("python3");
    validate.args(["-m", "wacz", "validate", "-f"]).arg(&wacz);
    let said = run_ok("wacz validate", validate, dir);
    assert!(said.contains("Validation succeeded"), "{said}");
    wacz
}

/// pywb's `wayback` serving one collection, `crawl`, of WARC files on loopback.
pub struct Pywb {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The `Host` to send it.
    pub host: String,
    /// A plain HTTP client for it.
    pub client: Client,
    _server: ProcessGuard,
}

impl Pywb {
    /// Indexes `warcs` into a collection `crawl` under `dir/pywb` (`wb-manager`),
    /// starts `wayback` on a free port and waits (up to 60 s) until it answers.
    pub async fn start(warcs: &[PathBuf], dir: &Path) -> Pywb {
        let root = dir.join("pywb");
        std::fs::create_dir_all(&root).expect("the pywb folder");
        let mut init = Command::new("wb-manager");
        init.args(["init", "crawl"]);
        run_ok("wb-manager init", init, &root);
        let mut add = Command::new("wb-manager");
        add.args(["add", "crawl"]).args(warcs);
        run_ok("wb-manager add", add, &root);
        let port = free_port();
        let mut wayback = Command::new("wayback");
        wayback
            .args(["-b", "127.0.0.1", "-p", &port.to_string()])
            .current_dir(&root);
        let server = ProcessGuard::spawn("wayback", wayback, dir).expect("starting wayback");
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let client = Client::plain();
        let host = format!("127.0.0.1:{port}");
        test_support::wait::until_async_with(
            "pywb to answer",
            Duration::from_secs(60),
            Duration::from_millis(200),
            async || client.get(addr, false, &host, "/", &[]).await.is_ok(),
        )
        .await;
        Pywb {
            addr,
            host,
            client,
            _server: server,
        }
    }
}
