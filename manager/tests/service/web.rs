//! The admin page and its JSON API, served by a real manager: the figures are the
//! control port's, every mutation needs the admin token, and each does what its
//! control-port twin does.

use manager::{Frontier, FrontierConfig};
use spool::protocol::{AdminCommand, AdminReply, Load, Role};

use crate::support::*;

const BEARER: &str = "Bearer admin-token";

/// The control port's status.
async fn status(h: &Harness) -> spool::protocol::StatusSnapshot {
    match admin(h, ADMIN_TOKEN, AdminCommand::Status).await.unwrap() {
        AdminReply::Status(s) => *s,
        other => panic!("not a status: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_and_stats_show_the_control_ports_figures() {
    let h = Harness::start(|_| {}).await;
    let load = Load {
        concurrency: 7,
        ..Load::default()
    };
    let _dl = Client::join(&h, Role::Downloader, "dl-1", TOKEN, load).await;
    test_support::wait::until_async_with(
        "the heartbeat",
        PATIENCE,
        std::time::Duration::from_millis(50),
        async || {
            let s = status(&h).await;
            s.components.first().map(|c| c.load.concurrency) == Some(7)
        },
    )
    .await;

    let page = web(h.web, "GET", "/", &[], "").await;
    assert_eq!(page.status, 200);
    assert!(page.head.contains("Content-Type: text/html"));
    assert!(
        page.head
            .contains("Content-Security-Policy: default-src 'none'")
    );
    assert!(page.body.contains("id=\"pages-total\""));
    assert!(
        !page.body.contains("http://") && !page.body.contains("https://"),
        "self-contained"
    );

    let stats = web(h.web, "GET", "/api/stats", &[], "").await;
    assert_eq!(stats.status, 200);
    assert!(stats.head.contains("Content-Type: application/json"));
    let json = stats.json();
    let control = status(&h).await;
    assert_eq!(json["target_pages_per_sec"], 1_000.0);
    assert_eq!(json["pages_total"], control.pages_total);
    assert_eq!(json["hosts"]["dead"], 0);
    assert_eq!(json["components"][0]["role"], "downloader");
    assert_eq!(json["components"][0]["id"], "dl-1");
    assert_eq!(json["components"][0]["load"]["concurrency"], 7);
    assert_eq!(json["components"][0]["healthy"], true);
    // Reasons by their outcome-file names, every one listed but `sitemap` (no end
    // of a URL, never counted).
    let reasons: Vec<&str> = json["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), spool::OutcomeReason::ALL.len() - 1);
    assert!(reasons.contains(&"robots_excluded") && !reasons.contains(&"sitemap"));
    assert_eq!(
        json["fetch_errors"].as_array().unwrap().len(),
        reasons.len()
    );

    // HEAD has the head only; unknown paths and methods are refused.
    let head = web(h.web, "HEAD", "/api/stats", &[], "").await;
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    assert_eq!(web(h.web, "GET", "/nope", &[], "").await.status, 404);
    assert_eq!(web(h.web, "PUT", "/api/stats", &[], "").await.status, 405);
    // DNS rebinding: a name other than localhost is refused on loopback.
    let rebound = web(h.web, "GET", "/api/stats", &[("Host", "evil.test")], "").await;
    assert_eq!(rebound.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_without_the_token_are_refused_with_401() {
    let h = Harness::start(|_| {}).await;
    let mutations = [
        ("POST", "/api/blacklist", r#"{"entry": "spam.test"}"#),
        ("DELETE", "/api/blacklist", r#"{"entry": "spam.test"}"#),
        ("POST", "/api/speed", r#"{"pages_per_sec": 5}"#),
        ("POST", "/api/checkpoint", ""),
        ("POST", "/api/shutdown", ""),
    ];
    for (method, path, body) in mutations {
        for auth in [&[][..], &[("Authorization", "Bearer wrong")][..]] {
            let r = web(h.web, method, path, auth, body).await;
            assert_eq!(r.status, 401, "{method} {path} {auth:?}: {}", r.body);
            // Field names are case-insensitive (hyper writes `Www-Authenticate`).
            let head = r.head.to_ascii_lowercase();
            assert!(head.contains("\r\nwww-authenticate: bearer"), "{}", r.head);
            assert_eq!(r.json()["ok"], false);
        }
    }
    // Nothing changed.
    let s = status(&h).await;
    assert_eq!(s.target_pages_per_sec, 1_000.0);
    assert!(!h.config.state_dir.join("checkpoints").exists());
    let list = web(h.web, "GET", "/api/blacklist", &[], "").await;
    assert_eq!(list.json()["entries"], serde_json::json!([]));
    assert!(!h.task.as_ref().unwrap().is_finished(), "still running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mutation_does_what_its_control_port_twin_does() {
    let mut h = Harness::start(|_| {}).await;
    let auth = [("Authorization", BEARER)];

    let add = web(
        h.web,
        "POST",
        "/api/blacklist",
        &auth,
        r#"{"entry": ".spam.test"}"#,
    )
    .await;
    assert_eq!(add.status, 200, "{}", add.body);
    let add = web(h.web, "POST", "/api/blacklist?entry=ham.test", &auth, "").await;
    assert_eq!(add.status, 200, "{}", add.body);
    let list = web(h.web, "GET", "/api/blacklist", &[], "").await.json();
    assert_eq!(
        list["entries"],
        serde_json::json!(["ham.test", "*.spam.test"])
    );
    match admin(&h, ADMIN_TOKEN, AdminCommand::Blacklist)
        .await
        .unwrap()
    {
        AdminReply::Blacklist { entries } => assert_eq!(entries, ["ham.test", "*.spam.test"]),
        other => panic!("{other:?}"),
    }
    let gone = web(
        h.web,
        "DELETE",
        "/api/blacklist",
        &auth,
        r#"{"entry": "ham.test"}"#,
    )
    .await;
    assert_eq!(gone.status, 200);
    let bad = web(
        h.web,
        "POST",
        "/api/blacklist",
        &auth,
        r#"{"entry": "a b"}"#,
    )
    .await;
    assert_eq!(bad.status, 400);
    assert!(bad.json()["detail"].as_str().unwrap().contains("invalid"));

    let speed = web(
        h.web,
        "POST",
        "/api/speed",
        &auth,
        r#"{"pages_per_sec": 42.5}"#,
    )
    .await;
    assert_eq!(speed.status, 200, "{}", speed.body);
    assert_eq!(status(&h).await.target_pages_per_sec, 42.5);
    let negative = web(
        h.web,
        "POST",
        "/api/speed",
        &auth,
        r#"{"pages_per_sec": -1}"#,
    )
    .await;
    assert_eq!(negative.status, 400);

    let checkpoint = web(h.web, "POST", "/api/checkpoint", &auth, "").await;
    assert_eq!(checkpoint.status, 200, "{}", checkpoint.body);
    let path = checkpoint.json()["path"].as_str().unwrap().to_owned();
    assert_eq!(
        path,
        h.config
            .state_dir
            .join("checkpoints/1")
            .display()
            .to_string()
    );

    let bye = web(
        h.web,
        "POST",
        "/api/shutdown",
        &auth,
        r#"{"grace_ms": 100}"#,
    )
    .await;
    assert_eq!(bye.status, 200, "{}", bye.body);
    let task = h.task.take().unwrap();
    within("the manager to stop", task).await.unwrap().unwrap();

    // The checkpoint opens, with the blacklist edit in it.
    let frontier = Frontier::open(
        std::path::Path::new(&path),
        h.spool.clone(),
        FrontierConfig::default(),
    )
    .unwrap();
    let entries: Vec<String> = frontier
        .blacklist()
        .entries()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(entries, ["*.spam.test"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_admin_token_the_api_is_read_only() {
    let mut h = Harness::start(|c| c.admin_token = String::new()).await;
    let r = web(
        h.web,
        "POST",
        "/api/checkpoint",
        &[("Authorization", BEARER)],
        "",
    )
    .await;
    assert_eq!(r.status, 403);
    assert!(
        r.json()["detail"]
            .as_str()
            .unwrap()
            .contains("manager.admin_token")
    );
    assert_eq!(web(h.web, "GET", "/api/stats", &[], "").await.status, 200);
    assert_eq!(
        web(h.web, "GET", "/api/blacklist", &[], "").await.status,
        200
    );
    h.stop().await.unwrap();
}
