//! Issue 43, Done-when 2: HTTP/2 captures. nginx serves a small static site over
//! HTTP/2 and TLS on loopback (`listen ... ssl http2`, a certificate for
//! 127.0.0.1 from a CA made here and given to the crawl as `extra_ca_file`):
//! 36 pages with links, half of them large enough for nginx to gzip on the fly
//! (no `Content-Length` then), one redirect and one 404. `polycrawl crawl` with
//! the defaults (loopback allowed, politeness off, as `ops/docsites.sh`) fetches
//! it whole; then
//!
//! - nginx's access log says every request came over HTTP/2.0;
//! - warcio (not polycrawl's reader) reads every response and request record:
//!   each says `WARC-Protocol: h2` and a `tls/1.x` one, and its HTTP block starts
//!   with `HTTP/1.1 ` (responses) or `GET ... HTTP/1.1` (requests);
//! - `warcio check` passes every WARC file, `polycrawl wacz` packs a WACZ that
//!   `wacz validate` accepts;
//! - pywb (`wb-manager add`, `wayback` on loopback) replays every capture: its
//!   status, the redirect's `Location`, the body (the payload digest for an
//!   uncompressed one; for a gzipped one, which pywb may serve inflated, the
//!   page's own text);
//!
//! and a second crawl with `downloader.http2: false` goes over HTTP/1.1: nginx logs
//! HTTP/1.1 and no record says `WARC-Protocol: h2`.
//!
//! nginx, warcio, wacz and pywb are what `ops/setup.sh` installs; a missing one
//! fails the test with that hint.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::Value;
use tests::archive::{self, Pywb, free_port};
use tests::bin;
use tests::http::Client;
use tests::process::{ProcessGuard, require_python, run_ok};

/// Pages of the site besides its index.
const PAGES: usize = 36;

/// A CA and a server certificate it signed for 127.0.0.1, as PEM files in `dir`:
/// (CA, certificate, key).
fn pki(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "polycrawl http2 test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    // An IP address SAN: the crawl's URLs name 127.0.0.1 (no DNS needed).
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    leaf.extended_key_usages
        .push(ExtendedKeyUsagePurpose::ServerAuth);
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca_cert.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

/// The site: `index.html` linking the first pages, the redirect `/old` and the
/// missing `/missing.html`; page i links pages i+1 and 7i (mod PAGES). Even pages
/// are long (nginx gzips them), odd ones short.
fn write_site(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    let mut index = String::from("<!doctype html><html><head><title>index</title></head><body>");
    for i in 0..4 {
        index.push_str(&format!("<a href=\"/page{i}.html\">page {i}</a> "));
    }
    index.push_str("<a href=\"/old\">old</a> <a href=\"/missing.html\">missing</a></body></html>");
    std::fs::write(root.join("index.html"), index).unwrap();
    for i in 0..PAGES {
        let filler = if i % 2 == 0 {
            format!(
                "<p>{}</p>",
                "All work and no play makes a dull crawl. ".repeat(60)
            )
        } else {
            String::new()
        };
        let page = format!(
            "<!doctype html><html><head><title>page {i}</title></head><body>\
             <h1>The text of page {i}</h1>{filler}\
             <a href=\"/page{}.html\">next</a> <a href=\"page{}.html\">jump</a></body></html>",
            (i + 1) % PAGES,
            (i * 7) % PAGES
        );
        std::fs::write(root.join(format!("page{i}.html")), page).unwrap();
    }
}

/// nginx serving `root` over HTTP/2 and TLS on 127.0.0.1:`port`, one process
/// (no workers, so the guard's SIGKILL ends it all), its access log as
/// `PROTOCOL<TAB>STATUS<TAB>URI`.
fn start_nginx(dir: &Path, root: &Path, cert: &Path, key: &Path, port: u16) -> ProcessGuard {
    let conf = dir.join("nginx");
    std::fs::create_dir_all(&conf).unwrap();
    // As root, nginx would read the site as `nobody`; the temp folder is ours only.
    let root_user = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let user = if root_user { "user root;" } else { "" };
    let c = conf.display();
    let text = format!(
        "{user}
daemon off;
master_process off;
pid {c}/nginx.pid;
error_log {c}/error.log warn;
events {{ worker_connections 256; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    client_body_temp_path {c}/body;
    proxy_temp_path {c}/proxy;
    fastcgi_temp_path {c}/fastcgi;
    uwsgi_temp_path {c}/uwsgi;
    scgi_temp_path {c}/scgi;
    gzip on;
    gzip_min_length 1000;
    gzip_types text/html;
    log_format proto escape=none '$server_protocol\\t$status\\t$request_uri';
    access_log {c}/access.log proto;
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {root};
        index index.html;
        location = /old {{ return 301 /page5.html; }}
    }}
}}
",
        cert = cert.display(),
        key = key.display(),
        root = root.display(),
    );
    std::fs::write(conf.join("nginx.conf"), text).unwrap();
    let mut cmd = Command::new("nginx");
    cmd.arg("-e")
        .arg(conf.join("error.log"))
        .arg("-p")
        .arg(&conf)
        .arg("-c")
        .arg(conf.join("nginx.conf"));
    ProcessGuard::spawn("nginx", cmd, dir).expect("nginx is missing: run ops/setup.sh")
}

/// The access log's lines: (protocol, status, URI).
fn access_log(dir: &Path) -> Vec<(String, String, String)> {
    std::fs::read_to_string(dir.join("nginx/access.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut f = l.split('\t').map(str::to_owned);
            (
                f.next().unwrap_or_default(),
                f.next().unwrap_or_default(),
                f.next().unwrap_or_default(),
            )
        })
        .collect()
}

/// Runs `polycrawl crawl` of `seed` into `dir/<name>` with the defaults, loopback
/// allowed, politeness off, the CA trusted, and `extra` downloader settings;
/// the repository's path.
fn crawl(dir: &Path, name: &str, seed: &str, ca: &Path, extra: &str) -> PathBuf {
    let work = dir.join(name);
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("seeds.txt"), format!("{seed}\n")).unwrap();
    let config = format!(
        "(
    downloader: (allow_private: true, extra_ca_file: Some({ca:?}), {extra}),
    manager: (
        admin_http: \"127.0.0.1:0\",
        frontier: (
            allow_private_addresses: true,
            interval_ms: 0, min_interval_ms: 0, max_crawl_delay_ms: 0,
            ip_max_in_flight: 0, ip_min_interval_ms: 0,
        ),
    ),
)
"
    );
    std::fs::write(work.join("config.ron"), config).unwrap();
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(work.join("seeds.txt"))
        .arg("--out")
        .arg(work.join("out"))
        .arg("--config")
        .arg(work.join("config.ron"))
        .env("NO_COLOR", "1");
    let mut p = ProcessGuard::spawn(&format!("crawl-{name}"), cmd, &work).unwrap();
    let status = p.wait_exit(Duration::from_secs(180)).unwrap();
    let Some(status) = status else {
        panic!("{}", p.report("not done in 180 s"));
    };
    assert!(status.success(), "{}", p.report("failed"));
    let out = p.stdout().join("\n");
    assert!(
        out.contains(": Complete: "),
        "the crawl calls itself complete:\n{out}"
    );
    work.join("out").join("repository")
}

/// What warcio says of one response or request record.
#[derive(Debug)]
struct Rec {
    kind: String,
    uri: String,
    protocols: Vec<String>,
    first_line: String,
    /// The stored head's `Content-Encoding` (empty for none).
    coding: String,
}

/// Every response and request record of `warcs`, read by warcio.
fn records(warcs: &[PathBuf], dir: &Path) -> Vec<Rec> {
    const SCRIPT: &str = r#"
import json, sys
from warcio.archiveiterator import ArchiveIterator
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        for r in ArchiveIterator(f):
            if r.rec_type not in ('response', 'request'):
                continue
            first = r.http_headers.protocol + ' ' + r.http_headers.statusline
            print(json.dumps({
                'kind': r.rec_type,
                'uri': r.rec_headers.get_header('WARC-Target-URI'),
                'protocols': [v for (k, v) in r.rec_headers.headers if k.lower() == 'warc-protocol'],
                'first_line': first,
                'coding': r.http_headers.get_header('Content-Encoding') or '',
            }))
"#;
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(SCRIPT).args(warcs);
    let out = run_ok("reading the records with warcio", cmd, dir);
    out.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Rec {
                kind: v["kind"].as_str().unwrap().to_owned(),
                uri: v["uri"].as_str().unwrap().to_owned(),
                protocols: v["protocols"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap().to_owned())
                    .collect(),
                first_line: v["first_line"].as_str().unwrap().to_owned(),
                coding: v["coding"].as_str().unwrap().to_owned(),
            }
        })
        .collect()
}

/// One CDXJ line of the repository's index.
#[derive(Debug)]
struct Line {
    timestamp: String,
    url: String,
    status: u16,
    digest: String,
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
                status: field("status").parse().unwrap_or(0),
                digest: field("digest"),
            });
        }
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_site_is_archived_as_http11_records_that_replay() {
    for m in ["warcio", "wacz", "pywb"] {
        require_python(m);
    }
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = pki(dir.path());
    let site = dir.path().join("site");
    write_site(&site);
    let port = free_port();
    let _nginx = start_nginx(dir.path(), &site, &cert, &key, port);
    let ca_pem = std::fs::read_to_string(&ca).unwrap();
    let client = Client::trusting(&ca_pem).unwrap();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    test_support::wait::until_async_with(
        "nginx to answer",
        Duration::from_secs(20),
        Duration::from_millis(100),
        async || client.get(addr, true, "127.0.0.1", "/", &[]).await.is_ok(),
    )
    .await;
    let probes = access_log(dir.path()).len();

    // The crawl, with HTTP/2 as by default.
    let seed = format!("https://127.0.0.1:{port}/");
    let repo = crawl(dir.path(), "h2", &seed, &ca, "");
    let log = access_log(dir.path());
    let crawled = &log[probes..];
    let mut by_uri: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for (proto, status, uri) in crawled {
        assert_eq!(proto, "HTTP/2.0", "{uri} came over {proto}: {crawled:?}");
        by_uri.insert(uri, (proto, status));
    }
    assert_eq!(by_uri.len(), crawled.len(), "each URL once: {crawled:?}");
    // The index, the pages, the redirect, the 404 (and robots.txt).
    assert!(by_uri.len() >= PAGES + 3, "{by_uri:?}");
    assert_eq!(by_uri.get("/old").map(|s| s.1), Some("301"));
    assert_eq!(by_uri.get("/missing.html").map(|s| s.1), Some("404"));

    // The records, read by warcio.
    let warcs = tests::repository::warc_files(&repo).expect("the WARC files");
    assert!(!warcs.is_empty());
    let recs = records(&warcs, dir.path());
    let responses: Vec<&Rec> = recs.iter().filter(|r| r.kind == "response").collect();
    let requests = recs.iter().filter(|r| r.kind == "request").count();
    assert!(
        responses.len() >= PAGES + 3,
        "{} responses",
        responses.len()
    );
    assert_eq!(requests, responses.len(), "a request record per response");
    for r in &recs {
        assert!(r.uri.starts_with(&seed), "{r:?}");
        assert_eq!(r.protocols.first().map(String::as_str), Some("h2"), "{r:?}");
        assert!(r.protocols.iter().any(|p| p.starts_with("tls/1.")), "{r:?}");
        if r.kind == "response" {
            assert!(r.first_line.starts_with("HTTP/1.1 "), "{r:?}");
        } else {
            assert!(
                r.first_line.starts_with("GET /") && r.first_line.ends_with(" HTTP/1.1"),
                "{r:?}"
            );
        }
    }
    let gzip_records = responses.iter().filter(|r| r.coding == "gzip").count();
    assert!(
        gzip_records >= PAGES / 2,
        "{gzip_records} gzipped responses"
    );
    let first_lines: Vec<&str> = responses.iter().map(|r| r.first_line.as_str()).collect();
    assert!(first_lines.contains(&"HTTP/1.1 301 Moved Permanently"));
    assert!(first_lines.contains(&"HTTP/1.1 404 Not Found"));

    // warcio check, the WACZ and wacz validate.
    archive::warcio_check(&warcs, dir.path());
    archive::wacz_validated(&repo, dir.path());

    // pywb replays every capture.
    let pywb = Pywb::start(&warcs, dir.path()).await;
    let (wb, host, plain) = (pywb.addr, pywb.host.clone(), pywb.client.clone());
    let lines = index_lines(&repo);
    assert!(lines.len() >= PAGES + 3, "{} index lines", lines.len());
    let (mut digests, mut gzipped, mut redirects) = (0, 0, 0);
    for l in &lines {
        let target = format!("/crawl/{}id_/{}", l.timestamp, l.url);
        let r = plain
            .get(wb, false, &host, &target, &[])
            .await
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        if l.status == 301 {
            // pywb serves the redirect, or where it leads (same SURT key).
            assert!(
                r.status == 301
                    && r.header("location")
                        .is_some_and(|v| v.ends_with("/page5.html"))
                    || r.status == 200,
                "{target}: {} {:?}",
                r.status,
                r.headers
            );
            redirects += 1;
            continue;
        }
        assert_eq!(r.status, l.status, "{target}");
        let coded = responses
            .iter()
            .any(|rec| rec.uri == l.url && !rec.coding.is_empty());
        if coded {
            // Gzipped by nginx: pywb (or the client) inflates it; it is the page.
            let text = String::from_utf8_lossy(&r.body);
            let page = l.url.rsplit('/').next().unwrap().trim_end_matches(".html");
            assert!(
                text.contains(&format!("The text of {}", page.replace("page", "page "))),
                "{target}: {text}"
            );
            gzipped += 1;
        } else {
            let got = spool::warc::payload_digest(&r.raw_body).to_string();
            assert_eq!(
                got, l.digest,
                "{target}: body differs from the stored payload"
            );
            digests += 1;
        }
    }
    assert!(gzipped >= PAGES / 2 - 1, "{gzipped} gzipped pages replayed");
    assert!(
        digests >= PAGES / 2,
        "{digests} pages replayed digest-equal"
    );
    assert_eq!(redirects, 1);
    // A page replayed in its own frame as a browser would ask for it.
    let page = lines
        .iter()
        .find(|l| l.url.ends_with("/page1.html"))
        .unwrap();
    let r = plain
        .get(
            wb,
            false,
            &host,
            &format!("/crawl/{}mp_/{}", page.timestamp, page.url),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().contains("The text of page 1"), "{}", r.text());

    // HTTP/2 off: the same site over HTTP/1.1, and no record says h2.
    let before = access_log(dir.path()).len();
    let repo = crawl(dir.path(), "h1", &seed, &ca, "http2: false");
    let log = access_log(dir.path());
    let crawled = &log[before..];
    assert!(crawled.len() >= PAGES + 3, "{crawled:?}");
    assert!(
        crawled.iter().all(|(proto, _, _)| proto == "HTTP/1.1"),
        "{crawled:?}"
    );
    let warcs = tests::repository::warc_files(&repo).unwrap();
    let recs = records(&warcs, dir.path());
    assert!(recs.len() >= 2 * (PAGES + 3));
    for r in &recs {
        assert!(!r.protocols.iter().any(|p| p == "h2"), "{r:?}");
        assert!(r.first_line.contains("HTTP/1.1"), "{r:?}");
    }
    println!(
        "http2: {} requests over HTTP/2.0, {} response records with WARC-Protocol h2; \
         pywb replayed {} ({digests} digest-equal, {gzipped} gzipped, {redirects} redirect); \
         http2 off: {} requests over HTTP/1.1",
        by_uri.len(),
        responses.len(),
        lines.len(),
        crawled.len()
    );
    let _ = std::io::stdout().flush();
}
