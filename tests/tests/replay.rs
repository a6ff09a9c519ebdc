//! Issue 27, Done-when 1: the archive a crawl leaves is one that archives take.
//! `polycrawl crawl` fetches a websim of more than 5,000 pages with WARC files
//! capped small (`app.warc_max_bytes`); then
//!
//! - the repository holds several WARC files, each closed one full (the next batch
//!   would not have fit under the cap), and
//!   `warcio check` passes every file;
//! - `polycrawl wacz` packages it and py-wacz's `wacz validate` accepts the package;
//! - pywb (its own indexer, `wb-manager add`, and its own server `wayback` on
//!   loopback) replays a sample of at least 200 index lines: every response served
//!   with its status and, where no content coding intervenes, a body whose SHA-1 is
//!   the line's payload digest; every redirect served as the redirect it was (or,
//!   pywb's rule for a redirect to the same SURT key, as the page it leads to); every
//!   revisit resolved to its original's body (digest equal again); a record whose
//!   stored head names a transfer or content coding (websim chunks and gzips some
//!   hosts) is checked for its status only;
//! - headless Chromium loads one replayed page through pywb, and its screenshot is
//!   not blank (far larger than the screenshot of an empty page of the same size).
//!
//! pywb, warcio and wacz are Python packages `ops/setup.sh` installs, Chromium a
//! Debian one; a missing one fails the test with that hint.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::archive::{self, Pywb};
use tests::bin;
use tests::browser::{Browser, chromium};
use tests::process::{ProcessGuard, require_python};
use tests::system::Knobs;
use tests::websim::Websim;

/// The WARC size cap of this crawl: small, so the repository has several files.
const WARC_MAX_BYTES: u64 = 4_000_000;
/// Index lines replayed.
const SAMPLE: usize = 240;

/// One CDXJ line of the repository's index, the fields this test uses.
#[derive(Debug, Clone)]
struct Line {
    timestamp: String,
    url: String,
    mime: String,
    status: u16,
    digest: String,
    filename: String,
    offset: u64,
}

impl Line {
    /// Whether the stored HTTP head says a transfer or content coding was applied
    /// (`Transfer-Encoding`, `Content-Encoding`): then the bytes a replay serves
    /// need not be the stored payload's.
    fn coded(&self, repo: &Path) -> bool {
        use std::io::{BufReader, Read, Seek, SeekFrom};
        let mut f = std::fs::File::open(repo.join("warc").join(&self.filename)).unwrap();
        f.seek(SeekFrom::Start(self.offset)).unwrap();
        let rec = spool::warc::WarcReader::new(BufReader::new(f.take(64 << 20)))
            .next()
            .unwrap()
            .unwrap();
        let end = rec
            .block
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or(rec.block.len());
        let head = String::from_utf8_lossy(&rec.block[..end]).to_ascii_lowercase();
        head.contains("\ntransfer-encoding:") || head.contains("\ncontent-encoding:")
    }
}

fn index_lines(repo: &Path) -> Vec<Line> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(repo.join("index")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for l in text.lines() {
            let mut parts = l.splitn(3, ' ');
            let (_, ts, json) = (parts.next(), parts.next(), parts.next());
            let v: Value = serde_json::from_str(json.unwrap()).unwrap();
            let field = |k: &str| v[k].as_str().unwrap_or("-").to_owned();
            lines.push(Line {
                timestamp: ts.unwrap().to_owned(),
                url: field("url"),
                mime: field("mime"),
                status: field("status").parse().unwrap_or(0),
                digest: field("digest"),
                filename: field("filename"),
                offset: field("offset").parse().unwrap_or(0),
            });
        }
    }
    lines.sort_by(|a, b| (&a.url, &a.timestamp).cmp(&(&b.url, &b.timestamp)));
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_is_archived_packaged_and_replayed_by_pywb() {
    for m in ["warcio", "wacz", "pywb"] {
        require_python(m);
    }
    let chromium = chromium().expect("chromium is missing: run ops/setup.sh");
    let ws = Websim::start(&["--hosts", "60", "--pages", "6000", "--slow-ms", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let knobs = Knobs {
        interval_ms: 20,
        ip_min_interval_ms: 10,
        max_crawl_delay_ms: 100,
        ..Knobs::default()
    };
    let config = knobs.config(&ws, "unused-admin-token").replacen(
        "(\n",
        &format!(
            "(\n    app: (scope: open, allowed_domains: [], urls_per_request_file: 200, scan_interval_ms: 200, \
             warc_max_bytes: {WARC_MAX_BYTES}),\n"
        ),
        1,
    );
    let config_path = dir.path().join("config.ron");
    std::fs::write(&config_path, config).unwrap();

    // The crawl, to its end.
    let started = Instant::now();
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(ws.path("seeds"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--config")
        .arg(&config_path)
        .env("NO_COLOR", "1");
    let mut crawl = ProcessGuard::spawn("crawl", cmd, dir.path()).unwrap();
    let status = crawl.wait_exit(Duration::from_secs(240)).unwrap();
    let Some(status) = status else {
        panic!("{}", crawl.report("not done in 240 s"));
    };
    assert!(status.success(), "{}", crawl.report("failed"));
    let crawl_took = started.elapsed();
    let repo = dir.path().join("out").join("repository");

    // The WARC files: several, each closed one full; warcio reads them all.
    let warcs = tests::repository::warc_files(&repo).expect("the WARC files");
    let sizes: Vec<u64> = warcs
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .collect();
    assert!(warcs.len() >= 3, "WARC files {sizes:?}");
    // Each closed file took appends until the next whole batch would not fit:
    // its size plus the next file's first append is over the cap. (How close a
    // file gets to the cap depends on the batch sizes, which grow with load.)
    for (i, size) in sizes.iter().enumerate() {
        assert!(
            *size <= WARC_MAX_BYTES,
            "file {i} of {sizes:?} over the cap"
        );
        if let Some(next) = warcs.get(i + 1) {
            let first = tests::repository::first_append_len(next).expect("the next WARC file");
            assert!(
                size + first > WARC_MAX_BYTES,
                "file {i} of {sizes:?} closed while the next file's first append \
                 ({first} bytes) would have fit"
            );
        }
    }
    archive::warcio_check(&warcs, dir.path());

    // The WACZ.
    archive::wacz_validated(&repo, dir.path());

    // pywb: its own index of the WARC files, its own server on loopback.
    let pywb = Pywb::start(&warcs, dir.path()).await;
    let (addr, host, client) = (pywb.addr, pywb.host.clone(), pywb.client.clone());

    // The sample: every k-th line, and every kind represented.
    let lines = index_lines(&repo);
    assert!(lines.len() >= 5000, "{} index lines", lines.len());
    let revisits: Vec<&Line> = lines.iter().filter(|l| l.mime == "warc/revisit").collect();
    let redirects: Vec<&Line> = lines
        .iter()
        .filter(|l| l.mime != "warc/revisit" && (300..400).contains(&l.status))
        .collect();
    let step = lines.len() / (SAMPLE - 40);
    let mut sample: Vec<&Line> = lines.iter().step_by(step.max(1)).collect();
    sample.extend(
        revisits
            .iter()
            .step_by((revisits.len() / 20).max(1))
            .take(20),
    );
    sample.extend(
        redirects
            .iter()
            .step_by((redirects.len() / 20).max(1))
            .take(20),
    );
    assert!(sample.len() >= 200, "{} sampled", sample.len());
    assert!(!revisits.is_empty() && !redirects.is_empty());

    let (mut digests, mut coded, mut redirected, mut resolved) = (0, 0, 0, 0);
    let mut self_redirects = 0;
    for l in &sample {
        let target = format!("/crawl/{}id_/{}", l.timestamp, l.url);
        let r = client
            .get(addr, false, &host, &target, &[])
            .await
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        let revisit = l.mime == "warc/revisit";
        // A redirect (a revisit of one too: equal bodies of redirects are
        // deduplicated) is judged by its status and Location, not by its body,
        // which pywb may write itself.
        if (300..400).contains(&l.status) {
            if (300..400).contains(&r.status) {
                assert!(r.header("location").is_some(), "{target}: no Location");
                redirected += 1;
            } else {
                // pywb skips a redirect to the same SURT key (http to https, a
                // host's `www.`) and serves where it leads: resolved, not broken.
                assert_eq!(r.status, 200, "{target}: a redirect replayed as neither");
                self_redirects += 1;
            }
            continue;
        }
        if !revisit {
            assert_eq!(r.status, l.status, "{target}");
        }
        if r.header("content-encoding").is_some() || l.coded(&repo) {
            coded += 1;
            continue;
        }
        let got = spool::warc::payload_digest(&r.raw_body).to_string();
        assert_eq!(
            got, l.digest,
            "{target}: body differs from the stored payload"
        );
        digests += 1;
        if revisit {
            resolved += 1;
        }
    }
    assert!(redirected >= 1 && resolved >= 1, "{redirected} {resolved}");

    // One page, replayed in Chromium through pywb (no frame: `mp_`).
    let page = lines
        .iter()
        .find(|l| l.status == 200 && l.mime == "text/html" && l.url.ends_with('/'))
        .expect("an HTML page");
    let shots = dir.path();
    let mut browser = Browser::launch(&chromium, shots, 1024, 768);
    {
        let mut blank = browser.open("data:text/html,<html><body></body></html>");
        blank.wait_for(
            "the blank page",
            "document.readyState === 'complete'",
            Duration::from_secs(30),
        );
        blank.screenshot(&shots.join("blank.png"));
    }
    let url = format!("http://{host}/crawl/{}mp_/{}", page.timestamp, page.url);
    let mut tab = browser.open(&url);
    tab.wait_for(
        "the replayed page",
        "document.readyState === 'complete' && document.body && document.body.innerText.length > 50",
        Duration::from_secs(30),
    );
    tab.screenshot(&shots.join("replay.png"));
    drop(tab);
    drop(browser);
    let blank_len = std::fs::metadata(shots.join("blank.png")).unwrap().len();
    let replay_len = std::fs::metadata(shots.join("replay.png")).unwrap().len();
    assert!(
        replay_len > 3 * blank_len,
        "the replay's screenshot ({replay_len} bytes) is no bigger than a blank one ({blank_len})"
    );
    println!(
        "replay: crawl {crawl_took:?}, {} index lines, {} WARC files {sizes:?}; {} sampled: \
         {digests} digests equal ({resolved} revisits resolved), {redirected} redirects \
         (and {self_redirects} followed by pywb to the same key), \
         {coded} with a content coding; screenshot {replay_len} bytes (blank {blank_len})",
        lines.len(),
        warcs.len(),
        sample.len()
    );
}
