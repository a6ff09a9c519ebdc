//! [`finish`]: the one end of `polycrawl crawl` and `polycrawl demo` after the
//! watch loop: stop every process in order, fold what they printed last into the
//! run's record, say which did not stop cleanly, and read back what the parts'
//! repositories hold; then [`Ended::print`] prints the summary (and, for a split
//! crawl, the parts' figures and summary lines).
//!
//! This module must never judge a run (the caller decides what an ending or a
//! websim check means for its exit code).

use std::time::Duration;

use super::layout::Layout;
use super::parts::{Metrics, SplitArgs};
use super::progress::Progress;
use super::repo_scan::RepoScan;
use super::summary;
use super::system::{Finished, Stopped, System};
use super::websim_check::WebsimCheck;

/// A run that is over: its record, how its processes ended, its repositories.
#[derive(Debug)]
pub struct Ended {
    /// How the run went, with the parts' last summary lines.
    pub finished: Finished,
    /// How the processes ended (CPU time, threads, the managers' stage lines).
    pub stopped: Stopped,
    /// Each part's repository, in part order.
    pub scans: Vec<RepoScan>,
    /// Every part's repository together.
    pub scan: RepoScan,
}

/// Stops `system` (after `progress` is finished), then calls `after_stop` (what
/// must go once the processes are gone: the simulated machines, websim), then
/// completes `result` (the watch loop's) with the processes' last summary lines
/// and reads the `parts` repositories of `layout`. `what` names the run in its
/// lines (`crawl`, `demo`).
pub fn finish(
    system: System,
    result: anyhow::Result<Finished>,
    progress: Progress,
    after_stop: impl FnOnce(),
    what: &str,
    layout: &Layout,
    parts: u32,
) -> anyhow::Result<Ended> {
    progress.finish();
    let stopped = system.stop();
    after_stop();
    let mut finished = result?;
    if stopped.app_summary.is_some() {
        finished.app_summary = stopped.app_summary.clone();
    }
    for (i, s) in stopped.part_summaries.iter().enumerate() {
        if let (Some(s), Some(slot)) = (s, finished.part_summaries.get_mut(i)) {
            *slot = Some(s.clone());
        }
    }
    if !stopped.unclean.is_empty() {
        eprintln!(
            "{what}: did not stop cleanly: {}",
            stopped.unclean.join(", ")
        );
    }
    let scans = layout
        .repositories(parts)
        .iter()
        .map(|r| RepoScan::read(r))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let scan = RepoScan::merge(&scans);
    Ok(Ended {
        finished,
        stopped,
        scans,
        scan,
    })
}

impl Ended {
    /// Prints the summary titled `title`, with the websim `check` (a demo) and
    /// websim's CPU time; for a split crawl, the parts' figures (`expected` pages:
    /// the manifest's, when known) and each part's summary line.
    pub fn print(
        &self,
        title: &str,
        layout: &Layout,
        check: Option<&WebsimCheck>,
        websim_cpu: Option<Duration>,
        split: &SplitArgs,
    ) {
        let stopped = &self.stopped;
        print!(
            "{}",
            summary::render(
                title,
                &self.finished,
                layout,
                &self.scan,
                check,
                summary::CpuUse {
                    processes: &stopped.cpu,
                    threads: &stopped.threads,
                    manager_stages: &stopped.manager_stages,
                    websim: websim_cpu,
                },
            )
        );
        if split.parts > 1 {
            let expected = check.map(|c| c.expected);
            let metrics = Metrics::compute(&self.scans, &self.finished.part_summaries, expected);
            print!("{}", metrics.render(split.mode, split.systems));
            for (i, s) in self.finished.part_summaries.iter().enumerate() {
                if let Some(s) = s {
                    println!("part {i}:     {s}");
                }
            }
        }
    }
}
