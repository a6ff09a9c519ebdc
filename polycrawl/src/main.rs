//! `polycrawl`: one binary whose subcommands start each part of the crawler.
//!
//! `main` only sets up the process (allocator, huge pages, the parent-death
//! signal, logging), parses the command line ([`polycrawl::cli::Cli`]) and runs it; every
//! error reaches the user as one readable line and a non-zero exit code.

use std::process::ExitCode;

use clap::Parser as _;
use polycrawl::cli::{Cli, one_line};

/// Every polycrawl process (manager, downloader, resolver, application, websim)
/// allocates through mimalloc: the crawl allocates and frees small buffers per URL
/// and per page on every thread, and glibc's malloc was a tenth of the
/// application's CPU in the peer benchmark's profile (BENCHMARKS.md, issue 9).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    no_huge_pages();
    // A child of `polycrawl demo` / `crawl` dies with it, even if it is SIGKILLed.
    if let Err(err) = polycrawl::orchestrate::child::die_with_parent() {
        eprintln!("polycrawl: error: {}", one_line(&err));
        return ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    init_logging();
    match cli.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("polycrawl: error: {}", one_line(&err));
            ExitCode::FAILURE
        }
    }
}

/// Turns transparent huge pages off for this process and the processes it starts
/// (`prctl(PR_SET_THP_DISABLE)`, inherited across fork and exec), as Redis does.
/// The crawl frees and allocates buffers all the time; with huge pages each fault
/// in freshly returned memory made the kernel zero a whole 2 MiB page
/// (`clear_page_erms` under `do_huge_pmd_anonymous_page`: 4-8 % of every process's
/// CPU in the peer benchmark's profile; with them off the crawl took 0.168-0.178
/// CPU-ms per page against 0.183-0.190, BENCHMARKS.md issue 9). Where the call is refused
/// (an old kernel) the crawl just runs with huge pages.
fn no_huge_pages() {
    let _ = nix::sys::prctl::set_thp_disable(true);
}

/// Logs go to stderr; `RUST_LOG` filters them (default `info`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
