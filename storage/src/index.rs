//! The CDXJ index folder `<repo>/index/`: sorted files named by the range of batch
//! sequence numbers they cover, `<first>-<last>.cdxj` (12 digits each).
//!
//! - **Write**: each ingested batch gets its own sorted file `<seq>-<seq>.cdxj`,
//!   written to `.tmp/` and moved in with a crash-safe rename, so a file is complete
//!   or absent. Re-ingesting a batch after a crash rewrites the same name: no line is
//!   ever indexed twice.
//! - **Look up** (`IndexDir::lookup`): every file is sorted, so one key is found in
//!   each by binary search over byte offsets (`pread` of 4 KiB pieces, no mmap):
//!   O(F · log S) reads for F files of S bytes, then the key's lines read in order.
//! - **Merge** (`IndexDir::compact`): size-tiered, like an LSM tree: when
//!   `fanout` files of one level (level k covers about `fanout^k` batches) exist,
//!   they are merged into one file of the next level by a k-way merge — sequential
//!   I/O, O(lines · log fanout) CPU. Each line is rewritten O(log_fanout B) times
//!   over B batches, and a lookup touches at most (fanout − 1) files per level:
//!   with fanout 8 and a million batches, ≤ 7 × 7 = 49 files. `IndexDir::compact`
//!   with `full` merges everything into one file (a quiet-time job for operators).
//!   Only contiguous runs of completed batches are merged (a batch still pending is
//!   never part of a merge), so a merged range never hides a later file.
//! - **Crash safety of a merge**: the merged file is renamed in first, then the
//!   inputs deleted. A crash in between leaves inputs whose range lies inside the
//!   merged file's: `IndexDir::cleanup` (run at open) deletes them. Readers in other
//!   processes may meanwhile see a line twice (harmless for lookups) or find a file
//!   gone (they list again).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::cdxj::CdxjLine;
use crate::error::{Result, StorageError};
use crate::fsutil::{TmpFile, sync_dir};

/// One index file and the batches it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexFile {
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) path: PathBuf,
}

impl IndexFile {
    fn span(&self) -> u64 {
        self.last - self.first + 1
    }

    fn covers(&self, other: &IndexFile) -> bool {
        self != other && self.first <= other.first && other.last <= self.last
    }
}

/// A line found by a lookup, with the `last` sequence number of its file (newer
/// files win ties).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) line: CdxjLine,
    pub(crate) seq: u64,
}

/// The index folder.
#[derive(Debug, Clone)]
pub(crate) struct IndexDir {
    path: PathBuf,
}

const PIECE: usize = 4096;

impl IndexDir {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self { path }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn file_name(first: u64, last: u64) -> String {
        format!("{first:012}-{last:012}.cdxj")
    }

    /// The index files, by first sequence number (then widest first).
    pub(crate) fn list(&self) -> Result<Vec<IndexFile>> {
        let mut files = Vec::new();
        for entry in fs::read_dir(&self.path).map_err(StorageError::io(&self.path))? {
            let entry = entry.map_err(StorageError::io(&self.path))?;
            let name = entry.file_name();
            let Some((first, last)) = name.to_str().and_then(parse_name) else {
                continue;
            };
            files.push(IndexFile {
                first,
                last,
                path: entry.path(),
            });
        }
        files.sort_by_key(|f| (f.first, Reverse(f.last)));
        Ok(files)
    }

    /// Deletes files left by an interrupted merge (covered by another file's range).
    /// Returns how many. Only the repository's single writer may call this.
    pub(crate) fn cleanup(&self) -> Result<usize> {
        let files = self.list()?;
        let mut removed = 0;
        for f in &files {
            if files.iter().any(|g| g.covers(f)) {
                remove(&f.path)?;
                removed += 1;
            }
        }
        if removed > 0 {
            sync_dir(&self.path)?;
        }
        Ok(removed)
    }

    /// Writes the index file of batch `seq` from its lines (sorted here).
    pub(crate) fn write_batch(&self, seq: u64, mut lines: Vec<String>, tmp: &Path) -> Result<()> {
        lines.sort_unstable();
        lines.dedup();
        let dest = self.path.join(Self::file_name(seq, seq));
        let mut out = TmpFile::create(tmp, &dest)?;
        for line in &lines {
            out.write_all(line.as_bytes())
                .map_err(StorageError::io(&dest))?;
        }
        out.commit()
    }

    /// Deletes the index file of batch `seq` if there is one (an ingest that did not
    /// commit: its lines point at bytes cut from the WARC file). Single writer only.
    pub(crate) fn forget_batch(&self, seq: u64) -> Result<bool> {
        let path = self.path.join(Self::file_name(seq, seq));
        if !path.is_file() {
            return Ok(false);
        }
        remove(&path)?;
        sync_dir(&self.path)?;
        Ok(true)
    }

    /// Calls `line` for every line of every index file, file by file (each sorted by
    /// key; files in batch order). A file whose range another file covers (left by an
    /// interrupted merge) is skipped, so no line comes twice. O(lines) time, one line
    /// in memory. Meant for a repository no ingest is writing to: a file deleted by a
    /// concurrent merge is an error (nothing can undo the lines already given).
    pub(crate) fn for_each(&self, mut line: impl FnMut(CdxjLine)) -> Result<()> {
        let files = self.list()?;
        let mut text = String::new();
        for f in files.iter().filter(|f| !files.iter().any(|g| g.covers(f))) {
            let file = File::open(&f.path).map_err(StorageError::io(&f.path))?;
            let mut reader = BufReader::with_capacity(256 * 1024, file);
            let mut offset = 0u64;
            loop {
                text.clear();
                let n = reader
                    .read_line(&mut text)
                    .map_err(StorageError::io(&f.path))?;
                if n == 0 {
                    break;
                }
                let parsed =
                    CdxjLine::parse(text.trim_end_matches(['\n', '\r'])).map_err(|reason| {
                        StorageError::BadIndexLine {
                            path: f.path.clone(),
                            offset,
                            reason,
                        }
                    })?;
                line(parsed);
                offset += n as u64;
            }
        }
        Ok(())
    }

    /// Every line whose key is `key`, from every file. Retries when a concurrent merge
    /// deletes a file between listing and opening it.
    pub(crate) fn lookup(&self, key: &str) -> Result<Vec<Found>> {
        let target = format!("{key} ");
        let mut attempts = 0;
        'again: loop {
            let mut found = Vec::new();
            for f in self.list()? {
                let file = match File::open(&f.path) {
                    Ok(file) => file,
                    Err(e) if e.kind() == io::ErrorKind::NotFound && attempts < 5 => {
                        attempts += 1;
                        continue 'again;
                    }
                    Err(e) => return Err(StorageError::io(&f.path)(e)),
                };
                search_file(&file, &f, target.as_bytes(), &mut found)?;
            }
            return Ok(found);
        }
    }

    /// Size-tiered merging (see the module docs): merges runs of `fanout` files of one
    /// level, covering only batches below `below_seq` (the oldest pending batch), until
    /// no level has `fanout` such files; with `full`, merges all of them into one.
    /// Returns how many merges ran.
    pub(crate) fn compact(
        &self,
        fanout: u64,
        below_seq: u64,
        full: bool,
        tmp: &Path,
    ) -> Result<usize> {
        let fanout = fanout.max(2);
        let mut merges = 0;
        loop {
            let files: Vec<IndexFile> = self
                .list()?
                .into_iter()
                .filter(|f| f.last < below_seq)
                .collect();
            let run = if full {
                (files.len() >= 2).then_some(files)
            } else {
                tiered_run(&files, fanout)
            };
            let Some(run) = run else {
                return Ok(merges);
            };
            if !contiguous(&run) {
                tracing::warn!(
                    index = %self.path.display(),
                    "index files do not cover contiguous batches; not merging them"
                );
                return Ok(merges);
            }
            self.merge(&run, tmp)?;
            merges += 1;
        }
    }

    /// Merges `inputs` (contiguous, sorted) into one file, then deletes them.
    fn merge(&self, inputs: &[IndexFile], tmp: &Path) -> Result<()> {
        let (Some(a), Some(b)) = (inputs.first(), inputs.last()) else {
            return Ok(());
        };
        let dest = self.path.join(Self::file_name(a.first, b.last));
        let mut out = TmpFile::create(tmp, &dest)?;
        merge_lines(inputs, |line| {
            out.write_all(line.as_bytes())
                .map_err(StorageError::io(&dest))
        })?;
        out.commit()?;
        for f in inputs {
            remove(&f.path)?;
        }
        sync_dir(&self.path)
    }

    /// Hands every line of the index to `line` in one sorted stream (each with its
    /// `\n`, no line twice), by a k-way merge of the files: O(lines · log files)
    /// time, one line per file in memory. For a repository no ingest writes to.
    pub(crate) fn for_each_sorted(&self, line: impl FnMut(&str) -> Result<()>) -> Result<()> {
        let files = self.list()?;
        let live: Vec<IndexFile> = files
            .iter()
            .filter(|f| !files.iter().any(|g| g.covers(f)))
            .cloned()
            .collect();
        merge_lines(&live, line)
    }
}

/// The k-way merge of sorted index files: every distinct line once, in order.
fn merge_lines(inputs: &[IndexFile], mut out: impl FnMut(&str) -> Result<()>) -> Result<()> {
    let mut readers = Vec::with_capacity(inputs.len());
    for f in inputs {
        let file = File::open(&f.path).map_err(StorageError::io(&f.path))?;
        readers.push((BufReader::with_capacity(64 * 1024, file), &f.path));
    }
    let mut heap = BinaryHeap::new();
    let next = |i: usize, readers: &mut Vec<(BufReader<File>, &PathBuf)>| {
        let (r, path) = &mut readers[i];
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) => Ok(None),
            Ok(_) => {
                if !line.ends_with('\n') {
                    line.push('\n');
                }
                Ok(Some(Reverse((line, i))))
            }
            Err(e) => Err(StorageError::io(*path)(e)),
        }
    };
    for i in 0..readers.len() {
        if let Some(item) = next(i, &mut readers)? {
            heap.push(item);
        }
    }
    let mut last = String::new();
    while let Some(Reverse((line, i))) = heap.pop() {
        if line != last {
            out(&line)?;
            last = line;
        }
        if let Some(item) = next(i, &mut readers)? {
            heap.push(item);
        }
    }
    Ok(())
}

/// The oldest run of `fanout` files at the lowest level that has that many.
fn tiered_run(files: &[IndexFile], fanout: u64) -> Option<Vec<IndexFile>> {
    let level = |f: &IndexFile| f.span().ilog(fanout);
    let max_level = files.iter().map(level).max()?;
    for lvl in 0..=max_level {
        let at: Vec<IndexFile> = files.iter().filter(|f| level(f) == lvl).cloned().collect();
        if at.len() as u64 >= fanout {
            return Some(at.into_iter().take(fanout as usize).collect());
        }
    }
    None
}

fn contiguous(run: &[IndexFile]) -> bool {
    run.windows(2).all(|w| w[0].last + 1 == w[1].first)
}

fn parse_name(name: &str) -> Option<(u64, u64)> {
    let stem = name.strip_suffix(".cdxj")?;
    let (a, b) = stem.split_once('-')?;
    let digits = |s: &str| s.len() == 12 && s.bytes().all(|c| c.is_ascii_digit());
    if !digits(a) || !digits(b) {
        return None;
    }
    let (a, b) = (a.parse().ok()?, b.parse().ok()?);
    (a <= b).then_some((a, b))
}

fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io(path)(e)),
    }
}

/// Appends the lines of `f` that start with `target` (`key` and a space).
fn search_file(file: &File, f: &IndexFile, target: &[u8], found: &mut Vec<Found>) -> Result<()> {
    let io_err = StorageError::io(&f.path);
    let len = file.metadata().map_err(StorageError::io(&f.path))?.len();
    let start = lower_bound(file, len, target).map_err(io_err)?;
    let mut reader = BufReader::new(file);
    reader
        .seek(SeekFrom::Start(start))
        .map_err(StorageError::io(&f.path))?;
    let mut pos = start;
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(StorageError::io(&f.path))?;
        if n == 0 || !line.as_bytes().starts_with(target) {
            return Ok(());
        }
        let parsed = CdxjLine::parse(line.trim_end_matches('\n')).map_err(|reason| {
            StorageError::BadIndexLine {
                path: f.path.clone(),
                offset: pos,
                reason,
            }
        })?;
        found.push(Found {
            line: parsed,
            seq: f.last,
        });
        pos += n as u64;
    }
}

/// Offset of the first line (in a sorted file of `len` bytes) that is not less than
/// `target`, or `len`.
fn lower_bound(file: &File, len: u64, target: &[u8]) -> io::Result<u64> {
    // Invariant: `lo` is a line start and every line before it is < target; `hi` is a
    // line start (or len) and the line there is >= target.
    let (mut lo, mut hi) = (0u64, len);
    let mut line = Vec::new();
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let s = line_start_at_or_after(file, len, mid)?;
        if s >= hi {
            // No line starts in [mid, hi): finish with a scan from lo.
            let mut p = lo;
            while p < hi {
                let next = line_at(file, len, p, &mut line)?;
                if line.as_slice() >= target {
                    return Ok(p);
                }
                p = next;
            }
            return Ok(hi);
        }
        let next = line_at(file, len, s, &mut line)?;
        if line.as_slice() < target {
            lo = next;
        } else {
            hi = s;
        }
    }
    Ok(lo)
}

/// The first line start at or after `pos`.
fn line_start_at_or_after(file: &File, len: u64, pos: u64) -> io::Result<u64> {
    if pos == 0 {
        return Ok(0);
    }
    let mut p = pos - 1;
    let mut buf = [0u8; PIECE];
    while p < len {
        let n = read_piece(file, len, p, &mut buf)?;
        if let Some(i) = buf[..n].iter().position(|&b| b == b'\n') {
            return Ok(p + i as u64 + 1);
        }
        p += n as u64;
    }
    Ok(len)
}

/// Reads the line starting at `pos` into `line` (without `\n`); returns the next
/// line's start.
fn line_at(file: &File, len: u64, pos: u64, line: &mut Vec<u8>) -> io::Result<u64> {
    line.clear();
    let mut p = pos;
    let mut buf = [0u8; PIECE];
    while p < len {
        let n = read_piece(file, len, p, &mut buf)?;
        if let Some(i) = buf[..n].iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&buf[..i]);
            return Ok(p + i as u64 + 1);
        }
        line.extend_from_slice(&buf[..n]);
        p += n as u64;
    }
    Ok(len)
}

fn read_piece(file: &File, len: u64, pos: u64, buf: &mut [u8; PIECE]) -> io::Result<usize> {
    let want = (len - pos).min(PIECE as u64) as usize;
    file.read_exact_at(&mut buf[..want], pos)?;
    Ok(want)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(key: &str, ts: &str, offset: u64) -> String {
        let mut s = String::new();
        CdxjLine {
            key: key.into(),
            timestamp: ts.into(),
            url: format!("http://{key}"),
            mime: "text/html".into(),
            status: "200".into(),
            digest: "-".into(),
            length: 10,
            offset,
            filename: "f.warc.gz".into(),
        }
        .encode(&mut s);
        s
    }

    fn setup() -> (tempfile::TempDir, IndexDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let idx = IndexDir::new(t.path().join("index"));
        fs::create_dir_all(idx.path()).unwrap();
        let tmp = t.path().join(".tmp");
        fs::create_dir_all(&tmp).unwrap();
        (t, idx, tmp)
    }

    #[test]
    fn binary_search_finds_every_key_in_a_big_file() {
        let (_t, idx, tmp) = setup();
        // Long and short lines, so the search crosses 4 KiB pieces mid-line.
        let keys: Vec<String> = (0..3000)
            .map(|i| format!("com,example)/{i:05}{}", "x".repeat(i % 7 * 300)))
            .collect();
        let mut lines = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            lines.push(line(k, "20260101000000", i as u64));
            if i % 3 == 0 {
                lines.push(line(k, "20270101000000", i as u64));
            }
        }
        idx.write_batch(1, lines, &tmp).unwrap();
        for (i, k) in keys.iter().enumerate().step_by(37) {
            let found = idx.lookup(k).unwrap();
            assert_eq!(found.len(), if i % 3 == 0 { 2 } else { 1 }, "{k}");
            assert!(found.iter().all(|f| f.line.key == *k && f.seq == 1));
        }
        assert!(idx.lookup("com,example)/").unwrap().is_empty());
        assert_eq!(idx.lookup("com,example)/00007").unwrap().len(), 1);
        assert!(
            idx.lookup("com,example)/00001").unwrap().is_empty(),
            "no prefix matches"
        );
        assert!(idx.lookup("zzz").unwrap().is_empty());
        assert!(idx.lookup("a").unwrap().is_empty());
    }

    #[test]
    fn tiered_merge_keeps_every_line_once() {
        let (_t, idx, tmp) = setup();
        for seq in 1..=20u64 {
            let lines = vec![
                line("com,example)/", &format!("2026010100{seq:04}"), seq),
                line(&format!("com,example)/{seq}"), "20260101000000", seq),
            ];
            idx.write_batch(seq, lines, &tmp).unwrap();
            idx.compact(4, 18, false, &tmp).unwrap();
        }
        let files = idx.list().unwrap();
        let names: Vec<(u64, u64)> = files.iter().map(|f| (f.first, f.last)).collect();
        // 16 batches in one level-2 file, 17 below the pending 18, then 18..20 alone.
        assert_eq!(names, [(1, 16), (17, 17), (18, 18), (19, 19), (20, 20)]);
        assert_eq!(idx.lookup("com,example)/").unwrap().len(), 20);
        assert_eq!(idx.lookup("com,example)/7").unwrap().len(), 1);

        idx.compact(4, u64::MAX, true, &tmp).unwrap();
        let names: Vec<(u64, u64)> = idx
            .list()
            .unwrap()
            .iter()
            .map(|f| (f.first, f.last))
            .collect();
        assert_eq!(names, [(1, 20)]);
        let all = idx.lookup("com,example)/").unwrap();
        assert_eq!(all.len(), 20);
        let mut ts: Vec<&str> = all.iter().map(|f| f.line.timestamp.as_str()).collect();
        let sorted = {
            let mut s = ts.clone();
            s.sort();
            s
        };
        assert_eq!(ts, sorted, "merged file is sorted");
        ts.dedup();
        assert_eq!(ts.len(), 20);
    }

    #[test]
    fn for_each_gives_every_line_once_even_beside_an_interrupted_merge() {
        let (_t, idx, tmp) = setup();
        for seq in 1..=3 {
            let lines = vec![
                line("b)/", "20260101000000", seq),
                line("a)/", "20260101000000", seq),
            ];
            idx.write_batch(seq, lines, &tmp).unwrap();
        }
        // A merge of batches 1 and 2 renamed in, its inputs not yet deleted.
        let mut merged = String::new();
        for seq in 1..=2 {
            for l in fs::read_to_string(idx.path().join(IndexDir::file_name(seq, seq)))
                .unwrap()
                .lines()
            {
                merged.push_str(l);
                merged.push('\n');
            }
        }
        fs::write(idx.path().join(IndexDir::file_name(1, 2)), merged).unwrap();
        let mut seen = Vec::new();
        idx.for_each(|l| seen.push((l.key, l.offset))).unwrap();
        seen.sort();
        let want: Vec<(String, u64)> = ["a)/", "b)/"]
            .iter()
            .flat_map(|k| (1..=3).map(move |seq| (k.to_string(), seq)))
            .collect();
        assert_eq!(seen, want);
        // A damaged line is an error naming the file.
        fs::write(idx.path().join(IndexDir::file_name(4, 4)), "junk\n").unwrap();
        let err = idx.for_each(|_| {}).unwrap_err().to_string();
        assert!(err.contains("000000000004-000000000004.cdxj"), "{err}");
    }

    #[test]
    fn cleanup_removes_inputs_of_an_interrupted_merge() {
        let (_t, idx, tmp) = setup();
        for seq in 1..=3 {
            idx.write_batch(seq, vec![line("a)/", "20260101000000", seq)], &tmp)
                .unwrap();
        }
        // A merge that renamed its output in but died before deleting the inputs.
        fs::copy(
            idx.path().join(IndexDir::file_name(1, 1)),
            idx.path().join(IndexDir::file_name(1, 2)),
        )
        .unwrap();
        assert_eq!(idx.cleanup().unwrap(), 2);
        let names: Vec<(u64, u64)> = idx
            .list()
            .unwrap()
            .iter()
            .map(|f| (f.first, f.last))
            .collect();
        assert_eq!(names, [(1, 2), (3, 3)]);
        assert_eq!(parse_name("000000000001-000000000002.cdxj"), Some((1, 2)));
        assert_eq!(parse_name("000000000003-000000000002.cdxj"), None);
        assert_eq!(parse_name("1-2.cdxj"), None);
    }
}
