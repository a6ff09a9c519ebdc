//! Which URLs go into the crawl: canonical parsing of URLs from outside a page
//! (seeds, exchanged URLs, sitemaps), the scope and trap checks before a URL goes
//! into the seen set, and after a merge the host budgets that admit a new URL,
//! hold it until its host's budget grows (`deferred.rs`) or cut it. It owns the
//! budgets, the held URLs, the trap detectors and the record of every in-scope URL
//! cut (`cuts.rs`), and saves them. It must never write request files nor touch the
//! seen set: it answers, the crawl loop acts.

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use tracing::info;
use url::Url;

use super::ledger::Ledger;
use crate::deferred::{Deferred, Held, MAX_HELD, SITES_HELD};
use crate::state;
use crate::unshuffle::key_host;
use app_core::budget::{self, HostBudgets};
use app_core::config::AppConfig;
use app_core::cuts::{Cuts, RuleCuts};
use app_core::error::AppError;
use app_core::pause::DiskWait;
use app_core::reach::Reach;
use app_core::scope::{OutOfScope, Scope};
use app_core::traps::{Detector, Traps};
use pages::canon::key::reversed_host_key;
use pages::canon::{self, CanonConfig, Rejected};
use seen::{MAX_KEY_LEN, SeenSet};

/// The rule name of a URL cut by a scoped crawl's ceiling.
pub(crate) const HOST_CEILING: &str = "host_ceiling";
/// The rule name of a URL cut by an open crawl's host budget.
pub(crate) const HOST_BUDGET: &str = "host_budget";
/// The rule name of a URL in scope cut by `max_depth`.
pub(crate) const DEPTH: &str = "depth";

/// The rules that cut a link before the seen set: the trap detectors and depth.
fn before_seen_rules() -> Vec<&'static str> {
    let mut rules: Vec<&'static str> = Detector::ALL.iter().map(|d| d.name()).collect();
    rules.push(DEPTH);
    rules
}

/// The rules that cut a new URL after the seen set took it: the budgets.
const AFTER_SEEN_RULES: [&str; 2] = [HOST_CEILING, HOST_BUDGET];

/// What [`Admission::finish_cuts`] returns: the cut list's path (when it lists
/// any URL) and the URLs and hosts cut, by rule.
pub(crate) type FinishedCuts = (
    Option<std::path::PathBuf>,
    std::collections::BTreeMap<String, RuleCuts>,
);

/// The crawl's admission rules and their state.
#[derive(Debug)]
pub(crate) struct Admission {
    canon: CanonConfig,
    scope: Scope,
    traps: Traps,
    max_redirect_hops: u32,
    budgets: HostBudgets,
    /// URLs over their host's budget, held until it grows.
    deferred: Deferred,
    /// When the budgets were last saved (`None`: not this run).
    budgets_saved: Option<Instant>,
    /// Every in-scope URL cut and not requested since.
    cuts: Cuts,
    /// The name budget cuts go under: [`HOST_CEILING`] or [`HOST_BUDGET`].
    budget_rule: &'static str,
    /// Whether a link past `max_depth` is a cut (not when `max_depth` is 0).
    depth_cuts: bool,
    /// Requeued URLs a budget cut (already in the seen set): they go with the
    /// next publication as they are.
    requeued: Vec<Box<[u8]>>,
    /// Requeued URLs a detector or the depth cut, put into the seen set: no
    /// budget holds them when their merge publishes them.
    forced: HashSet<Box<[u8]>>,
}

impl Admission {
    /// The rules of `config`, with the budgets and held URLs saved in `state_dir`
    /// (held URLs of generations after `last_published` are dropped: they are found
    /// again).
    pub(crate) fn open(
        config: &AppConfig,
        state_dir: &Path,
        last_published: u64,
    ) -> Result<Self, AppError> {
        let mut budgets = HostBudgets::new(config.budget_rule());
        let mut trusted = config.trusted_hosts.clone();
        if let Some(path) = &config.trusted_hosts_file {
            trusted.extend(app_core::config::read_lines(path)?);
        }
        budgets.trust(trusted.iter().map(String::as_str));
        if let Some(text) = state::load_budgets(state_dir)? {
            budgets
                .read_from(&text)
                .map_err(|line| AppError::BadState {
                    path: state::budgets_path(state_dir),
                    line,
                })?;
        }
        let per_site = usize::try_from(config.host_budget_per_linking_site).unwrap_or(usize::MAX);
        let mut deferred = Deferred::new(per_site.saturating_mul(SITES_HELD), MAX_HELD);
        deferred.load(state_dir, last_published, key_host)?;
        let scope = config.scope()?;
        let budget_rule = if scope.kind().is_scoped() {
            HOST_CEILING
        } else {
            HOST_BUDGET
        };
        Ok(Self {
            cuts: Cuts::open(state_dir, &before_seen_rules(), &AFTER_SEEN_RULES)?,
            budget_rule,
            requeued: Vec::new(),
            forced: HashSet::new(),
            depth_cuts: config.max_depth > 0,
            canon: config.canon(),
            scope,
            traps: Traps::new(config.trap_rules(), Traps::today()),
            max_redirect_hops: config.max_redirect_hops,
            budgets,
            deferred,
            budgets_saved: None,
        })
    }

    /// `url` (absolute, from outside a page) in canonical form.
    pub(crate) fn parse(&self, url: &str) -> Result<Url, Rejected> {
        canon::parse(url, None, &self.canon)
    }

    /// A seed: its site (host, domain, prefix) is in scope, its host gets the
    /// seed budget.
    pub(crate) fn seed(&mut self, url: &Url) {
        self.scope.add_seed(url);
        self.budgets
            .seed(key_host(reversed_host_key(url).as_bytes()));
    }

    /// How the summary names the scope.
    pub(crate) fn scope_text(&self) -> String {
        self.scope.describe()
    }

    /// The page at `url` was read, with `template`; its links are checked next
    /// (the maze and session-id detectors judge pages: `traps`).
    pub(crate) fn page(&mut self, url: &Url, template: Option<u64>) {
        self.traps.page(url, template);
    }

    /// The redirect, scope and trap checks of `url` at `reach`, found on `from`
    /// (`None`: a seed or an exchanged URL); cuts are counted in `ledger`. The
    /// seen-set key when it passes (not when the key is too long).
    pub(crate) fn check(
        &mut self,
        url: &Url,
        reach: Reach,
        from: Option<&Url>,
        ledger: &mut Ledger,
    ) -> Result<Option<String>, AppError> {
        if reach.hops > self.max_redirect_hops {
            ledger.progress.redirects_cut += 1;
            self.traps.cut(Detector::RedirectHops, url.as_str());
            if self.scope.contains(url) {
                self.cuts.cut(Detector::RedirectHops.name(), url.as_str())?;
            }
            ledger.touched();
            return Ok(None);
        }
        let checked = match self.scope.check(url, reach.depth) {
            Ok(()) => self.traps.check(url, from),
            Err(OutOfScope::RepeatedSegment) => Err(Detector::RepeatedSegment),
            Err(OutOfScope::Calendar) => Err(Detector::CalendarDepth),
            Err(OutOfScope::Depth) => {
                // `max_depth: 0` crawls a list (a recrawl): its links are not in
                // scope, nothing is cut.
                if self.depth_cuts {
                    self.cuts.cut(DEPTH, url.as_str())?;
                }
                return Ok(None);
            }
            Err(OutOfScope::Outside | OutOfScope::Denied) => return Ok(None),
        };
        if let Err(detector) = checked {
            *ledger
                .progress
                .trap_cuts
                .entry(detector.name().to_owned())
                .or_default() += 1;
            self.traps.cut(detector, url.as_str());
            self.cuts.cut(detector.name(), url.as_str())?;
            ledger.touched();
            return Ok(None);
        }
        let key = reversed_host_key(url);
        Ok((key.len() <= MAX_KEY_LEN).then_some(key))
    }

    /// A link from `site` to `key`'s host: true if that is a new linking site (then
    /// the host's held URLs may go).
    pub(crate) fn linked(&mut self, key: &str, site: &[u8]) -> bool {
        let host = key_host(key.as_bytes());
        let new = self.budgets.linked(host, site);
        if new {
            self.deferred.grew(host);
        }
        new
    }

    /// Held URLs whose host's budget grew, to go with the next publication
    /// (taken off the budget-cut count).
    pub(crate) fn release_held(&mut self, ledger: &mut Ledger) -> Vec<Held> {
        let budgets = &mut self.budgets;
        let released = self.deferred.release(|host| budgets.release(host));
        ledger.progress.budget_cut = ledger
            .progress
            .budget_cut
            .saturating_sub(released.len() as u64);
        released
    }

    /// URLs cut by the budgets so far.
    pub(crate) fn budget_cuts(&self) -> u64 {
        self.budgets.cut()
    }

    /// Whether the new URL `key` goes out now; if its host's budget is used up it
    /// is held (within bounds, else cut) and the answer is no.
    pub(crate) fn admit(
        &mut self,
        key: &[u8],
        reach: Reach,
        generation: u64,
    ) -> Result<bool, AppError> {
        if !self.forced.is_empty() && self.forced.remove(key) {
            return Ok(true);
        }
        let host = key_host(key);
        let (admitted, first_cut) = self.budgets.admit(host);
        if let Some(budget) = first_cut {
            info!(
                host = %String::from_utf8_lossy(host),
                budget,
                linking_sites = self.budgets.linking_sites(host),
                "app: host budget used up; its further URLs are cut"
            );
        }
        if !admitted {
            if let Some(url) = std::str::from_utf8(key)
                .ok()
                .and_then(|k| canon::key::url_from_key(k).ok())
            {
                self.cuts.cut(self.budget_rule, url.as_str())?;
            }
            let held = Held {
                key: key.into(),
                depth: reach.depth,
                hops: reach.hops,
                generation,
            };
            self.deferred.hold(host, held);
        }
        Ok(admitted)
    }

    /// `url` goes into a request file: if it was cut, it no longer counts.
    pub(crate) fn requested(&mut self, url: &Url) -> Result<(), AppError> {
        self.cuts.requested(url)
    }

    /// `url` from a requeue file (`requeue_file`: an earlier run's `cut.tsv`):
    /// if this crawl cut it and never requested it, its seen-set key, for the
    /// crawl loop to insert; the next publication requests it whatever the
    /// rules. `None`: not cut here, or requested since (so a requeue is taken
    /// once, also across restarts).
    pub(crate) fn requeue(&mut self, url: &Url) -> Option<String> {
        let rule = self.cuts.rule_of(url.as_str())?;
        let key = reversed_host_key(url);
        if rule == HOST_CEILING || rule == HOST_BUDGET {
            // In the seen set already: its merge finds it old.
            self.requeued.push(key.as_bytes().into());
        } else {
            self.forced.insert(key.as_bytes().into());
        }
        Some(key)
    }

    /// The requeued URLs that go with the next publication as they are.
    pub(crate) fn take_requeued(&mut self) -> Vec<Box<[u8]>> {
        std::mem::take(&mut self.requeued)
    }

    /// URLs and hosts cut so far, by rule (for the figures: detector and depth
    /// cuts of URLs requested by another way are left out only at the end).
    /// O(hosts with cuts).
    pub(crate) fn cut_totals(&self) -> std::collections::BTreeMap<String, RuleCuts> {
        self.cuts.totals()
    }

    /// Makes the cut record durable (before a generation is recorded).
    pub(crate) fn sync_cuts(&mut self) -> Result<(), AppError> {
        self.cuts.sync()
    }

    /// Writes the list of cut URLs (`cut.tsv`), leaving out what `seen` holds
    /// of the detectors' and the depth's cuts (requested by another way); its
    /// path when it lists any, and the totals by rule.
    pub(crate) fn finish_cuts(&mut self, seen: &SeenSet) -> Result<FinishedCuts, AppError> {
        let key_of = |url: &str| Url::parse(url).ok().map(|u| reversed_host_key(&u));
        let file = self
            .cuts
            .finish(key_of, |keys| Ok(seen.contains_sorted(keys)?))?;
        let totals = self.cuts.totals();
        Ok(((!totals.is_empty()).then_some(file), totals))
    }

    /// Saves the held URLs if they changed, waiting out a full disk.
    pub(crate) fn save_held(&mut self, state_dir: &Path, wait: &DiskWait) -> Result<(), AppError> {
        wait.run(&mut self.deferred, |deferred| {
            deferred.save_if_changed(state_dir)
        })
    }

    /// Saves the host budgets (see `budget.rs`: only when every URL they count has
    /// its generation recorded).
    pub(crate) fn save_budgets(
        &mut self,
        state_dir: &Path,
        wait: &DiskWait,
    ) -> Result<(), AppError> {
        let mut text = String::new();
        self.budgets.write_to(&mut text);
        wait.run(&mut (), |()| state::save_budgets(state_dir, &text))?;
        self.budgets_saved = Some(Instant::now());
        Ok(())
    }

    /// Saves the budgets if [`budget::SAVE_INTERVAL`] passed since the last save.
    pub(crate) fn save_budgets_due(
        &mut self,
        state_dir: &Path,
        wait: &DiskWait,
    ) -> Result<(), AppError> {
        if self
            .budgets_saved
            .is_none_or(|at| at.elapsed() >= budget::SAVE_INTERVAL)
        {
            self.save_budgets(state_dir, wait)?;
        }
        Ok(())
    }

    /// The host budgets (for the figures and the summary).
    pub(crate) fn budgets(&self) -> &HostBudgets {
        &self.budgets
    }

    /// The trap detectors (for the figures).
    pub(crate) fn traps(&self) -> &Traps {
        &self.traps
    }
}
