//! Issue 43, item 5: the URL Frontier gRPC service. A manager and `polycrawl
//! frontier` run as processes; `tests/urlfrontier/fetcher.py` generates its client
//! from the official `urlfrontier.proto` (grpcio-tools), serves a five-host web
//! on 127.0.0.2-6 and runs two fetcher clients at once against the frontier:
//! seeds and links put with `PutURLs`, URLs taken with `GetURLs`, fetched over
//! HTTP and reported back as known URLs, until `GetStats` says the crawl is done.
//!
//! The script fails (and so does this test) unless every page is fetched exactly
//! once and nothing robots.txt disallows is; each queue's URLs are handed out,
//! across both clients, only the manager's interval after the previous one was
//! reported, and both clients took URLs of one queue; a queue with `SetDelay` is
//! served at most once per delay; a queue under `BlockQueueUntil` serves nothing
//! before its time; a queue under `SetCrawlLimit` 3 has exactly 3 pages fetched;
//! `DeleteQueue` ends the URL a (blocked) queue held, and its host sees only its
//! robots.txt, fetched by the frontier; and `GetStats` ends with nothing left,
//! counting every fetch and every URL the manager ended without a page (robots.txt
//! exclusions, the limited and deleted queues' URLs). This test then checks the
//! script's figures and that the frontier logged no error.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use test_support::process::{ProcessGuard, require_python};
use tests::bin;
use tests::websim::parse_ready;

/// The manager's per-host interval in this test (and its minimum).
const INTERVAL_MS: u64 = 400;
const TOKEN: &str = "control-token-for-tests";
const READY: Duration = Duration::from_secs(30);

fn config(dir: &Path) -> String {
    format!(
        r#"(
    spool: (notify: true),
    control: (heartbeat_interval_ms: 500, heartbeat_timeout_ms: 3000),
    downloader: (allow_private: true, connect_timeout_ms: 2000, first_byte_timeout_ms: 5000, total_timeout_ms: 10000),
    manager: (
        admin_http: "",
        progress_interval_ms: 500,
        frontier: (
            interval_ms: {INTERVAL_MS},
            min_interval_ms: {INTERVAL_MS},
            ip_min_interval_ms: 50,
            allow_private_addresses: true,
            request_scan_interval_ms: 100,
            outcome_max_age_ms: 300,
        ),
    ),
    frontier: (state_dir: {state:?}, lease_ms: 20000, merge_interval_ms: 100),
)
"#,
        state = dir.join("frontier-state").display().to_string(),
    )
}

fn addr_of(line: &str) -> SocketAddr {
    parse_ready(line)
        .get("addr")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no addr= in {line:?}"))
}

fn command(sub: &str, config: &Path) -> Command {
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg(sub)
        .arg("--config")
        .arg(config)
        .env("POLYCRAWL_TOKEN", TOKEN)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info");
    cmd
}

#[test]
fn external_fetchers_crawl_through_the_url_frontier() {
    require_python("grpc_tools");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config_path = dir.join("config.ron");
    std::fs::write(&config_path, config(dir)).unwrap();
    let spool = dir.join("spool");
    std::fs::create_dir_all(&spool).unwrap();

    let mut cmd = command("manager", &config_path);
    cmd.args(["--listen", "127.0.0.1:0"])
        .arg("--state")
        .arg(dir.join("state"))
        .arg("--spool")
        .arg(&spool);
    let mut manager = ProcessGuard::spawn("manager", cmd, dir).unwrap();
    let manager_addr = addr_of(
        &manager
            .wait_for_line(|l| l.starts_with("manager listening "), READY)
            .unwrap_or_else(|r| panic!("{r}")),
    );

    let mut cmd = command("frontier", &config_path);
    cmd.args(["--manager", &manager_addr.to_string()])
        .args(["--id", "frontier-1", "--listen", "127.0.0.1:0"])
        .arg("--spool")
        .arg(&spool);
    let mut frontier = ProcessGuard::spawn("frontier", cmd, dir).unwrap();
    let frontier_addr = addr_of(
        &frontier
            .wait_for_line(|l| l.starts_with("frontier listening "), READY)
            .unwrap_or_else(|r| panic!("{r}")),
    );

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new("python3")
        .arg(root.join("tests/urlfrontier/fetcher.py"))
        .args(["--frontier", &frontier_addr.to_string()])
        .arg("--proto")
        .arg(root.join("urlfrontier/proto/urlfrontier.proto"))
        .arg("--work")
        .arg(dir)
        .args(["--interval-ms", &INTERVAL_MS.to_string()])
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .env("no_proxy", "*")
        .output()
        .expect("running python3");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the fetchers failed:\n{}\n{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        frontier.report("frontier"),
        manager.report("manager"),
    );
    let line = stdout.lines().last().unwrap_or_default();
    let figures: serde_json::Value = serde_json::from_str(line).unwrap();
    println!("{figures}");
    // 3 hosts of 8 pages, and 3 pages of the host under a crawl limit of 3.
    assert_eq!(figures["fetched"], 27, "{figures}");
    assert_eq!(figures["limited_fetched"], 3, "{figures}");
    assert_eq!(figures["deleted_removed"], 1, "{figures}");
    let ended = figures["ended_without_page"].as_u64().unwrap();
    assert!(ended > 24, "24 disallowed URLs and the cut ones: {figures}");
    assert_eq!(figures["completed"].as_u64(), Some(27 + ended), "{figures}");
    assert_eq!(
        figures["clients"],
        serde_json::json!(["one", "two"]),
        "{figures}"
    );
    let gap = figures["min_gap_after_done_s"].as_f64().unwrap();
    assert!(gap * 1000.0 >= INTERVAL_MS as f64 - 20.0, "{figures}");

    // The robots.txt files went through the frontier (the manager read them).
    let stderr = std::fs::read_to_string(dir.join("frontier.stderr")).unwrap_or_default();
    assert!(
        !stderr.contains(" ERROR "),
        "the frontier logged errors:\n{stderr}"
    );
    frontier.terminate(Duration::from_secs(10)).unwrap();
    manager.terminate(Duration::from_secs(15)).unwrap();
}
