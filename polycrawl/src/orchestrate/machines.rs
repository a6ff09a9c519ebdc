//! `polycrawl demo --machines`: every crawling system's processes on machines of
//! their own, simulated on this one: a network namespace per machine, with its own
//! address on a bridge, and its own NFS-like view of the shared spool (`polycrawl
//! nfsim`: other machines' new files visible only after a delay, no change events
//! across machines).
//!
//! Per crawling system `S`, three machines (Polybot Figure 3):
//!
//! | machine | runs |
//! |---|---|
//! | `mgrS` | the manager (listening on the machine's address) and the resolver |
//! | `dlS` | the system's downloaders |
//! | `appS` | the application parts the system serves |
//!
//! The export (`<out>/export`) holds every system's spool; machine `M` mounts it
//! at `<out>/mnt/M` and its processes are given paths under that mount only.
//! State, repositories and logs stay local (`<out>/state`, `<out>/repository-pI`,
//! `<out>/logs`). websim keeps serving on the root namespace's 127.x, which the
//! machines reach through the bridge (`route_localnet`); its DNS must not be on
//! 127.0.0.1, which is every machine's own loopback.
//!
//! [`Machines::create`] makes the bridge (`pcd<pid>`, on a `10.A.B.0/24` no
//! interface here uses) and the namespaces (`pcd<pid>-<machine>`) with the
//! workspace's one namespace harness, [`netns`] (the multi-machine
//! tests use it too), and the mounts; dropping [`Machines`] unmounts (SIGTERM to
//! each nfsim, `fusermount3 -u -z` if still mounted) and then the harness removes
//! the namespaces and the bridge. The processes running inside must be stopped
//! first. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN),
//! `ip` (iproute2), `/dev/fuse` and `fusermount3`; without them `create` says
//! which is missing.
//!
//! A demo killed with SIGKILL cannot clean up: its namespaces and bridge stay, and
//! its mounts stay behind as dead FUSE mounts (their nfsim died with the demo).
//! [`remove_stale`], run by every `polycrawl demo` before it starts, removes the
//! namespaces, bridges and veths named `pcd<PID>...` whose PID no longer runs
//! ([`netns::remove_stale`]), and [`unmount_dead`] the dead mounts
//! under the demo's own `<out>/mnt`.
//!
//! This module must never touch a namespace, interface, route or mount it did not
//! make (a stale one: made by a demo, by its name, whose maker is dead), nor
//! change the root namespace's routes or global sysctls.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::netns::{self, Net};
use anyhow::Context;
use nfsim::mount::{self as nfsim_mount, mounted};

use super::child::Child;

/// How long a mount may take to appear.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long an nfsim gets to unmount after SIGTERM.
const UNMOUNT_GRACE: Duration = Duration::from_secs(5);

/// The prefix of every name the demo's machines get (see [`netns`]):
/// the bridge `pcd<PID>`, namespaces `pcd<PID>-<role>`, veths `pcdv<PID>x<I>`.
const PREFIX: &str = "pcd";

/// One simulated machine.
#[derive(Debug, Clone)]
pub struct Machine {
    /// Its role: `mgrS`, `dlS` or `appS`.
    pub role: String,
    /// The network namespace (`ip netns` name).
    pub netns: String,
    /// Its address on the bridge.
    pub addr: Ipv4Addr,
    /// Where it mounts the export.
    pub mount: PathBuf,
}

/// Where each process runs and how a machine sees the export: what
/// [`super::system::System::start`] needs to place the processes.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The shared directory every machine mounts.
    pub export: PathBuf,
    /// The machines.
    pub machines: Vec<Machine>,
}

impl Placement {
    /// The machine of `role`.
    ///
    /// # Panics
    /// If there is none (a role of [`Machines::roles`] always exists).
    pub fn get(&self, role: &str) -> &Machine {
        self.machines
            .iter()
            .find(|m| m.role == role)
            .unwrap_or_else(|| panic!("no machine {role}"))
    }

    /// `path` (under the export) as machine `m` sees it, through its mount.
    pub fn view(&self, m: &Machine, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.export) {
            Ok(rel) => m.mount.join(rel),
            Err(_) => path.to_owned(),
        }
    }
}

/// The machines of a run: their mounts are undone on drop, then `net` removes the
/// namespaces and the bridge (fields drop after `Drop::drop`).
#[derive(Debug)]
pub struct Machines {
    placement: Placement,
    nfsims: Vec<Child>,
    net: Net,
}

/// What is missing to simulate machines here, if anything.
fn check_prerequisites() -> anyhow::Result<()> {
    anyhow::ensure!(
        nix::unistd::geteuid().is_root(),
        "--machines needs root (network namespaces and FUSE mounts)"
    );
    if let Some(why) = nfsim_mount::unusable() {
        anyhow::bail!("--machines needs FUSE for its NFS stand-in: {why}");
    }
    Ok(())
}

impl Machines {
    /// The roles of `systems` crawling systems' machines, in creation order.
    pub fn roles(systems: u32) -> Vec<String> {
        (0..systems)
            .flat_map(|s| [format!("mgr{s}"), format!("dl{s}"), format!("app{s}")])
            .collect()
    }

    /// Makes the bridge, a namespace per machine of `systems` systems and the
    /// machines' mounts of `export` under `<out>/mnt`, with `delay_ms` of
    /// visibility delay; nfsim's logs go to `logs`.
    ///
    /// # Errors
    /// A missing prerequisite, or an `ip` or mount failure (what was made is
    /// removed again).
    pub fn create(
        out: &Path,
        export: &Path,
        systems: u32,
        delay_ms: u64,
        logs: &Path,
    ) -> anyhow::Result<Machines> {
        check_prerequisites()?;
        let mut net = Net::new(PREFIX).context("making the machines' bridge")?;
        let mut placed = Vec::new();
        for role in Machines::roles(systems) {
            let ns = net
                .add(&role)
                .with_context(|| format!("making machine {role}"))?;
            placed.push(Machine {
                mount: out.join("mnt").join(&role),
                role,
                netns: ns.name,
                addr: ns.addr,
            });
        }
        let mut machines = Machines {
            placement: Placement {
                export: export.to_owned(),
                machines: placed,
            },
            nfsims: Vec::new(),
            net,
        };
        for i in 0..machines.placement.machines.len() {
            machines.mount(i, delay_ms, logs)?;
        }
        Ok(machines)
    }

    /// Mounts the export at machine `i`'s mount point and waits for it.
    fn mount(&mut self, i: usize, delay_ms: u64, logs: &Path) -> anyhow::Result<()> {
        let m = &self.placement.machines[i];
        std::fs::create_dir_all(&m.mount)
            .with_context(|| format!("creating {}", m.mount.display()))?;
        let exe = std::env::current_exe().context("finding the polycrawl binary")?;
        let mut cmd = Command::new(exe);
        cmd.arg("nfsim")
            .arg("--backing")
            .arg(&self.placement.export)
            .arg("--mount")
            .arg(&m.mount)
            .arg("--visibility-delay-ms")
            .arg(delay_ms.to_string());
        let mut child = Child::spawn(&format!("nfsim-{}", m.role), cmd, logs)?;
        let deadline = Instant::now() + MOUNT_TIMEOUT;
        while !mounted(&m.mount) {
            if let Some(status) = child.exited()? {
                anyhow::bail!(
                    "nfsim for {} exited ({status}) before mounting{}",
                    m.role,
                    child.log_tail(10)
                );
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "nfsim for {} did not mount {} within {MOUNT_TIMEOUT:?}",
                m.role,
                m.mount.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.nfsims.push(child);
        Ok(())
    }

    /// Where the processes go.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The bridge's address (the root namespace, where websim serves).
    pub fn gateway(&self) -> Ipv4Addr {
        self.net.gateway()
    }
}

/// Removes what demos killed before they could clean up left (see the module
/// docs): namespaces, then veths and bridges named `pcd<PID>...` whose maker no
/// longer runs. Returns what it removed (nothing when there is nothing to remove
/// or `ip` is missing); a removal that fails is left, with a line on stderr.
pub fn remove_stale() -> Vec<String> {
    let (removed, failed) = netns::remove_stale(PREFIX);
    for e in failed {
        eprintln!("demo: cannot remove what a killed demo left: {e}");
    }
    removed
}

/// Unmounts (lazily) every FUSE mount under `mnt` whose server is gone (a killed
/// demo's nfsim): such a mount answers "transport endpoint is not connected" and
/// cannot be removed. Returns the mount points it unmounted.
pub fn unmount_dead(mnt: &Path) -> Vec<PathBuf> {
    let Ok(mnt) = mnt.canonicalize() else {
        return Vec::new(); // Not there: nothing mounted.
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut unmounted = Vec::new();
    for point in info.lines().filter_map(|l| l.split(' ').nth(4)) {
        let point = PathBuf::from(point);
        let dead =
            std::fs::metadata(&point).is_err_and(|e| e.kind() == std::io::ErrorKind::NotConnected);
        if !point.starts_with(&mnt) || !dead {
            continue;
        }
        if nfsim_mount::unmount_lazily(&point) {
            unmounted.push(point);
        } else {
            eprintln!("demo: cannot unmount the dead mount {}", point.display());
        }
    }
    unmounted
}

impl Drop for Machines {
    fn drop(&mut self) {
        for (nfsim, m) in self.nfsims.iter_mut().zip(&self.placement.machines) {
            nfsim.terminate();
            let _ = nfsim.wait_or_kill(Instant::now() + UNMOUNT_GRACE);
            if mounted(&m.mount) {
                nfsim_mount::unmount_lazily(&m.mount);
            }
        }
        self.nfsims.clear();
        // `net` removes the namespaces and the bridge when it drops, next.
    }
}
