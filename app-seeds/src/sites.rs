//! The sites' duplicate filters: one [`Bloom`] filter per site, shared by the
//! site's parties, kept while a party of the site is held or a seed of it is
//! queued (so a seed dealt later still finds what its site met), and dropped
//! then. It also counts the queued seeds per site and the most filters held.
//!
//! It must never decide which party is crawled or hold a URL itself: the
//! filters answer "met before?" only. A filter is of a fixed size, so a site
//! that meets many more URLs than it was sized for starts taking new URLs as
//! met: the first time a site's filter passes [`WARN_FP_RATE`] expected false
//! positives it says so (a warning naming the site, and a count in the
//! summary line), since the pages skipped cannot be named.
//!
//! Memory: `context_bytes` per site kept, O(sites with a queued seed) for the
//! counts.

use std::collections::HashMap;

use tracing::warn;

use super::bloom::Bloom;

/// The expected false-positive rate past which a site's filter is reported
/// (1 %: past it, about one new URL in a hundred is taken as met).
pub(super) const WARN_FP_RATE: f64 = 0.01;

/// One site's filter and the parties that share it.
#[derive(Debug)]
pub(super) struct SiteFilter {
    pub(super) bloom: Bloom,
    /// Parties of the site held now.
    pub(super) active: usize,
    /// Whether this filter was reported past [`WARN_FP_RATE`] (this run).
    warned: bool,
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
    /// Sites whose filter passed [`WARN_FP_RATE`] (this run).
    saturated: usize,
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
            saturated: 0,
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
        self.filters.insert(
            site.to_owned(),
            SiteFilter {
                bloom,
                active: 0,
                warned: false,
            },
        );
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

    /// After `site`'s filter took a page's links: the first time its expected
    /// false-positive rate is past [`WARN_FP_RATE`], a warning and one more
    /// site counted. O(1).
    pub(super) fn check_fill(&mut self, site: &str) {
        let Some(filter) = self.filters.get_mut(site).filter(|f| !f.warned) else {
            return;
        };
        let rate = filter.bloom.expected_fp_rate();
        if rate <= WARN_FP_RATE {
            return;
        }
        filter.warned = true;
        self.saturated += 1;
        warn!(
            site,
            urls = filter.bloom.inserted(),
            bytes = filter.bloom.bytes(),
            false_positives = format!("{:.1} %", rate * 100.0),
            "seeds: the site's duplicate filter is past 1 % false positives: new URLs \
             of it are taken as met and not fetched ever more often; give each site \
             more bytes (seed_context_bytes, --seed-context-bytes)"
        );
    }

    /// Sites whose filter passed [`WARN_FP_RATE`] in this run.
    pub(super) fn saturated(&self) -> usize {
        self.saturated
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_past_one_percent_is_reported_once() {
        // 64 bytes: 512 bits, past 1 % expected false positives at about 53
        // URLs (the rate is (1 - e^(-7 n / 512))^7).
        let mut sites = Sites::new(64);
        sites.start_party("a.test");
        for i in 0..40 {
            sites
                .filter("a.test")
                .bloom
                .insert(&format!("http://a.test/{i}"));
        }
        sites.check_fill("a.test");
        assert_eq!(sites.saturated(), 0, "40 URLs: under 1 %");
        for i in 40..80 {
            sites
                .filter("a.test")
                .bloom
                .insert(&format!("http://a.test/{i}"));
        }
        let rate = sites.filter("a.test").bloom.expected_fp_rate();
        assert!(rate > WARN_FP_RATE, "{rate}");
        sites.check_fill("a.test");
        sites.check_fill("a.test");
        assert_eq!(sites.saturated(), 1, "reported once");
        // The measured rate agrees with the expected one within a factor of 3.
        let measured = sites.filter("a.test").bloom.fp_rate();
        assert!(
            measured > rate / 3.0 && measured < rate * 3.0,
            "{measured} {rate}"
        );
        sites.check_fill("nothing.test");
        assert_eq!(sites.saturated(), 1);
    }
}
