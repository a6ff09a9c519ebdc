//! [`Registry`]: the components registered with the manager (who is connected, in
//! which role, how to reach them, what they last said about their load, whether a
//! downloader is draining) and the applications each application connection
//! subscribed to.
//!
//! A component is known by its role and id; a second connection with the same role
//! and id replaces the first ([`Registry::join`] hands the old one back so the core
//! can send it `Bye { Replaced }` and take back its work). Everything is keyed by
//! connection, so messages from a replaced connection that are still in the event
//! queue find nothing and are ignored.
//!
//! The jobs a downloader holds are not here: they are in the frontier's one table
//! of jobs out (`frontier/jobs.rs`), keyed by job with the connection as holder,
//! which also counts them per holder; a dispatch round asks it for each
//! downloader's count. All state here is private: the core changes it only
//! through the methods below.
//!
//! This module must never send anything (it hands out an outbox; the core sends)
//! or touch the frontier. Lookups are O(1); a dispatch round's room is
//! O(downloaders); iterations are over the components (tens, not millions).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use spool::protocol::{ByeReason, ComponentState, ComponentStatus, Hello, Load, Role};
use spool::{AppId, ComponentId};
use tokio::time::Instant;

use super::conn::{ConnId, Outbox};

/// The concurrency assumed for a downloader before its first heartbeat.
pub(crate) const ASSUMED_CONCURRENCY: u32 = 16;

/// A connected peer, whatever its role.
#[derive(Debug)]
struct Peer {
    role: Role,
    id: ComponentId,
    /// Where its messages go.
    outbox: Outbox,
    /// The load of its last heartbeat (`None` before the first).
    load: Option<Load>,
    /// When anything was last heard from it.
    last_heard: Instant,
    /// What it last said about itself (`Message::Status`).
    state: ComponentState,
}

/// What the manager keeps per role.
#[derive(Debug)]
enum Kind {
    /// A downloader; `true` once it was sent `Drain` or said it drains (no new
    /// jobs).
    Downloader(bool),
    /// A resolver (its batches are tracked by the DNS module).
    Resolver,
    /// An application connection: the applications it subscribed to, each with
    /// the highest `SyncProgress` sequence number handled for it.
    Application(BTreeMap<AppId, u64>),
    /// An operator tool.
    Admin,
}

/// A registered component (handed out whole only when it leaves).
#[derive(Debug)]
pub(crate) struct Component {
    peer: Peer,
    kind: Kind,
}

impl Component {
    /// Its role.
    pub fn role(&self) -> Role {
        self.peer.role
    }

    /// Its id.
    pub fn id(&self) -> &ComponentId {
        &self.peer.id
    }

    /// Closes its connection with `Bye { reason }`.
    pub fn close(&self, reason: ByeReason, detail: impl Into<String>) {
        self.peer.outbox.close(reason, detail);
    }
}

/// Every registered component. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Registry {
    by_conn: HashMap<ConnId, Component>,
    by_name: HashMap<(Role, ComponentId), ConnId>,
    /// Jobs a downloader may hold per connection (`jobs_per_downloader_factor`).
    jobs_per_connection: f64,
    /// Silence after which a component is dropped (`control.heartbeat_timeout_ms`).
    heartbeat_timeout: Duration,
    /// Connections to drop at the engine's next step, with why.
    doomed: Vec<(ConnId, String)>,
}

impl Registry {
    /// No components; a downloader may hold `jobs_per_connection` x its
    /// concurrency jobs; a component silent for `heartbeat_timeout` is unhealthy.
    pub fn new(jobs_per_connection: f64, heartbeat_timeout: Duration) -> Self {
        Self {
            by_conn: HashMap::new(),
            by_name: HashMap::new(),
            jobs_per_connection,
            heartbeat_timeout,
            doomed: Vec::new(),
        }
    }

    /// `conn` failed (a send it could not take): it is dropped at the next step.
    pub fn doom(&mut self, conn: ConnId, why: String) {
        self.doomed.push((conn, why));
    }

    /// The connections to drop now, with why.
    pub fn take_doomed(&mut self) -> Vec<(ConnId, String)> {
        std::mem::take(&mut self.doomed)
    }

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
            Role::Downloader => Kind::Downloader(false),
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
            state: ComponentState::default(),
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

    /// The role of `conn`, if it is registered.
    pub fn role_of(&self, conn: ConnId) -> Option<Role> {
        self.by_conn.get(&conn).map(|c| c.peer.role)
    }

    /// Where messages to `conn` go, if it is registered.
    pub fn outbox(&self, conn: ConnId) -> Option<&Outbox> {
        self.by_conn.get(&conn).map(|c| &c.peer.outbox)
    }

    /// Every registered connection.
    pub fn conns(&self) -> Vec<ConnId> {
        self.by_conn.keys().copied().collect()
    }

    /// The connections of `role`, in a stable order.
    pub fn conns_of(&self, role: Role) -> Vec<ConnId> {
        let mut conns: Vec<ConnId> = self
            .by_conn
            .iter()
            .filter(|(_, c)| c.peer.role == role)
            .map(|(conn, _)| *conn)
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

    /// What `conn` last said about itself, if it is registered.
    pub fn state_of(&self, conn: ConnId) -> Option<&ComponentState> {
        self.by_conn.get(&conn).map(|c| &c.peer.state)
    }

    /// Notes what `conn` says about itself (`Message::Status`). A downloader
    /// that says it drains is draining from now on, as if sent `Drain`.
    pub fn set_state(&mut self, conn: ConnId, state: ComponentState) {
        if let Some(c) = self.by_conn.get_mut(&conn) {
            if let Kind::Downloader(draining) = &mut c.kind {
                *draining |= state.draining;
            }
            c.peer.state = state;
        }
    }

    /// Every component as the admin status shows it (admin connections, which
    /// come and go with each command, left out), sorted by role and id; healthy if
    /// heard from within half of `heartbeat_timeout`.
    pub fn statuses(&self, now: Instant) -> Vec<ComponentStatus> {
        let heartbeat_timeout = self.heartbeat_timeout;
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
                    state: c.peer.state.clone(),
                }
            })
            .collect();
        all.sort_by(|a, b| (a.role.as_str(), &a.id).cmp(&(b.role.as_str(), &b.id)));
        all
    }

    // Downloaders.

    /// Jobs a downloader with this concurrency may hold.
    fn window(&self, concurrency: u32) -> usize {
        let jobs = f64::from(concurrency) * self.jobs_per_connection;
        // A small positive number: the cast cannot truncate meaningfully.
        jobs.ceil() as usize
    }

    /// For a dispatch round: the downloaders not draining (`live`) and, sorted by
    /// connection, those with room in their window, with how many jobs they may
    /// still take, given how many each holds (`held`). O(downloaders).
    pub fn room(&self, held: impl Fn(ConnId) -> usize) -> (Vec<(ConnId, usize)>, Vec<ConnId>) {
        let mut room = Vec::new();
        let mut live = Vec::new();
        for (conn, c) in &self.by_conn {
            if let Kind::Downloader(draining) = &c.kind {
                if *draining {
                    continue;
                }
                live.push(*conn);
                let concurrency = c.peer.load.map_or(ASSUMED_CONCURRENCY, |l| l.concurrency);
                let free = self.window(concurrency).saturating_sub(held(*conn));
                if free > 0 {
                    room.push((*conn, free));
                }
            }
        }
        room.sort_unstable();
        (room, live)
    }

    /// Marks every downloader draining (no new jobs); returns the connections to
    /// send `Drain` to: the downloaders, and with `everyone` the resolvers too.
    pub fn start_draining(&mut self, everyone: bool) -> Vec<ConnId> {
        let mut drain = Vec::new();
        for (conn, c) in &mut self.by_conn {
            let asked = match &mut c.kind {
                Kind::Downloader(draining) => {
                    *draining = true;
                    true
                }
                Kind::Resolver => everyone,
                Kind::Application(_) | Kind::Admin => false,
            };
            if asked {
                drain.push(*conn);
            }
        }
        drain.sort_unstable();
        drain
    }

    /// The downloaders whose connection count the speed control sets (not
    /// draining, load known), with their current count.
    pub fn concurrencies(&self) -> Vec<(ConnId, u32)> {
        self.by_conn
            .iter()
            .filter_map(|(conn, c)| match (&c.kind, c.peer.load) {
                (Kind::Downloader(false), Some(load)) => Some((*conn, load.concurrency)),
                _ => None,
            })
            .collect()
    }

    /// `conn` was told to use `limit` connections (applied at once on arrival):
    /// its window follows now.
    pub fn set_concurrency(&mut self, conn: ConnId, limit: u32) {
        if let Some(load) = self
            .by_conn
            .get_mut(&conn)
            .and_then(|c| c.peer.load.as_mut())
        {
            load.concurrency = limit;
        }
    }

    // Applications.

    /// `conn` subscribes to `app`; false if it is not an application connection.
    pub fn subscribe(&mut self, conn: ConnId, app: AppId) -> bool {
        match self.by_conn.get_mut(&conn).map(|c| &mut c.kind) {
            Some(Kind::Application(apps)) => {
                apps.entry(app).or_insert(0);
                true
            }
            _ => false,
        }
    }

    /// `conn` asked for `app`'s progress as of `seq`; false if it did not
    /// subscribe to `app`.
    pub fn synced(&mut self, conn: ConnId, app: &AppId, seq: u64) -> bool {
        match self.by_conn.get_mut(&conn).map(|c| &mut c.kind) {
            Some(Kind::Application(apps)) => match apps.get_mut(app) {
                Some(synced) => {
                    *synced = (*synced).max(seq);
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    /// The subscriptions of `conn`, each with its highest sync number.
    pub fn subscriptions(&self, conn: ConnId) -> Vec<(AppId, u64)> {
        match self.by_conn.get(&conn).map(|c| &c.kind) {
            Some(Kind::Application(apps)) => apps.iter().map(|(a, s)| (a.clone(), *s)).collect(),
            _ => Vec::new(),
        }
    }

    /// The application connections subscribed to `app` (to any app with `None`).
    pub fn app_conns(&self, app: Option<&AppId>) -> Vec<ConnId> {
        self.by_conn
            .iter()
            .filter(|(_, c)| match (&c.kind, app) {
                (Kind::Application(apps), Some(app)) => apps.contains_key(app),
                (Kind::Application(apps), None) => !apps.is_empty(),
                _ => false,
            })
            .map(|(conn, _)| *conn)
            .collect()
    }

    /// Every application some connection subscribed to.
    pub fn subscribed_apps(&self) -> BTreeSet<AppId> {
        self.by_conn
            .values()
            .filter_map(|c| match &c.kind {
                Kind::Application(apps) => Some(apps.keys().cloned()),
                _ => None,
            })
            .flatten()
            .collect()
    }
}
