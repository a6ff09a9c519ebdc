#!/usr/bin/env bash
# Installs what polycrawl needs on a fresh Debian machine, and nothing that is
# already there. Safe to run any number of times; both README commands call it.
#
#   apt:   build-essential pkg-config libclang-dev (RocksDB's bindgen build),
#          nasm autoconf automake libtool (ISA-L's build: the WARC's deflate),
#          dnsutils (dig, used by the DNS tests), chromium (the admin page's
#          browser test drives it headless)
#   cargo: cargo-nextest (the test runner)
#   pip:   warcio (the WARC checker the storage tests run), wacz (py-wacz: its
#          `wacz validate` checks the WACZ files `polycrawl wacz` writes), pywb (the
#          replay test indexes and serves a crawl with it), html5lib (the docsites
#          test's link oracle, ops/link_oracle.py), prometheus_client (its
#          text parser reads the manager's /metrics in the tests), grpcio and
#          grpcio-tools (the URL Frontier test generates its client from the
#          official proto with grpc_tools.protoc)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else log "need root to run: $*"; exit 1
    fi
}

if ! command -v cargo >/dev/null 2>&1; then
    log "cargo not found: install a Rust toolchain (rustup) first"
    exit 1
fi

apt_missing=()
# fuse3: fusermount3, which `polycrawl nfsim` (the NFS stand-in of the multi-machine
# tests) mounts through.
# nginx-light: the server of the real documentation sites the docsites test crawls
# (ops/docsites.sh; installed without starting any service).
for pkg in build-essential pkg-config libclang-dev nasm autoconf automake libtool dnsutils chromium fuse3 nginx-light; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || apt_missing+=("$pkg")
done
if [ ${#apt_missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${apt_missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_missing[@]}" >/dev/null
fi

if ! cargo nextest --version >/dev/null 2>&1; then
    log "installing cargo-nextest"
    cargo install --locked cargo-nextest
fi

if ! python3 -c 'import warcio' >/dev/null 2>&1; then
    log "installing warcio (pip)"
    python3 -m pip install --quiet warcio
fi

if ! python3 -c 'import wacz' >/dev/null 2>&1 || ! command -v wacz >/dev/null 2>&1; then
    log "installing wacz (pip)"
    python3 -m pip install --quiet wacz
fi

if ! python3 -c 'import pywb' >/dev/null 2>&1 || ! command -v wb-manager >/dev/null 2>&1; then
    log "installing pywb (pip)"
    python3 -m pip install --quiet pywb
fi

if ! python3 -c 'import grpc, grpc_tools' >/dev/null 2>&1; then
    log "installing grpcio and grpcio-tools (pip)"
    python3 -m pip install --quiet grpcio grpcio-tools
fi

if ! python3 -c 'import html5lib' >/dev/null 2>&1; then
    log "installing html5lib (pip)"
    python3 -m pip install --quiet html5lib
fi
if ! python3 -c 'import prometheus_client' >/dev/null 2>&1; then
    log "installing prometheus_client (pip)"
    python3 -m pip install --quiet prometheus_client
fi
