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

use std::io::Read;

use bytes::Bytes;
use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

use crate::error::DecodeError;

/// A content coding we can undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coding {
    /// `gzip` or `x-gzip`.
    Gzip,
    /// `deflate` (zlib or raw).
    Deflate,
}

/// The codings named by `Content-Encoding` tokens, in order of application.
pub(crate) fn codings(tokens: &[String]) -> Result<Vec<Coding>, DecodeError> {
    tokens
        .iter()
        .filter(|t| t.as_str() != "identity")
        .map(|t| match t.as_str() {
            "gzip" | "x-gzip" => Ok(Coding::Gzip),
            "deflate" => Ok(Coding::Deflate),
            other => Err(DecodeError::Unsupported(other.to_owned())),
        })
        .collect()
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
    let mut body = payload;
    let mut truncated = false;
    for &coding in codings.iter().rev() {
        if body.is_empty() {
            break;
        }
        let (out, cut) = decode_one(&body, coding, cap, input_truncated || truncated)?;
        body = out;
        truncated |= cut;
    }
    if body.len() > cap {
        body.truncate(cap);
        truncated = true;
    }
    Ok(Decoded { body, truncated })
}

fn decode_one(
    input: &[u8],
    coding: Coding,
    cap: usize,
    input_truncated: bool,
) -> Result<(Bytes, bool), DecodeError> {
    let limit = cap as u64 + 1;
    let mut out = Vec::with_capacity(input.len().saturating_mul(4).min(cap));
    let (name, result) = match coding {
        Coding::Gzip => (
            "gzip",
            MultiGzDecoder::new(input).take(limit).read_to_end(&mut out),
        ),
        Coding::Deflate if is_zlib(input) => (
            "deflate",
            ZlibDecoder::new(input).take(limit).read_to_end(&mut out),
        ),
        Coding::Deflate => (
            "deflate",
            DeflateDecoder::new(input).take(limit).read_to_end(&mut out),
        ),
    };
    let mut truncated = match result {
        Ok(_) => false,
        // read_to_end keeps what it read before the error.
        Err(_) if input_truncated => true,
        Err(e) => {
            return Err(DecodeError::Corrupt {
                coding: name,
                message: e.to_string(),
            });
        }
    };
    if out.len() > cap {
        out.truncate(cap);
        truncated = true;
    }
    Ok((Bytes::from(out), truncated))
}

/// A zlib header: compression method 8 and a header checksum divisible by 31.
fn is_zlib(input: &[u8]) -> bool {
    match input {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
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
