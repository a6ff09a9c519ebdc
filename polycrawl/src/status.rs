//! `polycrawl status`: asks a running manager for its figures over the control port
//! (role `Admin`, [`AdminCommand::Status`]) and prints them for a person: the same
//! figures as the admin page (`GET /api/stats` is the same snapshot as JSON).
//!
//! This module must never change anything in the crawl: it only sends `Status`.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Context;
use spool::ComponentId;
use spool::protocol::{
    AdminCommand, AdminReply, AppFigures, ByeReason, ComponentStatus, DEFAULT_HANDSHAKE_TIMEOUT,
    Hello, Limits, Message, Pause, PauseReason, ReasonCount, Role, Speed, SpeedStatus,
    StatusSnapshot, TargetSource, Token, client_handshake,
};
use tokio::net::TcpStream;

/// How long the manager gets to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the manager at `addr` as an admin with `token` and returns its
/// status snapshot.
pub async fn fetch(addr: &str, token: Token, max_frame: u32) -> anyhow::Result<StatusSnapshot> {
    let stream = tokio::time::timeout(DEFAULT_HANDSHAKE_TIMEOUT, TcpStream::connect(addr))
        .await
        .with_context(|| format!("no answer from the manager at {addr}"))?
        .with_context(|| format!("cannot connect to the manager at {addr}"))?;
    let id =
        ComponentId::new(format!("status-{}", std::process::id())).context("status client id")?;
    let limits = Limits {
        max_frame,
        handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
    };
    let (mut conn, _welcome) = client_handshake(stream, Hello::new(Role::Admin, id, token), limits)
        .await
        .with_context(|| format!("the manager at {addr} refused the admin connection"))?;
    conn.send(&Message::Admin(AdminCommand::Status)).await?;
    let answer = async {
        loop {
            match conn.recv().await? {
                Some(Message::AdminReply(reply)) => return Ok(reply),
                Some(_) => continue, // Heartbeats.
                None => anyhow::bail!("the manager closed the connection without answering"),
            }
        }
    };
    let reply = tokio::time::timeout(ANSWER_TIMEOUT, answer)
        .await
        .context("the manager did not answer in time")??;
    let _ = conn.close(ByeReason::ShuttingDown, "status read").await;
    match reply {
        AdminReply::Status(snapshot) => Ok(*snapshot),
        AdminReply::Failed { detail } => anyhow::bail!("the manager refused: {detail}"),
        other => anyhow::bail!("unexpected answer: {other:?}"),
    }
}

/// The snapshot as text for a person: the figures of the admin page, one group
/// per line (counts that are all zero say `none`).
pub fn render(addr: &str, s: &StatusSnapshot) -> String {
    let mut out = String::new();
    let mib = s.bytes_total as f64 / (1024.0 * 1024.0);
    let _ = writeln!(out, "manager        {addr}, up {}", duration(s.uptime_ms));
    let _ = writeln!(
        out,
        "speed          {:.1} pages/s now, {:.1} last minute, {:.1} last hour (target {} pages/s)",
        s.pages_per_sec_now, s.pages_per_sec, s.pages_per_sec_hour, s.target_pages_per_sec
    );
    let _ = writeln!(out, "last hour      {}", sparkline(&s.speed_chart));
    let _ = writeln!(
        out,
        "pages          {} stored, {} requests, {mib:.1} MiB received ({} bytes), {} robots.txt fetched",
        s.pages_total, s.requests_total, s.bytes_total, s.robots_fetched
    );
    let _ = writeln!(out, "speed control  {}", speed_line(&s.speed));
    let _ = writeln!(
        out,
        "queues         {} URLs queued, {} in flight ({}), {} names to resolve",
        s.queued_urls,
        s.in_flight,
        per_host(&s.in_flight_per_host),
        s.dns_pending
    );
    let _ = writeln!(
        out,
        "request files  {} pending, {} loaded",
        s.request_files_pending, s.request_files_loaded
    );
    let h = &s.hosts;
    let _ = writeln!(
        out,
        "hosts          {} resolving, {} robots.txt, {} ready, {} parked, {} fetching, \
         {} waiting, {} backed off, {} dead",
        h.resolving, h.robots, h.ready, h.parked, h.fetching, h.waiting, h.backed_off, h.dead
    );
    for b in &s.backed_off {
        let secs = b.until_ms % 86_400_000 / 1000;
        let (h, m, sec) = (secs / 3600, secs % 3600 / 60, secs % 60);
        let _ = writeln!(
            out,
            "  backed off   {} until {h:02}:{m:02}:{sec:02} UTC: {}",
            b.origin, b.reason
        );
    }
    let responses: u64 = s.http_status.iter().map(|c| c.count).sum();
    let codes: Vec<String> = s
        .http_status
        .iter()
        .map(|c| {
            let pct = 100.0 * c.count as f64 / responses.max(1) as f64;
            format!("{} {} ({pct:.1} %)", c.code, c.count)
        })
        .collect();
    let _ = writeln!(out, "HTTP status    {}", or_none(&codes));
    let _ = writeln!(out, "fetch errors   {}", reasons(&s.fetch_errors));
    let _ = writeln!(out, "outcomes       {}", reasons(&s.outcomes));
    if let Some(p) = &s.pause {
        let _ = writeln!(out, "PAUSED         outcome files: {}", pause_text(p));
    }
    let _ = writeln!(out, "components     {}", s.components.len());
    for c in &s.components {
        let _ = writeln!(out, "  {}", component_line(c));
        if let Some(a) = &c.state.app {
            let _ = writeln!(out, "    {}", app_line(a));
        }
    }
    out
}

/// Where the target comes from, until when, and what limits the speed.
fn speed_line(s: &SpeedStatus) -> String {
    let source = match s.source {
        TargetSource::Config => "config",
        TargetSource::Schedule => "schedule",
        TargetSource::Operator => "operator",
    };
    let until = s.until_ms.map_or_else(String::new, |ms| {
        let minute = ms % 86_400_000 / 60_000;
        format!(" until {:02}:{:02} UTC", minute / 60, minute % 60)
    });
    format!(
        "target from {source}{until}; {:.1} fetches/s, {}; mean job {:.0} ms",
        s.fetches_per_sec,
        s.limit.describe(),
        s.mean_job_ms
    )
}

fn or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// The non-zero counts as `reason count, ...`.
fn reasons(counts: &[ReasonCount]) -> String {
    let items: Vec<String> = counts
        .iter()
        .filter(|r| r.count > 0)
        .map(|r| format!("{} {}", r.reason, r.count))
        .collect();
    or_none(&items)
}

/// `1 h 2 min 3 s`.
fn duration(ms: u64) -> String {
    let s = ms / 1000;
    let (h, m) = (s / 3600, s % 3600 / 60);
    match (h, m) {
        (0, 0) => format!("{} s", s % 60),
        (0, _) => format!("{m} min {} s", s % 60),
        _ => format!("{h} h {m} min {} s", s % 60),
    }
}

/// The chart as one character per minute (the mean of its steps), scaled to the
/// largest; empty before the first complete step.
fn sparkline(chart: &[f32]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let per_char = (60 / Speed::CHART_STEP_SECS).max(1) as usize;
    let minutes: Vec<f32> = chart
        .chunks(per_char)
        .map(|c| c.iter().sum::<f32>() / c.len() as f32)
        .collect();
    let max = minutes.iter().copied().fold(0.0f32, f32::max);
    if minutes.is_empty() {
        return "(no complete minute yet)".to_owned();
    }
    let line: String = minutes
        .iter()
        .map(|v| {
            let i = if max > 0.0 {
                (v / max * 7.0).round() as usize
            } else {
                0
            };
            BARS[i.min(7)]
        })
        .collect();
    format!("{line} (max {max:.1} pages/s, one mark per minute)")
}

fn component_line(c: &ComponentStatus) -> String {
    let health = if c.healthy { "ok" } else { "late" };
    let heard = c.last_heard_ms as f64 / 1000.0;
    let l = &c.load;
    let work = match c.role {
        Role::Downloader => format!(
            "  in flight {}/{}, queued {}, {:.1} pages/s",
            l.in_flight, l.concurrency, l.queued, l.done_per_sec
        ),
        Role::Resolver => format!(
            "  in flight {}/{}, waiting {}, {:.1} names/s",
            l.in_flight, l.concurrency, l.queued, l.done_per_sec
        ),
        _ => String::new(),
    };
    let paused = match &c.state.pause {
        Some(p) => format!("  PAUSED: {}", pause_text(p)),
        None => String::new(),
    };
    let draining = if c.state.draining {
        "  DRAINING: stopping, takes no new jobs"
    } else {
        ""
    };
    format!(
        "{:<12} {:<24} {:<6} heard {heard:.1} s ago{work}{paused}{draining}",
        c.role.as_str(),
        c.id.as_str(),
        health
    )
}

/// "12 pages; 2 hosts over budget, 40 URLs cut (most: a.test 30/10); trap links
/// cut: sequence 12, date_pages 3; part 0 of 2, 5 URLs sent, 7 received".
fn app_line(a: &AppFigures) -> String {
    let mut line = format!(
        "{} pages; {} hosts over budget, {} URLs cut",
        a.pages, a.hosts_cut, a.urls_cut
    );
    if !a.top_cut.is_empty() {
        let top: Vec<String> = a
            .top_cut
            .iter()
            .map(|h| format!("{} {}/{}", h.host, h.cut, h.budget))
            .collect();
        let _ = write!(line, " (most: {})", top.join(", "));
    }
    let traps: Vec<String> = a
        .traps
        .iter()
        .filter(|t| t.cut > 0)
        .map(|t| format!("{} {}", t.detector, t.cut))
        .collect();
    if !traps.is_empty() {
        let _ = write!(line, "; trap links cut: {}", traps.join(", "));
    }
    if let Some(p) = &a.part {
        let _ = write!(
            line,
            "; part {} of {}, {} URLs sent, {} received",
            p.part, p.parts, p.urls_out, p.urls_in
        );
        if p.sites_assigned + p.sites_reported + p.parked > 0 {
            let _ = write!(
                line,
                ", {} sites assigned, {} reported, {} URLs parked",
                p.sites_assigned, p.sites_reported, p.parked
            );
        }
    }
    if let Some(s) = &a.seeds {
        let held: Vec<String> = s.held.iter().map(ToString::to_string).collect();
        let _ = write!(
            line,
            "; seed-by-seed ({}): seeds queued {}, active {}, finished {}, moved {}; \
             held per worker [{}]",
            s.balance,
            s.queued,
            s.active,
            s.finished,
            s.moved,
            held.join(" ")
        );
        let top: Vec<String> = s
            .top_parties
            .iter()
            .map(|p| format!("{} {}", p.seed, p.pages))
            .collect();
        if !top.is_empty() {
            let _ = write!(line, "; biggest parties: {}", top.join(", "));
        }
    }
    line
}

/// "disk full at /spool/pages/bfs/.tmp (retrying every 1 s at most)".
fn pause_text(p: &Pause) -> String {
    let why = match p.reason {
        PauseReason::DiskFull => "disk full",
    };
    format!(
        "{why} at {} (retrying every {} s at most)",
        p.path,
        p.retry_ms as f64 / 1000.0
    )
}

/// Hosts by their number of requests in flight, e.g. `12 hosts with 1, 40 with 4`.
fn per_host(counts: &[u64]) -> String {
    let parts: Vec<String> = counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("{n} with {}", i + 1))
        .collect();
    if parts.is_empty() {
        return "no host".into();
    }
    format!("hosts: {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use spool::protocol::{
        BudgetCut, ComponentState, HostCounts, Load, PartFigures, StatusCount, TrapCut,
    };
    use spool::{OutcomeReason, Spool};
    use tokio_util::sync::CancellationToken;

    use super::*;

    #[test]
    fn render_shows_figures_and_health() {
        let reason = |reason, count| ReasonCount { reason, count };
        let mut chart = vec![0.0; 12];
        chart.extend([12.0; 6]);
        let snapshot = StatusSnapshot {
            pages_per_sec_now: 12.34,
            pages_per_sec: 11.0,
            pages_per_sec_hour: 2.5,
            speed_chart: chart,
            target_pages_per_sec: 100.0,
            pages_total: 1234,
            requests_total: 1300,
            bytes_total: 3 * 1024 * 1024,
            robots_fetched: 56,
            http_status: vec![
                StatusCount {
                    code: 200,
                    count: 3,
                },
                StatusCount {
                    code: 404,
                    count: 1,
                },
            ],
            fetch_errors: vec![
                reason(OutcomeReason::Timeout, 2),
                reason(OutcomeReason::DnsFailure, 0),
            ],
            outcomes: vec![reason(OutcomeReason::RobotsExcluded, 0)],
            queued_urls: 5678,
            in_flight: 9,
            in_flight_per_host: vec![5, 0, 0, 1],
            dns_pending: 4,
            hosts: HostCounts {
                ready: 12,
                waiting: 34,
                dead: 1,
                ..HostCounts::default()
            },
            backed_off: vec![spool::protocol::BackedOffHost {
                origin: "http://slow.test".into(),
                reason: spool::protocol::BackOffReason::Throttled {
                    status: 429,
                    retry_after_ms: Some(5_000),
                    in_row: 1,
                },
                until_ms: 3_723_000,
            }],
            request_files_pending: 3,
            request_files_loaded: 7,
            uptime_ms: 3_723_000,
            components: vec![
                ComponentStatus {
                    role: Role::Downloader,
                    id: ComponentId::new("dl-1").unwrap(),
                    load: Load {
                        in_flight: 10,
                        concurrency: 500,
                        ..Load::default()
                    },
                    last_heard_ms: 400,
                    healthy: true,
                    state: ComponentState {
                        pause: Some(Pause {
                            reason: PauseReason::DiskFull,
                            path: "/spool/pages/bfs/.tmp".into(),
                            since_ms: 1,
                            retry_ms: 1000,
                        }),
                        app: None,
                        draining: false,
                    },
                },
                ComponentStatus {
                    role: Role::Application,
                    id: ComponentId::new("app-bfs").unwrap(),
                    load: Load::default(),
                    last_heard_ms: 100,
                    healthy: true,
                    state: ComponentState {
                        pause: None,
                        app: Some(AppFigures {
                            hosts_cut: 2,
                            urls_cut: 40,
                            top_cut: vec![BudgetCut {
                                host: "test.a".into(),
                                budget: 10,
                                requested: 10,
                                cut: 30,
                                linking_sites: 0,
                            }],
                            pages: 12,
                            part: Some(PartFigures {
                                part: 0,
                                parts: 2,
                                urls_out: 5,
                                urls_in: 7,
                                sites_assigned: 3,
                                sites_reported: 4,
                                parked: 2,
                            }),
                            traps: vec![
                                TrapCut {
                                    detector: "far_date".into(),
                                    cut: 0,
                                    examples: Vec::new(),
                                },
                                TrapCut {
                                    detector: "sequence".into(),
                                    cut: 12,
                                    examples: vec!["http://a.test/c/9".into()],
                                },
                            ],
                            cuts: Vec::new(),
                            scope: "open".into(),
                            seeds: None,
                        }),
                        draining: false,
                    },
                },
                ComponentStatus {
                    role: Role::Resolver,
                    id: ComponentId::new("res-1").unwrap(),
                    load: Load::default(),
                    last_heard_ms: 6_000,
                    healthy: false,
                    state: ComponentState::default(),
                },
            ],
            speed: SpeedStatus {
                source: TargetSource::Operator,
                until_ms: Some(19_000 * 86_400_000 + (22 * 60 + 5) * 60_000),
                limit: spool::protocol::SpeedLimit::Hosts,
                fetches_per_sec: 80.0,
                mean_job_ms: 12.4,
            },
            pause: None,
        };
        let text = render("127.0.0.1:7400", &snapshot);
        for want in [
            "up 1 h 2 min 3 s",
            "12.3 pages/s now, 11.0 last minute, 2.5 last hour (target 100 pages/s)",
            "▁▁█ (max 12.0 pages/s, one mark per minute)",
            "1234 stored, 1300 requests, 3.0 MiB received (3145728 bytes), 56 robots.txt fetched",
            "5678 URLs queued, 9 in flight (hosts: 5 with 1, 1 with 4), 4 names to resolve",
            "request files  3 pending, 7 loaded",
            "12 ready, 0 parked, 0 fetching, 34 waiting, 0 backed off, 1 dead",
            "  backed off   http://slow.test until 01:02:03 UTC: 429 x1, Retry-After 5.0 s\n",
            "HTTP status    200 3 (75.0 %), 404 1 (25.0 %)",
            "fetch errors   timeout 2\n",
            "outcomes       none\n",
            "in flight 10/500",
            "PAUSED: disk full at /spool/pages/bfs/.tmp (retrying every 1 s at most)",
            "    12 pages; 2 hosts over budget, 40 URLs cut (most: test.a 30/10); \
             trap links cut: sequence 12; part 0 of 2, 5 URLs sent, 7 received, \
             3 sites assigned, 4 reported, 2 URLs parked\n",
            "target from operator until 22:05 UTC; 80.0 fetches/s, host-limited \
             (politeness allows no more); mean job 12 ms",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines
                .iter()
                .any(|l| l.contains("dl-1") && l.contains(" ok "))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("res-1") && l.contains(" late "))
        );
    }

    #[test]
    fn fetch_reads_a_running_managers_status() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let mut config = manager::ManagerConfig {
                state_dir: dir.path().join("state"),
                admin_token: "admin-secret".into(),
                ..manager::ManagerConfig::default()
            };
            config.frontier.target_pages_per_sec = 42.0;
            let spool = Spool::new(dir.path().join("spool"));
            let token = Token::new("control-secret").unwrap();
            let settings = manager::Settings::new(config, spool, token);
            let listener = manager::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let shutdown = CancellationToken::new();
            let task = tokio::spawn(manager::run(listener, settings, shutdown.clone()));

            let admin = Token::new("admin-secret").unwrap();
            let s = fetch(&addr, admin, 1 << 20).await.unwrap();
            assert_eq!(s.target_pages_per_sec, 42.0);
            let wrong = Token::new("control-secret").unwrap();
            let err = fetch(&addr, wrong, 1 << 20).await.unwrap_err();
            assert!(format!("{err:#}").contains("wrong token"), "{err:#}");

            shutdown.cancel();
            task.await.unwrap().unwrap();
        });
    }

    #[test]
    fn app_line_shows_a_seed_by_seed_crawl() {
        let a = AppFigures {
            pages: 30,
            seeds: Some(Box::new(spool::protocol::SeedFigures {
                balance: "distributor".into(),
                queued: 4,
                active: 3,
                finished: 2,
                moved: 1,
                held: vec![2, 1, 0],
                top_parties: vec![spool::protocol::PartyPages {
                    seed: "http://a.test/".into(),
                    pages: 17,
                }],
            })),
            ..AppFigures::default()
        };
        assert_eq!(
            app_line(&a),
            "30 pages; 0 hosts over budget, 0 URLs cut; seed-by-seed (distributor): \
             seeds queued 4, active 3, finished 2, moved 1; held per worker [2 1 0]; \
             biggest parties: http://a.test/ 17"
        );
    }
}
