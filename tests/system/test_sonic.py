"""SONiC switches (issue 14): rocefab-agent --backend sonic against a real redis-server holding a
SONiC switch's databases, checked through rocefabd's REST API; and rocefab-sim serve --sonic,
which publishes simulated switches in SONiC's layout and applies their CONFIG_DB, so that the
sonic backend runs against a live fabric."""
import json
import os
import re
import statistics

from conftest import ROOT, SIM_AGENTS, SCHEMAS, Proc, binary, copy_tree, wait_for
from sonic import APPL_DB, CONFIG_DB, COUNTERS_DB, Redis, SonicSwitch, agent_args, oid, run

LIVE = os.path.join(ROOT, "tests", "sim", "live")
DEMO = os.path.join(ROOT, "sim", "scenarios", "demo.json")


def sonic_sources():
    """(group, SONiC field, index or None) -> (counter, priority): the registry's sonic_* sources."""
    with open(os.path.join(SCHEMAS, "counters.json")) as f:
        reg = json.load(f)
    out = {}
    for c in reg["counters"]:
        for s in c["sources"]:
            if not s["group"].startswith("sonic_"):
                continue
            if "%d" not in s["name"]:
                out[(s["group"], s["name"], None)] = (c["name"], None)
                continue
            for p in range(8):
                name = s["name"].replace("%d", str(p))
                if "@" in name:
                    fld, idx = name.split("@")
                    out[(s["group"], fld, int(idx))] = (c["name"], p)
                else:
                    out[(s["group"], name, None)] = (c["name"], p)
    return out


def start_agent(world, d, redis, tok, name="sonic-agent", extra=()):
    spool = os.path.join(world.tmp, f"spool-{name}")
    p = Proc(agent_args(binary, redis, d.url, tok, spool, extra=extra),
             os.path.join(world.tmp, f"{name}.log"))
    world.procs.append(p)
    return p


def expected_raw(sw, port_index):
    """What the port's newest counters must say, from what the redis holds: {(counter, prio): raw}."""
    src = sonic_sources()
    want = {}
    tables = [("sonic_port", f"COUNTERS:{oid(1, port_index)}", None)]
    tables += [("sonic_queue", f"COUNTERS:{oid(0x15, port_index, q)}", q) for q in range(8)]
    tables += [("sonic_pg", f"COUNTERS:{oid(0x1a, port_index, g)}", g) for g in range(8)]
    tables += [("sonic_queue_watermark", f"PERSISTENT_WATERMARKS:{oid(0x15, port_index, q)}", q)
               for q in range(8)]
    for group, key, idx in tables:
        for fld, v in sw.counters.get(key, {}).items():
            m = src.get((group, fld, idx))
            if m:
                want[m] = 1 if v == "true" else 0 if v == "false" else v
    return want


def newest(c, port_id):
    doc = c.json(f"/api/v1/ports/{port_id}")
    return {(x["name"], x["priority"]): x["raw"] for x in doc["counters"]}, doc


def test_a_sonic_switch_in_redis_comes_out_of_rest_as_it_is(world):
    r = Redis(world.tmp).start()
    world.procs.append(r.proc)
    sw = SonicSwitch(r, nports=32).write()
    d = world.daemon().start()
    _, tok = d.token("sonic", "agent", agent="sw1")
    d.token("viewer", "viewer")
    c = d.client("viewer")
    agent = start_agent(world, d, r, tok)
    wait_for(lambda: c.get("/api/v1/switches/sw1").status_code == 200, 10, what="the switch reported")

    # inventory: 32 ports by their SONiC names, speeds and states from CONFIG_DB and APPL_DB
    s = c.json("/api/v1/switches/sw1")
    assert s["ports"] == 32 and s["ports_up"] == 31 and s["backend"] == "sonic", s
    ports = {p["port"]: p for p in c.json("/api/v1/ports", params={"host": "sw1"})["items"]}
    assert sorted(ports, key=lambda n: int(n[8:])) == sw.ports
    assert ports["Ethernet0"]["speed_mbps"] == 100000 and ports["Ethernet124"]["state"] == "down"
    # neighbours from LLDP_ENTRY_TABLE: a switch's port id (subtype local), a host's description
    got = set()
    for l in c.json("/api/v1/links")["items"]:
        a, b = (l["a"], l["b"]) if l["a"]["node"] == "sw1" else (l["b"], l["a"])
        assert b["port_id"] is None  # the neighbours do not report here: one end only
        got.add((a["port"], b["node"], b["port"]))
    assert got == {(p, s_, pp) for p, (s_, pp) in sw.neighbors.items()}, got
    # host1 reports (a recorded host without lldpd): the switch names its port by interface,
    # and the link gets both ends; no link to a host port that no one names
    _, htok = d.token("host1", "agent", agent="host1")
    world.agent("host1", copy_tree("gpu-a1", os.path.join(world.tmp, "gpu-a1")), d.url, htok).start()

    def host_link():
        for l in c.json("/api/v1/links")["items"]:
            ends = {l["a"]["node"]: l["a"], l["b"]["node"]: l["b"]}
            if "host1" in ends and ends["host1"]["port_id"]:
                return l
    lk = wait_for(host_link, 10, what="the link to host1 with both ends")
    ends = {lk["a"]["node"]: lk["a"], lk["b"]["node"]: lk["b"]}
    assert ends["sw1"]["port"] == "Ethernet8" and ends["host1"]["port_id"].startswith("host1:mlx5_")
    links = c.json("/api/v1/links")["items"]
    assert len(links) == 4 and not any("(null)" in (l["a"]["node"], l["b"]["node"]) for l in links), links

    # counters: every mapped SAI statistic of a port, its queues and PGs, equal to the redis
    def matches():
        have, _ = newest(c, "sw1:sw1:Ethernet8")
        want = expected_raw(sw, 2)
        return want and all(have.get(k) == v for k, v in want.items())
    wait_for(matches, 10, what="Ethernet8's counters equal to COUNTERS_DB")
    have, doc = newest(c, "sw1:sw1:Ethernet8")
    want = expected_raw(sw, 2)
    assert len(want) > 100, len(want)  # port, PFC per priority, queues, PGs, watermarks
    assert have[("pfc_rx_pause_frames", 3)] == sw.counters[f"COUNTERS:{oid(1, 2)}"]["SAI_PORT_STAT_PFC_3_RX_PKTS"]
    assert ("ecn_marked_packets", 4) in have and ("pfc_paused", 3) in have
    assert any(k[0] == "phy_rx_crc_errors" for k in have), have  # (the tuner's lost frames)
    # multicast queues (8-15) are not counted as priorities
    assert not any(k[0] == "prio_tx_bytes" and k[1] is None for k in have)

    # configuration: ECN per queue from the shared WRED profile, PFC from PORT_QOS_MAP and the
    # lossless buffer profile, through keys covering every port in the [TABLE|NAME] form
    ecn = c.json("/api/v1/switches/sw1/ports/Ethernet8/queues/3/ecn")["items"][0]["values"]
    assert (ecn["enabled"], ecn["kmin_bytes"], ecn["kmax_bytes"], ecn["pmax"]) == (True, 1048576, 2097152, 0.05)
    assert ecn["wred_profile"] == "AZURE_LOSSLESS"
    off = c.json("/api/v1/switches/sw1/ports/Ethernet8/queues/0/ecn")["items"][0]["values"]
    assert off["enabled"] is False
    pfc = c.json("/api/v1/switches/sw1/ports/Ethernet8/pfc")["items"][0]["values"]
    assert pfc["enable"] == 0x18 and pfc["mode"] == "dynamic" and pfc["alpha_shift"] == -3
    assert pfc["headroom_bytes"] == 30720 and pfc["shared_bytes"] == 12766208
    # the switch view computes the XOFF threshold SONiC does not report: alpha x shared / (1 + alpha)
    port = next(p for p in c.json("/api/v1/switches/sw1")["port_list"] if p["port"] == "Ethernet8")
    assert port["xoff_threshold"] == {"bytes": 12766208 // 9, "from": "computed"}, port
    assert c.json("/api/v1/agents/sw1")["errors"] == []

    # counters cleared (sonic-clear, a syncd restart), and one back from the top of its range
    # (2^63 - 10 then 5000): no negative or absurd rate, ever
    sw.set_counter(2, "SAI_PORT_STAT_IF_OUT_OCTETS", 2**63 - 10)
    wait_for(lambda: newest(c, "sw1:sw1:Ethernet8")[0].get(("tx_bytes", None)) == 2**63 - 10, 10,
             what="the top of the range reported")
    t_top = c.json("/api/v1/ports/sw1:sw1:Ethernet8")["sampled_at"]
    sw.clear()
    sw.set_counter(2, "SAI_PORT_STAT_IF_OUT_OCTETS", 5000)
    sw.bump()
    wait_for(lambda: newest(c, "sw1:sw1:Ethernet8")[0] == expected_raw(sw, 2) or
             all(newest(c, "sw1:sw1:Ethernet8")[0].get(k) == v for k, v in expected_raw(sw, 2).items()),
             10, what="counters after the clear")
    sw.bump()
    wait_for(lambda: all(newest(c, "sw1:sw1:Ethernet8")[0].get(k) == v for k, v in expected_raw(sw, 2).items()),
             10, what="counters after a poll")
    series = c.json("/api/v1/ports/sw1:sw1:Ethernet8/counters", params={"from": "-5m"})["series"]
    rates = [p["rate"] for s_ in series for p in s_["points"] if p.get("rate") is not None]
    assert rates and min(rates) >= 0
    # after the top of the range: back to small values is a reset, not a wrap of 2^64 (a rate
    # no port carries), and never a negative delta
    tx = [p for s_ in series if s_["name"] == "tx_bytes" for p in s_["points"]]
    top = [i for i, p in enumerate(tx) if p.get("raw") == 2**63 - 10]
    assert top and t_top, tx
    after_top = tx[top[-1] + 1]
    assert after_top["raw"] < 2**63 - 10 and (after_top.get("delta") is None or after_top["delta"] <= after_top["raw"])
    assert "reset" in after_top.get("flags", []) or after_top.get("delta") is None, after_top
    assert all(p.get("rate") is None or p["rate"] < 12.5e9 * 1.01 for p in tx[top[-1] + 1:]), tx
    assert agent.alive()


def test_bad_data_in_redis_is_a_collection_error_not_a_crash(world):
    r = Redis(world.tmp).start()
    world.procs.append(r.proc)
    sw = SonicSwitch(r, nports=8).write()
    d = world.daemon().start()
    _, tok = d.token("sonic", "agent", agent="sw1")
    d.token("viewer", "viewer")
    c = d.client("viewer")
    agent = start_agent(world, d, r, tok)
    wait_for(lambda: c.get("/api/v1/ports/sw1:sw1:Ethernet4").status_code == 200, 10, what="reported")
    good_rx = sw.counters[f"COUNTERS:{oid(1, 1)}"]["SAI_PORT_STAT_IF_IN_OCTETS"]
    wait_for(lambda: newest(c, "sw1:sw1:Ethernet4")[0].get(("rx_bytes", None)) == good_rx, 10, what="rx")

    def errors():
        return {(e["code"], e.get("where", "")) for e in c.json("/api/v1/agents/sw1")["errors"]}

    # a counter that is not a number: named, left out, the others still read
    sw.set_counter(1, "SAI_PORT_STAT_IF_IN_OCTETS", "12abc")
    sw.set_counter(1, "SAI_PORT_STAT_IF_OUT_OCTETS", 777)
    wait_for(lambda: any(code == "SONIC_BAD_COUNTER" and "SAI_PORT_STAT_IF_IN_OCTETS" in w
                         for code, w in errors()), 10, what="the bad counter reported")
    wait_for(lambda: newest(c, "sw1:sw1:Ethernet4")[0].get(("tx_bytes", None)) == 777, 10, what="tx read")
    # left out of the report, never a wrong value
    assert newest(c, "sw1:sw1:Ethernet4")[0].get(("rx_bytes", None)) in (None, good_rx)
    # a value beyond 64 bits, and a negative one
    sw.set_counter(1, "SAI_PORT_STAT_IF_IN_OCTETS", str(2**64 + 1))
    sw.set_counter(1, "SAI_PORT_STAT_IF_OUT_OCTETS", "-5")
    wait_for(lambda: any(code == "SONIC_BAD_COUNTER" and "OUT_OCTETS" in w for code, w in errors()), 10,
             what="the negative counter reported")
    have = newest(c, "sw1:sw1:Ethernet4")[0]
    assert have.get(("tx_bytes", None)) in (None, 777) and have.get(("rx_bytes", None)) in (None, good_rx)
    # an object id too long for a queue or PG (it must not spill into another object's, so that a
    # port reports another's counters)
    r.hset("COUNTERS_PG_NAME_MAP", {"Ethernet0:7": "oid:0x" + "A" * 34 + oid(1, 0)}, db=COUNTERS_DB)
    sw.set_counter(1, "SAI_PORT_STAT_IF_OUT_OCTETS", 778)
    wait_for(lambda: newest(c, "sw1:sw1:Ethernet4")[0].get(("tx_bytes", None)) == 778, 10, what="tx read")
    assert newest(c, "sw1:sw1:Ethernet0")[0].get(("tx_bytes", None)) == \
        sw.counters[f"COUNTERS:{oid(1, 0)}"]["SAI_PORT_STAT_IF_OUT_OCTETS"]
    # garbage in the configuration: a problem named, the rest of the configuration read
    r.hset("PORT_QOS_MAP|Ethernet4", {"pfc_enable": "3,lots"}, db=CONFIG_DB)
    wait_for(lambda: ("SONIC_BAD_CONFIG", "Ethernet4") in errors(), 10, what="the bad pfc_enable reported")
    # values out of their range, or none of those allowed: named, not taken as unknown in
    # silence; a WRED profile with its thresholds the wrong way round: named once
    r.hset("PORT_TABLE:Ethernet8", {"oper_status": "sideways"}, db=APPL_DB)
    r.hset("PORT|Ethernet8", {"mtu": "-1"}, db=CONFIG_DB)
    r.hset("WRED_PROFILE|AZURE_LOSSLESS", {"green_min_threshold": "3000000"}, db=CONFIG_DB)
    def said():
        msgs = [e["message"] for e in c.json("/api/v1/agents/sw1")["errors"]]
        return msgs if {"oper_status: 'sideways' is neither up nor down", "mtu: -1 is out of range",
                        "green_min_threshold (3000000) is above green_max_threshold (2097152)"} <= set(msgs) else None
    msgs = wait_for(said, 10, what="the bad state, mtu and profile reported")
    assert msgs.count("green_min_threshold (3000000) is above green_max_threshold (2097152)") == 1, msgs
    # a key that is no hash
    r.cmd("DEL", "PORT_QOS_MAP|Ethernet12", db=CONFIG_DB)
    r.cmd("RPUSH", "PORT_QOS_MAP|Ethernet12", "3", db=CONFIG_DB)
    wait_for(lambda: ("SONIC_BAD_CONFIG", "PORT_QOS_MAP|Ethernet12") in errors(), 10,
             what="the key of the wrong type reported")
    # a port's counters under a key that is no hash: named (they were left out silently)
    r.cmd("DEL", f"COUNTERS:{oid(1, 6)}", db=COUNTERS_DB)
    r.cmd("SET", f"COUNTERS:{oid(1, 6)}", "notahash", db=COUNTERS_DB)
    wait_for(lambda: ("SONIC_BAD_COUNTER", "Ethernet24") in errors(), 10, what="the counters key of the wrong type")
    # a vanished port: gone from CONFIG_DB and COUNTERS_DB, no longer present
    r.cmd("DEL", "PORT|Ethernet28", db=CONFIG_DB)
    r.cmd("HDEL", "COUNTERS_PORT_NAME_MAP", "Ethernet28", db=COUNTERS_DB)
    wait_for(lambda: not c.json("/api/v1/ports/sw1:sw1:Ethernet28")["present"], 10, what="the port gone")
    # counters of a port that vanish while the port stays: an error naming it
    r.cmd("DEL", f"COUNTERS:{oid(1, 5)}", db=COUNTERS_DB)
    wait_for(lambda: ("SONIC_NO_COUNTERS", "Ethernet20") in errors(), 10, what="vanished counters reported")
    # no name maps at all (counters off): an error saying so, inventory still reported
    r.cmd("DEL", "COUNTERS_PORT_NAME_MAP", db=COUNTERS_DB)
    wait_for(lambda: ("SONIC_NO_COUNTER_MAPS", "COUNTERS_PORT_NAME_MAP") in errors(), 10,
             what="the missing map reported")
    assert c.json("/api/v1/switches/sw1")["ports"] == 7
    # redis gone: the agent keeps running and says so; back: it reads again
    r.stop()
    wait_for(lambda: any(code == "SONIC_UNREACHABLE" for code, _ in errors()), 10, what="redis down reported")
    assert agent.alive()
    # the agent still reports (rocefab_agent_up 1): /metrics says how many errors it reports,
    # for the rule RocefabAgentCollectionErrors
    gauge = 'rocefab_agent_collection_errors{agent="sw1",role="switch"} '
    m = re.search(re.escape(gauge) + r"(\d+)\n", c.get("/metrics").text)
    assert m and int(m.group(1)) > 0, m
    r.start()
    world.procs.append(r.proc)
    SonicSwitch(r, nports=8).write()
    wait_for(lambda: c.json("/api/v1/agents/sw1")["errors"] == [], 15, what="the agent reads again")
    assert agent.alive()
    assert gauge + "0\n" in c.get("/metrics").text


def test_a_port_alias_rocefab_does_not_take_leaves_out_that_port_only(world):
    """With sonic.port_names=alias, a port whose alias has a '/' (fortyGigE0/4, as many SKUs
    name them) is left out with an error naming it; the switch's other ports still report.
    Before, its samples and configuration still went out and rocefabd refused every report."""
    r = Redis(world.tmp).start()
    world.procs.append(r.proc)
    sw = SonicSwitch(r, nports=4)
    sw.alias["Ethernet4"] = "fortyGigE0/4"
    sw.write()
    d = world.daemon().start()
    _, tok = d.token("sonic", "agent", agent="sw1")
    d.token("viewer", "viewer")
    c = d.client("viewer")
    start_agent(world, d, r, tok, extra=["-o", "sonic.port_names=alias"])
    wait_for(lambda: c.get("/api/v1/ports/sw1:sw1:etp1").status_code == 200, 10, what="reported")
    errors = wait_for(lambda: c.json("/api/v1/agents/sw1")["errors"] or None, 10, what="the error")
    assert [(e["code"], e["where"]) for e in errors] == [("BAD_NAME", "port")], errors
    assert "fortyGigE0/4" in errors[0]["message"], errors
    ports = c.json("/api/v1/switches/sw1")["port_list"]
    assert sorted(p["port"] for p in ports) == ["etp1", "etp3", "etp4"], ports
    # its counters and its ECN are there too (the samples and configuration of the others)
    want = sw.counters[f"COUNTERS:{oid(1, 2)}"]["SAI_PORT_STAT_IF_OUT_OCTETS"]
    wait_for(lambda: newest(c, "sw1:sw1:etp3")[0].get(("tx_bytes", None)) == want, 10, what="etp3's counters")
    assert c.json("/api/v1/switches/sw1/ports/etp3/queues/3/ecn")["items"][0]["values"]["kmin_bytes"] > 0


def test_changes_write_config_db_and_never_touch_other_queues(world):
    r = Redis(world.tmp).start()
    world.procs.append(r.proc)
    SonicSwitch(r, nports=8).write()
    d = world.daemon().start()
    _, tok = d.token("sonic", "agent", agent="sw1")
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    c, ops = d.client("viewer"), d.client("ops")
    start_agent(world, d, r, tok)
    ecn = "/api/v1/switches/sw1/ports/Ethernet4/queues/3/ecn"
    # a queue the shared key covers, bound more specifically to a profile of its own, and a PG
    # likewise: splitting the shared keys must leave them as they are
    r.hset("WRED_PROFILE|OTHER", {"wred_green_enable": "true", "ecn": "ecn_all", "green_min_threshold": "7",
                                  "green_max_threshold": "9", "green_drop_probability": "1"}, db=CONFIG_DB)
    r.hset("QUEUE|Ethernet4|4", {"wred_profile": "[WRED_PROFILE|OTHER]"}, db=CONFIG_DB)
    r.hset("BUFFER_PROFILE|OTHERPG", {"pool": "[BUFFER_POOL|ingress_lossless_pool]", "xoff": "1", "size": "1",
                                      "dynamic_th": "1"}, db=CONFIG_DB)
    r.hset("BUFFER_PG|Ethernet8|4", {"profile": "[BUFFER_PROFILE|OTHERPG]"}, db=CONFIG_DB)
    # a profile called as this agent would call a new one, bound elsewhere
    r.hset("WRED_PROFILE|ROCEFAB_Ethernet4_q5", {"wred_green_enable": "true", "ecn": "ecn_all",
                                                 "green_min_threshold": "7", "green_max_threshold": "9",
                                                 "green_drop_probability": "1"}, db=CONFIG_DB)
    r.hset("QUEUE|Ethernet8|5", {"wred_profile": "ROCEFAB_Ethernet4_q5"}, db=CONFIG_DB)
    wait_for(lambda: c.get(ecn).status_code == 200, 10, what="ECN reported")
    wait_for(lambda: c.json("/api/v1/switches/sw1/ports/Ethernet4/queues/4/ecn")["items"][0]["values"]
             .get("wred_profile") == "OTHER", 10, what="the specific binding read")
    before = {k: r.hgetall(k, CONFIG_DB) for k in r.keys("*", CONFIG_DB)}

    def applied(ch_id):
        x = c.json(f"/api/v1/changes/{ch_id}")
        return x if x["state"] in ("applied", "failed") else None

    # a Kmax above the XOFF threshold the lossless profile's alpha and shared buffer give
    # (SONiC reports those, not the threshold) is refused, nothing written; it went through
    rr = ops.put(ecn, json={"kmax_bytes": 5000000, "reason": "test"})
    assert rr.status_code == 400 and rr.json()["code"] == "BAD_THRESHOLD_ORDER", rr.text
    assert "from its alpha and shared buffer" in rr.json()["detail"], rr.text
    assert {k: r.hgetall(k, CONFIG_DB) for k in r.keys("*", CONFIG_DB)} == before
    # one queue of a profile that 16 queues share: a copy for that queue alone
    rr = ops.put(ecn, json={"kmin_bytes": 200000, "kmax_bytes": 800000, "pmax": 0.1, "reason": "test"})
    assert rr.status_code == 202, rr.text
    done = wait_for(lambda: applied(rr.json()["changes"][0]["id"]), 10, what="the ECN change")
    assert done["state"] == "applied", done
    new = done["new"]
    assert new["wred_profile"] == "AZURE_LOSSLESS_Ethernet4_q3", new
    assert new["wred_profile_cloned_from"] == "AZURE_LOSSLESS"
    assert (new["kmin_bytes"], new["kmax_bytes"], new["pmax"]) == (200000, 800000, 0.1)
    prof = r.hgetall("WRED_PROFILE|AZURE_LOSSLESS_Ethernet4_q3", CONFIG_DB)
    assert prof["green_min_threshold"] == "200000" and prof["green_drop_probability"] == "10"
    assert prof["yellow_min_threshold"] == "200000"  # kept in step with green, as it was
    assert r.hgetall("QUEUE|Ethernet4|3", CONFIG_DB)["wred_profile"] == "[WRED_PROFILE|AZURE_LOSSLESS_Ethernet4_q3]"
    # the shared profile and every other queue: untouched (the multi-port key is split into
    # one key per queue with the same fields)
    assert r.hgetall("WRED_PROFILE|AZURE_LOSSLESS", CONFIG_DB) == before["WRED_PROFILE|AZURE_LOSSLESS"]
    for p in [f"Ethernet{4 * i}" for i in range(8)]:
        for q in (3, 4):
            if (p, q) in (("Ethernet4", 3), ("Ethernet4", 4)):
                continue
            assert r.hgetall(f"QUEUE|{p}|{q}", CONFIG_DB) == {
                "wred_profile": "[WRED_PROFILE|AZURE_LOSSLESS]", "scheduler": "[SCHEDULER|scheduler.1]"}, (p, q)
    # the queue bound to a profile of its own keeps it, and gets only the fields it lacked
    assert r.hgetall("QUEUE|Ethernet4|4", CONFIG_DB) == {
        "wred_profile": "[WRED_PROFILE|OTHER]", "scheduler": "[SCHEDULER|scheduler.1]"}
    other = "/api/v1/switches/sw1/ports/Ethernet4/queues/4/ecn"
    wait_for(lambda: c.json(ecn)["items"][0]["values"]["kmin_bytes"] == 200000, 10, what="read back")
    assert c.json(other)["items"][0]["values"]["kmin_bytes"] == 7  # its own profile, untouched
    assert c.json("/api/v1/switches/sw1/ports/Ethernet8/queues/3/ecn")["items"][0]["values"]["kmin_bytes"] == 1048576

    # again on the same queue: its own profile now, edited in place
    rr = ops.put(ecn, json={"kmin_bytes": 100000, "reason": "test"})
    done = wait_for(lambda: applied(rr.json()["changes"][0]["id"]), 10, what="the second change")
    assert done["state"] == "applied" and done["new"]["wred_profile"] == "AZURE_LOSSLESS_Ethernet4_q3"
    assert "wred_profile_cloned_from" not in done["new"]
    assert len(r.keys("WRED_PROFILE|*", CONFIG_DB)) == 4  # no new copy (2 were there before, 1 made)

    # a queue with no profile: a new one, under a name nothing else uses
    q5 = "/api/v1/switches/sw1/ports/Ethernet4/queues/5/ecn"
    rr = ops.put(q5, json={"enabled": True, "kmin_bytes": 300000, "kmax_bytes": 900000, "pmax": 0.02,
                           "reason": "test"})
    assert rr.status_code == 202, rr.text
    done = wait_for(lambda: applied(rr.json()["changes"][0]["id"]), 10, what="ECN on an unbound queue")
    assert done["state"] == "applied" and done["new"]["wred_profile"] == "ROCEFAB_Ethernet4_q5_2", done
    assert r.hgetall("WRED_PROFILE|ROCEFAB_Ethernet4_q5", CONFIG_DB)["green_min_threshold"] == "7"
    assert r.hgetall("QUEUE|Ethernet8|5", CONFIG_DB) == {"wred_profile": "ROCEFAB_Ethernet4_q5"}
    # what SONiC cannot express: a drop probability that is not a whole percent, refused by
    # rocefabd before it is sent (the agent refused it: a failed change, after the fact)
    rr = ops.put(ecn, json={"pmax": 0.125, "reason": "test"})
    assert rr.status_code == 400 and rr.json()["code"] == "BAD_VALUE" and rr.json()["pointer"] == "pmax", rr.text
    assert "whole percent" in rr.json()["detail"] and "12.5 %" in rr.json()["detail"], rr.text
    assert r.hgetall("WRED_PROFILE|AZURE_LOSSLESS_Ethernet4_q3", CONFIG_DB)["green_drop_probability"] == "10"
    # a whole percent as floats write it (0.1 + 0.2) is one
    rr = ops.put(ecn, json={"pmax": 0.1 + 0.2, "reason": "test"})
    assert rr.status_code == 202, rr.text
    done = wait_for(lambda: applied(rr.json()["changes"][0]["id"]), 10, what="Pmax 30 %")
    assert done["state"] == "applied", done
    assert r.hgetall("WRED_PROFILE|AZURE_LOSSLESS_Ethernet4_q3", CONFIG_DB)["green_drop_probability"] == "30"

    # PFC: the lossless buffer profile is shared by every port: a copy for this one
    pfc = "/api/v1/switches/sw1/ports/Ethernet4/pfc"
    rr = ops.put(pfc, json={"alpha_shift": -1, "reason": "test"})
    assert rr.status_code == 202, rr.text
    done = wait_for(lambda: applied(rr.json()["changes"][0]["id"]), 10, what="the PFC change")
    assert done["state"] == "applied", done
    assert done["new"]["alpha_shift"] == -1 and done["new"]["buffer_profile_cloned_from"] == "pg_lossless_100000_5m_profile"
    assert r.hgetall("BUFFER_PROFILE|pg_lossless_100000_5m_profile", CONFIG_DB)["dynamic_th"] == "-3"
    assert r.hgetall("BUFFER_PG|Ethernet8|3", CONFIG_DB)["profile"] == "[BUFFER_PROFILE|pg_lossless_100000_5m_profile]"
    assert r.hgetall("BUFFER_PG|Ethernet4|4", CONFIG_DB)["profile"] == \
        "[BUFFER_PROFILE|pg_lossless_100000_5m_profile_Ethernet4]"
    assert r.hgetall("BUFFER_PG|Ethernet8|4", CONFIG_DB) == {"profile": "[BUFFER_PROFILE|OTHERPG]"}
    assert r.hgetall("BUFFER_PROFILE|OTHERPG", CONFIG_DB)["dynamic_th"] == "1"
    # a profile with a field this agent cannot carry (not UTF-8): no copy of it is made
    r.cmd("HSET", "BUFFER_PROFILE|pg_lossless_100000_5m_profile", "vendor_x", b"\xff\xfe", db=CONFIG_DB)
    rr = ops.put("/api/v1/switches/sw1/ports/Ethernet12/pfc", json={"alpha_shift": 1, "reason": "test"})
    done = wait_for(lambda: applied(rr.json()["changes"][0]["id"]), 10, what="the refused copy")
    assert done["state"] == "failed" and done["error"]["code"] == "SONIC_UNREPRESENTABLE", done
    assert not r.keys("BUFFER_PROFILE|pg_lossless_100000_5m_profile_Ethernet12*", CONFIG_DB)
    # the lossless priorities of a port
    rr = ops.put(pfc, json={"enable": 0x08, "reason": "test"})
    done = wait_for(lambda: applied(rr.json()["changes"][0]["id"]), 10, what="the PFC enable change")
    assert done["state"] == "applied" and r.hgetall("PORT_QOS_MAP|Ethernet4", CONFIG_DB)["pfc_enable"] == "3"
    assert r.hgetall("PORT_QOS_MAP|Ethernet8", CONFIG_DB)["pfc_enable"] == "3,4"


def sonic_fabric(world, scenario, switches, interval="0.3s", pace=None):
    """rocefabd, rocefab-sim serve with the given switches published into their own redis, the
    other devices reported by virtual agents, and one sonic agent per published switch."""
    d = world.daemon().start()
    _, tok = d.token("agents", "agent", agent=SIM_AGENTS)
    d.token("viewer", "viewer")
    d.token("ops", "operator")
    reds = {s: Redis(world.tmp, f"redis-{s}").start() for s in switches}
    for rd in reds.values():
        world.procs.append(rd.proc)
    sim = world.sim(scenario, daemon=d, token_file=tok, interval=interval, pace=pace,
                    extra=[a for s in switches for a in ("--sonic", f"{s}={reds[s].address}")])
    sim.start()
    for s in switches:
        start_agent(world, d, reds[s], tok, name=f"agent-{s}",
                    extra=["-o", "sonic.port_names=alias", "-o", "sonic.clock=sim", "--interval", interval])
    return d, sim, reds


def test_live_ecn_change_through_config_db_lowers_the_queue(world):
    d, sim, reds = sonic_fabric(world, os.path.join(LIVE, "ecn.json"), ["leaf0"], interval="0.2s")
    r = reds["leaf0"]
    c, ops = d.client("viewer"), d.client("ops")
    port = "leaf0:leaf0:h0"
    ecn = "/api/v1/switches/leaf0/ports/h0/queues/3/ecn"
    wait_for(lambda: c.get(ecn).status_code == 200, 10, what="the ECN settings reported")
    cur = c.json(ecn)["items"][0]["values"]
    assert cur["kmin_bytes"] == 1000000 and cur["wred_profile"] == "AZURE_LOSSLESS"
    assert c.json("/api/v1/switches/leaf0")["backend"] == "sonic"
    wait_for(lambda: sim.ctl("GET", "/v1/clock")["fabric_time_ns"] > 70e6, 15, what="convergence")

    def depth_after(t0):
        pts = c.json(f"/api/v1/ports/{port}/counters", params={"names": "queue_depth_bytes"})["series"]
        return [p["value"] for s in pts if s.get("priority") == 3 for p in s["points"]
                if p["t"] > t0 and "value" in p]

    clock = sim.ctl("GET", "/v1/clock")
    t_start = (clock["epoch_ns"] + clock["fabric_time_ns"]) / 1e9
    wait_for(lambda: len(depth_after(t_start)) >= 10, 15, what="queue samples")
    high = statistics.median(depth_after(t_start))

    rr = ops.put(ecn, json={"kmin_bytes": 20000, "kmax_bytes": 200000, "reason": "test: through SONiC"})
    assert rr.status_code == 202, rr.text
    ch = rr.json()["changes"][0]
    done = wait_for(lambda: (lambda x: x if x["state"] in ("applied", "failed") else None)(
        c.json(f"/api/v1/changes/{ch['id']}")), 10, what="the change applied")
    assert done["state"] == "applied", done
    assert done["new"]["kmin_bytes"] == 20000 and done["new"]["wred_profile"] == "AZURE_LOSSLESS_Ethernet0_q3"
    # in CONFIG_DB, for that queue alone
    assert r.hgetall("WRED_PROFILE|AZURE_LOSSLESS_Ethernet0_q3", CONFIG_DB)["green_min_threshold"] == "20000"
    assert r.hgetall("WRED_PROFILE|AZURE_LOSSLESS", CONFIG_DB)["green_min_threshold"] == "1000000"
    # applied by the simulated switch to that queue alone
    wait_for(lambda: sim.ctl("GET", "/v1/devices/leaf0/config")["ports"]["h0"]["ecn"][3]["kmin_bytes"] == 20000,
             10, what="the switch applying CONFIG_DB")
    own = sim.ctl("GET", "/v1/devices/leaf0/config")["ports"]
    assert own["h0"]["ecn"][2]["kmin_bytes"] == 1000000 and own["h0"]["ecn"][4]["kmin_bytes"] == 1000000
    assert all(q["kmin_bytes"] == 1000000 for p, pc in own.items() if p != "h0" for q in pc["ecn"])
    # and the queue under the same load is lower
    clock = sim.ctl("GET", "/v1/clock")
    t_apply = (clock["epoch_ns"] + clock["fabric_time_ns"]) / 1e9 + 0.03
    wait_for(lambda: len(depth_after(t_apply)) >= 10, 20, what="queue samples after the change")
    low = statistics.median(depth_after(t_apply))
    assert high > 500000 and low < high / 4, (high, low)


def test_two_leaves_of_the_demo_fabric_through_sonic_look_the_same(world):
    d, sim, reds = sonic_fabric(world, DEMO, ["leaf0", "leaf1"], interval="0.5s")
    c = d.client("viewer")

    def complete():
        links = c.json("/api/v1/links")["items"]
        return len(links) == 32 + 4 * 2 and all(l["a"]["port_id"] and l["b"]["port_id"] and l["state"] == "up"
                                             for l in links)
    wait_for(complete, 20, what="every link of the demo fabric, both ends")
    for leaf in ("leaf0", "leaf1"):
        s = c.json(f"/api/v1/switches/{leaf}")
        assert s["backend"] == "sonic" and s["ports"] == 10 and s["ports_up"] == 10
        names = sorted(p["port"] for p in c.json("/api/v1/ports", params={"host": leaf})["items"])
        want = sorted(p["name"] for p in sim.ctl("GET", f"/v1/devices/{leaf}")["ports"])
        assert names == want
    assert c.json("/api/v1/switches/leaf2")["backend"] == "sim"
    # the same counters as a simulated agent reports, with rates
    have, _ = newest(c, "leaf0:leaf0:h3")
    for name in ("tx_bytes", "rx_bytes", "pfc_rx_pause_frames", "ecn_marked_packets", "queue_depth_bytes"):
        assert any(k[0] == name for k in have), name
    wait_for(lambda: any(p.get("rate") for s in c.json("/api/v1/ports/leaf0:leaf0:h3/counters",
                                                        params={"names": "tx_bytes"})["series"]
                         for p in s["points"]), 10, what="a rate on leaf0's port h3")
    assert c.json("/api/v1/agents/leaf0")["errors"] == []
    # an ECN change on leaf0 through REST: into CONFIG_DB for that queue alone, applied by the
    # simulated switch, read back in the audit log (the queue it lowers: the test above)
    ops = d.client("ops")
    rr = ops.put("/api/v1/switches/leaf0/ports/h3/queues/3/ecn",
                 json={"kmin_bytes": 100000, "kmax_bytes": 400000, "reason": "test: demo through SONiC"})
    assert rr.status_code == 202, rr.text
    done = wait_for(lambda: (lambda x: x if x["state"] in ("applied", "failed") else None)(
        c.json(f"/api/v1/changes/{rr.json()['changes'][0]['id']}")), 10, what="the change applied")
    assert done["state"] == "applied" and done["new"]["kmin_bytes"] == 100000, done
    assert done["new"]["wred_profile"] == "AZURE_LOSSLESS_Ethernet12_q3", done["new"]
    r0 = reds["leaf0"]
    assert r0.hgetall("WRED_PROFILE|AZURE_LOSSLESS_Ethernet12_q3", CONFIG_DB)["green_min_threshold"] == "100000"
    wait_for(lambda: sim.ctl("GET", "/v1/devices/leaf0/config")["ports"]["h3"]["ecn"][3]["kmin_bytes"] == 100000,
             10, what="leaf0 applying CONFIG_DB")
    own = sim.ctl("GET", "/v1/devices/leaf0/config")["ports"]
    base = sim.ctl("GET", "/v1/devices/leaf2/config")["ports"]["h16"]["ecn"]  # a leaf left alone
    assert [q["kmin_bytes"] for q in own["h3"]["ecn"][:3]] == [q["kmin_bytes"] for q in base[:3]]
    assert all(pc["ecn"][3]["kmin_bytes"] == base[3]["kmin_bytes"] for p, pc in own.items() if p != "h3")
    # leaf1's redis restarts empty (as after a crash): the simulator writes the switch again, and
    # never applies the empty CONFIG_DB as "nothing lossless, no ECN"
    r1 = reds["leaf1"]
    r1.stop()
    r1.start()
    world.procs.append(r1.proc)
    wait_for(lambda: r1.hgetall("DEVICE_METADATA|localhost", CONFIG_DB).get("hostname") == "leaf1", 10,
             what="leaf1 written into its redis again")
    wait_for(lambda: r1.hgetall("COUNTERS_PORT_NAME_MAP", COUNTERS_DB), 10, what="leaf1's counter maps again")
    own = sim.ctl("GET", "/v1/devices/leaf1/config")["ports"]
    assert all(pc["pfc"]["priorities"] == [3] for pc in own.values()), own
    assert all(pc["ecn"][3]["enabled"] for pc in own.values())
    wait_for(lambda: c.json("/api/v1/agents/leaf1")["errors"] == [], 15, what="leaf1's agent reading again")


def test_bench_sonic_smoke():
    """make bench's sonic line (tests/bench/bench_sonic.py), a few collections, so that it
    cannot rot."""
    out = run(["/usr/bin/python3", os.path.join(ROOT, "tests", "bench", "bench_sonic.py"),
               os.path.dirname(binary("rocefab-agent")), "3"])
    assert out.returncode == 0, out.stderr
    assert "agent sonic  3 collections of 64 ports" in out.stdout, out.stdout
    assert "redis-server:" in out.stdout and "ms CPU per collection" in out.stdout, out.stdout
