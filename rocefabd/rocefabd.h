/* rocefabd, the program: its settings, start, the main loop and shutdown, and its tools (token,
 * --validate-report).  It wires the layers below it (docs/architecture.md): the store, ingest
 * and its hooks, the scheduler's passes (daemon/) and the REST API (api/).  main.c only parses
 * arguments. */
#ifndef ROCEFAB_ROCEFABD_H
#define ROCEFAB_ROCEFABD_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/conf.h"

struct rocefabd_settings {
	int log_level_idx;
	int log_target;
	char *listen;
	int64_t threads;
	uint64_t max_body;
	uint64_t max_unread;
	uint64_t max_unread_per_client;
	int64_t conn_timeout;
	int64_t request_timeout;
	int64_t max_connections, max_client_connections;
	int64_t rate_limit, rate_burst;
	uint64_t max_uri, max_header;
	int anonymous_role;
	bool metrics_public;
	bool metrics_probe_pairs;
	char *metrics_priorities;
	char *tls_cert, *tls_key, *client_ca;
	char *web_root, *javascript_root;
	int64_t cache_ttl;
	char *db;
	int64_t queue;
	int64_t batch;
	int sync_mode;
	int64_t retention;
	int64_t retention_1m, retention_1h;
	uint64_t max_bytes;
	int64_t prune_interval;
	int64_t probe_retention;
	char *rw_urls, *rw_queue_dir;
	uint64_t rw_max_queue_bytes;
	int64_t rw_batch, rw_timeout;
	char *registry;
	int64_t stale_after;
	int64_t change_deadline;
	int64_t change_max_targets;
	int64_t detector_interval, detector_restore;
	int64_t cc_interval;
	int deadlock_mode, storm_mode, cc_mode;
};

extern const struct conf_opt rocefabd_opts[];

/* Loads the configuration again (SIGHUP) into *ret (conf_init'ed by it); 0 or -1 after saying
 * why on the log. */
typedef int (*rocefabd_reload_fn)(void *ctx, struct rocefabd_settings *ret);

/* Runs until SIGTERM or SIGINT; SIGHUP reloads what can change at run time (reload may be
 * NULL: not).  Returns the process exit status. */
int rocefabd_run(const struct rocefabd_settings *s, rocefabd_reload_fn reload, void *ctx);
/* What rocefabd_run would refuse at start beyond the configuration's syntax (api_check_conf):
 * for --check-config and SIGHUP, which must not accept what a restart would then fail on. */
int rocefabd_check(const struct rocefabd_settings *s, struct rf_err *e);
/* --check-config: what the TLS files hold too (api_check_tls_files; not at a SIGHUP). */
int rocefabd_check_tls(const struct rocefabd_settings *s, struct rf_err *e);
/* Whether store.db's directory is there: --check-config warns when it is not (the start would
 * fail; a configuration checked on another machine, or before the package made it, is fine). */
int rocefabd_check_db_dir(const struct rocefabd_settings *s, struct rf_err *e);

/* rocefabd --validate-report FILE...: checks agent reports as ingest would. */
int rocefabd_validate_reports(const struct rocefabd_settings *s, int n, char **files);
/* rocefabd token add|list|revoke ...; argv starts after "token". */
int rocefabd_token_cmd(const struct rocefabd_settings *s, int argc, char **argv);

#endif
