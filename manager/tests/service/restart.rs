//! kill -9 of the manager mid-crawl (its `run` future dropped, nothing flushed),
//! then a restart on the same state directory: every URL still ends as a page,
//! and each page is counted once.
//!
//! The pages reported `Stored` before the crash come in three kinds: committed
//! (`Committed` taken before the crash), claimed (their batch published by the
//! downloader after the crash and announced on its next connection, as a
//! downloader that outlives the manager does), and unclaimed (their downloader
//! died with the manager: nobody announces them). The first two are never fetched
//! again; the last are, once `restored_commit_wait_ms` has passed.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use spool::protocol::{AdminCommand, AdminReply, FetchPurpose, JobId};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_crawl_loses_no_url() {
    let mut h = Harness::start(|c| c.frontier.interval_ms = 100).await;
    let hosts: Vec<String> = (0..8).map(|i| format!("k{i}.test")).collect();
    let host_refs: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let all = urls(&host_refs, 3);
    h.publish_requests("bfs", &all);
    let resolver = Resolver::join(&h, "res-1").await.serve();

    // First run: some pages committed, some only reported, some in flight.
    let mut dl = Downloader::join(&h, "dl-1", 8).await;
    let mut stored_urls = BTreeSet::new();
    let mut in_flight = BTreeSet::new();
    // Batches published after the crash by a downloader that outlived it, and
    // URLs whose batch died with its downloader.
    let mut claimed: Vec<(String, Vec<JobId>, Vec<String>)> = Vec::new();
    let mut unclaimed = BTreeSet::new();
    let mut seq = 0;
    while stored_urls.len() < 12 || seq < 3 || in_flight.is_empty() {
        let jobs = dl.batch().await;
        let mut pages = Vec::new();
        for job in jobs {
            match job.purpose {
                FetchPurpose::Robots => dl.robots_stored(&job, ROBOTS_404).await,
                FetchPurpose::Page => pages.push(job),
            }
        }
        if pages.is_empty() {
            continue;
        }
        if stored_urls.len() >= 12 && seq >= 3 {
            // Never reported: in flight at the crash.
            in_flight.extend(pages.into_iter().map(|j| j.url));
            continue;
        }
        seq += 1;
        let file = format!("50-dl-1-{seq:020}.warc.gz");
        dl.report(pages.iter().map(|j| stored(j, 200, &file)).collect())
            .await;
        let urls: Vec<String> = pages.iter().map(|j| j.url.clone()).collect();
        match seq % 3 {
            0 => {
                dl.commit(&file, pages.iter().map(|j| j.job).collect())
                    .await;
            }
            1 => claimed.push((file, pages.iter().map(|j| j.job).collect(), urls.clone())),
            _ => unclaimed.extend(urls.iter().cloned()),
        }
        stored_urls.extend(urls);
    }
    // The crash comes after the manager took every report sent (pages counted).
    test_support::wait::until_async_with(
        "the reports to be taken",
        PATIENCE,
        std::time::Duration::from_millis(20),
        async || {
            let status = admin(&h, ADMIN_TOKEN, AdminCommand::Status).await;
            matches!(status, Ok(AdminReply::Status(s)) if s.pages_total == stored_urls.len() as u64)
        },
    )
    .await;
    h.crash_and_restart().await;
    drop(dl);
    resolver.abort();

    // Second run: the surviving downloader announces the batches it published
    // meanwhile on its new connection, then fetches everything at once.
    let _resolver = Resolver::join(&h, "res-1").await.serve();
    let log = Arc::new(Mutex::new(Vec::new()));
    let dl = Downloader::join(&h, "dl-1", 8).await;
    for (file, jobs, _) in &claimed {
        dl.commit(file, jobs.clone()).await;
    }
    let _dl = dl.serve(log.clone());
    let mut app = App::join(&h, "bfs").await;
    let done = app.progress_until(|p| p.is_idle()).await;
    let second: Vec<String> = log.lock().unwrap().clone();
    let mut every: BTreeSet<String> = stored_urls.clone();
    every.extend(second.iter().cloned());
    assert_eq!(every, all.iter().cloned().collect::<BTreeSet<_>>());
    let second: BTreeSet<String> = second.into_iter().collect();
    assert!(
        in_flight.is_subset(&second),
        "jobs in flight at the crash go out again"
    );
    assert!(
        unclaimed.is_subset(&second),
        "pages no downloader claimed after the restart are fetched again"
    );
    let durable: BTreeSet<&String> = stored_urls.difference(&unclaimed).collect();
    assert!(
        second.iter().all(|u| !durable.contains(u)),
        "a page committed, before the crash or claimed after it, is not fetched again"
    );
    assert!(!claimed.is_empty() && !unclaimed.is_empty());
    assert_eq!(done.pages_total, all.len() as u64, "each page counted once");
    assert_eq!(done.outcomes_total, 0);
}
