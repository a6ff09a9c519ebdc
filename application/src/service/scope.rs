//! Scope and trap rules: which canonical links are followed at all. Checked before
//! the seen-set insert, so a rejected link costs nothing downstream (and may still
//! be followed if found again at a smaller depth).
//!
//! Rules, in order: allowed host suffixes, depth, deny regexes, repeated path
//! segment, calendar depth. The URL length and the scheme are canonicalization's
//! (see [`crate::canon`]); the per-host budget is applied when new URLs are
//! requested (it needs the seen set's answer). O(URL length) per check plus the
//! regexes (linear-time, the `regex` crate).

use regex::Regex;
use url::Url;

use super::config::{AppConfig, invalid};
use super::error::AppError;

/// Why a link is not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfScope {
    /// The host is not under an allowed domain.
    Domain,
    /// Deeper than `max_depth`.
    Depth,
    /// Matches a deny pattern.
    Denied,
    /// A path segment is repeated more than `max_repeated_segment` times.
    RepeatedSegment,
    /// Too deep below a calendar-like path part.
    Calendar,
}

/// The compiled scope rules.
#[derive(Debug, Clone)]
pub struct Scope {
    allowed: Vec<String>,
    max_depth: u32,
    deny: Vec<Regex>,
    max_repeated: u32,
    calendar: Option<Regex>,
    calendar_max_depth: u32,
}

impl Scope {
    /// Compiles the rules of `config`.
    pub fn new(config: &AppConfig) -> Result<Self, AppError> {
        let deny = config
            .deny_patterns
            .iter()
            .map(|p| Regex::new(p).map_err(|e| invalid("deny_patterns", e.to_string())))
            .collect::<Result<_, _>>()?;
        let calendar = match config.calendar_pattern.as_str() {
            "" => None,
            p => Some(Regex::new(p).map_err(|e| invalid("calendar_pattern", e.to_string()))?),
        };
        Ok(Self {
            allowed: config
                .allowed_domains
                .iter()
                .map(|d| d.trim_matches('.').to_ascii_lowercase())
                .filter(|d| !d.is_empty())
                .collect(),
            max_depth: config.depth_limit(),
            deny,
            max_repeated: config.max_repeated_segment,
            calendar,
            calendar_max_depth: config.calendar_max_depth,
        })
    }

    /// Whether `url` (canonical) found at `depth` is followed.
    pub fn check(&self, url: &Url, depth: u32) -> Result<(), OutOfScope> {
        let host = url.host_str().unwrap_or_default();
        if !self.allowed.is_empty()
            && !self.allowed.iter().any(|d| {
                host == d
                    || (host.len() > d.len()
                        && host.ends_with(d.as_str())
                        && host.as_bytes()[host.len() - d.len() - 1] == b'.')
            })
        {
            return Err(OutOfScope::Domain);
        }
        if depth > self.max_depth {
            return Err(OutOfScope::Depth);
        }
        if self.deny.iter().any(|r| r.is_match(url.as_str())) {
            return Err(OutOfScope::Denied);
        }
        let path = url.path();
        if self.max_repeated > 0 && repeated_segment(path) > self.max_repeated {
            return Err(OutOfScope::RepeatedSegment);
        }
        if let Some(m) = self.calendar.as_ref().and_then(|r| r.find(path)) {
            let below = path[m.end()..].split('/').filter(|s| !s.is_empty()).count();
            if below as u32 > self.calendar_max_depth {
                return Err(OutOfScope::Calendar);
            }
        }
        Ok(())
    }
}

/// How many times the most repeated non-empty segment of `path` occurs.
fn repeated_segment(path: &str) -> u32 {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.len() < 2 {
        return segments.len() as u32;
    }
    let mut sorted = segments;
    sorted.sort_unstable();
    let mut best = 1;
    let mut run = 1;
    for w in sorted.windows(2) {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(edit: impl FnOnce(&mut AppConfig)) -> Scope {
        let mut c = AppConfig::default();
        edit(&mut c);
        c.scope().unwrap()
    }

    fn check(s: &Scope, url: &str, depth: u32) -> Result<(), OutOfScope> {
        s.check(&Url::parse(url).unwrap(), depth)
    }

    #[test]
    fn allowed_domains_are_suffixes_on_label_boundaries() {
        let s = scope(|c| c.allowed_domains = vec!["example.com".into(), ".b.test".into()]);
        assert_eq!(check(&s, "https://example.com/", 0), Ok(()));
        assert_eq!(check(&s, "https://www.example.com/", 0), Ok(()));
        assert_eq!(check(&s, "https://x.b.test/", 0), Ok(()));
        assert_eq!(
            check(&s, "https://badexample.com/", 0),
            Err(OutOfScope::Domain)
        );
        assert_eq!(
            check(&s, "https://example.com.evil/", 0),
            Err(OutOfScope::Domain)
        );
        let all = scope(|_| {});
        assert_eq!(check(&all, "https://anything.test/", 0), Ok(()));
    }

    #[test]
    fn depth_and_deny() {
        let s = scope(|c| {
            c.max_depth = 2;
            c.deny_patterns = vec![r"\.pdf$".into()];
        });
        assert_eq!(check(&s, "https://a.test/x", 2), Ok(()));
        assert_eq!(check(&s, "https://a.test/x", 3), Err(OutOfScope::Depth));
        assert_eq!(
            check(&s, "https://a.test/x.pdf", 0),
            Err(OutOfScope::Denied)
        );
    }

    #[test]
    fn repeated_segments_are_traps() {
        let s = scope(|c| c.max_repeated_segment = 2);
        assert_eq!(check(&s, "https://a.test/a/b/a/b", 0), Ok(()));
        assert_eq!(
            check(&s, "https://a.test/a/b/a/b/a", 0),
            Err(OutOfScope::RepeatedSegment)
        );
        let off = scope(|c| c.max_repeated_segment = 0);
        assert_eq!(check(&off, "https://a.test/a/a/a/a/a", 0), Ok(()));
    }

    #[test]
    fn calendar_paths_are_cut_below_the_date() {
        let s = scope(|c| c.calendar_max_depth = 1);
        assert_eq!(check(&s, "https://a.test/cal/2024/05/17/", 0), Ok(()));
        assert_eq!(check(&s, "https://a.test/cal/2024/05/17/day", 0), Ok(()));
        assert_eq!(
            check(&s, "https://a.test/cal/2024/05/17/2024/05/18", 0),
            Err(OutOfScope::Calendar)
        );
        assert_eq!(check(&s, "https://a.test/2024/x/y/z", 0), Ok(()));
        let bad = AppConfig {
            calendar_pattern: "(".into(),
            ..AppConfig::default()
        };
        assert!(matches!(
            bad.scope(),
            Err(AppError::Config {
                field: "calendar_pattern",
                ..
            })
        ));
    }
}
