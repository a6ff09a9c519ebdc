//! Replication of the most-linked URLs (Cho and Garcia-Molina, section 3.2): the
//! N URLs with the most back-links in a previous crawl, written by `polycrawl
//! assign --replicate N` (`spool::formats::replicated`) and given to every part at
//! start. A listed URL is never exchanged: its owner crawls it (it is offered
//! like a seed, so the owner reaches it even when only other parts link to it),
//! and every other part treats it as already seen. The most-linked URLs are the
//! ones most parts would otherwise send, again and again, so a small list removes
//! a large share of the exchange.
//!
//! Matching is by the URL string as the file holds it: `assign` writes URLs as
//! the application canonicalizes them (the same [`crate::AppConfig`]
//! canonicalization read from the same config), so a crawl under another
//! canonicalization matches fewer of them, which costs exchange, never pages.
//!
//! Cost: O(N) memory (the URL strings in a hash set), one hash lookup per foreign
//! URL. This module must never decide ownership ([`super::Ownership`] does).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use spool::formats::ReplicatedList;

/// Why a replicated-URL file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReplicatedError {
    /// The file could not be opened.
    #[error("replicated-URL file {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file does not parse.
    #[error("replicated-URL file {}: {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// The parse error, with its line.
        source: spool::formats::FormatError,
    },
}

/// The replicated URLs every part holds (empty: no replication).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replicated {
    urls: HashSet<String>,
    /// In the file's order (most linked first), for seeding.
    order: Vec<String>,
}

impl Replicated {
    /// The set of `list`'s URLs.
    pub fn from_list(list: &ReplicatedList) -> Self {
        let order: Vec<String> = list.urls.iter().map(|(u, _)| u.clone()).collect();
        Self {
            urls: order.iter().cloned().collect(),
            order,
        }
    }

    /// Reads a replicated-URL file.
    pub fn load(path: &Path) -> Result<Self, ReplicatedError> {
        let file = std::fs::File::open(path).map_err(|source| ReplicatedError::Open {
            path: path.to_owned(),
            source,
        })?;
        let list = ReplicatedList::read(std::io::BufReader::new(file)).map_err(|source| {
            ReplicatedError::Format {
                path: path.to_owned(),
                source,
            }
        })?;
        Ok(Self::from_list(&list))
    }

    /// Whether `url` (as the application writes it) is replicated.
    pub fn contains(&self, url: &str) -> bool {
        self.urls.contains(url)
    }

    /// The number of replicated URLs.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// No URL is replicated.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The replicated URLs, most linked first.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_matches_exact_strings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("top.tsv");
        std::fs::write(
            &path,
            "#polycrawl-replicated v1\nhttp://b.example/\t9\nhttp://a.example/x\t3\n",
        )
        .unwrap();
        let r = Replicated::load(&path).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r.contains("http://a.example/x") && r.contains("http://b.example/"));
        assert!(!r.contains("http://a.example/y"));
        assert_eq!(
            r.urls().collect::<Vec<_>>(),
            ["http://b.example/", "http://a.example/x"]
        );
        assert!(Replicated::default().is_empty());
        std::fs::write(&path, "#polycrawl-replicated v1\nhttp://b.example/ 9\n").unwrap();
        let e = Replicated::load(&path).unwrap_err().to_string();
        assert!(e.contains("top.tsv") && e.contains("line 2"), "{e}");
        assert!(matches!(
            Replicated::load(&dir.path().join("nope")),
            Err(ReplicatedError::Open { .. })
        ));
    }
}
