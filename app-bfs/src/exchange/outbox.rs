//! Exchange mode's outboxes (see the [module docs](super)): one file of foreign
//! URLs per owner under `<state>/outbox/`, appended and fsynced, sent as exchange
//! files into the owner's folder when full, old enough, the owner idle, or before
//! this part says it is idle; removed only after its files are published.
//!
//! It must never decide which URLs are foreign (the part does) nor remove an
//! outbox before its exchange files are published. Memory: O(parts): only each
//! outbox's URL count and age are held; the URLs live on disk.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spool::formats::{ExchangeHeader, ExchangeWriter, Hints};
use spool::name::{FileKind, Priority};
use spool::publish::Publisher;
use tracing::warn;

use super::status::Status;
use super::{Foreign, LOOK_EVERY, append_synced, cut_partial_line, format_error};
use crate::state::PartCounters;
use app_core::error::AppError;

/// The outboxes of one part, one per other part.
pub(super) struct Outboxes {
    own: u32,
    count: u32,
    /// Publishers into every other part's exchange folder (none for our own).
    publishers: Vec<Option<Publisher>>,
    /// `<state>/outbox/`.
    dir: PathBuf,
    /// Per part: URLs in its outbox file, and since when (this run) it has any.
    pub(super) waiting: Vec<(u64, Option<Instant>)>,
    pub(super) max_age: Duration,
    urls_per_file: usize,
    /// When the owners' status files were last read for idle owners.
    pub(super) last_look: Option<Instant>,
}

impl Outboxes {
    /// Opens the outboxes in `dir` (created; a line cut by a crash cut off).
    pub(super) fn open(
        dir: PathBuf,
        publishers: Vec<Option<Publisher>>,
        own: u32,
        urls_per_file: usize,
        max_age: Duration,
    ) -> Result<Self, AppError> {
        fs::create_dir_all(&dir).map_err(|source| AppError::File {
            path: dir.clone(),
            source,
        })?;
        let count = u32::try_from(publishers.len()).unwrap_or(u32::MAX);
        let mut waiting = Vec::new();
        for j in 0..count {
            let lines = cut_partial_line(&dir.join(j.to_string()))?;
            waiting.push((lines, (lines > 0).then(Instant::now)));
        }
        Ok(Self {
            own,
            count,
            publishers,
            dir,
            waiting,
            max_age,
            urls_per_file,
            last_look: None,
        })
    }

    /// Appends `foreign` to their owners' outboxes (fsynced) and sends those that
    /// are full.
    pub(super) fn add(
        &mut self,
        foreign: Vec<(u32, Foreign)>,
        priority: Priority,
        counters: &mut PartCounters,
    ) -> Result<(), AppError> {
        let mut by_owner: BTreeMap<u32, String> = BTreeMap::new();
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        for (owner, url) in foreign {
            if owner == self.own || owner >= self.count {
                continue;
            }
            let text = by_owner.entry(owner).or_default();
            text.push_str(&url.line());
            *counts.entry(owner).or_default() += 1;
        }
        let now = Instant::now();
        for (owner, text) in by_owner {
            append_synced(&self.path(owner), &text)?;
            let w = &mut self.waiting[owner as usize];
            w.0 += counts[&owner];
            w.1.get_or_insert(now);
            if w.0 >= self.urls_per_file as u64 {
                self.flush(owner, priority, counters)?;
            }
        }
        Ok(())
    }

    /// Sends the outboxes that are due: full, old enough, for an owner that says
    /// it is idle (read through `statuses`), or every one when `all`. Returns
    /// whether it sent any.
    pub(super) fn send_due(
        &mut self,
        priority: Priority,
        counters: &mut PartCounters,
        all: bool,
        statuses: impl FnOnce() -> Vec<Option<Status>>,
    ) -> Result<bool, AppError> {
        if self.waiting.iter().all(|w| w.0 == 0) {
            return Ok(false);
        }
        let now = Instant::now();
        let look = all || self.last_look.is_none_or(|t| now >= t + LOOK_EVERY);
        if !look {
            return Ok(false);
        }
        self.last_look = Some(now);
        let statuses = if all { Vec::new() } else { statuses() };
        let mut sent = false;
        for owner in 0..self.count {
            let (n, since) = self.waiting[owner as usize];
            if n == 0 {
                continue;
            }
            let idle_owner = statuses
                .get(owner as usize)
                .is_some_and(|s| s.as_ref().is_some_and(|s| s.idle));
            let old = since.is_some_and(|t| now >= t + self.max_age);
            if all || old || idle_owner || n >= self.urls_per_file as u64 {
                self.flush(owner, priority, counters)?;
                sent = true;
            }
        }
        Ok(sent)
    }

    fn path(&self, owner: u32) -> PathBuf {
        self.dir.join(owner.to_string())
    }

    /// Sends `owner`'s outbox as exchange files, then removes it.
    fn flush(
        &mut self,
        owner: u32,
        priority: Priority,
        counters: &mut PartCounters,
    ) -> Result<(), AppError> {
        let path = self.path(owner);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(AppError::File { path, source }),
        };
        let mut urls: Vec<Foreign> = Vec::new();
        for line in text.lines() {
            match Foreign::parse(line) {
                Some(url) => urls.push(url),
                None => warn!(file = %path.display(), line, "app: outbox line skipped"),
            }
        }
        let (files, n) = self.send(owner, &urls, priority)?;
        counters.sent_files += files;
        counters.sent_urls += n;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(AppError::File { path, source }),
        }
        self.waiting[owner as usize] = (0, None);
        Ok(())
    }

    /// Publishes `urls` into part `to`'s exchange folder; returns (files, URLs).
    fn send(&self, to: u32, urls: &[Foreign], priority: Priority) -> Result<(u64, u64), AppError> {
        let Some(Some(publisher)) = self.publishers.get(to as usize) else {
            return Ok((0, 0));
        };
        let header = ExchangeHeader {
            from: self.own,
            to,
            parts: self.count,
        };
        let (mut files, mut sent) = (0, 0);
        for chunk in urls.chunks(self.urls_per_file) {
            let mut w = ExchangeWriter::new(Vec::new(), header).map_err(format_error)?;
            for url in chunk {
                let hints = Hints {
                    depth: Some(url.depth),
                    hops: (url.hops > 0).then_some(url.hops),
                    via: url.via.clone(),
                    links: (url.links > 0).then_some(url.links),
                    ..Hints::default()
                };
                w.write(&url.url, &hints).map_err(format_error)?;
            }
            let n = w.count();
            let data = w.finish().map_err(format_error)?;
            publisher.publish(priority, FileKind::Exchange, &data)?;
            files += 1;
            sent += n;
        }
        Ok((files, sent))
    }
}
