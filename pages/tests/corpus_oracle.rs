//! Property test over the generated corpus: on every page the production scanner
//! finds exactly the links of a browser's DOM (html5ever), no more, no fewer.

#[allow(dead_code)] // each test binary uses part of the shared support
mod support;

use std::collections::BTreeSet;

use pages::extract::{Extractor, PageLinks};

#[test]
fn scanner_equals_oracle_on_every_generated_page() {
    let pages = support::corpus::pages(0x5EED, 300);
    let mut extractor = Extractor::new();
    let mut out = PageLinks::new();
    let (mut links, mut nofollow, mut latin1, mut with_base) = (0, 0, 0, 0);
    for (i, page) in pages.iter().enumerate() {
        extractor.extract(&page.html, &page.url, None, &mut out);
        let oracle = support::oracle::links(&page.html, &page.url, page.encoding);
        let got: BTreeSet<&str> = out.links.iter().map(|l| l.url.as_str()).collect();
        let want: BTreeSet<&str> = oracle.links.iter().map(|l| l.url.as_str()).collect();
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "page {i} ({}): missing {missing:?}, extra {extra:?}",
            page.url
        );
        assert_eq!(out.nofollow, oracle.nofollow, "page {i}: nofollow");
        assert_eq!(out.base, oracle.base, "page {i}: base");
        assert_eq!(
            extractor.raw().encoding(),
            page.encoding,
            "page {i}: encoding"
        );
        links += want.len();
        nofollow += usize::from(out.nofollow);
        latin1 += usize::from(page.encoding != encoding_rs::UTF_8);
        with_base += usize::from(extractor.raw().raw_base().is_some());
    }
    // The corpus exercises what it claims to.
    assert!(links > 20_000, "{links} links");
    assert!(
        nofollow > 3 && latin1 > 5 && with_base > 30,
        "{nofollow} {latin1} {with_base}"
    );
}
