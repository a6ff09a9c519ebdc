# Sourced by the scripts in ops/: one cargo target dir, kept outside the checkout so
# every clone (and CI) reuses the RocksDB and dependency builds. Override by setting
# CARGO_TARGET_DIR before running.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrawl/target}"
