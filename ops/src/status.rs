//! `polycrawl status`: asks a running manager for its figures over the control port
//! (role `Admin`, [`AdminCommand::Status`]) and prints them for a person.
//!
//! This module must never change anything in the crawl: it only sends `Status`.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Context;
use spool::ComponentId;
use spool::protocol::{
    AdminCommand, AdminReply, ByeReason, ComponentStatus, DEFAULT_HANDSHAKE_TIMEOUT, Hello, Limits,
    Message, Role, SpeedStatus, StatusSnapshot, TargetSource, Token, client_handshake,
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
        AdminReply::Status(snapshot) => Ok(snapshot),
        AdminReply::Failed { detail } => anyhow::bail!("the manager refused: {detail}"),
        AdminReply::Done { detail } => anyhow::bail!("unexpected answer: {detail}"),
    }
}

/// The snapshot as text, one figure per line; a component is `ok` if heard from
/// within `heartbeat_timeout_ms`, else `silent`.
pub fn render(addr: &str, s: &StatusSnapshot, heartbeat_timeout_ms: u64) -> String {
    let mut out = String::new();
    let mib = s.bytes_total as f64 / (1024.0 * 1024.0);
    let _ = writeln!(out, "manager        {addr}");
    let _ = writeln!(
        out,
        "speed          {:.1} pages/s (target {} pages/s)",
        s.pages_per_sec, s.target_pages_per_sec
    );
    let _ = writeln!(out, "speed control  {}", speed_line(&s.speed));
    let _ = writeln!(
        out,
        "pages          {} stored, {mib:.1} MiB received",
        s.pages_total
    );
    let _ = writeln!(out, "queued URLs    {}", s.queued_urls);
    let _ = writeln!(
        out,
        "hosts          {} ready, {} waiting",
        s.hosts_ready, s.hosts_waiting
    );
    let _ = writeln!(out, "request files  {} pending", s.request_files_pending);
    let _ = writeln!(out, "components     {}", s.components.len());
    for c in &s.components {
        let _ = writeln!(out, "  {}", component_line(c, heartbeat_timeout_ms));
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

fn component_line(c: &ComponentStatus, heartbeat_timeout_ms: u64) -> String {
    let health = if c.last_heard_ms < heartbeat_timeout_ms {
        "ok"
    } else {
        "silent"
    };
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
    format!(
        "{:<12} {:<24} {:<6} heard {heard:.1} s ago{work}",
        c.role.as_str(),
        c.id.as_str(),
        health
    )
}

#[cfg(test)]
mod tests {
    use spool::Spool;
    use spool::protocol::Load;
    use tokio_util::sync::CancellationToken;

    use super::*;

    #[test]
    fn render_shows_figures_and_health() {
        let snapshot = StatusSnapshot {
            pages_per_sec: 12.34,
            target_pages_per_sec: 100.0,
            pages_total: 1234,
            bytes_total: 3 * 1024 * 1024,
            queued_urls: 5678,
            hosts_ready: 12,
            hosts_waiting: 34,
            request_files_pending: 3,
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
                },
                ComponentStatus {
                    role: Role::Resolver,
                    id: ComponentId::new("res-1").unwrap(),
                    load: Load::default(),
                    last_heard_ms: 20_000,
                },
            ],
            speed: SpeedStatus {
                source: TargetSource::Operator,
                until_ms: Some(19_000 * 86_400_000 + (22 * 60 + 5) * 60_000),
                limit: spool::protocol::SpeedLimit::Hosts,
                fetches_per_sec: 80.0,
                mean_job_ms: 12.4,
            },
        };
        let text = render("127.0.0.1:7400", &snapshot, 10_000);
        for want in [
            "12.3 pages/s (target 100 pages/s)",
            "1234 stored, 3.0 MiB received",
            "queued URLs    5678",
            "12 ready, 34 waiting",
            "3 pending",
            "in flight 10/500",
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
                .any(|l| l.contains("res-1") && l.contains("silent"))
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
}
