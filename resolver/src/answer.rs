//! From a host name as the manager sent it to the [`Resolution`] it gets back: which
//! names are queried at all ([`Target::parse`]), how a hickory result is classified
//! ([`classify`]) and how TTLs are clamped ([`TtlPolicy`]).
//!
//! Classification, in order:
//! - addresses in the answer: `Addresses`, TTL = the smallest TTL of the address
//!   records, clamped to `[min_ttl_secs, max_ttl_secs]`;
//! - an answer without addresses (NOERROR/NODATA, or only a CNAME chain):
//!   `Negative { NoAddresses }`;
//! - NXDOMAIN: `Negative { NxDomain }`;
//! - anything else (timeout, SERVFAIL, REFUSED, FORMERR, I/O errors, an unusable
//!   response): `Negative { Failure }` with `failure_ttl_secs`.
//!
//! Negative TTLs are the zone's (from the SOA, as hickory computes it per RFC 2308)
//! capped at `negative_ttl_secs` and raised to `min_ttl_secs` (or to
//! `negative_ttl_secs` when that is lower); without an SOA, `negative_ttl_secs`.
//!
//! A name that cannot be a DNS host name (empty, over 253 bytes, a label over 63
//! bytes or holding anything but `[A-Za-z0-9_-]`) is answered `NxDomain` at once,
//! without a query: no name server can ever resolve it. An IP literal is answered
//! with itself and `max_ttl_secs`.
//!
//! Everything here is pure and O(size of one answer); it must never do I/O.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use hickory_resolver::lookup_ip::LookupIp;
use hickory_resolver::net::{DnsError, NetError, NoRecords};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{Name, RecordType};
use spool::protocol::{NegativeKind, Resolution};

use crate::config::Config;

/// Longest host name accepted, in bytes (without a trailing dot).
const MAX_NAME_LEN: usize = 253;
/// Longest label accepted, in bytes.
const MAX_LABEL_LEN: usize = 63;

/// How answers' TTLs are bounded (from [`Config`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TtlPolicy {
    min: u32,
    max: u32,
    negative: u32,
    failure: u32,
}

impl TtlPolicy {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            min: config.min_ttl_secs,
            max: config.max_ttl_secs,
            negative: config.negative_ttl_secs,
            failure: config.failure_ttl_secs,
        }
    }

    /// The TTL of a positive answer whose records say `ttl`.
    pub(crate) fn positive(&self, ttl: u32) -> u32 {
        ttl.clamp(self.min, self.max.max(self.min))
    }

    /// The TTL of an NXDOMAIN or no-address answer; `soa` is the zone's negative TTL.
    pub(crate) fn negative(&self, soa: Option<u32>) -> u32 {
        soa.unwrap_or(self.negative)
            .clamp(self.min.min(self.negative), self.negative)
    }

    /// The TTL of a failed lookup.
    pub(crate) fn failure(&self) -> u32 {
        self.failure
    }

    /// The bounds hickory's own cache applies to positive entries.
    pub(crate) fn positive_bounds(&self) -> (Duration, Duration) {
        let secs = |s: u32| Duration::from_secs(u64::from(s));
        (secs(self.min), secs(self.max.max(self.min)))
    }

    /// The bounds hickory's own cache applies to negative entries.
    pub(crate) fn negative_bounds(&self) -> (Duration, Duration) {
        let secs = |s: u32| Duration::from_secs(u64::from(s));
        (secs(self.min.min(self.negative)), secs(self.negative))
    }
}

/// What a host name from a batch turns into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// An IP literal: answered with itself, no query.
    Literal(IpAddr),
    /// A DNS name, fully qualified (so no search list ever applies).
    Query(Name),
}

impl Target {
    /// Parses a host name as sent in a `ResolveBatch`; `Err` says why it can never
    /// resolve.
    pub(crate) fn parse(host: &str) -> Result<Self, String> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(Self::Literal(ip));
        }
        let name = host.strip_suffix('.').unwrap_or(host);
        if name.is_empty() {
            return Err("empty host name".into());
        }
        if name.len() > MAX_NAME_LEN {
            return Err(format!(
                "host name of {} bytes exceeds {MAX_NAME_LEN}",
                name.len()
            ));
        }
        for label in name.split('.') {
            let ok = (1..=MAX_LABEL_LEN).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                return Err(
                    "not a valid host name (labels of 1 to 63 bytes of [A-Za-z0-9_-])".into(),
                );
            }
        }
        let mut fqdn = Name::from_ascii(name).map_err(|e| format!("not a valid host name: {e}"))?;
        fqdn.set_fqdn(true);
        Ok(Self::Query(fqdn))
    }
}

/// The answer for a name that can never resolve (see [`Target::parse`]).
pub(crate) fn invalid_name(detail: String, policy: &TtlPolicy) -> Resolution {
    Resolution::Negative {
        kind: NegativeKind::NxDomain,
        ttl_secs: policy.negative(None),
        detail,
    }
}

/// The answer for an IP literal.
pub(crate) fn literal(ip: IpAddr, policy: &TtlPolicy) -> Resolution {
    Resolution::Addresses {
        addrs: vec![ip],
        ttl_secs: policy.positive(u32::MAX),
    }
}

/// The answer for a name that got no answer within the whole-name deadline.
pub(crate) fn deadline_passed(deadline: Duration, policy: &TtlPolicy) -> Resolution {
    Resolution::Negative {
        kind: NegativeKind::Failure,
        ttl_secs: policy.failure(),
        detail: format!("no answer within {} ms", deadline.as_millis()),
    }
}

/// Turns hickory's result into the answer sent to the manager.
pub(crate) fn classify(
    result: Result<LookupIp, NetError>,
    policy: &TtlPolicy,
    now: Instant,
) -> Resolution {
    match result {
        Ok(lookup) => positive(&lookup, policy, now),
        Err(NetError::Dns(DnsError::NoRecordsFound(records))) => no_records(&records, policy),
        Err(NetError::Timeout) => failure("timed out".into(), policy),
        Err(error) => failure(format!("lookup failed: {error}"), policy),
    }
}

fn positive(lookup: &LookupIp, policy: &TtlPolicy, now: Instant) -> Resolution {
    let mut addrs: Vec<IpAddr> = Vec::new();
    for ip in lookup.iter() {
        if !addrs.contains(&ip) {
            addrs.push(ip);
        }
    }
    if addrs.is_empty() {
        return Resolution::Negative {
            kind: NegativeKind::NoAddresses,
            ttl_secs: policy.negative(None),
            detail: "the answer holds no address record".into(),
        };
    }
    let record_ttl = lookup
        .as_lookup()
        .answers()
        .iter()
        .filter(|r| matches!(r.record_type(), RecordType::A | RecordType::AAAA))
        .map(|r| r.ttl)
        .min();
    let ttl = record_ttl.unwrap_or_else(|| {
        let left = lookup
            .valid_until()
            .saturating_duration_since(now)
            .as_secs();
        u32::try_from(left).unwrap_or(u32::MAX)
    });
    Resolution::Addresses {
        addrs,
        ttl_secs: policy.positive(ttl),
    }
}

fn no_records(records: &NoRecords, policy: &TtlPolicy) -> Resolution {
    let (kind, detail) = match records.response_code {
        ResponseCode::NXDomain => (NegativeKind::NxDomain, "no such name (NXDOMAIN)".into()),
        ResponseCode::NoError => (
            NegativeKind::NoAddresses,
            "the name exists but has no address record".into(),
        ),
        code => return failure(format!("the name server answered {code}"), policy),
    };
    Resolution::Negative {
        kind,
        ttl_secs: policy.negative(records.negative_ttl),
        detail,
    }
}

fn failure(detail: String, policy: &TtlPolicy) -> Resolution {
    Resolution::Negative {
        kind: NegativeKind::Failure,
        ttl_secs: policy.failure(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use hickory_resolver::lookup::Lookup;
    use hickory_resolver::proto::op::Query;
    use hickory_resolver::proto::rr::rdata::A;
    use hickory_resolver::proto::rr::{RData, Record};

    use super::*;

    fn policy() -> TtlPolicy {
        TtlPolicy::new(&Config {
            min_ttl_secs: 60,
            max_ttl_secs: 3600,
            negative_ttl_secs: 600,
            failure_ttl_secs: 30,
            ..Config::default()
        })
    }

    fn lookup(ttls: &[(u8, u32)]) -> LookupIp {
        let name = Name::from_ascii("a.test.").unwrap();
        let records = ttls.iter().map(|&(last, ttl)| {
            Record::from_rdata(
                name.clone(),
                ttl,
                RData::A(A(Ipv4Addr::new(127, 0, 0, last))),
            )
        });
        let query = Query::query(name.clone(), RecordType::A);
        LookupIp::from(Lookup::new_with_max_ttl(query, records.collect::<Vec<_>>()))
    }

    fn no_records_err(code: ResponseCode, negative_ttl: Option<u32>) -> NetError {
        let mut records = NoRecords::new(Query::new(), code);
        records.negative_ttl = negative_ttl;
        NetError::Dns(DnsError::NoRecordsFound(records))
    }

    fn kind_and_ttl(r: &Resolution) -> (Option<NegativeKind>, u32) {
        match r {
            Resolution::Addresses { ttl_secs, .. } => (None, *ttl_secs),
            Resolution::Negative { kind, ttl_secs, .. } => (Some(*kind), *ttl_secs),
        }
    }

    #[test]
    fn positive_ttl_is_the_smallest_record_ttl_clamped() {
        let now = Instant::now();
        let cases = [
            (&[(1, 300), (2, 200)][..], 200),
            (&[(1, 5)], 60),
            (&[(1, 99_999)], 3600),
        ];
        for (records, want) in cases {
            let r = classify(Ok(lookup(records)), &policy(), now);
            assert_eq!(kind_and_ttl(&r), (None, want), "{records:?}");
        }
        let r = classify(Ok(lookup(&[(1, 300), (2, 300), (1, 300)])), &policy(), now);
        let Resolution::Addresses { addrs, .. } = r else {
            panic!("{r:?}")
        };
        assert_eq!(addrs.len(), 2, "duplicates removed: {addrs:?}");
    }

    #[test]
    fn negative_kinds_are_distinct() {
        let p = policy();
        let now = Instant::now();
        let nx = classify(
            Err(no_records_err(ResponseCode::NXDomain, Some(100))),
            &p,
            now,
        );
        assert_eq!(kind_and_ttl(&nx), (Some(NegativeKind::NxDomain), 100));
        let nodata = classify(Err(no_records_err(ResponseCode::NoError, None)), &p, now);
        assert_eq!(
            kind_and_ttl(&nodata),
            (Some(NegativeKind::NoAddresses), 600)
        );
        let servfail = classify(Err(no_records_err(ResponseCode::ServFail, None)), &p, now);
        assert_eq!(kind_and_ttl(&servfail), (Some(NegativeKind::Failure), 30));
        let refused = classify(
            Err(NetError::Dns(DnsError::ResponseCode(ResponseCode::Refused))),
            &p,
            now,
        );
        assert_eq!(kind_and_ttl(&refused), (Some(NegativeKind::Failure), 30));
        let timeout = classify(Err(NetError::Timeout), &p, now);
        assert_eq!(kind_and_ttl(&timeout), (Some(NegativeKind::Failure), 30));
        let empty = classify(Ok(lookup(&[])), &p, now);
        assert_eq!(kind_and_ttl(&empty).0, Some(NegativeKind::NoAddresses));
    }

    #[test]
    fn negative_ttl_is_bounded() {
        let p = policy();
        assert_eq!(p.negative(Some(5)), 60);
        assert_eq!(p.negative(Some(100_000)), 600);
        assert_eq!(p.negative(None), 600);
        let low_cap = TtlPolicy {
            negative: 10,
            ..policy()
        };
        assert_eq!(low_cap.negative(Some(1)), 10);
    }

    #[test]
    fn targets() {
        let q = |s: &str| match Target::parse(s) {
            Ok(Target::Query(name)) => name.to_ascii(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(q("www.example.test"), "www.example.test.");
        assert_eq!(q("www.example.test."), "www.example.test.");
        assert_eq!(q("localhost-like_name"), "localhost-like_name.");
        assert_eq!(
            Target::parse("127.0.0.9"),
            Ok(Target::Literal("127.0.0.9".parse().unwrap()))
        );
        assert_eq!(
            Target::parse("::1"),
            Ok(Target::Literal("::1".parse().unwrap()))
        );
        let long = format!("{}.test", "a".repeat(64));
        for bad in [
            "",
            ".",
            "a..b",
            "a b.test",
            "host:80",
            "ex\u{e4}mple.test",
            &long,
        ] {
            assert!(Target::parse(bad).is_err(), "{bad:?}");
        }
        assert!(
            Target::parse(&"a.".repeat(127)).is_ok(),
            "253 bytes and a dot"
        );
        assert!(Target::parse(&"a.".repeat(128)).is_err());
    }
}
