//! The URL-seen set at crawl scale: N synthetic host-reversed URL keys (default
//! 100 million, about half of them repeats) over a million hosts of power-law sizes,
//! inserted with merges. Prints URLs/s, peak RSS, bytes per URL on disk, merges and
//! merge time, and the machine; then compares ways of sorting one buffer.
//!
//! ```text
//! cargo bench --workspace --bench seen -- --urls 10000000 [--buffer-mib 256] [--dir D]
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use seen::{SeenConfig, SeenSet};

const HOSTS: u64 = 1_000_000;
const TLDS: [&str; 8] = ["com", "com", "com", "org", "net", "de", "uk", "io"];
const SUBS: [&str; 6] = ["www", "www", "www", "blog", "shop", "news"];
const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ter", "son", "ra", "vel", "no", "tis", "ban", "co", "dex", "pu", "ri",
    "gen", "ox",
];
const WORDS: [&str; 32] = [
    "products", "news", "article", "category", "en", "about", "blog", "2019", "2020", "2021",
    "docs", "support", "shop", "item", "tags", "users", "profile", "archive", "search", "help",
    "media", "video", "events", "press", "list", "view", "detail", "catalog", "forum", "thread",
    "wiki", "page",
];

struct Args {
    urls: u64,
    buffer_mib: usize,
    dir: Option<PathBuf>,
}

fn args() -> Args {
    let mut args = Args {
        urls: 100_000_000,
        buffer_mib: 256,
        dir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--urls" => args.urls = it.next().and_then(|v| v.parse().ok()).expect("--urls N"),
            "--buffer-mib" => {
                args.buffer_mib = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--buffer-mib M");
            }
            "--dir" => args.dir = it.next().map(PathBuf::from),
            "--bench" => {} // passed by `cargo bench`
            other => panic!("unknown argument {other}; use --urls N --buffer-mib M --dir D"),
        }
    }
    args
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn base36(mut n: u64, out: &mut Vec<u8>) {
    let start = out.len();
    loop {
        out.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out[start..].reverse();
}

/// The key of URL number `id`, written into `out`: a power-law host (rank r has
/// weight about 1/(r+1)), reversed, then a path from the host's own vocabulary.
fn url_key(id: u64, out: &mut Vec<u8>) {
    out.clear();
    let r = mix(id);
    let u = (r >> 11) as f64 / (1u64 << 53) as f64;
    let host = ((HOSTS as f64 + 1.0).powf(u) as u64)
        .saturating_sub(1)
        .min(HOSTS - 1);
    let h = mix(host ^ 0x5eed);
    out.extend_from_slice(TLDS[(h % 8) as usize].as_bytes());
    out.push(b'.');
    for i in 0..2 + (h >> 8) % 3 {
        out.extend_from_slice(SYLLABLES[((h >> (12 + 4 * i)) % 16) as usize].as_bytes());
    }
    base36(host, out);
    out.push(b'.');
    out.extend_from_slice(SUBS[((h >> 40) % 6) as usize].as_bytes());
    let depth = 2 + (r >> 3) % 4;
    for level in 0..depth {
        out.push(b'/');
        // Each host uses a few words per level, so its URLs share prefixes.
        let w = mix(h ^ level ^ ((r >> (20 + 2 * level)) % 3) << 32);
        out.extend_from_slice(WORDS[(w % 32) as usize].as_bytes());
    }
    out.push(b'/');
    out.extend_from_slice(WORDS[((r >> 40) % 32) as usize].as_bytes());
    out.push(b'-');
    out.extend_from_slice(WORDS[((r >> 45) % 32) as usize].as_bytes());
    out.push(b'-');
    base36(id, out);
    out.extend_from_slice(b".html");
    if (r >> 50) % 4 == 0 {
        out.extend_from_slice(b"?sort=date&page=");
        base36((r >> 52) % 50, out);
    }
    if (r >> 58) % 5 == 0 {
        out.extend_from_slice(b"#http");
    }
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn main() {
    let args = args();
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::Builder::new()
                .prefix("seen-bench")
                .tempdir()
                .expect("temp dir");
            tmp.path().to_owned()
        }
    };
    println!("machine: {}", test_support::proc::machine());
    println!(
        "urls: {}, buffer: {} MiB, folder: {}",
        args.urls,
        args.buffer_mib,
        dir.display()
    );
    let config = SeenConfig {
        buffer_bytes: args.buffer_mib << 20,
        ..SeenConfig::default()
    };
    let mut set = SeenSet::open(&dir, config).expect("open");
    let mut key = Vec::with_capacity(256);
    let mut next_id = 0u64;
    let mut key_bytes = 0u64;
    let mut new_keys = 0u64;
    let mut batches = 0u64;
    let mut drain = |set: &mut SeenSet, new_keys: &mut u64| {
        while let Some(batch) = set.try_recv_new().expect("merge") {
            *new_keys += batch.len() as u64;
            batches += 1;
            set.release(batch.generation()).expect("release");
        }
    };
    let started = Instant::now();
    let mut last_report = Instant::now();
    for i in 0..args.urls {
        let r = mix(i ^ 0xabcdef);
        // Half the inserts are new URLs; of the repeats, half link somewhere recent
        // (the same site), half anywhere in the crawl so far.
        let id = if next_id == 0 || r & 1 == 0 {
            next_id += 1;
            next_id - 1
        } else if r & 2 == 0 {
            next_id - 1 - (r >> 8) % next_id.min(100_000)
        } else {
            (r >> 8) % next_id
        };
        url_key(id, &mut key);
        key_bytes += key.len() as u64;
        let mut payload = [0u8; 12];
        payload[..4].copy_from_slice(&((r >> 32) as u32 % 16).to_le_bytes());
        payload[4..].copy_from_slice(&(r >> 16).to_le_bytes());
        set.insert(&key, &payload).expect("insert");
        if i % 4096 == 0 {
            drain(&mut set, &mut new_keys);
            if last_report.elapsed() > Duration::from_secs(30) {
                last_report = Instant::now();
                let s = set.stats();
                eprintln!(
                    "  {:>5.0} s: {} inserted, {} merges, {} keys on disk",
                    secs(started.elapsed()),
                    i,
                    s.merges_done,
                    s.keys_on_disk
                );
            }
        }
    }
    let inserted = started.elapsed();
    set.flush().expect("flush");
    drain(&mut set, &mut new_keys);
    let wall = started.elapsed();
    let stats = set.stats();
    let hwm_kib = status_kib("VmHWM:");
    let n = args.urls as f64;
    println!(
        "distinct URLs generated: {next_id} ({:.1}% of inserts are repeats)",
        100.0 * (1.0 - next_id as f64 / n)
    );
    println!(
        "mean key length: {:.1} bytes (+12-byte payload)",
        key_bytes as f64 / n
    );
    println!(
        "wall: {:.1} s ({:.1} s inserting, then {:.1} s final merge) = {:.2} M URLs/s",
        secs(wall),
        secs(inserted),
        secs(wall - inserted),
        n / secs(wall) / 1e6
    );
    println!(
        "merges: {}, merge time {:.1} s (of which sorting {:.1} s), last merge {:.1} s, inserts blocked {:.1} s",
        stats.merges_done,
        secs(stats.total_merge),
        secs(stats.total_sort),
        secs(stats.last_merge),
        secs(stats.blocked)
    );
    println!(
        "new keys reported: {new_keys} in {batches} batches, keys on disk: {}",
        stats.keys_on_disk
    );
    assert_eq!(
        new_keys, next_id,
        "every distinct URL reported new exactly once"
    );
    assert_eq!(stats.keys_on_disk, next_id);
    println!(
        "on disk: {:.1} MiB = {:.2} bytes per URL (keys {:.1} bytes raw)",
        stats.bytes_on_disk as f64 / (1u64 << 20) as f64,
        stats.bytes_on_disk as f64 / stats.keys_on_disk as f64,
        key_bytes as f64 / n
    );
    println!("peak RSS (VmHWM): {:.0} MiB", hwm_kib as f64 / 1024.0);
    let path = set.file_path().expect("a file");
    drop(set);
    let t = Instant::now();
    seen::reader::verify(&path).expect("verify");
    let v = t.elapsed();
    println!(
        "verify (read + decode + CRC, cache warm): {:.1} s = {:.0} MB/s, {:.1} M keys/s",
        secs(v),
        stats.bytes_on_disk as f64 / secs(v) / 1e6,
        stats.keys_on_disk as f64 / secs(v) / 1e6
    );
    std::io::stdout().flush().ok();
    compare_sorts(args.buffer_mib << 20);
}

/// One buffer's worth of inserts (same mix), sorted three ways.
fn compare_sorts(buffer_bytes: usize) {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0;
    let mut next_id = 0u64;
    let mut i = 0u64;
    while bytes < buffer_bytes {
        let r = mix(i ^ 0x1234);
        i += 1;
        let id = if next_id == 0 || r & 1 == 0 {
            next_id += 1;
            next_id - 1
        } else {
            (r >> 8) % next_id
        };
        let mut k = Vec::new();
        url_key(id, &mut k);
        bytes += k.len() + 12 + 8;
        keys.push(k);
    }
    println!(
        "sorting one {} MiB buffer ({} inserts):",
        buffer_bytes >> 20,
        keys.len()
    );

    // Arena + 8-byte entries, sort_unstable at hand-off (what the set does).
    let t = Instant::now();
    let mut arena: Vec<u8> = Vec::with_capacity(buffer_bytes);
    let mut entries: Vec<(u32, u16, u16)> = Vec::with_capacity(keys.len());
    for k in &keys {
        entries.push((arena.len() as u32, k.len() as u16, 12));
        arena.extend_from_slice(k);
        arena.extend_from_slice(&[0; 12]);
    }
    let fill = t.elapsed();
    let t = Instant::now();
    let key = |e: &(u32, u16, u16)| &arena[e.0 as usize..e.0 as usize + e.1 as usize];
    entries.sort_unstable_by(|a, b| key(a).cmp(key(b)).then(a.0.cmp(&b.0)));
    entries.dedup_by(|a, b| key(a) == key(b));
    let sort = t.elapsed();
    println!(
        "  arena + sort_unstable: insert {:.2} s, sort+dedup {:.2} s, {} unique, memory {:.0} MiB",
        secs(fill),
        secs(sort),
        entries.len(),
        (arena.len() + 8 * keys.len()) as f64 / (1u64 << 20) as f64
    );
    drop(entries);

    // The same with the key's first 8 bytes cached in each (16-byte) entry.
    let t = Instant::now();
    let mut entries: Vec<(u64, u32, u16)> = Vec::with_capacity(keys.len());
    let mut off = 0u32;
    for k in &keys {
        let mut p = [0u8; 8];
        let n = k.len().min(8);
        p[..n].copy_from_slice(&k[..n]);
        entries.push((u64::from_be_bytes(p), off, k.len() as u16));
        off += k.len() as u32 + 12;
    }
    let fill = t.elapsed();
    let t = Instant::now();
    let key = |e: &(u64, u32, u16)| &arena[e.1 as usize..e.1 as usize + e.2 as usize];
    entries.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| key(a).cmp(key(b)))
            .then(a.1.cmp(&b.1))
    });
    entries.dedup_by(|a, b| key(a) == key(b));
    println!(
        "  arena + 8-byte prefix in entry: entries {:.2} s, sort+dedup {:.2} s, {} unique",
        secs(fill),
        secs(t.elapsed()),
        entries.len()
    );
    drop(entries);

    // MSD radix with 8-byte digits: sort by the (prefix, length) digit at a depth,
    // recurse into runs that tie, comparison-sort small runs.
    let mut entries: Vec<(u64, u32, u16, u16)> = Vec::with_capacity(keys.len());
    let mut off = 0u32;
    for k in &keys {
        entries.push((0, off, k.len() as u16, 0));
        off += k.len() as u32 + 12;
    }
    let t = Instant::now();
    msd_sort(&arena, &mut entries);
    let key = |e: &(u64, u32, u16, u16)| &arena[e.1 as usize..e.1 as usize + e.2 as usize];
    assert!(
        entries
            .windows(2)
            .all(|w| key(&w[0]) < key(&w[1]) || (key(&w[0]) == key(&w[1]) && w[0].1 < w[1].1))
    );
    entries.dedup_by(|a, b| key(a) == key(b));
    println!(
        "  arena + MSD radix (8-byte digits): sort+dedup {:.2} s, {} unique",
        secs(t.elapsed()),
        entries.len()
    );
    drop((arena, entries));

    // A sorted tree kept up to date on every insert (Polybot's red-black tree).
    let before = status_kib("VmRSS:");
    let t = Instant::now();
    let mut tree: BTreeMap<Box<[u8]>, [u8; 12]> = BTreeMap::new();
    for k in &keys {
        tree.entry(k.clone().into_boxed_slice()).or_insert([0; 12]);
    }
    let tree_time = t.elapsed();
    let grown = status_kib("VmRSS:").saturating_sub(before);
    println!(
        "  BTreeMap<Box<[u8]>, payload>: insert (sorted, deduped) {:.2} s, {} unique, memory +{:.0} MiB",
        secs(tree_time),
        tree.len(),
        grown as f64 / 1024.0
    );
}

fn msd_sort(arena: &[u8], entries: &mut [(u64, u32, u16, u16)]) {
    let key = |e: &(u64, u32, u16, u16)| &arena[e.1 as usize..e.1 as usize + e.2 as usize];
    let mut work = vec![(0usize, entries.len(), 0usize)];
    while let Some((lo, hi, depth)) = work.pop() {
        let run = &mut entries[lo..hi];
        if run.len() <= 32 {
            run.sort_unstable_by(|a, b| key(a)[depth..].cmp(&key(b)[depth..]).then(a.1.cmp(&b.1)));
            continue;
        }
        for e in run.iter_mut() {
            let k = &key(e)[depth..];
            let n = k.len().min(8);
            let mut p = [0u8; 8];
            p[..n].copy_from_slice(&k[..n]);
            e.0 = u64::from_be_bytes(p);
            e.3 = n as u16;
        }
        run.sort_unstable_by_key(|e| (e.0, e.3, e.1));
        let mut i = 0;
        while i < run.len() {
            let mut j = i + 1;
            while j < run.len() && run[j].0 == run[i].0 && run[j].3 == run[i].3 {
                j += 1;
            }
            if j - i > 1 && run[i].3 == 8 {
                work.push((lo + i, lo + j, depth + 8));
            }
            i = j;
        }
    }
}
