//! How `polycrawl crawl` and `polycrawl demo` size a crawl to the machine when the
//! operator does not say (issue 24): the cores this process may run on decide the
//! application parts, the downloaders and the reader threads of each part, and the
//! crawl says what it chose on one line at start.
//!
//! The rule, from what was measured (BENCHMARKS.md, "Use the cores"):
//! - **reader threads** per part: one per core, at most 8 (`app.reader_threads`
//!   0): the per-page work (inflate, parse, extract, canonicalize) runs there, so
//!   one part already uses the machine's cores;
//! - **parts**: one per 16 cores (1 below 32): a part adds its own seen set,
//!   exchange files and spool hand-offs; on 2 cores four parts cost 1.5 times the
//!   CPU per page of one, so parts are for machines whose single crawl loop
//!   cannot keep up, and for several machines;
//! - **downloaders**: one per 8 cores, at most 8: each is an asynchronous process
//!   holding hundreds of connections on a multi-threaded runtime, so more only
//!   help where one process's runtime becomes the bottleneck.
//!
//! Politeness settings are never sized here: they stay what the config says.

/// The cores this process may run on (1 when the system cannot tell).
pub fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

/// Application parts for `cores` cores.
pub fn parts_for(cores: u32) -> u32 {
    (cores / 16).clamp(1, 64)
}

/// Downloader processes for `cores` cores.
pub fn downloaders_for(cores: u32) -> u32 {
    (cores / 8).clamp(1, 8)
}

/// Reader threads per part for `cores` cores (what `app.reader_threads: 0` gives).
pub fn readers_for(cores: u32) -> u32 {
    cores.clamp(1, 8)
}

/// The default of `--parts` on this machine.
pub fn default_parts() -> u32 {
    parts_for(cores())
}

/// The default of `--downloaders` on this machine.
pub fn default_downloaders() -> u32 {
    downloaders_for(cores())
}

/// The line a crawl prints at start: what it runs with and why.
pub fn line(what: &str, parts: u32, downloaders: u32, reader_threads: usize) -> String {
    let cores = cores();
    let readers = match reader_threads {
        0 => readers_for(cores) as usize,
        n => n,
    };
    format!(
        "{what}: {cores} cores: {parts} application part{}, {readers} reader thread{} each, \
         {downloaders} downloader{} (--parts, --downloaders and app.reader_threads choose)",
        plural(parts as usize),
        plural(readers),
        plural(downloaders as usize),
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_machines_get_one_of_each_and_big_ones_more() {
        assert_eq!(
            (parts_for(1), downloaders_for(1), readers_for(1)),
            (1, 1, 1)
        );
        assert_eq!(
            (parts_for(2), downloaders_for(2), readers_for(2)),
            (1, 1, 2)
        );
        assert_eq!(
            (parts_for(16), downloaders_for(16), readers_for(16)),
            (1, 2, 8)
        );
        assert_eq!(
            (parts_for(64), downloaders_for(64), readers_for(64)),
            (4, 8, 8)
        );
        assert_eq!(
            (parts_for(0), downloaders_for(0), readers_for(0)),
            (1, 1, 1)
        );
    }

    #[test]
    fn the_line_says_what_was_chosen() {
        let l = line("crawl", 1, 2, 3);
        assert!(l.starts_with("crawl: "), "{l}");
        assert!(
            l.contains(" cores: 1 application part, 3 reader threads each, 2 downloaders ("),
            "{l}"
        );
    }
}
