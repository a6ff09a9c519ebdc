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
//! | `redirect_hops` | the target of a redirect chain longer than `max_redirect_hops` | that (counted by the crawl loop) |
//!
//! The crawl's date is the clock's at start (UTC), fixed for the run.
//!
//! Counts are of links cut: a URL linked from three pages and cut three times
//! counts three. A link cut here never enters the seen set, so the same URL found
//! later in a way no detector cuts (a plain link from another page) is followed.
//!
//! Memory: per host with a date page, up to `max_date_pages_per_host` URL
//! hashes; per host with a sequence, up to `sequence::MAX_SHAPES` (16) shapes. Not
//! saved: after a restart every host's date pages and steps count from zero again
//! (its budget, which is saved, still bounds it).

pub(crate) mod dates;
pub(crate) mod sequence;

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use url::Url;

use self::sequence::{HostShapes, Shape};

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
    /// A redirect chain longer than `max_redirect_hops`.
    RedirectHops,
}

impl Detector {
    /// Every detector, in the order the admin page lists them.
    pub const ALL: [Detector; 6] = [
        Detector::RepeatedSegment,
        Detector::CalendarDepth,
        Detector::FarDate,
        Detector::DatePages,
        Detector::Sequence,
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
}

/// The stateful detectors (`far_date`, `date_pages`, `sequence`) and the last
/// URLs every detector cut.
#[derive(Debug)]
pub(crate) struct Traps {
    max_steps: u32,
    max_date_pages: usize,
    /// Months since year 0 of the crawl's date.
    today: i64,
    /// Months before `today` a date page may be (None: no limit).
    past: Option<i64>,
    /// Months after `today` a date may be (None: no limit).
    ahead: Option<i64>,
    hosts: HashMap<Box<str>, HostTraps>,
    examples: HashMap<Detector, VecDeque<String>>,
    /// The shape of the page the last links came from (a page's links come in a
    /// row), by its URL.
    page: Option<(String, Option<Shape>)>,
}

/// The detectors' limits (the app config's `max_sequence_steps`,
/// `max_date_pages_per_host`, `max_date_years_past`, `max_date_years_ahead`;
/// 0 years is no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TrapRules {
    pub max_steps: u32,
    pub max_date_pages: u32,
    pub years_past: u32,
    pub years_ahead: u32,
}

impl Traps {
    /// The detectors under `rules`, with the crawl's date `days` since 1970-01-01.
    pub(crate) fn new(rules: TrapRules, days: i64) -> Self {
        let (year, month) = dates::year_month(days);
        let years = |n: u32| (n > 0).then_some(i64::from(n) * 12);
        Self {
            max_steps: rules.max_steps,
            max_date_pages: rules.max_date_pages as usize,
            today: year * 12 + i64::from(month) - 1,
            past: years(rules.years_past),
            ahead: years(rules.years_ahead),
            hosts: HashMap::new(),
            examples: HashMap::new(),
            page: None,
        }
    }

    /// Days since 1970-01-01 now (UTC).
    pub(crate) fn today() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| (d.as_secs() / 86_400) as i64)
    }

    /// Whether `url` (canonical, in scope), found on page `from` (`None`: a seed
    /// or an exchanged URL), is followed; `Err` names the detector that cut it.
    /// Records what a followed link counts toward.
    pub(crate) fn check(&mut self, url: &Url, from: Option<&Url>) -> Result<(), Detector> {
        let host = url.host_str().unwrap_or_default();
        // Recorded only once no detector cuts the link.
        let mut date_page = None;
        if let Some(date) = dates::find(url) {
            let month = date.month_index();
            let too_old = date.page && self.past.is_some_and(|p| month < self.today - p);
            let too_new = self.ahead.is_some_and(|a| month > self.today + a);
            if too_old || too_new {
                return Err(Detector::FarDate);
            }
            if date.page && self.max_date_pages > 0 {
                let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(url.as_str());
                let max = self.max_date_pages;
                let pages = self.hosts.get(host).map(|h| &h.date_pages);
                if pages.is_some_and(|p| !p.contains(&hash) && p.len() >= max) {
                    return Err(Detector::DatePages);
                }
                date_page = Some(hash);
            }
        }
        if self.max_steps > 0
            && let Some(page) = from.filter(|p| p.host_str() == Some(host))
            && let Some(link) = shape(url)
        {
            if self.page.as_ref().is_none_or(|(u, _)| u != page.as_str()) {
                self.page = Some((page.as_str().to_owned(), shape(page)));
            }
            let max = self.max_steps;
            if let Some((_, Some(page))) = &self.page
                && !host_entry(&mut self.hosts, host)
                    .shapes
                    .step(&link, page, max)
            {
                return Err(Detector::Sequence);
            }
        }
        if let Some(hash) = date_page {
            host_entry(&mut self.hosts, host).date_pages.insert(hash);
        }
        Ok(())
    }

    /// Keeps `url` as one of the last [`EXAMPLES`] `detector` cut.
    pub(crate) fn cut(&mut self, detector: Detector, url: &str) {
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
    pub(crate) fn examples(&self, detector: Detector) -> Vec<String> {
        self.examples
            .get(&detector)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// `host`'s entry, made on first use (no allocation when it is there).
fn host_entry<'a>(hosts: &'a mut HashMap<Box<str>, HostTraps>, host: &str) -> &'a mut HostTraps {
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
    use crate::service::config::AppConfig;

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
}
