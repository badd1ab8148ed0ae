"""Shared fixtures of the system tests: real rocefabd / rocefab-agent processes on loopback
addresses (127.0.0.x), temporary databases and trees, and an HTTP client that validates every
response against schemas/openapi.yaml.

Run with Debian's python: /usr/bin/python3 -m pytest tests/system (make check does).
"""
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import jsonschema
import pytest
import requests
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("ROCEFAB_BUILD", "build"))
HOSTS = os.path.join(ROOT, "tests", "data", "hosts")
SCHEMAS = os.path.join(ROOT, "schemas")


# The ids of rocefab-sim's virtual agents in a leaf-spine scenario (sim/scenario.c: hosts h<i>,
# switches leaf<i> and spine<i>): what its token is bound to.
SIM_AGENTS = "h*,leaf*,spine*"


def binary(name):
    path = os.path.join(BUILD, name)
    assert os.access(path, os.X_OK), f"{path} is not built (run make)"
    return path


def ctl(d, token, *args):
    """rocefabctl against daemon d with the token saved as TOKEN (d.token(TOKEN, ...))."""
    env = dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN_FILE=os.path.join(d.workdir, f"{token}.token"))
    return subprocess.run([binary("rocefabctl")] + list(args), capture_output=True, text=True, env=env, timeout=20)


def stays(cond, seconds, interval=0.1, what="condition"):
    """Asserts cond() throughout the next seconds, read every interval: a negative over time
    (what must not happen is watched for, not slept through)."""
    end = time.monotonic() + seconds
    while True:
        assert cond(), f"{what} no longer held"
        if time.monotonic() >= end:
            return
        time.sleep(interval)


def wait_for(cond, timeout=10.0, interval=0.05, what="condition"):
    """Polls cond() until it returns something truthy; fails the test after timeout."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        try:
            v = cond()
            if v:
                return v
        except (requests.RequestException, AssertionError, KeyError, IndexError) as e:
            last_exc = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" +
                         (f" (last error: {last_exc})" if last_exc else ""))


_addr_counter = itertools.count(10)


def free_addr():
    """A distinct loopback address and a free port on it."""
    n = next(_addr_counter)
    host = f"127.0.{n // 250}.{n % 250 + 2}"
    with socket.socket() as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    return host, port


# --- OpenAPI validation ------------------------------------------------------------------

class OpenAPI:
    def __init__(self):
        with open(os.path.join(SCHEMAS, "openapi.yaml")) as f:
            self.doc = yaml.safe_load(f)
        self.routes = []
        for path, ops in self.doc["paths"].items():
            rx = "^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"
            self.routes.append((re.compile(rx), path, ops))
        self.resolver = jsonschema.RefResolver.from_schema(self.doc)
        external = {}
        for name in ("agent-report.schema.json", "command.schema.json"):
            with open(os.path.join(SCHEMAS, name)) as f:
                external[name] = json.load(f)
        for k, v in external.items():
            for key in ("./" + k, "/" + k, k, v.get("$id", k)):
                self.resolver.store[key] = v
        self.checked = 0

    def operation(self, method, path):
        for rx, template, ops in self.routes:
            if rx.match(path):
                return template, ops.get(method.lower())
        return None, None

    def validate(self, method, url, resp):
        path = requests.utils.urlparse(url).path
        template, op = self.operation(method, path)
        if op is None:
            # unknown paths must be 404 (or 405 for a known path with another method)
            assert resp.status_code in (404, 405), f"{method} {path}: undocumented, got {resp.status_code}"
            self._check_problem(resp)
            return
        responses = dict(self.doc.get("x-rocefab-common-responses", {}), **op["responses"])
        status = str(resp.status_code)
        assert status in responses, f"{method} {template}: status {status} is not documented"
        spec = responses[status]
        if "$ref" in spec:
            spec = self.resolver.resolve(spec["$ref"])[1]
        content = spec.get("content", {})
        ctype = resp.headers.get("Content-Type", "").split(";")[0].strip()
        assert ctype in content, f"{method} {template} {status}: content type {ctype} not documented"
        schema = content[ctype].get("schema")
        if schema and ctype.endswith("json"):
            jsonschema.Draft202012Validator(schema, resolver=self.resolver,
                                            format_checker=jsonschema.FormatChecker()).validate(resp.json())
        self.checked += 1

    def _check_problem(self, resp):
        assert resp.headers.get("Content-Type", "").startswith("application/problem+json")
        schema = self.doc["components"]["schemas"]["Problem"]
        jsonschema.Draft202012Validator(schema, resolver=self.resolver).validate(resp.json())


_openapi = None


def openapi():
    global _openapi
    if _openapi is None:
        _openapi = OpenAPI()
    return _openapi


class Client:
    """requests with a base URL and a token, validating every response against the OpenAPI."""

    def __init__(self, base, token=None):
        self.base = base
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def request(self, method, path, validate=True, **kw):
        kw.setdefault("timeout", 10)
        r = self.session.request(method, self.base + path, **kw)
        if validate:
            openapi().validate(method, self.base + path, r)
        return r

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def put(self, path, **kw):
        return self.request("PUT", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def json(self, path, **kw):
        r = self.get(path, **kw)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text}"
        return r.json()


# --- processes ---------------------------------------------------------------------------

class Proc:
    def __init__(self, args, log_path, env=None):
        self.args = args
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                  env=env or os.environ.copy())

    def alive(self):
        return self.p.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        return self.p.returncode

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")


class Daemon:
    def __init__(self, workdir, name="rocefabd", extra_conf="", args=()):
        self.workdir = workdir
        self.name = name
        self.db = os.path.join(workdir, f"{name}.db")
        self.host, self.port = free_addr()
        self.url = f"http://{self.host}:{self.port}"
        self.conf = os.path.join(workdir, f"{name}.conf")
        with open(self.conf, "w") as f:
            f.write(f"[daemon]\nlog_level = debug\nlog_target = stderr\n"
                    f"[api]\nlisten = {self.host}:{self.port}\n"
                    f"[store]\ndb = {self.db}\n{extra_conf}\n")
        self.args = list(args)
        self.proc = None
        self.tokens = {}

    def token(self, name, role, agent=None):
        """A new token; agent: the ids or patterns (a string or a list) an agent token may
        report as (rocefabd token add --agent); an agent token without one is unbound."""
        args = [binary("rocefabd"), "--config", self.conf, "token", "add", name, "--role", role]
        for a in ([agent] if isinstance(agent, str) else agent or []):
            args += ["--agent", a]
        out = subprocess.run(args, capture_output=True, text=True, check=True)
        tok = out.stdout.strip().splitlines()[-1]
        assert re.fullmatch(r"rfb_[A-Za-z0-9_-]{43}", tok), out.stdout
        self.tokens[name] = tok
        path = os.path.join(self.workdir, f"{name}.token")
        write_secret(path, tok + "\n")
        return tok, path

    def start(self, env=None, wait=True):
        self.proc = Proc([binary("rocefabd"), "--config", self.conf] + self.args,
                         os.path.join(self.workdir, f"{self.name}.log"), env=env)
        if wait:
            wait_for(self.healthy, 10, what=f"{self.name} to answer")
        return self

    def healthy(self):
        assert self.proc.alive(), f"rocefabd exited:\n{self.proc.output()[-3000:]}"
        return requests.get(self.url + "/api/v1/health", timeout=2).status_code == 200

    def stop(self, sig=signal.SIGTERM):
        rc = self.proc.stop(sig) if self.proc else None
        return rc

    def client(self, token_name=None):
        return Client(self.url, self.tokens.get(token_name) if token_name else None)


class Agent:
    def __init__(self, workdir, agent_id, tree, server, token_file, interval="0.5s", extra=()):
        self.workdir = workdir
        self.id = agent_id
        self.tree = tree
        self.spool = os.path.join(workdir, f"spool-{agent_id}")
        self.args = [binary("rocefab-agent"), "--id", agent_id, "--sysfs-root", tree,
                     "--server", server, "--token-file", token_file, "--interval", interval,
                     "--spool-dir", self.spool, "-L", "debug", "-o", "agent.log_target=stderr",
                     "-o", "agent.jitter=0"] + list(extra)
        self.proc = None

    def start(self):
        self.proc = Proc(self.args, os.path.join(self.workdir, f"agent-{self.id}.log"))
        return self

    def stop(self, sig=signal.SIGTERM):
        return self.proc.stop(sig) if self.proc else None

    def spooled(self):
        if not os.path.isdir(self.spool):
            return 0
        return len([f for f in os.listdir(self.spool) if f.endswith(".json")])


class Sim:
    """rocefab-sim serve: a paced fabric with its control API and, with a daemon, its virtual
    agents (one per simulated device, except those in skip)."""

    def __init__(self, workdir, scenario, daemon=None, token_file=None, pace=None,
                 interval="1s", skip=(), name="sim", extra=()):
        self.workdir = workdir
        self.host, self.port = free_addr()
        self.url = f"http://{self.host}:{self.port}"
        self.spool = os.path.join(workdir, f"{name}-spool")
        self.args = [binary("rocefab-sim"), "serve", scenario, "--control",
                     f"{self.host}:{self.port}", "--spool-dir", self.spool, "--quiet"]
        if pace:
            self.args += ["--pace", str(pace)]
        if daemon:
            self.args += ["--agents", daemon.url, "--token-file", token_file,
                          "--interval", interval]
        if skip:
            self.args += ["--skip-agents", ",".join(skip)]
        self.args += list(extra)
        self.name = name
        self.proc = None

    def start(self, env=None):
        self.proc = Proc(self.args, os.path.join(self.workdir, f"{self.name}.log"), env=env)
        wait_for(self.answering, 15, what="rocefab-sim serve to answer")
        return self

    def answering(self):
        assert self.proc.alive(), f"rocefab-sim exited:\n{self.proc.output()[-3000:]}"
        return requests.get(self.url + "/v1/status", timeout=2).status_code == 200

    def ctl(self, method, path, body=None, expect=200):
        r = requests.request(method, self.url + path, json=body, timeout=10)
        if expect is not None:
            assert r.status_code == expect, f"{method} {path}: {r.status_code} {r.text}"
        return r.json()

    def pause(self):
        return self.ctl("PUT", "/v1/clock", {"paused": True})

    def resume(self):
        return self.ctl("PUT", "/v1/clock", {"paused": False})

    def counters(self, device):
        return self.ctl("GET", f"/v1/devices/{device}/counters")

    def stop(self, sig=signal.SIGTERM):
        return self.proc.stop(sig) if self.proc else None


def switch_report(agent, seq, ecn, results=None):
    """A report of a hand-made switch agent (boot b1) with one port p1 and the ECN entries given
    (dicts of port p1's queues), as rocefabd takes it; results: its command outcomes."""
    doc = {"schema": 1, "agent": {"id": agent, "role": "switch", "boot_id": "b1", "version": "t", "backend": "test"},
           "seq": seq, "time_ns": time.time_ns(), "interval_ms": 1000,
           "inventory": {"devices": [{"name": agent, "kind": "switch", "ports": [
               {"port": "p1", "state": "up", "speed_mbps": 100000}]}]},
           "samples": [],
           "config": {"ecn": [dict({"device": agent, "port": "p1", "enabled": True}, **x) for x in ecn]}}
    if results:
        doc["command_results"] = results
    return doc


def write_secret(path, text):
    """A token file as it must be: created 0600 (the programs refuse one others can read), never
    readable by others even for a moment."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(fd, "w") as f:
        f.write(text)


def copy_tree(name, dst):
    shutil.copytree(os.path.join(HOSTS, name), dst, symlinks=True)
    return dst


def write_counter(path, value):
    """Writes a sysfs-like counter file atomically (a reader never sees half a number)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{value}\n")
    os.rename(tmp, path)


class World:
    """Everything a test started; stopped at the end of the test whatever happens."""

    def __init__(self, tmp_path):
        self.tmp = str(tmp_path)
        self.daemons = []
        self.agents = []
        self.procs = []
        self.sims = []

    def daemon(self, **kw):
        d = Daemon(self.tmp, **kw)
        self.daemons.append(d)
        return d

    def agent(self, *a, **kw):
        ag = Agent(self.tmp, *a, **kw)
        self.agents.append(ag)
        return ag

    def sim(self, *a, **kw):
        sm = Sim(self.tmp, *a, **kw)
        self.sims.append(sm)
        return sm

    def sim_agent(self, device, d, sim, token_file=None, interval="0.3s"):
        """A real rocefab-agent reporting the simulated device (--backend sim) to daemon d, not
        started (token_file: the agents' token, by default d's agents.token)."""
        ag = self.agent(device, "/", d.url, token_file or os.path.join(d.workdir, "agents.token"), interval=interval,
                        extra=("--backend", "sim", "--sim", sim.url, "--device", device))
        i = ag.args.index("--sysfs-root")
        del ag.args[i:i + 2]
        return ag

    def close(self):
        for sm in self.sims:
            sm.stop()
        for ag in self.agents:
            ag.stop()
        for d in self.daemons:
            d.stop()
        for p in self.procs:
            p.stop()


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.close()
