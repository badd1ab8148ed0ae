-- A schema-4 database (pingmesh results keyed without op and size), written by rocefabd
-- before migration 5, with three probe results; for test_store's migration test.
BEGIN TRANSACTION;
CREATE TABLE agent_boots(agent_id TEXT NOT NULL, boot_id TEXT NOT NULL,  last_seq INTEGER NOT NULL, first_seen_ns INTEGER NOT NULL,  PRIMARY KEY(agent_id, boot_id)) WITHOUT ROWID;
CREATE TABLE agents(  id TEXT PRIMARY KEY, role TEXT NOT NULL, hostname TEXT, version TEXT, backend TEXT,  boot_id TEXT NOT NULL, host_boot_id TEXT, seq INTEGER NOT NULL,  interval_ms INTEGER NOT NULL, first_seen_ns INTEGER NOT NULL,  last_seen_ns INTEGER NOT NULL, last_report_ns INTEGER NOT NULL,  reports INTEGER NOT NULL DEFAULT 0, samples INTEGER NOT NULL DEFAULT 0,  duplicates INTEGER NOT NULL DEFAULT 0, ignored_values INTEGER NOT NULL DEFAULT 0,  spool_dropped INTEGER NOT NULL DEFAULT 0, spool_queued INTEGER NOT NULL DEFAULT 0,  errors TEXT, devices INTEGER NOT NULL DEFAULT 0, ports INTEGER NOT NULL DEFAULT 0, ports_up INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE alerts(id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,  subject TEXT NOT NULL, state TEXT NOT NULL, first_ns INTEGER NOT NULL,  last_ns INTEGER NOT NULL, cleared_ns INTEGER, evidence TEXT);
CREATE TABLE changes(id INTEGER PRIMARY KEY AUTOINCREMENT, batch INTEGER NOT NULL,  created_ns INTEGER NOT NULL, actor TEXT NOT NULL, reason TEXT,  agent_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL, port TEXT NOT NULL,  queue INTEGER NOT NULL DEFAULT -1, params TEXT NOT NULL, old TEXT, new TEXT,  state TEXT NOT NULL, error TEXT, deadline_ns INTEGER NOT NULL, sent_ns INTEGER,  updated_ns INTEGER NOT NULL);
CREATE TABLE configs(agent_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL,  port TEXT NOT NULL, queue INTEGER NOT NULL DEFAULT -1, value TEXT NOT NULL,  t_ns INTEGER NOT NULL, PRIMARY KEY(agent_id, kind, device, port, queue)) WITHOUT ROWID;
CREATE TABLE counters(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE devices(id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, name TEXT NOT NULL,  kind TEXT NOT NULL, driver TEXT, fw_version TEXT, node_guid TEXT,  present INTEGER NOT NULL DEFAULT 1, last_seen_ns INTEGER NOT NULL,  UNIQUE(agent_id, name));
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE ports(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,  agent_id TEXT NOT NULL, device TEXT NOT NULL, port TEXT NOT NULL, netdev TEXT,  state TEXT NOT NULL, speed_mbps INTEGER, mtu INTEGER, link_layer TEXT,  present INTEGER NOT NULL DEFAULT 1, first_seen_ns INTEGER NOT NULL,  last_seen_ns INTEGER NOT NULL, peer_system TEXT, peer_port TEXT);
CREATE TABLE probe_results(src TEXT NOT NULL, dst TEXT NOT NULL, label INTEGER NOT NULL,  t_ns INTEGER NOT NULL, op TEXT NOT NULL, size INTEGER NOT NULL, n INTEGER NOT NULL,  ok INTEGER NOT NULL, lost INTEGER NOT NULL, min_us REAL, p50_us REAL, p99_us REAL,  max_us REAL, mean_us REAL, path TEXT, PRIMARY KEY(src, dst, label, t_ns)) WITHOUT ROWID;
INSERT INTO "probe_results" VALUES('h1','h2',0,1700000000000000000,'write',64,10,10,0,2.0,2.5,3.0,4.0,2.6,'["h1-leaf0","leaf0-h2"]');
INSERT INTO "probe_results" VALUES('h1','h2',1,1700000000000000000,'write',64,10,9,1,2.1,2.6,3.1,4.1,2.7,NULL);
INSERT INTO "probe_results" VALUES('h2','h1',0,1700000001000000000,'write',64,10,0,10,NULL,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE samples(port_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,  n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(port_id, t_ns)) WITHOUT ROWID;
CREATE TABLE tokens(name TEXT PRIMARY KEY, role TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,  created_ns INTEGER NOT NULL, revoked_ns INTEGER) WITHOUT ROWID;
CREATE INDEX ports_agent ON ports(agent_id, device, port);
CREATE INDEX ports_peer ON ports(peer_system, peer_port);
CREATE INDEX changes_open ON changes(agent_id, state);
CREATE INDEX changes_object ON changes(agent_id, kind, device, port, queue, id);
CREATE INDEX changes_batch ON changes(batch);
CREATE INDEX probe_results_t ON probe_results(t_ns);
CREATE INDEX alerts_active ON alerts(state, kind, subject);
DELETE FROM "sqlite_sequence";
COMMIT;
PRAGMA user_version = 4;
