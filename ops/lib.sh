# Sourced by the scripts in ops/ (after env.sh): what they share, written once.
#
#   log MSG / die MSG      one line on stderr, prefixed with the script's name
#                          (die exits 1)
#   websim_start BIN DIR FLAGS...
#                          `BIN websim FLAGS --out DIR --exit-with-parent` in the
#                          background (stdout in DIR.stdout, log in DIR.log), waits up
#                          to 180 s for its ready line; sets websim_pid and
#                          websim_line, and stops it on exit (websim_stop)
#   ws KEY                 a key of websim's ready line (dns, ca, seeds, ...)
#   websim_stop            ends the websim this library started, by its pid
#   loopback_config FILE INTERVAL_MS
#                          the RON config of a crawl of that websim: the defaults
#                          plus what loopback needs, every domain in scope, politeness
#                          INTERVAL_MS per host and per IP
#   free_port              a port no socket uses on any loopback address, TCP or UDP,
#                          below the kernel's ephemeral range
#
# This library never signals a process it did not start.

prog="$(basename "$0" .sh)"
log() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { log "$*"; exit 1; }

websim_pid=""
websim_line=""
websim_stop() {
    if [ -n "$websim_pid" ] && kill -0 "$websim_pid" 2>/dev/null; then
        kill -TERM "$websim_pid" 2>/dev/null || true
        wait "$websim_pid" 2>/dev/null || true
    fi
    websim_pid=""
}

websim_start() { # BIN DIR FLAGS...
    local bin="$1" dir="$2"
    shift 2
    RUST_LOG=warn "$bin" websim "$@" --out "$dir" --exit-with-parent \
        >"$dir.stdout" 2>"$dir.log" &
    websim_pid=$!
    trap websim_stop EXIT
    websim_line=""
    for _ in $(seq 1 1800); do
        websim_line="$(grep -m1 '^websim ready ' "$dir.stdout" 2>/dev/null || true)"
        [ -n "$websim_line" ] && return 0
        kill -0 "$websim_pid" 2>/dev/null || die "websim exited: $(tail -n 5 "$dir.log")"
        sleep 0.1
    done
    die "websim did not get ready in 180 s"
}

# A port free on every loopback address, for both TCP and UDP (dnsmasq takes both;
# a TCP-only check let it fail with "Address already in use" about once in 15 runs),
# below the kernel's ephemeral range and used by no socket in any state. With a
# listening-only check dnsmasq still failed so in about 1 start in 35 (issue 39,
# sessions 31 and 32: the bench-peers run printed no row); the cause was not pinned
# down, but a port of the ephemeral range can be the local end of one of a run's
# thousands of outgoing connections or UDP queries, which that check did not see.
free_port() {
    local p low
    low="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
    [ "$low" -gt 12000 ] || low=32768
    while :; do
        p=$((10000 + RANDOM % (low - 10000)))
        ss -Htuan "sport = :$p" | grep -q . || { echo "$p"; return; }
    done
}

ws() { printf '%s\n' "$websim_line" | sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }

loopback_config() { # FILE INTERVAL_MS
    cat >"$1" <<CONF
// Written by ops/$prog.sh (ops/lib.sh, loopback_config).
(
    app: (scope: open, allowed_domains: []),
    resolver: (name_servers: ["$(ws dns)"]),
    downloader: (allow_private: true, extra_ca_file: Some("$(ws ca)")),
    manager: (
        admin_http: "127.0.0.1:0",
        frontier: (
            allow_private_addresses: true,
            target_pages_per_sec: 100000.0,
            interval_ms: $2, min_interval_ms: $2,
            ip_max_in_flight: 1, ip_min_interval_ms: $2,
            max_crawl_delay_ms: 1000,
            backoff_ms: [500, 1000, 2000],
            dns_retry_ms: 5000,
        ),
    ),
)
CONF
}
