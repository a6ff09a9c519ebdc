//! Canonicalization, host-reversed keys, and `links_for_file` (the app's per-page
//! path as `polycrawl links` shows it).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use pages::canon::key::{KeyError, reversed_host_key, url_from_key, write_reversed_host_key};
use pages::canon::{self, CanonConfig, Rejected};
use pages::links::LinkRules;
use pages::links_for_file;
use url::Url;

fn canon(text: &str) -> Result<String, Rejected> {
    canon::parse(text, None, &CanonConfig::default()).map(String::from)
}

fn ok(text: &str) -> String {
    canon(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn scheme_and_host_case() {
    assert_eq!(
        ok("HTTP://WWW.Acme17.TEST/Path/To"),
        "http://www.acme17.test/Path/To"
    );
    assert_eq!(ok("hTTpS://Acme17.test"), "https://acme17.test/");
}

#[test]
fn default_ports_removed_others_kept() {
    assert_eq!(ok("http://a.test:80/x"), "http://a.test/x");
    assert_eq!(ok("https://a.test:443/x"), "https://a.test/x");
    assert_eq!(ok("http://a.test:443/x"), "http://a.test:443/x");
    assert_eq!(ok("https://a.test:8443/x"), "https://a.test:8443/x");
    assert_eq!(ok("http://a.test:0080/"), "http://a.test/");
}

#[test]
fn dot_segments_and_empty_path() {
    assert_eq!(ok("http://a.test/a/./b/../c/%2e%2E/d"), "http://a.test/a/d");
    assert_eq!(ok("http://a.test/../../x"), "http://a.test/x");
    assert_eq!(ok("http://a.test"), "http://a.test/");
    assert_eq!(ok("http://a.test?q"), "http://a.test/?q");
    let base = Url::parse("http://a.test/dir/page").unwrap();
    let c = CanonConfig::default();
    assert_eq!(
        canon::parse("../up/./x", Some(&base), &c).unwrap().as_str(),
        "http://a.test/up/x"
    );
}

#[test]
fn fragment_removed() {
    assert_eq!(ok("http://a.test/p?q=1#frag"), "http://a.test/p?q=1");
    assert_eq!(ok("http://a.test/#"), "http://a.test/");
}

#[test]
fn percent_encoding() {
    assert_eq!(ok("http://a.test/a b?q=c d"), "http://a.test/a%20b?q=c%20d");
    assert_eq!(
        ok("http://a.test/café?q=crème"),
        "http://a.test/caf%C3%A9?q=cr%C3%A8me"
    );
    assert_eq!(
        ok("http://a.test/%7e/%41?x=%2f"),
        "http://a.test/%7e/%41?x=%2f",
        "escapes kept as written"
    );
    assert_eq!(ok("http://a.test/<\">?'"), "http://a.test/%3C%22%3E?%27");
    assert_eq!(ok(" http://a.test/\tp\n "), "http://a.test/p");
}

#[test]
fn html_entities_are_the_extractors_job() {
    // In a URL `&amp;` is three literal characters; decoding belongs to HTML.
    assert_eq!(
        ok("http://a.test/?a=1&amp;b=2"),
        "http://a.test/?a=1&amp;b=2"
    );
    let base = Url::parse("http://a.test/").unwrap();
    let links = links_for_file(
        b"<a href=\"/q?a=1&amp;b=2\">",
        &base,
        None,
        LinkRules {
            canon: CanonConfig::default(),
            max_body_bytes: usize::MAX,
        },
    );
    assert_eq!(links, ["http://a.test/q?a=1&b=2"]);
}

#[test]
fn idna() {
    assert_eq!(
        ok("http://Bücher.Example/"),
        "http://xn--bcher-kva.example/"
    );
    assert_eq!(
        ok("http://xn--bcher-kva.example/"),
        "http://xn--bcher-kva.example/"
    );
    assert_eq!(ok("http://ÉCOLE.test/"), "http://xn--cole-9oa.test/");
    assert!(matches!(canon("http://a b.test/"), Err(Rejected::Parse(_))));
}

#[test]
fn hosts() {
    assert_eq!(ok("http://www.acme17.test./x"), "http://www.acme17.test/x");
    assert_eq!(ok("http://127.0.0.1:8080/"), "http://127.0.0.1:8080/");
    assert_eq!(ok("http://0x7f.1/"), "http://127.0.0.1/");
    assert_eq!(ok("http://[::1]/"), "http://[::1]/");
    assert_eq!(
        canon("http://localhost/"),
        Err(Rejected::SingleLabelHost("localhost".into()))
    );
    assert_eq!(
        canon("http://intranet./"),
        Err(Rejected::SingleLabelHost("intranet".into()))
    );
    let local = CanonConfig {
        allow_single_label_hosts: true,
        ..CanonConfig::default()
    };
    assert_eq!(
        canon::parse("http://localhost:3000/", None, &local)
            .unwrap()
            .as_str(),
        "http://localhost:3000/"
    );
}

#[test]
fn rejections() {
    assert_eq!(canon("ftp://a.test/"), Err(Rejected::Scheme("ftp".into())));
    assert_eq!(
        canon("mailto:x@a.test"),
        Err(Rejected::Scheme("mailto".into()))
    );
    assert_eq!(
        canon("javascript:alert(1)"),
        Err(Rejected::Scheme("javascript".into()))
    );
    assert_eq!(canon("http://user:pw@a.test/"), Err(Rejected::Credentials));
    assert_eq!(canon("http://user@a.test/"), Err(Rejected::Credentials));
    assert!(matches!(canon("/relative"), Err(Rejected::Parse(_))));
    let short = CanonConfig {
        max_len: 20,
        ..CanonConfig::default()
    };
    assert_eq!(
        canon::parse("http://a.test/123456", None, &short)
            .unwrap()
            .as_str()
            .len(),
        20
    );
    assert_eq!(
        canon::parse("http://a.test/1234567", None, &short),
        Err(Rejected::TooLong { len: 21, max: 20 })
    );
}

#[test]
fn canonicalization_is_idempotent() {
    for text in [
        "HTTP://A.test:80/a/../b?c d#e",
        "https://Bücher.example./x/./y",
        "http://[::1]:8080",
    ] {
        let once = ok(text);
        assert_eq!(ok(&once), once);
    }
}

#[test]
fn key_format() {
    let key = |s: &str| reversed_host_key(&Url::parse(s).unwrap());
    assert_eq!(
        key("https://www.acme17.test/a?q=1"),
        "test.acme17.www/a?q=1"
    );
    assert_eq!(
        key("http://www.acme17.test/a?q=1"),
        "test.acme17.www/a?q=1#http"
    );
    assert_eq!(
        key("http://www.acme17.test:8080/a"),
        "test.acme17.www/a#http:8080"
    );
    assert_eq!(
        key("https://www.acme17.test:8443/"),
        "test.acme17.www/#https:8443"
    );
    assert_eq!(key("https://127.0.0.1/x"), "127.0.0.1/x");
    assert_eq!(key("http://[::1]:81/"), "[::1]/#http:81");
    assert_eq!(key("https://a.test/?"), "test.a/?");
    let mut reused = String::from("keep:");
    write_reversed_host_key(&Url::parse("https://a.test/").unwrap(), &mut reused);
    assert_eq!(reused, "keep:test.a/");
}

fn sample_urls() -> Vec<Url> {
    let hosts = [
        "acme17.test",
        "www.acme17.test",
        "www2.acme17.test",
        "sub.www.acme17.test",
        "acme17-x.test",
        "acme170.test",
        "acme1.test",
        "acme17.test2",
        "a.b.c.d.acme17.test",
        "xn--bcher-kva.example",
        "127.0.0.1",
        "10.0.0.2",
        "[::1]",
        "[2001:db8::7]",
    ];
    let ends = ["", ":80", ":8080", ":443", ":1"];
    let paths = [
        "/",
        "/a",
        "/a/b?q=1",
        "/?",
        "/%7e/x y",
        "/a?b#c",
        "/caf%C3%A9?x=%E9",
    ];
    let mut urls = Vec::new();
    for scheme in ["http", "https"] {
        for host in hosts {
            for end in ends {
                for path in paths {
                    let text = format!("{scheme}://{host}{end}{path}");
                    urls.push(
                        canon::canonicalize(Url::parse(&text).unwrap(), &CanonConfig::default())
                            .unwrap(),
                    );
                }
            }
        }
    }
    urls
}

#[test]
fn key_round_trip() {
    for url in sample_urls() {
        let key = reversed_host_key(&url);
        assert_eq!(url_from_key(&key).as_ref(), Ok(&url), "key {key}");
    }
}

#[test]
fn keys_of_a_domain_and_of_a_host_sort_together() {
    let mut keyed: Vec<(String, Url)> = sample_urls()
        .into_iter()
        .map(|u| (reversed_host_key(&u), u))
        .collect();
    keyed.sort();
    let contiguous = |belongs: &dyn Fn(&Url) -> bool| {
        let hits: Vec<usize> = keyed
            .iter()
            .enumerate()
            .filter(|(_, (_, u))| belongs(u))
            .map(|(i, _)| i)
            .collect();
        hits.windows(2).all(|w| w[1] == w[0] + 1) && !hits.is_empty()
    };
    let host_is = |h: &'static str| move |u: &Url| u.host_str() == Some(h);
    let under = |d: &'static str| {
        move |u: &Url| {
            u.host_str()
                .is_some_and(|h| h == d || h.ends_with(&format!(".{d}")))
        }
    };
    assert!(contiguous(&under("acme17.test")), "domain acme17.test");
    assert!(
        contiguous(&under("www.acme17.test")),
        "www.acme17.test and its subdomains"
    );
    for host in [
        "www.acme17.test",
        "acme17.test",
        "www2.acme17.test",
        "127.0.0.1",
        "[::1]",
    ] {
        assert!(contiguous(&host_is(host)), "host {host}");
    }
}

#[test]
fn bad_keys() {
    assert_eq!(url_from_key("test.a"), Err(KeyError::NoPath));
    assert_eq!(
        url_from_key("test.a/#ftp"),
        Err(KeyError::Marker("ftp".into()))
    );
    assert_eq!(
        url_from_key("test.a/#http:99999"),
        Err(KeyError::Marker("http:99999".into()))
    );
    assert!(matches!(url_from_key("te st.a/"), Err(KeyError::Url(_))));
}
