//! `write_wacz` end to end: a repository of several rotated WARC files (with
//! revisits) packaged as WACZ, read back with the `zip` crate (every entry stored,
//! every listed hash right, every index line pointing at its record in archive/),
//! and checked with py-wacz's `wacz validate`.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod support;

use std::collections::HashMap;
use std::fs;
use std::io::Read;

use sha2::{Digest, Sha256};
use storage::wacz::package::DataPackage;
use storage::{CdxjLine, Repository, RepositoryOptions, RepositoryReader, Rotation, write_wacz};
use support::{Page, batch_name, body, write_batch};

fn sha256(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[test]
fn a_repository_packs_into_a_valid_wacz() {
    support::require_wacz();
    let t = tempfile::tempdir().unwrap();
    let spool = t.path().join("spool");
    fs::create_dir_all(&spool).unwrap();
    let repo_dir = t.path().join("repo");
    let options = RepositoryOptions {
        rotation: Rotation {
            max_bytes: 30_000,
            max_age_secs: 0,
        },
        warc_prefix: "bfs".into(),
        ..RepositoryOptions::default()
    };
    let mut repo = Repository::open_with(&repo_dir, options).unwrap();
    let mut pages = Vec::new();
    for seq in 1..=8u64 {
        let mut batch: Vec<Page> = (0..3)
            .map(|i| {
                Page::html(
                    &format!("http://h{i}.example/p{seq}"),
                    seq * 10 + i,
                    &body(seq * 10 + i, 3000),
                )
            })
            .collect();
        // A duplicate of the first page, and a redirect: a revisit and a non-page.
        batch.push(Page::html(
            &format!("http://copy.example/{seq}"),
            seq * 10 + 5,
            &body(10, 3000),
        ));
        batch.push(Page::with_status(
            &format!("http://r.example/{seq}"),
            seq * 10 + 6,
            "301 Moved Permanently",
            "text/html",
            b"",
        ));
        repo.ingest(&write_batch(&spool, &batch_name(seq), &batch))
            .unwrap();
        pages.extend(batch);
    }
    drop(repo);
    let reader = RepositoryReader::open(&repo_dir).unwrap();
    let out = t.path().join("crawl.wacz");
    let s = write_wacz(&reader, &out, "a test crawl").unwrap();
    assert!(s.warcs >= 3, "several WARC files: {s:?}");
    assert_eq!(s.index_lines, pages.len() as u64);
    assert_eq!(s.pages, 8 * 3, "the 200 HTML responses (revisits aside)");
    assert_eq!(s.bytes, fs::metadata(&out).unwrap().len());
    assert!(!t.path().join("crawl.wacz.partial").exists());
    assert!(!t.path().join("crawl.wacz.pages.partial").exists());

    // Every entry stored, listed with its right digest and size.
    let mut zip = zip::ZipArchive::new(fs::File::open(&out).unwrap()).unwrap();
    let mut entries: HashMap<String, Vec<u8>> = HashMap::new();
    for i in 0..zip.len() {
        let mut e = zip.by_index(i).unwrap();
        assert_eq!(
            e.compression(),
            zip::CompressionMethod::Stored,
            "{}",
            e.name()
        );
        let mut bytes = Vec::new();
        e.read_to_end(&mut bytes).unwrap();
        entries.insert(e.name().to_owned(), bytes);
    }
    let package = DataPackage::decode(&entries["datapackage.json"]).unwrap();
    assert_eq!(package.wacz_version, "1.1.1");
    assert_eq!(package.title, "a test crawl");
    assert_eq!(package.resources.len(), entries.len() - 2);
    for r in &package.resources {
        let bytes = &entries[&r.path];
        assert_eq!((r.bytes, &r.hash), (bytes.len() as u64, &sha256(bytes)));
    }
    let digest: serde_json::Value =
        serde_json::from_slice(&entries["datapackage-digest.json"]).unwrap();
    assert_eq!(digest["hash"], sha256(&entries["datapackage.json"]));

    // The index is sorted and every line finds its record in archive/.
    let index = String::from_utf8(entries["indexes/index.cdx"].clone()).unwrap();
    let lines: Vec<&str> = index.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted);
    for text in &lines {
        let line = CdxjLine::parse(text).unwrap();
        let warc = &entries[&format!("archive/{}", line.filename)];
        let at = usize::try_from(line.offset).unwrap();
        let len = usize::try_from(line.length).unwrap();
        let rec = spool::warc::WarcReader::new(&warc[at..at + len])
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(rec.headers.target_uri(), Some(line.url.as_str()));
    }
    let page_lines = String::from_utf8(entries["pages/pages.jsonl"].clone()).unwrap();
    assert_eq!(page_lines.lines().count() as u64, 1 + s.pages);

    support::wacz_validate(&out);

    // A damaged package is caught by the validator (the check can fail).
    let mut bytes = fs::read(&out).unwrap();
    let needle = b"http://h1.example/p3";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    bytes[at + 7] = b'X';
    let bad = t.path().join("bad.wacz");
    fs::write(&bad, &bytes).unwrap();
    let result = std::panic::catch_unwind(|| support::wacz_validate(&bad));
    assert!(result.is_err(), "a changed byte must fail the validation");
}
