/* The sim backend: one device (a host or a switch) of a running rocefab-sim, read and
 * configured through the simulator's control API (schemas/sim-control.yaml).
 *
 * The transport is either HTTP (rocefab-agent --backend sim --sim URL --device NAME, a real
 * agent process standing in for one simulated device) or an in-process call (the virtual
 * agents that rocefab-sim serve --agents runs, one per device, in the simulator's process).
 *
 * A simulated host looks like a one-port RDMA NIC: device "nic0", port "1", netdev "eth0",
 * driver "sim".  A switch is one device named after the switch whose ports are named by their
 * neighbour (e.g. leaf0's port "h3").  Each port reports its neighbour as LLDP would.
 * Configuration is translated between rocefab's names (NVIDIA DCQCN knobs, ECN/PFC fields of
 * schemas/command.schema.json) and the simulator's; changes are read-modify-write and read
 * back. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/backend.h"
#include "agents/sim.h"
#include "lib/httpc.h"
#include "lib/log.h"
#include "lib/params.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

#define HOST_DEV SIM_AGENT_HOST_DEV
#define HOST_PORT SIM_AGENT_HOST_PORT
#define HOST_NETDEV SIM_AGENT_HOST_NETDEV

#define S struct sim_settings
const struct conf_opt backend_sim_opts[] = {
	CONF_OPT("sim.url", CONF_STRING, S, url, "http://127.0.0.1:9760",
		 "control API of rocefab-sim serve (backend sim)"),
	CONF_OPT("sim.device", CONF_STRING, S, device, "",
		 "the simulated host or switch this agent stands in for (backend sim)"),
	CONF_OPT_END,
};
#undef S

struct simb {
	char dev[64];
	bool is_switch;
	sim_call_fn call;
	void *ctx;
	struct httpc *http; /* when call is NULL */
	json_t *desc; /* the last GET /v1/devices/{dev} */
	/* the probe round in flight: ids of the simulator's probe runs, and what each was */
	json_t *round_ids, *round_meta;
	bool runs_refused; /* the simulator refused runs or their results: said once in the log */
	bool ahead_said;   /* its fabric time ran ahead of the wall clock: said once in the log */
};

/* Fabric time ahead of the wall clock by more than this (a simulator paced above 1): the
 * counters are left out, as rocefabd refuses reports more than 60 s ahead of its clock
 * (CLOCK_AHEAD, which would blame this host's clock) */
#define SIM_AHEAD_NS (45 * INT64_C(1000000000))

/* Returns the HTTP status (0 when the simulator cannot be reached) and *ret_doc. */
static int call(struct simb *sb, const char *method, const char *path, json_t *body,
		json_t **ret_doc)
{
	struct rf_err e = { 0 };
	char *text = NULL;
	long status = 0;
	int r;

	*ret_doc = NULL;
	if (sb->call)
		return sb->call(sb->ctx, method, path, body, ret_doc);
	if (body && !(text = json_dumps(body, JSON_COMPACT)))
		return 0;
	r = httpc_send(sb->http, method, path, text, text ? strlen(text) : 0, &status, ret_doc, &e);
	free(text);
	if (r < 0) {
		log_debug("sim", "%s %s: %s", method, path, e.msg);
		return 0;
	}
	return (int)status;
}

/* A failed call as an error: the simulator's problem detail, or why it cannot be reached. */
static int call_err(struct rf_err *e, int status, json_t *doc, const char *what)
{
	if (!status)
		return rf_err_set(e, -EHOSTUNREACH, "SIM_UNREACHABLE", what,
				  "the simulator's control API does not answer");
	httpc_problem(e, status == 404 ? -ENOENT : -EINVAL, doc, NULL, "SIM_ERROR", "the simulator refused");
	if (!e->where[0] && what)
		snprintf(e->where, sizeof(e->where), "%s", what);
	return e->err;
}

static int sim_open(struct backend *b, struct rf_err *e)
{
	static const struct sim_settings none = { 0 };
	const struct sim_settings *set = b->env.settings ? b->env.settings : &none;
	struct simb *sb = calloc(1, sizeof(*sb));
	char path[160];
	json_t *doc = NULL;
	int status, r;

	if (!sb)
		return -ENOMEM;
	b->priv = sb;
	if (!set->device || !*set->device)
		return rf_err_set(e, -EINVAL, "NO_SIM_DEVICE", "sim.device",
				  "the sim backend needs the simulated device to stand in for (--device)");
	if (str_copy(sb->dev, sizeof(sb->dev), set->device) < 0)
		return rf_err_set(e, -EINVAL, "BAD_SIM_DEVICE", "sim.device", "name too long");
	sb->call = set->call;
	sb->ctx = set->ctx;
	if (!sb->call) {
		struct httpc_conf hc = { .base = set->url, .what = "sim.url", .http_only = true,
					 .user_agent = "rocefab-agent/" ROCEFAB_VERSION,
					 .timeout_ns = 5 * INT64_C(1000000000),
					 .connect_timeout_ns = 2 * INT64_C(1000000000),
					 .unreachable_code = "SIM_UNREACHABLE" };

		if ((r = httpc_new(&hc, &sb->http, e)) < 0) {
			if (r == -EINVAL)
				rf_err_set(e, -EINVAL, "BAD_SIM_URL", "sim.url",
					   "'%s' must be the http:// URL of rocefab-sim serve --control",
					   set->url ? set->url : "");
			return r;
		}
	}
	snprintf(path, sizeof(path), "/v1/devices/%s", sb->dev);
	status = call(sb, "GET", path, NULL, &doc);
	if (status == 0) {
		/* the simulator is not up (yet): keep trying with every report, as an agent whose
		 * host has not finished booting would */
		log_warning("sim", "the simulator at %s does not answer yet; reporting errors until it does",
			    sb->http ? httpc_base(sb->http) : "(in process)");
		return 0;
	}
	if (status != 200) {
		r = call_err(e, status, doc, "sim.device");
		json_decref(doc);
		return r;
	}
	sb->is_switch = !strcmp(json_string_value(json_object_get(doc, "role")) ?: "", "switch");
	sb->desc = doc;
	return 0;
}

/* The device's description, fetched once the simulator answers. */
static int ensure_desc(struct simb *sb, json_t *errors)
{
	char path[160];
	json_t *doc = NULL;
	int status;

	if (sb->desc)
		return 0;
	snprintf(path, sizeof(path), "/v1/devices/%s", sb->dev);
	status = call(sb, "GET", path, NULL, &doc);
	if (status != 200) {
		struct rf_err e = { 0 };
		char buf[600];

		call_err(&e, status, doc, path);
		if (errors)
			collect_error(errors, e.code, sb->dev, "%s", rf_err_str(&e, buf, sizeof(buf)));
		json_decref(doc);
		return -EHOSTUNREACH;
	}
	sb->is_switch = !strcmp(json_string_value(json_object_get(doc, "role")) ?: "", "switch");
	sb->desc = doc;
	return 0;
}

static void sim_close(struct backend *b)
{
	struct simb *sb = b->priv;

	if (!sb)
		return;
	httpc_free(sb->http);
	json_decref(sb->desc);
	json_decref(sb->round_ids);
	json_decref(sb->round_meta);
	free(sb);
}

static void set_neighbor(struct agent_port *p, json_t *peer)
{
	str_copy(p->peer_system, sizeof(p->peer_system),
		 json_string_value(json_object_get(peer, "device")) ?: "");
	str_copy(p->peer_port, sizeof(p->peer_port),
		 json_string_value(json_object_get(peer, "port")) ?: "");
	/* the peer of a host is a switch port; the peer of a switch port facing a host is that
	 * host's NIC port */
	if (!strcmp(json_string_value(json_object_get(peer, "role")) ?: "", "host"))
		str_copy(p->peer_port, sizeof(p->peer_port), HOST_DEV ":" HOST_PORT);
}

static int sim_inventory(struct backend *b, struct agent_inventory *inv, json_t *errors)
{
	struct simb *sb = b->priv;
	char path[160];
	json_t *doc = NULL, *ports, *jp;
	struct agent_device *d;
	struct rf_err e = { 0 };
	size_t i;
	int status;

	if (ensure_desc(sb, errors) < 0)
		return -EHOSTUNREACH;
	snprintf(path, sizeof(path), "/v1/devices/%s", sb->dev);
	status = call(sb, "GET", path, NULL, &doc);
	if (status != 200) {
		char buf[600];

		call_err(&e, status, doc, path);
		collect_error(errors, e.code, sb->dev, "%s", rf_err_str(&e, buf, sizeof(buf)));
		json_decref(doc);
		return -EHOSTUNREACH;
	}
	json_decref(sb->desc);
	sb->desc = doc;
	inventory_clear(inv);
	d = inventory_add_device(inv);
	if (!d)
		return -ENOMEM;
	str_copy(d->name, sizeof(d->name), sb->is_switch ? sb->dev : HOST_DEV);
	str_copy(d->kind, sizeof(d->kind), sb->is_switch ? "switch" : "rdma");
	str_copy(d->driver, sizeof(d->driver), "sim");
	ports = json_object_get(doc, "ports");
	json_array_foreach(ports, i, jp) {
		struct agent_port *p = inventory_add_port(d);

		if (!p)
			return -ENOMEM;
		if (sb->is_switch) {
			str_copy(p->port, sizeof(p->port), json_string_value(json_object_get(jp, "name")) ?: "");
		} else {
			str_copy(p->port, sizeof(p->port), HOST_PORT);
			str_copy(p->netdev, sizeof(p->netdev), HOST_NETDEV);
		}
		str_copy(p->state, sizeof(p->state), json_string_value(json_object_get(jp, "state")) ?: "unknown");
		str_copy(p->link_layer, sizeof(p->link_layer), "ethernet");
		p->speed_mbps = json_integer_value(json_object_get(jp, "speed_mbps"));
		p->mtu = -1;
		set_neighbor(p, json_object_get(jp, "peer"));
		if (!sb->is_switch)
			break; /* a simulated NIC has one port */
	}
	return 0;
}

static int sim_collect(struct backend *b, const struct agent_inventory *inv, json_t *samples,
		       json_t *errors)
{
	struct simb *sb = b->priv;
	char path[160];
	json_t *doc = NULL, *ports, *values;
	const char *pname;
	json_int_t t;
	int status;

	(void)inv;
	if (ensure_desc(sb, NULL) < 0)
		return -EHOSTUNREACH;
	snprintf(path, sizeof(path), "/v1/devices/%s/counters", sb->dev);
	status = call(sb, "GET", path, NULL, &doc);
	if (status != 200) {
		struct rf_err e = { 0 };
		char buf[600];

		call_err(&e, status, doc, path);
		collect_error(errors, e.code, sb->dev, "%s", rf_err_str(&e, buf, sizeof(buf)));
		json_decref(doc);
		return -EHOSTUNREACH;
	}
	/* the read time is fabric time (mapped to Unix time), so rates are true fabric rates
	 * whatever the simulator's pace */
	t = json_integer_value(json_object_get(doc, "time_ns"));
	if (t - tu_now_ns() > SIM_AHEAD_NS) {
		collect_error(errors, "SIM_AHEAD", sb->dev,
			      "the simulator's fabric time is %.0f s ahead of this clock (rocefab-sim serve paced above 1): "
			      "its counters are left out, as rocefabd refuses times more than a minute ahead; run it "
			      "at --pace 1 or below", (double)(t - tu_now_ns()) / 1e9);
		if (!sb->ahead_said)
			log_msg(LOG_WARNING, "sim", "SIM_AHEAD",
				"%s: the simulator's fabric time runs ahead of this clock (paced above 1): counters "
				"are left out of the reports until it is run at --pace 1 or below", sb->dev);
		sb->ahead_said = true;
		json_decref(doc);
		return 0;
	}
	ports = json_object_get(doc, "ports");
	json_object_foreach(ports, pname, values) {
		json_t *smp = json_pack("{s:s,s:s,s:s,s:s,s:I,s:O}", "device",
					sb->is_switch ? sb->dev : HOST_DEV, "port",
					sb->is_switch ? pname : HOST_PORT, "source", "sim", "driver",
					"sim", "t_ns", t, "values", values);

		json_array_append_new(samples, smp);
		if (!sb->is_switch)
			break;
	}
	json_decref(doc);
	return 0;
}

/* --- configuration: rocefab's names <-> the simulator's -------------------------------------- */

static json_t *dcqcn_to_rocefab(json_t *sim)
{
	json_t *o = json_object();

	for (unsigned i = 0; i < dcqcn_nparams; i++) {
		const struct dcqcn_param *p = &dcqcn_params[i];
		json_t *v;

		if (!p->sim)
			continue;
		v = json_object_get(sim, p->sim);
		if (!strcmp(p->sim, "enabled"))
			json_object_set_new(o, p->name, json_integer(json_is_true(v) ? 255 : 0));
		else if (json_is_boolean(v))
			json_object_set_new(o, p->name, json_integer(json_is_true(v)));
		else if (json_is_number(v))
			json_object_set_new(o, p->name, json_integer((json_int_t)llround(json_number_value(v))));
	}
	return o;
}

static json_t *pfc_to_rocefab(json_t *sim)
{
	json_t *prios = json_object_get(sim, "priorities"), *v, *o;
	unsigned mask = 0;
	size_t i;

	json_array_foreach(prios, i, v)
		mask |= 1u << (json_integer_value(v) & 7);
	o = json_pack("{s:i}", "enable", (int)mask);
	if (json_object_get(sim, "threshold")) {
		json_int_t xoff = json_integer_value(json_object_get(sim, "xoff_bytes"));
		json_int_t off = json_integer_value(json_object_get(sim, "xon_offset_bytes"));

		json_object_set(o, "mode", json_object_get(sim, "threshold"));
		json_object_set(o, "alpha_shift", json_object_get(sim, "alpha_shift"));
		json_object_set_new(o, "xoff_bytes", json_integer(xoff));
		json_object_set_new(o, "xon_bytes", json_integer(xoff > off ? xoff - off : 0));
		json_object_set_new(o, "xon_offset_bytes", json_integer(off));
		json_object_set(o, "headroom_bytes", json_object_get(sim, "headroom_bytes"));
		json_object_set(o, "xoff_threshold_bytes", json_object_get(sim, "xoff_threshold_bytes"));
	}
	return o;
}

static json_t *ecn_to_rocefab(json_t *sim)
{
	return json_pack("{s:O,s:O,s:O,s:O}", "enabled", json_object_get(sim, "enabled"), "kmin_bytes",
			 json_object_get(sim, "kmin_bytes"), "kmax_bytes",
			 json_object_get(sim, "kmax_bytes"), "pmax", json_object_get(sim, "pmax"));
}

static int get_config(struct simb *sb, json_t **ret, struct rf_err *e)
{
	char path[160];
	int status;

	snprintf(path, sizeof(path), "/v1/devices/%s/config", sb->dev);
	status = call(sb, "GET", path, NULL, ret);
	if (status != 200) {
		int r = call_err(e, status, *ret, path);

		json_decref(*ret);
		*ret = NULL;
		return r;
	}
	return 0;
}

static int sim_read_config(struct backend *b, json_t **ret)
{
	struct simb *sb = b->priv;
	json_t *cfg = NULL, *ports, *pc, *out;
	struct rf_err e = { 0 };
	const char *pname;
	int r;

	if (ensure_desc(sb, NULL) < 0)
		return -EHOSTUNREACH;
	if ((r = get_config(sb, &cfg, &e)) < 0)
		return r;
	out = json_pack("{s:[],s:[],s:[]}", "dcqcn", "pfc", "ecn");
	ports = json_object_get(cfg, "ports");
	if (!sb->is_switch) {
		json_t *d = dcqcn_to_rocefab(json_object_get(cfg, "dcqcn"));

		json_object_set_new(d, "device", json_string(HOST_DEV));
		json_object_set_new(d, "port", json_string(HOST_PORT));
		json_array_append_new(json_object_get(out, "dcqcn"), d);
	}
	json_object_foreach(ports, pname, pc) {
		json_t *pfc = pfc_to_rocefab(json_object_get(pc, "pfc")), *q;
		const char *dev = sb->is_switch ? sb->dev : HOST_DEV;
		const char *port = sb->is_switch ? pname : HOST_PORT;
		size_t k;

		json_object_set_new(pfc, "device", json_string(dev));
		json_object_set_new(pfc, "port", json_string(port));
		if (sb->is_switch)
			json_object_set(pfc, "shared_bytes",
					json_object_get(json_object_get(cfg, "buffer"), "shared_bytes"));
		json_array_append_new(json_object_get(out, "pfc"), pfc);
		json_array_foreach(json_object_get(pc, "ecn"), k, q) {
			json_t *x = ecn_to_rocefab(q);

			json_object_set_new(x, "device", json_string(dev));
			json_object_set_new(x, "port", json_string(port));
			json_object_set_new(x, "queue", json_integer((json_int_t)k));
			json_array_append_new(json_object_get(out, "ecn"), x);
		}
		if (!sb->is_switch)
			break;
	}
	json_decref(cfg);
	*ret = out;
	return 0;
}

/* The simulator's port of a command's "port": a switch port name, or the host's one port. */
static const char *sim_port_of(struct simb *sb, json_t *params, struct rf_err *e)
{
	const char *port = json_string_value(json_object_get(params, "port"));
	json_t *ports = json_object_get(sb->desc, "ports"), *jp;
	size_t i;

	if (!port) {
		rf_err_set(e, -EINVAL, "BAD_COMMAND", "/params/port", "missing");
		return NULL;
	}
	if (!sb->is_switch) {
		if (strcmp(port, HOST_PORT) && strcmp(port, HOST_NETDEV) &&
		    strcmp(port, HOST_DEV ":" HOST_PORT)) {
			rf_err_set(e, -ENOENT, "UNKNOWN_PORT", "/params/port",
				   "this host has one port: %s %s (%s)", HOST_DEV, HOST_PORT, HOST_NETDEV);
			return NULL;
		}
		return json_string_value(json_object_get(json_array_get(ports, 0), "name"));
	}
	json_array_foreach(ports, i, jp)
		if (!strcmp(json_string_value(json_object_get(jp, "name")) ?: "", port))
			return port;
	rf_err_set(e, -ENOENT, "UNKNOWN_PORT", "/params/port", "%s has no port '%s'", sb->dev, port);
	return NULL;
}

/* Builds the simulator's partial change from a command's params. */
static int translate(struct simb *sb, const char *kind, json_t *params, json_t *current,
		     json_t **ret, struct rf_err *e)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;

	*ret = out;
	json_object_foreach(params, k, v) {
		if (!strcmp(k, "device") || !strcmp(k, "port") || !strcmp(k, "queue"))
			continue;
		if (!strcmp(kind, "set_dcqcn")) {
			const struct dcqcn_param *p = dcqcn_param_find(k);

			if (!p)
				return rf_err_set(e, -EINVAL, "UNKNOWN_FIELD", k, "not a DCQCN parameter");
			if (!p->sim)
				return rf_err_set(e, -EOPNOTSUPP, "NOT_SUPPORTED", k,
						  "the simulated NIC does not model %s", k);
			if (!json_is_integer(v))
				return rf_err_set(e, -EINVAL, "BAD_VALUE", k, "must be an integer");
			if (!strcmp(p->sim, "enabled")) {
				json_int_t m = json_integer_value(v);
				const char *other = !strcmp(k, DCQCN_RP_ENABLE) ? DCQCN_NP_ENABLE : DCQCN_RP_ENABLE;
				json_t *ov = json_object_get(params, other);
				json_int_t om = ov ? json_integer_value(ov)
						   : json_integer_value(json_object_get(current, other));

				if ((m != 0 && m != 255) || om != m)
					return rf_err_set(e, -EOPNOTSUPP, "NOT_SUPPORTED", k,
							  "the simulated NIC runs DCQCN (reaction and notification "
							  "points together) on all priorities or none: rp_enable and "
							  "np_enable must both be 0 or both 255");
				json_object_set_new(out, "enabled", json_boolean(m != 0));
			} else if (!strncmp(p->name, "clamp_", 6)) {
				json_object_set_new(out, p->sim, json_boolean(json_integer_value(v) != 0));
			} else {
				json_object_set(out, p->sim, v);
			}
		} else if (!strcmp(kind, "set_ecn")) {
			json_object_set(out, k, v);
		} else if (!strcmp(kind, "set_pfc")) {
			if (!strcmp(k, "enable")) {
				json_t *prios = json_array();

				for (int p = 0; p < 8; p++)
					if (json_integer_value(v) & (1 << p))
						json_array_append_new(prios, json_integer(p));
				json_object_set_new(out, "priorities", prios);
			} else if (!strcmp(k, "alpha_shift")) {
				json_object_set(out, "alpha_shift", v);
				json_object_set_new(out, "threshold", json_string("dynamic"));
			} else if (!strcmp(k, "xoff_bytes") || !strcmp(k, "xon_bytes")) {
				json_int_t xoff = json_integer_value(json_object_get(params, "xoff_bytes"));
				json_t *xon = json_object_get(params, "xon_bytes");

				if (!json_object_get(params, "xoff_bytes"))
					xoff = json_integer_value(json_object_get(current, "xoff_bytes"));
				/* as rocefabd checks it: a dynamic port has no static XOFF for an XON */
				if (xoff <= 0)
					return rf_err_set(e, -EINVAL, "BAD_VALUE", "xon_bytes",
							  "the port has no static XOFF threshold (its threshold "
							  "is dynamic): a static XON needs one, so give "
							  "xoff_bytes with it");
				json_object_set_new(out, "threshold", json_string("static"));
				json_object_set_new(out, "xoff_bytes", json_integer(xoff));
				if (xon) {
					if (json_integer_value(xon) >= xoff)
						return rf_err_set(e, -EINVAL, "BAD_THRESHOLD_ORDER", "xon_bytes",
								  "XON (%" PRId64 ") must be below XOFF (%" PRId64 ")",
								  (int64_t)json_integer_value(xon), (int64_t)xoff);
					json_object_set_new(out, "xon_offset_bytes",
							    json_integer(xoff - json_integer_value(xon)));
				}
			} else {
				return rf_err_set(e, -EINVAL, "UNKNOWN_FIELD", k, "not a PFC parameter");
			}
		}
	}
	(void)sb;
	return 0;
}

static json_t *outcome_err(const char *id, const char *outcome, const struct rf_err *e,
			   json_t *before)
{
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "outcome", outcome, "error", "code",
			      e->code[0] ? e->code : "FAILED", "message", e->msg);

	if (e->where[0])
		json_object_set_new(json_object_get(o, "error"), "field", json_string(e->where));
	if (before)
		json_object_set(o, "previous", before);
	return o;
}

static int sim_apply(struct backend *b, json_t *command, json_t **ret_outcome)
{
	struct simb *sb = b->priv;
	const char *id = json_string_value(json_object_get(command, "id")) ?: "";
	const char *kind = json_string_value(json_object_get(command, "kind")) ?: "";
	json_t *params = json_object_get(command, "params"), *before = NULL, *after = NULL;
	json_t *change = NULL, *doc = NULL, *cur = NULL, *now = NULL;
	struct rf_err e = { 0 };
	const char *sport = NULL, *rport;
	json_int_t queue = -1;
	char path[256];
	int status, r;

	/* read */
	if ((r = sim_read_config(b, &before)) < 0) {
		rf_err_set(&e, r, "SIM_UNREACHABLE", NULL, "cannot read the configuration");
		goto fail;
	}
	if (!strcmp(kind, "set_dcqcn")) {
		if (sb->is_switch) {
			rf_err_set(&e, -EINVAL, "NOT_A_HOST", NULL, "%s is a switch: DCQCN runs on NICs", sb->dev);
			goto fail;
		}
		rport = HOST_PORT;
		cur = config_entry(json_object_get(before, "dcqcn"), rport, -1);
		snprintf(path, sizeof(path), "/v1/devices/%s/dcqcn", sb->dev);
	} else if (!strcmp(kind, "set_pfc") || !strcmp(kind, "set_ecn")) {
		if (!(sport = sim_port_of(sb, params, &e)))
			goto fail;
		rport = sb->is_switch ? sport : HOST_PORT;
		if (!strcmp(kind, "set_pfc")) {
			cur = config_entry(json_object_get(before, "pfc"), rport, -1);
			snprintf(path, sizeof(path), "/v1/devices/%s/ports/%s/pfc", sb->dev, sport);
		} else {
			if (!sb->is_switch) {
				rf_err_set(&e, -EOPNOTSUPP, "NOT_SUPPORTED", NULL,
					   "ECN marking is a switch queue setting");
				goto fail;
			}
			queue = json_integer_value(json_object_get(params, "queue"));
			cur = config_entry(json_object_get(before, "ecn"), rport, queue);
			snprintf(path, sizeof(path), "/v1/devices/%s/ports/%s/queues/%d/ecn", sb->dev,
				 sport, (int)queue);
		}
	} else {
		rf_err_set(&e, -EOPNOTSUPP, "NOT_SUPPORTED", "/kind", "the sim backend does not apply %s", kind);
		goto fail;
	}
	/* modify */
	if (translate(sb, kind, params, cur, &change, &e) < 0)
		goto fail;
	/* write */
	status = call(sb, "PUT", path, change, &doc);
	if (status != 200) {
		call_err(&e, status, doc, NULL);
		goto fail;
	}
	/* read back */
	if ((r = sim_read_config(b, &after)) < 0) {
		rf_err_set(&e, r, "SIM_UNREACHABLE", NULL, "applied, but cannot read the configuration back");
		goto fail;
	}
	now = !strcmp(kind, "set_dcqcn") ? config_entry(json_object_get(after, "dcqcn"), rport, -1)
	      : !strcmp(kind, "set_pfc") ? config_entry(json_object_get(after, "pfc"), rport, -1)
					 : config_entry(json_object_get(after, "ecn"), rport, queue);
	*ret_outcome = json_pack("{s:s,s:s,s:O,s:O}", "id", id, "outcome", "applied", "previous",
				 cur ? cur : json_null(), "values", now ? now : json_null());
	json_decref(before);
	json_decref(after);
	json_decref(change);
	json_decref(doc);
	return 0;
fail:
	*ret_outcome = outcome_err(id, "failed", &e, cur);
	json_decref(before);
	json_decref(after);
	json_decref(change);
	json_decref(doc);
	return 0;
}

/* --- probes: the simulator's probe runs, through the same queues as the fabric's traffic ---- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static json_t *round_results(struct simb *sb, json_t *runs)
{
	json_t *out = json_array(), *r;
	size_t i;

	json_array_foreach(runs, i, r) {
		json_t *meta = json_array_get(sb->round_meta, i), *sm = json_object_get(r, "samples_us"), *v;
		size_t n = json_array_size(sm), k;
		double *v2 = calloc(n + 1, sizeof(double)), sum = 0;
		json_t *o;

		if (!v2)
			continue;
		json_array_foreach(sm, k, v) {
			v2[k] = json_number_value(v);
			sum += v2[k];
		}
		qsort(v2, n, sizeof(double), cmp_dbl);
		o = json_pack("{s:O,s:O,s:O,s:O,s:I,s:I,s:I}", "target", json_object_get(meta, "target"),
			      "label", json_object_get(meta, "label"), "op", json_object_get(meta, "op"),
			      "size", json_object_get(meta, "size"), "n",
			      json_integer_value(json_object_get(r, "count")), "ok",
			      json_integer_value(json_object_get(r, "ok")), "lost",
			      json_integer_value(json_object_get(r, "lost")));
		if (n) {
			json_object_set_new(o, "min_us", json_real(v2[0]));
			json_object_set_new(o, "p50_us", json_real(v2[(n - 1) / 2]));
			json_object_set_new(o, "p99_us", json_real(v2[(size_t)((double)(n - 1) * 0.99 + 0.5)]));
			json_object_set_new(o, "max_us", json_real(v2[n - 1]));
			json_object_set_new(o, "mean_us", json_real(sum / (double)n));
		}
		json_object_set(o, "path", json_object_get(r, "path"));
		json_array_append_new(out, o);
		free(v2);
	}
	return out;
}

/* The simulator takes at most this many probe runs per request; ids are asked for in pieces
 * that keep the request line short. */
#define SIM_RUNS_PER_POST 4096
#define SIM_IDS_PER_GET 256

/* The results of runs ids as {"results": [...]}, in their order.  Each GET frees the runs that
 * are done, so a piece that fails loses those: the round's results are then partial. */
static int collect_runs(struct simb *sb, json_t *ids, json_t **ret)
{
	json_t *all = json_array();
	size_t n = json_array_size(ids);

	for (size_t at = 0; at < n; at += SIM_IDS_PER_GET) {
		char path[SIM_IDS_PER_GET * 12 + 32];
		size_t len = (size_t)snprintf(path, sizeof(path), "/v1/probes/");
		json_t *doc = NULL;
		int status;

		for (size_t i = at; i < n && i < at + SIM_IDS_PER_GET; i++)
			len += (size_t)snprintf(path + len, sizeof(path) - len, "%s%lld", i > at ? "," : "",
						(long long)json_integer_value(json_array_get(ids, i)));
		status = call(sb, "GET", path, NULL, &doc);
		if (status != 200) {
			/* unreachable: ask again next time; refused: that will not change */
			if (status && !sb->runs_refused)
				log_warning("agent", "%s: the simulator did not give probe results (HTTP %d): %s; "
					    "the round is dropped", sb->dev, status,
					    json_string_value(json_object_get(doc, "detail")) ?: "no detail");
			sb->runs_refused |= status != 0;
			json_decref(doc);
			json_decref(all);
			return status ? -EINVAL : -EHOSTUNREACH;
		}
		json_array_extend(all, json_object_get(doc, "results"));
		json_decref(doc);
	}
	*ret = json_pack("{s:o}", "results", all);
	return 0;
}

/* Starts the runs of req (a round's), SIM_RUNS_PER_POST at a time; their ids into *ret (as many
 * as started: a failure part way keeps the ones already running). */
static int start_runs(struct simb *sb, json_t *req, json_t **ret)
{
	json_t *ids = json_array();
	size_t n = json_array_size(req);

	for (size_t at = 0; at < n; at += SIM_RUNS_PER_POST) {
		json_t *part = json_array(), *body, *doc = NULL;
		int status;

		for (size_t i = at; i < n && i < at + SIM_RUNS_PER_POST; i++)
			json_array_append(part, json_array_get(req, i));
		body = json_pack("{s:o}", "probes", part);
		status = call(sb, "POST", "/v1/probes", body, &doc);
		json_decref(body);
		if (status != 201) {
			/* unreachable: the sample errors say so already */
			if (status && !sb->runs_refused)
				log_warning("agent", "%s: the simulator did not start probe runs (HTTP %d): %s", sb->dev,
					    status, json_string_value(json_object_get(doc, "detail")) ?: "no detail");
			sb->runs_refused |= status != 0;
			json_decref(doc);
			*ret = ids;
			return json_array_size(ids) ? 0 : -EHOSTUNREACH;
		}
		json_array_extend(ids, json_object_get(doc, "ids"));
		json_decref(doc);
	}
	*ret = ids;
	return 0;
}

static int sim_probe_round(struct backend *b, json_t *plan, json_t **ret)
{
	struct simb *sb = b->priv;
	json_t *doc = NULL, *targets, *t, *req;
	size_t i;

	*ret = NULL;
	if (sb->is_switch || !sb->desc)
		return -EOPNOTSUPP;
	if (sb->round_ids) {
		/* the last round: collect it once every run is done */
		bool all = true;
		int r = collect_runs(sb, sb->round_ids, &doc);

		if (r == -EINVAL) {
			json_decref(sb->round_ids);
			json_decref(sb->round_meta);
			sb->round_ids = sb->round_meta = NULL;
		}
		if (r < 0)
			return r;
		json_array_foreach(json_object_get(doc, "results"), i, t)
			all &= json_is_true(json_object_get(t, "done")) || json_is_true(json_object_get(t, "unknown"));
		if (!all) {
			/* not over (a slow or lossy path): the done runs were collected and are
			 * reported now; the others keep going and are asked for next time */
			json_t *keep_ids = json_array(), *keep_meta = json_array();
			json_t *got = json_array(), *got_meta = json_array(), *old_meta = sb->round_meta;

			json_array_foreach(json_object_get(doc, "results"), i, t) {
				if (json_is_true(json_object_get(t, "done"))) {
					json_array_append(got, t);
					json_array_append(got_meta, json_array_get(old_meta, i));
				} else if (!json_is_true(json_object_get(t, "unknown"))) {
					json_array_append(keep_ids, json_array_get(sb->round_ids, i));
					json_array_append(keep_meta, json_array_get(old_meta, i));
				}
			}
			sb->round_meta = got_meta;
			*ret = round_results(sb, got);
			json_decref(got_meta);
			json_decref(got);
			json_decref(old_meta);
			json_decref(sb->round_ids);
			sb->round_ids = keep_ids;
			sb->round_meta = keep_meta;
			json_decref(doc);
			return 0;
		}
		*ret = round_results(sb, json_object_get(doc, "results"));
		json_decref(doc);
		json_decref(sb->round_ids);
		json_decref(sb->round_meta);
		sb->round_ids = sb->round_meta = NULL;
	}
	/* the next round: every target, every path */
	targets = json_object_get(plan, "targets");
	req = json_array();
	sb->round_meta = json_array();
	{
		json_int_t paths = json_integer_value(json_object_get(plan, "paths"));
		json_int_t count = json_integer_value(json_object_get(plan, "iterations"));
		json_t *ops = json_object_get(plan, "ops"), *sizes = json_object_get(plan, "sizes");
		size_t nops = json_array_size(ops) ?: 1, nsizes = json_array_size(sizes) ?: 1;
		double tmo = json_number_value(json_object_get(plan, "timeout_us"));
		const char *self = json_string_value(json_object_get(sb->desc, "name"));

		/* every target with every op at every size, on every path: the simulated fabric
		 * carries a probe of that size whatever the op; the op goes with the result */
		json_array_foreach(targets, i, t) {
			if (!json_is_string(t) || (self && !strcmp(json_string_value(t), self)))
				continue;
			for (size_t oi = 0; oi < nops; oi++) {
				const char *op = json_string_value(json_array_get(ops, oi)) ?: "write";

				for (size_t si = 0; si < nsizes; si++) {
					json_int_t size = json_integer_value(json_array_get(sizes, si));

					size = size > 0 ? size : 64;
					for (json_int_t l = 0; l < (paths > 0 ? paths : 1); l++) {
						json_array_append_new(
							req, json_pack("{s:s,s:O,s:I,s:I,s:I,s:f}", "src", sb->dev, "dst", t,
								       "size", size, "label", l, "count",
								       count > 0 ? count : 10, "timeout_us",
								       tmo > 0 ? tmo : 1000.0));
						json_array_append_new(sb->round_meta,
								      json_pack("{s:O,s:I,s:s,s:I}", "target", t, "label",
										l, "op", op, "size", size));
					}
				}
			}
		}
	}
	if (!json_array_size(req)) {
		json_decref(req);
		json_decref(sb->round_meta);
		sb->round_meta = NULL;
		return 0;
	}
	if (start_runs(sb, req, &sb->round_ids) < 0) {
		json_decref(req);
		json_decref(sb->round_ids);
		json_decref(sb->round_meta);
		sb->round_ids = sb->round_meta = NULL;
		return -EHOSTUNREACH;
	}
	json_decref(req);
	/* the meta of the runs that started */
	while (json_array_size(sb->round_meta) > json_array_size(sb->round_ids))
		json_array_remove(sb->round_meta, json_array_size(sb->round_meta) - 1);
	return 0;
}

static int sim_is_switch(struct backend *b)
{
	struct simb *sb = b->priv;

	return sb->desc ? sb->is_switch : -EAGAIN;
}

/* Standing in for a simulated device: its name. */
static int sim_default_id(const void *settings, char id[65], struct rf_err *e)
{
	const struct sim_settings *set = settings;

	if (!set || !set->device || !*set->device)
		return -ENOENT;
	if (str_copy(id, 65, set->device) < 0)
		return rf_err_set(e, -EINVAL, "BAD_AGENT_ID", "sim.device", "longer than 64");
	return 0;
}

/* Every simulated host probes; the simulator routes the probes by name (no endpoint). */
static int sim_probe_endpoint(struct backend *b, const char **ret_endpoint)
{
	(void)b;
	*ret_endpoint = NULL;
	return 0;
}

const struct backend_ops backend_sim_ops = {
	.name = "sim",
	.summary = "one host or switch of a running rocefab-sim, through its control API",
	.default_id = sim_default_id,
	.is_switch = sim_is_switch,
	.probe_endpoint = sim_probe_endpoint,
	.probe_round = sim_probe_round,
	.open = sim_open,
	.close = sim_close,
	.inventory = sim_inventory,
	.collect = sim_collect,
	.read_config = sim_read_config,
	.apply = sim_apply,
};
