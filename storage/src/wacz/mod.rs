//! [`write_wacz`]: a repository packaged as one WACZ 1.1.1 file, the ZIP that
//! ReplayWeb.page, Browsertrix and pywb take (`polycrawl wacz`).
//!
//! ```text
//! archive/<file>.warc.gz      every WARC file of the repository, as it is
//! indexes/index.cdx           the whole CDXJ index in one sorted file, `filename`
//!                             naming the file in archive/ (the spec's name for a
//!                             CDXJ index; pywb's `wb-manager add --unpack-wacz`
//!                             takes only `.cdx` and `.cdx.gz` entries)
//! pages/pages.jsonl           a header line, then one line per status-200 HTML
//!                             response: {"url": ..., "ts": ...}
//! datapackage.json            every file above with its sha256 and size
//! datapackage-digest.json     the sha256 of datapackage.json
//! ```
//!
//! Every entry is **stored, not deflated**, so a reader can fetch one record with a
//! range request on the WACZ (the WARC members are gzip already). WARC files from
//! the repository's year folders go side by side into `archive/` (a WACZ has one
//! folder level); two with one name are refused.
//!
//! Costs: one sequential read of every WARC file and the index, one write of the
//! package, one SHA-256 pass over it all; memory is one index line per index file
//! (a k-way merge) and the list of WARC files. The page list goes through a temp
//! file beside the output, so it never sits in memory. The package is written to
//! `<out>.partial` and renamed when complete: a crash leaves no half WACZ under the
//! name asked for.
//!
//! It must never be run on a repository an ingest is writing to (the index would
//! move under it): run it on a finished crawl.

pub mod package;

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zip::ZipWriter;
use zip::write::SimpleFileOptions;

use crate::cdxj::CdxjLine;
use crate::error::{Result, StorageError};
use crate::repository::RepositoryReader;
use package::{DataPackage, PAGES_HEADER, Resource, WACZ_VERSION, page_line, sha256_text};

pub use package::DataPackage as WaczPackage;

/// What [`write_wacz`] packaged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WaczSummary {
    /// WARC files in `archive/`.
    pub warcs: usize,
    /// Lines of `indexes/index.cdx`.
    pub index_lines: u64,
    /// Pages in `pages/pages.jsonl`.
    pub pages: u64,
    /// Size of the WACZ file.
    pub bytes: u64,
}

/// Packages the repository read by `repo` as the WACZ file `out` (replacing one
/// there), titled `title`. See the module docs.
pub fn write_wacz(repo: &RepositoryReader, out: &Path, title: &str) -> Result<WaczSummary> {
    let warcs = warc_files(&repo.warc)?;
    let partial = with_suffix(out, ".partial");
    let pages_tmp = with_suffix(out, ".pages.partial");
    let result = write_parts(repo, &warcs, &partial, &pages_tmp, title);
    let _ = fs::remove_file(&pages_tmp);
    match result {
        Ok((file, summary)) => {
            spool::publish::durable_rename(file, &partial, out)?;
            Ok(summary)
        }
        Err(e) => {
            let _ = fs::remove_file(&partial);
            Err(e)
        }
    }
}

fn write_parts(
    repo: &RepositoryReader,
    warcs: &[(String, PathBuf)],
    partial: &Path,
    pages_tmp: &Path,
    title: &str,
) -> Result<(File, WaczSummary)> {
    let file = File::create(partial).map_err(StorageError::io(partial))?;
    let mut zip = Entries {
        zip: ZipWriter::new(BufWriter::with_capacity(1 << 20, file)),
        resources: Vec::new(),
        path: partial.to_owned(),
    };
    let mut summary = WaczSummary {
        warcs: warcs.len(),
        ..WaczSummary::default()
    };
    // archive/: every WARC file, as it is.
    let base_of = write_archive(&mut zip, repo, warcs)?;
    // indexes/index.cdx, and the page list beside it into a temp file.
    write_index(&mut zip, repo, &base_of, pages_tmp, &mut summary)?;

    // pages/pages.jsonl
    let mut input = BufReader::new(File::open(pages_tmp).map_err(StorageError::io(pages_tmp))?);
    let len = fs::metadata(pages_tmp)
        .map_err(StorageError::io(pages_tmp))?
        .len();
    zip.entry("pages/pages.jsonl", len, |w| {
        io::copy(&mut input, w).map(|_| ())
    })?;

    // datapackage.json and its digest.
    let package = DataPackage {
        profile: "data-package".into(),
        wacz_version: WACZ_VERSION.into(),
        title: title.to_owned(),
        created: package::iso_date(&spool::warc::WarcDate::now().to_cdx_timestamp()),
        software: concat!("polycrawl ", env!("CARGO_PKG_VERSION")).into(),
        resources: std::mem::take(&mut zip.resources),
    };
    let bytes = package.encode();
    zip.raw("datapackage.json", &bytes)?;
    zip.raw("datapackage-digest.json", &package::digest_json(&bytes))?;
    let mut file = zip
        .zip
        .finish()
        .map_err(|e| zip_error(partial, e))?
        .into_inner()
        .map_err(|e| StorageError::io(partial)(e.into_error()))?;
    summary.bytes = file.stream_position().map_err(StorageError::io(partial))?;
    Ok((file, summary))
}

/// Stores every WARC file under `archive/` as it is; returns each one's entry
/// name by its path under the repository's `warc/` folder (as the index names it).
fn write_archive(
    zip: &mut Entries,
    repo: &RepositoryReader,
    warcs: &[(String, PathBuf)],
) -> Result<HashMap<String, String>> {
    let mut base_of: HashMap<String, String> = HashMap::new();
    for (base, path) in warcs {
        let mut input = File::open(path).map_err(StorageError::io(path))?;
        let len = input.metadata().map_err(StorageError::io(path))?.len();
        zip.entry(&format!("archive/{base}"), len, |w| {
            io::copy(&mut input, w).map(|_| ())
        })?;
        let rel = path.strip_prefix(&repo.warc).unwrap_or(path);
        base_of.insert(rel.to_string_lossy().into_owned(), base.clone());
    }
    Ok(base_of)
}

/// Stores `indexes/index.cdx` (the repository's index, sorted, each line naming
/// its WARC file's entry by `base_of`) and writes the page list (`pages.jsonl`'s
/// lines: the HTML pages answered 200) to `pages_tmp`, counting both in `summary`.
fn write_index(
    zip: &mut Entries,
    repo: &RepositoryReader,
    base_of: &HashMap<String, String>,
    pages_tmp: &Path,
    summary: &mut WaczSummary,
) -> Result<()> {
    let mut pages = BufWriter::new(File::create(pages_tmp).map_err(StorageError::io(pages_tmp))?);
    pages
        .write_all(PAGES_HEADER.as_bytes())
        .map_err(StorageError::io(pages_tmp))?;
    let index_path = repo.index.path().to_owned();
    let mut failure: Option<StorageError> = None;
    zip.entry("indexes/index.cdx", 0, |w| {
        let mut text = String::with_capacity(512);
        let each = repo.index.for_each_sorted(|raw| {
            let mut line = CdxjLine::parse(raw.trim_end_matches('\n')).map_err(|reason| {
                StorageError::BadIndexLine {
                    path: index_path.clone(),
                    offset: 0,
                    reason,
                }
            })?;
            let Some(base) = base_of.get(&line.filename) else {
                return Err(StorageError::BadStoredRecord {
                    file: line.filename.clone(),
                    offset: line.offset,
                    reason: "the index names a WARC file the repository does not hold".into(),
                });
            };
            line.filename.clone_from(base);
            text.clear();
            line.encode(&mut text);
            w.write_all(text.as_bytes())
                .map_err(StorageError::io(&index_path))?;
            summary.index_lines += 1;
            if line.status == "200" && line.mime == "text/html" {
                pages
                    .write_all(page_line(&line.url, &line.timestamp).as_bytes())
                    .map_err(StorageError::io(pages_tmp))?;
                summary.pages += 1;
            }
            Ok(())
        });
        if let Err(e) = each {
            failure = Some(e);
            return Err(io::Error::other("index"));
        }
        Ok(())
    })
    .map_err(|e| failure.take().unwrap_or(e))?;
    let pages = pages
        .into_inner()
        .map_err(|e| StorageError::io(pages_tmp)(e.into_error()))?;
    drop(pages);
    Ok(())
}

/// The ZIP being written and the resources listed so far.
struct Entries {
    zip: ZipWriter<BufWriter<File>>,
    resources: Vec<Resource>,
    path: PathBuf,
}

impl Entries {
    /// Adds the stored entry `name`, its bytes written by `fill` (`len` is a size
    /// hint: 4 GiB or more needs ZIP64), and lists it with its SHA-256.
    fn entry(
        &mut self,
        name: &str,
        len: u64,
        fill: impl FnOnce(&mut Hashing<'_>) -> io::Result<()>,
    ) -> Result<()> {
        self.begin(name, len)?;
        let mut w = Hashing {
            inner: &mut self.zip,
            hasher: Sha256::new(),
            bytes: 0,
        };
        fill(&mut w).map_err(StorageError::io(&self.path))?;
        let (hasher, bytes) = (w.hasher, w.bytes);
        self.resources.push(Resource {
            name: name.rsplit('/').next().unwrap_or(name).to_lowercase(),
            path: name.to_owned(),
            hash: sha256_text(hasher),
            bytes,
        });
        Ok(())
    }

    /// Adds a stored entry that the package does not list (its two JSON files).
    fn raw(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.begin(name, bytes.len() as u64)?;
        self.zip
            .write_all(bytes)
            .map_err(StorageError::io(&self.path))
    }

    fn begin(&mut self, name: &str, len: u64) -> Result<()> {
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(len >= u64::from(u32::MAX) || name.starts_with("indexes/"));
        self.zip
            .start_file(name, options)
            .map_err(|e| zip_error(&self.path, e))
    }
}

/// A writer into the ZIP that hashes what passes.
struct Hashing<'a> {
    inner: &'a mut ZipWriter<BufWriter<File>>,
    hasher: Sha256,
    bytes: u64,
}

impl Write for Hashing<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn zip_error(path: &Path, e: zip::result::ZipError) -> StorageError {
    StorageError::Wacz {
        path: path.to_owned(),
        source: e,
    }
}

/// `path` with `suffix` added to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Every `.warc.gz` under `dir`, as (file name, path), sorted by path; a name met
/// twice is an error.
fn warc_files(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut paths = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).map_err(StorageError::io(&d))? {
            let path = entry.map_err(StorageError::io(&d))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(".warc.gz") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    let mut seen = HashMap::new();
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let base = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(first) = seen.insert(base.clone(), path.clone()) {
            return Err(StorageError::WaczNameClash {
                name: base,
                first,
                second: path,
            });
        }
        out.push((base, path));
    }
    Ok(out)
}
