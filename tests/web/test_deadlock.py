"""A PFC deadlock on the dashboard: a routing loop injected into a live simulated fabric
(tests/sim/live/deadlock.json, the detector in advise mode) shows as its cycle drawn over the
links of the open topology, without a reload; the operator acknowledges the alert and mitigates
it from the alerts view, through the audited change path."""
import os

from conftest import ROOT, Fabric, World, wait_for

LOOP = [{"switch": "leaf1", "dst": "h0", "via": "spine0"}, {"switch": "spine0", "dst": "h0", "via": "leaf1"}]


def test_deadlock_cycle_on_the_topology_then_acked_and_mitigated(tmp_path, browser):
    world = World(str(tmp_path))
    try:
        fab = Fabric(world, os.path.join(ROOT, "tests", "sim", "live", "deadlock.json"))
        fab.wait_reporting(8, 4)
        browser.login(fab.url, fab.operator)
        browser.open(fab.url, "topology?color=pause")
        browser.js("window.__noReload = 1")
        fab.sim.ctl("POST", "/v1/faults", {"type": "route_override", "routes": LOOP}, expect=201)
        cycle = wait_for(lambda: browser.js(
            "return [...document.querySelectorAll('svg.topo line.hl-cycle')].length"), 30, 0.2,
            what="the deadlock's cycle drawn on the topology")
        assert cycle >= 1
        text = browser.js("return document.getElementById('topo-findings').textContent")
        assert "deadlock" in text and "leaf1" in text and "spine0" in text, text
        assert browser.js("return window.__noReload") == 1
        browser.shot("topology-deadlock")
        alert = [a for a in fab.api.json("/api/v1/alerts", params={"state": "active"})["items"]
                 if a["kind"] == "deadlock"][0]
        # acknowledge, then mitigate (advise mode: the detector waits for an operator)
        browser.open(fab.url, "alerts")
        row = f"#alerts-list tr[data-id='{alert['id']}']"
        wait_for(lambda: "Cycle: leaf1 spine0 → spine0 leaf1" in (browser.js(
            f"return document.querySelector(\"{row}\")?.textContent") or ""), 10, 0.2)
        browser.js(f"[...document.querySelectorAll(\"{row} button\")].find(b => b.textContent === 'Acknowledge').click()")
        wait_for(lambda: [a for a in fab.api.json("/api/v1/alerts")["items"]
                          if a["id"] == alert["id"] and (a["acked"] or {}).get("by") == "operator"], 10, 0.2,
                 what="the alert acknowledged by the operator")
        wait_for(lambda: browser.js(f"return [...document.querySelectorAll(\"{row} button\")]"
                                    ".some(b => b.textContent === 'Mitigate')"), 10, 0.2, what="the Mitigate button")
        browser.d.find_element("css selector", f"{row} input.reason").send_keys("cycle through spine0, INC-9")
        # the page's POSTs, as they leave
        browser.js("window.__posts = []; const f = window.fetch; window.fetch = (u, o) => {"
                   " if (o && o.method === 'POST') window.__posts.push(String(u)); return f(u, o); };")
        browser.js(f"[...document.querySelectorAll(\"{row} button\")].find(b => b.textContent === 'Mitigate').click()")
        # it asks first, naming the change; nothing is sent until Confirm
        ask = wait_for(lambda: browser.js(f"return document.querySelector(\"{row} .confirm\")?.textContent"), 10, 0.2,
                       what="the question before mitigating")
        assert ask.startswith("lossless_off on ") and "priority 3" in ask, ask
        assert browser.js("return window.__posts") == [], "Mitigate sent the change without its confirmation"
        browser.js(f"[...document.querySelectorAll(\"{row} button\")].find(b => b.textContent === 'Confirm').click()")
        assert browser.js("return window.__posts") == [f"/api/v1/alerts/{alert['id']}/mitigate"]
        ch = wait_for(lambda: [c for c in fab.api.json("/api/v1/changes", params={"kind": "pfc"})["items"]
                               if c["actor"].startswith("detector") and c["state"] == "applied"], 20, 0.2,
                      what="the detector's break applied")
        assert ch[0]["params"] == {"enable": 0}
        assert ch[0]["actor"] == "detector (asked by operator)", ch[0]
        assert ch[0]["reason"].endswith("; asked by operator: cycle through spine0, INC-9"), ch[0]
        # the alert says who mitigated it, with which change and why (while the finding lasts,
        # or once it cleared)
        browser.open(fab.url, "alerts?state=all")
        text = wait_for(lambda: (lambda t: t if t and "cycle through spine0, INC-9" in t else None)(browser.js(
            f"return document.querySelector(\"{row} .mitigation\")?.textContent")), 15, 0.2)
        assert text.startswith("mitigated by operator, ") and "change " in text, text
        assert browser.console_errors() == []
    finally:
        world.close()
