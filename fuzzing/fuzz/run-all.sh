#!/usr/bin/env bash
# Runs every fuzz target, one after the other, until it has used CPU_SECONDS of
# CPU (default 600: the 10 CPU-minutes issue 11 asks for), in libFuzzer runs of at
# most CHUNK seconds of wall time each (default 120), under nice -n 19, with
# -rss_limit_mb=2048 -timeout=10. CPU time, not wall time, is what counts: on a
# busy machine a target at nice 19 gets a fraction of a core, and the loop goes on
# until the target has had its CPU. Each run resumes from the scratch corpus of the
# previous one ($SCRATCH/<target>, default /tmp/polycrawl-fuzz-corpus); the
# committed seeds in corpus/<target>/ are read only. Prints one summary line per
# target:
#   target=NAME cpu_seconds=C wall_seconds=W runs=R execs=N result=ok|failed(rc=..)
# (the libFuzzer logs in $SCRATCH/NAME.<run>.log). A crash leaves its reproducer in
# artifacts/<target>/: fix the bug, then commit it under regressions/<target>/
# (tests in fuzzing/tests/corpus.rs replay it).
# Needs the nightly toolchain and cargo-fuzz; CARGO_TARGET_DIR may point elsewhere.
set -u
cd "$(dirname "$0")"
CPU_SECONDS=${1:-600}
shift || true
CHUNK=${CHUNK:-120}
TARGETS=${*:-robots http_head chunked warc spool_formats frames extract canon sitemap}
SCRATCH=${SCRATCH:-/tmp/polycrawl-fuzz-corpus}
cargo +nightly fuzz build -O || exit 1
for t in $TARGETS; do
    mkdir -p "$SCRATCH/$t"
    start=$(date +%s)
    cpu=0 runs=0 execs=0 result=ok
    while [ "$cpu" -lt "$CPU_SECONDS" ]; do
        runs=$((runs + 1))
        log="$SCRATCH/$t.$runs.log"
        /usr/bin/time -f '%U %S' -o "$SCRATCH/$t.time" \
            nice -n 19 cargo +nightly fuzz run -O "$t" "$SCRATCH/$t" "corpus/$t" -- \
            -max_total_time="$CHUNK" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
            >"$log" 2>&1
        rc=$?
        used=$(awk '{ printf "%d", $1 + $2 }' "$SCRATCH/$t.time" 2>/dev/null)
        cpu=$((cpu + ${used:-0}))
        n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
        execs=$((execs + ${n:-0}))
        if [ "$rc" != 0 ]; then
            result="failed(rc=$rc, see $log)"
            break
        fi
    done
    end=$(date +%s)
    echo "target=$t cpu_seconds=$cpu wall_seconds=$((end - start)) runs=$runs execs=$execs result=$result"
done
