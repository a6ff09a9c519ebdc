//! The crawl's request output: URLs written as request files (`requests/<app>/`),
//! each published by rename and announced to the manager. [`RequestOutput::publish`]
//! is the one place a request file is written; the crash test hook counts the files
//! of merges here too. It must never decide which URLs go (the crawl loop does) nor
//! hold URLs between calls: a file is durable when `publish` returns.

use spool::formats::{Hints, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{Message, SpoolArea};
use spool::publish::Publisher;
use spool::{AppId, Validators};
use storage::Repository;
use tokio::sync::mpsc;
use tracing::warn;

use crate::CrashHook;
use crate::error::AppError;
use crate::pause::DiskWait;
use crate::reach::Reach;

/// Writes and publishes request files.
#[derive(Debug)]
pub struct RequestOutput {
    requests: Publisher,
    app: AppId,
    priority: Priority,
    /// URLs per request file, at most.
    per_file: usize,
    /// Requests carry the validators of the newest capture (`conditional_requests`).
    conditional: bool,
    /// Where `Published` goes (the manager connection).
    outbound: mpsc::UnboundedSender<Message>,
    /// Merge request files published in this run (for the crash hook).
    files_this_run: u64,
    hook: CrashHook,
}

impl RequestOutput {
    /// Request files published by `requests` for `app`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        requests: Publisher,
        app: AppId,
        priority: Priority,
        per_file: usize,
        conditional: bool,
        outbound: mpsc::UnboundedSender<Message>,
        hook: CrashHook,
    ) -> Self {
        Self {
            requests,
            app,
            priority,
            per_file: per_file.max(1),
            conditional,
            outbound,
            files_this_run: 0,
            hook,
        }
    }

    /// The priority of this application's files.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// URLs per request file, at most.
    pub fn per_file(&self) -> usize {
        self.per_file
    }

    /// Publishes `urls` as one request file (none when empty) and tells the
    /// manager; returns how many URLs it holds. A URL the format refuses is
    /// left out (logged). Waits out a full disk.
    pub fn publish<U: AsRef<str>>(
        &mut self,
        urls: &[(U, Reach)],
        repo: &Repository,
        wait: &DiskWait,
    ) -> Result<u64, AppError> {
        let header = RequestHeader {
            priority: self.priority,
        };
        let mut w = RequestWriter::new(Vec::new(), header).map_err(format_error)?;
        let mut n = 0;
        for (url, reach) in urls {
            let url = url.as_ref();
            let hints = Hints {
                depth: Some(reach.depth),
                hops: (reach.hops > 0).then_some(reach.hops),
                validators: self.validators(repo, url),
                ..Hints::default()
            };
            match w.write(url, &hints) {
                Ok(()) => n += 1,
                Err(error) => warn!(%url, %error, "app: URL left out of a request file"),
            }
        }
        let data = w.finish().map_err(format_error)?;
        if n == 0 {
            return Ok(0);
        }
        let priority = self.priority;
        let path = wait.run(&mut self.requests, |requests| {
            Ok(requests.publish(priority, FileKind::Requests, &data)?)
        })?;
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            // A closed channel means the service is ending; the file is durable.
            let _ = self.outbound.send(Message::Published {
                area: SpoolArea::Requests(self.app.clone()),
                name: name.to_owned(),
            });
        }
        Ok(n)
    }

    /// Publishes `urls` in files of at most [`per_file`](Self::per_file); returns
    /// the URLs written.
    pub fn publish_all<U: AsRef<str>>(
        &mut self,
        urls: &[(U, Reach)],
        repo: &Repository,
        wait: &DiskWait,
    ) -> Result<u64, AppError> {
        let mut written = 0;
        for chunk in urls.chunks(self.per_file) {
            written += self.publish(chunk, repo, wait)?;
        }
        Ok(written)
    }

    /// Counts one request file of a merge; true when the crash hook says to stop
    /// dead now.
    pub fn merge_file_done(&mut self) -> bool {
        self.files_this_run += 1;
        self.hook
            .after_request_files
            .is_some_and(|max| self.files_this_run >= max)
    }

    /// With `conditional_requests`, the validators of `url`'s newest capture (see
    /// [`validators_of`]); else none.
    fn validators(&self, repo: &Repository, url: &str) -> Validators {
        if self.conditional {
            validators_of(repo, url)
        } else {
            Validators::default()
        }
    }
}

/// The validators of `url`'s newest capture in `repo` if it is a 200 of exactly
/// that URL (a server-not-modified revisit counts as its original); none else, or
/// when the lookup fails (logged: the request is then unconditional, never lost).
fn validators_of(repo: &Repository, url: &str) -> Validators {
    let page = match repo.get(url) {
        Ok(Some(page)) => page,
        Ok(None) => return Validators::default(),
        Err(error) => {
            warn!(%url, %error, "app: no validators from the repository");
            return Validators::default();
        }
    };
    if page.url != url {
        return Validators::default();
    }
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut head = httparse::Response::new(&mut fields);
    if !matches!(head.parse(&page.head), Ok(httparse::Status::Complete(_)))
        || head.code != Some(200)
    {
        return Validators::default();
    }
    let value = |name: &str| {
        head.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    };
    Validators::from_headers(value("etag"), value("last-modified"))
}

/// A request-file format error as the application's error.
pub fn format_error(e: spool::formats::FormatError) -> AppError {
    AppError::File {
        path: std::path::PathBuf::from("<request file>"),
        source: std::io::Error::other(e.to_string()),
    }
}
