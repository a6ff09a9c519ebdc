//! What applications hear over the control port: publication hints and progress.
//! Bulk data (requests, pages, outcomes) always travels as spool files.

use serde::{Deserialize, Serialize};

use crate::ids::AppId;

/// A spool directory a file can be published in (see the crate's layout rules).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SpoolArea {
    /// `requests/<app>/`: request files, application -> manager.
    Requests(AppId),
    /// `pages/<app>/`: page batches, downloader -> application.
    Pages(AppId),
    /// `outcomes/<app>/`: URLs that produced no page, manager -> application.
    Outcomes(AppId),
    /// `robots/`: robots.txt fetches, downloader -> manager.
    Robots,
    /// `exchange/<app>/`: inter-partition URL batches, application part -> part.
    Exchange(AppId),
}

/// Where one application's URLs are, as the manager sees it.
///
/// The app's crawl is finished when every count that can still move is zero and
/// every page and outcome file it was told about has been read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppProgress {
    /// The application reported on.
    pub app: AppId,
    /// Request files published but not yet loaded.
    pub request_files_pending: u64,
    /// URLs loaded and waiting in host queues.
    pub queued_urls: u64,
    /// URLs assigned to a downloader and not yet reported.
    pub in_flight: u64,
    /// Pages stored so far (since the manager's state was created).
    pub pages_total: u64,
    /// Outcomes written so far.
    pub outcomes_total: u64,
    /// Outcomes recorded but not yet published in an outcome file.
    pub outcomes_pending: u64,
    /// The highest `seq` of a [`Message::SyncProgress`](super::Message::SyncProgress)
    /// this connection sent for this app that the manager had handled when it
    /// wrote this report (0: none). A report with `synced >= n` reflects every
    /// request file the application published before sending sync `n`.
    pub synced: u64,
}

impl AppProgress {
    /// An empty report for `app`.
    pub fn new(app: AppId) -> Self {
        Self {
            app,
            request_files_pending: 0,
            queued_urls: 0,
            in_flight: 0,
            pages_total: 0,
            outcomes_total: 0,
            outcomes_pending: 0,
            synced: 0,
        }
    }

    /// No URL of the app is pending anywhere in the crawling system, and every
    /// outcome is published.
    pub fn is_idle(&self) -> bool {
        self.request_files_pending == 0
            && self.queued_urls == 0
            && self.in_flight == 0
            && self.outcomes_pending == 0
    }
}
