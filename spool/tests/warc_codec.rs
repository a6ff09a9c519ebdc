//! WARC codec: golden bytes, round trips, large records, and corrupt input.
//!
//! The golden file `src/warc/examples/example.warc` is also the example in the crate
//! docs. After an intended format change, regenerate it with
//! `POLYCRAWL_BLESS=1 cargo test --release -p spool --test warc_codec` and review
//! the diff.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::io::Read;

use spool::warc::{
    BlockDeflater, Capture, Original, RecordId, RecordLocation, RecordType, Sha1Digest, Truncated,
    WarcDate, WarcErrorKind as K, WarcHeaders, WarcReader, WarcWriteError, WarcWriter,
    WriterOptions, payload_digest, warc_fields_block,
};

const GOLDEN: &[u8] = include_bytes!("../src/warc/examples/example.warc");
const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: polycrawl/0.1 (+http://www.example.com/bot)\r\nAccept: */*\r\n\r\n";
const RESPONSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 32\r\n\r\n";
const RESPONSE_BODY: &[u8] = b"<html><body>Hello</body></html>\n";

fn id(n: u8) -> RecordId {
    format!("<urn:uuid:6f1c2a3e-0b4d-4e5f-8a9b-0c1d2e3f40{n:02x}>")
        .parse()
        .unwrap()
}

/// The example batch: warcinfo, then a response and its request.
fn write_example(options: WriterOptions) -> (Vec<u8>, Vec<RecordLocation>) {
    let date: WarcDate = "2026-11-22T10:00:00Z".parse().unwrap();
    let mut w = WarcWriter::with_options(Vec::new(), options);
    let mut at = Vec::new();
    let info = WarcHeaders::warcinfo(id(1), date, Some("example.warc.gz")).unwrap();
    let block = warc_fields_block(&[
        ("software", "polycrawl/0.1.0"),
        ("format", "WARC File Format 1.1"),
        (
            "conformsTo",
            "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        ),
        ("robots", "classic"),
    ])
    .unwrap();
    at.push(w.write_record(&info, &block).unwrap());

    let capture = Capture {
        target_uri: "http://www.example.com/",
        date,
        ip: Some("192.0.2.10".parse().unwrap()),
        warcinfo_id: Some(id(1)),
    };
    let response = WarcHeaders::response(id(2), &capture, payload_digest(RESPONSE_BODY)).unwrap();
    at.push(
        w.write_record_parts(&response, &[RESPONSE_HEAD, RESPONSE_BODY])
            .unwrap(),
    );
    let mut request = WarcHeaders::request(id(3), &capture).unwrap();
    request.set_concurrent_to(id(2));
    at.push(w.write_record(&request, REQUEST).unwrap());
    (w.finish().unwrap(), at)
}

fn plain() -> WriterOptions {
    WriterOptions {
        gzip_level: None,
        ..WriterOptions::default()
    }
}

fn read_all(bytes: &[u8]) -> Vec<spool::warc::Record> {
    WarcReader::new(bytes).map(Result::unwrap).collect()
}

fn first_error(bytes: &[u8]) -> spool::warc::WarcError {
    WarcReader::new(bytes)
        .find_map(Result::err)
        .expect("the input should be rejected")
}

#[test]
fn golden_bytes_uncompressed() {
    let (bytes, at) = write_example(plain());
    if std::env::var_os("POLYCRAWL_BLESS").is_some() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/warc/examples/example.warc"
        );
        std::fs::write(path, &bytes).unwrap();
    }
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        String::from_utf8_lossy(GOLDEN)
    );
    assert_eq!(bytes, GOLDEN);
    assert_eq!(at[0].offset, 0);
    assert_eq!(at[1].offset, at[0].length);
    assert_eq!(at[2].offset + at[2].length, bytes.len() as u64);
}

#[test]
fn golden_gzip_members() {
    let (gz, at) = write_example(WriterOptions::default());
    assert_eq!(at.len(), 3);
    let mut whole = Vec::new();
    for (loc, record) in at.iter().zip(read_all(GOLDEN)) {
        let member = &gz[loc.offset as usize..(loc.offset + loc.length) as usize];
        // Fixed gzip header: magic, deflate, FEXTRA only, no mtime, OS unknown; then
        // XLEN 8 and the subfield "PL" of 4 bytes: the member's own length.
        assert_eq!(member[..10], [0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff]);
        assert_eq!(member[10..16], [8, 0, b'P', b'L', 4, 0]);
        assert_eq!(
            u32::from_le_bytes(member[16..20].try_into().unwrap()) as u64,
            loc.length
        );
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(member)
            .read_to_end(&mut text)
            .unwrap();
        // Each member alone is exactly one uncompressed golden record.
        let (lo, hi) = (
            record.location.offset as usize,
            (record.location.offset + record.location.length) as usize,
        );
        assert_eq!(text, GOLDEN[lo..hi]);
        whole.extend_from_slice(&text);
    }
    assert_eq!(whole, GOLDEN);
    assert_eq!(at[2].offset + at[2].length, gz.len() as u64);
}

#[test]
fn reads_back_what_it_wrote() {
    for options in [WriterOptions::default(), plain()] {
        let (bytes, at) = write_example(options);
        let records = read_all(&bytes);
        assert_eq!(records.len(), 3);
        let types: Vec<_> = records
            .iter()
            .map(|r| r.headers.record_type().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                RecordType::Warcinfo,
                RecordType::Response,
                RecordType::Request
            ]
        );
        for (r, loc) in records.iter().zip(&at) {
            assert_eq!(r.location, *loc);
            assert_eq!(r.gzipped, options.gzip_level.is_some());
            assert_eq!(r.headers.content_length(), Some(r.block.len() as u64));
            assert_eq!(r.headers.block_digest(), Some(Sha1Digest::of(&r.block)));
        }
        let response = &records[1];
        assert_eq!(response.block, [RESPONSE_HEAD, RESPONSE_BODY].concat());
        assert_eq!(
            response.headers.payload_digest(),
            Some(payload_digest(RESPONSE_BODY))
        );
        assert_eq!(
            response.headers.target_uri(),
            Some("http://www.example.com/")
        );
        assert_eq!(
            response.headers.date().unwrap().to_cdx_timestamp(),
            "20261122100000"
        );
        assert_eq!(
            records[2].headers.get("WARC-Concurrent-To"),
            Some(id(2).to_string().as_str())
        );
        assert_eq!(records[2].block, REQUEST);
    }
}

#[test]
fn read_into_reuses_one_record() {
    let (bytes, _) = write_example(WriterOptions::default());
    let mut reader = WarcReader::new(&bytes[..]);
    let mut rec = spool::warc::Record::default();
    let mut n = 0;
    while reader.read_into(&mut rec).unwrap() {
        n += 1;
    }
    assert_eq!(n, 3);
    assert_eq!(reader.position(), bytes.len() as u64);
}

/// Deterministic incompressible bytes.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

#[test]
fn one_mebibyte_record_round_trips() {
    let body = noise(1 << 20, 0x9e37_79b9_7f4a_7c15);
    let capture = Capture {
        target_uri: "http://big.example/file.bin",
        date: WarcDate::now(),
        ip: None,
        warcinfo_id: None,
    };
    for level in [Some(1), Some(9), None] {
        let options = WriterOptions {
            gzip_level: level,
            ..WriterOptions::default()
        };
        let mut w = WarcWriter::with_options(Vec::new(), options);
        let mut h =
            WarcHeaders::response(RecordId::random(), &capture, payload_digest(&body)).unwrap();
        h.set_truncated(Truncated::Length);
        let first = w.write_record_parts(&h, &[RESPONSE_HEAD, &body]).unwrap();
        let second = w.write_record(&h, b"small").unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(second.offset, first.length);
        let records = read_all(&bytes);
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].block.len(), RESPONSE_HEAD.len() + body.len());
        assert_eq!(&records[0].block[RESPONSE_HEAD.len()..], &body[..]);
        assert_eq!(records[0].headers.truncated(), Some("length"));
        assert_eq!(records[1].block, b"small");
        assert_eq!(records[1].location, second);
    }
}

#[test]
fn stored_members_round_trip_and_are_plain_gzip() {
    let capture = Capture {
        target_uri: "http://gz.example/page",
        date: WarcDate::now(),
        ip: None,
        warcinfo_id: None,
    };
    // Sizes around the 65,535-byte stored-block limit, and an empty block.
    for len in [0, 1, 65_535 - 400, 65_535, 65_536, 200_000] {
        let body = noise(len, 7 + len as u64);
        let mut block = RESPONSE_HEAD.to_vec();
        block.extend_from_slice(&body);
        let mut w = WarcWriter::new(Vec::new());
        let h = WarcHeaders::response(RecordId::random(), &capture, payload_digest(&body)).unwrap();
        let first = w.write_record_stored(&h, &block).unwrap();
        let second = w.write_record(&h, &block).unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(second.offset, first.length, "{len}");
        // Stored: the member is the record plus a few bytes of framing per 64 KiB.
        let framing = 10 + 8 + 5 * (first.length as usize / 65_535 + 1);
        assert!(first.length as usize >= block.len(), "{len}");
        assert!(
            first.length as usize <= block.len() + 1024 + framing,
            "{len}"
        );
        let records = read_all(&bytes);
        assert_eq!(records.len(), 2, "{len}");
        for r in &records {
            assert_eq!(r.block, block, "{len}");
            assert_eq!(r.headers.target_uri(), Some("http://gz.example/page"));
        }
        assert_eq!(records[0].location, first);
        // Any gzip reader reads the member: flate2's own decoder, member by member.
        let member = &bytes[..first.length as usize];
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(member)
            .read_to_end(&mut text)
            .unwrap();
        assert!(text.starts_with(b"WARC/1.1\r\n"), "{len}");
        assert!(text.ends_with(b"\r\n\r\n"), "{len}");
        assert_eq!(
            &text[text.len() - 4 - body.len()..text.len() - 4],
            &body[..]
        );
    }
}

#[test]
fn deflated_members_round_trip_and_are_plain_gzip() {
    let capture = Capture {
        target_uri: "http://gz.example/deflated",
        date: WarcDate::now(),
        ip: None,
        warcinfo_id: None,
    };
    // Every level: 0 (stored, zlib-rs) and igzip's three (1; 2 to 5; 6 to 9).
    for level in [0, 1, 2, 5, 6, 9, 12] {
        deflated_members_at(level, &capture);
    }
}

fn deflated_members_at(level: u32, capture: &Capture<'_>) {
    let mut deflater = BlockDeflater::new(level);
    let html = |n: usize| "<p>hello <a href=\"/x\">x</a></p>\n".repeat(n).into_bytes();
    // Empty and tiny blocks (stored: small records), text and noise, and blocks past
    // the 64 KiB stored-block and output-chunk sizes.
    let bodies = [
        Vec::new(),
        html(1),
        html(400),
        noise(5_000, 3),
        html(5_000),
        noise(200_000, 4),
    ];
    for body in bodies {
        let len = body.len();
        let mut block = RESPONSE_HEAD.to_vec();
        block.extend_from_slice(&body);
        let deflated = deflater.deflate(&block).unwrap();
        let mut w = WarcWriter::new(Vec::new());
        let h = WarcHeaders::response(RecordId::random(), capture, payload_digest(&body)).unwrap();
        let first = w.write_record_deflated(&h, &block, &deflated).unwrap();
        let second = w.write_record(&h, &block).unwrap();
        // A deflated block of another block's length is not used.
        let other = deflater.deflate(b"another block").unwrap();
        let third = w.write_record_deflated(&h, &block, &other).unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(second.offset, first.length, "{len}");
        if len > 1_000 && body[0] == b'<' && level > 0 {
            assert!(first.length < block.len() as u64 / 2, "{len}: compressed");
        }
        if level == 0 {
            assert!(first.length > block.len() as u64, "{len}: stored");
        }
        let records = read_all(&bytes);
        assert_eq!(records.len(), 3, "{len}");
        for r in &records {
            assert_eq!(r.block, block, "{len}");
            assert_eq!(r.headers.block_digest(), Some(Sha1Digest::of(&block)));
        }
        assert_eq!(records[0].location, first);
        assert_eq!(records[2].location, third);
        // Any gzip reader reads the member.
        let member = &bytes[..first.length as usize];
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(member)
            .read_to_end(&mut text)
            .unwrap();
        assert!(text.starts_with(b"WARC/1.1\r\n"), "{len}");
        assert!(text.ends_with(b"\r\n\r\n"), "{len}");
        assert_eq!(&text[text.len() - 4 - len..text.len() - 4], &body[..]);
    }
}

#[test]
fn revisit_records_round_trip() {
    let date: WarcDate = "2026-11-23T08:30:00Z".parse().unwrap();
    let capture = Capture {
        target_uri: "http://www.example.com/",
        date,
        ip: None,
        warcinfo_id: None,
    };
    let original_id = id(2).to_string();
    let original = Original {
        record_id: Some(&original_id),
        target_uri: "http://www.example.com/",
        date: "2026-11-22T10:00:00Z".parse().unwrap(),
    };
    let h =
        WarcHeaders::revisit(id(9), &capture, &original, payload_digest(RESPONSE_BODY)).unwrap();
    let mut w = WarcWriter::new(Vec::new());
    w.write_record(&h, RESPONSE_HEAD).unwrap();
    let r = &read_all(&w.finish().unwrap())[0];
    assert_eq!(r.headers.record_type(), Some(RecordType::Revisit));
    assert_eq!(r.headers.get("WARC-Refers-To"), Some(original_id.as_str()));
    assert_eq!(
        r.headers.payload_digest(),
        Some(payload_digest(RESPONSE_BODY))
    );
    assert_eq!(r.block, RESPONSE_HEAD);
}

#[test]
fn every_truncation_is_an_error_or_a_record_boundary() {
    for options in [WriterOptions::default(), plain()] {
        let (bytes, at) = write_example(options);
        let ends: Vec<u64> = at.iter().map(|l| l.offset + l.length).collect();
        for cut in 1..bytes.len() {
            let result: Result<Vec<_>, _> = WarcReader::new(&bytes[..cut]).collect();
            match ends.iter().position(|&e| e == cut as u64) {
                Some(i) => assert_eq!(result.unwrap().len(), i + 1, "cut at {cut}"),
                None => {
                    let e = result.expect_err("a cut inside a record must fail");
                    let at_record = at.iter().any(|l| l.offset == e.offset);
                    assert!(
                        at_record,
                        "cut at {cut}: error offset {} is no record start",
                        e.offset
                    );
                }
            }
        }
    }
}

#[test]
fn flipped_bytes_never_pass_silently_in_gzip() {
    let (bytes, _) = write_example(WriterOptions::default());
    let golden = read_all(&bytes);
    // CRC-32 catches every change that still inflates; the rest fail to inflate.
    for i in (0..bytes.len()).step_by(7) {
        let mut bad = bytes.clone();
        bad[i] ^= 0x55;
        let result: Result<Vec<_>, _> = WarcReader::new(&bad[..]).collect();
        if let Ok(records) = result {
            // Only a flip in a header's unused bytes (mtime, XFL, OS) may pass.
            assert_eq!(records, golden, "flip at {i} changed the content silently");
        }
    }
}

#[test]
fn garbage_is_rejected_with_typed_errors() {
    let good = b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:x:1>\r\nWARC-Date: 2026-11-22T10:00:00Z\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
    assert_eq!(read_all(good)[0].block, b"hi");
    let replace = |from: &str, to: &str| -> Vec<u8> {
        String::from_utf8_lossy(good)
            .replacen(from, to, 1)
            .into_bytes()
    };
    let kind = |bytes: &[u8]| first_error(bytes).kind;

    assert!(matches!(kind(b"<html>\r\n"), K::BadVersion { found } if found == "<html>"));
    assert!(matches!(
        kind(&replace("WARC/1.1", "WARC/2.0")),
        K::BadVersion { .. }
    ));
    assert!(matches!(
        kind(&replace("WARC/1.1\r\n", "WARC/1.1\n")),
        K::BadVersion { .. }
    ));
    assert!(matches!(
        kind(&replace("Content-Length: 2\r\n", "")),
        K::MissingField("Content-Length")
    ));
    assert!(matches!(
        kind(&replace("WARC-Type: resource\r\n", "")),
        K::MissingField("WARC-Type")
    ));
    assert!(matches!(
        kind(&replace("Content-Length: 2", "Content-Length: two")),
        K::BadFieldValue {
            name: "Content-Length",
            ..
        }
    ));
    assert!(matches!(
        kind(&replace(
            "Content-Length: 2",
            "Content-Length: 2\r\ncontent-length: 2"
        )),
        K::DuplicateField("Content-Length")
    ));
    assert!(matches!(
        kind(&replace("2026-11-22T10:00:00Z", "yesterday")),
        K::BadFieldValue {
            name: "WARC-Date",
            ..
        }
    ));
    assert!(matches!(
        kind(&replace("<urn:x:1>", "urn:x:1")),
        K::BadFieldValue {
            name: "WARC-Record-ID",
            ..
        }
    ));
    assert!(matches!(
        kind(&replace("WARC-Type: resource\r\n", "WARC-Type: resource\n")),
        K::BadLineEnding { line: 2 }
    ));
    assert!(matches!(
        kind(&replace("WARC-Type: resource", "WARC-Type resource")),
        K::MalformedField { line: 2, .. }
    ));
    assert!(matches!(
        kind(&replace("WARC-Type: resource", "WARC-Type: res\u{1}")),
        K::MalformedField { .. }
    ));
    assert!(matches!(
        kind(
            &replace("resource", "r\u{e9}source")
                .iter()
                .map(|&b| if b == 0xc3 { 0xff } else { b })
                .collect::<Vec<_>>()
        ),
        K::HeaderNotUtf8 { line: 2 }
    ));
    assert!(matches!(
        kind(&replace("Content-Length: 2", "Content-Length: 20")),
        K::TruncatedBlock {
            expected: 20,
            found: 6
        }
    ));
    assert!(matches!(
        kind(&replace("hi\r\n\r\n", "hi\r\n\r")),
        K::BadRecordEnd
    ));
    assert!(matches!(
        kind(&replace("hi\r\n\r\n", "hi!\r\n\r\n")),
        K::BadRecordEnd
    ));
    assert!(matches!(kind(&good[..60]), K::TruncatedHeader));

    let long = [
        &good[..10],
        &b"X-Pad: "[..],
        &vec![b'a'; 70_000],
        &good[10..],
    ]
    .concat();
    assert!(matches!(kind(&long), K::HeaderTooLong { max: 65536 }));
    let e = WarcReader::new(&good[..])
        .with_limits(65536, 1)
        .find_map(Result::err)
        .unwrap();
    assert!(matches!(e.kind, K::BlockTooLong { length: 2, max: 1 }));
    let huge = replace("Content-Length: 2", "Content-Length: 999999999999");
    assert!(matches!(kind(&huge), K::BlockTooLong { .. }));

    // A folded (continued) header line is accepted, as WARC 1.0 allows.
    let folded = replace(
        "WARC-Type: resource\r\n",
        "X-Long: a\r\n  b\r\nWARC-Type: resource\r\n",
    );
    assert_eq!(read_all(&folded)[0].headers.get("x-long"), Some("a b"));
    // WARC/1.0 records read as well.
    assert_eq!(read_all(&replace("WARC/1.1", "WARC/1.0")).len(), 1);

    // After a good record, garbage is reported at its own offset and stops the reader.
    let two = [&good[..], b"garbage\r\n"].concat();
    let mut reader = WarcReader::new(&two[..]);
    assert!(reader.next().unwrap().is_ok());
    let e = reader.next().unwrap().unwrap_err();
    assert_eq!(e.offset, good.len() as u64);
    assert!(
        e.to_string().starts_with(&format!(
            "WARC record at offset {}: bad version line",
            good.len()
        )),
        "{e}"
    );
    assert!(reader.next().is_none());
}

#[test]
fn bad_gzip_is_rejected() {
    let (gz, at) = write_example(WriterOptions::default());
    // A gzip magic followed by nonsense.
    let e = first_error(&[0x1f, 0x8b, 0, 0, 0, 0]);
    assert!(matches!(e.kind, K::Gzip(_) | K::TruncatedHeader), "{e}");
    // Damaged CRC of the second member.
    let mut bad = gz;
    let crc_at = (at[1].offset + at[1].length - 8) as usize;
    bad[crc_at] ^= 1;
    let e = first_error(&bad);
    assert!(
        matches!(e.kind, K::Gzip(_)) && e.offset == at[1].offset,
        "{e}"
    );

    // Two records in one member is not a page batch.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(
        &mut enc,
        &GOLDEN[..(read_all(GOLDEN)[1].location.offset + read_all(GOLDEN)[1].location.length)
            as usize],
    )
    .unwrap();
    let e = first_error(&enc.finish().unwrap());
    assert!(matches!(e.kind, K::TrailingDataInMember), "{e}");
}

#[test]
fn a_wrong_stated_member_length_is_an_error_at_that_member() {
    let (gz, at) = write_example(WriterOptions::default());
    let second = at[1].offset as usize;
    let stated = u32::from_le_bytes(gz[second + 16..second + 20].try_into().unwrap());
    assert_eq!(stated as u64, at[1].length);
    for wrong in [stated - 1, stated + 1, stated + 7, 30, stated * 2] {
        let mut bad = gz.clone();
        bad[second + 16..second + 20].copy_from_slice(&wrong.to_le_bytes());
        let e = first_error(&bad);
        assert!(
            matches!(e.kind, K::Gzip(_)) && e.offset == at[1].offset,
            "stated {wrong} of {stated}: {e}"
        );
    }
    // 0 means "not stated", and a length no member can have is no statement either:
    // the member is streamed (the inflater finds its end) and reads as before.
    for ignored in [0u32, 29, u32::MAX] {
        let mut unstated = gz.clone();
        unstated[second + 16..second + 20].copy_from_slice(&ignored.to_le_bytes());
        assert_eq!(read_all(&unstated), read_all(&gz), "stated {ignored}");
    }
}

#[test]
fn writer_refuses_inconsistent_records() {
    let mut w = WarcWriter::new(Vec::new());
    let mut h = WarcHeaders::new();
    h.push("WARC-Type", "resource").unwrap();
    assert!(matches!(
        w.write_record(&h, b""),
        Err(WarcWriteError::MissingField("WARC-Record-ID"))
    ));
    h.push("WARC-Record-ID", &RecordId::random().to_string())
        .unwrap();
    h.push("WARC-Date", &WarcDate::now().to_string()).unwrap();
    h.push("Content-Length", "3").unwrap();
    assert!(matches!(
        w.write_record(&h, b"hi"),
        Err(WarcWriteError::ContentLengthMismatch { .. })
    ));
    // A matching Content-Length is kept, not doubled: records copy through unchanged.
    let at = w.write_record(&h, b"abc").unwrap();
    let bytes = w.finish().unwrap();
    let r = &read_all(&bytes)[0];
    assert_eq!(r.location, at);
    assert_eq!(
        r.headers
            .iter()
            .filter(|(n, _)| *n == "Content-Length")
            .count(),
        1
    );

    struct Failing;
    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = WarcWriter::new(Failing);
    assert!(matches!(
        w.write_record(&h, b"abc"),
        Err(WarcWriteError::Io(_))
    ));
    assert!(matches!(
        w.write_record(&h, b"abc"),
        Err(WarcWriteError::Poisoned)
    ));
}

#[test]
fn appending_counts_from_the_start_offset() {
    let (gz, at) = write_example(WriterOptions::default());
    let options = WriterOptions {
        start_offset: gz.len() as u64,
        ..WriterOptions::default()
    };
    let (more, more_at) = write_example(options);
    assert_eq!(more_at[0].offset, gz.len() as u64);
    let file = [gz, more].concat();
    let locations: Vec<_> = read_all(&file).iter().map(|r| r.location).collect();
    assert_eq!(locations, [at, more_at].concat());
}
