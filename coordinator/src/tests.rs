use std::collections::BTreeMap;

use super::*;
use app_core::twolevel::report_sites;
use std::path::Path;

fn config(dir: &Path, parts: u32, policy: Policy) -> CoordinatorConfig {
    CoordinatorConfig {
        root: dir.join("root"),
        stem: "bfs".into(),
        parts,
        state_dir: dir.join("coord"),
        policy,
        seeds: vec![
            (
                "seed-a.example".into(),
                "http://seed-a.example:8080/".into(),
            ),
            ("seed-b.example".into(), String::new()),
        ],
        reports_per_round: 100,
        seen_buffer_bytes: 1 << 16,
    }
}

fn report(c: &CoordinatorConfig, from: u32, sites: &[&str]) {
    let producer = ComponentId::new(format!("agent{from}")).unwrap();
    // Each site with its root (the http one on port 8080).
    let sites: Vec<(String, String)> = sites
        .iter()
        .map(|s| ((*s).to_owned(), format!("http://{s}:8080/")))
        .collect();
    report_sites(&c.root, &c.stem, from, c.parts, &producer, &sites).unwrap();
}

/// Every published assignment, site -> agents it was given to (more than one
/// would be a double assignment).
fn assignments(c: &CoordinatorConfig) -> BTreeMap<String, Vec<u32>> {
    let mut all: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for (_, sites) in
        twolevel::read_generations(&assignment_dir(&c.root, &c.stem), 0, c.parts).unwrap()
    {
        for (s, a, root) in sites {
            assert!(
                root.is_empty() || root == format!("http://{s}:8080/"),
                "{root}"
            );
            all.entry(s).or_default().push(a);
        }
    }
    all
}

fn status(c: &Coordinator) -> String {
    fs::read_to_string(c.status_path()).unwrap()
}

#[test]
fn seeds_and_reported_sites_are_assigned_once_round_robin() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 3, Policy::RoundRobin);
    let mut co = Coordinator::open(cfg.clone()).unwrap();
    assert!(co.round().unwrap(), "the seeds");
    assert!(!co.round().unwrap(), "nothing more");
    assert!(status(&co).starts_with("idle=1 "));
    report(&cfg, 0, &["x.example", "seed-a.example", "y.example"]);
    report(&cfg, 2, &["y.example", "z.example", "w.example"]);
    assert!(co.round().unwrap());
    let all = assignments(&cfg);
    let sites: Vec<&str> = all.keys().map(String::as_str).collect();
    assert_eq!(
        sites,
        [
            "seed-a.example",
            "seed-b.example",
            "w.example",
            "x.example",
            "y.example",
            "z.example"
        ]
    );
    assert!(all.values().all(|a| a.len() == 1), "{all:?}");
    // Each assignment carries the root its report (or seed) named.
    let roots: Vec<(String, String)> =
        twolevel::read_generations(&assignment_dir(&cfg.root, &cfg.stem), 0, 3)
            .unwrap()
            .into_iter()
            .flat_map(|(_, s)| s.into_iter().map(|(s, _, r)| (s, r)))
            .collect();
    assert!(roots.contains(&(
        "seed-a.example".into(),
        "http://seed-a.example:8080/".into()
    )));
    assert!(roots.contains(&("z.example".into(), "http://z.example:8080/".into())));
    // Round-robin over the order of assignment: 2, 2 and 2.
    assert_eq!(co.counters().assigned, vec![2, 2, 2]);
    assert_eq!((co.counters().reports, co.counters().reported), (2, 6));
    // The reports are gone once published; a report for 4 agents is refused.
    report(
        &config(dir.path(), 4, Policy::RoundRobin),
        1,
        &["v.example"],
    );
    assert!(co.round().unwrap());
    assert_eq!(assignments(&cfg).len(), 6);
    assert!(!co.round().unwrap());
    assert!(status(&co).contains("sites=6 "));
}

#[test]
fn a_restart_reads_claimed_reports_again_and_never_assigns_twice() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 2, Policy::RoundRobin);
    let mut co = Coordinator::open(cfg.clone()).unwrap();
    co.round().unwrap();
    // Killed after publishing a generation but before deleting its report: the
    // report is still claimed at the restart.
    report(&cfg, 0, &["a.example", "b.example"]);
    let claimed = co.inbox.claim_batch(10).unwrap();
    assert_eq!(claimed.len(), 1);
    let sites = twolevel::read_report(&claimed[0].read().unwrap(), 2).unwrap();
    for (s, root) in &sites {
        co.seen.insert(s.as_bytes(), root.as_bytes()).unwrap();
    }
    co.seen.flush().unwrap();
    let batch = co.seen.try_recv_new().unwrap().unwrap();
    let dealt = co.deal(
        batch
            .iter()
            .map(|(k, r)| {
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                (text(k), text(r))
            })
            .collect(),
    );
    twolevel::write_generation(&co.assign_dir, batch.generation(), 2, &dealt).unwrap();
    drop(claimed);
    drop(co);
    let mut co = Coordinator::open(cfg.clone()).unwrap();
    assert_eq!(co.counters().sites(), 4);
    assert!(co.round().unwrap(), "the claimed report, read again");
    let all = assignments(&cfg);
    assert_eq!(all.len(), 4);
    assert!(all.values().all(|a| a.len() == 1), "{all:?}");

    // Killed after a merge but before its generation was published: the merged
    // sites are not assigned yet; the report, still claimed, assigns them.
    report(&cfg, 1, &["c.example", "a.example"]);
    let claimed = co.inbox.claim_batch(10).unwrap();
    co.seen.insert(b"c.example", &[]).unwrap();
    co.seen.flush().unwrap();
    assert!(co.seen.try_recv_new().unwrap().is_some());
    drop(claimed);
    drop(co);
    let mut co = Coordinator::open(cfg.clone()).unwrap();
    co.round().unwrap();
    let all = assignments(&cfg);
    assert_eq!(all.len(), 5, "{all:?}");
    assert_eq!(all["c.example"].len(), 1);
    assert!(all.values().all(|a| a.len() == 1), "{all:?}");
    assert_eq!(co.counters().assigned, vec![3, 2]);
}

#[test]
fn balanced_gives_new_sites_to_the_agents_with_the_least_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 3, Policy::Balanced);
    cfg.seeds.clear();
    let mut co = Coordinator::open(cfg.clone()).unwrap();
    report(&cfg, 0, &["a.example", "b.example", "c.example"]);
    co.round().unwrap();
    assert_eq!(
        co.counters().assigned,
        vec![1, 1, 1],
        "equal loads: one each"
    );
    // Agent 0 fetched 90 pages, 1 fetched 10, 2 fetched 20: mean 40 a site.
    for (i, pages) in [(0, 90), (1, 10), (2, 20)] {
        fs::write(
            cfg.root.join("parts").join(format!("bfs-p{i}.status")),
            format!("idle=0 version=1 pages={pages}\n"),
        )
        .unwrap();
    }
    report(&cfg, 1, &["d.example", "e.example", "f.example"]);
    co.round().unwrap();
    // Loads 90, 40, 40 (a site with no pages yet counts the mean): 1, 2, then
    // 1 again (80 < 90).
    assert_eq!(co.counters().assigned, vec![1, 3, 2]);
    assert_eq!("balanced".parse::<Policy>(), Ok(Policy::Balanced));
    assert!("fair".parse::<Policy>().is_err());
}
