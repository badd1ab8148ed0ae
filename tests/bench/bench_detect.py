#!/usr/bin/python3
"""make bench-detect: the PFC deadlock and storm detector against a SONiC-style PFC watchdog
(pfcwd), on the same simulated runs, judged against the simulation's ground truth.

Every run is rocefab-sim run --controller detector --mitigate auto --baseline pfcwd (the
watchdog shadows the detector on the same counters and records what it would do), and the same
scenario and seed again with --controller pfcwd acting (its drop action applied) for the
mitigation figures.  Intervals are fabric time (--interval, default 100 us); the watchdog's
SONiC defaults (200 ms poll, detection and restoration at a 200 ms fast interval) are scaled by
the same factor.  --smoke runs one seed of each (CI), the default 20 (deadlocks, storms) and 5
(negatives).  Exit status 1 when an acceptance figure is missed."""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "system"))
import detectlib as dl  # noqa: E402


def pct(a, b):
    return "%d/%d" % (a, b)


def fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


class Bench:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.mitig = {}

    def fail(self, what):
        self.failures.append(what)

    def runs(self, label, scen, seed, exclude, fault_us, extra=()):
        ours = dl.controller(dl.run(scen, seed, interval=self.args.interval, extra=extra))
        wd = dl.controller(dl.run(scen, seed, controller="pfcwd", baseline=False, interval=self.args.interval,
                                  extra=extra))
        m = self.mitig.setdefault(label, {"runs": 0, "detected": 0, "recovered": 0, "rec": [], "ours": 0, "wd": 0,
                                          "unreversed": 0, "wd_rec": [], "loop_ours": 0, "loop_wd": 0})
        m["loop_ours"] += ours["drops"]["looping_bytes"]
        m["loop_wd"] += wd["drops"]["looping_bytes"]
        m["runs"] += 1
        m["ours"] += dl.drops(ours)
        m["wd"] += dl.drops(wd)
        m["unreversed"] += len(dl.actions_reversed(ours))
        det = min([f["detected_us"] for f in dl.alarms(ours)] or [None]) if dl.alarms(ours) else None
        rec, _ = dl.judge_recovery(ours, fault_us, exclude, det)
        wd_first = min([a["t_us"] for a in wd["actions"] if a["op"] == "drop"] or [None]) if wd["actions"] else None
        wrec, _ = dl.judge_recovery(wd, fault_us, exclude, wd_first)
        if det is not None:
            m["detected"] += 1
            if rec is not None and rec <= 5:
                m["recovered"] += 1
            if rec is not None:
                m["rec"].append(rec)
        if wrec is not None:
            m["wd_rec"].append(wrec)
        return ours, wd

    # --- deadlocks -----------------------------------------------------------------------------
    def deadlocks(self):
        n = self.args.seeds
        print("Deadlocks: the cycle named with exactly its ports and priority, within 2 intervals of the freeze")
        print("  %-22s %5s %7s %14s %11s %6s %16s | %s" % ("scenario", "runs", "formed", "named exactly",
                                                           "within 2 iv", "wrong", "latency iv p50/max",
                                                           "pfcwd: queues dropped, on the cycle"))
        cases = [
            ("ring-cbd", [(dl.load("ring-cbd"), s, {"h%d" % i for i in range(8)}, 300) for s in range(1, n + 1)]),
            ("loop (4 positions)", [(dl.loop_variant(*pos), s, {"h%d" % pos[2]} | {"h%d" % (4 * pos[0] + i) for i in range(4)}, 300)
                                    for k, (s, pos) in enumerate((s, [(1, 0, 0), (0, 1, 6), (1, 1, 2), (0, 0, 5)][s % 4])
                                                                 for s in range(1, n + 1))]),
            ("failover (2 links)", None),
        ]
        for label, runs in cases:
            if runs is None:  # seeds until n deadlocks formed (ECMP does not always close the cycle)
                runs = []
                fo = dl.load("failover-deadlock")
                bounce = {"h%d" % (5 * l + i) for l in range(4) for i in range(3)}
                runs = [(fo, s, bounce, 200) for s in range(1, 2 * n + 1)]
            formed = named = ontime = wrong = total = 0
            lat = []
            wd_drops = wd_cycle = 0
            for scen, seed, exclude, fault_us in runs:
                if label.startswith("failover") and formed >= n:
                    break
                ours, _ = self.runs(label, scen, seed, exclude, fault_us)
                total += 1
                j = dl.judge_deadlocks(ours)
                formed += 1 if j["truth"] else 0
                named += j["named"]
                ontime += j["named"] - j["late"]
                wrong += j["wrong"]
                lat += j["latency_intervals"]
                cyc = {p for t in ours["truth_deadlocks"] for p in t["ports"]}
                drops = [a for a in ours["baseline_actions"] if a["op"] == "drop"]
                wd_drops += len(drops)
                wd_cycle += sum(1 for a in drops if "%s:%s" % (a["node"], a["port"]) in cyc)
                if j["named"] < j["truth"] or j["late"] or j["wrong"]:
                    self.fail("%s seed %d: %s" % (label, seed, j))
            print("  %-22s %5d %7d %14s %11s %6d %16s | %d, %d" % (
                label, total, formed, pct(named, formed), pct(ontime, formed), wrong,
                "%s/%s" % (fmt(statistics.median(lat) if lat else None), fmt(max(lat) if lat else None)),
                wd_drops, wd_cycle))
            if formed < min(n, total):
                print("    (a cycle formed in %d of %d runs: ECMP did not close it in the others)" % (formed, total))
            if formed < (n if not self.args.smoke else 1):
                self.fail("%s: only %d deadlocks formed" % (label, formed))
        print()

    # --- storms ------------------------------------------------------------------------------------
    def storms(self):
        print("Pause storms: the culprit named, nobody else, the victims listed")
        print("  %-36s %5s %14s %12s %13s %14s | %s" % ("scenario", "runs", "culprit named", "others named",
                                                        "victims mean", "detection iv", "pfcwd: culprit's port, collateral queues dropped"))
        self.storm_row("storm", False)
        # the culprit's agent silent (a hung host's): read from its switch port, as pfcwd reads all
        self.storm_row("storm, silent culprit", True)
        print()

    def storm_row(self, label, silent):
        n = self.args.seeds
        named = others = 0
        victims, det = [], []
        wd_culprit = wd_other = 0
        for seed in range(1, n + 1):
            host = (seed * 7) % 16
            ours, _ = self.runs(label, dl.storm_variant(host), seed, {"h%d" % host} | set(dl.storm_senders(host)), 500,
                                extra=("--silent", "h%d" % host) if silent else ())
            j = dl.judge_storm(ours, "h%d" % host)
            named += j["named"]
            others += bool(j["others"])
            victims.append(j["victims"])
            if j["detected_us"] is not None:
                det.append((j["detected_us"] - 500) / ours["interval_us"])
            port = ("leaf%d" % (host // 4), "h%d" % host)
            for a in ours["baseline_actions"]:
                if a["op"] == "drop":
                    if (a["node"], a["port"]) == port:
                        wd_culprit += 1
                    else:
                        wd_other += 1
            if not j["named"] or j["others"]:
                self.fail("%s at h%d seed %d: %s" % (label, host, seed, j))
        print("  %-36s %5d %14s %12d %13.1f %14s | %d, %d" % (
            label + " (16 culprits)", n, pct(named, n), others, statistics.mean(victims),
            "%s/%s" % (fmt(statistics.median(det) if det else None), fmt(max(det) if det else None)),
            wd_culprit, wd_other))

    # --- negatives ---------------------------------------------------------------------------------
    def negatives(self):
        n = self.args.negative_seeds
        print("No false alarms: deadlock and pause_storm findings on healthy-but-busy fabrics")
        print("  %-22s %5s %20s %14s | %s" % ("scenario", "runs", "deadlock/storm alarms", "other findings",
                                                "pfcwd: runs firing, queues dropped"))
        for name in ("incast-64", "websearch-70", "slow-receiver", "link-flap", "lossy-link"):
            alarms = fired = dropped = 0
            other = {}
            for seed in range(1, n + 1):
                c = dl.controller(dl.run(dl.load(name), seed, interval=self.args.interval))
                alarms += len(dl.alarms(c))
                for f in c["findings"]:
                    if f["class"] not in dl.ALARMS:
                        other[f["class"]] = other.get(f["class"], 0) + 1
                d = [a for a in c["baseline_actions"] if a["op"] == "drop"]
                fired += bool(d)
                dropped += len(d)
                if dl.alarms(c):
                    self.fail("%s seed %d: %s" % (name, seed, [f["summary"] for f in dl.alarms(c)]))
            print("  %-22s %5d %20d %14s | %d, %d" % (name, n, alarms,
                                                      ",".join("%s %d" % kv for kv in sorted(other.items())) or "-",
                                                      fired, dropped))
        print()

    def mitigation(self):
        print("Auto mitigation (mitigate auto) against pfcwd acting (action drop), same scenario and seed")
        print("  %-22s %5s %13s %12s %11s %9s %7s %11s %12s %16s" % (
            "scenario", "runs", "back <= 5 iv", "recovery iv", "dropped MB", "pfcwd MB", "ratio",
            "unreversed", "pfcwd rec iv", "looping MB/pfcwd"))
        for label, m in self.mitig.items():
            ratio = m["ours"] / m["wd"] if m["wd"] else None
            print("  %-22s %5d %13s %12s %11.1f %9.1f %7s %11d %12s %16s" % (
                label, m["runs"], pct(m["recovered"], m["detected"]),
                fmt(statistics.median(m["rec"]) if m["rec"] else None), m["ours"] / 1e6, m["wd"] / 1e6,
                fmt(ratio, "%.3f"), m["unreversed"], fmt(statistics.median(m["wd_rec"]) if m["wd_rec"] else None),
                "%.1f/%.1f" % (m["loop_ours"] / 1e6, m["loop_wd"] / 1e6)))
            if m["unreversed"]:
                self.fail("%s: %d actions neither reversed nor held as persistent" % (label, m["unreversed"]))
            if m["recovered"] < 0.9 * m["detected"]:
                self.fail("%s: recovered within 5 intervals in %d of %d runs" % (label, m["recovered"], m["detected"]))
            if ratio is not None and ratio > 0.2:
                self.fail("%s: dropped %.3f of pfcwd's bytes (> 1/5)" % (label, ratio))
        print("  (recovery: intervals from detection until the hosts the fault does not involve receive >= 90%")
        print("   of their per-interval bytes before it; dropped: data bytes lost to full buffers or drop actions,")
        print("   apart from packets whose route loops where they were dropped, which no mitigation can")
        print("   deliver: those are the last column)")
        print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--negative-seeds", type=int, default=5)
    ap.add_argument("--interval", default="100us")
    ap.add_argument("--smoke", action="store_true", help="one seed of each (CI)")
    args = ap.parse_args()
    if args.smoke:
        args.seeds = args.negative_seeds = 1
    t0 = time.monotonic()
    print("rocefab detector vs SONiC-style pfcwd, in rocefab-sim (interval %s of fabric time; pfcwd's "
          "detection and restoration scaled to one interval)" % args.interval)
    print()
    b = Bench(args)
    b.deadlocks()
    b.storms()
    b.negatives()
    b.mitigation()
    print("%d simulated runs in %.0f s" % (2 * sum(m["runs"] for m in b.mitig.values())
                                         + 5 * args.negative_seeds, time.monotonic() - t0))
    if b.failures:
        print("MISSED:")
        for f in b.failures:
            print("  " + f)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
