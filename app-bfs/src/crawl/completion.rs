//! When the crawl is done: once the loop has nothing to do, it asks the manager
//! where its URLs are (`SyncProgress`; the answer counts every request file
//! published before), confirms an idle answer after `idle_check_ms`, and then asks
//! the parts' rule (a split crawl: cross-over URLs kept, parked two-level URLs, the
//! exchange parts' statuses; see [`crate::exchange`]).
//!
//! The manager's "idle" is not enough on its own: it counts a page done once its
//! batch is published, and a batch published on another machine of a shared file
//! system shows in our folder only later (NFS attribute caching; nfsim's visibility
//! delay), possibly after two idle answers and an empty look. So the end also needs
//! the crawl's own ledger to say that every URL it requested ended as a page it read
//! or an outcome it read ([`Progress::unaccounted`] is 0). The counts err only
//! upwards (a refetch, a batch read again after a crash), so a missing URL can hide
//! only behind a duplicate and the manager's idle answer; a page batch quarantined
//! unread cannot be counted, and then the rule is the manager's alone (logged).
//!
//! It owns the sync bookkeeping only; it must never end a crawl whose folders hold a
//! file, whose manager holds a URL of ours, or of whose requested URLs one has
//! neither a page nor an outcome read.
//!
//! [`Progress::unaccounted`]: crate::state::Progress::unaccounted

use std::time::{Duration, Instant};

use spool::AppId;
use spool::protocol::Message;
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use super::{Crawl, ManagerLink};
use crate::exchange::{Foreign, quiet};
use crate::summary::End;
use app_core::config::PartMode;
use app_core::control::ProgressSeen;
use app_core::error::AppError;
use app_core::reach::Reach;
use pages::canon::key::reversed_host_key;
use url::Url;

/// Longest pause between looks at the exchange folder when idle in a split crawl.
const EXCHANGE_POLL: Duration = Duration::from_millis(50);

/// How often the wait for requested URLs that have neither a page nor an outcome
/// read is logged as a warning while it does not change.
const GAP_WARN_EVERY: Duration = Duration::from_secs(60);

/// What the parts' end-of-crawl rule says (see [`crate::exchange`]).
enum PartsVerdict {
    /// The crawl is over for this part.
    Done,
    /// Cross-over URLs were requested: the frontier is not dry any more.
    Released,
    /// Not yet: look again after a while.
    Wait,
}

/// The crawl loop's view of the manager's progress, and its syncs.
#[derive(Debug)]
pub(super) struct Completion {
    app: AppId,
    /// The newest progress report.
    progress: watch::Receiver<ProgressSeen>,
    /// Syncs to send (and the crawl's other messages).
    outbound: mpsc::UnboundedSender<Message>,
    /// The last `SyncProgress` sent (its sequence number and when), if it was sent
    /// after the loop's last piece of work.
    sync_sent: Option<(u64, Instant)>,
    sync_seq: u64,
    /// When the manager first answered "idle" (the send time of that sync).
    first_idle: Option<Instant>,
    /// How long an idle answer must hold (`idle_check_ms`).
    confirm: Duration,
    /// Longest wait between looks when idle (`scan_interval_ms`).
    scan: Duration,
    /// The last gap logged (requested URLs with neither a page nor an outcome
    /// read while the manager was idle) and when.
    gap_logged: Option<(u64, Instant)>,
    /// When the crawl's figures were last looked at (`Crawl::report_figures`).
    pub(super) figures_at: Option<Instant>,
}

impl Completion {
    pub(super) fn new(app: AppId, link: ManagerLink, confirm: Duration, scan: Duration) -> Self {
        Self {
            app,
            progress: link.progress,
            outbound: link.outbound,
            sync_sent: None,
            sync_seq: 0,
            first_idle: None,
            figures_at: None,
            confirm,
            scan,
            gap_logged: None,
        }
    }

    /// Logs a wait for `gap` URLs: when it changes, then every [`GAP_WARN_EVERY`].
    fn log_gap(&mut self, gap: u64, requested: u64) {
        let now = Instant::now();
        match self.gap_logged {
            Some((logged, at)) if logged == gap && now < at + GAP_WARN_EVERY => {}
            Some((logged, _)) if logged == gap => {
                warn!(
                    urls = gap,
                    requested,
                    "app: the manager is idle but requested URLs still have neither a page \
                     nor an outcome read: waiting for them"
                );
                self.gap_logged = Some((gap, now));
            }
            _ => {
                info!(
                    urls = gap,
                    requested,
                    "app: the manager is idle; waiting for the pages or outcomes of \
                     requested URLs to show in the folders"
                );
                self.gap_logged = Some((gap, now));
            }
        }
    }

    /// The manager's newest report of this application's progress (held
    /// borrowed: drop it before waiting).
    pub(super) fn manager(&self) -> watch::Ref<'_, ProgressSeen> {
        self.progress.borrow()
    }

    /// The loop did some work: an idle answer from before does not count.
    pub(super) fn worked(&mut self) {
        self.first_idle = None;
        self.sync_sent = None;
    }

    /// Sends a `SyncProgress` unless one is out since the last work; returns its
    /// sequence number and when it was sent.
    fn sync(&mut self) -> (u64, Instant) {
        if let Some(sent) = self.sync_sent {
            return sent;
        }
        self.sync_seq += 1;
        let sent = (self.sync_seq, Instant::now());
        let msg = Message::SyncProgress {
            app: self.app.clone(),
            seq: self.sync_seq,
        };
        // The receiver lives as long as the service; a closed channel means it is
        // ending, and the loop's stop token says so next.
        let _ = self.outbound.send(msg);
        self.sync_sent = Some(sent);
        sent
    }

    /// The manager's answer to sync `seq`: whether it holds nothing of ours.
    fn answer(&self, seq: u64) -> Option<bool> {
        match &*self.progress.borrow() {
            Some((_, p)) if p.synced >= seq => Some(p.is_idle()),
            _ => None,
        }
    }
}

impl Crawl {
    /// The loop has nothing to do and its folders are empty: syncs with the
    /// manager and, once its idle answer is confirmed and the parts agree, says
    /// how the crawl ends. `None`: go round the loop again (after a wait).
    pub(super) fn when_quiet(&mut self) -> Result<Option<End>, AppError> {
        self.ledger.save_stats(&self.wait)?;
        let (seq, sent_at) = self.completion.sync();
        let mut scan = self.completion.scan;
        if self.parts.is_some() {
            // Exchange files raise no event here: poll for them.
            scan = scan.min(EXCHANGE_POLL);
        }
        match self.completion.answer(seq) {
            Some(true) => {}
            Some(false) => {
                self.completion.first_idle = None;
                self.intake.wait(scan);
                return Ok(None);
            }
            None => {
                self.intake.wait(scan);
                return Ok(None);
            }
        }
        // A batch or outcome file published just before the answer is in the
        // folders now.
        if !self.folders_empty()? {
            return Ok(None);
        }
        // ... or not yet, on a shared file system: the ledger knows it is missing.
        if !self.all_accounted() {
            self.intake.wait(scan);
            return Ok(None);
        }
        let confirm = self.completion.confirm;
        let since = *self.completion.first_idle.get_or_insert(sent_at);
        if sent_at >= since + confirm {
            return match self.parts_done(confirm)? {
                PartsVerdict::Done => {
                    self.checkpoint()?;
                    Ok(Some(if self.max_pages_reached() {
                        End::MaxPages
                    } else {
                        End::Complete
                    }))
                }
                PartsVerdict::Released => {
                    self.completion.worked();
                    Ok(None)
                }
                PartsVerdict::Wait => {
                    self.intake.wait(scan);
                    Ok(None)
                }
            };
        }
        let now = Instant::now();
        if now >= since + confirm {
            self.completion.sync_sent = None; // ask again, for the confirmation
        } else {
            self.intake.wait(since + confirm - now);
        }
        Ok(None)
    }

    /// Whether every requested URL has a page or an outcome read (see the
    /// [module docs](self)); logs the wait when not.
    fn all_accounted(&mut self) -> bool {
        let progress = &self.ledger.progress;
        let gap = progress.unaccounted();
        if gap == 0 {
            return true;
        }
        if progress.read.batches_unread > 0 {
            if self.completion.gap_logged.is_none() {
                warn!(
                    urls = gap,
                    batches = progress.read.batches_unread,
                    "app: requested URLs without a page or an outcome read, and page \
                     batches quarantined unread: the end is the manager's to say"
                );
                self.completion.gap_logged = Some((gap, Instant::now()));
            }
            return true;
        }
        let requested = progress.urls_requested;
        self.completion.log_gap(gap, requested);
        false
    }

    /// Called when the manager holds nothing of ours and our folders are empty:
    /// whether this part is done. Unsplit and firewall parts are; a cross-over part
    /// first requests its kept foreign URLs; an exchange part waits for the rule
    /// over every part's status.
    fn parts_done(&mut self, confirm: Duration) -> Result<PartsVerdict, AppError> {
        let stopping = self.max_pages_reached();
        let priority = self.output.priority();
        let Some(parts) = &mut self.parts else {
            return Ok(PartsVerdict::Done);
        };
        let counters = &mut self.ledger.progress.parts;
        let stored = self.ledger.progress.pages_stored;
        match parts.mode {
            PartMode::Firewall => Ok(PartsVerdict::Done),
            PartMode::Crossover => {
                let kept = parts.kept()?;
                if kept.is_empty() || stopping {
                    return Ok(PartsVerdict::Done);
                }
                let n = self.request_urls(&kept)?;
                if let Some(parts) = &self.parts {
                    parts.forget_kept()?;
                }
                self.ledger.progress.parts.crossed += n;
                self.ledger.progress.urls_requested += n;
                self.ledger.save_now()?;
                info!(
                    urls = n,
                    "app: own frontier dry: requesting kept cross-over URLs"
                );
                Ok(PartsVerdict::Released)
            }
            PartMode::Exchange | PartMode::TwoLevel => {
                // Two-level: a part with parked URLs is not done (they go once
                // their sites are assigned; the loop polls for that).
                if parts.parked() > 0 && !stopping {
                    return Ok(PartsVerdict::Wait);
                }
                // Rule 3: whatever waits in the outboxes goes while still busy.
                parts.send_due(priority, counters, true)?;
                parts.set_idle(true, counters, stored)?;
                let first = parts.statuses();
                if !first.iter().all(|s| s.as_ref().is_some_and(|s| s.idle)) {
                    return Ok(PartsVerdict::Wait);
                }
                if parts.in_flight()? > 0 {
                    return Ok(PartsVerdict::Wait);
                }
                if !confirm.is_zero() {
                    std::thread::sleep(confirm);
                }
                let in_flight = parts.in_flight()?;
                let second = parts.statuses();
                if quiet(&first, in_flight, &second) {
                    Ok(PartsVerdict::Done)
                } else {
                    Ok(PartsVerdict::Wait)
                }
            }
        }
    }

    /// Two-level mode: releases the parked URLs whose site is assigned now. This
    /// part's own go through the host budgets as a merge's new URLs do
    /// ([`Crawl::admit_parked`]): requested when admitted, else held until their
    /// host's budget grows (`deferred.rs`) or cut. Other parts' go to them, with
    /// the votes parked for their hosts (so their budgets count every linking
    /// site, as in exchange mode); without the coverage fix they are dropped
    /// (counted `dropped`). The rest stays parked. Returns whether any
    /// line was released. The requests, the held URLs, the cut record and the
    /// outbox lines are durable before the parked file is rewritten: a crash in
    /// between releases them again (a URL requested twice, never one lost).
    pub(super) fn release_parked(&mut self) -> Result<bool, AppError> {
        let Some(parts) = &mut self.parts else {
            return Ok(false);
        };
        let (own, other, rest, total) = parts.parked_ready(&mut self.ledger.progress.parts)?;
        // Released: sent, requested, or dropped as a root its owner requested.
        let released = total - rest.len() as u64;
        if released == 0 {
            return Ok(false);
        }
        self.busy()?;
        let not_requested = released - own.len() as u64;
        self.publish_own(own)?;
        let priority = self.output.priority();
        if let Some(parts) = &mut self.parts {
            let counters = &mut self.ledger.progress.parts;
            if parts.fix() {
                parts.hand_on(other, priority, counters)?;
            } else {
                // Plain 2L: each site's owner starts it at its root.
                counters.dropped += not_requested;
            }
            parts.keep_parked(&rest, released, counters)?;
        }
        self.ledger.save_now()?;
        Ok(true)
    }

    /// Admits `own` (URLs of this agent's sites) through the host budgets as
    /// [`Crawl::admit_parked`] does, publishes what passes, and saves what admission
    /// now holds and cut.
    fn publish_own(&mut self, own: Vec<Foreign>) -> Result<(), AppError> {
        let n = if self.max_pages_reached() {
            0
        } else {
            let admitted = self.admit_parked(own)?;
            self.output.publish_all(&admitted, &self.repo, &self.wait)?
        };
        self.ledger.progress.urls_requested += n;
        let state_dir = self.ledger.dir().to_owned();
        self.admission.save_held(&state_dir, &self.wait)?;
        self.admission.sync_cuts()?;
        Ok(())
    }

    /// Two-level mode: requests the roots of this agent's newly assigned sites
    /// (the paper's `rootpage(site)`, depth 0) through the host budgets as
    /// [`Crawl::admit_parked`] does, then records them requested
    /// (`sites.rs`: a kill in between requests a root twice, never none).
    pub(super) fn request_roots(&mut self, roots: Vec<Url>) -> Result<(), AppError> {
        self.busy()?;
        let own: Vec<Foreign> = roots
            .into_iter()
            .map(|u| Foreign::new(u.to_string(), 0, 0))
            .collect();
        self.publish_own(own)?;
        self.ledger.save_now()?;
        if let Some(parts) = &mut self.parts {
            parts.roots_done()?;
        }
        Ok(())
    }

    /// This part's released parked lines through the host budgets, as
    /// [`Crawl::publish`] passes a merge's new URLs: the URLs admitted, to
    /// request; the others held (counted as cut until released) or cut. A URL
    /// is held under the last recorded generation, since no generation will
    /// find it again: its parked line is gone once the release is done, so the
    /// held URLs are saved before that (see [`Crawl::release_parked`]). Votes
    /// are skipped: this part counted their linking sites when it read their
    /// links.
    fn admit_parked(&mut self, own: Vec<Foreign>) -> Result<Vec<(Url, Reach)>, AppError> {
        let generation = self.ledger.progress.last_published;
        let cut_before = self.admission.budget_cuts();
        let mut admitted = Vec::new();
        for f in own.into_iter().filter(|f| f.via.is_none()) {
            let url = match Url::parse(&f.url) {
                Ok(url) => url,
                Err(e) => {
                    // Parked lines are this part's own canonical URLs: only a
                    // damaged file gets here. Say so; the line cannot be fetched.
                    warn!(url = %f.url, error = %e, "parked URL does not parse; skipped");
                    continue;
                }
            };
            let reach = Reach {
                depth: f.depth,
                hops: f.hops,
            };
            let key = reversed_host_key(&url);
            if self.admission.admit(key.as_bytes(), reach, generation)? {
                self.admission.requested(&url)?;
                admitted.push((url, reach));
            }
        }
        self.ledger.progress.budget_cut += self.admission.budget_cuts() - cut_before;
        Ok(admitted)
    }

    /// In a split crawl, says "busy" in the status file before any work (rule 2
    /// of the termination argument in [`crate::exchange`]).
    pub(super) fn busy(&mut self) -> Result<(), AppError> {
        if let Some(parts) = &mut self.parts {
            let progress = &self.ledger.progress;
            parts.set_idle(false, &progress.parts, progress.pages_stored)?;
        }
        Ok(())
    }

    /// Publishes `urls` (URL, depth) as request files; returns the URLs written.
    fn request_urls(&mut self, urls: &[(String, u32)]) -> Result<u64, AppError> {
        let urls: Vec<_> = urls
            .iter()
            .map(|(url, depth)| {
                let reach = Reach {
                    depth: *depth,
                    hops: 0,
                };
                (url.as_str(), reach)
            })
            .collect();
        self.output.publish_all(&urls, &self.repo, &self.wait)
    }
}
