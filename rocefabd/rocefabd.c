/* rocefabd, the program: its settings, and the wiring of the store, ingest, the API and the
 * scheduler's passes; see rocefabd.h.  The domain code is in daemon/, the REST API in api/. */
#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "api/api.h"
#include "daemon/changes.h"
#include "daemon/ingest.h"
#include "daemon/detector.h"
#include "daemon/tuner.h"
#include "daemon/pingmesh.h"
#include "daemon/portwatch.h"
#include "daemon/report.h"
#include "daemon/retention.h"
#include "daemon/sched.h"
#include "daemon/alerts.h"
#include "daemon/events.h"
#include "daemon/rwrite.h"
#include "daemon/store.h"
#include "daemon/tokens.h"
#include "rocefabd/rocefabd.h"
#include "lib/log.h"
#include "lib/registry.h"
#include "lib/timeutil.h"

static const char *const anon_roles[] = { "none", "viewer", NULL };
static const char *const sync_modes[] = { "normal", "full", NULL };
static const char *const dl_modes[] = { "off", "advise", "auto", NULL }; /* enum cc_dl_mode's order */

#define S struct rocefabd_settings
const struct conf_opt rocefabd_opts[] = {
	CONF_OPT("daemon.log_level", CONF_ENUM, S, log_level_idx, "info",
		 "error, warning, notice, info or debug", .choices = log_level_choices),
	CONF_OPT("daemon.log_target", CONF_ENUM, S, log_target, "auto",
		 "auto (journal under systemd), stderr or journal", .choices = log_target_choices),
	CONF_OPT("api.listen", CONF_STRING, S, listen, "127.0.0.1:9750",
		 "ADDRESS:PORT of the REST API and /metrics"),
	CONF_OPT("api.threads", CONF_INT, S, threads, "2", "HTTP worker threads", .min = 1,
		 .max = 256),
	CONF_OPT("api.max_body", CONF_SIZE, S, max_body, "4MiB",
		 "largest request body accepted (413 beyond)", .min = 1024, .max = 1LL << 30),
	CONF_OPT("api.max_unread", CONF_SIZE, S, max_unread, "256MiB",
		 "answers built and not yet read by their clients, in all; an answer over 64 KiB that "
		 "does not fit gets 503 BUSY", .min = 1LL << 20, .max = 1LL << 40),
	CONF_OPT("api.max_unread_per_client", CONF_SIZE, S, max_unread_per_client, "64MiB",
		 "the same, per client address (an IPv4 address, an IPv6 /64): one client cannot "
		 "take the others' share", .min = 1LL << 20, .max = 1LL << 40),
	CONF_OPT("api.connection_timeout", CONF_DURATION, S, conn_timeout, "30s",
		 "idle HTTP connections are closed after this", .min = NSEC_PER_SEC,
		 .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("api.request_timeout", CONF_DURATION, S, request_timeout, "30s",
		 "a request must have arrived completely (head and body) this long after its "
		 "connection was accepted or its previous answer sent; trickled bytes do not extend "
		 "it; 0 disables", .min = 0, .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("api.max_connections", CONF_INT, S, max_connections, "10000",
		 "open connections in all (the open-files limit is raised to fit)", .min = 16,
		 .max = 1000000),
	CONF_OPT("api.max_client_connections", CONF_INT, S, max_client_connections, "64",
		 "open connections per client address; 0 for no limit", .min = 0, .max = 1000000),
	CONF_OPT("api.rate_limit", CONF_INT, S, rate_limit, "100",
		 "requests/s per client address for requests without a valid token (anonymous, "
		 "refused); 429 beyond; 0 for no limit", .min = 0, .max = 10000000),
	CONF_OPT("api.rate_burst", CONF_INT, S, rate_burst, "200",
		 "requests a client address may send at once before api.rate_limit applies",
		 .min = 1, .max = 10000000),
	CONF_OPT("api.max_uri", CONF_SIZE, S, max_uri, "8KiB",
		 "longest request target, query included (414 beyond)", .min = 256,
		 .max = 64 << 10),
	CONF_OPT("api.max_header", CONF_SIZE, S, max_header, "16KiB",
		 "largest request head (431 beyond)", .min = 1024, .max = 256 << 10),
	CONF_OPT("api.anonymous_role", CONF_ENUM, S, anonymous_role, "none",
		 "role of requests without a token: none or viewer", .choices = anon_roles),
	CONF_OPT("api.metrics_public", CONF_BOOL, S, metrics_public, "false",
		 "serve /metrics without a token"),
	CONF_OPT("api.metrics_probe_pairs", CONF_BOOL, S, metrics_probe_pairs, "true",
		 "the pingmesh's latency and loss per pair of hosts in /metrics (864 of the demo "
		 "fabric's 10,864 series, for 32 hosts: a large fabric may want only the finding)"),
	CONF_OPT("api.metrics_priorities", CONF_STRING, S, metrics_priorities, "all",
		 "the priorities whose series the per-priority families of /metrics carry "
		 "(rocefab_port_*{priority}): all, none, or a list such as 3,4 (the lossless ones); "
		 "in the demo fabric 8,960 of 10,864 series with all, 2,240 with 3,4; the alerting "
		 "rules RocefabPfcPauseStorm and RocefabEcnMarkSpike see only the priorities kept"),
	CONF_OPT("api.tls_cert", CONF_STRING, S, tls_cert, "", "PEM certificate; enables HTTPS"),
	CONF_OPT("api.tls_key", CONF_STRING, S, tls_key, "", "PEM private key of tls_cert"),
	CONF_OPT("api.client_ca", CONF_STRING, S, client_ca, "",
		 "PEM CA certificates; when set (with api.tls_cert), a report needs a client "
		 "certificate they signed whose subject CN or a DNS subjectAltName is the agent's id"),
	CONF_OPT("api.web_root", CONF_STRING, S, web_root, ROCEFAB_DATADIR "/web",
		 "the dashboard's files, served at / (read at start); empty: no dashboard"),
	CONF_OPT("api.javascript_root", CONF_STRING, S, javascript_root, "/usr/share/javascript",
		 "where the dashboard's browser libraries are (Debian's libjs-* packages)"),
	CONF_OPT("api.cache_ttl", CONF_DURATION, S, cache_ttl, "100ms",
		 "how long list responses and valid tokens are cached; 0 disables", .min = 0,
		 .max = 10 * NSEC_PER_SEC),
	CONF_OPT("store.db", CONF_STRING, S, db, "/var/lib/rocefab/rocefab.db",
		 "sqlite database file"),
	CONF_OPT("store.queue", CONF_INT, S, queue, "1024",
		 "reports waiting for the writer before agents get 503", .min = 1, .max = 1000000),
	CONF_OPT("store.batch", CONF_INT, S, batch, "64", "reports per transaction", .min = 1,
		 .max = 100000),
	CONF_OPT("store.synchronous", CONF_ENUM, S, sync_mode, "normal",
		 "normal (survives a crash of rocefabd) or full (also survives power loss)",
		 .choices = sync_modes),
	CONF_OPT("store.retention", CONF_DURATION, S, retention, "6h",
		 "how long raw samples are kept (longer windows are read from the rollups); at "
		 "least 2 minutes, so that a restart finds the open minute's samples",
		 .min = 120 * NSEC_PER_SEC, .max = 3650LL * 86400 * NSEC_PER_SEC),
	CONF_OPT("store.retention_1m", CONF_DURATION, S, retention_1m, "14d",
		 "how long the per-minute rollups are kept", .min = 3600 * NSEC_PER_SEC,
		 .max = 3650LL * 86400 * NSEC_PER_SEC),
	CONF_OPT("store.retention_1h", CONF_DURATION, S, retention_1h, "400d",
		 "how long the per-hour rollups are kept", .min = 2 * 3600 * NSEC_PER_SEC,
		 .max = 3650LL * 86400 * NSEC_PER_SEC),
	CONF_OPT("store.max_bytes", CONF_SIZE, S, max_bytes, "0",
		 "the database's disk budget (its pages in use): above it the oldest raw samples go "
		 "first, then the oldest rollups, and a warning says so; 0: none", .min = 0,
		 .max = INT64_MAX),
	CONF_OPT("store.prune_interval", CONF_DURATION, S, prune_interval, "60s",
		 "how often retention and the budget are applied", .min = NSEC_PER_SEC,
		 .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("store.probe_retention", CONF_DURATION, S, probe_retention, "1h",
		 "how long the pingmesh's per-round results are kept (the matrix and the localization "
		 "read the last minutes; a fabric of 32 hosts writes ~2 million an hour)",
		 .min = 60 * NSEC_PER_SEC, .max = 3650LL * 86400 * NSEC_PER_SEC),
	CONF_OPT("remote_write.urls", CONF_STRING, S, rw_urls, "",
		 "Prometheus remote-write receivers (comma-separated http(s) URLs, credentials as "
		 "https://user:password@host/...) that get every sample stored, as the series of "
		 "/metrics; empty: none"),
	CONF_OPT("remote_write.queue_dir", CONF_STRING, S, rw_queue_dir, "",
		 "where the requests wait for their receiver (a directory per URL); empty: "
		 "store.db's path with .remote-write appended"),
	CONF_OPT("remote_write.max_queue_bytes", CONF_SIZE, S, rw_max_queue_bytes, "1GiB",
		 "the queue of each URL at most (snappy-compressed requests): beyond it the oldest "
		 "go, counted in rocefab_remote_write_dropped_samples_total", .min = 4096,
		 .max = INT64_MAX),
	CONF_OPT("remote_write.batch", CONF_INT, S, rw_batch, "5000", "samples per request at most",
		 .min = 1, .max = 1000000),
	CONF_OPT("remote_write.timeout", CONF_DURATION, S, rw_timeout, "30s",
		 "how long a request may take before it is retried", .min = NSEC_PER_SEC,
		 .max = 600 * NSEC_PER_SEC),
	CONF_OPT("ingest.registry", CONF_STRING, S, registry, "",
		 "counter registry JSON file; empty uses the built-in copy"),
	CONF_OPT("agents.stale_after", CONF_INT, S, stale_after, "3",
		 "an agent that misses this many report intervals is stale", .min = 1, .max = 1000),
	CONF_OPT("changes.deadline", CONF_DURATION, S, change_deadline, "60s",
		 "a configuration change its agent has not applied by then is not applied any more "
		 "(timed_out)", .min = NSEC_PER_SEC, .max = 86400 * NSEC_PER_SEC),
	CONF_OPT("changes.max_targets", CONF_INT, S, change_max_targets, "256",
		 "the most objects one bulk change (POST /api/v1/changes) may select unless its "
		 "request says \"max_targets\"", .min = 1, .max = CHANGES_MAX_TARGETS),
	CONF_OPT("detector.interval", CONF_DURATION, S, detector_interval, "200ms",
		 "how often the PFC deadlock and storm detector analyses the fast PFC lane (the "
		 "agents' agent.pfc_interval); 0 turns the detector and the lane off (otherwise 10ms at "
		 "least)",
		 .min = 0, .max = 60 * NSEC_PER_SEC),
	CONF_OPT("detector.deadlock_mode", CONF_ENUM, S, deadlock_mode, "advise",
		 "deadlocks: off (alert only), advise (alert; POST /api/v1/alerts/{id}/mitigate "
		 "breaks the cycle) or auto (break it at once); PUT /api/v1/detector/config "
		 "overrides it (kept in the database)", .choices = dl_modes),
	CONF_OPT("detector.storm_mode", CONF_ENUM, S, storm_mode, "advise",
		 "pause storms: off, advise or auto (take the culprit's switch port out of "
		 "lossless mode until it is quiet)", .choices = dl_modes),
	CONF_OPT("detector.restore", CONF_DURATION, S, detector_restore, "600ms",
		 "how long a deadlock's break lasts, and how long a storm's culprit must have "
		 "been quiet before its port is lossless again", .min = NSEC_PER_MSEC,
		 .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("cc.mode", CONF_ENUM, S, cc_mode, "advise",
		 "the congestion-control tuner of ECN and DCQCN: off, advise (its proposals wait for "
		 "POST /api/v1/cc/proposals/{id}/apply) or auto (canary, rollout, rollback by itself); "
		 "PUT /api/v1/cc/policy overrides it (kept in the database)", .choices = dl_modes),
	CONF_OPT("cc.interval", CONF_DURATION, S, cc_interval, "10s",
		 "the tuner's decision interval (it reads the fast lane, so it needs "
		 "detector.interval); 0: no tuner at all (a step left applied in part is then never "
		 "rolled back: to stop the tuner, PUT its mode off instead)",
		 .min = 0, .max = 3600 * NSEC_PER_SEC),
	CONF_OPT_END,
};
#undef S

static int load_registry(const struct rocefabd_settings *s, struct reg **ret)
{
	struct rf_err e = { 0 };
	char buf[600];
	int r = s->registry && *s->registry ? reg_load_file(s->registry, ret, &e)
					    : reg_load_builtin(ret, &e);

	if (r < 0)
		log_msg(LOG_ERR, "daemon", e.code, "cannot load the counter registry: %s",
			rf_err_str(&e, buf, sizeof(buf)));
	return r;
}

static struct store_conf store_conf_of(const struct rocefabd_settings *s, unsigned readers)
{
	return (struct store_conf){ .path = s->db, .queue_max = (unsigned)s->queue,
				    .batch_max = (unsigned)s->batch, .sync_full = s->sync_mode == 1,
				    .readers = readers };
}

/* --- run -------------------------------------------------------------------------------------- */

/* The tuner's probe signal: the pingmesh's tail latency since the last decision. */
static int probe_tail(void *ctx, double *p99_us)
{
	return pingmesh_take_tail(ctx, p99_us, NULL);
}

/* The faults the detector names that no congestion control cures hold the tuner's harder
 * steps (daemon/tuner.h). */
static bool tuner_fault_of(void *ctx, unsigned prio, char *buf, size_t len)
{
	return detector_fault(ctx, prio, buf, len);
}

/* The pingmesh's findings that a PFC finding explains are attributed to it (daemon/pingmesh.h). */
static bool pingmesh_explainer(void *ctx, const char *kind, const char *subject, int64_t window_ns, char *buf,
			       size_t len, const char **ret_class)
{
	return detector_explains(ctx, kind, subject, window_ns, buf, len, ret_class);
}

/* The periodic passes: how often each runs, and when first. */
static int add_passes(struct sched *sch, struct store *st, struct pingmesh *pm, struct retention *rt,
		      struct ingest *ing, int64_t prune_interval, struct detector *det,
		      int64_t det_interval, struct tuner *tn, int64_t cc_interval, struct portwatch *pw)
{
	const struct sched_pass passes[] = {
		/* changes whose agent went silent past their deadline: timed out */
		{ .name = "changes", .period_ns = NSEC_PER_SEC, .first_ns = NSEC_PER_SEC,
		  .run = changes_sweep, .ctx = st },
		/* pingmesh: localize from the probe matrix, keep the alerts in step */
		{ .name = "pingmesh", .period_ns = PINGMESH_PASS_NS, .first_ns = NSEC_PER_SEC,
		  .run = pingmesh_localize, .ctx = pm },
		/* old samples and probe results */
		{ .name = "retention", .period_ns = prune_interval,
		  .first_ns = prune_interval < 10 * NSEC_PER_SEC ? prune_interval : 10 * NSEC_PER_SEC,
		  .run = retention_prune, .ctx = rt },
		/* the open minute of ports silent for two of those: into the rollups */
		{ .name = "rollups", .period_ns = prune_interval, .first_ns = prune_interval,
		  .run = ingest_flush_idle, .ctx = ing },
		/* closed hours (days) of rollups into their blocks, a few ports at a time */
		{ .name = "blocks", .period_ns = NSEC_PER_SEC, .first_ns = NSEC_PER_SEC,
		  .run = ingest_compact, .ctx = ing },
		/* ports that went down: port_down alerts */
		{ .name = "ports", .period_ns = 2 * NSEC_PER_SEC, .first_ns = 2 * NSEC_PER_SEC,
		  .run = portwatch_pass, .ctx = pw },
	};
	int64_t now = tu_mono_ns();
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(passes); i++)
		if ((r = sched_add(sch, &passes[i], now)) < 0)
			return r;
	if (det) {
		/* the PFC detector on the fast lane */
		struct sched_pass p = { .name = "detector", .period_ns = det_interval / 4, .first_ns = det_interval,
					.run = detector_run, .ctx = det };

		if ((r = sched_add(sch, &p, now)) < 0)
			return r;
	}
	if (tn) {
		/* the tuner decides once an interval; outcomes and decisions are followed between */
		int64_t period = cc_interval / 4 < NSEC_PER_SEC ? cc_interval / 4 : NSEC_PER_SEC;
		struct sched_pass p = { .name = "tuner", .period_ns = period, .first_ns = cc_interval,
					.run = tuner_run, .ctx = tn };

		if ((r = sched_add(sch, &p, now)) < 0)
			return r;
	}
	return 0;
}

/* Each connection is a descriptor: the open-files limit (1,024 by default) must fit
 * api.max_connections and what the database and the log need besides. */
static void fit_open_files(uint64_t connections)
{
	struct rlimit rl;
	rlim_t want = connections + 256;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
		log_warning("daemon", "open files limited to %llu: fewer than api.max_connections "
				      "(%llu) connections can be open",
			    (unsigned long long)rl.rlim_cur, (unsigned long long)connections);
}

/* Agent tokens made without a binding still work for this release: say so, per token. */
static void warn_unbound_tokens(struct store *st)
{
	struct store_reader *rd = store_reader_get(st);
	json_t *names = NULL, *v;
	size_t i;

	if (!rd || tokens_unbound(rd, &names) < 0) {
		log_warning("daemon", "cannot read the tokens to check their agent bindings");
		store_reader_put(st, rd);
		return;
	}
	store_reader_put(st, rd);
	json_array_foreach(names, i, v)
		log_msg(LOG_WARNING, "daemon", "UNBOUND_AGENT_TOKEN",
			"agent token '%s' is not bound to agents: it may report as any agent; bind it "
			"(rocefabd token bind %s --agent ID|PATTERN) or replace it: the next release "
			"refuses it",
			json_string_value(v), json_string_value(v));
	json_decref(names);
}

/* Events kept for a stream that resumes (Last-Event-ID) after a reconnection. */
#define EVENTS_KEPT 4096

/* Every write of a change is news (stored, sent, applied...); alerts report their own news
 * (raised, cleared, acknowledged: store_note_row), not their refresh at every pass. */
static const char *const watched_tables[] = { "changes", NULL };

/* A row committed (store_set_watch): its event, {"id": rowid} ("alert" or "change"; rowid 0:
 * many rows, reload the list). */
static void on_row(void *ctx, const char *table, int64_t rowid)
{
	events_publish(ctx, strcmp(table, ALERTS_TABLE) == 0 ? "alert" : "change",
		       json_pack("{s:I}", "id", (json_int_t)rowid));
}

/* The keys SIGHUP applies; every other changed key is named as needing a restart. */
static const char *const reloadable[] = { "daemon.log_level", "store.retention", "store.retention_1m",
					  "store.retention_1h", "store.probe_retention",
					  "agents.stale_after", NULL };

/* "key = value" lines of a configuration, for comparing two. */
static char *dump_of(const struct rocefabd_settings *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	conf_dump(rocefabd_opts, s, f);
	fclose(f);
	return text;
}

/* The value of key (section.name) in a dump ("[section]" lines, then "name = value"; "" when
 * absent), into out. */
static void value_in(const char *dump, const char *key, char *out, size_t len)
{
	const char *dot = strchr(key, '.');
	char section[64] = "";

	out[0] = '\0';
	if (!dot)
		return;
	for (const char *l = dump; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t n = strcspn(l, "\n"), kl = strlen(dot + 1);

		if (l[0] == '[') {
			snprintf(section, sizeof(section), "%.*s", (int)(strcspn(l + 1, "]\n")), l + 1);
			continue;
		}
		if (strlen(section) != (size_t)(dot - key) || strncmp(section, key, (size_t)(dot - key)) ||
		    strncmp(l, dot + 1, kl) || (l[kl] != ' ' && l[kl] != '='))
			continue;
		{
			const char *v = memchr(l, '=', n);

			v = v ? v + 1 + (v[1] == ' ') : l + n;
			snprintf(out, len, "%.*s", (int)(l + n - v), v);
		}
		return;
	}
}

/* SIGHUP: applies what can change at run time, names what cannot.  cur is updated to what is
 * in force. */
static void reload(struct rocefabd_settings *cur, const struct rocefabd_settings *next, struct retention *rt,
		   struct api *api)
{
	char *a = dump_of(cur), *b = dump_of(next);
	int applied = 0, ignored = 0;

	if (!a || !b) {
		log_error("daemon", "SIGHUP: out of memory; nothing reloaded");
		free(a);
		free(b);
		return;
	}
	for (const struct conf_opt *o = rocefabd_opts; o->name; o++) {
		char was[300], now[300];
		bool can = false;

		if (o->type == CONF_GROUP)
			continue;
		value_in(a, o->name, was, sizeof(was));
		value_in(b, o->name, now, sizeof(now));
		if (!strcmp(was, now))
			continue;
		for (const char *const *k = reloadable; *k; k++)
			can |= !strcmp(*k, o->name);
		if (!can) {
			log_warning("daemon", "SIGHUP: %s changed (%s -> %s): restart rocefabd to apply it", o->name,
				    was, now);
			ignored++;
			continue;
		}
		log_notice("daemon", "SIGHUP: %s %s -> %s", o->name, was, now);
		applied++;
	}
	/* said at the level in force until now: a quieter level must not hide the reload */
	log_notice("daemon", "SIGHUP: configuration reloaded: %d change(s) applied, %d waiting for a restart",
		   applied, ignored);
	/* the reloadable values, whether they changed or not */
	cur->log_level_idx = next->log_level_idx;
	log_configure(cur->log_level_idx, cur->log_target);
	cur->retention = next->retention;
	cur->retention_1m = next->retention_1m;
	cur->retention_1h = next->retention_1h;
	cur->probe_retention = next->probe_retention;
	retention_configure(rt, cur->retention, cur->retention_1m, cur->retention_1h,
			    cur->probe_retention);
	cur->stale_after = next->stale_after;
	api_set_stale_intervals(api, next->stale_after);
	free(a);
	free(b);
}

/* The API's part of the settings. */
static struct api_conf api_conf_of(const struct rocefabd_settings *s)
{
	return (struct api_conf){
		.listen = s->listen, .threads = (unsigned)s->threads, .max_body = s->max_body,
		.max_unread = s->max_unread, .max_unread_per_client = s->max_unread_per_client,
		.conn_timeout_ns = s->conn_timeout,
		.anonymous_role = s->anonymous_role == 1 ? ROLE_VIEWER : ROLE_NONE,
		.metrics_public = s->metrics_public,
		.metrics_priorities = s->metrics_priorities, .tls_cert = s->tls_cert, .tls_key = s->tls_key,
		.client_ca = s->client_ca,
		.cache_ttl_ns = s->cache_ttl, .stale_intervals = s->stale_after,
		.change_deadline_ns = s->change_deadline,
		.change_max_targets = (size_t)s->change_max_targets,
		.max_connections = (unsigned)s->max_connections,
		.max_client_connections = (unsigned)s->max_client_connections,
		.rate_limit = (double)s->rate_limit, .rate_burst = (unsigned)s->rate_burst,
		.request_timeout_ns = s->request_timeout, .max_uri = s->max_uri,
		.max_header = s->max_header, .web_root = s->web_root,
		.javascript_root = s->javascript_root,
	};
}

/* Each coarser kind of data kept at least as long as the finer: a query reads the rollups up to
 * the last minute written and the raw samples after it, and cannot tell a minute pruned before
 * its raw samples from one never written. */
static int check_retentions(const struct rocefabd_settings *s, struct rf_err *e)
{
	char a[32], b[32];

	if (s->retention_1m < s->retention)
		return rf_err_set(e, -EINVAL, "BAD_RETENTION", "store.retention_1m",
				  "%s, less than store.retention (%s): minutes must be kept at least as long as "
				  "the raw samples",
				  tu_format_duration(s->retention_1m, a, sizeof(a)), tu_format_duration(s->retention, b, sizeof(b)));
	if (s->retention_1h < s->retention_1m)
		return rf_err_set(e, -EINVAL, "BAD_RETENTION", "store.retention_1h",
				  "%s, less than store.retention_1m (%s): hours must be kept at least as long as "
				  "the minutes",
				  tu_format_duration(s->retention_1h, a, sizeof(a)), tu_format_duration(s->retention_1m, b, sizeof(b)));
	return 0;
}

/* The detector's interval: 0 (off) or at least DETECTOR_INTERVAL_MIN (its pass runs four times
 * an interval: 1ns made no pass at all, and "cannot start: Invalid argument"; 1us kept a core
 * busy). */
#define DETECTOR_INTERVAL_MIN (10 * NSEC_PER_MSEC)
static int check_intervals(const struct rocefabd_settings *s, struct rf_err *e)
{
	char a[32];

	if (s->detector_interval > 0 && s->detector_interval < DETECTOR_INTERVAL_MIN)
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "detector.interval",
				  "%s: 0 (off) or at least 10ms", tu_format_duration(s->detector_interval, a, sizeof(a)));
	/* (a decision without a fast-lane interval of its own decides on nothing new: an operator
	 * tried 1ms, and --check-config said OK) */
	if (s->cc_interval > 0 && s->detector_interval > 0 && s->cc_interval < s->detector_interval) {
		char b[32];

		return rf_err_set(e, -EINVAL, "BAD_VALUE", "cc.interval",
				  "%s: 0 (off) or at least detector.interval (%s): each decision reads the fast "
				  "lane's intervals since the last",
				  tu_format_duration(s->cc_interval, a, sizeof(a)),
				  tu_format_duration(s->detector_interval, b, sizeof(b)));
	}
	return 0;
}

int rocefabd_check_db_dir(const struct rocefabd_settings *s, struct rf_err *e)
{
	char *copy = strdup(s->db), *dir;
	struct stat st;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (stat(dir, &st) < 0)
		r = rf_err_set(e, -errno, "STORE_ERROR", "store.db", "%s: its directory %s: %s", s->db, dir,
			       strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		r = rf_err_set(e, -ENOTDIR, "STORE_ERROR", "store.db", "%s: %s is not a directory", s->db, dir);
	free(copy);
	return r;
}

int rocefabd_check(const struct rocefabd_settings *s, struct rf_err *e)
{
	struct api_conf ac = api_conf_of(s);
	int r = check_retentions(s, e);

	if (r == 0)
		r = check_intervals(s, e);
	if (r == 0)
		r = rwrite_check(s->rw_urls, e);
	return r < 0 ? r : api_check_conf(&ac, e);
}

int rocefabd_check_tls(const struct rocefabd_settings *s, struct rf_err *e)
{
	struct api_conf ac = api_conf_of(s);

	return api_check_tls_files(&ac, e);
}

int rocefabd_run(const struct rocefabd_settings *s, rocefabd_reload_fn reload_fn, void *reload_ctx)
{
	/* what is in force: SIGHUP changes its reloadable values (its strings stay s's) */
	struct rocefabd_settings live = *s;
	struct api_conf ac = api_conf_of(s);
	struct pingmesh_opts po = { .window_ns = PINGMESH_WINDOW_NS, .metrics_pairs = s->metrics_probe_pairs };
	struct store_conf sc = store_conf_of(s, (unsigned)s->threads + 2);
	struct api_deps deps = { .started_ns = tu_now_ns() };
	struct retention rt = { .samples_ns = s->retention, .minutes_ns = s->retention_1m,
				.hours_ns = s->retention_1h, .probes_ns = s->probe_retention,
				.max_bytes = s->max_bytes };
	struct pingmesh *pm = NULL;
	struct portwatch *pw = NULL;
	struct detector *det = NULL;
	struct tuner *tn = NULL;
	struct sched *sch = NULL;
	struct reg *reg = NULL;
	struct store *st = NULL;
	struct ingest *ing = NULL;
	struct api *api = NULL;
	struct events *ev = NULL;
	struct rwrite *rw = NULL;
	struct rf_err e = { 0 };
	sigset_t sigs;
	char buf[600];
	int status = 1, r;

	/* Signals are taken synchronously by this thread; every other thread inherits the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* a file size limit (ulimit -f) makes a write fail (EFBIG: said, and health warns), not
	 * the daemon die */
	signal(SIGXFSZ, SIG_IGN);

	if (check_retentions(s, &e) < 0 || check_intervals(s, &e) < 0 || rwrite_check(s->rw_urls, &e) < 0) {
		log_msg(LOG_ERR, "daemon", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	if (load_registry(s, &reg) < 0)
		goto out;
	if (store_open(&sc, true, &st, &e) < 0) {
		log_msg(LOG_ERR, "store", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	/* alerts and configuration changes reach GET /api/v1/events as they commit */
	if (events_new(EVENTS_KEPT, &ev) < 0 || store_set_watch(st, watched_tables, on_row, ev) < 0) {
		log_error("daemon", "cannot start: out of memory");
		goto out;
	}
	if (ingest_new(st, reg, &ing, &e) < 0) {
		log_msg(LOG_ERR, "ingest", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	{
		char qdir[4096];
		struct rwrite_conf rc = { .urls = s->rw_urls, .queue_dir = qdir,
					  .max_queue_bytes = s->rw_max_queue_bytes,
					  .batch = (unsigned)s->rw_batch, .timeout_ns = s->rw_timeout,
					  .user_agent = "rocefabd/" ROCEFAB_VERSION };

		snprintf(qdir, sizeof(qdir), "%s", s->rw_queue_dir);
		if (!qdir[0])
			snprintf(qdir, sizeof(qdir), "%s.remote-write", s->db);
		if (rwrite_new(&rc, &rw, &e) < 0) {
			log_msg(LOG_ERR, "remote-write", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
			goto out;
		}
		ingest_set_rwrite(ing, rw);
	}
	rt.store = st;
	retention_init(&rt);
	ingest_set_idle(ing, 2 * s->prune_interval);
	/* with every report: the changes for its agent, then its probe results and plan */
	if (s->detector_interval > 0) {
		struct detector_opts dopts = {
			.interval_ns = s->detector_interval,
			.deadline_ns = s->change_deadline,
			.conf = { .deadlock_mode = (enum cc_dl_mode)s->deadlock_mode,
				  .storm_mode = (enum cc_dl_mode)s->storm_mode, .restore_ns = s->detector_restore },
		};

		if ((r = detector_new(st, reg, &dopts, &det)) < 0) {
			log_error("daemon", "cannot start the detector: %s", strerror(-r));
			goto out;
		}
	}
	if (s->cc_interval > 0 && !det) {
		log_warning("daemon", "cc.interval is set but detector.interval is 0: the tuner reads the "
				      "fast lane, so it is off");
	} else if (s->cc_interval > 0) {
		struct tuner_opts topts = { .interval_ns = s->cc_interval, .deadline_ns = s->change_deadline,
					    .mode = (enum cc_tn_mode)s->cc_mode };

		if ((r = tuner_new(st, &topts, &tn)) < 0) {
			log_error("daemon", "cannot start the tuner: %s", strerror(-r));
			goto out;
		}
		detector_set_listener(det, tuner_observe, tn);
		tuner_set_events(tn, ev);
	}
	if ((r = pingmesh_new(st, &po, &pm)) < 0 || (r = ingest_add_hook(ing, changes_on_report, NULL)) < 0 ||
	    (r = ingest_add_hook(ing, pingmesh_on_report, pm)) < 0 || (r = sched_new(&sch)) < 0 ||
	    (r = portwatch_new(st, &pw)) < 0 ||
	    (r = add_passes(sch, st, pm, &rt, ing, s->prune_interval, det, s->detector_interval, tn,
			    s->cc_interval, pw)) < 0) {
		log_error("daemon", "cannot start: %s", strerror(-r));
		goto out;
	}
	deps.store = st;
	deps.ingest = ing;
	deps.reg = reg;
	deps.pingmesh = pm;
	deps.detector = det;
	deps.tuner = tn;
	deps.events = ev;
	deps.retention = &rt;
	deps.rwrite = rw;
	if (det)
		pingmesh_set_explainer(pm, pingmesh_explainer, det);
	if (tn)
		tuner_set_probe_source(tn, probe_tail, pm);
	if (tn && det)
		tuner_set_fault_source(tn, tuner_fault_of, det);
	fit_open_files((uint64_t)s->max_connections);
	if (api_start(&ac, &deps, &api, &e) < 0) {
		log_msg(LOG_ERR, "api", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	log_info("daemon", "rocefabd %s listening on %s, database %s, %zu counters in the registry",
		 ROCEFAB_VERSION, api_url(api), s->db, reg_size(reg));
	warn_unbound_tokens(st);
	sd_notifyf(0, "READY=1\nSTATUS=listening on %s", api_url(api));

	for (;;) {
		/* until the next pass is due, or a signal */
		int64_t wait = sched_run_due(sch, tu_mono_ns(), tu_now_ns());
		struct timespec to = { .tv_sec = wait / NSEC_PER_SEC, .tv_nsec = wait % NSEC_PER_SEC };
		int sig = sigtimedwait(&sigs, NULL, &to);

		if (sig == SIGTERM || sig == SIGINT) {
			log_info("daemon", "%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		}
		if (sig == SIGHUP) {
			struct rocefabd_settings next;

			if (!reload_fn) {
				log_notice("daemon", "SIGHUP: no configuration to reload");
			} else if (reload_fn(reload_ctx, &next) == 0) {
				reload(&live, &next, &rt, api);
				conf_fini(rocefabd_opts, &next);
			}
		}
	}
	sd_notify(0, "STOPPING=1\nSTATUS=stopping: flushing the write queue");
	/* Stop taking connections and new reports, let the queued reports commit and their agents
	 * get their answers, then stop HTTP and close the database. */
	api_quiesce(api);
	if (api_drain(api, 60 * NSEC_PER_SEC) < 0)
		log_error("daemon", "reports still unanswered after 60 s; stopping anyway");
	/* every port's open minute into the rollups: one that does not report again keeps it */
	if ((r = ingest_flush_open(ing)) < 0)
		log_warning("daemon", "the open minutes could not be written: %s; a port that reports again "
				      "rebuilds its own from its raw samples", strerror(-r));
	store_flush(st);
	api_stop(api);
	api = NULL;
	status = 0;
out:
	api_stop(api);
	if (rt.store)
		retention_stop(&rt); /* (its steps chain jobs: none after the flush) */
	if (st)
		store_flush(st);
	/* every report committed: what remote-write holds in memory goes to its queues */
	if (ing)
		ingest_set_rwrite(ing, NULL);
	rwrite_free(rw);
	sched_free(sch);
	ingest_free(ing);
	store_close(st); /* the writer has stopped: nothing uses the pingmesh any more */
	if (rt.store)
		retention_fini(&rt);
	pingmesh_free(pm);
	portwatch_free(pw);
	detector_free(det);
	tuner_free(tn);
	events_free(ev);
	reg_free(reg);
	if (status == 0)
		log_info("daemon", "stopped; database closed");
	return status;
}

/* --- report validation ------------------------------------------------------------------------ */

int rocefabd_validate_reports(const struct rocefabd_settings *s, int n, char **files)
{
	struct reg *reg = NULL;
	int bad = 0;

	if (load_registry(s, &reg) < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		struct rf_err e = { 0 };
		struct report *rep = NULL;
		char *text = NULL, buf[700];
		size_t len = 0;
		FILE *f = fopen(files[i], "re"), *m;

		if (!f) {
			printf("%s: cannot open: %s\n", files[i], strerror(errno));
			bad++;
			continue;
		}
		m = open_memstream(&text, &len);
		if (m) {
			char chunk[65536];
			size_t k;

			while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
				fwrite(chunk, 1, k, m);
			fclose(m);
		}
		fclose(f);
		if (report_parse(text ? text : "", len, reg, &rep, &e) < 0) {
			printf("%s: invalid: %s\n", files[i], rf_err_str(&e, buf, sizeof(buf)));
			bad++;
		} else {
			uint32_t skipped = 0;

			for (uint32_t v = 0; v < rep->nvalues; v++)
				skipped += rep->values[v].skip;
			printf("%s: ok: agent %s seq %lld, %u ports, %u values mapped (%u superseded "
			       "by a better source), %u not in the registry\n",
			       files[i], rep->agent_id, (long long)rep->seq, rep->nports,
			       rep->nvalues - skipped, skipped, rep->unknown_values);
		}
		report_free(rep);
		free(text);
	}
	reg_free(reg);
	return bad ? 1 : 0;
}

/* --- tokens ------------------------------------------------------------------------------------- */

static void token_usage(FILE *f)
{
	fprintf(f, "usage: rocefabd [--db FILE] token add NAME --role viewer|operator|admin\n"
		   "       rocefabd [--db FILE] token add NAME --role agent --agent ID|PATTERN[,...]\n"
		   "       rocefabd [--db FILE] token bind NAME --agent ID|PATTERN[,...]\n"
		   "       rocefabd [--db FILE] token list\n"
		   "       rocefabd [--db FILE] token revoke NAME\n"
		   "--agent: the agent ids an agent token may report as: ids or patterns ('*' any\n"
		   "characters, '?' one), comma-separated or repeated, e.g. --agent h7,\n"
		   "--agent 'leaf*,spine*'.\n");
}

/* What --agent options gave: the lists joined (checked later, an empty one too). */
struct agent_list {
	bool given;
	char text[4 * TOKEN_AGENTS_MAX];
};

/* --agent LIST / --agent=LIST at argv[*i]: 1 when it was one, 0 when not, -1 when the lists are
 * too long. */
static int agent_arg(int argc, char **argv, int *i, struct agent_list *l)
{
	size_t n = strlen(l->text);
	const char *v;

	if (strcmp(argv[*i], "--agent") == 0 && *i + 1 < argc)
		v = argv[++*i];
	else if (strncmp(argv[*i], "--agent=", 8) == 0)
		v = argv[*i] + 8;
	else
		return 0;
	if (snprintf(l->text + n, sizeof(l->text) - n, "%s%s", l->given ? "," : "", v) >=
	    (int)(sizeof(l->text) - n)) {
		fprintf(stderr, "rocefabd: --agent: the list of agents is longer than %d characters; "
				"use patterns [AGENTS_TOO_LONG]\n",
			TOKEN_AGENTS_MAX);
		return -1;
	}
	l->given = true;
	return 1;
}

static void warn_unbound(const char *name)
{
	fprintf(stderr,
		"rocefabd: warning: agent token '%s' is not bound to agents: it may report as any\n"
		"  agent, post outcomes of its changes and receive its commands.  Bind it with\n"
		"  --agent (e.g. --agent h7, --agent 'leaf*'; --agent '*' for any agent, said\n"
		"  explicitly): the next release refuses agent tokens without a binding.\n",
		name);
}

int rocefabd_token_cmd(const struct rocefabd_settings *s, int argc, char **argv)
{
	struct store_conf sc = store_conf_of(s, 1);
	struct rf_err e = { 0 };
	struct store *st = NULL;
	char buf[600];
	int r = -EINVAL;

	if (argc < 1) {
		token_usage(stderr);
		return 2;
	}
	if (strcmp(argv[0], "add") == 0 || strcmp(argv[0], "bind") == 0) {
		bool bind = strcmp(argv[0], "bind") == 0;
		struct agent_list agents = { .given = false };
		char token[TOKEN_LEN + 1];
		enum role role = ROLE_NONE;
		const char *name = NULL;
		int x;

		for (int i = 1; i < argc; i++) {
			if ((x = agent_arg(argc, argv, &i, &agents)) < 0)
				return 2;
			if (x > 0)
				continue;
			if (!bind && strcmp(argv[i], "--role") == 0 && i + 1 < argc) {
				if (role_parse(argv[++i], &role) < 0) {
					fprintf(stderr, "rocefabd: unknown role '%s' (viewer, operator, "
							"agent, admin)\n",
						argv[i]);
					return 2;
				}
			} else if (!bind && strncmp(argv[i], "--role=", 7) == 0) {
				if (role_parse(argv[i] + 7, &role) < 0) {
					fprintf(stderr, "rocefabd: unknown role '%s'\n", argv[i] + 7);
					return 2;
				}
			} else if (!name && argv[i][0] != '-') {
				name = argv[i];
			} else {
				token_usage(stderr);
				return 2;
			}
		}
		if (!name || (bind ? !agents.given : role == ROLE_NONE)) {
			token_usage(stderr);
			return 2;
		}
		/* checked here for the exit status, and shown as stored */
		if (agents.given && tokens_agents_parse(agents.text, agents.text, &e) < 0) {
			fprintf(stderr, "rocefabd: --agent: %s\n", rf_err_str(&e, buf, sizeof(buf)));
			return 2;
		}
		if (bind) {
			if ((r = store_open(&sc, false, &st, &e)) == 0 &&
			    (r = tokens_bind(st, name, agents.text, &e)) == 0)
				printf("Token '%s' now reports only as agents %s.\n", name, agents.text);
		} else if ((r = store_open(&sc, false, &st, &e)) == 0 &&
			   (r = tokens_add(st, name, role, agents.given ? agents.text : NULL, token,
					   &e)) == 0) {
			if (role == ROLE_AGENT && !agents.given)
				warn_unbound(name);
			printf("Token '%s' with role %s%s%s. It is shown only this once; store it "
			       "now:\n%s\n",
			       name, role_name(role), agents.given ? " for agents " : "", agents.text,
			       token);
		}
	} else if (strcmp(argv[0], "list") == 0 && argc == 1) {
		if ((r = store_open(&sc, false, &st, &e)) == 0)
			r = tokens_print(st, stdout, &e);
	} else if (strcmp(argv[0], "revoke") == 0 && argc == 2) {
		if ((r = store_open(&sc, false, &st, &e)) == 0 &&
		    (r = tokens_revoke(st, argv[1], &e)) == 0)
			printf("Token '%s' revoked.\n", argv[1]);
	} else {
		token_usage(stderr);
		return 2;
	}
	store_close(st);
	if (r < 0) {
		fprintf(stderr, "rocefabd: %s\n", rf_err_str(&e, buf, sizeof(buf)));
		return 1;
	}
	return 0;
}
