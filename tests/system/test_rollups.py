"""Rollups (issue 16): the per-minute and per-hour rows rocefabd writes as samples arrive give the
same points as the raw samples over the same windows — counters (deltas, exact mean rates, the
smallest and largest rate, through a device reset and a 32-bit wrap) and gauges (mean, min,
max) — also across a rocefabd killed in the middle of a minute; a series query picks the
coarsest resolution that serves its step and says which."""
import datetime
import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import BUILD, wait_for

STEP_S = 20  # one report every 20 s of sample time
HOURS = 2


def report(seq, t_s, values_sim, values_hw):
    t = int(t_s * 1e9)
    return {"schema": 1, "agent": {"id": "r1", "role": "host", "boot_id": "b1", "version": "t",
                                   "backend": "test"},
            "seq": seq, "time_ns": t, "interval_ms": STEP_S * 1000,
            "inventory": {"devices": [{"name": "nic0", "kind": "rdma", "driver": "mlx5", "ports": [
                {"port": "1", "state": "up", "speed_mbps": 100000}]}]},
            "samples": [{"device": "nic0", "port": "1", "source": "sim", "t_ns": t, "values": values_sim},
                        {"device": "nic0", "port": "1", "source": "hw_counters", "driver": "mlx5",
                         "t_ns": t, "values": values_hw}]}


def samples(base):
    """(seq, time, sim values, hw values): irregular traffic, a device reset at 40 min, a 32-bit
    wrap of out_of_sequence at 70 min, a gauge that moves."""
    tx, oos = 10_000, 2**32 - 5_000
    n = HOURS * 3600 // STEP_S + 7  # into the hour after, so that its open minute is raw
    for i in range(n):
        t = base + i * STEP_S + (i % 3)  # not on the minute's edges only
        tx += 1_000_000 * (1 + (i * 7919) % 13)
        if i == 120:
            tx = 5_000  # the device was reset
        oos = (oos + 97 * (1 + i % 5)) % 2**32
        depth = (i * 104729) % 300_000
        yield i + 1, t, {"roce_tx_bytes": tx, "queue_depth_bytes_prio3": depth}, {"out_of_sequence": oos}


@pytest.fixture
def fed(world):
    d = world.daemon()
    _, tok = d.token("agents", "agent", agent="r1")
    d.token("viewer", "viewer")
    d.start()
    base = (int(time.time()) - 3 * 3600) // 3600 * 3600  # an hour's start, within raw retention
    return d, base


def post_all(d, items):
    c = d.client("agents")
    for seq, t, sim, hw in items:
        r = c.post("/api/v1/agents/r1/report", data=json.dumps(report(seq, t, sim, hw)),
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 200, r.text


def series(d, base, step, resolution, end=None):
    end = end or base + (HOURS + 1) * 3600
    doc = d.client("viewer").json(
        "/api/v1/ports/r1:nic0:1/counters",
        params={"names": "roce_tx_bytes,out_of_sequence,queue_depth_bytes", "priority": 3,
                "from": base, "to": end, "step": f"{step}s", "resolution": resolution})
    return doc["resolution"], {(s["name"], s["priority"]): s["points"] for s in doc["series"]}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert len(a[k]) == len(b[k]), k
        for p, q in zip(a[k], b[k]):
            assert p.keys() == q.keys(), (k, p, q)
            for f in p:
                assert p[f] == pytest.approx(q[f], rel=1e-12), (k, f, p, q)


def check(d, base, n0=180):
    for step, res in ((60, "1m"), (120, "1m"), (600, "1m"), (3600, "1h"), (7200, "1h")):
        got_raw, raw = series(d, base, step, "raw")
        got, rolled = series(d, base, step, res)
        assert (got_raw, got) == ("raw", res)
        assert_same(rolled, raw)
        assert sum(len(v) for v in raw.values()) > 0
    # the reset is a baseline, the wrap a delta: the hour of both has fewer deltas than samples
    _, hourly = series(d, base, 3600, "1h")
    tx = hourly[("roce_tx_bytes", None)]
    assert tx[0]["n"] == n0 and tx[0]["delta"] > 0 and tx[0]["rate_min"] <= tx[0]["rate"] <= tx[0]["rate_max"]
    oos = hourly[("out_of_sequence", None)][1]
    assert oos["delta"] == sum(97 * (1 + i % 5) for i in range(180, 360))
    depth = hourly[("queue_depth_bytes", 3)][0]
    assert depth["min"] <= depth["value"] <= depth["max"]
    return hourly


def rows(d):
    """The buckets rocefabd wrote, by resolution (read from its database): rows of their own,
    and the buckets in blocks (res < 0: an hour of minutes, a day of hours, n buckets each)."""
    db = sqlite3.connect(f"file:{d.db}?mode=ro", uri=True, timeout=10)
    try:
        return dict(db.execute("SELECT abs(res), sum(CASE WHEN res < 0 THEN n ELSE 1 END) FROM rollups "
                               "GROUP BY abs(res)").fetchall())
    finally:
        db.close()


def blocks(d):
    """Rows by res as stored: minutes of closed hours are in one block row per hour (-60)."""
    db = sqlite3.connect(f"file:{d.db}?mode=ro", uri=True, timeout=10)
    try:
        return dict(db.execute("SELECT res, count(*) FROM rollups GROUP BY res").fetchall())
    finally:
        db.close()


def test_rollups_equal_the_raw_samples(fed):
    d, base = fed
    post_all(d, samples(base))
    check(d, base)
    # written as the samples came: every minute but the open one, and three hours; the minutes
    # of the closed hours in a block each, the open hour's in rows of their own
    assert rows(d) == {60: HOURS * 60 + 2, 3600: HOURS + 1}
    # (written by the blocks pass, a few ports a second)
    wait_for(lambda: blocks(d).get(-60) == HOURS and blocks(d).get(60) == 2, 15, interval=0.2,
             what="the closed hours' minutes in their blocks")
    assert rows(d) == {60: HOURS * 60 + 2, 3600: HOURS + 1}
    # make bench's storage figures (tests/bench/bench_storage.c), on this database: a smoke
    r = subprocess.run([os.path.join(BUILD, "bench", "bench_storage"), d.db, "1000"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "bytes per sample on disk" in r.stdout and "projected at 1000" in r.stdout, \
        r.stdout + r.stderr
    # and they are what stays: raw samples pruned (store.retention), the same points
    ref = {step: series(d, base, step, "raw", end=base + HOURS * 3600 - 1)[1] for step in (60, 3600)}
    d.stop()
    d.proc = None
    d.args = ["-o", "store.retention=2m"]
    d.start()
    wait_for(lambda: not any(series(d, base, 60, "raw")[1].values()), 30, interval=0.5,
             what="the retention pass to prune the raw samples")
    assert series(d, base, 60, "1m", end=base + HOURS * 3600 - 1)[1] == ref[60]
    assert series(d, base, 3600, "1h", end=base + HOURS * 3600 - 1)[1] == ref[3600]
    # auto picks the coarsest rollup whose width divides the step, and says so
    for step, res in ((20, "raw"), (60, "1m"), (120, "1m"), (3600, "1h"), (5400, "1m"), (90, "raw")):
        assert series(d, base, step, "auto")[0] == res, step
    c = d.client("viewer")
    for params, code in (({"step": "60s", "resolution": "1h"}, "BAD_PARAMETER"),
                         ({"resolution": "1m"}, "BAD_PARAMETER"),
                         ({"step": "60s", "resolution": "2m"}, "BAD_PARAMETER")):
        r = c.get("/api/v1/ports/r1:nic0:1/counters", params=params)
        assert r.status_code == 400 and r.json()["code"] == code and r.json()["pointer"] == "resolution", r.text


def test_late_and_repeated_samples_and_unaligned_windows(fed):
    """A sample at a time already stored (a replay with a new seq) changes nothing; a late one
    (older than the newest, in a closed minute) is in both the raw samples and the rollups;
    a window that does not start or end on a step's edge snaps out to whole buckets, the same
    for every resolution."""
    d, base = fed
    items = list(samples(base))
    post_all(d, items)
    n = len(items)
    seq, t, sim, hw = items[100]
    post_all(d, [(n + 1, t, {k: v + 12345 for k, v in sim.items()}, hw)])  # the same time again
    post_all(d, [(n + 2, t + 7, dict(sim, queue_depth_bytes_prio3=777), hw)])  # late, new time
    check(d, base, n0=181)
    doc = d.client("viewer").json("/api/v1/ports/r1:nic0:1/counters",
                                  params={"names": "queue_depth_bytes", "priority": 3,
                                          "from": t - 1, "to": t + 10})
    assert [p["value"] for p in doc["series"][0]["points"]] == [sim["queue_depth_bytes_prio3"], 777]
    for step, res in ((60, "1m"), (3600, "1h")):
        c = d.client("viewer")
        params = {"names": "roce_tx_bytes,queue_depth_bytes", "priority": 3, "from": base + 17,
                  "to": base + 2 * 3600 - 13, "step": f"{step}s"}
        raw = c.json("/api/v1/ports/r1:nic0:1/counters", params=dict(params, resolution="raw"))
        rolled = c.json("/api/v1/ports/r1:nic0:1/counters", params=dict(params, resolution=res))
        assert raw["from"] == rolled["from"] and raw["series"] == rolled["series"], step
        assert raw["series"][0]["points"][0]["t"] == base


@pytest.mark.parametrize("how", ["silent", "stopped"])
def test_an_open_minute_outlives_the_raw_samples(world, how):
    """The open minute of a port that stopped reporting reaches the rollups, so that it outlives
    the raw samples: two store.prune_interval after its last sample (silent), or at once when
    rocefabd stops cleanly (stopped; before, it was rebuilt only when the port reported again,
    and lost with the raw samples otherwise)."""
    d = world.daemon(args=("-o", "store.prune_interval=1s") if how == "silent" else ())
    d.token("agents", "agent", agent="r1")
    d.token("viewer", "viewer")
    d.start()
    base = (int(time.time()) - 3 * 3600) // 3600 * 3600
    post_all(d, [it for it in samples(base)][:10])  # 3 minutes and a bit: the last one open
    _, raw = series(d, base, 60, "raw", end=base + 3600)
    assert rows(d) == {60: 3, 3600: 1}
    if how == "silent":
        wait_for(lambda: rows(d) == {60: 4, 3600: 1}, 15, interval=0.2, what="the open minute written")
        d.stop()
    else:
        assert d.stop() == 0
        assert rows(d) == {60: 4, 3600: 1}
        assert "wrote the open minute of 1 port" in d.proc.output()
    d.proc = None
    d.args = ["-o", "store.retention=2m", "-o", "store.prune_interval=1s"]
    d.start()
    wait_for(lambda: not any(series(d, base, 60, "raw")[1].values()), 30, interval=0.5,
             what="the raw samples pruned")
    assert series(d, base, 60, "1m", end=base + 3600)[1] == raw


@pytest.mark.parametrize("stops", [
    [(200, signal.SIGKILL)],  # killed mid-minute: the open minute rebuilt from the raw samples
    [(200, signal.SIGTERM)],  # stopped: written open, the next samples merged in, never twice
    # stopped, one more sample in that minute, killed before it closes: the minute written open
    # is completed from the raw samples after the newest it holds (it was taken as whole, and
    # that sample was missing from the minute's and the hour's rows for good)
    [(199, signal.SIGTERM), (200, signal.SIGKILL)],
], ids=["killed", "stopped", "stopped-then-killed"])
def test_rollups_survive_rocefabd_stopped_mid_minute(fed, stops):
    d, base = fed
    items = list(samples(base))
    assert [t // 60 for _, t, _, _ in items[198:201]] == [(base + 3960) // 60] * 3  # 66 min in: one minute
    done = 0
    for upto, sig in stops:
        post_all(d, items[done:upto])
        done = upto
        assert d.stop(sig) == (0 if sig == signal.SIGTERM else -signal.SIGKILL)
        d.proc = None
        d.start()
    post_all(d, items[done:])
    check(d, base)
    assert rows(d) == {60: HOURS * 60 + 2, 3600: HOURS + 1}


def test_a_corrupt_newest_row_and_a_replayed_older_sample(world):
    """A port's raw rows within a minute follow each other (daemon/codec.h).  When the newest
    row is corrupt, rocefabd starts the port from a new baseline but keeps its time as the
    newest: a sample replayed at the time of a row that others follow is late, stored apart,
    and the rows that follow it keep their values."""
    d = world.daemon()
    d.token("agents", "agent", agent="r1")
    d.token("viewer", "viewer")
    d.start()
    base = (int(time.time()) - 3 * 3600) // 3600 * 3600
    items = list(samples(base))[:30]  # the last minute: items 27 (whole), 28 and 29 (follow)
    post_all(d, items)

    def raw_tx():
        doc = d.client("viewer").json("/api/v1/ports/r1:nic0:1/counters",
                                      params={"names": "roce_tx_bytes", "from": base, "to": base + 600})
        return {p["t"]: p["raw"] for p in doc["series"][0]["points"]}

    before = raw_tx()
    assert len(before) == 30
    d.stop()
    db = sqlite3.connect(d.db, timeout=10)
    try:
        t29 = int(items[29][1] * 1e9)
        assert db.execute("SELECT hex(substr(data, 1, 2)) FROM samples WHERE t_ns = ?", (t29,)).fetchone()[0] == "0201"
        db.execute("UPDATE samples SET data = x'0201ff' WHERE t_ns = ?", (t29,))
        db.commit()
    finally:
        db.close()
    d.proc = None
    d.start()
    seq, t27, sim, hw = items[27]
    post_all(d, [(31, t27, {k: v + 999 for k, v in sim.items()}, hw)])  # a replay, other values
    assert "is corrupt" in d.proc.output()
    after = raw_tx()
    del before[max(before)]  # the corrupt row shows nothing
    assert after == before


def test_an_answer_says_where_its_resolution_keeps_nothing(world):
    """A window that starts before what its resolution keeps says from when it holds data
    (kept_from): a step of minutes over a range older than store.retention_1m came back with
    fewer points and no word why."""
    d = world.daemon(args=("-o", "store.retention=1h", "-o", "store.retention_1m=2h"))
    d.token("agents", "agent", agent="r1")
    d.token("viewer", "viewer")
    d.start()
    base = (int(time.time()) - 3 * 3600) // 3600 * 3600
    post_all(d, list(samples(base))[:10])
    c = d.client("viewer")

    def answer(step, start):
        return c.json("/api/v1/ports/r1:nic0:1/counters",
                      params={"names": "roce_tx_bytes", "from": start, "to": int(time.time()), "step": step})

    t0 = time.time()
    a = answer("60s", base)
    assert a["resolution"] == "1m", a
    kept = datetime.datetime.fromisoformat(a["kept_from"].replace("Z", "+00:00")).timestamp()
    assert t0 - 2 * 3600 - 5 <= kept <= time.time() - 2 * 3600 + 5, a["kept_from"]
    assert "kept_from" not in answer("3600s", base)  # hours: kept 400 days
    assert "kept_from" not in answer("60s", int(time.time()) - 600)  # a window it holds whole
