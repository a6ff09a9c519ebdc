//! The fuzz targets' entry functions, one per target (see `fuzzing/fuzz/README.md`).
//!
//! Each takes arbitrary bytes and drives one real parser of the crawler over them,
//! the way the crawler does: the robots.txt parser, the downloader's response-head
//! parser and the chunked decoder, the WARC reader, the spool file readers, the
//! control-connection frames and messages, the link extractor and URL
//! canonicalization. A panic, a hang or an unbounded allocation in one of them is a
//! bug in the parser, not here. The same functions serve the nightly cargo-fuzz
//! targets and the stable replay test, so the committed corpora and crash
//! reproducers are checked by every `cargo test`.
//!
//! This crate must never catch a panic or bend the input to avoid one: it only
//! splits the fuzz input into the arguments a parser takes. It checks a few
//! invariants the parsers promise (a canonical URL is a fixed point; the chunked
//! decoder consumes no more than it is given), which panic on violation.

use std::io::Cursor;

use bytes::BytesMut;
use tokio_util::codec::Decoder;
use url::Url;

/// A target: its name (the cargo-fuzz target and corpus directory) and its entry.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by name.
pub const TARGETS: [Target; 9] = [
    ("robots", robots),
    ("http_head", http_head),
    ("chunked", chunked),
    ("warc", warc),
    ("spool_formats", spool_formats),
    ("frames", frames),
    ("extract", extract),
    ("canon", canon),
    ("sitemap", sitemap),
];

/// Splits `data` at its first newline (of at most `max` bytes): a short string
/// argument (a user agent, a content type, a base URL) and the rest.
fn split_arg(data: &[u8], max: usize) -> (&str, &[u8]) {
    match data.iter().take(max).position(|&b| b == b'\n') {
        Some(nl) => (
            std::str::from_utf8(&data[..nl]).unwrap_or(""),
            &data[nl + 1..],
        ),
        None => ("", data),
    }
}

/// robots.txt: parses `data` for the agent `polycrawl` and asks about a few paths,
/// including every `/`-started word of the body itself.
pub fn robots(data: &[u8]) {
    let mut robots = manager::robots::Robots::parse(data, "polycrawl/0.1 (+http://x.test/)");
    let _ = robots.crawl_delay();
    for path in ["/", "", "/a/b?c=d", "/%41%2f", "/*$"] {
        let _ = robots.is_allowed(path);
    }
    let text = String::from_utf8_lossy(data);
    for word in text
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
        .take(32)
    {
        let _ = robots.is_allowed(word);
    }
    let _ = robots.sitemaps().count();
    let _ = robots.take_sitemaps();
}

/// The downloader's response head: the incremental end-of-head search, fed in
/// growing prefixes, then the head parser; and the stored-response reader
/// (`spool::http`) over the same bytes, payload and entity body included.
pub fn http_head(data: &[u8]) {
    let mut end = downloader::head::HeadEnd::default();
    let step = 1 + data.first().map_or(0, |&b| usize::from(b % 16));
    let mut found = None;
    let mut len = 0;
    while found.is_none() && len < data.len() {
        len = (len + step).min(data.len());
        found = end.find(&data[..len]);
    }
    if let Some(n) = found {
        assert!(n <= data.len(), "head end {n} beyond {} bytes", data.len());
        if let Ok(head) = downloader::head::parse(&data[..n], 64, 16 * 1024) {
            let _ = head.tokens("transfer-encoding");
            let _ = head.get("content-length");
        }
    }
    if let Ok(stored) = spool::http::StoredResponse::parse(data) {
        let _ = stored.codings();
        let _ = stored.location();
        if let Ok(body) = stored.entity_body(64 * 1024) {
            assert!(body.bytes.len() <= 64 * 1024, "entity body beyond its cap");
        }
    }
}

/// The chunked decoder, fed `data` in pieces whose size the first byte picks, the
/// way the downloader feeds it from the socket.
pub fn chunked(data: &[u8]) {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let piece = 1 + usize::from(first);
    let mut decoder = spool::http::ChunkedDecoder::default();
    let mut out = Vec::new();
    for chunk in body.chunks(piece) {
        match decoder.feed(chunk, &mut out) {
            Ok(used) => {
                assert!(used <= chunk.len(), "consumed {used} of {}", chunk.len());
                if decoder.is_done() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    assert!(out.len() <= body.len(), "decoded more than the input");
}

/// The WARC reader over `data`, plain or gzip records, until its end or first error.
pub fn warc(data: &[u8]) {
    let mut reader =
        spool::warc::WarcReader::new(Cursor::new(data)).with_limits(64 * 1024, 1 << 20);
    let mut rec = spool::warc::Record::default();
    while let Ok(true) = reader.read_into(&mut rec) {}
}

/// Every spool file format: the first byte picks the reader (requests, exchange,
/// outcomes, assignment), the rest is the file.
pub fn spool_formats(data: &[u8]) {
    use spool::formats::{
        assignment::AssignmentTable, exchange::ExchangeReader, outcomes::OutcomeReader,
        requests::RequestReader, urls::Request,
    };
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let file = Cursor::new(file);
    let mut request = Request::new("");
    match pick % 4 {
        0 => {
            if let Ok(mut reader) = RequestReader::new(file) {
                while let Ok(true) = reader.read_into(&mut request) {}
            }
        }
        1 => {
            if let Ok(mut reader) = ExchangeReader::new(file) {
                while let Ok(true) = reader.read_into(&mut request) {}
            }
        }
        2 => {
            if let Ok(reader) = OutcomeReader::new(file) {
                for outcome in reader {
                    if outcome.is_err() {
                        break;
                    }
                }
            }
        }
        _ => {
            let _ = AssignmentTable::read(file);
        }
    }
}

/// Control connections: the frame decoder over `data` as a byte stream (a 64 KiB
/// frame limit), and every frame it yields decoded as a message.
pub fn frames(data: &[u8]) {
    let mut codec = spool::protocol::FrameCodec { max: 64 * 1024 };
    let mut src = BytesMut::from(data);
    while let Ok(Some(frame)) = codec.decode_eof(&mut src) {
        let _ = spool::protocol::Message::from_bytes(&frame);
    }
    let _ = spool::protocol::Message::from_bytes(data);
}

/// The link extractor: the first line is the Content-Type (may be empty), the rest
/// the page, fetched from a fixed URL.
pub fn extract(data: &[u8]) {
    let (content_type, html) = split_arg(data, 200);
    let content_type = (!content_type.is_empty()).then_some(content_type);
    let Ok(page_url) = Url::parse("http://www.example.test/dir/page.html?q=1") else {
        return;
    };
    let mut extractor = pages::extract::Extractor::new();
    let mut out = pages::extract::PageLinks::new();
    extractor.extract(html, &page_url, content_type, &mut out);
}

/// URL canonicalization: the first line is a base URL (may be empty), the rest the
/// URL text. A canonical URL must be a fixed point and survive its sort key.
pub fn canon(data: &[u8]) {
    use pages::canon;
    let (base, text) = split_arg(data, 2100);
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let config = canon::CanonConfig::default();
    let base = Url::parse(base).ok();
    let Ok(url) = canon::parse(text, base.as_ref(), &config) else {
        return;
    };
    let again = canon::canonicalize(url.clone(), &config);
    assert_eq!(
        again.as_ref(),
        Ok(&url),
        "canonicalization is not idempotent"
    );
    let key = canon::key::reversed_host_key(&url);
    let back = canon::key::url_from_key(&key);
    assert_eq!(
        back.as_ref().ok(),
        Some(&url),
        "key {key:?} does not give back {url}"
    );
}

/// Sitemaps: [`pages::sitemap::parse`] over `data` as a body (plain XML, or
/// gzip when it starts with the gzip magic). It must keep its bounds: at most
/// [`MAX_SITEMAP_URLS`](pages::sitemap::MAX_SITEMAP_URLS) URLs, each from
/// the document (no longer than it, inflated).
pub fn sitemap(data: &[u8]) {
    use pages::sitemap;
    if let Ok(Some(map)) = sitemap::parse(data) {
        assert!(map.locs.len() <= sitemap::MAX_SITEMAP_URLS, "too many URLs");
        assert!(
            map.locs
                .iter()
                .all(|l| l.len() <= sitemap::MAX_SITEMAP_BYTES),
            "a URL longer than the document may be"
        );
    }
}
