//! Undoing Content-Encoding (gzip, deflate) with a cap on the decoded size.
//!
//! The archive keeps the body as received; this produces the entity body that link
//! extraction reads. Decoding stops at `max_decoded_bytes`, so a gzip bomb (a few KB
//! that inflate to gigabytes) costs at most the cap in memory and the time to inflate
//! that much. `deflate` is meant to be zlib-wrapped (RFC 9110) but some servers send a
//! raw deflate stream; both are accepted. Codings are undone in reverse order of
//! application; `identity` is ignored; anything else is [`DecodeError::Unsupported`].
//! When the raw body was cut (body cap or disconnect), an unexpected end of the
//! compressed stream is expected: what was decoded so far is kept and marked cut.
//!
//! The decoding itself is `spool::http::decode`, the one implementation the
//! application and the manager use too; this module adapts it to the engine's
//! `Bytes` (no copy when nothing is encoded) and [`DecodeError`].

use std::borrow::Cow;

use bytes::Bytes;
use spool::http::{self, Body, HttpError};

use crate::error::DecodeError;

pub(crate) use spool::http::Coding;

/// The codings named by `Content-Encoding` tokens, in order of application.
pub(crate) fn codings(tokens: &[String]) -> Result<Vec<Coding>, DecodeError> {
    http::codings(tokens).map_err(DecodeError::from)
}

/// The decoded body and whether it was cut short (cap reached, or input cut).
#[derive(Debug)]
pub(crate) struct Decoded {
    pub body: Bytes,
    pub truncated: bool,
}

/// Undoes `codings` on `payload`, never producing more than `cap` bytes.
/// `input_truncated` says the payload itself is incomplete.
pub(crate) fn decode(
    payload: Bytes,
    codings: &[Coding],
    cap: usize,
    input_truncated: bool,
) -> Result<Decoded, DecodeError> {
    let input = Body {
        bytes: Cow::Borrowed(&payload[..]),
        truncated: input_truncated,
    };
    let out = http::decode(input, codings, cap)?;
    let body = match out.bytes {
        // Nothing was decoded: a view of the payload, no copy.
        Cow::Borrowed(view) => payload.slice_ref(view),
        Cow::Owned(decoded) => Bytes::from(decoded),
    };
    Ok(Decoded {
        body,
        truncated: out.truncated,
    })
}

impl From<HttpError> for DecodeError {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Unsupported(coding) => DecodeError::Unsupported(coding),
            HttpError::Corrupt { coding, message } => DecodeError::Corrupt { coding, message },
            // Not produced by decoding; kept total rather than panicking.
            other => DecodeError::Corrupt {
                coding: "http",
                message: other.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};

    use super::*;

    const TEXT: &[u8] = b"<html><body>hello hello hello hello</body></html>";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn decodes_gzip_zlib_and_raw_deflate() {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(TEXT).unwrap();
        let mut d = DeflateEncoder::new(Vec::new(), Compression::default());
        d.write_all(TEXT).unwrap();
        let cases = [
            (gzip(TEXT), Coding::Gzip),
            (z.finish().unwrap(), Coding::Deflate),
            (d.finish().unwrap(), Coding::Deflate),
        ];
        for (input, coding) in cases {
            let got = decode(input.into(), &[coding], 1 << 20, false).unwrap();
            assert_eq!((&got.body[..], got.truncated), (TEXT, false), "{coding:?}");
        }
    }

    #[test]
    fn layered_codings_are_undone_in_reverse() {
        let twice = gzip(&gzip(TEXT));
        let got = decode(twice.into(), &[Coding::Gzip, Coding::Gzip], 1 << 20, false).unwrap();
        assert_eq!(&got.body[..], TEXT);
    }

    #[test]
    fn bomb_stops_at_cap() {
        let bomb = gzip(&vec![0u8; 8 << 20]);
        assert!(bomb.len() < 20_000);
        let got = decode(bomb.into(), &[Coding::Gzip], 4096, false).unwrap();
        assert_eq!((got.body.len(), got.truncated), (4096, true));
    }

    #[test]
    fn corrupt_and_cut_streams() {
        let err = decode(Bytes::from_static(b"not gzip"), &[Coding::Gzip], 100, false);
        assert!(matches!(
            err,
            Err(DecodeError::Corrupt { coding: "gzip", .. })
        ));
        let big: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut g = gzip(&big);
        g.truncate(g.len() / 2);
        let got = decode(g.into(), &[Coding::Gzip], 1 << 20, true).unwrap();
        assert!(got.truncated);
        assert!(!got.body.is_empty() && big.starts_with(&got.body));
    }

    #[test]
    fn coding_names() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            codings(&t(&["identity", "x-gzip", "deflate"])).unwrap(),
            [Coding::Gzip, Coding::Deflate]
        );
        assert_eq!(
            codings(&t(&["br"])),
            Err(DecodeError::Unsupported("br".into()))
        );
    }
}
