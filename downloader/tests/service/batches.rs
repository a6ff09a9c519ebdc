//! Page batches: published by age, by size, and when ripe for an application
//! waiting for work; a downloader killed mid-batch leaves only a temp file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use spool::protocol::{FetchResult, JobId};

use crate::manager::{TOKEN, TestManager, config, page, published, records, start};
use crate::site::Site;

fn file_of(result: &FetchResult) -> String {
    match result {
        FetchResult::Stored(page) => page.file.clone(),
        other => panic!("expected Stored, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_published_by_age() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr()); // 300 ms
    let mut m = manager.accept(dl.spool.path()).await;

    m.fetch(vec![page(1, &site.url("/one"), site.addr)]).await;
    m.reports_for(&[1]).await;
    let reported = Instant::now();
    assert!(m.seen.committed.is_empty(), "published before its age");
    m.committed(&[1]).await;
    let waited = reported.elapsed();
    assert!(
        waited < Duration::from_millis(1500),
        "published {waited:?} after the report"
    );

    m.fetch(vec![page(2, &site.url("/two"), site.addr)]).await;
    m.committed(&[2]).await;
    let (first, second) = (file_of(m.seen.result(1)), file_of(m.seen.result(2)));
    assert_ne!(first, second, "a new batch after the first was published");
    assert_eq!(m.seen.committed.len(), 2);
    assert!(m.seen.committed.iter().all(|c| c.2));
    assert_eq!(published(&dl.pages()).len(), 2);
    dl.shutdown.cancel();
    dl.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_published_by_size() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let small = downloader::DownloaderConfig {
        max_batch_bytes: 8192,
        max_batch_age_ms: 60_000,
        ..config()
    };
    let mut dl = start(small, manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;

    // 2000 incompressible bytes each (a record pair is about 3 KB compressed): a
    // batch is full after its third page.
    let jobs = (1..=7)
        .map(|i| page(i, &site.url(&format!("/bytes/{}", 2000 + i)), site.addr))
        .collect();
    m.fetch(jobs).await;
    m.reports_for(&[1, 2, 3, 4, 5, 6, 7]).await;
    // Two full batches are published at once; the last page waits for its age.
    m.until("two Committed", |s| s.committed.len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let files = published(&dl.pages());
    assert_eq!(files.len(), 2, "{files:?}");
    for f in &files {
        let size = std::fs::metadata(f).unwrap().len();
        assert!(
            (8192..8192 + 8000).contains(&size),
            "{}: {size}",
            f.display()
        );
        assert_eq!(records(f).len(), 1 + 2 * 3);
    }
    assert_eq!(m.seen.committed_jobs().len(), 6);
    let uncommitted: Vec<u64> = (1..=7)
        .filter(|j| !m.seen.committed_jobs().contains(&JobId(*j)))
        .collect();
    assert_eq!(uncommitted.len(), 1, "{:?}", m.seen.committed);

    // Shutting down publishes the last one.
    dl.shutdown.cancel();
    m.committed(&uncommitted).await;
    dl.join().await.unwrap();
    assert_eq!(published(&dl.pages()).len(), 3);
}

/// A batch goes out once it is ripe (`RIPE_AGE`) if the application claimed our
/// previous batch, though a job of the application is still running here; while
/// the previous batch lies unclaimed, a ripe batch waits for the claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ripe_batches_go_to_a_waiting_application() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let patient = downloader::DownloaderConfig {
        max_batch_age_ms: 60_000,
        ..config()
    };
    let mut dl = start(patient, manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    let started = Instant::now();

    // Job 2 runs for 4 s: no Publish comes before it ends.
    m.fetch(vec![
        page(1, &site.url("/one"), site.addr),
        page(2, &site.url("/slow/4000"), site.addr),
    ])
    .await;
    m.committed(&[1]).await;
    let first = started.elapsed();
    assert!(
        first < Duration::from_millis(2000),
        "the first batch went out {first:?} after the fetch, not once ripe"
    );
    assert!(!m.seen.reports.contains_key(&JobId(2)), "job 2 ended early");
    let files = published(&dl.pages());
    assert_eq!(files.len(), 1, "{files:?}");

    // The application has not claimed that batch: the next one waits.
    m.fetch(vec![page(3, &site.url("/two"), site.addr)]).await;
    m.reports_for(&[3]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let files = published(&dl.pages());
    assert_eq!(
        files.len(),
        1,
        "published while the previous batch was unclaimed: {files:?}"
    );
    // Claimed (the application moves it away): the ripe batch follows.
    std::fs::remove_file(&files[0]).unwrap();
    m.committed(&[3]).await;
    assert!(!m.seen.reports.contains_key(&JobId(2)), "job 2 ended early");

    dl.shutdown.cancel();
    dl.join().await.unwrap();
}

/// The `polycrawl` binary next to this test's executable (`cargo build --release
/// -p polycrawl` builds it), or `POLYCRAWL_BIN`.
fn polycrawl() -> PathBuf {
    if let Some(p) = std::env::var_os("POLYCRAWL_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable is in <target>/<profile>/deps")
        .join("polycrawl");
    assert!(
        bin.exists(),
        "{} does not exist: build it first with `cargo build --release -p polycrawl` \
         (same CARGO_TARGET_DIR), or set POLYCRAWL_BIN",
        bin.display()
    );
    bin
}

/// Kills the child on drop, whatever happens in the test.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_batch_leaves_no_partial_batch() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let config = dir.path().join("downloader.ron");
    std::fs::write(
        &config,
        "(downloader: (allow_private: true, max_batch_age_ms: 60000))",
    )
    .unwrap();
    let child = Command::new(polycrawl())
        .arg("downloader")
        .arg("--config")
        .arg(&config)
        .args(["--id", "dl-kill", "--manager", &manager.addr().to_string()])
        .arg("--spool")
        .arg(&spool)
        .env("POLYCRAWL_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start polycrawl downloader");
    let mut child = Killed(child);
    let mut m = manager.accept(&spool).await;
    assert_eq!(m.hello.id.as_str(), "dl-kill");

    // 200 KB of pages: the batch's temp file holds data, nothing is published.
    let jobs = (1..=20)
        .map(|i| page(i, &site.url(&format!("/bytes/{}", 10_000 + i)), site.addr))
        .collect();
    m.fetch(jobs).await;
    m.reports_for(&(1..=20).collect::<Vec<_>>()).await;
    let pages = spool.join("pages").join("app1");
    let tmp = published(&pages.join(".tmp"));
    assert_eq!(tmp.len(), 1, "one batch being written: {tmp:?}");

    child.0.kill().unwrap(); // SIGKILL
    let status = child.0.wait().unwrap();
    assert!(!status.success());
    m.until("the connection to close", |s| s.closed).await;
    assert!(m.seen.committed.is_empty());
    assert!(published(&pages).is_empty(), "no batch published");
    let left = published(&pages.join(".tmp"));
    assert_eq!(left, tmp, "only the temp file is left");
    assert!(std::fs::metadata(&left[0]).unwrap().len() > 100_000);
}
