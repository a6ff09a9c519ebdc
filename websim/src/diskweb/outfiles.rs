//! The files the disk web writes at start-up, in the generated web's formats
//! ([`crate::outfiles`]), so that the tools that read those read these:
//!
//! - `seeds.txt`: the stored crawl's seeds, the URLs stored at depth 0
//!   (`Polycrawl-Depth: 0`); in a repository whose records carry no depth, every
//!   host's root URL (`/` on the scheme and port of its first stored URL).
//! - `manifest.tsv`: `url  status  depth  parent`, every stored URL with the status
//!   it is served with, by depth then URL. The repository is taken to hold one
//!   complete crawl from its seeds, so what it stored is what a crawl from the same
//!   seeds fetches; the pages such a crawl stores are the rows with status 200.
//!   `depth` is the stored `Polycrawl-Depth` (`-` where a record has none);
//!   `parent` is always `-` (the repository does not record it). A URL the stored
//!   crawl requested but did not store (robots-excluded there, a failure, a cut)
//!   answers 404 here and is not a row.
//! - `hosts.tsv`: the generated web's columns: `host  domain  address  scheme
//!   port  pages  rank  robots  robots_status  crawl_delay  flags`, with `domain`
//!   `-`, `scheme`/`port` those of the host's root URL (https if it has any),
//!   `pages` its stored 200s, `rank` its index, `robots` `stored` or `none` with
//!   the status its robots.txt is served with, `crawl_delay` `-`, `flags` `https`
//!   or `-`.
//! - `never.txt` (empty) and `unreachable.tsv` (its header only): the disk web
//!   knows of no such URLs.
//!
//! Complexity: O(stored URLs · log) time (sorting), the files written once.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::index::{DiskWeb, split_url};
use crate::outfiles::OutPaths;
use crate::respond::Scheme;

/// Counts for the start-up summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSummary {
    /// Lines of `seeds.txt`.
    pub seeds: usize,
    /// Rows of `manifest.tsv`.
    pub fetched: usize,
    /// Rows with status 200.
    pub pages: usize,
}

/// Every host's root URL: `/` on the scheme and port of its first stored URL
/// (https first).
fn roots(web: &DiskWeb) -> Vec<String> {
    let mut first: BTreeMap<u32, (bool, u16, &str)> = BTreeMap::new();
    for (url, stored) in &web.urls {
        let Some(p) = split_url(url) else { continue };
        let key = (p.scheme == Scheme::Http, p.port, url.as_str());
        let slot = first.entry(stored.host).or_insert(key);
        *slot = (*slot).min(key);
    }
    first
        .into_iter()
        .map(|(h, (http, port, _))| {
            let scheme = if http { Scheme::Http } else { Scheme::Https };
            DiskWeb::request_url(scheme, &web.hosts[h as usize].name, port, "/")
        })
        .collect()
}

/// The seeds (see the module docs).
pub fn seeds(web: &DiskWeb) -> Vec<String> {
    let mut seeds: Vec<String> = web
        .urls
        .iter()
        .filter(|(_, s)| s.depth == Some(0))
        .map(|(u, _)| u.clone())
        .collect();
    if web.urls.values().all(|s| s.depth.is_none()) {
        seeds = roots(web);
    }
    seeds.sort();
    seeds
}

/// Writes seeds, manifest, hosts, never and unreachable.
pub fn write_all(web: &DiskWeb, paths: &OutPaths) -> io::Result<DiskSummary> {
    let seeds = seeds(web);
    let mut f = create(&paths.seeds)?;
    for s in &seeds {
        writeln!(f, "{s}")?;
    }
    f.flush()?;

    let mut rows: Vec<(Option<u32>, &str, u16)> = web
        .urls
        .iter()
        .map(|(u, s)| (s.depth, u.as_str(), s.status))
        .collect();
    rows.sort_unstable_by_key(|&(depth, url, _)| (depth.is_none(), depth, url));
    let mut f = create(&paths.manifest)?;
    writeln!(f, "#url\tstatus\tdepth\tparent")?;
    for (depth, url, status) in &rows {
        match depth {
            Some(d) => writeln!(f, "{url}\t{status}\t{d}\t-")?,
            None => writeln!(f, "{url}\t{status}\t-\t-")?,
        }
    }
    f.flush()?;

    let mut pages = vec![0u32; web.hosts.len()];
    for s in web.urls.values().filter(|s| s.status == 200) {
        pages[s.host as usize] += 1;
    }
    let roots = roots(web);
    let mut f = create(&paths.hosts)?;
    writeln!(
        f,
        "#host\tdomain\taddress\tscheme\tport\tpages\trank\trobots\trobots_status\tcrawl_delay\tflags"
    )?;
    for (k, host) in web.hosts.iter().enumerate() {
        // `roots` has one URL per host, in host order.
        let root = roots.get(k).and_then(|r| split_url(r));
        let (scheme, port) = root.map_or(("http", 80), |p| (p.scheme.as_str(), p.port));
        let robots_url = DiskWeb::request_url(
            root.map_or(Scheme::Http, |p| p.scheme),
            &host.name,
            port,
            "/robots.txt",
        );
        let (robots, robots_status) = match web.urls.get(&robots_url) {
            Some(s) => ("stored", s.status),
            None => ("none", 404),
        };
        let flags = if host.https { "https" } else { "-" };
        writeln!(
            f,
            "{}\t-\t{}\t{scheme}\t{port}\t{}\t{k}\t{robots}\t{robots_status}\t-\t{flags}",
            host.name, host.addr, pages[k]
        )?;
    }
    f.flush()?;

    create(&paths.never)?.flush()?;
    let mut f = create(&paths.unreachable)?;
    writeln!(f, "#url\toutcome\tdepth\tparent")?;
    f.flush()?;
    Ok(DiskSummary {
        seeds: seeds.len(),
        fetched: rows.len(),
        pages: rows.iter().filter(|r| r.2 == 200).count(),
    })
}

fn create(path: &Path) -> io::Result<BufWriter<File>> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}
