"""SONiC-shaped switches for the tests: a real redis-server (Debian's) started and stopped by the
test, a small client of the redis protocol (RESP) over its unix socket, and a SONiC switch
written into it the way SONiC lays out its databases (APPL_DB 0, COUNTERS_DB 2, CONFIG_DB 4).

The layout follows sonic-net/sonic-buildimage and sonic-swss: CONFIG_DB keys are TABLE|KEY,
APPL_DB and COUNTERS_DB keys TABLE:KEY, counters are SAI statistics by object id behind
COUNTERS_*_NAME_MAP, QUEUE and BUFFER_PG keys may name several ports and a range of queues,
and references may be the older [TABLE|NAME] form."""
import os
import random
import shutil
import socket
import subprocess

from conftest import Proc, wait_for

APPL_DB, COUNTERS_DB, CONFIG_DB = 0, 2, 4


class Redis:
    """redis-server on a unix socket in its own directory: no TCP port, no persistence."""

    def __init__(self, workdir, name="redis"):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "redis.sock")
        self.address = "unix:" + self.sock
        self.proc = None
        self.name = name

    def start(self):
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = Proc([server, "--port", "0", "--unixsocket", self.sock, "--unixsocketperm", "700",
                          "--save", "", "--appendonly", "no", "--daemonize", "no",
                          "--dir", self.dir], os.path.join(self.dir, "redis.log"))
        wait_for(self.answering, 10, what="redis-server to answer")
        return self

    def answering(self):
        assert self.proc.alive(), self.proc.output()[-2000:]
        try:
            return self.cmd("PING") == "PONG"
        except OSError:
            return False

    def stop(self):
        return self.proc.stop() if self.proc else None

    def pipeline(self, cmds):
        """Sends every command in one write and returns the replies in order."""
        out = bytearray()
        for c in cmds:
            out += b"*%d\r\n" % len(c)
            for a in c:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.sock)
            s.sendall(out)
            f = s.makefile("rb")
            return [self._reply(f) for _ in cmds]

    def cmd(self, *args, db=None):
        cmds = ([("SELECT", db)] if db is not None else []) + [args]
        rep = self.pipeline(cmds)[-1]
        if isinstance(rep, RedisError):
            raise rep
        return rep

    def _reply(self, f):
        line = f.readline()
        if not line:
            raise OSError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = f.read(n + 2)[:-2]
            return data.decode(errors="replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply(f) for _ in range(n)]
        raise OSError(f"unexpected reply {line!r}")

    def hgetall(self, key, db):
        flat = self.cmd("HGETALL", key, db=db)
        return dict(zip(flat[::2], flat[1::2]))

    def hset(self, key, mapping, db):
        args = ["HSET", key]
        for k, v in mapping.items():
            args += [k, v]
        return self.cmd(*args, db=db)

    def keys(self, pattern, db):
        return sorted(self.cmd("KEYS", pattern, db=db))


class RedisError(Exception):
    pass


def oid(kind, port, idx=-1):
    return "oid:0x%x%013x" % (kind, port * 16 + idx + 2)


PORT_STATS = ["SAI_PORT_STAT_IF_IN_OCTETS", "SAI_PORT_STAT_IF_OUT_OCTETS",
              "SAI_PORT_STAT_IF_IN_UCAST_PKTS", "SAI_PORT_STAT_IF_OUT_UCAST_PKTS",
              "SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS", "SAI_PORT_STAT_IF_IN_ERRORS",
              "SAI_PORT_STAT_IF_IN_DISCARDS", "SAI_PORT_STAT_IF_OUT_DISCARDS",
              "SAI_PORT_STAT_ETHER_STATS_JABBERS", "SAI_PORT_STAT_ETHER_STATS_CRC_ALIGN_ERRORS"]
PORT_STATS += [f"SAI_PORT_STAT_PFC_{p}_{k}" for p in range(8)
               for k in ("RX_PKTS", "TX_PKTS", "RX_PAUSE_DURATION_US", "TX_PAUSE_DURATION_US",
                         "ON2OFF_RX_PKTS")]
QUEUE_STATS = ["SAI_QUEUE_STAT_PACKETS", "SAI_QUEUE_STAT_BYTES", "SAI_QUEUE_STAT_DROPPED_PACKETS",
               "SAI_QUEUE_STAT_DROPPED_BYTES", "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES",
               "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED"]
PG_STATS = ["SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS", "SAI_INGRESS_PRIORITY_GROUP_STAT_BYTES",
            "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS",
            "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES"]


class SonicSwitch:
    """A SONiC switch of nports 100G ports written into r: configuration (PFC on 3,4; a shared
    lossless buffer profile and a shared WRED profile AZURE_LOSSLESS on queues 3-4 of every
    port, bound by multi-port keys in the older [TABLE|NAME] form, as 201911-era images wrote
    them), operational state, LLDP neighbours and counters.  Its counters are kept here so a
    test can compare what rocefabd shows with what the redis holds."""

    def __init__(self, r, hostname="sw1", nports=32, seed=1):
        self.r = r
        self.host = hostname
        self.ports = [f"Ethernet{4 * i}" for i in range(nports)]
        self.alias = {p: f"etp{i + 1}" for i, p in enumerate(self.ports)}
        self.rng = random.Random(seed)
        self.counters = {}  # key -> {field: int}
        self.neighbors = {}

    def write(self):
        r, cmds = self.r, [("SELECT", CONFIG_DB), ("FLUSHDB",)]
        cmds.append(("HSET", "DEVICE_METADATA|localhost", "hostname", self.host, "hwsku",
                     "Mellanox-SN2700", "platform", "x86_64-mlnx_msn2700-r0", "type", "LeafRouter"))
        cmds.append(("HSET", "BUFFER_POOL|ingress_lossless_pool", "size", "12766208", "type",
                     "ingress", "mode", "dynamic"))
        cmds.append(("HSET", "BUFFER_PROFILE|pg_lossless_100000_5m_profile", "pool",
                     "[BUFFER_POOL|ingress_lossless_pool]", "size", "50176", "xon", "19456",
                     "xoff", "30720", "xon_offset", "2496", "dynamic_th", "-3"))
        cmds.append(("HSET", "WRED_PROFILE|AZURE_LOSSLESS", "wred_green_enable", "true",
                     "wred_yellow_enable", "true", "wred_red_enable", "true", "ecn", "ecn_all",
                     "green_min_threshold", "1048576", "green_max_threshold", "2097152",
                     "green_drop_probability", "5", "yellow_min_threshold", "1048576",
                     "yellow_max_threshold", "2097152", "yellow_drop_probability", "5",
                     "red_min_threshold", "1048576", "red_max_threshold", "2097152",
                     "red_drop_probability", "5"))
        allp = ",".join(self.ports)
        cmds.append(("HSET", f"BUFFER_PG|{allp}|3-4", "profile",
                     "[BUFFER_PROFILE|pg_lossless_100000_5m_profile]"))
        cmds.append(("HSET", f"QUEUE|{allp}|3-4", "wred_profile", "[WRED_PROFILE|AZURE_LOSSLESS]",
                     "scheduler", "[SCHEDULER|scheduler.1]"))
        cmds.append(("HSET", f"QUEUE|{allp}|0-2", "scheduler", "[SCHEDULER|scheduler.0]"))
        for i, p in enumerate(self.ports):
            cmds.append(("HSET", f"PORT|{p}", "alias", self.alias[p], "lanes",
                         ",".join(str(4 * i + k) for k in range(4)), "speed", "100000",
                         "mtu", "9100", "admin_status", "up", "index", str(i + 1)))
            cmds.append(("HSET", f"PORT_QOS_MAP|{p}", "pfc_enable", "3,4", "pfcwd_sw_enable", "3,4",
                         "dscp_to_tc_map", "[DSCP_TO_TC_MAP|AZURE]"))
        # APPL_DB: state, and LLDP neighbours on the first four ports: two switches that say
        # their port by name (SONiC's own lldpd: subtype local, the alias) and two hosts that
        # send a MAC as port id with the interface in the description
        cmds += [("SELECT", APPL_DB), ("FLUSHDB",)]
        for i, p in enumerate(self.ports):
            cmds.append(("HSET", f"PORT_TABLE:{p}", "oper_status", "down" if i == 31 else "up",
                         "admin_status", "up", "speed", "100000", "mtu", "9100"))
        # host1's interface is the one of tests/data/hosts/gpu-a1's first RDMA port
        self.neighbors = {"Ethernet0": ("spine1", "Ethernet8"), "Ethernet4": ("spine2", "Ethernet8"),
                          "Ethernet8": ("host1", "enp65s0f0np0"), "Ethernet12": ("host2", "eth1")}
        for p, (sysname, port) in self.neighbors.items():
            if sysname.startswith("spine"):
                cmds.append(("HSET", f"LLDP_ENTRY_TABLE:{p}", "lldp_rem_sys_name", sysname,
                             "lldp_rem_port_id_subtype", "7", "lldp_rem_port_id", port,
                             "lldp_rem_port_desc", "to " + self.host, "lldp_rem_chassis_id",
                             "98:03:9b:00:00:01"))
            else:
                cmds.append(("HSET", f"LLDP_ENTRY_TABLE:{p}", "lldp_rem_sys_name", sysname,
                             "lldp_rem_port_id_subtype", "3", "lldp_rem_port_id",
                             "0c:42:a1:00:00:%02x" % len(cmds), "lldp_rem_port_desc", port))
        # COUNTERS_DB: maps, then counters
        cmds += [("SELECT", COUNTERS_DB), ("FLUSHDB",)]
        pm, qm, qt, gm = ["HSET", "COUNTERS_PORT_NAME_MAP"], ["HSET", "COUNTERS_QUEUE_NAME_MAP"], \
            ["HSET", "COUNTERS_QUEUE_TYPE_MAP"], ["HSET", "COUNTERS_PG_NAME_MAP"]
        for i, p in enumerate(self.ports):
            pm += [p, oid(1, i)]
            for q in range(16):  # 8 unicast queues, then 8 multicast (Broadcom's layout)
                qm += [f"{p}:{q}", oid(0x15, i, q)]
                qt += [oid(0x15, i, q), "SAI_QUEUE_TYPE_UNICAST" if q < 8 else "SAI_QUEUE_TYPE_MULTICAST"]
            for g in range(8):
                gm += [f"{p}:{g}", oid(0x1a, i, g)]
        cmds += [tuple(pm), tuple(qm), tuple(qt), tuple(gm)]
        r.pipeline(cmds)
        self.bump()
        return self

    def bump(self, scale=1):
        """Every counter grows by a random amount (as over one poll of SONiC's flex counters)."""
        cmds = [("SELECT", COUNTERS_DB)]
        for i, p in enumerate(self.ports):
            groups = [(f"COUNTERS:{oid(1, i)}", PORT_STATS)]
            groups += [(f"COUNTERS:{oid(0x15, i, q)}", QUEUE_STATS) for q in range(16)]
            groups += [(f"COUNTERS:{oid(0x1a, i, g)}", PG_STATS) for g in range(8)]
            groups += [(f"PERSISTENT_WATERMARKS:{oid(0x15, i, q)}", ["SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"])
                       for q in range(8)]
            for key, fields in groups:
                cur = self.counters.setdefault(key, {})
                args = ["HSET", key]
                for fl in fields:
                    gauge = "OCCUPANCY" in fl or "WATERMARK" in fl
                    v = self.rng.randrange(0, 200000) * scale
                    cur[fl] = v if gauge else cur.get(fl, 0) + v
                    args += [fl, str(cur[fl])]
                cmds.append(tuple(args))
        # the PFC watchdog's view of the lossless queues: paused or not
        for i, p in enumerate(self.ports):
            for q in (3, 4):
                key = f"COUNTERS:{oid(0x15, i, q)}"
                paused = "true" if (i + q) % 5 == 0 else "false"
                self.counters[key]["SAI_QUEUE_ATTR_PAUSE_STATUS"] = paused
                cmds.append(("HSET", key, "SAI_QUEUE_ATTR_PAUSE_STATUS", paused))
        self.r.pipeline(cmds)

    def set_counter(self, port_index, field, value, kind=1, idx=-1):
        key = f"COUNTERS:{oid(kind, port_index, idx)}"
        self.counters.setdefault(key, {})[field] = value
        self.r.cmd("HSET", key, field, str(value), db=COUNTERS_DB)

    def clear(self):
        """What a counter clear does to the redis: every counter back to 0."""
        cmds = [("SELECT", COUNTERS_DB)]
        for key, fields in self.counters.items():
            args = ["HSET", key]
            for fl in fields:
                if fl != "SAI_QUEUE_ATTR_PAUSE_STATUS":
                    fields[fl] = 0
                    args += [fl, "0"]
            cmds.append(tuple(args))
        self.r.pipeline(cmds)


def agent_args(binary, redis, server, token_file, spool, interval="0.3s", extra=()):
    return [binary("rocefab-agent"), "--backend", "sonic", "--redis", redis.address,
            "--server", server, "--token-file", token_file, "--interval", interval,
            "--spool-dir", spool, "-L", "debug", "-o", "agent.log_target=stderr",
            "-o", "agent.jitter=0", "-o", "agent.pfc_interval=0"] + list(extra)


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=60)
