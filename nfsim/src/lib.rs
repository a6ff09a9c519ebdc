//! The NFS stand-in, `polycrawl nfsim`: for tests on one machine. Each mount is one NFS
//! client machine over a shared backing directory (the "export").
//!
//! What it models of NFS (v3/v4 clients with attribute caching):
//! - Close-to-open for this client's own work: entries created, renamed or removed
//!   through this mount are visible to it at once.
//! - Attribute caching for everyone else's work: a directory entry created elsewhere
//!   (another mount, or the backing directory itself) shows up in this mount's lookups
//!   and listings only `--visibility-delay-ms` after it appeared (its change time), and
//!   attributes (size, mtime) are cached for that long.
//! - No change events: inotify on a FUSE mount sees only this mount's own calls, so
//!   consumers must scan (`use_notify = false`).
//! - Stale handles: an inode number whose file was replaced or renamed away elsewhere
//!   answers `ESTALE`; a rename of a file another client already renamed answers
//!   `ENOENT`, as the server would.
//! - Injected faults: `EIO` and `ESTALE` on open, read, readdir and rename, drawn from
//!   a seeded generator at the given odds per million calls.
//!
//! What it does not model: negative lookup caching beyond the delay, delayed
//! write-back (writes reach the backing directory at once; NFS flushes on close
//! anyway), server reboots and grace periods, locks (NLM), hard and symbolic links,
//! extended attributes, and latency. It must never change the backing directory on its
//! own behalf, and must never be used outside tests and local experiments: it is not
//! a network file system.

pub mod fs;
pub mod mount;
pub mod view;

use std::path::PathBuf;
use std::time::Duration;

use fuser::{Config, MountOption, SessionACL};

use self::fs::NfsFs;
use self::view::Faults;

/// Why a mount could not be made, served or ended.
#[derive(Debug, thiserror::Error)]
pub enum NfsimError {
    /// Flags that make no sense.
    #[error("{0}")]
    Flags(&'static str),
    /// The backing directory cannot be used.
    #[error("backing directory {}: {source}", path.display())]
    Backing {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// FUSE refused the mount.
    #[error("mounting {} (needs /dev/fuse and fusermount3: apt-get install fuse3): {source}", path.display())]
    Mount {
        /// The mount point.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Waiting for signals, unmounting or serving failed.
    #[error("{what}: {source}")]
    Serve {
        /// What was being done.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The lazy unmount at the end did not succeed.
    #[error("fusermount3 -u -z {} failed ({status})", path.display())]
    Unmount {
        /// The mount point.
        path: PathBuf,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
}

/// `polycrawl nfsim`'s flags.
#[derive(Debug, clap::Args)]
pub struct NfsimArgs {
    /// The shared directory (the export) every mount passes through to.
    #[arg(long, value_name = "DIR")]
    pub backing: PathBuf,
    /// Where to mount this client's view (an existing, empty directory).
    #[arg(long, value_name = "DIR")]
    pub mount: PathBuf,
    /// How long entries made elsewhere stay invisible, and attributes stay cached.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub visibility_delay_ms: u64,
    /// EIO on this many of every million open, read, readdir and rename calls.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub eio_per_million: u32,
    /// ESTALE on this many of every million open, read, readdir and rename calls.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub estale_per_million: u32,
    /// The fault generator's seed (the same seed draws the same faults).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// FUSE worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

/// Mounts, serves until SIGTERM or SIGINT (or an outside `umount`), then unmounts.
pub fn run(args: NfsimArgs) -> Result<(), NfsimError> {
    if args.eio_per_million + args.estale_per_million > 1_000_000 {
        return Err(NfsimError::Flags(
            "--eio-per-million plus --estale-per-million must be at most 1000000",
        ));
    }
    let faults = Faults::new(args.eio_per_million, args.estale_per_million, args.seed);
    let fs = NfsFs::new(
        &args.backing,
        Duration::from_millis(args.visibility_delay_ms),
        faults,
    )
    .map_err(|source| NfsimError::Backing {
        path: args.backing.clone(),
        source,
    })?;
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("nfsim".to_owned()),
        MountOption::Subtype("nfsim".to_owned()),
        MountOption::AutoUnmount,
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    config.acl = SessionACL::All;
    config.n_threads = Some(args.threads.max(1));
    let session =
        fuser::spawn_mount(fs, &args.mount, &config).map_err(|source| NfsimError::Mount {
            path: args.mount.clone(),
            source,
        })?;
    tracing::info!(
        backing = %args.backing.display(),
        mount = %args.mount.display(),
        delay_ms = args.visibility_delay_ms,
        "nfsim mounted"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| NfsimError::Serve {
            what: "starting the signal runtime",
            source,
        })?;
    let served_until_unmount = runtime
        .block_on(async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tokio::select! {
                    _ = term.recv() => return Ok::<bool, std::io::Error>(false),
                    _ = tokio::signal::ctrl_c() => return Ok(false),
                    _ = tick.tick() => if session.guard.is_finished() { return Ok(true) },
                }
            }
        })
        .map_err(|source| NfsimError::Serve {
            what: "waiting for a signal",
            source,
        })?;
    if !served_until_unmount {
        // fuser's own unmount of an auto-unmount mount only closes fusermount3's
        // socket, which does not end the session: the workers stay blocked reading
        // /dev/fuse and the join never returns. A lazy unmount ends the
        // connection, so the workers see it and the session ends.
        let status = std::process::Command::new("fusermount3")
            .arg("-u")
            .arg("-z")
            .arg(&args.mount)
            .status()
            .map_err(|source| NfsimError::Serve {
                what: "running fusermount3 -u -z",
                source,
            })?;
        if !status.success() {
            return Err(NfsimError::Unmount {
                path: args.mount,
                status,
            });
        }
    }
    session.join().map_err(|source| NfsimError::Serve {
        what: "serving the mount",
        source,
    })?;
    tracing::info!(mount = %args.mount.display(), "nfsim unmounted");
    Ok(())
}
