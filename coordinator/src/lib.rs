//! The coordinator of a two-level crawl (FC2L-UDC sections 3.1-3.4;
//! `polycrawl coordinator`): site-level duplicate checking and the run-time
//! assignment of new sites to K agents.
//!
//! Agents report newly discovered *sites* (host names, [`app_core::parts::host_of`]),
//! never pages, in site report files through the spool
//! (`<root>/exchange/<stem>-coord/`, [`app_core::twolevel`]). The coordinator claims them in
//! batches, inserts every site into its own on-disk site-level seen set (the
//! application's [`SeenSet`], so the check is batched as the paper adapts DRUM to
//! sites: one sorted merge per round, never a lookup per site), and assigns the
//! sites a merge finds new to agents by [`Policy`]: round-robin, as the paper, or
//! balanced by the pages the agents fetched so far (each agent's status file
//! `parts/<stem>-p<i>.status`, its `pages=` counter). The assignments of merge
//! `G` are published as the append-only file `sites/<stem>/assign-<G>.tsv`,
//! which every agent reads. A site's root, as its first report in the merge
//! named it, rides in the seen set's payload and goes out with its assignment:
//! the owner starts the site there (the paper's `rootpage(site)`). The seeds' sites go in first, at every start
//! (repeats are dropped by the seen set).
//!
//! **Crash safety** (kill -9 at any point loses no site and never assigns one site
//! to two agents). The seen set's generation `G` is published as assignment file
//! `G` (temp file, fsync, rename) *before* the set releases older generations and
//! before the claimed reports that fed it are deleted. On start, the newest
//! assignment file names the last published generation `P`; the set is opened at
//! `P` ([`SeenSet::open_at`]: newer merges are dropped), and the reports still
//! claimed are read again. A site of a published generation is in the set at
//! `P`, so reading its report again finds it seen: it is never assigned again. A
//! site of an unpublished merge is not in the set at `P` and its report is still
//! claimed (or still waiting): it is found new again and assigned. The
//! round-robin position and the per-agent counts are recomputed from the
//! assignment files at start (O(sites) once).
//!
//! **Idle.** The coordinator writes `parts/<stem>-coord.status`
//! (`idle=0|1 version=V` and its counters, temp file and rename, as the parts'
//! status files): `idle=1` once a round found no report waiting or claimed and
//! everything it merged is published. The end-of-crawl agreement of the agents
//! (exchange mode's two reads of every status with nothing in flight between)
//! counts the coordinator as one more party and its report folder as one more
//! folder that must be empty.
//!
//! Cost per round: O(reported sites log) to sort plus one sequential merge of the
//! site file, O(sites so far); memory: the seen set's buffer and O(K) counters,
//! never a map of all sites (the assignment files are the map, on disk).
//!
//! This module must never look at pages or page URLs: the coordinator's unit is
//! the site.

use std::fs;
use std::io::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

use spool::claim::{Claimed, Consumer};
use spool::publish::durable_rename;
use spool::{AppId, ComponentId, Spool, SpoolError};

use app_core::twolevel::{self, TwoLevelError, assignment_dir, coordinator_app};
use seen::{SeenConfig, SeenError, SeenSet};

/// Why the coordinator stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    /// A file or folder of its own.
    #[error("coordinator: {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The spool.
    #[error("coordinator: {0}")]
    Spool(#[from] SpoolError),
    /// The site-level seen set.
    #[error("coordinator: site seen set: {0}")]
    Seen(#[from] SeenError),
    /// An assignment file that does not parse (never written by this code).
    #[error("coordinator: assignment file {}: {reason}", path.display())]
    BadAssignment {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file shared with the agents (site reports, assignment generations).
    #[error("coordinator: {0}")]
    Files(#[from] TwoLevelError),
    /// A setting that makes no sense.
    #[error("coordinator: {field}: {reason}")]
    Config {
        /// The setting.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

/// How new sites are dealt to agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// The next agent in turn (the paper's round-robin).
    #[default]
    RoundRobin,
    /// The agent with the least work: pages fetched so far (its status file's
    /// `pages=`) plus, for sites given in the same round, the mean pages per
    /// assigned site each.
    Balanced,
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "round-robin" => Ok(Policy::RoundRobin),
            "balanced" => Ok(Policy::Balanced),
            other => Err(format!(
                "unknown policy {other:?} (round-robin or balanced)"
            )),
        }
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Policy::RoundRobin => "round-robin",
            Policy::Balanced => "balanced",
        })
    }
}

/// What the coordinator needs.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// The shared spool root the agents exchange through (their `exchange_root`).
    pub root: PathBuf,
    /// The crawl's application id stem: agents are `<stem>-p<i>`.
    pub stem: String,
    /// Agents (K).
    pub parts: u32,
    /// The coordinator's own state folder (its site seen set).
    pub state_dir: PathBuf,
    /// How new sites are dealt.
    pub policy: Policy,
    /// The seed sites (host name, root URL), assigned first.
    pub seeds: Vec<(String, String)>,
    /// Report files claimed per round, at most.
    pub reports_per_round: usize,
    /// The site seen set's buffer.
    pub seen_buffer_bytes: usize,
}

impl CoordinatorConfig {
    /// The coordinator's application id, `<stem>-coord`.
    pub fn app_id(&self) -> Result<AppId, CoordinatorError> {
        let name = coordinator_app(&self.stem);
        AppId::new(name.clone()).map_err(|e| CoordinatorError::Config {
            field: "stem",
            reason: format!("{name:?}: {e}"),
        })
    }
}

/// The coordinator's figures (its status file carries them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoordinatorCounters {
    /// Report files read (a file read again after a crash counts again).
    pub reports: u64,
    /// Site lines in them (repeats included).
    pub reported: u64,
    /// Sites assigned, per agent.
    pub assigned: Vec<u64>,
    /// The last published generation.
    pub generation: u64,
}

impl CoordinatorCounters {
    /// Sites assigned over all agents.
    pub fn sites(&self) -> u64 {
        self.assigned.iter().sum()
    }
}

/// A running coordinator (see the module docs).
pub struct Coordinator {
    config: CoordinatorConfig,
    seen: SeenSet,
    inbox: Consumer,
    assign_dir: PathBuf,
    status_dir: PathBuf,
    counters: CoordinatorCounters,
    /// The `idle` flag as last written.
    written_idle: Option<bool>,
    /// Claimed reports of earlier runs, read in the first round.
    resumed: Vec<Claimed>,
}

impl Coordinator {
    /// Opens the coordinator's state at its last published generation and puts
    /// the seed sites in.
    pub fn open(config: CoordinatorConfig) -> Result<Coordinator, CoordinatorError> {
        if config.parts == 0 {
            return Err(CoordinatorError::Config {
                field: "parts",
                reason: "need at least one agent".into(),
            });
        }
        let app = config.app_id()?;
        let root = Spool::new(&config.root);
        let id =
            ComponentId::new(app.as_str().to_owned()).map_err(|e| CoordinatorError::Config {
                field: "stem",
                reason: e.to_string(),
            })?;
        let inbox = Consumer::new(root.exchange(&app)?, id)?;
        let assign_dir = assignment_dir(&config.root, &config.stem);
        let status_dir = config.root.join("parts");
        for dir in [&assign_dir, &status_dir] {
            spool::layout::create_dir_all_shared(dir).map_err(|source| CoordinatorError::File {
                path: dir.clone(),
                source,
            })?;
        }
        let published = twolevel::read_generations(&assign_dir, 0, config.parts)?;
        let mut counters = CoordinatorCounters {
            assigned: vec![0; config.parts as usize],
            ..CoordinatorCounters::default()
        };
        for (g, sites) in &published {
            counters.generation = *g;
            for (_, agent, _) in sites {
                counters.assigned[*agent as usize] += 1;
            }
        }
        let seen_config = SeenConfig {
            buffer_bytes: config.seen_buffer_bytes,
            ..SeenConfig::default()
        };
        let seen = SeenSet::open_at(
            &config.state_dir.join("seen-sites"),
            counters.generation,
            seen_config,
        )?;
        let resumed = inbox.resume()?;
        let mut c = Coordinator {
            seen,
            inbox,
            assign_dir,
            status_dir,
            counters,
            written_idle: None,
            resumed,
            config,
        };
        for (site, root) in c.config.seeds.clone() {
            c.seen.insert(site.as_bytes(), root.as_bytes())?;
        }
        Ok(c)
    }

    /// The figures so far.
    pub fn counters(&self) -> &CoordinatorCounters {
        &self.counters
    }

    /// One round: claim reports, check their sites, assign and publish the new
    /// ones, then delete the reports. Returns whether it did anything (false: it
    /// found nothing to do and says it is idle).
    pub fn round(&mut self) -> Result<bool, CoordinatorError> {
        let mut claimed = std::mem::take(&mut self.resumed);
        claimed.extend(self.inbox.claim_batch(self.config.reports_per_round)?);
        if claimed.is_empty() && !self.seen.has_buffered() && !self.seen.is_merging() {
            self.set_idle(true)?;
            return Ok(false);
        }
        self.set_idle(false)?;
        let mut good = Vec::with_capacity(claimed.len());
        for c in claimed {
            let bytes = c.read()?;
            match twolevel::read_report(&bytes, self.config.parts) {
                Ok(sites) => {
                    self.counters.reports += 1;
                    self.counters.reported += sites.len() as u64;
                    for (site, root) in &sites {
                        self.seen.insert(site.as_bytes(), root.as_bytes())?;
                    }
                    good.push(c);
                }
                Err(reason) => {
                    tracing::warn!(file = %c.path().display(), %reason, "coordinator: report quarantined");
                    c.quarantine(&reason)?;
                }
            }
        }
        self.seen.flush()?;
        while let Some(batch) = self.seen.try_recv_new()? {
            let sites: Vec<(String, String)> = batch
                .iter()
                .map(|(k, root)| {
                    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                    (text(k), text(root))
                })
                .collect();
            let assigned = self.deal(sites);
            let g = batch.generation();
            twolevel::write_generation(&self.assign_dir, g, self.config.parts, &assigned)?;
            for (_, agent, _) in &assigned {
                self.counters.assigned[*agent as usize] += 1;
            }
            self.counters.generation = g;
            self.seen.release(g)?;
        }
        for c in good {
            c.done()?;
        }
        Ok(true)
    }

    /// Deals `sites` (new, in key order, with their roots) to agents by the policy.
    fn deal(&self, sites: Vec<(String, String)>) -> Vec<twolevel::Assigned> {
        let k = self.config.parts;
        match self.config.policy {
            Policy::RoundRobin => {
                let start = self.counters.sites();
                sites
                    .into_iter()
                    .enumerate()
                    .map(|(i, (s, r))| (s, ((start + i as u64) % u64::from(k)) as u32, r))
                    .collect()
            }
            Policy::Balanced => {
                let pages = self.agent_pages();
                let total_pages: u64 = pages.iter().sum();
                let per_site = (total_pages / self.counters.sites().max(1)).max(1);
                let mut load: Vec<u64> = pages
                    .iter()
                    .zip(&self.counters.assigned)
                    .map(|(p, sites)| {
                        // An agent with sites but no pages yet still has work ahead.
                        (*p).max(sites * per_site)
                    })
                    .collect();
                sites
                    .into_iter()
                    .map(|(s, r)| {
                        let agent = (0..k)
                            .min_by_key(|&a| (load[a as usize], a))
                            .unwrap_or_default();
                        load[agent as usize] += per_site;
                        (s, agent, r)
                    })
                    .collect()
            }
        }
    }

    /// Pages fetched so far per agent, from their status files (0 when absent).
    fn agent_pages(&self) -> Vec<u64> {
        (0..self.config.parts)
            .map(|i| {
                let path = self
                    .status_dir
                    .join(format!("{}-p{i}.status", self.config.stem));
                fs::read_to_string(path)
                    .ok()
                    .and_then(|t| {
                        t.split_whitespace()
                            .find_map(|w| w.strip_prefix("pages=")?.parse().ok())
                    })
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The coordinator's status file path.
    pub fn status_path(&self) -> PathBuf {
        self.status_dir
            .join(format!("{}.status", coordinator_app(&self.config.stem)))
    }

    fn set_idle(&mut self, idle: bool) -> Result<(), CoordinatorError> {
        if self.written_idle == Some(idle) {
            return Ok(());
        }
        let path = self.status_path();
        let tmp = self.status_dir.join(format!(
            ".{}.status.tmp",
            coordinator_app(&self.config.stem)
        ));
        let io = |source| CoordinatorError::File {
            path: tmp.clone(),
            source,
        };
        let c = &self.counters;
        let assigned: Vec<String> = c.assigned.iter().map(u64::to_string).collect();
        let text = format!(
            "idle={} version={} sites={} reports={} reported={} generation={} assigned={}\n",
            u8::from(idle),
            spool::name::now_micros(),
            c.sites(),
            c.reports,
            c.reported,
            c.generation,
            assigned.join(","),
        );
        let mut file = fs::File::create(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        durable_rename(file, &tmp, &path)?;
        self.written_idle = Some(idle);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
