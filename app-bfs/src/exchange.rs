//! One part of a crawl split into K application parts (Polybot section 2.4; Cho and
//! Garcia-Molina, "Parallel Crawlers", 2002): what a part does with links to hosts it
//! does not own, and how the parts agree that the crawl is over.
//!
//! Each part is an ordinary application to its manager (own id `<stem>-p<I>`, seen
//! set, request files, pages folder, repository). Ownership is
//! [`app_core::parts::Ownership`] of the URL's host name (the port aside),
//! the one rule every part and tool uses. Only owned URLs go into request files.
//!
//! **Where the split happens.** Every link goes through the part's own seen set
//! first, owned or not; the split is made on each merge's *new* keys. So a part
//! sends (or drops, or keeps) a foreign URL at most once over the crawl: the sender
//! remembers what it sent, which is what Cho and Garcia-Molina's exchange mode
//! needs to keep communication overhead at "one message per distinct inter-part
//! link" (their section 6: without it a URL is sent once per link to it).
//!
//! **Modes** ([`PartMode`]):
//! - exchange: foreign URLs are appended, per owner, to an outbox file
//!   `<state>/outbox/<owner>` (fsynced), and sent from there as exchange files
//!   (`spool::formats::exchange`, at most `exchange_urls_per_file` URLs each) into
//!   the owner's `exchange/<owner>/` under the shared `exchange_root`: Cho and
//!   Garcia-Molina's batch communication, by size and age. An outbox goes when it
//!   holds `exchange_urls_per_file` URLs, when its oldest URL has waited
//!   `exchange_max_age_ms`, when its owner's status file says the owner is idle
//!   (**eager when the receiver waits, batched while it is busy**), and always
//!   before this part writes `idle=1`. So a file holds what one owner got over up
//!   to a second instead of one merge's worth (1.5-2 URLs on a polite crawl).
//!   Memory: an outbox lives on disk; only its URL count and age are in memory,
//!   O(K). Reading one to send it holds at most one merge's foreign URLs more
//!   than a file's worth.
//! - firewall: foreign URLs are dropped (counted).
//! - cross-over: foreign URLs are appended to `<state>/crossover` (on disk, so
//!   memory stays bounded) and requested by the part itself once its own frontier
//!   is dry (the manager says idle). Overlap is expected, and measured.
//! - two-level (FC2L-UDC; the parts are the agents of the two-level coordinator, crate `coordinator`):
//!   no hash. A site (host name) belongs to the agent the coordinator's
//!   assignment generations name; an agent keeps only its own sites in memory
//!   and starts each at its root when it reads the assignment (`sites.rs`, which
//!   also says how it finds the other agents' sites on disk). A new URL of its
//!   own site is requested; one of any other site is, with the coverage fix,
//!   *parked* (appended to `<state>/parked`, fsynced, before the generation is
//!   recorded, like an outbox line) and resolved by the next pass: another
//!   agent's goes through the outbox exactly as in exchange mode, an unassigned
//!   site is reported to the coordinator and its URLs wait. Votes (a URL with
//!   the page that linked it, the first link a part sees from a site to a host:
//!   `Parts::vote`, as in exchange mode) go the same way, placed when their
//!   generation is published, or are dropped for the agent's own site (its
//!   budgets counted them). Released own URLs pass the host budgets as a
//!   merge's new URLs do (requested, or held until the host's budget grows, or
//!   cut: issue 38). The requests, held URLs, cut record and outbox lines are
//!   durable before the parked file is rewritten without them (temp file and
//!   rename): a crash in between releases them again, never loses one. Without
//!   the coverage fix (`coverage_fix: false`, plain 2L) a link to another site is
//!   reduced to that site's root before the seen set, and a root not this
//!   agent's is parked the same way; the pass drops it once its site is another
//!   agent's (the owner starts the site there: nothing passes between agents,
//!   votes neither, and pages only other sites link are never crawled), and
//!   requests it once its site is this agent's own: the seen set holds it, so
//!   nothing else would (an https root met before the site was assigned with its
//!   http root, which redirects to it, is one; dropping it lost the site).
//!   Memory: O(own sites); the parked URLs and the other agents' sites live on
//!   disk.
//!
//! **Replication** (exchange mode; Cho and Garcia-Molina section 3.2,
//! `app_core::parts::replicated`): with `replicated_file`, every part holds the same
//! list of a previous crawl's most-linked URLs. A listed URL another part owns is
//! neither sent nor voted for (counted `replicated`); the owner offers the listed
//! URLs it owns with its seeds (depth 0, once: the seeds' generation covers them),
//! so it crawls them even where only other parts link to them. A listed URL that
//! arrives in an exchange file anyway (a part run without the list) is applied
//! as usual and counted `replicated_in`.
//!
//! **Crash safety of the exchange.** A merge's outbox lines (or cross-over
//! lines) are written, fsynced, before its generation is recorded as
//! published, exactly as its request files: a crash in between writes them again
//! (the receiver's seen set absorbs the double), never the reverse. An outbox is
//! removed only after its exchange files are published: a crash in between sends
//! them twice, never loses them. A line cut by a crash is cut off when the file
//! is opened again, so the next append starts on a line of its own. A receiver
//! claims an exchange file, offers its URLs to its scope rules and seen set like
//! links it found itself (depth travels in the hint), and deletes the file only
//! when the generation covering those inserts is published, the same argument as
//! for page batches: a crash re-reads the claimed file, and applying it twice is
//! harmless because the seen set drops what it holds. Cross-over URLs released
//! and then re-released after a crash are the one way a crash doubles a fetch.
//!
//! **Termination** (exchange mode). A part alone cannot decide the crawl is over:
//! another part may still send it URLs. Each part writes a status file
//! `<exchange_root>/parts/<app>.status` (`idle=0|1 version=V` and its counters,
//! temp file and rename) with a new version at every write. The rules:
//! (1) a part writes `idle=1` only when it is locally done (manager idle for its
//! URLs, its pages, outcomes and exchange folders empty, nothing merging or waiting);
//! (2) before it processes anything it claimed while its file says `idle=1`, it
//! writes `idle=0`; (3) it publishes exchange files only while busy (its outboxes
//! are empty whenever it says idle: they are sent first). A part ends when
//! it reads every part's status idle, then finds no exchange file anywhere (every
//! `exchange/<part>/` including claimed files), then reads every status again
//! unchanged (same versions). Argument: suppose a part works after such a check;
//! take the first work after the first read. Its trigger is an exchange file `f`
//! (an idle part gets nothing else: its manager holds nothing of it). `f` was
//! published by a busy sender. If it was published before the sender's first
//! read, the sender's later `idle=1` came after it, so `f` was in a folder at the
//! listing, or already claimed by its receiver before the listing, whose rule (2)
//! write then falls between its two reads unless the claim preceded its first
//! read, in which case it was not idle then. If `f` was published after the
//! sender's first read, the sender worked after the first read before this first
//! work: a contradiction. Over NFS no change event crosses machines; the parts
//! poll, and `idle_check_ms` separates the two reads so a file published on
//! another machine is visible by the second. Firewall and cross-over parts send
//! nothing and end alone.
//!
//! **Termination in two-level mode** extends the rule: (1) a part is locally done
//! only with nothing parked; the coordinator counts as one more party, with its
//! own status file (`parts/<stem>-coord.status`, `idle=1` once it found no report
//! waiting or claimed and published everything it merged), and its report folder
//! (`exchange/<stem>-coord/`, claimed files included) as one more folder that
//! must be empty between the two reads. The argument above carries over: a part
//! reports only while it parks, so while it is busy; a parked URL keeps its part
//! busy until its site is assigned and the URL requested, sent (an exchange
//! file, covered above) or dropped. An assignment file, though, makes its
//! owner work with nothing parked (it requests the site's root), and the
//! coordinator may have published it and said idle before the owner looked: so
//! each party's status also names the assignment generation it has reached
//! (the coordinator's `generation=`, the newest it published; an agent's
//! `sites_read=`, the newest it read and requested the roots of), and the rule
//! adds that every party names the same one in both reads. An agent that reads a
//! generation rewrites its status, so the check then fails until it has acted on
//! it. So when every party reads idle twice with nothing in flight and one
//! generation, no site waits for the coordinator, no root for its owner and no
//! URL for a site.
//!
//! The counters (`sent`, `applied`, `dropped`, `kept`, `crossed`) are statistics
//! for the metrics; no decision uses them, so a crash that counts a file twice
//! is harmless.

mod outbox;
mod sites;
mod status;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use spool::claim::Consumer;
use spool::name::Priority;
use spool::publish::Publisher;
use spool::{AppId, ComponentId, Spool};
use url::Url;

use self::outbox::Outboxes;
pub(crate) use self::sites::ParkedSplit;
use self::sites::Sites;
use self::status::StatusBoard;
pub use self::status::status_counters;
pub(crate) use self::status::{Status, quiet};

use crate::state::PartCounters;
use app_core::config::{AppConfig, PartMode};
use app_core::error::AppError;
use app_core::parts::Ownership;
use app_core::parts::replicated::Replicated;

/// A foreign URL on its way out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Foreign {
    pub url: String,
    /// Link depth from the seeds.
    pub depth: u32,
    /// Redirects followed to reach it.
    pub hops: u32,
    /// The page that linked to it, when it goes out as a *vote*: the first link
    /// from its site to the URL's host that this part saw. The owner counts that
    /// site toward the host's budget as if the page were its own (`budget.rs`);
    /// without it a split crawl's owner counts only the sites its own pages
    /// show, and cuts URLs one part would have admitted.
    pub via: Option<String>,
    /// Importance order: the links to it this part found (`importance.rs`); sent
    /// as the `links` hint when not 0.
    pub links: u64,
}

impl Foreign {
    /// A URL with no vote.
    pub(crate) fn new(url: String, depth: u32, hops: u32) -> Foreign {
        Foreign {
            url,
            depth,
            hops,
            via: None,
            links: 0,
        }
    }

    /// The same URL with `links` links counted.
    pub(crate) fn with_links(mut self, links: u64) -> Foreign {
        self.links = links;
        self
    }

    /// The outbox line: URL, depth, hops and, for a vote, the linking page; the
    /// links after them when counted (the via field then empty when no vote).
    fn line(&self) -> String {
        let via = self.via.as_deref().unwrap_or("");
        match (self.links, &self.via) {
            (0, Some(via)) => format!("{}\t{}\t{}\t{via}\n", self.url, self.depth, self.hops),
            (0, None) => format!("{}\t{}\t{}\n", self.url, self.depth, self.hops),
            (n, _) => format!("{}\t{}\t{}\t{via}\t{n}\n", self.url, self.depth, self.hops),
        }
    }

    /// Reads an outbox line back (`None`: not one, e.g. cut by a crash).
    fn parse(line: &str) -> Option<Foreign> {
        let mut f = line.split('\t');
        let url = f.next().filter(|u| !u.is_empty())?;
        let depth = f.next()?.parse().ok()?;
        let hops = f.next()?.parse().ok()?;
        let via = f.next().filter(|v| !v.is_empty()).map(str::to_owned);
        let links = match f.next() {
            Some(n) => n.parse().ok()?,
            None => 0,
        };
        if f.next().is_some() {
            return None;
        }
        Some(Foreign {
            url: url.to_owned(),
            depth,
            hops,
            via,
            links,
        })
    }
}

/// How often, at most, the owners' status files are read to find idle owners.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// The part-specific state of one application part: where URLs belong, and the
/// parts that carry them (outboxes, status board, two-level sites).
pub(crate) struct Parts {
    pub own: u32,
    pub count: u32,
    pub mode: PartMode,
    ownership: Ownership,
    /// The replicated URLs (`parts::replicated`): never sent, the owner seeds them.
    replicated: Replicated,
    /// Our own exchange folder.
    pub inbox: Consumer,
    /// Exchange mode: one file of foreign URLs per owner.
    outbox: Outboxes,
    /// The status files and exchange folders of the end-of-crawl check.
    board: StatusBoard,
    /// `<state>/crossover`: the cross-over mode's kept URLs.
    crossover: PathBuf,
    /// Votes for other parts' hosts since the last hand-on (see [`Parts::vote`]).
    votes: Vec<(u32, Foreign)>,
    /// Two-level mode: votes not placed yet, placed when their generation is
    /// published ([`Parts::place_votes`]).
    site_votes: Vec<Foreign>,
    /// Two-level mode: the coordinator's assignments and the parked URLs.
    sites: Option<Sites>,
}

impl Parts {
    /// The part state for a split crawl; `None` when `parts == 1`.
    pub(crate) fn open(
        config: &AppConfig,
        spool: &Spool,
        own_app: &AppId,
        id: &ComponentId,
    ) -> Result<Option<Self>, AppError> {
        let Some(stem) = config.part_stem()? else {
            return Ok(None);
        };
        let count = config.parts;
        let ownership = config.ownership()?;
        let replicated = match &config.replicated_file {
            Some(path) => Replicated::load(path).map_err(|e| AppError::Config {
                field: "replicated_file",
                reason: e.to_string(),
            })?,
            None => Replicated::default(),
        };
        let root = config
            .exchange_root
            .clone()
            .map_or_else(|| spool.clone(), Spool::new);
        let mut apps = Vec::new();
        let mut folders = Vec::new();
        let mut outboxes = Vec::new();
        for j in 0..count {
            let name = format!("{stem}-p{j}");
            let app = AppId::new(name.clone()).map_err(|e| AppError::Config {
                field: "app",
                reason: format!("part id {name:?}: {e}"),
            })?;
            let dir = root.exchange(&app)?;
            outboxes.push(if j == config.part {
                None
            } else {
                Some(Publisher::new(dir.clone(), id.clone())?)
            });
            folders.push(dir);
            apps.push(name);
        }
        let sites = if config.part_mode == PartMode::TwoLevel {
            // The coordinator is one more party of the end-of-crawl check, and
            // its report folder one more folder that must be empty.
            let coord = app_core::twolevel::coordinator_app(&stem);
            let app = AppId::new(coord.clone()).map_err(|e| AppError::Config {
                field: "app",
                reason: format!("coordinator id {coord:?}: {e}"),
            })?;
            folders.push(root.exchange(&app)?);
            apps.push(coord);
            Some(Sites::open(
                &config.state_dir,
                root.root(),
                &stem,
                id,
                config.part,
                count,
                config.coverage_fix,
            )?)
        } else {
            None
        };
        let board = StatusBoard::open(
            root.root().join("parts"),
            apps,
            own_app.as_str().to_owned(),
            folders,
        )?;
        // Local to this part.
        let outbox = Outboxes::open(
            config.state_dir.join("outbox"),
            outboxes,
            config.part,
            config.exchange_urls_per_file,
            Duration::from_millis(config.exchange_max_age_ms),
        )?;
        let crossover = config.state_dir.join("crossover");
        cut_partial_line(&crossover)?;
        Ok(Some(Self {
            own: config.part,
            count,
            mode: config.part_mode,
            ownership,
            replicated,
            inbox: Consumer::new(root.exchange(own_app)?, id.clone())?,
            outbox,
            board,
            crossover,
            votes: Vec::new(),
            site_votes: Vec::new(),
            sites,
        }))
    }

    /// Where `url` goes: `Some(part)` for the part that owns its host, `None` in
    /// two-level mode for a site the coordinator has not assigned yet.
    pub(crate) fn place(&self, url: &Url) -> Option<u32> {
        match &self.sites {
            Some(sites) => sites.is_own(url).then_some(self.own),
            None => Some(
                self.ownership
                    .owner(&app_core::parts::host_of(url).unwrap_or_default()),
            ),
        }
    }

    /// Two-level mode: whether `url` is the root of one of this agent's sites,
    /// requested when the site was assigned (never again). False otherwise.
    pub(crate) fn is_own_root(&self, url: &Url) -> bool {
        self.sites.as_ref().is_some_and(|s| s.is_own_root(url))
    }

    /// Two-level mode with the coverage fix: the parked URLs of another agent's
    /// site go to it (without the fix they are dropped: its owner starts the
    /// site at its root).
    pub(crate) fn fix(&self) -> bool {
        self.sites.as_ref().is_some_and(|s| s.fix)
    }

    /// Two-level mode without the fix: the URL a link from `page` to `url` is
    /// reduced to, `scheme://host[:port]/` when `url` is on another site;
    /// `None` when the link stays as it is.
    pub(crate) fn reduce(&self, url: &Url, page: &Url) -> Option<Url> {
        let sites = self.sites.as_ref()?;
        if sites.fix || app_core::parts::host_of(url) == app_core::parts::host_of(page) {
            return None;
        }
        let root = app_core::twolevel::root_of(url);
        (root != *url).then_some(root)
    }

    /// Two-level mode: the depth of a link from `page` to `url` that the
    /// caller computed as `depth` (the page's plus one), counted within `url`'s
    /// site from its entry, the root (the paper's `rootpage(site)`, depth 0,
    /// requested by the owner when the site is assigned): a link from another
    /// site to the root is depth 0, to any other page of it depth 1 (one link
    /// from outside: its distance from the root is not known, and the coverage
    /// fix fetches it whatever it is). A link within the site adds one.
    /// Outside two-level mode, `depth`.
    pub(crate) fn site_depth(&self, url: &Url, page: &Url, depth: u32) -> u32 {
        if self.sites.is_none() || app_core::parts::host_of(url) == app_core::parts::host_of(page) {
            depth
        } else {
            u32::from(app_core::twolevel::root_of(url) != *url)
        }
    }

    /// URLs parked until their site is resolved (0 outside two-level mode).
    pub(crate) fn parked(&self) -> u64 {
        self.sites.as_ref().map_or(0, Sites::parked)
    }

    /// Two-level mode: parks `urls` (not this agent's sites) on disk, fsynced,
    /// before the caller records its generation, as the outbox's lines: a crash
    /// in between parks them again. Their sites are resolved by the next pass
    /// (requested if ours, sent on with the fix or else dropped if another
    /// agent's, reported if unassigned).
    pub(crate) fn park(
        &mut self,
        urls: Vec<Foreign>,
        counters: &mut PartCounters,
    ) -> Result<(), AppError> {
        match &mut self.sites {
            Some(sites) => sites.park(&urls, counters),
            None => Ok(()),
        }
    }

    /// Two-level mode: reads the assignment generations published since the
    /// last look (at most every 50 ms; `sites.rs`); returns the roots of this
    /// agent's newly assigned sites, to request at depth 0, after which the
    /// caller says [`Parts::roots_done`]. O(new assignments).
    pub(crate) fn poll_sites(&mut self, counters: &mut PartCounters) -> Result<Vec<Url>, AppError> {
        match &mut self.sites {
            Some(sites) => Ok(sites.poll(counters)?.1),
            None => Ok(Vec::new()),
        }
    }

    /// Two-level mode: the roots [`Parts::poll_sites`] returned are requested.
    pub(crate) fn roots_done(&mut self) -> Result<(), AppError> {
        match &mut self.sites {
            Some(sites) => sites.roots_done(),
            None => Ok(()),
        }
    }

    /// Two-level mode: whether parked lines wait for a pass that is due.
    pub(crate) fn pass_due(&self) -> bool {
        self.sites.as_ref().is_some_and(Sites::pass_due)
    }

    /// Two-level mode: a pass over the parked lines (`sites.rs`): this part's
    /// own, other parts' `(owner, line)`, votes included, and the rest, with the
    /// count of lines read. The caller passes its own URLs through the host
    /// budgets (its own votes were counted when their links were read) and
    /// sends the others' on, then calls [`Parts::keep_parked`] with the rest.
    pub(crate) fn parked_ready(
        &mut self,
        counters: &mut PartCounters,
    ) -> Result<ParkedSplit, AppError> {
        match &mut self.sites {
            Some(sites) => sites.pass(counters),
            None => Ok(Default::default()),
        }
    }

    /// Two-level mode: replaces the parked file with `rest` (temp file, fsync,
    /// rename), after the released URLs were requested or sent.
    pub(crate) fn keep_parked(
        &mut self,
        rest: &[Foreign],
        released: u64,
        counters: &mut PartCounters,
    ) -> Result<(), AppError> {
        match &mut self.sites {
            Some(sites) => sites.keep_parked(rest, released, counters),
            None => Ok(()),
        }
    }

    /// The part that owns `url`'s host.
    pub(crate) fn owner(&self, url: &Url) -> u32 {
        self.ownership
            .owner(&app_core::parts::host_of(url).unwrap_or_default())
    }

    /// Whether `url` is replicated: every part holds it, its owner crawls it, no
    /// part sends it. O(1).
    /// Exchange mode only: the other modes send nothing anyway.
    pub(crate) fn is_replicated(&self, url: &Url) -> bool {
        self.mode == PartMode::Exchange && self.replicated.contains(url.as_str())
    }

    /// The replicated URLs this part owns, to offer like seeds: the owner crawls
    /// them even where only other parts link to them (which then never send them).
    /// Exchange mode only, like [`Self::is_replicated`].
    pub(crate) fn own_replicated(&self) -> Vec<String> {
        if self.mode != PartMode::Exchange {
            return Vec::new();
        }
        self.replicated
            .urls()
            .filter(|u| Url::parse(u).is_ok_and(|url| self.owner(&url) == self.own))
            .map(str::to_owned)
            .collect()
    }

    /// `url` was linked from `page`, of a site not counted before for its host:
    /// if another part owns the host, the URL goes to it with `page` as its `via`
    /// with the next hand-on, so that the owner counts the site (exchange and
    /// two-level modes: the others send nothing). In two-level mode the owner
    /// may not be assigned yet: the vote waits for its generation's publication
    /// ([`Parts::place_votes`]), and is parked with the URLs of its site when
    /// that is still unassigned then. O(1); at most one vote per host and
    /// linking site (`budget.rs` caps the sites kept per host).
    pub(crate) fn vote(&mut self, url: &Url, depth: u32, hops: u32, page: &Url) {
        let mut vote = Foreign::new(url.to_string(), depth, hops);
        vote.via = Some(page.to_string());
        match self.mode {
            PartMode::Exchange => {
                let owner = self.owner(url);
                if owner == self.own || self.is_replicated(url) {
                    return;
                }
                self.votes.push((owner, vote));
            }
            // An assignment is for good: a vote for our own site stays here
            // (this part counted it).
            PartMode::TwoLevel if self.place(url) != Some(self.own) => {
                self.site_votes.push(vote);
            }
            PartMode::TwoLevel | PartMode::Firewall | PartMode::Crossover => {}
        }
    }

    /// Two-level mode: places the votes gathered since the last publication by
    /// the assignments read so far, as that publication places its new URLs
    /// (the same moment, so a vote and its URL go the same way): a vote for
    /// another agent's site goes with the next hand-on, one for an unassigned
    /// site into `parked`, one for this part's own is dropped (counted here).
    /// Without the fix every vote is dropped.
    pub(crate) fn place_votes(&mut self, parked: &mut Vec<Foreign>) {
        let fix = self.fix();
        for vote in std::mem::take(&mut self.site_votes) {
            let Ok(url) = Url::parse(&vote.url) else {
                continue;
            };
            match self.place(&url) {
                Some(owner) if owner == self.own => {}
                // Without the fix nothing goes between agents, votes neither.
                _ if !fix => {}
                Some(owner) => self.votes.push((owner, vote)),
                None => parked.push(vote),
            }
        }
    }

    /// Hands this merge's foreign URLs on as the mode says, durably, and counts them.
    /// The votes gathered since the last hand-on go first: a crash before this
    /// loses them with the unpublished generation whose pages cast them, and
    /// reading those pages again casts them again.
    pub(crate) fn hand_on(
        &mut self,
        foreign: Vec<(u32, Foreign)>,
        priority: Priority,
        counters: &mut PartCounters,
    ) -> Result<(), AppError> {
        let mut foreign = foreign;
        if !self.votes.is_empty() {
            let mut votes = std::mem::take(&mut self.votes);
            votes.append(&mut foreign);
            foreign = votes;
        }
        if foreign.is_empty() {
            return Ok(());
        }
        match self.mode {
            PartMode::Firewall => counters.dropped += foreign.len() as u64,
            PartMode::Crossover => {
                counters.kept += foreign.len() as u64;
                self.keep(&foreign)?;
            }
            PartMode::Exchange | PartMode::TwoLevel => {
                self.outbox.add(foreign, priority, counters)?;
            }
        }
        Ok(())
    }

    /// Sends the outboxes that are due: full, old enough, for an owner that says
    /// it is idle, or every one when `all` (before this part says it is idle).
    /// Returns whether it sent any.
    pub(crate) fn send_due(
        &mut self,
        priority: Priority,
        counters: &mut PartCounters,
        all: bool,
    ) -> Result<bool, AppError> {
        let board = &self.board;
        self.outbox
            .send_due(priority, counters, all, || board.statuses())
    }

    /// Appends foreign URLs to the cross-over file, fsynced.
    fn keep(&self, urls: &[(u32, Foreign)]) -> Result<(), AppError> {
        let mut text = String::new();
        for (_, Foreign { url, depth, .. }) in urls {
            text.push_str(&format!("{url}\t{depth}\n"));
        }
        append_synced(&self.crossover, &text)
    }

    /// The kept cross-over URLs (distinct; a line cut by a crash is skipped).
    pub(crate) fn kept(&self) -> Result<Vec<(String, u32)>, AppError> {
        let text = match fs::read_to_string(&self.crossover) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(AppError::File {
                    path: self.crossover.clone(),
                    source,
                });
            }
        };
        let mut urls: BTreeMap<&str, u32> = BTreeMap::new();
        for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
            let Some((url, depth)) = line.trim_end().split_once('\t') else {
                continue;
            };
            let Ok(depth) = depth.parse::<u32>() else {
                continue;
            };
            let d = urls.entry(url).or_insert(depth);
            *d = (*d).min(depth);
        }
        Ok(urls.into_iter().map(|(u, d)| (u.to_owned(), d)).collect())
    }

    /// Forgets the kept URLs (after they were published as request files).
    pub(crate) fn forget_kept(&self) -> Result<(), AppError> {
        match fs::remove_file(&self.crossover) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(AppError::File {
                path: self.crossover.clone(),
                source,
            }),
        }
    }

    /// Writes our status file if the idle flag changed (or was never written);
    /// in two-level mode also when the assignment generation read changed
    /// (the end-of-crawl rule compares it with the coordinator's), and while
    /// busy at most every second, so the coordinator's balanced policy sees the
    /// pages so far.
    pub(crate) fn set_idle(
        &mut self,
        idle: bool,
        c: &PartCounters,
        pages: u64,
    ) -> Result<(), AppError> {
        let sites = self.sites.as_ref().map(Sites::generation_read);
        self.board.set_idle(idle, sites, c, pages)
    }

    /// Every part's status, in part order; `None` for a part without a (readable)
    /// status file yet.
    pub(crate) fn statuses(&self) -> Vec<Option<Status>> {
        self.board.statuses()
    }

    /// Exchange files anywhere: waiting in a folder or claimed by their receiver.
    pub(crate) fn in_flight(&self) -> Result<usize, AppError> {
        self.board.in_flight()
    }
}

/// Appends `text` (whole lines) to `path` and fsyncs it.
fn append_synced(path: &Path, text: &str) -> Result<(), AppError> {
    let io = |source| AppError::File {
        path: path.to_owned(),
        source,
    };
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)
}

/// Cuts off a last line a crash left without its newline (so the next append
/// starts a line of its own) and returns the whole lines left; 0 when `path`
/// does not exist.
fn cut_partial_line(path: &Path) -> Result<u64, AppError> {
    let io = |source| AppError::File {
        path: path.to_owned(),
        source,
    };
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => return Err(io(source)),
    };
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if whole < bytes.len() {
        let file = fs::OpenOptions::new().write(true).open(path).map_err(io)?;
        file.set_len(whole as u64).map_err(io)?;
        file.sync_all().map_err(io)?;
    }
    Ok(bytes[..whole].iter().filter(|&&b| b == b'\n').count() as u64)
}

fn format_error(e: spool::formats::FormatError) -> AppError {
    AppError::File {
        path: PathBuf::from("<exchange file>"),
        source: std::io::Error::other(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_ids_and_modes_are_checked() {
        let mut c = AppConfig {
            app: "bfs-p2".into(),
            parts: 4,
            part: 2,
            ..AppConfig::default()
        };
        assert_eq!(c.part_stem().unwrap().as_deref(), Some("bfs"));
        c.app = "bfs".into();
        assert!(c.part_stem().is_err(), "the id must name the part");
        c.part = 4;
        assert!(c.scope().is_err(), "part out of range");
        c.parts = 1;
        c.part = 0;
        assert_eq!(c.part_stem().unwrap(), None);
        assert_eq!("cross-over".parse::<PartMode>(), Ok(PartMode::Crossover));
        assert_eq!("firewall".parse::<PartMode>(), Ok(PartMode::Firewall));
        assert!("both".parse::<PartMode>().is_err());
    }

    fn config(dir: &Path, part: u32, mode: PartMode) -> AppConfig {
        AppConfig {
            app: format!("bfs-p{part}"),
            parts: 2,
            part,
            part_mode: mode,
            state_dir: dir.join(format!("state{part}")),
            exchange_urls_per_file: 2,
            ..AppConfig::default()
        }
    }

    #[test]
    fn exchange_files_reach_the_owner_cut_by_size_and_termination_sees_them() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let id = ComponentId::new("t".to_owned()).unwrap();
        let c0 = config(dir.path(), 0, PartMode::Exchange);
        let app0 = c0.app_id().unwrap();
        let mut p0 = Parts::open(&c0, &spool, &app0, &id).unwrap().unwrap();
        let c1 = config(dir.path(), 1, PartMode::Exchange);
        let app1 = c1.app_id().unwrap();
        let mut p1 = Parts::open(&c1, &spool, &app1, &id).unwrap().unwrap();
        let mut counters = PartCounters::default();
        let urls: Vec<(u32, Foreign)> = (0..5)
            .map(|i| (1, Foreign::new(format!("http://h{i}.example/"), 3, 0)))
            .collect();
        p0.hand_on(urls, Priority::NORMAL, &mut counters).unwrap();
        assert_eq!((counters.sent_files, counters.sent_urls), (3, 5));
        assert_eq!(p0.in_flight().unwrap(), 3);
        // Both idle, but files in flight: not over.
        p0.set_idle(true, &counters, 0).unwrap();
        p1.set_idle(true, &PartCounters::default(), 0).unwrap();
        let first = p0.statuses();
        assert!(!quiet(&first, p0.in_flight().unwrap(), &p0.statuses()));
        // The receiver claims them: still in flight until it deletes them.
        let claimed = p1.inbox.claim_batch(10).unwrap();
        assert_eq!(claimed.len(), 3);
        assert_eq!(p0.in_flight().unwrap(), 3);
        let mut got = Vec::new();
        for c in claimed {
            let bytes = c.read().unwrap();
            let r = spool::formats::ExchangeReader::new(&bytes[..]).unwrap();
            assert_eq!((r.header().from, r.header().to), (0, 1));
            for req in r {
                let req = req.unwrap();
                assert_eq!(req.hints.depth, Some(3));
                got.push(req.url);
            }
            c.done().unwrap();
        }
        got.sort();
        assert_eq!(got.len(), 5);
        assert_eq!(p0.in_flight().unwrap(), 0);
        // Idle again, nothing in flight, unchanged: over.
        let first = p0.statuses();
        assert!(quiet(&first, p0.in_flight().unwrap(), &p1.statuses()));
        // A part that works in between changes its version.
        p1.set_idle(false, &PartCounters::default(), 0).unwrap();
        p1.set_idle(true, &PartCounters::default(), 0).unwrap();
        assert!(!quiet(&first, 0, &p0.statuses()));
    }

    #[test]
    fn outbox_waits_for_size_age_or_an_idle_owner_and_survives_a_cut_line() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let id = ComponentId::new("t".to_owned()).unwrap();
        let mut c0 = config(dir.path(), 0, PartMode::Exchange);
        c0.exchange_urls_per_file = 3;
        c0.exchange_max_age_ms = 3_600_000;
        let app0 = c0.app_id().unwrap();
        let mut p0 = Parts::open(&c0, &spool, &app0, &id).unwrap().unwrap();
        let c1 = config(dir.path(), 1, PartMode::Exchange);
        let app1 = c1.app_id().unwrap();
        let mut p1 = Parts::open(&c1, &spool, &app1, &id).unwrap().unwrap();
        let mut counters = PartCounters::default();
        let u = |s: &str, d, h| (1, Foreign::new(s.to_owned(), d, h));
        // Two URLs: below the size, young, owner busy: they wait on disk.
        p0.hand_on(
            vec![u("http://a.x/", 2, 0), u("http://b.x/", 1, 3)],
            Priority::NORMAL,
            &mut counters,
        )
        .unwrap();
        p1.set_idle(false, &PartCounters::default(), 0).unwrap();
        assert!(!p0.send_due(Priority::NORMAL, &mut counters, false).unwrap());
        assert_eq!((p0.in_flight().unwrap(), counters.sent_urls), (0, 0));
        // A crash cut the next append; reopening cuts the partial line off and
        // counts the two whole ones.
        let outbox = dir.path().join("state0").join("outbox").join("1");
        append_synced(&outbox, "http://cut.x/\t4").unwrap();
        drop(p0);
        let mut p0 = Parts::open(&c0, &spool, &app0, &id).unwrap().unwrap();
        assert_eq!(p0.outbox.waiting[1].0, 2);
        p0.hand_on(
            vec![u("http://c.x/", 1, 0)],
            Priority::NORMAL,
            &mut counters,
        )
        .unwrap();
        // Three: the size is reached, one file goes at once.
        assert_eq!((counters.sent_files, counters.sent_urls), (1, 3));
        assert!(!outbox.exists());
        // The owner says it is idle: what waits goes at once.
        p0.hand_on(
            vec![u("http://d.x/", 1, 0)],
            Priority::NORMAL,
            &mut counters,
        )
        .unwrap();
        p1.set_idle(true, &PartCounters::default(), 0).unwrap();
        assert!(p0.send_due(Priority::NORMAL, &mut counters, false).unwrap());
        assert_eq!((counters.sent_files, counters.sent_urls), (2, 4));
        // Old enough: goes even to a busy owner.
        p0.outbox.max_age = Duration::ZERO;
        p1.set_idle(false, &PartCounters::default(), 0).unwrap();
        p0.hand_on(
            vec![u("http://e.x/", 1, 0)],
            Priority::NORMAL,
            &mut counters,
        )
        .unwrap();
        p0.outbox.last_look = None;
        assert!(p0.send_due(Priority::NORMAL, &mut counters, false).unwrap());
        assert_eq!((counters.sent_files, counters.sent_urls), (3, 5));
        // What reached part 1, hints included; nothing cut or doubled.
        let mut got = Vec::new();
        for c in p1.inbox.claim_batch(10).unwrap() {
            let bytes = c.read().unwrap();
            for req in spool::formats::ExchangeReader::new(&bytes[..]).unwrap() {
                let req = req.unwrap();
                got.push((req.url, req.hints.depth, req.hints.hops));
            }
            c.done().unwrap();
        }
        got.sort();
        let want = |s: &str, d, h| (s.to_owned(), Some(d), h);
        assert_eq!(
            got,
            vec![
                want("http://a.x/", 2, None),
                want("http://b.x/", 1, Some(3)),
                want("http://c.x/", 1, None),
                want("http://d.x/", 1, None),
                want("http://e.x/", 1, None),
            ]
        );
        // Before saying idle, everything goes.
        p0.hand_on(
            vec![u("http://f.x/", 1, 0)],
            Priority::NORMAL,
            &mut counters,
        )
        .unwrap();
        p0.outbox.max_age = Duration::from_secs(3600);
        assert!(p0.send_due(Priority::NORMAL, &mut counters, true).unwrap());
        assert_eq!(p0.in_flight().unwrap(), 1);
    }

    #[test]
    fn outbox_lines_round_trip_with_and_without_a_vote() {
        let plain = Foreign::new("http://a.x/p".to_owned(), 3, 1);
        let mut vote = plain.clone();
        vote.via = Some("http://b.y/q".to_owned());
        // Importance order: link counts, with or without a vote.
        let counted = plain.clone().with_links(7);
        let counted_vote = vote.clone().with_links(2);
        for f in [&plain, &vote, &counted, &counted_vote] {
            let line = f.line();
            assert_eq!(
                Foreign::parse(line.trim_end_matches('\n')).as_ref(),
                Some(f)
            );
        }
        assert_eq!(Foreign::parse("http://a.x/p\t3"), None, "cut by a crash");
        assert_eq!(Foreign::parse("http://a.x/p\t3\t1\tv\tmore"), None);
        assert_eq!(Foreign::parse("http://a.x/p\t3\t1\tv\t4\t5"), None);
        assert_eq!(Foreign::parse("\t3\t1"), None);
    }

    #[test]
    fn a_vote_reaches_the_owner_with_its_linking_page_and_a_firewall_sends_none() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let id = ComponentId::new("t".to_owned()).unwrap();
        let c0 = config(dir.path(), 0, PartMode::Exchange);
        let mut p0 = Parts::open(&c0, &spool, &c0.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        let c1 = config(dir.path(), 1, PartMode::Exchange);
        let p1 = Parts::open(&c1, &spool, &c1.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        let host = |owner: u32| {
            (0..100)
                .map(|i| Url::parse(&format!("http://h{i}.example/x")).unwrap())
                .find(|u| p0.owner(u) == owner)
                .unwrap()
        };
        let (theirs, ours) = (host(1), host(0));
        let page = Url::parse("http://linker.example/a").unwrap();
        p0.vote(&theirs, 2, 0, &page);
        p0.vote(&ours, 2, 0, &page);
        let mut counters = PartCounters::default();
        p0.hand_on(Vec::new(), Priority::NORMAL, &mut counters)
            .unwrap();
        assert!(p0.send_due(Priority::NORMAL, &mut counters, true).unwrap());
        let mut got = Vec::new();
        for c in p1.inbox.claim_batch(10).unwrap() {
            let bytes = c.read().unwrap();
            for req in spool::formats::ExchangeReader::new(&bytes[..]).unwrap() {
                let req = req.unwrap();
                got.push((req.url, req.hints.depth, req.hints.via));
            }
            c.done().unwrap();
        }
        let want = (theirs.to_string(), Some(2), Some(page.to_string()));
        assert_eq!(got, vec![want], "one vote, for the other part's host only");

        let cf = config(&dir.path().join("fw"), 0, PartMode::Firewall);
        let fw_spool = Spool::new(dir.path().join("fw-spool"));
        let mut pf = Parts::open(&cf, &fw_spool, &cf.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        pf.vote(&theirs, 2, 0, &page);
        assert!(pf.votes.is_empty(), "firewall mode sends nothing");
    }

    /// Publishes generation `g` of `(site, agent, root)` lines for 2 agents.
    fn assign(spool: &Spool, g: u64, sites: &[(&str, u32, &str)]) {
        let dir = app_core::twolevel::assignment_dir(spool.root(), "bfs");
        fs::create_dir_all(&dir).unwrap();
        let lines: Vec<_> = sites
            .iter()
            .map(|(s, a, r)| ((*s).to_owned(), *a, (*r).to_owned()))
            .collect();
        app_core::twolevel::write_generation(&dir, g, 2, &lines).unwrap();
    }

    /// The sites (and roots) of every report waiting for the coordinator.
    fn reports(spool: &Spool, id: &ComponentId) -> Vec<(String, String)> {
        let coord = AppId::new("bfs-coord".to_owned()).unwrap();
        let inbox = Consumer::new(spool.exchange(&coord).unwrap(), id.clone()).unwrap();
        let mut sites = Vec::new();
        for c in inbox.claim_batch(100).unwrap() {
            sites.extend(app_core::twolevel::read_report(&c.read().unwrap(), 2).unwrap());
            c.done().unwrap();
        }
        sites
    }

    #[test]
    fn two_level_knows_only_its_own_sites_reduces_without_the_fix_and_counts_site_depth() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let id = ComponentId::new("t".to_owned()).unwrap();
        let mut c = config(dir.path(), 0, PartMode::TwoLevel);
        let mut p = Parts::open(&c, &spool, &c.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        let u = |s: &str| Url::parse(s).unwrap();
        let (page, other) = (u("http://a.x:81/p/q"), u("https://b.y/deep/page?x=1"));
        assert_eq!(p.place(&other), None);
        assign(
            &spool,
            1,
            &[("b.y", 1, "https://b.y/"), ("a.x", 0, "http://a.x:81/")],
        );
        let mut counters = PartCounters::default();
        // Our own site's root comes back to be requested; b.y is only "not mine".
        assert_eq!(
            p.poll_sites(&mut counters).unwrap(),
            vec![u("http://a.x:81/")]
        );
        assert_eq!((p.place(&other), p.place(&page)), (None, Some(0)));
        assert!(p.is_own_root(&u("http://a.x:81/")) && !p.is_own_root(&page));
        assert_eq!(counters.sites, 1, "a.x is ours");
        // Site depth: from the site's root; a link from another site is depth
        // 1, or 0 to the root itself.
        assert_eq!(p.site_depth(&other, &page, 5), 1);
        assert_eq!(p.site_depth(&u("https://b.y/"), &page, 5), 0);
        assert_eq!(p.site_depth(&u("http://a.x/r"), &page, 5), 5);
        // With the fix links stay; without it they go to their site's root.
        assert_eq!(p.reduce(&other, &page), None);
        assert!(p.fix());
        c.coverage_fix = false;
        let mut p = Parts::open(&c, &spool, &c.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        assert!(!p.fix());
        assert_eq!(p.reduce(&other, &page), Some(u("https://b.y/")));
        assert_eq!(p.reduce(&u("http://a.x/other"), &page), None, "same site");
        assert_eq!(
            p.reduce(&u("https://b.y/"), &page),
            None,
            "already the root"
        );
        // Reopened: the roots of generation 1 were not recorded requested, so
        // they come again; once recorded, a restart does not ask again.
        assert_eq!(p.poll_sites(&mut counters).unwrap().len(), 1);
        p.roots_done().unwrap();
        let mut p = Parts::open(&c, &spool, &c.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        assert!(p.poll_sites(&mut counters).unwrap().is_empty());
        assert!(p.is_own_root(&u("http://a.x:81/")), "the table is rebuilt");
        // Without the fix a URL not (known to be) ours is parked as with it.
        // The pass reports an unassigned site (with its root) and keeps the
        // line; drops (gives the caller no line for) another agent's root; and
        // hands back a root of our own site other than the one its assignment
        // named: our seen set took it before a.x was ours, and its https root
        // is reached from the http one only by a redirect it would swallow.
        let f = |s: &str| Foreign::new(s.to_owned(), 0, 0);
        p.park(
            vec![f("https://b.y/"), f("http://c.z:82/"), f("https://a.x/")],
            &mut counters,
        )
        .unwrap();
        p.sites.as_mut().unwrap().look_now();
        assert!(p.pass_due());
        let (own, other, rest, total) = p.parked_ready(&mut counters).unwrap();
        let urls = |v: &[Foreign]| v.iter().map(|f| f.url.clone()).collect::<Vec<_>>();
        assert_eq!(urls(&own), ["https://a.x/"]);
        assert!(other.is_empty(), "b.y's root is its owner's");
        assert_eq!((urls(&rest), total), (vec!["http://c.z:82/".to_owned()], 3));
        assert_eq!(
            reports(&spool, &id),
            [("c.z".to_owned(), "http://c.z:82/".to_owned())]
        );
        // The thresholds apply to two-level agents only.
        assert_eq!((c.depth_limit(), c.budget_rule().cap), (32, 100_000));
        c.max_pages_per_host = 50;
        assert_eq!(c.budget_rule().cap, 50);
        c.part_mode = PartMode::Exchange;
        assert_eq!((c.depth_limit(), c.budget_rule().cap), (64, 50));
    }

    #[test]
    fn two_level_parks_then_a_pass_resolves_sends_and_reports_once() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let id = ComponentId::new("t".to_owned()).unwrap();
        let c = config(dir.path(), 0, PartMode::TwoLevel);
        let mut p = Parts::open(&c, &spool, &c.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        let mut counters = PartCounters::default();
        let f = |s: &str| Foreign::new(s.to_owned(), 0, 0);
        p.park(
            vec![
                f("http://a.x/1"),
                f("http://a.x/"),
                f("http://b.y/3"),
                f("http://b.y/"),
                f("http://c.z/"),
            ],
            &mut counters,
        )
        .unwrap();
        assert_eq!((p.parked(), counters.parked, counters.reported), (5, 5, 0));
        assert!(p.pass_due());
        // The first pass knows no site: all three reported once, all kept.
        let (own, other, rest, total) = p.parked_ready(&mut counters).unwrap();
        assert!(own.is_empty() && other.is_empty());
        assert_eq!((rest.len(), total), (5, 5));
        let mut sites = reports(&spool, &id);
        sites.sort();
        let names: Vec<&str> = sites.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(names, ["a.x", "b.y", "c.z"]);
        assert!(!p.pass_due(), "nothing new since");
        // a.x is ours, b.y part 1's (with its root); c.z stays parked and is
        // not reported again.
        assign(
            &spool,
            1,
            &[("a.x", 0, "http://a.x/"), ("b.y", 1, "http://b.y/")],
        );
        p.sites.as_mut().unwrap().look_now();
        assert_eq!(p.poll_sites(&mut counters).unwrap().len(), 1);
        assert!(p.pass_due());
        let (own, other, rest, total) = p.parked_ready(&mut counters).unwrap();
        let own_urls: Vec<&str> = own.iter().map(|f| f.url.as_str()).collect();
        assert_eq!(own_urls, ["http://a.x/1"], "our root was requested already");
        assert_eq!(other.len(), 1, "b.y's root is its owner's to request");
        assert_eq!((other[0].0, other[0].1.url.as_str()), (1, "http://b.y/3"));
        assert!(reports(&spool, &id).is_empty(), "c.z was reported already");
        p.keep_parked(&rest, total - rest.len() as u64, &mut counters)
            .unwrap();
        assert_eq!((p.parked(), counters.released), (1, 4));
        drop(p);
        let p = Parts::open(&c, &spool, &c.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        assert_eq!(p.parked(), 1, "the rest survives a restart");
        assert!(p.pass_due(), "and is looked at again");
    }

    /// Issue 38: a two-level vote goes where its site's URLs go: dropped for
    /// this part's own site (counted here), else parked and sent to its owner
    /// by the next pass (with the fix; without it nothing goes between agents).
    #[test]
    fn two_level_votes_go_where_their_site_goes_and_wait_parked_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let id = ComponentId::new("t".to_owned()).unwrap();
        let c0 = config(dir.path(), 0, PartMode::TwoLevel);
        let mut p0 = Parts::open(&c0, &spool, &c0.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        let c1 = config(dir.path(), 1, PartMode::TwoLevel);
        let p1 = Parts::open(&c1, &spool, &c1.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        assign(&spool, 1, &[("ours.x", 0, ""), ("theirs.y", 1, "")]);
        let mut counters = PartCounters::default();
        p0.poll_sites(&mut counters).unwrap();
        let u = |s: &str| Url::parse(s).unwrap();
        let page = u("http://linker.z/a");
        p0.vote(&u("http://ours.x/p"), 1, 0, &page);
        assert!(p0.site_votes.is_empty(), "our own site: counted here");
        p0.vote(&u("http://theirs.y/p"), 2, 0, &page);
        p0.vote(&u("http://new.w/p"), 1, 0, &page);
        let mut parked = Vec::new();
        p0.place_votes(&mut parked);
        let vote = |url: &str, depth| {
            let mut v = Foreign::new(url.to_owned(), depth, 0);
            v.via = Some(page.to_string());
            v
        };
        let (theirs, new) = (vote("http://theirs.y/p", 2), vote("http://new.w/p", 1));
        assert_eq!(parked, vec![theirs.clone(), new.clone()], "not ours");
        p0.park(parked, &mut counters).unwrap();
        let (own, other, rest, _) = p0.parked_ready(&mut counters).unwrap();
        assert!(own.is_empty());
        assert_eq!(other, vec![(1, theirs)]);
        assert_eq!(rest, vec![new.clone()], "its site is unassigned");
        p0.hand_on(other, Priority::NORMAL, &mut counters).unwrap();
        p0.keep_parked(&rest, 1, &mut counters).unwrap();
        assert!(p0.send_due(Priority::NORMAL, &mut counters, true).unwrap());
        let received = |p: &Parts| {
            let mut got = Vec::new();
            for c in p.inbox.claim_batch(10).unwrap() {
                let bytes = c.read().unwrap();
                for req in spool::formats::ExchangeReader::new(&bytes[..]).unwrap() {
                    let req = req.unwrap();
                    got.push((req.url, req.hints.depth, req.hints.via));
                }
                c.done().unwrap();
            }
            got
        };
        assert_eq!(
            received(&p1),
            vec![(
                "http://theirs.y/p".to_owned(),
                Some(2),
                Some(page.to_string())
            )]
        );
        // new.w goes to part 1: its parked vote is released to it, via kept.
        assign(&spool, 2, &[("new.w", 1, "")]);
        p0.sites.as_mut().unwrap().look_now();
        p0.poll_sites(&mut counters).unwrap();
        let (own, other, rest, _) = p0.parked_ready(&mut counters).unwrap();
        assert!(own.is_empty() && rest.is_empty(), "{own:?} {rest:?}");
        assert_eq!(other, vec![(1, new)]);
        // Without the fix a vote for a site not ours goes nowhere.
        let mut c2 = config(&dir.path().join("plain"), 0, PartMode::TwoLevel);
        c2.coverage_fix = false;
        let mut p2 = Parts::open(&c2, &spool, &c2.app_id().unwrap(), &id)
            .unwrap()
            .unwrap();
        p2.vote(&u("http://theirs.y/p"), 2, 0, &page);
        let mut parked = Vec::new();
        p2.place_votes(&mut parked);
        assert!(parked.is_empty() && p2.votes.is_empty());
    }

    #[test]
    fn crossover_keeps_on_disk_distinct_and_skips_a_cut_line() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let id = ComponentId::new("t".to_owned()).unwrap();
        let c = config(dir.path(), 0, PartMode::Crossover);
        fs::create_dir_all(&c.state_dir).unwrap();
        let app = c.app_id().unwrap();
        let mut p = Parts::open(&c, &spool, &app, &id).unwrap().unwrap();
        let mut counters = PartCounters::default();
        let u = |s: &str, d| (1, Foreign::new(s.to_owned(), d, 0));
        p.hand_on(
            vec![u("http://a.x/", 2), u("http://b.x/", 1)],
            Priority::NORMAL,
            &mut counters,
        )
        .unwrap();
        p.hand_on(vec![u("http://a.x/", 1)], Priority::NORMAL, &mut counters)
            .unwrap();
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(&p.crossover)
            .unwrap();
        f.write_all(b"http://cut.x/\t").unwrap();
        assert_eq!(counters.kept, 3);
        assert_eq!(
            p.kept().unwrap(),
            vec![("http://a.x/".to_owned(), 1), ("http://b.x/".to_owned(), 1)]
        );
        p.forget_kept().unwrap();
        assert!(p.kept().unwrap().is_empty());
        // Firewall drops and counts.
        p.mode = PartMode::Firewall;
        p.hand_on(vec![u("http://c.x/", 1)], Priority::NORMAL, &mut counters)
            .unwrap();
        assert_eq!(counters.dropped, 1);
        assert!(p.kept().unwrap().is_empty());
    }
}
