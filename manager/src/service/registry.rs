//! The components registered with the manager: who is connected, in which role,
//! how to reach them, what they last said about their load, and the work each
//! downloader holds.
//!
//! A component is known by its role and id; a second connection with the same role
//! and id replaces the first ([`Registry::join`] hands the old one back so the core
//! can send it `Bye { Replaced }` and take back its work). Everything is keyed by
//! connection, so messages from a replaced connection that are still in the event
//! queue find nothing and are ignored.
//!
//! This module must never send anything or touch the frontier. Lookups are O(1);
//! iterations are over the components (tens, not millions).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use spool::protocol::{ComponentStatus, Hello, Load, Role};
use spool::{AppId, ComponentId};
use tokio::time::Instant;

use super::conn::{ConnId, Outbox};
use super::dispatch::DownloaderWork;

/// A connected peer, whatever its role.
#[derive(Debug)]
pub(crate) struct Peer {
    /// Its role.
    pub role: Role,
    /// Its id.
    pub id: ComponentId,
    /// Where its messages go.
    pub outbox: Outbox,
    /// The load of its last heartbeat (`None` before the first).
    pub load: Option<Load>,
    /// When anything was last heard from it.
    pub last_heard: Instant,
}

/// What the manager keeps per role.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A downloader and the jobs it holds.
    Downloader(DownloaderWork),
    /// A resolver (its batches are tracked by the DNS module).
    Resolver,
    /// An application connection: the applications it subscribed to, each with
    /// the highest `SyncProgress` sequence number handled for it.
    Application(BTreeMap<AppId, u64>),
    /// An operator tool.
    Admin,
}

/// A registered component.
#[derive(Debug)]
pub(crate) struct Component {
    /// How to reach it.
    pub peer: Peer,
    /// Its role's state.
    pub kind: Kind,
}

/// Every registered component.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    by_conn: HashMap<ConnId, Component>,
    by_name: HashMap<(Role, ComponentId), ConnId>,
}

impl Registry {
    /// Registers the peer of `conn`. Returns the connection it replaces, if any,
    /// already unregistered.
    pub fn join(
        &mut self,
        conn: ConnId,
        hello: Hello,
        outbox: Outbox,
        now: Instant,
    ) -> Option<(ConnId, Component)> {
        let kind = match hello.role {
            Role::Downloader => Kind::Downloader(DownloaderWork::default()),
            Role::Resolver => Kind::Resolver,
            Role::Application => Kind::Application(BTreeMap::new()),
            Role::Admin | Role::Manager => Kind::Admin,
        };
        let key = (hello.role, hello.id.clone());
        let replaced = self
            .by_name
            .get(&key)
            .copied()
            .and_then(|old| self.leave(old).map(|c| (old, c)));
        let peer = Peer {
            role: hello.role,
            id: hello.id,
            outbox,
            load: None,
            last_heard: now,
        };
        self.by_conn.insert(conn, Component { peer, kind });
        self.by_name.insert(key, conn);
        replaced
    }

    /// Unregisters `conn`; `None` if it is not registered (any more).
    pub fn leave(&mut self, conn: ConnId) -> Option<Component> {
        let component = self.by_conn.remove(&conn)?;
        let key = (component.peer.role, component.peer.id.clone());
        if self.by_name.get(&key) == Some(&conn) {
            self.by_name.remove(&key);
        }
        Some(component)
    }

    /// The component of `conn`.
    pub fn get(&self, conn: ConnId) -> Option<&Component> {
        self.by_conn.get(&conn)
    }

    /// The component of `conn`, mutable.
    pub fn get_mut(&mut self, conn: ConnId) -> Option<&mut Component> {
        self.by_conn.get_mut(&conn)
    }

    /// Every component with its connection.
    pub fn iter(&self) -> impl Iterator<Item = (ConnId, &Component)> {
        self.by_conn.iter().map(|(c, comp)| (*c, comp))
    }

    /// Every component, mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ConnId, &mut Component)> {
        self.by_conn.iter_mut().map(|(c, comp)| (*c, comp))
    }

    /// The connections of `role`, in a stable order.
    pub fn conns_of(&self, role: Role) -> Vec<ConnId> {
        let mut conns: Vec<ConnId> = self
            .iter()
            .filter(|(_, c)| c.peer.role == role)
            .map(|(conn, _)| conn)
            .collect();
        conns.sort_unstable();
        conns
    }

    /// Registered components of `role`.
    pub fn count(&self, role: Role) -> usize {
        self.by_conn
            .values()
            .filter(|c| c.peer.role == role)
            .count()
    }

    /// Notes that `conn` was heard from, with its load if the message carried one.
    pub fn heard(&mut self, conn: ConnId, load: Option<Load>, now: Instant) {
        if let Some(c) = self.by_conn.get_mut(&conn) {
            c.peer.last_heard = now;
            if load.is_some() {
                c.peer.load = load;
            }
        }
    }

    /// Every component as the admin status shows it (admin connections, which
    /// come and go with each command, left out), sorted by role and id; healthy if
    /// heard from within half of `heartbeat_timeout`.
    pub fn statuses(&self, now: Instant, heartbeat_timeout: Duration) -> Vec<ComponentStatus> {
        let mut all: Vec<ComponentStatus> = self
            .by_conn
            .values()
            .filter(|c| c.peer.role != Role::Admin)
            .map(|c| {
                let silent = now.saturating_duration_since(c.peer.last_heard);
                ComponentStatus {
                    role: c.peer.role,
                    id: c.peer.id.clone(),
                    load: c.peer.load.unwrap_or_default(),
                    last_heard_ms: u64::try_from(silent.as_millis()).unwrap_or(u64::MAX),
                    healthy: silent <= heartbeat_timeout / 2,
                }
            })
            .collect();
        all.sort_by(|a, b| (a.role.as_str(), &a.id).cmp(&(b.role.as_str(), &b.id)));
        all
    }
}
