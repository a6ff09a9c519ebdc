//! The one `Stored` fetch report the manager's tests and benches start from:
//! [`stored`] gives a plausible page (1,000 wire bytes, 500 of body, 1/2/3 ms
//! timings) and a test changes what it tests through [`page_mut`].

use spool::protocol::{FetchReport, FetchResult, JobId, StoredPage, Timing};

/// A `Stored` report of `job`: status `status`, the page in batch file `file`.
pub fn stored(job: JobId, status: u16, file: &str) -> FetchReport {
    FetchReport {
        job,
        result: FetchResult::Stored(StoredPage {
            status,
            wire_bytes: 1_000,
            body_bytes: 500,
            truncated: false,
            timing: Timing {
                connect_ms: 1,
                first_byte_ms: 2,
                total_ms: 3,
                sent_us: 0,
                written_us: 0,
                received_us: 0,
            },
            file: file.to_owned(),
            location: None,
            retry_after: None,
            response: None,
        }),
    }
}

/// The page of a `Stored` report, to change; panics on any other report (a test's
/// own mistake).
pub fn page_mut(report: &mut FetchReport) -> &mut StoredPage {
    match &mut report.result {
        FetchResult::Stored(page) => page,
        other => panic!("not a Stored report: {other:?}"),
    }
}
