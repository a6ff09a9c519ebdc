//! The handshake that opens every control connection (sequence in the module docs):
//! the client sends preamble + `Hello`; the server checks magic, version and token,
//! in that order, and answers with its preamble and either accept + `Welcome` or a
//! refusal. Both sides are bounded by the handshake timeout.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::timeout;

use super::connection::{ConnReader, ConnWriter, split_boxed};
use super::frame::encode_frame;
use super::preamble::{ACCEPTED, encode_refusal, preamble, read_preamble, read_status};
use super::{
    Connection, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAME, HANDSHAKE_MAX_FRAME, Hello, Message,
    PROTOCOL_VERSION, ProtocolError, Role, Token, Welcome,
};
use crate::ids::ComponentId;

/// Size and time limits of one side of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame body accepted and sent, in bytes (config
    /// `control.max_frame_bytes`). Before the handshake completes the limit is
    /// `min(max_frame, HANDSHAKE_MAX_FRAME)`.
    pub max_frame: u32,
    /// Time allowed for the whole handshake.
    pub handshake_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame: DEFAULT_MAX_FRAME,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}

/// What the server checks and what it tells accepted clients.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The server's role (named in version-mismatch messages; normally `Manager`).
    pub role: Role,
    /// The server's id, sent in the `Welcome`.
    pub id: ComponentId,
    /// The shared secret every client must present.
    pub token: Token,
    /// If set, [`Role::Admin`] clients must present this token instead.
    pub admin_token: Option<Token>,
    /// Frame and handshake limits.
    pub limits: Limits,
    /// Heartbeat period assigned to clients, in milliseconds.
    pub heartbeat_interval_ms: u64,
    /// Silence after which a peer is dropped, in milliseconds.
    pub heartbeat_timeout_ms: u64,
}

impl ServerConfig {
    /// A config with default limits and heartbeats (2 s period, 10 s timeout).
    pub fn new(role: Role, id: ComponentId, token: Token) -> Self {
        Self {
            role,
            id,
            token,
            admin_token: None,
            limits: Limits::default(),
            heartbeat_interval_ms: 2_000,
            heartbeat_timeout_ms: 10_000,
        }
    }
}

/// Opens a connection as a client: sends the preamble and `hello`, and waits for
/// the server's answer.
///
/// The preamble announces `hello.version` (normally [`PROTOCOL_VERSION`]). A refusal
/// comes back as [`ProtocolError::Refused`] carrying the server's reason.
pub async fn client_handshake<S>(
    stream: S,
    hello: Hello,
    limits: Limits,
) -> Result<(Connection, Welcome), ProtocolError>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (rd, wr) = split_boxed(stream);
    let writer = ConnWriter::new(wr, limits.max_frame);
    let mut reader = ConnReader::new(rd, writer.clone(), handshake_limits(limits));
    let (role, version) = (hello.role, hello.version);
    let mut opening = preamble(version).to_vec();
    let hello = Message::Hello(hello);
    opening.extend(encode_frame(&hello, handshake_limits(limits).max_frame)?);

    let exchange = async {
        writer.write_raw(&opening).await?;
        let theirs = read_preamble(reader.raw()).await?;
        read_status(reader.raw()).await?;
        let welcome = match Message::from_bytes(&reader.next_frame().await?)? {
            Message::Welcome(w) => w,
            other => return Err(unexpected("Welcome", &other)),
        };
        for peer in [theirs, welcome.version] {
            if peer != version {
                return Err(ProtocolError::VersionMismatch {
                    peer,
                    ours: version,
                    role,
                });
            }
        }
        Ok(welcome)
    };
    let welcome = timeout(limits.handshake_timeout, exchange)
        .await
        .unwrap_or(Err(ProtocolError::HandshakeTimeout(
            limits.handshake_timeout,
        )))?;
    reader.set_max_frame(limits.max_frame);
    Ok((Connection::from_parts(reader, writer), welcome))
}

/// Accepts a connection as the server: checks the client's magic, version and
/// token (in that order), then answers with accept + `Welcome`.
///
/// On failure the client is sent a refusal carrying this error's message, the
/// connection is closed, and the error is returned for the caller to log.
pub async fn server_handshake<S>(
    stream: S,
    config: &ServerConfig,
) -> Result<(Connection, Hello), ProtocolError>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let limits = config.limits;
    let (rd, wr) = split_boxed(stream);
    let writer = ConnWriter::new(wr, limits.max_frame);
    let mut reader = ConnReader::new(rd, writer.clone(), handshake_limits(limits));

    let checked = timeout(limits.handshake_timeout, read_hello(&mut reader, config))
        .await
        .unwrap_or(Err(ProtocolError::HandshakeTimeout(
            limits.handshake_timeout,
        )));
    let hello = match checked {
        Ok(hello) => hello,
        Err(e) => {
            if let Some(code) = e.refusal_code() {
                let mut refusal = preamble(PROTOCOL_VERSION).to_vec();
                refusal.extend(encode_refusal(code, &e.to_string()));
                if let Err(io) = writer.finish(&refusal).await {
                    tracing::debug!(error = %io, "could not send a handshake refusal");
                }
                reader.linger().await;
            }
            return Err(e);
        }
    };

    let welcome = Message::Welcome(Welcome {
        role: config.role,
        id: config.id.clone(),
        version: PROTOCOL_VERSION,
        heartbeat_interval_ms: config.heartbeat_interval_ms,
        heartbeat_timeout_ms: config.heartbeat_timeout_ms,
    });
    let mut answer = preamble(PROTOCOL_VERSION).to_vec();
    answer.push(ACCEPTED);
    answer.extend(encode_frame(&welcome, limits.max_frame)?);
    timeout(limits.handshake_timeout, writer.write_raw(&answer))
        .await
        .unwrap_or(Err(ProtocolError::HandshakeTimeout(
            limits.handshake_timeout,
        )))?;
    reader.set_max_frame(limits.max_frame);
    Ok((Connection::from_parts(reader, writer), hello))
}

/// The server's checks, in order: magic, version, a well-formed `Hello`, token.
async fn read_hello(
    reader: &mut ConnReader,
    config: &ServerConfig,
) -> Result<Hello, ProtocolError> {
    let mismatch = |peer| ProtocolError::VersionMismatch {
        peer,
        ours: PROTOCOL_VERSION,
        role: config.role,
    };
    let version = read_preamble(reader.raw()).await?;
    if version != PROTOCOL_VERSION {
        return Err(mismatch(version));
    }
    let hello = match Message::from_bytes(&reader.next_frame().await?)? {
        Message::Hello(h) => h,
        other => return Err(unexpected("Hello", &other)),
    };
    if hello.version != version {
        return Err(mismatch(hello.version));
    }
    let expected = match (hello.role, &config.admin_token) {
        (Role::Admin, Some(admin)) => admin,
        _ => &config.token,
    };
    if !expected.matches(&hello.token) {
        return Err(ProtocolError::BadToken {
            role: hello.role,
            id: hello.id,
        });
    }
    Ok(hello)
}

/// The limits in force until the handshake is complete.
fn handshake_limits(limits: Limits) -> Limits {
    Limits {
        max_frame: limits.max_frame.min(HANDSHAKE_MAX_FRAME),
        ..limits
    }
}

fn unexpected(expected: &'static str, got: &Message) -> ProtocolError {
    ProtocolError::Unexpected {
        expected,
        got: got.kind(),
    }
}
