//! What gzip costs per page, by deflate back end and level, on realistic 13 KB HTML:
//! the figures behind the compression decision in the `storage` crate docs.
//!
//! `cargo bench --release -p storage --bench compress` (with
//! `CARGO_TARGET_DIR=$HOME/.cache/polycrawl/target`). Prints the machine, then per
//! back end and level: input MB/s on one core, ms per page, compression ratio; then
//! inflate speeds and the other per-page costs of writing and ingesting a batch.
//!
//! The input is generated pages, or with `POLYCRAWL_BENCH_PAGES=DIR` the HTML files
//! under DIR (a bench-peers web's `static/sites`, kept with `--keep`): the figures of
//! record are taken on those.
//!
//! Back ends are driven directly (miniz_oxide, zlib-rs: the two pure-Rust back ends
//! flate2 can use; libdeflate; zlib-ng needs cmake and is not measured), each reusing
//! one compressor with a reset per page, as `spool::warc::WarcWriter` does; igzip
//! (ISA-L) through `spool::warc::BlockDeflater`, which the downloader deflates
//! response blocks with. "WarcWriter" rows are the full record write through
//! the workspace's flate2 (header, SHA-1 block digest, CRC-32, deflate); the
//! "GzEncoder::new per page" rows show what a fresh encoder per record costs instead
//! (allocating and zeroing the compressor's tables each time).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use spool::warc::{
    BlockDeflater, Capture, RecordId, WarcDate, WarcHeaders, WarcReader, WarcWriter, WriterOptions,
    payload_digest,
};

const PAGES: usize = 64;
const PAGE_BYTES: usize = 13 * 1024;
/// Pages read from `POLYCRAWL_BENCH_PAGES`, at most.
const DIR_PAGES: usize = 4096;

/// How many pages the input has (set once in `main`).
static PAGE_COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

fn main() {
    print_machine();
    let (pages, source) = input_pages();
    PAGE_COUNT.set(pages.len()).unwrap();
    let total: usize = pages.iter().map(Vec::len).sum();
    // Room for the largest page, deflated or not.
    let room = pages
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .max(PAGE_BYTES)
        * 2
        + 1024;
    println!(
        "\ninput: {} {source}, {:.1} KB each on average\n",
        pages.len(),
        total as f64 / pages.len() as f64 / 1024.0
    );
    println!(
        "{:<44} {:>9} {:>11} {:>7}",
        "deflate (one page = one gzip member)", "MB/s", "ms/page", "ratio"
    );
    let mut raw = vec![0u8; room];
    for level in [1, 2, 6] {
        let mut c = miniz_oxide::deflate::core::CompressorOxide::new(
            miniz_oxide::deflate::core::create_comp_flags_from_zip_params(level, -15, 0),
        );
        let mut miniz = |p: &Vec<u8>| {
            c.reset();
            let (status, _, n) = miniz_oxide::deflate::core::compress(
                &mut c,
                p,
                &mut raw,
                miniz_oxide::deflate::core::TDEFLFlush::Finish,
            );
            assert_eq!(status, miniz_oxide::deflate::core::TDEFLStatus::Done);
            n
        };
        let out_bytes: usize = pages.iter().map(&mut miniz).sum();
        let t = time(&pages, |p| {
            black_box(miniz(p));
        });
        report(
            &format!("miniz_oxide (flate2 default) level {level}"),
            t,
            total,
            Some(out_bytes),
        );

        let mut z = zlib_rs::Deflate::new(level, false, 15);
        let mut zlib = |p: &Vec<u8>| {
            z.reset();
            let status = z
                .compress(p, &mut raw, zlib_rs::DeflateFlush::Finish)
                .unwrap();
            assert_eq!(status, zlib_rs::Status::StreamEnd);
            z.total_out() as usize
        };
        let out_bytes: usize = pages.iter().map(&mut zlib).sum();
        let t = time(&pages, |p| {
            black_box(zlib(p));
        });
        report(
            &format!("zlib-rs (flate2 feature) level {level}"),
            t,
            total,
            Some(out_bytes),
        );
    }
    for level in [1, 2] {
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).unwrap());
        let mut out = vec![0u8; c.deflate_compress_bound(room)];
        let mut libdeflate = |p: &Vec<u8>| c.deflate_compress(p, &mut out).unwrap();
        let out_bytes: usize = pages.iter().map(&mut libdeflate).sum();
        let t = time(&pages, |p| {
            black_box(libdeflate(p));
        });
        report(
            &format!("libdeflate level {level}"),
            t,
            total,
            Some(out_bytes),
        );
    }
    // igzip (ISA-L) through spool's BlockDeflater, as the downloader deflates a
    // response block: gzip level 1 is igzip 0, 2 to 5 igzip 1, 6 to 9 igzip 3.
    for (gzip_level, igzip) in [(1, 0), (2, 1), (6, 3)] {
        let mut d = BlockDeflater::new(gzip_level);
        let out_bytes: usize = pages
            .iter()
            .map(|p| d.deflate(p).unwrap().compressed_len())
            .sum();
        let t = time(&pages, |p| {
            black_box(d.deflate(p).unwrap());
        });
        report(
            &format!("igzip {igzip} (BlockDeflater, gzip level {gzip_level})"),
            t,
            total,
            Some(out_bytes),
        );
    }
    for level in [1, 6] {
        let mut out = Vec::with_capacity(room);
        let t = time(&pages, |p| {
            out.clear();
            let mut gz = flate2::write::GzEncoder::new(&mut out, flate2::Compression::new(level));
            std::io::Write::write_all(&mut gz, p).unwrap();
            gz.finish().unwrap();
        });
        report(
            &format!("flate2 GzEncoder::new per page, workspace, L{level}"),
            t,
            total,
            None,
        );
    }
    for level in [1, 6] {
        let (t, out_bytes) = warc_writer(&pages, level);
        report(
            &format!("WarcWriter record, workspace flate2, L{level}"),
            t,
            total,
            Some(out_bytes),
        );
    }

    println!(
        "\n{:<44} {:>9} {:>11}",
        "inflate, level-1 members (output MB/s)", "MB/s", "ms/page"
    );
    let members: Vec<Vec<u8>> = pages
        .iter()
        .map(|p| {
            let mut z = zlib_rs::Deflate::new(1, false, 15);
            let mut out = vec![0u8; room];
            z.compress(p, &mut out, zlib_rs::DeflateFlush::Finish)
                .unwrap();
            out.truncate(z.total_out() as usize);
            out
        })
        .collect();
    let mut page_out = vec![0u8; room];
    let mut m = miniz_oxide::inflate::stream::InflateState::new_boxed(miniz_oxide::DataFormat::Raw);
    let t = time(&members, |c| {
        m.reset(miniz_oxide::DataFormat::Raw);
        let r = miniz_oxide::inflate::stream::inflate(
            &mut m,
            c,
            &mut page_out,
            miniz_oxide::MZFlush::Finish,
        );
        assert_eq!(r.status, Ok(miniz_oxide::MZStatus::StreamEnd));
    });
    report("miniz_oxide", t, total, None);
    let mut z = zlib_rs::Inflate::new(false, 15);
    let t = time(&members, |c| {
        z.reset(false);
        let s = z
            .decompress(c, &mut page_out, zlib_rs::InflateFlush::Finish)
            .unwrap();
        assert_eq!(s, zlib_rs::Status::StreamEnd);
    });
    report("zlib-rs", t, total, None);

    println!(
        "\n{:<44} {:>9} {:>11}",
        "other per-page costs", "MB/s", "ms/page"
    );
    let t = time(&pages, |p| {
        black_box(payload_digest(p));
    });
    report("SHA-1 of the page (payload digest)", t, total, None);
    let batch = {
        let mut w = WarcWriter::new(Vec::new());
        for (i, p) in pages.iter().enumerate() {
            write_response(&mut w, i, p);
        }
        w.finish().unwrap()
    };
    let t = time(&[batch], |b| {
        for r in WarcReader::new(&b[..]) {
            black_box(r.unwrap());
        }
    });
    report_per_page(
        "WarcReader, whole L1 batch (workspace flate2)",
        t,
        total,
        pages.len(),
    );
}

/// Writes every page as a response record; returns the time per pass and the
/// bytes written per pass (gzip members with their WARC headers).
fn warc_writer(pages: &[Vec<u8>], level: u32) -> (Duration, usize) {
    let options = WriterOptions {
        gzip_level: Some(level),
        ..WriterOptions::default()
    };
    let mut w = WarcWriter::with_options(std::io::sink(), options);
    pages
        .iter()
        .enumerate()
        .for_each(|(i, p)| write_response(&mut w, i, p));
    let per_pass = w.position() as usize;
    let mut i = 0;
    let t = time(pages, |p| {
        write_response(&mut w, i, p);
        i += 1;
    });
    (t, per_pass)
}

fn write_response<W: std::io::Write>(w: &mut WarcWriter<W>, i: usize, body: &[u8]) {
    let uri = format!("http://site{}.example/page/{i}", i % 7);
    let capture = Capture {
        target_uri: &uri,
        date: WarcDate::from_unix(1_795_341_600, 0).unwrap(),
        ip: None,
        warcinfo_id: None,
    };
    let h = WarcHeaders::response(RecordId::random(), &capture, payload_digest(body)).unwrap();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    w.write_record_parts(&h, &[head.as_bytes(), body]).unwrap();
}

/// The HTML files under the folder `POLYCRAWL_BENCH_PAGES` names (the first
/// [`DIR_PAGES`] over 1 KiB, say a bench-peers web's `static/sites`), or [`PAGES`]
/// generated pages; and what they are.
fn input_pages() -> (Vec<Vec<u8>>, String) {
    let Some(root) = std::env::var_os("POLYCRAWL_BENCH_PAGES") else {
        let pages = (0..PAGES)
            .map(|i| common::html_page(i as u64, PAGE_BYTES))
            .collect();
        return (pages, "generated HTML pages".to_owned());
    };
    let mut pages = Vec::new();
    let mut folders = vec![std::path::PathBuf::from(&root)];
    while let Some(folder) = folders.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|x| x == "html") && pages.len() < DIR_PAGES {
                let bytes = std::fs::read(&path).unwrap();
                if bytes.len() > 1024 {
                    pages.push(bytes);
                }
            }
        }
    }
    assert!(!pages.is_empty(), "no HTML files over 1 KiB under {root:?}");
    (
        pages,
        format!("HTML files under {}", root.to_string_lossy()),
    )
}

/// Best time of 5 runs of one pass over `items` (each run repeats the pass until
/// 200 ms have gone by), per pass.
fn time<T>(items: &[T], mut f: impl FnMut(&T)) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let mut passes = 0u32;
        while passes == 0 || start.elapsed() < Duration::from_millis(200) {
            items.iter().for_each(&mut f);
            passes += 1;
        }
        best = best.min(start.elapsed() / passes);
    }
    best
}

fn report(what: &str, per_pass: Duration, bytes: usize, out: Option<usize>) {
    let mbs = bytes as f64 / per_pass.as_secs_f64() / 1e6;
    let ms = per_pass.as_secs_f64() * 1e3 / *PAGE_COUNT.get().unwrap() as f64;
    match out {
        Some(o) => println!(
            "{what:<44} {mbs:>9.1} {ms:>11.4} {:>7.2}",
            bytes as f64 / o as f64
        ),
        None => println!("{what:<44} {mbs:>9.1} {ms:>11.4}"),
    }
}

fn report_per_page(what: &str, per_pass: Duration, bytes: usize, pages: usize) {
    let mbs = bytes as f64 / per_pass.as_secs_f64() / 1e6;
    let ms = per_pass.as_secs_f64() * 1e3 / pages as f64;
    println!("{what:<44} {mbs:>9.1} {ms:>11.4}");
}

fn print_machine() {
    println!("machine: {}", test_support::proc::machine());
    println!("one core used; other work on the machine may slow the figures");
}
