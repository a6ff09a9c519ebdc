//! `WARC-Date` values: ISO 8601 UTC timestamps such as `2026-11-22T10:00:00Z`.
//!
//! Std-only civil-date arithmetic (Howard Hinnant's `days_from_civil` algorithm),
//! not a date crate: WARC needs one fixed format in one time zone, the conversion is
//! twenty lines with exhaustive tests below, and formatting writes straight into the
//! caller's buffer with no allocation, which matters at thousands of records a second.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A UTC instant between 1970-01-01 and 9999-12-31, as written in `WARC-Date`.
///
/// Displays as `YYYY-MM-DDThh:mm:ssZ`, with a fraction of a second (WARC 1.1) only
/// when `nanos` is not zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WarcDate {
    secs: u64,
    nanos: u32,
}

/// Text that is not a WARC date (`YYYY-MM-DDThh:mm:ss[.fraction]Z`, years 1970 to 9999).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid WARC date {0:?}: expected YYYY-MM-DDThh:mm:ssZ")]
pub struct InvalidDate(pub String);

/// Seconds of 9999-12-31T23:59:59Z since the Unix epoch.
const MAX_SECS: u64 = 253_402_300_799;

impl WarcDate {
    /// The current time, truncated to whole seconds.
    pub fn now() -> Self {
        Self::from_system_time(SystemTime::now())
    }

    /// `t` truncated to whole seconds (clamped to 1970 through 9999).
    pub fn from_system_time(t: SystemTime) -> Self {
        let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Self {
            secs: secs.min(MAX_SECS),
            nanos: 0,
        }
    }

    /// From Unix seconds and nanoseconds; `None` past 9999 or if `nanos` ≥ 10⁹.
    pub fn from_unix(secs: u64, nanos: u32) -> Option<Self> {
        (secs <= MAX_SECS && nanos < 1_000_000_000).then_some(Self { secs, nanos })
    }

    /// Whole seconds since the Unix epoch.
    pub fn unix_seconds(&self) -> u64 {
        self.secs
    }

    /// Nanoseconds within the second.
    pub fn nanos(&self) -> u32 {
        self.nanos
    }

    /// The same instant as a `SystemTime`.
    pub fn to_system_time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::new(self.secs, self.nanos)
    }

    /// The 14-digit `YYYYMMDDhhmmss` timestamp that CDX(J) indexes and wayback URLs use.
    pub fn to_cdx_timestamp(&self) -> String {
        let (y, mo, d, h, mi, s) = self.fields();
        format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}")
    }

    fn fields(&self) -> (u64, u64, u64, u64, u64, u64) {
        let (days, rem) = (self.secs / 86_400, self.secs % 86_400);
        let (y, m, d) = civil_from_days(days);
        (y, m, d, rem / 3600, rem / 60 % 60, rem % 60)
    }
}

impl fmt::Display for WarcDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, mo, d, h, mi, s) = self.fields();
        write!(f, "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}")?;
        if self.nanos != 0 {
            let mut digits = format!("{:09}", self.nanos);
            while digits.ends_with('0') {
                digits.pop();
            }
            write!(f, ".{digits}")?;
        }
        f.write_str("Z")
    }
}

impl FromStr for WarcDate {
    type Err = InvalidDate;

    fn from_str(s: &str) -> Result<Self, InvalidDate> {
        parse(s.as_bytes()).ok_or_else(|| InvalidDate(s.chars().take(64).collect()))
    }
}

fn parse(b: &[u8]) -> Option<WarcDate> {
    let num = |range: std::ops::Range<usize>| -> Option<u64> {
        let digits = b.get(range)?;
        digits.iter().try_fold(0u64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
        })
    };
    let punct = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if b.len() < 20 || punct.iter().any(|&(i, c)| b[i] != c) || b[b.len() - 1] != b'Z' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let nanos = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', frac @ ..] if (1..=9).contains(&frac.len()) => {
            let n = num(20..20 + frac.len())?;
            (n * 10u64.pow(9 - frac.len() as u32)) as u32
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
    Some(WarcDate { secs, nanos })
}

fn is_leap(y: u64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a date in the proleptic Gregorian calendar (year ≥ 1970).
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    // Shift to a year starting in March so the leap day comes last; eras of 400 years.
    let y = if m <= 2 { y - 1 } else { y };
    let (era, yoe) = (y / 400, y % 400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_known_dates() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_795_341_600, "2026-11-22T10:00:00Z"),
            (4_107_542_399, "2100-02-28T23:59:59Z"),
            (MAX_SECS, "9999-12-31T23:59:59Z"),
        ];
        for (secs, text) in cases {
            let d = WarcDate::from_unix(secs, 0).unwrap();
            assert_eq!(d.to_string(), text);
            assert_eq!(text.parse::<WarcDate>().unwrap(), d);
        }
        let d = WarcDate::from_unix(1_795_341_600, 0).unwrap();
        assert_eq!(d.to_cdx_timestamp(), "20261122100000");
    }

    #[test]
    fn every_day_round_trips() {
        // Every day from 1970 to 2500, through the calendar and back.
        let mut days = 0;
        for y in 1970..2500 {
            for m in 1..=12 {
                for d in 1..=days_in_month(y, m) {
                    assert_eq!(days_from_civil(y, m, d), days);
                    assert_eq!(civil_from_days(days), (y, m, d));
                    days += 1;
                }
            }
        }
    }

    #[test]
    fn fractions() {
        let d: WarcDate = "2026-11-22T10:00:00.25Z".parse().unwrap();
        assert_eq!(d.nanos(), 250_000_000);
        assert_eq!(d.to_string(), "2026-11-22T10:00:00.25Z");
        let d: WarcDate = "2026-11-22T10:00:00.123456789Z".parse().unwrap();
        assert_eq!(d.to_string(), "2026-11-22T10:00:00.123456789Z");
    }

    #[test]
    fn rejects_malformed_dates() {
        for bad in [
            "",
            "2026-11-22",
            "2026-11-22T10:00:00",
            "2026-11-22 10:00:00Z",
            "2026-11-22T10:00:00+00:00",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-11-22T24:00:00Z",
            "2026-11-22T10:00:60Z",
            "1969-12-31T23:59:59Z",
            "2026-11-22T10:00:00.Z",
            "2026-11-22T10:00:00.1234567890Z",
            "+026-11-22T10:00:00Z",
            "２026-11-22T10:00:00Z",
        ] {
            assert!(bad.parse::<WarcDate>().is_err(), "{bad:?}");
        }
    }
}
