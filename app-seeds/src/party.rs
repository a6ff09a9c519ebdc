//! A party (SCrawler section 2): the pages locally reachable from one seed inside
//! its site, crawled breadth-first.
//!
//! A party's site is the seed's origin (scheme, host, port): a link to that origin
//! is internal and joins the party's frontier; any other link is external and is a
//! candidate seed, never followed. The duplicate filter is its site's Bloom filter
//! ([`Bloom`]), shared by every party of the site held or queued: each URL, internal
//! or external, is queued or written out once per site, so two parties of one site
//! never fetch their overlap twice. That loses no page: a URL another party of the
//! site met is in that party, and so is everything it leads to inside the site.
//!
//! Memory: O(URLs queued and not yet requested) for the frontier, freed when the
//! party ends; the filter is the site's, of a fixed size. A crawl holds at most
//! `workers × m` parties at once.

use std::collections::VecDeque;

use url::Url;

use super::bloom::Bloom;

/// What one link was to the party.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Met {
    /// Met before by a party of this site (or a Bloom false positive): nothing to do.
    Again,
    /// New and inside the site: queued in the frontier.
    Internal,
    /// New and outside the site: a candidate seed.
    External,
}

/// One seed's crawl state (the paper's seed context, less the filter: its site's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Party {
    /// The canonical seed URL.
    pub seed: String,
    /// The seed's origin (`scheme://host:port`).
    pub site: String,
    /// Internal URLs not yet requested, breadth-first, with their depth.
    pub frontier: VecDeque<(String, u32)>,
    /// Requested URLs whose page or outcome has not come back.
    pub in_flight: usize,
    /// Pages (responses) that came back for it.
    pub pages: u64,
}

/// The origin of `url` as a party's site.
pub fn site_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

impl Party {
    /// A party with its seed in the frontier, unless the site's `filter` holds
    /// the seed already (another party of the site met it: this party is inside
    /// that one and ends at once, with no page).
    pub fn new(seed: &Url, filter: &mut Bloom) -> Self {
        let seed_text = seed.to_string();
        let mut party = Self::restored(seed_text.clone(), site_of(seed), 0);
        if filter.insert(&seed_text) {
            party.frontier.push_back((seed_text, 0));
        }
        party
    }

    /// A party read back from saved state (`frontier` filled by the caller).
    pub fn restored(seed: String, site: String, pages: u64) -> Self {
        Self {
            seed,
            site,
            frontier: VecDeque::new(),
            in_flight: 0,
            pages,
        }
    }

    /// Meets a link found at `depth` (the linking page's depth plus one); `filter`
    /// is the site's.
    pub fn meet(&mut self, filter: &mut Bloom, link: &Url, depth: u32) -> Met {
        let text = link.to_string();
        if !filter.insert(&text) {
            return Met::Again;
        }
        if site_of(link) == self.site {
            self.frontier.push_back((text, depth));
            Met::Internal
        } else {
            Met::External
        }
    }

    /// Nothing queued, nothing in flight: the party is over.
    pub fn is_done(&self) -> bool {
        self.frontier.is_empty() && self.in_flight == 0
    }

    /// Held but not being crawled now (nothing in flight): may move to another worker.
    pub fn is_inactive(&self) -> bool {
        self.in_flight == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    #[test]
    fn internal_links_join_the_frontier_once_and_external_ones_are_candidates() {
        let mut f = Bloom::with_bytes(1024);
        let mut p = Party::new(&url("http://a.test/x"), &mut f);
        assert_eq!(p.frontier.len(), 1);
        assert_eq!(p.meet(&mut f, &url("http://a.test/y"), 1), Met::Internal);
        assert_eq!(p.meet(&mut f, &url("http://a.test/y"), 1), Met::Again);
        assert_eq!(p.meet(&mut f, &url("http://a.test/x"), 1), Met::Again);
        assert_eq!(p.meet(&mut f, &url("http://b.test/"), 1), Met::External);
        assert_eq!(p.meet(&mut f, &url("http://b.test/"), 1), Met::Again);
        // Another port or scheme is another site.
        assert_eq!(
            p.meet(&mut f, &url("http://a.test:8080/"), 1),
            Met::External
        );
        assert_eq!(p.meet(&mut f, &url("https://a.test/"), 1), Met::External);
        assert_eq!(p.frontier.len(), 2);
        assert!(!p.is_done());
        p.frontier.clear();
        assert!(p.is_done());
        p.in_flight = 1;
        assert!(!p.is_done() && !p.is_inactive());
    }

    #[test]
    fn parties_of_one_site_never_queue_their_overlap_twice() {
        let mut f = Bloom::with_bytes(1024);
        let mut a = Party::new(&url("http://a.test/"), &mut f);
        let mut b = Party::new(&url("http://a.test/b"), &mut f);
        assert_eq!(a.meet(&mut f, &url("http://a.test/c"), 1), Met::Internal);
        assert_eq!(b.meet(&mut f, &url("http://a.test/c"), 1), Met::Again);
        // A seed the site met already starts a party that is over at once.
        let c = Party::new(&url("http://a.test/c"), &mut f);
        assert!(c.is_done() && c.pages == 0);
        assert_eq!(b.frontier.len(), 1);
    }
}
