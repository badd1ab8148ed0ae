/* Handlers: switches, links and topology; device configuration (DCQCN, ECN, PFC) and changes.
 *
 * A PUT (or a bulk POST /api/v1/changes) is validated completely against the configuration
 * the target agents last reported (daemon/validate.h) before anything is stored: a rejected
 * request changes nothing.  An accepted one becomes changes in state "pending" (the audit log)
 * and is answered 202 with them; the agents get them as commands with their next report. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "daemon/changes.h"
#include "daemon/topo.h"
#include "daemon/validate.h"
#include "lib/params.h"
#include "lib/timeutil.h"

#define MAX_TARGETS 10000
#define MAX_REASON 512

/* --- switches, links, topology ------------------------------------------------------------------- */

typedef int (*topo_fn)(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		       struct rf_err *e);

static int run_topo(struct api_req *req, topo_fn fn)
{
	struct views_opts o = api_views_opts(req);
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	int r;

	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = fn(rd, &o, &doc, &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

int h_switches(struct api_req *req)
{
	return run_topo(req, views_switches);
}

int h_links(struct api_req *req)
{
	return run_topo(req, views_links);
}

int h_topology(struct api_req *req)
{
	return run_topo(req, views_topology);
}

int h_switch(struct api_req *req)
{
	struct views_opts o = api_views_opts(req);
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	int r;

	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = views_switch(rd, &o, req->match.params[0], &doc, &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

int h_params(struct api_req *req)
{
	json_t *list = json_array();

	for (unsigned i = 0; i < dcqcn_nparams; i++) {
		const struct dcqcn_param *p = &dcqcn_params[i];
		json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:s}", "name", p->name, "node", p->node,
				      "unit", p->unit, "min", (json_int_t)p->min, "default",
				      (json_int_t)p->def, "help", p->help);

		json_object_set_new(o, "max", p->max == PARAM_LINE_RATE ? json_string("line rate")
									: json_integer(p->max));
		json_array_append_new(list, o);
	}
	return api_reply_json(req, 200,
			      json_pack("{s:o,s:[s,s,s,s],s:[s,s,s,s]}", "dcqcn", list, "ecn",
					"enabled", "kmin_bytes", "kmax_bytes", "pmax", "pfc", "enable",
					"xoff_bytes", "xon_bytes", "alpha_shift"));
}

/* --- targets ------------------------------------------------------------------------------------- */

struct target {
	char agent[65], device[65], port[65];
	int queue;
	json_t *current; /* the values last reported (owned) */
	int64_t line_mbps;
	json_t *port_pfc, *port_ecn; /* for cross checks (owned) */
};

static void targets_free(struct target *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++) {
		json_decref(t[i].current);
		json_decref(t[i].port_pfc);
		json_decref(t[i].port_ecn);
	}
	free(t);
}

/* Fills a target's current values and cross-check context from a configs entry. */
static int target_fill(struct store_reader *rd, enum change_kind kind, const char *agent,
		       const char *role, json_t *entry, struct target *t, struct rf_err *e)
{
	json_t *list = NULL;

	snprintf(t->agent, sizeof(t->agent), "%s", agent);
	snprintf(t->device, sizeof(t->device), "%s", json_string_value(json_object_get(entry, "device")));
	snprintf(t->port, sizeof(t->port), "%s", json_string_value(json_object_get(entry, "port")));
	t->queue = json_object_get(entry, "queue") ? (int)json_integer_value(json_object_get(entry, "queue")) : -1;
	t->current = json_incref(json_object_get(entry, "values"));
	if (kind == CHANGE_DCQCN)
		views_port_speed(rd, agent, t->device, t->port, &t->line_mbps);
	if (kind == CHANGE_ECN) {
		if (configs_get(rd, agent, CHANGE_PFC, t->device, t->port, -2, &list, e) < 0)
			return -EIO;
		t->port_pfc = json_incref(json_object_get(json_array_get(list, 0), "values"));
		json_decref(list);
	}
	if (kind == CHANGE_PFC && !strcmp(role, "switch")) {
		size_t i;
		json_t *it;

		if (configs_get(rd, agent, CHANGE_ECN, t->device, t->port, -2, &list, e) < 0)
			return -EIO;
		t->port_ecn = json_array();
		json_array_foreach(list, i, it) {
			json_t *v = json_deep_copy(json_object_get(it, "values"));

			json_object_set(v, "queue", json_object_get(it, "queue"));
			json_array_append_new(t->port_ecn, v);
		}
		json_decref(list);
	}
	return 0;
}

static int validate_target(enum change_kind kind, const char *role, json_t *params,
			   const struct target *t, struct rf_err *e)
{
	switch (kind) {
	case CHANGE_DCQCN:
		return validate_dcqcn(params, t->current, t->line_mbps, e);
	case CHANGE_ECN:
		return validate_ecn(params, t->current, t->port_pfc, t->queue, e);
	case CHANGE_PFC:
		return validate_pfc(params, t->current, t->port_ecn, !strcmp(role, "switch"), e);
	}
	return -EINVAL;
}

/* Splits a request body into params and the reserved members (reason; device/port for DCQCN). */
static int split_body(struct api_req *req, json_t **ret_params, char **ret_reason, struct rf_err *e)
{
	json_error_t je;
	json_t *doc, *reason;

	*ret_params = NULL;
	*ret_reason = NULL;
	doc = json_loadb(req->body.data ? req->body.data : "", req->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return rf_err_set(e, -EINVAL, "BAD_JSON", NULL, "the body is not JSON: line %d: %s",
				  je.line, je.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/", "send a JSON object of the settings to change");
	}
	reason = json_object_get(doc, "reason");
	if (reason) {
		if (!json_is_string(reason) || strlen(json_string_value(reason)) > MAX_REASON) {
			json_decref(doc);
			return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/reason",
					  "reason is a string of at most %d characters", MAX_REASON);
		}
		*ret_reason = strdup(json_string_value(reason));
		json_object_del(doc, "reason");
	}
	*ret_params = doc;
	return 0;
}

/* Creates one change per target (params copied) and answers 202 with them. */
static int create_and_reply(struct api_req *req, enum change_kind kind, json_t *params,
			    struct target *t, size_t n, const char *reason)
{
	const struct api_deps *d = api_deps(req);
	struct change_spec *specs = calloc(n, sizeof(*specs));
	struct changes_filter f = { .queue = -2, .limit = MAX_TARGETS };
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	int64_t batch = 0;
	int r;

	if (!specs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct change_spec *c = &specs[i];

		snprintf(c->agent, sizeof(c->agent), "%s", t[i].agent);
		snprintf(c->device, sizeof(c->device), "%s", t[i].device);
		snprintf(c->port, sizeof(c->port), "%s", t[i].port);
		c->kind = kind;
		c->queue = t[i].queue;
		c->params = json_deep_copy(params);
		c->old = json_incref(t[i].current);
	}
	r = changes_create(d->store, specs, n, req->token_name[0] ? req->token_name : "anonymous",
			   reason, tu_now_ns() + api_conf(req)->change_deadline_ns, &batch);
	if (r < 0) {
		rf_err_set(&e, r == -EAGAIN ? -EAGAIN : r, r == -EAGAIN ? "QUEUE_FULL" : "STORE_ERROR",
			   NULL, "the change could not be stored (%s); nothing was changed", strerror(-r));
		return api_reply_problem(req, 503, &e);
	}
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	f.batch = batch;
	r = changes_list(rd, &f, &doc, &e);
	if (r == 0) {
		json_t *items = json_object_get(doc, "items");

		/* oldest first, as created */
		json_t *rev = json_array();

		for (size_t i = json_array_size(items); i > 0; i--)
			json_array_append(rev, json_array_get(items, i - 1));
		json_decref(doc);
		doc = json_pack("{s:I,s:I,s:o}", "batch", (json_int_t)batch, "count",
				(json_int_t)json_array_size(rev), "changes", rev);
	}
	return api_finish(req, rd, r, doc, &e, 202);
}

/* The object's page: its values as last reported and its recent changes. */
static int object_reply(struct api_req *req, struct store_reader *rd, const char *agent,
			enum change_kind kind, json_t *entries)
{
	struct changes_filter f = { .agent = agent, .kind = change_kind_name(kind), .queue = -2, .limit = 20 };
	struct rf_err e = { 0 };
	json_t *changes = NULL, *doc;
	int r;

	if (json_array_size(entries) == 1) {
		json_t *one = json_array_get(entries, 0);

		f.device = json_string_value(json_object_get(one, "device"));
		f.port = json_string_value(json_object_get(one, "port"));
		if (json_object_get(one, "queue"))
			f.queue = (int)json_integer_value(json_object_get(one, "queue"));
	}
	r = changes_list(rd, &f, &changes, &e);
	if (r < 0) {
		json_decref(entries);
		return api_finish(req, rd, r, NULL, &e, 200);
	}
	doc = json_pack("{s:s,s:s,s:o,s:O}", "agent", agent, "kind", change_kind_name(kind),
			"items", entries, "changes", json_object_get(changes, "items"));
	json_decref(changes);
	return api_finish(req, rd, 0, doc, &e, 200);
}

/* Resolves the single-object endpoints: the agent (with its role) and its entries. */
static int lookup(struct api_req *req, struct store_reader *rd, const char *want_role,
		  enum change_kind kind, const char *device, const char *port, int queue,
		  json_t **ret, struct rf_err *e)
{
	const char *agent = req->match.params[0], *role = NULL;
	int r = views_agent_role(rd, agent, &role);

	*ret = NULL;
	if (r == -ENOENT || (r == 0 && strcmp(role, want_role)))
		return rf_err_set(e, -ENOENT, !strcmp(want_role, "switch") ? "UNKNOWN_SWITCH" : "UNKNOWN_HOST",
				  NULL, "no %s '%s'", want_role, agent);
	if (r < 0)
		return r;
	if (port) {
		int64_t speed;

		if (views_port_speed(rd, agent, device, port, &speed) == -ENOENT)
			return rf_err_set(e, -ENOENT, "UNKNOWN_PORT", NULL, "%s has no port '%s%s%s'", agent,
					  device ? device : "", device ? ":" : "", port);
	}
	if ((r = configs_get(rd, agent, kind, device, port, queue, ret, e)) < 0)
		return r;
	if (!json_array_size(*ret)) {
		json_decref(*ret);
		*ret = NULL;
		if (kind == CHANGE_ECN)
			return rf_err_set(e, -ENOENT, "UNKNOWN_QUEUE", NULL,
					  "%s port %s has no queue %d with ECN settings reported", agent, port, queue);
		return rf_err_set(e, -ENOENT, "NO_CONFIGURATION", NULL,
				  "%s has reported no %s configuration%s%s (its agent cannot read it, or "
				  "has not reported yet)", agent, change_kind_name(kind), port ? " for port " : "",
				  port ? port : "");
	}
	return 0;
}

/* GET or PUT of one object (or, for DCQCN, the host's RDMA ports). */
static int config_endpoint(struct api_req *req, const char *role, enum change_kind kind,
			   const char *device, const char *port, int queue)
{
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *entries = NULL, *params = NULL, *it;
	struct target *t = NULL;
	char *reason = NULL;
	size_t n = 0, i;
	int r;

	if (!strcmp(req->method, "PUT") && (r = split_body(req, &params, &reason, &e)) < 0)
		return api_reply_problem(req, 400, &e);
	if (params && kind == CHANGE_DCQCN) {
		/* DCQCN is per RDMA port; the body may pick one, else every port of the host */
		json_t *dv = json_object_get(params, "device"), *pv = json_object_get(params, "port");

		if ((dv && !json_is_string(dv)) || (pv && !json_is_string(pv))) {
			json_decref(params);
			free(reason);
			rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", dv && !json_is_string(dv) ? "/device" : "/port",
				   "a device or port name is a string");
			return api_reply_problem(req, 400, &e);
		}
		device = dv ? strdup(json_string_value(dv)) : NULL;
		port = pv ? strdup(json_string_value(pv)) : NULL;
		json_object_del(params, "device");
		json_object_del(params, "port");
	}
	if ((r = api_reader(req, &rd))) {
		json_decref(params);
		free(reason);
		return r < 0 ? r : 0;
	}
	r = lookup(req, rd, role, kind, device, port, queue, &entries, &e);
	if (kind == CHANGE_DCQCN && params) {
		free((char *)device);
		free((char *)port);
	}
	if (r < 0 || !params) {
		json_decref(params);
		free(reason);
		if (r < 0)
			return api_finish(req, rd, r, NULL, &e, 200);
		return object_reply(req, rd, req->match.params[0], kind, entries);
	}
	/* PUT: validate against every target before storing anything */
	t = calloc(json_array_size(entries), sizeof(*t));
	if (!t) {
		r = -ENOMEM;
		goto out;
	}
	json_array_foreach(entries, i, it) {
		if ((r = target_fill(rd, kind, req->match.params[0], role, it, &t[n], &e)) < 0) {
			n++;
			goto out;
		}
		n++;
		if ((r = validate_target(kind, role, params, &t[n - 1], &e)) < 0)
			goto out;
	}
	store_reader_put(api_deps(req)->store, rd);
	rd = NULL;
	r = create_and_reply(req, kind, params, t, n, reason);
	json_decref(entries);
	json_decref(params);
	targets_free(t, n);
	free(reason);
	return r;
out:
	json_decref(entries);
	json_decref(params);
	targets_free(t, n);
	free(reason);
	return api_finish(req, rd, r, NULL, &e, 200);
}

int h_host_dcqcn(struct api_req *req)
{
	return config_endpoint(req, "host", CHANGE_DCQCN, NULL, NULL, -2);
}

int h_host_pfc(struct api_req *req)
{
	/* a host port is DEVICE:PORT (nic0:1) */
	char buf[API_PARAM_MAX + 1], *colon;
	struct rf_err e = { 0 };

	snprintf(buf, sizeof(buf), "%s", req->match.params[1]);
	colon = strchr(buf, ':');
	if (!colon) {
		rf_err_set(&e, -ENOENT, "UNKNOWN_PORT", NULL,
			   "a host port is DEVICE:PORT, for example nic0:1 or mlx5_0:1");
		return api_reply_problem(req, 404, &e);
	}
	*colon = '\0';
	return config_endpoint(req, "host", CHANGE_PFC, buf, colon + 1, -2);
}

int h_switch_pfc(struct api_req *req)
{
	return config_endpoint(req, "switch", CHANGE_PFC, NULL, req->match.params[1], -2);
}

int h_switch_ecn(struct api_req *req)
{
	struct rf_err e = { 0 };
	char *end;
	long q = strtol(req->match.params[2], &end, 10);

	if (*end || q < 0 || q > 7) {
		rf_err_set(&e, -ENOENT, "UNKNOWN_QUEUE", NULL, "queue '%s': queues are 0 to 7",
			   req->match.params[2]);
		return api_reply_problem(req, 404, &e);
	}
	return config_endpoint(req, "switch", CHANGE_ECN, NULL, req->match.params[1], (int)q);
}

/* --- changes --------------------------------------------------------------------------------------- */

int h_changes(struct api_req *req)
{
	struct changes_filter f = { .agent = api_arg(req, "agent"), .kind = api_arg(req, "kind"),
				    .state = api_arg(req, "state"), .queue = -2, .limit = 100 };
	const char *batch = api_arg(req, "batch"), *limit = api_arg(req, "limit");
	static const char *const states[] = { "pending", "sent", "applied", "failed", "timed_out", NULL };
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	enum change_kind k;
	char *end;
	int r;

	if (f.kind && change_kind_parse(f.kind, &k) < 0) {
		rf_err_set(&e, -EINVAL, "BAD_QUERY", "kind", "kind is dcqcn, ecn or pfc");
		return api_reply_problem(req, 400, &e);
	}
	if (f.state) {
		bool ok = false;

		for (int i = 0; states[i]; i++)
			ok |= !strcmp(states[i], f.state);
		if (!ok) {
			rf_err_set(&e, -EINVAL, "BAD_QUERY", "state",
				   "state is pending, sent, applied, failed or timed_out");
			return api_reply_problem(req, 400, &e);
		}
	}
	if (batch && ((f.batch = strtoll(batch, &end, 10)) <= 0 || *end)) {
		rf_err_set(&e, -EINVAL, "BAD_QUERY", "batch", "batch is a change id");
		return api_reply_problem(req, 400, &e);
	}
	if (limit) {
		long l = strtol(limit, &end, 10);

		if (*end || l < 1 || l > MAX_TARGETS) {
			rf_err_set(&e, -EINVAL, "BAD_QUERY", "limit", "limit is 1 to %d", MAX_TARGETS);
			return api_reply_problem(req, 400, &e);
		}
		f.limit = (unsigned)l;
	}
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = changes_list(rd, &f, &doc, &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

int h_change(struct api_req *req)
{
	struct store_reader *rd;
	struct rf_err e = { 0 };
	json_t *doc = NULL;
	char *end;
	long long id = strtoll(req->match.params[0], &end, 10);
	int r;

	if (*end || id <= 0) {
		rf_err_set(&e, -ENOENT, "UNKNOWN_CHANGE", NULL, "no change '%s'", req->match.params[0]);
		return api_reply_problem(req, 404, &e);
	}
	if ((r = api_reader(req, &rd)))
		return r < 0 ? r : 0;
	r = changes_get(rd, id, &doc, &e);
	return api_finish(req, rd, r, doc, &e, 200);
}

/* POST /api/v1/changes: {"kind", "select": {...}, "params": {...}, "reason"} */
int h_changes_bulk(struct api_req *req)
{
	static const char *const keys[] = { "kind", "select", "params", "reason", NULL };
	static const char sql[] = "SELECT c.agent_id, a.role, c.device, c.port, c.queue, c.value "
				  "FROM configs c JOIN agents a ON a.id = c.agent_id "
				  "WHERE c.kind = ? ORDER BY c.agent_id, c.device, c.port, c.queue";
	json_t *doc = NULL, *sel, *params, *errors = NULL;
	const char *kind_s, *role = NULL, *g_node = NULL, *g_port = NULL, *g_dev = NULL;
	struct store_reader *rd = NULL;
	struct target *t = NULL;
	struct rf_err e = { 0 };
	enum change_kind kind;
	json_int_t queue = -2;
	json_error_t je;
	sqlite3_stmt *st;
	size_t n = 0, cap = 0, nbad = 0;
	char *reason = NULL;
	int r, rc;

	doc = json_loadb(req->body.data ? req->body.data : "", req->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		rf_err_set(&e, -EINVAL, "BAD_JSON", NULL, "the body is not JSON: line %d: %s", je.line, je.text);
		return api_reply_problem(req, 400, &e);
	}
	r = -EINVAL;
	if (!json_is_object(doc)) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/", "send {\"kind\", \"select\", \"params\", \"reason\"}");
		goto out;
	}
	{
		const char *k;
		json_t *v;

		json_object_foreach(doc, k, v) {
			bool ok = false;

			for (int i = 0; keys[i]; i++)
				ok |= !strcmp(k, keys[i]);
			if (!ok) {
				rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/", "unknown member '%s' (kind, select, params, reason)", k);
				goto out;
			}
		}
	}
	kind_s = json_string_value(json_object_get(doc, "kind"));
	sel = json_object_get(doc, "select");
	params = json_object_get(doc, "params");
	if (change_kind_parse(kind_s, &kind) < 0) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/kind", "kind is dcqcn, ecn or pfc");
		goto out;
	}
	if (!json_is_object(sel) || !json_is_object(params)) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", !json_is_object(sel) ? "/select" : "/params",
			   "select and params are objects");
		goto out;
	}
	if (json_object_get(doc, "reason") && (!json_is_string(json_object_get(doc, "reason")) ||
					       strlen(json_string_value(json_object_get(doc, "reason"))) > MAX_REASON)) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/reason", "a string of at most %d characters", MAX_REASON);
		goto out;
	}
	reason = json_object_get(doc, "reason") ? strdup(json_string_value(json_object_get(doc, "reason"))) : NULL;
	{
		const char *k;
		json_t *v;

		json_object_foreach(sel, k, v) {
			if (!strcmp(k, "queue") && kind == CHANGE_ECN && json_is_integer(v)) {
				queue = json_integer_value(v);
				continue;
			}
			if (!json_is_string(v) ||
			    (strcmp(k, "switch") && strcmp(k, "host") && strcmp(k, "port") && strcmp(k, "device"))) {
				rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/select",
					   "select has switch or host, port, device (glob patterns) and, for ecn, queue");
				goto out;
			}
			if (!strcmp(k, "switch") || !strcmp(k, "host")) {
				if (role) {
					rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/select", "select switches or hosts, not both");
					goto out;
				}
				role = k;
				g_node = json_string_value(v);
			} else if (!strcmp(k, "port")) {
				g_port = json_string_value(v);
			} else {
				g_dev = json_string_value(v);
			}
		}
	}
	if (!role)
		role = kind == CHANGE_DCQCN ? "host" : "switch";
	if ((kind == CHANGE_DCQCN && strcmp(role, "host")) || (kind == CHANGE_ECN && strcmp(role, "switch"))) {
		rf_err_set(&e, -EINVAL, "SCHEMA_VIOLATION", "/select",
			   "%s is set on %s", change_kind_name(kind), kind == CHANGE_DCQCN ? "hosts" : "switches");
		goto out;
	}
	if ((r = api_reader(req, &rd))) {
		json_decref(doc);
		free(reason);
		return r < 0 ? r : 0;
	}
	if (!(st = store_reader_stmt(rd, sql))) {
		r = -ENOMEM;
		goto out;
	}
	sqlite3_bind_text(st, 1, change_kind_name(kind), -1, SQLITE_STATIC);
	errors = json_array();
	r = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *agent = (const char *)sqlite3_column_text(st, 0);
		const char *arole = (const char *)sqlite3_column_text(st, 1);
		const char *dev = (const char *)sqlite3_column_text(st, 2);
		const char *port = (const char *)sqlite3_column_text(st, 3);
		const char *label = port;
		char hostport[140];

		if (strcmp(arole, role) || (g_node && fnmatch(g_node, agent, 0)) ||
		    (g_dev && fnmatch(g_dev, dev, 0)) || (queue != -2 && sqlite3_column_int64(st, 4) != queue))
			continue;
		if (!strcmp(arole, "host")) {
			snprintf(hostport, sizeof(hostport), "%s:%s", dev, port);
			label = hostport;
		}
		if (g_port && fnmatch(g_port, label, 0) && fnmatch(g_port, port, 0))
			continue;
		if (n == MAX_TARGETS) {
			rf_err_set(&e, -E2BIG, "TOO_MANY_TARGETS", "/select", "the selection matches more than %d objects", MAX_TARGETS);
			r = -E2BIG;
			break;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct target *nt = realloc(t, nc * sizeof(*nt));

			if (!nt) {
				r = -ENOMEM;
				break;
			}
			t = nt;
			cap = nc;
		}
		memset(&t[n], 0, sizeof(t[n]));
		n++;
		{
			const char *vtext = (const char *)sqlite3_column_text(st, 5);
			json_t *entry = json_pack("{s:s,s:s,s:o}", "device", dev, "port", port, "values",
						  json_loads(vtext ? vtext : "{}", 0, NULL) ?: json_object());

			if (kind == CHANGE_ECN)
				json_object_set_new(entry, "queue", json_integer(sqlite3_column_int64(st, 4)));
			/* target_fill queries other tables: keep this statement's row values first */
			{
				char a_copy[65];

				snprintf(a_copy, sizeof(a_copy), "%s", agent);
				r = target_fill(rd, kind, a_copy, role, entry, &t[n - 1], &e);
			}
			json_decref(entry);
			if (r < 0)
				break;
		}
		{
			json_t *p = json_deep_copy(params);
			struct rf_err ve = { 0 };

			if (validate_target(kind, role, p, &t[n - 1], &ve) < 0) {
				if (nbad++ < 20) {
					json_t *tj = json_pack("{s:s,s:s,s:s}", "agent", t[n - 1].agent, "device",
							       t[n - 1].device, "port", t[n - 1].port);

					if (t[n - 1].queue >= 0)
						json_object_set_new(tj, "queue", json_integer(t[n - 1].queue));
					json_array_append_new(errors, json_pack("{s:o,s:s,s:s,s:s}", "target", tj,
										"code", ve.code, "detail", ve.msg,
										"pointer", ve.where));
				}
				if (nbad == 1)
					e = ve;
			}
			json_decref(p);
		}
	}
	sqlite3_reset(st);
	if (r < 0)
		goto out;
	if (!n) {
		rf_err_set(&e, -ENOENT, "NO_TARGETS", "/select", "the selection matches no %s with %s settings reported",
			   role, change_kind_name(kind));
		r = -ENOENT;
		goto out;
	}
	if (nbad) {
		/* all or nothing: one bad target rejects the whole request */
		struct rf_err first = e;

		rf_err_set(&e, -EINVAL, first.code, first.where,
			   "%zu of %zu targets reject the change; nothing was changed. First: %s", nbad, n,
			   first.msg);
		store_reader_put(api_deps(req)->store, rd);
		json_decref(doc);
		targets_free(t, n);
		free(reason);
		return api_reply_problem_ext(req, 400, &e,
					     json_pack("{s:I,s:o}", "rejected_targets", (json_int_t)nbad,
						       "errors", errors));
	}
	store_reader_put(api_deps(req)->store, rd);
	rd = NULL;
	{
		json_t *p = json_deep_copy(params);

		/* normalize once (sizes to bytes) with the first target */
		validate_target(kind, role, p, &t[0], NULL);
		r = create_and_reply(req, kind, p, t, n, reason);
		json_decref(p);
	}
	json_decref(doc);
	json_decref(errors);
	targets_free(t, n);
	free(reason);
	return r;
out:
	json_decref(doc);
	json_decref(errors);
	targets_free(t, n);
	free(reason);
	return api_finish(req, rd, r, NULL, &e, 200);
}
