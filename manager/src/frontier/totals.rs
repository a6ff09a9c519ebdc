//! The crawl's fetch figures over its whole life (Polybot tables 4.1 and 4.2):
//! requests answered, bytes received, page responses per HTTP status code and
//! failed attempts per reason. They are kept with the frontier's state: written in
//! the same RocksDB batch as the report that changes them, so after a kill -9 they
//! count exactly the reports the frontier had applied.
//!
//! Size: one counter per status code seen (at most 900) and one per outcome
//! reason: bounded, whatever the crawl's size. This module must never count per
//! URL or per host.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use spool::OutcomeReason;
use spool::protocol::{FetchPurpose, FetchResult, ReasonCount, StatusCount};

/// `meta` key of [`FetchTotals`].
pub(crate) const META_TOTALS: &[u8] = b"fetch_totals";

/// Fetch figures since the crawl's state was created.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchTotals {
    /// Fetches a downloader reported as answered or failed (pages and robots.txt;
    /// jobs handed back unstarted are not requests).
    pub requests: u64,
    /// Response bytes as read from the socket (pages and robots.txt).
    pub wire_bytes: u64,
    /// Page responses per HTTP status code.
    pub status: BTreeMap<u16, u64>,
    /// Failed attempts per reason, by index in [`OutcomeReason::ALL`] (reasons are
    /// only ever appended, so old states read right).
    pub errors: Vec<u64>,
}

impl FetchTotals {
    /// Counts one report.
    pub(super) fn count(&mut self, result: &FetchResult, purpose: FetchPurpose) {
        match result {
            FetchResult::Stored(page) => {
                self.requests += 1;
                self.wire_bytes += page.wire_bytes;
                if purpose == FetchPurpose::Page {
                    *self.status.entry(page.status).or_insert(0) += 1;
                }
            }
            FetchResult::Failed { reason, .. } => {
                self.requests += 1;
                if let Some(i) = OutcomeReason::ALL.iter().position(|r| r == reason) {
                    if self.errors.len() <= i {
                        self.errors.resize(OutcomeReason::ALL.len(), 0);
                    }
                    self.errors[i] += 1;
                }
            }
            FetchResult::Returned => {}
        }
    }

    /// Page responses per status code, ascending.
    pub fn status_counts(&self) -> Vec<StatusCount> {
        self.status
            .iter()
            .map(|(&code, &count)| StatusCount { code, count })
            .collect()
    }

    /// Page responses per status class (1xx .. 5xx; index 0 for codes outside).
    pub fn status_classes(&self) -> [u64; 6] {
        let mut out = [0; 6];
        for (&code, &count) in &self.status {
            let class = usize::from(code / 100);
            out[if (1..=5).contains(&class) { class } else { 0 }] += count;
        }
        out
    }

    /// Failed attempts per reason, every reason a fetch can fail with listed (not
    /// [`OutcomeReason::Sitemap`], which is no failure).
    pub fn error_counts(&self) -> Vec<ReasonCount> {
        OutcomeReason::ALL
            .iter()
            .enumerate()
            .filter(|(_, r)| **r != OutcomeReason::Sitemap)
            .map(|(i, &reason)| ReasonCount {
                reason,
                count: self.errors.get(i).copied().unwrap_or(0),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_code_class_and_reason() {
        let mut t = FetchTotals::default();
        let failed = FetchResult::Failed {
            reason: OutcomeReason::Timeout,
            detail: String::new(),
        };
        t.count(&failed, FetchPurpose::Page);
        t.count(&FetchResult::Returned, FetchPurpose::Page);
        assert_eq!(t.requests, 1);
        let errors = t.error_counts();
        assert_eq!(
            errors.len(),
            OutcomeReason::ALL.len() - 1,
            "all but sitemap"
        );
        assert_eq!(errors.iter().map(|e| e.count).sum::<u64>(), 1);
        t.status.insert(200, 3);
        t.status.insert(404, 1);
        t.status.insert(999, 1);
        assert_eq!(t.status_classes(), [1, 0, 3, 0, 1, 0]);
    }
}
