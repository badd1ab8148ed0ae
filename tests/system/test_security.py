"""Agent identity: a token of role agent reports only as the agents it is bound to (rocefabd
token add NAME --role agent --agent ID|PATTERN[,...]).  A report carries an agent's data and the
outcomes of its configuration changes, and its answer carries the agent's pending commands, so a
report as another agent is refused (403 AGENT_NOT_BOUND) before anything is parsed or stored.
Agent tokens made without a binding (before store schema 6) still work for one release, with a
warning at start-up and in /api/v1/health.  Every response is validated against the OpenAPI."""
import json
import os
import re
import sqlite3
import subprocess
import time

import pytest

from conftest import ROOT, Client, binary, copy_tree, wait_for

V5_DUMP = os.path.join(ROOT, "tests", "data", "store-v5.sql")
V5_FLEET_TOKEN = "rfb_v5fleetAgentTokenMadeBeforeAgentBinding0001"
V5_OPS_TOKEN = "rfb_v5operatorTokenMadeBeforeAgentBinding000002"
# a fixed window around the tests' samples (a relative one would move between two snapshots)
WINDOW = f"from={int(time.time()) - 600}&to={int(time.time()) + 3600}"


def report(agent_id, seq, results=None):
    """A host report: one RDMA port nic0:1 with its DCQCN settings and one counter sample."""
    t = time.time_ns()
    doc = {"schema": 1, "agent": {"id": agent_id, "role": "host", "boot_id": "b1", "version": "t",
                                  "backend": "test"},
           "seq": seq, "time_ns": t, "interval_ms": 60000,  # never stale during a test
           "inventory": {"devices": [{"name": "nic0", "kind": "rdma", "driver": "test", "ports": [
               {"port": "1", "state": "up", "speed_mbps": 100000}]}]},
           "samples": [{"device": "nic0", "port": "1", "source": "sim", "t_ns": t,
                        "values": {"np_cnp_sent": 10 * seq}}],
           "config": {"dcqcn": [{"device": "nic0", "port": "1", "rpg_ai_rate": 5,
                                 "rpg_time_reset": 300}]}}
    if results:
        doc["command_results"] = results
    return doc


def post(d, token, url_id, doc):
    body = doc if isinstance(doc, str) else json.dumps(doc)
    return d.client(token).post(f"/api/v1/agents/{url_id}/report", data=body,
                                headers={"Content-Type": "application/json"})


def refused(r, token, agent):
    assert r.status_code == 403, (r.status_code, r.text)
    assert r.headers["Content-Type"].startswith("application/problem+json")
    p = r.json()
    assert p["code"] == "AGENT_NOT_BOUND" and p["status"] == 403, p
    assert (p["token"], p["agent"]) == (token, agent), p
    assert f"'{token}'" in p["detail"] and f"'{agent}'" in p["detail"], p
    assert "commands" not in p
    return p


def snapshot(d):
    """What a forged report could change: agents, ports, samples, the audit log."""
    c = d.client("viewer")
    return (c.json("/api/v1/agents"), c.json("/api/v1/ports"), c.json("/api/v1/changes"),
            c.json(f"/api/v1/ports/h2:nic0:1/counters?names=np_cnp_sent&{WINDOW}"))


def refusal_lines(d, token, agent):
    return [l for l in d.proc.output().splitlines()
            if "AGENT_NOT_BOUND" in l and f"token '{token}'" in l and f"agent '{agent}'" in l]


@pytest.fixture
def hosts(world):
    """rocefabd with h1 and h2, each having reported with its own token (bound to it)."""
    d = world.daemon()
    d.token("h1", "agent", agent="h1")
    d.token("h2", "agent", agent="h2")
    d.token("ops", "operator")
    d.token("viewer", "viewer")
    d.token("admin", "admin")
    d.start()
    for h in ("h1", "h2"):
        r = post(d, h, h, report(h, 1))
        assert r.status_code == 200 and r.json()["accepted"], r.text
    assert "UNBOUND_AGENT_TOKEN" not in d.proc.output()
    assert len(snapshot(d)[3]["series"][0]["points"]) == 1
    assert d.client().get("/api/v1/health").json()["warnings"] == []
    return d


def test_report_as_another_agent_is_refused_and_nothing_is_stored(hosts):
    d = hosts
    before = snapshot(d)
    refused(post(d, "h1", "h2", report("h2", 2)), "h1", "h2")
    # checked on the URL's id before the body is parsed: a body naming h1, or no report at all,
    # makes no difference
    refused(post(d, "h1", "h2", report("h1", 2)), "h1", "h2")
    refused(post(d, "h1", "h2", "{not json"), "h1", "h2")
    # an agent rocefabd has never seen is refused as well, and does not appear
    refused(post(d, "h1", "h9", report("h9", 1)), "h1", "h9")
    assert d.client("viewer").get("/api/v1/agents/h9").status_code == 404
    assert snapshot(d) == before
    # h1's own reports still work, and h2's with h2's token
    assert post(d, "h1", "h1", report("h1", 2)).json()["duplicate"] is False
    assert post(d, "h2", "h2", report("h2", 2)).json()["duplicate"] is False
    # a token of role admin reports as any agent (documented)
    assert post(d, "admin", "h2", report("h2", 3)).status_code == 200

    # logged at warning, once a minute per token however often and as whatever agents it is
    # tried: the first refusal (as h2) is the line; the later ones, as h2 or as made-up ids,
    # only count
    for seq in range(10, 15):
        refused(post(d, "h1", "h2", report("h2", seq)), "h1", "h2")
    for i in range(200):
        refused(post(d, "h1", f"x{i}", "{}"), "h1", f"x{i}")
    lines = refusal_lines(d, "h1", "h2")
    assert len(lines) == 1 and "warning" in lines[0], lines
    assert not [l for l in d.proc.output().splitlines()
                if "AGENT_NOT_BOUND" in l and "warning" in l and "token 'h1'" in l and l not in lines]
    # and one token's refusals do not hide another's
    refused(post(d, "h2", "h1", report("h1", 9)), "h2", "h1")
    assert len(refusal_lines(d, "h2", "h1")) == 1
    assert d.healthy()


def test_another_agents_commands_are_not_handed_out(hosts):
    """A pending change for h2: h1's token posting as h2 gets no commands (403), the change stays
    pending; h2's own report then gets it."""
    d = hosts
    ops, viewer = d.client("ops"), d.client("viewer")
    r = ops.put("/api/v1/hosts/h2/dcqcn", json={"rpg_ai_rate": 10})
    assert r.status_code == 202, r.text
    cid = r.json()["changes"][0]["id"]
    before = viewer.json(f"/api/v1/changes/{cid}")
    assert before["state"] == "pending"

    r = post(d, "h1", "h2", report("h2", 2))
    refused(r, "h1", "h2")
    assert viewer.json(f"/api/v1/changes/{cid}") == before  # still pending, never sent

    a = post(d, "h2", "h2", report("h2", 2)).json()
    assert [c["id"] for c in a["commands"]] == [f"c{cid}"]
    assert a["commands"][0]["target"] == "h2"
    assert viewer.json(f"/api/v1/changes/{cid}")["state"] == "sent"


def test_outcomes_of_another_agents_changes_are_refused(hosts):
    """The finding: a change to h2 became failed with a forged message.  Now the forged outcome
    is refused and the change, the audit log and h2's data stay as they were."""
    d = hosts
    ops, viewer = d.client("ops"), d.client("viewer")
    cid = ops.put("/api/v1/hosts/h2/dcqcn", json={"rpg_ai_rate": 10}).json()["changes"][0]["id"]
    assert post(d, "h2", "h2", report("h2", 2)).json()["commands"][0]["id"] == f"c{cid}"
    before = viewer.json(f"/api/v1/changes/{cid}")
    assert before["state"] == "sent"
    log_before = snapshot(d)

    forged = [{"id": f"c{cid}", "outcome": "failed",
               "error": {"code": "FORGED", "message": "forged by the holder of h1's token"}}]
    refused(post(d, "h1", "h2", report("h2", 3, results=forged)), "h1", "h2")
    # and as itself, h1 cannot settle h2's change either (outcomes are keyed by the reporter)
    assert post(d, "h1", "h1", report("h1", 2, results=forged)).status_code == 200
    assert viewer.json(f"/api/v1/changes/{cid}") == before
    assert snapshot(d)[2:] == log_before[2:]  # the audit log and h2's samples
    assert "FORGED" not in json.dumps(viewer.json("/api/v1/changes"))

    # h2's own outcome is recorded
    ok = [{"id": f"c{cid}", "outcome": "applied", "values": {"rpg_ai_rate": 10}}]
    assert post(d, "h2", "h2", report("h2", 3, results=ok)).status_code == 200
    assert viewer.json(f"/api/v1/changes/{cid}")["state"] == "applied"


def test_binding_survives_a_restart(hosts):
    d = hosts
    assert d.stop() == 0
    d.start()
    refused(post(d, "h1", "h2", report("h2", 5)), "h1", "h2")
    assert post(d, "h1", "h1", report("h1", 5)).status_code == 200
    out = subprocess.run([binary("rocefabd"), "--config", d.conf, "token", "list"],
                         capture_output=True, text=True, check=True).stdout
    rows = {l.split()[0]: l.split() for l in out.splitlines()[1:]}
    assert rows["h1"][-1] == "h1" and rows["h2"][-1] == "h2"


def test_unbound_token_still_works_with_a_warning(world):
    d = world.daemon()
    r = subprocess.run([binary("rocefabd"), "--config", d.conf, "token", "add", "legacy", "--role",
                        "agent"], capture_output=True, text=True)
    # allowed in this release, with a warning on stderr; the token alone on stdout's last line
    assert r.returncode == 0, r.stderr
    assert "not bound to agents" in r.stderr and "next release" in r.stderr
    d.tokens["legacy"] = r.stdout.strip().splitlines()[-1]
    d.token("h1", "agent", agent="h1")
    d.token("fleet", "agent", agent="*")  # any agent, said explicitly: no warning
    d.token("viewer", "viewer")
    d.start()
    log = d.proc.output()
    warned = [l for l in log.splitlines() if "UNBOUND_AGENT_TOKEN" in l]
    assert len(warned) == 1 and "'legacy'" in warned[0] and "warning" in warned[0], warned

    # it reports as anyone, as before
    for h in ("h1", "h2", "h3"):
        assert post(d, "legacy", h, report(h, 1)).status_code == 200
    assert post(d, "fleet", "h4", report("h4", 1)).status_code == 200

    # /health says so: the names only to a caller that may read
    w = Client(d.url).json("/api/v1/health")["warnings"]
    assert len(w) == 1 and w[0]["code"] == "UNBOUND_AGENT_TOKENS" and w[0]["count"] == 1, w
    assert "tokens" not in w[0] and "bind" in w[0]["detail"]
    w = d.client("viewer").json("/api/v1/health")["warnings"]
    assert w[0]["tokens"] == ["legacy"]
    env = dict(os.environ, ROCEFAB_SERVER=d.url,
               ROCEFAB_TOKEN_FILE=os.path.join(world.tmp, "viewer.token"))
    out = subprocess.run([binary("rocefabctl"), "health"], env=env, capture_output=True, text=True,
                         timeout=20)
    assert out.returncode == 0 and "warning:      UNBOUND_AGENT_TOKENS" in out.stdout
    assert "(tokens: legacy)" in out.stdout

    # bound in place (the hosts keep their token file): refused as another agent within the
    # token cache's lifetime, and the warning goes
    subprocess.run([binary("rocefabd"), "--config", d.conf, "token", "bind", "legacy", "--agent",
                    "h2"], check=True, capture_output=True)
    wait_for(lambda: post(d, "legacy", "h3", report("h3", 2)).status_code == 403, 3,
             what="the new binding to take effect")
    assert post(d, "legacy", "h2", report("h2", 2)).status_code == 200
    assert d.client("viewer").json("/api/v1/health")["warnings"] == []


def test_a_database_from_before_bindings(world):
    """A schema-5 database (its tokens made before bindings) is migrated; its agent token keeps
    working unbound, named in the start-up warning and in /health.  A change left pending in it
    (made before changes waited for others, schema 10) is sent as before, waiting for none; of
    two sent and timed out, the one whose agent has made no report since its deadline is in
    doubt (schema 11)."""
    d = world.daemon()
    with open(V5_DUMP) as f:
        db = sqlite3.connect(d.db)
        db.executescript(f.read())
        db.execute("INSERT INTO changes(batch, created_ns, actor, reason, agent_id, kind, device, port, queue, "
                   "params, state, deadline_ns, updated_ns) VALUES(0, 1, 'ops', 'before the upgrade', 'h5', "
                   "'dcqcn', 'mlx5_0', '1', -1, '{\"rpg_ai_rate\":10}', 'pending', ?, 1)",
                   (time.time_ns() + 3600 * 10**9,))
        db.execute("INSERT INTO agents(id, role, boot_id, seq, interval_ms, first_seen_ns, last_seen_ns, "
                   "last_report_ns) VALUES('h9', 'host', 'b0', 5, 1000, 1, 1, 100)")
        for deadline in (200, 50):
            db.execute("INSERT INTO changes(batch, created_ns, actor, agent_id, kind, device, port, params, state, "
                       "error, deadline_ns, sent_ns, updated_ns) VALUES(0, 1, 'ops', 'h9', 'dcqcn', 'mlx5_0', '1', "
                       "'{}', 'timed_out', '{\"code\":\"NO_ANSWER\",\"message\":\"no outcome\"}', ?, 10, 1)", (deadline,))
        db.commit()
        db.close()
    d.tokens.update(fleet=V5_FLEET_TOKEN, ops=V5_OPS_TOKEN)
    d.start()
    log = d.proc.output()
    assert "from version 5 to 6" in log and "creating the database schema" not in log
    assert re.search(r"warning.*agent token 'fleet' is not bound.*\[UNBOUND_AGENT_TOKEN\]", log), log[-2000:]
    r = post(d, "fleet", "h5", report("h5", 1))
    assert r.status_code == 200, r.text
    assert [c["id"] for c in r.json()["commands"]] == ["c1"], r.text
    ch = d.client("ops").json("/api/v1/changes/1")
    assert ch["state"] == "sent" and ch["after"] == [], ch
    assert [d.client("ops").json(f"/api/v1/changes/{i}")["in_doubt"] for i in (2, 3)] == [True, False]
    w = d.client("ops").json("/api/v1/health")["warnings"]
    assert w[0]["tokens"] == ["fleet"]  # not the revoked one
    assert "from version 10 to 11" in log  # and on to the newest
    assert d.client().json("/api/v1/version")["store_schema"] == 15


def test_token_commands_bind_and_list(tmp_path):
    db = str(tmp_path / "t.db")

    def run(*args):
        return subprocess.run([binary("rocefabd"), "--db", db, "token"] + list(args),
                              capture_output=True, text=True, timeout=20)

    r = run("add", "h7", "--role", "agent", "--agent", "h7")
    assert r.returncode == 0 and "for agents h7" in r.stdout and r.stderr.count("warning") == 0
    assert re.fullmatch(r"rfb_[A-Za-z0-9_-]{43}", r.stdout.splitlines()[-1])
    r = run("add", "switches", "--role", "agent", "--agent", "leaf*, spine*", "--agent=tor?")
    assert r.returncode == 0 and "for agents leaf*,spine*,tor?" in r.stdout
    r = run("add", "legacy", "--role", "agent")
    assert r.returncode == 0 and "not bound to agents" in r.stderr
    assert run("add", "viewer", "--role", "viewer").returncode == 0
    # refused: a binding for another role, bad patterns, an empty one
    r = run("add", "v2", "--role", "viewer", "--agent", "h7")
    assert r.returncode == 1 and "AGENTS_NEED_AGENT_ROLE" in r.stderr
    for bad in ("h[1-3]", "h1,,h2", "", "-h", "h 1", "a" * 65):
        r = run("add", "x", "--role", "agent", "--agent", bad)
        assert r.returncode == 2 and "BAD_AGENT_PATTERN" in r.stderr, (bad, r.stderr)
    r = run("add", "x", "--role", "agent", "--agent", ",".join(["h1234567"] * 120))
    assert r.returncode == 2 and "AGENTS_TOO_LONG" in r.stderr
    assert "x" not in run("list").stdout.split()

    r = run("list")
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "ROLE", "CREATED", "REVOKED", "AGENTS"]
    rows = {l.split()[0]: l.split() for l in lines[1:]}
    assert rows["h7"][-1] == "h7"
    assert rows["switches"][-1] == "leaf*,spine*,tor?"
    assert rows["legacy"][-1] == "(unbound)"
    assert rows["viewer"][-1] == "-"

    r = run("bind", "legacy", "--agent", "gpu-a*")
    assert r.returncode == 0 and "gpu-a*" in r.stdout
    assert "(unbound)" not in run("list").stdout
    r = run("bind", "viewer", "--agent", "h1")
    assert r.returncode == 1 and "TOKEN_NOT_FOUND" in r.stderr
    assert run("bind", "legacy").returncode == 2


# --- mutual TLS: api.client_ca ---------------------------------------------------------------

def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(dirname, name):
    key, crt = os.path.join(dirname, f"{name}.key"), os.path.join(dirname, f"{name}.pem")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
            "-keyout", key, "-out", crt)
    return crt, key


def make_cert(dirname, ca, name, subj, san=None):
    """A certificate signed by ca: (cert, key) paths."""
    key, csr, crt = (os.path.join(dirname, f"{name}.{x}") for x in ("key", "csr", "pem"))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subj, "-keyout", key, "-out", csr)
    args = ["x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-days", "2", "-out", crt]
    if san:
        ext = os.path.join(dirname, f"{name}.ext")
        with open(ext, "w") as f:
            f.write(f"subjectAltName={san}\n")
        args += ["-extfile", ext]
    openssl(*args)
    os.chmod(key, 0o600)
    return crt, key


def test_client_certificates_name_the_agent(world):
    """With api.client_ca a report needs a client certificate the CA signed whose subject CN (or
    a DNS subjectAltName) is the agent's id, on top of the bound token: h1's certificate does
    not report as h2 even with a token bound to both; no certificate, or one of another CA, is
    refused; nothing is stored; the real agent with agent.tls_cert reports; readers need none."""
    tmp = world.tmp
    ca = make_ca(tmp, "agents-ca")
    other_ca = make_ca(tmp, "other-ca")
    d = world.daemon()
    server = make_cert(tmp, ca, "server", "/CN=rocefabd", san=f"IP:{d.host}")
    h1 = make_cert(tmp, ca, "h1", "/CN=h1")
    h2_san = make_cert(tmp, ca, "h2", "/CN=not-the-id", san="DNS:h2")
    stranger = make_cert(tmp, other_ca, "stranger", "/CN=h1")
    d.args = ["-o", f"api.tls_cert={server[0]}", "-o", f"api.tls_key={server[1]}",
              "-o", f"api.client_ca={ca[0]}"]
    d.token("both", "agent", agent="h1,h2")
    d.token("viewer", "viewer")
    d.url = d.url.replace("http://", "https://")
    d.start(wait=False)
    wait_for(lambda: __import__("requests").get(d.url + "/api/v1/health", verify=ca[0],
                                                 timeout=2).status_code == 200, 10, what="HTTPS")

    def tls(c, cert=None):
        c.session.verify, c.session.cert = ca[0], cert
        c.session.trust_env = False  # REQUESTS_CA_BUNDLE would win over session.verify
        return c

    def send(cert, url_id, doc):
        c = tls(d.client("both"), cert)
        return c.post(f"/api/v1/agents/{url_id}/report", data=json.dumps(doc),
                      headers={"Content-Type": "application/json"})

    def code(r, status, want):
        assert r.status_code == status, (r.status_code, r.text)
        assert r.headers["Content-Type"].startswith("application/problem+json")
        assert r.json()["code"] == want, r.json()
        return r.json()

    viewer = tls(d.client("viewer"))
    before = viewer.json("/api/v1/agents")
    p = code(send(h1, "h2", report("h2", 1)), 403, "CLIENT_CERT_MISMATCH")
    assert "'h1'" in p["detail"] and "'h2'" in p["detail"], p
    code(send(None, "h1", report("h1", 1)), 403, "CLIENT_CERT_REQUIRED")
    code(send(stranger, "h1", report("h1", 1)), 403, "CLIENT_CERT_INVALID")
    assert viewer.json("/api/v1/agents") == before == {"items": [], "count": 0}
    # the token's binding still holds with a good certificate
    d.token("h1only", "agent", agent="h1")
    c = tls(d.client("h1only"), h2_san)
    refused(c.post("/api/v1/agents/h2/report", data=json.dumps(report("h2", 1)),
                   headers={"Content-Type": "application/json"}), "h1only", "h2")
    # the right certificates: CN, and a DNS subjectAltName
    assert send(h1, "h1", report("h1", 1)).status_code == 200
    assert send(h2_san, "h2", report("h2", 1)).status_code == 200
    # the agent itself, with agent.tls_cert / agent.tls_key
    tree = os.path.join(tmp, "tree")
    from conftest import copy_tree
    copy_tree("stor-b1", tree)
    agent_cert = make_cert(tmp, ca, "stor-b1", "/CN=stor-b1")
    d.token("storb1", "agent", agent="stor-b1")
    world.agent("stor-b1", tree, d.url, os.path.join(tmp, "storb1.token"),
                extra=["-o", f"agent.ca_file={ca[0]}", "-o", f"agent.tls_cert={agent_cert[0]}",
                       "-o", f"agent.tls_key={agent_cert[1]}"]).start()
    wait_for(lambda: viewer.json("/api/v1/agents/stor-b1")["status"] == "ok", 15,
             what="the agent's reports over mutual TLS")


def test_client_ca_needs_https(tmp_path):
    r = subprocess.run([binary("rocefabd"), "--db", str(tmp_path / "x.db"), "--listen",
                        "127.0.0.1:0", "-o", f"api.client_ca={tmp_path}/ca.pem"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and "TLS_INCOMPLETE" in r.stderr and "api.client_ca" in r.stderr


def test_tls_files_that_do_not_fit_are_refused_at_start(tmp_path):
    """A certificate with the key of another pair, a file with no certificate in it, a CA file
    of garbage: rocefabd (--check-config too) and the agent refuse to start, naming the
    configuration key and the file (rocefabd said "cannot listen ... or bad TLS files", its
    reason logged at info; the agent failed every send).  An expired certificate is a warning."""
    t = str(tmp_path)
    a, b = make_ca(t, "a"), make_ca(t, "b")
    junk = os.path.join(t, "junk.pem")
    with open(junk, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    for k in (a[1], b[1]):
        os.chmod(k, 0o600)

    def daemon(cert, key, *extra, check=False):
        return subprocess.run([binary("rocefabd"), "--db", f"{t}/x.db", "--listen", "127.0.0.1:0",
                               "-o", f"api.tls_cert={cert}", "-o", f"api.tls_key={key}", *extra]
                              + (["--check-config"] if check else []),
                              capture_output=True, text=True, timeout=20)
    for check in (False, True):
        r = daemon(a[0], b[1], check=check)
        assert r.returncode == (2 if check else 1) and "TLS_KEY_MISMATCH" in r.stderr, r.stderr
        assert "api.tls_key" in r.stderr and b[1] in r.stderr and a[0] in r.stderr, r.stderr
        assert "LISTEN_FAILED" not in r.stderr
    r = daemon(a[1], a[1])  # the key's file as the certificate
    assert r.returncode == 1 and "TLS_BAD_CERT" in r.stderr and "api.tls_cert" in r.stderr, r.stderr
    cert_as_key = os.path.join(t, "cert-as-key.pem")
    with open(a[0]) as src, open(cert_as_key, "w") as dst:
        dst.write(src.read())
    os.chmod(cert_as_key, 0o600)
    r = daemon(a[0], cert_as_key)  # the certificate's file as the key
    assert r.returncode == 1 and "TLS_BAD_KEY" in r.stderr and "api.tls_key" in r.stderr, r.stderr
    r = daemon(a[0], a[1], "-o", f"api.client_ca={junk}")
    assert r.returncode == 1 and "TLS_BAD_CERT" in r.stderr and "api.client_ca" in r.stderr, r.stderr
    assert junk in r.stderr
    # the pair that fits passes
    assert daemon(a[0], a[1], check=True).returncode == 0
    # an expired certificate (openssl ca: req and x509 take no date in the past)
    key, csr, crt = (os.path.join(t, f"old.{x}") for x in ("key", "csr", "pem"))
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=old", "-keyout", key,
            "-out", csr)
    os.chmod(key, 0o600)
    with open(os.path.join(t, "index.txt"), "w"):
        pass
    with open(os.path.join(t, "serial"), "w") as f:
        f.write("01\n")
    with open(os.path.join(t, "ca.cnf"), "w") as f:
        f.write(f"[ca]\ndefault_ca=d\n[d]\ndatabase={t}/index.txt\nnew_certs_dir={t}\n"
                f"serial={t}/serial\npolicy=p\ndefault_md=sha256\n[p]\ncommonName=supplied\n")
    openssl("ca", "-batch", "-config", os.path.join(t, "ca.cnf"), "-selfsign", "-keyfile", key,
            "-in", csr, "-out", crt, "-startdate", "20200101000000Z", "-enddate", "20200102000000Z")
    r = daemon(crt, key, check=True)
    assert r.returncode == 0 and "TLS_CERT_EXPIRED" in r.stderr and "2020-01-02" in r.stderr, r.stderr

    # the agent
    tok = os.path.join(t, "agent.token")
    with open(tok, "w") as f:
        f.write("rfb_" + "A" * 43)
    os.chmod(tok, 0o600)
    tree = copy_tree("stor-b1", os.path.join(t, "tree"))

    def agent(*opts):
        args = [binary("rocefab-agent"), "--server", "https://127.0.0.1:9", "-o",
                f"agent.token_file={tok}", "--spool-dir", f"{t}/spool", "--sysfs-root", tree]
        for o in opts:
            args += ["-o", o]
        return subprocess.run(args, capture_output=True, text=True, timeout=20)
    r = agent(f"agent.tls_cert={a[0]}", f"agent.tls_key={b[1]}")
    assert r.returncode != 0 and "TLS_KEY_MISMATCH" in r.stderr and "agent.tls_key" in r.stderr, r.stderr
    r = agent(f"agent.tls_cert={a[0]}")  # the key looked for in the certificate's file
    assert r.returncode != 0 and "TLS_BAD_KEY" in r.stderr and "agent.tls_cert" in r.stderr, r.stderr
    r = agent(f"agent.ca_file={junk}")
    assert r.returncode != 0 and "TLS_BAD_CERT" in r.stderr and "agent.ca_file" in r.stderr, r.stderr


@pytest.mark.filterwarnings("ignore:Unverified HTTPS request")  # a self-signed CN that is no address
def test_sighup_with_tls_files_mid_rotation(world):
    """TLS is not reloaded: a key replaced under a running rocefabd (a rotation half done)
    refuses no SIGHUP (the log level still changes), but the log says the next start would."""
    import requests
    import signal
    t = world.tmp
    a, b = make_ca(t, "a"), make_ca(t, "b")
    key = os.path.join(t, "server.key")
    with open(a[1]) as src, open(key, "w") as dst:
        dst.write(src.read())
    os.chmod(key, 0o600)
    d = world.daemon()
    d.args = ["-o", f"api.tls_cert={a[0]}", "-o", f"api.tls_key={key}"]
    d.url = d.url.replace("http://", "https://")
    d.start(wait=False)
    wait_for(lambda: requests.get(d.url + "/api/v1/health", verify=False, timeout=2).status_code == 200, 10,
             what="HTTPS")
    with open(b[1]) as src, open(key, "w") as dst:
        dst.write(src.read())
    with open(d.conf) as f:
        text = f.read()
    with open(d.conf, "w") as f:
        f.write(text.replace("log_level = debug", "log_level = info"))
    d.proc.p.send_signal(signal.SIGHUP)
    wait_for(lambda: "SIGHUP: configuration reloaded" in d.proc.output(), 10, what="the reload")
    out = d.proc.output()
    assert "SIGHUP: daemon.log_level debug -> info" in out and "not reloaded" not in out, out[-2000:]
    said = [x for x in out.splitlines() if "TLS_KEY_MISMATCH" in x]
    assert said and "warning" in said[0] and "next start" in said[0], out[-2000:]


def test_private_keys_others_may_read_are_refused(tmp_path):
    """A TLS private key (api.tls_key, agent.tls_key) follows the token files' rule: one that
    other users may read or write is refused (KEY_FILE_MODE, naming the file and the chmod),
    one its group may read is used with a warning."""
    key, cert = str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)

    def daemon(mode):
        os.chmod(key, mode)
        return subprocess.Popen([binary("rocefabd"), "--db", str(tmp_path / "x.db"), "--listen",
                                 "127.0.0.1:0", "-o", f"api.tls_cert={cert}", "-o",
                                 f"api.tls_key={key}"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    for mode in (0o644, 0o604, 0o602):
        p = daemon(mode)
        out, _ = p.communicate(timeout=20)
        assert p.returncode == 1, out
        assert "KEY_FILE_MODE" in out and f"chmod 600 {key}" in out and f"{mode:04o}" in out, out
    # group-readable: a warning, and rocefabd serves
    p = daemon(0o640)
    try:
        line = warned = ""
        while "listening on" not in line:
            line = p.stdout.readline()
            assert line, "rocefabd exited"
            if "KEY_FILE_MODE" in line:
                warned = line
        assert "warning" in warned and "its group can read" in warned
    finally:
        p.terminate()
        p.communicate(timeout=20)
    # the agent's key, checked before anything is sent
    tok = str(tmp_path / "agent.token")
    with open(tok, "w") as f:
        f.write("rfb_" + "A" * 43)
    os.chmod(tok, 0o600)
    os.chmod(key, 0o644)
    r = subprocess.run([binary("rocefab-agent"), "--server", "https://127.0.0.1:9", "-o",
                        f"agent.token_file={tok}", "-o", f"agent.tls_cert={cert}", "-o",
                        f"agent.tls_key={key}", "--spool-dir", f"{tmp_path}/spool",
                        "--sysfs-root", copy_tree("stor-b1", str(tmp_path / "tree"))],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode != 0 and "KEY_FILE_MODE" in r.stderr and f"chmod 600 {key}" in r.stderr, r.stderr
