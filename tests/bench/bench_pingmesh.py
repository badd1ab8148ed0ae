#!/usr/bin/python3
"""make bench (g): the pingmesh's matrix as the results table grows.

Two synthetic tables written straight into rocefabd's database (rows as the agents' rounds
would leave them), then GET /api/v1/probes/matrix timed against the running daemon:
  - 32 hosts (the demo's plan: 7 ToR mates + 2 across, 2 paths, a round a second) with one
    hour of results, the default store.probe_retention: ~2 million rows, a 10 s window.
    Reference, same run and same sqlite: the window's query alone, through Python's sqlite3
    (what the daemon adds: cells, medians, localization, JSON); and the results of one pair.
  - 1,024 hosts (31 ToR mates + 2 across, 2 paths), 30 s of results (~2 million rows).
The window is 10 s plus the time the setup took (the rows' times are fixed when they are
written), so it holds somewhat more than 10 rounds; the figures say how many rows.
Usage: bench_pingmesh.py BUILD_DIR WORK_DIR"""
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import probe_rows  # noqa: E402

B, WORK = sys.argv[1], sys.argv[2]
WINDOW_SQL = ("SELECT src, dst, label, t_ns, n, ok, lost, p50_us, p99_us, max_us, path FROM probe_results "
              "WHERE t_ns >= ? AND op = 'write' AND size = 64 ORDER BY +src, dst, label, t_ns")


def fill(db, hosts, per_tor, inter, seconds, now):
    probe_rows.fill(db, hosts, per_tor, inter, seconds, now, offset_ns=5 * 10**8)


def timed_query(db, sql, args):
    t = time.perf_counter()
    n = sum(1 for _ in db.execute(sql, args))
    return time.perf_counter() - t, n


def get(url, tok):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {tok}"})
    t = time.perf_counter()
    body = urllib.request.urlopen(req, timeout=120).read()
    return time.perf_counter() - t, body


def case(name, hosts, per_tor, inter, seconds):
    path = os.path.join(WORK, f"{name}.db")
    tok = subprocess.run([f"{B}/rocefabd", "--db", path, "token", "add", "v", "--role", "viewer"],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    db = sqlite3.connect(path)
    now = time.time_ns()
    fill(db, hosts, per_tor, inter, seconds, now)
    rows = db.execute("SELECT count(*) FROM probe_results").fetchone()[0]
    with socket.socket() as s:
        s.bind(("127.0.0.53", 0))
        port = s.getsockname()[1]
    d = subprocess.Popen([f"{B}/rocefabd", "--db", path, "--listen", f"127.0.0.53:{port}",
                          "-o", "daemon.log_level=warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.53:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/api/v1/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        # a window that holds the newest 10 rounds, however long the setup took
        window = int((time.time_ns() - now) / 1e9) + 10
        since = time.time_ns() - window * 10**9
        times = []
        for _ in range(3):
            t, body = get(f"{url}/api/v1/probes/matrix?window={window}s", tok)
            times.append(t)
        size, pairs = len(body), len(json.loads(body)["pairs"])
        pair_t, body = get(f"{url}/api/v1/probes/results?src=h1&dst=h2&from=-2h&limit=100000", tok)
        pair_n = json.loads(body)["count"]
    finally:
        d.terminate()
        d.wait()
    query, n = timed_query(db, WINDOW_SQL, (since,))
    db.close()
    times.sort()
    print(f"pingmesh     {name}: {rows:,} results in the table, {n:,} in the window: GET /probes/matrix "
          f"{times[1] * 1000:.0f} ms (median of 3), {size / 1e6:.1f} MB, {pairs:,} pairs; "
          f"GET /probes/results of one pair ({pair_n:,}) {pair_t * 1000:.0f} ms")
    print(f"reference    the window's query alone (python sqlite3): {query * 1000:.0f} ms: "
          f"ratio {times[1] / query:.2f}")


case("32 hosts, 1 h", 32, 8, 2, 3600)
case("1,024 hosts, 30 s", 1024, 32, 2, 30)
