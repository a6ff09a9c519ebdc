//! [`AppConfig`]: the `app: (...)` section of the config file, with its defaults.
//! Validated into the compiled [`Scope`] by [`AppConfig::scope`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use spool::AppId;
use spool::name::Priority;

use crate::budget::BudgetRule;
use crate::error::AppError;
use crate::parts::Ownership;
use crate::scope::{Scope, ScopeKind, ScopeRules};
use crate::traps::TrapRules;
use pages::canon::{CanonConfig, DEFAULT_MAX_URL_LEN, DEFAULT_SESSION_PARAMS};
use pages::links::LinkRules;
use seen::{DEFAULT_BUFFER_BYTES, SeenConfig};

/// The breadth-first application's settings. Every field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AppConfig {
    /// The application id: the spool folders `requests/<app>/`, `pages/<app>/`,
    /// `outcomes/<app>/` (`[a-z0-9_-]{1,32}`). Default `"bfs"`.
    pub app: String,
    /// Where the seen set and the progress file live. Default `"state/app"`.
    pub state_dir: PathBuf,
    /// The WARC repository page batches are stored in. Default `"repository"`.
    pub repository_dir: PathBuf,
    /// The repository's WARC files are closed at about this size: a batch that would
    /// take the open file past it starts the next file. Default 1000000000 (1 GB, as
    /// archives expect); at least 1.
    pub warc_max_bytes: u64,
    /// A WARC file started this many seconds ago takes no more batches; 0: no age
    /// limit. Default 3600.
    pub warc_max_age_secs: u64,
    /// A file of seed URLs, one a line (`#` comments and blank lines ignored).
    /// Seeds can also come from the command line. Default none.
    pub seeds_file: Option<PathBuf>,
    /// Which hosts and URLs the crawl keeps to ([`ScopeKind`]): `site` (the
    /// seeds' sites: a seed's host without `www.` and every host under it),
    /// `host` (the seeds' hosts exactly), `domain` (the seeds' registered
    /// domains), `prefix` (URLs under a seed's path prefix) or `open` (every host:
    /// an open crawl, whose hosts get budgets). In every kind but `open` the hosts
    /// in scope are the user's word: no host budget cuts them, only the ceiling
    /// `host_budget_max`. Default `site`.
    pub scope: ScopeKind,
    /// A requeue file: an earlier run's `cut.tsv` (`<state_dir>/cut.tsv`, one
    /// `URL<TAB>rule` a line), read at every start. Each URL in it that this
    /// crawl cut and never requested is requested once, at depth 0, whatever the
    /// scope, trap detectors and budgets; the others are skipped. Used on the
    /// same crawl (`--out`) after raising the limit that cut (`polycrawl crawl
    /// --requeue FILE`). Default none.
    pub requeue_file: Option<PathBuf>,
    /// Host suffixes added to the scope (`example.com` admits `example.com` and
    /// `www.example.com`); with `scope: open`, the only hosts crawled when not
    /// empty. Default empty.
    pub allowed_domains: Vec<String>,
    /// Regexes: a URL matching any of them is in scope, whatever the scope's
    /// kind (`deny_patterns` still apply). Default empty.
    pub allow_patterns: Vec<String>,
    /// Longest canonical URL followed, in bytes. Default 2048.
    pub max_url_len: usize,
    /// Deepest link followed (seeds are depth 0); a link past it is a cut
    /// (`depth`), except with 0: a crawl of the seeds alone (a recrawl's list).
    /// Default 64.
    pub max_depth: u32,
    /// Conditional requests (a recrawl, `polycrawl recrawl`): every URL requested
    /// whose newest capture in the repository is a 200 carries that response's
    /// `ETag` and `Last-Modified` as `etag` / `modified` hints, which the downloader
    /// sends as `If-None-Match` / `If-Modified-Since`; storage turns a 304 into a
    /// server-not-modified revisit. Costs one repository lookup (an index search
    /// and a record read) per URL requested. Default false.
    pub conditional_requests: bool,
    /// Most URLs requested per host over the crawl, whatever its budget; 0 =
    /// unlimited. Default 0.
    pub max_pages_per_host: u64,
    /// Open crawls (`scope: open`): budget of a host no other site links to: URLs
    /// requested at most (see `host_budget_per_linking_site`). 0 turns host
    /// budgets off, in a scoped crawl the ceiling too. Default 100.
    pub host_budget_base: u64,
    /// A host's budget grows by this much per distinct other site linking to it,
    /// up to `host_budget_max` (IRLbot's BEAST). Default 100.
    pub host_budget_per_linking_site: u64,
    /// Open crawls: budget of a seed's host before any other site links to it
    /// (it grows by `host_budget_per_linking_site` like any host's, up to
    /// `host_budget_max`): in an open crawl a seed list is nobody's word, a seed is
    /// one vote, not trust. Default 500.
    pub host_budget_seed: u64,
    /// The largest budget, that of a trusted host, and in a scoped crawl (every
    /// `scope` but `open`) the ceiling of every host in scope: a host reaching it
    /// has its further URLs cut, and the summary says so. Default 1000000.
    pub host_budget_max: u64,
    /// Hosts the operator trusts: their budget is `host_budget_max`. A name covers
    /// the host and its subdomains (`acme.test` covers `www.acme.test`).
    /// Default empty.
    pub trusted_hosts: Vec<String>,
    /// A file of more trusted host names, one a line (`#` comments and blank
    /// lines ignored). Default none.
    pub trusted_hosts_file: Option<PathBuf>,
    /// Redirects followed in a row: the target of a longer chain is not requested
    /// (counted as `redirects_cut`), so a loop or an endless chain costs at most
    /// this many + 1 requests. Default 5.
    pub max_redirect_hops: u32,
    /// A URL whose path repeats one segment more than this many times is a trap
    /// (`/a/b/a/b/a/b/...`); 0 turns the rule off. Default 3.
    pub max_repeated_segment: u32,
    /// Regex that finds a calendar-like part of a path; empty turns the rule off.
    /// Default `/\d{4}/\d{1,2}/\d{1,2}(/|$)` (`/2024/05/17/`).
    pub calendar_pattern: String,
    /// A URL whose path goes deeper than this many segments after a calendar match is
    /// a trap. Default 2.
    pub calendar_max_depth: u32,
    /// Sequence detector: on one host, a link that differs from the page it is on
    /// in one number only, by a small step (a pager's next page, a counter's next
    /// value, the next month), and goes past every value of that number seen on
    /// the host, is a step; at most this many steps per host and URL shape are
    /// followed (see `traps`). Below `max_depth`, so that a counter linking only
    /// its next value is cut here, counted, rather than by the depth. 0 turns the
    /// detector off. Default 50.
    pub max_sequence_steps: u32,
    /// Date-page detector: at most this many distinct URLs per host that name a
    /// date and nothing more (`/cal/2024/05/`, `/2024-05-17`, `?year=2024&month=5`:
    /// calendar and archive pages) are followed. 0 turns it off. Default 100.
    pub max_date_pages_per_host: u32,
    /// Far-date detector: a date page whose date is more than this many years
    /// before the crawl's date is not followed (a dated article, with more path
    /// after the date, is). 0 turns the past side off. Default 10.
    pub max_date_years_past: u32,
    /// Far-date detector: a URL naming a date more than this many years after the
    /// crawl's date is not followed, whatever follows the date. 0 turns the future
    /// side off. Default 1.
    pub max_date_years_ahead: u32,
    /// Maze detector: on one host, once this many pages of one template (the page
    /// with the words of its own URL and links, numbers and random ids taken out)
    /// were read, and they gave on average 1.5 new links of the host each or more
    /// (a maze of words, ever deeper paths; pages with text of their own, or that
    /// link each other, never do), the same-host links of that template's pages
    /// are cut (see `traps`). 0 turns the detector off. Default 100.
    pub maze_min_pages: u32,
    /// Session-id detector: a random token in a URL (a path segment, ASP.NET's
    /// `(S(...))`, a query value under a name `session_params` does not list) is a
    /// session id on a host once this many pages under a second token read as the
    /// page of the first (same template); then a link whose URL was followed
    /// under another token is cut (see `traps`). 0 turns the detector off.
    /// Default 2.
    pub session_confirmations: u32,
    /// Regexes: a URL matching any of them is never requested. Default empty.
    pub deny_patterns: Vec<String>,
    /// Hosts without a dot (`localhost`) are followed. Default false.
    pub allow_single_label_hosts: bool,
    /// Query and path parameters removed from every URL as session identifiers,
    /// ASCII case ignored (`?sid=...`, `;jsessionid=...`); empty keeps them all.
    /// Default `["sid", "sessionid", "session_id", "session", "phpsessid",
    /// "jsessionid", "aspsessionid", "cfid", "cftoken", "oscsid", "zenid"]`.
    pub session_params: Vec<String>,
    /// The unshuffle deals each batch of new URLs into at most this many piles.
    /// Default 1000.
    pub unshuffle_k: usize,
    /// URLs per published request file. Default 2000.
    pub urls_per_request_file: usize,
    /// The order in which new URLs go to the crawling system: `breadth_first`
    /// (each merge's new URLs at once, in the order found) or `importance` (held
    /// in a pool ranked by the links to them found so far, the most-linked
    /// released as the system runs low; Cho and Garcia-Molina's back-link
    /// ordering, [`Order`]). Default `breadth_first`.
    pub order: Order,
    /// Importance order only: the most of this application's URLs the crawling
    /// system holds (requested, no page or outcome read yet) before the pool
    /// releases more; at least twice what the manager reports in flight. Smaller
    /// follows the ranking more closely, larger keeps more downloads busy.
    /// Default 1000.
    pub importance_window: u64,
    /// Importance order only: the most URLs the pool holds; past it the
    /// least-linked go to the system at once (requested, never dropped).
    /// Default 200000.
    pub importance_pool_max: usize,
    /// Priority of the request files, 0 (first) to 99. Default 50.
    pub request_priority: u8,
    /// Seen-set buffer size in bytes: a merge starts when it is full. Default 64 MiB.
    pub seen_buffer_bytes: usize,
    /// Stop requesting new URLs once this many pages are stored, and finish;
    /// 0 = unlimited. Default 0.
    pub max_pages: u64,
    /// Largest decoded page body read for links, in bytes. Default 8 MiB.
    pub max_body_bytes: usize,
    /// Follow sitemaps: request the `Sitemap:` URLs that the manager reports from
    /// each host's robots.txt, and take the `<loc>` URLs of any fetched sitemap or
    /// sitemap index (plain or gzip) as links of that page, in scope and depth like
    /// links. Default true.
    pub sitemaps: bool,
    /// Write `crawl.log` (a line per fetch, Heritrix's layout) in `state_dir` as
    /// the crawl goes, and the end-of-crawl reports (`hosts-report.tsv`,
    /// `mimetype-report.tsv`, `responsecode-report.tsv`, `seeds-report.tsv`) beside
    /// it (`docs/archive.md`). Default true.
    pub crawl_log: bool,
    /// Obey the `X-Robots-Tag` response header fields (for every crawler or for
    /// `polycrawl`): `nofollow` and `none` — the page's links are not followed;
    /// `noarchive` — its body is kept out of the repository (its URL stays, as a
    /// metadata record); `noindex` is about search indexes and changes nothing
    /// (the page is stored, its links followed). Default true; archives that keep
    /// everything turn it off.
    pub obey_x_robots_tag: bool,
    /// Obey `<meta name="robots">` and `<meta name="polycrawl">` in HTML pages, with
    /// the same meaning as `obey_x_robots_tag`. Default true.
    pub obey_meta_robots: bool,
    /// Page batches claimed at a time. Default 8.
    pub batches_per_claim: usize,
    /// Least time between two claims of page batches while the manager holds
    /// URLs to spare, in milliseconds (`claim_pace.rs`: fewer, larger batches; at
    /// most this much added to a link's way to the manager); 0 claims whenever a
    /// reader is free. Default 100.
    pub claim_interval_ms: u64,
    /// Threads that read page batches (inflate, check, parse, extract links):
    /// 0 = one per core the process may run on, at most 8. Default 0.
    pub reader_threads: usize,
    /// Spool folder scan period, in milliseconds (the notify events only wake up
    /// early). Default 1000.
    pub scan_interval_ms: u64,
    /// How long an "idle" answer from the manager is confirmed before the crawl
    /// ends, in milliseconds: at least the time a file published here takes to
    /// become visible on the manager's machine (NFS attribute caching). 0 when the
    /// manager shares this machine's file system view (`polycrawl crawl` and `demo`
    /// set it). Default 1000.
    pub idle_check_ms: u64,
    /// The number of application parts the crawl is split into (Polybot section
    /// 2.4): 1 is an unsplit crawl. With K > 1 the id `app` must end in `-p<part>`;
    /// the other parts are `<stem>-p0` .. `<stem>-p<K-1>`. Default 1.
    pub parts: u32,
    /// This part, `0..parts`. Default 0.
    pub part: u32,
    /// What a part does with links to hosts another part owns (see
    /// [`PartMode`]). Default `exchange`.
    pub part_mode: PartMode,
    /// An assignment file (`polycrawl assign`): host to part; hosts it does not
    /// name go by the hash. Default none (hash only).
    pub assignment_file: Option<PathBuf>,
    /// How hosts the assignment file does not name are dealt to parts:
    /// [`Partitioning::Site`] (the hash of the host) or
    /// [`Partitioning::Hierarchical`] (the hash of its registered domain, so a
    /// domain's hosts share a part; `parts::domain_of`). Default `site`.
    pub partitioning: Partitioning,
    /// A replicated-URL file (`polycrawl assign --replicate N`): the most-linked
    /// URLs of a previous crawl, crawled by their owner and never exchanged
    /// (`parts::replicated`). Default none.
    pub replicated_file: Option<PathBuf>,
    /// The spool root whose `exchange/<app>/` folders and `parts/` status files
    /// every part shares (each part may have its own spool, one per crawling
    /// system). Default none: this part's own spool root.
    pub exchange_root: Option<PathBuf>,
    /// Most URLs in one exchange file, and the size at which a part's outbox
    /// for one owner is sent at once. Default 1000.
    pub exchange_urls_per_file: usize,
    /// Longest time foreign URLs wait in a part's outbox before they are sent
    /// to their owner (an owner that says it is idle gets them at once, and
    /// everything goes before this part says it is idle). Default 1000 ms; at
    /// most one hour.
    pub exchange_max_age_ms: u64,
    /// Importance order, exchange mode only: parts exchange back-link counts
    /// (Cho and Garcia-Molina's exchange of back-link information): each URL
    /// sent to its owner carries the links to it this part found (`links`
    /// hint), and links found later to another part's URLs already sent go to
    /// the owner as counts. Off: each part ranks by its own pages' links only.
    /// Default true.
    pub exchange_links: bool,
    /// Two-level mode only: the coverage fix of FC2L-UDC. With it (the default)
    /// a link to another site goes to that site's agent as it is; without it (2L
    /// without the fix, for comparison) it is reduced to its site's root
    /// (`scheme://host[:port]/`), so pages only other sites link are never
    /// crawled. Default true.
    pub coverage_fix: bool,
    /// Two-level mode only: the per-site depth threshold. An agent counts a
    /// URL's depth from where the crawl entered its site (the root, or the page
    /// another site linked: depth 0), not from the seeds, and follows links to
    /// at most this depth (`max_depth` still applies too). Default 32.
    pub site_max_depth: u32,
    /// Two-level mode only: the per-site page threshold, URLs requested per site
    /// at most (with `max_pages_per_host`, the smaller one that is not 0; 0:
    /// unlimited). Default 100000.
    pub site_max_pages: u64,
}

/// The order in which a breadth-first application requests new URLs
/// (`app.order`; DESIGN.md section 7, "Importance order").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Each merge's new URLs are requested at once, in the order found.
    #[default]
    BreadthFirst,
    /// New URLs wait in a pool ranked by the links to them found so far (ties:
    /// lower depth first); the most-linked go out as the system runs low.
    Importance,
}

/// What a part does with links to hosts it does not own (Cho and Garcia-Molina,
/// section 3: firewall, cross-over and exchange modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PartMode {
    /// Sent to the owner in exchange files: no overlap, full coverage.
    #[default]
    Exchange,
    /// Dropped: no overlap, no communication, coverage may suffer.
    Firewall,
    /// Kept, and requested by this part itself once its own frontier is dry:
    /// full coverage, overlap allowed.
    Crossover,
    /// A two-level crawl's agent (FC2L-UDC): sites are assigned at run time by
    /// `polycrawl coordinator`; a link to another agent's site goes there as in
    /// exchange mode, a link to an unassigned site is parked until its site is
    /// assigned (see `super::exchange`).
    #[serde(rename = "two_level")]
    TwoLevel,
}

/// How a split crawl deals hosts to parts by hash (Cho and Garcia-Molina, section
/// 3; `crate::parts`). A URL-hash rule is not offered: it splits hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Partitioning {
    /// The hash of the host.
    #[default]
    Site,
    /// The hash of the host's registered domain.
    Hierarchical,
}

impl std::str::FromStr for Partitioning {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "site" => Ok(Self::Site),
            "hierarchical" => Ok(Self::Hierarchical),
            _ => Err(format!("{s:?}: expected site or hierarchical")),
        }
    }
}

impl std::str::FromStr for PartMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "exchange" => Ok(Self::Exchange),
            "firewall" => Ok(Self::Firewall),
            "crossover" | "cross-over" => Ok(Self::Crossover),
            "two-level" | "two_level" => Ok(Self::TwoLevel),
            _ => Err(format!(
                "{s:?}: expected exchange, firewall, crossover or two-level"
            )),
        }
    }
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            app: "bfs".into(),
            state_dir: "state/app".into(),
            repository_dir: "repository".into(),
            warc_max_bytes: 1_000_000_000,
            warc_max_age_secs: 3600,
            seeds_file: None,
            scope: ScopeKind::Site,
            requeue_file: None,
            allowed_domains: Vec::new(),
            allow_patterns: Vec::new(),
            max_url_len: DEFAULT_MAX_URL_LEN,
            max_depth: 64,
            conditional_requests: false,
            max_pages_per_host: 0,
            host_budget_base: 100,
            host_budget_per_linking_site: 100,
            host_budget_seed: 500,
            host_budget_max: 1_000_000,
            trusted_hosts: Vec::new(),
            trusted_hosts_file: None,
            max_redirect_hops: 5,
            max_repeated_segment: 3,
            calendar_pattern: r"/\d{4}/\d{1,2}/\d{1,2}(/|$)".into(),
            calendar_max_depth: 2,
            max_sequence_steps: 50,
            max_date_pages_per_host: 100,
            max_date_years_past: 10,
            max_date_years_ahead: 1,
            maze_min_pages: 100,
            session_confirmations: 2,
            deny_patterns: Vec::new(),
            allow_single_label_hosts: false,
            session_params: DEFAULT_SESSION_PARAMS.map(str::to_owned).to_vec(),
            unshuffle_k: 1000,
            urls_per_request_file: 2000,
            order: Order::BreadthFirst,
            importance_window: 1000,
            importance_pool_max: 200_000,
            request_priority: 50,
            seen_buffer_bytes: DEFAULT_BUFFER_BYTES,
            max_pages: 0,
            max_body_bytes: 8 << 20,
            sitemaps: true,
            crawl_log: true,
            obey_x_robots_tag: true,
            obey_meta_robots: true,
            batches_per_claim: 8,
            claim_interval_ms: 100,
            reader_threads: 0,
            scan_interval_ms: 1000,
            idle_check_ms: 1000,
            parts: 1,
            part: 0,
            part_mode: PartMode::Exchange,
            assignment_file: None,
            partitioning: Partitioning::Site,
            replicated_file: None,
            exchange_root: None,
            exchange_urls_per_file: 1000,
            exchange_max_age_ms: 1000,
            exchange_links: true,
            coverage_fix: true,
            site_max_depth: 32,
            site_max_pages: 100_000,
        }
    }
}

impl AppConfig {
    /// The validated application id.
    pub fn app_id(&self) -> Result<AppId, AppError> {
        AppId::new(self.app.clone()).map_err(|e| invalid("app", e.to_string()))
    }

    /// The reader threads to start: `reader_threads`, or for 0 the cores this
    /// process may run on, at most 8.
    pub fn readers(&self) -> usize {
        match self.reader_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            n => n,
        }
    }

    /// The request files' priority.
    pub fn priority(&self) -> Result<Priority, AppError> {
        Priority::new(self.request_priority).map_err(|e| invalid("request_priority", e.to_string()))
    }

    /// Canonicalization settings.
    pub fn canon(&self) -> CanonConfig {
        CanonConfig {
            max_len: self.max_url_len,
            allow_single_label_hosts: self.allow_single_label_hosts,
            session_params: self.session_params.clone(),
        }
    }

    /// How the repository is opened: WARC rotation from `warc_max_bytes` and
    /// `warc_max_age_secs`, file names prefixed with the application id.
    pub fn repository_options(&self) -> Result<storage::RepositoryOptions, AppError> {
        if self.warc_max_bytes == 0 {
            return Err(invalid("warc_max_bytes", "must be at least 1".into()));
        }
        Ok(storage::RepositoryOptions {
            rotation: storage::Rotation {
                max_bytes: self.warc_max_bytes,
                max_age_secs: self.warc_max_age_secs,
            },
            warc_prefix: self.app.clone(),
            ..storage::RepositoryOptions::default()
        })
    }

    /// The trap detectors' limits.
    pub fn trap_rules(&self) -> TrapRules {
        TrapRules {
            max_steps: self.max_sequence_steps,
            max_date_pages: self.max_date_pages_per_host,
            years_past: self.max_date_years_past,
            years_ahead: self.max_date_years_ahead,
            maze_min_pages: self.maze_min_pages,
            session_confirmations: self.session_confirmations,
        }
    }

    /// The host budget rule.
    pub fn budget_rule(&self) -> BudgetRule {
        BudgetRule {
            scoped: self.scope.is_scoped(),
            base: self.host_budget_base,
            seed_base: self.host_budget_seed,
            per_site: self.host_budget_per_linking_site,
            max: self.host_budget_max,
            cap: match (
                self.two_level(),
                self.max_pages_per_host,
                self.site_max_pages,
            ) {
                (true, 0, site) => site,
                (true, host, 0) => host,
                (true, host, site) => host.min(site),
                (false, host, _) => host,
            },
        }
    }

    /// Whether this is an agent of a two-level crawl (two-level mode, K > 1).
    pub fn two_level(&self) -> bool {
        self.part_mode == PartMode::TwoLevel && self.parts > 1
    }

    /// The deepest link followed: `max_depth`, and for a two-level agent (whose
    /// depths count from the site's entry) also `site_max_depth`.
    pub fn depth_limit(&self) -> u32 {
        if self.two_level() {
            self.max_depth.min(self.site_max_depth)
        } else {
            self.max_depth
        }
    }

    /// The ownership rule of a split crawl's parts: the assignment file (hosts
    /// it does not name by the hash) or the hash alone, of the host or, with
    /// `partitioning: hierarchical`, of its registered domain. Every part of one
    /// crawl, whatever its strategy, must build it here.
    pub fn ownership(&self) -> Result<Ownership, AppError> {
        let ownership = match &self.assignment_file {
            Some(path) => Ownership::load(path, self.parts),
            None => Ownership::hashed(self.parts),
        }
        .map_err(|e| AppError::Config {
            field: "assignment_file",
            reason: e.to_string(),
        })?;
        Ok(match self.partitioning {
            Partitioning::Site => ownership,
            Partitioning::Hierarchical => ownership.hierarchical(),
        })
    }

    /// For a split crawl (`parts > 1`), the stem of the parts' ids (`bfs` for
    /// `bfs-p2`); `None` for an unsplit one. Checks `part < parts` and the id.
    pub fn part_stem(&self) -> Result<Option<String>, AppError> {
        if self.exchange_max_age_ms > 3_600_000 {
            return Err(invalid(
                "exchange_max_age_ms",
                format!("{} ms is more than an hour", self.exchange_max_age_ms),
            ));
        }
        if self.parts == 0 || self.part >= self.parts {
            return Err(invalid(
                "part",
                format!(
                    "part {} of {}: need 0 <= part < parts",
                    self.part, self.parts
                ),
            ));
        }
        if self.parts == 1 {
            return Ok(None);
        }
        let suffix = format!("-p{}", self.part);
        match self.app.strip_suffix(&suffix) {
            Some(stem) if !stem.is_empty() => Ok(Some(stem.to_owned())),
            _ => Err(invalid(
                "app",
                format!(
                    "{:?}: the id of part {} of a split crawl must end in {suffix:?}",
                    self.app, self.part
                ),
            )),
        }
    }

    /// Seen-set settings.
    pub fn seen(&self) -> SeenConfig {
        SeenConfig {
            buffer_bytes: self.seen_buffer_bytes,
            ..SeenConfig::default()
        }
    }

    /// Checks every field; returns the compiled scope rules.
    pub fn scope(&self) -> Result<Scope, AppError> {
        self.app_id()?;
        self.priority()?;
        for (field, value) in [
            ("unshuffle_k", self.unshuffle_k),
            ("urls_per_request_file", self.urls_per_request_file),
            ("max_url_len", self.max_url_len),
            ("max_body_bytes", self.max_body_bytes),
            ("batches_per_claim", self.batches_per_claim),
            ("importance_pool_max", self.importance_pool_max),
            ("exchange_urls_per_file", self.exchange_urls_per_file),
        ] {
            if value == 0 {
                return Err(invalid(field, "must be at least 1".into()));
            }
        }
        if self.importance_window == 0 {
            return Err(invalid(
                "importance_window",
                "must be at least 1 (0 would never request a URL)".into(),
            ));
        }
        if self.host_budget_base > 0 && self.host_budget_max == 0 {
            return Err(invalid(
                "host_budget_max",
                "0 would cut every URL (host_budget_base: 0 turns budgets off)".into(),
            ));
        }
        if !self.scope.is_scoped()
            && self.host_budget_base > 0
            && self.host_budget_max < self.host_budget_base
        {
            return Err(invalid(
                "host_budget_max",
                format!(
                    "{} is below host_budget_base ({})",
                    self.host_budget_max, self.host_budget_base
                ),
            ));
        }
        if let Some(bad) = self
            .trusted_hosts
            .iter()
            .find(|h| h.trim_matches('.').is_empty() || h.contains(['/', ':', ' ', '*']))
        {
            return Err(invalid(
                "trusted_hosts",
                format!("{bad:?} is not a host name"),
            ));
        }
        if let Some(bad) = self
            .session_params
            .iter()
            .find(|p| p.is_empty() || p.contains(['=', '&', ';', '/', '?', '#']))
        {
            return Err(invalid(
                "session_params",
                format!("{bad:?} is not a parameter name (empty, or holds = & ; / ? #)"),
            ));
        }
        if self.parts == 0 || self.part >= self.parts {
            return Err(invalid(
                "part",
                format!(
                    "part {} of {}: need 0 <= part < parts",
                    self.part, self.parts
                ),
            ));
        }
        self.seen()
            .validate()
            .map_err(|e| invalid("seen_buffer_bytes", e.to_string()))?;
        Scope::new(ScopeRules {
            kind: self.scope,
            allowed_domains: &self.allowed_domains,
            allow_patterns: &self.allow_patterns,
            deny_patterns: &self.deny_patterns,
            max_depth: self.depth_limit(),
            max_repeated_segment: self.max_repeated_segment,
            calendar_pattern: &self.calendar_pattern,
            calendar_max_depth: self.calendar_max_depth,
        })
    }
}

/// A setting that makes no sense, as the application's error.
pub fn invalid(field: &'static str, reason: String) -> AppError {
    AppError::Config { field, reason }
}

impl AppConfig {
    /// Which robots directives a page-batch reader obeys.
    pub fn robots_switches(&self) -> pages::links::RobotsSwitches {
        pages::links::RobotsSwitches {
            x_robots_tag: self.obey_x_robots_tag,
            meta_robots: self.obey_meta_robots,
        }
    }
}

impl From<&AppConfig> for LinkRules {
    fn from(config: &AppConfig) -> LinkRules {
        LinkRules {
            canon: config.canon(),
            max_body_bytes: config.max_body_bytes,
        }
    }
}

/// The lines of a list file (seeds, trusted hosts): trimmed, without blank lines
/// and `#` comments.
pub fn read_lines(path: &std::path::Path) -> Result<Vec<String>, AppError> {
    let text = std::fs::read_to_string(path).map_err(|source| AppError::File {
        path: path.to_owned(),
        source,
    })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}
