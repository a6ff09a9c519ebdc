//! Cross-check with warcio, the reference Python WARC library: a batch we write must
//! pass `warcio check` (digests) and `warcio index` must find every record at the
//! offset and length our writer reported. Skips with a note when warcio is missing
//! (`pip install warcio`).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::path::PathBuf;
use std::process::Command;

use spool::warc::{
    Capture, Original, RecordId, RecordLocation, Truncated, WarcDate, WarcHeaders, WarcWriter,
    WriterOptions, payload_digest, warc_fields_block,
};

fn warcio_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import warcio"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("NOTE: skipping the warcio cross-check: `python3 -c 'import warcio'` failed");
    }
    ok
}

fn warcio(args: &[&str]) -> (bool, String) {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; from warcio.cli import main; sys.exit(main())",
        ])
        .args(args)
        .output()
        .expect("python3 runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn temp_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spool-warcio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A batch with every record type the crawler writes; returns (type, location) pairs.
fn write_batch(options: WriterOptions) -> (Vec<u8>, Vec<(&'static str, RecordLocation)>) {
    let mut w = WarcWriter::with_options(Vec::new(), options);
    let mut at = Vec::new();
    let date = WarcDate::now();
    let info_id = RecordId::random();
    let info = WarcHeaders::warcinfo(info_id, date, Some("batch.warc.gz")).unwrap();
    let fields = warc_fields_block(&[
        ("software", "polycrawl"),
        ("format", "WARC File Format 1.1"),
    ]);
    at.push(("warcinfo", w.write_record(&info, &fields.unwrap()).unwrap()));

    let big: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let pages: [(&str, &[u8], Option<Truncated>); 3] = [
        ("http://a.example/", b"<html>a</html>", None),
        ("http://b.example/big", &big, Some(Truncated::Length)),
        ("http://c.example/empty", b"", None),
    ];
    for (i, (uri, body, truncated)) in pages.into_iter().enumerate() {
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
        let capture = Capture {
            target_uri: uri,
            date,
            ip: Some(format!("127.0.0.{}", i + 2).parse().unwrap()),
            warcinfo_id: Some(info_id),
        };
        let response_id = RecordId::random();
        let mut response =
            WarcHeaders::response(response_id, &capture, payload_digest(body)).unwrap();
        if let Some(why) = truncated {
            response.set_truncated(why);
        }
        // The big one as a stored (uncompressed) gzip member, as the downloader
        // writes a response whose body came compressed: warcio must read it alike.
        let written = if i == 1 {
            w.write_record_stored(&response, &[head.as_bytes(), body].concat())
        } else {
            w.write_record_parts(&response, &[head.as_bytes(), body])
        };
        at.push(("response", written.unwrap()));
        let mut request = WarcHeaders::request(RecordId::random(), &capture).unwrap();
        request.set_concurrent_to(response_id);
        let get = format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", &uri[7..]);
        at.push(("request", w.write_record(&request, get.as_bytes()).unwrap()));
    }

    let capture = Capture {
        target_uri: "http://a.example/",
        date,
        ip: None,
        warcinfo_id: Some(info_id),
    };
    let original = Original {
        record_id: None,
        target_uri: "http://a.example/",
        date,
    };
    let revisit = WarcHeaders::revisit(
        RecordId::random(),
        &capture,
        &original,
        payload_digest(b"<html>a</html>"),
    )
    .unwrap();
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n";
    at.push(("revisit", w.write_record(&revisit, head).unwrap()));
    (w.finish().unwrap(), at)
}

#[test]
fn warcio_checks_and_indexes_our_batches() {
    if !warcio_available() {
        return;
    }
    for (name, options) in [
        ("batch.warc.gz", WriterOptions::default()),
        (
            "batch.warc",
            WriterOptions {
                gzip_level: None,
                ..WriterOptions::default()
            },
        ),
    ] {
        let (bytes, at) = write_batch(options);
        let path = temp_file(name);
        std::fs::write(&path, &bytes).unwrap();
        let path_text = path.to_str().unwrap();

        let (ok, out) = warcio(&["check", "-v", path_text]);
        assert!(ok, "warcio check failed on {name}:\n{out}");
        assert!(!out.contains("fail"), "warcio check on {name}:\n{out}");
        // warcio verifies every digest but a revisit's (whose payload lives elsewhere).
        assert_eq!(out.matches("digest pass").count(), at.len() - 1, "{out}");
        assert_eq!(out.matches("not checked (revisit)").count(), 1, "{out}");

        let (ok, out) = warcio(&["index", "-f", "warc-type,offset,length", path_text]);
        assert!(ok, "warcio index failed on {name}:\n{out}");
        let indexed: Vec<String> = out.lines().map(str::to_owned).collect();
        assert_eq!(indexed.len(), at.len(), "{out}");
        for (line, (kind, loc)) in indexed.iter().zip(&at) {
            // warcio counts an uncompressed record without its closing CRLF CRLF.
            let length = if options.gzip_level.is_some() {
                loc.length
            } else {
                loc.length - 4
            };
            let expected = format!(
                "{{\"warc-type\": \"{kind}\", \"offset\": \"{}\", \"length\": \"{length}\"}}",
                loc.offset
            );
            assert_eq!(line, &expected);
        }
        std::fs::remove_file(&path).unwrap();
    }
}
