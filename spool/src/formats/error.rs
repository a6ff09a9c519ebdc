//! The one error type of the text formats: what went wrong, and on which line.

use std::io;

/// A request, outcome or exchange file could not be read or written.
///
/// `line` is the 1-based line of the file being read (or of the line being written)
/// where the problem was found; line 1 is the header.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct FormatError {
    /// 1-based line number of the offending line.
    pub line: u64,
    /// What is wrong with it.
    pub kind: FormatErrorKind,
}

impl FormatError {
    pub(crate) fn new(line: u64, kind: FormatErrorKind) -> Self {
        Self { line, kind }
    }
}

/// What is wrong with a line of a text spool file.
#[derive(Debug, thiserror::Error)]
pub enum FormatErrorKind {
    /// Reading or writing the underlying file failed.
    #[error("I/O error: {0}")]
    Io(io::Error),
    /// The file is empty or its first line is not a `#polycrawl-<kind> v<N>` header.
    #[error("missing header: the first line must start with {expected:?}")]
    MissingHeader {
        /// The header tag this kind of file must start with.
        expected: &'static str,
    },
    /// The header names another kind of file (an outcome file in a request folder, say).
    #[error("wrong kind of file: expected a {expected:?} header, found {found:?}")]
    WrongKind {
        /// The header tag this kind of file must start with.
        expected: &'static str,
        /// The tag found instead.
        found: String,
    },
    /// The header's version is not one this build can read.
    #[error("unsupported format version {found:?} (this build reads v1)")]
    UnsupportedVersion {
        /// The version word found in the header.
        found: String,
    },
    /// A header field is not of the form `key=value`.
    #[error("malformed header field {field:?}: expected key=value")]
    MalformedHeaderField {
        /// The offending field.
        field: String,
    },
    /// The header holds a key this format does not define.
    #[error("unknown header field {key:?}")]
    UnknownHeaderField {
        /// The unknown key.
        key: String,
    },
    /// The header holds a key twice.
    #[error("header field {key:?} given twice")]
    DuplicateHeaderField {
        /// The repeated key.
        key: String,
    },
    /// The header lacks a required key.
    #[error("header field {key:?} is required")]
    MissingHeaderField {
        /// The missing key.
        key: &'static str,
    },
    /// A header value does not parse.
    #[error("header field {key}={value:?}: expected {expected}")]
    BadHeaderValue {
        /// The key whose value is wrong.
        key: &'static str,
        /// The value found.
        value: String,
        /// What the value must be.
        expected: &'static str,
    },
    /// A line is longer than [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES).
    #[error("line longer than {max} bytes")]
    LineTooLong {
        /// The limit, in bytes, including the line ending.
        max: usize,
    },
    /// A line is not valid UTF-8.
    #[error("line is not valid UTF-8")]
    NotUtf8,
    /// The URL field is empty.
    #[error("empty URL")]
    EmptyUrl,
    /// The URL holds whitespace or a control character.
    #[error("URL holds {ch:?} at byte {byte}: URLs may hold no whitespace or control characters")]
    UrlChar {
        /// The offending character.
        ch: char,
        /// Its byte offset within the URL.
        byte: usize,
    },
    /// Two tabs in a row, or a tab at the end of the line.
    #[error("empty tab-separated field")]
    EmptyField,
    /// A hint is not of the form `key=value`.
    #[error("malformed hint {field:?}: expected key=value")]
    MalformedHint {
        /// The offending field.
        field: String,
    },
    /// A hint key this format version does not define.
    #[error("unknown hint {key:?} (known: interval_ms, depth, via)")]
    UnknownHint {
        /// The unknown key.
        key: String,
    },
    /// The same hint given twice on one line.
    #[error("hint {key:?} given twice")]
    DuplicateHint {
        /// The repeated key.
        key: &'static str,
    },
    /// A hint value does not parse.
    #[error("hint {key}={value:?}: expected {expected}")]
    BadHintValue {
        /// The hint whose value is wrong.
        key: &'static str,
        /// The value found.
        value: String,
        /// What the value must be.
        expected: &'static str,
    },
    /// An outcome line has a URL but no reason field.
    #[error("missing outcome reason after the URL")]
    MissingReason,
    /// The outcome reason is not one of the names of [`OutcomeReason`](crate::OutcomeReason).
    #[error("unknown outcome reason {0:?}")]
    UnknownReason(String),
    /// A line has more tab-separated fields than the format allows.
    #[error("too many tab-separated fields (at most {max})")]
    TooManyFields {
        /// The most fields a line may have.
        max: usize,
    },
    /// An outcome detail holds a backslash escape other than `\\ \t \n \r \xNN`.
    #[error("bad escape in detail at byte {byte}")]
    BadEscape {
        /// Byte offset of the backslash within the detail field.
        byte: usize,
    },
    /// An outcome detail holds a raw control character (it must be escaped).
    #[error("raw control character {ch:?} in detail (write it escaped)")]
    ControlInDetail {
        /// The offending character.
        ch: char,
    },
    /// Exchange header part numbers are inconsistent.
    #[error("bad part numbers from={from} to={to} parts={parts}: need from != to, both < parts")]
    BadParts {
        /// The sending part.
        from: u32,
        /// The receiving part.
        to: u32,
        /// The number of parts.
        parts: u32,
    },
    /// An assignment line is not `host<TAB>part`, or its part is not below `parts`.
    #[error("bad assignment line: expected host<TAB>part with part < {parts}")]
    BadAssignment {
        /// The number of parts in the file's header.
        parts: u32,
    },
    /// An assignment file names one host twice.
    #[error("host {host:?} assigned twice")]
    DuplicateHost {
        /// The repeated host.
        host: String,
    },
    /// A replicated-URL line is not `URL<TAB>back-links`.
    #[error("bad replicated-URL line: expected URL<TAB>back-link count")]
    BadReplicated,
    /// A replicated-URL file names one URL twice.
    #[error("URL {url:?} listed twice")]
    DuplicateUrl {
        /// The repeated URL.
        url: String,
    },
}
