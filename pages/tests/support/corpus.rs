//! A deterministic corpus of realistic pages (5-30 KB) for recall tests and the
//! benchmark: navigation lists, articles, tables, forms, inline SVG, scripts and
//! styles full of decoy markup, comments, entity-encoded and oddly quoted links, every
//! link-bearing element, `<base>`, refresh and robots metas, frameset pages and
//! windows-1252 pages with non-ASCII URLs. No network: the web is made up here.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};
use url::Url;

/// One generated page.
#[derive(Clone)]
pub struct Page {
    /// Where it was "fetched" from.
    pub url: Url,
    /// Its bytes, in `encoding`.
    pub html: Vec<u8>,
    /// The encoding it declares (in a `<meta>`).
    pub encoding: &'static Encoding,
}

/// `n` pages from `seed`.
pub fn pages(seed: u64, n: usize) -> Vec<Page> {
    let mut rng = Rng(seed);
    (0..n).map(|i| page(&mut rng, i)).collect()
}

/// SplitMix64: small, deterministic, good enough for test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "acme", "widget", "news", "crawl", "river", "orbit", "market", "garden", "ledger", "signal",
    "harbor", "pixel", "summit", "archive", "tensor", "meadow", "copper", "delta",
];

fn word(rng: &mut Rng) -> &'static str {
    rng.pick(WORDS)
}

fn phrase(rng: &mut Rng, sep: &str) -> String {
    let first = word(rng);
    format!("{first}{sep}{}", word(rng))
}

/// A link target, in one of the many shapes found in the wild.
fn href(rng: &mut Rng, latin1: bool) -> String {
    let w = word(rng);
    let n = rng.below(1000);
    match rng.below(30) {
        0 => format!("/{w}/{n}.html"),
        1 => format!("{w}-{n}.html"),
        2 => format!("../{w}/index.html"),
        3 => format!("./{w}/?page={n}"),
        4 => format!("?q={w}&amp;page={n}"),
        5 => format!("/search?q={w}&#38;lang=en&#x26;n={n}"),
        6 => format!("/list?a={n}&copy=2&lang=fr&amp"),
        7 => format!("https://www.{w}{n}.test/"),
        8 => format!("http://{w}.example.test:8080/{n}"),
        9 => format!("//cdn.{w}.test/{n}/"),
        10 => format!("#section-{n}"),
        11 => "javascript:void(0)".to_owned(),
        12 => format!("mailto:{w}@example.test"),
        13 => format!("tel:+1555{n}"),
        14 => "data:text/html,<b>x</b>".to_owned(),
        15 => format!("/{w}/a b/{n}"),
        16 => format!("  /{w}/padded  "),
        17 => format!("/{w}/{n}#frag"),
        18 if latin1 => format!("/caf\u{e9}/{w}?q=cr\u{e8}me"),
        18 => format!("/caf\u{e9}/{w}?q=cr\u{e8}me&x=\u{65e5}\u{672c}"),
        19 => format!("HTTPS://WWW.{}.TEST/{w}", w.to_uppercase()),
        20 => format!("/{w}/%7e{n}/%41"),
        21 => format!("/a/b/../../{w}/./{n}"),
        22 => format!("/{w}?x=&lt;{n}&gt;"),
        23 => format!("ftp://files.{w}.test/{n}"),
        24 => format!("/{w}/&quot;{n}&quot;"),
        25 => format!("/p\t{n}\n/{w}"),
        26 => String::new(),
        27 => format!("https://{w}.test/{n}?utm_source={w}&amp;utm_medium=email"),
        _ => format!("/{w}/{n}/"),
    }
}

/// Renders an attribute in one of the quoting styles (unquoted only when safe).
fn attr(rng: &mut Rng, name: &str, value: &str) -> String {
    let unquoted_ok =
        !value.is_empty() && !value.bytes().any(|b| b" \t\n\x0c\r\"'=<>`".contains(&b));
    let name = if rng.chance(10) {
        name.to_uppercase()
    } else {
        name.to_owned()
    };
    match rng.below(10) {
        0 if !value.contains('\'') => format!("{name}='{value}'"),
        1 if unquoted_ok => format!("{name}={value}"),
        2 if !value.contains('"') => format!("{name} = \"{value}\""),
        3 if !value.contains('"') => format!("{name}=\n  \"{value}\""),
        _ => format!("{name}=\"{}\"", value.replace('"', "&quot;")),
    }
}

fn anchor(rng: &mut Rng, latin1: bool) -> String {
    let target = href(rng, latin1);
    let text = phrase(rng, " ");
    let tag = if rng.chance(5) { "A" } else { "a" };
    let sep = if rng.chance(10) { "\n" } else { " " };
    let mut attrs = vec![attr(rng, "href", &target)];
    if rng.chance(40) {
        let class = format!("nav-{} item", word(rng));
        attrs.insert(0, attr(rng, "class", &class));
    }
    if rng.chance(15) {
        let title = phrase(rng, " > ");
        attrs.push(attr(rng, "title", &title));
    }
    if rng.chance(5) {
        attrs.push(attr(rng, "href", "/duplicate-ignored"));
    }
    if rng.chance(5) {
        attrs.push("download".to_owned());
    }
    if rng.chance(10) {
        attrs.push(attr(rng, "rel", "nofollow noopener"));
    }
    format!("<{tag}{sep}{}>{text}</{tag}>", attrs.join(" "))
}

fn paragraph(rng: &mut Rng, latin1: bool) -> String {
    let mut s = String::from("<p>");
    for i in 0..rng.below(60) + 20 {
        if i % 9 == 4 {
            s.push_str(&anchor(rng, latin1));
        } else if i % 13 == 7 {
            s.push_str(&format!("<em>{}</em> &amp; 3 &lt; 4 ", word(rng)));
        } else {
            s.push_str(word(rng));
        }
        s.push(' ');
    }
    s.push_str("</p>\n");
    s
}

fn nav(rng: &mut Rng, latin1: bool) -> String {
    let mut s = format!("<nav class=\"{}\"><ul>\n", word(rng));
    for _ in 0..rng.below(25) + 5 {
        s.push_str(&format!(
            "  <li class=\"menu-item\">{}</li>\n",
            anchor(rng, latin1)
        ));
    }
    s.push_str("</ul></nav>\n");
    s
}

fn table(rng: &mut Rng, latin1: bool) -> String {
    let mut s = String::from("<table class=\"data\"><thead><tr><th>Name<th>Value</thead><tbody>\n");
    for _ in 0..rng.below(12) + 3 {
        s.push_str(&format!(
            "<tr><td>{}<td data-x='{}'>{}</tr>\n",
            anchor(rng, latin1),
            rng.below(99),
            rng.below(9999)
        ));
    }
    s.push_str("</tbody></table>\n");
    s
}

/// Scripts: decoy links in strings, split end tags, escaped `<!-- <script>` blocks.
fn script(rng: &mut Rng) -> String {
    let w = word(rng);
    match rng.below(5) {
        0 => format!(
            "<script>var s = '<a href=\"/js-{w}\">x</a>'; if (a < b && c > d) {{ go(); }}\n\
             document.write('<scr' + 'ipt src=\"/x.js\"></scr' + 'ipt>');</script>\n"
        ),
        1 => format!(
            "<script type=\"text/javascript\">\n<!--\nvar t = \"<script>var z='<a href=/dbl-{w}>';</script>\";\n\
             //-->\n</script>\n"
        ),
        2 => format!("<SCRIPT src=\"/static/{w}.js\" async></SCRIPT>\n"),
        3 => format!(
            "<script type=\"application/ld+json\">{{\"url\": \"https://{w}.test/ld\", \
             \"html\": \"<a href='/ld-{w}'>\"}}</script>\n"
        ),
        _ => format!(
            "<script>\nfunction f(){{ return '</sc' + 'ript><a href=\"/split-{w}\">'; }}\n</script >\n"
        ),
    }
}

fn decoys(rng: &mut Rng) -> String {
    let w = word(rng);
    match rng.below(8) {
        0 => format!("<!-- <a href=\"/commented-{w}\">old</a> -->\n"),
        1 => format!(
            "<!--[if lt IE 9]><script src=\"/ie-{w}.js\"></script><a href=/ie-{w}><![endif]-->\n"
        ),
        2 => format!(
            "<style>\na[href^=\"/{w}\"] {{ color: red }} /* <a href=\"/css-{w}\"> */\n</style>\n"
        ),
        3 => format!(
            "<textarea name=\"t\" rows=3><a href=\"/textarea-{w}\">not a link</a></textarea>\n"
        ),
        4 => format!(
            "<noscript><a href=\"/noscript-{w}\">no js</a><img src=\"/pixel-{w}.gif\"></noscript>\n"
        ),
        5 => format!(
            "<svg width=\"24\" height=\"24\" viewBox=\"0 0 24 24\"><title>{w} icon</title>\
             <style>.c{{fill:red}} <a href=\"/svgstyle-{w}\"></style>\
             <a href=\"/svg-{w}\"><path d=\"M0 0h24v24H0z\"/></a>\
             <a xlink:href=\"/xlink-{w}\"><circle r=\"4\"/></a>\
             <![CDATA[ <a href=\"/cdata-{w}\"> ]]></svg>\n"
        ),
        6 => format!(
            "<form action=\"/submit-{w}\" method=post><input name=q value=\"<a href='/input'>\">\
             <button formaction=\"/b\">Go</button></form>\n"
        ),
        _ => format!(
            "<map name=\"m{w}\"><area shape=rect coords=\"0,0,10,10\" href=\"/area-{w}\" alt=x>\
             <area nohref alt=y></map><img usemap=\"#m{w}\" src=\"/img-{w}.png\" alt=\"a > b\">\n"
        ),
    }
}

fn head(rng: &mut Rng, url: &Url, latin1: bool) -> String {
    let w = word(rng);
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n");
    s.push_str(if latin1 {
        "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\">\n"
    } else if rng.chance(50) {
        "<meta charset=\"utf-8\">\n"
    } else {
        "<META CHARSET=UTF-8>\n"
    });
    s.push_str(&format!(
        "<title>{w} &amp; friends <a href=\"/in-title\"></title>\n"
    ));
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    if rng.chance(30) {
        s.push_str(&format!(
            "<base href=\"{}\">\n",
            rng.pick(&["/sub/dir/", "https://base.example.test/b/", "../up/"])
        ));
    }
    s.push_str(&format!(
        "<link rel=\"stylesheet\" href=\"/css/{w}.css\">\n"
    ));
    s.push_str(&format!(
        "<link rel=\"alternate\" hreflang=\"fr\" href=\"{}fr/\">\n",
        url.path()
    ));
    s.push_str(&format!(
        "<LINK REL=\"Alternate stylesheet\" HREF=\"/css/alt-{w}.css\">\n"
    ));
    s.push_str(&format!(
        "<link rel=alternate type=\"application/rss+xml\" href='/feed-{w}.xml'>\n"
    ));
    s.push_str("<link rel=\"canonical\" href=\"/canonical\">\n");
    if rng.chance(10) {
        s.push_str(&format!(
            "<meta http-equiv=\"refresh\" content=\"5; url=/moved-{w}\">\n"
        ));
    }
    if rng.chance(8) {
        s.push_str(rng.pick(&[
            "<meta name=\"robots\" content=\"noindex, nofollow\">\n",
            "<meta name=ROBOTS content=NONE>\n",
            "<meta name=\"robots\" content=\"index, follow\">\n",
        ]));
    }
    s.push_str(&script(rng));
    s.push_str("</head>\n");
    s
}

fn frameset(rng: &mut Rng) -> String {
    let w = word(rng);
    format!(
        "<!DOCTYPE html PUBLIC \"-//W3C//DTD HTML 4.01 Frameset//EN\">\n<html><head><title>{w}</title>\n\
         <meta name=\"description\" content=\"{w}\"></head>\n<frameset cols=\"25%,75%\">\
         <frame src=\"/menu-{w}.html\" name=menu><FRAME SRC='/main-{w}.html'>\
         <noframes><body><a href=\"/noframes-{w}\">no frames</a></body></noframes></frameset></html>\n"
    )
}

fn page(rng: &mut Rng, i: usize) -> Page {
    let host = format!("www.{}{}.test", word(rng), rng.below(50));
    let url = Url::parse(&format!("https://{host}/{}/{i}.html", word(rng))).expect("generated URL");
    if rng.chance(3) {
        return Page {
            url,
            html: frameset(rng).into_bytes(),
            encoding: UTF_8,
        };
    }
    let latin1 = rng.chance(8);
    let encoding = if latin1 { WINDOWS_1252 } else { UTF_8 };
    let target = 5_000 + rng.below(25_000);
    let mut s = head(rng, &url, latin1);
    s.push_str(if rng.chance(50) {
        "<body class=\"page\">\n"
    } else {
        "<BODY>\n"
    });
    s.push_str(&nav(rng, latin1));
    while s.len() < target {
        match rng.below(10) {
            0..=3 => s.push_str(&paragraph(rng, latin1)),
            4 => s.push_str(&table(rng, latin1)),
            5 => s.push_str(&script(rng)),
            6 | 7 => s.push_str(&decoys(rng)),
            8 => s.push_str(&format!(
                "<iframe src=\"/embed/{}\" width=300>fallback <a href=\"/in-iframe\">x</a></iframe>\n",
                rng.below(99)
            )),
            _ => s.push_str(&format!(
                "<div class=\"card\"><img src=\"/i/{}.jpg\" alt=\"\"><h3>{}</h3>{}</div>\n",
                rng.below(999),
                word(rng),
                anchor(rng, latin1)
            )),
        }
    }
    s.push_str(&format!(
        "<footer>{}</footer>\n</body>\n</html>\n",
        nav(rng, latin1)
    ));
    let html = if latin1 {
        WINDOWS_1252.encode(&s).0.into_owned()
    } else {
        s.into_bytes()
    };
    Page {
        url,
        html,
        encoding,
    }
}
