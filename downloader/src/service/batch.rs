//! WARC files as the downloader writes them: the record pair of one fetch, an open
//! page batch (`Batch`), and a robots file (`publish_robots`).
//!
//! # Records of one fetch
//!
//! A `response` record (block: [`Fetched::raw`](crate::Fetched::raw), the response
//! exactly as received; `WARC-Payload-Digest`: SHA-1 of the bytes after the
//! response head as stored in the block (chunk framing and content coding kept),
//! as [`spool::warc::payload_digest`] defines it and as storage and `warcio check`
//! verify it; `WARC-Truncated` when the body was cut), then its
//! `request` record (block: the request bytes as sent; `WARC-Concurrent-To`: the
//! response's record id). Both carry `WARC-Target-URI` (the URL as requested on the
//! wire: scheme, lower-case host, port unless the default, path and query; no
//! fragment), `WARC-Date` (when the fetch took its connection slot) and
//! `WARC-IP-Address` (the target's address: the one connected to, or the one a
//! `socks5://` proxy was asked to connect to; left out when an HTTP or `socks5h`
//! proxy resolved the name). The request record's block is origin-form even when
//! an HTTP proxy was sent the absolute form. The response record also carries
//! the request's link hints for the application, when the job has them:
//! `Polycrawl-Depth` (link depth from the seeds) and `Polycrawl-Hops` (redirects
//! followed to reach the URL; left out when 0), and when the fetch ran:
//! `Polycrawl-Fetch-Start` (its start, Unix milliseconds) and `Polycrawl-Fetch-Ms`
//! (its duration to the response's end), for the application's `crawl.log`. A
//! fetch over HTTP/2 has HTTP/1.1-normalised blocks (see `crate::http2`) and both
//! records say `WARC-Protocol: h2`, then `WARC-Protocol: tls/1.3` (or 1.2); an
//! HTTP/1.1 fetch has no `WARC-Protocol`. The writer adds `Content-Length`,
//! not `WARC-Block-Digest` (optional in WARC 1.1; a SHA-1 of the whole response was
//! half of the downloader's digest CPU, and the payload digest is what storage's
//! dedup and index use; the gzip CRC guards the bytes).
//!
//! # Page batch
//!
//! `pages/<app>/<50-<downloader id>-<seq>.warc.gz>`: a `warcinfo` record (software,
//! format, user agent, the application as `isPartOf`), then record pairs, one gzip
//! member per record. It is written in the folder's `.tmp/` through a
//! [`PendingFile`] and appears in the folder only when `Batch::publish` commits
//! it (fsync, rename, fsync folder), so a reader never sees a partial batch.
//!
//! # Robots file
//!
//! `robots/<00-<downloader id>-<seq>.robots>`: one record pair and nothing else
//! (no warcinfo), gzip members like a batch, published at once.
//!
//! This module does blocking file I/O and compression: call it only from the writer
//! thread ([`crate::service::writer`]). Cost: O(record bytes) per record.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use spool::name::{FileKind, Priority};
use spool::protocol::JobId;
use spool::publish::{PendingFile, Publisher};
use spool::warc::{
    Capture, DeflatedBlock, RecordId, Sha1Digest, Truncated, WarcDate, WarcHeaders, WarcWriter,
    WriterOptions, warc_fields_block,
};

use spool::warc::{DEPTH_FIELD, FETCH_MS_FIELD, FETCH_START_FIELD, HOPS_FIELD};

use crate::fetched::Truncation;
use crate::service::error::WriteError;

/// Priority of page batch names (no urgency of their own).
pub const BATCH_PRIORITY: Priority = Priority::NORMAL;
/// Priority of robots file names: the manager waits for them.
pub const ROBOTS_PRIORITY: Priority = Priority::MOST_URGENT;

/// The WARC 1.1 specification, named in every warcinfo record.
const CONFORMS_TO: &str =
    "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/";

/// One fetch as archived: what both records of the pair are made of.
#[derive(Debug)]
pub(crate) struct Exchange {
    /// `WARC-Target-URI`.
    pub target_uri: String,
    /// `WARC-Date`: when the fetch started.
    pub date: WarcDate,
    /// `WARC-IP-Address`, where known.
    pub ip: Option<IpAddr>,
    /// The request bytes as sent.
    pub request: Bytes,
    /// The response as received.
    pub raw: Bytes,
    /// `WARC-Payload-Digest`: of the entity as stored, the bytes of `raw` after the
    /// response head (computed in the fetch task: [`crate::service::prepare`]).
    pub payload_digest: Sha1Digest,
    /// `raw` deflated in the fetch task, unless it is written stored.
    pub deflated: Option<DeflatedBlock>,
    /// Why the body is incomplete, if it is.
    pub truncated: Option<Truncation>,
    /// The body carries a content coding (gzip, br...): the response record is
    /// written as a stored gzip member ([`WarcWriter::write_record_stored`]), since
    /// deflating compressed bytes again costs CPU and saves nothing.
    pub precompressed: bool,
    /// The job's `depth` hint (`Polycrawl-Depth` on the response record).
    pub depth: Option<u32>,
    /// The job's `hops` hint (`Polycrawl-Hops` on the response record).
    pub hops: Option<u32>,
    /// When the fetch ran.
    pub fetch: FetchTime,
    /// `WARC-Protocol` values for both records
    /// ([`Fetched::protocols`](crate::Fetched::protocols): `h2` and the TLS
    /// version over HTTP/2; none over HTTP/1.1).
    pub protocols: Vec<&'static str>,
}

/// The field naming a protocol of the exchange (WARC 1.1 annex proposal,
/// iipc/warc-specifications#42; repeated once per protocol, application first).
pub const PROTOCOL_FIELD: &str = "WARC-Protocol";

/// When a fetch ran, as the response record says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FetchTime {
    /// Its start, in Unix milliseconds (`Polycrawl-Fetch-Start`).
    pub start_ms: u64,
    /// How long it took to the response's end, in milliseconds (`Polycrawl-Fetch-Ms`).
    pub ms: u64,
}

/// Which session and job a record belongs to (for `Committed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JobTag {
    /// The manager connection the job came on.
    pub session: u64,
    /// The manager's job id.
    pub job: JobId,
}

/// The header fields of a fetch's response and request records.
fn pair_headers(
    x: &Exchange,
    warcinfo_id: Option<RecordId>,
) -> Result<(WarcHeaders, WarcHeaders), WriteError> {
    let capture = Capture {
        target_uri: &x.target_uri,
        date: x.date,
        ip: x.ip,
        warcinfo_id,
    };
    let response_id = RecordId::random();
    let mut response = WarcHeaders::response(response_id, &capture, x.payload_digest)?;
    if let Some(t) = x.truncated {
        response.set_truncated(match t {
            Truncation::Length => Truncated::Length,
            Truncation::Disconnect => Truncated::Disconnect,
        });
    }
    if let Some(depth) = x.depth {
        response.push(DEPTH_FIELD, &depth.to_string())?;
    }
    if let Some(hops) = x.hops.filter(|&h| h > 0) {
        response.push(HOPS_FIELD, &hops.to_string())?;
    }
    response.push(FETCH_START_FIELD, &x.fetch.start_ms.to_string())?;
    response.push(FETCH_MS_FIELD, &x.fetch.ms.to_string())?;
    let mut request = WarcHeaders::request(RecordId::random(), &capture)?;
    request.set_concurrent_to(response_id);
    for p in &x.protocols {
        response.push(PROTOCOL_FIELD, p)?;
        request.push(PROTOCOL_FIELD, p)?;
    }
    Ok((response, request))
}

/// Writes the pair; the headers are built first, so a field error writes nothing.
fn write_pair<W: Write>(
    w: &mut WarcWriter<W>,
    x: &Exchange,
    warcinfo_id: Option<RecordId>,
    path: impl FnOnce() -> PathBuf,
) -> Result<(), WriteError> {
    let (response, request) = pair_headers(x, warcinfo_id)?;
    let written = match (&x.deflated, x.precompressed) {
        (Some(deflated), _) => w.write_record_deflated(&response, &x.raw, deflated),
        (None, true) => w.write_record_stored(&response, &x.raw),
        (None, false) => w.write_record(&response, &x.raw),
    };
    written
        .and_then(|_| w.write_record(&request, &x.request))
        .map_err(|source| WriteError::Warc {
            path: path(),
            source,
        })?;
    Ok(())
}

/// A page batch being written in `.tmp/`.
#[derive(Debug)]
pub(crate) struct Batch {
    writer: WarcWriter<PendingFile>,
    name: String,
    tmp: PathBuf,
    warcinfo_id: RecordId,
    opened: Instant,
    jobs: Vec<JobTag>,
}

/// A batch that was published.
#[derive(Debug)]
pub(crate) struct Published {
    /// The file name in `pages/<app>/`.
    pub name: String,
    /// Its size on disk.
    pub bytes: u64,
    /// The jobs whose records it holds.
    pub jobs: Vec<JobTag>,
}

impl Batch {
    /// Starts a batch in `publisher`'s folder and writes its warcinfo record.
    pub(crate) fn open(
        publisher: &Publisher,
        gzip_level: u32,
        user_agent: &str,
        app: &str,
    ) -> Result<Self, WriteError> {
        let pending = publisher.begin(BATCH_PRIORITY, FileKind::PageBatch)?;
        let name = pending.name().to_string();
        let tmp = pending.tmp_path().to_owned();
        let mut writer = WarcWriter::with_options(pending, options(gzip_level));
        let warcinfo_id = RecordId::random();
        let headers = WarcHeaders::warcinfo(warcinfo_id, WarcDate::now(), Some(&name))?;
        let block = warc_fields_block(&[
            ("software", concat!("polycrawl/", env!("CARGO_PKG_VERSION"))),
            ("format", "WARC File Format 1.1"),
            ("conformsTo", CONFORMS_TO),
            ("isPartOf", app),
            ("http-header-user-agent", user_agent),
            ("robots", "classic"),
        ])?;
        writer
            .write_record(&headers, &block)
            .map_err(|source| WriteError::Warc {
                path: tmp.clone(),
                source,
            })?;
        Ok(Self {
            writer,
            name,
            tmp,
            warcinfo_id,
            opened: Instant::now(),
            jobs: Vec::new(),
        })
    }

    /// Appends one fetch's record pair. A [`WriteError::Field`] leaves the batch
    /// untouched; any other error leaves it unusable until [`Batch::recover`].
    pub(crate) fn append(&mut self, x: &Exchange, tag: JobTag) -> Result<(), WriteError> {
        write_pair(&mut self.writer, x, Some(self.warcinfo_id), || {
            self.tmp.clone()
        })?;
        self.jobs.push(tag);
        Ok(())
    }

    /// After an append failed (say, the spool is full): forgets the failed pair,
    /// truncating the temp file back to the end of the last complete one, so the
    /// batch takes records again. Everything appended before is kept.
    pub(crate) fn recover(&mut self) -> Result<(), WriteError> {
        let tmp = &self.tmp;
        self.writer
            .recover(|pending, len| pending.rewind(len).map_err(std::io::Error::from))
            .map_err(|e| WriteError::Warc {
                path: tmp.clone(),
                // Never "disk full": a batch that cannot be cut back is lost.
                source: std::io::Error::other(format!("cannot cut a failed record off: {e}"))
                    .into(),
            })
    }

    /// Records pairs held.
    pub(crate) fn records(&self) -> usize {
        self.jobs.len()
    }

    /// The published name this batch will have.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Bytes written so far (compressed).
    pub(crate) fn bytes(&self) -> u64 {
        self.writer.position()
    }

    /// When the batch was started.
    pub(crate) fn opened(&self) -> Instant {
        self.opened
    }

    /// Flushes, fsyncs and renames the batch into its folder. On an error before
    /// the rename (say, the spool is full) nothing is published and the batch is
    /// kept whole: publishing may be tried again, or the batch dropped (which
    /// deletes its temp file).
    pub(crate) fn publish(&mut self) -> Result<Published, WriteError> {
        let bytes = self.writer.position();
        self.writer.flush().map_err(|e| WriteError::Warc {
            path: self.tmp.clone(),
            source: e.into(),
        })?;
        self.writer.get_mut().commit_in_place()?;
        Ok(Published {
            name: self.name.clone(),
            bytes,
            jobs: std::mem::take(&mut self.jobs),
        })
    }
}

/// Writes a robots file (one record pair) and publishes it; returns its name.
pub(crate) fn publish_robots(
    publisher: &Publisher,
    x: &Exchange,
    gzip_level: u32,
) -> Result<String, WriteError> {
    let mut pending = publisher.begin(ROBOTS_PRIORITY, FileKind::Robots)?;
    let name = pending.name().to_string();
    let tmp = pending.tmp_path().to_owned();
    let mut writer = WarcWriter::with_options(&mut pending, options(gzip_level));
    write_pair(&mut writer, x, None, || tmp.clone())?;
    writer.finish().map_err(|e| WriteError::Warc {
        path: tmp,
        source: e.into(),
    })?;
    pending.commit()?;
    Ok(name)
}

fn options(gzip_level: u32) -> WriterOptions {
    WriterOptions {
        gzip_level: Some(gzip_level.min(9)),
        block_digest: false,
        ..WriterOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(protocols: Vec<&'static str>) -> Exchange {
        Exchange {
            target_uri: "https://example.org/".into(),
            date: WarcDate::now(),
            ip: None,
            request: Bytes::from_static(b"GET / HTTP/1.1\r\nHost: example.org\r\n\r\n"),
            raw: Bytes::from_static(b"HTTP/1.1 200 OK\r\n\r\nhi"),
            payload_digest: Sha1Digest::of(b"hi"),
            deflated: None,
            truncated: None,
            precompressed: false,
            depth: None,
            hops: None,
            fetch: FetchTime { start_ms: 1, ms: 2 },
            protocols,
        }
    }

    fn protocols(h: &WarcHeaders) -> Vec<&str> {
        h.iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(PROTOCOL_FIELD))
            .map(|(_, v)| v)
            .collect()
    }

    #[test]
    fn both_records_name_each_protocol_in_order() {
        let (response, request) = pair_headers(&exchange(vec!["h2", "tls/1.3"]), None).unwrap();
        assert_eq!(protocols(&response), ["h2", "tls/1.3"]);
        assert_eq!(protocols(&request), ["h2", "tls/1.3"]);
        let (response, request) = pair_headers(&exchange(Vec::new()), None).unwrap();
        assert!(protocols(&response).is_empty() && protocols(&request).is_empty());
    }
}
