//! `polycrawl-bench roundtrip`: how long a crawl took from a page's last byte to its
//! links on the wire (the pipeline's round trip: downloader batch, application
//! merge, request file, manager load and dispatch), read from a finished crawl's
//! repository and websim's request log. Any crawler that stores WARC can be judged.
//!
//! For every link `L` of every stored page (read with the application's own batch
//! reader, so extracted and canonicalized exactly as the crawl did), its *discovery* is the earliest end (websim's response
//! end stamp) of a page linking to it, and its *delay* the start of its first
//! request minus that. A delay also holds the time `L` waited behind its own
//! host's other URLs (one request at a time per host), DNS and robots.txt; so the
//! pipeline's own round trip is the delay of the links whose origin was idle and
//! known at discovery: an origin that had requests before, none in flight at the
//! discovery, and none between the discovery and `L`'s request. Those are printed
//! apart (`idle_*`), with the number of such links.
//!
//! Cost: O(stored bytes) to inflate and extract, O(URLs) memory (first starts),
//! O(requests log requests) to sort the log. This module reads files only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use pages::canon::CanonConfig;
use pages::links::batch::BatchReader;
use url::Url;

use crate::check::read_log;
use polycrawl::orchestrate::repo_scan::collect_warcs;

/// `polycrawl-bench roundtrip` arguments.
#[derive(Debug, clap::Args)]
pub struct RoundtripArgs {
    /// websim's output directory (its request log, requests.tsv).
    #[arg(long, value_name = "DIR")]
    pub websim: PathBuf,
    /// The crawl's WARC files: a repository (its `warc/` folder is read) or any
    /// folder of `.warc.gz` files.
    #[arg(long, value_name = "DIR")]
    pub warcs: PathBuf,
}

/// Delay figures, milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delays {
    /// Links whose request came after their discovery.
    pub links: usize,
    /// Median, 90th percentile and largest delay over all of them.
    pub all: [f64; 3],
    /// Links whose origin was idle and known at discovery.
    pub idle_links: usize,
    /// Median, 90th percentile and largest delay over those.
    pub idle: [f64; 3],
}

/// Per origin: request spans `(start, end)` sorted by start.
type Spans = HashMap<String, Vec<(u64, u64)>>;

/// Reads the log and the WARC files; computes the delays.
pub fn measure(websim: &Path, warcs: &Path) -> anyhow::Result<Delays> {
    let log = read_log(&websim.join("requests.tsv"))?;
    let mut first: HashMap<String, (u64, u64)> = HashMap::new();
    let mut spans: Spans = HashMap::new();
    for r in log.iter().filter(|r| !r.is_robots()) {
        let e = first.entry(r.url()).or_insert((r.start_us, r.end_us));
        if r.start_us < e.0 {
            *e = (r.start_us, r.end_us);
        }
        spans
            .entry(r.origin.clone())
            .or_default()
            .push((r.start_us, r.end_us));
    }
    for s in spans.values_mut() {
        s.sort_unstable();
    }
    // Link -> earliest discovery (end of the first page linking to it).
    let mut discovered: HashMap<String, u64> = HashMap::new();
    let mut files = Vec::new();
    let dir = if warcs.join("warc").is_dir() {
        warcs.join("warc")
    } else {
        warcs.to_owned()
    };
    collect_warcs(&dir, &mut files)?;
    files.sort();
    // The application's own reader: its checks, extraction and canonicalization.
    let mut reader = BatchReader::new(CanonConfig::default(), 8 << 20);
    for path in &files {
        reader
            .read_checked(path, |page| {
                let Some(&(_, page_end)) = first.get(&page.url) else {
                    return;
                };
                for link in page.redirect.iter().chain(&page.links) {
                    let d = discovered.entry(link.to_string()).or_insert(page_end);
                    *d = (*d).min(page_end);
                }
            })
            .with_context(|| format!("reading {}", path.display()))?;
    }
    let mut all = Vec::new();
    let mut idle = Vec::new();
    for (link, found_us) in &discovered {
        let Some(&(start, _)) = first.get(link) else {
            continue;
        };
        if start < *found_us {
            continue;
        }
        let delay_ms = (start - found_us) as f64 / 1000.0;
        all.push(delay_ms);
        let origin = Url::parse(link)
            .ok()
            .map(|u| u.origin().ascii_serialization());
        if origin.is_some_and(|o| was_idle(&spans, &o, *found_us, start)) {
            idle.push(delay_ms);
        }
    }
    Ok(Delays {
        links: all.len(),
        all: quantiles(&mut all),
        idle_links: idle.len(),
        idle: quantiles(&mut idle),
    })
}

/// The origin had a request before `found`, none in flight at `found`, and none
/// starting between `found` and `start`.
fn was_idle(spans: &Spans, origin: &str, found: u64, start: u64) -> bool {
    let Some(s) = spans.get(origin) else {
        return false;
    };
    // The last request starting before `start`.
    let i = s.partition_point(|&(a, _)| a < start);
    let Some(&(prev_start, prev_end)) = i.checked_sub(1).map(|j| &s[j]) else {
        return false;
    };
    prev_start < found && prev_end <= found
}

/// Median, 90th percentile and largest value (sorts `v`); zeros when empty.
fn quantiles(v: &mut [f64]) -> [f64; 3] {
    if v.is_empty() {
        return [0.0; 3];
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    [at(0.5), at(0.9), v[v.len() - 1]]
}

/// `polycrawl-bench roundtrip`: prints one `roundtrip key=value ...` line.
pub fn run(args: &RoundtripArgs) -> anyhow::Result<()> {
    let d = measure(&args.websim, &args.warcs)?;
    println!(
        "roundtrip links={} median_ms={:.1} p90_ms={:.1} max_ms={:.1} idle_links={} \
         idle_median_ms={:.1} idle_p90_ms={:.1} idle_max_ms={:.1}",
        d.links, d.all[0], d.all[1], d.all[2], d.idle_links, d.idle[0], d.idle[1], d.idle[2]
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_means_known_free_and_untouched_until_the_request() {
        let mut spans: Spans = HashMap::new();
        spans.insert("http://a.test".into(), vec![(0, 10), (100, 110)]);
        // Found at 50, requested at 100: the previous request ended at 10.
        assert!(was_idle(&spans, "http://a.test", 50, 100));
        // Found at 5, while the first request was in flight.
        assert!(!was_idle(&spans, "http://a.test", 5, 100));
        // Requested at 200: the request at 100 came in between.
        assert!(!was_idle(&spans, "http://a.test", 50, 200));
        // An origin never contacted before (DNS, robots.txt first).
        assert!(!was_idle(&spans, "http://b.test", 50, 100));
        let mut v = vec![3.0, 1.0, 2.0, 10.0, 4.0];
        assert_eq!(quantiles(&mut v), [3.0, 10.0, 10.0]);
        assert_eq!(quantiles(&mut []), [0.0; 3]);
    }
}
