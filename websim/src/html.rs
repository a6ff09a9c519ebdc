//! Page rendering: one page of HTML, a pure function of (seed, host, page, ports),
//! written into a buffer the caller reuses.
//!
//! The links come from [`super::links`]; this module only decides how they are
//! written ([`super::linkform`]) and which element carries them:
//! - in a frameset page (see `links`), every link is `<frame src>`;
//! - otherwise `<link rel="alternate" href>` in the head 2 %, `<area href>` in a
//!   `<map>` 3 %, `<iframe src>` 3 %, `<a href>` the rest; on 2 % of pages one link
//!   becomes `<meta http-equiv="refresh" content="0; url=ABSOLUTE-URL">`;
//! - 8 % of pages carry `<base href="/d0/">` or `<base href="/d1/">` (as a path or an
//!   absolute URL): relative links are then written relative to it;
//! - `<meta charset>` varies (`utf-8`, `UTF-8` unquoted, the `http-equiv` form, none:
//!   header only); 20 % of pages whose links are all ASCII declare `windows-1252` or
//!   `iso-8859-1` instead (their body is ASCII, so nothing changes meaning);
//! - tags and attribute names are upper-case on 5 % of links; some links carry
//!   `class`/`title` attributes or a newline before the attribute;
//! - unfollowable URLs go where the model says: in a comment, in a JavaScript
//!   string (`"<a href='/trap/..'>"`), in a CSS comment inside `<style>`, inside
//!   `<textarea>`, as `<link rel="stylesheet">` and `<img src>`; frameset pages put
//!   the body ones in head comments. The footer has `javascript:`, `mailto:` and
//!   `data:` links, which name no fetchable URL;
//! - nofollow pages carry `<meta name="robots" content="nofollow">` (or
//!   `noindex, nofollow`, or `NOFOLLOW`).
//!
//! With `--simple` ([`super::model::Params::simple`]): every followable link is an
//! `<a href>` (frameset pages too), no `<base>`, `<meta charset="utf-8">`, no
//! upper-case tags, and the stylesheet, image and textarea URLs are left out (the
//! comment, style and script ones stay: no crawler follows them).
//!
//! Size: the body is filled with paragraphs from [`super::text`] aiming at
//! 5,000 + 25,000·u² bytes (u uniform), mean about 13 KB; the number of paragraphs
//! depends on (seed, host, page) only, so two runs on different ports differ only in
//! the port numbers. Frameset pages are small. Rendering copies precomputed chunks;
//! its only allocations are a few small strings per page. O(page size).

use super::hosts::Host;
use super::linkform::{self, Base, Scratch};
use super::links::{PageLinks, TrapKind};
use super::model::{Target, Web};
use super::paths::Shape;
use super::rng::{Rng, TAG_RENDER};
use super::text::{self, ANCHORS};

/// What the `Content-Type` header must say about the charset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    /// `text/html; charset=utf-8`.
    Utf8,
    /// `text/html` (the page declares a legacy charset itself).
    Legacy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Elem {
    A,
    Area,
    Iframe,
    Alternate,
    Refresh,
    Frame,
}

const UTF8_METAS: [&str; 4] = [
    "<meta charset=\"utf-8\">\n",
    "<meta charset=UTF-8>\n",
    "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\n",
    "",
];
const LEGACY_METAS: [&str; 2] = [
    "<meta charset=\"windows-1252\">\n",
    "<meta http-equiv=\"content-type\" content=\"text/html; charset=ISO-8859-1\">\n",
];
const NOFOLLOW_METAS: [&str; 3] = [
    "<meta name=\"robots\" content=\"nofollow\">\n",
    "<meta name=\"robots\" content=\"noindex, nofollow\">\n",
    "<META NAME=\"ROBOTS\" CONTENT=\"NOFOLLOW\">\n",
];

fn push(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
}

fn push_num(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn non_ascii_target(web: &Web, t: &Target) -> bool {
    match *t {
        Target::Page { host, page } | Target::Upgrade { host, page } => {
            matches!(web.shape(host, page), Shape::NonAscii(_))
        }
        _ => false,
    }
}

/// Renders page `page` of generated host `h` into `out` (cleared first).
pub fn render_page(web: &Web, h: u32, page: u32, out: &mut Vec<u8>, s: &mut Scratch) -> Charset {
    out.clear();
    let links = web.page_links(h, page);
    let seed = web.params.seed;
    let mut r = Rng::for_parts(&[seed, TAG_RENDER, u64::from(h), u64::from(page)]);
    let (scheme, _) = web.scheme_port(h);
    let me = Target::Page { host: h, page };
    let mut self_path = String::with_capacity(32);
    web.write_path(&mut self_path, &me, false);
    let non_ascii = !self_path.is_ascii() || links.follow.iter().any(|t| non_ascii_target(web, t));

    let simple = web.params.simple;
    let roll = r.below(100);
    let (meta_charset, charset) = if simple {
        (UTF8_METAS[0], Charset::Utf8)
    } else if non_ascii || roll < 80 {
        (UTF8_METAS[(roll % 4) as usize], Charset::Utf8)
    } else {
        (LEGACY_METAS[(roll % 2) as usize], Charset::Legacy)
    };
    let base = if r.chance(80) && !simple {
        Some((format!("/d{}/", r.below(2)), r.chance(500)))
    } else {
        None
    };
    let base_dir = match &base {
        Some((dir, _)) => dir.as_str(),
        None => {
            let path_only = self_path.split('?').next().unwrap_or("/");
            &path_only[..path_only.rfind('/').map_or(1, |i| i + 1)]
        }
    };
    let mut elems = [Elem::A; 32];
    let elems = &mut elems[..links.follow.len().min(32)];
    choose_elems(&mut r, &links, elems);
    if simple {
        elems.fill(Elem::A);
    }
    let p = Page {
        ctx: Base {
            web,
            host: h,
            scheme,
            dir: base_dir,
        },
        host: &web.hosts[h as usize],
        page,
        links: &links,
        elems,
    };
    p.head(out, s, &mut r, meta_charset, base.as_ref());
    if links.frameset && !simple {
        p.frameset(out, s, &mut r);
        return charset;
    }
    p.body(out, s, &mut r, non_ascii);
    p.footer(out, &mut r);
    charset
}

/// Which element carries each followable link: every one a `<frame>` in a
/// frameset page; else mostly `<a>`, some `<link rel="alternate">`, `<area>`,
/// `<iframe>`, and on a few pages one `<meta http-equiv="refresh">`.
fn choose_elems(r: &mut Rng, links: &PageLinks, elems: &mut [Elem]) {
    let n = links.follow.len();
    for e in elems.iter_mut() {
        *e = if links.frameset {
            Elem::Frame
        } else {
            match r.below(1000) {
                0..20 => Elem::Alternate,
                20..50 => Elem::Area,
                50..80 => Elem::Iframe,
                _ => Elem::A,
            }
        };
    }
    if !links.frameset && n > 0 && r.chance(20) {
        elems[r.below(n as u64) as usize] = Elem::Refresh;
    }
}

/// One page being rendered: what is fixed once its links and elements are
/// chosen. Its parts are written in order, each drawing from the page's
/// generator in a fixed order (the page must stay a function of its seed).
struct Page<'a> {
    /// How links are written: the web, the host, the scheme, the base directory.
    ctx: Base<'a>,
    host: &'a Host,
    page: u32,
    links: &'a PageLinks,
    /// The element of each followable link, in link order.
    elems: &'a [Elem],
}

impl Page<'_> {
    /// The `<head>`, up to (not including) `</head>`: title, `<base>`, robots
    /// meta, the head's links, style and script (with their unfollowable URLs).
    fn head(
        &self,
        out: &mut Vec<u8>,
        s: &mut Scratch,
        r: &mut Rng,
        meta_charset: &str,
        base: Option<&(String, bool)>,
    ) {
        let (web, links) = (self.ctx.web, self.links);
        push(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n");
        push(out, meta_charset);
        push(out, "<title>");
        push(out, &self.host.domain);
        push(out, " &ndash; page ");
        push_num(out, u64::from(self.page));
        push(out, "</title>\n");
        if let Some((dir, absolute)) = base {
            push(out, "<base href=\"");
            if *absolute {
                let mut origin = String::with_capacity(48);
                let me = Target::Page {
                    host: self.ctx.host,
                    page: self.page,
                };
                web.write_origin(&mut origin, &me);
                push(out, &origin);
            }
            push(out, dir);
            push(out, "\">\n");
        }
        push(
            out,
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        );
        if links.nofollow {
            push(out, NOFOLLOW_METAS[r.below(3) as usize]);
        }
        if let Some(tag) = links.robots {
            push(out, tag.meta);
        }
        if !web.params.simple {
            self.traps(
                out,
                TrapKind::Stylesheet,
                "<link rel=\"stylesheet\" href=\"",
                "\">\n",
            );
        }
        for (t, e) in links.follow.iter().zip(self.elems.iter()) {
            match e {
                Elem::Alternate => {
                    push(out, "<link rel=\"alternate\" hreflang=\"de\"");
                    linkform::write_attr(out, s, r, &self.ctx, t, "href", false);
                    push(out, ">\n");
                }
                Elem::Refresh => {
                    push(out, "<meta http-equiv=\"refresh\" content=\"0; url=");
                    let url = web.url(t);
                    push(out, &url.replace('&', "&amp;"));
                    push(out, "\">\n");
                }
                _ => {}
            }
        }
        push(out, "<style>\n");
        self.traps(
            out,
            TrapKind::Style,
            "/* old: <a href=\"",
            "\">archive</a> */\n",
        );
        push(
            out,
            "body{font-family:Georgia,serif;max-width:52em;margin:auto}\n</style>\n",
        );
        self.traps(
            out,
            TrapKind::Script,
            "<script>\nvar tpl = \"<a href='",
            "'>more</a>\";\nif (window.showMore) { document.body.insertAdjacentHTML(\"beforeend\", tpl); }\n</script>\n",
        );
    }

    /// Each unfollowable URL of `kind`, between `before` and `after`.
    fn traps(&self, out: &mut Vec<u8>, kind: TrapKind, before: &str, after: &str) {
        for (k, t) in &self.links.traps {
            if *k == kind {
                push(out, before);
                web_path(out, self.ctx.web, t);
                push(out, after);
            }
        }
    }

    /// A frameset page's end: the body's unfollowable URLs in head comments,
    /// then every link a `<frame src>`.
    fn frameset(&self, out: &mut Vec<u8>, s: &mut Scratch, r: &mut Rng) {
        for (kind, t) in &self.links.traps {
            if matches!(
                kind,
                TrapKind::Comment | TrapKind::Textarea | TrapKind::Image
            ) {
                push(out, "<!-- <a href=\"");
                web_path(out, self.ctx.web, t);
                push(out, "\">old frame</a> -->\n");
            }
        }
        push(out, "</head>\n<frameset cols=\"25%,*\">\n");
        for (j, t) in self.links.follow.iter().enumerate() {
            push(out, "<frame name=\"f");
            push_num(out, j as u64);
            push(out, "\"");
            linkform::write_attr(out, s, r, &self.ctx, t, "src", false);
            push(out, ">\n");
        }
        push(out, "</frameset>\n</html>\n");
    }

    /// `</head>` and the body up to `</main>`: the heading, paragraphs with the
    /// `<a>` links spread between them, the body's unfollowable URLs, the image
    /// map and the iframes.
    fn body(&self, out: &mut Vec<u8>, s: &mut Scratch, r: &mut Rng, non_ascii: bool) {
        push(out, "</head>\n<body>\n<header><div class=\"logo\">");
        push(out, &self.host.name);
        push(out, "</div></header>\n<main>\n<h1>");
        push(out, &self.host.domain);
        push(out, " &ndash; page ");
        push_num(out, u64::from(self.page));
        push(out, "</h1>\n");
        if non_ascii {
            push(out, text::UTF8_PARAGRAPH);
        }
        self.paragraphs(out, s, r);
        let simple = self.ctx.web.params.simple;
        for (kind, t) in self.links.traps.iter().filter(|_| !simple) {
            match kind {
                TrapKind::Image => {
                    push(out, "<img src=\"");
                    web_path(out, self.ctx.web, t);
                    push(out, "\" alt=\"\">\n");
                }
                TrapKind::Textarea => {
                    push(out, "<textarea name=\"note\" rows=\"2\"><a href=\"");
                    web_path(out, self.ctx.web, t);
                    push(out, "\">draft</a></textarea>\n");
                }
                _ => {}
            }
        }
        let links = || self.links.follow.iter().zip(self.elems.iter());
        if self.elems.contains(&Elem::Area) {
            push(out, "<map name=\"nav\">\n");
            for (t, _) in links().filter(|(_, e)| **e == Elem::Area) {
                push(out, "<area shape=\"rect\" coords=\"0,0,80,20\"");
                linkform::write_attr(out, s, r, &self.ctx, t, "href", false);
                push(out, " alt=\"section\">\n");
            }
            push(out, "</map>\n");
        }
        for (t, _) in links().filter(|(_, e)| **e == Elem::Iframe) {
            push(out, "<iframe");
            linkform::write_attr(out, s, r, &self.ctx, t, "src", false);
            push(
                out,
                " width=\"300\" height=\"150\" title=\"embedded\"></iframe>\n",
            );
        }
    }

    /// The paragraphs, with section headings and the `<a>` links spread evenly
    /// between them (and the comment traps after the first).
    fn paragraphs(&self, out: &mut Vec<u8>, s: &mut Scratch, r: &mut Rng) {
        let n = self.links.follow.len();
        let pool = text::pool();
        let u = r.unit();
        let target = 5000 + (25000.0 * u * u) as usize;
        let a_links = self.elems.iter().filter(|e| **e == Elem::A).count();
        // The paragraph count depends on (seed, host, page) only, never on the length of
        // the URLs written so far, so that pages differ between ports only in the ports.
        let fixed = 1000 + 90 * n;
        let paragraphs = (target.saturating_sub(fixed) / pool.mean_len).max(1);
        let mut emitted = 0;
        let mut follow_iter = self.links.follow.iter().zip(self.elems.iter());
        let mut k = 0;
        while k < paragraphs {
            if k % 4 == 0 {
                push(out, "<h2 id=\"sec");
                push_num(out, (k / 4) as u64);
                push(out, "\">Section ");
                push_num(out, (k / 4) as u64);
                push(out, "</h2>\n");
            }
            push(out, pool.paragraph(r.next_u64()));
            if k == 0 {
                self.traps(
                    out,
                    TrapKind::Comment,
                    "<!-- removed 2019: <a href=\"",
                    "\">old section</a> -->\n",
                );
            }
            k += 1;
            let due = (k * a_links).div_ceil(paragraphs).min(a_links);
            while emitted < due {
                for (t, e) in follow_iter.by_ref() {
                    if *e == Elem::A {
                        write_a(out, s, r, &self.ctx, t);
                        break;
                    }
                }
                emitted += 1;
            }
        }
    }

    /// `</main>`, the footer (links that name no fetchable URL) and the end.
    fn footer(&self, out: &mut Vec<u8>, r: &mut Rng) {
        let domain = &self.host.domain;
        push(out, "</main>\n<footer>\n");
        if r.chance(500) {
            push(out, "<a href=\"javascript:void(0)\">Back to top</a>\n");
        }
        if r.chance(300) {
            push(
                out,
                "<a href=\"JavaScript:window.open('/trap/js.html')\">Pop-up</a>\n",
            );
        }
        if r.chance(500) {
            push(out, "<a href=\"mailto:webmaster@");
            push(out, domain);
            push(out, "\">Contact</a>\n");
        }
        if r.chance(100) {
            push(
                out,
                "<a href=\"data:text/html,%3Ca%20href%3D%22/trap/data.html%22%3Ex%3C/a%3E\">x</a>\n",
            );
        }
        push(out, "<p>&copy; 2024 ");
        push(out, domain);
        push(out, "</p>\n</footer>\n</body>\n</html>\n");
    }
}

/// Appends an unfollowable URL as a plain absolute path.
fn web_path(out: &mut Vec<u8>, web: &Web, t: &Target) {
    let mut p = String::with_capacity(32);
    web.write_path(&mut p, t, true);
    push(out, &p);
}

fn write_a(out: &mut Vec<u8>, s: &mut Scratch, r: &mut Rng, ctx: &Base<'_>, t: &Target) {
    let simple = ctx.web.params.simple;
    let upper = r.chance(50) && !simple;
    let anchor = ANCHORS[r.below(ANCHORS.len() as u64) as usize];
    if upper {
        push(out, "<P><A");
    } else {
        push(
            out,
            match r.below(10) {
                0..6 => "<p class=\"more\"><a",
                6..8 => "<p><a class=\"nav\"",
                _ if simple => "<p><a",
                _ => "<p><a\n",
            },
        );
    }
    linkform::write_attr(out, s, r, ctx, t, "href", upper);
    if r.chance(200) {
        push(out, " title=\"");
        push(out, anchor);
        push(out, "\"");
    }
    push(out, ">");
    push(out, anchor);
    push(out, if upper { "</A></P>\n" } else { "</a></p>\n" });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Params;

    fn web(seed: u64) -> Web {
        Web::new(Params::new(seed, 40, 2000))
    }

    #[test]
    fn pages_are_deterministic_and_seed_dependent() {
        let (a, b, c) = (web(5), web(5), web(6));
        let (mut x, mut y, mut z) = (Vec::new(), Vec::new(), Vec::new());
        let mut s = Scratch::default();
        let mut total = 0usize;
        let mut count = 0usize;
        let mut differs = 0;
        for h in 0..40 {
            for p in 0..a.hosts[h as usize].pages.min(30) {
                render_page(&a, h, p, &mut x, &mut s);
                render_page(&b, h, p, &mut y, &mut s);
                assert_eq!(x, y);
                assert!(std::str::from_utf8(&x).is_ok());
                if c.hosts[h as usize].pages > p {
                    render_page(&c, h, p, &mut z, &mut s);
                    differs += usize::from(x != z);
                }
                total += x.len();
                count += 1;
            }
        }
        assert!(differs > count / 2);
        let mean = total / count;
        eprintln!("mean page size {mean} over {count} pages");
        assert!((12_000..14_500).contains(&mean), "mean page size {mean}");
    }

    /// A `--simple` web: every followable link an `<a href="...">` whose value is the
    /// target's URL, an absolute path or a relative one (resolved against the page),
    /// and none of the hard spellings or elements anywhere.
    #[test]
    fn simple_pages_spell_every_link_plainly() {
        let w = Web::new(Params {
            plain: true,
            simple: true,
            ..web(5).params
        });
        let mut out = Vec::new();
        let mut s = Scratch::default();
        let mut links = 0;
        for h in 0..40 {
            for p in 0..w.hosts[h as usize].pages.min(30) {
                render_page(&w, h, p, &mut out, &mut s);
                let html = std::str::from_utf8(&out).unwrap();
                for hard in [
                    "&amp;cat",
                    "&amp;page",
                    "&#47;",
                    "&#x2F;",
                    "<base",
                    "<frame",
                    "<iframe",
                    "<area",
                    "<img",
                    "<link rel=\"alternate\"",
                    "<link rel=\"stylesheet\"",
                    "http-equiv=\"refresh\"",
                    "<A",
                    "HREF",
                    "href = ",
                    "#sec",
                    "<textarea",
                    "href=\"//",
                    "href=\"HTTP",
                ] {
                    assert!(!html.contains(hard), "{h}/{p} has {hard:?}");
                }
                let hrefs = html.matches("<a href=\"").count()
                    + html.matches("<a class=\"nav\" href=\"").count();
                let follow = w.page_links(h, p).follow.len();
                assert!(
                    hrefs >= follow,
                    "{h}/{p}: {hrefs} plain <a href> for {follow} links"
                );
                links += follow;
            }
        }
        assert!(links > 1000, "{links} links");
        assert!(w.hosts.iter().all(|h| !h.loops));
    }

    #[test]
    fn page_mentions_its_traps_and_marks() {
        let w = web(9);
        let mut out = Vec::new();
        let mut s = Scratch::default();
        let mut seen_nofollow = false;
        for h in 0..40 {
            for p in 0..w.hosts[h as usize].pages.min(200) {
                render_page(&w, h, p, &mut out, &mut s);
                let html = String::from_utf8_lossy(&out);
                let links = w.page_links(h, p);
                for (_, t) in &links.traps {
                    let mut path = String::new();
                    w.write_path(&mut path, t, true);
                    assert!(html.contains(&path), "{path} missing on {h}/{p}");
                }
                if links.nofollow {
                    seen_nofollow = true;
                    assert!(html.to_ascii_lowercase().contains("nofollow"));
                }
                assert!(html.ends_with("</html>\n"));
            }
        }
        assert!(seen_nofollow);
    }
}
