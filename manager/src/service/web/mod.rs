//! The admin web server: the admin page (`GET /`) and the JSON API beside it
//! (`/api/...`, listed in `routes.rs`), on their own listener (`manager.admin_http`,
//! loopback by default).
//!
//! Each connection is one task that reads one request's head (`http.rs`), checks
//! the `Host` and, for a mutation, the token (`routes.rs`)
//! before it reads or parses a byte of the body, so an unauthenticated request can
//! learn nothing from how its body is parsed; then it reads the body, routes the
//! request and, for anything but the page, hands an
//! [`AdminCommand`] to the core through the same event queue as the control
//! connections ([`Event::Web`]); the core answers it with the same code that answers
//! `polycrawl status` and admin scripts on the control port (`engine/admin.rs`), so the two
//! can never disagree. The page (`page.html`) is one self-contained file: inline
//! script and style, no outside resource; it polls `/api/stats`. `GET /metrics` is
//! the same status in the Prometheus text format (`prometheus.rs`).
//!
//! Limits: [`MAX_CONNECTIONS`] at once (more are closed at once), a request must
//! arrive within [`READ_TIMEOUT`], the head and body sizes of `http.rs`, and an
//! answer from the core within [`ASK_TIMEOUT`] (else 503).
//!
//! This module must never touch the frontier or the engine's state (it only sends
//! commands), answer a mutation without the admin token, or serve anything but the
//! page, the API and the metrics.

mod http;
mod prometheus;
mod routes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{AdminCommand, AdminReply, Token};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use super::conn::Event;
use http::{MAX_BODY, Response, read_head};
use routes::Route;

/// Connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// Time allowed for a whole request to arrive.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Time allowed for the core to answer, and for the answer to be written.
pub(crate) const ASK_TIMEOUT: Duration = Duration::from_secs(10);
/// Time given to requests being answered when the server stops (a shutdown's own
/// answer, mostly).
const FAREWELL: Duration = Duration::from_secs(1);

/// The page.
const PAGE: &str = include_str!("page.html");
/// What the page may load and do: nothing from elsewhere, requests to this server.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// A command from the web server for the core, and where its answer goes.
#[derive(Debug)]
pub(crate) struct WebAsk {
    /// The command (a mutation's token is already checked).
    pub command: AdminCommand,
    /// The core's answer.
    pub reply: oneshot::Sender<AdminReply>,
}

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
    events: mpsc::Sender<Event>,
    stop: CancellationToken,
) {
    let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let settings = Arc::new(settings);
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) if conns.len() < MAX_CONNECTIONS => {
                    conns.spawn(handle(stream, peer, loopback, settings.clone(), events.clone()));
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

/// Answers the one request of a connection.
async fn handle<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    peer: SocketAddr,
    loopback: bool,
    settings: Arc<WebSettings>,
    events: mpsc::Sender<Event>,
) {
    let deadline = tokio::time::Instant::now() + READ_TIMEOUT;
    let late = || {
        (
            Response::error(408, "the request did not arrive in time"),
            false,
        )
    };
    let unreadable = |e: http::RequestError| match e.status() {
        Some(status) => Some((Response::error(status, &e.to_string()), false)),
        None => {
            tracing::debug!(%peer, error = %e, "admin page connection ended");
            None
        }
    };
    let (response, head_only) =
        match tokio::time::timeout_at(deadline, read_head(&mut stream)).await {
            Err(_) => late(),
            Ok(Err(e)) => match unreadable(e) {
                Some(answer) => answer,
                None => return,
            },
            Ok(Ok(head)) => {
                let head_only = head.request.method == "HEAD";
                if let Err(refusal) = gate(&head.request, loopback, &settings) {
                    tracing::warn!(%peer, method = head.request.method, path = head.request.path,
                    status = refusal.status, "admin request refused");
                    let unread = head.announced_len();
                    answer(&mut stream, &refusal, head_only).await;
                    discard(&mut stream, unread).await;
                    return;
                }
                match tokio::time::timeout_at(deadline, head.read_body(&mut stream)).await {
                    Err(_) => late(),
                    Ok(Err(e)) => match unreadable(e) {
                        Some(answer) => answer,
                        None => return,
                    },
                    Ok(Ok(req)) => (respond(&req, &settings, &events).await, head_only),
                }
            }
        };
    answer(&mut stream, &response, head_only).await;
}

/// Refuses a request before its body is read: a `Host` that is not allowed, or a
/// mutation ([`routes::needs_token`]) without the admin token.
fn gate(req: &http::Request, loopback: bool, settings: &WebSettings) -> Result<(), Response> {
    routes::check_host(req, loopback)?;
    if routes::needs_token(req) {
        routes::authorize(req, settings.admin_token.as_ref())?;
    }
    Ok(())
}

/// Writes `response` and closes the sending side.
async fn answer<S: AsyncWrite + Unpin>(stream: &mut S, response: &Response, head_only: bool) {
    let write = async {
        stream.write_all(&response.to_bytes(head_only)).await?;
        stream.shutdown().await
    };
    if let Ok(Err(e)) = timeout(ASK_TIMEOUT, write).await {
        tracing::debug!(error = %e, "admin page answer not delivered");
    }
}

/// Reads and drops up to `announced` bytes (at most [`MAX_BODY`], for at most
/// [`FAREWELL`]) after a refusal was sent, so closing a socket with unread bytes
/// does not reset the connection before the peer reads the refusal. Nothing read
/// here is looked at.
async fn discard<S: AsyncRead + Unpin>(stream: &mut S, announced: u64) {
    let limit = announced.min(MAX_BODY as u64);
    let mut sink = tokio::io::sink();
    let _ = timeout(
        FAREWELL,
        tokio::io::copy(&mut stream.take(limit), &mut sink),
    )
    .await;
}

/// The response to one request.
async fn respond(
    req: &http::Request,
    settings: &WebSettings,
    events: &mpsc::Sender<Event>,
) -> Response {
    match routes::route(req, settings.grace_ms) {
        Err(refusal) => refusal,
        Ok(Route::Page) => Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            headers: Vec::new(),
            body: PAGE.as_bytes().to_vec(),
        }
        .with("Content-Security-Policy", PAGE_POLICY)
        .with("Referrer-Policy", "no-referrer"),
        Ok(Route::Metrics) => match ask_reply(events, AdminCommand::Status).await {
            Ok(AdminReply::Status(snapshot)) => Response {
                status: 200,
                content_type: prometheus::CONTENT_TYPE,
                headers: Vec::new(),
                body: prometheus::render(&snapshot).into_bytes(),
            },
            Ok(other) => routes::answer(&AdminCommand::Status, other),
            Err(refusal) => refusal,
        },
        Ok(Route::Ask { command, mutation }) => {
            // The gate checked the token already (every mutation is a POST or a
            // DELETE); checked again so a route added as a GET mutation stays safe.
            if mutation {
                if let Err(refusal) = routes::authorize(req, settings.admin_token.as_ref()) {
                    return refusal;
                }
            }
            ask(events, command).await
        }
    }
}

/// Hands `command` to the core and turns its answer into a response.
async fn ask(events: &mpsc::Sender<Event>, command: AdminCommand) -> Response {
    match ask_reply(events, command.clone()).await {
        Ok(reply) => routes::answer(&command, reply),
        Err(busy) => busy,
    }
}

/// Hands `command` to the core and returns its answer (503 if none came in time).
async fn ask_reply(
    events: &mpsc::Sender<Event>,
    command: AdminCommand,
) -> Result<AdminReply, Response> {
    let busy = || Response::error(503, "the manager did not answer in time (busy or stopping)");
    let (tx, rx) = oneshot::channel();
    let ask = WebAsk { command, reply: tx };
    match timeout(ASK_TIMEOUT, events.send(Event::Web(ask))).await {
        Ok(Ok(())) => {}
        _ => return Err(busy()),
    }
    match timeout(ASK_TIMEOUT, rx).await {
        Ok(Ok(reply)) => Ok(reply),
        _ => Err(busy()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `request` through [`handle`] and returns the answer's text; the core
    /// must not have been asked anything.
    async fn exchange(request: &[u8], token: Option<&str>) -> String {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let (events, mut core) = mpsc::channel(4);
        let settings = Arc::new(WebSettings {
            admin_token: token.map(|t| Token::new(t).unwrap()),
            grace_ms: 0,
        });
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let served = tokio::spawn(handle(server, peer, true, settings, events));
        client.write_all(request).await.unwrap();
        client.shutdown().await.unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        served.await.unwrap();
        assert!(core.try_recv().is_err(), "the core was asked");
        String::from_utf8(answer).unwrap()
    }

    #[tokio::test]
    async fn an_unauthenticated_mutation_is_refused_before_its_body_is_read() {
        let bodies: [&[u8]; 4] = [
            b"POST /api/blacklist HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\n{\"en",
            b"POST /api/speed HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n",
            b"POST /api/speed HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999\r\n\r\n",
            b"DELETE /api/blacklist HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        ];
        for request in bodies {
            for (token, status) in [(Some("s3cret"), "401"), (None, "403")] {
                let answer = exchange(request, token).await;
                let shown = String::from_utf8_lossy(request);
                let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
                assert!(
                    answer.starts_with(&format!("HTTP/1.1 {status} ")),
                    "{shown}: {answer}"
                );
                for parse_word in ["JSON", "Content-Length", "body", "parameter", "chunked"] {
                    assert!(
                        !body.contains(parse_word),
                        "{shown}: the refusal talks about the body: {answer}"
                    );
                }
            }
        }
    }

    #[tokio::test]
    async fn with_the_token_a_malformed_body_gets_its_parse_message() {
        let request = b"POST /api/blacklist HTTP/1.1\r\nHost: 127.0.0.1\r\n\
            Authorization: Bearer s3cret\r\nContent-Length: 4\r\n\r\n{\"en";
        let answer = exchange(request, Some("s3cret")).await;
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
        assert!(answer.contains("not JSON"), "{answer}");
    }
}
