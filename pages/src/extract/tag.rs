//! The attribute part of a tag, following the HTML Standard's tokenizer states
//! (13.2.5.32-42): names end at whitespace, `/`, `>` or `=`; values are
//! double-quoted, single-quoted or unquoted; a quote opens a value only right after
//! `=`; `<a href="x"title=y>` and `<a/href=x>` work; EOF inside a tag drops the tag.

use super::meta::is_ws;

/// How a tag ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TagEnd {
    /// The position after the closing `>`.
    pub next: usize,
    /// The tag ended with `/>`.
    pub self_closing: bool,
}

/// Walks the attributes of a tag from `pos` (just after its name), calling
/// `on_attr(name, raw_value)` for each (`raw_value` empty when the attribute has
/// none). Returns `None` if the input ends inside the tag.
#[inline]
pub(super) fn attributes(
    html: &[u8],
    mut pos: usize,
    mut on_attr: impl FnMut(&[u8], &[u8]),
) -> Option<TagEnd> {
    loop {
        // Before attribute name.
        while is_ws(*html.get(pos)?) {
            pos += 1;
        }
        match html[pos] {
            b'>' => {
                return Some(TagEnd {
                    next: pos + 1,
                    self_closing: false,
                });
            }
            b'/' => {
                pos += 1;
                if *html.get(pos)? == b'>' {
                    return Some(TagEnd {
                        next: pos + 1,
                        self_closing: true,
                    });
                }
                continue;
            }
            _ => {}
        }
        // Attribute name: the first character may be `=`.
        let name_start = pos;
        pos += 1;
        loop {
            match *html.get(pos)? {
                c if is_ws(c) => break,
                b'/' | b'>' | b'=' => break,
                _ => pos += 1,
            }
        }
        let name = &html[name_start..pos];
        // After attribute name.
        while is_ws(*html.get(pos)?) {
            pos += 1;
        }
        if html[pos] != b'=' {
            on_attr(name, &[]);
            continue;
        }
        // Before attribute value.
        pos += 1;
        while is_ws(*html.get(pos)?) {
            pos += 1;
        }
        match html[pos] {
            q @ (b'"' | b'\'') => {
                let len = memchr::memchr(q, &html[pos + 1..])?;
                on_attr(name, &html[pos + 1..pos + 1 + len]);
                pos += len + 2;
            }
            b'>' => {
                on_attr(name, &[]);
                return Some(TagEnd {
                    next: pos + 1,
                    self_closing: false,
                });
            }
            _ => {
                let start = pos;
                loop {
                    match *html.get(pos)? {
                        c if is_ws(c) => break,
                        b'>' => break,
                        _ => pos += 1,
                    }
                }
                on_attr(name, &html[start..pos]);
            }
        }
    }
}

/// Where a tag without interesting attributes ends: when no quote comes before the
/// first `>`, no quoted value can hide it. Otherwise the full walk decides.
/// Returns the position after the `>`.
#[inline]
pub(super) fn skip(html: &[u8], pos: usize) -> Option<usize> {
    let rest = &html[pos..];
    match memchr::memchr3(b'>', b'"', b'\'', rest) {
        Some(i) if rest[i] == b'>' => Some(pos + i + 1),
        Some(_) => attributes(html, pos, |_, _| {}).map(|end| end.next),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(tag: &str) -> (Vec<(String, String)>, Option<TagEnd>) {
        let mut out = Vec::new();
        let end = attributes(tag.as_bytes(), 0, |n, v| {
            out.push((
                String::from_utf8_lossy(n).into(),
                String::from_utf8_lossy(v).into(),
            ));
        });
        (out, end)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn value_forms() {
        let tag = " a=\"1>\" b='2\"' c=3 d\ne = 4 f>rest";
        let (a, end) = attrs(tag);
        assert_eq!(
            a,
            pairs(&[
                ("a", "1>"),
                ("b", "2\""),
                ("c", "3"),
                ("d", ""),
                ("e", "4"),
                ("f", "")
            ])
        );
        let next = tag.find("f>").unwrap() + 2;
        assert_eq!(
            end,
            Some(TagEnd {
                next,
                self_closing: false
            })
        );
    }

    #[test]
    fn odd_tokens() {
        assert_eq!(attrs("/href=x>").0, pairs(&[("href", "x")]));
        assert_eq!(attrs(" a=\"1\"b=2/>").0, pairs(&[("a", "1"), ("b", "2/")]));
        assert_eq!(attrs(" =x>").0, pairs(&[("=x", "")]));
        assert_eq!(attrs(" a\"b=c>").0, pairs(&[("a\"b", "c")]));
        assert_eq!(attrs(" a= >").0, pairs(&[("a", "")]));
        assert_eq!(attrs(" a=1 />").1.map(|e| e.self_closing), Some(true));
    }

    #[test]
    fn eof_inside_a_tag_drops_it() {
        assert_eq!(attrs(" a=\"1>").1, None);
        assert_eq!(attrs(" a=1").1, None);
        assert_eq!(attrs(" a").1, None);
        assert_eq!(attrs(" /").1, None);
    }

    #[test]
    fn skip_agrees_with_the_full_walk() {
        for t in [
            " a=1>",
            " a=\"x>y\">",
            "/>",
            ">",
            " a='",
            " b",
            " a=1/>",
            " a\"=>",
        ] {
            let full = attributes(t.as_bytes(), 0, |_, _| {}).map(|end| end.next);
            assert_eq!(skip(t.as_bytes(), 0), full, "{t:?}");
        }
    }
}
