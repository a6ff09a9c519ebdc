//! The trap hosts of `--traps` as the rest of the web sees them: their kinds
//! ([`TrapSite`]), names and real pages. The host list ([`super::hosts`]) and the
//! model ([`super::model`]) need these; what a trap host serves is in
//! [`super::traps`], which builds on the model.
//!
//! This module must never depend on the model or the routing: it is below both.

use std::fmt::Write as _;

/// The session-id trap host.
pub const SESSIONS_HOST: &str = "www.sessions-trap.test";
/// The year/month calendar trap host.
pub const CALENDAR_HOST: &str = "www.calendar-trap.test";
/// The redirect-chain trap host.
pub const REDIRECTS_HOST: &str = "www.redirects-trap.test";
/// The page-number sequence trap host.
pub const PAGES_HOST: &str = "www.pages-trap.test";
/// The counter trap host.
pub const COUNTER_HOST: &str = "www.counter-trap.test";
/// The maze trap host.
pub const MAZE_HOST: &str = "www.maze-trap.test";
/// The host with session ids in its paths and queries.
pub const PATH_SESSIONS_HOST: &str = "www.path-sessions-trap.test";
/// The ever-deeper path trap host.
pub const DEEP_HOST: &str = "www.deep-trap.test";
/// The host with query and day-paging calendars.
pub const DATES_HOST: &str = "www.dates-trap.test";
/// Real pages of the sessions host.
pub const SESSION_PAGES: u32 = 30;
/// Hops of the redirect chain before its end page.
pub const CHAIN_HOPS: u32 = 50;

/// What a trap host does (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrapSite {
    /// Fresh session ids on every link.
    Sessions,
    /// Endless months and days.
    Calendar,
    /// A chain of [`CHAIN_HOPS`] redirects.
    Redirects,
    /// Endless page numbers.
    Pages,
    /// Endless counters.
    Counter,
    /// An endless maze of words.
    Maze,
    /// Session ids in path segments and in queries under unknown names.
    PathSessions,
    /// Ever-deeper paths of new segments.
    Deep,
    /// `?year=&month=` calendars and `/day/YYYY-MM-DD/` day paging.
    Dates,
}

impl TrapSite {
    /// Every kind, in host order.
    pub const ALL: [TrapSite; 9] = [
        TrapSite::Sessions,
        TrapSite::Calendar,
        TrapSite::Redirects,
        TrapSite::Pages,
        TrapSite::Counter,
        TrapSite::Maze,
        TrapSite::PathSessions,
        TrapSite::Deep,
        TrapSite::Dates,
    ];

    /// The host name.
    pub fn host_name(self) -> &'static str {
        match self {
            TrapSite::Sessions => SESSIONS_HOST,
            TrapSite::Calendar => CALENDAR_HOST,
            TrapSite::Redirects => REDIRECTS_HOST,
            TrapSite::Pages => PAGES_HOST,
            TrapSite::Counter => COUNTER_HOST,
            TrapSite::Maze => MAZE_HOST,
            TrapSite::PathSessions => PATH_SESSIONS_HOST,
            TrapSite::Deep => DEEP_HOST,
            TrapSite::Dates => DATES_HOST,
        }
    }

    /// The `hosts.tsv` flag naming the kind.
    pub fn flag(self) -> &'static str {
        match self {
            TrapSite::Sessions => "sessions",
            TrapSite::Calendar => "calendar",
            TrapSite::Redirects => "redirects",
            TrapSite::Pages => "pages",
            TrapSite::Counter => "counter",
            TrapSite::Maze => "maze",
            TrapSite::PathSessions => "path-sessions",
            TrapSite::Deep => "deep",
            TrapSite::Dates => "dates",
        }
    }

    /// Number of real pages.
    pub fn pages(self) -> u32 {
        match self {
            TrapSite::Sessions => SESSION_PAGES,
            _ => 1,
        }
    }
}

/// Appends the path of real page `page` (`/` or `/p{page}.html`).
pub fn write_real_path(out: &mut String, page: u32) {
    if page == 0 {
        out.push('/');
    } else {
        let _ = write!(out, "/p{page}.html");
    }
}
