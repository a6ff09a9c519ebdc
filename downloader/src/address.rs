//! The address policy: which IP addresses a crawler may connect to.
//!
//! A public crawler must never be turned against the network it runs in: a DNS name
//! that resolves to 127.0.0.1, 10.0.0.5 or 169.254.169.254 (cloud metadata) is refused
//! unless the config sets `allow_private` (the simulated web on loopback needs it).
//! The check runs on the exact [`IpAddr`] the engine connects to, before any socket
//! is opened; IPv4-mapped (`::ffff:a.b.c.d`) and NAT64 (`64:ff9b::/96`) IPv6 addresses
//! are judged by the IPv4 address they embed.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A range of addresses that is not the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade NAT), fc00::/7 and the
    /// deprecated site-local fec0::/10.
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// 224/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 240/4 (reserved for future use).
    Reserved,
}

impl AddressClass {
    /// A lower-case name for logs and errors.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::Unspecified => "unspecified",
            Self::Multicast => "multicast",
            Self::Broadcast => "broadcast",
            Self::Reserved => "reserved",
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The non-public range `ip` falls in, or `None` for a public address.
pub fn classify(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, _, _] = ip.octets();
    Some(if a == 127 {
        AddressClass::Loopback
    } else if a == 10
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 100 && (64..128).contains(&b))
    {
        AddressClass::Private
    } else if a == 169 && b == 254 {
        AddressClass::LinkLocal
    } else if a == 0 {
        AddressClass::Unspecified
    } else if ip.is_broadcast() {
        AddressClass::Broadcast
    } else if (224..240).contains(&a) {
        AddressClass::Multicast
    } else if a >= 240 {
        AddressClass::Reserved
    } else {
        return None;
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let seg = ip.segments();
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return classify_v4(Ipv4Addr::new(a, b, c, d));
    }
    Some(if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if seg[0] & 0xfe00 == 0xfc00 || seg[0] & 0xffc0 == 0xfec0 {
        AddressClass::Private
    } else if seg[0] & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if ip.is_multicast() {
        AddressClass::Multicast
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use AddressClass::*;

    fn class(s: &str) -> Option<AddressClass> {
        classify(s.parse().unwrap())
    }

    #[test]
    fn classifies() {
        let cases = [
            ("127.0.0.1", Some(Loopback)),
            ("127.255.0.9", Some(Loopback)),
            ("10.1.2.3", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.32.0.1", None),
            ("172.15.0.1", None),
            ("192.168.1.1", Some(Private)),
            ("100.64.0.1", Some(Private)),
            ("100.128.0.1", None),
            ("169.254.169.254", Some(LinkLocal)),
            ("0.0.0.0", Some(Unspecified)),
            ("224.0.0.1", Some(Multicast)),
            ("255.255.255.255", Some(Broadcast)),
            ("240.0.0.1", Some(Reserved)),
            ("8.8.8.8", None),
            ("93.184.216.34", None),
            ("::1", Some(Loopback)),
            ("::", Some(Unspecified)),
            ("fc00::1", Some(Private)),
            ("fdff::1", Some(Private)),
            ("fec0::1", Some(Private)),
            ("fe80::1", Some(LinkLocal)),
            ("ff02::1", Some(Multicast)),
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::a9fe:a9fe", Some(LinkLocal)),
            ("64:ff9b::808:808", None),
            ("2001:4860:4860::8888", None),
        ];
        for (ip, want) in cases {
            assert_eq!(class(ip), want, "{ip}");
        }
    }
}
