//! Waiting out a full disk (`ENOSPC`, `EDQUOT`) in the crawl loop.
//!
//! A write of the crawl loop that fails because its file system is full (a request
//! or exchange file into the spool, a batch into the repository, the progress or
//! budgets file, a seen-set merge: [`AppError::is_disk_full`]) is not fatal:
//! [`DiskWait::run`] logs one line (`disk full at PATH: pausing, retrying every N s
//! at most`), tells the manager (`Message::Status`, shown on the admin page), and
//! tries the same step again with a back-off from [`RETRY_MIN`] doubling to
//! [`RETRY_MAX`] until it goes through; then it logs `resumed` and tells the
//! manager again. The loop does nothing else meanwhile: it claims no new batch, so
//! nothing new has to be written, and what it holds (in memory or on disk) stays as
//! it is.
//!
//! Every step retried this way must be safe to repeat: it publishes nothing when it
//! fails (spool publishing is write-temp-then-rename; a failed publish leaves no
//! file), or it is idempotent (storage ingest, state saves). A shutdown while paused
//! ends the wait with the error: the state on disk is crash-safe, so the next start
//! goes on from it.
//!
//! The same `Message::Status` carries the application's figures for the admin
//! page ([`DiskWait::set_figures`]: host budgets, a part's exchange), so every
//! status the manager gets is whole.
//!
//! This module must never drop the failed step, and never retry an error that is
//! not a full disk.

use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use spool::protocol::{AppFigures, ComponentState, Message, Pause};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::error::AppError;

/// First wait before a retry.
pub const RETRY_MIN: Duration = Duration::from_millis(50);
/// Longest wait between two retries.
pub const RETRY_MAX: Duration = Duration::from_secs(1);

/// Retries steps that failed on a full disk, and says so.
#[derive(Debug)]
pub struct DiskWait {
    outbound: mpsc::UnboundedSender<Message>,
    stop: CancellationToken,
    /// The last figures told (sent again with every pause and resume).
    figures: Option<AppFigures>,
}

impl DiskWait {
    /// Not waiting; tells the manager through `outbound`, gives up when `stop` is cancelled.
    pub fn new(outbound: mpsc::UnboundedSender<Message>, stop: CancellationToken) -> Self {
        Self {
            outbound,
            stop,
            figures: None,
        }
    }

    /// Tells the manager the application's figures, if they changed (not paused:
    /// the loop is running when it calls this).
    pub fn set_figures(&mut self, figures: AppFigures) {
        if self.figures.as_ref() != Some(&figures) {
            self.figures = Some(figures);
            self.tell(None);
        }
    }

    /// Runs `step` until it succeeds or fails for another reason than a full disk
    /// (that error is returned), waiting out a full disk in between (see the module
    /// docs). Also returns the disk-full error if the service is stopped meanwhile.
    pub fn run<T, S>(
        &self,
        state: &mut S,
        mut step: impl FnMut(&mut S) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let first = match step(state) {
            Err(e) if e.is_disk_full() => e,
            other => return other,
        };
        let path = first.path().unwrap_or_else(|| PathBuf::from("?"));
        let retry_ms = u64::try_from(RETRY_MAX.as_millis()).unwrap_or(u64::MAX);
        warn!(
            error = %first,
            "app: disk full at {}: pausing, retrying every {} s at most",
            path.display(),
            RETRY_MAX.as_secs_f32()
        );
        self.tell(Some(Pause::disk_full(&path, retry_ms)));
        let since = Instant::now();
        let mut backoff = RETRY_MIN;
        loop {
            if self.wait(backoff) {
                self.tell(None);
                return Err(first);
            }
            backoff = (backoff * 2).min(RETRY_MAX);
            match step(state) {
                Err(e) if e.is_disk_full() => continue,
                other => {
                    info!(
                        path = %path.display(),
                        paused_ms = since.elapsed().as_millis() as u64,
                        "app: disk has room again: resumed"
                    );
                    self.tell(None);
                    return other;
                }
            }
        }
    }

    /// Sleeps `d`, or less if the service stops; whether it stopped.
    fn wait(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        while !self.stop.is_cancelled() {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            thread::sleep(left.min(Duration::from_millis(50)));
        }
        true
    }

    fn tell(&self, pause: Option<Pause>) {
        // The control task is gone only when the service ends.
        let _ = self.outbound.send(Message::Status(Box::new(ComponentState {
            pause,
            app: self.figures.clone(),
            draining: false,
        })));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn full() -> AppError {
        AppError::File {
            path: PathBuf::from("/spool/requests/x"),
            source: io::Error::from_raw_os_error(nix::libc::ENOSPC),
        }
    }

    #[test]
    fn retries_a_full_disk_until_room_and_reports_both_ways() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let wait = DiskWait::new(tx, CancellationToken::new());
        let mut tries = 0;
        let got = wait.run(&mut tries, |n| {
            *n += 1;
            if *n < 3 { Err(full()) } else { Ok(*n) }
        });
        assert_eq!(got.unwrap(), 3);
        let Ok(Message::Status(paused)) = rx.try_recv() else {
            panic!("no pause told")
        };
        let pause = paused.pause.expect("paused");
        assert_eq!(pause.path, "/spool/requests/x");
        let Ok(Message::Status(resumed)) = rx.try_recv() else {
            panic!("no resume told")
        };
        assert_eq!(*resumed, ComponentState::default());
    }

    #[test]
    fn other_errors_pass_at_once_and_stop_ends_the_wait() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let wait = DiskWait::new(tx, stop.clone());
        let err = wait
            .run(&mut (), |_| -> Result<(), AppError> {
                Err(AppError::File {
                    path: PathBuf::from("x"),
                    source: io::Error::from_raw_os_error(nix::libc::EACCES),
                })
            })
            .unwrap_err();
        assert!(!err.is_disk_full());
        assert!(rx.try_recv().is_err(), "nothing told for another error");
        stop.cancel();
        let err = wait
            .run(&mut (), |_| -> Result<(), AppError> { Err(full()) })
            .unwrap_err();
        assert!(err.is_disk_full());
    }
}
