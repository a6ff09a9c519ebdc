//! Dates in URLs, for the far-date and date-page detectors ([`super`]): where a
//! URL names a calendar date, and whether it names that date and nothing more (a
//! *date page*: a calendar's month or day, an archive's month).
//!
//! Forms found, first match wins:
//! - path segments `/YYYY/MM/` or `/YYYY/MM/DD/` (a date page when no segment
//!   follows, or only `index.*`); the last of them may carry an extension
//!   (`/cal/2024/05/17.html`, `/2024/05.html`: a date page too);
//! - a path segment `YYYY-MM` or `YYYY-MM-DD`, optionally with an extension
//!   (`/2024-05-17.html`; a date page when it is the last segment);
//! - a query value `YYYY-MM` or `YYYY-MM-DD` (`?date=2024-05`), or the parameters
//!   `year`/`y` and `month`/`m` (`?year=2024&month=5`): always a date page, the
//!   query is what the page shows.
//!
//! Years are four digits from 1000, months 1-12, days 1-31 (not checked against
//! the month's length). Pure functions, O(URL length).

use url::Url;

/// A date a URL names (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UrlDate {
    /// The year, 1000-9999.
    pub year: u32,
    /// The month, 1-12.
    pub month: u32,
    /// The day, if the URL names one.
    pub day: Option<u32>,
    /// The URL names the date and nothing more specific.
    pub page: bool,
}

impl UrlDate {
    /// Months since year 0: `year * 12 + month - 1`.
    pub(crate) fn month_index(&self) -> i64 {
        i64::from(self.year) * 12 + i64::from(self.month) - 1
    }
}

fn year(s: &str) -> Option<u32> {
    (s.len() == 4 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
        .filter(|y| *y >= 1000)
}

fn small(s: &str, max: u32) -> Option<u32> {
    ((1..=2).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
        .filter(|n| (1..=max).contains(n))
}

/// `YYYY-MM` or `YYYY-MM-DD` (the whole of `s`).
fn dashed(s: &str) -> Option<(u32, u32, Option<u32>)> {
    let mut parts = s.split('-');
    let y = year(parts.next()?)?;
    let m = small(parts.next()?, 12)?;
    let d = match parts.next() {
        Some(d) => Some(small(d, 31)?),
        None => None,
    };
    parts.next().is_none().then_some((y, m, d))
}

/// Whether `s` holds four ASCII digits in a row (every form needs a year).
fn has_year_digits(s: &str) -> bool {
    let mut run = 0;
    for b in s.bytes() {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        if run == 4 {
            return true;
        }
    }
    false
}

/// The date `url` names, if any (see the module docs).
pub(crate) fn find(url: &Url) -> Option<UrlDate> {
    // Most links name no year at all: one scan, no allocation.
    if !has_year_digits(url.path()) && !url.query().is_some_and(has_year_digits) {
        return None;
    }
    let segments: Vec<&str> = url.path().split('/').filter(|s| !s.is_empty()).collect();
    let rest_is_index = |from: usize| match &segments[from.min(segments.len())..] {
        [] => true,
        [last] => last.starts_with("index."),
        _ => false,
    };
    // `17.html` reads as 17, marked as ending the date (nothing may follow it).
    let stem = |s: &str, max: u32| match s.split_once('.') {
        Some((stem, ext)) if !ext.is_empty() => small(stem, max).map(|n| (n, true)),
        _ => small(s, max).map(|n| (n, false)),
    };
    for (i, seg) in segments.iter().enumerate() {
        if let Some(y) = year(seg)
            && let Some((m, m_ext)) = segments.get(i + 1).and_then(|s| stem(s, 12))
        {
            let day = if m_ext {
                None
            } else {
                segments.get(i + 2).and_then(|s| stem(s, 31))
            };
            let after = i + 2 + usize::from(day.is_some());
            let ended = m_ext || day.is_some_and(|(_, ext)| ext);
            return Some(UrlDate {
                year: y,
                month: m,
                day: day.map(|(d, _)| d),
                page: if ended {
                    after == segments.len()
                } else {
                    rest_is_index(after)
                },
            });
        }
        let stem = seg.split_once('.').map_or(*seg, |(stem, _)| stem);
        if let Some((y, m, day)) = dashed(stem) {
            return Some(UrlDate {
                year: y,
                month: m,
                day,
                page: i + 1 == segments.len(),
            });
        }
    }
    let (mut y, mut m, mut d) = (None, None, None);
    for (key, value) in url.query_pairs() {
        if let Some((year, month, day)) = dashed(&value) {
            return Some(UrlDate {
                year,
                month,
                day,
                page: true,
            });
        }
        match key.to_ascii_lowercase().as_str() {
            "year" | "y" => y = y.or_else(|| year(&value)),
            "month" | "m" => m = m.or_else(|| small(&value, 12)),
            "day" | "d" => d = d.or_else(|| small(&value, 31)),
            _ => {}
        }
    }
    Some(UrlDate {
        year: y?,
        month: m?,
        day: d,
        page: true,
    })
}

/// The (year, month) of `days` since 1970-01-01 in the proleptic Gregorian
/// calendar (H. Hinnant's `civil_from_days`).
pub(crate) fn year_month(days: i64) -> (i64, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(url: &str) -> Option<(u32, u32, Option<u32>, bool)> {
        find(&Url::parse(url).unwrap()).map(|d| (d.year, d.month, d.day, d.page))
    }

    #[test]
    fn path_dates_and_date_pages() {
        assert_eq!(
            date("http://a.test/cal/2024/05/"),
            Some((2024, 5, None, true))
        );
        assert_eq!(
            date("http://a.test/cal/2024/05/17"),
            Some((2024, 5, Some(17), true))
        );
        assert_eq!(
            date("http://a.test/2024/5/17/index.html"),
            Some((2024, 5, Some(17), true))
        );
        assert_eq!(
            date("http://a.test/2019/03/my-post.html"),
            Some((2019, 3, None, false)),
            "a dated article is not a date page"
        );
        assert_eq!(
            date("http://a.test/cal/2024/05/17.html"),
            Some((2024, 5, Some(17), true)),
            "a day page as a file"
        );
        assert_eq!(
            date("http://a.test/news/2024/05.html"),
            Some((2024, 5, None, true))
        );
        assert_eq!(
            date("http://a.test/cal/2024/05/17.html/x"),
            Some((2024, 5, Some(17), false))
        );
        assert_eq!(
            date("http://a.test/2026-11-28/"),
            Some((2026, 11, Some(28), true))
        );
        assert_eq!(
            date("http://a.test/archive/2024-05-17.html"),
            Some((2024, 5, Some(17), true))
        );
        assert_eq!(
            date("http://a.test/2024-05/post"),
            Some((2024, 5, None, false))
        );
        for none in [
            "http://a.test/docs/2024/",
            "http://a.test/d3/p42.html",
            "http://a.test/item/2024/13",
            "http://a.test/0999/01/",
            "http://a.test/p/12345/6/",
            "http://a.test/list?sort=name&page=42",
        ] {
            assert_eq!(date(none), None, "{none}");
        }
    }

    #[test]
    fn query_dates_are_date_pages() {
        assert_eq!(
            date("http://a.test/cal?date=2024-05-17"),
            Some((2024, 5, Some(17), true))
        );
        assert_eq!(
            date("http://a.test/events?month=5&year=2024"),
            Some((2024, 5, None, true))
        );
        assert_eq!(
            date("http://a.test/c?y=2031&m=12&d=3"),
            Some((2031, 12, Some(3), true))
        );
        assert_eq!(date("http://a.test/c?year=2024"), None, "no month");
    }

    #[test]
    fn days_since_1970_to_year_and_month() {
        assert_eq!(year_month(0), (1970, 1));
        assert_eq!(year_month(-1), (1969, 12));
        assert_eq!(year_month(59), (1970, 3), "1970-03-01");
        // 2000-02-29 is day 11016, 2024-12-31 day 20088, 2025-01-01 day 20089.
        assert_eq!(year_month(11_016), (2000, 2));
        assert_eq!(year_month(20_088), (2024, 12));
        assert_eq!(year_month(20_089), (2025, 1));
        let d = UrlDate {
            year: 2025,
            month: 1,
            day: None,
            page: true,
        };
        assert_eq!(d.month_index(), 2025 * 12);
    }
}
