//! Admin commands over the control port: who may connect, who may change things,
//! and what each command does.

use spool::protocol::{AdminCommand, AdminReply, ProtocolError, RefusalCode};

use crate::support::*;

fn done(reply: AdminReply) -> String {
    match reply {
        AdminReply::Done { detail } => detail,
        other => panic!("expected Done, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_need_the_admin_token() {
    let mut h = Harness::start(|_| {}).await;
    // The control token is not enough for the admin role.
    match admin(&h, TOKEN, AdminCommand::Status).await {
        Err(ProtocolError::Refused { code, .. }) => assert_eq!(code, RefusalCode::BadToken),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let AdminReply::Status(status) = admin(&h, ADMIN_TOKEN, AdminCommand::Status).await.unwrap()
    else {
        panic!("not a status");
    };
    assert_eq!(status.target_pages_per_sec, 1_000.0);
    assert_eq!(status.pages_total, 0);

    let speed = AdminCommand::SetSpeed {
        pages_per_sec: 25.0,
    };
    done(admin(&h, ADMIN_TOKEN, speed).await.unwrap());
    let AdminReply::Status(status) = admin(&h, ADMIN_TOKEN, AdminCommand::Status).await.unwrap()
    else {
        panic!("not a status");
    };
    assert_eq!(status.target_pages_per_sec, 25.0);
    let bad = AdminCommand::SetSpeed {
        pages_per_sec: -1.0,
    };
    assert!(matches!(
        admin(&h, ADMIN_TOKEN, bad).await.unwrap(),
        AdminReply::Failed { .. }
    ));

    let add = AdminCommand::BlacklistAdd {
        entry: "spam.test".into(),
    };
    assert!(done(admin(&h, ADMIN_TOKEN, add).await.unwrap()).contains("1 entries"));
    match admin(&h, ADMIN_TOKEN, AdminCommand::Blacklist).await {
        Ok(AdminReply::Blacklist { entries }) => assert_eq!(entries, ["spam.test"]),
        other => panic!("expected the blacklist, got {other:?}"),
    }
    let remove = AdminCommand::BlacklistRemove {
        entry: "spam.test".into(),
    };
    assert!(done(admin(&h, ADMIN_TOKEN, remove).await.unwrap()).contains("0 entries"));
    let garbage = AdminCommand::BlacklistAdd {
        entry: "not a host!".into(),
    };
    assert!(matches!(
        admin(&h, ADMIN_TOKEN, garbage).await.unwrap(),
        AdminReply::Failed { .. }
    ));

    match admin(&h, ADMIN_TOKEN, AdminCommand::Checkpoint).await {
        Ok(AdminReply::Checkpointed { path }) => {
            assert_eq!(
                path,
                h.config
                    .state_dir
                    .join("checkpoints/1")
                    .display()
                    .to_string()
            );
        }
        other => panic!("expected Checkpointed, got {other:?}"),
    }
    assert!(h.config.state_dir.join("checkpoints/1/CURRENT").exists());

    let shutdown = AdminCommand::Shutdown { grace_ms: 100 };
    done(admin(&h, ADMIN_TOKEN, shutdown).await.unwrap());
    let task = h.task.take().unwrap();
    within("the manager to stop", task).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_admin_token_admins_may_only_read() {
    let mut h = Harness::start(|c| c.admin_token = String::new()).await;
    let reply = admin(&h, TOKEN, AdminCommand::Status).await.unwrap();
    assert!(matches!(reply, AdminReply::Status(_)), "{reply:?}");
    let reply = admin(&h, TOKEN, AdminCommand::Blacklist).await.unwrap();
    assert!(matches!(reply, AdminReply::Blacklist { .. }), "{reply:?}");
    let speed = AdminCommand::SetSpeed { pages_per_sec: 5.0 };
    match admin(&h, TOKEN, speed).await.unwrap() {
        AdminReply::Failed { detail } => assert!(detail.contains("admin_token"), "{detail}"),
        other => panic!("expected Failed, got {other:?}"),
    }
    // A wrong control token is refused for every role.
    assert!(
        h.connect(spool::protocol::Role::Downloader, "dl-x", "wrong")
            .await
            .is_err()
    );
    h.stop().await.unwrap();
}
