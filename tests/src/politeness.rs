//! Politeness judged on what can be measured soundly.
//!
//! The contract (DESIGN.md section 4): per origin, at most one request in flight
//! and the next request must not *start* (be sent) before the interval `d` after
//! the *end* (last byte received) of the previous one; per IP address, at most
//! `ip_max_in_flight` requests at once and starts spaced by `ip_spacing`.
//!
//! **Crawler side** (the judge): the downloaders' wire stamps ([`WireLine`]).
//! `sent_us` is read before a request is written, `written_us` and `received_us`
//! after the write and the last read returned, so `sent(next) - received(prev)` and
//! `sent(next) - written(prev)` are never longer than the real gaps: a figure at or
//! above the limit proves the rule held; one below it is a violation.
//!
//! **Server side** (the cross-check): websim's stamps ([`LogLine`]): `start` read
//! after the request head was parsed, `write_from` before the response's first byte
//! was handed to the kernel, `end` after its last byte was. One machine, one
//! clock, so the two sides must agree on causality, with no tolerance:
//! - websim's `start` of a request is not before the crawler's `sent` of it (the
//!   request cannot arrive before it left);
//! - the crawler's `received` of an answered request is not before websim's
//!   `write_from` of it (the response cannot be complete before it began).
//!
//! A break of either means one side's stamps are wrong. And websim alone can
//! prove an early request: the crawler got the previous response no earlier than
//! websim's `write_from` and sent the next no later than websim's `start`, so
//! `start(next) - write_from(prev) < d` is a violation whatever the crawler says.
//! websim's `start(next) - end(prev)` proves nothing (its `end` can be late by
//! however long its task was not scheduled) and is not judged. Per-IP spacing has
//! no server-only bound (nothing websim reads bounds the previous request's send
//! from below), so websim checks it through the causality checks only.
//!
//! Requests are matched across the two logs by URL and order (the k-th request of
//! a URL in one log is the k-th in the other). O(n log n) in the requests.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use crate::websim::LogLine;
use crate::wirelog::{WireLine, origin_of};

/// The limits to judge against.
pub struct Rules<'a> {
    /// The interval of an origin (`scheme://authority`), in µs.
    pub interval_us: &'a dyn Fn(&str) -> i64,
    /// Least spacing of request starts to one IP address, in µs (0: none).
    pub ip_spacing_us: i64,
    /// Most requests in flight to one IP address (0: no limit).
    pub ip_max_in_flight: usize,
}

/// Which side's measurements show a violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The downloaders' wire stamps.
    Crawler,
    /// websim's request log.
    Server,
    /// The two logs contradict each other (a stamp on one side is wrong).
    Causality,
}

/// One broken rule.
#[derive(Debug, Clone)]
pub struct Violation {
    /// Who saw it.
    pub side: Side,
    /// What: the rule, the two requests and the figures.
    pub detail: String,
}

/// The figures and the violations.
#[derive(Debug, Default)]
pub struct Judgement {
    /// Requests in the wire log that were sent.
    pub sent: usize,
    /// websim lines matched to a wire line.
    pub matched: usize,
    /// Origins with at least one sent request.
    pub origins: usize,
    /// Smallest `sent(next) - received(prev)` of one origin (crawler), µs, and its
    /// interval.
    pub min_gap: Option<(i64, i64)>,
    /// Smallest `start(next) - write_from(prev)` of one origin (websim), µs, and its
    /// interval: an upper bound of the crawler's gap.
    pub server_min_gap: Option<(i64, i64)>,
    /// Smallest `sent(next) - written(prev)` to one IP (crawler), µs.
    pub ip_min_spacing: Option<i64>,
    /// Most requests in flight to one IP (crawler: from `sent` to `received`).
    pub ip_max_in_flight: usize,
    /// Addresses with at least two sent requests.
    pub ips: usize,
    /// Largest websim service time of an answered request, µs (how late its `end`
    /// stamps can be: not a politeness figure).
    pub server_max_service_us: u64,
    /// Everything broken.
    pub violations: Vec<Violation>,
}

fn ms(us: i64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

/// Judges the crawl of `wire` (the downloaders' log) and `server` (websim's).
pub fn judge(wire: &[WireLine], server: &[LogLine], rules: &Rules<'_>) -> Judgement {
    let mut j = Judgement::default();
    let sent: Vec<&WireLine> = wire.iter().filter(|l| l.was_sent()).collect();
    j.sent = sent.len();

    // Crawler, per origin: gaps from the end of one request to the start of the next.
    let mut by_origin: BTreeMap<String, Vec<&WireLine>> = BTreeMap::new();
    for l in &sent {
        by_origin.entry(l.origin()).or_default().push(l);
    }
    j.origins = by_origin.len();
    for (origin, lines) in &mut by_origin {
        lines.sort_by_key(|l| (l.sent_us, l.job));
        let d = (rules.interval_us)(origin);
        for w in lines.windows(2) {
            let gap = w[1].sent_us as i64 - w[0].received_us as i64;
            if j.min_gap.is_none_or(|(g, _)| gap < g) {
                j.min_gap = Some((gap, d));
            }
            if gap < d {
                j.violations.push(Violation {
                    side: Side::Crawler,
                    detail: format!(
                        "{origin}: job {} ({}) sent {} after job {} ({}) was received \
                         (interval {}): {} sent {} us, {} received {} us",
                        w[1].job,
                        w[1].url,
                        ms(gap),
                        w[0].job,
                        w[0].url,
                        ms(d),
                        w[1].downloader,
                        w[1].sent_us,
                        w[0].downloader,
                        w[0].received_us
                    ),
                });
            }
        }
    }

    // Crawler, per IP: start spacing and requests in flight.
    let mut by_ip: HashMap<IpAddr, Vec<&WireLine>> = HashMap::new();
    for l in &sent {
        by_ip.entry(l.addr.ip()).or_default().push(l);
    }
    for (ip, lines) in &mut by_ip {
        lines.sort_by_key(|l| (l.sent_us, l.job));
        if lines.len() >= 2 {
            j.ips += 1;
        }
        for w in lines.windows(2) {
            let spacing = w[1].sent_us as i64 - w[0].written_us.max(w[0].sent_us) as i64;
            j.ip_min_spacing = Some(j.ip_min_spacing.map_or(spacing, |s| s.min(spacing)));
            if rules.ip_spacing_us > 0 && spacing < rules.ip_spacing_us {
                j.violations.push(Violation {
                    side: Side::Crawler,
                    detail: format!(
                        "{ip}: job {} ({}, {}) sent {} after job {} ({}, {}) was written \
                         (spacing {})",
                        w[1].job,
                        w[1].url,
                        w[1].downloader,
                        ms(spacing),
                        w[0].job,
                        w[0].url,
                        w[0].downloader,
                        ms(rules.ip_spacing_us)
                    ),
                });
            }
        }
        let mut events: Vec<(u64, i32)> = Vec::with_capacity(lines.len() * 2);
        for l in lines.iter() {
            events.push((l.sent_us, 1));
            events.push((l.received_us.max(l.sent_us), 0));
        }
        events.sort_unstable(); // An end sorts before a start at the same µs.
        let mut now = 0usize;
        let mut max = 0usize;
        for (_, kind) in events {
            if kind == 1 {
                now += 1;
                max = max.max(now);
            } else {
                now = now.saturating_sub(1);
            }
        }
        j.ip_max_in_flight = j.ip_max_in_flight.max(max);
        if rules.ip_max_in_flight > 0 && max > rules.ip_max_in_flight {
            j.violations.push(Violation {
                side: Side::Crawler,
                detail: format!(
                    "{ip}: {max} requests in flight at once (limit {})",
                    rules.ip_max_in_flight
                ),
            });
        }
    }

    // Match websim's lines to the crawler's: by URL, in order.
    let mut wire_by_url: HashMap<&str, Vec<&WireLine>> = HashMap::new();
    for l in &sent {
        wire_by_url.entry(l.url.as_str()).or_default().push(l);
    }
    for v in wire_by_url.values_mut() {
        v.sort_by_key(|l| l.sent_us);
    }
    let mut server_sorted: Vec<&LogLine> = server.iter().collect();
    server_sorted.sort_by_key(|l| (l.start_us, l.end_us));
    let mut next_of: HashMap<String, usize> = HashMap::new();
    let mut pairs: Vec<(&LogLine, Option<&WireLine>)> = Vec::with_capacity(server.len());
    for s in server_sorted {
        let url = s.url();
        let k = next_of.entry(url.clone()).or_insert(0);
        let w = wire_by_url
            .get(url.as_str())
            .and_then(|v| v.get(*k))
            .copied();
        *k += 1;
        pairs.push((s, w));
    }
    for (s, w) in &pairs {
        let Some(w) = w else {
            j.violations.push(Violation {
                side: Side::Causality,
                detail: format!(
                    "websim served {} {} (start {} us) that no downloader logged sending",
                    s.method,
                    s.url(),
                    s.start_us
                ),
            });
            continue;
        };
        j.matched += 1;
        if s.start_us < w.sent_us {
            j.violations.push(Violation {
                side: Side::Causality,
                detail: format!(
                    "{}: websim had the request at {} us, before {} sent it at {} us (job {})",
                    w.url, s.start_us, w.downloader, w.sent_us, w.job
                ),
            });
        }
        if w.answered() && w.received_us < s.write_from_us {
            j.violations.push(Violation {
                side: Side::Causality,
                detail: format!(
                    "{}: {} had the whole response at {} us, before websim began writing it \
                     at {} us (job {})",
                    w.url, w.downloader, w.received_us, s.write_from_us, w.job
                ),
            });
        }
        if w.answered() {
            j.server_max_service_us = j.server_max_service_us.max(s.service_us);
        }
    }

    // Server, per origin: start(next) - write_from(prev), where the previous
    // request was answered (the crawler did not give up before websim wrote).
    let mut server_by_origin: BTreeMap<String, Vec<(&LogLine, &WireLine)>> = BTreeMap::new();
    for (s, w) in &pairs {
        if let Some(w) = w {
            server_by_origin
                .entry(origin_of(&s.url()))
                .or_default()
                .push((s, w));
        }
    }
    for (origin, lines) in &server_by_origin {
        let d = (rules.interval_us)(origin);
        for w in lines.windows(2) {
            let ((prev, prev_wire), (next, _)) = (w[0], w[1]);
            if !prev_wire.answered() || prev.write_from_us == 0 {
                continue;
            }
            let bound = next.start_us as i64 - prev.write_from_us as i64;
            if j.server_min_gap.is_none_or(|(g, _)| bound < g) {
                j.server_min_gap = Some((bound, d));
            }
            if bound < d {
                j.violations.push(Violation {
                    side: Side::Server,
                    detail: format!(
                        "{origin}: websim had {} {} {} after it began writing the response to \
                         {} (interval {}): start {} us, write from {} us",
                        next.method,
                        next.target,
                        ms(bound),
                        prev.target,
                        ms(d),
                        next.start_us,
                        prev.write_from_us
                    ),
                });
            }
        }
    }
    j
}

impl Judgement {
    /// The figures in one line, for the test's log.
    pub fn figures(&self, rules: &Rules<'_>) -> String {
        let pair = |p: Option<(i64, i64)>| {
            p.map_or("-".to_owned(), |(g, d)| {
                format!("{} (its interval {})", ms(g), ms(d))
            })
        };
        format!(
            "{} requests sent ({} matched in websim's log), {} origins: crawler's min gap \
             sent(next) - received(prev) {}, websim's min start(next) - write_from(prev) {}; \
             {} IPs (limit {} in flight, {} apart): crawler's max in flight {}, min spacing \
             sent(next) - written(prev) {}; websim's max service time {}; {} violations",
            self.sent,
            self.matched,
            self.origins,
            pair(self.min_gap),
            pair(self.server_min_gap),
            self.ips,
            rules.ip_max_in_flight,
            ms(rules.ip_spacing_us),
            self.ip_max_in_flight,
            self.ip_min_spacing.map_or("-".to_owned(), ms),
            ms(self.server_max_service_us as i64),
            self.violations.len()
        )
    }

    /// Panics with every violation (the first 20) if there is one.
    pub fn assert_polite(&self) {
        if self.violations.is_empty() {
            return;
        }
        let mut by_side: BTreeMap<String, usize> = BTreeMap::new();
        for v in &self.violations {
            *by_side.entry(format!("{:?}", v.side)).or_default() += 1;
        }
        let list: Vec<String> = self
            .violations
            .iter()
            .take(20)
            .map(|v| format!("  [{:?}] {}", v.side, v.detail))
            .collect();
        panic!(
            "{} politeness violations (by side that saw them: {by_side:?}):\n{}",
            self.violations.len(),
            list.join("\n")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(sent: u64, written: u64, received: u64, url: &str, job: u64) -> WireLine {
        WireLine {
            sent_us: sent,
            written_us: written,
            received_us: received,
            downloader: "dl-1".into(),
            job,
            purpose: "page".into(),
            addr: "127.1.0.1:8080".parse().unwrap(),
            url: url.into(),
            result: "200".into(),
        }
    }

    fn served(start: u64, write_from: u64, end: u64, url_path: &str) -> LogLine {
        LogLine {
            start_us: start,
            end_us: end,
            write_from_us: write_from,
            service_us: end - start,
            scheme: "http".into(),
            host: "a.test:8080".into(),
            server: "127.1.0.1:8080".parse().unwrap(),
            client: "127.0.0.1:5000".parse().unwrap(),
            method: "GET".into(),
            target: url_path.into(),
            status: 200,
            bytes: 10,
            user_agent: "polycrawl".into(),
        }
    }

    const D: i64 = 100_000;

    fn rules() -> Rules<'static> {
        Rules {
            interval_us: &|_| D,
            ip_spacing_us: 50_000,
            ip_max_in_flight: 1,
        }
    }

    #[test]
    fn a_late_server_end_stamp_is_not_a_violation() {
        let a = "http://a.test:8080/a";
        let b = "http://a.test:8080/b";
        let w = [
            wire(1_000, 1_010, 2_000, a, 1),
            wire(102_001, 102_010, 103_000, b, 2),
        ];
        // websim stamped /a's end 20 ms late: start-to-end looks like 80 ms.
        let s = [
            served(1_050, 1_100, 22_000, "/a"),
            served(102_050, 102_100, 102_500, "/b"),
        ];
        let j = judge(&w, &s, &rules());
        assert!(j.violations.is_empty(), "{:?}", j.violations);
        assert_eq!(j.min_gap, Some((100_001, D)));
        assert_eq!(j.server_min_gap, Some((100_950, D)));
        assert_eq!(j.matched, 2);
    }

    #[test]
    fn an_early_request_is_seen_by_the_crawler_and_by_websim() {
        let a = "http://a.test:8080/a";
        let b = "http://a.test:8080/b";
        let w = [
            wire(1_000, 1_010, 2_000, a, 1),
            wire(90_000, 90_010, 91_000, b, 2),
        ];
        let s = [
            served(1_050, 1_100, 1_200, "/a"),
            served(90_050, 90_100, 90_200, "/b"),
        ];
        let j = judge(&w, &s, &rules());
        let sides: Vec<Side> = j.violations.iter().map(|v| v.side).collect();
        assert_eq!(sides, [Side::Crawler, Side::Server], "{:?}", j.violations);
        assert!(j.violations[0].detail.contains("job 2"));
    }

    #[test]
    fn stamps_that_contradict_the_server_are_caught() {
        let a = "http://a.test:8080/a";
        let b = "http://a.test:8080/b";
        // The crawler claims it sent /b at 200 ms, websim had it at 150 ms; and it
        // claims /a complete before websim began writing it.
        let w = [
            wire(1_000, 1_010, 1_020, a, 1),
            wire(200_000, 200_010, 201_000, b, 2),
        ];
        let s = [
            served(1_050, 1_100, 1_200, "/a"),
            served(150_000, 150_100, 150_200, "/b"),
        ];
        let j = judge(&w, &s, &rules());
        let sides: Vec<Side> = j.violations.iter().map(|v| v.side).collect();
        assert_eq!(
            sides,
            [Side::Causality, Side::Causality],
            "{:?}",
            j.violations
        );
        // A request websim served that no downloader logged.
        let j = judge(&w[..1], &s, &rules());
        assert_eq!(j.violations.len(), 2, "{:?}", j.violations);
        assert!(
            j.violations
                .iter()
                .any(|v| v.detail.contains("no downloader"))
        );
    }

    #[test]
    fn ip_spacing_and_in_flight_are_judged_from_write_ends() {
        let mut b = wire(20_000, 20_010, 60_000, "http://b.test:8080/x", 2);
        b.downloader = "dl-2".into();
        let w = [wire(500, 1_000, 30_000, "http://a.test:8080/a", 1), b];
        let j = judge(&w, &[], &rules());
        assert_eq!(j.ip_min_spacing, Some(19_000));
        let text: Vec<&str> = j.violations.iter().map(|v| v.detail.as_str()).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text[0].contains("dl-2") && text[0].contains("spacing"));
        assert!(text[1].contains("2 requests in flight"));
    }
}
