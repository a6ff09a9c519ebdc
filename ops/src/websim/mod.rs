//! websim, the simulated web (being written).

pub mod dns;
pub mod tls;

/// Command-line flags of `polycrawl websim`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs websim until interrupted.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("websim is not built yet")
}
