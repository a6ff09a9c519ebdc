#!/usr/bin/env bash
# The project's test command (README, and exactly what .ci/run runs): set-up, the
# format and lint gates, then every test of the workspace with nextest. Tests and
# binaries share the release profile so nothing is built twice.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh"
source "$here/env.sh"
cd "$here/.."

if [ -n "${CI:-}" ]; then
    # CI builds a fresh clone at a path of its own, so this run's workspace
    # artifacts can never be reused: skip incremental state, and delete the test
    # executables this run links (hundreds of MB each, RocksDB inside) when it
    # ends, so the shared target dir does not grow by gigabytes per run. The
    # dependencies (RocksDB above all) stay cached.
    export CARGO_INCREMENTAL=0
    stamp="$(mktemp)"
    trap 'find "$CARGO_TARGET_DIR/release/deps" -maxdepth 1 -type f -perm -u+x ! -name "*.*" -newer "$stamp" -delete 2>/dev/null; rm -f "$stamp"' EXIT
fi
cargo fmt --all --check
# The demo's build and this one must share RocksDB's build (see polycrawl/Cargo.toml).
"$here/check-unified-build.sh"
# The doc gate: rustdoc warnings denied, no stale file paths in comments.
"$here/check-docs.sh"
# The house rules (issues 30 and 40): types that own behaviour <= 12 fields and impl
# blocks in <= 4 files, functions <= 100 lines, impl blocks <= 300 lines, crates
# <= 10,000 lines of shipping code, each crate's workspace dependencies within its
# layer (no test-support in shipping code), no import cycle between concepts, and
# every sleep in test code listed with its reason (ops/house/sleeps.txt, at most 30);
# what is left on purpose is in ops/house/allow.txt with its reason.
"$here/check-house.sh"
# The lint set is the workspace's [workspace.lints] (Cargo.toml) with clippy.toml,
# warnings denied and no other lint flag, so a plain `cargo clippy` agrees with CI
# (`--release` only shares the build with the tests). Shipping code never unwraps;
# tests and benches may: a panic is how they fail.
cargo clippy --release --locked --workspace --all-targets -- -D warnings
# The fuzz targets build the parsers without the crates' default features (no
# RocksDB, no METIS); in the workspace feature unification turns them back on, so
# check that crate alone, as `cargo fuzz build` resolves it.
cargo check --release --locked -p fuzzing
cargo nextest run --release --locked --workspace --no-fail-fast "$@"
