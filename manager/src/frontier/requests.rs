//! The request queue: request files waiting in `requests/<app>/`, claimed one at a
//! time in priority order, then FIFO (spool name order: `(priority, seq, producer)`,
//! across all applications), and streamed in chunks to the frontier.
//!
//! A file is *claimed* only when the frontier needs URLs (fewer than `s` hosts ready
//! or on their way to ready), so hundreds of millions of waiting URLs stay on disk in
//! their files (Polybot section 3.5). A claimed file is read twice, both times
//! streaming: once to validate it (a file with one bad line is quarantined whole, with
//! the line in the `.why` note, before anything of it is loaded), then chunk by chunk.
//! The frontier writes each chunk in one RocksDB batch together with the file's
//! progress (`meta` `file/<app>/<name>`: URLs done, complete), and only after the batch
//! of the last chunk calls `done()` (delete) on the file. After a crash the file is
//! still in `.claimed/<manager>/`; [`RequestFiles::open`] resumes it after the URLs its
//! progress says are done, so no file is loaded twice and none is lost.
//!
//! Memory: one chunk of URLs at a time (`load_chunk_urls`), one open file, and the
//! folder listings (one name per waiting file, refreshed every
//! `request_scan_interval_ms` or on [`rescan`](RequestFiles::rescan)). Listing costs
//! O(files waiting). This module must never load a file before the frontier asks for
//! URLs, never hold a whole file in memory, and never decide where a URL goes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufReader;

use spool::claim::{Claimed, Consumer};
use spool::formats::{Request, RequestReader};
use spool::name::SpoolName;
use spool::{AppId, ComponentId, Spool};

use super::FrontierError;
use super::records::{FileProgress, META_FILE_PREFIX, file_key};
use super::store::{Cf, Store};

/// URLs read from one request file, to be written in one batch.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// The application whose file it is.
    pub app: AppId,
    /// The file's name.
    pub file_name: String,
    /// The URL lines, in file order.
    pub requests: Vec<Request>,
    /// Progress to record with this chunk.
    pub progress: FileProgress,
    /// The file was already completely loaded by an earlier run (which crashed before
    /// deleting it): this empty chunk only finishes it.
    pub was_complete: bool,
}

#[derive(Debug)]
struct Current {
    app: AppId,
    claimed: Claimed,
    reader: RequestReader<BufReader<File>>,
    done: u64,
    was_complete: bool,
}

/// Request files: waiting, being loaded, loaded.
#[derive(Debug)]
pub(crate) struct RequestFiles {
    spool: Spool,
    component: ComponentId,
    consumers: BTreeMap<AppId, Consumer>,
    listing: BTreeSet<(SpoolName, AppId)>,
    listed_at_ms: Option<u64>,
    scan_interval_ms: u64,
    /// Claimed files not started yet (resumed after a restart), in order.
    resumed: Vec<(AppId, Claimed)>,
    current: Option<Current>,
    quarantined: u64,
    /// The request number the next URL gets (its place in the crawl order; stored
    /// as `META_NEXT_REQNO` with the batch that queues the URL).
    next_reqno: u64,
}

impl RequestFiles {
    /// The request number of a URL queued now (loaded or requeued). O(1).
    pub fn take_reqno(&mut self) -> u64 {
        let reqno = self.next_reqno;
        self.next_reqno += 1;
        reqno
    }

    /// The request number the next URL gets, to store.
    pub fn next_reqno(&self) -> u64 {
        self.next_reqno
    }

    /// The request queue of `spool`; finds the files a previous run claimed and did
    /// not finish (they are loaded first, after what their progress says is done).
    pub fn open(
        spool: Spool,
        component: ComponentId,
        scan_interval_ms: u64,
        next_reqno: u64,
    ) -> Result<Self, FrontierError> {
        let mut files = Self {
            spool,
            component,
            consumers: BTreeMap::new(),
            listing: BTreeSet::new(),
            listed_at_ms: None,
            scan_interval_ms,
            resumed: Vec::new(),
            current: None,
            quarantined: 0,
            next_reqno,
        };
        let mut resumed = Vec::new();
        for app in files.apps()? {
            let consumer = files.consumer(&app)?;
            let claimed = consumer
                .resume()
                .map_err(|e| FrontierError::spool(format!("resume requests/{app}"), e))?;
            resumed.extend(claimed.into_iter().map(|c| (app.clone(), c)));
        }
        resumed.sort_by(|a, b| a.1.name().cmp(b.1.name()));
        resumed.reverse(); // popped from the back
        files.resumed = resumed;
        Ok(files)
    }

    /// The applications with a `requests/<app>/` folder.
    fn apps(&self) -> Result<Vec<AppId>, FrontierError> {
        let root = self.spool.root().join("requests");
        let entries = match std::fs::read_dir(&root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(FrontierError::RequestFile { path: root, source });
            }
        };
        let mut apps: Vec<AppId> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().and_then(|n| AppId::new(n).ok()))
            .collect();
        apps.sort();
        Ok(apps)
    }

    fn consumer(&mut self, app: &AppId) -> Result<&Consumer, FrontierError> {
        if !self.consumers.contains_key(app) {
            let dir = self
                .spool
                .requests(app)
                .map_err(|e| FrontierError::spool(format!("open requests/{app}"), e))?;
            let consumer = Consumer::new(dir, self.component.clone())
                .map_err(|e| FrontierError::spool(format!("consumer of requests/{app}"), e))?;
            self.consumers.insert(app.clone(), consumer);
        }
        Ok(&self.consumers[app])
    }

    /// Forces the next [`next_chunk`](Self::next_chunk) to list the folders again (the
    /// service calls it when discovery reports a new file).
    pub fn rescan(&mut self) {
        self.listed_at_ms = None;
    }

    fn refresh(&mut self, now_ms: u64) -> Result<(), FrontierError> {
        let fresh = self
            .listed_at_ms
            .is_some_and(|t| now_ms < t.saturating_add(self.scan_interval_ms));
        if fresh {
            return Ok(());
        }
        self.listing.clear();
        for app in self.apps()? {
            let consumer = self.consumer(&app)?;
            let names = consumer
                .dir()
                .list()
                .map_err(|e| FrontierError::spool(format!("list requests/{app}"), e))?;
            self.listing
                .extend(names.into_iter().map(|n| (n, app.clone())));
        }
        self.listed_at_ms = Some(now_ms);
        Ok(())
    }

    /// Files waiting in the folders (as of the last listing) plus claimed ones not
    /// fully loaded, per application.
    pub fn pending_by_app(&self) -> BTreeMap<AppId, u64> {
        let mut out = BTreeMap::new();
        for (_, app) in &self.listing {
            *out.entry(app.clone()).or_default() += 1;
        }
        for (app, _) in &self.resumed {
            *out.entry(app.clone()).or_default() += 1;
        }
        if let Some(c) = &self.current {
            *out.entry(c.app.clone()).or_default() += 1;
        }
        out
    }

    /// [`pending_by_app`](Self::pending_by_app) of one application: O(files listed).
    pub fn pending_of(&self, app: &AppId) -> u64 {
        let listed = self.listing.iter().filter(|(_, a)| a == app).count();
        let resumed = self.resumed.iter().filter(|(a, _)| a == app).count();
        let current = self.current.as_ref().is_some_and(|c| &c.app == app);
        (listed + resumed) as u64 + u64::from(current)
    }

    /// Lists the request folders now (an application asked for a sync).
    pub fn list_now(&mut self, now_ms: u64) -> Result<(), FrontierError> {
        self.rescan();
        self.refresh(now_ms)
    }

    /// The progress keys of the claimed files not finished yet.
    pub fn claimed_keys(&self) -> BTreeSet<Vec<u8>> {
        let mut keys: BTreeSet<Vec<u8>> = self
            .resumed
            .iter()
            .map(|(app, c)| file_key(app, &c.name().to_string()))
            .collect();
        if let Some(c) = &self.current {
            keys.insert(file_key(&c.app, &c.claimed.name().to_string()));
        }
        keys
    }

    /// When the next chunk could be read: now if a file is open or known to be
    /// waiting, else when the folders are due to be listed again.
    pub fn next_scan(&self) -> Option<u64> {
        if self.current.is_some() || !self.resumed.is_empty() || !self.listing.is_empty() {
            return Some(0);
        }
        Some(
            self.listed_at_ms
                .map_or(0, |t| t.saturating_add(self.scan_interval_ms)),
        )
    }

    /// Files quarantined because they did not parse.
    pub fn quarantined(&self) -> u64 {
        self.quarantined
    }

    /// The next chunk of at most `max` URLs: from the open file, else from the next
    /// file (resumed ones first, then by priority and age). `None` when no file waits.
    pub fn next_chunk(
        &mut self,
        store: &Store,
        max: usize,
        now_ms: u64,
    ) -> Result<Option<Chunk>, FrontierError> {
        loop {
            if self.current.is_none() && !self.open_next(store, now_ms)? {
                return Ok(None);
            }
            let Some(cur) = self.current.as_mut() else {
                continue;
            };
            let mut requests = Vec::new();
            let mut req = Request::default();
            let mut finished = false;
            while requests.len() < max {
                match cur.reader.read_into(&mut req) {
                    Ok(true) => requests.push(std::mem::take(&mut req)),
                    Ok(false) => {
                        finished = true;
                        break;
                    }
                    Err(e) => {
                        // Validated before loading, so the file changed under us:
                        // stop here, what was loaded stays loaded.
                        tracing::error!(file = %cur.claimed.path().display(), error = %e,
                            "request file changed while loading; the rest is skipped");
                        finished = true;
                        break;
                    }
                }
            }
            cur.done += requests.len() as u64;
            let chunk = Chunk {
                app: cur.app.clone(),
                file_name: cur.claimed.name().to_string(),
                requests,
                progress: FileProgress {
                    urls_done: cur.done,
                    complete: finished,
                },
                was_complete: cur.was_complete,
            };
            return Ok(Some(chunk));
        }
    }

    /// The chunk's batch is committed: a complete file is deleted from the spool.
    /// Returns the progress key to delete (in a later batch) when the file is done.
    pub fn committed(&mut self, chunk: &Chunk) -> Result<Option<Vec<u8>>, FrontierError> {
        if !chunk.progress.complete {
            return Ok(None);
        }
        let Some(cur) = self.current.take() else {
            return Ok(None);
        };
        let name = cur.claimed.name().to_string();
        cur.claimed
            .done()
            .map_err(|e| FrontierError::spool(format!("done requests/{}/{name}", cur.app), e))?;
        tracing::debug!(app = %cur.app, file = %name, urls = cur.done, "request file loaded");
        Ok(Some(file_key(&chunk.app, &chunk.file_name)))
    }

    /// Claims (or resumes) the next file, validates it and positions its reader after
    /// the URLs already loaded. Returns false when no file waits.
    fn open_next(&mut self, store: &Store, now_ms: u64) -> Result<bool, FrontierError> {
        loop {
            let (app, claimed) = if let Some(next) = self.resumed.pop() {
                next
            } else {
                self.refresh(now_ms)?;
                let Some((name, app)) = self.listing.pop_first() else {
                    return Ok(false);
                };
                let consumer = self.consumer(&app)?;
                match consumer
                    .claim(name.clone())
                    .map_err(|e| FrontierError::spool(format!("claim requests/{app}/{name}"), e))?
                {
                    Some(c) => (app, c),
                    None => continue, // Another consumer took it.
                }
            };
            let file_name = claimed.name().to_string();
            let progress: FileProgress = store
                .get(Cf::Meta, &file_key(&app, &file_name))?
                .unwrap_or_default();
            if let Err(why) = validate(&claimed) {
                self.quarantined += 1;
                claimed
                    .quarantine(&why)
                    .map_err(|e| FrontierError::spool(format!("quarantine {file_name}"), e))?;
                continue;
            }
            let mut reader = open_reader(&claimed)?;
            let mut skip = Request::default();
            let mut done = 0;
            while done < progress.urls_done && reader.read_into(&mut skip).unwrap_or(false) {
                done += 1;
            }
            self.current = Some(Current {
                app,
                claimed,
                reader,
                done,
                was_complete: progress.complete,
            });
            return Ok(true);
        }
    }
}

fn open_reader(claimed: &Claimed) -> Result<RequestReader<BufReader<File>>, FrontierError> {
    let file = claimed
        .open()
        .map_err(|e| FrontierError::spool(format!("open {}", claimed.path().display()), e))?;
    RequestReader::new(BufReader::with_capacity(64 * 1024, file)).map_err(|e| {
        FrontierError::RequestFile {
            path: claimed.path().to_owned(),
            source: std::io::Error::other(e.to_string()),
        }
    })
}

/// Reads the whole file once; the error text names the bad line.
fn validate(claimed: &Claimed) -> Result<(), String> {
    let file = claimed.open().map_err(|e| e.to_string())?;
    let mut reader = RequestReader::new(BufReader::with_capacity(64 * 1024, file))
        .map_err(|e| format!("bad request file: {e}"))?;
    let mut req = Request::default();
    loop {
        match reader.read_into(&mut req) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(format!("bad request file: {e}")),
        }
    }
}

/// The progress keys in `meta` (for cleaning up after files that are gone).
pub(crate) fn progress_keys(store: &Store) -> Result<Vec<Vec<u8>>, FrontierError> {
    let mut keys = Vec::new();
    store.scan(
        Cf::Meta,
        META_FILE_PREFIX.as_bytes(),
        |key, _: FileProgress| {
            keys.push(key.to_vec());
            Ok(true)
        },
    )?;
    Ok(keys)
}
