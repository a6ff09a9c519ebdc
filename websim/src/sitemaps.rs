//! The sitemap host (`--sitemaps`): [`SITEMAPS_HOST`], added after the misbehaving
//! and trap hosts on an address of its own and linked from the home page of the
//! most popular host only (with `--all-seeds` it is a seed as well). Its pages link
//! nowhere: everything past its home page is reachable only through the sitemaps
//! its robots.txt names. `--plain` webs never have it.
//!
//! | path | what |
//! |---|---|
//! | `/robots.txt` | `Disallow: /private/` for every agent, and `Sitemap:` with the absolute URL of `/sitemap_index.xml` |
//! | `/` | a page without links |
//! | `/sitemap_index.xml` | a sitemap index (`application/xml`) of the two below |
//! | `/sitemaps/pages.xml` | a URL set (`application/xml`): `/only/p1.html` .. `/only/p10.html`, `/private/secret.html` (robots-excluded), and two URLs out of the crawler's default scope: `/a/a/a/a/deep.html` (a path segment four times) and a path over 2048 bytes |
//! | `/sitemaps/more.xml.gz` | a gzip *body* (`application/gzip`, no `Content-Encoding`): a URL set of `/only/p11.html` .. `/only/p20.html`, an `ftp://` URL and a single-label host's URL (both out of scope) |
//! | `/only/pN.html`, N in 1..=20 | pages without links, in no link anywhere |
//! | `/private/secret.html`, `/a/a/a/a/deep.html`, the long path | pages websim serves (so a request for them shows in the log), which a correct crawl never asks for |
//!
//! In the manifest the home page "links" the sitemap index: the crawler learns it
//! from robots.txt, fetched for the host's first URL (the home page, its only
//! linked URL), and requests it one level deeper, so index depth = home depth + 1,
//! the index's sitemaps one more, their pages one more. The two scope-breaking URLs
//! of `pages.xml` go to `never.txt`; the `ftp://` and single-label URLs are in no
//! output file (websim does not serve them).
//!
//! This module must never keep state: every reply is computed from the path.

use std::fmt::Write as _;
use std::io::Write as _;

use super::model::{Target, Web};
use super::reply::{Body, Reply, not_found};

/// The sitemap host.
pub const SITEMAPS_HOST: &str = "www.sitemaps.test";
/// Pages listed only in sitemaps: `/only/p1.html` .. `/only/p{ONLY_PAGES}.html`.
pub const ONLY_PAGES: u32 = 20;
/// The rules of its robots.txt (the `Sitemap:` line follows them).
pub const RULES: &str = "User-agent: *\nDisallow: /private/\n";

/// `/`.
pub const HOME: u32 = 0;
/// `/sitemap_index.xml`.
pub const INDEX: u32 = 1;
/// `/sitemaps/pages.xml`.
pub const PLAIN: u32 = 2;
/// `/sitemaps/more.xml.gz`.
pub const GZIP: u32 = 3;
/// `/private/secret.html`.
pub const PRIVATE: u32 = 4;
/// `/a/a/a/a/deep.html`.
pub const REPEATED: u32 = 5;
/// `/long/xxx...x.html`, over 2048 bytes.
pub const LONG: u32 = 6;
/// `/only/p{N}.html` is key `ONLY + N`.
pub const ONLY: u32 = 100;

/// Length of the long path's `x` run.
const LONG_RUN: usize = 2100;
/// The out-of-scope URLs of `more.xml.gz` that websim does not serve.
pub const FOREIGN: [&str; 2] = [
    "ftp://www.sitemaps.test/file.txt",
    "http://intranet/page.html",
];

/// The target of key `key` on the sitemap host `host`.
pub fn target(host: u32, key: u32) -> Target {
    Target::Sitemaps { host, key }
}

/// Appends the path of `key`.
pub fn write_path(out: &mut String, key: u32) {
    let _ = match key {
        HOME => write!(out, "/"),
        INDEX => write!(out, "/sitemap_index.xml"),
        PLAIN => write!(out, "/sitemaps/pages.xml"),
        GZIP => write!(out, "/sitemaps/more.xml.gz"),
        PRIVATE => write!(out, "/private/secret.html"),
        REPEATED => write!(out, "/a/a/a/a/deep.html"),
        LONG => {
            out.push_str("/long/");
            out.extend(std::iter::repeat_n('x', LONG_RUN));
            write!(out, ".html")
        }
        n => write!(out, "/only/p{}.html", n - ONLY),
    };
}

/// What key `key` lists or links, for the manifest: (followed, never to follow).
pub fn links(host: u32, key: u32) -> (Vec<Target>, Vec<Target>) {
    let t = |k| target(host, k);
    match key {
        HOME => (vec![t(INDEX)], vec![]),
        INDEX => (vec![t(PLAIN), t(GZIP)], vec![]),
        PLAIN => {
            let mut follow: Vec<Target> = (1..=10).map(|n| t(ONLY + n)).collect();
            follow.push(t(PRIVATE));
            (follow, vec![t(REPEATED), t(LONG)])
        }
        GZIP => ((11..=ONLY_PAGES).map(|n| t(ONLY + n)).collect(), vec![]),
        _ => (vec![], vec![]),
    }
}

/// The key of `path`, if the sitemap host serves it.
fn key_of(path: &str) -> Option<u32> {
    let mut p = String::new();
    for key in [HOME, INDEX, PLAIN, GZIP, PRIVATE, REPEATED, LONG] {
        p.clear();
        write_path(&mut p, key);
        if p == path {
            return Some(key);
        }
    }
    let n: u32 = path
        .strip_prefix("/only/p")?
        .strip_suffix(".html")?
        .parse()
        .ok()?;
    ((1..=ONLY_PAGES).contains(&n) && path == format!("/only/p{n}.html")).then_some(ONLY + n)
}

/// The reply for `path` on the sitemap host `h`.
pub fn route(web: &Web, h: u32, path: &str) -> Reply {
    if path == "/robots.txt" {
        let text = format!(
            "{RULES}\nSitemap: {}\n",
            web.host_url(h, "/sitemap_index.xml")
        );
        return fixed("text/plain; charset=utf-8", text.into_bytes());
    }
    let Some(key) = key_of(path) else {
        return not_found();
    };
    let url = |k| web.url(&target(h, k));
    match key {
        INDEX => {
            let mut xml = String::from(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
            );
            for k in [PLAIN, GZIP] {
                let _ = writeln!(xml, "  <sitemap><loc>{}</loc></sitemap>", url(k));
            }
            xml.push_str("</sitemapindex>\n");
            fixed("application/xml", xml.into_bytes())
        }
        PLAIN | GZIP => {
            let (follow, never) = links(h, key);
            let mut locs: Vec<String> = follow.iter().chain(&never).map(|t| web.url(t)).collect();
            if key == GZIP {
                locs.extend(FOREIGN.iter().map(|s| (*s).to_owned()));
            }
            let mut xml = String::from(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
            );
            for loc in locs {
                let _ = writeln!(
                    xml,
                    "  <url><loc>{}</loc><changefreq>weekly</changefreq></url>",
                    loc.replace('&', "&amp;")
                );
            }
            xml.push_str("</urlset>\n");
            if key == PLAIN {
                return fixed("application/xml", xml.into_bytes());
            }
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let body = gz
                .write_all(xml.as_bytes())
                .and_then(|()| gz.finish())
                .unwrap_or_default();
            fixed("application/gzip", body)
        }
        _ => {
            let mut path = String::new();
            write_path(&mut path, key);
            let title = if key == HOME { "sitemaps" } else { "listed" };
            let html = format!(
                "<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\
                 <p>{} is in no link; only a sitemap lists it.</p></body></html>\n",
                &path[..path.len().min(40)]
            );
            fixed("text/html; charset=utf-8", html.into_bytes())
        }
    }
}

fn fixed(content_type: &'static str, body: Vec<u8>) -> Reply {
    Reply::Fixed {
        status: 200,
        content_type,
        location: None,
        body: Body::Bytes(body),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;
    use crate::manifest::{WebGraph, bfs};
    use crate::model::Params;

    fn web() -> Web {
        Web::new(Params {
            https_port: 443,
            sitemaps: true,
            ..Params::new(5, 30, 300)
        })
    }

    #[test]
    fn manifest_reaches_the_listed_pages_through_the_sitemaps_only() {
        let web = web();
        let h = web.host_by_name(SITEMAPS_HOST).unwrap();
        let g = WebGraph::new(&web);
        let crawl = bfs(&g, &g.seeds());
        let depth_of = |k| {
            crawl
                .fetched
                .iter()
                .find(|f| f.node == target(h, k))
                .map(|f| f.depth)
        };
        let home = depth_of(HOME).expect("home linked from the popular host");
        assert_eq!(depth_of(INDEX), Some(home + 1));
        assert_eq!(depth_of(GZIP), Some(home + 2));
        for n in 1..=ONLY_PAGES {
            assert_eq!(depth_of(ONLY + n), Some(home + 3), "page {n}");
        }
        assert!(crawl.outcomes.iter().any(|o| o.node == target(h, PRIVATE)));
        assert!(crawl.never.contains(&target(h, REPEATED)));
        assert!(crawl.never.contains(&target(h, LONG)));
        assert!(crawl.never.contains(&target(h, PRIVATE)));
    }

    #[test]
    fn serves_robots_and_a_gzip_sitemap() {
        let web = web();
        let h = web.host_by_name(SITEMAPS_HOST).unwrap();
        let Reply::Fixed { body, .. } = route(&web, h, "/robots.txt") else {
            panic!("robots.txt");
        };
        let text = String::from_utf8(body.as_bytes().to_vec()).unwrap();
        assert!(text.contains("Sitemap: http://www.sitemaps.test:8080/sitemap_index.xml"));
        let Reply::Fixed {
            body, content_type, ..
        } = route(&web, h, "/sitemaps/more.xml.gz")
        else {
            panic!("gzip sitemap");
        };
        assert_eq!(content_type, "application/gzip");
        let mut xml = String::new();
        flate2::read::GzDecoder::new(body.as_bytes())
            .read_to_string(&mut xml)
            .unwrap();
        assert!(xml.contains("/only/p20.html</loc>") && xml.contains(FOREIGN[1]));
        assert_eq!(route(&web, h, "/sitemap.xml"), not_found());
    }

    #[test]
    fn every_key_routes_to_itself() {
        let mut p = String::new();
        for key in [
            HOME,
            INDEX,
            PLAIN,
            GZIP,
            PRIVATE,
            REPEATED,
            LONG,
            ONLY + 1,
            ONLY + 20,
        ] {
            p.clear();
            write_path(&mut p, key);
            assert_eq!(key_of(&p), Some(key), "{p}");
        }
        assert_eq!(key_of("/only/p21.html"), None);
        assert_eq!(key_of("/only/p01.html"), None);
        assert_eq!(key_of("/sitemap.xml"), None);
    }
}
