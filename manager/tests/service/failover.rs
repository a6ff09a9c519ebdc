//! Components that go away: a dropped downloader's unreported and uncommitted jobs
//! go to another downloader; a dropped resolver's batch is sent to another
//! resolver; a second connection with the same id replaces the first.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use spool::protocol::{ByeReason, FetchPurpose, Message};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_downloaders_unreported_and_uncommitted_jobs_go_to_another() {
    let h = Harness::start(|_| {}).await;
    let hosts = ["h0.test", "h1.test", "h2.test", "h3.test"];
    let all = urls(&hosts, 1);
    h.publish_requests("bfs", &all);
    let mut app = App::join(&h, "bfs").await;
    let _resolver = Resolver::join(&h, "res-1").await.serve();

    let mut dl1 = Downloader::join(&h, "dl-1", 8).await;
    let mut pages = Vec::new();
    while pages.len() < 4 {
        for job in dl1.batch().await {
            match job.purpose {
                FetchPurpose::Robots => dl1.robots_stored(&job, ROBOTS_404).await,
                FetchPurpose::Page => pages.push(job),
            }
        }
    }
    // Two pages reported but never committed, two never reported; then it dies.
    let file = "50-dl-1-00000000000000000001.warc.gz";
    dl1.report(pages[..2].iter().map(|j| stored(j, 200, file)).collect())
        .await;
    drop(dl1);

    let mut dl2 = Downloader::join(&h, "dl-2", 8).await;
    let mut again = BTreeSet::new();
    while again.len() < 4 {
        let jobs = dl2.batch().await;
        let file = "50-dl-2-00000000000000000001.warc.gz";
        for job in &jobs {
            assert_eq!(job.purpose, FetchPurpose::Page, "robots.txt is cached");
            assert!(again.insert(job.url.clone()), "{} sent twice", job.url);
        }
        dl2.report(jobs.iter().map(|j| stored(j, 200, file)).collect())
            .await;
        dl2.commit(file, jobs.iter().map(|j| j.job).collect()).await;
    }
    assert_eq!(again, all.iter().cloned().collect::<BTreeSet<_>>());
    let done = app.progress_until(|p| p.is_idle()).await;
    assert_eq!((done.pages_total, done.outcomes_total), (4, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_resolvers_batch_is_sent_to_another_resolver() {
    let h = Harness::start(|_| {}).await;
    let mut r1 = Resolver::join(&h, "res-1").await;
    h.publish_requests("bfs", &urls(&["x.test", "y.test", "z.test"], 2));
    let (_, mut first) = r1.batch().await;
    first.sort();
    assert_eq!(first, ["x.test", "y.test", "z.test"]);

    let mut r2 = Resolver::join(&h, "res-2").await;
    drop(r1);
    let (request, mut again) = r2.batch().await;
    again.sort();
    assert_eq!(again, first);
    r2.answer(request, &again).await;
    // Answered: the hosts go on to robots.txt.
    let log = Arc::new(Mutex::new(Vec::new()));
    let _dl = Downloader::join(&h, "dl-1", 8).await.serve(log.clone());
    let mut app = App::join(&h, "bfs").await;
    app.progress_until(|p| p.is_idle() && p.pages_total == 6)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_connection_with_the_same_id_replaces_the_first() {
    let h = Harness::start(|_| {}).await;
    h.publish_requests("bfs", &urls(&["r0.test", "r1.test"], 1));
    let _resolver = Resolver::join(&h, "res-1").await.serve();
    let mut old = Downloader::join(&h, "dl-1", 8).await;
    let mut first = Vec::new();
    while first.len() < 2 {
        first.extend(old.batch().await.into_iter().map(|j| j.url));
    }
    let mut new = Downloader::join(&h, "dl-1", 8).await;
    loop {
        match within("Bye", old.client.next()).await {
            Some(Message::Bye { reason, .. }) => {
                assert_eq!(reason, ByeReason::Replaced);
                break;
            }
            Some(_) => continue,
            None => panic!("closed without Bye"),
        }
    }
    // The robots jobs the old connection held go to the new one.
    let mut again = Vec::new();
    while again.len() < 2 {
        again.extend(new.batch().await.into_iter().map(|j| j.url));
    }
    first.sort();
    again.sort();
    assert_eq!(again, first);
}
