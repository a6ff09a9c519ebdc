//! The set's folder: one file per generation, `seen-<generation>.pcs` (twelve
//! digits), and the temp file of a merge in progress, `seen-<generation>.pcs.tmp`.

use std::fs;
use std::path::{Path, PathBuf};

use super::error::SeenError;

const PREFIX: &str = "seen-";
const SUFFIX: &str = ".pcs";
const TMP_SUFFIX: &str = ".pcs.tmp";

/// The file of `generation`.
pub(crate) fn path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{generation:012}{SUFFIX}"))
}

/// The temp file a merge writes `generation` to.
pub(crate) fn tmp_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{generation:012}{TMP_SUFFIX}"))
}

/// What the folder holds.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Generations with a file, ascending.
    pub(crate) generations: Vec<u64>,
    /// Temp files left by interrupted merges.
    pub(crate) tmps: Vec<PathBuf>,
}

/// Lists the set's files in `dir` (other files are left alone).
pub(crate) fn list(dir: &Path) -> Result<Listing, SeenError> {
    let mut listing = Listing::default();
    for entry in fs::read_dir(dir).map_err(SeenError::io(dir))? {
        let entry = entry.map_err(SeenError::io(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(generation) = parse(name, SUFFIX) {
            listing.generations.push(generation);
        } else if parse(name, TMP_SUFFIX).is_some() {
            listing.tmps.push(entry.path());
        }
    }
    listing.generations.sort_unstable();
    Ok(listing)
}

/// Removes the files of the generations `doomed` selects.
pub(crate) fn remove_generations(
    dir: &Path,
    doomed: impl Fn(u64) -> bool,
) -> Result<usize, SeenError> {
    let mut removed = 0;
    for generation in list(dir)?.generations.into_iter().filter(|&g| doomed(g)) {
        let p = path(dir, generation);
        fs::remove_file(&p).map_err(SeenError::io(&p))?;
        removed += 1;
    }
    Ok(removed)
}

/// Removes a file, ignoring "not found".
pub(crate) fn remove_if_present(p: &Path) -> Result<(), SeenError> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SeenError::io(p)(e)),
        _ => Ok(()),
    }
}

fn parse(name: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(suffix)?;
    if digits.len() != 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let dir = Path::new("/x");
        assert_eq!(path(dir, 42), Path::new("/x/seen-000000000042.pcs"));
        assert_eq!(parse("seen-000000000042.pcs", SUFFIX), Some(42));
        assert_eq!(parse("seen-000000000042.pcs.tmp", TMP_SUFFIX), Some(42));
        assert_eq!(parse("seen-000000000042.pcs.tmp", SUFFIX), None);
        assert_eq!(parse("seen-42.pcs", SUFFIX), None);
        assert_eq!(parse("notes.txt", SUFFIX), None);
    }
}
