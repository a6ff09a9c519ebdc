//! Routing: which reply a request gets. Pure (no I/O), so every rule is testable.
//!
//! Rules, in order:
//! 1. No `Host` header: 400. A `Host` websim does not serve, or a host that lives on
//!    another address than the one the request came to: **421** Misdirected Request.
//! 2. Plain http to an https host: **301** to the same path on `https://` (every
//!    path, `/robots.txt` included). https to a host that is not https: 421.
//! 3. Methods other than GET and HEAD: 405.
//! 4. The misbehaving host: see [`super::misbehave`]. A stuck host of
//!    `--stuck-hosts`: see [`super::stuck`].
//! 5. `/robots.txt`: the host's variant ([`super::robots`]); `/robots-real.txt` on
//!    the redirect variant serves the rules (404 elsewhere).
//! 6. A trap host (`--traps`): see [`super::traps`].
//! 7. `/r/{origin}/{key}/{step}`: hop `step` of a redirect chain, when this host is
//!    that hop's host: 301 or 302 to the next hop or the chain's end (an absolute
//!    URL, or a path when the next hop is on the same host and a hash says so).
//! 8. `/loop/a` -> 302 `Location: /loop/b`; `/loop/b` -> 302 to the absolute URL of
//!    `/loop/a` (loop hosts only).
//! 9. `/trap/...`: 200, a small page linking three deeper trap URLs (an endless trap
//!    for crawlers that follow what they must not). `/hidden/h{k}.html`: 200, small.
//!    `/static/site.css` and `/static/img{1-16}.png`: 200 CSS / a 1x1 PNG.
//! 10. A page path in its exact canonical spelling: 200 with the page.
//! 11. Anything else: 404 with a small HTML page without links.
//!
//! Encoding (chunked, gzip) and slowness are applied by [`super::http`] per host.

use super::links::CHAIN_KEYS;
use super::misbehave;
use super::model::{Target, Web, write_port};
use super::paths;
pub use super::reply::{Body, Reply, not_found, reason, throttled};
use super::reply::{HTML, fixed};
use super::rng::{TAG_REDIRECT, hash};
use super::robots::{REAL_ROBOTS_PATH, RobotsResponse, RobotsVariant};
use super::sitemaps;
use super::traps;

/// Which listener a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// The http port.
    Http,
    /// The https port.
    Https,
}

impl Scheme {
    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The parts of a request routing looks at.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Request method.
    pub method: &'a str,
    /// Request target (path and query, as sent).
    pub target: &'a str,
    /// `Host` header, if any.
    pub host: Option<&'a str>,
    /// Listener scheme.
    pub scheme: Scheme,
    /// Index of the listener's address in `Web::addrs`.
    pub addr_index: u32,
}

const TEXT: &str = "text/plain; charset=utf-8";

/// A 1x1 transparent PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];
const CSS: &[u8] = b"body{font-family:Georgia,serif;color:#222}\na{color:#0645ad}\n";

fn redirect(status: u16, location: String) -> Reply {
    let body = Body::Owned(format!(
        "<html><body>Moved to {}</body></html>\n",
        location.replace('&', "&amp;").replace('<', "&lt;")
    ));
    Reply::Fixed {
        status,
        content_type: HTML,
        location: Some(location),
        body,
    }
}

/// The host a `Host` header names (lower-cased, port and trailing dot removed).
pub fn host_name(header: &str) -> String {
    let h = header.trim();
    let h = match h.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => h,
    };
    h.trim_end_matches('.').to_ascii_lowercase()
}

/// Routes a request; returns the host it was for (if websim serves it there) and
/// the reply.
pub fn route(web: &Web, req: &Request<'_>) -> (Option<u32>, Reply) {
    let Some(header) = req.host else {
        return (
            None,
            fixed(400, TEXT, Body::Static(b"missing Host header\n")),
        );
    };
    let misdirected = || {
        fixed(
            421,
            TEXT,
            Body::Static(b"websim does not serve this host here\n"),
        )
    };
    let Some(h) = web.host_by_name(&host_name(header)) else {
        return (None, misdirected());
    };
    let host = &web.hosts[h as usize];
    if host.addr_index != req.addr_index {
        return (None, misdirected());
    }
    match (req.scheme, host.https) {
        (Scheme::Http, true) => {
            let mut url = format!("https://{}", host.name);
            write_port(&mut url, "https", web.params.https_port);
            url.push_str(req.target);
            return (Some(h), redirect(301, url));
        }
        (Scheme::Https, false) => return (Some(h), misdirected()),
        _ => {}
    }
    if req.method != "GET" && req.method != "HEAD" {
        return (
            Some(h),
            fixed(405, TEXT, Body::Static(b"GET and HEAD only\n")),
        );
    }
    if host.misbehave {
        return (Some(h), Reply::Misbehave(misbehave::route(req.target)));
    }
    if let Some(kind) = host.stuck {
        return (Some(h), kind.route(req.target));
    }
    (Some(h), route_path(web, h, req.target))
}

fn route_path(web: &Web, h: u32, path: &str) -> Reply {
    let host = &web.hosts[h as usize];
    if host.sitemaps {
        return sitemaps::route(web, h, path);
    }
    if path == "/robots.txt" {
        return match host.robots.response() {
            RobotsResponse::Status(404) => not_found(),
            RobotsResponse::Status(s) => fixed(
                s,
                HTML,
                Body::Static(b"<html><body>robots.txt unavailable</body></html>\n"),
            ),
            RobotsResponse::Body(text) => fixed(200, TEXT, Body::Static(text.as_bytes())),
            RobotsResponse::Redirect(to) => redirect(301, web.host_url(h, to)),
        };
    }
    if path == REAL_ROBOTS_PATH && host.robots == RobotsVariant::Redirect {
        return fixed(200, TEXT, Body::Static(host.robots.rules_text().as_bytes()));
    }
    if let Some(kind) = host.trap {
        return traps::route(h, kind, path);
    }
    if let Some(rest) = path.strip_prefix("/r/") {
        return redirect_hop(web, h, rest).unwrap_or_else(not_found);
    }
    if host.loops && (path == "/loop/a" || path == "/loop/b") {
        return if path == "/loop/a" {
            redirect(302, "/loop/b".to_owned())
        } else {
            redirect(302, web.host_url(h, "/loop/a"))
        };
    }
    if let Some(rest) = path.strip_prefix("/trap/") {
        return trap_page(path, rest);
    }
    if let Some(k) = path
        .strip_prefix("/hidden/h")
        .and_then(|r| r.strip_suffix(".html"))
    {
        if k.parse::<u32>().is_ok_and(|k| k < host.pages) {
            return fixed(200, HTML, Body::Static(b"<!DOCTYPE html>\n<html><head><title>hidden</title></head><body><p>Only linked from a nofollow page.</p></body></html>\n"));
        }
    }
    if path == "/static/site.css" {
        return fixed(200, "text/css", Body::Static(CSS));
    }
    if let Some(k) = path
        .strip_prefix("/static/img")
        .and_then(|r| r.strip_suffix(".png"))
    {
        if k.parse::<u32>().is_ok_and(|k| (1..=16).contains(&k)) && !k.starts_with('0') {
            return fixed(200, "image/png", Body::Static(PNG));
        }
    }
    if let Some(page) = paths::parse_page_index(path) {
        if page < host.pages {
            let mut canon = String::with_capacity(path.len());
            paths::write_path(&mut canon, web.shape(h, page), page, true);
            if canon == path {
                return Reply::Page { host: h, page };
            }
        }
    }
    not_found()
}

fn redirect_hop(web: &Web, h: u32, rest: &str) -> Option<Reply> {
    let mut parts = rest.split('/');
    let origin: u32 = parts.next()?.parse().ok()?;
    let key: u32 = parts.next()?.parse().ok()?;
    let step: u8 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || origin >= web.generated() || key >= CHAIN_KEYS {
        return None;
    }
    let here = Target::Redirect { origin, key, step };
    let mut canon = String::new();
    web.write_path(&mut canon, &here, true);
    if canon != format!("/r/{rest}") || !web.reachable(origin) {
        return None;
    }
    let chain = web.chain(origin, key);
    if step >= chain.len || chain.hops[step as usize] != h {
        return None;
    }
    let next = if step + 1 < chain.len {
        Target::Redirect {
            origin,
            key,
            step: step + 1,
        }
    } else {
        chain.end
    };
    let relative = web.target_host(&next) == Some(h)
        && hash(&[
            web.params.seed,
            TAG_REDIRECT,
            u64::from(origin),
            u64::from(key),
            u64::from(step),
        ]) % 3
            == 0;
    let location = if relative {
        let mut p = String::new();
        web.write_path(&mut p, &next, true);
        p
    } else {
        web.url(&next)
    };
    Some(redirect(chain.codes[step as usize], location))
}

fn trap_page(path: &str, rest: &str) -> Reply {
    let depth = rest.matches('/').count();
    let mut body = String::from(
        "<!DOCTYPE html>\n<html><head><title>trap</title></head><body>\n<p>You should not be here.</p>\n",
    );
    if depth < 50 {
        let dir = path.strip_suffix(".html").unwrap_or(path);
        for k in 0..3 {
            body.push_str(&format!("<a href=\"{dir}/n{k}.html\">deeper {k}</a>\n"));
        }
    }
    body.push_str("</body></html>\n");
    fixed(200, HTML, Body::Owned(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Params;

    fn web() -> Web {
        Web::new(Params::new(2, 40, 800))
    }

    fn get<'a>(web: &Web, h: u32, scheme: Scheme, target: &'a str, name: &'a str) -> Request<'a> {
        Request {
            method: "GET",
            target,
            host: Some(name),
            scheme,
            addr_index: web.hosts[h as usize].addr_index,
        }
    }

    fn scheme_of(web: &Web, h: u32) -> Scheme {
        if web.hosts[h as usize].https {
            Scheme::Https
        } else {
            Scheme::Http
        }
    }

    #[test]
    fn every_page_routes_to_itself() {
        let w = web();
        for h in 0..w.generated() {
            let name = w.hosts[h as usize].name.clone();
            for page in 0..w.hosts[h as usize].pages {
                let mut path = String::new();
                w.write_path(&mut path, &Target::Page { host: h, page }, true);
                let req = get(&w, h, scheme_of(&w, h), &path, &name);
                assert_eq!(
                    route(&w, &req),
                    (Some(h), Reply::Page { host: h, page }),
                    "{path}"
                );
            }
        }
    }

    #[test]
    fn host_scheme_and_address_rules() {
        let w = web();
        let h = (0..40).find(|&h| w.hosts[h as usize].https).unwrap();
        let name = w.hosts[h as usize].name.clone();
        let (_, r) = route(&w, &get(&w, h, Scheme::Http, "/robots.txt", &name));
        let Reply::Fixed {
            status: 301,
            location: Some(loc),
            ..
        } = r
        else {
            panic!("{r:?}")
        };
        assert_eq!(loc, format!("https://{name}:8443/robots.txt"));
        let mut req = get(&w, h, Scheme::Https, "/", "nonexistent.test");
        assert!(matches!(
            route(&w, &req).1,
            Reply::Fixed { status: 421, .. }
        ));
        req.host = None;
        assert!(matches!(
            route(&w, &req).1,
            Reply::Fixed { status: 400, .. }
        ));
        let upper = name.to_ascii_uppercase() + ":8443";
        req.host = Some(&upper);
        assert_eq!(route(&w, &req).1, Reply::Page { host: h, page: 0 });
        req.addr_index += 1;
        assert!(matches!(
            route(&w, &req).1,
            Reply::Fixed { status: 421, .. }
        ));
    }

    #[test]
    fn redirect_chains_lead_to_their_end() {
        let w = web();
        let o = (0..40).find(|&h| w.reachable(h)).unwrap();
        for key in 0..CHAIN_KEYS {
            let chain = w.chain(o, key);
            let mut t = Target::Redirect {
                origin: o,
                key,
                step: 0,
            };
            for step in 0..chain.len {
                let hop = chain.hops[step as usize];
                let mut path = String::new();
                w.write_path(&mut path, &t, true);
                let name = w.hosts[hop as usize].name.clone();
                let (_, r) = route(&w, &get(&w, hop, scheme_of(&w, hop), &path, &name));
                let Reply::Fixed {
                    status,
                    location: Some(loc),
                    ..
                } = r
                else {
                    panic!("{r:?}")
                };
                assert_eq!(status, chain.codes[step as usize]);
                t = if step + 1 < chain.len {
                    Target::Redirect {
                        origin: o,
                        key,
                        step: step + 1,
                    }
                } else {
                    chain.end
                };
                let url = w.url(&t);
                assert!(url == loc || url.ends_with(&loc), "{loc} vs {url}");
                // The hop is not served on another host.
                let other = (hop + 1) % 40;
                let oname = w.hosts[other as usize].name.clone();
                let (_, r) = route(&w, &get(&w, other, scheme_of(&w, other), &path, &oname));
                assert!(
                    matches!(r, Reply::Fixed { status: 404, .. }) || chain.hops.contains(&other)
                );
            }
        }
    }

    #[test]
    fn misspelled_paths_are_404() {
        let w = web();
        let h = (0..40).find(|&h| w.hosts[h as usize].pages > 20).unwrap();
        let name = w.hosts[h as usize].name.clone();
        let s = scheme_of(&w, h);
        for p in [
            "/index.html",
            "/d0/p999999.html",
            "/item?cat=1&id=1",
            "/r/x",
            "/loop/c",
        ] {
            assert_eq!(route(&w, &get(&w, h, s, p, &name)).1, not_found(), "{p}");
        }
    }
}
