//! The oracle test on real pages: on every page of the real-page corpus (a dozen
//! generators, `tests/corpus/README.md`), the production scanner's links against
//! those of html5ever's DOM, with links defined alike (`RawPage`'s policy). Prints
//! micro recall and precision per source and fails below 0.995 overall.
//!
//! `REAL_PAGES_MISSES=1` lists on stderr what the scanner gets wrong, per page.

#[allow(dead_code)] // each test binary uses part of the shared support
mod support;

use std::collections::BTreeSet;

use pages::extract::{Extractor, PageLinks, page_encoding};

/// The floor for micro recall and precision over the whole corpus.
const FLOOR: f64 = 0.995;

#[derive(Default)]
struct Tally {
    pages: usize,
    bytes: usize,
    truth: usize,
    found: usize,
    hit: usize,
    exact: usize,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.pages += other.pages;
        self.bytes += other.bytes;
        self.truth += other.truth;
        self.found += other.found;
        self.hit += other.hit;
        self.exact += other.exact;
    }
    fn recall(&self) -> f64 {
        if self.truth == 0 {
            1.0
        } else {
            self.hit as f64 / self.truth as f64
        }
    }
    fn precision(&self) -> f64 {
        if self.found == 0 {
            1.0
        } else {
            self.hit as f64 / self.found as f64
        }
    }
    fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {:.1} | {} | {:.4} | {:.4} | {}/{} |",
            self.pages,
            self.bytes as f64 / 1e6,
            self.truth,
            self.recall(),
            self.precision(),
            self.exact,
            self.pages
        )
    }
}

#[test]
fn scanner_matches_html5ever_on_real_pages() {
    let sources = support::real::sources();
    assert!(sources.len() >= 10, "only {} sources", sources.len());
    let show = std::env::var_os("REAL_PAGES_MISSES").is_some();
    let mut extractor = Extractor::new();
    let mut out = PageLinks::new();
    let mut total = Tally::default();
    let mut table = vec![
        "| source | pages | MB | links (oracle) | recall | precision | exact pages |".to_owned(),
        "|---|---:|---:|---:|---:|---:|---:|".to_owned(),
    ];
    for source in &sources {
        let mut tally = Tally::default();
        for page in &source.pages {
            extractor.extract(&page.html, &page.url, None, &mut out);
            let oracle =
                support::oracle::links(&page.html, &page.url, page_encoding(&page.html, None));
            let got: BTreeSet<&str> = out.links.iter().map(|l| l.url.as_str()).collect();
            let want: BTreeSet<&str> = oracle.links.iter().map(|l| l.url.as_str()).collect();
            let hit = got.intersection(&want).count();
            tally.pages += 1;
            tally.bytes += page.html.len();
            tally.truth += want.len();
            tally.found += got.len();
            tally.hit += hit;
            tally.exact += usize::from(got == want && out.nofollow == oracle.nofollow);
            if show && got != want {
                let missing: Vec<_> = want.difference(&got).take(5).collect();
                let extra: Vec<_> = got.difference(&want).take(5).collect();
                eprintln!("{}: missing {missing:?} extra {extra:?}", page.url);
            }
        }
        table.push(tally.row(&source.name));
        total.add(&tally);
    }
    table.push(total.row("**all (micro)**"));
    println!("{}", table.join("\n"));
    assert!(total.pages > 2_500, "only {} pages", total.pages);
    assert!(
        total.recall() >= FLOOR && total.precision() >= FLOOR,
        "micro recall {:.4}, precision {:.4}: below {FLOOR}\n{}",
        total.recall(),
        total.precision(),
        table.join("\n")
    );
}
