//! The fixed text pool pages are built from: paragraphs, titles and anchor texts.
//!
//! Generated once at start-up from a constant seed (not the user's), so that page
//! rendering is mostly copying these precomputed chunks into a reused buffer. The
//! pool is ASCII only (pages declared windows-1252 must stay ASCII; pages with
//! non-ASCII links get [`UTF8_PARAGRAPH`] on top). Size: [`PARAGRAPHS`] paragraphs of
//! 300-1,100 bytes, about 90 KB, independent of the web's size. The pool must never
//! contain a URL, `href` or `src`: every URL on a page comes from the model.

use std::sync::OnceLock;

use super::rng::{Rng, TAG_TEXT};

/// Number of paragraphs in the pool.
pub const PARAGRAPHS: usize = 128;

/// A paragraph in UTF-8 for pages that declare UTF-8 and link non-ASCII paths.
pub const UTF8_PARAGRAPH: &str = "<p lang=\"de\">Grüße aus Zürich: das Café an der \
Straße, naïve Fragen und 日本語のテキスト, all in UTF-8.</p>\n";

/// Anchor texts.
pub const ANCHORS: [&str; 16] = [
    "Read more",
    "Details",
    "Archive",
    "Next article",
    "Related",
    "Our products",
    "Contact &amp; support",
    "Documentation",
    "Latest news",
    "Forum thread",
    "See also",
    "Home",
    "Previous",
    "Index",
    "Download",
    "More &raquo;",
];

const WORDS: [&str; 64] = [
    "the",
    "of",
    "and",
    "crawler",
    "page",
    "server",
    "network",
    "distributed",
    "system",
    "queue",
    "host",
    "politeness",
    "robots",
    "download",
    "parse",
    "link",
    "graph",
    "breadth",
    "first",
    "search",
    "engine",
    "index",
    "storage",
    "archive",
    "record",
    "request",
    "response",
    "latency",
    "throughput",
    "bandwidth",
    "resolver",
    "cache",
    "manager",
    "application",
    "frontier",
    "duplicate",
    "content",
    "document",
    "anchor",
    "text",
    "structure",
    "power",
    "law",
    "degree",
    "component",
    "connected",
    "simulation",
    "experiment",
    "measure",
    "result",
    "design",
    "implementation",
    "performance",
    "scale",
    "machine",
    "cluster",
    "disk",
    "memory",
    "batch",
    "stream",
    "file",
    "format",
    "a",
    "to",
];

/// The shared pool (built on first use).
pub fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(Pool::build)
}

/// Precomputed text chunks.
#[derive(Debug)]
pub struct Pool {
    text: String,
    paragraphs: Vec<(usize, usize)>,
    /// Mean paragraph length in bytes (including `<p>` and `</p>\n`).
    pub mean_len: usize,
}

impl Pool {
    fn build() -> Pool {
        let mut r = Rng::for_parts(&[TAG_TEXT]);
        let mut text = String::with_capacity(PARAGRAPHS * 800);
        let mut paragraphs = Vec::with_capacity(PARAGRAPHS);
        for _ in 0..PARAGRAPHS {
            let start = text.len();
            let target = r.range(300, 1100) as usize;
            text.push_str("<p>");
            let mut sentence_start = true;
            while text.len() - start < target {
                let w = WORDS[r.below(WORDS.len() as u64) as usize];
                if text.len() - start > 3 {
                    text.push(' ');
                }
                if sentence_start {
                    let mut c = w.chars();
                    if let Some(f) = c.next() {
                        text.push(f.to_ascii_uppercase());
                        text.push_str(c.as_str());
                    }
                    sentence_start = false;
                } else {
                    text.push_str(w);
                }
                if r.chance(90) {
                    text.push('.');
                    sentence_start = true;
                }
            }
            if !text.ends_with('.') {
                text.push('.');
            }
            text.push_str("</p>\n");
            paragraphs.push((start, text.len()));
        }
        let mean_len = text.len() / PARAGRAPHS;
        Pool {
            text,
            paragraphs,
            mean_len,
        }
    }

    /// Paragraph `k mod PARAGRAPHS`, as HTML (`<p>...</p>\n`).
    pub fn paragraph(&self, k: u64) -> &str {
        let (a, b) = self.paragraphs[(k % PARAGRAPHS as u64) as usize];
        &self.text[a..b]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_is_ascii_and_sized() {
        let p = pool();
        assert!(p.text.is_ascii());
        assert!((500..1000).contains(&p.mean_len), "{}", p.mean_len);
        assert!(p.paragraph(3).starts_with("<p>") && p.paragraph(3).ends_with("</p>\n"));
    }
}
