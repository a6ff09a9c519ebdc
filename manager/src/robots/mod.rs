//! robots.txt: polycrawl's own parser and matcher for the Robots Exclusion
//! Protocol, RFC 9309 (DESIGN.md section 4).
//!
//! The manager fetches `/robots.txt` once per host (through a downloader), turns
//! the HTTP outcome into a [`RobotsPolicy`] with [`RobotsPolicy::from_fetch`],
//! caches it for up to 24 hours, and asks [`RobotsPolicy::is_allowed`] before
//! queueing each URL of that host. [`check_urls`] is the same decision for the
//! `polycrawl robots` command.
//!
//! # What it must never do
//!
//! - **No I/O.** It is handed bytes and a path; fetching, redirects, retries and
//!   caching belong to the manager's fetch logic.
//! - **Never panic on input.** The body is untrusted bytes (not necessarily UTF-8,
//!   possibly hostile); the URL is whatever a page linked to. Every input gives an
//!   answer: unparseable lines are skipped (RFC 9309 section 2.3.1.5: "Crawlers MUST
//!   try to parse each line ... MUST use the parseable rules").
//! - **No dependencies** beyond `std`.
//!
//! # Layout
//!
//! - `parser`: lines, fields, groups, choosing the groups for one product token.
//! - `pattern`: the canonical (percent-encoding normalized) form and the matcher.
//! - `policy`: [`RobotsPolicy`], the fetch status rules of section 2.3.1.
//! - `target`: [`path_and_query`] and [`check_urls`] for full URLs.
//!
//! # Cost
//!
//! - **Parse:** one pass, O(body) time; at most [`MAX_ROBOTS_BYTES`] are read.
//! - **Memory:** a [`Robots`] keeps only the rules of the group(s) that apply to
//!   the agent it was parsed for, deduplicated, in one string buffer plus 16 bytes
//!   per rule; plus the crawl delay and the sitemap URLs (which a cache can
//!   [`take`](Robots::take_sitemaps)). A typical host costs a few hundred bytes.
//! - **Match:** rules are sorted most specific first, so the first rule that
//!   matches decides. One rule costs O(len(pattern) + len(path)) whatever its `*`s
//!   (no backtracking; each `*`-separated piece is found with a linear-time
//!   substring search), so a URL costs at most O(rules x len(path) + rule octets).

mod parser;
mod pattern;
mod policy;
mod target;

use std::time::Duration;

pub use policy::RobotsPolicy;
pub use target::{check_urls, path_and_query};

use pattern::Target;

/// How much of a robots.txt body is parsed: 500 KiB, the minimum RFC 9309 section
/// 2.5 allows ("The parsing limit MUST be at least 500 kibibytes"). Bytes past it
/// are ignored, and so is a line the limit cuts in two.
pub const MAX_ROBOTS_BYTES: usize = 500 * 1024;

/// One `allow`/`disallow` rule; its canonical pattern (always ASCII) is
/// `patterns[start..start + len]` in the owning [`Robots`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rule {
    start: u32,
    len: u32,
    /// Octets in the canonical pattern: longer wins (section 2.2.2).
    specificity: u32,
    allow: bool,
    /// The pattern ended in `$` (section 2.2.3).
    anchored: bool,
}

// The module docs promise 16 bytes per stored rule.
const _: () = assert!(size_of::<Rule>() == 16);

/// The parsed robots.txt rules that apply to one crawler (product token).
///
/// Built by [`Robots::parse`]; the default value allows everything (no rules).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Robots {
    patterns: Box<str>,
    /// Most specific first; `allow` before `disallow` on equal specificity.
    rules: Box<[Rule]>,
    crawl_delay: Option<Duration>,
    sitemaps: Box<[String]>,
}

impl Robots {
    /// Parses a robots.txt body (the bytes of a 2xx response) for the crawler
    /// `agent`, keeping only what applies to it.
    ///
    /// `agent` is our product token, e.g. `polycrawl`; a full identification string
    /// such as `polycrawl/0.1 (+https://...)` is cut to its leading token. Groups
    /// whose `user-agent` names that token (case-insensitively) apply, merged; if
    /// none does, the `*` groups apply, merged; if there are none, nothing is
    /// disallowed (RFC 9309 section 2.2.1). Never fails: bad lines are skipped.
    pub fn parse(body: &[u8], agent: &str) -> Robots {
        parser::parse(body, agent)
    }

    /// Whether the crawler may fetch `path_and_query` (the URL's path plus `?query`
    /// if any; a `#fragment` is ignored and an empty path means `/`).
    ///
    /// The most specific matching rule decides, `allow` winning a tie; no matching
    /// rule means allowed; `/robots.txt` is always allowed (section 2.2.2).
    pub fn is_allowed(&self, path_and_query: &str) -> bool {
        if self.rules.is_empty() {
            return true;
        }
        let target = Target::new(path_and_query);
        if target.is_robots_txt() {
            return true;
        }
        self.rules
            .iter()
            .find(|rule| {
                let range = rule.start as usize..(rule.start + rule.len) as usize;
                let pattern = self.patterns.get(range).unwrap_or_default();
                pattern::matches(pattern, rule.anchored, &target)
            })
            .is_none_or(|rule| rule.allow)
    }

    /// The `Crawl-delay` of the applicable group(s), if one was given as a
    /// non-negative decimal number of seconds (the longest, if several were).
    /// Not part of RFC 9309; the manager caps it.
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// The `Sitemap` URLs of the whole file, in file order, as written (not
    /// validated). Sitemap lines belong to no group.
    pub fn sitemaps(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.sitemaps.iter().map(String::as_str)
    }

    /// Moves the sitemap URLs out, so a long-lived cache of many hosts holds only
    /// the rules.
    pub fn take_sitemaps(&mut self) -> Vec<String> {
        std::mem::take(&mut self.sitemaps).into_vec()
    }
}
