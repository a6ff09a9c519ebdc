//! The jobs the manager released to this frontier, by queue, and their leases to
//! external fetchers: what `GetURLs` hands out and what a `KnownURLItem` or an
//! expired lease brings back.
//!
//! A queue's key is the URL's host (with its port when the URL names one), the
//! URL Frontier's default. The manager releases a host's next URL only after the
//! previous job's report plus the host's interval, so a queue here never holds
//! more than the manager lets out (one job per host by default, or a job and the
//! one chained after it). This table adds what the URL Frontier API asks of a
//! queue on top: a block until a time (`BlockQueueUntil`), a least time between two
//! retrievals (`SetDelay`, per key or the default for all), a crawl limit
//! (`SetCrawlLimit`), and the node's active switch (`SetActive`). All of it is in
//! one process behind one lock, so two clients can never both take a queue's turn.
//!
//! This module must never talk to the manager or to a client: it returns the
//! reports the caller sends. Memory: O(jobs held) (bounded by the manager's window)
//! plus one entry per key with a setting or a count. Costs: `take` O(queues
//! visited + URLs handed out); `complete` and `expire` O(1) per lease plus
//! O(leases) for the expiry scan.

use std::collections::{BTreeMap, HashMap, VecDeque};

use spool::protocol::{FetchReport, FetchResult, JobId, StoredPage, Timing};

/// A job the manager released: a URL of a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The manager's job id.
    pub job: JobId,
    /// The URL.
    pub url: String,
    /// The manager connection it came on (its report goes nowhere else).
    pub session: u64,
    /// Not to be handed out before this time (unix ms): a chained job's gap.
    pub not_before_ms: u64,
}

/// A URL handed to a fetcher.
#[derive(Debug, Clone)]
struct Lease {
    held: Held,
    key: String,
    since_ms: u64,
    deadline_ms: u64,
}

/// One queue: its released jobs and settings.
#[derive(Debug, Default)]
struct Queue {
    ready: VecDeque<Held>,
    /// Chained jobs (`spool::protocol::After`): released once their predecessor
    /// (the id) is done, `gap_ms` later.
    chained: Vec<(JobId, u32, Held)>,
    leased: u32,
    blocked_until_s: u64,
    delay_ms: Option<u64>,
    last_handed_ms: Option<u64>,
    limit: Option<u64>,
    done: u64,
}

impl Queue {
    fn is_idle(&self) -> bool {
        self.ready.is_empty() && self.chained.is_empty() && self.leased == 0
    }

    fn keeps_settings(&self) -> bool {
        self.blocked_until_s > 0 || self.delay_ms.is_some() || self.limit.is_some() || self.done > 0
    }
}

/// What [`Queues::take`] is asked for (`GetParams`).
#[derive(Debug, Clone, Default)]
pub struct Ask {
    /// At most this many URLs per queue (0: no limit).
    pub per_queue: u32,
    /// From at most this many queues (0: no limit).
    pub queues: u32,
    /// Only this queue ("" for any).
    pub key: String,
    /// Lease length in ms.
    pub lease_ms: u64,
}

/// Figures of the table, for `GetStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Jobs held and not leased.
    pub ready: u64,
    /// Jobs leased to fetchers.
    pub leased: u64,
    /// Queues known (with jobs or settings).
    pub queues: u64,
    /// Queues with jobs held or leased and not blocked.
    pub active_queues: u64,
    /// URLs reported done by fetchers.
    pub done: u64,
}

/// Every queue and lease. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Queues {
    queues: BTreeMap<String, Queue>,
    leases: HashMap<String, Lease>,
    active: bool,
    default_delay_ms: u64,
    done: u64,
    /// Queues deleted while this frontier runs: their URLs end as released.
    deleted: std::collections::BTreeSet<String>,
}

/// The queue key of a URL: its host, with the port when the URL names one.
pub fn key_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    Some(match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

impl Queues {
    /// An empty, active table.
    pub fn new() -> Self {
        Self {
            active: true,
            ..Self::default()
        }
    }

    /// The manager released `held`, chained after `after` (its predecessor and
    /// the least gap after it) if set. Refused, with the reason, when the URL has
    /// no host, its queue was deleted, or its queue is at its crawl limit: the
    /// caller ends the URL at the manager.
    pub fn add(&mut self, held: Held, after: Option<(JobId, u32)>) -> Result<(), (Held, String)> {
        let Some(key) = key_of(&held.url) else {
            return Err((held, "no host in the URL".to_owned()));
        };
        if self.deleted.contains(&key) {
            return Err((
                held,
                format!("queue {key} deleted (URL Frontier DeleteQueue)"),
            ));
        }
        if let Some(limit) = self.limit_reached(&key) {
            return Err((
                held,
                format!("queue {key} at its crawl limit of {limit} (URL Frontier SetCrawlLimit)"),
            ));
        }
        let queue = self.queues.entry(key).or_default();
        match after {
            Some((pred, gap)) => queue.chained.push((pred, gap, held)),
            None => queue.ready.push_back(held),
        }
        Ok(())
    }

    /// Hands out URLs due now (`now_ms`, unix ms): a queue is due when the node is
    /// active, it is not blocked, its delay since its last retrieval has passed, and
    /// its crawl limit is not reached. Returns (key, URL) pairs.
    pub fn take(&mut self, ask: &Ask, now_ms: u64) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if !self.active {
            return out;
        }
        let mut queues_used = 0u32;
        let default_delay = self.default_delay_ms;
        for (key, queue) in &mut self.queues {
            if !ask.key.is_empty() && *key != ask.key {
                continue;
            }
            if ask.queues > 0 && queues_used >= ask.queues {
                break;
            }
            if queue.blocked_until_s.saturating_mul(1000) > now_ms {
                continue;
            }
            let delay = queue.delay_ms.unwrap_or(default_delay);
            if queue
                .last_handed_ms
                .is_some_and(|t| now_ms < t.saturating_add(delay))
            {
                continue;
            }
            let mut taken = 0u32;
            while ask.per_queue == 0 || taken < ask.per_queue {
                if queue
                    .limit
                    .is_some_and(|l| queue.done + u64::from(queue.leased) >= l)
                {
                    break;
                }
                let Some(front) = queue.ready.front() else {
                    break;
                };
                if front.not_before_ms > now_ms {
                    break;
                }
                let Some(held) = queue.ready.pop_front() else {
                    break;
                };
                out.push((key.clone(), held.url.clone()));
                queue.leased += 1;
                let lease = Lease {
                    held,
                    key: key.clone(),
                    since_ms: now_ms,
                    deadline_ms: now_ms.saturating_add(ask.lease_ms),
                };
                self.leases.insert(lease.held.url.clone(), lease);
                taken += 1;
                if delay > 0 {
                    break; // One URL per turn: the delay runs from this retrieval.
                }
            }
            if taken > 0 {
                queue.last_handed_ms = Some(now_ms);
                queues_used += 1;
            }
        }
        out
    }

    /// A fetcher reports `url` done with HTTP `status` (`now_ms`, unix ms): the
    /// lease ends and the report for the manager is returned, with the session it
    /// belongs to, or `None` if the URL is not leased (already done, expired and
    /// handed out again, or never released). A chained job waiting for it becomes
    /// ready after its gap.
    pub fn complete(&mut self, url: &str, status: u16, now_ms: u64) -> Option<(u64, FetchReport)> {
        let lease = self.leases.remove(url)?;
        self.done += 1;
        if let Some(queue) = self.queues.get_mut(&lease.key) {
            queue.leased = queue.leased.saturating_sub(1);
            queue.done += 1;
            let job = lease.held.job;
            let mut i = 0;
            while i < queue.chained.len() {
                if queue.chained[i].0 == job {
                    let (_, gap, mut next) = queue.chained.swap_remove(i);
                    next.not_before_ms = now_ms.saturating_add(u64::from(gap));
                    queue.ready.push_front(next);
                } else {
                    i += 1;
                }
            }
            self.forget_if_idle(&lease.key);
        }
        let ms = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let page = StoredPage {
            status,
            wire_bytes: 0,
            body_bytes: 0,
            truncated: false,
            timing: Timing {
                connect_ms: 0,
                first_byte_ms: 0,
                total_ms: ms(now_ms.saturating_sub(lease.since_ms)),
                sent_us: lease.since_ms.saturating_mul(1000),
                written_us: lease.since_ms.saturating_mul(1000),
                received_us: now_ms.saturating_mul(1000),
            },
            file: crate::EXTERNAL_FILE.to_owned(),
            location: None,
            retry_after: None,
            response: None,
        };
        Some((
            lease.held.session,
            FetchReport {
                job: lease.held.job,
                result: FetchResult::Stored(page),
            },
        ))
    }

    /// Leases past their deadline go back to the front of their queues, to be
    /// handed out again. Returns how many. O(leases).
    pub fn expire(&mut self, now_ms: u64) -> usize {
        let late: Vec<String> = self
            .leases
            .iter()
            .filter(|(_, l)| l.deadline_ms <= now_ms)
            .map(|(url, _)| url.clone())
            .collect();
        for url in &late {
            if let Some(lease) = self.leases.remove(url) {
                let queue = self.queues.entry(lease.key).or_default();
                queue.leased = queue.leased.saturating_sub(1);
                queue.ready.push_front(lease.held);
            }
        }
        late.len()
    }

    /// The manager connection `session` ended: its jobs are the manager's again
    /// (it took them back), so they go, leased or not. Returns how many.
    pub fn drop_session(&mut self, session: u64) -> usize {
        let mut dropped = 0;
        self.leases.retain(|_, l| {
            let keep = l.held.session != session;
            if !keep {
                dropped += 1;
                if let Some(q) = self.queues.get_mut(&l.key) {
                    q.leased = q.leased.saturating_sub(1);
                }
            }
            keep
        });
        for queue in self.queues.values_mut() {
            let before = queue.ready.len() + queue.chained.len();
            queue.ready.retain(|h| h.session != session);
            queue.chained.retain(|(_, _, h)| h.session != session);
            dropped += before - queue.ready.len() - queue.chained.len();
        }
        self.queues
            .retain(|_, q| !q.is_idle() || q.keeps_settings());
        dropped
    }

    /// Every job not leased, removed from the table (a drain hands them back).
    pub fn take_unleased(&mut self) -> Vec<Held> {
        let mut out = Vec::new();
        for queue in self.queues.values_mut() {
            out.extend(queue.ready.drain(..));
            out.extend(queue.chained.drain(..).map(|(_, _, h)| h));
        }
        out
    }

    /// Removes queue `key`'s jobs (leased or not) and settings, returns its jobs,
    /// and ends every URL the manager releases for it from now on.
    pub fn delete(&mut self, key: &str) -> Vec<Held> {
        self.deleted.insert(key.to_owned());
        let mut out = Vec::new();
        if let Some(mut queue) = self.queues.remove(key) {
            out.extend(queue.ready.drain(..));
            out.extend(queue.chained.drain(..).map(|(_, _, h)| h));
        }
        let leased: Vec<String> = self
            .leases
            .iter()
            .filter(|(_, l)| l.key == key)
            .map(|(u, _)| u.clone())
            .collect();
        for url in leased {
            if let Some(l) = self.leases.remove(&url) {
                out.push(l.held);
            }
        }
        out
    }
}

/// The API's queue settings and the table's figures.
impl Queues {
    /// Blocks `key` until `until_s` (unix seconds; 0 unblocks).
    pub fn block(&mut self, key: &str, until_s: u64) {
        self.queues
            .entry(key.to_owned())
            .or_default()
            .blocked_until_s = until_s;
        self.forget_if_idle(key);
    }

    /// Sets `key`'s least time between two retrievals ("" sets the default).
    pub fn set_delay(&mut self, key: &str, delay_ms: u64) {
        if key.is_empty() {
            self.default_delay_ms = delay_ms;
        } else {
            self.queues.entry(key.to_owned()).or_default().delay_ms = Some(delay_ms);
        }
    }

    /// Sets `key`'s crawl limit: URLs done (and leased) at most.
    pub fn set_limit(&mut self, key: &str, limit: u64) {
        self.queues.entry(key.to_owned()).or_default().limit = Some(limit);
    }

    /// `key`'s crawl limit, if it has one and reached it.
    pub fn limit_reached(&self, key: &str) -> Option<u64> {
        self.queues
            .get(key)
            .and_then(|q| q.limit.filter(|l| q.done >= *l))
    }

    /// Jobs of queues at their crawl limit, removed from the table with the reason:
    /// they will not be handed out, and the caller ends them at the manager.
    pub fn take_over_limit(&mut self) -> Vec<(Held, String)> {
        let mut out = Vec::new();
        for (key, queue) in &mut self.queues {
            if let Some(limit) = queue.limit.filter(|l| queue.done >= *l) {
                let why = format!(
                    "queue {key} at its crawl limit of {limit} (URL Frontier SetCrawlLimit)"
                );
                out.extend(queue.ready.drain(..).map(|h| (h, why.clone())));
                out.extend(queue.chained.drain(..).map(|(_, _, h)| (h, why.clone())));
            }
        }
        out
    }

    /// Turns the node on or off for `GetURLs`.
    pub fn set_active(&mut self, active: bool) {
        self.active = active;
    }

    /// Whether `GetURLs` hands anything out.
    pub fn active(&self) -> bool {
        self.active
    }

    /// Jobs held in all (leased or not), for the manager's window.
    pub fn held(&self) -> usize {
        self.leases.len()
            + self
                .queues
                .values()
                .map(|q| q.ready.len() + q.chained.len())
                .sum::<usize>()
    }

    /// Queue keys, in order: with `include_inactive`, every key known; otherwise
    /// those holding jobs and not blocked at `now_ms`.
    pub fn keys(&self, include_inactive: bool, now_ms: u64) -> Vec<String> {
        self.queues
            .iter()
            .filter(|(_, q)| include_inactive || Self::is_active(q, now_ms))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The table's figures, or one queue's when `key` is not empty.
    pub fn figures(&self, key: &str, now_ms: u64) -> Figures {
        let mut f = Figures::default();
        for (k, q) in &self.queues {
            if !key.is_empty() && k != key {
                continue;
            }
            f.ready += (q.ready.len() + q.chained.len()) as u64;
            f.leased += u64::from(q.leased);
            f.queues += 1;
            f.active_queues += u64::from(Self::is_active(q, now_ms));
            f.done += q.done;
        }
        if key.is_empty() {
            f.done = self.done;
        }
        f
    }

    fn is_active(q: &Queue, now_ms: u64) -> bool {
        !q.is_idle() && q.blocked_until_s.saturating_mul(1000) <= now_ms
    }

    fn forget_if_idle(&mut self, key: &str) {
        if self
            .queues
            .get(key)
            .is_some_and(|q| q.is_idle() && !q.keeps_settings())
        {
            self.queues.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(job: u64, url: &str) -> Held {
        Held {
            job: JobId(job),
            url: url.to_owned(),
            session: 1,
            not_before_ms: 0,
        }
    }

    fn ask() -> Ask {
        Ask {
            lease_ms: 1000,
            ..Ask::default()
        }
    }

    #[test]
    fn a_url_is_handed_out_once_until_done_or_expired() {
        let mut q = Queues::new();
        q.add(held(1, "http://a.test/x"), None).unwrap();
        assert_eq!(
            q.take(&ask(), 0),
            vec![("a.test".into(), "http://a.test/x".into())]
        );
        assert!(
            q.take(&ask(), 10).is_empty(),
            "leased: not handed out again"
        );
        assert_eq!(q.expire(999), 0);
        assert_eq!(q.expire(1000), 1);
        assert_eq!(q.take(&ask(), 1000).len(), 1, "expired: handed out again");
        let (session, report) = q.complete("http://a.test/x", 200, 1500).unwrap();
        assert_eq!((session, report.job), (1, JobId(1)));
        assert!(
            q.complete("http://a.test/x", 200, 1500).is_none(),
            "one report"
        );
        assert_eq!(q.held(), 0);
    }

    #[test]
    fn blocks_delays_limits_and_the_switch_hold_a_queue() {
        let mut q = Queues::new();
        q.add(held(1, "http://a.test:8080/1"), None).unwrap();
        q.block("a.test:8080", 5);
        assert!(q.take(&ask(), 4_999).is_empty());
        assert_eq!(q.take(&ask(), 5_000).len(), 1);
        q.complete("http://a.test:8080/1", 200, 5_100).unwrap();
        q.set_delay("a.test:8080", 2_000);
        q.add(held(2, "http://a.test:8080/2"), None).unwrap();
        assert!(
            q.take(&ask(), 6_999).is_empty(),
            "2 s since the last retrieval"
        );
        q.set_active(false);
        assert!(q.take(&ask(), 7_000).is_empty());
        q.set_active(true);
        assert_eq!(q.take(&ask(), 7_000).len(), 1);
        q.set_limit("a.test:8080", 2);
        q.add(held(3, "http://a.test:8080/3"), None).unwrap();
        assert!(
            q.take(&ask(), 20_000).is_empty(),
            "2 done or out: the limit"
        );
        q.complete("http://a.test:8080/2", 200, 7_100).unwrap();
        assert_eq!(q.limit_reached("a.test:8080"), Some(2));
        assert!(q.take(&ask(), 20_000).is_empty());
        assert_eq!(q.take_over_limit().len(), 1);
        assert!(
            q.add(held(4, "http://a.test:8080/4"), None).is_err(),
            "at the limit"
        );
        q.add(held(5, "http://b.test/1"), None).unwrap();
        assert_eq!(q.delete("b.test").len(), 1);
        assert!(q.add(held(6, "http://b.test/2"), None).is_err(), "deleted");
    }

    #[test]
    fn a_chained_job_waits_for_its_predecessor_and_its_gap() {
        let mut q = Queues::new();
        q.add(held(1, "http://a.test/1"), None).unwrap();
        q.add(held(2, "http://a.test/2"), Some((JobId(1), 300)))
            .unwrap();
        let mut a = ask();
        a.per_queue = 5;
        assert_eq!(q.take(&a, 0).len(), 1);
        q.complete("http://a.test/1", 200, 100).unwrap();
        assert!(q.take(&a, 399).is_empty());
        assert_eq!(q.take(&a, 400).len(), 1);
    }

    #[test]
    fn a_lost_session_takes_its_jobs() {
        let mut q = Queues::new();
        q.add(held(1, "http://a.test/1"), None).unwrap();
        q.add(held(2, "http://b.test/1"), None).unwrap();
        let mut a = ask();
        a.queues = 1;
        assert_eq!(q.take(&a, 0).len(), 1);
        assert_eq!(q.drop_session(1), 2);
        assert_eq!(q.held(), 0);
        assert!(q.complete("http://a.test/1", 200, 5).is_none());
    }
}
