"""Real verbs: rocefab's own binaries on soft-RoCE (rdma_rxe) in QEMU guests running Debian's
kernel (tests/rxe/README.md).  The guests see the host's root read-only over 9p, so they run the
binaries of this build with the host's libibverbs and rxe provider.  No guest has a route off
the machine: the single guest has no NIC at all; the two guests share one emulated Ethernet link
carried over UDP on the host's loopback.

Run by `make check` (make check-rxe alone).  Each boot takes ~10 s of software emulation (TCG):
this machine's KVM cannot run a stock kernel.  Latencies under TCG are emulation figures; the
tests assert on correctness (every probe completed, data verified, zero errors, counters moved
by the expected amount), never on latency."""
import json
import os
import socket
import subprocess
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("ROCEFAB_BUILD", "build"))
CACHE = os.path.join(ROOT, "build", "rxe")  # shared by build/ and build/san/
HERE = os.path.dirname(os.path.abspath(__file__))


def udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture(scope="session")
def guest_image():
    """The kernel (fetched once into build/rxe) and an initramfs built from tests/rxe/init."""
    for tool in ("qemu-system-x86_64", "/bin/busybox"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            pytest.fail(f"{tool} is missing: run packaging/install-deps.sh rxe")
    os.makedirs(CACHE, exist_ok=True)
    out = subprocess.run([os.path.join(HERE, "setup.sh"), CACHE], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    kernel, kv = out.stdout.split()[-2:]
    initrd = os.path.join(CACHE, "initrd.gz")
    out = subprocess.run([os.path.join(HERE, "build-initrd.sh"), CACHE, initrd], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return kernel, initrd, kv


class Guest:
    """One QEMU guest running tests/rxe/<script> in a chroot on the host's root."""

    def __init__(self, image, name, script, args, net=None, mac=None, mem=1024, smp=2):
        kernel, initrd, _ = image
        self.name = name
        self.log = os.path.join(CACHE, f"{name}.log")
        self.results = os.path.join(CACHE, f"{name}.results")
        if os.path.exists(self.results):
            os.unlink(self.results)
        append = (f"console=ttyS0 quiet panic=-1 rxe_script={HERE}/{script} "
                  f"rxe_args={','.join(str(a) for a in args)}")
        self.cmd = ["qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "max", "-m", str(mem),
                    "-smp", str(smp), "-kernel", kernel, "-initrd", initrd, "-append", append,
                    "-nographic", "-serial", "mon:stdio", "-serial", f"file:{self.results}",
                    "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                    "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on"]
        if net:
            self.cmd += ["-netdev", f"socket,id=n0,udp=127.0.0.1:{net[1]},localaddr=127.0.0.1:{net[0]}",
                         "-device", f"virtio-net-pci,netdev=n0,mac={mac}"]
        else:
            self.cmd += ["-nic", "none"]
        self.p = None

    def start(self):
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=open(self.log, "wb"),
                                  stderr=subprocess.STDOUT)
        return self

    def wait(self, timeout):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise AssertionError(f"{self.name}: no result after {timeout} s; console in {self.log}")
        self.seconds = time.monotonic() - self.t0
        # isa-debug-exit: QEMU exits with (status << 1) | 1
        status = rc >> 1 if rc & 1 else None
        lines = []
        if os.path.exists(self.results):
            with open(self.results, "rb") as f:
                for raw in f.read().decode(errors="replace").replace("\r", "").splitlines():
                    if raw.startswith("{"):
                        lines.append(json.loads(raw))
        assert lines and lines[-1].get("test") == "done", \
            f"{self.name}: the guest did not finish (qemu rc {rc}); console in {self.log}"
        return status, lines

    def kill(self):
        if self.p and self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def by_test(lines, test):
    return [l for l in lines if l.get("test") == test]


def assert_clean(res, n, what):
    assert res is not None, what
    st = res["stats"]
    assert st["n"] == n and st["ok"] == n and st["lost"] == 0, (what, st)
    assert st["data_errors"] == 0 and not any(st["errors"].values()), (what, st)
    assert res["verified"] is True, (what, res)
    assert 0 < st["min_us"] <= st["p50_us"] <= st["p99_us"] <= st["max_us"], (what, st)
    assert st["min_us"] <= st["mean_us"] <= st["max_us"], (what, st)


def hw(report, name):
    for smp in report["samples"]:
        if smp["source"] == "hw_counters" and name in smp["values"]:
            return smp["values"][name]
    raise KeyError(name)


def test_single_guest_every_operation_and_the_agent(guest_image):
    n = 500
    g = Guest(guest_image, "single", "guest-single.sh", [ROOT, BUILD, n]).start()
    try:
        status, lines = g.wait(400)
    finally:
        g.kill()
    setup = by_test(lines, "setup")[0]
    assert setup["ok"] == 1 and "ACTIVE" in setup["state"], setup
    probes = by_test(lines, "probe")
    ops = {(p["op"], p["size"]) for p in probes}
    assert {(op, 64) for op in ("write", "read", "send", "cas", "faa", "ud", "udp", "tcp")} <= ops
    for p in probes:
        assert p["rc"] == 0, p
        assert_clean(p["result"], p["iters"], f"{p['op']} {p['size']} B")
        assert p["result"]["size"] == (8 if p["op"] in ("cas", "faa") else p["size"])
        if p["op"] in ("write", "read", "send", "cas", "faa", "ud"):
            assert p["result"]["device"] == "rxe0" and p["result"]["gid_index"] >= 0
    # ECMP paths: four QPs with distinct flow labels, each with its share of the probes
    paths = by_test(lines, "paths")[0]
    assert paths["rc"] == 0 and len(paths["result"]["per_path"]) == 4
    assert sum(pp["ok"] for pp in paths["result"]["per_path"]) == 200
    # clear errors, non-zero exit, no hang
    bad = by_test(lines, "bad_device")[0]
    assert bad["rc"] == 2 and "no RDMA device 'nosuch0'" in bad["stderr"], bad
    unr = by_test(lines, "unreachable")[0]
    assert unr["rc"] == 2 and "cannot reach" in unr["stderr"], unr
    # the agent reads the real rxe hw_counters: N writes (and their ACKs) on the loopback
    before, after = by_test(lines, "agent_before")[0], by_test(lines, "agent_after")[0]
    assert before["rc"] == 0 and after["rc"] == 0
    dev = after["result"]["inventory"]["devices"][0]
    assert dev["name"] == "rxe0" and dev["driver"] == "rxe" and dev["ports"][0]["state"] == "up"
    sent = hw(after["result"], "sent_pkts") - hw(before["result"], "sent_pkts")
    rcvd = hw(after["result"], "rcvd_pkts") - hw(before["result"], "rcvd_pkts")
    probe = by_test(lines, "agent_probe")[0]
    assert_clean(probe["result"], n, "the agent's probe run")
    # a WRITE and its ACK are two packets, both sent and received by rxe0; retransmits under
    # emulation may add a few
    assert 2 * n <= sent <= 2 * n * 1.05 and 2 * n <= rcvd <= 2 * n * 1.05, (sent, rcvd)
    # the registry maps rxe's counters: normalized names in the report
    assert status == 0, f"the guest script failed; console in {g.log}"


def test_two_guests_probe_each_other_over_an_emulated_link(guest_image):
    pa, pb = udp_port(), udp_port()
    n = 100
    a = Guest(guest_image, "pair-server", "guest-pair.sh", [ROOT, BUILD, "server", n], net=(pa, pb),
              mac="52:54:00:aa:00:01", mem=768, smp=1).start()
    b = Guest(guest_image, "pair-client", "guest-pair.sh", [ROOT, BUILD, "client", n], net=(pb, pa),
              mac="52:54:00:aa:00:02", mem=768, smp=1).start()
    try:
        sb, lb = b.wait(500)
        sa, la = a.wait(120)
    finally:
        b.kill()
        a.kill()
    assert by_test(lb, "setup")[0]["ok"] == 1
    probes = {p["op"]: p for p in by_test(lb, "probe")}
    assert set(probes) == {"write", "read", "send", "cas", "faa", "ud"}
    for op in ("write", "read", "send", "cas", "faa"):
        assert probes[op]["rc"] == 0, probes[op]
        assert_clean(probes[op]["result"], n, f"{op} across the link")
    ud = probes["ud"]["result"]["stats"]
    assert ud["ok"] >= 0.95 * n and ud["data_errors"] == 0, ud  # datagrams may be lost
    assert by_test(la, "server")[0]["sessions"] >= 6
    assert sb == 0 and sa == 0
