//! websim's manifest against an independent breadth-first crawl done here, over
//! HTTP and websim's DNS, with its own tools: hickory-resolver for names, Google's
//! robots.txt matcher (the `robotstxt` crate) for robots, html5ever (`scraper`) for
//! links and the `url` crate for resolution. Nothing is shared with websim's
//! manifest code, so a bug in either side shows as a difference.
//!
//! The crawl, level by level (depth = BFS level, as in the manifest):
//! - a name that does not resolve -> `dns_failure`;
//! - robots.txt per origin (a leading UTF-8 BOM stripped), following up to 5
//!   redirects: connection refused ->
//!   `connect_failure`, 5xx -> `too_many_failures`, 4xx -> allow all, 2xx -> rules
//!   for `polycrawl`; a disallowed URL -> `robots_excluded`;
//! - otherwise GET: a 3xx's `Location` is a link; a 200 `text/html` page's links are
//!   `a`/`area` `href`, `iframe`/`frame` `src`, `link rel=alternate` `href` and
//!   `meta http-equiv=refresh` URLs, resolved against `<base href>`, fragments
//!   dropped, http(s) only, none if `<meta name=robots content=nofollow>`.
//!
//! It must fetch exactly `manifest.tsv` (URL, status, depth), end with exactly
//! `unreachable.tsv`, fetch nothing in `never.txt`, and websim's request log must
//! show exactly the requests it made.
//!
//! The harness builds the `polycrawl` binary first if needed (see `tests::bin`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use hickory_resolver::TokioResolver;
use hickory_resolver::proto::rr::RData;
use robotstxt::DefaultMatcher;
use scraper::{ElementRef, Html};
use tests::http::Client;
use tests::websim::Websim;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use url::Url;

const AGENT: &str = "polycrawl";
const CONCURRENCY: usize = 16;

/// Link forms and page features websim documents; the big crawl must meet each one,
/// so the match above covers them all.
const MARKERS: [&str; 20] = [
    "<base href",
    "<frameset",
    "<frame ",
    "<area ",
    "<iframe",
    "rel=\"alternate\"",
    "http-equiv=\"refresh\"",
    "&#47;",
    "&#x2F;",
    "=\"HTTP://",
    "='",
    "=/",
    "HREF",
    "=\"//",
    "../",
    "café/",
    "nofollow",
    "<textarea",
    "<!-- removed",
    "windows-1252",
];

#[derive(Debug, Clone)]
enum Robots {
    Rules(String),
    AllowAll,
    Unavailable(&'static str),
}

/// What fetching one URL gave.
#[derive(Debug)]
enum Got {
    Page {
        status: u16,
        links: Vec<String>,
        markers: Vec<&'static str>,
    },
    Outcome(&'static str),
}

struct Crawler {
    client: Client,
    resolver: TokioResolver,
    dns: HashMap<String, Option<Ipv4Addr>>,
    robots: HashMap<String, Robots>,
    /// Every (scheme, Host header, target) the crawler requested.
    requests: Vec<(String, String, String)>,
}

/// `host[:port]` of a URL as sent in `Host`.
fn authority(u: &Url) -> String {
    match u.port() {
        Some(p) => format!("{}:{p}", u.host_str().unwrap_or("")),
        None => u.host_str().unwrap_or("").to_owned(),
    }
}

fn target(u: &Url) -> String {
    match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_owned(),
    }
}

/// The links of an HTML page, as design section 7 defines them.
fn extract(page: &Url, html: &str) -> Vec<String> {
    let doc = Html::parse_document(html);
    let elements: Vec<ElementRef<'_>> = doc
        .root_element()
        .descendants()
        .filter_map(ElementRef::wrap)
        .collect();
    let mut base = page.clone();
    if let Some(href) = elements
        .iter()
        .find(|e| e.value().name() == "base")
        .and_then(|e| e.value().attr("href"))
    {
        if let Ok(b) = page.join(href) {
            base = b;
        }
    }
    let nofollow = elements.iter().any(|e| {
        e.value().name() == "meta"
            && e.value()
                .attr("name")
                .is_some_and(|n| n.eq_ignore_ascii_case("robots"))
            && e.value().attr("content").is_some_and(|c| {
                c.split(',').any(|t| {
                    t.trim().eq_ignore_ascii_case("nofollow")
                        || t.trim().eq_ignore_ascii_case("none")
                })
            })
    });
    if nofollow {
        return Vec::new();
    }
    let mut links = Vec::new();
    for e in &elements {
        let v = e.value();
        let raw = match v.name() {
            "a" | "area" => v.attr("href"),
            "iframe" | "frame" => v.attr("src"),
            "link"
                if v.attr("rel").is_some_and(|r| {
                    r.split_ascii_whitespace()
                        .any(|t| t.eq_ignore_ascii_case("alternate"))
                }) =>
            {
                v.attr("href")
            }
            "meta"
                if v.attr("http-equiv")
                    .is_some_and(|h| h.eq_ignore_ascii_case("refresh")) =>
            {
                v.attr("content").and_then(refresh_url)
            }
            _ => None,
        };
        let Some(raw) = raw else { continue };
        let Ok(mut u) = base.join(raw.trim()) else {
            continue;
        };
        if u.scheme() != "http" && u.scheme() != "https" {
            continue;
        }
        u.set_fragment(None);
        links.push(u.to_string());
    }
    links
}

/// The URL of a refresh `content` value (`5; url=...`).
fn refresh_url(content: &str) -> Option<&str> {
    let (_, rest) = content.split_once(';')?;
    let rest = rest.trim_start();
    if rest.len() < 3 || !rest[..3].eq_ignore_ascii_case("url") {
        return None;
    }
    let rest = rest[3..].trim_start().strip_prefix('=')?.trim();
    Some(rest.trim_matches(|c| c == '\'' || c == '"'))
}

impl Crawler {
    async fn resolve_all(&mut self, urls: &[Url]) {
        let mut tasks = JoinSet::new();
        let mut asked = HashSet::new();
        for u in urls {
            let name = u.host_str().unwrap_or("").to_owned();
            if self.dns.contains_key(&name) || !asked.insert(name.clone()) {
                continue;
            }
            let r = self.resolver.clone();
            tasks.spawn(async move {
                let answer = match r.ipv4_lookup(format!("{name}.")).await {
                    Ok(l) => l.answers().iter().find_map(|rec| match &rec.data {
                        RData::A(a) => Some(a.0),
                        _ => None,
                    }),
                    Err(e) if e.is_nx_domain() => None,
                    Err(e) => panic!("resolving {name}: {e}"),
                };
                (name, answer)
            });
        }
        while let Some(done) = tasks.join_next().await {
            let (name, answer) = done.expect("dns task");
            self.dns.insert(name, answer);
        }
    }

    fn socket(&self, u: &Url) -> Option<SocketAddr> {
        let ip = (*self.dns.get(u.host_str()?)?)?;
        Some(SocketAddr::from((ip, u.port_or_known_default()?)))
    }

    async fn robots_all(&mut self, urls: &[Url]) {
        let mut tasks = JoinSet::new();
        let mut asked = HashSet::new();
        for u in urls {
            let origin = u.origin().ascii_serialization();
            if self.robots.contains_key(&origin)
                || !asked.insert(origin.clone())
                || self.socket(u).is_none()
            {
                continue;
            }
            let start = u.join("/robots.txt").expect("robots URL");
            let client = self.client.clone();
            let dns = self.dns.clone();
            tasks.spawn(async move {
                let mut url = start;
                let mut requests = Vec::new();
                for _ in 0..6 {
                    let ip = dns
                        .get(url.host_str().unwrap_or(""))
                        .copied()
                        .flatten()
                        .expect("robots redirect stays on known hosts");
                    let addr = SocketAddr::from((ip, url.port_or_known_default().unwrap_or(80)));
                    let resp = client.get_url(addr, url.as_str(), &[]).await;
                    let r = match resp {
                        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                            return (origin, Robots::Unavailable("connect_failure"), requests);
                        }
                        Err(e) => panic!("fetching {url}: {e}"),
                        Ok(r) => r,
                    };
                    requests.push((url.scheme().to_owned(), authority(&url), target(&url)));
                    match r.status {
                        // robotstxt 0.3 compares code points with the BOM's bytes, so a
                        // real U+FEFF is not skipped as Google's parser (and RFC 9309
                        // practice) does: strip it here.
                        200..=299 => {
                            let text = r.text();
                            let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned();
                            return (origin, Robots::Rules(text), requests);
                        }
                        300..=399 => {
                            url = url
                                .join(r.header("location").expect("Location"))
                                .expect("Location URL");
                        }
                        400..=499 => return (origin, Robots::AllowAll, requests),
                        _ => return (origin, Robots::Unavailable("too_many_failures"), requests),
                    }
                }
                panic!("robots.txt redirects too often: {url}");
            });
        }
        while let Some(done) = tasks.join_next().await {
            let (origin, robots, requests) = done.expect("robots task");
            self.robots.insert(origin, robots);
            self.requests.extend(requests);
        }
    }

    /// Fetches one level; results in the level's order.
    async fn fetch_level(&mut self, level: &[Url]) -> Vec<Got> {
        self.resolve_all(level).await;
        self.robots_all(level).await;
        let limit = Arc::new(Semaphore::new(CONCURRENCY));
        let mut tasks = JoinSet::new();
        let mut results: Vec<Option<Got>> = (0..level.len()).map(|_| None).collect();
        for (i, u) in level.iter().enumerate() {
            let Some(addr) = self.socket(u) else {
                results[i] = Some(Got::Outcome("dns_failure"));
                continue;
            };
            match &self.robots[&u.origin().ascii_serialization()] {
                Robots::Unavailable(o) => {
                    results[i] = Some(Got::Outcome(o));
                    continue;
                }
                Robots::Rules(text)
                    if !DefaultMatcher::default().one_agent_allowed_by_robots(
                        text,
                        AGENT,
                        u.as_str(),
                    ) =>
                {
                    results[i] = Some(Got::Outcome("robots_excluded"));
                    continue;
                }
                _ => {}
            }
            self.requests
                .push((u.scheme().to_owned(), authority(u), target(u)));
            let (client, u, limit) = (self.client.clone(), u.clone(), Arc::clone(&limit));
            tasks.spawn(async move {
                let _permit = limit.acquire().await.expect("semaphore");
                let r = match client
                    .get_url(addr, u.as_str(), &[("Accept-Encoding", "gzip")])
                    .await
                {
                    Ok(r) => r,
                    Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                        return (i, Got::Outcome("connect_failure"));
                    }
                    Err(e) => panic!("fetching {u}: {e}"),
                };
                let mut markers = Vec::new();
                let links = match r.status {
                    300..=399 => {
                        let loc = r.header("location").expect("Location");
                        let mut next = u.join(loc).expect("Location URL");
                        next.set_fragment(None);
                        vec![next.to_string()]
                    }
                    200 if r
                        .header("content-type")
                        .is_some_and(|c| c.starts_with("text/html")) =>
                    {
                        let text = r.text();
                        markers = MARKERS
                            .iter()
                            .copied()
                            .filter(|m| text.contains(m))
                            .collect();
                        extract(&u, &text)
                    }
                    _ => Vec::new(),
                };
                (
                    i,
                    Got::Page {
                        status: r.status,
                        links,
                        markers,
                    },
                )
            });
        }
        while let Some(done) = tasks.join_next().await {
            let (i, got) = done.expect("fetch task");
            results[i] = Some(got);
        }
        results
            .into_iter()
            .map(|r| r.expect("every URL has a result"))
            .collect()
    }
}

fn show(label: &str, items: &BTreeSet<(String, String, u32)>) -> String {
    let mut s = format!("{label} ({}):\n", items.len());
    for (a, b, c) in items.iter().take(25) {
        s.push_str(&format!("  {a}\t{b}\t{c}\n"));
    }
    s
}

async fn crawl_matches_manifest(args: &[&str], every_marker: bool) {
    let ws = Websim::start(args);
    let mut crawler = Crawler {
        client: Client::trusting(&ws.ca_pem()).expect("client"),
        resolver: ws.resolver(),
        dns: HashMap::new(),
        robots: HashMap::new(),
        requests: Vec::new(),
    };
    crawler.client.user_agent = "polycrawl/0.1 (+websim-crawl-test)".to_owned();

    let mut seen: HashSet<String> = HashSet::new();
    let mut level: Vec<Url> = Vec::new();
    for s in ws.seeds() {
        if seen.insert(s.clone()) {
            level.push(Url::parse(&s).expect("seed URL"));
        }
    }
    let mut fetched = BTreeSet::new();
    let mut seen_markers: HashSet<&'static str> = HashSet::new();
    let mut outcomes = BTreeSet::new();
    let mut depth = 0u32;
    while !level.is_empty() {
        let results = crawler.fetch_level(&level).await;
        let mut next = Vec::new();
        for (u, got) in level.iter().zip(results) {
            match got {
                Got::Outcome(o) => {
                    outcomes.insert((u.to_string(), o.to_owned(), depth));
                }
                Got::Page {
                    status,
                    links,
                    markers,
                } => {
                    seen_markers.extend(markers);
                    fetched.insert((u.to_string(), status.to_string(), depth));
                    for l in links {
                        if seen.insert(l.clone()) {
                            next.push(Url::parse(&l).expect("link URL"));
                        }
                    }
                }
            }
        }
        level = next;
        depth += 1;
        assert!(depth < 1000, "the crawl does not end");
    }

    let manifest: BTreeSet<(String, String, u32)> = ws
        .manifest()
        .into_iter()
        .map(|r| (r.url, r.status.to_string(), r.depth))
        .collect();
    let unreachable: BTreeSet<(String, String, u32)> = ws
        .unreachable()
        .into_iter()
        .map(|r| (r.url, r.outcome, r.depth))
        .collect();
    let missing: BTreeSet<_> = manifest.difference(&fetched).cloned().collect();
    let extra: BTreeSet<_> = fetched.difference(&manifest).cloned().collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the crawl differs from manifest.tsv ({} rows)\n{}{}",
        manifest.len(),
        show("in the manifest, not fetched", &missing),
        show("fetched, not in the manifest", &extra)
    );
    let missing: BTreeSet<_> = unreachable.difference(&outcomes).cloned().collect();
    let extra: BTreeSet<_> = outcomes.difference(&unreachable).cloned().collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "outcomes differ from unreachable.tsv\n{}{}",
        show("in unreachable.tsv only", &missing),
        show("in the crawl only", &extra)
    );
    for kind in [
        "dns_failure",
        "connect_failure",
        "too_many_failures",
        "robots_excluded",
    ] {
        assert!(
            outcomes.iter().any(|(_, o, _)| o == kind),
            "no {kind} outcome in this web"
        );
    }
    for status in ["200", "301", "302", "404"] {
        assert!(
            fetched.iter().any(|(_, s, _)| s == status),
            "no {status} fetched"
        );
    }

    if every_marker {
        let unseen: Vec<&str> = MARKERS
            .iter()
            .copied()
            .filter(|m| !seen_markers.contains(m))
            .collect();
        assert!(unseen.is_empty(), "the crawl met no page with {unseen:?}");
    }

    // Nothing in never.txt was fetched; whatever of it the crawl discovered as a link
    // ended with an outcome (traps and nofollow-only links are not links at all).
    let never: HashSet<String> = ws.never().into_iter().collect();
    assert!(
        never.iter().any(|u| u.contains("/trap/")),
        "never.txt has the traps"
    );
    for (u, _, _) in &fetched {
        assert!(!never.contains(u), "fetched {u}, which is in never.txt");
    }
    for u in never.iter().filter(|u| seen.contains(*u)) {
        assert!(
            outcomes.iter().any(|(o, _, _)| o == u),
            "{u} was discovered as a link and fetched"
        );
    }

    // websim logged exactly the requests made.
    let mut logged: Vec<(String, String, String)> = ws
        .flushed_log()
        .into_iter()
        .map(|l| (l.scheme, l.host, l.target))
        .collect();
    let mut made = crawler.requests.clone();
    logged.sort();
    made.sort();
    assert_eq!(logged.len(), made.len(), "log lines vs requests made");
    assert!(
        logged == made,
        "the request log differs from the requests made"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifest_matches_an_independent_crawl() {
    crawl_matches_manifest(
        &[
            "--hosts",
            "40",
            "--pages",
            "800",
            "--seed",
            "5",
            "--slow-ms",
            "50",
            "--threads",
            "1",
        ],
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifest_matches_an_independent_crawl_other_seed() {
    crawl_matches_manifest(
        &[
            "--hosts",
            "60",
            "--pages",
            "1500",
            "--seed",
            "12",
            "--slow-ms",
            "50",
            "--threads",
            "1",
        ],
        false,
    )
    .await;
}

/// A bigger web, where every documented link form and page feature occurs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifest_matches_an_independent_crawl_bigger_web() {
    crawl_matches_manifest(
        &[
            "--hosts",
            "150",
            "--pages",
            "6000",
            "--seed",
            "99",
            "--slow-ms",
            "50",
            "--threads",
            "1",
        ],
        true,
    )
    .await;
}
