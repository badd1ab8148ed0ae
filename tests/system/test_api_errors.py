"""Bad input gets a clear 4xx problem+json naming the problem, the daemon keeps serving, and
nothing stored changes.  Every response is also validated against schemas/openapi.yaml."""
import json
import os
import socket
import subprocess
import time

import pytest
import requests

from conftest import Client, binary, wait_for

GOOD = os.path.join(os.path.dirname(__file__), "..", "data", "reports", "good", "stor-b1.json")


@pytest.fixture
def daemon(world):
    d = world.daemon()
    # bound to someone-else too: its report that names stor-b1 is refused for the mismatch
    d.token("agent", "agent", agent=["stor-b1", "someone-else", "h1"])
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    d.token("admin", "admin")
    d.start()
    # one good report so that there is something that must not change
    with open(GOOD) as f:
        body = f.read()
    r = d.client("agent").post("/api/v1/agents/stor-b1/report", data=body,
                              headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["accepted"]
    return d


def problem(r, status, code):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["Content-Type"].startswith("application/problem+json")
    p = r.json()
    assert p["status"] == status and p["code"] == code, p
    assert p["detail"]
    return p


def snapshot(d):
    c = d.client("viewer")
    counters = c.json("/api/v1/ports/stor-b1:rxe0:1/counters?from=1000000000&to=2000000000")
    counters.pop("kept_from")  # (what the raw samples are kept for, back from now: it moves)
    return c.json("/api/v1/agents"), c.json("/api/v1/ports"), counters


def post(d, token, body, agent="stor-b1", ctype="application/json", **kw):
    return d.client(token).post(f"/api/v1/agents/{agent}/report", data=body,
                                headers={"Content-Type": ctype} if ctype else {}, **kw)


def test_bad_reports(daemon):
    d = daemon
    before = snapshot(d)
    with open(GOOD) as f:
        good = json.load(f)

    p = problem(post(d, "agent", '{"schema": 1, "agent": '), 400, "BAD_JSON")
    assert "line 1" in p["detail"]
    problem(post(d, "agent", ""), 400, "BAD_JSON")
    problem(post(d, "agent", "\x00\x01\x02garbage"), 400, "BAD_JSON")

    bad = dict(good, seq="7")
    p = problem(post(d, "agent", json.dumps(bad)), 400, "SCHEMA_VIOLATION")
    assert p["pointer"] == "/seq" and "integer" in p["detail"]

    bad = json.loads(json.dumps(good))
    bad["samples"][0]["values"]["sent_pkts"] = -1
    p = problem(post(d, "agent", json.dumps(bad)), 400, "SCHEMA_VIOLATION")
    assert p["pointer"] == "/samples/0/values/sent_pkts"

    bad = dict(good, schema=7)
    problem(post(d, "agent", json.dumps(bad)), 400, "UNSUPPORTED_SCHEMA")

    problem(post(d, "agent", json.dumps(good), agent="someone-else"), 400, "AGENT_ID_MISMATCH")

    # a clock ten minutes ahead, the report's or a sample's: refused whole, and logged once
    ahead = json.loads(json.dumps(good))
    ahead["seq"] += 100
    ahead["time_ns"] = time.time_ns() + 600 * 10**9
    p = problem(post(d, "agent", json.dumps(ahead)), 400, "CLOCK_AHEAD")
    assert "s ahead of rocefabd's clock" in p["detail"] and "NTP" in p["detail"], p
    ahead["time_ns"] = good["time_ns"]
    ahead["samples"][-1]["t_ns"] = time.time_ns() + 600 * 10**9
    problem(post(d, "agent", json.dumps(ahead)), 400, "CLOCK_AHEAD")
    assert d.proc.output().count("reports times") == 1
    problem(post(d, "agent", json.dumps(good), ctype="text/plain"), 415, "UNSUPPORTED_MEDIA_TYPE")
    problem(post(d, "agent", json.dumps(good), ctype=None), 415, "UNSUPPORTED_MEDIA_TYPE")

    # 10 MB, announced by Content-Length: refused before the body is read
    big = "x" * (10 * 1024 * 1024)
    t0 = time.monotonic()
    r = post(d, "agent", big)
    problem(r, 413, "BODY_TOO_LARGE")
    # 10 MB sent chunked (no Content-Length): refused once the limit is crossed
    def chunks():
        for _ in range(160):
            yield b"{" * 65536
    try:
        r = post(d, "agent", chunks())
        problem(r, 413, "BODY_TOO_LARGE")
    except requests.ConnectionError:
        pass  # the server may close while the client is still sending; it must keep serving
    assert time.monotonic() - t0 < 10

    assert d.healthy()
    assert snapshot(d) == before


def test_auth(daemon):
    d = daemon
    before = snapshot(d)
    with open(GOOD) as f:
        body = f.read()
    anon = Client(d.url)

    p = problem(anon.get("/api/v1/hosts"), 401, "MISSING_TOKEN")
    r = anon.get("/api/v1/hosts")
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    problem(Client(d.url, "rfb_" + "A" * 43).get("/api/v1/hosts"), 401, "INVALID_TOKEN")
    problem(Client(d.url, "not-a-token").get("/api/v1/hosts"), 401, "INVALID_TOKEN")
    r = anon.get("/api/v1/hosts", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    problem(r, 401, "BAD_AUTH_SCHEME")
    problem(post(d, "viewer", body), 403, "FORBIDDEN")
    problem(post(d, "ops", body), 403, "FORBIDDEN")
    problem(d.client("agent").get("/api/v1/hosts"), 403, "FORBIDDEN")
    p = problem(post(d, "agent", body, agent="gpu-a1"), 403, "AGENT_NOT_BOUND")
    assert (p["token"], p["agent"]) == ("agent", "gpu-a1")
    problem(anon.post("/api/v1/agents/stor-b1/report", data=body,
                      headers={"Content-Type": "application/json"}), 401, "MISSING_TOKEN")
    # health and version need no token
    assert anon.get("/api/v1/health").status_code == 200
    assert anon.get("/api/v1/version").status_code == 200
    # admin may do everything
    assert d.client("admin").get("/api/v1/hosts").status_code == 200
    assert post(d, "admin", body).json()["duplicate"] is True

    # a revoked token stops working (within the token cache lifetime)
    subprocess.run([binary("rocefabd"), "--config", d.conf, "token", "revoke", "viewer"],
                   check=True, capture_output=True)
    wait_for(lambda: d.client("viewer").get("/api/v1/hosts").status_code == 401, 3,
             what="revocation")
    assert d.healthy()
    after = d.client("admin").json("/api/v1/agents")
    assert after["items"][0]["reports"] == before[0]["items"][0]["reports"]


def test_routing_and_parameters(daemon):
    d = daemon
    c = d.client("viewer")
    problem(c.get("/api/v1/nothing"), 404, "NOT_FOUND")
    problem(c.get("/"), 404, "NO_DASHBOARD")  # no api.web_root here: said so, the API works
    r = c.request("DELETE", "/api/v1/hosts")
    problem(r, 405, "METHOD_NOT_ALLOWED")
    assert r.headers["Allow"] == "GET"
    problem(c.get("/api/v1/hosts/nobody"), 404, "UNKNOWN_HOST")
    problem(c.get("/api/v1/agents/nobody"), 404, "UNKNOWN_AGENT")
    problem(c.get("/api/v1/ports/stor-b1:rxe0:9"), 404, "UNKNOWN_PORT")
    problem(c.get("/api/v1/ports/stor-b1:rxe0:9/counters"), 404, "UNKNOWN_PORT")
    p = problem(c.get("/api/v1/ports/stor-b1:rxe0:1/counters?names=bogus_counter"), 400,
                "UNKNOWN_COUNTER")
    assert "bogus_counter" in p["detail"]
    problem(c.get("/api/v1/ports/stor-b1:rxe0:1/counters?from=yesterday"), 400, "BAD_PARAMETER")
    problem(c.get("/api/v1/ports/stor-b1:rxe0:1/counters?step=fast"), 400, "BAD_PARAMETER")
    problem(c.get("/api/v1/ports/stor-b1:rxe0:1/counters?from=now&to=-1h"), 400, "BAD_TIME_RANGE")
    problem(c.get("/api/v1/ports/stor-b1:rxe0:1/counters?from=-30d&step=1ms"), 400,
            "TOO_MANY_POINTS")
    problem(c.get("/api/v1/ports?state=sideways"), 400, "BAD_PARAMETER")
    assert problem(c.get("/api/v1/alerts?state=acked"), 400, "BAD_PARAMETER")["pointer"] == "state"
    problem(c.get("/api/v1/hosts/" + "x" * 300), 414, "URI_TOO_LONG")
    assert c.json("/api/v1/ports?host=nobody")["count"] == 0
    assert d.healthy()


def test_unknown_and_repeated_query_parameters_are_refused(daemon):
    """A misspelt filter was ignored: /api/v1/changes?limt=5 answered 100 changes and
    ?stat=failed every state, as if the caller had asked for them.  A parameter a route does not
    take is 400 UNKNOWN_PARAMETER naming it and what the route takes; one given twice (the first
    won) is 400 BAD_PARAMETER.  The routes' lists are the OpenAPI document's (test_schemas)."""
    d = daemon
    c = d.client("viewer")
    p = problem(c.get("/api/v1/changes?limt=5"), 400, "UNKNOWN_PARAMETER")
    assert p["pointer"] == "limt"
    assert "'limt'" in p["detail"] and "agent, kind, state, batch, limit" in p["detail"], p
    p = problem(c.get("/api/v1/hosts?host=stor-b1"), 400, "UNKNOWN_PARAMETER")
    assert p["detail"].endswith("GET /api/v1/hosts takes none"), p
    problem(c.get("/api/v1/cc/history?limit=5"), 400, "UNKNOWN_PARAMETER")
    problem(c.get("/api/v1/ports?hosts=stor-b1&state=up"), 400, "UNKNOWN_PARAMETER")
    p = problem(c.get("/api/v1/ports?state=up&state=down"), 400, "BAD_PARAMETER")
    assert p["pointer"] == "state" and "twice" in p["detail"], p
    for q in ("=up", "state=up&&host=x", "&"):
        assert "without a name" in problem(c.get(f"/api/v1/ports?{q}"), 400, "UNKNOWN_PARAMETER")["detail"]
    # a key with a comma matched across the list's names ("state,batch"): refused, named
    p = problem(c.get("/api/v1/changes?state,batch=failed"), 400, "UNKNOWN_PARAMETER")
    assert p["pointer"] == "state,batch", p
    # an operator's call too, before its body is looked at: nothing is changed
    before = c.json("/api/v1/changes")["count"]
    ops = d.client("admin")
    problem(ops.post("/api/v1/cc/rollback?force=true"), 400, "UNKNOWN_PARAMETER")
    problem(ops.put("/api/v1/hosts/stor-b1/dcqcn?dry_run=true", json={"rp": {"rate_reduce_monitor_period": 4}}),
            400, "UNKNOWN_PARAMETER")
    assert c.json("/api/v1/changes")["count"] == before
    # what each route takes still works, in any order
    assert c.get("/api/v1/ports?state=up&host=stor-b1").status_code == 200
    assert c.get("/api/v1/changes?limit=5&state=failed").status_code == 200
    assert c.get("/api/v1/cc/proposals?all=true").status_code == 200
    assert d.healthy()


def test_bad_change_requests(daemon):
    """Malformed change requests from an operator are refused, naming the problem; rocefabd keeps
    serving and stores no change."""
    d = daemon
    ops = d.client("ops")
    # device or port of a DCQCN change that are not strings (this once crashed rocefabd)
    p = problem(ops.put("/api/v1/hosts/stor-b1/dcqcn", json={"device": 1, "rp_enable": 8}), 400,
                "SCHEMA_VIOLATION")
    assert p["pointer"] == "/device"
    problem(ops.put("/api/v1/hosts/stor-b1/dcqcn", json={"port": [], "rp_enable": 8}), 400,
            "SCHEMA_VIOLATION")
    problem(ops.put("/api/v1/hosts/stor-b1/dcqcn", data="{", headers={"Content-Type": "application/json"}),
            400, "BAD_JSON")
    # a bulk change's queue outside 0..7 (-2 once meant every queue), an endless pattern
    for q in (-2, 8, 4294967297):
        p = problem(ops.post("/api/v1/changes", json={"kind": "ecn", "select": {"switch": "*", "queue": q},
                                                      "params": {"pmax": 0.1}}), 400, "SCHEMA_VIOLATION")
        assert p["pointer"] == "/select/queue"
    problem(ops.post("/api/v1/changes", json={"kind": "ecn", "select": {"switch": "*" * 300},
                                              "params": {"pmax": 0.1}}), 400, "SCHEMA_VIOLATION")
    problem(ops.post("/api/v1/changes", json={"kind": "dcqcn", "select": {"switch": "*"},
                                              "params": {"rp_enable": 8}}), 400, "SCHEMA_VIOLATION")
    problem(ops.post("/api/v1/changes", json={"kind": "ecn", "select": {"switch": "nobody*"},
                                              "params": {"pmax": 0.1}}), 404, "NO_TARGETS")
    assert d.client("viewer").json("/api/v1/changes")["count"] == 0
    assert d.healthy()


def test_slow_and_broken_clients(daemon):
    """Clients that stop halfway do not hurt the daemon."""
    d = daemon
    for _ in range(20):
        s = socket.create_connection((d.host, d.port))
        s.sendall(b"POST /api/v1/agents/stor-b1/report HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 5000\r\n"
                  b"Authorization: Bearer " + d.tokens["agent"].encode() + b"\r\n\r\n{\"sch")
        s.close()
    s = socket.create_connection((d.host, d.port))
    s.sendall(b"GARBAGE\r\n\r\n")
    s.close()
    assert d.healthy()
    assert d.client("viewer").json("/api/v1/agents")["count"] == 1


def test_times_and_durations_out_of_range(daemon):
    """A time beyond what an int64 of nanoseconds holds (after 2262-04-11, before 1970 for an
    operator) or a duration too long for one is refused naming the parameter, never wrapped
    (to=9999-12-31T23:59:59Z once answered 200 with "to": null)."""
    d = daemon
    c = d.client("viewer")
    counters = "/api/v1/ports/stor-b1:rxe0:1/counters"
    for arg, value in (("to", "9999-12-31T23:59:59Z"), ("from", "2262-04-12T00:00:00Z"),
                       ("to", "2262-04-11T23:47:16.854775808Z"), ("from", "1969-12-31T23:59:59Z"),
                       ("to", "99999999999"), ("from", "-99999999999999999999s"),
                       ("from", "-300000d")):
        p = problem(c.get(f"{counters}?{arg}={value}"), 400, "BAD_PARAMETER")
        assert p["pointer"] == arg, p
        assert "2262" in p["detail"], p
    p = problem(c.get(f"{counters}?from=-1h&step=99999999999999999999s"), 400, "BAD_PARAMETER")
    assert p["pointer"] == "step" and "too long" in p["detail"]
    # the whole range that is representable still answers
    r = c.get(f"{counters}?from=1970-01-01T00:00:01Z&to=2262-04-11T23:47:16Z&step=1d")
    problem(r, 400, "TOO_MANY_POINTS")
    r = c.get(f"{counters}?from=1970-01-01T00:00:01Z&to=2262-04-11T23:47:16Z&step=1000d")
    assert r.status_code == 200, r.text
    assert r.json()["to"].startswith("2262-04-11T23:47:16")
    # and the earliest: the epoch is a time, not none
    r = c.get(f"{counters}?from=0&to=1")
    assert r.status_code == 200 and r.json()["from"] == "1970-01-01T00:00:00.000000Z", r.text
    r = c.get(f"{counters}?to=1970-01-01T00:01:00Z")
    assert r.status_code == 200 and r.json()["from"] == "1970-01-01T00:00:00.000000Z", r.text
    for arg in ("from", "to"):
        p = problem(c.get(f"/api/v1/probes/results?{arg}=9999-12-31T23:59:59Z"), 400, "BAD_PARAMETER")
        assert p["pointer"] == arg
    p = problem(c.get("/api/v1/probes/matrix?window=99999999999999999999s"), 400, "BAD_PARAMETER")
    assert p["pointer"] == "window"
    assert d.healthy()


SWITCH = os.path.join(os.path.dirname(__file__), "..", "data", "reports", "good", "switch-config-results.json")


def post_switch(d):
    """leaf0 with PFC on port h3 and ECN on its queue 3."""
    d.token("leaf0", "agent")
    with open(SWITCH) as f:
        r = d.client("leaf0").post("/api/v1/agents/leaf0/report", data=f.read(),
                                   headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["accepted"], r.text


def test_integers_in_paths_and_queries_have_one_spelling(daemon):
    """Queue 03 or +3 was queue 3, change 01 was change 1: an integer in a path or a query is
    canonical decimal (no sign, no leading zero, no space), else 400 naming the parameter."""
    d = daemon
    post_switch(d)
    c = d.client("viewer")
    assert c.json("/api/v1/switches/leaf0/ports/h3/queues/3/ecn")["items"][0]["queue"] == 3
    for q in ("03", "+3", "%203", "3%20", "0x3", "3.0", "-0"):
        p = problem(c.get(f"/api/v1/switches/leaf0/ports/h3/queues/{q}/ecn"), 400, "BAD_PARAMETER")
        assert p["pointer"] == "q", p
    p = problem(d.client("ops").put("/api/v1/switches/leaf0/ports/h3/queues/+3/ecn", json={"pmax": 0.1}),
                400, "BAD_PARAMETER")
    assert p["pointer"] == "q"
    problem(c.get("/api/v1/switches/leaf0/ports/h3/queues/9/ecn"), 404, "UNKNOWN_QUEUE")
    # a host port is DEVICE:PORT with the port number as the agent reports it
    assert c.get("/api/v1/hosts/stor-b1/ports/rxe0:1/pfc").status_code in (200, 404)
    p = problem(c.get("/api/v1/hosts/stor-b1/ports/rxe0:01/pfc"), 400, "BAD_PARAMETER")
    assert p["pointer"] == "port"
    # change ids, and the integer query parameters
    p = problem(c.get("/api/v1/changes/01"), 400, "BAD_PARAMETER")
    assert p["pointer"] == "id"
    problem(c.get("/api/v1/changes/1"), 404, "UNKNOWN_CHANGE")
    problem(c.get("/api/v1/changes/0"), 404, "UNKNOWN_CHANGE")
    for path, arg in (("/api/v1/changes?limit=010", "limit"), ("/api/v1/changes?limit=+5", "limit"),
                      ("/api/v1/changes?batch=01", "batch"), ("/api/v1/changes?batch=%201", "batch"),
                      ("/api/v1/changes?limit=99999999999999999999", "limit"),
                      ("/api/v1/probes/results?limit=0100", "limit"),
                      ("/api/v1/probes/results?size=064", "size"), ("/api/v1/probes/matrix?size=+64", "size")):
        p = problem(c.get(path), 400, "BAD_PARAMETER")
        assert p["pointer"] == arg, (path, p)
    assert c.json("/api/v1/changes?limit=5&batch=1")["count"] == 0
    assert c.get("/api/v1/probes/results?limit=100&size=64").status_code == 200
    assert d.healthy()


def post_switch_queues(d, queues=range(8)):
    """leaf0 with ECN on queues 0-7 of port h3: 8 objects for a bulk ECN change."""
    with open(SWITCH) as f:
        doc = json.load(f)
    doc.pop("command_results", None)
    ecn = doc["config"]["ecn"][0]
    doc["config"]["ecn"] = [dict(ecn, queue=q) for q in queues]
    if "leaf0" not in d.tokens:
        d.token("leaf0", "agent")
    r = d.client("leaf0").post("/api/v1/agents/leaf0/report", data=json.dumps(doc),
                               headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["accepted"], r.text


def test_bulk_change_guards(daemon):
    """POST /api/v1/changes with "select": {} changed every queue of every switch port (384 in the
    demo) unguarded: an empty selection needs "all": true, and a selection over max_targets is
    refused saying how many it matched and the limit.  Nothing is stored by a refused request."""
    d = daemon
    post_switch_queues(d)
    ops, c = d.client("ops"), d.client("viewer")

    def bulk(select, **extra):
        return ops.post("/api/v1/changes", json=dict({"kind": "ecn", "select": select, "params": {"pmax": 0.1}},
                                                     **extra))

    p = problem(bulk({}), 400, "EMPTY_SELECTION")
    assert p["pointer"] == "/select" and '"all": true' in p["detail"]
    p = problem(bulk({}, all=False), 400, "EMPTY_SELECTION")
    for body, pointer in (({"all": "yes"}, "/all"), ({"all": 1}, "/all"),
                          ({"max_targets": 0}, "/max_targets"), ({"max_targets": 10001}, "/max_targets"),
                          ({"max_targets": "5"}, "/max_targets"), ({"max_targets": 5.0}, "/max_targets")):
        p = problem(bulk({}, **body), 400, "SCHEMA_VIOLATION")
        assert p["pointer"] == pointer, (body, p)
    p = problem(bulk({"switch": "leaf0"}, all=True), 400, "SCHEMA_VIOLATION")
    assert p["pointer"] == "/all"
    p = problem(bulk({"switch": "leaf[0-1"}), 400, "SCHEMA_VIOLATION")  # a typo, not the name "leaf[0-1"
    assert p["pointer"] == "/select" and "'[' without its ']'" in p["detail"], p
    p = problem(bulk({"switch": "leaf*"}, max_targets=5), 400, "TOO_MANY_TARGETS")
    assert p["targets"] == 8 and p["max_targets"] == 5 and p["pointer"] == "/select", p
    assert "8" in p["detail"] and "5" in p["detail"]
    p = problem(bulk({}, all=True, max_targets=7), 400, "TOO_MANY_TARGETS")
    assert p["targets"] == 8 and p["max_targets"] == 7
    assert c.json("/api/v1/changes")["count"] == 0
    # said on purpose, within the limit: accepted
    r = bulk({}, all=True, reason="every queue, on purpose")
    assert r.status_code == 202 and r.json()["count"] == 8, r.text
    r = bulk({"switch": "leaf0", "queue": 3}, max_targets=1)
    assert r.status_code == 202 and r.json()["count"] == 1, r.text
    assert d.healthy()


def test_bulk_change_limit_is_a_setting(world):
    """changes.max_targets is the limit unless the request says max_targets (up or down)."""
    d = world.daemon(name="guarded", extra_conf="[changes]\nmax_targets = 4\n")
    d.token("ops", "operator")
    d.start()
    post_switch_queues(d)
    ops = d.client("ops")
    body = {"kind": "ecn", "select": {"switch": "leaf*", "port": "h*"}, "params": {"pmax": 0.1}}
    p = problem(ops.post("/api/v1/changes", json=body), 400, "TOO_MANY_TARGETS")
    assert p["targets"] == 8 and p["max_targets"] == 4, p
    r = ops.post("/api/v1/changes", json=dict(body, max_targets=8))
    assert r.status_code == 202 and r.json()["count"] == 8, r.text
    out = subprocess.run([binary("rocefabd"), "--config", d.conf, "--dump-config"], capture_output=True, text=True)
    assert "max_targets = 4" in out.stdout, out.stdout + out.stderr


def test_counter_value_over_its_width(daemon):
    """5,000,000,000 for a counter whose source is 32 bits wide (a 5e9/s rate spike) is refused
    like any value out of its range: the whole report, naming the value."""
    d = daemon
    before = snapshot(d)
    bad = os.path.join(os.path.dirname(__file__), "..", "data", "reports", "bad", "counter-over-width.json")
    with open(bad) as f:
        doc = json.load(f)
    p = problem(post(d, "agent", json.dumps(doc), agent="h1"), 400, "SCHEMA_VIOLATION")
    assert p["pointer"] == "/samples/0/values/out_of_sequence" and "32 bits" in p["detail"], p
    doc["samples"][0]["values"]["out_of_sequence"] = 2**32 - 1
    r = post(d, "agent", json.dumps(doc), agent="h1")
    assert r.status_code == 200 and r.json()["accepted"], r.text
    assert snapshot(d)[1] != before[1]  # h1's port is there now
    assert d.healthy()


def test_times_and_durations_have_one_spelling(daemon):
    """strtod read "0x10" as 16 and "01" as 1: a time, a window or a step is plain decimal (or
    RFC 3339, now, -DURATION) and anything else is 400 naming the parameter (found by review)."""
    c = daemon.client("viewer")
    for q in ("from=0x10", "to=00", "step=01", "step=1e3s", "from=-0x10s", "step=0s"):
        p = problem(c.get(f"/api/v1/ports/stor-b1:rxe0:1/counters?{q}"), 400, "BAD_PARAMETER")
        assert q.split("=")[0] in p["detail"] + p.get("pointer", ""), p
    problem(c.get("/api/v1/probes/matrix?window=0x10"), 400, "BAD_PARAMETER")
    assert c.get("/api/v1/ports/stor-b1:rxe0:1/counters?step=10s&from=-1h").status_code == 200


def test_ports_and_links_are_listed_in_natural_order(world):
    """A switch's ports, the ports list and the links come in natural order: Ethernet8 before
    Ethernet10, h9 before h10 (a trial: a switch's page listed h10..h15, h8, h9, spine0)."""
    from conftest import switch_report
    d = world.daemon().start()
    d.token("agents", "agent", agent="sw1")
    d.token("viewer", "viewer")
    doc = switch_report("sw1", 1, [])
    names = ["Ethernet10", "Ethernet9", "Ethernet100", "Ethernet8", "Ethernet1"]
    doc["inventory"]["devices"][0]["ports"] = [
        {"port": n, "state": "up", "speed_mbps": 100000, "neighbor": {"system": f"h{n[8:]}", "port": "nic0"}}
        for n in names]
    doc["config"] = {}
    r = d.client("agents").post("/api/v1/agents/sw1/report", json=doc)
    assert r.status_code == 200, r.text
    v = d.client("viewer")
    want = ["Ethernet1", "Ethernet8", "Ethernet9", "Ethernet10", "Ethernet100"]
    assert [p["port"] for p in v.json("/api/v1/switches/sw1")["port_list"]] == want
    assert [p["port"] for p in v.json("/api/v1/ports")["items"]] == want
    assert [l["a"]["port"] for l in v.json("/api/v1/links")["items"]] == want
