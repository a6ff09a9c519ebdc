//! The page's character encoding, as far as it matters for links, in the HTML
//! Standard's order (13.2.3): a byte order mark (UTF-8, UTF-16LE, UTF-16BE), else
//! the HTTP `Content-Type` charset, else a `<meta charset>` or
//! `<meta http-equiv=content-type>` found by the prescan of the first 1,024 bytes
//! (13.2.3.2), else autodetection and the default: UTF-8 if the whole page is
//! valid UTF-8, windows-1252 otherwise.
//!
//! UTF-16 pages (by BOM or HTTP) are transcoded to UTF-8 before scanning, since
//! the scanner reads ASCII-compatible bytes; a `<meta>` cannot declare UTF-16
//! (the Standard reads that as UTF-8).

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};

use super::tag;

/// How much of the page the prescan reads, as in the Standard.
const PRESCAN_BYTES: usize = 1024;

/// The page's encoding, decided as a browser decides it (see the module docs).
pub fn page_encoding(html: &[u8], content_type: Option<&str>) -> &'static Encoding {
    declared_encoding(html, content_type).unwrap_or_else(|| super::page::undeclared_encoding(html))
}

/// The encoding the page or its HTTP header declares, if any: byte order mark,
/// then HTTP charset, then the `<meta>` prescan. UTF-16 comes only from the first
/// two.
pub fn declared_encoding(html: &[u8], content_type: Option<&str>) -> Option<&'static Encoding> {
    if let Some((enc, _)) = Encoding::for_bom(html) {
        return Some(enc);
    }
    if let Some(enc) = content_type.and_then(charset_param).and_then(label) {
        return Some(if enc == X_USER_DEFINED {
            WINDOWS_1252
        } else {
            enc
        });
    }
    prescan(&html[..html.len().min(PRESCAN_BYTES)])
}

/// Whether pages in `enc` are transcoded to UTF-8 before scanning.
pub(super) fn is_utf16(enc: &'static Encoding) -> bool {
    enc == UTF_16LE || enc == UTF_16BE
}

/// What a `<meta>` declaration means (13.2.3.2 step "get an encoding", then
/// UTF-16 as UTF-8 and `x-user-defined` as windows-1252).
fn from_meta(enc: &'static Encoding) -> &'static Encoding {
    if is_utf16(enc) {
        UTF_8
    } else if enc == X_USER_DEFINED {
        WINDOWS_1252
    } else {
        enc
    }
}

fn label(label: &str) -> Option<&'static Encoding> {
    Encoding::for_label(label.as_bytes())
}

/// The `charset=` value in a `Content-Type` or meta `content` (the Standard's
/// "extract a character encoding from a meta element").
pub fn charset_param(s: &str) -> Option<&str> {
    let lower = s.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("charset") {
        let mut p = from + i + "charset".len();
        let b = s.as_bytes();
        while b.get(p).is_some_and(|&c| super::meta::is_ws(c)) {
            p += 1;
        }
        if b.get(p) != Some(&b'=') {
            from = p;
            continue;
        }
        p += 1;
        while b.get(p).is_some_and(|&c| super::meta::is_ws(c)) {
            p += 1;
        }
        return match b.get(p) {
            Some(&q @ (b'"' | b'\'')) => {
                let rest = &s[p + 1..];
                rest.find(q as char).map(|end| &rest[..end])
            }
            Some(_) => {
                let rest = &s[p..];
                let end = rest.find(|c: char| c == ';' || c.is_ascii_whitespace());
                Some(&rest[..end.unwrap_or(rest.len())])
            }
            None => None,
        };
    }
    None
}

/// The encoding declared by the first `<meta>` that declares one in `head`, read
/// as the Standard's prescan reads: comments are skipped (`<!-->` included), other
/// tags' attributes are walked so a `<meta` inside a value does not count, and
/// `<!`, `</`, `<?` constructs end at the first `>`.
fn prescan(head: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    while let Some(off) = memchr::memchr(b'<', &head[pos..]) {
        let lt = pos + off;
        let rest = &head[lt..];
        if rest.starts_with(b"<!--") {
            // The first `-->` whose `--` may overlap the opening `<!--`.
            pos = lt + 2 + memchr::memmem::find(&head[lt + 2..], b"-->")? + 3;
            continue;
        }
        let is_meta = rest.len() > 5
            && rest[1..5].eq_ignore_ascii_case(b"meta")
            && (super::meta::is_ws(rest[5]) || rest[5] == b'/');
        if is_meta {
            let (declared, next) = meta_declaration(head, lt + 5)?;
            if let Some(enc) = declared {
                return Some(from_meta(enc));
            }
            pos = next;
            continue;
        }
        let letter = |i: usize| rest.get(i).is_some_and(u8::is_ascii_alphabetic);
        if letter(1) || (rest.get(1) == Some(&b'/') && letter(2)) {
            // Another tag: its name, then its attributes.
            let name_end = rest
                .iter()
                .position(|&c| super::meta::is_ws(c) || c == b'>')
                .map_or(head.len(), |i| lt + i);
            pos = tag::skip(head, name_end)?;
        } else if matches!(rest.get(1), Some(b'!' | b'/' | b'?')) {
            pos = lt + memchr::memchr(b'>', rest)? + 1;
        } else {
            pos = lt + 1;
        }
    }
    None
}

/// The attributes of a `<meta>` from `pos`: the encoding it declares, if it does
/// (with the Standard's `need pragma` rules), and where the tag ends.
fn meta_declaration(head: &[u8], pos: usize) -> Option<(Option<&'static Encoding>, usize)> {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let (mut got_pragma, mut need_pragma) = (false, None::<bool>);
    let mut charset: Option<Option<&'static Encoding>> = None;
    let end = tag::attributes(head, pos, |name, value| {
        let name = name.to_ascii_lowercase();
        if seen.contains(&name) {
            return;
        }
        match &name[..] {
            b"http-equiv" => got_pragma |= value.eq_ignore_ascii_case(b"content-type"),
            b"content" if charset.is_none() => {
                let text = String::from_utf8_lossy(value);
                if let Some(enc) = charset_param(&text).and_then(label) {
                    charset = Some(Some(enc));
                    need_pragma = Some(true);
                }
            }
            b"charset" => {
                charset = Some(label(String::from_utf8_lossy(value).trim()));
                need_pragma = Some(false);
            }
            _ => {}
        }
        seen.push(name);
    })?;
    let declared = match need_pragma {
        None => None,
        Some(true) if !got_pragma => None,
        Some(_) => charset.flatten(),
    };
    Some((declared, end.next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_in_priority_order() {
        let meta = b"<html><head><meta charset=\"iso-8859-1\"><title>x</title>";
        assert_eq!(
            page_encoding(meta, None),
            WINDOWS_1252,
            "iso-8859-1 is windows-1252"
        );
        assert_eq!(page_encoding(meta, Some("text/html; charset=UTF-8")), UTF_8);
        let mut bom = b"\xEF\xBB\xBF".to_vec();
        bom.extend_from_slice(meta);
        assert_eq!(
            page_encoding(&bom, Some("text/html; charset=koi8-r")),
            UTF_8
        );
        assert_eq!(page_encoding(b"\xFF\xFE<\0a\0", None), UTF_16LE);
        assert_eq!(
            page_encoding(b"\xFE\xFF\0<\0a", Some("charset=gbk")),
            UTF_16BE
        );
        assert_eq!(
            page_encoding(b"<p>x", Some("text/html; charset=utf-16le")),
            UTF_16LE
        );
    }

    #[test]
    fn undeclared_pages_are_utf8_when_valid_else_windows_1252() {
        assert_eq!(declared_encoding(b"<p>no declaration", None), None);
        assert_eq!(page_encoding(b"<p>no declaration", None), UTF_8);
        assert_eq!(page_encoding("<p>caf\u{e9}".as_bytes(), None), UTF_8);
        assert_eq!(page_encoding(b"<p>caf\xe9", None), WINDOWS_1252);
    }

    #[test]
    fn http_equiv_and_odd_forms() {
        let page = b"<!-- <meta charset=koi8-r> --><META HTTP-EQUIV='Content-Type' \
            CONTENT='text/html; charset = \"windows-1251\"'>";
        assert_eq!(page_encoding(page, None), encoding_rs::WINDOWS_1251);
        assert_eq!(page_encoding(b"<meta charset=utf-16le>", None), UTF_8);
        assert_eq!(
            page_encoding(b"<meta charset=x-user-defined>", None),
            WINDOWS_1252
        );
        assert_eq!(
            page_encoding(b"<meta charset=bogus><meta charset=gbk>", None),
            encoding_rs::GBK
        );
        let late = format!("{}<meta charset=gbk>", " ".repeat(PRESCAN_BYTES));
        assert_eq!(page_encoding(late.as_bytes(), None), UTF_8);
        assert_eq!(
            charset_param("text/html;charset=Shift_JIS"),
            Some("Shift_JIS")
        );
        assert_eq!(charset_param("text/html; charsetx=1"), None);
    }

    #[test]
    fn prescan_follows_the_standard() {
        let enc = |s: &[u8]| declared_encoding(s, None).map(|e| e.name());
        // `<!-->` is a whole comment.
        assert_eq!(enc(b"<!--><meta charset=gbk>"), Some("GBK"));
        // A `<meta` inside another tag's attribute value is not a tag.
        assert_eq!(
            enc(b"<a title='<meta charset=gbk>'><meta charset=koi8-r>"),
            Some("KOI8-R")
        );
        // `content` without `http-equiv=content-type` declares nothing.
        assert_eq!(enc(b"<meta content='text/html; charset=gbk'>"), None);
        assert_eq!(
            enc(b"<meta http-equiv=content-type content='text/html; charset=gbk'>"),
            Some("GBK")
        );
        // `charset` wins over `content`, whatever the order; the first of a
        // duplicate attribute counts.
        assert_eq!(
            enc(b"<meta content='charset=gbk' http-equiv=Content-Type charset=koi8-r>"),
            Some("KOI8-R")
        );
        assert_eq!(enc(b"<meta charset=gbk charset=koi8-r>"), Some("GBK"));
        // End tags and `<?...>` are skipped to their `>`.
        assert_eq!(
            enc(b"<?x <meta charset=gbk> ?><meta charset=koi8-r>"),
            Some("KOI8-R")
        );
    }
}
