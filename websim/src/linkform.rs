//! How one link is written: the URL form and the attribute syntax. The target is
//! fixed by the model; only the spelling varies, and every spelling resolves (per
//! the WHATWG URL standard, after HTML attribute decoding) to the target's
//! canonical URL.
//!
//! Forms, drawn per link from the page's render stream:
//! - same-origin targets: absolute path 35 %, relative to the document's base
//!   (`p13.html`, `../d2/p15.html`, `./x`, `./`) 35 %, absolute URL 15 %,
//!   absolute URL with upper-case scheme and host 7 %, scheme-relative `//host/x` 8 %;
//! - other origins: absolute URL 75 %, upper-case 10 %, scheme-relative 15 % (when
//!   the scheme is the page's, else absolute);
//! - non-ASCII paths are written raw (UTF-8) 70 % of the time, else pre-encoded;
//! - a fragment (`#sec3`, or a bare `#`) on 10 %;
//! - `&` is always written `&amp;`; on 5 % one `/` is written `&#47;` or `&#x2F;`;
//! - quoting: double 70 %, single 20 %, unquoted 10 % (only when the value has none
//!   of `& ' " = < >` and no space); the attribute name is upper-case on 5 % (with an
//!   upper-case tag, see [`super::html`]) and has spaces around `=` on 3 %.
//!
//! With `--simple` ([`super::model::Params::simple`]) every link is an absolute path
//! 35 %, relative 35 % or a lower-case absolute URL, percent-encoded, without a
//! fragment, double-quoted, with a lower-case name and no spaces around `=`, and
//! `&` written raw (never a character reference).
//!
//! O(URL length) per link; `scratch` buffers are reused by the caller.

use std::fmt::Write as _;

use super::model::{Target, Web};
use super::rng::Rng;

/// What a relative reference is resolved against.
#[derive(Debug, Clone, Copy)]
pub struct Base<'a> {
    /// The web the page belongs to.
    pub web: &'a Web,
    /// The page's host.
    pub host: u32,
    /// `http` or `https`: the page's scheme.
    pub scheme: &'static str,
    /// Directory of the base URL's path (raw), ending in `/`.
    pub dir: &'a str,
}

/// Appends the reference from directory `base_dir` to `target` (both raw paths
/// starting with `/`; the target may carry a query).
pub fn relative(out: &mut String, base_dir: &str, target: &str) {
    let start = out.len();
    let (tpath, query) = match target.find('?') {
        Some(q) => target.split_at(q),
        None => (target, ""),
    };
    let (tdir, file) = tpath.rsplit_once('/').unwrap_or(("", tpath));
    let base: Vec<&str> = base_dir.split('/').filter(|s| !s.is_empty()).collect();
    let dirs: Vec<&str> = tdir.split('/').filter(|s| !s.is_empty()).collect();
    let common = base.iter().zip(&dirs).take_while(|(a, b)| a == b).count();
    for _ in common..base.len() {
        out.push_str("../");
    }
    for d in &dirs[common..] {
        out.push_str(d);
        out.push('/');
    }
    out.push_str(file);
    out.push_str(query);
    if out.len() == start || out[start..].starts_with('?') {
        out.insert_str(start, "./");
    }
}

/// Scratch space for [`write_attr`], reused across links.
#[derive(Debug, Default)]
pub struct Scratch {
    path: String,
    value: String,
}

/// Appends ` name="value"` for a link to `t` in the page whose base is `base`:
/// `name` is `href` or `src`, `upper` writes it upper-case.
pub fn write_attr(
    out: &mut Vec<u8>,
    s: &mut Scratch,
    r: &mut Rng,
    base: &Base<'_>,
    t: &Target,
    name: &str,
    upper: bool,
) {
    let web = base.web;
    let simple = web.params.simple;
    s.path.clear();
    let raw = r.chance(700) && !simple;
    web.write_path(&mut s.path, t, !raw);
    s.value.clear();
    let same_origin = !matches!(t, Target::Upgrade { .. } | Target::Nx { .. })
        && web.target_host(t) == Some(base.host);
    let roll = r.below(100);
    if same_origin {
        match roll {
            0..35 => s.value.push_str(&s.path),
            35..70 => {
                if r.chance(300) && !s.path.is_empty() && !simple {
                    s.value.push_str("./");
                    relative(&mut s.value, base.dir, &s.path);
                    // "./" + "../x" or "./" + "./" is still correct, just unusual.
                } else {
                    relative(&mut s.value, base.dir, &s.path);
                }
            }
            _ if simple => absolute(&mut s.value, web, t, &s.path, false),
            70..92 => absolute(&mut s.value, web, t, &s.path, roll >= 85),
            _ => scheme_relative(&mut s.value, web, t, &s.path),
        }
    } else {
        let mut origin = String::new();
        web.write_origin(&mut origin, t);
        let scheme_ok =
            origin.starts_with(base.scheme) && origin[base.scheme.len()..].starts_with("://");
        match roll {
            _ if simple => absolute(&mut s.value, web, t, &s.path, false),
            0..75 => absolute(&mut s.value, web, t, &s.path, false),
            75..85 => absolute(&mut s.value, web, t, &s.path, true),
            _ if scheme_ok => scheme_relative(&mut s.value, web, t, &s.path),
            _ => absolute(&mut s.value, web, t, &s.path, false),
        }
    }
    match r.below(100) {
        _ if simple => {}
        0..8 => {
            let _ = write!(s.value, "#sec{}", r.below(6));
        }
        8..10 => s.value.push('#'),
        _ => {}
    }
    write_value(out, &s.value, r, name, upper && !simple, simple);
}

/// Appends ` name="value"` for the URL `value` as spelled: a character reference
/// for one slash now and then, double, single or no quotes, spaces around `=`
/// (`simple`: none of these, always ` name="value"`). Draws from `r` after
/// [`write_attr`]'s spelling, in a fixed order (the web must stay a function of its
/// seed).
fn write_value(out: &mut Vec<u8>, value: &str, r: &mut Rng, name: &str, upper: bool, simple: bool) {
    // The slash to write as a character reference, if any (never one of "//").
    let entity_slash = if r.chance(50) && !simple {
        value
            .char_indices()
            .filter(|&(i, c)| {
                c == '/'
                    && value.as_bytes().get(i + 1) != Some(&b'/')
                    && (i == 0 || value.as_bytes()[i - 1] != b'/')
            })
            .map(|(i, _)| i)
            .next_back()
    } else {
        None
    };
    let quote = match r.below(100) {
        _ if simple => Some(b'"'),
        0..70 => Some(b'"'),
        70..90 => Some(b'\''),
        _ => {
            let unsafe_char = |c: char| "&'\"=<>` ".contains(c);
            if entity_slash.is_none() && !value.contains(unsafe_char) {
                None
            } else {
                Some(b'"')
            }
        }
    };
    out.push(b' ');
    if upper {
        out.extend(name.bytes().map(|b| b.to_ascii_uppercase()));
    } else {
        out.extend_from_slice(name.as_bytes());
    }
    out.extend_from_slice(if r.chance(30) && !simple {
        b" = "
    } else {
        b"="
    });
    if let Some(q) = quote {
        out.push(q);
    }
    for (i, c) in value.char_indices() {
        match c {
            // Raw in a simple web: some crawlers (wget2 1.99) do not decode `&amp;`
            // in URLs; a raw `&` before `name=` is left as it is by every HTML parser.
            '&' if simple => out.push(b'&'),
            '&' => out.extend_from_slice(b"&amp;"),
            '/' if Some(i) == entity_slash => {
                out.extend_from_slice(if i % 2 == 0 { b"&#47;" } else { b"&#x2F;" });
            }
            _ => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    if let Some(q) = quote {
        out.push(q);
    }
}

fn absolute(out: &mut String, web: &Web, t: &Target, path: &str, upper: bool) {
    let start = out.len();
    web.write_origin(out, t);
    if upper {
        out[start..].make_ascii_uppercase();
    }
    out.push_str(path);
}

fn scheme_relative(out: &mut String, web: &Web, t: &Target, path: &str) {
    let mut origin = String::with_capacity(48);
    web.write_origin(&mut origin, t);
    let host_port = origin.split_once("://").map_or("", |(_, rest)| rest);
    out.push_str("//");
    out.push_str(host_port);
    out.push_str(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(base: &str, target: &str) -> String {
        let mut s = String::new();
        relative(&mut s, base, target);
        s
    }

    #[test]
    fn relative_references() {
        assert_eq!(rel("/d3/", "/d3/p13.html"), "p13.html");
        assert_eq!(rel("/d3/", "/d2/p15.html"), "../d2/p15.html");
        assert_eq!(rel("/", "/d2/p15.html"), "d2/p15.html");
        assert_eq!(rel("/d3/", "/"), "../");
        assert_eq!(rel("/", "/"), "./");
        assert_eq!(rel("/docs/5/", "/docs/5/"), "./");
        assert_eq!(rel("/docs/5/", "/docs/6/"), "../6/");
        assert_eq!(rel("/docs/5/", "/item?id=7&cat=3"), "../../item?id=7&cat=3");
        assert_eq!(rel("/private/public/", "/private/p1.html"), "../p1.html");
        assert_eq!(rel("/café/", "/café/p2.html"), "p2.html");
    }
}
