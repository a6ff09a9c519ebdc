//! Which application part owns a host, when a crawl is split into K parts
//! (DESIGN.md sections 7 and 10; Polybot section 2.4).
//!
//! A host belongs to exactly one part, so robots.txt and DNS are never paid twice and
//! a host's politeness lives in one place. The owner is the part an assignment file
//! names for the host (`polycrawl assign`, computed from a previous crawl's host
//! graph) or a two-level crawl's coordinator assigned it at run time
//! ([`Ownership::assign`]), else [`hash_part`] of the host. Every part and every tool must use this
//! module to decide ownership, never a rule of its own: two parts that disagree would
//! both crawl a host or neither would.
//!
//! A host is its name alone ([`host_of`]): the port is not part of it, so the http
//! and https sides of a site (on ports 80 and 443 on the web, on two other ports on
//! websim) always belong to the same part, and one crawling system keeps the
//! site's politeness.
//!
//! Cost: [`Ownership::owner`] is one hash-map lookup (when a table is loaded) plus one
//! FNV-1a pass over the host; the table is O(hosts in the file) in memory.
//!
//! **Partitioning schemes** (Cho and Garcia-Molina, section 3):
//! - *site-hash* ([`Ownership::hashed`]): the host's hash, the default;
//! - *assignment* ([`Ownership::load`]): a table from `polycrawl assign` (METIS on a
//!   previous crawl's host graph), the hash for hosts it does not name;
//! - *hierarchical* ([`Ownership::hierarchical`], `app.partitioning`): the hash of
//!   the host's registered domain ([`domain_of`]: its public suffix from the
//!   public suffix list plus one label), so `www.acme17.test`, `shop.acme17.test`
//!   and `acme17.test` share a part, and so do `www.example.co.uk` and
//!   `shop.example.co.uk` (never all of `co.uk`). The paper groups by domain
//!   suffix (`.com`, `.jp`); on websim every host is under `.test` or `.example`,
//!   two groups for any K, so the group that means something there is websim's
//!   registered domain (1-4 hosts each, `websim/src/hosts.rs`);
//! - *URL-hash* ([`url_part`]): the hash of the whole URL. It splits a host over
//!   parts, so robots.txt, DNS and politeness would be held by several crawling
//!   systems, breaking the rule above. It is therefore offered to the evaluation
//!   only (`polycrawl assign --table`), never to a live crawl: a live URL-hash crawl
//!   would be correct only where one manager serves every part, and then it is one
//!   crawling system whose split buys nothing the site-hash does not.
//!
//! The first three decide by host and are [`Ownership`]s; a part must never
//! decide by URL.
//!
//! **Replication** ([`replicated`]): the N most-linked URLs of a previous crawl, held
//! by every part; the owner crawls them, the others treat them as seen.

use std::path::Path;

use spool::formats::AssignmentTable;
use url::Url;

pub mod replicated;

/// The host of `url` as ownership and assignment files name it: its name
/// (lowercase, as the `url` crate keeps domains), without the port; `None` for a
/// URL without a host.
pub fn host_of(url: &Url) -> Option<String> {
    url.host_str().map(str::to_ascii_lowercase)
}

/// Why an ownership rule could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum PartsError {
    /// `index >= count`, or `count == 0`.
    #[error("part {index} of {count}: need 0 <= part < parts")]
    BadPart {
        /// The part asked for.
        index: u32,
        /// The number of parts.
        count: u32,
    },
    /// The assignment file could not be opened.
    #[error("assignment file {}: {source}", path.display())]
    Open {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The assignment file does not parse.
    #[error("assignment file {}: {source}", path.display())]
    Format {
        /// The file.
        path: std::path::PathBuf,
        /// The parse error, with its line.
        source: spool::formats::FormatError,
    },
    /// The assignment file was made for another number of parts.
    #[error("assignment file {} is for {file} parts, this crawl has {count}", path.display())]
    PartsMismatch {
        /// The file.
        path: std::path::PathBuf,
        /// Parts in the file's header.
        file: u32,
        /// Parts of this crawl.
        count: u32,
    },
}

/// The part of `host` by hash alone: FNV-1a 64 of the host's bytes, modulo `parts`.
/// Stable across builds and machines (never `std`'s randomized hasher). `parts` must
/// be at least 1.
pub fn hash_part(host: &str, parts: u32) -> u32 {
    hash_part_bytes(host.as_bytes(), parts, true)
}

/// The registered domain of `host` for hierarchical partitioning: its public
/// suffix (the public suffix list built into the `psl` crate; an unlisted top-level
/// label such as `.test` is a suffix of its own) plus one label
/// (`shop.acme17.test` → `acme17.test`, `www.example.co.uk` → `example.co.uk`). A
/// host that is itself a public suffix or a single label, and an IP address, is its
/// own domain. A trailing dot is ignored. O(labels) per call, no allocation.
pub fn domain_of(host: &str) -> &str {
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        return host;
    }
    let trimmed = host.trim_end_matches('.');
    psl::domain_str(trimmed).unwrap_or(trimmed)
}

/// The part of a URL by the URL-hash scheme: FNV-1a 64 of the whole URL (as
/// written), modulo `parts`. For the evaluation only: it splits hosts (see the
/// module docs). `parts` must be at least 1.
pub fn url_part(url: &str, parts: u32) -> u32 {
    hash_part_bytes(url.as_bytes(), parts, false)
}

fn hash_part_bytes(bytes: &[u8], parts: u32, lowercase: bool) -> u32 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for &b in bytes {
        let b = if lowercase { b.to_ascii_lowercase() } else { b };
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    (h % u64::from(parts.max(1))) as u32
}

/// The ownership rule of one crawl: K parts, an optional assignment table, and the
/// hash (of the host, or of its domain) for hosts the table does not name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    count: u32,
    table: AssignmentTable,
    /// Hierarchical: hash the host's domain ([`domain_of`]), not the host.
    by_domain: bool,
}

impl Ownership {
    /// Hash ownership over `count` parts.
    pub fn hashed(count: u32) -> Result<Self, PartsError> {
        if count == 0 {
            return Err(PartsError::BadPart { index: 0, count });
        }
        Ok(Self {
            count,
            table: AssignmentTable {
                parts: count,
                hosts: Default::default(),
            },
            by_domain: false,
        })
    }

    /// This rule made hierarchical: hosts the table does not name go to the part
    /// of their registered domain's hash ([`domain_of`]), so every host of one
    /// domain is in one part.
    pub fn hierarchical(self) -> Self {
        Self {
            by_domain: true,
            ..self
        }
    }

    /// Ownership from an assignment table made for `count` parts.
    pub fn assigned(table: AssignmentTable, count: u32, path: &Path) -> Result<Self, PartsError> {
        if table.parts != count {
            return Err(PartsError::PartsMismatch {
                path: path.to_owned(),
                file: table.parts,
                count,
            });
        }
        Self::hashed(count)?;
        Ok(Self {
            count,
            table,
            by_domain: false,
        })
    }

    /// Reads an assignment file made for `count` parts.
    pub fn load(path: &Path, count: u32) -> Result<Self, PartsError> {
        let file = std::fs::File::open(path).map_err(|source| PartsError::Open {
            path: path.to_owned(),
            source,
        })?;
        let table = AssignmentTable::read(std::io::BufReader::new(file)).map_err(|source| {
            PartsError::Format {
                path: path.to_owned(),
                source,
            }
        })?;
        Self::assigned(table, count, path)
    }

    /// The number of parts.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Hosts the assignment table names (0 for hash ownership).
    pub fn assigned_hosts(&self) -> usize {
        self.table.hosts.len()
    }

    /// Records at run time that `host` belongs to `part` (a two-level crawl's
    /// coordinator assigned it: `coordinator`). The table grows by one
    /// entry per assigned site, O(sites) in memory.
    pub fn assign(&mut self, host: String, part: u32) {
        self.table.hosts.insert(host, part);
    }

    /// The part the table names for `host`, `None` when none does (a two-level
    /// crawl's unassigned site; the hash is not consulted).
    pub fn assigned_owner(&self, host: &str) -> Option<u32> {
        self.table.hosts.get(host).copied()
    }

    /// The part that owns `host` (lowercase, with `:port` when not the default).
    pub fn owner(&self, host: &str) -> u32 {
        match self.table.hosts.get(host) {
            Some(part) => *part,
            None if self.by_domain => hash_part(domain_of(host), self.count),
            None => hash_part(host, self.count),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_never_splits_a_host() {
        let k = |u: &str| host_of(&Url::parse(u).unwrap());
        assert_eq!(k("http://A.example:8080/x").as_deref(), Some("a.example"));
        assert_eq!(k("https://a.example:443/x").as_deref(), Some("a.example"));
        assert_eq!(k("http://A.Example:80/x").as_deref(), Some("a.example"));
        assert_eq!(k("https://a.example:8443/").as_deref(), Some("a.example"));
        assert_eq!(k("data:text/plain,x"), None);
    }

    #[test]
    fn hash_is_stable_and_in_range() {
        // Fixed values: a change here reassigns every host of a running crawl.
        assert_eq!(hash_part("a.example", 1), 0);
        let known =
            ["a.example", "b.example", "www.c.example", "h7.websim:8080"].map(|h| hash_part(h, 16));
        assert_eq!(known, FNV_16);
        for n in 1..40 {
            assert!(hash_part(&format!("host{n}.example"), 7) < 7);
        }
        assert_eq!(hash_part("A.Example", 16), hash_part("a.example", 16));
    }

    /// FNV-1a 64 of the four hosts above, modulo 16, from an independent
    /// implementation (Python: `h ^= b; h = h * 0x100000001b3 % 2**64` per byte).
    const FNV_16: [u32; 4] = [8, 5, 3, 11];

    #[test]
    fn spread_is_even_enough() {
        let mut per = [0u32; 8];
        for n in 0..8000 {
            per[hash_part(&format!("h{n}.example"), 8) as usize] += 1;
        }
        assert!(per.iter().all(|c| (850..=1150).contains(c)), "{per:?}");
    }

    #[test]
    fn domains_group_hosts_and_url_hash_splits_them() {
        assert_eq!(domain_of("shop.acme17.test"), "acme17.test");
        assert_eq!(domain_of("a.b.acme17.test"), "acme17.test");
        assert_eq!(domain_of("acme17.test"), "acme17.test");
        assert_eq!(domain_of("localhost"), "localhost");
        assert_eq!(domain_of("127.1.0.1"), "127.1.0.1");
        assert_eq!(domain_of("www.acme17.test."), "acme17.test");
        assert_eq!(domain_of("www.example.co.uk"), "example.co.uk");
        assert_eq!(domain_of("a.b.example.co.uk"), "example.co.uk");
        assert_eq!(domain_of("example.co.uk"), "example.co.uk");
        assert_eq!(domain_of("co.uk"), "co.uk");
        assert_eq!(domain_of("shop.example.com.au"), "example.com.au");
        assert_eq!(domain_of("www.city.kawasaki.jp"), "city.kawasaki.jp");
        let own = Ownership::hashed(8).unwrap().hierarchical();
        for n in 0..50 {
            let d = format!("acme{n}.test");
            let part = own.owner(&d);
            assert_eq!(part, hash_part(&d, 8));
            assert_eq!(own.owner(&format!("www.{d}")), part);
            assert_eq!(own.owner(&format!("shop.{d}")), part);
        }
        // The URL hash is stable, in range, and spreads one host over parts.
        assert_eq!(url_part("http://a.example/", 1), 0);
        let parts: std::collections::BTreeSet<u32> = (0..64)
            .map(|n| url_part(&format!("http://a.example/p{n}"), 4))
            .collect();
        assert_eq!(parts.len(), 4);
        // The same FNV-1a as the host hash, without lowercasing.
        assert_eq!(url_part("a.example", 16), hash_part("a.example", 16));
    }

    /// Hosts under a multi-label public suffix: each registered domain in one
    /// part, and the domains spread over the parts (grouping by the last two
    /// labels would put every `*.co.uk` host in the part of `co.uk`).
    #[test]
    fn multi_label_suffixes_keep_each_registered_domain_in_one_part() {
        let own = Ownership::hashed(8).unwrap().hierarchical();
        let mut used = std::collections::BTreeSet::new();
        for n in 0..64 {
            for suffix in ["co.uk", "com.au", "ac.jp"] {
                let domain = format!("site{n}.{suffix}");
                let part = own.owner(&domain);
                assert_eq!(part, hash_part(&domain, 8), "{domain}");
                for sub in ["www", "shop", "a.b"] {
                    assert_eq!(
                        own.owner(&format!("{sub}.{domain}")),
                        part,
                        "{sub}.{domain}"
                    );
                }
                used.insert(part);
            }
        }
        assert_eq!(
            used.len(),
            8,
            "registered domains under co.uk spread: {used:?}"
        );
    }

    #[test]
    fn table_wins_over_hash_and_must_match_parts() {
        let text = "#polycrawl-assignment v1 parts=4\na.example\t3\nb.example\t3\n";
        let table = AssignmentTable::read(text.as_bytes()).unwrap();
        let own = Ownership::assigned(table.clone(), 4, Path::new("t")).unwrap();
        assert_eq!(own.owner("a.example"), 3);
        assert_eq!(own.owner("b.example"), 3);
        assert_eq!(own.owner("zz.example"), hash_part("zz.example", 4));
        assert_eq!(own.assigned_hosts(), 2);
        assert!(matches!(
            Ownership::assigned(table, 8, Path::new("t")),
            Err(PartsError::PartsMismatch {
                file: 4,
                count: 8,
                ..
            })
        ));
        assert!(Ownership::hashed(0).is_err());
    }

    #[test]
    fn run_time_assignments_join_the_table() {
        let mut own = Ownership::hashed(4).unwrap();
        assert_eq!(own.assigned_owner("a.example"), None);
        own.assign("a.example".into(), 2);
        assert_eq!(own.assigned_owner("a.example"), Some(2));
        assert_eq!(own.owner("a.example"), 2);
        assert_eq!(own.assigned_hosts(), 1);
    }
}
