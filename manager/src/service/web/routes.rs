//! The admin API's routes, its guards (the `Host` check and the token check) and its
//! handlers: each handler takes typed inputs (the [`Authorized`] proof for a
//! mutation, its [`Params`]) and turns the engine's reply into a typed answer
//! ([`super::reply`]).
//!
//! | method and path | command | token |
//! |---|---|---|
//! | `GET /` (and `/index.html`) | the page | no |
//! | `GET /api/stats` | [`AdminCommand::Status`] | no |
//! | `GET /metrics` | [`AdminCommand::Status`], as OpenMetrics text (`prometheus`) | no |
//! | `GET /api/blacklist` | [`AdminCommand::Blacklist`] | no |
//! | `POST /api/blacklist` `{"entry": E}` | [`AdminCommand::BlacklistAdd`] | yes |
//! | `DELETE /api/blacklist` `{"entry": E}` | [`AdminCommand::BlacklistRemove`] | yes |
//! | `POST /api/speed` `{"pages_per_sec": R}` | [`AdminCommand::SetSpeed`] | yes |
//! | `POST /api/checkpoint` | [`AdminCommand::Checkpoint`] | yes |
//! | `POST /api/shutdown` `{"grace_ms": G}` (optional) | [`AdminCommand::Shutdown`] | yes |
//!
//! `HEAD` is answered wherever `GET` is; another method gets 405 with `Allow`, an
//! unknown path 404. Before any route is looked at, [`gate`] refuses a `Host` that is
//! not allowed and, for every method but `GET` and `HEAD` on a path that takes
//! mutations ([`needs_token`]), a request without the admin token: 401 (403 when no
//! token is configured) whatever its body or framing, since the body is not read
//! yet. When the server listens on loopback, a `Host` that is not an IP address or
//! `localhost` is refused (403), so a page on another site cannot reach the API
//! through DNS rebinding. The token is `Authorization: Bearer TOKEN`, compared in
//! constant time. Mutation handlers take an [`Authorized`], which checks the token
//! again, so a mutation route can never be served without it.
//!
//! This module must never change anything itself: it only turns requests into
//! commands for the engine ([`AdminAsker`]) and replies into answers.

use std::future::Ready;
use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use spool::protocol::{AdminCommand, AdminReply, Token};

use super::params::{EntryParams, Params, ShutdownParams, SpeedParams};
use super::reply::{self, Refusal};
use super::{ASK_TIMEOUT, WebSettings, prometheus};
use crate::service::ask::AdminAsker;

/// What every handler shares: how to ask the core, the settings, and whether the
/// listener is on loopback.
#[derive(Debug, Clone)]
pub(crate) struct Admin {
    /// The core's admin API.
    pub asker: AdminAsker,
    /// The token and the default grace.
    pub settings: Arc<WebSettings>,
    /// The server listens on a loopback address (the `Host` check applies).
    pub loopback: bool,
}

/// The admin server's routes, behind the [`gate`].
pub(crate) fn router(admin: Admin) -> Router {
    let reads = "GET, HEAD";
    Router::new()
        .route("/", get(page).fallback(not_allowed(reads)))
        .route("/index.html", get(page).fallback(not_allowed(reads)))
        .route("/api/stats", get(stats).fallback(not_allowed(reads)))
        .route("/metrics", get(metrics).fallback(not_allowed(reads)))
        .route(
            "/api/blacklist",
            get(blacklist)
                .post(blacklist_add)
                .delete(blacklist_remove)
                .fallback(not_allowed("GET, HEAD, POST, DELETE")),
        )
        .route("/api/speed", post(speed).fallback(not_allowed("POST")))
        .route(
            "/api/checkpoint",
            post(checkpoint).fallback(not_allowed("POST")),
        )
        .route(
            "/api/shutdown",
            post(shutdown).fallback(not_allowed("POST")),
        )
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(admin.clone(), gate))
        .with_state(admin)
}

/// Refuses a request before it is routed and before its body is read: a `Host` that
/// is not allowed, or a mutation ([`needs_token`]) without the admin token. Adds the
/// house headers to every answer.
async fn gate(State(admin): State<Admin>, req: Request, next: Next) -> Response {
    let checked = check_host(req.headers(), admin.loopback).and_then(|()| {
        if needs_token(req.method(), req.uri().path()) {
            authorize(req.headers(), admin.settings.admin_token.as_ref())
        } else {
            Ok(())
        }
    });
    let mut response = match checked {
        Ok(()) => next.run(req).await,
        Err(refusal) => {
            tracing::warn!(method = %req.method(), path = req.uri().path(),
                status = refusal.status.as_u16(), "admin request refused");
            refusal.into_response()
        }
    };
    reply::house_headers(response.headers_mut());
    response
}

/// Proof that a request carries the admin token: every mutation handler takes one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Authorized;

impl FromRequestParts<Admin> for Authorized {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, admin: &Admin) -> Result<Self, Refusal> {
        authorize(&parts.headers, admin.settings.admin_token.as_ref()).map(|()| Authorized)
    }
}

impl Admin {
    /// Asks the core `command` and answers with its reply.
    async fn read(&self, command: AdminCommand) -> Response {
        match self.asker.ask(command.clone(), ASK_TIMEOUT).await {
            Ok(reply) => reply::answer(&command, reply),
            Err(_busy) => Refusal::busy().into_response(),
        }
    }

    /// Asks the core a mutation, which only an [`Authorized`] request may.
    async fn change(&self, _: Authorized, command: AdminCommand) -> Response {
        self.read(command).await
    }
}

async fn page() -> Response {
    reply::page()
}

async fn stats(State(admin): State<Admin>) -> Response {
    admin.read(AdminCommand::Status).await
}

async fn metrics(State(admin): State<Admin>) -> Response {
    match admin.asker.ask(AdminCommand::Status, ASK_TIMEOUT).await {
        Ok(AdminReply::Status(snapshot)) => match prometheus::render(&snapshot) {
            Ok(text) => ([(header::CONTENT_TYPE, prometheus::CONTENT_TYPE)], text).into_response(),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("metrics could not be encoded: {e}\n"),
            )
                .into_response(),
        },
        Ok(other) => reply::answer(&AdminCommand::Status, other),
        Err(_busy) => Refusal::busy().into_response(),
    }
}

async fn blacklist(State(admin): State<Admin>) -> Response {
    admin.read(AdminCommand::Blacklist).await
}

async fn blacklist_add(
    State(admin): State<Admin>,
    proof: Authorized,
    Params(p): Params<EntryParams>,
) -> Response {
    let command = AdminCommand::BlacklistAdd { entry: p.entry };
    admin.change(proof, command).await
}

async fn blacklist_remove(
    State(admin): State<Admin>,
    proof: Authorized,
    Params(p): Params<EntryParams>,
) -> Response {
    let command = AdminCommand::BlacklistRemove { entry: p.entry };
    admin.change(proof, command).await
}

async fn speed(
    State(admin): State<Admin>,
    proof: Authorized,
    Params(p): Params<SpeedParams>,
) -> Response {
    // The protocol carries f32; the range check is the engine's.
    let command = AdminCommand::SetSpeed {
        pages_per_sec: p.pages_per_sec as f32,
    };
    admin.change(proof, command).await
}

async fn checkpoint(State(admin): State<Admin>, proof: Authorized) -> Response {
    admin.change(proof, AdminCommand::Checkpoint).await
}

async fn shutdown(
    State(admin): State<Admin>,
    proof: Authorized,
    Params(p): Params<ShutdownParams>,
) -> Response {
    let grace_ms = p.grace_ms.unwrap_or(admin.settings.grace_ms);
    admin
        .change(proof, AdminCommand::Shutdown { grace_ms })
        .await
}

/// 404 for a path that is not served.
async fn not_found(uri: Uri) -> Refusal {
    Refusal::new(
        StatusCode::NOT_FOUND,
        format!("no such page: {}", uri.path()),
    )
}

/// The 405 answer of a path, naming the methods it takes.
fn not_allowed(allow: &'static str) -> impl Fn() -> Ready<Refusal> + Clone + Send + Sync + 'static {
    move || {
        std::future::ready(
            Refusal::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("method not allowed here (allowed: {allow})"),
            )
            .with(header::ALLOW, allow),
        )
    }
}

/// The paths that take mutations.
const MUTATION_PATHS: [&str; 4] = [
    "/api/blacklist",
    "/api/speed",
    "/api/checkpoint",
    "/api/shutdown",
];

/// Whether a request must carry the admin token: any method but `GET` and `HEAD` on
/// a path that takes mutations, decided from the head alone, before the body is
/// read. (Other requests are answered without looking at a body: the page, reads,
/// 404 and 405.)
pub(crate) fn needs_token(method: &Method, path: &str) -> bool {
    !matches!(*method, Method::GET | Method::HEAD) && MUTATION_PATHS.contains(&path)
}

/// Whether `headers` carry the admin token; the refusal otherwise.
pub(crate) fn authorize(headers: &HeaderMap, admin_token: Option<&Token>) -> Result<(), Refusal> {
    let Some(token) = admin_token else {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "no admin token is configured (manager.admin_token or POLYCRAWL_ADMIN_TOKEN): \
             the admin API is read-only",
        ));
    };
    let refuse = |detail: &str| {
        Err(Refusal::new(StatusCode::UNAUTHORIZED, detail)
            .with(header::WWW_AUTHENTICATE, "Bearer realm=\"polycrawl\""))
    };
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return refuse("this needs the admin token: Authorization: Bearer TOKEN");
    };
    let presented = value
        .to_str()
        .ok()
        .map(str::trim)
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .and_then(|(_, secret)| Token::new(secret.trim()).ok());
    match presented {
        Some(p) if token.matches(&p) => Ok(()),
        Some(_) => refuse("wrong admin token"),
        None => refuse("the Authorization header must be `Bearer TOKEN`"),
    }
}

/// On a loopback listener, refuses a `Host` that is a name other than `localhost`.
pub(crate) fn check_host(headers: &HeaderMap, loopback: bool) -> Result<(), Refusal> {
    if !loopback {
        return Ok(());
    }
    let host = headers
        .get(header::HOST)
        .map_or("", |v| v.to_str().unwrap_or("?"))
        .trim();
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    if name.is_empty() || name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    Err(Refusal::new(
        StatusCode::FORBIDDEN,
        format!(
            "Host {host:?} refused: on loopback the admin page answers only to IP \
             addresses and localhost"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), HeaderValue::from_str(v).unwrap()))
            .collect()
    }

    #[test]
    fn mutations_need_the_bearer_token() {
        let token = Token::new("s3cret").unwrap();
        let with = |value: &str| headers(&[(header::AUTHORIZATION, value)]);
        assert!(authorize(&with("Bearer s3cret"), Some(&token)).is_ok());
        assert!(authorize(&with("bearer  s3cret"), Some(&token)).is_ok());
        for bad in ["Bearer s3creT", "Bearer ", "Basic czNjcmV0", "s3cret"] {
            let refusal = authorize(&with(bad), Some(&token)).unwrap_err();
            assert_eq!(refusal.status, 401, "{bad}");
            assert_eq!(
                refusal.header.as_ref().map(|(n, _)| n),
                Some(&header::WWW_AUTHENTICATE)
            );
        }
        let none = HeaderMap::new();
        assert_eq!(authorize(&none, Some(&token)).unwrap_err().status, 401);
        let unset = authorize(&with("Bearer s3cret"), None).unwrap_err();
        assert_eq!(unset.status, 403);
        assert!(unset.detail.contains("manager.admin_token"));
    }

    #[test]
    fn every_method_but_get_and_head_on_a_mutation_path_needs_the_token() {
        let method = |m: &str| Method::from_bytes(m.as_bytes()).unwrap();
        assert!(!needs_token(&Method::GET, "/api/speed"));
        assert!(!needs_token(&Method::HEAD, "/api/speed"));
        for m in ["POST", "DELETE", "PUT", "PATCH", "OPTIONS", "BREW"] {
            assert!(needs_token(&method(m), "/api/speed"), "{m}");
        }
        assert!(!needs_token(&Method::POST, "/api/stats"));
        assert!(!needs_token(&Method::POST, "/nope"));
        for (m, path) in [
            (Method::POST, "/api/blacklist"),
            (Method::DELETE, "/api/blacklist"),
            (Method::POST, "/api/speed"),
            (Method::POST, "/api/checkpoint"),
            (Method::POST, "/api/shutdown"),
        ] {
            assert!(needs_token(&m, path), "{m} {path}");
        }
    }

    #[test]
    fn loopback_answers_only_to_addresses_and_localhost() {
        let with = |host: &str| headers(&[(header::HOST, host)]);
        for ok in [
            "127.0.0.1:7401",
            "localhost:7401",
            "[::1]:7401",
            "127.0.0.1",
        ] {
            assert!(check_host(&with(ok), true).is_ok(), "{ok}");
        }
        assert!(check_host(&HeaderMap::new(), true).is_ok(), "HTTP/1.0");
        assert_eq!(
            check_host(&with("evil.example:7401"), true)
                .unwrap_err()
                .status,
            403
        );
        assert!(check_host(&with("crawler01:7401"), false).is_ok());
    }
}
