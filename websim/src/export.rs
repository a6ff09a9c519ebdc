//! Static export: the same web written as files and a server configuration, so that
//! an ordinary web server (nginx) serves it instead of websim. Benchmarks against
//! other crawlers use it: a server nobody here wrote answers, with its own keep-alive,
//! gzip and TLS, while the manifest and the checks stay websim's (`polycrawl websim
//! --export-static DIR`; `ops/bench-peers.sh --server nginx`).
//!
//! What is written under `DIR`:
//! - `sites/<host>/...`: every 200 answer a correct crawl fetches (the manifest's
//!   rows and each host's robots.txt), rendered by websim's own code. The file of a
//!   target is its path percent-decoded (nginx matches decoded paths), `index.html`
//!   inside a directory path, and `__q/<path>/<query>` for a target with a query
//!   (the server configuration maps `?query` there).
//! - `sites.conf`: nginx `server` blocks to include in an `http` block: one per
//!   host and scheme on the host's address and websim's ports, with an exact
//!   `location` for every redirect and every non-200, non-404 answer, gzip on the
//!   hosts websim gzips, and on the http side of an https host a 301 to https.
//!   Anything else is nginx's own 404.
//! - `tls/cert.pem`, `tls/key.pem` (when the web has https hosts): one leaf
//!   certificate for every https host name, signed by this run's CA
//!   ([`super::tls::SimCa::static_leaf`]).
//!
//! What the static web does not keep: chunked encoding per host (nginx chunks only
//! what it compresses), websim's 404 and 421 bodies, slow and dead hosts (use it
//! with `--plain`, which has none), the misbehaving host and trap hosts (never in
//! the manifest). A correct crawl's manifest, seeds and never-list are unchanged.
//!
//! Complexity: O(URLs in the manifest) time; one page in memory at a time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::html::render_page;
use super::linkform::Scratch;
use super::manifest::{Crawl, WebGraph, bfs};
use super::model::{Target, Web};
use super::respond::{self, Reply, Request, Scheme};
use super::robots::REAL_ROBOTS_PATH;
use super::tls::{SimCa, TlsError};

/// Why the export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A file or directory could not be written.
    #[error("websim export: writing {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A URL or location holds a character an nginx configuration cannot carry
    /// unquoted or a file name cannot hold (never in a generated web).
    #[error("websim export: {what} {text:?} cannot be exported")]
    Unexportable {
        /// What it is ("path", "location").
        what: &'static str,
        /// The text.
        text: String,
    },
    /// The web's ports are not fixed (an export needs the ports URLs carry).
    #[error("websim export: give --http-port and --https-port (the URLs carry them)")]
    PortsNotFixed,
    /// The TLS leaf could not be made or written.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// What the export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exported {
    /// Files under `sites/`.
    pub files: usize,
    /// Bytes in them.
    pub bytes: u64,
    /// `location` rules (redirects and other fixed answers).
    pub locations: usize,
    /// Hosts with a server block.
    pub hosts: usize,
}

/// One host's fixed answers (redirects, other statuses): decoded path -> (status,
/// `Location`). A host with files only has an empty map.
type FixedAnswers = BTreeMap<String, (u16, Option<String>)>;

/// Writes the static web of `web` into `dir` (see the module docs).
pub fn export(web: &Web, ca: &SimCa, dir: &Path) -> Result<Exported, ExportError> {
    if web.params.http_port == 0 || web.params.https_port == 0 {
        return Err(ExportError::PortsNotFixed);
    }
    let sites = dir.join("sites");
    mkdir(&sites)?;
    let graph = WebGraph::new(web);
    let crawl = bfs(&graph, &graph.seeds());

    let mut out = Exported::default();
    let mut answers: BTreeMap<u32, FixedAnswers> = BTreeMap::new();
    let mut page = Vec::new();
    let mut scratch = Scratch::default();
    let targets = export_targets(web, &crawl);
    for url in &targets {
        let Some((scheme, host, target)) = split_url(url) else {
            return Err(ExportError::Unexportable {
                what: "URL",
                text: url.clone(),
            });
        };
        let Some(h) = web.host_by_name(host) else {
            continue; // a name that does not resolve: nothing to serve
        };
        let req = Request {
            method: "GET",
            target,
            host: Some(host),
            scheme,
            addr_index: web.hosts[h as usize].addr_index,
        };
        let (_, reply) = respond::route(web, &req);
        if scheme == Scheme::Http && web.hosts[h as usize].https {
            continue; // the http side of an https host answers 301 as a whole
        }
        let body: &[u8] = match &reply {
            Reply::Page { host, page: p } => {
                page.clear();
                render_page(web, *host, *p, &mut page, &mut scratch);
                &page
            }
            Reply::Fixed {
                status: 200, body, ..
            } => body.as_bytes(),
            Reply::Fixed { status: 404, .. } => continue,
            Reply::Fixed {
                status, location, ..
            } => {
                let path = decoded_path(target)?;
                answers
                    .entry(h)
                    .or_default()
                    .insert(path, (*status, location.clone()));
                out.locations += 1;
                continue;
            }
            Reply::Misbehave(_) => continue,
        };
        let file = sites
            .join(&web.hosts[h as usize].name)
            .join(file_of(target)?);
        if let Some(parent) = file.parent() {
            mkdir(parent)?;
        }
        fs::write(&file, body).map_err(|source| ExportError::Io {
            path: file.clone(),
            source,
        })?;
        answers.entry(h).or_default();
        out.files += 1;
        out.bytes += body.len() as u64;
    }

    let tls = write_tls(web, ca, dir, &answers)?;

    let mut conf = String::from(
        "# Written by `polycrawl websim --export-static`: include inside an nginx http block.\n",
    );
    for (&h, a) in &answers {
        server_blocks(&mut conf, web, h, a, &sites, &tls)?;
        out.hosts += 1;
    }
    let path = dir.join("sites.conf");
    fs::write(&path, conf).map_err(|source| ExportError::Io { path, source })?;
    Ok(out)
}

/// Every URL to export: the manifest's fetches, and each reachable host's two
/// robots.txt paths.
fn export_targets(web: &Web, crawl: &Crawl<Target>) -> Vec<String> {
    let mut targets: Vec<String> = crawl.fetched.iter().map(|f| web.url(&f.node)).collect();
    for h in 0..web.generated() {
        if web.reachable(h) {
            targets.push(web.host_url(h, "/robots.txt"));
            targets.push(web.host_url(h, REAL_ROBOTS_PATH));
        }
    }
    targets
}

/// Writes `<dir>/tls/cert.pem` and `key.pem`, one certificate for every https
/// host of `answers`, when there is one; returns the folder.
fn write_tls(
    web: &Web,
    ca: &SimCa,
    dir: &Path,
    answers: &BTreeMap<u32, FixedAnswers>,
) -> Result<PathBuf, ExportError> {
    let https: Vec<String> = answers
        .keys()
        .map(|&h| &web.hosts[h as usize])
        .filter(|h| h.https)
        .map(|h| h.name.clone())
        .collect();
    let tls = dir.join("tls");
    if !https.is_empty() {
        mkdir(&tls)?;
        let (cert, key) = ca.static_leaf(https.iter().cloned())?;
        for (name, text) in [("cert.pem", cert), ("key.pem", key)] {
            let path = tls.join(name);
            fs::write(&path, text).map_err(|source| ExportError::Io { path, source })?;
        }
    }
    Ok(tls)
}

/// The server blocks of host `h`.
fn server_blocks(
    conf: &mut String,
    web: &Web,
    h: u32,
    fixed: &FixedAnswers,
    sites: &Path,
    tls: &Path,
) -> Result<(), ExportError> {
    let host = &web.hosts[h as usize];
    let (http, https) = (web.params.http_port, web.params.https_port);
    let root = sites.join(&host.name).display().to_string();
    let root = conf_text("root", &root)?;
    let _ = writeln!(conf, "server {{");
    if host.https {
        let _ = writeln!(conf, "    listen {}:{https} ssl;", host.addr);
        let _ = writeln!(conf, "    ssl_certificate {}/cert.pem;", tls.display());
        let _ = writeln!(conf, "    ssl_certificate_key {}/key.pem;", tls.display());
    } else {
        let _ = writeln!(conf, "    listen {}:{http};", host.addr);
    }
    let _ = writeln!(conf, "    server_name {};", host.name);
    let _ = writeln!(conf, "    root {root};");
    if host.gzip {
        let _ = writeln!(
            conf,
            "    gzip on; gzip_comp_level 1; gzip_types text/plain;"
        );
    }
    let _ = writeln!(
        conf,
        "    location / {{ try_files /__q$uri/$args $uri $uri/ =404; }}"
    );
    for (path, (status, location)) in fixed {
        let path = conf_text("path", path)?;
        match location {
            Some(to) => {
                let to = conf_text("location", to)?;
                let _ = writeln!(conf, "    location = {path} {{ return {status} {to}; }}");
            }
            None => {
                let _ = writeln!(conf, "    location = {path} {{ return {status}; }}");
            }
        }
    }
    let _ = writeln!(conf, "}}");
    if host.https {
        let mut to = format!("https://{}", host.name);
        super::model::write_port(&mut to, "https", https);
        let _ = writeln!(
            conf,
            "server {{\n    listen {}:{http};\n    server_name {};\n    return 301 {to}$request_uri;\n}}",
            host.addr, host.name
        );
    }
    Ok(())
}

/// `(scheme, host name, path and query)` of a URL websim wrote.
fn split_url(url: &str) -> Option<(Scheme, &str, &str)> {
    let (scheme, rest) = if let Some(r) = url.strip_prefix("http://") {
        (Scheme::Http, r)
    } else {
        (Scheme::Https, url.strip_prefix("https://")?)
    };
    let slash = rest.find('/')?;
    let authority = &rest[..slash];
    let host = authority.split(':').next()?;
    Some((scheme, host, &rest[slash..]))
}

/// The file under the host's root that answers `target`.
fn file_of(target: &str) -> Result<PathBuf, ExportError> {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let decoded = decoded_path(path)?;
    let rel = decoded.trim_start_matches('/');
    let mut file = PathBuf::new();
    match query {
        Some(q) => {
            if q.contains('/') || q.is_empty() {
                return Err(ExportError::Unexportable {
                    what: "query",
                    text: q.to_owned(),
                });
            }
            file.push("__q");
            file.push(rel);
            file.push(q);
        }
        None if rel.is_empty() || rel.ends_with('/') => {
            file.push(rel);
            file.push("index.html");
        }
        None => file.push(rel),
    }
    Ok(file)
}

/// `path` percent-decoded, as nginx matches it; refuses what a file name or a
/// configuration line cannot hold.
fn decoded_path(path: &str) -> Result<String, ExportError> {
    let path = path.split('?').next().unwrap_or(path);
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    let text = String::from_utf8(out).map_err(|_| ExportError::Unexportable {
        what: "path",
        text: path.to_owned(),
    })?;
    if text.contains("..") || text.contains('\0') {
        return Err(ExportError::Unexportable { what: "path", text });
    }
    Ok(text)
}

/// `text` if it can stand unquoted in an nginx configuration line.
fn conf_text<'a>(what: &'static str, text: &'a str) -> Result<&'a str, ExportError> {
    let bad =
        |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '$' | '\\' | ';' | '{' | '}' | '#');
    if text.is_empty() || text.contains(bad) {
        return Err(ExportError::Unexportable {
            what,
            text: text.to_owned(),
        });
    }
    Ok(text)
}

fn mkdir(path: &Path) -> Result<(), ExportError> {
    fs::create_dir_all(path).map_err(|source| ExportError::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Params;

    #[test]
    fn every_page_of_the_manifest_is_a_file_with_websims_bytes() {
        let web = Web::new(Params {
            plain: true,
            ..Params::new(3, 30, 600)
        });
        let dir = tempfile::tempdir().unwrap();
        let ca = SimCa::generate().unwrap();
        let done = export(&web, &ca, dir.path()).unwrap();
        let graph = WebGraph::new(&web);
        let crawl = bfs(&graph, &graph.seeds());
        let mut scratch = Scratch::default();
        let mut pages = 0;
        for row in crawl.fetched.iter().filter(|r| r.status == 200) {
            let url = web.url(&row.node);
            let (_, host, target) = split_url(&url).unwrap();
            let h = web.host_by_name(host).unwrap();
            let file = dir
                .path()
                .join("sites")
                .join(host)
                .join(file_of(target).unwrap());
            let got = fs::read(&file).unwrap_or_else(|e| panic!("{url}: {e}"));
            let req = Request {
                method: "GET",
                target,
                host: Some(host),
                scheme: if url.starts_with("https") {
                    Scheme::Https
                } else {
                    Scheme::Http
                },
                addr_index: web.hosts[h as usize].addr_index,
            };
            let want = match respond::route(&web, &req).1 {
                Reply::Page { host, page } => {
                    let mut out = Vec::new();
                    render_page(&web, host, page, &mut out, &mut scratch);
                    out
                }
                Reply::Fixed { body, .. } => body.as_bytes().to_vec(),
                Reply::Misbehave(_) => unreachable!(),
            };
            assert_eq!(got, want, "{url}");
            pages += 1;
        }
        assert!(pages > 400, "{pages}");
        assert!(done.files >= pages && done.locations > 0, "{done:?}");
        let conf = fs::read_to_string(dir.path().join("sites.conf")).unwrap();
        assert_eq!(
            conf.matches("server {").count(),
            done.hosts + web.hosts.iter().filter(|h| h.https).count()
        );
        assert!(conf.contains("return 301 https://"));
        assert!(dir.path().join("tls/cert.pem").exists());
    }

    #[test]
    fn files_of_targets() {
        assert_eq!(file_of("/").unwrap(), PathBuf::from("index.html"));
        assert_eq!(
            file_of("/d3/p42.html").unwrap(),
            PathBuf::from("d3/p42.html")
        );
        assert_eq!(
            file_of("/docs/42/").unwrap(),
            PathBuf::from("docs/42/index.html")
        );
        assert_eq!(
            file_of("/item?id=42&cat=3").unwrap(),
            PathBuf::from("__q/item/id=42&cat=3")
        );
        assert_eq!(
            file_of("/caf%C3%A9/p42.html").unwrap(),
            PathBuf::from("café/p42.html")
        );
        assert!(file_of("/a/%2E%2E/etc").is_err());
        assert!(file_of("/x?a/b").is_err());
    }

    #[test]
    fn urls_split() {
        assert_eq!(
            split_url("https://www.a.test:8443/p?q=1"),
            Some((Scheme::Https, "www.a.test", "/p?q=1"))
        );
        assert_eq!(
            split_url("http://a.test/"),
            Some((Scheme::Http, "a.test", "/"))
        );
        assert_eq!(split_url("ftp://a.test/"), None);
    }

    #[test]
    fn config_text_refuses_what_nginx_would_read_otherwise() {
        assert!(conf_text("path", "/a/b.html").is_ok());
        for bad in ["/a b", "/a;b", "/$uri", "/a{", "", "/a#b"] {
            assert!(conf_text("path", bad).is_err(), "{bad:?}");
        }
    }
}
