"""rocefabd as a process: readiness notification, shutdown that keeps every acknowledged
report, configuration errors, the token commands, and the agent's command line."""
import datetime
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests

from conftest import HOSTS, ROOT, Agent, Daemon, binary, copy_tree, switch_report, wait_for, write_counter, write_secret

REPORT = os.path.join(ROOT, "tests", "data", "reports", "good", "stor-b1.json")


def test_sd_notify_ready(world):
    d = world.daemon()
    sock_path = os.path.join(world.tmp, "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(10)
    env = dict(os.environ, NOTIFY_SOCKET=sock_path)
    d.start(env=env, wait=False)
    msg = s.recv(4096).decode()
    assert "READY=1" in msg and d.url in msg
    # by then it answers
    assert requests.get(d.url + "/api/v1/health", timeout=2).status_code == 200
    d.proc.p.send_signal(signal.SIGTERM)
    assert "STOPPING=1" in s.recv(4096).decode()
    assert d.proc.p.wait(10) == 0
    assert "database closed" in d.proc.output()
    s.close()


def test_sigterm_keeps_every_acknowledged_report(world):
    d = world.daemon()
    tok, _ = d.token("agent", "agent", agent="load-*")
    d.token("viewer", "viewer")
    d.start()
    with open(REPORT) as f:
        base = json.load(f)
    acked = []
    stop = threading.Event()

    def sender(n):
        s = requests.Session()
        s.headers.update({"Authorization": f"Bearer {tok}", "Content-Type": "application/json"})
        seq = 0
        while not stop.is_set():
            seq += 1
            doc = json.loads(json.dumps(base))
            doc["agent"]["id"] = f"load-{n}"
            doc["agent"]["boot_id"] = f"boot-{n}"
            doc["seq"] = seq
            for i, smp in enumerate(doc["samples"]):
                smp["t_ns"] = 1764514194900000000 + seq * 1000000000 + i
            try:
                r = s.post(f"{d.url}/api/v1/agents/load-{n}/report", data=json.dumps(doc), timeout=5)
            except requests.RequestException:
                return
            if r.status_code == 200:
                acked.append((n, seq))
    threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) > 200, 20, what="reports flowing")
    d.proc.p.send_signal(signal.SIGTERM)
    rc = d.proc.p.wait(15)
    assert rc == 0, d.proc.output()[-4000:]
    stop.set()
    for t in threads:
        t.join()
    d.start()
    agents = {a["id"]: a for a in d.client("viewer").json("/api/v1/agents")["items"]}
    for n in range(4):
        got = [s for m, s in acked if m == n]
        if got:
            # every acknowledged report is there (reports are sequential per agent)
            assert agents[f"load-{n}"]["reports"] >= max(got)
            assert agents[f"load-{n}"]["seq"] >= max(got)


def run(*args, **kw):
    return subprocess.run([binary("rocefabd")] + list(args), capture_output=True, text=True, **kw)


def test_configuration_errors(tmp_path):
    conf = tmp_path / "r.conf"
    conf.write_text("[api]\nlisten = 127.0.0.1:9\n\n[store]\nretention = forever\n")
    r = run("--config", str(conf), "--check-config")
    assert r.returncode == 2
    assert f"{conf}:5" in r.stderr and "retention" in r.stderr and "CONF_BAD_VALUE" in r.stderr
    conf.write_text("[api]\nlisten = 127.0.0.1:9\nlisen = x\n")
    r = run("--config", str(conf), "--check-config")
    assert r.returncode == 2 and f"{conf}:3" in r.stderr and "lisen" in r.stderr
    r = run("--config", str(tmp_path / "missing.conf"))
    assert r.returncode == 2 and "missing.conf" in r.stderr
    # flags override the file; -o reaches any key
    conf.write_text("[api]\nlisten = 127.0.0.1:9\nthreads = 3\n")
    r = run("--config", str(conf), "--listen", "127.0.0.5:7000", "-o", "store.retention=2d",
            "--dump-config")
    assert r.returncode == 0
    assert "listen = 127.0.0.5:7000" in r.stdout and "threads = 3" in r.stdout
    assert "retention = 2d" in r.stdout
    r = run("-o", "api.threads=0", "--check-config")
    assert r.returncode == 2 and "out of range" in r.stderr
    r = run("-o", "nonsense", "--check-config")
    assert r.returncode == 2
    # each coarser kind of data kept at least as long as the finer: the values said
    r = run("-o", "store.retention=6h", "-o", "store.retention_1m=2h", "--check-config")
    assert r.returncode == 2 and "BAD_RETENTION" in r.stderr and "2h, less than store.retention (6h)" in r.stderr, \
        r.stderr
    r = run("-o", "store.retention_1h=1d", "--check-config")
    assert r.returncode == 2 and "1d, less than store.retention_1m (14d)" in r.stderr, r.stderr
    assert run("--help").returncode == 0 and "token add" in run("--help").stdout
    assert "api.listen" in run("--help-config").stdout
    r = run("--bogus-flag")
    assert r.returncode == 2
    # a configuration file any user may write is refused (by the agent too: the same reader);
    # one any user may read is fine (it holds no secrets)
    conf.write_text("[api]\nlisten = 127.0.0.1:9\n")
    for m in (0o666, 0o602):
        os.chmod(conf, m)
        r = run("--config", str(conf), "--check-config")
        assert r.returncode == 2 and "CONF_FILE_MODE" in r.stderr and f"chmod o-w {conf}" in r.stderr, r.stderr
    r = subprocess.run([binary("rocefab-agent"), "--config", str(conf), "--once"], capture_output=True, text=True)
    assert r.returncode == 2 and "CONF_FILE_MODE" in r.stderr, r.stderr
    os.chmod(conf, 0o644)
    assert run("--config", str(conf), "--check-config").returncode == 0


def test_example_configurations_carry_every_key():
    """packaging/rocefabd.conf and rocefab-agent.conf name every key the programs take (set or
    commented out), and none they do not: README calls them examples with every key (the
    daemon's lacked [remote_write])."""
    def help_keys(prog):
        out = subprocess.run([binary(prog), "--help-config"], capture_output=True, text=True,
                             check=True, timeout=10).stdout
        return {l.split()[0] for l in out.splitlines() if re.match(r"^  [a-z_]+\.[a-z_0-9]+\s", l)}

    def example_keys(path):
        section, keys = None, set()
        with open(path) as f:
            for line in f:
                m = re.match(r"^\[([a-z_]+)\]", line)
                if m:
                    section = m.group(1)
                elif (m := re.match(r"^#?([a-z_0-9]+)\s*=", line)) and section:
                    keys.add(f"{section}.{m.group(1)}")
        return keys
    for prog, conf in (("rocefabd", "rocefabd.conf"), ("rocefab-agent", "rocefab-agent.conf")):
        want, have = help_keys(prog), example_keys(os.path.join(ROOT, "packaging", conf))
        assert len(want) > 20, want
        assert want - have == set(), f"{conf} lacks {sorted(want - have)}"
        assert have - want == set(), f"{conf} names keys {prog} does not take: {sorted(have - want)}"


def test_listen_errors(world):
    d = world.daemon()
    d.start()
    # the same address twice
    d2 = world.daemon(name="second")
    with open(d2.conf, "a") as f:
        f.write(f"[api]\n")
    r = run("--db", d2.db, "--listen", f"{d.host}:{d.port}")
    assert r.returncode == 1 and "LISTEN_FAILED" in r.stderr
    r = run("--db", d2.db, "--listen", "nowhere")
    assert r.returncode == 1 and "BAD_LISTEN" in r.stderr
    r = run("--db", "/proc/no/such/dir/x.db", "--listen", "127.0.0.1:0")
    assert r.returncode == 1 and "x.db" in r.stderr


def test_token_commands(tmp_path):
    db = str(tmp_path / "t.db")
    r = run("--db", db, "token", "add", "ops", "--role", "operator")
    assert r.returncode == 0
    # a new database is made in one line, not one per migration (a trial read 15 of them)
    assert r.stderr.count("creating the database schema (version ") == 1 and "migrating" not in r.stderr, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[-1].startswith("rfb_") and len(lines[-1]) == 47  # alone on the last line
    r = run("--db", db, "token", "add", "ops", "--role", "viewer")
    assert r.returncode == 1 and "TOKEN_EXISTS" in r.stderr
    r = run("--db", db, "token", "add", "x", "--role", "root")
    assert r.returncode == 2 and "unknown role" in r.stderr
    r = run("--db", db, "token", "add", "x")
    assert r.returncode == 2
    r = run("--db", db, "token", "list")
    assert "ops" in r.stdout and "operator" in r.stdout and lines[-1] not in r.stdout
    assert run("--db", db, "token", "revoke", "ops").returncode == 0
    r = run("--db", db, "token", "revoke", "ops")
    assert r.returncode == 1 and "TOKEN_NOT_FOUND" in r.stderr
    assert run("--db", db, "token", "frobnicate").returncode == 2


def test_agent_command_line(tmp_path):
    agent = binary("rocefab-agent")
    r = subprocess.run([agent, "--server", "http://127.0.0.1:1", "--token-file",
                        str(tmp_path / "none"), "--spool-dir", str(tmp_path / "s")],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0 and "TOKEN_UNREADABLE" in r.stderr
    write_secret(str(tmp_path / "tok"), "rfb_x\n")
    r = subprocess.run([agent, "--server", "ftp://x", "--token-file", str(tmp_path / "tok"),
                        "--spool-dir", str(tmp_path / "s")], capture_output=True, text=True,
                       timeout=10)
    assert r.returncode != 0 and "BAD_SERVER_URL" in r.stderr
    r = subprocess.run([agent, "--once", "--sysfs-root", str(tmp_path / "nothing")],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0 and "BAD_SYSFS_ROOT" in r.stderr
    r = subprocess.run([agent, "--once", "--id", "bad id!"], capture_output=True, text=True)
    assert r.returncode == 2 and "BAD_AGENT_ID" in r.stderr
    r = subprocess.run([agent, "--once", "-o", "agent.interval=0s"], capture_output=True, text=True)
    assert r.returncode == 2 and "agent.interval" in r.stderr
    r = subprocess.run([agent, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--sysfs-root" in r.stdout
    # an empty tree (no RDMA at all) is not an error: the report says so
    empty = tmp_path / "empty"
    empty.mkdir()
    r = subprocess.run([agent, "--once", "--id", "bare", "--sysfs-root", str(empty),
                        "-o", "linux.devices=mlx5_0"], capture_output=True, text=True, check=True)
    doc = json.loads(r.stdout)
    assert doc["inventory"] == {"devices": [], "absent": ["mlx5_0"]}
    # ... but a tree with no sys/class at all is said (a wrong directory reported nothing)
    assert "holds neither sys/class/net nor sys/class/infiniband" in r.stderr, r.stderr
    # a recorded tree's sys directory instead of its root
    tree = copy_tree("stor-b1", str(tmp_path / "tree"))
    r = subprocess.run([agent, "--once", "--sysfs-root", os.path.join(tree, "sys")],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0 and "BAD_SYSFS_ROOT" in r.stderr and "is a sys directory" in r.stderr, r.stderr
    r = subprocess.run([agent, "--once", "--sysfs-root", tree], capture_output=True, text=True,
                       timeout=10, check=True)
    assert "holds neither" not in r.stderr and json.loads(r.stdout)["inventory"]["devices"]


def test_agent_live_backend_in_a_namespace(tmp_path):
    """The live path (rtnetlink, ethtool ioctls) on a veth inside a test namespace."""
    ns = f"rfb-live-{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode != 0:
        pytest.skip("cannot create network namespaces here")
    try:
        subprocess.run(["ip", "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
                       check=True)
        for dev in ("lo", "v0", "v1"):
            subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
        r = subprocess.run(["ip", "netns", "exec", ns, binary("rocefab-agent"), "--once", "--id",
                            "ns-host", "-o", "linux.interfaces=v0,lo,missing0", "-o",
                            "agent.all_counters=true"], capture_output=True, text=True, check=True)
        doc = json.loads(r.stdout)
        devs = {dd["name"]: dd for dd in doc["inventory"]["devices"]}
        assert devs["v0"]["ports"][0]["state"] == "up"
        assert devs["v0"]["ports"][0]["speed_mbps"] == 10000  # veth reports 10G via ethtool
        assert doc["inventory"]["absent"] == ["missing0"]
        srcs = {(s["device"], s["source"]): s["values"] for s in doc["samples"]}
        assert "rx_bytes" in srcs[("v0", "netdev")]
        assert "peer_ifindex" in srcs[("v0", "ethtool")]  # ETHTOOL_GSTATS of veth
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_https_with_agents(world):
    """api.tls_cert/tls_key serve HTTPS; agents verify the certificate with agent.ca_file."""
    cert, key = os.path.join(world.tmp, "cert.pem"), os.path.join(world.tmp, "key.pem")
    d = world.daemon()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=rocefab-test", "-addext", f"subjectAltName=IP:{d.host}",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    with open(d.conf, "a") as f:
        f.write(f"[api]\n")
    d.args = ["-o", f"api.tls_cert={cert}", "-o", f"api.tls_key={key}"]
    d.token("agents", "agent", agent="stor-b1,untrusting")
    tok, _ = d.token("viewer", "viewer")
    d.url = d.url.replace("http://", "https://")
    d.proc = None
    d.start(wait=False)
    wait_for(lambda: requests.get(d.url + "/api/v1/health", verify=cert, timeout=2).status_code == 200,
             10, what="HTTPS")
    # plain HTTP on the TLS port does not work, and what the TLS library says of it goes
    # through rocefabd's logger (a timestamped line naming the library), never raw to stderr
    with pytest.raises(requests.RequestException):
        requests.get(d.url.replace("https://", "http://") + "/api/v1/health", timeout=2)
    wait_for(lambda: "api: libmicrohttpd: " in d.proc.output(), 10,
             what="the TLS library's message in the log")
    logline = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z rocefabd\[\d+\] [a-z]+ +\w+: ")
    stray = [l for l in d.proc.output().splitlines() if l and not logline.match(l)]
    assert not stray, f"lines outside the logger: {stray}"
    tree = copy_tree("stor-b1", os.path.join(world.tmp, "tree"))
    world.agent("stor-b1", tree, d.url, os.path.join(world.tmp, "agents.token"),
                extra=["-o", f"agent.ca_file={cert}"]).start()
    hosts = wait_for(lambda: requests.get(d.url + "/api/v1/hosts", verify=cert, timeout=2,
                                          headers={"Authorization": f"Bearer {tok}"}).json()["count"] == 1,
                     10, what="a report over HTTPS")
    # an agent that does not trust the certificate spools instead of sending, and says why
    world.agent("untrusting", tree, d.url, os.path.join(world.tmp, "agents.token")).start()
    wait_for(lambda: world.agents[-1].spooled() >= 1, 10, what="the untrusting agent to spool")
    assert "TLS_FAILED" in world.agents[-1].proc.output()


def test_check_config_warns_of_a_database_directory_not_there(tmp_path):
    """--check-config said "configuration OK" of a store.db whose directory is not there, and the
    start failed; now it warns (still OK: a configuration may be checked before the package
    makes the directory, or on another machine)."""
    r = run("-o", f"store.db={tmp_path}/none/x.db", "--check-config")
    assert r.returncode == 0 and "configuration OK" in r.stdout, r.stdout + r.stderr
    assert f"warning: store.db: {tmp_path}/none/x.db: its directory {tmp_path}/none: No such file" in r.stderr, r.stderr
    r = run("-o", f"store.db={tmp_path}/x.db", "--check-config")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_a_directory_is_no_configuration_or_token_file(tmp_path):
    """A directory given as the configuration or a token file is said to be one (it read as a
    file others may write, or read: "chmod o-w")."""
    r = run("--config", str(tmp_path), "--check-config")
    assert r.returncode == 2 and "a directory, not a configuration file" in r.stderr, r.stderr
    r = subprocess.run([binary("rocefabctl"), "-s", "http://127.0.0.1:9", "-t", str(tmp_path), "health"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "a directory, not a token file" in r.stderr, r.stderr


def test_an_agent_tls_file_not_there_is_said_at_its_start(tmp_path):
    """agent.ca_file (or its certificate or key) not there: said at the start, naming the key and
    the path (it started, and its first report failed with "Problem with the SSL CA cert (path?
    access rights?)")."""
    tok = tmp_path / "t"
    tok.write_text("x\n")
    os.chmod(tok, 0o600)
    for key in ("agent.ca_file", "agent.tls_cert"):
        r = subprocess.run([binary("rocefab-agent"), "-s", "https://127.0.0.1:9", "-t", str(tok), "-o",
                            f"{key}={tmp_path}/none.pem", "-o", f"agent.spool_dir={tmp_path}/spool"],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and f"{key}: {tmp_path}/none.pem: No such file or directory [TLS_FILE_UNREADABLE]" \
            in r.stderr, (key, r.stderr)


def test_the_agent_logs_collection_errors_as_they_come_and_go(world):
    """A counter file of garbage: the agent's own log says so once (rocefabd had it in the
    report's errors; the host's log had nothing), not at every report, and says when it is
    gone."""
    d = world.daemon()
    _, tok = d.token("agent", "agent", agent="stor-b1")
    d.token("viewer", "viewer")
    d.start()
    tree = copy_tree("stor-b1", os.path.join(world.tmp, "tree"))
    bad = os.path.join(tree, "sys/class/infiniband/rxe0/ports/1/hw_counters/send_err")
    write_counter(bad, "garbage")
    ag = world.agent("stor-b1", tree, d.url, tok, interval="0.2s").start()
    viewer = d.client("viewer")

    def reports():
        r = viewer.get("/api/v1/agents/stor-b1")
        return r.json()["reports"] if r.status_code == 200 else 0
    wait_for(lambda: reports() >= 5, 15, what="five reports")
    log = ag.proc.output()
    said = [ln for ln in log.splitlines() if "SYSFS_GARBAGE" in ln]
    assert len(said) == 1, log[-3000:]
    assert "warning" in said[0] and "stor-b1" in said[0] and bad in said[0] and "garbage" in said[0]
    assert "no longer" not in log
    write_counter(bad, "7")
    wait_for(lambda: "no longer: SYSFS_GARBAGE" in ag.proc.output(), 15, what="the error gone")
    assert bad in [ln for ln in ag.proc.output().splitlines() if "no longer" in ln][0]


def test_one_rocefabd_per_database(world):
    """A second rocefabd on a database in use is refused, naming the first's pid (a trial ran
    two on one database: both ran their passes, the detector and the tuner over the same
    data); the first goes on; once it stopped, the database is free again."""
    d = world.daemon().start()
    r = run("--db", d.db, "--listen", "127.0.0.1:0")
    assert r.returncode == 1 and "STORE_IN_USE" in r.stderr and f"(pid {d.proc.p.pid})" in r.stderr, r.stderr
    assert d.client().get("/api/v1/health").status_code == 200
    assert d.stop() == 0
    d.start()  # (the lock went with the first process)
    assert d.client().get("/api/v1/health").status_code == 200


def test_tls_config_errors(tmp_path):
    r = run("--db", str(tmp_path / "x.db"), "--listen", "127.0.0.1:0", "-o",
            f"api.tls_cert={tmp_path}/none.pem")
    assert r.returncode == 1 and "TLS_INCOMPLETE" in r.stderr
    r = run("--db", str(tmp_path / "x.db"), "--listen", "127.0.0.1:0", "-o",
            f"api.tls_cert={tmp_path}/none.pem", "-o", f"api.tls_key={tmp_path}/none.pem")
    assert r.returncode == 1 and "none.pem" in r.stderr
    # --check-config says what the start would refuse (it once said "configuration OK")
    for opts, code in (([f"api.tls_cert={tmp_path}/none.pem"], "TLS_INCOMPLETE"),
                       ([f"api.tls_cert={tmp_path}/none.pem", f"api.tls_key={tmp_path}/none.pem"], "KEY_UNREADABLE"),
                       ([f"api.client_ca={tmp_path}/ca.pem"], "TLS_INCOMPLETE"),
                       (["api.listen=127.0.0.1:http-nope"], "BAD_LISTEN"),
                       # (getaddrinfo took it, and rocefabd listened on 99999 mod 65536)
                       (["api.listen=127.0.0.1:99999"], "the port must be a number from 0 to 65535"),
                       # (it made no detector pass at all: "cannot start: Invalid argument")
                       (["detector.interval=1ns"], "detector.interval: 1ns: 0 (off) or at least 10ms"),
                       # (a decision every millisecond, on no new reading: an operator's trial)
                       (["cc.interval=1ms"], "cc.interval: 1ms: 0 (off) or at least detector.interval (200ms)")):
        r = run("--check-config", *[a for o in opts for a in ("-o", o)])
        assert r.returncode == 2 and code in r.stderr and "configuration OK" not in r.stdout, (opts, r.stderr)


def mode(path):
    return os.stat(path).st_mode & 0o7777


def test_database_and_spool_are_their_owners_alone(world):
    """The database (and its -wal and -shm) was created 0644, readable by every local user; the
    agent's spool 0750/0640.  Now 0600 files in a 0700 spool, whatever the umask; an existing
    database open to others is used as it is, with a warning at start-up."""
    old = os.umask(0o022)
    try:
        d = world.daemon()
        d.token("agents", "agent")
        d.token("viewer", "viewer")
        d.start()
        tree = copy_tree("stor-b1", os.path.join(world.tmp, "tree"))
        ag = world.agent("stor-b1", tree, "http://127.0.0.1:1", os.path.join(world.tmp, "agents.token"),
                         interval="0.2s").start()  # nobody there: reports go to the spool
        wait_for(lambda: ag.spooled() >= 1, 10, what="a spooled report")
        with open(REPORT) as f:
            r = d.client("agents").post("/api/v1/agents/stor-b1/report", data=f.read(),
                                        headers={"Content-Type": "application/json"})
        assert r.status_code == 200
        for suffix in ("", "-wal", "-shm"):
            assert mode(d.db + suffix) == 0o600, (suffix, oct(mode(d.db + suffix)))
        assert mode(ag.spool) == 0o700
        for f in os.listdir(ag.spool):
            assert mode(os.path.join(ag.spool, f)) == 0o600, f
        assert "STORE_FILE_MODE" not in d.proc.output()

        # an existing database open to others: a warning naming it, and its mode stays
        d.stop()
        os.chmod(d.db, 0o644)
        d.start()
        assert mode(d.db) == 0o644
        out = d.proc.output()
        assert "STORE_FILE_MODE" in out and d.db in out and "chmod 600" in out, out[-2000:]
    finally:
        os.umask(old)


def test_agent_refuses_a_token_file_others_can_read(world):
    """The agent only warned about a world-readable token file; now others reading or writing it
    is refused (TOKEN_FILE_MODE, naming the file and chmod 600), its group reading it warned
    about.  rocefab-sim serve reads its token the same way."""
    d = world.daemon()
    tok, path = d.token("agents", "agent")
    d.start()
    tree = copy_tree("stor-b1", os.path.join(world.tmp, "tree"))
    for m in (0o644, 0o604, 0o602):
        os.chmod(path, m)
        r = subprocess.run([binary("rocefab-agent"), "--id", "stor-b1", "--sysfs-root", tree, "--server", d.url,
                            "--token-file", path, "--spool-dir", os.path.join(world.tmp, "s")],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode != 0 and "TOKEN_FILE_MODE" in r.stderr and f"chmod 600 {path}" in r.stderr, r.stderr
        r = subprocess.run([binary("rocefab-sim"), "serve", os.path.join(ROOT, "sim", "scenarios", "demo.json"),
                            "--control", "127.0.0.1:0", "--agents", d.url, "--token-file", path,
                            "--spool-dir", os.path.join(world.tmp, "sim-s"), "--quiet"],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and "TOKEN_FILE_MODE" in r.stderr, r.stderr
    os.chmod(path, 0o640)
    d.token("viewer", "viewer")
    ag = world.agent("stor-b1", tree, d.url, path, interval="0.2s").start()
    wait_for(lambda: d.client("viewer").json("/api/v1/agents")["count"] == 1, 10, what="the agent reporting")
    out = ag.proc.output()
    assert "TOKEN_FILE_MODE" in out and "its group can read" in out, out[-2000:]


def test_an_agent_keeps_its_reports_while_its_token_is_refused(world):
    """A token revoked (or bound to another agent) is an operator's mistake, mended by writing a
    good token into the agent's token file: meanwhile the agent spools its reports (it dropped
    them, and read its token file only at start), reads the file again before each try, and
    sends them all once rocefabd takes the new token."""
    d = world.daemon()
    _, path = d.token("agents", "agent")
    d.token("viewer", "viewer")
    d.start()
    v = d.client("viewer")
    tree = copy_tree("stor-b1", os.path.join(world.tmp, "tree"))
    ag = world.agent("stor-b1", tree, d.url, path, interval="0.2s").start()
    wait_for(lambda: v.json("/api/v1/agents")["count"] == 1, 10, what="the agent reporting")
    r = subprocess.run([binary("rocefabd"), "--config", d.conf, "token", "revoke", "agents"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    wait_for(lambda: "the token file is read again before each try" in ag.proc.output(), 10,
             what="the agent spooling")
    wait_for(lambda: ag.spooled() >= 3, 10, what="reports spooled while the token is refused")
    # another cause while down (a token bound to another agent): said too (the host's log kept
    # only the first, INVALID_TOKEN)
    tok_other, _ = d.token("other", "agent", agent="other-x")
    write_secret(path, tok_other + "\n")
    wait_for(lambda: "still cannot deliver reports, now:" in ag.proc.output() and "AGENT_NOT_BOUND" in ag.proc.output(),
             15, what="the new cause said")
    seq = v.json("/api/v1/agents/stor-b1")["seq"]
    # the token file opened to others meanwhile (a copy made with umask 022): refused as at
    # start, and said once
    os.chmod(path, 0o644)
    wait_for(lambda: "TOKEN_FILE_MODE" in ag.proc.output() and "the token in use stays" in ag.proc.output(), 15,
             what="the open token file said")
    tok2, _ = d.token("agents2", "agent")
    write_secret(path, tok2 + "\n")  # (0600 again)
    wait_for(lambda: "holds another token: using it" in ag.proc.output(), 15, what="the new token taken")
    assert ag.proc.output().count("the token in use stays") == 1
    # every report made meanwhile arrived: as many stored as the agent made
    a = wait_for(lambda: (lambda a: a if a["seq"] > seq + 3 and a["reports"] == a["seq"] else None)(
        v.json("/api/v1/agents/stor-b1")), 20, what="the spooled reports delivered")
    assert "refused a report for good" not in ag.proc.output(), a
    # each line says its code once (it ended "[INVALID_TOKEN] (...) [INVALID_TOKEN]")
    line = next(x for x in ag.proc.output().splitlines() if "cannot deliver reports" in x)
    assert line.count("INVALID_TOKEN") == 1, line


@pytest.mark.parametrize("case", ["known", "bound", "forgotten"])
def test_reports_spooled_under_a_former_id(world, case):
    """An agent whose id is changed (agent.id, then a restart) finds in its spool the reports
    it made under the old one.  They go as the old id, as replays (?replay=true: no commands,
    the old id not seen now): posted as the new one, rocefabd refused each (400
    AGENT_ID_MISMATCH) and they were dropped.  A token bound to the new id alone refuses them
    (403 AGENT_NOT_BOUND), and an old id forgotten meanwhile is not made anew (404
    UNKNOWN_AGENT): dropped and said, and they do not hold up the new id's."""
    d = world.daemon()
    _, path = d.token("agents", "agent", agent="new-b1" if case == "bound" else None)
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    d.start()
    v = d.client("viewer")
    tree = copy_tree("stor-b1", os.path.join(world.tmp, "tree"))
    old = world.agent("old-b1", tree, d.url, path, interval="0.2s").start()
    if case != "bound":  # (bound: every report of the old id refused, 403, and spooled)
        wait_for(lambda: v.get("/api/v1/agents/old-b1").status_code == 200, 10, what="the old id known")
        d.stop()
    wait_for(lambda: old.spooled() >= 3, 10, what="reports spooled under the old id")
    old.stop()
    stopped = time.time()
    spooled = old.spooled()
    if case != "bound":
        d.start()
        before = v.json("/api/v1/agents/old-b1")
    if case == "forgotten":
        wait_for(lambda: v.json("/api/v1/agents/old-b1")["status"] == "stale", 10, what="the old id stale")
        assert d.client("ops").delete("/api/v1/agents/old-b1").status_code == 200
    new = Agent(world.tmp, "new-b1", tree, d.url, path, interval="0.2s")
    new.spool = old.spool  # the same spool directory, as agent.spool_dir stays
    new.args[new.args.index("--spool-dir") + 1] = old.spool
    world.agents.append(new.start())
    wait_for(lambda: new.spooled() == 0, 20, what="the spool emptied")
    wait_for(lambda: v.json("/api/v1/agents/new-b1")["reports"] >= 2, 10, what="the new id reporting")
    out = new.proc.output()
    assert "AGENT_ID_MISMATCH" not in out, out[-3000:]
    agents = {a["id"]: a for a in v.json("/api/v1/agents")["items"]}
    if case == "known":
        # replays: stored, but the old id is not seen now: last seen when its reports were
        # made, before rocefabd started again (it stays stale: no agent-down alert cleared and
        # raised again)
        a = agents["old-b1"]
        seen = datetime.datetime.fromisoformat(a["last_seen"].replace("Z", "+00:00")).timestamp()
        assert a["reports"] + a["duplicates"] == before["reports"] + before["duplicates"] + spooled, (a, before)
        assert seen <= stopped, (a, stopped)
        assert "refused a report" not in out, out[-3000:]
    else:
        assert "old-b1" not in agents, agents
        code = "AGENT_NOT_BOUND" if case == "bound" else "UNKNOWN_AGENT"
        assert "refused a report spooled as 'old-b1' for good" in out and code in out, out[-3000:]


def test_two_agents_as_one_id_the_second_is_refused(world):
    """A host cloned from another keeps its host name, the default agent.id: two agents report
    as one id, their reports taking turns.  rocefabd noticed nothing, and counted each switch
    as a reboot (a counter's whole value as traffic, the two hosts' counters in one series).
    Now the second is refused (409 AGENT_ID_SHARED, in its log) and /health names the id; the
    first goes on, and its reports are all stored."""
    d = world.daemon()
    _, path = d.token("agents", "agent", agent="stor-b1")
    d.token("viewer", "viewer")
    d.start()
    v = d.client("viewer")
    first = world.agent("stor-b1", copy_tree("stor-b1", os.path.join(world.tmp, "tree")), d.url, path,
                        interval="0.2s").start()
    a = wait_for(lambda: (lambda a: a if a["reports"] >= 2 else None)(v.json("/api/v1/agents/stor-b1")), 10,
                 what="the first agent reporting")
    boot = a["boot_id"]
    os.makedirs(os.path.join(world.tmp, "clone"))
    clone = Agent(os.path.join(world.tmp, "clone"), "stor-b1",
                  copy_tree("stor-b1", os.path.join(world.tmp, "clone", "tree")), d.url, path, interval="0.2s")
    world.agents.append(clone)
    clone.start()
    wait_for(lambda: "AGENT_ID_SHARED" in clone.proc.output(), 15, what="the clone refused")
    # how long the id has been shared, once it is a second or more (the first said "for 0 s")
    assert "reports as 'stor-b1' too" in clone.proc.output() and "for 0 s" not in clone.proc.output()
    w = wait_for(lambda: [x for x in d.client("viewer").json("/api/v1/health")["warnings"]
                          if x["code"] == "AGENT_ID_SHARED"] or None, 5, what="the health warning")
    assert w[0]["agents"][0]["agent"] == "stor-b1" and w[0]["agents"][0]["held_by"] == boot, w
    assert "another agent.id" in d.proc.output()
    # the first one goes on, as the agent's boot, every report of its stored
    before = v.json("/api/v1/agents/stor-b1")
    a = wait_for(lambda: (lambda a: a if a["reports"] > before["reports"] + 3 else None)(
        v.json("/api/v1/agents/stor-b1")), 10, what="the first agent going on")
    assert a["boot_id"] == boot
    assert "AGENT_ID_SHARED" not in first.proc.output()


def test_an_agent_gone_for_good_is_forgotten(world):
    """A host retired stayed a stale agent for ever (rocefab_agent_up 0: an agent-down alert that
    never clears).  DELETE /api/v1/agents/{id} (rocefabctl forget) forgets it with its ports and
    their data, once it is stale and no change to it is open; the audit log keeps its history,
    and a later report makes it anew."""
    d = world.daemon(args=("-o", "agents.stale_after=2", "-o", "changes.deadline=1s"))
    _, path = d.token("agents", "agent", agent="stor-b1,sw9")
    d.token("ops", "operator")
    d.token("viewer", "viewer")
    d.start()
    v, ops = d.client("viewer"), d.client("ops")
    tree = copy_tree("stor-b1", os.path.join(world.tmp, "tree"))
    ag = world.agent("stor-b1", tree, d.url, path, interval="0.2s").start()
    wait_for(lambda: v.json("/api/v1/agents/stor-b1")["samples"] > 0, 10, what="stor-b1 reporting")
    r = ops.delete("/api/v1/agents/stor-b1")
    assert r.status_code == 409 and r.json()["code"] == "AGENT_ACTIVE", r.text
    assert v.delete("/api/v1/agents/stor-b1").status_code == 403
    assert ops.delete("/api/v1/agents/nobody").json()["code"] == "UNKNOWN_AGENT"
    assert all(w["code"] != "AGENTS_STALE" for w in v.json("/api/v1/health")["warnings"])
    assert 'rocefab_link_up{host="stor-b1",' in v.get("/metrics").text
    ag.stop()
    wait_for(lambda: v.json("/api/v1/agents/stor-b1")["status"] == "stale", 10, interval=0.1, what="stale")
    # every agent is stale (the only one): /health says so
    w = [w for w in v.json("/api/v1/health")["warnings"] if w["code"] == "AGENTS_STALE"]
    assert len(w) == 1 and w[0]["count"] == 1 and "agents.stale_after" in w[0]["detail"], w
    # a stale agent's ports are no gauge of now: none in /metrics
    assert "rocefab_link_up{" not in v.get("/metrics").text
    env = dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN_FILE=os.path.join(d.workdir, "ops.token"))
    out = subprocess.run([binary("rocefabctl"), "forget", "stor-b1"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("forgot agent stor-b1: 1 ports, "), out.stdout + out.stderr
    assert v.get("/api/v1/agents/stor-b1").status_code == 404
    assert all(h["id"] != "stor-b1" for h in v.json("/api/v1/hosts")["items"])
    assert 'stor-b1' not in v.get("/metrics").text
    assert "agent stor-b1 forgotten by ops" in d.proc.output()
    # a switch with a change still on its way to it: refused until that is settled (here it
    # times out unsent)
    assert d.client("agents").post("/api/v1/agents/sw9/report", json=switch_report(
        "sw9", 1, [{"queue": 3, "kmin_bytes": 100000, "kmax_bytes": 400000, "pmax": 0.1}])).status_code == 200
    cid = ops.put("/api/v1/switches/sw9/ports/p1/queues/3/ecn", json={"kmin_bytes": 50000}).json()["changes"][0]["id"]
    wait_for(lambda: v.json("/api/v1/agents/sw9")["status"] == "stale", 10, interval=0.1, what="sw9 stale")
    # its ports' states are as it last reported them, and say so
    assert [p["stale"] for p in v.json("/api/v1/switches/sw9")["port_list"]] == [True]
    r = ops.delete("/api/v1/agents/sw9")
    assert r.status_code == 409 and r.json()["code"] == "CHANGES_OPEN" and "settle" in r.json()["detail"], r.text
    wait_for(lambda: v.json(f"/api/v1/changes/{cid}")["state"] == "timed_out", 30, interval=0.5, what="timed out")
    assert ops.delete("/api/v1/agents/sw9").json() == {"forgotten": "sw9", "ports": 1, "rows": 5}
    assert v.json("/api/v1/changes?agent=sw9")["items"][0]["id"] == cid  # the audit log keeps it
    # back: anew
    ag.start()
    wait_for(lambda: v.get("/api/v1/agents/stor-b1").status_code == 200, 10, what="stor-b1 anew")


def test_sighup_reloads_what_can_change(world):
    """SIGHUP: the log level and agents.stale_after take effect without a restart, a key that
    cannot change at run time is named, a broken file changes nothing; a revoked token is refused
    within the token cache's life; an agent reporting all along loses no report."""
    d = world.daemon()
    _, atok = d.token("agents", "agent", agent="stor-b1")
    _, vtok = d.token("viewer", "viewer")
    d.token("gone", "viewer")
    d.start()
    tree = copy_tree("stor-b1", os.path.join(world.tmp, "tree"))
    world.agent("stor-b1", tree, d.url, atok, interval="0.2s").start()
    c = d.client("viewer")
    wait_for(lambda: c.json("/api/v1/agents")["count"] == 1 and c.json("/api/v1/agents/stor-b1")["seq"] >= 3, 10,
             what="reports")
    assert " debug   api: " in d.proc.output()  # the fixture's daemon logs at debug
    with open(d.conf) as f:
        text = f.read()
    # log level: the fixture's daemon logs at debug; take it to warning, then back
    with open(d.conf, "w") as f:
        f.write(text.replace("log_level = debug", "log_level = warning") + "[agents]\nstale_after = 7\n"
                "[api]\nthreads = 3\n")
    d.proc.p.send_signal(signal.SIGHUP)
    wait_for(lambda: "SIGHUP: configuration reloaded: 2 change(s) applied, 1 waiting for a restart" in d.proc.output(),
             10, what="the reload")
    out = d.proc.output()
    assert "SIGHUP: daemon.log_level debug -> warning" in out and "SIGHUP: agents.stale_after 3 -> 7" in out
    assert "SIGHUP: api.threads changed (2 -> 3): restart rocefabd to apply it" in out
    mark = len(d.proc.output())
    r = requests.get(d.url + "/api/v1/agents", headers={"Authorization": f"Bearer {d.tokens['viewer']}"}, timeout=5)
    assert r.status_code == 200
    assert " debug " not in d.proc.output()[mark:]  # at warning, the requests' debug lines are gone
    # a revoked token: refused without a restart (tokens are looked up in the database, through
    # a cache of at most a second)
    assert requests.get(d.url + "/api/v1/agents", headers={"Authorization": f"Bearer {d.tokens['gone']}"},
                        timeout=5).status_code == 200
    r = subprocess.run([binary("rocefabd"), "--config", d.conf, "token", "revoke", "gone"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    wait_for(lambda: requests.get(d.url + "/api/v1/agents", timeout=5,
                                  headers={"Authorization": f"Bearer {d.tokens['gone']}"}).status_code == 401,
             10, what="the revoked token refused")
    # a broken file: nothing changes, and it says why
    with open(d.conf, "a") as f:
        f.write("[daemon]\nlog_level = loud\n")
    d.proc.p.send_signal(signal.SIGHUP)
    wait_for(lambda: "SIGHUP: the configuration is not reloaded, nothing changed" in d.proc.output(), 10,
             what="the refused reload")
    assert "log_level" in d.proc.output().split("SIGHUP: the configuration is not reloaded")[-1].splitlines()[0]
    # a file whose syntax is fine but that a restart would refuse: refused now, not left to fail
    # the next restart
    with open(d.conf, "w") as f:
        f.write(text + "[api]\nmetrics_priorities = 3,9\n")
    d.proc.p.send_signal(signal.SIGHUP)
    wait_for(lambda: d.proc.output().count("SIGHUP: the configuration is not reloaded") == 2, 10,
             what="the second refused reload")
    assert "BAD_PRIORITIES" in d.proc.output().split("SIGHUP: the configuration is not reloaded")[-1].splitlines()[0]
    # the agent reported all along: every report it sent is stored, none lost or refused
    seq = c.json("/api/v1/agents/stor-b1")["seq"]
    wait_for(lambda: c.json("/api/v1/agents/stor-b1")["seq"] >= seq + 3, 10, what="more reports")
    a = c.json("/api/v1/agents/stor-b1")
    assert a["reports"] == a["seq"] and a["spool"]["dropped_reports"] == 0, a


@pytest.mark.parametrize("answer", ["html200", "redirect"])
def test_a_server_that_is_not_rocefabd_does_not_lose_reports(world, tmp_path, answer):
    """agent.server pointing at a web server's welcome page (200 with HTML) or at a redirect
    (http to https, a proxy): the reports are not taken, so they stay in the spool, and the
    agent says why (an attacker's review: 36 reports answered 200 with HTML were dropped
    without a word, and a 302 dropped each report for good)."""
    import http.server
    from conftest import free_addr

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if answer == "html200":
                body = b"<html>welcome to nginx</html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
            else:
                body = b""
                self.send_response(302)
                self.send_header("Location", "https://elsewhere.invalid/")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    host, port = free_addr()
    srv = http.server.ThreadingHTTPServer((host, port), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        tok = str(tmp_path / "agent.token")
        write_secret(tok, "rfb_notrocefabdnotrocefabdnotrocefabd000001\n")
        tree = copy_tree("stor-b1", str(tmp_path / "tree"))
        ag = world.agent("stor-b1", tree, f"http://{host}:{port}", tok, interval="0.2s").start()
        wait_for(lambda: ag.spooled() >= 3, 15, what="reports kept in the spool")
        out = ag.proc.output()
        code = "NOT_ROCEFABD" if answer == "html200" else "REDIRECTED"
        assert code in out and "cannot deliver reports, spooling" in out, out[-2000:]
        assert "refused a report" not in out, out[-2000:]
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_fifo_for_the_boot_id_is_not_waited_on(tmp_path):
    """A FIFO where the kernel's boot id is read (a recorded tree, a broken mount) is refused,
    never waited on: the agent reports without it (it hung there at start for ever, deaf to
    SIGTERM: an attacker's review)."""
    tree = copy_tree("stor-b1", str(tmp_path / "tree"))
    bid = os.path.join(tree, "proc", "sys", "kernel", "random", "boot_id")
    os.unlink(bid)
    os.mkfifo(bid)
    r = subprocess.run([binary("rocefab-agent"), "--once", "--id", "stor-b1", "--sysfs-root", tree],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)  # the report, made
