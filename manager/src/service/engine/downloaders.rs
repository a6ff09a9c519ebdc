//! Downloaders: handing out jobs, taking reports and commits, and taking work back
//! from a downloader that goes away.
//!
//! - **Window**: each downloader gets up to `jobs_per_downloader_factor` (2) times
//!   its concurrency (from its heartbeats; `ASSUMED_CONCURRENCY` before the first)
//!   jobs outstanding, so it never waits for the next batch.
//! - **Pacing**: every job (page or robots.txt) takes a token of the global
//!   [`TokenBucket`] (target pages/s).
//! - **Affinity**: a job goes to the downloader its IP address hashes to (highest
//!   rendezvous hash of address and downloader among the live ones), or, if that one
//!   has no room, to the one with the most. So one downloader sees an address's jobs
//!   and can keep the per-IP start spacing on the wire (its `IpGate`), and its
//!   kept-alive connections get reused. An address whose last job is still out,
//!   or was reported less than the spacing ago, stays with that job's downloader
//!   even past its window (`ip_owner.rs`): two downloaders never send to one
//!   address within the spacing. Each round tells speed control what bounded it (tokens, hosts or
//!   room), and each report how long its job was out (`speed/`).
//! - **Durability**: a `Stored` page report removes the URL from the frontier (for
//!   politeness, at once), but the page is durable only once its batch is
//!   published, which `Committed` announces. Until then the frontier's table of
//!   jobs keeps it as awaiting its commit, held by its downloader; if the downloader goes away first, the URL is
//!   queued again ([`Frontier::requeue`](crate::Frontier::requeue)). Jobs with no
//!   report go back with [`Frontier::on_lost`](crate::Frontier::on_lost): their
//!   request may have reached the host, so it rests one interval first.
//!   The page's URL is kept durably meanwhile (the frontier's `awaiting` family,
//!   written in the report's batch), so if the manager and the downloader die
//!   together the restarted manager queues it again. If only the *manager* dies,
//!   running downloaders still publish their open batches (their contract) and
//!   send `Committed` for those jobs on their next connection, which the restarted
//!   manager takes from any downloader (job ids are never reused across runs);
//!   what no downloader claims within `restored_commit_wait_ms` is queued again.
//! - **robots.txt**: a `Stored` robots report carries the response (a small
//!   robots.txt) or names a published file in `robots/`; its body goes to the
//!   frontier, then the file, if any, is deleted (`robots_file.rs`).
//!   On NFS the report can arrive before the file shows on the manager's machine:
//!   a file not found is looked for again every [`ROBOTS_RETRY`] for up to
//!   [`ROBOTS_SHOW_WAIT`] (its job stays out meanwhile).
//!
//! **One table of jobs**: every job out, and every page awaiting its commit, is
//! one entry of the frontier's job table (`frontier/jobs.rs`) with its holder
//! (the downloader's connection), address, app, URL and send time; this module
//! hands jobs out ([`Frontier::hand_out`](crate::Frontier::hand_out)), checks a
//! report's job against its holder, and asks for each downloader's count for its
//! window. A report, a commit and a downloader's loss go through that one entry.
//!
//! This module must never block on a downloader: sends go through the outbox.
//! Cost: O(downloaders) per dispatch round plus O(1) per job, report and commit;
//! a downloader's loss scans the job table once.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::IpAddr;
use std::path::PathBuf;

use spool::ComponentId;
use spool::protocol::{
    FetchJob, FetchPurpose, FetchReport, FetchResult, JobId, Message, Role, SpoolArea, StoredPage,
};
use tokio::time::Instant;

use super::super::conn::ConnId;
use super::super::error::ManagerError;
use super::super::ip_owner::IpOwners;
use super::super::pacing::TokenBucket;
use super::super::robots_file;
use super::super::speed::Round;
use super::super::stages::Feed;
use super::Engine;

/// How long a reported robots file may take to show in `robots/` (on NFS a file
/// another machine published may not be visible here for the attribute cache
/// time) before the robots.txt counts as unreachable.
pub(super) const ROBOTS_SHOW_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// How often a robots file not visible yet is looked for again.
pub(super) const ROBOTS_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// Who may get a job, and when: the global token bucket (the speed target) and the
/// downloader each recently contacted IP address belongs to.
#[derive(Debug)]
pub(super) struct Pacing {
    /// The global speed limit.
    pub bucket: TokenBucket,
    /// Which downloader each recently contacted IP address's jobs must go to.
    pub owners: IpOwners,
}

/// The stored robots.txt files: `robots/` in the spool, and the reported files not
/// visible there yet.
#[derive(Debug)]
pub(super) struct RobotsFiles {
    /// `robots/` in the spool.
    pub dir: PathBuf,
    /// Stored robots.txt files not visible yet.
    pub waiting: Vec<RobotsWait>,
}

impl RobotsFiles {
    /// When a file not visible yet is looked for next.
    pub fn next_try(&self) -> Option<Instant> {
        self.waiting.iter().map(|w| w.next_try).min()
    }
}

/// A stored robots.txt whose file was not visible yet when its report came.
#[derive(Debug)]
pub(super) struct RobotsWait {
    job: JobId,
    page: StoredPage,
    /// The report's end of the request.
    wall: u64,
    /// When the report came.
    since: Instant,
    /// When to look for the file again.
    pub(super) next_try: Instant,
}

impl Engine {
    /// Hands out as many jobs as downloaders have room for and the speed allows.
    pub(super) fn dispatch(&mut self, now: Instant, wall: u64) -> Result<(), ManagerError> {
        self.pacing.bucket.clear_wake();
        let frontier = &self.frontier;
        let (mut room, live) = self.registry.room(|conn| frontier.jobs_held(conn));
        let total: usize = room.iter().map(|(_, r)| r).sum();
        let allowed = self.pacing.bucket.available(now);
        if total == 0 {
            if allowed > 0 {
                self.speed.note_round(Round::Downloaders);
            }
            let feed = if live.is_empty() {
                Feed::NoDownloaders
            } else {
                Feed::Fed
            };
            self.figures.stages.note(now, feed);
            return Ok(());
        }
        let want = total.min(allowed);
        if want == 0 {
            self.speed.note_round(Round::Tokens);
            self.figures.stages.note(now, Feed::Fed);
            self.pacing.bucket.wake_at_next_token();
            return Ok(());
        }
        let jobs = self.frontier.next_jobs(wall, want)?;
        // Room left with no URL ready: held by politeness (URLs queued), or the
        // stage before dispatch did not keep up (none queued).
        let feed = if jobs.len() >= want {
            Feed::Fed
        } else if self.frontier.urls_waiting() > 0 {
            Feed::Held
        } else {
            Feed::Starved
        };
        self.figures.stages.note(now, feed);
        self.speed.note_round(if jobs.len() < want {
            Round::Hosts
        } else if want < allowed {
            Round::Downloaders
        } else {
            Round::Tokens
        });
        if jobs.is_empty() {
            return Ok(());
        }
        self.pacing.bucket.take(jobs.len());
        if jobs.len() == want && want < total {
            self.pacing.bucket.wake_at_next_token();
        }
        let mut batches: HashMap<ConnId, Vec<FetchJob>> = HashMap::new();
        for job in jobs {
            let ip = job.addr.ip();
            // An address owned by a downloader goes there, room or not (ip_owner.rs).
            let owner = self
                .pacing
                .owners
                .owner(ip, wall)
                .filter(|conn| live.contains(conn));
            let conn = match owner {
                Some(conn) => {
                    if let Some(slot) = room.iter_mut().find(|(c, _)| *c == conn) {
                        slot.1 = slot.1.saturating_sub(1);
                    }
                    conn
                }
                None => {
                    let preferred = affinity(ip, &live);
                    let slot = room
                        .iter()
                        .position(|(conn, free)| Some(*conn) == preferred && *free > 0)
                        .or_else(|| {
                            (0..room.len()).max_by_key(|&i| room[i].1) // Most room.
                        });
                    let Some(slot) = slot.map(|i| &mut room[i]) else {
                        break; // Cannot happen: want <= total room.
                    };
                    slot.1 = slot.1.saturating_sub(1);
                    slot.0
                }
            };
            self.pacing.owners.sent(ip, conn);
            batches.entry(conn).or_default().push(job);
        }
        for (conn, jobs) in batches {
            if self.registry.role_of(conn).is_none() {
                continue;
            }
            for job in &jobs {
                self.frontier.hand_out(job, conn, now.into_std());
            }
            self.figures.metrics.jobs_dispatched += jobs.len() as u64;
            // On failure the connection is dropped and its jobs come back.
            self.send(conn, Message::FetchBatch { jobs });
        }
        Ok(())
    }

    /// A downloader reported on some jobs. The frontier's changes for all of them
    /// are written as one batch (`frontier::ledger`, "Held changes"): one WAL write
    /// and one copy of the figures for the message rather than one per report. The
    /// batch is written before this returns, so before any job goes out.
    pub(super) fn on_reports(
        &mut self,
        conn: ConnId,
        reports: Vec<FetchReport>,
        wall: u64,
    ) -> Result<(), ManagerError> {
        self.frontier.hold_changes();
        let handled = self.each_report(conn, reports, wall);
        let released = self.frontier.release_changes();
        handled?;
        Ok(released?)
    }

    /// [`on_reports`](Self::on_reports), report by report.
    fn each_report(
        &mut self,
        conn: ConnId,
        reports: Vec<FetchReport>,
        wall: u64,
    ) -> Result<(), ManagerError> {
        let now = Instant::now();
        // Every request reported was written before now: its end, rounded up to
        // the millisecond, so that no rest starts before the request did.
        let now_us = wall_clock_us();
        let wall = wall.max(now_us.div_ceil(1000));
        for report in reports {
            if self.registry.role_of(conn) != Some(Role::Downloader) {
                tracing::warn!(job = %report.job, "fetch report from a component that is not a downloader ignored");
                return Ok(());
            }
            let Some(assigned) = self.frontier.held_by(conn, report.job) else {
                tracing::debug!(job = %report.job, "report for a job this downloader does not hold ignored");
                if let FetchResult::Stored(page) = &report.result {
                    if let Ok(path) = robots_file::path_of(&self.robots.dir, &page.file) {
                        robots_file::remove(&path);
                    }
                }
                continue;
            };
            let end_us = report_end_us(&report.result, now_us);
            self.pacing.owners.ended(assigned.ip, conn, end_us);
            if !matches!(report.result, FetchResult::Returned) {
                self.speed.note_fetch(
                    conn,
                    now.into_std().saturating_duration_since(assigned.sent),
                );
            }
            // Stored with the batch of the report's change (the crawl's totals).
            self.frontier.count_report(&report.result, assigned.purpose);
            match (&report.result, assigned.purpose) {
                (FetchResult::Stored(page), FetchPurpose::Robots) => {
                    self.figures.metrics.wire_bytes += page.wire_bytes;
                    self.robots_stored(report.job, page, request_end_ms(page, wall))?;
                }
                (FetchResult::Stored(page), FetchPurpose::Page) => {
                    self.figures.metrics.wire_bytes += page.wire_bytes;
                    self.figures.metrics.pages_stored += 1;
                    // The frontier keeps the page as awaiting its commit.
                    self.frontier
                        .on_report(&report, request_end_ms(page, wall))?;
                }
                (FetchResult::Failed { .. }, _) => {
                    self.frontier.on_report(&report, wall)?;
                }
                (FetchResult::Returned, _) => {
                    self.frontier.on_report(&report, wall)?;
                }
            }
        }
        Ok(())
    }

    /// A robots.txt was stored: read its file, tell the frontier, delete the file.
    /// A file not there yet waits (see [`RobotsWait`]).
    fn robots_stored(
        &mut self,
        job: JobId,
        page: &StoredPage,
        wall: u64,
    ) -> Result<(), ManagerError> {
        self.robots_read(RobotsWait {
            job,
            page: page.clone(),
            wall,
            since: Instant::now(),
            next_try: Instant::now(),
        })
    }

    /// Reads the robots.txt of `wait` (the response in its report, else its robots
    /// file) and tells the frontier, or puts it back in the waiting list while the
    /// file is not visible and [`ROBOTS_SHOW_WAIT`] has not passed.
    fn robots_read(&mut self, mut wait: RobotsWait) -> Result<(), ManagerError> {
        let RobotsWait {
            job,
            ref page,
            wall,
            ..
        } = wait;
        let max = usize::try_from(self.config.frontier.max_robots_bytes).unwrap_or(usize::MAX);
        if let Some(response) = &page.response {
            // A small robots.txt came in the report: no file to read or delete.
            let body = robots_file::body_of(response, max).map_err(|e| e.to_string());
            return self.robots_verdict(job, page, body, wall);
        }
        let path = robots_file::path_of(&self.robots.dir, &page.file);
        let body = match path.as_deref() {
            Ok(p) => match robots_file::read_body(p, max) {
                Err(robots_file::RobotsFileError::Open { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound
                        && wait.since.elapsed() < ROBOTS_SHOW_WAIT =>
                {
                    wait.next_try = Instant::now() + ROBOTS_RETRY;
                    self.robots.waiting.push(wait);
                    return Ok(());
                }
                other => other.map_err(|e| e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        self.robots_verdict(job, page, body, wall)?;
        if let Ok(path) = path {
            robots_file::remove(&path);
        }
        Ok(())
    }

    /// Tells the frontier what robots job `job` got: `page` with its entity `body`,
    /// or a body that could not be read (robots.txt then counts as unreachable).
    fn robots_verdict(
        &mut self,
        job: JobId,
        page: &StoredPage,
        body: Result<Vec<u8>, String>,
        wall: u64,
    ) -> Result<(), ManagerError> {
        let body = match body {
            Ok(body) => Some(body),
            Err(error) => {
                self.figures.metrics.robots_unreadable += 1;
                tracing::warn!(%job, error, "robots.txt response unreadable: robots.txt counts as unreachable");
                None
            }
        };
        self.frontier.on_robots_fetched(
            job,
            page.status,
            body.as_deref(),
            page.location.as_deref(),
            wall,
        )?;
        Ok(())
    }

    /// Reads again the robots files that were not visible yet.
    pub(super) fn robots_wait_step(&mut self) -> Result<(), ManagerError> {
        let now = Instant::now();
        for wait in std::mem::take(&mut self.robots.waiting) {
            if wait.next_try <= now {
                self.robots_read(wait)?;
            } else {
                self.robots.waiting.push(wait);
            }
        }
        Ok(())
    }

    /// A downloader published a page batch: its pages are durable. The jobs may be
    /// of this connection or, restored from before a restart, of an earlier one.
    pub(super) fn on_committed(
        &mut self,
        conn: ConnId,
        file: &str,
        jobs: &[JobId],
    ) -> Result<(), ManagerError> {
        for app in self.frontier.on_committed(conn, file, jobs)? {
            let area = SpoolArea::Pages(app);
            self.relay(None, &area, file);
        }
        Ok(())
    }

    /// A downloader is gone: its unreported jobs go back to their queues and its
    /// uncommitted pages are queued again.
    pub(super) fn downloader_lost(
        &mut self,
        conn: ConnId,
        id: &ComponentId,
        why: &str,
    ) -> Result<(), ManagerError> {
        let wall = crate::wall_clock_ms();
        // Unreported jobs may have been sent: their hosts rest one interval.
        let (returned, requeued) = self.frontier.on_holder_lost(conn, wall)?;
        self.figures.metrics.jobs_reclaimed += returned as u64;
        self.figures.metrics.pages_requeued += requeued as u64;
        if returned + requeued > 0 {
            tracing::warn!(role = %Role::Downloader, %id, why, returned, requeued,
                "downloader gone: its unfinished jobs go back to the queues");
        } else {
            tracing::info!(role = %Role::Downloader, %id, why, "downloader left");
        }
        Ok(())
    }
}

/// The end of a stored response's request, from which its host rests: the latest
/// of the moments the manager knows, in unix ms: now (`wall`, the report is being
/// handled) and the downloader's stamp of the response's last byte (rounded up),
/// which is later than now only when the downloader's clock is ahead.
fn request_end_ms(page: &StoredPage, wall: u64) -> u64 {
    wall.max(page.timing.received_us.div_ceil(1000))
}

/// The end of a reported job's request in unix µs, from which another downloader
/// may take its address (see `ip_owner.rs`): the latest of now (`now_us`) and, for a
/// stored response, the downloader's stamp of its last byte (later than now only
/// when the downloader's clock is ahead). Never truncated: the owner rounds it up.
fn report_end_us(result: &FetchResult, now_us: u64) -> u64 {
    match result {
        FetchResult::Stored(page) => now_us.max(page.timing.received_us),
        FetchResult::Failed { .. } | FetchResult::Returned => now_us,
    }
}

/// The wall clock in unix µs (0 before 1970).
fn wall_clock_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The downloader of `live` whose rendezvous hash with `ip` is highest: the same one
/// for an address as long as the set of downloaders stays; when one goes, only its
/// addresses move. O(downloaders).
fn affinity(ip: IpAddr, live: &[ConnId]) -> Option<ConnId> {
    live.iter().copied().max_by_key(|conn| {
        let mut h = DefaultHasher::new();
        (ip, *conn).hash(&mut h);
        h.finish()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool::protocol::Timing;

    #[test]
    fn a_host_rests_from_the_latest_end_it_knows() {
        let page = |received_us| StoredPage {
            status: 200,
            wire_bytes: 1,
            body_bytes: 1,
            truncated: false,
            timing: Timing {
                connect_ms: 0,
                first_byte_ms: 1,
                total_ms: 1,
                sent_us: 0,
                written_us: 0,
                received_us,
            },
            file: String::new(),
            location: None,
            retry_after: None,
            response: None,
        };
        assert_eq!(request_end_ms(&page(0), 5_000), 5_000, "no stamp: now");
        assert_eq!(
            request_end_ms(&page(4_999_000), 5_000),
            5_000,
            "stamp earlier"
        );
        assert_eq!(request_end_ms(&page(5_000_001), 5_000), 5_001, "rounded up");
        assert_eq!(
            request_end_ms(&page(9_000_000), 5_000),
            9_000,
            "clock ahead"
        );
        let stored = |received_us| FetchResult::Stored(page(received_us));
        assert_eq!(report_end_us(&stored(4_999_999), 5_000_123), 5_000_123);
        assert_eq!(report_end_us(&stored(5_000_500), 5_000_123), 5_000_500);
        let failed = FetchResult::Failed {
            reason: spool::OutcomeReason::Timeout,
            detail: String::new(),
        };
        assert_eq!(report_end_us(&failed, 5_000_123), 5_000_123);
    }

    #[test]
    fn affinity_is_stable_spread_and_moves_only_a_gone_downloaders_addresses() {
        let ips: Vec<IpAddr> = (0..1000u32)
            .map(|i| IpAddr::from([127, 1, (i >> 8) as u8, i as u8]))
            .collect();
        let three = [7, 8, 9];
        let before: Vec<ConnId> = ips
            .iter()
            .map(|ip| affinity(*ip, &three).unwrap())
            .collect();
        let again: Vec<ConnId> = ips
            .iter()
            .map(|ip| affinity(*ip, &[9, 7, 8]).unwrap())
            .collect();
        assert_eq!(before, again, "the order of the live list does not matter");
        for d in three {
            let n = before.iter().filter(|c| **c == d).count();
            assert!((250..420).contains(&n), "downloader {d} got {n} of 1000");
        }
        let after: Vec<ConnId> = ips
            .iter()
            .map(|ip| affinity(*ip, &[7, 9]).unwrap())
            .collect();
        for (b, a) in before.iter().zip(&after) {
            if *b != 8 {
                assert_eq!(a, b, "only downloader 8's addresses move");
            }
        }
        assert_eq!(affinity(ips[0], &[]), None);
    }
}
