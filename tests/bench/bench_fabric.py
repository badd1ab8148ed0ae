"""make bench (e): rocefabd ingesting a 1,024-host, 80-switch simulated fabric reported by
1,104 in-process virtual agents every second.  Prints rocefabd's CPU share and RSS, the reports
it stores per second against the reports the agents make, and whether its store queue and the
agents' backlog stay flat (keeping up) or grow.  Then the fast PFC lane's cost on the same
fabric (every agent's compact PFC report every 200 ms, for the deadlock and storm detector):
bytes per host per second, fast reports per second and rocefabd's CPU with the lane on, against
the same figures with it off.  Usage: bench_fabric.py BUILD WORKDIR [SECONDS]"""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

build, work = sys.argv[1], sys.argv[2]
seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
scenario = os.path.join(os.path.dirname(__file__), "fabric-1024.json")


def port(host):
    s = socket.socket()
    s.bind((host, 0))
    p = s.getsockname()[1]
    s.close()
    return p


def get(url, token=None):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()


def get_raw(url, token, encoding):
    """The body's bytes as sent (no decoding) and its Content-Encoding."""
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "Accept-Encoding": encoding})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read(), r.headers.get("Content-Encoding")


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_mem(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def metric(text, name):
    m = re.search(rf"^{name} ([0-9.e+]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def run(pfc_interval, seconds, phase):
    host = "127.0.0.60"
    p = port(host)
    db = os.path.join(work, f"fabric-{phase}.db")
    tok = subprocess.run([f"{build}/rocefabd", "--db", db, "token", "add", "agents", "--role", "agent",
                          "--agent", "h*,leaf*,spine*"],
                         capture_output=True, text=True, check=True).stdout.split()[-1]
    vtok = subprocess.run([f"{build}/rocefabd", "--db", db, "token", "add", "v", "--role", "viewer"],
                          capture_output=True, text=True, check=True).stdout.split()[-1]
    otok = subprocess.run([f"{build}/rocefabd", "--db", db, "token", "add", "o", "--role", "operator"],
                          capture_output=True, text=True, check=True).stdout.split()[-1]
    # a token file others could read is refused: created 0600 from the start
    with os.fdopen(os.open(os.path.join(work, "agents.token"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(tok + "\n")
    os.chmod(os.path.join(work, "agents.token"), 0o600)
    daemon = subprocess.Popen([f"{build}/rocefabd", "--db", db, "--listen", f"{host}:{p}",
                               "-o", "daemon.log_level=warning", "-o", "store.queue=4096"],
                              stdout=open(os.path.join(work, f"d-{phase}.log"), "w"), stderr=subprocess.STDOUT)
    sim = None
    try:
        url = f"http://{host}:{p}"
        for _ in range(100):
            try:
                get(url + "/api/v1/health")
                break
            except OSError:
                time.sleep(0.1)
        # this measures ingest: the pingmesh (on by default) would make the simulator carry ~350k
        # probe flows per second of wall time on this fabric, and its agents would fall behind
        req = urllib.request.Request(url + "/api/v1/probes/config", data=json.dumps({"enabled": False}).encode(),
                                     method="PUT", headers={"Authorization": f"Bearer {otok}",
                                                            "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()
        sp = port("127.0.0.61")
        sim = subprocess.Popen([f"{build}/rocefab-sim", "serve", scenario, "--control", f"127.0.0.61:{sp}",
                                "--agents", url, "--token-file", os.path.join(work, "agents.token"),
                                "--interval", "1s", "--pfc-interval", pfc_interval,
                                "--spool-dir", os.path.join(work, f"spool-{phase}"), "--quiet"],
                               stdout=open(os.path.join(work, f"sim-{phase}.log"), "w"), stderr=subprocess.STDOUT)
        simurl = f"http://127.0.0.61:{sp}"
        t_start = time.monotonic()
        while True:
            try:
                hosts = json.loads(get(url + "/api/v1/hosts", vtok))["count"]
                sws = json.loads(get(url + "/api/v1/switches", vtok))["count"]
                if hosts == 1024 and sws == 80:
                    break
            except OSError:
                pass
            if time.monotonic() - t_start > 60:
                raise SystemExit("the fabric did not appear within 60 s")
            time.sleep(0.2)
        appear = time.monotonic() - t_start
        time.sleep(5)  # warm up: first reports carry the configuration
        m0 = get(url + "/metrics", vtok)
        st0 = json.loads(get(simurl + "/v1/status"))["agents"]
        c0, w0 = proc_cpu(daemon.pid), time.monotonic()
        simc0 = proc_cpu(sim.pid)
        depth, backlog = [], []
        for _ in range(seconds):
            time.sleep(1)
            depth.append(metric(get(url + "/metrics", vtok), "rocefab_store_queue_depth"))
            backlog.append(json.loads(get(simurl + "/v1/status"))["agents"]["waiting"])
        m1 = get(url + "/metrics", vtok)
        st1 = json.loads(get(simurl + "/v1/status"))["agents"]
        c1, w1 = proc_cpu(daemon.pid), time.monotonic()
        simc1 = proc_cpu(sim.pid)
        mem = proc_mem(daemon.pid)
        wall = w1 - w0
        stored = (metric(m1, "rocefab_ingest_reports_total") - metric(m0, "rocefab_ingest_reports_total")) / wall
        samples = (metric(m1, "rocefab_ingest_samples_total") - metric(m0, "rocefab_ingest_samples_total")) / wall
        built = (st1["reports_built"] - st0["reports_built"]) / wall
        half = len(backlog) // 2
        first = sum(backlog[:half]) / max(1, half)
        second = sum(backlog[half:]) / max(1, len(backlog) - half)
        growing = second > 1.2 * first + 100
        out = {"cpu": 100 * (c1 - c0) / wall, "rss": mem["VmRSS"], "simcpu": 100 * (simc1 - simc0) / wall,
               "built": built, "stored": stored}
        if phase == "ingest":
            print(f"fabric       1,024 hosts + 80 switches = 1,104 virtual agents in rocefab-sim, 1 s interval; "
                  f"all in REST {appear:.1f} s after the start")
            print(f"             agents built {built:,.0f} reports/s; rocefabd stored {stored:,.0f} reports/s "
                  f"({samples:,.0f} samples/s) over {wall:.0f} s")
            print(f"             rocefabd CPU {out['cpu']:.0f}% of one core, RSS {mem['VmRSS']:.0f} MB "
                  f"(peak {mem['VmHWM']:.0f} MB); rocefab-sim (fabric + agents) CPU {out['simcpu']:.0f}%")
            print(f"             store queue depth max {max(depth):.0f} (of 4096), agents' backlog max {max(backlog)}, "
                  f"refused {st1['refused'] - st0['refused']}")
            print(f"keeps up     {'yes' if stored >= 0.98 * built and not growing else 'NO'} "
                  f"(stored/built {stored / built:.3f}; agents' backlog {'growing' if growing else 'flat'}: "
                  f"mean {first:.0f} then {second:.0f})")
            plain, _ = get_raw(url + "/metrics", vtok, "identity")
            t0 = time.monotonic()
            packed, enc = get_raw(url + "/metrics", vtok, "gzip")
            gz_s = time.monotonic() - t0
            lines = [l for l in plain.decode().splitlines() if l and not l.startswith("#")]
            series = len(lines)
            prio = [l for l in lines if ',priority="' in l]
            lossless = sum(1 for l in prio if 'priority="3"' in l or 'priority="4"' in l)
            pairs = sum(1 for l in lines if l.startswith("rocefab_probe_"))
            print(f"metrics      /metrics of this fabric: {len(plain) / 1e6:.1f} MB, {series:,} series; "
                  f"gzip ({enc}): {len(packed) / 1e6:.2f} MB, {len(plain) / max(1, len(packed)):.1f}x smaller, "
                  f"served in {gz_s * 1e3:.0f} ms")
            print(f"             of which per priority {len(prio):,} (api.metrics_priorities=3,4 keeps "
                  f"{lossless:,}: {series - len(prio) + lossless:,} series), per pingmesh pair {pairs:,} "
                  f"(api.metrics_probe_pairs)")
            # the lists in natural order (Ethernet8 before Ethernet10: the sqlite collation
            # natsort, which the ORDER BY cannot take from the key index), against reading the
            # same rows in key order through Python's sqlite3 in the same run
            import sqlite3
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            t0 = time.monotonic()
            nrows = len(con.execute("SELECT * FROM ports p JOIN agents a ON a.id = p.agent_id "
                                    "ORDER BY p.key").fetchall())
            ref_ms = (time.monotonic() - t0) * 1e3
            con.close()
            for path in ("/api/v1/ports", "/api/v1/topology"):
                t0 = time.monotonic()
                body, _ = get_raw(url + path, vtok, "identity")
                dt = (time.monotonic() - t0) * 1e3
                print(f"lists        GET {path} (natural order): {len(body) / 1e6:.1f} MB in {dt:.0f} ms"
                      + (f"; the {nrows:,} port rows alone in key order (Python's sqlite3): {ref_ms:.0f} ms"
                         if path.endswith("ports") else ""))
            # what this fabric's counters take on disk, and the default retentions' projection
            # (measured on this run's database: tests/bench/bench_storage.c)
            sys.stdout.flush()
            subprocess.run([f"{build}/bench/bench_storage", db, f"{samples:.0f}"], check=True)
        else:
            l0, l1 = st0["pfc_lane"], st1["pfc_lane"]
            fast = (metric(m1, "rocefab_pfc_lane_reports_total") - metric(m0, "rocefab_pfc_lane_reports_total")) / wall
            fast_bytes = (metric(m1, "rocefab_pfc_lane_bytes_total") - metric(m0, "rocefab_pfc_lane_bytes_total")) / wall
            host_sent = l1["host_sent"] - l0["host_sent"]
            host_bytes = l1["host_bytes"] - l0["host_bytes"]
            sw_sent = (l1["sent"] - l0["sent"]) - host_sent
            sw_bytes = (l1["bytes"] - l0["bytes"]) - host_bytes
            det = json.loads(get(url + "/api/v1/detector", vtok))
            out.update(fast=fast, fast_bytes=fast_bytes)
            print(f"fast lane    every agent's PFC report every {pfc_interval} (1,104 agents: "
                  f"{1104 / (float(pfc_interval.rstrip('ms')) / 1000):,.0f} reports/s asked)")
            print(f"             rocefabd took {fast:,.0f} fast reports/s ({fast_bytes / 1e6:.2f} MB/s), "
                  f"dropped by the agents {l1['dropped'] - l0['dropped']} (late: never spooled)")
            print(f"             a host's fast report {host_bytes / max(1, host_sent):,.0f} B: "
                  f"{host_bytes / max(1, host_sent) * 1000 / float(pfc_interval.rstrip('ms')):,.0f} B per host per s "
                  f"(a 64-port switch's {sw_bytes / max(1, sw_sent):,.0f} B)")
            print(f"             detector: last run {det['last_run_ms']:.1f} ms over {det['lane']['ports']:,} ports")
        return out
    finally:
        if sim:
            sim.terminate()
            sim.wait(30)
        daemon.terminate()
        daemon.wait(30)


base = run("0", seconds, "ingest")
lane = run("200ms", max(10, seconds // 3), "lane")
print(f"             rocefabd CPU {lane['cpu']:.0f}% of one core with the lane against {base['cpu']:.0f}% without "
      f"({lane['cpu'] - base['cpu']:+.0f} points: {10 * (lane['cpu'] - base['cpu']) / max(1, lane['fast']):.2f} ms "
      f"of CPU per 1,000 fast reports), RSS {lane['rss']:.0f} MB")
print(f"             rocefab-sim (fabric + 1,104 agents building the reports) CPU {lane['simcpu']:.0f}%: on this "
      f"{os.cpu_count()}-core machine it builds {lane['fast']:,.0f} of the {1104 * 5:,} asked per second; "
      f"the full reports still {lane['stored']:,.0f} of {lane['built']:,.0f}/s stored")
