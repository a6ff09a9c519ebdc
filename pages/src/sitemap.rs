//! Sitemaps (the sitemaps.org protocol 0.9): the `<loc>` URLs of a `<urlset>` or a
//! `<sitemapindex>`, plain or gzip-compressed (`.xml.gz`: a gzip *body*, not a
//! `Content-Encoding`), with the protocol's bounds.
//!
//! [`parse`] takes a response body (after any `Content-Encoding` was undone) and
//! says whether it is a sitemap at all: a body whose root element is neither
//! `urlset` nor `sitemapindex` is `Ok(None)`, whatever its type, so the caller can
//! offer every non-HTML 2xx body. The crawl gives a sitemap's URLs the path of a
//! page's links (`service::pages`): canonicalized against the sitemap's URL, then
//! scope, traps, seen set, depth + 1. An index's child sitemaps are URLs like any
//! other, fetched and parsed in their turn; nesting is bounded by `max_depth` and the
//! host budgets as link chains are (the protocol forbids an index in an index, but a
//! server may serve one anyway).
//!
//! # Bounds
//!
//! - At most [`MAX_SITEMAP_BYTES`] (50 MB, the protocol's limit) of XML: a larger
//!   sitemap is an error. A gzip body is inflated up to that many bytes and no
//!   further (a gzip bomb costs at most that much memory and time).
//! - At most [`MAX_SITEMAP_URLS`] (50,000, the protocol's limit) URLs: the rest are
//!   dropped and [`Sitemap::truncated`] says so.
//! - A non-sitemap body costs a look at its first [`SNIFF_BYTES`] bytes (inflated
//!   first if it is gzip), never a full parse.
//!
//! Broken XML is an error naming the byte offset ([`SitemapError::Xml`]); the
//! caller takes no URL from it. Cost: O(body) time, memory O(body + URLs).
//!
//! This module must never fetch anything nor decide scope: it turns bytes into URL
//! strings, as written in the sitemap (not yet resolved or canonicalized).

use std::io::Read;

use flate2::read::MultiGzDecoder;
use quick_xml::Reader;
use quick_xml::events::Event;

/// Largest sitemap read, uncompressed (the protocol's 50 MB).
pub const MAX_SITEMAP_BYTES: usize = 50 * 1024 * 1024;

/// Most URLs taken from one sitemap (the protocol's 50,000).
pub const MAX_SITEMAP_URLS: usize = 50_000;

/// Bytes looked at to tell a sitemap from anything else.
pub const SNIFF_BYTES: usize = 1024;

/// The two kinds of sitemap document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SitemapKind {
    /// `<urlset>`: page URLs.
    UrlSet,
    /// `<sitemapindex>`: URLs of other sitemaps.
    Index,
}

/// What one sitemap lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sitemap {
    /// A URL set or an index.
    pub kind: SitemapKind,
    /// The `<loc>` URLs in document order, trimmed, entities resolved.
    pub locs: Vec<String>,
    /// More than [`MAX_SITEMAP_URLS`] were listed; the rest were dropped.
    pub truncated: bool,
}

/// Why a body that looked like a sitemap gave no URLs.
#[derive(Debug, thiserror::Error)]
pub enum SitemapError {
    /// The gzip body could not be inflated.
    #[error("sitemap: gzip body does not inflate: {0}")]
    Gzip(#[source] std::io::Error),
    /// Over [`MAX_SITEMAP_BYTES`] uncompressed.
    #[error("sitemap: larger than {MAX_SITEMAP_BYTES} bytes uncompressed")]
    TooLarge,
    /// Not well-formed XML (or not UTF-8).
    #[error("sitemap: bad XML at byte {at}: {message}")]
    Xml {
        /// Byte offset in the (inflated) document.
        at: u64,
        /// What the XML parser says.
        message: String,
    },
}

/// The sitemap in `body`, `Ok(None)` if `body` is no sitemap (see the module docs).
pub fn parse(body: &[u8]) -> Result<Option<Sitemap>, SitemapError> {
    if body.starts_with(&[0x1f, 0x8b]) {
        let mut gz = MultiGzDecoder::new(body);
        let mut xml = Vec::with_capacity(SNIFF_BYTES);
        (&mut gz)
            .take(SNIFF_BYTES as u64)
            .read_to_end(&mut xml)
            .map_err(SitemapError::Gzip)?;
        if !looks_like_sitemap(&xml) {
            return Ok(None);
        }
        gz.take((MAX_SITEMAP_BYTES + 1 - xml.len()) as u64)
            .read_to_end(&mut xml)
            .map_err(SitemapError::Gzip)?;
        if xml.len() > MAX_SITEMAP_BYTES {
            return Err(SitemapError::TooLarge);
        }
        return parse_xml(&xml);
    }
    if !looks_like_sitemap(&body[..body.len().min(SNIFF_BYTES)]) {
        return Ok(None);
    }
    if body.len() > MAX_SITEMAP_BYTES {
        return Err(SitemapError::TooLarge);
    }
    parse_xml(body)
}

/// The head of a document names a sitemap root element (perhaps with a prefix:
/// `<sm:urlset`); the parse decides.
fn looks_like_sitemap(head: &[u8]) -> bool {
    memchr::memmem::find(head, b"urlset").is_some()
        || memchr::memmem::find(head, b"sitemapindex").is_some()
}

/// Parses sitemap XML: the root must be `urlset` or `sitemapindex` (any namespace
/// prefix), `<loc>` is read two levels below it.
fn parse_xml(xml: &[u8]) -> Result<Option<Sitemap>, SitemapError> {
    let mut reader = Reader::from_reader(xml);
    reader.config_mut().check_end_names = true;
    let bad = |reader: &Reader<&[u8]>, message: String| SitemapError::Xml {
        at: reader.buffer_position(),
        message,
    };
    let mut kind = None;
    let mut depth = 0usize;
    let mut in_loc = false;
    let mut loc = String::new();
    let mut sitemap = Sitemap {
        kind: SitemapKind::UrlSet,
        locs: Vec::new(),
        truncated: false,
    };
    loop {
        let event = reader
            .read_event()
            .map_err(|e| bad(&reader, e.to_string()))?;
        match event {
            Event::Start(e) => {
                depth += 1;
                let name = e.local_name();
                match depth {
                    1 => match root_kind(name.as_ref()) {
                        Some(k) => kind = Some(k),
                        None => return Ok(None),
                    },
                    3 if name.as_ref() == b"loc" => {
                        in_loc = true;
                        loc.clear();
                    }
                    _ => {}
                }
            }
            Event::End(_) => {
                if in_loc && depth == 3 {
                    in_loc = false;
                    let url = loc.trim();
                    if !url.is_empty() {
                        if sitemap.locs.len() == MAX_SITEMAP_URLS {
                            sitemap.truncated = true;
                            break;
                        }
                        sitemap.locs.push(url.to_owned());
                    }
                }
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            Event::Empty(e) if depth == 0 => {
                // `<urlset/>`: an empty sitemap.
                match root_kind(e.local_name().as_ref()) {
                    Some(k) => kind = Some(k),
                    None => return Ok(None),
                }
                break;
            }
            Event::Text(t) if in_loc => {
                let text = t.xml_content().map_err(|e| bad(&reader, e.to_string()))?;
                loc.push_str(&text);
            }
            Event::CData(t) if in_loc => {
                let text = t.decode().map_err(|e| bad(&reader, e.to_string()))?;
                loc.push_str(&text);
            }
            Event::GeneralRef(r) if in_loc => {
                loc.push(general_ref(&r).map_err(|message| bad(&reader, message))?);
            }
            Event::Eof => {
                return match kind {
                    // No root element at all: not a sitemap.
                    None => Ok(None),
                    Some(_) => Err(bad(&reader, "document ends inside its root element".into())),
                };
            }
            _ => {}
        }
    }
    sitemap.kind = kind.unwrap_or(SitemapKind::UrlSet);
    Ok(Some(sitemap))
}

/// The kind of a sitemap whose root element is `name` (`None`: not a sitemap).
fn root_kind(name: &[u8]) -> Option<SitemapKind> {
    match name {
        b"urlset" => Some(SitemapKind::UrlSet),
        b"sitemapindex" => Some(SitemapKind::Index),
        _ => None,
    }
}

/// The character of a character reference or one of XML's five named entities.
fn general_ref(r: &quick_xml::events::BytesRef<'_>) -> Result<char, String> {
    if let Some(c) = r.resolve_char_ref().map_err(|e| e.to_string())? {
        return Ok(c);
    }
    let name = r.decode().map_err(|e| e.to_string())?;
    match &*name {
        "amp" => Ok('&'),
        "lt" => Ok('<'),
        "gt" => Ok('>'),
        "quot" => Ok('"'),
        "apos" => Ok('\''),
        other => Err(format!("unknown entity &{other};")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    const URLSET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/one.html</loc><lastmod>2024-01-01</lastmod></url>
  <url>
    <loc>
      http://a.test/two?x=1&amp;y=&#50;
    </loc>
  </url>
  <url><loc><![CDATA[http://a.test/three]]></loc></url>
  <url><priority>0.5</priority></url>
</urlset>
"#;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn reads_a_urlset() {
        let s = parse(URLSET.as_bytes()).unwrap().unwrap();
        assert_eq!(s.kind, SitemapKind::UrlSet);
        assert_eq!(
            s.locs,
            [
                "http://a.test/one.html",
                "http://a.test/two?x=1&y=2",
                "http://a.test/three"
            ]
        );
        assert!(!s.truncated);
    }

    #[test]
    fn reads_an_index() {
        let xml = r#"<?xml version="1.0"?>
<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sm:sitemap><sm:loc>http://a.test/a.xml</sm:loc></sm:sitemap>
  <sm:sitemap><sm:loc>http://a.test/b.xml.gz</sm:loc><sm:lastmod>2024</sm:lastmod></sm:sitemap>
</sm:sitemapindex>"#;
        let s = parse(xml.as_bytes()).unwrap().unwrap();
        assert_eq!(s.kind, SitemapKind::Index);
        assert_eq!(s.locs, ["http://a.test/a.xml", "http://a.test/b.xml.gz"]);
    }

    #[test]
    fn reads_a_gzip_body() {
        let s = parse(&gzip(URLSET.as_bytes())).unwrap().unwrap();
        assert_eq!(s.locs.len(), 3);
    }

    #[test]
    fn other_documents_are_not_sitemaps() {
        assert_eq!(parse(b"<html><body>urlset</body></html>").unwrap(), None);
        assert_eq!(parse(b"%PDF-1.4 ...").unwrap(), None);
        assert_eq!(parse(b"").unwrap(), None);
        assert_eq!(parse(&gzip(b"just some text")).unwrap(), None);
        // Names a sitemap root in a comment, but its root is an RSS feed.
        let rss = b"<?xml version=\"1.0\"?><!-- <urlset> --><rss><channel/></rss>";
        assert_eq!(parse(rss).unwrap(), None);
        assert_eq!(parse(b"<urlset/>").unwrap().map(|s| s.locs.len()), Some(0));
    }

    #[test]
    fn bad_xml_is_a_clear_error() {
        let err = parse(b"<urlset><url><loc>http://a.test/</lox></url></urlset>").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("sitemap: bad XML at byte "), "{text}");
        let cut = &URLSET.as_bytes()[..120];
        assert!(matches!(parse(cut), Err(SitemapError::Xml { .. })));
        let entity = b"<urlset><url><loc>http://a.test/&nope;</loc></url></urlset>";
        assert!(parse(entity).unwrap_err().to_string().contains("&nope;"));
        let mut broken = gzip(URLSET.as_bytes());
        let n = broken.len();
        broken[n / 2] ^= 0xff;
        assert!(parse(&broken).is_err());
    }

    #[test]
    fn caps_urls_and_size() {
        let mut xml = String::from("<urlset>");
        for i in 0..MAX_SITEMAP_URLS + 10 {
            xml.push_str(&format!("<url><loc>http://a.test/{i}</loc></url>"));
        }
        xml.push_str("</urlset>");
        let s = parse(xml.as_bytes()).unwrap().unwrap();
        assert_eq!(s.locs.len(), MAX_SITEMAP_URLS);
        assert!(s.truncated);
        assert_eq!(
            s.locs.last().unwrap(),
            &format!("http://a.test/{}", MAX_SITEMAP_URLS - 1)
        );

        // A gzip bomb: 60 MB of blanks inside a urlset, a few dozen KB compressed.
        let mut bomb = GzEncoder::new(Vec::new(), Compression::best());
        bomb.write_all(b"<urlset>").unwrap();
        let blanks = vec![b' '; 1 << 20];
        for _ in 0..60 {
            bomb.write_all(&blanks).unwrap();
        }
        bomb.write_all(b"</urlset>").unwrap();
        let bomb = bomb.finish().unwrap();
        assert!(bomb.len() < 1 << 20);
        assert!(matches!(parse(&bomb), Err(SitemapError::TooLarge)));

        let mut big = b"<urlset>".to_vec();
        big.resize(MAX_SITEMAP_BYTES + 1, b' ');
        assert!(matches!(parse(&big), Err(SitemapError::TooLarge)));
    }
}
