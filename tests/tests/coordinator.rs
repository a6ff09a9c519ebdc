//! `polycrawl coordinator`, the coordinator of a two-level crawl (FC2L-UDC),
//! as its own process: agents' site reports go in through the spool, assignment
//! generations come out, and kill -9 at any moment, then a restart, loses no site
//! and never assigns one site to two agents.
//!
//! The reports are written here by hand in the documented format
//! (`app-core/src/twolevel.rs`) through the spool's publisher, and
//! the assignment files are read here by hand: the test does not use the
//! coordinator's own reader or writer.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spool::publish::Publisher;
use spool::{AppId, ComponentId, Spool};
use tests::bin;
use tests::process::ProcessGuard;

const AGENTS: u32 = 4;

fn start(dir: &Path, run: u32) -> ProcessGuard {
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("coordinator")
        .arg("--root")
        .arg(dir.join("root"))
        .arg("--state")
        .arg(dir.join("coord"))
        .args(["--parts", &AGENTS.to_string(), "--poll-ms", "5"])
        .arg("--seeds")
        .arg(dir.join("seeds.txt"));
    cmd.env("RUST_LOG", "warn");
    let mut p = ProcessGuard::spawn(&format!("coordinator{run}"), cmd, dir)
        .expect("starting polycrawl coordinator");
    if let Err(report) = p.wait_for_line(
        |l| l.starts_with("coordinator ready "),
        Duration::from_secs(30),
    ) {
        panic!("{report}");
    }
    p
}

/// Publishes a report of `sites` from `agent` as an agent does.
fn report(root: &Path, agent: u32, sites: &[String]) {
    let dir = Spool::new(root)
        .exchange(&AppId::new("bfs-coord".to_owned()).unwrap())
        .unwrap();
    let producer = ComponentId::new(format!("bfs-p{agent}")).unwrap();
    let mut text = format!("#polycrawl-sites v1 from={agent} parts={AGENTS}\n");
    for s in sites {
        text.push_str(s);
        text.push('\n');
    }
    Publisher::new(dir, producer)
        .unwrap()
        .publish(
            spool::name::Priority::NORMAL,
            spool::name::FileKind::Exchange,
            text.as_bytes(),
        )
        .unwrap();
}

/// Every assignment line of every published generation: site -> agents.
fn assignments(root: &Path) -> BTreeMap<String, Vec<u32>> {
    let dir = root.join("sites").join("bfs");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("assign-") && n.ends_with(".tsv"))
        })
        .collect();
    names.sort();
    let mut all: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        assert!(
            header.starts_with("#polycrawl-sites-assign v1 parts=4 generation="),
            "{header}"
        );
        for line in lines {
            // site, agent and (issue 41) the root the owner starts it from.
            let mut fields = line.split('\t');
            let (site, agent) = (fields.next().unwrap(), fields.next().unwrap());
            let agent: u32 = agent.parse().unwrap();
            if let Some(root) = fields.next() {
                assert!(root.contains(&format!("://{site}")), "{line}");
            }
            assert!(agent < AGENTS);
            all.entry(site.to_owned()).or_default().push(agent);
        }
    }
    all
}

/// Report files waiting or claimed.
fn reports_left(root: &Path) -> usize {
    let dir = root.join("exchange").join("bfs-coord");
    let count = |d: &Path| {
        std::fs::read_dir(d).map_or(0, |r| {
            r.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .count()
        })
    };
    let claimed: usize = std::fs::read_dir(dir.join(".claimed"))
        .map_or(0, |r| r.flatten().map(|e| count(&e.path())).sum());
    count(&dir) + claimed
}

fn idle(root: &Path) -> bool {
    std::fs::read_to_string(root.join("parts").join("bfs-coord.status"))
        .is_ok_and(|t| t.starts_with("idle=1 "))
}

/// Waits until every report is read and the coordinator says it is idle.
fn settle(root: &Path, co: &mut ProcessGuard) {
    let settled =
        test_support::wait::poll_every(Duration::from_secs(60), Duration::from_millis(20), || {
            (reports_left(root) == 0 && idle(root)).then_some(())
        });
    assert!(
        settled.is_some(),
        "{}",
        co.report(&format!("{} reports left", reports_left(root)))
    );
}

#[test]
fn sites_are_assigned_once_each_across_kill_9_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::write(
        dir.path().join("seeds.txt"),
        "https://seed0.example:8443/\nhttp://Seed1.example/\nhttp://seed0.example:8080/x\n",
    )
    .unwrap();
    let mut co = start(dir.path(), 0);
    let mut expected: BTreeSet<String> =
        ["seed0.example", "seed1.example"].map(str::to_owned).into();
    // A deterministic stream of reports: 400 files of 12 sites from 3,000,
    // each site reported by several agents, some many times.
    let mut x: u64 = 7;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut kills = 0;
    for file in 0..400u32 {
        let sites: Vec<String> = (0..12)
            .map(|_| format!("h{}.example", next() % 3000))
            .collect();
        expected.extend(sites.iter().cloned());
        report(&root, file % AGENTS, &sites);
        // kill -9 every 40 files, at a moment the coordinator is busy, and start
        // it again.
        if file % 40 == 39 {
            std::thread::sleep(Duration::from_millis(next() % 30));
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(co.pid() as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .unwrap();
            let _ = co.wait_exit(Duration::from_secs(10));
            kills += 1;
            co = start(dir.path(), kills);
        }
    }
    settle(&root, &mut co);
    let all = assignments(&root);
    let doubled: Vec<(&String, &Vec<u32>)> = all.iter().filter(|(_, a)| a.len() > 1).collect();
    assert!(doubled.is_empty(), "assigned twice: {doubled:?}");
    let got: BTreeSet<String> = all.keys().cloned().collect();
    let lost: Vec<&String> = expected.difference(&got).collect();
    assert!(lost.is_empty(), "{} sites lost: {lost:?}", lost.len());
    assert_eq!(got, expected, "nothing assigned that nobody reported");
    // Round-robin: the agents' shares differ by at most one site.
    let mut per = [0u64; AGENTS as usize];
    for agents in all.values() {
        per[agents[0] as usize] += 1;
    }
    let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
    assert!(hi - lo <= 1, "{per:?}");
    // A clean stop prints the same figures.
    co.terminate(Duration::from_secs(10)).unwrap();
    let last = co.stdout().last().cloned().unwrap_or_default();
    assert!(
        last.starts_with("coordinator stopped ")
            && last.contains(&format!(" sites={} ", expected.len())),
        "{last}"
    );
    eprintln!(
        "{} sites, {kills} kill -9s, per agent {per:?}",
        expected.len()
    );
}
