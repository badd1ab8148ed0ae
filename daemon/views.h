/* Read-side views of the store as JSON documents (the bodies of the REST GET endpoints).
 * Each function runs on a reader connection and returns a new reference in *ret, or a negative
 * errno with e filled (-ENOENT for an unknown id, -EINVAL for a bad query). */
#ifndef ROCEFAB_VIEWS_H
#define ROCEFAB_VIEWS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/ingest.h"
#include "daemon/store.h"
#include "lib/buf.h"
#include "lib/err.h"

struct views_opts {
	int64_t now_ns;
	int64_t stale_intervals; /* an agent that missed this many intervals is "stale" */
};

/* "stale" when the agent missed o->stale_intervals of its intervals, else "ok". */
const char *views_agent_status(const struct views_opts *o, int64_t last_seen_ns, int64_t interval_ms);
int views_agents(struct store_reader *rd, const struct views_opts *o, const char *id,
		 json_t **ret, struct rf_err *e);
int views_hosts(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		struct rf_err *e);
int views_host(struct store_reader *rd, const struct views_opts *o, const char *id,
	       json_t **ret, struct rf_err *e);

struct port_filter {
	const char *host, *device, *state; /* NULL: any */
};
int views_ports(struct store_reader *rd, const struct views_opts *o, const struct port_filter *f,
		json_t **ret, struct rf_err *e);
int views_port(struct store_reader *rd, const struct views_opts *o, const struct ingest *ing,
	       const char *key, json_t **ret, struct rf_err *e);

struct counter_query {
	const char *names; /* comma-separated registry names; NULL or "" = every counter */
	int64_t from_ns, to_ns;
	int64_t step_ns; /* 0: every sample */
	bool to_newest;	 /* move the window back to end at the port's newest sample */
	/* from, to: relative to now ("-10s", "now", or not given): on a simulated device, whose
	 * times are fabric time (behind the wall clock), counted from its newest sample instead */
	bool from_rel, to_rel;
	bool one_priority; /* only priority's series (and the per-port ones) */
	uint8_t priority;
	unsigned max_points;
	/* where the points come from with a step: VIEWS_RES_AUTO (the coarsest rollup whose
	 * width divides the step, daemon/rollup.h), 0 (raw samples), 60 or 3600 (that rollup;
	 * the step must be a multiple of it) */
	int resolution;
	/* how long each kind of data is kept now (raw, 1m, 1h; 0: not known), and the wall clock:
	 * an answer whose window starts before what its resolution keeps says so (kept_from) */
	int64_t kept_ns[3], now_ns;
};
#define VIEWS_RES_AUTO (-1)
int views_port_counters(struct store_reader *rd, const struct ingest *ing, const char *key,
			const struct counter_query *q, json_t **ret, struct rf_err *e);

/* Agents known and stale, for health and /metrics. */
int views_agent_counts(struct store_reader *rd, const struct views_opts *o, int64_t *ret_total,
		       int64_t *ret_stale);

/* Prometheus text: rocefab_agent_up, rocefab_agent_last_report_age_seconds and
 * rocefab_agent_collection_errors per agent. */
int views_agent_metrics(struct store_reader *rd, const struct views_opts *o, struct buf *out);
/* Prometheus text: rocefab_link_up{host,device,port} (1 up, 0 down or init) of the ports in the
 * inventory of agents not stale; a port whose state is unknown has none. */
int views_port_metrics(struct store_reader *rd, const struct views_opts *o, struct buf *out);
/* A host's QP table as last reported (GET /api/v1/hosts/{id}/qps): -ENOENT UNKNOWN_HOST, or
 * NO_QPS when it reported none. */
int views_host_qps(struct store_reader *rd, const struct views_opts *o, const char *host,
		   json_t **ret, struct rf_err *e);
/* rocefab_host_qps{host,type}, rocefab_host_qps_by_state{host,state} (of hosts whose agent is
 * not stale: its last QPs are no gauge of now), rocefab_host_qp_errors_total{host}. */
int views_qp_metrics(struct store_reader *rd, const struct views_opts *o, struct buf *out);

/* The settings log (GET /api/v1/settings/log): who changed a settings document through the
 * API, when, why and which of its fields, newest first, at most limit, and whether there were
 * more (truncated).  key: one document's (views_setting_key), NULL: all. */
const char *views_setting_key(const char *name); /* "cc/policy" -> its key; NULL: none such */
int views_settings_log(struct store_reader *rd, const char *key, unsigned limit, json_t **ret, struct rf_err *e);

#endif
