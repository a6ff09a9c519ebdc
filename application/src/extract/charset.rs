//! The page's character encoding, as far as it matters for links: a byte order mark,
//! else the HTTP `Content-Type` charset, else a `<meta charset>` or
//! `<meta http-equiv=content-type>` in the first 1,024 bytes (the HTML Standard's
//! prescan, 13.2.3.2), else UTF-8.
//!
//! Scanning is byte-based and needs an ASCII-compatible encoding: UTF-16 pages
//! (announced by a byte order mark) are scanned as if UTF-8 and yield nothing useful.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

use super::tag;

/// How much of the page the prescan reads, as in the Standard.
const PRESCAN_BYTES: usize = 1024;

/// The encoding to decode the page's attribute values with.
pub fn page_encoding(html: &[u8], content_type: Option<&str>) -> &'static Encoding {
    if let Some((enc, _)) = Encoding::for_bom(html) {
        return usable(enc);
    }
    if let Some(enc) = content_type.and_then(charset_param).and_then(label) {
        return usable(enc);
    }
    prescan(&html[..html.len().min(PRESCAN_BYTES)]).map_or(UTF_8, usable)
}

/// UTF-16 declared in a `<meta>` means UTF-8 (the Standard); we also cannot scan it
/// when declared over HTTP. `x-user-defined` means windows-1252.
fn usable(enc: &'static Encoding) -> &'static Encoding {
    if enc == encoding_rs::UTF_16BE || enc == encoding_rs::UTF_16LE {
        UTF_8
    } else if enc == encoding_rs::X_USER_DEFINED {
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

/// The encoding declared by the first `<meta>` that declares one in `head`.
fn prescan(head: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    while let Some(off) = memchr::memchr(b'<', &head[pos..]) {
        let lt = pos + off;
        let rest = &head[lt..];
        if rest.starts_with(b"<!--") {
            pos = lt + 4 + memchr::memmem::find(&head[lt + 4..], b"-->")? + 3;
            continue;
        }
        let is_meta = rest.len() > 5
            && rest[1..5].eq_ignore_ascii_case(b"meta")
            && (super::meta::is_ws(rest[5]) || rest[5] == b'/');
        if !is_meta {
            pos = lt + 1;
            continue;
        }
        let (mut charset, mut content, mut refresh_like) = (None, None, false);
        let end = tag::attributes(head, lt + 5, |name, value| {
            let value = String::from_utf8_lossy(value);
            if name.eq_ignore_ascii_case(b"charset") && charset.is_none() {
                charset = Some(value.trim().to_owned());
            } else if name.eq_ignore_ascii_case(b"content") && content.is_none() {
                content = Some(value.into_owned());
            } else if name.eq_ignore_ascii_case(b"http-equiv") {
                refresh_like |= value.eq_ignore_ascii_case("content-type");
            }
        })?;
        let declared = charset.or_else(|| {
            refresh_like
                .then(|| {
                    content
                        .as_deref()
                        .and_then(charset_param)
                        .map(str::to_owned)
                })
                .flatten()
        });
        if let Some(enc) = declared.as_deref().and_then(label) {
            return Some(enc);
        }
        pos = end.next;
    }
    None
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
        assert_eq!(page_encoding(b"<p>no declaration", None), UTF_8);
    }

    #[test]
    fn http_equiv_and_odd_forms() {
        let page = b"<!-- <meta charset=koi8-r> --><META HTTP-EQUIV='Content-Type' \
            CONTENT='text/html; charset = \"windows-1251\"'>";
        assert_eq!(page_encoding(page, None), encoding_rs::WINDOWS_1251);
        assert_eq!(page_encoding(b"<meta charset=utf-16le>", None), UTF_8);
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
}
