//! Writing a set file sequentially, one key at a time, in one pass.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::SeenError;
use super::format::{FileSummary, Footer, HEADER_LEN, Header, common_prefix, put_varint};

/// Bytes collected before each `write`.
const CHUNK: usize = 1 << 20;

/// Writes keys, given in strictly increasing order, to a new set file.
///
/// The header is written last (its count is known only at the end), so the CRC of
/// the body is kept apart and combined with the header's at [`FileWriter::finish`].
pub(crate) struct FileWriter {
    file: File,
    path: PathBuf,
    out: Vec<u8>,
    /// File offset of `out[0]`.
    flushed: u64,
    /// CRC of the bytes after the header written so far.
    body_crc: crc32fast::Hasher,
    last: Vec<u8>,
    count: u64,
    interval: u64,
    generation: u64,
    restarts: Vec<u64>,
}

impl FileWriter {
    /// Creates (or truncates) `path`, with room for the header.
    pub(crate) fn create(
        path: &Path,
        generation: u64,
        interval: u32,
    ) -> Result<FileWriter, SeenError> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(SeenError::io(path))?;
        let mut out = Vec::with_capacity(CHUNK + (1 << 17));
        out.resize(HEADER_LEN, 0);
        Ok(FileWriter {
            file,
            path: path.to_owned(),
            out,
            flushed: 0,
            body_crc: crc32fast::Hasher::new(),
            last: Vec::new(),
            count: 0,
            interval: u64::from(interval),
            generation,
            restarts: Vec::new(),
        })
    }

    /// Appends `key`, which must be greater than the previous key.
    pub(crate) fn push(&mut self, key: &[u8]) -> Result<(), SeenError> {
        debug_assert!(self.count == 0 || key > &self.last[..], "keys out of order");
        let shared = if self.count % self.interval == 0 {
            self.restarts.push(self.flushed + self.out.len() as u64);
            0
        } else {
            common_prefix(&self.last, key)
        };
        let suffix = &key[shared..];
        put_varint(&mut self.out, shared as u64);
        put_varint(&mut self.out, suffix.len() as u64);
        self.out.extend_from_slice(suffix);
        self.last.truncate(shared);
        self.last.extend_from_slice(suffix);
        self.count += 1;
        if self.out.len() >= CHUNK {
            self.write_out()?;
        }
        Ok(())
    }

    /// Keys written so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Writes the index, footer and header; returns the file (not yet fsynced) for
    /// the durable rename.
    pub(crate) fn finish(mut self) -> Result<(File, FileSummary), SeenError> {
        let index_offset = self.flushed + self.out.len() as u64;
        for i in 0..self.restarts.len() {
            self.out.extend_from_slice(&self.restarts[i].to_le_bytes());
            if self.out.len() >= CHUNK {
                self.write_out()?;
            }
        }
        let mut footer = Footer {
            index_offset,
            count: self.count,
            generation: self.generation,
            crc: 0,
        };
        self.out.extend_from_slice(&footer.encode_fields());
        self.write_out()?;
        let header = Header {
            restart_interval: self.interval as u32,
            generation: self.generation,
            count: self.count,
        }
        .encode();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header);
        crc.combine(&self.body_crc);
        footer.crc = crc.finalize();
        let io = SeenError::io(&self.path);
        self.file.write_all(&footer.encode_tail()).map_err(io)?;
        let bytes = self.flushed + 8;
        let io = SeenError::io(&self.path);
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.write_all(&header))
            .map_err(io)?;
        let summary = FileSummary {
            generation: self.generation,
            count: self.count,
            bytes,
            restart_interval: self.interval as u32,
        };
        Ok((self.file, summary))
    }

    fn write_out(&mut self) -> Result<(), SeenError> {
        let body = if self.flushed == 0 {
            &self.out[HEADER_LEN..]
        } else {
            &self.out[..]
        };
        self.body_crc.update(body);
        self.file
            .write_all(&self.out)
            .map_err(SeenError::io(&self.path))?;
        self.flushed += self.out.len() as u64;
        self.out.clear();
        Ok(())
    }
}
