//! Binding: one listener per address for a scheme, all on the same port, and the
//! file-descriptor limit that thousands of sockets need.
//!
//! With port 0, the first address gets a port from the kernel and every other
//! address is bound to that same port; if one of them is taken, everything is
//! closed and the whole set is tried again with a new port (up to
//! [`PORT_ATTEMPTS`] times).
//!
//! This module must never bind outside 127.0.0.0/8: [`bind_all`] refuses any other
//! address. O(addresses) sockets and time.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use tokio::net::{TcpListener, TcpSocket};

/// How many ports `bind_all` tries with port 0.
pub const PORT_ATTEMPTS: usize = 64;
/// Listen backlog of every listener.
pub const BACKLOG: u32 = 1024;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the new soft limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(io::Error::from)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(io::Error::from)?;
    }
    Ok(hard.max(soft))
}

fn bind_one(addr: Ipv4Addr, port: u16) -> io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::V4(SocketAddrV4::new(addr, port)))?;
    socket.listen(BACKLOG)
}

/// Binds `port` (0: a port free on all of them) on every address in `addrs`; returns
/// the port and the listeners in the order of `addrs`. Must run inside a tokio
/// runtime.
pub fn bind_all(addrs: &[Ipv4Addr], port: u16) -> io::Result<(u16, Vec<TcpListener>)> {
    if let Some(bad) = addrs.iter().find(|a| !a.is_loopback()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("websim binds only 127.0.0.0/8, not {bad}"),
        ));
    }
    let Some(&first_addr) = addrs.first() else {
        return Ok((port, Vec::new()));
    };
    let context = |addr: Ipv4Addr, port: u16, e: io::Error| {
        io::Error::new(e.kind(), format!("binding {addr}:{port}: {e}"))
    };
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        let first = bind_one(first_addr, port).map_err(|e| context(first_addr, port, e))?;
        let chosen = first.local_addr()?.port();
        let mut listeners = Vec::with_capacity(addrs.len());
        listeners.push(first);
        let mut clash = None;
        for &addr in &addrs[1..] {
            match bind_one(addr, chosen) {
                Ok(l) => listeners.push(l),
                Err(e) if port == 0 && e.kind() == io::ErrorKind::AddrInUse => {
                    clash = Some(context(addr, chosen, e));
                    break;
                }
                Err(e) => return Err(context(addr, chosen, e)),
            }
        }
        match clash {
            None => return Ok((chosen, listeners)),
            Some(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free port")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn binds_one_port_on_many_addresses() {
        let addrs: Vec<Ipv4Addr> = (0..20).map(|k| Ipv4Addr::new(127, 77, 3, 1 + k)).collect();
        let (port, ls) = bind_all(&addrs, 0).unwrap();
        assert_eq!(ls.len(), 20);
        for (l, a) in ls.iter().zip(&addrs) {
            assert_eq!(
                l.local_addr().unwrap(),
                SocketAddr::V4(SocketAddrV4::new(*a, port))
            );
        }
        // A second set avoids the taken port.
        let (port2, _ls2) = bind_all(&addrs, 0).unwrap();
        assert_ne!(port, port2);
        assert!(bind_all(&[Ipv4Addr::new(10, 0, 0, 1)], 0).is_err());
    }
}
