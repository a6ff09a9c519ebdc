//! A mutation's parameters, typed: [`Params<T>`] reads the body (at most
//! [`MAX_BODY`] bytes, framed by `Content-Length`, within [`READ_TIMEOUT`]) and
//! deserializes it, or the query string when the body is empty, into `T`
//! ([`EntryParams`], [`SpeedParams`], [`ShutdownParams`]).
//!
//! Parameters come from a JSON object body or, without a body, from the query string
//! (`?entry=.example.com`); numbers may be JSON numbers or text (a query string has
//! only text). A bad body gets 400 with the parameter and what was wrong with it; a
//! body over the limit 413, a chunked one 411, a late one 408.
//!
//! Handlers take `Params` last, after the token check ([`super::routes`]), so no
//! byte of an unauthenticated body is ever read here. This module must never
//! allocate more than [`MAX_BODY`] for a body, whatever the peer announces.

use std::fmt;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

use super::READ_TIMEOUT;
use super::reply::Refusal;

/// Largest request body, in bytes: JSON of one blacklist entry or one speed.
pub(crate) const MAX_BODY: usize = 16 * 1024;

/// `POST` and `DELETE /api/blacklist`.
#[derive(Debug, Deserialize)]
pub(crate) struct EntryParams {
    /// The blacklist entry (parsed by the engine).
    pub entry: String,
}

/// `POST /api/speed`.
#[derive(Debug, Deserialize)]
pub(crate) struct SpeedParams {
    /// The new target.
    #[serde(deserialize_with = "number")]
    pub pages_per_sec: f64,
}

/// `POST /api/shutdown`.
#[derive(Debug, Deserialize)]
pub(crate) struct ShutdownParams {
    /// The drain's grace; the configured one when absent.
    #[serde(default, deserialize_with = "whole")]
    pub grace_ms: Option<u64>,
}

/// A request's parameters, deserialized into `T`.
#[derive(Debug)]
pub(crate) struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Params<T> {
    type Rejection = Refusal;

    async fn from_request(req: Request, _: &S) -> Result<Self, Refusal> {
        let (parts, body) = req.into_parts();
        if parts.headers.contains_key(header::TRANSFER_ENCODING) {
            return Err(Refusal::new(
                StatusCode::LENGTH_REQUIRED,
                "only Content-Length bodies are accepted",
            ));
        }
        let body = read_body(&parts.headers, body).await?;
        parse(parts.uri.query().unwrap_or(""), &body).map(Params)
    }
}

/// The body, at most [`MAX_BODY`] bytes, within [`READ_TIMEOUT`].
async fn read_body(headers: &header::HeaderMap, body: Body) -> Result<Vec<u8>, Refusal> {
    let too_large = |n: &dyn fmt::Display| {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body of {n} bytes is over {MAX_BODY}"),
        )
    };
    // hyper has checked the syntax of Content-Length (400 otherwise).
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    if announced > MAX_BODY as u64 {
        return Err(too_large(&announced));
    }
    match tokio::time::timeout(READ_TIMEOUT, axum::body::to_bytes(body, MAX_BODY)).await {
        Err(_) => Err(Refusal::new(
            StatusCode::REQUEST_TIMEOUT,
            "the request did not arrive in time",
        )),
        Ok(Err(e)) => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("reading the request body: {e}"),
        )),
        Ok(Ok(bytes)) => Ok(bytes.to_vec()),
    }
}

/// The parameters in a JSON object `body`, or, when the body is empty, in `query`;
/// 400 with what was wrong otherwise.
pub(crate) fn parse<T: DeserializeOwned>(query: &str, body: &[u8]) -> Result<T, Refusal> {
    let bad = |detail: String| Refusal::new(StatusCode::BAD_REQUEST, detail);
    if body.iter().all(u8::is_ascii_whitespace) {
        let pairs = url::form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()));
        let query = de::value::MapDeserializer::<_, de::value::Error>::new(pairs);
        return serde_path_to_error::deserialize(query)
            .map_err(|e| bad(format!("query string: {}", described(&e))));
    }
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(bad("the body must be a JSON object".to_owned()));
    }
    let mut json = serde_json::Deserializer::from_slice(body);
    let params =
        serde_path_to_error::deserialize(&mut json).map_err(|e| match e.inner().classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                bad(format!("the body is not JSON: {}", e.inner()))
            }
            _ => bad(described(&e)),
        })?;
    json.end()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn detail<T: DeserializeOwned + fmt::Debug>(query: &str, body: &str) -> String {
        let refusal = parse::<T>(query, body.as_bytes()).unwrap_err();
        assert_eq!(refusal.status, StatusCode::BAD_REQUEST);
        refusal.detail
    }

    #[test]
    fn body_or_query_string_into_the_typed_params() {
        let p: EntryParams = parse("", br#"{"entry": ".a.test"}"#).unwrap();
        assert_eq!(p.entry, ".a.test");
        let p: EntryParams = parse("entry=%2Ea.test", b"").unwrap();
        assert_eq!(p.entry, ".a.test");
        let p: SpeedParams = parse("pages_per_sec=2.5", b" ").unwrap();
        assert_eq!(p.pages_per_sec, 2.5);
        let p: SpeedParams = parse("", br#"{"pages_per_sec": "7"}"#).unwrap();
        assert_eq!(p.pages_per_sec, 7.0);
        let p: ShutdownParams = parse("", b"").unwrap();
        assert_eq!(p.grace_ms, None);
        let p: ShutdownParams = parse("grace_ms=20", b"").unwrap();
        assert_eq!(p.grace_ms, Some(20));
        let p: ShutdownParams = parse("", br#"{"grace_ms": 10}"#).unwrap();
        assert_eq!(p.grace_ms, Some(10));
    }

    #[test]
    fn a_refusal_says_which_parameter_is_wrong_and_how() {
        let d = detail::<EntryParams>("", r#"{"entry": 1}"#);
        assert!(d.contains("entry") && d.contains("string"), "{d}");
        let d = detail::<EntryParams>("", "");
        assert!(d.contains("missing field `entry`"), "{d}");
        let d = detail::<SpeedParams>("", r#"{"pages_per_sec": "x"}"#);
        assert!(d.contains("pages_per_sec") && d.contains("a number"), "{d}");
        let d = detail::<ShutdownParams>("", r#"{"grace_ms": 1.5}"#);
        assert!(
            d.contains("grace_ms") && d.contains("a whole number"),
            "{d}"
        );
        let d = detail::<ShutdownParams>("", r#"{"grace_ms": -1}"#);
        assert!(d.contains("grace_ms"), "{d}");
        let d = detail::<EntryParams>("", "{");
        assert!(d.contains("not JSON"), "{d}");
        let d = detail::<EntryParams>("", r#"[".a.test"]"#);
        assert!(d.contains("JSON object"), "{d}");
        let d = detail::<SpeedParams>("pages_per_sec=fast", "");
        assert!(d.contains("pages_per_sec") && d.contains("fast"), "{d}");
        let d = detail::<EntryParams>("", r#"{"entry": "a"} x"#);
        assert!(d.contains("not JSON"), "{d}");
    }
}
