//! The operator's contact (issue 28, Done-when 4): `polycrawl crawl` with a seed
//! on the open web and a user agent that names no contact exits with one line
//! saying what to set, before any request. It runs in a network namespace with
//! nothing but its own loopback, so nothing can leave the machine whatever
//! happens; that nothing was even tried shows in the run's folder: no process was
//! started (no `--out` folder at all).

use std::process::{Command, Stdio};
use std::time::Duration;

use tests::bin;
use tests::netns::{self, Isolated};

/// Runs `polycrawl crawl` inside `ns` for at most `limit`; its exit status (None:
/// still running at `limit`, then killed) and stderr.
fn crawl(
    ns: &Isolated,
    dir: &std::path::Path,
    config: &str,
    limit: Duration,
) -> (Option<i32>, String) {
    let config_path = dir.join("config.ron");
    std::fs::write(&config_path, config).expect("config");
    let mut cmd: Command = ns.command(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(dir.join("seeds.txt"))
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn polycrawl crawl");
    let exited = test_support::wait::poll_every(limit, Duration::from_millis(50), || {
        child.try_wait().expect("wait")
    });
    let status = match exited {
        Some(status) => status.code(),
        None => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let _ = child.wait();
            None
        }
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    (status, err)
}

#[test]
fn an_open_web_crawl_without_a_contact_stops_before_any_request() {
    if let Some(why) = netns::unusable() {
        panic!("this test needs a network namespace: {why}");
    }
    let ns = Isolated::new("pct", "contact").expect("an isolated namespace");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("seeds.txt"),
        "http://www.acme1.test/\nhttps://www.example.com/\n",
    )
    .expect("seeds");

    // The default user agent ("polycrawl/<version>") names no contact.
    let (status, err) = crawl(&ns, dir.path(), "()", Duration::from_secs(30));
    assert!(
        matches!(status, Some(c) if c != 0),
        "{status:?}, stderr: {err}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(
        lines[0].contains("https://www.example.com/")
            && lines[0].contains("set downloader.user_agent"),
        "{err}"
    );
    let out = dir.path().join("out");
    assert!(!out.exists(), "{} exists: the run began", out.display());
}
