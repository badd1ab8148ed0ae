-- A schema-5 database (tokens without an agent binding), written by rocefabd before
-- migration 6: agent token "fleet" (rfb_v5fleetAgentTokenMadeBeforeAgentBinding0001), operator
-- token "ops" (rfb_v5operatorTokenMadeBeforeAgentBinding000002) and a revoked agent token.
-- Used by tests/unit/test_store.c and tests/system/test_security.py.
BEGIN TRANSACTION;
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE agents(  id TEXT PRIMARY KEY, role TEXT NOT NULL, hostname TEXT, version TEXT, backend TEXT,  boot_id TEXT NOT NULL, host_boot_id TEXT, seq INTEGER NOT NULL,  interval_ms INTEGER NOT NULL, first_seen_ns INTEGER NOT NULL,  last_seen_ns INTEGER NOT NULL, last_report_ns INTEGER NOT NULL,  reports INTEGER NOT NULL DEFAULT 0, samples INTEGER NOT NULL DEFAULT 0,  duplicates INTEGER NOT NULL DEFAULT 0, ignored_values INTEGER NOT NULL DEFAULT 0,  spool_dropped INTEGER NOT NULL DEFAULT 0, spool_queued INTEGER NOT NULL DEFAULT 0,  errors TEXT, devices INTEGER NOT NULL DEFAULT 0, ports INTEGER NOT NULL DEFAULT 0, ports_up INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE agent_boots(agent_id TEXT NOT NULL, boot_id TEXT NOT NULL,  last_seq INTEGER NOT NULL, first_seen_ns INTEGER NOT NULL,  PRIMARY KEY(agent_id, boot_id)) WITHOUT ROWID;
CREATE TABLE devices(id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, name TEXT NOT NULL,  kind TEXT NOT NULL, driver TEXT, fw_version TEXT, node_guid TEXT,  present INTEGER NOT NULL DEFAULT 1, last_seen_ns INTEGER NOT NULL,  UNIQUE(agent_id, name));
CREATE TABLE ports(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,  agent_id TEXT NOT NULL, device TEXT NOT NULL, port TEXT NOT NULL, netdev TEXT,  state TEXT NOT NULL, speed_mbps INTEGER, mtu INTEGER, link_layer TEXT,  present INTEGER NOT NULL DEFAULT 1, first_seen_ns INTEGER NOT NULL,  last_seen_ns INTEGER NOT NULL, peer_system TEXT, peer_port TEXT);
CREATE TABLE counters(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE samples(port_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,  n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(port_id, t_ns)) WITHOUT ROWID;
CREATE TABLE tokens(name TEXT PRIMARY KEY, role TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,  created_ns INTEGER NOT NULL, revoked_ns INTEGER) WITHOUT ROWID;
INSERT INTO tokens VALUES('fleet','agent','3a5fb06d0c2fe3ce9271d75356cbd63393dc219994c068a7e408235e541c945b',1700000000000000000,NULL);
INSERT INTO tokens VALUES('old~revoked~1700000100','agent','00',1700000000000000000,1700000100000000000);
INSERT INTO tokens VALUES('ops','operator','0e5f2dfb1062f24cabb4ef36019e89bb3db43acb4a9a6186fc7f8b0c975c694f',1700000000000000000,NULL);
CREATE TABLE configs(agent_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL,  port TEXT NOT NULL, queue INTEGER NOT NULL DEFAULT -1, value TEXT NOT NULL,  t_ns INTEGER NOT NULL, PRIMARY KEY(agent_id, kind, device, port, queue)) WITHOUT ROWID;
CREATE TABLE changes(id INTEGER PRIMARY KEY AUTOINCREMENT, batch INTEGER NOT NULL,  created_ns INTEGER NOT NULL, actor TEXT NOT NULL, reason TEXT,  agent_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL, port TEXT NOT NULL,  queue INTEGER NOT NULL DEFAULT -1, params TEXT NOT NULL, old TEXT, new TEXT,  state TEXT NOT NULL, error TEXT, deadline_ns INTEGER NOT NULL, sent_ns INTEGER,  updated_ns INTEGER NOT NULL);
CREATE TABLE alerts(id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,  subject TEXT NOT NULL, state TEXT NOT NULL, first_ns INTEGER NOT NULL,  last_ns INTEGER NOT NULL, cleared_ns INTEGER, evidence TEXT);
CREATE TABLE IF NOT EXISTS "probe_results"(src TEXT NOT NULL, dst TEXT NOT NULL, op TEXT NOT NULL,  size INTEGER NOT NULL, label INTEGER NOT NULL, t_ns INTEGER NOT NULL, n INTEGER NOT NULL,  ok INTEGER NOT NULL, lost INTEGER NOT NULL, min_us REAL, p50_us REAL, p99_us REAL,  max_us REAL, mean_us REAL, path TEXT,  PRIMARY KEY(t_ns, src, dst, op, size, label)) WITHOUT ROWID;
DELETE FROM sqlite_sequence;
CREATE INDEX ports_agent ON ports(agent_id, device, port);
CREATE INDEX ports_peer ON ports(peer_system, peer_port);
CREATE INDEX changes_open ON changes(agent_id, state);
CREATE INDEX changes_object ON changes(agent_id, kind, device, port, queue, id);
CREATE INDEX changes_batch ON changes(batch);
CREATE INDEX alerts_active ON alerts(state, kind, subject);
CREATE INDEX probe_results_pair ON probe_results(src, dst, t_ns);
COMMIT;
PRAGMA user_version = 5;
