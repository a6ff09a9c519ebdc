//! What an application's summary line says of how its crawl ended (issue 37): a
//! crawl ends `Complete` when every URL it requested ended as a page or an outcome
//! and nothing in scope was cut, `Incomplete` when it ended with cuts, counted by
//! rule (`cut in scope: N URLs (URLs/hosts by rule: sequence=3/1 ...)`).
//!
//! websim's webs hold trap URLs (repeated path segments, calendars) that no
//! manifest lists: a crawl of them may end `Incomplete` with detector cuts and
//! still be exact against the manifest. A budget or ceiling cut is never expected
//! there.

/// The rules that cut URLs in scope, from a summary line (empty: none).
pub fn cut_rules(line: &str) -> Vec<String> {
    let Some(rest) = line.split("URLs/hosts by rule: ").nth(1) else {
        return Vec::new();
    };
    let rules = rest.split(')').next().unwrap_or_default();
    rules
        .split_whitespace()
        .filter_map(|r| r.split('=').next())
        .map(str::to_owned)
        .collect()
}

/// Whether the summary line says the crawl ended by itself with every URL it
/// requested done, and nothing cut but by a trap detector or the depth limit.
pub fn ended_with_traps_at_most(line: &str) -> bool {
    line.contains(": Complete:")
        || (line.contains(": Incomplete:")
            && cut_rules(line)
                .iter()
                .all(|r| r != "host_ceiling" && r != "host_budget"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_rules() {
        let line = "app bfs: Incomplete: 3 URLs requested, ..., scope open, cut in scope: \
                    4 URLs (URLs/hosts by rule: depth=1/1 repeated_segment=3/2), listed in x";
        assert_eq!(cut_rules(line), ["depth", "repeated_segment"]);
        assert!(ended_with_traps_at_most(line));
        assert!(!ended_with_traps_at_most(
            "app bfs: Incomplete: ..., cut in scope: 4 URLs (URLs/hosts by rule: host_ceiling=4/1)"
        ));
        assert!(ended_with_traps_at_most(
            "app bfs: Complete: 3 URLs requested"
        ));
        assert!(!ended_with_traps_at_most(
            "app bfs: Shutdown: 3 URLs requested"
        ));
    }
}
