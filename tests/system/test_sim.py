"""rocefab-sim fidelity: each test runs a scenario of tests/sim/ (or sim/scenarios/) and checks
the physics the issue asks for.  The scenarios' descriptions say what they model."""
import csv
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, binary

SIM = os.path.join(ROOT, "tests", "sim")


def run(scenario, *args, check=True):
    path = scenario if os.path.isabs(scenario) else os.path.join(ROOT, scenario)
    r = subprocess.run([binary("rocefab-sim"), "run", path, "--quiet"] + list(args),
                       capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def summary(scenario, tmp_path, *args):
    out = tmp_path / (os.path.basename(scenario) + ".out.json")
    run(scenario, "--json", str(out), *args)
    with open(out) as f:
        return json.load(f)


def timeseries(scenario, tmp_path, every, ports):
    out = tmp_path / (os.path.basename(scenario) + ".csv")
    run(scenario, "--timeseries", str(out), "--every", every, "--ports", ports)
    with open(out) as f:
        return list(csv.DictReader(f))


def rates(rows, port):
    """(t_us, Gb/s) per interval from cumulative tx bytes of device:port."""
    dev, p = port.split(":")
    pts = [(float(r["time_us"]), int(r["tx_bytes"])) for r in rows if r["device"] == dev and r["port"] == p]
    return [(t1, (b1 - b0) * 8 / ((t1 - t0) * 1e-6) / 1e9) for (t0, b0), (t1, b1) in zip(pts, pts[1:])]


def test_one_long_flow_reaches_line_rate(tmp_path):
    d = summary("sim/scenarios/one-flow.json", tmp_path)
    f = d["flows"]["per_flow"][0]
    goodput = f["bytes"] * 8 / (f["fct_us"] * 1e-6) / 1e9
    assert goodput >= 0.95 * 100, goodput
    # what is left is the header: 1000 payload bytes in 1048 on the wire
    assert goodput >= 0.995 * 100 * 1000 / 1048
    assert d["drops"] == {"buffer": 0, "link": 0, "ttl": 0, "nic": 0}
    assert d["throughput"]["goodput_completed_gbps"] == pytest.approx(d["throughput"]["goodput_gbps"], rel=1e-3)


def test_until_past_the_last_flow_says_the_goodput_until_then(tmp_path):
    """--until past a finite workload's end simulates idle time: the goodput over the run counts
    it (16 Gb/s for a flow at line rate); the summary also gives it until the last completion."""
    d = summary("sim/scenarios/one-flow.json", tmp_path, "--until", "50ms")
    last = d["flows"]["last_completed_us"]
    assert d["sim_time_us"] == 50000 and 8000 < last < 9000, (d["sim_time_us"], last)
    tp = d["throughput"]
    assert tp["goodput_gbps"] < 20 and tp["goodput_completed_gbps"] > 95, tp
    out = subprocess.run([binary("rocefab-sim"), "run", "sim/scenarios/one-flow.json", "--until", "50ms",
                          "--quiet", "--no-timing"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert re.search(r"goodput 16\.\d\d Gb/s \(the last flow completed at 8\.\d+ ms: 9[5-9]\.\d\d Gb/s until then\)",
                     out.splitlines()[0]), out


def test_two_dcqcn_flows_share_fairly(tmp_path):
    rows = timeseries("tests/sim/dcqcn-fair-2.json", tmp_path, "10ms", "h1:s0,h2:s0")
    for port in ("h1:s0", "h2:s0"):
        after = [g for t, g in rates(rows, port) if t > 50000]
        assert len(after) >= 10
        for g in after:
            assert 18 <= g <= 22, (port, after)  # within 10% of half of 40 Gb/s


@pytest.mark.parametrize("n", [2, 4, 8])
def test_dcqcn_queue_matches_fluid_model(tmp_path, n):
    rows = timeseries(f"tests/sim/dcqcn-queue-{n}.json", tmp_path, "5us", "s0:h0")
    q = [int(r["queue_bytes"]) for r in rows if float(r["time_us"]) >= 20000]
    mean = sum(q) / len(q)
    # fixed point of the fluid model of "ECN or Delay" (CoNEXT 2016), in 1 KB packets:
    # q* = p*/Pmax (Kmax - Kmin) + Kmin, p* = cbrt(R_AI N^2 / (tau' C^2) (1/B + N/(T C))^2)
    C, B, T, R_AI, tau, pmax, kmin, kmax = 40e9 / 8000, 10e6 / 1000, 55e-6, 40e6 / 8000, 50e-6, 0.01, 5000, 200000
    p = (R_AI * n * n / (tau * C * C) * (1 / B + n / (T * C)) ** 2) ** (1 / 3)
    fixed = p / pmax * (kmax - kmin) + kmin
    assert {2: 23000, 4: 51000, 8: 122000}[n] == pytest.approx(fixed, rel=0.03)
    assert mean == pytest.approx(fixed, rel=0.30), (mean, fixed)


def pauses_by_place(d):
    feeding = upstream = 0
    for p in d["pfc"]["ports"]:
        if p["port"] == "leaf0":  # a spine or host sending into the congested leaf
            feeding += p["rx_pause_frames"]
        else:
            upstream += p["rx_pause_frames"]
    return feeding, upstream


def test_incast(tmp_path):
    ecn = summary("tests/sim/incast-ecn-pfc.json", tmp_path)
    pfc = summary("tests/sim/incast-pfc-only.json", tmp_path)
    lossy = summary("tests/sim/incast-lossy.json", tmp_path)
    for d in (ecn, pfc, lossy):
        assert d["complete"] and d["flows"]["completed"] == 32
    # ECN + DCQCN + PFC: no drops, few pauses and none upstream
    assert ecn["drops"]["buffer"] == 0 and ecn["transport"]["retransmitted_packets"] == 0
    assert ecn["cnp"]["sent"] > 0 and ecn["ecn"]["marked_packets"] > 0
    f_ecn, up_ecn = pauses_by_place(ecn)
    # ECN off: pauses on the links into the congested leaf and further upstream, no drops
    f_pfc, up_pfc = pauses_by_place(pfc)
    assert pfc["drops"]["buffer"] == 0 and pfc["cnp"]["sent"] == 0
    assert f_pfc > 0 and up_pfc > 0
    assert up_ecn == 0 and f_ecn + up_ecn <= 0.15 * (f_pfc + up_pfc)
    # neither PFC nor ECN: drops, retransmissions, still every flow completes
    assert lossy["pfc"]["tx_pause_frames"] == 0
    assert lossy["drops"]["buffer"] > 0 and lossy["transport"]["retransmitted_packets"] > 0


def test_route_loop_deadlocks_until_cleared(tmp_path):
    rows = timeseries("tests/sim/deadlock-route-loop.json", tmp_path, "100us",
                      "leaf1:spine0,spine0:leaf1,leaf0:h0")

    def at(port, t):
        dev, p = port.split(":")
        return next(r for r in rows if r["device"] == dev and r["port"] == p and float(r["time_us"]) == t)
    for port in ("leaf1:spine0", "spine0:leaf1"):
        # frozen from 300 us until the fault is cleared at 1500 us: full, paused, nothing moves
        a, b = at(port, 300), at(port, 1400)
        assert int(a["tx_bytes"]) == int(b["tx_bytes"]), port
        assert int(b["queue_bytes"]) > 100000
        assert float(b["paused_us"]) - float(a["paused_us"]) >= 1100 * 0.99
    assert int(at("leaf0:h0", 300)["tx_bytes"]) == int(at("leaf0:h0", 1400)["tx_bytes"])
    # cleared: traffic to h0 moves again and every flow completes
    assert int(at("leaf0:h0", 2000)["tx_bytes"]) > int(at("leaf0:h0", 1500)["tx_bytes"])
    d = summary("tests/sim/deadlock-route-loop.json", tmp_path)
    assert d["complete"]


def test_pause_storm_spreads_and_hurts_victims(tmp_path):
    storm = summary("tests/sim/pause-storm.json", tmp_path)
    base = summary("tests/sim/pause-storm-baseline.json", tmp_path)
    paused = {(p["device"], p["port"]): p for p in storm["pfc"]["ports"] if p["rx_pause_frames"]}
    # the ToR port facing the storming host is paused for the whole storm
    assert paused[("leaf0", "h1")]["paused_us"] == pytest.approx(1000, abs=5)
    # ... and it spreads upstream: spines toward leaf0, leaf1 toward the spines
    assert any(dev.startswith("spine") and port == "leaf0" for dev, port in paused)
    assert any(dev == "leaf1" and port.startswith("spine") for dev, port in paused)
    assert not base["pfc"]["ports"]
    fct = {(f["src"], f["dst"]): f["fct_us"] for f in storm["flows"]["per_flow"]}
    fct0 = {(f["src"], f["dst"]): f["fct_us"] for f in base["flows"]["per_flow"]}
    for victim in (("h5", "h2"), ("h6", "h3")):  # never touch h1
        assert fct[victim] > 1.5 * fct0[victim], (victim, fct[victim], fct0[victim])


def test_lower_ecn_thresholds_lower_the_queue(tmp_path):
    def mean_queue(name):
        d = summary(name, tmp_path)
        return next(p["mean_bytes"] for p in d["queues"]["ports"] if p["device"] == "s0" and p["port"] == "h0")
    low = mean_queue("tests/sim/dcqcn-queue-4.json")
    high = mean_queue("tests/sim/dcqcn-queue-4-high-ecn.json")
    assert low < 0.5 * high, (low, high)


def bad_expectations():
    with open(os.path.join(SIM, "bad", "expectations.tsv")) as f:
        return [l.rstrip("\n").split("\t") for l in f if not l.startswith("#") and l.strip()]


@pytest.mark.parametrize("name,pointer,message", bad_expectations())
def test_bad_scenario_is_rejected(name, pointer, message):
    r = run(os.path.join(SIM, "bad", name), check=False)
    assert r.returncode == 2, r.stderr
    assert f"{pointer}:" in r.stderr and message in r.stderr and "BAD_SCENARIO" in r.stderr, r.stderr
    assert r.stdout == ""


def test_same_seed_same_output_byte_for_byte(tmp_path):
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    scen = "tests/sim/incast-lossy.json"  # randomness in drops, marks, retransmissions
    run(scen, "--json", str(a), "--no-timing")
    run(scen, "--json", str(b), "--no-timing")
    assert a.read_bytes() == b.read_bytes()
    run("sim/scenarios/ls64-websearch30.json", "--json", str(a), "--no-timing", "--until", "2ms")
    run("sim/scenarios/ls64-websearch30.json", "--json", str(b), "--no-timing", "--until", "2ms")
    assert a.read_bytes() == b.read_bytes()
    run("sim/scenarios/ls64-websearch30.json", "--json", str(c), "--no-timing", "--until", "2ms",
        "--seed", "7")
    assert a.read_bytes() != c.read_bytes()
    d = json.loads(a.read_text())
    assert "wall_s" not in d["run"] and d["run"]["events"] > 0


def test_summary_has_everything(tmp_path):
    d = summary("sim/scenarios/ls64-websearch30.json", tmp_path, "--until", "3ms")
    for k in ("events", "data_packets", "wall_s", "events_per_s", "data_packets_per_s", "peak_rss_kb"):
        assert k in d["run"], k
    for b in ("all", "lt_100KB", "100KB_1MB", "ge_1MB"):
        assert {"n", "p50", "p95", "p99"} <= set(d["slowdown"][b]) or d["slowdown"][b]["n"] == 0
    assert d["flows"]["per_flow"][0].keys() >= {"id", "src", "dst", "bytes", "start_us", "fct_us", "slowdown"}
    for k in ("pfc", "ecn", "cnp", "drops", "queues", "throughput", "transport"):
        assert k in d
    done = [f for f in d["flows"]["per_flow"] if f["slowdown"] is not None]
    assert done and all(f["slowdown"] >= 1 for f in done)


def small(tmp_path, name, body):
    base = {"schema": 1, "topology": {"type": "leaf_spine", "spines": 2, "leaves": 2, "hosts_per_leaf": 4,
                                     "host_link": {"rate_gbps": 100, "delay_ns": 1000},
                                     "fabric_link": {"rate_gbps": 100, "delay_ns": 1000}}}
    base.update(body)
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(base))
    return str(p)


def test_link_down_reroutes(tmp_path):
    # h0 -> h4 crosses a spine; with leaf0-spine0 down, everything goes through spine1
    s = small(tmp_path, "down", {"until_us": 3000,
              "workloads": [{"type": "flows", "flows": [{"src": f"h{i}", "dst": f"h{i + 4}", "size_bytes": 2000000} for i in range(4)]}],
              "faults": [{"type": "link_down", "link": "leaf0-spine0", "at_us": 0}]})
    rows = timeseries(s, tmp_path, "500us", "leaf0:spine0,leaf0:spine1")
    last = {(r["device"], r["port"]): int(r["tx_bytes"]) for r in rows}
    assert last[("leaf0", "spine0")] == 0 and last[("leaf0", "spine1")] > 8000000
    d = summary(s, tmp_path)
    assert d["complete"]


def test_link_flap_and_lossy_link(tmp_path):
    s = small(tmp_path, "flap", {"workloads": [{"type": "flows", "flows": [{"src": "h0", "dst": "h4", "size_bytes": 5000000}]}],
              "faults": [{"type": "link_flap", "link": "h0-leaf0", "at_us": 50, "period_us": 100, "count": 3}]})
    d = summary(s, tmp_path)
    assert d["complete"] and d["drops"]["link"] > 0 and d["transport"]["timeouts"] + d["transport"]["naks"] > 0
    s = small(tmp_path, "lossy", {"workloads": [{"type": "flows", "flows": [{"src": "h0", "dst": "h4", "size_bytes": 5000000}]}],
              "faults": [{"type": "lossy_link", "link": "leaf1-h4", "loss": 0.001, "at_us": 0}]})
    d = summary(s, tmp_path)
    assert d["complete"] and d["drops"]["link"] > 0
    assert d["transport"]["out_of_sequence"] > 0 and d["transport"]["retransmitted_packets"] > 0


def test_slow_receiver_pauses_its_switch(tmp_path):
    s = small(tmp_path, "slow", {"workloads": [{"type": "flows", "flows": [{"src": "h1", "dst": "h0", "size_bytes": 2000000}]}],
              "faults": [{"type": "slow_receiver", "host": "h0", "rate_gbps": 10, "at_us": 0}]})
    d = summary(s, tmp_path)
    assert d["complete"]
    sent = {(p["device"], p["port"]): p for p in d["pfc"]["ports"]}
    assert sent[("h0", "leaf0")]["tx_pause_frames"] > 0  # the NIC pauses its ToR
    assert sent[("leaf0", "h0")]["rx_pause_frames"] > 0
    f = d["flows"]["per_flow"][0]
    assert f["bytes"] * 8 / (f["fct_us"] * 1e-6) / 1e9 < 10.5  # limited by the receiver


def test_workloads(tmp_path):
    flows_file = tmp_path / "flows.txt"
    flows_file.write_text("# src dst bytes start_us [priority]\nh0 h5 100000 0\n1 6 200000 10 3\n")
    s = small(tmp_path, "wl", {"workloads": [
        {"type": "permutation", "size_bytes": 100000},
        {"type": "all_reduce", "hosts": ["h0", "h1", "h4", "h5"], "size_bytes": 400000},
        {"type": "incast", "receiver": "h7", "senders": ["h2", "h3"], "size_bytes": 50000, "repeat": 3, "interval_us": 100},
        {"type": "cdf", "cdf": "fbhdp", "load": 0.2, "duration_us": 200, "start_us": 500},
        {"type": "cdf", "cdf": [[1000, 0], [5000, 50], [10000, 100]], "load": 0.1, "duration_us": 100},
        {"type": "flows", "file": "flows.txt"}]})
    d = summary(s, tmp_path)
    per = d["flows"]["per_flow"]
    assert d["complete"]
    perm = per[:8]
    assert sorted(f["src"] for f in perm) == sorted(f"h{i}" for i in range(8))
    assert sorted(f["dst"] for f in perm) == sorted(f"h{i}" for i in range(8))
    assert all(f["src"] != f["dst"] for f in perm)
    ring = per[8:8 + 4 * 6]  # 2 (n-1) steps of n flows of size/n
    assert all(f["bytes"] == 100000 for f in ring)
    # a ring step starts when the previous step's chunk has arrived
    for k in range(1, 6):
        for i in range(4):
            prev = ring[(k - 1) * 4 + (i - 1) % 4]
            assert ring[k * 4 + i]["start_us"] >= prev["start_us"] + prev["fct_us"] - 1e-6
    inc = [f for f in per if f["dst"] == "h7" and f["bytes"] == 50000]
    assert sorted({f["start_us"] for f in inc}) == [0, 100, 200]
    assert [f["bytes"] for f in per[-2:]] == [100000, 200000] and per[-1]["start_us"] == 10


def test_bad_command_lines(tmp_path):
    r = subprocess.run([binary("rocefab-sim")], capture_output=True, text=True)
    assert r.returncode == 2
    r = subprocess.run([binary("rocefab-sim"), "run", "/nonexistent.json"], capture_output=True, text=True)
    assert r.returncode == 2 and "cannot read" in r.stderr
    r = run("sim/scenarios/one-flow.json", "--until", "soon", check=False)
    assert r.returncode == 2 and "--until" in r.stderr
    r = run("sim/scenarios/one-flow.json", "--timeseries", str(tmp_path / "x.csv"), "--ports", "s0:h9", check=False)
    assert r.returncode != 0 and "no port s0:h9" in r.stderr
    assert subprocess.run([binary("rocefab-sim"), "--help"], capture_output=True).returncode == 0
    # each says what was wrong, not the usage alone (a trial's findings)
    sim = binary("rocefab-sim")
    for args, msg in ((["bogus"], "'bogus' is not a command (run, serve)"),
                      (["run"], "run: name a SCENARIO file"),
                      (["run", "a.json", "b.json"], "one SCENARIO file"),
                      (["run", "/tmp"], "cannot read /tmp: Is a directory"),  # (it said: No such file)
                      (["run", "sim/scenarios/one-flow.json", "--seed", "99999999999999999999"],
                       "--seed: '99999999999999999999' is not a number from 0 to"),  # (it saturated)
                      (["run", "sim/scenarios/one-flow.json", "--until", "0"], "is not a duration above 0"),
                      (["run", "sim/scenarios/one-flow.json", "--controller", "tuner", "--policy", "/nonexistent"],
                       "--policy: unable to open /nonexistent: No such file or directory"),  # (line -1)
                      # options that did nothing in silence
                      (["run", "sim/scenarios/one-flow.json", "--ports", "leaf0:h1"], "--ports and --every need --timeseries"),
                      (["run", "sim/scenarios/one-flow.json", "--mitigate", "off"], "--mitigate need --controller")):
        r = subprocess.run([sim] + args, capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)
    # a scenario from standard input
    with open(os.path.join(ROOT, "tests/sim/pause-storm.json")) as f:
        r = subprocess.run([sim, "run", "-", "--quiet", "--until", "1ms", "--json", "-"], stdin=f, capture_output=True,
                           text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["sim_time_us"] == 1000, r.stderr
    # serve: names that are no device of the fabric, said before anything starts (--skip-agents
    # ignored them; --sonic tried redis first)
    for args, msg in ((["--skip-agents", "h1,hX"], "--skip-agents: no device hX in"),
                      (["--sonic", "h1=127.0.0.1:9"], "--sonic: no switch h1 in")):
        r = subprocess.run([sim, "serve", "sim/scenarios/demo.json"] + args, capture_output=True, text=True, cwd=ROOT,
                           timeout=30)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)


def test_weighted_scheduling(tmp_path):
    d = summary("tests/sim/dwrr-weights.json", tmp_path)
    got = {f["src"]: f["delivered_packets"] for f in d["flows"]["per_flow"]}
    assert got["h1"] / got["h2"] == pytest.approx(3, rel=0.02)
    assert d["drops"]["buffer"] == 0  # lossless: the slower priority is paused, not dropped


def test_bad_outputs_are_said_before_the_run(tmp_path):
    """An output that cannot be written, or a --ports naming no port, is a usage error (exit 2)
    said at once: the JSON's path was found unwritable only after the whole run (and exited 1)."""
    ts = tmp_path / "t.csv"
    r = run("sim/scenarios/ls64-websearch30.json", "--until", "20ms", "--json", str(tmp_path / "no" / "x.json"),
            "--timeseries", str(ts), check=False)
    assert r.returncode == 2 and "cannot write" in r.stderr and r.stdout == "", r.stderr
    assert not ts.exists()  # the run never started (its time series would be there)
    # earlier results stay when a run does not end well (they were emptied at the start)
    out = tmp_path / "x.json"
    out.write_text('{"earlier": 1}')
    ts.write_text("earlier\n")
    r = run("sim/scenarios/ls64-websearch30.json", "--until", "1us", "--json", str(out), "--timeseries", str(ts),
            "--ports", "s0:h9", check=False)
    assert r.returncode == 2 and "--ports: no port s0:h9" in r.stderr, r.stderr
    assert out.read_text() == '{"earlier": 1}' and ts.read_text() == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "x.json"]
    # a directory: said before the run
    r = run("sim/scenarios/ls64-websearch30.json", "--until", "20ms", "--json", str(tmp_path), check=False)
    assert r.returncode == 2 and "Is a directory" in r.stderr, r.stderr


def _small_files():
    """In the child: files may grow to 64 KiB (as a full disk: a write past it fails)."""
    import resource
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))


def test_outputs_whole_or_not_at_all_and_never_replacing_what_is_no_file(tmp_path):
    """A trial's rocefab-sim replaced /dev/full with a regular file (--json wrote beside the
    path and renamed over it, whatever it was), turned a FIFO its reader waited on into a file,
    and a symbolic link into a copy; and a --timeseries that hit a full disk was cut mid-row
    with exit 0.  Now: a FIFO or a device is written through, a link's target is replaced, and
    a CSV the disk could not take whole is an error that leaves the earlier one."""
    import stat
    import threading
    scen = os.path.join(SIM, "pause-storm.json")
    # a FIFO: written through, still a FIFO
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    run(scen, "--json", str(fifo), "--until", "1ms")
    reader.join(30)
    assert json.loads(got[0])["sim_time_us"] > 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # a device: written through
    run(scen, "--json", "/dev/null", "--until", "1ms")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    # a symbolic link: its target gets the result, the link stays
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("{}")
    link.symlink_to(real)
    run(scen, "--json", str(link), "--until", "1ms")
    assert link.is_symlink() and json.loads(real.read_text())["sim_time_us"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link.json", "real.json"]  # no temporary left
    # a time series the disk cannot take whole: an error, the earlier one kept, no temporary
    ts = tmp_path / "ts.csv"
    ts.write_text("earlier\n")
    r = subprocess.run([binary("rocefab-sim"), "run", scen, "--quiet", "--timeseries", str(ts), "--every", "1us"],
                       capture_output=True, text=True, timeout=300, preexec_fn=_small_files)
    assert r.returncode == 1 and f"cannot write {ts}: File too large" in r.stderr, (r.returncode, r.stderr)
    assert ts.read_text() == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link.json", "real.json", "ts.csv"]
    # standard output redirected to a file, appended to: written through it, the file kept (a
    # review found it resolved to that file, and replaced it)
    log = tmp_path / "run.log"
    log.write_text("earlier\n")
    with open(log, "a") as f:
        r = subprocess.run([binary("rocefab-sim"), "run", scen, "--quiet", "--until", "1ms", "--json", "/dev/stdout"],
                           stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    text = log.read_text()
    assert text.startswith("earlier\n{") and json.loads(text[len("earlier\n"):].split("\n}\n")[0] + "}")["schema"] == 1
    # the mode of the file replaced is kept
    os.chmod(real, 0o600)
    run(scen, "--json", str(real), "--until", "1ms")
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o600
    # one file for both: refused before the run (the JSON, renamed last, replaced the CSV)
    r = run(scen, "--json", str(real), "--timeseries", str(link), check=False)
    assert r.returncode == 2 and "--json and --timeseries name one file" in r.stderr, r.stderr
    # standard output that cannot be written: an error (it was exit 0)
    with open("/dev/full", "w") as full:
        r = subprocess.run([binary("rocefab-sim"), "run", scen, "--quiet", "--until", "1ms", "--json", "-"],
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 1 and "cannot write the JSON to standard output" in r.stderr, r.stderr


def test_a_run_stopped_leaves_the_earlier_results_and_no_temporary(tmp_path):
    """^C or SIGTERM in a long run: the earlier results as they were, no NAME.tmp-XXXXXX beside
    them (a review found both temporaries left)."""
    import signal
    import time
    out, ts = tmp_path / "x.json", tmp_path / "x.csv"
    out.write_text('{"earlier": 1}')
    ts.write_text("earlier\n")
    p = subprocess.Popen([binary("rocefab-sim"), "run", os.path.join(ROOT, "sim/scenarios/ls64-websearch30.json"),
                          "--quiet", "--until", "1s", "--json", str(out), "--timeseries", str(ts)],
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while len(list(tmp_path.iterdir())) < 4 and time.monotonic() < deadline:  # (the temporaries made)
            time.sleep(0.05)
        assert len(list(tmp_path.iterdir())) == 4, list(tmp_path.iterdir())
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == -signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert out.read_text() == '{"earlier": 1}' and ts.read_text() == "earlier\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["x.csv", "x.json"]
