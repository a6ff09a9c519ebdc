//! A two-level agent's side of the coordinator (FC2L-UDC; see the parent
//! module's docs): the sites it owns, the other agents' sites on disk, the parked
//! URLs and the site reports.
//!
//! **Memory.** An agent holds only its *own* sites in memory (site -> root,
//! O(own sites)). The other agents' assignments go, as they are read, into a local
//! file `<state>/sites-others` (rebuilt from the generation files at every start),
//! which is searched only by a *pass*: one sequential read that resolves every
//! parked line at once (the paper's SitePartitionInformation DRUM: a batched disk
//! check, never a lookup per URL). A URL of a site that is not (known to be) this
//! agent's needs no more than "not mine" when it is found: it is parked on disk
//! and its site resolved by the next pass. One the coordinator has not assigned
//! yet is reported and stays parked; one of this agent's own site is requested
//! (except the root its assignment named: requested then); another agent's
//! goes to it with the coverage fix (except that site's root: its owner
//! requested it at assignment), and without the fix (plain 2L) is dropped, as
//! the paper's agents drop it: the site's owner starts it at its root, so
//! nothing is exchanged. Without the fix the parked URLs are roots (links to
//! other sites are reduced to them) and seeds; parking them rather than
//! dropping them at once matters when the site turns out to be this agent's:
//! its seen set holds them, so nothing else would request them.
//!
//! Cost: a pass reads the parked file and the local copy once, O(parked lines +
//! assigned sites), holding the parked lines' sites in memory; passes run at most
//! every 50 ms and at most a fifth of the time (the wait after a pass is four
//! times its length), and only when lines were parked or sites assigned since the
//! last one. `reported` holds the sites reported and not yet assigned as the last
//! pass found them: O(parked sites).
//!
//! **Roots** (the paper's `rootpage(site)`): each assignment carries the site's
//! root as its first report named it; the owner requests it when it reads the
//! assignment, at depth 0, and writes `<state>/roots-through` (the generation up
//! to which it did) durably afterwards: a restart re-reads every generation for
//! the table but requests only newer roots (a kill in between requests a root
//! twice, never none). A link to an own site's root is never requested again.
//!
//! This module must never decide a site's owner by anything but the
//! coordinator's assignments, and never hold the other agents' sites in memory.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spool::ComponentId;
use spool::publish::durable_rename;
use url::Url;

use super::Foreign;
use crate::state::PartCounters;
use app_core::error::AppError;
use app_core::parts::host_of;
use app_core::twolevel::{self, SiteRoot};

/// How often, at most, the assignment folder is listed and a pass runs.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Parked lines split by a pass: this agent's own, other agents' `(owner,
/// line)`, and those whose site is still unassigned; then how many lines the
/// parked file held. A line with a `via` is a vote.
pub(crate) type ParkedSplit = (Vec<Foreign>, Vec<(u32, Foreign)>, Vec<Foreign>, u64);

/// Where reports go: the shared root, the crawl's stem, this agent and the count.
struct Reporter {
    root: PathBuf,
    stem: String,
    producer: ComponentId,
    own: u32,
    count: u32,
}

impl Reporter {
    fn report(&self, sites: &[SiteRoot], counters: &mut PartCounters) -> Result<(), AppError> {
        if sites.is_empty() {
            return Ok(());
        }
        twolevel::report_sites(
            &self.root,
            &self.stem,
            self.own,
            self.count,
            &self.producer,
            sites,
        )
        .map_err(|e| AppError::Config {
            field: "exchange_root",
            reason: e.to_string(),
        })?;
        counters.reported += sites.len() as u64;
        Ok(())
    }
}

/// The site table: own sites in memory, the others' in a local file.
struct Table {
    /// This agent's sites and their roots.
    own: HashMap<String, String>,
    /// `<state>/sites-others`: `site<TAB>agent[<TAB>root]` lines.
    others: PathBuf,
    /// `<state>/roots-through` and the generation it names.
    roots_path: PathBuf,
    roots_through: u64,
}

/// When passes run: whether one is wanted, when the last ended, what it cost.
#[derive(Default)]
struct PassClock {
    dirty: bool,
    next: Option<Instant>,
}

/// A two-level agent's side of the coordinator (see the module docs).
pub(crate) struct Sites {
    /// `<root>/sites/<stem>/`.
    assign_dir: PathBuf,
    /// The newest assignment generation read.
    read: u64,
    /// `<state>/parked`: URLs of sites not (known to be) this agent's.
    parked_path: PathBuf,
    /// Lines in it.
    parked: u64,
    /// Sites reported and, at the last pass, still unassigned.
    reported: HashSet<String>,
    reporter: Reporter,
    table: Table,
    clock: PassClock,
    /// When the assignment folder was last listed.
    last_look: Option<Instant>,
    /// Whether a link to another site is sent as it is (the fix) or reduced to
    /// its site's root.
    pub(crate) fix: bool,
}

impl Sites {
    /// The agent `own` of `count` for the crawl `stem` under `root`, its files in
    /// `state_dir` (a partial last parked line, from a crash, cut; the local
    /// copy of the other agents' sites started afresh).
    pub(crate) fn open(
        state_dir: &Path,
        root: &Path,
        stem: &str,
        id: &ComponentId,
        own: u32,
        count: u32,
        fix: bool,
    ) -> Result<Self, AppError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| AppError::File { path, source }
        };
        fs::create_dir_all(state_dir).map_err(io(state_dir))?;
        let parked_path = state_dir.join("parked");
        let parked = super::cut_partial_line(&parked_path)?;
        let others = state_dir.join("sites-others");
        fs::write(&others, "").map_err(io(&others))?;
        let roots_path = state_dir.join("roots-through");
        let roots_through = match fs::read_to_string(&roots_path) {
            Ok(t) => t.trim().parse().unwrap_or(0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(source) => {
                return Err(AppError::File {
                    path: roots_path,
                    source,
                });
            }
        };
        Ok(Sites {
            assign_dir: twolevel::assignment_dir(root, stem),
            read: 0,
            parked_path,
            parked,
            reported: HashSet::new(),
            reporter: Reporter {
                root: root.to_owned(),
                stem: stem.to_owned(),
                producer: id.clone(),
                own,
                count,
            },
            table: Table {
                own: HashMap::new(),
                others,
                roots_path,
                roots_through,
            },
            clock: PassClock {
                dirty: parked > 0,
                next: None,
            },
            last_look: None,
            fix,
        })
    }

    /// Whether `url`'s site is this agent's. O(1).
    pub(crate) fn is_own(&self, url: &Url) -> bool {
        host_of(url).is_some_and(|h| self.table.own.contains_key(&h))
    }

    /// Whether `url` is the root of one of this agent's sites, requested when the
    /// site was assigned. O(1).
    pub(crate) fn is_own_root(&self, url: &Url) -> bool {
        host_of(url)
            .is_some_and(|h| self.table.own.get(&h).map(String::as_str) == Some(url.as_str()))
    }

    /// Lines parked.
    pub(crate) fn parked(&self) -> u64 {
        self.parked
    }

    /// The newest assignment generation read (and, once the caller said
    /// [`Sites::roots_done`], acted on): what this agent's status names.
    pub(crate) fn generation_read(&self) -> u64 {
        self.read
    }

    /// Parks `urls` on disk, fsynced (their sites are resolved, and reported
    /// when unassigned, by the next pass).
    pub(crate) fn park(
        &mut self,
        urls: &[Foreign],
        counters: &mut PartCounters,
    ) -> Result<(), AppError> {
        if urls.is_empty() {
            return Ok(());
        }
        let text: String = urls.iter().map(Foreign::line).collect();
        super::append_synced(&self.parked_path, &text)?;
        self.parked += urls.len() as u64;
        counters.parked += urls.len() as u64;
        self.clock.dirty = true;
        Ok(())
    }

    /// Reads the assignment generations published since the last look (at most
    /// every 50 ms): own sites into memory, the others' appended to the local
    /// copy. Returns whether any site was assigned and the roots of own sites
    /// to request now (those of generations past `roots-through`). O(new
    /// assignments).
    pub(crate) fn poll(
        &mut self,
        counters: &mut PartCounters,
    ) -> Result<(bool, Vec<Url>), AppError> {
        let now = Instant::now();
        if self.last_look.is_some_and(|t| now < t + LOOK_EVERY) {
            return Ok((false, Vec::new()));
        }
        self.last_look = Some(now);
        let gens = twolevel::read_generations(&self.assign_dir, self.read, self.reporter.count)
            .map_err(|e| AppError::Config {
                field: "exchange_root",
                reason: e.to_string(),
            })?;
        let (mut any, mut roots, mut others) = (false, Vec::new(), String::new());
        for (g, assigned) in gens {
            for (site, agent, root) in assigned {
                any = true;
                if agent != self.reporter.own {
                    others.push_str(&twolevel::assigned_line(&site, agent, &root));
                    continue;
                }
                counters.sites += 1;
                if g > self.table.roots_through
                    && let Ok(url) = Url::parse(&root)
                {
                    roots.push(url);
                }
                self.table.own.insert(site, root);
            }
            self.read = g;
        }
        if !others.is_empty() {
            let io = |source| AppError::File {
                path: self.table.others.clone(),
                source,
            };
            let mut file = fs::OpenOptions::new()
                .append(true)
                .open(&self.table.others)
                .map_err(io)?;
            file.write_all(others.as_bytes()).map_err(io)?;
        }
        self.clock.dirty |= any;
        Ok((any, roots))
    }

    /// The roots returned by [`Sites::poll`] are requested (durably): records
    /// that generations up to the last read need not be requested again.
    pub(crate) fn roots_done(&mut self) -> Result<(), AppError> {
        if self.read <= self.table.roots_through {
            return Ok(());
        }
        let path = &self.table.roots_path;
        let tmp = path.with_extension("tmp");
        let io = |source| AppError::File {
            path: tmp.clone(),
            source,
        };
        let mut file = fs::File::create(&tmp).map_err(io)?;
        file.write_all(format!("{}\n", self.read).as_bytes())
            .map_err(io)?;
        durable_rename(file, &tmp, path)?;
        self.table.roots_through = self.read;
        Ok(())
    }

    /// Whether a pass is due: lines parked, something new since the last pass,
    /// and its wait over.
    pub(crate) fn pass_due(&self) -> bool {
        self.parked > 0 && self.clock.dirty && self.clock.next.is_none_or(|t| Instant::now() >= t)
    }

    /// A pass (see the module docs): the parked lines split by owner, roots of
    /// assigned sites dropped (their owner requested them), and the sites still
    /// unassigned reported (once until they are assigned).
    pub(crate) fn pass(&mut self, counters: &mut PartCounters) -> Result<ParkedSplit, AppError> {
        let start = Instant::now();
        let text = match fs::read_to_string(&self.parked_path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(AppError::File {
                    path: self.parked_path.clone(),
                    source,
                });
            }
        };
        let lines: Vec<(Foreign, String, Url)> = text
            .lines()
            .filter_map(Foreign::parse)
            .filter_map(|f| {
                let url = Url::parse(&f.url).ok()?;
                Some((f, host_of(&url)?, url))
            })
            .collect();
        let total = lines.len() as u64;
        let wanted: HashSet<&str> = lines
            .iter()
            .filter(|(_, h, _)| !self.table.own.contains_key(h))
            .map(|(_, h, _)| h.as_str())
            .collect();
        let found = self.search_others(&wanted)?;
        let (mut own, mut other, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        let mut unknown: Vec<SiteRoot> = Vec::new();
        let mut still = HashSet::new();
        for (f, host, url) in lines {
            let is_root = |root: &str| f.via.is_none() && url.as_str() == root;
            if let Some(root) = self.table.own.get(&host) {
                if !is_root(root) {
                    own.push(f);
                }
            } else if let Some((agent, root)) = found.get(host.as_str()) {
                if !is_root(root) {
                    other.push((*agent, f));
                }
            } else {
                if still.insert(host.clone()) && !self.reported.contains(&host) {
                    unknown.push((host, twolevel::root_of(&url).to_string()));
                }
                rest.push(f);
            }
        }
        self.reporter.report(&unknown, counters)?;
        self.reported = still;
        self.clock.dirty = false;
        let cost = start.elapsed();
        self.clock.next = Some(Instant::now() + (4 * cost).max(LOOK_EVERY));
        Ok((own, other, rest, total))
    }

    /// One sequential read of the local copy: the owner and root of each site in
    /// `wanted`. O(assigned sites) time, O(wanted) memory.
    fn search_others(
        &self,
        wanted: &HashSet<&str>,
    ) -> Result<HashMap<String, (u32, String)>, AppError> {
        let mut found = HashMap::new();
        if wanted.is_empty() {
            return Ok(found);
        }
        let io = |source| AppError::File {
            path: self.table.others.clone(),
            source,
        };
        let file = fs::File::open(&self.table.others).map_err(io)?;
        for line in std::io::BufReader::new(file).lines() {
            let line = line.map_err(io)?;
            let Some((site, _)) = line.split_once('\t') else {
                continue;
            };
            if !wanted.contains(site) {
                continue;
            }
            if let Some((site, agent, root)) = twolevel::parse_assigned(&line, self.reporter.count)
            {
                found.insert(site, (agent, root));
            }
        }
        Ok(found)
    }

    /// Replaces the parked file with `rest` (temp file, fsync, rename), after the
    /// released URLs were requested or sent.
    pub(crate) fn keep_parked(
        &mut self,
        rest: &[Foreign],
        released: u64,
        counters: &mut PartCounters,
    ) -> Result<(), AppError> {
        let tmp = self.parked_path.with_extension("tmp");
        let io = |source| AppError::File {
            path: tmp.clone(),
            source,
        };
        let text: String = rest.iter().map(Foreign::line).collect();
        let mut file = fs::File::create(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        durable_rename(file, &tmp, &self.parked_path)?;
        self.parked = rest.len() as u64;
        counters.released += released;
        Ok(())
    }

    /// Test hook: the next poll looks at once.
    #[cfg(test)]
    pub(crate) fn look_now(&mut self) {
        self.last_look = None;
        self.clock.next = None;
    }
}
