//! [`Deferred`]: new URLs over their host's budget, held for a while instead of
//! cut for good, and requested once the host's budget grows (IRLbot's BEAST keeps
//! such URLs too, in lower queues, rather than dropping them).
//!
//! A host's budget grows with the distinct sites linking to it (`budget.rs`), and
//! those links can come after the host's URLs: later in the crawl, or, in a split
//! crawl, from another part whose vote travels through an exchange file while the
//! owner's own pages keep finding the host's URLs. Cut for good, such a URL is lost
//! (it is in the seen set, so no later link brings it back); held, it is requested
//! as soon as the budget has room. What is held counts as cut until it is released.
//!
//! Bounds: at most `per_host` URLs per host (four linking sites' worth by default:
//! a trap host cannot fill memory) and `max_total` in all; a URL beyond either is
//! cut for good, as before. Memory and the saved file are O(held URLs).
//!
//! Durability: the held URLs are saved (temp file, fsync, rename) in the same
//! publication that holds or releases them, before the generation is recorded, each
//! with the generation that found it. At start, URLs of generations not recorded
//! are dropped, because those generations are read again and find them again. A
//! released URL leaves the file only after the request file holding it is published.
//!
//! This module never decides budgets (that is `budget.rs`) and never writes request
//! files; the crawl loop does both.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use spool::publish::durable_rename;

use app_core::error::AppError;

/// A host holds at most this many linking sites' worth of URLs.
pub(crate) const SITES_HELD: usize = 4;

/// URLs held in all, at most.
pub(crate) const MAX_HELD: usize = 100_000;

/// First line of the saved file.
const FORMAT_LINE: &str = "polycrawl-deferred 1";

/// A URL held: its seen-set key, depth, redirect hops and the generation that
/// found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub key: Box<[u8]>,
    pub depth: u32,
    pub hops: u32,
    pub generation: u64,
}

/// The URLs held per host (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Deferred {
    hosts: HashMap<Box<[u8]>, VecDeque<Held>>,
    total: usize,
    per_host: usize,
    max_total: usize,
    /// Hosts with URLs held whose budget grew since they were last tried.
    grown: HashSet<Box<[u8]>>,
    /// Held URLs changed since the last save.
    changed: bool,
}

impl Deferred {
    /// Holds at most `per_host` URLs of a host and `max_total` in all.
    pub(crate) fn new(per_host: usize, max_total: usize) -> Deferred {
        Deferred {
            hosts: HashMap::new(),
            total: 0,
            per_host,
            max_total,
            grown: HashSet::new(),
            changed: false,
        }
    }

    /// Holds `url` of `host`; false when there is no room (cut for good). A URL
    /// held already stays held once (a two-level agent that crashed after saving
    /// the URLs it held from its parked file, before rewriting that file,
    /// releases them again). O(URLs held for the host).
    pub(crate) fn hold(&mut self, host: &[u8], url: Held) -> bool {
        if self
            .hosts
            .get(host)
            .is_some_and(|held| held.iter().any(|h| h.key == url.key))
        {
            return true;
        }
        if self.total >= self.max_total {
            return false;
        }
        let held = self.hosts.entry(host.into()).or_default();
        if held.len() >= self.per_host {
            return false;
        }
        held.push_back(url);
        self.total += 1;
        self.changed = true;
        true
    }

    /// `host`'s budget grew: its held URLs are tried at the next publication.
    pub(crate) fn grew(&mut self, host: &[u8]) {
        if self.hosts.contains_key(host) && !self.grown.contains(host) {
            self.grown.insert(host.into());
        }
    }

    /// Takes, per host whose budget grew, the held URLs `admit` lets go (in the
    /// order they were held, stopping at the first it refuses).
    pub(crate) fn release(&mut self, mut admit: impl FnMut(&[u8]) -> bool) -> Vec<Held> {
        let mut out = Vec::new();
        for host in std::mem::take(&mut self.grown) {
            let Some(held) = self.hosts.get_mut(&host) else {
                continue;
            };
            while !held.is_empty() && admit(&host) {
                if let Some(url) = held.pop_front() {
                    out.push(url);
                }
            }
            if held.is_empty() {
                self.hosts.remove(&host);
            }
        }
        self.total -= out.len();
        self.changed |= !out.is_empty();
        out
    }

    /// URLs held now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.total
    }

    /// Saves the held URLs if they changed since the last save.
    pub(crate) fn save_if_changed(&mut self, state_dir: &Path) -> Result<(), AppError> {
        if !self.changed {
            return Ok(());
        }
        let mut text = String::with_capacity(64 + 96 * self.total);
        text.push_str(FORMAT_LINE);
        text.push('\n');
        for held in self.hosts.values() {
            for h in held {
                let Ok(key) = std::str::from_utf8(&h.key) else {
                    continue;
                };
                let _ = writeln!(text, "{}\t{}\t{}\t{key}", h.generation, h.depth, h.hops);
            }
        }
        let tmp = state_dir.join("deferred.tmp");
        let io = |source| AppError::File {
            path: tmp.clone(),
            source,
        };
        let mut file = File::create(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        durable_rename(file, &tmp, &path(state_dir))?;
        self.changed = false;
        Ok(())
    }

    /// Reads the saved URLs back, dropping those of generations after `recorded`;
    /// `host_of` gives a key's host. A missing file holds nothing.
    pub(crate) fn load(
        &mut self,
        state_dir: &Path,
        recorded: u64,
        host_of: impl Fn(&[u8]) -> &[u8],
    ) -> Result<(), AppError> {
        let path = path(state_dir);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(AppError::File { path, source }),
        };
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        if first != FORMAT_LINE {
            return Err(AppError::BadState {
                path,
                line: first.chars().take(100).collect(),
            });
        }
        for line in lines.filter(|l| !l.is_empty()) {
            let bad = || AppError::BadState {
                path: path.clone(),
                line: line.chars().take(100).collect(),
            };
            let mut f = line.split('\t');
            let (Some(generation), Some(depth), Some(hops), Some(key), None) =
                (f.next(), f.next(), f.next(), f.next(), f.next())
            else {
                return Err(bad());
            };
            let held = Held {
                key: key.as_bytes().into(),
                depth: depth.parse().map_err(|_| bad())?,
                hops: hops.parse().map_err(|_| bad())?,
                generation: generation.parse().map_err(|_| bad())?,
            };
            if held.generation <= recorded {
                let host = host_of(&held.key).to_vec();
                self.hold(&host, held);
            }
        }
        self.changed = false;
        Ok(())
    }
}

/// Path of the saved held URLs.
fn path(state_dir: &Path) -> PathBuf {
    state_dir.join("deferred")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(key: &str, generation: u64) -> Held {
        Held {
            key: key.as_bytes().into(),
            depth: 2,
            hops: 0,
            generation,
        }
    }

    fn host_of(key: &[u8]) -> &[u8] {
        let end = key.iter().position(|&b| b == b'/').unwrap_or(key.len());
        &key[..end]
    }

    #[test]
    fn held_urls_go_once_the_budget_grows_in_order_and_within_it() {
        let mut d = Deferred::new(3, 100);
        assert!(d.hold(b"a", held("a/1", 1)));
        assert!(d.hold(b"a", held("a/2", 1)));
        assert!(d.hold(b"a", held("a/3", 2)));
        assert!(!d.hold(b"a", held("a/4", 2)), "per-host room");
        assert!(d.hold(b"b", held("b/1", 2)));
        assert!(d.release(|_| true).is_empty(), "no budget grew");
        d.grew(b"a");
        d.grew(b"zzz");
        let mut room = 2;
        let out = d.release(|host| {
            assert_eq!(host, b"a");
            room -= 1;
            room >= 0
        });
        let keys: Vec<&[u8]> = out.iter().map(|h| &*h.key).collect();
        assert_eq!(keys, [&b"a/1"[..], b"a/2"]);
        assert_eq!(d.len(), 2);
        d.grew(b"a");
        assert_eq!(d.release(|_| true).len(), 1);
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn a_url_held_already_is_held_once() {
        let mut d = Deferred::new(2, 100);
        assert!(d.hold(b"a", held("a/1", 1)));
        assert!(d.hold(b"a", held("a/2", 1)));
        assert!(d.hold(b"a", held("a/1", 1)), "held already, even when full");
        assert_eq!(d.len(), 2);
        d.grew(b"a");
        assert_eq!(d.release(|_| true).len(), 2);
    }

    #[test]
    fn the_total_is_bounded() {
        let mut d = Deferred::new(10, 2);
        assert!(d.hold(b"a", held("a/1", 1)));
        assert!(d.hold(b"b", held("b/1", 1)));
        assert!(!d.hold(b"c", held("c/1", 1)));
    }

    #[test]
    fn saved_urls_come_back_without_unrecorded_generations() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Deferred::new(10, 100);
        d.hold(b"a", held("a/1", 3));
        d.hold(b"a", held("a/2", 4));
        d.hold(b"b", held("b/1", 5));
        d.save_if_changed(dir.path()).unwrap();
        let mut again = Deferred::new(10, 100);
        again.load(dir.path(), 4, host_of).unwrap();
        assert_eq!(again.len(), 2, "generation 5 is read again, not restored");
        again.grew(b"a");
        again.grew(b"b");
        let mut keys: Vec<Box<[u8]>> = again.release(|_| true).into_iter().map(|h| h.key).collect();
        keys.sort();
        assert_eq!(keys, [b"a/1".as_slice().into(), b"a/2".as_slice().into()]);
        // A bad line is an error naming it, not a silent loss.
        fs::write(path(dir.path()), format!("{FORMAT_LINE}\n1\t2\tx\tkey\n")).unwrap();
        let err = Deferred::new(10, 100)
            .load(dir.path(), 9, host_of)
            .unwrap_err();
        assert!(
            matches!(&err, AppError::BadState { line, .. } if line == "1\t2\tx\tkey"),
            "{err:?}"
        );
    }
}
