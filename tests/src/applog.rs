//! What a supervised application's log (`<out>/logs/<name>.log` of `polycrawl
//! demo` or `polycrawl crawl`, at `info`) says of its publications: each
//! `app: published new URLs` line (a generation recorded as published, with how
//! many URLs it requested) with its stamp, and which start of the process wrote it
//! (the supervisor writes `--- polycrawl supervisor: starting NAME again` into the
//! log before each restart).
//!
//! An application killed between publishing a generation's request files and
//! recording it publishes those URLs again after its restart: the window in which
//! a kill can make it refetch a URL opens at its last record before the kill.

use std::path::Path;

/// One `app: published new URLs` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// Its stamp, unix µs.
    pub at_us: u64,
    /// Which start of the process wrote it (0: the first).
    pub run: u32,
    /// The generation recorded.
    pub generation: u64,
    /// URLs it requested.
    pub urls: u64,
}

/// Every publication line of the log at `path`, in order (none if it is absent).
pub fn published(path: &Path) -> Vec<Published> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut run = 0;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = strip_colours(line);
        if line.starts_with("--- polycrawl supervisor: starting ") && line.ends_with(" again") {
            run += 1;
            continue;
        }
        if !line.contains("app: published new URLs") {
            continue;
        }
        let Some(at_us) = line.split_whitespace().next().and_then(rfc3339_us) else {
            continue;
        };
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
        };
        if let (Some(generation), Some(urls)) = (field("generation"), field("urls")) {
            out.push(Published {
                at_us,
                run,
                generation,
                urls,
            });
        }
    }
    out
}

/// Unix microseconds of an RFC 3339 UTC stamp as `tracing` writes it
/// (`2026-11-24T04:55:14.003393Z`).
pub fn rfc3339_us(stamp: &str) -> Option<u64> {
    let (date, time) = stamp.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|p| p.parse::<i64>());
    let (hh, mm, ss) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    // Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let frac_us: i64 = format!("{frac:0<6}").get(..6)?.parse().ok()?;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    u64::try_from(secs * 1_000_000 + frac_us).ok()
}

/// Removes terminal colour codes (`ESC [ ... m`).
pub fn strip_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracing_stamps_read_as_unix_time() {
        assert_eq!(rfc3339_us("1970-01-01T00:00:00.000001Z"), Some(1));
        assert_eq!(
            rfc3339_us("2026-11-24T04:55:14.003393Z"),
            Some(1_795_496_114_003_393)
        );
        assert_eq!(
            rfc3339_us("2000-03-01T00:00:00Z"),
            Some(951_868_800_000_000)
        );
        assert_eq!(rfc3339_us("junk"), None);
        assert_eq!(
            strip_colours(
                "\u{1b}[2m2026-11-24T04:55:14.003393Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m app"
            ),
            "2026-11-24T04:55:14.003393Z  INFO app"
        );
    }

    #[test]
    fn publications_by_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app-p1.log");
        std::fs::write(
            &path,
            "2026-11-24T04:55:14.000001Z  INFO app_bfs::crawl: app: published new URLs generation=3 urls=12\n\
             something else\n\
             --- polycrawl supervisor: app-p1 (pid 5) died (signal 9) after 3.0 s; starting it again in 0.2 s\n\
             --- polycrawl supervisor: starting app-p1 again\n\
             2026-11-24T04:55:15.000002Z  INFO app_bfs::crawl: app: published new URLs generation=4 urls=40\n",
        )
        .unwrap();
        let p = published(&path);
        assert_eq!(
            p,
            [
                Published {
                    at_us: 1_795_496_114_000_001,
                    run: 0,
                    generation: 3,
                    urls: 12
                },
                Published {
                    at_us: 1_795_496_115_000_002,
                    run: 1,
                    generation: 4,
                    urls: 40
                }
            ]
        );
        assert!(published(&dir.path().join("absent.log")).is_empty());
    }
}
