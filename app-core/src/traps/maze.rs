//! The maze detector's per-host state: endless generated pages with no number
//! or date in their URLs (a maze of words, paths that grow ever deeper with new
//! segments, one page served under every path). Such pages come from one
//! generator, so they share a *template* (the page with its own variable tokens
//! taken out: `pages::links::template`), and every one of them links new URLs
//! of the host: the space grows with every page read.
//!
//! Per host, the detector counts the pages read of each template and the
//! same-host links they gave, and how many of those links no page of the host
//! had given before. A template is a *maze* once at least `min_pages`
//! of its pages were read and they gave on average at least [`GROWTH`] new links
//! each: from then on, the same-host links of its pages are cut.
//!
//! Real sites are not cut: pages with text of their own (documentation,
//! articles) each have their own template; pages of one template that link
//! each other (prev/next, a table of contents, siblings) give about one new link
//! per page, not [`GROWTH`]. A site whose pages have no text of their own and
//! each link two or more new pages of the same kind (a tree of empty index
//! pages) is cut like a maze: it is indistinguishable from one by structure.
//! On a host whose set is mostly full (thousands of links), links read as
//! given before: the detector then errs toward not cutting.
//!
//! Memory: per host with an HTML page, at most [`MAX_TEMPLATES`] templates of
//! 32 bytes and a bit set of [`SEEN_BITS`] bits (512 bytes) to tell new links
//! from repeats (about 7 % of new links read as repeats once 300 are in it,
//! which only delays a verdict).
//! When the table is full, a new template takes the place of the one with the
//! fewest pages that is not a maze. Not saved: after a restart the counts start
//! again from zero.
//!
//! Counting only: this module never reads pages or files; it must never keep a
//! URL or a page, only hashes.

/// New same-host links per page, on average, that make a repeated template a
/// maze: 3/2 (a page linking two new pages of its kind or more).
pub(crate) const GROWTH: (u32, u32) = (3, 2);
/// Most templates tracked per host.
pub(crate) const MAX_TEMPLATES: usize = 16;
/// Bits of a host's set of links given.
pub(crate) const SEEN_BITS: usize = 4096;

/// One template's counts on one host.
#[derive(Debug)]
struct Slot {
    template: u64,
    /// Pages read with it.
    pages: u32,
    /// Of its same-host links since its second page, those no page of the host
    /// had given before.
    new_links: u32,
    maze: bool,
}

impl Slot {
    fn new(template: u64) -> Self {
        Self {
            template,
            pages: 0,
            new_links: 0,
            maze: false,
        }
    }
}

/// One host's templates.
#[derive(Debug, Default)]
pub(crate) struct HostTemplates {
    slots: Vec<Slot>,
    /// The same-host links any page of the host gave (allocated with the first
    /// page).
    seen: Option<Box<[u64; SEEN_BITS / 64]>>,
}

impl HostTemplates {
    /// A page of this host with `template` was read (its links follow): counts
    /// it and, once it has `min_pages` pages, gives the verdict.
    pub(crate) fn page(&mut self, template: u64, min_pages: u32) {
        let at = match self.slots.iter().position(|s| s.template == template) {
            Some(at) => at,
            None if self.slots.len() < MAX_TEMPLATES => {
                self.slots.push(Slot::new(template));
                self.slots.len() - 1
            }
            None => {
                let Some((at, _)) = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| !s.maze)
                    .min_by_key(|(_, s)| s.pages)
                else {
                    return;
                };
                self.slots[at] = Slot::new(template);
                at
            }
        };
        if self.seen.is_none() {
            self.seen = Some(Box::new([0; SEEN_BITS / 64]));
        }
        let slot = &mut self.slots[at];
        slot.pages = slot.pages.saturating_add(1);
        // Pages since the second, whose links were counted.
        let counted = slot.pages.saturating_sub(2);
        let (num, den) = GROWTH;
        if !slot.maze
            && slot.pages >= min_pages.max(2)
            && u64::from(slot.new_links) * u64::from(den) >= u64::from(counted) * u64::from(num)
        {
            slot.maze = true;
        }
    }

    /// A same-host link (hash `link`) of a page with `template`: false when that
    /// template is a maze (the link is cut).
    pub(crate) fn link(&mut self, template: u64, link: u64) -> bool {
        let mut new = false;
        if let Some(seen) = &mut self.seen {
            let bit = (link % SEEN_BITS as u64) as usize;
            let (word, mask) = (bit / 64, 1u64 << (bit % 64));
            new = seen[word] & mask == 0;
            seen[word] |= mask;
        }
        let Some(slot) = self.slots.iter_mut().find(|s| s.template == template) else {
            return true;
        };
        if slot.maze {
            return false;
        }
        if new && slot.pages >= 2 {
            slot.new_links = slot.new_links.saturating_add(1);
        }
        true
    }

    /// Whether `template` is a maze here.
    #[cfg(test)]
    pub(crate) fn is_maze(&self, template: u64) -> bool {
        self.slots.iter().any(|s| s.template == template && s.maze)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pseudo-random stream (a 64-bit LCG's high bits).
    fn stream(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            x >> 11
        }
    }

    #[test]
    fn a_template_whose_pages_each_give_new_links_is_a_maze() {
        let mut h = HostTemplates::default();
        let mut next = stream(1);
        for n in 1..=100 {
            h.page(7, 100);
            assert_eq!(h.is_maze(7), n == 100, "page {n}");
            if n < 100 {
                for _ in 0..3 {
                    assert!(h.link(7, next()));
                }
            }
        }
        assert!(!h.link(7, next()), "its links are cut");
        assert!(h.link(8, next()), "another template's are not");
    }

    #[test]
    fn pages_of_one_template_linking_each_other_are_not_a_maze() {
        // A table of contents (its own template) listing 3,000 pages of one
        // template, each linking its previous and next page and the table of
        // contents, read in a shuffled order.
        let mut h = HostTemplates::default();
        let mut next = stream(2);
        h.page(1, 100);
        for p in 0..3_001u64 {
            assert!(h.link(1, p.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        }
        let mut order: Vec<u64> = (0..3_000).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        for p in order {
            h.page(7, 100);
            for link in [p.saturating_sub(1), p + 1, 1_000_000] {
                assert!(h.link(7, link.wrapping_mul(0x9e37_79b9_7f4a_7c15)), "{p}");
            }
        }
        assert!(!h.is_maze(7));
    }

    #[test]
    fn the_table_keeps_the_templates_with_most_pages() {
        let mut h = HostTemplates::default();
        let mut next = stream(3);
        for n in 0..2_000u64 {
            // One repeated template among a stream of unique ones.
            h.page(n + 100, 50);
            h.page(7, 50);
            for _ in 0..3 {
                h.link(7, next());
            }
        }
        assert!(h.is_maze(7));
        assert!(h.slots.len() <= MAX_TEMPLATES);
    }
}
