//! The app service end to end without the network: page batches written with
//! spool's `WarcWriter`, a test-side manager on 127.0.0.1:0 sending `AppProgress`,
//! and the request files the service publishes read back.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use app_core::scope::ScopeKind;
use app_core::{AppConfig, AppError, ControlSettings, CrashHook, End};
use flate2::Compression;
use flate2::write::GzEncoder;
use spool::formats::RequestReader;
use spool::name::{FileKind, Priority};
use spool::protocol::Token;
use spool::publish::Publisher;
use spool::warc::{
    Capture, DEPTH_FIELD, HOPS_FIELD, RecordId, WarcDate, WarcHeaders, WarcWriter, payload_digest,
};
use spool::{AppId, ComponentId, Spool};
use test_support::manager::FakeManager;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "test-token";

/// test-support's fake manager: accepts applications and reports them idle when
/// `idle` is set, every 50 ms, echoing the newest `SyncProgress` it received (as
/// the real one does once it has listed the request folders).
async fn fake_manager(idle: Arc<AtomicBool>) -> String {
    fake_manager_for("bfs", idle).await
}

/// [`fake_manager`] for the application `app`.
async fn fake_manager_for(app: &str, idle: Arc<AtomicBool>) -> String {
    let manager = FakeManager::start(FakeManager::config(TOKEN)).await;
    let addr = manager.addr().to_string();
    let app = AppId::new(app).unwrap();
    manager.report_progress(app, idle, Duration::from_millis(50));
    addr
}

struct Dirs {
    _tmp: tempfile::TempDir,
    spool: PathBuf,
    config: AppConfig,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let spool = tmp.path().join("spool");
    let config = AppConfig {
        state_dir: tmp.path().join("state"),
        repository_dir: tmp.path().join("repo"),
        allowed_domains: vec!["a.test".into(), "b.test".into()],
        scan_interval_ms: 50,
        idle_check_ms: 200,
        ..AppConfig::default()
    };
    Dirs {
        _tmp: tmp,
        spool,
        config,
    }
}

/// `app_bfs::run` of `d`'s config on its spool with `seeds`, registered with the
/// manager at `addr`, stopped by `stop`.
fn spawn_app(
    d: &Dirs,
    seeds: Vec<String>,
    addr: &str,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<Result<app_bfs::Summary, AppError>> {
    tokio::spawn(app_bfs::run(
        d.config.clone(),
        Spool::new(&d.spool),
        seeds,
        control(addr),
        stop,
    ))
}

fn control(addr: &str) -> ControlSettings {
    ControlSettings::new(
        addr,
        Token::new(TOKEN).unwrap(),
        ComponentId::new("app-bfs").unwrap(),
    )
}

/// A response record as the downloader writes it: with the request's depth and
/// redirect hops (`Polycrawl-Depth`, `Polycrawl-Hops` when not 0).
fn response(url: &str, raw: &[u8], depth: u32, hops: u32, w: &mut WarcWriter<Vec<u8>>) {
    let capture = Capture {
        target_uri: url,
        date: WarcDate::now(),
        ip: None,
        warcinfo_id: None,
    };
    let head = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let digest = payload_digest(&raw[head..]);
    let mut h = WarcHeaders::response(RecordId::random(), &capture, digest).unwrap();
    h.push(DEPTH_FIELD, &depth.to_string()).unwrap();
    if hops > 0 {
        h.push(HOPS_FIELD, &hops.to_string()).unwrap();
    }
    w.write_record(&h, raw).unwrap();
}

fn html(links: &[&str]) -> Vec<u8> {
    let body: String = links
        .iter()
        .map(|l| format!("<a href=\"{l}\">x</a>"))
        .collect();
    format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n<html><body>{body}</body></html>", body.len() + 26).into_bytes()
}

/// Publishes a page batch of `pages` fetched at link depth `depth`.
fn publish_batch(spool: &Path, depth: u32, pages: &[(&str, Vec<u8>)]) {
    publish_hops(
        spool,
        depth,
        &pages
            .iter()
            .map(|(u, r)| (*u, 0, r.clone()))
            .collect::<Vec<_>>(),
    );
}

/// Publishes a page batch of `(url, redirect hops, response)` at `depth`.
fn publish_hops(spool: &Path, depth: u32, pages: &[(&str, u32, Vec<u8>)]) {
    publish_hops_to(spool, "bfs", depth, pages);
}

/// [`publish_hops`] for the application `app`.
fn publish_hops_to(spool: &Path, app: &str, depth: u32, pages: &[(&str, u32, Vec<u8>)]) {
    let mut w = WarcWriter::new(Vec::new());
    for (url, hops, raw) in pages {
        response(url, raw, depth, *hops, &mut w);
    }
    let data = w.finish().unwrap();
    let dir = Spool::new(spool).pages(&AppId::new(app).unwrap()).unwrap();
    let p = Publisher::new(dir, ComponentId::new("dl-1").unwrap()).unwrap();
    p.publish(Priority::NORMAL, FileKind::PageBatch, &data)
        .unwrap();
    note(spool, ENDED, pages.iter().map(|(url, _, _)| *url));
}

/// The test's notes of the URLs it took from request files, beside the spool.
const TAKEN: &str = "taken.txt";
/// ... and of the URLs it ended, with a page or an outcome.
const ENDED: &str = "ended.txt";

/// Appends `urls` to the note `name`.
fn note<'a>(spool: &Path, name: &str, urls: impl Iterator<Item = &'a str>) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(spool.with_file_name(name))
        .unwrap();
    for url in urls {
        writeln!(f, "{url}").unwrap();
    }
}

/// The URLs in the note `name`.
fn noted(spool: &Path, name: &str) -> BTreeSet<String> {
    std::fs::read_to_string(spool.with_file_name(name))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Ends every URL taken and not ended yet with an outcome (`connect_failure`), as
/// the manager does for a URL it cannot fetch: the app ends only once each URL it
/// requested has a page or an outcome.
fn answer_taken(spool: &Path) {
    let ended = noted(spool, ENDED);
    let open: Vec<String> = noted(spool, TAKEN).difference(&ended).cloned().collect();
    if open.is_empty() {
        return;
    }
    let mut w = spool::formats::OutcomeWriter::new(Vec::new()).unwrap();
    for url in &open {
        w.write(url, spool::OutcomeReason::ConnectFailure, "test")
            .unwrap();
    }
    let dir = Spool::new(spool)
        .outcomes(&AppId::new("bfs").unwrap())
        .unwrap();
    Publisher::new(dir, ComponentId::new("manager").unwrap())
        .unwrap()
        .publish(Priority::NORMAL, FileKind::Outcomes, &w.finish().unwrap())
        .unwrap();
    note(spool, ENDED, open.iter().map(String::as_str));
}

/// Waits (at most 20 s) for the app to end, ending meanwhile every URL it requested
/// that the test did not (see [`answer_taken`]); returns its summary and the
/// requests taken while waiting.
async fn finish(
    spool: &Path,
    app: tokio::task::JoinHandle<Result<app_bfs::Summary, AppError>>,
) -> (app_bfs::Summary, Vec<(String, u32)>) {
    let mut taken = Vec::new();
    let ended = test_support::wait::poll_async_with(
        Duration::from_secs(20),
        Duration::from_millis(25),
        async || {
            if app.is_finished() {
                return Some(());
            }
            taken.extend(take_requests(spool));
            answer_taken(spool);
            None
        },
    )
    .await;
    assert!(
        ended.is_some(),
        "the app did not end within 20 s once every URL it requested ended"
    );
    taken.extend(take_requests(spool));
    (app.await.unwrap().unwrap(), taken)
}

/// Takes (like the manager) every request file: (url, depth) in stream order.
fn take_requests(spool: &Path) -> Vec<(String, u32)> {
    take_requests_of(spool, "bfs")
}

/// [`take_requests`] of the application `app`.
fn take_requests_of(spool: &Path, app: &str) -> Vec<(String, u32)> {
    let dir = Spool::new(spool)
        .requests(&AppId::new(app).unwrap())
        .unwrap();
    let mut out = Vec::new();
    for name in dir.list().unwrap() {
        let path = dir.file_path(&name);
        let file = std::fs::File::open(&path).unwrap();
        let mut r = RequestReader::new(std::io::BufReader::new(file)).unwrap();
        let mut req = Default::default();
        while r.read_into(&mut req).unwrap() {
            let spool::formats::Request { url, hints } = &req;
            out.push((url.clone(), hints.depth.unwrap()));
        }
        std::fs::remove_file(path).unwrap();
    }
    note(spool, TAKEN, out.iter().map(|(url, _)| url.as_str()));
    out
}

/// Waits until the app has consumed every page batch (none published, none
/// claimed): it publishes a batch's links before it lets go of the batch.
async fn wait_batches_consumed(spool: &Path) {
    let dir = Spool::new(spool)
        .pages(&AppId::new("bfs").unwrap())
        .unwrap();
    let claimed_files = |root: &Path| -> usize {
        let Ok(consumers) = std::fs::read_dir(root) else {
            return 0;
        };
        consumers
            .flatten()
            .filter_map(|c| std::fs::read_dir(c.path()).ok())
            .map(Iterator::count)
            .sum()
    };
    test_support::wait::until_async(
        "the app to consume every page batch",
        Duration::from_secs(10),
        || dir.list().unwrap().is_empty() && claimed_files(&dir.claimed_root()) == 0,
    )
    .await;
}

async fn wait_requests(spool: &Path, n: usize) -> Vec<(String, u32)> {
    wait_requests_of(spool, "bfs", n).await
}

/// [`wait_requests`] of the application `app`.
async fn wait_requests_of(spool: &Path, app: &str, n: usize) -> Vec<(String, u32)> {
    let mut got = Vec::new();
    let came = test_support::wait::poll_async_with(
        Duration::from_secs(5),
        Duration::from_millis(25),
        async || {
            got.extend(take_requests_of(spool, app));
            (got.len() >= n).then_some(())
        },
    )
    .await;
    if came.is_none() {
        panic!("only {} of {n} requests came: {got:?}", got.len());
    }
    got
}

fn sorted(v: &[(String, u32)]) -> Vec<(String, u32)> {
    let mut v = v.to_vec();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_batches_become_request_files_and_the_crawl_completes() {
    let d = dirs();
    let idle = Arc::new(AtomicBool::new(false));
    let addr = fake_manager(idle.clone()).await;
    let app = spawn_app(
        &d,
        vec!["https://A.test/#frag".into(), "mailto:x@a.test".into()],
        &addr,
        CancellationToken::new(),
    );

    let seeds = wait_requests(&d.spool, 1).await;
    assert_eq!(seeds, [("https://a.test/".to_owned(), 0)]);

    publish_batch(
        &d.spool,
        0,
        &[(
            "https://a.test/",
            html(&[
                "/p1",
                "/p2",
                "https://b.test/x",
                "https://c.test/out",
                "/p1#dup",
                "mailto:m@a.test",
            ]),
        )],
    );
    let one = wait_requests(&d.spool, 3).await;
    assert_eq!(
        sorted(&one),
        [
            ("https://a.test/p1".to_owned(), 1),
            ("https://a.test/p2".to_owned(), 1),
            ("https://b.test/x".to_owned(), 1)
        ]
    );

    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(b"<html><a href=/p1>again</a><a href=https://a.test/p4>new</a></html>")
        .unwrap();
    let gz = gz.finish().unwrap();
    let mut chunked = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for c in gz.chunks(10) {
        chunked.extend(format!("{:x}\r\n", c.len()).as_bytes());
        chunked.extend(c);
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\n\r\n");
    publish_batch(
        &d.spool,
        1,
        &[
            (
                "https://a.test/p1",
                b"HTTP/1.1 301 Moved\r\nLocation: /p3\r\nContent-Length: 0\r\n\r\n".to_vec(),
            ),
            ("https://b.test/x", chunked),
            ("https://a.test/p2", html(&["/p2", "/"])),
        ],
    );
    let two = wait_requests(&d.spool, 3).await;
    assert_eq!(
        sorted(&two),
        [
            ("https://a.test/p3".to_owned(), 2),
            ("https://a.test/p4".to_owned(), 2),
            ("https://b.test/p1".to_owned(), 2)
        ]
    );

    idle.store(true, Ordering::SeqCst);
    let (summary, rest) = finish(&d.spool, app).await;
    assert_eq!(summary.end, End::Complete);
    assert_eq!(summary.urls_requested, 7);
    assert_eq!(summary.pages.stored, 4);
    assert!(rest.is_empty(), "no duplicates: {rest:?}");
    let pages = Spool::new(&d.spool)
        .pages(&AppId::new("bfs").unwrap())
        .unwrap();
    assert!(pages.list().unwrap().is_empty());
    let claimed: Vec<_> = std::fs::read_dir(pages.claimed_root().join("app-bfs"))
        .unwrap()
        .collect();
    assert!(claimed.is_empty(), "batches moved out of .claimed");
    let repo = storage::RepositoryReader::open(&d.config.repository_dir).unwrap();
    let page = repo.get("https://a.test/p2").unwrap().expect("stored");
    assert_eq!(page.status(), Some(200));
    println!("{summary}");
}

/// Issue 38, Done-when 5: the manager answers "idle" once a URL's page is in a
/// published batch (or its outcome in a published outcome file), but on a shared
/// file system that file shows in the app's folder only after the visibility delay
/// (NFS attribute caching, nfsim's `--visibility-delay-ms`). Here the manager is
/// idle from the start and each file shows ten idle confirmations late
/// (`idle_check_ms` 200 ms): the app must not end before it has read a page or an
/// outcome of every URL it requested. Without the ledger's count it ended in about
/// 0.3 s with its seed's page still on its way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crawl_waits_for_pages_and_outcomes_that_show_late() {
    let d = dirs();
    let late = Duration::from_millis(10 * d.config.idle_check_ms);
    let idle = Arc::new(AtomicBool::new(true));
    let addr = fake_manager(idle.clone()).await;
    let app = spawn_app(
        &d,
        vec!["https://a.test/".into()],
        &addr,
        CancellationToken::new(),
    );
    assert_eq!(
        wait_requests(&d.spool, 1).await,
        [("https://a.test/".to_owned(), 0)]
    );
    // The page is fetched and its batch published elsewhere; it shows this late.
    tokio::time::sleep(late).await;
    assert!(
        !app.is_finished(),
        "the app ended with its seed's page not read: {:?}",
        app.await
    );
    publish_batch(&d.spool, 0, &[("https://a.test/", html(&["/b"]))]);
    assert_eq!(
        wait_requests(&d.spool, 1).await,
        [("https://a.test/b".to_owned(), 1)]
    );
    // /b ends with an outcome, whose file shows as late.
    tokio::time::sleep(late).await;
    assert!(
        !app.is_finished(),
        "the app ended with the outcome of /b not read: {:?}",
        app.await
    );
    answer_taken(&d.spool);
    let (summary, rest) = finish(&d.spool, app).await;
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(summary.end, End::Complete);
    assert_eq!((summary.urls_requested, summary.pages.stored), (2, 1));
    assert_eq!(
        summary.outcomes.get("connect_failure"),
        Some(&1),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_publication_loses_nothing() {
    let mut d = dirs();
    d.config.urls_per_request_file = 5;
    d.config.unshuffle_k = 4;
    let idle = Arc::new(AtomicBool::new(true));
    let addr = fake_manager(idle.clone()).await;
    let links: Vec<String> = (0..30)
        .map(|i| {
            format!(
                "https://{}.test/l{i:02}",
                if i % 2 == 0 { "a" } else { "b" }
            )
        })
        .collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    publish_batch(&d.spool, 0, &[("https://a.test/", html(&refs))]);
    let seeds = vec!["https://a.test/".to_owned()];

    let crashed = app_bfs::run_with_hook(
        d.config.clone(),
        Spool::new(&d.spool),
        seeds.clone(),
        control(&addr),
        CancellationToken::new(),
        CrashHook {
            after_request_files: Some(2),
        },
    )
    .await
    .unwrap();
    assert_eq!(crashed.end, End::Crashed);
    let before = take_requests(&d.spool);
    // The manager reports itself short of URLs, so the seed may be merged (and
    // published, one file of one URL) while the page batch is still being read,
    // or wait for its links and go with them: two files either way, the second
    // one of the 30 links' generation, whose publication the crash cuts.
    assert!(
        [6, 10].contains(&before.len()),
        "two files before the crash: {before:?}"
    );
    let seed_alone = before.len() == 6;
    let repo = &d.config.repository_dir;
    assert!(
        storage::RepositoryReader::open(repo)
            .unwrap()
            .get("https://a.test/")
            .unwrap()
            .is_none(),
        "the batch is not stored before its links are published"
    );

    let app = spawn_app(&d, seeds, &addr, CancellationToken::new());
    let (done, after) = finish(&d.spool, app).await;
    assert_eq!(done.end, End::Complete);
    let all: BTreeSet<String> = before
        .iter()
        .chain(&after)
        .map(|(u, _)| u.clone())
        .collect();
    let mut want: BTreeSet<String> = links.iter().cloned().collect();
    want.insert("https://a.test/".into());
    assert_eq!(all, want, "every URL requested");
    let after_set: BTreeSet<&String> = after.iter().map(|(u, _)| u).collect();
    assert_eq!(after.len(), after_set.len(), "no duplicates within a run");
    let depths: BTreeMap<&String, u32> =
        before.iter().chain(&after).map(|(u, d)| (u, *d)).collect();
    assert_eq!(depths[&"https://a.test/".to_owned()], 0);
    assert_eq!(
        after.iter().any(|(u, _)| u == "https://a.test/"),
        !seed_alone,
        "the seed's generation is published again only if the crash cut it"
    );
    assert_eq!(depths[&"https://b.test/l01".to_owned()], 1);
    // Unshuffled into k = 4 piles: a and b alternate in runs of at most 4, where the
    // sorted batch would be two runs.
    let switches = after
        .windows(2)
        .filter(|w| w[0].0.as_bytes()[8] != w[1].0.as_bytes()[8])
        .count();
    assert!(switches >= 6, "{after:?}");
    assert!(
        storage::RepositoryReader::open(repo)
            .unwrap()
            .get("https://a.test/")
            .unwrap()
            .is_some()
    );
    assert_eq!(done.pages.stored, 1);
}

/// Done-when 4 of the application issue: the request stream the app emits spreads
/// a host's URLs over the whole stream instead of keeping them together (as sorting
/// by host-reversed key, or the page's own link order, would).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emitted_request_stream_is_unshuffled() {
    const HOSTS: usize = 8;
    const PER_HOST: usize = 40;
    let mut d = dirs();
    d.config.allowed_domains = vec!["test".into()];
    d.config.urls_per_request_file = 50;
    let idle = Arc::new(AtomicBool::new(false));
    let addr = fake_manager(idle.clone()).await;
    let stop = CancellationToken::new();
    let app = spawn_app(&d, vec!["https://hub.test/".into()], &addr, stop.clone());
    wait_requests(&d.spool, 1).await;
    // The page lists its links host by host: all of h0's, then all of h1's...
    let links: Vec<String> = (0..HOSTS)
        .flat_map(|h| (0..PER_HOST).map(move |p| format!("https://h{h}.test/p{p:02}")))
        .collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    publish_batch(&d.spool, 0, &[("https://hub.test/", html(&refs))]);
    let stream: Vec<String> = wait_requests(&d.spool, HOSTS * PER_HOST)
        .await
        .into_iter()
        .map(|(url, _)| url)
        .collect();
    assert_eq!(stream.len(), HOSTS * PER_HOST);
    let host = |u: &str| u.split('/').nth(2).unwrap_or("").to_owned();
    let adjacent = stream
        .windows(2)
        .filter(|w| host(&w[0]) == host(&w[1]))
        .count();
    let n = stream.len();
    let mut report = Vec::new();
    for h in 0..HOSTS {
        let name = format!("h{h}.test");
        let pos: Vec<usize> = (0..n).filter(|&i| host(&stream[i]) == name).collect();
        assert_eq!(pos.len(), PER_HOST, "{name}");
        let min_gap = pos.windows(2).map(|w| w[1] - w[0]).min().unwrap();
        report.push(format!(
            "{name} at {}..{} (min gap {min_gap})",
            pos[0],
            pos[PER_HOST - 1]
        ));
        assert!(
            pos[0] < n / 4 && pos[PER_HOST - 1] >= n * 3 / 4,
            "{name}'s URLs are not spread over the stream: positions {pos:?}"
        );
        assert!(min_gap >= HOSTS - 1, "{name}: positions {pos:?}");
    }
    println!(
        "request stream of {n} URLs over {HOSTS} hosts: {adjacent} adjacent same-host pairs \
         (sorted or page order: {}); {}",
        n - HOSTS,
        report.join(", ")
    );
    assert_eq!(adjacent, 0, "stream: {stream:?}");
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(20), app).await;
}

/// Issue 11: a redirect chain ends at `max_redirect_hops` (the hop count travels
/// with the URL: request hint, then the stored page's `Polycrawl-Hops`), and a host
/// gets `host_budget_base + host_budget_per_linking_site * linking sites` URLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_chains_end_at_the_hop_limit_and_hosts_at_their_budget() {
    let mut d = dirs();
    // An open crawl within these domains: its hosts get budgets.
    d.config.scope = ScopeKind::Open;
    d.config.allowed_domains = vec!["s.test".into(), "t.test".into()];
    d.config.host_budget_base = 3;
    d.config.host_budget_per_linking_site = 2;
    d.config.host_budget_max = 100;
    let idle = Arc::new(AtomicBool::new(false));
    let addr = fake_manager(idle.clone()).await;
    let app = spawn_app(
        &d,
        vec!["https://s.test/".into()],
        &addr,
        CancellationToken::new(),
    );
    wait_requests(&d.spool, 1).await;
    // The seed's host links 10 pages of t.test (one linking site: budget 3 + 2)
    // and 10 of its own (a seed's host: the seed budget, capped at the max).
    let links: Vec<String> = (0..10)
        .flat_map(|i| [format!("https://t.test/p{i}"), format!("/own{i}")])
        .collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    publish_batch(&d.spool, 0, &[("https://s.test/", html(&refs))]);
    let got = wait_requests(&d.spool, 15).await;
    let on = |host: &str| got.iter().filter(|(u, _)| u.contains(host)).count();
    assert_eq!((on("t.test"), on("s.test")), (5, 10), "{got:?}");

    // Hop 4 redirects to hop 5 (requested, with its hint); hop 5's target is one
    // hop too many.
    let redirect = |to: &str| {
        format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n").into_bytes()
    };
    publish_hops(
        &d.spool,
        1,
        &[
            ("https://s.test/own0", 4, redirect("/hop5")),
            ("https://s.test/own1", 5, redirect("/hop6")),
            ("https://s.test/own2", 0, redirect("/hop1")),
        ],
    );
    let mut hops = Vec::new();
    test_support::wait::poll_async_with(
        Duration::from_secs(5),
        Duration::from_millis(25),
        async || {
            hops.extend(take_hops(&d.spool));
            (hops.len() >= 2).then_some(())
        },
    )
    .await;
    hops.sort();
    assert_eq!(
        hops,
        [
            ("https://s.test/hop1".to_owned(), Some(1)),
            ("https://s.test/hop5".to_owned(), Some(5))
        ]
    );

    idle.store(true, Ordering::SeqCst);
    let (summary, rest) = finish(&d.spool, app).await;
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!((summary.cut.budget_cut, summary.cut.redirects_cut), (5, 1));
    let t = &summary.cut.most_cut[0];
    assert_eq!(
        (
            t.host.as_str(),
            t.budget,
            t.requested,
            t.cut,
            t.linking_sites
        ),
        ("test.t", 5, 5, 5, 1)
    );
    println!("{summary}");
}

/// Issue 29: a seed is one vote, not trust: its host gets `host_budget_seed`; a
/// host named in `trusted_hosts_file` (or under one named there) gets the max;
/// and the sequence detector cuts a counter on one host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_get_the_seed_budget_and_trusted_hosts_the_max() {
    let mut d = dirs();
    // An open crawl within these domains: its hosts get budgets.
    d.config.scope = ScopeKind::Open;
    d.config.allowed_domains = vec!["s.test".into(), "t.test".into()];
    d.config.host_budget_base = 1;
    d.config.host_budget_seed = 3;
    d.config.host_budget_per_linking_site = 1;
    d.config.host_budget_max = 100;
    d.config.max_sequence_steps = 4;
    let trusted = d.spool.parent().unwrap().join("trusted.txt");
    std::fs::write(&trusted, "# trusted\n\nt.test\n").unwrap();
    d.config.trusted_hosts_file = Some(trusted);
    let idle = Arc::new(AtomicBool::new(false));
    let addr = fake_manager(idle.clone()).await;
    let app = spawn_app(
        &d,
        vec!["https://s.test/".into()],
        &addr,
        CancellationToken::new(),
    );
    wait_requests(&d.spool, 1).await;
    // The seed's host links 10 pages of its own (seed budget 3: the seed and 2
    // more), 10 of www.t.test (trusted: all of them) and its counter page 1.
    let mut links: Vec<String> = (0..10)
        .flat_map(|i| [format!("/own{i}"), format!("https://www.t.test/p{i}")])
        .collect();
    links.push("https://www.t.test/c/1".into());
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    publish_batch(&d.spool, 0, &[("https://s.test/", html(&refs))]);
    let got = wait_requests(&d.spool, 13).await;
    let on = |host: &str| got.iter().filter(|(u, _)| u.contains(host)).count();
    assert_eq!((on("s.test/own"), on("t.test")), (2, 11), "{got:?}");
    // A counter: page n links n + 1. Four steps are followed, the fifth is cut.
    for n in 1..=5u32 {
        let page = format!("https://www.t.test/c/{n}");
        let next = format!("/c/{}", n + 1);
        publish_batch(&d.spool, n, &[(page.as_str(), html(&[next.as_str()]))]);
        if n < 5 {
            let got = wait_requests(&d.spool, 1).await;
            assert_eq!(got[0].0, format!("https://www.t.test/c/{}", n + 1));
        }
    }
    wait_batches_consumed(&d.spool).await;
    idle.store(true, Ordering::SeqCst);
    let (summary, rest) = finish(&d.spool, app).await;
    assert!(rest.is_empty(), "the sixth counter value: {rest:?}");
    assert_eq!(summary.cut.trap_cuts.get("sequence"), Some(&1), "{summary}");
    assert_eq!(summary.cut.budget_cut, 8, "{summary}");
}

/// Takes every request file: (url, hops hint).
fn take_hops(spool: &Path) -> Vec<(String, Option<u32>)> {
    let dir = Spool::new(spool)
        .requests(&AppId::new("bfs").unwrap())
        .unwrap();
    let mut out = Vec::new();
    for name in dir.list().unwrap() {
        let path = dir.file_path(&name);
        let file = std::fs::File::open(&path).unwrap();
        for req in RequestReader::new(std::io::BufReader::new(file)).unwrap() {
            let req = req.unwrap();
            out.push((req.url, req.hints.hops));
        }
        std::fs::remove_file(path).unwrap();
    }
    note(spool, TAKEN, out.iter().map(|(url, _)| url.as_str()));
    out
}

/// Issue 11, Done-when 4 (second half): depths survive an application restart.
/// They travel with the URL (request hint, then the stored page's
/// `Polycrawl-Depth`), so a page requested before the restart and stored after it
/// gives its links the right depth; the application remembers nothing per URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depths_are_right_after_a_restart() {
    let d = dirs();
    let idle = Arc::new(AtomicBool::new(false));
    let addr = fake_manager(idle.clone()).await;
    let start =
        |stop: CancellationToken| spawn_app(&d, vec!["https://a.test/".into()], &addr, stop);
    let stop = CancellationToken::new();
    let app = start(stop.clone());
    assert_eq!(
        wait_requests(&d.spool, 1).await,
        [("https://a.test/".to_owned(), 0)]
    );
    publish_batch(&d.spool, 0, &[("https://a.test/", html(&["/d1"]))]);
    assert_eq!(
        wait_requests(&d.spool, 1).await,
        [("https://a.test/d1".to_owned(), 1)]
    );
    publish_batch(&d.spool, 1, &[("https://a.test/d1", html(&["/d2"]))]);
    assert_eq!(
        wait_requests(&d.spool, 1).await,
        [("https://a.test/d2".to_owned(), 2)]
    );
    // Stop with /d2 requested (depth 2) and not yet fetched.
    stop.cancel();
    let first = tokio::time::timeout(Duration::from_secs(20), app)
        .await
        .expect("the app stops")
        .unwrap()
        .unwrap();
    assert_eq!(first.end, End::Shutdown);

    // A new process: /d2 is stored now, as the downloader writes it.
    let app = start(CancellationToken::new());
    publish_batch(&d.spool, 2, &[("https://a.test/d2", html(&["/d3", "/"]))]);
    assert_eq!(
        wait_requests(&d.spool, 1).await,
        [("https://a.test/d3".to_owned(), 3)],
        "the depth of a page requested before the restart"
    );
    idle.store(true, Ordering::SeqCst);
    let (summary, rest) = finish(&d.spool, app).await;
    assert_eq!(summary.end, End::Complete);
    assert!(rest.is_empty(), "{rest:?}");
}

/// Issue 11: host budgets survive a restart: URLs requested before it still count,
/// so a restart does not hand a trap host a fresh budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_budgets_survive_a_restart() {
    let mut d = dirs();
    // An open crawl within these domains: its hosts get budgets.
    d.config.scope = ScopeKind::Open;
    d.config.allowed_domains = vec!["s.test".into(), "t.test".into()];
    d.config.host_budget_base = 3;
    d.config.host_budget_per_linking_site = 2;
    d.config.host_budget_max = 100;
    let idle = Arc::new(AtomicBool::new(false));
    let addr = fake_manager(idle.clone()).await;
    let start =
        |stop: CancellationToken| spawn_app(&d, vec!["https://s.test/".into()], &addr, stop);
    let links = |range: std::ops::Range<u32>| -> Vec<String> {
        range.map(|i| format!("https://t.test/p{i}")).collect()
    };
    let stop = CancellationToken::new();
    let app = start(stop.clone());
    wait_requests(&d.spool, 1).await;
    // s.test links 3 pages of t.test: its budget is 3 + 2 (one linking site).
    let first = links(0..3);
    let refs: Vec<&str> = first.iter().map(String::as_str).collect();
    publish_batch(&d.spool, 0, &[("https://s.test/", html(&refs))]);
    assert_eq!(wait_requests(&d.spool, 3).await.len(), 3);
    stop.cancel();
    let summary = tokio::time::timeout(Duration::from_secs(20), app)
        .await
        .expect("the app stops")
        .unwrap()
        .unwrap();
    assert_eq!((summary.end, summary.cut.budget_cut), (End::Shutdown, 0));

    // After the restart 5 more: 2 fit in the budget left, 3 are cut.
    let app = start(CancellationToken::new());
    let more = links(3..8);
    let refs: Vec<&str> = more.iter().map(String::as_str).collect();
    publish_batch(&d.spool, 0, &[("https://s.test/again", html(&refs))]);
    let got = wait_requests(&d.spool, 2).await;
    wait_batches_consumed(&d.spool).await;
    let late = take_requests(&d.spool);
    assert!(
        late.is_empty(),
        "more than the budget left: {got:?} {late:?}"
    );
    assert_eq!(got.len(), 2, "{got:?}");
    idle.store(true, Ordering::SeqCst);
    let (summary, rest) = finish(&d.spool, app).await;
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(summary.cut.budget_cut, 3);
    let t = &summary.cut.most_cut[0];
    assert_eq!((t.host.as_str(), t.requested, t.cut), ("test.t", 5, 3));
}

/// Issue 38: a two-level agent's parked URLs go through the host budgets once
/// their site is assigned to it, as the URLs of its own pages do: `t.test`, one
/// linking site (`s.test`, whose vote is parked beside them and dropped here,
/// where it was counted), gets 3 + 2 of the 10 parked; the other 5 are held
/// (saved before the parked file drops them) and 2 go when a second site links
/// the host, the rest counted as cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_level_parked_urls_pass_the_host_budgets() {
    const APP: &str = "bfs-p0";
    let mut d = dirs();
    d.config.app = APP.into();
    d.config.parts = 2;
    d.config.part = 0;
    d.config.part_mode = app_core::config::PartMode::TwoLevel;
    d.config.scope = ScopeKind::Open;
    d.config.allowed_domains = vec!["s.test".into(), "t.test".into(), "u.test".into()];
    d.config.host_budget_base = 3;
    d.config.host_budget_per_linking_site = 2;
    d.config.host_budget_max = 100;
    let assign = app_core::twolevel::assignment_dir(&d.spool, "bfs");
    std::fs::create_dir_all(&assign).unwrap();
    // Assigned without a root: this test is about the parked URLs alone.
    let sites = |names: &[&str]| -> Vec<(String, u32, String)> {
        names
            .iter()
            .map(|s| ((*s).to_owned(), 0, String::new()))
            .collect()
    };
    app_core::twolevel::write_generation(&assign, 1, 2, &sites(&["s.test", "u.test"])).unwrap();
    let idle = Arc::new(AtomicBool::new(false));
    let addr = fake_manager_for(APP, idle).await;
    let stop = CancellationToken::new();
    let app = spawn_app(&d, vec!["https://s.test/".into()], &addr, stop.clone());
    assert_eq!(wait_requests_of(&d.spool, APP, 1).await.len(), 1);
    // s.test links 10 pages of t.test, a site not assigned yet: parked.
    let links: Vec<String> = (0..10).map(|i| format!("https://t.test/p{i}")).collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    let page = html(&refs);
    publish_hops_to(&d.spool, APP, 0, &[("https://s.test/", 0, page)]);
    let state = d.config.state_dir.clone();
    // The lines of t.test in a state file (held URLs are seen-set keys, their
    // host reversed).
    let lines = |file: &str| -> usize {
        std::fs::read_to_string(state.join(file))
            .map(|t| {
                t.lines()
                    .filter(|l| l.contains("t.test") || l.contains("test.t"))
                    .count()
            })
            .unwrap_or(0)
    };
    // And one vote: s.test's link, for t.test's agent to count.
    test_support::wait::until_async("10 URLs and a vote parked", Duration::from_secs(10), || {
        lines("parked") == 11
    })
    .await;
    let parked = std::fs::read_to_string(state.join("parked")).unwrap();
    let votes: Vec<&str> = parked
        .lines()
        .filter(|l| l.split('\t').count() == 4)
        .collect();
    assert_eq!(votes.len(), 1, "{parked}");
    assert!(votes[0].ends_with("\thttps://s.test/"), "{parked}");
    assert!(take_requests_of(&d.spool, APP).is_empty());
    // t.test is ours now: 5 requested, 5 held and saved, none parked.
    app_core::twolevel::write_generation(&assign, 2, 2, &sites(&["t.test"])).unwrap();
    let got = wait_requests_of(&d.spool, APP, 5).await;
    test_support::wait::until_async("5 URLs held", Duration::from_secs(10), || {
        lines("deferred") == 5 && lines("parked") == 0
    })
    .await;
    assert_eq!(got.len(), 5, "{got:?}");
    // Depth 1 of t.test: one link from another site (its root is depth 0).
    assert!(
        got.iter()
            .all(|(u, depth)| u.contains("t.test") && *depth == 1)
    );
    // A page of u.test links t.test: a second site, 2 more.
    let page = html(&["https://t.test/p9"]);
    publish_hops_to(&d.spool, APP, 0, &[("https://u.test/", 0, page)]);
    let more = wait_requests_of(&d.spool, APP, 2).await;
    test_support::wait::until_async("3 URLs held", Duration::from_secs(10), || {
        lines("deferred") == 3
    })
    .await;
    assert_eq!(more.len(), 2, "{more:?}");
    let mut all: Vec<String> = got.into_iter().chain(more).map(|(u, _)| u).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 7, "{all:?}");
    stop.cancel();
    let summary = tokio::time::timeout(Duration::from_secs(20), app)
        .await
        .expect("the app stops")
        .unwrap()
        .unwrap();
    assert_eq!((summary.end, summary.cut.budget_cut), (End::Shutdown, 3));
    let t = &summary.cut.most_cut[0];
    assert_eq!(
        (
            t.host.as_str(),
            t.budget,
            t.requested,
            t.cut,
            t.linking_sites
        ),
        ("test.t", 7, 7, 3, 2)
    );
}

/// Issue 28: the `sitemap` lines of an outcome file (robots.txt `Sitemap:` URLs the
/// manager reports) are requested at their depth when in scope, are not counted as
/// outcomes, and the file stays claimed until they are published: a crash right
/// after their request file loses nothing. A fetched sitemap (a gzip body) gives its
/// URLs at its depth + 1, in scope only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_sitemaps_are_requested_and_sitemaps_read_across_a_crash() {
    use spool::formats::OutcomeWriter;
    use spool::outcome::sitemap_detail;

    let mut d = dirs();
    d.config.urls_per_request_file = 1;
    let idle = Arc::new(AtomicBool::new(true));
    let addr = fake_manager(idle.clone()).await;
    let app = AppId::new("bfs").unwrap();
    let mut w = OutcomeWriter::new(Vec::new()).unwrap();
    w.write(
        "https://a.test/sitemap_index.xml",
        spool::OutcomeReason::Sitemap,
        &sitemap_detail(2),
    )
    .unwrap();
    w.write(
        "https://c.test/sitemap.xml",
        spool::OutcomeReason::Sitemap,
        &sitemap_detail(2),
    )
    .unwrap();
    w.write(
        "https://a.test/private",
        spool::OutcomeReason::RobotsExcluded,
        "",
    )
    .unwrap();
    let outcomes = Spool::new(&d.spool).outcomes(&app).unwrap();
    Publisher::new(outcomes, ComponentId::new("manager").unwrap())
        .unwrap()
        .publish(Priority::NORMAL, FileKind::Outcomes, &w.finish().unwrap())
        .unwrap();
    // A sitemap fetched at depth 3, served as a gzip body.
    let xml = "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
        <url><loc>https://a.test/only1</loc></url><url><loc>https://c.test/x</loc></url></urlset>";
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(xml.as_bytes()).unwrap();
    let body = gz.finish().unwrap();
    let mut raw = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(&body);
    publish_batch(&d.spool, 3, &[("https://a.test/maps/more.xml.gz", raw)]);

    let crashed = app_bfs::run_with_hook(
        d.config.clone(),
        Spool::new(&d.spool),
        Vec::new(),
        control(&addr),
        CancellationToken::new(),
        CrashHook {
            after_request_files: Some(1),
        },
    )
    .await
    .unwrap();
    assert_eq!(crashed.end, End::Crashed);
    let before = take_requests(&d.spool);
    assert_eq!(before.len(), 1, "{before:?}");
    let claimed = d.spool.join("outcomes/bfs/.claimed/app-bfs");
    assert_eq!(
        std::fs::read_dir(&claimed).map_or(0, |r| r.count()),
        1,
        "the outcome file waits, claimed, for its sitemaps' publication"
    );

    let app = spawn_app(&d, Vec::new(), &addr, CancellationToken::new());
    let (done, after) = finish(&d.spool, app).await;
    assert_eq!(done.end, End::Complete);
    let all: BTreeMap<String, u32> = before.into_iter().chain(after).collect();
    let want: BTreeMap<String, u32> = [
        ("https://a.test/sitemap_index.xml".to_owned(), 2),
        ("https://a.test/only1".to_owned(), 4),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        all, want,
        "in-scope sitemap URLs at their depths, nothing of c.test"
    );
    assert_eq!(
        std::fs::read_dir(&claimed).map_or(0, |r| r.count()),
        0,
        "the outcome file is gone once its sitemaps are published"
    );
    let outcomes: Vec<(&str, u64)> = done
        .outcomes
        .iter()
        .map(|(r, n)| (r.as_str(), *n))
        .collect();
    assert!(
        outcomes.contains(&("robots_excluded", 1))
            && !outcomes.iter().any(|(r, _)| *r == "sitemap"),
        "sitemap lines are no outcomes: {outcomes:?}"
    );
}

/// Runs the app until the fake manager, idle, lets it end (every URL it requests
/// ended with an outcome); its summary and the requests.
async fn run_to_end(
    config: &AppConfig,
    spool: &Path,
    seeds: Vec<String>,
) -> (app_bfs::Summary, Vec<(String, u32)>) {
    let idle = Arc::new(AtomicBool::new(true));
    let addr = fake_manager(idle).await;
    let app = tokio::spawn(app_bfs::run(
        config.clone(),
        Spool::new(spool),
        seeds,
        control(&addr),
        CancellationToken::new(),
    ));
    finish(spool, app).await
}

/// Issue 37, Done-when 5: a scoped crawl whose host reaches its ceiling and whose
/// links go past `max_depth` ends `Incomplete`, names the rules and lists every cut
/// URL in `cut.tsv`; fed back (`requeue_file`, the ceiling raised) the same crawl
/// requests exactly those URLs, once, and then calls itself complete; fed back
/// again it requests nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cuts_make_a_crawl_incomplete_and_the_cut_list_fed_back_crawls_exactly_them() {
    let mut d = dirs();
    d.config.host_budget_max = 4;
    d.config.max_depth = 1;
    let idle = Arc::new(AtomicBool::new(false));
    let addr = fake_manager(idle.clone()).await;
    let app = spawn_app(
        &d,
        vec!["https://s.test/".into()],
        &addr,
        CancellationToken::new(),
    );
    assert_eq!(
        wait_requests(&d.spool, 1).await,
        [("https://s.test/".to_owned(), 0)]
    );
    // Ten pages of the seed's site (the ceiling of 4 takes the seed and 3), and a
    // link out of scope (not a cut: the user did not name that site).
    let mut links: Vec<String> = (0..10).map(|i| format!("/p{i}")).collect();
    links.push("https://other.test/x".into());
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    publish_batch(&d.spool, 0, &[("https://s.test/", html(&refs))]);
    let mut first = wait_requests(&d.spool, 3).await;
    // A page at depth 1 links one at depth 2: past max_depth, a cut.
    let at_depth_1 = first[0].0.clone();
    publish_batch(&d.spool, 1, &[(&at_depth_1, html(&["/deep", "/p0"]))]);
    // Its links are published before the batch is let go.
    wait_batches_consumed(&d.spool).await;
    first.extend(take_requests(&d.spool));
    idle.store(true, Ordering::SeqCst);
    let (summary, rest) = finish(&d.spool, app).await;
    first.extend(rest);
    assert_eq!(first.len(), 3, "{first:?}");
    assert_eq!(summary.end, End::Complete);
    assert_eq!(summary.verdict(), "Incomplete");
    let line = summary.to_string();
    assert!(line.starts_with("app bfs: Incomplete: "), "{line}");
    assert!(
        line.contains("host_ceiling=7/1") && line.contains("depth=1/1"),
        "{line}"
    );
    let cut_file = summary.cut.file.clone().expect("a cut list");
    let listed = std::fs::read_to_string(&cut_file).unwrap();
    let mut cut: Vec<&str> = listed
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    cut.sort_unstable();
    let requested: BTreeSet<&str> = first.iter().map(|(u, _)| u.as_str()).collect();
    let mut expected: Vec<String> = (0..10)
        .map(|i| format!("https://s.test/p{i}"))
        .filter(|u| !requested.contains(u.as_str()))
        .collect();
    expected.push("https://s.test/deep".into());
    expected.sort_unstable();
    assert_eq!(cut, expected, "{listed}");

    // Fed back with the ceiling raised: exactly the cut URLs, once each.
    d.config.host_budget_max = 100;
    d.config.requeue_file = Some(cut_file.clone());
    let (again, taken) = run_to_end(&d.config, &d.spool, Vec::new()).await;
    let mut second: Vec<String> = taken.into_iter().map(|(u, _)| u).collect();
    second.sort_unstable();
    assert_eq!(second, expected, "the requeued URLs, each once");
    assert_eq!(again.verdict(), "Complete", "{again}");
    assert!(
        again.cut.by_rule.is_empty() && again.cut.file.is_none(),
        "{again}"
    );

    // Taken once: a third run with the same file requests nothing.
    let (third, taken) = run_to_end(&d.config, &d.spool, Vec::new()).await;
    assert!(taken.is_empty(), "{taken:?}");
    assert_eq!(third.verdict(), "Complete", "{third}");
}
