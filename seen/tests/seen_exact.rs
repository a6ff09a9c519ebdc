//! The seen set against a `HashMap` model: every key reported new exactly once, in
//! the generation of its first insertion, with its first payload; nothing else.
//! Plus payloads, reopening, release and rollback, and back-pressure.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::HashMap;
use std::path::Path;

use seen::reader::FileReader;
use seen::{NewBatch, SeenConfig, SeenError, SeenSet};

/// splitmix64: deterministic test randomness without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Keys with long shared prefixes, keys that are prefixes of others, the empty key
/// and arbitrary bytes (0x00, 0xff).
fn universe(rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
    const STEMS: [&[u8]; 5] = [
        b"",
        b"com.acme.www/",
        b"com.acme.www/a/b/c/",
        b"org.x/",
        b"\xff\x00",
    ];
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let mut k = STEMS[rng.below(STEMS.len())].to_vec();
            for _ in 0..rng.below(12) {
                k.push([b'a', b'b', b'/', 0, 0xff][rng.below(5)]);
            }
            k
        })
        .collect();
    keys.push(Vec::new());
    keys
}

/// What the model says of each key: first payload and the generation it went into.
type Model = HashMap<Vec<u8>, (Vec<u8>, u64)>;

/// Checks one batch against the model and records its keys.
fn check_batch(batch: &NewBatch, model: &Model, reported: &mut HashMap<Vec<u8>, u64>) {
    let keys: Vec<&[u8]> = batch.iter().map(|(k, _)| k).collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "batch not strictly sorted"
    );
    for (key, payload) in batch.iter() {
        let Some((first, generation)) = model.get(key) else {
            panic!("false positive: {key:?} was never inserted");
        };
        assert_eq!(
            payload,
            &first[..],
            "payload of {key:?} is not the first one"
        );
        assert_eq!(
            batch.generation(),
            *generation,
            "{key:?} reported in the wrong merge"
        );
        assert!(
            reported.insert(key.to_vec(), batch.generation()).is_none(),
            "{key:?} reported twice"
        );
    }
}

fn file_keys(path: &Path) -> Vec<Vec<u8>> {
    let mut reader = FileReader::open(path).unwrap();
    let mut keys = Vec::new();
    while reader.advance().unwrap() {
        keys.push(reader.key().to_vec());
    }
    reader.finish().unwrap();
    keys
}

#[test]
fn exact_against_hashmap_model_over_many_merges() {
    let dir = tempfile::tempdir().unwrap();
    let config = SeenConfig {
        buffer_bytes: 4096,
        restart_interval: 4,
    };
    let mut set = SeenSet::open(dir.path(), config).unwrap();
    let mut rng = Rng(7);
    let universe = universe(&mut rng, 4000);
    let mut model = Model::new();
    let mut reported = HashMap::new();
    let mut batches = 0;
    for i in 0..60_000u32 {
        // Skewed choice: a few keys come back very often, most now and then.
        let spread = rng.below(universe.len()) + 1;
        let key = &universe[rng.below(spread)];
        let payload = i.to_le_bytes()[..(i % 5) as usize].to_vec();
        model
            .entry(key.clone())
            .or_insert((payload.clone(), set.pending_generation()));
        set.insert(key, &payload).unwrap();
        while let Some(batch) = set.try_recv_new().unwrap() {
            batches += 1;
            assert_eq!(batch.generation(), batches, "batches out of order");
            check_batch(&batch, &model, &mut reported);
        }
    }
    set.flush().unwrap();
    while let Some(batch) = set.recv_new().unwrap() {
        batches += 1;
        assert_eq!(batch.generation(), batches);
        check_batch(&batch, &model, &mut reported);
    }
    assert_eq!(set.recv_new().unwrap(), None);
    assert_eq!(
        reported.len(),
        model.len(),
        "false negatives: keys never reported"
    );
    let stats = set.stats();
    assert!(stats.merges_done >= 20, "only {} merges", stats.merges_done);
    assert_eq!(stats.merges_done, batches);
    assert_eq!(stats.inserts, 60_000);
    assert_eq!(set.len(), model.len() as u64);
    let mut want: Vec<Vec<u8>> = model.into_keys().collect();
    want.sort();
    assert_eq!(file_keys(&set.file_path().unwrap()), want);
}

#[test]
fn first_payload_wins_and_reopen_keeps_merged_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = SeenSet::open(dir.path(), SeenConfig::default()).unwrap();
    set.insert(b"k", b"first").unwrap();
    set.insert(b"k", b"second").unwrap();
    set.insert(b"j", b"").unwrap();
    set.flush().unwrap();
    let batch = set.try_recv_new().unwrap().unwrap();
    assert_eq!(batch.generation(), 1);
    let got: Vec<(&[u8], &[u8])> = batch.iter().collect();
    assert_eq!(got, [(&b"j"[..], &b""[..]), (b"k", b"first")]);
    set.insert(b"k", b"third").unwrap();
    set.flush().unwrap();
    let batch = set.try_recv_new().unwrap().unwrap();
    assert_eq!((batch.generation(), batch.len()), (2, 0));
    assert_eq!(set.try_recv_new().unwrap(), None);
    set.insert(b"buffered, never merged", b"").unwrap();
    drop(set);

    let mut set = SeenSet::open(dir.path(), SeenConfig::default()).unwrap();
    assert_eq!((set.generation(), set.len()), (2, 2));
    for key in [&b"k"[..], b"l", b"j", b"buffered, never merged"] {
        set.insert(key, b"again").unwrap();
    }
    let batches = set.close().unwrap();
    assert_eq!(batches.len(), 1);
    let got: Vec<&[u8]> = batches[0].iter().map(|(k, _)| k).collect();
    assert_eq!(got, [&b"buffered, never merged"[..], b"l"]);
}

#[test]
fn release_deletes_old_generations_and_open_at_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = SeenSet::open(dir.path(), SeenConfig::default()).unwrap();
    for key in [b"a", b"b", b"c"] {
        set.insert(key, b"").unwrap();
        set.flush().unwrap();
    }
    assert!(matches!(
        set.release(1),
        Err(SeenError::ReleaseAhead {
            requested: 1,
            delivered: 0
        })
    ));
    while set.try_recv_new().unwrap().is_some() {}
    set.release(2).unwrap();
    let names = |dir: &Path| {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(dir.path()),
        ["seen-000000000002.pcs", "seen-000000000003.pcs"]
    );
    drop(set);

    // The caller published up to generation 2 only: roll back and replay "c".
    let mut set = SeenSet::open_at(dir.path(), 2, SeenConfig::default()).unwrap();
    assert_eq!(names(dir.path()), ["seen-000000000002.pcs"]);
    assert_eq!((set.generation(), set.len()), (2, 2));
    set.insert(b"c", b"replayed").unwrap();
    set.insert(b"a", b"replayed").unwrap();
    let batches = set.close().unwrap();
    let got: Vec<(&[u8], &[u8])> = batches[0].iter().collect();
    assert_eq!(got, [(&b"c"[..], &b"replayed"[..])]);
    assert_eq!(batches[0].generation(), 3);

    let missing = SeenSet::open_at(dir.path(), 1, SeenConfig::default());
    assert!(matches!(
        missing,
        Err(SeenError::MissingGeneration { generation: 1, .. })
    ));
}

#[test]
fn a_full_buffer_blocks_only_while_the_previous_merge_runs() {
    let dir = tempfile::tempdir().unwrap();
    // A big file first, so that each merge takes a while.
    let mut set = SeenSet::open(dir.path(), SeenConfig::default()).unwrap();
    for i in 0..1_000_000u32 {
        set.insert(format!("com.big.www/page/{i:08}").as_bytes(), b"")
            .unwrap();
    }
    set.close().unwrap();

    let limit = 2048;
    let config = SeenConfig {
        buffer_bytes: limit,
        ..SeenConfig::default()
    };
    let mut set = SeenSet::open(dir.path(), config).unwrap();
    let mut hand_offs = 0;
    for i in 0..20_000u32 {
        let before = set.pending_generation();
        set.insert(format!("org.small.www/{i}").as_bytes(), b"p")
            .unwrap();
        let stats = set.stats();
        assert!(stats.buffered_bytes < limit as u64, "buffer over its limit");
        assert!(stats.merges_in_flight <= 1, "more than one buffer waiting");
        if set.pending_generation() == before {
            continue;
        }
        hand_offs += 1;
        if hand_offs == 1 {
            // Handed off to an idle merge thread: returned at once, merge running.
            assert_eq!((stats.merges_in_flight, stats.merges_done), (1, 0));
        } else {
            // The second full buffer waited for the previous merge to complete.
            assert!(stats.merges_done >= hand_offs - 1);
        }
        if hand_offs == 3 {
            break;
        }
    }
    assert_eq!(hand_offs, 3);
    assert!(set.stats().blocked > std::time::Duration::ZERO);
    let new: usize = set.close().unwrap().iter().map(NewBatch::len).sum();
    assert!(new > 0);
}

/// `contains_sorted` answers from the newest generation's file, key by key.
#[test]
fn contains_sorted_reads_the_newest_generation() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = SeenSet::open(dir.path(), SeenConfig::default()).unwrap();
    assert_eq!(
        set.contains_sorted(&[b"a"]).unwrap(),
        [false],
        "no file yet"
    );
    for key in [&b"b"[..], b"d", b"f"] {
        set.insert(key, b"").unwrap();
    }
    set.flush().unwrap();
    set.try_recv_new().unwrap().unwrap();
    let keys: [&[u8]; 6] = [b"a", b"b", b"c", b"d", b"d", b"g"];
    assert_eq!(
        set.contains_sorted(&keys).unwrap(),
        [false, true, false, true, true, false]
    );
}
