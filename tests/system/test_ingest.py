"""Agents on recorded sysfs trees report to rocefabd; what REST shows matches the trees.

The tests write counter values into the trees themselves (no replayer), so every expected
delta and rate is exact.
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import binary, copy_tree, wait_for, write_counter

TREES = {  # agent id -> (tree, port id, counter file relative to the tree, counter, scale)
    "gpu-a1": ("gpu-a1", "gpu-a1:mlx5_0:1",
               "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "roce_tx_bytes", 4),
    "gpu-a2": ("gpu-a2", "gpu-a2:mlx5_0:1",
               "sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "np_cnp_sent", 1),
    "stor-b1": ("stor-b1", "stor-b1:rxe0:1",
                "sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts", "roce_tx_packets", 1),
}


def set_ethtool(tree, ifname, name, value):
    path = os.path.join(tree, "ethtool", ifname)
    with open(path) as f:
        text = f.read()
    text, n = re.subn(rf"(\s{re.escape(name)}\s*:) \d+", rf"\1 {value}", text)
    assert n == 1
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def series(client, port, name, frm="-10m"):
    doc = client.json(f"/api/v1/ports/{port}/counters?names={name}&from={frm}")
    return doc["series"]


def points(client, port, name, prio=None):
    for s in series(client, port, name):
        if s["priority"] == prio:
            return s["points"]
    return []


def latest_raw(client, port, name, prio=None):
    pts = points(client, port, name, prio)
    return pts[-1]["raw"] if pts else None


def start_fleet(world, interval="0.5s", agents=TREES):
    d = world.daemon()
    d.token("agents", "agent", agent=sorted(agents))
    d.token("ops", "viewer")
    d.start()
    trees = {}
    for aid, (tree, *_rest) in agents.items():
        trees[aid] = copy_tree(tree, os.path.join(world.tmp, f"tree-{aid}"))
        world.agent(aid, trees[aid], d.url, os.path.join(world.tmp, "agents.token"),
                    interval=interval).start()
    return d, trees


def check_step(client, port, name, path, v0, v1, scale, prio=None):
    """Writes v0 then v1 into a counter file and checks the delta and rate REST computes."""
    if callable(path):
        path(v0)
    else:
        write_counter(path, v0)
    wait_for(lambda: latest_raw(client, port, name, prio) == v0, 10, what=f"{name} raw {v0}")
    if callable(path):
        path(v1)
    else:
        write_counter(path, v1)
    wait_for(lambda: latest_raw(client, port, name, prio) == v1, 10, what=f"{name} raw {v1}")
    pts = points(client, port, name, prio)
    i = next(k for k, p in enumerate(pts) if p["raw"] == v1)
    prev, cur = pts[i - 1], pts[i]
    assert prev["raw"] == v0
    assert cur["delta"] == (v1 - v0) * scale, cur
    dt = cur["t"] - prev["t"]
    assert dt > 0
    assert cur["rate"] == pytest.approx(cur["delta"] / dt, rel=1e-5)
    return cur


def test_three_agents_counters_and_rates(world):
    d, trees = start_fleet(world)
    c = d.client("ops")
    hosts = wait_for(lambda: (lambda h: h if h["count"] == 3 else None)(c.json("/api/v1/hosts")),
                     10, what="3 hosts")
    assert {h["id"] for h in hosts["items"]} == set(TREES)
    assert all(h["status"] == "ok" and h["ports_up"] == h["ports"] for h in hosts["items"])

    for aid, (tree, port, rel, name, scale) in TREES.items():
        check_step(c, port, name, os.path.join(trees[aid], rel), 1_000_000, 1_250_000, scale)

    # per-priority PFC from ethtool, on a tree with two lossless priorities
    tree = trees["gpu-a2"]
    check_step(c, "gpu-a2:mlx5_0:1", "pfc_rx_pause_frames",
               lambda v: set_ethtool(tree, "ens1f0np0", "rx_prio4_pause", v), 500, 820, 1, prio=4)
    # pause duration is in microseconds
    check_step(c, "gpu-a2:mlx5_0:1", "pfc_tx_pause_duration_us",
               lambda v: set_ethtool(tree, "ens1f0np0", "tx_prio3_pause_duration", v),
               10_000, 10_700, 1, prio=3)
    # netdev statistics
    check_step(c, "gpu-a1:mlx5_1:1", "rx_bytes",
               os.path.join(trees["gpu-a1"], "sys/class/net/enp65s0f1np1/statistics/rx_bytes"),
               7_000_000, 9_000_000, 1)

    # inventory as the trees say
    host = c.json("/api/v1/hosts/gpu-a1")
    devs = {dd["name"]: dd for dd in host["devices_detail"]}
    assert devs["mlx5_1"]["driver"] == "mlx5"
    assert devs["mlx5_1"]["fw_version"] == "28.39.1002"
    p = devs["mlx5_1"]["ports"][0]
    assert (p["netdev"], p["speed_mbps"], p["mtu"], p["state"]) == ("enp65s0f1np1", 400000, 4200, "up")
    assert c.json("/api/v1/hosts/stor-b1")["devices_detail"][0]["driver"] == "rxe"
    # filters
    assert c.json("/api/v1/ports?host=gpu-a1")["count"] == 2
    assert c.json("/api/v1/ports?host=gpu-a1&device=mlx5_1")["count"] == 1
    assert c.json("/api/v1/ports?state=up")["count"] == 4
    assert c.json("/api/v1/ports?state=down")["count"] == 0
    # one port with its latest counters
    port = c.json("/api/v1/ports/gpu-a1:mlx5_0:1")
    names = {x["name"] for x in port["counters"]}
    assert {"roce_tx_bytes", "np_cnp_sent", "pfc_rx_pause_frames", "out_of_sequence"} <= names
    # a port going down shows up
    write_counter(os.path.join(trees["gpu-a1"], "sys/class/infiniband/mlx5_1/ports/1/state"), "1: DOWN")
    wait_for(lambda: c.json("/api/v1/ports?state=down")["count"] == 1, 10, what="a port down")
    # stepped series
    s = c.json("/api/v1/ports/gpu-a1:mlx5_0:1/counters?names=roce_tx_bytes&from=-1m&step=10s")
    assert s["step_s"] == 10
    assert all(p["n"] >= 1 for p in s["series"][0]["points"])


def agent_counts(c):
    return {a["id"]: a for a in c.json("/api/v1/agents")["items"]}


def test_restart_keeps_all_data(world):
    d, trees = start_fleet(world, agents={k: TREES[k] for k in ("gpu-a1", "stor-b1")})
    c = d.client("ops")
    wait_for(lambda: all(a["reports"] >= 4 for a in agent_counts(c).values())
             and len(agent_counts(c)) == 2, 15, what="4 reports from each agent")
    for ag in world.agents:
        ag.stop()
    before = agent_counts(c)
    series_before = c.json("/api/v1/ports/gpu-a1:mlx5_0:1/counters?from=-1h")
    hosts_before = c.json("/api/v1/hosts/gpu-a1")
    assert d.stop() == 0
    d.start()
    c = d.client("ops")
    after = agent_counts(c)
    for aid in before:
        for k in ("seq", "reports", "samples", "boot_id", "first_seen", "last_seen"):
            assert after[aid][k] == before[aid][k], (aid, k)
    assert c.json("/api/v1/ports/gpu-a1:mlx5_0:1/counters?from=-1h")["series"] == series_before["series"]
    h = c.json("/api/v1/hosts/gpu-a1")
    assert h["devices_detail"] == hosts_before["devices_detail"]
    # the counters carry on from the stored state: a new value gets a delta at once
    world.agents[0].start()
    path = os.path.join(trees["gpu-a1"], TREES["gpu-a1"][2])
    with open(path) as f:
        v = int(f.read())
    write_counter(path, v + 1000)
    wait_for(lambda: latest_raw(c, "gpu-a1:mlx5_0:1", "roce_tx_bytes") == v + 1000, 10)
    last = points(c, "gpu-a1:mlx5_0:1", "roce_tx_bytes")[-1]
    assert last["delta"] == 4000


def per_report_samples(tree):
    out = subprocess.run([binary("rocefab-agent"), "--once", "--sysfs-root", tree],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    return sum(len(s["values"]) for s in doc["samples"])


def test_outage_spools_and_loses_nothing(world):
    d, trees = start_fleet(world)
    c = d.client("ops")
    wait_for(lambda: len(agent_counts(c)) == 3, 10, what="3 agents")
    assert d.stop() == 0
    t0 = time.monotonic()
    # rocefabd is down for 30 s; the agents keep collecting and spool
    wait_for(lambda: all(ag.spooled() >= 10 for ag in world.agents), 20, what="spooled reports")
    time.sleep(max(0.0, 30 - (time.monotonic() - t0)))  # the outage the issue asks for
    spooled = {ag.id: ag.spooled() for ag in world.agents}
    assert all(n >= 50 for n in spooled.values()), spooled
    d.start()
    c = d.client("ops")
    wait_for(lambda: all(ag.spooled() == 0 for ag in world.agents), 30, what="spools drained")
    for ag in world.agents:
        ag.stop()
    counts = agent_counts(c)
    for aid, (tree, *_r) in TREES.items():
        a = counts[aid]
        # every report the agent produced is stored, once: seq counts what was produced
        assert a["reports"] == a["seq"], a
        assert a["samples"] == a["reports"] * per_report_samples(trees[aid]), a
        assert a["spool"]["dropped_reports"] == 0
    # and the series has no hole across the outage
    pts = points(c, "gpu-a1:mlx5_0:1", "roce_tx_bytes")
    gaps = [b["t"] - a["t"] for a, b in zip(pts, pts[1:])]
    assert max(gaps) < 1.5, max(gaps)


def test_a_database_that_takes_no_writes_is_a_health_warning(world):
    """The database's file may not grow (a full disk; here a file size limit set on the running
    rocefabd): health says so (STORE_WRITE_FAILING, degraded), not "ok" while every commit
    fails; the agents spool; once writes work, the warning goes and nothing is lost."""
    d, trees = start_fleet(world, agents={k: TREES[k] for k in sorted(TREES)[:1]})
    c = d.client("ops")
    wait_for(lambda: len(agent_counts(c)) == 1, 10, what="the agent")
    assert c.json("/api/v1/health")["status"] == "ok"
    pid = str(d.proc.p.pid)
    subprocess.run(["prlimit", "--pid", pid, "--fsize=4096:unlimited"], check=True)
    try:
        h = wait_for(lambda: (lambda x: x if any(w["code"] == "STORE_WRITE_FAILING" for w in x.get("warnings", []))
                              else None)(c.json("/api/v1/health")), 20, what="the warning")
        w = [w for w in h["warnings"] if w["code"] == "STORE_WRITE_FAILING"][0]
        assert h["status"] == "degraded" and "the database fails writes" in w["detail"], h
        assert "File too large" in w["detail"] or "disk" in w["detail"], w
        assert d.proc.alive()  # (SIGXFSZ would have killed it)
        wait_for(lambda: world.agents[0].spooled() >= 2, 20, what="reports spooled meanwhile")
    finally:
        subprocess.run(["prlimit", "--pid", pid, "--fsize=unlimited:unlimited"], check=True)
    wait_for(lambda: world.agents[0].spooled() == 0, 30, what="the spool drained")
    # (a failure counts for 30 s: on a full disk some commits work between those that fail)
    wait_for(lambda: not [w for w in c.json("/api/v1/health").get("warnings", []) if w["code"] == "STORE_WRITE_FAILING"],
             45, what="the warning gone")
    world.agents[0].stop()
    a = list(agent_counts(c).values())[0]
    assert a["reports"] == a["seq"], a  # every report stored, once
    assert c.json("/api/v1/health")["status"] == "ok"


def test_agent_ahead_of_rocefabd_keeps_its_reports(world):
    """An agent upgraded before rocefabd: the older rocefabd refuses every report for its schema
    (400 UNSUPPORTED_SCHEMA), not for what is in it.  The agent keeps them spooled (it used to
    drop each one for good) and delivers them all once rocefabd is upgraded too.  A report older
    than the agent (spooled before it was upgraded) is dropped: no rocefabd newer than it takes
    it, and kept it would hold back every report behind it."""
    import http.server
    import threading

    d = world.daemon()
    d.token("agents", "agent", agent="gpu-a1")
    d.token("ops", "viewer")
    refused = []

    class Older(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            refused.append(self.path)
            body = json.dumps({"type": "about:blank", "title": "Bad Request", "status": 400,
                               "code": "UNSUPPORTED_SCHEMA", "pointer": "/schema",
                               "detail": "report schema 2 is not supported (this rocefabd speaks 1); "
                                         "upgrade rocefabd before its agents"}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/problem+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    older = http.server.ThreadingHTTPServer((d.host, d.port), Older)
    th = threading.Thread(target=older.serve_forever, daemon=True)
    th.start()
    try:
        tree = copy_tree("gpu-a1", os.path.join(world.tmp, "tree-gpu-a1"))
        ag = world.agent("gpu-a1", tree, d.url, os.path.join(world.tmp, "agents.token"))
        os.makedirs(ag.spool, mode=0o700)
        stale = os.path.join(ag.spool, "00000000000000000001.json")
        with open(stale, "w") as f:
            json.dump({"schema": 0, "agent": {"id": "gpu-a1"}, "seq": 1}, f, separators=(",", ":"))
        ag.start()
        wait_for(lambda: not os.path.exists(stale) and ag.spooled() >= 5, 20,
                 what="the old report dropped, the new ones spooled while the older rocefabd refuses them")
        assert any(p.startswith("/api/v1/agents/gpu-a1/report") for p in refused), refused
    finally:
        older.shutdown()
        older.server_close()
        th.join()
    with open(os.path.join(world.tmp, "agent-gpu-a1.log")) as f:
        log = f.read()
    assert "spooling" in log and "UNSUPPORTED_SCHEMA" in log, log[-2000:]
    assert log.count("for good (dropped") == 1, log[-2000:]  # the old one only
    d.start()  # the upgraded rocefabd, at the same address
    c = d.client("ops")
    wait_for(lambda: ag.spooled() == 0 and agent_counts(c).get("gpu-a1", {}).get("reports", 0) >= 6, 30,
             what="the spool delivered")
    ag.stop()
    a = agent_counts(c)["gpu-a1"]
    assert a["reports"] == a["seq"] and a["spool"]["dropped_reports"] == 0, a


def test_agent_restart_and_counter_reset_give_no_bad_rates(world):
    agents = {"gpu-a1": TREES["gpu-a1"]}
    d, trees = start_fleet(world, agents=agents)
    c = d.client("ops")
    tree = trees["gpu-a1"]
    xmit = os.path.join(tree, TREES["gpu-a1"][2])
    oos = os.path.join(tree, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence")
    write_counter(xmit, 5_000_000_000)
    write_counter(oos, 4_294_967_000)  # near the top of its 32-bit range
    wait_for(lambda: latest_raw(c, "gpu-a1:mlx5_0:1", "roce_tx_bytes") == 5_000_000_000, 10)

    # the agent restarts (new boot_id, same host)
    ag = world.agents[0]
    boot1 = agent_counts(c)["gpu-a1"]["boot_id"]
    ag.stop()
    ag.start()
    wait_for(lambda: agent_counts(c)["gpu-a1"]["boot_id"] != boot1, 10, what="new agent boot")
    # out_of_sequence wraps at 32 bits; then a driver reload resets the counters (apart: read
    # together with a 64-bit counter's reset, a 32-bit one that went back is reset with the
    # port, not wrapped; tests/unit/test_store.c)
    write_counter(oos, 200)
    wait_for(lambda: latest_raw(c, "gpu-a1:mlx5_0:1", "out_of_sequence") == 200, 10)
    wrap = [p for p in points(c, "gpu-a1:mlx5_0:1", "out_of_sequence") if p["raw"] == 200][0]
    assert wrap["delta"] == 2**32 - 4_294_967_000 + 200 and "wrap" in wrap["flags"]
    write_counter(xmit, 1000)
    wait_for(lambda: latest_raw(c, "gpu-a1:mlx5_0:1", "roce_tx_bytes") == 1000, 10)
    reset = points(c, "gpu-a1:mlx5_0:1", "roce_tx_bytes")[-1]
    assert reset["delta"] == 4000 and "reset" in reset["flags"]

    # the host reboots: new kernel boot id, counters from zero
    write_counter(os.path.join(tree, "proc/sys/kernel/random/boot_id"),
                  "99999999-0000-4000-8000-000000000001")
    ag.stop()
    write_counter(xmit, 300)
    ag.start()
    wait_for(lambda: latest_raw(c, "gpu-a1:mlx5_0:1", "roce_tx_bytes") == 300, 10)
    boot = points(c, "gpu-a1:mlx5_0:1", "roce_tx_bytes")[-1]
    assert "new_boot" in boot["flags"] and boot["delta"] == 1200

    # nowhere a negative or absurd rate
    for s in c.json("/api/v1/ports/gpu-a1:mlx5_0:1/counters?from=-1h")["series"]:
        for p in s["points"]:
            if p.get("rate") is not None:
                assert 0 <= p["rate"] < 2e11, (s["name"], p)
