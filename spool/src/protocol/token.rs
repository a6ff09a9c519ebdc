//! The shared-secret token presented in every `Hello`: never printed, compared in
//! constant time.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A shared secret from the config. `Debug` prints `Token(<redacted>)` and there is
/// no `Display`, so a token cannot end up in a log line by accident.
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

/// Token text that is empty or longer than [`Token::MAX_LEN`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a control token must be 1 to {max} bytes long, got {len} bytes", max = Token::MAX_LEN)]
pub struct InvalidToken {
    /// Length of the rejected text, in bytes.
    pub len: usize,
}

impl Token {
    /// Longest accepted token, in bytes.
    pub const MAX_LEN: usize = 256;

    /// Wraps a configured secret; it must be 1 to [`Token::MAX_LEN`] bytes.
    ///
    /// Tokens received from the network are not checked this way: a bad one is
    /// simply wrong.
    pub fn new(secret: impl Into<String>) -> Result<Self, InvalidToken> {
        let secret = secret.into();
        if secret.is_empty() || secret.len() > Self::MAX_LEN {
            return Err(InvalidToken { len: secret.len() });
        }
        Ok(Self(secret))
    }

    /// Whether `other` is the same secret. Runs in time that depends only on the
    /// lengths, never on where the first differing byte is.
    pub fn matches(&self, other: &Token) -> bool {
        let (a, b) = (self.0.as_bytes(), other.0.as_bytes());
        let mut diff = u64::from(a.len() != b.len());
        for i in 0..a.len().max(b.len()) {
            let x = a.get(i).copied().unwrap_or(0);
            let y = b.get(i).copied().unwrap_or(0);
            diff |= u64::from(std::hint::black_box(x ^ y));
        }
        std::hint::black_box(diff) == 0
    }
}

impl PartialEq for Token {
    fn eq(&self, other: &Self) -> bool {
        self.matches(other)
    }
}

impl Eq for Token {}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_and_redacts() {
        let t = Token::new("s3cret").unwrap();
        assert!(t.matches(&Token::new("s3cret").unwrap()));
        for other in ["s3cre", "s3cret!", "S3cret", "x"] {
            assert!(!t.matches(&Token::new(other).unwrap()), "{other}");
        }
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        assert!(Token::new("").is_err());
        assert!(Token::new("a".repeat(257)).is_err());
    }
}
