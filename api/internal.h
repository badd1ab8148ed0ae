/* Inside the API: the request object handlers work with, and their helpers. */
#ifndef ROCEFAB_API_INTERNAL_H
#define ROCEFAB_API_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <microhttpd.h>

#include "api/api.h"
#include "daemon/ingest.h"
#include "daemon/tokens.h"
#include "daemon/views.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/router.h"

/* The longest path parameter (a host, port or change id) the API accepts: 414 beyond. */
#define API_PARAM_MAX 199

struct api_req;
struct guard_conn;
struct web_file;

/* The route table's entries (api/server.c): method + pattern -> handler and role. */
struct api_route {
	struct route_pattern rp;
	int need_role; /* enum role */
	int (*handler)(struct api_req *req);
	const char *summary;
	/* the query parameters it takes, comma-separated; NULL: none; "*": any (the dashboard's
	 * files).  Any other, or one given twice, is refused (400 UNKNOWN_PARAMETER) before the
	 * handler runs: a misspelt filter must not answer as if there were none. */
	const char *params;
};

struct api_req {
	struct api *api;
	struct MHD_Connection *conn;
	const char *method;
	const char *url;
	const struct api_route *route; /* NULL when unrouted */
	const struct web_file *web_file; /* a dashboard file asked for (route: h_web) */
	struct route_match match;
	enum role role;
	char token_name[65];
	char token_agents[TOKEN_AGENTS_MAX + 1]; /* an agent token's binding; "": unbound */
	struct buf body;
	/* an error found before the body was read: answered once the body is drained */
	struct rf_err early;
	uint64_t discarded;
	uint64_t dropped; /* bytes of a body sent with GET or HEAD: read, not kept, counted against api.max_body */
	struct guard_conn *gc; /* the connection's limits (api/guard.h), or NULL */
	size_t uri_len;	       /* of the raw request target */
	bool uri_bad;	       /* it has a control character, raw or %-escaped */
	bool started;	       /* the first call of the access handler has run */
	bool token_valid;      /* authenticated by a valid token */
	unsigned early_status; /* of early when its errno does not say it (429, 431) */
	bool early_now;	       /* answer early before reading the body (it cannot be framed) */
	bool replied;
	unsigned status;
	int64_t t0;

	/* asynchronous work (report ingest): set by the writer thread before resuming */
	bool suspended;
	bool async_pending; /* counted in the API's async_n until api_async_done() */
	bool async_done;
	struct ingest_result ingest_res;
	int async_err;
	json_t *async_doc;	/* another handler's answer (forgetting an agent) */
	struct rf_err async_e;	/* its problem, when async_err < 0 */
};

/* The request's bearer token, or NULL when it gives none. */
const char *api_bearer(struct api_req *req);
/* Whether token is still valid with a role of need at least (through the token cache, so
 * that a revocation is seen within api.cache_ttl, 1 s at most); a database that cannot
 * answer now leaves it valid. */
bool api_token_allows(struct api *a, const char *token, enum role need);

/* Handlers return 0 once they replied (or suspended), or a negative errno with err filled. */
int api_reply_json(struct api_req *req, unsigned status, json_t *body_stolen);
/* Like api_reply_json with status 200, and keeps a copy for api.cache_ttl when the request is
 * a cacheable list request (GET /api/v1/hosts or /agents without arguments). */
int api_reply_json_cached(struct api_req *req, json_t *body_stolen);
/* body (malloc'd, taken) as the answer; counted in api.max_unread until it is sent: an answer
 * over 64 KiB that does not fit gets 503 BUSY instead (not /metrics: the scrape shows the bound
 * reached).
 * encoding: its Content-Encoding, or NULL. */
int api_reply_text(struct api_req *req, unsigned status, const char *content_type, char *body,
		   size_t len);
int api_reply_encoded(struct api_req *req, unsigned status, const char *content_type, const char *encoding,
		      char *body, size_t len);
/* Queues resp (which the caller may then forget) with the API's common headers: Content-Type
 * (unless NULL), Cache-Control: no-store unless resp has one, X-Content-Type-Options. */
int api_queue(struct api_req *req, unsigned status, struct MHD_Response *resp,
	      const char *content_type);
/* The dashboard's files (api/web.h), or NULL. */
const struct web *api_web(const struct api_req *req);
/* The event streams (api/sse.c), or NULL when rocefabd publishes no events. */
struct sse_hub;
struct sse_hub *api_sse_hub(const struct api_req *req);
struct events;
int sse_hub_new(struct events *ev, struct sse_hub **ret);
/* Ends every stream (they are resumed and finish); new ones are refused.  Idempotent. */
void sse_hub_stop(struct sse_hub *h);
void sse_hub_free(struct sse_hub *h);
void sse_render_metrics(struct sse_hub *h, struct buf *out);
int api_reply_problem(struct api_req *req, unsigned status, const struct rf_err *e);
/* A problem with extension members (e.g. "errors": the targets a bulk change rejects). */
int api_reply_problem_ext(struct api_req *req, unsigned status, const struct rf_err *e,
			  json_t *extra_stolen);
const char *api_arg(struct api_req *req, const char *name);
/* With api.client_ca: 0 when the request came with a client certificate that verifies against
 * it and names id (subject CN or a DNS subjectAltName); -EACCES with e filled (codes
 * CLIENT_CERT_REQUIRED, CLIENT_CERT_INVALID, CLIENT_CERT_MISMATCH) otherwise.  api/mtls.c */
int api_client_cert_check(struct api_req *req, const char *id, struct rf_err *e);
const struct api_deps *api_deps(const struct api_req *req);
const struct api_conf *api_conf(const struct api_req *req);
/* The read-side views' options for this request (now, staleness). */
struct views_opts api_views_opts(struct api_req *req);
/* api.metrics_priorities as a mask: bit p set when /metrics exports priority p's series. */
uint8_t api_metrics_prio_mask(const struct api_req *req);
/* A reader connection in *ret (0), or a 503 problem sent (1; -1 when even that failed). */
int api_reader(struct api_req *req, struct store_reader **ret);
/* Puts rd back (when not NULL) and replies: doc with status, or r's problem (e filled, or
 * strerror(-r)) when r < 0. */
int api_finish(struct api_req *req, struct store_reader *rd, int r, json_t *doc, struct rf_err *e,
	       unsigned status);
/* Query parameters (api/args.c): 1 and *ret when present, 0 when absent (*ret untouched), or
 * -EINVAL/-ERANGE with e naming the parameter (BAD_PARAMETER, a 400).  A time as
 * tu_parse_time() reads it (relative to now_ns); a duration as tu_parse_duration(). */
int api_time_arg(struct api_req *req, const char *name, int64_t now_ns, int64_t *ret, struct rf_err *e);
int api_duration_arg(struct api_req *req, const char *name, int64_t *ret, struct rf_err *e);
/* "true" or "false" (anything else: BAD_PARAMETER). */
int api_bool_arg(struct api_req *req, const char *name, bool *ret, struct rf_err *e);
/* An integer in canonical decimal (str_parse_uint(): "03", "+3", " 3" are refused) from min to
 * max: a query parameter (1, 0 or an error as above), or the value of a path parameter called
 * name (0 or an error). */
int api_uint_arg(struct api_req *req, const char *name, uint64_t min, uint64_t max, uint64_t *ret,
		 struct rf_err *e);
/* A POST that takes no body may still get an empty object: 0, or -1 with a problem sent. */
int api_no_body(struct api_req *req);
/* Why an operator asks (the audit log's and settings log's reason): at most API_MAX_REASON
 * bytes.  api_take_reason: the member "reason" of a request's document, taken out of it (0 and
 * *ret, NULL when there is none; or -EINVAL with e: SCHEMA_VIOLATION).  api_reason_body: the
 * body of a POST that acts on one thing: none, {} or {"reason": "..."} (0 and *ret, or -1 with
 * a problem sent).  *ret is the caller's to free. */
#define API_MAX_REASON 512
int api_take_reason(json_t *doc, char **ret, struct rf_err *e);
int api_reason_body(struct api_req *req, char **ret);
/* 0 when doc, an object its known members were taken out of, is empty; else -EINVAL with e:
 * UNKNOWN_FIELD naming its first member, and what the request takes. */
int api_no_other_member(json_t *doc, const char *takes, struct rf_err *e);
/* Who a request's changes are by, for the audit log: its token's name ("anonymous" without). */
const char *api_actor(const struct api_req *req);
int api_uint_value(const char *value, const char *name, uint64_t min, uint64_t max, uint64_t *ret,
		   struct rf_err *e);
/* A read-only view: runs on a reader connection with the request's view options. */
typedef int (*api_view_fn)(struct api_req *req, struct store_reader *rd, const struct views_opts *o,
			   json_t **ret, struct rf_err *e);
/* Runs fn and replies with its document (kept for api.cache_ttl when cached and the request
 * is cacheable) or its problem. */
int api_view(struct api_req *req, api_view_fn fn, bool cached);
/* Suspends the request until api_resume(); call before handing the request to another thread.
 * Returns false (and does not suspend) once the API drains for shutdown.  The resumed request
 * must reply through api_async_done(). */
bool api_suspend(struct api_req *req);
void api_resume(struct api_req *req);
/* The API drains for shutdown: asynchronous work in steps stops between them. */
bool api_draining(struct api *a);
void api_async_done(struct api_req *req);
/* Prometheus text of the API's own request counters. */
void api_render_metrics(struct api *a, struct buf *out);

/* handlers */
int h_web(struct api_req *req);
int h_events(struct api_req *req);
int h_health(struct api_req *req);
int h_version(struct api_req *req);
int h_whoami(struct api_req *req);
int h_metrics(struct api_req *req);
int h_agents(struct api_req *req);
int h_agent(struct api_req *req);
int h_agent_forget(struct api_req *req);
int h_hosts(struct api_req *req);
int h_host(struct api_req *req);
int h_host_qps(struct api_req *req);
int h_ports(struct api_req *req);
int h_port(struct api_req *req);
int h_port_counters(struct api_req *req);
int h_switches(struct api_req *req);
int h_switch(struct api_req *req);
int h_links(struct api_req *req);
int h_topology(struct api_req *req);
int h_params(struct api_req *req);
int h_host_dcqcn(struct api_req *req);
int h_host_pfc(struct api_req *req);
int h_switch_pfc(struct api_req *req);
int h_switch_ecn(struct api_req *req);
int h_changes(struct api_req *req);
int h_change(struct api_req *req);
int h_change_settle(struct api_req *req);
int h_settings_log(struct api_req *req);
int h_changes_bulk(struct api_req *req);
int h_probes_matrix(struct api_req *req);
int h_probes_results(struct api_req *req);
int h_probes_config(struct api_req *req);
int h_alerts(struct api_req *req);
int h_pfc_report(struct api_req *req);
int h_detector(struct api_req *req);
int h_cc(struct api_req *req);
int h_cc_policy(struct api_req *req);
int h_cc_proposals(struct api_req *req);
int h_cc_apply(struct api_req *req);
int h_cc_reject(struct api_req *req);
int h_cc_history(struct api_req *req);
int h_cc_rollback(struct api_req *req);
int h_detector_config(struct api_req *req);
int h_detector_snapshot(struct api_req *req);
int h_alert_mitigate(struct api_req *req);
int h_alert_ack(struct api_req *req);
int h_alert(struct api_req *req);
int h_counters_registry(struct api_req *req);
int h_report(struct api_req *req);

#endif
