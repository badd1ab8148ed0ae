"""The PFC deadlock and pause-storm detector (cc/deadlock.c) inside the simulation: rocefab-sim
run --controller detector on the scenarios of sim/scenarios/detect/, judged against the
simulation's ground truth (detectlib.py).  make bench-detect runs the same judging over every
seed and position, beside the pfcwd baseline."""
import json
import os
import subprocess

import pytest

import detectlib as dl
from conftest import ROOT, binary


def test_ring_cbd_is_named_with_exactly_its_ports():
    c = dl.controller(dl.run(dl.load("ring-cbd"), 1, mitigate="advise"))
    j = dl.judge_deadlocks(c)
    assert j["truth"] == 1 and j["named"] == 1 and j["late"] == 0 and j["wrong"] == 0, j
    f = dl.alarms(c)[0]
    # cycle order, from the first port by name
    assert f["ports"] == ["s0:s1", "s1:s2", "s2:s3", "s3:s0"], f
    assert f["priority"] == 3
    assert not c["actions"], "advise mode changes nothing"
    assert c["drops"] == {"buffer_bytes": 0, "watchdog_bytes": 0, "looping_bytes": 0}


@pytest.mark.parametrize("leaf,spine,dst", [(1, 0, 0), (0, 1, 6)])
def test_routing_loop_deadlock_wherever_the_loop_is(leaf, spine, dst):
    c = dl.controller(dl.run(dl.loop_variant(leaf, spine, dst), 2, mitigate="advise"))
    j = dl.judge_deadlocks(c)
    assert j["truth"] == 1 and j["named"] == 1 and j["late"] == 0 and j["wrong"] == 0, j
    assert sorted(dl.alarms(c)[0]["ports"]) == sorted(["leaf%d:spine%d" % (leaf, spine),
                                                       "spine%d:leaf%d" % (spine, leaf)])


def test_deadlock_after_link_failure():
    c = dl.controller(dl.run(dl.load("failover-deadlock"), 1, mitigate="advise"))
    j = dl.judge_deadlocks(c)
    assert j["truth"] == 1 and j["named"] == 1 and j["late"] == 0 and j["wrong"] == 0, j
    assert len(dl.alarms(c)[0]["ports"]) == 4  # spine -> leaf -> spine -> leaf


@pytest.mark.parametrize("host", [5, 10])
def test_storm_culprit_named_with_its_victims(host):
    c = dl.controller(dl.run(dl.storm_variant(host), 1, mitigate="advise"))
    j = dl.judge_storm(c, "h%d" % host)
    assert j["named"] and not j["others"], j
    storm = [f for f in dl.alarms(c) if f["class"] == "pause_storm"][0]
    tor = "leaf%d" % (host // 4)
    assert "%s:h%d" % (tor, host) in storm["victims"], storm
    assert storm["suggested"] == {"node": tor, "port": "h%d" % host}
    assert not dl.alarms(c, dl.DEADLOCKS)
    # detected within two intervals of the storm's start (500 us)
    assert j["detected_us"] <= 500 + 2 * c["interval_us"], j


@pytest.mark.parametrize("name", ["incast-64", "websearch-70", "slow-receiver", "link-flap", "lossy-link"])
def test_no_false_alarm(name):
    c = dl.controller(dl.run(dl.load(name), 1, mitigate="auto"))
    assert not dl.alarms(c), dl.alarms(c)
    assert not c["actions"]
    assert not c["truth_deadlocks"]
    if name == "slow-receiver":
        slow = [f for f in c["findings"] if f["class"] == "slow_receiver"]
        assert [f["culprit"] for f in slow] == ["h3"], slow
    if name == "incast-64":
        # the timer fires on congestion that drains: the documented false alarm
        assert any(a["op"] == "drop" for a in c["baseline_actions"]), c["baseline_actions"]


def test_auto_breaks_a_transient_loop_and_restores_it():
    c = dl.controller(dl.run(dl.loop_variant(1, 0, 0), 2, mitigate="auto"))
    acts = c["actions"]
    assert [a["op"] for a in acts] == ["lossless_off", "restore"], acts
    assert all(a["ok"] for a in acts)
    assert acts[0]["reason"].startswith("deadlock #") and "for 300 us" in acts[0]["reason"], acts[0]
    assert acts[1]["t_us"] - acts[0]["t_us"] == 300  # the default restore time: 3 intervals
    assert not any(f["class"] == "persistent" for f in c["findings"])
    assert dl.drops(c) == 0, c["drops"]  # only packets that were looping anyway were lost


def test_auto_holds_a_break_when_the_loop_stays():
    s = dl.loop_variant(1, 0, 0)
    del s["faults"][0]["until_us"]
    c = dl.controller(dl.run(s, 2, mitigate="auto"))
    acts = c["actions"]
    assert [a["op"] for a in acts] == ["lossless_off", "restore", "lossless_off"], acts
    assert not dl.actions_reversed(c), acts
    assert any(f["class"] == "persistent" for f in c["findings"]), c["findings"]
    assert "until the routing is fixed" in acts[-1]["reason"], acts[-1]


def test_auto_isolates_a_storm_then_restores_and_drops_less_than_pfcwd():
    s = dl.storm_variant(5)
    ours = dl.controller(dl.run(s, 1, mitigate="auto"))
    wd = dl.controller(dl.run(s, 1, controller="pfcwd", baseline=False))
    acts = ours["actions"]
    assert [(a["op"], a["node"], a["port"]) for a in acts] == [("lossless_off", "leaf1", "h5"),
                                                                ("restore", "leaf1", "h5")], acts
    # restored only once h5 had not paused for the restore time (the storm ends at 2500 us)
    assert acts[1]["t_us"] >= 2500 + 300, acts
    assert all(a["ok"] for a in acts)
    j = dl.judge_storm(ours, "h5")
    rec, _ = dl.judge_recovery(ours, 500, {"h5"} | set(dl.storm_senders(5)), j["detected_us"])
    assert rec is not None and rec <= 5, rec
    assert dl.drops(ours) * 5 <= dl.drops(wd), (ours["drops"], wd["drops"])
    assert dl.drops(wd) > 0


def test_a_storm_of_a_host_without_readings_is_isolated_and_restored():
    """h5's counters withheld from the detector (--silent h5: its agent silent, as a hung host's):
    the storm is read from leaf1:h5, isolated, and put back once leaf1 counts no more pause frames
    from h5, as with h5's readings; pfcwd, which reads only switches, drops the port either way.
    Before, a host without readings was no finding (no action, no alarm)."""
    s = dl.storm_variant(5)
    ours = dl.controller(dl.run(s, 1, mitigate="auto", extra=("--silent", "h5")))
    j = dl.judge_storm(ours, "h5")
    assert j["named"] and not j["others"], j
    assert j["detected_us"] <= 500 + 2 * ours["interval_us"], j
    storm = [f for f in dl.alarms(ours) if f["class"] == "pause_storm"][0]
    assert "no readings of its own" in storm["summary"], storm
    acts = ours["actions"]
    assert [(a["op"], a["node"], a["port"]) for a in acts] == [("lossless_off", "leaf1", "h5"),
                                                                ("restore", "leaf1", "h5")], acts
    assert acts[1]["t_us"] >= 2500 + 300, acts
    assert [a for a in ours["baseline_actions"] if a["op"] == "drop"][0]["port"] == "h5"


def test_a_slow_receiver_without_readings_is_named_from_its_switch_port():
    """The slow-receiver scenario with h3's counters withheld (--silent h3): the slow receiver is
    read from leaf0:h3 (the pause it receives, the bytes it sends h3), as with h3's readings, and
    no alarm.  Before, it was no finding (its switch port's queue was called congestion)."""
    c = dl.controller(dl.run(dl.load("slow-receiver"), 1, mitigate="auto", extra=("--silent", "h3")))
    assert not dl.alarms(c), dl.alarms(c)
    slow = [f for f in c["findings"] if f["class"] == "slow_receiver"]
    assert [f["culprit"] for f in slow] == ["h3"], slow
    assert "no readings of its own" in slow[0]["summary"], slow


@pytest.mark.parametrize("args, msg", [(("--silent", "hX"), "--silent: 'hX' is no host of the fabric"),
                                       (("--silent", "leaf1"), "--silent: 'leaf1' is a switch"),
                                       (("--silent", "h5,"), "--silent: an empty host name"),
                                       (("--silent", ""), "--silent: an empty host name")])
def test_silent_names_hosts(args, msg, tmp_path):
    path = tmp_path / "storm.json"
    path.write_text(json.dumps(dl.storm_variant(5)))
    r = subprocess.run([binary("rocefab-sim"), "run", str(path), "--quiet", "--controller", "detector"] + list(args),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    r = subprocess.run([binary("rocefab-sim"), "run", str(path), "--quiet", "--silent", "h5"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--silent needs --controller detector, pfcwd or tuner" in r.stderr, r.stderr


def test_same_seed_same_results():
    a = dl.run(dl.load("ring-cbd"), 3, mitigate="auto")
    b = dl.run(dl.load("ring-cbd"), 3, mitigate="auto")
    assert a == b


def sim(*args):
    return subprocess.run([binary("rocefab-sim"), "run"] + list(args), capture_output=True, text=True,
                          timeout=60)


SCENARIO = os.path.join(ROOT, "sim", "scenarios", "detect", "ring-cbd.json")


@pytest.mark.parametrize("args,msg", [
    (["--controller", "watchdog"], "--controller: 'watchdog' is not detector, pfcwd or tuner"),
    (["--controller", "detector", "--interval", "0"], "--interval: '0' is not a duration above 0"),
    (["--controller", "detector", "--interval", "fast"], "--interval: 'fast' is not a duration"),
    (["--controller", "detector", "--restore", "-1s"], "--restore"),
    (["--controller", "detector", "--mitigate", "yes"], "--mitigate: 'yes' is not off, advise or auto"),
    (["--controller", "detector", "--baseline", "sonic"], "--baseline: 'sonic' is not pfcwd"),
    (["--interval", "1ms"], "need --controller"),
])
def test_bad_controller_options_exit_2(args, msg):
    r = sim(SCENARIO, "--quiet", *args)
    assert r.returncode == 2 and msg in r.stderr, r.stderr


def test_controller_needs_a_lossless_priority(tmp_path):
    s = dl.load("ring-cbd")
    s["switch"]["pfc"] = {"priorities": []}
    s["nic"]["pfc_priorities"] = []
    p = tmp_path / "lossy.json"
    p.write_text(__import__("json").dumps(s))
    r = sim(str(p), "--quiet", "--controller", "detector")
    assert r.returncode == 2 and "no port has PFC on" in r.stderr, r.stderr


def test_bench_detect_smoke():
    """make bench-detect's two programs, one run of each case, so that they cannot rot."""
    env = dict(os.environ)
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "bench", "bench_detect.py"), "--smoke"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    for line in ("ring-cbd", "failover (2 links)", "storm (16 culprits)", "storm, silent culprit (16 culprits)",
                 "incast-64", "pfcwd"):
        assert line in r.stdout
    r = subprocess.run([binary("bench/bench_detect_scale"), "--switches", "64", "--hosts", "400", "--runs", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ms p50" in r.stdout
