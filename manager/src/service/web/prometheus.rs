//! `GET /metrics`: the admin status in the Prometheus text exposition format
//! (version 0.0.4), for the monitoring operators already run. The figures are those
//! of the admin page (one [`StatusSnapshot`]); their names are the constants below.
//!
//! Labels are low-cardinality only: a status class, an outcome reason, a host
//! state, a speed window. Never a URL, a host name or a component id. Totals marked
//! persistent on the snapshot are counters over the whole crawl (they survive
//! restarts); the rest are gauges. Like `GET /api/stats`, it needs no token: it
//! changes nothing, and the admin server listens on loopback unless configured
//! otherwise. This module must never ask the engine anything itself.

use std::fmt::Write as _;

use spool::protocol::{ReasonCount, StatusSnapshot};

/// Pages stored over the crawl (persistent).
pub const PAGES: &str = "polycrawl_pages_total";
/// Fetches answered or failed, pages and robots.txt (persistent).
pub const REQUESTS: &str = "polycrawl_requests_total";
/// Response bytes received, pages and robots.txt (persistent).
pub const BYTES: &str = "polycrawl_received_bytes_total";
/// robots.txt verdicts obtained (persistent).
pub const ROBOTS: &str = "polycrawl_robots_fetched_total";
/// Page responses by status class, label `class` (`1xx` .. `5xx`, `other`).
pub const RESPONSES: &str = "polycrawl_responses_total";
/// Fetch attempts without a response, label `reason` (persistent).
pub const FETCH_ERRORS: &str = "polycrawl_fetch_errors_total";
/// URLs ended without a page, label `reason` (persistent).
pub const OUTCOMES: &str = "polycrawl_outcomes_total";
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
/// In-scope URLs cut, by rule.
pub const CUT_URLS: &str = "polycrawl_cut_urls";
/// Hosts with in-scope URLs cut, by rule.
pub const CUT_HOSTS: &str = "polycrawl_cut_hosts";
/// Seconds since the manager process started.
pub const UPTIME: &str = "polycrawl_uptime_seconds";

/// The `Content-Type` of the answer.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One metric family: its header and samples.
fn family(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(&str, &str, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (label, value, v) in samples {
        if label.is_empty() {
            let _ = writeln!(out, "{name} {v}");
        } else {
            let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {v}");
        }
    }
}

fn reasons(counts: &[ReasonCount]) -> Vec<(&'static str, &'static str, f64)> {
    counts
        .iter()
        .map(|c| ("reason", c.reason.as_str(), c.count as f64))
        .collect()
}

/// One sample without labels.
fn one(v: f64) -> [(&'static str, &'static str, f64); 1] {
    [("", "", v)]
}

/// The snapshot as Prometheus text: the crawl's totals, then what is going on now.
pub fn render(s: &StatusSnapshot) -> String {
    let mut out = String::with_capacity(4096);
    totals(&mut out, s);
    responses(&mut out, s);
    speed(&mut out, s);
    work(&mut out, s);
    hosts(&mut out, s);
    cuts(&mut out, s);
    process(&mut out, s);
    out
}

/// URLs and hosts in scope cut, by rule, summed over the applications (the
/// admin page's "Cut in scope"; a crawl with any is incomplete).
fn cuts(out: &mut String, s: &StatusSnapshot) {
    let mut by_rule: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
    for app in s.components.iter().filter_map(|c| c.state.app.as_ref()) {
        for cut in &app.cuts {
            let sum = by_rule.entry(cut.rule.as_str()).or_default();
            sum.0 += cut.urls;
            sum.1 += cut.hosts;
        }
    }
    let urls: Vec<(&str, &str, f64)> = by_rule
        .iter()
        .map(|(rule, (n, _))| ("rule", *rule, *n as f64))
        .collect();
    let hosts: Vec<(&str, &str, f64)> = by_rule
        .iter()
        .map(|(rule, (_, n))| ("rule", *rule, *n as f64))
        .collect();
    family(
        out,
        CUT_URLS,
        "gauge",
        "URLs in the crawl's scope cut and not requested, by rule.",
        &urls,
    );
    family(
        out,
        CUT_HOSTS,
        "gauge",
        "Hosts with URLs in scope cut, by rule (summed over applications).",
        &hosts,
    );
}

/// The persistent totals: pages, fetches, bytes and robots.txt verdicts.
fn totals(out: &mut String, s: &StatusSnapshot) {
    let counters = [
        (PAGES, "Pages stored over the crawl.", s.pages_total),
        (
            REQUESTS,
            "Fetches answered or failed over the crawl.",
            s.requests_total,
        ),
        (
            BYTES,
            "Response bytes received over the crawl.",
            s.bytes_total,
        ),
        (
            ROBOTS,
            "robots.txt verdicts obtained over the crawl.",
            s.robots_fetched,
        ),
    ];
    for (name, help, v) in counters {
        family(out, name, "counter", help, &one(v as f64));
    }
}

/// How fetches ended: page responses by status class, fetch errors and outcomes by
/// reason.
fn responses(out: &mut String, s: &StatusSnapshot) {
    let mut classes = [0u64; 6];
    for c in &s.http_status {
        let class = usize::from(c.code / 100);
        classes[if (1..=5).contains(&class) { class } else { 0 }] += c.count;
    }
    let names = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];
    let by_class: Vec<_> = (1..6)
        .chain([0])
        .map(|i| ("class", names[i], classes[i] as f64))
        .collect();
    family(
        out,
        RESPONSES,
        "counter",
        "Page responses over the crawl by status class.",
        &by_class,
    );
    family(
        out,
        FETCH_ERRORS,
        "counter",
        "Fetch attempts without a response over the crawl.",
        &reasons(&s.fetch_errors),
    );
    family(
        out,
        OUTCOMES,
        "counter",
        "URLs ended without a page over the crawl.",
        &reasons(&s.outcomes),
    );
}

/// The speed over three windows and the target in force.
fn speed(out: &mut String, s: &StatusSnapshot) {
    let speed = [
        ("window", "now", f64::from(s.pages_per_sec_now)),
        ("window", "minute", f64::from(s.pages_per_sec)),
        ("window", "hour", f64::from(s.pages_per_sec_hour)),
    ];
    family(out, SPEED, "gauge", "Pages stored per second.", &speed);
    family(
        out,
        TARGET,
        "gauge",
        "The speed target in force.",
        &one(f64::from(s.target_pages_per_sec)),
    );
}

/// The work waiting and under way: queued URLs, jobs out, names to resolve,
/// request files to load.
fn work(out: &mut String, s: &StatusSnapshot) {
    let gauges = [
        (
            QUEUED_URLS,
            "URLs in host queues, in flight included.",
            s.queued_urls,
        ),
        (IN_FLIGHT, "Fetch jobs out at downloaders.", s.in_flight),
        (
            DNS_PENDING,
            "Host names waiting for a resolver.",
            s.dns_pending,
        ),
        (
            REQUEST_FILES_PENDING,
            "Request files not completely loaded.",
            s.request_files_pending,
        ),
    ];
    for (name, help, v) in gauges {
        family(out, name, "gauge", help, &one(v as f64));
    }
}

/// Hosts in memory by state.
fn hosts(out: &mut String, s: &StatusSnapshot) {
    let h = &s.hosts;
    let hosts = [
        ("state", "resolving", h.resolving as f64),
        ("state", "robots", h.robots as f64),
        ("state", "ready", h.ready as f64),
        ("state", "parked", h.parked as f64),
        ("state", "fetching", h.fetching as f64),
        ("state", "waiting", h.waiting as f64),
        ("state", "backed_off", h.backed_off as f64),
        ("state", "dead", h.dead as f64),
    ];
    family(
        out,
        HOSTS,
        "gauge",
        "Hosts by state (dead: over the crawl).",
        &hosts,
    );
}

/// The manager itself: components connected and uptime.
fn process(out: &mut String, s: &StatusSnapshot) {
    family(
        out,
        COMPONENTS,
        "gauge",
        "Components connected.",
        &one(s.components.len() as f64),
    );
    family(
        out,
        UPTIME,
        "gauge",
        "Seconds since the manager started.",
        &one(s.uptime_ms as f64 / 1000.0),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool::OutcomeReason;
    use spool::protocol::StatusCount;

    #[test]
    fn families_have_help_type_and_samples() {
        let text = render(&snapshot());
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
                CUT_URLS,
                CUT_HOSTS,
                COMPONENTS,
                UPTIME
            ]
        );
        assert!(text.contains("# HELP polycrawl_received_bytes_total Response bytes received over the crawl.\n# TYPE polycrawl_received_bytes_total counter\npolycrawl_received_bytes_total 1000\n"), "{text}");
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
        let text = render(&s);
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
        s
    }
}
