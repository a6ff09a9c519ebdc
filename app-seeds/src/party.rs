//! A party (SCrawler section 2): the pages locally reachable from one seed inside
//! its site, crawled breadth-first with the party's own duplicate filter.
//!
//! A party's site is the seed's origin (scheme, host, port): a link to that origin
//! is internal and joins the party's frontier; any other link is external and is a
//! candidate seed, never followed. The duplicate filter holds every URL the party
//! met, internal or external, so each is queued or written out once per party.
//!
//! Memory: O(URLs the party met) for the filter and the frontier, freed when the
//! party ends; a crawl holds at most `workers × m` parties at once.

use std::collections::{HashSet, VecDeque};

use url::Url;

/// What one link was to the party.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Met {
    /// Seen before by this party: nothing to do.
    Again,
    /// New and inside the site: queued in the frontier.
    Internal,
    /// New and outside the site: a candidate seed.
    External,
}

/// One seed's crawl state (the paper's seed context).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Party {
    /// The canonical seed URL.
    pub seed: String,
    /// The seed's origin (`scheme://host:port`).
    pub site: String,
    /// Every URL met, internal or external (the duplicate filter).
    pub seen: HashSet<String>,
    /// Internal URLs not yet requested, breadth-first, with their depth.
    pub frontier: VecDeque<(String, u32)>,
    /// Requested URLs whose page or outcome has not come back.
    pub in_flight: usize,
    /// Pages (responses) that came back for it.
    pub pages: u64,
}

impl Party {
    /// A party with only its seed in the frontier.
    pub fn new(seed: &Url) -> Self {
        let seed_text = seed.to_string();
        let mut party = Self {
            seed: seed_text.clone(),
            site: seed.origin().ascii_serialization(),
            seen: HashSet::new(),
            frontier: VecDeque::new(),
            in_flight: 0,
            pages: 0,
        };
        party.seen.insert(seed_text.clone());
        party.frontier.push_back((seed_text, 0));
        party
    }

    /// A party read back from saved state (`seen`, `frontier` filled by the caller).
    pub fn restored(seed: String, site: String, pages: u64) -> Self {
        Self {
            seed,
            site,
            seen: HashSet::new(),
            frontier: VecDeque::new(),
            in_flight: 0,
            pages,
        }
    }

    /// Meets a link found at `depth` (the linking page's depth plus one).
    pub fn meet(&mut self, link: &Url, depth: u32) -> Met {
        let text = link.to_string();
        if self.seen.contains(&text) {
            return Met::Again;
        }
        self.seen.insert(text.clone());
        if link.origin().ascii_serialization() == self.site {
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
        let mut p = Party::new(&url("http://a.test/x"));
        assert_eq!(p.frontier.len(), 1);
        assert_eq!(p.meet(&url("http://a.test/y"), 1), Met::Internal);
        assert_eq!(p.meet(&url("http://a.test/y"), 1), Met::Again);
        assert_eq!(p.meet(&url("http://a.test/x"), 1), Met::Again);
        assert_eq!(p.meet(&url("http://b.test/"), 1), Met::External);
        assert_eq!(p.meet(&url("http://b.test/"), 1), Met::Again);
        // Another port or scheme is another site.
        assert_eq!(p.meet(&url("http://a.test:8080/"), 1), Met::External);
        assert_eq!(p.meet(&url("https://a.test/"), 1), Met::External);
        assert_eq!(p.frontier.len(), 2);
        assert!(!p.is_done());
        p.frontier.clear();
        assert!(p.is_done());
        p.in_flight = 1;
        assert!(!p.is_done() && !p.is_inactive());
    }
}
