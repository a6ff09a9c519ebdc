//! Per-host page budgets, after IRLbot's BEAST: in an open crawl (`scope: open`)
//! a host may have as many URLs requested as other sites vouch for. Its budget is
//! `min(base + per_site * linking_sites, max)`, where `linking_sites` counts the
//! distinct *other* sites with a page linking (or redirecting) to it.
//!
//! In a scoped crawl (every other `scope`, the default) the hosts in scope are the
//! user's word: every host gets `max` (default 1,000,000), a ceiling that only a
//! runaway host reaches, and a URL cut by it is counted as `host_ceiling`, never
//! silently. Traps are the detectors' job (`traps`), not the budgets'.
//!
//! In an open crawl a seed is one vote, not trust: a crawl of the open web is seeded from lists of
//! sites nobody has vetted, and a seed may be a trap. A seed's host starts from
//! `seed_base` (default 500) instead of `base` (100), and grows with linking sites
//! like any host. Only hosts the operator names as trusted (`trusted_hosts`,
//! `trusted_hosts_file`: a name covers the host and its subdomains) get `max`.
//! `max_pages_per_host`, when set, caps every budget, trusted or not. New URLs of
//! a host beyond its budget are not requested: they are counted as cut, per host
//! and in all.
//!
//! A *site* is the host's registered domain ([`site_of`]: its public suffix plus
//! one label, `shop.acme17.test` -> `acme17.test`, `www.bbc.co.uk` -> `bbc.co.uk`;
//! an IP address is its own site), so a trap cannot raise its own budget by
//! linking itself from its subdomains, and sites under one public suffix such as
//! `co.uk` each vouch for themselves.
//!
//! Calendars, page-number sequences and other endless URL spaces that no
//! detector of `traps` catches end here: a trap host one other site links to
//! gets `base + per_site` URLs at most, `seed_base + per_site` if it is a seed.
//!
//! Memory: one entry per host with URLs requested or linked from elsewhere, each
//! with at most `(max - base) / per_site + 1` site hashes.
//!
//! Restarts: the crawl loop saves the counts ([`HostBudgets::write_to`], the file
//! `<state_dir>/budgets` of `state.rs`) right after it records a published
//! generation, at most every [`SAVE_INTERVAL`] and at every checkpoint, and reads
//! them back at start ([`HostBudgets::read_from`]). So saved counts only ever cover
//! URLs whose request files are recorded as published: after a crash a host may
//! get up to `SAVE_INTERVAL` of requests again, never fewer than its budget (a
//! URL re-inserted after the crash is not counted twice). Seed and trust marks are
//! not saved: they come from the seeds and the configuration at every start.
//!
//! This module never reads or writes files; the crawl loop feeds it.

use psl::Psl as _;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::time::Duration;

/// Longest time between two saves of the counts (see the module docs).
pub const SAVE_INTERVAL: Duration = Duration::from_secs(10);

/// First line of the saved counts.
const FORMAT_LINE: &str = "polycrawl-budgets 1";

/// The budget rule's settings (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetRule {
    /// A scoped crawl: every host gets `max` (the ceiling).
    pub scoped: bool,
    /// Budget of a host no other site links to; 0 turns budgets off.
    pub base: u64,
    /// Budget of a seed's host before any other site links to it.
    pub seed_base: u64,
    /// Added per distinct linking site.
    pub per_site: u64,
    /// The most any host gets, and what a trusted host gets.
    pub max: u64,
    /// `max_pages_per_host` (0: no cap).
    pub cap: u64,
}

/// One host's counts.
#[derive(Debug, Default)]
struct HostBudget {
    requested: u64,
    cut: u64,
    /// Hashes of the distinct other sites linking here (capped).
    sites: HashSet<u64>,
    seed: bool,
    trusted: bool,
}

/// What the summary shows of one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCut {
    /// The host, host-reversed as in the seen set's keys (`test.acme17.www`).
    pub host: String,
    /// Its budget now.
    pub budget: u64,
    /// URLs requested.
    pub requested: u64,
    /// URLs cut.
    pub cut: u64,
    /// Distinct other sites seen linking to it (counted up to what the budget needs).
    pub linking_sites: u64,
}

/// The budgets of every host seen (see the module docs).
#[derive(Debug)]
pub struct HostBudgets {
    rule: BudgetRule,
    /// Trusted names, host-reversed (`test.acme17`): they and their subdomains
    /// get `max`.
    trusted: HashSet<Box<[u8]>>,
    hosts: HashMap<Box<[u8]>, HostBudget>,
    /// Site hashes needed to reach `max`; more are not kept.
    sites_needed: usize,
    cut: u64,
}

/// The site of a host-reversed host: its registered domain (`test.acme17` for
/// `test.acme17.www`, `uk.co.bbc` for `uk.co.bbc.www`), a prefix of `host`: the
/// public suffix (by the public suffix list the `psl` crate compiles in; an
/// unknown top-level label such as `test` is a suffix of its own) plus one label.
/// A host that is a public suffix itself, and an IP address, is its own site. One
/// suffix lookup, O(labels), no allocation.
pub fn site_of(host: &[u8]) -> &[u8] {
    if host
        .first()
        .is_none_or(|b| b.is_ascii_digit() || *b == b'[')
    {
        return host;
    }
    // The labels of a reversed host come TLD first, as `find` wants them.
    let suffix = psl::List.find(host.split(|&b| b == b'.')).len;
    if suffix == 0 || suffix >= host.len() {
        return host;
    }
    let label = suffix + 1;
    let end = host[label..]
        .iter()
        .position(|&b| b == b'.')
        .map_or(host.len(), |p| label + p);
    &host[..end]
}

/// Whether host-reversed `host` is one of `names` or under one (on a label
/// boundary). O(labels).
fn covered(names: &HashSet<Box<[u8]>>, host: &[u8]) -> bool {
    if names.is_empty() {
        return false;
    }
    host.iter()
        .enumerate()
        .filter(|(_, b)| **b == b'.')
        .map(|(i, _)| &host[..i])
        .chain(std::iter::once(host))
        .any(|prefix| names.contains(prefix))
}

fn site_hash(site: &[u8]) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(site)
}

impl HostBudgets {
    /// No host counted yet, under `rule`.
    pub fn new(rule: BudgetRule) -> Self {
        let sites_needed = match rule.per_site {
            0 => 0,
            k => (rule.max.saturating_sub(rule.base).div_ceil(k)).min(1 << 20) as usize,
        };
        Self {
            rule,
            trusted: HashSet::new(),
            hosts: HashMap::new(),
            sites_needed,
            cut: 0,
        }
    }

    /// Trusts `names` (host names, `www.acme17.test` or `acme17.test`; ASCII case
    /// and a leading or trailing dot ignored): they and their subdomains get
    /// `max`. Call before any host is counted.
    pub fn trust<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        for name in names {
            let name = name.trim().trim_matches('.').to_ascii_lowercase();
            if name.is_empty() {
                continue;
            }
            let reversed: Vec<&str> = name.rsplit('.').collect();
            self.trusted
                .insert(reversed.join(".").into_bytes().into_boxed_slice());
        }
        for (host, b) in &mut self.hosts {
            b.trusted = covered(&self.trusted, host);
        }
    }

    fn entry(&mut self, host: &[u8]) -> &mut HostBudget {
        if !self.hosts.contains_key(host) {
            let b = HostBudget {
                trusted: covered(&self.trusted, host),
                ..HostBudget::default()
            };
            self.hosts.insert(host.into(), b);
        }
        self.hosts.get_mut(host).expect("just inserted")
    }

    /// `host` (host-reversed) is a seed's host: its budget starts from
    /// `seed_base`.
    pub fn seed(&mut self, host: &[u8]) {
        self.entry(host).seed = true;
    }

    /// A page of site `from_site` links (or redirects) to `host`. Returns whether
    /// that site was new for `host` and counted (a split crawl sends such votes to
    /// the host's owner).
    pub fn linked(&mut self, host: &[u8], from_site: &[u8]) -> bool {
        if self.rule.base == 0 || site_of(host) == from_site {
            return false;
        }
        let needed = self.sites_needed;
        let b = self.entry(host);
        b.sites.len() < needed && b.sites.insert(site_hash(from_site))
    }

    fn budget_of(&self, b: &HostBudget) -> u64 {
        let rule = self.rule;
        let mut budget = if rule.base == 0 {
            u64::MAX
        } else if b.trusted || rule.scoped {
            rule.max
        } else {
            let base = if b.seed { rule.seed_base } else { rule.base };
            rule.per_site
                .saturating_mul(b.sites.len() as u64)
                .saturating_add(base)
                .min(rule.max)
        };
        if rule.cap > 0 {
            budget = budget.min(rule.cap);
        }
        budget
    }

    /// Whether one more URL of `host` may be requested; counts it as requested or
    /// as cut. Returns `Some(budget)` the first time the host is cut.
    pub fn admit(&mut self, host: &[u8]) -> (bool, Option<u64>) {
        if self.rule.base == 0 && self.rule.cap == 0 {
            return (true, None);
        }
        let b = self.entry(host);
        let (requested, first_cut) = (b.requested, b.cut == 0);
        let b = &self.hosts[host];
        let budget = self.budget_of(b);
        let b = self.hosts.get_mut(host).expect("entry exists");
        if requested < budget {
            b.requested += 1;
            (true, None)
        } else {
            b.cut += 1;
            self.cut += 1;
            (false, first_cut.then_some(budget))
        }
    }

    /// Whether a URL of `host` counted as cut fits its budget now; if so it is
    /// counted as requested instead (a held URL released, see `deferred.rs`).
    pub fn release(&mut self, host: &[u8]) -> bool {
        let Some(b) = self.hosts.get(host) else {
            return false;
        };
        let budget = self.budget_of(b);
        let Some(b) = self.hosts.get_mut(host) else {
            return false;
        };
        if b.cut == 0 || b.requested >= budget {
            return false;
        }
        b.requested += 1;
        b.cut -= 1;
        self.cut = self.cut.saturating_sub(1);
        true
    }

    /// Linking sites counted for `host`.
    pub fn linking_sites(&self, host: &[u8]) -> u64 {
        self.hosts.get(host).map_or(0, |b| b.sites.len() as u64)
    }

    /// URLs cut in all (this run).
    pub fn cut(&self) -> u64 {
        self.cut
    }

    /// The counts as text: a format line, then per host with any count
    /// `host<TAB>requested<TAB>cut<TAB>site hashes` (hex, comma-separated).
    pub fn write_to(&self, out: &mut String) {
        use std::fmt::Write as _;
        out.push_str(FORMAT_LINE);
        out.push('\n');
        for (host, b) in &self.hosts {
            if b.requested == 0 && b.cut == 0 && b.sites.is_empty() {
                continue;
            }
            let Ok(host) = std::str::from_utf8(host) else {
                continue;
            };
            let _ = write!(out, "{host}\t{}\t{}\t", b.requested, b.cut);
            for (i, site) in b.sites.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(out, "{sep}{site:x}");
            }
            out.push('\n');
        }
    }

    /// Adds counts saved by [`write_to`](Self::write_to) (to a new set, before
    /// the seeds are marked). Err: the first bad line.
    pub fn read_from(&mut self, text: &str) -> Result<(), String> {
        let mut lines = text.lines();
        if lines.next() != Some(FORMAT_LINE) {
            return Err(format!("first line is not {FORMAT_LINE:?}"));
        }
        let needed = self.sites_needed;
        for line in lines.filter(|l| !l.is_empty()) {
            let bad = || line.chars().take(100).collect::<String>();
            let mut fields = line.split('\t');
            let (Some(host), Some(requested), Some(cut), Some(sites), None) = (
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
            ) else {
                return Err(bad());
            };
            let requested: u64 = requested.parse().map_err(|_| bad())?;
            let cut: u64 = cut.parse().map_err(|_| bad())?;
            if host.is_empty() {
                return Err(bad());
            }
            let b = self.entry(host.as_bytes());
            b.requested = requested;
            b.cut = cut;
            for site in sites.split(',').filter(|s| !s.is_empty()) {
                let hash = u64::from_str_radix(site, 16).map_err(|_| bad())?;
                if b.sites.len() < needed {
                    b.sites.insert(hash);
                }
            }
        }
        Ok(())
    }

    /// How many hosts had URLs cut (their budget is used up). O(hosts).
    pub fn hosts_cut(&self) -> u64 {
        self.hosts.values().filter(|b| b.cut > 0).count() as u64
    }

    /// The `n` hosts with the most URLs cut, most first.
    pub fn most_cut(&self, n: usize) -> Vec<HostCut> {
        let mut cut: Vec<HostCut> = self
            .hosts
            .iter()
            .filter(|(_, b)| b.cut > 0)
            .map(|(host, b)| HostCut {
                host: String::from_utf8_lossy(host).into_owned(),
                budget: self.budget_of(b),
                requested: b.requested,
                cut: b.cut,
                linking_sites: b.sites.len() as u64,
            })
            .collect();
        cut.sort_by(|a, b| b.cut.cmp(&a.cut).then_with(|| a.host.cmp(&b.host)));
        cut.truncate(n);
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: BudgetRule = BudgetRule {
        scoped: false,
        base: 3,
        seed_base: 5,
        per_site: 2,
        max: 9,
        cap: 0,
    };

    fn admitted(b: &mut HostBudgets, host: &[u8], n: usize) -> usize {
        (0..n).filter(|_| b.admit(host).0).count()
    }

    #[test]
    fn saved_counts_come_back_after_a_restart() {
        let mut b = HostBudgets::new(RULE);
        let host = b"test.trap.www";
        b.linked(host, b"test.a");
        assert_eq!(
            admitted(&mut b, host, 4),
            4,
            "base 3 + 2 for one site, 1 left"
        );
        b.linked(b"test.other", b"test.b");
        let mut text = String::new();
        b.write_to(&mut text);

        let mut again = HostBudgets::new(RULE);
        again.read_from(&text).unwrap();
        assert_eq!(again.linking_sites(host), 1);
        assert_eq!(again.linking_sites(b"test.other"), 1);
        // One URL left of 5, as before the restart; the same site linking again
        // does not raise it.
        again.linked(host, b"test.a");
        assert_eq!(admitted(&mut again, host, 3), 1);
        assert_eq!(again.most_cut(1)[0].cut, 2);

        let mut bad = HostBudgets::new(RULE);
        assert!(bad.read_from("something else\n").is_err());
        let err = bad
            .read_from("polycrawl-budgets 1\ntest.a\tx\t0\t\n")
            .unwrap_err();
        assert!(err.starts_with("test.a"), "{err}");
        assert!(
            bad.read_from("polycrawl-budgets 1\ntest.a\t1\t0\tzz\n")
                .is_err()
        );
    }

    #[test]
    fn sites_are_registered_domains() {
        assert_eq!(site_of(b"test.acme17.www"), b"test.acme17");
        assert_eq!(site_of(b"uk.co.bbc.www"), b"uk.co.bbc");
        assert_eq!(site_of(b"uk.co.bbc"), b"uk.co.bbc");
        assert_eq!(site_of(b"uk.co"), b"uk.co");
        assert_eq!(site_of(b"au.com.example.shop"), b"au.com.example");
        assert_eq!(site_of(b""), b"");
        assert_eq!(site_of(b"test.acme17"), b"test.acme17");
        assert_eq!(site_of(b"test"), b"test");
        assert_eq!(site_of(b"127.0.0.1"), b"127.0.0.1");
        assert_eq!(site_of(b"[::1]"), b"[::1]");
    }

    #[test]
    fn the_budget_grows_with_distinct_other_linking_sites() {
        let mut b = HostBudgets::new(RULE);
        let host = b"test.trap.www";
        assert_eq!(admitted(&mut b, host, 10), 3, "base only");
        // Its own site and repeats do not count (nor go out as votes).
        assert!(!b.linked(host, b"test.trap"));
        assert!(b.linked(host, b"test.a"));
        assert!(!b.linked(host, b"test.a"));
        assert_eq!(b.linking_sites(host), 1);
        assert_eq!(admitted(&mut b, host, 10), 2, "base + 1 site");
        let counted: Vec<bool> = [&b"test.b"[..], b"test.c", b"test.d", b"test.e"]
            .into_iter()
            .map(|s| b.linked(host, s))
            .collect();
        assert_eq!(
            counted,
            [true, true, false, false],
            "sites beyond max: no vote"
        );
        assert_eq!(
            b.linking_sites(host),
            3,
            "no more sites kept than max needs"
        );
        assert_eq!(admitted(&mut b, host, 10), 4, "capped at max");
        assert_eq!(b.cut(), 7 + 8 + 6);
        let top = b.most_cut(5);
        assert_eq!(top.len(), 1);
        assert_eq!((top[0].budget, top[0].requested, top[0].cut), (9, 9, 21));
    }

    #[test]
    fn a_seed_is_one_vote_and_trusted_hosts_get_the_max() {
        let mut b = HostBudgets::new(RULE);
        b.seed(b"test.s.www");
        assert_eq!(admitted(&mut b, b"test.s.www", 20), 5, "seed_base, not max");
        b.linked(b"test.s.www", b"test.a");
        assert_eq!(
            admitted(&mut b, b"test.s.www", 20),
            2,
            "a linking site adds to a seed's budget"
        );
        let mut t = HostBudgets::new(RULE);
        t.seed(b"test.acme.early");
        t.trust(["Acme.test.", "other.example"]);
        // Seen before the trust list: trusted all the same.
        assert_eq!(admitted(&mut t, b"test.acme.early", 20), 9);
        for host in [&b"test.acme"[..], b"test.acme.shop", b"example.other.www"] {
            assert_eq!(admitted(&mut t, host, 20), 9, "{host:?}");
        }
        for host in [&b"test.notacme"[..], b"test.acme2.www", b"example"] {
            assert_eq!(admitted(&mut t, host, 20), 3, "{host:?}");
        }
    }

    #[test]
    fn the_cap_caps_everything() {
        let mut capped = HostBudgets::new(BudgetRule { cap: 2, ..RULE });
        capped.seed(b"test.s.www");
        capped.trust(["t.test"]);
        assert_eq!(admitted(&mut capped, b"test.s.www", 20), 2);
        assert_eq!(admitted(&mut capped, b"test.t", 20), 2);
        let mut off = HostBudgets::new(BudgetRule { base: 0, ..RULE });
        assert_eq!(admitted(&mut off, b"test.x", 100), 100);
        let mut cap_only = HostBudgets::new(BudgetRule {
            base: 0,
            cap: 5,
            ..RULE
        });
        assert_eq!(admitted(&mut cap_only, b"test.x", 100), 5);
    }

    #[test]
    fn the_first_cut_is_reported_once() {
        let mut b = HostBudgets::new(RULE);
        let host = b"test.t.www";
        admitted(&mut b, host, 3);
        assert_eq!(b.admit(host), (false, Some(3)));
        assert_eq!(b.admit(host), (false, None));
    }

    #[test]
    fn a_scoped_crawl_gives_every_host_the_ceiling() {
        let mut b = HostBudgets::new(BudgetRule {
            scoped: true,
            ..RULE
        });
        b.seed(b"test.s");
        assert_eq!(
            admitted(&mut b, b"test.s", 20),
            9,
            "a seed's host: the ceiling"
        );
        assert_eq!(admitted(&mut b, b"test.t", 20), 9, "any host in scope too");
        assert_eq!(b.cut(), 22);
        let mut capped = HostBudgets::new(BudgetRule {
            scoped: true,
            cap: 4,
            ..RULE
        });
        assert_eq!(
            admitted(&mut capped, b"test.t", 20),
            4,
            "max_pages_per_host"
        );
        let mut off = HostBudgets::new(BudgetRule {
            scoped: true,
            base: 0,
            ..RULE
        });
        assert_eq!(
            admitted(&mut off, b"test.t", 20),
            20,
            "budgets off: no ceiling"
        );
    }
}
