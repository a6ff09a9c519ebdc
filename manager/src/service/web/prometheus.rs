//! `GET /metrics`: the admin status in the OpenMetrics text format (which Prometheus
//! scrapes natively), for the monitoring operators already run. The figures are
//! those of the admin page (one [`StatusSnapshot`]); their family names are the
//! constants below. The format itself (escaping, `# HELP`/`# TYPE`, a counter's
//! `_total` sample, `# EOF`) is written by the Prometheus project's own Rust client,
//! `prometheus-client`: this module only says which figure goes in which family.
//!
//! Labels are low-cardinality only: a status class, an outcome reason, a host
//! state, a speed window, a cut rule. Never a URL, a host name or a component id.
//! Totals marked persistent on the snapshot are counters over the whole crawl
//! (they survive restarts); the rest are gauges. Like `GET /api/stats`, it needs no
//! token: it changes nothing, and the admin server listens on loopback unless
//! configured otherwise. This module must never ask the engine anything itself: a
//! fresh registry is filled from one snapshot per scrape (a few dozen samples).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use spool::OutcomeReason;
use spool::protocol::{ReasonCount, StatusSnapshot};

/// Pages stored over the crawl (persistent; sample `polycrawl_pages_total`).
pub const PAGES: &str = "polycrawl_pages";
/// Fetches answered or failed, pages and robots.txt (persistent).
pub const REQUESTS: &str = "polycrawl_requests";
/// Response bytes received, pages and robots.txt (persistent).
pub const BYTES: &str = "polycrawl_received_bytes";
/// robots.txt verdicts obtained (persistent).
pub const ROBOTS: &str = "polycrawl_robots_fetched";
/// Page responses by status class, label `class` (`1xx` .. `5xx`, `other`).
pub const RESPONSES: &str = "polycrawl_responses";
/// Fetch attempts without a response, label `reason` (persistent).
pub const FETCH_ERRORS: &str = "polycrawl_fetch_errors";
/// URLs ended without a page, label `reason` (persistent).
pub const OUTCOMES: &str = "polycrawl_outcomes";
/// Pages per second, label `window` (`now`, `minute`, `hour`).
pub const SPEED: &str = "polycrawl_pages_per_second";
/// The speed target in force, pages per second.
pub const TARGET: &str = "polycrawl_target_pages_per_second";
/// URLs in host queues, in flight included.
pub const QUEUED_URLS: &str = "polycrawl_queued_urls";
/// Fetch jobs out at downloaders.
pub const IN_FLIGHT: &str = "polycrawl_jobs_in_flight";
/// Host names waiting for a resolver.
pub const DNS_PENDING: &str = "polycrawl_names_to_resolve";
/// Request files published and not completely loaded.
pub const REQUEST_FILES_PENDING: &str = "polycrawl_request_files_pending";
/// Hosts in memory by state, label `state`.
pub const HOSTS: &str = "polycrawl_hosts";
/// Components connected.
pub const COMPONENTS: &str = "polycrawl_components";
/// In-scope URLs cut, by rule (absent while nothing is cut).
pub const CUT_URLS: &str = "polycrawl_cut_urls";
/// Hosts with in-scope URLs cut, by rule.
pub const CUT_HOSTS: &str = "polycrawl_cut_hosts";
/// Seconds since the manager process started.
pub const UPTIME: &str = "polycrawl_uptime_seconds";

/// The `Content-Type` of the answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One label: its name and value.
type Labels = Vec<(&'static str, String)>;
/// A gauge holding a float (speeds, seconds); counts use `Gauge<i64>`.
type FloatGauge = Gauge<f64, AtomicU64>;

/// The snapshot as OpenMetrics text: the crawl's totals, then what is going on now.
///
/// # Errors
/// Only if the encoder refuses a name or label it was given (never for the fixed
/// names and values here; writing to a `String` cannot fail).
pub fn render(s: &StatusSnapshot) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    totals(&mut registry, s);
    responses(&mut registry, s);
    speed(&mut registry, s);
    work(&mut registry, s);
    hosts(&mut registry, s);
    cuts(&mut registry, s);
    process(&mut registry, s);
    let mut out = String::with_capacity(4096);
    encode(&mut out, &registry)?;
    Ok(out)
}

/// A counter without labels.
fn counter(registry: &mut Registry, name: &str, help: &str, v: u64) {
    let c = Counter::<u64>::default();
    c.inc_by(v);
    registry.register(name, help, c);
}

/// A gauge without labels.
fn gauge(registry: &mut Registry, name: &str, help: &str, v: f64) {
    let g = FloatGauge::default();
    g.set(v);
    registry.register(name, help, g);
}

/// A counter family: one sample per `(label, value)`.
fn counters<'a>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    label: &'static str,
    samples: impl IntoIterator<Item = (&'a str, u64)>,
) {
    let family = Family::<Labels, Counter<u64>>::default();
    for (value, n) in samples {
        family
            .get_or_create(&vec![(label, value.to_owned())])
            .inc_by(n);
    }
    registry.register(name, help, family);
}

/// A gauge without labels holding a count.
fn count(registry: &mut Registry, name: &str, help: &str, v: u64) {
    let g = Gauge::<i64>::default();
    g.set(i64::try_from(v).unwrap_or(i64::MAX));
    registry.register(name, help, g);
}

/// A gauge family of counts: one sample per `(label, value)`.
fn counts<'a>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    label: &'static str,
    samples: impl IntoIterator<Item = (&'a str, u64)>,
) {
    let family = Family::<Labels, Gauge<i64>>::default();
    for (value, n) in samples {
        family
            .get_or_create(&vec![(label, value.to_owned())])
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    registry.register(name, help, family);
}

/// A gauge family: one sample per `(label, value)`.
fn gauges<'a>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    label: &'static str,
    samples: impl IntoIterator<Item = (&'a str, f64)>,
) {
    let family = Family::<Labels, FloatGauge>::default();
    for (value, v) in samples {
        family
            .get_or_create(&vec![(label, value.to_owned())])
            .set(v);
    }
    registry.register(name, help, family);
}

/// Every reason with its count, zero where none: a series exists from the first
/// scrape, so `rate()` and alerts see the first error too.
fn reasons(counts: &[ReasonCount]) -> impl Iterator<Item = (&'static str, u64)> + '_ {
    OutcomeReason::ALL.into_iter().map(|reason| {
        let n = counts
            .iter()
            .filter(|c| c.reason == reason)
            .map(|c| c.count)
            .sum();
        (reason.as_str(), n)
    })
}

/// URLs and hosts in scope cut, by rule, summed over the applications (the
/// admin page's "Cut in scope"; a crawl with any is incomplete).
fn cuts(registry: &mut Registry, s: &StatusSnapshot) {
    let mut by_rule: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for app in s.components.iter().filter_map(|c| c.state.app.as_ref()) {
        for cut in &app.cuts {
            let sum = by_rule.entry(cut.rule.as_str()).or_default();
            sum.0 += cut.urls;
            sum.1 += cut.hosts;
        }
    }
    counts(
        registry,
        CUT_URLS,
        "URLs in the crawl's scope cut and not requested, by rule",
        "rule",
        by_rule.iter().map(|(rule, (n, _))| (*rule, *n)),
    );
    counts(
        registry,
        CUT_HOSTS,
        "Hosts with URLs in scope cut, by rule (summed over applications)",
        "rule",
        by_rule.iter().map(|(rule, (_, n))| (*rule, *n)),
    );
}

/// The persistent totals: pages, fetches, bytes and robots.txt verdicts.
fn totals(registry: &mut Registry, s: &StatusSnapshot) {
    counter(
        registry,
        PAGES,
        "Pages stored over the crawl",
        s.pages_total,
    );
    counter(
        registry,
        REQUESTS,
        "Fetches answered or failed over the crawl",
        s.requests_total,
    );
    counter(
        registry,
        BYTES,
        "Response bytes received over the crawl",
        s.bytes_total,
    );
    counter(
        registry,
        ROBOTS,
        "robots.txt verdicts obtained over the crawl",
        s.robots_fetched,
    );
}

/// How fetches ended: page responses by status class, fetch errors and outcomes by
/// reason.
fn responses(registry: &mut Registry, s: &StatusSnapshot) {
    let mut classes = [0u64; 6];
    for c in &s.http_status {
        let class = usize::from(c.code / 100);
        classes[if (1..=5).contains(&class) { class } else { 0 }] += c.count;
    }
    let names = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];
    counters(
        registry,
        RESPONSES,
        "Page responses over the crawl by status class",
        "class",
        (1..6).chain([0]).map(|i| (names[i], classes[i])),
    );
    counters(
        registry,
        FETCH_ERRORS,
        "Fetch attempts without a response over the crawl",
        "reason",
        reasons(&s.fetch_errors),
    );
    counters(
        registry,
        OUTCOMES,
        "URLs ended without a page over the crawl",
        "reason",
        reasons(&s.outcomes),
    );
}

/// The speed over three windows and the target in force.
fn speed(registry: &mut Registry, s: &StatusSnapshot) {
    gauges(
        registry,
        SPEED,
        "Pages stored per second",
        "window",
        [
            ("now", f64::from(s.pages_per_sec_now)),
            ("minute", f64::from(s.pages_per_sec)),
            ("hour", f64::from(s.pages_per_sec_hour)),
        ],
    );
    gauge(
        registry,
        TARGET,
        "The speed target in force",
        f64::from(s.target_pages_per_sec),
    );
}

/// The work waiting and under way: queued URLs, jobs out, names to resolve,
/// request files to load.
fn work(registry: &mut Registry, s: &StatusSnapshot) {
    let figures = [
        (
            QUEUED_URLS,
            "URLs in host queues, in flight included",
            s.queued_urls,
        ),
        (IN_FLIGHT, "Fetch jobs out at downloaders", s.in_flight),
        (
            DNS_PENDING,
            "Host names waiting for a resolver",
            s.dns_pending,
        ),
        (
            REQUEST_FILES_PENDING,
            "Request files not completely loaded",
            s.request_files_pending,
        ),
    ];
    for (name, help, v) in figures {
        count(registry, name, help, v);
    }
}

/// Hosts in memory by state.
fn hosts(registry: &mut Registry, s: &StatusSnapshot) {
    let h = &s.hosts;
    counts(
        registry,
        HOSTS,
        "Hosts by state (dead: over the crawl)",
        "state",
        [
            ("resolving", h.resolving),
            ("robots", h.robots),
            ("ready", h.ready),
            ("parked", h.parked),
            ("fetching", h.fetching),
            ("waiting", h.waiting),
            ("backed_off", h.backed_off),
            ("dead", h.dead),
        ],
    );
}

/// The manager itself: components connected and uptime.
fn process(registry: &mut Registry, s: &StatusSnapshot) {
    count(
        registry,
        COMPONENTS,
        "Components connected",
        s.components.len() as u64,
    );
    gauge(
        registry,
        UPTIME,
        "Seconds since the manager started",
        s.uptime_ms as f64 / 1000.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool::protocol::StatusCount;

    #[test]
    fn families_have_help_type_and_samples() {
        let text = render(&snapshot()).expect("encoded");
        for name in [PAGES, BYTES, RESPONSES, SPEED, QUEUED_URLS, HOSTS, OUTCOMES] {
            assert!(text.contains(&format!("# TYPE {name} ")), "{name}\n{text}");
        }
        assert!(text.contains("polycrawl_pages_total 7\n"), "{text}");
        assert!(text.contains("polycrawl_requests_total 9\n"), "{text}");
        assert!(
            text.contains("polycrawl_responses_total{class=\"2xx\"} 5\n"),
            "{text}"
        );
        assert!(
            text.contains("polycrawl_responses_total{class=\"4xx\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("polycrawl_fetch_errors_total{reason=\"timeout\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("polycrawl_hosts{state=\"backed_off\"} 0\n"),
            "{text}"
        );
        assert!(text.ends_with('\n'));
        let order: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        assert_eq!(
            order,
            [
                PAGES,
                REQUESTS,
                BYTES,
                ROBOTS,
                RESPONSES,
                FETCH_ERRORS,
                OUTCOMES,
                SPEED,
                TARGET,
                QUEUED_URLS,
                IN_FLIGHT,
                DNS_PENDING,
                REQUEST_FILES_PENDING,
                HOSTS,
                COMPONENTS,
                UPTIME
            ]
        );
        assert!(text.contains("# HELP polycrawl_received_bytes Response bytes received over the crawl.\n# TYPE polycrawl_received_bytes counter\npolycrawl_received_bytes_total 1000\n"), "{text}");
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        assert!(
            text.contains(&format!(
                "polycrawl_outcomes_total{{reason=\"{}\"}} 4\n",
                OutcomeReason::RobotsExcluded.as_str()
            )),
            "{text}"
        );
        assert!(
            text.contains("polycrawl_jobs_in_flight 1\n")
                && text.contains("polycrawl_uptime_seconds 1.5\n"),
            "{text}"
        );
    }

    /// The applications' cuts, summed by rule.
    #[test]
    fn cuts_by_rule_over_the_applications() {
        let mut s = snapshot();
        let app = |cuts: Vec<(&str, u64, u64)>| {
            serde_json::from_value::<spool::protocol::ComponentStatus>(serde_json::json!({
                "role": "application", "id": "app-bfs", "last_heard_ms": 1, "healthy": true,
                "load": serde_json::to_value(spool::protocol::Load::default()).expect("json"),
                "state": {"pause": null, "app": serde_json::to_value(spool::protocol::AppFigures {
                    cuts: cuts.into_iter().map(|(rule, urls, hosts)| spool::protocol::RuleCut {
                        rule: rule.into(), urls, hosts,
                    }).collect(),
                    ..Default::default()
                }).expect("json")}
            }))
            .expect("a component")
        };
        s.components = vec![
            app(vec![("depth", 3, 1), ("host_ceiling", 10, 2)]),
            app(vec![("depth", 4, 2)]),
        ];
        let text = render(&s).expect("encoded");
        assert!(
            text.contains("polycrawl_cut_urls{rule=\"depth\"} 7\n"),
            "{text}"
        );
        assert!(
            text.contains("polycrawl_cut_urls{rule=\"host_ceiling\"} 10\n"),
            "{text}"
        );
        assert!(
            text.contains("polycrawl_cut_hosts{rule=\"depth\"} 3\n"),
            "{text}"
        );
    }

    fn snapshot() -> StatusSnapshot {
        let json = serde_json::json!({
            "pages_per_sec_now": 1.5, "pages_per_sec": 1.0, "pages_per_sec_hour": 0.5,
            "speed_chart": [], "target_pages_per_sec": 100.0, "pages_total": 7,
            "bytes_total": 1000, "robots_fetched": 2,
            "http_status": [], "fetch_errors": [], "outcomes": [],
            "queued_urls": 3, "in_flight": 1, "in_flight_per_host": [], "dns_pending": 0,
            "hosts": {"resolving": 0, "robots": 0, "ready": 1, "parked": 0, "fetching": 1,
                      "waiting": 2, "backed_off": 0, "dead": 0},
            "backed_off": [], "request_files_pending": 0, "request_files_loaded": 1,
            "uptime_ms": 1500, "requests_total": 9, "components": [],
            "speed": serde_json::to_value(spool::protocol::SpeedStatus::default())
                .expect("json"),
            "pause": null
        });
        let mut s: StatusSnapshot = serde_json::from_value(json).expect("a snapshot");
        s.http_status = vec![
            StatusCount {
                code: 200,
                count: 5,
            },
            StatusCount {
                code: 404,
                count: 2,
            },
        ];
        s.fetch_errors = vec![ReasonCount {
            reason: OutcomeReason::Timeout,
            count: 3,
        }];
        s.outcomes = vec![ReasonCount {
            reason: OutcomeReason::RobotsExcluded,
            count: 4,
        }];
        s
    }
}
