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
//! The JSON writer escapes `"`, `\` and control characters, so a line never holds a
//! raw newline; the reader takes any flat object of string or number values (so
//! hand-made or third-party lines with extra fields parse too).

use std::fmt::Write as _;

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
        out.push_str(" {");
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
        for (i, (name, value)) in fields.into_iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('"');
            out.push_str(name);
            out.push_str("\": ");
            json_string(value, out);
        }
        out.push_str("}\n");
    }

    /// Parses one line (without its `\n`).
    pub fn parse(line: &str) -> Result<Self, String> {
        let (key, rest) = line.split_once(' ').ok_or("no space after the key")?;
        let (timestamp, json) = rest.split_once(' ').ok_or("no space after the timestamp")?;
        if key.is_empty() {
            return Err("empty key".into());
        }
        if timestamp.len() != 14 || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("bad timestamp {timestamp:?}"));
        }
        let mut line = CdxjLine {
            key: key.to_owned(),
            timestamp: timestamp.to_owned(),
            url: String::new(),
            mime: "-".into(),
            status: "-".into(),
            digest: "-".into(),
            length: 0,
            offset: 0,
            filename: String::new(),
        };
        let (mut has_length, mut has_offset) = (false, false);
        for (name, value) in parse_flat_object(json)? {
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("{name} is not a number: {value:?}"))
            };
            match name.as_str() {
                "url" => line.url = value.clone(),
                "mime" => line.mime = value.clone(),
                "status" => line.status = value.clone(),
                "digest" => line.digest = value.clone(),
                "length" => (line.length, has_length) = (number()?, true),
                "offset" => (line.offset, has_offset) = (number()?, true),
                "filename" => line.filename = value.clone(),
                _ => {}
            }
        }
        if line.url.is_empty() || line.filename.is_empty() || !has_length || !has_offset {
            return Err("missing url, filename, length or offset".into());
        }
        Ok(line)
    }
}

/// Appends `s` as a JSON string.
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Parses `{"name": value, ...}` whose values are strings or numbers.
fn parse_flat_object(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut p = Parser {
        chars: s.char_indices().peekable(),
    };
    p.expect('{')?;
    let mut fields = Vec::new();
    if p.eat('}') {
        return p.end(fields);
    }
    loop {
        let name = p.string()?;
        p.expect(':')?;
        let value = if p.peek() == Some('"') {
            p.string()?
        } else {
            p.number()?
        };
        fields.push((name, value));
        if p.eat('}') {
            return p.end(fields);
        }
        p.expect(',')?;
    }
}

struct Parser<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self
            .chars
            .next_if(|(_, c)| c.is_ascii_whitespace())
            .is_some()
        {}
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.chars.peek().map(|&(_, c)| c)
    }

    fn eat(&mut self, want: char) -> bool {
        self.skip_ws();
        self.chars.next_if(|&(_, c)| c == want).is_some()
    }

    fn expect(&mut self, want: char) -> Result<(), String> {
        if self.eat(want) {
            Ok(())
        } else {
            Err(format!("expected {want:?} in the JSON"))
        }
    }

    fn end<T>(&mut self, value: T) -> Result<T, String> {
        match self.peek() {
            None => Ok(value),
            Some(_) => Err("text after the JSON object".into()),
        }
    }

    fn number(&mut self) -> Result<String, String> {
        let mut out = String::new();
        while let Some((_, c)) = self
            .chars
            .next_if(|(_, c)| c.is_ascii_digit() || "+-.eE".contains(*c))
        {
            out.push(c);
        }
        if out.is_empty() {
            return Err("expected a string or a number in the JSON".into());
        }
        Ok(out)
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect('"')?;
        let mut out = String::new();
        loop {
            let (_, c) = self.chars.next().ok_or("unterminated JSON string")?;
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let (_, e) = self.chars.next().ok_or("unterminated escape")?;
                    match e {
                        '"' | '\\' | '/' => out.push(e),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        'u' => out.push(self.unicode_escape()?),
                        _ => return Err(format!("bad escape \\{e}")),
                    }
                }
                c if (c as u32) < 0x20 => return Err("raw control character in a string".into()),
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut v = 0;
        for _ in 0..4 {
            let (_, c) = self.chars.next().ok_or("short \\u escape")?;
            v = v * 16 + c.to_digit(16).ok_or("bad \\u escape")?;
        }
        Ok(v)
    }

    fn unicode_escape(&mut self) -> Result<char, String> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) {
            if !(self.chars.next().map(|x| x.1) == Some('\\')
                && self.chars.next().map(|x| x.1) == Some('u'))
            {
                return Err("lone surrogate".into());
            }
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return Err("bad surrogate pair".into());
            }
            let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
            return char::from_u32(c).ok_or_else(|| "bad code point".into());
        }
        char::from_u32(hi).ok_or_else(|| "lone surrogate".into())
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
        ] {
            assert!(CdxjLine::parse(bad).is_err(), "{bad}");
        }
    }
}
