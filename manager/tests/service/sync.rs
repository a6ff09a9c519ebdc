//! `SyncProgress`: the answer counts every request file published before the sync,
//! without waiting for a folder scan or a progress round (both set to a minute
//! here), and carries the sync's sequence number.

use spool::AppId;
use spool::protocol::Message;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_answer_counts_files_published_before_it() {
    let h = Harness::start(|c| {
        c.progress_interval_ms = 60_000;
        c.frontier.request_scan_interval_ms = 60_000;
    })
    .await;
    let mut app = App::join(&h, "bfs").await;
    // The answer to Subscribe: nothing yet.
    let first = app.progress_until(|_| true).await;
    assert!(first.is_idle(), "{first:?}");
    assert_eq!(first.synced, 0);

    // A file appears; no resolver is connected, so its URLs stay queued.
    h.publish_requests("bfs", &urls(&["a.test"], 2));
    let bfs = AppId::new("bfs").unwrap();
    app.client
        .send(Message::SyncProgress {
            app: bfs.clone(),
            seq: 7,
        })
        .await;
    let answer = app.progress_until(|p| p.synced >= 7).await;
    assert_eq!(answer.synced, 7);
    assert!(
        !answer.is_idle(),
        "the file published before the sync is counted: {answer:?}"
    );
    assert_eq!(answer.request_files_pending + answer.queued_urls.min(1), 1);

    // A sync for an application this connection did not subscribe to is ignored,
    // and the next answer still carries the newest sync of ours.
    app.client
        .send(Message::SyncProgress {
            app: AppId::new("other").unwrap(),
            seq: 99,
        })
        .await;
    app.client
        .send(Message::SyncProgress { app: bfs, seq: 8 })
        .await;
    let answer = app.progress_until(|p| p.synced >= 8).await;
    assert_eq!(answer.synced, 8);
}
