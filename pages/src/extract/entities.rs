//! Decoding of attribute values: character references (HTML Standard 13.2.5.72-80,
//! "in an attribute" rules), NUL to U+FFFD, bytes as UTF-8 with invalid sequences
//! replaced (the page's declared charset is not consulted: see the `extract` docs).
//!
//! Named references use the Standard's full table ([`ENTITIES`]) with its
//! longest-match rule: `&notit;` is `¬it;`, `&notin;` is `∉`. In an attribute, a
//! reference that matched without its `;` and is followed by `=` or an ASCII
//! alphanumeric stays literal, which is what keeps `?a=1&copy=2` and `&lang=en`
//! intact while `&amp` alone still decodes.

use super::entity_table::ENTITIES;

/// Longest name in [`ENTITIES`] (`CounterClockwiseContourIntegral;`).
const MAX_NAME: usize = 32;

/// Appends the decoded form of the raw attribute value `raw` to `out`.
pub fn decode_attr_value(raw: &[u8], out: &mut String) {
    let mut rest = raw;
    loop {
        let Some(i) = memchr::memchr2(b'&', 0, rest) else {
            push_lossy(rest, out);
            return;
        };
        push_lossy(&rest[..i], out);
        if rest[i] == 0 {
            out.push(char::REPLACEMENT_CHARACTER);
            rest = &rest[i + 1..];
            continue;
        }
        let after = &rest[i + 1..];
        let used = match after.first() {
            Some(b'#') => numeric(&after[1..], out).map(|n| n + 1),
            Some(c) if c.is_ascii_alphanumeric() => named(after, out),
            _ => None,
        };
        match used {
            Some(n) => rest = &after[n..],
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
}

fn push_lossy(bytes: &[u8], out: &mut String) {
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Decodes `x41;` / `65` (after `&#`); returns the bytes used, or `None` if no digit
/// follows (then `&#` is literal text).
fn numeric(s: &[u8], out: &mut String) -> Option<usize> {
    let (radix, start) = match s.first() {
        Some(b'x' | b'X') => (16, 1),
        _ => (10, 0),
    };
    let mut value: u32 = 0;
    let mut end = start;
    while let Some(d) = s.get(end).and_then(|&c| (c as char).to_digit(radix)) {
        // Saturate: anything past U+10FFFF becomes U+FFFD anyway.
        value = value.saturating_mul(radix).saturating_add(d).min(0x11_0000);
        end += 1;
    }
    if end == start {
        return None;
    }
    if s.get(end) == Some(&b';') {
        end += 1;
    }
    out.push(numeric_char(value));
    Some(end)
}

/// The Standard's mapping of a numeric reference to a character (13.2.5.80).
fn numeric_char(value: u32) -> char {
    if (0x80..=0x9F).contains(&value) {
        if let Some(c) = WINDOWS_1252_C1[(value - 0x80) as usize] {
            return c;
        }
    }
    match value {
        0 => char::REPLACEMENT_CHARACTER,
        // Surrogates and values past U+10FFFF fail `from_u32`.
        v => char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER),
    }
}

/// Decodes a named reference at the start of `s` (after `&`); returns the bytes used.
fn named(s: &[u8], out: &mut String) -> Option<usize> {
    let run = s
        .iter()
        .take(MAX_NAME)
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    let longest = if s.get(run) == Some(&b';') {
        run + 1
    } else {
        run
    };
    for len in (1..=longest.min(MAX_NAME)).rev() {
        let name = &s[..len];
        let Ok(i) = ENTITIES.binary_search_by(|(n, _, _)| n.as_bytes().cmp(name)) else {
            continue;
        };
        if name[len - 1] != b';'
            && s.get(len)
                .is_some_and(|&c| c == b'=' || c.is_ascii_alphanumeric())
        {
            // Historical rule for attributes: leave `&copy=` and `&copyx` alone.
            return None;
        }
        let (_, first, second) = ENTITIES[i];
        out.extend(char::from_u32(first));
        if second != 0 {
            out.extend(char::from_u32(second));
        }
        return Some(len);
    }
    None
}

/// Windows-1252 meanings of numeric references in 0x80..=0x9F (13.2.5.80 table).
const WINDOWS_1252_C1: [Option<char>; 32] = [
    Some('\u{20AC}'),
    None,
    Some('\u{201A}'),
    Some('\u{0192}'),
    Some('\u{201E}'),
    Some('\u{2026}'),
    Some('\u{2020}'),
    Some('\u{2021}'),
    Some('\u{02C6}'),
    Some('\u{2030}'),
    Some('\u{0160}'),
    Some('\u{2039}'),
    Some('\u{0152}'),
    None,
    Some('\u{017D}'),
    None,
    None,
    Some('\u{2018}'),
    Some('\u{2019}'),
    Some('\u{201C}'),
    Some('\u{201D}'),
    Some('\u{2022}'),
    Some('\u{2013}'),
    Some('\u{2014}'),
    Some('\u{02DC}'),
    Some('\u{2122}'),
    Some('\u{0161}'),
    Some('\u{203A}'),
    Some('\u{0153}'),
    None,
    Some('\u{017E}'),
    Some('\u{0178}'),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(raw: &str) -> String {
        let mut out = String::new();
        decode_attr_value(raw.as_bytes(), &mut out);
        out
    }

    #[test]
    fn table_is_sorted_for_binary_search() {
        assert!(
            ENTITIES
                .windows(2)
                .all(|w| w[0].0.as_bytes() < w[1].0.as_bytes())
        );
        assert!(ENTITIES.iter().all(|(n, _, _)| n.len() <= MAX_NAME));
    }

    #[test]
    fn common_named_and_numeric_references() {
        assert_eq!(decode("/a?x=1&amp;y=2"), "/a?x=1&y=2");
        assert_eq!(decode("/a?x=1&#38;y=2&#x26;z=3&#X26;w"), "/a?x=1&y=2&z=3&w");
        assert_eq!(decode("&lt;&gt;&quot;&apos;&nbsp;"), "<>\"'\u{a0}");
        assert_eq!(decode("&#47&#x2F"), "//");
    }

    #[test]
    fn legacy_names_without_semicolon_follow_the_attribute_rule() {
        assert_eq!(decode("?a=1&amp"), "?a=1&");
        assert_eq!(decode("?a=1&amp b"), "?a=1& b");
        assert_eq!(decode("?a=1&copy=2"), "?a=1&copy=2");
        assert_eq!(decode("?a=1&copyx"), "?a=1&copyx");
        assert_eq!(decode("?a=1&lang=en&sect=3"), "?a=1&lang=en&sect=3");
        assert_eq!(decode("?a&amp;lang=en"), "?a&lang=en");
    }

    #[test]
    fn longest_match_and_unknown_names() {
        assert_eq!(decode("&notin;"), "\u{2209}");
        // In text `&notit;` is `¬it;`; in an attribute the alphanumeric after the
        // semicolon-less match keeps it literal.
        assert_eq!(decode("&notit;"), "&notit;");
        assert_eq!(decode("&not;it"), "\u{ac}it");
        assert_eq!(decode("&bogus;&"), "&bogus;&");
        assert_eq!(decode("&#;&#x;&#xZ"), "&#;&#x;&#xZ");
    }

    #[test]
    fn numeric_edge_values() {
        assert_eq!(
            decode("&#0;&#xD800;&#x110000;&#99999999999;"),
            "\u{fffd}".repeat(4)
        );
        assert_eq!(decode("&#x80;&#x81;&#150;"), "\u{20ac}\u{81}\u{2013}");
    }

    #[test]
    fn nul_and_invalid_utf8() {
        let mut out = String::new();
        decode_attr_value(b"a\0b\xffc", &mut out);
        assert_eq!(out, "a\u{fffd}b\u{fffd}c");
    }
}
