"""Real verbs: rocefab's own binaries on soft-RoCE (rdma_rxe) in QEMU guests running Debian's
kernel (tests/rxe/README.md).  The guests see the host's root read-only over 9p, so they run the
binaries of this build, with rdma-core's libibverbs, rxe provider and librdmacm as apt-get
download fetched them (laid over the guest's root; the host needs no rxe provider).  No guest has a route off
the machine: the single guest has no NIC at all; the two guests share one emulated Ethernet link
carried over UDP on the host's loopback.

Run by `make check` (make check-rxe alone).  Each boot takes ~10 s of software emulation (TCG):
this machine's KVM cannot run a stock kernel.  Latencies under TCG are emulation figures; the
tests assert on correctness (every probe completed, data verified, zero errors, counters moved
by the expected amount), never on latency."""
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rxeguest import BUILD, CACHE, ROOT, Guest, guest_image as _image, udp_port, userspace_versions  # noqa: E402


@pytest.fixture(scope="session")
def guest_image():
    return _image(pytest.fail)


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


def pingmesh_dir():
    """For the two-guest pingmesh: rocefabd's configuration and a database holding the tokens
    agents, ops and viewer (the guests see it over 9p; their writes stay in the guest)."""
    pm = os.path.join(CACHE, "pingmesh")
    shutil.rmtree(pm, ignore_errors=True)
    os.makedirs(pm)
    conf = os.path.join(pm, "rocefabd.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\nlog_level = info\nlog_target = stderr\n[api]\nlisten = 10.11.0.1:8088\n"
                f"[store]\ndb = {pm}/rocefabd.db\n")
    # the agents token is bound to the two guests' agents, g1 and g2 (guest-pair.sh)
    for name, role in (("agents", ["agent", "--agent", "g1,g2"]), ("ops", ["operator"]),
                       ("viewer", ["viewer"])):
        out = subprocess.run([os.path.join(BUILD, "rocefabd"), "--config", conf, "token", "add", name,
                              "--role"] + role, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        path = os.path.join(pm, f"{name}.token")
        # a token file others could read is refused: created 0600 from the start
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(out.stdout.strip().splitlines()[-1] + "\n")
        os.chmod(path, 0o600)
    return pm


def hw(report, name):
    for smp in report["samples"]:
        if smp["source"] == "hw_counters" and name in smp["values"]:
            return smp["values"][name]
    raise KeyError(name)


def test_single_guest_every_operation_and_the_agent(guest_image):
    n = 500
    pm = pingmesh_dir()
    g = Guest(guest_image, "single", "guest-single.sh", [ROOT, BUILD, n, pm]).start()
    try:
        status, lines = g.wait(400)
    finally:
        g.kill()
    setup = by_test(lines, "setup")[0]
    assert setup["ok"] == 1 and "ACTIVE" in setup["state"], setup
    # the verbs userspace in the guest is rdma-core as apt-get download fetched it, not the host's
    assert setup["userspace"] == userspace_versions() and "ibverbs-providers=" in setup["userspace"], setup
    probes = by_test(lines, "probe")
    ops = {(p["op"], p["size"]) for p in probes}
    assert {(op, 64) for op in ("write", "read", "send", "cas", "faa", "ud", "udp", "tcp")} <= ops
    for p in probes:
        assert p["rc"] == 0, p
        assert_clean(p["result"], p["iters"], f"{p['op']} {p['size']} B")
        # rxe has no completion timestamps: the engine times with the CPU's clock and says so
        assert p["result"]["clock"] == "monotonic", p["result"]["clock"]
        assert p["result"]["size"] == (8 if p["op"] in ("cas", "faa") else p["size"])
        if p["op"] in ("write", "read", "send", "cas", "faa", "ud"):
            assert p["result"]["device"] == "rxe0" and p["result"]["gid_index"] >= 0
    # write ping-pong (perftest's method): both sides write and poll, data checked both ways
    pp = by_test(lines, "pingpong")
    assert {p["size"] for p in pp} == {64, 4096}, pp
    for p in pp:
        assert p["rc"] == 0, p
        assert_clean(p["result"], p["iters"], f"ping-pong {p['size']} B")
        assert p["result"]["pingpong"] is True
        assert p["result"]["inline"] is (p["size"] == 64), p["result"]  # rxe takes 220 B inline
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
    check_qps(lines)
    # the registry maps rxe's counters: normalized names in the report
    assert status == 0, f"the guest script failed; console in {g.log}"


def check_qps(lines):
    """QPs through RDMA netlink on real rxe: what the agent reports while rocefab-probe (an RC
    write client and a UD client, with the server's side of each) and qp-hold (an RC QP in INIT,
    a UD QP in RTS) hold QPs, and the RC QP driven into the error state, counted."""
    once = by_test(lines, "qp_once")[0]
    q = once["result"]["qps"]
    mine = [x for x in q["items"] if x["comm"] in ("rocefab-probe", "qp-hold")]
    assert {(x["comm"], x["type"]) for x in mine} >= {("rocefab-probe", "RC"), ("rocefab-probe", "UD"),
                                                      ("qp-hold", "RC"), ("qp-hold", "UD")}, (once, q)
    hold = {x["type"]: x for x in q["items"] if x["comm"] == "qp-hold"}
    assert hold["RC"]["state"] == "INIT" and hold["UD"]["state"] == "RTS", hold
    # (a QP caught before it is bound to the port says port 0)
    assert all(x["device"] == "rxe0" and x["port"] in (0, 1) and x["pid"] > 0 for x in mine), mine
    assert all(x["port"] == 1 for x in mine if x["comm"] == "qp-hold"), mine
    # the connected RC QPs name their peer; rxe's own GSI QP is the kernel's
    assert any(x["type"] == "RC" and "rqpn" in x for x in mine if x["comm"] == "rocefab-probe"), mine
    assert q["by_type"]["RC"] >= 3 and q["by_type"]["UD"] >= 3 and q["total"] == sum(q["by_type"].values())
    assert {p["comm"] for p in q["processes"]} >= {"rocefab-probe", "qp-hold"}, q["processes"]
    # rxe keeps no per-QP counters (no rdma statistic qp): the report says so instead of a value
    assert q["counters"]["state"] in ("none", "unsupported"), q["counters"]
    assert "entered_error" not in q  # nothing to compare with in a first report
    rec = by_test(lines, "qp_recorded")[0]["result"]
    assert "devs.bin" in rec and "qp-rxe0.bin" in rec, sorted(rec)
    # rocefabd shows them
    rest = by_test(lines, "qp_rest")[0]["result"]
    assert rest["host"] == "g1" and rest["total"] >= 6, rest
    assert {x["comm"] for x in rest["items"]} >= {"rocefab-probe", "qp-hold"}, rest["items"]
    # qp-hold's RC QP in the error state: counted once, listed first
    err = by_test(lines, "qp_error")[0]
    doc = err["result"]
    assert "err" in err["hold"] and doc["errors_total"] >= 1 and doc["by_state"]["ERR"] >= 1, err
    assert doc["items"][0]["state"] == "ERR" and doc["items"][0]["comm"] == "qp-hold", doc["items"][:2]
    assert doc["items"][0]["lqpn"] == hold["RC"]["lqpn"]
    m = by_test(lines, "qp_metrics")[0]
    assert m["qps"] >= 3 and m["errors"].startswith('rocefab_host_qp_errors_total{host="g1"} '), m
    assert int(m["errors"].split()[-1]) >= 1, m
    cli = by_test(lines, "qp_cli")[0]
    assert cli["rc"] == 0 and "qp-hold" in cli["out"] and "ERR" in cli["out"], cli


def test_two_guests_probe_each_other_over_an_emulated_link(guest_image):
    pa, pb = udp_port(), udp_port()
    n = 100
    pm = pingmesh_dir()
    a = Guest(guest_image, "pair-server", "guest-pair.sh", [ROOT, BUILD, "server", n, pm], net=(pa, pb),
              mac="52:54:00:aa:00:01", mem=768, smp=1).start()
    b = Guest(guest_image, "pair-client", "guest-pair.sh", [ROOT, BUILD, "client", n, pm], net=(pb, pa),
              mac="52:54:00:aa:00:02", mem=768, smp=1).start()
    try:
        sb, lb = b.wait(500)
        sa, la = a.wait(120)
    finally:
        b.kill()
        a.kill()
    assert by_test(lb, "setup")[0]["ok"] == 1
    assert by_test(lb, "setup")[0]["userspace"] == userspace_versions()
    probes = {p["op"]: p for p in by_test(lb, "probe")}
    assert set(probes) == {"write", "read", "send", "cas", "faa", "ud"}
    for op in ("write", "read", "send", "cas", "faa"):
        assert probes[op]["rc"] == 0, probes[op]
        assert_clean(probes[op]["result"], n, f"{op} across the link")
    ud = probes["ud"]["result"]["stats"]
    assert ud["ok"] >= 0.95 * n and ud["data_errors"] == 0, ud  # datagrams may be lost
    assert by_test(la, "server")[0]["sessions"] >= 6
    # the pingmesh on real verbs: rocefabd in one guest, an agent in each, probing each other with
    # RDMA WRITE and READ as rocefabd planned (no LLDP here: the hosts' ToRs are unknown)
    srv = by_test(la, "pingmesh-server")[0]
    assert srv["rc"] == 0 and srv["result"]["ops"] == ["write", "read"], (srv, by_test(la, "server"))
    m = by_test(lb, "pingmesh")[0]
    assert m["result"] is not None, (m, by_test(la, "server"))
    assert m["result"]["op"] == "write" and m["result"]["size"] == 64, m  # the matrix: the first op
    pairs = {(x["src"], x["dst"]): x for x in m["result"]["pairs"]}
    for k in (("g1", "g2"), ("g2", "g1")):
        assert k in pairs and pairs[k]["n"] >= 100 and pairs[k]["lost"] == 0, (k, m, by_test(la, "server"))
        assert {q["label"] for q in pairs[k]["paths"]} == {0, 1}, pairs[k]
        assert 0 < pairs[k]["p50_us"] <= pairs[k]["p99_us"], pairs[k]
    res = by_test(lb, "pingmesh-results")[0]["result"]["items"]
    # count is per path and round (2 paths by default), as in the simulator; each round has both ops
    assert res and all(x["size"] == 64 and x["ok"] == x["n"] == 50 and x["lost"] == 0 for x in res), res[:2]
    rounds = {}
    for x in res:
        rounds.setdefault(x["time"], set()).add((x["op"], x["label"]))
    assert {("write", 0), ("write", 1), ("read", 0), ("read", 1)} in rounds.values(), rounds
    assert m["result"]["finding"]["kind"] == "none", m["result"]["finding"]
    assert sb == 0 and sa == 0
