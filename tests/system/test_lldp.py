"""Real LLDP (issue 14): Debian's lldpd in two network namespaces joined by a veth pair, each
with its own control socket; the linux agent in each namespace reports the neighbour lldpcli
gives it, and rocefabd (in the first namespace) shows the link, both ends matched."""
import json
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from conftest import Proc, binary, wait_for, write_secret

NS = (f"rfl-a-{os.getpid()}", f"rfl-b-{os.getpid()}")
IFS = ("rfla", "rflb")
ADDRS = ("10.98.0.1", "10.98.0.2")
HOSTS = ("lldp-host-a", "lldp-host-b")


def ns(name, *cmd, **kw):
    return subprocess.run(["ip", "netns", "exec", name] + list(cmd), **kw)


@pytest.fixture
def veth_pair():
    if not shutil.which("lldpd"):
        pytest.fail("lldpd is not installed: packaging/install-deps.sh check installs it")
    if subprocess.run(["ip", "netns", "add", NS[0]], capture_output=True).returncode != 0:
        pytest.skip("cannot create network namespaces here")
    subprocess.run(["ip", "netns", "add", NS[1]], check=True)
    try:
        subprocess.run(["ip", "link", "add", IFS[0], "netns", NS[0], "type", "veth", "peer", "name",
                        IFS[1], "netns", NS[1]], check=True)
        for n, dev, addr in zip(NS, IFS, ADDRS):
            subprocess.run(["ip", "-n", n, "addr", "add", addr + "/24", "dev", dev], check=True)
            subprocess.run(["ip", "-n", n, "link", "set", dev, "up"], check=True)
            subprocess.run(["ip", "-n", n, "link", "set", "lo", "up"], check=True)
        yield
    finally:
        for n in NS:
            for p in subprocess.run(["ip", "netns", "pids", n], capture_output=True, text=True).stdout.split():
                try:
                    os.kill(int(p), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


@pytest.fixture
def run_dir():
    """lldpd's sockets: in a directory its unprivileged child (_lldpd) can reach, which the
    test's own (0700) is not."""
    d = tempfile.mkdtemp(prefix="rocefab-lldp-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_lldpd_neighbours_become_a_link(world, veth_pair, run_dir):
    tmp = world.tmp
    socks = [os.path.join(run_dir, f"lldpd-{i}.sock") for i in range(2)]
    # lldpd in each namespace, on its veth only, with its own control socket; -d keeps it in
    # the foreground so that the test stops it (its monitor, which takes its child along)
    for i in range(2):
        world.procs.append(Proc(["ip", "netns", "exec", NS[i], shutil.which("lldpd"), "-d", "-u", socks[i],
                                 "-I", IFS[i], "-S", f"rocefab test {i}"],
                                os.path.join(tmp, f"lldpd-{i}.log")))
    for i in range(2):
        wait_for(lambda: os.path.exists(socks[i]), 10, what=f"lldpd {i}'s control socket")
        # the namespaces share the host name: each lldpd announces its own
        wait_for(lambda: ns(NS[i], "lldpcli", "-u", socks[i], "configure", "system", "hostname", HOSTS[i],
                            capture_output=True).returncode == 0, 10, what=f"lldpd {i} configured")
    for i in range(2):
        ns(NS[i], "lldpcli", "-u", socks[i], "update", capture_output=True)

    def neighbour(i):
        out = ns(NS[i], "lldpcli", "-u", socks[i], "-f", "json0", "show", "neighbors",
                 capture_output=True, text=True).stdout
        ifs = json.loads(out)["lldp"][0].get("interface", [])
        return ifs and ifs[0]["chassis"][0]["name"][0]["value"] == HOSTS[1 - i]
    wait_for(lambda: neighbour(0) and neighbour(1), 20, interval=0.2, what="lldpd to learn its neighbour")

    # rocefabd in the first namespace, on its veth address; an agent in each namespace
    conf = os.path.join(tmp, "d.conf")
    with open(conf, "w") as f:
        f.write(f"[daemon]\nlog_target = stderr\n[api]\nlisten = {ADDRS[0]}:9750\n"
                f"[store]\ndb = {os.path.join(tmp, 'd.db')}\n")

    def token(name, role):
        return subprocess.run([binary("rocefabd"), "--config", conf, "token", "add", name, "--role", role],
                              capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    tokf = os.path.join(tmp, "agents.token")
    write_secret(tokf, token("agents", "agent") + "\n")
    vtok = token("viewer", "viewer")
    world.procs.append(Proc(["ip", "netns", "exec", NS[0], binary("rocefabd"), "--config", conf],
                            os.path.join(tmp, "d.log")))

    def rest(path):
        r = ns(NS[0], "curl", "-sf", "-H", f"Authorization: Bearer {vtok}", f"http://{ADDRS[0]}:9750{path}",
               capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    wait_for(lambda: rest("/api/v1/health"), 10, what="rocefabd in its namespace")
    for i in range(2):
        world.procs.append(Proc(["ip", "netns", "exec", NS[i], binary("rocefab-agent"), "--backend", "linux",
                                 "--id", HOSTS[i], "--server", f"http://{ADDRS[0]}:9750", "--token-file", tokf,
                                 "--interval", "0.5s", "--spool-dir", os.path.join(tmp, f"spool-{i}"),
                                 "-o", f"linux.interfaces={IFS[i]}", "-o", f"linux.lldp_socket={socks[i]}",
                                 "-o", "linux.lldp_interval=1s", "-o", "agent.log_target=stderr"],
                                os.path.join(tmp, f"agent-{i}.log")))

    def link():
        items = rest("/api/v1/links")["items"]
        return items[0] if len(items) == 1 and items[0]["a"]["port_id"] and items[0]["b"]["port_id"] else None
    lk = wait_for(link, 20, interval=0.2, what="the link between the namespaces, both ends")
    ends = {(lk["a"]["node"], lk["a"]["port"]), (lk["b"]["node"], lk["b"]["port"])}
    assert ends == {(HOSTS[0], f"{IFS[0]}:1"), (HOSTS[1], f"{IFS[1]}:1")}, lk
    assert lk["state"] == "up"
    # what each agent reported: the neighbour's system and its port as lldpd gave it
    port = rest(f"/api/v1/ports/{HOSTS[0]}:{IFS[0]}:1")
    assert port["neighbor"] == {"system": HOSTS[1], "port": IFS[1]}, port
    # the veth goes down on one side: the link shows it
    subprocess.run(["ip", "-n", NS[1], "link", "set", IFS[1], "down"], check=True)
    wait_for(lambda: rest("/api/v1/links")["items"][0]["state"] == "down", 10, what="the link down")
