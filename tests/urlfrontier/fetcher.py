#!/usr/bin/env python3
"""External fetchers crawling through polycrawl's URL Frontier service (issue 43,
item 5), with a client generated from the official urlfrontier.proto.

Serves a small static web on loopback (three hosts, 127.0.0.2-4, each with a
robots.txt that disallows /secret/, and two more: one under a crawl limit, one
deleted), then runs two fetcher clients at once, each on its own gRPC channel:
GetURLs, fetch over HTTP, PutURLs with the page's links (discovered) and the URL
itself (known, with its status), until GetStats says nothing is left. Before the
crawl it sets a delay on one queue, blocks another for 3 s, sets a crawl limit of
3 on a fourth and blocks the fifth for good; once the fifth holds a URL, it
deletes that queue.

Checks (exit 1 with the reason on the first that fails):
- every page of the web is fetched exactly once, nothing under /secret/ is;
- per queue, across both clients, a URL is handed out only after the previous
  one of that queue was reported plus the manager's interval (the gate is atomic
  across clients), and both clients were served from one queue;
- the delayed queue's retrievals are its delay apart (less 0.2 s of answer
  latency; without the delay they would be the 0.4 s interval apart);
- the blocked queue hands nothing out before its block ends;
- the limited queue has exactly 3 pages fetched, the deleted one none, and
  DeleteQueue removed the URL it held;
- GetStats ends with size 0, nothing in process, and completed = fetched + ended
  (robots.txt exclusions, and the limited and deleted queues' other URLs).
Prints one JSON line of figures.

Usage: fetcher.py --frontier HOST:PORT --proto FILE --work DIR --interval-ms N
"""

import argparse
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"]
PAGES = 8
DELAY_S = 1
BLOCK_S = 3
LIMIT = 3


def fail(why):
    print("FAIL: " + why, file=sys.stderr)
    sys.exit(1)


def generate_client(proto, work):
    out = os.path.join(work, "gen")
    os.makedirs(out, exist_ok=True)
    include = os.path.dirname(os.path.abspath(proto))
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", include,
         "--python_out", out, "--grpc_python_out", out, os.path.abspath(proto)],
        check=True)
    sys.path.insert(0, out)
    import urlfrontier_pb2  # noqa: E402
    import urlfrontier_pb2_grpc  # noqa: E402
    return urlfrontier_pb2, urlfrontier_pb2_grpc


class Site:
    """One host: pages /p0.html.. linking on, to /secret/ and to other hosts."""

    def __init__(self, ip):
        self.ip = ip
        self.requests = []  # (path, user agent)
        self.lock = threading.Lock()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with site.lock:
                    site.requests.append((self.path, self.headers.get("User-Agent", "")))
                status, body = site.page(self.path)
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type",
                                 "text/plain" if self.path == "/robots.txt" else "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((ip, 0), Handler)
        self.port = self.server.server_address[1]
        self.others = []
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def key(self):
        return "%s:%d" % (self.ip, self.port)

    def url(self, path):
        return "http://%s%s" % (self.key(), path)

    def page(self, path):
        if path == "/robots.txt":
            return 200, "User-agent: *\nDisallow: /secret/\n"
        m = re.fullmatch(r"/p(\d+)\.html", path)
        if not m or int(m.group(1)) >= PAGES:
            return 404, "not found"
        i = int(m.group(1))
        links = ["/p%d.html" % j for j in (i + 1, i + 2) if j < PAGES]
        links.append("/secret/%d.html" % i)
        links += [o.url("/p0.html") for o in self.others]
        links.append("#top")
        return 200, "<html><body>%s</body></html>" % "".join(
            '<a href="%s">x</a>' % link for link in links)

    def pages(self):
        return {self.url("/p%d.html" % i) for i in range(PAGES)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frontier", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--interval-ms", type=int, required=True)
    ap.add_argument("--timeout-s", type=float, default=120)
    args = ap.parse_args()
    pb, pb_grpc = generate_client(args.proto, args.work)
    import grpc

    sites = [Site(ip) for ip in HOSTS]
    for s in sites:
        s.others = [o for o in sites if o is not s]
    plain, delayed, blocked, limited, deleted = sites
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def stub():
        return pb_grpc.URLFrontierStub(grpc.insecure_channel(args.frontier))

    admin = stub()
    admin.SetDelay(pb.QueueDelayParams(key=delayed.key(), delay_requestable=DELAY_S))
    block_until = int(time.time()) + BLOCK_S
    admin.BlockQueueUntil(pb.BlockQueueParams(key=blocked.key(), time=block_until))
    admin.SetCrawlLimit(pb.CrawlLimitParams(key=limited.key(), limit=LIMIT))
    admin.BlockQueueUntil(pb.BlockQueueParams(key=deleted.key(), time=int(time.time()) + 3600))

    def put(client, items):
        acks = list(client.PutURLs(iter(items)))
        bad = [a for a in acks if a.status != pb.AckMessage.OK]
        if len(acks) != len(items) or bad:
            fail("PutURLs acks: %d for %d items, not OK: %s" % (len(acks), len(items), bad))

    seeds = [pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=s.url("/p0.html"))))
             for s in (plain, delayed, blocked)]
    put(admin, seeds)

    records = []  # (client, key, url, got, done, status)
    rec_lock = threading.Lock()
    stop = threading.Event()
    errors = []

    def fetcher(name):
        client = stub()
        deadline = time.time() + args.timeout_s
        while not stop.is_set() and time.time() < deadline:
            got_any = False
            for info in client.GetURLs(pb.GetParams(max_urls_per_queue=1, delay_requestable=10)):
                got_any = True
                got = time.time()
                try:
                    with opener.open(info.url, timeout=10) as r:
                        status, body = r.status, r.read().decode()
                except urllib.error.HTTPError as e:
                    status, body = e.code, ""
                links = {urllib.parse.urljoin(info.url, h)
                         for h in re.findall(r'href="([^"]*)"', body)}
                done = time.time()
                with rec_lock:
                    records.append((name, info.key, info.url, got, done, status))
                items = [pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=u)))
                         for u in sorted(links)]
                meta = {"fetch.statusCode": pb.StringList(values=[str(status)])}
                items.append(pb.URLItem(known=pb.KnownURLItem(
                    info=pb.URLInfo(url=info.url, key=info.key, metadata=meta))))
                try:
                    put(client, items)
                except SystemExit:
                    errors.append("put failed")
                    stop.set()
                    return
            if not got_any:
                time.sleep(0.02)

    threads = [threading.Thread(target=fetcher, args=(n,)) for n in ("one", "two")]
    for t in threads:
        t.start()
    deadline = time.time() + args.timeout_s
    quiet = 0
    stats = None
    removed = None
    while time.time() < deadline:
        time.sleep(0.5)
        if removed is None:
            held = admin.GetStats(pb.QueueWithinCrawlParams(key=deleted.key())).size
            if held > 0:
                removed = admin.DeleteQueue(pb.QueueWithinCrawlParams(key=deleted.key())).value
        stats = admin.GetStats(pb.QueueWithinCrawlParams())
        if stats.size == 0 and stats.inProcess == 0 and stats.counts.get("fetched", 0) > 0:
            quiet += 1
            if quiet >= 6:
                break
        else:
            quiet = 0
    stop.set()
    for t in threads:
        t.join()
    if errors:
        fail("; ".join(errors))
    if quiet < 6:
        fail("the crawl did not complete in %ss; last stats %s" % (args.timeout_s, stats))

    fetched = [r[2] for r in records]
    if removed != 1:
        fail("DeleteQueue removed %s URLs, expected the 1 its queue held" % removed)
    limited_fetched = [u for u in fetched if u in limited.pages()]
    if len(set(limited_fetched)) != LIMIT:
        fail("the limited queue had %s fetched, limit %d" % (limited_fetched, LIMIT))
    expected = set().union(*(s.pages() for s in (plain, delayed, blocked))) | set(limited_fetched)
    if sorted(fetched) != sorted(expected):
        fail("fetched %d URLs, expected each of %d once; extra or repeated: %s; missing: %s" % (
            len(fetched), len(expected),
            sorted(u for u in fetched if fetched.count(u) > 1 or u not in expected),
            sorted(expected - set(fetched))))
    for s in sites:
        paths = [p for p, _ in s.requests]
        if any(p.startswith("/secret/") for p in paths):
            fail("a disallowed URL was fetched on %s: %s" % (s.key(), paths))
        if s is deleted and paths != ["/robots.txt"]:
            fail("the deleted queue's host got %s, only its robots.txt was due" % paths)
        robots = [ua for p, ua in s.requests if p == "/robots.txt"]
        if len(robots) != 1 or "polycrawl" not in robots[0].lower():
            fail("%s: robots.txt fetched %d times (by %s), not once by the frontier" % (
                s.key(), len(robots), robots))

    gate = args.interval_ms / 1000.0
    min_gap = None
    min_delayed = None
    shared_queue = False
    for s in sites:
        rs = sorted((r for r in records if r[1] == s.key()), key=lambda r: r[3])
        if len({r[0] for r in rs}) == 2:
            shared_queue = True
        for prev, cur in zip(rs, rs[1:]):
            gap = cur[3] - prev[4]
            min_gap = gap if min_gap is None else min(min_gap, gap)
            if gap < gate - 0.02:
                fail("queue %s: %s handed out %.3fs after %s was done (interval %.3fs)" % (
                    s.key(), cur[2], gap, prev[2], gate))
            # Measured where the answers arrive, not where the frontier took them:
            # a margin for a late first answer, well above the manager's interval.
            if s is delayed:
                d = cur[3] - prev[3]
                min_delayed = d if min_delayed is None else min(min_delayed, d)
            if s is delayed and cur[3] - prev[3] < DELAY_S - 0.2:
                fail("delayed queue %s: retrievals %.3fs apart, delay %ds" % (
                    s.key(), cur[3] - prev[3], DELAY_S))
    if not shared_queue:
        fail("no queue was served to both clients: the test did not test the shared gate")
    first_blocked = min(r[3] for r in records if r[1] == blocked.key())
    if first_blocked < block_until:
        fail("blocked queue %s handed out at %.3f, blocked until %d" % (
            blocked.key(), first_blocked, block_until))

    counts = dict(stats.counts)
    ended = counts.get("ended_without_page", 0)
    if counts.get("fetched") != len(expected):
        fail("GetStats fetched %s, the fetchers reported %d" % (counts.get("fetched"), len(expected)))
    # Ended without a page: the disallowed URLs of the three plain hosts, every
    # URL of the limited host found but not fetched, and the deleted host's p0.
    limited_found = {limited.url("/p0.html")}
    for u in limited_fetched:
        i = int(re.search(r"/p(\d+)\.html", u).group(1))
        limited_found |= {limited.url("/p%d.html" % j) for j in (i + 1, i + 2) if j < PAGES}
        limited_found.add(limited.url("/secret/%d.html" % i))
    unfetched = 3 * PAGES + len(limited_found) - LIMIT + 1
    if ended != unfetched:
        fail("GetStats ended_without_page %d, expected %d" % (ended, unfetched))
    if counts.get("completed") != len(expected) + unfetched:
        fail("GetStats completed %s, expected %d" % (counts.get("completed"), len(expected) + unfetched))
    queues = admin.ListQueues(pb.Pagination(include_inactive=True))
    if not {delayed.key(), blocked.key(), limited.key()} <= set(queues.values):
        fail("ListQueues(include_inactive) lacks the queues with settings: %s" % list(queues.values))

    print(json.dumps({
        "fetched": len(fetched),
        "ended_without_page": ended,
        "completed": counts.get("completed"),
        "clients": sorted({r[0] for r in records}),
        "min_gap_after_done_s": round(min_gap, 3),
        "min_delayed_retrieval_gap_s": round(min_delayed, 3),
        "first_blocked_after_block_s": round(first_blocked - block_until, 3),
        "limited_fetched": len(limited_fetched),
        "deleted_removed": removed,
        "size": stats.size,
        "in_process": stats.inProcess,
    }))


if __name__ == "__main__":
    main()
