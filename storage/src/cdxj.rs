//! One CDXJ index line: [`CdxjLine::encode`] and [`CdxjLine::parse`], side by side.
//!
//! The pywb / OutbackCDX convention, as `warcio`'s `cdxj-indexer` writes it:
//!
//! ```text
//! com,example)/a?x=1 20261122100000 {"url": "http://example.com/a?x=1", "mime": "text/html", "status": "200", "digest": "sha1:HTA2TNY3AA66NWDWA26A4TJXUALGCGM4", "length": "512", "offset": "1024", "filename": "2026/50-dl-1-00001795341600000000.warc.gz"}
//! ```
//!
//! SURT key, a space, the 14-digit UTC timestamp (`WARC-Date`), a space, and a flat
//! JSON object of strings: the target URL, the HTTP `Content-Type` without parameters
//! (`warc/revisit` for a revisit record, as pywb writes), the HTTP status (`-` when
//! unknown), the payload digest, and where the record's gzip member is: its
//! `length` and `offset` in `filename` (relative to the repository's `warc/` folder).
//! A file of lines sorts bytewise (`LC_ALL=C sort`), so one URL's captures are
//! adjacent and in time order.
//!
//! The JSON is written and read with serde_json (escapes included, so a line never
//! holds a raw newline); the reader takes any object whose fields of interest are
//! strings or numbers, so hand-made or third-party lines with extra fields parse too.

use std::borrow::Cow;
use std::io;

/// `mime` of a revisit record's line.
pub const REVISIT_MIME: &str = "warc/revisit";

/// One line of a CDXJ file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CdxjLine {
    /// SURT key of the URL.
    pub key: String,
    /// `YYYYMMDDhhmmss`, UTC.
    pub timestamp: String,
    /// The URL as captured (`WARC-Target-URI`).
    pub url: String,
    /// HTTP `Content-Type` without parameters, or [`REVISIT_MIME`]; `-` if unknown.
    pub mime: String,
    /// HTTP status code, or `-`.
    pub status: String,
    /// `WARC-Payload-Digest` (`sha1:BASE32`), or `-`.
    pub digest: String,
    /// Length of the record's gzip member.
    pub length: u64,
    /// Offset of the record's gzip member in `filename`.
    pub offset: u64,
    /// The WARC file, relative to the repository's `warc/` folder.
    pub filename: String,
}

impl CdxjLine {
    /// True for the line of a revisit record.
    pub fn is_revisit(&self) -> bool {
        self.mime == REVISIT_MIME
    }

    /// Appends the line and its `\n` to `out`.
    pub fn encode(&self, out: &mut String) {
        out.push_str(&self.key);
        out.push(' ');
        out.push_str(&self.timestamp);
        out.push(' ');
        let length = self.length.to_string();
        let offset = self.offset.to_string();
        let fields = [
            ("url", self.url.as_str()),
            ("mime", &self.mime),
            ("status", &self.status),
            ("digest", &self.digest),
            ("length", &length),
            ("offset", &offset),
            ("filename", &self.filename),
        ];
        let mut json = Vec::with_capacity(256);
        let mut ser = serde_json::Serializer::with_formatter(&mut json, SpacedFormatter);
        // Serializing string pairs into a Vec cannot fail.
        let _ = serde::Serializer::collect_map(&mut ser, fields);
        out.push_str(&String::from_utf8_lossy(&json));
        out.push('\n');
    }

    /// Parses one line (without its `\n`). The JSON's fields are read in one pass
    /// into borrowed text (a copy only for a value with escapes or a number), not
    /// through a map of owned values: the index of a crawl is read whole at its
    /// end (`polycrawl crawl`'s summary), so this is per stored page. O(line bytes).
    pub fn parse(line: &str) -> Result<Self, String> {
        let (key, rest) = line.split_once(' ').ok_or("no space after the key")?;
        let (timestamp, json) = rest.split_once(' ').ok_or("no space after the timestamp")?;
        if key.is_empty() {
            return Err("empty key".into());
        }
        if timestamp.len() != 14 || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("bad timestamp {timestamp:?}"));
        }
        let fields: Fields<'_> =
            serde_json::from_str(json).map_err(|e| format!("bad JSON: {e}"))?;
        let number = |name: &str, value: Option<Text<'_>>| -> Result<u64, String> {
            let value = value.ok_or_else(|| format!("missing {name}"))?.0;
            value
                .parse::<u64>()
                .map_err(|_| format!("{name} is not a number: {value:?}"))
        };
        let dash = |value: Option<Text<'_>>| value.map_or_else(|| "-".into(), Text::into_string);
        let url = fields
            .url
            .filter(|u| !u.0.is_empty())
            .ok_or("missing url")?
            .into_string();
        let filename = fields
            .filename
            .filter(|f| !f.0.is_empty())
            .ok_or("missing filename")?
            .into_string();
        Ok(CdxjLine {
            key: key.to_owned(),
            timestamp: timestamp.to_owned(),
            url,
            mime: dash(fields.mime),
            status: dash(fields.status),
            digest: dash(fields.digest),
            length: number("length", fields.length)?,
            offset: number("offset", fields.offset)?,
            filename,
        })
    }
}

/// The fields of a line's JSON object that [`CdxjLine::parse`] reads; any other
/// field is skipped.
#[derive(serde::Deserialize)]
struct Fields<'a> {
    #[serde(borrow, default)]
    url: Option<Text<'a>>,
    #[serde(borrow, default)]
    mime: Option<Text<'a>>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    digest: Option<Text<'a>>,
    #[serde(borrow, default)]
    length: Option<Text<'a>>,
    #[serde(borrow, default)]
    offset: Option<Text<'a>>,
    #[serde(borrow, default)]
    filename: Option<Text<'a>>,
}

/// A JSON string or number as text: borrowed from the line when the string has no
/// escapes; a number as it prints (`512`). Anything else is an error.
struct Text<'a>(Cow<'a, str>);

impl Text<'_> {
    fn into_string(self) -> String {
        self.0.into_owned()
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Cow<'de, str>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a number")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v))
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_owned()))
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v))
            }

            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_string()))
            }

            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_string()))
            }

            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Cow::Owned(
                    serde_json::Number::from_f64(v)
                        .map_or_else(|| v.to_string(), |n| n.to_string()),
                ))
            }
        }
        d.deserialize_any(Visit).map(Text)
    }
}

/// serde_json's compact output with `", "` and `": "` separators, as pywb and
/// warcio's `cdxj-indexer` write CDXJ.
pub(crate) struct SpacedFormatter;

impl serde_json::ser::Formatter for SpacedFormatter {
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CdxjLine {
        CdxjLine {
            key: "com,example)/a?x=1".into(),
            timestamp: "20261122100000".into(),
            url: "http://example.com/a?x=1".into(),
            mime: "text/html".into(),
            status: "200".into(),
            digest: "sha1:HTA2TNY3AA66NWDWA26A4TJXUALGCGM4".into(),
            length: 512,
            offset: 1024,
            filename: "2026/50-dl-1-00001795341600000000.warc.gz".into(),
        }
    }

    #[test]
    fn golden_line() {
        let mut out = String::new();
        sample().encode(&mut out);
        assert_eq!(
            out,
            "com,example)/a?x=1 20261122100000 {\"url\": \"http://example.com/a?x=1\", \
             \"mime\": \"text/html\", \"status\": \"200\", \
             \"digest\": \"sha1:HTA2TNY3AA66NWDWA26A4TJXUALGCGM4\", \"length\": \"512\", \
             \"offset\": \"1024\", \"filename\": \"2026/50-dl-1-00001795341600000000.warc.gz\"}\n"
        );
        assert_eq!(CdxjLine::parse(out.trim_end()).unwrap(), sample());
    }

    #[test]
    fn escapes_round_trip() {
        let mut line = sample();
        line.url = "http://example.com/\"q\"\\\n\u{1}é😀".into();
        let mut out = String::new();
        line.encode(&mut out);
        assert_eq!(out.matches('\n').count(), 1, "{out}");
        assert_eq!(CdxjLine::parse(out.trim_end()).unwrap(), line);
    }

    #[test]
    fn reads_third_party_forms() {
        let text = r#"com,example)/ 20140127171200 {"url":"http://example.com","mime":"text/html","status":"200","length":1046,"offset":334,"filename":"dupes.warc.gz","extra":"\u00e9\ud83d\ude00"}"#;
        let line = CdxjLine::parse(text).unwrap();
        assert_eq!((line.length, line.offset), (1046, 334));
        assert_eq!(line.digest, "-");
        assert_eq!(line.filename, "dupes.warc.gz");
    }

    #[test]
    fn rejects_damaged_lines() {
        for bad in [
            "",
            "key",
            "key 2026 {}",
            "key 2026112210000x {}",
            r#"key 20261122100000 {"url": "u"}"#,
            r#"key 20261122100000 {"url": "u", "filename": "f", "length": "x", "offset": "1"}"#,
            r#"key 20261122100000 {"url": "u", "filename": "f", "length": "1", "offset": "1""#,
            r#"key 20261122100000 {"url": "u", "filename": "f", "length": "1", "offset": "1"} x"#,
            r#"key 20261122100000 {"url": "\ud800", "filename": "f", "length": "1", "offset": "1"}"#,
            r#"key 20261122100000 {"url": true, "filename": "f", "length": "1", "offset": "1"}"#,
            r#"key 20261122100000 {"url": "u", "filename": "f", "length": [1], "offset": "1"}"#,
        ] {
            assert!(CdxjLine::parse(bad).is_err(), "{bad}");
        }
    }
}
