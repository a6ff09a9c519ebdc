//! `--robots-tags`: pages that carry robots directives of their own, in the
//! `X-Robots-Tag` response header or a `<meta>` element, for checking a crawler's
//! reading of them against `robots-tags.tsv` (every such page a correct crawl
//! fetches, and what a crawler that obeys them does).
//!
//! 6 % of the non-home pages of the generated hosts carry one of [`KINDS`], drawn
//! from their own random stream (no other draw changes; without the flag the web
//! is what it was). For an obeying crawler (agent `polycrawl`): `nofollow` and
//! `none` — no link of the page followed (such a page also links a `/hidden/` page
//! nothing else links, as websim's nofollow pages do); `noarchive` — fetched and
//! followed, body not archived; `noindex` and another agent's directives — nothing.
//! It must never look at the crawler's crates: it is an oracle.

use super::rng::{Rng, TAG_ROBOTS};

/// One kind of page directives.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RobotsTag {
    /// Its name in `robots-tags.tsv`.
    pub name: &'static str,
    /// The header lines it adds to the response (CRLF-terminated), or `""`.
    pub header: &'static str,
    /// The `<meta>` element it adds to the page's head, or `""`.
    pub meta: &'static str,
    /// An obeying crawler follows none of the page's links.
    pub nofollow: bool,
    /// An obeying crawler keeps the page's body out of its archive.
    pub noarchive: bool,
}

const fn tag(name: &'static str, header: &'static str, meta: &'static str) -> RobotsTag {
    RobotsTag {
        name,
        header,
        meta,
        nofollow: false,
        noarchive: false,
    }
}

const fn nofollow(t: RobotsTag) -> RobotsTag {
    RobotsTag {
        nofollow: true,
        ..t
    }
}

const fn noarchive(t: RobotsTag) -> RobotsTag {
    RobotsTag {
        noarchive: true,
        ..t
    }
}

/// Every kind, in draw order.
pub const KINDS: [RobotsTag; 8] = [
    nofollow(tag("header_nofollow", "X-Robots-Tag: nofollow\r\n", "")),
    nofollow(tag("header_none", "X-Robots-Tag: NONE\r\n", "")),
    // Another agent's noarchive, then ours, with a valued directive.
    nofollow(tag(
        "header_ours",
        "X-Robots-Tag: otherbot: noarchive\r\nx-robots-tag: polycrawl: nofollow, max-snippet: 20\r\n",
        "",
    )),
    tag(
        "header_other",
        "X-Robots-Tag: otherbot: nofollow, noarchive\r\n",
        "",
    ),
    // A date with commas and colons before the directive.
    noarchive(tag(
        "header_noarchive",
        "X-Robots-Tag: unavailable_after: Saturday, 01-Jul-34 12:00:00 GMT, noarchive\r\n",
        "",
    )),
    tag(
        "meta_noindex",
        "",
        "<meta name=\"robots\" content=\"noindex\">\n",
    ),
    noarchive(tag(
        "meta_noarchive",
        "",
        "<meta name=\"polycrawl\" content=\"noarchive\">\n",
    )),
    nofollow(noarchive(tag(
        "meta_noarchive_nofollow",
        "",
        "<META NAME=\"ROBOTS\" CONTENT=\"noarchive, nofollow\">\n",
    ))),
];

/// The directives of page `page` of host `host`, if it has some: 6 % of the
/// non-home pages, when `on`.
pub fn of(on: bool, seed: u64, host: u32, page: u32) -> Option<&'static RobotsTag> {
    if !on || page == 0 {
        return None;
    }
    let mut r = Rng::for_parts(&[seed, TAG_ROBOTS, u64::from(host), u64::from(page)]);
    r.chance(60)
        .then(|| &KINDS[r.below(KINDS.len() as u64) as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_every_kind_drawn_when_on() {
        assert!((0..2000).all(|p| of(false, 1, 0, p).is_none()));
        assert!(of(true, 1, 0, 0).is_none(), "never a home page");
        let drawn: Vec<&RobotsTag> = (0..20_000).filter_map(|p| of(true, 7, 3, p)).collect();
        assert!((900..1500).contains(&drawn.len()), "{}", drawn.len());
        for kind in &KINDS {
            assert!(drawn.contains(&kind), "{}", kind.name);
            assert!(kind.header.is_empty() != kind.meta.is_empty());
        }
    }
}
