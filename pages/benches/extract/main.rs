//! `cargo bench --locked --workspace --bench extract`: the link-scanner shoot-out behind
//! the choice documented in `pages::extract`. (`--workspace` reuses the workspace's
//! release build; `-p pages` resolves features alone and compiles RocksDB again.)
//!
//! On one core, over the generated corpus (400 pages, 5-30 KB) and the real-page
//! corpus (`tests/corpus`, about 3,000 pages from a dozen generators) it prints, per scanner
//! (memchr = production, lol_html, regex, and the html5ever oracle itself): MB/s and
//! pages/s for scanning alone and for scanning plus URL resolution, and recall and
//! precision of the resolved link sets against the oracle, on the corpus and on the
//! hand-written adversarial snippets. Timings are the best of several rounds of the
//! thread's CPU time (getrusage), since the machine is shared. Set `EXTRACT_BENCH_SECS` to change the time per scanner, and
//! `EXTRACT_BENCH_MISSES=1` to list on stderr what each scanner gets wrong, and
//! `EXTRACT_BENCH_ONLY=memchr` (a name prefix) to run one scanner.

#[allow(dead_code)] // the benchmark uses part of the shared test support
#[path = "../../tests/support/mod.rs"]
mod support;

mod lol_scan;
mod regex_scan;

use std::collections::BTreeSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

use encoding_rs::{Encoding, UTF_8};
use nix::sys::resource::{UsageWho, getrusage};
use pages::extract::{self, Extractor, PageLinks, RawPage};
use url::Url;

use support::corpus::Page;
use support::snippets::{CASES, PAGE};

/// Decodes a raw attribute value as the production scanner does (page encoding,
/// then character references).
pub fn decode(value: &[u8], encoding: &'static Encoding, out: &mut String) {
    if encoding == UTF_8 || value.is_ascii() {
        extract::decode_attr_value(value, out);
    } else {
        let text = encoding.decode_without_bom_handling(value).0;
        extract::decode_attr_value(text.as_bytes(), out);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Scanner {
    Memchr,
    LolHtml,
    Regex,
    Oracle,
}

impl Scanner {
    fn name(self) -> &'static str {
        match self {
            Scanner::Memchr => "memchr (production)",
            Scanner::LolHtml => "lol_html 3",
            Scanner::Regex => "regex 1",
            Scanner::Oracle => "html5ever 0.40 (oracle)",
        }
    }
}

/// Per-scanner state reused across pages.
struct Runner {
    extractor: Extractor,
    raw: RawPage,
    buf: String,
}

impl Runner {
    /// Scans one page into `self.raw` (or the extractor's own `RawPage`).
    fn scan(&mut self, scanner: Scanner, html: &[u8]) -> &RawPage {
        if scanner == Scanner::Memchr {
            return self.extractor.scan(html, None);
        }
        self.raw.clear();
        let encoding = extract::page_encoding(html, None);
        self.raw.set_encoding(encoding);
        match scanner {
            Scanner::LolHtml => lol_scan::scan(html, &mut self.raw),
            Scanner::Regex => regex_scan::scan(html, &mut self.raw, &mut self.buf),
            Scanner::Oracle => {
                support::oracle::scan(&support::oracle::parse(html, encoding), &mut self.raw);
            }
            Scanner::Memchr => unreachable!(),
        }
        &self.raw
    }

    fn links(&mut self, scanner: Scanner, html: &[u8], url: &Url, out: &mut PageLinks) {
        self.scan(scanner, html).resolve(url, out);
    }
}

fn runner() -> Runner {
    Runner {
        extractor: Extractor::new(),
        raw: RawPage::default(),
        buf: String::new(),
    }
}

/// This thread's CPU time (user and system) so far.
fn thread_cpu() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_THREAD).expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    tv(usage.user_time()) + tv(usage.system_time())
}

/// Best-of-rounds throughput of `f` over `pages` on one core: (MB/s, pages/s) of
/// this thread's CPU time, so other work on the machine does not count against it.
/// The kernel accounts a running thread's CPU time at scheduler ticks, so a round
/// repeats the corpus until it lasts at least [`MIN_ROUND`], which keeps that
/// granularity under 2 % of a round.
fn measure(pages: &[Page], budget: Duration, mut f: impl FnMut(&Page)) -> (f64, f64) {
    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let warm = Instant::now();
    pages.iter().for_each(&mut f);
    let once = warm.elapsed().max(Duration::from_micros(1));
    let reps = (MIN_ROUND.as_secs_f64() / once.as_secs_f64())
        .ceil()
        .max(1.0) as usize;
    let start = Instant::now();
    let mut best = Duration::MAX;
    while start.elapsed() < budget || best == Duration::MAX {
        let round = thread_cpu();
        for _ in 0..reps {
            pages.iter().for_each(&mut f);
        }
        best = best.min(thread_cpu().saturating_sub(round));
    }
    let secs = best.max(Duration::from_micros(1)).as_secs_f64() / reps as f64;
    (bytes as f64 / secs / 1e6, pages.len() as f64 / secs)
}

/// The shortest timed round.
const MIN_ROUND: Duration = Duration::from_millis(250);

/// Recall and precision of `scanner`'s link sets against the oracle's, summed over pages.
fn accuracy(scanner: Scanner, pages: &[(Page, BTreeSet<String>)]) -> (f64, f64, usize) {
    let mut r = runner();
    let mut out = PageLinks::new();
    let (mut hit, mut found, mut truth, mut exact) = (0, 0, 0, 0);
    for (page, oracle) in pages {
        r.links(scanner, &page.html, &page.url, &mut out);
        let got: BTreeSet<String> = out.links.iter().map(|l| l.url.to_string()).collect();
        hit += got.intersection(oracle).count();
        found += got.len();
        truth += oracle.len();
        exact += usize::from(&got == oracle);
        if std::env::var_os("EXTRACT_BENCH_MISSES").is_some() && &got != oracle {
            let missing: Vec<_> = oracle.difference(&got).take(3).collect();
            let extra: Vec<_> = got.difference(oracle).take(3).collect();
            eprintln!(
                "{}: {}: missing {missing:?} extra {extra:?}",
                scanner.name(),
                page.url
            );
        }
    }
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    (ratio(hit, truth), ratio(hit, found), exact)
}

fn main() {
    let secs = std::env::var("EXTRACT_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let budget = Duration::from_secs_f64(secs);
    println!(
        "machine: {} ({} threads visible, 1 used)",
        test_support::proc::cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // `EXTRACT_BENCH_ONLY=template`: the template pass alone (A/B runs of it).
    if std::env::var("EXTRACT_BENCH_ONLY").as_deref() == Ok("template") {
        template_pass(budget);
        return;
    }
    println!(
        "timing: best of rounds over {secs} s per scanner and mode, one thread, in its CPU time"
    );
    let generated = support::corpus::pages(0xBE_4C4, 400);
    let real: Vec<Page> = support::real::sources()
        .into_iter()
        .flat_map(|source| source.pages)
        .map(|p| Page {
            encoding: extract::page_encoding(&p.html, None),
            url: p.url,
            html: p.html,
        })
        .collect();
    run("generated", generated, budget, true);
    run("real", real, budget, false);

    // The encoding prescan's share of the production scan.
    let pages = support::corpus::pages(0xBE_4C4, 400);
    let mut sink = 0usize;
    let (_, prescan_pps) = measure(&pages, budget / 2, |p| {
        sink += extract::declared_encoding(&p.html, None).map_or(0, |e| e.name().len());
    });
    black_box(sink);
    println!();
    println!(
        "encoding prescan (first 1 KB of each page): {:.2} us/page",
        1e6 / prescan_pps
    );

    template_pass(budget);
}

/// The maze and session-id detectors' template pass (links::template), which the
/// reader runs over every HTML page beside the scan (the page's own URL's tokens
/// only here; each link URL adds O(its bytes)): on the generated corpus, and on
/// the `.html` files of `EXTRACT_BENCH_PAGES` (a folder tree, e.g. the peer
/// benchmark's exported web) when it is set.
fn template_pass(budget: Duration) {
    let mut corpora = vec![("generated", support::corpus::pages(0xBE_4C4, 400))];
    if let Some(dir) = std::env::var_os("EXTRACT_BENCH_PAGES") {
        corpora.push(("EXTRACT_BENCH_PAGES", html_files(dir.as_ref(), 4096)));
    }
    for (label, pages) in corpora {
        let mut reader = pages::links::template::TemplateReader::new();
        let mut sink = 0u64;
        let (mbs, pps) = measure(&pages, budget / 2, |p| {
            sink ^= reader.template(&p.html, &p.url, &[]);
        });
        black_box(sink);
        println!(
            "template pass ({label}, {} pages): {mbs:.0} MB/s, {:.2} us/page",
            pages.len(),
            1e6 / pps
        );
    }
}

/// Up to `max` `.html` files under `dir` (sorted walk), as pages of
/// `http://bench.test/<path>`.
fn html_files(dir: &std::path::Path, max: usize) -> Vec<Page> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") && files.len() < max {
                files.push(path);
            }
        }
    }
    files
        .into_iter()
        .filter_map(|path| {
            let html = std::fs::read(&path).ok()?;
            let rel = path.strip_prefix(dir).ok()?.to_string_lossy().into_owned();
            Some(Page {
                url: Url::parse(&format!("http://bench.test/{rel}")).ok()?,
                encoding: extract::page_encoding(&html, None),
                html,
            })
        })
        .collect()
}

/// Times and scores every scanner on one corpus; `snippets` adds the
/// adversarial-snippet column.
fn run(label: &str, pages: Vec<Page>, budget: Duration, snippets: bool) {
    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let with_oracle: Vec<(Page, BTreeSet<String>)> = pages
        .into_iter()
        .map(|p| {
            let oracle = support::oracle::links(&p.html, &p.url, p.encoding);
            let set = oracle.links.iter().map(|l| l.url.to_string()).collect();
            (p, set)
        })
        .collect();
    let links: usize = with_oracle.iter().map(|(_, set)| set.len()).sum();
    println!();
    println!(
        "corpus {label}: {} pages, {:.1} MB, mean {:.1} KB, {} distinct links per page summed in the oracle's DOMs{}",
        with_oracle.len(),
        bytes as f64 / 1e6,
        bytes as f64 / with_oracle.len() as f64 / 1e3,
        links,
        if snippets {
            format!("; {} adversarial snippets", CASES.len())
        } else {
            String::new()
        }
    );
    println!(
        "{:<24} {:>9} {:>9} {:>13} {:>9} {:>8} {:>9} {:>10} {:>10}",
        "scanner",
        "scan MB/s",
        "pages/s",
        "+resolve MB/s",
        "pages/s",
        "recall",
        "precision",
        "exact pg",
        "snippets"
    );
    let just_pages: Vec<Page> = with_oracle.iter().map(|(p, _)| p.clone()).collect();
    let snippet_page = Url::parse(PAGE).expect("literal URL");

    let only = std::env::var("EXTRACT_BENCH_ONLY").ok();
    for scanner in [
        Scanner::Memchr,
        Scanner::LolHtml,
        Scanner::Regex,
        Scanner::Oracle,
    ] {
        if only
            .as_deref()
            .is_some_and(|o| !scanner.name().starts_with(o))
        {
            continue;
        }
        let mut r = runner();
        let (scan_mbs, scan_pps) = measure(&just_pages, budget, |p| {
            black_box(r.scan(scanner, &p.html).nofollow());
        });
        let mut out = PageLinks::new();
        let (full_mbs, full_pps) = measure(&just_pages, budget, |p| {
            r.links(scanner, &p.html, &p.url, &mut out);
            black_box(out.links.len());
        });
        let (recall, precision, exact) = accuracy(scanner, &with_oracle);
        let snippets_ok = CASES
            .iter()
            .filter(|case| {
                let mut out = PageLinks::new();
                r.links(scanner, case.html, &snippet_page, &mut out);
                let got: Vec<String> = out.links.iter().map(|l| l.url.to_string()).collect();
                let want: Vec<String> = case
                    .want
                    .iter()
                    .map(|w| {
                        if w.starts_with('/') {
                            format!("{}{w}", support::snippets::ORIGIN)
                        } else {
                            w.to_string()
                        }
                    })
                    .collect();
                let ok = got.iter().collect::<BTreeSet<_>>()
                    == want.iter().collect::<BTreeSet<_>>()
                    && out.nofollow == case.nofollow;
                if !ok && snippets && std::env::var_os("EXTRACT_BENCH_MISSES").is_some() {
                    eprintln!("{}: snippet {}: got {got:?}", scanner.name(), case.name);
                }
                ok
            })
            .count();
        let snippet_col = if snippets {
            format!("{snippets_ok:>5}/{:<3}", CASES.len())
        } else {
            "-".to_owned()
        };
        println!(
            "{:<24} {:>9.0} {:>9.0} {:>13.0} {:>9.0} {:>7.2}% {:>8.2}% {:>5}/{:<4} {:>10}",
            scanner.name(),
            scan_mbs,
            scan_pps,
            full_mbs,
            full_pps,
            recall * 100.0,
            precision * 100.0,
            exact,
            with_oracle.len(),
            snippet_col
        );
    }
}
