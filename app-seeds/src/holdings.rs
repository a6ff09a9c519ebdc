//! The seeds and who holds them: the seed queue, the parties each worker holds
//! (dealt and moved by the [`distributor`](super::distributor)), each worker's
//! round-robin position, and the URLs in flight with the parties waiting for them.
//! It also keeps each site's duplicate filter ([`Bloom`], shared by the site's
//! parties) while a party of the site is held or a seed of it is queued, and
//! writes and reads this state's part of `seeds.state`.
//!
//! It must never touch the spool or a file: the crawl loop publishes what
//! [`Holdings::take_requests`] returns and hands back what comes in.
//!
//! Memory: O(seeds) for the queue and the queued seeds per site; one filter of
//! `seed_context_bytes` per site with a party held, or with a party started and a
//! seed still queued (at most `workers × m` plus those); O(URLs queued, not yet
//! requested) for the parties' frontiers; O(workers × window) for the URLs in
//! flight.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use spool::protocol::{MAX_TOP_PARTIES, MAX_WORKERS_SHOWN, PartyPages, SeedFigures};
use tracing::warn;
use url::Url;

use super::Balance;
use super::bloom::Bloom;
use super::distributor::{Move, plan};
use super::party::{Party, site_of};
use super::sites::Sites;
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
    /// The sites' filters, shared by their parties.
    sites: Sites,
    /// Parties by id.
    parties: BTreeMap<u64, Party>,
    /// The parties each worker holds.
    workers: Vec<Vec<u64>>,
    /// Each worker's round-robin position among its parties.
    cursor: Vec<usize>,
    /// Requested URLs and the parties waiting for them. O(workers × window).
    waiting: HashMap<String, Vec<u64>>,
    next_id: u64,
    /// The distributor's dealing position (free competition: where the idle
    /// workers' turns start, so the lowest number is not always first).
    turn: usize,
    /// Free competition: workers whose request came back, in that order (one
    /// entry per page or outcome; used up at the next [`distribute`](Self::distribute)).
    turns: VecDeque<usize>,
    /// Parties ended (over all runs).
    finished: u64,
    /// Seeds the distributor moved between workers (this run).
    moved: u64,
}

impl Holdings {
    /// Nothing queued, `workers` workers holding nothing; each site's filter
    /// `context_bytes` bytes.
    pub(super) fn new(workers: usize, context_bytes: usize) -> Self {
        Self {
            queue: VecDeque::new(),
            sites: Sites::new(context_bytes),
            parties: BTreeMap::new(),
            workers: vec![Vec::new(); workers],
            cursor: vec![0; workers],
            waiting: HashMap::new(),
            next_id: 0,
            turn: 0,
            turns: VecDeque::new(),
            finished: 0,
            moved: 0,
        }
    }

    /// Queues a seed (a canonical URL).
    pub(super) fn queue_seed(&mut self, seed: String) {
        if let Ok(url) = Url::parse(&seed) {
            self.sites.queued(site_of(&url));
        }
        self.queue.push_back(seed);
    }

    /// No seed queued and no party active: the crawl is over.
    pub(super) fn is_over(&self) -> bool {
        self.queue.is_empty() && self.parties.is_empty()
    }

    /// Applies the distributor's (or free competition's) moves until it has none;
    /// true when anything changed.
    pub(super) fn distribute(&mut self, balance: Balance, m: usize) -> bool {
        if balance == Balance::Free {
            // A worker with nothing in flight is between fetches all the time:
            // one turn per pass (unless a response gave it one), from a
            // rotating start.
            let n = self.workers.len();
            let mut has_turn = vec![false; n];
            for &w in &self.turns {
                has_turn[w] = true;
            }
            for i in 0..n {
                let w = (self.turn + i) % n;
                if !has_turn[w] && self.in_flight_of(w) == 0 {
                    self.turns.push_back(w);
                }
            }
            self.turn = (self.turn + 1) % n.max(1);
        }
        let changed = self.moves(balance, m);
        // A turn is a moment: one no seed was taken in passes.
        self.turns.clear();
        changed
    }

    /// The moves of [`distribute`](Self::distribute), until there is none.
    fn moves(&mut self, balance: Balance, m: usize) -> bool {
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
                &mut self.turns,
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
                    let filter = self.sites.start_party(&site_of(&url));
                    let party = Party::new(&url, &mut filter.bloom);
                    let id = self.next_id;
                    self.next_id += 1;
                    self.parties.insert(id, party);
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
    /// its links through `meet` (with its site's filter); returns how many
    /// parties got it.
    pub(super) fn page_came(
        &mut self,
        url: &str,
        mut meet: impl FnMut(&mut Party, &mut Bloom) -> Result<(), AppError>,
    ) -> Result<u64, AppError> {
        let Some(waiters) = self.waiting.remove(url) else {
            return Ok(0);
        };
        let mut served = 0;
        for id in waiters {
            self.turn_of(id);
            let Some(party) = self.parties.get_mut(&id) else {
                continue;
            };
            party.in_flight = party.in_flight.saturating_sub(1);
            party.pages += 1;
            served += 1;
            let Some(filter) = self.sites.get_mut(&party.site) else {
                return Err(AppError::Config {
                    field: "seed_context_bytes",
                    reason: format!("no filter for the held party of {}", party.seed),
                });
            };
            meet(party, &mut filter.bloom)?;
            self.sites.check_fill(&party.site);
        }
        Ok(served)
    }

    /// An outcome (no page) ends `url` for the parties waiting for it.
    pub(super) fn outcome_came(&mut self, url: &str) {
        for id in self.waiting.remove(url).unwrap_or_default() {
            self.turn_of(id);
            if let Some(party) = self.parties.get_mut(&id) {
                party.in_flight = party.in_flight.saturating_sub(1);
            }
        }
    }

    /// URLs in flight for worker `w`'s parties. O(m).
    fn in_flight_of(&self, w: usize) -> usize {
        self.workers[w]
            .iter()
            .filter_map(|id| self.parties.get(id))
            .map(|p| p.in_flight)
            .sum()
    }

    /// A request of party `id` came back: its worker gets a turn (free
    /// competition). O(workers × m).
    fn turn_of(&mut self, id: u64) {
        if let Some(w) = self.workers.iter().position(|held| held.contains(&id)) {
            self.turns.push_back(w);
        }
    }

    /// Free competition's turns waiting (tests).
    #[cfg(test)]
    fn turns(&self) -> Vec<usize> {
        self.turns.iter().copied().collect()
    }

    /// Ends every party whose frontier is empty and nothing in flight; returns
    /// their `parties.tsv` lines (seed, pages, worker, the false-positive rate of
    /// its site's filter when it ended: the chance that a URL of the party was
    /// taken as met and not fetched). O(held parties), and O(filter bytes) per
    /// party ended.
    pub(super) fn end_parties(&mut self) -> String {
        let mut log = String::new();
        for (w, held) in self.workers.iter_mut().enumerate() {
            let parties = &mut self.parties;
            let sites = &mut self.sites;
            held.retain(|id| {
                let done = parties.get(id).is_none_or(Party::is_done);
                if done && let Some(p) = parties.remove(id) {
                    let fp = sites.end_party(&p.site);
                    log.push_str(&format!("{}\t{}\t{w}\t{fp:.2e}\n", p.seed, p.pages));
                }
                !done
            });
        }
        self.finished += log.lines().count() as u64;
        log
    }

    /// Site filters held now, the most held at once and the largest one's bytes
    /// (this run).
    pub(super) fn filter_figures(&self) -> (usize, usize, usize) {
        self.sites.figures()
    }

    /// Sites whose filter passed 1 % expected false positives (this run).
    pub(super) fn filters_saturated(&self) -> usize {
        self.sites.saturated()
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
    /// the site filters (`b`, each at most twice its bytes), then each party with
    /// its frontier (`f`) and URLs in flight (`i`). O(queue + filters' bytes +
    /// active parties' frontiers).
    pub(super) fn encode(&self, totals: Totals) -> String {
        let mut text = format!(
            "next_id={}\nturn={}\nfinished={}\npages={}\nrequested={}\noutcomes={}\n",
            self.next_id, self.turn, self.finished, totals.pages, totals.requested, totals.outcomes
        );
        for seed in &self.queue {
            text.push_str(&format!("q\t{seed}\n"));
        }
        for (site, bloom) in self.sites.iter() {
            text.push_str(&format!("b\t{site}\t{}\n", bloom.encode()));
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
    /// into these (empty) holdings; returns the crawl's counters. A version 1
    /// state (each party's filter as its URLs, `s` lines) is read too: its URLs go
    /// into the party's site filter, so nothing is lost.
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
                ["q", seed] => self.queue_seed((*seed).to_owned()),
                ["b", site, bloom] => {
                    let bloom = Bloom::decode(bloom).ok_or_else(|| bad(line))?;
                    self.sites.insert(site, bloom);
                }
                ["p", id, w, pages, site, seed] => {
                    let id: u64 = id.parse().map_err(|_| bad(line))?;
                    let w: usize = w.parse().map_err(|_| bad(line))?;
                    let pages: u64 = pages.parse().map_err(|_| bad(line))?;
                    // A state from a run with more workers: its parties go to the last.
                    let w = w.min(self.workers.len() - 1);
                    self.sites.filter(site).active += 1;
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
                            let site = party.site.clone();
                            self.sites.filter(&site).bloom.insert(url);
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    /// Gives `page` to the parties waiting for it, each meeting `links`.
    fn page(h: &mut Holdings, page: &str, links: &[&str]) -> Vec<Met> {
        let mut met = Vec::new();
        h.page_came(page, |party, filter| {
            for l in links {
                met.push(party.meet(filter, &url(l), 1));
            }
            Ok(())
        })
        .expect("page");
        met
    }

    use super::super::party::Met;

    #[test]
    fn free_competition_gives_seeds_only_to_workers_whose_requests_came_back() {
        let mut h = Holdings::new(3, 1024);
        for i in 0..9 {
            h.queue_seed(format!("http://s{i}.test/"));
        }
        // At start every worker is idle: one turn, one seed each.
        assert!(h.distribute(Balance::Free, 3));
        assert_eq!(h.held(), vec![1, 1, 1]);
        let asked: Vec<String> = h.take_requests(1).into_iter().map(|(u, _)| u).collect();
        assert_eq!(asked.len(), 3);
        // Nothing came back: no turn, no seed (the threads are fetching).
        assert!(!h.distribute(Balance::Free, 3));
        assert_eq!(h.held(), vec![1, 1, 1]);
        // Worker 2's page came back (its party ends; it stays busy with a link).
        let w2 = h.workers[2][0];
        let seed2 = h.parties[&w2].seed.clone();
        page(&mut h, &seed2, &[&format!("{seed2}more")]);
        assert_eq!(h.turns(), vec![2]);
        assert!(h.distribute(Balance::Free, 3));
        assert_eq!(h.held(), vec![1, 1, 2]);
        assert!(h.turns().is_empty(), "turns are used up");
        let next = h.take_requests(1);
        assert_eq!(next.len(), 1, "worker 2 fetches again; 0 and 1 still wait");
        page(&mut h, &next[0].0, &[]);
        assert!(h.distribute(Balance::Free, 3));
        assert_eq!(h.held(), vec![1, 1, 3]);
        // Full (m = 3): its next turn passes; the others still have none.
        let next = h.take_requests(1);
        assert_eq!(next.len(), 1);
        page(&mut h, &next[0].0, &[]);
        assert!(!h.distribute(Balance::Free, 3));
        assert_eq!(h.held(), vec![1, 1, 3]);
        assert_eq!(h.queued(), 4);
    }

    #[test]
    fn parties_of_one_site_fetch_their_overlap_once_and_the_state_keeps_the_filter() {
        let mut h = Holdings::new(2, 4096);
        h.queue_seed("http://a.test/".into());
        h.queue_seed("http://a.test/b".into());
        h.queue_seed("http://z.test/".into());
        h.distribute(Balance::Distributor, 1);
        assert_eq!(h.held(), vec![1, 1]);
        assert_eq!(h.filter_figures().0, 1, "one site held, z.test not yet");
        let asked: Vec<String> = h.take_requests(4).into_iter().map(|(u, _)| u).collect();
        assert_eq!(asked, vec!["http://a.test/", "http://a.test/b"]);
        let met = page(
            &mut h,
            "http://a.test/",
            &["http://a.test/c", "http://a.test/b"],
        );
        assert_eq!(met, vec![Met::Internal, Met::Again]);
        let met = page(
            &mut h,
            "http://a.test/b",
            &["http://a.test/c", "http://x.test/"],
        );
        assert_eq!(met, vec![Met::Again, Met::External]);
        let asked: Vec<String> = h.take_requests(4).into_iter().map(|(u, _)| u).collect();
        assert_eq!(asked, vec!["http://a.test/c"]);
        // The party of /b ends; the site's filter stays (the other party holds it).
        let log = h.end_parties();
        assert!(log.starts_with("http://a.test/b\t1\t1\t"), "{log}");
        assert_eq!(h.filter_figures().0, 1);
        // Saved and read back: the filter still knows /c and /b.
        let text = h.encode(Totals::default());
        let mut back = Holdings::new(2, 4096);
        back.decode(text.lines(), Path::new("seeds.state"))
            .expect("decode");
        assert_eq!(back.in_flight(), 1);
        assert_eq!(back.filter_figures(), (1, 1, 4096));
        page(&mut back, "http://a.test/c", &[]);
        let log = back.end_parties();
        assert!(log.starts_with("http://a.test/\t2\t0\t"), "{log}");
        // Both parties of a.test over, nothing of it queued: its filter goes.
        assert_eq!(back.filter_figures().0, 0);
        // The z.test seed starts with a fresh filter.
        back.distribute(Balance::Distributor, 1);
        assert_eq!(
            back.take_requests(4),
            vec![("http://z.test/".to_owned(), 0)]
        );
    }

    #[test]
    fn a_seed_its_site_met_already_is_a_party_of_no_page() {
        let mut h = Holdings::new(1, 1024);
        h.queue_seed("http://a.test/".into());
        h.queue_seed("http://a.test/c".into());
        h.distribute(Balance::Distributor, 1);
        h.take_requests(1);
        page(&mut h, "http://a.test/", &["http://a.test/c"]);
        h.take_requests(1);
        page(&mut h, "http://a.test/c", &[]);
        assert_eq!(h.end_parties().lines().count(), 1);
        // The queued seed /c: its site's filter was kept for it; the party is
        // inside the first one and ends at once.
        h.distribute(Balance::Distributor, 1);
        assert!(h.take_requests(1).is_empty());
        let log = h.end_parties();
        assert!(log.starts_with("http://a.test/c\t0\t0\t"), "{log}");
        assert!(h.is_over());
    }

    #[test]
    fn memory_and_saved_state_stay_within_the_bound_for_a_party_meeting_many_urls() {
        let bound = 8192;
        let mut h = Holdings::new(1, bound);
        h.queue_seed("http://a.test/".into());
        h.distribute(Balance::Distributor, 1);
        h.take_requests(1);
        let links: Vec<String> = (0..100_000)
            .map(|i| format!("http://l{i}.test/p"))
            .collect();
        let links: Vec<&str> = links.iter().map(String::as_str).collect();
        page(&mut h, "http://a.test/", &links);
        let (held, peak, bytes) = h.filter_figures();
        assert_eq!((held, peak), (1, 1));
        assert!(bytes <= bound, "{bytes} bytes");
        let text = h.encode(Totals::default());
        assert!(text.len() <= 2 * bound + 300, "{} bytes saved", text.len());
    }

    #[test]
    fn a_version_1_state_reads_its_urls_into_the_site_filter() {
        let v1 = "next_id=1\nturn=0\nfinished=0\npages=1\nrequested=2\noutcomes=0\n\
                  p\t0\t0\t1\thttp://a.test\thttp://a.test/\n\
                  s\thttp://a.test/\ns\thttp://a.test/x\ns\thttp://b.test/\n\
                  i\thttp://a.test/x\n";
        let mut h = Holdings::new(1, 1024);
        let totals = h
            .decode(v1.lines(), Path::new("seeds.state"))
            .expect("v1 state");
        assert_eq!((totals.pages, totals.requested), (1, 2));
        assert_eq!(h.in_flight(), 1);
        let met = page(
            &mut h,
            "http://a.test/x",
            &["http://a.test/x", "http://a.test/y"],
        );
        assert_eq!(met, vec![Met::Again, Met::Internal]);
        let bad = "p\t0\t0\t1\thttp://a.test\thttp://a.test/\nb\thttp://a.test\t8 0 q\n";
        assert!(
            Holdings::new(1, 1024)
                .decode(bad.lines(), Path::new("s"))
                .is_err()
        );
    }
}
