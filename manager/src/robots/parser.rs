//! The parsing half of robots.txt: lines, records, and choosing the group(s) that
//! apply to one product token (RFC 9309 sections 2.1, 2.2 and 2.2.1).
//!
//! One pass over the lines keeps two candidate rule sets -- the groups naming our
//! token and the `*` groups -- and drops every other group's rules as it goes.
//! At the end the token's set wins if any group named it, else the `*` set.
//!
//! # Where the RFC is silent: what Google's reference parser accepts
//!
//! - **A missing colon.** `disallow /private` is read as `disallow: /private`, but
//!   only when the line is exactly two words (so `user agent foo` stays unread).
//! - **Long lines.** A line is cut to its first [`MAX_LINE_BYTES`] bytes and the
//!   rest of it is ignored; what is left is parsed as usual (so a cut rule is a
//!   shorter prefix rule).
//! - **`index.html`.** An `allow` whose last path segment is `index.htm` or
//!   `index.html` also allows its directory exactly: `Allow: /d/index.html` adds
//!   `Allow: /d/$`.
//! - A few misspelt field names (see [`Field::of`]), and a UTF-8 byte order mark
//!   (or its first one or two bytes) at the start of the file.

use std::time::Duration;

use super::pattern::{self, Compiled};
use super::{MAX_ROBOTS_BYTES, Robots, Rule};

/// The fields this parser understands. Other records are ignored (section 2.2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    UserAgent,
    Allow,
    Disallow,
    CrawlDelay,
    Sitemap,
}

impl Field {
    /// Field names are case-insensitive; a few common misspellings are accepted
    /// (section 2.2.4 lets a crawler be lenient; each one here errs towards
    /// obeying more of what the site asked for).
    fn of(name: &[u8]) -> Option<Field> {
        const NAMES: &[(&[u8], Field)] = &[
            (b"user-agent", Field::UserAgent),
            (b"useragent", Field::UserAgent),
            (b"user agent", Field::UserAgent),
            (b"allow", Field::Allow),
            (b"disallow", Field::Disallow),
            (b"dissallow", Field::Disallow),
            (b"dissalow", Field::Disallow),
            (b"disalow", Field::Disallow),
            (b"diasllow", Field::Disallow),
            (b"disallaw", Field::Disallow),
            (b"crawl-delay", Field::CrawlDelay),
            (b"crawldelay", Field::CrawlDelay),
            (b"sitemap", Field::Sitemap),
            (b"site-map", Field::Sitemap),
        ];
        NAMES
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .map(|&(_, field)| field)
    }
}

/// Longest line parsed, in bytes: what Google's parser keeps of a line (a buffer
/// of 8 x 2,083 bytes, 2,083 being the longest URL old browsers took, less its
/// terminator). Section 2.5 bounds only the file.
pub(super) const MAX_LINE_BYTES: usize = 8 * 2083 - 1;

/// Trims ASCII whitespace (section 2.2: `*WS` around keys and values).
fn trim(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

/// Splits a line (comment already removed) into its field name and value, both
/// trimmed: at the first `:`, or, when there is none, at the whitespace between
/// exactly two words (`disallow /x`, as Google's parser accepts). `None` when the
/// line is neither or the name is empty.
fn key_and_value(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let line = trim(line);
    let (key, value) = match line.iter().position(|&b| b == b':') {
        Some(colon) => (&line[..colon], &line[colon + 1..]),
        None => {
            let is_blank = |b: &u8| *b == b' ' || *b == b'\t';
            let gap = line.iter().position(is_blank)?;
            let value = trim(&line[gap..]);
            if value.iter().any(is_blank) {
                return None;
            }
            (&line[..gap], value)
        }
    };
    let key = trim(key);
    (!key.is_empty()).then(|| (key, trim(value)))
}

/// The directory an `allow` pattern names through its `index.htm(l)`: for
/// `/d/index.html` (or `/d/index.htm`, either with a final `$`) the pattern
/// `/d/$`, which Google's parser allows too.
fn index_directory(pattern: &[u8]) -> Option<Vec<u8>> {
    let body = pattern.strip_suffix(b"$").unwrap_or(pattern);
    let slash = body.iter().rposition(|&b| b == b'/')?;
    if !matches!(&body[slash + 1..], b"index.html" | b"index.htm") {
        return None;
    }
    let mut dir = body[..=slash].to_vec();
    dir.push(b'$');
    Some(dir)
}

/// The product token at the start of a user-agent value or of our own agent
/// string: the leading run of letters, digits, `-` and `_`. `polycrawl/1.0 (+url)`
/// gives `polycrawl`. (RFC 9309's `identifier` has no digits; real tokens such as
/// `MJ12bot` do, and cutting them at the digit would make `MJ12bot` name `MJ`.)
pub(super) fn product_token(value: &[u8]) -> &[u8] {
    let value = trim(value);
    let len = value
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        .count();
    &value[..len]
}

/// Whether a user-agent value is the `*` wildcard (alone or followed by space).
fn is_star(value: &[u8]) -> bool {
    match value {
        [b'*'] => true,
        [b'*', next, ..] => next.is_ascii_whitespace(),
        _ => false,
    }
}

/// `Crawl-delay` in seconds: digits with an optional fraction, nothing else.
fn parse_delay(value: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(value).ok()?;
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    let seconds: f64 = text.parse().ok()?;
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

/// Only the first [`MAX_ROBOTS_BYTES`] are parsed; a line cut by the limit is
/// dropped whole rather than read as a shorter (and different) rule.
fn truncate(body: &[u8]) -> &[u8] {
    if body.len() <= MAX_ROBOTS_BYTES {
        return body;
    }
    let is_eol = |b: &u8| *b == b'\n' || *b == b'\r';
    if is_eol(&body[MAX_ROBOTS_BYTES]) {
        return &body[..MAX_ROBOTS_BYTES];
    }
    let kept = &body[..MAX_ROBOTS_BYTES];
    match kept.iter().rposition(is_eol) {
        Some(eol) => &kept[..eol],
        None => &[],
    }
}

/// The rules and crawl delay gathered for one candidate (our token, or `*`).
#[derive(Default)]
struct Candidate {
    /// Some group named this candidate.
    named: bool,
    patterns: String,
    rules: Vec<Rule>,
    delay: Option<Duration>,
}

impl Candidate {
    fn add_rule(&mut self, value: &[u8], allow: bool) {
        if let Some(dir) = index_directory(value).filter(|_| allow) {
            self.add_one_rule(&dir, true);
        }
        self.add_one_rule(value, allow);
    }

    fn add_one_rule(&mut self, value: &[u8], allow: bool) {
        let start = self.patterns.len();
        let Compiled {
            anchored,
            specificity,
        } = pattern::compile(value, &mut self.patterns);
        self.rules.push(Rule {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            len: u32::try_from(self.patterns.len() - start).unwrap_or(u32::MAX),
            specificity,
            allow,
            anchored,
        });
    }

    fn add_delay(&mut self, delay: Duration) {
        // Several delays for one agent: obey the longest.
        self.delay = Some(self.delay.map_or(delay, |old| old.max(delay)));
    }

    /// Sorts the rules so the first match is the verdict: most specific first,
    /// `allow` before `disallow` on a tie; drops duplicates and compacts storage.
    fn finish(self, sitemaps: Vec<String>) -> Robots {
        let Candidate {
            patterns,
            mut rules,
            delay,
            ..
        } = self;
        let text = |r: &Rule| {
            patterns
                .get(r.start as usize..(r.start + r.len) as usize)
                .unwrap_or("")
        };
        rules.sort_by(|a, b| {
            (b.specificity, b.allow, text(a), a.anchored).cmp(&(
                a.specificity,
                a.allow,
                text(b),
                b.anchored,
            ))
        });
        rules.dedup_by(|a, b| a.allow == b.allow && a.anchored == b.anchored && text(a) == text(b));
        let mut compact = String::with_capacity(rules.iter().map(|r| r.len as usize).sum());
        for rule in &mut rules {
            let start = compact.len();
            compact.push_str(text(rule));
            rule.start = u32::try_from(start).unwrap_or(u32::MAX);
        }
        Robots {
            patterns: compact.into_boxed_str(),
            rules: rules.into_boxed_slice(),
            crawl_delay: delay,
            sitemaps: sitemaps.into_boxed_slice(),
        }
    }
}

/// The group being read: which candidates it names and whether we are still in
/// its run of user-agent lines.
#[derive(Default)]
struct Group {
    started: bool,
    in_header: bool,
    ours: bool,
    star: bool,
    delay: Option<Duration>,
}

impl Group {
    /// A group's crawl delay applies to every agent the group names, including
    /// user-agent lines that follow the `Crawl-delay` line.
    fn close(&mut self, ours: &mut Candidate, star: &mut Candidate) {
        if let Some(delay) = self.delay.take() {
            if self.ours {
                ours.add_delay(delay);
            }
            if self.star {
                star.add_delay(delay);
            }
        }
    }
}

/// Parses `body` keeping only what applies to `agent`'s product token.
pub(super) fn parse(body: &[u8], agent: &str) -> Robots {
    let token = product_token(agent.as_bytes());
    let body = truncate(body);
    // A UTF-8 byte order mark, or the start of one (as Google's parser skips).
    let bom = body
        .iter()
        .zip(b"\xEF\xBB\xBF")
        .take_while(|(a, b)| a == b)
        .count();
    let body = &body[bom..];

    let mut ours = Candidate::default();
    let mut star = Candidate::default();
    let mut sitemaps = Vec::new();
    let mut group = Group::default();

    for line in body.split(|&b| b == b'\n' || b == b'\r') {
        let line = &line[..line.len().min(MAX_LINE_BYTES)];
        let line = match line.iter().position(|&b| b == b'#') {
            Some(hash) => &line[..hash],
            None => line,
        };
        let Some((key, value)) = key_and_value(line) else {
            continue;
        };
        let Some(field) = Field::of(key) else {
            continue;
        };
        match field {
            Field::UserAgent => {
                if !group.in_header {
                    group.close(&mut ours, &mut star);
                    group = Group {
                        started: true,
                        in_header: true,
                        ..Group::default()
                    };
                }
                if is_star(value) {
                    group.star = true;
                    star.named = true;
                } else {
                    let named = product_token(value);
                    if !token.is_empty() && named.eq_ignore_ascii_case(token) {
                        group.ours = true;
                        ours.named = true;
                    }
                }
            }
            Field::Allow | Field::Disallow => {
                if !group.started {
                    continue; // Section 2.2.2: rules outside any group are ignored.
                }
                group.in_header = false;
                // An empty pattern matches nothing; a pattern must start with `/`
                // (section 2.2) or `*` (the section 5.1 example, erratum 7995).
                if !matches!(value.first(), Some(b'/' | b'*')) {
                    continue;
                }
                let allow = field == Field::Allow;
                if group.ours {
                    ours.add_rule(value, allow);
                }
                if group.star {
                    star.add_rule(value, allow);
                }
            }
            Field::CrawlDelay => {
                if let (true, Some(delay)) = (group.started, parse_delay(value)) {
                    group.delay = Some(group.delay.map_or(delay, |old| old.max(delay)));
                }
            }
            Field::Sitemap => {
                if !value.is_empty() {
                    sitemaps.push(String::from_utf8_lossy(value).into_owned());
                }
            }
        }
    }
    group.close(&mut ours, &mut star);

    if ours.named {
        ours.finish(sitemaps)
    } else {
        star.finish(sitemaps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_token_is_the_leading_identifier() {
        assert_eq!(product_token(b"polycrawl/1.0 (+https://x)"), b"polycrawl");
        assert_eq!(product_token(b"  MJ12bot "), b"MJ12bot");
        assert_eq!(product_token(b"Google-Extended"), b"Google-Extended");
        assert_eq!(product_token(b"*"), b"");
        assert_eq!(product_token(b""), b"");
    }

    #[test]
    fn star_needs_to_stand_alone() {
        assert!(is_star(b"*"));
        assert!(is_star(b"* extra"));
        assert!(!is_star(b"*bot"));
        assert!(!is_star(b"bot"));
    }

    #[test]
    fn crawl_delay_accepts_only_decimal_seconds() {
        assert_eq!(parse_delay(b"10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_delay(b"0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_delay(b".25"), Some(Duration::from_millis(250)));
        assert_eq!(parse_delay(b"2."), Some(Duration::from_secs(2)));
        assert_eq!(parse_delay(b"0"), Some(Duration::ZERO));
        for garbage in [
            &b""[..],
            b".",
            b"-1",
            b"1e3",
            b"inf",
            b"NaN",
            b"ten",
            b"5 s",
            b"1.2.3",
            b"\xff",
        ] {
            assert_eq!(
                parse_delay(garbage),
                None,
                "{:?}",
                String::from_utf8_lossy(garbage)
            );
        }
        assert_eq!(parse_delay(&[b'9'; 400]), Some(Duration::MAX));
    }

    #[test]
    fn truncation_keeps_whole_lines_only() {
        let mut body = vec![b'a'; MAX_ROBOTS_BYTES - 10];
        body.push(b'\n');
        body.extend_from_slice(&[b'b'; 100]);
        let kept = truncate(&body);
        assert_eq!(kept.len(), MAX_ROBOTS_BYTES - 10);
        assert!(kept.iter().all(|&b| b == b'a'));

        // A line ending exactly at the limit is kept.
        let mut exact = vec![b'a'; MAX_ROBOTS_BYTES];
        exact.push(b'\n');
        assert_eq!(truncate(&exact).len(), MAX_ROBOTS_BYTES);

        // No line end at all before the limit: nothing is kept.
        assert!(truncate(&vec![b'x'; MAX_ROBOTS_BYTES + 1]).is_empty());
    }

    #[test]
    fn a_missing_colon_is_accepted_between_exactly_two_words() {
        let kv = |line: &str| {
            key_and_value(line.as_bytes()).map(|(k, v)| {
                (
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
        };
        let pair = |k: &str, v: &str| Some((k.to_owned(), v.to_owned()));
        assert_eq!(kv("disallow /x"), pair("disallow", "/x"));
        assert_eq!(kv(" user-agent \t FooBot  "), pair("user-agent", "FooBot"));
        assert_eq!(kv("user agent FooBot"), None);
        assert_eq!(kv("disallow"), None);
        assert_eq!(kv("Disallow : /a b"), pair("Disallow", "/a b"));
        assert_eq!(kv(": /x"), None);
        assert_eq!(kv("disallow:"), pair("disallow", ""));
    }

    #[test]
    fn index_html_names_its_directory() {
        let dir = |p: &str| index_directory(p.as_bytes()).map(|d| String::from_utf8(d).unwrap());
        assert_eq!(dir("/a/index.html"), Some("/a/$".to_owned()));
        assert_eq!(dir("/index.htm"), Some("/$".to_owned()));
        assert_eq!(dir("/a/index.html$"), Some("/a/$".to_owned()));
        assert_eq!(dir("/a/index.php"), None);
        assert_eq!(dir("/a/myindex.html"), None);
        assert_eq!(dir("/a/index.html/b"), None);
        assert_eq!(dir("index.html"), None);
    }

    #[test]
    fn field_names_are_case_insensitive() {
        assert_eq!(Field::of(b"USER-AGENT"), Some(Field::UserAgent));
        assert_eq!(Field::of(b"DisAllow"), Some(Field::Disallow));
        assert_eq!(Field::of(b"Crawl-Delay"), Some(Field::CrawlDelay));
        assert_eq!(Field::of(b"SITEMAP"), Some(Field::Sitemap));
        assert_eq!(Field::of(b"noindex"), None);
        assert_eq!(Field::of(b"user-agent-x"), None);
    }
}
