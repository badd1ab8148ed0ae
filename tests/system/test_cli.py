"""rocefabctl: text tables by default, the REST JSON with -j, clear errors and exit codes."""
import json
import os
import subprocess

import pytest

from conftest import binary, copy_tree, wait_for, write_secret


@pytest.fixture
def fleet(world):
    d = world.daemon()
    d.token("agents", "agent", agent="gpu-a2")
    _, viewer = d.token("viewer", "viewer")
    d.start()
    tree = copy_tree("gpu-a2", os.path.join(world.tmp, "tree"))
    world.agent("gpu-a2", tree, d.url, os.path.join(world.tmp, "agents.token"),
                interval="0.5s").start()
    c = d.client("viewer")
    wait_for(lambda: c.json("/api/v1/agents")["count"] == 1 and
             len(c.json("/api/v1/ports/gpu-a2:mlx5_0:1/counters?names=np_cnp_sent")["series"][0]["points"]) >= 2,
             10, what="two samples")
    return d, viewer


def ctl(d, token_file, *args):
    env = dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN_FILE=token_file)
    return subprocess.run([binary("rocefabctl")] + list(args), capture_output=True, text=True,
                          env=env, timeout=20)


def test_tables(fleet):
    d, tok = fleet
    r = ctl(d, tok, "health")
    assert r.returncode == 0 and "status:       ok" in r.stdout
    r = ctl(d, tok, "agents")
    assert r.returncode == 0
    header, row = r.stdout.splitlines()[:2]
    assert header.split()[:3] == ["AGENT", "ROLE", "STATUS"] and row.split()[:3] == ["gpu-a2", "host", "ok"]
    r = ctl(d, tok, "hosts")
    assert "gpu-a2" in r.stdout
    r = ctl(d, tok, "hosts", "gpu-a2")
    assert "device mlx5_0  kind rdma  driver mlx5  firmware 22.36.1010" in r.stdout
    assert "gpu-a2:mlx5_0:1  ens1f0np0  up     100 Gb/s" in r.stdout
    r = ctl(d, tok, "ports", "--state", "up")
    assert "gpu-a2:mlx5_0:1" in r.stdout
    r = ctl(d, tok, "counters", "gpu-a2:mlx5_0:1", "np_cnp_sent", "pfc_rx_pause_frames")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[2].split()[:2] == ["COUNTER", "PRIO"]
    names = {(l.split()[0], l.split()[1]) for l in lines[3:]}
    assert names == {("np_cnp_sent", "-"), ("pfc_rx_pause_frames", "3"), ("pfc_rx_pause_frames", "4")}
    r = ctl(d, tok, "registry")
    assert "pfc_rx_pause_duration_us" in r.stdout


def test_json_is_the_rest_document(fleet):
    d, tok = fleet
    r = ctl(d, tok, "-j", "hosts", "gpu-a2")
    assert r.returncode == 0
    assert json.loads(r.stdout) == d.client("viewer").json("/api/v1/hosts/gpu-a2") | {
        "last_seen": json.loads(r.stdout)["last_seen"],
        "agent": json.loads(r.stdout)["agent"]}
    r = ctl(d, tok, "-j", "counters", "gpu-a2:mlx5_0:1", "np_cnp_sent", "--from", "-1m", "--step", "10s")
    doc = json.loads(r.stdout)
    assert doc["step_s"] == 10 and doc["series"][0]["name"] == "np_cnp_sent"
    assert json.loads(ctl(d, tok, "version").stdout)["api"] == "v1"


def test_errors(fleet, tmp_path):
    d, tok = fleet
    r = ctl(d, tok, "hosts", "nobody")
    assert r.returncode == 1 and "UNKNOWN_HOST" in r.stderr and "404" in r.stderr
    r = ctl(d, tok, "counters", "gpu-a2:mlx5_0:1", "nonsense")
    assert r.returncode == 1 and "UNKNOWN_COUNTER" in r.stderr
    r = ctl(d, "", "agents")
    assert r.returncode == 1 and "MISSING_TOKEN" in r.stderr
    r = ctl(d, str(tmp_path / "none"), "agents")
    assert r.returncode == 1 and "cannot read token file" in r.stderr
    # a token file others may read or write is refused, one its group may read is warned about
    with open(tok) as f:
        secret = f.read()
    copy = str(tmp_path / "copy.token")
    write_secret(copy, secret)
    for m in (0o644, 0o604, 0o606):
        os.chmod(copy, m)
        r = ctl(d, copy, "agents")
        assert r.returncode == 1 and "TOKEN_FILE_MODE" in r.stderr and f"chmod 600 {copy}" in r.stderr, r.stderr
    os.chmod(copy, 0o640)
    r = ctl(d, copy, "agents")
    assert r.returncode == 0 and "warning" in r.stderr and "TOKEN_FILE_MODE" in r.stderr, r.stderr
    os.chmod(copy, 0o600)
    r = ctl(d, copy, "agents")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = subprocess.run([binary("rocefabctl"), "--server", "http://127.0.0.1:1", "health"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "SERVER_UNREACHABLE" in r.stderr
    r = ctl(d, tok, "frobnicate")
    assert r.returncode == 2
    assert subprocess.run([binary("rocefabctl"), "--help"], capture_output=True).returncode == 0
