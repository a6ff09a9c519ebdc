//! The seed-by-seed crawl's own files in `state_dir`: the state (`seeds.state`,
//! rewritten whole by publish-rename), the candidate seeds and `parties.tsv`
//! (appended, synced before each state save), and the held-seeds sample (when
//! asked for). It also keeps when the state is due for saving.
//!
//! It must never decide what goes into these files (the crawl and its holdings
//! do) nor touch the spool.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spool::publish::durable_rename;

use super::SeedsConfig;
use app_core::AppError;

/// The state file's first line. Version 2 keeps one Bloom filter per site (`b`
/// lines) where version 1 listed every URL each party met (`s` lines); a version
/// 1 file is still read (its URLs go into the filters).
const STATE_HEADER: &str = "polycrawl-seeds-state 2";

/// The first line of a version 1 state file.
const STATE_HEADER_V1: &str = "polycrawl-seeds-state 1";

/// While busy, the state is saved (and the batches it covers stored) at most this
/// often; when idle, at once.
const SAVE_EVERY: Duration = Duration::from_millis(200);

/// How often the held-seeds sample is written.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The sample file's header (milliseconds since this run started; held seeds per
/// worker comma-separated).
const SAMPLE_HEADER: &str = "#ms\tqueued\tactive\tfinished\tpages\theld_per_worker\n";

pub(super) fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> AppError + '_ {
    move |source| AppError::File {
        path: path.to_owned(),
        source,
    }
}

fn append(path: &Path) -> Result<File, AppError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(file_error(path))
}

/// An appended file and its path (for errors).
#[derive(Debug)]
struct Appended {
    file: File,
    path: PathBuf,
}

impl Appended {
    fn open(path: PathBuf) -> Result<Self, AppError> {
        Ok(Self {
            file: append(&path)?,
            path,
        })
    }

    fn write(&mut self, text: &str) -> Result<(), AppError> {
        self.file
            .write_all(text.as_bytes())
            .map_err(file_error(&self.path))
    }

    fn sync(&self) -> Result<(), AppError> {
        self.file.sync_data().map_err(file_error(&self.path))
    }
}

/// The crawl's files and when the state was saved.
#[derive(Debug)]
pub(super) struct Records {
    state_dir: PathBuf,
    /// Candidate seeds: every input seed and every external link (per party once).
    candidates: Appended,
    /// Finished parties: seed, pages, worker (one line each).
    party_log: Appended,
    /// Held seeds per worker, every second (when asked for), and when last written.
    sample: Option<(Appended, Instant)>,
    /// Something changed since the last save.
    dirty: bool,
    saved_at: Instant,
}

impl Records {
    /// Opens (creates) the files in `state_dir`.
    pub(super) fn open(seeds: &SeedsConfig, state_dir: PathBuf) -> Result<Self, AppError> {
        fs::create_dir_all(&state_dir).map_err(file_error(&state_dir))?;
        let sample = match &seeds.sample_file {
            Some(path) => {
                let mut file = Appended::open(path.clone())?;
                let empty = file.file.metadata().map_err(file_error(path))?.len() == 0;
                if empty {
                    file.write(SAMPLE_HEADER)?;
                }
                Some((file, Instant::now() - SAMPLE_EVERY))
            }
            None => None,
        };
        Ok(Self {
            candidates: Appended::open(seeds.candidates_path(&state_dir))?,
            party_log: Appended::open(state_dir.join("parties.tsv"))?,
            sample,
            dirty: false,
            saved_at: Instant::now(),
            state_dir,
        })
    }

    /// No state was saved yet: this is the crawl's first start.
    pub(super) fn first_start(&self) -> bool {
        !self.state_path().exists()
    }

    /// Appends candidate seeds (lines).
    pub(super) fn candidates(&mut self, lines: &str) -> Result<(), AppError> {
        self.candidates.write(lines)
    }

    /// Appends finished parties' lines.
    pub(super) fn parties(&mut self, lines: &str) -> Result<(), AppError> {
        self.party_log.write(lines)
    }

    /// Appends the sample line `line` makes, once a second (if asked for).
    pub(super) fn sample(&mut self, line: impl FnOnce() -> String) -> Result<(), AppError> {
        let Some((file, at)) = &mut self.sample else {
            return Ok(());
        };
        if at.elapsed() < SAMPLE_EVERY {
            return Ok(());
        }
        *at = Instant::now();
        file.write(&line())
    }

    /// Something changed that the next save must cover.
    pub(super) fn changed(&mut self) {
        self.dirty = true;
    }

    /// A save is due: something changed, and the loop was idle (`worked` false) or
    /// the last save is [`SAVE_EVERY`] old.
    pub(super) fn save_due(&self, worked: bool) -> bool {
        self.dirty && (!worked || self.saved_at.elapsed() >= SAVE_EVERY)
    }

    /// Writes the state (`body` after the header) durably, the candidates and
    /// party log synced first.
    pub(super) fn save(&mut self, body: &str) -> Result<(), AppError> {
        self.candidates.sync()?;
        self.party_log.sync()?;
        let path = self.state_path();
        let tmp = self.state_dir.join("seeds.state.tmp");
        let mut file = File::create(&tmp).map_err(file_error(&tmp))?;
        file.write_all(format!("{STATE_HEADER}\n").as_bytes())
            .and_then(|()| file.write_all(body.as_bytes()))
            .map_err(file_error(&tmp))?;
        durable_rename(file, &tmp, &path)?;
        self.dirty = false;
        self.saved_at = Instant::now();
        Ok(())
    }

    /// Reads the saved state; `read` gets its lines after the header.
    pub(super) fn load<T>(
        &self,
        read: impl FnOnce(&mut std::str::Lines<'_>, &Path) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let path = self.state_path();
        let text = fs::read_to_string(&path).map_err(file_error(&path))?;
        let mut lines = text.lines();
        if !matches!(lines.next(), Some(STATE_HEADER | STATE_HEADER_V1)) {
            return Err(AppError::BadState {
                path,
                line: text.lines().next().unwrap_or("").to_owned(),
            });
        }
        read(&mut lines, &path)
    }

    /// `<state_dir>/seeds.state`.
    fn state_path(&self) -> PathBuf {
        self.state_dir.join("seeds.state")
    }
}
