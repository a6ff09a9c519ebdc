//! The repository end to end: batches written with spool's `WarcWriter`, ingested,
//! read back, deduplicated, refused when corrupt, retried after crashes, and checked
//! with `warcio`.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod support;

use std::fs;
use std::path::Path;

use storage::{
    CrashPoint, Digests, Repository, RepositoryOptions, RepositoryReader, StorageError,
    check_batch, print_page,
};
use support::{Page, batch_name, body, index_lines, snapshot, warc_files, write_batch};

fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let spool = t.path().join("spool");
    fs::create_dir_all(&spool).unwrap();
    let repo = t.path().join("repo");
    (t, spool, repo)
}

fn assert_page(repo: &impl AsRef<RepositoryReader>, page: &Page) {
    let got = repo
        .as_ref()
        .get(&page.url)
        .unwrap()
        .unwrap_or_else(|| panic!("{} not found", page.url));
    assert_eq!(got.url, page.url);
    assert_eq!(got.date, page.date, "{}", page.url);
    assert_eq!(
        String::from_utf8_lossy(&got.head),
        String::from_utf8_lossy(&page.head),
        "{}",
        page.url
    );
    assert!(got.body == page.body, "{}: body differs", page.url);
}

#[test]
fn ingest_appends_the_batch_and_get_returns_every_page_byte_identical() {
    let (_t, spool, repo_dir) = dirs();
    let mut pages = vec![
        Page::html("http://www.example.com/", 0, &body(1, 13_000)),
        Page::html("http://example.com/a?b=2&a=1", 1, &body(2, 500)),
        Page::with_status(
            "https://example.org/img.png",
            2,
            "200 OK",
            "image/png",
            &[0, 1, 2, 255, 13, 10, 13, 10, 0],
        ),
        Page::with_status(
            "http://example.com/missing",
            3,
            "404 Not Found",
            "text/html",
            b"<h1>no</h1>",
        ),
        Page::with_status(
            "http://example.com/moved",
            4,
            "301 Moved Permanently",
            "text/html",
            b"",
        ),
    ];
    pages[4].head =
        b"HTTP/1.1 301 Moved Permanently\r\nLocation: /a\r\nContent-Length: 0\r\n\r\n".to_vec();
    let name = batch_name(1);
    let path = write_batch(&spool, &name, &pages);
    let original_bytes = fs::read(&path).unwrap();

    let mut repo = Repository::open(&repo_dir).unwrap();
    let s = repo.ingest(&path).unwrap();
    assert!(!path.exists(), "the batch left the spool");
    let file_name = s.stored_as.file_name().unwrap().to_str().unwrap();
    assert!(
        file_name.starts_with("polycrawl-") && file_name.ends_with("-000001.warc.gz"),
        "{file_name}"
    );
    assert_eq!(s.offset, 0);
    assert_eq!(
        fs::read(&s.stored_as).unwrap(),
        original_bytes,
        "appended unchanged"
    );
    assert_eq!(
        (
            s.records,
            s.responses,
            s.revisits,
            s.index_lines,
            s.already_stored
        ),
        (11, 5, 0, 5, false)
    );

    for p in &pages {
        assert_page(&repo, p);
        let mut out = Vec::new();
        assert!(print_page(&repo, &p.url, &mut out).unwrap());
        assert!(out == p.block(), "print_page prints head and body");
    }
    let png = repo.get("https://example.org/img.png").unwrap().unwrap();
    assert_eq!(
        (png.status(), png.line.mime.as_str()),
        (Some(200), "image/png")
    );
    let moved = repo.get("http://example.com/moved").unwrap().unwrap();
    assert_eq!((moved.status(), moved.line.mime.as_str()), (Some(301), "-"));
    assert_eq!(repo.get("http://example.com/never").unwrap(), None);
    let mut out = Vec::new();
    assert!(!print_page(&repo, "http://example.com/never", &mut out).unwrap());
    assert!(out.is_empty());

    // SURT spellings reach the same page; the index file is sorted.
    for alias in [
        "https://EXAMPLE.com/a?a=1&b=2",
        "http://www.example.com/a?b=2&a=1#x",
    ] {
        assert_eq!(
            repo.get(alias).unwrap().unwrap().url,
            pages[1].url,
            "{alias}"
        );
    }
    let lines = index_lines(&repo_dir);
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    assert!(
        lines[0].starts_with("com,example)/ 20261122100000 {\"url\": \"http://www.example.com/\""),
        "{}",
        lines[0]
    );

    // A reader that takes no lock sees the same, while the writer is open.
    let reader = RepositoryReader::open(&repo_dir).unwrap();
    assert_page(&reader, &pages[0]);
    // A second writer is refused by the catalog's lock.
    assert!(matches!(
        Repository::open(&repo_dir),
        Err(StorageError::Db(_))
    ));
}

#[test]
fn duplicate_payloads_become_revisits_and_get_follows_them() {
    let (_t, spool, repo_dir) = dirs();
    let shared = body(7, 13_000);
    let first = Page::html("http://a.example/page", 0, &shared);
    let a = vec![
        first,
        Page::html("http://a.example/other", 1, &body(8, 900)),
    ];
    let b = vec![
        Page::html("http://b.example/copy", 100, &shared),
        Page::html("http://a.example/page", 101, &shared),
        Page::html("http://b.example/new", 102, &body(9, 700)),
        Page::html("http://b.example/new-copy", 103, &body(9, 700)),
        // Empty bodies are never deduplicated.
        Page::with_status("http://b.example/r1", 104, "302 Found", "text/html", b""),
        Page::with_status("http://b.example/r2", 105, "302 Found", "text/html", b""),
    ];
    let mut repo = Repository::open(&repo_dir).unwrap();
    let sa = repo
        .ingest(&write_batch(&spool, &batch_name(1), &a))
        .unwrap();
    assert_eq!((sa.responses, sa.revisits), (2, 0));
    let sb = repo
        .ingest(&write_batch(&spool, &batch_name(2), &b))
        .unwrap();
    assert_eq!((sb.responses, sb.revisits, sb.index_lines), (3, 3, 6));
    assert_eq!(sb.stored_as, sa.stored_as, "one WARC file for both batches");
    assert_eq!(
        sb.offset, sa.bytes,
        "the second batch right after the first"
    );
    let warc = fs::read(&sb.stored_as).unwrap();
    let revisits_start = usize::try_from(sb.offset + sb.bytes).unwrap();
    assert!(
        revisits_start < warc.len(),
        "revisit records after the batch"
    );

    // The index points duplicates at revisit records after the batch.
    let copy = repo.captures("http://b.example/copy").unwrap();
    assert_eq!(copy.len(), 1);
    assert!(copy[0].is_revisit(), "{copy:?}");
    assert_eq!(copy[0].status, "200");
    assert!(sb.stored_as.ends_with(&copy[0].filename));
    assert!(copy[0].offset >= sb.offset + sb.bytes, "{copy:?}");
    let page = repo.captures("http://a.example/page").unwrap();
    assert_eq!(page.len(), 2);
    assert!(!page[0].is_revisit() && page[1].is_revisit());
    let lines = index_lines(&repo_dir);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("\"warc/revisit\""))
            .count(),
        3
    );

    // get() returns each page with its own head and the original's body.
    for p in a.iter().chain(&b) {
        if p.url != "http://a.example/page" {
            assert_page(&repo, p);
        }
    }
    let latest = repo.get("http://a.example/page").unwrap().unwrap();
    assert_eq!(latest.head, b[1].head, "the latest capture is the revisit");
    assert!(latest.body == shared);
    let original = latest.original.unwrap();
    assert_eq!(
        (original.url.as_str(), original.timestamp.as_str()),
        ("http://a.example/page", "20261122100000")
    );
    let new_copy = repo.get("http://b.example/new-copy").unwrap().unwrap();
    assert_eq!(
        new_copy.original.unwrap().url,
        "http://b.example/new",
        "duplicate within one batch"
    );

    // The revisit records say what they refer to.
    let records: Vec<_> = spool::warc::WarcReader::new(&warc[revisits_start..])
        .map(Result::unwrap)
        .collect();
    assert_eq!(records.len(), 4, "warcinfo and three revisits");
    let r = &records[1].headers;
    assert_eq!(r.get("WARC-Type"), Some("revisit"));
    assert_eq!(
        r.get("WARC-Profile"),
        Some(spool::warc::IDENTICAL_PAYLOAD_PROFILE)
    );
    assert_eq!(
        r.get("WARC-Refers-To-Target-URI"),
        Some("http://a.example/page")
    );
    assert_eq!(r.get("WARC-Refers-To-Date"), Some("2026-11-22T10:00:00Z"));
    assert_eq!(r.target_uri(), Some("http://b.example/copy"));
    assert!(r.get("WARC-Refers-To").is_some() && r.get("WARC-Concurrent-To").is_some());
    assert_eq!(records[1].block, b[0].head);
}

#[test]
fn a_checked_batch_is_read_once_and_stored_as_ingest_stores_it() {
    let (_t, spool, repo_dir) = dirs();
    let shared = body(3, 4_000);
    let pages = vec![
        Page::html("http://a.example/", 0, &shared),
        Page::html("http://a.example/copy", 1, &shared),
        Page::with_status(
            "http://a.example/gone",
            2,
            "404 Not Found",
            "text/html",
            b"no",
        ),
    ];
    let path = write_batch(&spool, &batch_name(1), &pages);
    let mut visited = Vec::new();
    let checked = check_batch(&path, Digests::Verify, |rec| {
        if rec.headers.record_type() == Some(spool::warc::RecordType::Response) {
            let uri = rec.headers.target_uri().unwrap();
            visited.push((uri.to_owned(), rec.block.len()));
        }
    })
    .unwrap();
    assert_eq!(
        checked.records(),
        7,
        "warcinfo, three responses and their requests"
    );
    let urls: Vec<&str> = visited.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://a.example/",
            "http://a.example/copy",
            "http://a.example/gone"
        ]
    );
    assert!(visited[0].1 > 4_000, "the visitor sees the whole block");

    let mut repo = Repository::open(&repo_dir).unwrap();
    let s = repo.ingest_checked(checked).unwrap();
    assert!(!path.exists(), "stored and removed from the spool");
    assert_eq!((s.responses, s.revisits, s.index_lines), (2, 1, 3));
    for p in &pages {
        assert_page(&repo, p);
    }
    // The index, line by line: one line per stored response or revisit.
    let mut lines = Vec::new();
    repo.reader()
        .for_each_index_line(|l| lines.push((l.is_revisit(), l.url, l.status)))
        .unwrap();
    lines.sort();
    assert_eq!(
        lines,
        [
            (false, "http://a.example/".to_owned(), "200".to_owned()),
            (false, "http://a.example/gone".to_owned(), "404".to_owned()),
            (true, "http://a.example/copy".to_owned(), "200".to_owned()),
        ]
    );
    // A checked batch replaced by a damaged file before the ingest is read again,
    // and refused.
    let path2 = write_batch(&spool, &batch_name(2), &pages[..1]);
    let checked = check_batch(&path2, Digests::Verify, |_| {}).unwrap();
    let mut bytes = fs::read(&path2).unwrap();
    bytes.truncate(bytes.len() - 9);
    fs::remove_file(&path2).unwrap();
    fs::write(&path2, &bytes).unwrap();
    let err = repo.ingest_checked(checked).unwrap_err();
    assert!(err.is_batch_fault(), "{err}");
    assert!(path2.exists(), "a refused batch stays where it was");
}

#[test]
fn a_corrupt_batch_is_refused_and_nothing_changes() {
    let (_t, spool, repo_dir) = dirs();
    let mut repo = Repository::open(&repo_dir).unwrap();
    repo.ingest(&write_batch(
        &spool,
        &batch_name(1),
        &[Page::html("http://x.example/", 0, &body(1, 4000))],
    ))
    .unwrap();
    let before = snapshot(&repo_dir, &["catalog"]);

    let pages = [
        Page::html("http://y.example/1", 10, &body(2, 4000)),
        Page::html("http://x.example/", 11, &body(1, 4000)),
    ];
    let good = fs::read(write_batch(&spool, "good.warc.gz", &pages)).unwrap();
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() - 30].to_vec()),
        ("flipped", {
            let mut v = good.clone();
            let i = v.len() / 2;
            v[i] ^= 0x55;
            v
        }),
        ("garbage-tail", [good.as_slice(), b"not warc"].concat()),
        ("empty", Vec::new()),
    ];
    // Valid gzip and WARC, but a payload digest that lies.
    let honest = Page::html("http://y.example/2", 12, &body(3, 100));
    cases.push(("lying-digest", {
        let mut changed = honest.body.clone();
        changed[0] ^= 1;
        let mut w = spool::warc::WarcWriter::new(Vec::new());
        let capture = spool::warc::Capture {
            target_uri: &honest.url,
            date: honest.date,
            ip: None,
            warcinfo_id: None,
        };
        let id = spool::warc::RecordId::random();
        let digest = spool::warc::payload_digest(&honest.body);
        let h = spool::warc::WarcHeaders::response(id, &capture, digest).unwrap();
        w.write_record_parts(&h, &[&honest.head, &changed]).unwrap();
        w.finish().unwrap()
    }));

    for (i, (what, bytes)) in cases.into_iter().enumerate() {
        let path = spool.join(batch_name(10 + i as u64));
        fs::write(&path, &bytes).unwrap();
        if what == "lying-digest" {
            // Only a reader that trusts the writer's digests (the application, for
            // its own downloaders' batches) lets it through; the ingest verifies.
            assert!(check_batch(&path, Digests::Verify, |_| {}).is_err());
            assert!(check_batch(&path, Digests::Trust, |_| {}).is_ok());
        }
        let err = repo.ingest(&path).unwrap_err();
        assert!(err.is_batch_fault(), "{what}: {err}");
        match what {
            "empty" | "lying-digest" => assert!(
                matches!(err, StorageError::BadRecord { .. }),
                "{what}: {err}"
            ),
            _ => assert!(
                matches!(err, StorageError::CorruptBatch { .. }),
                "{what}: {err}"
            ),
        }
        assert_eq!(
            fs::read(&path).unwrap(),
            bytes,
            "{what}: the batch is left for quarantine"
        );
        assert_eq!(
            snapshot(&repo_dir, &["catalog"]),
            before,
            "{what}: the repository changed"
        );
        assert!(repo.pending().unwrap().is_empty(), "{what}");
    }
    // The catalog did not change either: the next batch gets the next number and the
    // digest index still knows only the first batch's payload.
    let s = repo
        .ingest(&write_batch(&spool, &batch_name(2), &pages))
        .unwrap();
    assert_eq!((s.seq, s.responses, s.revisits), (2, 1, 1));
}

/// Ingests a batch with a crash injected at `at`, then recovers the way a restarted
/// process does (or, with `reopen` false, retries in the same process, as after a
/// full disk), and checks that the repository ends as if nothing had happened.
fn crash_and_recover(at: CrashPoint, reopen: bool) {
    let (_t, spool, repo_dir) = dirs();
    let a = [Page::html("http://a.example/", 0, &body(1, 5000))];
    let b = [
        Page::html("http://b.example/dup", 10, &body(1, 5000)),
        Page::html("http://b.example/new", 11, &body(2, 5000)),
        Page::html("http://b.example/dup2", 12, &body(2, 5000)),
    ];
    let mut repo = Repository::open(&repo_dir).unwrap();
    let sa = repo
        .ingest(&write_batch(&spool, &batch_name(1), &a))
        .unwrap();
    let durable = fs::metadata(&sa.stored_as).unwrap().len();
    let path = write_batch(&spool, &batch_name(2), &b);
    repo.inject_crash(Some(at));
    let err = repo.ingest(&path).unwrap_err();
    assert!(!err.is_batch_fault());
    assert!(path.exists(), "{at:?}: the batch stays until the commit");
    let appended = fs::metadata(&sa.stored_as).unwrap().len();
    assert_eq!(
        appended > durable,
        at != CrashPoint::AfterPendingMark,
        "{at:?}"
    );
    if reopen {
        drop(repo);
        // The restarted process: the tail past the durable length is cut and the
        // index of the uncommitted ingest dropped; the caller retries the batch.
        repo = Repository::open(&repo_dir).unwrap();
        assert_eq!(
            fs::metadata(&sa.stored_as).unwrap().len(),
            durable,
            "{at:?}"
        );
        assert_eq!(index_lines(&repo_dir).len(), 1, "{at:?}");
    }
    assert_eq!(repo.pending().unwrap(), [batch_name(2)], "{at:?}");
    // A batch ingested meanwhile takes the place the torn append had.
    let c = [Page::html("http://c.example/", 20, &body(3, 5000))];
    let sc = repo
        .ingest(&write_batch(&spool, &batch_name(3), &c))
        .unwrap();
    assert_eq!(sc.offset, durable, "{at:?}");

    let s = repo.ingest(&path).unwrap();
    assert!(!s.already_stored, "{at:?}");
    assert!(!path.exists());
    assert_eq!(
        (s.seq, s.responses, s.revisits, s.index_lines),
        (2, 1, 2, 3),
        "{at:?}"
    );
    let again = repo.ingest(&path).unwrap();
    assert!(again.already_stored);
    assert!(repo.pending().unwrap().is_empty());

    let lines = index_lines(&repo_dir);
    assert_eq!(lines.len(), 5, "{at:?}: no line indexed twice: {lines:#?}");
    for p in a.iter().chain(&b).chain(&c) {
        assert_page(&repo, p);
    }
    assert!(snapshot(&repo_dir.join(".tmp"), &[]).is_empty(), "{at:?}");
    // Every record of the file reads back: nothing torn is left between them.
    let warc = fs::read(&sa.stored_as).unwrap();
    let records: Vec<_> = spool::warc::WarcReader::new(&warc[..])
        .map(Result::unwrap)
        .collect();
    let records = records.len();
    assert_eq!(
        records,
        3 + 3 + 7 + 3,
        "{at:?}: a, c, b and b's warcinfo and two revisits"
    );
    // A later batch still deduplicates against the recovered one.
    let d = [Page::html("http://d.example/", 30, &body(2, 5000))];
    let s = repo
        .ingest(&write_batch(&spool, &batch_name(4), &d))
        .unwrap();
    assert_eq!(s.revisits, 1);
    let got = repo.get("http://d.example/").unwrap().unwrap();
    assert_eq!(got.original.unwrap().url, "http://b.example/new");
}

#[test]
fn crash_after_pending_mark_then_retry() {
    crash_and_recover(CrashPoint::AfterPendingMark, true);
}

#[test]
fn crash_after_append_cuts_the_torn_tail_at_reopen() {
    crash_and_recover(CrashPoint::AfterAppend, true);
}

#[test]
fn failed_append_is_cut_by_the_retry_without_reopen() {
    crash_and_recover(CrashPoint::AfterAppend, false);
}

#[test]
fn crash_after_index_drops_the_uncommitted_index_at_reopen() {
    crash_and_recover(CrashPoint::AfterIndex, true);
}

#[test]
fn failed_commit_is_redone_by_the_retry_without_reopen() {
    crash_and_recover(CrashPoint::AfterIndex, false);
}

/// A half-written record (the append was cut mid-record by a crash) is cut at open,
/// exactly at the end of the last committed batch.
#[test]
fn a_half_appended_record_is_cut_at_open() {
    let (_t, spool, repo_dir) = dirs();
    let mut repo = Repository::open(&repo_dir).unwrap();
    let a = [Page::html("http://a.example/", 0, &body(1, 5000))];
    let sa = repo
        .ingest(&write_batch(&spool, &batch_name(1), &a))
        .unwrap();
    drop(repo);
    let good = fs::read(&sa.stored_as).unwrap();
    let next = fs::read(write_batch(&spool, &batch_name(2), &a)).unwrap();
    let torn = [good.as_slice(), &next[..next.len() / 2]].concat();
    fs::write(&sa.stored_as, &torn).unwrap();
    let repo = Repository::open(&repo_dir).unwrap();
    assert_eq!(fs::read(&sa.stored_as).unwrap(), good);
    assert_page(&repo, &a[0]);
    drop(repo);
    // A file shorter than what was committed is refused.
    fs::write(&sa.stored_as, &good[..good.len() - 1]).unwrap();
    assert!(matches!(
        Repository::open(&repo_dir),
        Err(StorageError::WarcTooShort { .. })
    ));
}

/// Batches share a file until it would pass `max_bytes`; then the next file starts.
#[test]
fn warc_files_rotate_at_the_configured_size() {
    let (_t, spool, repo_dir) = dirs();
    let options = RepositoryOptions {
        rotation: storage::Rotation {
            max_bytes: 40_000,
            max_age_secs: 0,
        },
        warc_prefix: "bfs-p0".into(),
        ..RepositoryOptions::default()
    };
    let mut repo = Repository::open_with(&repo_dir, options.clone()).unwrap();
    let mut all = Vec::new();
    let mut sizes = Vec::new();
    for seq in 1..=12u64 {
        let pages: Vec<Page> = (0..3)
            .map(|i| {
                Page::html(
                    &format!("http://h{i}.example/p{seq}"),
                    seq,
                    &body(seq * 10 + i, 4000),
                )
            })
            .collect();
        let s = repo
            .ingest(&write_batch(&spool, &batch_name(seq), &pages))
            .unwrap();
        sizes.push(s.bytes);
        all.extend(pages);
    }
    let files = warc_files(&repo_dir.join("warc"));
    let per_batch = sizes[0];
    assert!(
        sizes
            .iter()
            .all(|b| *b <= per_batch + 100 && *b + 100 >= per_batch)
    );
    let per_file = 40_000 / per_batch;
    assert!(
        per_file >= 2,
        "the test wants several batches a file: {per_batch}"
    );
    assert_eq!(files.len() as u64, 12u64.div_ceil(per_file), "{files:?}");
    for (i, f) in files.iter().enumerate() {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("bfs-p0-") && name.ends_with(&format!("-{:06}.warc.gz", i + 1)),
            "{name}"
        );
        let len = fs::metadata(f).unwrap().len();
        assert!(len <= 40_000, "{name}: {len}");
        if i + 1 < files.len() {
            assert!(len + per_batch + 100 > 40_000, "{name} closed early: {len}");
        }
    }
    for p in &all {
        assert_page(&repo, p);
    }
    // The open file stays open across a restart.
    drop(repo);
    let mut repo = Repository::open_with(&repo_dir, options).unwrap();
    let last = files.last().unwrap();
    let before = fs::metadata(last).unwrap().len();
    let s = repo
        .ingest(&write_batch(
            &spool,
            &batch_name(13),
            &[Page::html("http://z.example/", 0, b"z")],
        ))
        .unwrap();
    if before + s.bytes <= 40_000 {
        assert_eq!(&s.stored_as, last);
        assert_eq!(s.offset, before);
    }
    assert!(matches!(
        Repository::open_with(
            t_dir(&repo_dir),
            RepositoryOptions {
                warc_prefix: "no/slash".into(),
                ..RepositoryOptions::default()
            }
        ),
        Err(StorageError::BadWarcPrefix(_))
    ));
}

fn t_dir(repo: &Path) -> std::path::PathBuf {
    repo.with_file_name("other-repo")
}

#[test]
fn same_batch_twice_and_name_collisions() {
    let (_t, spool, repo_dir) = dirs();
    let pages = [Page::html("http://a.example/", 0, &body(1, 100))];
    let mut repo = Repository::open(&repo_dir).unwrap();
    let path = write_batch(&spool, &batch_name(1), &pages);
    let bytes = fs::read(&path).unwrap();
    let first = repo.ingest(&path).unwrap();
    let second = repo.ingest(&path).unwrap();
    assert!(second.already_stored);
    assert_eq!(second.stored_as, first.stored_as);
    assert_eq!(index_lines(&repo_dir).len(), 1);
    // A crash between the commit and the removal from the spool leaves the very
    // same bytes there: found equal to the stored range, removed, not stored twice.
    fs::write(&path, &bytes).unwrap();
    let third = repo.ingest(&path).unwrap();
    assert!(third.already_stored && !path.exists());
    assert_eq!(index_lines(&repo_dir).len(), 1);

    // A different file under a stored name is not silently dropped.
    let other = write_batch(&spool, &batch_name(1), &pages);
    assert!(matches!(
        repo.ingest(&other),
        Err(StorageError::NameCollision { .. })
    ));
    assert!(other.exists());
    // Missing files and odd names are typed errors.
    assert!(matches!(
        repo.ingest(&spool.join(batch_name(9))),
        Err(StorageError::BatchNotFound { .. })
    ));
    assert!(matches!(
        repo.ingest(Path::new("/tmp/x.txt")),
        Err(StorageError::BadBatchName(_))
    ));
}

#[test]
fn many_batches_merge_their_index_files() {
    let (_t, spool, repo_dir) = dirs();
    let options = RepositoryOptions {
        index_fanout: 3,
        ..RepositoryOptions::default()
    };
    let mut repo = Repository::open_with(&repo_dir, options).unwrap();
    let mut all = Vec::new();
    for seq in 1..=10u64 {
        let pages: Vec<Page> = (0..3)
            .map(|i| {
                Page::html(
                    &format!("http://h{i}.example/p{seq}"),
                    seq * 10 + i,
                    &body(seq * 100 + i, 300),
                )
            })
            .collect();
        repo.ingest(&write_batch(&spool, &batch_name(seq), &pages))
            .unwrap();
        all.extend(pages);
    }
    let files = fs::read_dir(repo_dir.join("index")).unwrap().count();
    assert_eq!(files, 2, "9 batches in one level-2 file, and the tenth");
    assert_eq!(index_lines(&repo_dir).len(), 30);
    for p in &all {
        assert_page(&repo, p);
    }
    assert_eq!(repo.compact_index().unwrap(), 1);
    let names: Vec<String> = fs::read_dir(repo_dir.join("index"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["000000000001-000000000010.cdxj"]);
    for p in &all {
        assert_page(&repo, p);
    }
}

#[test]
fn the_repository_passes_warcio_check() {
    support::require_warcio();
    let (_t, spool, repo_dir) = dirs();
    let shared = body(5, 13_000);
    let mut repo = Repository::open(&repo_dir).unwrap();
    repo.ingest(&write_batch(
        &spool,
        &batch_name(1),
        &[
            Page::html("http://a.example/", 0, &shared),
            Page::html("http://a.example/x", 1, &body(6, 2000)),
        ],
    ))
    .unwrap();
    repo.ingest(&write_batch(
        &spool,
        &batch_name(2),
        &[
            Page::html("http://b.example/", 10, &shared),
            Page::html("http://a.example/", 11, &shared),
        ],
    ))
    .unwrap();
    let files = warc_files(&repo_dir.join("warc"));
    assert_eq!(
        files.len(),
        1,
        "two batches and their revisits in one file: {files:?}"
    );
    for f in &files {
        support::warcio_check(f);
    }
    // warcio agrees with every (offset, length) the CDXJ index holds.
    for line in index_lines(&repo_dir) {
        let parsed = storage::CdxjLine::parse(&line).unwrap();
        let listing = support::warcio_index(&repo_dir.join("warc").join(&parsed.filename));
        let expect_offset = format!("\"offset\": \"{}\"", parsed.offset);
        let expect_length = format!("\"length\": \"{}\"", parsed.length);
        assert!(
            listing.lines().any(|l| l.contains(&expect_offset)
                && l.contains(&expect_length)
                && l.contains(&parsed.url)),
            "{line}\nnot in warcio's index:\n{listing}"
        );
    }
}

/// Issue 27: a 304 answer to a recrawl's conditional request becomes a
/// server-not-modified revisit of the URL's newest earlier capture; `get` returns
/// the earlier page; warcio accepts the file and indexes the revisit where the
/// CDXJ index says; a 304 for a URL never stored stays a plain 304 response.
#[test]
fn a_304_becomes_a_server_not_modified_revisit_of_the_earlier_capture() {
    support::require_warcio();
    let (_t, spool, repo_dir) = dirs();
    let content = body(11, 9_000);
    let mut first = Page::html("http://a.example/page", 0, &content);
    first.head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: \"v0\"\r\nContent-Length: {}\r\n\r\n",
        content.len()
    )
    .into_bytes();
    let mut repo = Repository::open(&repo_dir).unwrap();
    repo.ingest(&write_batch(&spool, &batch_name(1), &[first.clone()]))
        .unwrap();
    let not_modified = |url: &str, secs| {
        let mut p = Page::with_status(url, secs, "304 Not Modified", "text/html", b"");
        p.head = b"HTTP/1.1 304 Not Modified\r\nETag: \"v0\"\r\n\r\n".to_vec();
        p
    };
    let recrawl = [
        not_modified("http://a.example/page", 100),
        not_modified("http://a.example/never-stored", 101),
    ];
    let s = repo
        .ingest(&write_batch(&spool, &batch_name(2), &recrawl))
        .unwrap();
    assert_eq!(
        (s.responses, s.revisits, s.not_modified, s.index_lines),
        (1, 0, 1, 2)
    );

    // The index: the newest capture of the page is a revisit with the earlier digest.
    let caps = repo.captures("http://a.example/page").unwrap();
    assert_eq!(caps.len(), 2);
    assert!(caps[1].is_revisit() && !caps[0].is_revisit(), "{caps:?}");
    assert_eq!(caps[1].digest, caps[0].digest);
    assert_eq!(caps[1].timestamp, "20261122100140");
    let never = repo.captures("http://a.example/never-stored").unwrap();
    assert_eq!((never.len(), never[0].status.as_str()), (1, "304"));
    assert!(!never[0].is_revisit());

    // get(): the earlier page, head and body, at the recrawl's date.
    let got = repo.get("http://a.example/page").unwrap().unwrap();
    assert_eq!(got.body, content);
    assert_eq!(got.head, first.head);
    assert_eq!(got.date, recrawl[0].date);
    assert_eq!(got.original.unwrap().timestamp, "20261122100000");

    // The record: profile, refers-to fields, concurrent to the 304 response, empty.
    let warc = fs::read(&s.stored_as).unwrap();
    let start = usize::try_from(s.offset + s.bytes).unwrap();
    let records: Vec<_> = spool::warc::WarcReader::new(&warc[start..])
        .map(Result::unwrap)
        .collect();
    assert_eq!(records.len(), 2, "warcinfo and one revisit");
    let r = &records[1].headers;
    assert_eq!(
        r.get("WARC-Profile"),
        Some(spool::warc::SERVER_NOT_MODIFIED_PROFILE)
    );
    assert_eq!(
        r.get("WARC-Refers-To-Target-URI"),
        Some("http://a.example/page")
    );
    assert_eq!(r.get("WARC-Refers-To-Date"), Some("2026-11-22T10:00:00Z"));
    assert!(r.get("WARC-Refers-To").is_some() && r.get("WARC-Concurrent-To").is_some());
    assert_eq!(
        r.payload_digest().map(|d| d.to_string()),
        Some(caps[0].digest.clone())
    );
    assert!(records[1].block.is_empty());

    // A second recrawl's 304 refers to the same original, through the revisit.
    let s3 = repo
        .ingest(&write_batch(
            &spool,
            &batch_name(3),
            &[not_modified("http://a.example/page", 200)],
        ))
        .unwrap();
    assert_eq!(s3.not_modified, 1);
    let got = repo.get("http://a.example/page").unwrap().unwrap();
    assert_eq!(
        (got.body == content, got.date),
        (true, not_modified("x", 200).date)
    );

    for f in warc_files(&repo_dir.join("warc")) {
        support::warcio_check(&f);
    }
    for line in index_lines(&repo_dir) {
        let parsed = storage::CdxjLine::parse(&line).unwrap();
        let listing = support::warcio_index(&repo_dir.join("warc").join(&parsed.filename));
        let expect_offset = format!("\"offset\": \"{}\"", parsed.offset);
        assert!(
            listing
                .lines()
                .any(|l| l.contains(&expect_offset) && l.contains(&parsed.url)),
            "{line}\nnot in warcio's index:\n{listing}"
        );
    }
}

#[test]
fn withheld_responses_leave_their_body_out_and_their_url_in() {
    use spool::warc::{RecordType, WarcReader};
    use std::collections::BTreeMap;
    support::require_warcio();
    let (_t, spool, repo_dir) = dirs();
    let secret = b"<html>SECRET-BODY-kept-out</html>".to_vec();
    let pages = vec![
        Page::html("http://example.com/kept", 0, &body(7, 3_000)),
        Page::html("http://example.com/withheld", 1, &secret),
    ];
    let path = write_batch(&spool, &batch_name(1), &pages);
    let read = |path: &Path| -> Vec<spool::warc::Record> {
        WarcReader::new(std::io::BufReader::new(fs::File::open(path).unwrap()))
            .map(Result::unwrap)
            .collect()
    };
    let before = read(&path);
    let id_of = |url: &str| {
        before
            .iter()
            .find(|r| {
                r.headers.record_type() == Some(RecordType::Response)
                    && r.headers.target_uri() == Some(url)
            })
            .and_then(|r| r.headers.record_id())
            .unwrap()
            .to_owned()
    };
    let mut withheld = BTreeMap::new();
    assert_eq!(
        storage::withhold(&path, &withheld).unwrap(),
        0,
        "nothing named"
    );
    withheld.insert(id_of("http://example.com/withheld"), "noarchive".to_owned());
    // A request record of that id is never replaced, only the response.
    assert_eq!(storage::withhold(&path, &withheld).unwrap(), 1);
    let after = read(&path);
    assert_eq!(after.len(), before.len(), "one record for one");
    let meta: Vec<_> = after
        .iter()
        .filter(|r| r.headers.record_type() == Some(RecordType::Metadata))
        .collect();
    assert_eq!(meta.len(), 1);
    assert_eq!(
        meta[0].headers.target_uri(),
        Some("http://example.com/withheld")
    );
    let fields = String::from_utf8_lossy(&meta[0].block);
    assert!(fields.contains("robots: noarchive") && fields.contains("http-status: 200"));
    assert!(
        !after
            .iter()
            .any(|r| r.block.windows(11).any(|w| w == b"SECRET-BODY")),
        "the body is gone"
    );
    // The other records are the same bytes; again is a no-op.
    for (a, b) in before.iter().zip(&after) {
        if a.headers.record_type() != Some(RecordType::Response)
            || a.headers.target_uri() != Some("http://example.com/withheld")
        {
            assert_eq!(a.block, b.block);
            assert_eq!(a.headers, b.headers);
        }
    }
    assert_eq!(storage::withhold(&path, &withheld).unwrap(), 0);
    // Stored: the kept page reads back, the withheld one is not a capture.
    let mut repo = Repository::open(&repo_dir).unwrap();
    let s = repo.ingest(&path).unwrap();
    assert_eq!(s.responses, 1);
    assert_page(&repo, &pages[0]);
    assert!(
        repo.as_ref()
            .get("http://example.com/withheld")
            .unwrap()
            .is_none()
    );
    for file in warc_files(&repo_dir) {
        support::warcio_check(&file);
    }
}
