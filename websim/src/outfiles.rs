//! The files websim writes at start-up (before it prints its ready line), all UTF-8
//! text, TSV files with one `#`-prefixed header line:
//!
//! - `seeds.txt`: one URL per line, the home pages of the seed hosts.
//! - `manifest.tsv`: `url  status  depth  parent`: every URL a correct crawl fetches,
//!   breadth-first, with the status websim gives (200, 301, 302, 404). The exact URL
//!   set a correct crawl must fetch as pages is `awk -F'\t' '$2==200{print $1}'`.
//!   `parent` is the URL it was first found on (`-` for seeds). robots.txt fetches are
//!   not rows: `hosts.tsv` says what each host's robots.txt answers.
//! - `unreachable.tsv`: `url  outcome  depth  parent`: every URL a correct crawl
//!   discovers and requests but gets no page for, with the outcome (`dns_failure`,
//!   `connect_failure`, `too_many_failures` for hosts whose robots.txt is 5xx and
//!   for stuck hosts that never answer,
//!   `robots_excluded`), in the spool's outcome vocabulary.
//! - `never.txt`: one URL per line, sorted: URLs a correct crawl must never request
//!   from websim (robots-excluded URLs it discovers, trap links, stylesheets and
//!   images, links only found on nofollow pages).
//! - `hosts.tsv`: `host  domain  address  scheme  port  pages  rank  robots
//!   robots_status  crawl_delay  flags`, one line per host including the
//!   misbehaving one; `flags` is a comma list of `https slow gzip chunked dead loops
//!   seed misbehave trap sessions calendar redirects shared` (`shared`: the address
//!   serves other hosts too; `trap` and its kind: a trap host of `--traps`, whose
//!   only manifest rows are its real pages: any other request to it is a trap URL;
//!   `sitemaps`: the sitemap host of `--sitemaps`; `stuck` and its kind, `refused`
//!   `silent` `robots_silent` `robots_500` `robots_503`: a stuck host of
//!   `--stuck-hosts`, whose `robots_status` is what its robots.txt answers, 0 for
//!   no answer) or `-`.
//! - `changes.tsv`: `url  change`, one line per `manifest.tsv` row in its order:
//!   what a recrawl of that URL at the served revision gets, sending the validators
//!   of revision 0 (`changed`, `not_modified`, `unchanged`, `fixed`; see
//!   [`super::revision`]). The header line names the revision and the change share.
//! - `parties.tsv` (only with `--components`): `seed  url  status  depth`: for each
//!   seed, every URL of its party (the walk from the seed over links to its own
//!   origin only, as a seed-by-seed crawl makes it): the status websim gives, or
//!   the outcome for a URL the party discovers but gets no page for, or
//!   `external` (depth `-`) for a followable link of its pages to another origin
//!   (a candidate seed). The exact URL set a seed-by-seed crawl fetches is the
//!   union of the rows with a numeric status.
//! - `orphans.tsv` (only with `--orphans`): `url  depth  parent`: the rows of
//!   `manifest.tsv` with status 200 that a two-level crawl without the coverage fix
//!   does not fetch (every link to another site reduced to that site's root), in
//!   manifest order: the pages only links from other sites reach (see
//!   [`super::orphans`]).
//! - `robots-tags.tsv` (only with `--robots-tags`): `url  tag  nofollow  noarchive
//!   hidden`:
//!   the rows of `manifest.tsv` with status 200 whose page carries robots
//!   directives ([`super::robots_tags`]; and websim's own nofollow pages, tag
//!   `meta_nofollow`, `+` another tag a page has too), in manifest order, with whether a crawler
//!   that obeys them follows none of the page's links (`nofollow` 1: its
//!   followable links are in the manifest only if another page leads there) and
//!   keeps its body out of its archive (`noarchive` 1), and for a nofollow page the
//!   `/hidden/` page only it links (in `never.txt`), else `-`.
//! - `crawl.ron` (written last, once the name server listens, and removed at
//!   start-up so a stale one never names another run's port): the settings a
//!   `polycrawl crawl` of this web needs and a crawl of the open web must not have
//!   (websim's name server and CA, loopback addresses allowed) and a short
//!   politeness interval; the README's "Crawl your own sites" uses it to practise
//!   on (see [`write_crawl_config`]).
//!
//! Complexity: O(URLs in the manifest); the files are written once.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::manifest::{WebGraph, bfs};
use super::model::{Target, Web};
use super::revision::{Revision, write_changes};
use super::robots::{AGENT, RobotsResponse, Rules};

/// Where each output file goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutPaths {
    /// The output directory.
    pub dir: PathBuf,
    /// `seeds.txt`.
    pub seeds: PathBuf,
    /// `manifest.tsv`.
    pub manifest: PathBuf,
    /// `never.txt`.
    pub never: PathBuf,
    /// `unreachable.tsv`.
    pub unreachable: PathBuf,
    /// `hosts.tsv`.
    pub hosts: PathBuf,
    /// `changes.tsv`.
    pub changes: PathBuf,
    /// `parties.tsv` (with `--components` only).
    pub parties: PathBuf,
    /// `orphans.tsv` (with `--orphans` only).
    pub orphans: PathBuf,
    /// `robots-tags.tsv` (with `--robots-tags` only).
    pub robots_tags: PathBuf,
    /// The request log (`requests.tsv`).
    pub log: PathBuf,
    /// The CA certificate (`ca.pem`).
    pub ca: PathBuf,
    /// The config of a crawl of this web (`crawl.ron`).
    pub crawl_config: PathBuf,
}

impl OutPaths {
    /// The default names inside `dir`.
    pub fn in_dir(dir: &Path) -> OutPaths {
        OutPaths {
            dir: dir.to_path_buf(),
            seeds: dir.join("seeds.txt"),
            manifest: dir.join("manifest.tsv"),
            never: dir.join("never.txt"),
            unreachable: dir.join("unreachable.tsv"),
            hosts: dir.join("hosts.tsv"),
            changes: dir.join("changes.tsv"),
            parties: dir.join("parties.tsv"),
            orphans: dir.join("orphans.tsv"),
            robots_tags: dir.join("robots-tags.tsv"),
            log: dir.join("requests.tsv"),
            ca: dir.join("ca.pem"),
            crawl_config: dir.join("crawl.ron"),
        }
    }
}

/// Writes `paths.crawl_config` (through a temporary file and a rename, so the file
/// is whole when it shows): a `polycrawl crawl` config for this web, whose name
/// server listens on `dns` and whose CA is `paths.ca`. Only what this web needs
/// and a crawl of the open web must not have, plus politeness for a local web
/// (every other field keeps its default, so a crawl of it is a crawl as a user
/// runs one): the admin page on a port of the kernel's choosing (the crawl prints
/// it), since several crawls of several websims may run at once.
pub fn write_crawl_config(paths: &OutPaths, dns: std::net::SocketAddr) -> io::Result<()> {
    let text = format!(
        r#"// A crawl of the websim serving {dir}:
//   polycrawl crawl --seeds {seeds} --config {this} --out OUT
// Its names resolve only at websim's own name server, its https hosts use its own
// CA, and its addresses are loopback (127.x.y.z), which a crawl of the web refuses.
// Politeness is short (a local web); every other field keeps its default
// (`polycrawl config --default` prints them all).
(
    resolver: (name_servers: ["{dns}"]),
    downloader: (allow_private: true, extra_ca_file: Some({ca:?})),
    manager: (
        admin_http: "127.0.0.1:0",
        frontier: (
            allow_private_addresses: true,
            interval_ms: 100,
            min_interval_ms: 100,
            ip_min_interval_ms: 50,
        ),
    ),
)
"#,
        dir = paths.dir.display(),
        seeds = paths.seeds.display(),
        this = paths.crawl_config.display(),
        ca = paths.ca.display().to_string(),
    );
    let tmp = paths.crawl_config.with_extension("ron.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &paths.crawl_config)
}

/// Counts for the start-up summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Rows in `manifest.tsv`.
    pub fetched: usize,
    /// Rows with status 200.
    pub pages: usize,
    /// Rows in `unreachable.tsv`.
    pub outcomes: usize,
    /// Lines in `never.txt`.
    pub never: usize,
}

/// Runs the manifest walk and writes every file but the log and the CA.
pub fn write_all(web: &Web, revision: &Revision, paths: &OutPaths) -> io::Result<Summary> {
    let graph = WebGraph::new(web);
    let seeds = graph.seeds();
    let crawl = bfs(&graph, &seeds);
    let mut urls: HashMap<Target, String> = HashMap::new();
    let mut url = |t: &Target| -> String { urls.entry(*t).or_insert_with(|| web.url(t)).clone() };

    let mut f = create(&paths.seeds)?;
    for s in &seeds {
        writeln!(f, "{}", url(s))?;
    }
    f.flush()?;

    let mut f = create(&paths.manifest)?;
    writeln!(f, "#url\tstatus\tdepth\tparent")?;
    for row in &crawl.fetched {
        let parent = row.parent.as_ref().map_or_else(|| "-".to_owned(), &mut url);
        writeln!(
            f,
            "{}\t{}\t{}\t{}",
            url(&row.node),
            row.status,
            row.depth,
            parent
        )?;
    }
    f.flush()?;

    let mut f = create(&paths.changes)?;
    write_changes(
        web,
        revision,
        crawl.fetched.iter().map(|row| (&row.node, url(&row.node))),
        &mut f,
    )?;
    f.flush()?;

    let mut f = create(&paths.unreachable)?;
    writeln!(f, "#url\toutcome\tdepth\tparent")?;
    for o in &crawl.outcomes {
        let parent = o.parent.as_ref().map_or_else(|| "-".to_owned(), &mut url);
        writeln!(f, "{}\t{}\t{}\t{}", url(&o.node), o.reason, o.depth, parent)?;
    }
    f.flush()?;

    let mut never: Vec<String> = crawl.never.iter().map(&mut url).collect();
    never.sort();
    let mut f = create(&paths.never)?;
    for u in &never {
        writeln!(f, "{u}")?;
    }
    f.flush()?;

    write_hosts(web, &paths.hosts)?;
    if web.params.components > 0 {
        let mut f = create(&paths.parties)?;
        writeln!(f, "#seed\turl\tstatus\tdepth")?;
        for seed in &seeds {
            let (party, external) = graph.party(*seed);
            let seed_url = url(seed);
            for row in &party.fetched {
                let depth = row.depth;
                writeln!(f, "{seed_url}\t{}\t{}\t{depth}", url(&row.node), row.status)?;
            }
            for o in &party.outcomes {
                let depth = o.depth;
                writeln!(f, "{seed_url}\t{}\t{}\t{depth}", url(&o.node), o.reason)?;
            }
            for t in &external {
                writeln!(f, "{seed_url}\t{}\texternal\t-", url(t))?;
            }
        }
        f.flush()?;
    }
    if web.params.robots_tags && !web.params.plain {
        write_robots_tags(web, &crawl.fetched, &mut url, &paths.robots_tags)?;
    }
    if web.orphans() > 0 {
        let no_fix = super::orphans::no_fix_walk(&graph, &seeds);
        let reached: HashSet<Target> = no_fix.fetched.iter().map(|r| r.node).collect();
        let mut f = create(&paths.orphans)?;
        writeln!(f, "#url\tdepth\tparent")?;
        for row in &crawl.fetched {
            if row.status == 200 && !reached.contains(&row.node) {
                let parent = row.parent.as_ref().map_or_else(|| "-".to_owned(), &mut url);
                writeln!(f, "{}\t{}\t{}", url(&row.node), row.depth, parent)?;
            }
        }
        f.flush()?;
    }
    Ok(Summary {
        fetched: crawl.fetched.len(),
        pages: crawl.fetched.iter().filter(|r| r.status == 200).count(),
        outcomes: crawl.outcomes.len(),
        never: never.len(),
    })
}

/// Writes `robots-tags.tsv` (see the module docs) for the manifest rows `fetched`.
fn write_robots_tags(
    web: &Web,
    fetched: &[super::manifest::Fetched<Target>],
    url: &mut impl FnMut(&Target) -> String,
    path: &Path,
) -> io::Result<()> {
    let mut f = create(path)?;
    writeln!(f, "#url\ttag\tnofollow\tnoarchive\thidden")?;
    for row in fetched {
        let Target::Page { host, page } = row.node else {
            continue;
        };
        if row.status != 200 {
            continue;
        }
        let tag = web.robots_tag(host, page);
        let meta_nofollow = web.page_links(host, page).nofollow;
        let name = match (meta_nofollow, tag) {
            (false, None) => continue,
            (false, Some(t)) => t.name.to_owned(),
            (true, None) => "meta_nofollow".to_owned(),
            (true, Some(t)) => format!("meta_nofollow+{}", t.name),
        };
        let nofollow = meta_nofollow || tag.is_some_and(|t| t.nofollow);
        let noarchive = tag.is_some_and(|t| t.noarchive);
        let hidden = if nofollow {
            url(&Target::Hidden { host, key: page })
        } else {
            "-".to_owned()
        };
        writeln!(
            f,
            "{}\t{name}\t{}\t{}\t{hidden}",
            url(&row.node),
            u8::from(nofollow),
            u8::from(noarchive)
        )?;
    }
    f.flush()?;
    Ok(())
}

fn create(path: &Path) -> io::Result<BufWriter<File>> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn write_hosts(web: &Web, path: &Path) -> io::Result<()> {
    let mut per_addr = vec![0u32; web.addrs.len()];
    for h in &web.hosts {
        per_addr[h.addr_index as usize] += 1;
    }
    let mut f = create(path)?;
    writeln!(
        f,
        "#host\tdomain\taddress\tscheme\tport\tpages\trank\trobots\trobots_status\tcrawl_delay\tflags"
    )?;
    for (i, h) in web.hosts.iter().enumerate() {
        let (scheme, port) = web.scheme_port(i as u32);
        let status = match (h.stuck, h.robots.response()) {
            (Some(kind), _) => kind.robots_status(),
            (None, RobotsResponse::Status(s)) => s,
            (None, RobotsResponse::Body(_)) => 200,
            (None, RobotsResponse::Redirect(_)) => 301,
        };
        let delay = Rules::parse(h.robots.rules_text(), AGENT)
            .crawl_delay
            .map_or_else(|| "-".to_owned(), |d| d.to_string());
        let mut flags: Vec<&str> = Vec::new();
        for (on, name) in [
            (h.https, "https"),
            (h.slow, "slow"),
            (h.gzip, "gzip"),
            (h.chunked, "chunked"),
            (h.dead, "dead"),
            (h.loops, "loops"),
            (h.seed, "seed"),
            (h.misbehave, "misbehave"),
            (h.trap.is_some(), "trap"),
            (h.trap.is_some(), h.trap.map_or("", |k| k.flag())),
            (h.sitemaps, "sitemaps"),
            (h.stuck.is_some(), "stuck"),
            (h.stuck.is_some(), h.stuck.map_or("", |k| k.flag())),
            (per_addr[h.addr_index as usize] > 1, "shared"),
        ] {
            if on {
                flags.push(name);
            }
        }
        let flags = if flags.is_empty() {
            "-".to_owned()
        } else {
            flags.join(",")
        };
        writeln!(
            f,
            "{}\t{}\t{}\t{scheme}\t{port}\t{}\t{}\t{}\t{status}\t{delay}\t{flags}",
            h.name,
            h.domain,
            h.addr,
            h.pages,
            h.rank,
            h.robots.name()
        )?;
    }
    f.flush()
}
