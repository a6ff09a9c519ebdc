#!/usr/bin/env bash
# Runs every fuzz target one after the other for SECONDS each (default 600) under
# nice -n 19, with -rss_limit_mb=2048 -timeout=10. New inputs go to a scratch corpus
# ($SCRATCH/<target>, default /tmp/polycrawl-fuzz-corpus), the committed seeds in
# corpus/<target>/ are read only. Prints one summary line per target:
#   target=NAME seconds=S execs=N result=ok|crash|... (the libFuzzer log in $SCRATCH/NAME.log)
# A crash leaves its reproducer in artifacts/<target>/: fix the bug, then commit it
# under regressions/<target>/ (tests in fuzzing/tests/corpus.rs replay it).
# Needs the nightly toolchain and cargo-fuzz; CARGO_TARGET_DIR may point elsewhere.
set -u
cd "$(dirname "$0")"
SECONDS_EACH=${1:-600}
shift || true
TARGETS=${*:-robots http_head chunked warc spool_formats frames extract canon}
SCRATCH=${SCRATCH:-/tmp/polycrawl-fuzz-corpus}
cargo +nightly fuzz build -O || exit 1
for t in $TARGETS; do
    mkdir -p "$SCRATCH/$t"
    start=$(date +%s)
    nice -n 19 cargo +nightly fuzz run -O "$t" "$SCRATCH/$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"$SCRATCH/$t.log" 2>&1
    rc=$?
    end=$(date +%s)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$SCRATCH/$t.log" | grep -o '[0-9]*$' | tail -1)
    if [ "$rc" = 0 ]; then result=ok; else result="failed(rc=$rc)"; fi
    echo "target=$t seconds=$((end - start)) execs=${execs:-?} result=$result"
done
