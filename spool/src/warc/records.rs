//! Typed constructors for the records the crawler writes: `warcinfo`, `request`,
//! `response` and `revisit` (identical-payload-digest and server-not-modified
//! profiles).
//!
//! Each returns the header fields in a fixed order (type, id, date, target, IP,
//! warcinfo id, then type-specific fields and `Content-Type`). The writer appends
//! `Content-Length` and (unless told not to) `WARC-Block-Digest` from the block it
//! is given.

use std::net::IpAddr;

use super::date::WarcDate;
use super::digest::Sha1Digest;
use super::headers::{InvalidField, RecordId, RecordType, WarcHeaders};

/// `Content-Type` of a request record holding HTTP request bytes.
pub const HTTP_REQUEST_TYPE: &str = "application/http;msgtype=request";
/// `Content-Type` of a response or revisit record holding HTTP response bytes.
pub const HTTP_RESPONSE_TYPE: &str = "application/http;msgtype=response";
/// `Content-Type` of a warcinfo record.
pub const WARC_FIELDS_TYPE: &str = "application/warc-fields";
/// `WARC-Profile` of a revisit whose payload is identical to an earlier capture's.
pub const IDENTICAL_PAYLOAD_PROFILE: &str =
    "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";

/// `WARC-Profile` of a revisit for a `304 Not Modified` answer to a conditional
/// request: the content is the earlier capture's.
pub const SERVER_NOT_MODIFIED_PROFILE: &str =
    "http://netpreserve.org/warc/1.1/revisit/server-not-modified";

/// Extension field of a page's `response` record: the request's link depth from
/// the seeds (the `depth` hint of its request line), decimal.
pub const DEPTH_FIELD: &str = "Polycrawl-Depth";
/// Extension field of a page's `response` record: redirects followed to reach the
/// URL (the `hops` hint of its request line), decimal; absent means 0.
pub const HOPS_FIELD: &str = "Polycrawl-Hops";
/// Extension field of a page's `response` record: when the downloader started the
/// fetch, in milliseconds since the Unix epoch (`WARC-Date` holds whole seconds).
pub const FETCH_START_FIELD: &str = "Polycrawl-Fetch-Start";
/// Extension field of a page's `response` record: how long the fetch took, from
/// its start to the response's end, in milliseconds.
pub const FETCH_MS_FIELD: &str = "Polycrawl-Fetch-Ms";

/// What every record of one fetch shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capture<'a> {
    /// The URL fetched (`WARC-Target-URI`).
    pub target_uri: &'a str,
    /// When the fetch started (`WARC-Date`).
    pub date: WarcDate,
    /// The address connected to (`WARC-IP-Address`), if known.
    pub ip: Option<IpAddr>,
    /// The warcinfo record of the file (`WARC-Warcinfo-ID`), if any.
    pub warcinfo_id: Option<RecordId>,
}

/// The earlier capture a revisit record points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Original<'a> {
    /// The original record's `WARC-Record-ID` (`WARC-Refers-To`), if known.
    pub record_id: Option<&'a str>,
    /// The original's target URI (`WARC-Refers-To-Target-URI`).
    pub target_uri: &'a str,
    /// The original's date (`WARC-Refers-To-Date`).
    pub date: WarcDate,
}

impl WarcHeaders {
    /// A `warcinfo` record's fields; its block is [`warc_fields_block`] output.
    /// `filename` is the batch's published name (`WARC-Filename`), if known.
    pub fn warcinfo(
        id: RecordId,
        date: WarcDate,
        filename: Option<&str>,
    ) -> Result<Self, InvalidField> {
        let mut h = Self::start(RecordType::Warcinfo, id, date);
        if let Some(name) = filename {
            h.push("WARC-Filename", name)?;
        }
        h.push_unchecked("Content-Type", format_args!("{WARC_FIELDS_TYPE}"));
        Ok(h)
    }

    /// A `request` record's fields; its block is the HTTP request as sent. Link it to
    /// its response with [`set_concurrent_to`](Self::set_concurrent_to).
    pub fn request(id: RecordId, capture: &Capture<'_>) -> Result<Self, InvalidField> {
        let mut h = Self::capture(RecordType::Request, id, capture)?;
        h.push_unchecked("Content-Type", format_args!("{HTTP_REQUEST_TYPE}"));
        Ok(h)
    }

    /// A `response` record's fields; its block is the raw HTTP response head and body,
    /// and `payload_digest` the [`payload_digest`](super::payload_digest) of the body.
    pub fn response(
        id: RecordId,
        capture: &Capture<'_>,
        payload_digest: Sha1Digest,
    ) -> Result<Self, InvalidField> {
        let mut h = Self::capture(RecordType::Response, id, capture)?;
        h.set_payload_digest(payload_digest);
        h.push_unchecked("Content-Type", format_args!("{HTTP_RESPONSE_TYPE}"));
        Ok(h)
    }

    /// A `revisit` record's fields (profile identical-payload-digest): the payload
    /// equals `original`'s, so the block is only the new HTTP response head.
    pub fn revisit(
        id: RecordId,
        capture: &Capture<'_>,
        original: &Original<'_>,
        payload_digest: Sha1Digest,
    ) -> Result<Self, InvalidField> {
        let mut h = Self::capture(RecordType::Revisit, id, capture)?;
        h.push_unchecked("WARC-Profile", format_args!("{IDENTICAL_PAYLOAD_PROFILE}"));
        if let Some(refers_to) = original.record_id {
            h.push("WARC-Refers-To", refers_to)?;
        }
        h.push("WARC-Refers-To-Target-URI", original.target_uri)?;
        h.push_unchecked("WARC-Refers-To-Date", format_args!("{}", original.date));
        h.set_payload_digest(payload_digest);
        h.push_unchecked("Content-Type", format_args!("{HTTP_RESPONSE_TYPE}"));
        Ok(h)
    }

    /// A `revisit` record's fields (profile server-not-modified) for a 304 answer to
    /// a conditional request: the content is `original`'s, whose payload digest is
    /// `payload_digest` (so replay tools find it by URI, date and digest). The
    /// block is empty, without a `Content-Type`: the 304's own head stays in the
    /// response record the revisit is concurrent to, and a replay tool given a
    /// revisit without a head serves the original's (pywb does), not a bodiless 304.
    pub fn revisit_not_modified(
        id: RecordId,
        capture: &Capture<'_>,
        original: &Original<'_>,
        payload_digest: Sha1Digest,
    ) -> Result<Self, InvalidField> {
        let mut h = Self::capture(RecordType::Revisit, id, capture)?;
        h.push_unchecked(
            "WARC-Profile",
            format_args!("{SERVER_NOT_MODIFIED_PROFILE}"),
        );
        if let Some(refers_to) = original.record_id {
            h.push("WARC-Refers-To", refers_to)?;
        }
        h.push("WARC-Refers-To-Target-URI", original.target_uri)?;
        h.push_unchecked("WARC-Refers-To-Date", format_args!("{}", original.date));
        h.set_payload_digest(payload_digest);
        Ok(h)
    }

    fn start(kind: RecordType, id: RecordId, date: WarcDate) -> Self {
        let mut h = Self::new();
        h.push_unchecked("WARC-Type", format_args!("{}", kind.as_str()))
            .push_unchecked("WARC-Record-ID", format_args!("{id}"))
            .push_unchecked("WARC-Date", format_args!("{date}"));
        h
    }

    fn capture(kind: RecordType, id: RecordId, c: &Capture<'_>) -> Result<Self, InvalidField> {
        let mut h = Self::start(kind, id, c.date);
        if c.target_uri.is_empty() || c.target_uri.contains(char::is_whitespace) {
            return Err(InvalidField::Value {
                name: "WARC-Target-URI".to_owned(),
            });
        }
        h.push("WARC-Target-URI", c.target_uri)?;
        if let Some(ip) = c.ip {
            h.push_unchecked("WARC-IP-Address", format_args!("{ip}"));
        }
        if let Some(info) = c.warcinfo_id {
            h.push_unchecked("WARC-Warcinfo-ID", format_args!("{info}"));
        }
        Ok(h)
    }
}

/// An `application/warc-fields` block (`name: value` lines in CRLF), the body of a
/// warcinfo record. Conventional names: `software`, `hostname`, `operator`,
/// `isPartOf`, `description`, `robots`, `http-header-user-agent`, `format`,
/// `conformsTo`.
pub fn warc_fields_block(fields: &[(&str, &str)]) -> Result<Vec<u8>, InvalidField> {
    let mut h = WarcHeaders::new();
    for (name, value) in fields {
        h.push(name, value)?;
    }
    let mut out = Vec::new();
    for (name, value) in h.iter() {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture() -> Capture<'static> {
        Capture {
            target_uri: "http://a.example/",
            date: "2026-11-22T10:00:00Z".parse().unwrap(),
            ip: Some("127.0.0.2".parse().unwrap()),
            warcinfo_id: None,
        }
    }

    #[test]
    fn constructors_fill_the_expected_fields() {
        let id = RecordId::random();
        let h = WarcHeaders::response(id, &capture(), Sha1Digest::of(b"")).unwrap();
        let names: Vec<&str> = h.iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "WARC-Type",
                "WARC-Record-ID",
                "WARC-Date",
                "WARC-Target-URI",
                "WARC-IP-Address",
                "WARC-Payload-Digest",
                "Content-Type"
            ]
        );
        assert_eq!(h.record_id(), Some(id.to_string().as_str()));
        assert_eq!(h.get("WARC-IP-Address"), Some("127.0.0.2"));

        let orig = Original {
            record_id: Some("<urn:uuid:00000000-0000-4000-8000-000000000000>"),
            target_uri: "http://b.example/",
            date: "2026-01-01T00:00:00Z".parse().unwrap(),
        };
        let h = WarcHeaders::revisit(id, &capture(), &orig, Sha1Digest::of(b"")).unwrap();
        assert_eq!(h.record_type(), Some(RecordType::Revisit));
        assert_eq!(h.get("WARC-Profile"), Some(IDENTICAL_PAYLOAD_PROFILE));
        assert_eq!(h.get("WARC-Refers-To-Date"), Some("2026-01-01T00:00:00Z"));
    }

    #[test]
    fn bad_target_uri_is_refused() {
        let mut c = capture();
        c.target_uri = "http://a/ b";
        assert!(WarcHeaders::request(RecordId::random(), &c).is_err());
        c.target_uri = "";
        assert!(WarcHeaders::request(RecordId::random(), &c).is_err());
        assert!(warc_fields_block(&[("bad name", "x")]).is_err());
        assert_eq!(
            warc_fields_block(&[("software", "p")]).unwrap(),
            b"software: p\r\n"
        );
    }
}
