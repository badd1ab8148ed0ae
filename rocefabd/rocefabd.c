/* rocefabd: see daemon.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "api/api.h"
#include "daemon/changes.h"
#include "daemon/pingmesh.h"
#include "daemon/daemon.h"
#include "daemon/ingest.h"
#include "daemon/report.h"
#include "daemon/store.h"
#include "daemon/tokens.h"
#include "lib/log.h"
#include "lib/registry.h"
#include "lib/timeutil.h"

static const char *const anon_roles[] = { "none", "viewer", NULL };
static const char *const sync_modes[] = { "normal", "full", NULL };

#define S struct daemon_settings
const struct conf_opt daemon_opts[] = {
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
	CONF_OPT("api.connection_timeout", CONF_DURATION, S, conn_timeout, "30s",
		 "idle HTTP connections are closed after this", .min = NSEC_PER_SEC,
		 .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("api.anonymous_role", CONF_ENUM, S, anonymous_role, "none",
		 "role of requests without a token: none or viewer", .choices = anon_roles),
	CONF_OPT("api.metrics_public", CONF_BOOL, S, metrics_public, "false",
		 "serve /metrics without a token"),
	CONF_OPT("api.metrics_probe_pairs", CONF_BOOL, S, metrics_probe_pairs, "true",
		 "the pingmesh's latency and loss per pair of hosts in /metrics (about 100 series per "
		 "host: a large fabric may want only the finding)"),
	CONF_OPT("api.tls_cert", CONF_STRING, S, tls_cert, "", "PEM certificate; enables HTTPS"),
	CONF_OPT("api.tls_key", CONF_STRING, S, tls_key, "", "PEM private key of tls_cert"),
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
	CONF_OPT("store.retention", CONF_DURATION, S, retention, "7d",
		 "how long raw samples are kept", .min = 60 * NSEC_PER_SEC,
		 .max = 3650LL * 86400 * NSEC_PER_SEC),
	CONF_OPT("store.probe_retention", CONF_DURATION, S, probe_retention, "1h",
		 "how long the pingmesh's per-round results are kept (the matrix and the localization "
		 "read the last minutes; a fabric of 32 hosts writes ~2 million an hour)",
		 .min = 60 * NSEC_PER_SEC, .max = 3650LL * 86400 * NSEC_PER_SEC),
	CONF_OPT("ingest.registry", CONF_STRING, S, registry, "",
		 "counter registry JSON file; empty uses the built-in copy"),
	CONF_OPT("agents.stale_after", CONF_INT, S, stale_after, "3",
		 "an agent that misses this many report intervals is stale", .min = 1, .max = 1000),
	CONF_OPT("changes.deadline", CONF_DURATION, S, change_deadline, "60s",
		 "a configuration change its agent has not applied by then is not applied any more "
		 "(timed_out)", .min = NSEC_PER_SEC, .max = 86400 * NSEC_PER_SEC),
	CONF_OPT_END,
};
#undef S

static int load_registry(const struct daemon_settings *s, struct reg **ret)
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

static struct store_conf store_conf_of(const struct daemon_settings *s, unsigned readers)
{
	return (struct store_conf){ .path = s->db, .queue_max = (unsigned)s->queue,
				    .batch_max = (unsigned)s->batch, .sync_full = s->sync_mode == 1,
				    .readers = readers };
}

/* --- retention ------------------------------------------------------------------------------ */

struct prune_job {
	struct store_job job;
	int64_t before_ns, probes_before_ns;
	int changes, probe_changes;
};

static int prune_apply(struct store_job *sj, struct store *s)
{
	static const char sql[] =
		"DELETE FROM samples WHERE port_id IN (SELECT id FROM ports) AND t_ns < ?";
	struct prune_job *pj = (struct prune_job *)sj;
	sqlite3_stmt *st = store_stmt(s, sql);
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, pj->before_ns);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	pj->changes = sqlite3_changes(store_writer_db(s));
	if (rc != SQLITE_DONE)
		return store_errno(rc);
	if (!(st = store_stmt(s, "DELETE FROM probe_results WHERE t_ns < ?")))
		return -EIO;
	sqlite3_bind_int64(st, 1, pj->probes_before_ns);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	pj->probe_changes = sqlite3_changes(store_writer_db(s));
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

static void prune_done(struct store_job *sj, int result)
{
	struct prune_job *pj = (struct prune_job *)sj;

	if (result < 0)
		log_warning("store", "pruning old samples failed: %s", strerror(-result));
	else if (pj->changes || pj->probe_changes)
		log_debug("store", "pruned %d sample rows and %d probe results", pj->changes, pj->probe_changes);
	free(pj);
}

static void prune(struct store *st, int64_t retention, int64_t probe_retention)
{
	struct prune_job *pj = calloc(1, sizeof(*pj));

	if (!pj)
		return;
	pj->job.apply = prune_apply;
	pj->job.done = prune_done;
	pj->before_ns = tu_now_ns() - retention;
	pj->probes_before_ns = tu_now_ns() - probe_retention;
	if (store_submit(st, &pj->job) < 0)
		free(pj); /* busy: next minute */
}

/* --- run -------------------------------------------------------------------------------------- */

int daemon_run(const struct daemon_settings *s)
{
	struct api_conf ac = {
		.listen = s->listen, .threads = (unsigned)s->threads, .max_body = s->max_body,
		.conn_timeout_ns = s->conn_timeout,
		.anonymous_role = s->anonymous_role == 1 ? ROLE_VIEWER : ROLE_NONE,
		.metrics_public = s->metrics_public, .tls_cert = s->tls_cert, .tls_key = s->tls_key,
		.cache_ttl_ns = s->cache_ttl, .stale_intervals = s->stale_after,
		.change_deadline_ns = s->change_deadline,
	};
	struct store_conf sc = store_conf_of(s, (unsigned)s->threads + 2);
	struct api_deps deps = { .started_ns = tu_now_ns() };
	struct reg *reg = NULL;
	struct store *st = NULL;
	struct ingest *ing = NULL;
	struct api *api = NULL;
	struct rf_err e = { 0 };
	sigset_t sigs;
	int64_t next_prune, next_alerts = 0;
	char buf[600];
	int status = 1;

	/* Signals are taken synchronously by this thread; every other thread inherits the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (load_registry(s, &reg) < 0)
		goto out;
	if (store_open(&sc, true, &st, &e) < 0) {
		log_msg(LOG_ERR, "store", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	if (ingest_new(st, reg, &ing, &e) < 0) {
		log_msg(LOG_ERR, "ingest", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	deps.store = st;
	deps.ingest = ing;
	deps.reg = reg;
	if (api_start(&ac, &deps, &api, &e) < 0) {
		log_msg(LOG_ERR, "api", e.code, "%s", rf_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	log_info("daemon", "rocefabd %s listening on %s, database %s, %zu counters in the registry",
		 ROCEFAB_VERSION, api_url(api), s->db, reg_size(reg));
	sd_notifyf(0, "READY=1\nSTATUS=listening on %s", api_url(api));

	next_prune = tu_mono_ns() + 10 * NSEC_PER_SEC;
	for (;;) {
		struct timespec to = { .tv_sec = 1 };
		int sig = sigtimedwait(&sigs, NULL, &to);

		if (sig == SIGTERM || sig == SIGINT) {
			log_info("daemon", "%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		}
		if (sig == SIGHUP)
			log_notice("daemon", "SIGHUP: rocefabd does not reload its configuration; "
					     "restart it to apply changes");
		if (tu_mono_ns() >= next_prune) {
			prune(st, s->retention, s->probe_retention);
			next_prune = tu_mono_ns() + 60 * NSEC_PER_SEC;
		}
		/* changes whose agent went silent past their deadline: timed out (every second) */
		changes_sweep(st);
		/* pingmesh: localize from the probe matrix, keep the alerts in step */
		if (tu_mono_ns() >= next_alerts) {
			pingmesh_alerts_update(st, tu_now_ns(), 10 * NSEC_PER_SEC, s->metrics_probe_pairs);
			next_alerts = tu_mono_ns() + 5 * NSEC_PER_SEC;
		}
	}
	sd_notify(0, "STOPPING=1\nSTATUS=stopping: flushing the write queue");
	/* Stop taking connections and new reports, let the queued reports commit and their agents
	 * get their answers, then stop HTTP and close the database. */
	api_quiesce(api);
	if (api_drain(api, 60 * NSEC_PER_SEC) < 0)
		log_error("daemon", "reports still unanswered after 60 s; stopping anyway");
	store_flush(st);
	api_stop(api);
	api = NULL;
	status = 0;
out:
	api_stop(api);
	if (st)
		store_flush(st);
	ingest_free(ing);
	store_close(st);
	reg_free(reg);
	if (status == 0)
		log_info("daemon", "stopped; database closed");
	return status;
}

/* --- report validation ------------------------------------------------------------------------ */

int daemon_validate_reports(const struct daemon_settings *s, int n, char **files)
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
	fprintf(f, "usage: rocefabd [--db FILE] token add NAME --role viewer|operator|agent|admin\n"
		   "       rocefabd [--db FILE] token list\n"
		   "       rocefabd [--db FILE] token revoke NAME\n");
}

int daemon_token_cmd(const struct daemon_settings *s, int argc, char **argv)
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
	if (strcmp(argv[0], "add") == 0) {
		enum role role = ROLE_NONE;
		const char *name = NULL;
		char token[TOKEN_LEN + 1];

		for (int i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--role") == 0 && i + 1 < argc) {
				if (role_parse(argv[++i], &role) < 0) {
					fprintf(stderr, "rocefabd: unknown role '%s' (viewer, operator, "
							"agent, admin)\n",
						argv[i]);
					return 2;
				}
			} else if (strncmp(argv[i], "--role=", 7) == 0) {
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
		if (!name || role == ROLE_NONE) {
			token_usage(stderr);
			return 2;
		}
		if ((r = store_open(&sc, false, &st, &e)) == 0 &&
		    (r = tokens_add(st, name, role, token, &e)) == 0) {
			printf("Token '%s' with role %s. It is shown only this once; store it now:\n%s\n",
			       name, role_name(role), token);
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
