//! The admin web server: the admin page (`GET /`) and the JSON API beside it
//! (`/api/...`, listed in `routes.rs`), on their own listener (`manager.admin_http`,
//! loopback by default).
//!
//! Each connection is one task that reads one request (`http.rs`), routes it and
//! checks the token (`routes.rs`), and, for anything but the page, hands an
//! [`AdminCommand`] to the core through the same event queue as the control
//! connections ([`Event::Web`]); the core answers it with the same code that answers
//! `polycrawl status` and admin scripts on the control port (`admin.rs`), so the two
//! can never disagree. The page (`page.html`) is one self-contained file: inline
//! script and style, no outside resource; it polls `/api/stats`.
//!
//! Limits: [`MAX_CONNECTIONS`] at once (more are closed at once), a request must
//! arrive within [`READ_TIMEOUT`], the head and body sizes of `http.rs`, and an
//! answer from the core within [`ASK_TIMEOUT`] (else 503).
//!
//! This module must never touch the frontier or the engine's state (it only sends
//! commands), answer a mutation without the admin token, or serve anything but the
//! page and the API.

mod http;
mod routes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{AdminCommand, AdminReply, Token};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use super::conn::Event;
use http::{Response, read_request};
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
async fn handle(
    mut stream: TcpStream,
    peer: SocketAddr,
    loopback: bool,
    settings: Arc<WebSettings>,
    events: mpsc::Sender<Event>,
) {
    let (response, head_only) = match timeout(READ_TIMEOUT, read_request(&mut stream)).await {
        Err(_) => (
            Response::error(408, "the request did not arrive in time"),
            false,
        ),
        Ok(Err(e)) => match e.status() {
            Some(status) => (Response::error(status, &e.to_string()), false),
            None => {
                tracing::debug!(%peer, error = %e, "admin page connection ended");
                return;
            }
        },
        Ok(Ok(req)) => {
            let response = respond(&req, loopback, &settings, &events).await;
            if matches!(response.status, 401 | 403) {
                tracing::warn!(%peer, method = req.method, path = req.path, status = response.status,
                    "admin request refused");
            }
            (response, req.method == "HEAD")
        }
    };
    let write = async {
        stream.write_all(&response.to_bytes(head_only)).await?;
        stream.shutdown().await
    };
    if let Ok(Err(e)) = timeout(ASK_TIMEOUT, write).await {
        tracing::debug!(%peer, error = %e, "admin page answer not delivered");
    }
}

/// The response to one request.
async fn respond(
    req: &http::Request,
    loopback: bool,
    settings: &WebSettings,
    events: &mpsc::Sender<Event>,
) -> Response {
    if let Err(refusal) = routes::check_host(req, loopback) {
        return refusal;
    }
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
        Ok(Route::Ask { command, mutation }) => {
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
    let busy = || Response::error(503, "the manager did not answer in time (busy or stopping)");
    let (tx, rx) = oneshot::channel();
    let ask = WebAsk {
        command: command.clone(),
        reply: tx,
    };
    match timeout(ASK_TIMEOUT, events.send(Event::Web(ask))).await {
        Ok(Ok(())) => {}
        _ => return busy(),
    }
    match timeout(ASK_TIMEOUT, rx).await {
        Ok(Ok(reply)) => routes::answer(&command, reply),
        _ => busy(),
    }
}
