//! [`Schedule`]: the time-of-day speed schedule (`manager.speed.schedule`), parsed
//! and evaluated.
//!
//! Times are UTC minutes of the day, on purpose: the same instant means the same
//! target on every machine of a distributed crawl, and no window is skipped or
//! doubled when the local clock changes for daylight saving. A window `[from, to)`
//! contains `from` and not `to`; when `to` is earlier than `from` it wraps past
//! midnight (`22:00` to `06:00` is the night). `from == to` is refused (an empty
//! window, or a whole day, which `frontier.target_pages_per_sec` already says), so
//! are overlapping windows (which target would win is not obvious).
//!
//! This module must never read a clock: times are wall-clock milliseconds since
//! the Unix epoch, passed in. Cost: O(windows) per question (a handful).

use super::speed::ScheduleEntry;
use crate::service::config::InvalidConfig;

const MINUTE_MS: u64 = 60_000;
const NOT_HHMM: &str = "is not a time of day HH:MM (00:00 to 23:59, UTC)";
const DAY_MINUTES: u16 = 24 * 60;
const DAY_MS: u64 = DAY_MINUTES as u64 * MINUTE_MS;

/// One window: minutes of the day (UTC) and its target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    /// First minute in the window.
    pub from: u16,
    /// First minute after it.
    pub to: u16,
    /// The target within it, pages per second.
    pub pages_per_sec: f64,
}

impl Window {
    /// Whether minute `m` of the day is in the window.
    pub fn contains(&self, m: u16) -> bool {
        if self.from < self.to {
            (self.from..self.to).contains(&m)
        } else {
            m >= self.from || m < self.to
        }
    }

    /// `"HH:MM-HH:MM UTC"`, for logs and replies.
    pub fn label(&self) -> String {
        format!("{}-{} UTC", hhmm(self.from), hhmm(self.to))
    }
}

/// The validated schedule: windows that do not overlap.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Schedule {
    windows: Vec<Window>,
}

impl Schedule {
    /// Parses and checks the config's entries; the error names the entry (1-based).
    pub fn parse(entries: &[ScheduleEntry]) -> Result<Schedule, InvalidConfig> {
        let invalid = |message: String| InvalidConfig {
            field: "manager.speed.schedule",
            message,
        };
        let mut windows: Vec<Window> = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let n = i + 1;
            let from = parse_hhmm(&e.from)
                .ok_or_else(|| invalid(format!("entry {n}: from {:?} {NOT_HHMM}", e.from)))?;
            let to = parse_hhmm(&e.to)
                .ok_or_else(|| invalid(format!("entry {n}: to {:?} {NOT_HHMM}", e.to)))?;
            if from == to {
                return Err(invalid(format!(
                    "entry {n}: from and to are both {}; for the whole day set \
                     manager.frontier.target_pages_per_sec instead",
                    e.from
                )));
            }
            if !(e.pages_per_sec.is_finite() && e.pages_per_sec > 0.0) {
                return Err(invalid(format!(
                    "entry {n}: pages_per_sec must be a positive number"
                )));
            }
            let w = Window {
                from,
                to,
                pages_per_sec: e.pages_per_sec,
            };
            if let Some(j) = windows
                .iter()
                .position(|o| o.contains(w.from) || w.contains(o.from))
            {
                return Err(invalid(format!(
                    "entry {n} ({}) overlaps entry {} ({})",
                    w.label(),
                    j + 1,
                    windows[j].label()
                )));
            }
            windows.push(w);
        }
        Ok(Schedule { windows })
    }

    /// The window in force at `wall_ms`, if any.
    pub fn window_at(&self, wall_ms: u64) -> Option<&Window> {
        let m = minute_of_day(wall_ms);
        self.windows.iter().find(|w| w.contains(m))
    }

    /// The first time after `wall_ms` at which a window starts or ends; `None`
    /// without windows.
    pub fn next_boundary(&self, wall_ms: u64) -> Option<u64> {
        let day_start = wall_ms - wall_ms % DAY_MS;
        self.windows
            .iter()
            .flat_map(|w| [w.from, w.to])
            .map(|m| {
                let at = day_start + u64::from(m) * MINUTE_MS;
                if at <= wall_ms { at + DAY_MS } else { at }
            })
            .min()
    }
}

/// The UTC minute of the day of `wall_ms`.
fn minute_of_day(wall_ms: u64) -> u16 {
    // Less than 1440: the cast cannot truncate.
    ((wall_ms % DAY_MS) / MINUTE_MS) as u16
}

/// `"HH:MM"` (00:00 to 23:59, two digits each) as minutes of the day.
fn parse_hhmm(s: &str) -> Option<u16> {
    let (h, m) = s.split_once(':')?;
    let two_digits = |p: &str| p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit());
    if !(two_digits(h) && two_digits(m)) {
        return None;
    }
    let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// Minutes of the day as `"HH:MM"`.
pub(crate) fn hhmm(m: u16) -> String {
    format!("{:02}:{:02}", m / 60, m % 60)
}

/// The UTC time of day of `wall_ms` as `"HH:MM"`.
pub(crate) fn hhmm_of(wall_ms: u64) -> String {
    hhmm(minute_of_day(wall_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(from: &str, to: &str, pages_per_sec: f64) -> ScheduleEntry {
        ScheduleEntry {
            from: from.into(),
            to: to.into(),
            pages_per_sec,
        }
    }

    /// Wall time of `hh:mm:ss` UTC on day `day` after the epoch.
    fn at(day: u64, hh: u64, mm: u64, ss: u64) -> u64 {
        day * DAY_MS + ((hh * 60 + mm) * 60 + ss) * 1000
    }

    fn rate(s: &Schedule, wall: u64) -> Option<f64> {
        s.window_at(wall).map(|w| w.pages_per_sec)
    }

    #[test]
    fn windows_contain_their_start_not_their_end_and_wrap_past_midnight() {
        let s = Schedule::parse(&[entry("22:00", "06:00", 500.0), entry("12:00", "13:30", 5.0)])
            .unwrap();
        let d = 19_000; // Some day in 2022.
        assert_eq!(rate(&s, at(d, 21, 59, 59)), None);
        assert_eq!(rate(&s, at(d, 22, 0, 0)), Some(500.0));
        assert_eq!(rate(&s, at(d, 23, 59, 59)), Some(500.0));
        assert_eq!(rate(&s, at(d + 1, 0, 0, 0)), Some(500.0), "past midnight");
        assert_eq!(rate(&s, at(d + 1, 5, 59, 59)), Some(500.0));
        assert_eq!(rate(&s, at(d + 1, 6, 0, 0)), None, "the end is out");
        assert_eq!(rate(&s, at(d, 12, 0, 0)), Some(5.0));
        assert_eq!(rate(&s, at(d, 13, 29, 59)), Some(5.0));
        assert_eq!(rate(&s, at(d, 13, 30, 0)), None);
        assert_eq!(
            s.window_at(at(d, 23, 0, 0)).unwrap().label(),
            "22:00-06:00 UTC"
        );
    }

    #[test]
    fn the_next_boundary_is_the_next_start_or_end_even_tomorrow() {
        let s = Schedule::parse(&[entry("22:00", "06:00", 500.0), entry("12:00", "13:30", 5.0)])
            .unwrap();
        let d = 19_000;
        assert_eq!(s.next_boundary(at(d, 7, 0, 0)), Some(at(d, 12, 0, 0)));
        assert_eq!(
            s.next_boundary(at(d, 12, 0, 0)),
            Some(at(d, 13, 30, 0)),
            "strictly after"
        );
        assert_eq!(s.next_boundary(at(d, 13, 30, 0)), Some(at(d, 22, 0, 0)));
        assert_eq!(
            s.next_boundary(at(d, 23, 0, 0)),
            Some(at(d + 1, 6, 0, 0)),
            "wraps"
        );
        assert_eq!(s.next_boundary(at(d, 5, 0, 0)), Some(at(d, 6, 0, 0)));
        let one = Schedule::parse(&[entry("00:00", "00:01", 1.0)]).unwrap();
        assert_eq!(one.next_boundary(at(d, 0, 0, 30)), Some(at(d, 0, 1, 0)));
        assert_eq!(one.next_boundary(at(d, 0, 1, 0)), Some(at(d + 1, 0, 0, 0)));
        assert_eq!(Schedule::default().next_boundary(at(d, 0, 0, 0)), None);
    }

    #[test]
    fn bad_entries_are_refused_with_their_position() {
        let msg = |entries: &[ScheduleEntry]| Schedule::parse(entries).unwrap_err().message;
        assert!(msg(&[entry("7:00", "08:00", 1.0)]).starts_with("entry 1: from"));
        assert!(msg(&[entry("07:00", "24:00", 1.0)]).starts_with("entry 1: to"));
        assert!(msg(&[entry("07:60", "08:00", 1.0)]).contains("not a time of day HH:MM"));
        assert!(msg(&[entry("07:00", "07:00", 1.0)]).contains("whole day"));
        assert!(msg(&[entry("07:00", "08:00", 0.0)]).contains("positive"));
        assert!(msg(&[entry("07:00", "08:00", f64::INFINITY)]).contains("positive"));
        let overlap = msg(&[entry("22:00", "06:00", 1.0), entry("05:00", "07:00", 2.0)]);
        assert_eq!(
            overlap,
            "entry 2 (05:00-07:00 UTC) overlaps entry 1 (22:00-06:00 UTC)"
        );
        assert!(
            msg(&[entry("01:00", "02:00", 1.0), entry("00:00", "23:00", 2.0)]).contains("overlaps")
        );
        // Touching windows do not overlap.
        Schedule::parse(&[entry("22:00", "06:00", 1.0), entry("06:00", "22:00", 2.0)]).unwrap();
        assert_eq!(hhmm_of(at(3, 9, 5, 59)), "09:05");
    }
}
