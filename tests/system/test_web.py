"""The dashboard's files as rocefabd serves them (no token, ETag, a strict Content-Security-
Policy, nothing outside api.web_root and its javascript.list), GET /api/v1/whoami, and the event
stream GET /api/v1/events (events as changes commit, resuming with Last-Event-ID, "reset" for an
id no longer kept, streams of clients gone reclaimed, a prompt shutdown with streams open)."""
import os
import re
import shutil
import signal
import subprocess
import socket
import threading
import time

import requests

from conftest import BUILD, ROOT, SIM_AGENTS, binary, wait_for

WEB = os.path.join(ROOT, "web")
LIVE = os.path.join(ROOT, "tests", "sim", "live")


def web_daemon(world, root=WEB, extra=""):
    d = world.daemon(extra_conf=f"[api]\nweb_root = {root}\n{extra}")
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    return d.start()


def test_dashboard_files_served_without_token_with_strict_headers(world):
    d = web_daemon(world)
    r = requests.get(d.url + "/", timeout=5)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    with open(os.path.join(WEB, "index.html"), "rb") as f:
        assert r.content == f.read()
    csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe" not in csp
    assert "frame-ancestors 'none'" in csp
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Cache-Control"] == "no-cache"
    etag = r.headers["ETag"]
    # revalidation: 304 without a body
    r2 = requests.get(d.url + "/", headers={"If-None-Match": etag}, timeout=5)
    assert r2.status_code == 304 and r2.content == b""
    assert requests.get(d.url + "/", headers={"If-None-Match": "*"}, timeout=5).status_code == 304
    assert requests.get(d.url + "/", headers={"If-None-Match": '"other"'}, timeout=5).status_code == 200
    # every file under web/ at its path, with its type
    for path, ctype in (("/app.js", "text/javascript"), ("/style.css", "text/css"),
                        ("/views/topology.js", "text/javascript"), ("/lib/api.js", "text/javascript")):
        r = requests.get(d.url + path, timeout=5)
        assert r.status_code == 200, path
        assert r.headers["Content-Type"].startswith(ctype), path
    # no inline script anywhere (the policy would block it): scripts come from files
    with open(os.path.join(WEB, "index.html")) as f:
        html = f.read()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert not re.search(r"\son[a-z]+=", html) and "style=" not in html
    # the browser library from Debian's libjs-chart.js
    r = requests.get(d.url + "/javascript/chart.js/chart.esm.js", timeout=5)
    assert r.status_code == 200 and b"Chart" in r.content
    # what is not a file of the dashboard is the API's 404
    for path in ("/nope.js", "/../etc/passwd", "/javascript/../../etc/passwd", "/.git/config",
                 "/javascript/chart.js/chart.js"):
        r = requests.get(d.url + path, timeout=5)
        assert r.status_code == 404, path
        assert r.headers["Content-Type"] == "application/problem+json"
    # the files are served, not changed: other methods are refused
    r = requests.put(d.url + "/", data="x", timeout=5)
    assert r.status_code == 405


def test_web_root_is_read_safely(world, tmp_path):
    root = tmp_path / "webroot"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>t</title>")
    (root / "sub" / "a.js").write_text("export const a = 1;")
    (root / ".hidden").write_text("secret")
    os.symlink("/etc/passwd", root / "passwd.txt")  # a symlink to a file is read as the file
    private = tmp_path / "private"
    private.mkdir()
    (private / "key.txt").write_text("SECRET")
    os.symlink(private, root / "docs")  # a symlink to a directory is not followed
    os.mkfifo(root / "pipe.js")  # neither a FIFO (it would block the start)
    os.mkfifo(tmp_path / "lib.fifo")
    os.symlink(tmp_path / "lib.fifo", root / "fifo-link.js")
    jsroot = tmp_path / "js"
    (jsroot / "lib").mkdir(parents=True)
    (jsroot / "lib" / "ok.js").write_text("export const ok = 1;")
    os.mkfifo(jsroot / "lib" / "fifo.js")
    (root / "javascript.list").write_text("../../etc/passwd\n/etc/passwd\nlib/ok.js # ok\n"
                                          "nonexistent/lib.js\nlib/fifo.js\n")
    d = web_daemon(world, str(root), extra=f"javascript_root = {jsroot}\n")
    assert requests.get(d.url + "/sub/a.js", timeout=5).text == "export const a = 1;"
    assert requests.get(d.url + "/.hidden", timeout=5).status_code == 404
    assert requests.get(d.url + "/javascript/lib/ok.js", timeout=5).text == "export const ok = 1;"
    for bad in ("/javascript/../../etc/passwd", "/javascript//etc/passwd", "/javascript/etc/passwd",
                "/docs/key.txt", "/pipe.js", "/fifo-link.js", "/javascript/lib/fifo.js"):
        assert requests.get(d.url + bad, timeout=5).status_code == 404, bad
    d.stop()
    log = d.proc.output()
    assert "/docs is a link to no regular file" in log
    assert "lib/fifo.js" in log
    assert "javascript.list: '../../etc/passwd' is not a plain relative path" in log
    assert "javascript.list: '/etc/passwd' is not a plain relative path" in log
    assert "nonexistent/lib.js" in log and "libjs-" in log


def test_no_dashboard_is_a_clear_404_and_the_api_works(world, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    d = web_daemon(world, str(empty))
    r = d.client().get("/")
    assert r.status_code == 404
    assert r.json()["code"] == "NO_DASHBOARD" and "api.web_root" in r.json()["detail"]
    assert d.client("viewer").json("/api/v1/hosts")["count"] == 0
    assert "no dashboard" in d.proc.output() and "has no index.html" in d.proc.output()


def test_whoami(world):
    d = web_daemon(world)
    assert d.client().json("/api/v1/whoami") == {"authenticated": False, "token": None, "role": "none"}
    assert d.client("viewer").json("/api/v1/whoami") == {"authenticated": True, "token": "viewer",
                                                         "role": "viewer"}
    assert d.client("ops").json("/api/v1/whoami")["role"] == "operator"
    bad = requests.get(d.url + "/api/v1/whoami", headers={"Authorization": "Bearer rfb_x"}, timeout=5)
    assert bad.status_code == 200 and bad.json()["role"] == "none"


class Stream:
    """A raw SSE reader on its own socket: events as they arrive, parsed."""

    def __init__(self, url, token, last_id=None):
        host, port = url.split("//")[1].split(":")
        self.s = socket.create_connection((host, int(port)), timeout=10)
        head = f"GET /api/v1/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        if last_id:
            head += f"Last-Event-ID: {last_id}\r\n"
        self.s.sendall((head + "\r\n").encode())
        self.buf = b""
        self.events = []
        self.head = self._read_until(b"\r\n\r\n").decode()

    def _read_until(self, sep):
        while sep not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf.split(sep, 1)
        return out

    def _recv(self, timeout):
        """Appends what arrives within timeout: True, None when nothing did, False at EOF."""
        self.s.settimeout(timeout)
        try:
            chunk = self.s.recv(65536)
        except socket.timeout:
            return None
        self.buf += chunk
        return bool(chunk)

    def body_text(self, timeout=10):
        """Reads the (chunked) body until EOF or timeout s of silence; the text so far."""
        while self._recv(timeout):
            pass
        return self.buf.decode(errors="replace")

    def next_events(self, until, timeout=20):
        """Reads until until(events) is true; the events parsed from the chunked body."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.events = parse_events(dechunk(self.buf))
            if until(self.events):
                return self.events
            if self._recv(0.2) is False:
                break
        self.events = parse_events(dechunk(self.buf))
        assert until(self.events), f"events so far: {self.events}"
        return self.events

    def close(self):
        self.s.close()


def dechunk(b):
    out = b""
    while b:
        if b"\r\n" not in b:
            break
        size, rest = b.split(b"\r\n", 1)
        n = int(size.split(b";")[0], 16)
        if n == 0 or len(rest) < n + 2:
            if n:
                out += rest[:n]  # a chunk still arriving: what is there (events are cut at \n\n)
            break
        out += rest[:n]
        b = rest[n + 2:]
    return out


def parse_events(b):
    events = []
    for block in b.decode(errors="replace").split("\n\n")[:-1]:
        ev = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            ev[k] = v[1:] if v.startswith(" ") else v
        if "data" in ev or "event" in ev:
            events.append(ev)
    return events


def json_id(data):
    import json
    return json.loads(data)["id"]


def metric(d, name):
    text = d.client("viewer").get("/metrics").text
    m = re.search(rf"^{name} (\d+)$", text, re.M)
    return int(m.group(1)) if m else None


def ecn_fabric(world, viewer):
    """rocefabd with tokens `viewer` (role viewer) and ops, and the two switches of
    tests/sim/live/ecn.json reporting: (daemon, simulator, the ops client)."""
    d = world.daemon(extra_conf="")
    _, agent_tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token(viewer, "viewer")
    d.token("ops", "operator")
    d.start()
    sim = world.sim(os.path.join(LIVE, "ecn.json"), daemon=d, token_file=agent_tok, interval="0.5s").start()
    c = d.client("ops")
    wait_for(lambda: c.json("/api/v1/switches")["count"] == 2, 20, 0.2, what="the switches")
    return d, sim, c


def test_event_stream(world):
    d, sim, c = ecn_fabric(world, "viewer")
    # the stream needs a viewer token, like the API
    r = requests.get(d.url + "/api/v1/events", timeout=5)
    assert r.status_code == 401 and r.json()["code"] == "MISSING_TOKEN"
    st = Stream(d.url, d.tokens["viewer"])
    assert st.head.startswith("HTTP/1.1 200")
    assert "text/event-stream" in st.head and "no-store" in st.head.lower()
    sw = c.json("/api/v1/switches")["items"][0]["id"]
    port = c.json(f"/api/v1/switches/{sw}")["port_list"][0]["port"]
    r = c.put(f"/api/v1/switches/{sw}/ports/{port}/queues/3/ecn",
              json={"kmin_bytes": 120000, "kmax_bytes": 480000, "reason": "sse test"})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    # the change's row is written as it is stored, sent and applied: an event each time
    evs = st.next_events(lambda e: sum(1 for x in e if x.get("event") == "change"
                                       and f'"id":{cid}' in x["data"]) >= 2)
    changes = [x for x in evs if x.get("event") == "change"]
    assert all(re.fullmatch(r"[0-9a-f]+-\d+", x["id"]) for x in changes)
    wait_for(lambda: c.json(f"/api/v1/changes/{cid}")["state"] == "applied", 20, 0.2)
    first = changes[0]["id"]
    st.close()
    # resuming from the first event: everything after it, and nothing before
    st2 = Stream(d.url, d.tokens["viewer"], last_id=first)
    evs2 = st2.next_events(lambda e: any(x.get("event") == "change" for x in e))
    seqs = [int(x["id"].split("-")[1]) for x in evs2 if "id" in x]
    assert seqs and min(seqs) == int(first.split("-")[1]) + 1
    assert not any(x.get("event") == "reset" for x in evs2)
    st2.close()
    # an id of another run (or no longer kept): the client is told to reload, once: the reset
    # carries the newest id, and resuming from it is no reset
    st3 = Stream(d.url, d.tokens["viewer"], last_id="deadbeef-7")
    evs3 = st3.next_events(lambda e: any(x.get("event") == "reset" for x in e))
    assert evs3[0]["event"] == "reset" and re.fullmatch(r"[0-9a-f]+-\d+", evs3[0]["id"])
    st3.close()
    st3 = Stream(d.url, d.tokens["viewer"], last_id=evs3[0]["id"])
    assert "event: reset" not in st3.body_text(1)
    st3.close()
    # HEAD: the headers of a stream and nothing else (the connection stays usable)
    s = socket.create_connection((d.host, d.port), timeout=5)
    s.sendall(f"HEAD /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {d.tokens['viewer']}\r\n\r\n"
              f"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    got = b""
    while got.count(b"HTTP/1.1 ") < 2 or not got.rstrip().endswith(b"}"):
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    s.close()
    first, second = got.split(b"HTTP/1.1 ")[1:3]
    assert first.startswith(b"200") and b"text/event-stream" in first and first.endswith(b"\r\n\r\n"), got
    assert second.startswith(b"200") and b'"status"' in second, got
    # clients gone: their streams are reclaimed at the next event
    streams = [Stream(d.url, d.tokens["viewer"]) for _ in range(5)]
    wait_for(lambda: metric(d, "rocefab_events_streams") >= 5, 10, what="5 open streams")
    for s in streams:
        s.close()
    for i in range(3):
        r = c.put(f"/api/v1/switches/{sw}/ports/{port}/queues/3/ecn",
                  json={"kmin_bytes": 130000 + i, "reason": "wake the streams"})
        assert r.status_code == 202
    wait_for(lambda: metric(d, "rocefab_events_streams") == 0, 20, 0.2,
             what="the streams of closed clients to be reclaimed")
    assert metric(d, "rocefab_events_streams_opened_total") == 9  # (st5 and st4 come after)
    assert metric(d, "rocefab_events_resets_total") >= 1
    # an alert is news when raised and when cleared, not at each pass that refreshes it
    st5 = Stream(d.url, d.tokens["viewer"])
    fid = sim.ctl("POST", "/v1/faults", {"type": "pause_storm", "host": "h4"}, expect=201)["id"]
    evs = st5.next_events(lambda e: any(x.get("event") == "alert" for x in e), 15)
    aid = next(x for x in evs if x.get("event") == "alert")["data"]
    time.sleep(3)  # the detector's passes (every 200 ms) refresh the active alert meanwhile
    st5.next_events(lambda e: True, 1)
    raised = [x for x in st5.events if x.get("event") == "alert" and x["data"] == aid]
    assert len(raised) == 1, st5.events
    active = {a["id"] for a in c.json("/api/v1/alerts", params={"state": "active"})["items"]}
    assert json_id(aid) in active
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
    st5.next_events(lambda e: len([x for x in e if x.get("event") == "alert" and x["data"] == aid]) == 2, 20)
    assert json_id(aid) in {a["id"] for a in c.json("/api/v1/alerts", params={"state": "cleared"})["items"]}
    st5.close()
    # a stream open at shutdown ends, and rocefabd stops at once
    st4 = Stream(d.url, d.tokens["viewer"])
    sim.stop()
    t = time.monotonic()
    assert d.stop() == 0
    assert time.monotonic() - t < 5
    st4.body_text(5)  # the server closed it (EOF), not a timeout
    st4.close()


def test_a_revoked_token_ends_its_event_stream(world):
    """A stream checks its token again before what it sends: revoked, the stream ends and sends
    nothing more (an attacker's review: a revoked token's open stream went on delivering the
    changes), while other streams go on; coming back gets 401."""
    d, sim, c = ecn_fabric(world, "tmpview")
    sw = c.json("/api/v1/switches")["items"][0]["id"]
    port = c.json(f"/api/v1/switches/{sw}")["port_list"][0]["port"]

    def change(kmin):
        r = c.put(f"/api/v1/switches/{sw}/ports/{port}/queues/3/ecn", json={"kmin_bytes": kmin, "reason": "sse"})
        assert r.status_code == 202, r.text
        return f'"id":{r.json()["changes"][0]["id"]}'

    st, other = Stream(d.url, d.tokens["tmpview"]), Stream(d.url, d.tokens["ops"])
    first = change(120000)
    st.next_events(lambda e: any(first in x.get("data", "") for x in e))
    subprocess.run([binary("rocefabd"), "--config", d.conf, "token", "revoke", "tmpview"],
                   check=True, capture_output=True)
    wait_for(lambda: d.client("tmpview").get("/api/v1/whoami").json()["authenticated"] is False, 3,
             what="the revocation")
    second = change(130000)
    other.next_events(lambda e: any(second in x.get("data", "") for x in e))
    # the stream's last chunk (the connection may stay open for another request)
    wait_for(lambda: st._recv(0.2) is False or st.buf.endswith(b"\r\n0\r\n\r\n"), 10,
             what="the revoked token's stream to end")
    assert st.buf.endswith(b"\r\n0\r\n\r\n"), st.buf[-200:]
    assert second not in dechunk(st.buf).decode(errors="replace")
    st.close()
    other.close()
    r = requests.get(d.url + "/api/v1/events", headers={"Authorization": f"Bearer {d.tokens['tmpview']}"}, timeout=5)
    assert r.status_code == 401 and r.json()["code"] == "INVALID_TOKEN"
    sim.stop()


def test_heatmap_matrix_without_paths_from_the_last_pass(world):
    """GET /probes/matrix?paths=false: pairs without per-path detail; over the localization's
    window it is the last pass's matrix (as_of), the same pairs as computed on demand."""
    import sqlite3
    d = world.daemon()
    d.token("viewer", "viewer")
    now = time.time_ns()
    db = sqlite3.connect(d.db)
    rows = []
    for r in range(3):
        for i in range(4):
            for j in range(4):
                if i != j:
                    for label in range(2):
                        p50 = 3.0 + i + j / 10
                        rows.append((f"h{i}", f"h{j}", "write", 64, label, now - r * 10**9, 10, 10, 0,
                                     p50 - 0.5, p50, p50 + 1, p50 + 2, p50, f'["h{i}-leaf0","leaf0-h{j}"]'))
    db.executemany("INSERT INTO probe_results(src, dst, op, size, label, t_ns, n, ok, lost, min_us, "
                   "p50_us, p99_us, max_us, mean_us, path) VALUES(" + ",".join("?" * 15) + ")", rows)
    db.commit()
    db.close()
    d.start()
    c = d.client("viewer")
    full = c.json("/api/v1/probes/matrix", params={"window": "10s"})
    assert len(full["pairs"]) == 12 and all(len(p["paths"]) == 2 for p in full["pairs"])
    cached = wait_for(lambda: (lambda m: "as_of" in m and m)(
        c.json("/api/v1/probes/matrix", params={"window": "10s", "paths": "false"})), 10, 0.2,
        what="the localization pass's matrix")
    strip = lambda m: sorted((p["src"], p["dst"], p["n"], p["p50_us"], p["p99_us"], p["bad"]) for p in m["pairs"])
    assert strip(cached) == strip(full)
    assert all("paths" not in p for p in cached["pairs"])
    assert cached["finding"]["kind"] == full["finding"]["kind"] == "none"
    # another window is computed on demand, without as_of
    other = c.json("/api/v1/probes/matrix", params={"window": "30s", "paths": "false"})
    assert "as_of" not in other and strip(other) == strip(full)
    r = c.get("/api/v1/probes/matrix", params={"paths": "maybe"})
    assert r.status_code == 400 and r.json()["code"] == "BAD_PARAMETER"


def test_make_install_installs_every_dashboard_file(world, tmp_path):
    """What `make install` puts under $(DATADIR)/rocefab/web is all of web/, and rocefabd serves
    it from there."""
    import subprocess
    dest = tmp_path / "dest"
    r = subprocess.run(["make", "-s", "install", f"DESTDIR={dest}", "PREFIX=/usr",
                        f"B={os.path.relpath(BUILD, ROOT)}"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    installed = dest / "usr" / "share" / "rocefab" / "web"
    rel = lambda base: sorted(os.path.relpath(os.path.join(p, f), base)
                              for p, _, fs in os.walk(base) for f in fs)
    assert rel(str(installed)) == rel(WEB)
    d = web_daemon(world, str(installed))
    assert requests.get(d.url + "/views/topology.js", timeout=5).status_code == 200
