//! [`Summary`]: the application's own counts, printed as one line at the end.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use app_core::cuts::RuleCuts;

pub use app_core::End;

/// The application's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The application id.
    pub app: String,
    /// Why it ended.
    pub end: End,
    /// URLs written into request files over the crawl.
    pub urls_requested: u64,
    /// What became of the pages: stored, as what, and kept out.
    pub pages: PageCounts,
    /// The crawl log is on (`crawl_log`): the payload bytes are counted (what the
    /// hosts report's bytes add up to), and the line says them.
    pub crawl_log: bool,
    /// Outcomes read, by reason.
    pub outcomes: BTreeMap<String, u64>,
    /// Page batches quarantined in this run.
    pub batches_quarantined: u64,
    /// Distinct URLs in the seen set.
    pub seen_keys: u64,
    /// What the crawl did not request: its scope, the cuts by rule, the budgets.
    pub cut: CutSummary,
    /// The hosts the manager gave up on (their URLs ended `too_many_failures`),
    /// each with why (`given_up`).
    pub given_up: crate::given_up::GivenUp,
    /// In a split crawl: this part, the number of parts, the mode and the counters.
    pub part: Option<PartLine>,
}

/// What became of a crawl's pages, in its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageCounts {
    /// Response records stored in the repository over the crawl.
    pub stored: u64,
    /// Of those, duplicates stored as identical-payload-digest revisits.
    pub revisits_identical: u64,
    /// Of those, 304s stored as server-not-modified revisits (a recrawl).
    pub revisits_not_modified: u64,
    /// Payload bytes (after the HTTP head) of the records stored, counted while
    /// the crawl log is on.
    pub payload_bytes: u64,
    /// Pages whose links robots directives kept from being followed.
    pub robots_nofollow: u64,
    /// Pages whose body robots directives kept out of the repository.
    pub robots_withheld: u64,
}

/// What a crawl did not request, in its summary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CutSummary {
    /// The crawl's scope, as `Scope::describe` says it.
    pub scope: String,
    /// In-scope URLs cut and never requested, by rule (`cuts.rs`).
    pub by_rule: BTreeMap<String, RuleCuts>,
    /// The list of those URLs (`cut.tsv`), when there are any.
    pub file: Option<PathBuf>,
    /// New URLs not requested because their host's budget was used up.
    pub budget_cut: u64,
    /// Redirect targets not requested: the chain was too long.
    pub redirects_cut: u64,
    /// Links cut by the other trap detectors, by name (see `traps`).
    pub trap_cuts: BTreeMap<String, u64>,
    /// The hosts with the most URLs cut by their budget (this run), most first.
    pub most_cut: Vec<app_core::HostCut>,
}

impl CutSummary {
    /// URLs and hosts cut in scope, all rules (a URL counts under one rule; a
    /// host under each rule that cut it).
    pub fn totals(&self) -> RuleCuts {
        RuleCuts {
            urls: self.by_rule.values().map(|c| c.urls).sum(),
            hosts: self.by_rule.values().map(|c| c.hosts).sum(),
        }
    }

    /// `, N URLs cut by host budgets, ..., scope ..., cut in scope: ..., links cut
    /// by trap detectors: ...`.
    fn write_counts(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            ", {} URLs cut by host budgets, {} redirects cut, scope {}",
            self.budget_cut, self.redirects_cut, self.scope
        )?;
        if !self.by_rule.is_empty() {
            let parts: Vec<String> = self
                .by_rule
                .iter()
                .map(|(rule, c)| format!("{rule}={}/{}", c.urls, c.hosts))
                .collect();
            write!(
                f,
                ", cut in scope: {} URLs (URLs/hosts by rule: {})",
                self.totals().urls,
                parts.join(" ")
            )?;
            if let Some(file) = &self.file {
                write!(f, ", listed in {}", file.display())?;
            }
        }
        if !self.trap_cuts.is_empty() {
            let parts: Vec<String> = self
                .trap_cuts
                .iter()
                .map(|(d, n)| format!("{d}={n}"))
                .collect();
            write!(f, ", links cut by trap detectors: {}", parts.join(" "))?;
        }
        Ok(())
    }

    /// ` (most cut: HOST budget=... ; ...)` when a budget cut.
    fn write_most_cut(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.most_cut.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = self
            .most_cut
            .iter()
            .map(|h| {
                format!(
                    "{} budget={} requested={} cut={} linking_sites={}",
                    h.host, h.budget, h.requested, h.cut, h.linking_sites
                )
            })
            .collect();
        write!(f, " (most cut: {})", parts.join("; "))
    }
}

impl Summary {
    /// How the summary line names the end: `Complete` only when everything
    /// requested ended and nothing in scope was cut, `Incomplete` when it ended
    /// with cuts; otherwise the end's own name (`MaxPages`, `Shutdown`, ...).
    pub fn verdict(&self) -> String {
        match self.end {
            End::Complete if !self.cut.by_rule.is_empty() => "Incomplete".to_owned(),
            end => format!("{end:?}"),
        }
    }
}

/// A part's figures in the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartLine {
    /// This part.
    pub part: u32,
    /// The number of parts.
    pub parts: u32,
    /// What it did with foreign links.
    pub mode: app_core::PartMode,
    /// Its inter-part counters.
    pub counters: crate::state::PartCounters,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outcomes: u64 = self.outcomes.values().sum();
        let p = &self.pages;
        write!(
            f,
            "app {}: {}: {} URLs requested, {} pages stored, {} outcomes",
            self.app,
            self.verdict(),
            self.urls_requested,
            self.pages.stored,
            outcomes
        )?;
        if !self.outcomes.is_empty() {
            let parts: Vec<String> = self
                .outcomes
                .iter()
                .map(|(r, n)| format!("{r}={n}"))
                .collect();
            write!(f, " ({})", parts.join(" "))?;
        }
        // Pages stored = new responses + identical-payload + not-modified revisits.
        write!(
            f,
            ", stored as {} responses, {} identical-payload revisits, {} not-modified revisits",
            p.stored
                .saturating_sub(p.revisits_identical + p.revisits_not_modified),
            p.revisits_identical,
            p.revisits_not_modified
        )?;
        if self.crawl_log {
            write!(f, ", {} payload bytes", p.payload_bytes)?;
        }
        write!(
            f,
            ", {} URLs seen, {} batches quarantined",
            self.seen_keys, self.batches_quarantined
        )?;
        if p.robots_nofollow + p.robots_withheld > 0 {
            write!(
                f,
                ", robots directives: {} pages' links not followed, {} pages not stored",
                p.robots_nofollow, p.robots_withheld
            )?;
        }
        self.cut.write_counts(f)?;
        if !self.given_up.is_empty() {
            write!(f, ", {}", self.given_up)?;
        }
        if let Some(p) = &self.part {
            let c = &p.counters;
            write!(
                f,
                ", part {} of {} ({:?}): sent {} URLs in {} files, applied {} URLs in {} \
                 files, dropped {}, kept {}, crossed {}, replicated {}, replicated received {}",
                p.part,
                p.parts,
                p.mode,
                c.sent_urls,
                c.sent_files,
                c.applied_urls,
                c.applied_files,
                c.dropped,
                c.kept,
                c.crossed,
                c.replicated,
                c.replicated_in
            )?;
            if p.mode == app_core::PartMode::TwoLevel {
                write!(
                    f,
                    ", sites assigned {}, sites reported {}, parked {} URLs, released {}",
                    c.sites, c.reported, c.parked, c.released
                )?;
            }
        }
        self.cut.write_most_cut(f)?;
        Ok(())
    }
}
