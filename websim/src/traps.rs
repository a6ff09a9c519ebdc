//! Trap hosts (`--traps`): three hosts built to waste a crawler's requests, added
//! after the misbehaving host and linked from the home page of the most popular
//! host only (one linking site each). `--plain` webs never have them.
//!
//! | host | kind | real pages | the trap |
//! |---|---|---|---|
//! | [`SESSIONS_HOST`] | [`TrapSite::Sessions`] | `/` and `/p1.html` .. `/p29.html` ([`SESSION_PAGES`]) | every link carries a fresh session id: `?sid=`, `;jsessionid=`, `?PHPSESSID=` or `?sessionid=` plus 16 random hex digits; any id is served the same page |
//! | [`CALENDAR_HOST`] | [`TrapSite::Calendar`] | `/` | `/cal/YYYY/MM` links the previous and next month (years 1000-9999), `/list?page=N` is a pager linking the previous page number and the next nine (any `u32`) |
//! | [`REDIRECTS_HOST`] | [`TrapSite::Redirects`] | `/` | `/chain/0` .. `/chain/49` each 302 to the next ([`CHAIN_HOPS`] hops), `/chain/50` is a 200 page |
//!
//! The real pages are in the manifest like any page (a crawler that strips session
//! ids fetches exactly those of the sessions host, each once); every other URL of a
//! trap host is a trap URL, in no output file because there are endlessly many. The
//! hosts are flagged `trap` and by kind (`sessions`, `calendar`, `redirects`) in
//! `hosts.tsv`. Their robots.txt is a 404 and they answer plain http.
//!
//! This module must never store what it served: ids are fresh from a counter and
//! the pages are computed from the path.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::model::Target;
use super::respond::{Body, Reply, not_found};
use super::rng::hash;

/// The session-id trap host.
pub const SESSIONS_HOST: &str = "www.sessions-trap.test";
/// The calendar and paging trap host.
pub const CALENDAR_HOST: &str = "www.calendar-trap.test";
/// The redirect-chain trap host.
pub const REDIRECTS_HOST: &str = "www.redirects-trap.test";
/// Real pages of the sessions host.
pub const SESSION_PAGES: u32 = 30;
/// Hops of the redirect chain before its end page.
pub const CHAIN_HOPS: u32 = 50;

/// What a trap host does (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrapSite {
    /// Fresh session ids on every link.
    Sessions,
    /// Endless months and page numbers.
    Calendar,
    /// A chain of [`CHAIN_HOPS`] redirects.
    Redirects,
}

impl TrapSite {
    /// Every kind, in host order.
    pub const ALL: [TrapSite; 3] = [TrapSite::Sessions, TrapSite::Calendar, TrapSite::Redirects];

    /// The host name.
    pub fn host_name(self) -> &'static str {
        match self {
            TrapSite::Sessions => SESSIONS_HOST,
            TrapSite::Calendar => CALENDAR_HOST,
            TrapSite::Redirects => REDIRECTS_HOST,
        }
    }

    /// The `hosts.tsv` flag naming the kind.
    pub fn flag(self) -> &'static str {
        match self {
            TrapSite::Sessions => "sessions",
            TrapSite::Calendar => "calendar",
            TrapSite::Redirects => "redirects",
        }
    }

    /// Number of real pages.
    pub fn pages(self) -> u32 {
        match self {
            TrapSite::Sessions => SESSION_PAGES,
            TrapSite::Calendar | TrapSite::Redirects => 1,
        }
    }
}

/// Appends the path of real page `page` (`/` or `/p{page}.html`).
pub fn write_real_path(out: &mut String, page: u32) {
    if page == 0 {
        out.push('/');
    } else {
        let _ = write!(out, "/p{page}.html");
    }
}

/// The real pages real page `page` of a trap host links to (tree links on the
/// sessions host: parent and up to three children; none elsewhere).
pub fn real_links(kind: TrapSite, host: u32, page: u32) -> Vec<Target> {
    if kind != TrapSite::Sessions {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(4);
    if page > 0 {
        out.push(Target::TrapSite {
            host,
            page: (page - 1) / 3,
        });
    }
    for c in page * 3 + 1..=page * 3 + 3 {
        if c < SESSION_PAGES {
            out.push(Target::TrapSite { host, page: c });
        }
    }
    out
}

/// The reply for `target` (path and query, as sent) on trap host `h`.
pub fn route(h: u32, kind: TrapSite, target: &str) -> Reply {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match kind {
        TrapSite::Sessions => sessions(h, path),
        TrapSite::Calendar => calendar(path, query),
        TrapSite::Redirects => redirects(path),
    }
}

static FRESH: AtomicU64 = AtomicU64::new(0);

/// A session id never given before by this process.
fn fresh_id() -> u64 {
    hash(&[0x005e_551d, FRESH.fetch_add(1, Ordering::Relaxed)])
}

fn page(title: &str, links: &[String]) -> Reply {
    let mut body = format!(
        "<!DOCTYPE html>\n<html><head><title>{title}</title></head><body><h1>{title}</h1><ul>\n"
    );
    for l in links {
        let _ = writeln!(body, "<li><a href=\"{l}\">{l}</a></li>");
    }
    body.push_str("</ul></body></html>\n");
    Reply::Fixed {
        status: 200,
        content_type: "text/html; charset=utf-8",
        location: None,
        body: Body::Owned(body),
    }
}

fn sessions(h: u32, path: &str) -> Reply {
    // Any `;param` on the path is ignored, as servlet containers do.
    let path = path.split_once(';').map_or(path, |(p, _)| p);
    let k = if path == "/" {
        0
    } else {
        match path
            .strip_prefix("/p")
            .and_then(|r| r.strip_suffix(".html"))
            .filter(|d| !d.starts_with('0'))
            .and_then(|d| d.parse::<u32>().ok())
        {
            Some(k) if (1..SESSION_PAGES).contains(&k) => k,
            _ => return not_found(),
        }
    };
    let links: Vec<String> = real_links(TrapSite::Sessions, h, k)
        .into_iter()
        .map(|t| {
            let Target::TrapSite { page, .. } = t else {
                unreachable!("real links are trap-site pages")
            };
            let mut l = String::new();
            write_real_path(&mut l, page);
            let id = fresh_id();
            let _ = match id % 4 {
                0 => write!(l, "?sid={id:016x}"),
                1 => write!(l, ";jsessionid={id:016X}"),
                2 => write!(l, "?PHPSESSID={id:016x}"),
                _ => write!(l, "?sessionid={id:016x}"),
            };
            l
        })
        .collect();
    page(&format!("sessions page {k}"), &links)
}

fn calendar(path: &str, query: &str) -> Reply {
    const START: &str = "/cal/2025/01";
    if path == "/" && query.is_empty() {
        return page("calendar", &[START.to_owned(), "/list?page=1".to_owned()]);
    }
    if path == "/list" {
        let Some(n) = query
            .strip_prefix("page=")
            .filter(|d| !d.starts_with('0'))
            .and_then(|d| d.parse::<u32>().ok())
        else {
            return not_found();
        };
        // A pager: the previous page and the next nine.
        let mut links: Vec<String> = (1..=9u32)
            .filter_map(|k| n.checked_add(k))
            .map(|k| format!("/list?page={k}"))
            .collect();
        if n > 1 {
            links.push(format!("/list?page={}", n - 1));
        }
        links.push(START.to_owned());
        return page(&format!("list page {n}"), &links);
    }
    let month = path.strip_prefix("/cal/").and_then(|r| {
        let (y, m) = r.split_once('/')?;
        let y: u32 = y.parse().ok().filter(|_| y.len() == 4)?;
        let m: u32 = m.parse().ok().filter(|_| m.len() == 2)?;
        ((1000..=9999).contains(&y) && (1..=12).contains(&m) && query.is_empty()).then_some((y, m))
    });
    let Some((y, m)) = month else {
        return not_found();
    };
    let index = y * 12 + (m - 1);
    let mut links = Vec::with_capacity(3);
    for i in [index.wrapping_sub(1), index + 1] {
        let (y, m) = (i / 12, i % 12 + 1);
        if (1000..=9999).contains(&y) {
            links.push(format!("/cal/{y:04}/{m:02}"));
        }
    }
    links.push("/list?page=1".to_owned());
    page(&format!("{y:04}-{m:02}"), &links)
}

fn redirects(path: &str) -> Reply {
    if path == "/" {
        return page("redirects", &["/chain/0".to_owned()]);
    }
    let Some(k) = path
        .strip_prefix("/chain/")
        .filter(|d| d == &"0" || !d.starts_with('0'))
        .and_then(|d| d.parse::<u32>().ok())
        .filter(|k| *k <= CHAIN_HOPS)
    else {
        return not_found();
    };
    if k == CHAIN_HOPS {
        return page("end of the chain", &[]);
    }
    let location = format!("/chain/{}", k + 1);
    Reply::Fixed {
        status: 302,
        content_type: "text/html; charset=utf-8",
        body: Body::Owned(format!("<html><body>Moved to {location}</body></html>\n")),
        location: Some(location),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::model::Web;

    fn web() -> Web {
        Web::new(super::super::model::Params {
            seed: 3,
            hosts: 20,
            pages: 100,
            size_skew: 1.0,
            plain: false,
            traps: true,
            http_port: 8080,
            https_port: 8443,
            communities: 0,
            own_addresses: false,
        })
    }

    fn body(r: &Reply) -> (u16, String, Option<String>) {
        match r {
            Reply::Fixed {
                status,
                body,
                location,
                ..
            } => (
                *status,
                String::from_utf8_lossy(body.as_bytes()).into_owned(),
                location.clone(),
            ),
            other => panic!("not a fixed reply: {other:?}"),
        }
    }

    #[test]
    fn session_links_are_fresh_every_time() {
        let w = web();
        let h = w.host_by_name(SESSIONS_HOST).unwrap();
        let (s1, a, _) = body(&route(h, TrapSite::Sessions, "/p1.html?sid=x"));
        let (s2, b, _) = body(&route(h, TrapSite::Sessions, "/p1.html;jsessionid=y"));
        assert_eq!((s1, s2), (200, 200));
        assert_ne!(a, b, "ids must differ between responses");
        for form in ["?sid=", ";jsessionid=", "?PHPSESSID=", "?sessionid="] {
            assert!(
                (0..4).any(|_| body(&route(h, TrapSite::Sessions, "/")).1.contains(form)),
                "{form}"
            );
        }
        assert_eq!(body(&route(h, TrapSite::Sessions, "/p30.html")).0, 404);
        assert_eq!(body(&route(h, TrapSite::Sessions, "/p01.html")).0, 404);
    }

    #[test]
    fn the_calendar_and_the_list_never_end() {
        let w = web();
        let h = w.host_by_name(CALENDAR_HOST).unwrap();
        let (s, text, _) = body(&route(h, TrapSite::Calendar, "/cal/2025/01"));
        assert_eq!(s, 200);
        assert!(text.contains("/cal/2024/12") && text.contains("/cal/2025/02"));
        let (_, text, _) = body(&route(h, TrapSite::Calendar, "/list?page=7"));
        assert!(text.contains("/list?page=8") && text.contains("/list?page=6"));
        assert!(text.contains("/list?page=16") && !text.contains("/list?page=17"));
        assert_eq!(body(&route(h, TrapSite::Calendar, "/cal/2025/13")).0, 404);
    }

    #[test]
    fn the_chain_has_fifty_hops() {
        let w = web();
        let h = w.host_by_name(REDIRECTS_HOST).unwrap();
        let mut at = "/chain/0".to_owned();
        let mut hops = 0;
        loop {
            let (status, _, location) = body(&route(h, TrapSite::Redirects, &at));
            match status {
                302 => {
                    at = location.unwrap();
                    hops += 1;
                }
                200 => break,
                other => panic!("{other} at {at}"),
            }
        }
        assert_eq!(hops, CHAIN_HOPS);
    }
}
