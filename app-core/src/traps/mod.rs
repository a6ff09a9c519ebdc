//! Trap detectors: rules that cut the links of endless URL spaces before they
//! reach the seen set, so a host's budget goes to its real pages and a trap host
//! costs little even when it is a seed. Each detector is counted ([`Detector`]
//! names them; the counts are in the progress file, the summary and the admin
//! page, with the last few URLs each cut).
//!
//! | detector | what it cuts | setting |
//! |---|---|---|
//! | `repeated_segment` | a path repeating one segment too often (`/a/b/a/b/a/b`) | `max_repeated_segment` (`scope`) |
//! | `calendar_depth` | paths going on below a `/YYYY/MM/DD/` date | `calendar_pattern`, `calendar_max_depth` (`scope`) |
//! | `far_date` | a date page (`dates.rs`) more than `max_date_years_past` years before the crawl's date; any URL naming a date more than `max_date_years_ahead` years after it | those two |
//! | `date_pages` | a host's date pages (calendar months and days, archive months) past the first `max_date_pages_per_host` distinct ones | that |
//! | `sequence` | on one host, a link stepping one number of its page's URL past every value seen (a pager's next page, a counter's next value, month paging: `sequence.rs`) after `max_sequence_steps` such steps per URL shape | that |
//! | `session_id` | on one host, a link whose URL, but for a random token (a path segment, ASP.NET's `(S(...))`, a query value under any name), was followed under another token, once pages under two other tokens read as the page already read (`sessions.rs`) | `session_confirmations` |
//! | `maze` | on one host, the same-host links of pages of one template (the page without its own variable tokens) once `maze_min_pages` of them were read and each gave new links of the host (`maze.rs`): mazes of words, ever-deeper paths | `maze_min_pages` |
//! | `redirect_hops` | the target of a redirect chain longer than `max_redirect_hops` | that (counted by the crawl loop) |
//!
//! The crawl's date is the clock's at start (UTC), fixed for the run.
//!
//! Counts are of links cut: a URL linked from three pages and cut three times
//! counts three. A link cut here never enters the seen set, so the same URL found
//! later in a way no detector cuts (a plain link from another page) is followed.
//!
//! The maze and session-id detectors judge pages by their template, which the
//! page reader computes with the links (`pages::links::template`) and the crawl
//! loop hands over with `Traps::page` before the page's links.
//!
//! This module must never read or write files nor ask the seen set: it answers
//! from what it was shown, and the crawl loop acts.
//!
//! Memory: per host with a date page, up to `max_date_pages_per_host` URL
//! hashes; per host with a sequence, up to `sequence::MAX_SHAPES` (16) shapes;
//! per host with an HTML page, up to `maze::MAX_TEMPLATES` (16) templates, each
//! read twice or more with a 1 KiB bit set; per host with a token URL, up to
//! `sessions::MAX_URLS` (4,096) masked URLs. Not saved: after a restart every
//! host's counts start from zero again (its budget, which is saved, still bounds
//! it).

mod dates;
mod maze;
mod sequence;
mod sessions;

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;

use foldhash::fast::{FixedState, RandomState};

use url::Url;

use self::maze::HostTemplates;
use self::sequence::{HostShapes, Shape};
use self::sessions::HostSessions;

/// URLs kept per detector to show what it cut.
pub const EXAMPLES: usize = 3;
/// Longest example URL kept, in bytes.
const EXAMPLE_LEN: usize = 200;

/// A trap detector (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Detector {
    /// A path segment repeated more than `max_repeated_segment` times.
    RepeatedSegment,
    /// Too deep below a `/YYYY/MM/DD/` date.
    CalendarDepth,
    /// A date too far before (date pages) or after (any URL) the crawl's date.
    FarDate,
    /// A host's date pages past `max_date_pages_per_host`.
    DatePages,
    /// A pager, counter or month sequence past `max_sequence_steps`.
    Sequence,
    /// A session-id variant of a URL already followed.
    SessionId,
    /// A link of a maze page.
    Maze,
    /// A redirect chain longer than `max_redirect_hops`.
    RedirectHops,
}

impl Detector {
    /// Every detector, in the order the admin page lists them.
    pub const ALL: [Detector; 8] = [
        Detector::RepeatedSegment,
        Detector::CalendarDepth,
        Detector::FarDate,
        Detector::DatePages,
        Detector::Sequence,
        Detector::SessionId,
        Detector::Maze,
        Detector::RedirectHops,
    ];

    /// Its name in the progress file, the summary and the admin page.
    pub fn name(self) -> &'static str {
        match self {
            Detector::RepeatedSegment => "repeated_segment",
            Detector::CalendarDepth => "calendar_depth",
            Detector::FarDate => "far_date",
            Detector::DatePages => "date_pages",
            Detector::Sequence => "sequence",
            Detector::SessionId => "session_id",
            Detector::Maze => "maze",
            Detector::RedirectHops => "redirect_hops",
        }
    }

    /// The detector named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// What the detectors keep of one host.
#[derive(Debug, Default)]
struct HostTraps {
    /// Hashes of the distinct date pages followed.
    date_pages: HashSet<u64>,
    shapes: HostShapes,
    templates: HostTemplates,
    sessions: HostSessions,
}

/// The page whose links are being checked (a page's links come in a row).
#[derive(Debug)]
struct Current {
    /// Its URL.
    url: String,
    shape: Option<Shape>,
    /// Its template, if the crawl loop said ([`Traps::page`]).
    template: Option<u64>,
}

/// The stateful detectors (`far_date`, `date_pages`, `sequence`) and the last
/// URLs every detector cut.
#[derive(Debug)]
pub struct Traps {
    rules: TrapRules,
    max_date_pages: usize,
    /// Months since year 0 of the crawl's date.
    today: i64,
    /// Months before `today` a date page may be (None: no limit).
    past: Option<i64>,
    /// Months after `today` a date may be (None: no limit).
    ahead: Option<i64>,
    /// Per host (foldhash: this map is looked up a few times per link, on the
    /// crawl loop's thread; SipHash was a measurable share of it).
    hosts: HashMap<Box<str>, HostTraps, RandomState>,
    examples: HashMap<Detector, VecDeque<String>>,
    /// The page the last links came from.
    page: Option<Current>,
}

/// The detectors' limits (the app config's `max_sequence_steps`,
/// `max_date_pages_per_host`, `max_date_years_past`, `max_date_years_ahead`,
/// `maze_min_pages`, `session_confirmations`; 0 turns each off, 0 years is no
/// limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrapRules {
    /// `max_sequence_steps`.
    pub max_steps: u32,
    /// `max_date_pages_per_host`.
    pub max_date_pages: u32,
    /// `max_date_years_past`.
    pub years_past: u32,
    /// `max_date_years_ahead`.
    pub years_ahead: u32,
    /// `maze_min_pages`.
    pub maze_min_pages: u32,
    /// `session_confirmations`.
    pub session_confirmations: u32,
}

impl TrapRules {
    /// Whether a detector needs the pages' templates.
    pub fn needs_templates(&self) -> bool {
        self.maze_min_pages > 0 || self.session_confirmations > 0
    }
}

impl Traps {
    /// The detectors under `rules`, with the crawl's date `days` since 1970-01-01.
    pub fn new(rules: TrapRules, days: i64) -> Self {
        let (year, month) = dates::year_month(days);
        let years = |n: u32| (n > 0).then_some(i64::from(n) * 12);
        Self {
            rules,
            max_date_pages: rules.max_date_pages as usize,
            today: year * 12 + i64::from(month) - 1,
            past: years(rules.years_past),
            ahead: years(rules.years_ahead),
            hosts: HashMap::default(),
            examples: HashMap::new(),
            page: None,
        }
    }

    /// Days since 1970-01-01 now (UTC).
    pub fn today() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| (d.as_secs() / 86_400) as i64)
    }

    /// The page at `url` was read, with `template` (`None`: not HTML, or not
    /// computed); its links are checked next. Counts the page toward its
    /// template (maze) and judges its session tokens.
    pub fn page(&mut self, url: &Url, template: Option<u64>) {
        self.page = Some(Current {
            url: url.as_str().to_owned(),
            shape: shape(url),
            template,
        });
        let Some(template) = template else {
            return;
        };
        let host = url.host_str().unwrap_or_default();
        let rules = self.rules;
        let tokens = (rules.session_confirmations > 0)
            .then(|| sessions::tokens(url))
            .flatten();
        if rules.maze_min_pages == 0 && tokens.is_none() {
            return;
        }
        let entry = host_entry(&mut self.hosts, host);
        if rules.maze_min_pages > 0 {
            entry.templates.page(template, rules.maze_min_pages);
        }
        if let Some(tokens) = tokens {
            entry.sessions.page(tokens, template);
        }
    }

    /// Whether `url` (canonical, in scope), found on page `from` (`None`: a seed
    /// or an exchanged URL), is followed; `Err` names the detector that cut it.
    /// Records what a followed link counts toward.
    pub fn check(&mut self, url: &Url, from: Option<&Url>) -> Result<(), Detector> {
        let host = url.host_str().unwrap_or_default();
        // Recorded only once no detector cuts the link.
        let date_page = self.check_date(url, host)?;
        let same_host = from.filter(|p| p.host_str() == Some(host));
        if let Some(page) = same_host {
            if self.page.as_ref().is_none_or(|c| c.url != page.as_str()) {
                self.page = Some(Current {
                    url: page.as_str().to_owned(),
                    shape: shape(page),
                    template: None,
                });
            }
            self.check_sequence(url, host)?;
            self.check_maze(url, host)?;
        }
        if self.rules.session_confirmations > 0
            && let Some(tokens) = sessions::tokens(url)
            && !host_entry(&mut self.hosts, host)
                .sessions
                .link(tokens, self.rules.session_confirmations)
        {
            return Err(Detector::SessionId);
        }
        if let Some(hash) = date_page {
            host_entry(&mut self.hosts, host).date_pages.insert(hash);
        }
        Ok(())
    }

    /// The far-date and date-page rules; the hash of a date page to record once
    /// no detector cuts it.
    fn check_date(&self, url: &Url, host: &str) -> Result<Option<u64>, Detector> {
        let Some(date) = dates::find(url) else {
            return Ok(None);
        };
        let month = date.month_index();
        let too_old = date.page && self.past.is_some_and(|p| month < self.today - p);
        let too_new = self.ahead.is_some_and(|a| month > self.today + a);
        if too_old || too_new {
            return Err(Detector::FarDate);
        }
        if !date.page || self.max_date_pages == 0 {
            return Ok(None);
        }
        let hash = FixedState::default().hash_one(url.as_str());
        let max = self.max_date_pages;
        let pages = self.hosts.get(host).map(|h| &h.date_pages);
        if pages.is_some_and(|p| !p.contains(&hash) && p.len() >= max) {
            return Err(Detector::DatePages);
        }
        Ok(Some(hash))
    }

    /// The sequence rule for a link of the current page's host.
    fn check_sequence(&mut self, url: &Url, host: &str) -> Result<(), Detector> {
        let max = self.rules.max_steps;
        if max == 0 {
            return Ok(());
        }
        let (
            Some(link),
            Some(Current {
                shape: Some(page), ..
            }),
        ) = (shape(url), &self.page)
        else {
            return Ok(());
        };
        if host_entry(&mut self.hosts, host)
            .shapes
            .step(&link, page, max)
        {
            Ok(())
        } else {
            Err(Detector::Sequence)
        }
    }

    /// The maze rule for a link of the current page's host.
    fn check_maze(&mut self, url: &Url, host: &str) -> Result<(), Detector> {
        let Some(template) = self.page.as_ref().and_then(|c| c.template) else {
            return Ok(());
        };
        if self.rules.maze_min_pages == 0 {
            return Ok(());
        }
        let link = FixedState::default().hash_one(url.as_str());
        if host_entry(&mut self.hosts, host)
            .templates
            .link(template, link)
        {
            Ok(())
        } else {
            Err(Detector::Maze)
        }
    }

    /// Keeps `url` as one of the last [`EXAMPLES`] `detector` cut.
    pub fn cut(&mut self, detector: Detector, url: &str) {
        let mut url = url.to_owned();
        if url.len() > EXAMPLE_LEN {
            let mut at = EXAMPLE_LEN;
            while !url.is_char_boundary(at) {
                at -= 1;
            }
            url.truncate(at);
        }
        let kept = self.examples.entry(detector).or_default();
        if kept.contains(&url) {
            return;
        }
        if kept.len() == EXAMPLES {
            kept.pop_front();
        }
        kept.push_back(url);
    }

    /// The last URLs `detector` cut, oldest first.
    pub fn examples(&self, detector: Detector) -> Vec<String> {
        self.examples
            .get(&detector)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// `host`'s entry, made on first use (no allocation when it is there).
fn host_entry<'a>(
    hosts: &'a mut HashMap<Box<str>, HostTraps, RandomState>,
    host: &str,
) -> &'a mut HostTraps {
    if !hosts.contains_key(host) {
        hosts.insert(host.into(), HostTraps::default());
    }
    hosts.get_mut(host).expect("inserted above")
}

fn shape(url: &Url) -> Option<Shape> {
    let path = url.path();
    match url.query() {
        Some(q) => Shape::of(&format!("{path}?{q}")),
        None => Shape::of(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AppConfig;

    /// 2025-06-15.
    const TODAY: i64 = 20_254;

    fn traps(edit: impl FnOnce(&mut AppConfig)) -> Traps {
        let mut c = AppConfig::default();
        edit(&mut c);
        Traps::new(c.trap_rules(), TODAY)
    }

    fn check(t: &mut Traps, url: &str, from: Option<&str>) -> Result<(), Detector> {
        let from = from.map(|f| Url::parse(f).unwrap());
        t.check(&Url::parse(url).unwrap(), from.as_ref())
    }

    #[test]
    fn far_dates() {
        assert_eq!(dates::year_month(TODAY), (2025, 6));
        let mut t = traps(|_| {});
        assert_eq!(check(&mut t, "http://a.test/cal/2015/06/", None), Ok(()));
        assert_eq!(
            check(&mut t, "http://a.test/cal/2015/05/", None),
            Err(Detector::FarDate),
            "more than 10 years back"
        );
        assert_eq!(
            check(&mut t, "http://a.test/1970/01/an-old-article.html", None),
            Ok(()),
            "old articles are content"
        );
        assert_eq!(
            check(&mut t, "http://a.test/cal?date=2026-06", None),
            Ok(())
        );
        assert_eq!(
            check(&mut t, "http://a.test/cal?date=2026-07", None),
            Err(Detector::FarDate),
            "more than a year ahead"
        );
        assert_eq!(
            check(&mut t, "http://a.test/2199/12/x.html", None),
            Err(Detector::FarDate),
            "far-future dates cut whatever follows"
        );
        let mut off = traps(|c| {
            c.max_date_years_past = 0;
            c.max_date_years_ahead = 0;
        });
        assert_eq!(check(&mut off, "http://a.test/cal/1000/01/", None), Ok(()));
        assert_eq!(check(&mut off, "http://a.test/cal/9999/01/", None), Ok(()));
    }

    #[test]
    fn date_pages_per_host() {
        let mut t = traps(|c| c.max_date_pages_per_host = 3);
        for day in 1..=3 {
            let url = format!("http://a.test/cal/2025/05/{day}/");
            assert_eq!(check(&mut t, &url, None), Ok(()));
        }
        assert_eq!(
            check(&mut t, "http://a.test/cal/2025/05/1/", None),
            Ok(()),
            "one already followed"
        );
        assert_eq!(
            check(&mut t, "http://a.test/cal/2025/05/4/", None),
            Err(Detector::DatePages)
        );
        assert_eq!(check(&mut t, "http://b.test/cal/2025/05/4/", None), Ok(()));
        assert_eq!(
            check(&mut t, "http://a.test/2025/05/a-post.html", None),
            Ok(()),
            "not a date page"
        );
    }

    #[test]
    fn sequences_on_one_host() {
        let mut t = traps(|c| c.max_sequence_steps = 2);
        let page = Some("http://a.test/c/1");
        assert_eq!(check(&mut t, "http://a.test/c/2", page), Ok(()));
        assert_eq!(
            check(&mut t, "http://a.test/c/3", Some("http://a.test/c/2")),
            Ok(())
        );
        assert_eq!(
            check(&mut t, "http://a.test/c/4", Some("http://a.test/c/3")),
            Err(Detector::Sequence)
        );
        assert_eq!(
            check(&mut t, "http://a.test/c/2", Some("http://a.test/c/3")),
            Ok(()),
            "back inside the range"
        );
        assert_eq!(
            check(&mut t, "http://a.test/c/4", None),
            Ok(()),
            "not a step without its page"
        );
        assert_eq!(
            check(&mut t, "http://a.test/c/4", Some("http://b.test/c/3")),
            Ok(()),
            "not a step from another host"
        );
        let mut off = traps(|c| c.max_sequence_steps = 0);
        for n in 1..50 {
            let (from, to) = (
                format!("http://a.test/c/{n}"),
                format!("http://a.test/c/{}", n + 1),
            );
            assert_eq!(check(&mut off, &to, Some(&from)), Ok(()));
        }
    }

    #[test]
    fn examples_are_the_last_few_and_short() {
        let mut t = traps(|_| {});
        for n in 0..5 {
            t.cut(Detector::Sequence, &format!("http://a.test/c/{n}"));
        }
        t.cut(Detector::Sequence, "http://a.test/c/4");
        assert_eq!(
            t.examples(Detector::Sequence),
            [
                "http://a.test/c/2",
                "http://a.test/c/3",
                "http://a.test/c/4"
            ]
        );
        t.cut(
            Detector::FarDate,
            &format!("http://a.test/{}", "é".repeat(200)),
        );
        assert!(t.examples(Detector::FarDate)[0].len() <= EXAMPLE_LEN);
        assert!(t.examples(Detector::DatePages).is_empty());
        for d in Detector::ALL {
            assert_eq!(Detector::from_name(d.name()), Some(d));
        }
    }

    /// A pseudo-random stream (a 64-bit LCG's high bits).
    fn stream(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |n| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % n
        }
    }

    /// An HTML page: a header every page shares, `text`, and `links`.
    fn html(title: &str, text: &str, links: &[String]) -> String {
        let mut body = format!(
            "<!DOCTYPE html><html><head><title>{title}</title>\
             <link rel=stylesheet href=/style.css></head><body>\
             <div class=nav><a href=/index.html>Debian Reference</a></div><h1>{title}</h1>{text}<ul>"
        );
        for l in links {
            body.push_str(&format!("<li><a href=\"{l}\">{l}</a></li>"));
        }
        body.push_str("</ul><div class=footer>Generated by DocBook XSL</div></body></html>");
        body
    }

    /// Crawls `site` (path to page) breadth-first from `start` through the
    /// detectors as the crawl loop does: each page's template, then its links.
    /// The pages fetched and the cuts per detector.
    fn crawl(
        t: &mut Traps,
        start: &str,
        site: impl Fn(&str) -> Option<String>,
        most: usize,
    ) -> (usize, HashMap<Detector, u32>) {
        let mut reader = pages::links::template::TemplateReader::new();
        let mut seen = HashSet::from([start.to_owned()]);
        let mut queue = VecDeque::from([start.to_owned()]);
        let (mut fetched, mut cuts) = (0, HashMap::new());
        while let Some(url) = queue.pop_front() {
            let page = Url::parse(&url).unwrap();
            let Some(body) = site(&page[url::Position::BeforePath..]) else {
                continue;
            };
            fetched += 1;
            if fetched == most {
                break;
            }
            let links: Vec<Url> = body
                .split("href=")
                .skip(1)
                .map(|r| r.trim_start_matches('"'))
                .filter_map(|r| r.split(['"', '>']).next())
                .filter_map(|l| page.join(l).ok())
                .collect();
            t.page(&page, Some(reader.template(body.as_bytes(), &page, &links)));
            for link in links {
                match t.check(&link, Some(&page)) {
                    Ok(()) if seen.insert(link.to_string()) => queue.push_back(link.into()),
                    Ok(()) => {}
                    Err(d) => *cuts.entry(d).or_default() += 1,
                }
            }
        }
        (fetched, cuts)
    }

    /// A DocBook-style manual: a table of contents, 60 chapters of 50 sections
    /// (`/ch05s03.html`), each section with prev/next/up/contents links and
    /// `prose` paragraphs of its own (none: every section has one template).
    fn manual(path: &str, prose: usize) -> Option<String> {
        const WORDS: [&str; 24] = [
            "package",
            "install",
            "the",
            "system",
            "configure",
            "network",
            "kernel",
            "file",
            "apt",
            "user",
            "boot",
            "disk",
            "mount",
            "service",
            "log",
            "editor",
            "shell",
            "run",
            "mail",
            "backup",
            "time",
            "locale",
            "font",
            "printer",
        ];
        if path == "/index.html" {
            let chapters: Vec<String> = (1..=60).map(|c| format!("/ch{c:02}.html")).collect();
            return Some(html("Contents", "", &chapters));
        }
        let name = path.strip_prefix("/ch")?.strip_suffix(".html")?;
        let (c, s) = match name.split_once('s') {
            Some((c, s)) => (c.parse::<u64>().ok()?, s.parse::<u64>().ok()?),
            None => (name.parse::<u64>().ok()?, 0),
        };
        if !(1..=60).contains(&c) || s > 50 {
            return None;
        }
        if s == 0 {
            let sections: Vec<String> =
                (1..=50).map(|s| format!("/ch{c:02}s{s:02}.html")).collect();
            return Some(html(&format!("Chapter {c}"), "", &sections));
        }
        let mut next = stream(c * 100 + s);
        let text: String = (0..prose)
            .map(|_| {
                let words: Vec<&str> = (0..40).map(|_| WORDS[next(24) as usize]).collect();
                format!("<p>{}.</p>", words.join(" "))
            })
            .collect();
        let (prev, after) = match s {
            1 => (format!("/ch{c:02}.html"), format!("/ch{c:02}s02.html")),
            50 => (
                format!("/ch{c:02}s49.html"),
                format!("/ch{:02}.html", c % 60 + 1),
            ),
            _ => (
                format!("/ch{c:02}s{:02}.html", s - 1),
                format!("/ch{c:02}s{:02}.html", s + 1),
            ),
        };
        let links = [prev, after, format!("/ch{c:02}.html"), "/index.html".into()];
        Some(html(&format!("{c}.{s}. Section"), &text, &links))
    }

    #[test]
    fn a_documentation_tree_is_crawled_whole() {
        for prose in [3, 0] {
            let mut t = traps(|_| {});
            let (fetched, cuts) = crawl(
                &mut t,
                "http://docs.test/index.html",
                |p| manual(p, prose),
                10_000,
            );
            assert_eq!(fetched, 1 + 60 + 3_000, "with {prose} paragraphs: {cuts:?}");
            for d in [Detector::Maze, Detector::SessionId, Detector::DatePages] {
                assert_eq!(cuts.get(&d), None, "with {prose} paragraphs: {cuts:?}");
            }
        }
    }

    /// websim's maze: `/maze/WORD` links three new words.
    fn maze(path: &str) -> Option<String> {
        let word = if path == "/" {
            "entrance"
        } else {
            path.strip_prefix("/maze/")?
        };
        let mut h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let links: Vec<String> = (0..3)
            .map(|_| {
                let w: String = (0..8)
                    .map(|_| {
                        h = h.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        char::from(b'a' + ((h >> 33) % 26) as u8)
                    })
                    .collect();
                format!("/maze/{w}")
            })
            .collect();
        Some(html(&format!("maze {word}"), "", &links))
    }

    /// Ever-deeper paths: `/d/A/B/.../` links two new deeper segments.
    fn deep(path: &str) -> Option<String> {
        let rest = path.strip_prefix("/d/")?;
        let h = rest
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let links: Vec<String> = (0..2)
            .map(|k| format!("{path}{}/", to_word(h.wrapping_add(k))))
            .collect();
        Some(html(
            &format!("deep {}", rest.replace('/', " ")),
            "",
            &links,
        ))
    }

    fn to_word(mut n: u64) -> String {
        (0..6)
            .map(|_| {
                let c = char::from(b'a' + (n % 26) as u8);
                n /= 26;
                c
            })
            .collect()
    }

    #[test]
    fn a_maze_and_ever_deeper_paths_are_cut() {
        for (start, site) in [
            ("http://maze.test/", maze as fn(&str) -> Option<String>),
            ("http://deep.test/d/start/", deep),
        ] {
            let mut t = traps(|_| {});
            let (fetched, cuts) = crawl(&mut t, start, site, 100_000);
            assert!(fetched < 1_000, "{start}: {fetched} pages");
            assert!(cuts.get(&Detector::Maze) > Some(&0), "{start}: {cuts:?}");
            let mut off = traps(|c| c.maze_min_pages = 0);
            let (fetched, _) = crawl(&mut off, start, site, 5_000);
            assert_eq!(fetched, 5_000, "{start}: endless without the detector");
        }
    }

    /// A server that puts a fresh session in every URL it writes (one per
    /// response): 200 pages `/s/ID/pN.html`, a tree of parent and three children.
    fn session_site(path: &str, id: u64) -> Option<String> {
        let rest = path.strip_prefix("/s/")?;
        let (_, page) = rest.split_once('/')?;
        let n: u64 = page
            .strip_prefix('p')?
            .strip_suffix(".html")?
            .parse()
            .ok()?;
        let mut links: Vec<String> = (n * 3 + 1..=n * 3 + 3)
            .filter(|c| *c < 200)
            .map(|c| format!("/s/{:016x}/p{c}.html", id))
            .collect();
        if n > 0 {
            links.push(format!("/s/{:016x}/p{}.html", id, (n - 1) / 3));
        }
        let text = format!("<p>What page {n} says: {}</p>", to_word(n * 7_919));
        Some(html(&format!("page {n}"), &text, &links))
    }

    #[test]
    fn session_ids_in_paths_cost_each_page_about_once() {
        let fresh = std::cell::Cell::new(0x9f3a_0c1b_7e2d_4a5fu64);
        let site = |p: &str| {
            fresh.set(
                fresh
                    .get()
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1),
            );
            session_site(p, fresh.get() | 0x1000_0000_0000_0000)
        };
        let mut t = traps(|_| {});
        let (fetched, cuts) = crawl(
            &mut t,
            "http://s.test/s/a1b2c3d4e5f60718/p0.html",
            site,
            5_000,
        );
        assert!(
            (200..=240).contains(&fetched),
            "{fetched} fetches: {cuts:?}"
        );
        assert!(cuts.get(&Detector::SessionId) > Some(&0));
        let mut off = traps(|c| c.session_confirmations = 0);
        let (fetched, _) = crawl(
            &mut off,
            "http://s.test/s/a1b2c3d4e5f60718/p0.html",
            site,
            5_000,
        );
        assert_eq!(fetched, 5_000, "endless without the detector");
    }

    fn days_in(y: u64, m: u64) -> u64 {
        match m {
            2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    /// websim's calendar: `/cal/YYYY/MM/` links the months either side, a year
    /// either side and its days; `/cal/YYYY/MM/DD/` its month and the days either
    /// side.
    fn calendar(path: &str) -> Option<String> {
        let parts: Vec<u64> = path
            .strip_prefix("/cal/")?
            .trim_end_matches('/')
            .split('/')
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        let month = |i: u64| format!("/cal/{:04}/{:02}/", i / 12, i % 12 + 1);
        let (y, m) = (*parts.first()?, *parts.get(1)?);
        let index = y * 12 + m - 1;
        let mut links = Vec::new();
        match parts.get(2) {
            None => {
                links.extend([index - 1, index + 1, index - 12, index + 12].map(month));
                links.extend((1..=days_in(y, m)).map(|d| format!("/cal/{y:04}/{m:02}/{d:02}/")));
            }
            Some(&d) => {
                links.push(month(index));
                if d > 1 {
                    links.push(format!("/cal/{y:04}/{m:02}/{:02}/", d - 1));
                }
                if d < days_in(y, m) {
                    links.push(format!("/cal/{y:04}/{m:02}/{:02}/", d + 1));
                }
            }
        }
        Some(html(&format!("{y}-{m}"), "", &links))
    }

    /// (year, month, day) of `days` since 1970-01-01, and back (H. Hinnant).
    fn civil(days: i64) -> (i64, i64, i64) {
        let z = days + 719_468;
        let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        (
            yoe + era * 400 + i64::from(m <= 2),
            m,
            doy - (153 * mp + 2) / 5 + 1,
        )
    }

    fn days_from((y, m, d): (i64, i64, i64)) -> i64 {
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
        era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
    }

    /// Day paging in the dashed form (`/day/2025-06-15/` links the days either
    /// side) and a query calendar (`/events?year=Y&month=M` links the months
    /// either side and its days `&day=D`, which link the days either side).
    fn dated(target: &str) -> Option<String> {
        if let Some(day) = target.strip_prefix("/day/") {
            let mut p = day.trim_end_matches('/').split('-').map(|n| n.parse().ok());
            let date = (p.next()??, p.next()??, p.next()??);
            let n = days_from(date);
            let form = |n: i64| {
                let (y, m, d) = civil(n);
                format!("/day/{y:04}-{m:02}-{d:02}/")
            };
            return Some(html("day", "", &[form(n - 1), form(n + 1)]));
        }
        let query = target.strip_prefix("/events?")?;
        let mut v = query
            .split('&')
            .map(|kv| kv.split_once('=')?.1.parse::<i64>().ok());
        let (y, m) = (v.next()??, v.next()??);
        let month = |i: i64| format!("/events?year={}&month={}", i / 12, i % 12 + 1);
        let links = match v.next() {
            None => {
                let i = y * 12 + m - 1;
                let mut l = vec![month(i - 1), month(i + 1)];
                l.extend(
                    (1..=days_in(y as u64, m as u64))
                        .map(|d| format!("/events?year={y}&month={m}&day={d}")),
                );
                l
            }
            Some(d) => {
                let n = days_from((y, m, d?));
                let day = |n: i64| {
                    let (y, m, d) = civil(n);
                    format!("/events?year={y}&month={m}&day={d}")
                };
                vec![month(y * 12 + m - 1), day(n - 1), day(n + 1)]
            }
        };
        Some(html("events", "", &links))
    }

    #[test]
    fn calendars_in_every_form_are_bounded() {
        assert_eq!(civil(TODAY), (2025, 6, 15));
        assert_eq!(days_from((2025, 6, 15)), TODAY);
        for start in [
            "http://c.test/cal/2025/06/",
            "http://c.test/day/2025-06-15/",
            "http://c.test/events?year=2025&month=6",
        ] {
            let mut t = traps(|_| {});
            let site = |p: &str| calendar(p).or_else(|| dated(p));
            let (fetched, cuts) = crawl(&mut t, start, site, 100_000);
            assert!(
                (60..=110).contains(&fetched),
                "{start}: {fetched} pages: {cuts:?}"
            );
            assert!(
                cuts.get(&Detector::DatePages) > Some(&0),
                "{start}: {cuts:?}"
            );
        }
    }
}
