//! Claiming with real competing processes: every file is processed exactly once, and a
//! corrupt file is quarantined without stopping the consumer.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod dir_support;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use dir_support::{
    ChildGuard, DIR_VAR, Rng, TestDir, append_line, check_body, child_env, child_role, file_names,
    id, make_body, open_append, record_lines, wait_until,
};
use spool::claim::Consumer;
use spool::layout::SpoolDir;
use spool::name::{FileKind, Priority, SpoolName};
use spool::publish::Publisher;

const FILES: usize = 2_000;
const CLAIMERS: usize = 4;
const CLAIMER_CHILD: &str = "child_claimer";
const ID_VAR: &str = "SPOOL_TEST_CONSUMER";
const RECORD_VAR: &str = "SPOOL_TEST_RECORD";
const GO_VAR: &str = "SPOOL_TEST_GO";

/// Claimer role: says it is ready, waits for the go file (so all claimers start
/// together), then claims batches of random size until the folder is empty, recording
/// each processed file.
#[test]
#[ignore = "child process of competing_processes_claim_each_file_exactly_once"]
fn child_claimer() {
    if child_role().as_deref() != Some("claimer") {
        return;
    }
    let dir = SpoolDir::open(child_env(DIR_VAR)).unwrap();
    let consumer = Consumer::new(dir, id(&child_env(ID_VAR))).unwrap();
    let record_path = child_env(RECORD_VAR);
    let mut record = open_append(Path::new(&record_path));
    fs::write(format!("{record_path}.ready"), b"").unwrap();
    let go = child_env(GO_VAR);
    assert!(wait_until(Duration::from_secs(30), || Path::new(&go).exists()));
    let mut rng = Rng::from_time();
    loop {
        let batch = consumer.claim_batch(rng.range(1, 17) as usize).unwrap();
        if batch.is_empty() {
            break;
        }
        for c in batch {
            check_body(&c.read().unwrap()).unwrap();
            append_line(&mut record, &c.name().to_string());
            c.done().unwrap();
        }
    }
    assert!(consumer.resume().unwrap().is_empty());
}

/// Puts `FILES` small files from four producers into `dir` quickly (the publish path
/// with its fsyncs is tested elsewhere; here only the names and contents matter).
fn fill(dir: &SpoolDir) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rng = Rng::from_time();
    for i in 0..FILES {
        let name = SpoolName::new(
            Priority::new(rng.range(0, 4) as u8).unwrap(),
            id(&format!("p-{}", i % 4)),
            1_000_000 + i as u64,
            FileKind::Requests,
        )
        .to_string();
        let tmp = dir.tmp_dir().join(format!("{name}.fill"));
        fs::write(&tmp, make_body(i as u64, rng.range(16, 600) as usize)).unwrap();
        fs::rename(&tmp, dir.path().join(&name)).unwrap();
        names.insert(name);
    }
    names
}

#[test]
fn competing_processes_claim_each_file_exactly_once() {
    let t = TestDir::new("claimers");
    let dir = SpoolDir::open(t.path().join("requests")).unwrap();
    let all = fill(&dir);
    let dir_env = dir.path().to_str().unwrap().to_owned();
    let go = t.path().join("go");
    let go_env = go.to_str().unwrap().to_owned();
    let records: Vec<_> = (0..CLAIMERS)
        .map(|i| t.path().join(format!("record-{i}")))
        .collect();

    let mut children: Vec<ChildGuard> = records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            let consumer = format!("claimer-{i}");
            ChildGuard::spawn(
                CLAIMER_CHILD,
                "claimer",
                &[
                    (DIR_VAR, &dir_env),
                    (ID_VAR, &consumer),
                    (RECORD_VAR, record.to_str().unwrap()),
                    (GO_VAR, &go_env),
                ],
            )
        })
        .collect();
    let ready = |r: &Path| Path::new(&format!("{}.ready", r.display())).exists();
    assert!(
        wait_until(Duration::from_secs(30), || records.iter().all(|r| ready(r))),
        "claimers did not start"
    );
    let start = Instant::now();
    fs::write(&go, b"").unwrap();
    for child in &mut children {
        child.wait_success(Duration::from_secs(60));
    }
    let elapsed = start.elapsed();

    let mut seen = BTreeSet::new();
    let mut per_child = Vec::new();
    for record in &records {
        let lines = record_lines(record);
        per_child.push(lines.len());
        for name in lines {
            assert!(seen.insert(name.clone()), "{name} processed twice");
        }
    }
    assert_eq!(seen, all, "processed set differs from published set");
    assert!(dir.list().unwrap().is_empty());
    for i in 0..CLAIMERS {
        assert!(file_names(&dir.claimed_dir(&id(&format!("claimer-{i}")))).is_empty());
    }
    eprintln!("{FILES} files over {CLAIMERS} processes: {per_child:?} in {elapsed:?}");
}

#[test]
fn corrupt_file_is_quarantined_and_consumer_carries_on() {
    let t = TestDir::new("quarantine");
    let dir = SpoolDir::open(t.path().join("pages")).unwrap();
    let publisher = Publisher::new(dir.clone(), id("dl-7")).unwrap();
    let mut good = Vec::new();
    let mut corrupt = None;
    for i in 0..10u64 {
        let mut body = make_body(i, 200);
        if i == 3 {
            body[100] ^= 0xff;
        }
        let path = publisher
            .publish(Priority::NORMAL, FileKind::PageBatch, &body)
            .unwrap();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if i == 3 {
            corrupt = Some(name);
        } else {
            good.push(name);
        }
    }
    let corrupt = corrupt.unwrap();

    let consumer = Consumer::new(dir.clone(), id("app-2")).unwrap();
    let mut processed = Vec::new();
    loop {
        let batch = consumer.claim_batch(4).unwrap();
        if batch.is_empty() {
            break;
        }
        for c in batch {
            match check_body(&c.read().unwrap()) {
                Ok(()) => {
                    processed.push(c.name().to_string());
                    c.done().unwrap();
                }
                Err(why) => {
                    c.quarantine(&format!("bad page batch: {why}")).unwrap();
                }
            }
        }
    }
    assert_eq!(processed, good, "every good file, in FIFO order");
    let bad = file_names(&dir.bad_dir());
    let why_name = format!("{corrupt}.why");
    assert_eq!(bad, BTreeSet::from([corrupt, why_name.clone()]));
    let why = fs::read_to_string(dir.bad_dir().join(&why_name)).unwrap();
    assert!(
        why.contains("reason: bad page batch: checksum mismatch"),
        "{why}"
    );
    assert!(why.contains("consumer: app-2"), "{why}");
    assert!(why.contains("time: 20"), "{why}");
    assert!(dir.list().unwrap().is_empty());
    assert!(consumer.resume().unwrap().is_empty());
    assert!(file_names(&dir.tmp_dir()).is_empty());
}
