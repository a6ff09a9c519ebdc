//! Per-IP spacing of request writes and the wire stamps.

use std::time::Duration;

use downloader::JobLimits;

use crate::support::{Server, fetcher, response};

#[tokio::test]
async fn stamps_are_ordered_and_requests_to_one_address_are_spaced_on_the_wire() {
    let server = Server::respond(response("", b"spaced")).await;
    let f = fetcher();
    let spacing = Duration::from_millis(150);
    let job = |path: &str| {
        let mut job = server.job(path);
        job.limits = JobLimits {
            min_ip_spacing: Some(spacing),
            ..JobLimits::default()
        };
        job
    };
    // Three fetches at once: one opens a connection, the others queue at the gate
    // (and may open connections of their own); whatever each waits for, the
    // requests leave a spacing apart, measured from the end of the previous write.
    let (ja, jb, jc) = (job("/a"), job("/b"), job("/c"));
    let (a, b, c) = tokio::join!(f.fetch(&ja), f.fetch(&jb), f.fetch(&jc));
    let mut wires: Vec<_> = [a, b, c].map(|r| r.unwrap().wire).to_vec();
    for w in &wires {
        assert!(
            w.sent_us > 0 && w.sent_us <= w.written_us && w.written_us <= w.received_us,
            "{w:?}"
        );
    }
    wires.sort_by_key(|w| w.sent_us);
    for pair in wires.windows(2) {
        let gap = pair[1].sent_us - pair[0].written_us;
        assert!(gap >= spacing.as_micros() as u64, "{gap} us: {wires:?}");
    }
    // No spacing: no wait.
    let started = std::time::Instant::now();
    f.fetch(&server.job("/d")).await.unwrap();
    f.fetch(&server.job("/e")).await.unwrap();
    assert!(started.elapsed() < spacing, "{:?}", started.elapsed());
    assert_eq!(server.request_count(), 5);
}
