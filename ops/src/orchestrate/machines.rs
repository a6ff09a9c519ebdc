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
//! interface here uses), the namespaces (`pcd<pid>-<machine>`) and the mounts;
//! dropping [`Machines`] unmounts (SIGTERM to each nfsim, `fusermount3 -u -z` if
//! still mounted) and removes the namespaces and the bridge. The processes running
//! inside must be stopped first. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN),
//! `ip` (iproute2), `/dev/fuse` and `fusermount3`; without them `create` says
//! which is missing.
//!
//! A demo killed with SIGKILL cannot clean up: its namespaces and bridge stay, and
//! its mounts stay behind as dead FUSE mounts (their nfsim died with the demo).
//! [`remove_stale`], run by every `polycrawl demo` before it starts, removes the
//! namespaces, bridges and veths named `pcd<PID>...` whose PID no longer runs,
//! and [`unmount_dead`] the dead mounts under the demo's own `<out>/mnt`.
//!
//! This module must never touch a namespace, interface, route or mount it did not
//! make (a stale one: made by a demo, by its name, whose maker is dead), nor
//! change the root namespace's routes or global sysctls.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::child::Child;

/// How long a mount may take to appear.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long an nfsim gets to unmount after SIGTERM.
const UNMOUNT_GRACE: Duration = Duration::from_secs(5);

/// The prefix of every name this module gives: the bridge `pcd<PID>`, namespaces
/// `pcd<PID>-<role>`, veths `pcdv<PID>x<I>` (and, inside a namespace, `pcdp...`).
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
    veth: String,
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

/// The machines of a run, removed on drop.
#[derive(Debug)]
pub struct Machines {
    bridge: String,
    gateway: Ipv4Addr,
    placement: Placement,
    nfsims: Vec<Child>,
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running ip {} (is iproute2 installed?)", args.join(" ")))?;
    anyhow::ensure!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// Writes sysctl `key` (under /proc/sys) inside namespace `netns`, or here.
fn sysctl(netns: Option<&str>, key: &str, value: &str) -> anyhow::Result<()> {
    let path = format!("/proc/sys/{key}");
    match netns {
        None => std::fs::write(&path, value).with_context(|| format!("setting {path}")),
        Some(ns) => ip(&[
            "netns",
            "exec",
            ns,
            "sh",
            "-c",
            &format!("echo {value} > {path}"),
        ]),
    }
}

/// Whether `dir` is a mount point now.
fn mounted(dir: &Path) -> bool {
    let want = dir.to_string_lossy();
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|info| {
        info.lines()
            .any(|l| l.split(' ').nth(4) == Some(want.as_ref()))
    })
}

/// What is missing to simulate machines here, if anything.
fn check_prerequisites() -> anyhow::Result<()> {
    anyhow::ensure!(
        nix::unistd::geteuid().is_root(),
        "--machines needs root (network namespaces and FUSE mounts)"
    );
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .context("--machines needs /dev/fuse (the NFS stand-in is a FUSE file system)")?;
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("fusermount3").exists()));
    anyhow::ensure!(
        found,
        "--machines needs fusermount3 (apt-get install fuse3; ops/setup.sh does)"
    );
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
        let pid = std::process::id();
        let used = Command::new("ip")
            .args(["-4", "-o", "addr"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let a = 200 + (pid % 50) as u8;
        let mut b = (pid / 50 % 256) as u8;
        while used.contains(&format!(" 10.{a}.{b}.")) {
            b = b.wrapping_add(1);
        }
        let bridge = format!("{PREFIX}{pid}");
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        let mut machines = Machines {
            bridge,
            gateway: Ipv4Addr::new(10, a, b, 1),
            placement: Placement {
                export: export.to_owned(),
                machines: Vec::new(),
            },
            nfsims: Vec::new(),
        };
        machines.setup_bridge()?;
        for (i, role) in Machines::roles(systems).into_iter().enumerate() {
            let addr = Ipv4Addr::new(10, a, b, (i + 2) as u8);
            machines.add(&role, addr, &out.join("mnt").join(&role))?;
        }
        for i in 0..machines.placement.machines.len() {
            machines.mount(i, delay_ms, logs)?;
        }
        Ok(machines)
    }

    fn setup_bridge(&self) -> anyhow::Result<()> {
        ip(&[
            "addr",
            "add",
            &format!("{}/24", self.gateway),
            "dev",
            &self.bridge,
        ])?;
        ip(&["link", "set", &self.bridge, "up"])?;
        sysctl(
            None,
            &format!("net/ipv4/conf/{}/route_localnet", self.bridge),
            "1",
        )
    }

    /// Namespace `pcd<pid>-<role>` at `addr`, with a veth into the bridge, its
    /// loopback up and every 127.x but 127.0.0.1 routed to the root namespace.
    fn add(&mut self, role: &str, addr: Ipv4Addr, mount: &Path) -> anyhow::Result<()> {
        let pid = std::process::id();
        let i = self.placement.machines.len();
        let netns = format!("{PREFIX}{pid}-{role}");
        let veth = format!("{PREFIX}v{pid}x{i}");
        let peer = format!("{PREFIX}p{pid}x{i}");
        ip(&["netns", "add", &netns])?;
        self.placement.machines.push(Machine {
            role: role.to_owned(),
            netns: netns.clone(),
            addr,
            mount: mount.to_owned(),
            veth: veth.clone(),
        });
        ip(&["link", "add", &veth, "type", "veth", "peer", "name", &peer])?;
        ip(&["link", "set", &peer, "netns", &netns])?;
        ip(&["link", "set", &veth, "master", &self.bridge])?;
        ip(&["link", "set", &veth, "up"])?;
        let n = |args: &[&str]| {
            let mut all = vec!["-n", netns.as_str()];
            all.extend_from_slice(args);
            ip(&all)
        };
        n(&["link", "set", &peer, "name", "eth0"])?;
        n(&["addr", "add", &format!("{addr}/24"), "dev", "eth0"])?;
        n(&["link", "set", "lo", "up"])?;
        n(&["link", "set", "eth0", "up"])?;
        for key in ["all", "eth0"] {
            sysctl(
                Some(&netns),
                &format!("net/ipv4/conf/{key}/route_localnet"),
                "1",
            )?;
            sysctl(Some(&netns), &format!("net/ipv4/conf/{key}/rp_filter"), "0")?;
        }
        n(&[
            "route",
            "del",
            "local",
            "127.0.0.0/8",
            "dev",
            "lo",
            "table",
            "local",
        ])?;
        n(&[
            "route",
            "add",
            "127.0.0.0/8",
            "via",
            &self.gateway.to_string(),
            "dev",
            "eth0",
            "src",
            &addr.to_string(),
        ])
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
        self.gateway
    }
}

/// The pid of the demo that made `name` (a namespace `pcd<PID>-<role>`, a bridge
/// `pcd<PID>` or a veth `pcdv<PID>x<I>`), if this module named it.
fn maker(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (rest, veth) = match rest.strip_prefix('v') {
        Some(rest) => (rest, true),
        None => (rest, false),
    };
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (pid, tail) = rest.split_at(digits);
    let ours = if veth {
        tail.strip_prefix('x')
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
    } else {
        tail.is_empty() || tail.len() > 1 && tail.starts_with('-')
    };
    if pid.is_empty() || !ours {
        return None;
    }
    pid.parse().ok()
}

/// Whether process `pid` runs (in this pid namespace).
fn running(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The first word of each line of `ip ARGS` (names: `ip netns list`), or of the
/// second field for `ip -o link` (`3: pcd12: <...>`, a veth as `pcdv12x0@if5`).
fn ip_names(args: &[&str]) -> Vec<String> {
    let Ok(out) = Command::new("ip").args(args).stdin(Stdio::null()).output() else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let link = args.contains(&"link");
    text.lines()
        .filter_map(|l| {
            let word = if link {
                l.split_whitespace().nth(1)?.trim_end_matches(':')
            } else {
                l.split_whitespace().next()?
            };
            Some(word.split('@').next().unwrap_or(word).to_owned())
        })
        .collect()
}

/// Removes what demos killed before they could clean up left (see the module
/// docs): namespaces, then veths and bridges named by this module whose maker no
/// longer runs. Returns what it removed (nothing when there is nothing to remove
/// or `ip` is missing); a removal that fails is left, with a line on stderr.
pub fn remove_stale() -> Vec<String> {
    let stale = |name: &String| maker(name).is_some_and(|pid| !running(pid));
    let mut removed = Vec::new();
    for ns in ip_names(&["netns", "list"]).iter().filter(|n| stale(n)) {
        match ip(&["netns", "del", ns]) {
            Ok(()) => removed.push(format!("namespace {ns}")),
            Err(e) => eprintln!("demo: cannot remove a killed demo's namespace: {e:#}"),
        }
    }
    // A veth goes with its peer's namespace; one left over, and the bridges.
    for link in ip_names(&["-o", "link", "show"])
        .iter()
        .filter(|n| stale(n))
    {
        match ip(&["link", "del", link]) {
            Ok(()) => removed.push(format!("link {link}")),
            Err(e) => eprintln!("demo: cannot remove a killed demo's link: {e:#}"),
        }
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
        let done = Command::new("fusermount3")
            .arg("-u")
            .arg("-z")
            .arg(&point)
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if done {
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
                let _ = Command::new("fusermount3")
                    .arg("-u")
                    .arg("-z")
                    .arg(&m.mount)
                    .status();
            }
        }
        self.nfsims.clear();
        for m in self.placement.machines.drain(..).rev() {
            let _ = ip(&["link", "del", &m.veth]);
            let _ = ip(&["netns", "del", &m.netns]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_this_module_gives_have_a_maker() {
        assert_eq!(maker("pcd1234"), Some(1234));
        assert_eq!(maker("pcd1234-mgr0"), Some(1234));
        assert_eq!(maker("pcdv1234x3"), Some(1234));
        // The tests' namespaces (`pc-PID-ROLE`, `pcbPID`), other names, and
        // names that only look alike.
        for name in [
            "pc-1234-mgr0",
            "pcb1234",
            "pcv1234x0",
            "pcd",
            "pcd-mgr0",
            "pcd1234-",
            "pcd1234x",
            "pcdv1234",
            "pcdv1234x",
            "pcdp1234x0",
            "pcdx1",
            "eth0",
            "docker0",
        ] {
            assert_eq!(maker(name), None, "{name}");
        }
    }

    #[test]
    fn a_running_maker_is_not_stale() {
        assert!(running(std::process::id()));
        assert!(!running(u32::MAX));
    }
}
