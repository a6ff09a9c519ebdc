//! The one message enum spoken on the control port, and the session messages
//! (`Hello`, `Welcome`, heartbeats, drain, `Bye`) every role uses.
//!
//! The variant order is the wire order (postcard writes the variant index): never
//! reorder, remove or insert variants without bumping
//! [`PROTOCOL_VERSION`].

use std::fmt;

use serde::{Deserialize, Serialize};

use super::admin::{AdminCommand, AdminReply};
use super::app::{AppProgress, SpoolArea};
use super::fetch::{FetchJob, FetchReport, JobId};
use super::resolve::{HostAnswer, RequestId};
use super::state::ComponentState;
use super::token::Token;
use super::{PROTOCOL_VERSION, ProtocolError};
use crate::ids::{AppId, ComponentId};

/// Every message of the control protocol, in wire order.
///
/// Directions are given as `sender -> receiver`; "manager" is the control server and
/// everything else connects to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    /// client -> manager, first frame of every connection: who is calling.
    Hello(Hello),
    /// manager -> client, first frame after the accept status byte.
    Welcome(Welcome),
    /// Both ways, every `heartbeat_interval_ms`: "still alive", with load figures.
    Heartbeat {
        /// The sender's load right now.
        load: Load,
    },
    /// manager -> downloader/resolver: stop taking work, finish or hand back
    /// everything in flight within `grace_ms`, publish open spool files, then send
    /// `Bye { reason: Drained }`, close and (as a process of its own) exit.
    Drain {
        /// How long the component may take before it must hand back what is left.
        grace_ms: u64,
    },
    /// Either side, last frame: the sender closes the connection and says why.
    ///
    /// [`ConnReader::recv`](super::ConnReader::recv) turns a received
    /// `ByeReason::ProtocolViolation` into [`ProtocolError::PeerRejected`]; every
    /// other `Bye` is returned as a message.
    Bye {
        /// Why the sender is closing.
        reason: ByeReason,
        /// Human-readable detail for the log ("frame of 9000 bytes exceeds ...").
        detail: String,
    },
    /// manager -> downloader (connections) or resolver (concurrent queries): the new
    /// upper bound on concurrent work, applied at once.
    SetConcurrency {
        /// Maximum number of jobs in flight.
        limit: u32,
    },
    /// manager -> downloader: fetch these URLs (addresses already resolved, robots
    /// and politeness already checked).
    FetchBatch {
        /// The jobs, in the order the manager wants them started.
        jobs: Vec<FetchJob>,
    },
    /// downloader -> manager: how some jobs ended. Every job gets exactly one report.
    FetchReports {
        /// One report per finished (or handed back) job.
        reports: Vec<FetchReport>,
    },
    /// manager -> resolver: resolve these host names.
    ResolveBatch {
        /// Echoed in the answer.
        request: RequestId,
        /// Lower-case ASCII (punycode) host names, without port or trailing dot.
        hosts: Vec<String>,
    },
    /// resolver -> manager: the answers to one [`Message::ResolveBatch`], one per host,
    /// in any order.
    ResolveAnswers {
        /// The request being answered.
        request: RequestId,
        /// One answer per host of the request.
        answers: Vec<HostAnswer>,
    },
    /// application -> manager: this connection serves `app`; send it the app's
    /// [`Message::Published`] hints and [`Message::AppProgress`].
    Subscribe {
        /// The application served by this connection.
        app: AppId,
    },
    /// Either way: a file was just published in the spool. A wake-up hint only
    /// (consumers still scan their directories); the manager relays hints to the
    /// connections that consume that area.
    Published {
        /// The spool directory the file is in.
        area: SpoolArea,
        /// The file name inside that directory (no path).
        name: String,
    },
    /// manager -> application: where the application's URLs are, sent periodically,
    /// whenever the app's queues run empty, and in answer to
    /// [`Message::SyncProgress`] (how a finite crawl knows it is done).
    AppProgress(AppProgress),
    /// admin -> manager: an operator command (mutations need the admin token).
    Admin(AdminCommand),
    /// manager -> admin: the answer to one [`Message::Admin`].
    AdminReply(AdminReply),
    /// downloader -> manager: the page batch `file` in `pages/<app>/`, holding the
    /// records of `jobs`, is now published. A `Stored` report says a page was
    /// fetched (the manager may contact the host again after its interval); only
    /// this message makes the page durable. Jobs reported but never committed when
    /// a downloader dies are fetched again. It may name jobs of the downloader's
    /// earlier connections (their batch was published after that connection was
    /// lost): a restarted manager takes those from any downloader.
    Committed {
        /// Name of the published batch (no path).
        file: String,
        /// Every job whose records are in that batch.
        jobs: Vec<JobId>,
    },
    /// application -> manager: list `requests/<app>/` again now, then answer with
    /// an [`AppProgress`] whose `synced` is at least `seq`. An application sends it
    /// after publishing (and when it runs out of work) so that the answer counts
    /// every request file it has published.
    SyncProgress {
        /// The application (one this connection subscribed to).
        app: AppId,
        /// Increasing per connection; echoed as `AppProgress::synced`.
        seq: u64,
    },
    /// downloader/application -> manager: the sender's own state (paused or not,
    /// and why), sent when it changes and again after every `Welcome`. Shown on the
    /// admin page.
    Status(Box<ComponentState>),
}

impl Message {
    /// The variant's name, for logs and errors ("FetchBatch").
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Hello(_) => "Hello",
            Self::Welcome(_) => "Welcome",
            Self::Heartbeat { .. } => "Heartbeat",
            Self::Drain { .. } => "Drain",
            Self::Bye { .. } => "Bye",
            Self::SetConcurrency { .. } => "SetConcurrency",
            Self::FetchBatch { .. } => "FetchBatch",
            Self::FetchReports { .. } => "FetchReports",
            Self::ResolveBatch { .. } => "ResolveBatch",
            Self::ResolveAnswers { .. } => "ResolveAnswers",
            Self::Subscribe { .. } => "Subscribe",
            Self::Published { .. } => "Published",
            Self::AppProgress(_) => "AppProgress",
            Self::Admin(_) => "Admin",
            Self::AdminReply(_) => "AdminReply",
            Self::Committed { .. } => "Committed",
            Self::SyncProgress { .. } => "SyncProgress",
            Self::Status(_) => "Status",
        }
    }

    /// Encodes the message body (postcard, no length prefix).
    pub fn to_bytes(&self) -> Result<Vec<u8>, ProtocolError> {
        postcard::to_stdvec(self).map_err(|source| ProtocolError::Encode {
            kind: self.kind(),
            source,
        })
    }

    /// Decodes one message body; the whole of `bytes` must be used.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProtocolError> {
        let size = bytes.len();
        let (msg, rest) = postcard::take_from_bytes(bytes)
            .map_err(|source| ProtocolError::Undecodable { size, source })?;
        if rest.is_empty() {
            Ok(msg)
        } else {
            Err(ProtocolError::TrailingBytes {
                kind: Message::kind(&msg),
                size,
                trailing: rest.len(),
            })
        }
    }
}

/// What a component is; sent in [`Hello`] and [`Welcome`].
///
/// Serde names are the [`as_str`](Self::as_str) names (JSON of the admin API);
/// postcard encodes the variant index, never the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The crawl manager (the control server).
    Manager,
    /// A downloader.
    Downloader,
    /// A DNS resolver.
    Resolver,
    /// A crawling application (or one part of a partitioned one).
    Application,
    /// An operator tool (`polycrawl status`, scripts).
    Admin,
}

impl Role {
    /// The lower-case name used in logs and error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manager => "manager",
            Self::Downloader => "downloader",
            Self::Resolver => "resolver",
            Self::Application => "application",
            Self::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The client's first frame: who is calling, and its credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// What the client is.
    pub role: Role,
    /// Its id, unique among the components of its role; a new connection with the
    /// same role and id replaces the old one.
    pub id: ComponentId,
    /// The protocol version the client speaks; the client also sends it in the
    /// preamble, and the two must agree.
    pub version: u16,
    /// The shared secret from the config (the admin token for [`Role::Admin`] when
    /// one is configured). Never logged: its `Debug` is redacted.
    pub token: Token,
    /// Free-form software name and version ("polycrawl 0.1.0"), for the admin page.
    pub software: String,
}

impl Hello {
    /// A hello for this build: [`PROTOCOL_VERSION`] and this crate's version.
    pub fn new(role: Role, id: ComponentId, token: Token) -> Self {
        Self {
            role,
            id,
            version: PROTOCOL_VERSION,
            token,
            software: concat!("polycrawl ", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// The server's first frame after accepting: who answered, and the settings it
/// assigns to the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// What the server is (normally [`Role::Manager`]).
    pub role: Role,
    /// The server's id.
    pub id: ComponentId,
    /// The protocol version the server speaks (equal to the client's).
    pub version: u16,
    /// Send a [`Message::Heartbeat`] at least this often, in milliseconds.
    pub heartbeat_interval_ms: u64,
    /// Silence after which either side may drop the connection, in milliseconds.
    pub heartbeat_timeout_ms: u64,
}

/// A component's load, carried by every heartbeat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// Jobs in flight now (fetches for a downloader, queries for a resolver).
    pub in_flight: u32,
    /// Current concurrency limit (last [`Message::SetConcurrency`] or the default).
    pub concurrency: u32,
    /// Jobs accepted but not started yet.
    pub queued: u32,
    /// Jobs finished per second over the last heartbeat interval (pages/s for a
    /// downloader, names/s for a resolver).
    pub done_per_sec: f32,
    /// Bytes received per second over the last heartbeat interval.
    pub bytes_per_sec: u64,
}

/// Why a peer closes the connection ([`Message::Bye`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ByeReason {
    /// The sender is shutting down (operator request or signal).
    ShuttingDown,
    /// A [`Message::Drain`] finished: all work was completed or handed back.
    Drained,
    /// A newer connection registered with the same role and id.
    Replaced,
    /// Nothing arrived from the receiver within the heartbeat timeout.
    TimedOut,
    /// The receiver broke the protocol (oversized, undecodable or unexpected frame).
    ProtocolViolation,
}

impl fmt::Display for ByeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ShuttingDown => "shutting down",
            Self::Drained => "drained",
            Self::Replaced => "replaced by a newer connection",
            Self::TimedOut => "timed out",
            Self::ProtocolViolation => "protocol violation",
        })
    }
}
