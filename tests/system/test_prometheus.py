"""/metrics is clean Prometheus text exposition, and a real Prometheus server (Debian's
package) scrapes it with a bearer token and answers queries about rocefab series."""
import os
import shutil
import subprocess

import pytest
import requests
import yaml

from conftest import Proc, binary, copy_tree, free_addr, wait_for, write_counter


@pytest.fixture
def fleet(world):
    d = world.daemon()
    d.token("agents", "agent", agent="gpu-a1,stor-b1")
    d.token("prom", "viewer")
    d.start()
    trees = {}
    for aid in ("gpu-a1", "stor-b1"):
        trees[aid] = copy_tree(aid, os.path.join(world.tmp, f"tree-{aid}"))
        world.agent(aid, trees[aid], d.url, os.path.join(world.tmp, "agents.token"),
                    interval="0.5s").start()
    c = d.client("prom")
    wait_for(lambda: "gpu-a1" in c.get("/metrics").text and "stor-b1" in c.get("/metrics").text,
             10, what="both agents in /metrics")
    return d, trees


def test_metrics_text_is_clean(fleet):
    d, trees = fleet
    c = d.client("prom")
    text = c.get("/metrics").text
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # normalized counters with labels, base units, daemon health
    assert 'rocefab_port_roce_tx_bytes_total{host="gpu-a1",device="mlx5_0",port="1"}' in text
    assert 'rocefab_port_pfc_rx_pause_frames_total{host="gpu-a1",device="mlx5_0",port="1",priority="3"}' in text
    assert "rocefab_port_pfc_tx_pause_duration_seconds_total{" in text
    for family in ("rocefab_ingest_reports_total", "rocefab_ingest_samples_per_second",
                   "rocefab_store_queue_depth", "rocefab_http_requests_total", "rocefab_agents"):
        assert f"# TYPE {family} " in text, family
    # totals follow the device: port_xmit_data is in 4-byte words
    path = os.path.join(trees["gpu-a1"], "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data")
    with open(path) as f:
        words = int(f.read())
    write_counter(path, words + 250)

    def total():
        for line in c.get("/metrics").text.splitlines():
            if line.startswith('rocefab_port_roce_tx_bytes_total{host="gpu-a1",device="mlx5_0"'):
                return int(line.split()[-1])
    wait_for(lambda: total() == (words + 250) * 4, 10, what="the total to follow the counter")
    # a reset of the device counter does not make the Prometheus counter go back
    write_counter(path, 10)
    wait_for(lambda: total() == (words + 250) * 4 + 40, 10, what="the total to keep growing")
    # without a token, /metrics is refused unless api.metrics_public is set
    assert requests.get(d.url + "/metrics", timeout=5).status_code == 401
    # the process metrics client libraries export
    for family in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                   "process_start_time_seconds", "process_max_fds"):
        assert f"# TYPE {family} " in text, family


def test_metrics_gzip_when_asked(fleet):
    """gzip when the scraper asks (Prometheus does), plain text otherwise; the same exposition."""
    import gzip
    d, _ = fleet
    auth = {"Authorization": f"Bearer {d.tokens['prom']}"}
    plain = requests.get(d.url + "/metrics", headers=dict(auth, **{"Accept-Encoding": "identity"}), timeout=5,
                         stream=True)
    assert "Content-Encoding" not in plain.headers
    body = plain.raw.read()
    for ae in ("gzip", "deflate, gzip;q=0.5", "*"):
        r = requests.get(d.url + "/metrics", headers=dict(auth, **{"Accept-Encoding": ae}), timeout=5, stream=True)
        assert r.headers["Content-Encoding"] == "gzip" and r.headers["Vary"] == "Accept-Encoding", ae
        z = r.raw.read()
        text = gzip.decompress(z)
        assert len(z) < len(body) / 3
        # the same families (values move between two scrapes)
        fam = lambda t: {l.split()[2] for l in t.decode().splitlines() if l.startswith("# TYPE")}
        assert fam(text) == fam(body)
    r = requests.get(d.url + "/metrics", headers=dict(auth, **{"Accept-Encoding": "gzip;q=0"}), timeout=5, stream=True)
    assert "Content-Encoding" not in r.headers


@pytest.mark.skipif(not shutil.which("prometheus"), reason="Debian's prometheus package is missing")
def test_real_prometheus_scrapes(fleet, world):
    d, trees = fleet
    host, port = free_addr()
    conf = os.path.join(world.tmp, "prometheus.yml")
    with open(conf, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: rocefab
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials_file: {world.tmp}/prom.token
    static_configs:
      - targets: ['{d.host}:{d.port}']
""")
    subprocess.run(["promtool", "check", "config", conf], check=True, capture_output=True)
    prom = Proc(["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={world.tmp}/tsdb",
                 f"--web.listen-address={host}:{port}", "--storage.tsdb.retention.time=1h"],
                os.path.join(world.tmp, "prometheus.log"))
    world.procs.append(prom)
    api = f"http://{host}:{port}/api/v1"

    def target_up():
        t = requests.get(f"{api}/targets", timeout=2).json()["data"]["activeTargets"]
        return t and t[0]["health"] == "up"
    # Prometheus throttles target discovery to about 5 s before the first scrape
    wait_for(target_up, 40, interval=0.5, what="Prometheus to scrape rocefabd")

    def query():
        r = requests.get(f"{api}/query", params={"query": "rocefab_port_roce_tx_packets_total"},
                         timeout=2).json()
        return r["data"]["result"]
    result = wait_for(query, 20, interval=0.5, what="a rocefab series in Prometheus")
    hosts = {s["metric"]["host"] for s in result}
    assert hosts == {"gpu-a1", "stor-b1"}
    assert all(float(s["value"][1]) > 0 for s in result)


def test_rules_and_dashboard_fit_the_metrics(world):
    """The alerting rules and the Grafana dashboard name only series rocefabd exports (checked
    against the demo fabric's /metrics: switches, hosts, the pingmesh, the detector), every
    dashboard query is valid PromQL (promtool), and the dashboard is well formed."""
    import json
    import re
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    d = world.daemon().start()
    _, tok = d.token("agents", "agent", agent="h*,leaf*,spine*")
    d.token("prom", "viewer")
    sim = world.sim(os.path.join(root, "sim", "scenarios", "demo.json"), daemon=d, token_file=tok,
                    interval="0.5s")
    sim.start()
    c = d.client("prom")
    families = set()

    def exported():
        text = c.get("/metrics").text
        families.clear()
        families.update(l.split()[2] for l in text.splitlines() if l.startswith("# TYPE "))
        return {"rocefab_port_queue_depth_bytes", "rocefab_probe_p99_seconds",
                "rocefab_port_ecn_marked_packets_total", "rocefab_detector_findings"} <= families
    wait_for(exported, 30, interval=0.5, what="switch, pingmesh and detector series in /metrics")

    def names(expr):
        return set(re.findall(r"\b((?:rocefab|process)_[a-z0-9_]+)", expr))
    with open(os.path.join(root, "packaging", "prometheus", "rocefab.rules.yml")) as f:
        rules = yaml.safe_load(f)
    rule_exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    with open(os.path.join(root, "packaging", "grafana", "rocefab-fabric.json")) as f:
        dash = json.load(f)
    panel_exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    for expr in rule_exprs + panel_exprs:
        assert names(expr) and names(expr) <= families, (expr, names(expr) - families)
    # the dashboard: unique panel ids and refIds, on the grid, through the datasource variable
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)) == 12 and dash["uid"] == "rocefab-fabric"
    for p in dash["panels"]:
        assert 0 <= p["gridPos"]["x"] < 24 and p["gridPos"]["w"] <= 24 and p["targets"]
        assert len({t["refId"] for t in p["targets"]}) == len(p["targets"])
        assert p["datasource"]["uid"] == "${datasource}"
    assert {v["name"] for v in dash["templating"]["list"]} == {"datasource", "host"}
    # every query parses: as recording rules, with Grafana's variables given values
    rec = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:panel_{i}", "expr": e.replace("$__rate_interval", "1m").replace("$host", ".*")}
        for i, e in enumerate(panel_exprs)]}]}
    path = os.path.join(world.tmp, "dashboard-queries.yml")
    with open(path, "w") as f:
        yaml.safe_dump(rec, f)
    r = subprocess.run(["promtool", "check", "rules", path], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_metrics_priorities_switch(world):
    """api.metrics_priorities keeps the per-priority families to the priorities named (the
    lossless ones, say): on the same host's reports, 3,4 gives exactly the series of those
    two priorities that all gives, none no per-priority series, and the per-port families stay
    whole.  A bad list is refused at start."""
    tree = copy_tree("gpu-a1", os.path.join(world.tmp, "tree"))
    counts = {}
    for setting in ("all", "3,4", "none"):
        d = world.daemon(name=f"rocefabd-{setting.replace(',', '')}",
                         args=("-o", f"api.metrics_priorities={setting}"))
        d.token("agents", "agent", agent="gpu-a1")
        d.token("prom", "viewer")
        d.start()
        world.agent("gpu-a1", tree, d.url, os.path.join(world.tmp, "agents.token"), interval="0.3s").start()
        c = d.client("prom")
        wait_for(lambda: c.get("/api/v1/agents/gpu-a1").status_code == 200 and
                 c.json("/api/v1/agents/gpu-a1")["reports"] >= 2, 10, what="two reports")
        lines = [l for l in c.get("/metrics").text.splitlines() if l.startswith("rocefab_port_")]
        prio = [l for l in lines if ",priority=" in l]
        counts[setting] = (len(lines) - len(prio), prio)
        world.agents.pop().stop()
        d.stop()
    base, every = counts["all"]
    assert every and {l.split('priority="')[1][0] for l in every} == set("01234567")
    assert counts["3,4"][0] == counts["none"][0] == base  # per-port families untouched
    lossless = counts["3,4"][1]
    assert {l.split('priority="')[1][0] for l in lossless} == {"3", "4"}
    # exactly the series of priorities 3 and 4 that "all" gives (values move between daemons)
    key = lambda l: l.rsplit(" ", 1)[0]
    assert {key(l) for l in lossless} == {key(l) for l in every if 'priority="3"' in l or 'priority="4"' in l}
    assert counts["none"][1] == []
    for i, bad in enumerate(("8", "3;4", "3,,4", "lossless", "03", "3,")):
        d = world.daemon(name=f"bad{i}", args=("-o", f"api.metrics_priorities={bad}"))
        d.start(wait=False)
        assert d.proc.p.wait(10) == 1, bad
        out = d.proc.output()
        assert "BAD_PRIORITIES" in out and f"'{bad}'" in out, out
        r = subprocess.run([binary("rocefabd"), "--config", d.conf, "--check-config", "-o",
                            f"api.metrics_priorities={bad}"], capture_output=True, text=True)
        assert r.returncode == 2 and "BAD_PRIORITIES" in r.stderr, r.stderr


def test_a_stale_hosts_qps_leave_the_gauges(world):
    """A host's QP gauges are its last report's: once its agent is stale they leave /metrics
    (they were exported for ever, across restarts too); its errors counter stays."""
    import json
    good = os.path.join(os.path.dirname(__file__), "..", "data", "reports", "good", "stor-b1.json")
    d = world.daemon(args=("-o", "agents.stale_after=2"))
    d.token("agents", "agent", agent="stor-b1")
    d.token("prom", "viewer")
    d.start()
    with open(good) as f:
        doc = json.load(f)
    doc["qps"] = {"total": 3, "by_type": {"RC": 3}, "by_state": {"RTS": 3}, "entered_error": 1}
    r = d.client("agents").post("/api/v1/agents/stor-b1/report", data=json.dumps(doc),
                                headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    c = d.client("prom")
    text = c.get("/metrics").text
    assert 'rocefab_host_qps{host="stor-b1",type="RC"} 3' in text, text[-3000:]
    assert 'rocefab_host_qps_by_state{host="stor-b1",state="RTS"} 3' in text
    # two intervals (2 s) without a report: stale, and its gauges gone
    wait_for(lambda: 'rocefab_agent_up{agent="stor-b1",role="host"} 0' in c.get("/metrics").text, 10, interval=0.2,
             what="the agent stale")
    text = c.get("/metrics").text
    assert 'rocefab_host_qps{host="stor-b1"' not in text and 'state="RTS"' not in text, text[-3000:]
    assert 'rocefab_host_qp_errors_total{host="stor-b1"} 1' in text
