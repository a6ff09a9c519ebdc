//! The index of a stored crawl: [`DiskWeb::load`] reads every WARC file of a
//! repository once and keeps, per stored URL, where its `response` record is.
//!
//! Which record serves a URL: the last `response` record for it in file-name order
//! (repository file names start with their prefix and start time, so that is the
//! order they were written in) and offset order, except that a stored 304 (a
//! recrawl's answer to a conditional request) never replaces the capture before
//! it: a request without validators must get the content. `revisit` records are not served:
//! storage appends each batch whole, duplicate responses included, and writes its
//! revisit records beside them, so every identical-payload revisit has its full
//! response in the batch; a URL whose newest capture is a server-not-modified
//! revisit (a recrawl's 304) is served from its earlier response, the same content.
//! Other record types (warcinfo, request) are skipped. URLs other than `http` and
//! `https` ones, or with a host that is not a DNS name, are skipped and counted.
//!
//! Hosts are every host of a stored URL, in name order; host `k` gets websim's
//! address `k` ([`crate::hosts::address`]: 127.1.0.1 upwards), one host per
//! address. The listeners are every (scheme, port) the stored URLs name, each
//! on every address.
//!
//! Cost: start-up reads (and inflates) the whole repository once, O(repository
//! bytes). Memory: O(stored URLs): per URL its text and a [`Stored`] (about 100
//! bytes with the map's own share; measured: 34 MB resident for 34,782 stored
//! URLs in 157 MB of WARC, ready in 0.55 s); bodies stay on disk and are read when served
//! ([`DiskWeb::read_block`]: one `pread` of the record's gzip member and its
//! inflate, O(record)). This module never writes to the repository.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{self, BufReader};
use std::net::Ipv4Addr;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use spool::warc::{DEPTH_FIELD, Record, RecordType, WarcError, WarcReader};

use crate::hosts::address;
use crate::respond::Scheme;

/// Why a repository cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A folder or file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A WARC file does not parse.
    #[error("reading the WARC file {path}: {source}")]
    Warc {
        /// The file.
        path: PathBuf,
        /// The parse error, with its offset.
        source: WarcError,
    },
    /// No `response` record with an http or https URL.
    #[error("{repo} holds no stored response (looked in its warc/ folder)")]
    Empty {
        /// The repository.
        repo: PathBuf,
    },
}

/// Where one stored URL's response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Index of the WARC file in [`DiskWeb::files`].
    pub file: u32,
    /// Offset of the record's gzip member (or plain record) in it.
    pub offset: u64,
    /// Its length.
    pub length: u64,
    /// The HTTP status stored (0: no readable status line).
    pub status: u16,
    /// `Polycrawl-Depth` of the record, if it has one.
    pub depth: Option<u32>,
    /// The host's index in [`DiskWeb::hosts`].
    pub host: u32,
}

/// One host of the stored crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskHost {
    /// Its name, lower case.
    pub name: String,
    /// The address websim serves it on.
    pub addr: Ipv4Addr,
    /// Whether any stored URL of it is an https one.
    pub https: bool,
}

/// A stored crawl, ready to be served.
#[derive(Debug)]
pub struct DiskWeb {
    /// The repository.
    pub repo: PathBuf,
    /// Its WARC files, in the order they were read.
    pub files: Vec<PathBuf>,
    /// Hosts in name order; host `k` is on address `k`.
    pub hosts: Vec<DiskHost>,
    /// Every stored URL (as stored: `WARC-Target-URI`) and its response.
    pub urls: HashMap<String, Stored>,
    /// Every (scheme, port) a stored URL names.
    pub listeners: Vec<(Scheme, u16)>,
    /// Response records skipped: URLs neither http nor https, or without a DNS host
    /// name; stored 304s.
    pub skipped: u64,
    by_name: HashMap<String, u32>,
}

/// A URL split the way the disk web needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlParts<'a> {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name, as in the URL.
    pub host: &'a str,
    /// Port, explicit or the scheme's default.
    pub port: u16,
}

/// Splits `url` (as the crawler stored it: canonical, default ports omitted).
/// `None` for other schemes and for IP-literal or empty hosts.
pub fn split_url(url: &str) -> Option<UrlParts<'_>> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (authority, default_port(scheme)),
    };
    let dns_name = !host.is_empty()
        && host.bytes().any(|b| b.is_ascii_alphabetic())
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    dns_name.then_some(UrlParts { scheme, host, port })
}

/// 80 or 443.
pub fn default_port(scheme: Scheme) -> u16 {
    match scheme {
        Scheme::Http => 80,
        Scheme::Https => 443,
    }
}

/// The status code of an HTTP response block (`HTTP/1.1 200 OK\r\n...`), 0 if none.
pub fn block_status(block: &[u8]) -> u16 {
    let line = block.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    match (words.next(), words.next()) {
        (Some(v), Some(code)) if v.starts_with(b"HTTP/") => std::str::from_utf8(code)
            .ok()
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

/// What a repository's response records hold, before the hosts are numbered.
struct Scanned {
    /// Every stored URL (its host not numbered yet).
    urls: HashMap<String, Stored>,
    /// The stored hosts' names, lower case.
    names: BTreeSet<String>,
    /// The (scheme, port) pairs the URLs carry.
    listeners: BTreeSet<(u8, u16)>,
    /// Response records not served (no URL, an unreadable one, a 304).
    skipped: u64,
}

impl Scanned {
    /// Reads every response record of `files` (in order: a URL stored twice is
    /// served as its last record).
    fn read(files: &[PathBuf]) -> Result<Scanned, LoadError> {
        let mut scanned = Scanned {
            urls: HashMap::new(),
            names: BTreeSet::new(),
            listeners: BTreeSet::new(),
            skipped: 0,
        };
        let mut rec = Record::default();
        for (k, path) in files.iter().enumerate() {
            let file = File::open(path).map_err(|source| LoadError::Io {
                path: path.clone(),
                source,
            })?;
            let mut reader = WarcReader::new(BufReader::with_capacity(256 * 1024, file));
            while reader
                .read_into(&mut rec)
                .map_err(|source| LoadError::Warc {
                    path: path.clone(),
                    source,
                })?
            {
                scanned.add(k as u32, &rec);
            }
        }
        Ok(scanned)
    }

    /// Adds record `rec` of file `file`, if it is a response to serve.
    fn add(&mut self, file: u32, rec: &Record) {
        if rec.headers.record_type() != Some(RecordType::Response) {
            return;
        }
        let Some(uri) = rec.headers.target_uri() else {
            self.skipped += 1;
            return;
        };
        let Some(parts) = split_url(uri) else {
            self.skipped += 1;
            return;
        };
        let status = block_status(&rec.block);
        if status == 304 {
            self.skipped += 1;
            return;
        }
        self.names.insert(parts.host.to_ascii_lowercase());
        self.listeners.insert((parts.scheme as u8, parts.port));
        let stored = Stored {
            file,
            offset: rec.location.offset,
            length: rec.location.length,
            status,
            depth: rec
                .headers
                .get(DEPTH_FIELD)
                .and_then(|d| d.trim().parse().ok()),
            host: 0,
        };
        self.urls.insert(uri.to_owned(), stored);
    }
}

impl DiskWeb {
    /// Reads the repository at `repo` (its `warc/` folder, any depth, `.warc.gz`
    /// and `.warc` files).
    pub fn load(repo: &Path) -> Result<DiskWeb, LoadError> {
        let mut files = Vec::new();
        collect(&repo.join("warc"), &mut files)?;
        files.sort();
        let Scanned {
            mut urls,
            names,
            listeners,
            skipped,
        } = Scanned::read(&files)?;
        if urls.is_empty() {
            return Err(LoadError::Empty {
                repo: repo.to_path_buf(),
            });
        }
        let mut hosts: Vec<DiskHost> = names
            .into_iter()
            .enumerate()
            .map(|(k, name)| DiskHost {
                name,
                addr: address(k as u32),
                https: false,
            })
            .collect();
        let by_name: HashMap<String, u32> = hosts
            .iter()
            .enumerate()
            .map(|(k, h)| (h.name.clone(), k as u32))
            .collect();
        for (url, stored) in &mut urls {
            if let Some(parts) = split_url(url) {
                let h = by_name[&parts.host.to_ascii_lowercase()];
                stored.host = h;
                hosts[h as usize].https |= parts.scheme == Scheme::Https;
            }
        }
        let listeners = listeners
            .into_iter()
            .map(|(s, p)| {
                let scheme = if s == Scheme::Https as u8 {
                    Scheme::Https
                } else {
                    Scheme::Http
                };
                (scheme, p)
            })
            .collect();
        Ok(DiskWeb {
            repo: repo.to_path_buf(),
            files,
            hosts,
            urls,
            listeners,
            skipped,
            by_name,
        })
    }

    /// The host called `name` (lower case, no port), if stored.
    pub fn host_by_name(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The URL a request for `target` to `host` on a (scheme, port) listener asks
    /// for, spelled as the crawler stores URLs (default ports omitted).
    pub fn request_url(scheme: Scheme, host: &str, port: u16, target: &str) -> String {
        let mut url = format!("{}://{host}", scheme.as_str());
        if port != default_port(scheme) {
            url.push(':');
            url.push_str(&port.to_string());
        }
        url.push_str(target);
        url
    }

    /// Reads the HTTP response (the record's block) stored for `url` at `at`: one
    /// `pread` and one inflate. Blocking: call it off the async threads.
    pub fn read_block(&self, url: &str, at: &Stored) -> io::Result<Vec<u8>> {
        let path = &self.files[at.file as usize];
        let file = File::open(path)?;
        let len = usize::try_from(at.length).map_err(io::Error::other)?;
        let mut member = vec![0u8; len];
        file.read_exact_at(&mut member, at.offset)?;
        let mut reader = WarcReader::new(&member[..]).with_start_offset(at.offset);
        let mut rec = Record::default();
        let found = reader.read_into(&mut rec).map_err(io::Error::other)?;
        if !found || rec.headers.target_uri() != Some(url) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: no record for {url} at offset {}",
                    path.display(),
                    at.offset
                ),
            ));
        }
        Ok(rec.block)
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let io_err = |source| LoadError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".warc.gz") || n.ends_with(".warc"))
        {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_as_stored() {
        let p = split_url("https://www.acme0.test:45349/d0/p7.html?x=1").unwrap();
        assert_eq!(
            (p.scheme, p.host, p.port),
            (Scheme::Https, "www.acme0.test", 45349)
        );
        let p = split_url("http://a.test/").unwrap();
        assert_eq!((p.scheme, p.port), (Scheme::Http, 80));
        assert_eq!(split_url("https://b.test").unwrap().port, 443);
        assert!(split_url("ftp://a.test/").is_none());
        assert!(split_url("http://127.0.0.1:80/").is_none());
        assert!(split_url("http://[::1]/").is_none());
        assert!(split_url("http://a.test:notaport/").is_none());
        assert_eq!(
            DiskWeb::request_url(Scheme::Https, "a.test", 443, "/x?y"),
            "https://a.test/x?y"
        );
        assert_eq!(
            DiskWeb::request_url(Scheme::Http, "a.test", 8080, "/"),
            "http://a.test:8080/"
        );
    }

    /// Writes one WARC file of response records (URL, HTTP response, depth).
    fn write_warc(path: &Path, records: &[(&str, &str, Option<u32>)]) {
        use spool::warc::{Capture, RecordId, WarcDate, WarcHeaders, WarcWriter, payload_digest};
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut w = WarcWriter::new(File::create(path).unwrap());
        for (url, response, depth) in records {
            let capture = Capture {
                target_uri: url,
                date: WarcDate::now(),
                ip: None,
                warcinfo_id: None,
            };
            let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            let mut h = WarcHeaders::response(
                RecordId::random(),
                &capture,
                payload_digest(body.as_bytes()),
            )
            .unwrap();
            if let Some(d) = depth {
                h.push(DEPTH_FIELD, &d.to_string()).unwrap();
            }
            w.write_record(&h, response.as_bytes()).unwrap();
        }
    }

    #[test]
    fn loads_the_newest_response_per_url_and_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let ok = |body: &str| {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        let (one, two) = (ok("one"), ok("two"));
        write_warc(
            &repo.join("warc/2026/app-20260101000000-000001.warc.gz"),
            &[
                ("http://a.test:8080/", &one, Some(0)),
                (
                    "https://b.test/x",
                    "HTTP/1.1 301 Moved\r\nLocation: /y\r\n\r\n",
                    Some(1),
                ),
                ("ftp://c.test/", &one, Some(1)),
            ],
        );
        write_warc(
            &repo.join("warc/2026/app-20260102000000-000002.warc.gz"),
            &[
                ("http://a.test:8080/", &two, Some(0)),
                (
                    "http://a.test:8080/",
                    "HTTP/1.1 304 Not Modified\r\n\r\n",
                    Some(0),
                ),
            ],
        );
        let web = DiskWeb::load(repo).unwrap();
        assert_eq!(web.files.len(), 2);
        assert_eq!(web.urls.len(), 2);
        assert_eq!(web.skipped, 2, "the ftp URL and the 304");
        let names: Vec<(&str, Ipv4Addr, bool)> = web
            .hosts
            .iter()
            .map(|h| (h.name.as_str(), h.addr, h.https))
            .collect();
        assert_eq!(
            names,
            [("a.test", address(0), false), ("b.test", address(1), true)]
        );
        assert_eq!(web.listeners, [(Scheme::Http, 8080), (Scheme::Https, 443)]);
        let a = web.urls["http://a.test:8080/"];
        assert_eq!((a.status, a.depth, a.file, a.host), (200, Some(0), 1, 0));
        assert_eq!(
            web.read_block("http://a.test:8080/", &a).unwrap(),
            two.as_bytes()
        );
        assert!(web.read_block("http://other.test/", &a).is_err());
        assert_eq!(web.urls["https://b.test/x"].status, 301);
        assert_eq!(web.host_by_name("b.test"), Some(1));
        assert_eq!(super::super::outfiles::seeds(&web), ["http://a.test:8080/"]);

        // Without depths, the seeds are every host's root.
        let bare = tempfile::tempdir().unwrap();
        write_warc(
            &bare.path().join("warc/x.warc.gz"),
            &[
                ("https://b.test/x", &one, None),
                ("http://a.test/p", &one, None),
            ],
        );
        let web = DiskWeb::load(bare.path()).unwrap();
        assert_eq!(
            super::super::outfiles::seeds(&web),
            ["http://a.test/", "https://b.test/"]
        );
        let empty = tempfile::tempdir().unwrap();
        std::fs::create_dir(empty.path().join("warc")).unwrap();
        assert!(matches!(
            DiskWeb::load(empty.path()),
            Err(LoadError::Empty { .. })
        ));
        assert!(matches!(
            DiskWeb::load(&empty.path().join("missing")),
            Err(LoadError::Io { .. })
        ));
    }

    #[test]
    fn status_lines() {
        assert_eq!(
            block_status(b"HTTP/1.1 301 Moved\r\nLocation: /\r\n\r\n"),
            301
        );
        assert_eq!(block_status(b"HTTP/1.0 404\r\n\r\n"), 404);
        assert_eq!(block_status(b"garbage"), 0);
    }
}
