//! The stuck hosts of `--stuck-hosts`: five hosts a crawl can never fetch a page
//! from, each failing in one of the ways that kept a crawl from ending by itself
//! (issue 37): a crawler must retry them a bounded number of times over a bounded
//! time, then end their URLs with an outcome.
//!
//! | host | what it does |
//! |---|---|
//! | [`REFUSED_HOST`] | its name resolves; nothing listens on its address (connection refused) |
//! | [`SILENT_HOST`] | accepts connections, reads requests and never answers any |
//! | [`ROBOTS_SILENT_HOST`] | never answers `/robots.txt` |
//! | [`ROBOTS_500_HOST`] | `/robots.txt` answers 500 every time |
//! | [`ROBOTS_503_HOST`] | `/robots.txt` answers 503 every time |
//!
//! Any other path of the last three (which a correct crawler never asks for)
//! gets a small 200 page without links.
//!
//! Each has [`STUCK_PAGES`] pages and an address of its own, comes after every
//! other host (the generated, misbehaving, trap and sitemap hosts), is never a
//! seed (not even with `--all-seeds`) and is served over http only. The most
//! popular host's home page links every page of every stuck host, so a crawl
//! discovers them at depth 1 and has them in hand while it crawls the rest. In the
//! manifest their URLs are unreachable: `connect_failure` for the refused host
//! (as for any dead host), `too_many_failures` for the others (as for a robots.txt
//! that answers 5xx: RFC 9309 section 2.3.1.3 asks a crawler to fetch nothing from
//! a host whose robots.txt is unreachable). Without the flag no stuck host exists
//! and no page links one: the web and its manifest are what they were.
//!
//! The hosts themselves are made in [`super::hosts`] ([`super::hosts::add_stuck`]).
//! This module must never depend on the hosts, the routing or the model: it is
//! below them.

use super::misbehave::Misbehavior;
use super::reply::{Body, HTML, Reply, fixed};
use spool::OutcomeReason;

/// Nothing listens on its address.
pub const REFUSED_HOST: &str = "refused.stuck-hosts.test";
/// Accepts connections and never answers.
pub const SILENT_HOST: &str = "silent.stuck-hosts.test";
/// Never answers `/robots.txt`.
pub const ROBOTS_SILENT_HOST: &str = "robots-silent.stuck-hosts.test";
/// `/robots.txt` answers 500.
pub const ROBOTS_500_HOST: &str = "robots-500.stuck-hosts.test";
/// `/robots.txt` answers 503.
pub const ROBOTS_503_HOST: &str = "robots-503.stuck-hosts.test";
/// Pages of each stuck host, all linked from the most popular host's home page.
pub const STUCK_PAGES: u32 = 3;

/// How a stuck host fails (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stuck {
    /// Connection refused.
    Refused,
    /// Accepts, never answers.
    Silent,
    /// Never answers `/robots.txt`.
    RobotsSilent,
    /// `/robots.txt` answers 500.
    Robots500,
    /// `/robots.txt` answers 503.
    Robots503,
}

impl Stuck {
    /// Every kind, in host order.
    pub const ALL: [Stuck; 5] = [
        Stuck::Refused,
        Stuck::Silent,
        Stuck::RobotsSilent,
        Stuck::Robots500,
        Stuck::Robots503,
    ];

    /// The host name.
    pub fn host_name(self) -> &'static str {
        match self {
            Stuck::Refused => REFUSED_HOST,
            Stuck::Silent => SILENT_HOST,
            Stuck::RobotsSilent => ROBOTS_SILENT_HOST,
            Stuck::Robots500 => ROBOTS_500_HOST,
            Stuck::Robots503 => ROBOTS_503_HOST,
        }
    }

    /// The `hosts.tsv` flag naming the kind (next to `stuck`).
    pub fn flag(self) -> &'static str {
        match self {
            Stuck::Refused => "refused",
            Stuck::Silent => "silent",
            Stuck::RobotsSilent => "robots_silent",
            Stuck::Robots500 => "robots_500",
            Stuck::Robots503 => "robots_503",
        }
    }

    /// What `/robots.txt` answers, for `hosts.tsv`'s `robots_status` column (0:
    /// no answer at all).
    pub fn robots_status(self) -> u16 {
        match self {
            Stuck::Refused | Stuck::Silent | Stuck::RobotsSilent => 0,
            Stuck::Robots500 => 500,
            Stuck::Robots503 => 503,
        }
    }

    /// The outcome the manifest gives each of the host's URLs.
    pub fn outcome(self) -> OutcomeReason {
        match self {
            Stuck::Refused => OutcomeReason::ConnectFailure,
            _ => OutcomeReason::TooManyFailures,
        }
    }

    /// The reply to a request for `path` (see the module docs).
    pub fn route(self, path: &str) -> Reply {
        let robots = path == "/robots.txt";
        let unavailable = Body::Static(b"<html><body>robots.txt unavailable</body></html>\n");
        match self {
            Stuck::Silent => Reply::Misbehave(Misbehavior::Silent),
            Stuck::RobotsSilent if robots => Reply::Misbehave(Misbehavior::Silent),
            Stuck::Robots500 if robots => fixed(500, HTML, unavailable),
            Stuck::Robots503 if robots => fixed(503, HTML, unavailable),
            _ => fixed(200, HTML, Body::Static(PAGE)),
        }
    }
}

/// What a stuck host answers for a path it does not fail on.
const PAGE: &[u8] = b"<!DOCTYPE html>\n<html><head><title>stuck host</title></head>\
<body><p>A page of a stuck host: a crawler that obeys robots.txt never gets here.</p>\
</body></html>\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_fails_its_own_way() {
        let silent = Reply::Misbehave(Misbehavior::Silent);
        assert_eq!(Stuck::Silent.route("/"), silent);
        assert_eq!(Stuck::Silent.route("/robots.txt"), silent);
        assert_eq!(Stuck::RobotsSilent.route("/robots.txt"), silent);
        let status = |r: Reply| match r {
            Reply::Fixed { status, .. } => status,
            other => panic!("{other:?}"),
        };
        assert_eq!(status(Stuck::RobotsSilent.route("/")), 200);
        for (kind, code) in [(Stuck::Robots500, 500), (Stuck::Robots503, 503)] {
            assert_eq!(status(kind.route("/robots.txt")), code);
            assert_eq!(status(kind.route("/p1.html")), 200);
            assert_eq!(kind.robots_status(), code);
        }
        assert_eq!(Stuck::Refused.outcome(), OutcomeReason::ConnectFailure);
        assert_eq!(Stuck::Silent.outcome(), OutcomeReason::TooManyFailures);
    }
}
