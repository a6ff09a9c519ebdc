//! The CPU-heavy part of archiving a response, done in its fetch task before the
//! response queues for the writer thread: the payload digest (SHA-1) and the deflate
//! of the response record's block ([`spool::warc::BlockDeflater`]). Fetch tasks run
//! on every worker thread of the runtime, so this work spreads over every core,
//! while the one writer thread ([`crate::service::writer`]) only frames, copies and
//! writes, in order. Before, the writer thread did both for every page: half of
//! the downloader's CPU on one thread (BENCHMARKS.md, issue 9).
//!
//! A block that will be written stored is not deflated: a body that came with a
//! content coding (already compressed) and a record of at most
//! [`SMALL_RECORD`] bytes. A block up to
//! [`INLINE_MAX`] bytes is deflated on the worker thread itself with that thread's
//! reused deflater (igzip, ≈ 0.02 ms for a 13 KB page); a larger one on tokio's blocking
//! pool, so a worker thread never stalls for more than a fraction of a millisecond.
//!
//! This module must never change what is archived: the writer checks that a
//! deflated block matches the block it writes, and deflates it itself if not.

use std::cell::RefCell;

use bytes::Bytes;
use spool::warc::{BlockDeflater, DeflatedBlock, SMALL_RECORD, Sha1Digest, payload_digest};

/// Largest block deflated on a runtime worker thread.
pub(crate) const INLINE_MAX: usize = 256 * 1024;

/// Records larger than the block by at least this much (the WARC header).
const MIN_HEADER: usize = 256;

thread_local! {
    /// This thread's deflater and its level: its input buffer is kept between blocks.
    static DEFLATER: RefCell<Option<(u32, BlockDeflater)>> = const { RefCell::new(None) };
}

/// What the fetch task prepared for the writer.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// `WARC-Payload-Digest` of the response record.
    pub payload_digest: Sha1Digest,
    /// The response record's block, deflated; `None` when it is written stored (or
    /// if deflating failed: the writer then deflates it).
    pub deflated: Option<DeflatedBlock>,
}

/// Digests `payload` and deflates `raw` (the response record's block) at gzip
/// `level`, unless the record is written stored (`precompressed`, or small).
pub(crate) async fn prepare(
    raw: &Bytes,
    payload: &[u8],
    precompressed: bool,
    level: u32,
) -> Prepared {
    let payload_digest = payload_digest(payload);
    let deflated = if precompressed || raw.len() + MIN_HEADER <= SMALL_RECORD {
        None
    } else if raw.len() <= INLINE_MAX {
        deflate_here(raw, level)
    } else {
        let raw = raw.clone();
        let done = tokio::task::spawn_blocking(move || BlockDeflater::new(level).deflate(&raw));
        done.await.ok().and_then(Result::ok)
    };
    Prepared {
        payload_digest,
        deflated,
    }
}

/// Deflates `block` with this thread's deflater.
fn deflate_here(block: &[u8], level: u32) -> Option<DeflatedBlock> {
    DEFLATER.with_borrow_mut(|slot| {
        let deflater = match slot {
            Some((l, d)) if *l == level => d,
            _ => &mut slot.insert((level, BlockDeflater::new(level))).1,
        };
        deflater.deflate(block).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn deflates_what_the_writer_would_and_skips_stored_records() {
        let page = Bytes::from("HTTP/1.1 200 OK\r\n\r\n".to_owned() + &"<p>hi</p>".repeat(500));
        let p = prepare(&page, &page[19..], false, 1).await;
        assert_eq!(p.payload_digest, payload_digest(&page[19..]));
        let d = p.deflated.expect("a 4.5 KB page is deflated");
        assert!(d.compressed_len() < page.len() / 4);
        assert!(
            prepare(&page, &page[19..], true, 1)
                .await
                .deflated
                .is_none()
        );
        let small = Bytes::from_static(b"HTTP/1.1 404 Not Found\r\n\r\n");
        assert!(prepare(&small, b"", false, 1).await.deflated.is_none());
        let big = Bytes::from(vec![b'a'; INLINE_MAX + 1]);
        let d = prepare(&big, &big, false, 1).await.deflated;
        assert!(d.expect("deflated on the blocking pool").compressed_len() < 10_000);
    }
}
