//! Trap hosts (`--traps`): six hosts built to waste a crawler's requests, added
//! after the misbehaving host and linked from the home page of the most popular
//! host only (one linking site each; with `--all-seeds` each is a seed as well).
//! `--plain` webs never have them.
//!
//! | host | kind | real pages | the trap |
//! |---|---|---|---|
//! | [`SESSIONS_HOST`] | [`TrapSite::Sessions`] | `/` and `/p1.html` .. `/p29.html` ([`SESSION_PAGES`]) | every link carries a fresh session id: `?sid=`, `;jsessionid=`, `?PHPSESSID=` or `?sessionid=` plus 16 random hex digits; any id is served the same page |
//! | [`CALENDAR_HOST`] | [`TrapSite::Calendar`] | `/` | a year/month calendar: `/cal/YYYY/MM/` links the previous and next month, the same month a year either side, and its day pages `/cal/YYYY/MM/DD/`; a day page links its month and the days either side (years 1000-9999). `/` links the current month (the clock's, UTC) and two far ones, [`FAR_PAST`] and [`FAR_FUTURE`] |
//! | [`REDIRECTS_HOST`] | [`TrapSite::Redirects`] | `/` | `/chain/0` .. `/chain/49` each 302 to the next ([`CHAIN_HOPS`] hops), `/chain/50` is a 200 page |
//! | [`PAGES_HOST`] | [`TrapSite::Pages`] | `/` | page-number sequences: `/list?page=N` links the previous page and the next nine, `/archive/page/N/` the previous and the next, `/search?q=all&start=N` the previous and next 20 (any `u32`) |
//! | [`COUNTER_HOST`] | [`TrapSite::Counter`] | `/` | monotone counters: `/count/N` links `/count/N+1`, `/next?after=N` links `/next?after=N+1`, and every page links `/?visits=V+1` where `V` is its own `visits` (0 without) |
//! | [`MAZE_HOST`] | [`TrapSite::Maze`] | `/` | a maze no pattern describes: `/maze/WORD` (8 lower-case letters) links three other words drawn from its own; no number, no date, no repeated segment: only a host budget bounds it |
//!
//! The real pages are in the manifest like any page (a crawler that strips session
//! ids fetches exactly those of the sessions host, each once); every other URL of a
//! trap host is a trap URL, in no output file because there are endlessly many. The
//! hosts are flagged `trap` and by kind (`sessions`, `calendar`, `redirects`,
//! `pages`, `counter`, `maze`) in `hosts.tsv`. Their robots.txt is a 404 and they answer
//! plain http.
//!
//! This module must never store what it served: ids are fresh from a counter and
//! the pages are computed from the path (and, for the calendar's start, the
//! clock).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::model::Target;
use super::reply::{Body, Reply, not_found};
use super::rng::hash;
pub use super::trap_sites::{
    CALENDAR_HOST, CHAIN_HOPS, COUNTER_HOST, MAZE_HOST, PAGES_HOST, REDIRECTS_HOST, SESSION_PAGES,
    SESSIONS_HOST, TrapSite, write_real_path,
};

/// A far-past month the calendar's home page links.
pub const FAR_PAST: &str = "/cal/1970/01/";
/// A far-future month the calendar's home page links.
pub const FAR_FUTURE: &str = "/cal/2199/12/";
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
        TrapSite::Pages => pages(path, query),
        TrapSite::Counter => counter(path, query),
        TrapSite::Maze => maze(path, query),
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

/// The current month (UTC), as months since year 0.
fn this_month() -> u32 {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // H. Hinnant's civil_from_days, year and month only.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year * 12 + month - 1) as u32
}

fn month_path(index: u32) -> Option<String> {
    let (y, m) = (index / 12, index % 12 + 1);
    (1000..=9999)
        .contains(&y)
        .then(|| format!("/cal/{y:04}/{m:02}/"))
}

fn days_in(y: u32, m: u32) -> u32 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `/cal/YYYY/MM/` or `/cal/YYYY/MM/DD/`: (year, month, day).
fn cal_date(path: &str) -> Option<(u32, u32, Option<u32>)> {
    let rest = path.strip_prefix("/cal/")?.strip_suffix('/')?;
    let mut parts = rest.split('/');
    let num = |s: &str, len: usize| {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    let y = num(parts.next()?, 4).filter(|y| (1000..=9999).contains(y))?;
    let m = num(parts.next()?, 2).filter(|m| (1..=12).contains(m))?;
    let d = match parts.next() {
        Some(d) => Some(num(d, 2).filter(|d| (1..=days_in(y, m)).contains(d))?),
        None => None,
    };
    parts.next().is_none().then_some((y, m, d))
}

fn calendar(path: &str, query: &str) -> Reply {
    if !query.is_empty() {
        return not_found();
    }
    if path == "/" {
        let now = month_path(this_month()).unwrap_or_else(|| FAR_PAST.to_owned());
        return page(
            "calendar",
            &[now, FAR_PAST.to_owned(), FAR_FUTURE.to_owned()],
        );
    }
    let Some((y, m, day)) = cal_date(path) else {
        return not_found();
    };
    let index = y * 12 + (m - 1);
    let mut links = Vec::with_capacity(40);
    match day {
        None => {
            for i in [
                index.wrapping_sub(1),
                index + 1,
                index.wrapping_sub(12),
                index + 12,
            ] {
                links.extend(month_path(i));
            }
            for d in 1..=days_in(y, m) {
                links.push(format!("/cal/{y:04}/{m:02}/{d:02}/"));
            }
            page(&format!("{y:04}-{m:02}"), &links)
        }
        Some(d) => {
            links.extend(month_path(index));
            if d > 1 {
                links.push(format!("/cal/{y:04}/{m:02}/{:02}/", d - 1));
            } else if let Some(prev) = month_path(index.wrapping_sub(1)) {
                let (py, pm) = ((index - 1) / 12, (index - 1) % 12 + 1);
                links.push(format!("{prev}{:02}/", days_in(py, pm)));
            }
            if d < days_in(y, m) {
                links.push(format!("/cal/{y:04}/{m:02}/{:02}/", d + 1));
            } else if let Some(next) = month_path(index + 1) {
                links.push(format!("{next}01/"));
            }
            page(&format!("{y:04}-{m:02}-{d:02}"), &links)
        }
    }
}

/// The `u32` after `prefix` in `s` (no leading zero), if `s` is exactly that.
fn number_after(s: &str, prefix: &str) -> Option<u32> {
    s.strip_prefix(prefix)
        .filter(|d| d == &"0" || !d.starts_with('0'))
        .and_then(|d| d.parse::<u32>().ok())
}

fn pages(path: &str, query: &str) -> Reply {
    const START: [&str; 3] = ["/list?page=1", "/archive/page/1/", "/search?q=all&start=0"];
    if path == "/" && query.is_empty() {
        return page("pages", &START.map(str::to_owned));
    }
    let mut links: Vec<String> = Vec::with_capacity(12);
    let title;
    if path == "/list" {
        let Some(n) = number_after(query, "page=").filter(|n| *n > 0) else {
            return not_found();
        };
        // A pager: the previous page and the next nine.
        links.extend(
            (1..=9u32)
                .filter_map(|k| n.checked_add(k))
                .map(|k| format!("/list?page={k}")),
        );
        if n > 1 {
            links.push(format!("/list?page={}", n - 1));
        }
        title = format!("list page {n}");
    } else if let Some(rest) = path.strip_prefix("/archive/page/") {
        let Some(n) = rest
            .strip_suffix('/')
            .and_then(|d| number_after(d, ""))
            .filter(|n| *n > 0 && query.is_empty())
        else {
            return not_found();
        };
        links.extend(n.checked_add(1).map(|k| format!("/archive/page/{k}/")));
        if n > 1 {
            links.push(format!("/archive/page/{}/", n - 1));
        }
        title = format!("archive page {n}");
    } else if path == "/search" {
        let Some(n) = number_after(query, "q=all&start=").filter(|n| n % 20 == 0) else {
            return not_found();
        };
        links.extend(
            n.checked_add(20)
                .map(|k| format!("/search?q=all&start={k}")),
        );
        if n > 0 {
            links.push(format!("/search?q=all&start={}", n - 20));
        }
        title = format!("results from {n}");
    } else {
        return not_found();
    }
    links.push("/".to_owned());
    page(&title, &links)
}

fn counter(path: &str, query: &str) -> Reply {
    // Every page counts a visit: its own `visits` plus one.
    let (query, visits) = match query.rsplit_once("visits=") {
        Some((before, v)) if before.is_empty() || before.ends_with('&') => {
            match number_after(v, "") {
                Some(v) => (before.trim_end_matches('&'), v),
                None => return not_found(),
            }
        }
        _ => (query, 0),
    };
    let mut links: Vec<String> = Vec::with_capacity(3);
    let title = if path == "/" && query.is_empty() {
        links.push("/count/1".to_owned());
        links.push("/next?after=1".to_owned());
        "counter".to_owned()
    } else if let Some(n) = number_after(path, "/count/").filter(|_| query.is_empty()) {
        links.extend(n.checked_add(1).map(|k| format!("/count/{k}")));
        format!("count {n}")
    } else if let Some(n) = number_after(query, "after=").filter(|_| path == "/next") {
        links.extend(n.checked_add(1).map(|k| format!("/next?after={k}")));
        format!("after {n}")
    } else {
        return not_found();
    };
    links.extend(visits.checked_add(1).map(|v| format!("/?visits={v}")));
    page(&title, &links)
}

/// Word `k` of the maze linked from `word`: 8 letters drawn from its hash.
fn maze_word(word: &str, k: u64) -> String {
    let mut h = word
        .bytes()
        .fold(hash(&[0x6d61_7a65, k]), |h, b| hash(&[h, u64::from(b)]));
    (0..8)
        .map(|_| {
            let c = char::from(b'a' + (h % 26) as u8);
            h /= 26;
            c
        })
        .collect()
}

fn maze(path: &str, query: &str) -> Reply {
    if !query.is_empty() {
        return not_found();
    }
    let word = match path {
        "/" => "entrance",
        _ => match path.strip_prefix("/maze/") {
            Some(w) if w.len() == 8 && w.bytes().all(|b| b.is_ascii_lowercase()) => w,
            _ => return not_found(),
        },
    };
    let links: Vec<String> = (0..3)
        .map(|k| format!("/maze/{}", maze_word(word, k)))
        .collect();
    page(&format!("maze {word}"), &links)
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
            all_seeds: false,
            sitemaps: false,
            components: 0,
            stuck_hosts: false,
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
    fn the_calendar_pages_months_and_days_endlessly() {
        let w = web();
        let h = w.host_by_name(CALENDAR_HOST).unwrap();
        let (s, home, _) = body(&route(h, TrapSite::Calendar, "/"));
        assert_eq!(s, 200);
        let now = month_path(this_month()).unwrap();
        for l in [now.as_str(), FAR_PAST, FAR_FUTURE] {
            assert!(home.contains(l), "{l} in {home}");
        }
        let (s, text, _) = body(&route(h, TrapSite::Calendar, "/cal/2025/01/"));
        assert_eq!(s, 200);
        for l in [
            "/cal/2024/12/",
            "/cal/2025/02/",
            "/cal/2024/01/",
            "/cal/2026/01/",
            "/cal/2025/01/01/",
            "/cal/2025/01/31/",
        ] {
            assert!(text.contains(l), "{l}");
        }
        let (_, feb, _) = body(&route(h, TrapSite::Calendar, "/cal/2024/02/"));
        assert!(feb.contains("/cal/2024/02/29/") && !feb.contains("/cal/2024/02/30/"));
        let (s, day, _) = body(&route(h, TrapSite::Calendar, "/cal/2025/01/31/"));
        assert_eq!(s, 200);
        for l in ["/cal/2025/01/", "/cal/2025/01/30/", "/cal/2025/02/01/"] {
            assert!(day.contains(l), "{l}");
        }
        let (_, first, _) = body(&route(h, TrapSite::Calendar, "/cal/2025/03/01/"));
        assert!(first.contains("/cal/2025/02/28/"));
        for bad in [
            "/cal/2025/13/",
            "/cal/2025/1/",
            "/cal/2025/02/30/",
            "/cal/2025/01",
        ] {
            assert_eq!(body(&route(h, TrapSite::Calendar, bad)).0, 404, "{bad}");
        }
    }

    #[test]
    fn the_pagers_never_end() {
        let w = web();
        let h = w.host_by_name(PAGES_HOST).unwrap();
        let (_, text, _) = body(&route(h, TrapSite::Pages, "/list?page=7"));
        assert!(text.contains("/list?page=8") && text.contains("/list?page=6"));
        assert!(text.contains("/list?page=16") && !text.contains("/list?page=17"));
        let (_, text, _) = body(&route(h, TrapSite::Pages, "/archive/page/3/"));
        assert!(text.contains("/archive/page/4/") && text.contains("/archive/page/2/"));
        let (_, text, _) = body(&route(h, TrapSite::Pages, "/search?q=all&start=40"));
        assert!(text.contains("start=60") && text.contains("start=20"));
        for bad in [
            "/list?page=0",
            "/list?page=07",
            "/archive/page/0/",
            "/search?q=all&start=30",
        ] {
            assert_eq!(body(&route(h, TrapSite::Pages, bad)).0, 404, "{bad}");
        }
    }

    #[test]
    fn the_counters_only_go_up() {
        let w = web();
        let h = w.host_by_name(COUNTER_HOST).unwrap();
        let (_, home, _) = body(&route(h, TrapSite::Counter, "/"));
        assert!(home.contains("/count/1") && home.contains("/next?after=1"));
        assert!(home.contains("/?visits=1"));
        let (_, text, _) = body(&route(h, TrapSite::Counter, "/count/41"));
        assert!(text.contains("/count/42") && !text.contains("/count/40"));
        let (_, text, _) = body(&route(h, TrapSite::Counter, "/next?after=9&visits=3"));
        assert!(text.contains("/next?after=10") && text.contains("/?visits=4"));
        let (s, again, _) = body(&route(h, TrapSite::Counter, "/?visits=7"));
        assert_eq!(s, 200);
        assert!(again.contains("/?visits=8"));
        assert_eq!(body(&route(h, TrapSite::Counter, "/count/x")).0, 404);
    }

    #[test]
    fn the_maze_has_no_numbers_and_no_end() {
        let w = web();
        let h = w.host_by_name(MAZE_HOST).unwrap();
        let (s, home, _) = body(&route(h, TrapSite::Maze, "/"));
        assert_eq!(s, 200);
        let first = maze_word("entrance", 0);
        assert!(home.contains(&format!("/maze/{first}")));
        let (s, text, _) = body(&route(h, TrapSite::Maze, &format!("/maze/{first}")));
        assert_eq!(s, 200);
        let hrefs: Vec<&str> = text
            .split("href=\"")
            .skip(1)
            .filter_map(|r| r.split('"').next())
            .collect();
        assert_eq!(hrefs.len(), 3);
        assert!(
            hrefs
                .iter()
                .all(|l| !l.contains(|c: char| c.is_ascii_digit())),
            "{hrefs:?}"
        );
        let again = body(&route(h, TrapSite::Maze, &format!("/maze/{first}"))).1;
        assert_eq!(text, again, "the same maze every time");
        assert_eq!(body(&route(h, TrapSite::Maze, "/maze/short")).0, 404);
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
