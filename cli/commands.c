/* rocefabctl's commands: see commands.h. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "lib/httpc.h"
#include "lib/strutil.h"

/* --- building the request's path ------------------------------------------------------------ */

/* Appends to the path; -ENAMETOOLONG when the result would not fit. */
static int path_add(struct cli_request *r, struct rf_err *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int path_add(struct cli_request *r, struct rf_err *e, const char *fmt, ...)
{
	size_t n = strlen(r->path);
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(r->path + n, sizeof(r->path) - n, fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof(r->path) - n)
		return rf_err_set(e, -ENAMETOOLONG, NULL, NULL,
				  "the arguments make a request longer than %zu bytes",
				  sizeof(r->path) - 1);
	return 0;
}

/* s URL-encoded (a path segment or a query value). */
static int path_add_escaped(struct cli_request *r, struct rf_err *e, const char *s)
{
	/* room for every byte encoded; when httpc_escape() must cut s short, what it leaves is
	 * still longer than the path can hold, so path_add() fails rather than send a cut value */
	char enc[3 * sizeof(r->path)];

	httpc_escape(s, enc, sizeof(enc));
	return path_add(r, e, "%s", enc);
}

/* "?key=value" or "&key=value"; nothing when value is NULL. */
static int query_add(struct cli_request *r, struct rf_err *e, const char *key, const char *value)
{
	if (!value)
		return 0;
	return path_add(r, e, "%c%s=", strchr(r->path, '?') ? '&' : '?', key)
		       ?: path_add_escaped(r, e, value);
}

/* "?key=v1,v2,..." of the n values; nothing when there are none. */
static int query_add_list(struct cli_request *r, struct rf_err *e, const char *key,
			  char *const *values, int n)
{
	int x = n > 0 ? query_add(r, e, key, values[0]) : 0;

	for (int i = 1; i < n && !x; i++)
		x = path_add(r, e, ",") ?: path_add_escaped(r, e, values[i]);
	return x;
}

/* --- the commands' requests ----------------------------------------------------------------- */

/* An id the command takes (a change's, an alert's, a proposal's): a number, checked here so that
 * "changes abc" is a usage error (exit 2), as the server would only say its path is wrong. */
static int id_arg(const char *what, const char *s, struct rf_err *e)
{
	uint64_t v;

	if (str_parse_uint(s, INT64_MAX, &v) < 0 || v == 0)
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "%s: the id is a number from 1 up, not '%s'", what, s);
	return 0;
}

/* The command's resource, or the one its argument names in it ("hosts X": /api/v1/hosts/X). */
static int build_get(const struct cli_cmd *c, char *const *args, int nargs,
		     const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	int x = path_add(r, e, "%s", c->path);

	(void)o;
	if (x || !nargs)
		return x;
	return path_add(r, e, "/") ?: path_add_escaped(r, e, args[0]);
}

static int build_ports(const struct cli_cmd *c, char *const *args, int nargs,
		       const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	return build_get(c, args, nargs, o, r, e) ?: query_add(r, e, "host", o->host) ?:
		       query_add(r, e, "device", o->device) ?: query_add(r, e, "state", o->state);
}

/* qps HOST */
static int build_qps(const struct cli_cmd *c, char *const *args, int nargs, const struct cli_opts *o,
		     struct cli_request *r, struct rf_err *e)
{
	(void)c;
	(void)nargs;
	(void)o;
	return path_add(r, e, "/api/v1/hosts/") ?: path_add_escaped(r, e, args[0]) ?: path_add(r, e, "/qps");
}

/* counters PORT [NAME...] */
static int build_counters(const struct cli_cmd *c, char *const *args, int nargs,
			  const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	(void)c;
	return path_add(r, e, "/api/v1/ports/") ?: path_add_escaped(r, e, args[0]) ?:
		       path_add(r, e, "/counters") ?:
		       query_add_list(r, e, "names", args + 1, nargs - 1) ?:
		       query_add(r, e, "from", o->from) ?: query_add(r, e, "to", o->to) ?:
		       query_add(r, e, "step", o->step) ?: query_add(r, e, "priority", o->priority);
}

static int build_probes(const struct cli_cmd *c, char *const *args, int nargs,
			const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	return build_get(c, args, nargs, o, r, e) ?: query_add(r, e, "window", o->window) ?:
		       query_add(r, e, "op", o->op) ?: query_add(r, e, "size", o->size);
}

/* alerts [ALERT] [--state S] */
static int build_alerts(const struct cli_cmd *c, char *const *args, int nargs,
			const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	if (nargs && o->state)
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "alerts ALERT: --state is for the list, not one alert");
	if (nargs)
		return id_arg("alerts ALERT", args[0], e) ?: build_get(c, args, nargs, o, r, e);
	return build_get(c, args, nargs, o, r, e) ?: query_add(r, e, "state", o->state);
}

/* "reason": --reason in the request's body (made when there is none), when given */
static int reason_body(const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	json_t *s;

	if (!o->reason)
		return 0;
	if (!(s = json_string(o->reason)))
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "--reason is not text (UTF-8)");
	if ((!r->body && !(r->body = json_object())) || json_object_set_new(r->body, "reason", s) < 0)
		return -ENOMEM;
	return 0;
}

/* ack ID, mitigate ID [--reason TEXT]: POST /api/v1/alerts/ID/ack|mitigate */
static int build_alert_action(const struct cli_cmd *c, char *const *args, int nargs,
			      const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	(void)nargs;
	r->method = "POST";
	return id_arg(c->name, args[0], e) ?: path_add(r, e, "/api/v1/alerts/") ?: path_add_escaped(r, e, args[0]) ?:
		       path_add(r, e, "/%s", c->name) ?: reason_body(o, r, e);
}

/* settle ID applied|not-applied --reason TEXT: POST /api/v1/changes/ID/settle */
static int build_settle(const struct cli_cmd *c, char *const *args, int nargs, const struct cli_opts *o,
			struct cli_request *r, struct rf_err *e)
{
	bool applied = !strcmp(args[1], "applied");

	int x;

	(void)c;
	(void)nargs;
	if ((x = id_arg("settle", args[0], e)) < 0)
		return x;
	if (!applied && strcmp(args[1], "not-applied"))
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "settle %s: say applied or not-applied, not '%s'", args[0],
				  args[1]);
	if (!o->reason || !o->reason[strspn(o->reason, " ")])
		return rf_err_set(e, -EINVAL, "USAGE", NULL,
				  "settle needs --reason TEXT: what was checked on the device, and by whom");
	r->method = "POST";
	if (!(r->body = json_pack("{s:b}", "applied", applied)))
		return -ENOMEM;
	return path_add(r, e, "/api/v1/changes/") ?: path_add_escaped(r, e, args[0]) ?: path_add(r, e, "/settle") ?:
		       reason_body(o, r, e);
}

/* forget AGENT */
static int build_forget(const struct cli_cmd *c, char *const *args, int nargs, const struct cli_opts *o,
			struct cli_request *r, struct rf_err *e)
{
	(void)c;
	(void)nargs;
	(void)o;
	r->method = "DELETE";
	return path_add(r, e, "/api/v1/agents/") ?: path_add_escaped(r, e, args[0]);
}

static int parse_assign(const char *a, json_t *params, bool json_ok, struct rf_err *e);

/* 0, or the refusal of --all with a subcommand of cc other than proposals, and of --reason with
 * one that reads */
static int cc_no_all(const struct cli_opts *o, const char *sub, struct rf_err *e)
{
	if (o->reason && (!strcmp(sub, "status") || !strcmp(sub, "proposals") || !strcmp(sub, "history")))
		return rf_err_set(e, -EINVAL, "USAGE", NULL,
				  "cc %s: --reason is for cc apply, reject, rollback and policy NAME=VALUE", sub);
	return o->all ? rf_err_set(e, -EINVAL, "USAGE", NULL, "cc %s: --all is for cc proposals", sub) : 0;
}

/* A setting's document (the path added): read with no NAME=VALUE (--reason refused), else PUT
 * with the values and --reason as the body's reason (which is no field); what names the command
 * in errors (cc policy, detector config). */
static int settings_put(const struct cli_opts *o, char *const *assigns, int n, const char *what,
			struct cli_request *r, struct rf_err *e)
{
	int x;

	if (!n)
		return o->reason ? rf_err_set(e, -EINVAL, "USAGE", NULL, "%s: --reason goes with NAME=VALUE (a change)",
					      what)
				 : 0;
	if (!(r->body = json_object()))
		return -ENOMEM;
	r->method = "PUT";
	for (int i = 0; i < n; i++)
		if ((x = parse_assign(assigns[i], r->body, true, e)) < 0)
			return x;
	if (json_object_get(r->body, "reason"))
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "%s: reason is not a field (--reason TEXT)", what);
	return reason_body(o, r, e);
}

/* detector [config [NAME=VALUE...]] */
static int build_detector(const struct cli_cmd *c, char *const *args, int nargs, const struct cli_opts *o,
			  struct cli_request *r, struct rf_err *e)
{
	(void)c;
	if (!nargs)
		return o->reason ? rf_err_set(e, -EINVAL, "USAGE", NULL,
					      "detector: --reason goes with detector config NAME=VALUE (a change)")
				 : path_add(r, e, "/api/v1/detector");
	if (strcmp(args[0], "config"))
		return rf_err_set(e, -EINVAL, NULL, NULL, "detector takes nothing or config [NAME=VALUE...]");
	return path_add(r, e, "/api/v1/detector/config") ?:
		       settings_put(o, args + 1, nargs - 1, "detector config", r, e);
}

/* cc [status | proposals [--all] | history | policy [NAME=VALUE...] | apply ID | reject ID |
 * rollback] */
static int build_cc(const struct cli_cmd *c, char *const *args, int nargs, const struct cli_opts *o,
		    struct cli_request *r, struct rf_err *e)
{
	const char *sub = nargs ? args[0] : "status";
	int x;

	(void)c;
	if (!strcmp(sub, "status") && nargs <= 1)
		return cc_no_all(o, sub, e) ?: path_add(r, e, "/api/v1/cc");
	if (!strcmp(sub, "proposals") && nargs <= 1)
		return (o->reason ? cc_no_all(o, sub, e) : 0) ?: path_add(r, e, "/api/v1/cc/proposals") ?:
			       query_add(r, e, "all", o->all ? "true" : NULL);
	if (!strcmp(sub, "history") && nargs <= 1)
		return cc_no_all(o, sub, e) ?: path_add(r, e, "/api/v1/cc/history");
	if (!strcmp(sub, "rollback") && nargs <= 1) {
		r->method = "POST";
		return cc_no_all(o, sub, e) ?: path_add(r, e, "/api/v1/cc/rollback") ?: reason_body(o, r, e);
	}
	if ((!strcmp(sub, "apply") || !strcmp(sub, "reject")) && nargs == 2) {
		r->method = "POST";
		return cc_no_all(o, sub, e) ?: id_arg(!strcmp(sub, "apply") ? "cc apply" : "cc reject", args[1], e) ?:
			       path_add(r, e, "/api/v1/cc/proposals/") ?: path_add_escaped(r, e, args[1]) ?:
			       path_add(r, e, "/%s", sub) ?: reason_body(o, r, e);
	}
	if (!strcmp(sub, "policy")) {
		if ((x = cc_no_all(o, sub, e) ?: path_add(r, e, "/api/v1/cc/policy") ?:
			     settings_put(o, args + 1, nargs - 1, "cc policy", r, e)) < 0)
			return x;
		r->then_outside = r->body != NULL;
		return 0;
	}
	return rf_err_set(e, -EINVAL, NULL, NULL,
			  "cc takes status, proposals [--all], history, policy [NAME=VALUE...], apply ID, reject ID or "
			  "rollback");
}

/* changes [ID]: the filters apply to the list only */
static int build_changes(const struct cli_cmd *c, char *const *args, int nargs,
			 const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	if (nargs && (o->state || o->agent || o->limit || o->batch))
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "changes ID: --%s is for the list, not one change",
				  o->state ? "state" : o->agent ? "agent" : o->limit ? "limit" : "batch");
	if (nargs)
		return id_arg("changes ID", args[0], e) ?: build_get(c, args, nargs, o, r, e);
	/* (a batch: the changes one request or one proposal of the tuner made, its change_batch) */
	if (o->batch && id_arg("--batch", o->batch, e))
		return -EINVAL;
	return build_get(c, args, nargs, o, r, e) ?: query_add(r, e, "state", o->state) ?:
		       query_add(r, e, "agent", o->agent) ?: query_add(r, e, "batch", o->batch) ?:
		       query_add(r, e, "limit", o->limit);
}

/* settings-log [SETTING] [--limit N] */
static int build_settings_log(const struct cli_cmd *c, char *const *args, int nargs,
			      const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	(void)c;
	return path_add(r, e, "/api/v1/settings/log") ?: query_add(r, e, "setting", nargs ? args[0] : NULL) ?:
		       query_add(r, e, "limit", o->limit);
}

/* NAME=VALUE: integers, numbers, true/false (on/off), with json_ok (cc policy) JSON arrays and
 * objects ('[...]', '{...}') and no booleans; anything else stays a string (sizes: "400KB").
 * An integer is decimal with an optional '-' (alpha_shift=-3), or hex (enable=0x18, a bit
 * mask).  A leading zero (enable=010 once went out as octal 8: priority 3, not 1 and 3) and a
 * '+' are refused rather than guessed. */
static int parse_assign(const char *a, json_t *params, bool json_ok, struct rf_err *e)
{
	const char *eq = strchr(a, '=');
	char name[96], *end;
	const char *v, *digits;
	bool neg, hex;
	uint64_t u;
	double d;

	if (!eq || eq == a || (size_t)(eq - a) >= sizeof(name))
		return rf_err_set(e, -EINVAL, NULL, NULL, "'%s' is not NAME=VALUE", a);
	memcpy(name, a, (size_t)(eq - a));
	name[eq - a] = '\0';
	if (json_object_get(params, name)) /* the last would win without a word */
		return rf_err_set(e, -EINVAL, NULL, NULL, "'%s' is given twice", name);
	v = eq + 1;
	if (json_ok && (*v == '[' || *v == '{')) { /* a JSON array or object (host_classes='[{...}]') */
		json_error_t je;
		json_t *j = json_loads(v, JSON_REJECT_DUPLICATES, &je);

		if (!j)
			return rf_err_set(e, -EINVAL, NULL, NULL, "'%s': the value is not JSON: %s (column %d)", name,
					  je.text, je.column);
		json_object_set_new(params, name, j);
		return 0;
	}
	neg = *v == '-';
	digits = v + neg;
	hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
	if (*v == '+' || (digits[0] == '0' && isdigit((unsigned char)digits[1])))
		return rf_err_set(e, -EINVAL, NULL, NULL,
				  "'%s': write the number in decimal without a '+' or a leading zero, or in "
				  "hex as 0x...", a);
	if ((hex && digits[2] && strspn(digits + 2, "0123456789abcdefABCDEF") == strlen(digits + 2)) ||
	    (!hex && *digits && strspn(digits, "0123456789") == strlen(digits))) {
		errno = 0;
		u = hex ? strtoull(digits + 2, &end, 16) : strtoull(digits, &end, 10);
		if (errno || u > (uint64_t)INT64_MAX + neg)
			return rf_err_set(e, -ERANGE, NULL, NULL, "'%s': the number is too large", a);
		json_object_set_new(params, name, json_integer(neg ? (json_int_t)(0 - u) : (json_int_t)u));
		return 0;
	}
	if (isdigit((unsigned char)*digits) || (digits[0] == '.' && isdigit((unsigned char)digits[1]))) {
		errno = 0;
		d = strtod(v, &end);
		if (!*end && !errno && isfinite(d)) {
			json_object_set_new(params, name, json_real(d));
			return 0;
		}
	}
	/* the tuner's policy has no boolean field, and "off" there is a mode (cc policy mode=off,
	 * the tuner's stop): a word stays a word */
	if (!json_ok && (!strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "false") || !strcmp(v, "off"))) {
		json_object_set_new(params, name,
				    json_boolean(!strcmp(v, "true") || !strcmp(v, "on")));
		return 0;
	}
	json_object_set_new(params, name, json_string(v));
	return 0;
}

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* The object of set: its kind (dcqcn, ecn, pfc), a node, and the port and queue it takes. */
struct set_target {
	const char *what, *node, *port, *queue;
};

/* POST /api/v1/changes {"kind", "select", "params"}: every object the patterns match. */
static int set_many(const struct set_target *s, json_t *params, const struct cli_opts *o,
		    struct cli_request *r, struct rf_err *e)
{
	bool on_host = !strcmp(s->what, "dcqcn") || (s->port && strchr(s->port, ':'));
	json_t *sel = json_object();

	if (!sel)
		return -ENOMEM;
	json_object_set_new(sel, on_host ? "host" : "switch", json_string(s->node));
	if (s->port)
		json_object_set_new(sel, "port", json_string(s->port));
	if (s->queue) {
		uint64_t q;

		if (str_parse_uint(s->queue, 7, &q) < 0) {
			json_decref(sel);
			return rf_err_set(e, -EINVAL, NULL, NULL,
					  "set ecn: QUEUE is a number from 0 to 7, not '%s'", s->queue);
		}
		json_object_set_new(sel, "queue", json_integer(q));
	}
	if (o->device)
		json_object_set_new(sel, "device", json_string(o->device));
	if (!s->port && o->port) /* dcqcn: the one port of the usage's --port */
		json_object_set_new(sel, "port", json_string(o->port));
	r->body = json_pack("{s:s,s:o,s:O}", "kind", s->what, "select", sel, "params", params);
	if (r->body && o->max_targets) {
		uint64_t max;

		if (str_parse_uint(o->max_targets, INT64_MAX, &max) < 0 || !max) {
			json_decref(r->body);
			r->body = NULL;
			return rf_err_set(e, -EINVAL, NULL, NULL, "--max-targets is a number from 1 up, not '%s'",
					  o->max_targets);
		}
		json_object_set_new(r->body, "max_targets", json_integer((json_int_t)max));
	}
	r->method = "POST";
	return r->body ? path_add(r, e, "/api/v1/changes") : -ENOMEM;
}

/* PUT the object's own resource with params as the body. */
static int set_one(const struct set_target *s, json_t *params, const struct cli_opts *o,
		   struct cli_request *r, struct rf_err *e)
{
	int x;

	if (!strcmp(s->what, "dcqcn")) {
		if (o->device)
			json_object_set_new(params, "device", json_string(o->device));
		if (o->port)
			json_object_set_new(params, "port", json_string(o->port));
		x = path_add(r, e, "/api/v1/hosts/") ?: path_add_escaped(r, e, s->node) ?:
			    path_add(r, e, "/dcqcn");
	} else if (!strcmp(s->what, "ecn")) {
		x = path_add(r, e, "/api/v1/switches/") ?: path_add_escaped(r, e, s->node) ?:
			    path_add(r, e, "/ports/") ?: path_add_escaped(r, e, s->port) ?:
			    path_add(r, e, "/queues/") ?: path_add_escaped(r, e, s->queue) ?:
			    path_add(r, e, "/ecn");
	} else { /* pfc of a switch port, or of a host's DEVICE:PORT */
		x = path_add(r, e, "/api/v1/%s/", strchr(s->port, ':') ? "hosts" : "switches") ?:
			    path_add_escaped(r, e, s->node) ?: path_add(r, e, "/ports/") ?:
			    path_add_escaped(r, e, s->port) ?: path_add(r, e, "/pfc");
	}
	r->body = json_incref(params);
	r->method = "PUT";
	return x;
}

/* set dcqcn HOST NAME=VALUE..., set ecn SWITCH PORT QUEUE NAME=VALUE...,
 * set pfc SWITCH|HOST PORT NAME=VALUE...; a pattern as HOST, SWITCH or PORT changes many. */
static int build_set(const struct cli_cmd *c, char *const *args, int nargs,
		     const struct cli_opts *o, struct cli_request *r, struct rf_err *e)
{
	struct set_target s = { .what = args[0], .node = args[1] };
	bool dcqcn = !strcmp(s.what, "dcqcn"), ecn = !strcmp(s.what, "ecn");
	json_t *params;
	int i = 2, x;

	(void)c;
	if (!dcqcn && !ecn && strcmp(s.what, "pfc"))
		return rf_err_set(e, -EINVAL, NULL, NULL, "set dcqcn, set ecn or set pfc");
	if (!dcqcn && i < nargs)
		s.port = args[i++];
	if (ecn && i < nargs)
		s.queue = args[i++];
	if ((!dcqcn && !s.port) || (ecn && !s.queue))
		return rf_err_set(e, -EINVAL, NULL, NULL, "set %s needs %s", s.what,
				  ecn ? "SWITCH PORT QUEUE" : "NODE PORT");
	/* NAME=VALUE where the PORT or QUEUE goes: one was left out */
	if ((!dcqcn && strchr(s.port, '=')) || (ecn && strchr(s.queue, '=')))
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "set %s needs %s before NAME=VALUE, not '%s'%s", s.what,
				  ecn ? "SWITCH PORT QUEUE" : "NODE PORT", strchr(s.port, '=') ? s.port : s.queue,
				  ecn ? "" : " (a host's PORT is DEVICE:PORT, e.g. nic0:1)");
	if (!dcqcn && o->port) /* its PORT is an argument */
		return rf_err_set(e, -EINVAL, "USAGE", NULL,
				  "set %s: --port is for set dcqcn (PORT is an argument here)", s.what);
	if (!dcqcn && o->device && !is_glob(s.node) && !is_glob(s.port)) /* a pattern's selection only */
		return rf_err_set(e, -EINVAL, "USAGE", NULL,
				  "set %s: --device narrows a pattern (of SWITCH or PORT); one port is named whole",
				  s.what);
	if (!(params = json_object()))
		return -ENOMEM;
	for (; i < nargs; i++) {
		if ((x = parse_assign(args[i], params, false, e)) < 0) {
			json_decref(params);
			return x;
		}
	}
	if (!json_object_size(params)) {
		json_decref(params);
		return rf_err_set(e, -EINVAL, NULL, NULL,
				  "name at least one NAME=VALUE to change (rocefabctl params)");
	}
	/* the body's reason member: it would be taken as the reason of a change of one object */
	if (json_object_get(params, "reason")) {
		json_decref(params);
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "set %s: reason is not a setting (--reason TEXT)", s.what);
	}
	if (is_glob(s.node) || (s.port && is_glob(s.port))) {
		x = set_many(&s, params, o, r, e);
	} else if (o->max_targets) {
		json_decref(params);
		return rf_err_set(e, -EINVAL, NULL, NULL,
				  "--max-targets is for a pattern (a change of many objects)");
	} else {
		x = set_one(&s, params, o, r, e);
	}
	json_decref(params);
	if (x == 0)
		x = reason_body(o, r, e);
	return x;
}

/* --- the table ------------------------------------------------------------------------------ */

static const char set_synopsis[] =
	"set dcqcn HOST NAME=VALUE... [--device D --port P]\n"
	"set ecn SWITCH PORT QUEUE NAME=VALUE...   (kmin_bytes, kmax_bytes, pmax, enabled)\n"
	"set pfc SWITCH PORT NAME=VALUE...         (enable, xoff_bytes, xon_bytes, alpha_shift)\n"
	"set pfc HOST DEVICE:PORT enable=MASK";

static const struct cli_cmd cmds[] = {
	{ .name = "health",
	  .synopsis = "health",
	  .help = "daemon and store health",
	  .path = "/api/v1/health",
	  .build = build_get,
	  .print = print_health },
	{ .name = "version",
	  .synopsis = "version",
	  .help = "versions of rocefabd and its contracts",
	  .path = "/api/v1/version",
	  .build = build_get,
	  .print = print_version },
	{ .name = "agents",
	  .synopsis = "agents [AGENT]",
	  .help = "agents, their liveness, spools and errors, or one agent\n"
		  "with the errors of its last report",
	  .max_args = 1,
	  .path = "/api/v1/agents",
	  .build = build_get,
	  .print = print_agents,
	  .print_one = print_agent },
	{ .name = "hosts",
	  .synopsis = "hosts [HOST]",
	  .help = "hosts, or one host with its devices and ports",
	  .max_args = 1,
	  .path = "/api/v1/hosts",
	  .build = build_get,
	  .print = print_hosts,
	  .print_one = print_host },
	{ .name = "ports",
	  .synopsis = "ports [--host H] [--device D] [--state up|down|init|unknown]",
	  .path = "/api/v1/ports",
	  .build = build_ports,
	  .print = print_ports,
	  .opts = CLI_OPT_HOST | CLI_OPT_DEVICE | CLI_OPT_STATE },
	{ .name = "qps",
	  .synopsis = "qps HOST",
	  .help = "a host's QPs (RDMA netlink): totals by type and state,\n"
		  "owning processes, QPs in error, per-QP counters",
	  .min_args = 1,
	  .max_args = 1,
	  .build = build_qps,
	  .print = print_qps },
	{ .name = "counters",
	  .synopsis = "counters PORT [NAME...] [--priority P] [--from T] [--to T] [--step DUR]",
	  .help = "latest delta and rate of a port's counters (PORT is\n"
		  "HOST:DEVICE:PORT; times: RFC 3339, Unix seconds, -5m)",
	  .min_args = 1,
	  .max_args = -1,
	  .build = build_counters,
	  .print = print_counters,
	  .opts = CLI_OPT_PRIORITY | CLI_OPT_FROM | CLI_OPT_TO | CLI_OPT_STEP },
	{ .name = "registry",
	  .synopsis = "registry",
	  .help = "the counters rocefab knows",
	  .path = "/api/v1/counters",
	  .build = build_get,
	  .print = print_registry },
	{ .name = "switches",
	  .synopsis = "switches [SWITCH]",
	  .help = "switches, or one switch with its ports, neighbours,\n"
		  "PFC and ECN settings",
	  .max_args = 1,
	  .path = "/api/v1/switches",
	  .build = build_get,
	  .print = print_switches,
	  .print_one = print_switch },
	{ .name = "links",
	  .synopsis = "links",
	  .help = "links between ports, from the ports' neighbours",
	  .path = "/api/v1/links",
	  .build = build_get,
	  .print = print_links },
	{ .name = "topology",
	  .synopsis = "topology",
	  .help = "nodes and the links between them",
	  .path = "/api/v1/topology",
	  .build = build_get,
	  .print = print_topology },
	{ .name = "params",
	  .synopsis = "params",
	  .help = "the settings that can be changed, units and ranges",
	  .path = "/api/v1/params",
	  .build = build_get,
	  .print = print_params },
	{ .name = "set",
	  .synopsis = set_synopsis,
	  .help = "change settings (role operator); HOST, SWITCH and PORT\n"
		  "may be glob patterns ('leaf*') to change many at once\n"
		  "(up to --max-targets N; --device D narrows them);\n"
		  "sizes take units (400KB); --reason TEXT goes to the\n"
		  "audit log; --wait[=S] waits for the outcome (30 s);\n"
		  "a change valid only after others on their way waits\n"
		  "for them (pending (after ...))",
	  .min_args = 2,
	  .max_args = -1,
	  .build = build_set,
	  .print = print_changes,
	  .flags = CLI_FOLLOW_BATCH,
	  .opts = CLI_OPT_DEVICE | CLI_OPT_PORT | CLI_OPT_REASON | CLI_OPT_WAIT | CLI_OPT_MAX_TARGETS },
	{ .name = "probes",
	  .synopsis = "probes [--window DUR] [--op OP] [--size BYTES]",
	  .help = "pingmesh: what the latency matrix points at, and its\n"
		  "worst pairs (of the configuration's first op and size\n"
		  "unless named)",
	  .path = "/api/v1/probes/matrix",
	  .build = build_probes,
	  .print = print_probes,
	  .flags = CLI_WITH_ALERTS,
	  .opts = CLI_OPT_WINDOW | CLI_OPT_OP | CLI_OPT_SIZE },
	{ .name = "alerts",
	  .synopsis = "alerts [ALERT] [--state active|cleared]",
	  .help = "faults named by the pingmesh localization (host, link,\n"
		  "tor, fabric) and the PFC deadlock and storm detector\n"
		  "(deadlock, pause_storm, slow_receiver, persistent,\n"
		  "restore_failed), and ports that went down (port_down):\n"
		  "active and cleared, newest first, unless --state says\n"
		  "which; or one alert with its details (the storm's\n"
		  "source, the port it pauses, its victims, the action)",
	  .max_args = 1,
	  .path = "/api/v1/alerts",
	  .build = build_alerts,
	  .print = print_alerts,
	  .print_one = print_alert,
	  .opts = CLI_OPT_STATE },
	{ .name = "ack",
	  .synopsis = "ack ALERT",
	  .help = "acknowledge an alert (role operator)",
	  .min_args = 1,
	  .max_args = 1,
	  .build = build_alert_action,
	  .print = print_alert },
	{ .name = "mitigate",
	  .synopsis = "mitigate ALERT [--reason TEXT]",
	  .help = "act on a PFC detector alert in advise mode: break the\n"
		  "deadlock or isolate the storm's culprit through the\n"
		  "audited change path (role operator)",
	  .min_args = 1,
	  .max_args = 1,
	  .build = build_alert_action,
	  .print = print_mitigation,
	  .opts = CLI_OPT_REASON },
	{ .name = "detector",
	  .synopsis = "detector\n"
		      "detector config [NAME=VALUE... [--reason TEXT]]",
	  .help = "the PFC detector: modes, fast lane, findings, holds;\n"
		  "its configuration, or a change of it (role operator):\n"
		  "deadlock_mode, storm_mode (off, advise, auto),\n"
		  "restore_ms",
	  .max_args = -1,
	  .build = build_detector,
	  .print = print_detector,
	  .opts = CLI_OPT_REASON },
	{ .name = "cc",
	  .synopsis = "cc [status|proposals [--all]|history]\n"
		      "cc policy [NAME=VALUE... [--reason TEXT]]\n"
		      "cc apply|reject PROPOSAL [--reason TEXT]\n"
		      "cc rollback [--reason TEXT]",
	  .help = "the congestion-control tuner of ECN and DCQCN: its\n"
		  "state, its proposals (apply or reject them in advise\n"
		  "mode), every step's history, its policy\n"
		  "(a VALUE may be JSON, e.g.\n"
		  "host_classes='[{\"name\":\"gpu\",\"hosts\":\"gpu*\"}]'),\n"
		  "undo every step; role operator to change the policy,\n"
		  "apply, reject or roll back",
	  .max_args = -1,
	  .build = build_cc,
	  .print = print_cc,
	  .opts = CLI_OPT_ALL | CLI_OPT_REASON },
	{ .name = "changes",
	  .synopsis = "changes [ID] [--state S] [--agent A] [--batch B] [--limit N]",
	  .help = "configuration changes and their outcome (audit log),\n"
		  "newest first; --state pending, sent, applied, failed,\n"
		  "timed_out, or in_doubt: the changes to settle;\n"
		  "--batch B: one request's, or one tuner proposal's\n"
		  "(cc history's BATCH)",
	  .max_args = 1,
	  .path = "/api/v1/changes",
	  .build = build_changes,
	  .print = print_changes,
	  .opts = CLI_OPT_STATE | CLI_OPT_AGENT | CLI_OPT_BATCH | CLI_OPT_LIMIT },
	{ .name = "forget",
	  .synopsis = "forget AGENT",
	  .help = "forget an agent gone for good (a host retired): its\n"
		  "ports, their samples and rollups; it must be stale,\n"
		  "with no change to it open (role operator)",
	  .min_args = 1,
	  .max_args = 1,
	  .build = build_forget,
	  .print = print_forgotten,
	  .timeout_s = 3600 }, /* (a big switch's data goes in steps: minutes) */
	{ .name = "settle",
	  .synopsis = "settle CHANGE applied|not-applied --reason TEXT",
	  .help = "an operator's word on a change in doubt whose agent\n"
		  "cannot say (gone for good): the device holds it, or\n"
		  "not (role operator)",
	  .min_args = 2,
	  .max_args = 2,
	  .build = build_settle,
	  .print = print_changes,
	  .opts = CLI_OPT_REASON },
	{ .name = "settings-log",
	  .synopsis = "settings-log [SETTING] [--limit N]",
	  .help = "who changed the tuner's policy, the detector's or the\n"
		  "pingmesh's configuration (SETTING: cc/policy,\n"
		  "detector/config, probes/config), when, why and which\n"
		  "fields, newest first",
	  .max_args = 1,
	  .build = build_settings_log,
	  .print = print_settings_log,
	  .opts = CLI_OPT_LIMIT },
};

const struct cli_cmd *cli_cmd_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

/* --- usage ---------------------------------------------------------------------------------- */

enum {
	USAGE_HELP_COL = 31, /* where the help of a command starts */
	USAGE_WIDTH = 80,
};

/* The length of the first line of s. */
static int line_len(const char *s)
{
	return (int)strcspn(s, "\n");
}

/* The synopsis lines, then the help: on the last synopsis line when it fits there (in the help
 * column, or two spaces on), else under it; its other lines in the help column. */
static void usage_cmd(FILE *f, const struct cli_cmd *c)
{
	const char *s = c->synopsis, *h = c->help;
	int n;

	while (s[n = line_len(s)]) {
		fprintf(f, "  %.*s\n", n, s);
		s += n + 1;
	}
	if (h && 2 + n + 2 <= USAGE_HELP_COL) {
		fprintf(f, "  %-*s%.*s\n", USAGE_HELP_COL - 2, s, line_len(h), h);
		h += line_len(h);
	} else if (h && 2 + n + 2 + line_len(h) <= USAGE_WIDTH) {
		fprintf(f, "  %s  %.*s\n", s, line_len(h), h);
		h += line_len(h);
	} else {
		fprintf(f, "  %s\n", s);
	}
	if (h && *h == '\n')
		h++;
	while (h && *h) {
		n = line_len(h);
		fprintf(f, "%*s%.*s\n", USAGE_HELP_COL, "", n, h);
		h += n + (h[n] == '\n');
	}
}

static const char usage_options[] =
	"\n"
	"Options:\n"
	"  -s, --server URL       rocefabd URL (default $ROCEFAB_SERVER or http://127.0.0.1:9750)\n"
	"  -t, --token-file FILE  bearer token file (default $ROCEFAB_TOKEN_FILE; or the token\n"
	"                         itself in $ROCEFAB_TOKEN)\n"
	"      --cacert FILE      the CA that signed rocefabd's certificate (default\n"
	"                         $ROCEFAB_CACERT, $CURL_CA_BUNDLE, $SSL_CERT_FILE; else the\n"
	"                         system's)\n"
	"  -w, --watch SECONDS    run the command again every SECONDS until interrupted (a\n"
	"                         command that reads; one that changes things is refused)\n"
	"  -j, --json             print the REST JSON\n"
	"      --reason TEXT      why: for the audit log (set, mitigate, cc apply, reject,\n"
	"                         rollback; settle needs one) or the settings log (cc\n"
	"                         policy, detector config)\n"
	"      --wait[=SECONDS]   wait until every change is settled (set; default 30 s)\n"
	"      --max-targets N    let a pattern change up to N objects (set; default\n"
	"                         rocefabd's changes.max_targets, 256)\n"
	"      --all              cc proposals: the recent ones too, not only the open\n"
	"      --limit N          changes, settings-log: list up to N (default 100)\n"
	"  -V, --version          print the version and exit\n"
	"  -h, --help             this text; with a command, its usage (or: rocefabctl help\n"
	"                         COMMAND)\n"
	"-s, -t, --cacert and -j go with every command, -w with those that read; a command's\n"
	"own options are in its usage (rocefabctl --list-options COMMAND); any other is refused.\n";

int cli_usage_cmd(FILE *f, const char *name)
{
	const struct cli_cmd *c = cli_cmd_find(name);

	const char *sy, *h;
	bool first = true;
	int n;

	if (!c)
		return -ENOENT;
	for (sy = c->synopsis; *sy; sy += n + (sy[n] == '\n'), first = false) {
		n = line_len(sy);
		fprintf(f, "%s rocefabctl [OPTIONS] %.*s\n", first ? "usage:" : "      ", n, sy);
	}
	if (c->help)
		fputc('\n', f);
	for (h = c->help; h && *h; h += n + (h[n] == '\n')) {
		n = line_len(h);
		fprintf(f, "  %.*s\n", n, h);
	}
	fprintf(f, "\n(rocefabctl help lists every command and option)\n");
	return 0;
}

void cli_list_commands(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(f, "%s\n", cmds[i].name);
}

void cli_usage(FILE *f)
{
	fprintf(f, "usage: rocefabctl [OPTIONS] COMMAND [ARGS]\n"
		   "\n"
		   "Commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		usage_cmd(f, &cmds[i]);
	fputs(usage_options, f);
}

/* --- requests ------------------------------------------------------------------------------- */

/* The options of struct cli_opts, each with its CLI_OPT_* bit, in the order of the bits. */
#define OPT_STR(bit, name, field) { bit, name, required_argument, offsetof(struct cli_opts, field) }
const struct cli_opt_def cli_opt_defs[CLI_NOPT_DEFS] = {
	OPT_STR(CLI_OPT_HOST, "host", host),
	OPT_STR(CLI_OPT_DEVICE, "device", device),
	OPT_STR(CLI_OPT_STATE, "state", state),
	OPT_STR(CLI_OPT_FROM, "from", from),
	OPT_STR(CLI_OPT_TO, "to", to),
	OPT_STR(CLI_OPT_PRIORITY, "priority", priority),
	OPT_STR(CLI_OPT_STEP, "step", step),
	OPT_STR(CLI_OPT_WINDOW, "window", window),
	OPT_STR(CLI_OPT_OP, "op", op),
	OPT_STR(CLI_OPT_SIZE, "size", size),
	OPT_STR(CLI_OPT_AGENT, "agent", agent),
	OPT_STR(CLI_OPT_PORT, "port", port),
	OPT_STR(CLI_OPT_REASON, "reason", reason),
	OPT_STR(CLI_OPT_MAX_TARGETS, "max-targets", max_targets),
	{ CLI_OPT_WAIT, "wait", optional_argument, offsetof(struct cli_opts, wait_s) },
	{ CLI_OPT_ALL, "all", no_argument, offsetof(struct cli_opts, all) },
	OPT_STR(CLI_OPT_LIMIT, "limit", limit),
	OPT_STR(CLI_OPT_BATCH, "batch", batch),
};
#undef OPT_STR
_Static_assert(1u << (CLI_NOPT_DEFS - 1) == CLI_OPT_BATCH, "a CLI_OPT_* bit without its option");

int cli_opt_set(struct cli_opts *o, const struct cli_opt_def *d, const char *arg, struct rf_err *e)
{
	char *end = NULL;

	switch (d->bit) {
	case CLI_OPT_WAIT:
		o->wait_s = arg ? strtod(arg, &end) : 30;
		if ((end && (*end || end == arg)) || !(o->wait_s > 0 && o->wait_s <= 86400)) {
			o->wait_s = 0;
			return rf_err_set(e, -EINVAL, "USAGE", NULL,
					  "--wait: '%s' is not a number of seconds above 0, at most 86400", arg);
		}
		return 0;
	case CLI_OPT_ALL:
		o->all = true;
		return 0;
	default:
		*(const char **)((char *)o + d->off) = arg;
		return 0;
	}
}

/* The CLI_OPT_* bits of the options given. */
static unsigned opts_given(const struct cli_opts *o)
{
	unsigned given = 0;

	for (size_t i = 0; i < ARRAY_SIZE(cli_opt_defs); i++) {
		const struct cli_opt_def *d = &cli_opt_defs[i];
		const char *v = (const char *)o + d->off;
		bool set = d->bit == CLI_OPT_WAIT  ? *(const double *)v > 0 /* cli_opt_set takes only > 0 */
			   : d->bit == CLI_OPT_ALL ? *(const bool *)v
						   : *(const char *const *)v != NULL;

		if (set)
			given |= d->bit;
	}
	return given;
}

/* Refuses an option the command does not read (it used to be ignored). */
static int opts_check(const struct cli_cmd *c, const struct cli_opts *o, struct rf_err *e)
{
	unsigned extra = opts_given(o) & ~c->opts;

	for (size_t i = 0; extra && i < ARRAY_SIZE(cli_opt_defs); i++)
		if (extra & cli_opt_defs[i].bit)
			return rf_err_set(e, -EINVAL, "USAGE", NULL, "%s: --%s is not one of its options", c->name,
					  cli_opt_defs[i].name);
	return 0;
}

int cli_list_options(FILE *f, const char *name)
{
	const struct cli_cmd *c = cli_cmd_find(name);

	if (!c)
		return -ENOENT;
	for (size_t i = 0; i < ARRAY_SIZE(cli_opt_defs); i++)
		if (c->opts & cli_opt_defs[i].bit)
			fprintf(f, "--%s\n", cli_opt_defs[i].name);
	return 0;
}

int cli_request_build(const char *name, char *const *args, int nargs, const struct cli_opts *o,
		      struct cli_request *req, struct rf_err *e)
{
	const struct cli_cmd *c = cli_cmd_find(name);
	struct cli_request r = { .cmd = c, .method = "GET" };
	int x;

	if (!c)
		return rf_err_set(e, -EINVAL, "UNKNOWN_COMMAND", NULL,
				  "unknown command '%s' (rocefabctl help lists the commands)", name);
	if (nargs < c->min_args)
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "%s: %s", name,
				  nargs ? "not enough arguments" : "missing arguments");
	if (c->max_args >= 0 && nargs > c->max_args)
		return rf_err_set(e, -EINVAL, "USAGE", NULL, "%s: too many arguments ('%s' is one too many)",
				  name, args[c->max_args]);
	if ((x = opts_check(c, o, e)) < 0)
		return x;
	if ((x = c->build(c, args, nargs, o, &r, e)) < 0) {
		json_decref(r.body);
		return x;
	}
	r.print = nargs && c->print_one ? c->print_one : c->print;
	*req = r;
	return 0;
}

void cli_request_fini(struct cli_request *req)
{
	if (!req)
		return;
	json_decref(req->body);
	req->body = NULL;
}

/* --- running one ---------------------------------------------------------------------------- */

static int report(FILE *err, const char *what, const struct rf_err *e)
{
	char buf[700];

	fprintf(err, "rocefabctl: %s%s\n", what, rf_err_str(e, buf, sizeof(buf)));
	if (!strcmp(e->code, "MISSING_TOKEN") || !strcmp(e->code, "BAD_TOKEN"))
		fprintf(err, "rocefabctl: give a token with --token-file FILE, $ROCEFAB_TOKEN_FILE or "
			     "$ROCEFAB_TOKEN (rocefabd token add NAME --role viewer makes one)\n");
	else if (!strcmp(e->code, "TLS_FAILED"))
		fprintf(err, "rocefabctl: if a private CA signed rocefabd's certificate: --cacert FILE (or "
			     "$ROCEFAB_CACERT, $CURL_CA_BUNDLE, $SSL_CERT_FILE)\n");
	return 1;
}

static const char *state_of(const json_t *change)
{
	return json_string_value(json_object_get(change, "state")) ?: "";
}

/* Polls the batch the answer *doc names until none of its changes is pending or sent, or
 * wait_s has passed; *doc becomes the last list of them. */
static int follow_batch(const struct cli_transport *t, double wait_s, json_t **doc,
			struct rf_err *e)
{
	json_int_t batch = json_integer_value(json_object_get(*doc, "batch"));
	struct timespec ts = { 0, 250 * 1000 * 1000 };
	double waited = 0;
	char path[96];

	snprintf(path, sizeof(path), "/api/v1/changes?batch=%lld&limit=10000", (long long)batch);
	for (;;) {
		json_t *now = NULL, *it;
		size_t i, open = 0;
		int x;

		if ((x = t->json(t->ctx, "GET", path, NULL, &now, e)) < 0)
			return x;
		json_array_foreach(json_object_get(now, "items"), i, it) {
			open += !strcmp(state_of(it), "pending") || !strcmp(state_of(it), "sent");
		}
		json_decref(*doc);
		*doc = now;
		if (!open || waited >= wait_s)
			return 0;
		nanosleep(&ts, NULL);
		waited += 0.25;
	}
}

/* The matrix alone is half the answer: show what it raised. */
static int show_alerts(const struct cli_transport *t, FILE *out, FILE *err)
{
	struct rf_err e = { 0 };
	json_t *al = NULL;
	size_t n;

	if (t->json(t->ctx, "GET", "/api/v1/alerts?state=active", NULL, &al, &e) < 0)
		return report(err, "alerts: ", &e);
	n = json_array_size(json_object_get(al, "items"));
	fprintf(out, "\nactive alerts: %zu\n", n);
	if (n)
		print_alerts(out, al);
	json_decref(al);
	return 0;
}

/* A policy changed: the members it leaves outside now (a range narrowed past them, a
 * loop_bytes no port's XOFF leaves room for), which no step moves unless most of their class
 * is outside at one value. */
static int show_outside(const struct cli_transport *t, FILE *out, FILE *err)
{
	struct rf_err e = { 0 };
	json_t *st = NULL;

	if (t->json(t->ctx, "GET", "/api/v1/cc", NULL, &st, &e) < 0)
		return report(err, "cc: ", &e);
	if (json_integer_value(json_object_get(json_object_get(st, "outside_policy"), "members")) > 0)
		fputc('\n', out);
	print_cc_outside(out, json_object_get(st, "outside_policy"));
	json_decref(st);
	return 0;
}

int cli_run(const struct cli_request *req, const struct cli_opts *o, const struct cli_transport *t,
	    FILE *out, FILE *err)
{
	bool follow = (req->cmd->flags & CLI_FOLLOW_BATCH) && o->wait_s > 0;
	struct rf_err e = { 0 };
	json_t *doc = NULL, *it;
	int rc = 0;
	size_t i;

	if (t->json(t->ctx, req->method, req->path, req->body, &doc, &e) < 0)
		return report(err, "", &e);
	/* what the server says more of a change (a hold of the detector it undoes): before a
	 * --wait replaces the answer with the batch's state (a server's text: made printable) */
	print_warnings(err, doc);
	if (follow && follow_batch(t, o->wait_s, &doc, &e) < 0) {
		json_decref(doc);
		return report(err, "", &e);
	}
	if (o->json || !req->print)
		print_json(out, doc);
	else
		req->print(out, doc);
	if (follow) {
		size_t open = 0, doubt = 0;

		json_array_foreach(json_object_get(doc, "items"), i, it) {
			if (strcmp(state_of(it), "applied"))
				rc = 3;
			if (!strcmp(state_of(it), "pending") || !strcmp(state_of(it), "sent"))
				open++;
			doubt += json_is_true(json_object_get(it, "in_doubt"));
		}
		if (doubt)
			fprintf(err, "rocefabctl: %zu change%s timed out unanswered and may have been applied all the "
				     "same (in doubt until its agent reports again, or an operator who checked the "
				     "device settles it: rocefabctl settle); see rocefabctl changes\n",
				doubt, doubt == 1 ? "" : "s");
		if (open)
			fprintf(err, "rocefabctl: %zu change%s still pending or sent when the wait ended (a change "
				     "held for others shows them: pending (after ...)); see rocefabctl changes\n",
				open, open == 1 ? "" : "s");
		else if (rc)
			fprintf(err, "rocefabctl: not every change was applied (see ERROR)\n");
	}
	json_decref(doc);
	if (!o->json && (req->cmd->flags & CLI_WITH_ALERTS) && show_alerts(t, out, err))
		rc = 1;
	if (!o->json && req->then_outside && show_outside(t, out, err))
		rc = 1;
	return rc;
}
