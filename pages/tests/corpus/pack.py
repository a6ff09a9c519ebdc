#!/usr/bin/env python3
"""Packs the real-page corpus for tests/real_pages.rs from installed documentation.

Not run by the tests or CI: they read the packed files committed beside this
script. To rebuild (Debian 12 plus a rustup stable toolchain with its docs):

    apt-get install --no-install-recommends python3-doc doxygen-doc junit4-doc \
        git-doc ikiwiki bash-doc valgrind libxslt1-dev nodejs npm
    apt-get download wordpress wordpress-theme-twentytwentythree   # unpacked, not installed
    python3 pages/tests/corpus/pack.py [--wordpress DIR]

Each source becomes SOURCE.pages.gz: for every page a header line
`page <byte length> <URL>\n` followed by the page's bytes as installed. The URL is
a made-up https URL under SOURCE.corpus.test that keeps the page's relative path,
so relative links resolve as on the real site. Pages are chosen deterministically
(every k-th file in sorted order) up to a page count and a byte budget per source.
"""

import argparse
import gzip
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUST = os.path.expanduser("~/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html")

# name, generator, roots (directory, URL prefix), max pages, max raw bytes,
# skip (path substrings)
SOURCES = [
    ("rustdoc", "rustdoc", [(f"{RUST}/std", "std")], 450, 20_000_000, []),
    (
        "mdbook",
        "mdBook",
        [
            (f"{RUST}/{b}", b)
            for b in ("book", "reference", "nomicon", "rust-by-example", "cargo", "edition-guide",
                      "embedded-book", "rustc", "style-guide", "unstable-book")
        ],
        600,
        14_000_000,
        ["print.html", "/toc.html"],
    ),
    ("sphinx", "Sphinx (Python 3.11 docs)", [("/usr/share/doc/python3.11-doc/html", "")], 450, 24_000_000, []),
    ("doxygen", "Doxygen (its own manual)", [("/usr/share/doc/doxygen/html", "")], 360, 6_000_000, []),
    ("javadoc", "javadoc (JUnit 4 API)", [("/usr/share/doc/junit4/api", "api")], 540, 9_000_000, []),
    ("asciidoc", "AsciiDoc (Git manual)", [("/usr/share/doc/git-doc", "")], 240, 8_000_000, []),
    ("ikiwiki", "ikiwiki (wiki and blog engine, its own site)", [("/usr/share/doc/ikiwiki/html", "")], 470, 4_000_000, []),
    (
        "makeinfo",
        "makeinfo (Texinfo: libffi manual, Bash reference)",
        [("/usr/share/doc/libffi8/html", "libffi"), ("/usr/share/doc/bash", "bash")],
        60,
        4_000_000,
        [],
    ),
    ("docbook", "DocBook XSL (Valgrind manual)", [("/usr/share/doc/valgrind/html", "")], 60, 5_000_000, []),
    ("nodejs", "Node.js doc tool (Node.js API)", [("/usr/share/doc/nodejs/api", "api")], 70, 6_000_000, []),
    ("npm", "npm docs site (npm CLI)", [("/usr/lib/node_modules/npm/docs/output", "")], 100, 3_000_000, []),
    ("libxml-devhelp", "libxml devhelp and hand-kept XSLT site (libxslt)", [("/usr/share/doc/libxslt1-dev/html", "")], 100, 3_000_000, []),
]


def html_files(root):
    out = []
    for dirpath, _, files in os.walk(root, followlinks=True):
        for f in files:
            if f.endswith((".html", ".htm")):
                out.append(os.path.join(dirpath, f))
    return sorted(out)


def pack(name, roots, max_pages, max_bytes, skip):
    files = []
    for root, prefix in roots:
        if not os.path.isdir(root):
            sys.exit(f"{name}: {root} is missing")
        for path in html_files(root):
            rel = os.path.relpath(path, root)
            if any(s in "/" + rel for s in skip):
                continue
            files.append((path, "/".join(p for p in (prefix, rel) if p)))
    step = max(1, len(files) // max_pages)
    chosen, total = [], 0
    for path, rel in files[::step]:
        size = os.path.getsize(path)
        if len(chosen) >= max_pages or total + size > max_bytes:
            continue
        chosen.append((path, rel))
        total += size
    out = os.path.join(HERE, f"{name}.pages.gz")
    with gzip.open(out, "wb", compresslevel=9) as z:
        for path, rel in chosen:
            data = open(path, "rb").read()
            url = f"https://{name}.corpus.test/{rel}"
            z.write(f"page {len(data)} {url}\n".encode())
            z.write(data)
    print(f"{name:15} {len(chosen):4} pages {total/1e6:6.1f} MB -> {os.path.getsize(out)/1e6:5.2f} MB")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wordpress", help="unpacked wordpress + theme packages (their usr/share/wordpress)")
    args = ap.parse_args()
    for name, _, roots, max_pages, max_bytes, skip in SOURCES:
        pack(name, roots, max_pages, max_bytes, skip)
    if args.wordpress:
        pack("wordpress", [(args.wordpress, "")], 100, 2_000_000, [])


if __name__ == "__main__":
    main()
