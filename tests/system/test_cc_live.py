"""The congestion-control tuner live: rocefab-sim serve with its virtual agents (their fast lane
carries the tuner's counters) and rocefabd, through REST only.  In advise mode the tuner's
proposals wait until an operator applies or rejects them; applied, they go through the audited
change path as the tuner's (asked by the operator), the switches take them, and the step's
rollout follows by itself.  In auto mode steps apply and roll back by themselves, visible in
/api/v1/changes and /api/v1/cc/history.  Bad policies and decisions get problem+json and change
nothing."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import ROOT, SIM_AGENTS, binary, ctl, stays, wait_for
from test_web import Stream, dechunk, parse_events

LIVE = os.path.join(ROOT, "tests", "sim", "live")
CC_CONF = "[cc]\ninterval = 1s\n"


def save_policy_behind(d, text):
    """The tuner's policy saved in the database as text, not through the API (a database
    restored or edited)."""
    db = sqlite3.connect(d.db, timeout=10)
    with db:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('cc_policy', ?)", (text,))
    db.close()


def fabric(world, mode="advise", scenario=None):
    d = world.daemon(extra_conf=CC_CONF + f"mode = {mode}\n").start()
    _, agent_tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    sim = world.sim(scenario or os.path.join(LIVE, "cc.json"), daemon=d, token_file=agent_tok, interval="0.3s").start()
    return d, sim, d.client("viewer"), d.client("ops")


def proposals(c, **params):
    return c.json("/api/v1/cc/proposals", params=params)


def harder(p):
    """A harder canary: marking more, or senders cut back more or for longer."""
    up = p["to"] > p["from"]
    return p["phase"] == "canary" and (up if p["knob"] in ("pmax", "rpg_time_reset") else not up)


def tuner_changes(c):
    return sorted((x for x in c.json("/api/v1/changes", params={"limit": 1000})["items"]
                   if x["actor"].startswith("tuner")), key=lambda x: x["id"])


def test_advise_waits_then_apply_and_reject(world):
    d, sim, c, ops = fabric(world)
    st = c.json("/api/v1/cc")
    assert st["mode"] == "advise" and st["interval_ms"] == 1000
    # deep queues on every ToR downlink: a proposal, waiting
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    assert p["state"] == "waiting" and p["phase"] == "canary", p
    assert p["class"] in ("tor_down", "tor_up", "spine", "hosts") and p["reason"] and p["expected_effect"]
    assert p["evidence"]["pause_share"] >= 0 and p["changes"], p
    # nothing changes while it waits
    assert not tuner_changes(c)
    # rocefabctl shows it; an operator rejects it with rocefabctl...
    out = ctl(d, "viewer", "cc", "proposals")
    assert out.returncode == 0 and str(p["id"]) in out.stdout and "waiting" in out.stdout, out.stdout + out.stderr
    # when rocefabd made it, by its clock (the counters' is fabric time in the simulator)
    assert "MADE" in out.stdout and p["made_at"][:19] + "Z" in out.stdout, out.stdout
    assert "mode advise" in ctl(d, "viewer", "cc").stdout
    assert ctl(d, "viewer", "cc", "reject", str(p["id"])).returncode != 0  # a viewer may not
    out = ctl(d, "ops", "cc", "reject", str(p["id"]), "--reason", "not during the backup")
    assert out.returncode == 0 and "rejected" in out.stdout, out.stdout + out.stderr
    assert "ops: not during the backup" in out.stdout, out.stdout
    r = c.get("/api/v1/cc/proposals", params={"all": "true"})
    rej = next(x for x in r.json() if x["id"] == p["id"])
    assert rej["state"] == "rejected" and rej["decided_by"] == "ops", rej
    assert rej["decision_reason"] == "not during the backup", rej
    r = ops.post(f"/api/v1/cc/proposals/{p['id']}/apply")
    assert r.status_code == 409 and r.json()["code"] == "NOT_WAITING", r.text
    # ... and applies the next one
    q = wait_for(lambda: next((x for x in proposals(c) if x["id"] != p["id"] and x["state"] == "waiting"), None), 30,
                 what="another waiting proposal")
    for body in ({"reason": 7}, {"reason": "x", "also": 1}, ["x"]):
        r = ops.post(f"/api/v1/cc/proposals/{q['id']}/apply", json=body)
        assert r.status_code == 400, (body, r.text)
    r = ops.post(f"/api/v1/cc/proposals/{q['id']}/apply", json={"reason": "change CAB-12"})
    assert r.status_code == 202 and r.json()["state"] == "approved", r.text
    assert r.json()["decision_reason"] == "change CAB-12", r.json()
    ch = wait_for(lambda: (lambda x: x if x and all(y["state"] == "applied" for y in x) else None)(tuner_changes(c)),
                  20, what="the canary's changes applied")
    assert len(ch) == len(q["changes"]), (ch, q)
    assert all(x["actor"] == "tuner (asked by ops)" for x in ch), ch
    # the operator's reason after the tuner's
    assert all(x["reason"].endswith("; asked by ops: change CAB-12") and f"(proposal {q['id']})" in x["reason"]
               for x in ch), ch
    assert all(x["target"]["kind"] == ("dcqcn" if q["class"] == "hosts" else "ecn") for x in ch)
    assert all(q["knob"] in x["params"] for x in ch), ch
    # the switches (or hosts) hold the values now, read back
    assert all(x["new"][q["knob"]] == pytest.approx(q["to"]) for x in ch), ch
    # the step goes on by itself: its rollout or its rollback, in the history
    hist = wait_for(lambda: (lambda h: h if any(x["step"] == q["step"] and x["phase"] != "canary" for x in h) else None)(
        c.json("/api/v1/cc/history")), 30, what="the step's rollout or rollback")
    canary = next(x for x in hist if x["id"] == q["id"])
    assert canary["outcome"] == "applied" and canary["change_batch"] == ch[0]["batch"], canary
    assert any(x["id"] == p["id"] and x["state"] == "rejected" for x in hist)
    m = c.get("/metrics").text
    assert 'rocefab_cc_mode{mode="advise"} 1' in m and "rocefab_cc_decisions_total" in m
    assert 'rocefab_cc_proposals_total{outcome="rejected"} 1' in m


def test_auto_steps_and_rollback(world):
    d, sim, c, ops = fabric(world, mode="auto")
    # a step applies by itself through the change path (actor "tuner"), then its verdict: a
    # rollout or a rollback, applied too, without anyone asking
    hist = wait_for(lambda: (lambda h: h if any(x["phase"] != "canary" and x.get("outcome") == "applied" for x in h)
                             else None)(c.json("/api/v1/cc/history")), 60, what="a step's verdict applied")
    verdict = next(x for x in hist if x["phase"] != "canary" and x.get("outcome") == "applied")
    canary = next(x for x in hist if x["step"] == verdict["step"] and x["phase"] == "canary")
    assert canary["outcome"] == "applied" and "decided_by" not in canary, canary
    ch = {x["batch"]: x for x in tuner_changes(c)}
    assert ch[canary["change_batch"]]["actor"] == "tuner" and ch[verdict["change_batch"]]["actor"] == "tuner"
    assert verdict["reason"].startswith(f"step {verdict['step']} "), verdict
    assert all(x["state"] != "waiting" for x in hist)
    # an operator asks for every completed step to be undone (when none is in flight)
    def rollbacks_total():
        return int(next(x for x in c.get("/metrics").text.splitlines()
                        if x.startswith("rocefab_cc_rollbacks_total ")).split()[1])

    def rollback():
        before = rollbacks_total()
        r = ops.post("/api/v1/cc/rollback")
        return (r, before) if r.status_code == 202 else None
    r, before = wait_for(rollback, 60, interval=0.3, what="a moment without a step in progress")
    undone = r.json()
    assert all(x["phase"] == "rollback" and x["decided_by"] == "ops" for x in undone), undone
    # the operator's rollbacks are counted too (the tuner's own between the two reads may add)
    assert rollbacks_total() >= before + len(undone), (before, undone)
    if undone:
        wait_for(lambda: any(x["actor"] == "tuner (asked by ops)" and x["state"] == "applied" for x in tuner_changes(c)),
                 20, what="the rollback applied")
    m = c.get("/metrics").text
    assert 'rocefab_cc_mode{mode="auto"} 1' in m and "rocefab_cc_steps_total" in m
    # every proposal is in the history, a step's completion too (it has no change to apply),
    # oldest first
    ids = [x["id"] for x in c.json("/api/v1/cc/history")]
    assert ids == list(range(ids[0], ids[-1] + 1)), ids


def test_no_harder_step_while_the_detector_names_a_host_fault(world):
    """A slow receiver the detector names holds the tuner's harder steps: its pauses, and the
    queues they deepen, are not congestion control's to fix, and harder marking for them slows
    every other flow (an operator's trial: in auto mode the spines' Kmin went to the floor and
    Kmax to 100 KB, each step kept as "a harder move against pauses needs no gain to show").
    GET /api/v1/cc and rocefabctl cc say why and since when, and an event on the stream marks
    its start and its end; once the fault is over, the hold is too."""
    d, sim, c, ops = fabric(world)
    wait_for(lambda: c.json("/api/v1/cc")["decisions"] >= 1, 20, what="the tuner deciding")
    st = Stream(d.url, d.tokens["viewer"])
    fid = sim.ctl("POST", "/v1/faults", {"type": "slow_receiver", "host": "h3", "rate_gbps": 5}, expect=201)["id"]
    # (the tuner's own reading, "host h3 pauses its switch port", may come first: the
    # detector's name replaces it)
    cc = wait_for(lambda: (lambda x: x if x.get("harder_held_for", "").startswith("slow_receiver h3") else None)(
        c.json("/api/v1/cc")), 30, what="the tuner holding its harder steps for the detector's finding")
    assert cc["harder_held_since"] <= cc["last_decision"], cc

    def holds(evs):
        return [json.loads(x["data"])["harder_held"] for x in evs if x.get("event") == "cc"]
    st.next_events(lambda evs: holds(evs)[:1] == [True])
    ev = json.loads(next(x["data"] for x in st.events if x.get("event") == "cc"))
    assert ev == {"id": 0, "harder_held": True, "harder_held_for": ev.get("harder_held_for")}, ev
    assert ev["harder_held_for"].startswith(("slow_receiver h3", "host h3 pauses its switch port")), ev
    out = ctl(d, "viewer", "cc")
    assert "no harder step while the fabric has a fault (slow_receiver h3" in out.stdout, out.stdout
    assert f"held since {cc['harder_held_since']}" in out.stdout, out.stdout
    assert "rocefab_cc_harder_held 1\n" in c.get("/metrics").text
    # nothing harder is proposed meanwhile (a softer move or a repair may be)
    first = max((p["id"] for p in c.json("/api/v1/cc/history")), default=0)
    stays(lambda: not [p for p in c.json("/api/v1/cc/history") if p["id"] > first and harder(p)], 3,
          what="no harder canary")
    sim.ctl("DELETE", f"/v1/faults/{fid}", expect=200)
    wait_for(lambda: "harder_held_for" not in c.json("/api/v1/cc"), 40, what="the hold over with the fault")
    assert "harder_held_since" not in c.json("/api/v1/cc")
    assert "rocefab_cc_harder_held 0\n" in c.get("/metrics").text
    try:
        st.next_events(lambda evs: holds(evs)[-1:] == [False])
    finally:
        st.close()
    assert holds(st.events) in ([True, False], [True, False, True, False]), st.events
    # its start and its end in the log (not a line at every decision held)
    log = d.proc.output().splitlines()
    starts = [x for x in log if "no harder step while the fabric has a fault: " in x]
    ends = [x for x in log if "harder steps may start again: the fault is over" in x]
    assert 1 <= len(starts) <= 2 and len(ends) == len(starts), log[-20:]


def test_no_harder_step_for_a_slow_receiver_whose_agent_is_silent(world):
    """h3 receives slowly while its agent is dead: its own readings gone, its switch port's
    count of the pauses it received is its, and holds the harder steps all the same (an
    operator's trial: the tuner could not map a silent host to its switch port, the detector
    called its pauses congestion, and in auto mode the ToR downlinks' Kmin went from 1 MB to
    125 KB).  h3's agent is a real rocefab-agent (--backend sim), killed."""
    d = world.daemon(extra_conf=CC_CONF + "mode = advise\n").start()
    _, tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    sim = world.sim(os.path.join(LIVE, "cc.json"), daemon=d, token_file=tok, interval="0.3s", skip=("h3",)).start()
    ag = world.sim_agent("h3", d, sim, tok).start()
    c = d.client("viewer")

    def h3_port():
        snap = c.get("/api/v1/detector/snapshot")
        return next((p for n in (snap.json()["nodes"] if snap.status_code == 200 else []) if n["name"] == "h3"
                     for p in n["ports"] if p["peer"] == "leaf0:h3"), None)
    wait_for(lambda: (lambda p: p and not p.get("silent"))(h3_port()), 20, what="h3 in the fast lane, linked")
    ag.stop(signal.SIGKILL)
    # (h3's last readings are reused for a few intervals: the fault begins once they are gone
    # — its port then out of the snapshot, in it again, silent, once its switch port is paused —
    # and after two decisions on sums without them)
    wait_for(lambda: (lambda p: not p or p.get("silent"))(h3_port()), 10, interval=0.1, what="h3's readings gone")
    n = c.json("/api/v1/cc")["decisions"]
    wait_for(lambda: c.json("/api/v1/cc")["decisions"] >= n + 2, 20, what="two decisions without h3's readings")
    sim.ctl("POST", "/v1/faults", {"type": "slow_receiver", "host": "h3", "rate_gbps": 5}, expect=201)
    held = wait_for(lambda: (lambda h: h if "h3" in h else None)(c.json("/api/v1/cc").get("harder_held_for", "")),
                    30, what="the tuner holding its harder steps for h3")
    assert h3_port().get("silent") is True, h3_port()
    # held on the tuner's own reading ("host h3 pauses its switch port …") or the detector's: it
    # names the slow receiver from leaf0's side of the link, and the hold then says so (before,
    # it called h3's pauses congestion: no alert, and the tuner's reading alone held)
    assert held.startswith(("host h3 pauses its switch port", "slow_receiver h3")), held
    a = wait_for(lambda: next((x for x in c.json("/api/v1/alerts", params={"state": "active"})["items"]
                               if x["kind"] == "slow_receiver"), None), 20, what="the detector's slow_receiver alert")
    assert a["details"]["culprit"] == "h3" and a["details"]["source_silent"] is True, a
    wait_for(lambda: c.json("/api/v1/cc").get("harder_held_for", "").startswith("slow_receiver h3"), 10,
             what="the hold named by the detector")
    first = max((p["id"] for p in c.json("/api/v1/cc/history")), default=0)
    stays(lambda: not [p for p in c.json("/api/v1/cc/history") if p["id"] > first and harder(p)] and
          "h3" in c.json("/api/v1/cc").get("harder_held_for", ""), 3, what="no harder canary, held")
    # mode off holds nothing, at once (before: until the next decision, and "since" was lost);
    # back on, the last decision's fault holds again, since then
    since = c.json("/api/v1/cc")["harder_held_since"]
    ops = d.client("ops")
    assert ops.put("/api/v1/cc/policy", json={"mode": "off"}).status_code == 200
    cc = c.json("/api/v1/cc")
    assert "harder_held_for" not in cc and "harder_held_since" not in cc, cc
    assert "rocefab_cc_harder_held 0\n" in c.get("/metrics").text
    assert ops.put("/api/v1/cc/policy", json={"mode": "advise"}).status_code == 200
    cc = c.json("/api/v1/cc")
    assert "h3" in cc.get("harder_held_for", "") and cc.get("harder_held_since", "") > since, cc
    assert "no hold of the harder steps: the tuner is off" in d.proc.output()


def test_no_harder_step_for_a_slow_receiver_that_never_reported(world):
    """h12 has no agent at all (never started): leaf1's port to it has no far end in the
    detector's snapshot.  Its pauses hold the harder steps all the same, and no step of the
    ToR uplinks moves that port (an operator's trial: it was taken for an uplink, its pauses
    for the switches', and in auto mode every ToR port's Kmin went to 31 KB in two minutes)."""
    d = world.daemon(extra_conf=CC_CONF + "mode = auto\n").start()
    _, tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    sim = world.sim(os.path.join(LIVE, "cc.json"), daemon=d, token_file=tok, interval="0.3s", skip=("h12",)).start()
    c = d.client("viewer")
    wait_for(lambda: c.json("/api/v1/cc")["decisions"] >= 2, 30, what="the tuner deciding")
    sim.ctl("POST", "/v1/faults", {"type": "slow_receiver", "host": "h12", "rate_gbps": 5}, expect=201)
    held = wait_for(lambda: (lambda h: h if "leaf1 h12" in h else None)(c.json("/api/v1/cc").get("harder_held_for", "")),
                    30, what="the tuner holding its harder steps for h12")
    assert held.startswith("the far end of leaf1 h12 (no readings of it"), held
    after = max((p["id"] for p in c.json("/api/v1/cc/history")), default=0)
    stays(lambda: "leaf1 h12" in c.json("/api/v1/cc").get("harder_held_for", ""), 4, what="the hold")
    # (a step under way when the fault began may roll out or back; nothing harder starts)
    made = [p for p in c.json("/api/v1/cc/history") if p["id"] > after]
    assert not [p for p in made if harder(p)], made
    # and no step of any class ever moved that port
    assert not [x for x in tuner_changes(c) if (x["target"].get("agent"), x["target"].get("port")) == ("leaf1", "h12")]


def test_no_decision_on_the_same_interval_again(world):
    """The simulator's clock paused: its agents go on reporting, the same readings each time, and
    the detector analyses that same interval again at each report.  Nothing new is read, so the
    tuner decides nothing and the recent sums do not grow.  Before, the tuner took the interval
    again at each decision, and in auto mode judged and rolled out steps on it (a trial: 10
    decisions and two steps kept in the 100 s the simulator was paused)."""
    d, sim, c, ops = fabric(world)
    wait_for(lambda: c.json("/api/v1/cc")["decisions"] >= 2, 20, what="the tuner deciding")
    sim.pause()
    try:
        # (what was read before the clock stopped, its last reports on their way, and one
        # decision on it may still come: the detector analyses the lane gone silent every
        # 150 ms, 10 times in 2 s, past that decision, within 1.25 s of the stop)
        runs = c.json("/api/v1/detector")["runs"]
        wait_for(lambda: c.json("/api/v1/detector")["runs"] >= runs + 10, 10, what="the detector analysing")
        st, rec = c.json("/api/v1/cc"), c.json("/api/v1/detector")["recent_intervals"]
        stays(lambda: c.json("/api/v1/cc")["decisions"] == st["decisions"] and
              c.json("/api/v1/detector")["recent_intervals"] == rec, 3, what="no decision nor sum while paused")
    finally:
        sim.resume()
    wait_for(lambda: c.json("/api/v1/cc")["decisions"] > st["decisions"], 10, what="decisions again")


@pytest.mark.parametrize("body,code,pointer", [
    ({"mode": "sometimes"}, "BAD_VALUE", "mode"),
    ({"canary_share": 0}, "BAD_VALUE", "/canary_share"),
    ({"cnp_gap_min_us": 10, "cnp_gap_max_us": 5}, "BAD_VALUE", "/cnp_gap_min_us"),  # the order named
    ({"host_classes": [{"name": "a", "hosts": "x"}, {"name": "a", "hosts": "y"}]}, "BAD_VALUE", "/host_classes"),
    ({"kmin_floor_bytes": -5}, "BAD_VALUE", "kmin_floor_bytes"),
    ({"surprise": 1}, "UNKNOWN_FIELD", "surprise"),
    ([1, 2], "BAD_VALUE", None),
    ({"host_classes": [{"name": "spine", "hosts": "x*"}]}, "BAD_VALUE", "host_classes"),
    ({"host_classes": [{"name": "gpu"}]}, "BAD_VALUE", "/host_classes/0/hosts"),
    # the member at fault named, an unknown one as such (its name may hold ": ")
    ({"host_classes": [{"name": "gpu", "hosts": "h*", "a: b": 1}]}, "UNKNOWN_FIELD", "/host_classes/0/a: b"),
    ({"host_classes": [{"name": "gpu", "hosts": "gpu[1-4"}]}, "BAD_VALUE", "host_classes"),
    ({"host_classes": "gpu=h*"}, "BAD_VALUE", "host_classes"),
    ({"a: b": 1}, "UNKNOWN_FIELD", "/a: b"),  # the pointer is the whole name
    ({"canary_intervals": 2.5}, "BAD_VALUE", "/canary_intervals"),
    ({"host_pause_hold": 1.5}, "BAD_VALUE", "/host_pause_hold"),
    ({"relax_intervals": 100001}, "BAD_VALUE", "/relax_intervals"),
    # ranges no device takes: every member would be outside, every repair refused by the switch
    ({"byte_reset_min": 40000, "byte_reset_max": 50000}, "BAD_VALUE", "/byte_reset_max"),
    ({"hai_min_mbps": 1e19, "hai_max_mbps": 1e19}, "BAD_VALUE", "/hai_min_mbps"),
    ({"loop_bytes": 2 ** 41}, "BAD_VALUE", "/loop_bytes"),
])
def test_bad_policy_refused_nothing_changes(world, body, code, pointer):
    d = world.daemon(extra_conf=CC_CONF).start()
    d.token("ops", "operator")
    ops = d.client("ops")
    before = ops.json("/api/v1/cc/policy")
    r = ops.put("/api/v1/cc/policy", json=body)
    assert r.status_code == 400 and r.headers["Content-Type"].startswith("application/problem+json"), r.text
    assert r.json()["code"] == code, r.text
    if pointer:
        assert pointer in r.json().get("pointer", "") + r.json()["detail"], r.json()
        assert r.json().get("pointer", "/").startswith("/"), r.json()  # RFC 6901
    if pointer and pointer.startswith("/"):
        assert r.json()["pointer"] == pointer and pointer not in r.json()["detail"], r.json()
    assert ops.json("/api/v1/cc/policy") == before


def test_a_policy_no_switch_port_fits_is_refused(world):
    """A loop_bytes as large as the ports' PFC XOFF thresholds leaves no switch port a Kmax: it
    was taken, and froze every switch class (its steps rolled back, every port outside the
    policy).  Refused now, naming the thresholds; a smaller one is taken."""
    d, sim, c, ops = fabric(world)
    wait_for(lambda: c.json("/api/v1/cc")["signals"].get("pause_share") is not None, 30, interval=0.3,
             what="the tuner's first decision interval")
    before = ops.json("/api/v1/cc/policy")
    r = ops.put("/api/v1/cc/policy", json={"loop_bytes": 100000000, "reason": "trial"})
    assert r.status_code == 400 and r.json()["code"] == "BAD_VALUE" and r.json()["pointer"] == "/loop_bytes", r.text
    assert r.json()["detail"].startswith("with loop_bytes 100000000 no switch port has room for a Kmax: their PFC "
                                         "XOFF thresholds are"), r.text
    assert ops.json("/api/v1/cc/policy") == before
    # the same with a floor raised to the highest threshold; a policy that does not touch them is
    # taken
    hi = int(re.search(r"thresholds are \d+\.\.(\d+) bytes", r.json()["detail"]).group(1))
    r = ops.put("/api/v1/cc/policy", json={"kmin_floor_bytes": hi, "kmax_ceiling_bytes": 2 * hi})
    assert r.status_code == 400 and r.json()["pointer"] == "/kmin_floor_bytes", r.text
    assert ops.put("/api/v1/cc/policy", json={"loop_bytes": 200000}).status_code == 200
    # turned off (in the same request too), loop_bytes is still checked as it changes: it was
    # taken, and the request turning the tuner on again was refused naming the mode
    r = ops.put("/api/v1/cc/policy", json={"mode": "off", "loop_bytes": 100000000})
    assert r.status_code == 400 and r.json()["pointer"] == "/loop_bytes", r.text
    assert "some would have one with loop_bytes below" in r.json()["detail"], r.text
    assert ops.put("/api/v1/cc/policy", json={"mode": "off"}).status_code == 200
    r = ops.put("/api/v1/cc/policy", json={"loop_bytes": 100000000})
    assert r.status_code == 400 and r.json()["pointer"] == "/loop_bytes", r.text
    # one saved that does not fit (the XOFFs lowered while it was off; here the database edited):
    # the tuner is not turned on with it, and the answer says why
    pol = ops.json("/api/v1/cc/policy")
    pol["loop_bytes"] = 100000000
    save_policy_behind(d, json.dumps(pol))
    wait_for(lambda: ops.json("/api/v1/cc/policy")["loop_bytes"] == 100000000, 20, what="the saved policy taken")
    r = ops.put("/api/v1/cc/policy", json={"mode": "advise"})
    assert r.status_code == 400 and r.json()["pointer"] == "/mode", r.text
    assert r.json()["detail"].startswith("cannot turn the tuner on: with loop_bytes 100000000 no switch port"), r.text
    assert ops.put("/api/v1/cc/policy", json={"mode": "advise", "loop_bytes": 200000}).status_code == 200


def test_head_is_a_get_and_changes_nothing(world):
    """HEAD is routed to a resource's GET (its role: viewer), so a handler that serves GET and PUT
    must change nothing on it: a viewer's HEAD with a body once went down the PUT branch."""
    d = world.daemon(extra_conf=CC_CONF).start()
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    viewer, ops = d.client("viewer"), d.client("ops")
    for path, body in (("/api/v1/cc/policy", {"mode": "auto", "tolerance": 10}),
                       ("/api/v1/detector/config", {"deadlock_mode": "off", "storm_mode": "off"}),
                       ("/api/v1/probes/config", {"count": 7})):
        before = ops.json(path)
        r = viewer.request("HEAD", path, validate=False, data=json.dumps(body),
                           headers={"Content-Type": "application/json"})
        assert r.status_code == 200, (path, r.status_code, r.headers)
        assert ops.json(path) == before, path
        assert viewer.put(path, json=body).status_code == 403, path
        assert ops.json(path) == before, path


def test_host_classes(world):
    """An operator gives a group of hosts its own DCQCN setting (rocefabctl cc policy with a JSON
    value): the policy keeps it, the tuner's status shows each host class's setting and signals
    (its hosts' CNPs, what they send, the queues of the ToR ports facing them), and proposals of a
    host class change its hosts only."""
    d, sim, c, ops = fabric(world)
    out = ctl(d, "ops", "cc", "policy", 'host_classes=[{"name": "gpu", "hosts": "h1*"}]')
    assert out.returncode == 0, out.stdout + out.stderr
    assert ops.json("/api/v1/cc/policy")["host_classes"] == [{"name": "gpu", "hosts": "h1*"}]
    out = ctl(d, "ops", "cc", "policy", "host_classes=[{nope")
    assert out.returncode != 0 and "not JSON" in out.stderr, out.stderr

    def both():
        st = c.json("/api/v1/cc")
        return st if {"gpu", "hosts"} <= set(st["settings"]) and "host_classes" in st["signals"] else None
    st = wait_for(both, 30, what="the host classes in the tuner's status")
    assert st["settings"]["gpu"]["min_time_between_cnps"] >= 0, st["settings"]
    assert {"gpu", "hosts"} <= set(st["signals"]["host_classes"]), st["signals"]
    gpu = {"h1"} | {"h1%d" % i for i in range(10)}
    for p in c.json("/api/v1/cc/proposals", params={"all": "true"}):
        if p["class"] == "gpu":
            assert all(x["node"] in gpu for x in p["changes"]), p
        elif p["class"] == "hosts":
            assert not any(x["node"] in gpu for x in p["changes"]), p
    # taken away again: one host class
    r = ops.put("/api/v1/cc/policy", json={"host_classes": []})
    assert r.status_code == 200 and r.json()["host_classes"] == [], r.text
    wait_for(lambda: "gpu" not in c.json("/api/v1/cc")["settings"], 30, what="the class gone from the status")


def test_a_host_outside_the_policy_is_listed(world):
    """An operator sets one host's CNP spacing below the policy's floor (2 us): the tuner's
    status lists it, with the reason, and leaves it as it is."""
    d, sim, c, ops = fabric(world)
    st = wait_for(lambda: (lambda x: x if "hosts" in x["settings"] else None)(c.json("/api/v1/cc")), 30,
                  what="the hosts in the tuner's status")
    assert st["outside_policy"] == {"members": 0, "first": []}, st["outside_policy"]
    r = ops.put("/api/v1/hosts/h3/dcqcn", json={"min_time_between_cnps": 1})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    wait_for(lambda: c.json(f"/api/v1/changes/{cid}")["state"] == "applied", 10, what="applied")
    out = wait_for(lambda: (lambda o: o if o["members"] == 1 else None)(c.json("/api/v1/cc")["outside_policy"]), 30,
                   what="h3 listed outside the policy")
    assert out["first"][0]["node"] == "h3" and out["first"][0]["class"] == "hosts", out
    assert "port" not in out["first"][0] and "cnp_gap_min_us" in out["first"][0]["why"], out
    assert all(x["node"] != "h3" for p in proposals(c, all="true") for x in p["changes"])
    out = ctl(d, "viewer", "cc")
    assert out.returncode == 0 and "members set apart stay): 1" in out.stdout, out.stdout + out.stderr
    assert "h3 (hosts): min_time_between_cnps is outside" in out.stdout, out.stdout


def test_a_lossy_link_is_in_the_tuners_signals(world):
    """A link that loses frames: the receiving ports count them (phy_rx_crc_errors), the fast
    lane carries them, and the tuner's signals show them (link_errors: while they are above 0,
    retransmissions are not held against a step), in REST and in rocefabctl cc.  Before, the
    simulator's virtual agents left the counter out of their reports: the registry did not
    know it."""
    d, sim, c, ops = fabric(world)
    wait_for(lambda: c.json("/api/v1/cc")["signals"].get("pause_share") is not None, 30, what="the tuner's signals")
    assert c.json("/api/v1/cc")["signals"]["link_errors"] == 0
    sim.ctl("POST", "/v1/faults", {"type": "lossy_link", "link": "leaf1-spine0", "loss": 0.05}, expect=201)
    sig = wait_for(lambda: (lambda g: g if g["link_errors"] > 0 else None)(c.json("/api/v1/cc")["signals"]), 30,
                   what="link errors in the tuner's signals")
    out = ctl(d, "viewer", "cc").stdout
    assert re.search(r"; links: \d+ errors in the fabric \(frames lost, carrier changes\)", out), (sig, out)
    assert c.json("/api/v1/agents/leaf1")["ignored_values"] == 0


def test_another_lossless_priority(world, tmp_path):
    """A fabric lossless on priority 4, not 3: an approved step changes the ECN of queue 4 (the
    tuner's passes between decisions went by queue 3), and the tuner reads queue 4's settings."""
    scen = json.load(open(os.path.join(LIVE, "cc.json")))
    scen["switch"]["pfc"]["priorities"] = [4]
    scen.setdefault("nic", {})["pfc_priorities"] = [4]
    for w in scen["workloads"]:
        w["priority"] = 4
    path = tmp_path / "cc-prio4.json"
    path.write_text(json.dumps(scen))
    d, sim, c, ops = fabric(world, scenario=str(path))
    p = wait_for(lambda: next((x for x in proposals(c) if x["class"] != "hosts"), None), 40,
                 what="a waiting ECN proposal")
    r = ops.post(f"/api/v1/cc/proposals/{p['id']}/apply")
    assert r.status_code == 202, r.text
    ch = wait_for(lambda: (lambda x: x if x and all(y["state"] == "applied" for y in x) else None)(tuner_changes(c)),
                  20, what="the canary's changes applied")
    assert {x["target"]["queue"] for x in ch} == {4}, [x["target"] for x in ch]


def test_a_switch_port_near_its_xoff_is_listed(world):
    """An operator lowers one ToR port's PFC XOFF threshold to 100 KB above its Kmax (3 MB),
    less than a control loop (loop_bytes, 150 KB): the tuner reads each switch port's own
    threshold and lists that port, and only it, outside the policy."""
    d, sim, c, ops = fabric(world)
    st = wait_for(lambda: (lambda x: x if "tor_down" in x["settings"] else None)(c.json("/api/v1/cc")), 30,
                  what="the ToR ports in the tuner's status")
    assert st["outside_policy"] == {"members": 0, "first": []}, st["outside_policy"]
    r = ops.put("/api/v1/switches/leaf0/ports/h0/pfc", json={"xoff_bytes": 3100000, "xon_bytes": 2000000})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    wait_for(lambda: c.json(f"/api/v1/changes/{cid}")["state"] == "applied", 10, what="applied")
    out = wait_for(lambda: (lambda o: o if o["members"] else None)(c.json("/api/v1/cc")["outside_policy"]), 30,
                   what="leaf0 h0 listed outside the policy")
    assert out["members"] == 1, out
    x = out["first"][0]
    assert (x["node"], x.get("port"), x["class"]) == ("leaf0", "h0", "tor_down") and "XOFF" in x["why"], out
    out = ctl(d, "viewer", "cc")  # bytes whole (it said kmax_bytes=3e+06)
    assert out.returncode == 0 and "kmax_bytes=3000000" in out.stdout and "leaf0:h0 (tor_down)" in out.stdout, \
        out.stdout + out.stderr


def test_a_port_set_apart_inside_the_policy_is_listed(world):
    """An operator sets one ToR port's Kmin to a value of its own, inside the policy: the class's
    setting stays the majority's, and the status lists that port set apart, with its value and
    the class's (before, nothing showed it: a trial read the class's value as every port's)."""
    d, sim, c, ops = fabric(world, mode="off")  # (no step: none of its knobs is left out)
    st = wait_for(lambda: (lambda x: x if "tor_down" in x["settings"] else None)(c.json("/api/v1/cc")), 30,
                  what="the ToR ports in the tuner's status")
    assert st["set_apart"] == {"members": 0, "knobs": 0, "first": []}, st["set_apart"]
    kmin = st["settings"]["tor_down"]["kmin_bytes"]
    r = ops.put("/api/v1/switches/leaf0/ports/h1/queues/3/ecn", json={"kmin_bytes": kmin + 50000})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    wait_for(lambda: c.json(f"/api/v1/changes/{cid}")["state"] == "applied", 10, what="applied")
    sa = wait_for(lambda: (lambda o: o if o["members"] else None)(c.json("/api/v1/cc")["set_apart"]), 30,
                  what="leaf0 h1 listed set apart")
    assert sa == {"members": 1, "knobs": 1, "first": [{"node": "leaf0", "port": "h1", "class": "tor_down", "knob": "kmin_bytes",
                                           "value": kmin + 50000, "class_value": kmin}]}, sa
    assert c.json("/api/v1/cc")["settings"]["tor_down"]["kmin_bytes"] == kmin
    out = ctl(d, "viewer", "cc")
    assert out.returncode == 0 and "set apart (inside the policy, not at their class's setting" in out.stdout, \
        out.stdout + out.stderr
    assert f"leaf0:h1 (tor_down): kmin_bytes={kmin + 50000} (" in out.stdout and f"the class's {kmin} (" in out.stdout, \
        out.stdout


def test_a_narrowed_policy_steps_the_class_back_inside(world):
    """An operator raises kmin_floor_bytes above the switches' Kmin (1 MB): every switch port is
    outside the policy, and before any other move the tuner proposes each switch class's Kmin
    up to the floor.  Applied, the step rolls out by itself — it needs no gain to show — and the
    ToR downlinks are inside again; an operator rollback does not take them back below the
    floor."""
    d, sim, c, ops = fabric(world)
    wait_for(lambda: "tor_down" in c.json("/api/v1/cc")["settings"], 30, what="the ToR ports in the tuner's status")
    r = ops.put("/api/v1/cc/policy", json={"kmin_floor_bytes": 1200000})
    assert r.status_code == 200, r.text
    p = wait_for(lambda: next((x for x in proposals(c) if x["class"] == "tor_down"), None), 30,
                 what="a proposal for the ToR downlinks")
    assert (p["knob"], p["from"], p["to"], p["state"]) == ("kmin_bytes", 1000000, 1200000, "waiting"), p
    assert "16 of its members at kmin_bytes 1000000 are outside the policy" in p["reason"], p
    assert c.json("/api/v1/cc")["outside_policy"]["members"] == 24  # 16 downlinks, 4 uplinks, 4 spine ports
    assert ops.post(f"/api/v1/cc/proposals/{p['id']}/apply").status_code == 202

    def done():
        hist = [x for x in c.json("/api/v1/cc/history") if x["step"] == p["step"]]
        return hist if any(x["reason"].startswith(f"step {p['step']} complete") for x in hist) else None
    hist = wait_for(done, 40, what="the step rolled out to every ToR downlink")
    assert any(x["phase"] == "rollout" and "a step back inside the policy needs no gain to show" in x["reason"]
               for x in hist), hist
    st = c.json("/api/v1/cc")
    assert st["settings"]["tor_down"]["kmin_bytes"] == 1200000, st["settings"]
    assert st["outside_policy"]["members"] == 8 and \
        not any(x["class"] == "tor_down" for x in st["outside_policy"]["first"]), st["outside_policy"]
    applied = tuner_changes(c)  # the other classes' steps wait for an operator
    assert len(applied) == 16 and all(x["new"]["kmin_bytes"] == 1200000 and x["state"] == "applied" and
                                      x["target"]["agent"] in ("leaf0", "leaf1") for x in applied), applied
    # the operator undoes every step: not this one, whose old value the policy refuses
    r = wait_for(lambda: (lambda r: r if r.status_code == 202 else None)(ops.post("/api/v1/cc/rollback")), 30,
                 interval=0.3, what="a moment without a step in progress")
    back = next(x for x in r.json() if x["step"] == p["step"])
    assert not back["changes"], back
    assert c.json("/api/v1/cc")["settings"]["tor_down"]["kmin_bytes"] == 1200000


def test_policy_change_kept_and_bad_decisions(world):
    d = world.daemon(extra_conf=CC_CONF).start()
    d.token("ops", "operator")
    d.token("viewer", "viewer")
    ops, c = d.client("ops"), d.client("viewer")
    r = ops.put("/api/v1/cc/policy", json={"mode": "auto", "qdelay_target_us": 15})
    assert r.status_code == 200 and r.json()["mode"] == "auto" and r.json()["qdelay_target_us"] == 15
    # a viewer may read, not change or decide
    assert c.put("/api/v1/cc/policy", json={"mode": "off"}).status_code == 403
    assert c.post("/api/v1/cc/proposals/1/apply").status_code == 403
    for path, status, code in [("/api/v1/cc/proposals/999/apply", 404, "NO_SUCH_PROPOSAL"),
                               ("/api/v1/cc/proposals/0/reject", 400, "BAD_PARAMETER"),
                               ("/api/v1/cc/proposals/x/apply", 400, "BAD_PARAMETER")]:
        r = ops.post(path)
        assert r.status_code == status and r.json()["code"] == code, (path, r.text)
    r = ops.post("/api/v1/cc/proposals/1/apply", data="{\"x\": 1}", headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert ops.get("/api/v1/cc/proposals", params={"all": "maybe"}).status_code == 400
    # rocefabctl changes it too, and reports a bad field
    out = subprocess.run([binary("rocefabctl"), "cc", "policy", "canary_intervals=5"], capture_output=True, text=True,
                         env=dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN=d.tokens["ops"]), timeout=20)
    assert out.returncode == 0 and "\ncanary_intervals    5\n" in out.stdout, out.stdout + out.stderr
    # a byte count as a size, as set ecn takes one
    out = ctl(d, "ops", "cc", "policy", "kmax_ceiling_bytes=16MB")
    assert out.returncode == 0 and "\nkmax_ceiling_bytes  16000000 (16 MB)\n" in out.stdout, out.stdout + out.stderr
    out = subprocess.run([binary("rocefabctl"), "cc", "policy", "surprise=1"], capture_output=True, text=True,
                         env=dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN=d.tokens["ops"]), timeout=20)
    assert out.returncode != 0 and "UNKNOWN_FIELD" in out.stderr + out.stdout, out.stdout + out.stderr
    assert "(at /surprise)" in out.stderr, out.stderr  # the field refused, named (a JSON pointer)
    # kept across a restart
    d.stop()
    d.start()
    pol = d.client("ops").json("/api/v1/cc/policy")
    assert pol["mode"] == "auto" and pol["canary_intervals"] == 5, pol
    # no agent reports: the state saved before the start is not back, and the status says so
    assert d.client("ops").json("/api/v1/cc")["restoring"] is True
    out = ctl(d, "viewer", "cc")
    assert out.returncode == 0 and "restoring: the state saved before this start, if any" in out.stdout, out.stdout
    # the configuration's cc.mode (advise) is not the one in force: the log says so
    said = wait_for(lambda: [x for x in d.proc.output().splitlines() if "not the configuration's cc.mode" in x], 15,
                    what="the saved mode said in the log")
    assert "mode auto from the policy saved" in said[-1] and "(advise)" in said[-1], said


def test_settings_log_and_reasons(world):
    """Every PUT that changes the tuner's policy, the detector's or the pingmesh's configuration
    is in the settings log, kept in the database: who, when, why and which fields from and to.
    One that changes nothing or is refused leaves none."""
    d = world.daemon(extra_conf=CC_CONF).start()
    d.token("ops", "operator")
    d.token("viewer", "viewer")
    ops, c = d.client("ops"), d.client("viewer")

    def log(**params):
        return c.json("/api/v1/settings/log", params=params)
    assert log() == {"items": [], "count": 0, "truncated": False}
    before = ops.json("/api/v1/cc/policy")
    r = ops.put("/api/v1/cc/policy", json={"mode": "auto", "canary_intervals": 5, "reason": "night shift"})
    assert r.status_code == 200 and r.json()["mode"] == "auto" and "reason" not in r.json(), r.text
    # refused, or the same again: no entry
    for body, code in [({"mode": "off", "reason": 5}, "SCHEMA_VIOLATION"),
                       ({"mode": "off", "reason": "x" * 513}, "SCHEMA_VIOLATION"),
                       ({"mode": "off", "reason": "é" * 257}, "SCHEMA_VIOLATION"),  # 514 bytes
                       ({"mode": "off", "reason": "two\nlines"}, "SCHEMA_VIOLATION"),
                       ({"mode": "off", "reason": "ok \u202e ffo"}, "SCHEMA_VIOLATION"),  # shown reversed
                       ({"mode": "off", "reason": "a\u2028b"}, "SCHEMA_VIOLATION"),  # a line separator
                       ({"mode": "off", "reason": True}, "SCHEMA_VIOLATION"),
                       ({"mode": "sometimes", "reason": "x"}, "BAD_VALUE")]:
        r = ops.put("/api/v1/cc/policy", json=body)
        assert r.status_code == 400 and r.json()["code"] == code, (body, r.text)
    assert ops.put("/api/v1/cc/policy", json={"mode": "auto", "reason": "again"}).status_code == 200
    assert ops.json("/api/v1/cc/policy")["mode"] == "auto"
    (e,) = log(setting="cc/policy")["items"]
    assert e["setting"] == "cc/policy" and e["actor"] == "ops" and e["reason"] == "night shift", e
    assert e["changed"] == {"mode": {"from": before["mode"], "to": "auto"},
                            "canary_intervals": {"from": before["canary_intervals"], "to": 5}}, e
    # the detector's and the pingmesh's, without a reason and with one
    assert ops.put("/api/v1/detector/config", json={"storm_mode": "off"}).status_code == 200
    r = ops.put("/api/v1/probes/config", json={"count": 7, "reason": "fewer probes"})
    assert r.status_code == 200 and r.json()["count"] == 7, r.text
    r = ops.put("/api/v1/probes/config", json={"count": 8, "reason": ["no"]})
    assert r.status_code == 400 and r.json()["pointer"] == "/reason", r.text
    items = log()["items"]
    assert [x["setting"] for x in items] == ["probes/config", "detector/config", "cc/policy"], items
    assert items[0]["reason"] == "fewer probes" and items[0]["changed"]["count"]["to"] == 7, items[0]
    assert items[1]["reason"] is None and items[1]["changed"]["storm_mode"]["to"] == "off", items[1]
    page = log(limit=2)
    assert page["count"] == 2 and page["truncated"] is True, page
    for params in ({"setting": "cc"}, {"limit": 0}, {"limit": 1001}):
        r = c.get("/api/v1/settings/log", params=params)
        assert r.status_code == 400 and r.json()["code"] == "BAD_PARAMETER", (params, r.text)
    assert c.put("/api/v1/cc/policy", json={"mode": "off", "reason": "a viewer"}).status_code == 403
    # rocefabctl: the table, and more said
    out = ctl(d, "viewer", "settings-log", "cc/policy")
    assert out.returncode == 0 and "night shift" in out.stdout, out.stdout + out.stderr
    assert f'mode "{before["mode"]}" -> "auto"' in out.stdout, out.stdout
    out = ctl(d, "viewer", "settings-log", "--limit", "1")
    assert out.returncode == 0 and "(the newest 1; --limit N for more)" in out.stdout, out.stdout + out.stderr
    out = ctl(d, "ops", "cc", "policy", "canary_intervals=4", "--reason", "from the CLI")
    assert out.returncode == 0, out.stdout + out.stderr
    assert log(limit=1)["items"][0]["reason"] == "from the CLI"
    # changes side by side: one after the other (neither lost), each entry's "from" the one
    # before's "to", and the log replayed gives what is in force
    import threading
    start = {k: v for k, v in ops.json("/api/v1/detector/config").items()}

    def put(body):
        assert d.client("ops").put("/api/v1/detector/config", json=body).status_code == 200
    for i in range(12):
        ts = [threading.Thread(target=put, args=({"storm_mode": ("auto", "off")[i % 2]},)),
              threading.Thread(target=put, args=({"deadlock_mode": ("advise", "off")[i % 2]},))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        cfg = ops.json("/api/v1/detector/config")  # neither undid the other
        assert (cfg["storm_mode"], cfg["deadlock_mode"]) == (("auto", "off")[i % 2], ("advise", "off")[i % 2]), i
    entries = log(setting="detector/config", limit=1000)["items"][::-1]
    state = dict(start)
    for e in entries[1:]:  # the first (storm_mode above) came before `start`
        for k, ch in e["changed"].items():
            assert ch["from"] == state[k], (k, ch, state, entries)
            state[k] = ch["to"]
    assert state == ops.json("/api/v1/detector/config"), (state, entries)
    # kept across a restart
    n = log(limit=1000)["count"]
    d.stop()
    d.start()
    assert d.client("viewer").json("/api/v1/settings/log", params={"limit": 1000})["count"] == n


def test_a_refused_saved_policy_is_said_once(world):
    """A saved policy this rocefabd refuses (damaged, or of another version): the defaults are in
    force, the log says why once (not at every pass), and a policy put by an operator mends it."""
    d, sim, c, ops = fabric(world)
    d.stop()
    save_policy_behind(d, json.dumps({"mode": "advise", "canary_share": 7}))
    d.start()
    c, ops = d.client("viewer"), d.client("ops")
    wait_for(lambda: c.json("/api/v1/cc")["decisions"] >= 4, 30, what="4 decisions")
    assert c.json("/api/v1/cc/policy")["canary_share"] == 0.5
    said = [x for x in d.proc.output().splitlines() if "the saved policy is refused" in x]
    assert len(said) == 1 and "canary_share" in said[0], said
    assert "canary_share" in c.json("/api/v1/cc")["saved_policy"]  # and GET /api/v1/cc says so, rocefabctl too
    out = ctl(d, "viewer", "cc")
    assert out.returncode == 0 and "the saved policy is refused (/canary_share: must be in (0, 1]" in out.stdout, out.stdout + out.stderr
    assert ops.put("/api/v1/cc/policy", json={"canary_share": 0.25}).status_code == 200
    # mended at once: GET /api/v1/cc no longer says it (it did until the next pass: a trial)
    assert "saved_policy" not in c.json("/api/v1/cc")
    n = c.json("/api/v1/cc")["decisions"]
    wait_for(lambda: c.json("/api/v1/cc")["decisions"] >= n + 2, 30, what="2 more decisions")
    assert c.json("/api/v1/cc/policy")["canary_share"] == 0.25
    assert len([x for x in d.proc.output().splitlines() if "the saved policy is refused" in x]) == 1
    assert "saved_policy" not in c.json("/api/v1/cc")


@pytest.mark.parametrize("saved,want", [
    # of an older rocefabd: loop_bytes 0 was the default, the hosts' ranges could be fractional
    ({"mode": "off", "loop_bytes": 0, "ai_min_mbps": 2.5, "hai_max_mbps": 399.5, "cnp_gap_min_us": 2.5,
      "time_reset_max_us": 1000.5, "canary_share": 0.25},
     {"mode": "off", "loop_bytes": 150000, "ai_min_mbps": 3, "hai_max_mbps": 399, "cnp_gap_min_us": 3,
      "time_reset_max_us": 1000, "canary_share": 0.25}),
    # refused whole: the defaults, but the saved mode (a tuner turned off stays off)
    ({"mode": "off", "canary_share": 7}, {"mode": "off", "canary_share": 0.5}),
    # a hosts pattern that leaves a '[' open (refused at a PUT now): escaped, the same hosts
    ({"mode": "off", "loop_bytes": 0, "canary_share": 0.25, "host_classes": [{"name": "gpu", "hosts": "gpu[1-4"}]},
     {"mode": "off", "canary_share": 0.25, "host_classes": [{"name": "gpu", "hosts": "gpu\\[1-4"}]}),
])
def test_a_saved_policy_of_an_older_release(world, saved, want):
    d = world.daemon(extra_conf=CC_CONF + "mode = auto\n")
    d.token("viewer", "viewer")
    d.start()
    d.stop()
    save_policy_behind(d, json.dumps(saved))
    d.start()
    c = d.client("viewer")
    st = wait_for(lambda: (lambda x: x if "saved_policy" in x else None)(c.json("/api/v1/cc")), 30,
                  what="the saved policy read")
    pol = c.json("/api/v1/cc/policy")
    assert {k: pol[k] for k in want} == want, pol
    assert st["mode"] == want["mode"] and ("older rocefabd" in st["saved_policy"]) == ("loop_bytes" in saved), st
    said = [x for x in d.proc.output().splitlines() if "the saved policy is" in x]
    assert len(said) == 1 and ("older rocefabd" in said[0]) == ("loop_bytes" in saved), said
    # the saved mode over the configuration's: said as for a policy taken whole
    assert "mode off from the policy saved" in d.proc.output() or "refused" in said[0], d.proc.output()


def test_no_tuner_without_fast_lane(world):
    d = world.daemon(extra_conf="[detector]\ninterval = 0\n" + CC_CONF).start()
    d.token("viewer", "viewer")
    r = d.client("viewer").get("/api/v1/cc")
    assert r.status_code == 404 and r.json()["code"] == "NO_TUNER"
    assert "the tuner reads the fast lane" in d.proc.output()


def test_off_is_a_brake(world):
    """Turning the tuner off drops what waits for an operator (and, in auto mode, undoes a step
    under way): nothing the tuner proposed is left to apply."""
    d, sim, c, ops = fabric(world)
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    # the operator's stop from the CLI ("off" is the mode, not a boolean)
    out = ctl(d, "ops", "cc", "policy", "mode=off")
    assert out.returncode == 0 and "\nmode                off\n" in out.stdout, out.stdout + out.stderr
    assert proposals(c) == []
    rec = next(x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"])
    assert rec["state"] == "rejected" and rec["decided_by"] == "ops", rec
    assert rec["error"] == "the tuner was turned off", rec
    r = ops.post(f"/api/v1/cc/proposals/{p['id']}/apply")
    assert r.status_code == 409 and r.json()["code"] == "NOT_WAITING", r.text
    assert not tuner_changes(c)
    m = c.get("/metrics").text
    assert 'rocefab_cc_mode{mode="off"} 1' in m
    # every proposal the stop turned down is counted (there may be several waiting)
    n = sum(x["state"] == "rejected" for x in c.json("/api/v1/cc/history"))
    assert n >= 1 and f'rocefab_cc_proposals_total{{outcome="rejected"}} {n}\n' in m, (n, m)


def test_a_policy_change_withdraws_what_waits_and_off_undoes_as_asked(world):
    """A canary waiting for an operator was made under the policy of then (its value, its share
    of the class): any change of the policy but its mode withdraws it (rejected by the one who
    changed the policy, with why), the log names every field changed, and the move comes again
    under the new policy.  Turning the tuner off while a canary is out undoes it as asked by
    that operator, in the history and in the change log."""
    d, sim, c, ops = fabric(world)
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    # a long canary, judged with a wide tolerance: nothing rolls it back before the tuner is off
    r = ops.put("/api/v1/cc/policy", json={"canary_share": 0.25, "canary_intervals": 6, "tolerance": 10,
                                           "pmax_step": 0.2})
    assert r.status_code == 200, r.text
    rec = next(x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"])
    assert rec["state"] == "rejected" and rec["decided_by"] == "ops", rec
    assert rec["error"].startswith("withdrawn: the policy changed while it waited"), rec
    r = ops.post(f"/api/v1/cc/proposals/{p['id']}/apply")
    assert r.status_code == 409 and r.json()["code"] == "NOT_WAITING", r.text
    # by whom: the operator's policy change, not the tuner (as it said before: a trial)
    assert "(withdrawn: ops changed the policy)" in r.json()["detail"], r.text
    said = [x for x in d.proc.output().splitlines() if "policy changed by ops" in x]
    assert said and "canary_share 0.5 -> 0.25, canary_intervals 3 -> 6" in said[-1], said
    assert "pmax_step 0.1 -> 0.2," in said[-1] and "tolerance 0.25 -> 10" in said[-1], said  # not 0.10000000000000001
    # a PUT that changes nothing is no change (it read "policy changed ...: nothing changed")
    assert ops.put("/api/v1/cc/policy", json={"reason": "a look"}).status_code == 200
    wait_for(lambda: 'policy saved as it was by ops (reason "a look")' in d.proc.output(), 5, what="the log line")
    assert not [x for x in d.proc.output().splitlines() if "nothing changed" in x]
    assert not tuner_changes(c)
    # made again; applied; the tuner turned off while its canary is out
    q = wait_for(lambda: next((x for x in proposals(c) if x["id"] != p["id"]), None), 30, what="a new proposal")
    assert ops.post(f"/api/v1/cc/proposals/{q['id']}/apply").status_code == 202
    wait_for(lambda: (lambda x: x if x and all(y["state"] == "applied" for y in x) else None)(tuner_changes(c)),
             20, interval=0.2, what="the canary's changes applied")
    st = c.json("/api/v1/cc")["steps_in_progress"]
    assert any(x["id"] == q["step"] and x["proposal"] == q["id"] for x in st), st  # 6 intervals to judge it
    assert ops.put("/api/v1/cc/policy", json={"mode": "off"}).status_code == 200
    back = next(x for x in c.json("/api/v1/cc/history") if x["step"] == q["step"] and x["phase"] == "rollback")
    assert back["decided_by"] == "ops", back
    ch = wait_for(lambda: (lambda x: x if x and all(y["state"] == "applied" for y in x) else None)(
        [y for y in tuner_changes(c) if y["batch"] == next(
            (h.get("change_batch") for h in c.json("/api/v1/cc/history") if h["id"] == back["id"]), -1)]),
        20, what="the rollback applied")
    assert all(x["actor"] == "tuner (asked by ops)" for x in ch), ch


def test_a_saved_policy_changed_under_rocefabd_withdraws_what_waits(world):
    """The policy saved in the database changed without a PUT (a database restored or edited):
    rocefabd takes it at its next pass, and a canary waiting for an operator, made under the
    policy before, is withdrawn with why, though no operator decided it."""
    d, sim, c, ops = fabric(world)
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    pol = ops.json("/api/v1/cc/policy")
    pol["canary_share"] = 0.25
    save_policy_behind(d, json.dumps(pol))
    rec = wait_for(lambda: next((x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"] and
                                 x["state"] == "rejected"), None), 20, what="the waiting canary withdrawn")
    assert rec["error"] == "withdrawn: the policy saved in the database changed while it waited", rec
    assert "decided_by" not in rec, rec
    assert c.json("/api/v1/cc/policy")["canary_share"] == 0.25


def test_auto_approves_what_waits_as_asked_by_the_operator(world):
    """Switching from advise to auto approves the canary waiting for an operator: the one who
    switched decided it, and its changes go out as asked by them, not as the tuner's own."""
    d, sim, c, ops = fabric(world)
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    assert ops.put("/api/v1/cc/policy", json={"mode": "auto"}).status_code == 200
    rec = next(x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"])
    assert rec["state"] in ("approved", "applied") and rec["decided_by"] == "ops", rec

    def batch():
        rec = next(x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"])
        ch = [y for y in tuner_changes(c) if y["batch"] == rec.get("change_batch")]
        return ch if ch and all(y["state"] == "applied" for y in ch) else None
    ch = wait_for(batch, 20, what="the canary's changes applied")
    assert len(ch) == len(p["changes"]) and all(x["actor"] == "tuner (asked by ops)" for x in ch), ch


def test_rollback_rejects_what_waits(world):
    """In advise mode an operator's rollback while canaries wait for a decision: nothing of them
    was applied, so they are rejected (by that operator, said in the answer) and the rollback
    goes through."""
    d, sim, c, ops = fabric(world)
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    r = ops.post("/api/v1/cc/rollback", json={"reason": "INC-7"})
    assert r.status_code == 202, r.text
    # (a canary per class may wait)
    assert p["id"] in [x["id"] for x in r.json()] and \
        all((x["phase"], x["state"], x["decided_by"], x["decision_reason"]) == ("canary", "rejected", "ops", "INC-7")
            for x in r.json()), r.text
    assert proposals(c) == []
    rec = next(x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"])
    assert rec["state"] == "rejected" and rec["decided_by"] == "ops", rec
    assert not tuner_changes(c)
    out = ctl(d, "ops", "cc", "rollback")  # nothing to undo: said, not an empty table
    assert out.returncode == 0 and out.stdout.strip() == "none", out.stdout + out.stderr


def test_a_timed_out_canary_is_undone_on_every_member(world):
    """A canary whose changes time out (the agents stop answering: the simulator is frozen) is
    a failed proposal, and its step is rolled back on every member it named, whether or not a
    change went through: an agent that applied it but confirmed too late is not left out."""
    d = world.daemon(extra_conf="[changes]\ndeadline = 2s\n" + CC_CONF + "mode = advise\n").start()
    _, agent_tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    sim = world.sim(os.path.join(LIVE, "cc.json"), daemon=d, token_file=agent_tok, interval="0.3s").start()
    c, ops = d.client("viewer"), d.client("ops")
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    sim.proc.p.send_signal(signal.SIGSTOP)
    try:
        assert ops.post(f"/api/v1/cc/proposals/{p['id']}/apply").status_code == 202

        def failed():
            h = c.json("/api/v1/cc/history")
            canary = next((x for x in h if x["id"] == p["id"]), None)
            back = next((x for x in h if x["step"] == p["step"] and x["phase"] == "rollback"), None)
            return (canary, back) if canary and canary.get("outcome") == "failed" and back else None
        canary, back = wait_for(failed, 30, what="the canary failed and its rollback proposed")
        assert canary["error"], canary
        assert back["nchanges"] == canary["nchanges"] > 0, (canary, back)
        assert {(x["node"], x.get("port")) for x in back["changes"]} == \
            {(x["node"], x.get("port")) for x in canary["changes"]}
        assert all(x["to"] == pytest.approx(p["from"]) for x in back["changes"]), back
    finally:
        sim.proc.p.send_signal(signal.SIGCONT)
    # the agents answer again: the rollback goes through
    wait_for(lambda: next((x for x in c.json("/api/v1/cc/history") if x["id"] == back["id"]), {}).get("outcome")
             == "applied", 60, what="the rollback applied")


def test_an_open_proposal_is_an_event_when_it_changes_not_every_pass(world):
    """Every pass refreshes the records of the open proposals (a policy change or the pass may
    have decided some); the event stream hears of a proposal when its record changes, not at each
    pass (it once carried two events per open proposal per second).  An operator's reject then
    changes it: that event must come on the same stream (proof that it was listening all along; a
    quiet fabric may publish nothing else in those passes)."""
    d, sim, c, ops = fabric(world)
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    st = Stream(d.url, d.tokens["viewer"])
    try:
        d0 = c.json("/api/v1/cc")["decisions"]
        deadline = time.monotonic() + 30
        while c.json("/api/v1/cc")["decisions"] < d0 + 4:
            assert time.monotonic() < deadline, "the tuner stopped deciding"
            st._recv(0.2)
        st._recv(0.5)
        # in advise a waiting proposal waits for an operator (or a mode or policy change)
        still = next(x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"])
        assert still["state"] == "waiting", still
        before = len(parse_events(dechunk(st.buf)))
        r = ops.post(f"/api/v1/cc/proposals/{p['id']}/reject")
        assert r.status_code == 200, r.text

        def rejected(evs):
            return any(x.get("event") == "proposal" and json.loads(x["data"])["id"] == p["id"]
                       and json.loads(x["data"])["state"] != "waiting" for x in evs[before:])
        evs = st.next_events(rejected)
    finally:
        st.close()
    # no event for it while it waited (each pass refreshed it), however late it was read: the
    # reject's own event is the first, and it is not "waiting"
    assert not [x for x in evs if x.get("event") == "proposal" and json.loads(x["data"]) ==
                {"id": p["id"], "state": "waiting"}], evs


def test_probes_feed_the_tuner(world):
    """The pingmesh's tail latency is one of the tuner's signals (a step after which the probes
    got much slower is rolled back: tests/unit/test_tuner.c): every decision interval takes the
    median pair's p99 of the probe results reported in it.  Its value lies among the p99s the
    results API holds for the primary op and size."""
    d, sim, c, ops = fabric(world)

    def probed():
        sig = c.json("/api/v1/cc").get("signals") or {}
        return sig if sig.get("probe_p99_us", -1) > 0 else None

    sig = wait_for(probed, 40, what="the probes' p99 among the tuner's signals")
    items = c.json("/api/v1/probes/results", params={"op": "write", "size": "64", "limit": 100000})["items"]
    p99s = [x["p99_us"] for x in items if x.get("p99_us") is not None and x["ok"] > 0]
    assert p99s, items[:3]
    assert min(p99s) <= sig["probe_p99_us"] <= max(p99s), (sig, min(p99s), max(p99s))


def test_restart_rolls_back_the_step_under_way_and_keeps_history(world):
    """rocefabd stopped in the middle of a step: the next start puts the members the canary
    changed back (half a step is no setting anyone chose), whatever the mode, as the tuner's
    audited changes; the history and the ids go on across the restart."""
    d, sim, c, ops = fabric(world)
    # a long canary: the step is still being judged when rocefabd stops; a long tabu: the hold
    # the rollback sets outlasts a slow machine's restarts
    assert ops.put("/api/v1/cc/policy", json={"canary_intervals": 60, "tabu_intervals": 600}).status_code == 200
    p = wait_for(lambda: (proposals(c) or [None])[0], 30, what="a waiting proposal")
    assert ops.post(f"/api/v1/cc/proposals/{p['id']}/apply").status_code == 202
    canary = wait_for(lambda: (lambda h: h if h and h.get("outcome") == "applied" else None)(
        next((x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"]), None)), 30, what="the canary applied")
    # the tuner calls a proposal applied once every change of it is (read back), not before
    before = tuner_changes(c)
    assert before and all(x["state"] == "applied" and x["new"] for x in before), before
    assert all(x["new"][p["knob"]] == pytest.approx(p["to"]) for x in before), before
    assert any(x["id"] == p["step"] for x in c.json("/api/v1/cc")["steps_in_progress"])

    def steps_total():
        return next((int(x.split()[1]) for x in c.get("/metrics").text.splitlines()
                     if x.startswith("rocefab_cc_steps_total ")), None)
    steps = steps_total()
    assert steps >= 1
    d.stop()
    d.start()
    c, ops = d.client("viewer"), d.client("ops")
    # the steps counted since the tuner first ran are not shown before its saved state is
    # back (it read 0, then jumped back: a false increase of all of them in Prometheus)
    after = steps_total()
    assert after is None or after >= steps, (after, steps)
    # the history of before is still there
    assert any(x["id"] == p["id"] and x.get("outcome") == "applied" for x in c.json("/api/v1/cc/history"))
    # the step is rolled back at the first decision, in advise mode, by the tuner itself
    rb = wait_for(lambda: next((x for x in c.json("/api/v1/cc/history") if x["step"] == p["step"] and
                                x["phase"] == "rollback" and x.get("outcome") == "applied"), None), 40,
                  what="the step under way rolled back after the restart")
    assert "under way when the tuner stopped" in rb["reason"], rb
    assert c.json("/api/v1/cc")["restoring"] is False  # the saved state is back
    # nothing of the previous process still looks like waiting for an operator
    waiting = {x["id"] for x in proposals(c)}
    stale = [x for x in c.json("/api/v1/cc/history") if x["id"] < rb["id"] and x["state"] in ("waiting", "approved")]
    assert not stale and not any(i <= p["id"] for i in waiting), (stale, waiting)
    assert rb["id"] > p["id"] and rb["nchanges"] == canary["nchanges"], (rb, canary)
    undo = [x for x in tuner_changes(c) if x["batch"] == rb["change_batch"]]
    assert undo and all(x["actor"] == "tuner" and x["state"] == "applied" for x in undo), [(x["actor"], x["state"], x.get("error")) for x in undo]
    assert all(x["new"][p["knob"]] == pytest.approx(p["from"]) for x in undo), undo
    assert sorted(x["target"]["device"] + x["target"].get("port", "") for x in undo) == \
        sorted(x["target"]["device"] + x["target"].get("port", "") for x in before)
    assert "under way when rocefabd stopped: rolled back" in d.proc.output()
    # the move is held back (not tried again for tabu_intervals), and a second restart keeps
    # the hold with what is left of it
    held = {"class": p["class"], "knob": p["knob"], "direction": "up" if p["to"] > p["from"] else "down"}

    def hold(c):
        return next((x for x in c.json("/api/v1/cc")["holds"] if {k: x.get(k) for k in held} == held), None)
    left = wait_for(lambda: hold(c), 10, interval=0.3, what="the move held back")["intervals"]
    assert 0 < left <= 600, left
    out = ctl(d, "viewer", "cc")
    assert "held back for" in out.stdout and f"{p['class']} {p['knob']} {held['direction']}" in out.stdout, out.stdout
    d.stop()
    d.start()
    c = d.client("viewer")
    again = wait_for(lambda: hold(c), 20, interval=0.3, what="the hold taken back after the second restart")
    # saved on a clock of tens of intervals: up to 19 more
    assert 0 < again["intervals"] <= left + 19, (again, left)
    # a hold this version cannot read is dropped (it only delays a move), and the log says so
    d.stop()
    db = sqlite3.connect(d.db, timeout=10)
    with db:
        st = json.loads(db.execute("SELECT value FROM meta WHERE key = 'cc_state'").fetchone()[0])
        holds = st["tuner"]["holds"]
        assert holds, st["tuner"]
        for x in holds:
            x["knob"] = "kmid_bytes"  # a knob of no version
        db.execute("UPDATE meta SET value = ? WHERE key = 'cc_state'", (json.dumps(st),))
    db.close()
    d.start()
    c = d.client("viewer")
    said = wait_for(lambda: [x for x in d.proc.output().splitlines() if "not taken back" in x], 20,
                    what="the dropped holds said in the log")
    assert "%d held-back move" % len(holds) in said[0] and "not read" in said[0], said
    assert hold(c) is None and "is refused" not in d.proc.output()  # the rest of the state is taken


def waiting_switch_proposal(c, ops, skip=()):
    """A canary of a switch class waiting for an operator (those of the hosts are rejected)."""
    def one():
        for x in proposals(c):
            if x["state"] != "waiting" or x["id"] in skip:
                continue
            if x["class"] in ("tor_down", "tor_up", "spine"):
                return x
            ops.post(f"/api/v1/cc/proposals/{x['id']}/reject")
        return None
    return wait_for(one, 40, what="a waiting proposal of a switch class")


def canary_member_set_by_another(world):
    """A switch canary waiting for an operator, one of whose ports a second operator has just
    set (the change on its way): the fabric, the proposal, that change of it, its knob and the
    value set."""
    d, sim, c, ops = fabric(world)
    d.token("ops2", "operator")
    ops2 = d.client("ops2")
    p = waiting_switch_proposal(c, ops)
    ch = p["changes"][0]
    knob, was = p["knob"], ch["from"]
    new = round(was * 0.9, 3) if knob == "pmax" else int(was * 0.9)
    r = ops2.put(f"/api/v1/switches/{ch['node']}/ports/{ch['port']}/queues/3/ecn",
                 json={knob: new, "reason": "test: set by hand"})
    assert r.status_code == 202, r.text
    return d, sim, c, ops, p, ch, knob, new


def test_a_canary_whose_member_was_set_meanwhile_is_withdrawn(world):
    """Another operator sets a port of a canary waiting for an operator: the canary is withdrawn
    (rejected by the tuner, saying which member moved), since applied it would set a value chosen
    for the setting before and its rollback would restore that setting, not the operator's; the
    move comes again without that port.  Before, the canary went out as it was made."""
    d, sim, c, ops, p, ch, knob, new = canary_member_set_by_another(world)
    rec = wait_for(lambda: (lambda x: x if x["state"] != "waiting" else None)(
        next(x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"])), 30, what="the canary withdrawn")
    assert rec["state"] == "rejected" and "decided_by" not in rec, rec
    assert rec["error"].startswith("withdrawn: ") and f"{ch['node']} {ch['port']}'s {knob}" in rec["error"], rec
    r = ops.post(f"/api/v1/cc/proposals/{p['id']}/apply")
    assert r.status_code == 409 and "(withdrawn by the tuner)" in r.json()["detail"], r.text
    assert not tuner_changes(c)  # nothing of it went out
    # the port keeps the operator's value; the move comes again, without that port
    q = wait_for(lambda: next((x for x in proposals(c) if x["id"] > p["id"] and x["class"] == p["class"] and
                               x["knob"] == knob), None), 40, what="the move made again")
    assert not any(x["node"] == ch["node"] and x.get("port") == ch["port"] for x in q["changes"]), q
    assert sim.ctl("GET", f"/v1/devices/{ch['node']}/config")["ports"][ch["port"]]["ecn"][3][knob] == \
        pytest.approx(new)


def test_applying_a_canary_an_operator_just_changed_is_refused(world):
    """An operator's change to a member of a waiting canary, still on its way, counts when another
    applies the canary: 409 (it was approved, 202, and withdrawn at the tuner's next pass)."""
    _, _, c, ops, p, ch, knob, _ = canary_member_set_by_another(world)
    r = ops.post(f"/api/v1/cc/proposals/{p['id']}/apply")
    assert r.status_code == 409 and r.json()["code"] in ("WITHDRAWN", "NOT_WAITING"), r.text
    if r.json()["code"] == "WITHDRAWN":
        assert f"{ch['node']} {ch['port']}'s {knob}" in r.json()["detail"], r.json()
    assert not tuner_changes(c)


def test_a_canary_whose_port_xoff_fell_is_withdrawn(world):
    """An operator lowers the PFC XOFF threshold of a port in a canary waiting for an operator to
    100 KB above its Kmax, less than a control loop (loop_bytes, 150 KB): the canary is withdrawn,
    saying so, whether the apply comes before the tuner reads the new threshold (then it is
    checked again before it is sent) or after (409 WITHDRAWN, or NOT_WAITING once a decision
    withdrew it), and nothing of it goes out.  Before, only the members' values of the stepped
    knob were compared: it went out, leaving Kmax within a control loop of XOFF."""
    d, sim, c, ops = fabric(world)
    p = waiting_switch_proposal(c, ops)
    ch = p["changes"][0]
    def kmax_now():
        return c.json(f"/api/v1/switches/{ch['node']}/ports/{ch['port']}/queues/3/ecn")["items"][0]["values"][
            "kmax_bytes"]

    kmax = kmax_now()
    r = ops.put(f"/api/v1/switches/{ch['node']}/ports/{ch['port']}/pfc",
                json={"xoff_bytes": kmax + 100000, "xon_bytes": kmax // 2, "reason": "test: XOFF lowered"})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    wait_for(lambda: c.json(f"/api/v1/changes/{cid}")["state"] == "applied", 10, what="the XOFF applied")
    r = ops.post(f"/api/v1/cc/proposals/{p['id']}/apply")
    assert r.status_code in (202, 409), r.text
    if r.status_code == 409:
        assert r.json()["code"] in ("WITHDRAWN", "NOT_WAITING"), r.text
        if r.json()["code"] == "WITHDRAWN":
            assert "control loop" in r.json()["detail"], r.text
    rec = wait_for(lambda: (lambda x: x if x["state"] not in ("waiting", "approved") else None)(
        next(x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"])), 30, what="the canary withdrawn")
    assert rec["state"] == "rejected" and rec["error"].startswith("withdrawn: "), rec
    assert "less than one control loop" in rec["error"], rec
    assert not tuner_changes(c)  # nothing of it went out
    assert kmax_now() == kmax


def test_a_crash_after_a_canary_is_stored_rolls_it_back(world):
    """rocefabd ends between storing a canary's change set and saving that it did (a crash):
    the state it saved just before names the set by its reason, so the next start finds the
    batch, records it on the canary, waits for it and rolls the step back.  Before, the state
    showed the canary waiting: its changes went out, the history said it was never applied,
    and nothing undid them.  The crash is made by editing the state saved at a clean stop to
    what it holds in that window (the set stored, its batch not saved yet).  Records the
    previous process had waiting are shown rejected from the start, not while it restores."""
    d, sim, c, ops = fabric(world)
    assert ops.put("/api/v1/cc/policy", json={"canary_intervals": 60, "tabu_intervals": 600}).status_code == 200
    p = waiting_switch_proposal(c, ops)
    assert ops.post(f"/api/v1/cc/proposals/{p['id']}/apply").status_code == 202
    canary = wait_for(lambda: (lambda h: h if h and h.get("outcome") == "applied" else None)(
        next((x for x in c.json("/api/v1/cc/history") if x["id"] == p["id"]), None)), 30, what="the canary applied")
    batch = canary["change_batch"]
    sent = [x for x in tuner_changes(c) if x["batch"] == batch]
    assert sent and f"(proposal {p['id']})" in sent[0]["reason"], sent  # the audit log names the proposal
    # another proposal waits when rocefabd stops
    other = wait_for(lambda: next((x for x in proposals(c) if x["state"] == "waiting"), None), 40,
                     what="another waiting proposal")
    d.stop()
    db = sqlite3.connect(d.db, timeout=10)
    with db:
        st = json.loads(db.execute("SELECT value FROM meta WHERE key = 'cc_state'").fetchone()[0])
        assert any(x["step"] == p["step"] for x in st["tuner"]["under_way"]), st["tuner"]["under_way"]
        rec = next(x for x in st["history"] if x["id"] == p["id"])
        rec["state"] = "approved"
        for k in ("change_batch", "outcome"):
            rec.pop(k, None)
        st["out"] = [{"proposal": p["id"], "reason": sent[0]["reason"]}]
        db.execute("UPDATE meta SET value = ? WHERE key = 'cc_state'", (json.dumps(st),))
    db.close()
    d.start()
    c = d.client("viewer")
    # from the first answer on, nothing of the previous process waits
    while True:
        st = c.json("/api/v1/cc")
        assert not any(x["id"] == other["id"] for x in proposals(c)), proposals(c)
        if not st["restoring"]:
            break
        time.sleep(0.1)
    hist = c.json("/api/v1/cc/history")
    rec = next(x for x in hist if x["id"] == p["id"])
    assert rec.get("change_batch") == batch and rec.get("outcome") == "applied", rec
    assert next(x for x in hist if x["id"] == other["id"])["state"] == "rejected"
    rb = wait_for(lambda: next((x for x in c.json("/api/v1/cc/history") if x["step"] == p["step"] and
                                x["phase"] == "rollback" and x.get("outcome") == "applied"), None), 40,
                  what="the stored canary rolled back")
    undo = [x for x in tuner_changes(c) if x["batch"] == rb["change_batch"]]
    assert sorted(x["target"]["device"] + x["target"].get("port", "") for x in undo) == \
        sorted(x["target"]["device"] + x["target"].get("port", "") for x in sent)
    assert all(x["new"][p["knob"]] == pytest.approx(p["from"]) for x in undo), undo


def test_an_operator_rollback_of_steps_that_depend_on_each_other(world):
    """Two completed steps of one port, Kmax 1.5 MB -> 3 MB and then Kmin 1 MB -> 1.5 MB: the
    operator's rollback undoes the Kmin first, and the Kmax's change set, which the Kmin
    reported now (1.5 MB, not below it) would refuse, is checked against the Kmin on its way
    and stored at once, in the same pass, to be sent once that one is applied: the port ends at
    Kmin 1 MB, Kmax 1.5 MB.  The steps are written into the saved state as the tuner would have
    left them."""
    d, sim, c, ops = fabric(world)
    ecn = "/api/v1/switches/leaf0/ports/h0/queues/3/ecn"
    wait_for(lambda: c.get(ecn).status_code == 200, 20, what="the port's ECN settings reported")
    r = ops.put(ecn, json={"kmin_bytes": 1500000, "kmax_bytes": 3000000, "reason": "test: as the two steps left it"})
    assert r.status_code == 202, r.text
    wait_for(lambda: c.json(ecn)["items"][0]["values"]["kmin_bytes"] == 1500000, 20, what="the port set")
    assert ops.put("/api/v1/cc/policy", json={"mode": "off"}).status_code == 200
    wait_for(lambda: c.json("/api/v1/cc")["restoring"] is False, 30, what="the tuner's state saved")
    d.stop()
    db = sqlite3.connect(d.db, timeout=10)
    with db:
        st = json.loads(db.execute("SELECT value FROM meta WHERE key = 'cc_state'").fetchone()[0])
        member = ["leaf0\x1fh0"]
        st["tuner"]["done"] = [
            {"step": 901, "class": "tor_down", "knob": "kmax_bytes", "from": 1500000, "to": 3000000, "members": member},
            {"step": 902, "class": "tor_down", "knob": "kmin_bytes", "from": 1000000, "to": 1500000, "members": member}]
        db.execute("UPDATE meta SET value = ? WHERE key = 'cc_state'", (json.dumps(st),))
    db.close()
    d.start()
    c, ops = d.client("viewer"), d.client("ops")
    wait_for(lambda: c.json("/api/v1/cc")["restoring"] is False, 30, what="the saved state taken back")
    r = ops.post("/api/v1/cc/rollback")
    assert r.status_code == 202 and len(r.json()) == 2, r.text
    ids = [x["id"] for x in r.json()]
    recs = wait_for(lambda: (lambda h: h if all(h[i].get("outcome") for i in ids) else None)(
        {x["id"]: x for x in c.json("/api/v1/cc/history") if x["id"] in ids}), 40, what="both undone")
    assert all(recs[i]["outcome"] == "applied" for i in ids), recs
    v = c.json(ecn)["items"][0]["values"]
    assert (v["kmin_bytes"], v["kmax_bytes"]) == (1000000, 1500000), v
    # the Kmax's change was made before the Kmin's was read back: its "old" still shows 1.5 MB
    undo = [x for x in tuner_changes(c) if x["params"] == {"kmax_bytes": 1500000}]
    assert undo and undo[0]["old"]["kmin_bytes"] == 1500000 and undo[0]["state"] == "applied", undo
    kmin_undo = [x["id"] for x in tuner_changes(c) if x["params"] == {"kmin_bytes": 1000000}]
    assert undo[0]["after"] == kmin_undo[-1:], (undo, kmin_undo)
