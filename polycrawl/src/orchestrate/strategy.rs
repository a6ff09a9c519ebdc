//! Which crawling application a run starts (`--strategy`, on `polycrawl app`,
//! `crawl` and `demo`): the breadth-first crawl (DESIGN.md section 7) or the
//! seed-by-seed crawl (SCrawler, `app_seeds`), with the seed-by-seed
//! settings. `crawl` and `demo` hand them to every application part they start
//! ([`StrategyArgs::app_flags`]); a part of a split seed-by-seed crawl takes the
//! seeds whose host it owns.
//!
//! This module only carries the choice; it never decides anything about a crawl.

use std::path::PathBuf;

use app_seeds::{Balance, SeedsConfig};

/// The crawl strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Strategy {
    /// Breadth-first over the whole web (DESIGN.md section 7).
    #[default]
    BreadthFirst,
    /// Seed by seed, party by party (SCrawler): each seed's party is crawled
    /// inside its site; external links are written as candidate seeds.
    SeedBySeed,
}

/// The flags that choose the application and its seed-by-seed settings.
#[derive(Debug, Clone, clap::Args)]
pub struct StrategyArgs {
    /// The crawl strategy: breadth-first, or seed-by-seed (SCrawler: parties
    /// crawled inside their site, external links written as candidate seeds).
    #[arg(long, value_enum, default_value_t = Strategy::BreadthFirst)]
    pub strategy: Strategy,
    /// Seed-by-seed: workers (the paper's crawl threads), per application part.
    #[arg(long, value_name = "N", default_value_t = SeedsConfig::default().workers)]
    pub workers: usize,
    /// Seed-by-seed: seed contexts per worker (the paper's m).
    #[arg(long, value_name = "M", default_value_t = SeedsConfig::default().m)]
    pub seed_contexts: usize,
    /// Seed-by-seed: URLs in flight per worker, at most.
    #[arg(long, value_name = "N", default_value_t = SeedsConfig::default().window)]
    pub window: usize,
    /// Seed-by-seed: bytes of each site's duplicate filter (a Bloom filter the
    /// site's seed contexts share; 64 KiB: under 0.1 % false positives up to
    /// 33,000 URLs met per site). A false positive is a page not fetched.
    #[arg(long, value_name = "BYTES", default_value_t = SeedsConfig::default().context_bytes)]
    pub seed_context_bytes: usize,
    /// Seed-by-seed: how seeds reach workers: distributor (SCrawler's Figure 5) or
    /// free (free competition).
    #[arg(long, value_name = "HOW", default_value_t = Balance::Distributor)]
    pub balance: Balance,
}

impl Default for StrategyArgs {
    fn default() -> Self {
        let s = SeedsConfig::default();
        Self {
            strategy: Strategy::BreadthFirst,
            workers: s.workers,
            seed_contexts: s.m,
            window: s.window,
            seed_context_bytes: s.context_bytes,
            balance: s.balance,
        }
    }
}

impl StrategyArgs {
    /// Whether this is the seed-by-seed crawl.
    pub fn seed_by_seed(&self) -> bool {
        self.strategy == Strategy::SeedBySeed
    }

    /// Gives a seed-by-seed crawl the id `sbs` where the config keeps the
    /// breadth-first default `bfs` (a config that names its app keeps its name).
    pub fn apply(&self, app: &mut app_core::AppConfig) {
        if self.seed_by_seed() && app.app == app_core::AppConfig::default().app {
            app.app = "sbs".to_owned();
        }
    }

    /// The seed-by-seed settings with these flags.
    pub fn seeds_config(
        &self,
        candidates_file: Option<PathBuf>,
        sample_file: Option<PathBuf>,
    ) -> SeedsConfig {
        SeedsConfig {
            workers: self.workers,
            m: self.seed_contexts,
            window: self.window,
            context_bytes: self.seed_context_bytes,
            balance: self.balance,
            candidates_file,
            sample_file,
        }
    }

    /// The `polycrawl app` flags that start an application part with this
    /// strategy (none for breadth-first). A seed-by-seed part also samples the
    /// seeds its workers hold every second into `sample`.
    pub fn app_flags(&self, sample: &std::path::Path) -> Vec<std::ffi::OsString> {
        if !self.seed_by_seed() {
            return Vec::new();
        }
        let mut flags: Vec<std::ffi::OsString> = [
            "--strategy".to_owned(),
            "seed-by-seed".to_owned(),
            "--workers".to_owned(),
            self.workers.to_string(),
            "--seed-contexts".to_owned(),
            self.seed_contexts.to_string(),
            "--window".to_owned(),
            self.window.to_string(),
            "--seed-context-bytes".to_owned(),
            self.seed_context_bytes.to_string(),
            "--balance".to_owned(),
            self.balance.to_string(),
            "--sample".to_owned(),
        ]
        .into_iter()
        .map(Into::into)
        .collect();
        flags.push(sample.as_os_str().to_owned());
        flags
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        s: StrategyArgs,
    }

    #[test]
    fn breadth_first_adds_no_flags_and_seed_by_seed_round_trips() {
        let bfs = Cli::parse_from(["x"]).s;
        assert!(!bfs.seed_by_seed());
        assert!(bfs.app_flags("/s".as_ref()).is_empty());
        let sbs = Cli::parse_from([
            "x",
            "--strategy",
            "seed-by-seed",
            "--workers",
            "3",
            "--seed-context-bytes",
            "4096",
            "--balance",
            "free",
        ])
        .s;
        let flags = sbs.app_flags("/st/held.tsv".as_ref());
        let mut argv = vec!["x".into()];
        argv.extend(flags.iter().take(flags.len() - 2).cloned());
        let again = Cli::parse_from(argv).s;
        assert_eq!(again.seeds_config(None, None), sbs.seeds_config(None, None));
        assert_eq!(again.workers, 3);
        assert_eq!(again.seeds_config(None, None).context_bytes, 4096);
        assert_eq!(again.balance, Balance::Free);
        assert_eq!(flags.last().map(|f| f.to_str()), Some(Some("/st/held.tsv")));
    }
}
