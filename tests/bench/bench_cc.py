#!/usr/bin/python3
"""make bench-cc: the congestion-control tuner against static settings, per workload, on the
64-host fabric of sim/scenarios/ls64-websearch30.json (4 leaves of 16 hosts, 16 spines, 100 Gb/s).

For every workload and seed, in the same run of this script:
  dcqcn-paper  ECN Kmin 5 KB, Kmax 200 KB, Pmax 1 %   (the DCQCN paper), NVIDIA DCQCN defaults
  hpcc-sim     ECN Kmin 400 KB, Kmax 1600 KB, Pmax 20 % (the HPCC simulator), NVIDIA DCQCN defaults
  tuner        rocefab-sim run --controller tuner, starting from hpcc-sim, deciding every
               --interval of fabric time on what the agents would report (never the FCTs)
  start+probes the tuner's start (hpcc-sim) with the same pingmesh, the tuner in advise mode
               (proposals, no change): the tuner's runs differ from it only by the tuner's
               changes, so that tuner against it is the tuner's own effect; against the
               static settings without probes, the probes' 0.2 % of load alone gives another
               sample path (not a criterion: the criteria name the defaults and the oracle)
               Both also run on more seeds (--paired-seeds, default 18): the own effect is
               pooled over all of them and counted seed by seed (on how many the tuner did
               better); the shifting workload runs on more still (--shifting-seeds, default
               36) and is judged on every one (below)
  oracle       the best static setting of a grid of 27 ECN points x 2 DCQCN settings (NVIDIA
               defaults; the HPCC simulator's DCQCN: a CNP for every marked packet, AI 20 Mb/s,
               HAI 200 Mb/s), chosen per workload knowing the results.  The whole grid runs on
               seed 1; its --oracle-keep best there (those meeting the long-flow condition
               first) run on the other seeds too, and the oracle is the best of those over
               every seed (successive halving: the whole grid on 3 seeds does not fit 30 min)
The shifting workload, where only adaptation can beat the best static setting, is judged on
seeds 1..--shifting-seeds: there the defaults and the best grid points of seeds 1..--seeds
(--shifting-oracle-keep, default 2; those meeting the long-flow condition first) also run on
every seed, and its oracle is the best of those and of the defaults' own grid points over all
of them (one seed with a pause storm decides a 3-seed tail: the oracle's point of seeds 1-3
gave short p99 21.9 there and 42.5 on seeds 1-18; 18 seeds do not resolve it either: the DCQCN
paper's short p99 was 30.4 on seeds 1-18 and 46.8 on seeds 1-72, docs/performance.md).
The tuner's runs carry its pingmesh (rocefab-sim's --probes: at most 1,280 probes of 64 B per
interval, about 0.2 % of the hosts' capacity); the static settings need none and run without it
(it would cost them about 40 % more time: each probe is a flow of its own).
The criterion per workload: p99 slowdown of flows < 100 KB, subject to the p50 and p99 slowdown
of flows >= 1 MB being at most 5 % worse than the better default's.  Percentiles pool the flows
of every seed.  The shifting workload's phases (WebSearch 70 % -> all-reduce -> incast, twice)
last 30 decision intervals each; after each change the bench counts the intervals until the
tuner's settings stop moving for the rest of the phase (want <= 20).

The benchmark's resolution, measured in the same run: both defaults again on as many other seeds
(--spread-seeds), and how far each figure of a fixed setting moves from one set of seeds to the
other.  A difference between two settings smaller than that is not resolved by this many seeds:
each acceptance figure missed says whether this run resolves it (how far past its bound against
how far that figure of a fixed setting moved); a miss within the resolution is still a miss.
--smoke: one seed, three
workloads, a 6-point grid, short runs (CI: it cannot rot).  Exit status 1 when an acceptance
figure is missed (--no-fail: report only)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("ROCEFAB_BUILD", os.path.join(ROOT, "build"))
SIM = os.path.join(BUILD, "rocefab-sim")
BASE = os.path.join(ROOT, "sim", "scenarios", "ls64-websearch30.json")

NVIDIA = {}  # the simulator's defaults are NVIDIA's (sim/scenario.c)
HPCC_DCQCN = {"min_time_between_cnps_us": 0, "rpg_ai_rate_mbps": 20, "rpg_hai_rate_mbps": 200}
DEFAULTS = {
    "dcqcn-paper": ({"kmin_bytes": 5000, "kmax_bytes": 200000, "pmax": 0.01}, NVIDIA),
    "hpcc-sim": ({"kmin_bytes": 400000, "kmax_bytes": 1600000, "pmax": 0.2}, NVIDIA),
}
PAIRS = [(5000, 20000), (5000, 200000), (5000, 1600000), (40000, 160000), (40000, 400000),
         (40000, 1600000), (400000, 800000), (400000, 1600000), (400000, 3200000)]
PMAX = [0.01, 0.2, 1.0]


def grid(smoke):
    if smoke:
        ecn = [{"kmin_bytes": a, "kmax_bytes": b, "pmax": p} for a, b in [(5000, 200000), (40000, 400000), (400000, 1600000)]
               for p in [0.2]]
    else:
        ecn = [{"kmin_bytes": a, "kmax_bytes": b, "pmax": p} for a, b in PAIRS for p in PMAX]
    return [(e, d) for d in (NVIDIA, HPCC_DCQCN) for e in ecn]


def hosts(idx):
    return ["h%d" % i for i in idx]


def workloads(dur_us, smoke, phase_us):
    """name -> workload list.  The shifting one has six phases of phase_us each."""
    d = dur_us
    ws = lambda load, start=0, length=d, on=None: dict({"type": "cdf", "cdf": "websearch", "load": load, "start_us": start,
                                                        "duration_us": length}, **({"hosts": on} if on else {}))
    ring = hosts(range(0, 64, 4))  # 16 hosts over the 4 leaves
    rest = hosts(i for i in range(64) if i % 4)
    incast = lambda start, length: {"type": "incast", "receiver": "h0", "senders": hosts(range(16, 48)),
                                    "size_bytes": 64000, "repeat": max(1, int(length // 500)), "interval_us": 500,
                                    "start_us": start}
    allreduce = lambda start, length, it: {"type": "all_reduce", "hosts": ring, "size_bytes": 8000000,
                                           "iterations": it, "start_us": start}
    w = {
        "websearch-30": [ws(0.3)],
        "websearch-50": [ws(0.5)],
        "websearch-70": [ws(0.7)],
        # the issue's own run: 10 ms of arrivals, long enough for the defaults' pauses to build up
        "websearch-70-10ms": [ws(0.7, 0, 10000)],
        "hadoop-50": [{"type": "cdf", "cdf": "fbhdp", "load": 0.5, "duration_us": d}],
        "alistorage-50": [{"type": "cdf", "cdf": "alistorage", "load": 0.5, "duration_us": d}],
        "incast+websearch-30": [ws(0.3), incast(0, d)],
        "allreduce+websearch-50": [ws(0.5, on=rest), allreduce(0, d, 4)],
    }
    ph = phase_us
    shifting = []
    for k in range(2):  # WebSearch 70 % -> all-reduce -> incast, twice
        t0 = k * 3 * ph
        shifting += [ws(0.7, t0, ph), allreduce(t0 + ph, ph, 1), ws(0.1, t0 + ph, ph, rest), incast(t0 + 2 * ph, ph),
                     ws(0.3, t0 + 2 * ph, ph)]
    w["shifting"] = shifting
    if smoke:
        return {k: w[k] for k in ("websearch-50", "incast+websearch-30", "shifting")}
    return w


START = "start+probes"  # hpcc-sim with the tuner's pingmesh, the tuner in advise mode
SHIFTS = 5  # phase changes in the shifting workload (six phases)


def convergence(timeline, phase_us, interval_us):
    """Per phase change of the shifting workload: how many decision intervals after the change
    the tuner's settings (each class's majority value of every knob) stopped changing for the
    rest of the phase.  0: they never moved from where they were at the change.  None: the
    run has no decision in that phase (a failure: nothing can be judged)."""
    out = []
    for k in range(1, SHIFTS + 1):
        b, e = k * phase_us, (k + 1) * phase_us
        before = [s for t, s in timeline if t <= b + interval_us / 2]
        win = [s for t, s in timeline if b + interval_us / 2 < t <= e + interval_us / 2]
        if not win or not before:
            out.append(None)
            continue
        win = [before[-1]] + win  # the settings in force at the change
        i = len(win) - 1
        while i > 0 and win[i - 1] == win[-1]:
            i -= 1
        out.append(i)
    return out


def scenario(work, ecn, dcqcn):
    s = json.load(open(BASE))
    s["name"] = "bench-cc"
    s["workloads"] = work
    s["switch"]["ecn"] = dict({"enabled": True}, **ecn)
    if dcqcn:
        s["nic"]["dcqcn"] = dict(dcqcn)
    return s


def run(scen, seed, tmp, tuner=None):
    fd, path = tempfile.mkstemp(suffix=".json", dir=tmp)
    with os.fdopen(fd, "w") as f:
        json.dump(scen, f)
    cmd = [os.path.join(tmp, "rocefab-sim"), "run", path, "--quiet", "--no-timing", "--seed", str(seed), "--json", "-"]
    if tuner:
        cmd += ["--controller", "tuner", "--interval", "%dus" % tuner["interval_us"]]
        if tuner.get("mode"):
            cmd += ["--cc-mode", tuner["mode"]]
        if tuner.get("force"):
            cmd += ["--force-step", tuner["force"]]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    os.unlink(path)
    r = json.loads(out)
    flows = r["flows"]["per_flow"]
    res = {"short": [f["slowdown"] for f in flows if f["bytes"] < 100000],
           "long": [f["slowdown"] for f in flows if f["bytes"] >= 1000000],
           "pause_us": r["pfc"]["paused_us"], "complete": r["complete"]}
    if tuner:
        c = r["controller"]
        res["tuner"] = {k: c[k] for k in ("intervals", "steps", "rolled_back", "violations", "final",
                                           "changes_applied")}
        res["tuner"]["forced"] = c.get("forced")
        res["tuner"]["timeline"] = [(t["t_us"], t["settings"]) for t in c["timeline"]]
    return res


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def pool(results):
    short = [x for r in results for x in r["short"]]
    long_ = [x for r in results for x in r["long"]]
    return {"short99": pct(short, 0.99), "long50": pct(long_, 0.5), "long99": pct(long_, 0.99),
            "pause_us": sum(r["pause_us"] for r in results) / len(results)}


def label(ecn, dcqcn):
    return "%dK/%dK/%g%s" % (ecn["kmin_bytes"] // 1000, ecn["kmax_bytes"] // 1000, ecn["pmax"],
                             " hpcc-dcqcn" if dcqcn else "")


def run_all(ex, jobs, tmp, results, t0, total, done):
    """Runs jobs (workload, name, seed, scenario, tuner) on the pool, longest workloads first so
    that no core idles at the end; results[workload][name] gets one entry per seed."""
    futs = [(j, ex.submit(run, j[3], j[2], tmp, j[4])) for j in jobs]
    for j, f in futs:
        results.setdefault(j[0], {}).setdefault(j[1], []).append(f.result())
        done[0] += 1
        if done[0] % 50 == 0 or done[0] == total[0]:
            print("  %d/%d runs, %.0f s" % (done[0], total[0], time.time() - t0), file=sys.stderr, flush=True)


def below(cut):
    """A relative cut as words: "12 % below", "37 % above"."""
    return "%.0f %% %s" % (abs(cut) * 100, "below" if cut >= 0 else "above")


def ok_long_fn(best_def):
    return lambda x: x["long50"] <= 1.05 * best_def["long50"] and x["long99"] <= 1.05 * best_def["long99"]


def best_defaults(r):
    return {m: min(r[n][m] for n in DEFAULTS) for m in ("short99", "long50", "long99")}


def verdict(s, cands):
    """The criteria's figures on one pool of seeds: s maps each setting (the defaults, "tuner",
    the grid points in cands) to its pooled figures; the oracle is the best of cands meeting the
    long-flow condition (of all of them when none does)."""
    best_def = best_defaults(s)
    ok_long = ok_long_fn(best_def)
    feasible = [k for k in cands if ok_long(s[k])]
    oracle = min(feasible or cands, key=lambda k: s[k]["short99"])
    t = s["tuner"]
    def_pause = min(s[n]["pause_us"] for n in DEFAULTS)
    return {"best_def": best_def, "ok_long": ok_long, "feasible": feasible, "oracle": oracle, "t": t,
            "gain": 1 - t["short99"] / best_def["short99"], "vs_oracle": t["short99"] / s[oracle]["short99"] - 1,
            "o_gain": 1 - s[oracle]["short99"] / best_def["short99"], "o_short99": s[oracle]["short99"],
            "pause_cut": 1 - t["pause_us"] / def_pause if def_pause > 1 else None}


def verdict_words(v):
    return "short p99 %+.0f %% against the better default, %+.0f %% against the oracle%s; long flows %s; pause %s" % (
        -v["gain"] * 100, v["vs_oracle"] * 100, "" if v["feasible"] else " (no grid point met the long-flow condition)",
        "ok" if v["ok_long"](v["t"]) else "WORSE than 5 % over the better default",
        "-" if v["pause_cut"] is None else "%+.0f %%" % (-v["pause_cut"] * 100))


def shortlist(first, keep, nseeds=1):
    """The grid points worth more seeds: on the results of seeds 1..nseeds (the first of each
    setting's: jobs are collected in seed order), the `keep` best short-flow p99s among those
    meeting the long-flow condition against the defaults' same seeds, then the best of the rest
    (only the points run on all of them)."""
    r = {k: pool(v[:nseeds]) for k, v in first.items()
         if len(v) >= nseeds and not k.startswith(("paired ", "other ", "more "))}
    ok_long = ok_long_fn(best_defaults(r))
    names = sorted((k for k in r if k.startswith("grid ")), key=lambda k: (not ok_long(r[k]), r[k]["short99"]))
    return names[:keep]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--duration-us", type=int, default=None, help="arrivals per workload (default 4000, smoke 1500)")
    ap.add_argument("--phase-us", type=int, default=None,
                    help="each of the shifting workload's six phases (default 3000: 30 decision intervals; smoke 1000)")
    ap.add_argument("--interval-us", type=int, default=100, help="the tuner's decision interval (fabric time)")
    ap.add_argument("--oracle-keep", type=int, default=8,
                    help="grid points run on seeds 2.. (the best on seed 1; default 8, 0: the whole grid)")
    ap.add_argument("--spread-seeds", type=int, default=None,
                    help="the defaults again on this many other seeds, for the bench's resolution (default: --seeds; 0: not)")
    ap.add_argument("--paired-seeds", type=int, default=None,
                    help="the tuner and its start with the same probes on seeds 1..N, for its own effect (the "
                         "shifting workload: --shifting-seeds; default 18, smoke: --seeds; at least --seeds)")
    ap.add_argument("--shifting-seeds", type=int, default=None,
                    help="the shifting workload's paired seeds, on which it is judged (default the larger of 36 "
                         "and --paired-seeds, smoke: --paired-seeds; at least --paired-seeds when the shifting "
                         "workload runs)")
    ap.add_argument("--shifting-oracle-keep", type=int, default=2,
                    help="grid points of the shifting workload run on its paired seeds too (the best on seeds "
                         "1..--seeds; default 2, at least 1, at most --oracle-keep), besides the defaults' own")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", help="comma-separated workloads")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--no-fail", action="store_true")
    ap.add_argument("--plan", action="store_true",
                    help="print how many workloads, seeds and runs (at most, with the shifting workload) and exit")
    a = ap.parse_args()
    seeds = a.seeds or (1 if a.smoke else 3)
    dur = a.duration_us or (1500 if a.smoke else 4000)
    phase = a.phase_us or (1000 if a.smoke else 3000)
    works = workloads(dur, a.smoke, phase)
    if a.only:
        unknown = [k for k in a.only.split(",") if k not in works]
        if unknown:
            ap.error("unknown workload %s (known: %s)" % (", ".join(unknown), ", ".join(works)))
        works = {k: works[k] for k in a.only.split(",")}
    for v, n in ((seeds, "--seeds"), (dur, "--duration-us"), (phase, "--phase-us"), (a.interval_us, "--interval-us"),
                 (a.jobs, "--jobs")):
        if v < 1:
            ap.error("%s must be at least 1" % n)
    if a.oracle_keep < 0:
        ap.error("--oracle-keep must be at least 0")
    if a.shifting_oracle_keep < 1:
        ap.error("--shifting-oracle-keep must be at least 1")
    spread = seeds if a.spread_seeds is None else a.spread_seeds
    if spread < 0:
        ap.error("--spread-seeds must be at least 0")
    paired = a.paired_seeds if a.paired_seeds is not None else seeds if a.smoke else max(seeds, 18)
    if paired < seeds:
        ap.error("--paired-seeds must be at least --seeds (%d)" % seeds)
    spaired = a.shifting_seeds if a.shifting_seeds is not None else paired if a.smoke else max(paired, 36)
    if spaired < paired and "shifting" in works:
        ap.error("--shifting-seeds must be at least --paired-seeds (%d)" % paired)
    g = grid(a.smoke)
    keep = a.oracle_keep if 0 < a.oracle_keep < len(g) else len(g)
    tuner = {"interval_us": a.interval_us}
    # the shifting workload's runs are the longest: first, so that the pool ends evenly
    order = sorted(works, key=lambda w: w != "shifting")
    first, rest = [], []
    for w in order:
        for seed in range(1, seeds + 1):
            for name, (e, d) in DEFAULTS.items():
                first.append((w, name, seed, scenario(works[w], e, d), None))
            first.append((w, "tuner", seed, scenario(works[w], *DEFAULTS["hpcc-sim"]), tuner))
            first.append((w, START, seed, scenario(works[w], *DEFAULTS["hpcc-sim"]), dict(tuner, mode="advise")))
        for e, d in g:
            first.append((w, "grid " + label(e, d), 1, scenario(works[w], e, d), None))
    # the shifting workload on the paired seeds: the defaults beyond the spread's, grid points
    long_run = "shifting" in works and spaired > seeds
    more_def = range(seeds + spread + 1, spaired + 1) if long_run else range(0)
    skeep = min(a.shifting_oracle_keep, keep) if long_run else 0
    total = [len(first) + len(works) * keep * (seeds - 1) + len(works) * len(DEFAULTS) * spread +
             len(works) * 2 * (paired - seeds) + 2 * (spaired - paired) * ("shifting" in works) +
             len(DEFAULTS) * len(more_def) + skeep * (spaired - seeds)]
    print("bench-cc: %d workloads x %d seeds, %s%d runs; the oracle's grid of %d points on seed 1, its %d best on "
          "every seed; the tuner and its start on seeds 1-%d%s%s; decision interval %d us, %d us of arrivals "
          "(shifting: 6 phases of %d us)"
          % (len(works), seeds, "at most " if long_run else "", total[0], len(g), keep, paired,
             " (shifting: 1-%d)" % spaired if long_run and spaired > paired else "",
             "; the shifting workload judged there (its defaults and %d best grid points too)" % skeep if long_run
             else "", a.interval_us, dur, phase), flush=True)
    if a.plan:
        return 0
    t0 = time.time()
    results = {}
    done = [0]
    with tempfile.TemporaryDirectory(prefix="bench-cc-") as tmp, ThreadPoolExecutor(a.jobs) as ex:
        # a copy: a rebuild while the bench runs changes nothing under it
        shutil.copy2(SIM, os.path.join(tmp, "rocefab-sim"))
        run_all(ex, first, tmp, results, t0, total, done)
        labels = {"grid " + label(e, d): (e, d) for e, d in g}
        short = {w: shortlist(results[w], keep) for w in order}
        if long_run:
            # the shifting workload's shortlist on seeds 1..seeds first: its best go on to the
            # paired seeds with the rest
            run_all(ex, [("shifting", name, seed, scenario(works["shifting"], *labels[name]), None)
                         for name in short["shifting"] for seed in range(2, seeds + 1)], tmp, results, t0, total, done)
            picked = shortlist(results["shifting"], skeep, seeds)
            is_def = {"grid " + label(e, d): n for n, (e, d) in DEFAULTS.items()}
            # the defaults' own grid points run on every seed anyway: candidates at no cost
            cands = picked + [k for k in is_def if k in labels and k not in picked]
            for name in picked:
                if name in is_def:  # a default's point: its own runs on those seeds
                    total[0] -= spaired - seeds
                    continue
                for seed in range(seeds + 1, spaired + 1):
                    rest.append(("shifting", "more " + name, seed, scenario(works["shifting"], *labels[name]), None))
            for name, (e, d) in DEFAULTS.items():
                for seed in more_def:
                    rest.append(("shifting", "more " + name, seed, scenario(works["shifting"], e, d), None))
        for w in order:
            for name in short[w]:
                if w == "shifting" and long_run:
                    continue  # run above
                for seed in range(2, seeds + 1):
                    rest.append((w, name, seed, scenario(works[w], *labels[name]), None))
            for name, (e, d) in DEFAULTS.items():
                for seed in range(seeds + 1, seeds + spread + 1):
                    rest.append((w, "other seeds " + name, seed, scenario(works[w], e, d), None))
            for seed in range(seeds + 1, (spaired if w == "shifting" else paired) + 1):
                rest.append((w, "paired tuner", seed, scenario(works[w], *DEFAULTS["hpcc-sim"]), tuner))
                rest.append((w, "paired " + START, seed, scenario(works[w], *DEFAULTS["hpcc-sim"]),
                             dict(tuner, mode="advise")))
        run_all(ex, rest, tmp, results, t0, total, done)
    elapsed = time.time() - t0
    failures = []
    report = {}
    print()
    print("%-24s %-30s %9s %9s %9s %11s" % ("workload", "setting", "short p99", "long p50", "long p99", "pause us"))
    for w in works:
        # the oracle: among the grid points run on every seed
        r = {k: pool(v) for k, v in results[w].items()
             if len(v) == seeds and not k.startswith(("paired ", "other seeds ", "more "))}
        v = verdict(r, [k for k in r if k.startswith("grid ")])
        oracle = v["oracle"]
        rows = list(DEFAULTS) + ["tuner", START, oracle]
        for n in rows:
            x = r[n]
            print("%-24s %-30s %9.2f %9.2f %9.2f %11.0f" % (w, ("oracle " + n[5:]) if n == oracle else n, x["short99"],
                                                            x["long50"], x["long99"], x["pause_us"]))
        tn = [x["tuner"] for x in results[w]["tuner"]]
        # the invariants are checked on every step of every run, the paired seeds' too
        tall = [x["tuner"] for x in results[w]["tuner"] + results[w].get("paired tuner", [])]
        viol = sum(len(x["violations"]) for x in tall)
        print("%-24s oracle: short p99 %+.0f %% against the better default (the most a static setting gives here)"
              % ("", -v["o_gain"] * 100))
        print("%-24s tuner: %s; on seeds 1-%d %d steps, %d rolled back, %d invariant violations"
              % ("", verdict_words(v), len(tall), sum(x["steps"] for x in tall), sum(x["rolled_back"] for x in tall),
                 viol))
        # its own effect, paired: seed by seed the same sample path but for the tuner's changes
        tuns = results[w]["tuner"] + results[w].get("paired tuner", [])
        starts = results[w][START] + results[w].get("paired " + START, [])
        t_all, st = pool(tuns), pool(starts)
        own = {m: t_all[m] / st[m] - 1 if st[m] > 0 else None for m in ("short99", "long50", "long99", "pause_us")}
        # seed by seed: on how many the tuner's figure was lower than its start's, and higher
        per_seed = [(pool([x]), pool([y])) for x, y in zip(tuns, starts)]
        wins = {m: [sum(a[m] < b[m] for a, b in per_seed), sum(a[m] > b[m] for a, b in per_seed)]
                for m in ("short99", "long50", "long99", "pause_us")}
        print("%-24s tuner against its start with the same probes (its own effect), seeds 1-%d: short p99 %+.0f %%, "
              "long p50 %+.0f %%, long p99 %+.0f %%, pause %s; seed by seed lower/higher: %s"
              % ("", len(tuns), own["short99"] * 100, own["long50"] * 100, own["long99"] * 100,
                 "-" if own["pause_us"] is None else "%+.0f %%" % (own["pause_us"] * 100),
                 ", ".join("%s %d/%d" % (n, wins[m][0], wins[m][1]) for m, n in
                           (("short99", "short p99"), ("long50", "long p50"), ("long99", "long p99"),
                            ("pause_us", "pause")))))
        report[w] = {"settings": r, "oracle": oracle, "gain": v["gain"], "oracle_gain": v["o_gain"],
                     "vs_oracle": v["vs_oracle"], "pause_cut": v["pause_cut"], "long_ok": v["ok_long"](v["t"]),
                     "violations": viol, "own_effect": own,
                     "own_effect_seeds": len(tuns), "own_effect_wins": wins,
                     "own_effect_pooled": {"tuner": t_all, START: st},
                     # advise mode: the start's runs must change nothing
                     "start_changes_applied": sum(x["tuner"]["changes_applied"] for x in starts)}
        if spread:
            # the same fixed setting, another set of seeds: how far its figures move
            moved = {}
            for m in ("short99", "long50", "long99"):
                moved[m] = max(abs(pool(results[w]["other seeds " + n])[m] / r[n][m] - 1) if r[n][m] > 0 else 0
                               for n in DEFAULTS)
            print("%-24s resolution: the defaults on %d other seeds moved short p99 by up to %.0f %%, long p50 by %.0f %%, "
                  "long p99 by %.0f %% (smaller differences are not resolved)"
                  % ("", spread, moved["short99"] * 100, moved["long50"] * 100, moved["long99"] * 100))
            report[w]["seed_spread"] = moved
        judged_on = ""
        if w == "shifting" and long_run:
            # judged on every paired seed: the defaults, the best grid points of seeds 1..seeds,
            # the tuner (seed order: the first seeds, the spread's, the rest)
            nl = len(tuns)

            def every(n):
                return (results[w][n] + results[w].get("other seeds " + n, []) + results[w].get("more " + n, []))[:nl]
            rl = {n: pool(every(n)) for n in DEFAULTS}
            for name in cands:
                rl[name] = rl[is_def[name]] if name in is_def else pool(results[w][name] + results[w]["more " + name])
            rl["tuner"], rl[START] = t_all, st
            # the criteria below go by these figures
            v, judged_on = verdict(rl, cands), " (seeds 1-%d)" % nl
            oracle = v["oracle"]
            print("%-24s judged on seeds 1-%d (the criteria below), the oracle among the %d best grid points of "
                  "seeds 1-%d and the defaults' own:" % ("", nl, len(picked), seeds))
            for n in list(DEFAULTS) + ["tuner", START] + cands:
                x = rl[n]
                name = ("oracle " + n[5:] if n == oracle else n) + (" (= %s)" % is_def[n] if n in is_def else "")
                print("%-24s %-36s %9.2f %9.2f %9.2f %11.0f" % ("  seeds 1-%d" % nl, name, x["short99"], x["long50"],
                                                                x["long99"], x["pause_us"]))
            print("%-24s tuner: %s" % ("", verdict_words(v)))
            report[w].update({"judged_on_seeds": nl, "settings_judged": rl, "oracle_judged": oracle,
                              "oracle_gain_judged": v["o_gain"], "gain_judged": v["gain"],
                              "vs_oracle_judged": v["vs_oracle"], "pause_cut_judged": v["pause_cut"],
                              "long_ok_judged": v["ok_long"](v["t"]),
                              # how many seeds each figure pools
                              "seeds_judged": {n: len(every(n)) for n in DEFAULTS} | {
                                  k: len(every(is_def[k])) if k in is_def else
                                  len(results[w][k] + results[w]["more " + k]) for k in cands} | {
                                  "tuner": len(tuns), START: len(starts)}})
            if spread:
                # its resolution: the defaults on the first half of those seeds against the second
                half = nl // 2
                moved = {m: max(abs(pool(every(n)[:half])[m] / pool(every(n)[half:nl])[m] - 1)
                                if pool(every(n)[half:nl])[m] > 0 else 0 for n in DEFAULTS)
                         for m in ("short99", "long50", "long99")}
                print("%-24s resolution: the defaults on seeds 1-%d against %d-%d moved short p99 by up to %.0f %%, "
                      "long p50 by %.0f %%, long p99 by %.0f %% (the resolution of %d seeds; %d resolve better)"
                      % ("", half, half + 1, nl, moved["short99"] * 100, moved["long50"] * 100, moved["long99"] * 100,
                         half, nl))
                report[w]["seed_spread_judged"] = moved

        def missed(what, gaps):
            """A figure missed, with whether the run resolves it: gaps are (figure, how far the
            tuner's value is past its bound, relative); each within how far that figure of a
            fixed setting moved between seed sets is noise, not a verdict (no gaps: resolved)."""
            unresolved = bool(spread and gaps) and all(g <= moved[m] for m, g in gaps)
            if unresolved:
                what += " [within the resolution: %s]" % ", ".join(
                    "%s %.0f %% past its bound, a fixed setting moved %.0f %%" % (m, g * 100, moved[m] * 100)
                    for m, g in gaps)
            failures.append((what, not unresolved))
            report[w].setdefault("missed", []).append({"what": what, "resolved": not unresolved})
        if viol:
            missed("%s: %d invariant violations" % (w, viol), [])
        t, best_def, gain, vs_oracle, pause_cut = v["t"], v["best_def"], v["gain"], v["vs_oracle"], v["pause_cut"]
        if not v["ok_long"](t):
            missed("%s: long flows more than 5 %% worse than the better default%s" % (w, judged_on),
                   [(m, t[m] / (1.05 * best_def[m]) - 1) for m in ("long50", "long99")
                    if t[m] > 1.05 * best_def[m]])
        if gain < 0.25:
            missed("%s: short-flow p99 %s the better default's (want >= 25 %% below)%s" % (w, below(gain), judged_on),
                   [("short99", t["short99"] / (0.75 * best_def["short99"]) - 1)])
        if pause_cut is not None and pause_cut < 0.5:
            missed("%s: pause time %s the better default's (want >= 50 %% below)%s" % (w, below(pause_cut), judged_on),
                   [])
        if w == "shifting":
            conv = [c for x in tn for c in convergence(x["timeline"], phase, a.interval_us)]
            print("%-24s tuner: settings settled %s decision intervals after each phase change (%d changes x %d seeds; "
                  "phases of %d intervals)" % ("", ", ".join(map(str, conv)), SHIFTS, seeds, phase // a.interval_us))
            report[w]["convergence"] = conv
            # judged on every seed the tuner ran on
            conv = conv + [c for x in results[w].get("paired tuner", [])
                           for c in convergence(x["tuner"]["timeline"], phase, a.interval_us)]
            worst = None if not conv or None in conv else max(conv)
            if len(conv) > len(report[w]["convergence"]):
                known = [c for c in conv if c is not None]
                print("%-24s tuner: over seeds 1-%d, settled within 20 intervals after %d of %d phase changes, mean %.1f, "
                      "worst %s" % ("", len(tn) + len(results[w]["paired tuner"]), sum(c <= 20 for c in known),
                                    len(conv), sum(known) / max(1, len(known)), worst))
                report[w]["convergence_paired"] = conv
            if vs_oracle > -0.15:
                missed("%s: %s the oracle's single setting (want >= 15 %% below)%s" % (w, below(-vs_oracle), judged_on),
                       [("short99", t["short99"] / (0.85 * v["o_short99"]) - 1)])
            if phase // a.interval_us < 25:
                missed("%s: phases of %d intervals are too short to judge convergence within 20"
                       % (w, phase // a.interval_us), [])
            elif worst is None or worst > 20:  # None: a phase without a decision
                missed("%s: settings still moving %s intervals after a phase change (want <= 20; seeds 1-%d)"
                       % (w, worst, len(conv) // SHIFTS), [])
        elif vs_oracle > 0.05:
            missed("%s: %.0f %% behind the oracle (want within 5 %%)" % (w, vs_oracle * 100),
                   [("short99", t["short99"] / (1.05 * v["o_short99"]) - 1)])
    print("\nbench-cc: %d runs in %.0f s" % (done[0], elapsed))
    if not a.smoke and elapsed > 1800:
        failures.append(("the bench took %.0f s (want <= 30 min)" % elapsed, True))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    if failures:
        # a miss inside the resolution is still a miss: the criteria hold as written
        print("acceptance figures missed (%d resolved by this run, %d within its resolution):\n  "
              % (sum(res for _, res in failures), sum(not res for _, res in failures))
              + "\n  ".join(f for f, _ in failures))
        return 0 if a.no_fail else 1
    print("every acceptance figure met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
