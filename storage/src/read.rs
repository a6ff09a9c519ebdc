//! Reading pages back: [`RepositoryReader::get`] finds the latest capture of a URL
//! through the CDXJ index, reads its record from (file, offset, length), and for a
//! revisit follows `WARC-Refers-To-Target-URI` / `-Date` and the payload digest to
//! the first capture's record for the body (checking that body's SHA-1).
//! [`print_page`] writes what `polycrawl get URL` prints.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Component;

use spool::warc::{Record, RecordType, Sha1Digest, WarcDate, WarcReader, payload_digest};
use url::Url;

use crate::cdxj::CdxjLine;
use crate::error::{Result, StorageError};
use crate::http::head_len;
use crate::index::Found;
use crate::repository::{Repository, RepositoryReader};
use crate::surt::surt;

/// A page read back from the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPage {
    /// The URL captured (`WARC-Target-URI`).
    pub url: String,
    /// When (`WARC-Date`).
    pub date: WarcDate,
    /// The HTTP response head as received, status line through blank line.
    pub head: Vec<u8>,
    /// The HTTP response body (for a revisit, the first capture's identical body).
    pub body: Vec<u8>,
    /// The index line the page was found through.
    pub line: CdxjLine,
    /// For a revisit, the index line of the first capture the body came from.
    pub original: Option<CdxjLine>,
}

impl StoredPage {
    /// The HTTP status code, if the head has one.
    pub fn status(&self) -> Option<u16> {
        self.line.status.parse().ok()
    }
}

impl RepositoryReader {
    /// Every capture of `url`'s SURT key (which may include other spellings of the same
    /// URL: `https`, `www.`, case, parameter order), oldest first.
    pub fn captures(&self, url: &str) -> Result<Vec<CdxjLine>> {
        let mut found = self.index.lookup(&surt(url)?)?;
        sort_found(&mut found);
        Ok(found.into_iter().map(|f| f.line).collect())
    }

    /// The latest capture of `url`: among the captures under its SURT key, those whose
    /// recorded URL is exactly `url` (after `url`-crate normalization) if any, else
    /// all; the latest by timestamp, then by ingest order. `None` if never stored.
    pub fn get(&self, url: &str) -> Result<Option<StoredPage>> {
        let mut found = self.index.lookup(&surt(url)?)?;
        sort_found(&mut found);
        let wanted = normalize(url);
        let exact = found
            .iter()
            .rev()
            .find(|f| f.line.url == url || normalize(&f.line.url) == wanted);
        match exact.or(found.last()) {
            None => Ok(None),
            Some(f) => self.read_capture(&f.line).map(Some),
        }
    }

    /// Reads the page an index line points at.
    pub fn read_capture(&self, line: &CdxjLine) -> Result<StoredPage> {
        let rec = self.read_record(line)?;
        let fail = |reason: &str| bad(line, reason);
        if rec.headers.target_uri() != Some(line.url.as_str()) {
            return Err(fail("WARC-Target-URI differs from the index line"));
        }
        let date = rec.headers.date().ok_or_else(|| fail("no WARC-Date"))?;
        let n = head_len(&rec.block);
        match rec.headers.record_type() {
            Some(RecordType::Response) => {
                let mut block = rec.block;
                let body = block.split_off(n);
                Ok(StoredPage {
                    url: line.url.clone(),
                    date,
                    head: block,
                    body,
                    line: line.clone(),
                    original: None,
                })
            }
            Some(RecordType::Revisit) => {
                let (original, original_head, body) = self.follow_revisit(line, &rec)?;
                let mut head = rec.block;
                head.truncate(n);
                if head.is_empty() {
                    // A server-not-modified revisit: the content, head included, is
                    // the original's.
                    head = original_head;
                }
                Ok(StoredPage {
                    url: line.url.clone(),
                    date,
                    head,
                    body,
                    line: line.clone(),
                    original: Some(original),
                })
            }
            _ => Err(fail("not a response or revisit record")),
        }
    }

    /// The first capture a revisit record refers to, its head and its body.
    fn follow_revisit(
        &self,
        line: &CdxjLine,
        rec: &Record,
    ) -> Result<(CdxjLine, Vec<u8>, Vec<u8>)> {
        let h = &rec.headers;
        let fail = |reason: &str| bad(line, reason);
        let digest = h
            .payload_digest()
            .ok_or_else(|| fail("revisit without a WARC-Payload-Digest"))?;
        let uri = h
            .get("WARC-Refers-To-Target-URI")
            .ok_or_else(|| fail("revisit without WARC-Refers-To-Target-URI"))?;
        let when = h
            .get("WARC-Refers-To-Date")
            .and_then(|d| d.parse::<WarcDate>().ok())
            .map(|d| d.to_cdx_timestamp());
        let mut found = self.index.lookup(&surt(uri)?)?;
        sort_found(&mut found);
        let same_payload = |f: &&Found| {
            !f.line.is_revisit() && f.line.digest.parse::<Sha1Digest>().ok() == Some(digest)
        };
        // The capture named by URI and date; failing that, any with that payload.
        let original = found
            .iter()
            .filter(same_payload)
            .find(|f| f.line.url == uri && Some(&f.line.timestamp) == when.as_ref())
            .or_else(|| found.iter().find(same_payload))
            .ok_or_else(|| fail("the capture it refers to is not in the index"))?;
        let page = self.read_capture(&original.line)?;
        if payload_digest(&page.body) != digest {
            return Err(bad(&original.line, "payload does not match its digest"));
        }
        Ok((original.line.clone(), page.head, page.body))
    }

    /// Reads the one record at the line's (file, offset, length).
    fn read_record(&self, line: &CdxjLine) -> Result<Record> {
        let rel = std::path::Path::new(&line.filename);
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(bad(line, "file name escapes the repository"));
        }
        let path = self.warc.join(rel);
        let mut file = File::open(&path).map_err(StorageError::io(&path))?;
        file.seek(SeekFrom::Start(line.offset))
            .map_err(StorageError::io(&path))?;
        let mut reader =
            WarcReader::new(BufReader::new(file.take(line.length))).with_start_offset(line.offset);
        match reader.next() {
            Some(Ok(rec)) if rec.location.length == line.length => Ok(rec),
            Some(Ok(_)) => Err(bad(line, "record length differs from the index line")),
            Some(Err(e)) => Err(bad(line, &e.to_string())),
            None => Err(bad(line, "no record at this offset")),
        }
    }
}

impl Repository {
    /// [`RepositoryReader::get`].
    pub fn get(&self, url: &str) -> Result<Option<StoredPage>> {
        self.reader.get(url)
    }

    /// [`RepositoryReader::captures`].
    pub fn captures(&self, url: &str) -> Result<Vec<CdxjLine>> {
        self.reader.captures(url)
    }
}

/// Prints the latest stored capture of `url` to `out`: the HTTP response head as
/// received, then the body (for a revisit, the first capture's identical body).
/// Returns `false`, printing nothing, when the URL was never stored.
pub fn print_page(
    repo: &impl AsRef<RepositoryReader>,
    url: &str,
    out: &mut impl Write,
) -> Result<bool> {
    let Some(page) = repo.as_ref().get(url)? else {
        return Ok(false);
    };
    out.write_all(&page.head)
        .and_then(|()| out.write_all(&page.body))
        .and_then(|()| out.flush())
        .map_err(StorageError::Output)?;
    Ok(true)
}

fn sort_found(found: &mut [Found]) {
    found.sort_by(|a, b| {
        (&a.line.timestamp, a.seq, a.line.offset).cmp(&(&b.line.timestamp, b.seq, b.line.offset))
    });
}

fn normalize(url: &str) -> Option<String> {
    Url::parse(url.trim()).ok().map(|mut u| {
        u.set_fragment(None);
        u.to_string()
    })
}

fn bad(line: &CdxjLine, reason: &str) -> StorageError {
    StorageError::BadStoredRecord {
        file: line.filename.clone(),
        offset: line.offset,
        reason: reason.to_owned(),
    }
}
