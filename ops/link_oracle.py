#!/usr/bin/env python3
"""An independent link oracle for real sites on disk (issue 37, Done-when 1).

Given sites as (origin, root folder, seed path), it walks from the seeds exactly as
a crawler confined to the seeds' hosts must: every URL on a seed's host that an
HTML page reachable from the seeds links, HTML5-parsed by html5lib (a parser
polycrawl does not use), and prints them one a line, sorted. It never fetches
anything: a URL is mapped to the file nginx would serve for it (a folder to its
index.html, a missing file to a 404 that still counts as a request).

Links, as polycrawl's extractor documents them (pages/src/extract/mod.rs):
the href of <a> and <area>, the src of <iframe> and of <frame>, the href of <link>
whose rel has a navigational token and no resource token, and the URL of
<meta http-equiv=refresh>, resolved against the first <base href>; HTML elements
only (not SVG's), nothing inside <template>; a page with <meta name=robots
content=nofollow|none> yields none. Fragments are dropped; only http(s) on a seed's
host is followed. A file is read for links when nginx would call it text/html
(.html, .htm, .shtml).

Usage:
  link_oracle.py walk ORIGIN=ROOT=SEED_PATH ... > expected.txt
  link_oracle.py compare expected.txt ACCESS_LOG   (nginx log lines: ADDR:PORT<TAB>URI)
"""
import os
import re
import sys
from collections import deque
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import html5lib

HTML_NS = "{http://www.w3.org/1999/xhtml}"
NAVIGATIONAL = set("""alternate amphtml appendix archives author begin bookmark canonical
chapter contents copyright edit end first glossary help home index last license me next
prev previous privacy-policy search section shortlink sitemap start subsection tag
terms-of-service toc top up""".split())
RESOURCE = set("""stylesheet icon shortcut apple-touch-icon apple-touch-icon-precomposed
mask-icon manifest preload prefetch prerender modulepreload preconnect dns-prefetch pingback
webmention hub import serviceworker expect compression-dictionary edituri wlwmanifest
openid.server openid.delegate openid2.provider openid2.local_id""".split())
HTML_EXTENSIONS = (".html", ".htm", ".shtml")
REFRESH = re.compile(r"^\s*\d*(\.\d*)?\s*[;,]?\s*(url\s*=\s*)?(.*)$", re.I | re.S)


def strip_url(value):
    """An attribute's URL as a browser reads it: ASCII whitespace trimmed, tabs and
    newlines removed."""
    return re.sub(r"[\t\n\r]", "", value.strip(" \t\n\r\f"))


def links_of(data, page_url):
    """The followable links of an HTML page (bytes), absolute, in document order."""
    tree = html5lib.parse(data, treebuilder="etree", namespaceHTMLElements=True)
    parent = {child: node for node in tree.iter() for child in node}

    def inert(el):
        while el in parent:
            el = parent[el]
            if el.tag == HTML_NS + "template":
                return True
        return False

    elements = [el for el in tree.iter() if isinstance(el.tag, str)
                and el.tag.startswith(HTML_NS) and not inert(el)]
    base = page_url
    for el in elements:
        if el.tag == HTML_NS + "base" and el.get("href") is not None:
            base = urljoin(page_url, strip_url(el.get("href")))
            break
    for el in elements:
        if el.tag == HTML_NS + "meta":
            name = (el.get("name") or "").lower()
            if name == "robots":
                tokens = {t.strip() for t in (el.get("content") or "").lower().split(",")}
                if "nofollow" in tokens or "none" in tokens:
                    return []
    out = []
    for el in elements:
        tag = el.tag[len(HTML_NS):]
        value = None
        if tag in ("a", "area"):
            value = el.get("href")
        elif tag in ("iframe", "frame"):
            value = el.get("src")
        elif tag == "link":
            rels = set((el.get("rel") or "").lower().split())
            if rels & NAVIGATIONAL and not rels & RESOURCE:
                value = el.get("href")
        elif tag == "meta" and (el.get("http-equiv") or "").lower() == "refresh":
            m = REFRESH.match(el.get("content") or "")
            if m and m.group(3).strip():
                value = m.group(3).strip().strip("'\"")
        if value is None:
            continue
        # http(s) URLs are "special" (URL Standard): a backslash is a slash.
        value = strip_url(value).replace("\\", "/")
        if value.startswith("#"):
            continue
        out.append(urljoin(base, value))
    return out


def normal(url):
    """The URL without its fragment, scheme and host lower-cased, default port dropped,
    path percent-decoded (the form both sides are compared in)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    netloc = host if port in (None, default) else f"{host}:{port}"
    path = unquote(parts.path or "/")
    return urlunsplit((parts.scheme.lower(), netloc, path, parts.query, ""))


def file_of(root, path):
    """The file nginx serves for `path` under `root` (None: a 404)."""
    full = os.path.join(root, path.lstrip("/"))
    if path.endswith("/") or os.path.isdir(full):
        full = os.path.join(full, "index.html")
    return full if os.path.isfile(full) else None


def walk(argv):
    sites = {}
    queue = deque()
    seen = set()
    for arg in argv:
        origin, root, seed = arg.split("=", 2)
        sites[urlsplit(origin).netloc.lower()] = root
        url = normal(urljoin(origin, seed))
        if url not in seen:
            seen.add(url)
            queue.append(url)
    while queue:
        url = queue.popleft()
        parts = urlsplit(url)
        path = file_of(sites[parts.netloc], parts.path)
        if path is None or not path.lower().endswith(HTML_EXTENSIONS):
            continue
        with open(path, "rb") as f:
            data = f.read()
        for link in links_of(data, url):
            if urlsplit(link).scheme.lower() not in ("http", "https"):
                continue
            link = normal(link)
            if urlsplit(link).netloc in sites and link not in seen:
                seen.add(link)
                queue.append(link)
    for url in sorted(seen):
        print(url)


def compare(expected_path, log_path):
    """Prints `expected= fetched= missing= extra= duplicate=` and a few of each
    difference; exit status 1 when any differs."""
    with open(expected_path) as f:
        expected = {line.strip() for line in f if line.strip()}
    counts = {}
    with open(log_path) as f:
        for line in f:
            addr, _, uri = line.rstrip("\n").partition("\t")
            if uri.split("?")[0] == "/robots.txt":
                continue
            url = normal(f"http://{addr}{uri}")
            counts[url] = counts.get(url, 0) + 1
    missing = sorted(expected - counts.keys())
    extra = sorted(counts.keys() - expected)
    duplicate = sorted(u for u, n in counts.items() if n > 1)
    print(f"expected={len(expected)} fetched={len(counts)} requests={sum(counts.values())} "
          f"missing={len(missing)} extra={len(extra)} duplicate={len(duplicate)}")
    for what, urls in (("missing", missing), ("extra", extra), ("duplicate", duplicate)):
        for url in urls[:10]:
            print(f"  {what}: {url}")
    return 0 if not (missing or extra or duplicate) else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["walk"]:
        walk(sys.argv[2:])
    elif sys.argv[1:2] == ["compare"] and len(sys.argv) == 4:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
