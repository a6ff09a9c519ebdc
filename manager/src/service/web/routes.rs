//! The admin API's routes, its token check and how engine answers become HTTP
//! answers. Pure functions of a [`Request`], so every rule is tested without a
//! socket.
//!
//! | method and path | command | token |
//! |---|---|---|
//! | `GET /` | the page | no |
//! | `GET /api/stats` | [`AdminCommand::Status`] | no |
//! | `GET /metrics` | [`AdminCommand::Status`], as Prometheus text (`prometheus`) | no |
//! | `GET /api/blacklist` | [`AdminCommand::Blacklist`] | no |
//! | `POST /api/blacklist` `{"entry": E}` | [`AdminCommand::BlacklistAdd`] | yes |
//! | `DELETE /api/blacklist` `{"entry": E}` | [`AdminCommand::BlacklistRemove`] | yes |
//! | `POST /api/speed` `{"pages_per_sec": R}` | [`AdminCommand::SetSpeed`] | yes |
//! | `POST /api/checkpoint` | [`AdminCommand::Checkpoint`] | yes |
//! | `POST /api/shutdown` `{"grace_ms": G}` (optional) | [`AdminCommand::Shutdown`] | yes |
//!
//! Every method but `GET` and `HEAD` on a path that takes mutations needs the token
//! ([`needs_token`]), checked from the head before the body is read: a request
//! without it gets 401 (403 when no token is configured) whatever its body or
//! framing.
//!
//! Parameters come from a JSON object body or, without a body, from the query
//! string (`?entry=.example.com`), deserialized into one typed struct per route
//! ([`EntryParams`], [`SpeedParams`], [`ShutdownParams`]); numbers may be JSON
//! numbers or text (a query string has only text). A bad body gets 400 with the
//! parameter and what was wrong with it. The token is `Authorization: Bearer TOKEN`,
//! compared in constant time; without an admin token configured every mutation is
//! refused (403). When the server listens on loopback, a `Host` that is not an IP
//! address or `localhost` is refused (403), so a page on another site cannot reach
//! the API through DNS rebinding.
//!
//! This module must never change anything itself: it only turns requests into
//! commands and replies into responses.

use std::fmt;
use std::net::IpAddr;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::json;
use spool::protocol::{AdminCommand, AdminReply, Token};

use super::http::{Request, Response};

/// What a request asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Route {
    /// The admin page.
    Page,
    /// The admin status in the Prometheus text format.
    Metrics,
    /// A command for the engine; `mutation` ones need the token.
    Ask {
        /// The command.
        command: AdminCommand,
        /// Whether it changes the crawl.
        mutation: bool,
    },
}

/// The route of `req`, or the response refusing it (404, 405, 400).
pub(crate) fn route(req: &Request, default_grace_ms: u64) -> Result<Route, Response> {
    let get = matches!(req.method.as_str(), "GET" | "HEAD");
    let method = req.method.as_str();
    let read = |command| {
        Ok(Route::Ask {
            command,
            mutation: false,
        })
    };
    let write = |command| {
        Ok(Route::Ask {
            command,
            mutation: true,
        })
    };
    match req.path.as_str() {
        "/" | "/index.html" if get => Ok(Route::Page),
        "/" | "/index.html" => Err(not_allowed("GET, HEAD")),
        "/api/stats" if get => read(AdminCommand::Status),
        "/metrics" if get => Ok(Route::Metrics),
        "/metrics" => Err(not_allowed("GET, HEAD")),
        "/api/stats" => Err(not_allowed("GET, HEAD")),
        "/api/blacklist" if get => read(AdminCommand::Blacklist),
        "/api/blacklist" if method == "POST" => write(AdminCommand::BlacklistAdd {
            entry: params::<EntryParams>(req)?.entry,
        }),
        "/api/blacklist" if method == "DELETE" => write(AdminCommand::BlacklistRemove {
            entry: params::<EntryParams>(req)?.entry,
        }),
        "/api/blacklist" => Err(not_allowed("GET, HEAD, POST, DELETE")),
        "/api/speed" if method == "POST" => {
            let rate = params::<SpeedParams>(req)?.pages_per_sec;
            write(AdminCommand::SetSpeed {
                // The protocol carries f32; the range check is the engine's.
                pages_per_sec: rate as f32,
            })
        }
        "/api/checkpoint" if method == "POST" => write(AdminCommand::Checkpoint),
        "/api/shutdown" if method == "POST" => {
            let grace_ms = params::<ShutdownParams>(req)?.grace_ms;
            write(AdminCommand::Shutdown {
                grace_ms: grace_ms.unwrap_or(default_grace_ms),
            })
        }
        "/api/speed" | "/api/checkpoint" | "/api/shutdown" => Err(not_allowed("POST")),
        other => Err(Response::error(404, &format!("no such page: {other}"))),
    }
}

fn not_allowed(allow: &'static str) -> Response {
    Response::error(405, &format!("method not allowed here (allowed: {allow})"))
        .with("Allow", allow)
}

/// `POST` and `DELETE /api/blacklist`.
#[derive(Debug, Deserialize)]
struct EntryParams {
    /// The blacklist entry (parsed by the engine).
    entry: String,
}

/// `POST /api/speed`.
#[derive(Debug, Deserialize)]
struct SpeedParams {
    /// The new target.
    #[serde(deserialize_with = "number")]
    pages_per_sec: f64,
}

/// `POST /api/shutdown`.
#[derive(Debug, Deserialize)]
struct ShutdownParams {
    /// The drain's grace; the configured one when absent.
    #[serde(default, deserialize_with = "whole")]
    grace_ms: Option<u64>,
}

/// A request's parameters: its JSON object body, or, when the body is empty, its
/// query string; 400 with what was wrong otherwise.
fn params<T: DeserializeOwned>(req: &Request) -> Result<T, Response> {
    let bad = |detail: String| Response::error(400, &detail);
    if req.body.iter().all(u8::is_ascii_whitespace) {
        let pairs = url::form_urlencoded::parse(req.query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()));
        let query = de::value::MapDeserializer::<_, de::value::Error>::new(pairs);
        return serde_path_to_error::deserialize(query)
            .map_err(|e| bad(format!("query string: {}", described(&e))));
    }
    if req.body.trim_ascii_start().first() != Some(&b'{') {
        return Err(bad("the body must be a JSON object".to_owned()));
    }
    let mut body = serde_json::Deserializer::from_slice(&req.body);
    let params =
        serde_path_to_error::deserialize(&mut body).map_err(|e| match e.inner().classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                bad(format!("the body is not JSON: {}", e.inner()))
            }
            _ => bad(described(&e)),
        })?;
    body.end()
        .map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    Ok(params)
}

/// `"name": what was wrong`, or what was wrong when no parameter is at fault.
fn described<E: fmt::Display>(e: &serde_path_to_error::Error<E>) -> String {
    let path = e.path().to_string();
    match path.as_str() {
        "." | "" => e.inner().to_string(),
        name => format!("{name:?}: {}", e.inner()),
    }
}

/// A number given as a JSON number or as text.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(Lenient(
        |text: &str| text.trim().parse::<f64>().ok(),
        "a number",
    ))
}

/// A whole number (`u64`) given as a JSON number or as text.
fn whole<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_any(Lenient(
        |text: &str| text.trim().parse::<u64>().ok(),
        "a whole number",
    ))
    .map(Some)
}

/// Reads a JSON number, or text through its parse function.
struct Lenient<F>(F, &'static str);

/// What a [`Lenient`] reads to.
trait FromJsonNumber: Sized {
    fn from_f64(v: f64) -> Option<Self>;
    fn from_u64(v: u64) -> Option<Self>;
    fn from_i64(v: i64) -> Option<Self>;
}

impl FromJsonNumber for f64 {
    fn from_f64(v: f64) -> Option<Self> {
        Some(v)
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(v as f64)
    }
    fn from_i64(v: i64) -> Option<Self> {
        Some(v as f64)
    }
}

impl FromJsonNumber for u64 {
    fn from_f64(_: f64) -> Option<Self> {
        None
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(v)
    }
    fn from_i64(v: i64) -> Option<Self> {
        u64::try_from(v).ok()
    }
}

impl<'de, T: FromJsonNumber, F: Fn(&str) -> Option<T>> Visitor<'de> for Lenient<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.1)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        T::from_f64(v).ok_or_else(|| E::invalid_value(de::Unexpected::Float(v), &self))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        T::from_u64(v).ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        T::from_i64(v).ok_or_else(|| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.0)(v).ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
    }
}

/// The paths that take mutations.
const MUTATION_PATHS: [&str; 4] = [
    "/api/blacklist",
    "/api/speed",
    "/api/checkpoint",
    "/api/shutdown",
];

/// Whether `req` must carry the admin token: any method but `GET` and `HEAD` on a
/// path that takes mutations, decided from the head alone, before the body is
/// read. (Other requests are answered without looking at a body: the page, reads,
/// 404 and 405.)
pub(crate) fn needs_token(req: &Request) -> bool {
    !matches!(req.method.as_str(), "GET" | "HEAD") && MUTATION_PATHS.contains(&req.path.as_str())
}

/// Whether `req` carries the admin token; the refusal otherwise.
pub(crate) fn authorize(req: &Request, admin_token: Option<&Token>) -> Result<(), Response> {
    let Some(token) = admin_token else {
        return Err(Response::error(
            403,
            "no admin token is configured (manager.admin_token or POLYCRAWL_ADMIN_TOKEN): \
             the admin API is read-only",
        ));
    };
    let refuse = |detail: &str| {
        Err(Response::error(401, detail).with("WWW-Authenticate", "Bearer realm=\"polycrawl\""))
    };
    let Some(value) = req.header("authorization") else {
        return refuse("this needs the admin token: Authorization: Bearer TOKEN");
    };
    let presented = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .and_then(|(_, secret)| Token::new(secret.trim()).ok());
    match presented {
        Some(p) if token.matches(&p) => Ok(()),
        Some(_) => refuse("wrong admin token"),
        None => refuse("the Authorization header must be `Bearer TOKEN`"),
    }
}

/// On a loopback listener, refuses a `Host` that is a name other than `localhost`.
pub(crate) fn check_host(req: &Request, loopback: bool) -> Result<(), Response> {
    if !loopback {
        return Ok(());
    }
    let host = req.header("host").unwrap_or("");
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    if name.is_empty() || name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    Err(Response::error(
        403,
        &format!(
            "Host {host:?} refused: on loopback the admin page answers only to IP \
             addresses and localhost"
        ),
    ))
}

/// The HTTP answer to the engine's `reply` to `command`.
pub(crate) fn answer(command: &AdminCommand, reply: AdminReply) -> Response {
    match reply {
        AdminReply::Status(snapshot) => Response::json(200, &snapshot),
        AdminReply::Blacklist { entries } => Response::json(200, &json!({ "entries": entries })),
        AdminReply::Checkpointed { path } => Response::json(
            200,
            &json!({ "ok": true, "path": path, "detail": format!("checkpoint written to {path}") }),
        ),
        AdminReply::Done { detail } => {
            Response::json(200, &json!({ "ok": true, "detail": detail }))
        }
        AdminReply::Failed { detail } => {
            let status = match command {
                AdminCommand::Checkpoint => 500,
                _ => 400,
            };
            Response::error(status, &detail)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, target: &str, body: &str, headers: &[(&str, &str)]) -> Request {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Request {
            method: method.to_owned(),
            path: path.to_owned(),
            query: query.to_owned(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_owned().to_owned(), v.to_owned().to_owned()))
                .collect(),
            body: body.as_bytes().to_vec(),
        }
    }

    fn command(r: Result<Route, Response>) -> (AdminCommand, bool) {
        match r {
            Ok(Route::Ask { command, mutation }) => (command, mutation),
            other => panic!("not a command: {other:?}"),
        }
    }

    fn status(r: Result<Route, Response>) -> u16 {
        r.unwrap_err().status
    }

    #[test]
    fn every_route_maps_to_its_command() {
        let r = |m, t, b| route(&req(m, t, b, &[]), 7_000);
        assert_eq!(r("GET", "/", ""), Ok(Route::Page));
        assert_eq!(r("HEAD", "/", ""), Ok(Route::Page));
        assert_eq!(
            command(r("GET", "/api/stats", "")),
            (AdminCommand::Status, false)
        );
        assert_eq!(
            command(r("GET", "/api/blacklist", "")),
            (AdminCommand::Blacklist, false)
        );
        let add = AdminCommand::BlacklistAdd {
            entry: ".a.test".into(),
        };
        assert_eq!(
            command(r("POST", "/api/blacklist", r#"{"entry": ".a.test"}"#)),
            (add.clone(), true)
        );
        assert_eq!(
            command(r("POST", "/api/blacklist?entry=%2Ea.test", "")),
            (add, true)
        );
        assert_eq!(
            command(r("DELETE", "/api/blacklist?entry=b.test", "")),
            (
                AdminCommand::BlacklistRemove {
                    entry: "b.test".into()
                },
                true
            )
        );
        assert_eq!(
            command(r("POST", "/api/speed", r#"{"pages_per_sec": 50}"#)),
            (
                AdminCommand::SetSpeed {
                    pages_per_sec: 50.0
                },
                true
            )
        );
        assert_eq!(
            command(r("POST", "/api/checkpoint", "")),
            (AdminCommand::Checkpoint, true)
        );
        assert_eq!(
            command(r("POST", "/api/shutdown", "")),
            (AdminCommand::Shutdown { grace_ms: 7_000 }, true)
        );
        assert_eq!(
            command(r("POST", "/api/shutdown", r#"{"grace_ms": 10}"#)),
            (AdminCommand::Shutdown { grace_ms: 10 }, true)
        );
        assert_eq!(
            command(r("POST", "/api/shutdown?grace_ms=20", "")),
            (AdminCommand::Shutdown { grace_ms: 20 }, true)
        );
        assert_eq!(
            command(r("POST", "/api/speed?pages_per_sec=2.5", " ")),
            (AdminCommand::SetSpeed { pages_per_sec: 2.5 }, true)
        );
    }

    #[test]
    fn bad_requests_are_refused_with_their_code() {
        let r = |m, t, b| route(&req(m, t, b, &[]), 0);
        assert_eq!(status(r("GET", "/nope", "")), 404);
        assert_eq!(status(r("DELETE", "/api/stats", "")), 405);
        let refusal = r("GET", "/api/speed", "").unwrap_err();
        assert_eq!(refusal.status, 405);
        assert!(refusal.headers.contains(&("Allow", "POST".to_owned())));
        assert_eq!(status(r("POST", "/api/blacklist", "")), 400, "no entry");
        assert_eq!(status(r("POST", "/api/blacklist", "{")), 400, "not JSON");
        assert_eq!(status(r("POST", "/api/blacklist", "[1]")), 400, "no object");
        assert_eq!(status(r("POST", "/api/blacklist", r#"{"entry": 1}"#)), 400);
        assert_eq!(
            status(r("POST", "/api/speed", r#"{"pages_per_sec": "x"}"#)),
            400
        );
        assert_eq!(
            status(r("POST", "/api/shutdown", r#"{"grace_ms": -1}"#)),
            400
        );
        assert_eq!(status(r("POST", "/api/speed?pages_per_sec=fast", "")), 400);
    }

    #[test]
    fn a_refusal_says_which_parameter_is_wrong_and_how() {
        let detail = |m, t, b| {
            let refusal = route(&req(m, t, b, &[]), 0).unwrap_err();
            assert_eq!(refusal.status, 400);
            String::from_utf8_lossy(&refusal.body).into_owned()
        };
        let d = detail("POST", "/api/blacklist", r#"{"entry": 1}"#);
        assert!(d.contains("entry") && d.contains("string"), "{d}");
        let d = detail("POST", "/api/blacklist", "");
        assert!(d.contains("missing field `entry`"), "{d}");
        let d = detail("POST", "/api/speed", r#"{"pages_per_sec": "x"}"#);
        assert!(d.contains("pages_per_sec") && d.contains("a number"), "{d}");
        let d = detail("POST", "/api/shutdown", r#"{"grace_ms": 1.5}"#);
        assert!(
            d.contains("grace_ms") && d.contains("a whole number"),
            "{d}"
        );
        let d = detail("POST", "/api/blacklist", "{");
        assert!(d.contains("not JSON"), "{d}");
        let d = detail("POST", "/api/blacklist", r#"[".a.test"]"#);
        assert!(d.contains("JSON object"), "{d}");
        let d = detail("POST", "/api/speed?pages_per_sec=fast", "");
        assert!(d.contains("pages_per_sec") && d.contains("fast"), "{d}");
    }

    #[test]
    fn mutations_need_the_bearer_token() {
        let token = Token::new("s3cret").unwrap();
        let with = |value: &str| req("POST", "/api/checkpoint", "", &[("authorization", value)]);
        assert!(authorize(&with("Bearer s3cret"), Some(&token)).is_ok());
        assert!(authorize(&with("bearer  s3cret"), Some(&token)).is_ok());
        for bad in ["Bearer s3creT", "Bearer ", "Basic czNjcmV0", "s3cret"] {
            let refusal = authorize(&with(bad), Some(&token)).unwrap_err();
            assert_eq!(refusal.status, 401, "{bad}");
            assert!(
                refusal
                    .headers
                    .iter()
                    .any(|(n, _)| *n == "WWW-Authenticate")
            );
        }
        let none = req("POST", "/api/checkpoint", "", &[]);
        assert_eq!(authorize(&none, Some(&token)).unwrap_err().status, 401);
        let unset = authorize(&with("Bearer s3cret"), None).unwrap_err();
        assert_eq!(unset.status, 403);
        assert!(String::from_utf8_lossy(&unset.body).contains("manager.admin_token"));
    }

    #[test]
    fn every_method_but_get_and_head_on_a_mutation_path_needs_the_token() {
        let r = |m| req(m, "/api/speed", "", &[]);
        assert!(!needs_token(&r("GET")));
        assert!(!needs_token(&r("HEAD")));
        for m in ["POST", "DELETE", "PUT", "PATCH", "OPTIONS", "BREW"] {
            assert!(needs_token(&r(m)), "{m}");
        }
        assert!(!needs_token(&req("POST", "/api/stats", "", &[])));
        assert!(!needs_token(&req("POST", "/nope", "", &[])));
        for (m, t, b) in [
            ("POST", "/api/blacklist", ""),
            ("DELETE", "/api/blacklist", ""),
            ("POST", "/api/speed", ""),
            ("POST", "/api/checkpoint", ""),
            ("POST", "/api/shutdown", ""),
        ] {
            let (_, mutation) = command(route(&req(m, t, b, &[]), 0).or_else(|e| {
                // A route refusing an empty body is still a mutation route.
                route(&req(m, &format!("{t}?entry=x&pages_per_sec=1"), b, &[]), 0).map_err(|_| e)
            }));
            assert!(mutation && needs_token(&req(m, t, b, &[])), "{m} {t}");
        }
    }

    #[test]
    fn loopback_answers_only_to_addresses_and_localhost() {
        let with = |host: &str| req("GET", "/", "", &[("host", host)]);
        for ok in [
            "127.0.0.1:7401",
            "localhost:7401",
            "[::1]:7401",
            "127.0.0.1",
        ] {
            assert!(check_host(&with(ok), true).is_ok(), "{ok}");
        }
        assert_eq!(
            check_host(&with("evil.example:7401"), true)
                .unwrap_err()
                .status,
            403
        );
        assert!(check_host(&with("crawler01:7401"), false).is_ok());
    }

    #[test]
    fn replies_become_json_answers() {
        let r = answer(
            &AdminCommand::Checkpoint,
            AdminReply::Checkpointed {
                path: "/s/checkpoints/3".into(),
            },
        );
        assert_eq!(r.status, 200);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["path"], "/s/checkpoints/3");
        let failed = |c: &AdminCommand| answer(c, AdminReply::Failed { detail: "x".into() }).status;
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
        let v: serde_json::Value = serde_json::from_slice(&list.body).unwrap();
        assert_eq!(v["entries"][0], "*.a.test");
    }
}
