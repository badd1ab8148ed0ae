"""Running and judging the PFC deadlock/storm detector inside the simulation, shared by
tests/system/test_detect.py (a few runs) and tests/bench/bench_detect.py (make bench-detect: every
seed and position, beside the SONiC-style pfcwd baseline).

The controllers see only what the agents would report; the judging here uses the simulation's
ground truth: the deadlocks it really holds (from which packet came in where), the storm it
injected, the bytes it dropped and what every host received per interval."""
import copy
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCEN = os.path.join(ROOT, "sim", "scenarios", "detect")
DEADLOCKS = ("deadlock", "persistent")
ALARMS = ("deadlock", "persistent", "pause_storm")


def load(name):
    with open(os.path.join(SCEN, name + ".json")) as f:
        return json.load(f)


def sim_binary():
    build = os.environ.get("ROCEFAB_BUILD", os.path.join(ROOT, "build"))
    return os.path.join(build if os.path.isabs(build) else os.path.join(ROOT, build), "rocefab-sim")


def run(scenario, seed, controller="detector", mitigate="auto", baseline=True, interval="100us",
        extra=()):
    """Runs a scenario (a dict) with a controller; returns the results' JSON."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "scenario.json")
        out = os.path.join(d, "out.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        args = [sim_binary(), "run", path, "--quiet", "--no-timing", "--seed", str(seed), "--json", out,
                "--controller", controller, "--interval", interval]
        if controller == "detector":
            args += ["--mitigate", mitigate]
        if baseline:
            args += ["--baseline", "pfcwd"]
        r = subprocess.run(args + list(extra), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        with open(out) as f:
            return json.load(f)


# --- variants: where the fault is --------------------------------------------------------------

def loop_variant(leaf, spine, dst):
    """The routing loop between leaf<leaf> and spine<spine> for host h<dst> (under the other
    leaf); the other leaf's remaining hosts exchange the unaffected traffic."""
    s = load("loop-deadlock")
    other = 1 - leaf
    senders = ["h%d" % (4 * leaf + i) for i in range(4)]
    locals_ = ["h%d" % (4 * other + i) for i in range(4) if 4 * other + i != dst]
    s["workloads"][0]["flows"] = [{"src": h, "dst": "h%d" % dst, "size_bytes": 8000000, "start_us": 250}
                                  for h in senders]
    for k, w in enumerate(s["workloads"][1:]):
        w["senders"] = [locals_[k]]
        w["receiver"] = locals_[(k + 1) % 3]
    s["faults"][0]["routes"] = [{"switch": "leaf%d" % leaf, "dst": "h%d" % dst, "via": "spine%d" % spine},
                                {"switch": "spine%d" % spine, "dst": "h%d" % dst, "via": "leaf%d" % leaf}]
    return s


def storm_senders(host):
    """Three hosts on the other leaves that send to the culprit."""
    return ["h%d" % ((host + 4 * k + 3) % 16) for k in (1, 2, 3)]


def storm_variant(host):
    """The storm at h<host>; its senders and the culprit are the affected hosts."""
    s = load("storm")
    senders = storm_senders(host)
    s["workloads"][0]["hosts"] = ["h%d" % i for i in range(16) if i != host and "h%d" % i not in senders]
    s["workloads"][1]["receiver"] = "h%d" % host
    s["workloads"][1]["senders"] = senders
    s["faults"][0]["host"] = "h%d" % host
    return s


# --- judging ---------------------------------------------------------------------------------------

def controller(doc):
    return doc["controller"]


def alarms(c, classes=ALARMS):
    return [f for f in c["findings"] if f["class"] in classes]


def judge_deadlocks(c):
    """Every deadlock the simulation held named with exactly its ports and priority, within two
    intervals of its freeze; no other deadlock named.  Returns a dict of figures."""
    iv = c["interval_us"]
    truth = c["truth_deadlocks"]
    named = alarms(c, DEADLOCKS)
    out = {"truth": len(truth), "named": 0, "late": 0, "wrong": 0, "latency_intervals": []}
    for t in truth:
        hit = [f for f in named if sorted(f["ports"]) == t["ports"] and f["priority"] == t["priority"]]
        if not hit:
            continue
        out["named"] += 1
        lat = (min(f["detected_us"] for f in hit) - t["frozen_since_us"]) / iv
        out["latency_intervals"].append(lat)
        if lat > 2:
            out["late"] += 1
    truths = [(t["ports"], t["priority"]) for t in truth]
    out["wrong"] = sum(1 for f in named if (sorted(f["ports"]), f["priority"]) not in truths)
    return out


def judge_storm(c, culprit):
    storms = alarms(c, ("pause_storm",))
    named = [f for f in storms if f.get("culprit") == culprit]
    others = sorted({f.get("culprit") for f in storms if f.get("culprit") != culprit})
    return {"named": bool(named), "others": others,
            "victims": max([f.get("victims_total", 0) for f in named] or [0]),
            "detected_us": min([f["detected_us"] for f in named] or [None]) if named else None}


def judge_recovery(c, fault_us, exclude, detected_us):
    """Intervals from detection until the unaffected hosts (all but exclude) receive >= 90% of
    what they did per interval before the fault; None when they never do."""
    tl = c["timeline"]
    ts = tl["t_us"]
    iv = c["interval_us"]
    hosts = [h for h in tl["host_rx_bytes"] if h not in exclude]
    per = [sum(tl["host_rx_bytes"][h][i] for h in hosts) for i in range(len(ts))]
    before = [per[i] for i in range(1, len(ts)) if ts[i] <= fault_us]  # the first is warm-up
    if not before or detected_us is None:
        return None, 0
    ref = sum(before) / len(before)
    for i, t in enumerate(ts):
        if t > detected_us and per[i] >= 0.9 * ref:
            return round((t - detected_us) / iv, 2), ref
    return None, ref


def actions_reversed(c):
    """Every lossless_off has a later restore, or its finding is persistent."""
    persistent = {f["id"] for f in c["findings"] if f["class"] == "persistent"}
    offs = [a for a in c["actions"] if a["op"] == "lossless_off"]
    restores = [a for a in c["actions"] if a["op"] == "restore" and a.get("ok")]
    left = []
    for a in offs:
        back = [r for r in restores if (r["node"], r["port"], r["priority"]) == (a["node"], a["port"], a["priority"])
                and r["t_us"] > a["t_us"]]
        if not back and a["finding"] not in persistent:
            left.append(a)
    return left


def drops(c):
    """Data bytes dropped that could have been delivered (not those already looping, which no
    mitigation could deliver)."""
    d = c["drops"]
    return d["buffer_bytes"] + d["watchdog_bytes"]


def with_until(s, until_us):
    s = copy.deepcopy(s)
    s["until_us"] = until_us
    return s
