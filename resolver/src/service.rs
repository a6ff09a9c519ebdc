//! [`run`]: the resolver service. Builds the [`Resolver`] and hands the manager
//! connection to the shared session driver (`spool::protocol::client::run`) with the
//! resolver's role ([`crate::session`]): register, serve, and when the connection is
//! lost reconnect with exponential back-off (the manager may restart) until the
//! cancellation token fires, a `Drain` completes, or retrying cannot help (the
//! manager refuses us, or another resolver took our id).
//!
//! This module must never retry without a pause or exit on a transient error (the
//! driver guarantees both). O(1) per connection attempt.

use std::sync::Arc;

use spool::protocol::client::{self, ControlSettings, Stop};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::error::ResolverError;
use crate::lookup::Resolver;
use crate::session::ResolverRole;

/// Runs the resolver service until `shutdown` is cancelled (in-flight batches get
/// `control.shutdown_grace`, [`SHUTDOWN_GRACE`](crate::SHUTDOWN_GRACE) by default,
/// to be answered) or the manager drains it. Returns `Ok(())` in both cases; `Err`
/// when the service cannot start or must stop (see [`ResolverError`]).
pub async fn run(
    config: &Config,
    control: ControlSettings,
    shutdown: CancellationToken,
) -> Result<(), ResolverError> {
    let resolver = Arc::new(Resolver::new(config)?);
    let mut role = ResolverRole::new(resolver, config.max_pending_names);
    match client::run(&control, &mut role, &shutdown).await {
        Ok(_) => Ok(()),
        Err(Stop::Refused(source)) => Err(ResolverError::Refused {
            manager: control.manager_addr.clone(),
            source,
        }),
        Err(Stop::Replaced) => Err(ResolverError::Replaced {
            id: control.id.to_string(),
        }),
        Err(Stop::Role(never)) => match never {},
    }
}
