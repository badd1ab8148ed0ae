"""Abuse limits and strict request heads: one client cannot lock rocefabd up, and every error
rocefabd answers is problem+json (api/guard.c, api/server.c; README "Security model").

Loopback only: the flood comes from 127.77.0.2, the well-behaved client from 127.77.0.3."""
import json
import os
import re
import resource
import socket
import struct
import statistics
import time

import pytest
import requests

from conftest import openapi, wait_for

FLOOD_ADDR = "127.77.0.2"
GOOD_ADDR = "127.77.0.3"


def problem(r, status, code):
    """r: a requests response or (status, headers, body) of a raw exchange."""
    assert r.status_code == status, (r.status_code, r.text[:300])
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.headers
    openapi()._check_problem(r)
    p = r.json()
    assert p["status"] == status and p["code"] == code, p
    return p


class Raw:
    """An HTTP/1.1 exchange over a plain socket, for what requests cannot send."""

    def __init__(self, status, headers, body):
        self.status_code, self.headers, self.content = status, headers, body
        self.text = body.decode(errors="replace")

    def json(self):
        return json.loads(self.content)


def raw(d, head, body=b"", src=GOOD_ADDR, timeout=10):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(timeout)
    s.connect((d.host, d.port))
    s.sendall(head + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, f"connection closed without an answer: {data!r}"
        data += chunk
    head_b, _, rest = data.partition(b"\r\n\r\n")
    lines = head_b.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = requests.structures.CaseInsensitiveDict(
        (k.strip(), v.strip()) for k, v in (l.split(":", 1) for l in lines[1:]))
    n = int(headers.get("Content-Length", "0"))
    while len(rest) < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    s.close()
    return Raw(status, headers, rest)


def metric(d, name, token="viewer"):
    text = d.client(token).get("/metrics").text
    m = re.search(rf"^{name} (\d+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return int(m.group(1))


def rss_kib(d):
    with open(f"/proc/{d.proc.p.pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


@pytest.fixture
def daemon(world):
    d = world.daemon(extra_conf="[api]\nrequest_timeout = 3s\n")
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    d.start()
    return d


def health_ms(d, n=40):
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        with socket.create_connection((d.host, d.port), timeout=5,
                                      source_address=(GOOD_ADDR, 0)) as c:
            c.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
        assert data.startswith(b"HTTP/1.1 200"), data[:200]
        times.append((time.monotonic() - t0) * 1000)
    return statistics.median(times)


def test_flood_from_one_address_leaves_health_answered(world, daemon):
    """10,000 half-open connections from one address: the daemon holds at most
    api.max_client_connections of them, another address's /health answers within 100 ms at the
    median, the library's messages are counted but not all logged, and the memory comes back."""
    d = daemon
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 10_500
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"open-files hard limit {hard} < {want}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    health_ms(d, 10)  # warm up
    rss_before = rss_kib(d)
    limit = 64
    flood = []
    t0 = time.monotonic()
    try:
        for i in range(10_000):
            s = socket.socket()
            s.bind((FLOOD_ADDR, 0))
            s.settimeout(5)
            s.connect((d.host, d.port))
            try:
                s.send(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")  # and never the end
            except OSError:
                pass  # already refused: the server closed it
            flood.append(s)
        assert time.monotonic() - t0 < 120, "the flood itself took too long"
        median = health_ms(d)
        print(f"flood of {len(flood)} connections in {time.monotonic() - t0:.1f} s; "
              f"/health median {median:.1f} ms")
        assert median < 100, f"/health median {median:.1f} ms under the flood"
        assert metric(d, "rocefab_http_connections_open") <= limit + 5
        assert metric(d, "rocefab_http_connections_refused_total") >= 10_000 - limit - 5
    finally:
        for s in flood:
            s.close()
    # the flood's connections that were held are closed by the deadline or by their close
    wait_for(lambda: metric(d, "rocefab_http_connections_open") <= 2, 15,
             what="the flood's connections to be closed")
    messages = metric(d, "rocefab_http_server_messages_total")
    logged = d.proc.output().count("libmicrohttpd:")
    print(f"library messages {messages}, logged {logged}")
    assert logged <= 5 * (1 + (time.monotonic() - t0) // 10) + 5
    rss_after = rss_kib(d)
    print(f"RSS before {rss_before} KiB, after {rss_after} KiB")
    assert rss_after <= rss_before * 1.10 + 512, (rss_before, rss_after)
    assert d.client("viewer").get("/api/v1/hosts").status_code == 200


def test_trickled_head_and_body_are_cut_at_the_deadline(daemon):
    """A byte every 0.3 s keeps libmicrohttpd's idle timeout (30 s) from firing; the request
    deadline (api.request_timeout = 3 s here) closes the connection anyway."""
    d = daemon
    before = metric(d, "rocefab_http_connections_timed_out_total")
    for head, trickle in (
            (b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n", b"X-A: b\r\n"),
            (b"PUT /api/v1/probes/config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
             b"\r\nContent-Length: 1000\r\n\r\n", b" ")):
        s = socket.create_connection((d.host, d.port), source_address=(GOOD_ADDR, 0))
        s.settimeout(0.3)
        t0 = time.monotonic()
        s.sendall(head)
        closed = None
        while time.monotonic() - t0 < 20:
            try:
                s.sendall(trickle)
                if s.recv(4096) == b"":
                    closed = time.monotonic() - t0
                    break
            except socket.timeout:
                continue
            except OSError:
                closed = time.monotonic() - t0
                break
        s.close()
        assert closed is not None, "a trickling client kept its connection for 20 s"
        assert 2.5 <= closed <= 6, closed
    assert metric(d, "rocefab_http_connections_timed_out_total") >= before + 2


def test_requests_without_a_valid_token_are_rate_limited(world):
    d = world.daemon(extra_conf="[api]\nrate_limit = 5\nrate_burst = 10\n")
    d.token("viewer", "viewer")
    d.start()
    wait_for(lambda: requests.get(d.url + "/api/v1/hosts").status_code == 401, 10,
             what="the bucket to refill after start-up")
    codes = []
    for _ in range(40):
        r = requests.get(d.url + "/api/v1/hosts", headers={"Authorization": "Bearer rfb_" + "x" * 43})
        codes.append(r.status_code)
    assert 401 in codes and 429 in codes, codes
    # malformed heads count as well (they carry no valid token by construction)
    wait_for(lambda: requests.get(d.url + "/api/v1/hosts").status_code == 401, 10,
             what="the bucket to refill")
    codes = [raw(d, b"GET /api/v1/health HTTP/1.1\r\nHost:  x\r\n\r\n", src=GOOD_ADDR).status_code
             for _ in range(30)]
    assert 400 in codes and 429 in codes, codes
    r = requests.get(d.url + "/api/v1/hosts")
    p = problem(r, 429, "RATE_LIMITED")
    assert r.headers["Retry-After"] == "1"
    assert "api.rate_limit" in p["detail"]
    # a valid token is not limited
    for _ in range(20):
        assert d.client("viewer").get("/api/v1/hosts").status_code == 200
    assert metric(d, "rocefab_http_rate_limited_total") >= 1
    # and the bucket refills
    wait_for(lambda: requests.get(d.url + "/api/v1/hosts").status_code == 401, 10,
             what="the bucket to refill")


def test_every_refusal_of_a_request_head_is_problem_json(daemon):
    d = daemon
    tok = d.tokens["ops"]
    auth = f"Authorization: Bearer {tok}\r\n".encode()
    # too long a target, too large a head: problem+json, not the library's HTML
    p = problem(raw(d, b"GET /api/v1/hosts?" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
                414, "URI_TOO_LONG")
    assert "8192" in p["detail"]
    problem(raw(d, b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 +
                b"\r\n\r\n"), 431, "HEADERS_TOO_LARGE")
    # a token followed by a NUL byte and junk, or with a control byte, is not a token
    problem(raw(d, b"GET /api/v1/hosts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                tok.encode() + b"\x00junk\r\n\r\n"), 400, "BAD_HEADER")
    problem(raw(d, b"GET /api/v1/hosts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                tok.encode() + b"\x01\r\n\r\n"), 400, "BAD_HEADER")
    assert raw(d, b"GET /api/v1/hosts HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n").status_code == 200
    # one credential: two (an operator's and a viewer's, either way round) are refused, not the
    # first taken (which one a server or a proxy before it reads is theirs to choose)
    viewer = f"Authorization: Bearer {d.tokens['viewer']}\r\n".encode()
    for two in (auth + viewer, viewer + auth, auth + auth):
        p = problem(raw(d, b"PUT /api/v1/probes/config HTTP/1.1\r\nHost: x\r\n" + two +
                        b"Content-Type: application/json\r\nContent-Length: 17\r\n\r\n", b'{"enabled": true}'),
                    400, "BAD_HEADER")
        assert "2 Authorization headers" in p["detail"], p
    # ... nor with spare bytes made elsewhere in the head (compact headers, bare LF ends)
    compact = b"".join(b"X%d:a\r\n" % i for i in range(8))
    problem(raw(d, b"GET /api/v1/hosts HTTP/1.1\r\nHost:x\r\n" + compact +
                b"Authorization:Bearer " + tok.encode() + b"\x00junk\r\n\r\n"), 400, "BAD_HEADER")
    problem(raw(d, b"GET /api/v1/hosts HTTP/1.1\nHost: x\n" + auth.replace(b"\r", b"") + b"\n"),
            400, "BAD_HEADER")
    # control characters in the request line, raw or escaped, never reach a handler or a log
    for target in (b"/api/v1/changes/1%00x", b"/api/v1/hosts/%0A%0Dforged", b"/api/v1/hosts?a=%7f"):
        problem(raw(d, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"),
                400, "BAD_REQUEST_TARGET")
    lines = d.proc.output().splitlines()
    assert not [l for l in lines if l.startswith("forged")]  # logged as /api/v1/hosts/??forged
    assert [l for l in lines if "/api/v1/hosts/??forged" in l]
    # one way to frame a body: ambiguous ones are refused at once
    for framing in (b"Content-Length: 2\r\nContent-Length: 70\r\n",
                    b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
                    b"Transfer-Encoding: gzip\r\n", b"Transfer-Encoding: gzip, chunked\r\n"):
        problem(raw(d, b"PUT /api/v1/probes/config HTTP/1.1\r\nHost: x\r\n" + auth +
                    b"Content-Type: application/json\r\n" + framing + b"\r\n", b"{}"),
                400, "BAD_FRAMING")
    # a body announced too large is refused before it is sent
    p = problem(raw(d, b"PUT /api/v1/probes/config HTTP/1.1\r\nHost: x\r\n" + auth +
                    b"Content-Type: application/json\r\nContent-Length: 104857600\r\n"
                    b"Expect: 100-continue\r\n\r\n"), 413, "BODY_TOO_LARGE")
    assert "104857600" in p["detail"]
    # from a client that sends it anyway, the body is read, thrown away and answered 413
    # (closing on it unread would reset the connection before the client reads the answer)
    problem(raw(d, b"PUT /api/v1/probes/config HTTP/1.1\r\nHost: x\r\n" + auth +
                b"Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n",
                b"{" * 104857600), 413, "BODY_TOO_LARGE")
    # and a chunked body that grows too large gets 413 as well (not a reset)
    def chunks():
        for _ in range(160):  # 10 MiB, over api.max_body (4 MiB)
            yield b" " * 65536
    r = requests.put(d.url + "/api/v1/probes/config", data=chunks(), timeout=30,
                     headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/json"})
    problem(r, 413, "BODY_TOO_LARGE")
    # a GET's body is dropped unread by any handler, within the same limit (it went unbounded)
    r = requests.get(d.url + "/api/v1/health", data=chunks(), timeout=30)
    problem(r, 413, "BODY_TOO_LARGE")
    # JSON endpoints take JSON only
    for method, path in (("PUT", "/api/v1/probes/config"), ("POST", "/api/v1/changes"),
                         ("PUT", "/api/v1/hosts/h1/dcqcn")):
        for ctype in (None, "text/plain", "application/jsonx"):
            h = {"Authorization": f"Bearer {tok}"}
            if ctype:
                h["Content-Type"] = ctype
            r = d.client().request(method, path, data="{}", headers=h)
            problem(r, 415, "UNSUPPORTED_MEDIA_TYPE")
    # a bad token is no reason to refuse what needs none
    for path in ("/api/v1/health", "/api/v1/version"):
        r = d.client().get(path, headers={"Authorization": "Bearer nonsense"})
        assert r.status_code == 200, r.text


def test_reports_whose_client_left_do_not_hold_up_shutdown(world):
    """A report's client that resets its connection while the writer stores the report: the
    connection closes without the handler being called again.  It used to stay counted as
    waiting, and every SIGTERM then waited 60 s for it (and its commands leaked)."""
    d = world.daemon()
    tok, _ = d.token("agent", "agent", agent="stor-b1")
    d.start()
    with open(os.path.join(os.path.dirname(__file__), "..", "data", "reports", "good",
                           "stor-b1.json")) as f:
        doc = json.load(f)
    for seq in range(1, 31):
        doc["seq"] = seq
        body = json.dumps(doc).encode()
        s = socket.create_connection((d.host, d.port), source_address=(GOOD_ADDR, 0))
        s.sendall(b"POST /api/v1/agents/stor-b1/report HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: Bearer " + tok.encode() + b"\r\nContent-Type: application/json"
                  b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset, before the answer
    wait_for(lambda: requests.get(d.url + "/api/v1/health").json()["store"]["queue_depth"] == 0,
             10, what="the reports to be stored")
    t0 = time.monotonic()
    assert d.stop() == 0
    took = time.monotonic() - t0
    assert took < 10, f"SIGTERM took {took:.1f} s"
    assert "still unanswered" not in d.proc.output()


def test_health_shows_the_database_only_to_readers(daemon):
    d = daemon
    assert "path" not in d.client().get("/api/v1/health").json()["store"]
    assert d.client("viewer").get("/api/v1/health").json()["store"]["path"] == d.db


def ports_daemon(world, conf):
    """rocefabd (extra conf), with tokens viewer and agents, holding 3 switches of 7,000 ports
    each: GET /api/v1/ports is an answer of 5-8 MiB, more than a socket's buffers take."""
    d = world.daemon(extra_conf=conf)
    d.token("viewer", "viewer")
    d.token("agents", "agent", agent="sw*")
    d.start()
    ports = [{"port": f"Ethernet{i}", "state": "up", "speed_mbps": 100000} for i in range(1000)]
    t = time.time_ns()
    for sw in ("sw1", "sw2", "sw3"):  # (7,000 ports each: an agent keeps at most 8,192)
        assert d.client("agents").post(f"/api/v1/agents/{sw}/report", json={
            "schema": 1, "agent": {"id": sw, "role": "switch", "boot_id": "b1", "version": "t", "backend": "test"},
            "seq": 1, "time_ns": t, "interval_ms": 60000,
            "inventory": {"devices": [{"name": f"asic{k}", "kind": "switch", "driver": "test", "ports": ports}
                                      for k in range(7)]},
            "samples": []}).status_code == 200
    size = len(d.client("viewer").get("/api/v1/ports").content)
    assert 8 << 20 > size > 5 << 20, size
    assert metric(d, "rocefab_http_unread_bytes") == 0
    return d, size


def hold_answers(d, src, most):
    """Asks for the ports from src on new connections, taking a few KB of each answer and
    reading no more, until one is refused or most are held: (the sockets, the refused answer's
    first bytes or None)."""
    head = (f"GET /api/v1/ports HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {d.tokens['viewer']}\r\n"
            "Accept-Encoding: identity\r\n\r\n").encode()
    held = []
    for _ in range(most):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # take a few KB, then read no more
        s.bind((src, 0))
        s.settimeout(10)
        s.connect((d.host, d.port))
        s.sendall(head)
        held.append(s)
        first = s.recv(64)
        if not first.startswith(b"HTTP/1.1 200"):
            return held, first + s.recv(4096)
    return held, None


def test_answers_nobody_reads_are_bounded(world):
    """Answers built and not yet taken by their clients count against api.max_unread: a client
    that asks for large answers and never reads them (an attacker's viewer token asked for 20
    answers of 25 MB and rocefabd's memory rose to 1 GB) gets 503 BUSY once they fill it, and
    small answers (health, problems) still pass.  Once the clients go, the bytes come back."""
    d, size = ports_daemon(world, "[api]\nmax_unread = 8MiB\n")
    c = d.client("viewer")
    held = []
    try:
        held, refused = hold_answers(d, GOOD_ADDR, 2 * (8 << 20) // (size - (4 << 20)) + 2)
        assert refused is not None and refused.startswith(b"HTTP/1.1 503"), (refused, size, metric(d, "rocefab_http_unread_bytes"))
        r = c.get("/api/v1/ports")
        problem(r, 503, "BUSY")
        assert "api.max_unread " in r.json()["detail"], r.json()
        assert c.get("/api/v1/health").status_code == 200  # small answers pass
        assert 8 << 20 >= metric(d, "rocefab_http_unread_bytes") > (8 << 20) - size
        assert metric(d, "rocefab_http_unread_refused_total") >= 2
    finally:
        for s in held:
            s.close()
    wait_for(lambda: metric(d, "rocefab_http_unread_bytes") == 0, 15, 0.1, what="the unread answers let go")
    assert c.get("/api/v1/ports").status_code == 200


def test_one_client_cannot_take_the_others_room_for_answers(world):
    """api.max_unread_per_client: one address that asks and never reads is refused at its own
    share, and another address still gets its large answers (before, one viewer could fill
    api.max_unread for every client but /metrics)."""
    d, size = ports_daemon(world, "[api]\nmax_unread = 64MiB\nmax_unread_per_client = 12MiB\n")
    held = []
    try:
        held, refused = hold_answers(d, FLOOD_ADDR, 2 * (12 << 20) // (size - (4 << 20)) + 2)
        assert refused is not None and refused.startswith(b"HTTP/1.1 503"), refused
        assert b"api.max_unread_per_client" in refused and FLOOD_ADDR.encode() in refused, refused
        assert 12 << 20 >= metric(d, "rocefab_http_unread_bytes") > (12 << 20) - size
        # another address: its answers fit (the total is far from api.max_unread)
        other, refused = hold_answers(d, GOOD_ADDR, 1)
        held += other
        assert refused is None, refused
        assert d.client("viewer").get("/api/v1/ports").status_code == 200
    finally:
        for s in held:
            s.close()
    wait_for(lambda: metric(d, "rocefab_http_unread_bytes") == 0, 15, 0.1, what="the unread answers let go")
    # and the flooding address, once its answers are gone, gets its own again
    held, refused = hold_answers(d, FLOOD_ADDR, 1)
    for s in held:
        s.close()
    assert refused is None, refused


def test_an_agent_that_keeps_reporting_new_ports_is_held_to_a_bound(world):
    """Ports that went stay stored with their data, so an agent reporting new port names report
    after report (an attacker's review: one agent token added 123,000 rows a report, and the
    scheduler's passes over the table took 22 % of a core) is held to 8,192 stored ports: the
    new ones beyond are left out, with their samples, and the agent's errors say so; what is
    stored, and the ports it has, go on.  Devices likewise, at 1,024."""
    import sqlite3
    d = world.daemon()
    d.token("agents", "agent", agent="hx2")
    d.token("viewer", "viewer")
    d.start()
    c = d.client("agents")

    def report(seq, devices):
        t = time.time_ns()
        return {"schema": 1, "agent": {"id": "hx2", "role": "switch", "boot_id": "b1", "version": "t",
                                       "backend": "test"},
                "seq": seq, "time_ns": t, "interval_ms": 60000,
                "inventory": {"devices": [{"name": name, "kind": "switch", "driver": "test", "ports": [
                    {"port": f"Ethernet{i}", "state": "up", "speed_mbps": 100000} for i in range(1024)]}
                    for name in devices]},
                "samples": [{"device": name, "port": "Ethernet0", "source": "sim", "t_ns": t,
                             "values": {"tx_bytes": seq}} for name in devices]}

    for seq in range(1, 5):  # 8 devices of 1,024 ports, two a report: the bound
        assert c.post("/api/v1/agents/hx2/report", json=report(seq, [f"a{seq}", f"b{seq}"])).status_code == 200
    v = d.client("viewer")
    assert v.json("/api/v1/agents/hx2")["errors"] == []
    r = c.post("/api/v1/agents/hx2/report", json=report(5, ["a4", "c5"]))  # one known, one new
    assert r.status_code == 200, r.text
    errors = v.json("/api/v1/agents/hx2")["errors"]
    assert [e["code"] for e in errors] == ["PORTS_NOT_STORED"], errors
    assert errors[0]["message"].startswith("1024 ports and 0 devices not stored"), errors
    db = sqlite3.connect(d.db, timeout=30)
    assert db.execute("SELECT count(*) FROM ports WHERE agent_id = 'hx2'").fetchone()[0] == 8192
    assert db.execute("SELECT count(*) FROM ports WHERE agent_id = 'hx2' AND key LIKE 'hx2:c5:%'").fetchone()[0] == 0
    db.close()
    # the known device's port goes on being stored
    got = v.json("/api/v1/ports/hx2:a4:Ethernet0/counters", params={"names": "tx_bytes", "from": "-10m"})
    assert len(got["series"][0]["points"]) == 2, got  # seq 4 and 5
    # the same inventory again (no inventory written when it is unchanged): the same
    r = c.post("/api/v1/agents/hx2/report", json=report(6, ["a4", "c5"]))
    assert r.status_code == 200, r.text
    assert [e["code"] for e in v.json("/api/v1/agents/hx2")["errors"]] == ["PORTS_NOT_STORED"]
    assert c.post("/api/v1/agents/hx2/report", json=report(7, ["a4", "b4"])).status_code == 200
    assert v.json("/api/v1/agents/hx2")["errors"] == []
    # devices too (and absent ones): 1,024 at most
    doc = report(8, [])
    for seq in range(8, 13):
        doc["seq"] = seq
        doc["inventory"]["devices"] = [{"name": f"d{seq}-{k}", "kind": "rdma", "ports": []} for k in range(200)]
        doc["inventory"]["absent"] = [f"x{seq}-{k}" for k in range(56)]
        assert c.post("/api/v1/agents/hx2/report", json=doc).status_code == 200
    errors = v.json("/api/v1/agents/hx2")["errors"]
    assert [e["code"] for e in errors] == ["PORTS_NOT_STORED"], errors
    assert errors[0]["message"].startswith("0 ports and 256 devices not stored"), errors
    db = sqlite3.connect(d.db, timeout=30)
    assert db.execute("SELECT count(*) FROM devices WHERE agent_id = 'hx2'").fetchone()[0] == 1024
    db.close()
    # four reports left some out: said in the log once (a line per agent a minute), not at each
    assert len([ln for ln in d.proc.output().splitlines() if "not stored" in ln]) == 1
