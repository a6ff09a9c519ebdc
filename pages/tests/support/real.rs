//! The real-page corpus: documentation, wiki and CMS pages from a dozen
//! generators, packed by `tests/corpus/pack.py` (sources and licences in
//! `tests/corpus/README.md`), one gzip file per source.

use std::io::Read;
use std::path::{Path, PathBuf};

use url::Url;

/// One real page.
pub struct RealPage {
    /// Its URL on the made-up host of its source (relative paths kept).
    pub url: Url,
    /// Its bytes as installed.
    pub html: Vec<u8>,
}

/// One source's pages.
pub struct Source {
    /// The source's name (the file stem).
    pub name: String,
    /// Its pages, in packing order.
    pub pages: Vec<RealPage>,
}

/// The directory of packed sources.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// Every source, sorted by name. Panics with the reason if the corpus is
/// missing or malformed: the tests need it.
pub fn sources() -> Vec<Source> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/corpus is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".pages.gz"))
        .collect();
    files.sort();
    files.iter().map(|path| read(path)).collect()
}

fn read(path: &Path) -> Source {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("corpus file opens"))
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".pages.gz"))
        .expect("a .pages.gz name")
        .to_owned();
    let mut pages = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let eol = rest
            .iter()
            .position(|&b| b == b'\n')
            .expect("a header line");
        let header = std::str::from_utf8(&rest[..eol]).expect("an ASCII header");
        let mut fields = header.splitn(3, ' ');
        assert_eq!(fields.next(), Some("page"), "{name}: bad header {header:?}");
        let len: usize = fields
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a length");
        let url = Url::parse(fields.next().expect("a URL")).expect("a valid URL");
        let body = &rest[eol + 1..];
        assert!(body.len() >= len, "{name}: truncated page {url}");
        pages.push(RealPage {
            url,
            html: body[..len].to_vec(),
        });
        rest = &body[len..];
    }
    Source { name, pages }
}
