//! Shared by the benchmarks: realistic generated HTML.

#![allow(dead_code)]

/// A deterministic HTML page of about `size` bytes: boilerplate head and navigation,
/// then paragraphs of Zipf-distributed words with inline links, as real pages are.
pub fn html_page(seed: u64, size: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "of",
        "and",
        "to",
        "in",
        "a",
        "is",
        "that",
        "for",
        "it",
        "as",
        "was",
        "with",
        "be",
        "by",
        "on",
        "not",
        "he",
        "this",
        "are",
        "or",
        "his",
        "from",
        "at",
        "which",
        "but",
        "have",
        "an",
        "had",
        "they",
        "you",
        "were",
        "their",
        "one",
        "all",
        "we",
        "can",
        "her",
        "has",
        "there",
        "been",
        "if",
        "more",
        "when",
        "will",
        "would",
        "who",
        "so",
        "no",
        "crawler",
        "page",
        "web",
        "search",
        "index",
        "server",
        "network",
        "archive",
        "record",
        "history",
        "government",
        "university",
        "research",
        "system",
        "information",
        "development",
        "international",
        "department",
        "community",
        "performance",
        "distributed",
        "download",
        "politeness",
        "bandwidth",
        "document",
        "collection",
        "structure",
        "analysis",
        "population",
        "economic",
        "political",
        "National",
        "American",
        "European",
        "January",
        "September",
        "million",
        "percent",
        "company",
        "market",
        "service",
        "program",
        "project",
        "library",
        "software",
    ];
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut zipf = move || {
        // Roughly Zipfian: index ~ n^2 of a uniform draw.
        let u = (next() % 10_000) as f64 / 10_000.0;
        ((u * u * u) * WORDS.len() as f64) as usize
    };
    let mut s = String::with_capacity(size + 1024);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str(&format!(
        "<title>{} {} - Example Site {seed}</title>\n",
        WORDS[zipf()],
        WORDS[zipf()]
    ));
    s.push_str("<link rel=\"stylesheet\" href=\"/static/css/site.min.css?v=20261122\">\n");
    s.push_str(
        "<script async src=\"/static/js/analytics.js\"></script>\n</head>\n<body class=\"page\">\n",
    );
    s.push_str("<header id=\"top\"><nav class=\"main-nav\"><ul>\n");
    for (i, section) in [
        "Home", "News", "Sports", "Business", "Science", "About", "Contact",
    ]
    .iter()
    .enumerate()
    {
        s.push_str(&format!(
            "<li class=\"nav-item\"><a href=\"/{}/index.html\" title=\"{section}\">{section}</a></li>\n",
            section.to_lowercase().replace(' ', "-") + &i.to_string()
        ));
    }
    s.push_str("</ul></nav></header>\n<main><article>\n");
    let mut paragraph = 0;
    while s.len() < size - 400 {
        paragraph += 1;
        s.push_str(&format!(
            "<h2 id=\"s{paragraph}\">{} {}</h2>\n<p>",
            WORDS[zipf()],
            WORDS[zipf()]
        ));
        for w in 0..(40 + next() % 60) {
            if w > 0 {
                s.push(' ');
            }
            if next() % 14 == 0 {
                let target = next() % 100_000;
                s.push_str(&format!(
                    "<a href=\"https://www.example{}.com/wiki/{}_{target}\">{}</a>",
                    next() % 50,
                    WORDS[zipf()],
                    WORDS[zipf()]
                ));
            } else {
                s.push_str(WORDS[zipf()]);
            }
            if next() % 12 == 0 {
                s.push(if next() % 3 == 0 { ',' } else { '.' });
            }
        }
        s.push_str("</p>\n");
    }
    s.push_str("</article></main>\n<footer><p>&copy; 2026 Example Site. All rights reserved.");
    s.push_str(" <a href=\"/privacy\">Privacy</a> <a href=\"/terms\">Terms</a></p></footer>\n</body>\n</html>\n");
    s.into_bytes()
}
