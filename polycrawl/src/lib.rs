//! The `polycrawl` package: the `polycrawl` binary and its library side, the RON config,
//! the command line and the orchestration. The simulated web, `polycrawl websim`, is the `websim`
//! crate below this one.
//!
//! - [`cli`]: the command line: one subcommand per part, each dispatched to the
//!   code that runs it (the binary's `main` only sets up the process and calls it).
//! - [`config`]: the documented RON config (`polycrawl config --default`).
//! - [`orchestrate`]: `polycrawl demo` and `polycrawl crawl`, every part a child
//!   process.
//! - [`procs`]: what `/proc` says about the processes it starts (CPU, threads,
//!   memory).
//! - [`status`]: `polycrawl status`, a running manager's figures.
//!
//! Only the binaries' packages (`polycrawl`, and `bench` for `polycrawl-bench`) may use
//! `anyhow`; the libraries they wire together return typed errors.

pub mod cli;
pub mod config;
pub mod orchestrate;
pub mod procs;
pub mod status;
