//! The request bytes: one `GET` (or `HEAD`) in HTTP/1.1 with a fixed, polite header
//! set, plus `If-None-Match` and `If-Modified-Since` when the job carries an
//! earlier response's validators (a recrawl's conditional request; an entity tag
//! that [`spool::validators::valid_etag`] rejects is not sent).
//!
//! The exact bytes built here are the bytes written to the socket and returned in
//! [`Fetched::request`](crate::Fetched::request) for the WARC request record. Over
//! HTTP/2 the same fields are sent (the host as `:authority`, no `Connection`), and
//! the record holds their HTTP/1.1 form (`normalised`). The
//! request never carries cookies, credentials or a body. `Target` and the validated
//! user agent guarantee no CR/LF can be smuggled into a header.

use bytes::{BufMut, Bytes, BytesMut};

use spool::Validators;
use spool::validators::valid_etag;

use crate::job::{Method, Target};

/// The `Accept` header: HTML first, anything else accepted.
pub const ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// The `Accept-Encoding` header: only the codings we can decode.
pub const ACCEPT_ENCODING: &str = "gzip, deflate";

/// The header fields of a request for `target` after `Host` (which HTTP/2 sends
/// as `:authority`) and before `Connection` (which HTTP/2 has not): names as
/// HTTP/1.1 writes them, values validated (no CR, LF or other control byte).
pub(crate) fn fields(user_agent: &str, validators: &Validators) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("User-Agent", user_agent.to_owned()),
        ("Accept", ACCEPT.to_owned()),
        ("Accept-Encoding", ACCEPT_ENCODING.to_owned()),
    ];
    if let Some(etag) = validators.etag.as_deref().filter(|e| valid_etag(e)) {
        out.push(("If-None-Match", etag.to_owned()));
    }
    if let Some(date) = validators.if_modified_since() {
        out.push(("If-Modified-Since", date));
    }
    out
}

/// The request line and `Host` field of a request, then `fields`, then
/// `connection` if given, as HTTP/1.1 bytes.
fn serialise(
    method: Method,
    target: &Target,
    fields: &[(&'static str, String)],
    connection: Option<&str>,
) -> Bytes {
    let authority = target.authority();
    let size = fields
        .iter()
        .map(|(n, v)| n.len() + v.len() + 4)
        .sum::<usize>();
    let mut b =
        BytesMut::with_capacity(64 + target.path_and_query().len() + authority.len() + size);
    for part in [
        method.as_str(),
        " ",
        target.path_and_query(),
        " HTTP/1.1\r\nHost: ",
        &authority,
        "\r\n",
    ] {
        b.put_slice(part.as_bytes());
    }
    for (name, value) in fields {
        for part in [name, ": ", value.as_str(), "\r\n"] {
            b.put_slice(part.as_bytes());
        }
    }
    if let Some(c) = connection {
        for part in ["Connection: ", c, "\r\n"] {
            b.put_slice(part.as_bytes());
        }
    }
    b.put_slice(b"\r\n");
    b.freeze()
}

/// Builds the HTTP/1.1 request for `target` (written to the socket as is),
/// conditional on `validators` when any is set.
#[cfg(test)]
fn build(method: Method, target: &Target, user_agent: &str, validators: &Validators) -> Bytes {
    http1(method, target, &fields(user_agent, validators))
}

/// The HTTP/1.1 request for `target` with `fields` (see [`fields`]), written to
/// the socket as is.
pub(crate) fn http1(method: Method, target: &Target, fields: &[(&'static str, String)]) -> Bytes {
    serialise(method, target, fields, Some("keep-alive"))
}

/// The HTTP/1.1 form of a request sent over HTTP/2 with `fields`, for the WARC
/// request record: the request line, `Host` (the `:authority` sent), the fields
/// as sent; no `Connection` field, since none was sent.
pub(crate) fn normalised(
    method: Method,
    target: &Target,
    fields: &[(&'static str, String)],
) -> Bytes {
    serialise(method, target, fields, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_request() {
        let t = Target::parse("http://Example.org:8080/a?b=c#x").unwrap();
        let got = build(Method::Get, &t, "polycrawl/0.1", &Validators::default());
        let want = "GET /a?b=c HTTP/1.1\r\n\
            Host: example.org:8080\r\n\
            User-Agent: polycrawl/0.1\r\n\
            Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
            Accept-Encoding: gzip, deflate\r\n\
            Connection: keep-alive\r\n\r\n";
        assert_eq!(std::str::from_utf8(&got).unwrap(), want);
        let v = Validators {
            etag: Some("W/\"e1\"".into()),
            modified: Some(1_767_225_600),
        };
        let got = build(Method::Get, &t, "polycrawl/0.1", &v);
        let want = "GET /a?b=c HTTP/1.1\r\n\
            Host: example.org:8080\r\n\
            User-Agent: polycrawl/0.1\r\n\
            Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
            Accept-Encoding: gzip, deflate\r\n\
            If-None-Match: W/\"e1\"\r\n\
            If-Modified-Since: Thu, 01 Jan 2026 00:00:00 GMT\r\n\
            Connection: keep-alive\r\n\r\n";
        assert_eq!(std::str::from_utf8(&got).unwrap(), want);
        // An entity tag that could break the head is not sent.
        let bad = Validators {
            etag: Some("\"a\r\nX: y\"".into()),
            modified: None,
        };
        let got = build(Method::Get, &t, "polycrawl/0.1", &bad);
        assert!(!std::str::from_utf8(&got).unwrap().contains("If-None-Match"));
    }

    #[test]
    fn default_port_is_omitted() {
        let t = Target::parse("https://example.org/").unwrap();
        let got = build(Method::Head, &t, "polycrawl", &Validators::default());
        assert!(got.starts_with(b"HEAD / HTTP/1.1\r\nHost: example.org\r\n"));
    }

    #[test]
    fn normalised_is_the_http1_form_without_connection() {
        let t = Target::parse("https://example.org:8443/a?b").unwrap();
        let f = fields("polycrawl/0.1", &Validators::default());
        let got = normalised(Method::Get, &t, &f);
        let want = "GET /a?b HTTP/1.1\r\n\
            Host: example.org:8443\r\n\
            User-Agent: polycrawl/0.1\r\n\
            Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
            Accept-Encoding: gzip, deflate\r\n\r\n";
        assert_eq!(std::str::from_utf8(&got).unwrap(), want);
    }
}
