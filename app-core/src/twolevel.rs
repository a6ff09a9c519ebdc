//! The two files between the coordinator and its agents: site reports (agent ->
//! coordinator) and assignment generations (coordinator -> every agent).
//!
//! **Site report** (`exchange/<stem>-coord/*.exchange`, published through the
//! spool by rename, claimed by rename): UTF-8 lines,
//! `#polycrawl-sites v1 from=A parts=K`, then one site (a host name, lowercase,
//! no port: [`crate::parts::host_of`]) per line, optionally followed by a tab and
//! the site's root as the reporter met it (`scheme://host[:port]/`): the URL its
//! owner starts the site from. A site may be reported any number of times, by any
//! agent: the coordinator's site-level seen set drops the repeats.
//!
//! **Assignment generation** (`sites/<stem>/assign-<G>.tsv`, `G` twelve decimal
//! digits, written to a temp file, fsynced and renamed: it exists whole or not at
//! all): `#polycrawl-sites-assign v1 parts=K generation=G`, then
//! `site<TAB>agent[<TAB>root]` lines, each site once over all generations (the
//! root as reported; absent when the report had none). Generation `G` holds the sites the
//! coordinator's seen set found new in its merge `G`; a generation with no new
//! site is an empty file (it still records that `G` is published). Files are
//! never changed or removed during a crawl: an agent that read up to `G` reads
//! only the newer ones ([`read_generations`]).
//!
//! Cost: a report line is its host's bytes; an agent reading new generations reads
//! each assignment once, O(sites) over the crawl.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use spool::publish::durable_rename;

use spool::{AppId, ComponentId, Spool, SpoolError};

/// First word of a site report.
pub const REPORT_TAG: &str = "#polycrawl-sites";
/// First word of an assignment generation.
pub const ASSIGN_TAG: &str = "#polycrawl-sites-assign";

/// A file between the coordinator and its agents that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TwoLevelError {
    /// A file or folder.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The spool.
    #[error("{0}")]
    Spool(#[from] SpoolError),
    /// An assignment file that does not parse (never written by this code).
    #[error("assignment file {}: {reason}", path.display())]
    BadAssignment {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A crawl stem that makes no application id.
    #[error("stem {stem:?}: {reason}")]
    Stem {
        /// The stem.
        stem: String,
        /// Why.
        reason: String,
    },
}

/// The coordinator's application id for a crawl of stem `stem`.
pub fn coordinator_app(stem: &str) -> String {
    format!("{stem}-coord")
}

/// The folder of the assignment generations of a crawl of stem `stem`.
pub fn assignment_dir(root: &Path, stem: &str) -> PathBuf {
    root.join("sites").join(stem)
}

/// A reported or assigned site: its name and its root URL (empty when unknown).
pub type SiteRoot = (String, String);

/// The root URL of `url`'s site as reports carry it: `scheme://host[:port]/`.
pub fn root_of(url: &url::Url) -> url::Url {
    let mut root = url.clone();
    root.set_path("/");
    root.set_query(None);
    root.set_fragment(None);
    root
}

/// Publishes a site report from agent `from` of `parts` into the coordinator's
/// folder under `root` (an agent's side of [`write_report`]).
pub fn report_sites(
    root: &Path,
    stem: &str,
    from: u32,
    parts: u32,
    producer: &ComponentId,
    sites: &[SiteRoot],
) -> Result<PathBuf, TwoLevelError> {
    let name = coordinator_app(stem);
    let app = AppId::new(name).map_err(|e| TwoLevelError::Stem {
        stem: stem.to_owned(),
        reason: e.to_string(),
    })?;
    let dir = Spool::new(root).exchange(&app)?;
    let publisher = spool::publish::Publisher::new(dir, producer.clone())?;
    Ok(publisher.publish(
        spool::name::Priority::NORMAL,
        spool::name::FileKind::Exchange,
        &write_report(from, parts, sites),
    )?)
}

/// A site report's bytes.
pub fn write_report(from: u32, parts: u32, sites: &[SiteRoot]) -> Vec<u8> {
    let mut text = format!("{REPORT_TAG} v1 from={from} parts={parts}\n");
    for (site, root) in sites {
        text.push_str(site);
        if !root.is_empty() {
            text.push('\t');
            text.push_str(root);
        }
        text.push('\n');
    }
    text.into_bytes()
}

/// `site[<TAB>root]`: the site and its root (empty when absent), checked: a
/// valid site name, and a root that parses as a URL of that site with path `/`.
fn site_and_root(line: &str) -> Option<SiteRoot> {
    let (site, root) = line.split_once('\t').unwrap_or((line, ""));
    if !valid_site(site) {
        return None;
    }
    if !root.is_empty() {
        let url = url::Url::parse(root).ok()?;
        if crate::parts::host_of(&url).as_deref() != Some(site) || root_of(&url).as_str() != root {
            return None;
        }
    }
    Some((site.to_owned(), root.to_owned()))
}

/// The sites (and roots) of a report made for `parts` agents; `Err(reason)`
/// when it is not one.
pub fn read_report(bytes: &[u8], parts: u32) -> Result<Vec<SiteRoot>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty file")?;
    let fields = header_fields(header, REPORT_TAG)?;
    let from = field(&fields, "from")?;
    let k = field(&fields, "parts")?;
    if k != u64::from(parts) || from >= k {
        return Err(format!(
            "report from agent {from} of {k}, this crawl has {parts} agents"
        ));
    }
    let mut sites = Vec::new();
    for (i, line) in lines.enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let entry = site_and_root(line)
            .ok_or_else(|| format!("line {}: not `site[<TAB>root]`: {line:?}", i + 2))?;
        sites.push(entry);
    }
    Ok(sites)
}

/// A host name as sites are named: nonempty, lowercase, no space, no `/` or `:`.
fn valid_site(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
        })
}

fn header_fields(line: &str, tag: &str) -> Result<Vec<(String, String)>, String> {
    let mut words = line.split_whitespace();
    if words.next() != Some(tag) || words.next() != Some("v1") {
        return Err(format!("header is not `{tag} v1 ...`: {line:?}"));
    }
    words
        .map(|w| {
            w.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| format!("header word {w:?} is not key=value"))
        })
        .collect()
}

fn field(fields: &[(String, String)], name: &str) -> Result<u64, String> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
        .ok_or_else(|| format!("header has no numeric {name}="))
}

/// One assignment: the site, its agent, its root (empty when unknown).
pub type Assigned = (String, u32, String);

/// One published generation: its number and its `(site, agent, root)` lines.
pub type Generation = (u64, Vec<Assigned>);

/// The path of generation `g` in `dir`.
pub fn generation_path(dir: &Path, g: u64) -> PathBuf {
    dir.join(format!("assign-{g:012}.tsv"))
}

/// The generation a file name names (`None`: not an assignment generation).
fn generation_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("assign-")?.strip_suffix(".tsv")?;
    (digits.len() == 12 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Publishes generation `g` (temp file, fsync, rename, folder fsync). Writing the
/// same generation again replaces it whole (a restart that redoes `g`).
pub fn write_generation(
    dir: &Path,
    g: u64,
    parts: u32,
    sites: &[Assigned],
) -> Result<(), TwoLevelError> {
    let mut text = format!("{ASSIGN_TAG} v1 parts={parts} generation={g}\n");
    for (site, agent, root) in sites {
        text.push_str(&assigned_line(site, *agent, root));
    }
    let dest = generation_path(dir, g);
    let tmp = dir.join(format!(".assign-{g:012}.tsv.tmp"));
    let io = |source| TwoLevelError::File {
        path: tmp.clone(),
        source,
    };
    let mut file = fs::File::create(&tmp).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    durable_rename(file, &tmp, &dest)?;
    Ok(())
}

/// One assignment's line, `site<TAB>agent[<TAB>root]\n` (also an agent's local
/// copy of the other agents' sites).
pub fn assigned_line(site: &str, agent: u32, root: &str) -> String {
    if root.is_empty() {
        format!("{site}\t{agent}\n")
    } else {
        format!("{site}\t{agent}\t{root}\n")
    }
}

/// Parses [`assigned_line`]'s line (without its newline) for `parts` agents.
pub fn parse_assigned(line: &str, parts: u32) -> Option<Assigned> {
    let (site, rest) = line.split_once('\t')?;
    let (agent, root) = rest.split_once('\t').unwrap_or((rest, ""));
    let agent = agent.parse::<u32>().ok().filter(|a| *a < parts)?;
    let (site, root) = if root.is_empty() {
        site_and_root(site)?
    } else {
        site_and_root(&format!("{site}\t{root}"))?
    };
    Some((site, agent, root))
}

/// The published generations in `dir` newer than `after`, in order, each with its
/// `(site, agent)` lines. A temp file is never read. Each file is checked: its
/// header must name `parts` and its own generation, and every agent be below
/// `parts`.
pub fn read_generations(
    dir: &Path,
    after: u64,
    parts: u32,
) -> Result<Vec<Generation>, TwoLevelError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(TwoLevelError::File {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut gens: Vec<u64> = entries
        .flatten()
        .filter_map(|e| generation_of(e.file_name().to_str()?))
        .filter(|&g| g > after)
        .collect();
    gens.sort_unstable();
    let mut out = Vec::with_capacity(gens.len());
    for g in gens {
        let path = generation_path(dir, g);
        let text = fs::read_to_string(&path).map_err(|source| TwoLevelError::File {
            path: path.clone(),
            source,
        })?;
        let bad = |reason: String| TwoLevelError::BadAssignment {
            path: path.clone(),
            reason,
        };
        let mut lines = text.lines();
        let fields = header_fields(lines.next().unwrap_or_default(), ASSIGN_TAG).map_err(bad)?;
        if field(&fields, "parts").map_err(bad)? != u64::from(parts)
            || field(&fields, "generation").map_err(bad)? != g
        {
            return Err(bad(format!(
                "header does not say parts={parts} generation={g}"
            )));
        }
        let mut sites = Vec::new();
        for line in lines {
            let entry =
                parse_assigned(line, parts).ok_or_else(|| bad(format!("bad line {line:?}")))?;
            sites.push(entry);
        }
        out.push((g, sites));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip_and_bad_ones_are_refused() {
        let sites = vec![
            ("a.example".to_owned(), String::new()),
            (
                "www.b-c.test".to_owned(),
                "https://www.b-c.test:8443/".to_owned(),
            ),
        ];
        let bytes = write_report(2, 4, &sites);
        assert_eq!(read_report(&bytes, 4).unwrap(), sites);
        // A root of another site, or not a root, is refused.
        let other = b"#polycrawl-sites v1 from=0 parts=4\na.example\thttp://b.example/\n";
        assert!(read_report(other, 4).is_err());
        let inner = b"#polycrawl-sites v1 from=0 parts=4\na.example\thttp://a.example/x\n";
        assert!(read_report(inner, 4).is_err());
        assert!(read_report(&bytes, 3).is_err(), "other agent count");
        assert!(read_report(b"#polycrawl-sites v1 from=4 parts=4\n", 4).is_err());
        assert!(read_report(b"#polycrawl-sites v1 from=0 parts=4\nA.example\n", 4).is_err());
        assert!(read_report(b"#polycrawl-sites v1 from=0 parts=4\na:80\n", 4).is_err());
        assert!(read_report(b"#other v1 from=0 parts=4\n", 4).is_err());
        assert!(read_report(b"", 4).is_err());
    }

    #[test]
    fn generations_are_read_in_order_after_a_point_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write_generation(d, 2, 3, &[("b.x".into(), 1, String::new())]).unwrap();
        let first = [
            ("a.x".into(), 0, "http://a.x:8080/".into()),
            ("c.x".into(), 2, String::new()),
        ];
        write_generation(d, 1, 3, &first).unwrap();
        write_generation(d, 10, 3, &[]).unwrap();
        fs::write(d.join(".assign-000000000011.tsv.tmp"), "half").unwrap();
        let all = read_generations(d, 0, 3).unwrap();
        let gens: Vec<u64> = all.iter().map(|(g, _)| *g).collect();
        assert_eq!(gens, vec![1, 2, 10]);
        assert_eq!(all[0].1, first.to_vec());
        assert_eq!(read_generations(d, 2, 3).unwrap().len(), 1);
        assert!(read_generations(d, 0, 4).is_err(), "made for 3 agents");
        assert!(read_generations(&d.join("none"), 0, 3).unwrap().is_empty());
        fs::write(
            generation_path(d, 12),
            format!("{ASSIGN_TAG} v1 parts=3 generation=12\nz.x\t3\n"),
        )
        .unwrap();
        assert!(read_generations(d, 10, 3).is_err(), "agent out of range");
    }
}
