"""Pingmesh on the simulated fabric (issue 5): rocefabd plans who probes whom, the virtual agents
probe through rocefab-sim's queues, and the localization names what the probe matrix points at —
a lossy fabric link as that link (not its hosts), a host with a slow NIC as that host."""
import os
import subprocess
import time

from conftest import ROOT, binary, wait_for

DEMO = os.path.join(ROOT, "sim", "scenarios", "demo.json")


def start(world):
    d = world.daemon().start()
    _, tokf = d.token("agents", "agent")
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    sim = world.sim(DEMO, daemon=d, token_file=tokf, interval="0.5s")
    sim.start()
    # without the scheduled pause storm, whose effects are another test's business
    sim.ctl("DELETE", "/v1/faults/0")
    return d, sim


def finding(c, window="3s"):
    return c.json("/api/v1/probes/matrix", params={"window": window})["finding"]


def test_plan_matrix_and_results(world):
    d, sim = start(world)
    c, ops = d.client("viewer"), d.client("ops")
    m = wait_for(lambda: (lambda x: x if len(x["pairs"]) >= 32 * 9 else None)(
        c.json("/api/v1/probes/matrix", params={"window": "3s"})), 20, what="the matrix filled")
    # every host probes the 7 others under its ToR and 2 under other ToRs, on 2 paths
    by_src = {}
    for p in m["pairs"]:
        by_src.setdefault(p["src"], set()).add(p["dst"])
        assert len(p["paths"]) == 2 and all(q["path"] for q in p["paths"]), p
    tor = {h["host"]: h["tor"] for h in m["hosts"]}
    assert len(tor) == 32
    for src, dsts in by_src.items():
        same = {h for h in tor if tor[h] == tor[src] and h != src}
        assert same <= dsts and len(dsts - same) == 2, (src, dsts)
    assert m["finding"]["kind"] == "none", m["finding"]
    r = c.json("/api/v1/probes/results", params={"src": "h3", "limit": 5})
    assert r["count"] == 5 and all(x["src"] == "h3" and x["n"] == 10 for x in r["items"])
    # the configuration: validated, and the plans follow it
    assert ops.put("/api/v1/probes/config", json={"count": 0}).status_code == 400
    assert ops.put("/api/v1/probes/config", json={"colour": 1}).json()["code"] == "UNKNOWN_FIELD"
    assert c.put("/api/v1/probes/config", json={"count": 5}).status_code == 403
    cfg = ops.put("/api/v1/probes/config", json={"inter_tor": 4, "count": 5}).json()
    assert cfg["inter_tor"] == 4 and cfg["count"] == 5 and c.json("/api/v1/probes/config") == cfg
    t0 = time.time()
    wait_for(lambda: all(len(d2) == 7 + 4 for d2 in _dsts(c, t0).values()) and len(_dsts(c, t0)) == 32, 20,
             what="plans with 4 hosts under other ToRs")


def _dsts(c, since):
    out = {}
    for x in c.json("/api/v1/probes/results", params={"from": str(since), "limit": 100000})["items"]:
        out.setdefault(x["src"], set()).add(x["dst"])
    return out


def test_lossy_link_is_named_as_the_link(world):
    d, sim = start(world)
    c = d.client("viewer")
    wait_for(lambda: len(c.json("/api/v1/probes/matrix", params={"window": "3s"})["pairs"]) >= 288, 20,
             what="the matrix filled")
    sim.ctl("POST", "/v1/faults", {"type": "lossy_link", "link": "leaf1-spine0", "loss": 0.05}, expect=201)
    time.sleep(3.5)  # a window of results after the fault
    f = wait_for(lambda: (lambda x: x if x["kind"] == "link" else None)(finding(c)), 20,
                 what="a link finding")
    assert f["subject"] == "leaf1-spine0", f
    assert f["bad_through_subject"] >= 0.8 * f["bad_results"], f
    alerts = wait_for(lambda: [a for a in c.json("/api/v1/alerts", params={"state": "active"})["items"]
                               if a["kind"] == "link"], 15, what="an alert")
    assert alerts[0]["subject"] == "leaf1-spine0" and alerts[0]["evidence"]
    # rocefabctl probes: the finding, the worst pairs and the active alert, as text
    env = dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN_FILE=os.path.join(d.workdir, "viewer.token"))
    r = subprocess.run([binary("rocefabctl"), "probes", "--window", "3s"], capture_output=True, text=True,
                       env=env, timeout=20)
    assert r.returncode == 0, r.stderr
    assert "finding:  link leaf1-spine0" in r.stdout, r.stdout
    assert "active alerts: " in r.stdout and "leaf1-spine0" in r.stdout.split("active alerts: ")[1], r.stdout
    head = [ln for ln in r.stdout.splitlines() if ln.startswith("SRC")]
    assert head and head[0].split()[:2] == ["SRC", "DST"], r.stdout
    r = subprocess.run([binary("rocefabctl"), "alerts", "--state", "active"], capture_output=True, text=True,
                       env=env, timeout=20)
    assert r.returncode == 0 and "leaf1-spine0" in r.stdout, r.stdout + r.stderr


def test_slow_nic_is_named_as_the_host(world):
    d, sim = start(world)
    c = d.client("viewer")
    wait_for(lambda: len(c.json("/api/v1/probes/matrix", params={"window": "3s"})["pairs"]) >= 288, 20,
             what="the matrix filled")
    sim.ctl("POST", "/v1/faults", {"type": "slow_receiver", "host": "h5", "rate_gbps": 5}, expect=201)
    time.sleep(3.5)
    f = wait_for(lambda: (lambda x: x if x["kind"] == "host" else None)(finding(c)), 20,
                 what="a host finding")
    assert f["subject"] == "h5", f
    assert "probes to h5" in f["evidence"], f
