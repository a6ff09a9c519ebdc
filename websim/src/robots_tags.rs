//! `--robots-tags`: pages that carry robots directives of their own, in the
//! `X-Robots-Tag` response header or a `<meta>` element, so that a test can check
//! a crawler's reading of them against the manifest (`robots-tags.tsv` names every
//! such page a correct crawl fetches, with what a crawler that obeys them does).
//!
//! With the flag, 6 % of non-home pages of the generated hosts carry one
//! [`RobotsTag`], drawn from their own random stream (so no other draw changes and
//! without the flag the web is what it was). What an obeying crawler does
//! (agent `polycrawl`, see `pages::directives` of the crawler for the meaning):
//! `nofollow` and `none` — the page's links are not followed (such a page also
//! links a `/hidden/` page nothing else links, as websim's nofollow pages do);
//! `noarchive` — the page is fetched, its links followed, its body not archived;
//! `noindex` — nothing (an archive keeps the page); directives for another agent —
//! nothing. This module must never look at the crawler's crates: it is an oracle.

use super::rng::{Rng, TAG_ROBOTS};

/// The directives a page carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RobotsTag {
    /// `X-Robots-Tag: nofollow`.
    HeaderNofollow,
    /// `X-Robots-Tag: NONE` (noindex and nofollow).
    HeaderNone,
    /// Another agent's `noarchive`, then ours: `nofollow` (with a valued directive).
    HeaderOurs,
    /// Only another agent's `nofollow, noarchive`: nothing for us.
    HeaderOther,
    /// `noarchive` after an `unavailable_after` date holding commas and colons.
    HeaderNoarchive,
    /// `<meta name="robots" content="noindex">`: stored and followed.
    MetaNoindex,
    /// `<meta name="polycrawl" content="noarchive">`.
    MetaNoarchive,
    /// `<META NAME="ROBOTS" CONTENT="noarchive, nofollow">`.
    MetaNoarchiveNofollow,
}

impl RobotsTag {
    /// Every kind, in draw order.
    pub const ALL: [RobotsTag; 8] = [
        RobotsTag::HeaderNofollow,
        RobotsTag::HeaderNone,
        RobotsTag::HeaderOurs,
        RobotsTag::HeaderOther,
        RobotsTag::HeaderNoarchive,
        RobotsTag::MetaNoindex,
        RobotsTag::MetaNoarchive,
        RobotsTag::MetaNoarchiveNofollow,
    ];

    /// The page's tag, if it has one: 6 % of the non-home pages, when `on`.
    pub fn of(on: bool, seed: u64, host: u32, page: u32) -> Option<RobotsTag> {
        if !on || page == 0 {
            return None;
        }
        let mut r = Rng::for_parts(&[seed, TAG_ROBOTS, u64::from(host), u64::from(page)]);
        r.chance(60)
            .then(|| RobotsTag::ALL[r.below(RobotsTag::ALL.len() as u64) as usize])
    }

    /// The header lines it adds to the response (CRLF-terminated), or `""`.
    pub fn header(self) -> &'static str {
        match self {
            RobotsTag::HeaderNofollow => "X-Robots-Tag: nofollow\r\n",
            RobotsTag::HeaderNone => "X-Robots-Tag: NONE\r\n",
            RobotsTag::HeaderOurs => {
                "X-Robots-Tag: otherbot: noarchive\r\nx-robots-tag: polycrawl: nofollow, max-snippet: 20\r\n"
            }
            RobotsTag::HeaderOther => "X-Robots-Tag: otherbot: nofollow, noarchive\r\n",
            RobotsTag::HeaderNoarchive => {
                "X-Robots-Tag: unavailable_after: Saturday, 01-Jul-34 12:00:00 GMT, noarchive\r\n"
            }
            _ => "",
        }
    }

    /// The `<meta>` element it adds to the page's head, or `""`.
    pub fn meta(self) -> &'static str {
        match self {
            RobotsTag::MetaNoindex => "<meta name=\"robots\" content=\"noindex\">\n",
            RobotsTag::MetaNoarchive => "<meta name=\"polycrawl\" content=\"noarchive\">\n",
            RobotsTag::MetaNoarchiveNofollow => {
                "<META NAME=\"ROBOTS\" CONTENT=\"noarchive, nofollow\">\n"
            }
            _ => "",
        }
    }

    /// An obeying crawler does not follow the page's links.
    pub fn nofollow(self) -> bool {
        matches!(
            self,
            RobotsTag::HeaderNofollow
                | RobotsTag::HeaderNone
                | RobotsTag::HeaderOurs
                | RobotsTag::MetaNoarchiveNofollow
        )
    }

    /// An obeying crawler keeps the page's body out of its archive.
    pub fn noarchive(self) -> bool {
        matches!(
            self,
            RobotsTag::HeaderNoarchive
                | RobotsTag::MetaNoarchive
                | RobotsTag::MetaNoarchiveNofollow
        )
    }

    /// Its name in `robots-tags.tsv`.
    pub fn name(self) -> &'static str {
        match self {
            RobotsTag::HeaderNofollow => "header_nofollow",
            RobotsTag::HeaderNone => "header_none",
            RobotsTag::HeaderOurs => "header_ours",
            RobotsTag::HeaderOther => "header_other",
            RobotsTag::HeaderNoarchive => "header_noarchive",
            RobotsTag::MetaNoindex => "meta_noindex",
            RobotsTag::MetaNoarchive => "meta_noarchive",
            RobotsTag::MetaNoarchiveNofollow => "meta_noarchive_nofollow",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_every_kind_drawn_when_on() {
        assert!((0..2000).all(|p| RobotsTag::of(false, 1, 0, p).is_none()));
        assert!(RobotsTag::of(true, 1, 0, 0).is_none(), "never a home page");
        let drawn: Vec<RobotsTag> = (0..20_000)
            .filter_map(|p| RobotsTag::of(true, 7, 3, p))
            .collect();
        assert!((900..1500).contains(&drawn.len()), "{}", drawn.len());
        for kind in RobotsTag::ALL {
            assert!(drawn.contains(&kind), "{kind:?}");
            assert!(kind.header().is_empty() != kind.meta().is_empty());
        }
    }
}
