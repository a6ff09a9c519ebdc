#!/usr/bin/env bash
# Real documentation sites, crawled whole with the defaults (issue 37, Done-when 1).
#
#   ops/docsites.sh                 # the full set: 12 sites, about 8,000 HTML pages, the
#                                   # largest (libstdc++'s API, Doxygen) about 3,900
#   ops/docsites.sh --set small     # 6 sites, about 550 pages: what the test suite runs
#
# Each site is a Debian documentation package, downloaded once (`apt-get download`,
# kept under ~/.cache/polycrawl/docsites) and unpacked, served by Debian's nginx-light
# from disk, each site on a loopback address of its own (127.0.61.N, one port). Every
# site is a seed. polycrawl runs `polycrawl crawl` with the documented defaults; the
# only changes are what a crawl of loopback needs (private addresses allowed, a free
# admin port) and politeness off (the sites are ours).
#
# The judge is independent of polycrawl: ops/link_oracle.py walks the files from the
# seeds with html5lib (a parser polycrawl does not use) and lists every URL on the
# seeds' hosts that a reachable HTML page links; nginx's access log says what was
# fetched. The run passes when nothing is missing, nothing extra and nothing fetched
# twice (robots.txt left out: none of these sites has one, so nothing is disallowed),
# and polycrawl's summary says `Complete` (nothing in scope cut). It prints one line
# per figure and exits 1 otherwise.
#
# Flags: --set small|full (default full), --work DIR (default /tmp/polycrawl-docsites),
# --bin PATH (the polycrawl binary; default: build it, release), --timeout-s S (the
# crawl, default 600), --keep (keep the work folder).
#
# Everything started here (nginx, the crawl) is stopped on exit, by pid.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

set_name=full work=/tmp/polycrawl-docsites bin="" timeout_s=600 keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --set) set_name="$2"; shift 2 ;;
        --work) work="$2"; shift 2 ;;
        --bin) bin="$2"; shift 2 ;;
        --timeout-s) timeout_s="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown flag $1 (see --help)" ;;
    esac
done

# name package root-in-package seed: the sites, largest first.
full_sites="libstdcxx libstdc++-12-doc usr/share/doc/libstdc++-12-doc/libstdc++ index.html
postgresql postgresql-doc-15 usr/share/doc/postgresql-doc-15/html index.html
sqlite sqlite3-doc usr/share/doc/sqlite3 index.html
django python-django-doc usr/share/doc/python-django-doc/html index.html
python python3.11-doc usr/share/doc/python3.11/html index.html
gtk3 libgtk-3-doc usr/share/gtk-doc/html/gtk3 index.html
git git-doc usr/share/doc/git-doc git.html
sphinx sphinx-doc usr/share/doc/sphinx-doc/html index.html
handbook debian-handbook usr/share/doc/debian-handbook/html/en-US index.html
reference debian-reference-en usr/share/debian-reference index.en.html
devref developers-reference usr/share/developers-reference index.html
maint maint-guide usr/share/doc/maint-guide/html index.en.html"
case "$set_name" in
    full) sites="$full_sites" ;;
    small) sites="$(printf '%s\n' "$full_sites" | grep -E '^(git|sphinx|handbook|reference|devref|maint) ')" ;;
    *) die "unknown set $set_name (small, full)" ;;
esac

# --- What it needs: nginx-light, html5lib, the packages, the binary. ---
if ! dpkg-query -W -f='${Status}' nginx-light 2>/dev/null | grep -q "install ok installed"; then
    log "installing nginx-light"
    [ "$(id -u)" -eq 0 ] || die "need root to install nginx-light"
    env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
fi
python3 -c 'import html5lib' 2>/dev/null || python3 -m pip install --quiet html5lib
cache="${XDG_CACHE_HOME:-$HOME/.cache}/polycrawl/docsites"
mkdir -p "$cache"
while read -r name pkg root seed; do
    [ -d "$cache/$pkg/$root" ] && continue
    log "downloading $pkg"
    rm -rf "$cache/$pkg" "$cache/$pkg.deb.d"
    mkdir -p "$cache/$pkg.deb.d"
    (cd "$cache/$pkg.deb.d" && apt-get download -q "$pkg" >/dev/null 2>&1) || die "apt-get download $pkg failed"
    dpkg-deb -x "$cache/$pkg.deb.d"/*.deb "$cache/$pkg"
    rm -rf "$cache/$pkg.deb.d"
    [ -d "$cache/$pkg/$root" ] || die "$pkg has no $root"
done <<<"$sites"
if [ -z "$bin" ]; then
    source "$here/env.sh"
    log "building polycrawl (release)"
    cargo build --quiet --release --locked --manifest-path "$here/../Cargo.toml" -p polycrawl --bin polycrawl
    bin="$CARGO_TARGET_DIR/release/polycrawl"
fi

rm -rf "$work"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
nginx_pid="" crawl_pid=""
cleanup() {
    [ -n "$crawl_pid" ] && kill -TERM "$crawl_pid" 2>/dev/null && wait "$crawl_pid" 2>/dev/null
    [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    [ "$keep" = 1 ] || rm -rf "$work"
    return 0
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

port="$(free_port)"

# --- nginx: one server a site, its access log as ADDR:PORT<TAB>URI. ---
i=0
servers=""
oracle_args=()
: >"$work/seeds.txt"
while read -r name pkg root seed; do
    i=$((i + 1))
    addr="127.0.61.$i"
    servers+="    server { listen $addr:$port; root $cache/$pkg/$root; index index.html; }
"
    printf 'http://%s:%s/%s\n' "$addr" "$port" "$seed" >>"$work/seeds.txt"
    oracle_args+=("http://$addr:$port/=$cache/$pkg/$root=$seed")
    log "site $name: http://$addr:$port/$seed"
done <<<"$sites"
mkdir -p "$work/nginx"
# Workers read the cache in this user's home: they run as this user.
user_line=""
[ "$(id -u)" -eq 0 ] && user_line="user root;"
cat >"$work/nginx/nginx.conf" <<EOF
$user_line
daemon off;
master_process on;
worker_processes 2;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 1000;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    log_format sites escape=none '\$server_addr:\$server_port\t\$request_uri';
    access_log $work/nginx/access.log sites;
$servers}
EOF
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
nginx_pid=$!
for _ in $(seq 1 100); do
    # robots.txt: the one path the judge leaves out.
    curl -s -o /dev/null "http://127.0.61.1:$port/robots.txt" && break
    kill -0 "$nginx_pid" 2>/dev/null || die "nginx exited: $(tail -n 5 "$work/nginx/error.log")"
    sleep 0.1
done

# --- The oracle's list, while nginx starts. ---
python3 "$here/link_oracle.py" walk "${oracle_args[@]}" >"$work/expected.txt"

# --- polycrawl with the defaults, politeness off. ---
cat >"$work/polycrawl.ron" <<EOF
// Written by ops/docsites.sh: the defaults, loopback allowed, politeness off.
(
    downloader: (allow_private: true),
    manager: (
        admin_http: "127.0.0.1:0",
        frontier: (
            allow_private_addresses: true,
            interval_ms: 0, min_interval_ms: 0, max_crawl_delay_ms: 0,
            ip_max_in_flight: 0, ip_min_interval_ms: 0,
        ),
    ),
)
EOF
"$bin" config --check "$work/polycrawl.ron" >/dev/null
log "crawling $(wc -l <"$work/seeds.txt") sites ($(wc -l <"$work/expected.txt") URLs by the oracle)"
start=$(date +%s.%N)
timeout "$timeout_s" "$bin" crawl --seeds "$work/seeds.txt" --out "$work/out" --config "$work/polycrawl.ron" \
    >"$work/crawl.stdout" 2>"$work/crawl.stderr" &
crawl_pid=$!
rc=0
wait "$crawl_pid" || rc=$?
crawl_pid=""
secs="$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"
kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null || true
nginx_pid=""
[ "$rc" -eq 0 ] || die "polycrawl crawl exited $rc after $secs s: $(tail -n 5 "$work/crawl.stderr")"

app_line="$(grep -m1 '^app: ' "$work/crawl.stdout" || true)"
printf 'docsites: set %s, %s sites, crawl %s s\n' "$set_name" "$(wc -l <"$work/seeds.txt")" "$secs"
printf 'docsites: %s\n' "$(grep -m1 ': crawl ' "$work/crawl.stdout" || true)"
printf 'docsites: %s\n' "$app_line"
ok=0
python3 "$here/link_oracle.py" compare "$work/expected.txt" "$work/nginx/access.log" |
    sed 's/^/docsites: /' || ok=1
case "$app_line" in
    *": Complete: "*) ;;
    *) log "the crawl does not call itself Complete"; ok=1 ;;
esac
exit "$ok"
