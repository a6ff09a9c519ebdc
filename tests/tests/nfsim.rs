//! `polycrawl nfsim` mounted for real: two client mounts over one backing directory
//! show each other's new entries only after the visibility delay, see their own at
//! once, race on renames as NFS clients do, and fail calls on demand with EIO and
//! ESTALE. Skipped, with the reason printed, where FUSE cannot be used (no usable
//! `/dev/fuse` or no `fusermount3`).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::fs;
use std::io::ErrorKind;
use std::path::Path;
use std::time::{Duration, Instant};

use tests::nfsim::{self, Mount};

const DELAY_MS: u64 = 1200;

/// Mounts `backing` at `dir` with `polycrawl nfsim` (the tests package's guard:
/// unmounted on drop); its stderr goes to `<name>.stderr` beside the mount point.
fn mount(backing: &Path, dir: &Path, delay_ms: u64, extra: &[&str]) -> Mount {
    let logs = dir.parent().expect("a mount point with a parent");
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("nfsim");
    Mount::start(
        &tests::bin::polycrawl(),
        name,
        backing,
        dir,
        delay_ms,
        extra,
        logs,
    )
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn two_clients_see_each_other_after_the_delay_and_themselves_at_once() {
    if let Some(why) = nfsim::unusable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let backing = tmp.path().join("export");
    fs::create_dir(&backing).unwrap();
    let a = mount(&backing, &tmp.path().join("a"), DELAY_MS, &[]);
    let b = mount(&backing, &tmp.path().join("b"), DELAY_MS, &[]);

    // Written through a: a sees it at once, b only after the delay.
    let t0 = Instant::now();
    fs::write(a.path("one"), b"hello").unwrap();
    assert_eq!(fs::read(a.path("one")).unwrap(), b"hello");
    assert_eq!(names(a.dir()), ["one"]);
    assert!(names(b.dir()).is_empty(), "b listed a's file at once");
    assert_eq!(
        fs::metadata(b.path("one")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    test_support::wait::until(
        "b to list a's file once the delay has passed",
        Duration::from_millis(DELAY_MS + 3000).saturating_sub(t0.elapsed()),
        || !names(b.dir()).is_empty(),
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(DELAY_MS - 100),
        "b saw the file after {:?}",
        t0.elapsed()
    );
    assert_eq!(fs::read(b.path("one")).unwrap(), b"hello");

    // A file dropped straight into the export is foreign to both.
    fs::write(backing.join("direct"), b"x").unwrap();
    assert!(!names(a.dir()).contains(&"direct".to_owned()));
    test_support::wait::until(
        "a to list the file dropped into the export",
        Duration::from_millis(DELAY_MS + 3000),
        || names(a.dir()).contains(&"direct".to_owned()),
    );

    // Directories and renames made by a client are its own at once.
    fs::create_dir(a.path("claimed")).unwrap();
    fs::rename(a.path("one"), a.path("claimed/one")).unwrap();
    assert_eq!(fs::read(a.path("claimed/one")).unwrap(), b"hello");
    // b still holds the old name; its rename loses the race with ENOENT.
    let err = fs::rename(b.path("one"), b.path("mine")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(backing.join("claimed/one").exists());
    assert!(!backing.join("mine").exists());

    // Attributes are cached for the delay: a's append is not seen in b's size yet.
    let before = fs::metadata(b.path("direct")).unwrap().len();
    fs::write(a.path("direct"), b"longer content").unwrap();
    assert_eq!(fs::metadata(b.path("direct")).unwrap().len(), before);
    test_support::wait::until(
        "b to see a's new size once its cached attributes expire",
        Duration::from_millis(DELAY_MS + 3000),
        || fs::metadata(b.path("direct")).is_ok_and(|m| m.len() == 14),
    );
}

#[test]
fn faults_are_injected_on_demand() {
    if let Some(why) = nfsim::unusable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let backing = tmp.path().join("export");
    fs::create_dir(&backing).unwrap();
    fs::write(backing.join("f"), b"data").unwrap();
    let stale = mount(
        &backing,
        &tmp.path().join("stale"),
        0,
        &["--estale-per-million", "1000000"],
    );
    let eio = mount(
        &backing,
        &tmp.path().join("eio"),
        0,
        &["--eio-per-million", "1000000"],
    );
    let err = fs::read(stale.path("f")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(nix::libc::ESTALE), "{err}");
    let err = fs::read(eio.path("f")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(nix::libc::EIO), "{err}");
    let err = fs::read_dir(eio.dir()).map(|_| ()).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(nix::libc::EIO), "{err}");
    let err = fs::rename(eio.path("f"), eio.path("g")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(nix::libc::EIO), "{err}");
    // Nothing was lost: the export still holds the file, untouched.
    assert_eq!(fs::read(backing.join("f")).unwrap(), b"data");
}

/// Regression: a spool consumer over NFS whose start, listing or claim rename fails
/// with EIO used to
/// return an error that ended the consumer (the application exits); it is a
/// passing fault: nothing is claimed this round and the file stays for the next scan.
#[test]
fn spool_claims_treat_eio_as_try_again_and_lose_nothing() {
    use spool::name::{FileKind, Priority};
    if let Some(why) = nfsim::unusable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let backing = tmp.path().join("export");
    fs::create_dir(&backing).unwrap();
    let local = spool::SpoolDir::open(backing.join("pages")).unwrap();
    let publisher = spool::publish::Publisher::new(local.clone(), "dl-1".parse().unwrap()).unwrap();
    publisher
        .publish(Priority::NORMAL, FileKind::PageBatch, b"batch")
        .unwrap();
    let name = local.list().unwrap().remove(0);
    let faulty = mount(
        &backing,
        &tmp.path().join("client"),
        0,
        &["--eio-per-million", "1000000"],
    );
    let dir = spool::SpoolDir::open(faulty.path("pages")).unwrap();
    let consumer = spool::claim::Consumer::new(dir, "app-1".parse().unwrap()).unwrap();
    assert!(consumer.claim(name).unwrap().is_none());
    assert!(consumer.claim_batch(8).unwrap().is_empty());
    drop(faulty);
    // The file is still waiting, whole, and a healthy consumer gets it.
    let healthy = spool::claim::Consumer::new(local, "app-2".parse().unwrap()).unwrap();
    let got = healthy.claim_batch(8).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].read().unwrap(), b"batch");
}
