//! [`Pool`]: the importance-ordered frontier (`app.order: importance`; DESIGN.md
//! section 7, "Importance order"). Cho and Garcia-Molina's back-link ordering: a
//! new URL is not requested when its merge finds it but held here, ranked by the
//! links to it the crawl has found so far, and the most-linked go to the crawling
//! system only as it runs low of this application's URLs, so the order is decided
//! as late as possible.
//!
//! **Counting.** Every link that passes the admission rules counts one toward its
//! target, found by key: a target held here is counted at once; any other goes
//! into the counts of the seen-set generation it was inserted under, because the
//! seen set says which keys are new only when that generation's merge finishes.
//! Then the new keys enter the pool with their counts, links to keys the pool
//! already holds (found while the merge ran) are added to them, and the rest (links
//! to URLs requested or fetched already) are dropped. In a split crawl in exchange
//! mode, an exchanged URL carries the links its sender counted (`links` in the
//! exchange line) and the owner adds them.
//!
//! **Releasing.** [`Pool::take`] hands out the `n` most-linked URLs (ties: lower
//! depth, then key order, so a run is repeatable). The crawl loop calls it when the
//! system holds fewer than the window of this application's URLs.
//!
//! **Bounds and cost.** Memory O(P + L): P held URLs (at most `max`, each its key
//! and 24 bytes), L distinct link targets of the generations not yet merged
//! (bounded by the seen set's buffers). A link is O(1); a merge's new URLs O(new);
//! a release O(P) (a selection, then a sort of the `n` taken); a save O(P) (written
//! whole). Past `max` the least-linked URLs leave the pool at once as requests, so
//! a URL is never dropped and memory stays bounded.
//!
//! **Durability.** As `deferred.rs`: the pool is saved (temp file, fsync, rename)
//! in each publication that adds to it, before the generation is recorded, each URL
//! with the generation that found it; at start, URLs of generations not recorded are
//! dropped, because those generations are read again and find them again. A
//! released URL leaves the file only after the request file holding it is
//! published: a crash in between requests it twice, never loses it. Counts of
//! links not yet merged are not saved (a restart reads their pages again).
//!
//! This module never decides scope, budgets or ownership, and never writes a
//! request file: the crawl loop does.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use spool::publish::durable_rename;

use app_core::error::AppError;
use app_core::reach::Reach;

/// First line of the saved file.
const FORMAT_LINE: &str = "polycrawl-importance 1";

/// The saved pool, in the state folder.
pub(crate) fn pool_path(state_dir: &Path) -> PathBuf {
    state_dir.join("importance")
}

/// A held URL: its links so far, reach and the generation that found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    links: u64,
    depth: u32,
    hops: u32,
    generation: u64,
}

/// A URL the pool hands out: its seen-set key, its reach and its links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Taken {
    pub key: Box<[u8]>,
    pub reach: Reach,
    pub links: u64,
}

/// One generation's link counts: per target key, the links and the reach of the
/// first.
type Counts = HashMap<Box<[u8]>, (u64, Reach)>;

/// The held URLs and the link counts of unmerged generations (see the
/// [module docs](self)).
#[derive(Debug)]
pub(crate) struct Pool {
    held: HashMap<Box<[u8]>, Entry>,
    /// Link counts per seen-set generation not merged yet, with the reach of
    /// the first link counted.
    pending: BTreeMap<u64, Counts>,
    max: usize,
    path: PathBuf,
    /// Changed since the last save.
    dirty: bool,
}

impl Pool {
    /// The pool saved in `state_dir` without the URLs of generations after
    /// `last_published` (read again, so found again), or an empty one.
    pub(crate) fn open(
        state_dir: &Path,
        last_published: u64,
        max: usize,
    ) -> Result<Pool, AppError> {
        let path = pool_path(state_dir);
        let mut pool = Pool {
            held: HashMap::new(),
            pending: BTreeMap::new(),
            max: max.max(1),
            path,
            dirty: false,
        };
        let text = match fs::read_to_string(&pool.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(pool),
            Err(source) => {
                return Err(AppError::File {
                    path: pool.path.clone(),
                    source,
                });
            }
        };
        let bad = |n: usize, why: &str| AppError::BadState {
            path: pool.path.clone(),
            line: format!("line {n}: {why}"),
        };
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, FORMAT_LINE)) => {}
            _ => return Err(bad(1, &format!("expected {FORMAT_LINE:?}"))),
        }
        for (i, line) in lines {
            let mut f = line.split('\t');
            let (Some(key), Some(links), Some(depth), Some(hops), Some(generation), None) =
                (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
            else {
                return Err(bad(i + 1, "expected key, links, depth, hops, generation"));
            };
            let num = |s: &str| s.parse::<u64>().map_err(|_| bad(i + 1, "not a number"));
            let entry = Entry {
                links: num(links)?,
                depth: u32::try_from(num(depth)?).map_err(|_| bad(i + 1, "depth"))?,
                hops: u32::try_from(num(hops)?).map_err(|_| bad(i + 1, "hops"))?,
                generation: num(generation)?,
            };
            if key.is_empty() {
                return Err(bad(i + 1, "empty key"));
            }
            if entry.generation <= last_published {
                pool.held.insert(key.as_bytes().into(), entry);
            } else {
                pool.dirty = true;
            }
        }
        Ok(pool)
    }

    /// URLs held.
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    /// True when no URL is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// `n` links to `key` (at `reach`) found, the link inserted into the seen set
    /// under `generation`. O(1).
    pub(crate) fn link(&mut self, key: &[u8], reach: Reach, generation: u64, n: u64) {
        if let Some(e) = self.held.get_mut(key) {
            e.links += n;
            self.dirty = true;
        } else {
            self.pending
                .entry(generation)
                .or_default()
                .entry(key.into())
                .or_insert((0, reach))
                .0 += n;
        }
    }

    /// The links counted for `key` in `generation` and not yet in the pool (for a
    /// new URL that goes to another part). O(1).
    pub(crate) fn take_pending(&mut self, key: &[u8], generation: u64) -> u64 {
        self.pending
            .get_mut(&generation)
            .and_then(|m| m.remove(key))
            .map_or(0, |(n, _)| n)
    }

    /// A new URL of `generation`'s merge joins the pool with the links counted
    /// for it (a URL held already keeps its entry and gains them). O(1).
    pub(crate) fn add(&mut self, key: &[u8], reach: Reach, generation: u64) {
        let links = self.take_pending(key, generation);
        self.dirty = true;
        let e = self.held.entry(key.into()).or_insert(Entry {
            links: 0,
            depth: reach.depth,
            hops: reach.hops,
            generation,
        });
        e.links += links;
    }

    /// `generation` is merged and its new URLs added: links counted under it (and
    /// any earlier one) to URLs the pool holds are added to them; the rest are
    /// links to URLs requested already (or owned by another part) and are
    /// dropped. Returns those dropped with their counts and first reach, for a
    /// split crawl to hand on. O(targets counted).
    pub(crate) fn merged(&mut self, generation: u64) -> Vec<(Box<[u8]>, u64, Reach)> {
        let later = self.pending.split_off(&(generation + 1));
        let done = std::mem::replace(&mut self.pending, later);
        let mut rest = Vec::new();
        for (key, (n, reach)) in done.into_values().flatten() {
            if let Some(e) = self.held.get_mut(&key) {
                e.links += n;
                self.dirty = true;
            } else {
                rest.push((key, n, reach));
            }
        }
        rest
    }

    /// Takes the `n` most-linked URLs out, most-linked first (ties: lower depth,
    /// then key). O(P + n log n).
    pub(crate) fn take(&mut self, n: usize) -> Vec<Taken> {
        self.pick(n, true)
    }

    /// The least-linked URLs past the bound, to request at once (least-linked
    /// first). O(P) when over the bound, else O(1).
    pub(crate) fn overflow(&mut self) -> Vec<Taken> {
        let over = self.held.len().saturating_sub(self.max);
        self.pick(over, false)
    }

    /// Takes out the `n` best-ranked (`best`) or worst-ranked URLs, in that
    /// order.
    fn pick(&mut self, n: usize, best: bool) -> Vec<Taken> {
        if n == 0 || self.held.is_empty() {
            return Vec::new();
        }
        let mut all: Vec<(&[u8], &Entry)> = self.held.iter().map(|(k, e)| (&**k, e)).collect();
        let rank = |a: &(&[u8], &Entry), b: &(&[u8], &Entry)| {
            let order =
                b.1.links
                    .cmp(&a.1.links)
                    .then(a.1.depth.cmp(&b.1.depth))
                    .then(a.0.cmp(b.0));
            if best { order } else { order.reverse() }
        };
        if n < all.len() {
            all.select_nth_unstable_by(n, rank);
            all.truncate(n);
        }
        all.sort_unstable_by(rank);
        let keys: Vec<Box<[u8]>> = all.into_iter().map(|(k, _)| k.into()).collect();
        self.dirty = true;
        keys.into_iter()
            .filter_map(|key| {
                let e = self.held.remove(&key)?;
                Some(Taken {
                    key,
                    reach: Reach {
                        depth: e.depth,
                        hops: e.hops,
                    },
                    links: e.links,
                })
            })
            .collect()
    }

    /// Saves the pool if it changed (temp file, fsync, rename). O(P).
    pub(crate) fn save(&mut self) -> Result<(), AppError> {
        if !self.dirty {
            return Ok(());
        }
        let mut text = String::with_capacity(FORMAT_LINE.len() + 1 + self.held.len() * 64);
        text.push_str(FORMAT_LINE);
        text.push('\n');
        for (key, e) in &self.held {
            text.push_str(&String::from_utf8_lossy(key));
            let _ = writeln!(
                text,
                "\t{}\t{}\t{}\t{}",
                e.links, e.depth, e.hops, e.generation
            );
        }
        let tmp = self.path.with_extension("tmp");
        let file_error = |source| AppError::File {
            path: tmp.clone(),
            source,
        };
        let mut f = File::create(&tmp).map_err(file_error)?;
        f.write_all(text.as_bytes()).map_err(file_error)?;
        durable_rename(f, &tmp, &self.path)?;
        self.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach(depth: u32) -> Reach {
        Reach { depth, hops: 0 }
    }

    fn keys(t: &[Taken]) -> Vec<&[u8]> {
        t.iter().map(|t| &*t.key).collect()
    }

    #[test]
    fn links_found_before_and_during_the_merge_rank_the_new_urls() {
        let dir = tempfile::tempdir().unwrap();
        let mut pool = Pool::open(dir.path(), 0, 100).unwrap();
        for _ in 0..3 {
            pool.link(b"a", reach(2), 1, 1);
        }
        pool.link(b"b", reach(1), 1, 1);
        pool.link(b"old", reach(3), 1, 5);
        // Found while generation 1 merges: counted under generation 2.
        pool.link(b"b", reach(1), 2, 4);
        pool.add(b"a", reach(2), 1);
        pool.add(b"b", reach(1), 1);
        pool.add(b"c", reach(0), 1);
        let dropped = pool.merged(1);
        assert_eq!(
            dropped,
            vec![(b"old".to_vec().into_boxed_slice(), 5, reach(3))]
        );
        assert!(pool.merged(2).is_empty(), "b's late links went to b");
        // b: 1 + 4, a: 3, c: 0.
        let taken = pool.take(2);
        assert_eq!(keys(&taken), vec![&b"b"[..], b"a"]);
        assert_eq!(taken[0].links, 5);
        assert_eq!(pool.len(), 1);
        // A held URL gains links at once.
        pool.link(b"c", reach(0), 3, 2);
        assert_eq!(pool.take(5)[0].links, 2);
        assert!(pool.is_empty());
    }

    #[test]
    fn ties_go_to_the_lower_depth() {
        let dir = tempfile::tempdir().unwrap();
        let mut pool = Pool::open(dir.path(), 0, 100).unwrap();
        pool.add(b"deep", reach(5), 1);
        pool.add(b"shallow", reach(1), 1);
        pool.merged(1);
        assert_eq!(keys(&pool.take(1)), vec![&b"shallow"[..]]);
    }

    #[test]
    fn a_restart_keeps_recorded_generations_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut pool = Pool::open(dir.path(), 0, 100).unwrap();
        pool.link(b"a", reach(1), 1, 2);
        pool.add(b"a", reach(1), 1);
        pool.add(b"b", reach(1), 2);
        pool.merged(2);
        pool.save().unwrap();
        let mut again = Pool::open(dir.path(), 1, 100).unwrap();
        assert_eq!(again.len(), 1, "generation 2 is read again");
        let t = again.take(1);
        assert_eq!((keys(&t), t[0].links), (vec![&b"a"[..]], 2));
    }

    #[test]
    fn past_the_bound_the_least_linked_leave_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut pool = Pool::open(dir.path(), 0, 2).unwrap();
        for (i, k) in [&b"x"[..], b"y", b"z"].into_iter().enumerate() {
            pool.link(k, reach(0), 1, i as u64);
            pool.add(k, reach(0), 1);
        }
        pool.merged(1);
        assert_eq!(keys(&pool.overflow()), vec![&b"x"[..]]);
        assert_eq!(pool.len(), 2);
        assert!(pool.overflow().is_empty());
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            pool_path(dir.path()),
            format!("{FORMAT_LINE}\nk\t1\t2\t0\t1\nk2\tx\t1\t0\t1\n"),
        )
        .unwrap();
        let e = Pool::open(dir.path(), 5, 10).unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
    }
}
