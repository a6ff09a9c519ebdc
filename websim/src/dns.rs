//! websim's own authoritative DNS server: the names of the simulated web and nothing else.
//!
//! A [`Zone`] maps host names to loopback addresses; [`DnsServer::start`] serves it over
//! UDP and TCP (2-byte length prefix, several queries per connection, idle timeout) on one
//! port. Messages are parsed and built with `hickory-proto`; this module never encodes DNS
//! by hand.
//!
//! Answers from the zone carry the AA bit and the zone TTL:
//! - `A` (or `ANY`) for a name in the zone: every address of that name.
//! - another type for a name in the zone: NOERROR with no answer (NODATA) and an SOA in the
//!   authority section.
//! - a name outside the zone: NXDOMAIN with an SOA in the authority section. The SOA is owned
//!   by the root, because websim stands in for the whole namespace; its TTL and MINIMUM are
//!   the zone TTL, so the negative-caching TTL is the zone TTL.
//! - a message whose header parses but whose body does not: FORMERR. Anything shorter than a
//!   header, and any message that is itself a response, is dropped without a reply.
//! - other opcodes: NOTIMP; classes other than IN and zone transfers: REFUSED; more or fewer
//!   than one question: FORMERR; EDNS versions above 0: BADVERS.
//! - a UDP answer larger than the client's EDNS payload size (512 bytes without EDNS, at most
//!   [`UDP_PAYLOAD_LIMIT`]): cut short with the TC bit set, so the client retries over TCP.
//!
//! What this server must never do: answer for a name outside its zone with anything but
//! NXDOMAIN, forward or recurse (RA is never set), bind anything but the address it is
//! given, or panic or stop serving on bad input. It is a test fixture for loopback use and
//! has no rate limiting.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hickory_proto::op::{Edns, Header, Message, MessageType, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, SOA};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::debug;

/// A TCP connection that sends no complete query for this long is closed.
pub const TCP_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this many TCP connections are served at once; further ones are closed at once.
pub const MAX_TCP_CONNECTIONS: usize = 512;
/// The UDP payload size this server advertises in EDNS and never exceeds over UDP.
pub const UDP_PAYLOAD_LIMIT: u16 = 1232;
/// Plain DNS over UDP (no EDNS) allows at most this many bytes.
const CLASSIC_UDP_LIMIT: u16 = 512;
/// How often `start` with port 0 tries to find a port free for both UDP and TCP.
const PORT_PICK_ATTEMPTS: usize = 32;
/// Pause after a failed `recv_from` or `accept` (such as EMFILE), so that errors cannot spin.
const ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// Names websim answers for, with TTL. Names are case-insensitive; stored lower-case without
/// trailing dot.
///
/// Names are ASCII (an internationalised name goes in its `xn--` form); case folding is
/// ASCII-only, as in DNS.
#[derive(Debug, Clone)]
pub struct Zone {
    ttl_secs: u32,
    names: HashMap<Box<str>, Vec<Ipv4Addr>>,
}

impl Zone {
    /// An empty zone whose answers (positive and negative) carry `ttl_secs`.
    pub fn new(ttl_secs: u32) -> Self {
        Zone {
            ttl_secs,
            names: HashMap::new(),
        }
    }

    /// Adds `addr` to the addresses of `name`; several addresses per name are allowed, and
    /// adding one a second time changes nothing.
    pub fn insert(&mut self, name: &str, addr: Ipv4Addr) {
        let addrs = self.names.entry(normalize(name).into()).or_default();
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }

    /// The addresses of `name` in insertion order, or `None` when the name is not in the zone.
    pub fn lookup(&self, name: &str) -> Option<&[Ipv4Addr]> {
        self.lookup_key(&normalize(name))
    }

    /// The TTL of every answer, in seconds.
    pub fn ttl_secs(&self) -> u32 {
        self.ttl_secs
    }

    /// How many names the zone holds.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the zone holds no name.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Looks up an already normalized name.
    fn lookup_key(&self, key: &str) -> Option<&[Ipv4Addr]> {
        self.names.get(key).map(Vec::as_slice)
    }

    /// Every name (normalized) with its addresses, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[Ipv4Addr])> {
        self.names.iter().map(|(n, a)| (&**n, a.as_slice()))
    }
}

/// `name` lower-cased (ASCII) without its trailing dot; borrowed when already so.
fn normalize(name: &str) -> Cow<'_, str> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// Counts of what a [`DnsServer`] has done since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DnsStats {
    /// Responses sent over UDP (any response code).
    pub udp_responses: u64,
    /// Responses sent over TCP (any response code).
    pub tcp_responses: u64,
    /// Messages that could not be decoded (answered FORMERR when the header parsed).
    pub malformed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    udp_responses: AtomicU64,
    tcp_responses: AtomicU64,
    malformed: AtomicU64,
}

/// websim's DNS server; serving stops when it is dropped (its tasks are aborted).
#[derive(Debug)]
pub struct DnsServer {
    local_addr: SocketAddr,
    counters: Arc<Counters>,
    tasks: JoinSet<()>,
}

impl DnsServer {
    /// Serves `zone` on UDP and TCP at `addr` (same port for both; port 0 picks a port free
    /// for both).
    pub async fn start(addr: SocketAddr, zone: Arc<Zone>) -> io::Result<DnsServer> {
        let (udp, tcp) = bind_both(addr).await?;
        let local_addr = udp.local_addr()?;
        let counters = Arc::new(Counters::default());
        let responder = Arc::new(Responder::new(zone, counters.clone()));
        let mut tasks = JoinSet::new();
        tasks.spawn(serve_udp(udp, responder.clone()));
        tasks.spawn(serve_tcp(tcp, responder));
        debug!(%local_addr, "websim dns: serving");
        Ok(DnsServer {
            local_addr,
            counters,
            tasks,
        })
    }

    /// The address (UDP and TCP) the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// What the server has done so far.
    pub fn stats(&self) -> DnsStats {
        DnsStats {
            udp_responses: self.counters.udp_responses.load(Ordering::Relaxed),
            tcp_responses: self.counters.tcp_responses.load(Ordering::Relaxed),
            malformed: self.counters.malformed.load(Ordering::Relaxed),
        }
    }

    /// Stops serving and waits until the sockets are closed, so the port can be reused.
    pub async fn shutdown(mut self) {
        self.tasks.shutdown().await;
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

/// Binds UDP and TCP on one port: the given one, or with port 0 one that is free for both.
async fn bind_both(addr: SocketAddr) -> io::Result<(UdpSocket, TcpListener)> {
    if addr.port() != 0 {
        return Ok((UdpSocket::bind(addr).await?, TcpListener::bind(addr).await?));
    }
    let mut last_err = None;
    for _ in 0..PORT_PICK_ATTEMPTS {
        let udp = UdpSocket::bind(addr).await?;
        let mut same_port = addr;
        same_port.set_port(udp.local_addr()?.port());
        match TcpListener::bind(same_port).await {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::from(io::ErrorKind::AddrInUse)))
}

async fn serve_udp(socket: UdpSocket, responder: Arc<Responder>) {
    let mut buf = vec![0u8; usize::from(u16::MAX)];
    let mut scratch = Scratch::default();
    loop {
        let (len, peer) = match socket.recv_from(&mut buf).await {
            Ok(received) => received,
            Err(error) => {
                debug!(%error, "websim dns: udp receive failed");
                tokio::time::sleep(ERROR_BACKOFF).await;
                continue;
            }
        };
        let Some(reply) = responder.respond(&buf[..len], Transport::Udp, &mut scratch) else {
            continue;
        };
        if let Err(error) = socket.send_to(reply, peer).await {
            debug!(%error, %peer, "websim dns: udp send failed");
        }
    }
}

async fn serve_tcp(listener: TcpListener, responder: Arc<Responder>) {
    let slots = Arc::new(Semaphore::new(MAX_TCP_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        debug!(%peer, "websim dns: too many tcp connections, closing");
                        continue;
                    };
                    let responder = responder.clone();
                    connections.spawn(async move {
                        let served = serve_tcp_connection(stream, &responder, TCP_IDLE_TIMEOUT).await;
                        if let Err(error) = served {
                            debug!(%error, %peer, "websim dns: tcp connection failed");
                        }
                        drop(slot);
                    });
                }
                Err(error) => {
                    debug!(%error, "websim dns: tcp accept failed");
                    tokio::time::sleep(ERROR_BACKOFF).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Answers length-prefixed queries on one connection until EOF, an error or `idle` without
/// progress.
async fn serve_tcp_connection(
    mut stream: TcpStream,
    responder: &Responder,
    idle: Duration,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut scratch = Scratch::default();
    let mut query = Vec::new();
    let mut framed = Vec::new();
    loop {
        let mut prefix = [0u8; 2];
        match tokio::time::timeout(idle, stream.read_exact(&mut prefix)).await {
            Err(_idle) => return Ok(()),
            Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Ok(result) => result?,
        };
        query.resize(usize::from(u16::from_be_bytes(prefix)), 0);
        tokio::time::timeout(idle, stream.read_exact(&mut query)).await??;
        let Some(reply) = responder.respond(&query, Transport::Tcp, &mut scratch) else {
            continue;
        };
        // respond() caps TCP replies at u16::MAX bytes, so the length always fits.
        let len = u16::try_from(reply.len()).map_err(|_| io::ErrorKind::InvalidData)?;
        framed.clear();
        framed.extend_from_slice(&len.to_be_bytes());
        framed.extend_from_slice(reply);
        tokio::time::timeout(idle, stream.write_all(&framed)).await??;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Udp,
    Tcp,
}

/// Buffers one serving task reuses from query to query.
#[derive(Default)]
struct Scratch {
    /// The lower-cased query name, as a zone key.
    key: Vec<u8>,
    /// The encoded response.
    out: Vec<u8>,
    /// The answer records being built.
    answers: Vec<Record>,
}

/// Turns query bytes into response bytes; shared by all serving tasks.
struct Responder {
    zone: Arc<Zone>,
    soa: Record,
    counters: Arc<Counters>,
}

impl Responder {
    fn new(zone: Arc<Zone>, counters: Arc<Counters>) -> Self {
        let ttl = zone.ttl_secs();
        let host = |s: &str| Name::from_ascii(s).unwrap_or_else(|_| Name::root());
        let soa = SOA::new(
            host("ns.websim."),
            host("hostmaster.websim."),
            1,
            3600,
            600,
            86400,
            ttl,
        );
        let soa = Record::from_rdata(Name::root(), ttl, RData::SOA(soa));
        Responder {
            zone,
            soa,
            counters,
        }
    }

    /// The encoded response to `query`, or `None` when nothing should be sent.
    fn respond<'s>(
        &self,
        query: &[u8],
        transport: Transport,
        scratch: &'s mut Scratch,
    ) -> Option<&'s [u8]> {
        let (mut response, limit) = match Message::from_vec(query) {
            Ok(request) if request.message_type == MessageType::Query => {
                self.answer(request, transport, scratch)
            }
            Ok(_response) => return None,
            Err(error) => {
                self.counters.malformed.fetch_add(1, Ordering::Relaxed);
                let header = Header::read(&mut BinDecoder::new(query)).ok()?;
                if header.message_type != MessageType::Query {
                    return None;
                }
                debug!(%error, id = header.id, "websim dns: malformed query, answering FORMERR");
                let mut response = Message::response(header.id, header.op_code);
                response.metadata.response_code = ResponseCode::FormErr;
                (response, CLASSIC_UDP_LIMIT)
            }
        };
        let limit = match transport {
            Transport::Udp => limit,
            Transport::Tcp => u16::MAX,
        };
        scratch.out.clear();
        let mut encoder = BinEncoder::new(&mut scratch.out);
        encoder.set_max_size(limit);
        let encoded = response.emit(&mut encoder);
        // Keep the answer vector (with its capacity) for the next query.
        let mut answers = std::mem::take(&mut response.answers);
        if answers.capacity() > scratch.answers.capacity() {
            answers.clear();
            scratch.answers = answers;
        }
        if let Err(error) = encoded {
            debug!(%error, "websim dns: cannot encode response");
            return None;
        }
        let counter = match transport {
            Transport::Udp => &self.counters.udp_responses,
            Transport::Tcp => &self.counters.tcp_responses,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Some(&scratch.out)
    }

    /// The response to a decoded query, and the largest size it may have over UDP.
    fn answer(
        &self,
        mut request: Message,
        transport: Transport,
        scratch: &mut Scratch,
    ) -> (Message, u16) {
        let mut response = Message::new(request.id, MessageType::Response, request.op_code);
        response.metadata = Metadata::response_from_request(&request.metadata);
        let mut limit = CLASSIC_UDP_LIMIT;
        if let Some(edns) = &request.edns {
            let mut ours = Edns::new();
            ours.set_max_payload(UDP_PAYLOAD_LIMIT);
            response.edns = Some(ours);
            limit = edns
                .max_payload()
                .clamp(CLASSIC_UDP_LIMIT, UDP_PAYLOAD_LIMIT);
            if edns.version() > 0 {
                response.metadata.response_code = ResponseCode::BADVERS;
                return (response, limit);
            }
        }
        if request.op_code != OpCode::Query {
            response.metadata.response_code = ResponseCode::NotImp;
            return (response, limit);
        }
        if request.queries.len() != 1 {
            response.metadata.response_code = ResponseCode::FormErr;
            return (response, limit);
        }
        let Some(question) = request.queries.pop() else {
            return (response, limit);
        };
        let qtype = question.query_type();
        let refused = question.query_class() != DNSClass::IN
            || matches!(qtype, RecordType::AXFR | RecordType::IXFR);
        if refused {
            response.metadata.response_code = ResponseCode::Refused;
            response.add_query(question);
            return (response, limit);
        }
        response.metadata.authoritative = true;
        let addrs =
            zone_key(question.name(), &mut scratch.key).and_then(|k| self.zone.lookup_key(k));
        match addrs {
            Some(addrs) if matches!(qtype, RecordType::A | RecordType::ANY) => {
                let mut answers = std::mem::take(&mut scratch.answers);
                let ttl = self.zone.ttl_secs();
                answers.extend(addrs.iter().map(|&addr| {
                    Record::from_rdata(question.name().clone(), ttl, RData::A(A(addr)))
                }));
                response.answers = answers;
            }
            Some(_) => {
                response.add_authority(self.soa.clone());
            }
            None => {
                response.metadata.response_code = ResponseCode::NXDomain;
                response.add_authority(self.soa.clone());
            }
        }
        debug!(name = %question.name(), %qtype, ?transport, rcode = %response.response_code, "websim dns: answered");
        response.add_query(question);
        (response, limit)
    }
}

/// Writes `name` lower-cased without trailing dot into `key`; `None` when it cannot be a
/// zone key (a label holding a dot, or bytes that are not UTF-8).
fn zone_key<'k>(name: &Name, key: &'k mut Vec<u8>) -> Option<&'k str> {
    key.clear();
    for (i, label) in name.iter().enumerate() {
        if label.contains(&b'.') {
            return None;
        }
        if i > 0 {
            key.push(b'.');
        }
        key.extend(label.iter().map(u8::to_ascii_lowercase));
    }
    std::str::from_utf8(key).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_normalizes_names() {
        let mut zone = Zone::new(60);
        zone.insert("WWW.Example.TEST.", Ipv4Addr::new(127, 0, 0, 2));
        zone.insert("www.example.test", Ipv4Addr::new(127, 0, 0, 3));
        zone.insert("www.example.test", Ipv4Addr::new(127, 0, 0, 2));
        let want = [Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3)];
        assert_eq!(zone.lookup("www.EXAMPLE.test."), Some(&want[..]));
        assert_eq!(zone.lookup("example.test"), None);
        assert_eq!(zone.len(), 1);
    }

    #[test]
    fn zone_key_folds_case_and_rejects_dotted_labels() {
        let mut key = Vec::new();
        let name = Name::from_ascii("WwW.Example.Test.").unwrap();
        assert_eq!(zone_key(&name, &mut key), Some("www.example.test"));
        let dotted = Name::from_labels([&b"a.b"[..], b"test"]).unwrap();
        assert_eq!(zone_key(&dotted, &mut key), None);
    }

    #[test]
    fn truncates_over_udp_and_not_over_tcp() {
        let mut zone = Zone::new(60);
        for i in 0..200u8 {
            zone.insert("many.test", Ipv4Addr::new(127, 1, 0, i));
        }
        let responder = Responder::new(Arc::new(zone), Arc::default());
        let mut query = Message::query();
        query.add_query(hickory_proto::op::Query::query(
            Name::from_ascii("many.test.").unwrap(),
            RecordType::A,
        ));
        let bytes = query.to_vec().unwrap();
        let mut scratch = Scratch::default();

        let udp = responder
            .respond(&bytes, Transport::Udp, &mut scratch)
            .unwrap();
        assert!(udp.len() <= usize::from(CLASSIC_UDP_LIMIT));
        let udp = Message::from_vec(udp).unwrap();
        assert!(udp.truncation);

        let tcp = responder
            .respond(&bytes, Transport::Tcp, &mut scratch)
            .unwrap();
        let tcp = Message::from_vec(tcp).unwrap();
        assert!(!tcp.truncation);
        assert_eq!(tcp.answers.len(), 200);
        assert!(tcp.authoritative);
    }

    #[tokio::test]
    async fn idle_tcp_connection_is_closed() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server_side, _) = listener.accept().await.unwrap();
        let responder = Responder::new(Arc::new(Zone::new(60)), Arc::default());
        let idle = Duration::from_millis(50);
        let served = serve_tcp_connection(server_side, &responder, idle);
        let closed = tokio::time::timeout(Duration::from_secs(2), served).await;
        assert!(matches!(closed, Ok(Ok(()))), "{closed:?}");
        drop(client);
    }

    #[test]
    fn header_only_garbage_gets_formerr_and_short_garbage_nothing() {
        let responder = Responder::new(Arc::new(Zone::new(60)), Arc::default());
        let mut scratch = Scratch::default();
        assert!(
            responder
                .respond(b"\x12", Transport::Udp, &mut scratch)
                .is_none()
        );
        // id 0x1234, a query, one question announced but the question is cut short.
        let cut = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03ww";
        let reply = responder
            .respond(cut, Transport::Udp, &mut scratch)
            .unwrap();
        let reply = Message::from_vec(reply).unwrap();
        assert_eq!(reply.id, 0x1234);
        assert_eq!(reply.response_code, ResponseCode::FormErr);
        assert_eq!(responder.counters.malformed.load(Ordering::Relaxed), 2);
    }
}
