//! What storage costs per page: ingest (read and check the batch, SHA-1 per payload,
//! digest lookups, move, index, commit) and `get`, on batches of realistic 13 KB HTML
//! pages written by spool's `WarcWriter` at level 1, 10 % of them duplicates.
//!
//! `cargo bench -p storage --bench ingest` (with
//! `CARGO_TARGET_DIR=$HOME/.cache/polycrawl/target`). Uses a temp folder on the
//! machine's disk; fsyncs are real.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use spool::warc::{Capture, RecordId, WarcDate, WarcHeaders, WarcWriter, payload_digest};
use storage::Repository;

const BATCHES: u64 = 12;
const PAGES_PER_BATCH: u64 = 500;

fn main() {
    println!(
        "machine: {}; three rounds, each in a fresh repository",
        test_support::proc::machine()
    );
    for _ in 0..3 {
        round();
    }
}

fn round() {
    let dir = tempfile::tempdir().expect("temp dir");
    let spool = dir.path().join("spool");
    fs::create_dir_all(&spool).unwrap();
    let mut repo = Repository::open(dir.path().join("repo")).unwrap();

    let mut ingest_time = Duration::ZERO;
    let (mut pages, mut bytes, mut revisits) = (0, 0, 0);
    for b in 0..BATCHES {
        let path = spool.join(format!("50-bench-{:020}.warc.gz", b + 1));
        write_batch(&path, b);
        let start = Instant::now();
        let s = repo.ingest(&path).unwrap();
        ingest_time += start.elapsed();
        pages += s.responses + s.revisits;
        revisits += s.revisits;
        bytes += s.bytes;
    }
    let per_page = ingest_time.as_secs_f64() * 1e3 / pages as f64;
    println!(
        "ingest: {BATCHES} batches, {pages} pages ({revisits} duplicates), {:.1} MB of .warc.gz",
        bytes as f64 / 1e6
    );
    println!(
        "ingest: {per_page:.4} ms/page, {:.0} pages/s on one core (fsyncs included)",
        1e3 / per_page
    );

    let mut urls: Vec<String> = (0..BATCHES * PAGES_PER_BATCH)
        .step_by(7)
        .map(|i| url(i / PAGES_PER_BATCH, i % PAGES_PER_BATCH))
        .collect();
    urls.truncate(1000);
    let start = Instant::now();
    for u in &urls {
        assert!(repo.get(u).unwrap().is_some(), "{u}");
    }
    let get = start.elapsed().as_secs_f64() * 1e3 / urls.len() as f64;
    let files = fs::read_dir(dir.path().join("repo/index")).unwrap().count();
    println!("get: {get:.4} ms/page over {files} index files (warm page cache)");
}

fn url(batch: u64, i: u64) -> String {
    format!("http://site{}.example/b{batch}/p{i}", i % 13)
}

/// A batch whose every tenth page repeats a page of the batch before, fsynced as
/// the downloader's publisher leaves it.
fn write_batch(path: &Path, b: u64) {
    let mut w = WarcWriter::new(Vec::new());
    for i in 0..PAGES_PER_BATCH {
        let seed = if i % 10 == 9 && b > 0 {
            (b - 1) * PAGES_PER_BATCH + i - 1
        } else {
            b * PAGES_PER_BATCH + i
        };
        let body = common::html_page(seed, 13 * 1024);
        let u = url(b, i);
        let capture = Capture {
            target_uri: &u,
            date: WarcDate::from_unix(1_795_341_600 + b * 1000 + i, 0).unwrap(),
            ip: None,
            warcinfo_id: None,
        };
        let h = WarcHeaders::response(RecordId::random(), &capture, payload_digest(&body)).unwrap();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        w.write_record_parts(&h, &[head.as_bytes(), &body]).unwrap();
        let req = WarcHeaders::request(RecordId::random(), &capture).unwrap();
        w.write_record(&req, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
    }
    fs::write(path, w.finish().unwrap()).unwrap();
    fs::File::open(path).and_then(|f| f.sync_all()).unwrap();
}
