"""`make demo` prints the dashboard's address with a token in it: opened as printed, the
dashboard shows the demo's fabric with the operator's rights, and the token leaves the address."""
import os
import re
import signal
import subprocess

from conftest import ROOT, BUILD, sysh, wait_for


def test_demo_prints_a_dashboard_url_that_opens(tmp_path, browser):
    host, port = sysh.free_addr()
    shost, sport = sysh.free_addr()
    env = dict(os.environ, DEMO_LISTEN=f"{host}:{port}", DEMO_SIM=f"{shost}:{sport}",
               DEMO_DIR=str(tmp_path / "demo"), DEMO_DURATION="60",
               ROCEFAB_BUILD=os.path.relpath(BUILD, ROOT))
    p = subprocess.Popen(["tests/demo.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        url = None
        for line in p.stdout:
            m = re.match(r"\s*Dashboard\s+(http://\S+/#token=rfb_[A-Za-z0-9_-]{43})\s*$", line)
            if m:
                url = m.group(1)
                break
        assert url and url.startswith(f"http://{host}:{port}/"), "no dashboard line in the banner"
        browser.d.get(url)
        browser.wait_view()
        assert "token=" not in browser.d.current_url
        assert "operator (operator)" in browser.d.find_element("id", "who").text
        # the overview polls: every agent shows up within a few seconds
        wait_for(lambda: browser.js("return [document.getElementById('count-hosts')?.textContent,"
                                    "document.getElementById('count-switches')?.textContent]")
                 == ["32 hosts", "6 switches"], 30, 0.2, what="the demo's 32 hosts and 6 switches")
        browser.shot("demo-overview")
        errors = browser.console_errors()
        assert errors == [], errors
    finally:
        os.killpg(p.pid, signal.SIGINT)
        p.wait(30)
    assert not [l for l in subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True,
                                          text=True).stdout.splitlines() if "pgrep" not in l]
