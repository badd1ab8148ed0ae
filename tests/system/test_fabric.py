"""The simulated fabric as a live backend (issue 4), checked through rocefabd's REST API:
rocefab-sim serve with virtual agents (or real agents with --backend sim), switches and links,
rates against the simulator's own counters, configuration changes end to end, faults injected
into the fabric, and process faults (agents and rocefabd killed, a network cut)."""
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import time

import pytest
import requests

from conftest import ROOT, SIM_AGENTS, Proc, binary, ctl, switch_report, wait_for, write_secret

DEMO = os.path.join(ROOT, "sim", "scenarios", "demo.json")
# one report interval of the fault scenarios in fabric time (0.3 s at pace 0.02 = 6 ms) and a
# margin: points after t0 + SETTLE cover fabric time after t0 only
SETTLE = 0.008
LIVE = os.path.join(ROOT, "tests", "sim", "live")


def fabric(world, scenario, interval="1s", pace=None, skip=(), extra_conf=""):
    d = world.daemon(extra_conf=extra_conf).start()
    _, agent_tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    sim = world.sim(scenario, daemon=d, token_file=agent_tok, interval=interval, pace=pace,
                    skip=skip)
    return d, sim


def series(c, port, names, **q):
    params = {"names": ",".join(names)}
    params.update(q)
    doc = c.json(f"/api/v1/ports/{port}/counters", params=params)
    return {(s["name"], s.get("priority")): s["points"] for s in doc["series"]}


def fabric_time_s(sim, fabric_ns):
    """Unix seconds of a fabric time: what rocefabd shows as the read time of samples."""
    clock = sim.ctl("GET", "/v1/clock")
    return (clock["epoch_ns"] + fabric_ns) / 1e9


def rates_after(c, port, name, prio, t0):
    pts = series(c, port, [name])[(name, prio)]
    return [p["rate"] for p in pts if p["t"] > t0 and p.get("rate") is not None]


def gauge_after(c, port, name, prio, t0):
    pts = series(c, port, [name])[(name, prio)]
    return [p["value"] for p in pts if p["t"] > t0 and "value" in p]


# --- the demo fabric ---------------------------------------------------------------------------

def test_demo_fabric_appears_within_two_intervals_with_true_rates(world):
    d = world.daemon().start()
    _, agent_tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    sim = world.sim(DEMO, daemon=d, token_file=agent_tok, interval="1s")
    sim.start()
    t0 = time.monotonic()
    c = d.client("viewer")
    devices = sim.ctl("GET", "/v1/devices")["devices"]
    hosts = {x["name"] for x in devices if x["role"] == "host"}
    switches = {x["name"] for x in devices if x["role"] == "switch"}
    assert len(hosts) == 32 and len(switches) == 6
    # its counters go to rocefabd: no pace above 1 (fabric time would run ahead of its clock)
    p = sim.ctl("PUT", "/v1/clock", {"pace": 2}, expect=400)
    assert p["pointer"] == "/pace" and "CLOCK_AHEAD" in p["detail"], p

    def all_there():
        h = {x["id"] for x in c.json("/api/v1/hosts")["items"] if x["ports_up"] == 1}
        s = {x["id"] for x in c.json("/api/v1/switches")["items"] if x["ports"] == x["ports_up"] > 0}
        return h == hosts and s == switches

    wait_for(all_there, 10, interval=0.05, what="every host and switch in REST")
    elapsed = time.monotonic() - t0
    assert elapsed <= 2.0, f"the fabric took {elapsed:.2f} s (two intervals: 2 s) to appear"
    # every one has counters
    wait_for(lambda: all(c.json(f"/api/v1/ports/{h}:nic0:1")["counters"] for h in hosts), 5,
             what="host counters")
    links = c.json("/api/v1/links")
    assert links["count"] == 32 + 2 * 4 and links["up"] == links["count"]
    topo = c.json("/api/v1/topology")
    assert len(topo["nodes"]) == 38

    # The simulator's own figures for one fabric interval [T1, T2]: freeze the fabric, read
    # its counters, let it run, freeze again; rocefabd's samples at T1 and T2 must give the
    # same rates (they carry fabric time as their read time).
    ports = {"leaf0:leaf0:h3": ("leaf0", "h3", ["tx_bytes", "rx_bytes"]),
             "spine0:spine0:leaf1": ("spine0", "leaf1", ["tx_bytes", "rx_bytes"]),
             "h3:nic0:1": ("h3", "leaf0", ["roce_tx_bytes", "roce_rx_bytes", "tx_bytes"])}

    def freeze():
        clock = sim.pause()
        t = (clock["epoch_ns"] + clock["fabric_time_ns"]) / 1e9
        own = {}
        for pid, (dev, sport, names) in ports.items():
            v = sim.counters(dev)["ports"][sport]
            own[pid] = {n: v[n] for n in names}
        # rocefabd has the frozen reading once every port's newest point is at t
        for pid, (_, _, names) in ports.items():
            wait_for(lambda: max(p["t"] for p in series(c, pid, names[:1])[(names[0], None)]) >= t - 1e-6,
                     5, what=f"{pid} sampled at the frozen time")
        return t, own

    t1, own1 = freeze()
    sim.resume()
    # let it run until rocefabd has two samples of every port after T1
    for pid, (_, _, names) in ports.items():
        wait_for(lambda: len([p for p in series(c, pid, names[:1])[(names[0], None)] if p["t"] > t1 + 1e-6]) >= 2,
                 10, what=f"two samples of {pid} after T1")
    t2, own2 = freeze()
    sim.resume()
    for pid, (_, _, names) in ports.items():
        got = series(c, pid, names, **{"from": str(t1 - 1e-6), "to": str(t2 + 1e-6)})
        for n in names:
            pts = [p for p in got[(n, None)] if t1 + 1e-6 < p["t"] <= t2 + 1e-6]
            assert len(pts) >= 2, (pid, n, pts)
            for p in pts:
                assert p["rate"] is not None and p["rate"] >= 0
            delta = sum(p["delta"] for p in pts)
            rate = delta / (t2 - t1)
            sim_rate = (own2[pid][n] - own1[pid][n]) / (t2 - t1)
            assert sim_rate > 1e8, (pid, n, sim_rate)  # a busy fabric: more than 100 MB/s
            assert abs(rate - sim_rate) <= 0.02 * sim_rate, (pid, n, rate, sim_rate)
    # the switch's queue and PFC state are there too (gauges)
    s = series(c, "leaf0:leaf0:h3", ["queue_depth_bytes", "pfc_paused"])
    assert ("queue_depth_bytes", 3) in s and ("pfc_paused", 3) in s
    # times relative to now count back from a simulated device's newest sample (its times are
    # fabric time, far behind the wall clock at this pace): by the wall clock '-1s' named a
    # window the fabric had not reached, and came back empty
    doc = c.json("/api/v1/ports/leaf0:leaf0:h3/counters", params={"names": "tx_bytes", "from": "-1s"})
    pts = doc["series"][0]["points"]
    assert doc["clock"] == "fabric" and len(pts) >= 1, doc
    assert doc["to"] == c.json("/api/v1/ports/leaf0:leaf0:h3")["sampled_at"], doc
    # to alone, an absolute time: the 5 minutes before it (from follows to, not the wall clock)
    from datetime import datetime
    newest = c.json("/api/v1/ports/leaf0:leaf0:h3")["sampled_at"]
    doc = c.json("/api/v1/ports/leaf0:leaf0:h3/counters", params={"names": "tx_bytes", "to": newest})
    span = datetime.fromisoformat(doc["to"]) - datetime.fromisoformat(doc["from"])
    assert doc["to"] == newest and span.total_seconds() == 300, doc


# --- configuration changes ---------------------------------------------------------------------

def test_ecn_change_reaches_the_fabric_and_lowers_the_queue(world):
    d, sim = fabric(world, os.path.join(LIVE, "ecn.json"), interval="0.2s")
    sim.start()
    c, ops = d.client("viewer"), d.client("ops")
    port = "leaf0:leaf0:h0"
    ecn = "/api/v1/switches/leaf0/ports/h0/queues/3/ecn"
    wait_for(lambda: c.get(ecn).status_code == 200, 5, what="the ECN settings reported")
    assert c.json(ecn)["items"][0]["values"]["kmin_bytes"] == 1000000
    # steady state with high thresholds (the flows converge in ~60 ms of fabric time)
    wait_for(lambda: sim.ctl("GET", "/v1/clock")["fabric_time_ns"] > 70e6, 10, what="convergence")
    t_start = fabric_time_s(sim, sim.ctl("GET", "/v1/clock")["fabric_time_ns"])
    wait_for(lambda: len(gauge_after(c, port, "queue_depth_bytes", 3, t_start)) >= 10, 10,
             what="queue samples")
    high = statistics.median(gauge_after(c, port, "queue_depth_bytes", 3, t_start))

    # invalid changes: a clear problem, and nothing changes anywhere
    before_changes = c.json("/api/v1/changes")["count"]
    before_sim = sim.ctl("GET", "/v1/devices/leaf0/config")["ports"]["h0"]["ecn"][3]
    bad = [
        (ecn, {"kmin_bytes": 500000, "kmax_bytes": 100000}, 400, "BAD_THRESHOLD_ORDER", "/kmin_bytes"),
        (ecn, {"kmin_bytes": 3000000}, 400, "BAD_THRESHOLD_ORDER", "/kmin_bytes"),  # = Kmax
        (ecn, {"pmax": 1.5}, 400, "BAD_VALUE", "/pmax"),
        (ecn, {"kmax_bytes": "lots"}, 400, "BAD_VALUE", "/kmax_bytes"),
        (ecn, {"kmin": 100}, 400, "UNKNOWN_FIELD", "/kmin"),
        (ecn, {}, 400, "NO_CHANGE", None),
        (ecn, {"kmax_bytes": 40000000}, 400, "BAD_THRESHOLD_ORDER", "/kmax_bytes"),  # above XOFF
        ("/api/v1/switches/leaf0/ports/h99/queues/3/ecn", {"kmin_bytes": 1}, 404, "UNKNOWN_PORT", None),
        ("/api/v1/switches/leaf0/ports/h0/queues/9/ecn", {"kmin_bytes": 1}, 404, "UNKNOWN_QUEUE", None),
        ("/api/v1/switches/nosuch/ports/h0/queues/3/ecn", {"kmin_bytes": 1}, 404, "UNKNOWN_SWITCH", None),
        ("/api/v1/switches/h1/ports/leaf0/queues/3/ecn", {"kmin_bytes": 1}, 404, "UNKNOWN_SWITCH", None),
    ]
    for path, body, status, code, pointer in bad:
        r = ops.put(path, json=body)
        assert r.status_code == status, (body, r.text)
        assert r.headers["Content-Type"].startswith("application/problem+json")
        p = r.json()
        assert p["code"] == code and p["detail"], (body, p)
        if pointer:
            assert p.get("pointer") == pointer, (body, p)
    r = ops.put(ecn, data=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["code"] == "BAD_JSON"
    assert c.put(ecn, json={"kmin_bytes": 1}).status_code == 403  # a viewer cannot change
    assert c.json("/api/v1/changes")["count"] == before_changes
    assert sim.ctl("GET", "/v1/devices/leaf0/config")["ports"]["h0"]["ecn"][3] == before_sim

    # a good change: audit log, command, applied, read back from the simulator
    r = ops.put(ecn, json={"kmin_bytes": "20KB", "kmax_bytes": "200KB", "reason": "test: lower the queue"})
    assert r.status_code == 202, r.text
    ch = r.json()["changes"][0]
    assert ch["state"] == "pending" and ch["actor"] == "ops" and ch["reason"] == "test: lower the queue"
    assert ch["params"] == {"kmin_bytes": 20000, "kmax_bytes": 200000}
    assert ch["old"]["kmin_bytes"] == 1000000
    done = wait_for(lambda: (lambda x: x if x["state"] == "applied" else None)(
        c.json(f"/api/v1/changes/{ch['id']}")), 10, what="the change applied")
    assert done["new"]["kmin_bytes"] == 20000 and done["new"]["kmax_bytes"] == 200000
    assert done["sent"] is not None
    own = sim.ctl("GET", "/v1/devices/leaf0/config")["ports"]["h0"]["ecn"][3]
    assert own["kmin_bytes"] == 20000 and own["kmax_bytes"] == 200000
    # the object shows it too, with its change
    wait_for(lambda: c.json(ecn)["items"][0]["values"]["kmin_bytes"] == 20000, 5,
             what="the new settings reported")
    assert c.json(ecn)["changes"][0]["id"] == ch["id"]
    # and the queue under the same load is measurably lower
    t_apply = fabric_time_s(sim, sim.ctl("GET", "/v1/clock")["fabric_time_ns"]) + 0.03
    wait_for(lambda: len(gauge_after(c, port, "queue_depth_bytes", 3, t_apply)) >= 10, 15,
             what="queue samples after the change")
    low = statistics.median(gauge_after(c, port, "queue_depth_bytes", 3, t_apply))
    assert high > 500000 and low < high / 4, (high, low)
    # the load is the same: the port still runs at line rate
    assert statistics.median(rates_after(c, port, "tx_bytes", None, t_apply)) > 0.9 * 12.5e9


def test_dcqcn_pfc_and_bulk_changes_with_outcomes(world):
    d, sim = fabric(world, os.path.join(LIVE, "faults.json"), interval="0.3s")
    sim.start()
    c, ops = d.client("viewer"), d.client("ops")
    wait_for(lambda: c.get("/api/v1/hosts/h4/dcqcn").status_code == 200, 5, what="DCQCN reported")
    cur = c.json("/api/v1/hosts/h4/dcqcn")["items"][0]
    assert (cur["device"], cur["port"]) == ("nic0", "1")
    assert cur["values"]["rpg_time_reset"] == 300 and cur["values"]["rpg_ai_rate"] == 5
    # ranges come from the facts file; rates are bounded by the port's line rate
    for body, field in (({"rpg_time_reset": 0}, "/rpg_time_reset"), ({"rpg_gd": 15}, "/rpg_gd"),
                        ({"rpg_ai_rate": 200000}, "/rpg_ai_rate"), ({"dce_tcp_g": 1024}, "/dce_tcp_g"),
                        ({"rpg_tim_reset": 5}, "/rpg_tim_reset")):
        r = ops.put("/api/v1/hosts/h4/dcqcn", json=body)
        assert r.status_code == 400 and r.json()["pointer"] == field, r.text
    # a device the host does not have is named, with those it has (it used to read as if the host
    # reported no DCQCN settings at all)
    r = ops.put("/api/v1/hosts/h4/dcqcn", json={"device": "nic9", "rpg_ai_rate": 6})
    assert r.status_code == 404 and r.json()["code"] == "UNKNOWN_DEVICE", r.text
    assert r.json()["detail"] == "h4 has no device 'nic9' with dcqcn settings (it reports them for nic0)", r.text
    r = ops.put("/api/v1/hosts/h4/dcqcn", json={"rpg_ai_rate": 40, "rpg_time_reset": 55})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    wait_for(lambda: c.json(f"/api/v1/changes/{cid}")["state"] == "applied", 10, what="applied")
    own = sim.ctl("GET", "/v1/devices/h4/config")["dcqcn"]
    assert own["rpg_ai_rate_mbps"] == 40 and own["rpg_time_reset_us"] == 55
    # a change the device refuses: failed, with the device's error
    r = ops.put("/api/v1/hosts/h4/dcqcn", json={"rp_enable": 8, "np_enable": 8})
    assert r.status_code == 202
    cid = r.json()["changes"][0]["id"]
    ch = wait_for(lambda: (lambda x: x if x["state"] != "pending" and x["state"] != "sent" else None)(
        c.json(f"/api/v1/changes/{cid}")), 10, what="an outcome")
    assert ch["state"] == "failed" and ch["error"]["code"] == "NOT_SUPPORTED", ch
    assert sim.ctl("GET", "/v1/devices/h4/config")["dcqcn"]["enabled"] is True

    # PFC of a switch port: static thresholds, XON below XOFF, XOFF above Kmax of lossless queues
    pfc = "/api/v1/switches/leaf0/ports/h0/pfc"
    wait_for(lambda: c.get(pfc).status_code == 200, 5, what="PFC reported")
    assert ops.put(pfc, json={"xoff_bytes": 1000000, "xon_bytes": 2000000}).json()["code"] == "BAD_THRESHOLD_ORDER"
    assert ops.put(pfc, json={"xoff_bytes": 1000000}).json()["code"] == "BAD_THRESHOLD_ORDER"  # Kmax 1.6 MB
    assert ops.put(pfc, json={"alpha_shift": 3, "xoff_bytes": 5}).status_code == 400
    r = ops.put(pfc, json={"xoff_bytes": "3MB", "xon_bytes": "2.5MB"})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    wait_for(lambda: c.json(f"/api/v1/changes/{cid}")["state"] == "applied", 10, what="applied")
    own = sim.ctl("GET", "/v1/devices/leaf0/config")["ports"]["h0"]["pfc"]
    assert own["threshold"] == "static" and own["xoff_bytes"] == 3000000
    assert own["xon_offset_bytes"] == 500000
    # a host port: only the priorities
    hp = "/api/v1/hosts/h4/ports/nic0:1/pfc"
    assert ops.put(hp, json={"xoff_bytes": 5}).status_code == 400
    assert c.get("/api/v1/hosts/h4/ports/eth0/pfc").status_code == 404

    # bulk: every host port of the leaves, all or nothing
    r = ops.post("/api/v1/changes", json={"kind": "ecn", "select": {"switch": "leaf*", "port": "h*", "queue": 3},
                                           "params": {"kmax_bytes": 40000000}})
    assert r.status_code == 400 and r.json()["rejected_targets"] == 8, r.text
    assert len(r.json()["errors"]) == 8
    r = ops.post("/api/v1/changes", json={"kind": "ecn", "select": {"switch": "nomatch*"},
                                           "params": {"kmax_bytes": 1000000}})
    assert r.status_code == 404 and r.json()["code"] == "NO_TARGETS"
    r = ops.post("/api/v1/changes", json={"kind": "ecn", "select": {"switch": "leaf*", "port": "h*", "queue": 3},
                                           "params": {"kmin_bytes": "100KB", "kmax_bytes": "800KB"},
                                           "reason": "bulk"})
    assert r.status_code == 202 and r.json()["count"] == 8, r.text
    batch = r.json()["batch"]
    wait_for(lambda: c.json(f"/api/v1/changes?batch={batch}")["count"] == 8 and all(
        x["state"] == "applied" for x in c.json(f"/api/v1/changes?batch={batch}")["items"]), 10,
        what="the batch applied")
    for sw, hs in (("leaf0", ("h0", "h1", "h2", "h3")), ("leaf1", ("h4", "h5", "h6", "h7"))):
        cfg = sim.ctl("GET", f"/v1/devices/{sw}/config")["ports"]
        for h in hs:
            assert cfg[h]["ecn"][3]["kmax_bytes"] == 800000
        assert cfg["spine0"]["ecn"][3]["kmax_bytes"] == 1600000  # not selected
    # rocefabctl wraps it
    env = dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN_FILE=os.path.join(world.tmp, "ops.token"))
    out = subprocess.run([binary("rocefabctl"), "set", "ecn", "leaf1", "spine0", "3", "kmin_bytes=200KB",
                          "--reason", "ctl", "--wait=15"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "applied" in out.stdout, out.stdout + out.stderr
    out = subprocess.run([binary("rocefabctl"), "set", "ecn", "leaf1", "spine0", "3", "kmin_bytes=9MB"],
                         env=env, capture_output=True, text=True)
    assert out.returncode == 1 and "BAD_THRESHOLD_ORDER" in out.stderr
    out = subprocess.run([binary("rocefabctl"), "changes"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "ctl" not in out.stdout.splitlines()[0]
    assert sum("applied" in l for l in out.stdout.splitlines()) >= 11


def test_change_times_out_when_the_agent_is_gone(world):
    d, sim = fabric(world, os.path.join(LIVE, "faults.json"), interval="0.3s", skip=("h2",),
                    extra_conf="[changes]\ndeadline = 1s\n")
    sim.start()
    agent = world.sim_agent("h2", d, sim).start()
    c, ops = d.client("viewer"), d.client("ops")
    wait_for(lambda: c.get("/api/v1/hosts/h2/dcqcn").status_code == 200, 5, what="h2 reported")
    agent.stop(signal.SIGKILL)
    r = ops.put("/api/v1/hosts/h2/dcqcn", json={"rpg_ai_rate": 10})
    cid = r.json()["changes"][0]["id"]
    # deadline 1 s, grace 10 s: rocefabd times it out for the silent agent
    ch = wait_for(lambda: (lambda x: x if x["state"] == "timed_out" else None)(
        c.json(f"/api/v1/changes/{cid}")), 20, interval=0.5, what="timed out")
    assert ch["error"]["code"] == "NO_ANSWER"
    assert sim.ctl("GET", "/v1/devices/h2/config")["dcqcn"]["rpg_ai_rate_mbps"] == 5


def test_a_real_agent_on_a_simulator_paced_above_1(world):
    """rocefab-sim serve refuses a pace above 1 for its own agents (their reports would run ahead
    of rocefabd's clock), but cannot know of a real rocefab-agent --backend sim.  Such an agent
    leaves the counters out once fabric time is well ahead of its clock, and its reports say why
    (SIM_AHEAD).  Before, rocefabd refused every report (CLOCK_AHEAD: check this host's clock),
    and the agent dropped them."""
    d = world.daemon().start()
    _, tok = d.token("agents", "agent")
    d.token("viewer", "viewer")
    idle = os.path.join(world.tmp, "idle.json")  # (a fabric with traffic would not keep such a pace)
    with open(idle, "w") as f:
        json.dump({"schema": 1, "name": "idle", "seed": 1, "until_us": 1000000000, "workloads": [],
                   "topology": {"type": "leaf_spine", "spines": 1, "leaves": 1, "hosts_per_leaf": 2,
                                "host_link": {"rate_gbps": 100, "delay_ns": 1000},
                                "fabric_link": {"rate_gbps": 100, "delay_ns": 1000}}}, f)
    sim = world.sim(idle, pace=30).start()
    ahead = lambda: (lambda c: (c["epoch_ns"] + c["fabric_time_ns"]) / 1e9 - time.time())(sim.ctl("GET", "/v1/clock"))
    wait_for(lambda: ahead() > 60, 20, interval=0.2, what="fabric time a minute ahead")
    agent = world.sim_agent("h1", d, sim, tok).start()
    c = d.client("viewer")
    a = wait_for(lambda: (lambda r: r.json() if r.status_code == 200 and r.json()["reports"] >= 3 else None)(
        c.get("/api/v1/agents/h1")), 15, what="h1's reports stored")
    assert "SIM_AHEAD" in json.dumps(a["errors"]), a
    out = agent.proc.output()
    assert "refused a report" not in out and "SIM_AHEAD" in out, out[-3000:]


# --- faults injected into the fabric --------------------------------------------------------------

def inject(sim, fault):
    r = sim.ctl("POST", "/v1/faults", fault, expect=201)
    return r["id"], fabric_time_s(sim, r["fabric_time_ns"])


def test_link_down_shows_both_ports_down_and_traffic_rerouted(world):
    d, sim = fabric(world, os.path.join(LIVE, "faults.json"), interval="0.3s")
    sim.start()
    c = d.client("viewer")
    wait_for(lambda: c.json("/api/v1/links")["up"] == 12, 5, what="all links up")
    # both ends seen up (a port first reported down is unused: no port_down alert)
    for key in ("leaf0:leaf0:spine0", "spine0:spine0:leaf0"):
        wait_for(lambda: c.json(f"/api/v1/ports/{key}")["state"] == "up", 5, what=f"{key} up")
    up = 'rocefab_link_up{host="leaf0",device="leaf0",port="spine0"} '
    assert up + "1\n" in c.get("/metrics").text
    fid, t0 = inject(sim, {"type": "link_down", "link": "leaf0-spine0"})

    def down():
        ls = {l["id"]: l for l in c.json("/api/v1/links")["items"]}
        l = next(l for l in ls.values() if {l["a"]["node"], l["b"]["node"]} == {"leaf0", "spine0"})
        return l["state"] == "down" and l["a"]["state"] == "down" and l["b"]["state"] == "down"

    wait_for(down, 5, what="the link down in REST")
    assert c.json("/api/v1/ports/leaf0:leaf0:spine0")["state"] == "down"
    assert c.json("/api/v1/ports/spine0:spine0:leaf0")["state"] == "down"
    assert c.json("/api/v1/links")["up"] == 11
    # traffic moved to spine1: leaf0's uplink to spine0 carries nothing, the one to spine1
    # carries all of it, and the flows crossing leaf0 keep going
    wait_for(lambda: len(rates_after(c, "leaf0:leaf0:spine1", "tx_bytes", None, t0 + SETTLE)) >= 3, 10,
             what="samples after the fault")
    assert max(rates_after(c, "leaf0:leaf0:spine0", "prio_tx_bytes", 3, t0 + SETTLE)) == 0
    assert min(rates_after(c, "leaf0:leaf0:spine1", "tx_bytes", None, t0 + SETTLE)) > 5e9
    assert min(rates_after(c, "h4:nic0:1", "roce_tx_bytes", None, t0 + SETTLE)) > 1e9
    assert c.json("/api/v1/ports/leaf0:leaf0:spine0")["counters"]  # still reported
    carrier = series(c, "leaf0:leaf0:spine0", ["carrier_changes"])[("carrier_changes", None)]
    assert carrier[-1]["raw"] >= 1
    # each end raises a port_down alert (none before: a down link raised nothing), naming its
    # neighbour; the other ports, up, raise none
    def port_down():
        return sorted((a["subject"], a["evidence"]) for a in c.json("/api/v1/alerts")["items"]
                      if a["kind"] == "port_down" and a["state"] == "active")
    got = wait_for(lambda: (lambda x: x if len(x) == 2 else None)(port_down()), 10, what="two port_down alerts")
    assert [x[0] for x in got] == ["leaf0:leaf0:spine0", "spine0:spine0:leaf0"], got
    assert "after it was up; its neighbour was spine0 port leaf0" in got[0][1], got
    # /metrics says so too (rule RocefabPortDown), for these two ports only
    text = c.get("/metrics").text
    assert up + "0\n" in text and 'rocefab_link_up{host="spine0",device="spine0",port="leaf0"} 0\n' in text
    assert len(re.findall(r"^rocefab_link_up\{.*\} 0$", text, re.M)) == 2, text
    # the link back: they clear
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
    wait_for(lambda: not port_down(), 10, what="the port_down alerts cleared")
    assert up + "1\n" in c.get("/metrics").text


def test_pause_storm_pauses_the_tor_port_and_upstream(world):
    d, sim = fabric(world, os.path.join(LIVE, "faults.json"), interval="0.3s")
    sim.start()
    c = d.client("viewer")
    wait_for(lambda: len(c.json("/api/v1/hosts")["items"]) == 8, 5, what="hosts")
    before = wait_for(lambda: (lambda r: r if len(r) >= 2 else None)(
        rates_after(c, "leaf0:leaf0:h0", "pfc_rx_pause_frames", 3, 0)), 10, what="two rates before the storm")
    assert max(before) == 0
    _, t0 = inject(sim, {"type": "pause_storm", "host": "h0", "priority": 3})
    wait_for(lambda: len(rates_after(c, "leaf0:leaf0:h0", "pfc_rx_pause_frames", 3, t0 + SETTLE)) >= 3, 10,
             what="samples after the storm began")
    # the ToR port facing the storming NIC receives pauses and is paused all the time
    assert min(rates_after(c, "leaf0:leaf0:h0", "pfc_rx_pause_frames", 3, t0 + SETTLE)) > 0
    paused = rates_after(c, "leaf0:leaf0:h0", "pfc_rx_pause_duration_us", 3, t0 + SETTLE)
    assert min(paused) > 0.9e6  # microseconds paused per second: nearly always
    # upstream: leaf0 pauses the spines' ports facing it (traffic to h0 backs up)
    up = [max(rates_after(c, f"{s}:{s}:leaf0", "pfc_rx_pause_frames", 3, t0 + SETTLE) or [0])
          for s in ("spine0", "spine1")]
    assert max(up) > 0, up
    wait_for(lambda: max(gauge_after(c, "leaf0:leaf0:h0", "pfc_paused", 3, t0 + SETTLE) or [0]) == 1, 5,
             what="the port's paused state")


def test_routing_loop_deadlock_freezes_the_cycle(world):
    d, sim = fabric(world, os.path.join(LIVE, "deadlock.json"), interval="0.3s")
    sim.start()
    c = d.client("viewer")
    wait_for(lambda: len(c.json("/api/v1/switches")["items"]) == 4, 5, what="switches")
    _, t0 = inject(sim, {"type": "route_override", "routes": [
        {"switch": "leaf1", "dst": "h0", "via": "spine0"},
        {"switch": "spine0", "dst": "h0", "via": "leaf1"}]})
    cycle = ["leaf1:leaf1:spine0", "spine0:spine0:leaf1"]
    settle = t0 + SETTLE
    wait_for(lambda: all(len(rates_after(c, p, "prio_tx_bytes", 3, settle)) >= 3 for p in cycle), 10,
             what="samples after the loop formed")
    for p in cycle:
        assert max(rates_after(c, p, "prio_tx_bytes", 3, settle)) == 0, p  # nothing moves
        assert min(gauge_after(c, p, "pfc_paused", 3, settle)) == 1, p  # paused, all along
        assert min(gauge_after(c, p, "queue_depth_bytes", 3, settle)) > 0, p  # not empty
    # the senders are stuck too
    assert max(rates_after(c, "h4:nic0:1", "roce_tx_bytes", None, settle + 0.002)) < 1e8


def test_lossy_link_shows_retransmits_and_out_of_sequence(world):
    d, sim = fabric(world, os.path.join(LIVE, "faults.json"), interval="0.3s")
    sim.start()
    c = d.client("viewer")
    wait_for(lambda: len(c.json("/api/v1/hosts")["items"]) == 8, 5, what="hosts")
    before = wait_for(lambda: (lambda r: r if len(r) >= 2 else None)(
        rates_after(c, "h4:nic0:1", "retransmitted_packets", None, 0)), 10, what="two rates before the loss")
    assert max(before) == 0
    _, t0 = inject(sim, {"type": "lossy_link", "link": "h4-leaf1", "loss": 0.01})
    wait_for(lambda: len(rates_after(c, "h0:nic0:1", "out_of_sequence", None, t0 + SETTLE)) >= 3, 10,
             what="samples after the loss began")
    # h4 -> h0 crosses the lossy link: the sender retransmits, the receiver sees gaps
    assert sum(rates_after(c, "h4:nic0:1", "retransmitted_packets", None, t0)) > 0
    assert sum(rates_after(c, "h0:nic0:1", "out_of_sequence", None, t0)) > 0
    # a host whose traffic avoids the link is unaffected
    assert sum(rates_after(c, "h7:nic0:1", "retransmitted_packets", None, t0)) == 0


# --- process faults ------------------------------------------------------------------------------


def test_agent_killed_and_restarted_gives_no_negative_rates(world):
    d, sim = fabric(world, os.path.join(LIVE, "faults.json"), interval="0.3s", skip=("h4",))
    sim.start()
    ag = world.sim_agent("h4", d, sim).start()
    c = d.client("viewer")
    wait_for(lambda: c.get("/api/v1/agents/h4").status_code == 200 and
             c.json("/api/v1/agents/h4")["seq"] >= 3, 10, what="h4 reporting")
    boot1 = c.json("/api/v1/agents/h4")["boot_id"]
    ag.stop(signal.SIGKILL)
    time.sleep(1)
    ag2 = world.sim_agent("h4", d, sim).start()
    wait_for(lambda: c.json("/api/v1/agents/h4")["boot_id"] != boot1 and
             c.json("/api/v1/agents/h4")["seq"] >= 4, 10, what="h4 back with a new boot")
    pts = series(c, "h4:nic0:1", ["roce_tx_bytes", "tx_bytes", "retransmitted_packets"])
    for key, p in pts.items():
        rates = [x["rate"] for x in p if x.get("rate") is not None]
        assert rates and min(rates) >= 0, key
        assert max(rates) < 13e9, key  # never more than the 100 Gb/s line rate
    # the gap was bridged: the rate right after the restart is an ordinary one
    tx = [x for x in pts[("roce_tx_bytes", None)] if x.get("rate") is not None]
    assert statistics.median(x["rate"] for x in tx) > 1e9
    ag2.stop()


def test_rocefabd_sigkill_during_ingest_keeps_every_acknowledged_report(world):
    d, sim = fabric(world, DEMO, interval="0.2s")
    sim.start()
    c = d.client("viewer")
    wait_for(lambda: len(c.json("/api/v1/agents")["items"]) == 38, 10, what="38 agents")
    wait_for(lambda: sim.ctl("GET", "/v1/status")["agents"]["delivered"] >= 38 * 3, 15, interval=0.1,
             what="three reports from each agent")
    d.stop(signal.SIGKILL)
    # Nothing can be acknowledged any more.  An agent has one report in flight at most; once every
    # agent has failed a delivery, what they count as delivered is final.
    wait_for(lambda: sim.ctl("GET", "/v1/status")["agents"]["cannot_deliver"] == 38, 15, interval=0.1,
             what="every agent finding rocefabd gone")
    delivered = sim.ctl("GET", "/v1/status")["agents"]["delivered"]
    assert delivered >= 38 * 3
    db = sqlite3.connect(d.db)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = db.execute("SELECT sum(last_seq) FROM agent_boots").fetchone()[0]
    db.close()
    # each agent's reports are acknowledged in order, one boot each: last_seq >= delivered
    assert stored >= delivered, (stored, delivered)
    d.start()
    wait_for(lambda: c.json("/api/v1/health")["status"] == "ok", 10, what="rocefabd back")
    # the agents spooled meanwhile and catch up: nothing lost, no duplicates stored twice
    wait_for(lambda: all(a["spool"]["queued_reports"] == 0 for a in c.json("/api/v1/agents")["items"]),
             20, what="spools drained")
    for a in c.json("/api/v1/agents")["items"]:
        assert a["reports"] + a["duplicates"] >= a["seq"], a
        assert a["spool"]["dropped_reports"] == 0


NS_A, NS_B = f"rfb-a-{os.getpid()}", f"rfb-b-{os.getpid()}"


def ns(name, *cmd, **kw):
    return subprocess.run(["ip", "netns", "exec", name] + list(cmd), **kw)


@pytest.fixture
def two_namespaces():
    if subprocess.run(["ip", "netns", "add", NS_A], capture_output=True).returncode != 0:
        pytest.skip("cannot create network namespaces here")
    subprocess.run(["ip", "netns", "add", NS_B], check=True)
    try:
        subprocess.run(["ip", "link", "add", "rfa", "netns", NS_A, "type", "veth", "peer", "name",
                        "rfb", "netns", NS_B], check=True)
        for n, dev, addr in ((NS_A, "rfa", "10.99.0.1/24"), (NS_B, "rfb", "10.99.0.2/24")):
            subprocess.run(["ip", "-n", n, "addr", "add", addr, "dev", dev], check=True)
            subprocess.run(["ip", "-n", n, "link", "set", dev, "up"], check=True)
            subprocess.run(["ip", "-n", n, "link", "set", "lo", "up"], check=True)
        yield NS_A, NS_B
    finally:
        subprocess.run(["ip", "netns", "pids", NS_A], capture_output=True)
        for n in (NS_A, NS_B):
            pids = subprocess.run(["ip", "netns", "pids", n], capture_output=True, text=True).stdout.split()
            for p in pids:
                try:
                    os.kill(int(p), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def test_agent_cut_off_by_a_namespace_link_spools_and_catches_up(world, two_namespaces):
    """rocefabd in one namespace; the simulator and a real agent (--backend sim) in another,
    joined by a veth.  The veth goes down for 5 s: the agent spools, then catches up with
    every report and nothing twice."""
    a, b = two_namespaces
    tmp = world.tmp
    conf = os.path.join(tmp, "d.conf")
    db = os.path.join(tmp, "d.db")
    with open(conf, "w") as f:
        f.write(f"[daemon]\nlog_target = stderr\n[api]\nlisten = 10.99.0.2:9750\n[store]\ndb = {db}\n")
    tok = subprocess.run([binary("rocefabd"), "--config", conf, "token", "add", "agents", "--role", "agent"],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    vtok = subprocess.run([binary("rocefabd"), "--config", conf, "token", "add", "v", "--role", "viewer"],
                          capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    tokf = os.path.join(tmp, "agents.token")
    write_secret(tokf, tok + "\n")
    daemon = Proc(["ip", "netns", "exec", b, binary("rocefabd"), "--config", conf], os.path.join(tmp, "d.log"))
    world.procs.append(daemon)
    sim = Proc(["ip", "netns", "exec", a, binary("rocefab-sim"), "serve", os.path.join(LIVE, "faults.json"),
                "--control", "127.0.0.1:9760", "--quiet"], os.path.join(tmp, "sim.log"))
    world.procs.append(sim)
    # (the agent copes with a simulator that is not up yet, but starting it after is quicker)
    wait_for(lambda: ns(a, "curl", "-sf", "http://127.0.0.1:9760/v1/status",
                        capture_output=True).returncode == 0, 10, what="the simulator in its namespace")
    agent = Proc(["ip", "netns", "exec", a, binary("rocefab-agent"), "--backend", "sim", "--sim",
                  "http://127.0.0.1:9760", "--device", "h5", "--server", "http://10.99.0.2:9750",
                  "--token-file", tokf, "--interval", "0.2s", "--spool-dir", os.path.join(tmp, "spool"),
                  "-o", "agent.log_target=stderr", "-o", "agent.timeout=1s"], os.path.join(tmp, "agent.log"))
    world.procs.append(agent)

    def agent_doc():
        r = ns(b, "curl", "-sf", "-H", f"Authorization: Bearer {vtok}", "http://10.99.0.2:9750/api/v1/agents/h5",
               capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        import json
        return json.loads(r.stdout)

    wait_for(lambda: agent_doc()["seq"] >= 5, 15, interval=0.2, what="h5 reporting across the namespaces")
    subprocess.run(["ip", "-n", a, "link", "set", "rfa", "down"], check=True)
    cut = agent_doc()["seq"]
    time.sleep(5)
    spooled = len([f for f in os.listdir(os.path.join(tmp, "spool")) if f.endswith(".json")])
    assert spooled >= 10, spooled  # 5 s at 0.2 s: the reports wait on disk
    assert agent_doc()["seq"] == cut  # nothing got through
    subprocess.run(["ip", "-n", a, "link", "set", "rfa", "up"], check=True)
    wait_for(lambda: agent_doc()["spool"]["queued_reports"] == 0 and agent_doc()["seq"] > cut + spooled, 20,
             interval=0.2, what="the spool drained")
    # The agent keeps reporting; stop it so the daemon's view and the database can be compared
    # without a report landing in between (CI once read 51 samples against 50 reports that way).
    assert agent.stop() == 0, agent.output()[-2000:]

    def stored_samples():
        conn = sqlite3.connect(db)
        try:
            return conn.execute("SELECT count(*) FROM samples s JOIN ports p ON p.id = s.port_id "
                                "WHERE p.key = 'h5:nic0:1'").fetchone()[0]
        finally:
            conn.close()

    # every report of this boot is stored exactly once: seq 1..N, N reports, none dropped, and
    # one sample row per report (a duplicate would leave more rows than reports for good)
    doc = agent_doc()
    assert doc["reports"] == doc["seq"], doc
    assert doc["spool"]["dropped_reports"] == 0
    try:
        wait_for(lambda: stored_samples() == agent_doc()["reports"], 5, interval=0.1,
                 what="one sample row per report")
    except AssertionError:
        raise AssertionError(f"{stored_samples()} sample rows for {agent_doc()['reports']} reports")


# --- liveness ------------------------------------------------------------------------------------

def test_agent_goes_stale_and_recovers(world):
    d, sim = fabric(world, os.path.join(LIVE, "faults.json"), interval="0.3s", skip=("h6",))
    sim.start()
    ag = world.sim_agent("h6", d, sim).start()
    c = d.client("viewer")
    wait_for(lambda: c.get("/api/v1/agents/h6").status_code == 200 and
             c.json("/api/v1/agents/h6")["status"] == "ok", 10, what="h6 ok")

    def metric():
        text = c.get("/metrics").text
        line = next(l for l in text.splitlines() if l.startswith('rocefab_agent_up{agent="h6"'))
        return int(line.split()[-1])

    assert metric() == 1
    ag.proc.p.send_signal(signal.SIGSTOP)  # alive but silent
    try:
        wait_for(lambda: c.json("/api/v1/agents/h6")["status"] == "stale", 5, what="stale")
        assert metric() == 0
        assert c.json("/api/v1/hosts/h6")["status"] == "stale"
        health = c.json("/api/v1/health")
        assert health["agents"]["stale"] >= 1
        # its port's state is as last reported, and says so (before, it read "up" as any other)
        port = c.json("/api/v1/ports/h6:nic0:1")
        assert port["state"] == "up" and port["stale"] is True, port
        listed = {p["id"]: p["stale"] for p in c.json("/api/v1/ports")["items"]}
        assert listed["h6:nic0:1"] is True and listed["h5:nic0:1"] is False, listed
        assert not any(p["stale"] for p in c.json("/api/v1/switches/leaf1")["port_list"])
        # so are its links (one end's agent stale), in both views
        for links in (c.json("/api/v1/links")["items"], c.json("/api/v1/topology")["links"]):
            stale = {l["id"] for l in links if l["stale"]}
            assert stale and all("h6" in (l["a"]["node"], l["b"]["node"]) for l in links if l["stale"]), links
            assert any(not l["stale"] for l in links)
        # a stale link is up only as last reported: not counted up
        doc = c.json("/api/v1/links")
        assert doc["up"] == sum(l["state"] == "up" and not l["stale"] for l in doc["items"]) < doc["count"], doc
        assert [p["stale"] for p in c.json("/api/v1/hosts/h6")["devices_detail"][0]["ports"]] == [True]
        out = ctl(d, "viewer", "ports", "--host", "h6").stdout
        assert "h6:nic0:1" in out and "up (stale)" in out, out
    finally:
        ag.proc.p.send_signal(signal.SIGCONT)
    wait_for(lambda: c.json("/api/v1/agents/h6")["status"] == "ok", 5, what="ok again")
    assert metric() == 1
    assert c.json("/api/v1/ports/h6:nic0:1")["stale"] is False


# --- the command protocol, seen from an agent ---------------------------------------------------

def test_commands_ride_on_report_answers_until_an_outcome_arrives(world):
    """A hand-made switch agent: its configuration, a change for it, the command in the answers
    (validated against command.schema.json through the OpenAPI document), then its outcome."""
    d = world.daemon().start()
    d.token("agent", "agent", agent="sw9")
    d.token("ops", "operator")
    ag, ops = d.client("agent"), d.client("ops")
    now = time.time_ns()

    def report(seq, results=None, config=True):
        doc = {"schema": 1, "agent": {"id": "sw9", "role": "switch", "boot_id": "b1", "version": "t",
                                      "backend": "test"},
               "seq": seq, "time_ns": now + seq, "interval_ms": 1000,
               "inventory": {"devices": [{"name": "sw9", "kind": "switch", "ports": [
                   {"port": "p1", "state": "up", "speed_mbps": 100000,
                    "neighbor": {"system": "hx", "port": "nic0:1"}}]}]},
               "samples": [{"device": "sw9", "port": "p1", "source": "sim", "t_ns": now + seq * 1000000,
                            "values": {"tx_bytes": 1000 * seq}}]}
        if config:
            doc["config"] = {"pfc": [{"device": "sw9", "port": "p1", "enable": 8, "mode": "static",
                                      "xoff_bytes": 2000000, "xon_bytes": 1900000,
                                      "xoff_threshold_bytes": 2000000}],
                             "ecn": [{"device": "sw9", "port": "p1", "queue": 3, "enabled": True,
                                      "kmin_bytes": 100000, "kmax_bytes": 400000, "pmax": 0.1}]}
        if results:
            doc["command_results"] = results
        r = ag.post("/api/v1/agents/sw9/report", json=doc)
        assert r.status_code == 200, r.text
        return r.json()

    assert report(1)["commands"] == []
    r = ops.put("/api/v1/switches/sw9/ports/p1/queues/3/ecn", json={"kmax_bytes": 1500000})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    # Kmax above the static XOFF threshold is refused
    assert ops.put("/api/v1/switches/sw9/ports/p1/queues/3/ecn",
                   json={"kmax_bytes": 2000000}).json()["code"] == "BAD_THRESHOLD_ORDER"
    a2 = report(2, config=False)
    assert len(a2["commands"]) == 1
    cmd = a2["commands"][0]
    assert cmd["id"] == f"c{cid}" and cmd["kind"] == "set_ecn" and cmd["target"] == "sw9"
    assert cmd["params"] == {"device": "sw9", "port": "p1", "queue": 3, "kmax_bytes": 1500000}
    assert cmd["deadline_ns"] > now
    assert d.client("ops").json(f"/api/v1/changes/{cid}")["state"] == "sent"
    # sent again until an outcome arrives
    assert [c["id"] for c in report(3, config=False)["commands"]] == [f"c{cid}"]
    a4 = report(4, results=[{"id": f"c{cid}", "outcome": "applied", "previous": {"kmax_bytes": 400000},
                             "values": {"kmax_bytes": 1500000}},
                            {"id": "c999999", "outcome": "failed",
                             "error": {"code": "X", "message": "not ours"}}])
    assert a4["commands"] == []
    ch = d.client("ops").json(f"/api/v1/changes/{cid}")
    assert ch["state"] == "applied" and ch["new"] == {"kmax_bytes": 1500000}
    # the same report again (the agent did not get the answer): duplicate, nothing changes
    a4b = report(4, results=[{"id": f"c{cid}", "outcome": "failed", "error": {"code": "X", "message": "late"}}])
    assert a4b["duplicate"] is True
    # a failed outcome after applied would be a different report: outcomes are final once recorded
    assert d.client("ops").json(f"/api/v1/changes/{cid}")["state"] == "applied"
    assert ops.json("/api/v1/switches/sw9")["port_list"][0]["peer"] == {"system": "hx", "port": "nic0:1"}


def test_a_sent_change_timed_out_is_counted_until_the_agent_reports_again(world):
    """A hand-made switch agent gets a command and goes silent: rocefabd times the change out
    (deadline 1 s, grace 10 s) but, as the agent may have applied it, counts it in the check
    of the next change to the object (which waits for it) until a report the agent made after
    the deadline brings its outcome."""
    d = world.daemon(extra_conf="[changes]\ndeadline = 1s\n").start()
    d.token("agent", "agent", agent="sw9")
    d.token("ops", "operator")
    ag, ops = d.client("agent"), d.client("ops")

    def report(seq, results=None):
        doc = switch_report("sw9", seq, [{"queue": q, "kmin_bytes": 100000, "kmax_bytes": 400000, "pmax": 0.1}
                                         for q in (0, 3)], results)
        r = ag.post("/api/v1/agents/sw9/report", json=doc)
        assert r.status_code == 200, r.text
        return [c["id"] for c in r.json()["commands"]]

    url = "/api/v1/switches/sw9/ports/p1/queues/3/ecn"
    assert report(1) == []
    r = ops.put(url, json={"kmin_bytes": 50000})
    assert r.status_code == 202, r.text
    c1 = r.json()["changes"][0]["id"]
    r = ops.put("/api/v1/switches/sw9/ports/p1/queues/0/ecn", json={"pmax": 0.2})
    c0 = r.json()["changes"][0]["id"]
    assert report(2) == [f"c{c1}", f"c{c0}"]
    ch = wait_for(lambda: (lambda x: x if x["state"] == "timed_out" else None)(
        ops.json(f"/api/v1/changes/{c1}")), 40, interval=0.5, what="timed out")
    assert ch["error"]["code"] == "NO_ANSWER" and "may have applied it" in ch["error"]["message"], ch
    assert ch["in_doubt"] is True, ch

    def in_doubt(query=""):
        return [c["id"] for c in ops.json(f"/api/v1/changes?state=in_doubt{query}")["items"]]

    # both sent, both timed out: what an operator may have to settle (c0 times out a moment after c1)
    wait_for(lambda: in_doubt() == [c0, c1], 10, interval=0.2, what="c0 and c1 listed in doubt")
    assert in_doubt("&agent=sw9&kind=ecn") == [c0, c1] and in_doubt("&agent=sw8") == []
    r = ops.get("/api/v1/changes?state=doubtful")
    assert r.status_code == 400 and r.json()["pointer"] == "state" and "in_doubt" in r.json()["detail"], r.text
    # Kmax 80 KB is valid only with Kmin 50 KB: accepted, after c1; Kmax 40 KB is refused
    bad = ops.put(url, json={"kmax_bytes": 40000}).json()
    assert bad["code"] == "BAD_THRESHOLD_ORDER" and "still on the way" in bad["detail"], bad
    r = ops.put(url, json={"kmax_bytes": 80000})
    assert r.status_code == 202, r.text
    c2 = r.json()["changes"][0]["id"]
    assert ops.json(f"/api/v1/changes/{c2}")["after"] == [c1]
    # the agent is back: it had applied c1, so c2 goes; c0 it had not (no outcome)
    assert report(3, [{"id": f"c{c1}", "outcome": "applied", "values": {"kmin_bytes": 50000}}]) == [f"c{c2}"]
    ch = ops.json(f"/api/v1/changes/{c1}")
    assert ch["state"] == "applied" and ch["error"] is None and ch["in_doubt"] is False, ch
    ch = ops.json(f"/api/v1/changes/{c0}")
    assert ch["state"] == "timed_out" and ch["in_doubt"] is False, ch
    assert "nor in a report it made after it: not applied" in ch["error"]["message"], ch
    assert in_doubt() == []
    # c3 sent (c2 applied), and sw9 never reports again (gone for good): an operator who checked
    # the switch settles it; Kmax 90 KB (c4), valid only with Kmin 60 KB, waited for it and fails
    # with it
    c3 = ops.put(url, json={"kmin_bytes": 60000}).json()["changes"][0]["id"]
    assert report(4, [{"id": f"c{c2}", "outcome": "applied", "values": {"kmax_bytes": 80000}}]) == [f"c{c3}"]
    wait_for(lambda: ops.json(f"/api/v1/changes/{c3}")["in_doubt"], 40, interval=0.5, what="c3 in doubt")
    assert in_doubt() == [c3]
    env = dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN_FILE=os.path.join(d.workdir, "ops.token"))
    out = subprocess.run([binary("rocefabctl"), "changes", "--state", "in_doubt"], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = out.stdout.splitlines()[1:]
    assert len(rows) == 1 and rows[0].split()[0] == str(c3) and "timed_out (in doubt)" in rows[0], out.stdout
    r = ops.put(url, json={"kmax_bytes": 90000})
    assert r.status_code == 202 and r.json()["changes"][0]["after"] == [c3], r.text
    c4 = r.json()["changes"][0]["id"]
    settle = f"/api/v1/changes/{c3}/settle"
    d.token("viewer", "viewer")
    assert d.client("viewer").post(settle, json={"applied": False, "reason": "x"}).status_code == 403
    for body, where in (({"applied": False}, "/reason"), ({"reason": "checked"}, "/applied"),
                        ({"applied": "no", "reason": "checked"}, "/applied"),
                        ({"applied": False, "reason": "a\nb"}, "/reason"), ({"applied": False, "reason": "  "}, "/reason"),
                        ([], "/")):
        r = ops.post(settle, json=body)
        assert r.status_code == 400 and r.json()["code"] == "SCHEMA_VIOLATION" and r.json()["pointer"] == where, (body, r.text)
    r = ops.post(settle, json={"applied": False, "reason": "x", "by": "me"})
    assert r.status_code == 400 and r.json()["code"] == "UNKNOWN_FIELD" and r.json()["pointer"] == "/by", r.text
    r = ops.post(f"/api/v1/changes/{c1}/settle", json={"applied": False, "reason": "x"})
    assert r.status_code == 409 and r.json()["code"] == "NOT_IN_DOUBT", r.text
    assert ops.post("/api/v1/changes/9999/settle", json={"applied": False, "reason": "x"}).status_code == 404
    assert ops.json(f"/api/v1/changes/{c3}")["in_doubt"] is True  # nothing changed
    out = subprocess.run([binary("rocefabctl"), "settle", str(c3), "not-applied", "--reason",
                          "sw9 decommissioned; Kmin read 100 KB on its console"], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"change:    {c3} (batch " in out.stdout and "settled:   not applied by ops at " in out.stdout, out.stdout
    ch = ops.json(f"/api/v1/changes/{c3}")
    assert ch["state"] == "timed_out" and ch["in_doubt"] is False, ch
    assert {k: v for k, v in ch["settled"].items() if k != "at"} == {
        "by": "ops", "reason": "sw9 decommissioned; Kmin read 100 KB on its console", "applied": False}, ch
    assert ch["settled"]["at"] == ch["updated"], ch
    assert "settled by ops: not applied" in ch["error"]["message"], ch
    ch = ops.json(f"/api/v1/changes/{c4}")
    assert ch["state"] == "failed" and ch["error"]["code"] == "DEPENDS_ON_FAILED", ch
    assert in_doubt() == []
    out = subprocess.run([binary("rocefabctl"), "settle", str(c3), "applied", "--reason", "again"], env=env,
                         capture_output=True, text=True)
    assert out.returncode != 0 and "NOT_IN_DOUBT" in out.stderr, out.stdout + out.stderr


def test_control_api_matches_its_document(world):
    """Responses of rocefab-sim's control API against schemas/sim-control.yaml."""
    import jsonschema
    import yaml
    with open(os.path.join(ROOT, "schemas", "sim-control.yaml")) as f:
        doc = yaml.safe_load(f)
    resolver = jsonschema.RefResolver.from_schema(doc)

    def check(path_tmpl, method, r):
        op = doc["paths"][path_tmpl][method]
        spec = op["responses"][str(r.status_code)]
        if "$ref" in spec:
            spec = resolver.resolve(spec["$ref"])[1]
        ctype = r.headers["Content-Type"].split(";")[0]
        schema = spec["content"][ctype]["schema"]
        jsonschema.Draft202012Validator(schema, resolver=resolver).validate(r.json())

    d, sim = fabric(world, os.path.join(LIVE, "faults.json"), interval="0.5s")
    sim.start()
    wait_for(lambda: sim.ctl("GET", "/v1/status").get("agents", {}).get("delivered", 0) > 0, 10,
             what="agents delivering")
    u = sim.url
    check("/v1/status", "get", requests.get(u + "/v1/status"))
    check("/v1/clock", "get", requests.get(u + "/v1/clock"))
    check("/v1/clock", "put", requests.put(u + "/v1/clock", json={"pace": 0.01}))
    check("/v1/clock", "put", requests.put(u + "/v1/clock", json={"pace": "fast"}))
    check("/v1/devices", "get", requests.get(u + "/v1/devices"))
    for dev in ("h0", "leaf0"):
        check("/v1/devices/{device}", "get", requests.get(f"{u}/v1/devices/{dev}"))
        check("/v1/devices/{device}/counters", "get", requests.get(f"{u}/v1/devices/{dev}/counters"))
        check("/v1/devices/{device}/config", "get", requests.get(f"{u}/v1/devices/{dev}/config"))
    check("/v1/devices/{device}", "get", requests.get(f"{u}/v1/devices/nosuch"))
    ecn = "/v1/devices/{device}/ports/{port}/queues/{queue}/ecn"
    check(ecn, "put", requests.put(f"{u}/v1/devices/leaf0/ports/h0/queues/3/ecn", json={"pmax": 0.5}))
    r = requests.put(f"{u}/v1/devices/leaf0/ports/h0/queues/3/ecn", json={"pmax": 5})
    check(ecn, "put", r)
    assert r.json()["pointer"] == "/pmax"
    check("/v1/devices/{device}/ports/{port}/pfc", "put",
          requests.put(f"{u}/v1/devices/leaf0/ports/h0/pfc", json={"alpha_shift": -2}))
    check("/v1/faults", "post", requests.post(u + "/v1/faults", json={"type": "lossy_link", "link": "h0-leaf0",
                                                                       "loss": 0.001}))
    check("/v1/faults", "post", requests.post(u + "/v1/faults", json={"type": "lossy_link", "link": "h0-h1"}))
    check("/v1/faults", "get", requests.get(u + "/v1/faults"))
    check("/v1/faults/{id}", "delete", requests.delete(u + "/v1/faults/0"))
    r = requests.post(u + "/v1/probes", json={"probes": [{"src": "h0", "dst": "h1", "count": 2}]})
    check("/v1/probes", "post", r)
    run = r.json()["ids"][0]
    check("/v1/probes/{ids}", "get", requests.get(f"{u}/v1/probes/{run},999999"))
    check("/v1/probes", "post", requests.post(u + "/v1/probes", json={"probes": []}))
    check("/v1/probes", "post", requests.post(u + "/v1/probes", json={"probes": [{"src": "h0", "dst": "nosuch"}]}))
    check("/v1/summary", "get", requests.get(u + "/v1/summary"))


def test_real_agent_started_before_the_simulator_stands_in_for_a_switch(world):
    """rocefab-agent --backend sim for a switch, started before the simulator answers: it keeps
    reporting (with an error) and reports the switch once the simulator is up."""
    d = world.daemon().start()
    _, tokf = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    sim = world.sim(os.path.join(LIVE, "faults.json"), daemon=d, token_file=tokf, interval="0.3s",
                    skip=("leaf1",))
    ag = world.sim_agent("leaf1", d, sim).start()
    c = d.client("viewer")
    wait_for(lambda: c.get("/api/v1/agents/leaf1").status_code == 200, 10, what="leaf1's first report")
    errs = c.json("/api/v1/agents/leaf1")["errors"]
    assert errs and errs[0]["code"] == "SIM_UNREACHABLE", errs
    assert ag.proc.alive()
    sim.start()
    wait_for(lambda: any(s["id"] == "leaf1" for s in c.json("/api/v1/switches")["items"]), 10,
             what="leaf1 as a switch")
    sw = c.json("/api/v1/switches/leaf1")
    assert {p["port"] for p in sw["port_list"]} == {"h4", "h5", "h6", "h7", "spine0", "spine1"}
    assert c.json("/api/v1/agents/leaf1")["errors"] == []


def test_lldp_neighbour_of_a_linux_host_gives_a_link(world):
    """The linux backend reads lldpd's neighbours (here from a recorded tree): the host's port
    shows a link to the switch port LLDP names, whose end is unknown until that switch reports."""
    from conftest import copy_tree
    d = world.daemon().start()
    _, tokf = d.token("agents", "agent", agent="gpu-a1")
    d.token("viewer", "viewer")
    tree = copy_tree("gpu-a1", os.path.join(world.tmp, "gpu-a1"))
    os.makedirs(os.path.join(tree, "lldp"))
    with open(os.path.join(tree, "lldp", "neighbors.json0"), "w") as f:
        f.write('{"lldp":[{"interface":[{"name":"enp65s0f0np0","chassis":[{"name":[{"value":"leaf7"}]}],'
                '"port":[{"id":[{"type":"ifname","value":"Ethernet12"}]}]}]}]}')
    world.agent("gpu-a1", tree, d.url, tokf).start()
    c = d.client("viewer")
    links = wait_for(lambda: c.json("/api/v1/links")["items"], 10, what="a link")
    l = links[0]
    ends = {l["a"]["node"]: l["a"], l["b"]["node"]: l["b"]}
    assert ends["gpu-a1"]["port"] == "mlx5_0:1" and ends["gpu-a1"]["state"] == "up"
    assert ends["leaf7"]["port"] == "Ethernet12" and ends["leaf7"]["state"] == "unknown"
    assert ends["leaf7"]["port_id"] is None
    # the link is taken at the word of the end that reported: up (counted so), not down
    assert l["state"] == "up" and c.json("/api/v1/links")["up"] == 1


def test_serve_reports_the_effective_pace_when_it_cannot_keep_up(world):
    """The demo fabric asked to run at 10 fabric seconds per second (far beyond this machine):
    the clock says so instead of pretending; a modest pace keeps up."""
    # above 1 with counters going to rocefabd: refused (fabric time would run ahead of its
    # clock, which refuses reports a minute ahead)
    r = subprocess.run([binary("rocefab-sim"), "serve", DEMO, "--pace", "2", "--agents", "http://127.0.0.1:9",
                        "--token-file", "/nonexistent"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "CLOCK_AHEAD" in r.stderr and "at most 1" in r.stderr, r.stderr
    sim = world.sim(DEMO, pace=10)
    sim.start()
    clock = wait_for(lambda: (lambda k: k if k["keeping_up"] is False else None)(sim.ctl("GET", "/v1/clock")),
                     10, interval=0.2, what="the clock saying it cannot keep up")
    assert clock["pace"] == 10
    assert 0 < clock["pace_effective"] < 1, clock
    sim.ctl("PUT", "/v1/clock", {"pace": 0.002})
    # a modest pace: measure it here too, over a window longer than the simulator's own (1 s)
    k1, w1 = sim.ctl("GET", "/v1/clock"), time.monotonic()
    time.sleep(1.5)
    k2, w2 = sim.ctl("GET", "/v1/clock"), time.monotonic()
    ours = (k2["fabric_time_ns"] - k1["fabric_time_ns"]) / 1e9 / (w2 - w1)
    assert abs(ours - 0.002) < 0.0004, ours
    assert k2["keeping_up"] is True and abs(k2["pace_effective"] - 0.002) < 0.0004, k2
    # paused: time stands still
    sim.pause()
    t = sim.ctl("GET", "/v1/clock")["fabric_time_ns"]
    time.sleep(0.3)
    assert sim.ctl("GET", "/v1/clock")["fabric_time_ns"] == t
