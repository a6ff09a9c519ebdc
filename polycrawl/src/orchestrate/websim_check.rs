//! [`WebsimCheck`]: a demo run measured against websim's oracle files: coverage of
//! the manifest's status-200 URLs, URLs fetched more than once and URLs fetched
//! that a correct crawl never requests (`never.txt`: robots-excluded URLs, traps),
//! both from websim's request log.
//!
//! A URL in the request log is `<scheme>://<Host header><target>`, which is how
//! websim's canonical manifest URLs are written (they carry the port; a Host
//! header without one gets the listener's, see `log_origin`).
//! robots.txt fetches (paths starting `/robots`, which covers websim's robots.txt
//! redirect target `/robots-real.txt`) are counted apart: the manager fetches a
//! robots.txt again by design when it answered 5xx (retry with back-off), and the
//! http and https origins of one host each fetch theirs (RFC 9309), so such
//! repeats are not duplicate page fetches.
//!
//! **Refetches explained by a kill.** A process killed with SIGKILL loses what
//! it held, and its URLs are fetched again after its restart: that is the
//! documented bound of crash safety, not an error. So the check splits the URLs
//! fetched more than once ([`WebsimCheck::attribute`]) with the deaths the
//! supervisor saw ([`Kill`]: each death of a supervised process, when the
//! supervisor noticed it). What each role holds, and so when a refetch of a URL
//! whose consecutive requests ran `(s1, e1)` then `(s2, e2)` is *explained by
//! the death at `k`* of a process of that role (`slack` is [`KILL_SLACK_US`]):
//!
//! - a downloader or a manager holds jobs: requests in flight, and pages fetched
//!   but not yet handed on in a batch (at most the downloaders' batch age) and
//!   committed. Explained when `s1 <= k + slack` (it was dispatched before the
//!   death) and `e1 + hold >= k` (it was still held: `hold` is the batch age plus
//!   the slack), and `s2 + slack >= k`;
//! - an application part (or the two-level coordinator) holds a generation: the
//!   request files it published but had not recorded, published again after its
//!   restart, however long they waited in their queues. Explained when
//!   `s1 <= k + slack` and `s2 + slack >= k`, the first request at any time
//!   before (a generation's URLs may wait long in their hosts' queues);
//! - a resolver holds no job (it resolves names) and websim is not supervised:
//!   their deaths explain nothing.
//!
//! A URL fetched three times needs a kill for each refetch. The kill named for a
//! refetch is the first that explains its first one. Any other URL fetched twice,
//! including every one in a run without a death, is an *unexplained duplicate*:
//! the demo's verdict fails on those only. The slack covers the supervisor
//! noticing a death a moment after it (it waits on SIGCHLD, at most
//! [`super::system`]'s 100 ms tick late on a loaded machine), a downloader still
//! starting requests it was given until it sees its manager's connection close,
//! and websim stamping a request when it has read it, not when it was sent.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Context;

/// The oracle comparison of one run.
#[derive(Debug, Clone, Default)]
pub struct WebsimCheck {
    /// Status-200 URLs in the manifest.
    pub expected: u64,
    /// Of those, the ones stored in the repository with status 200.
    pub fetched: u64,
    /// A few expected URLs that were not stored.
    pub missing_sample: Vec<String>,
    /// Requests in websim's log.
    pub requests: u64,
    /// URLs (robots.txt aside) requested more than once.
    pub duplicates: Vec<String>,
    /// The URLs of [`WebsimCheck::duplicates`] with their requests' start stamps
    /// and, once [`WebsimCheck::attribute`] ran, the kill that explains them.
    pub refetches: Vec<Refetch>,
    /// The deaths the supervisor saw (given to [`WebsimCheck::attribute`]).
    pub kills: Vec<Kill>,
    /// robots.txt URLs requested more than once.
    pub robots_repeats: u64,
    /// Requested URLs that are in `never.txt`.
    pub never_fetched: Vec<String>,
}

impl WebsimCheck {
    /// Compares `stored` (URLs stored with status 200) with websim's `manifest`,
    /// `never` and request `log` files.
    pub fn run(
        stored: &HashSet<String>,
        manifest: &Path,
        never: &Path,
        log: &Path,
    ) -> anyhow::Result<WebsimCheck> {
        WebsimCheck::run_logs(stored, manifest, never, &[log])
    }

    /// [`WebsimCheck::run`] over the request logs of several websim runs serving
    /// the same web (a resumed demo): a URL requested in two runs is a duplicate.
    pub fn run_logs(
        stored: &HashSet<String>,
        manifest: &Path,
        never: &Path,
        logs: &[&Path],
    ) -> anyhow::Result<WebsimCheck> {
        let expected = tsv(manifest)?
            .into_iter()
            .filter(|f| f.get(1).map(String::as_str) == Some("200"))
            .filter_map(|mut f| f.drain(..).next());
        Self::run_expected(stored, expected, never, logs)
    }

    /// [`WebsimCheck::run_logs`] against the status-200 URLs of websim's
    /// `parties.tsv` (`--components`) instead of its manifest: what a seed-by-seed
    /// crawl must store, the union of its seeds' parties.
    pub fn run_parties(
        stored: &HashSet<String>,
        parties: &Path,
        never: &Path,
        logs: &[&Path],
    ) -> anyhow::Result<WebsimCheck> {
        let expected: HashSet<String> = tsv(parties)?
            .into_iter()
            .filter(|f| f.get(2).map(String::as_str) == Some("200"))
            .filter_map(|mut f| f.drain(..).nth(1))
            .collect();
        Self::run_expected(stored, expected, never, logs)
    }

    /// The comparison with the distinct `expected` URLs given.
    fn run_expected(
        stored: &HashSet<String>,
        expected: impl IntoIterator<Item = String>,
        never: &Path,
        logs: &[&Path],
    ) -> anyhow::Result<WebsimCheck> {
        let mut check = WebsimCheck::default();
        for url in expected {
            check.expected += 1;
            if stored.contains(&url) {
                check.fetched += 1;
            } else if check.missing_sample.len() < 5 {
                check.missing_sample.push(url);
            }
        }
        let never: HashSet<String> = read(never)?.lines().map(str::to_owned).collect();
        // Each URL's requests' start and end stamps (unix µs; 0 if unreadable).
        let mut starts: HashMap<(String, bool), Vec<(u64, u64)>> = HashMap::new();
        let mut lines = Vec::new();
        for log in logs {
            lines.extend(tsv(log)?);
        }
        for f in lines {
            if f.len() < 8 {
                continue;
            }
            check.requests += 1;
            let url = format!("{}{}", log_origin(&f[2], &f[3], &f[4]), f[7]);
            let robots = f[7].starts_with("/robots");
            let start = f[0].parse().unwrap_or(0);
            let end = f[1].parse().unwrap_or(start);
            starts.entry((url, robots)).or_default().push((start, end));
        }
        for ((url, robots), mut at) in starts {
            if never.contains(&url) {
                check.never_fetched.push(url.clone());
            }
            if at.len() > 1 {
                if robots {
                    check.robots_repeats += at.len() as u64 - 1;
                } else {
                    at.sort_unstable();
                    check.duplicates.push(url.clone());
                    check.refetches.push(Refetch {
                        url,
                        fetches_us: at,
                        kill: None,
                    });
                }
            }
        }
        check.duplicates.sort();
        check.refetches.sort_by(|a, b| a.url.cmp(&b.url));
        check.never_fetched.sort();
        Ok(check)
    }

    /// Coverage in percent.
    pub fn percent(&self) -> f64 {
        if self.expected == 0 {
            100.0
        } else {
            100.0 * self.fetched as f64 / self.expected as f64
        }
    }

    /// True if the crawl was exactly right: every page stored, nothing forbidden
    /// fetched, and no URL fetched twice but refetches explained by a kill.
    pub fn perfect(&self) -> bool {
        self.fetched == self.expected
            && self.unexplained().next().is_none()
            && self.never_fetched.is_empty()
    }

    /// Marks each refetch explained by one of `kills` (in time order; see the
    /// module docs), and keeps them. `batch_age_ms`: the downloaders'
    /// `max_batch_age_ms`, how long a fetched page may wait to be handed on.
    pub fn attribute(&mut self, kills: Vec<Kill>, batch_age_ms: u64) {
        let hold_us = batch_age_ms * 1000 + KILL_SLACK_US;
        for r in &mut self.refetches {
            r.kill = explaining_kill(&r.fetches_us, &kills, hold_us);
        }
        self.kills = kills;
    }

    /// The URLs fetched more than once that no kill explains.
    pub fn unexplained(&self) -> impl Iterator<Item = &Refetch> {
        self.refetches.iter().filter(|r| r.kill.is_none())
    }

    /// The refetches explained by a kill, counted by the killed process's role
    /// (its name without a part, system or downloader number), in role order.
    pub fn explained_by_role(&self) -> Vec<(String, usize)> {
        let mut by: std::collections::BTreeMap<String, usize> = Default::default();
        for k in self.refetches.iter().filter_map(|r| r.kill) {
            if let Some(kill) = self.kills.get(k) {
                *by.entry(role(&kill.process).to_owned()).or_default() += 1;
            }
        }
        by.into_iter().collect()
    }
}

/// How far a kill's moment may be from the requests it explains, in µs (see the
/// module docs).
pub const KILL_SLACK_US: u64 = 1_000_000;

/// A death the supervisor saw: the process's name (`manager`, `dl-2`,
/// `app-p1`, ...) and when it noticed it, unix µs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kill {
    /// The process's name.
    pub process: String,
    /// When the supervisor saw it die, unix µs.
    pub at_us: u64,
}

/// A URL requested more than once (robots.txt aside).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refetch {
    /// The URL.
    pub url: String,
    /// Its requests' start and end stamps, unix µs, in order.
    pub fetches_us: Vec<(u64, u64)>,
    /// The index in the kills of the one that explains it, if one does.
    pub kill: Option<usize>,
}

/// A process's role: its name without a system, part or downloader number
/// (`manager-s1` -> `manager`, `dl-3` -> `dl`, `app-p2` -> `app`).
pub fn role(process: &str) -> &str {
    process.split('-').next().unwrap_or(process)
}

/// What a process of `process`'s role holds when it is killed (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holds {
    /// Jobs until their pages are handed on and committed (manager, downloader).
    Jobs,
    /// A generation not recorded, whatever its age (application part,
    /// coordinator).
    Generation,
    /// Nothing a URL depends on (resolver).
    Nothing,
}

fn holds(process: &str) -> Holds {
    match role(process) {
        "resolver" => Holds::Nothing,
        "app" | "coordinator" => Holds::Generation,
        _ => Holds::Jobs,
    }
}

/// Whether kill `k` explains a refetch: the earlier request ran `first`
/// (start, end), the later one started at `next` (module docs).
fn explains(k: &Kill, first: (u64, u64), next: u64, hold_us: u64) -> bool {
    let slack = KILL_SLACK_US;
    let (start, end) = first;
    if start > k.at_us + slack || next + slack < k.at_us {
        return false;
    }
    match holds(&k.process) {
        Holds::Nothing => false,
        Holds::Jobs => end + hold_us >= k.at_us,
        Holds::Generation => true,
    }
}

/// The kill that explains the requests `fetches_us` ((start, end) stamps, by
/// start), if each refetch has one (module docs): the index in `kills` (time
/// order) of the first that explains the first refetch. `hold_us`: how long
/// after its end a fetched page may still be held by a downloader or manager.
pub fn explaining_kill(fetches_us: &[(u64, u64)], kills: &[Kill], hold_us: u64) -> Option<usize> {
    let mut first = None;
    for w in fetches_us.windows(2) {
        let k = kills
            .iter()
            .position(|k| explains(k, w[0], w[1].0, hold_us))?;
        first.get_or_insert(k);
    }
    first
}

/// `scheme://host:port` of a request-log line, as websim's files write URLs: the
/// Host header lower-cased, with the listener's port (from the server address
/// `server`) added when the header has none (some clients, wget2 among them, leave
/// it out).
pub fn log_origin(scheme: &str, host: &str, server: &str) -> String {
    let host = host.to_ascii_lowercase();
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    match server.rsplit_once(':') {
        Some((_, port)) if !has_port => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    }
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The tab-separated fields of each line of a file, `#` comment lines skipped.
pub fn tsv(path: &Path) -> anyhow::Result<Vec<Vec<String>>> {
    Ok(read(path)?
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_with_the_oracle() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(
            p("manifest.tsv"),
            "#url\tstatus\tdepth\tparent\nhttp://a.test:80/\t200\t0\t-\nhttp://a.test:80/x\t404\t1\thttp://a.test:80/\nhttp://a.test:80/y\t200\t1\thttp://a.test:80/\n",
        )
        .unwrap();
        std::fs::write(p("never.txt"), "http://a.test:80/secret\n").unwrap();
        let line = |target: &str| {
            format!(
                "1\t2\thttp\tA.test:80\t127.1.0.1:80\t127.0.0.1:5\tGET\t{target}\t200\t10\tpolycrawl\n"
            )
        };
        let log: String = [
            "/robots.txt",
            "/robots.txt",
            "/robots-real.txt",
            "/robots-real.txt",
            "/",
            "/",
            "/secret",
        ]
        .iter()
        .map(|t| line(t))
        .collect();
        std::fs::write(p("requests.tsv"), log).unwrap();
        let stored: HashSet<String> = ["http://a.test:80/".to_owned()].into();
        let c = WebsimCheck::run(
            &stored,
            &p("manifest.tsv"),
            &p("never.txt"),
            &p("requests.tsv"),
        )
        .unwrap();
        assert_eq!((c.expected, c.fetched, c.requests), (2, 1, 7));
        assert_eq!(c.missing_sample, ["http://a.test:80/y"]);
        assert_eq!(c.duplicates, ["http://a.test:80/"]);
        assert_eq!(c.refetches.len(), 1);
        assert_eq!(c.unexplained().count(), 1, "no kill: unexplained");
        assert_eq!(c.robots_repeats, 2);
        assert_eq!(c.never_fetched, ["http://a.test:80/secret"]);
        assert!((c.percent() - 50.0).abs() < 1e-9);
        assert!(!c.perfect());
    }

    fn kill(process: &str, at_s: u64) -> Kill {
        Kill {
            process: process.to_owned(),
            at_us: at_s * 1_000_000,
        }
    }

    #[test]
    fn a_refetch_is_explained_only_by_a_kill_of_what_held_it() {
        // (start, end) of each request, in seconds.
        let f = |secs: &[(f64, f64)]| -> Vec<(u64, u64)> {
            secs.iter()
                .map(|(a, b)| ((a * 1e6) as u64, (b * 1e6) as u64))
                .collect()
        };
        let kills = [
            kill("dl-1", 10),
            kill("resolver", 20),
            kill("app-p1", 30),
            kill("manager-s1", 40),
            kill("app-p1", 50),
        ];
        let hold = 2_000_000; // a batch age of 1 s, plus the slack
        let e = |fetches: &[(f64, f64)]| explaining_kill(&f(fetches), &kills, hold);
        // In flight at the downloader's death, fetched again after it, however late.
        assert_eq!(e(&[(9.5, 9.7), (12.0, 12.1)]), Some(0));
        assert_eq!(e(&[(9.5, 9.7), (35.0, 35.1)]), Some(0));
        // Fetched, then held in a batch not yet handed on.
        assert_eq!(e(&[(8.0, 8.2), (11.0, 11.1)]), Some(0));
        // Handed on long before the downloader died: not its doing.
        assert_eq!(e(&[(5.0, 5.1), (11.0, 11.1)]), None);
        // Published in the part's last unrecorded generation: fetched long
        // before its death, again after its restart.
        assert_eq!(e(&[(22.0, 22.1), (31.0, 31.1)]), Some(2));
        // The first kill between the two is the one named.
        assert_eq!(e(&[(29.0, 29.1), (51.0, 51.1)]), Some(2));
        // Handed on seconds before the manager died: not the manager's doing.
        assert_eq!(e(&[(35.0, 35.1), (41.0, 41.1)]), None);
        assert_eq!(e(&[(39.0, 39.1), (41.0, 41.1)]), Some(3));
        // Both fetches between two kills: no kill explains it.
        assert_eq!(e(&[(12.0, 12.1), (15.0, 15.1)]), None);
        // A resolver holds no job: its death explains nothing.
        assert_eq!(e(&[(19.5, 19.6), (21.0, 21.1)]), None);
        // Within the slack: a request websim read just after the kill, a
        // refetch just before the supervisor noticed it.
        assert_eq!(e(&[(10.9, 11.0), (11.5, 11.6)]), Some(0));
        assert_eq!(e(&[(9.0, 9.1), (9.5, 9.6)]), Some(0));
        assert_eq!(e(&[(11.5, 11.6), (12.0, 12.1)]), None);
        // A refetch each, a kill each.
        assert_eq!(
            e(&[(9.0, 9.1), (12.0, 12.1), (39.5, 39.6), (45.0, 45.1)]),
            Some(0)
        );
        assert_eq!(e(&[(9.0, 9.1), (12.0, 12.1), (13.0, 13.1)]), None);
        // No kill at all: every duplicate is unexplained.
        assert_eq!(
            explaining_kill(&f(&[(1.0, 1.1), (2.0, 2.1)]), &[], hold),
            None
        );
    }

    #[test]
    fn the_verdict_forgives_only_refetches_a_kill_explains() {
        let mut c = WebsimCheck {
            expected: 2,
            fetched: 2,
            duplicates: vec!["http://a.test:80/x".into(), "http://a.test:80/y".into()],
            refetches: vec![
                Refetch {
                    url: "http://a.test:80/x".into(),
                    fetches_us: vec![(9_500_000, 9_600_000), (12_000_000, 12_100_000)],
                    kill: None,
                },
                Refetch {
                    url: "http://a.test:80/y".into(),
                    fetches_us: vec![(40_000_000, 40_100_000), (41_000_000, 41_100_000)],
                    kill: None,
                },
            ],
            ..WebsimCheck::default()
        };
        assert!(!c.perfect());
        let kills = vec![kill("manager-s1", 10), kill("dl-2", 40)];
        c.attribute(kills.clone(), 1000);
        assert!(c.perfect());
        assert_eq!(
            c.explained_by_role(),
            [("dl".to_owned(), 1), ("manager".to_owned(), 1)]
        );
        c.attribute(kills[..1].to_vec(), 1000);
        assert!(!c.perfect());
        assert_eq!(
            c.unexplained().map(|r| r.url.as_str()).collect::<Vec<_>>(),
            ["http://a.test:80/y"]
        );
    }

    #[test]
    fn roles() {
        assert_eq!(role("manager-s1"), "manager");
        assert_eq!(role("dl-3"), "dl");
        assert_eq!(role("app-p2"), "app");
        assert_eq!(role("app"), "app");
        assert_eq!(role("coordinator"), "coordinator");
    }

    #[test]
    fn origins_get_the_listener_port_when_the_host_header_has_none() {
        assert_eq!(
            log_origin("http", "A.test:8080", "127.1.0.1:8080"),
            "http://a.test:8080"
        );
        assert_eq!(
            log_origin("https", "a.test", "127.1.0.1:4443"),
            "https://a.test:4443"
        );
    }
}
