//! The sites' duplicate filters: one [`Bloom`] filter per site, shared by the
//! site's parties, kept while a party of the site is held or a seed of it is
//! queued (so a seed dealt later still finds what its site met), and dropped
//! then. It also counts the queued seeds per site and the most filters held.
//!
//! It must never decide which party is crawled or hold a URL itself: the
//! filters answer "met before?" only.
//!
//! Memory: `context_bytes` per site kept, O(sites with a queued seed) for the
//! counts.

use std::collections::HashMap;

use super::bloom::Bloom;

/// One site's filter and the parties that share it.
#[derive(Debug)]
pub(super) struct SiteFilter {
    pub(super) bloom: Bloom,
    /// Parties of the site held now.
    pub(super) active: usize,
}

/// The filters of the sites with a party held, or started and a seed queued.
#[derive(Debug)]
pub(super) struct Sites {
    /// Queued seeds per site (sites with none are not kept).
    queued: HashMap<String, usize>,
    filters: HashMap<String, SiteFilter>,
    /// A new filter's size.
    context_bytes: usize,
    /// The most filters held at once (this run).
    peak: usize,
    /// The largest filter held (this run), in bytes.
    bytes_max: usize,
}

impl Sites {
    /// No site; new filters of `context_bytes` bytes.
    pub(super) fn new(context_bytes: usize) -> Self {
        Self {
            queued: HashMap::new(),
            filters: HashMap::new(),
            context_bytes,
            peak: 0,
            bytes_max: 0,
        }
    }

    /// A seed of `site` was queued.
    pub(super) fn queued(&mut self, site: String) {
        *self.queued.entry(site).or_default() += 1;
    }

    /// A seed of `site` left the queue for a party: the site's filter (made
    /// now if it has none), its party count one more. O(1).
    pub(super) fn start_party(&mut self, site: &str) -> &mut SiteFilter {
        if let Some(n) = self.queued.get_mut(site) {
            *n -= 1;
            if *n == 0 {
                self.queued.remove(site);
            }
        }
        let filter = self.filter(site);
        filter.active += 1;
        filter
    }

    /// The filter of `site`, made if it has none. O(1).
    pub(super) fn filter(&mut self, site: &str) -> &mut SiteFilter {
        if !self.filters.contains_key(site) {
            let bloom = Bloom::with_bytes(self.context_bytes);
            self.insert(site, bloom);
        }
        self.filters.get_mut(site).expect("inserted above")
    }

    /// The held filter of `site`, if any.
    pub(super) fn get_mut(&mut self, site: &str) -> Option<&mut SiteFilter> {
        self.filters.get_mut(site)
    }

    /// Keeps `bloom` (read back from the state) as the filter of `site`.
    pub(super) fn insert(&mut self, site: &str, bloom: Bloom) {
        self.bytes_max = self.bytes_max.max(bloom.bytes());
        self.filters
            .insert(site.to_owned(), SiteFilter { bloom, active: 0 });
        self.peak = self.peak.max(self.filters.len());
    }

    /// A party of `site` ended: returns its filter's false-positive rate now,
    /// and drops the filter once no party of the site is held and no seed of it
    /// is queued. O(filter bytes).
    pub(super) fn end_party(&mut self, site: &str) -> f64 {
        let Some(filter) = self.filters.get_mut(site) else {
            return 0.0;
        };
        filter.active = filter.active.saturating_sub(1);
        let fp = filter.bloom.fp_rate();
        if filter.active == 0 && !self.queued.contains_key(site) {
            self.filters.remove(site);
        }
        fp
    }

    /// The filters, for the state file.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &Bloom)> {
        self.filters.iter().map(|(site, f)| (site, &f.bloom))
    }

    /// Filters held now, the most held at once and the largest one's bytes
    /// (this run).
    pub(super) fn figures(&self) -> (usize, usize, usize) {
        (self.filters.len(), self.peak, self.bytes_max)
    }
}
