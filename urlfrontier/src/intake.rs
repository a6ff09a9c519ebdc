//! The frontier's application half: discovered URLs (from `PutURLs` and
//! `PutDiscovered`) go through the exact seen set (crate `seen`) and the new ones
//! to the manager as request files in `requests/<app>/`; the manager's outcome
//! files in `outcomes/<app>/` (URLs that ended without a page: robots.txt
//! exclusions, DNS failures, hosts given up) are read and counted as done.
//!
//! One thread owns the seen set (its API is synchronous): it takes URLs from a
//! bounded channel, asks for a merge every `merge_interval_ms` while URLs are
//! buffered, and publishes each merge's new URLs as one request file before it
//! releases the merge's generation, so a crash between the two only requests a
//! URL again (the manager ends repeats like any request). This module must never
//! hold URLs in memory beyond the seen set's buffers and one merge's new keys.
//! Costs: the seen set's (insert O(1); a merge O(file + buffer)); O(lines) per
//! outcome file.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use seen::{SeenConfig, SeenSet};
use spool::claim::Consumer;
use spool::formats::{Hints, OutcomeReader, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::publish::Publisher;
use spool::{AppId, ComponentId, OutcomeReason, Spool};
use tracing::warn;

use crate::error::FrontierError;

/// Discovered URLs waiting for the seen set, in batches (back-pressure beyond).
const CHANNEL_BATCHES: usize = 1024;

/// Figures the intake keeps, read by `GetStats`.
#[derive(Debug, Default)]
pub struct IntakeFigures {
    /// URLs sent to the seen set.
    pub discovered: AtomicU64,
    /// URLs found new and written to request files.
    pub requested: AtomicU64,
    /// URLs the manager ended without a page (outcome lines read).
    pub ended: AtomicU64,
    /// URLs waiting in the channel or the seen set's buffer.
    pub pending: AtomicU64,
}

/// The sending side: hands discovered URLs to the intake thread.
#[derive(Debug, Clone)]
pub struct Intake {
    tx: SyncSender<Vec<String>>,
    figures: Arc<IntakeFigures>,
}

impl Intake {
    /// Queues `urls` (already checked) for the seen set; false when the intake is
    /// full or gone (the client should send them again: `FAIL`).
    pub fn offer(&self, urls: Vec<String>) -> bool {
        let n = urls.len() as u64;
        match self.tx.try_send(urls) {
            Ok(()) => {
                self.figures.discovered.fetch_add(n, Ordering::Relaxed);
                self.figures.pending.fetch_add(n, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
        }
    }

    /// The intake's figures.
    pub fn figures(&self) -> &IntakeFigures {
        &self.figures
    }
}

/// Where the intake works.
#[derive(Debug, Clone)]
pub struct IntakeSettings {
    /// The seen set's folder.
    pub seen_dir: PathBuf,
    /// Its buffer size.
    pub buffer_bytes: usize,
    /// How often a merge is asked for while URLs are buffered.
    pub merge_interval: Duration,
    /// The application id of the frontier's URLs.
    pub app: AppId,
    /// The producer and consumer id in spool names.
    pub id: ComponentId,
}

/// Opens the seen set and starts the intake thread; it ends when every [`Intake`]
/// is dropped (after publishing what it holds).
pub fn start(
    spool: &Spool,
    settings: IntakeSettings,
) -> Result<(Intake, std::thread::JoinHandle<()>), FrontierError> {
    let config = SeenConfig {
        buffer_bytes: settings.buffer_bytes,
        ..SeenConfig::default()
    };
    let seen = SeenSet::open(&settings.seen_dir, config)?;
    let publisher = Publisher::new(spool.requests(&settings.app)?, settings.id.clone())?;
    let outcomes = Consumer::new(spool.outcomes(&settings.app)?, settings.id.clone())?;
    let (tx, rx) = sync_channel(CHANNEL_BATCHES);
    let figures = Arc::new(IntakeFigures::default());
    let worker = Worker {
        seen,
        publisher,
        outcomes,
        figures: Arc::clone(&figures),
        merge_interval: settings.merge_interval,
        unsettled: 0,
        resumed: false,
    };
    let handle = std::thread::Builder::new()
        .name("frontier-intake".into())
        .spawn(move || worker.run(&rx))
        .map_err(|source| FrontierError::Thread { source })?;
    Ok((Intake { tx, figures }, handle))
}

struct Worker {
    seen: SeenSet,
    publisher: Publisher,
    outcomes: Consumer,
    figures: Arc<IntakeFigures>,
    merge_interval: Duration,
    /// URLs inserted since the seen set was last quiet (no buffer, no merge).
    unsettled: u64,
    /// Outcome files claimed by an earlier run were taken up.
    resumed: bool,
}

impl Worker {
    fn run(mut self, rx: &Receiver<Vec<String>>) {
        let mut next_merge = Instant::now() + self.merge_interval;
        loop {
            let wait = next_merge.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(urls) => {
                    for url in urls {
                        self.unsettled += 1;
                        if let Err(e) = self.seen.insert(url.as_bytes(), &[]) {
                            warn!(%url, error = %e, "frontier: URL not taken by the seen set");
                        }
                    }
                    if Instant::now() < next_merge {
                        continue;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    if let Err(e) = self.finish() {
                        warn!(error = %e, "frontier: intake stopped with an error");
                    }
                    return;
                }
            }
            next_merge = Instant::now() + self.merge_interval;
            if let Err(e) = self.turn() {
                warn!(error = %e, "frontier: intake turn failed; retrying");
            }
        }
    }

    /// One turn: a merge if URLs are buffered, new URLs published, outcome files read.
    fn turn(&mut self) -> Result<(), FrontierError> {
        if self.seen.has_buffered() && !self.seen.is_merging() {
            self.seen.merge_now()?;
        }
        while let Some(batch) = self.seen.try_recv_new()? {
            self.publish(batch.iter().map(|(k, _)| k), batch.generation())?;
        }
        self.settle_pending();
        self.read_outcomes()
    }

    fn finish(mut self) -> Result<(), FrontierError> {
        self.seen.flush()?;
        for batch in self.seen.close()? {
            let n = write_requests(&self.publisher, batch.iter().map(|(k, _)| k))?;
            self.figures.requested.fetch_add(n, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Publishes one merge's new URLs and releases its `generation` once durable.
    fn publish<'k>(
        &mut self,
        keys: impl Iterator<Item = &'k [u8]>,
        generation: u64,
    ) -> Result<(), FrontierError> {
        let n = write_requests(&self.publisher, keys)?;
        self.figures.requested.fetch_add(n, Ordering::Relaxed);
        self.settle_pending();
        self.seen.release(generation)?;
        Ok(())
    }

    /// Once the seen set is quiet (nothing buffered, no merge running) every URL
    /// inserted so far has been decided: new ones are in request files.
    fn settle_pending(&mut self) {
        if !self.seen.has_buffered() && !self.seen.is_merging() {
            let n = std::mem::take(&mut self.unsettled);
            self.figures.pending.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Reads and deletes the outcome files the manager published for the app,
    /// counting every URL that ended (sitemap lines are not ends).
    fn read_outcomes(&mut self) -> Result<(), FrontierError> {
        // Files claimed before a crash first, then new ones.
        let mut files = if self.resumed {
            Vec::new()
        } else {
            self.resumed = true;
            self.outcomes.resume()?
        };
        files.extend(self.outcomes.claim_batch(64)?);
        for claimed in files {
            let file = claimed.open()?;
            let reader = match OutcomeReader::new(std::io::BufReader::new(file)) {
                Ok(r) => r,
                Err(e) => {
                    claimed.quarantine(&e.to_string())?;
                    continue;
                }
            };
            let mut ended = 0u64;
            for line in reader {
                match line {
                    Ok(o) if o.reason == OutcomeReason::Sitemap => {}
                    Ok(_) => ended += 1,
                    Err(e) => {
                        warn!(error = %e, "frontier: outcome file stops at a bad line");
                        break;
                    }
                }
            }
            self.figures.ended.fetch_add(ended, Ordering::Relaxed);
            claimed.done()?;
        }
        Ok(())
    }
}

/// Writes one request file of `keys` (URLs) and publishes it (nothing when no URL
/// is left); returns how many URLs it holds.
fn write_requests<'k>(
    publisher: &Publisher,
    keys: impl Iterator<Item = &'k [u8]>,
) -> Result<u64, FrontierError> {
    let header = RequestHeader {
        priority: Priority::NORMAL,
    };
    let mut w = RequestWriter::new(Vec::new(), header)?;
    let hints = Hints::default();
    let mut n = 0u64;
    for key in keys {
        let url = String::from_utf8_lossy(key);
        match w.write(&url, &hints) {
            Ok(()) => n += 1,
            Err(error) => warn!(%url, %error, "frontier: URL left out of a request file"),
        }
    }
    let data = w.finish()?;
    if n > 0 {
        publisher.publish(Priority::NORMAL, FileKind::Requests, &data)?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool::formats::{Request, RequestReader};

    fn requested(spool: &Spool, app: &AppId) -> Vec<String> {
        let dir = spool.requests(app).unwrap();
        let mut urls = Vec::new();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if !path.is_file() {
                continue;
            }
            let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
            let mut reader = RequestReader::new(file).unwrap();
            let mut r = Request::default();
            while reader.read_into(&mut r).unwrap() {
                urls.push(r.url.clone());
            }
        }
        urls.sort();
        urls
    }

    #[test]
    fn new_urls_are_requested_once_and_outcomes_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::new(tmp.path().join("spool")).with_notify(false);
        let app = AppId::new("frontier").unwrap();
        let settings = IntakeSettings {
            seen_dir: tmp.path().join("seen"),
            buffer_bytes: 1 << 16,
            merge_interval: Duration::from_millis(20),
            app: app.clone(),
            id: ComponentId::new("frontier-test").unwrap(),
        };
        let (intake, thread) = start(&spool, settings).unwrap();
        assert!(intake.offer(vec!["http://a.test/1".into(), "http://a.test/2".into()]));
        assert!(intake.offer(vec!["http://a.test/1".into()]));
        let outcomes = Publisher::new(
            spool.outcomes(&app).unwrap(),
            ComponentId::new("manager").unwrap(),
        )
        .unwrap();
        let text = "#polycrawl-outcomes v1\nhttp://a.test/x\trobots_excluded\t\n\
                    http://a.test/s.xml\tsitemap\tdepth=1\n";
        outcomes
            .publish(Priority::NORMAL, FileKind::Outcomes, text.as_bytes())
            .unwrap();
        test_support::wait::until(
            "URLs merged and outcomes read",
            Duration::from_secs(10),
            || {
                intake.figures().pending.load(Ordering::Relaxed) == 0
                    && intake.figures().ended.load(Ordering::Relaxed) > 0
            },
        );
        let f = intake.figures();
        assert_eq!(f.discovered.load(Ordering::Relaxed), 3);
        assert_eq!(f.requested.load(Ordering::Relaxed), 2);
        assert_eq!(f.pending.load(Ordering::Relaxed), 0);
        assert_eq!(
            f.ended.load(Ordering::Relaxed),
            1,
            "a sitemap line is no end"
        );
        assert_eq!(
            requested(&spool, &app),
            ["http://a.test/1", "http://a.test/2"]
        );
        drop(intake);
        thread.join().unwrap();
    }
}
