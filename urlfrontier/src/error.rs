//! The frontier's errors: what stops the service, with the context to act on.

use std::path::PathBuf;

/// Why the URL Frontier service cannot start or must stop.
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    /// A setting is invalid.
    #[error("invalid setting {field}: {reason}")]
    Config {
        /// The field, as in the config file (`frontier.listen`).
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The gRPC address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The gRPC server failed.
    #[error("the gRPC server failed: {0}")]
    Serve(#[from] tonic::transport::Error),
    /// The seen set failed.
    #[error("the seen set failed: {0}")]
    Seen(#[from] seen::SeenError),
    /// A spool folder or file failed.
    #[error("spool: {0}")]
    Spool(#[from] spool::SpoolError),
    /// A request file could not be written.
    #[error("request file: {0}")]
    Format(#[from] spool::formats::FormatError),
    /// The state folder cannot be made.
    #[error("cannot create the state folder {path}: {source}")]
    StateDir {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The robots.txt fetcher cannot be built from the downloader's settings.
    #[error("the robots.txt fetcher: {0}")]
    Fetcher(String),
    /// A thread cannot be started.
    #[error("cannot start the intake thread: {source}")]
    Thread {
        /// The cause.
        source: std::io::Error,
    },
    /// The manager refused us (token, protocol version) or replaced us.
    #[error("the manager ended the session: {0}")]
    Manager(String),
}
