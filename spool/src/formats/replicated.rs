//! Replicated-URL files, version 1: the N most-linked URLs of a previous crawl,
//! written by `polycrawl assign --replicate N` and read by every part of the next
//! crawl (Cho and Garcia-Molina's replication of popular URLs, DESIGN.md section 10).
//! Every part holds the list: the part that owns a listed URL crawls it, every other
//! part treats it as already seen and never sends it (`app_core::parts`).
//!
//! # Format
//!
//! UTF-8 text, lines ending in `\n` (`\r\n` accepted), at most 64 KiB a line.
//!
//! 1. **Header** (line 1): `#polycrawl-replicated v1`.
//! 2. **URL lines**: the URL (canonical, as the application keeps it), one TAB, its
//!    back-link count in the previous crawl (distinct stored pages linking to it),
//!    decimal. A URL appears at most once. Readers keep the order (most linked
//!    first, as `assign` writes it); the count is information, no decision uses it.
//! 3. Blank lines and lines starting with `#` after the header are ignored.
//!
//! # Example
//!
//! Fields separated by a single TAB (this file is
//! `spool/src/formats/examples/replicated.txt` in the source tree):
//!
#![doc = concat!("```text\n", include_str!("examples/replicated.txt"), "```")]
//!
//! Reading is O(URLs) in time and memory (the URL and 8 bytes a line).

use std::collections::HashSet;
use std::io::{BufRead, Write};

use super::error::{FormatError, FormatErrorKind as K};
use super::text::{LineReader, LineWriter, check_url, parse_decimal, parse_header};

/// First word of a replicated-URL file's header.
pub const REPLICATED_TAG: &str = "#polycrawl-replicated";

/// The replicated URLs and their back-link counts, most linked first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplicatedList {
    /// `(URL, back-links)`, each URL once.
    pub urls: Vec<(String, u64)>,
}

impl ReplicatedList {
    /// Reads a whole replicated-URL file, checking every line.
    pub fn read<R: BufRead>(inner: R) -> Result<Self, FormatError> {
        let mut lines = LineReader::new(inner);
        parse_header(lines.next_line()?, REPLICATED_TAG, 1)?.deny_unknown(&[])?;
        let mut urls = Vec::new();
        let mut seen = HashSet::new();
        while let Some((line, text)) = lines.next_content_line()? {
            let bad = || FormatError::new(line, K::BadReplicated);
            let (url, count) = text.split_once('\t').ok_or_else(bad)?;
            let count = parse_decimal(count).ok_or_else(bad)?;
            check_url(url).map_err(|kind| FormatError::new(line, kind))?;
            if !seen.insert(url.to_owned()) {
                return Err(FormatError::new(
                    line,
                    K::DuplicateUrl {
                        url: url.to_owned(),
                    },
                ));
            }
            urls.push((url.to_owned(), count));
        }
        Ok(Self { urls })
    }

    /// Writes the list in its order. Checks every URL first (and refuses a repeat);
    /// leaves fsync and publish to the caller.
    pub fn write<W: Write>(&self, inner: W) -> Result<W, FormatError> {
        let mut w = LineWriter::new(inner);
        w.write_line(format!("{REPLICATED_TAG} v1\n").as_bytes())?;
        let mut seen = HashSet::new();
        for (url, count) in &self.urls {
            check_url(url).map_err(|kind| w.error(kind))?;
            if !seen.insert(url.as_str()) {
                return Err(w.error(K::DuplicateUrl { url: url.clone() }));
            }
            w.write_line(format!("{url}\t{count}\n").as_bytes())?;
        }
        w.flush()?;
        Ok(w.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("examples/replicated.txt");

    #[test]
    fn golden_bytes_and_round_trip() {
        let list = ReplicatedList {
            urls: vec![
                ("http://b.example/".to_owned(), 9),
                ("http://a.example/x".to_owned(), 3),
            ],
        };
        let bytes = list.write(Vec::new()).unwrap();
        let golden = "#polycrawl-replicated v1\nhttp://b.example/\t9\nhttp://a.example/x\t3\n";
        assert_eq!(String::from_utf8(bytes.clone()).unwrap(), golden);
        assert_eq!(ReplicatedList::read(&bytes[..]).unwrap(), list);
    }

    #[test]
    fn documented_example_parses() {
        let l = ReplicatedList::read(EXAMPLE.as_bytes()).unwrap();
        assert_eq!(l.urls.len(), 2);
        assert_eq!(l.urls[0], ("http://www.a.example/".to_owned(), 412));
    }

    #[test]
    fn bad_files_are_refused_with_their_line() {
        let err = |t: &str| ReplicatedList::read(t.as_bytes()).unwrap_err();
        let h = "#polycrawl-replicated v1\n";
        let e = err(&format!("{h}http://a.example/ 3\n"));
        assert!(matches!(e.kind, K::BadReplicated) && e.line == 2);
        let e = err(&format!("{h}http://a.example/\tx\n"));
        assert!(matches!(e.kind, K::BadReplicated));
        let e = err(&format!(
            "{h}http://a.example/\t1\n\n# c\nhttp://a.example/\t2\n"
        ));
        assert!(matches!(e.kind, K::DuplicateUrl { .. }) && e.line == 5);
        let e = err(&format!("{h}\t1\n"));
        assert!(matches!(e.kind, K::EmptyUrl));
        assert!(matches!(
            err("#polycrawl-replicated v1 n=3\n").kind,
            K::UnknownHeaderField { .. }
        ));
        assert!(matches!(
            err("#polycrawl-assignment v1 parts=2\n").kind,
            K::WrongKind { .. }
        ));
        let bad = ReplicatedList {
            urls: vec![("http://a/".to_owned(), 1), ("http://a/".to_owned(), 2)],
        };
        assert!(bad.write(Vec::new()).is_err());
    }
}
