"""The dashboard at the bench fabric's size: 1,024 hosts and 80 switches reported by rocefab-sim's
1,104 virtual agents (tests/bench/fabric-1024.json), and a pingmesh window of results between
1,024 hosts (15 ToR mates and 2 hosts across per host, 2 paths: 17,408 pairs) written into the database as the
agents' rounds would leave them (the simulator cannot carry a 1,024-host pingmesh on 2 cores).
Prints, and bounds at 1 s, the time from opening the topology and the heatmap (from the view
change, cached modules) to the first frame painted with the data: fetch, layout, draw."""
import os
import sqlite3
import time

import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import probe_rows  # noqa: E402

from conftest import ROOT, SIM_AGENTS, World, wait_for

HOSTS, PER_TOR, ACROSS, ROUNDS = 1024, 16, 2, 4
RUNS = 5  # timed runs per view: the best is the figure (the others show the machine's noise)


def fill_probes(db_path):
    """ROUNDS rounds of results ending now, as the pingmesh's agents would store them."""
    db = sqlite3.connect(db_path, timeout=60)  # rocefabd writes too: wait for its transactions
    n = probe_rows.fill(db, HOSTS, PER_TOR, ACROSS, ROUNDS, time.time_ns())
    db.close()
    return n


def time_view(browser, view, ready_js):
    """ms from the view change to the first frame painted after the new view is ready (from a
    light view, so that each run really changes the view; the modules are cached)."""
    browser.js("location.hash = '#/changes'")
    wait_for(lambda: browser.js("return document.querySelector('main section.view-changes')?.dataset.ready"),
             20, 0.05, what="the changes view")
    browser.js("window.__t0 = performance.now(); location.hash = arguments[0];", "#/" + view)
    wait_for(lambda: browser.js(ready_js), 60, 0.02, what=f"{view} drawn")
    return browser.d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - window.__t0)));""")


def test_topology_and_heatmap_of_1024_hosts_render_within_a_second(tmp_path, browser):
    world = World(str(tmp_path))
    try:
        # agents.stale_after: the fabric is timed as live while the simulator's clock is stopped (below);
        # at the default 3 intervals its agents went stale during the runs, and a CI run timed the
        # drawing of a silent fabric (1.1-1.6 s, then with dotted translucent links)
        d = world.daemon(extra_conf=f"[api]\nweb_root = {os.path.join(ROOT, 'web')}\n"
                                    "[store]\nqueue = 4096\n[agents]\nstale_after = 1000\n")
        d.token("viewer", "viewer")
        ops, _ = d.token("ops", "operator")
        _, agents = d.token("agents", "agent", agent=SIM_AGENTS)
        d.start()
        c = d.client("ops")
        # the results above stand for the pingmesh: no live probing on top of them
        assert c.put("/api/v1/probes/config", json={"enabled": False}).status_code == 200
        sim = world.sim(os.path.join(ROOT, "tests", "bench", "fabric-1024.json"), daemon=d,
                        token_file=agents, interval="1s").start()
        wait_for(lambda: c.json("/api/v1/hosts")["count"] == 1024 and
                 c.json("/api/v1/switches")["count"] == 80 and
                 c.json("/api/v1/links")["count"] >= 2048 and
                 c.json("/api/v1/detector")["lane"]["ports"] > 4000, 120, 0.5,
                 what="1,024 hosts and 80 switches with their links and fast lane")
        # the simulator carries 1,104 agents on this machine's 2 cores: its clock is stopped while
        # the browser is timed (rocefabd on a real fabric does not share its cores with one)
        sim.pause()
        browser.login(d.url, ops)
        figures, n = {}, 0
        for view, ready in (
                ("topology", "return document.querySelector('main section.view-topology')?.dataset.ready && "
                             "document.querySelectorAll('svg.topo a.node').length === 1104"),
                ("pingmesh", "return document.querySelector('main section.view-pingmesh')?.dataset.ready && "
                             "(document.querySelector('canvas.heatmap')?.getAttribute('aria-label') || '')"
                             ".includes('between 1024 hosts')")):
            runs = []
            for _ in range(RUNS):
                if view == "pingmesh":
                    # the pingmesh's rounds of the last seconds, written now before each run: the
                    # heatmap's window is 10 s, and a localization pass (every 5 s) after older
                    # rounds aged out of it left fewer than 1,024 hosts to draw (a CI run waited
                    # 60 s for them); then the pass that keeps its matrix ready
                    n += fill_probes(d.db)
                    wait_for(lambda: (lambda m: "as_of" in m and len(m["pairs"]) >= HOSTS * 16)(
                        c.json("/api/v1/probes/matrix", params={"window": "10s", "paths": "false"})),
                        15, 0.2, what="the localization pass's matrix of 1,024 hosts")
                runs.append(time_view(browser, view, ready))
            section = browser.wait_view()
            figures[view] = (min(runs), float(section.get_attribute("data-render-ms")),
                             float(section.get_attribute("data-draw-ms")), runs)
            browser.shot(f"scale-{view}")
        assert browser.console_errors() == []
        for view, (t, fetch_draw, draw, runs) in figures.items():
            print(f"\n{view}: 1,024 hosts + 80 switches: first frame {t:.0f} ms after the view change "
                  f"(its data fetched and drawn in {fetch_draw:.0f} ms, of which drawing {draw:.0f} ms; "
                  f"best of {RUNS}: {', '.join(f'{x:.0f}' for x in runs)} ms)")
        print(f"pingmesh: {n:,} result rows written ({ROUNDS} rounds of 2 paths per pair, before each of {RUNS} runs)")
        assert figures["topology"][0] <= 1000, figures
        assert figures["pingmesh"][0] <= 1000, figures
    finally:
        world.close()
