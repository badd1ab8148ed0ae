#!/usr/bin/python3
"""The shifting workload of make bench-cc against static settings that follow its phases: how far
a controller could go that knew when each phase starts and chose, per phase type, the best
setting of a grid knowing the results.  An analysis for docs/performance.md, not a benchmark:
the default grid (22 settings) and the tuner on 18 seeds take about 25 minutes on 2 cores.

Each setting (ECN Kmin/Kmax/Pmax of every switch port, the hosts' min_time_between_cnps, the
other DCQCN knobs NVIDIA's defaults) runs on seeds 1..--seeds of bench-cc's shifting workload
(WebSearch 70 % -> all-reduce -> incast, twice, phases of --phase-us) with the tuner in advise
mode and no probes: the same run as the static setting alone (the tuner only reads the
counters), with the share of port time paused per decision interval.  A flow counts for the phase
it started in; a phase's pause is the run's paused time shared out as its intervals' pause
shares.  The tuner runs too (auto, with its pingmesh, as in bench-cc), for comparison.

Printed: per setting and phase type (WebSearch 70 %, all-reduce, incast) short p99 / long p50 /
long p99 slowdown / paused ms (per run); then, of every assignment of a setting to each phase
type, those meeting bench-cc's long-flow condition (p50 and p99 of flows >= 1 MB at most 5 %
above the better default's: the DCQCN paper's and the HPCC simulator's settings, always in the
grid) with the least pause and with the lowest short p99, beside the bounds of bench-cc's
criteria (short p99 25 % and pause 50 % below the better default's).  --smoke: seed 1, the two
defaults, no tuner (CI: it cannot rot)."""
import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cc as b  # noqa: E402

PAPER = "5000/200000/0.01/4"
HPCC = "400000/1600000/0.2/4"
GRID = [HPCC, PAPER, "400000/3200000/1/4", "40000/400000/0.2/4", "100000/1600000/0.2/4", "100000/800000/0.3/4"]
GRID += [s[:s.rindex("/")] + g for s in list(GRID) for g in ("/3", "/2")]
GRID += ["400000/1600000/0.2/1", "400000/3200000/1/1", PAPER[:-2] + "/1", "200000/1600000/0.2/3"]
PHASES = ("websearch-70", "all-reduce", "incast")


def parse(spec):
    a = spec.split("/")
    if len(a) != 4:
        raise argparse.ArgumentTypeError(f"'{spec}': a setting is KMIN_BYTES/KMAX_BYTES/PMAX/CNP_GAP_US")
    try:
        ecn = {"kmin_bytes": int(a[0]), "kmax_bytes": int(a[1]), "pmax": float(a[2])}
        gap = int(a[3])
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{spec}': KMIN_BYTES, KMAX_BYTES and CNP_GAP_US are integers, PMAX "
                                         "a number") from None
    if not (0 <= ecn["kmin_bytes"] < ecn["kmax_bytes"] and 0 < ecn["pmax"] <= 1 and 0 <= gap <= 4095):
        raise argparse.ArgumentTypeError(f"'{spec}': want KMIN_BYTES < KMAX_BYTES, 0 < PMAX <= 1, CNP_GAP_US "
                                         "0..4095")
    return ecn, dict(b.NVIDIA, min_time_between_cnps_us=gap)


def name(ecn, dcqcn):
    return f"{ecn['kmin_bytes']}/{ecn['kmax_bytes']}/{ecn['pmax']!r}/{dcqcn['min_time_between_cnps_us']}"


def one(sim, scen, seed, tuner, phase_us):
    """One run: per phase (0..5) the pause in us and every flow as (phase, bytes, slowdown)."""
    fd, path = tempfile.mkstemp(suffix=".json")
    cmd = [sim, "run", path, "--quiet", "--no-timing", "--seed", str(seed), "--json", "-", "--controller",
           "tuner", "--interval", "100us"] + ([] if tuner else ["--cc-mode", "advise", "--probes", "0"])
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(scen, f)
        r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    finally:
        os.unlink(path)
    share = [0.0] * 6
    for x in r["controller"]["timeline"]:  # an interval ending at t_us belongs to the phase it ran in
        share[max(0, min(5, int((x["t_us"] - 1) // phase_us)))] += x["signals"].get("pause_share", 0)
    tot = sum(share)
    if r["pfc"]["paused_us"] > 0 and not tot:
        raise RuntimeError(f"seed {seed}: {r['pfc']['paused_us']} us paused, but no interval says when")
    return {"pause": [r["pfc"]["paused_us"] * (s / tot if tot else 0) for s in share],
            "flows": [(min(5, int(f["start_us"] // phase_us)), f["bytes"], f["slowdown"])
                      for f in r["flows"]["per_flow"]]}


def by_phase_type(runs):
    """Per setting and phase type (0..2): its short and long flows' slowdowns, sorted, and its
    paused ms per run, both phases of the type and every seed pooled."""
    out = {}
    for s, rs in runs.items():
        out[s] = []
        for k in range(3):
            short = sorted(sd for r in rs for p, size, sd in r["flows"] if p % 3 == k and size < 100000)
            long_ = sorted(sd for r in rs for p, size, sd in r["flows"] if p % 3 == k and size >= 1000000)
            out[s].append((short, long_, sum(r["pause"][p] for r in rs for p in (k, k + 3)) / len(rs) / 1000))
    return out


def figures(types, assign):
    """Pooled short p99, long p50, long p99 and paused ms per run with phase type k taken from
    the runs of the setting assign[k] (sorted() merges the sorted runs in linear time)."""
    short = sorted(x for k in range(3) for x in types[assign[k]][k][0])
    long_ = sorted(x for k in range(3) for x in types[assign[k]][k][1])
    return b.pct(short, 0.99), b.pct(long_, 0.5), b.pct(long_, 0.99), sum(types[assign[k]][k][2] for k in range(3))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=18)
    ap.add_argument("--phase-us", type=int, default=3000)
    ap.add_argument("--settings", nargs="+", type=parse, metavar="KMIN/KMAX/PMAX/GAP",
                    help="the grid (default: 22 settings); the two defaults are always added")
    ap.add_argument("--no-tuner", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", help="write every figure here")
    a = ap.parse_args()
    if a.seeds < 1 or a.phase_us < 200 or a.phase_us % 100 or a.jobs < 1:
        ap.error("--seeds and --jobs are at least 1, --phase-us a multiple of the 100 us interval, at least 200")
    specs = [PAPER, HPCC] if a.smoke else GRID
    if a.settings:
        specs = list(dict.fromkeys([name(e, d) for e, d in a.settings] + [PAPER, HPCC]))
    seeds = range(1, (1 if a.smoke else a.seeds) + 1)
    shifting = b.workloads(4000, False, a.phase_us)["shifting"]
    tmp = tempfile.mkdtemp()
    try:
        sim = os.path.join(tmp, "rocefab-sim")
        shutil.copy(b.SIM, sim)  # a rebuild meanwhile does not change the runs
        jobs = [(s, seed) for s in specs for seed in seeds]
        if not (a.no_tuner or a.smoke):
            jobs += [("tuner", seed) for seed in seeds]
        ex = ThreadPoolExecutor(a.jobs)
        try:
            futs = [ex.submit(one, sim, b.scenario(shifting, *parse(HPCC if s == "tuner" else s)), seed, s == "tuner",
                              a.phase_us) for s, seed in jobs]
            runs = {}
            for i, ((s, seed), f) in enumerate(zip(jobs, futs)):
                runs.setdefault(s, []).append(f.result())
                print(f"\r{i + 1}/{len(jobs)} runs", end="", file=sys.stderr, flush=True)
        finally:
            ex.shutdown(cancel_futures=True)  # a failed run (or ^C) ends it, not the rest of the queue
        print(file=sys.stderr)
    finally:
        shutil.rmtree(tmp)
    out = {"seeds": len(seeds), "phase_us": a.phase_us, "settings": {}, "best": {}}
    print(f"shifting workload, seeds 1-{len(seeds)}, phases of {a.phase_us} us; per phase type: short p99 / "
          "long p50 / long p99 / paused ms per run")
    print("%-22s %-30s %-30s %-30s %s" % (("setting",) + PHASES + ("whole run",)))
    types = by_phase_type(runs)
    for s in runs:
        per = [(b.pct(sh, 0.99), b.pct(lo, 0.5), b.pct(lo, 0.99), pz) for sh, lo, pz in types[s]]
        whole = figures(types, [s] * 3)
        out["settings"][s] = {"phases": dict(zip(PHASES, per)), "whole": whole}
        print("%-22s %s   %s" % (s, " ".join("%6.2f %5.2f %5.2f %5.2f  " % f for f in per),
                                  "%6.2f %5.2f %5.2f %5.2f" % whole))
    grid = [s for s in runs if s != "tuner"]
    d = [out["settings"][s]["whole"] for s in (PAPER, HPCC)]
    bound = {"short99": 0.75 * min(x[0] for x in d), "long50": 1.05 * min(x[1] for x in d),
             "long99": 1.05 * min(x[2] for x in d), "pause_ms": 0.5 * min(x[3] for x in d)}
    ok = [(f, c) for c in itertools.product(grid, repeat=3)
          for f in [figures(types, c)] if f[1] <= bound["long50"] and f[2] <= bound["long99"]]
    out["bounds"] = bound
    print("bench-cc's bounds (from the defaults above): short p99 <= %.2f, long p50 <= %.2f, long p99 <= %.2f, "
          "pause <= %.2f ms" % (bound["short99"], bound["long50"], bound["long99"], bound["pause_ms"]))
    print(f"{len(ok)} of {len(grid) ** 3} assignments (websearch-70 | all-reduce | incast) keep long flows within 5 %")
    for what, key in (("least pause", 3), ("lowest short p99", 0)):
        if ok:
            f, c = min(ok, key=lambda x: (x[0][key], x[0][0] + x[0][3]))
            out["best"][what] = {"assign": dict(zip(PHASES, c)), "figures": f}
            print("%-17s %-62s %6.2f %5.2f %5.2f %5.2f" % ((what, " | ".join(c)) + f))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
