//! Which URLs go into the crawl: canonical parsing of URLs from outside a page
//! (seeds, exchanged URLs, sitemaps), the scope and trap checks before a URL goes
//! into the seen set, and after a merge the host budgets that admit a new URL,
//! hold it until its host's budget grows (`deferred.rs`) or cut it. It owns the
//! budgets, the held URLs and the trap detectors, and saves the first two. It must
//! never write request files nor touch the seen set: it answers, the crawl loop acts.

use std::path::Path;
use std::time::Instant;

use tracing::info;
use url::Url;

use super::ledger::Ledger;
use super::reach::Reach;
use crate::canon::key::reversed_host_key;
use crate::canon::{self, CanonConfig, Rejected};
use crate::seen::MAX_KEY_LEN;
use crate::service::budget::{self, HostBudgets};
use crate::service::config::AppConfig;
use crate::service::deferred::{Deferred, Held, MAX_HELD, SITES_HELD};
use crate::service::error::AppError;
use crate::service::pause::DiskWait;
use crate::service::scope::{OutOfScope, Scope};
use crate::service::state;
use crate::service::traps::{Detector, Traps};
use crate::service::unshuffle::key_host;

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
            trusted.extend(super::read_lines(path)?);
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
        Ok(Self {
            canon: config.canon(),
            scope: config.scope()?,
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

    /// Seed hosts get the seed budget.
    pub(crate) fn seed(&mut self, url: &Url) {
        self.budgets
            .seed(key_host(reversed_host_key(url).as_bytes()));
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
    ) -> Option<String> {
        if reach.hops > self.max_redirect_hops {
            ledger.progress.redirects_cut += 1;
            self.traps.cut(Detector::RedirectHops, url.as_str());
            ledger.touched();
            return None;
        }
        let checked = match self.scope.check(url, reach.depth) {
            Ok(()) => self.traps.check(url, from),
            Err(OutOfScope::RepeatedSegment) => Err(Detector::RepeatedSegment),
            Err(OutOfScope::Calendar) => Err(Detector::CalendarDepth),
            Err(_) => return None,
        };
        if let Err(detector) = checked {
            *ledger
                .progress
                .trap_cuts
                .entry(detector.name().to_owned())
                .or_default() += 1;
            self.traps.cut(detector, url.as_str());
            ledger.touched();
            return None;
        }
        let key = reversed_host_key(url);
        (key.len() <= MAX_KEY_LEN).then_some(key)
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
    pub(crate) fn admit(&mut self, key: &[u8], reach: Reach, generation: u64) -> bool {
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
            let held = Held {
                key: key.into(),
                depth: reach.depth,
                hops: reach.hops,
                generation,
            };
            self.deferred.hold(host, held);
        }
        admitted
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
