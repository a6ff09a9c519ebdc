//! Issue 44, Done-when 2: the README's "Crawl your own sites" works as written.
//! The test reads README.md itself, takes every fenced `sh` block under that
//! heading (up to the next `## ` heading), and runs them in order as one bash
//! script (`set -euo pipefail`) in an empty folder, with one change the README
//! states: pywb's `-p 8080` becomes a free port. `ops/polycrawl` there is a link to
//! the binary the tests build (the launcher would build it again). The blocks
//! themselves start the practice web (`polycrawl websim --plain`, on loopback,
//! with the seeds and the config it writes), crawl it, pack and validate the WACZ
//! and serve it with pywb, whose last command (`wayback`) runs until the test ends.
//! Then:
//!
//! - the crawl stored every page of its seed sites: each `manifest.tsv` row with
//!   status 200 on a seed's host is a response with status 200 in the repository,
//!   read from the WARC files, and the crawl's summary says `Complete`;
//! - the archive the README names (`my-crawl/crawl.wacz`) exists and py-wacz's
//!   `wacz validate` accepts it;
//! - pywb replays the first seed's page: asked for the seed in the collection the
//!   README makes (`/replay/mp_/SEED`: the page without pywb's frame), following
//!   pywb's redirects, it answers 200 with an HTML page whose `<title>` is the
//!   stored page's.
//!
//! A change to that section of the README is a change to this test: a block it
//! cannot run, or a section without the crawl, `wacz` and `wayback` commands,
//! fails it. Every process the script starts is killed when the test ends (the
//! script's descendants, found through /proc, then the script itself).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tests::bin;
use tests::http::Client;
use tests::process::{ProcessGuard, require_python, run_ok};
use tests::repository::RepoScan;

/// The README section whose `sh` blocks run.
const SECTION: &str = "## Crawl your own sites";
/// pywb's port in the README, replaced by a free one.
const README_PORT: &str = "-p 8080";
/// The whole script (websim start, crawl, WACZ, pywb) must reach pywb within this.
const LIMIT: Duration = Duration::from_secs(420);

/// The `sh` blocks of `section` in `readme`, in order.
fn sh_blocks(readme: &str, section: &str) -> Vec<String> {
    let mut lines = readme.lines().skip_while(|l| l.trim_end() != section);
    assert!(
        lines.next().is_some(),
        "README.md has no {section:?} heading"
    );
    let mut blocks = Vec::new();
    let mut block: Option<String> = None;
    for line in lines {
        match &mut block {
            None if line.starts_with("## ") => break,
            None if line.trim_end() == "```sh" => block = Some(String::new()),
            None => {}
            Some(b) if line.starts_with("```") => {
                blocks.push(std::mem::take(b));
                block = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
        }
    }
    assert!(block.is_none(), "an unclosed ```sh block in {section:?}");
    blocks
}

/// A free loopback port for pywb (which cannot be told to take port 0 and say).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The script, killed with everything it started when dropped: its descendants
/// (by their parent links in /proc, deepest first), then itself.
struct Script(ProcessGuard);

impl Drop for Script {
    fn drop(&mut self) {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let procs = tests::proc::processes();
        let mut ours = vec![self.0.pid()];
        let mut found = true;
        while found {
            found = false;
            for (pid, stat) in &procs {
                if ours.contains(&stat.parent) && !ours.contains(pid) {
                    ours.push(*pid);
                    found = true;
                }
            }
        }
        for pid in ours.iter().skip(1).rev() {
            let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGKILL);
        }
        // The guard kills and reaps the script itself.
    }
}

/// Host name of `url` (no port).
fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

/// The `<title>` text of an HTML body.
fn title(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let start = text.find("<title>")? + "<title>".len();
    let end = text[start..].find("</title>")?;
    Some(text[start..start + end].to_owned())
}

/// `url` without its scheme and port: pywb serves a page under the http URL of
/// an https page (and the other way round) when one redirects to the other.
fn key(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    format!("{}{path}", host(authority))
}

/// The body of the 200 response stored for `url` (or for it under the other
/// scheme: [`key`]; HTTP head cut off, chunked and gzip bodies decoded by the
/// tests' HTTP reader), if any.
fn stored_body(repo: &Path, url: &str) -> Option<Vec<u8>> {
    use std::io::BufReader;
    for path in tests::repository::warc_files(repo).unwrap() {
        let file = std::fs::File::open(&path).unwrap();
        for rec in spool::warc::WarcReader::new(BufReader::new(file)) {
            let rec = rec.unwrap();
            if rec.headers.target_uri().map(key) == Some(key(url))
                && tests::repository::http_status(&rec.block) == Some(200)
            {
                return tests::http::parse_response(&rec.block, false, Duration::ZERO)
                    .ok()
                    .map(|r| r.body);
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_crawl_of_your_own_sites_runs_as_written() {
    for m in ["wacz", "pywb"] {
        require_python(m);
    }
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let blocks = sh_blocks(&readme, SECTION);
    let script = blocks.concat();
    for needed in [
        "polycrawl crawl ",
        "polycrawl wacz ",
        "wacz validate",
        "wb-manager add",
        "wayback ",
    ] {
        assert!(
            script.contains(needed),
            "the README's {SECTION:?} no longer shows `{needed}`:\n{script}"
        );
    }
    assert_eq!(
        script.matches(README_PORT).count(),
        1,
        "the README's pywb command no longer says {README_PORT:?}:\n{script}"
    );
    let port = free_port();
    let script = script.replace(README_PORT, &format!("-p {port}"));

    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("ops")).unwrap();
    std::os::unix::fs::symlink(bin::polycrawl(), work.join("ops/polycrawl")).unwrap();
    let file = dir.path().join("readme.sh");
    std::fs::write(&file, format!("set -euxo pipefail\n{script}")).unwrap();

    let started = Instant::now();
    let mut cmd = Command::new("bash");
    cmd.arg(&file).current_dir(&work).env("NO_COLOR", "1");
    let mut script = Script(ProcessGuard::spawn("readme", cmd, dir.path()).unwrap());

    // pywb answers once every command before `wayback` went through.
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let pywb_host = format!("127.0.0.1:{port}");
    let client = Client::plain();
    loop {
        if let Some(status) = script.0.wait_exit(Duration::from_millis(500)).unwrap() {
            panic!(
                "{}",
                script
                    .0
                    .report(&format!("the README's commands stopped ({status})"))
            );
        }
        if client.get(addr, false, &pywb_host, "/", &[]).await.is_ok() {
            break;
        }
        assert!(
            started.elapsed() < LIMIT,
            "{}",
            script.0.report("pywb not answering")
        );
    }
    let took = started.elapsed();

    // The crawl: every page of the seed sites, and a summary that says so.
    let web = work.join("local-web");
    let seeds: Vec<String> = std::fs::read_to_string(web.join("seeds.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        std::fs::read_to_string(work.join("my-crawl/seeds.txt")).unwrap(),
        std::fs::read_to_string(web.join("seeds.txt")).unwrap(),
        "the crawl's seeds are not the practice web's"
    );
    let seed_hosts: HashSet<&str> = seeds.iter().map(|s| host(s)).collect();
    let manifest = std::fs::read_to_string(web.join("manifest.tsv")).unwrap();
    let expected: Vec<&str> = manifest
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (url, status) = (f.next()?, f.next()?);
            (status == "200" && seed_hosts.contains(host(url))).then_some(url)
        })
        .collect();
    let repo = work.join("my-crawl/out/repository");
    let scan = RepoScan::read(&repo).unwrap();
    let missing: Vec<&&str> = expected
        .iter()
        .filter(|u| !scan.ok_urls.contains(**u))
        .collect();
    assert!(
        expected.len() >= 20 && missing.is_empty(),
        "{} of the seed sites' {} pages not stored, e.g. {:?}",
        missing.len(),
        expected.len(),
        missing.iter().take(5).collect::<Vec<_>>()
    );
    let out = script.0.stdout().join("\n");
    let err = script.0.stderr();
    assert!(
        out.contains("Complete") || err.contains("Complete"),
        "{}",
        script.0.report("no `Complete` in the crawl's summary")
    );

    println!("readme: crawl checked at {:?}", started.elapsed());
    // The archive the README names, valid.
    let wacz = work.join("my-crawl/crawl.wacz");
    assert!(wacz.is_file(), "no {}", wacz.display());
    let mut validate = Command::new("python3");
    validate.args(["-m", "wacz", "validate", "-f"]).arg(&wacz);
    let said = run_ok("wacz validate", validate, dir.path());
    assert!(said.contains("Validation succeeded"), "{said}");

    println!("readme: wacz checked at {:?}", started.elapsed());
    // pywb replays the first seed's page, following its redirects (`mp_`: the
    // page itself, not pywb's frame around it).
    let mut target = format!("/replay/mp_/{}", seeds[0]);
    let mut hops = 0;
    let page = loop {
        let r = client
            .get(addr, false, &pywb_host, &target, &[])
            .await
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        if !(300..400).contains(&r.status) {
            break r;
        }
        let location = r.header("location").expect("a redirect's Location");
        target = location
            .strip_prefix(&format!("http://{pywb_host}"))
            .unwrap_or(location)
            .to_owned();
        hops += 1;
        assert!(hops <= 5, "pywb redirects on and on: {target}");
    };
    assert_eq!(page.status, 200, "{target}");
    let replayed = title(&page.body).unwrap_or_else(|| {
        panic!(
            "{target}: no <title> in {}",
            String::from_utf8_lossy(&page.body)
        )
    });
    println!("readme: replayed at {:?}", started.elapsed());
    // The page pywb ended on, as the crawl stored it.
    // (pywb's paths: `/replay/[TIMESTAMP]MODIFIER/URL`.)
    let rest = target.strip_prefix("/replay/").unwrap();
    let final_url = rest.split_once('/').unwrap().1;
    let stored = stored_body(&repo, final_url)
        .unwrap_or_else(|| panic!("no stored 200 for {final_url} (replayed as {target})"));
    assert_eq!(
        title(&stored).as_deref(),
        Some(replayed.as_str()),
        "{target}: the replayed page's title is not the stored page's"
    );
    println!("readme: pywb replayed {target} titled {replayed:?}");
    println!(
        "readme: the README's commands took {took:?} to pywb; {} seed-site pages stored, {} responses",
        expected.len(),
        scan.responses
    );
}
