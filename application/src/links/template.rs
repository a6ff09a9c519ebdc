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
//! O(page bytes) for the body (one pass, one multiply per byte, one set lookup
//! per alphanumeric run) plus O(URL bytes) for the page's and its links' URLs:
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
        for url in std::iter::once(page).chain(links) {
            self.add_url_tokens(url.path());
            if let Some(query) = url.query() {
                self.add_url_tokens(query);
            }
        }
        let mut h = FNV_OFFSET;
        let mut feed = |b: u8| h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        // A run of variable tokens, with the `/` and whitespace between them, is
        // one placeholder: a path one segment deeper has the same template.
        let mut in_placeholder = false;
        let mut i = 0;
        while i < body.len() {
            let b = body[i];
            if !b.is_ascii_alphanumeric() {
                let skipped = b.is_ascii_whitespace() || (in_placeholder && b == b'/');
                if !skipped {
                    feed(b);
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
            if self.is_variable(run) {
                if !in_placeholder {
                    feed(PLACEHOLDER);
                }
                in_placeholder = true;
            } else {
                run.iter().for_each(|&b| feed(b.to_ascii_lowercase()));
                feed(b' ');
                in_placeholder = false;
            }
        }
        h
    }

    fn is_variable(&self, run: &[u8]) -> bool {
        run.iter().all(u8::is_ascii_digit)
            || is_random_token(run)
            || self.variable.contains(&token_hash(run))
    }

    fn add_url_tokens(&mut self, s: &str) {
        for run in s
            .as_bytes()
            .split(|b| !b.is_ascii_alphanumeric())
            .filter(|r| !r.is_empty())
        {
            self.variable.insert(token_hash(run));
        }
    }
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
