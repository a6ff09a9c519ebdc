//! SHA-1 digests as WARC writes them: `sha1:` and 32 characters of RFC 4648 base32
//! (`sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ`), the form warcio, Heritrix, wget and
//! pywb produce and compare for deduplication.
//!
//! `WARC-Block-Digest` covers the whole record block; `WARC-Payload-Digest` covers
//! the payload, which for `application/http` records is the HTTP entity body (after
//! the response head). Revisit records and CDXJ indexes use the payload digest.

use std::fmt;
use std::str::FromStr;

use data_encoding::BASE32;
use sha1::{Digest as _, Sha1};

/// A SHA-1 digest, displayed as `sha1:BASE32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha1Digest(pub [u8; 20]);

impl Sha1Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let mut d = Digester::new();
        d.update(bytes);
        d.finish()
    }

    /// Writes `sha1:BASE32` into a stack buffer and returns it as text.
    pub fn encode<'b>(&self, buf: &'b mut [u8; 37]) -> &'b str {
        buf[..5].copy_from_slice(b"sha1:");
        BASE32.encode_mut(&self.0, &mut buf[5..]);
        // Base32 output is ASCII.
        std::str::from_utf8(&buf[..]).unwrap_or_default()
    }
}

/// The `WARC-Payload-Digest` of an HTTP response: the digest of its entity body, the
/// bytes after the response head's blank line (as stored in the record).
pub fn payload_digest(entity_body: &[u8]) -> Sha1Digest {
    Sha1Digest::of(entity_body)
}

impl fmt::Display for Sha1Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.encode(&mut [0; 37]))
    }
}

/// Text that is not `sha1:` followed by 32 base32 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid SHA-1 digest {0:?}: expected sha1:<32 base32 characters>")]
pub struct InvalidDigest(pub String);

impl FromStr for Sha1Digest {
    type Err = InvalidDigest;

    /// Parses `sha1:BASE32`; the prefix and the base32 are case-insensitive.
    fn from_str(s: &str) -> Result<Self, InvalidDigest> {
        let bad = || InvalidDigest(s.chars().take(64).collect());
        let (algo, value) = s.split_once(':').ok_or_else(bad)?;
        if !algo.eq_ignore_ascii_case("sha1") || value.len() != 32 {
            return Err(bad());
        }
        let mut upper = [0u8; 32];
        for (u, c) in upper.iter_mut().zip(value.bytes()) {
            *u = c.to_ascii_uppercase();
        }
        let mut out = [0u8; 20];
        match BASE32.decode_mut(&upper, &mut out) {
            Ok(20) => Ok(Self(out)),
            _ => Err(bad()),
        }
    }
}

/// Incremental SHA-1, for digesting a body as it streams in.
#[derive(Debug, Clone, Default)]
pub struct Digester(Sha1);

impl Digester {
    /// A fresh digester.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds more bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest of everything fed so far.
    pub fn finish(self) -> Sha1Digest {
        let mut out = [0u8; 20];
        out.copy_from_slice(&self.0.finalize());
        Sha1Digest(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Values as written by warcio / wget for the same bytes.
        assert_eq!(
            Sha1Digest::of(b"").to_string(),
            "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
        );
        assert_eq!(
            payload_digest(b"hello").to_string(),
            "sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N"
        );
        let mut d = Digester::new();
        d.update(b"hel");
        d.update(b"lo");
        assert_eq!(d.finish(), payload_digest(b"hello"));
    }

    #[test]
    fn parses_what_it_prints() {
        let d = Sha1Digest::of(b"x");
        assert_eq!(d.to_string().parse::<Sha1Digest>().unwrap(), d);
        assert_eq!(
            d.to_string().to_lowercase().parse::<Sha1Digest>().unwrap(),
            d
        );
        for bad in [
            "",
            "sha1:",
            "md5:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
            "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBY1",
        ] {
            assert!(bad.parse::<Sha1Digest>().is_err(), "{bad}");
        }
    }
}
