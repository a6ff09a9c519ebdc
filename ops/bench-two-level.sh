#!/usr/bin/env bash
# Scaling of the two-level crawl with a coordinator on a disk web (issue 25,
# Done-when 2; issue 41: as FC2L-UDC section 4 ran it, its DiskWWW): a stored crawl
# (ops/make-disk-web.sh; `--seeds N` for a web whose sites are found while crawling)
# served as the web by websim (--from-repository), every agent's downloads paced at a
# fixed bandwidth (websim --pace-per-client: each simulated machine has its own
# address), so that the network, not these 2 cores, is the bound. For each agent
# count A: `polycrawl demo --machines --systems A --parts A --mode two-level
# --disk-web REPO --pace-per-client B` (A crawling systems, A agents, a coordinator),
# and the same without the coverage fix (--no-fix) for the cost of full coverage.
#
#   ops/bench-two-level.sh [--repo REPO] [--agents "1 2 3 5 7"] [--pace BYTES_PER_SEC]
#                          [--no-fix-agents "2 3 5 7"] [--out DIR] [--no-build] [--table-only]
#
# --repo: the stored crawl (default: make one with ops/make-disk-web.sh into
# /tmp/polycrawl-disk-web); --pace: bytes per second per agent (default 750000, about
# 110 requests/s of the default disk web's 6.5 kB); --no-fix-agents: agent counts also
# run as plain 2L ("" for none; one agent is the unsplit crawl either way). Each demo
# checks itself against the disk web's manifest (100 % coverage, no duplicate,
# nothing robots.txt forbids) for the fixed 2L; a plain 2L run's shortfall is its
# result. Prints the machine, each command and a table: pages/s, speed-up against
# one agent, site reports per page, messages per page between the coordinator and
# the agents (sites reported by the agents plus site assignments published, each
# read by every agent, over pages stored), URLs exchanged per page, balance; then
# `polycrawl cost-model` (FC2L-UDC equations 2-4) calibrated on the one-agent and
# the largest fixed run (the paced rate and the fixed start and end) and fed each
# count's measured reports, assignments, exchanges and balance, against the
# measured time. --table-only: no run, the table and the model from the runs already
# in --out. Needs root (namespaces, FUSE).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
repo=""
agents="1 2 3 5 7"
nofix_agents="2 3 5 7"
pace=750000
out=/tmp/polycrawl-bench-two-level
build=1
table_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --repo) repo="$2"; shift 2 ;;
        --agents) agents="$2"; shift 2 ;;
        --no-fix-agents) nofix_agents="$2"; shift 2 ;;
        --pace) pace="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        --table-only) table_only=1 build=0; shift ;;
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
    local cmd=("$bin" demo --out "$dir" --machines --visibility-delay-ms 200 --systems "$a"
        --parts "$a" --downloaders "$a" --mode two-level "${flags[@]}" --disk-web "$repo"
        --pace-per-client "$pace" --interval-ms 10)
    local rc=0
    if [ "$table_only" = 0 ]; then
        rm -rf "$dir"
        echo "+ ${cmd[*]}" >&2
        "${cmd[@]}" >"$dir.stdout" 2>"$dir.stderr" || rc=$?
    fi
    # Without the fix the crawl may miss pages (the demo then fails its check):
    # its figures are the result.
    if [ "$rc" -ne 0 ] && [ "$fix" = fix ]; then
        echo "bench-two-level: the demo in $dir failed:" >&2
        tail -n 20 "$dir.stdout" "$dir.stderr" >&2
        exit 1
    fi
    awk -v a="$a" -v fix="$fix" '
        # "incomplete": URLs in scope cut by the trap detectors, as in the stored crawl.
        /crawl (complete|incomplete) in/ { for (i = 1; i <= NF; i++) if ($i == "in" && secs == "") secs = $(i + 1) }
        /^speed:/ { speed = $2 }
        /^coverage:/ { coverage = $2; if (!pages) { split($2, c, "/"); pages = c[1] } }
        /^metrics:/ { for (i = 1; i <= NF; i++) { if ($i == "overhead") xpp = $(i + 1); if ($i == "balance") bal = $(i + 1); if ($i == "pages" && !pages) pages = $(i + 1) } }
        /^two-level:/ { for (i = 1; i <= NF; i++) { if ($i == "assigned") assigned = $(i + 1); if ($i == "reported") reported = $(i + 1) } }
        END { msgs = (pages > 0) ? (reported + assigned * a) / pages : 0
              rpp = (pages > 0) ? reported / pages : 0
              app = (pages > 0) ? assigned / pages : 0
              if (bal == "") bal = 1
              if (xpp == "") xpp = 0
              printf "%s\t%s\t%s\t%s\t%s\t%s\t%.4f\t%.4f\t%.4f\t%s\t%s\n", a, fix, secs, speed, coverage, pages, rpp, app, msgs, xpp, bal }' \
        "$dir.stdout" >>"$out/table.tsv"
}

printf 'agents\tmode\tcrawl_s\tpages_per_s\tcoverage\tpages\treports_per_page\tassigned_per_page\tmsgs_per_page\turls_exchanged_per_page\tbalance\n' >"$out/table.tsv"
for a in $agents; do run "$a" fix; done
for a in $nofix_agents; do [ "$a" -gt 1 ] && run "$a" nofix; done
echo
# Speed-up against one agent's crawl time; the cost of the fix: the fixed run's
# time over plain 2L's at the same count.
awk -F'\t' 'NR == FNR { if (FNR > 1) t[$1 "/" $2] = $3; next }
    FNR == 1 { print $0 "\tspeed_up\tfix_cost"; next }
    { one = t["1/fix"]; plain = t[$1 "/nofix"]
      up = (one > 0 && $3 > 0) ? sprintf("%.2f", one / $3) : "-"
      cost = ($2 == "fix" && plain > 0) ? sprintf("%+.1f%%", 100 * ($3 / plain - 1)) : "-"
      printf "%s\t%s\t%s\n", $0, up, cost }' "$out/table.tsv" "$out/table.tsv" \
    | column -t -s $'\t'

# The cost model: the paced rate and the fixed part from the one-agent run and the
# largest fixed run (T = fixed + pages x balance / (A x rate)), then a prediction
# for each run with its own measured rates per page.
read -r t1 p1 < <(awk -F'\t' '$1 == 1 && $2 == "fix" { print $3, $6 }' "$out/table.tsv")
read -r an tn pn bn < <(awk -F'\t' '$2 == "fix" && $1 > 1 { a = $1; t = $3; p = $6; b = $11 }
    END { print a, t, p, b }' "$out/table.tsv")
if [ -n "${t1:-}" ] && [ -n "${an:-}" ]; then
    # Solve t1 = f + p1 / s and tn = f + pn * bn / (an * s) for s and f.
    read -r single fixed < <(awk -v t1="$t1" -v p1="$p1" -v tn="$tn" -v pn="$pn" -v bn="$bn" -v an="$an" \
        'BEGIN { k = pn * bn / an; s = (p1 - k) / (t1 - tn); f = t1 - p1 / s; if (f < 0) { f = 0; s = p1 / t1 }
                 printf "%.3f %.3f\n", s, f }')
    # CPU costs from the largest fixed run and its plain twin: the coordinator's
    # seconds per message; an agent's seconds per URL exchanged (the fix's extra
    # agent CPU over the URLs it exchanged).
    cpu() { # FILE NAME-PREFIX: summed CPU seconds of the processes so named
        awk -v p="$2" '/^cpu:/ { gsub(/[(),;]/, " "); for (i = 1; i < NF; i++) if (index($i, p) == 1 && $(i + 1) ~ /^[0-9.]+$/) s += $(i + 1) }
            END { printf "%.3f\n", s }' "$1"
    }
    coord_s=0 exch_s=0
    if [ -f "$out/fix-$an.stdout" ]; then
        coord_s="$(awk -v c="$(cpu "$out/fix-$an.stdout" coordinator)" -F'\t' -v a="$an" \
            '$1 == a && $2 == "fix" { m = $6 * ($7 + $8); if (m > 0) printf "%.7f\n", c / m }' "$out/table.tsv")"
    fi
    if [ -f "$out/nofix-$an.stdout" ]; then
        exch_s="$(awk -v f="$(cpu "$out/fix-$an.stdout" app)" -v n="$(cpu "$out/nofix-$an.stdout" app)" -F'\t' -v a="$an" \
            '$1 == a && $2 == "fix" { fx = $6 * $10 } $1 == a && $2 == "nofix" { nx = $6 * $10 }
             END { d = (fx > nx) ? (f - n) / (fx - nx) : 0; printf "%.7f\n", (d > 0) ? d : 0 }' "$out/table.tsv")"
    fi
    echo
    echo "cost model: rate $single pages/s per agent, fixed ${fixed} s (from 1 and $an agents), coordinator ${coord_s:-0} s a message, ${exch_s:-0} s an agent's exchanged URL; per run:"
    printf 'agents\tmode\tmeasured_s\tpredicted_s\terror\n'
    tail -n +2 "$out/table.tsv" | while IFS=$'\t' read -r a mode secs _ _ pages rpp app _ xpp bal; do
        pred="$("$bin" cost-model --pages "$pages" --agents "$a" --single "$single" --fixed-s "$fixed" \
            --reports "$rpp" --assignments "$app" --exchanged "$xpp" --balance "$bal" \
            --coordinator-s "${coord_s:-0}" --exchange-s "${exch_s:-0}" | awk 'NR == 2 { print $2 }')"
        awk -v a="$a" -v m="$mode" -v s="$secs" -v p="$pred" \
            'BEGIN { printf "%s\t%s\t%s\t%s\t%+.1f%%\n", a, m, s, p, (s > 0) ? 100 * (p / s - 1) : 0 }'
    done
fi
