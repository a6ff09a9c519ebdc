//! The per-page step of the application: extract, then canonicalize. The app service
//! and `polycrawl links` both call [`canonical_links`], so an operator sees exactly
//! what a crawl would follow; [`batch`] reads the links of a stored page batch (the
//! crawl loop, `polycrawl assign`, the seed-by-seed crawl).
//!
//! A library: it takes what it needs ([`LinkRules`]), never the service's config
//! or state.

#[cfg(feature = "batches")]
pub mod batch;
pub mod template;

use url::Url;

#[cfg(feature = "batches")]
pub use self::batch::{BatchReader, PageLinksOf, RobotsSwitches};
use crate::canon::{self, CanonConfig};
use crate::extract::{Extractor, PageLinks};

/// What reading a page's links takes from an application's configuration: its
/// canonicalization and its body cap.
#[derive(Clone, Debug, Default)]
pub struct LinkRules {
    /// How links are canonicalized.
    pub canon: CanonConfig,
    /// Only the first this many bytes of a page are read.
    pub max_body_bytes: usize,
}

/// Extracts the links of `html` into `out` and canonicalizes them in place; links
/// that canonicalization rejects are removed. Returns how many were removed.
pub fn canonical_links(
    extractor: &mut Extractor,
    html: &[u8],
    page_url: &Url,
    content_type: Option<&str>,
    config: &CanonConfig,
    out: &mut PageLinks,
) -> usize {
    extractor.extract(html, page_url, content_type, out);
    let before = out.links.len();
    out.links
        .retain_mut(|link| canon::canonicalize_in_place(&mut link.url, config).is_ok());
    before - out.links.len()
}

/// `polycrawl links --base URL FILE`: the canonical absolute links the application
/// would follow from `html` fetched at `base` with the HTTP `Content-Type`
/// `content_type`, under an app's `rules` (an `&AppConfig` gives its own: its
/// canonicalization, and its body cap: only the first `max_body_bytes` are read),
/// in document order, repeats kept. Empty when the page says
/// `<meta name=robots content=nofollow>`.
pub fn links_for_file(
    html: &[u8],
    base: &Url,
    content_type: Option<&str>,
    rules: impl Into<LinkRules>,
) -> Vec<String> {
    let rules = rules.into();
    let html = &html[..html.len().min(rules.max_body_bytes)];
    let mut out = PageLinks::new();
    canonical_links(
        &mut Extractor::new(),
        html,
        base,
        content_type,
        &rules.canon,
        &mut out,
    );
    out.links.into_iter().map(|link| link.url.into()).collect()
}
