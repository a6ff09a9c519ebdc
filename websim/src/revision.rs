//! Revisions of the web, for recrawl tests: validators (`ETag`, `Last-Modified`),
//! conditional requests, and a deterministic share of pages that change between
//! revision 0 (the first crawl) and a later one.
//!
//! # Rules
//! - `--revision N` (default 0) with `--change-share S` (default 0.2): at revision
//!   N > 0 a generated page (a [`Target::Page`]) has *changed* when
//!   `hash(seed, TAG_REVISION, host, page) % 1000 < S * 1000`; its content carries
//!   one more paragraph naming the revision, and its `ETag` and `Last-Modified`
//!   change with it. Links stay the same, so the manifest's breadth-first walk is
//!   the same at every revision. At revision 0 nothing has changed.
//! - Validators: a generated page of a host that *validates* (three hosts in four,
//!   by `hash(seed, TAG_REVISION, host) % 4 != 0`) carries
//!   `ETag: "<16 hex digits>"` (a hash of seed, host, page and the revision the
//!   page last changed at) and `Last-Modified` (2026-01-01 00:00:00 GMT plus one day
//!   per such revision), and answers a GET whose `If-None-Match` lists its ETag (or
//!   `*`), or, without `If-None-Match`, whose `If-Modified-Since` is not before its
//!   `Last-Modified`, with **304 Not Modified** (no body, the validators repeated),
//!   as RFC 9110 section 13.2.2 orders the two. A host that does not validate
//!   sends neither header and answers every GET in full, as many real servers do.
//!   Nothing else websim serves (redirects, 404s, robots.txt, static files) carries
//!   validators: each is the same bytes at every revision.
//! - `changes.tsv` ([`write_changes`]): every manifest row's URL and what a recrawl
//!   at this revision that sends the validators of revision 0 gets: `changed` (a
//!   new 200), `not_modified` (a 304), `unchanged` (the same 200: its host does not
//!   validate) or `fixed` (not a generated page: the same response as before).
//!
//! Everything here is a pure function of the seed, the host, the page and the
//! revision: O(1) per request, nothing stored.

use std::io::{self, Write};
use std::time::{Duration, SystemTime};

use super::model::{Target, Web};
use super::rng::hash;

/// Tag for revision decisions (which pages change, which hosts validate).
pub const TAG_REVISION: u64 = 0x7265_7669;

/// `Last-Modified` of every page at revision 0: 2026-01-01 00:00:00 GMT.
pub const BASE_MODIFIED_UNIX: u64 = 1_767_225_600;

/// The revision a web serves and how many pages differ from revision 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Revision {
    /// The revision number (0: the original web).
    pub number: u32,
    /// Pages changed at revisions above 0, per mille of the generated pages.
    pub change_per_mille: u32,
}

impl Default for Revision {
    fn default() -> Self {
        Revision {
            number: 0,
            change_per_mille: 200,
        }
    }
}

/// What a recrawl at this revision gets for one manifest URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A generated page whose content changed since revision 0: a new 200.
    Changed,
    /// An unchanged page of a validating host: 304 to a conditional request.
    NotModified,
    /// An unchanged page of a host that sends no validators: the same 200.
    Unchanged,
    /// Anything but a generated page: the same response at every revision.
    Fixed,
}

impl Change {
    /// The name in `changes.tsv`.
    pub fn name(self) -> &'static str {
        match self {
            Change::Changed => "changed",
            Change::NotModified => "not_modified",
            Change::Unchanged => "unchanged",
            Change::Fixed => "fixed",
        }
    }
}

/// The validators of one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validators {
    /// The quoted entity tag.
    pub etag: String,
    /// `Last-Modified`, as a time.
    pub modified: SystemTime,
}

impl Revision {
    /// Whether page `page` of host `h` differs from revision 0.
    pub fn changed(&self, web: &Web, h: u32, page: u32) -> bool {
        self.number > 0
            && hash(&[web.params.seed, TAG_REVISION, u64::from(h), u64::from(page)]) % 1000
                < u64::from(self.change_per_mille)
    }

    /// The revision at which the page's content last changed (0 or `number`).
    pub fn page_revision(&self, web: &Web, h: u32, page: u32) -> u32 {
        if self.changed(web, h, page) {
            self.number
        } else {
            0
        }
    }

    /// The page's validators, or `None` when its host sends none.
    pub fn validators(&self, web: &Web, h: u32, page: u32) -> Option<Validators> {
        if !validates(web, h) {
            return None;
        }
        let rev = self.page_revision(web, h, page);
        let tag = hash(&[
            web.params.seed,
            TAG_REVISION,
            u64::from(h),
            u64::from(page),
            u64::from(rev),
        ]);
        Some(Validators {
            etag: format!("\"{tag:016x}\""),
            modified: SystemTime::UNIX_EPOCH
                + Duration::from_secs(BASE_MODIFIED_UNIX + 86_400 * u64::from(rev)),
        })
    }

    /// What a recrawl gets for `target` (see [`Change`]).
    pub fn change(&self, web: &Web, target: &Target) -> Change {
        match *target {
            Target::Page { host, page } if self.changed(web, host, page) => Change::Changed,
            Target::Page { host, .. } if validates(web, host) => Change::NotModified,
            Target::Page { .. } => Change::Unchanged,
            _ => Change::Fixed,
        }
    }
}

/// Adds the paragraph of a page changed at revision `number` to its rendered HTML
/// `body`: before the last `</body>`, or at the end when there is none.
pub fn mark_changed(body: &mut Vec<u8>, number: u32) {
    let para = format!("<p class=\"revision\">Updated in revision {number}.</p>\n");
    let at = memrfind(body, b"</body>").unwrap_or(body.len());
    body.splice(at..at, para.into_bytes());
}

fn memrfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Whether host `h` sends validators and answers conditional requests.
pub fn validates(web: &Web, h: u32) -> bool {
    hash(&[web.params.seed, TAG_REVISION, u64::from(h)]) % 4 != 0
}

/// The conditional headers of one request, as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conditional {
    /// `If-None-Match`, if any.
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`, if any.
    pub if_modified_since: Option<String>,
}

impl Conditional {
    /// True when a page with validators `v` is not modified for this request
    /// (RFC 9110 section 13.2.2: `If-None-Match` first; `If-Modified-Since` only
    /// without it; a date that does not parse is ignored).
    pub fn not_modified(&self, v: &Validators) -> bool {
        if let Some(list) = &self.if_none_match {
            let list = list.trim();
            return list == "*"
                || list.split(',').any(|t| {
                    let t = t.trim();
                    t.strip_prefix("W/").unwrap_or(t) == v.etag
                });
        }
        match self
            .if_modified_since
            .as_deref()
            .and_then(|d| httpdate::parse_http_date(d.trim()).ok())
        {
            Some(since) => v.modified <= since,
            None => false,
        }
    }
}

/// Writes `changes.tsv`: a header line, then `url  change` for each of `targets`
/// (the manifest's rows, in its order).
pub fn write_changes<'a>(
    web: &Web,
    revision: &Revision,
    targets: impl Iterator<Item = (&'a Target, String)>,
    out: &mut impl Write,
) -> io::Result<()> {
    writeln!(
        out,
        "#url\tchange\trevision={}\tchange_per_mille={}",
        revision.number, revision.change_per_mille
    )?;
    for (t, url) in targets {
        writeln!(out, "{url}\t{}", revision.change(web, t).name())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Params;

    fn web() -> Web {
        Web::new(Params::new(3, 40, 2000))
    }

    #[test]
    fn about_the_share_changes_and_revision_zero_is_the_original() {
        let w = web();
        let r0 = Revision::default();
        let r1 = Revision {
            number: 1,
            change_per_mille: 200,
        };
        let (mut changed, mut all) = (0, 0);
        for h in 0..w.generated() {
            for p in 0..w.hosts[h as usize].pages {
                all += 1;
                assert!(!r0.changed(&w, h, p));
                if r1.changed(&w, h, p) {
                    changed += 1;
                    if let (Some(a), Some(b)) = (r0.validators(&w, h, p), r1.validators(&w, h, p)) {
                        assert_ne!(a.etag, b.etag);
                        assert!(a.modified < b.modified);
                    }
                } else {
                    assert_eq!(r0.validators(&w, h, p), r1.validators(&w, h, p));
                }
            }
        }
        let share = f64::from(changed) / f64::from(all);
        assert!((0.17..0.23).contains(&share), "{changed} of {all}");
        let validating = (0..w.generated()).filter(|&h| validates(&w, h)).count();
        assert!((20..40).contains(&validating), "{validating}");
    }

    #[test]
    fn a_changed_page_gets_its_paragraph_inside_the_body() {
        let mut b = b"<html><body><p>x</p></body></html>\n".to_vec();
        mark_changed(&mut b, 2);
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "<html><body><p>x</p><p class=\"revision\">Updated in revision 2.</p>\n</body></html>\n"
        );
    }

    #[test]
    fn conditional_rules() {
        let v = Validators {
            etag: "\"00ab\"".into(),
            modified: SystemTime::UNIX_EPOCH + Duration::from_secs(BASE_MODIFIED_UNIX),
        };
        let c = |inm: Option<&str>, ims: Option<&str>| Conditional {
            if_none_match: inm.map(Into::into),
            if_modified_since: ims.map(Into::into),
        };
        assert!(c(Some("\"00ab\""), None).not_modified(&v));
        assert!(c(Some("\"x\", W/\"00ab\""), None).not_modified(&v));
        assert!(c(Some("*"), None).not_modified(&v));
        assert!(!c(Some("\"other\""), None).not_modified(&v));
        let at = "Thu, 01 Jan 2026 00:00:00 GMT";
        let before = "Wed, 31 Dec 2025 23:59:59 GMT";
        assert!(c(None, Some(at)).not_modified(&v));
        assert!(!c(None, Some(before)).not_modified(&v));
        assert!(!c(None, Some("yesterday")).not_modified(&v));
        // If-None-Match wins over a matching date.
        assert!(!c(Some("\"other\""), Some(at)).not_modified(&v));
        assert!(!c(None, None).not_modified(&v));
    }
}
