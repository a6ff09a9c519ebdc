//! Robots directives a page carries itself, as opposed to robots.txt: the
//! `X-Robots-Tag` response header and `<meta name="robots">` (or
//! `<meta name="polycrawl">`), per Google's and Bing's documented usage.
//!
//! What they mean to the crawl (DESIGN.md section 7): `nofollow` — the page's
//! links are not followed; `noarchive` (Bing's `nocache` too) — the page's body is
//! not kept in the archive (its URL is, as a metadata record); `noindex` — the page
//! is not to be shown in a search index: an archive is no search index, so as web
//! archives do the page is stored and its links followed (`noindex` is reported,
//! and changes nothing else); `none` — `noindex` and `nofollow`, so a `none` page is
//! stored and its links are not followed. `all`, `index`, `follow` and the valued
//! directives (`unavailable_after`, `max-snippet`, `max-image-preview`,
//! `max-video-preview`) are read without error and change nothing; unknown tokens
//! are ignored.
//!
//! A header value may name a user agent (`X-Robots-Tag: otherbot: noindex`): the
//! directives after it, up to the next agent in that value, apply only to that
//! agent; ours is compared case-insensitively. Several header fields and comma
//! lists are read together. Pure functions: this module never reads a page or a
//! file. O(length of the values).

/// The product token the crawler answers to in `X-Robots-Tag` user-agent scopes and
/// `<meta name=...>`: every user agent polycrawl sends carries it.
pub const AGENT: &str = "polycrawl";

/// The directives that apply to the crawler, from one source or several.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Directives {
    /// `nofollow` (or `none`): the page's links are not followed.
    pub nofollow: bool,
    /// `noindex` (or `none`): the page is not to be in a search index (an archive
    /// keeps it: see the module docs).
    pub noindex: bool,
    /// `noarchive` (or `nocache`): no copy of the page is to be kept.
    pub noarchive: bool,
}

impl Directives {
    /// Both sets together.
    pub fn union(self, other: Directives) -> Directives {
        Directives {
            nofollow: self.nofollow || other.nofollow,
            noindex: self.noindex || other.noindex,
            noarchive: self.noarchive || other.noarchive,
        }
    }

    /// Whether the page's body stays out of the archive: `noarchive` only.
    pub fn withholds(&self) -> bool {
        self.noarchive
    }

    /// Whether no directive is set.
    pub fn is_empty(&self) -> bool {
        *self == Directives::default()
    }

    /// The directives set, by name, comma-separated (`""` when none): what the
    /// archive's metadata record says of a page kept out.
    pub fn names(&self) -> String {
        let mut names = Vec::new();
        if self.noindex {
            names.push("noindex");
        }
        if self.nofollow {
            names.push("nofollow");
        }
        if self.noarchive {
            names.push("noarchive");
        }
        names.join(", ")
    }

    /// Adds one directive token (case-insensitive); whether it was one we know.
    fn add(&mut self, token: &str) -> bool {
        let is = |name: &str| token.eq_ignore_ascii_case(name);
        if is("nofollow") {
            self.nofollow = true;
        } else if is("noindex") {
            self.noindex = true;
        } else if is("noarchive") || is("nocache") {
            self.noarchive = true;
        } else if is("none") {
            self.nofollow = true;
            self.noindex = true;
        } else {
            return false;
        }
        true
    }
}

/// Directives whose value follows a colon: never a user agent.
const VALUED: &[&str] = &[
    "max-image-preview",
    "max-snippet",
    "max-video-preview",
    "unavailable_after",
];

/// The directives of a `<meta name=robots content=...>` list (comma- or
/// space-separated, case-insensitive).
pub fn meta_content(content: &str) -> Directives {
    let mut d = Directives::default();
    for token in content.split(|c: char| c == ',' || c.is_ascii_whitespace()) {
        d.add(token);
    }
    d
}

/// Whether a `<meta name=...>` names the crawler: `robots` (every crawler) or
/// `agent` (ours), case-insensitive.
pub fn meta_name_applies(name: &str, agent: &str) -> bool {
    name.trim().eq_ignore_ascii_case("robots") || name.trim().eq_ignore_ascii_case(agent)
}

/// The directives of every `X-Robots-Tag` field value in `values` that apply to
/// `agent` (see the module docs for user-agent scopes).
pub fn x_robots_tag<'a>(values: impl IntoIterator<Item = &'a str>, agent: &str) -> Directives {
    let mut d = Directives::default();
    for value in values {
        // `None`: every crawler; `Some(applies)`: the agent named last.
        let mut scope: Option<bool> = None;
        for item in value.split(',') {
            let mut item = item.trim();
            if let Some((name, rest)) = item.split_once(':') {
                let name = name.trim();
                if VALUED.iter().any(|v| name.eq_ignore_ascii_case(v)) {
                    continue;
                }
                if is_product_token(name) {
                    scope = Some(name.eq_ignore_ascii_case(agent));
                    item = rest.trim();
                } else {
                    // A piece of a valued directive's value (a date with a colon).
                    continue;
                }
            }
            if scope.unwrap_or(true) {
                for token in item.split_ascii_whitespace() {
                    d.add(token);
                }
            }
        }
    }
    d
}

/// A user-agent product token: letters, digits, `-` and `_`.
fn is_product_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(nofollow: bool, noindex: bool, noarchive: bool) -> Directives {
        Directives {
            nofollow,
            noindex,
            noarchive,
        }
    }

    #[test]
    fn meta_lists() {
        assert_eq!(meta_content("noindex, NOFOLLOW"), d(true, true, false));
        assert_eq!(meta_content("none"), d(true, true, false));
        assert_eq!(meta_content("NoArchive"), d(false, false, true));
        assert_eq!(meta_content("nocache follow"), d(false, false, true));
        assert_eq!(meta_content("index,follow"), Directives::default());
        assert_eq!(
            meta_content("nofollowing, max-snippet:-1"),
            Directives::default()
        );
        assert!(meta_name_applies(" Robots", AGENT));
        assert!(meta_name_applies("POLYCRAWL", AGENT));
        assert!(!meta_name_applies("googlebot", AGENT));
    }

    #[test]
    fn header_values() {
        let x = |values: &[&str]| x_robots_tag(values.iter().copied(), AGENT);
        assert_eq!(x(&["nofollow"]), d(true, false, false));
        assert_eq!(x(&["NONE"]), d(true, true, false));
        assert_eq!(x(&["noindex, noarchive"]), d(false, true, true));
        // Several fields add up.
        assert_eq!(x(&["noindex", "nofollow"]), d(true, true, false));
        // Another agent's directives do not apply; ours do, in any case.
        assert_eq!(x(&["otherbot: noindex, nofollow"]), Directives::default());
        assert_eq!(x(&["PolyCrawl: nofollow"]), d(true, false, false));
        assert_eq!(
            x(&["otherbot: noindex", "polycrawl: noarchive"]),
            d(false, false, true)
        );
        // A scope lasts to the next agent in the same value, not into the next field.
        assert_eq!(
            x(&["otherbot: noindex, polycrawl: nofollow, noarchive"]),
            d(true, false, true)
        );
        assert_eq!(x(&["otherbot: none", "noarchive"]), d(false, false, true));
        // Valued directives are read without error, dates with colons and commas too.
        assert_eq!(
            x(&["unavailable_after: Saturday, 01-Jul-23 12:34:56 GMT, nofollow"]),
            d(true, false, false)
        );
        assert_eq!(
            x(&["max-snippet: 20, max-image-preview:large, all"]),
            Directives::default()
        );
        assert_eq!(x(&[""]), Directives::default());
    }

    #[test]
    fn withholding_and_names() {
        assert!(
            !d(true, true, false).withholds(),
            "noindex and none are stored"
        );
        assert!(d(false, false, true).withholds());
        assert!(!d(true, false, false).withholds());
        assert_eq!(d(true, true, true).names(), "noindex, nofollow, noarchive");
        assert!(Directives::default().is_empty());
        assert_eq!(
            d(true, false, false).union(d(false, true, false)),
            d(true, true, false)
        );
    }
}
