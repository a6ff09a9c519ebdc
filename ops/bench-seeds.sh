#!/usr/bin/env bash
# Seed-by-seed benchmarks (issue 26; SCrawler, Lee et al. 2007), both on websim with a
# fixed latency per response, so that the bound is each worker's requests in flight
# and the time a URL takes to come back, not these cores:
#
#   ops/bench-seeds.sh balance [--runs R]   Done-when 2: the URL distributor (Figure 5)
#       against free competition on the same web and workers: crawl time, pages/s,
#       seeds held per worker sampled every second (max / mean over time), and the
#       held-seeds series as a text plot (the paper's Figures 7 and 8).
#   ops/bench-seeds.sh scaling [--machines "1 2 3 4 5"] [--workers "W ..."]   Done-when 3:
#       1 to 5 simulated machines (`polycrawl demo --machines`: per machine a crawling
#       system and one application part, network namespaces, NFS-like spool views),
#       per-worker pages/s in the steady state of each part (the paper's Figure 9),
#       for each worker count per machine given (issue 41: "10 15 20", as the paper).
#   Issue 41 (the paper's setting: 20 workers, m = 10, 3 runs each; then 10, 15 and
#   20 workers on 1, 3 and 5 machines):
#       ops/bench-seeds.sh balance --runs 3 --workers 20 --no-build
#       ops/bench-seeds.sh scaling --machines "1 3 5" --workers "10 15 20" --no-build
#
# Both run `polycrawl demo --strategy seed-by-seed` (which checks every run against
# websim's parties: 100 % of the parties, no duplicate, nothing robots.txt forbids)
# and read each part's per-second sample (<out>/state/app*/held.tsv). Common flags:
# --out DIR (default /tmp/polycrawl-bench-seeds), --no-build (use the binary in
# $CARGO_TARGET_DIR or target/release), --latency-ms MS (default 200), --hosts N,
# --pages N (the web; defaults per benchmark). Needs root for `scaling`
# (namespaces, FUSE). Prints the machine, the commands and the figures.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-}"
[ -n "$mode" ] && shift || true
runs=1
out=/tmp/polycrawl-bench-seeds
build=1
latency=200
machines="1 2 3 4 5"
workers=3
hosts=""
pages=""
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        --latency-ms) latency="$2"; shift 2 ;;
        --machines) machines="$2"; shift 2 ;;
        --workers) workers="$2"; workers_balance="$2"; shift 2 ;;
        --hosts) hosts="$2"; shift 2 ;;
        --pages) pages="$2"; shift 2 ;;
        *) echo "bench-seeds: unknown flag $1" >&2; exit 2 ;;
    esac
done
case "$mode" in
    balance|scaling) ;;
    *) echo "usage: ops/bench-seeds.sh balance|scaling [flags] (see the header)" >&2; exit 2 ;;
esac

target="${CARGO_TARGET_DIR:-$here/target}"
if [ "$build" = 1 ]; then
    (cd "$here" && cargo build --release --locked -p polycrawl --bin polycrawl >&2)
fi
bin="$target/release/polycrawl"
[ -x "$bin" ] || { echo "bench-seeds: no $bin (build it, or set CARGO_TARGET_DIR)" >&2; exit 1; }
mkdir -p "$out"

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "polycrawl: $(cd "$here" && git rev-parse --short HEAD 2>/dev/null || echo '?')"

# One demo; its stdout in $1/stdout. The remaining arguments are demo flags.
demo() {
    local dir="$1"; shift
    rm -rf "$dir"
    echo "+ polycrawl demo --out $dir $*" >&2
    if ! "$bin" demo --out "$dir" "$@" >"$dir.stdout" 2>"$dir.stderr"; then
        echo "bench-seeds: the demo in $dir failed:" >&2
        tail -n 20 "$dir.stdout" "$dir.stderr" >&2
        exit 1
    fi
}

# "crawl complete in X s" and "speed: Y pages/s" of a demo's stdout.
secs() { sed -n 's/.*crawl complete in \([0-9.]*\) s.*/\1/p' "$1" | head -n 1; }
speed() { sed -n 's/^speed: *\([0-9.]*\) pages\/s.*/\1/p' "$1" | head -n 1; }

# Seeds held per worker over a held.tsv: the mean over the samples with a party under
# way of max/mean held, the tail (seconds with the queue empty and a party under
# way) and the worker-seconds spent holding nothing in that tail.
held_figures() {
    awk -F'\t' '!/^#/ && $3 > 0 {
        n = split($6, h, ","); max = 0; sum = 0; idle = 0
        for (i = 1; i <= n; i++) { sum += h[i]; if (h[i] > max) max = h[i]; if (h[i] == 0) idle++ }
        if (sum > 0) { r += max / (sum / n); k++ }
        if ($2 == 0) { tail++; idle_ws += idle }
    } END { printf "%.2f\t%d\t%d\n", (k ? r / k : 1), tail, idle_ws }' "$1"
}

# The held-seeds series as text: every STEP seconds, the queue and each worker's seeds.
held_plot() { # FILE STEP
    awk -F'\t' -v step="$2" '!/^#/ {
        t = int($1 / 1000); if (t < next_t) next; next_t = t + step
        n = split($6, h, ","); line = sprintf("%5d s  queue %4d  ", t, $2)
        for (i = 1; i <= n; i++) { bar = ""; for (j = 0; j < h[i]; j++) bar = bar "#"; line = line sprintf("%-10s|", bar) }
        print line
    }' "$1"
}

if [ "$mode" = balance ]; then
    # Few seeds with big parties (80 seeds, 40 held at once), so that the end of the
    # crawl, after the seed queue is empty, is where the distributor can act.
    hosts="${hosts:-40}"; pages="${pages:-6000}"
    flags=(--hosts "$hosts" --pages "$pages" --size-skew 0.5 --components 2 --all-seeds
        --shuffle-seeds --own-addresses --interval-ms 10 --connections-per-host 4
        --latency-ms "$latency" --strategy seed-by-seed --workers "${workers_balance:-4}"
        --window 4 --seed-contexts 10)
    echo "web and crawl: ${flags[*]}"
    printf 'run\tbalance\tcrawl_s\tpages_per_s\tmax_over_mean\ttail_s\tidle_worker_s\n' >"$out/balance.tsv"
    for run in $(seq 1 "$runs"); do
        for balance in distributor free; do
            dir="$out/balance-$balance-$run"
            demo "$dir" "${flags[@]}" --balance "$balance"
            f="$(held_figures "$dir/state/app/held.tsv")"
            printf '%s\t%s\t%s\t%s\t%s\n' "$run" "$balance" "$(secs "$dir.stdout")" \
                "$(speed "$dir.stdout")" "$f" >>"$out/balance.tsv"
        done
    done
    echo
    column -t -s $'\t' "$out/balance.tsv"
    for balance in distributor free; do
        echo
        echo "seeds held per worker over time, $balance (run 1; one # a seed):"
        held_plot "$out/balance-$balance-1/state/app/held.tsv" 10
    done
    exit 0
fi

# scaling
hosts="${hosts:-100}"; pages="${pages:-1500}"
printf 'machines\tworkers\tcrawl_s\tpages\tsteady_pages_per_s\tper_worker_min\tper_worker_mean\tper_worker_max\n' >"$out/scaling.tsv"
for w_count in $workers; do
for n in $machines; do
    workers="$w_count"
    # The web grows with the machines, so that every run has a steady state.
    flags=(--machines --visibility-delay-ms 200 --systems "$n" --parts "$n" --downloaders "$n"
        --hosts "$((hosts * n))" --pages "$((pages * n))" --size-skew 0 --components 2
        --all-seeds --shuffle-seeds --own-addresses --interval-ms 10
        --connections-per-host 4 --latency-ms "$latency" --strategy seed-by-seed
        --workers "$workers" --window 4 --seed-contexts 10)
    dir="$out/scaling-$n-w$w_count"
    demo "$dir" "${flags[@]}"
    # Per part: pages/s between 20 % and 80 % of its run (the steady state), per worker.
    rates=()
    for held in "$dir"/state/app*/held.tsv; do
        rates+=("$(awk -F'\t' -v w="$workers" '!/^#/ { t[NR] = $1 / 1000; p[NR] = $5; n = NR }
            END { first = 0; for (i = 1; i <= n; i++) if (!first && t[i] > 0) first = i
                  a = first + int((n - first) * 0.2); b = first + int((n - first) * 0.8)
                  if (b <= a) { print 0; exit }
                  printf "%.3f\n", (p[b] - p[a]) / (t[b] - t[a]) / w }' "$held")")
    done
    stats="$(printf '%s\n' "${rates[@]}" | awk '{ s += $1; if (min == "" || $1 < min) min = $1; if ($1 > max) max = $1 }
        END { printf "%.2f\t%.2f\t%.2f", min, s / NR, max }')"
    total="$(printf '%s\n' "${rates[@]}" | awk -v w="$workers" '{ s += $1 * w } END { printf "%.1f", s }')"
    stored="$(sed -n 's/^pages: *\([0-9]*\) responses.*/\1/p' "$dir.stdout" | head -n 1)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$workers" "$(secs "$dir.stdout")" "$stored" "$total" \
        "$stats" >>"$out/scaling.tsv"
done
done
echo
column -t -s $'\t' "$out/scaling.tsv"
