//! Assignment files, version 1: which application part owns which host, computed by
//! `polycrawl assign` from a previous crawl's host graph and read by every part of
//! the next crawl (DESIGN.md section 10). A host the file does not name falls back to
//! the hash of the host (`app_core::parts`).
//!
//! # Format
//!
//! UTF-8 text, lines ending in `\n` (`\r\n` accepted), at most 64 KiB a line.
//!
//! 1. **Header** (line 1): `#polycrawl-assignment v1 parts=K`, with `K >= 1`.
//! 2. **Host lines**: the host name (lowercase, as canonical URLs hold it, without
//!    a port: a site's http and https sides are one host), one TAB, the part `0..K`,
//!    decimal.
//!    A host appears at most once.
//! 3. Blank lines and lines starting with `#` after the header are ignored.
//!
//! # Example
//!
//! Fields separated by a single TAB (this file is
//! `spool/src/formats/examples/assignment.txt` in the source tree):
//!
#![doc = concat!("```text\n", include_str!("examples/assignment.txt"), "```")]
//!
//! Reading is O(hosts) in time and memory: the whole table is held by the reader's
//! caller (about 40 bytes plus the host's length per host).

use std::collections::HashMap;
use std::io::{BufRead, Write};

use super::error::{FormatError, FormatErrorKind as K};
use super::text::{LineReader, LineWriter, parse_decimal, parse_header};

/// First word of an assignment file's header.
pub const ASSIGNMENT_TAG: &str = "#polycrawl-assignment";

/// A host-to-part table and the number of parts it was made for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AssignmentTable {
    /// The number of parts, `K >= 1`.
    pub parts: u32,
    /// Host to part, every part `< parts`.
    pub hosts: HashMap<String, u32>,
}

impl AssignmentTable {
    /// Reads a whole assignment file, checking every line.
    pub fn read<R: BufRead>(inner: R) -> Result<Self, FormatError> {
        let mut lines = LineReader::new(inner);
        let fields = parse_header(lines.next_line()?, ASSIGNMENT_TAG, 1)?;
        fields.deny_unknown(&["parts"])?;
        let parts = fields.number("parts", u32::MAX, "a decimal number of parts >= 1")?;
        if parts == 0 {
            return Err(FormatError::new(
                1,
                K::BadHeaderValue {
                    key: "parts",
                    value: "0".to_owned(),
                    expected: "a decimal number of parts >= 1",
                },
            ));
        }
        let mut hosts = HashMap::new();
        while let Some((line, text)) = lines.next_content_line()? {
            let bad = || FormatError::new(line, K::BadAssignment { parts });
            let (host, part) = text.split_once('\t').ok_or_else(bad)?;
            let part = parse_decimal(part)
                .and_then(|p| u32::try_from(p).ok())
                .filter(|p| *p < parts)
                .ok_or_else(bad)?;
            check_host(host).map_err(|kind| FormatError::new(line, kind))?;
            if hosts.insert(host.to_owned(), part).is_some() {
                return Err(FormatError::new(
                    line,
                    K::DuplicateHost {
                        host: host.to_owned(),
                    },
                ));
            }
        }
        Ok(Self { parts, hosts })
    }

    /// Writes the table, hosts sorted (so two runs on the same input give the same
    /// bytes). Checks every host and part first; leaves fsync and publish to the caller.
    pub fn write<W: Write>(&self, inner: W) -> Result<W, FormatError> {
        let mut w = LineWriter::new(inner);
        if self.parts == 0 {
            return Err(w.error(K::BadAssignment { parts: 0 }));
        }
        w.write_line(format!("{ASSIGNMENT_TAG} v1 parts={}\n", self.parts).as_bytes())?;
        let mut hosts: Vec<(&String, &u32)> = self.hosts.iter().collect();
        hosts.sort_unstable();
        let mut buf = Vec::with_capacity(128);
        for (host, part) in hosts {
            check_host(host).map_err(|kind| w.error(kind))?;
            if *part >= self.parts {
                return Err(w.error(K::BadAssignment { parts: self.parts }));
            }
            buf.clear();
            buf.extend_from_slice(host.as_bytes());
            buf.push(b'\t');
            buf.extend_from_slice(part.to_string().as_bytes());
            buf.push(b'\n');
            w.write_line(&buf)?;
        }
        w.flush()?;
        Ok(w.inner)
    }
}

/// A host field: non-empty, no whitespace, no control character, not a comment.
fn check_host(host: &str) -> Result<(), K> {
    if host.is_empty() {
        return Err(K::EmptyField);
    }
    match host
        .char_indices()
        .find(|(_, c)| c.is_whitespace() || c.is_control())
    {
        Some((byte, ch)) => Err(K::UrlChar { ch, byte }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("examples/assignment.txt");

    #[test]
    fn golden_bytes_and_round_trip() {
        let table = AssignmentTable {
            parts: 2,
            hosts: [
                ("b.example".to_owned(), 1),
                ("a.example:8080".to_owned(), 0),
            ]
            .into_iter()
            .collect(),
        };
        let bytes = table.write(Vec::new()).unwrap();
        let golden = "#polycrawl-assignment v1 parts=2\na.example:8080\t0\nb.example\t1\n";
        assert_eq!(String::from_utf8(bytes.clone()).unwrap(), golden);
        assert_eq!(AssignmentTable::read(&bytes[..]).unwrap(), table);
    }

    #[test]
    fn documented_example_parses() {
        let t = AssignmentTable::read(EXAMPLE.as_bytes()).unwrap();
        assert_eq!(t.parts, 4);
        assert_eq!(t.hosts.len(), 3);
        assert_eq!(t.hosts["b.example"], 3);
    }

    #[test]
    fn bad_files_are_refused_with_their_line() {
        let err = |t: &str| AssignmentTable::read(t.as_bytes()).unwrap_err();
        let h = "#polycrawl-assignment v1 parts=2\n";
        let e = err(&format!("{h}a.example\t2\n"));
        assert!(matches!(e.kind, K::BadAssignment { parts: 2 }) && e.line == 2);
        let e = err(&format!("{h}a.example 1\n"));
        assert!(matches!(e.kind, K::BadAssignment { .. }));
        let e = err(&format!("{h}a.example\t0\n\n# c\na.example\t1\n"));
        assert!(matches!(e.kind, K::DuplicateHost { .. }) && e.line == 5);
        let e = err(&format!("{h}\t1\n"));
        assert!(matches!(e.kind, K::EmptyField));
        assert!(matches!(
            err("#polycrawl-assignment v1 parts=0\n").kind,
            K::BadHeaderValue { key: "parts", .. }
        ));
        assert!(matches!(
            err("#polycrawl-exchange v1 from=0 to=1 parts=2\n").kind,
            K::WrongKind { .. }
        ));
        let bad = AssignmentTable {
            parts: 2,
            hosts: [("a".to_owned(), 5)].into_iter().collect(),
        };
        assert!(bad.write(Vec::new()).is_err());
    }
}
