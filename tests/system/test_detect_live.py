"""The PFC deadlock and storm detector live: rocefab-sim serve with its virtual agents (their
fast PFC lane every 200 ms) and rocefabd, through REST only.  A deadlock injected through the
simulator's control API and a pause storm appear in /api/v1/alerts with the right ports; in auto
mode the change and its reversal are in /api/v1/changes and the fabric's rates recover; in advise
mode nothing changes until POST /api/v1/alerts/{id}/mitigate.

Times in a paced simulation: the counters' clock is fabric time (pace 0.02: 20 ms of fabric time
per second), so the detector's restore time runs in fabric time too (restore_ms 20 = 1 s here)."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import ROOT, SIM_AGENTS, binary, ctl, stays, wait_for

LIVE = os.path.join(ROOT, "tests", "sim", "live")
LOOP = [{"switch": "leaf1", "dst": "h0", "via": "spine0"}, {"switch": "spine0", "dst": "h0", "via": "leaf1"}]
FAST = 0.2  # the agents' fast PFC interval (rocefab-sim serve --pfc-interval default), s


def fabric(world, scenario, extra_conf=""):
    d = world.daemon(extra_conf=extra_conf).start()
    _, agent_tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    sim = world.sim(scenario, daemon=d, token_file=agent_tok, interval="0.3s").start()
    c = d.client("viewer")
    wait_for(lambda: lane_ready(c), 15, what="the fast PFC lane")
    return d, sim, c, d.client("ops")


def lane_ready(c):
    st = c.json("/api/v1/detector")
    return st["lane"]["ports"] > 0 and st["runs"] > 3 and c.json("/api/v1/links")["count"] > 0


def h5_linked(c):
    """h5's port is in the detector's snapshot with readings, linked to leaf1:h5 (a link counts
    once both ends report each other)"""
    snap = c.get("/api/v1/detector/snapshot")
    if snap.status_code != 200:
        return False
    return any(n["name"] == "h5" and any(p["peer"] == "leaf1:h5" and not p.get("silent") for p in n["ports"])
               for n in snap.json()["nodes"])


def with_real_agents(world, devs, extra_conf=""):
    """faults.json's fabric, the nodes devs reported by real rocefab-agents (--backend sim) rather
    than the simulator's virtual ones, linked in the fast lane: rocefabd, the simulator, the
    agents (started), a viewer's client."""
    d = world.daemon(extra_conf=extra_conf).start()
    _, tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    sim = world.sim(os.path.join(LIVE, "faults.json"), daemon=d, token_file=tok, interval="0.3s",
                    skip=tuple(devs)).start()
    agents = []
    for dev in devs:
        agents.append(world.sim_agent(dev, d, sim, tok).start())
    c = d.client("viewer")
    wait_for(lambda: lane_ready(c) and h5_linked(c), 20, what=f"{', '.join(devs)} in the fast lane, linked")
    return d, sim, agents, c


def alerts(c, kind=None, state="active"):
    items = c.json("/api/v1/alerts", params={"state": state})["items"]
    return [a for a in items if kind is None or a["kind"] == kind]


def detector_changes(c):
    return sorted((x for x in c.json("/api/v1/changes", params={"kind": "pfc"})["items"]
                   if x["actor"].startswith("detector")), key=lambda x: x["id"])


def inject(sim, fault):
    return sim.ctl("POST", "/v1/faults", fault, expect=201)["id"]


def rx_rate(c, port, t0):
    """The receive rates (bytes/s) of a host port's samples read after t0 (Unix s)."""
    doc = c.json(f"/api/v1/ports/{port}/counters", params={"names": "roce_rx_bytes"})
    return [p["rate"] for p in doc["series"][0]["points"] if p["t"] > t0 and p.get("rate") is not None]


def fabric_now(sim):
    clock = sim.ctl("GET", "/v1/clock")
    return (clock["epoch_ns"] + clock["fabric_time_ns"]) / 1e9


def test_live_deadlock_named_then_broken_restored_and_held(world):
    d, sim, c, ops = fabric(world, os.path.join(LIVE, "deadlock.json"))
    r = ops.put("/api/v1/detector/config", json={"deadlock_mode": "auto", "restore_ms": 20})
    assert r.status_code == 200 and r.json() == {"deadlock_mode": "auto", "storm_mode": "advise",
                                                  "restore_ms": 20}, r.text
    assert not alerts(c, "deadlock")
    inject(sim, {"type": "route_override", "routes": LOOP})
    t0 = time.monotonic()
    a = wait_for(lambda: (alerts(c, "deadlock") or [None])[0], 10, interval=0.02, what="a deadlock alert")
    took = time.monotonic() - t0
    # the cycle, in order, with its priority and evidence; found within two fast intervals of
    # the freeze (a few ms of fabric time after the loop: well under one interval), plus one
    # pass and the alert's write
    assert [f"{q['node']}:{q['port']}" for q in a["details"]["ports"]] == ["leaf1:spine0", "spine0:leaf1"], a
    assert a["subject"] == "priority 3: leaf1:spine0 -> spine0:leaf1"
    assert a["details"]["priority"] == 3 and all(q["tx_bytes"] == 0 and q["queue_bytes"] > 0
                                                 for q in a["details"]["ports"]), a
    assert took <= 2 * FAST + 0.3, f"the deadlock alert came {took:.2f} s after the loop"
    # auto: the break is an audited change by the detector, then its reversal...
    ch = wait_for(lambda: (lambda x: x if len(x) >= 2 and all(y["state"] == "applied" for y in x[:2]) else None)(
        detector_changes(c)), 15, what="the break and its reversal applied")
    brk, back = ch[0], ch[1]
    assert brk["actor"] == "detector" and brk["reason"].startswith("deadlock #"), brk
    assert brk["params"] == {"enable": 0} and back["params"] == {"enable": 8}
    assert (brk["target"]["agent"], brk["target"]["port"]) == (back["target"]["agent"], back["target"]["port"])
    assert "lossless again" in back["reason"]
    # ... and since the loop is still in the routes, the cycle forms again: persistent, held
    p = wait_for(lambda: (alerts(c, "persistent") or [None])[0], 15, what="a persistent alert")
    assert "fix routing" in p["evidence"]
    held = wait_for(lambda: (lambda x: x[2] if len(x) >= 3 and x[2]["state"] == "applied" else None)(
        detector_changes(c)), 15, what="the break held")
    assert held["params"] == {"enable": 0} and "until the routing is fixed" in held["reason"]
    det = c.json("/api/v1/detector")
    assert det["holds"] == 1
    (h,) = det["held"]  # which queue, and that it lifts only when an operator puts it back
    assert (h["node"], h["port"], h["priority"], h["class"], h["until_us"]) == (
        held["target"]["agent"], held["target"]["port"], 3, "persistent", None), h
    assert h["finding"] == p["details"]["id"], (h, p)
    # each alert lists the detector's changes on its finding: the break and its restoration on
    # the deadlock's, the held break on the persistent one's
    assert [(x["by"], x["op"], x["change"]) for x in wait_for(
        lambda: (lambda x: x if len(x) >= 2 else None)(c.json(f"/api/v1/alerts/{a['id']}")["mitigations"]), 5,
        what="the restoration on the deadlock's alert")] == [
        ("detector", "lossless_off", brk["id"]), ("detector", "restore", back["id"])]
    assert [(x["op"], x["change"]) for x in c.json(f"/api/v1/alerts/{p['id']}")["mitigations"]] == [
        ("lossless_off", held["id"])]
    out = ctl(d, "viewer", "detector").stdout
    assert (f"held: {h['node']}:{h['port']} priority 3 lossy (persistent #{h['finding']}, " in out
            and "until an operator puts it back" in out), out
    # the metrics say so too
    m = wait_for(lambda: (lambda t: t if 'rocefab_detector_changes_total{op="lossless_off",outcome="applied"} 2'
                          in t else None)(c.get("/metrics").text), 5, what="the held break in /metrics")
    assert 'rocefab_detector_changes_total{op="restore",outcome="applied"} 1' in m
    assert 'rocefab_detector_findings{class="persistent"} 1' in m and 'rocefab_detector_restore_failed 0' in m
    assert "rocefab_pfc_lane_reports_total" in m


def test_live_storm_isolated_rates_recover_then_restored(world):
    d, sim, c, ops = fabric(world, os.path.join(LIVE, "faults.json"))
    assert ops.put("/api/v1/detector/config", json={"storm_mode": "auto", "restore_ms": 20}).status_code == 200
    # h1 -> h6 crosses leaf1 like the traffic for h5: a victim of h5's storm, not its culprit
    base = wait_for(lambda: (lambda r: r if len(r) >= 3 else None)(rx_rate(c, "h6:nic0:1", 0)), 10,
                    what="h6's rate before the storm")
    before = sum(base[-3:]) / 3
    fid = inject(sim, {"type": "pause_storm", "host": "h5"})
    t0 = fabric_now(sim)
    a = wait_for(lambda: (alerts(c, "pause_storm") or [None])[0], 10, interval=0.02, what="a pause_storm alert")
    assert a["subject"] == "h5 nic0:1 priority 3" and a["details"]["culprit"] == "h5", a
    assert a["details"]["suggested"] == {"node": "leaf1", "port": "h5", "priority": 3, "change": "lossless_off"}
    assert not [x for x in alerts(c, "pause_storm") if x["details"]["culprit"] != "h5"]
    ch = wait_for(lambda: (lambda x: x[0] if x and x[0]["state"] == "applied" else None)(detector_changes(c)), 15,
                  what="the isolation applied")
    assert (ch["target"]["agent"], ch["target"]["port"], ch["params"]) == ("leaf1", "h5", {"enable": 0}), ch
    assert ch["reason"].startswith("pause_storm #")
    # the victim's rate comes back
    wait_for(lambda: (lambda r: len(r) >= 2 and min(r[-2:]) >= 0.9 * before)(rx_rate(c, "h6:nic0:1", t0)), 20,
             what="h6's rate back to 90% of what it was")
    # while h5 keeps pausing, the port stays isolated; once it is quiet for the restore time, back
    stays(lambda: len(detector_changes(c)) == 1, 1.0, what="nothing put back while h5 pauses")
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
    back = wait_for(lambda: (lambda x: x[1] if len(x) >= 2 and x[1]["state"] == "applied" else None)(
        detector_changes(c)), 20, what="the port back in lossless mode")
    assert back["params"] == {"enable": 8} and "has not paused" in back["reason"], back
    wait_for(lambda: not alerts(c, "pause_storm"), 10, what="the storm alert cleared")
    assert alerts(c, "pause_storm", state="cleared")
    # an alert over cannot be mitigated: a conflict (409), not "not found"
    r = ops.post(f"/api/v1/alerts/{a['id']}/mitigate")
    assert r.status_code == 409 and r.json()["code"] == "NOT_ACTIVE" and "is over" in r.json()["detail"], r.text
    assert "no longer finds it" in r.json()["detail"] and "its agents silent" in r.json()["detail"], r.text
    # the cleared alert says what the detector did: isolated, then put back (its evidence is
    # the last seen, "(isolated)"; before, nothing on it said the port was lossless again); the
    # restoration once the detector's next pass saw it applied
    m = wait_for(lambda: (lambda x: x if len(x) >= 2 else None)(c.json(f"/api/v1/alerts/{a['id']}")["mitigations"]),
                 5, what="the restoration on the alert")
    assert [(x["by"], x["op"], x["change"]) for x in m] == [("detector", "lossless_off", ch["id"]),
                                                            ("detector", "restore", back["id"])], m
    assert m[1]["reason"] == back["reason"], m
    out = ctl(d, "viewer", "alerts", str(a["id"])).stdout
    assert f"mitigated by detector at {m[0]['at']}: change {ch['id']} (pause_storm #" in out, out
    assert f"restored by detector at {m[1]['at']}: change {back['id']} (pause_storm #" in out, out


def test_a_held_slow_receivers_alert_says_when_it_was_last_slow(world):
    """A slow receiver's alert stays raised for 25 intervals after its last slow one (its
    pauses come with its bursts); meanwhile its last seen is that interval's, not each pass's
    (an operator's trial: LAST SEEN moved on while the summary said "N intervals ago")."""
    d, sim, c, ops = fabric(world, os.path.join(ROOT, "sim", "scenarios", "demo.json"))
    sim.ctl("DELETE", "/v1/faults/0")  # (the demo's scheduled storm)
    fid = inject(sim, {"type": "slow_receiver", "host": "h5", "rate_gbps": 5})
    a = wait_for(lambda: (alerts(c, "slow_receiver") or [None])[0], 20, what="a slow_receiver alert")
    assert a["subject"] == "h5 nic0:1 priority 3", a
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)

    def still():
        """the alert, while its last seen stays put for 1.5 s (and it is still active)"""
        one = c.json(f"/api/v1/alerts/{a['id']}")
        time.sleep(1.5)
        two = c.json(f"/api/v1/alerts/{a['id']}")
        held = two["state"] == "active" and " intervals ago" in two["evidence"]
        return two if held and one["last_seen"] == two["last_seen"] else None
    held = wait_for(still, 10, what="the held alert's last seen standing still")
    assert held["last_seen"] < time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1)), held
    wait_for(lambda: c.json(f"/api/v1/alerts/{a['id']}")["state"] == "cleared", 20, what="the alert cleared")


def h5_alert_then_its_agent_killed(world, fault):
    """faults.json's fabric with h5's real agent, fault (on h5) injected, its alert raised from
    h5's own readings; then the agent killed (h5 leaves the snapshot's readings after 3
    intervals, 0.6 s: its port stays, silent) and the same alert read from leaf1's side.
    rocefabd, the simulator, a viewer's client, the fault's id, the alert before and after."""
    d, sim, (agent,), c = with_real_agents(world, ("h5",))
    fid = inject(sim, fault)
    a = wait_for(lambda: (alerts(c, fault["type"]) or [None])[0], 20, what=f"a {fault['type']} alert")
    assert a["details"]["culprit"] == "h5" and a["details"]["source_silent"] is False, a
    agent.stop(signal.SIGKILL)
    a2 = wait_for(lambda: (lambda x: x if x["details"].get("source_silent") else None)(
        c.json(f"/api/v1/alerts/{a['id']}")), 10, interval=0.1, what="the alert read from leaf1's side")
    assert a2["state"] == "active" and a2["details"]["culprit"] == "h5", a2
    assert "no readings of its own" in a2["evidence"], a2
    return d, sim, c, fid, a, a2


def test_a_storm_goes_on_and_is_named_when_its_hosts_agent_dies(world):
    """A hung host's NIC pauses its switch port while its agent is dead: the classic PFC storm.
    h5's agent is a real rocefab-agent (--backend sim), killed during the storm: the alert goes on
    (the same one), now read from leaf1's side of the link (source_silent), and clears when the
    storm ends; a storm that begins while the agent is dead is named from that side alone.  Before, a host without readings was no finding at all: the alert cleared once
    its agent stopped, and the storm went unnamed while the switch still reported it."""
    d, sim, c, fid, a, a2 = h5_alert_then_its_agent_killed(world, {"type": "pause_storm", "host": "h5"})
    assert a2["details"]["paused"]["node"] == "leaf1", a2
    assert a2["details"]["suggested"]["node"] == "leaf1" and a2["details"]["suggested"]["port"] == "h5", a2
    snap = c.json("/api/v1/detector/snapshot")
    assert [p for n in snap["nodes"] if n["name"] == "h5" for p in n["ports"]][0]["silent"] is True, snap
    # it goes on: the same alert, and no other, over several seconds without h5's agent
    stays(lambda: [x["id"] for x in alerts(c, "pause_storm")] == [a["id"]], 3, what="the one alert")
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
    wait_for(lambda: c.json(f"/api/v1/alerts/{a['id']}")["state"] == "cleared", 10, what="the alert cleared")
    # a storm that begins while the agent is dead is named from the switch's side alone; in auto
    # mode, isolated, held while the switch still counts h5's pauses, and put back once over
    ops = d.client("ops")
    assert ops.put("/api/v1/detector/config", json={"storm_mode": "auto", "restore_ms": 20}).status_code == 200
    fid = inject(sim, {"type": "pause_storm", "host": "h5"})
    b = wait_for(lambda: (alerts(c, "pause_storm") or [None])[0], 10, what="the second storm's alert")
    assert b["id"] != a["id"] and b["details"]["culprit"] == "h5" and b["details"]["source_silent"] is True, b
    assert b["subject"] == a["subject"], (a, b)
    ch = wait_for(lambda: (lambda x: x[0] if x and x[0]["state"] == "applied" else None)(detector_changes(c)), 15,
                  what="the isolation applied")
    assert (ch["target"]["agent"], ch["target"]["port"], ch["params"]) == ("leaf1", "h5", {"enable": 0}), ch
    wait_for(lambda: c.json(f"/api/v1/alerts/{b['id']}")["details"].get("mitigated"), 10, what="the alert mitigated")
    # (h5 still pauses: nothing is put back meanwhile, and the alert goes on)
    stays(lambda: len(detector_changes(c)) == 1 and [x["id"] for x in alerts(c, "pause_storm")] == [b["id"]], 1.0,
          what="the isolation and the one alert")
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
    back = wait_for(lambda: (lambda x: x[1] if len(x) >= 2 and x[1]["state"] == "applied" else None)(
        detector_changes(c)), 20, what="the port back in lossless mode")
    assert back["params"] == {"enable": 8} and "has not paused" in back["reason"], back
    wait_for(lambda: not alerts(c, "pause_storm"), 10, what="the storm alert cleared")


def test_a_slow_receiver_is_named_when_its_hosts_agent_dies(world):
    """A slow receiver (h5 taking 5 Gb/s of h0's flow) whose agent is killed: its alert goes on,
    the same one, read from leaf1's side of the link (source_silent: the pause leaf1:h5 receives,
    the bytes it sends h5), and clears once the fault is gone; one that begins while the agent
    is dead is named from that side alone.  Before, its switch port's queue was called
    congestion, which is no alert (only the pingmesh named the host)."""
    d, sim, c, fid, a, a2 = h5_alert_then_its_agent_killed(world, {"type": "slow_receiver", "host": "h5",
                                                                    "rate_gbps": 5})
    assert (a2["details"]["paused"]["node"], a2["details"]["paused"]["port"]) == ("leaf1", "h5"), a2
    stays(lambda: [x["id"] for x in alerts(c, "slow_receiver")] == [a["id"]], 4, what="the one alert")
    out = ctl(d, "viewer", "alerts", str(a["id"])).stdout
    assert "no readings of its own: read from leaf1 h5; check the host and its agent" in out, out
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
    wait_for(lambda: c.json(f"/api/v1/alerts/{a['id']}")["state"] == "cleared", 20, what="the alert cleared")
    inject(sim, {"type": "slow_receiver", "host": "h5", "rate_gbps": 5})
    b = wait_for(lambda: (alerts(c, "slow_receiver") or [None])[0], 20, what="the second slow receiver's alert")
    assert b["id"] != a["id"] and b["subject"] == a["subject"] and b["details"]["source_silent"] is True, (a, b)
    assert not alerts(c, "pause_storm"), alerts(c)


def test_an_isolated_storm_stays_raised_when_both_ends_fall_silent(world):
    """A storm isolated in auto mode, then both h5's agent and leaf1's (real rocefab-agents,
    --backend sim) killed: nothing read says the storm is over, so leaf1's port stays out of
    lossless mode and its alert stays active, the same one, as it was last read (details.unread,
    its last seen standing still).  Before, the alert cleared while the port stayed isolated."""
    d, sim, agents, c = with_real_agents(world, ("h5", "leaf1"))
    # (through rocefabctl, as an operator would: the settings log keeps why)
    out = ctl(d, "ops", "detector", "config", "storm_mode=auto", "restore_ms=20", "--reason", "trial")
    assert out.returncode == 0 and out.stdout == "deadlocks advise, storms auto, restore 20 ms\n", out
    assert c.json("/api/v1/settings/log", params={"setting": "detector/config"})["items"][0]["reason"] == "trial"
    inject(sim, {"type": "pause_storm", "host": "h5"})
    a = wait_for(lambda: (alerts(c, "pause_storm") or [None])[0], 10, what="a pause_storm alert")
    ch = wait_for(lambda: (lambda x: x[0] if x and x[0]["state"] == "applied" else None)(detector_changes(c)), 15,
                  what="the isolation applied")
    assert (ch["target"]["agent"], ch["target"]["port"], ch["params"]) == ("leaf1", "h5", {"enable": 0}), ch
    for ag in agents:
        ag.stop(signal.SIGKILL)
    u = wait_for(lambda: (lambda x: x if x["details"].get("unread") else None)(c.json(f"/api/v1/alerts/{a['id']}")),
                 10, interval=0.1, what="the alert kept, unread")
    assert u["state"] == "active" and u["details"]["culprit"] == "h5" and u["details"]["mitigated"], u
    assert "no readings from it or from leaf1:h5" in u["evidence"], u
    # it stays so, its last seen standing still, the port held
    stays(lambda: (lambda x: x["state"] == "active" and x["last_seen"] == u["last_seen"])(
        c.json(f"/api/v1/alerts/{a['id']}")), 2, what="the alert active, its last seen unmoved")
    held = c.json("/api/v1/detector")["held"]
    assert [(h["node"], h["port"]) for h in held] == [("leaf1", "h5")], held
    assert [x["id"] for x in alerts(c, "pause_storm")] == [a["id"]] and len(detector_changes(c)) == 1
    out = ctl(d, "viewer", "alerts", str(a["id"])).stdout
    assert "pauses:  leaf1 h5: no pause readings (kept out of lossless mode" in out, out


def test_a_failed_restore_clears_once_an_operator_puts_the_port_back(world):
    """A storm isolated (auto), its restore failed (leaf1's agent stopped: the change timed
    out), the storm back (no more tries), then an operator puts the port back into lossless
    mode: the detector's hold is theirs now, nothing is left for it to try, and the
    restore_failed alert clears.  Before, it stayed active until rocefabd restarted."""
    d, sim, (ag,), c = with_real_agents(world, ("leaf1",), extra_conf="[changes]\ndeadline = 1s\n")
    ops = d.client("ops")
    assert ops.put("/api/v1/detector/config", json={"storm_mode": "auto", "restore_ms": 20}).status_code == 200
    fid = inject(sim, {"type": "pause_storm", "host": "h5"})
    wait_for(lambda: (lambda x: x and x[0]["state"] == "applied")(detector_changes(c)), 15,
             what="the isolation applied")
    ag.proc.p.send_signal(signal.SIGSTOP)
    try:
        sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
        rf = wait_for(lambda: (alerts(c, "restore_failed") or [None])[0], 30, interval=0.2,
                      what="the restore timed out: a restore_failed alert")
        assert rf["subject"] == "leaf1:h5 priority 3", rf
        # the storm back: the restore is not tried again (the one in flight times out)
        inject(sim, {"type": "pause_storm", "host": "h5"})
        wait_for(lambda: all(x["state"] != "pending" for x in detector_changes(c)), 30, interval=0.2,
                 what="no restore of the detector's in flight")
    finally:
        ag.proc.p.send_signal(signal.SIGCONT)
    assert ops.put("/api/v1/detector/config", json={"storm_mode": "advise"}).status_code == 200
    assert [x["id"] for x in alerts(c, "restore_failed")] == [rf["id"]]
    out = ctl(d, "ops", "set", "pfc", "leaf1", "h5", "enable=8", "--reason", "storm handled by hand", "--wait=20")
    assert out.returncode == 0 and "applied" in out.stdout, out
    wait_for(lambda: not c.json("/api/v1/detector")["held"], 15, what="the hold given up to the operator")
    wait_for(lambda: not alerts(c, "restore_failed"), 10, what="the restore_failed alert cleared")
    assert "rocefab_detector_restore_failed 0" in c.get("/metrics").text


def test_live_findings_clear_when_the_lane_falls_silent(world):
    """Every agent gone (the simulator killed): without readings the detector knows nothing, so
    its findings and their alerts clear, and the lane's rate drops to 0.  Before, it kept the
    last findings (a storm alert, 4 stuck queues in /metrics) for ever, and the rate was an
    average since the start."""
    d, sim, c, ops = fabric(world, os.path.join(LIVE, "faults.json"))
    inject(sim, {"type": "pause_storm", "host": "h5"})  # (advise: nothing changes)
    wait_for(lambda: (alerts(c, "pause_storm") or [None])[0], 10, what="a pause_storm alert")
    assert c.json("/api/v1/detector")["lane"]["reports_per_s"] > 0
    assert c.json("/api/v1/detector")["lane"]["fresh_ports"] > 0
    sim.stop(signal.SIGKILL)
    wait_for(lambda: not alerts(c, "pause_storm"), 10, what="the storm alert cleared")
    det = c.json("/api/v1/detector")
    assert det["findings"] == [] and det["stuck_queues"] == 0 and det["has_snapshot"] is False, det
    # no port has fresh readings (the count stayed at the fabric's for a minute)
    assert det["lane"]["fresh_ports"] == 0 and det["lane"]["ports"] > 0, det["lane"]
    text = c.get("/metrics").text
    assert 'rocefab_detector_findings{class="pause_storm"} 0' in text and "\nrocefab_pfc_lane_ports 0\n" in text
    wait_for(lambda: c.json("/api/v1/detector")["lane"]["reports_per_s"] == 0, 40, interval=0.5,
             what="the lane's rate at 0")


def port_pause_us(snap, node, port):
    """The pause time a port received in a snapshot, over its priorities (None: not in it)."""
    for n in snap["nodes"]:
        for p in n["ports"] if n["name"] == node else []:
            if p["name"] == port:
                return sum(q.get("pfc_rx_pause_duration_us", 0) for q in p.get("prio", {}).values())
    return None


def test_recent_intervals_summed_keep_what_one_interval_misses(world):
    """GET /api/v1/detector/snapshot?span=recent sums every interval the detector analysed over
    the last 10 to 20 s: a storm over before the last interval is still in it, where the last
    interval has nothing.  The dashboard ranks ports and colours links by it; before, it summed
    the single intervals it happened to fetch, one at each refresh (one in 15 of the demo's
    intervals), and missed the demo's incast, which marks in one interval of every 25: a
    ranking of ECN marks stayed empty for a minute when the two ran in step."""
    d, sim, c, ops = fabric(world, os.path.join(LIVE, "faults.json"))
    r = c.get("/api/v1/detector/snapshot", params={"span": "later"})
    assert r.status_code == 400 and r.json()["code"] == "BAD_PARAMETER" and "span is last" in r.json()["detail"]
    fid = inject(sim, {"type": "pause_storm", "host": "h5"})
    wait_for(lambda: port_pause_us(c.json("/api/v1/detector/snapshot"), "leaf1", "h5"), 10,
             what="leaf1:h5 paused in the last interval")
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
    wait_for(lambda: port_pause_us(c.json("/api/v1/detector/snapshot", params={"span": "last"}), "leaf1", "h5") == 0,
             10, what="the last interval without a pause of leaf1:h5")
    last = c.json("/api/v1/detector/snapshot")
    recent = c.json("/api/v1/detector/snapshot", params={"span": "recent"})
    assert port_pause_us(recent, "leaf1", "h5") > 0, recent
    assert recent["intervals"] >= 2 and recent["interval_us"] > last["interval_us"], (recent["intervals"],
                                                                                      recent["interval_us"])
    # the time covered: no more than the intervals' total (an analysis may reuse a port's readings)
    assert 0 < recent["span_us"] <= recent["interval_us"], (recent["span_us"], recent["interval_us"])
    assert "intervals" not in last
    # every agent gone: the sums age out (the last 20 s at most), and say why
    sim.stop(signal.SIGKILL)
    t0 = time.time()
    # (a Response is falsy when not ok: its problem document is what is waited for)
    r = wait_for(lambda: (lambda r: r.json() if r.status_code == 404 else None)(
        c.get("/api/v1/detector/snapshot", params={"span": "recent"})), 25, interval=0.5, what="the sums gone")
    assert r["code"] == "NO_SNAPSHOT" and "last 10 to 20 s" in r["detail"], r
    assert time.time() - t0 > 5, "gone at once: the sums are of the last 10 s at least"


def test_live_advise_changes_nothing_until_mitigated(world):
    d, sim, c, ops = fabric(world, os.path.join(LIVE, "faults.json"))
    assert c.json("/api/v1/detector/config")["storm_mode"] == "advise"  # the default
    inject(sim, {"type": "pause_storm", "host": "h5"})
    a = wait_for(lambda: (alerts(c, "pause_storm") or [None])[0], 10, what="a pause_storm alert")
    stays(lambda: not detector_changes(c), 4 * FAST, what="advise mode changing nothing by itself")
    assert c.json("/api/v1/switches/leaf1/ports/h5/pfc")["items"][0]["values"]["enable"] == 8
    # a viewer may not mitigate; an operator may, once
    assert c.post(f"/api/v1/alerts/{a['id']}/mitigate").status_code == 403
    for body in ({"reason": 1}, {"why": "x"}):
        r = ops.post(f"/api/v1/alerts/{a['id']}/mitigate", json=body)
        assert r.status_code == 400 and r.json()["code"] in ("SCHEMA_VIOLATION", "UNKNOWN_FIELD"), (body, r.text)
    why = "storm on h5, ticket 7: " + "é" * 240  # 503 bytes, whole with the evidence
    r = ops.post(f"/api/v1/alerts/{a['id']}/mitigate", json={"reason": why})
    assert r.status_code == 202, r.text
    assert r.json()["action"]["op"] == "lossless_off" and (r.json()["action"]["node"], r.json()["action"]["port"]) == ("leaf1", "h5")
    r2 = ops.post(f"/api/v1/alerts/{a['id']}/mitigate")
    assert r2.status_code == 409 and r2.json()["code"] == "MITIGATED", r2.text
    ch = wait_for(lambda: (lambda x: x[0] if x and x[0]["state"] == "applied" else None)(detector_changes(c)), 15,
                  what="the change applied")
    assert ch["actor"] == "detector (asked by ops)", ch
    assert ch["reason"].endswith("; asked by ops: " + why) and ch["reason"].startswith("pause_storm #"), ch
    # the alert says who mitigated it, when, why and with which change
    m = [x for x in c.json("/api/v1/alerts")["items"] if x["id"] == a["id"]][0]["mitigations"]
    assert [(x["by"], x.get("reason"), x["change"]) for x in m] == [("ops", why, r.json()["change"])], m
    # acknowledged: still active, with who and when
    r = ops.post(f"/api/v1/alerts/{a['id']}/ack")
    assert r.status_code == 200 and r.json()["acked"]["by"] == "ops" and r.json()["state"] == "active", r.text
    # the first acknowledgement stands: another operator is told who acknowledged it
    d.token("noc", "operator")
    r = d.client("noc").post(f"/api/v1/alerts/{a['id']}/ack")
    assert r.status_code == 409 and r.json()["code"] == "ALREADY_ACKED" and "by ops at" in r.json()["detail"], r.text
    # one alert, as the list has it (GET /api/v1/alerts/{id}); an unknown one is a 404
    # (the detector updates the alert at each pass: the two reads agree once none falls between)
    def one_as_listed():
        one = c.json(f"/api/v1/alerts/{a['id']}")
        return one if one == [x for x in c.json("/api/v1/alerts")["items"] if x["id"] == a["id"]][0] else None
    wait_for(one_as_listed, 10, interval=0.01, what="GET /api/v1/alerts/{id} equal to the alert in the list")
    assert c.get("/api/v1/alerts/99999").status_code == 404 and c.get("/api/v1/alerts/x").status_code == 400
    # the same from rocefabctl
    out = ctl(d, "viewer", "alerts").stdout
    assert "pause_storm" in out and "h5 nic0:1 priority 3" in out, out
    out = ctl(d, "viewer", "alerts", str(a["id"])).stdout  # with its details: what to do
    assert out.startswith(f"alert {a['id']} pause_storm h5 nic0:1 priority 3: "), out
    # the source and the switch port it pauses (a trial: only the source, "paused 0 us")
    assert "source:  h5 nic0:1 (sends the pauses)\n" in out and "pauses:  leaf1 h5: paused " in out, out
    assert "suggested: leaf1 h5 priority 3: lossless_off\n" in out, out  # (mitigated: nothing more to do)
    out = ctl(d, "viewer", "detector").stdout
    assert "storms advise" in out and "pause_storm" in out and "[mitigated]" in out, out
    assert "held: leaf1:h5 priority 3 lossy (pause_storm #" in out and "after h5:nic0:1 stops pausing" in out, out
    r = ctl(d, "ops", "ack", str(a["id"]))
    assert r.returncode == 0 and "acknowledged by ops" in r.stdout, r.stdout + r.stderr
    assert f"mitigated by ops at {m[0]['at']}: change {m[0]['change']} ({why})" in r.stdout, r.stdout
    r = ctl(d, "ops", "mitigate", str(a["id"]))
    assert r.returncode != 0 and "MITIGATED" in r.stderr, r.stdout + r.stderr
    # an operator who puts the held priority back is told of the hold it undoes (a trial's
    # operator fought the detector in auto mode without a word)
    # (one change: once applied, the detector drops its hold)
    r = ctl(d, "ops", "-j", "set", "pfc", "leaf1", "h5", "enable=8")
    assert r.returncode == 0, r.stdout + r.stderr
    w = json.loads(r.stdout)["warnings"]
    assert [x["code"] for x in w] == ["DETECTOR_HOLD"] and w[0]["detail"].startswith(
        "leaf1 h5 priority 3 is held out of lossless mode by the detector (pause_storm #"), w
    assert f"rocefabctl: warning: {w[0]['detail']} [DETECTOR_HOLD]" in r.stderr, r.stderr
    # a change of another port: no warning
    r = ops.put("/api/v1/switches/leaf1/ports/h4/pfc", json={"enable": 8})
    assert r.status_code == 202 and "warnings" not in r.json(), r.text


@pytest.mark.parametrize("path,body,code,pointer", [
    ("/api/v1/detector/config", {"deadlock_mode": "sometimes"}, "BAD_VALUE", "/deadlock_mode"),
    ("/api/v1/detector/config", {"restore_ms": 0}, "BAD_VALUE", "/restore_ms"),
    ("/api/v1/detector/config", {"restore_ms": 1.5}, "BAD_VALUE", "/restore_ms"),
    ("/api/v1/detector/config", {"restore_ms": 10 ** 12}, "BAD_VALUE", "/restore_ms"),
    ("/api/v1/detector/config", {"interval": 5}, "UNKNOWN_FIELD", "/interval"),
    ("/api/v1/detector/config", {}, "NO_CHANGE", "/"),
    ("/api/v1/detector/config", [1], "SCHEMA_VIOLATION", "/"),
])
def test_detector_config_refuses_bad_values(world, path, body, code, pointer):
    """Refused, nothing changed, the field named by a JSON pointer as in every other body (it
    was the bare name)."""
    d = world.daemon().start()
    d.token("ops", "operator")
    ops = d.client("ops")
    before = ops.json("/api/v1/detector/config")
    r = ops.put(path, json=body)
    assert r.status_code == 400 and r.json()["code"] == code and r.json()["pointer"] == pointer, r.text
    assert ops.json("/api/v1/detector/config") == before


def test_alert_actions_refuse_bad_ids_and_bodies(world):
    d = world.daemon().start()
    d.token("ops", "operator")
    ops = d.client("ops")
    for bad in ("abc", "0", "-1", "1e3", "99999999999999999999"):
        r = ops.post(f"/api/v1/alerts/{bad}/mitigate")
        assert r.status_code == 400 and r.json()["code"] == "BAD_PARAMETER", (bad, r.text)
    assert ops.post("/api/v1/alerts/42/mitigate").json()["code"] == "NO_SUCH_ALERT"
    assert ops.post("/api/v1/alerts/42/ack").status_code == 404
    r = ops.post("/api/v1/alerts/42/ack", json={"by": "me"})
    assert r.status_code == 400 and r.json()["code"] == "UNKNOWN_FIELD", r.text
    r = ops.request("POST", "/api/v1/alerts/42/ack", data=b"{", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["code"] == "BAD_JSON", r.text


def test_pfc_report_identity_and_garbage(world):
    d = world.daemon().start()
    tok, _ = d.token("h1-only", "agent", agent="h1")
    c = d.client("h1-only")
    good = {"schema": 1, "agent": {"id": "h1", "role": "host", "boot_id": "b", "version": "x", "backend": "linux"},
            "seq": 1, "time_ns": 1700000000000000000, "interval_ms": 200,
            "samples": [{"device": "mlx5_0", "port": "1", "source": "ethtool", "driver": "mlx5",
                         "t_ns": 1700000000000000000, "values": {"rx_prio3_pause": 5}}]}
    r = c.post("/api/v1/agents/h1/pfc", json=good)
    assert r.status_code == 200 and r.json() == {"accepted": True, "ports": 1, "refused": 0}, r.text
    r = c.post("/api/v1/agents/h2/pfc", json=dict(good, agent=dict(good["agent"], id="h2")))
    assert r.status_code == 403 and r.json()["code"] == "AGENT_NOT_BOUND", r.text
    for bad, code in [(dict(good, schema=2), "UNSUPPORTED_SCHEMA"), (dict(good, extra=1), "SCHEMA_VIOLATION"),
                      (dict(good, samples=[dict(good["samples"][0], values={"rx_prio3_pause": -1})]),
                       "SCHEMA_VIOLATION"),
                      (dict(good, agent=dict(good["agent"], id="h9")), "AGENT_ID_MISMATCH")]:
        r = c.post("/api/v1/agents/h1/pfc", json=bad)
        assert r.status_code == 400 and r.json()["code"] == code, (code, r.text)
    r = c.request("POST", "/api/v1/agents/h1/pfc", data=b'{"schema":1,', headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["code"] == "BAD_JSON"


def test_a_lane_port_follows_its_agents_role(world):
    """An agent's fast reports that said "host" and then "switch" (its backend came to know the
    device, as a real agent standing in for a simulated switch does after its first reading) give
    a switch and its port by the switch's name; before, the port kept its first label
    (leaf9:Ethernet0, a host's DEVICE:PORT) and its node stayed a host, unlinked, for good."""
    d = world.daemon().start()
    d.token("leaf9", "agent", agent="leaf9")
    d.token("viewer", "viewer")
    c, v = d.client("leaf9"), d.client("viewer")
    t0 = time.time_ns() - 10 ** 9
    for seq, role in enumerate(("host", "host", "switch", "switch"), 1):
        now = t0 + seq * 200 * 10 ** 6  # (readings 200 ms apart, the last one 200 ms ago)
        doc = {"schema": 1, "agent": {"id": "leaf9", "role": role, "boot_id": "b", "version": "x", "backend": "sim"},
               "seq": seq, "time_ns": now, "interval_ms": 200,
               "samples": [{"device": "leaf9", "port": "Ethernet0", "source": "ethtool", "driver": "mlx5",
                            "t_ns": now, "values": {"rx_prio3_pause": seq}}]}
        r = c.post("/api/v1/agents/leaf9/pfc", json=doc)
        assert r.status_code == 200 and r.json()["ports"] == 1, r.text

    def leaf9():
        snap = v.get("/api/v1/detector/snapshot")
        nodes = [n for n in snap.json()["nodes"] if n["name"] == "leaf9"] if snap.status_code == 200 else []
        return nodes[0] if nodes and nodes[0]["kind"] == "switch" else None
    n = wait_for(leaf9, 10, what="leaf9 as a switch in the snapshot")
    assert [p["name"] for p in n["ports"]] == ["Ethernet0"], n


def test_detector_off_means_no_lane(world):
    d = world.daemon(extra_conf="[detector]\ninterval = 0\n").start()
    d.token("a", "agent", agent="h1")
    d.token("v", "viewer")
    r = d.client("a").post("/api/v1/agents/h1/pfc", json={})
    assert r.status_code == 404 and r.json()["code"] == "NO_PFC_LANE", r.text
    assert d.client("v").get("/api/v1/detector").status_code == 404


def test_both_snapshot_builders_agree_on_a_frozen_fabric(world):
    """rocefabd's snapshot (from the agents' fast PFC reports, the topology and the PFC settings
    they report) and the simulator's (from its devices' counters) over the same interval of
    fabric time are the same, port by port: the fabric is paused, marked, stepped 2 ms in one
    go (no agent reads in between) and paused again, during a pause storm so that the gauges and
    pause counters are not all zero while other traffic moves."""
    d, sim, c, ops = fabric(world, os.path.join(LIVE, "faults.json"))
    inject(sim, {"type": "pause_storm", "host": "h5"})
    wait_for(lambda: alerts(c, "pause_storm"), 10, what="the storm")
    clock = sim.ctl("PUT", "/v1/clock", {"paused": True})
    epoch_us = clock["epoch_ns"] // 1000

    def lane_at(t_us):
        snap = c.get("/api/v1/detector/snapshot")
        return snap.json() if snap.status_code == 200 and abs(snap.json()["t_us"] - t_us) <= 1 else None

    t1 = epoch_us + clock["fabric_time_ns"] // 1000
    wait_for(lambda: (lambda ln: abs(ln["oldest_reading_us"] - t1) <= 1 and abs(ln["newest_reading_us"] - t1) <= 1)(
        c.json("/api/v1/detector")["lane"]), 10, what="every port's last reading at the pause")
    sim.ctl("POST", "/v1/snapshot/mark")
    t2 = epoch_us + sim.ctl("PUT", "/v1/clock", {"paused": True, "advance_us": 2000})["fabric_time_ns"] // 1000
    wait_for(lambda: (lambda ln: abs(ln["oldest_reading_us"] - t2) <= 1 and abs(ln["newest_reading_us"] - t2) <= 1
                      and ln["unanalysed"] == 0)(c.json("/api/v1/detector")["lane"]), 10,
             what="every port's last reading at the step's end, analysed")
    ours = lane_at(t2)
    assert ours and ours["interval_us"] == 2000, ours and ours["interval_us"]
    theirs = sim.ctl("GET", "/v1/snapshot")
    assert abs(theirs["t_us"] - ours["t_us"]) <= 1
    for s in (ours, theirs):
        del s["t_us"]
    assert theirs["interval_us"] == 2000
    assert len(ours["nodes"]) == 12
    # something moved in the step and something is frozen: the comparison is not of zeros
    flat = [(n["name"], p["name"], v) for n in ours["nodes"] for p in n["ports"] for v in [p["prio"].get("3", {})]]
    assert any(v.get("prio_tx_bytes", 0) > 0 for _, _, v in flat)
    assert any(v.get("pfc_paused") == 1 and v.get("queue_depth_bytes", 0) > 0 for _, _, v in flat)
    diffs = []
    for na, nb in zip(ours["nodes"], theirs["nodes"]):
        for pa, pb in zip(na["ports"], nb["ports"]):
            if pa != pb:
                diffs.append((na["name"], pa, pb))
    assert not diffs, "\n".join(f"{n}: {a} != {b}" for n, a, b in diffs[:3])
    assert ours == theirs


@pytest.mark.parametrize("prog,args,msg", [
    ("rocefabd", ["-o", "detector.deadlock_mode=sometimes", "--db", "/nonexistent/x.db"], "detector.deadlock_mode"),
    ("rocefabd", ["-o", "detector.interval=fast", "--db", "/nonexistent/x.db"], "detector.interval"),
    ("rocefabd", ["-o", "detector.restore=0", "--db", "/nonexistent/x.db"], "detector.restore"),
    ("rocefab-agent", ["-o", "agent.pfc_interval=-1s", "--once"], "agent.pfc_interval"),
    ("rocefab-sim", ["serve", os.path.join(LIVE, "faults.json"), "--pfc-interval", "5ms"], "--pfc-interval"),
])
def test_detector_options_refuse_bad_values(prog, args, msg):
    r = subprocess.run([binary(prog)] + args, capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and msg in r.stderr, (r.returncode, r.stderr)


def test_a_break_left_by_a_stopped_rocefabd_is_restored_at_its_start(world):
    d, sim, c, ops = fabric(world, os.path.join(LIVE, "deadlock.json"))
    # a long restore time: the break is still in force when rocefabd stops
    assert ops.put("/api/v1/detector/config", json={"deadlock_mode": "auto", "restore_ms": 600000}).status_code == 200
    inject(sim, {"type": "route_override", "routes": LOOP})
    brk = wait_for(lambda: (lambda x: x[0] if x and x[0]["state"] == "applied" else None)(detector_changes(c)), 15,
                   what="the break applied")
    assert brk["params"] == {"enable": 0}
    d.stop()
    d.start()
    back = wait_for(lambda: (lambda x: x[1] if len(x) >= 2 else None)(detector_changes(c)), 15,
                    what="the restoration after the restart")
    assert back["params"] == {"enable": 8} and "rocefabd restarted" in back["reason"], back
    assert (back["target"]["agent"], back["target"]["port"]) == (brk["target"]["agent"], brk["target"]["port"])


def test_a_linux_agent_feeds_the_fast_lane(world):
    """rocefab-agent on the linux backend (a recorded mlx5 host: ethtool's rx_prio3_pause and
    friends) sends its fast PFC reports beside its full reports; rocefabd's lane holds its
    ports' lossless priorities."""
    from conftest import copy_tree
    d = world.daemon()
    d.token("agents", "agent", agent="gpu-a2")
    d.token("viewer", "viewer")
    d.start()
    tree = copy_tree("gpu-a2", os.path.join(world.tmp, "tree"))
    world.agent("gpu-a2", tree, d.url, os.path.join(world.tmp, "agents.token"), interval="1s").start()
    c = d.client("viewer")
    lane = wait_for(lambda: (lambda ln: ln if ln["ports"] >= 1 and ln["reports"] >= 5 else None)(
        c.json("/api/v1/detector")["lane"]), 15, what="the agent's fast PFC reports")
    # a report every 200 ms (the full ones come every second)
    assert lane["reports"] >= 5
    assert c.json("/api/v1/agents/gpu-a2")["seq"] <= lane["reports"]
    m = c.get("/metrics").text
    assert "rocefab_pfc_lane_ports" in m
