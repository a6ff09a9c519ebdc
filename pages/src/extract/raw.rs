//! Where the stretches that are not markup end: comments, bogus comments, raw text,
//! RCDATA and script data (HTML Standard 13.2.5.2-29 and 13.2.5.43-52). Each
//! returns `None` when the page ends first: then the rest of the page is text.

use memchr::memmem;

use super::meta::is_ws;

/// A bogus comment (and a doctype) ends at the first `>`.
pub(super) fn bogus_comment(html: &[u8], start: usize) -> Option<usize> {
    memchr::memchr(b'>', &html[start..]).map(|i| start + i + 1)
}

/// The end of a comment whose body starts at `start` (after `<!--`): `-->` or
/// `--!>`, with `<!-->` and `<!--->` closing at once.
pub(super) fn comment_end(html: &[u8], start: usize) -> Option<usize> {
    let rest = &html[start..];
    if rest.starts_with(b">") {
        return Some(start + 1);
    }
    if rest.starts_with(b"->") {
        return Some(start + 2);
    }
    let mut p = start;
    loop {
        let q = p + memmem::find(&html[p..], b"--")? + 2;
        match html.get(q) {
            Some(b'>') => return Some(q + 1),
            Some(b'!') if html.get(q + 1) == Some(&b'>') => return Some(q + 2),
            Some(b'-') => p = q - 1,
            Some(_) => p = q,
            None => return None,
        }
    }
}

/// Whether `html[at..]` is `name` (ASCII case-insensitive) followed by whitespace,
/// `/` or `>`: the shape of an end tag that closes raw text.
fn is_name_then_delim(html: &[u8], at: usize, name: &[u8]) -> bool {
    html.get(at..at + name.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(name))
        && html
            .get(at + name.len())
            .is_some_and(|&c| is_ws(c) || c == b'/' || c == b'>')
}

/// Raw text and RCDATA: the position of the `<` of the closing `</name`, where
/// tokenizing resumes; `None` if the page ends first.
pub(super) fn raw_text_end(html: &[u8], mut pos: usize, name: &[u8]) -> Option<usize> {
    loop {
        let lt = pos + memmem::find(&html[pos..], b"</")?;
        if is_name_then_delim(html, lt + 2, name) {
            return Some(lt);
        }
        pos = lt + 1;
    }
}

/// Script data: like raw text, except that after `<!--` a `<script>` opens a
/// "double-escaped" stretch in which `</script>` does not close the element.
pub(super) fn script_end(html: &[u8], mut pos: usize) -> Option<usize> {
    #[derive(PartialEq)]
    enum State {
        Data,
        Escaped,
        DoubleEscaped,
    }
    let mut state = State::Data;
    loop {
        let i = if state == State::Data {
            pos + memchr::memchr(b'<', &html[pos..])?
        } else {
            pos + memchr::memchr2(b'<', b'-', &html[pos..])?
        };
        pos = i + 1;
        if html[i] == b'-' {
            if html[i..].starts_with(b"-->") {
                state = State::Data;
                pos = i + 3;
            }
            continue;
        }
        let closes = html.get(i + 1) == Some(&b'/') && is_name_then_delim(html, i + 2, b"script");
        match state {
            State::Data | State::Escaped if closes => return Some(i),
            State::Data if html[i + 1..].starts_with(b"!--") => {
                state = State::Escaped;
                // Point at the `--` so that `<!-->` closes the escape at once.
                pos = i + 2;
            }
            State::Escaped if is_name_then_delim(html, i + 1, b"script") => {
                state = State::DoubleEscaped;
            }
            State::DoubleEscaped if closes => {
                state = State::Escaped;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_ends() {
        let end = |s: &str| comment_end(s.as_bytes(), 4).map(|i| s[i..].to_owned());
        assert_eq!(end("<!-->x"), Some("x".into()));
        assert_eq!(end("<!--->x"), Some("x".into()));
        assert_eq!(end("<!---->x"), Some("x".into()));
        assert_eq!(end("<!-- a -- b --->x"), Some("x".into()));
        assert_eq!(end("<!-- a --!>x"), Some("x".into()));
        assert_eq!(end("<!-- a --!->x-->y"), Some("y".into()));
        assert_eq!(end("<!-- a -- >"), None);
    }

    #[test]
    fn script_ends() {
        let end = |s: &str| script_end(s.as_bytes(), 0).map(|i| s[i..].to_owned());
        assert_eq!(end("a</script>x"), Some("</script>x".into()));
        assert_eq!(end("a</scriptx></script\n>"), Some("</script\n>".into()));
        assert_eq!(
            end("<!--<script></script>--></script>"),
            Some("</script>".into())
        );
        assert_eq!(end("<!--<script>--></script>"), Some("</script>".into()));
        assert_eq!(end("<!--></script>"), Some("</script>".into()));
        assert_eq!(end("<!-- <script> </script>"), None);
    }

    #[test]
    fn raw_text_ends() {
        let end = |s: &str, n: &[u8]| raw_text_end(s.as_bytes(), 0, n).map(|i| s[i..].to_owned());
        assert_eq!(
            end("a</styles></STYLE/>", b"style"),
            Some("</STYLE/>".into())
        );
        assert_eq!(end("a</style", b"style"), None);
    }
}
