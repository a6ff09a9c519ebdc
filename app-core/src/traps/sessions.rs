//! The session-id detector's pieces: the random tokens of a URL that may be a
//! session identifier the canonicalization does not know (a path segment
//! `/s/0f3a9c1b2d4e5f60/page`, ASP.NET's cookieless `/(S(lit3py55t21z5v55))/`, a
//! query value under any name: `?ctx=9f3a0c1b7e2d4a5f`), and what a host has
//! shown of them.
//!
//! A token is a run [`is_random_token`] calls random. A URL's *masked* form is
//! the URL with each token replaced by `*`; its *slot* names where its tokens
//! sit (the path before the token, or the query parameter's name). A server
//! that puts sessions in URLs serves one page under ever new tokens: the same
//! masked URL with another token, and the same page. An id that names content
//! (a commit, a document) gives the same masked URL with another token too, but
//! another page. So tokens are judged by the pages:
//!
//! - the first URL of each masked form is followed, and the template
//!   (`pages::links::template`) of its page is kept;
//! - a page under another token of a masked form whose first page was read is
//!   a *duplicate* if it has that template, else *distinct*, counted per slot;
//! - a slot with at least `confirmations` duplicates, and more duplicates than
//!   distinct pages, holds session ids: from then on a link whose masked form
//!   was followed under another token is cut.
//!
//! So a session-id host costs its pages once, plus the few duplicates that
//! confirm each slot, and ids that name content are never cut.
//!
//! Memory: per host with a token URL, at most [`MAX_URLS`] masked forms (24
//! bytes each and the map's overhead, about 150 KiB when full) and [`MAX_SLOTS`]
//! slots. A host past [`MAX_URLS`] keeps what it has; on a session slot a link
//! to a masked form not kept is then cut as well (the host has shown thousands
//! of pages: what is left of it are variants). O(URL length) per link.
//!
//! Counting only: this module never reads pages or files; it must never keep a
//! URL or a page, only hashes.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use url::Url;

use pages::links::template::{MIN_TOKEN_LEN, PassThrough, is_random_token, token_hash};

/// Most masked forms kept per host.
pub(crate) const MAX_URLS: usize = 4_096;
/// Most slots kept per host.
pub(crate) const MAX_SLOTS: usize = 8;

/// A URL's tokens, as [`HostSessions`] needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tokens {
    /// The hash of the masked URL.
    masked: u64,
    /// The hash of the tokens.
    tokens: u64,
    /// The hash of where they sit.
    slot: u64,
}

/// FNV-1a step over `bytes` from `h`.
fn mix(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The token of a path segment: the segment if random, or the id of ASP.NET's
/// cookieless `(X(id))` wrappers (`(S(abc))`, `(A(x))(S(y))`).
fn segment_token(segment: &str) -> Option<&str> {
    if is_random_token(segment.as_bytes()) {
        return Some(segment);
    }
    let inner = segment.strip_prefix('(')?.strip_suffix("))")?;
    let ids: Vec<&str> = inner.split("))(").collect();
    let valid = ids.iter().all(|id| {
        let mut parts = id.splitn(2, '(');
        let (Some(kind), Some(value)) = (parts.next(), parts.next()) else {
            return false;
        };
        kind.len() == 1
            && kind.bytes().all(|b| b.is_ascii_uppercase())
            && value.len() >= 8
            && value.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    valid.then_some(segment)
}

/// Whether `s` has a run of [`MIN_TOKEN_LEN`] token bytes (every token needs
/// one): most URLs are passed over with this one scan.
fn has_long_run(s: &str) -> bool {
    let mut run = 0;
    for b in s.bytes() {
        run = if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'(' {
            run + 1
        } else {
            0
        };
        if run >= MIN_TOKEN_LEN {
            return true;
        }
    }
    false
}

/// The tokens of `url` (see the module docs), if it has any.
pub(crate) fn tokens(url: &Url) -> Option<Tokens> {
    let (path, query) = (url.path(), url.query().unwrap_or(""));
    if !has_long_run(path) && !has_long_run(query) {
        return None;
    }
    let (mut masked, mut tokens, mut slot) = (0u64, 0u64, 0u64);
    let mut found = false;
    for segment in path.split('/') {
        masked = mix(masked, b"/");
        match segment_token(segment) {
            Some(token) => {
                found = true;
                masked = mix(masked, b"*");
                tokens = mix(tokens, token.as_bytes());
                tokens = mix(tokens, b"/");
                // Where it sits: the masked path so far.
                slot = mix(slot, &masked.to_le_bytes());
            }
            None => masked = mix(masked, segment.as_bytes()),
        }
    }
    masked = mix(masked, b"?");
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        masked = mix(masked, key.as_bytes());
        masked = mix(masked, b"=");
        if is_random_token(value.as_bytes()) {
            found = true;
            masked = mix(masked, b"*");
            tokens = mix(tokens, value.as_bytes());
            tokens = mix(tokens, b"&");
            slot = mix(slot, b"?");
            slot = mix(slot, &token_hash(key.as_bytes()).to_le_bytes());
        } else {
            masked = mix(masked, value.as_bytes());
        }
        masked = mix(masked, b"&");
    }
    found.then_some(Tokens {
        masked,
        tokens,
        slot,
    })
}

/// What one slot's pages showed.
#[derive(Debug, Clone, Copy)]
struct Slot {
    slot: u64,
    duplicates: u32,
    distinct: u32,
}

/// One host's masked forms and slots.
#[derive(Debug, Default)]
pub(crate) struct HostSessions {
    /// Masked form -> (its first followed tokens, the template of that page once
    /// read, `0` before).
    urls: HashMap<u64, (u64, u64), BuildHasherDefault<PassThrough>>,
    slots: Vec<Slot>,
}

impl HostSessions {
    /// Whether `slot` holds session ids.
    fn is_session(&self, slot: u64, confirmations: u32) -> bool {
        self.slots.iter().any(|s| {
            s.slot == slot && s.duplicates >= confirmations.max(1) && s.duplicates > s.distinct
        })
    }

    /// A link with tokens `t`: false when it is a session variant of a masked
    /// form already followed (it is cut). Records the first of each form.
    pub(crate) fn link(&mut self, t: Tokens, confirmations: u32) -> bool {
        match self.urls.get(&t.masked) {
            Some(&(first, _)) => first == t.tokens || !self.is_session(t.slot, confirmations),
            None if self.urls.len() < MAX_URLS => {
                self.urls.insert(t.masked, (t.tokens, 0));
                true
            }
            None => !self.is_session(t.slot, confirmations),
        }
    }

    /// The page at a URL with tokens `t` was read, with `template`: keeps the
    /// template of a form's first page, judges the others (see the module docs).
    pub(crate) fn page(&mut self, t: Tokens, template: u64) {
        // 0 means "not read yet".
        let template = template | 1;
        let Some(entry) = self.urls.get_mut(&t.masked) else {
            if self.urls.len() < MAX_URLS {
                self.urls.insert(t.masked, (t.tokens, template));
            }
            return;
        };
        if entry.0 == t.tokens {
            if entry.1 == 0 {
                entry.1 = template;
            }
            return;
        }
        if entry.1 == 0 {
            return;
        }
        let duplicate = entry.1 == template;
        let at = match self.slots.iter().position(|s| s.slot == t.slot) {
            Some(at) => at,
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.push(Slot {
                    slot: t.slot,
                    duplicates: 0,
                    distinct: 0,
                });
                self.slots.len() - 1
            }
            None => return,
        };
        let s = &mut self.slots[at];
        if duplicate {
            s.duplicates = s.duplicates.saturating_add(1);
        } else {
            s.distinct = s.distinct.saturating_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(url: &str) -> Option<Tokens> {
        tokens(&Url::parse(url).unwrap())
    }

    #[test]
    fn tokens_in_paths_and_queries() {
        let a = t("http://a.test/s/0f3a9c1b2d4e5f60/p3.html").unwrap();
        let b = t("http://a.test/s/9e8d7c6b5a4f3e21/p3.html").unwrap();
        assert_eq!((a.masked, a.slot), (b.masked, b.slot));
        assert_ne!(a.tokens, b.tokens);
        let c = t("http://a.test/s/9e8d7c6b5a4f3e21/p4.html").unwrap();
        assert_ne!(a.masked, c.masked);
        assert_eq!(a.slot, c.slot);
        let asp = t("http://a.test/(S(lit3py55t21z5v55vlm25s55))/p3.aspx").unwrap();
        let asp2 = t("http://a.test/(S(q0b4kz3m1x9c2v7n5a8s6d4f))/p3.aspx").unwrap();
        assert_eq!(asp.masked, asp2.masked);
        let q = t("http://a.test/p3.html?ctx=9f3a0c1b7e2d4a5f&lang=en").unwrap();
        let q2 = t("http://a.test/p3.html?ctx=0c7b2e9a1f3d5c4e&lang=en").unwrap();
        assert_eq!((q.masked, q.slot), (q2.masked, q2.slot));
        assert_ne!(q.slot, a.slot);
        for none in [
            "http://a.test/docs/chapter12section3/index.html",
            "http://a.test/list?page=12345678901234567",
            "http://a.test/2024/05/introduction-to-rust-2024.html",
            "http://a.test/(S(x))/p.aspx",
        ] {
            assert_eq!(t(none), None, "{none}");
        }
    }

    #[test]
    fn a_session_slot_is_confirmed_by_duplicate_pages() {
        let mut h = HostSessions::default();
        let url =
            |id: u64, page: u32| t(&format!("http://a.test/s/{id:016x}/p{page}.html")).unwrap();
        // Page k's first URL, its page read with template 100 + k.
        for k in 0..10 {
            assert!(h.link(url(0xa1b2_c3d4_e5f6_0001 + k, k as u32), 2));
            h.page(url(0xa1b2_c3d4_e5f6_0001 + k, k as u32), 100 + k);
        }
        // Variants are followed until two of them read as the same page.
        let variant = |n: u64, k: u32| url(0x0f1e_2d3c_4b5a_6900 + n, k);
        assert!(h.link(variant(1, 1), 2));
        h.page(variant(1, 1), 101);
        assert!(h.link(variant(2, 2), 2));
        h.page(variant(2, 2), 102);
        assert!(!h.link(variant(3, 3), 2), "confirmed: a session id");
        assert!(
            h.link(url(0xa1b2_c3d4_e5f6_0004, 3), 2),
            "the first is kept"
        );
        assert!(h.link(variant(4, 11), 2), "a new page is followed");
    }

    #[test]
    fn ids_naming_content_are_never_cut() {
        let mut h = HostSessions::default();
        let doc = |id: u64| t(&format!("http://a.test/d/{id:016x}/edit")).unwrap();
        for n in 0..500u64 {
            let id = 0x1a2b_3c4d_5e6f_7a80 + n * 0x1_0001;
            assert!(h.link(doc(id), 2), "document {n}");
            h.page(doc(id), 1_000 + n);
        }
    }
}
