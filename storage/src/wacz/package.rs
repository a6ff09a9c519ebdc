//! The JSON files of a WACZ 1.1.1 package, written and read back side by side:
//! `datapackage.json` ([`DataPackage`]), `datapackage-digest.json` ([`digest_json`])
//! and the lines of `pages/pages.jsonl` ([`PAGES_HEADER`], [`page_line`]).
//!
//! Field names and forms follow the WACZ 1.1.1 specification and what py-wacz
//! writes: each resource has `name` (the file name, lower case), `path`, `hash`
//! (`sha256:` and 64 hex digits) and `bytes`; the package has `profile`
//! `data-package`, `wacz_version`, `created` (RFC 3339, UTC), `software` and a
//! `title`.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cdxj::SpacedFormatter;

/// The WACZ version written.
pub const WACZ_VERSION: &str = "1.1.1";

/// The first line of `pages/pages.jsonl`.
pub const PAGES_HEADER: &str =
    "{\"format\": \"json-pages-1.0\", \"id\": \"pages\", \"title\": \"All Pages\"}\n";

/// One file of the package, as `datapackage.json` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    /// The file name, lower case.
    pub name: String,
    /// Its path in the ZIP (`archive/x.warc.gz`).
    pub path: String,
    /// `sha256:` and the hex SHA-256 of its bytes.
    pub hash: String,
    /// Its size.
    pub bytes: u64,
}

/// `datapackage.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataPackage {
    /// Always `data-package`.
    pub profile: String,
    /// [`WACZ_VERSION`].
    pub wacz_version: String,
    /// A title for the collection.
    pub title: String,
    /// When the package was written, `YYYY-MM-DDThh:mm:ssZ`.
    pub created: String,
    /// The writer, `polycrawl <version>`.
    pub software: String,
    /// Every file of the package but the two JSON files at its root.
    pub resources: Vec<Resource>,
}

impl DataPackage {
    /// The file's bytes (pretty-printed JSON, as py-wacz writes it).
    pub fn encode(&self) -> Vec<u8> {
        // Serializing plain strings and numbers cannot fail.
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Parses [`Self::encode`]'s bytes (or any package with these fields).
    pub fn decode(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// `sha256:` and the hex digest `hasher` has computed.
pub fn sha256_text(hasher: Sha256) -> String {
    let digest = hasher.finalize();
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for b in &digest {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

/// `datapackage-digest.json` for the bytes of `datapackage.json`.
pub fn digest_json(datapackage: &[u8]) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(datapackage);
    #[derive(Serialize)]
    struct Digest<'a> {
        path: &'a str,
        hash: String,
    }
    let value = Digest {
        path: "datapackage.json",
        hash: sha256_text(h),
    };
    serde_json::to_vec_pretty(&value).unwrap_or_default()
}

/// A 14-digit CDX timestamp as `YYYY-MM-DDThh:mm:ssZ`.
pub fn iso_date(timestamp: &str) -> String {
    let t = |a: usize, b: usize| timestamp.get(a..b).unwrap_or("00");
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        timestamp.get(0..4).unwrap_or("1970"),
        t(4, 6),
        t(6, 8),
        t(8, 10),
        t(10, 12),
        t(12, 14)
    )
}

/// A `pages.jsonl` line (with its `\n`) for a page captured at a 14-digit CDX
/// `timestamp`: `id` (32 hex digits, from the capture), `url`, `ts`.
pub fn page_line(url: &str, timestamp: &str) -> String {
    let ts = iso_date(timestamp);
    #[derive(Serialize)]
    struct Page<'a> {
        id: String,
        url: &'a str,
        ts: String,
    }
    // A stable id, unique per capture: the first 16 bytes of SHA-256(ts url).
    let mut h = Sha256::new();
    h.update(timestamp.as_bytes());
    h.update(b" ");
    h.update(url.as_bytes());
    let id: String = h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // Spaced separators, as py-wacz writes: the package validator (frictionless)
    // also reads the file as CSV, and compact lines read as blank rows there.
    let mut out = Vec::with_capacity(64 + url.len());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, SpacedFormatter);
    // Serializing two strings into a Vec cannot fail.
    let _ = Page { id, url, ts }.serialize(&mut ser);
    let mut line = String::from_utf8(out).unwrap_or_default();
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_files() {
        let package = DataPackage {
            profile: "data-package".into(),
            wacz_version: WACZ_VERSION.into(),
            title: "t".into(),
            created: "2026-11-26T15:00:00Z".into(),
            software: "polycrawl 0.1.0".into(),
            resources: vec![Resource {
                name: "a.warc.gz".into(),
                path: "archive/a.warc.gz".into(),
                hash: "sha256:00".into(),
                bytes: 3,
            }],
        };
        let bytes = package.encode();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            "{\n  \"profile\": \"data-package\",\n  \"wacz_version\": \"1.1.1\",\n  \"title\": \"t\",\n  \
             \"created\": \"2026-11-26T15:00:00Z\",\n  \"software\": \"polycrawl 0.1.0\",\n  \
             \"resources\": [\n    {\n      \"name\": \"a.warc.gz\",\n      \"path\": \"archive/a.warc.gz\",\n      \
             \"hash\": \"sha256:00\",\n      \"bytes\": 3\n    }\n  ]\n}"
        );
        assert_eq!(DataPackage::decode(&bytes).unwrap(), package);
        // The SHA-256 of "abc" (FIPS 180-2 test vector).
        assert_eq!(
            String::from_utf8(digest_json(b"abc")).unwrap(),
            "{\n  \"path\": \"datapackage.json\",\n  \
             \"hash\": \"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"\n}"
        );
        assert_eq!(
            page_line("http://a.example/\"x", "20261126150544"),
            "{\"id\": \"363e368d07cbff17d0582942efa92761\", \"url\": \"http://a.example/\\\"x\", \"ts\": \"2026-11-26T15:05:44Z\"}\n"
        );
        let header: serde_json::Value = serde_json::from_str(PAGES_HEADER).unwrap();
        assert_eq!(header["format"], "json-pages-1.0");
    }
}
