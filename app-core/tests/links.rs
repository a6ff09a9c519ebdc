//! The application's per-page path: `links_for_file` under an [`AppConfig`] gives
//! exactly the links a crawl with that config would follow (its canonicalization
//! and its body cap), as `polycrawl links` shows them.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use app_core::AppConfig;
use pages::links_for_file;
use url::Url;

#[test]
fn links_for_file_is_the_app_path() {
    let base = Url::parse("https://www.acme17.test/dir/page.html").unwrap();
    let html = b"<base href=\"/b/\"><a href=\"x#frag\">1</a><a href=\"x\">again</a>\
        <a href=\"http://localhost/\">local</a><a href=\"mailto:a@b.test\">m</a>\
        <a href=\"HTTP://Other.TEST:80/./y\">o</a><script>'<a href=/no>'</script>";
    assert_eq!(
        links_for_file(html, &base, None, &AppConfig::default()),
        [
            "https://www.acme17.test/b/x",
            "https://www.acme17.test/b/x",
            "http://other.test/y",
        ]
    );
    let nofollow = b"<meta name=robots content=nofollow><a href=/x>";
    assert!(links_for_file(nofollow, &base, None, &AppConfig::default()).is_empty());
    // The HTTP charset decides how a non-ASCII query is encoded; the body cap
    // cuts the page where the app would.
    let latin = b"<a href=\"/q?x=\xe9\">";
    let config = AppConfig::default();
    assert_eq!(
        links_for_file(
            latin,
            &base,
            Some("text/html; charset=windows-1252"),
            &config
        ),
        ["https://www.acme17.test/q?x=%E9"]
    );
    let capped = AppConfig {
        max_body_bytes: 12,
        ..AppConfig::default()
    };
    assert!(links_for_file(b"<a href=/x><a href=/y>", &base, None, &capped).len() == 1);
}
