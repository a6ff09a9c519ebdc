#!/usr/bin/env bash
# The doc gate (part of ops/test.sh): rustdoc with warnings denied (broken
# intra-doc links, bad code blocks, unclosed HTML), private items included; then
# every repository path that a comment, doc or script names (a file under a
# crate's src/, tests/ or benches/, a script in ops/) must exist, so a moved file
# cannot leave a stale pointer behind; every docs/ page named anywhere must exist,
# and every relative link of a Markdown file (README.md, docs/, DESIGN.md, ...) must
# lead to a file, and its #anchor to a heading there. The README stays a page a
# newcomer reads (issue 44): at most 200 lines, no paragraph over 12 lines (a list
# item counts as its own paragraph only when blank lines part the items).
# Exits 1 naming what is wrong.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
# The shared target dir (ops/env.sh): without it cargo would build into ./target and
# compile RocksDB from nothing.
source "$here/env.sh"
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
while IFS=: read -r file line path; do
    if [ ! -e "$path" ]; then
        echo "check-docs: $file:$line names $path, which does not exist"
        missing=1
    fi
done < <(git ls-files -z -- '*.rs' '*.md' '*.sh' '*.toml' |
    xargs -0 grep -noE "\bdocs/[A-Za-z0-9_-]+\.md\b" | sort -u)

mapfile -t markdown < <(git ls-files -- '*.md')
python3 - "${markdown[@]}" <<'PY' || missing=1
import os, re, sys

def slug(heading):
    # GitHub's anchors: lower case, punctuation but '-' and '_' dropped, spaces to '-'.
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")

def anchors(path):
    found, fenced = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found

bad = 0
for md in sys.argv[1:]:
    text = open(md, encoding="utf-8").read()
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            if not os.path.exists(path):
                print(f"check-docs: {md}:{n} links {target}, which does not exist")
                bad = 1
            elif anchor and path.endswith(".md") and anchor not in anchors(path):
                print(f"check-docs: {md}:{n} links {target}: no such heading in {path}")
                bad = 1

lines = open("README.md", encoding="utf-8").read().rstrip("\n").split("\n")
if len(lines) > 200:
    print(f"check-docs: README.md has {len(lines)} lines, over 200: move reference to docs/")
    bad = 1
fenced, run, start = False, 0, 0
for n, line in enumerate(lines + [""], 1):
    if line.startswith("```"):
        fenced, run = not fenced, 0
        continue
    if fenced:
        continue
    if line.strip():
        start = start if run else n
        run += 1
        continue
    if run > 12:
        print(f"check-docs: README.md:{start}: a paragraph of {run} lines, over 12")
        bad = 1
    run = 0
sys.exit(bad)
PY
exit "$missing"
