#!/usr/bin/env bash
# A big stored crawl, made once, to serve as the disk web (issue 25 Done-when 2;
# issue 26's network-bound regime): `polycrawl crawl` fetches a generated websim web
# into a WARC repository, websim is stopped, and the repository is then served by
# `polycrawl websim --from-repository` (websim/src/diskweb/).
#
#   ops/make-disk-web.sh                      # 25,000 pages over 1,000 hosts into
#                                             # /tmp/polycrawl-disk-web/crawl/repository
#   ops/make-disk-web.sh --pages 50000 --hosts 2000 --work /data/disk-web
#   ops/make-disk-web.sh --serve 250000       # then serve it, 250 kB/s per client address
#   ops/make-disk-web.sh --seeds 20 --hosts 4000 --pages 110000 --work /tmp/web-found
#                                             # 20 seeds: the other sites are found while
#                                             # crawling (issue 41, the two-level crawl)
#
# Flags: --work DIR (default /tmp/polycrawl-disk-web), --hosts N (default 1000),
# --pages N (default 25000), --seed N (default 7), --skew S (websim's --size-skew,
# default 0.5: no host so big that it alone bounds the crawl), --no-build (use the
# built binary as it is), --seeds N (only the N most popular hosts' home pages are
# seeds, websim's --seed-hosts; default: every host's, --all-seeds), --serve BYTES_PER_SEC (after making it, serve the disk web
# with that pacing until Ctrl-C; 0: unpaced). A repository already in WORK is kept
# and only served: delete WORK to make a new one.
#
# With --seeds N the crawl starts from those N sites and finds every other one through
# links (websim's home-page ring reaches every host), in open scope; its depth limit is raised to
# 100,000 so that no site is cut by its distance from a seed, and the disk web's seeds
# (the URLs stored at depth 0) are exactly those N home pages.
#
# The generated web is `websim --plain --all-seeds --own-addresses` (well-behaved
# hosts only, every host's home page a seed, one address per host, as the disk web
# serves it), crawled with the documented defaults plus what websim on loopback
# needs and politeness of 20 ms per host and per address (this is making data, not
# measuring). URLs carry websim's ports, so the script fixes them (--http-port
# 18080, --https-port 18443 by default; --ports HTTP,HTTPS to change): the disk web
# listens on the same ones and they must be free when it serves.
#
# What it prints at the end is the command that serves the disk web; its ready
# line names the seeds, the manifest (the stored URLs; status 200 = the pages a
# crawl from the seeds stores) and the DNS server and CA a crawl's config needs
# (as for the generated web; see ops/bench-peers.sh's write_polycrawl_config).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '%s make-disk-web: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

work=/tmp/polycrawl-disk-web hosts=1000 pages=25000 seed=7 skew=0.5 build=1 serve="" seeds=all
http_port=18080 https_port=18443
while [ $# -gt 0 ]; do
    case "$1" in
        --work) work="$2"; shift 2 ;;
        --hosts) hosts="$2"; shift 2 ;;
        --pages) pages="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --skew) skew="$2"; shift 2 ;;
        --seeds) seeds="$2"; shift 2 ;;
        --ports) http_port="${2%,*}"; https_port="${2#*,}"; shift 2 ;;
        --no-build) build=0; shift ;;
        --serve) serve="$2"; shift 2 ;;
        *) die "unknown flag $1 (see the comment at the top of $0)" ;;
    esac
done

source "$here/env.sh"
if [ "$build" -eq 1 ]; then
    log "building polycrawl (release)"
    cargo build --quiet --release --locked --manifest-path "$here/../Cargo.toml" --workspace --bins
fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"
bin="$CARGO_TARGET_DIR/release/polycrawl"
repo="$work/crawl/repository"

websim_pid=""
cleanup() { [ -n "$websim_pid" ] && kill "$websim_pid" 2>/dev/null || true; }
trap cleanup EXIT

# Starts `polycrawl websim ARGS` with its output in $work/$1.log; sets websim_pid
# and ready (the ready line).
start_websim() { # NAME ARGS...
    local name="$1" i
    shift
    "$bin" websim "$@" >"$work/$name.log" 2>&1 &
    websim_pid=$!
    for i in $(seq 1 600); do
        ready="$(grep -m1 '^websim ready ' "$work/$name.log" 2>/dev/null || true)"
        [ -n "$ready" ] && return
        kill -0 "$websim_pid" 2>/dev/null || die "websim exited: $(tail -n 5 "$work/$name.log")"
        sleep 0.5
    done
    die "websim not ready after 300 s"
}
field() { tr ' ' '\n' <<<"$ready" | sed -n "s/^$1=//p"; }

if [ -d "$repo" ]; then
    log "keeping the repository already in $repo"
else
    log "generated web: $hosts hosts, $pages pages, seed $seed, seeds $seeds, ports $http_port/$https_port"
    seeding=(--all-seeds) depth=""
    if [ "$seeds" != all ]; then
        [[ "$seeds" =~ ^[1-9][0-9]*$ ]] || die "--seeds wants a positive number, not $seeds"
        seeding=(--seed-hosts "$seeds") depth="app: (max_depth: 100000, scope: open, allowed_domains: []),"
    fi
    start_websim websim --plain "${seeding[@]}" --own-addresses --hosts "$hosts" --pages "$pages" \
        --seed "$seed" --size-skew "$skew" --http-port "$http_port" --https-port "$https_port" \
        --out "$work/websim"
    cat >"$work/crawl.ron" <<EOF
// Written by ops/make-disk-web.sh: the defaults plus websim's needs, 20 ms politeness.
(
    resolver: (name_servers: ["$(field dns)"]),
    $depth
    downloader: (allow_private: true, extra_ca_file: Some("$(field ca)")),
    manager: (
        frontier: (
            allow_private_addresses: true,
            target_pages_per_sec: 100000.0,
            interval_ms: 20, min_interval_ms: 20, ip_min_interval_ms: 20,
            backoff_ms: [500, 1000, 2000],
        ),
    ),
)
EOF
    "$bin" config --check "$work/crawl.ron" >/dev/null
    log "crawling it into $repo"
    "$bin" crawl --seeds "$(field seeds)" --out "$work/crawl" --config "$work/crawl.ron" | tee "$work/crawl.out"
    kill "$websim_pid"
    wait "$websim_pid" 2>/dev/null || true
    websim_pid=""
    expected="$(awk -F'\t' '$2 == 200' "$work/websim/manifest.tsv" | wc -l)"
    log "the generated web's manifest has $expected pages"
fi

cmd=("$bin" websim --from-repository "$repo" --out "$work/disk")
[ -n "$serve" ] && [ "$serve" != 0 ] && cmd+=(--pace-per-client "$serve")
log "checking that it serves: ${cmd[*]}"
start_websim disk "${cmd[@]:2}"
log "disk web: $(grep -m1 '^websim: disk web' "$work/disk.log")"
if [ -z "$serve" ]; then
    kill "$websim_pid"
    wait "$websim_pid" 2>/dev/null || true
    websim_pid=""
    echo "serve it with (add --pace-per-client BYTES_PER_SEC for a rate per client address):"
    echo "  ${cmd[*]}"
else
    log "serving until Ctrl-C; $ready"
    wait "$websim_pid"
fi
