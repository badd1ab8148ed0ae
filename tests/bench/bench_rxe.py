"""make bench (f): the probe engine against perftest on real verbs, in one soft-RoCE guest.

Boots the guest of tests/rxe/ running tests/rxe/guest-bench.sh, which alternates perftest's
ib_write_lat and rocefab-probe's write ping-pong (the same method) at 64 B for ROUNDS rounds in
the same boot, then runs rocefab-probe's signaled write and compare (RDMA SEND against TCP).
Prints medians, the ratio against perftest (target <= 1.10) and the CPU time per probe.  The
guest runs under TCG software emulation: absolute figures are emulation figures, the ratio is
the point (both tools see the same emulated device in the same boot).

    usage: bench_rxe.py BUILD_DIR [ITERS] [ROUNDS]"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "rxe"))
from rxeguest import ROOT, Guest, guest_image  # noqa: E402


def fail(msg):
    print(f"rxe          cannot run: {msg}")
    sys.exit(1)


def main():
    build = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    image = guest_image(fail)
    g = Guest(image, "bench", "guest-bench.sh", [ROOT, build, iters, rounds]).start()
    try:
        status, lines = g.wait(900)
    finally:
        g.kill()
    by = {}
    for ln in lines:
        by.setdefault(ln.get("test"), []).append(ln)
    if status != 0 or not by.get("ours") or not by.get("perftest"):
        bad = [ln for ln in lines if ln.get("rc") or ln.get("ok") == 0]
        fail(f"the guest script failed (status {status}): {bad[:3]}; console in {g.log}")
    pt, ours = [], []
    mhz = float(by["tsc"][0]["mhz"])
    for p in by["perftest"]:
        f = p["out"].split()
        # -C: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%, in TSC cycles
        if len(f) < 9 or f[0] != "64":
            fail(f"cannot read ib_write_lat's output: {p}")
        pt.append({"min": float(f[2]) / mhz, "p50": float(f[4]) / mhz, "mean": float(f[5]) / mhz,
                   "p99": float(f[7]) / mhz})
    for o in by["ours"]:
        st = o["result"]["stats"]
        if st["ok"] != st["n"] or st["data_errors"] or not o["result"]["verified"]:
            fail(f"rocefab-probe's run was not clean: {st}")
        ours.append({"min": st["min_us"], "p50": st["p50_us"], "mean": st["mean_us"], "p99": st["p99_us"],
                     "cpu": st["cpu_us_per_op"], "inline": o["result"].get("inline")})
    mp = statistics.median(x["p50"] for x in pt)
    mo = statistics.median(x["p50"] for x in ours)
    print(f"rxe          soft-RoCE in a TCG guest ({image[2]}), 64 B RDMA WRITE, {iters:,} iterations x "
          f"{rounds} alternating rounds, same boot")
    pts = ", ".join("%.2f" % x["p50"] for x in pt)
    ourss = ", ".join("%.2f" % x["p50"] for x in ours)
    print(f"             perftest ib_write_lat    typical (p50) per round: {pts} us; median {mp:.2f} us")
    print(f"             (ib_write_lat -C: TSC cycles / {mhz:.3f} MHz, the guest kernel's calibration)")
    print(f"             rocefab-probe --pingpong p50 per round:           {ourss} us; median {mo:.2f} us "
          f"(writes {'inline' if ours[0]['inline'] else 'not inline'}; perftest does not use inline on rxe)")
    print(f"             p99: perftest {statistics.median(x['p99'] for x in pt):.2f} us, "
          f"rocefab-probe {statistics.median(x['p99'] for x in ours):.2f} us; "
          f"data verified on every rocefab-probe round")
    ratio = mo / mp
    print(f"ratio        rocefab-probe / ib_write_lat = {ratio:.2f}; target <= 1.10: "
          f"{'met' if ratio <= 1.10 else 'NOT MET'}")
    sig = by.get("signaled", [{}])[0].get("result")
    if sig:
        s = sig["stats"]
        print(f"             signaled write (completion latency, the pingmesh's measure): p50 {s['p50_us']:.2f} us, "
              f"p99 {s['p99_us']:.2f} us, {s['cpu_us_per_op']:.2f} us CPU per probe")
    cmp_ = by.get("compare", [{}])[0].get("result")
    if cmp_:
        v, t = cmp_["verbs_send"]["stats"], cmp_["tcp"]["stats"]
        print(f"cpu          per probe, 64 B ping: RDMA SEND {v['cpu_us_per_op']:.2f} us CPU "
              f"(p50 {v['p50_us']:.2f} us, busy-polling), TCP {t['cpu_us_per_op']:.2f} us CPU "
              f"(p50 {t['p50_us']:.2f} us, blocking); ping-pong write {statistics.median(x['cpu'] for x in ours):.2f} us CPU")
    print(f"             guest boot and run: {g.seconds:.0f} s")


if __name__ == "__main__":
    main()
