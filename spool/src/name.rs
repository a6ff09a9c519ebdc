//! Spool file names: `<priority>-<producer>-<seq>.<kind>`, parsed and formatted side
//! by side.
//!
//! - `priority`: two digits, `00` to `99`; `00` is the most urgent.
//! - `producer`: the [`ComponentId`] of the process that published the file. It may
//!   itself contain `-`, so the priority is read up to the *first* `-` and the
//!   sequence number from the *last* `-`.
//! - `seq`: the publication time in microseconds since the UNIX epoch, zero-padded to
//!   20 digits (every `u64` fits), made strictly increasing per producer by
//!   [`SeqClock`] (`max(now_us, last + 1)`). Because it is a timestamp and not a
//!   counter, names never repeat across restarts of a producer (as long as its clock
//!   does not step back past what it already published; a publisher also starts above
//!   the highest sequence it still finds in its folder).
//! - `kind`: the file extension, see [`FileKind`].
//!
//! Ordering: [`SpoolName`]'s `Ord` is `(priority, seq, producer, kind)`, which is
//! priority first and then FIFO *across* producers (by publication time; clocks of
//! different machines are only as close as NTP keeps them). A plain byte-wise sort of
//! the names gives priority first and then FIFO *per producer* (producers grouped by
//! id). Consumers sort with `Ord`.
//!
//! Parsing is strict: `name.parse::<SpoolName>()?.to_string() == name` always holds,
//! so a name never has two spellings. This module never touches the disk.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::ids::{ComponentId, InvalidId};

/// Width of the zero-padded sequence number (`u64::MAX` has 20 digits).
pub const SEQ_DIGITS: usize = 20;

/// How urgent a spool file is: `0` (most urgent) to `99` (least urgent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

impl Priority {
    /// The most urgent priority, `00` (robots.txt fetches, for example).
    pub const MOST_URGENT: Priority = Priority(0);
    /// The least urgent priority, `99`.
    pub const LEAST_URGENT: Priority = Priority(99);
    /// A middle priority, `50`, for files with no particular urgency.
    pub const NORMAL: Priority = Priority(50);

    /// Validates `value` (0 to 99).
    pub fn new(value: u8) -> Result<Self, NameError> {
        if value <= 99 {
            Ok(Self(value))
        } else {
            Err(NameError::Priority(value.to_string()))
        }
    }

    /// The priority as a number, 0 to 99.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}", self.0)
    }
}

/// What a spool file holds; written as the file name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    /// A request file (application -> manager), extension `requests`.
    Requests,
    /// A page batch in WARC 1.1 (downloader -> application), extension `warc.gz`.
    PageBatch,
    /// An outcome file (manager -> application), extension `outcomes`.
    Outcomes,
    /// A robots.txt fetch result (downloader -> manager), extension `robots`.
    Robots,
    /// An inter-partition URL batch (application part -> part), extension `exchange`.
    Exchange,
}

impl FileKind {
    /// Every kind, in declaration order.
    pub const ALL: [FileKind; 5] = [
        Self::Requests,
        Self::PageBatch,
        Self::Outcomes,
        Self::Robots,
        Self::Exchange,
    ];

    /// The file extension, without the leading dot. Stable: never change one.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Requests => "requests",
            Self::PageBatch => "warc.gz",
            Self::Outcomes => "outcomes",
            Self::Robots => "robots",
            Self::Exchange => "exchange",
        }
    }

    /// The kind whose extension is exactly `ext`.
    pub fn from_extension(ext: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.extension() == ext)
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// A file name that does not follow `<priority>-<producer>-<seq>.<kind>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name has no `.` before an extension, or no two `-` separators.
    #[error("spool file name {0:?} is not <priority>-<producer>-<seq>.<kind>")]
    Shape(String),
    /// The priority is not exactly two digits, or is above 99.
    #[error("invalid priority {0:?}: must be two digits, 00 to 99")]
    Priority(String),
    /// The sequence number is not exactly 20 digits, or does not fit a u64.
    #[error("invalid sequence number {0:?}: must be 20 digits")]
    Seq(String),
    /// The extension names no [`FileKind`].
    #[error("unknown spool file extension {0:?}")]
    Kind(String),
    /// The producer part is not a valid component id.
    #[error(transparent)]
    Producer(#[from] InvalidId),
}

/// A parsed spool file name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpoolName {
    /// How urgent the file is.
    pub priority: Priority,
    /// The component that published it.
    pub producer: ComponentId,
    /// Publication time in microseconds since the epoch, strictly increasing per producer.
    pub seq: u64,
    /// What the file holds.
    pub kind: FileKind,
}

impl SpoolName {
    /// A name from its parts.
    pub fn new(priority: Priority, producer: ComponentId, seq: u64, kind: FileKind) -> Self {
        Self {
            priority,
            producer,
            seq,
            kind,
        }
    }
}

impl Ord for SpoolName {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.priority, self.seq, &self.producer, self.kind).cmp(&(
            other.priority,
            other.seq,
            &other.producer,
            other.kind,
        ))
    }
}

impl PartialOrd for SpoolName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for SpoolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}-{:0width$}.{}",
            self.priority,
            self.producer,
            self.seq,
            self.kind,
            width = SEQ_DIGITS
        )
    }
}

impl FromStr for SpoolName {
    type Err = NameError;

    fn from_str(name: &str) -> Result<Self, NameError> {
        let shape = || NameError::Shape(name.to_owned());
        // Ids hold no '.', so the first '.' starts the extension ("warc.gz" has one).
        let (stem, ext) = name.split_once('.').ok_or_else(shape)?;
        let (priority, rest) = stem.split_once('-').ok_or_else(shape)?;
        let (producer, seq) = rest.rsplit_once('-').ok_or_else(shape)?;

        if priority.len() != 2 || !priority.bytes().all(|b| b.is_ascii_digit()) {
            return Err(NameError::Priority(priority.to_owned()));
        }
        let priority = Priority::new(
            priority
                .parse()
                .map_err(|_| NameError::Priority(priority.to_owned()))?,
        )?;
        if seq.len() != SEQ_DIGITS || !seq.bytes().all(|b| b.is_ascii_digit()) {
            return Err(NameError::Seq(seq.to_owned()));
        }
        let seq_num = seq.parse().map_err(|_| NameError::Seq(seq.to_owned()))?;
        let kind = FileKind::from_extension(ext).ok_or_else(|| NameError::Kind(ext.to_owned()))?;
        let producer = ComponentId::new(producer)?;
        Ok(Self::new(priority, producer, seq_num, kind))
    }
}

/// Hands out strictly increasing sequence numbers: `max(now_us, last + 1)`.
///
/// Thread-safe (one atomic); one clock per producer id.
#[derive(Debug, Default)]
pub struct SeqClock {
    last: AtomicU64,
}

impl SeqClock {
    /// A clock whose next number is above `floor` (use the highest sequence number
    /// this producer already has on disk, or 0).
    pub fn starting_above(floor: u64) -> Self {
        Self {
            last: AtomicU64::new(floor),
        }
    }

    /// The next sequence number: the current time in microseconds, or one more than
    /// the last number handed out if the clock has not moved on (or went back).
    pub fn next(&self) -> u64 {
        let now = now_micros();
        let mut last = self.last.load(AtomicOrdering::Relaxed);
        loop {
            let next = now.max(last.saturating_add(1));
            match self.last.compare_exchange_weak(
                last,
                next,
                AtomicOrdering::Relaxed,
                AtomicOrdering::Relaxed,
            ) {
                Ok(_) => return next,
                Err(seen) => last = seen,
            }
        }
    }
}

/// Microseconds since the UNIX epoch (0 if the clock is before it).
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn producer(s: &str) -> ComponentId {
        ComponentId::new(s).unwrap()
    }

    #[test]
    fn golden_names_round_trip() {
        let cases = [
            (
                SpoolName::new(
                    Priority::new(7).unwrap(),
                    producer("dl-3"),
                    42,
                    FileKind::PageBatch,
                ),
                "07-dl-3-00000000000000000042.warc.gz",
            ),
            (
                SpoolName::new(
                    Priority::MOST_URGENT,
                    producer("app_1"),
                    1_700_000_000_123_456,
                    FileKind::Requests,
                ),
                "00-app_1-00001700000000123456.requests",
            ),
            (
                SpoolName::new(
                    Priority::LEAST_URGENT,
                    producer("a-b-c"),
                    u64::MAX,
                    FileKind::Exchange,
                ),
                "99-a-b-c-18446744073709551615.exchange",
            ),
            (
                SpoolName::new(Priority::NORMAL, producer("m"), 0, FileKind::Outcomes),
                "50-m-00000000000000000000.outcomes",
            ),
            (
                SpoolName::new(
                    Priority::new(1).unwrap(),
                    producer("x"),
                    1,
                    FileKind::Robots,
                ),
                "01-x-00000000000000000001.robots",
            ),
        ];
        for (name, text) in cases {
            assert_eq!(name.to_string(), text);
            assert_eq!(text.parse::<SpoolName>().unwrap(), name);
        }
    }

    #[test]
    fn rejects_malformed_names() {
        let bad = [
            "",
            "README",
            "07-dl-00000000000000000042",           // no extension
            "07-dl-00000000000000000042.txt",       // unknown kind
            "07-dl-00000000000000000042.warc",      // "warc" alone is not a kind
            "7-dl-00000000000000000042.requests",   // one-digit priority
            "100-dl-00000000000000000042.requests", // three digits
            "0a-dl-00000000000000000042.requests",
            "07-dl-42.requests",                      // seq not padded
            "07-dl-000000000000000000042.requests",   // 21 digits
            "07-dl-99999999999999999999.requests",    // overflows u64
            "07-DL-00000000000000000042.requests",    // id case
            "07--00000000000000000042.requests",      // empty producer
            "07-00000000000000000042.requests",       // no producer at all
            "07-dl-00000000000000000042.requests.x1", // tmp-file shape
            "+7-dl-00000000000000000042.requests",
        ];
        for text in bad {
            assert!(text.parse::<SpoolName>().is_err(), "accepted {text:?}");
        }
        assert!(Priority::new(100).is_err());
    }

    #[test]
    fn ord_is_priority_then_fifo_across_producers() {
        let n = |p: u8, who: &str, seq: u64| {
            SpoolName::new(
                Priority::new(p).unwrap(),
                producer(who),
                seq,
                FileKind::Requests,
            )
        };
        let mut names = [
            n(5, "b", 3),
            n(5, "a", 9),
            n(1, "z", 100),
            n(5, "a", 2),
            n(5, "b", 9),
        ];
        names.sort();
        let got: Vec<_> = names.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            got,
            [
                "01-z-00000000000000000100.requests",
                "05-a-00000000000000000002.requests",
                "05-b-00000000000000000003.requests",
                "05-a-00000000000000000009.requests",
                "05-b-00000000000000000009.requests",
            ]
        );
        // A plain string sort: priority, then per-producer FIFO.
        let mut text = got;
        text.sort();
        assert_eq!(
            text,
            [
                "01-z-00000000000000000100.requests",
                "05-a-00000000000000000002.requests",
                "05-a-00000000000000000009.requests",
                "05-b-00000000000000000003.requests",
                "05-b-00000000000000000009.requests",
            ]
        );
    }

    #[test]
    fn seq_clock_is_strictly_increasing_and_near_now() {
        let clock = SeqClock::default();
        let mut last = 0;
        for _ in 0..10_000 {
            let s = clock.next();
            assert!(s > last);
            last = s;
        }
        let now = now_micros();
        assert!(last <= now + 10_001 && last + 60_000_000 > now);

        let ahead = SeqClock::starting_above(u64::MAX - 5);
        assert_eq!(ahead.next(), u64::MAX - 4);
    }
}
