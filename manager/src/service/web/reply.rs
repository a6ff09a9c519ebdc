//! What the admin server answers, as typed values: the engine's replies as JSON
//! records ([`BlacklistAnswer`], [`CheckpointAnswer`], [`DoneAnswer`], the status
//! snapshot itself), refusals as [`Refusal`] (`{"ok": false, "detail": ...}` with
//! its status code and, where HTTP asks for one, a header), and the page.
//!
//! Every answer, refusals included, says `Cache-Control: no-store` and
//! `X-Content-Type-Options: nosniff` ([`house_headers`]).
//!
//! This module must never decide anything about a request: it only shapes answers.

use axum::http::header::{self, HeaderName, HeaderValue};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use spool::protocol::{AdminCommand, AdminReply};

/// The page.
const PAGE: &str = include_str!("page.html");
/// What the page may load and do: nothing from elsewhere, requests to this server.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `GET /api/blacklist`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct BlacklistAnswer {
    /// The entries, as the blacklist file writes them.
    pub entries: Vec<String>,
}

/// A checkpoint written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct CheckpointAnswer {
    /// Always true.
    pub ok: bool,
    /// The checkpoint's directory, absolute.
    pub path: String,
    /// `checkpoint written to PATH`.
    pub detail: String,
}

/// A mutation carried out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DoneAnswer {
    /// Always true.
    pub ok: bool,
    /// What was done, in the engine's words.
    pub detail: String,
}

/// The body of every refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct RefusalBody<'a> {
    /// Always false.
    ok: bool,
    /// Why.
    detail: &'a str,
}

/// A request refused: its status code, why, and the one header HTTP asks for with
/// some refusals (`Allow` with 405, `WWW-Authenticate` with 401).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The status code.
    pub status: StatusCode,
    /// Why, for the person or script that asked.
    pub detail: String,
    /// A header field to send with it.
    pub header: Option<(HeaderName, &'static str)>,
}

impl Refusal {
    /// A refusal with `status` and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Refusal {
        Refusal {
            status,
            detail: detail.into(),
            header: None,
        }
    }

    /// The same refusal with a header field.
    pub fn with(mut self, name: HeaderName, value: &'static str) -> Refusal {
        self.header = Some((name, value));
        self
    }

    /// The core did not answer in time.
    pub fn busy() -> Refusal {
        Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the manager did not answer in time (busy or stopping)",
        )
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = RefusalBody {
            ok: false,
            detail: &self.detail,
        };
        let mut response = json(self.status, &body);
        if let Some((name, value)) = self.header {
            response
                .headers_mut()
                .insert(name, HeaderValue::from_static(value));
        }
        response
    }
}

/// `body` as JSON with `status` (500 if it does not serialize, which our own types
/// always do).
pub(crate) fn json(status: StatusCode, body: &impl Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response(),
        Err(e) => Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the answer: {e}"),
        )
        .into_response(),
    }
}

/// The admin page, with the policy that keeps it self-contained.
pub(crate) fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, PAGE_POLICY),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        PAGE,
    )
        .into_response()
}

/// The headers every answer carries: never cached, never sniffed.
pub(crate) fn house_headers(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

/// The HTTP answer to the engine's `reply` to `command`.
pub(crate) fn answer(command: &AdminCommand, reply: AdminReply) -> Response {
    match reply {
        AdminReply::Status(snapshot) => json(StatusCode::OK, &snapshot),
        AdminReply::Blacklist { entries } => json(StatusCode::OK, &BlacklistAnswer { entries }),
        AdminReply::Checkpointed { path } => json(
            StatusCode::OK,
            &CheckpointAnswer {
                ok: true,
                detail: format!("checkpoint written to {path}"),
                path,
            },
        ),
        AdminReply::Done { detail } => json(StatusCode::OK, &DoneAnswer { ok: true, detail }),
        AdminReply::Failed { detail } => {
            let status = match command {
                AdminCommand::Checkpoint => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::BAD_REQUEST,
            };
            Refusal::new(status, detail).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(r: Response) -> (StatusCode, serde_json::Value) {
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn replies_become_json_answers() {
        let r = answer(
            &AdminCommand::Checkpoint,
            AdminReply::Checkpointed {
                path: "/s/checkpoints/3".into(),
            },
        );
        let (status, v) = body(r).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(v["path"], "/s/checkpoints/3");
        assert_eq!(v["ok"], true);
        assert_eq!(v["detail"], "checkpoint written to /s/checkpoints/3");
        let failed =
            |c: &AdminCommand| answer(c, AdminReply::Failed { detail: "x".into() }).status();
        assert_eq!(failed(&AdminCommand::Checkpoint), 500);
        assert_eq!(
            failed(&AdminCommand::SetSpeed {
                pages_per_sec: -1.0
            }),
            400
        );
        let list = answer(
            &AdminCommand::Blacklist,
            AdminReply::Blacklist {
                entries: vec!["*.a.test".into()],
            },
        );
        let (_, v) = body(list).await;
        assert_eq!(v["entries"][0], "*.a.test");
        let done = answer(
            &AdminCommand::Checkpoint,
            AdminReply::Done {
                detail: "fine".into(),
            },
        );
        let (_, v) = body(done).await;
        assert_eq!(v, serde_json::json!({"ok": true, "detail": "fine"}));
    }

    #[tokio::test]
    async fn a_refusal_is_ok_false_with_its_detail_and_header() {
        let r = Refusal::new(StatusCode::UNAUTHORIZED, "no \"token\"")
            .with(header::WWW_AUTHENTICATE, "Bearer")
            .into_response();
        assert_eq!(r.headers()[header::WWW_AUTHENTICATE], "Bearer");
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        let (status, v) = body(r).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            v,
            serde_json::json!({"ok": false, "detail": "no \"token\""})
        );
    }
}
