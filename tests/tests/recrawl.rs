//! Issue 27, Done-when 2: a recrawl with conditional requests. `polycrawl crawl`
//! fetches websim (revision 0); websim starts again on the same ports at revision
//! 1, with 20 % of its pages changed; `polycrawl recrawl` revisits every URL of the
//! repository with `If-None-Match` / `If-Modified-Since` from the stored responses.
//! Then, against websim's `changes.tsv`:
//!
//! - every `not_modified` URL was answered 304 and stored as a server-not-modified
//!   revisit, every `unchanged` and `fixed` one as an identical-payload revisit,
//!   every `changed` one as a new response: the counts of the recrawl's summary
//!   line equal the manifest's, and so do the repository's index lines of the
//!   recrawl, URL by URL;
//! - websim's request log shows the conditional headers were sent: 304s exactly
//!   for the `not_modified` URLs;
//! - `warcio check` passes every WARC file;
//! - pywb (its own index and server on loopback) replays the newest version of a
//!   changed page (revision 1's text) and, at the first crawl's time, the old one;
//!   and a not-modified page at the recrawl's time as the earlier page.
//!
//! warcio and pywb are Python packages `ops/setup.sh` installs.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::bin;
use tests::http::Client;
use tests::process::{ProcessGuard, require_python, run_ok};
use tests::system::Knobs;
use tests::websim::Websim;

fn websim(extra: &[&str]) -> Websim {
    let mut args = vec![
        "--hosts",
        "40",
        "--pages",
        "800",
        "--seed",
        "5",
        "--slow-ms",
        "50",
    ];
    args.extend_from_slice(extra);
    Websim::start(&args)
}

/// The test's config for `ws`: [`Knobs::crawl_config`].
fn config(ws: &Websim, dir: &Path, name: &str) -> PathBuf {
    Knobs::crawl_config(ws, dir, name)
}

/// Runs `polycrawl ARGS` to its end; returns its stdout lines.
fn polycrawl(what: &str, args: &[&std::ffi::OsStr], dir: &Path) -> Vec<String> {
    let mut cmd = Command::new(bin::polycrawl());
    cmd.args(args).env("NO_COLOR", "1");
    let mut p = ProcessGuard::spawn(what, cmd, dir).unwrap();
    let status = p.wait_exit(Duration::from_secs(240)).unwrap();
    let Some(status) = status else {
        panic!("{}", p.report("not done in 240 s"));
    };
    assert!(status.success(), "{}", p.report("failed"));
    p.stdout()
}

/// One CDXJ line: (url, timestamp, mime, status, digest).
type IndexLine = (String, String, String, String, String);

/// Every CDXJ line of the repository.
fn index_lines(repo: &Path) -> Vec<IndexLine> {
    read_index_lines(repo).unwrap()
}

/// [`index_lines`] of a repository a recrawl is writing, or `None` when an index
/// file went away between the listing and its reading: storage merges index files
/// (the merged one renamed in, then its inputs deleted), so a poll reads again.
fn index_lines_live(repo: &Path) -> Option<Vec<IndexLine>> {
    match read_index_lines(repo) {
        Ok(lines) => Some(lines),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("reading {}: {e}", repo.display()),
    }
}

fn read_index_lines(repo: &Path) -> std::io::Result<Vec<IndexLine>> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(repo.join("index"))? {
        let text = std::fs::read_to_string(entry?.path())?;
        for l in text.lines() {
            let mut parts = l.splitn(3, ' ');
            let (_, ts, json) = (parts.next(), parts.next(), parts.next());
            let v: Value = serde_json::from_str(json.unwrap()).unwrap();
            let field = |k: &str| v[k].as_str().unwrap_or("-").to_owned();
            lines.push((
                field("url"),
                ts.unwrap().to_owned(),
                field("mime"),
                field("status"),
                field("digest"),
            ));
        }
    }
    Ok(lines)
}

/// The number after `label` in the summary line (`... stored as 12 responses ...`).
fn count_before(line: &str, label: &str) -> u64 {
    let end = line
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {line}"));
    let start = line[..end].trim_end().rfind(' ').map_or(0, |i| i + 1);
    line[start..end].trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recrawl_stores_304s_and_unchanged_pages_as_revisits_as_websim_says() {
    for m in ["warcio", "pywb"] {
        require_python(m);
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // The first crawl, of revision 0.
    let ws = websim(&[]);
    let first_config = config(&ws, d, "first.ron");
    let (http, https) = (ws.http_port.to_string(), ws.https_port.to_string());
    let started = Instant::now();
    polycrawl(
        "crawl",
        &[
            "crawl".as_ref(),
            "--seeds".as_ref(),
            ws.path("seeds").as_os_str(),
            "--out".as_ref(),
            d.join("first").as_os_str(),
            "--config".as_ref(),
            first_config.as_os_str(),
        ],
        d,
    );
    let crawl_took = started.elapsed();
    let repo = d.join("first").join("repository");
    let before = index_lines(&repo).len();
    drop(ws);

    // Revision 1 on the same ports (URLs carry them), 20 % of the pages changed.
    let ws = websim(&[
        "--revision",
        "1",
        "--change-share",
        "0.2",
        "--http-port",
        &http,
        "--https-port",
        &https,
    ]);
    let changes: BTreeMap<String, String> = ws.changes().into_iter().collect();
    let count = |what: &str| changes.values().filter(|c| *c == what).count() as u64;
    let (changed, not_modified) = (count("changed"), count("not_modified"));
    let identical = count("unchanged") + count("fixed");
    assert!(changed > 0 && not_modified > 0 && identical > 0);
    let pages = ws.manifest().iter().filter(|r| r.status == 200).count() as u64;
    assert!(
        changed * 100 >= pages * 15 && changed * 100 <= pages * 25,
        "{changed} of {pages} pages changed"
    );

    let second_config = config(&ws, d, "second.ron");
    let started = Instant::now();
    let out = polycrawl(
        "recrawl",
        &[
            "recrawl".as_ref(),
            "--repo".as_ref(),
            repo.as_os_str(),
            "--out".as_ref(),
            d.join("second").as_os_str(),
            "--config".as_ref(),
            second_config.as_os_str(),
        ],
        d,
    );
    let recrawl_took = started.elapsed();
    let list = std::fs::read_to_string(d.join("second").join("recrawl-urls.txt")).unwrap();
    let listed: Vec<&str> = list.lines().collect();
    assert_eq!(
        listed.len(),
        changes.len(),
        "the recrawl revisits every URL of the first crawl, and those are the manifest's"
    );
    assert!(listed.iter().all(|u| changes.contains_key(*u)));

    // The summary line's counts equal websim's manifest.
    let line = out
        .iter()
        .find(|l| l.contains("identical-payload revisits"))
        .unwrap_or_else(|| panic!("no app summary line in {out:?}"));
    assert_eq!(count_before(line, "responses,"), changed, "{line}");
    assert_eq!(
        count_before(line, "identical-payload revisits"),
        identical,
        "{line}"
    );
    assert_eq!(
        count_before(line, "not-modified revisits"),
        not_modified,
        "{line}"
    );

    // The index, URL by URL: each manifest URL's newest line is what websim says.
    let lines = index_lines(&repo);
    assert_eq!(
        lines.len() as u64,
        before as u64 + changed + not_modified + identical
    );
    let mut newest: HashMap<&str, &IndexLine> = HashMap::new();
    let mut oldest: HashMap<&str, &IndexLine> = HashMap::new();
    for l in &lines {
        let n = newest.entry(l.0.as_str()).or_insert(l);
        if l.1 > n.1 {
            *n = l;
        }
        let o = oldest.entry(l.0.as_str()).or_insert(l);
        if l.1 < o.1 {
            *o = l;
        }
    }
    for (url, change) in &changes {
        let (new, old) = (newest[url.as_str()], oldest[url.as_str()]);
        assert!(new.1 > old.1, "{url}: no capture of the recrawl");
        match change.as_str() {
            "changed" => {
                assert_ne!(new.2, "warc/revisit", "{url}");
                assert_ne!(new.4, old.4, "{url}: a changed page with the old digest");
            }
            _ => {
                assert_eq!(new.2, "warc/revisit", "{url}: {change}");
                assert_eq!(new.4, old.4, "{url}: {change} refers to another payload");
            }
        }
    }

    // websim saw the conditional requests: 304 exactly for the not_modified URLs.
    // websim writes its log in the background: wait (bounded) until it holds
    // as many as there should be; the count must then be exactly that.
    let count_304 = || ws.log().iter().filter(|l| l.status == 304).count() as u64;
    test_support::wait::poll_every(Duration::from_secs(10), Duration::from_millis(50), || {
        (count_304() >= not_modified).then_some(())
    });
    assert_eq!(count_304(), not_modified, "304s in websim's log");

    // Every WARC file passes warcio.
    let warcs = tests::repository::warc_files(&repo).expect("the WARC files");
    let mut check = Command::new("python3");
    check.args(["-m", "warcio.cli", "check"]).args(&warcs);
    run_ok("warcio check", check, d);

    // pywb replays the newest version of a changed page, and the old one at the
    // first crawl's time.
    let plain: std::collections::HashSet<String> = ws
        .hosts()
        .into_iter()
        .filter(|h| !h.has("gzip") && !h.has("chunked"))
        .map(|h| h.name)
        .collect();
    let host_of = |url: &str| -> String {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let authority = rest.split('/').next().unwrap_or(rest);
        authority.split(':').next().unwrap_or(authority).to_owned()
    };
    let page = changes
        .iter()
        .find(|(url, c)| {
            *c == "changed"
                && newest[url.as_str()].2.starts_with("text/html")
                && plain.contains(&host_of(url))
        })
        .map(|(u, _)| u.clone())
        .expect("a changed HTML page of a host without gzip or chunking");
    let pywb = d.join("pywb");
    std::fs::create_dir_all(&pywb).unwrap();
    let mut init = Command::new("wb-manager");
    init.args(["init", "crawl"]);
    run_ok("wb-manager init", init, &pywb);
    let mut add = Command::new("wb-manager");
    add.args(["add", "crawl"]).args(&warcs);
    run_ok("wb-manager add", add, &pywb);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut wayback = Command::new("wayback");
    wayback
        .args(["-b", "127.0.0.1", "-p", &port.to_string()])
        .current_dir(&pywb);
    let _server = ProcessGuard::spawn("wayback", wayback, d).unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let client = Client::plain();
    let host = format!("127.0.0.1:{port}");
    test_support::wait::until_async_with(
        "pywb to answer",
        Duration::from_secs(60),
        Duration::from_millis(200),
        async || client.get(addr, false, &host, "/", &[]).await.is_ok(),
    )
    .await;
    let replay = |ts: String| {
        let client = client.clone();
        let host = host.clone();
        let target = format!("/crawl/{ts}id_/{page}");
        async move {
            let r = client.get(addr, false, &host, &target, &[]).await.unwrap();
            assert_eq!(r.status, 200, "{target}");
            (
                r.text(),
                spool::warc::payload_digest(&r.raw_body).to_string(),
            )
        }
    };
    let (new_text, new_digest) = replay(newest[page.as_str()].1.clone()).await;
    assert!(new_text.contains("Updated in revision 1."), "{page}");
    assert_eq!(new_digest, newest[page.as_str()].4);
    let (old_text, old_digest) = replay(oldest[page.as_str()].1.clone()).await;
    assert!(!old_text.contains("Updated in revision"), "{page}");
    assert_eq!(old_digest, oldest[page.as_str()].4);

    // A not-modified page at the recrawl's time. pywb's own index (above) holds
    // the 304 response record of the batch too, and serves it (a 304, as
    // recorded); the repository's CDXJ index holds only the server-not-modified
    // revisit, through which pywb serves the earlier page: checked with a second
    // collection over the same WARC files and the repository's own index.
    let same = changes
        .iter()
        .find(|(url, c)| *c == "not_modified" && plain.contains(&host_of(url)))
        .map(|(u, _)| u.clone())
        .expect("a not-modified page of a host without gzip or chunking");
    let ours = pywb.join("collections").join("ours");
    let mut init = Command::new("wb-manager");
    init.args(["init", "ours"]);
    run_ok("wb-manager init ours", init, &pywb);
    copy_tree(&repo.join("warc"), &ours.join("archive"));
    let mut cdxj: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(repo.join("index")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        cdxj.extend(text.lines().map(str::to_owned));
    }
    cdxj.sort();
    std::fs::write(
        ours.join("indexes").join("index.cdxj"),
        cdxj.join("\n") + "\n",
    )
    .unwrap();
    let target = format!("/ours/{}id_/{same}", newest[same.as_str()].1);
    // pywb notices a new collection on its next look at the folder.
    let mut last = None;
    let found = test_support::wait::poll_async_with(
        Duration::from_secs(30),
        Duration::from_millis(500),
        async || {
            let r = client.get(addr, false, &host, &target, &[]).await.unwrap();
            if r.status != 404 {
                return Some(r);
            }
            last = Some(r);
            None
        },
    )
    .await;
    let r = found.or(last).expect("pywb was asked at least once");
    assert_eq!(r.status, 200, "{target}: {:?}", r.headers);
    assert_eq!(
        spool::warc::payload_digest(&r.raw_body).to_string(),
        oldest[same.as_str()].4,
        "{target}"
    );

    println!(
        "recrawl: crawl {crawl_took:?}, recrawl {recrawl_took:?} of {} URLs: {changed} changed, \
         {not_modified} not modified (304), {identical} identical payloads; {} WARC files",
        listed.len(),
        warcs.len()
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

/// kill -9 of `polycrawl recrawl` (and so of its children) mid-run, then the same
/// command again with the same `--out`: it resumes, and every URL of the first
/// crawl still ends with a capture of the recrawl of the kind websim's
/// `changes.tsv` says (a URL in flight at the kill may be fetched twice; none is
/// lost).
///
/// Killing the whole system at once (manager and downloader together, as a machine
/// that loses power does) once lost the URLs whose reports the manager had taken
/// while their batch was still a temporary file of the killed downloader (33 of
/// 1,070 URLs in one run): the manager now keeps such a URL in its `awaiting`
/// family until the batch is committed, and queues it again after the restart
/// when no downloader claims it (issue 38).
#[test]
fn a_recrawl_killed_mid_run_resumes_and_loses_no_url() {
    require_python("warcio");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ws = websim(&[]);
    let first_config = config(&ws, d, "first.ron");
    let (http, https) = (ws.http_port.to_string(), ws.https_port.to_string());
    polycrawl(
        "crawl",
        &[
            "crawl".as_ref(),
            "--seeds".as_ref(),
            ws.path("seeds").as_os_str(),
            "--out".as_ref(),
            d.join("first").as_os_str(),
            "--config".as_ref(),
            first_config.as_os_str(),
        ],
        d,
    );
    let repo = d.join("first").join("repository");
    let before = index_lines(&repo).len();
    drop(ws);
    let ws = websim(&[
        "--revision",
        "1",
        "--http-port",
        &http,
        "--https-port",
        &https,
    ]);
    let changes: BTreeMap<String, String> = ws.changes().into_iter().collect();
    let second_config = config(&ws, d, "second.ron");
    let second = d.join("second");
    let args: Vec<&std::ffi::OsStr> = vec![
        "recrawl".as_ref(),
        "--repo".as_ref(),
        repo.as_os_str(),
        "--out".as_ref(),
        second.as_os_str(),
        "--config".as_ref(),
        second_config.as_os_str(),
    ];

    // Run 1: until a third of the URLs are stored again, then kill -9.
    let mut cmd = Command::new(bin::polycrawl());
    cmd.args(&args).env("NO_COLOR", "1");
    let p = ProcessGuard::spawn("recrawl-1", cmd, d).unwrap();
    let stored_at_kill =
        test_support::wait::poll_every(Duration::from_secs(120), Duration::from_millis(20), || {
            let n = index_lines_live(&repo)?.len() - before;
            (n >= changes.len() / 3).then_some(n)
        })
        .unwrap_or_else(|| panic!("{}", p.report("too slow")));
    let pid = p.pid();
    drop(p); // SIGKILL; the children die with it.
    assert!(stored_at_kill < changes.len(), "killed too late");
    test_support::wait::until(
        "the killed recrawl's children to die with it",
        Duration::from_secs(30),
        || tests::process::children_by_environment(pid).is_empty(),
    );

    // Run 2: the same command resumes and completes.
    polycrawl("recrawl-2", &args, d);
    let lines = index_lines(&repo);
    let mut newest: HashMap<&str, &IndexLine> = HashMap::new();
    let mut oldest: HashMap<&str, &IndexLine> = HashMap::new();
    for l in &lines {
        let n = newest.entry(l.0.as_str()).or_insert(l);
        if l.1 > n.1 {
            *n = l;
        }
        let o = oldest.entry(l.0.as_str()).or_insert(l);
        if l.1 < o.1 {
            *o = l;
        }
    }
    let lost: Vec<&String> = changes
        .keys()
        .filter(|u| newest[u.as_str()].1 <= oldest[u.as_str()].1)
        .collect();
    if !lost.is_empty() {
        let log = ws.log();
        let asked: Vec<String> = lost
            .iter()
            .take(5)
            .map(|u| {
                let path = u.splitn(4, '/').nth(3).unwrap_or("");
                let n = log
                    .iter()
                    .filter(|l| l.target == format!("/{path}"))
                    .count();
                format!("{u}: {n} requests in websim's log")
            })
            .collect();
        let keep = dir.keep();
        panic!(
            "{} URLs lost, e.g. {asked:?}; left in {}",
            lost.len(),
            keep.display()
        );
    }
    for (url, change) in &changes {
        let (new, old) = (newest[url.as_str()], oldest[url.as_str()]);
        assert_eq!(
            new.2 == "warc/revisit",
            change != "changed",
            "{url}: {change}"
        );
        assert_eq!(new.4 == old.4, change != "changed", "{url}: {change}");
    }
    let warcs = tests::repository::warc_files(&repo).expect("the WARC files");
    let mut check = Command::new("python3");
    check.args(["-m", "warcio.cli", "check"]).args(&warcs);
    run_ok("warcio check", check, d);
    println!(
        "recrawl kill: killed with {stored_at_kill} of {} URLs stored again; {} index lines after",
        changes.len(),
        lines.len() - before
    );
}
