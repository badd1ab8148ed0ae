"""rocefab-probe on this machine (no RDMA): kernel UDP and TCP probes between two loopback
addresses, the clear errors of a verbs probe without a device and of a dead peer.  The verbs
operations run on real soft-RoCE in tests/rxe."""
import json
import os
import socket
import subprocess

from conftest import Proc, binary, free_addr, wait_for


def listening(host, port):
    try:
        socket.create_connection((host, port), 1).close()
        return True
    except OSError:
        return False


def client(*args, timeout=30):
    return subprocess.run([binary("rocefab-probe"), "client"] + list(args), capture_output=True, text=True,
                          timeout=timeout)


def test_udp_and_tcp_between_two_addresses(world):
    host, port = free_addr()
    srv = Proc([binary("rocefab-probe"), "server", "--listen", f"{host}:{port}"],
               os.path.join(world.tmp, "probe-server.log"))
    try:
        wait_for(lambda: listening(host, port), 10, what="the probe server")
        for op in ("udp", "tcp"):
            # the client's source is 127.0.0.1, the server's address another one: the echo must
            # come back from the address the client talks to
            r = client(host, "--port", str(port), "-t", op, "-s", "256", "-n", "200", "-j")
            assert r.returncode == 0, (op, r.stdout, r.stderr)
            res = json.loads(r.stdout)
            st = res["stats"]
            assert res["op"] == op and res["size"] == 256 and res["verified"] is True, res
            assert st["n"] == st["ok"] == 200 and st["lost"] == 0 and st["data_errors"] == 0, st
            assert 0 < st["min_us"] <= st["p50_us"] <= st["p99_us"] <= st["max_us"], st
            assert st["cpu_us_per_op"] > 0, st
        # text output, like perftest
        r = client(host, "--port", str(port), "-t", "tcp", "-n", "20")
        assert r.returncode == 0 and "20 probes, 20 ok, 0 lost" in r.stdout and "p99.9" in r.stdout, r.stdout
        # a verbs probe on a machine without RDMA: said, exit 2
        r = client(host, "--port", str(port), "-t", "write", "-n", "5")
        assert r.returncode == 2 and "no RDMA device" in r.stderr, r.stderr
        # the server is still serving after all that
        assert srv.alive()
        assert client(host, "--port", str(port), "-t", "udp", "-n", "5").returncode == 0
    finally:
        assert srv.stop() == 0, srv.output()


def test_bad_arguments_and_a_dead_peer():
    host, port = free_addr()  # nobody listens there
    r = client(host, "--port", str(port), "-t", "udp", "-n", "5", "--timeout", "500ms", timeout=20)
    assert r.returncode == 2 and "cannot reach" in r.stderr, r.stderr
    r = client(host, "-t", "nope")
    assert r.returncode == 2 and "not one of write, read" in r.stderr, r.stderr
    r = client(host, "-t", "udp", "-s", "3")
    assert r.returncode == 2 and "-s: 8 to 65536" in r.stderr, r.stderr
    r = client(host, "-t", "read", "--pingpong")
    assert r.returncode == 2, r.stderr
    r = subprocess.run([binary("rocefab-probe"), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--pingpong" in r.stdout
