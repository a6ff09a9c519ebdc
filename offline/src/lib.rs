//! Site assignment from a previous crawl, `polycrawl assign` (issue 10; DESIGN.md
//! section 10; after Turk, Cambazoglu and Aykanat's hypergraph-partitioned site
//! assignment for parallel crawlers).
//!
//! A crawl split into K parts in exchange mode sends every link whose host another
//! part owns to that part. With the hash ([`app_core::parts::hash_part`]) most
//! cross-host links cross parts; placing hosts that link to each other in the same
//! part, under a balance constraint on pages per part, sends several times fewer.
//!
//! - [`graph`]: the host graph of a finished crawl's repository
//!   ([`HostGraph::from_repository`]): hosts weighted by stored pages, edges weighted
//!   by the distinct URLs one host's pages link on the other;
//! - [`partition`](mod@partition): METIS k-way on that graph ([`partition()`]), an
//!   [`AssignmentTable`];
//! - [`evaluate`](mod@evaluate): for any [`Ownership`](app_core::parts::Ownership) the
//!   cut URLs per page and the balance ([`evaluate()`] → [`Figures`]);
//! - [`table`](mod@table): the page-level comparison of partitioning schemes (URL-hash,
//!   site-hash, hierarchical, METIS, METIS with replication) at several K;
//! - [`quality`]: Cho and Garcia-Molina's quality metric, the share of a reference
//!   crawl's most-linked pages a crawl holds after each tenth of its downloads;
//! - [`costmodel`]: the two-level crawl's cost model (FC2L-UDC equations 2-4) from
//!   measured parameters;
//! - [`simulate`]: the parallel-crawler paper's coverage and quality experiments
//!   simulated on a crawl's web at 1 to 64 processes;
//! - [`save`] and [`save_replicated`]: the assignment table and the replicated-URL
//!   list ([`replicated_list`]: the N most-linked URLs), published crash-safely.
//!
//! Parts read the file through [`app_core::parts::Ownership::load`]; hosts not in it
//! (new since the previous crawl) fall back to the hash. This module must never
//! guess an ownership rule of its own: every figure goes through `Ownership`.

pub mod costmodel;
pub mod error;
pub mod evaluate;
pub mod graph;
pub mod hypergraph;
pub mod partition;
pub mod quality;
pub mod simulate;
pub mod table;

use std::io::Write;
use std::path::Path;

use spool::formats::{AssignmentTable, FormatError, ReplicatedList};

pub use error::AssignError;
pub use evaluate::{Figures, evaluate};
pub use graph::HostGraph;
pub use hypergraph::{MessageFigures, SiteHypergraph};
pub use partition::{partition, partition_messages};

/// Default largest part's pages over the mean (`--imbalance`).
pub const DEFAULT_IMBALANCE: f64 = 1.1;

/// Writes `table` to `path` crash-safely: a sibling temporary file, fsync, rename,
/// fsync of the folder ([`spool::publish::durable_rename`]). A crash leaves the old
/// file or the new one, never a part of either.
pub fn save(table: &AssignmentTable, path: &Path) -> Result<(), AssignError> {
    save_with(path, |w| table.write(w))
}

/// The `n` most-linked URLs of `graph` ([`HostGraph::most_linked`]) as a
/// replicated-URL list.
pub fn replicated_list(graph: &HostGraph, n: usize) -> ReplicatedList {
    ReplicatedList {
        urls: graph
            .most_linked(n)
            .into_iter()
            .map(|(u, count)| (graph.url(u).to_owned(), u64::from(count)))
            .collect(),
    }
}

/// Writes a replicated-URL list to `path` crash-safely, as [`save`].
pub fn save_replicated(list: &ReplicatedList, path: &Path) -> Result<(), AssignError> {
    save_with(path, |w| list.write(w))
}

type FileWriter = std::io::BufWriter<std::fs::File>;

/// Writes through `write` into a sibling temporary file, then publishes it as
/// `path` (fsync, rename, fsync of the folder).
fn save_with(
    path: &Path,
    write: impl FnOnce(FileWriter) -> Result<FileWriter, FormatError>,
) -> Result<(), AssignError> {
    let write_err = |source| AssignError::Write {
        path: path.to_owned(),
        source,
    };
    let name = path
        .file_name()
        .ok_or_else(|| write_err(std::io::Error::other("not a file name")))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let file = std::fs::File::create(&tmp).map_err(write_err)?;
    let result = (|| {
        let mut writer = write(std::io::BufWriter::new(file))?;
        writer.flush().map_err(write_err)?;
        let file = writer.into_inner().map_err(|e| write_err(e.into_error()))?;
        spool::publish::durable_rename(file, &tmp, path)
            .map_err(|e| write_err(std::io::Error::other(e.to_string())))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
