//! The one-screen summary printed at the end of `polycrawl demo` and
//! `polycrawl crawl`.

use std::fmt::Write as _;
use std::time::Duration;

use super::layout::Layout;
use super::repo_scan::RepoScan;
use super::system::{Ending, Finished};
use super::threads::{ThreadCpu, busiest_line};
use super::websim_check::WebsimCheck;

/// The outcome counts of the application's summary line (the part in
/// parentheses after `N outcomes`), e.g. `dns_failure=3 robots_excluded=9`.
pub fn outcomes_of(app_summary: &str) -> Option<&str> {
    let after = &app_summary[app_summary.find(" outcomes (")? + " outcomes (".len()..];
    Some(&after[..after.find(')')?])
}

/// The hosts the crawl gave up on, as the application's summary line names them
/// (`2 hosts given up: http://a.test (3 URLs: ...); ...`, up to what the line
/// says next: a split crawl's `, part ` or the budgets' ` (most cut: `), if any.
pub fn given_up_of(app_summary: &str) -> Option<&str> {
    let at = app_summary.find(" hosts given up: ")?;
    let start = app_summary[..at].rfind(", ").map_or(0, |i| i + 2);
    let rest = &app_summary[start..];
    let end = [", part ", " (most cut: "]
        .iter()
        .filter_map(|next| rest.find(next))
        .min()
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// `12.3 s in the crawling system = 0.62 ms per page (manager 3.1, ...); websim 4.0 s`.
pub fn cpu_line(cpu: &[(String, Duration)], pages: u64, websim: Option<Duration>) -> String {
    let total: Duration = cpu.iter().map(|(_, d)| *d).sum();
    let per_page = if pages > 0 {
        format!(
            "{:.2} ms per page",
            total.as_secs_f64() * 1000.0 / pages as f64
        )
    } else {
        "no pages".to_owned()
    };
    let parts: Vec<String> = cpu
        .iter()
        .map(|(name, d)| format!("{name} {:.1}", d.as_secs_f64()))
        .collect();
    let mut line = format!(
        "{:.1} s in the crawling system = {per_page} ({})",
        total.as_secs_f64(),
        parts.join(", ")
    );
    if let Some(w) = websim {
        let _ = write!(line, "; websim {:.1} s", w.as_secs_f64());
    }
    line
}

/// The CPU figures of a crawl's processes for the summary.
#[derive(Debug, Clone, Copy)]
pub struct CpuUse<'a> {
    /// CPU time of each process of the crawling system, by name.
    pub processes: &'a [(String, Duration)],
    /// Each process's threads, by process name.
    pub threads: &'a [(String, Vec<ThreadCpu>)],
    /// The simulated web's, shown apart (it is not the crawler's cost).
    pub websim: Option<Duration>,
    /// Each manager's `manager stages measured_ms=N starved_ms=N` line.
    pub manager_stages: &'a [String],
}

/// `download slots free with no URL ready 6.1 % of the crawl (0.4 of 6.6 s); held by
/// politeness with URLs queued 80.2 %` from the managers' stage lines (summed over
/// managers); `None` without one.
pub fn starved_line(lines: &[String]) -> Option<String> {
    let field = |line: &str, key: &str| -> Option<u64> {
        line.split_ascii_whitespace()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    let (mut measured, mut held, mut starved) = (0u64, 0u64, 0u64);
    for line in lines {
        measured += field(line, "measured_ms")?;
        held += field(line, "held_ms")?;
        starved += field(line, "starved_ms")?;
    }
    if measured == 0 {
        return None;
    }
    let share = |ms: u64| 100.0 * ms as f64 / measured as f64;
    Some(format!(
        "download slots free with no URL ready {:.1} % of the crawl ({:.1} of {:.1} s); \
         held by politeness, DNS or robots.txt with URLs queued {:.1} %",
        share(starved),
        starved as f64 / 1000.0,
        measured as f64 / 1000.0,
        share(held),
    ))
}

/// The summary as text.
pub fn render(
    what: &str,
    finished: &Finished,
    layout: &Layout,
    scan: &RepoScan,
    check: Option<&WebsimCheck>,
    cpu: CpuUse<'_>,
) -> String {
    let mut o = String::new();
    let secs = finished.elapsed.as_secs_f64();
    let ok = scan.by_status.get(&200).copied().unwrap_or(0);
    let rate = if secs > 0.0 {
        scan.responses as f64 / secs
    } else {
        0.0
    };
    let cut = finished
        .part_summaries
        .iter()
        .flatten()
        .chain(&finished.app_summary)
        .any(|l| l.contains(": Incomplete:"));
    let _ = writeln!(o, "{}", ending_line(what, &finished.ending, secs, cut));
    if !finished.restarts.is_empty() {
        let parts: Vec<String> = finished
            .restarts
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let _ = writeln!(o, "restarts:   {}", parts.join(", "));
    }
    let _ = writeln!(
        o,
        "pages:      {} responses stored, {ok} with status 200; others: {}",
        scan.responses,
        scan.other_statuses()
    );
    if scan.revisits > 0 {
        let _ = writeln!(
            o,
            "duplicates: {} revisit records (same content as an earlier page)",
            scan.revisits
        );
    }
    let split = finished.part_summaries.len() > 1;
    let _ = writeln!(o, "errors:     {}", outcomes(finished));
    for (i, s) in app_summaries(finished).enumerate() {
        if let Some(given_up) = given_up_of(s) {
            let part = if split {
                format!("part {i}: ")
            } else {
                String::new()
            };
            let _ = writeln!(o, "gave up:    {part}{given_up}");
        }
    }
    let _ = writeln!(
        o,
        "data:       {:.1} MiB of WARC in {} files",
        scan.bytes as f64 / (1024.0 * 1024.0),
        scan.files.len()
    );
    let _ = writeln!(o, "speed:      {rate:.1} pages/s");
    let _ = writeln!(
        o,
        "cpu:        {}",
        cpu_line(cpu.processes, scan.responses, cpu.websim)
    );
    let total: Duration = cpu.processes.iter().map(|(_, d)| *d).sum();
    if let Some(line) = starved_line(cpu.manager_stages) {
        let _ = writeln!(o, "starved: {line}");
    }
    if let Some(line) = busiest_line(cpu.threads, total) {
        let _ = writeln!(o, "busiest thread: {line}");
    }
    let repo = if split {
        layout.out.join("repository-p*")
    } else {
        layout.repository.clone()
    };
    let _ = writeln!(
        o,
        "WARCs:      {}",
        repo.join(storage::repository::WARC_DIR).display()
    );
    if let Some(c) = check {
        check_lines(&mut o, c);
    }
    if let (Some(s), false) = (&finished.app_summary, split) {
        let _ = writeln!(o, "app:        {s}");
    }
    let _ = writeln!(o, "logs:       {}", layout.logs.display());
    o
}

/// The first line: how the run ended, after how long.
/// `cut`: some application cut URLs in scope (its line says `Incomplete`).
fn ending_line(what: &str, ending: &Ending, secs: f64, cut: bool) -> String {
    match ending {
        Ending::Complete if cut => format!(
            "{what}: crawl incomplete in {secs:.1} s: URLs in scope were cut (the app line \
             counts them by rule and names the cut.tsv that lists them)"
        ),
        Ending::Complete => format!("{what}: crawl complete in {secs:.1} s"),
        Ending::Interrupted => format!(
            "{what}: interrupted after {secs:.1} s; state kept: the same command resumes the crawl"
        ),
        // The reason's first line; its log tail follows in the error below.
        Ending::GaveUp(why) => format!(
            "{what}: stopped after {secs:.1} s: {}",
            why.lines().next().unwrap_or("a process kept dying")
        ),
    }
}

/// The application summary lines: each part's for a split crawl, else the one.
fn app_summaries(finished: &Finished) -> impl Iterator<Item = &str> {
    let parts = finished.part_summaries.iter().flatten().map(String::as_str);
    let single = finished.app_summary.as_deref();
    let split = finished.part_summaries.len() > 1;
    parts
        .filter(move |_| split)
        .chain(single.filter(|_| !split))
}

/// The `errors:` line's text: the application's outcome counts, each part's in
/// part order for a split crawl.
fn outcomes(finished: &Finished) -> String {
    if finished.part_summaries.len() > 1 {
        finished
            .part_summaries
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let s = s
                    .as_deref()
                    .map_or("unknown", |s| outcomes_of(s).unwrap_or("none"));
                format!("part {i}: {s}")
            })
            .collect::<Vec<_>>()
            .join("; ")
    } else {
        finished
            .app_summary
            .as_deref()
            .map(|s| outcomes_of(s).unwrap_or("none"))
            .unwrap_or("unknown (no summary line from the application)")
            .to_owned()
    }
}

/// The demo's lines against websim's oracle: coverage, duplicate and
/// robots-disallowed fetches with samples, requests.
fn check_lines(o: &mut String, c: &WebsimCheck) {
    let _ = writeln!(
        o,
        "coverage: {}/{} ({:.1} %)",
        c.fetched,
        c.expected,
        c.percent()
    );
    for url in &c.missing_sample {
        let _ = writeln!(o, "  not stored: {url}");
    }
    duplicate_lines(o, c);
    let _ = writeln!(o, "robots-disallowed fetches: {}", c.never_fetched.len());
    for url in c.never_fetched.iter().take(5) {
        let _ = writeln!(o, "  must never be fetched: {url}");
    }
    let _ = writeln!(
        o,
        "requests:   {} to websim ({} repeated robots.txt fetches: 5xx retries, http and https origins)",
        c.requests, c.robots_repeats
    );
}

/// `duplicate fetches: N`, and when there are some, how many a kill explains
/// (by the killed process's role) and how many are unexplained, with samples.
fn duplicate_lines(o: &mut String, c: &WebsimCheck) {
    let n = c.duplicates.len();
    if n == 0 {
        let _ = writeln!(o, "duplicate fetches: 0");
        return;
    }
    let unexplained = c.unexplained().count();
    let by_role: Vec<String> = c
        .explained_by_role()
        .iter()
        .map(|(role, k)| format!("{role} {k}"))
        .collect();
    let roles = if by_role.is_empty() {
        String::new()
    } else {
        format!(" ({})", by_role.join(", "))
    };
    let _ = writeln!(
        o,
        "duplicate fetches: {n}: {} refetched after a kill{roles}, {unexplained} unexplained \
         ({} deaths seen)",
        n - unexplained,
        c.kills.len()
    );
    let explained = c
        .refetches
        .iter()
        .filter_map(|r| Some((r, c.kills.get(r.kill?)?)));
    for (r, k) in explained.take(5) {
        let _ = writeln!(o, "  refetched after {} died: {}", k.process, r.url);
    }
    for r in c.unexplained().take(5) {
        let _ = writeln!(o, "  fetched twice, no kill between: {}", r.url);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_from_the_app_line() {
        let line = "app bfs: Complete: 10 URLs requested, 7 pages stored, 3 outcomes (dns_failure=1 robots_excluded=2), 12 URLs seen, 0 batches quarantined";
        assert_eq!(outcomes_of(line), Some("dns_failure=1 robots_excluded=2"));
        assert_eq!(
            outcomes_of(
                "app bfs: Complete: 1 URLs requested, 1 pages stored, 0 outcomes, 1 URLs seen"
            ),
            None
        );
    }

    #[test]
    fn given_up_hosts_from_the_app_line() {
        let named = "2 hosts given up: http://a.test:8080 (3 URLs: given up after 2 failed \
                     tries in 60.000 s (next try past host_retry_window_ms 120000); last: \
                     robots.txt unreachable: robots.txt status 503); http://b.test (1 URLs: x)";
        let line = format!(
            "app bfs: Complete: 10 URLs requested, 6 pages stored, 4 outcomes \
             (too_many_failures=4), 12 URLs seen, 0 batches quarantined, 0 URLs cut by host \
             budgets, 0 redirects cut, {named}"
        );
        assert_eq!(given_up_of(&line), Some(named));
        let split = format!("{line}, part 0 of 2 (Exchange): sent 1 URLs");
        assert_eq!(given_up_of(&split), Some(named));
        let cut = format!("{line} (most cut: a.test budget=500 requested=500 cut=9)");
        assert_eq!(given_up_of(&cut), Some(named));
        assert_eq!(given_up_of("app bfs: Complete: 1 URLs requested"), None);
    }

    #[test]
    fn starved_share_from_the_managers_lines() {
        let lines = vec![
            "manager stages measured_ms=6000 held_ms=1000 starved_ms=300".to_owned(),
            "manager stages measured_ms=4000 held_ms=500 starved_ms=700".to_owned(),
        ];
        assert_eq!(
            starved_line(&lines).as_deref(),
            Some(
                "download slots free with no URL ready 10.0 % of the crawl (1.0 of 10.0 s); \
                 held by politeness, DNS or robots.txt with URLs queued 15.0 %"
            )
        );
        assert_eq!(starved_line(&[]), None);
        assert_eq!(
            starved_line(&["manager stages measured_ms=x".to_owned()]),
            None
        );
    }
}
