"""/metrics is clean Prometheus text exposition, and a real Prometheus server (Debian's
package) scrapes it with a bearer token and answers queries about rocefab series."""
import os
import shutil
import subprocess

import pytest
import requests

from conftest import Proc, copy_tree, free_addr, wait_for, write_counter


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
