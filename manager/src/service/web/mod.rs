//! The admin web server: the admin page (`GET /`) and the JSON API beside it
//! (`/api/...`, listed in `routes.rs`), on their own listener (`manager.admin_http`,
//! loopback by default).
//!
//! HTTP is axum's routes on hyper's HTTP/1.1 server (a maintained server: framing,
//! `HEAD`, parse errors and limits are its business, not ours). Each connection is
//! one task serving one request (every answer says `Connection: close`). Before a
//! request is routed, and before a byte of its body is read, the gate in
//! `routes.rs` checks the `Host` and, for a mutation, the token, so an
//! unauthenticated request can learn nothing from how its body is parsed; then the
//! handler reads its typed parameters (`params.rs`) and hands an
//! [`AdminCommand`](spool::protocol::AdminCommand) to
//! the core through the engine's admin API ([`AdminAsker`]: the same event queue as
//! the control connections); the core answers it with the same code that answers
//! `polycrawl status` and admin scripts on the control port (`engine/admin.rs`), so
//! the two can never disagree. Answers are typed records (`reply.rs`). The page
//! (`page.html`) is one self-contained file: inline script and style, no outside
//! resource; it polls `/api/stats`. `GET /metrics` is the same status in the
//! Prometheus text format (`prometheus.rs`).
//!
//! Limits: [`MAX_CONNECTIONS`] at once (more are closed at once); a request head of
//! at most [`MAX_HEAD`] bytes and [`MAX_HEADERS`] fields (431 otherwise), arriving
//! within [`READ_TIMEOUT`] (the connection is closed otherwise); a body of at most
//! `params::MAX_BODY` bytes within [`READ_TIMEOUT`] more (413, 408); an answer from
//! the core within [`ASK_TIMEOUT`] (else 503); a connection lives at most
//! [`CONNECTION_LIFETIME`], writing its answer included.
//!
//! This module must never touch the frontier or the engine's state (it only sends
//! commands), answer a mutation without the admin token, or serve anything but the
//! page, the API and the metrics.

mod params;
mod prometheus;
mod reply;
mod routes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use spool::protocol::Token;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use super::ask::AdminAsker;

/// Connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// Time allowed for a request's head to arrive, and then for its body.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Time allowed for the core to take a command, and then to answer it.
pub(crate) const ASK_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a connection is served: reading, asking, and writing the answer.
pub(crate) const CONNECTION_LIFETIME: Duration = Duration::from_secs(50);
/// Largest request head (request line and headers), in bytes: hyper's smallest
/// read buffer.
pub(crate) const MAX_HEAD: usize = 8 * 1024;
/// Most header fields in one request.
pub(crate) const MAX_HEADERS: usize = 64;
/// Time given to requests being answered when the server stops (a shutdown's own
/// answer, mostly).
const FAREWELL: Duration = Duration::from_secs(1);

/// What the server needs besides its listener.
#[derive(Debug)]
pub(crate) struct WebSettings {
    /// The admin token (`None`: every mutation is refused).
    pub admin_token: Option<Token>,
    /// `grace_ms` of a shutdown that names none (`manager.shutdown_grace_ms`).
    pub grace_ms: u64,
}

/// Serves the admin page and API on `listener` until `stop` is cancelled.
pub(crate) async fn serve(
    listener: TcpListener,
    settings: WebSettings,
    asker: AdminAsker,
    stop: CancellationToken,
) {
    let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let app = routes::router(routes::Admin {
        asker,
        settings: Arc::new(settings),
        loopback,
    });
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) if conns.len() < MAX_CONNECTIONS => {
                    conns.spawn(connection(stream, peer, app.clone(), stop.clone()));
                }
                Ok((_, peer)) => {
                    tracing::warn!(%peer, max = MAX_CONNECTIONS, "too many admin page connections: closing a new one");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "admin page: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    let _ = timeout(FAREWELL, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    conns.abort_all();
}

/// Serves the one request of a connection with `app`; when `stop` is cancelled, the
/// request being answered is finished and nothing more is read.
async fn connection<S>(stream: S, peer: SocketAddr, app: axum::Router, stop: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut http = http1::Builder::new();
    // Half-closed: a client may shut its sending side once the request is out.
    http.keep_alive(false)
        .half_close(true)
        .title_case_headers(true)
        .max_buf_size(MAX_HEAD)
        .max_headers(MAX_HEADERS)
        .timer(TokioTimer::new())
        .header_read_timeout(READ_TIMEOUT);
    let conn = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    let mut conn = std::pin::pin!(conn);
    let served = timeout(CONNECTION_LIFETIME, async {
        tokio::select! {
            served = conn.as_mut() => served,
            () = stop.cancelled() => {
                conn.as_mut().graceful_shutdown();
                conn.as_mut().await
            }
        }
    })
    .await;
    match served {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "admin page connection ended"),
        Err(_) => tracing::debug!(%peer, "admin page connection over its lifetime: closed"),
    }
}

#[cfg(test)]
mod tests {
    use spool::protocol::{AdminCommand, AdminReply};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::mpsc;

    use super::super::conn::Event;
    use super::*;

    /// Sends `request` through [`connection`] (the admin token `token`, a default
    /// grace of 7 s) to a core that answers every command `Done`; returns the
    /// answer's text and the commands the core was asked.
    async fn exchange(request: &[u8], token: Option<&str>) -> (String, Vec<AdminCommand>) {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let (events, mut core) = mpsc::channel(4);
        let admin = routes::Admin {
            asker: AdminAsker::new(events),
            settings: Arc::new(WebSettings {
                admin_token: token.map(|t| Token::new(t).unwrap()),
                grace_ms: 7_000,
            }),
            loopback: true,
        };
        let asked = tokio::spawn(async move {
            let mut asked = Vec::new();
            while let Some(Event::Web(ask)) = core.recv().await {
                asked.push(ask.command.clone());
                let detail = "done".to_owned();
                let _ = ask.reply.send(AdminReply::Done { detail });
            }
            asked
        });
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let stop = CancellationToken::new();
        let served = tokio::spawn(connection(server, peer, routes::router(admin), stop));
        client.write_all(request).await.unwrap();
        client.shutdown().await.unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        served.await.unwrap();
        let asked = asked.await.unwrap();
        (String::from_utf8(answer).unwrap(), asked)
    }

    /// The status code of an answer.
    fn status(answer: &str) -> u16 {
        answer
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {answer:?}"))
    }

    /// `METHOD TARGET` with a host, the token and `body`.
    fn request(method: &str, target: &str, body: &str) -> Vec<u8> {
        format!(
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:7401\r\nAuthorization: Bearer s3cret\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// The one command `method target body` asks, with the token.
    async fn command(method: &str, target: &str, body: &str) -> AdminCommand {
        let (answer, mut asked) = exchange(&request(method, target, body), Some("s3cret")).await;
        assert_eq!(status(&answer), 200, "{method} {target}: {answer}");
        assert_eq!(asked.len(), 1, "{method} {target}: {asked:?}");
        asked.remove(0)
    }

    #[tokio::test]
    async fn an_unauthenticated_mutation_is_refused_before_its_body_is_read() {
        let bodies: [&[u8]; 3] = [
            b"POST /api/blacklist HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\n{\"en",
            b"POST /api/speed HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999\r\n\r\n",
            b"DELETE /api/blacklist HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        ];
        for request in bodies {
            for (token, code) in [(Some("s3cret"), 401), (None, 403)] {
                let (answer, asked) = exchange(request, token).await;
                let shown = String::from_utf8_lossy(request);
                let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
                assert_eq!(status(&answer), code, "{shown}: {answer}");
                assert!(asked.is_empty(), "{shown}: the core was asked");
                for parse_word in ["JSON", "Content-Length", "body", "parameter", "chunked"] {
                    assert!(
                        !body.contains(parse_word),
                        "{shown}: the refusal talks about the body: {answer}"
                    );
                }
            }
        }
        // A Content-Length that is not a number is broken framing: hyper answers 400
        // with no body before anything is routed, token or not.
        let broken = b"POST /api/speed HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n";
        for token in [Some("s3cret"), None] {
            let (answer, asked) = exchange(broken, token).await;
            assert_eq!(status(&answer), 400, "{answer}");
            assert!(answer.ends_with("\r\n\r\n"), "{answer}");
            assert!(asked.is_empty());
        }
    }

    #[tokio::test]
    async fn with_the_token_a_malformed_body_gets_its_parse_message() {
        let request = b"POST /api/blacklist HTTP/1.1\r\nHost: 127.0.0.1\r\n\
            Authorization: Bearer s3cret\r\nContent-Length: 4\r\n\r\n{\"en";
        let (answer, asked) = exchange(request, Some("s3cret")).await;
        assert_eq!(status(&answer), 400, "{answer}");
        assert!(answer.contains("not JSON"), "{answer}");
        assert!(asked.is_empty());
    }

    #[tokio::test]
    async fn every_route_maps_to_its_command() {
        let (page, asked) = exchange(&request("GET", "/", ""), None).await;
        assert_eq!(status(&page), 200);
        assert!(page.contains("Content-Security-Policy: default-src 'none'"));
        assert!(asked.is_empty(), "the page asks nothing");
        let (head, _) = exchange(&request("HEAD", "/index.html", ""), None).await;
        assert_eq!(status(&head), 200);
        assert!(head.ends_with("\r\n\r\n"), "HEAD has the head only: {head}");
        assert_eq!(command("GET", "/api/stats", "").await, AdminCommand::Status);
        assert_eq!(command("GET", "/metrics", "").await, AdminCommand::Status);
        assert_eq!(
            command("GET", "/api/blacklist", "").await,
            AdminCommand::Blacklist
        );
        let add = AdminCommand::BlacklistAdd {
            entry: ".a.test".into(),
        };
        let body = r#"{"entry": ".a.test"}"#;
        assert_eq!(command("POST", "/api/blacklist", body).await, add);
        assert_eq!(
            command("POST", "/api/blacklist?entry=%2Ea.test", "").await,
            add
        );
        assert_eq!(
            command("DELETE", "/api/blacklist?entry=b.test", "").await,
            AdminCommand::BlacklistRemove {
                entry: "b.test".into()
            }
        );
        assert_eq!(
            command("POST", "/api/speed", r#"{"pages_per_sec": 50}"#).await,
            AdminCommand::SetSpeed {
                pages_per_sec: 50.0
            }
        );
        assert_eq!(
            command("POST", "/api/speed?pages_per_sec=2.5", " ").await,
            AdminCommand::SetSpeed { pages_per_sec: 2.5 }
        );
        assert_eq!(
            command("POST", "/api/checkpoint", "").await,
            AdminCommand::Checkpoint
        );
        assert_eq!(
            command("POST", "/api/shutdown", "").await,
            AdminCommand::Shutdown { grace_ms: 7_000 }
        );
        assert_eq!(
            command("POST", "/api/shutdown", r#"{"grace_ms": 10}"#).await,
            AdminCommand::Shutdown { grace_ms: 10 }
        );
        assert_eq!(
            command("POST", "/api/shutdown?grace_ms=20", "").await,
            AdminCommand::Shutdown { grace_ms: 20 }
        );
    }

    #[tokio::test]
    async fn bad_requests_are_refused_with_their_code() {
        let refused = |method: &'static str, target: &'static str, body: &'static str| async move {
            let (answer, asked) = exchange(&request(method, target, body), Some("s3cret")).await;
            assert!(asked.is_empty(), "{method} {target}: the core was asked");
            answer
        };
        let nope = refused("GET", "/nope", "").await;
        assert_eq!(status(&nope), 404);
        assert!(nope.contains("{\"ok\":false,\"detail\":\"no such page: /nope\"}"));
        assert_eq!(status(&refused("DELETE", "/api/stats", "").await), 405);
        let get_speed = refused("GET", "/api/speed", "").await;
        assert_eq!(status(&get_speed), 405);
        assert!(get_speed.contains("\r\nAllow: POST\r\n"), "{get_speed}");
        for (target, body) in [
            ("/api/blacklist", ""),
            ("/api/blacklist", "{"),
            ("/api/blacklist", "[1]"),
            ("/api/blacklist", r#"{"entry": 1}"#),
            ("/api/speed", r#"{"pages_per_sec": "x"}"#),
            ("/api/shutdown", r#"{"grace_ms": -1}"#),
            ("/api/speed?pages_per_sec=fast", ""),
        ] {
            let answer = refused("POST", target, body).await;
            assert_eq!(status(&answer), 400, "{target} {body:?}: {answer}");
            assert!(answer.contains("\"ok\":false"), "{answer}");
        }
    }

    #[tokio::test]
    async fn the_gate_comes_before_routing() {
        let rebound = b"GET /nope HTTP/1.1\r\nHost: evil.example:7401\r\n\r\n";
        let (answer, _) = exchange(rebound, Some("s3cret")).await;
        assert_eq!(status(&answer), 403, "{answer}");
        let unknown_method = b"PUT /api/speed HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        let (answer, _) = exchange(unknown_method, Some("s3cret")).await;
        assert_eq!(status(&answer), 401, "the token before the 405: {answer}");
    }

    #[tokio::test]
    async fn limits_and_framing_are_refused_with_their_code() {
        let cut = b"GET / HTTP/1.1\r\nHost";
        let (answer, _) = exchange(cut, None).await;
        assert_eq!(answer, "", "a cut request gets no answer");
        let (answer, _) = exchange(b"BLAH\r\n\r\n", None).await;
        assert_eq!(status(&answer), 400);
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD));
        let (answer, _) = exchange(long.as_bytes(), None).await;
        assert_eq!(status(&answer), 431);
        let fields: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\n{fields}\r\n");
        let (answer, _) = exchange(many.as_bytes(), None).await;
        assert_eq!(status(&answer), 431);
        let huge = b"POST /api/speed HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\
            Content-Length: 99999999999\r\n\r\n";
        let (answer, asked) = exchange(huge, Some("s3cret")).await;
        assert_eq!(status(&answer), 413, "{answer}");
        let chunked = b"POST /api/speed HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\
            Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        let (answer, more) = exchange(chunked, Some("s3cret")).await;
        assert_eq!(status(&answer), 411, "{answer}");
        let short = b"POST /api/speed HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\
            Content-Length: 10\r\n\r\nabc";
        let (answer, still) = exchange(short, Some("s3cret")).await;
        assert_ne!(status(&answer), 200, "{answer}");
        assert!(asked.is_empty() && more.is_empty() && still.is_empty());
    }

    #[tokio::test]
    async fn answers_close_and_carry_their_length_and_house_headers() {
        let (answer, _) = exchange(&request("POST", "/api/checkpoint", ""), None).await;
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{head}");
        for field in [
            "Connection: close".to_owned(),
            "Cache-Control: no-store".to_owned(),
            "X-Content-Type-Options: nosniff".to_owned(),
            "Content-Type: application/json".to_owned(),
            format!("Content-Length: {}", body.len()),
        ] {
            assert!(
                head.contains(&format!("\r\n{field}\r\n")) || head.ends_with(&field),
                "{field}: {head}"
            );
        }
        let (answer, _) = exchange(&request("GET", "/api/stats", ""), None).await;
        assert!(
            answer.contains("\r\nCache-Control: no-store\r\n"),
            "{answer}"
        );
    }
}
