//! [`WarcWriter`]: appends records to a `.warc.gz` (one gzip member per record) or a
//! plain `.warc`, returning where each record landed.
//!
//! The gzip framing (RFC 1952: a fixed 20-byte header that carries the member's
//! length in an extra field, [`GZIP_HEADER`]; raw deflate; CRC-32 and size) is
//! written here around one reused `flate2::Compress`, so a record costs
//! no allocation in steady state: a fresh `GzEncoder` per record would allocate and
//! zero the compressor's ~300 KiB of tables thousands of times a second. Compressed
//! output streams to the inner writer in 64 KiB pieces, so a large record is never
//! held compressed in memory.

use std::io::{self, Write};

use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use isal::write::DeflateEncoder;

use super::digest::Digester;
use super::headers::{WarcHeaders, parse_length};

/// Where a record was written: the byte range of its gzip member (or, uncompressed,
/// of the record itself, closing CRLF CRLF included) in the file. This is what a
/// CDXJ index stores. (For uncompressed files `warcio index` reports 4 bytes less:
/// it leaves out the closing CRLF CRLF.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RecordLocation {
    /// Offset of the first byte.
    pub offset: u64,
    /// Length in bytes, as stored (compressed length for `.warc.gz`).
    pub length: u64,
}

/// How a [`WarcWriter`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// Gzip level 0 to 9 for a `.warc.gz`, or `None` for an uncompressed `.warc`.
    /// Default `Some(1)`: fastest, as the downloader writes at full speed and
    /// storage may recompress.
    pub gzip_level: Option<u32>,
    /// Add `WARC-Block-Digest` to records that lack one. Default `true`.
    pub block_digest: bool,
    /// Offset of the writer's first byte in the file, when appending. Default 0.
    pub start_offset: u64,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            gzip_level: Some(1),
            block_digest: true,
            start_offset: 0,
        }
    }
}

/// A record could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WarcWriteError {
    /// Writing to the inner writer (or compressing) failed; the file is now unusable.
    #[error("writing WARC record: {0}")]
    Io(#[from] io::Error),
    /// A mandatory field (`WARC-Type`, `WARC-Record-ID`, `WARC-Date`) is missing.
    #[error("WARC record lacks the mandatory field {0}")]
    MissingField(&'static str),
    /// The headers carry a `Content-Length` that differs from the block's length.
    #[error("Content-Length {header:?} does not match the block length {block}")]
    ContentLengthMismatch {
        /// The value in the headers.
        header: String,
        /// The length of the block given.
        block: u64,
    },
    /// An earlier write failed part-way, so the file's end is unknown.
    #[error("an earlier write failed; this WARC file is unusable")]
    Poisoned,
}

/// Every member's gzip header (RFC 1952): magic, deflate, `FLG.FEXTRA` (nothing
/// else), no mtime, no extra flags, OS unknown; then the extra field: `XLEN` 8 and one
/// subfield `PL` ("polycrawl length") of 4 bytes, the whole member's length in bytes
/// (header to trailer), little-endian, 0 when not known in time or over 4 GiB. The
/// length lets a reader take a member whole, without inflating to find its end, and
/// inflate it with a whole-buffer inflater ([`crate::warc::WarcReader`]: libdeflate,
/// 1.4 times zlib-rs's speed). Readers that do not know the subfield skip it, as RFC
/// 1952 requires (gzip, zlib, warcio, Python's gzip module).
pub(crate) const GZIP_HEADER: [u8; MEMBER_HEADER] = [
    0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 8, 0, b'P', b'L', 4, 0, 0, 0, 0, 0,
];
/// Bytes of [`GZIP_HEADER`].
pub(crate) const MEMBER_HEADER: usize = 20;
/// Where the member length sits in [`GZIP_HEADER`].
pub(crate) const MEMBER_LENGTH_AT: usize = 16;
/// Bytes of a member's trailer (CRC-32 and size).
pub(crate) const MEMBER_TRAILER: usize = 8;

/// The header of a member `length` bytes long (0 if unknown or past 4 GiB).
fn member_header(length: u64) -> [u8; MEMBER_HEADER] {
    let mut header = GZIP_HEADER;
    let length = u32::try_from(length).unwrap_or(0);
    header[MEMBER_LENGTH_AT..].copy_from_slice(&length.to_le_bytes());
    header
}
const FLUSH_AT: usize = 64 * 1024;
/// Largest stored deflate block (`LEN` is 16 bits).
const STORED_MAX: usize = 65_535;

/// Bytes that `n` bytes take as stored deflate blocks: 5 bytes of framing per
/// [`STORED_MAX`] bytes, and the bytes.
fn stored_len(n: usize) -> usize {
    n.div_ceil(STORED_MAX) * 5 + n
}
/// Records (header, block and closing CRLF CRLF) up to this size are written as stored
/// gzip members even when deflate was asked for. Every deflate member starts with a
/// reset of the compressor, which clears its 128 KiB hash table (zlib-rs, like
/// zlib-ng, has a fixed 2^16-entry table whatever the window or `memLevel`): for a
/// request record or a redirect of ~600 bytes that reset costs several times the
/// compression itself, to save ~200 bytes. Measured in the downloader (BENCHMARKS.md,
/// issue 9): `memset` was 5.5 % of its CPU, almost all of it these resets.
pub const SMALL_RECORD: usize = 1024;

/// How a record's gzip member packs its bytes.
#[derive(Debug, Clone, Copy)]
enum Packing<'a> {
    /// Deflate at the writer's level.
    Deflate,
    /// Stored blocks: copied, not compressed.
    Store,
    /// The header in stored blocks, then the block as deflated ahead of time.
    Deflated(&'a DeflatedBlock),
}

/// A record's block, with the record's closing CRLF CRLF, deflated ahead of time by a
/// [`BlockDeflater`] (on any thread) for [`WarcWriter::write_record_deflated`]: a raw
/// deflate stream that ends in a final block, its CRC-32 and its length.
#[derive(Debug, Default)]
pub struct DeflatedBlock {
    data: Vec<u8>,
    crc: Crc,
    len: u64,
}

impl DeflatedBlock {
    /// Bytes of deflate data.
    pub fn compressed_len(&self) -> usize {
        self.data.len()
    }
}

/// Deflates record blocks ahead of the [`WarcWriter`], so that the compression of
/// many records can run on several threads while one writer appends them to a file
/// in order.
///
/// A member written from a [`DeflatedBlock`] is the record's header in stored deflate
/// blocks (not final), then the block's own deflate stream (final): one valid
/// deflate stream, as a parallel gzip (pigz) writes it, since the block's stream never
/// refers back to bytes before its start. Any gzip reader reads it.
///
/// The deflate is ISA-L's igzip, over a contiguous copy of the block and the
/// record's closing CRLF CRLF (the copy costs about 1/40 of the deflate), through one
/// igzip stream kept for every block and reset after each. Gzip levels map to
/// igzip's: 1 (the default) to igzip 0, 2 to 5 to igzip 1, 6 to 9 to igzip 3; level 0
/// writes stored blocks through zlib-rs. On the benchmark's pages (BENCHMARKS.md,
/// issue 39) igzip 0 deflates 1.4-1.6x as fast as zlib-rs level 1 to 0.33 of the
/// input (zlib-rs: 0.38); igzip 1 to 0.30. A stream is about 82 KB of state (plus
/// igzip 1's and 3's tables); `isal::compress_into`, a fresh stream per block, moved
/// that state on the stack each time and was 12 % slower at igzip 0 (BENCHMARKS.md,
/// issue 39, session 41). Memory: the stream, the input copy and the stream's
/// output buffer, O(largest block), kept for the next block; only the deflated bytes
/// are copied out (a fresh zeroed buffer of about 14 KB per record was slower in 4
/// of 4 alternating benchmark pairs: session 32).
pub struct BlockDeflater {
    engine: Engine,
    /// The block and the closing CRLF CRLF, contiguous: one write into the stream.
    input: Vec<u8>,
}

/// What deflates a [`BlockDeflater`]'s blocks.
enum Engine {
    /// igzip at this level, through one stream kept for every block and reset after
    /// each (its deflate ends in a final block and forgets the history).
    Igzip(isal::CompressionLevel, Box<DeflateEncoder<Vec<u8>>>),
    /// Gzip level 0: stored blocks through zlib-rs (its tables are never used).
    Stored(Compress),
}

impl std::fmt::Debug for BlockDeflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let engine = match &self.engine {
            Engine::Igzip(level, _) => format!("igzip {}", *level as u8),
            Engine::Stored(_) => "stored".to_owned(),
        };
        f.debug_struct("BlockDeflater")
            .field("engine", &engine)
            .finish_non_exhaustive()
    }
}

/// A fresh igzip stream at `level`, writing into an empty buffer.
fn igzip_stream(level: isal::CompressionLevel) -> Box<DeflateEncoder<Vec<u8>>> {
    Box::new(DeflateEncoder::new(Vec::new(), level))
}

impl BlockDeflater {
    /// A deflater at gzip `level` (0 to 9; higher is taken as 9).
    pub fn new(level: u32) -> Self {
        let engine = match level {
            0 => Engine::Stored(Compress::new(Compression::new(0), false)),
            _ => {
                let level = match level {
                    1 => isal::CompressionLevel::Zero,
                    2..=5 => isal::CompressionLevel::One,
                    _ => isal::CompressionLevel::Three,
                };
                Engine::Igzip(level, igzip_stream(level))
            }
        };
        Self {
            engine,
            input: Vec::new(),
        }
    }

    /// Deflates `block` and the record's closing CRLF CRLF. O(block bytes).
    pub fn deflate(&mut self, block: &[u8]) -> io::Result<DeflatedBlock> {
        let mut crc = Crc::new();
        crc.update(block);
        crc.update(b"\r\n\r\n");
        let data = match &mut self.engine {
            Engine::Igzip(level, stream) => {
                let input = &mut self.input;
                input.clear();
                input.extend_from_slice(block);
                input.extend_from_slice(b"\r\n\r\n");
                stream.get_ref_mut().clear();
                // `flush` ends the deflate stream in a final block and resets it.
                let done = stream.write_all(input).and_then(|()| stream.flush());
                if let Err(e) = done {
                    // A stream that failed midway is not reused.
                    *stream = igzip_stream(*level);
                    return Err(e);
                }
                stream.get_ref().clone()
            }
            Engine::Stored(c) => {
                c.reset();
                let mut data = Vec::with_capacity(stored_len(block.len() + 4) + 64);
                for piece in [block, &b"\r\n\r\n"[..]] {
                    deflate_into(c, piece, FlushCompress::None, &mut data)?;
                }
                deflate_into(c, &[], FlushCompress::Finish, &mut data)?;
                data
            }
        };
        Ok(DeflatedBlock {
            data,
            crc,
            len: block.len() as u64 + 4,
        })
    }
}

/// Writes WARC records to `W`, one gzip member per record (or uncompressed).
///
/// Wrap a `File` in a `BufWriter`: the writer issues one `write_all` per piece.
#[derive(Debug)]
pub struct WarcWriter<W: Write> {
    inner: W,
    pos: u64,
    block_digest: bool,
    compress: Option<Compress>,
    head: Vec<u8>,
    out: Vec<u8>,
    poisoned: bool,
    /// Where the record being written (or the last one) began.
    record_start: u64,
}

impl<W: Write> WarcWriter<W> {
    /// A gzip (level 1) writer adding block digests, starting at offset 0.
    pub fn new(inner: W) -> Self {
        Self::with_options(inner, WriterOptions::default())
    }

    /// A writer with explicit options.
    pub fn with_options(inner: W, options: WriterOptions) -> Self {
        let compress = options
            .gzip_level
            .map(|level| Compress::new(Compression::new(level.min(9)), false));
        Self {
            inner,
            pos: options.start_offset,
            block_digest: options.block_digest,
            compress,
            head: Vec::with_capacity(1024),
            out: Vec::new(),
            poisoned: false,
            record_start: options.start_offset,
        }
    }

    /// Writes one record whose block is `block`.
    pub fn write_record(
        &mut self,
        headers: &WarcHeaders,
        block: &[u8],
    ) -> Result<RecordLocation, WarcWriteError> {
        self.write_record_parts(headers, &[block])
    }

    /// Writes one record whose block is the concatenation of `parts` (say, an HTTP
    /// response head and its body, without copying them together).
    ///
    /// `Content-Length` (and `WARC-Block-Digest`, if enabled and absent) are added
    /// from the block; a `Content-Length` already in `headers` must match it. In a
    /// `.warc.gz`, a record of at most [`SMALL_RECORD`] bytes is written stored, as
    /// [`WarcWriter::write_record_stored`] does.
    pub fn write_record_parts(
        &mut self,
        headers: &WarcHeaders,
        parts: &[&[u8]],
    ) -> Result<RecordLocation, WarcWriteError> {
        self.write(headers, parts, Packing::Deflate)
    }

    /// Writes one record as [`WarcWriter::write_record`] does, but, in a `.warc.gz`,
    /// as a gzip member of *stored* deflate blocks (RFC 1951 `BTYPE=00`: the bytes as
    /// they are, framed, with the gzip CRC): for a block that is already compressed,
    /// such as an HTTP response whose body came with `Content-Encoding: gzip`.
    /// Deflating such a block again costs most of a downloader's CPU per page and
    /// gains only its few hundred bytes of headers. Any gzip reader reads the member.
    pub fn write_record_stored(
        &mut self,
        headers: &WarcHeaders,
        block: &[u8],
    ) -> Result<RecordLocation, WarcWriteError> {
        self.write(headers, &[block], Packing::Store)
    }

    /// Writes one record as [`WarcWriter::write_record`] does, from `deflated`, which
    /// must be what a [`BlockDeflater`] made of `block`: the writer then only frames
    /// the header and copies the deflate data, so the compression can run elsewhere
    /// (the downloader's fetch tasks, on every core). `deflated` is left unused when
    /// its length does not match `block`, for an uncompressed writer, and for a
    /// record of at most [`SMALL_RECORD`] bytes (stored). `block` is read only for a
    /// block digest.
    pub fn write_record_deflated(
        &mut self,
        headers: &WarcHeaders,
        block: &[u8],
        deflated: &DeflatedBlock,
    ) -> Result<RecordLocation, WarcWriteError> {
        let packing = if deflated.len == block.len() as u64 + 4 {
            Packing::Deflated(deflated)
        } else {
            Packing::Deflate
        };
        self.write(headers, &[block], packing)
    }

    fn write(
        &mut self,
        headers: &WarcHeaders,
        parts: &[&[u8]],
        packing: Packing<'_>,
    ) -> Result<RecordLocation, WarcWriteError> {
        if self.poisoned {
            return Err(WarcWriteError::Poisoned);
        }
        for name in ["WARC-Type", "WARC-Record-ID", "WARC-Date"] {
            if headers.get(name).is_none() {
                return Err(WarcWriteError::MissingField(name));
            }
        }
        let block_len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let has_length = match headers.get("Content-Length") {
            None => false,
            Some(v) if parse_length(v) == Some(block_len) => true,
            Some(v) => {
                return Err(WarcWriteError::ContentLengthMismatch {
                    header: v.to_owned(),
                    block: block_len,
                });
            }
        };
        self.head.clear();
        headers.encode(&mut self.head);
        if self.block_digest && headers.get("WARC-Block-Digest").is_none() {
            let mut d = Digester::new();
            parts.iter().for_each(|p| d.update(p));
            let digest = d.finish();
            self.head.extend_from_slice(b"WARC-Block-Digest: ");
            self.head
                .extend_from_slice(digest.encode(&mut [0; 37]).as_bytes());
            self.head.extend_from_slice(b"\r\n");
        }
        if !has_length {
            let _ = write!(self.head, "Content-Length: {block_len}\r\n");
        }
        self.head.extend_from_slice(b"\r\n");

        let offset = self.pos;
        self.record_start = offset;
        let small = self.head.len() as u64 + block_len + 4 <= SMALL_RECORD as u64;
        let packing = if small { Packing::Store } else { packing };
        let result = match (self.compress.is_some(), packing) {
            (false, _) => self.write_plain(parts),
            (true, Packing::Deflate) => self.write_member(parts),
            (true, Packing::Store) => self.write_stored_member(parts),
            (true, Packing::Deflated(d)) => self.write_deflated_member(d),
        };
        if let Err(e) = result {
            self.poisoned = true;
            return Err(e.into());
        }
        Ok(RecordLocation {
            offset,
            length: self.pos - offset,
        })
    }

    fn write_plain(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        self.inner.write_all(&self.head)?;
        for p in parts {
            self.inner.write_all(p)?;
        }
        self.inner.write_all(b"\r\n\r\n")?;
        let len: usize = self.head.len() + parts.iter().map(|p| p.len()).sum::<usize>() + 4;
        self.pos += len as u64;
        Ok(())
    }

    fn write_member(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let Self {
            inner,
            pos,
            compress,
            head,
            out,
            ..
        } = self;
        let Some(c) = compress.as_mut() else {
            return Ok(());
        };
        c.reset();
        let mut crc = Crc::new();
        out.clear();
        out.extend_from_slice(&GZIP_HEADER);
        let start = *pos;
        let pieces = std::iter::once(&head[..])
            .chain(parts.iter().copied())
            .chain(std::iter::once(&b"\r\n\r\n"[..]));
        for piece in pieces {
            crc.update(piece);
            deflate(c, piece, FlushCompress::None, out, inner, pos)?;
        }
        deflate(c, &[], FlushCompress::Finish, out, inner, pos)?;
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        if *pos == start {
            // Nothing was written through yet: the member is whole in `out`.
            let header = member_header(out.len() as u64);
            out[..MEMBER_HEADER].copy_from_slice(&header);
        }
        inner.write_all(out)?;
        *pos += out.len() as u64;
        out.clear();
        Ok(())
    }

    /// A gzip member of stored deflate blocks (at most 65,535 bytes each): header,
    /// then per block one byte (`BFINAL`, `BTYPE=00`), `LEN` and `NLEN`, the bytes;
    /// then CRC-32 and size. O(record bytes): a copy and a CRC.
    fn write_stored_member(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let Self {
            inner,
            pos,
            head,
            out,
            ..
        } = self;
        let mut crc = Crc::new();
        let total = head.len() + parts.iter().map(|p| p.len()).sum::<usize>() + 4;
        let length = MEMBER_HEADER + stored_len(total) + MEMBER_TRAILER;
        out.clear();
        out.extend_from_slice(&member_header(length as u64));
        let pieces = std::iter::once(&head[..])
            .chain(parts.iter().copied())
            .chain(std::iter::once(&b"\r\n\r\n"[..]));
        let mut left_in_block = 0usize;
        let mut left = total;
        for piece in pieces {
            crc.update(piece);
            let mut piece = piece;
            while !piece.is_empty() {
                if left_in_block == 0 {
                    left_in_block = left.min(STORED_MAX);
                    let last = left_in_block == left;
                    let len = left_in_block as u16;
                    out.push(u8::from(last));
                    out.extend_from_slice(&len.to_le_bytes());
                    out.extend_from_slice(&(!len).to_le_bytes());
                }
                let n = piece.len().min(left_in_block);
                out.extend_from_slice(&piece[..n]);
                piece = &piece[n..];
                left_in_block -= n;
                left -= n;
                if out.len() >= FLUSH_AT {
                    inner.write_all(out)?;
                    *pos += out.len() as u64;
                    out.clear();
                }
            }
        }
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        inner.write_all(out)?;
        *pos += out.len() as u64;
        out.clear();
        Ok(())
    }

    /// A gzip member of the header in stored blocks (none final) and `d`'s deflate
    /// stream; the CRC-32 is the header's combined with `d`'s. O(header bytes) plus
    /// the copy of `d`.
    fn write_deflated_member(&mut self, d: &DeflatedBlock) -> io::Result<()> {
        let Self {
            inner,
            pos,
            head,
            out,
            ..
        } = self;
        let length =
            (MEMBER_HEADER + stored_len(head.len()) + MEMBER_TRAILER) as u64 + d.data.len() as u64;
        out.clear();
        out.extend_from_slice(&member_header(length));
        for chunk in head.chunks(STORED_MAX) {
            let len = chunk.len() as u16;
            out.push(0); // BFINAL = 0, BTYPE = 00
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&(!len).to_le_bytes());
            out.extend_from_slice(chunk);
        }
        let mut crc = Crc::new();
        crc.update(head);
        crc.combine(&d.crc);
        inner.write_all(out)?;
        inner.write_all(&d.data)?;
        out.clear();
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        inner.write_all(out)?;
        *pos += length;
        out.clear();
        Ok(())
    }

    /// Offset at which the next record will start.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Flushes the inner writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer, mutably (to commit a file in place after [`flush`](Self::flush)).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Recovers from a failed record (the writer is poisoned; say the disk was
    /// full): `truncate` is called with the offset where that record began (the end
    /// of the last complete one) and must make the inner writer forget everything
    /// after it; then the writer takes records again from there. Does nothing if the
    /// last record did not fail.
    pub fn recover(
        &mut self,
        truncate: impl FnOnce(&mut W, u64) -> io::Result<()>,
    ) -> io::Result<()> {
        if !self.poisoned {
            return Ok(());
        }
        truncate(&mut self.inner, self.record_start)?;
        self.pos = self.record_start;
        self.out.clear();
        self.poisoned = false;
        Ok(())
    }

    /// Flushes and returns the inner writer (the caller then fsyncs and publishes).
    pub fn finish(mut self) -> io::Result<W> {
        self.inner.flush()?;
        Ok(self.inner)
    }
}

/// Compresses all of `input` into `out`, growing it as needed.
fn deflate_into(
    c: &mut Compress,
    mut input: &[u8],
    flush: FlushCompress,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    loop {
        if out.capacity() - out.len() < 4096 {
            out.reserve(out.capacity().max(4096));
        }
        let before = c.total_in();
        let status = c
            .compress_vec(input, out, flush)
            .map_err(io::Error::other)?;
        input = &input[(c.total_in() - before) as usize..];
        let done = match flush {
            FlushCompress::Finish => status == Status::StreamEnd,
            _ => input.is_empty(),
        };
        if done {
            return Ok(());
        }
    }
}

/// Compresses `input` into `out`, writing `out` through to `inner` whenever it
/// passes [`FLUSH_AT`] bytes (and counting them in `pos`).
fn deflate<W: Write>(
    c: &mut Compress,
    mut input: &[u8],
    flush: FlushCompress,
    out: &mut Vec<u8>,
    inner: &mut W,
    pos: &mut u64,
) -> io::Result<()> {
    loop {
        if out.capacity() - out.len() < 4096 {
            out.reserve(FLUSH_AT);
        }
        let before = c.total_in();
        let status = c
            .compress_vec(input, out, flush)
            .map_err(io::Error::other)?;
        input = &input[(c.total_in() - before) as usize..];
        if out.len() >= FLUSH_AT {
            inner.write_all(out)?;
            *pos += out.len() as u64;
            out.clear();
        }
        let done = match flush {
            FlushCompress::Finish => status == Status::StreamEnd,
            _ => input.is_empty(),
        };
        if done {
            return Ok(());
        }
    }
}
