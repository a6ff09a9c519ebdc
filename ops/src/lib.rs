//! `ops` holds the `polycrawl` binary's library side: the RON config and the
//! command-line interface. The simulated web, `polycrawl websim`, is the `websim`
//! crate below this one.
//!
//! - [`bench`](mod@bench): `polycrawl bench measure|check`, the peer benchmark's measuring
//!   and judging tools (`ops/bench-peers.sh`).
//! - [`cli`]: the command line: one subcommand per part, each dispatched to the
//!   code that runs it (the binary's `main` only sets up the process and calls it).
//! - [`config`]: the documented RON config (`polycrawl config --default`).
//! - [`nfsim`]: `polycrawl nfsim`, the NFS stand-in (a FUSE pass-through with
//!   attribute-cache delays and injected faults) for the multi-machine tests.
//! - [`orchestrate`]: `polycrawl demo` and `polycrawl crawl`, every part a child
//!   process.
//! - [`procs`]: what `/proc` says about the processes it starts (CPU, threads,
//!   memory).
//! - [`status`]: `polycrawl status`, a running manager's figures.
//!
//! `ops` is the only crate that may use `anyhow`; the libraries it wires together
//! return typed errors.

pub mod bench;
pub mod cli;
pub mod config;
pub mod nfsim;
pub mod orchestrate;
pub mod procs;
pub mod status;
