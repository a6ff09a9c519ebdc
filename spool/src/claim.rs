//! Claiming spool files: exactly one consumer among many gets each file, with no locks.
//!
//! A [`Consumer`] claims a file by renaming it from `<dir>/<name>` into
//! `<dir>/.claimed/<consumer>/<name>`. Rename is atomic even on NFS, so exactly one
//! consumer wins; the others get `ENOENT` and move on silently. The winner holds a
//! [`Claimed`] handle and, once the file is processed, calls [`Claimed::done`] (delete)
//! or [`Claimed::done_into`] (move it elsewhere, e.g. into storage). A file that cannot
//! be processed goes to `.bad/` with a `.why` note ([`Claimed::quarantine`]); it never
//! stops the consumer.
//!
//! After a restart a consumer first finishes what is already in its own `.claimed/`
//! ([`Consumer::resume`]). A file may therefore be processed twice (crash after the
//! work, before `done`): processing must be idempotent or deduplicated downstream.
//! [`release_claims`] gives a dead consumer's files back to the folder.
//!
//! This module must never delete or move a file it has not claimed, never hold a lock,
//! and never panic on what it finds on disk. Claiming lists the folder, which costs
//! O(files): claim in batches ([`Consumer::claim_batch`]) rather than one at a time when
//! the folder is large. Claims and deletions are not fsynced: a crash can only undo
//! them, which at worst makes a file be processed again.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::ids::ComponentId;
use crate::layout::{SpoolDir, SpoolError, list_names, sync_dir, sync_parent};
use crate::name::SpoolName;
use crate::publish::{create_tmp, durable_rename, remove_own_tmp};

/// Claims and finishes files of one spool folder under one consumer id.
#[derive(Debug, Clone)]
pub struct Consumer {
    dir: SpoolDir,
    id: ComponentId,
    claimed: PathBuf,
}

impl Consumer {
    /// A consumer of `dir`. Creates `.claimed/<id>/` and deletes the temp files of
    /// `.why` notes a previous run of `id` left half-written. Consumer ids must be
    /// unique among live consumers of a folder.
    pub fn new(dir: SpoolDir, id: ComponentId) -> Result<Self, SpoolError> {
        let claimed = dir.claimed_dir(&id);
        crate::layout::create_dir_all_shared(&claimed).map_err(|source| SpoolError::CreateDir {
            path: claimed.clone(),
            source,
        })?;
        let cleaned = remove_own_tmp(&dir.tmp_dir(), &id, |name| {
            name.strip_suffix(".why")
                .is_some_and(|n| n.parse::<SpoolName>().is_ok())
        });
        match cleaned {
            Ok(_) => {}
            // Half-written notes are harmless; the next start (or
            // `remove_stale_tmp`) removes them. An NFS blip must not stop the start.
            Err(e) if e.is_transient() => {
                tracing::warn!(error = %e, "cleaning old note temp files failed; left for later");
            }
            Err(e) => return Err(e),
        }
        Ok(Self { dir, id, claimed })
    }

    /// The folder consumed.
    pub fn dir(&self) -> &SpoolDir {
        &self.dir
    }

    /// This consumer's id.
    pub fn id(&self) -> &ComponentId {
        &self.id
    }

    /// `.claimed/<id>/`, where this consumer's claimed files wait.
    pub fn claimed_dir(&self) -> &Path {
        &self.claimed
    }

    /// The files this consumer claimed and did not finish (left by a previous run),
    /// in `(priority, seq, producer)` order. Process these before claiming more.
    pub fn resume(&self) -> Result<Vec<Claimed>, SpoolError> {
        let mut names = list_names(&self.claimed)?;
        names.sort();
        Ok(names.into_iter().map(|n| self.handle(n)).collect())
    }

    /// Claims the most urgent, oldest file, if any. Lists the folder: O(files).
    pub fn claim_next(&self) -> Result<Option<Claimed>, SpoolError> {
        Ok(self.claim_batch(1)?.pop())
    }

    /// Claims up to `n` files in `(priority, seq, producer)` order, skipping those other
    /// consumers win. One folder listing: O(files). Empty when nothing is waiting.
    pub fn claim_batch(&self, n: usize) -> Result<Vec<Claimed>, SpoolError> {
        let mut batch = Vec::new();
        if n == 0 {
            return Ok(batch);
        }
        let names = match self.dir.list() {
            Ok(names) => names,
            // An NFS blip: nothing claimed this round; the next scan lists again.
            Err(e) if e.is_transient() => {
                tracing::warn!(error = %e, "listing a spool folder failed; retrying on the next scan");
                return Ok(batch);
            }
            Err(e) => return Err(e),
        };
        for name in names {
            if let Some(claimed) = self.claim(name)? {
                batch.push(claimed);
                if batch.len() == n {
                    break;
                }
            }
        }
        Ok(batch)
    }

    /// Tries to claim the file `name`: `Ok(None)` if it is gone (another consumer won)
    /// or if the rename failed for a passing reason ([`SpoolError::is_transient`]:
    /// EIO, ESTALE on NFS) and did not happen: the file stays where it is for the next
    /// scan. A transient failure of a rename the server did carry out counts as won.
    pub fn claim(&self, name: SpoolName) -> Result<Option<Claimed>, SpoolError> {
        let file_name = name.to_string();
        let from = self.dir.path().join(&file_name);
        let to = self.claimed.join(&file_name);
        match fs::rename(&from, &to) {
            Ok(()) => Ok(Some(self.handle(name))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if to.exists() {
                    // NFS can retransmit a rename the server already did: we won.
                    Ok(Some(self.handle(name)))
                } else if !self.claimed.is_dir() {
                    // The ENOENT is about our own folder, not a lost race.
                    Err(SpoolError::Rename {
                        from,
                        to,
                        source: e,
                    })
                } else {
                    Ok(None)
                }
            }
            Err(e) if crate::layout::is_transient_io(&e) => {
                if to.exists() {
                    Ok(Some(self.handle(name)))
                } else {
                    tracing::warn!(file = %from.display(), error = %e, "claiming failed; retrying on the next scan");
                    Ok(None)
                }
            }
            Err(source) => Err(SpoolError::Rename { from, to, source }),
        }
    }

    fn handle(&self, name: SpoolName) -> Claimed {
        Claimed {
            path: self.claimed.join(name.to_string()),
            name,
            dir: self.dir.clone(),
            consumer: self.id.clone(),
        }
    }
}

/// A file this consumer owns until it calls [`done`](Claimed::done),
/// [`done_into`](Claimed::done_into) or [`quarantine`](Claimed::quarantine). Dropping it
/// leaves the file claimed, to be found again by [`Consumer::resume`].
#[derive(Debug)]
pub struct Claimed {
    path: PathBuf,
    name: SpoolName,
    dir: SpoolDir,
    consumer: ComponentId,
}

impl Claimed {
    /// Where the claimed file is now (`.claimed/<consumer>/<name>`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's parsed name.
    pub fn name(&self) -> &SpoolName {
        &self.name
    }

    /// Opens the file for reading.
    pub fn open(&self) -> Result<File, SpoolError> {
        File::open(&self.path).map_err(|source| SpoolError::File {
            path: self.path.clone(),
            source,
        })
    }

    /// Reads the whole file.
    pub fn read(&self) -> Result<Vec<u8>, SpoolError> {
        fs::read(&self.path).map_err(|source| SpoolError::File {
            path: self.path.clone(),
            source,
        })
    }

    /// The file is processed: delete it. A file already gone (released and finished by
    /// someone else) is not an error.
    pub fn done(self) -> Result<(), SpoolError> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(SpoolError::Remove {
                path: self.path,
                source,
            }),
        }
    }

    /// The file is processed: move it to `dest` (a full path on the same file system,
    /// e.g. into storage) and fsync `dest`'s folder.
    pub fn done_into(self, dest: &Path) -> Result<(), SpoolError> {
        fs::rename(&self.path, dest).map_err(|source| SpoolError::Rename {
            from: self.path.clone(),
            to: dest.to_owned(),
            source,
        })?;
        sync_parent(dest)
    }

    /// The file cannot be processed: write `.bad/<name>.why` (reason, consumer, time;
    /// crash-safely), move the file to `.bad/<name>`, and log a warning. Returns the
    /// quarantined path. On error the file stays claimed (and is retried on resume).
    pub fn quarantine(self, reason: &str) -> Result<PathBuf, SpoolError> {
        let file_name = self.name.to_string();
        let bad = self.dir.bad_dir();
        let why_name = format!("{file_name}.why");
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let note = format!(
            "file: {file_name}\nconsumer: {}\ntime: {} ({now})\nreason: {reason}\n",
            self.consumer,
            rfc3339_utc(now),
        );
        let (mut file, tmp) = create_tmp(&self.dir.tmp_dir(), &why_name, &self.consumer)?;
        if let Err(source) = file.write_all(note.as_bytes()) {
            let _ = fs::remove_file(&tmp);
            return Err(SpoolError::File { path: tmp, source });
        }
        let why = bad.join(&why_name);
        if let Err(err) = durable_rename(file, &tmp, &why) {
            let _ = fs::remove_file(&tmp);
            return Err(err);
        }
        let dest = bad.join(&file_name);
        fs::rename(&self.path, &dest).map_err(|source| SpoolError::Rename {
            from: self.path.clone(),
            to: dest.clone(),
            source,
        })?;
        sync_dir(&bad)?;
        tracing::warn!(
            file = %dest.display(),
            consumer = %self.consumer,
            reason,
            "quarantined spool file"
        );
        Ok(dest)
    }
}

/// Moves every file in `.claimed/<dead_consumer>/` back into the folder, so other
/// consumers pick them up; for the manager or an operator recovering the work of a
/// consumer known to be dead (never call it for a live one: its files would be
/// processed twice). Removes the emptied `.claimed/<dead_consumer>/`. Returns how many
/// files were released. O(files claimed).
pub fn release_claims(dir: &SpoolDir, dead_consumer: &ComponentId) -> Result<usize, SpoolError> {
    let claimed = dir.claimed_dir(dead_consumer);
    if !claimed.is_dir() {
        return Ok(0);
    }
    let mut released = 0;
    for name in list_names(&claimed)? {
        let file_name = name.to_string();
        let from = claimed.join(&file_name);
        let to = dir.path().join(&file_name);
        match fs::rename(&from, &to) {
            Ok(()) => released += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(SpoolError::Rename { from, to, source }),
        }
    }
    if released > 0 {
        sync_dir(dir.path())?;
    }
    // Only succeeds when empty; a stray foreign file keeps the folder, harmlessly.
    let _ = fs::remove_dir(&claimed);
    Ok(released)
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
fn rfc3339_utc(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::test_support::TestDir;
    use crate::name::{FileKind, Priority};
    use crate::publish::Publisher;

    fn id(s: &str) -> ComponentId {
        ComponentId::new(s).unwrap()
    }

    fn setup(label: &str) -> (TestDir, SpoolDir, Publisher) {
        let t = TestDir::new(label);
        let dir = SpoolDir::open(t.path().join("pages")).unwrap();
        let publisher = Publisher::new(dir.clone(), id("dl-1")).unwrap();
        (t, dir, publisher)
    }

    #[test]
    fn claims_in_priority_then_fifo_order() {
        let (_t, dir, publisher) = setup("order");
        let p = |n| Priority::new(n).unwrap();
        for (prio, body) in [(5, "a"), (1, "b"), (5, "c"), (0, "d")] {
            publisher
                .publish(p(prio), FileKind::PageBatch, body.as_bytes())
                .unwrap();
        }
        let consumer = Consumer::new(dir.clone(), id("app-x")).unwrap();
        let batch = consumer.claim_batch(3).unwrap();
        let bodies: Vec<_> = batch.iter().map(|c| c.read().unwrap()).collect();
        assert_eq!(bodies, [b"d", b"b", b"a"]);
        for c in batch {
            assert!(c.path().starts_with(dir.claimed_dir(&id("app-x"))));
            c.done().unwrap();
        }
        let last = consumer.claim_next().unwrap().unwrap();
        assert_eq!(last.read().unwrap(), b"c");
        last.done().unwrap();
        assert!(consumer.claim_next().unwrap().is_none());
        assert!(consumer.claim_batch(0).unwrap().is_empty());
    }

    #[test]
    fn losing_a_race_is_silent() {
        let (_t, dir, publisher) = setup("race");
        publisher
            .publish(Priority::NORMAL, FileKind::PageBatch, b"x")
            .unwrap();
        let name = dir.list().unwrap().remove(0);
        let a = Consumer::new(dir.clone(), id("a")).unwrap();
        let b = Consumer::new(dir, id("b")).unwrap();
        assert!(a.claim(name.clone()).unwrap().is_some());
        assert!(b.claim(name).unwrap().is_none());
    }

    #[test]
    fn resume_returns_unfinished_claims() {
        let (_t, dir, publisher) = setup("resume");
        for i in 0..5u8 {
            publisher
                .publish(Priority::NORMAL, FileKind::PageBatch, &[i])
                .unwrap();
        }
        let consumer = Consumer::new(dir.clone(), id("app")).unwrap();
        let mut batch = consumer.claim_batch(3).unwrap();
        batch.remove(0).done().unwrap();
        drop(batch); // "crash": two claimed, unfinished
        let restarted = Consumer::new(dir.clone(), id("app")).unwrap();
        let resumed: Vec<_> = restarted
            .resume()
            .unwrap()
            .into_iter()
            .map(|c| c.read().unwrap())
            .collect();
        assert_eq!(resumed, [[1], [2]]);
        assert_eq!(dir.list().unwrap().len(), 2);
    }

    #[test]
    fn quarantine_writes_why_and_moves_file() {
        let (_t, dir, publisher) = setup("bad");
        publisher
            .publish(Priority::NORMAL, FileKind::PageBatch, b"junk")
            .unwrap();
        let consumer = Consumer::new(dir.clone(), id("app")).unwrap();
        let claimed = consumer.claim_next().unwrap().unwrap();
        let name = claimed.name().to_string();
        let dest = claimed.quarantine("not a WARC file").unwrap();
        assert_eq!(dest, dir.bad_dir().join(&name));
        assert_eq!(fs::read(&dest).unwrap(), b"junk");
        let why = fs::read_to_string(dir.bad_dir().join(format!("{name}.why"))).unwrap();
        assert!(why.contains("reason: not a WARC file"), "{why}");
        assert!(why.contains("consumer: app"), "{why}");
        assert!(why.contains(&format!("file: {name}")), "{why}");
        assert!(consumer.resume().unwrap().is_empty());
        assert_eq!(fs::read_dir(dir.tmp_dir()).unwrap().count(), 0);
    }

    #[test]
    fn done_into_moves_and_release_claims_gives_back() {
        let (t, dir, publisher) = setup("release");
        for i in 0..3u8 {
            publisher
                .publish(Priority::NORMAL, FileKind::PageBatch, &[i])
                .unwrap();
        }
        let dead = Consumer::new(dir.clone(), id("dead")).unwrap();
        let mut batch = dead.claim_batch(3).unwrap();
        let stored = t.path().join("stored.warc.gz");
        batch.remove(0).done_into(&stored).unwrap();
        assert_eq!(fs::read(&stored).unwrap(), [0]);
        drop(batch);
        assert!(dir.list().unwrap().is_empty());

        assert_eq!(release_claims(&dir, &id("dead")).unwrap(), 2);
        assert_eq!(dir.list().unwrap().len(), 2);
        assert!(!dir.claimed_dir(&id("dead")).exists());
        assert_eq!(release_claims(&dir, &id("dead")).unwrap(), 0);
        let alive = Consumer::new(dir, id("alive")).unwrap();
        assert_eq!(alive.claim_batch(10).unwrap().len(), 2);
    }

    #[test]
    fn rfc3339_golden() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_767_225_599), "2025-12-31T23:59:59Z");
    }
}
