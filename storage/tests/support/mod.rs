//! Shared test support: page batches written with spool's `WarcWriter` exactly as
//! the downloader writes them, a snapshot of a repository's files, and `warcio`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use spool::warc::{
    Capture, RecordId, WarcDate, WarcHeaders, WarcWriter, payload_digest, warc_fields_block,
};

/// One fetch to put in a batch.
#[derive(Debug, Clone)]
pub struct Page {
    pub url: String,
    pub date: WarcDate,
    pub head: Vec<u8>,
    pub body: Vec<u8>,
}

impl Page {
    /// A 200 text/html page fetched at `secs` after 2026-11-22T10:00:00Z.
    pub fn html(url: &str, secs: u64, body: &[u8]) -> Self {
        Self::with_status(url, secs, "200 OK", "text/html; charset=utf-8", body)
    }

    pub fn with_status(url: &str, secs: u64, status: &str, mime: &str, body: &[u8]) -> Self {
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {mime}\r\nContent-Length: {}\r\nX-Fetch: {secs}\r\n\r\n",
            body.len()
        );
        Self {
            url: url.to_owned(),
            date: WarcDate::from_unix(1_795_341_600 + secs, 0).unwrap(),
            head: head.into_bytes(),
            body: body.to_vec(),
        }
    }

    /// The response block: head and body.
    pub fn block(&self) -> Vec<u8> {
        [self.head.as_slice(), &self.body].concat()
    }
}

/// A spool-style batch name with sequence number `seq`.
pub fn batch_name(seq: u64) -> String {
    format!("50-dl-1-{:020}.warc.gz", 1_795_341_600_000_000 + seq)
}

/// Writes a batch (warcinfo, then response and request per page) to `dir/name`.
pub fn write_batch(dir: &Path, name: &str, pages: &[Page]) -> PathBuf {
    let mut w = WarcWriter::new(Vec::new());
    let info = RecordId::random();
    let date = pages.first().map_or(WarcDate::now(), |p| p.date);
    let block = warc_fields_block(&[
        ("software", "polycrawl-test"),
        ("format", "WARC File Format 1.1"),
    ])
    .unwrap();
    w.write_record(
        &WarcHeaders::warcinfo(info, date, Some(name)).unwrap(),
        &block,
    )
    .unwrap();
    for p in pages {
        let capture = Capture {
            target_uri: &p.url,
            date: p.date,
            ip: Some("127.0.0.2".parse().unwrap()),
            warcinfo_id: Some(info),
        };
        let id = RecordId::random();
        let h = WarcHeaders::response(id, &capture, payload_digest(&p.body)).unwrap();
        w.write_record_parts(&h, &[&p.head, &p.body]).unwrap();
        let mut req = WarcHeaders::request(RecordId::random(), &capture).unwrap();
        req.set_concurrent_to(id);
        let host = p.url.split('/').nth(2).unwrap_or("");
        let request =
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nUser-Agent: polycrawl-test\r\n\r\n");
        w.write_record(&req, request.as_bytes()).unwrap();
    }
    let path = dir.join(name);
    fs::write(&path, w.finish().unwrap()).unwrap();
    path
}

/// A body of `n` bytes, distinct per `seed`.
pub fn body(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b"<p>abcdefghij klmnop</p>\n"[(x % 25) as usize]
        })
        .collect()
}

/// Every file under `root` (relative path → bytes), skipping `skip` folders.
pub fn snapshot(root: &Path, skip: &[&str]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if skip.iter().any(|s| rel == *s) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Every `.warc.gz` under `root`.
pub fn warc_files(root: &Path) -> Vec<PathBuf> {
    snapshot(root, &[])
        .into_keys()
        .filter(|k| k.ends_with(".warc.gz"))
        .map(|k| root.join(k))
        .collect()
}

/// Every CDXJ line of the repository's index files.
pub fn index_lines(repo: &Path) -> Vec<String> {
    snapshot(&repo.join("index"), &[])
        .into_values()
        .flat_map(|b| {
            String::from_utf8(b)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Fails with the set-up hint when warcio is not installed.
pub fn require_warcio() {
    let ok = Command::new("python3")
        .args(["-c", "import warcio"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the Python package warcio is missing: run ops/setup.sh (it installs what the tests need)"
    );
}

/// Runs `warcio check -v` on `file`; panics with its output if it fails.
pub fn warcio_check(file: &Path) {
    let out = Command::new("python3")
        .args(["-m", "warcio.cli", "check", "-v"])
        .arg(file)
        .output()
        .expect("run python3 -m warcio.cli");
    assert!(
        out.status.success(),
        "warcio check {} failed:\n{}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `warcio index` of `file`: one JSON line per record (with offset and length).
pub fn warcio_index(file: &Path) -> String {
    let out = Command::new("python3")
        .args([
            "-m",
            "warcio.cli",
            "index",
            "-f",
            "warc-type,warc-target-uri,offset,length",
        ])
        .arg(file)
        .output()
        .expect("run python3 -m warcio.cli");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Fails with the set-up hint when py-wacz is not installed.
pub fn require_wacz() {
    let ok = Command::new("python3")
        .args(["-c", "import wacz"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the Python package wacz is missing: run ops/setup.sh (it installs what the tests need)"
    );
}

/// Runs py-wacz's `wacz validate -f FILE`; panics with its output if it fails.
pub fn wacz_validate(file: &Path) {
    let out = Command::new("python3")
        .args(["-m", "wacz", "validate", "-f"])
        .arg(file)
        .output()
        .expect("run python3 -m wacz");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("Validation succeeded"),
        "wacz validate {} failed:\n{}",
        file.display(),
        text.chars().take(4000).collect::<String>()
    );
}
