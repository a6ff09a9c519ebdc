//! Pages and robots.txt end to end: reports, `Committed`, the published WARC files
//! (checked by `warcio check` and field by field), failures, the address policy.

use std::collections::HashMap;

use spool::protocol::{FetchJob, FetchResult, INLINE_ROBOTS_MAX, JobId};
use spool::warc::{
    DEPTH_FIELD, FETCH_MS_FIELD, FETCH_START_FIELD, HOPS_FIELD, RecordType, payload_digest,
};
use spool::{OutcomeReason, Validators};

use crate::manager::{
    self, APP, TestManager, closed_port, config, page, published, records, robots, start, stored,
    warcio_check,
};
use crate::site::{self, CHUNKED_BODY, ROBOTS, Site, gzip, page_body};

fn validators() -> Validators {
    Validators {
        etag: Some("\"v1\"".into()),
        modified: Some(1_767_225_600),
    }
}

fn failed(result: &FetchResult) -> OutcomeReason {
    match result {
        FetchResult::Failed { reason, .. } => *reason,
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_stored_reported_and_committed() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    assert_eq!(m.hello.id.as_str(), "dl-test");

    let dead = closed_port().await;
    let paths = ["/a", "/b", "/gzip", "/redirect"];
    // Job n carries depth n and n - 1 redirect hops, written on its response.
    let mut jobs: Vec<_> = (1..)
        .zip(paths)
        .map(|(id, path)| FetchJob {
            depth: Some(id as u32),
            hops: Some(id as u32 - 1),
            // Job 2 is a recrawl's conditional request.
            validators: if id == 2 {
                validators()
            } else {
                Validators::default()
            },
            after: None,
            ..page(id, &site.url(path), site.addr)
        })
        .collect();
    jobs.push(robots(10, &site.url("/robots.txt"), site.addr, 500 * 1024));
    jobs.push(page(
        11,
        &format!("http://dead.test:{}/", dead.port()),
        dead,
    ));
    jobs.push(page(12, "ftp://site.test/file", site.addr));
    m.fetch(jobs).await;
    m.reports_for(&[1, 2, 3, 4, 10, 11, 12]).await;
    m.committed(&[1, 2, 3, 4]).await;
    let seen = &m.seen;

    // Failures are reported with their class.
    assert_eq!(failed(seen.result(11)), OutcomeReason::ConnectFailure);
    assert_eq!(failed(seen.result(12)), OutcomeReason::InvalidUrl);

    // Pages: status, bytes, location, one batch named in the report.
    let mut expected = HashMap::new();
    for (id, path) in (1..).zip(paths) {
        let p = stored(seen.result(id));
        let wire = site::answer(path).await;
        assert_eq!(p.wire_bytes, wire.len() as u64, "{path}");
        assert!(!p.truncated);
        assert!(p.timing.total_ms < 5000);
        expected.insert(site.url(path), (id, wire));
    }
    assert_eq!(stored(seen.result(1)).status, 200);
    assert_eq!(
        stored(seen.result(1)).body_bytes,
        page_body("/a").len() as u64
    );
    assert_eq!(
        stored(seen.result(2)).body_bytes,
        page_body("/b").len() as u64
    );
    assert_eq!(
        stored(seen.result(3)).body_bytes,
        gzip(&page_body("/gzip")).len() as u64,
        "the payload as received: the downloader does not decode what it archives"
    );
    let redirect = stored(seen.result(4));
    assert_eq!(
        (redirect.status, redirect.location.as_deref()),
        (301, Some("/target"))
    );
    assert_eq!(stored(seen.result(1)).location, None);

    // Committed: after the file exists, naming exactly the page jobs.
    assert_eq!(seen.committed.len(), 1, "{:?}", seen.committed);
    let (file, _, existed) = &seen.committed[0];
    assert!(existed, "Committed arrived before {file} was published");
    assert_eq!(
        seen.committed_jobs(),
        [JobId(1), JobId(2), JobId(3), JobId(4)]
    );
    for id in 1..=4 {
        assert_eq!(&stored(seen.result(id)).file, file);
    }

    // The batch: warcio accepts it; warcinfo, then response + request pairs.
    let files = published(&dl.pages());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with(file), "{files:?}");
    assert!(file.starts_with("50-dl-test-") && file.ends_with(".warc.gz"));
    warcio_check(&files[0]);
    let recs = records(&files[0]);
    assert_eq!(recs.len(), 1 + 2 * paths.len());
    assert_eq!(recs[0].headers.record_type(), Some(RecordType::Warcinfo));
    let info_id = recs[0].headers.record_id().unwrap().to_owned();
    for pair in recs[1..].chunks(2) {
        let (response, request) = (&pair[0].headers, &pair[1].headers);
        assert_eq!(response.record_type(), Some(RecordType::Response));
        assert_eq!(request.record_type(), Some(RecordType::Request));
        let uri = response.target_uri().unwrap();
        let (id, wire) = expected
            .remove(uri)
            .unwrap_or_else(|| panic!("unexpected {uri}"));
        assert_eq!(request.target_uri(), Some(uri));
        assert_eq!(response.get("WARC-IP-Address"), Some("127.0.0.1"));
        assert_eq!(request.get("WARC-IP-Address"), Some("127.0.0.1"));
        assert_eq!(response.get("WARC-Warcinfo-ID"), Some(info_id.as_str()));
        assert_eq!(request.get("WARC-Concurrent-To"), response.record_id());
        let depth = id.to_string();
        let hops = (id - 1).to_string();
        assert_eq!(response.get(DEPTH_FIELD), Some(depth.as_str()), "job {id}");
        let hops = (id > 1).then_some(hops.as_str());
        assert_eq!(response.get(HOPS_FIELD), hops, "job {id}: absent when 0");
        assert_eq!(request.get(DEPTH_FIELD), None);
        // When the fetch ran (the crawl log's fetch-time column): its start, within
        // the record's WARC-Date second, and a duration.
        let start: u64 = response
            .get(FETCH_START_FIELD)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("job {id}: no {FETCH_START_FIELD}"));
        let date = response.date().expect("WARC-Date").unix_seconds();
        assert_eq!(
            start / 1000,
            date,
            "job {id}: fetch start in its WARC-Date second"
        );
        assert!(
            response
                .get(FETCH_MS_FIELD)
                .is_some_and(|v| v.parse::<u64>().is_ok()),
            "job {id}: {FETCH_MS_FIELD}"
        );
        assert_eq!(request.get(FETCH_START_FIELD), None);
        assert_eq!(pair[0].block, wire, "job {id}: the response as received");
        let head_end = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let payload = &wire[head_end..];
        assert_eq!(
            response.payload_digest(),
            Some(payload_digest(payload)),
            "job {id}"
        );
        assert!(pair[1].block.starts_with(b"GET "), "job {id}");
        // The request record holds the conditional headers the job carried.
        let request_text = String::from_utf8_lossy(&pair[1].block);
        let conditional =
            "If-None-Match: \"v1\"\r\nIf-Modified-Since: Thu, 01 Jan 2026 00:00:00 GMT\r\n";
        assert_eq!(
            request_text.contains(conditional),
            id == 2,
            "job {id}: {request_text}"
        );
        assert_eq!(request_text.contains("If-"), id == 2, "job {id}");
        assert_eq!(response.truncated(), None);
        // A body that came compressed is stored, not deflated again: its gzip
        // member holds the record's bytes as they are. The others are deflated
        // (the test pages compress well).
        let member = pair[0].location.length as usize;
        if uri.ends_with("/gzip") {
            assert!(member > wire.len(), "job {id}: stored, {member} bytes");
        } else if wire.len() > 1000 {
            assert!(member < wire.len(), "job {id}: deflated, {member} bytes");
        }
    }
    assert!(expected.is_empty());

    // Robots: a small robots.txt travels in its report, as received; no file.
    let robots = stored(&seen.reports[&JobId(10)].result);
    assert_eq!(robots.file, "");
    let response = robots.response.as_deref().unwrap();
    assert!(response.starts_with(b"HTTP/1.1 200"), "{response:?}");
    assert!(response.ends_with(ROBOTS));
    assert!(published(&dl.spool.path().join("robots")).is_empty());

    // Nothing left behind.
    assert!(published(&dl.pages().join(".tmp")).is_empty());
    assert!(dl.spool.path().join("pages").join(APP).is_dir());
    dl.shutdown.cancel();
    dl.join().await.unwrap();
}

/// A chunked response's `WARC-Payload-Digest` is over the entity as stored in the
/// block (chunks kept), as `spool::warc::payload_digest` defines it: storage
/// refuses a batch whose digest differs and `warcio check` must pass on the
/// repository (DESIGN.md section 8). A digest over the de-chunked body (the other
/// reading of WARC 1.1, IIPC warc-specifications#22) got every batch holding a
/// chunked page quarantined by storage in `polycrawl demo`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_payload_digest_is_over_the_stored_entity() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    m.fetch(vec![page(1, &site.url("/chunked"), site.addr)])
        .await;
    m.committed(&[1]).await;
    let p = stored(m.seen.result(1));
    assert_eq!(p.body_bytes, CHUNKED_BODY.len() as u64);
    let file = manager::find_file(dl.spool.path(), &p.file).unwrap();
    let recs = records(&file);
    let wire = site::answer("/chunked").await;
    assert_eq!(recs[1].block, wire, "chunks kept");
    let head_end = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(
        recs[1].headers.payload_digest(),
        Some(payload_digest(&wire[head_end..]))
    );
    dl.shutdown.cancel();
    dl.join().await.unwrap();
}

/// Where an HTTP response's head ends.
fn head_end(response: &[u8]) -> usize {
    response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_body_is_capped_at_the_job_limit() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    m.fetch(vec![robots(1, &site.url("/bytes/5000"), site.addr, 1000)])
        .await;
    m.reports_for(&[1]).await;
    let p = stored(m.seen.result(1));
    assert!(p.truncated);
    let response = p.response.as_deref().unwrap();
    assert_eq!(response.len() - head_end(response), 1000);
    dl.shutdown.cancel();
    dl.join().await.unwrap();
}

/// A robots.txt response over `INLINE_ROBOTS_MAX` is published as a robots file
/// of its own (response and request records) before the report that names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_robots_txt_is_published_as_a_robots_file() {
    let cap = INLINE_ROBOTS_MAX as u64 + 1000;
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    let url = site.url(&format!("/bytes/{}", cap + 5000));
    m.fetch(vec![robots(1, &url, site.addr, cap)]).await;
    m.reports_for(&[1]).await;
    let r = &m.seen.reports[&JobId(1)];
    assert!(
        r.file_existed,
        "robots report before its file was published"
    );
    let p = stored(&r.result);
    assert!(p.truncated && p.response.is_none());
    assert!(p.file.starts_with("00-dl-test-"), "{}", p.file);
    let file = dl.spool.path().join("robots").join(&p.file);
    assert_eq!(published(&dl.spool.path().join("robots")), [file.as_path()]);
    warcio_check(&file);
    let recs = records(&file);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].headers.record_type(), Some(RecordType::Response));
    assert_eq!(recs[0].headers.truncated(), Some("length"));
    assert_eq!(recs[0].block.len() - head_end(&recs[0].block), cap as usize);
    assert_eq!(
        recs[1].headers.get("WARC-Concurrent-To"),
        recs[0].headers.record_id()
    );
    dl.shutdown.cancel();
    dl.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_is_forbidden_without_allow_private() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let strict = downloader::DownloaderConfig {
        allow_private: false,
        ..config()
    };
    let mut dl = start(strict, manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    m.fetch(vec![
        page(1, &site.url("/a"), site.addr),
        robots(2, &site.url("/robots.txt"), site.addr, 1000),
    ])
    .await;
    m.reports_for(&[1, 2]).await;
    assert_eq!(failed(m.seen.result(1)), OutcomeReason::ForbiddenAddress);
    assert_eq!(failed(m.seen.result(2)), OutcomeReason::ForbiddenAddress);
    site.barrier().await;
    assert_eq!(
        site.accepted.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "only the test's own connection"
    );
    dl.shutdown.cancel();
    dl.join().await.unwrap();
    assert!(published(&dl.pages()).is_empty());
}
