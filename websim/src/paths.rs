//! Page paths: the shape of page `i`'s path on a host, its raw and canonical
//! (percent-encoded) spellings, and the way back from a requested path to `i`.
//!
//! Shapes (drawn per page from the seed; page 0 is always `/`):
//!
//! | share | shape | example |
//! |---|---|---|
//! | 48 % | directory | `/d3/p42.html` (dirs `d0`..: 2 + pages/30, at most 24) |
//! | 10 % | flat | `/p42.html` |
//! | 7 % | query | `/item?id=42&cat=3` |
//! | 5 % | directory index | `/docs/42/` |
//! | 3 % | non-ASCII | `/café/p42.html`, canonical `/caf%C3%A9/p42.html` |
//! | 8 % | robots bait | `/private/p42.html` |
//! | 5 % | robots bait | `/private/public/p42.html` |
//! | 5 % | robots bait | `/x/p42.php` |
//! | 2 % | robots bait | `/x/p42.php?v=2` |
//! | 3.5 % | robots bait | `/list?sort=name&page=42` |
//! | 3.5 % | robots bait | `/search/p42.html` |
//!
//! Every shape carries the page number, so [`parse_page_index`] finds `i` in O(1)
//! and the caller checks the path by regenerating it: websim answers only the exact
//! canonical spelling (an over- or under-encoded request is a 404). Nothing here
//! stores anything; all functions are O(path length).

use std::fmt::Write as _;

use super::rng::{Rng, TAG_PATH};

/// Non-ASCII directory names: (raw UTF-8 as written in hrefs, canonical encoding).
pub const NON_ASCII_DIRS: [(&str, &str); 4] = [
    ("café", "caf%C3%A9"),
    ("straße", "stra%C3%9Fe"),
    ("日本", "%E6%97%A5%E6%9C%AC"),
    ("zürich", "z%C3%BCrich"),
];

/// The shape of a page's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `/`
    Home,
    /// `/d{n}/p{i}.html`
    Dir(u32),
    /// `/p{i}.html`
    Flat,
    /// `/item?id={i}&cat={c}`
    Item(u32),
    /// `/docs/{i}/`
    Docs,
    /// `/{non-ascii}/p{i}.html`
    NonAscii(usize),
    /// `/private/p{i}.html`
    Private,
    /// `/private/public/p{i}.html`
    PrivatePublic,
    /// `/x/p{i}.php`
    Php,
    /// `/x/p{i}.php?v=2`
    PhpQuery,
    /// `/list?sort=name&page={i}`
    Sort,
    /// `/search/p{i}.html`
    Search,
}

/// The shape of page `page` of host `host` (which has `pages` pages).
pub fn shape(seed: u64, host: u32, page: u32, pages: u32) -> Shape {
    if page == 0 {
        return Shape::Home;
    }
    let mut r = Rng::for_parts(&[seed, TAG_PATH, u64::from(host), u64::from(page)]);
    let dirs = 2 + (pages / 30).min(22);
    match r.below(1000) {
        0..480 => Shape::Dir(r.below(u64::from(dirs)) as u32),
        480..580 => Shape::Flat,
        580..650 => Shape::Item(1 + r.below(9) as u32),
        650..700 => Shape::Docs,
        700..730 => Shape::NonAscii(r.below(NON_ASCII_DIRS.len() as u64) as usize),
        730..810 => Shape::Private,
        810..860 => Shape::PrivatePublic,
        860..910 => Shape::Php,
        910..930 => Shape::PhpQuery,
        930..965 => Shape::Sort,
        _ => Shape::Search,
    }
}

/// Appends the path (and query) of page `i` with shape `s`: raw (non-ASCII as
/// UTF-8, as written in hrefs) or canonical (percent-encoded, as requested).
pub fn write_path(out: &mut String, s: Shape, i: u32, canonical: bool) {
    // Writing to a String cannot fail.
    let _ = match s {
        Shape::Home => write!(out, "/"),
        Shape::Dir(d) => write!(out, "/d{d}/p{i}.html"),
        Shape::Flat => write!(out, "/p{i}.html"),
        Shape::Item(c) => write!(out, "/item?id={i}&cat={c}"),
        Shape::Docs => write!(out, "/docs/{i}/"),
        Shape::NonAscii(k) => {
            let (raw, enc) = NON_ASCII_DIRS[k];
            write!(out, "/{}/p{i}.html", if canonical { enc } else { raw })
        }
        Shape::Private => write!(out, "/private/p{i}.html"),
        Shape::PrivatePublic => write!(out, "/private/public/p{i}.html"),
        Shape::Php => write!(out, "/x/p{i}.php"),
        Shape::PhpQuery => write!(out, "/x/p{i}.php?v=2"),
        Shape::Sort => write!(out, "/list?sort=name&page={i}"),
        Shape::Search => write!(out, "/search/p{i}.html"),
    };
}

/// The page number a requested path claims, if it looks like a page path at all.
/// The caller must still compare the path with the regenerated canonical one.
pub fn parse_page_index(path: &str) -> Option<u32> {
    if path == "/" {
        return Some(0);
    }
    let (p, q) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    match q {
        Some(q) if p == "/item" => q.strip_prefix("id=")?.split_once("&cat=")?.0.parse().ok(),
        Some(q) if p == "/list" => q.strip_prefix("sort=name&page=")?.parse().ok(),
        Some("v=2") => file_number(p, ".php"),
        Some(_) => None,
        None => {
            if let Some(rest) = p.strip_prefix("/docs/") {
                return rest.strip_suffix('/')?.parse().ok();
            }
            file_number(p, ".html").or_else(|| file_number(p, ".php"))
        }
    }
}

/// `n` from a path whose last segment is `p{n}{ext}`.
fn file_number(path: &str, ext: &str) -> Option<u32> {
    let last = path.rsplit('/').next()?;
    last.strip_prefix('p')?.strip_suffix(ext)?.parse().ok()
}

/// Appends `raw` percent-encoding every non-ASCII byte (upper-case hex), which is
/// what the `url` crate does to the characters websim puts in paths and queries.
pub fn encode_non_ascii(out: &mut String, raw: &str) {
    if raw.is_ascii() {
        out.push_str(raw);
        return;
    }
    for b in raw.bytes() {
        if b.is_ascii() {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_round_trips() {
        for pages in [1, 50, 10_000] {
            for i in 0..pages.min(3000) {
                let s = shape(3, 5, i, pages);
                let mut canon = String::new();
                write_path(&mut canon, s, i, true);
                assert_eq!(parse_page_index(&canon), Some(i), "{canon}");
                let mut raw = String::new();
                write_path(&mut raw, s, i, false);
                let mut enc = String::new();
                encode_non_ascii(&mut enc, &raw);
                assert_eq!(enc, canon);
            }
        }
    }

    #[test]
    fn special_paths_are_not_pages() {
        for p in [
            "/robots.txt",
            "/trap/c1.html",
            "/loop/a",
            "/r/1/2/0",
            "/static/site.css",
        ] {
            assert_eq!(parse_page_index(p), None, "{p}");
        }
        assert_eq!(parse_page_index("/missing/p4.html"), Some(4)); // caller compares
        assert_eq!(parse_page_index("/item?id=7&cat=3"), Some(7));
        assert_eq!(parse_page_index("/x/p9.php?v=2"), Some(9));
    }
}
