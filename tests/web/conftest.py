"""The browser tier: Debian's headless Chromium, driven through Selenium (python3-selenium and
chromium-driver), against rocefabd serving web/ and a live simulated fabric (rocefab-sim serve
with its virtual agents).  Every process is started here and stopped at the end.

Run with Debian's python: /usr/bin/python3 -m pytest tests/web (make check-web does).
Screenshots of every view go to $ROCEFAB_BUILD/web-shots/ for a person to look at."""
import importlib.util
import json
import os
import shutil
import tempfile
import time

import pytest
import requests

_spec = importlib.util.spec_from_file_location(
    "syshelpers", os.path.join(os.path.dirname(__file__), "..", "system", "conftest.py"))
sysh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sysh)

ROOT, BUILD, SIM_AGENTS = sysh.ROOT, sysh.BUILD, sysh.SIM_AGENTS
World = sysh.World


def wait_for(cond, timeout=10.0, interval=0.05, what="condition"):
    """sysh.wait_for, where an element not there yet (Selenium's errors) also means "not yet"."""
    from selenium.common.exceptions import WebDriverException

    def guarded():
        try:
            return cond()
        except WebDriverException as e:
            raise AssertionError(str(e).splitlines()[0])
    return sysh.wait_for(guarded, timeout, interval, what)
SHOTS = os.path.join(BUILD, "web-shots")

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Without the background-networking switches Chromium tries to reach Google's hosts at every
# start, and this machine's closed network refuses it (toolbox.md).
CHROME_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--window-size=1400,1000", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-default-apps", "--disable-extensions"]


def scenario_without_storm(tmp):
    """The demo's scenario (32 hosts, 6 switches, all-reduce and incast) without its scheduled
    pause storm: the tests inject one when they want it."""
    with open(os.path.join(ROOT, "sim", "scenarios", "demo.json")) as f:
        sc = json.load(f)
    sc["faults"] = []
    path = os.path.join(tmp, "demo-nostorm.json")
    with open(path, "w") as f:
        json.dump(sc, f)
    return path


class Fabric:
    def __init__(self, world, scenario, extra_conf=""):
        self.world = world
        self.d = world.daemon(extra_conf=f"[api]\nweb_root = {os.path.join(ROOT, 'web')}\n" + extra_conf)
        self.viewer, _ = self.d.token("viewer", "viewer")
        self.operator, _ = self.d.token("operator", "operator")
        _, agents = self.d.token("agents", "agent", agent=SIM_AGENTS)
        self.d.start()
        self.sim = world.sim(scenario, daemon=self.d, token_file=agents).start()
        self.url = self.d.url
        self.api = self.d.client("operator")

    def wait_reporting(self, hosts, switches, timeout=30):
        def ready():
            return (self.api.json("/api/v1/hosts")["count"] == hosts and
                    self.api.json("/api/v1/switches")["count"] == switches and
                    self.api.json("/api/v1/detector")["lane"]["ports"] > 0)
        wait_for(ready, timeout, 0.2, what=f"{hosts} hosts and {switches} switches reporting")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("web"))
    world = World(tmp)
    try:
        # the tuner decides every second (10 s by default): its proposals come within the test
        fab = Fabric(world, scenario_without_storm(tmp), extra_conf="[cc]\ninterval = 1s\n")
        fab.wait_reporting(32, 6)
        yield fab
    finally:
        world.close()


class Browser:
    def __init__(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        o = Options()
        o.binary_location = CHROMIUM
        for a in CHROME_ARGS:
            o.add_argument(a)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # chromium leaves its singleton socket's directory (org.chromium.Chromium.*) in TMPDIR
        # even when it quits cleanly: a private one, removed at quit, leaves nothing in /tmp
        self.tmp = tempfile.mkdtemp(prefix="rocefab-chromium-")
        service = Service(CHROMEDRIVER, env=dict(os.environ, TMPDIR=self.tmp))
        try:
            self.d = webdriver.Chrome(service=service, options=o)
        except Exception:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        self.d.set_script_timeout(20)
        self.errors = []

    def login(self, base, token):
        """Opens the dashboard as `make demo` prints it: the token in the address's fragment."""
        self.d.get(f"{base}/#token={token}")
        self.wait_view()

    def leave(self):
        """For a test that stops its own rocefabd: the page left for a blank one, and what it
        logged dropped, so that the next test's console holds no ERR_CONNECTION_REFUSED of a
        page still polling the closed port.  (Not at every login: a page reloaded through
        about:blank stayed at "Loading…" after a few tests, as if the tab's connections to the
        origin were still held.)"""
        self.d.get("about:blank")
        self.console()

    def open(self, base, view):
        # the view shown now stays ready until the new one replaces it: wait for another one
        url = f"{base}/#/{view}"
        try:
            # (the same address again is no navigation: the view shown is the one)
            self.d.execute_script("window.__prevView = arguments[0] ? null : "
                                  "document.querySelector('main section.view')",
                                  self.d.current_url == url)
        except Exception:
            pass  # no page yet (or another origin's)
        self.d.get(url)
        return self.wait_view()

    def wait_view(self, timeout=20):
        """Waits until the view shown has rendered (its section says data-ready), and returns
        that section."""
        def ready():
            return self.d.execute_script(
                "const s = document.querySelector('main section.view');"
                "return s && s !== window.__prevView && s.dataset.ready === 'true' ? s : null;")
        try:
            return wait_for(ready, timeout, 0.05, what="the view to render")
        except AssertionError as e:
            page = self.d.execute_script("return document.body.innerText")[:600]
            raise AssertionError(f"{e}; at {self.d.current_url}, the page says: {page!r}; "
                                 f"console: {self.console()}") from None

    def wait_view_text(self, want, timeout=20):
        """Waits until the view shown has rendered and its text holds `want`; read in one script,
        so that a view rendered again meanwhile (a navigation's second render, an event's
        refresh) cannot leave the test holding a section no longer in the page."""
        def has():
            text = self.d.execute_script(
                "const s = document.querySelector('main section.view');"
                "return s && s.dataset.ready === 'true' ? s.innerText : '';")
            return text if want in text else None
        try:
            return wait_for(has, timeout, 0.05, what=f"the view to show {want!r}")
        except AssertionError as e:
            raise AssertionError(f"{e}; at {self.d.current_url}; console: {self.console()}") from None

    def console(self):
        """The browser's console since the last call: (level, message) of each entry."""
        return [(e["level"], e["message"]) for e in self.d.get_log("browser")]

    def console_errors(self, expected=()):
        """SEVERE entries (errors, failed loads, CSP violations) but those containing one of
        expected (e.g. the 400 of a value the test has the server refuse)."""
        return [m for lvl, m in self.console()
                if lvl == "SEVERE" and not any(x in m for x in expected)]

    def shot(self, name):
        os.makedirs(SHOTS, exist_ok=True)
        path = os.path.join(SHOTS, f"{name}.png")
        self.d.save_screenshot(path)
        return path

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def quit(self):
        try:
            self.d.quit()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    for p in (CHROMIUM, CHROMEDRIVER):
        assert os.access(p, os.X_OK), f"{p} is missing: run packaging/install-deps.sh check"
    b = Browser()
    try:
        yield b
    finally:
        b.quit()
