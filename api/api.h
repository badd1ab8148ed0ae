/* The REST API server (libmicrohttpd, internal epoll thread pool): routing, authentication,
 * limits and the handlers of every resource (api/h_*.c), over the domain in daemon/. */
#ifndef ROCEFAB_API_H
#define ROCEFAB_API_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/err.h"

struct store;
struct ingest;
struct pingmesh;
struct detector;
struct tuner;
struct events;
struct retention;
struct reg;

struct api_conf {
	const char *listen; /* "ADDR:PORT", "[v6]:PORT"; port 0 picks a free port */
	unsigned threads;
	uint64_t max_body;
	uint64_t max_unread; /* bytes of answers built and not yet taken by their clients; a larger
			      * one beyond it gets 503 BUSY (small ones always pass) */
	uint64_t max_unread_per_client; /* the same, per client address (0: max_unread) */
	int64_t conn_timeout_ns;
	int anonymous_role; /* enum role granted to requests without a token */
	bool metrics_public;
	/* the priorities whose per-priority series /metrics exports: "all" (or NULL/""), "none",
	 * or a list such as "3,4" */
	const char *metrics_priorities;
	const char *tls_cert, *tls_key; /* PEM files; both or neither */
	const char *client_ca;		/* PEM: reports need a client certificate it signed */
	int64_t cache_ttl_ns;		/* of GET list responses and valid tokens; 0 disables */
	int64_t stale_intervals;	/* an agent missing this many intervals is stale */
	int64_t change_deadline_ns;	/* a configuration change not applied by then times out */
	size_t change_max_targets;	/* objects a bulk change may select unless it says more */

	/* abuse limits (api/guard.h) */
	unsigned max_connections;	/* in all */
	unsigned max_client_connections; /* per client address */
	double rate_limit;		/* requests/s without a valid token, per address; 0: none */
	unsigned rate_burst;
	int64_t request_timeout_ns;	/* accept (or previous answer) to a complete request */
	size_t max_uri;			/* bytes of the request target, query included (414) */
	size_t max_header;		/* bytes of the request head (431) */

	const char *web_root;	     /* the dashboard's files (api/web.h); "" or NULL: none */
	const char *javascript_root; /* where web_root/javascript.list's libraries are */
};

struct api_deps {
	struct store *store;
	struct ingest *ingest;
	const struct reg *reg;
	struct pingmesh *pingmesh;
	struct detector *detector; /* NULL: no fast PFC lane, no detector */
	struct tuner *tuner;	   /* NULL: no congestion-control tuner */
	struct events *events;	   /* NULL: no GET /api/v1/events */
	struct retention *retention; /* NULL: none (the disk budget's status) */
	struct rwrite *rwrite;	     /* NULL: no remote-write */
	int64_t started_ns;
};

struct api;
struct rwrite;

/* api.metrics_priorities ("all", "" or NULL, "none", or a list of priorities 0-7 such as
 * "3,4") as a mask with bit p set for priority p; -EINVAL and e (BAD_PRIORITIES) otherwise. */
int api_parse_metrics_priorities(const char *s, uint8_t *mask, struct rf_err *e);

/* What api_start would refuse in c without starting anything: api.listen, the TLS files (both
 * or neither, readable, the key's mode: a group-readable key is logged as a warning),
 * api.client_ca without HTTPS, api.metrics_priorities.  For --check-config and SIGHUP. */
int api_check_conf(const struct api_conf *c, struct rf_err *e);
/* What the TLS files hold (lib/tlscheck.h): a key of another pair, no certificate; an expired
 * certificate is a warning.  At the start and --check-config, not at a reload (TLS is not
 * reloaded: files mid-rotation refused the whole SIGHUP). */
int api_check_tls_files(const struct api_conf *c, struct rf_err *e);

/* SIGHUP: agents.stale_after from now on. */
void api_set_stale_intervals(struct api *a, int64_t n);
int api_start(const struct api_conf *c, const struct api_deps *d, struct api **ret,
	      struct rf_err *e);
/* "http://127.0.0.1:9750" as bound (the real port when 0 was asked). */
const char *api_url(const struct api *a);
/* Stops accepting new connections; requests in progress continue. */
void api_quiesce(struct api *a);
/* From now on reports are refused (503 SHUTTING_DOWN; agents keep them and retry); waits until
 * every report being stored has been answered.  Returns 0, or -ETIMEDOUT. */
int api_drain(struct api *a, int64_t timeout_ns);
void api_stop(struct api *a);
/* Prints "METHOD PATTERN ROLE summary" for every route (rocefabd --routes). */
void api_print_routes(FILE *f);

#endif
