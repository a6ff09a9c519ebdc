//! [`run`]: the resolver service. Builds the [`Resolver`], registers with the
//! manager, serves the connection ([`crate::session`]), and when the connection is
//! lost reconnects with exponential back-off (the manager may restart) until the
//! cancellation token fires, a `Drain` completes, or retrying cannot help (the
//! manager refuses us, or another resolver took our id).
//!
//! This module must never retry without a pause, exit on a transient error (an
//! unreachable or restarting manager is waited for, with a WARN per attempt), or
//! keep running after the token is cancelled (it returns at once when not
//! connected). O(1) per connection attempt.

use std::sync::Arc;

use spool::protocol::Role;
use spool::protocol::client::{Backoff, ControlSettings, connect, is_final};
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::Config;
use crate::error::ResolverError;
use crate::lookup::Resolver;
use crate::session::{End, Session};

/// Runs the resolver service until `shutdown` is cancelled (in-flight batches get
/// [`SHUTDOWN_GRACE`](crate::SHUTDOWN_GRACE) to be answered) or the manager drains
/// it. Returns `Ok(())` in both cases; `Err` when the service cannot start or must
/// stop (see [`ResolverError`]).
pub async fn run(
    config: &Config,
    control: ControlSettings,
    shutdown: CancellationToken,
) -> Result<(), ResolverError> {
    let resolver = Arc::new(Resolver::new(config)?);
    let mut backoff = Backoff::new(control.reconnect_min, control.reconnect_max);
    loop {
        let attempt = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            attempt = connect(&control, Role::Resolver) => attempt,
        };
        match attempt {
            Ok((conn, welcome)) => {
                info!(manager = %control.manager_addr, id = %control.id, "resolver: registered with the manager");
                let started = Instant::now();
                let session = Session::new(
                    conn,
                    &welcome,
                    &resolver,
                    config.max_pending_names,
                    &shutdown,
                );
                match session.run().await {
                    End::Drained | End::ShutDown => return Ok(()),
                    End::Replaced => {
                        return Err(ResolverError::Replaced {
                            id: control.id.to_string(),
                        });
                    }
                    End::Lost(why) => {
                        warn!(manager = %control.manager_addr, reason = %why, "resolver: lost the manager connection, reconnecting");
                    }
                }
                if started.elapsed() >= control.reconnect_max {
                    backoff.reset();
                }
            }
            Err(e) if is_final(&e) => {
                return Err(ResolverError::Refused {
                    manager: control.manager_addr.clone(),
                    source: e,
                });
            }
            Err(e) => {
                warn!(manager = %control.manager_addr, error = %e, "resolver: cannot register with the manager, retrying");
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = sleep(backoff.next_delay()) => {}
        }
    }
}
