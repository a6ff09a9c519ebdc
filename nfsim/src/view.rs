//! What one NFS client machine sees of the shared directory: the pure logic of
//! `polycrawl nfsim`, with the clock passed in so it is tested without FUSE.
//!
//! [`ClientView`] decides whether a directory entry that exists in the backing
//! directory is visible to this client yet, and caches attributes for the same delay.
//! It must never touch the file system itself and never read the clock: the caller
//! passes the entry's change time and `now`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::{Duration, SystemTime};

/// One client's visibility state: the entries it has seen or made, and its cached
/// attributes (`A` is whatever the caller caches: a stat result in nfsim).
#[derive(Debug)]
pub struct ClientView<A> {
    delay: Duration,
    known: HashSet<PathBuf>,
    attrs: HashMap<PathBuf, (A, SystemTime)>,
}

impl<A: Clone> ClientView<A> {
    /// A client whose view of other clients' changes lags by `delay` (NFS attribute
    /// caching, `actimeo`).
    pub fn new(delay: Duration) -> Self {
        Self {
            delay,
            known: HashSet::new(),
            attrs: HashMap::new(),
        }
    }

    /// Whether the entry at `path`, present in the backing directory with change time
    /// `changed`, is visible to this client at `now`: at once if this client made or
    /// has already seen it (close-to-open), else once `changed + delay` has passed.
    /// Once visible, it stays visible until [`ClientView::removed`].
    pub fn entry_visible(&mut self, path: &Path, changed: SystemTime, now: SystemTime) -> bool {
        if self.known.contains(path) {
            return true;
        }
        let due = changed.checked_add(self.delay).unwrap_or(changed);
        if now >= due {
            self.known.insert(path.to_path_buf());
            true
        } else {
            false
        }
    }

    /// This client created `path` (or renamed something to it): visible to it at once.
    pub fn created_here(&mut self, path: &Path) {
        self.known.insert(path.to_path_buf());
        self.attrs.remove(path);
    }

    /// `path` is gone (removed here, or found missing in the backing directory): forget
    /// it and everything under it.
    pub fn removed(&mut self, path: &Path) {
        self.known.retain(|p| !p.starts_with(path));
        self.attrs.retain(|p, _| !p.starts_with(path));
    }

    /// This client renamed `from` to `to`: the new name (and everything under it) is
    /// visible to it at once, the old one is gone.
    pub fn renamed(&mut self, from: &Path, to: &Path) {
        self.removed(to);
        let moved: Vec<PathBuf> = self
            .known
            .iter()
            .filter(|p| p.starts_with(from))
            .cloned()
            .collect();
        self.removed(from);
        for p in moved {
            if let Ok(rest) = p.strip_prefix(from)
                && !rest.as_os_str().is_empty()
            {
                self.known.insert(to.join(rest));
            }
        }
        self.known.insert(to.to_path_buf());
    }

    /// The cached attributes of `path`, if fetched less than `delay` before `now`.
    pub fn cached_attr(&self, path: &Path, now: SystemTime) -> Option<A> {
        let (attr, fetched) = self.attrs.get(path)?;
        let age = now.duration_since(*fetched).unwrap_or(Duration::ZERO);
        (age < self.delay).then(|| attr.clone())
    }

    /// Caches `attr` for `path` as fetched at `now`.
    pub fn store_attr(&mut self, path: &Path, attr: A, now: SystemTime) {
        if !self.delay.is_zero() {
            self.attrs.insert(path.to_path_buf(), (attr, now));
        }
    }

    /// This client changed `path`'s content or attributes: its next look is fresh.
    pub fn changed_here(&mut self, path: &Path) {
        self.attrs.remove(path);
    }

    /// How many entries this client remembers (for tests and figures).
    pub fn known_len(&self) -> usize {
        self.known.len()
    }
}

/// An injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// An I/O error (`EIO`): the server or the network failed the call.
    Io,
    /// A stale file handle (`ESTALE`): the server no longer knows the file.
    Stale,
}

/// Seeded fault injection: each call to [`Faults::draw`] fails with probability
/// `eio_per_million / 1e6` (EIO) plus `estale_per_million / 1e6` (ESTALE).
#[derive(Debug)]
pub struct Faults {
    eio_per_million: u32,
    estale_per_million: u32,
    state: Mutex<u64>,
}

impl Faults {
    /// Fault odds per million calls and the RNG seed (same seed, same sequence).
    pub fn new(eio_per_million: u32, estale_per_million: u32, seed: u64) -> Self {
        Self {
            eio_per_million,
            estale_per_million,
            state: Mutex::new(seed),
        }
    }

    /// Whether no fault can ever be drawn.
    pub fn is_off(&self) -> bool {
        self.eio_per_million == 0 && self.estale_per_million == 0
    }

    /// The fault this call suffers, if any.
    pub fn draw(&self) -> Option<Fault> {
        if self.is_off() {
            return None;
        }
        let roll = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            splitmix64(&mut state) % 1_000_000
        };
        let eio = u64::from(self.eio_per_million);
        if roll < eio {
            Some(Fault::Io)
        } else if roll < eio + u64::from(self.estale_per_million) {
            Some(Fault::Stale)
        } else {
            None
        }
    }
}

/// SplitMix64: a small, well-mixed generator (Steele, Lea, Flood 2014).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELAY: Duration = Duration::from_millis(1000);

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000) + Duration::from_millis(ms)
    }

    #[test]
    fn foreign_entry_appears_after_the_delay_and_stays() {
        let mut view: ClientView<u64> = ClientView::new(DELAY);
        let p = Path::new("incoming/a");
        assert!(!view.entry_visible(p, at(0), at(0)));
        assert!(!view.entry_visible(p, at(0), at(999)));
        assert!(view.entry_visible(p, at(0), at(1000)));
        // A later change (ctime moves on a write elsewhere) does not hide it again.
        assert!(view.entry_visible(p, at(5000), at(5001)));
    }

    #[test]
    fn own_entries_are_visible_at_once() {
        let mut view: ClientView<u64> = ClientView::new(DELAY);
        let p = Path::new("out/b");
        view.created_here(p);
        assert!(view.entry_visible(p, at(0), at(0)));
    }

    #[test]
    fn removed_entries_wait_again_when_they_come_back() {
        let mut view: ClientView<u64> = ClientView::new(DELAY);
        let p = Path::new("d/x");
        assert!(view.entry_visible(p, at(0), at(2000)));
        view.removed(Path::new("d"));
        assert_eq!(view.known_len(), 0);
        // Re-created elsewhere at 3000: hidden until 4000.
        assert!(!view.entry_visible(p, at(3000), at(3500)));
        assert!(view.entry_visible(p, at(3000), at(4000)));
    }

    #[test]
    fn rename_here_moves_visibility_and_children() {
        let mut view: ClientView<u64> = ClientView::new(DELAY);
        view.created_here(Path::new("tmp/dir"));
        view.created_here(Path::new("tmp/dir/f"));
        view.renamed(Path::new("tmp/dir"), Path::new("done/dir"));
        assert!(view.entry_visible(Path::new("done/dir"), at(0), at(0)));
        assert!(view.entry_visible(Path::new("done/dir/f"), at(0), at(0)));
        assert!(!view.entry_visible(Path::new("tmp/dir"), at(0), at(0)));
    }

    #[test]
    fn attributes_are_cached_for_the_delay_and_dropped_on_local_change() {
        let mut view: ClientView<u64> = ClientView::new(DELAY);
        let p = Path::new("f");
        assert_eq!(view.cached_attr(p, at(0)), None);
        view.store_attr(p, 7, at(0));
        assert_eq!(view.cached_attr(p, at(999)), Some(7));
        assert_eq!(view.cached_attr(p, at(1000)), None);
        view.store_attr(p, 8, at(2000));
        view.changed_here(p);
        assert_eq!(view.cached_attr(p, at(2001)), None);
    }

    #[test]
    fn zero_delay_shows_everything_at_once_and_caches_nothing() {
        let mut view: ClientView<u64> = ClientView::new(Duration::ZERO);
        assert!(view.entry_visible(Path::new("x"), at(10), at(10)));
        view.store_attr(Path::new("x"), 1, at(10));
        assert_eq!(view.cached_attr(Path::new("x"), at(10)), None);
    }

    #[test]
    fn faults_follow_their_odds_and_seed() {
        assert_eq!(Faults::new(0, 0, 1).draw(), None);
        let all_eio = Faults::new(1_000_000, 0, 1);
        assert!((0..100).all(|_| all_eio.draw() == Some(Fault::Io)));
        let all_stale = Faults::new(0, 1_000_000, 1);
        assert!((0..100).all(|_| all_stale.draw() == Some(Fault::Stale)));
        let some = Faults::new(100_000, 100_000, 42);
        let draws: Vec<_> = (0..10_000).map(|_| some.draw()).collect();
        let io = draws.iter().filter(|d| **d == Some(Fault::Io)).count();
        let stale = draws.iter().filter(|d| **d == Some(Fault::Stale)).count();
        assert!((800..1200).contains(&io), "io {io}");
        assert!((800..1200).contains(&stale), "stale {stale}");
        let again = Faults::new(100_000, 100_000, 42);
        let replay: Vec<_> = (0..10_000).map(|_| again.draw()).collect();
        assert_eq!(draws, replay);
    }
}
