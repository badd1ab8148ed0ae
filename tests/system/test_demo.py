"""`make demo` as a new user runs it: hosts and counters show up, Ctrl-C stops everything."""
import os
import signal
import subprocess
import time

from conftest import BUILD, ROOT, free_addr, wait_for


def demo_env(tmp_path):
    host, port = free_addr()
    return dict(os.environ, DEMO_LISTEN=f"{host}:{port}", DEMO_DIR=str(tmp_path / "demo"),
                ROCEFAB_BUILD=os.path.relpath(BUILD, ROOT)), f"http://{host}:{port}"


def rocefab_processes(tag):
    out = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if "pgrep" not in l]


def test_demo_runs_and_prints_live_counters(tmp_path):
    env, url = demo_env(tmp_path)
    env["DEMO_DURATION"] = "4"
    r = subprocess.run(["tests/demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert url in r.stdout
    lines = r.stdout.splitlines()
    hosts = [l.split()[0] for l in lines[lines.index(next(l for l in lines if l.startswith("HOST"))) + 1:][:3]]
    assert hosts == ["gpu-a1", "gpu-a2", "stor-b1"]
    rate_line = next(l for l in lines if l.startswith("roce_tx_bytes"))
    assert "GB/s" in rate_line
    assert not rocefab_processes(str(tmp_path))


def test_demo_stops_on_ctrl_c(tmp_path):
    env, url = demo_env(tmp_path)
    p = subprocess.Popen(["tests/demo.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_for(lambda: len(rocefab_processes(str(tmp_path))) >= 5, 20, what="the demo's processes")
        os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        p.wait(20)
        out = p.stdout.read()
        assert "demo: stopped" in out
        wait_for(lambda: not rocefab_processes(str(tmp_path)), 10, what="nothing left running")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
