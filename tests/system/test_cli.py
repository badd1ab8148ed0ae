"""rocefabctl: text tables by default, the REST JSON with -j, clear errors and exit codes."""
import json
import os
import subprocess

import pytest

from conftest import ROOT, binary, copy_tree, wait_for, write_secret


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
    r = ctl(d, tok, "agents", "gpu-a2")
    assert r.returncode == 0 and r.stdout.startswith("agent:    gpu-a2 (host, ok)\n"), r.stdout
    assert "errors:" in r.stdout, r.stdout
    r = ctl(d, tok, "agents", "nobody")
    assert r.returncode != 0 and "UNKNOWN_AGENT" in r.stderr, r.stderr
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
    # text, not JSON, for every command (-j gives the JSON); an empty list says so
    r = ctl(d, tok, "version")
    assert r.returncode == 0 and r.stdout.startswith("rocefabd:   ") and "\nfeatures:   detector " in r.stdout, r.stdout
    r = ctl(d, tok, "topology")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NODE", "ROLE", "STATUS", "PORTS", "UP"], r.stdout
    assert lines[1].split() == ["gpu-a2", "host", "ok", "1", "1"], r.stdout
    assert lines[-1] == "1 node, 0 links, 0 up", r.stdout
    assert ctl(d, tok, "changes").stdout == "no changes\n"
    assert ctl(d, tok, "alerts", "--state", "active").stdout == "no alerts\n"
    # the counters in the order asked, and one priority when asked
    r = ctl(d, tok, "counters", "gpu-a2:mlx5_0:1", "pfc_rx_pause_frames", "np_cnp_sent", "--priority", "4")
    assert r.returncode == 0, r.stderr
    rows = [(l.split()[0], l.split()[1]) for l in r.stdout.splitlines()[3:] if l.strip()]
    assert rows == [("pfc_rx_pause_frames", "4"), ("np_cnp_sent", "-")], r.stdout
    r = ctl(d, tok, "counters", "gpu-a2:mlx5_0:1", "np_cnp_sent", "--priority", "9")
    assert r.returncode == 1 and "priority" in r.stderr


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
    assert json.loads(ctl(d, tok, "-j", "version").stdout)["api"] == "v1"


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
    # a --server that is no URL is the caller's mistake: a usage error
    r = subprocess.run([binary("rocefabctl"), "--server", "127.0.0.1:9750", "health"], capture_output=True, text=True)
    assert r.returncode == 2 and "BAD_SERVER_URL" in r.stderr, r.stderr
    r = ctl(d, tok, "frobnicate")
    assert r.returncode == 2
    assert subprocess.run([binary("rocefabctl"), "--help"], capture_output=True).returncode == 0


def test_help_usage_errors_and_versions(fleet):
    """help [COMMAND], a command's --help, usage errors that say what is wrong (not 40 lines of
    usage), --version of every program with the release version."""
    d, tok = fleet
    r = ctl(d, tok, "help", "qps")
    assert r.returncode == 0 and r.stdout.startswith("usage: rocefabctl [OPTIONS] qps HOST\n"), r.stdout
    r = ctl(d, tok, "set", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: rocefabctl [OPTIONS] set dcqcn HOST"), r.stdout
    r = ctl(d, tok, "help")
    assert r.returncode == 0 and "Commands:" in r.stdout and "--cacert FILE" in r.stdout
    r = ctl(d, tok, "help", "cc")  # how to give a policy's list (host_classes)
    assert r.returncode == 0 and "a VALUE may be JSON" in r.stdout and "host_classes='[" in r.stdout, r.stdout
    r = ctl(d, tok, "frobnicate")
    assert r.returncode == 2 and r.stderr == "rocefabctl: unknown command 'frobnicate' (rocefabctl help lists the commands)\n"
    r = ctl(d, tok, "qps")
    assert r.returncode == 2 and r.stderr.startswith("rocefabctl: qps: missing arguments\nusage: rocefabctl [OPTIONS] qps HOST")
    assert len(r.stderr.splitlines()) <= 8, r.stderr
    r = ctl(d, tok, "hosts", "a", "b")
    assert r.returncode == 2 and "hosts: too many arguments ('b' is one too many)" in r.stderr
    # an option the command does not read is refused, not ignored ("changes --all" listed
    # every change as if it meant something; "probes --step" was taken as --window)
    r = ctl(d, tok, "changes", "--all")
    assert r.returncode == 2 and r.stderr.startswith(
        "rocefabctl: changes: --all is not one of its options\nusage: rocefabctl [OPTIONS] changes"), r.stderr
    r = ctl(d, tok, "probes", "--step", "3s")
    assert r.returncode == 2 and "probes: --step is not one of its options" in r.stderr, r.stderr
    r = ctl(d, tok, "cc", "history", "--all")
    assert r.returncode == 2 and "cc history: --all is for cc proposals" in r.stderr, r.stderr
    r = ctl(d, tok, "-j", "counters", "gpu-a2:mlx5_0:1", "np_cnp_sent", "--step", "10s")
    assert r.returncode == 0, r.stderr
    r = ctl(d, tok, "--bogus")
    assert r.returncode == 2 and r.stderr.startswith("rocefabctl: unknown (or ambiguous) option '--bogus'"), r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr
    # a negative number reads as options: said so, without getopt's "invalid option" and path
    r = ctl(d, tok, "cc", "apply", "-1")
    assert r.returncode == 2 and "unknown option '-1'" in r.stderr and "goes after '--'" in r.stderr, r.stderr
    r = ctl(d, tok, "cc", "apply", "--", "-1")
    assert r.returncode == 2 and "the id is a number from 1 up, not '-1'" in r.stderr, r.stderr
    r = ctl(d, tok, "--json=1", "hosts")
    assert r.returncode == 2 and r.stderr == "rocefabctl: --json takes no value (rocefabctl help lists the options)\n"
    r = ctl(d, tok, "--server")
    assert r.returncode == 2 and r.stderr == "rocefabctl: --server needs a value (rocefabctl help lists the options)\n"
    with open(os.path.join(ROOT, "VERSION")) as f:
        release = f.read().strip()
    for prog in ("rocefabctl", "rocefabd", "rocefab-agent", "rocefab-sim", "rocefab-probe"):
        r = subprocess.run([binary(prog), "--version"], capture_output=True, text=True, timeout=10)
        assert r.returncode == 0 and r.stdout.startswith(f"{prog} {release}"), (prog, r.stdout, r.stderr)


def test_natural_order_numbers_as_typed_and_watch(world):
    """Lists in natural order (h2 before h10), numbers as typed, -w repeating the command."""
    d = world.daemon()
    d.token("agents", "agent")
    _, tok = d.token("viewer", "viewer")
    d.start()
    for name in ("h10", "h2", "h1"):
        doc = {"schema": 1, "agent": {"id": name, "role": "host", "boot_id": "b", "version": "t",
                                      "backend": "linux"},
               "seq": 1, "time_ns": 1796180000000000000, "interval_ms": 1000,
               "inventory": {"devices": []}, "samples": []}
        r = __import__("requests").post(f"{d.url}/api/v1/agents/{name}/report", json=doc, timeout=5,
                                        headers={"Authorization": f"Bearer {d.tokens['agents']}"})
        assert r.status_code == 200, r.text
    r = ctl(d, tok, "agents")
    assert [l.split()[0] for l in r.stdout.splitlines()[1:]] == ["h1", "h2", "h10"], r.stdout
    r = ctl(d, tok, "hosts")
    assert [l.split()[0] for l in r.stdout.splitlines()[1:]] == ["h1", "h2", "h10"], r.stdout
    # -w: the command again and again until interrupted (here: by the timeout)
    env = dict(os.environ, ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN_FILE=tok)
    p = subprocess.Popen([binary("rocefabctl"), "-w", "0.2", "agents"], stdout=subprocess.PIPE, env=env, text=True)
    try:
        lines = []
        wait_for(lambda: lines.append(p.stdout.readline()) or sum(l.startswith("every 0.2s: rocefabctl agents")
                                                                   for l in lines) >= 3, 10, interval=0,
                 what="three rounds of -w")
    finally:
        p.terminate()
        p.wait(5)
    r = ctl(d, tok, "-w", "0", "agents")
    assert r.returncode == 2 and "--watch" in r.stderr
    # -j: the JSON documents one after the other, nothing between them (jq reads them)
    p = subprocess.Popen([binary("rocefabctl"), "-w", "0.2", "-j", "version"], stdout=subprocess.PIPE, env=env,
                         text=True)
    try:
        docs, buf = [], []

        def read_docs():
            buf.append(p.stdout.readline())
            if buf[-1] == "}\n":
                docs.append(json.loads("".join(buf)))
                buf.clear()
            return len(docs) >= 2
        wait_for(read_docs, 10, interval=0, what="two documents of -w -j")
        assert all(x["api"] == "v1" for x in docs), docs
    finally:
        p.terminate()
        p.wait(5)
    # a first try that fails ends it with its status (it would fail the same way for ever)
    r = ctl(d, tok, "-w", "1", "alerts", "--state", "bogus")
    assert r.returncode == 1 and "bogus" in r.stderr, r.stderr
    assert r.stdout.startswith("every 1s: rocefabctl alerts") and r.stdout.count("every 1s") == 1, r.stdout
    # only a command that reads is repeated: -w with one that changes things is refused, sent never
    for args in (["cc", "rollback"], ["cc", "policy", "mode=auto"], ["cc", "apply", "1"]):
        r = ctl(d, tok, "-w", "1", *args)
        assert r.returncode == 2 and "--watch repeats only commands that read; this one changes" in r.stderr, (args, r.stderr)


def test_private_ca_and_tls_errors(world):
    """rocefabd with a certificate of a private CA: without it the failure is named TLS and says
    how to give the CA; with --cacert (or $CURL_CA_BUNDLE) it works."""
    from test_security import make_ca, make_cert
    d = world.daemon()
    ca = make_ca(world.tmp, "ca")
    server = make_cert(world.tmp, ca, "server", "/CN=rocefabd", san=f"IP:{d.host}")
    d.args = ["-o", f"api.tls_cert={server[0]}", "-o", f"api.tls_key={server[1]}"]
    _, tok = d.token("viewer", "viewer")
    d.url = d.url.replace("http://", "https://")
    d.start(wait=False)
    wait_for(lambda: __import__("requests").get(d.url + "/api/v1/health", verify=ca[0], timeout=2).status_code == 200,
             10, what="HTTPS")
    env = {k: v for k, v in os.environ.items() if k not in ("CURL_CA_BUNDLE", "SSL_CERT_FILE", "ROCEFAB_CACERT")}
    env.update(ROCEFAB_SERVER=d.url, ROCEFAB_TOKEN_FILE=tok)
    run = lambda *a, **kw: subprocess.run([binary("rocefabctl")] + list(a), capture_output=True, text=True,
                                          env=dict(env, **kw), timeout=20)
    r = run("health")
    assert r.returncode == 1 and "TLS_FAILED" in r.stderr and "--cacert FILE" in r.stderr, r.stderr
    assert "SERVER_UNREACHABLE" not in r.stderr
    # the TLS library's reason, not curl's summary (it named SSH keys)
    assert "unable to get local issuer certificate" in r.stderr and "SSH" not in r.stderr, r.stderr
    r = run("--cacert", ca[0], "health")
    assert r.returncode == 0 and "status:       ok" in r.stdout, r.stderr
    r = run("health", CURL_CA_BUNDLE=ca[0])
    assert r.returncode == 0, r.stderr


def test_bash_completion():
    """The installed bash completion: commands from rocefabctl --list-commands, options, set's
    kinds, help's commands."""
    script = os.path.join(os.path.dirname(__file__), "..", "..", "packaging", "completion", "rocefabctl.bash")

    def complete(*words, prog="rocefabctl"):
        words_s = " ".join(f"'{w}'" for w in words)
        path = os.environ["PATH"]
        if prog == "rocefabctl":
            path = os.path.dirname(binary("rocefabctl")) + ":" + path
        out = subprocess.run(["bash", "-c", f"source '{script}'; COMP_WORDS=('{prog}' {words_s}); "
                              f"COMP_CWORD={len(words)}; _rocefabctl; echo \"${{COMPREPLY[*]}}\""],
                             capture_output=True, text=True, timeout=10, env=dict(os.environ, PATH=path))
        assert out.returncode == 0, out.stderr
        return out.stdout.split()
    assert complete("q") == ["qps"]
    assert "switches" in complete("s") and "set" in complete("s")
    assert complete("-j", "set", "e") == ["ecn"]
    assert complete("--cac") == ["--cacert"]
    assert complete("help", "sw") == ["switches"]
    assert complete("cc", "r") == ["rollback", "reject"]
    assert complete("detector", "c") == ["config"] and complete("detector", "--r") == ["--reason"]
    assert complete("counters", "h1:mlx5_0:1", "--priority", "3") == ["3"]
    assert complete("counters", "h1:mlx5_0:1", "--pri") == ["--priority"]
    assert complete("--v") == ["--version"]  # before a command: what every command takes
    # a command's own options only: rocefabctl refuses the others
    assert complete("changes", "--a") == ["--agent"]
    assert complete("changes", "--b") == ["--batch"]
    # (--batch takes a value: the word after it is not the command)
    assert complete("--batch", "7", "changes", "--b") == ["--batch"]
    assert complete("probes", "--w") == ["--watch", "--window"]
    assert complete("counters", "h1:mlx5_0:1", "--s") == ["--server", "--step"]
    # the rocefabctl typed is the one asked (not one on PATH, which may be older or none)
    assert complete("changes", "--a", prog=os.path.abspath(binary("rocefabctl"))) == ["--agent"]
    assert complete("q", prog=os.path.abspath(binary("rocefabctl"))) == ["qps"]


def test_zsh_completion():
    """The installed zsh completion, in a real interactive zsh (zpty): commands from rocefabctl
    --list-commands, help's commands, set's kinds, cc's subcommands, option values; each
    completed at once, without a beep (a bell between the letters typed and the rest fails)."""
    here = os.path.dirname(__file__)
    comp = os.path.join(here, "..", "..", "packaging", "completion")

    def shows(line, pattern):
        try:
            r = subprocess.run(["zsh", "-f", os.path.join(here, "zsh-complete.zsh"), comp,
                                os.path.dirname(binary("rocefabctl")), line, pattern],
                               capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return False  # the terminal never showed it
        assert r.returncode == 0, (line, r.returncode, r.stderr)
        return True
    assert shows("rocefabctl q", "*rocefabctl qps*")
    assert shows("rocefabctl help swi", "*rocefabctl help switches*")
    assert shows("rocefabctl --cac", "*rocefabctl --cacert*")
    assert shows("rocefabctl cou", "*rocefabctl counters*")
    assert shows("rocefabctl set e", "*rocefabctl set ecn*")
    assert shows("rocefabctl cc rol", "*rocefabctl cc rollback*")
    assert shows("rocefabctl alerts --state cl", "*--state cleared*")
    # after a command, its own options (rocefabctl refuses the others)
    assert shows("rocefabctl changes --a", "*changes --agent*")  # not --all
    assert shows("rocefabctl changes --ba", "*changes --batch*")
    assert shows("rocefabctl probes --win", "*probes --window*")
    # before the command, its options are understood (their values completed), not offered
    assert shows("rocefabctl --state cl", "*--state cleared*")
    assert shows("rocefabctl --host h1 por", "*--host h1 ports*")
