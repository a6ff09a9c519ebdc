//! Scope and trap rules: which canonical links are followed at all. Checked before
//! the seen-set insert, so a rejected link costs nothing downstream (and may still
//! be followed if found again at a smaller depth).
//!
//! The scope is the user's word. By default ([`ScopeKind::Site`]) a crawl keeps to
//! the sites of its seeds, as Heritrix (the seeds' SURT prefixes), wget (the
//! seeds' hosts) and Browsertrix (the seeds' prefixes) do; `scope: open` makes it a
//! crawl of every host (Polybot's research crawl), where hosts are nobody's word
//! and get budgets (`budget.rs`). `allowed_domains` and `allow_patterns` add to
//! any scope (with `open` and `allowed_domains` set, only those domains are
//! crawled); `deny_patterns` take away from it.
//!
//! Rules, in order: scope, depth, deny regexes, repeated path segment, calendar
//! depth. The URL length and the scheme are canonicalization's (see
//! [`pages::canon`]); the per-host budget is applied when new URLs are requested (it
//! needs the seen set's answer). O(URL length) per check plus the regexes
//! (linear-time, the `regex` crate); the seeds' names are a hash set, looked up
//! once per label of the host (or per `/` of the path for `prefix`): memory
//! O(seeds).
//!
//! This module never counts or records cuts: the caller does.

use std::collections::HashSet;
use std::fmt;

use regex::Regex;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::AppError;

/// Which hosts and URLs a crawl keeps to (`app.scope`; see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ScopeKind {
    /// The seeds' sites: a seed's host without a leading `www.`, and every host
    /// under it (seed `https://www.acme.test/` admits `acme.test`,
    /// `www.acme.test` and `docs.acme.test`, not `acme.org`).
    #[default]
    Site,
    /// The seeds' hosts exactly (wget's default).
    Host,
    /// The seeds' registered domains (public suffix list) and every host under
    /// them (seed `docs.acme.co.uk` admits `www.acme.co.uk`).
    Domain,
    /// URLs under a seed's path prefix, up to its last `/`, on either scheme
    /// (Browsertrix's `prefix`: seed `https://acme.test/docs/index.html` admits
    /// `http://acme.test/docs/a/b.html`, not `https://acme.test/blog/`).
    Prefix,
    /// Every host (or, with `allowed_domains`, every host under them): an open
    /// crawl, whose hosts nobody vetted; host budgets apply.
    Open,
}

impl ScopeKind {
    /// Every kind, for help texts.
    pub const ALL: [ScopeKind; 5] = [
        ScopeKind::Site,
        ScopeKind::Host,
        ScopeKind::Domain,
        ScopeKind::Prefix,
        ScopeKind::Open,
    ];

    /// Its name in the config file, on the command line and in the summary.
    pub fn name(self) -> &'static str {
        match self {
            ScopeKind::Site => "site",
            ScopeKind::Host => "host",
            ScopeKind::Domain => "domain",
            ScopeKind::Prefix => "prefix",
            ScopeKind::Open => "open",
        }
    }

    /// Whether the hosts in scope are the user's word (every kind but `open`):
    /// then no host budget cuts them, only the ceiling `host_budget_max`.
    pub fn is_scoped(self) -> bool {
        self != ScopeKind::Open
    }
}

impl fmt::Display for ScopeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ScopeKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("{s:?}: expected site, host, domain, prefix or open"))
    }
}

/// Why a link is not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfScope {
    /// Outside the crawl's scope (its kind, `allowed_domains`, `allow_patterns`).
    Outside,
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
    kind: ScopeKind,
    /// The seeds' names for `site`, `host` and `domain` (lower case), or their
    /// prefixes (`host[:port]/path/`, no scheme) for `prefix`.
    seeds: HashSet<String>,
    allowed: Vec<String>,
    allow: Vec<Regex>,
    max_depth: u32,
    deny: Vec<Regex>,
    max_repeated: u32,
    calendar: Option<Regex>,
    calendar_max_depth: u32,
}

/// What a [`Scope`] is compiled from: the app config's `scope`,
/// `allowed_domains`, `allow_patterns`, `deny_patterns`, `max_repeated_segment`,
/// `calendar_pattern` and `calendar_max_depth`, and the depth limit it implies
/// (`AppConfig::scope` fills it).
#[derive(Debug, Clone, Copy)]
pub struct ScopeRules<'a> {
    /// The kind of scope.
    pub kind: ScopeKind,
    /// Host suffixes added to the scope.
    pub allowed_domains: &'a [String],
    /// Regexes of URLs in scope whatever the kind.
    pub allow_patterns: &'a [String],
    /// Regexes of URLs never requested.
    pub deny_patterns: &'a [String],
    /// Deepest link followed.
    pub max_depth: u32,
    /// Most repeats of one path segment.
    pub max_repeated_segment: u32,
    /// Regex of a calendar-like part of a path; empty: no calendar rule.
    pub calendar_pattern: &'a str,
    /// Segments allowed after a calendar match.
    pub calendar_max_depth: u32,
}

impl Scope {
    /// Compiles `rules`; the seeds come with [`Scope::add_seed`].
    pub fn new(rules: ScopeRules<'_>) -> Result<Self, AppError> {
        let invalid = |field: &'static str, reason: String| AppError::Config { field, reason };
        let regexes = |field: &'static str, patterns: &[String]| -> Result<Vec<Regex>, AppError> {
            patterns
                .iter()
                .map(|p| Regex::new(p).map_err(|e| invalid(field, e.to_string())))
                .collect()
        };
        let calendar = match rules.calendar_pattern {
            "" => None,
            p => Some(Regex::new(p).map_err(|e| invalid("calendar_pattern", e.to_string()))?),
        };
        Ok(Self {
            kind: rules.kind,
            seeds: HashSet::new(),
            allowed: rules
                .allowed_domains
                .iter()
                .map(|d| d.trim_matches('.').to_ascii_lowercase())
                .filter(|d| !d.is_empty())
                .collect(),
            allow: regexes("allow_patterns", rules.allow_patterns)?,
            max_depth: rules.max_depth,
            deny: regexes("deny_patterns", rules.deny_patterns)?,
            max_repeated: rules.max_repeated_segment,
            calendar,
            calendar_max_depth: rules.calendar_max_depth,
        })
    }

    /// The kind of scope.
    pub fn kind(&self) -> ScopeKind {
        self.kind
    }

    /// Takes `seed` (canonical) into the scope: its site, host, registered
    /// domain or prefix, by the kind. Nothing for `open`.
    pub fn add_seed(&mut self, seed: &Url) {
        let host = seed.host_str().unwrap_or_default().to_ascii_lowercase();
        let name = match self.kind {
            ScopeKind::Open => return,
            ScopeKind::Host => host,
            ScopeKind::Site => match host.strip_prefix("www.") {
                Some(rest) if rest.contains('.') => rest.to_owned(),
                _ => host,
            },
            ScopeKind::Domain => match seed.domain().and_then(psl::domain_str) {
                Some(domain) => domain.to_ascii_lowercase(),
                None => host,
            },
            ScopeKind::Prefix => {
                let path = seed.path();
                let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
                format!("{}{dir}", authority(seed))
            }
        };
        self.seeds.insert(name);
    }

    /// How the summary and the logs name this scope: `site (16 seed sites)`,
    /// `open`, ...
    pub fn describe(&self) -> String {
        let mut text = self.kind.name().to_owned();
        let what = match self.kind {
            ScopeKind::Open => None,
            ScopeKind::Site => Some("seed sites"),
            ScopeKind::Host => Some("seed hosts"),
            ScopeKind::Domain => Some("seed domains"),
            ScopeKind::Prefix => Some("seed prefixes"),
        };
        let mut parts = Vec::new();
        if let Some(what) = what {
            parts.push(format!("{} {what}", self.seeds.len()));
        }
        if !self.allowed.is_empty() {
            parts.push(format!("{} allowed domains", self.allowed.len()));
        }
        if !self.allow.is_empty() {
            parts.push(format!("{} allow patterns", self.allow.len()));
        }
        if !parts.is_empty() {
            text.push_str(&format!(" ({})", parts.join(", ")));
        }
        text
    }

    /// Whether `url` is inside the scope (its kind, `allowed_domains`,
    /// `allow_patterns`), whatever its depth.
    pub fn contains(&self, url: &Url) -> bool {
        let host = url.host_str().unwrap_or_default();
        if under_any(host, self.allowed.iter().map(String::as_str)) {
            return true;
        }
        if self.allow.iter().any(|r| r.is_match(url.as_str())) {
            return true;
        }
        match self.kind {
            ScopeKind::Open => self.allowed.is_empty(),
            ScopeKind::Host => self.seeds.contains(host),
            ScopeKind::Site | ScopeKind::Domain => suffixes(host).any(|s| self.seeds.contains(s)),
            ScopeKind::Prefix => {
                // `host[:port]/path` once; each prefix up to a `/` is a slice of it.
                let full = format!("{}{}", authority(url), url.path());
                full.match_indices('/')
                    .any(|(i, _)| self.seeds.contains(&full[..=i]))
            }
        }
    }

    /// Whether `url` (canonical) found at `depth` is followed.
    pub fn check(&self, url: &Url, depth: u32) -> Result<(), OutOfScope> {
        if !self.contains(url) {
            return Err(OutOfScope::Outside);
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

/// The host, and with it its port when the URL names one (`acme.test:8080`).
fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

/// `host` and every name it is under (`a.b.test`, `b.test`, `test`).
fn suffixes(host: &str) -> impl Iterator<Item = &str> {
    std::iter::once(host).chain(host.match_indices('.').map(move |(i, _)| &host[i + 1..]))
}

/// Whether `host` is one of `names` or under one, on a label boundary.
fn under_any<'a>(host: &str, mut names: impl Iterator<Item = &'a str>) -> bool {
    names.any(|d| {
        host == d
            || (host.len() > d.len()
                && host.ends_with(d)
                && host.as_bytes()[host.len() - d.len() - 1] == b'.')
    })
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
    use crate::AppConfig;

    /// The rules of an open crawl edited by `edit`.
    fn scope(edit: impl FnOnce(&mut AppConfig)) -> Scope {
        let mut c = AppConfig {
            scope: ScopeKind::Open,
            ..AppConfig::default()
        };
        edit(&mut c);
        c.scope().unwrap()
    }

    /// The rules of a `kind` crawl of `seeds`.
    fn seeded(kind: ScopeKind, seeds: &[&str]) -> Scope {
        let mut s = scope(|c| c.scope = kind);
        for seed in seeds {
            s.add_seed(&Url::parse(seed).unwrap());
        }
        s
    }

    fn inside(s: &Scope, url: &str) -> bool {
        check(s, url, 0) != Err(OutOfScope::Outside)
    }

    #[test]
    fn the_default_scope_is_the_seeds_sites() {
        assert_eq!(AppConfig::default().scope, ScopeKind::Site);
        let s = seeded(
            ScopeKind::Site,
            &["https://www.acme.test/docs/", "http://wiki.other.test/"],
        );
        for url in [
            "https://www.acme.test/",
            "http://acme.test/a",
            "https://docs.acme.test/x",
            "https://wiki.other.test/y",
            "https://a.wiki.other.test/y",
        ] {
            assert!(inside(&s, url), "{url}");
        }
        for url in [
            "https://acme.org/",
            "https://other.test/",
            "https://www.other.test/",
            "https://badacme.test/",
        ] {
            assert!(!inside(&s, url), "{url}");
        }
        assert_eq!(s.describe(), "site (2 seed sites)");
        let none = seeded(ScopeKind::Site, &[]);
        assert!(!inside(&none, "https://acme.test/"), "no seeds, no sites");
    }

    #[test]
    fn host_domain_and_prefix_scopes() {
        let host = seeded(ScopeKind::Host, &["https://www.acme.test/"]);
        assert!(inside(&host, "http://www.acme.test/a"));
        assert!(!inside(&host, "http://acme.test/a"));
        assert!(!inside(&host, "http://x.www.acme.test/a"));
        let domain = seeded(
            ScopeKind::Domain,
            &["https://docs.acme.co.uk/", "https://127.0.0.1:8080/"],
        );
        assert!(inside(&domain, "http://www.acme.co.uk/"));
        assert!(inside(&domain, "http://acme.co.uk/"));
        assert!(
            !inside(&domain, "http://other.co.uk/"),
            "co.uk is a public suffix"
        );
        assert!(inside(&domain, "http://127.0.0.1/"));
        let prefix = seeded(
            ScopeKind::Prefix,
            &["https://acme.test/docs/index.html", "http://b.test:8080/"],
        );
        assert!(inside(&prefix, "http://acme.test/docs/a/b.html"));
        assert!(inside(&prefix, "https://acme.test/docs/"));
        assert!(!inside(&prefix, "https://acme.test/docs"));
        assert!(!inside(&prefix, "https://acme.test/blog/"));
        assert!(inside(&prefix, "http://b.test:8080/any"));
        assert!(!inside(&prefix, "http://b.test/any"), "another port");
    }

    #[test]
    fn allowed_domains_and_allow_patterns_add_to_the_scope() {
        let mut s = scope(|c| {
            c.scope = ScopeKind::Site;
            c.allowed_domains = vec!["cdn.test".into()];
            c.allow_patterns = vec![r"^https://files\.test/pub/".into()];
        });
        s.add_seed(&Url::parse("https://acme.test/").unwrap());
        assert!(inside(&s, "https://acme.test/"));
        assert!(inside(&s, "https://img.cdn.test/a.png"));
        assert!(inside(&s, "https://files.test/pub/x"));
        assert!(!inside(&s, "https://files.test/private/x"));
        assert_eq!(
            s.describe(),
            "site (1 seed sites, 1 allowed domains, 1 allow patterns)"
        );
        let open = scope(|c| c.allowed_domains = vec!["cdn.test".into()]);
        assert!(inside(&open, "https://a.cdn.test/"));
        assert!(
            !inside(&open, "https://acme.test/"),
            "open within allowed_domains"
        );
        for kind in ScopeKind::ALL {
            assert_eq!(kind.name().parse::<ScopeKind>(), Ok(kind));
        }
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
            Err(OutOfScope::Outside)
        );
        assert_eq!(
            check(&s, "https://example.com.evil/", 0),
            Err(OutOfScope::Outside)
        );
        let all = scope(|c| c.allowed_domains.clear());
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
