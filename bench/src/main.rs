//! `polycrawl-bench`: the tools the peer benchmark (`ops/bench-peers.sh`, issue 9)
//! runs around *any* crawler, polycrawl or another, so that both are judged by
//! the same code. A binary of its own, beside `polycrawl` and not in it: a crawler
//! does not ship the tools that judge it.
//!
//! - [`measure`]: `polycrawl-bench measure -- CMD ...` runs a command and reports
//!   its wall time, the CPU time of its whole process tree and its peak memory.
//! - [`check`]: `polycrawl-bench check --websim DIR` reads websim's oracle files
//!   and request log and prints what the crawler fetched: coverage of the
//!   manifest, duplicate and robots-disallowed fetches and, for the
//!   politeness-bound regime, the fetch rate and interval violations
//!   ([`check::pace`]).
//! - [`roundtrip`]: `polycrawl-bench roundtrip --websim DIR --warcs DIR`: the delay
//!   from a page's last byte to its links on the wire.
//!
//! Both print one machine-readable line of `key=value` words (the script parses
//! it) and never talk to the network: they read files and `/proc`.
//! This binary must never start or stop a crawler or websim on its own (the
//! script does), and `measure` signals only the processes it started and their
//! descendants, by pid.

mod check;
mod measure;
mod roundtrip;

use std::process::ExitCode;

use clap::Parser;

/// `polycrawl-bench` subcommands.
#[derive(Debug, clap::Subcommand)]
enum BenchCommand {
    /// Run a command; print its wall time, the CPU time of its whole process tree
    /// and its peak memory.
    Measure(measure::MeasureArgs),
    /// Judge a crawl by websim's manifest and request log (any crawler).
    Check(check::CheckArgs),
    /// From a finished crawl's WARC files and websim's request log: the delay from a
    /// page's last byte to its links' requests (the pipeline's round trip).
    Roundtrip(roundtrip::RoundtripArgs),
}

/// Runs one `polycrawl-bench` subcommand; the exit code is the measured
/// command's for `measure`, success otherwise.
fn run(command: BenchCommand) -> anyhow::Result<u8> {
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

/// `polycrawl-bench`: the peer benchmark's tools (see the module docs).
#[derive(Debug, Parser)]
#[command(name = "polycrawl-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: BenchCommand,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        // `measure` exits with the measured command's exit code.
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
