#!/usr/bin/env bash
# The project's test command (README, and exactly what .ci/run runs): set-up, the
# format and lint gates, then every test of the workspace with nextest. Tests and
# binaries share the release profile so nothing is built twice.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh"
source "$here/env.sh"
cd "$here/.."
cargo fmt --all --check
cargo clippy --release --locked --workspace --all-targets -- -D warnings
cargo nextest run --release --locked --workspace --no-fail-fast "$@"
