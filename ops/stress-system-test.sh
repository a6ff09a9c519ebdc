#!/usr/bin/env bash
# Runs the politeness system test (tests/tests/system.rs,
# every_url_once_polite_and_robots_obeyed) RUNS times in a row (default 20) on a
# loaded machine: stress-ng keeps every core busy with CPU work of its own for the
# whole loop, as a build or another job would. Stops at the first failure. Each
# run's figures ("system test 1: ..." lines) and the closing tally go to
# stress-system-test.log in the current directory (or $LOG).
#
#   ops/stress-system-test.sh            # 20 runs, all cores loaded
#   RUNS=5 LOAD=1 ops/stress-system-test.sh
#
# LOAD is the number of stress-ng CPU workers (default: one per core; 0: no load).
# FILTER is a nextest filter that chooses other tests to loop instead, e.g.
#   RUNS=20 LOAD=1 FILTER='binary_id(tests::machines)' ops/stress-system-test.sh
# The loop runs a copy of the polycrawl binary built at its start, so a build in
# the same target dir during the loop does not change what is tested.
# It is a test-only loop, not part of ops/test.sh: 20 runs take about 40 minutes.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
cd "$here/.."

runs="${RUNS:-20}"
load="${LOAD:-$(nproc)}"
log="${LOG:-$PWD/stress-system-test.log}"
test_name="every_url_once_polite_and_robots_obeyed"
filter="${FILTER:-binary_id(tests::system) & test(=$test_name)}"

if [ "$load" -gt 0 ] && ! command -v stress-ng >/dev/null; then
    echo "stress-system-test: installing stress-ng (Debian package)" >&2
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y stress-ng >/dev/null
    else
        sudo apt-get install -y stress-ng >/dev/null
    fi
fi

# Build everything first, so the load does not slow a build down instead; with
# --workspace, as ops/test.sh does, so the features (and the build) are the same,
# and the test runs that very polycrawl binary instead of building it again.
cargo build --release --locked --workspace --all-targets
cargo nextest run --release --locked --workspace --no-run
bin_dir="$(mktemp -d)"
cp "$CARGO_TARGET_DIR/release/polycrawl" "$bin_dir/polycrawl"
export POLYCRAWL_BIN="$bin_dir/polycrawl"

stress_pid=""
stop_load() {
    rm -rf "$bin_dir"
    if [ -n "$stress_pid" ]; then
        kill "$stress_pid" 2>/dev/null || true
        wait "$stress_pid" 2>/dev/null || true
    fi
}
trap stop_load EXIT
if [ "$load" -gt 0 ]; then
    # Bounded: the load ends by itself after 3 hours even if this script is killed.
    stress-ng --cpu "$load" --timeout 3h --quiet &
    stress_pid=$!
fi

: >"$log"
echo "stress-system-test: $runs runs of $filter, $load stress-ng CPU workers, $(nproc) cores" | tee -a "$log"
passed=0
failed=0
for i in $(seq 1 "$runs"); do
    started=$(date +%s)
    out="$(mktemp)"
    if cargo nextest run --release --locked --workspace --no-fail-fast \
        --success-output immediate -E "$filter" >"$out" 2>&1; then
        passed=$((passed + 1))
        verdict=passed
    else
        failed=$((failed + 1))
        verdict=FAILED
    fi
    {
        echo "run $i: $verdict in $(( $(date +%s) - started )) s; $(uptime | sed 's/.*load/load/')"
        grep -E "system test 1:|PASS \\[|politeness violations|panicked|\[(Crawler|Server|Causality)\]|not fetched|TIMEOUT" "$out" || true
    } | tee -a "$log"
    if [ "$verdict" = FAILED ]; then
        cp "$out" "$log.run-$i.out"
        echo "run $i output kept in $log.run-$i.out" | tee -a "$log"
        rm -f "$out"
        break
    fi
    rm -f "$out"
done
echo "stress-system-test: $passed passed, $failed failed" | tee -a "$log"
[ "$failed" -eq 0 ] && [ "$passed" -eq "$runs" ]
