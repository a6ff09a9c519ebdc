//! The little HTTP a repository needs: where a stored response's head ends, and its
//! status code and media type for the CDXJ line. Lenient on purpose: whatever the
//! server sent was recorded, and a head that does not parse is indexed with `-`.

/// Length of the HTTP head at the start of `block`, blank line included (`\r\n\r\n`,
/// or a bare `\n\n`); the whole block when there is no blank line.
pub(crate) fn head_len(block: &[u8]) -> usize {
    for (i, &b) in block.iter().enumerate() {
        if b != b'\n' {
            continue;
        }
        match block.get(i + 1..) {
            Some([b'\n', ..]) => return i + 2,
            Some([b'\r', b'\n', ..]) => return i + 3,
            _ => {}
        }
    }
    block.len()
}

/// The status code (`"200"`) and the `Content-Type` without parameters, lowercased
/// (`"text/html"`), of an HTTP response head; `"-"` for what is missing.
pub(crate) fn status_and_mime(head: &[u8]) -> (String, String) {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let status = lines
        .next()
        .filter(|l| l.starts_with("HTTP/"))
        .and_then(|l| l.split_whitespace().nth(1))
        .filter(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or("-")
        .to_owned();
    let mime = lines
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-type")
                .then_some(value)
        })
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|m| !m.is_empty() && !m.contains(char::is_whitespace))
        .unwrap_or_else(|| "-".to_owned());
    (status, mime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_reads_heads() {
        let block =
            b"HTTP/1.1 404 Not Found\r\nContent-Type: Text/HTML; charset=utf-8\r\n\r\nbody\r\n\r\n";
        let n = head_len(block);
        assert_eq!(&block[n..], b"body\r\n\r\n");
        assert_eq!(
            status_and_mime(&block[..n]),
            ("404".into(), "text/html".into())
        );
        assert_eq!(head_len(b"HTTP/1.0 200 OK\n\nx"), 17);
        assert_eq!(head_len(b"no blank line"), 13);
        assert_eq!(
            status_and_mime(b"HTTP/1.1 200\r\n\r\n"),
            ("200".into(), "-".into())
        );
        assert_eq!(status_and_mime(b"garbage"), ("-".into(), "-".into()));
        assert_eq!(
            status_and_mime(b"HTTP/1.1 301 Moved\r\nLocation: /x\r\n\r\n"),
            ("301".into(), "-".into())
        );
    }
}
