//! The named fields of a WARC record header, and the typed values that go in them.
//!
//! [`WarcHeaders`] keeps the fields in order in one string plus a span list, so a
//! reader reuses it from record to record without allocating, and lookups are
//! case-insensitive as the standard requires.

use std::fmt::{self, Write as _};
use std::ops::Range;
use std::str::FromStr;

use uuid::Uuid;

use super::date::WarcDate;
use super::digest::Sha1Digest;

/// The version line of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WarcVersion {
    /// `WARC/1.0` (read only; many older archives use it).
    V1_0,
    /// `WARC/1.1`, which polycrawl writes.
    #[default]
    V1_1,
}

impl WarcVersion {
    /// The version line without its CRLF.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1_0 => "WARC/1.0",
            Self::V1_1 => "WARC/1.1",
        }
    }
}

/// The `WARC-Type` of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordType {
    /// Describes the records that follow it in the file.
    Warcinfo,
    /// A complete response, e.g. an HTTP response head and body.
    Response,
    /// A resource without its protocol envelope.
    Resource,
    /// The request that was sent, e.g. HTTP request bytes.
    Request,
    /// Metadata about another record.
    Metadata,
    /// A revisit of content seen before, stored by reference.
    Revisit,
    /// A transformed version of another record's content.
    Conversion,
    /// A continuation of a segmented record.
    Continuation,
}

impl RecordType {
    /// Every type, in the order of the WARC standard.
    pub const ALL: [RecordType; 8] = [
        Self::Warcinfo,
        Self::Response,
        Self::Resource,
        Self::Request,
        Self::Metadata,
        Self::Revisit,
        Self::Conversion,
        Self::Continuation,
    ];

    /// The field value, as the standard spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warcinfo => "warcinfo",
            Self::Response => "response",
            Self::Resource => "resource",
            Self::Request => "request",
            Self::Metadata => "metadata",
            Self::Revisit => "revisit",
            Self::Conversion => "conversion",
            Self::Continuation => "continuation",
        }
    }

    /// The type named by `s` (case-insensitive), or `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }
}

/// A `WARC-Record-ID` of the form polycrawl writes: `<urn:uuid:…>` with a random
/// (version 4) UUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId(pub Uuid);

impl RecordId {
    /// A fresh random id.
    pub fn random() -> Self {
        Self(Uuid::new_v4())
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<urn:uuid:{}>", self.0.hyphenated())
    }
}

/// Text that is not `<urn:uuid:…>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a <urn:uuid:...> record id: {0:?}")]
pub struct InvalidRecordId(pub String);

impl FromStr for RecordId {
    type Err = InvalidRecordId;

    fn from_str(s: &str) -> Result<Self, InvalidRecordId> {
        s.strip_prefix("<urn:uuid:")
            .and_then(|r| r.strip_suffix('>'))
            .and_then(|u| Uuid::try_parse(u).ok())
            .map(Self)
            .ok_or_else(|| InvalidRecordId(s.chars().take(80).collect()))
    }
}

/// Why a record's block was cut short (`WARC-Truncated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Truncated {
    /// The body exceeded the configured size cap.
    Length,
    /// The fetch exceeded its time limit.
    Time,
    /// The connection dropped mid-transfer.
    Disconnect,
    /// Any other reason.
    Unspecified,
}

impl Truncated {
    /// The field value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Length => "length",
            Self::Time => "time",
            Self::Disconnect => "disconnect",
            Self::Unspecified => "unspecified",
        }
    }
}

/// A field name or value that cannot be written into a WARC header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidField {
    /// The name is empty or holds a character that is not an HTTP token character.
    #[error("invalid WARC field name {0:?}")]
    Name(String),
    /// The value holds a control character (CR and LF would break the record).
    #[error("value of WARC field {name} holds a control character")]
    Value {
        /// The field whose value was rejected.
        name: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Span {
    name: Range<usize>,
    value: Range<usize>,
}

/// The header fields of one record, in order, plus its version line.
///
/// Build one with a typed constructor ([`warcinfo`](Self::warcinfo),
/// [`request`](Self::request), [`response`](Self::response),
/// [`revisit`](Self::revisit)) or [`push`](Self::push); a
/// [`WarcReader`](super::WarcReader) fills one per record, `Content-Length` included.
/// Lookups ignore case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WarcHeaders {
    version: WarcVersion,
    text: String,
    spans: Vec<Span>,
}

impl WarcHeaders {
    /// Empty `WARC/1.1` headers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Removes every field and resets the version to 1.1, keeping the allocations.
    pub fn clear(&mut self) {
        self.version = WarcVersion::V1_1;
        self.text.clear();
        self.spans.clear();
    }

    /// The record's version line.
    pub fn version(&self) -> WarcVersion {
        self.version
    }

    /// Sets the version line.
    pub fn set_version(&mut self, version: WarcVersion) {
        self.version = version;
    }

    /// Appends a field. Surrounding spaces and tabs of `value` are dropped (a reader
    /// would drop them too); a name that is not a token or a value with a control
    /// character is refused.
    pub fn push(&mut self, name: &str, value: &str) -> Result<&mut Self, InvalidField> {
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(InvalidField::Name(name.chars().take(80).collect()));
        }
        let value = value.trim_matches([' ', '\t']);
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(InvalidField::Value {
                name: name.to_owned(),
            });
        }
        self.push_unchecked(name, format_args!("{value}"));
        Ok(self)
    }

    /// Appends a field whose name is a known token and whose value cannot hold a
    /// control character (numbers, dates, ids, digests).
    pub(crate) fn push_unchecked(&mut self, name: &str, value: fmt::Arguments<'_>) -> &mut Self {
        let n = self.text.len();
        self.text.push_str(name);
        let v = self.text.len();
        let _ = self.text.write_fmt(value);
        self.spans.push(Span {
            name: n..v,
            value: v..self.text.len(),
        });
        self
    }

    /// Appends text to the value of the last field (a folded continuation line).
    pub(crate) fn continue_last(&mut self, more: &str) -> bool {
        let Some(last) = self.spans.last_mut() else {
            return false;
        };
        if !self.text[last.value.clone()].is_empty() {
            self.text.push(' ');
        }
        self.text.push_str(more);
        last.value.end = self.text.len();
        true
    }

    /// The value of the first field named `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Every field, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.spans
            .iter()
            .map(|s| (&self.text[s.name.clone()], &self.text[s.value.clone()]))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there is no field.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// `WARC-Type`, if present and one of the standard types.
    pub fn record_type(&self) -> Option<RecordType> {
        self.get("WARC-Type").and_then(RecordType::parse)
    }

    /// `WARC-Record-ID`, as written (angle brackets included).
    pub fn record_id(&self) -> Option<&str> {
        self.get("WARC-Record-ID")
    }

    /// `WARC-Date`, if present and well-formed.
    pub fn date(&self) -> Option<WarcDate> {
        self.get("WARC-Date").and_then(|d| d.parse().ok())
    }

    /// `Content-Length`, if present and a decimal number.
    pub fn content_length(&self) -> Option<u64> {
        self.get("Content-Length").and_then(parse_length)
    }

    /// `Content-Type`.
    pub fn content_type(&self) -> Option<&str> {
        self.get("Content-Type")
    }

    /// `WARC-Target-URI`.
    pub fn target_uri(&self) -> Option<&str> {
        self.get("WARC-Target-URI")
    }

    /// `WARC-Payload-Digest`, if present and a SHA-1 in base32.
    pub fn payload_digest(&self) -> Option<Sha1Digest> {
        self.get("WARC-Payload-Digest").and_then(|d| d.parse().ok())
    }

    /// `WARC-Block-Digest`, if present and a SHA-1 in base32.
    pub fn block_digest(&self) -> Option<Sha1Digest> {
        self.get("WARC-Block-Digest").and_then(|d| d.parse().ok())
    }

    /// `WARC-Truncated`, as written.
    pub fn truncated(&self) -> Option<&str> {
        self.get("WARC-Truncated")
    }

    /// Adds `WARC-Concurrent-To` (a request record points at its response).
    pub fn set_concurrent_to(&mut self, id: RecordId) -> &mut Self {
        self.push_unchecked("WARC-Concurrent-To", format_args!("{id}"))
    }

    /// Adds `WARC-Truncated`.
    pub fn set_truncated(&mut self, why: Truncated) -> &mut Self {
        self.push_unchecked("WARC-Truncated", format_args!("{}", why.as_str()))
    }

    /// Adds `WARC-Payload-Digest`.
    pub fn set_payload_digest(&mut self, digest: Sha1Digest) -> &mut Self {
        self.push_unchecked("WARC-Payload-Digest", format_args!("{digest}"))
    }

    /// Appends the version line, the fields and nothing else (no blank line), each
    /// line ending in CRLF.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.version.as_str().as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in self.iter() {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// An HTTP token character (RFC 9110): visible ASCII except separators.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Parses a decimal length: 1 to 19 ASCII digits.
pub(crate) fn parse_length(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Checks and splits one raw header line (without CRLF) into name and value.
pub(crate) fn split_field(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.split_once(':')?;
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return None;
    }
    let value = value.trim_matches([' ', '\t']);
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return None;
    }
    Some((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_order_and_ignore_case() {
        let mut h = WarcHeaders::new();
        h.push("WARC-Type", "response").unwrap();
        h.push("X-Note", "  padded\t").unwrap();
        h.push("x-note", "second").unwrap();
        assert_eq!(h.get("warc-type"), Some("response"));
        assert_eq!(h.get("X-NOTE"), Some("padded"));
        assert_eq!(h.len(), 3);
        assert_eq!(h.record_type(), Some(RecordType::Response));
        let mut out = Vec::new();
        h.encode(&mut out);
        assert_eq!(
            out,
            b"WARC/1.1\r\nWARC-Type: response\r\nX-Note: padded\r\nx-note: second\r\n"
        );
        h.clear();
        assert!(h.is_empty());
    }

    #[test]
    fn refuses_what_would_break_a_record() {
        let mut h = WarcHeaders::new();
        assert!(matches!(h.push("", "x"), Err(InvalidField::Name(_))));
        assert!(matches!(h.push("A B", "x"), Err(InvalidField::Name(_))));
        assert!(matches!(h.push("A:B", "x"), Err(InvalidField::Name(_))));
        assert!(matches!(
            h.push("A", "x\r\nWARC-Type: evil"),
            Err(InvalidField::Value { .. })
        ));
        assert!(h.is_empty());
    }

    #[test]
    fn record_ids_and_types() {
        let id = RecordId::random();
        let text = id.to_string();
        assert!(text.starts_with("<urn:uuid:") && text.ends_with('>') && text.len() == 47);
        assert_eq!(text.parse::<RecordId>().unwrap(), id);
        assert!("urn:uuid:x".parse::<RecordId>().is_err());
        for t in RecordType::ALL {
            assert_eq!(RecordType::parse(&t.as_str().to_uppercase()), Some(t));
        }
        assert_eq!(RecordType::parse("nope"), None);
    }

    #[test]
    fn split_field_is_strict() {
        assert_eq!(
            split_field("Content-Length: 12"),
            Some(("Content-Length", "12"))
        );
        assert_eq!(split_field("A:"), Some(("A", "")));
        assert_eq!(split_field("no colon"), None);
        assert_eq!(split_field(" A: 1"), None);
        assert_eq!(split_field("A: \u{1}"), None);
        assert_eq!(parse_length("0012"), Some(12));
        assert_eq!(parse_length("-1"), None);
        assert_eq!(parse_length("99999999999999999999"), None);
    }
}
