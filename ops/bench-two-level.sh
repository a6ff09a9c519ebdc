#!/usr/bin/env bash
# Scaling of the two-level crawl with a coordinator on a disk web (issue 25,
# Done-when 2; FC2L-UDC section 4, its DiskWWW): a stored crawl of at least 20,000
# pages (ops/make-disk-web.sh) served as the web by websim (--from-repository), every
# agent's downloads paced at a fixed bandwidth (websim --pace-per-client: each
# simulated machine has its own address), so that the network, not these 2 cores, is
# the bound. For each agent count A: `polycrawl demo --machines --systems A --parts A
# --mode two-level --disk-web REPO --pace-per-client B` (A crawling systems, A agents,
# a coordinator), and the same without the coverage fix (--no-fix) for the cost of
# full coverage.
#
#   ops/bench-two-level.sh [--repo REPO] [--agents "1 2 4 7"] [--pace BYTES_PER_SEC]
#                          [--no-fix-agents "4 7"] [--out DIR] [--no-build]
#
# --repo: the stored crawl (default: make one with ops/make-disk-web.sh into
# /tmp/polycrawl-disk-web); --pace: bytes per second per agent (default 750000, about
# 110 requests/s of the default disk web's 6.5 kB); --no-fix-agents: agent counts also
# run as plain 2L ("" for none). Each demo checks itself against the disk web's
# manifest (100 % coverage, no duplicate, nothing robots.txt forbids) for the fixed
# 2L. Prints the machine, each command and a table: pages/s, speed-up against one
# agent, messages per page between the coordinator and the agents (sites reported by
# the agents plus site assignments published, each read by every agent, over pages
# stored), URLs exchanged per page, balance. Needs root (namespaces, FUSE).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
repo=""
agents="1 2 4 7"
nofix_agents="4 7"
pace=750000
out=/tmp/polycrawl-bench-two-level
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --repo) repo="$2"; shift 2 ;;
        --agents) agents="$2"; shift 2 ;;
        --no-fix-agents) nofix_agents="$2"; shift 2 ;;
        --pace) pace="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        *) echo "bench-two-level: unknown flag $1 (see the header)" >&2; exit 2 ;;
    esac
done
target="${CARGO_TARGET_DIR:-$here/target}"
if [ "$build" = 1 ]; then
    (cd "$here" && cargo build --release --locked -p polycrawl --bin polycrawl >&2)
fi
bin="$target/release/polycrawl"
[ -x "$bin" ] || { echo "bench-two-level: no $bin (build it, or set CARGO_TARGET_DIR)" >&2; exit 1; }
if [ -z "$repo" ]; then
    repo=/tmp/polycrawl-disk-web/crawl/repository
    [ -d "$repo" ] || "$here/ops/make-disk-web.sh" --no-build >&2
fi
[ -d "$repo/warc" ] || { echo "bench-two-level: $repo is no repository" >&2; exit 1; }
mkdir -p "$out"

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "polycrawl: $(cd "$here" && git rev-parse --short HEAD 2>/dev/null || echo '?'); disk web: $repo; pace $pace B/s per agent"

# One demo: A agents, with or without the fix; appends a row to the table.
run() { # AGENTS FIX(fix|nofix)
    local a="$1" fix="$2" dir="$out/$2-$1" flags=()
    [ "$fix" = nofix ] && flags+=(--no-fix)
    rm -rf "$dir"
    local cmd=("$bin" demo --out "$dir" --machines --visibility-delay-ms 200 --systems "$a"
        --parts "$a" --downloaders "$a" --mode two-level "${flags[@]}" --disk-web "$repo"
        --pace-per-client "$pace" --interval-ms 10)
    echo "+ ${cmd[*]}" >&2
    local rc=0
    "${cmd[@]}" >"$dir.stdout" 2>"$dir.stderr" || rc=$?
    # Without the fix the crawl may miss pages (the demo then fails its check):
    # its figures are the result.
    if [ "$rc" -ne 0 ] && [ "$fix" = fix ]; then
        echo "bench-two-level: the demo in $dir failed:" >&2
        tail -n 20 "$dir.stdout" "$dir.stderr" >&2
        exit 1
    fi
    awk -v a="$a" -v fix="$fix" '
        /crawl complete in/ { for (i = 1; i <= NF; i++) if ($i == "in") secs = $(i + 1) }
        /^speed:/ { speed = $2 }
        /^coverage:/ { coverage = $2 }
        /^metrics:/ { for (i = 1; i <= NF; i++) { if ($i == "overhead") xpp = $(i + 1); if ($i == "balance") bal = $(i + 1); if ($i == "pages" && !pages) pages = $(i + 1) } }
        /^two-level:/ { for (i = 1; i <= NF; i++) { if ($i == "assigned") assigned = $(i + 1); if ($i == "reported") reported = $(i + 1) } }
        END { msgs = (pages > 0) ? (reported + assigned * a) / pages : 0
              printf "%s\t%s\t%s\t%s\t%s\t%s\t%.4f\t%s\t%s\n", a, fix, secs, speed, coverage, pages, msgs, xpp, bal }' \
        "$dir.stdout" >>"$out/table.tsv"
}

printf 'agents\tmode\tcrawl_s\tpages_per_s\tcoverage\tpages\tmsgs_per_page\turls_exchanged_per_page\tbalance\n' >"$out/table.tsv"
for a in $agents; do run "$a" fix; done
for a in $nofix_agents; do run "$a" nofix; done
echo
awk -F'\t' 'NR == 1 { print $0 "\tspeed_up"; next }
    $2 == "fix" && !base { base = $4 }
    { printf "%s\t%s\n", $0, (base && $2 == "fix") ? sprintf("%.2f", $4 / base) : "-" }' "$out/table.tsv" \
    | column -t -s $'\t'
