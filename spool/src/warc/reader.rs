//! [`WarcReader`]: reads records from a `.warc.gz` (one gzip member per record) or a
//! plain `.warc`, each with the byte range it occupies in the file.
//!
//! Strict by design: a page batch that does not parse is quarantined, so every
//! deviation is a typed [`WarcErrorKind`], never a guess. Memory is bounded: a header
//! may not exceed [`DEFAULT_MAX_HEADER`] (64 KiB) and a block is read only as far as
//! its data actually goes, up to [`DEFAULT_MAX_BLOCK`].

use std::io::{self, BufRead, Read};

use flate2::bufread::GzDecoder;

use super::date::WarcDate;
use super::headers::{WarcHeaders, WarcVersion, parse_length, split_field};
use super::writer::{GZIP_HEADER, MEMBER_HEADER, MEMBER_LENGTH_AT, MEMBER_TRAILER, RecordLocation};

/// Default bound on a record's header (version line through blank line), in bytes.
pub const DEFAULT_MAX_HEADER: usize = 64 * 1024;
/// Default bound on a record's block, in bytes.
pub const DEFAULT_MAX_BLOCK: u64 = 256 * 1024 * 1024;

/// A record that could not be read, and the file offset where it starts.
#[derive(Debug, thiserror::Error)]
#[error("WARC record at offset {offset}: {kind}")]
pub struct WarcError {
    /// File offset of the record (or gzip member) at fault.
    pub offset: u64,
    /// What is wrong with it.
    pub kind: WarcErrorKind,
}

/// What is wrong with a WARC record.
#[derive(Debug, thiserror::Error)]
pub enum WarcErrorKind {
    /// Reading the file failed.
    #[error("I/O error: {0}")]
    Io(io::Error),
    /// The gzip member is corrupt or truncated (bad header, bad deflate data, CRC or
    /// length mismatch, or the file ends inside it).
    #[error("bad gzip member: {0}")]
    Gzip(io::Error),
    /// The record does not start with `WARC/1.0` or `WARC/1.1` and CRLF.
    #[error("bad version line {found:?}: expected WARC/1.1 or WARC/1.0")]
    BadVersion {
        /// The start of what was found (at most 32 bytes, lossy UTF-8).
        found: String,
    },
    /// The header is longer than the reader's bound.
    #[error("header longer than {max} bytes")]
    HeaderTooLong {
        /// The bound, in bytes.
        max: usize,
    },
    /// The data ends before the header's blank line.
    #[error("truncated header")]
    TruncatedHeader,
    /// A header line ends in a bare LF instead of CRLF.
    #[error("header line {line} does not end in CRLF")]
    BadLineEnding {
        /// 1-based line within the header (1 is the version line).
        line: usize,
    },
    /// A header line is not valid UTF-8.
    #[error("header line {line} is not valid UTF-8")]
    HeaderNotUtf8 {
        /// 1-based line within the header.
        line: usize,
    },
    /// A header line is not `Name: value` with a token name and no control character.
    #[error("malformed header line {line}: {text:?}")]
    MalformedField {
        /// 1-based line within the header.
        line: usize,
        /// The line (at most 80 characters).
        text: String,
    },
    /// A mandatory field is missing.
    #[error("missing mandatory field {0}")]
    MissingField(&'static str),
    /// A field appears twice where it may appear once.
    #[error("field {0} appears more than once")]
    DuplicateField(&'static str),
    /// A field's value is malformed (`Content-Length`, `WARC-Date`, `WARC-Record-ID`).
    #[error("bad {name} value {value:?}")]
    BadFieldValue {
        /// The field.
        name: &'static str,
        /// Its value (at most 80 characters).
        value: String,
    },
    /// `Content-Length` exceeds the reader's bound.
    #[error("block of {length} bytes exceeds the limit of {max}")]
    BlockTooLong {
        /// The declared length.
        length: u64,
        /// The bound.
        max: u64,
    },
    /// The data ends before `Content-Length` bytes of block.
    #[error("truncated block: {found} of {expected} bytes")]
    TruncatedBlock {
        /// The declared length.
        expected: u64,
        /// The bytes present.
        found: u64,
    },
    /// The block is not followed by CRLF CRLF.
    #[error("block not followed by CRLF CRLF")]
    BadRecordEnd,
    /// The gzip member holds more than one record, or bytes after the record.
    #[error("data after the record inside its gzip member (one record per member)")]
    TrailingDataInMember,
}

impl WarcErrorKind {
    fn from_io(e: io::Error, gzip: bool) -> Self {
        use io::ErrorKind as E;
        match e.kind() {
            E::InvalidInput | E::InvalidData | E::UnexpectedEof if gzip => Self::Gzip(e),
            _ => Self::Io(e),
        }
    }
}

/// One record read from a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// The version line and header fields, `Content-Length` included.
    pub headers: WarcHeaders,
    /// The block, exactly `Content-Length` bytes.
    pub block: Vec<u8>,
    /// The byte range of the record (or its gzip member) in the file.
    pub location: RecordLocation,
    /// Whether the record was a gzip member.
    pub gzipped: bool,
}

/// Reads WARC records one at a time from `R`, gzip members and plain records alike.
///
/// After an error the reader stops (every later call returns no record): a corrupt
/// file is quarantined whole.
#[derive(Debug)]
pub struct WarcReader<R> {
    inner: Counting<R>,
    max_header: usize,
    max_block: u64,
    line: Vec<u8>,
    gz_buf: Vec<u8>,
    whole: WholeMember,
    failed: bool,
}

/// What reads a member whose header states its length ([`GZIP_HEADER`], as this
/// crate's writer makes them) in one piece: the member's bytes, then libdeflate's
/// whole-buffer inflate into a buffer of the trailer's size. On the peer
/// benchmark's pages that inflates 1.4 times as fast as zlib-rs's streaming
/// inflater (1,229 against 877 MB/s on one core), with no inflate state allocated
/// per member (BENCHMARKS.md, issue 9, session 10). Any other member is streamed.
///
/// Checked as strictly as the stream: the inflated bytes against the trailer's
/// CRC-32 and size, the record's framing, nothing after the record. One thing the
/// stream would notice and this does not: bytes between the end of the deflate data
/// and the trailer (libdeflate's safe interface does not say where the data ended);
/// they cannot change what is read, which the CRC-32 vouches for.
#[derive(Default)]
struct WholeMember {
    inflater: Option<libdeflater::Decompressor>,
    member: Vec<u8>,
    plain: Vec<u8>,
}

impl std::fmt::Debug for WholeMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WholeMember").finish_non_exhaustive()
    }
}

/// Largest buffer a [`WholeMember`] keeps from one member to the next.
const KEEP_BUFFER: usize = 1 << 20;

impl<R: BufRead> WarcReader<R> {
    /// A reader with the default bounds, counting offsets from 0.
    pub fn new(inner: R) -> Self {
        Self {
            inner: Counting { inner, pos: 0 },
            max_header: DEFAULT_MAX_HEADER,
            max_block: DEFAULT_MAX_BLOCK,
            line: Vec::with_capacity(256),
            gz_buf: Vec::new(),
            whole: WholeMember::default(),
            failed: false,
        }
    }

    /// Sets the header and block bounds.
    pub fn with_limits(mut self, max_header: usize, max_block: u64) -> Self {
        self.max_header = max_header;
        self.max_block = max_block;
        self
    }

    /// Counts offsets from `offset` (for a reader positioned inside a file).
    pub fn with_start_offset(mut self, offset: u64) -> Self {
        self.inner.pos = offset;
        self
    }

    /// Offset of the next record.
    pub fn position(&self) -> u64 {
        self.inner.pos
    }

    /// Reads the next record into `rec`, reusing its buffers; `Ok(false)` at the end
    /// of the file.
    pub fn read_into(&mut self, rec: &mut Record) -> Result<bool, WarcError> {
        if self.failed {
            return Ok(false);
        }
        let offset = self.inner.pos;
        let result = self.read_record(rec);
        if let Ok(true) = result {
            rec.location = RecordLocation {
                offset,
                length: self.inner.pos - offset,
            };
        }
        self.failed = result.is_err();
        result.map_err(|kind| WarcError { offset, kind })
    }

    fn read_record(&mut self, rec: &mut Record) -> Result<bool, WarcErrorKind> {
        let first = match self.inner.fill_buf() {
            Ok([]) => return Ok(false),
            Ok(buf) => buf[0],
            Err(e) => return Err(WarcErrorKind::Io(e)),
        };
        let limits = (self.max_header, self.max_block);
        rec.gzipped = first == 0x1f;
        if !rec.gzipped {
            parse_record(&mut self.inner, &mut self.line, rec, limits)
                .map_err(|e| e.into_kind(false))?;
            return Ok(true);
        }
        if let Some(length) = self.stated_length()? {
            return self.read_whole(length, rec).map(|()| true);
        }
        if self.gz_buf.is_empty() {
            self.gz_buf = vec![0; 64 * 1024];
        }
        let mut member = Buffered {
            inner: GzDecoder::new(&mut self.inner),
            buf: &mut self.gz_buf,
            pos: 0,
            end: 0,
        };
        parse_record(&mut member, &mut self.line, rec, limits).map_err(|e| e.into_kind(true))?;
        // Reading on to the member's end checks its CRC and length.
        match member.fill_buf() {
            Ok([]) => Ok(true),
            Ok(_) => Err(WarcErrorKind::TrailingDataInMember),
            Err(e) => Err(WarcErrorKind::from_io(e, true)),
        }
    }
}

impl<R: BufRead> WarcReader<R> {
    /// The length stated in the header of the member about to be read, if it has
    /// this crate's header with a length in it, and the length is within bounds
    /// (else the member is streamed, and the streaming inflater judges it).
    fn stated_length(&mut self) -> Result<Option<usize>, WarcErrorKind> {
        let head = self.inner.fill_buf().map_err(WarcErrorKind::Io)?;
        let Some(head) = head.get(..MEMBER_HEADER) else {
            return Ok(None);
        };
        if head[..4] != GZIP_HEADER[..4]
            || head[10..MEMBER_LENGTH_AT] != GZIP_HEADER[10..MEMBER_LENGTH_AT]
        {
            return Ok(None);
        }
        let mut length = [0; 4];
        length.copy_from_slice(&head[MEMBER_LENGTH_AT..MEMBER_HEADER]);
        let length = u32::from_le_bytes(length) as usize;
        // Stored blocks add 5 bytes per 65,535: a member is never much longer than
        // the record it holds.
        let largest = self.largest_record();
        let bound = largest + largest / 8192 + 64;
        let fits =
            (MEMBER_HEADER + MEMBER_TRAILER + 2) as u64 <= length as u64 && length as u64 <= bound;
        Ok(fits.then_some(length))
    }

    /// The most bytes a record within the reader's bounds can take: header, block
    /// and the closing CRLF CRLF.
    fn largest_record(&self) -> u64 {
        self.max_header as u64 + self.max_block + 4
    }

    /// Reads a member of `length` bytes whole, inflates and checks it (CRC-32 and
    /// size), then parses the record from it.
    fn read_whole(&mut self, length: usize, rec: &mut Record) -> Result<(), WarcErrorKind> {
        let gzip = |what: &str| {
            WarcErrorKind::Gzip(io::Error::new(io::ErrorKind::InvalidData, what.to_owned()))
        };
        let largest = self.largest_record();
        let WholeMember {
            inflater,
            member,
            plain,
        } = &mut self.whole;
        member.resize(length, 0);
        self.inner
            .read_exact(member)
            .map_err(|e| WarcErrorKind::from_io(e, true))?;
        let trailer = &member[length - MEMBER_TRAILER..];
        let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]) as usize;
        if size as u64 > largest {
            return Err(gzip(&format!(
                "the trailer's size {size} exceeds the reader's bound {largest} (a corrupt \
                 member, or a record over the limits)"
            )));
        }
        if plain.len() < size {
            plain.resize(size, 0);
        }
        let inflated = inflater
            .get_or_insert_with(libdeflater::Decompressor::new)
            .deflate_decompress(
                &member[MEMBER_HEADER..length - MEMBER_TRAILER],
                &mut plain[..size],
            );
        match inflated {
            Ok(n) if n == size => {}
            Ok(_) => return Err(gzip("the member inflates to less than its stated size")),
            Err(libdeflater::DecompressionError::InsufficientSpace) => {
                return Err(gzip("the member inflates to more than its stated size"));
            }
            Err(libdeflater::DecompressionError::BadData) => {
                return Err(gzip("corrupt deflate data"));
            }
        }
        // libdeflate's CRC-32: 0.33 against flate2's 0.84 us for a 12 KB page of
        // the benchmark web (carry-less multiply on wider vectors; issue 39).
        if libdeflater::crc32(&plain[..size]) != crc {
            return Err(gzip("CRC-32 mismatch"));
        }
        let mut text = &plain[..size];
        let limits = (self.max_header, self.max_block);
        parse_record(&mut text, &mut self.line, rec, limits).map_err(|e| e.into_kind(true))?;
        let rest = text.len();
        if plain.len() > KEEP_BUFFER {
            *plain = Vec::new();
        }
        if member.len() > KEEP_BUFFER {
            *member = Vec::new();
        }
        if rest > 0 {
            return Err(WarcErrorKind::TrailingDataInMember);
        }
        Ok(())
    }
}

impl<R: BufRead> Iterator for WarcReader<R> {
    type Item = Result<Record, WarcError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut rec = Record::default();
        match self.read_into(&mut rec) {
            Ok(true) => Some(Ok(rec)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// A parse failure: either a format problem or an I/O error to classify.
enum Fail {
    Kind(WarcErrorKind),
    Io(io::Error),
}

impl Fail {
    fn into_kind(self, gzip: bool) -> WarcErrorKind {
        match self {
            Self::Kind(k) => k,
            Self::Io(e) => WarcErrorKind::from_io(e, gzip),
        }
    }
}

impl From<WarcErrorKind> for Fail {
    fn from(k: WarcErrorKind) -> Self {
        Self::Kind(k)
    }
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Parses one record (header, block, CRLF CRLF) from `src`, consuming exactly it.
fn parse_record<B: BufRead>(
    src: &mut B,
    line: &mut Vec<u8>,
    rec: &mut Record,
    (max_header, max_block): (usize, u64),
) -> Result<(), Fail> {
    use WarcErrorKind as K;
    rec.headers.clear();
    let mut budget = max_header;
    let mut n = 0;
    loop {
        n += 1;
        line.clear();
        let got = src.by_ref().take(budget as u64).read_until(b'\n', line)?;
        budget -= got;
        if !line.ends_with(b"\n") {
            if n == 1 && line.len() >= 8 && !line.starts_with(b"WARC/1.") {
                return Err(bad_version(line).into());
            }
            return Err(if budget == 0 {
                K::HeaderTooLong { max: max_header }
            } else {
                K::TruncatedHeader
            }
            .into());
        }
        if !line.ends_with(b"\r\n") {
            return Err(if n == 1 {
                bad_version(line)
            } else {
                K::BadLineEnding { line: n }
            }
            .into());
        }
        let text = &line[..line.len() - 2];
        if n == 1 {
            let version = match text {
                b"WARC/1.1" => WarcVersion::V1_1,
                b"WARC/1.0" => WarcVersion::V1_0,
                _ => return Err(bad_version(line).into()),
            };
            rec.headers.set_version(version);
            continue;
        }
        if text.is_empty() {
            break;
        }
        let text = std::str::from_utf8(text).map_err(|_| K::HeaderNotUtf8 { line: n })?;
        let malformed = || K::MalformedField {
            line: n,
            text: text.chars().take(80).collect(),
        };
        if text.starts_with([' ', '\t']) {
            let more = text.trim_matches([' ', '\t']);
            if more.chars().any(|c| c.is_control() && c != '\t') || !rec.headers.continue_last(more)
            {
                return Err(malformed().into());
            }
            continue;
        }
        let (name, value) = split_field(text).ok_or_else(malformed)?;
        rec.headers.push_unchecked(name, format_args!("{value}"));
    }
    let length = check_headers(&rec.headers, max_block)?;

    rec.block.clear();
    rec.block.reserve(length.min(1 << 20) as usize);
    let found = src.by_ref().take(length).read_to_end(&mut rec.block)? as u64;
    if found < length {
        return Err(K::TruncatedBlock {
            expected: length,
            found,
        }
        .into());
    }
    let mut end = [0u8; 4];
    let mut filled = 0;
    while filled < 4 {
        match src.read(&mut end[filled..])? {
            0 => break,
            k => filled += k,
        }
    }
    if end != *b"\r\n\r\n" {
        return Err(K::BadRecordEnd.into());
    }
    Ok(())
}

/// Checks the mandatory fields and returns the block length.
fn check_headers(h: &WarcHeaders, max_block: u64) -> Result<u64, WarcErrorKind> {
    use WarcErrorKind as K;
    let one = |name: &'static str| -> Result<&str, K> {
        let mut values = h.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let value = values.next().ok_or(K::MissingField(name))?.1;
        match values.next() {
            Some(_) => Err(K::DuplicateField(name)),
            None => Ok(value),
        }
    };
    let bad = |name: &'static str, value: &str| K::BadFieldValue {
        name,
        value: value.chars().take(80).collect(),
    };
    let len_text = one("Content-Length")?;
    let length = parse_length(len_text).ok_or_else(|| bad("Content-Length", len_text))?;
    if length > max_block {
        return Err(K::BlockTooLong {
            length,
            max: max_block,
        });
    }
    one("WARC-Type")?;
    let id = one("WARC-Record-ID")?;
    if !(id.len() > 2 && id.starts_with('<') && id.ends_with('>') && id.contains(':')) {
        return Err(bad("WARC-Record-ID", id));
    }
    let date = one("WARC-Date")?;
    date.parse::<WarcDate>()
        .map_err(|_| bad("WARC-Date", date))?;
    Ok(length)
}

fn bad_version(line: &[u8]) -> WarcErrorKind {
    let shown = &line[..line.len().min(32)];
    WarcErrorKind::BadVersion {
        found: String::from_utf8_lossy(shown).trim_end().to_owned(),
    }
}

/// Counts the bytes consumed from the underlying file.
#[derive(Debug)]
struct Counting<R> {
    inner: R,
    pos: u64,
}

impl<R: BufRead> Read for Counting<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.pos += n as u64;
    }
}

/// A `BufRead` over a gzip member's decompressed bytes, with a buffer owned by the
/// reader and reused from member to member.
struct Buffered<'b, R> {
    inner: R,
    buf: &'b mut [u8],
    pos: usize,
    end: usize,
}

impl<R: Read> Read for Buffered<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.end && out.len() >= self.buf.len() {
            return self.inner.read(out);
        }
        let n = {
            let avail = self.fill_buf()?;
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Buffered<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.end {
            self.end = self.inner.read(self.buf)?;
            self.pos = 0;
        }
        Ok(&self.buf[self.pos..self.end])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }
}
