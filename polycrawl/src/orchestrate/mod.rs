//! `polycrawl demo` and `polycrawl crawl`: the whole system on one machine, each
//! part a separate child process of this binary, wired exactly as on many machines
//! (DESIGN.md section 2): one code path, not a toy mode.
//!
//! - [`child`]: [`child::Child`], a started process owned by a guard (SIGTERM,
//!   grace, SIGKILL, reaped; killed on drop), tied to the orchestrator by the
//!   kernel's parent-death signal and in a process group of its own.
//! - [`layout`]: [`layout::Layout`], where a run keeps its files under `--out`,
//!   and the run's config and secret files.
//! - [`launch`]: the start order (the generated config and tokens, then every
//!   process, placed on its machine).
//! - [`system`]: [`system::System`], the running system: the watch loop that
//!   restarts a process that dies, and the stop order.
//! - [`supervised`]: one process under the supervisor (its command, kept to
//!   start it again, its deaths, restarts and CPU time).
//! - [`finish`]: the one end of a crawl and a demo (stop, the processes' last
//!   lines, the repositories read back, the summary).
//! - [`exits`]: wake-ups on a child's exit (SIGCHLD), so the watch loop and the
//!   stops see an exit at once rather than at their next poll.
//! - [`supervise`]: the restart rule: a process killed after it worked is always
//!   started again, with back-off; one in a crash loop is given up on.
//! - [`machines`]: `demo --machines`: network namespaces and NFS stand-in
//!   mounts, one per simulated machine, removed on drop; [`netns`]: the namespace
//!   harness it makes them with (the multi-machine tests use it too).
//! - [`progress`]: live progress (indicatif) from the manager's status.
//! - [`repo_scan`]: what the repository holds, read back from its CDXJ index.
//! - [`strategy`]: which application the parts are (breadth-first or
//!   seed-by-seed) and the seed-by-seed settings.
//! - [`sizing`]: parts, downloaders and reader threads for the cores at hand.
//! - [`websim_check`]: a demo measured against websim's manifest and request log.
//! - [`summary`]: the one-screen summary; [`threads`]: each child's threads' CPU,
//!   for its busiest-thread line.
//! - [`demo`]: `polycrawl demo` (websim plus the system); [`crawl`]:
//!   `polycrawl crawl` (the system against real seeds).
//!
//! Every child is signalled by its own pid only; the orchestrator never kills by
//! name. Ctrl-C / SIGTERM cancel the token given to [`demo::run`] / [`crawl::run`],
//! which then stop every child in order, print the summary of what was done and
//! return `Ok` (exit 0): the same command resumes. Children must be spawned from
//! the main thread (the parent-death signal follows the thread that forked).

pub mod child;
pub mod contact;
pub mod crawl;
pub mod demo;
pub mod exits;
pub mod finish;
pub mod launch;
pub mod layout;
pub mod machines;
pub mod netns;
pub mod parts;
pub mod progress;
pub mod recrawl;
pub mod repo_scan;
pub mod sizing;
pub mod strategy;
pub mod summary;
pub mod supervise;
pub mod supervised;
pub mod system;
pub mod threads;
pub mod websim_check;
