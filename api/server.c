/* The REST server on libmicrohttpd: connection lifecycle, limits, authentication, routing,
 * responses, and the API's own counters.  See api.h.
 *
 * Request lifecycle (the access handler is called several times per request):
 *   1st call   headers only: route, authenticate, check Content-Length; errors are answered now
 *              (no body is buffered for a request that will be refused)
 *   next calls body chunks, bounded by api.max_body
 *   last call  *upload_data_size == 0: dispatch to the handler
 * Answering only from the second call on keeps HTTP keep-alive working (toolbox.md trap 1). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/guard.h"
#include "api/internal.h"
#include "api/problem.h"
#include "api/web.h"
#include "daemon/store.h"
#include "lib/hmap.h"
#include "lib/httpd.h"
#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "lib/tlscheck.h"
#include "lib/tokenfile.h"

static const struct api_route routes[] = {
	{ { "GET", "/" }, ROLE_NONE, h_web, "the dashboard (api.web_root; its files too)", "*" },
	{ { "GET", "/api/v1/health" }, ROLE_NONE, h_health, "liveness and store health", NULL },
	{ { "GET", "/api/v1/whoami" }, ROLE_NONE, h_whoami, "the caller's token name and role", NULL },
	{ { "GET", "/api/v1/events" }, ROLE_VIEWER, h_events, "server-sent events: alerts, changes, proposals", NULL },
	{ { "GET", "/api/v1/version" }, ROLE_NONE, h_version, "versions of the daemon and its contracts", NULL },
	{ { "GET", "/metrics" }, ROLE_VIEWER, h_metrics, "Prometheus text exposition", NULL },
	{ { "GET", "/api/v1/counters" }, ROLE_VIEWER, h_counters_registry, "the counter registry", NULL },
	{ { "GET", "/api/v1/agents" }, ROLE_VIEWER, h_agents, "agents and their liveness", NULL },
	{ { "GET", "/api/v1/agents/{id}" }, ROLE_VIEWER, h_agent, "one agent", NULL },
	{ { "DELETE", "/api/v1/agents/{id}" }, ROLE_OPERATOR, h_agent_forget, "forget an agent gone for good", NULL },
	{ { "POST", "/api/v1/agents/{id}/report" }, ROLE_AGENT, h_report, "an agent report", "replay" },
	{ { "POST", "/api/v1/agents/{id}/pfc" }, ROLE_AGENT, h_pfc_report, "an agent's fast PFC report", NULL },
	{ { "GET", "/api/v1/hosts" }, ROLE_VIEWER, h_hosts, "hosts", NULL },
	{ { "GET", "/api/v1/hosts/{id}" }, ROLE_VIEWER, h_host, "one host with devices and ports", NULL },
	{ { "GET", "/api/v1/ports" }, ROLE_VIEWER, h_ports, "ports", "host,device,state" },
	{ { "GET", "/api/v1/ports/{id}" }, ROLE_VIEWER, h_port, "one port with its latest counters", NULL },
	{ { "GET", "/api/v1/ports/{id}/counters" }, ROLE_VIEWER, h_port_counters,
	  "counter series", "names,from,to,step,priority,resolution" },
	{ { "GET", "/api/v1/switches" }, ROLE_VIEWER, h_switches, "switches", NULL },
	{ { "GET", "/api/v1/switches/{id}" }, ROLE_VIEWER, h_switch,
	  "one switch with ports, neighbours, PFC and ECN", NULL },
	{ { "GET", "/api/v1/links" }, ROLE_VIEWER, h_links, "links between ports (from neighbours)", NULL },
	{ { "GET", "/api/v1/topology" }, ROLE_VIEWER, h_topology, "nodes and links", NULL },
	{ { "GET", "/api/v1/params" }, ROLE_VIEWER, h_params,
	  "the settings that can be changed, with units and ranges", NULL },
	{ { "GET", "/api/v1/hosts/{id}/dcqcn" }, ROLE_VIEWER, h_host_dcqcn,
	  "DCQCN settings of a host's RDMA ports", NULL },
	{ { "GET", "/api/v1/hosts/{id}/qps" }, ROLE_VIEWER, h_host_qps,
	  "a host's QPs (RDMA netlink) and their counters", NULL },
	{ { "PUT", "/api/v1/hosts/{id}/dcqcn" }, ROLE_OPERATOR, h_host_dcqcn, "change DCQCN settings", NULL },
	{ { "GET", "/api/v1/hosts/{id}/ports/{port}/pfc" }, ROLE_VIEWER, h_host_pfc,
	  "PFC of a host port (DEVICE:PORT)", NULL },
	{ { "PUT", "/api/v1/hosts/{id}/ports/{port}/pfc" }, ROLE_OPERATOR, h_host_pfc,
	  "change PFC of a host port", NULL },
	{ { "GET", "/api/v1/switches/{id}/ports/{port}/pfc" }, ROLE_VIEWER, h_switch_pfc,
	  "PFC of a switch port", NULL },
	{ { "PUT", "/api/v1/switches/{id}/ports/{port}/pfc" }, ROLE_OPERATOR, h_switch_pfc,
	  "change PFC of a switch port", NULL },
	{ { "GET", "/api/v1/switches/{id}/ports/{port}/queues/{q}/ecn" }, ROLE_VIEWER, h_switch_ecn,
	  "ECN of a switch queue", NULL },
	{ { "PUT", "/api/v1/switches/{id}/ports/{port}/queues/{q}/ecn" }, ROLE_OPERATOR, h_switch_ecn,
	  "change ECN of a switch queue", NULL },
	{ { "GET", "/api/v1/changes" }, ROLE_VIEWER, h_changes,
	  "configuration changes", "agent,kind,state,batch,limit" },
	{ { "POST", "/api/v1/changes" }, ROLE_OPERATOR, h_changes_bulk,
	  "change a selection of hosts or switch ports", NULL },
	{ { "GET", "/api/v1/changes/{id}" }, ROLE_VIEWER, h_change, "one configuration change", NULL },
	{ { "POST", "/api/v1/changes/{id}/settle" }, ROLE_OPERATOR, h_change_settle,
	  "settle a change in doubt whose agent cannot (applied or not, and why)", NULL },
	{ { "GET", "/api/v1/settings/log" }, ROLE_VIEWER, h_settings_log,
	  "who changed the tuner's policy, the detector's or the pingmesh's configuration, and why", "setting,limit" },
	{ { "GET", "/api/v1/probes/matrix" }, ROLE_VIEWER, h_probes_matrix,
	  "pingmesh: latency matrix and localization", "window,op,size,paths" },
	{ { "GET", "/api/v1/probes/results" }, ROLE_VIEWER, h_probes_results,
	  "pingmesh results", "src,dst,op,size,from,to,limit" },
	{ { "GET", "/api/v1/probes/config" }, ROLE_VIEWER, h_probes_config, "pingmesh configuration", NULL },
	{ { "PUT", "/api/v1/probes/config" }, ROLE_OPERATOR, h_probes_config,
	  "change the pingmesh configuration", NULL },
	{ { "GET", "/api/v1/alerts" }, ROLE_VIEWER, h_alerts, "alerts", "state" },
	{ { "GET", "/api/v1/alerts/{id}" }, ROLE_VIEWER, h_alert, "one alert", NULL },
	{ { "POST", "/api/v1/alerts/{id}/mitigate" }, ROLE_OPERATOR, h_alert_mitigate,
	  "mitigate a detector alert (advise mode)", NULL },
	{ { "POST", "/api/v1/alerts/{id}/ack" }, ROLE_OPERATOR, h_alert_ack, "acknowledge an alert", NULL },
	{ { "GET", "/api/v1/detector" }, ROLE_VIEWER, h_detector,
	  "the PFC detector: findings, holds, fast lane", NULL },
	{ { "GET", "/api/v1/detector/config" }, ROLE_VIEWER, h_detector_config,
	  "the PFC detector's configuration", NULL },
	{ { "PUT", "/api/v1/detector/config" }, ROLE_OPERATOR, h_detector_config,
	  "change the PFC detector's modes and restore time", NULL },
	{ { "GET", "/api/v1/detector/snapshot" }, ROLE_VIEWER, h_detector_snapshot,
	  "the snapshot the detector last analysed, or its recent intervals summed", "span" },
	{ { "GET", "/api/v1/cc" }, ROLE_VIEWER, h_cc, "the congestion-control tuner: signals, settings, steps", NULL },
	{ { "GET", "/api/v1/cc/policy" }, ROLE_VIEWER, h_cc_policy, "the tuner's policy (mode, ranges, canary)", NULL },
	{ { "PUT", "/api/v1/cc/policy" }, ROLE_OPERATOR, h_cc_policy, "change the tuner's policy", NULL },
	{ { "GET", "/api/v1/cc/proposals" }, ROLE_VIEWER, h_cc_proposals,
	  "the tuner's proposals, waiting ones, or all recent ones", "all" },
	{ { "POST", "/api/v1/cc/proposals/{id}/apply" }, ROLE_OPERATOR, h_cc_apply,
	  "apply a waiting proposal (advise mode)", NULL },
	{ { "POST", "/api/v1/cc/proposals/{id}/reject" }, ROLE_OPERATOR, h_cc_reject,
	  "reject a waiting proposal", NULL },
	{ { "GET", "/api/v1/cc/history" }, ROLE_VIEWER, h_cc_history, "every step's proposals and outcomes", NULL },
	{ { "POST", "/api/v1/cc/rollback" }, ROLE_OPERATOR, h_cc_rollback, "undo every step the tuner made", NULL },
	{ { NULL, NULL }, 0, NULL, NULL, NULL },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]) - 1)

/* Status codes counted per route; anything else counts as "other". */
static const unsigned counted_codes[] = { 200, 202, 304, 400, 401, 403, 404, 405, 409,
					  413, 414, 415, 429, 431, 500, 503, 504, 507 };
#define NCODES (sizeof(counted_codes) / sizeof(counted_codes[0]))

/* Bytes of a refused request's body read and discarded before the connection is dropped.
 * libmicrohttpd cannot answer in the middle of a body, so a chunked body found too large is
 * read to its end (and answered 413); this, and above all api.request_timeout, bound it. */
#define DISCARD_MAX (1ull << 30)
/* libmicrohttpd's memory per connection is at least this, and 4 times api.max_header: a
 * request head that does not fit is answered by the library itself (status 414 or 431, an
 * HTML body), so it must stay well above the limits this server answers with problem+json. */
#define POOL_MIN (64u << 10)

struct cached {
	char *key;
	char *body;
	size_t len;
	int64_t expires;
};

struct token_entry {
	char hash[2 * SHA256_DIGEST_LEN + 1];
	enum role role;
	char name[65];
	char agents[TOKEN_AGENTS_MAX + 1]; /* of an agent token: the ids it may report as */
	int64_t expires;
};

struct api {
	struct api_conf conf;
	struct api_deps deps;
	struct MHD_Daemon *mhd;
	struct guard *guard;
	char url[96];
	char *tls_cert, *tls_key, *client_ca;
	atomic_uint_least64_t requests[NROUTES + 1][NCODES + 1]; /* [NROUTES]: unrouted */
	atomic_uint_least64_t bytes_in;
	atomic_uint_least64_t unread;	   /* bytes of answers not yet taken (api.max_unread) */
	atomic_uint_least64_t unread_busy; /* answers refused for it */

	/* requests handed to another thread (suspended until it answers), for a clean shutdown:
	 * libmicrohttpd must not be stopped while any connection is suspended */
	pthread_mutex_t async_lock;
	pthread_cond_t async_cond;
	unsigned async_n;
	bool draining;

	pthread_mutex_t cache_lock;
	struct hmap cache;  /* url -> struct cached */
	struct hmap tokens; /* sha256 hex -> struct token_entry */

	struct web *web;     /* the dashboard's files, or NULL */
	struct sse_hub *sse; /* the event streams, or NULL */
	uint8_t metrics_prio_mask; /* bit p: /metrics exports priority p's series */
};

/* "a, b, c" of the list "a,b,c" (cut to fit), for people. */
static const char *params_text(const char *list, char *buf, size_t size)
{
	size_t n = 0;

	for (const char *p = list; *p && n + 3 < size; p++) {
		buf[n++] = *p;
		if (*p == ',')
			buf[n++] = ' ';
	}
	buf[n] = '\0';
	return buf;
}

void api_print_routes(FILE *f)
{
	char list[128];

	for (const struct api_route *r = routes; r->rp.pattern; r++) {
		fprintf(f, "%-5s %-32s %-8s %s", r->rp.method, r->rp.pattern,
			role_name((enum role)r->need_role), r->summary);
		if (r->params && strcmp(r->params, "*"))
			fprintf(f, " (query: %s)", params_text(r->params, list, sizeof(list)));
		fputc('\n', f);
	}
}

const struct api_deps *api_deps(const struct api_req *req)
{
	return &req->api->deps;
}

const struct api_conf *api_conf(const struct api_req *req)
{
	return &req->api->conf;
}

uint8_t api_metrics_prio_mask(const struct api_req *req)
{
	return req->api->metrics_prio_mask;
}

int api_parse_metrics_priorities(const char *s, uint8_t *mask, struct rf_err *e)
{
	const char *p = s;

	*mask = 0xff;
	if (!s || !*s || strcmp(s, "all") == 0)
		return 0;
	*mask = 0;
	if (strcmp(s, "none") == 0)
		return 0;
	for (;;) { /* DIGIT [' '*] (',' [' '*] DIGIT ...) */
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '7' || (p[1] >= '0' && p[1] <= '9'))
			break;
		*mask |= (uint8_t)(1u << (*p++ - '0'));
		while (*p == ' ')
			p++;
		if (!*p)
			return 0;
		if (*p++ != ',')
			break;
	}
	return rf_err_set(e, -EINVAL, "BAD_PRIORITIES", "api.metrics_priorities",
			  "'%s' is not all, none or a list of priorities 0-7 such as 3,4", s);
}

struct views_opts api_views_opts(struct api_req *req)
{
	return (struct views_opts){ .now_ns = tu_now_ns(),
				    .stale_intervals = __atomic_load_n(&req->api->conf.stale_intervals, __ATOMIC_RELAXED) };
}

void api_set_stale_intervals(struct api *a, int64_t n)
{
	/* (read by the request threads as it is: one 64-bit word) */
	__atomic_store_n(&a->conf.stale_intervals, n, __ATOMIC_RELAXED);
}

int api_reader(struct api_req *req, struct store_reader **ret)
{
	struct rf_err e = { 0 };

	*ret = store_reader_get(api_deps(req)->store);
	if (*ret)
		return 0;
	rf_err_set(&e, -EAGAIN, "STORE_UNAVAILABLE", NULL, "cannot read the database now");
	return api_reply_problem(req, 0, &e) < 0 ? -1 : 1;
}

int api_finish(struct api_req *req, struct store_reader *rd, int r, json_t *doc, struct rf_err *e,
	       unsigned status)
{
	if (rd)
		store_reader_put(api_deps(req)->store, rd);
	if (r < 0) {
		json_decref(doc);
		if (!e->err)
			rf_err_set(e, r, NULL, NULL, "%s", strerror(-r));
		return api_reply_problem(req, 0, e);
	}
	return api_reply_json(req, status, doc);
}

int api_view(struct api_req *req, api_view_fn fn, bool cached)
{
	struct views_opts o = api_views_opts(req);
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	int r;

	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = fn(req, rd, &o, &doc, &e);
	if (r < 0 || !cached)
		return api_finish(req, rd, r, doc, &e, 200);
	store_reader_put(api_deps(req)->store, rd);
	return api_reply_json_cached(req, doc);
}

const struct web *api_web(const struct api_req *req)
{
	return req->api->web;
}

struct sse_hub *api_sse_hub(const struct api_req *req)
{
	return req->api->sse;
}

const char *api_url(const struct api *a)
{
	return a->url;
}

const char *api_arg(struct api_req *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* --- responses -------------------------------------------------------------------------- */

static void count_request(struct api_req *req, unsigned status)
{
	size_t r = req->route ? (size_t)(req->route - routes) : NROUTES;
	size_t c = NCODES;

	for (size_t i = 0; i < NCODES; i++)
		if (counted_codes[i] == status) {
			c = i;
			break;
		}
	atomic_fetch_add_explicit(&req->api->requests[r][c], 1, memory_order_relaxed);
}

int api_queue(struct api_req *req, unsigned status, struct MHD_Response *resp,
	      const char *content_type)
{
	enum MHD_Result ok;

	if (!resp)
		return -ENOMEM;
	if (content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (!MHD_get_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (status == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"rocefab\"");
	if (status == 405 && req->match.allow[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, req->match.allow);
	if (status == 503 || status == 429)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	ok = MHD_queue_response(req->conn, status, resp);
	MHD_destroy_response(resp);
	req->replied = true;
	req->status = status;
	count_request(req, status);
	if (status >= 500)
		log_warning("api", "%s %s -> %u", req->method, req->url, status);
	else
		log_debug("api", "%s %s -> %u (%.2f ms)", req->method, req->url, status,
			  (double)(tu_mono_ns() - req->t0) / 1e6);
	return ok == MHD_YES ? 0 : -EIO;
}

/* An answer's body, counted in api.max_unread until libmicrohttpd is done with it (sent, or the
 * connection gone).  Answers up to UNREAD_SMALL always pass: health, problems, the small lists. */
#define UNREAD_SMALL (64u << 10)

struct held {
	struct api *api;
	char *body;
	size_t len;
	char addr[GUARD_ADDR_LEN]; /* the client's, whose share it is counted in ("": none) */
};

static void held_free(void *cls)
{
	struct held *h = cls;

	atomic_fetch_sub_explicit(&h->api->unread, h->len, memory_order_relaxed);
	guard_unread_put(h->api->guard, h->addr, h->len);
	free(h->body);
	free(h);
}

/* 503 BUSY for an answer of len bytes that does not fit: in all (client NULL; held: what all
 * hold), or in what the client's address may hold (held: what it holds). */
static int unread_busy(struct api_req *req, size_t len, uint64_t held, const char *client)
{
	struct api *a = req->api;
	struct rf_err e = { 0 };

	atomic_fetch_add_explicit(&a->unread_busy, 1, memory_order_relaxed);
	if (client)
		rf_err_set(&e, -EBUSY, "BUSY", NULL,
			   "the answer of %zu KiB does not fit: %llu KiB of answers to your address (%s) "
			   "wait for it to read them (api.max_unread_per_client %llu KiB); read them, or ask "
			   "for less (limit, from and to)",
			   len >> 10, (unsigned long long)(held >> 10), client,
			   (unsigned long long)(a->conf.max_unread_per_client >> 10));
	else
		rf_err_set(&e, -EBUSY, "BUSY", NULL,
			   "the answer of %zu KiB does not fit: %llu KiB of answers wait for their clients to "
			   "read them (api.max_unread %llu KiB); try again, or ask for less (limit, from and to)",
			   len >> 10, (unsigned long long)(held >> 10),
			   (unsigned long long)(a->conf.max_unread >> 10));
	return api_reply_problem(req, 503, &e);
}

int api_reply_encoded(struct api_req *req, unsigned status, const char *content_type, const char *encoding,
		      char *body, size_t len)
{
	struct api *a = req->api;
	struct MHD_Response *resp = NULL;
	struct held *h = malloc(sizeof(*h));
	/* (/metrics passes: the scrape is how the operator sees these bounds reached) */
	bool bounded = len > UNREAD_SMALL && !(req->route && req->route->handler == h_metrics);
	uint64_t was = atomic_fetch_add_explicit(&a->unread, len, memory_order_relaxed), held = 0;
	bool fits = !bounded || (was <= a->conf.max_unread && len <= a->conf.max_unread - was);
	char addr[GUARD_ADDR_LEN] = "";

	/* clients that do not read their answers (or many large ones at once) would hold the
	 * daemon's memory: refuse what does not fit until they are taken, in all and per client
	 * address (one client cannot take the others' room; the large answers only, so that the
	 * many small ones do not take the guard's lock) */
	if (!fits || (bounded && !guard_unread_take(a->guard, req->gc, len, a->conf.max_unread_per_client, &held,
						    addr))) {
		atomic_fetch_sub_explicit(&a->unread, len, memory_order_relaxed);
		free(body);
		free(h);
		return fits ? unread_busy(req, len, held, guard_conn_addr(req->gc)) : unread_busy(req, len, was, NULL);
	}
	if (h) {
		*h = (struct held){ .api = a, .body = body, .len = len };
		memcpy(h->addr, addr, sizeof(addr));
		resp = MHD_create_response_from_buffer_with_free_callback_cls(len, body, held_free, h);
	}
	if (!resp) {
		atomic_fetch_sub_explicit(&a->unread, len, memory_order_relaxed);
		guard_unread_put(a->guard, addr, len);
		free(body);
		free(h);
		return api_queue(req, status, NULL, content_type);
	}
	if (encoding) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, encoding);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	}
	return api_queue(req, status, resp, content_type);
}

int api_reply_text(struct api_req *req, unsigned status, const char *content_type, char *body,
		   size_t len)
{
	return api_reply_encoded(req, status, content_type, NULL, body, len);
}

static bool cacheable(struct api_req *req);
static void cache_store(struct api_req *req, const char *body, size_t len);

/* The JSON reply; a copy kept for api.cache_ttl when cache is set and the request cacheable. */
static int reply_json(struct api_req *req, unsigned status, json_t *body_stolen, bool cache)
{
	char *s;
	size_t len;

	if (!body_stolen)
		return -ENOMEM;
	s = json_dumps(body_stolen, JSON_COMPACT | JSON_REAL_PRECISION(16));
	json_decref(body_stolen);
	if (!s)
		return -ENOMEM;
	len = strlen(s);
	if (cache && cacheable(req))
		cache_store(req, s, len);
	return api_reply_text(req, status, "application/json", s, len);
}

int api_reply_json(struct api_req *req, unsigned status, json_t *body_stolen)
{
	return reply_json(req, status, body_stolen, false);
}

int api_reply_problem(struct api_req *req, unsigned status, const struct rf_err *e)
{
	return api_reply_problem_ext(req, status, e, NULL);
}

int api_reply_problem_ext(struct api_req *req, unsigned status, const struct rf_err *e,
			  json_t *extra_stolen)
{
	json_t *p;
	char *s;

	if (!status)
		status = api_status_from_errno(e && e->err ? e->err : -EIO);
	p = problem_new(status, e, req->url);
	if (p && extra_stolen)
		json_object_update(p, extra_stolen);
	json_decref(extra_stolen);
	s = p ? json_dumps(p, JSON_COMPACT) : NULL;
	json_decref(p);
	if (!s)
		return -ENOMEM;
	if (status >= 400 && status < 500 && e && e->code[0])
		log_debug("api", "%s %s: %s [%s]", req->method, req->url, e->msg, e->code);
	return api_reply_text(req, status, "application/problem+json", s, strlen(s));
}

/* --- authentication ---------------------------------------------------------------------- */

/* Looks a token up, through a cache of valid tokens that lives api.cache_ttl (so that a
 * revocation takes effect within that time).  0, -ENOENT (unknown or revoked), or -EIO. */
static int check_token(struct api *a, const char *token, enum role *ret_role, char name[65],
		       char agents[TOKEN_AGENTS_MAX + 1])
{
	char hash[2 * SHA256_DIGEST_LEN + 1];
	uint8_t d[SHA256_DIGEST_LEN];
	struct token_entry *te;
	struct store_reader *rd;
	int64_t now = tu_mono_ns();
	int r;

	sha256(token, strlen(token), d);
	hex_encode(d, sizeof(d), hash);
	pthread_mutex_lock(&a->cache_lock);
	te = hmap_get(&a->tokens, hash);
	if (te && te->expires > now) {
		*ret_role = te->role;
		memcpy(name, te->name, sizeof(te->name));
		memcpy(agents, te->agents, sizeof(te->agents));
		pthread_mutex_unlock(&a->cache_lock);
		return 0;
	}
	pthread_mutex_unlock(&a->cache_lock);

	rd = store_reader_get(a->deps.store);
	if (!rd)
		return -EIO;
	r = tokens_check(rd, token, ret_role, name, agents);
	store_reader_put(a->deps.store, rd);
	if (r < 0 || a->conf.cache_ttl_ns <= 0)
		return r;

	pthread_mutex_lock(&a->cache_lock);
	te = hmap_get(&a->tokens, hash);
	if (!te) {
		if (a->tokens.len >= 4096) { /* bound: start over */
			size_t it = 0;
			void *v;

			while (hmap_next(&a->tokens, &it, NULL, &v))
				free(v);
			hmap_fini(&a->tokens);
			hmap_init(&a->tokens);
		}
		te = calloc(1, sizeof(*te));
		if (te) {
			memcpy(te->hash, hash, sizeof(hash));
			if (hmap_put(&a->tokens, te->hash, te, NULL) < 0) {
				free(te);
				te = NULL;
			}
		}
	}
	if (te) {
		te->role = *ret_role;
		memcpy(te->name, name, sizeof(te->name));
		memcpy(te->agents, agents, sizeof(te->agents));
		te->expires = now + (a->conf.cache_ttl_ns > NSEC_PER_SEC ? NSEC_PER_SEC
									 : a->conf.cache_ttl_ns);
	}
	pthread_mutex_unlock(&a->cache_lock);
	return 0;
}

const char *api_bearer(struct api_req *req)
{
	const char *h = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return NULL;
	h += 7;
	while (*h == ' ')
		h++;
	return h;
}

bool api_token_allows(struct api *a, const char *token, enum role need)
{
	char name[65], agents[TOKEN_AGENTS_MAX + 1];
	enum role role;
	int r = check_token(a, token, &role, name, agents);

	/* only a token the database does not know is revoked: one that cannot answer now (busy,
	 * full, ...) is no revocation */
	return r == -ENOENT ? false : r < 0 || role_allows(role, need);
}

static int authenticate(struct api_req *req, struct rf_err *e)
{
	struct api *a = req->api;
	const char *h = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	enum role need = (enum role)req->route->need_role;
	int r;

	if (req->route->handler == h_metrics && a->conf.metrics_public)
		need = ROLE_NONE;
	req->role = (enum role)a->conf.anonymous_role;
	if (h) {
		if (!(h = api_bearer(req)))
			return need == ROLE_NONE ? 0
						 : rf_err_set(e, -EPERM, "BAD_AUTH_SCHEME", NULL,
							      "use 'Authorization: Bearer <token>'");
		r = check_token(a, h, &req->role, req->token_name, req->token_agents);
		/* where no token is needed a bad one is no reason to fail: the request is
		 * anonymous (a good one may show more, e.g. /health's token names) */
		if (r < 0 && need == ROLE_NONE) {
			req->role = (enum role)a->conf.anonymous_role;
			return 0;
		}
		if (r == -ENOENT)
			return rf_err_set(e, -EPERM, "INVALID_TOKEN", NULL,
					  "the token is unknown or revoked");
		if (r < 0)
			return rf_err_set(e, -EAGAIN, "STORE_UNAVAILABLE", NULL,
					  "cannot check the token now");
		req->token_valid = true;
	}
	if (role_allows(req->role, need))
		return 0;
	if (!h)
		return rf_err_set(e, -EPERM, "MISSING_TOKEN", NULL,
				  "this endpoint needs a bearer token with role %s",
				  role_name(need));
	return rf_err_set(e, -EACCES, "FORBIDDEN", NULL,
			  "token '%s' has role %s; this endpoint needs role %s", req->token_name,
			  role_name(req->role), role_name(need));
}

/* --- response cache for GET list endpoints ------------------------------------------------ */

static bool cacheable(struct api_req *req)
{
	const struct api_route *r = req->route;

	return req->api->conf.cache_ttl_ns > 0 && strcmp(req->method, "GET") == 0 &&
	       (r->handler == h_hosts || r->handler == h_agents) &&
	       MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, NULL, NULL) == 0;
}

static bool reply_from_cache(struct api_req *req)
{
	struct api *a = req->api;
	struct cached *c;
	char *copy = NULL;
	size_t len = 0;

	pthread_mutex_lock(&a->cache_lock);
	c = hmap_get(&a->cache, req->url);
	if (c && c->expires > tu_mono_ns()) {
		copy = malloc(c->len + 1);
		if (copy) {
			memcpy(copy, c->body, c->len + 1);
			len = c->len;
		}
	}
	pthread_mutex_unlock(&a->cache_lock);
	if (!copy)
		return false;
	return api_reply_text(req, 200, "application/json", copy, len) == 0;
}

/* Keeps a copy of a 200 JSON reply; called by handlers through api_reply_json only for
 * cacheable requests, so it sits in dispatch(). */
static void cache_store(struct api_req *req, const char *body, size_t len)
{
	struct api *a = req->api;
	struct cached *c;

	pthread_mutex_lock(&a->cache_lock);
	c = hmap_get(&a->cache, req->url);
	if (!c && a->cache.len < 64) {
		c = calloc(1, sizeof(*c));
		if (c && !(c->key = strdup(req->url))) {
			free(c);
			c = NULL;
		}
		if (c && hmap_put(&a->cache, c->key, c, NULL) < 0) {
			free(c->key);
			free(c);
			c = NULL;
		}
	}
	if (c) {
		char *b = malloc(len + 1);

		if (b) {
			memcpy(b, body, len);
			b[len] = '\0';
			free(c->body);
			c->body = b;
			c->len = len;
			c->expires = tu_mono_ns() + a->conf.cache_ttl_ns;
		}
	}
	pthread_mutex_unlock(&a->cache_lock);
}

/* --- dispatch ------------------------------------------------------------------------------ */

static void dispatch(struct api_req *req)
{
	int r;

	if (cacheable(req) && reply_from_cache(req))
		return;
	/* Handlers answer their own rich errors with api_reply_problem(); a bare negative return
	 * is an unexpected failure and gets a generic problem. */
	r = req->route->handler(req);
	if (r < 0 && !req->replied && !req->suspended) {
		struct rf_err e;

		rf_err_set(&e, r, NULL, NULL, "%s", strerror(-r));
		api_reply_problem(req, 0, &e);
	}
}

bool api_suspend(struct api_req *req)
{
	struct api *a = req->api;

	pthread_mutex_lock(&a->async_lock);
	if (a->draining) {
		pthread_mutex_unlock(&a->async_lock);
		return false;
	}
	a->async_n++;
	pthread_mutex_unlock(&a->async_lock);
	req->async_pending = true;
	req->suspended = true;
	MHD_suspend_connection(req->conn);
	return true;
}

void api_async_done(struct api_req *req)
{
	struct api *a = req->api;

	if (!req->async_pending)
		return;
	req->async_pending = false;
	pthread_mutex_lock(&a->async_lock);
	a->async_n--;
	pthread_cond_broadcast(&a->async_cond);
	pthread_mutex_unlock(&a->async_lock);
}

int api_drain(struct api *a, int64_t timeout_ns)
{
	struct timespec until;
	int r = 0;

	sse_hub_stop(a->sse); /* the event streams end now: they would never drain */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ns / NSEC_PER_SEC;
	pthread_mutex_lock(&a->async_lock);
	a->draining = true;
	while (a->async_n && r == 0)
		r = pthread_cond_timedwait(&a->async_cond, &a->async_lock, &until);
	pthread_mutex_unlock(&a->async_lock);
	return r ? -ETIMEDOUT : 0;
}

void api_resume(struct api_req *req)
{
	MHD_resume_connection(req->conn);
}

bool api_draining(struct api *a)
{
	bool d;

	pthread_mutex_lock(&a->async_lock);
	d = a->draining;
	pthread_mutex_unlock(&a->async_lock);
	return d;
}

/* A header name or value with a control byte is refused: it is either an attack or a broken
 * client.  libmicrohttpd hands a value over cut at a NUL byte ("Bearer <token>\0junk" would
 * read as a good token), so the head's size is also checked against what was parsed: every
 * byte must be accounted for, but for one space after each header's colon. */
struct header_check {
	const char *bad;     /* the first bad header's name */
	size_t bytes;	     /* of the header lines as parsed: "key:value\r\n" */
	size_t nonempty;     /* headers with a value (written "Name: value": one space more) */
	unsigned content_length, transfer_encoding, authorization; /* how many of each */
	bool te_chunked;     /* Transfer-Encoding is exactly "chunked" */
};

static enum MHD_Result check_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    size_t key_size, const char *value, size_t value_size)
{
	struct header_check *hc = cls;

	(void)kind;
	hc->bytes += key_size + 1 + value_size + 2;
	if (value_size)
		hc->nonempty++;
	for (size_t i = 0; i < key_size; i++)
		if ((unsigned char)key[i] <= ' ' || key[i] == 0x7f)
			goto bad;
	for (size_t i = 0; value && i < value_size; i++)
		if (((unsigned char)value[i] < ' ' && value[i] != '\t') || value[i] == 0x7f)
			goto bad;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
		hc->content_length++;
	if (strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION) == 0)
		hc->authorization++;
	if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
		hc->transfer_encoding++;
		hc->te_chunked = value && strcasecmp(value, "chunked") == 0;
	}
	return MHD_YES;
bad:
	hc->bad = key_size ? key : "(empty)";
	return MHD_NO;
}

static bool has_body_method(const char *method)
{
	return strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
	       strcmp(method, "PATCH") == 0;
}

static bool is_json_type(const char *ct)
{
	return ct && strncasecmp(ct, "application/json", 16) == 0 &&
	       (!ct[16] || ct[16] == ';' || ct[16] == ' ');
}

/* A method is a token (RFC 9110 5.6.2). */
static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

/* The malformed heads, answered 400 BAD_HEADER / BAD_REQUEST_TARGET.  libmicrohttpd hands a
 * header's value over cut at a NUL byte ("Bearer <token>\0junk" would read as a good token)
 * and keeps no raw copy, so the head's size is checked against what was parsed: every byte
 * must be accounted for by the canonical form, "Name: value" CRLF.  A client that writes
 * "Name:value", two spaces, or bare LF line ends is refused with a message saying so (real
 * clients — curl, browsers, Python, Go, libcurl — write the canonical form). */
static bool check_framing(struct api_req *req, const char *version, struct rf_err *e)
{
	struct MHD_Connection *conn = req->conn;
	const union MHD_ConnectionInfo *hs =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	struct header_check hc = { 0 };

	if (req->uri_bad || !is_token(req->method)) {
		rf_err_set(e, -EINVAL, "BAD_REQUEST_TARGET", NULL,
			   "the request line has a control character (raw, or escaped as %%00-%%1F "
			   "or %%7F), or a method that is not a token");
		return false;
	}
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, check_header, &hc);
	if (hc.bad) {
		rf_err_set(e, -EINVAL, "BAD_HEADER", NULL,
			   "header '%.64s' contains a control character", hc.bad);
		return false;
	}
	/* one credential: with two, which one counts would depend on the reader (a proxy that
	 * adds its own after the client's would be overridden by it) */
	if (hc.authorization > 1) {
		rf_err_set(e, -EINVAL, "BAD_HEADER", NULL,
			   "%u Authorization headers: send one (which of them would count is not for a "
			   "server to guess)", hc.authorization);
		return false;
	}
	if (hs && req->uri_len) {
		size_t canonical = strlen(req->method) + 1 + req->uri_len + 1 + strlen(version) + 2 +
				   hc.bytes + hc.nonempty + 2;

		if (hs->header_size != canonical) {
			rf_err_set(e, -EINVAL, "BAD_HEADER", NULL,
				   "the request head has %zu bytes where its headers written \"Name: "
				   "value\" with CRLF line ends have %zu: a NUL byte in a header, "
				   "whitespace around a value other than one space, or bare LF line ends",
				   hs->header_size, canonical);
			return false;
		}
	}
	/* one way to frame a body, or none: the ways two readers of the head could disagree */
	if (hc.content_length > 1 || (hc.content_length && hc.transfer_encoding) ||
	    hc.transfer_encoding > 1 || (hc.transfer_encoding && !hc.te_chunked)) {
		rf_err_set(e, -EINVAL, "BAD_FRAMING", NULL,
			   "the body is framed ambiguously: send one Content-Length, or "
			   "Transfer-Encoding: chunked alone");
		req->early_now = true; /* a body nobody can delimit is not drained */
		return false;
	}
	return true;
}

struct query_check {
	const char *params; /* the route's */
	unsigned seen;	    /* bit i: its i-th parameter was given */
	const char *bad;    /* the first key refused */
	bool twice;	    /* ... because it was given before */
};

/* The index of key in the comma-separated list, or -1 (a key with a comma is none of them:
 * "state,batch" would match across two). */
static int param_index(const char *list, const char *key)
{
	size_t n = strlen(key);
	const char *p = list;

	if (strchr(key, ','))
		return -1;
	for (int i = 0; n && p; i++) {
		if (strncmp(p, key, n) == 0 && (p[n] == ',' || !p[n]))
			return i;
		if ((p = strchr(p, ',')))
			p++;
	}
	return -1;
}

static enum MHD_Result check_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct query_check *qc = cls;
	int i = qc->params ? param_index(qc->params, key) : -1;

	(void)kind;
	(void)value;
	if (i < 0 || (qc->seen & 1u << i)) {
		qc->bad = key;
		qc->twice = i >= 0;
		return MHD_NO;
	}
	qc->seen |= 1u << i;
	return MHD_YES;
}

/* 0 when the query's parameters are the route's, each once; else why not, in e (answered as
 * the head's other refusals are, before the handler and without its body). */
static int check_query(struct api_req *req, struct rf_err *e)
{
	const struct api_route *r = req->route;
	struct query_check qc = { .params = r->params };
	char list[128];

	if (r->params && !strcmp(r->params, "*"))
		return 0;
	MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, check_param, &qc);
	if (!qc.bad)
		return 0;
	if (!*qc.bad)
		return rf_err_set(e, -EINVAL, "UNKNOWN_PARAMETER", NULL,
				  "the query has a parameter without a name (an '=' or '&' too many?)");
	if (qc.twice)
		return rf_err_set(e, -EINVAL, "BAD_PARAMETER", qc.bad, "query parameter '%.64s' is given twice",
				  qc.bad);
	return rf_err_set(e, -EINVAL, "UNKNOWN_PARAMETER", qc.bad, "unknown query parameter '%.64s': %s %s takes %s",
			  qc.bad, r->rp.method, r->rp.pattern,
			  r->params ? params_text(r->params, list, sizeof(list)) : "none");
}

/* The checks of the first call (the head is complete, no body read yet), in the order a
 * client can fix them: a malformed head, then the route, then who asks and the query's
 * parameters (check_query), then the body's announcement.  Fills e; an error is answered once the body has been drained (but a body
 * announced too large to a client waiting for 100 Continue, and one framed ambiguously, are
 * answered at once: see access_handler). */
static void check_head(struct api_req *req, const char *version, struct rf_err *e)
{
	struct api *a = req->api;
	struct MHD_Connection *conn = req->conn;
	const union MHD_ConnectionInfo *hs =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	const char *cl, *ct;
	uint64_t len;
	int r;

	/* A malformed or oversized head carries no valid token by construction: it counts
	 * against the client's rate like any request without one. */
	if (!check_framing(req, version, e))
		goto rate;
	if (req->uri_len > a->conf.max_uri) {
		rf_err_set(e, -ENAMETOOLONG, "URI_TOO_LONG", NULL,
			   "the request target of %zu bytes exceeds the limit of %zu bytes",
			   req->uri_len, a->conf.max_uri);
		goto rate;
	}
	if (hs && hs->header_size > a->conf.max_header) {
		rf_err_set(e, -EMSGSIZE, "HEADERS_TOO_LARGE", NULL,
			   "the request head of %zu bytes exceeds the limit of %zu bytes",
			   hs->header_size, a->conf.max_header);
		req->early_status = 431;
		goto rate;
	}
	/* the dashboard's files need no token (what they show comes from the API, which does) */
	if ((strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0) &&
	    (req->web_file = web_find(a->web, req->url))) {
		req->route = &routes[0];
		goto rate;
	}
	r = router_match(routes, sizeof(routes[0]), req->method, req->url, API_PARAM_MAX,
			 &req->match);
	if (r == 0)
		req->route = &routes[req->match.index];
	if (r == -ENOENT)
		rf_err_set(e, r, "NOT_FOUND", NULL, "no such endpoint: %s", req->url);
	else if (r == -EOPNOTSUPP)
		rf_err_set(e, r, "METHOD_NOT_ALLOWED", NULL, "%s is not allowed here; use %s",
			   req->method, req->match.allow);
	else if (r == -ENAMETOOLONG)
		rf_err_set(e, r, "URI_TOO_LONG", NULL, "a path segment is too long");
	else if (r == -ENOMEM)
		rf_err_set(e, r, "OUT_OF_MEMORY", NULL, "out of memory");
	else if (r < 0)
		rf_err_set(e, r, NULL, NULL, "cannot route the request");
	else if (authenticate(req, e) == 0)
		check_query(req, e);
rate:
	/* Who asks without a valid token is rate limited, refused requests included (the
	 * malformed, the unrouted, the bad tokens): those are what a flood is made of. */
	if (!req->token_valid && !guard_rate_take(a->guard, req->gc)) {
		rf_err_set(e, -EBUSY, "RATE_LIMITED", NULL,
			   "more than %g requests/s without a valid token from this address "
			   "(api.rate_limit); retry shortly",
			   a->conf.rate_limit);
		req->early_status = 429;
		return;
	}
	if (e->err)
		return;
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && str_parse_uint(cl, UINT64_MAX, &len) < 0) {
		rf_err_set(e, -EINVAL, "BAD_CONTENT_LENGTH", NULL,
			   "Content-Length '%.32s' is not a byte count", cl);
		return;
	}
	if (cl && len > a->conf.max_body) {
		rf_err_set(e, -E2BIG, "BODY_TOO_LARGE", NULL,
			   "the body of %llu bytes exceeds the limit of %llu bytes (api.max_body)",
			   (unsigned long long)len, (unsigned long long)a->conf.max_body);
		return;
	}
	ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	/* a POST without a body (Content-Length: 0, or none and not chunked) needs no type:
	 * the actions on a resource (POST /api/v1/alerts/{id}/ack) take none */
	if (has_body_method(req->method) && !is_json_type(ct) &&
	    (!ct || !*ct) && ((cl && len == 0) || (!cl && !MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
											   MHD_HTTP_HEADER_TRANSFER_ENCODING))))
		; /* no body at all */
	else if (has_body_method(req->method) && !is_json_type(ct))
		rf_err_set(e, -EMEDIUMTYPE, "UNSUPPORTED_MEDIA_TYPE", NULL,
			   "send the body as Content-Type: application/json (got %.64s)",
			   ct ? ct : "none");
}

static bool waits_for_continue(struct MHD_Connection *conn)
{
	const char *x = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);

	return x && strcasecmp(x, "100-continue") == 0;
}

/* Answers the error found so far; the request counts as read (its deadline stops). */
static void reply_early(struct api_req *req)
{
	guard_request_read(req->api->guard, req->gc);
	api_reply_problem(req, req->early_status, &req->early);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
				      const char *method, const char *version,
				      const char *upload_data, size_t *upload_data_size,
				      void **con_cls)
{
	struct api *a = cls;
	struct api_req *req = *con_cls;
	struct rf_err e = { 0 };

	if (!req || !req->started) {
		if (!req && !(req = calloc(1, sizeof(*req))))
			return MHD_NO;
		req->started = true;
		req->api = a;
		req->conn = conn;
		req->method = method;
		req->url = url;
		req->t0 = tu_mono_ns();
		req->gc = guard_conn_of(conn);
		buf_init(&req->body);
		*con_cls = req;
		check_head(req, version, &req->early);
		/* A body announced too large is refused at once when the client waits for
		 * "100 Continue" before sending it: it never sends it, and the connection closes
		 * after the answer.  Other refusals, and that one from a client already sending,
		 * are answered once the body has been read and thrown away (never stored):
		 * closing on unread data makes the kernel reset the connection, and the client
		 * would never see the answer.  DISCARD_MAX and api.request_timeout bound that. */
		if (req->early_now || (req->early.err == -E2BIG && waits_for_continue(conn)))
			reply_early(req);
		return MHD_YES;
	}
	if (req->replied) {
		*upload_data_size = 0; /* discard whatever still arrives */
		return MHD_YES;
	}
	if (*upload_data_size) {
		atomic_fetch_add_explicit(&a->bytes_in, *upload_data_size, memory_order_relaxed);
		if (!req->early.err && req->body.len + req->dropped + *upload_data_size > a->conf.max_body)
			rf_err_set(&req->early, -E2BIG, "BODY_TOO_LARGE", NULL,
				   "the body exceeds the limit of %llu bytes (api.max_body)",
				   (unsigned long long)a->conf.max_body);
		if (req->early.err) {
			req->discarded += *upload_data_size;
			*upload_data_size = 0;
			/* beyond this, stop reading a body nobody wants: drop the connection (the
			 * deadline, api.request_timeout, bounds the time it may take) */
			return req->discarded > a->conf.max_body + DISCARD_MAX ? MHD_NO : MHD_YES;
		}
		/* a body sent with GET or HEAD is read and dropped (within api.max_body all the
		 * same): no handler sees it (one that served GET and PUT took a viewer's HEAD with a
		 * body for a PUT) */
		if (!has_body_method(req->method))
			req->dropped += *upload_data_size;
		else if (buf_append(&req->body, upload_data, *upload_data_size) < 0)
			rf_err_set(&req->early, -EAGAIN, "OUT_OF_MEMORY", NULL, "out of memory"); /* for now: retry */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (req->early.err) {
		reply_early(req);
		return MHD_YES;
	}
	if (req->suspended && !req->async_done)
		return MHD_YES; /* spurious: still waiting for the writer */
	guard_request_read(a->guard, req->gc);
	dispatch(req);
	if (!req->replied && !req->suspended) {
		rf_err_set(&e, -EIO, "INTERNAL_ERROR", NULL, "the handler gave no response");
		api_reply_problem(req, 0, &e);
	}
	return MHD_YES;
}

/* The first thing libmicrohttpd knows of a request: its raw target, query included. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct api_req *req = calloc(1, sizeof(*req));

	(void)cls;
	(void)conn;
	if (req) {
		req->uri_len = strlen(uri);
		for (const char *c = uri; *c; c++) {
			unsigned char b = (unsigned char)*c;

			if (b < 0x20 || b == 0x7f ||
			    (b == '%' && (c[1] == '0' || c[1] == '1') && isxdigit((unsigned char)c[2])) ||
			    (b == '%' && c[1] == '7' && (c[2] == 'f' || c[2] == 'F')))
				req->uri_bad = true;
		}
	}
	return req; /* NULL: the access handler allocates it */
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			      enum MHD_RequestTerminationCode toe)
{
	struct api *a = cls;
	struct api_req *req = *con_cls;

	(void)toe;
	guard_request_done(a->guard, guard_conn_of(conn));
	if (!req)
		return;
	/* A client gone while its request was with the writer: libmicrohttpd closes the
	 * resumed connection without calling the handler again, so it is accounted for here
	 * (or api_drain would wait for it until its timeout at every shutdown). */
	if (req->async_pending) {
		json_decref(req->ingest_res.commands);
		req->ingest_res.commands = NULL;
		api_async_done(req);
	}
	json_decref(req->async_doc);
	router_match_fini(&req->match);
	buf_fini(&req->body);
	free(req);
	*con_cls = NULL;
}

int api_reply_json_cached(struct api_req *req, json_t *body_stolen)
{
	return reply_json(req, 200, body_stolen, true);
}

/* --- metrics --------------------------------------------------------------------------------- */

void api_render_metrics(struct api *a, struct buf *out)
{
	buf_puts(out, "# HELP rocefab_http_requests_total HTTP requests answered, by route and "
		      "status code.\n# TYPE rocefab_http_requests_total counter\n");
	for (size_t r = 0; r <= NROUTES; r++) {
		for (size_t c = 0; c <= NCODES; c++) {
			uint64_t n = atomic_load_explicit(&a->requests[r][c], memory_order_relaxed);
			char code[8];

			if (!n)
				continue;
			if (c < NCODES)
				snprintf(code, sizeof(code), "%u", counted_codes[c]);
			else
				snprintf(code, sizeof(code), "other");
			buf_printf(out,
				   "rocefab_http_requests_total{method=\"%s\",route=\"%s\",code=\"%s\"} %llu\n",
				   r < NROUTES ? routes[r].rp.method : "any",
				   r < NROUTES ? routes[r].rp.pattern : "unrouted", code,
				   (unsigned long long)n);
		}
	}
	buf_printf(out, "# HELP rocefab_http_request_body_bytes_total Bytes of request bodies "
			"received.\n# TYPE rocefab_http_request_body_bytes_total counter\n"
			"rocefab_http_request_body_bytes_total %llu\n",
		   (unsigned long long)atomic_load(&a->bytes_in));
	buf_printf(out, "# HELP rocefab_http_unread_bytes Bytes of answers built and not yet taken by their "
			"clients (api.max_unread).\n# TYPE rocefab_http_unread_bytes gauge\n"
			"rocefab_http_unread_bytes %llu\n"
			"# HELP rocefab_http_unread_refused_total Answers refused (503 BUSY) because they did not fit "
			"in api.max_unread, or in their client address's api.max_unread_per_client.\n"
			"# TYPE rocefab_http_unread_refused_total counter\n"
			"rocefab_http_unread_refused_total %llu\n",
		   (unsigned long long)atomic_load(&a->unread), (unsigned long long)atomic_load(&a->unread_busy));
	guard_render_metrics(a->guard, out);
	sse_render_metrics(a->sse, out);
}

/* --- set-up ---------------------------------------------------------------------------------- */

/* A PEM file into memory; a private key (key) only when its mode passes lib/tokenfile.h's rule,
 * checked again on the file opened (api_check_conf looked at its name). */
static char *read_file(const char *path, bool key, struct rf_err *e)
{
	FILE *f = fopen(path, "re");
	char *data = NULL;
	size_t len = 0;

	if (!f) {
		rf_err_set(e, -errno, "TLS_UNREADABLE", path, "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (key) {
		struct rf_err w = { 0 };
		struct stat st;
		bool warned;

		if (fstat(fileno(f), &st) < 0) {
			rf_err_set(e, -errno, "TLS_UNREADABLE", path, "cannot read: %s", strerror(errno));
			fclose(f);
			return NULL;
		}
		/* (a group-readable key: api_check_conf has said it) */
		if (keyfile_check_stat(&st, path, &warned, &w, e) < 0) {
			fclose(f);
			return NULL;
		}
	}
	{
		FILE *m = open_memstream(&data, &len);
		char chunk[4096];
		size_t n;

		if (!m) {
			fclose(f);
			return NULL;
		}
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		fclose(m);
	}
	fclose(f);
	return data;
}

static bool set(const char *s)
{
	return s && *s;
}

int api_check_conf(const struct api_conf *c, struct rf_err *e)
{
	struct sockaddr_storage ss;
	struct rf_err w = { 0 };
	uint8_t mask;
	bool v6, warned;
	int r;

	if ((r = net_parse_listen(c->listen, "api.listen", &ss, &v6, e)) < 0 ||
	    (r = api_parse_metrics_priorities(c->metrics_priorities, &mask, e)) < 0)
		return r;
	if (set(c->tls_cert) != set(c->tls_key))
		return rf_err_set(e, -EINVAL, "TLS_INCOMPLETE", "api.tls_cert",
				  "set both api.tls_cert and api.tls_key, or neither");
	if (set(c->client_ca) && !set(c->tls_cert))
		return rf_err_set(e, -EINVAL, "TLS_INCOMPLETE", "api.client_ca",
				  "api.client_ca needs HTTPS: set api.tls_cert and api.tls_key");
	if (!set(c->tls_cert))
		return 0;
	if ((r = keyfile_check(c->tls_key, &warned, &w, e)) < 0)
		return r;
	if (warned)
		log_msg(LOG_WARNING, "api", w.code, "api.tls_key %s: %s", w.where, w.msg);
	if (access(c->tls_cert, R_OK) < 0)
		return rf_err_set(e, -errno, "TLS_UNREADABLE", c->tls_cert, "cannot open: %s",
				  strerror(errno));
	if (set(c->client_ca) && access(c->client_ca, R_OK) < 0)
		return rf_err_set(e, -errno, "TLS_UNREADABLE", c->client_ca, "cannot open: %s",
				  strerror(errno));
	return 0;
}

int api_check_tls_files(const struct api_conf *c, struct rf_err *e)
{
	int64_t not_after = 0;
	char when[40];
	int r;

	if (!set(c->tls_cert))
		return 0;
	if ((r = tls_check_pair("api.tls_cert", c->tls_cert, "api.tls_key", c->tls_key, &not_after, e)) < 0 ||
	    (set(c->client_ca) && (r = tls_check_ca("api.client_ca", c->client_ca, e)) < 0))
		return r;
	if (not_after > 0 && not_after < tu_now_ns() / NSEC_PER_SEC)
		log_msg(LOG_WARNING, "api", "TLS_CERT_EXPIRED", "api.tls_cert %s expired on %s: clients will refuse it",
			c->tls_cert, tu_format_rfc3339(not_after * NSEC_PER_SEC, when, sizeof(when)));
	return 0;
}

int api_start(const struct api_conf *c, const struct api_deps *d, struct api **ret,
	      struct rf_err *e)
{
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO;
	struct sockaddr_storage ss = { 0 };
	struct api *a = calloc(1, sizeof(*a));
	const union MHD_DaemonInfo *info;
	bool v6 = false;
	size_t pool;
	int r;

	if (!a)
		return -ENOMEM;
	a->conf = *c;
	if (!a->conf.max_unread)
		a->conf.max_unread = UINT64_MAX; /* none set: no bound */
	if (!a->conf.max_unread_per_client || a->conf.max_unread_per_client > a->conf.max_unread)
		a->conf.max_unread_per_client = a->conf.max_unread;
	a->deps = *d;
	pthread_mutex_init(&a->async_lock, NULL);
	pthread_cond_init(&a->async_cond, NULL);
	pthread_mutex_init(&a->cache_lock, NULL);
	hmap_init(&a->cache);
	hmap_init(&a->tokens);
	if ((r = api_check_conf(c, e)) < 0 || (r = api_check_tls_files(c, e)) < 0 ||
	    (r = net_parse_listen(c->listen, "api.listen", &ss, &v6, e)) < 0 ||
	    (r = api_parse_metrics_priorities(c->metrics_priorities, &a->metrics_prio_mask, e)) < 0)
		goto fail;
	if (v6)
		flags |= MHD_USE_IPv6;
	if (set(c->tls_cert)) {
		a->tls_cert = read_file(c->tls_cert, false, e);
		a->tls_key = a->tls_cert ? read_file(c->tls_key, true, e) : NULL;
		if (!a->tls_cert || !a->tls_key) {
			r = -EINVAL;
			goto fail;
		}
		flags |= MHD_USE_TLS;
	}
	if (set(c->client_ca) && !(a->client_ca = read_file(c->client_ca, false, e))) {
		r = -EINVAL;
		goto fail;
	}
	{
		struct guard_conf gc = { .max_client_conns = c->max_client_connections,
					 .rate = c->rate_limit, .burst = c->rate_burst,
					 .request_timeout_ns = c->request_timeout_ns };

		if ((r = guard_new(&gc, &a->guard)) < 0) {
			rf_err_set(e, r, "NO_THREAD", NULL, "cannot start the connection reaper");
			goto fail;
		}
	}
	if (c->web_root && *c->web_root) {
		struct rf_err we = { 0 };

		char msg[600];

		if (web_load(c->web_root, c->javascript_root ? c->javascript_root : "", &a->web,
			     &we) < 0)
			log_warning("api", "no dashboard: %s", rf_err_str(&we, msg, sizeof(msg)));
	}
	if (d->events && (r = sse_hub_new(d->events, &a->sse)) < 0) {
		rf_err_set(e, r, "NO_THREAD", NULL, "cannot start the event streams");
		goto fail;
	}
	pool = 4 * c->max_header > POOL_MIN ? 4 * c->max_header : POOL_MIN;
	a->mhd = MHD_start_daemon(
		flags, 0, guard_accept_cb, a->guard, access_handler, a,
		/* first, so that even the library's first messages go through the guard */
		MHD_OPTION_EXTERNAL_LOGGER, guard_logger_cb, a->guard, MHD_OPTION_SOCK_ADDR,
		(struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, c->threads ? c->threads : 2u,
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)(c->conn_timeout_ns / NSEC_PER_SEC > 0 ? c->conn_timeout_ns / NSEC_PER_SEC
								 : 1),
		MHD_OPTION_NOTIFY_COMPLETED, request_completed, a, MHD_OPTION_URI_LOG_CALLBACK,
		uri_log, a, MHD_OPTION_NOTIFY_CONNECTION, guard_connection_cb, a->guard,
		MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
		MHD_OPTION_CONNECTION_LIMIT,
		c->max_connections ? c->max_connections : 10000u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		pool,
		a->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, a->tls_cert,
		MHD_OPTION_HTTPS_MEM_KEY, a->tls_key,
		a->client_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, a->client_ca,
		MHD_OPTION_END);
	if (!a->mhd) {
		r = rf_err_set(e, -EADDRINUSE, "LISTEN_FAILED", "api.listen",
			       "cannot listen on %s (address in use, not local, or bad TLS files)",
			       c->listen);
		goto fail;
	}
	info = MHD_get_daemon_info(a->mhd, MHD_DAEMON_INFO_BIND_PORT);
	{
		char host[INET6_ADDRSTRLEN] = "";
		unsigned port = info ? info->port : 0;

		if (v6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host,
				  sizeof(host));
		else
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
		snprintf(a->url, sizeof(a->url), "%s://%s%s%s:%u", a->tls_cert ? "https" : "http",
			 v6 ? "[" : "", host, v6 ? "]" : "", port);
	}
	*ret = a;
	return 0;
fail:
	api_stop(a);
	return r;
}

void api_quiesce(struct api *a)
{
	/* New connections are closed as they are accepted (the guard's accept policy).  Not
	 * MHD_quiesce_daemon: with a thread pool on epoll, libmicrohttpd 0.9.75 removes the
	 * listening socket from each worker's epoll set while the worker may be removing it
	 * too, and the loser's failed epoll_ctl is MHD_PANIC, i.e. abort() ("Failed to remove
	 * listen FD from epoll set": rocefabd died of SIGABRT on SIGTERM in CI). */
	if (a && a->guard)
		guard_close(a->guard);
}

void api_stop(struct api *a)
{
	size_t it = 0;
	void *v;

	if (!a)
		return;
	sse_hub_stop(a->sse); /* no stream may stay suspended when libmicrohttpd stops */
	if (a->mhd)
		MHD_stop_daemon(a->mhd);
	sse_hub_free(a->sse);
	web_free(a->web);
	guard_free(a->guard);
	while (hmap_next(&a->cache, &it, NULL, &v)) {
		struct cached *c = v;

		free(c->key);
		free(c->body);
		free(c);
	}
	hmap_fini(&a->cache);
	it = 0;
	while (hmap_next(&a->tokens, &it, NULL, &v))
		free(v);
	hmap_fini(&a->tokens);
	pthread_mutex_destroy(&a->cache_lock);
	pthread_cond_destroy(&a->async_cond);
	pthread_mutex_destroy(&a->async_lock);
	free(a->tls_cert);
	free(a->tls_key);
	free(a->client_ca);
	free(a);
}
