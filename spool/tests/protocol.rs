//! The control protocol's acceptance tests: every message round-trips (in memory
//! and over real TCP on 127.0.0.1, port 0), the wire bytes are pinned by golden
//! tests, and every refusal reads well on both ends of the connection.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use spool::outcome::OutcomeReason;
use spool::protocol::{
    AdminCommand, AdminReply, After, AppFigures, AppProgress, BackOffReason, BackedOffHost,
    BudgetCut, ByeReason, ComponentState, ComponentStatus, Connection, FetchJob, FetchLimits,
    FetchPurpose, FetchReport, FetchResult, Hello, HostAnswer, HostCounts, JobId, Limits, Load,
    Message, NegativeKind, PROTOCOL_VERSION, PartFigures, PartyPages, Pause, PauseReason,
    ProtocolError, ReasonCount, RefusalCode, RequestId, Resolution, RetryAfter, Role, RuleCut,
    SeedFigures, ServerConfig, SpeedLimit, SpeedStatus, SpoolArea, StatusCount, StatusSnapshot,
    StoredPage, TargetSource, Timing, Token, TrapCut, Welcome, client_handshake, preamble,
    server_handshake,
};
use spool::{AppId, ComponentId, Validators};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------- helpers

fn cid(s: &str) -> ComponentId {
    ComponentId::new(s).unwrap()
}

fn app() -> AppId {
    AppId::new("bfs").unwrap()
}

fn token(s: &str) -> Token {
    Token::new(s).unwrap()
}

fn server_config() -> ServerConfig {
    ServerConfig::new(Role::Manager, cid("mgr"), token("s3cret"))
}

fn hello(tok: &str) -> Hello {
    Hello::new(Role::Downloader, cid("dl-1"), token(tok))
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn unhex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

/// A listener on 127.0.0.1, port 0, and a client stream connected to it.
async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    (accepted.unwrap().0, client.unwrap())
}

type ServerSide = Result<(Connection, Hello), ProtocolError>;
type ClientSide = Result<(Connection, Welcome), ProtocolError>;

/// Runs both handshakes over real TCP.
async fn handshake(config: ServerConfig, hello: Hello, limits: Limits) -> (ServerSide, ClientSide) {
    let (server, client) = tcp_pair().await;
    tokio::join!(
        server_handshake(server, &config),
        client_handshake(client, hello, limits)
    )
}

/// Reads until the peer closes (bounded), returning everything received.
async fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut out))
        .await
        .expect("peer did not close")
        .unwrap();
    out
}

/// Splits a server reply into (preamble, status, rest).
fn split_reply(reply: &[u8]) -> (&[u8], u8, &[u8]) {
    assert!(reply.len() >= 9, "short reply {}", hex(reply));
    (&reply[..8], reply[8], &reply[9..])
}

/// Decodes a refusal body: u16 length + UTF-8 reason.
fn refusal_text(rest: &[u8]) -> String {
    let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
    assert_eq!(rest.len(), 2 + len, "refusal is followed by nothing");
    String::from_utf8(rest[2..].to_vec()).unwrap()
}

/// Does a correct handshake by hand on `stream` (so the test can misbehave after it).
async fn raw_handshake(stream: &mut TcpStream) {
    let body = Message::Hello(hello("s3cret")).to_bytes().unwrap();
    let mut opening = preamble(PROTOCOL_VERSION).to_vec();
    opening.extend((body.len() as u32).to_be_bytes());
    opening.extend(body);
    stream.write_all(&opening).await.unwrap();
    let mut head = [0; 13];
    stream.read_exact(&mut head).await.unwrap();
    assert_eq!(head[8], 0, "accepted");
    let len = u32::from_be_bytes(head[9..13].try_into().unwrap()) as usize;
    let mut welcome = vec![0; len];
    stream.read_exact(&mut welcome).await.unwrap();
    assert!(matches!(
        Message::from_bytes(&welcome).unwrap(),
        Message::Welcome(_)
    ));
}

/// Reads one frame by hand and decodes it.
async fn raw_recv(stream: &mut TcpStream) -> Message {
    let mut len = [0; 4];
    stream.read_exact(&mut len).await.unwrap();
    let mut body = vec![0; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).await.unwrap();
    Message::from_bytes(&body).unwrap()
}

// ---------------------------------------------------------------- samples

fn limits() -> FetchLimits {
    FetchLimits {
        max_body_bytes: 1 << 20,
        connect_timeout_ms: 10_000,
        first_byte_timeout_ms: 20_000,
        total_timeout_ms: 60_000,
        min_ip_spacing_ms: 250,
        min_host_spacing_ms: 300,
    }
}

fn load() -> Load {
    Load {
        in_flight: 120,
        concurrency: 500,
        queued: 3,
        done_per_sec: 41.5,
        bytes_per_sec: 2_000_000,
    }
}

/// At least one message of every variant (and of every nested enum variant).
fn samples() -> Vec<Message> {
    vec![
        Message::Hello(Hello {
            role: Role::Resolver,
            id: cid("res-1"),
            version: 1,
            token: token("t"),
            software: "x".into(),
        }),
        Message::Welcome(Welcome {
            role: Role::Manager,
            id: cid("mgr"),
            version: 1,
            heartbeat_interval_ms: 2000,
            heartbeat_timeout_ms: 10_000,
        }),
        Message::Heartbeat { load: load() },
        Message::Drain { grace_ms: 30_000 },
        Message::Bye {
            reason: ByeReason::Drained,
            detail: "done".into(),
        },
        Message::SetConcurrency { limit: 300 },
        Message::FetchBatch {
            jobs: vec![
                FetchJob {
                    job: JobId(7),
                    app: app(),
                    url: "http://a.test/x".into(),
                    addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 80),
                    purpose: FetchPurpose::Page,
                    keep_alive: true,
                    limits: limits(),
                    depth: None,
                    hops: None,
                    validators: Validators {
                        etag: Some("\"e\"".into()),
                        modified: Some(1_767_225_600),
                    },
                    after: Some(After {
                        job: JobId(6),
                        gap_ms: 300,
                    }),
                },
                FetchJob {
                    job: JobId(8),
                    app: app(),
                    url: "https://b.test/robots.txt".into(),
                    addr: SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 443),
                    purpose: FetchPurpose::Robots,
                    keep_alive: false,
                    limits: limits(),
                    depth: None,
                    hops: None,
                    validators: Validators::default(),
                    after: None,
                },
            ],
        },
        Message::FetchReports {
            reports: vec![
                FetchReport {
                    job: JobId(7),
                    result: FetchResult::Stored(StoredPage {
                        status: 301,
                        wire_bytes: 420,
                        body_bytes: 0,
                        truncated: false,
                        timing: Timing {
                            connect_ms: 3,
                            first_byte_ms: 9,
                            total_ms: 12,
                            sent_us: 1_700_000_000_000_000,
                            written_us: 1_700_000_000_000_100,
                            received_us: 1_700_000_000_012_000,
                        },
                        file: "5-dl-1-000001.warc.gz".into(),
                        location: Some("/y".into()),
                        retry_after: Some(RetryAfter::Date(1_700_000_000)),
                        response: None,
                    }),
                },
                FetchReport {
                    job: JobId(8),
                    result: FetchResult::Failed {
                        reason: OutcomeReason::Timeout,
                        detail: "first byte".into(),
                    },
                },
                FetchReport {
                    job: JobId(9),
                    result: FetchResult::Returned,
                },
            ],
        },
        Message::ResolveBatch {
            request: RequestId(1),
            hosts: vec!["a.test".into(), "b.test".into()],
        },
        Message::ResolveAnswers {
            request: RequestId(1),
            answers: vec![
                HostAnswer {
                    host: "a.test".into(),
                    result: Resolution::Addresses {
                        addrs: vec![
                            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                            IpAddr::V6(Ipv6Addr::LOCALHOST),
                        ],
                        ttl_secs: 300,
                    },
                },
                HostAnswer {
                    host: "b.test".into(),
                    result: Resolution::Negative {
                        kind: NegativeKind::NxDomain,
                        ttl_secs: 60,
                        detail: String::new(),
                    },
                },
                HostAnswer {
                    host: "c.test".into(),
                    result: Resolution::Negative {
                        kind: NegativeKind::Failure,
                        ttl_secs: 5,
                        detail: "SERVFAIL".into(),
                    },
                },
            ],
        },
        Message::Subscribe { app: app() },
        Message::Published {
            area: SpoolArea::Outcomes(app()),
            name: "0-mgr-000001.outcomes".into(),
        },
        Message::AppProgress(AppProgress {
            app: app(),
            request_files_pending: 1,
            queued_urls: 2,
            in_flight: 3,
            pages_total: 4,
            outcomes_total: 5,
            outcomes_pending: 6,
            synced: 7,
        }),
        Message::Admin(AdminCommand::BlacklistAdd {
            entry: ".spam.test".into(),
        }),
        Message::Admin(AdminCommand::Shutdown { grace_ms: 5000 }),
        Message::AdminReply(AdminReply::Failed {
            detail: "no".into(),
        }),
        Message::Admin(AdminCommand::Blacklist),
        Message::AdminReply(AdminReply::Status(Box::new(StatusSnapshot {
            pages_per_sec_now: 0.5,
            pages_per_sec: 1.0,
            pages_per_sec_hour: 0.25,
            speed_chart: vec![2.0],
            target_pages_per_sec: 2.0,
            pages_total: 3,
            requests_total: 11,
            bytes_total: 4,
            robots_fetched: 9,
            http_status: vec![StatusCount {
                code: 404,
                count: 10,
            }],
            fetch_errors: vec![ReasonCount {
                reason: OutcomeReason::Timeout,
                count: 11,
            }],
            outcomes: vec![ReasonCount {
                reason: OutcomeReason::Blacklisted,
                count: 12,
            }],
            queued_urls: 5,
            in_flight: 13,
            in_flight_per_host: vec![3, 0, 1],
            dns_pending: 14,
            hosts: HostCounts {
                resolving: 1,
                robots: 2,
                ready: 6,
                parked: 3,
                fetching: 4,
                waiting: 7,
                backed_off: 5,
                dead: 8,
            },
            backed_off: vec![
                BackedOffHost {
                    origin: "http://a.test".into(),
                    reason: BackOffReason::Throttled {
                        status: 429,
                        retry_after_ms: Some(5000),
                        in_row: 2,
                    },
                    until_ms: 1000,
                },
                BackedOffHost {
                    origin: "http://b.test".into(),
                    reason: BackOffReason::Failures { count: 3 },
                    until_ms: 2000,
                },
            ],
            request_files_pending: 8,
            request_files_loaded: 15,
            uptime_ms: 1000,
            components: vec![ComponentStatus {
                role: Role::Downloader,
                id: cid("dl-1"),
                load: load(),
                last_heard_ms: 150,
                healthy: true,
                state: ComponentState {
                    pause: Some(pause()),
                    app: None,
                    draining: false,
                },
            }],
            speed: SpeedStatus {
                source: TargetSource::Operator,
                until_ms: Some(9),
                limit: SpeedLimit::Hosts,
                fetches_per_sec: 2.0,
                mean_job_ms: 1.0,
            },
            pause: None,
        }))),
        Message::AdminReply(AdminReply::Blacklist {
            entries: vec!["*.spam.test".into()],
        }),
        Message::AdminReply(AdminReply::Checkpointed {
            path: "/c/1".into(),
        }),
        Message::Committed {
            file: "50-dl-1-00000000000000000001.warc.gz".into(),
            jobs: vec![JobId(7), JobId(300)],
        },
        Message::SyncProgress { app: app(), seq: 9 },
        Message::Status(Box::new(ComponentState {
            pause: Some(pause()),
            app: Some(AppFigures {
                hosts_cut: 1,
                urls_cut: 2,
                top_cut: vec![BudgetCut {
                    host: "t.a".into(),
                    budget: 3,
                    requested: 4,
                    cut: 5,
                    linking_sites: 6,
                }],
                pages: 7,
                part: Some(PartFigures {
                    part: 0,
                    parts: 2,
                    urls_out: 8,
                    urls_in: 9,
                    sites_assigned: 1,
                    sites_reported: 2,
                    parked: 3,
                }),
                traps: vec![TrapCut {
                    detector: "sequence".into(),
                    cut: 10,
                    examples: vec!["http://t.a/c/12".into()],
                }],
                cuts: vec![RuleCut {
                    rule: "host_ceiling".into(),
                    urls: 11,
                    hosts: 1,
                }],
                scope: "site (1 seed sites)".into(),
                seeds: Some(Box::new(SeedFigures {
                    balance: "free".into(),
                    queued: 11,
                    active: 12,
                    finished: 13,
                    moved: 0,
                    held: vec![10, 2],
                    top_parties: vec![PartyPages {
                        seed: "http://t.a/".into(),
                        pages: 14,
                    }],
                })),
            }),
            draining: true,
        })),
    ]
}

fn pause() -> Pause {
    Pause {
        reason: PauseReason::DiskFull,
        path: "/s".into(),
        since_ms: 2,
        retry_ms: 1000,
    }
}

/// The wire index of each variant. No wildcard: a new variant does not compile
/// until it is added here and given a sample above.
fn variant_index(msg: &Message) -> usize {
    match msg {
        Message::Hello(_) => 0,
        Message::Welcome(_) => 1,
        Message::Heartbeat { .. } => 2,
        Message::Drain { .. } => 3,
        Message::Bye { .. } => 4,
        Message::SetConcurrency { .. } => 5,
        Message::FetchBatch { .. } => 6,
        Message::FetchReports { .. } => 7,
        Message::ResolveBatch { .. } => 8,
        Message::ResolveAnswers { .. } => 9,
        Message::Subscribe { .. } => 10,
        Message::Published { .. } => 11,
        Message::AppProgress(_) => 12,
        Message::Admin(_) => 13,
        Message::AdminReply(_) => 14,
        Message::Committed { .. } => 15,
        Message::SyncProgress { .. } => 16,
        Message::Status(_) => 17,
    }
}
const VARIANTS: usize = 18;

// ---------------------------------------------------------------- encoding

#[test]
fn every_variant_round_trips_through_bytes() {
    let samples = samples();
    let mut seen = [false; VARIANTS];
    for msg in &samples {
        let bytes = msg.to_bytes().unwrap();
        assert_eq!(usize::from(bytes[0]), variant_index(msg), "{msg:?}");
        assert_eq!(&Message::from_bytes(&bytes).unwrap(), msg);
        seen[variant_index(msg)] = true;
    }
    assert!(seen.iter().all(|&s| s), "a variant has no sample: {seen:?}");
}

#[test]
fn golden_preamble() {
    assert_eq!(hex(&preamble(PROTOCOL_VERSION)), "50 43 52 4c 00 0b 00 00");
    assert_eq!(hex(&preamble(0x0203)), "50 43 52 4c 02 03 00 00");
    assert_eq!(PROTOCOL_VERSION, 11);
}

/// The encoding of every sample, pinned. If this fails you changed the wire
/// format: bump PROTOCOL_VERSION (see the versioning rule) and update the table.
#[test]
fn golden_message_bytes() {
    let golden: &[&str] = &[
        "00 02 05 72 65 73 2d 31 01 01 74 01 78",
        "01 00 03 6d 67 72 01 d0 0f 90 4e",
        "02 78 f4 03 03 00 00 26 42 80 89 7a",
        "03 b0 ea 01",
        "04 01 04 64 6f 6e 65",
        "05 ac 02",
        "06 02 07 03 62 66 73 0f 68 74 74 70 3a 2f 2f 61 2e 74 65 73 74 2f 78 00 7f 00 00 02 50 00 01 80 80 40 90 4e a0 9c 01 e0 d4 03 fa 01 ac 02 00 00 01 03 22 65 22 01 80 f2 d6 ca 06 01 06 ac 02 08 03 62 66 73 19 68 74 74 70 73 3a 2f 2f 62 2e 74 65 73 74 2f 72 6f 62 6f 74 73 2e 74 78 74 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 bb 03 01 00 80 80 40 90 4e a0 9c 01 e0 d4 03 fa 01 ac 02 00 00 00 00 00",
        "07 03 07 00 ad 02 a4 03 00 00 03 09 0c 80 80 f9 c0 c1 c4 82 03 e4 80 f9 c0 c1 c4 82 03 e0 dd f9 c0 c1 c4 82 03 15 35 2d 64 6c 2d 31 2d 30 30 30 30 30 31 2e 77 61 72 63 2e 67 7a 01 02 2f 79 01 01 80 e2 cf aa 06 00 08 01 04 0a 66 69 72 73 74 20 62 79 74 65 09 02",
        "08 01 02 06 61 2e 74 65 73 74 06 62 2e 74 65 73 74",
        "09 01 03 06 61 2e 74 65 73 74 00 02 00 0a 00 00 01 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 ac 02 06 62 2e 74 65 73 74 01 00 3c 00 06 63 2e 74 65 73 74 01 02 05 08 53 45 52 56 46 41 49 4c",
        "0a 03 62 66 73",
        "0b 02 03 62 66 73 15 30 2d 6d 67 72 2d 30 30 30 30 30 31 2e 6f 75 74 63 6f 6d 65 73",
        "0c 03 62 66 73 01 02 03 04 05 06 07",
        "0d 02 0a 2e 73 70 61 6d 2e 74 65 73 74",
        "0d 05 88 27",
        "0e 01 02 6e 6f",
        "0d 06",
        "0e 02 00 00 00 3f 00 00 80 3f 00 00 80 3e 01 00 00 00 40 00 00 00 40 03 0b 04 09 01 94 03 0a 01 04 0b 01 01 0c 05 0d 03 03 00 01 0e 01 02 06 03 04 07 05 08 02 0d 68 74 74 70 3a 2f 2f 61 2e 74 65 73 74 00 ad 03 01 88 27 02 e8 07 0d 68 74 74 70 3a 2f 2f 62 2e 74 65 73 74 01 03 d0 0f 08 0f e8 07 01 01 04 64 6c 2d 31 78 f4 03 03 00 00 26 42 80 89 7a 96 01 01 01 00 02 2f 73 02 e8 07 00 00 02 01 09 01 00 00 00 40 00 00 80 3f 00",
        "0e 03 01 0b 2a 2e 73 70 61 6d 2e 74 65 73 74",
        "0e 04 04 2f 63 2f 31",
        "0f 24 35 30 2d 64 6c 2d 31 2d 30 30 30 30 30 30 30 30 30 30 30 30 30 30 30 30 30 30 30 31 2e 77 61 72 63 2e 67 7a 02 07 ac 02",
        "10 03 62 66 73 09",
        "11 01 00 02 2f 73 02 e8 07 01 01 02 01 03 74 2e 61 03 04 05 06 07 01 00 02 08 09 \
         01 02 03 01 08 73 65 71 75 65 6e 63 65 0a 01 0f 68 74 74 70 3a 2f 2f 74 2e 61 2f 63 2f 31 32 01 0c 68 6f 73 74 5f 63 65 69 6c 69 6e 67 0b 01 \
         13 73 69 74 65 20 28 31 20 73 65 65 64 20 73 69 74 65 73 29 01 04 66 72 65 65 0b 0c 0d 00 02 0a 02 01 0b 68 74 74 70 3a 2f 2f 74 2e 61 2f 0e 01",
    ];
    let got: Vec<String> = samples()
        .iter()
        .map(|m| hex(&m.to_bytes().unwrap()))
        .collect();
    assert_eq!(got, golden);
}

/// Fetch reports carry `OutcomeReason`: adding or reordering a reason changes the
/// wire too, so the reasons' indices are pinned here as well.
#[test]
fn golden_outcome_reasons() {
    let got: Vec<(String, Vec<u8>)> = OutcomeReason::ALL
        .iter()
        .map(|r| (r.to_string(), postcard::to_stdvec(r).unwrap()))
        .collect();
    let want: Vec<(String, Vec<u8>)> = [
        "robots_excluded",
        "blacklisted",
        "dns_failure",
        "connect_failure",
        "timeout",
        "too_many_failures",
        "invalid_url",
        "bad_response",
        "forbidden_address",
        // Appended: no fetch report carries it (the manager writes it in outcome
        // files only), and every earlier index is unchanged.
        "sitemap",
    ]
    .iter()
    .zip(0u8..)
    .map(|(name, i)| (name.to_string(), vec![i]))
    .collect();
    assert_eq!(got, want, "OutcomeReason changed: bump PROTOCOL_VERSION");
}

#[test]
fn decoding_rejects_garbage_and_trailing_bytes() {
    let err = Message::from_bytes(&[0xff, 0xff]).unwrap_err();
    assert!(
        matches!(err, ProtocolError::Undecodable { size: 2, .. }),
        "{err}"
    );
    let mut bytes = Message::SetConcurrency { limit: 1 }.to_bytes().unwrap();
    bytes.push(0);
    let err = Message::from_bytes(&bytes).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a 3-byte frame holds a SetConcurrency message followed by 1 extra bytes"
    );
}

// ---------------------------------------------------------------- golden wire

/// The module docs' example, byte for byte: a downloader's opening.
const HELLO_DL1: &str = "50 43 52 4c 00 0b 00 00 \
     00 00 00 1f 00 01 04 64 6c 2d 31 0b 06 73 33 63 72 65 74 \
     0f 70 6f 6c 79 63 72 61 77 6c 20 30 2e 31 2e 30";

#[tokio::test]
async fn golden_handshake_and_frames_on_the_wire() {
    let (mut server, client) = tcp_pair().await;
    let hello = Hello {
        software: "polycrawl 0.1.0".into(),
        ..hello("s3cret")
    };
    let raw_server = async {
        let mut opening = vec![0; unhex(HELLO_DL1).len()];
        server.read_exact(&mut opening).await.unwrap();
        assert_eq!(hex(&opening), hex(&unhex(HELLO_DL1)));
        // Accept: preamble, status 00, Welcome frame, then SetConcurrency { 300 }.
        let welcome = "50 43 52 4c 00 0b 00 00 00 00 00 00 0b 01 00 03 6d 67 72 0b d0 0f 90 4e";
        server.write_all(&unhex(welcome)).await.unwrap();
        server
            .write_all(&unhex("00 00 00 03 05 ac 02"))
            .await
            .unwrap();
        let mut frame = [0; 7];
        server.read_exact(&mut frame).await.unwrap();
        assert_eq!(hex(&frame), "00 00 00 03 05 ac 02");
    };
    let real_client = async {
        let (mut conn, welcome) = client_handshake(client, hello, Limits::default())
            .await
            .unwrap();
        assert_eq!(welcome.id.as_str(), "mgr");
        assert_eq!(welcome.heartbeat_timeout_ms, 10_000);
        assert_eq!(
            conn.recv().await.unwrap(),
            Some(Message::SetConcurrency { limit: 300 })
        );
        conn.send(&Message::SetConcurrency { limit: 300 })
            .await
            .unwrap();
    };
    tokio::join!(raw_server, real_client);
}

#[tokio::test]
async fn golden_refusal_bytes() {
    let (server, mut client) = tcp_pair().await;
    // The docs' opening with the token "s3cret" replaced by "wr0ng!".
    let opening = HELLO_DL1.replace("73 33 63 72 65 74", "77 72 30 6e 67 21");
    let raw_client = async move {
        client.write_all(&unhex(&opening)).await.unwrap();
        read_to_close(&mut client).await
    };
    let config = server_config();
    let (served, reply) = tokio::join!(server_handshake(server, &config), raw_client);
    assert!(matches!(served, Err(ProtocolError::BadToken { .. })));
    let text = "wrong token for downloader dl-1";
    let expected = format!("50 43 52 4c 00 0b 00 00 03 00 1f {}", hex(text.as_bytes()));
    assert_eq!(hex(&reply), expected);
}

// ---------------------------------------------------------------- connections

#[tokio::test]
async fn every_variant_round_trips_over_tcp() {
    let (server, client) = handshake(server_config(), hello("s3cret"), Limits::default()).await;
    let (mut server, said) = server.unwrap();
    let (mut client, welcome) = client.unwrap();
    assert_eq!((said.role, said.id.as_str()), (Role::Downloader, "dl-1"));
    assert_eq!(
        (welcome.role, welcome.version),
        (Role::Manager, PROTOCOL_VERSION)
    );

    for msg in samples() {
        client.send(&msg).await.unwrap();
        assert_eq!(server.recv().await.unwrap().as_ref(), Some(&msg));
        server.send(&msg).await.unwrap();
        assert_eq!(client.recv().await.unwrap().as_ref(), Some(&msg));
    }

    // A graceful Bye is an ordinary message; then the stream ends cleanly.
    client.close(ByeReason::ShuttingDown, "bye").await.unwrap();
    assert_eq!(
        server.recv().await.unwrap(),
        Some(Message::Bye {
            reason: ByeReason::ShuttingDown,
            detail: "bye".into()
        })
    );
    assert_eq!(server.recv().await.unwrap(), None);
    let err = client.send(&Message::SetConcurrency { limit: 1 }).await;
    assert!(matches!(err, Err(ProtocolError::Closed)), "{err:?}");
}

#[tokio::test]
async fn split_halves_read_and_write_concurrently() {
    let (server, client) = handshake(server_config(), hello("s3cret"), Limits::default()).await;
    let (mut server, _) = server.unwrap();
    let (reader, writer) = client.unwrap().0.into_split();
    let mut senders = tokio::task::JoinSet::new();
    for t in 0..4u32 {
        let w = writer.clone();
        senders.spawn(async move {
            for i in 0..50 {
                w.send(&Message::SetConcurrency {
                    limit: t * 1000 + i,
                })
                .await
                .unwrap();
            }
        });
    }
    let mut got = Vec::new();
    while got.len() < 200 {
        match server.recv().await.unwrap() {
            Some(Message::SetConcurrency { limit }) => got.push(limit),
            other => panic!("unexpected {other:?}"),
        }
    }
    senders.join_all().await;
    got.sort_unstable();
    let want: Vec<u32> = (0..4)
        .flat_map(|t| (0..50).map(move |i| t * 1000 + i))
        .collect();
    assert_eq!(got, want);
    drop(reader);
}

#[tokio::test]
async fn message_over_own_limit_is_not_sent() {
    let small = Limits {
        max_frame: 1024,
        ..Limits::default()
    };
    let (server, client) = handshake(server_config(), hello("s3cret"), small).await;
    let (mut server, _) = server.unwrap();
    let (client, _) = client.unwrap();
    let big = Message::Bye {
        reason: ByeReason::ShuttingDown,
        detail: "x".repeat(2000),
    };
    let err = client.send(&big).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Bye message of 2004 bytes exceeds the 1024-byte frame limit; not sent"
    );
    // Nothing was written: the connection is still in sync.
    client
        .send(&Message::SetConcurrency { limit: 9 })
        .await
        .unwrap();
    assert_eq!(
        server.recv().await.unwrap(),
        Some(Message::SetConcurrency { limit: 9 })
    );
}

// ---------------------------------------------------------------- refusals

#[tokio::test]
async fn bad_token_is_refused_on_both_sides() {
    let (server, client) = handshake(server_config(), hello("guess"), Limits::default()).await;
    let server_err = server.err().unwrap();
    assert_eq!(server_err.to_string(), "wrong token for downloader dl-1");
    match client.err().unwrap() {
        e @ ProtocolError::Refused { code, .. } => {
            assert_eq!(code, RefusalCode::BadToken);
            assert_eq!(
                e.to_string(),
                "the control server refused the connection: wrong token for downloader dl-1"
            );
        }
        other => panic!("unexpected {other}"),
    }
}

#[tokio::test]
async fn admin_role_needs_the_admin_token() {
    let config = ServerConfig {
        admin_token: Some(token("adm1n")),
        ..server_config()
    };
    let admin = |tok| Hello::new(Role::Admin, cid("ops"), token(tok));
    let (server, client) = handshake(config.clone(), admin("s3cret"), Limits::default()).await;
    assert_eq!(
        server.err().unwrap().to_string(),
        "wrong token for admin ops"
    );
    assert!(client.is_err());
    let (server, client) = handshake(config, admin("adm1n"), Limits::default()).await;
    assert!(server.is_ok() && client.is_ok());
}

#[tokio::test]
async fn other_protocol_version_is_refused_on_both_sides() {
    let next = PROTOCOL_VERSION + 1;
    let newer = Hello {
        version: next,
        ..hello("s3cret")
    };
    let (server, client) = handshake(server_config(), newer, Limits::default()).await;
    let text = format!(
        "protocol version mismatch: peer speaks v{next}, this manager speaks v{PROTOCOL_VERSION}"
    );
    assert_eq!(server.err().unwrap().to_string(), text);
    match client.err().unwrap() {
        e @ ProtocolError::Refused { code, .. } => {
            assert_eq!(code, RefusalCode::VersionMismatch);
            assert_eq!(
                e.to_string(),
                format!("the control server refused the connection: {text}")
            );
        }
        other => panic!("unexpected {other}"),
    }
}

#[tokio::test]
async fn oversized_frame_is_refused_on_both_sides() {
    let config = ServerConfig {
        limits: Limits {
            max_frame: 1024,
            ..Limits::default()
        },
        ..server_config()
    };
    let (server, client) = handshake(config, hello("s3cret"), Limits::default()).await;
    let (mut server, _) = server.unwrap();
    let (mut client, _) = client.unwrap();
    let big = Message::ResolveBatch {
        request: RequestId(1),
        hosts: vec!["h".repeat(100); 20],
    };
    let size = big.to_bytes().unwrap().len();
    let text = format!("frame of {size} bytes exceeds the 1024-byte limit");

    let server_side = async {
        let err = server.recv().await.unwrap_err();
        assert!(matches!(
            err,
            ProtocolError::FrameTooLarge { limit: 1024, .. }
        ));
        err.to_string()
    };
    let client_side = async {
        client.send(&big).await.unwrap();
        let err = client.recv().await.unwrap_err();
        drop(client);
        err.to_string()
    };
    let (server_text, client_text) = tokio::join!(server_side, client_side);
    assert_eq!(server_text, text);
    assert_eq!(
        client_text,
        format!("the peer closed the connection: {text}")
    );
}

#[tokio::test]
async fn http_request_to_the_control_port_is_refused() {
    let (server, mut client) = tcp_pair().await;
    let browser = async move {
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        read_to_close(&mut client).await
    };
    let config = server_config();
    let (served, reply) = tokio::join!(server_handshake(server, &config), browser);
    let text = r#"not a polycrawl control connection: got bytes 47 45 54 20 ("GET ")"#;
    assert_eq!(served.err().unwrap().to_string(), text);
    let (pre, status, rest) = split_reply(&reply);
    assert_eq!(pre, preamble(PROTOCOL_VERSION));
    assert_eq!(RefusalCode::from_byte(status), RefusalCode::NotPolycrawl);
    assert_eq!(refusal_text(rest), text);
}

#[tokio::test]
async fn random_bytes_are_refused() {
    let (server, mut client) = tcp_pair().await;
    let noise = async move {
        client
            .write_all(&[0xff, 0x00, 0x13, 0x37, 0xde, 0xad])
            .await
            .unwrap();
        read_to_close(&mut client).await
    };
    let config = server_config();
    let (served, reply) = tokio::join!(server_handshake(server, &config), noise);
    let text = r#"not a polycrawl control connection: got bytes ff 00 13 37 ("\xff\x00\x137")"#;
    assert_eq!(served.err().unwrap().to_string(), text);
    assert_eq!(refusal_text(split_reply(&reply).2), text);
}

#[tokio::test]
async fn client_refuses_a_server_that_is_not_polycrawl() {
    let (mut server, client) = tcp_pair().await;
    let http_server = async {
        let mut request = [0; 8];
        server.read_exact(&mut request).await.unwrap();
        server
            .write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            .await
            .unwrap();
    };
    let (_, result) = tokio::join!(
        http_server,
        client_handshake(client, hello("s3cret"), Limits::default())
    );
    assert_eq!(
        result.err().unwrap().to_string(),
        r#"not a polycrawl control connection: got bytes 48 54 54 50 ("HTTP")"#
    );
}

#[tokio::test]
async fn garbage_after_the_handshake_is_refused_without_allocating() {
    let (server, mut client) = tcp_pair().await;
    let config = server_config();
    let misbehave = async move {
        raw_handshake(&mut client).await;
        // Read as a frame header, "GET " announces 1.1 GB.
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let bye = raw_recv(&mut client).await;
        read_to_close(&mut client).await;
        bye
    };
    let serve = async {
        let (mut conn, _) = server_handshake(server, &config).await.unwrap();
        conn.recv().await.unwrap_err().to_string()
    };
    let (server_text, bye) = tokio::join!(serve, misbehave);
    let text = "frame of 1195725856 bytes exceeds the 16777216-byte limit";
    assert_eq!(server_text, text);
    assert_eq!(
        bye,
        Message::Bye {
            reason: ByeReason::ProtocolViolation,
            detail: text.into()
        }
    );
}

#[tokio::test]
async fn undecodable_frame_is_refused_on_both_sides() {
    let (server, mut client) = tcp_pair().await;
    let config = server_config();
    let misbehave = async move {
        raw_handshake(&mut client).await;
        client.write_all(&[0, 0, 0, 2, 0x63, 0x63]).await.unwrap();
        raw_recv(&mut client).await
    };
    let serve = async {
        let (mut conn, _) = server_handshake(server, &config).await.unwrap();
        conn.recv().await.unwrap_err().to_string()
    };
    let (server_text, bye) = tokio::join!(serve, misbehave);
    assert!(
        server_text.starts_with("could not decode a 2-byte message: "),
        "{server_text}"
    );
    assert_eq!(
        bye,
        Message::Bye {
            reason: ByeReason::ProtocolViolation,
            detail: server_text
        }
    );
}

#[tokio::test]
async fn silent_peers_time_out_the_handshake() {
    let quick = Limits {
        handshake_timeout: Duration::from_millis(100),
        ..Limits::default()
    };
    let config = ServerConfig {
        limits: quick,
        ..server_config()
    };
    // A client that connects and says nothing.
    let (server, _silent_client) = tcp_pair().await;
    let err = server_handshake(server, &config).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "no complete handshake from the peer within 100 ms"
    );
    // A server that accepts and says nothing.
    let (_silent_server, client) = tcp_pair().await;
    let err = client_handshake(client, hello("s3cret"), quick)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no complete handshake from the peer within 100 ms"
    );
}

#[tokio::test]
async fn peer_closing_mid_handshake_is_reported() {
    let (server, mut client) = tcp_pair().await;
    client.write_all(b"PCRL\0\x01").await.unwrap();
    drop(client);
    let err = server_handshake(server, &server_config())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the peer closed the connection during the handshake"
    );
}
