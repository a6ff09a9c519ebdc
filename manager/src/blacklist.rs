//! The blacklist: host names and domain suffixes whose URLs are never fetched
//! (DESIGN.md section 4). Matched URLs end with the `blacklisted` outcome.
//!
//! Entries, in their text form (the admin page and the persisted list use it):
//! - `example.com`: exactly that host name (any scheme and port);
//! - `*.example.com` or `.example.com`: `example.com` and every name under it.
//!
//! Names are compared lower-case, without a trailing dot; IP literals are exact
//! entries. The frontier persists the list in RocksDB (`meta`), checks it when a URL
//! is loaded and again when a host is about to be dispatched, so an entry added at run
//! time also drops URLs already queued.
//!
//! Cost: matching a name is O(labels) hash lookups (one per suffix of the name); memory
//! is one string per entry. This module must never do I/O.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

/// One blacklist entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BlacklistEntry {
    /// Exactly this host name.
    Host(String),
    /// This domain and every name under it.
    Domain(String),
}

/// An entry's text is not a host name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid blacklist entry {0:?}: expected host.name, *.domain or .domain")]
pub struct InvalidEntry(pub String);

impl FromStr for BlacklistEntry {
    type Err = InvalidEntry;

    fn from_str(text: &str) -> Result<Self, InvalidEntry> {
        let t = text.trim().trim_end_matches('.').to_ascii_lowercase();
        let (domain, name) = if let Some(rest) = t.strip_prefix("*.") {
            (true, rest.to_owned())
        } else if let Some(rest) = t.strip_prefix('.') {
            (true, rest.to_owned())
        } else {
            (false, t)
        };
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'))
            });
        let bracketed = name.starts_with('[') && name.ends_with(']') && !domain;
        if !valid && !bracketed {
            return Err(InvalidEntry(text.to_owned()));
        }
        Ok(if domain {
            BlacklistEntry::Domain(name)
        } else {
            BlacklistEntry::Host(name)
        })
    }
}

impl fmt::Display for BlacklistEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlacklistEntry::Host(h) => f.write_str(h),
            BlacklistEntry::Domain(d) => write!(f, "*.{d}"),
        }
    }
}

/// The set of blacklisted hosts and domains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blacklist {
    hosts: HashSet<String>,
    domains: HashSet<String>,
}

impl Blacklist {
    /// An empty blacklist.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `entry`; returns false if it was already there.
    pub fn insert(&mut self, entry: BlacklistEntry) -> bool {
        match entry {
            BlacklistEntry::Host(h) => self.hosts.insert(h),
            BlacklistEntry::Domain(d) => self.domains.insert(d),
        }
    }

    /// Removes `entry`; returns false if it was not there.
    pub fn remove(&mut self, entry: &BlacklistEntry) -> bool {
        match entry {
            BlacklistEntry::Host(h) => self.hosts.remove(h),
            BlacklistEntry::Domain(d) => self.domains.remove(d),
        }
    }

    /// Every entry, hosts first, each group sorted.
    pub fn entries(&self) -> Vec<BlacklistEntry> {
        let hosts = self.hosts.iter().cloned().map(BlacklistEntry::Host);
        let domains = self.domains.iter().cloned().map(BlacklistEntry::Domain);
        let mut all: Vec<BlacklistEntry> = hosts.chain(domains).collect();
        all.sort();
        all
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.hosts.len() + self.domains.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `host` (a host name as the `url` crate gives it: lower-case, punycode)
    /// is blacklisted, exactly or through one of its domains. O(labels).
    pub fn matches(&self, host: &str) -> bool {
        if self.is_empty() {
            return false;
        }
        let host = host.trim_end_matches('.');
        if self.hosts.contains(host) {
            return true;
        }
        if self.domains.is_empty() {
            return false;
        }
        let mut rest = host;
        loop {
            if self.domains.contains(rest) {
                return true;
            }
            match rest.split_once('.') {
                Some((_, tail)) => rest = tail,
                None => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Blacklist {
        let mut b = Blacklist::new();
        for e in entries {
            b.insert(e.parse().unwrap());
        }
        b
    }

    #[test]
    fn hosts_match_exactly_and_domains_match_their_subtree() {
        let b = list(&["spam.example", "*.tracker.net", ".evil.org"]);
        assert!(b.matches("spam.example"));
        assert!(!b.matches("www.spam.example"));
        assert!(b.matches("tracker.net"));
        assert!(b.matches("a.b.tracker.net"));
        assert!(!b.matches("nottracker.net"));
        assert!(b.matches("x.evil.org."));
        assert!(!b.matches("evil.org.example"));
        assert!(!b.matches("example.com"));
    }

    #[test]
    fn entries_parse_and_print() {
        assert_eq!(
            "*.Example.COM.".parse::<BlacklistEntry>().unwrap(),
            BlacklistEntry::Domain("example.com".into())
        );
        assert_eq!(
            BlacklistEntry::Domain("example.com".into()).to_string(),
            "*.example.com"
        );
        assert!("".parse::<BlacklistEntry>().is_err());
        assert!("a..b".parse::<BlacklistEntry>().is_err());
        assert!("a/b".parse::<BlacklistEntry>().is_err());
        let mut b = list(&["a.com", "*.b.com"]);
        assert_eq!(b.len(), 2);
        assert!(b.remove(&"a.com".parse().unwrap()));
        assert!(!b.matches("a.com"));
    }
}
