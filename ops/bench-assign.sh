#!/usr/bin/env bash
# Site assignment benchmark (issue 10, Done-when 3): graph-partitioned assignment
# (`polycrawl assign`, METIS on the first crawl's host graph) against the hash.
#
#   ops/bench-assign.sh                     # 300 hosts, 6,000 pages, 16 communities, K = 4 8 16
#   ops/bench-assign.sh --communities 0     # the web without locality (websim's default)
#
# Flags: --hosts N (300), --pages N (6000), --skew S (websim --size-skew, 0.5: the
# biggest host then holds ~3 % of the pages, so K = 16 can balance within 1.1),
# --communities N (16), --seed N (1), --parts "4 8 16", --imbalance R (1.1),
# --interval-ms MS (politeness per host and IP, 20), --work DIR
# (/tmp/polycrawl-bench-assign), --no-build (use $POLYCRAWL_BIN or the built binary),
# --messages (issue 42 Done-when 3: after the first crawl, only the paper's message
# table, `polycrawl assign --messages` at K = 4 8 16 32 64 with both imbalances
# within --imbalance; give --imbalance 1.05 for the paper's 5 %).
#
# What it does:
#   1. a fresh `polycrawl websim` with host communities, crawled once by
#      `polycrawl crawl` (one application) into WORK/crawl-1;
#   2. `polycrawl assign --parts K` on that repository for each K: the assignment
#      file WORK/assign-K.tsv and the evaluator's figures on the first crawl (hash
#      vs partition: distinct URLs crossing parts per stored page, balance);
#   3. a second single-application crawl of the same web (WORK/crawl-2) and
#      `polycrawl assign --evaluate` of each file on it: the figures on a crawl the
#      partition was not computed from;
#   4. the second crawl again with K application parts in exchange mode over 2
#      crawling systems, by the hash and by the assignment file: the URLs the parts
#      really exchanged per stored page, and the balance (SPLIT=0 skips it).
#
# Everything started here (websim) is stopped on exit and on Ctrl-C, by pid.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
source "$here/env.sh"
source "$here/lib.sh"

hosts=300 pages=6000 skew=0.5 communities=16 seed=1 parts="4 8 16" imbalance=1.1
interval_ms=20 work=/tmp/polycrawl-bench-assign build=1 messages=0
while [ $# -gt 0 ]; do
    case "$1" in
        --hosts) hosts="$2"; shift 2 ;;
        --pages) pages="$2"; shift 2 ;;
        --skew) skew="$2"; shift 2 ;;
        --communities) communities="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --parts) parts="$2"; shift 2 ;;
        --imbalance) imbalance="$2"; shift 2 ;;
        --interval-ms) interval_ms="$2"; shift 2 ;;
        --work) work="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        --messages) messages=1; shift ;;
        *) die "unknown flag $1 (see the header of $0)" ;;
    esac
done

target="${CARGO_TARGET_DIR:-$root/target}"
if [ "$build" = 1 ]; then
    (cd "$root" && cargo build --release -p polycrawl >&2)
fi
bin="${POLYCRAWL_BIN:-$target/release/polycrawl}"
[ -x "$bin" ] || die "no polycrawl binary at $bin"

trap 'log "interrupted"; exit 130' INT TERM

rm -rf "$work"
mkdir -p "$work"

# websim, once for both crawls (the web is a function of its flags: same pages, same links).
websim_start "$bin" "$work/websim" --hosts "$hosts" --pages "$pages" --size-skew "$skew" \
    --communities "$communities" --seed "$seed" --slow-ms 50

# The defaults plus what websim on loopback needs, every domain in scope.
loopback_config "$work/config.ron" "$interval_ms"
"$bin" config --check "$work/config.ron" >/dev/null

crawl() { # N
    log "crawl $1 of websim --hosts $hosts --pages $pages --size-skew $skew --communities $communities --seed $seed"
    RUST_LOG=warn "$bin" crawl --seeds "$(ws seeds)" --config "$work/config.ron" \
        --out "$work/crawl-$1" >"$work/crawl-$1.stdout" 2>"$work/crawl-$1.log" \
        || die "crawl $1 failed: $(tail -n 5 "$work/crawl-$1.log")"
    grep -m1 '^polycrawl crawl' "$work/crawl-$1.stdout" >&2 || true
}

crawl 1
results="$work/results.txt"
: >"$results"
machine() {
    printf '\nmachine: %s, %s cores; load average %s; commit %s; %s\n' \
        "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)" "$(nproc)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')" \
        "$(date -u '+%Y-%m-%d %H:%M UTC')"
}
if [ "$messages" = 1 ]; then
    websim_stop
    /usr/bin/time -f 'assign --messages: %e s wall, %U s user, %M KB peak RSS' \
        "$bin" assign --repo "$work/crawl-1/repository" --messages --ks 4,8,16,32,64 \
        --imbalance "$imbalance" --config "$work/config.ron" 2>&1 | tee -a "$results"
    machine
    exit 0
fi
for k in $parts; do
    "$bin" assign --repo "$work/crawl-1/repository" --parts "$k" --imbalance "$imbalance" \
        --config "$work/config.ron" --out "$work/assign-$k.tsv" | tee -a "$results"
done

crawl 2
for k in $parts; do
    "$bin" assign --repo "$work/crawl-2/repository" --evaluate "$work/assign-$k.tsv" \
        --config "$work/config.ron" | sed 's/^assign /second-crawl /' | tee -a "$results"
done

# The second crawl with K application parts in exchange mode (2 crawling systems),
# once by the hash and once by the assignment file: what the parts really sent each
# other per stored page, and the largest part's pages over the mean (the `metrics:`
# line of `polycrawl crawl`).
split_crawl() { # K RULE [--assignment FILE]
    local k="$1" rule="$2"
    shift 2
    log "crawl with $k parts ($rule)"
    RUST_LOG=warn "$bin" crawl --seeds "$(ws seeds)" --config "$work/config.ron" \
        --parts "$k" --systems 2 --mode exchange "$@" \
        --out "$work/split-$k-$rule" >"$work/split-$k-$rule.stdout" 2>"$work/split-$k-$rule.log" \
        || die "split crawl K=$k $rule failed: $(tail -n 5 "$work/split-$k-$rule.log")"
    local m
    m="$(grep -m1 '^metrics:' "$work/split-$k-$rule.stdout" || true)"
    [ -n "$m" ] || die "no metrics line from the split crawl K=$k $rule"
    printf 'split-crawl parts=%s rule=%s %s\n' "$k" "$rule" "${m#metrics:    }" | tee -a "$results"
}
if [ "${SPLIT:-1}" = 1 ]; then
    for k in $parts; do
        split_crawl "$k" hash
        split_crawl "$k" partition --assignment "$work/assign-$k.tsv"
    done
fi

websim_stop
machine
log "results in $results"
