#!/usr/bin/env bash
# Peer benchmark (issue 9): `polycrawl crawl` against wget2 on the same simulated
# web, each run on a fresh websim, then a table per configuration.
#
#   ops/bench-peers.sh                       # all three configurations below
#   ops/bench-peers.sh --config throughput   # 50,000 pages over 200 hosts (--size-skew 0.7: the
#                                            # largest about 3,700 pages; issue 37),
#                                            # politeness off, robots.txt on, WARC stored
#   ops/bench-peers.sh --config small        # 2,000 pages over 20 hosts, politeness off
#   ops/bench-peers.sh --config polite       # 5,000 hosts x 20 pages, 2 s per host and per IP:
#                                            # polycrawl alone (wget2 has no per-host politeness)
#
# The server: --server nginx (the default of throughput and small, and the figure of
# record: a server nobody here wrote) or --server websim (the polite configuration always
# uses websim, whose request log stamps every request for the politeness checks). With
# nginx the web is websim's (the same flags give the same pages, links, robots.txt,
# redirects, https and gzip hosts, manifest), exported once per configuration as static
# files and an nginx configuration (`polycrawl websim --export-static`, websim/src/export.rs),
# served by Debian's nginx-light from disk on websim's loopback addresses, names answered
# by dnsmasq for polycrawl and by a private /etc/hosts for wget2; nginx's access log,
# written in websim's log columns, is what `polycrawl-bench check` judges. A fresh nginx
# (so a fresh access log) serves each run. --nginx-workers N (default: the cores).
# --parts K: polycrawl's application parts (default: what `polycrawl crawl` chooses);
# --downloaders auto: let `polycrawl crawl` choose. --app-settings 'KEY: VALUE, ...': extra
# fields of polycrawl's `app` config section (e.g. 'reader_threads: 1,'). --frontier-settings
# 'KEY: VALUE, ...': extra fields of its `manager.frontier` section (e.g.
# 'chain_max_interval_ms: 0,' to turn chained jobs off). --downloader-settings 'KEY: VALUE, ...':
# extra fields of its `downloader` section (e.g. 'max_batch_age_ms: 500,').
#
# Seeds: --all-seeds (every host a seed, as a user names the sites to crawl: polycrawl
# runs with its default scope, the seeds' sites; the default of throughput and small,
# issue 37) or --popular-seeds (websim's popular hosts: the rest is found by crawling,
# so polycrawl runs `--scope open`; the default of polite).
#
# Flags (after --config): --runs N (default 3; polite 1), --hosts N, --pages N, --skew S,
# --seed N (the web), --slow-ms MS (websim's slow hosts, default 300), --interval-ms MS
# (politeness per host and per IP; 0 = off), --crawlers wget2,polycrawl, --threads N (wget2,
# default 64), --downloaders N (polycrawl; default: what `polycrawl crawl` chooses), --timeout-s S (per crawler run,
# default 900), --connections-per-host N (polycrawl's manager.frontier.connections_per_host,
# default 1 as in the config), --gzip-level N (polycrawl's downloader.gzip_level, the
# WARC's compression: 0 writes stored gzip members, default 1 as in the config),
# --work DIR (default /tmp/polycrawl-bench-peers), --keep (keep each run's
# files), --no-build (use the built binary as it is), --hostile (websim's full web, with
# its dead and slow hosts and robots.txt 5xx and crawl-delay variants; by default the
# web is `websim --plain`: well-behaved hosts only, as a static server such as nginx
# serves them), --web simple|plain|hostile (default simple: `websim --simple`, a plain
# web every mainstream crawler reads alike, plain <a href> links and robots.txt of
# Disallow prefixes, on which wget2 is exactly right: the web of record since issue 39;
# plain: websim's hard link spellings, frames, <base>, agent groups and wildcards in
# robots.txt, on which wget2 fetches what it should not and misses what it should;
# hostile: = --hostile), --own-addresses /
# --shared-addresses (websim's hosts each on an address of their own, as the polite
# configuration does by default so that its bound is hosts / interval; or websim's
# usual virtual-hosting groups, the default of the other configurations).
#
# How each run goes: a fresh `polycrawl websim` (so its request log holds that one run
# and nothing else), then the crawler under `polycrawl-bench measure` (wall time, CPU of
# its whole process tree, peak memory; websim is not under it, so its CPU is never
# counted), then websim is stopped (its log flushed) and `polycrawl-bench check` judges
# the run from websim's manifest and log. Crawlers alternate run by run (wget2,
# polycrawl, wget2, ...) so a change in the machine's load hits both alike.
#
# wget2 resolves websim's names through a private /etc/hosts (made from websim's
# hosts.tsv) and a private /etc/nsswitch.conf (`hosts: files`: no DNS query ever leaves
# the machine), both bind-mounted in a mount namespace of its own (`unshare -m`): the
# system's files are never touched. polycrawl asks websim's DNS server.
#
# Two settings wget2 needs to end at all on websim: (1) --filter-urls --reject-regex=/trap/,
# a hint only wget2 gets: it follows an <a href> that websim hides in a CSS comment inside
# <style>, and websim's /trap/ pages are an endless space (each links three deeper ones),
# so without it wget2 never ends (7 million requests in a minute on the small web);
# polycrawl does not extract links from <style>. (2) --tries=2 --waitretry=1: by default
# wget2 tries a refused connection (websim's dead hosts) 20 times, waiting up to 10 s
# between tries; polycrawl tries a URL twice (max_url_attempts) with a 0.5 s back-off.
# (3) --compression=identity: wget2 1.99.1 (Debian 12) crashes (SIGSEGV) right after
# "Failed to uncompress gzip stream (-5)" on websim's gzip hosts, after ~21,000 of the
# 50,000-page web's requests, every time. So on websim wget2 gets plain bodies, while
# polycrawl asks for gzip and pays for decoding it (and websim, not measured, for
# encoding it). On nginx (the figure of record) wget2 runs with its default compression,
# as users run it: it asks for gzip too, decodes nginx's gzip hosts without trouble
# (100 % coverage, session 28), and both crawlers get the same bytes from the server.
#
# Everything started here (websim, the measured crawler) is stopped on exit and on
# Ctrl-C, by pid.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

source "$here/lib.sh"

configs=()
runs="" hosts="" pages="" skew="" interval_ms="" crawlers="" own_addresses=""
seed=1 slow_ms=300 threads=64 downloaders=auto timeout_s=900 conns=1 gzip_level=1
server="" nginx_workers="$(nproc)" parts="" app_settings="" frontier_settings="" downloader_settings=""
work=/tmp/polycrawl-bench-peers keep=0 build=1 plain=1 simple=1 seeds_kind=""
while [ $# -gt 0 ]; do
    case "$1" in
        --config) configs+=("$2"); shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --hosts) hosts="$2"; shift 2 ;;
        --pages) pages="$2"; shift 2 ;;
        --skew) skew="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --slow-ms) slow_ms="$2"; shift 2 ;;
        --hostile) plain=0; simple=0; shift ;;
        --web)
            case "$2" in
                simple) plain=1; simple=1 ;;
                plain) plain=1; simple=0 ;;
                hostile) plain=0; simple=0 ;;
                *) die "--web takes simple, plain or hostile, not $2" ;;
            esac
            shift 2 ;;
        --all-seeds) seeds_kind=all; shift ;;
        --popular-seeds) seeds_kind=popular; shift ;;
        --own-addresses) own_addresses=1; shift ;;
        --shared-addresses) own_addresses=0; shift ;;
        --interval-ms) interval_ms="$2"; shift 2 ;;
        --crawlers) crawlers="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --downloaders) downloaders="$2"; shift 2 ;;
        --connections-per-host) conns="$2"; shift 2 ;;
        --gzip-level) gzip_level="$2"; shift 2 ;;
        --server) server="$2"; shift 2 ;;
        --nginx-workers) nginx_workers="$2"; shift 2 ;;
        --parts) parts="$2"; shift 2 ;;
        --app-settings) app_settings="$2"; shift 2 ;;
        --frontier-settings) frontier_settings="$2"; shift 2 ;;
        --downloader-settings) downloader_settings="$2"; shift 2 ;;
        --timeout-s) timeout_s="$2"; shift 2 ;;
        --work) work="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown flag $1 (see --help)" ;;
    esac
done
[ ${#configs[@]} -gt 0 ] || configs=(throughput small polite)

# The websim flag of the web, for the tables' headers.
web_label() {
    if [ "$simple" = 1 ]; then echo ' --simple'
    elif [ "$plain" = 1 ]; then echo ' --plain'
    fi
}

# --- What the benchmark needs: the project's own set-up, wget2, the release binary. ---
"$here/setup.sh"
# nginx-light and dnsmasq-base are installed without starting any service
# (RUNLEVEL=1: invoke-rc.d starts nothing); the benchmark runs its own, by pid.
missing=()
for pkg in wget2 nginx-light dnsmasq-base; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing the Debian packages ${missing[*]}"
    [ "$(id -u)" -eq 0 ] || die "need root to install ${missing[*]}"
    env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$(id -u)" -eq 0 ] || die "run as root: wget2 gets a private /etc/hosts through unshare -m and mount --bind"
command -v unshare >/dev/null || die "unshare (util-linux) not found"
source "$here/env.sh"
if [ "$build" -eq 1 ]; then
    log "building polycrawl and polycrawl-bench (release)"
    cargo build --quiet --release --locked --manifest-path "$here/../Cargo.toml" -p polycrawl --bin polycrawl \
        -p bench --bin polycrawl-bench
fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"
# A copy, so that a rebuild during the benchmark cannot swap the binary under it.
bin="$work/polycrawl"
cp "$CARGO_TARGET_DIR/release/polycrawl" "$bin"
benchbin="$work/polycrawl-bench"
cp "$CARGO_TARGET_DIR/release/polycrawl-bench" "$benchbin"
commit="$(git -C "$here/.." rev-parse --short=12 HEAD)"
git -C "$here/.." diff --quiet HEAD -- . ':!BENCHMARKS.md' || commit="$commit+changes"

# --- Processes started here, stopped on every exit. ---
websim_pid="" measure_pid="" nginx_pid="" dnsmasq_pid=""
stop_pid() { # PID SIGNAL: signal it if it is ours and alive, wait for it
    local pid="$1"
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill "-$2" "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}
cleanup() {
    stop_pid "$measure_pid" TERM # passes SIGTERM on to the crawler, waits for its tree
    stop_pid "$websim_pid" TERM
    stop_pid "$nginx_pid" QUIT
    stop_pid "$dnsmasq_pid" TERM
    measure_pid="" websim_pid="" nginx_pid="" dnsmasq_pid=""
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

kv() { # FILE KEY: the value of " KEY=value" in a key=value line
    sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | head -n1
}
load1() { cut -d' ' -f1 /proc/loadavg; }

# TCP connections in TIME_WAIT on this machine (from /proc/net/tcp{,6}, state 06).
time_wait() { awk '$4 == "06"' /proc/net/tcp /proc/net/tcp6 2>/dev/null | wc -l; }

# Each run starts with the kernel's TIME_WAIT table drained (at most 90 s of waiting): a
# crawler that opens a connection per request leaves tens of thousands of them, and connect()
# then searches a crowded port space. Measured: wget2's system CPU rose from 4.3 s to 10.3 s
# to 16.2 s over three runs a few seconds apart, the previous runs' sockets still in TIME_WAIT.
wait_time_wait() {
    local n i
    for ((i = 0; i < 90; i++)); do
        n="$(time_wait)"
        [ "$n" -lt 500 ] && return 0
        [ "$i" -eq 0 ] && log "waiting for $n TCP connections in TIME_WAIT to drain"
        sleep 1
    done
    log "still $(time_wait) connections in TIME_WAIT after 90 s; going on"
}

machine_line() {
    local cpu cores
    cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
    cores="$(nproc)"
    printf 'machine: %s, %s cores, %s GiB; load average %s; commit %s; %s\n' \
        "$cpu" "$cores" "$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" "$commit" "$(date -u '+%Y-%m-%d %H:%M UTC')"
}

# websim: start a fresh one for one run; sets websim_pid, ws_dir, ws_dns, ws_seeds, ws_ca, ws_hosts.
start_websim() { # DIR
    local dir="$1" out="$1/websim.stdout" line="" i
    plain_flag=()
    [ "$plain" = 1 ] && plain_flag=(--plain)
    [ "$simple" = 1 ] && plain_flag=(--simple)
    [ "$c_own" = 1 ] && plain_flag+=(--own-addresses)
    [ "$c_seeds" = all ] && plain_flag+=(--all-seeds)
    RUST_LOG=warn "$bin" websim "${plain_flag[@]}" --hosts "$c_hosts" --pages "$c_pages" --size-skew "$c_skew" \
        --seed "$seed" --slow-ms "$slow_ms" --out "$dir/websim" --exit-with-parent \
        >"$out" 2>"$dir/websim.log" &
    websim_pid=$!
    for i in $(seq 1 1800); do
        line="$(grep -m1 '^websim ready ' "$out" 2>/dev/null || true)"
        [ -n "$line" ] && break
        kill -0 "$websim_pid" 2>/dev/null || die "websim exited: $(tail -n 5 "$dir/websim.log")"
        sleep 0.1
    done
    [ -n "$line" ] || die "websim did not get ready in 180 s"
    ws_dir="$dir/websim"
    ws_dns="$(printf '%s\n' "$line" | sed -n 's/.* dns=\([^ ]*\).*/\1/p')"
    ws_seeds="$(printf '%s\n' "$line" | sed -n 's/.* seeds=\([^ ]*\).*/\1/p')"
    ws_ca="$(printf '%s\n' "$line" | sed -n 's/.* ca=\([^ ]*\).*/\1/p')"
    ws_hosts="$(printf '%s\n' "$line" | sed -n 's/.* hosts=\([^ ]*\).*/\1/p')"
}

stop_websim() {
    stop_pid "$websim_pid" TERM # websim flushes its request log on SIGTERM
    websim_pid=""
}

# nginx: the web of one configuration, exported once; sets ng_dir, ng_web (websim's
# files: manifest, never, unreachable, hosts, seeds, CA), ng_dns, and starts dnsmasq.
prepare_nginx_web() { # DIR
    local dir="$1" line http https dns_port i web_flags=()
    stop_pid "$dnsmasq_pid" TERM
    rm -rf "$dir"
    mkdir -p "$dir"
    chmod 755 "$dir"
    [ "$plain" = 1 ] && web_flags=(--plain)
    [ "$simple" = 1 ] && web_flags=(--simple)
    [ "$c_own" = 1 ] && web_flags+=(--own-addresses)
    [ "$c_seeds" = all ] && web_flags+=(--all-seeds)
    http="$(free_port)" https="$(free_port)"
    [ "$http" != "$https" ] || https=$((http + 1))
    line="$(RUST_LOG=warn "$bin" websim "${web_flags[@]}" --hosts "$c_hosts" --pages "$c_pages" \
        --size-skew "$c_skew" --seed "$seed" --http-port "$http" --https-port "$https" \
        --out "$dir/websim" --export-static "$dir/static" 2>"$dir/export.log" | grep '^websim exported ')" ||
        die "websim --export-static failed: $(tail -n 5 "$dir/export.log")"
    log "$c_name: exported for nginx: $(printf '%s' "$line" | sed 's/ http_port=.*//; s/^websim exported //')"
    chmod -R a+rX "$dir/static"
    ng_dir="$dir" ng_web="$dir/websim"
    # dnsmasq answers websim's names from a hosts file and NXDOMAIN for the rest of
    # .test, .example and .invalid (--local); nothing is forwarded anywhere.
    awk -F'\t' '!/^#/ {print $3 "\t" $1}' "$ng_web/hosts.tsv" >"$dir/dns-hosts"
    dns_port="$(free_port)"
    dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
        --no-poll --bind-interfaces --listen-address=127.0.0.1 --port="$dns_port" \
        --addn-hosts="$dir/dns-hosts" --local=/test/ --local=/example/ --local=/invalid/ \
        --cache-size=10000 --pid-file="$dir/dnsmasq.pid" --log-facility="$dir/dnsmasq.log" \
        >"$dir/dnsmasq.out" 2>&1 &
    dnsmasq_pid=$!
    for i in $(seq 1 50); do
        ss -Hluln "sport = :$dns_port" | grep -q . && break
        kill -0 "$dnsmasq_pid" 2>/dev/null || die "dnsmasq did not start: $(tail -n 5 "$dir/dnsmasq.out")"
        sleep 0.1
    done
    ng_dns="127.0.0.1:$dns_port"
    # NGINX_LOG is replaced per run (start_nginx).
    cat >"$dir/nginx.conf" <<EOF
# Written by ops/bench-peers.sh: Debian's defaults where they matter (sendfile,
# keepalive_timeout 65, keepalive_requests 1000), websim's log columns.
worker_processes $nginx_workers;
daemon off;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log warn;
events { worker_connections 8192; }
worker_rlimit_nofile 65536;
http {
    include /etc/nginx/mime.types;
    default_type text/html;
    charset utf-8;
    charset_types text/html;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    server_tokens off;
    absolute_redirect off;
    client_body_temp_path $dir/tmp-body;
    proxy_temp_path $dir/tmp-proxy;
    fastcgi_temp_path $dir/tmp-fastcgi;
    uwsgi_temp_path $dir/tmp-uwsgi;
    scgi_temp_path $dir/tmp-scgi;
    log_format websim escape=none '\$msec\t\$request_time\t\$scheme\t\$http_host\t\$server_addr:\$server_port\t\$remote_addr:\$remote_port\t\$request_method\t\$request_uri\t\$status\t\$body_bytes_sent\t\$http_user_agent';
    access_log NGINX_LOG websim buffer=256k flush=1s;
    include $dir/static/sites.conf;
}
EOF
}

# A fresh nginx for one run, its access log in DIR; sets ws_dir (links to the exported
# web's files, where the converted log will go), ws_dns, ws_seeds, ws_ca, ws_hosts as
# start_websim does.
start_nginx() { # DIR
    local dir="$1" f i
    ws_dir="$dir/websim"
    mkdir -p "$ws_dir"
    for f in manifest.tsv never.txt unreachable.tsv hosts.tsv seeds.txt ca.pem; do
        [ -e "$ng_web/$f" ] && ln -sf "$ng_web/$f" "$ws_dir/$f"
    done
    sed "s|NGINX_LOG|$dir/access.log|" "$ng_dir/nginx.conf" >"$dir/nginx.conf"
    rm -f "$ng_dir/nginx.pid"
    nginx -p "$ng_dir" -c "$dir/nginx.conf" >"$dir/nginx.out" 2>&1 &
    nginx_pid=$!
    for i in $(seq 1 100); do
        [ -s "$ng_dir/nginx.pid" ] && break
        kill -0 "$nginx_pid" 2>/dev/null || die "nginx exited: $(tail -n 5 "$dir/nginx.out" "$ng_dir/nginx-error.log")"
        sleep 0.1
    done
    ws_dns="$ng_dns" ws_seeds="$ws_dir/seeds.txt" ws_ca="$ws_dir/ca.pem" ws_hosts="$ws_dir/hosts.tsv"
}

# Stops nginx (SIGQUIT: graceful, the log buffer written) and converts its access log
# into websim's request log columns (websim/src/log.rs) for `polycrawl-bench check`.
stop_nginx() { # DIR
    local dir="$1"
    stop_pid "$nginx_pid" QUIT
    nginx_pid=""
    awk -F'\t' 'BEGIN { OFS = "\t"; print "# converted from an nginx access log: start_us end_us scheme host server client method target status bytes user_agent write_from_us service_us" }
        { end = sprintf("%.0f", $1 * 1e6); start = sprintf("%.0f", ($1 - $2) * 1e6)
          print start, end, $3, $4, $5, $6, $7, $8, $9, $10, $11, start, sprintf("%.0f", $2 * 1e6) }' \
        "$dir/access.log" >"$ws_dir/requests.tsv"
}

# The polycrawl config: the documented defaults, plus what websim on loopback needs
# (its DNS server, its CA, private addresses allowed, a free admin port), no speed
# cap (target far above what the machine does), short back-offs (websim's dead and
# robots-5xx hosts fail instantly; the default minutes-long back-offs would only add
# idle time), and the politeness of the configuration: off = no interval per host or
# IP and Crawl-delay ignored (wget2 has none of them either); on = INTERVAL per host
# and per IP address, one request at a time per IP. --connections-per-host sets
# `connections_per_host` (requests of one host at once) in both.
write_polycrawl_config() { # FILE INTERVAL_MS
    local politeness
    if [ "$2" -eq 0 ]; then
        politeness="interval_ms: 0, min_interval_ms: 0, max_crawl_delay_ms: 0, ip_max_in_flight: 0, ip_min_interval_ms: 0,"
    else
        politeness="interval_ms: $2, min_interval_ms: $2, ip_max_in_flight: 1, ip_min_interval_ms: $2,"
    fi
    cat >"$1" <<EOF
// Written by ops/bench-peers.sh: the defaults plus websim's needs and the benchmark's politeness.
(
    resolver: (name_servers: ["$ws_dns"]),
    downloader: (allow_private: true, extra_ca_file: Some("$ws_ca"), gzip_level: $gzip_level, $downloader_settings),
    app: ($app_settings),
    manager: (
        admin_http: "127.0.0.1:0",
        frontier: (
            allow_private_addresses: true,
            target_pages_per_sec: 100000.0,
            connections_per_host: $conns,
            $politeness
            $frontier_settings
            backoff_ms: [500, 1000, 2000],
            dns_retry_ms: 5000,
        ),
    ),
)
EOF
    "$bin" config --check "$1" >/dev/null
}

# One run of one crawler; appends a row to $results.
run_one() { # CRAWLER RUN
    local crawler="$1" run="$2" dir="$work/$c_name-$1-$2" rc=0 load
    rm -rf "$dir"
    mkdir -p "$dir/scratch"
    if [ "$c_server" = nginx ]; then start_nginx "$dir"; else start_websim "$dir"; fi
    local cmd=()
    case "$crawler" in
        wget2)
            { printf '127.0.0.1\tlocalhost\n'; awk -F'\t' '!/^#/ {print $3 "\t" $1}' "$ws_hosts"; } >"$dir/etc-hosts"
            printf 'hosts: files\n' >"$dir/nsswitch.conf"
            printf 'nameserver 127.0.0.1\n' >"$dir/resolv.conf"
            local wget2_compression=(--compression=identity)
            [ "$c_server" = nginx ] && wget2_compression=()
            # wget2 saves every page as a file: into a tmpfs of its own namespace (gone
            # when it exits). On the disk, ext4's inode allocator (recently_deleted,
            # find_get_block) made file creation slower run after run once earlier
            # runs' 43,000 files were deleted: wget2's system CPU went 5.3 -> 9.3 ->
            # 13.0 s over three runs with nothing else changed. polycrawl keeps
            # writing its WARC files and RocksDB to the disk, fsyncs included.
            cmd=(unshare -m sh -c 'mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/nsswitch.conf &&
                    mount --bind "$3" /etc/resolv.conf && mount -t tmpfs -o size=8g tmpfs "$4" &&
                    shift 4 && exec "$@"' sh
                "$dir/etc-hosts" "$dir/nsswitch.conf" "$dir/resolv.conf" "$dir/scratch"
                wget2 --no-config --recursive --level=inf --robots=on --max-threads="$threads"
                --span-hosts --domains=test,example --filter-urls --reject-regex=/trap/
                --tries=2 --waitretry=1 "${wget2_compression[@]}" --ca-certificate="$ws_ca"
                --no-hsts --no-hpkp --no-ocsp --no-netrc --no-verbose
                --directory-prefix="$dir/scratch" --input-file="$ws_seeds")
            ;;
        polycrawl)
            write_polycrawl_config "$dir/polycrawl.ron" "$c_interval"
            cmd=("$bin" crawl --seeds "$ws_seeds" --out "$dir/scratch" --config "$dir/polycrawl.ron")
            # Seeded with the popular hosts only, the web is found by crawling: an open
            # crawl. Seeded with every host, the default scope (the seeds' sites).
            [ "$c_seeds" = all ] || cmd+=(--scope open)
            [ "$downloaders" = auto ] || cmd+=(--downloaders "$downloaders")
            [ -z "$parts" ] || cmd+=(--parts "$parts")
            ;;
        *) die "unknown crawler $crawler" ;;
    esac
    wait_time_wait
    load="$(load1)"
    log "$c_name: $crawler run $run (load $load)"
    "$benchbin" measure --out "$dir/measure.txt" --timeout-s "$timeout_s" -- "${cmd[@]}" \
        >"$dir/crawler.stdout" 2>"$dir/crawler.stderr" &
    measure_pid=$!
    wait "$measure_pid" || rc=$?
    measure_pid=""
    if [ "$c_server" = nginx ]; then stop_nginx "$dir"; else stop_websim; fi
    [ -s "$dir/measure.txt" ] || die "$crawler: no measurement (exit $rc): $(tail -n 5 "$dir/crawler.stderr")"
    local agent=polycrawl pace=()
    [ "$crawler" = wget2 ] && agent=wget2
    [ "$c_interval" -gt 0 ] && pace=(--interval-ms "$c_interval" --ip-interval-ms "$c_interval")
    "$benchbin" check --websim "$ws_dir" --agent "$agent" "${pace[@]}" \
        >"$dir/check.txt" 2>"$dir/check.stderr"
    local m="$dir/measure.txt" k="$dir/check.txt"
    local wall cpu pages mgr="-" inner="-"
    wall="$(kv "$m" wall_s)" cpu="$(kv "$m" cpu_s)" pages="$(kv "$k" pages)"
    if [ "$crawler" = polycrawl ]; then
        # "cpu: 12.3 s in the crawling system = ... (manager 3.1, resolver 0.0, ...)"
        mgr="$(sed -n 's/^cpu:.*(manager \([0-9.]*\),.*/\1/p' "$dir/crawler.stdout" | head -n1)"
        inner="$(sed -n 's/.*crawl complete in \([0-9.]*\) s.*/\1/p' "$dir/crawler.stdout" | head -n1)"
        [ -n "$mgr" ] || mgr="-"
        [ -n "$inner" ] || inner="-"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$c_name" "$crawler" "$run" "$load" "$wall" "$inner" "$pages" "$cpu" \
        "$(kv "$m" tree_rss_peak_mib)" "$(kv "$m" max_proc_rss_mib)" "$(kv "$m" exit)" "$(kv "$m" timed_out)" \
        "$(kv "$k" requests)" "$(kv "$k" covered)" "$(kv "$k" expected)" "$(kv "$k" coverage_pct)" \
        "$(kv "$k" duplicate_urls)" "$(kv "$k" robots_disallowed)" "$(kv "$k" never_other)" "$(kv "$k" unexpected)" \
        "$(kv "$k" rate_mid80)" "$(kv "$k" rate_peak10s)" "$(kv "$k" bound_per_s)" \
        "$(kv "$k" origin_violations)/$(kv "$k" ip_violations)" "$(kv "$k" origin_min_ms)/$(kv "$k" ip_min_ms)" "$mgr" \
        "$(kv "$k" work_bound_share)" >>"$results"
    # wget2 exits 8 when a server answered an error (websim's 404s): expected.
    case "$crawler:$(kv "$m" exit)" in
        *:0 | wget2:8) ;;
        *) log "$crawler run $run exited $(kv "$m" exit): see $dir/crawler.stderr" ;;
    esac
    if [ "$keep" -eq 0 ]; then
        rm -rf "$dir/scratch"
    fi
}

# Results columns (tab-separated), one row per run:
#  1 config 2 crawler 3 run 4 load1 5 wall_s 6 inner_s 7 pages 8 cpu_s 9 tree_rss_mib
#  10 max_proc_rss_mib 11 exit 12 timed_out 13 requests 14 covered 15 expected 16 coverage_pct
#  17 dup_urls 18 robots_disallowed 19 never_other 20 unexpected 21 rate_mid80
#  22 rate_peak10s 23 bound 24 violations origin/ip 25 min gap ms origin/ip 26 manager_cpu_s
#  27 work_bound_share (polite: rate over what per-IP politeness allowed while IPs had work)
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
col() { # CONFIG CRAWLER AWK-EXPR: one value per run
    awk -F'\t' -v c="$1" -v w="$2" "\$1==c && \$2==w {print $3}" "$results"
}

print_peer_table() { # CONFIG
    local c="$1" w
    printf '\n%s: server %s; web: websim%s --hosts %s --pages %s --size-skew %s --seed %s --slow-ms %s; politeness off; polycrawl: --downloaders %s%s, connections_per_host %s; load average %s\n' \
        "$c" "$c_server" "$(web_label)$([ "$c_seeds" = all ] && echo ' --all-seeds (polycrawl: default scope)' || echo ' (polycrawl: --scope open)')" "$c_hosts" "$c_pages" "$c_skew" "$seed" "$slow_ms" \
        "$downloaders" "$([ -n "$parts" ] && echo " --parts $parts")" "$conns" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf '| crawler | run | load | wall s | pages | pages/s | CPU-ms/page | peak RSS MiB (tree / 1 proc) | coverage | dup URLs | robots-disallowed | other never.txt | unexpected | requests |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
    awk -F'\t' -v c="$c" '$1==c {
        pps = ($5 > 0) ? $7 / $5 : 0; cpp = ($7 > 0) ? $8 * 1000 / $7 : 0
        printf "| %s | %s | %s | %.2f | %d | %.0f | %.3f | %.0f / %.0f | %d/%d (%s %%) | %d | %d | %d | %d | %d |\n",
            $2, $3, $4, $5, $7, pps, cpp, $9, $10, $14, $15, $16, $17, $18, $19, $20, $13 }' "$results"
    for w in $c_crawlers; do
        [ -n "$(col "$c" "$w" '$5')" ] || continue
        printf '| %s | median | | %.2f | %.0f | %.0f | %.3f | %.0f / %.0f | | | | | | |\n' "$w" \
            "$(col "$c" "$w" '$5' | median)" "$(col "$c" "$w" '$7' | median)" \
            "$(col "$c" "$w" '($5>0)?$7/$5:0' | median)" "$(col "$c" "$w" '($7>0)?$8*1000/$7:0' | median)" \
            "$(col "$c" "$w" '$9' | median)" "$(col "$c" "$w" '$10' | median)"
    done
    if [[ " $c_crawlers " == *" wget2 "* && " $c_crawlers " == *" polycrawl "* ]]; then
        local p_pps w_pps p_cpp w_cpp p_wall w_wall
        p_pps="$(col "$c" polycrawl '($5>0)?$7/$5:0' | median)" w_pps="$(col "$c" wget2 '($5>0)?$7/$5:0' | median)"
        p_cpp="$(col "$c" polycrawl '($7>0)?$8*1000/$7:0' | median)" w_cpp="$(col "$c" wget2 '($7>0)?$8*1000/$7:0' | median)"
        p_wall="$(col "$c" polycrawl '$5' | median)" w_wall="$(col "$c" wget2 '$5' | median)"
        awk -v a="$p_pps" -v b="$w_pps" -v x="$p_cpp" -v y="$w_cpp" -v s="$p_wall" -v t="$w_wall" 'BEGIN {
            printf "polycrawl / wget2 (medians): pages/s %.2fx, CPU-ms per page %.2fx, wall time %.2fx\n",
                (b > 0) ? a / b : 0, (y > 0) ? x / y : 0, (t > 0) ? s / t : 0 }'
    fi
    printf 'polycrawl "inner s" (manager start to app exit, from its summary): %s\n' \
        "$(col "$c" polycrawl '$6' | tr '\n' ' ')"
}

print_polite_table() { # CONFIG
    local c="$1"
    printf '\n%s: websim%s --hosts %s --pages %s --size-skew %s --seed %s --slow-ms %s; %s ms per host and per IP; polycrawl alone (wget2 has no per-host politeness); load average %s\n' \
        "$c" "$(web_label)$([ "$c_own" = 1 ] && echo ' --own-addresses')$([ "$c_seeds" = all ] && echo ' --all-seeds')" "$c_hosts" "$c_pages" "$c_skew" "$seed" "$slow_ms" "$c_interval" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf '| run | load | wall s | requests | coverage | fetch rate, middle 80 %% (/bound) | peak 10 s rate (/bound) | bound (live addresses / interval) | rate / bound while IPs had work | violations origin / IP | min gap ms origin / IP start | manager CPU s | manager CPU-us per request | CPU-ms/page (all) | peak RSS MiB (tree / 1 proc) |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
    awk -F'\t' -v c="$c" '$1==c && $2=="polycrawl" {
        b = ($23 > 0) ? $23 : 0; cpp = ($7 > 0) ? $8 * 1000 / $7 : 0
        mgr = ($26 == "-" || $13 == 0) ? "-" : sprintf("%.1f", $26 * 1e6 / $13)
        printf "| %s | %s | %.1f | %d | %d/%d (%s %%) | %.0f (%.2f) | %.0f (%.2f) | %.0f | %s | %s | %s | %s | %s | %.3f | %.0f / %.0f |\n",
            $3, $4, $5, $13, $14, $15, $16, $21, (b > 0) ? $21 / b : 0, $22, (b > 0) ? $22 / b : 0, b,
            $27, $24, $25, $26, mgr, cpp, $9, $10 }' "$results"
    printf 'bound as the issue states it: %s hosts / %s ms = %.0f fetches/s; "bound" above counts live addresses (virtual hosts share one, dead hosts have none).\n' \
        "$c_hosts" "$c_interval" "$(awk -v h="$c_hosts" -v i="$c_interval" 'BEGIN {print h * 1000 / i}')"
    printf 'manager CPU per request: the manager process'"'"'s CPU over the requests websim logged (connects to dead hosts are not logged).\n'
}

results="$work/results.tsv"
: >"$results"
machine_line
for c_name in "${configs[@]}"; do
    case "$c_name" in
        throughput) d_hosts=200 d_pages=50000 d_skew=0.7 d_interval=0 d_runs=3 d_crawlers="wget2 polycrawl" d_own=0 d_seeds=all ;;
        small) d_hosts=20 d_pages=2000 d_skew=1 d_interval=0 d_runs=3 d_crawlers="wget2 polycrawl" d_own=0 d_seeds=all ;;
        # Every host on its own address, so the bound is the issue's hosts / interval.
        polite) d_hosts=5000 d_pages=100000 d_skew=0 d_interval=2000 d_runs=1 d_crawlers="polycrawl" d_own=1 d_seeds=popular ;;
        *) die "unknown configuration $c_name (throughput, small, polite)" ;;
    esac
    c_hosts="${hosts:-$d_hosts}" c_pages="${pages:-$d_pages}" c_skew="${skew:-$d_skew}"
    c_interval="${interval_ms:-$d_interval}" c_runs="${runs:-$d_runs}" c_own="${own_addresses:-$d_own}"
    c_seeds="${seeds_kind:-$d_seeds}"
    c_crawlers="$(printf '%s' "${crawlers:-$d_crawlers}" | tr ',' ' ')"
    if [ "$c_interval" -gt 0 ] && [[ " $c_crawlers " == *" wget2 "* ]]; then
        log "$c_name: wget2 has no per-host politeness; measuring polycrawl alone"
        c_crawlers="polycrawl"
    fi
    c_server="${server:-nginx}"
    if [ "$c_interval" -gt 0 ]; then
        [ "$c_server" = websim ] || log "$c_name: politeness is judged by websim's stamps: serving it with websim"
        c_server=websim
    fi
    case "$c_server" in
        nginx) prepare_nginx_web "$work/$c_name-nginx-web" ;;
        websim) ;;
        *) die "unknown server $c_server (nginx, websim)" ;;
    esac
    for r in $(seq 1 "$c_runs"); do
        for w in $c_crawlers; do
            run_one "$w" "$r"
        done
    done
    if [ "$c_interval" -gt 0 ]; then
        print_polite_table "$c_name"
    else
        print_peer_table "$c_name"
    fi
done
printf '\nrows: %s; run files under %s\n' "$results" "$work"
