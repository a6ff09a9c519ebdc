//! The seen set's files: golden bytes, corruption detected with typed errors,
//! leftover temp files, and a process killed in the middle of merges.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use seen::reader::{FileReader, verify};
use seen::{Corruption, SeenConfig, SeenError, SeenSet};

fn gen_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("seen-{generation:012}.pcs"))
}

fn tiny_set(dir: &Path) -> PathBuf {
    let config = SeenConfig {
        restart_interval: 2,
        ..SeenConfig::default()
    };
    let mut set = SeenSet::open(dir, config).unwrap();
    for key in [&b"b"[..], b"a", b"ab", b"a"] {
        set.insert(key, b"").unwrap();
    }
    set.close().unwrap();
    gen_path(dir, 1)
}

fn corruption(result: Result<impl std::fmt::Debug, SeenError>) -> Corruption {
    match result {
        Err(SeenError::Corrupt { what, .. }) => what,
        other => panic!("expected a corrupt-file error, got {other:?}"),
    }
}

#[test]
fn golden_bytes_of_a_tiny_file() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = fs::read(tiny_set(dir.path())).unwrap();
    #[rustfmt::skip]
    let mut want: Vec<u8> = vec![
        // header: magic, version 1, restart interval 2, generation 1, count 3
        b'P', b'C', b'R', b'W', b'S', b'E', b'E', b'N', 1, 0, 0, 0, 2, 0, 0, 0,
        1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
        // entries at 32: "a" whole (restart), "ab" = 1 shared + "b", "b" whole (restart)
        0, 1, b'a', 1, 1, b'b', 0, 1, b'b',
        // restart index at 41: offsets 32 and 38
        32, 0, 0, 0, 0, 0, 0, 0, 38, 0, 0, 0, 0, 0, 0, 0,
        // footer: index offset 41, count 3, generation 1
        41, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    ];
    let crc = crc32fast::hash(&want);
    assert_eq!(
        crc, 0x7056_e250,
        "CRC-32 (IEEE) of the bytes above, also by zlib.crc32"
    );
    want.extend_from_slice(&crc.to_le_bytes());
    want.extend_from_slice(b"SEEN");
    assert_eq!(bytes, want);
    let summary = verify(&gen_path(dir.path(), 1)).unwrap();
    assert_eq!(
        (summary.generation, summary.count, summary.bytes),
        (1, 3, 89)
    );
}

#[test]
fn corrupted_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny_set(dir.path());
    let good = fs::read(&path).unwrap();
    let with = |at: usize, byte: u8| {
        let mut b = good.clone();
        b[at] = byte;
        fs::write(&path, b).unwrap();
    };
    with(0, b'X');
    assert_eq!(corruption(verify(&path)), Corruption::BadMagic);
    assert_eq!(
        corruption(SeenSet::open(dir.path(), SeenConfig::default()).map(|_| ())),
        Corruption::BadMagic
    );
    with(8, 9);
    assert_eq!(corruption(verify(&path)), Corruption::UnsupportedVersion(9));
    with(24, 4); // header count 4, footer count 3
    assert_eq!(corruption(verify(&path)), Corruption::Inconsistent);
    with(34, b'c'); // "a" -> "c": then "ab" decodes as "cb", and "b" sorts before it
    assert_eq!(corruption(verify(&path)), Corruption::Unsorted { index: 2 });
    with(35, 5); // "ab" shares 5 bytes of a 1-byte key
    assert_eq!(corruption(verify(&path)), Corruption::BadEntry { index: 1 });
    with(41, 33); // restart index points off an entry
    assert_eq!(corruption(verify(&path)), Corruption::BadRestartIndex);
    with(37, b'c'); // "ab" -> "ac": still sorted, only the CRC can tell
    assert!(matches!(
        corruption(verify(&path)),
        Corruption::Checksum { .. }
    ));
    fs::write(&path, &good[..good.len() - 1]).unwrap();
    assert_eq!(corruption(verify(&path)), Corruption::BadEndMagic);
    fs::write(&path, &good[..40]).unwrap();
    assert_eq!(corruption(verify(&path)), Corruption::Truncated);
    fs::write(&path, &good).unwrap();
    verify(&path).unwrap();
}

#[test]
fn a_merge_over_a_corrupt_file_fails_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny_set(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    bytes[37] = b'c';
    fs::write(&path, &bytes).unwrap();
    // Header and footer are fine: open succeeds; the merge reads everything.
    let mut set = SeenSet::open(dir.path(), SeenConfig::default()).unwrap();
    set.insert(b"z", b"").unwrap();
    assert!(matches!(
        corruption(set.flush()),
        Corruption::Checksum { .. }
    ));
    assert!(matches!(set.insert(b"y", b""), Err(SeenError::Stopped)));
    drop(set);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        ["seen-000000000001.pcs"],
        "no new generation, no temp file"
    );
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_leftover_temp_file_is_removed_and_the_set_is_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny_set(dir.path());
    let tmp = dir.path().join("seen-000000000002.pcs.tmp");
    fs::write(&tmp, b"half a merge").unwrap();
    fs::write(dir.path().join("notes.txt"), b"not ours").unwrap();
    let mut set = SeenSet::open(dir.path(), SeenConfig::default()).unwrap();
    assert!(!tmp.exists());
    assert!(dir.path().join("notes.txt").exists());
    assert_eq!((set.generation(), set.len()), (1, 3));
    verify(&path).unwrap();
    set.insert(b"ab", b"").unwrap();
    set.insert(b"c", b"").unwrap();
    let batches = set.close().unwrap();
    let got: Vec<&[u8]> = batches[0].iter().map(|(k, _)| k).collect();
    assert_eq!(got, [&b"c"[..]]);
    assert_eq!(verify(&gen_path(dir.path(), 2)).unwrap().count, 4);
}

/// Keys of round `round` of the crash test's child: spread among earlier rounds'.
fn round_keys(round: u64) -> impl Iterator<Item = String> {
    (0..100_000u64)
        .map(move |i| format!("com.site{:03}.www/p/{i:06}/{round}", (i * 7 + round) % 500))
}

const CHILD_ENV: &str = "SEEN_CRASH_TEST_DIR";

/// In the child: merge round after round until killed.
fn child(dir: &Path) {
    let mut set = SeenSet::open(dir, SeenConfig::default()).unwrap();
    for round in 1..=60 {
        for key in round_keys(round) {
            set.insert(key.as_bytes(), b"").unwrap();
        }
        set.flush().unwrap();
        while set.try_recv_new().unwrap().is_some() {}
        println!("merged {round}");
    }
}

#[test]
fn a_killed_process_leaves_the_last_completed_generation() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        return child(Path::new(&dir));
    }
    // Kill the child while a merge's temp file exists; retry in the rare case the
    // merge completed between seeing the file and the kill.
    for _ in 0..5 {
        if kill_in_a_merge_and_check() {
            return;
        }
    }
    panic!("never caught a merge in progress");
}

fn names(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// Runs the child, kills it during a merge after round 3, checks the folder. False if
/// the merge had completed after all.
fn kill_in_a_merge_and_check() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_killed_process_leaves_the_last_completed_generation",
            "--nocapture",
        ])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(proc.stdout.take().unwrap()).lines();
    let mut merged = 0;
    while merged < 3 {
        let line = lines.next().expect("child ended early").unwrap();
        // libtest may print "test ... " on the same line, before the child's output.
        if let Some(at) = line.find("merged ") {
            merged = line[at + 7..].trim().parse().unwrap();
        }
    }
    let has_tmp = |dir: &Path| names(dir).iter().any(|n| n.ends_with(".tmp"));
    // Polled this often to kill it mid-merge; a merge that ends first is told below.
    test_support::wait::poll_every(Duration::from_secs(10), Duration::from_micros(500), || {
        has_tmp(dir.path()).then_some(())
    });
    proc.kill().unwrap(); // SIGKILL: no destructor runs
    proc.wait().unwrap();
    if !has_tmp(dir.path()) {
        return false;
    }

    let mut set = SeenSet::open(dir.path(), SeenConfig::default()).unwrap();
    let generation = set.generation();
    assert!(generation >= merged, "lost completed merge {merged}");
    let left = names(dir.path());
    assert!(
        left.iter().all(|n| !n.ends_with(".tmp")),
        "temp file left: {left:?}"
    );
    let mut want: Vec<String> = (1..=generation).flat_map(round_keys).collect();
    want.sort();
    let mut reader = FileReader::open(&gen_path(dir.path(), generation)).unwrap();
    for key in &want {
        assert!(reader.advance().unwrap());
        assert_eq!(reader.key(), key.as_bytes());
    }
    assert!(!reader.advance().unwrap());
    reader.finish().unwrap();
    // And it goes on: the next round's keys are new, the last one's are not.
    for key in round_keys(generation).chain(round_keys(generation + 1)) {
        set.insert(key.as_bytes(), b"").unwrap();
    }
    set.flush().unwrap();
    assert_eq!(set.try_recv_new().unwrap().unwrap().len(), 100_000);
    true
}
