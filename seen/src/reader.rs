//! Reading a set file sequentially, checking every entry, the index and the CRC.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::error::{Corruption, SeenError};
use super::format::{
    FOOTER_LEN, FileSummary, Footer, HEADER_LEN, Header, MAX_KEY_LEN, get_varint, read_ends,
};

/// Bytes read per `read` call.
const CHUNK: usize = 1 << 20;
/// Longest encoded entry head (two varints).
const MAX_ENTRY_HEAD: usize = 20;

/// Streams the keys of a set file in order, checking as it goes.
///
/// [`FileReader::open`] checks the header and footer; [`FileReader::advance`] decodes
/// one key and checks its encoding and order; [`FileReader::finish`] (after the last
/// key) checks the restart index and the CRC. A file is only known good once
/// `finish` has returned `Ok`.
pub struct FileReader {
    input: Input,
    header: Header,
    footer: Footer,
    key: Vec<u8>,
    decoded: u64,
    restarts: Vec<u64>,
}

impl FileReader {
    /// Opens `path` and checks its header and footer.
    pub fn open(path: &Path) -> Result<FileReader, SeenError> {
        let mut file = File::open(path).map_err(SeenError::io(path))?;
        let (header, footer, len) = read_ends(&mut file, path)?;
        file.seek(SeekFrom::Start(0)).map_err(SeenError::io(path))?;
        let mut input = Input::new(file, path.to_owned(), len);
        input.fill(HEADER_LEN)?;
        input.consume(HEADER_LEN);
        Ok(FileReader {
            input,
            header,
            footer,
            key: Vec::new(),
            decoded: 0,
            restarts: Vec::new(),
        })
    }

    /// Generation, count and length, from the header.
    pub fn summary(&self) -> FileSummary {
        FileSummary {
            generation: self.header.generation,
            count: self.header.count,
            bytes: self.input.len,
            restart_interval: self.header.restart_interval,
        }
    }

    /// Decodes the next key; `false` after the last one.
    pub fn advance(&mut self) -> Result<bool, SeenError> {
        if self.decoded == self.header.count {
            return Ok(false);
        }
        let index = self.decoded;
        let offset = self.input.offset();
        let bad = Corruption::BadEntry { index };
        let remaining = (self.footer.index_offset - offset) as usize;
        self.input.fill(MAX_ENTRY_HEAD.min(remaining))?;
        let unread = self.input.unread();
        let head = &unread[..unread.len().min(remaining)];
        let (shared, n1) = get_varint(head).ok_or_else(|| self.input.corrupt(bad.clone()))?;
        let (suffix_len, n2) =
            get_varint(&head[n1..]).ok_or_else(|| self.input.corrupt(bad.clone()))?;
        let total = (n1 as u64)
            .saturating_add(n2 as u64)
            .saturating_add(suffix_len);
        let restart = index % u64::from(self.header.restart_interval) == 0;
        if shared > self.key.len() as u64
            || (restart && shared != 0)
            || shared.saturating_add(suffix_len) > MAX_KEY_LEN as u64
            || total > remaining as u64
        {
            return Err(self.input.corrupt(bad));
        }
        let (shared, total) = (shared as usize, total as usize);
        self.input.fill(total)?;
        let suffix = &self.input.unread()[n1 + n2..total];
        if index > 0 && suffix <= &self.key[shared..] {
            return Err(self.input.corrupt(Corruption::Unsorted { index }));
        }
        self.key.truncate(shared);
        self.key.extend_from_slice(suffix);
        self.input.consume(total);
        if restart {
            self.restarts.push(offset);
        }
        self.decoded += 1;
        Ok(true)
    }

    /// The key decoded by the last successful [`FileReader::advance`].
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// After the last key: checks the restart index, the footer and the CRC.
    pub fn finish(mut self) -> Result<FileSummary, SeenError> {
        while self.advance()? {}
        if self.input.offset() != self.footer.index_offset {
            return Err(self.input.corrupt(Corruption::Inconsistent));
        }
        for i in 0..self.restarts.len() {
            self.input.fill(8)?;
            let slot = u64::from_le_bytes(self.input.unread()[..8].try_into().expect("8 bytes"));
            self.input.consume(8);
            if slot != self.restarts[i] {
                return Err(self.input.corrupt(Corruption::BadRestartIndex));
            }
        }
        self.input.fill(FOOTER_LEN)?;
        self.input.consume(FOOTER_LEN);
        if !self.input.at_end() {
            return Err(self.input.corrupt(Corruption::Inconsistent));
        }
        let computed = self.input.crc.clone().finalize();
        if computed != self.footer.crc {
            let stored = self.footer.crc;
            return Err(self
                .input
                .corrupt(Corruption::Checksum { stored, computed }));
        }
        Ok(self.summary())
    }
}

/// A set file read front to back in chunks of [`CHUNK`], hashed as it is read:
/// the bytes read and not yet consumed are `buf[start..end]`. It knows nothing of
/// entries; it must never hash a byte twice or skip one (the CRC covers the file
/// but its last 8 bytes).
struct Input {
    file: File,
    path: PathBuf,
    /// The file's length.
    len: u64,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// File offset of `buf[end]`.
    read_to: u64,
    crc: crc32fast::Hasher,
}

impl Input {
    fn new(file: File, path: PathBuf, len: u64) -> Self {
        Input {
            file,
            path,
            len,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            read_to: 0,
            crc: crc32fast::Hasher::new(),
        }
    }

    /// The bytes read and not yet consumed.
    #[inline]
    fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Consumes `n` unread bytes (at most [`unread`](Self::unread)'s length).
    #[inline]
    fn consume(&mut self, n: usize) {
        self.start += n;
    }

    /// Everything read, and consumed.
    fn at_end(&self) -> bool {
        self.read_to == self.len && self.start == self.end
    }

    /// File offset of the next unread byte.
    #[inline]
    fn offset(&self) -> u64 {
        self.read_to - (self.end - self.start) as u64
    }

    /// Makes at least `n` unread bytes available in `buf[start..end]`, hashing what is
    /// read (all but the last 8 bytes of the file, the CRC and the end marker).
    #[inline]
    fn fill(&mut self, n: usize) -> Result<(), SeenError> {
        if self.end - self.start >= n {
            return Ok(());
        }
        self.refill(n)
    }

    fn refill(&mut self, n: usize) -> Result<(), SeenError> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        while self.end < n {
            let want = ((self.len - self.read_to) as usize).min(self.buf.len() - self.end);
            if want == 0 {
                return Err(self.corrupt(Corruption::Truncated));
            }
            let got = self
                .file
                .read(&mut self.buf[self.end..self.end + want])
                .map_err(SeenError::io(&self.path))?;
            if got == 0 {
                return Err(self.corrupt(Corruption::Truncated));
            }
            let hashed_to = self.len - 8;
            if self.read_to < hashed_to {
                let upto = (hashed_to - self.read_to).min(got as u64) as usize;
                self.crc.update(&self.buf[self.end..self.end + upto]);
            }
            self.end += got;
            self.read_to += got as u64;
        }
        Ok(())
    }

    fn corrupt(&self, what: Corruption) -> SeenError {
        SeenError::Corrupt {
            path: self.path.clone(),
            what,
        }
    }
}

/// Reads a whole set file and checks everything: header, footer, the encoding and
/// order of every key, the restart index and the CRC. O(file) sequential I/O.
pub fn verify(path: &Path) -> Result<FileSummary, SeenError> {
    FileReader::open(path)?.finish()
}
