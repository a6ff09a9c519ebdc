//! Network namespaces as machines on one host: the one harness `polycrawl demo
//! --machines` and the multi-machine tests share.
//!
//! [`Net::new`] makes a bridge in the root namespace (`10.A.B.1/24` on a subnet no
//! interface here uses, `route_localnet=1`); [`Net::add`] a namespace with a veth
//! pair into the bridge, address `10.A.B.N`, its own loopback up, and its local
//! `127.0.0.0/8` route narrowed to `127.0.0.1`, so every other 127.x address goes to
//! the root namespace (where websim serves its hosts and DNS; `route_localnet=1` on
//! both ends lets loopback addresses cross). [`Ns::command`] runs a program inside
//! one (`ip netns exec`, which execs it: the child's pid is the program's).
//! Dropping the [`Net`] removes the namespaces, veths and the bridge, also when the
//! caller panicked; processes running inside must be ended first.
//!
//! [`Isolated`] is a namespace with only its own loopback, for commands that must
//! not reach anything at all.
//!
//! **Names.** Every name carries a three-letter prefix chosen by the caller and the
//! maker's pid: the bridge `<P><PID>`, namespaces `<P><PID>-<role>`, veths
//! `<P>v<PID>x<I>` (and, inside a namespace before it is renamed `eth0`,
//! `<P>p<PID>x<I>`). [`remove_stale`] removes what a maker killed with SIGKILL
//! left behind: names of that prefix whose pid no longer runs. The demo uses `pcd`,
//! the tests `pct`.
//!
//! This module must never touch a namespace, interface or route it did not make
//! (or that a dead maker of the same prefix made, by its name), nor change the root
//! namespace's routes or global sysctls: only its own bridge's.

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// What went wrong making a namespace, a bridge or a route.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// `ip` could not be started.
    #[error("running ip {args} (is iproute2 installed?): {source}")]
    Spawn {
        /// The arguments.
        args: String,
        /// Why.
        source: std::io::Error,
    },
    /// `ip` failed.
    #[error("ip {args}: {stderr}")]
    Ip {
        /// The arguments.
        args: String,
        /// What it said.
        stderr: String,
    },
    /// A sysctl of the root namespace could not be written.
    #[error("setting {path} = {value}: {source}")]
    Sysctl {
        /// Under /proc/sys.
        path: String,
        /// The value.
        value: String,
        /// Why.
        source: std::io::Error,
    },
    /// A prefix that would make names this module cannot read back.
    #[error("a name prefix is three lower-case ASCII letters, not {0:?}")]
    Prefix(String),
}

/// One namespace ("machine") on a [`Net`].
#[derive(Debug, Clone)]
pub struct Ns {
    /// The `ip netns` name, `<P><PID>-<role>`.
    pub name: String,
    /// The role it plays (`mgr0`, `dl0`, ...).
    pub role: String,
    /// Its address on the bridge.
    pub addr: Ipv4Addr,
    /// Its end of the veth pair in the root namespace.
    veth: String,
}

impl Ns {
    /// A command running `program` inside (`ip netns exec NAME program`).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        exec_in(&self.name, program)
    }
}

/// A bridge and the namespaces on it, removed on drop.
#[derive(Debug)]
pub struct Net {
    prefix: String,
    bridge: String,
    net: [u8; 3],
    namespaces: Vec<Ns>,
}

impl Net {
    /// Makes bridge `<prefix><PID>` on a `10.A.B.0/24` no interface here uses yet.
    ///
    /// # Errors
    /// A bad prefix, or `ip` or the bridge's sysctl failing (what was made is
    /// removed again).
    pub fn new(prefix: &str) -> Result<Net, NetnsError> {
        check_prefix(prefix)?;
        let pid = std::process::id();
        let used = Command::new("ip")
            .args(["-4", "-o", "addr"])
            .stdin(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let a = 100 + (pid % 150) as u8;
        let mut b = (pid / 150 % 256) as u8;
        while used.contains(&format!(" 10.{a}.{b}.")) {
            b = b.wrapping_add(1);
        }
        let bridge = format!("{prefix}{pid}");
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        let net = Net {
            prefix: prefix.to_owned(),
            bridge,
            net: [10, a, b],
            namespaces: Vec::new(),
        };
        let gateway = format!("{}/24", net.gateway());
        ip(&["addr", "add", &gateway, "dev", &net.bridge])?;
        ip(&["link", "set", &net.bridge, "up"])?;
        let path = format!("/proc/sys/net/ipv4/conf/{}/route_localnet", net.bridge);
        std::fs::write(&path, "1").map_err(|source| NetnsError::Sysctl {
            path,
            value: "1".to_owned(),
            source,
        })?;
        Ok(net)
    }

    /// The bridge's address in the root namespace (where websim listens too, on
    /// 127.x, reached through it).
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.net[0], self.net[1], self.net[2], 1)
    }

    /// Adds namespace `<P><PID>-<role>` at the next address (`.2`, `.3`, ...).
    ///
    /// # Errors
    /// `ip` failing (the namespace is removed with the `Net`).
    pub fn add(&mut self, role: &str) -> Result<Ns, NetnsError> {
        let pid = std::process::id();
        let i = self.namespaces.len();
        let host = u8::try_from(i + 2).map_err(|_| NetnsError::Ip {
            args: format!("netns add {role}"),
            stderr: "a /24 holds at most 253 namespaces".to_owned(),
        })?;
        let ns = Ns {
            name: format!("{}{pid}-{role}", self.prefix),
            role: role.to_owned(),
            addr: Ipv4Addr::new(self.net[0], self.net[1], self.net[2], host),
            veth: format!("{}v{pid}x{i}", self.prefix),
        };
        ip(&["netns", "add", &ns.name])?;
        self.namespaces.push(ns.clone());
        let peer = format!("{}p{pid}x{i}", self.prefix);
        ip(&[
            "link", "add", &ns.veth, "type", "veth", "peer", "name", &peer,
        ])?;
        ip(&["link", "set", &peer, "netns", &ns.name])?;
        ip(&["link", "set", &ns.veth, "master", &self.bridge])?;
        ip(&["link", "set", &ns.veth, "up"])?;
        let inside = |args: &[&str]| {
            let mut all = vec!["-n", ns.name.as_str()];
            all.extend_from_slice(args);
            ip(&all)
        };
        inside(&["link", "set", &peer, "name", "eth0"])?;
        inside(&["addr", "add", &format!("{}/24", ns.addr), "dev", "eth0"])?;
        inside(&["link", "set", "lo", "up"])?;
        inside(&["link", "set", "eth0", "up"])?;
        for key in ["all", "eth0"] {
            for (what, value) in [("route_localnet", "1"), ("rp_filter", "0")] {
                let path = format!("/proc/sys/net/ipv4/conf/{key}/{what}");
                ip(&[
                    "netns",
                    "exec",
                    &ns.name,
                    "sh",
                    "-c",
                    &format!("echo {value} > {path}"),
                ])?;
            }
        }
        // Only 127.0.0.1 stays local: the rest of 127/8 is the root namespace's.
        inside(&[
            "route",
            "del",
            "local",
            "127.0.0.0/8",
            "dev",
            "lo",
            "table",
            "local",
        ])?;
        let gateway = self.gateway().to_string();
        let src = ns.addr.to_string();
        inside(&[
            "route",
            "add",
            "127.0.0.0/8",
            "via",
            &gateway,
            "dev",
            "eth0",
            "src",
            &src,
        ])?;
        Ok(ns)
    }

    /// The namespaces made so far, in order.
    pub fn namespaces(&self) -> &[Ns] {
        &self.namespaces
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in self.namespaces.drain(..).rev() {
            let _ = ip(&["link", "del", &ns.veth]);
            let _ = ip(&["netns", "del", &ns.name]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

/// A namespace with nothing but its own loopback (`<P><PID>-<role>`): whatever runs
/// inside cannot reach any other machine, nor this one's other interfaces. Dropping
/// it removes it (end its processes first).
#[derive(Debug)]
pub struct Isolated {
    /// The `ip netns` name.
    pub name: String,
}

impl Isolated {
    /// Makes the namespace and brings its loopback up.
    ///
    /// # Errors
    /// A bad prefix or `ip` failing.
    pub fn new(prefix: &str, role: &str) -> Result<Isolated, NetnsError> {
        check_prefix(prefix)?;
        let ns = Isolated {
            name: format!("{prefix}{}-{role}", std::process::id()),
        };
        ip(&["netns", "add", &ns.name])?;
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// `program` to run inside (`ip netns exec`, which execs it).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        exec_in(&self.name, program)
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Why namespaces cannot be made here, if they cannot (not root, no `ip`, no
/// permission): a test prints it and skips or fails, the demo refuses.
pub fn unusable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: network namespaces need CAP_NET_ADMIN".to_owned());
    }
    let probe = format!("pcx{}-probe", std::process::id());
    match ip(&["netns", "add", &probe]) {
        Ok(()) => {
            let _ = ip(&["netns", "del", &probe]);
            None
        }
        Err(e) => Some(format!("cannot make a network namespace: {e}")),
    }
}

/// Removes what makers of `prefix` killed before they could clean up left:
/// namespaces, then veths and bridges of that prefix whose maker no longer runs.
/// Returns what it removed and the removals that failed (left as they are);
/// nothing when there is nothing to remove or `ip` is missing.
pub fn remove_stale(prefix: &str) -> (Vec<String>, Vec<NetnsError>) {
    let stale = |name: &String| maker(prefix, name).is_some_and(|pid| !running(pid));
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    for ns in ip_names(&["netns", "list"]).iter().filter(|n| stale(n)) {
        match ip(&["netns", "del", ns]) {
            Ok(()) => removed.push(format!("namespace {ns}")),
            Err(e) => failed.push(e),
        }
    }
    // A veth goes with its peer's namespace; one left over, and the bridges.
    for link in ip_names(&["-o", "link", "show"])
        .iter()
        .filter(|n| stale(n))
    {
        match ip(&["link", "del", link]) {
            Ok(()) => removed.push(format!("link {link}")),
            Err(e) => failed.push(e),
        }
    }
    (removed, failed)
}

fn check_prefix(prefix: &str) -> Result<(), NetnsError> {
    if prefix.len() == 3 && prefix.bytes().all(|b| b.is_ascii_lowercase()) {
        Ok(())
    } else {
        Err(NetnsError::Prefix(prefix.to_owned()))
    }
}

fn exec_in(name: &str, program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", name]).arg(program);
    cmd
}

fn ip(args: &[&str]) -> Result<(), NetnsError> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| NetnsError::Spawn {
            args: args.join(" "),
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetnsError::Ip {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// The pid of the maker of `name` (a namespace `<P><PID>-<role>`, a bridge
/// `<P><PID>` or a veth `<P>v<PID>x<I>`), if this module gave it with `prefix`.
fn maker(prefix: &str, name: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
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
    std::path::Path::new("/proc").join(pid.to_string()).exists()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn only_names_of_the_prefix_have_a_maker() {
        assert_eq!(maker("pcd", "pcd1234"), Some(1234));
        assert_eq!(maker("pcd", "pcd1234-mgr0"), Some(1234));
        assert_eq!(maker("pcd", "pcdv1234x3"), Some(1234));
        assert_eq!(maker("pct", "pct1234-a"), Some(1234));
        for name in [
            "pct1234-mgr0",
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
            assert_eq!(maker("pcd", name), None, "{name}");
        }
    }

    #[test]
    fn a_running_maker_is_not_stale() {
        assert!(running(std::process::id()));
        assert!(!running(u32::MAX));
    }

    #[test]
    fn a_prefix_is_three_lower_case_letters() {
        assert!(check_prefix("pcd").is_ok());
        for bad in ["pc", "pcdd", "PCD", "p-d", "pc1"] {
            assert!(
                matches!(check_prefix(bad), Err(NetnsError::Prefix(_))),
                "{bad}"
            );
        }
    }

    /// Namespaces reach each other on the bridge and the root namespace's 127.x
    /// through it; everything is gone after drop.
    #[test]
    fn namespaces_talk_to_each_other_and_to_root_loopback() {
        if let Some(why) = unusable() {
            eprintln!("SKIPPED: {why}");
            return;
        }
        // A listener on a root-namespace loopback address other than 127.0.0.1.
        let root = TcpListener::bind("127.0.77.1:0").expect("bind 127.0.77.1");
        let root_addr = root.local_addr().expect("addr");
        let server = std::thread::spawn(move || {
            let (mut s, peer) = root.accept().expect("accept");
            s.write_all(b"hi").expect("write");
            peer
        });
        let (names, a_addr);
        {
            let mut net = Net::new("pct").expect("the bridge");
            let a = net.add("a").expect("namespace a");
            let b = net.add("b").expect("namespace b");
            a_addr = a.addr;
            names = vec![a.name.clone(), b.name.clone()];
            // a -> root 127.0.77.1 over the bridge.
            let out = a
                .command("bash")
                .arg("-c")
                .arg(format!(
                    "exec 3<>/dev/tcp/{}/{} && head -c 2 <&3",
                    root_addr.ip(),
                    root_addr.port()
                ))
                .output()
                .expect("running bash in a");
            assert_eq!(
                out.stdout,
                b"hi",
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            // b -> a across the bridge.
            let ping = b
                .command("bash")
                .arg("-c")
                .arg(format!("exec 3<>/dev/tcp/{}/9", a.addr))
                .output()
                .expect("running bash in b");
            // Nothing listens on a:9, so the connection is refused (RST from a):
            // proof that b reached a. A timeout or "no route" would say otherwise.
            let text = String::from_utf8_lossy(&ping.stderr);
            assert!(text.contains("refused"), "b -> a: {text}");
        }
        let peer = server.join().expect("server thread");
        assert_eq!(
            peer.ip(),
            std::net::IpAddr::V4(a_addr),
            "the client came from a"
        );
        let left = ip_names(&["netns", "list"]);
        for n in names {
            assert!(!left.contains(&n), "{n} left behind");
        }
    }

    /// What a maker that no longer runs left is removed; a live maker's is not.
    #[test]
    fn stale_namespaces_of_a_dead_maker_are_removed() {
        if let Some(why) = unusable() {
            eprintln!("SKIPPED: {why}");
            return;
        }
        // A pid that is surely not running: a child that has exited and been reaped.
        let dead = Command::new("true")
            .spawn()
            .and_then(|mut c| c.wait().map(|_| c.id()))
            .expect("running true");
        let stale = format!("pct{dead}-left");
        ip(&["netns", "add", &stale]).expect("a namespace left behind");
        let live = Isolated::new("pct", "alive").expect("a live maker's namespace");
        let (removed, failed) = remove_stale("pct");
        let left = ip_names(&["netns", "list"]);
        let _ = ip(&["netns", "del", &stale]); // Whatever happened, leave nothing.
        assert!(failed.is_empty(), "{failed:?}");
        assert!(
            removed.contains(&format!("namespace {stale}")),
            "{removed:?}"
        );
        assert!(!left.contains(&stale), "{stale} is still there");
        assert!(
            left.contains(&live.name),
            "a live maker's namespace was removed"
        );
    }
}
