//! The request bytes: one `GET` (or `HEAD`) in HTTP/1.1 with a fixed, polite header
//! set, plus `If-None-Match` and `If-Modified-Since` when the job carries an
//! earlier response's validators (a recrawl's conditional request; an entity tag
//! that [`spool::validators::valid_etag`] rejects is not sent).
//!
//! The exact bytes built here are the bytes written to the socket and returned in
//! [`Fetched::request`](crate::Fetched::request) for the WARC request record. The
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

/// Builds the request for `target`, conditional on `validators` when any is set.
pub(crate) fn build(
    method: Method,
    target: &Target,
    user_agent: &str,
    validators: &Validators,
) -> Bytes {
    let authority = target.authority();
    let mut b = BytesMut::with_capacity(
        160 + target.path_and_query().len() + authority.len() + user_agent.len(),
    );
    for part in [
        method.as_str(),
        " ",
        target.path_and_query(),
        " HTTP/1.1\r\nHost: ",
        &authority,
        "\r\nUser-Agent: ",
        user_agent,
        "\r\nAccept: ",
        ACCEPT,
        "\r\nAccept-Encoding: ",
        ACCEPT_ENCODING,
        "\r\n",
    ] {
        b.put_slice(part.as_bytes());
    }
    if let Some(etag) = validators.etag.as_deref().filter(|e| valid_etag(e)) {
        for part in ["If-None-Match: ", etag, "\r\n"] {
            b.put_slice(part.as_bytes());
        }
    }
    if let Some(date) = validators.if_modified_since() {
        for part in ["If-Modified-Since: ", &date, "\r\n"] {
            b.put_slice(part.as_bytes());
        }
    }
    b.put_slice(b"Connection: keep-alive\r\n\r\n");
    b.freeze()
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
}
