//! websim seen from outside: the real `polycrawl websim` process, checked over
//! DNS, HTTP and HTTPS with clients that share no code with websim.
//! (The manifest-versus-independent-crawl test is in `websim_crawl.rs`.)
//!
//! The harness builds the `polycrawl` binary first if needed (see `tests::bin`).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{HashMap, HashSet};
use std::io::{ErrorKind, Read as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use hickory_resolver::proto::rr::RData;
use tests::http::{Client, Response, dechunk, parse_response, pipelined_bytes};
use tests::process::ProcessGuard;
use tests::websim::{HostRow, Websim};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A small web; slow hosts answer after 300 ms.
fn small(extra: &[&str]) -> Websim {
    let mut args = vec![
        "--hosts",
        "40",
        "--pages",
        "800",
        "--seed",
        "3",
        "--slow-ms",
        "300",
        "--threads",
        "2",
    ];
    args.extend_from_slice(extra);
    Websim::start(&args)
}

fn client(ws: &Websim) -> Client {
    let mut c = Client::trusting(&ws.ca_pem()).expect("client config");
    c.user_agent = "polycrawl/0.1 (+websim-tests)".to_owned();
    c
}

/// `host[:port]` as a Host header for a host's canonical scheme.
fn authority(h: &HostRow) -> String {
    let default = if h.scheme == "https" { 443 } else { 80 };
    if h.port == default {
        h.name.clone()
    } else {
        format!("{}:{}", h.name, h.port)
    }
}

/// GET `path` from host `h` on its canonical scheme.
async fn get_path(c: &Client, h: &HostRow, path: &str, extra: &[(&str, &str)]) -> Response {
    c.get(h.socket(), h.scheme == "https", &authority(h), path, extra)
        .await
        .unwrap_or_else(|e| panic!("GET {}{path}: {e}", h.name))
}

#[tokio::test]
async fn ready_line_and_output_files() {
    let ws = small(&[]);
    for key in [
        "out",
        "seeds",
        "manifest",
        "never",
        "unreachable",
        "hosts",
        "log",
        "ca",
    ] {
        assert!(ws.path(key).exists(), "{key} missing");
    }
    assert!(ws.dns.ip().is_loopback() && ws.http_port != 0 && ws.https_port != 0);
    assert_ne!(ws.http_port, ws.https_port);
    let hosts = ws.hosts();
    assert_eq!(hosts.len(), 41, "40 generated + the misbehaving host");
    assert_eq!(hosts.iter().filter(|h| h.has("misbehave")).count(), 1);
    for h in &hosts {
        assert!(
            h.name.ends_with(".test") || h.name.ends_with(".example"),
            "{}",
            h.name
        );
        let o = h.addr.octets();
        assert!(o[0] == 127 && o[1] != 0, "{} on {}", h.name, h.addr);
    }
    let by_addr = hosts
        .iter()
        .fold(HashMap::<Ipv4Addr, usize>::new(), |mut m, h| {
            *m.entry(h.addr).or_default() += 1;
            m
        });
    assert!(
        by_addr.values().any(|&n| (2..=8).contains(&n)),
        "some hosts share an address"
    );
    let manifest = ws.manifest();
    let seeds = ws.seeds();
    assert!(!seeds.is_empty());
    for s in &seeds {
        assert!(
            manifest.iter().any(|r| &r.url == s && r.depth == 0),
            "seed {s} not at depth 0"
        );
    }
    let pages = manifest.iter().filter(|r| r.status == 200).count();
    assert!(pages > 400, "only {pages} pages in the manifest");
    let stdout = ws.process.stdout().join("\n");
    assert!(stdout.contains(&ws.dns.to_string()) && stdout.contains("ca.pem"));
}

#[tokio::test]
async fn dns_answers_every_host_and_nxdomain_otherwise() {
    let ws = small(&[]);
    let r = ws.resolver();
    for h in ws.hosts() {
        let lookup = r
            .ipv4_lookup(format!("{}.", h.name))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", h.name));
        let addrs: Vec<Ipv4Addr> = lookup
            .answers()
            .iter()
            .filter_map(|rec| match &rec.data {
                RData::A(a) => Some(a.0),
                _ => None,
            })
            .collect();
        assert_eq!(addrs, vec![h.addr], "{}", h.name);
    }
    for name in [
        "gone1.invalid.",
        "www.nowhere3.test.",
        "www.example.com.",
        "acme0.test.invalid.",
    ] {
        let err = r.ipv4_lookup(name).await.expect_err(name);
        assert!(err.is_nx_domain(), "{name}: {err:?}");
    }
    // dig, when installed, agrees.
    if Command::new("dig").arg("-v").output().is_ok() {
        let h = &ws.hosts()[0];
        let port = ws.dns.port().to_string();
        let server = format!("@{}", ws.dns.ip());
        let out = Command::new("dig")
            .args([
                "+short", "+time=2", "+tries=1", "-p", &port, &server, &h.name,
            ])
            .output()
            .expect("dig");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            h.addr.to_string()
        );
        let out = Command::new("dig")
            .args(["+time=2", "+tries=1", "-p", &port, &server, "gone2.invalid"])
            .output()
            .expect("dig");
        assert!(String::from_utf8_lossy(&out.stdout).contains("NXDOMAIN"));
    }
}

/// Replaces the run's ports with placeholders (URLs carry the port; in pages the
/// slash after it may be written `&#47;`).
fn normalize(text: &str, ws: &Websim) -> String {
    text.replace(&format!(":{}", ws.http_port), ":HTTP")
        .replace(&format!(":{}", ws.https_port), ":HTTPS")
        .replace(&format!("\t{}\t", ws.http_port), "\tHTTP\t")
        .replace(&format!("\t{}\t", ws.https_port), "\tHTTPS\t")
}

#[tokio::test]
async fn same_seed_gives_identical_pages_other_seed_differs() {
    let (a, b) = (small(&[]), small(&[]));
    let c = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "800",
        "--seed",
        "4",
        "--threads",
        "1",
    ]);
    for file in ["manifest", "hosts", "never", "unreachable", "seeds"] {
        let x = normalize(&std::fs::read_to_string(a.path(file)).unwrap(), &a);
        let y = normalize(&std::fs::read_to_string(b.path(file)).unwrap(), &b);
        assert!(x == y, "{file} differs between two runs with the same seed");
    }
    let ma = normalize(&std::fs::read_to_string(a.path("manifest")).unwrap(), &a);
    let mc = normalize(&std::fs::read_to_string(c.path("manifest")).unwrap(), &c);
    assert_ne!(ma, mc, "another seed gives another web");

    let (ca, cb) = (client(&a), client(&b));
    let urls: Vec<String> = a
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url)
        .collect();
    let sample: Vec<&String> = urls.iter().step_by(urls.len() / 25 + 1).collect();
    assert!(sample.len() >= 20);
    for url_a in sample {
        let url_b = url_a
            .replace(&format!(":{}/", a.http_port), &format!(":{}/", b.http_port))
            .replace(
                &format!(":{}/", a.https_port),
                &format!(":{}/", b.https_port),
            );
        let ra = ca
            .get_url(a.socket_for(url_a).unwrap(), url_a, &[])
            .await
            .unwrap();
        let rb = cb
            .get_url(b.socket_for(&url_b).unwrap(), &url_b, &[])
            .await
            .unwrap();
        assert_eq!((ra.status, rb.status), (200, 200), "{url_a}");
        assert!(
            normalize(&ra.text(), &a) == normalize(&rb.text(), &b),
            "{url_a}: bodies differ between runs"
        );
    }
}

#[tokio::test]
async fn robots_variants_answer_as_documented() {
    let ws = small(&[]);
    let c = client(&ws);
    let mut seen = HashSet::new();
    for h in ws.hosts().iter().filter(|h| !h.has("dead")) {
        let r = get_path(&c, h, "/robots.txt", &[]).await;
        assert_eq!(r.status, h.robots_status, "{} ({})", h.name, h.robots);
        let text = r.text();
        let expect_in_body = match h.robots.as_str() {
            "disallow" => Some("Disallow: /private/"),
            "allow_override" => Some("Allow: /private/public/"),
            "wildcards" => Some("Disallow: /*.php$"),
            "agent_group" => Some("User-agent: PolyCrawl"),
            "crawl_delay" => Some("Crawl-delay: 1"),
            "disallow_all" => Some("Disallow: /\n"),
            "empty" => Some("Disallow:\n"),
            _ => None,
        };
        if let Some(needle) = expect_in_body {
            assert!(text.contains(needle), "{}: {text}", h.robots);
        }
        match h.robots.as_str() {
            "redirect" => {
                let loc = r.header("location").expect("Location");
                assert!(loc.ends_with("/robots-real.txt"), "{loc}");
                let real = get_path(&c, h, "/robots-real.txt", &[]).await;
                assert_eq!(real.status, 200);
                assert!(real.text().contains("Disallow: /docs/"));
            }
            "server_error" => {
                // Every time, not once.
                assert_eq!(get_path(&c, h, "/robots.txt", &[]).await.status, 503);
                assert_eq!(h.robots_status, 503);
            }
            "crawl_delay" => assert_eq!(h.crawl_delay, Some(1.0)),
            _ => {}
        }
        seen.insert(h.robots.clone());
    }
    for v in [
        "none",
        "empty",
        "forbidden",
        "disallow",
        "allow_override",
        "wildcards",
        "agent_group",
        "crawl_delay",
        "server_error",
        "redirect",
        "disallow_all",
    ] {
        assert!(seen.contains(v), "no host with robots variant {v}");
    }
}

#[tokio::test]
async fn redirect_chains_loops_and_404s() {
    let ws = small(&[]);
    let c = client(&ws);
    let manifest = ws.manifest();
    let status: HashMap<&str, u16> = manifest
        .iter()
        .map(|r| (r.url.as_str(), r.status))
        .collect();
    let outcomes = ws.unreachable();
    let excluded: HashSet<&str> = outcomes
        .iter()
        .filter(|o| o.outcome == "robots_excluded")
        .map(|o| o.url.as_str())
        .collect();
    let chains: Vec<&str> = manifest
        .iter()
        .filter(|r| r.url.contains("/r/") && r.url.ends_with("/0"))
        .map(|r| r.url.as_str())
        .collect();
    assert!(!chains.is_empty(), "no redirect chain in the manifest");
    let mut crossed_hosts = false;
    for start in chains {
        let mut url = start.to_owned();
        let mut hops = 0;
        loop {
            if !status.contains_key(url.as_str()) {
                // The chain ends on a URL robots.txt excludes: not fetched.
                assert!(
                    excluded.contains(url.as_str()),
                    "{url} is neither fetched nor excluded"
                );
                break;
            }
            let r = c
                .get_url(ws.socket_for(&url).unwrap(), &url, &[])
                .await
                .unwrap();
            assert_eq!(Some(&r.status), status.get(url.as_str()), "{url}");
            if r.status == 200 {
                break;
            }
            assert!(matches!(r.status, 301 | 302), "{url}: {}", r.status);
            let loc = r.header("location").expect("Location");
            let next = url::Url::parse(&url)
                .unwrap()
                .join(loc)
                .unwrap()
                .to_string();
            crossed_hosts |= url::Url::parse(&next).unwrap().host_str()
                != url::Url::parse(&url).unwrap().host_str();
            url = next;
            hops += 1;
            assert!(hops <= 3, "chain from {start} is longer than 3");
        }
        assert!(hops >= 1 || !status.contains_key(start));
    }
    let _ = crossed_hosts; // chains cross hosts in most webs; not guaranteed in a small one

    let looper = ws.host_where("a loop host", |h| h.has("loops") && !h.has("dead"));
    let a = c
        .get(
            looper.socket(),
            looper.scheme == "https",
            &authority(&looper),
            "/loop/a",
            &[],
        )
        .await
        .unwrap();
    assert_eq!((a.status, a.header("location")), (302, Some("/loop/b")));
    let b = c
        .get(
            looper.socket(),
            looper.scheme == "https",
            &authority(&looper),
            "/loop/b",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(b.status, 302);
    assert!(b.header("location").unwrap().ends_with("/loop/a"));

    let missing: Vec<&str> = manifest
        .iter()
        .filter(|r| r.status == 404)
        .map(|r| r.url.as_str())
        .take(5)
        .collect();
    assert!(!missing.is_empty());
    for url in missing {
        let r = c
            .get_url(ws.socket_for(url).unwrap(), url, &[])
            .await
            .unwrap();
        assert_eq!(r.status, 404, "{url}");
        assert!(!r.text().contains("href"), "404 pages carry no links");
    }
}

#[tokio::test]
async fn gzip_matches_identity_and_chunked_decodes() {
    let ws = small(&[]);
    let c = client(&ws);
    let gz = ws.host_where("a gzip host", |h| {
        h.has("gzip") && !h.has("dead") && !h.has("slow")
    });
    let plain = get_path(&c, &gz, "/", &[]).await;
    let zipped = get_path(&c, &gz, "/", &[("Accept-Encoding", "gzip, deflate")]).await;
    assert_eq!((plain.status, zipped.status), (200, 200));
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert!(
        zipped.raw_body.len() < plain.body.len(),
        "gzip should shrink HTML"
    );
    assert_eq!(
        zipped.body, plain.body,
        "gzip body decompresses to the identity body"
    );
    let refused = get_path(&c, &gz, "/", &[("Accept-Encoding", "gzip;q=0, identity")]).await;
    assert_eq!(refused.header("content-encoding"), None);

    let ch = ws.host_where("a chunked host", |h| {
        h.has("chunked") && !h.has("dead") && !h.has("slow")
    });
    let r = get_path(&c, &ch, "/", &[]).await;
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-length"), None);
    assert!(r.text().starts_with("<!DOCTYPE html>") && r.text().ends_with("</html>\n"));

    let plain_host = ws.host_where("a plain host", |h| {
        !h.has("chunked") && !h.has("dead") && !h.has("misbehave") && !h.has("slow")
    });
    let r = get_path(&c, &plain_host, "/", &[]).await;
    assert_eq!(
        r.header("content-length")
            .map(|v| v.parse::<usize>().unwrap()),
        Some(r.raw_body.len())
    );
}

#[tokio::test]
async fn https_with_the_ca_and_upgrade_from_http() {
    let ws = small(&[]);
    let c = client(&ws);
    let h = ws.host_where("an https host", |h| {
        h.has("https") && !h.has("slow") && h.robots != "server_error"
    });
    assert_eq!(h.scheme, "https");
    let r = c
        .get(h.socket(), true, &authority(&h), "/", &[])
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<html"));

    // A client trusting another CA fails the handshake.
    let other = websim::tls::SimCa::generate().unwrap();
    let stranger = Client::trusting(other.ca_pem()).unwrap();
    let err = stranger
        .get(h.socket(), true, &authority(&h), "/", &[])
        .await
        .unwrap_err();
    assert!(
        err.to_string().to_ascii_lowercase().contains("certificate"),
        "{err}"
    );

    // Plain http to the https host: 301 to the https URL.
    let http = SocketAddr::from((h.addr, ws.http_port));
    let host = format!("{}:{}", h.name, ws.http_port);
    let r = c
        .get(http, false, &host, "/some/path?q=1", &[])
        .await
        .unwrap();
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("location").unwrap(),
        format!("https://{}:{}/some/path?q=1", h.name, ws.https_port)
    );
}

#[tokio::test]
async fn slow_host_delays_the_first_byte_and_dead_host_refuses() {
    // A long delay, so that a loaded machine cannot blur slow and fast.
    let ws = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "800",
        "--seed",
        "3",
        "--slow-ms",
        "900",
    ]);
    let c = client(&ws);
    let slow = ws.host_where("a slow host", |h| h.has("slow"));
    let r = get_path(&c, &slow, "/", &[]).await;
    assert_eq!(r.status, 200);
    assert!(
        r.first_byte >= Duration::from_millis(900),
        "slow host answered in {:?}",
        r.first_byte
    );
    let fast = ws.host_where("a fast host", |h| {
        !h.has("slow") && !h.has("dead") && !h.has("misbehave") && h.scheme == "http"
    });
    let r = get_path(&c, &fast, "/", &[]).await;
    assert!(
        r.first_byte < Duration::from_millis(900),
        "normal host took {:?}",
        r.first_byte
    );

    let dead = ws.host_where("a dead host", |h| h.has("dead"));
    for port in [ws.http_port, ws.https_port] {
        let err = TcpStream::connect(SocketAddr::from((dead.addr, port)))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    }
    let dead_urls = ws
        .unreachable()
        .into_iter()
        .filter(|o| o.outcome == "connect_failure")
        .count();
    assert!(dead_urls > 0, "the dead host is linked");
}

#[tokio::test]
async fn latency_delays_every_host_and_slow_hosts_wait_the_longer() {
    let ws = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "800",
        "--seed",
        "3",
        "--slow-ms",
        "900",
        "--latency-ms",
        "400",
    ]);
    let c = client(&ws);
    let fast = ws.host_where("a fast host", |h| {
        !h.has("slow") && !h.has("dead") && !h.has("misbehave") && h.scheme == "http"
    });
    for path in ["/", "/robots.txt"] {
        let r = get_path(&c, &fast, path, &[]).await;
        assert!(
            r.first_byte >= Duration::from_millis(400),
            "{path} of a normal host answered in {:?} with 400 ms latency",
            r.first_byte
        );
    }
    let slow = ws.host_where("a slow host", |h| h.has("slow"));
    let r = get_path(&c, &slow, "/", &[]).await;
    assert!(
        r.first_byte >= Duration::from_millis(900),
        "slow host answered in {:?}",
        r.first_byte
    );
}

#[tokio::test]
async fn request_log_has_a_line_per_request() {
    let ws = small(&[]);
    let c = client(&ws);
    let h = ws.host_where("a plain fast host", |h| {
        h.scheme == "http"
            && !h.has("slow")
            && !h.has("dead")
            && !h.has("misbehave")
            && !h.has("chunked")
            && !h.has("gzip")
    });
    let auth = authority(&h);
    let robots = c
        .get(h.socket(), false, &auth, "/robots.txt", &[])
        .await
        .unwrap();
    let home = c.get(h.socket(), false, &auth, "/", &[]).await.unwrap();
    let missing = c
        .get(h.socket(), false, &auth, "/no/such/page?x=1", &[])
        .await
        .unwrap();
    let log = ws.flushed_log();
    let mine: Vec<_> = log.iter().filter(|l| l.host == auth).collect();
    assert_eq!(mine.len(), 3, "{log:#?}");
    for (line, (target, resp)) in mine.iter().zip([
        ("/robots.txt", &robots),
        ("/", &home),
        ("/no/such/page?x=1", &missing),
    ]) {
        assert_eq!(line.target, target);
        assert_eq!(line.status, resp.status);
        assert_eq!(line.bytes, resp.raw_body.len() as u64);
        assert_eq!(line.scheme, "http");
        assert_eq!(line.method, "GET");
        assert_eq!(line.server, h.socket());
        assert!(line.client.ip().is_loopback());
        assert_eq!(line.user_agent, "polycrawl/0.1 (+websim-tests)");
        assert!(line.start_us <= line.end_us && line.start_us > 1_600_000_000_000_000);
        assert!(
            line.start_us <= line.write_from_us && line.write_from_us <= line.end_us,
            "{line:?}"
        );
        assert!(
            line.service_us <= line.end_us - line.start_us + 1_000,
            "{line:?}"
        );
    }
}

#[tokio::test]
async fn keep_alive_pipelining_and_misdirected_hosts() {
    let ws = small(&[]);
    let h = ws.host_where("a plain host", |h| {
        h.scheme == "http"
            && !h.has("slow")
            && !h.has("dead")
            && !h.has("misbehave")
            && !h.has("chunked")
    });
    let auth = authority(&h);
    let mut s = TcpStream::connect(h.socket()).await.unwrap();
    // Three requests in one write; the last one closes.
    let reqs = format!(
        "GET / HTTP/1.1\r\nHost: {auth}\r\n\r\nGET /robots.txt HTTP/1.1\r\nHost: {auth}\r\n\r\nGET /missing/p1.html HTTP/1.1\r\nHost: {auth}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(reqs.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut all))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&all);
    assert_eq!(text.matches("HTTP/1.1 ").count(), 3, "{text:.300}");

    // A host name websim does not serve, or a host of another address: 421.
    let c = client(&ws);
    let r = c
        .get(h.socket(), false, "www.unknown.test", "/", &[])
        .await
        .unwrap();
    assert_eq!(r.status, 421);
    let elsewhere = ws.host_where("a host on another address", |o| {
        o.addr != h.addr && o.scheme == "http" && !o.has("dead")
    });
    let r = c
        .get(h.socket(), false, &authority(&elsewhere), "/", &[])
        .await
        .unwrap();
    assert_eq!(r.status, 421);
    // Every host sharing this address is served here.
    for o in ws
        .hosts()
        .iter()
        .filter(|o| o.addr == h.addr && o.scheme == "http")
    {
        assert_eq!(
            c.get(h.socket(), false, &authority(o), "/", &[])
                .await
                .unwrap()
                .status,
            200,
            "{}",
            o.name
        );
    }
}

/// Revision 1 of the web: `changes.tsv` classes each manifest URL, and the pages
/// answer as it says to a request carrying revision 0's validators. Revision 1
/// runs on revision 0's ports, as a recrawl needs (URLs carry the port).
#[tokio::test]
async fn revisions_validators_and_conditional_requests() {
    async fn get(ws: &Websim, url: &str, extra: &[(&str, &str)]) -> Response {
        let addr = ws.socket_for(url).expect("address");
        client(ws).get_url(addr, url, extra).await.expect("GET")
    }
    let old = small(&[]);
    assert!(old.changes().iter().all(|(_, c)| c != "changed"));
    let sample: Vec<String> = old
        .changes()
        .into_iter()
        .step_by(7)
        .take(60)
        .map(|(u, _)| u)
        .collect();
    let mut first = Vec::new();
    for url in &sample {
        first.push(get(&old, url, &[]).await);
    }
    let (http, https) = (old.http_port.to_string(), old.https_port.to_string());
    drop(old);
    let new = small(&[
        "--revision",
        "1",
        "--change-share",
        "0.2",
        "--http-port",
        &http,
        "--https-port",
        &https,
    ]);
    let changes: HashMap<String, String> = new.changes().into_iter().collect();
    let manifest = new.manifest();
    assert_eq!(changes.len(), manifest.len());
    let count = |what: &str| changes.values().filter(|c| *c == what).count();
    let pages = manifest.iter().filter(|r| r.status == 200).count();
    let changed = count("changed");
    assert!(
        changed * 100 > pages * 12 && changed * 100 < pages * 28,
        "{changed} of {pages}"
    );
    assert!(count("not_modified") > 0 && count("unchanged") > 0 && count("fixed") > 0);
    let mut seen = HashSet::new();
    for (url, first) in sample.iter().zip(first) {
        let change = changes[url].as_str();
        seen.insert(change);
        let etag = first.header("etag").map(str::to_owned);
        let modified = first.header("last-modified").map(str::to_owned);
        let again = get(&new, url, &[]).await;
        let by_etag = match &etag {
            Some(e) => get(&new, url, &[("If-None-Match", e)]).await,
            None => get(&new, url, &[]).await,
        };
        let by_date = match &modified {
            Some(m) => Some(get(&new, url, &[("If-Modified-Since", m)]).await.status),
            None => None,
        };
        match change {
            "changed" => {
                assert_eq!(
                    (first.status, again.status, by_etag.status),
                    (200, 200, 200),
                    "{url}"
                );
                assert_ne!(first.body, again.body, "{url}");
                assert!(again.text().contains("Updated in revision 1."), "{url}");
                if etag.is_some() {
                    assert_ne!(again.header("etag").map(str::to_owned), etag, "{url}");
                    assert_eq!(by_date, Some(200), "{url}");
                }
            }
            "not_modified" => {
                assert!(etag.is_some() && modified.is_some(), "{url}");
                assert_eq!(first.body, again.body, "{url}");
                assert_eq!((by_etag.status, by_etag.body.len()), (304, 0), "{url}");
                assert_eq!(by_etag.header("etag").map(str::to_owned), etag, "{url}");
                assert_eq!(by_date, Some(304), "{url}");
            }
            "unchanged" | "fixed" => {
                assert!(etag.is_none() && modified.is_none(), "{url}");
                assert_eq!(
                    (first.status, &first.body),
                    (again.status, &again.body),
                    "{url}"
                );
            }
            other => panic!("unknown change {other} for {url}"),
        }
    }
    assert!(
        seen.contains("changed") && seen.contains("not_modified"),
        "{seen:?}"
    );
}

async fn raw(addr: SocketAddr, path: &str, limit: usize, wait: Duration) -> (Vec<u8>, bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: misbehave.websim.test\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let closed = loop {
        match tokio::time::timeout(wait, s.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() >= limit {
                    break false;
                }
            }
            Err(_) => break false,
        }
    };
    (buf, closed)
}

#[tokio::test]
async fn misbehaving_host_misbehaves_as_documented() {
    let ws = small(&[]);
    let bad = ws.host_where("the misbehaving host", |h| h.has("misbehave"));
    let addr = SocketAddr::from((bad.addr, ws.http_port));
    let long = Duration::from_secs(10);
    let head_end = |b: &[u8]| b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);

    let (b, closed) = raw(addr, "/garbage", usize::MAX, long).await;
    assert!(closed && b.len() == 4096 && !b.starts_with(b"HTTP/"));

    let (b, _) = raw(addr, "/huge-headers", usize::MAX, long).await;
    assert!(head_end(&b).unwrap() > 200 * 1024);

    let (b, closed) = raw(addr, "/short-body", usize::MAX, long).await;
    let h = head_end(&b).unwrap();
    assert!(closed && String::from_utf8_lossy(&b[..h]).contains("Content-Length: 100000"));
    assert_eq!(b.len() - h, 1000);

    let (b, closed) = raw(addr, "/huge-body", 2 * 1024 * 1024, long).await;
    assert!(
        !closed
            && String::from_utf8_lossy(&b[..head_end(&b).unwrap()])
                .contains("Content-Length: 52428800")
    );

    let (b, closed) = raw(addr, "/stall", usize::MAX, Duration::from_millis(700)).await;
    assert!(!closed, "stall keeps the connection open");
    assert_eq!(b.len() - head_end(&b).unwrap(), 1000);

    let (b, closed) = raw(addr, "/no-length", usize::MAX, long).await;
    let r = parse_response(&b, false, Duration::ZERO).unwrap();
    assert!(closed && r.header("content-length").is_none() && r.text().contains("</html>"));

    let (b, _) = raw(addr, "/bad-chunked", usize::MAX, long).await;
    assert!(dechunk(&b[head_end(&b).unwrap()..]).is_err());

    let (b, _) = raw(addr, "/gzip-bomb", usize::MAX, Duration::from_secs(20)).await;
    let h = head_end(&b).unwrap();
    assert!(String::from_utf8_lossy(&b[..h]).contains("Content-Encoding: gzip"));
    assert!(b.len() - h < 200 * 1024);
    let mut inflated = 0u64;
    let mut d = flate2::read::GzDecoder::new(&b[h..]);
    let mut sink = vec![0u8; 1 << 20];
    while let Ok(n) = d.read(&mut sink) {
        if n == 0 {
            break;
        }
        inflated += n as u64;
    }
    assert_eq!(inflated, 100 * 1024 * 1024);
    // Not linked from anywhere.
    assert!(!ws.manifest().iter().any(|r| r.url.contains("misbehave")));

    let mut s = TcpStream::connect(addr).await.unwrap();
    silence(&mut s, "misbehave.websim.test", "/silent").await;
}

/// Sends `GET path` with `host`, closes the sending side and reads to the end:
/// asserts that not a byte came back before websim closed in turn.
async fn silence(s: &mut TcpStream, host: &str, path: &str) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    s.shutdown().await.unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.unwrap();
    assert!(got.is_empty(), "{host}{path} answered {got:?}");
}

/// `--stuck-hosts` (issue 37): the five stuck hosts fail as `stuck.rs` says, are
/// flagged in hosts.tsv and their pages are unreachable in the manifest.
#[tokio::test]
async fn stuck_hosts_fail_as_documented() {
    let ws = small(&["--stuck-hosts"]);
    let stuck: Vec<HostRow> = ws.hosts().into_iter().filter(|h| h.has("stuck")).collect();
    let kinds = [
        "refused",
        "silent",
        "robots_silent",
        "robots_500",
        "robots_503",
    ];
    assert_eq!(stuck.len(), kinds.len());
    let c = client(&ws);
    for (h, kind) in stuck.iter().zip(kinds) {
        assert!(h.has(kind) && !h.has("seed") && h.scheme == "http", "{h:?}");
        let status = match kind {
            "robots_500" => 500,
            "robots_503" => 503,
            _ => 0,
        };
        assert_eq!(h.robots_status, status, "{h:?}");
        let rows: Vec<_> = ws
            .unreachable()
            .into_iter()
            .filter(|r| r.url.starts_with(&format!("http://{}:", h.name)))
            .collect();
        let outcome = if kind == "refused" {
            "connect_failure"
        } else {
            "too_many_failures"
        };
        assert!(rows.len() == 3 && rows.iter().all(|r| r.outcome == outcome && r.depth == 1));
        match kind {
            "refused" => {
                let e = TcpStream::connect(h.socket()).await.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
            }
            "silent" | "robots_silent" => {
                let mut s = TcpStream::connect(h.socket()).await.unwrap();
                silence(&mut s, &authority(h), "/robots.txt").await;
                if kind == "silent" {
                    let mut s = TcpStream::connect(h.socket()).await.unwrap();
                    silence(&mut s, &authority(h), "/").await;
                } else {
                    assert_eq!(get_path(&c, h, "/", &[]).await.status, 200);
                }
            }
            _ => {
                assert_eq!(get_path(&c, h, "/robots.txt", &[]).await.status, status);
                assert_eq!(get_path(&c, h, "/", &[]).await.status, 200);
            }
        }
    }
}

#[test]
fn bad_flags_fail_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (&["--hosts", "5"][..], "at least 20"),
        (&["--dns-addr", "10.1.2.3:53"][..], "127.0.0.0/8"),
        (&["--hosts", "50", "--pages", "10"][..], "--pages"),
        (&["--bogus"][..], "--bogus"),
    ] {
        let mut cmd = Command::new(tests::bin::polycrawl());
        cmd.arg("websim").args(args).arg("--out").arg(dir.path());
        // A guard, so that a websim that wrongly starts is killed, not waited for.
        let mut p = ProcessGuard::spawn("websim-bad-flags", cmd, dir.path()).unwrap();
        let status = p.wait_exit(Duration::from_secs(20)).unwrap();
        let status =
            status.unwrap_or_else(|| panic!("{}", p.report(&format!("{args:?} kept running"))));
        assert!(!status.success(), "{args:?} succeeded");
        assert!(
            p.stderr().contains(needle),
            "{}",
            p.report(&format!("{args:?} lacks {needle:?}"))
        );
    }
}

#[tokio::test]
async fn sigterm_flushes_the_log_and_exits_zero() {
    let mut ws = small(&[]);
    let c = client(&ws);
    let h = ws.host_where("a fast host", |h| {
        !h.has("slow") && !h.has("dead") && !h.has("misbehave")
    });
    c.get(
        h.socket(),
        h.scheme == "https",
        &authority(&h),
        "/robots.txt",
        &[],
    )
    .await
    .unwrap();
    let status = ws.process.terminate(Duration::from_secs(10)).unwrap();
    assert!(status.success(), "{status:?}\n{}", ws.process.stderr());
    assert!(
        ws.process
            .stdout()
            .iter()
            .any(|l| l.starts_with("websim stopped"))
    );
    assert!(
        ws.log()
            .iter()
            .any(|l| l.host == authority(&h) && l.target == "/robots.txt")
    );
}

/// `--pace-per-client`: two clients at two addresses each get about the rate, and
/// a client with four connections gets about the rate in all, not four times it.
#[tokio::test]
async fn pacing_gives_every_client_address_its_rate() {
    const RATE: u64 = 100_000;
    let window = Duration::from_secs(3);
    let ws = small(&["--pace-per-client", "100000"]);
    let h = ws.host_where("a plain fast host", |h| {
        h.scheme == "http" && !h.has("slow") && !h.has("dead") && !h.has("misbehave")
    });
    let auth = authority(&h);
    let (a, b, c) = tokio::join!(
        pipelined_bytes(Ipv4Addr::new(127, 0, 0, 2), h.socket(), &auth, 1, window),
        pipelined_bytes(Ipv4Addr::new(127, 0, 0, 3), h.socket(), &auth, 1, window),
        pipelined_bytes(Ipv4Addr::new(127, 0, 0, 4), h.socket(), &auth, 4, window),
    );
    let expect = RATE as f64 * window.as_secs_f64();
    for (who, got) in [("127.0.0.2", &a), ("127.0.0.3", &b), ("127.0.0.4", &c)] {
        let total: u64 = got.iter().sum();
        let share = total as f64 / expect;
        println!("{who}: {total} bytes in {window:?} over {got:?} = {share:.3} of the rate");
        // Above: at most the rate plus the burst and one piece (33 kB of 300).
        // Below: the rate less the gaps between pipelined responses.
        assert!((0.85..=1.12).contains(&share), "{who}: {got:?}, {share:.3}");
    }
    // The four connections of one client share its rate, every one served.
    assert!(c.iter().all(|&n| n > 10_000), "{c:?}");
}
