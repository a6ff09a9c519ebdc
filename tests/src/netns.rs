//! Network namespaces for multi-machine tests: each "machine" is a namespace with its
//! own address on a bridge in the root namespace, and reaches the root namespace's
//! 127.0.0.0/8 (where websim serves its hosts and DNS) through that bridge.
//!
//! [`Net::new`] makes the bridge (`10.A.B.1/24`, `route_localnet=1`), [`Net::add`] a
//! namespace `pc-PID-ROLE` with a veth pair into the bridge, address `10.A.B.N`, its own
//! loopback up, and its local `127.0.0.0/8` route narrowed to `127.0.0.1` so every other
//! 127.x address goes to the root namespace (`route_localnet=1` on both ends lets
//! loopback addresses cross). [`Net::command`] runs a program inside one (`ip netns
//! exec`, which execs it: the child's pid is the program's). Dropping the [`Net`]
//! removes namespaces, veths and the bridge, also when the test panicked; processes
//! running inside must be ended first (their guards dropped before the `Net`).
//!
//! [`Isolated`] is a namespace with only its own loopback, for commands that must
//! not reach anything at all.
//!
//! This module must never touch anything it did not create: no change to the root
//! namespace's routes or global sysctls, only to its own bridge.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// One namespace ("machine").
#[derive(Debug, Clone)]
pub struct Ns {
    /// The `ip netns` name.
    pub name: String,
    /// The role it plays (manager, downloader-a, ...).
    pub role: String,
    /// Its address on the bridge.
    pub addr: Ipv4Addr,
    veth_root: String,
}

/// A bridge and the namespaces on it.
#[derive(Debug)]
pub struct Net {
    bridge: String,
    net: [u8; 3],
    namespaces: Vec<Ns>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn must(args: &[&str]) {
    if let Err(e) = ip(args) {
        panic!("{e}");
    }
}

/// Why namespaces cannot be made here, if they cannot (not root, no `ip`, no
/// permission): tests print it and skip.
pub fn unusable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: network namespaces need CAP_NET_ADMIN".to_owned());
    }
    let probe = format!("pc-{}-probe", std::process::id());
    match ip(&["netns", "add", &probe]) {
        Ok(()) => {
            let _ = ip(&["netns", "del", &probe]);
            None
        }
        Err(e) => Some(format!("cannot make a network namespace: {e}")),
    }
}

impl Net {
    /// Makes the bridge on a `10.A.B.0/24` no interface here uses yet.
    ///
    /// # Panics
    /// If `ip` fails.
    pub fn new() -> Net {
        let pid = std::process::id();
        let used = Command::new("ip")
            .args(["-4", "-o", "addr"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut b = (pid / 100 % 256) as u8;
        let a = 100 + (pid % 100) as u8;
        while used.contains(&format!(" 10.{a}.{b}.")) {
            b = b.wrapping_add(1);
        }
        let bridge = format!("pcb{pid}");
        must(&["link", "add", &bridge, "type", "bridge"]);
        let net = Net {
            bridge,
            net: [10, a, b],
            namespaces: Vec::new(),
        };
        must(&[
            "addr",
            "add",
            &format!("{}/24", net.gateway()),
            "dev",
            &net.bridge,
        ]);
        must(&["link", "set", &net.bridge, "up"]);
        set_sysctl(
            None,
            &format!("net/ipv4/conf/{}/route_localnet", net.bridge),
            "1",
        );
        net
    }

    /// The bridge's address in the root namespace (where websim listens too, on
    /// 127.x, reached through it).
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.net[0], self.net[1], self.net[2], 1)
    }

    /// Adds namespace `pc-PID-ROLE` at the next address.
    ///
    /// # Panics
    /// If `ip` fails.
    pub fn add(&mut self, role: &str) -> Ns {
        let pid = std::process::id();
        let i = self.namespaces.len() + 2;
        let name = format!("pc-{pid}-{role}");
        let veth_root = format!("pcv{pid}x{i}");
        let addr = Ipv4Addr::new(self.net[0], self.net[1], self.net[2], i as u8);
        must(&["netns", "add", &name]);
        let ns = Ns {
            name: name.clone(),
            role: role.to_owned(),
            addr,
            veth_root: veth_root.clone(),
        };
        self.namespaces.push(ns.clone());
        let tmp_peer = format!("pcp{pid}x{i}");
        must(&[
            "link", "add", &veth_root, "type", "veth", "peer", "name", &tmp_peer,
        ]);
        must(&["link", "set", &tmp_peer, "netns", &name]);
        must(&["link", "set", &veth_root, "master", &self.bridge]);
        must(&["link", "set", &veth_root, "up"]);
        let n = |args: &[&str]| {
            let mut all = vec!["-n", name.as_str()];
            all.extend_from_slice(args);
            must(&all);
        };
        n(&["link", "set", &tmp_peer, "name", "eth0"]);
        n(&["addr", "add", &format!("{addr}/24"), "dev", "eth0"]);
        n(&["link", "set", "lo", "up"]);
        n(&["link", "set", "eth0", "up"]);
        for key in ["all", "eth0"] {
            set_sysctl(
                Some(&name),
                &format!("net/ipv4/conf/{key}/route_localnet"),
                "1",
            );
            set_sysctl(Some(&name), &format!("net/ipv4/conf/{key}/rp_filter"), "0");
        }
        // Only 127.0.0.1 stays local: the rest of 127/8 is the root namespace's.
        n(&[
            "route",
            "del",
            "local",
            "127.0.0.0/8",
            "dev",
            "lo",
            "table",
            "local",
        ]);
        n(&[
            "route",
            "add",
            "127.0.0.0/8",
            "via",
            &self.gateway().to_string(),
            "dev",
            "eth0",
            "src",
            &addr.to_string(),
        ]);
        ns
    }

    /// The namespaces made so far.
    pub fn namespaces(&self) -> &[Ns] {
        &self.namespaces
    }

    /// A command running `program` inside `ns` (`ip netns exec NAME program`).
    pub fn command(&self, ns: &Ns, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns.name]).arg(program);
        cmd
    }
}

/// A namespace with nothing but its own loopback (`pc-PID-ROLE`): whatever runs
/// inside cannot reach any other machine, nor this one's other interfaces.
/// Dropping it removes it (end its processes first).
#[derive(Debug)]
pub struct Isolated {
    /// The `ip netns` name.
    pub name: String,
}

impl Isolated {
    /// Makes the namespace and brings its loopback up.
    ///
    /// # Panics
    /// If `ip` fails.
    pub fn new(role: &str) -> Isolated {
        let name = format!("pc-{}-{role}", std::process::id());
        must(&["netns", "add", &name]);
        let ns = Isolated { name };
        must(&["-n", &ns.name, "link", "set", "lo", "up"]);
        ns
    }

    /// `program` to run inside (`ip netns exec`, which execs it).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name]).arg(program);
        cmd
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

impl Default for Net {
    fn default() -> Self {
        Net::new()
    }
}

/// Writes a sysctl under /proc/sys, inside namespace `ns` if given.
fn set_sysctl(ns: Option<&str>, key: &str, value: &str) {
    let path = format!("/proc/sys/{key}");
    let ok = match ns {
        None => std::fs::write(&path, value).is_ok(),
        Some(ns) => Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c"])
            .arg(format!("echo {value} > {path}"))
            .status()
            .is_ok_and(|s| s.success()),
    };
    assert!(ok, "setting {path} = {value} in {ns:?}");
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in self.namespaces.drain(..).rev() {
            let _ = ip(&["link", "del", &ns.veth_root]);
            let _ = ip(&["netns", "del", &ns.name]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

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
            let mut net = Net::new();
            let a = net.add("a");
            let b = net.add("b");
            a_addr = a.addr;
            names = vec![a.name.clone(), b.name.clone()];
            // a -> root 127.0.77.1 over the bridge.
            let out = net
                .command(&a, "bash")
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
            let ping = net
                .command(&b, "bash")
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
        let left = Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip");
        let left = String::from_utf8_lossy(&left.stdout);
        for n in names {
            assert!(!left.contains(&n), "{n} left behind");
        }
    }
}
