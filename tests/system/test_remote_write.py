"""Prometheus remote-write (issue 16): rocefabd sends every sample it stores to a real
Prometheus started here with its remote-write receiver (Debian's package), as the series of
/metrics.  The receiver's series and values equal rocefabd's; a receiver that is down while a
minute of samples arrives loses none of them (the on-disk queue, retried with backoff); what
the queue's bound drops is counted; an unreachable receiver and one answering 400 are warnings
while ingest goes on; a URL that is not http(s) stops the start."""
import http.server
import json
import os
import shutil
import subprocess
import threading
import time

import pytest
import requests

from conftest import Proc, binary, free_addr, wait_for

pytestmark = pytest.mark.skipif(not shutil.which("prometheus"), reason="Debian's prometheus package is missing")

PORTS = 3
STEP_S = 5


def report(seq, t_s):
    t = int(t_s * 1e9)
    ports = [{"port": f"p{i}", "state": "up", "speed_mbps": 100000} for i in range(PORTS)]
    samples = [{"device": "asic0", "port": f"p{i}", "source": "sim", "t_ns": t,
                "values": {"pfc_rx_pause_prio3": seq * 1000 + i, "queue_depth_bytes_prio3": (seq * 7919 + i) % 100000,
                           "roce_tx_bytes": seq * 10**9 + i * 7 + (seq * seq) % 1000}}
               for i in range(PORTS)]
    return {"schema": 1, "agent": {"id": "sw1", "role": "switch", "boot_id": "b1", "version": "t",
                                   "backend": "test"},
            "seq": seq, "time_ns": t, "interval_ms": STEP_S * 1000,
            "inventory": {"devices": [{"name": "asic0", "kind": "switch", "driver": "test", "ports": ports}]},
            "samples": samples}


def post(d, seqs, base):
    c = d.client("agents")
    for seq in seqs:
        r = c.post("/api/v1/agents/sw1/report", data=json.dumps(report(seq, base + seq * STEP_S)),
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 200, r.text


class Prometheus:
    def __init__(self, world):
        self.world = world
        self.host, self.port = free_addr()
        self.url = f"http://{self.host}:{self.port}/api/v1/write"
        self.api = f"http://{self.host}:{self.port}/api/v1"
        self.conf = os.path.join(world.tmp, "prometheus.yml")
        with open(self.conf, "w") as f:
            f.write("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
        self.proc = None

    def start(self):
        self.proc = Proc(["prometheus", f"--config.file={self.conf}", f"--storage.tsdb.path={self.world.tmp}/tsdb",
                          f"--web.listen-address={self.host}:{self.port}", "--web.enable-remote-write-receiver",
                          "--storage.tsdb.retention.time=1d"],
                         os.path.join(self.world.tmp, "prometheus.log"))
        self.world.procs.append(self.proc)
        wait_for(lambda: requests.get(f"{self.api}/status/buildinfo", timeout=2).status_code == 200, 30,
                 interval=0.2, what="Prometheus to answer")
        return self

    def stop(self):
        self.proc.stop()

    def query(self, q, t):
        r = requests.get(f"{self.api}/query", params={"query": q, "time": t}, timeout=5).json()
        assert r["status"] == "success", r
        return r["data"]["result"]


def start_daemon(world, url, *extra):
    d = world.daemon(args=("-o", f"remote_write.urls={url}") + extra)
    d.token("agents", "agent", agent="sw1")
    d.token("viewer", "viewer")
    return d.start()


def rw(d):
    return d.client("viewer").json("/api/v1/health")["remote_write"][0]


def stored(d):
    return d.client("viewer").json("/api/v1/health")["ingest"]["samples"]


def port_metrics(d):
    """rocefabd's /metrics port series: {(name, labels...): value}."""
    out = {}
    for line in d.client("viewer").get("/metrics").text.splitlines():
        if line.startswith("rocefab_port_"):
            series, value = line.rsplit(" ", 1)
            name, labels = series.split("{", 1)
            kv = tuple(sorted(tuple(p.split("=", 1)) for p in labels.rstrip("}").split(",")))
            out[(name,) + tuple((k, v.strip('"')) for k, v in kv)] = float(value)
    return out


def prom_series(prom, t):
    out = {}
    for s in prom.query('{__name__=~"rocefab_port_.+"}', t):
        m = dict(s["metric"])
        name = m.pop("__name__")
        out[(name,) + tuple(sorted(m.items()))] = float(s["value"][1])
    return out


def test_receiver_has_rocefabds_series_and_values_and_loses_nothing_while_down(world):
    prom = Prometheus(world).start()
    d = start_daemon(world, prom.url)
    base = int(time.time()) - 900
    post(d, range(1, 41), base)
    wait_for(lambda: rw(d)["sent_samples"] == stored(d) and rw(d)["queued_samples"] == 0, 30, interval=0.2,
             what="every sample sent")
    n1 = stored(d)
    nseries = n1 // 40
    assert n1 == 40 * nseries and nseries >= 2 * PORTS
    # the same series with the same values as /metrics, at the newest sample's time
    t_last = base + 40 * STEP_S
    ours, theirs = port_metrics(d), prom_series(prom, t_last)
    assert ours and theirs == ours
    # every sample: 40 per series, and the window's values equal the REST series'
    counts = prom.query('count_over_time({__name__=~"rocefab_port_.+"}[1h])', t_last)
    assert len(counts) == len(ours) and {c["value"][1] for c in counts} == {"40"}
    doc = d.client("viewer").json("/api/v1/ports/sw1:asic0:p1/counters",
                                  params={"names": "queue_depth_bytes", "priority": 3, "from": base, "to": t_last})
    rest = [p["value"] for p in doc["series"][0]["points"]]
    r = requests.get(f"{prom.api}/query_range",
                     params={"query": 'rocefab_port_queue_depth_bytes{port="p1",priority="3"}', "start": base + STEP_S,
                             "end": t_last, "step": STEP_S}, timeout=5).json()
    assert [float(v) for _, v in r["data"]["result"][0]["values"]] == rest

    # the receiver stops for a minute, while a report comes every 5 s (the outage itself is
    # what the test waits for); ingest goes on, the requests wait on disk and are retried with
    # backoff (it reaches its 30 s cap); /health says so
    prom.stop()
    for seq in range(41, 53):
        t0 = time.monotonic()
        post(d, [seq], base)
        time.sleep(max(0.0, STEP_S - (time.monotonic() - t0)))
    assert rw(d)["retries"] >= 5
    h = d.client("viewer").json("/api/v1/health")
    assert any(w["code"] == "REMOTE_WRITE_FAILING" for w in h["warnings"]), h["warnings"]
    assert h["remote_write"][0]["queued_samples"] == stored(d) - n1 and h["remote_write"][0]["last_error"]
    assert "retrying" in d.proc.output()
    qdir = d.db + ".remote-write"
    assert any(f.endswith(".req") for _, _, files in os.walk(qdir) for f in files)
    # back: everything arrives, nothing dropped
    prom.start()
    wait_for(lambda: rw(d)["queued_samples"] == 0, 60, interval=0.5, what="the queue drained")
    s = rw(d)
    assert s["sent_samples"] == stored(d) == 52 * nseries
    assert s["dropped_samples"] == {"queue_full": 0, "rejected": 0}
    t_last = base + 52 * STEP_S
    counts = prom.query('count_over_time({__name__=~"rocefab_port_.+"}[1h])', t_last)
    assert {c["value"][1] for c in counts} == {"52"}
    assert prom_series(prom, t_last) == port_metrics(d)
    assert "sending again" in d.proc.output()
    metrics = d.client("viewer").get("/metrics").text
    assert f'rocefab_remote_write_sent_samples_total{{url="{prom.url}"}} {52 * nseries}' in metrics
    # and rocefabctl health says it in a line
    r = subprocess.run([binary("rocefabctl"), "health"], capture_output=True, text=True, timeout=20,
                       env=dict(os.environ, ROCEFAB_SERVER=d.url,
                                ROCEFAB_TOKEN_FILE=os.path.join(world.tmp, "viewer.token")))
    assert r.returncode == 0, r.stderr
    assert f"remote-write: {prom.url}: {52 * nseries} sent, 0 queued" in r.stdout, r.stdout
    assert "storage:" in r.stdout and "kept: raw 6h, minutes 14d, hours 400d" in r.stdout, r.stdout
    assert not any(w["code"].startswith("REMOTE_WRITE") for w in
                   d.client("viewer").json("/api/v1/health").get("warnings", []))


def test_the_queue_bound_drops_the_oldest_and_counts_them(world):
    """An unreachable receiver (nothing listens there yet): the queue keeps at most
    remote_write.max_queue_bytes, the oldest requests go and are counted; when a receiver
    starts there, what was kept arrives, and sent + dropped is every sample."""
    prom = Prometheus(world)  # not started
    d = start_daemon(world, prom.url, "-o", "remote_write.max_queue_bytes=4096", "-o", "remote_write.batch=9")
    base = int(time.time()) - 900
    post(d, range(1, 61), base)
    wait_for(lambda: rw(d)["dropped_samples"]["queue_full"] > 0 and rw(d)["retries"] >= 1, 30, interval=0.2,
             what="the bound to drop")
    wait_for(lambda: rw(d)["queued_samples"] + rw(d)["dropped_samples"]["queue_full"] == stored(d), 10,
             interval=0.2, what="every sample queued or dropped")
    s = rw(d)
    assert s["queue_bytes"] <= 4096 and s["sent_samples"] == 0
    h = d.client("viewer").json("/api/v1/health")
    codes = {w["code"] for w in h["warnings"]}
    assert {"REMOTE_WRITE_FAILING", "REMOTE_WRITE_DROPPED"} <= codes, codes
    assert "over remote_write.max_queue_bytes" in d.proc.output()
    metrics = d.client("viewer").get("/metrics").text
    assert (f'rocefab_remote_write_dropped_samples_total{{url="{prom.url}",reason="queue_full"}} '
            f'{s["dropped_samples"]["queue_full"]}') in metrics
    # ingest went on: every report stored
    assert d.client("viewer").json("/api/v1/agents/sw1")["reports"] == 60
    prom.start()
    wait_for(lambda: rw(d)["queued_samples"] == 0, 60, interval=0.5, what="the queue drained")
    s = rw(d)
    assert s["sent_samples"] + s["dropped_samples"]["queue_full"] == stored(d)
    got = prom.query('sum(count_over_time({__name__=~"rocefab_port_.+"}[1h]))', base + 60 * STEP_S)
    assert int(got[0]["value"][1]) == s["sent_samples"]


class Refuser(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b"out of order sample\n"
        self.send_response(400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_a_receiver_answering_400_is_a_warning_and_ingest_goes_on(world):
    host, port = free_addr()
    srv = http.server.HTTPServer((host, port), Refuser)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        d = start_daemon(world, f"http://user:secret@{host}:{port}/api/v1/write")
        post(d, range(1, 11), int(time.time()) - 300)
        wait_for(lambda: rw(d)["dropped_samples"]["rejected"] == stored(d) and rw(d)["queued_samples"] == 0,
                 30, interval=0.2, what="the refused samples dropped")
        s = rw(d)
        assert s["url"] == f"http://{host}:{port}/api/v1/write"  # no credentials shown
        assert s["retries"] == 0 and s["sent_samples"] == 0
        assert "400" in s["last_error"] and "out of order sample" in s["last_error"]
        h = d.client("viewer").json("/api/v1/health")
        assert any(w["code"] == "REMOTE_WRITE_REJECTED" and "out of order sample" in w["detail"]
                   for w in h["warnings"]), h["warnings"]
        out = d.proc.output()
        assert "refused" in out and "secret" not in out
        assert "secret" not in d.client("viewer").get("/metrics").text
        assert d.client("viewer").json("/api/v1/agents/sw1")["reports"] == 10
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_url_that_is_not_http_stops_the_start(tmp_path):
    for url, what in (("ftp://example.org/write", "is not an http:// or https:// URL"),
                      ("http:///write", "names no host")):
        r = subprocess.run([binary("rocefabd"), "--db", str(tmp_path / "x.db"), "-o", f"remote_write.urls={url}",
                            "--check-config"], capture_output=True, text=True)
        assert r.returncode == 2 and "BAD_REMOTE_WRITE_URL" in r.stderr and what in r.stderr, r.stderr
