#!/usr/bin/env bash
# Cho and Garcia-Molina's partitioning figures (issue 25, Done-when 3): the table of
# URLs exchanged per page and balance at K = 2, 4, 8 for URL-hash, site-hash,
# hierarchical, METIS and METIS with the top-N most-linked URLs replicated, and the
# quality curve (share of the reference crawl's top-N most-linked pages held after
# each 10 % of the downloads) of split crawls in exchange and firewall mode.
#
#   ops/bench-partitioning.sh               # 100 hosts, 3,000 pages, 8 communities
#
# Flags: --hosts N (100), --pages N (3000), --skew S (websim --size-skew, 0.5),
# --communities N (8), --seed N (1), --ks "2,4,8", --tops "100,1000",
# --parts K (4: the split crawls), --top N (100: the quality metric's top-N and the
# replicated URLs of the replicated crawl), --interval-ms MS (20), --work DIR
# (/tmp/polycrawl-bench-partitioning), --no-build (use $POLYCRAWL_BIN or the built
# binary).
#
# What it does:
#   1. a fresh `polycrawl websim` with host communities (one instance for every
#      crawl, so the URLs of one crawl are those of the next), crawled once,
#      complete, by one application into WORK/reference;
#   2. `polycrawl assign --table` on that repository: the table, and the
#      evaluation's cost on its first line (`read_seconds=`: one read of the
#      repository with link extraction; `table_seconds=`: one METIS run per K and
#      one linear pass per row);
#   3. `polycrawl assign --parts K --replicate N`: the METIS file and the N
#      most-linked URLs;
#   4. three crawls of the same web split in K parts over 2 crawling systems:
#      exchange by the hash, firewall by the hash, exchange with the METIS file
#      and replication; for each, its `metrics:` line and `polycrawl quality`
#      against the reference. (The replicated crawl's owners offer the replicated
#      URLs like seeds, so its curve starts high by construction.)
#
# Everything started here (websim) is stopped on exit and on Ctrl-C, by pid.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
source "$here/env.sh"
source "$here/lib.sh"

hosts=100 pages=3000 skew=0.5 communities=8 seed=1 ks="2,4,8" tops="100,1000" parts=4
top=100 interval_ms=20 work=/tmp/polycrawl-bench-partitioning build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --hosts) hosts="$2"; shift 2 ;;
        --pages) pages="$2"; shift 2 ;;
        --skew) skew="$2"; shift 2 ;;
        --communities) communities="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --ks) ks="$2"; shift 2 ;;
        --tops) tops="$2"; shift 2 ;;
        --parts) parts="$2"; shift 2 ;;
        --top) top="$2"; shift 2 ;;
        --interval-ms) interval_ms="$2"; shift 2 ;;
        --work) work="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        *) die "unknown flag $1 (see the header of $0)" ;;
    esac
done

target="${CARGO_TARGET_DIR:-$root/target}"
if [ "$build" = 1 ]; then
    (cd "$root" && cargo build --release --workspace --bins >&2)
fi
bin="${POLYCRAWL_BIN:-$target/release/polycrawl}"
[ -x "$bin" ] || die "no polycrawl binary at $bin"

trap 'log "interrupted"; exit 130' INT TERM

rm -rf "$work"
mkdir -p "$work"

websim_start "$bin" "$work/websim" --hosts "$hosts" --pages "$pages" --size-skew "$skew" \
    --communities "$communities" --seed "$seed" --slow-ms 50

# The defaults plus what websim on loopback needs, every domain in scope.
loopback_config "$work/config.ron" "$interval_ms"
"$bin" config --check "$work/config.ron" >/dev/null

crawl() { # NAME [FLAGS...]
    local name="$1"
    shift
    log "crawl $name: websim --hosts $hosts --pages $pages --size-skew $skew --communities $communities --seed $seed $*"
    RUST_LOG=warn "$bin" crawl --seeds "$(ws seeds)" --config "$work/config.ron" "$@" \
        --out "$work/$name" >"$work/$name.stdout" 2>"$work/$name.log" \
        || die "crawl $name failed: $(tail -n 5 "$work/$name.log")"
    grep -m1 '^polycrawl crawl' "$work/$name.stdout" >&2 || true
}

results="$work/results.txt"
: >"$results"
crawl reference
reference="$work/reference/repository"
"$bin" assign --repo "$reference" --config "$work/config.ron" --table --ks "$ks" \
    --tops "$tops" | tee -a "$results"
"$bin" assign --repo "$reference" --config "$work/config.ron" --parts "$parts" \
    --out "$work/assign-$parts.tsv" --replicate "$top" --replicated "$work/top-$top.tsv" \
    | tee -a "$results"

split() { # NAME [FLAGS...]
    local name="$1"
    shift
    crawl "$name" --parts "$parts" --systems 2 "$@"
    printf '\n%s: %s\n' "$name" "$(grep -m1 '^metrics:' "$work/$name.stdout" || echo 'no metrics line')" \
        | tee -a "$results"
    local repos=()
    for ((i = 0; i < parts; i++)); do repos+=("$work/$name/repository-p$i"); done
    "$bin" quality --reference "$reference" --config "$work/config.ron" --top "$top" \
        "${repos[@]}" | tee -a "$results"
}
split exchange --mode exchange
split firewall --mode firewall
split exchange-metis-top --mode exchange --assignment "$work/assign-$parts.tsv" \
    --replicated "$work/top-$top.tsv"

websim_stop
printf '\nmachine: %s, %s cores; load average %s; commit %s; %s\n' \
    "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)" "$(nproc)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" | tee -a "$results"
log "results in $results"
