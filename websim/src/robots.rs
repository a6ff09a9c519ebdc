//! robots.txt: the variants websim serves, and websim's own matcher (RFC 9309),
//! which the manifest uses to decide what a correct crawl may fetch.
//!
//! The matcher is websim's independent test oracle: it must never share code with
//! the crawler's robots parser. Rules it implements, for the product token
//! `polycrawl`:
//! - lines are `key: value`, `#` starts a comment, a UTF-8 BOM and `\r` are ignored,
//!   keys are case-insensitive, unknown keys are ignored;
//! - consecutive `User-agent` lines open a group; a group's rules are the
//!   `Allow`/`Disallow` lines up to the next `User-agent` line that follows a rule;
//! - every group naming `polycrawl` (case-insensitive) is used, merged; if none, every
//!   `*` group, merged; if none, everything is allowed;
//! - a rule matches when its pattern matches a prefix of the path and query; `*`
//!   matches any run of characters, a final `$` anchors at the end; non-ASCII bytes
//!   of a pattern are percent-encoded before matching; empty patterns never match;
//! - the longest matching pattern (in bytes) wins, `Allow` wins a tie, no match means
//!   allowed; `/robots.txt` is always allowed;
//! - `Crawl-delay` is read from the selected groups (the first one seen).
//!
//! Status handling (RFC 9309 section 2.3.1) is the caller's: 4xx = allow all,
//! 5xx = fetch nothing from the host, 3xx = follow.
//!
//! Complexity: parsing is O(file); matching is O(rules x path).

use super::paths::encode_non_ascii;

/// The product token websim's manifest crawls as.
pub const AGENT: &str = "polycrawl";

/// Where the `Redirect` variant sends `/robots.txt` (same host, 301).
pub const REAL_ROBOTS_PATH: &str = "/robots-real.txt";

/// What a host's `/robots.txt` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RobotsVariant {
    /// 404: everything allowed.
    None,
    /// 200 with `Disallow:` (empty): everything allowed.
    Empty,
    /// 403: everything allowed (4xx).
    Forbidden,
    /// `Disallow: /private/`, `/stra%C3%9Fe/`.
    Disallow,
    /// `Disallow: /private/` overridden by `Allow: /private/public/`; a prefix rule
    /// `Disallow: /p1`; an `Allow`/`Disallow` tie on `/d2/` (Allow wins).
    AllowOverride,
    /// `*` and `$` rules: `/*.php$`, `/*?sort=`, `/search` (but `Allow: /search/p1`),
    /// and a raw UTF-8 rule `/café/`. CRLF line ends.
    Wildcards,
    /// `*` is disallowed everything; a `polycrawl` group (split in two, merged)
    /// disallows only `/d1/`, `/private/` and `/x/`.
    AgentGroup,
    /// `Crawl-delay: 1` and `Disallow: /private/`.
    CrawlDelay,
    /// 503 every time: a correct crawl fetches nothing else from the host.
    ServerError,
    /// 301 to [`REAL_ROBOTS_PATH`], which disallows `/docs/`.
    Redirect,
    /// `Disallow: /`.
    DisallowAll,
    /// `Disallow: /private/` alone: what every robots.txt reader understands (the
    /// `--simple` web's stand-in for [`Self::Disallow`]).
    DisallowPrefix,
}

/// How a robots.txt request is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsResponse {
    /// This status with a small error page.
    Status(u16),
    /// 200 with this body.
    Body(&'static str),
    /// 301 to this path on the same host.
    Redirect(&'static str),
}

const DISALLOW: &str = "# websim robots.txt (disallow)\nUser-agent: *\nDisallow: /private/\n\
Disallow: /stra%C3%9Fe/\nNoindex: /ignored-directive/\n";
const ALLOW_OVERRIDE: &str = "\u{feff}User-agent: *\nDisallow: /private/\n\
Allow: /private/public/\nDisallow: /p1\nDisallow: /d2/\nAllow: /d2/\n";
const WILDCARDS: &str = "User-agent: *\r\nDisallow: /*.php$\r\nDisallow: /*?sort=\r\n\
Disallow: /search\r\nAllow: /search/p1\r\nDisallow: /café/\r\n";
const AGENT_GROUP: &str = "User-agent: otherbot\nDisallow: /private/\n\nUser-agent: *\n\
Disallow: /\n\nUser-agent: PolyCrawl\nUser-agent: anotherbot\nDisallow: /d1/\n\
Disallow: /private/\n\n# more rules for us, merged with the group above\n\
User-agent: polycrawl\nDisallow: /x/\n";
const CRAWL_DELAY: &str = "User-agent: *\nCrawl-delay: 1\nDisallow: /private/\n";
const REAL: &str = "User-agent: *\nDisallow: /docs/\n";
const EMPTY: &str = "User-agent: *\nDisallow:\n";
const DISALLOW_ALL: &str = "User-agent: *\nDisallow: /\n";
const DISALLOW_PREFIX: &str = "User-agent: *\nDisallow: /private/\n";

impl RobotsVariant {
    /// Every variant.
    pub const ALL: [RobotsVariant; 12] = [
        Self::None,
        Self::Empty,
        Self::Forbidden,
        Self::Disallow,
        Self::AllowOverride,
        Self::Wildcards,
        Self::AgentGroup,
        Self::CrawlDelay,
        Self::ServerError,
        Self::Redirect,
        Self::DisallowAll,
        Self::DisallowPrefix,
    ];

    /// The name used in `hosts.tsv`.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Empty => "empty",
            Self::Forbidden => "forbidden",
            Self::Disallow => "disallow",
            Self::AllowOverride => "allow_override",
            Self::Wildcards => "wildcards",
            Self::AgentGroup => "agent_group",
            Self::CrawlDelay => "crawl_delay",
            Self::ServerError => "server_error",
            Self::Redirect => "redirect",
            Self::DisallowAll => "disallow_all",
            Self::DisallowPrefix => "disallow_prefix",
        }
    }

    /// How `/robots.txt` is answered.
    pub fn response(self) -> RobotsResponse {
        match self {
            Self::None => RobotsResponse::Status(404),
            Self::Forbidden => RobotsResponse::Status(403),
            Self::ServerError => RobotsResponse::Status(503),
            Self::Redirect => RobotsResponse::Redirect(REAL_ROBOTS_PATH),
            _ => RobotsResponse::Body(self.rules_text()),
        }
    }

    /// The rules in force for this variant (after following the redirect); empty
    /// for the variants that allow everything.
    pub fn rules_text(self) -> &'static str {
        match self {
            Self::None | Self::Forbidden | Self::ServerError => "",
            Self::Empty => EMPTY,
            Self::Disallow => DISALLOW,
            Self::AllowOverride => ALLOW_OVERRIDE,
            Self::Wildcards => WILDCARDS,
            Self::AgentGroup => AGENT_GROUP,
            Self::CrawlDelay => CRAWL_DELAY,
            Self::Redirect => REAL,
            Self::DisallowAll => DISALLOW_ALL,
            Self::DisallowPrefix => DISALLOW_PREFIX,
        }
    }

    /// True for the variant whose robots.txt is always 5xx.
    pub fn is_server_error(self) -> bool {
        self == Self::ServerError
    }
}

/// Parsed rules for one agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    rules: Vec<(String, bool)>,
    /// `Crawl-delay` of the selected group, seconds.
    pub crawl_delay: Option<f64>,
}

#[derive(Default)]
struct Group {
    agents: Vec<String>,
    rules: Vec<(String, bool)>,
    delay: Option<f64>,
}

impl Rules {
    /// Parses `text` and keeps what applies to product token `agent`.
    pub fn parse(text: &str, agent: &str) -> Rules {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut groups: Vec<Group> = Vec::new();
        let mut last_was_agent = false;
        for line in text.split('\n') {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let key = key.trim().to_ascii_lowercase();
            let value = value.trim();
            match key.as_str() {
                "user-agent" => {
                    if !last_was_agent {
                        groups.push(Group::default());
                    }
                    if let Some(g) = groups.last_mut() {
                        g.agents.push(value.to_ascii_lowercase());
                    }
                    last_was_agent = true;
                }
                "allow" | "disallow" => {
                    last_was_agent = false;
                    if let Some(g) = groups.last_mut() {
                        if !value.is_empty() {
                            let mut pattern = String::with_capacity(value.len());
                            encode_non_ascii(&mut pattern, value);
                            g.rules.push((pattern, key == "allow"));
                        }
                    }
                }
                "crawl-delay" => {
                    last_was_agent = false;
                    if let Some(g) = groups.last_mut() {
                        g.delay = g.delay.or_else(|| value.parse().ok());
                    }
                }
                _ => {}
            }
        }
        let agent = agent.to_ascii_lowercase();
        let mine: Vec<&Group> = groups
            .iter()
            .filter(|g| g.agents.contains(&agent))
            .collect();
        let chosen = if mine.is_empty() {
            groups
                .iter()
                .filter(|g| g.agents.iter().any(|a| a == "*"))
                .collect()
        } else {
            mine
        };
        Rules {
            rules: chosen
                .iter()
                .flat_map(|g| g.rules.iter().cloned())
                .collect(),
            crawl_delay: chosen.iter().find_map(|g| g.delay),
        }
    }

    /// True if `path` (canonical path and query) may be fetched.
    pub fn allowed(&self, path: &str) -> bool {
        if path == "/robots.txt" {
            return true;
        }
        let mut best: Option<(usize, bool)> = None;
        for (pattern, allow) in &self.rules {
            if matches(pattern, path) {
                let better = match best {
                    None => true,
                    Some((len, a)) => pattern.len() > len || (pattern.len() == len && *allow && !a),
                };
                if better {
                    best = Some((pattern.len(), *allow));
                }
            }
        }
        best.is_none_or(|(_, allow)| allow)
    }
}

/// True if `pattern` (with `*` and a final `$`) matches a prefix of `path`.
pub fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = path.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = parts.collect();
    if pieces.is_empty() {
        return !anchored || rest.is_empty();
    }
    let (last, middle) = pieces.split_last().unwrap_or((&"", &[]));
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    if anchored {
        rest.len() >= last.len() && rest.ends_with(last)
    } else {
        rest.contains(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(v: RobotsVariant) -> Rules {
        Rules::parse(v.rules_text(), AGENT)
    }

    #[test]
    fn wildcard_matching() {
        assert!(matches("/", "/anything"));
        assert!(matches("/*.php$", "/x/p1.php"));
        assert!(!matches("/*.php$", "/x/p1.php?v=2"));
        assert!(matches("/*.php", "/x/p1.php?v=2"));
        assert!(matches("/*?sort=", "/list?sort=name&page=3"));
        assert!(!matches("/*?sort=", "/list?page=3"));
        assert!(matches("/a*b*c$", "/axxbyyc"));
        assert!(!matches("/a*b*c$", "/axxbyycd"));
        assert!(matches("/fish*", "/fish"));
        assert!(matches("/$", "/"));
        assert!(!matches("/$", "/x"));
        assert!(!matches("/private/", "/privat"));
    }

    #[test]
    fn variants_decide_like_rfc9309() {
        let d = rules(RobotsVariant::Disallow);
        assert!(!d.allowed("/private/p3.html"));
        assert!(!d.allowed("/stra%C3%9Fe/p3.html"));
        assert!(d.allowed("/d1/p3.html") && d.allowed("/robots.txt"));

        let a = rules(RobotsVariant::AllowOverride);
        assert!(!a.allowed("/private/p3.html"));
        assert!(a.allowed("/private/public/p3.html")); // longer Allow wins
        assert!(!a.allowed("/p1.html") && !a.allowed("/p17.html") && a.allowed("/p2.html"));
        assert!(a.allowed("/d2/p5.html")); // tie: Allow wins

        let w = rules(RobotsVariant::Wildcards);
        assert!(!w.allowed("/x/p4.php") && w.allowed("/x/p4.php?v=2"));
        assert!(!w.allowed("/list?sort=name&page=4"));
        assert!(!w.allowed("/search/p4.html") && w.allowed("/search/p14.html"));
        assert!(!w.allowed("/caf%C3%A9/p4.html") && w.allowed("/d0/p4.html"));

        let g = rules(RobotsVariant::AgentGroup);
        assert!(g.allowed("/") && g.allowed("/d2/p1.html"));
        assert!(!g.allowed("/d1/p1.html") && !g.allowed("/private/p1.html"));
        assert!(!g.allowed("/x/p2.php")); // from the second, merged group
        let star = Rules::parse(RobotsVariant::AgentGroup.rules_text(), "somebot");
        assert!(!star.allowed("/"));

        let c = rules(RobotsVariant::CrawlDelay);
        assert_eq!(c.crawl_delay, Some(1.0));
        assert!(!c.allowed("/private/p1.html"));

        assert!(!rules(RobotsVariant::DisallowAll).allowed("/"));
        assert!(rules(RobotsVariant::Empty).allowed("/private/x"));
        assert!(rules(RobotsVariant::None).allowed("/private/x"));
        assert!(!rules(RobotsVariant::Redirect).allowed("/docs/4/"));
    }

    #[test]
    fn groups_and_comments() {
        let text = "user-agent: a\nuser-agent: POLYCRAWL # us\ndisallow: /a\n\
                    user-agent: *\ndisallow: /\nallow: /a/b\n";
        let r = Rules::parse(text, AGENT);
        assert!(!r.allowed("/a/x") && r.allowed("/b"));
        let r = Rules::parse("allow: /x\ndisallow: /\n", AGENT); // rules before any group
        assert!(r.allowed("/y"));
    }
}
