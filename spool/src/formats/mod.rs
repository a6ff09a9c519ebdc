//! The text file formats of the spool: request files, outcome files, exchange files,
//! assignment files and replicated-URL files. (Page batches are WARC; see
//! [`crate::warc`].)
//!
//! | format | folder | direction | module |
//! |---|---|---|---|
//! | request file v1 | `requests/<app>/` | application → manager | [`requests`] |
//! | outcome file v1 | `outcomes/<app>/` | manager → application | [`outcomes`] |
//! | exchange file v1 | `exchange/<app>/` | application part → part | [`exchange`] |
//! | assignment file v1 | anywhere (`polycrawl assign --out`) | `assign` → every part | [`assignment`] |
//! | replicated-URL file v1 | anywhere (`polycrawl assign --replicate`) | `assign` → every part | [`replicated`] |
//!
//! Each module documents its format with a complete example file. Rules common to all
//! of them, chosen so that `grep`, `cut`, `sort` and a text editor are enough to read
//! or write them:
//!
//! - UTF-8 text; lines end in `\n` (writers) or `\n` / `\r\n` (readers); the last
//!   line may lack its newline. A line, newline included, is at most
//!   [`MAX_LINE_BYTES`] (64 KiB), so a garbage file cannot exhaust memory.
//! - Line 1 is a header: `#polycrawl-<kind> v<N>`, then space-separated `key=value`
//!   fields. The version is checked: this build reads v1 only, and a file with
//!   another version or an unknown header key is refused, never guessed at.
//! - Fields within a line are separated by one TAB. URLs are not canonicalized here
//!   but must be non-empty and hold no whitespace or control character.
//! - After the header, blank lines (empty or whitespace only) and comment lines
//!   (starting with `#`) are ignored, so an operator can annotate a hand-made file.
//! - Readers stream (one reused line buffer, one record at a time) and stop at the
//!   first error, a [`FormatError`] carrying the 1-based line number and a typed
//!   [`FormatErrorKind`]. Writers check every field first, so they never write a
//!   line the reader rejects; they write to any `Write` and leave fsync and publish
//!   to [`crate::publish`].
//!
//! URL lines (URL plus hints) are shared by request and exchange files: [`Request`]
//! and [`Hints`], parsed by one piece of code.

pub mod assignment;
pub mod error;
pub mod exchange;
pub mod outcomes;
pub mod replicated;
pub mod requests;
mod text;
pub mod urls;

pub use assignment::AssignmentTable;
pub use error::{FormatError, FormatErrorKind};
pub use exchange::{ExchangeHeader, ExchangeReader, ExchangeWriter};
pub use outcomes::{Outcome, OutcomeReader, OutcomeWriter};
pub use replicated::ReplicatedList;
pub use requests::{RequestHeader, RequestReader, RequestWriter};
pub use urls::{Hints, Request};

/// Longest line the text formats accept, in bytes, line ending included.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
