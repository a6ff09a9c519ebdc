//! Identifier newtypes shared by every process: application ids and component ids.
//!
//! Both are validated on construction (`[a-z0-9_-]`, 1 to 32 bytes for an app, 1 to 64
//! for a component) so they are always safe to use as a directory or file-name part.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An identifier was empty, too long or held a character outside `[a-z0-9_-]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {value:?}: must be 1 to {max} characters of [a-z0-9_-]")]
pub struct InvalidId {
    /// Which kind of id was being parsed ("application id", "component id").
    pub what: &'static str,
    /// The rejected text.
    pub value: String,
    /// The maximum length for this kind of id.
    pub max: usize,
}

fn check(what: &'static str, max: usize, value: &str) -> Result<(), InvalidId> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(InvalidId {
            what,
            value: value.to_owned(),
            max,
        })
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $what:literal, $max:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Longest accepted id, in bytes.
            pub const MAX_LEN: usize = $max;

            /// Validates and wraps `value`.
            pub fn new(value: impl Into<String>) -> Result<Self, InvalidId> {
                let value = value.into();
                check($what, $max, &value)?;
                Ok(Self(value))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;
            fn from_str(s: &str) -> Result<Self, InvalidId> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;
            fn try_from(s: String) -> Result<Self, InvalidId> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// The id of a crawling application (`[a-z0-9_-]{1,32}`); names its spool folders.
    AppId,
    "application id",
    32
);
id_type!(
    /// The id of one running component (a downloader, resolver, consumer or producer).
    ComponentId,
    "component id",
    64
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_and_rejects_bad_ids() {
        assert_eq!(AppId::new("bfs_1-a").unwrap().as_str(), "bfs_1-a");
        for bad in ["", "BFS", "a/b", "a.b", "x y", &"a".repeat(33)] {
            let err = AppId::new(bad).unwrap_err();
            assert!(err.to_string().contains("application id"), "{err}");
        }
        assert!(ComponentId::new("a".repeat(64)).is_ok());
        assert!(ComponentId::new("a".repeat(65)).is_err());
    }

    #[test]
    fn serde_validates() {
        let bad: Result<AppId, _> = postcard::from_bytes(&postcard::to_stdvec("Nope").unwrap());
        assert!(bad.is_err());
    }
}
