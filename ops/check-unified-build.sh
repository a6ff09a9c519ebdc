#!/usr/bin/env bash
# Checks that the two README commands resolve the same features for every
# dependency: `cargo build -p polycrawl` (ops/polycrawl, the demo) and the workspace's
# test build (ops/test.sh). If they differ, a fresh machine compiles RocksDB twice.
# Uses cargo's unit graph (an unstable flag, hence RUSTC_BOOTSTRAP for this call
# only). Prints the differing units and exits 1, or exits 0 silently.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
graph() { RUSTC_BOOTSTRAP=1 cargo build --release --locked --unit-graph -Z unstable-options "$@"; }
graph -p polycrawl --bin polycrawl >"$tmp/ops.json"
graph --workspace --all-targets >"$tmp/workspace.json"
python3 - "$tmp/ops.json" "$tmp/workspace.json" <<'PY'
import json, sys
def units(path):
    out = {}
    for u in json.load(open(path))["units"]:
        key = (u["pkg_id"].split("#")[-1], u["target"]["name"], u["mode"])
        out.setdefault(key, set()).add(tuple(sorted(u["features"])))
    return out
demo, tests = units(sys.argv[1]), units(sys.argv[2])
bad = [(k, demo[k], tests[k]) for k in sorted(set(demo) & set(tests)) if demo[k] != tests[k]]
for key, a, b in bad:
    print(f"check-unified-build: {key[0]} ({key[1]}, {key[2]}): demo {sorted(a)} vs tests {sorted(b)}")
if bad:
    print("check-unified-build: add the missing features to polycrawl/Cargo.toml (see its comment)")
    sys.exit(1)
PY
