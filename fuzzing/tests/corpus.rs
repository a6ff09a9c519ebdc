//! Replays every committed fuzz input through its target's entry function: the seed
//! corpora (`fuzzing/fuzz/corpus/<target>/`) and the crash reproducers
//! (`fuzzing/fuzz/regressions/<target>/`), so a stable `cargo test` without nightly or
//! cargo-fuzz still checks that none of them panics.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files under `dir/<target>/`, sorted (none if the directory is missing).
fn inputs(dir: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(fuzz_dir().join(dir).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("read corpus dir").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_target_has_a_seed_corpus_and_a_fuzz_target() {
    for (name, _) in fuzzing::TARGETS {
        assert!(
            !inputs("corpus", name).is_empty(),
            "no seed corpus for {name}"
        );
        let target = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        assert!(target.is_file(), "no fuzz target {}", target.display());
    }
}

#[test]
fn committed_corpora_and_reproducers_replay_without_panic() {
    let mut replayed = 0;
    for (name, entry) in fuzzing::TARGETS {
        for dir in ["corpus", "regressions"] {
            for file in inputs(dir, name) {
                let data = std::fs::read(&file).expect("read input");
                eprintln!("{name}: {}", file.display());
                entry(&data);
                replayed += 1;
            }
        }
    }
    eprintln!("replayed {replayed} inputs");
    assert!(replayed >= fuzzing::TARGETS.len());
}
