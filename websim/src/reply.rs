//! [`Reply`]: what websim answers a request, before the server writes it (a
//! generated page, a small fixed response, a misbehaving-host path), and the
//! small replies every router shares (404, throttled, reason phrases).
//!
//! This module must never route: which reply a request gets is
//! [`super::respond`]'s (and the trap hosts', sitemaps', disk web's) to decide.

use super::misbehave::Misbehavior;

/// `Content-Type` of websim's HTML replies.
pub(crate) const HTML: &str = "text/html; charset=utf-8";

/// What to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A generated page (rendered by the caller into its buffer).
    Page {
        /// Host index.
        host: u32,
        /// Page number.
        page: u32,
    },
    /// A small fixed response.
    Fixed {
        /// Status code.
        status: u16,
        /// `Content-Type`.
        content_type: &'static str,
        /// `Location`, for redirects.
        location: Option<String>,
        /// Body.
        body: Body,
    },
    /// A misbehaving-host path (the connection closes after it).
    Misbehave(Misbehavior),
}

/// Body of a fixed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Static bytes.
    Static(&'static [u8]),
    /// Built for this request.
    Owned(String),
    /// Built for this request, not text (a gzip sitemap).
    Bytes(Vec<u8>),
}

impl Body {
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Body::Static(b) => b,
            Body::Owned(s) => s.as_bytes(),
            Body::Bytes(b) => b,
        }
    }
}

/// A fixed reply without `Location`.
pub(crate) fn fixed(status: u16, content_type: &'static str, body: Body) -> Reply {
    Reply::Fixed {
        status,
        content_type,
        location: None,
        body,
    }
}

/// The 404 reply.
pub fn not_found() -> Reply {
    fixed(
        404,
        HTML,
        Body::Static(
            b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\
<body><h1>Not Found</h1><p>websim has no such page.</p></body></html>\n",
        ),
    )
}

/// The reply of a throttling host ([`super::throttle`]) instead of a page: 429 or
/// 503 with a small HTML body (the caller adds `Retry-After`).
pub fn throttled(status: u16) -> Reply {
    fixed(
        status,
        HTML,
        Body::Static(b"<html><body>Please slow down and come back later.</body></html>\n"),
    )
}

/// Status line reason phrase.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        421 => "Misdirected Request",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}
