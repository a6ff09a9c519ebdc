//! The seeds and who holds them: the seed queue, the parties each worker holds
//! (dealt and moved by the [`distributor`](super::distributor)), each worker's
//! round-robin position, and the URLs in flight with the parties waiting for them.
//! It also writes and reads this state's part of `seeds.state`.
//!
//! It must never touch the spool or a file: the crawl loop publishes what
//! [`Holdings::take_requests`] returns and hands back what comes in.
//!
//! Memory: O(seeds) for the queue, O(workers × m × URLs a party meets) for the
//! parties, O(workers × window) for the URLs in flight.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use spool::protocol::{MAX_TOP_PARTIES, MAX_WORKERS_SHOWN, PartyPages, SeedFigures};
use tracing::warn;
use url::Url;

use super::Balance;
use super::distributor::{Move, plan};
use super::party::Party;
use app_core::AppError;

/// The state file's counters that belong to the crawl, not to the holdings.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Totals {
    /// Pages given to parties.
    pub pages: u64,
    /// URLs requested.
    pub requested: u64,
    /// Outcomes (no page) read.
    pub outcomes: u64,
}

/// The seed queue, the parties per worker, the URLs in flight.
#[derive(Debug)]
pub(super) struct Holdings {
    /// Seeds not yet handed to a worker.
    queue: VecDeque<String>,
    /// Parties by id.
    parties: BTreeMap<u64, Party>,
    /// The parties each worker holds.
    workers: Vec<Vec<u64>>,
    /// Each worker's round-robin position among its parties.
    cursor: Vec<usize>,
    /// Requested URLs and the parties waiting for them. O(workers × window).
    waiting: HashMap<String, Vec<u64>>,
    next_id: u64,
    /// The distributor's dealing position.
    turn: usize,
    /// Parties ended (over all runs).
    finished: u64,
    /// Seeds the distributor moved between workers (this run).
    moved: u64,
}

impl Holdings {
    /// Nothing queued, `workers` workers holding nothing.
    pub(super) fn new(workers: usize) -> Self {
        Self {
            queue: VecDeque::new(),
            parties: BTreeMap::new(),
            workers: vec![Vec::new(); workers],
            cursor: vec![0; workers],
            waiting: HashMap::new(),
            next_id: 0,
            turn: 0,
            finished: 0,
            moved: 0,
        }
    }

    /// Queues a seed (a canonical URL).
    pub(super) fn queue_seed(&mut self, seed: String) {
        self.queue.push_back(seed);
    }

    /// No seed queued and no party active: the crawl is over.
    pub(super) fn is_over(&self) -> bool {
        self.queue.is_empty() && self.parties.is_empty()
    }

    /// Applies the distributor's (or free competition's) moves until it has none;
    /// true when anything changed.
    pub(super) fn distribute(&mut self, balance: Balance, m: usize) -> bool {
        let mut changed = false;
        loop {
            let held: Vec<usize> = self.workers.iter().map(Vec::len).collect();
            let inactive: Vec<usize> = self
                .workers
                .iter()
                .map(|w| {
                    w.iter()
                        .filter(|id| self.parties.get(id).is_some_and(Party::is_inactive))
                        .count()
                })
                .collect();
            let step = plan(
                balance,
                &held,
                &inactive,
                self.queue.len(),
                m,
                &mut self.turn,
            );
            match step {
                Some(Move::Deal(w)) => {
                    let Some(seed) = self.queue.pop_front() else {
                        return changed;
                    };
                    let Ok(url) = Url::parse(&seed) else {
                        warn!(seed = %seed, "seeds: queued seed does not parse");
                        changed = true;
                        continue;
                    };
                    let id = self.next_id;
                    self.next_id += 1;
                    self.parties.insert(id, Party::new(&url));
                    self.workers[w].push(id);
                }
                Some(Move::Shift(from, to)) => {
                    // The inactive seed that has waited longest in the source.
                    let Some(at) = self.workers[from]
                        .iter()
                        .rposition(|id| self.parties.get(id).is_some_and(Party::is_inactive))
                    else {
                        return changed;
                    };
                    let id = self.workers[from].remove(at);
                    self.workers[to].push(id);
                    self.moved += 1;
                }
                None => return changed,
            }
            changed = true;
        }
    }

    /// Fills each worker's window (at most `window` URLs in flight) from its
    /// parties' frontiers in turn; returns the URLs (with their depth) to request.
    /// A URL another party asked for already is not requested again: its page
    /// serves both.
    pub(super) fn take_requests(&mut self, window: usize) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = Vec::new();
        for w in 0..self.workers.len() {
            let held = &self.workers[w];
            let mut busy: usize = held
                .iter()
                .filter_map(|id| self.parties.get(id))
                .map(|p| p.in_flight)
                .sum();
            let mut idle_turns = 0;
            while busy < window && idle_turns < held.len() {
                let at = self.cursor[w] % held.len().max(1);
                self.cursor[w] = at + 1;
                let id = held[at];
                let Some(party) = self.parties.get_mut(&id) else {
                    idle_turns += 1;
                    continue;
                };
                let Some((url, depth)) = party.frontier.pop_front() else {
                    idle_turns += 1;
                    continue;
                };
                idle_turns = 0;
                party.in_flight += 1;
                busy += 1;
                let waiters = self.waiting.entry(url.clone()).or_default();
                waiters.push(id);
                if waiters.len() == 1 {
                    out.push((url, depth));
                }
            }
        }
        out
    }

    /// The page of `url` came back: each party waiting for it (none when it was
    /// fetched again after a crash, or a duplicate) gets one page more and meets
    /// its links through `meet`; returns how many parties got it.
    pub(super) fn page_came(
        &mut self,
        url: &str,
        mut meet: impl FnMut(&mut Party) -> Result<(), AppError>,
    ) -> Result<u64, AppError> {
        let Some(waiters) = self.waiting.remove(url) else {
            return Ok(0);
        };
        let mut served = 0;
        for id in waiters {
            let Some(party) = self.parties.get_mut(&id) else {
                continue;
            };
            party.in_flight = party.in_flight.saturating_sub(1);
            party.pages += 1;
            served += 1;
            meet(party)?;
        }
        Ok(served)
    }

    /// An outcome (no page) ends `url` for the parties waiting for it.
    pub(super) fn outcome_came(&mut self, url: &str) {
        for id in self.waiting.remove(url).unwrap_or_default() {
            if let Some(party) = self.parties.get_mut(&id) {
                party.in_flight = party.in_flight.saturating_sub(1);
            }
        }
    }

    /// Ends every party whose frontier is empty and nothing in flight; returns
    /// their `parties.tsv` lines (seed, pages, worker).
    pub(super) fn end_parties(&mut self) -> String {
        let mut log = String::new();
        for (w, held) in self.workers.iter_mut().enumerate() {
            let parties = &mut self.parties;
            held.retain(|id| {
                let done = parties.get(id).is_none_or(Party::is_done);
                if done {
                    if let Some(p) = parties.remove(id) {
                        log.push_str(&format!("{}\t{}\t{w}\n", p.seed, p.pages));
                    }
                }
                !done
            });
        }
        self.finished += log.lines().count() as u64;
        log
    }

    /// Seeds queued.
    pub(super) fn queued(&self) -> u64 {
        self.queue.len() as u64
    }

    /// Parties active.
    pub(super) fn active(&self) -> u64 {
        self.parties.len() as u64
    }

    /// Parties ended.
    pub(super) fn finished(&self) -> u64 {
        self.finished
    }

    /// Seeds moved between workers (this run).
    pub(super) fn moved(&self) -> u64 {
        self.moved
    }

    /// Seeds held per worker.
    pub(super) fn held(&self) -> Vec<usize> {
        self.workers.iter().map(Vec::len).collect()
    }

    /// What the admin page shows of the holdings: O(active parties).
    pub(super) fn figures(&self, balance: Balance) -> SeedFigures {
        let mut top: Vec<&Party> = self.parties.values().collect();
        top.sort_by(|a, b| b.pages.cmp(&a.pages).then_with(|| a.seed.cmp(&b.seed)));
        SeedFigures {
            balance: balance.to_string(),
            queued: self.queued(),
            active: self.active(),
            finished: self.finished,
            moved: self.moved,
            held: self
                .workers
                .iter()
                .take(MAX_WORKERS_SHOWN)
                .map(|w| u32::try_from(w.len()).unwrap_or(u32::MAX))
                .collect(),
            top_parties: top
                .into_iter()
                .take(MAX_TOP_PARTIES)
                .map(|p| PartyPages {
                    seed: p.seed.clone(),
                    pages: p.pages,
                })
                .collect(),
        }
    }

    /// The body of `seeds.state` (after its header line): the counters, the queue,
    /// then each party with its filter (`s`), frontier (`f`) and URLs in flight
    /// (`i`). O(active parties' URLs).
    pub(super) fn encode(&self, totals: Totals) -> String {
        let mut text = format!(
            "next_id={}\nturn={}\nfinished={}\npages={}\nrequested={}\noutcomes={}\n",
            self.next_id, self.turn, self.finished, totals.pages, totals.requested, totals.outcomes
        );
        for seed in &self.queue {
            text.push_str(&format!("q\t{seed}\n"));
        }
        let mut in_flight: HashMap<u64, Vec<&str>> = HashMap::new();
        for (url, ids) in &self.waiting {
            for id in ids {
                in_flight.entry(*id).or_default().push(url);
            }
        }
        for (w, held) in self.workers.iter().enumerate() {
            for id in held {
                let Some(p) = self.parties.get(id) else {
                    continue;
                };
                text.push_str(&format!(
                    "p\t{id}\t{w}\t{}\t{}\t{}\n",
                    p.pages, p.site, p.seed
                ));
                for url in &p.seen {
                    text.push_str(&format!("s\t{url}\n"));
                }
                for (url, depth) in &p.frontier {
                    text.push_str(&format!("f\t{depth}\t{url}\n"));
                }
                for url in in_flight.get(id).into_iter().flatten() {
                    text.push_str(&format!("i\t{url}\n"));
                }
            }
        }
        text
    }

    /// Reads back what [`encode`](Self::encode) wrote (`lines`, read from `path`)
    /// into these (empty) holdings; returns the crawl's counters.
    pub(super) fn decode<'a>(
        &mut self,
        lines: impl Iterator<Item = &'a str>,
        path: &Path,
    ) -> Result<Totals, AppError> {
        let bad = |line: &str| AppError::BadState {
            path: path.to_owned(),
            line: line.to_owned(),
        };
        let mut totals = Totals::default();
        let mut current: Option<u64> = None;
        for line in lines {
            if let Some((key, value)) = line.split_once('=')
                && !line.contains('\t')
            {
                let n: u64 = value.parse().map_err(|_| bad(line))?;
                match key {
                    "next_id" => self.next_id = n,
                    "turn" => self.turn = usize::try_from(n).map_err(|_| bad(line))?,
                    "finished" => self.finished = n,
                    "pages" => totals.pages = n,
                    "requested" => totals.requested = n,
                    "outcomes" => totals.outcomes = n,
                    _ => return Err(bad(line)),
                }
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["q", seed] => self.queue.push_back((*seed).to_owned()),
                ["p", id, w, pages, site, seed] => {
                    let id: u64 = id.parse().map_err(|_| bad(line))?;
                    let w: usize = w.parse().map_err(|_| bad(line))?;
                    let pages: u64 = pages.parse().map_err(|_| bad(line))?;
                    // A state from a run with more workers: its parties go to the last.
                    let w = w.min(self.workers.len() - 1);
                    self.parties.insert(
                        id,
                        Party::restored((*seed).to_owned(), (*site).to_owned(), pages),
                    );
                    self.workers[w].push(id);
                    current = Some(id);
                }
                ["s", url] | ["f", _, url] | ["i", url] => {
                    let id = current.ok_or_else(|| bad(line))?;
                    let party = self.parties.get_mut(&id).ok_or_else(|| bad(line))?;
                    match fields[0] {
                        "s" => {
                            party.seen.insert((*url).to_owned());
                        }
                        "f" => {
                            let depth: u32 = fields[1].parse().map_err(|_| bad(line))?;
                            party.frontier.push_back(((*url).to_owned(), depth));
                        }
                        _ => {
                            party.in_flight += 1;
                            self.waiting.entry((*url).to_owned()).or_default().push(id);
                        }
                    }
                }
                _ => return Err(bad(line)),
            }
        }
        Ok(totals)
    }

    /// URLs in flight (for the log line after a restart).
    pub(super) fn in_flight(&self) -> usize {
        self.waiting.len()
    }
}
