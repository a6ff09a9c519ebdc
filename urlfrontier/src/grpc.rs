//! The gRPC service: each call of `urlfrontier.proto` onto the [`Queues`](crate::queues::Queues), the
//! [`Intake`] and the manager reports.
//!
//! | call | what it does here |
//! |---|---|
//! | `PutURLs`, `PutDiscovered` | discovered: checked (absolute http(s), at most 8 KiB), to the seen set and the manager; known: its lease ends and the manager gets the job's report |
//! | `GetURLs` | leases the URLs the manager released whose queue is due (not blocked, delay passed, under its limit, node active) |
//! | `GetStats` | the crawl's figures, or one queue's |
//! | `ListQueues` | queues with work (or every one known), paginated |
//! | `BlockQueueUntil`, `SetDelay`, `SetCrawlLimit` | the queue's gate in [`Queues`](crate::queues::Queues); a reached limit ends the queue's URLs at the manager |
//! | `DeleteQueue` | the queue's URLs end at the manager, now and as released |
//! | `SetActive`, `GetActive` | the node's switch for `GetURLs` |
//! | `ListNodes`, `ListCrawls` | this node; the one crawl |
//!
//! One frontier serves one crawl: `crawlID` is accepted whatever it says and
//! answered with the frontier's application id. Not implemented (`UNIMPLEMENTED`):
//! `DeleteCrawl`, `SetLogLevel`, `GetURLStatus`, `ListURLs`, `CountURLs`,
//! `PurgeURLs` (the manager keeps queued URLs on disk, not for lookup). A known
//! URL's `refetchable_from_date` is not kept: a recrawl is polycrawl's recrawl mode.
//!
//! This module must never block the runtime (the queue lock is held for O(work)
//! of one call, never across an await) nor answer a call with made-up figures.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use spool::AppId;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::intake::Intake;
use crate::proto::url_frontier_server::UrlFrontier;
use crate::proto::{
    AckMessage, Active, BatchAck, BlockQueueParams, Boolean, CountUrlParams, CrawlLimitParams,
    DeleteCrawlMessage, DiscoveredBatch, Empty, GetParams, ListUrlParams, Local, LogLevelParams,
    Long, Pagination, PurgeUrlParams, QueueDelayParams, QueueList, QueueWithinCrawlParams, Stats,
    StringList, UrlInfo, UrlItem, UrlStatusRequest, ack_message, url_item,
};
use crate::queues::Ask;
use crate::role::Shared;
use crate::unix_ms;

/// Longest URL taken, in bytes (longer ones are `SKIPPED`).
pub const MAX_URL_BYTES: usize = 8192;
/// Queues listed when `Pagination.size` is 0.
const DEFAULT_PAGE: usize = 100;

type Boxed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The URL Frontier service. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Service {
    shared: Arc<Shared>,
    intake: Intake,
    app: AppId,
    lease_ms: u64,
}

impl Service {
    /// A service over the queues in `shared` and `intake`, for application `app`,
    /// leasing URLs for `lease_ms` when a client does not say.
    pub fn new(shared: Arc<Shared>, intake: Intake, app: AppId, lease_ms: u64) -> Self {
        Self {
            shared,
            intake,
            app,
            lease_ms,
        }
    }

    /// One `URLItem` of `PutURLs`: its ack status.
    fn put(&self, item: UrlItem) -> (String, ack_message::Status) {
        use ack_message::Status as S;
        let (info, known) = match item.item {
            Some(url_item::Item::Discovered(d)) => (d.info, false),
            Some(url_item::Item::Known(k)) => (k.info, true),
            None => (None, false),
        };
        let id = if item.id.is_empty() {
            info.as_ref().map(|i| i.url.clone()).unwrap_or_default()
        } else {
            item.id
        };
        let Some(info) = info else {
            return (id, S::Skipped);
        };
        let Some(url) = checked(&info.url) else {
            return (id, S::Skipped);
        };
        if known {
            self.complete(&url, &info);
            return (id, S::Ok);
        }
        if self.intake.offer(vec![url]) {
            (id, S::Ok)
        } else {
            (id, S::Fail)
        }
    }

    /// A fetcher is done with `url`: the manager gets its report.
    fn complete(&self, url: &str, info: &UrlInfo) {
        let status = status_of(info);
        let (done, over) = self.shared.with(|q| {
            let done = q.complete(url, status, unix_ms());
            (done, q.take_over_limit())
        });
        if let Some((session, report)) = done {
            self.shared.report(session, report);
        }
        for (held, why) in over {
            self.shared.end(&held, why);
        }
    }

    fn stats(&self, key: &str) -> Stats {
        let now = unix_ms();
        let f = self.shared.with(|q| q.figures(key, now));
        let intake = self.intake.figures();
        let requested = intake.requested.load(Ordering::Relaxed);
        let pending = intake.pending.load(Ordering::Relaxed);
        let ended = intake.ended.load(Ordering::Relaxed);
        let mut counts = std::collections::HashMap::new();
        let size = if key.is_empty() {
            counts.insert("completed".to_owned(), f.done + ended);
            counts.insert("fetched".to_owned(), f.done);
            counts.insert("ended_without_page".to_owned(), ended);
            counts.insert(
                "discovered".to_owned(),
                intake.discovered.load(Ordering::Relaxed),
            );
            counts.insert("requested".to_owned(), requested);
            counts.insert("held".to_owned(), f.ready);
            (requested + pending).saturating_sub(f.done + ended + f.leased)
        } else {
            counts.insert("completed".to_owned(), f.done);
            f.ready
        };
        counts.insert("active_queues".to_owned(), f.active_queues);
        Stats {
            size,
            in_process: u32::try_from(f.leased).unwrap_or(u32::MAX),
            counts,
            number_of_queues: f.queues,
            crawl_id: self.app.as_str().to_owned(),
        }
    }
}

/// `url` if it is an absolute http(s) URL of at most [`MAX_URL_BYTES`] with a
/// host, in its parsed form; `None` otherwise.
pub fn checked(url: &str) -> Option<String> {
    if url.len() > MAX_URL_BYTES {
        return None;
    }
    let mut parsed = url::Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return None;
    }
    parsed.set_fragment(None);
    Some(parsed.into())
}

/// The HTTP status a fetcher put in a known URL's metadata
/// (`fetch.statusCode`, StormCrawler's key, or `status`); 200 if none parses.
fn status_of(info: &UrlInfo) -> u16 {
    ["fetch.statusCode", "status"]
        .iter()
        .filter_map(|k| info.metadata.get(*k))
        .filter_map(|v| v.values.first())
        .find_map(|v| v.trim().parse::<u16>().ok())
        .filter(|s| (100..600).contains(s))
        .unwrap_or(200)
}

#[tonic::async_trait]
impl UrlFrontier for Service {
    async fn list_nodes(&self, _r: Request<Empty>) -> Result<Response<StringList>, Status> {
        Ok(Response::new(StringList {
            values: vec![self.app.as_str().to_owned()],
        }))
    }

    async fn list_crawls(&self, _r: Request<Local>) -> Result<Response<StringList>, Status> {
        Ok(Response::new(StringList {
            values: vec![self.app.as_str().to_owned()],
        }))
    }

    async fn delete_crawl(
        &self,
        _r: Request<DeleteCrawlMessage>,
    ) -> Result<Response<Long>, Status> {
        Err(Status::unimplemented(
            "DeleteCrawl: stop the crawl with polycrawl's admin page or SIGTERM",
        ))
    }

    async fn list_queues(&self, r: Request<Pagination>) -> Result<Response<QueueList>, Status> {
        let p = r.into_inner();
        let keys = self.shared.with(|q| q.keys(p.include_inactive, unix_ms()));
        let total = keys.len() as u64;
        let size = if p.size == 0 {
            DEFAULT_PAGE
        } else {
            p.size as usize
        };
        let values: Vec<String> = keys.into_iter().skip(p.start as usize).take(size).collect();
        Ok(Response::new(QueueList {
            size: u32::try_from(values.len()).unwrap_or(u32::MAX),
            values,
            total,
            start: p.start,
            crawl_id: self.app.as_str().to_owned(),
        }))
    }

    type GetURLsStream = Boxed<UrlInfo>;

    async fn get_ur_ls(
        &self,
        r: Request<GetParams>,
    ) -> Result<Response<Self::GetURLsStream>, Status> {
        let p = r.into_inner();
        let ask = Ask {
            per_queue: p.max_urls_per_queue,
            queues: p.max_queues,
            key: p.key,
            lease_ms: if p.delay_requestable == 0 {
                self.lease_ms
            } else {
                u64::from(p.delay_requestable) * 1000
            },
        };
        let taken = self.shared.with(|q| q.take(&ask, unix_ms()));
        let crawl = self.app.as_str().to_owned();
        let infos = taken.into_iter().map(move |(key, url)| {
            Ok(UrlInfo {
                url,
                key,
                metadata: std::collections::HashMap::new(),
                crawl_id: crawl.clone(),
            })
        });
        Ok(Response::new(Box::pin(tokio_stream::iter(infos))))
    }

    type PutURLsStream = Boxed<AckMessage>;

    async fn put_ur_ls(
        &self,
        r: Request<Streaming<UrlItem>>,
    ) -> Result<Response<Self::PutURLsStream>, Status> {
        let mut items = r.into_inner();
        let (tx, rx) = mpsc::channel(256);
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let item = match items.message().await {
                    Ok(Some(item)) => item,
                    Ok(None) => break,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        break;
                    }
                };
                let (id, status) = this.put(item);
                let ack = AckMessage {
                    id,
                    status: status as i32,
                };
                if tx.send(Ok(ack)).await.is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    type PutDiscoveredStream = Boxed<BatchAck>;

    async fn put_discovered(
        &self,
        r: Request<Streaming<DiscoveredBatch>>,
    ) -> Result<Response<Self::PutDiscoveredStream>, Status> {
        use ack_message::Status as S;
        let mut batches = r.into_inner();
        let (tx, rx) = mpsc::channel(64);
        let intake = self.intake.clone();
        tokio::spawn(async move {
            loop {
                let batch = match batches.message().await {
                    Ok(Some(b)) => b,
                    Ok(None) => break,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        break;
                    }
                };
                let checked_urls: Vec<Option<String>> =
                    batch.items.iter().map(|i| checked(&i.url)).collect();
                let good: Vec<String> = checked_urls.iter().flatten().cloned().collect();
                let taken = good.is_empty() || intake.offer(good);
                let statuses = checked_urls
                    .iter()
                    .map(|c| match (c, taken) {
                        (None, _) => S::Skipped as i32,
                        (Some(_), true) => S::Ok as i32,
                        (Some(_), false) => S::Fail as i32,
                    })
                    .collect();
                let ack = BatchAck {
                    id: batch.id,
                    statuses,
                };
                if tx.send(Ok(ack)).await.is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn get_stats(
        &self,
        r: Request<QueueWithinCrawlParams>,
    ) -> Result<Response<Stats>, Status> {
        Ok(Response::new(self.stats(&r.into_inner().key)))
    }

    async fn delete_queue(
        &self,
        r: Request<QueueWithinCrawlParams>,
    ) -> Result<Response<Long>, Status> {
        let key = r.into_inner().key;
        if key.is_empty() {
            return Err(Status::invalid_argument("DeleteQueue needs a queue key"));
        }
        let held = self.shared.with(|q| q.delete(&key));
        let why = format!("queue {key} deleted (URL Frontier DeleteQueue)");
        for h in &held {
            self.shared.end(h, why.clone());
        }
        Ok(Response::new(Long {
            value: held.len() as u64,
        }))
    }

    async fn block_queue_until(
        &self,
        r: Request<BlockQueueParams>,
    ) -> Result<Response<Empty>, Status> {
        let p = r.into_inner();
        if p.key.is_empty() {
            return Err(Status::invalid_argument(
                "BlockQueueUntil needs a queue key",
            ));
        }
        self.shared.with(|q| q.block(&p.key, p.time));
        Ok(Response::new(Empty {}))
    }

    async fn set_active(&self, r: Request<Active>) -> Result<Response<Empty>, Status> {
        let state = r.into_inner().state;
        self.shared.with(|q| q.set_active(state));
        Ok(Response::new(Empty {}))
    }

    async fn get_active(&self, _r: Request<Local>) -> Result<Response<Boolean>, Status> {
        let state = self.shared.with(|q| q.active());
        Ok(Response::new(Boolean { state }))
    }

    async fn set_delay(&self, r: Request<QueueDelayParams>) -> Result<Response<Empty>, Status> {
        let p = r.into_inner();
        self.shared
            .with(|q| q.set_delay(&p.key, u64::from(p.delay_requestable) * 1000));
        Ok(Response::new(Empty {}))
    }

    async fn set_log_level(&self, _r: Request<LogLevelParams>) -> Result<Response<Empty>, Status> {
        Err(Status::unimplemented(
            "SetLogLevel: set RUST_LOG when starting polycrawl",
        ))
    }

    async fn set_crawl_limit(
        &self,
        r: Request<CrawlLimitParams>,
    ) -> Result<Response<Empty>, Status> {
        let p = r.into_inner();
        if p.key.is_empty() {
            return Err(Status::invalid_argument("SetCrawlLimit needs a queue key"));
        }
        let over = self.shared.with(|q| {
            q.set_limit(&p.key, u64::from(p.limit));
            q.take_over_limit()
        });
        for (held, why) in over {
            self.shared.end(&held, why);
        }
        Ok(Response::new(Empty {}))
    }

    async fn get_url_status(
        &self,
        _r: Request<UrlStatusRequest>,
    ) -> Result<Response<UrlItem>, Status> {
        Err(Status::unimplemented(
            "GetURLStatus: the manager keeps queued URLs on disk, not for lookup",
        ))
    }

    type ListURLsStream = Boxed<UrlItem>;

    async fn list_ur_ls(
        &self,
        _r: Request<ListUrlParams>,
    ) -> Result<Response<Self::ListURLsStream>, Status> {
        Err(Status::unimplemented(
            "ListURLs: the manager keeps queued URLs on disk, not for listing",
        ))
    }

    async fn count_ur_ls(&self, _r: Request<CountUrlParams>) -> Result<Response<Long>, Status> {
        Err(Status::unimplemented("CountURLs: use GetStats"))
    }

    async fn purge_ur_ls(&self, _r: Request<PurgeUrlParams>) -> Result<Response<Long>, Status> {
        Err(Status::unimplemented("PurgeURLs: not kept by age"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_statuses_read() {
        assert_eq!(
            checked("http://A.test/x#frag").as_deref(),
            Some("http://a.test/x")
        );
        assert!(checked("ftp://a.test/").is_none());
        assert!(checked("/relative").is_none());
        assert!(checked(&format!("http://a.test/{}", "x".repeat(MAX_URL_BYTES))).is_none());
        let mut info = UrlInfo::default();
        assert_eq!(status_of(&info), 200);
        info.metadata.insert(
            "fetch.statusCode".into(),
            StringList {
                values: vec!["503".into()],
            },
        );
        assert_eq!(status_of(&info), 503);
    }

    #[test]
    fn queue_keys_follow_the_host() {
        assert_eq!(
            crate::queues::key_of("http://a.test:81/x").as_deref(),
            Some("a.test:81")
        );
    }
}
