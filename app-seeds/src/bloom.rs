//! A seed context's duplicate filter: a Bloom filter of a fixed number of bytes
//! (`seed_context_bytes`), shared by the parties of one site (SCrawler keeps "a
//! Bloom filter for the party" in each seed context; here the parties of one site
//! share theirs, so a URL one of them met is never requested by another).
//!
//! [`K`] hash functions by double hashing (Kirsch and Mitzenmacher): position
//! `i` of a URL is `h1 + i * h2` modulo the bits, `h1` and `h2` two 64-bit FNV-1a
//! hashes of its text with different offsets, each mixed by MurmurHash3's
//! finalizer. The hashes are fixed here (not `std`'s, which may change between
//! Rust releases) because filters are saved in `seeds.state` and read back.
//!
//! The false-positive rate after `n` distinct URLs in `m` bits is about
//! `(1 - e^(-K n / m))^K`; [`Bloom::fp_rate`] gives the rate from the bits really
//! set, `(set / m)^K`. A false positive means a URL of the site taken as met:
//! that page is not fetched (nor, if nothing else links them, the pages only it
//! leads to). With the default 64 KiB: under 0.1 % up to 33,000 URLs met per
//! site, under 1 % up to 52,000 (docs/scaling.md has the table).
//!
//! Memory: exactly the configured bytes (rounded down to 8), whatever is
//! inserted; the saved form is at most twice that plus a line head. It must
//! never grow with the URLs it holds.

use std::fmt::Write as _;

/// Hash functions per URL (optimal for about `m / 10` URLs in `m` bits).
pub const K: u32 = 7;

/// The default filter size: 64 KiB a site.
pub const DEFAULT_BYTES: usize = 64 << 10;

/// The largest filter read back from a state file (1 GiB).
const MAX_BYTES: usize = 1 << 30;

/// A Bloom filter of a fixed size over URL texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bloom {
    words: Vec<u64>,
    /// Distinct items inserted (an item the filter already held is not counted).
    inserted: u64,
}

fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn fnv1a(bytes: &[u8], offset: u64) -> u64 {
    let mut h = offset;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    fmix64(h)
}

impl Bloom {
    /// An empty filter of `bytes` bytes (rounded down to a multiple of 8, at
    /// least 8).
    pub fn with_bytes(bytes: usize) -> Self {
        Self {
            words: vec![0; (bytes / 8).max(1)],
            inserted: 0,
        }
    }

    fn bits(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    fn positions(&self, item: &str) -> impl Iterator<Item = u64> + use<> {
        let m = self.bits();
        let h1 = fnv1a(item.as_bytes(), 0xcbf2_9ce4_8422_2325);
        let h2 = fnv1a(item.as_bytes(), 0x8422_2325_cbf2_9ce4) | 1;
        (0..u64::from(K)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % m)
    }

    /// Adds `item`; true when it was not (as far as the filter knows) held before.
    /// O(K).
    pub fn insert(&mut self, item: &str) -> bool {
        let mut new = false;
        for p in self.positions(item) {
            let (w, b) = ((p / 64) as usize, p % 64);
            if self.words[w] & (1 << b) == 0 {
                self.words[w] |= 1 << b;
                new = true;
            }
        }
        if new {
            self.inserted += 1;
        }
        new
    }

    /// Whether `item` may have been inserted (false: it surely was not). O(K).
    pub fn contains(&self, item: &str) -> bool {
        self.positions(item)
            .all(|p| self.words[(p / 64) as usize] & (1 << (p % 64)) != 0)
    }

    /// The filter's memory: its bit array's bytes (fixed at creation).
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Distinct items inserted.
    pub fn inserted(&self) -> u64 {
        self.inserted
    }

    /// The false-positive rate expected after the distinct items inserted,
    /// `(1 - e^(-K n / m))^K`. O(1): cheap enough to ask after every page.
    pub fn expected_fp_rate(&self) -> f64 {
        let k = f64::from(K);
        let fill = 1.0 - (-k * self.inserted as f64 / self.bits() as f64).exp();
        fill.powi(K as i32)
    }

    /// The chance that a URL never inserted is taken as held now: `(set / m)^K`.
    /// O(m / 64).
    pub fn fp_rate(&self) -> f64 {
        let set: u64 = self.words.iter().map(|w| u64::from(w.count_ones())).sum();
        (set as f64 / self.bits() as f64).powi(K as i32)
    }

    /// One line's text: `<bytes> <inserted> h<hex words>` or, when shorter,
    /// `<bytes> <inserted> d<set bit positions, delta-coded, comma-separated>`.
    /// At most `2 * bytes` plus the head.
    pub fn encode(&self) -> String {
        let mut deltas = String::new();
        let mut last = 0u64;
        let limit = 2 * self.bytes();
        'words: for (w, word) in self.words.iter().enumerate() {
            let mut rest = *word;
            while rest != 0 {
                let p = w as u64 * 64 + u64::from(rest.trailing_zeros());
                rest &= rest - 1;
                if !deltas.is_empty() {
                    deltas.push(',');
                }
                let _ = write!(deltas, "{}", p - last);
                last = p;
                if deltas.len() >= limit {
                    break 'words;
                }
            }
        }
        let mut text = format!("{} {} ", self.bytes(), self.inserted);
        if deltas.len() < limit {
            text.push('d');
            text.push_str(&deltas);
        } else {
            text.push('h');
            for word in &self.words {
                let _ = write!(text, "{word:016x}");
            }
        }
        text
    }

    /// Reads what [`encode`](Self::encode) wrote; `None` when it is not that.
    pub fn decode(text: &str) -> Option<Self> {
        let mut fields = text.splitn(3, ' ');
        let bytes: usize = fields.next()?.parse().ok()?;
        let inserted: u64 = fields.next()?.parse().ok()?;
        let body = fields.next()?;
        if bytes == 0 || bytes % 8 != 0 || bytes > MAX_BYTES {
            return None;
        }
        let mut filter = Self::with_bytes(bytes);
        filter.inserted = inserted;
        if let Some(hex) = body.strip_prefix('h') {
            if hex.len() != 2 * bytes {
                return None;
            }
            for (w, word) in filter.words.iter_mut().enumerate() {
                *word = u64::from_str_radix(hex.get(w * 16..w * 16 + 16)?, 16).ok()?;
            }
        } else {
            let deltas = body.strip_prefix('d')?;
            let mut p = 0u64;
            for (i, delta) in deltas.split(',').filter(|d| !d.is_empty()).enumerate() {
                let delta: u64 = delta.parse().ok()?;
                if i > 0 && delta == 0 {
                    return None;
                }
                p = p.checked_add(delta)?;
                if p >= filter.bits() {
                    return None;
                }
                filter.words[(p / 64) as usize] |= 1 << (p % 64);
            }
        }
        Some(filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_and_saved_size_stay_within_the_bound_whatever_is_met() {
        let bound = 4096;
        let mut f = Bloom::with_bytes(bound);
        for i in 0..200_000 {
            f.insert(&format!("http://a.test/page/{i}"));
            if i % 20_000 == 0 {
                assert!(f.bytes() <= bound, "{} bytes", f.bytes());
                let saved = f.encode();
                assert!(saved.len() <= 2 * bound + 32, "{} saved", saved.len());
                assert_eq!(Bloom::decode(&saved).as_ref(), Some(&f));
            }
        }
        assert_eq!(f.bytes(), bound);
        // Saturated: every URL looks met.
        assert!(f.fp_rate() > 0.99, "{}", f.fp_rate());
    }

    #[test]
    fn measured_false_positives_are_near_the_stated_rate() {
        // 64 KiB, 33,000 URLs: stated under 0.1 %; 52,000: under 1 %.
        for (n, stated) in [(33_000u32, 0.001), (52_000, 0.01)] {
            let mut f = Bloom::with_bytes(DEFAULT_BYTES);
            // A new URL may already look held (a false positive while filling).
            let new = (0..n)
                .filter(|i| f.insert(&format!("http://site.test/dir{}/p{i}.html", i % 37)))
                .count();
            assert!(
                new as f64 >= f64::from(n) * (1.0 - stated),
                "{new} of {n} new"
            );
            let theory = (1.0
                - (-f64::from(K) * f64::from(n) / (DEFAULT_BYTES as f64 * 8.0)).exp())
            .powi(K as i32);
            let sample = 200_000u32;
            let fp = (0..sample)
                .filter(|i| f.contains(&format!("http://site.test/other/{i}")))
                .count() as f64
                / f64::from(sample);
            assert!(fp < stated, "n {n}: measured {fp} not under {stated}");
            assert!(
                (fp - theory).abs() < theory * 0.3 + 2e-4,
                "n {n}: measured {fp}, theory {theory}"
            );
            assert!(
                (f.fp_rate() - theory).abs() < theory * 0.1,
                "n {n}: fp_rate {} theory {theory}",
                f.fp_rate()
            );
            assert_eq!(f.inserted(), new as u64);
        }
    }

    #[test]
    fn no_false_negatives_and_both_saved_forms_read_back() {
        let mut sparse = Bloom::with_bytes(1024);
        assert!(sparse.insert("http://a.test/"));
        assert!(!sparse.insert("http://a.test/"));
        assert!(sparse.contains("http://a.test/"));
        let text = sparse.encode();
        assert!(text.starts_with("1024 1 d"), "{text}");
        assert_eq!(Bloom::decode(&text), Some(sparse));
        let mut dense = Bloom::with_bytes(64);
        for i in 0..100 {
            dense.insert(&i.to_string());
        }
        assert!((0..100).all(|i| dense.contains(&i.to_string())));
        let text = dense.encode();
        assert!(text.starts_with("64 "), "{text}");
        assert!(text.contains(" h"), "{text}");
        assert_eq!(Bloom::decode(&text), Some(dense));
        let empty = Bloom::with_bytes(8);
        assert_eq!(Bloom::decode(&empty.encode()), Some(empty));
        for bad in [
            "", "8", "8 0", "8 0 x", "7 0 d", "8 0 d64", "8 0 d1,0", "16 0 h00",
        ] {
            assert_eq!(Bloom::decode(bad), None, "{bad:?}");
        }
    }
}
