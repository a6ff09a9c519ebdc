#!/usr/bin/env bash
# The doc gate (part of ops/test.sh): rustdoc with warnings denied (broken
# intra-doc links, bad code blocks, unclosed HTML), private items included; then
# every repository path that a comment, doc or script names (a file under a
# crate's src/, tests/ or benches/, a script in ops/) must exist, so a moved file
# cannot leave a stale pointer behind. Exits 1 naming what is wrong.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
# --release: the same build-script runs as the test build (RocksDB is not built again).
RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings" \
    cargo doc --release --locked --workspace --no-deps --document-private-items --quiet

crates='spool|manager|downloader|resolver|pages|seen|app-core|app-bfs|app-seeds|coordinator|offline|storage|nfsim|ops|tests|websim|fuzzing'
missing=0
while IFS=: read -r file line path; do
    if [ ! -e "$path" ]; then
        echo "check-docs: $file:$line names $path, which does not exist"
        missing=1
    fi
done < <(git ls-files -z -- '*.rs' '*.md' '*.sh' '*.toml' |
    xargs -0 grep -noE "\b($crates)/((src|tests|benches)/[A-Za-z0-9_./-]+\.rs|[A-Za-z0-9_-]+\.sh)\b" |
    sort -u)
exit "$missing"
