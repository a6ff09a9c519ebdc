//! Trap hosts (`--traps`): nine hosts built to waste a crawler's requests, added
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
//! | [`MAZE_HOST`] | [`TrapSite::Maze`] | `/` | a maze no URL pattern describes: `/maze/WORD` (8 lower-case letters) links three other words drawn from its own; no number, no date, no repeated segment: only the pages' likeness (one template, each linking new pages) gives it away |
//! | [`PATH_SESSIONS_HOST`] | [`TrapSite::PathSessions`] | `/` | pages 1 to 29 ([`PATH_SESSION_PAGES`], a tree like the sessions host's, each with a line of its own) only under a session id, one fresh id per response on all its links, in one of three forms by page number: `/s/ID/pN.html` (32 hex digits), ASP.NET's cookieless `/(S(ID))/pN.aspx` (24 base-36 characters), `/pN.html?ctx=ID` (a name no session list knows) |
//! | [`DEEP_HOST`] | [`TrapSite::Deep`] | `/` | ever-deeper paths: `/d/W1/../Wk/` (six-letter words drawn from the path) links two pages one segment deeper and `/`; no segment repeats, nothing but the path changes |
//! | [`DATES_HOST`] | [`TrapSite::Dates`] | `/` | calendars in query and dashed forms: `/events?year=Y&month=M` links the months either side and its days `/events?year=Y&month=M&day=D`, a day links its month and the days either side; `/day/YYYY-MM-DD/` links the days either side (years 1000-9999). `/` links this month and today (the clock's, UTC) |
//!
//! The real pages are in the manifest like any page (a crawler that strips session
//! ids fetches exactly those of the sessions host, each once); every other URL of a
//! trap host is a trap URL, in no output file because there are endlessly many. The
//! hosts are flagged `trap` and by kind (`sessions`, `calendar`, `redirects`,
//! `pages`, `counter`, `maze`, `path-sessions`, `deep`, `dates`) in `hosts.tsv`. Their robots.txt is a 404 and they answer
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
    CALENDAR_HOST, CHAIN_HOPS, COUNTER_HOST, DATES_HOST, DEEP_HOST, MAZE_HOST, PAGES_HOST,
    PATH_SESSIONS_HOST, REDIRECTS_HOST, SESSION_PAGES, SESSIONS_HOST, TrapSite, write_real_path,
};

/// Pages of the path-sessions host: `/` and 1 to this minus one.
pub const PATH_SESSION_PAGES: u32 = 30;
/// Most segments below `/d/` the deep host answers (deeper is a 404).
pub const DEEP_MAX: usize = 200;

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
        TrapSite::PathSessions => path_sessions(path, query),
        TrapSite::Deep => deep(path, query),
        TrapSite::Dates => dates(path, query),
    }
}

static FRESH: AtomicU64 = AtomicU64::new(0);

/// A session id never given before by this process.
fn fresh_id() -> u64 {
    hash(&[0x005e_551d, FRESH.fetch_add(1, Ordering::Relaxed)])
}

fn page(title: &str, links: &[String]) -> Reply {
    text_page(title, "", links)
}

/// A page with `text` (HTML) between its heading and its links.
fn text_page(title: &str, text: &str, links: &[String]) -> Reply {
    let mut body = format!(
        "<!DOCTYPE html>\n<html><head><title>{title}</title></head><body><h1>{title}</h1>{text}<ul>\n"
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

/// Days since 1970-01-01 now (UTC).
fn days_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64
}

/// The (year, month, day) of `days` since 1970-01-01 (H. Hinnant's
/// civil_from_days).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

/// The current month (UTC), as months since year 0.
fn this_month() -> u32 {
    let (year, month, _) = civil(days_now());
    (year * 12 + i64::from(month) - 1) as u32
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

/// A fresh session id in the form page `k` of the path-sessions host uses.
fn session_form(k: u32, id: u64) -> String {
    let more = hash(&[id, 0x5e55]);
    match k % 3 {
        0 => format!("/s/{id:016x}{more:016x}/p{k}.html"),
        1 => {
            // 24 base-36 characters, as ASP.NET writes them.
            let mut n = u128::from(id) << 64 | u128::from(more);
            let s: String = (0..24)
                .map(|_| {
                    let c = b"abcdefghijklmnopqrstuvwxyz0123456789"[(n % 36) as usize];
                    n /= 36;
                    char::from(c)
                })
                .collect();
            format!("/(S({s}))/p{k}.aspx")
        }
        _ => format!("/p{k}.html?ctx={id:016x}{more:016x}"),
    }
}

/// The page number a path-sessions URL names, if it is in its page's form.
fn session_page(path: &str, query: &str) -> Option<u32> {
    let number = |s: &str, ext: &str| {
        s.strip_prefix('p')
            .and_then(|r| r.strip_suffix(ext))
            .and_then(|d| number_after(d, ""))
            .filter(|k| (1..PATH_SESSION_PAGES).contains(k))
    };
    let hex = |s: &str| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if let Some(rest) = path.strip_prefix("/s/") {
        let (id, page) = rest.split_once('/')?;
        let k = number(page, ".html").filter(|k| k % 3 == 0)?;
        return (hex(id) && query.is_empty()).then_some(k);
    }
    if let Some(rest) = path.strip_prefix("/(S(") {
        let (id, page) = rest.split_once("))/")?;
        let k = number(page, ".aspx").filter(|k| k % 3 == 1)?;
        let ok = id.len() == 24
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        return (ok && query.is_empty()).then_some(k);
    }
    let k = number(path.strip_prefix('/')?, ".html").filter(|k| k % 3 == 2)?;
    query.strip_prefix("ctx=").is_some_and(hex).then_some(k)
}

fn path_sessions(path: &str, query: &str) -> Reply {
    let k = if path == "/" && query.is_empty() {
        0
    } else {
        match session_page(path, query) {
            Some(k) => k,
            None => return not_found(),
        }
    };
    // One fresh session per response: the crawler keeps no cookie.
    let id = fresh_id();
    let mut links = Vec::with_capacity(4);
    if k > 0 {
        let parent = (k - 1) / 3;
        links.push(if parent == 0 {
            "/".to_owned()
        } else {
            session_form(parent, id)
        });
    }
    for c in k * 3 + 1..=k * 3 + 3 {
        if c < PATH_SESSION_PAGES {
            links.push(session_form(c, id));
        }
    }
    let text = format!(
        "<p>Page {k} tells of {}.</p>",
        word(hash(&[0x5e55, u64::from(k)]), 7)
    );
    text_page(&format!("path sessions page {k}"), &text, &links)
}

/// `len` lower-case letters drawn from `h`.
fn word(mut h: u64, len: usize) -> String {
    (0..len)
        .map(|_| {
            let c = char::from(b'a' + (h % 26) as u8);
            h /= 26;
            c
        })
        .collect()
}

fn deep(path: &str, query: &str) -> Reply {
    if !query.is_empty() {
        return not_found();
    }
    if path == "/" {
        return page("deep", &[format!("/d/{}/", word(hash(&[0xdee9]), 6))]);
    }
    let Some(rest) = path.strip_prefix("/d/").and_then(|r| r.strip_suffix('/')) else {
        return not_found();
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let valid = segments.len() <= DEEP_MAX
        && segments
            .iter()
            .all(|s| s.len() == 6 && s.bytes().all(|b| b.is_ascii_lowercase()));
    if !valid {
        return not_found();
    }
    let h = rest
        .bytes()
        .fold(hash(&[0xdee9, 1]), |h, b| hash(&[h, u64::from(b)]));
    let mut links: Vec<String> = (0..2)
        .map(|k| format!("{path}{}/", word(hash(&[h, k]), 6)))
        .collect();
    links.push("/".to_owned());
    page(&format!("deep {}", segments.join(" ")), &links)
}

/// The day after (`forward`) or before (y, m, d), within years 1000-9999.
fn next_day((y, m, d): (u32, u32, u32), forward: bool) -> Option<(u32, u32, u32)> {
    let step = if forward {
        if d < days_in(y, m) {
            (y, m, d + 1)
        } else if m < 12 {
            (y, m + 1, 1)
        } else {
            (y + 1, 1, 1)
        }
    } else if d > 1 {
        (y, m, d - 1)
    } else if m > 1 {
        (y, m - 1, days_in(y, m - 1))
    } else {
        (y.checked_sub(1)?, 12, 31)
    };
    (1000..=9999).contains(&step.0).then_some(step)
}

/// `?year=Y&month=M` or `?year=Y&month=M&day=D` (no leading zeros).
fn query_date(query: &str) -> Option<(u32, u32, Option<u32>)> {
    let rest = query.strip_prefix("year=")?;
    let (y, rest) = rest.split_once("&month=")?;
    let (m, d) = match rest.split_once("&day=") {
        Some((m, d)) => (m, Some(d)),
        None => (rest, None),
    };
    let y = number_after(y, "").filter(|y| (1000..=9999).contains(y))?;
    let m = number_after(m, "").filter(|m| (1..=12).contains(m))?;
    let d = match d {
        Some(d) => Some(number_after(d, "").filter(|d| (1..=days_in(y, m)).contains(d))?),
        None => None,
    };
    Some((y, m, d))
}

/// `/day/YYYY-MM-DD/`.
fn day_path((y, m, d): (u32, u32, u32)) -> String {
    format!("/day/{y:04}-{m:02}-{d:02}/")
}

fn dates(path: &str, query: &str) -> Reply {
    if path == "/" && query.is_empty() {
        let (y, m, d) = civil(days_now());
        let today = (y.clamp(1000, 9999) as u32, m, d);
        return page(
            "dates",
            &[
                format!("/events?year={}&month={m}", today.0),
                day_path(today),
            ],
        );
    }
    let event = |(y, m, d): (u32, u32, u32)| format!("/events?year={y}&month={m}&day={d}");
    if path == "/events" {
        let Some((y, m, day)) = query_date(query) else {
            return not_found();
        };
        let mut links = Vec::with_capacity(34);
        let Some(d) = day else {
            let index = y * 12 + m - 1;
            for i in [index.wrapping_sub(1), index + 1] {
                let (y, m) = (i / 12, i % 12 + 1);
                if (1000..=9999).contains(&y) {
                    links.push(format!("/events?year={y}&month={m}"));
                }
            }
            links.extend((1..=days_in(y, m)).map(|d| event((y, m, d))));
            return page(&format!("events {y}-{m}"), &links);
        };
        links.push(format!("/events?year={y}&month={m}"));
        for forward in [false, true] {
            links.extend(next_day((y, m, d), forward).map(event));
        }
        return page(&format!("events {y}-{m}-{d}"), &links);
    }
    let Some((y, m, d)) = path
        .strip_prefix("/day/")
        .and_then(|r| r.strip_suffix('/'))
        .filter(|r| r.len() == 10 && query.is_empty())
        .and_then(|r| {
            let mut p = r.split('-');
            let (y, m, d) = (p.next()?, p.next()?, p.next()?);
            let num = |s: &str, len: usize| {
                (s.len() == len && s.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| s.parse::<u32>().ok())
                    .flatten()
            };
            let (y, m) = (num(y, 4)?, num(m, 2)?);
            let d = num(d, 2)?;
            ((1000..=9999).contains(&y)
                && (1..=12).contains(&m)
                && (1..=days_in(y, m)).contains(&d))
            .then_some((y, m, d))
        })
    else {
        return not_found();
    };
    let links: Vec<String> = [false, true]
        .into_iter()
        .filter_map(|forward| next_day((y, m, d), forward).map(day_path))
        .collect();
    page(&format!("day {y:04}-{m:02}-{d:02}"), &links)
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
            traps: true,
            ..super::super::model::Params::new(3, 20, 100)
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

    /// The hrefs of a trap page.
    fn hrefs(text: &str) -> Vec<String> {
        text.split("href=\"")
            .skip(1)
            .filter_map(|r| r.split('"').next())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn path_sessions_are_fresh_per_response_in_three_forms() {
        let w = web();
        let h = w.host_by_name(PATH_SESSIONS_HOST).unwrap();
        let (s, home, _) = body(&route(h, TrapSite::PathSessions, "/"));
        assert_eq!(s, 200);
        let links = hrefs(&home);
        assert_eq!(links.len(), 3, "{home}");
        assert!(links[0].starts_with("/(S(") && links[0].ends_with("))/p1.aspx"));
        assert!(links[1].starts_with("/p2.html?ctx="));
        assert!(links[2].starts_with("/s/") && links[2].ends_with("/p3.html"));
        for l in &links {
            let (path, query) = l.split_once('?').unwrap_or((l, ""));
            assert!(session_page(path, query).is_some(), "{l}");
        }
        let (s, p1, _) = body(&route(h, TrapSite::PathSessions, &links[0]));
        assert_eq!(s, 200);
        let again = body(&route(h, TrapSite::PathSessions, &links[0])).1;
        assert_ne!(p1, again, "a fresh id every response");
        let ids: Vec<String> = hrefs(&p1)
            .iter()
            .filter(|l| l.starts_with("/s/"))
            .map(|l| l[3..35].to_owned())
            .collect();
        assert!(!ids.is_empty() && ids.iter().all(|i| i == &ids[0]), "{p1}");
        assert!(hrefs(&p1).contains(&"/".to_owned()), "its parent");
        for bad in [
            "/s/0123/p3.html",
            "/p3.html?ctx=0123456789abcdef0123456789abcdef",
            "/p2.html",
            "/p30.html?ctx=0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(body(&route(h, TrapSite::PathSessions, bad)).0, 404, "{bad}");
        }
    }

    #[test]
    fn the_deep_host_only_goes_deeper() {
        let w = web();
        let h = w.host_by_name(DEEP_HOST).unwrap();
        let (_, home, _) = body(&route(h, TrapSite::Deep, "/"));
        let first = hrefs(&home).remove(0);
        let (s, text, _) = body(&route(h, TrapSite::Deep, &first));
        assert_eq!(s, 200);
        let links = hrefs(&text);
        assert_eq!(links.len(), 3, "{text}");
        for l in &links[..2] {
            assert!(l.starts_with(&first) && l.len() == first.len() + 7, "{l}");
            assert!(!l.contains(|c: char| c.is_ascii_digit()));
        }
        assert_ne!(links[0], links[1]);
        assert_eq!(links[2], "/");
        assert_eq!(
            text,
            body(&route(h, TrapSite::Deep, &first)).1,
            "the same every time"
        );
        let too_deep = format!("/d/{}", "abcdef/".repeat(DEEP_MAX + 1));
        assert_eq!(body(&route(h, TrapSite::Deep, &too_deep)).0, 404);
        assert_eq!(body(&route(h, TrapSite::Deep, "/d/abc/")).0, 404);
    }

    #[test]
    fn the_dates_host_pages_months_and_days_endlessly() {
        let w = web();
        let h = w.host_by_name(DATES_HOST).unwrap();
        let (_, home, _) = body(&route(h, TrapSite::Dates, "/"));
        let (y, m, d) = civil(days_now());
        assert!(
            home.contains(&format!("/events?year={y}&month={m}\"")),
            "{home}"
        );
        assert!(
            home.contains(&format!("/day/{y:04}-{m:02}-{d:02}/")),
            "{home}"
        );
        let (s, month, _) = body(&route(h, TrapSite::Dates, "/events?year=2025&month=1"));
        assert_eq!(s, 200);
        let links = hrefs(&month);
        for l in [
            "/events?year=2024&month=12",
            "/events?year=2025&month=2",
            "/events?year=2025&month=1&day=1",
            "/events?year=2025&month=1&day=31",
        ] {
            assert!(links.iter().any(|x| x == l), "{l} in {links:?}");
        }
        let day = hrefs(
            &body(&route(
                h,
                TrapSite::Dates,
                "/events?year=2025&month=1&day=31",
            ))
            .1,
        );
        assert_eq!(
            day,
            [
                "/events?year=2025&month=1",
                "/events?year=2025&month=1&day=30",
                "/events?year=2025&month=2&day=1"
            ]
        );
        let paging = hrefs(&body(&route(h, TrapSite::Dates, "/day/2024-03-01/")).1);
        assert_eq!(paging, ["/day/2024-02-29/", "/day/2024-03-02/"]);
        let new_year = hrefs(&body(&route(h, TrapSite::Dates, "/day/2025-12-31/")).1);
        assert_eq!(new_year, ["/day/2025-12-30/", "/day/2026-01-01/"]);
        for bad in [
            "/events?year=2025&month=13",
            "/events?year=2025&month=01",
            "/events?year=2025&month=2&day=30",
            "/day/2025-02-30/",
            "/day/2025-2-03/",
        ] {
            assert_eq!(body(&route(h, TrapSite::Dates, bad)).0, 404, "{bad}");
        }
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
