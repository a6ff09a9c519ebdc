//! `polycrawl bench`: the tools the peer benchmark (`ops/bench-peers.sh`, issue 9)
//! runs around *any* crawler, polycrawl or another, so that both are judged by
//! the same code:
//!
//! - [`measure`]: `polycrawl bench measure -- CMD ...` runs a command and reports
//!   its wall time, the CPU time of its whole process tree and its peak memory.
//! - [`check`]: `polycrawl bench check --websim DIR` reads websim's oracle files
//!   and request log and prints what the crawler fetched: coverage of the
//!   manifest, duplicate and robots-disallowed fetches and, for the
//!   politeness-bound regime, the fetch rate and interval violations
//!   ([`pace`]).
//! - [`roundtrip`]: `polycrawl bench roundtrip --websim DIR --warcs DIR`: the delay
//!   from a page's last byte to its links on the wire.
//!
//! Both print one machine-readable line of `key=value` words (the script parses
//! it) and never talk to the network: they read files and `/proc`.
//! This module must never start or stop a crawler or websim on its own (the
//! script does), and `measure` signals only the processes it started and their
//! descendants, by pid.

pub mod check;
pub mod measure;
pub mod pace;
pub mod roundtrip;

/// `polycrawl bench` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Run a command; print its wall time, the CPU time of its whole process tree
    /// and its peak memory.
    Measure(measure::MeasureArgs),
    /// Judge a crawl by websim's manifest and request log (any crawler).
    Check(check::CheckArgs),
    /// From a finished crawl's WARC files and websim's request log: the delay from a
    /// page's last byte to its links' requests (the pipeline's round trip).
    Roundtrip(roundtrip::RoundtripArgs),
}

/// Runs one `polycrawl bench` subcommand; the exit code is the measured
/// command's for `measure`, success otherwise.
pub fn run(command: BenchCommand) -> anyhow::Result<u8> {
    match command {
        BenchCommand::Measure(args) => measure::run(&args),
        BenchCommand::Check(args) => {
            check::run(&args)?;
            Ok(0)
        }
        BenchCommand::Roundtrip(args) => {
            roundtrip::run(&args)?;
            Ok(0)
        }
    }
}
