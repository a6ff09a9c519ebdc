//! A page's *template*: a 64-bit fingerprint of its HTML with its own variable
//! tokens taken out, for the maze and session-id trap detectors
//! (`service::traps`). Two pages of one generator that differ only in the words
//! their URLs and links are made of (a maze's `/maze/WORD` linking three new
//! words, an ever-deeper path, one page served under many session ids) have the
//! same template; pages with their own text (documentation, articles) do not.
//!
//! The page is read as a run of *tokens*: maximal runs of ASCII letters and
//! digits (ASCII case ignored), and every other byte but whitespace on its own.
//! A token is *variable*, and stands in the fingerprint as one placeholder, when
//! it is one of the alphanumeric runs of the path or query of the page's URL or
//! of any of its links, when it is all digits (dates, counters, times), or when
//! it looks like a random identifier ([`is_random_token`]: session ids, nonces).
//! Everything else goes into the fingerprint in document order; a run of
//! variable tokens with only `/` and whitespace between them is one placeholder
//! (so a path one segment deeper makes no other template).
//!
//! O(page bytes) for the body (one pass; one multiply per 8 bytes of a token and
//! one per token or other byte, one set lookup per alphanumeric run) plus O(URL bytes) for the page's and its links' URLs:
//! a second, cheap pass over the bytes the link scanner read, not a second parse.
//! The reader keeps one [`TemplateReader`] and its set between pages.
//!
//! Pure computation: this module never reads files nor keeps anything about a
//! page once its fingerprint is returned.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use url::Url;

/// Shortest run that [`is_random_token`] may call random.
pub const MIN_TOKEN_LEN: usize = 16;
/// Longest run that [`is_random_token`] may call random.
pub const MAX_TOKEN_LEN: usize = 128;

/// FNV-1a's 64-bit offset basis and prime.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// What a variable token adds to the fingerprint.
const PLACEHOLDER: u8 = 0x01;
/// The multiplier of [`run_hash`] (2^64 / the golden ratio, odd).
const RUN_MIX: u64 = 0x9E37_79B9_7F4A_7C15;
/// OR-ed into 8 bytes of an alphanumeric run: lower-cases the letters, leaves the
/// digits as they are (their 0x20 bit is set already).
const LOWER: u64 = 0x2020_2020_2020_2020;

/// A hasher for keys that are hashes already: it passes the `u64` through.
#[derive(Debug, Default, Clone, Copy)]
pub struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A set of token hashes.
type TokenSet = HashSet<u64, BuildHasherDefault<PassThrough>>;

/// The FNV-1a hash of `bytes`, ASCII case ignored.
pub fn token_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, &b| {
        (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME)
    })
}

/// The hash of `run`, a run of ASCII letters and digits, case ignored: 8 bytes a
/// step, one multiply each (a byte-wise FNV-1a took one multiply a byte, and the
/// template pass was then the application's largest cost on the nginx benchmark:
/// BENCHMARKS.md, issue 39). Only for alphanumeric runs: other bytes would be
/// changed by the lower-casing.
fn run_hash(run: &[u8]) -> u64 {
    let step = step_run;
    let mut h = FNV_OFFSET ^ run.len() as u64;
    let mut words = run.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        h = step(h, u64::from_le_bytes(w) | LOWER);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        // Shifted in byte by byte: a copy into a stack buffer and a load of it
        // (what `copy_from_slice` compiles to) stalls on store forwarding.
        let w = rest
            .iter()
            .rev()
            .fold(0u64, |w, &b| (w << 8) | u64::from(b | 0x20));
        h = step(h, w);
    }
    finish_run(h)
}

/// Bytes with 0x80 set; with 0x7f set.
const HIGH: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// 0x80 in each byte of `x` that is an ASCII letter or digit, 0 in the others:
/// eight bytes classified at once with additions that never carry from one byte
/// into the next (each byte's 7 low bits, plus at most 0x80).
fn alnum_bytes(x: u64) -> u64 {
    let v = x & LOW7;
    // 0x80 where v >= lo, for a range [lo, hi], and where v > hi.
    let at_least = |lo: u8| (v + u64::from_ne_bytes([0x80 - lo; 8])) & HIGH;
    let above = |v: u64, hi: u8| (v + u64::from_ne_bytes([0x7f - hi; 8])) & HIGH;
    let digit = at_least(b'0') & !above(v, b'9');
    let folded = v | 0x2020_2020_2020_2020;
    let letter = ((folded + u64::from_ne_bytes([0x80 - b'a'; 8])) & HIGH) & !above(folded, b'z');
    (digit | letter) & !(x & HIGH)
}

/// Where the run of ASCII letters and digits that goes on at `i` ends: eight
/// bytes a step while eight are left, then byte by byte.
fn alnum_end(body: &[u8], mut i: usize) -> usize {
    while let Some(word) = body.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let other = !alnum_bytes(u64::from_le_bytes(w)) & HIGH;
        if other != 0 {
            return i + (other.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < body.len() && body[i].is_ascii_alphanumeric() {
        i += 1;
    }
    i
}

/// One 8-byte step of [`run_hash`].
fn step_run(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(RUN_MIX).rotate_left(29)
}

/// The last step of [`run_hash`].
fn finish_run(h: u64) -> u64 {
    h ^ (h >> 32)
}

/// A page's fingerprint as it is fed: whole tokens (their hashes) one multiply
/// each, and the other bytes gathered 8 to a multiply.
#[derive(Debug)]
struct Fingerprint {
    h: u64,
    /// Bytes not fed yet, the first in the highest place.
    pending: u64,
    /// How many.
    n: u32,
}

impl Default for Fingerprint {
    fn default() -> Self {
        Self {
            h: FNV_OFFSET,
            pending: 0,
            n: 0,
        }
    }
}

impl Fingerprint {
    fn mix(&mut self, x: u64) {
        self.h = (self.h ^ x).wrapping_mul(FNV_PRIME);
    }

    /// A byte other than a letter, a digit or whitespace.
    fn byte(&mut self, b: u8) {
        self.pending = (self.pending << 8) | u64::from(b);
        self.n += 1;
        if self.n == 8 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.n > 0 {
            // Bytes other than 0 (which only a broken page has) leave the count in
            // the value: two different runs of them never give the same one.
            self.mix(self.pending);
            self.pending = 0;
            self.n = 0;
        }
    }

    /// A token's hash or the placeholder.
    fn word(&mut self, x: u64) {
        self.flush();
        self.mix(x);
    }

    fn finish(mut self) -> u64 {
        self.flush();
        self.h
    }
}

/// Whether `s` looks like a random identifier rather than a word, a number or a
/// slug: [`MIN_TOKEN_LEN`] to [`MAX_TOKEN_LEN`] bytes of ASCII letters, digits,
/// `-` and `_`, with letters and digits both, and the character class (lower
/// case, upper case, digit, other) changing at least once every four bytes on
/// average. Random hex and base-64 ids change class about every other byte;
/// `chapter12section3` or `release-2024-notes` hardly ever.
pub fn is_random_token(s: &[u8]) -> bool {
    if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&s.len()) {
        return false;
    }
    let class = |b: u8| match b {
        b'a'..=b'z' => Some(0u8),
        b'A'..=b'Z' => Some(1),
        b'0'..=b'9' => Some(2),
        b'-' | b'_' => Some(3),
        _ => None,
    };
    let (mut letters, mut digits, mut changes) = (false, false, 0usize);
    let mut last = None;
    for &b in s {
        let Some(c) = class(b) else {
            return false;
        };
        letters |= c < 2;
        digits |= c == 2;
        if last.is_some_and(|l| l != c) {
            changes += 1;
        }
        last = Some(c);
    }
    letters && digits && changes * 4 >= s.len()
}

/// Reusable template reader (one per reader thread).
#[derive(Debug, Default)]
pub struct TemplateReader {
    variable: TokenSet,
    /// One bit per `variable` hash (its low 10 bits): most tokens of a page are in
    /// no URL, and a clear bit says so without a set lookup.
    filter: [u64; 16],
}

impl TemplateReader {
    /// A reader with an empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The template of the HTML `body` of `page`, whose links are `links` (see
    /// the module docs).
    pub fn template(&mut self, body: &[u8], page: &Url, links: &[Url]) -> u64 {
        self.variable.clear();
        self.filter = [0; 16];
        for url in std::iter::once(page).chain(links) {
            self.add_url_tokens(url.path());
            if let Some(query) = url.query() {
                self.add_url_tokens(query);
            }
        }
        let mut h = Fingerprint::default();
        // A run of variable tokens, with the `/` and whitespace between them, is
        // one placeholder: a path one segment deeper has the same template.
        let mut in_placeholder = false;
        let mut i = 0;
        while i < body.len() {
            let b = body[i];
            if !b.is_ascii_alphanumeric() {
                let skipped = b.is_ascii_whitespace() || (in_placeholder && b == b'/');
                if !skipped {
                    h.byte(b);
                    in_placeholder = false;
                }
                i += 1;
                continue;
            }
            let start = i;
            i = alnum_end(body, i + 1);
            // A token goes in as its hash, one multiply (the separator is implied:
            // runs are maximal, so two of them never touch).
            match self.constant(body, start, i) {
                None => {
                    if !in_placeholder {
                        h.word(u64::from(PLACEHOLDER));
                    }
                    in_placeholder = true;
                }
                Some(token) => {
                    h.word(token);
                    in_placeholder = false;
                }
            }
        }
        h.finish()
    }

    /// The hash of the alphanumeric run `body[start..end]` when it is not variable.
    fn constant(&self, body: &[u8], start: usize, end: usize) -> Option<u64> {
        let run = &body[start..end];
        if run.iter().all(u8::is_ascii_digit) || is_random_token(run) {
            return None;
        }
        let token = match body.get(start..start + 8) {
            // A run of up to 8 bytes with 8 bytes to read: one load, masked.
            Some(word) if run.len() <= 8 => {
                let mut w = [0u8; 8];
                w.copy_from_slice(word);
                let mask = u64::MAX >> (8 * (8 - run.len()));
                finish_run(step_run(
                    FNV_OFFSET ^ run.len() as u64,
                    (u64::from_le_bytes(w) | LOWER) & mask,
                ))
            }
            _ => run_hash(run),
        };
        let (word, bit) = filter_slot(token);
        let maybe = self.filter[word] & bit != 0;
        (!(maybe && self.variable.contains(&token))).then_some(token)
    }

    fn add_url_tokens(&mut self, s: &str) {
        for run in s
            .as_bytes()
            .split(|b| !b.is_ascii_alphanumeric())
            .filter(|r| !r.is_empty())
        {
            let token = run_hash(run);
            let (word, bit) = filter_slot(token);
            self.filter[word] |= bit;
            self.variable.insert(token);
        }
    }
}

/// Where `token`'s bit is in [`TemplateReader`]'s filter: a word and a mask.
fn filter_slot(token: u64) -> (usize, u64) {
    (((token >> 6) & 15) as usize, 1 << (token & 63))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// A maze page: its own word in the title, three links of new words.
    fn maze_page(word: &str, next: [&str; 3]) -> (Url, Vec<Url>, String) {
        let links: Vec<Url> = next
            .iter()
            .map(|w| url(&format!("http://m.test/maze/{w}")))
            .collect();
        let mut body = format!("<html><title>maze {word}</title><h1>Maze {word}</h1><ul>");
        for w in next {
            body.push_str(&format!("<li><a href=\"/maze/{w}\">/maze/{w}</a></li>"));
        }
        body.push_str("</ul></html>");
        (url(&format!("http://m.test/maze/{word}")), links, body)
    }

    #[test]
    fn pages_of_one_generator_share_a_template() {
        let mut t = TemplateReader::new();
        let (u1, l1, b1) = maze_page("qwertyui", ["asdfghjk", "zxcvbnmq", "poiuytre"]);
        let (u2, l2, b2) = maze_page("lkjhgfds", ["mnbvcxzl", "qazwsxed", "rfvtgbyh"]);
        let one = t.template(b1.as_bytes(), &u1, &l1);
        assert_eq!(one, t.template(b2.as_bytes(), &u2, &l2));
        // A session id in the page and a date do not change it either.
        let body = b1.replace("</ul>", "</ul><p>id 9f3a0c1b7e2d4a5f, 2026-11-28</p>");
        let again = b2.replace("</ul>", "</ul><p>id 0c7b2e9a1f3d5c4e, 1999-01-02</p>");
        assert_eq!(
            t.template(body.as_bytes(), &u1, &l1),
            t.template(again.as_bytes(), &u2, &l2)
        );
        // Text of its own makes another template.
        let prose = b1.replace("</ul>", "</ul><p>Installing the package</p>");
        assert_ne!(one, t.template(prose.as_bytes(), &u1, &l1));
        let other = b1.replace("</ul>", "</ul><p>Configuring the package</p>");
        assert_ne!(
            t.template(prose.as_bytes(), &u1, &l1),
            t.template(other.as_bytes(), &u1, &l1)
        );
    }

    #[test]
    fn eight_bytes_at_a_time_classify_as_one_at_a_time() {
        for b in 0..=255u8 {
            let x = u64::from_le_bytes([b, b'a', b'!', b'Z', b'9', 0x80, b'/', b'`']);
            let m = alnum_bytes(x).to_le_bytes();
            assert_eq!(m[0] == 0x80, b.is_ascii_alphanumeric(), "{b:#x}");
            assert_eq!(m[1..], [0x80, 0, 0x80, 0x80, 0, 0, 0], "{b:#x}");
        }
        // Runs ending anywhere in a page of every byte, against the plain loop.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let body: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly letters and digits, so that runs are long.
                match x % 4 {
                    0 => (x >> 8) as u8,
                    _ => b"abcXYZ0189"[(x >> 16) as usize % 10],
                }
            })
            .collect();
        for i in 0..body.len() {
            let mut plain = i;
            while plain < body.len() && body[plain].is_ascii_alphanumeric() {
                plain += 1;
            }
            assert_eq!(alnum_end(&body, i), plain, "from {i}");
        }
    }

    /// The pass as the module docs state it, byte by byte, with the URLs' runs kept
    /// as lower-cased bytes rather than hashes: the reference for the fast paths.
    fn reference(body: &[u8], page: &Url, links: &[Url]) -> u64 {
        let mut variable = HashSet::new();
        for url in std::iter::once(page).chain(links) {
            for part in [Some(url.path()), url.query()].into_iter().flatten() {
                for run in part.as_bytes().split(|b| !b.is_ascii_alphanumeric()) {
                    variable.insert(run.to_ascii_lowercase());
                }
            }
        }
        let mut h = Fingerprint::default();
        let mut in_placeholder = false;
        let mut i = 0;
        while i < body.len() {
            let b = body[i];
            if !b.is_ascii_alphanumeric() {
                if !(b.is_ascii_whitespace() || (in_placeholder && b == b'/')) {
                    h.byte(b);
                    in_placeholder = false;
                }
                i += 1;
                continue;
            }
            let start = i;
            while i < body.len() && body[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let run = &body[start..i];
            if variable.contains(&run.to_ascii_lowercase())
                || run.iter().all(u8::is_ascii_digit)
                || is_random_token(run)
            {
                if !in_placeholder {
                    h.word(u64::from(PLACEHOLDER));
                }
                in_placeholder = true;
            } else {
                h.word(run_hash(run));
                in_placeholder = false;
            }
        }
        h.finish()
    }

    #[test]
    fn the_fast_paths_give_the_reference_fingerprint() {
        let page = url("http://t.test/maze/Qwerty/p27/Seventeen1234567x?id=0f3a9c1b2d4e5f60&n=8");
        let links = [
            url("http://t.test/maze/eightchr/ninechars/sixteencharsxyz"),
            url("http://t.test/a/b?q=Mixed9Case"),
        ];
        // Pieces with runs of every length around the 8- and 16-byte steps, words
        // of the URLs in other cases, digits, random ids, every kind of whitespace
        // (and 0x0b, which is none), `/`, bytes next to the letter and digit ranges,
        // and non-ASCII bytes, some of them letters or digits with 0x80 set.
        let mut pieces: Vec<Vec<u8>> = [
            "maze",
            "MAZE",
            "qwerty",
            "p27",
            "P27",
            "eightchr",
            "ninechars",
            "EightChr",
            "sixteencharsxyz",
            "seventeen1234567x",
            "Seventeen1234567X",
            "mixed9case",
            "0f3a9c1b2d4e5f60",
            "9F3A0C1B7E2D4A5F",
            "aZ3kLmQ9xR2tYb7W",
            "lit3py55t21z5v55vlm25s55",
            "2026",
            "0",
            "12345678",
            "123456789",
            "1234567890123456",
            "12345678901234567",
            "abc1",
            "1abc",
            "8",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\x0c",
            "\x0b",
            "/",
            "//",
            " / ",
            "<p>",
            "</a>",
            ".",
            ", ",
            "-",
            "_",
            "@",
            "[",
            "`",
            "{",
            ":",
            "\0",
        ]
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
        pieces.extend([
            vec![0x80],
            vec![0xc3, 0xa9],
            vec![0xff],
            vec![0xc1],
            vec![0xda, 0xe1],
            vec![0xb0, 0xb9],
            vec![b'a', 0xe9, b'b'],
            vec![b'7', 0x80],
        ]);
        for len in 1..=40 {
            let word: Vec<u8> = (0..len).map(|k| b"abcdXYZw"[k % 8]).collect();
            pieces.push(word);
            pieces.push((0..len).map(|k| b"0123456789"[k % 10]).collect());
            pieces.push((0..len).map(|k| b"a1B2c3D4e5f6"[k % 12]).collect());
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as usize % n
        };
        let mut t = TemplateReader::new();
        let no_links: &[Url] = &[];
        for round in 0..400 {
            let mut body = Vec::new();
            for _ in 0..next(60) {
                body.extend_from_slice(&pieces[next(pieces.len())]);
                // Mostly one space between pieces, as in text.
                if next(3) > 0 {
                    body.push(b' ');
                }
            }
            let links = if round % 2 == 0 { &links[..] } else { no_links };
            // Every length near the end, so that runs end at and just before it.
            for cut in body.len().saturating_sub(24)..=body.len() {
                let body = &body[..cut];
                assert_eq!(
                    t.template(body, &page, links),
                    reference(body, &page, links),
                    "{:?}",
                    String::from_utf8_lossy(body)
                );
            }
        }
    }

    #[test]
    fn a_run_read_in_place_hashes_as_the_run_alone() {
        let t = TemplateReader::new();
        let body = b"<p>Install Rust-Analyzer via rustup, then x; ExtraordinaryWords Ab";
        let mut i = 0;
        let mut runs = 0;
        while i < body.len() {
            if !body[i].is_ascii_alphanumeric() {
                i += 1;
                continue;
            }
            let start = i;
            while i < body.len() && body[i].is_ascii_alphanumeric() {
                i += 1;
            }
            assert_eq!(
                t.constant(body, start, i),
                Some(run_hash(&body[start..i])),
                "{:?}",
                std::str::from_utf8(&body[start..i])
            );
            runs += 1;
        }
        assert_eq!(runs, 10);
    }

    #[test]
    fn run_hashes_ignore_case_and_tell_runs_apart() {
        assert_eq!(run_hash(b"Installing"), run_hash(b"iNSTALLING"));
        assert_eq!(
            run_hash(b"ABCDEFGHIJKLMNOPQ7"),
            run_hash(b"abcdefghijklmnopq7")
        );
        let mut seen = HashSet::new();
        // Every run of 0 to 20 bytes over a few letters and digits, and padding
        // look-alikes: no two hash alike.
        let alphabet = b"aZ09";
        for len in 0..=9u32 {
            for n in 0..4u64.pow(len.min(6)) {
                let run: Vec<u8> = (0..len)
                    .map(|i| alphabet[((n >> (2 * (i % 6))) & 3) as usize])
                    .collect();
                let lower = run.to_ascii_lowercase();
                seen.insert((lower.clone(), run_hash(&lower)));
            }
        }
        let hashes: HashSet<u64> = seen.iter().map(|(_, h)| *h).collect();
        assert_eq!(hashes.len(), seen.len());
        assert_ne!(run_hash(b"a"), run_hash(b"a0"));
        assert_ne!(run_hash(b""), run_hash(b"0"));
    }

    #[test]
    fn random_tokens_and_words() {
        for random in [
            "0f3a9c1b2d4e5f60",
            "9F3A0C1B7E2D4A5F",
            "lit3py55t21z5v55vlm25s55",
            "aZ3kLmQ9xR2tYb7W",
            "550e8400-e29b-41d4-a716-446655440000",
        ] {
            assert!(is_random_token(random.as_bytes()), "{random}");
        }
        for word in [
            "chapter12section3",
            "release-2024-notes",
            "0123456789012345",
            "abcdefghijklmnopq",
            "ToStringBuilder.html",
            "a1b2c3",
            "introduction_to_rust_2024",
        ] {
            assert!(!is_random_token(word.as_bytes()), "{word}");
        }
    }
}
