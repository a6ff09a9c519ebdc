//! The one pseudo-random generator websim uses: splitmix64, written out here.
//!
//! Chosen so that websim's output (host names, sizes, link graph, pages, manifest)
//! never changes with a crate upgrade: the whole generator is these few lines, and
//! `tests::golden_values` pins its first outputs. It is a statistical generator, not
//! a cryptographic one; websim only needs reproducible variety.
//!
//! Everything websim generates is a pure function of the seed and a few small
//! integers, so any page can be rendered at any time without storing the web:
//! [`hash`] folds a tag (one per kind of decision, see the `TAG_*` constants) and the
//! integers into a 64-bit state, and [`Rng`] draws from that state.
//!
//! This module must never read the clock, the environment or any other source of
//! entropy. Everything here is O(1).

/// Tag for host-level decisions (names, roles, addresses).
pub const TAG_HOSTS: u64 = 0x686f_7374;
/// Tag for the path shape of a page.
pub const TAG_PATH: u64 = 0x7061_7468;
/// Tag for the link targets of a page.
pub const TAG_LINKS: u64 = 0x6c69_6e6b;
/// Tag for the rendering choices of a page (link forms, sizes, text).
pub const TAG_RENDER: u64 = 0x7265_6e64;
/// Tag for redirect chains.
pub const TAG_REDIRECT: u64 = 0x7265_6469;
/// Tag for the robots directives of `--robots-tags`.
pub const TAG_ROBOTS: u64 = 0x726f_626f;
/// Tag for the hub pages of `--hubs`.
pub const TAG_HUBS: u64 = 0x6875_6273;
/// Tag for the fixed text pool (independent of the user seed).
pub const TAG_TEXT: u64 = 0x7465_7874;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// One splitmix64 output step: the bijective finalizer applied to `z + GOLDEN`.
#[inline]
pub const fn splitmix64(z: u64) -> u64 {
    mix(z.wrapping_add(GOLDEN))
}

/// The splitmix64 finalizer (a bijection on 64-bit values).
#[inline]
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Folds `parts` into one well-mixed 64-bit value (order matters).
#[inline]
pub fn hash(parts: &[u64]) -> u64 {
    let mut h = 0x5745_4253_494d_u64; // "WEBSIM"
    for &p in parts {
        h = splitmix64(h ^ p);
    }
    h
}

/// A splitmix64 stream.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A stream starting from `state`.
    #[inline]
    pub fn new(state: u64) -> Self {
        Rng(state)
    }

    /// A stream for the decision `parts` (see [`hash`]).
    #[inline]
    pub fn for_parts(parts: &[u64]) -> Self {
        Rng(hash(parts))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }

    /// A value in `0..n` (`n > 0`), by multiply-shift (no modulo bias worth noting).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A value in `lo..=hi`.
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `per_mille / 1000`.
    #[inline]
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// A uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_values() {
        // Pinned: changing these changes every generated web.
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        let mut r = Rng::new(1234567);
        assert_eq!(r.next_u64(), 0x599E_D017_FB08_FC85);
        assert_eq!(hash(&[1, 2, 3]), hash(&[1, 2, 3]));
        assert_ne!(hash(&[1, 2, 3]), hash(&[3, 2, 1]));
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(9);
        for n in [1u64, 2, 3, 7, 1000] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
        let u = r.unit();
        assert!((0.0..1.0).contains(&u));
    }
}
