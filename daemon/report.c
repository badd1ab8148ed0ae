/* Agent report parsing and validation: see report.h.  The checks mirror
 * schemas/agent-report.schema.json field by field; tests/system/test_schemas.py runs the same
 * documents through both and requires the same verdicts. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/report.h"
#include "lib/hmap.h"
#include "lib/jsonutil.h"
#include "lib/probeops.h"
#include "lib/strutil.h"

#define MAX_DEVICES 256
#define MAX_PORTS_PER_DEVICE 1024
#define MAX_SAMPLES 16384
#define MAX_VALUES_PER_SAMPLE 4096
#define MAX_ERRORS 64
#define MIN_TIME_NS 946684800000000000LL
#define MAX_TIME_NS 4102444800000000000LL
#define MAX_SEQ 9007199254740991LL

static const char *const role_names[] = { "host", "switch", NULL };
static const char *const kind_names[] = { "rdma", "netdev", "switch", NULL };
static const char *const state_names[] = { "up", "down", "init", "unknown", NULL };
static const char *const link_layer_names[] = { "ethernet", "infiniband", "unknown", NULL };

const char *report_role_name(enum report_role r)
{
	return role_names[r];
}

void report_free(struct report *r)
{
	const char *k;
	void *v;

	if (!r)
		return;
	if (r->port_idx) {
		for (size_t i = 0; hmap_next(r->port_idx, &i, &k, &v);)
			free((char *)k);
		hmap_fini(r->port_idx);
		free(r->port_idx);
	}
	json_decref(r->doc);
	free(r->devices);
	free(r->ports);
	free(r->samples);
	free(r->values);
	free(r);
}

static int parse_agent(struct report *r, json_t *a, struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "id",      "role",	   "boot_id", "host_boot_id",
					    "version", "hostname", "backend", NULL };
	int role, x;

	if ((x = js_check_keys(a, keys, p, e)) < 0 ||
	    (x = js_req_str(a, "id", 64, true, p, &r->agent_id, e)) < 0 ||
	    (x = js_req_enum(a, "role", role_names, p, &role, e)) < 0 ||
	    (x = js_req_str(a, "boot_id", 64, true, p, &r->boot_id, e)) < 0 ||
	    (x = js_opt_str(a, "host_boot_id", 64, true, p, &r->host_boot_id, e)) < 0 ||
	    (x = js_req_str(a, "version", 64, false, p, &r->version, e)) < 0 ||
	    (x = js_opt_str(a, "hostname", 255, false, p, &r->hostname, e)) < 0 ||
	    (x = js_req_str(a, "backend", 64, true, p, &r->backend, e)) < 0)
		return x;
	r->role = role;
	return 0;
}

static int parse_port(struct report *r, struct report_port *port, json_t *jp, struct js_path *p,
		      struct rf_err *e)
{
	static const char *const keys[] = { "port", "netdev",	  "state",    "speed_mbps",
					    "mtu",  "link_layer", "neighbor", NULL };
	int state, ll = 2, x;

	(void)r;
	if (!json_is_object(jp))
		return js_fail(e, p, NULL, "a port must be an object");
	port->speed_mbps = -1;
	port->mtu = -1;
	if ((x = js_check_keys(jp, keys, p, e)) < 0 ||
	    (x = js_req_str(jp, "port", 64, true, p, &port->port, e)) < 0 ||
	    (x = js_opt_str(jp, "netdev", 64, true, p, &port->netdev, e)) < 0 ||
	    (x = js_req_enum(jp, "state", state_names, p, &state, e)) < 0 ||
	    (x = js_opt_int(jp, "speed_mbps", 0, 10000000, p, &port->speed_mbps, e)) < 0 ||
	    (x = js_opt_int(jp, "mtu", 0, 1048576, p, &port->mtu, e)) < 0)
		return x;
	if (json_object_get(jp, "link_layer") &&
	    (x = js_req_enum(jp, "link_layer", link_layer_names, p, &ll, e)) < 0)
		return x;
	port->state = state_names[state];
	port->link_layer = link_layer_names[ll];
	if (json_object_get(jp, "neighbor")) {
		static const char *const nkeys[] = { "system", "port", NULL };
		size_t a = js_path_push_key(p, "neighbor");
		json_t *n = json_object_get(jp, "neighbor");

		if (!json_is_object(n))
			return js_fail(e, p, NULL, "must be an object");
		if ((x = js_check_keys(n, nkeys, p, e)) < 0 ||
		    (x = js_req_str(n, "system", 64, true, p, &port->peer_system, e)) < 0 ||
		    (x = js_req_str(n, "port", 64, false, p, &port->peer_port, e)) < 0)
			return x;
		js_path_pop(p, a);
	}
	return 0;
}

static int parse_inventory(struct report *r, json_t *inv, struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "devices", "absent", NULL };
	static const char *const dev_keys[] = { "name",	     "kind",	  "driver", "fw_version",
						"node_guid", "ports", NULL };
	size_t i, total = 0, ndev;
	json_t *devices, *jd;
	int x;

	json_t *absent = NULL, *ja;

	if ((x = js_check_keys(inv, keys, p, e)) < 0 ||
	    (x = js_req_arr(inv, "devices", MAX_DEVICES, p, &devices, e)) < 0 ||
	    (x = js_opt_arr(inv, "absent", MAX_DEVICES, p, &absent, e)) < 0)
		return x;
	json_array_foreach(absent, i, ja) {
		size_t a = js_path_push_key(p, "absent");

		js_path_push_idx(p, i);
		if (!json_is_string(ja) || !js_is_id(json_string_value(ja), 64))
			return js_fail(e, p, NULL, "must be a device name");
		js_path_pop(p, a);
	}
	r->absent = absent;
	ndev = json_array_size(devices);
	json_array_foreach(devices, i, jd) {
		json_t *ports = json_object_get(jd, "ports");

		if (json_is_array(ports))
			total += json_array_size(ports);
	}
	r->devices = calloc(ndev ? ndev : 1, sizeof(*r->devices));
	r->ports = calloc(total ? total : 1, sizeof(*r->ports));
	if (!r->devices || !r->ports)
		return -ENOMEM;

	json_array_foreach(devices, i, jd) {
		struct report_device *d = &r->devices[i];
		size_t a = js_path_push_key(p, "devices"), j;
		int kind;
		json_t *ports, *jp;

		js_path_push_idx(p, i);
		if (!json_is_object(jd))
			return js_fail(e, p, NULL, "a device must be an object");
		if ((x = js_check_keys(jd, dev_keys, p, e)) < 0 ||
		    (x = js_req_str(jd, "name", 64, true, p, &d->name, e)) < 0 ||
		    (x = js_req_enum(jd, "kind", kind_names, p, &kind, e)) < 0 ||
		    (x = js_opt_str(jd, "driver", 64, true, p, &d->driver, e)) < 0 ||
		    (x = js_opt_str(jd, "fw_version", 64, false, p, &d->fw_version, e)) < 0 ||
		    (x = js_opt_str(jd, "node_guid", 64, false, p, &d->node_guid, e)) < 0 ||
		    (x = js_req_arr(jd, "ports", MAX_PORTS_PER_DEVICE, p, &ports, e)) < 0)
			return x;
		d->kind = kind_names[kind];
		for (uint32_t k = 0; k < i; k++)
			if (strcmp(r->devices[k].name, d->name) == 0)
				return js_fail(e, p, "name", "device '%s' is listed twice", d->name);
		d->first_port = r->nports;
		json_array_foreach(ports, j, jp) {
			struct report_port *port = &r->ports[r->nports];
			size_t b = js_path_push_key(p, "ports");

			js_path_push_idx(p, j);
			x = parse_port(r, port, jp, p, e);
			if (x < 0)
				return x;
			port->device = d->name;
			port->device_idx = (uint32_t)i;
			for (uint32_t k = d->first_port; k < r->nports; k++)
				if (strcmp(r->ports[k].port, port->port) == 0)
					return js_fail(e, p, "port", "port '%s' is listed twice",
						       port->port);
			js_path_pop(p, b);
			r->nports++;
		}
		d->nports = r->nports - d->first_port;
		r->ndevices++;
		js_path_pop(p, a);
	}
	return 0;
}

static int find_port(const struct report *r, const char *device, const char *port)
{
	if (r->port_idx) {
		char key[140];
		void *hit;

		snprintf(key, sizeof(key), "%s\x1f%s", device, port);
		hit = hmap_get(r->port_idx, key);
		return hit ? (int)((uintptr_t)hit - 1) : -1;
	}
	for (uint32_t i = 0; i < r->ndevices; i++) {
		const struct report_device *d = &r->devices[i];

		if (strcmp(d->name, device) != 0)
			continue;
		for (uint32_t k = d->first_port; k < d->first_port + d->nports; k++)
			if (strcmp(r->ports[k].port, port) == 0)
				return (int)k;
		return -1;
	}
	return -1;
}

static int parse_samples(struct report *r, json_t *samples, const struct reg *reg,
			 struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "device", "port", "source", "driver",
					    "t_ns",   "values", NULL };
	size_t n = json_array_size(samples), i, total = 0;
	json_t *js;
	int x;

	json_array_foreach(samples, i, js) {
		json_t *v = json_object_get(js, "values");

		if (json_is_object(v))
			total += json_object_size(v);
	}
	r->samples = calloc(n ? n : 1, sizeof(*r->samples));
	r->values = calloc(total ? total : 1, sizeof(*r->values));
	if (!r->samples || !r->values)
		return -ENOMEM;

	json_array_foreach(samples, i, js) {
		struct report_sample *s = &r->samples[i];
		const char *device, *port, *source, *driver = NULL, *name;
		size_t a = js_path_push_key(p, "samples");
		json_t *values, *jv;
		int port_idx;

		js_path_push_idx(p, i);
		if (!json_is_object(js))
			return js_fail(e, p, NULL, "a sample must be an object");
		if ((x = js_check_keys(js, keys, p, e)) < 0 ||
		    (x = js_req_str(js, "device", 64, true, p, &device, e)) < 0 ||
		    (x = js_req_str(js, "port", 64, true, p, &port, e)) < 0 ||
		    (x = js_req_str(js, "source", 64, true, p, &source, e)) < 0 ||
		    (x = js_opt_str(js, "driver", 64, true, p, &driver, e)) < 0 ||
		    (x = js_req_int(js, "t_ns", MIN_TIME_NS, MAX_TIME_NS, p, &s->t_ns, e)) < 0 ||
		    (x = js_req_obj(js, "values", p, &values, e)) < 0)
			return x;
		port_idx = find_port(r, device, port);
		if (port_idx < 0)
			return js_fail(e, p, "port", "port %s/%s is not in the inventory", device,
				       port);
		if (json_object_size(values) > MAX_VALUES_PER_SAMPLE)
			return js_fail(e, p, "values", "more than %d values", MAX_VALUES_PER_SAMPLE);
		s->port_idx = (uint32_t)port_idx;
		s->first_value = r->nvalues;
		js_path_push_key(p, "values");
		json_object_foreach(values, name, jv) {
			const struct reg_source *src;
			struct report_value *v;
			json_int_t raw;
			size_t len = strlen(name);

			if (len == 0 || len > 96)
				return js_fail(e, p, NULL, "a counter name must be 1 to 96 bytes long");
			if (!json_is_integer(jv))
				return js_fail(e, p, name, "a counter value must be an integer");
			raw = json_integer_value(jv);
			if (raw < 0)
				return js_fail(e, p, name, "a counter value must not be negative");
			src = reg_lookup(reg, source, driver, name);
			if (!src) {
				r->unknown_values++;
				continue;
			}
			/* The registry gives the source's width (a 32-bit Q-counter of mlx5 wraps at
			 * 2^32): a value beyond it cannot come from the device, and taken as it is it
			 * would be a rate spike (5e9 on a 32-bit counter).  Refused like any value out
			 * of its range (a negative one above): the whole report, naming the value. */
			if (src->width < 64 && (uint64_t)raw >> src->width)
				return js_fail(e, p, name,
					       "%" JSON_INTEGER_FORMAT " does not fit the %u bits of %s counter %s "
					       "(the counter registry's width: at most %" PRIu64 ")",
					       raw, (unsigned)src->width, source, name,
					       (UINT64_C(1) << src->width) - 1);
			v = &r->values[r->nvalues++];
			*v = (struct report_value){ .raw = (uint64_t)raw, .scale = src->scale,
						    .counter = src->counter->id, .prio = src->prio,
						    .width = src->width, .wrap = src->wrap,
						    .rank = src->rank };
		}
		s->nvalues = r->nvalues - s->first_value;
		r->nsamples++;
		js_path_pop(p, a);
	}
	return 0;
}

struct rank_key {
	uint32_t port;
	uint16_t counter;
	uint8_t prio;
	uint8_t rank;
	uint32_t value;
};

static int rank_cmp(const void *a, const void *b)
{
	const struct rank_key *x = a, *y = b;

	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->counter != y->counter)
		return x->counter < y->counter ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* When a port offers a counter through several sources (PMA port_xmit_data and the optional
 * rdma_tx_bytes), the best-ranked source wins and the others are skipped.  The same counter
 * twice from one source (two samples of one group) is a schema violation. */
static int resolve_ranks(struct report *r, struct js_path *p, struct rf_err *e)
{
	struct rank_key *k;
	uint32_t n = 0;

	if (r->nvalues < 2)
		return 0;
	k = malloc(r->nvalues * sizeof(*k));
	if (!k)
		return -ENOMEM;
	for (uint32_t s = 0; s < r->nsamples; s++) {
		const struct report_sample *smp = &r->samples[s];

		for (uint32_t v = smp->first_value; v < smp->first_value + smp->nvalues; v++)
			k[n++] = (struct rank_key){ .port = smp->port_idx,
						    .counter = r->values[v].counter,
						    .prio = r->values[v].prio,
						    .rank = r->values[v].rank,
						    .value = v };
	}
	qsort(k, n, sizeof(*k), rank_cmp);
	for (uint32_t i = 1; i < n; i++) {
		if (k[i].port != k[i - 1].port || k[i].counter != k[i - 1].counter ||
		    k[i].prio != k[i - 1].prio)
			continue;
		if (k[i].rank == k[i - 1].rank) {
			const struct report_port *port = &r->ports[k[i].port];

			free(k);
			return js_fail(e, p, "samples",
				       "port %s/%s reports the same counter twice from one source",
				       port->device, port->port);
		}
		r->values[k[i].value].skip = true;
	}
	free(k);
	return 0;
}

static int parse_errors(struct report *r, json_t *errors, struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "code", "where", "message", NULL };
	size_t i;
	json_t *je;
	int x;

	json_array_foreach(errors, i, je) {
		size_t a = js_path_push_key(p, "errors");
		const char *code, *where, *msg;

		js_path_push_idx(p, i);
		if (!json_is_object(je))
			return js_fail(e, p, NULL, "an error must be an object");
		if ((x = js_check_keys(je, keys, p, e)) < 0 ||
		    (x = js_req_str(je, "code", 40, false, p, &code, e)) < 0 ||
		    (x = js_opt_str(je, "where", 255, false, p, &where, e)) < 0 ||
		    (x = js_req_str(je, "message", 512, false, p, &msg, e)) < 0)
			return x;
		if (!(code[0] >= 'A' && code[0] <= 'Z'))
			return js_fail(e, p, "code", "must be an upper-case code such as SYSFS_GARBAGE");
		for (const char *c = code; *c; c++)
			if (!((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
				return js_fail(e, p, "code",
					       "must be an upper-case code such as SYSFS_GARBAGE");
		js_path_pop(p, a);
	}
	r->errors = errors;
	return 0;
}

#define MAX_CONFIG_ENTRIES 8192
#define MAX_CONFIG_KEYS 64
#define MAX_RESULTS 64

/* config.{dcqcn,pfc,ecn}[]: {device, port[, queue], name: scalar, ...}.  The values are the
 * device's; rocefabd stores them as they come and validates changes against them. */
static int parse_config(struct report *r, json_t *cfg, struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "dcqcn", "pfc", "ecn", NULL };
	int x;

	if (!json_is_object(cfg))
		return js_fail(e, p, NULL, "must be an object");
	if ((x = js_check_keys(cfg, keys, p, e)) < 0)
		return x;
	for (int k = 0; keys[k]; k++) {
		json_t *list = NULL, *it;
		size_t i;

		if ((x = js_opt_arr(cfg, keys[k], MAX_CONFIG_ENTRIES, p, &list, e)) < 0)
			return x;
		json_array_foreach(list, i, it) {
			size_t a = js_path_push_key(p, keys[k]);
			const char *dev, *port, *name;
			int64_t q;
			json_t *v;

			js_path_push_idx(p, i);
			if (!json_is_object(it))
				return js_fail(e, p, NULL, "must be an object");
			if (json_object_size(it) > MAX_CONFIG_KEYS)
				return js_fail(e, p, NULL, "more than %d members", MAX_CONFIG_KEYS);
			if ((x = js_req_str(it, "device", 64, true, p, &dev, e)) < 0 ||
			    (x = js_req_str(it, "port", 64, true, p, &port, e)) < 0)
				return x;
			if (!strcmp(keys[k], "ecn") &&
			    (x = js_req_int(it, "queue", 0, 7, p, &q, e)) < 0)
				return x;
			json_object_foreach(it, name, v) {
				if (strlen(name) > 64)
					return js_fail(e, p, NULL, "member names are at most 64 characters");
				if (!json_is_integer(v) && !json_is_real(v) && !json_is_boolean(v) &&
				    !(json_is_string(v) && strlen(json_string_value(v)) <= 64) &&
				    !json_is_null(v))
					return js_fail(e, p, name, "must be a number, a boolean or a short string");
			}
			js_path_pop(p, a);
		}
	}
	r->config = cfg;
	return 0;
}

static const char *const outcome_names[] = { "applied", "failed", "timed_out", NULL };

#define MAX_PROBE_RESULTS 4096

/* probes: {"plan": ID or "", "results": [{target, label, op, size, n, ok, lost, min_us, p50_us,
 * p99_us, max_us, mean_us, path}]} */

static int parse_probes(struct report *r, json_t *pr, struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "plan", "endpoint", "results", NULL };
	static const char *const rkeys[] = { "target", "label", "op", "size", "n", "ok", "lost", "min_us",
					     "p50_us", "p99_us", "max_us", "mean_us", "path", NULL };
	json_t *results = NULL, *it;
	size_t i;
	int x;

	if (!json_is_object(pr))
		return js_fail(e, p, NULL, "must be an object");
	if ((x = js_check_keys(pr, keys, p, e)) < 0 ||
	    (x = js_opt_arr(pr, "results", MAX_PROBE_RESULTS, p, &results, e)) < 0)
		return x;
	/* "" says: I can probe, and have no plan yet */
	if (!json_is_string(json_object_get(pr, "plan")) || strlen(json_string_value(json_object_get(pr, "plan"))) > 64)
		return js_fail(e, p, "plan", "a plan id (a string of at most 64 characters, \"\" for none)");
	r->probe_plan = json_string_value(json_object_get(pr, "plan"));
	if (json_object_get(pr, "endpoint")) {
		/* where the other hosts reach its probe server: rocefabd puts it in their plans */
		const char *ep = json_string_value(json_object_get(pr, "endpoint"));
		const char *colon = ep ? strrchr(ep, ':') : NULL;
		uint64_t port = 0;

		if (!ep || strlen(ep) > 64 || !colon || colon == ep || str_parse_uint(colon + 1, 65535, &port) < 0 ||
		    port < 1 || strpbrk(ep, " \t\"'\\/"))
			return js_fail(e, p, "endpoint", "ADDRESS:PORT of the agent's probe server");
		/* every host that probes this one connects there: not a name (each would resolve it),
		 * nor an unspecified, link-local, multicast or broadcast address.  The rest of the
		 * report is good: the endpoint is left out, and the agent's errors say why */
		if (probe_endpoint_address_ok(ep, (size_t)(colon - ep)))
			r->probe_endpoint = ep;
		else
			r->probe_endpoint_refused = ep;
	}
	json_array_foreach(results, i, it) {
		size_t a = js_path_push_key(p, "results");
		const char *s1;
		int64_t v;

		js_path_push_idx(p, i);
		if (!json_is_object(it))
			return js_fail(e, p, NULL, "must be an object");
		if ((x = js_check_keys(it, rkeys, p, e)) < 0 ||
		    (x = js_req_str(it, "target", 64, true, p, &s1, e)) < 0 ||
		    (x = js_req_int(it, "label", 0, 65535, p, &v, e)) < 0 ||
		    (x = js_req_str(it, "op", 16, true, p, &s1, e)) < 0 ||
		    (x = js_req_int(it, "size", 1, 1 << 20, p, &v, e)) < 0 ||
		    (x = js_req_int(it, "n", 0, 1000000, p, &v, e)) < 0 ||
		    (x = js_req_int(it, "ok", 0, 1000000, p, &v, e)) < 0 ||
		    (x = js_req_int(it, "lost", 0, 1000000, p, &v, e)) < 0)
			return x;
		for (const char *const *k = rkeys + 7; k < rkeys + 12; k++) {
			double d;

			if ((x = js_opt_num(it, *k, 0, 1e12, p, &d, e)) < 0)
				return x;
		}
		if (json_object_get(it, "path")) {
			json_t *path = json_object_get(it, "path"), *l;
			size_t k;

			if (!json_is_array(path) || json_array_size(path) > 32)
				return js_fail(e, p, "path", "a list of at most 32 link names");
			json_array_foreach(path, k, l)
				if (!json_is_string(l) || !js_is_id(json_string_value(l), 64))
					return js_fail(e, p, "path",
						       "a list of link names (\"a-b\" of the devices at its ends: "
						       "letters, digits, '.', '_' and '-', at most 64)");
		}
		js_path_pop(p, a);
	}
	r->probe_results = results;
	return 0;
}

#define MAX_QP_ITEMS 4096

/* A small object of names (at most 64 characters) to counts. */
static int name_counts(json_t *o, const char *key, size_t max, struct js_path *p, struct rf_err *e)
{
	json_t *m = json_object_get(o, key), *v;
	const char *k;

	if (!m)
		return 0;
	if (!json_is_object(m) || json_object_size(m) > max)
		return js_fail(e, p, key, "an object of at most %zu names and counts", max);
	json_object_foreach(m, k, v) {
		bool plain = strlen(k) <= 64 && *k;

		for (const unsigned char *c = (const unsigned char *)k; plain && *c; c++)
			plain = *c >= 0x20 && *c != 0x7f;
		if (!plain || !json_is_integer(v) || json_integer_value(v) < 0)
			return js_fail(e, p, key, "names of 1 to 64 characters without control characters, with counts");
	}
	return 0;
}

/* qps: the host's QP table, summarized (schemas/agent-report.schema.json) */
static int parse_qps(struct report *r, json_t *q, struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "total", "by_type", "by_state", "processes", "items", "truncated",
					    "entered_error", "entered_error_qps", "counters", NULL };
	static const char *const pkeys[] = { "pid", "comm", "kernel", "qps", NULL };
	static const char *const ikeys[] = { "device", "port", "lqpn", "rqpn", "type", "state", "comm", "pid",
					     "kernel", "counter_id", "counters", NULL };
	static const char *const ekeys[] = { "device", "port", "lqpn", NULL };
	static const char *const ckeys[] = { "state", "note", "bound", NULL };
	static const char *const cstates[] = { "bound", "none", "unsupported", NULL };
	json_t *procs = NULL, *items = NULL, *errs = NULL, *c, *it;
	const char *s1;
	int64_t v;
	bool b;
	size_t i;
	int x;

	if (!json_is_object(q))
		return js_fail(e, p, NULL, "must be an object");
	if ((x = js_check_keys(q, keys, p, e)) < 0 || (x = js_req_int(q, "total", 0, 100000000, p, &v, e)) < 0 ||
	    (x = name_counts(q, "by_type", 16, p, e)) < 0 || (x = name_counts(q, "by_state", 16, p, e)) < 0 ||
	    (x = js_opt_arr(q, "processes", 64, p, &procs, e)) < 0 ||
	    (x = js_opt_arr(q, "items", MAX_QP_ITEMS, p, &items, e)) < 0 ||
	    (x = js_opt_bool(q, "truncated", p, &b, e)) < 0 ||
	    (x = js_opt_int(q, "entered_error", 0, 100000000, p, &v, e)) < 0 ||
	    (x = js_opt_arr(q, "entered_error_qps", 64, p, &errs, e)) < 0)
		return x;
	json_array_foreach(procs, i, it) {
		size_t a = js_path_push_key(p, "processes");

		js_path_push_idx(p, i);
		if (!json_is_object(it))
			return js_fail(e, p, NULL, "must be an object");
		if ((x = js_check_keys(it, pkeys, p, e)) < 0 || (x = js_opt_int(it, "pid", 1, INT32_MAX, p, &v, e)) < 0 ||
		    (x = js_req_str(it, "comm", 64, false, p, &s1, e)) < 0 ||
		    (x = js_opt_bool(it, "kernel", p, &b, e)) < 0 ||
		    (x = js_req_int(it, "qps", 0, 100000000, p, &v, e)) < 0)
			return x;
		js_path_pop(p, a);
	}
	json_array_foreach(items, i, it) {
		size_t a = js_path_push_key(p, "items");

		js_path_push_idx(p, i);
		if (!json_is_object(it))
			return js_fail(e, p, NULL, "must be an object");
		if ((x = js_check_keys(it, ikeys, p, e)) < 0 || (x = js_req_str(it, "device", 64, true, p, &s1, e)) < 0 ||
		    (x = js_req_int(it, "port", 0, 65535, p, &v, e)) < 0 ||
		    (x = js_req_int(it, "lqpn", 0, 0xffffff, p, &v, e)) < 0 ||
		    (x = js_opt_int(it, "rqpn", 0, 0xffffff, p, &v, e)) < 0 ||
		    (x = js_req_str(it, "type", 16, true, p, &s1, e)) < 0 ||
		    (x = js_req_str(it, "state", 16, true, p, &s1, e)) < 0 ||
		    (x = js_req_str(it, "comm", 64, false, p, &s1, e)) < 0 ||
		    (x = js_opt_int(it, "pid", 1, INT32_MAX, p, &v, e)) < 0 ||
		    (x = js_opt_bool(it, "kernel", p, &b, e)) < 0 ||
		    (x = js_opt_int(it, "counter_id", 0, UINT32_MAX, p, &v, e)) < 0 ||
		    (x = name_counts(it, "counters", 64, p, e)) < 0)
			return x;
		js_path_pop(p, a);
	}
	json_array_foreach(errs, i, it) {
		size_t a = js_path_push_key(p, "entered_error_qps");

		js_path_push_idx(p, i);
		if (!json_is_object(it))
			return js_fail(e, p, NULL, "must be an object");
		if ((x = js_check_keys(it, ekeys, p, e)) < 0 || (x = js_req_str(it, "device", 64, true, p, &s1, e)) < 0 ||
		    (x = js_req_int(it, "port", 0, 65535, p, &v, e)) < 0 ||
		    (x = js_req_int(it, "lqpn", 0, 0xffffff, p, &v, e)) < 0)
			return x;
		js_path_pop(p, a);
	}
	if ((c = json_object_get(q, "counters"))) {
		size_t a = js_path_push_key(p, "counters");
		int st;

		if (!json_is_object(c))
			return js_fail(e, p, NULL, "must be an object");
		if ((x = js_check_keys(c, ckeys, p, e)) < 0 || (x = js_req_enum(c, "state", cstates, p, &st, e)) < 0 ||
		    (x = js_opt_str(c, "note", 256, false, p, &s1, e)) < 0 ||
		    (x = js_opt_int(c, "bound", 0, 100000000, p, &v, e)) < 0)
			return x;
		js_path_pop(p, a);
	}
	r->qps = q;
	return 0;
}

static int parse_results(struct report *r, json_t *list, struct js_path *p, struct rf_err *e)
{
	static const char *const keys[] = { "id", "outcome", "error", "previous", "values", "time_ns", NULL };
	static const char *const ekeys[] = { "code", "message", "field", NULL };
	json_t *it;
	size_t i;
	int x;

	json_array_foreach(list, i, it) {
		size_t a = js_path_push_key(p, "command_results");
		const char *id, *s1, *s2;
		int outcome;
		int64_t t;
		json_t *err;

		js_path_push_idx(p, i);
		if (!json_is_object(it))
			return js_fail(e, p, NULL, "must be an object");
		if ((x = js_check_keys(it, keys, p, e)) < 0 ||
		    (x = js_req_str(it, "id", 64, true, p, &id, e)) < 0 ||
		    (x = js_req_enum(it, "outcome", outcome_names, p, &outcome, e)) < 0 ||
		    (x = js_opt_int(it, "time_ns", MIN_TIME_NS, MAX_TIME_NS, p, &t, e)) < 0)
			return x;
		for (int k = 0; k < 2; k++) {
			json_t *v = json_object_get(it, k ? "values" : "previous");

			if (v && !json_is_object(v) && !json_is_null(v))
				return js_fail(e, p, k ? "values" : "previous", "must be an object or null");
			if (json_is_object(v) && json_object_size(v) > MAX_CONFIG_KEYS)
				return js_fail(e, p, k ? "values" : "previous", "more than %d members",
					       MAX_CONFIG_KEYS);
		}
		err = json_object_get(it, "error");
		if (err) {
			size_t b = js_path_push_key(p, "error");

			if (!json_is_object(err))
				return js_fail(e, p, NULL, "must be an object");
			if ((x = js_check_keys(err, ekeys, p, e)) < 0 ||
			    (x = js_req_str(err, "code", 40, false, p, &s1, e)) < 0 ||
			    (x = js_req_str(err, "message", 512, false, p, &s2, e)) < 0 ||
			    (x = js_opt_str(err, "field", 255, false, p, &s1, e)) < 0)
				return x;
			js_path_pop(p, b);
		} else if (outcome != 0) {
			return js_fail(e, p, "error", "a command that was not applied needs an error");
		}
		js_path_pop(p, a);
	}
	r->command_results = list;
	return 0;
}

/* The head every report has: JSON, an object, its schema, only the keys it may have, and the
 * agent it is from. */
static int parse_head(struct report *r, const char *body, size_t len, const char *const *keys, const char *what,
		      struct js_path *p, struct rf_err *e)
{
	json_t *agent;
	int64_t schema;
	size_t a;
	int x;

	r->doc = js_parse(body, len, e);
	if (!r->doc)
		return -EINVAL;
	js_path_init(p);
	if (!json_is_object(r->doc))
		return js_fail(e, p, NULL, "a %s must be a JSON object", what);
	if ((x = js_req_int(r->doc, "schema", 0, INT32_MAX, p, &schema, e)) < 0)
		return x;
	if (schema != REPORT_SCHEMA)
		return rf_err_set(e, -EINVAL, "UNSUPPORTED_SCHEMA", "/schema",
				  "%s schema %lld is not supported (this rocefabd speaks %d): %s", what,
				  (long long)schema, REPORT_SCHEMA,
				  schema > REPORT_SCHEMA ? "upgrade rocefabd before its agents (they keep their reports "
							   "until then)"
							 : "upgrade the agent");
	if ((x = js_check_keys(r->doc, keys, p, e)) < 0 || (x = js_req_obj(r->doc, "agent", p, &agent, e)) < 0)
		return x;
	a = js_path_push_key(p, "agent");
	x = parse_agent(r, agent, p, e);
	js_path_pop(p, a);
	return x;
}

int report_parse(const char *body, size_t len, const struct reg *reg, struct report **ret,
		 struct rf_err *e)
{
	static const char *const keys[] = { "schema",	 "agent",   "seq",   "time_ns", "interval_ms",
					    "inventory", "samples", "spool", "errors",	"config",
					    "command_results", "probes", "qps", NULL };
	struct report *r = calloc(1, sizeof(*r));
	json_t *inv, *samples, *spool, *errors = NULL;
	struct js_path p;
	int x;

	if (!r)
		return -ENOMEM;
	if ((x = parse_head(r, body, len, keys, "report", &p, e)) < 0)
		goto fail;
	if ((x = js_req_int(r->doc, "seq", 1, MAX_SEQ, &p, &r->seq, e)) < 0 ||
	    (x = js_req_int(r->doc, "time_ns", MIN_TIME_NS, MAX_TIME_NS, &p, &r->time_ns, e)) < 0 ||
	    (x = js_req_int(r->doc, "interval_ms", 10, 3600000, &p, &r->interval_ms, e)) < 0 ||
	    (x = js_req_obj(r->doc, "inventory", &p, &inv, e)) < 0 ||
	    (x = js_req_arr(r->doc, "samples", MAX_SAMPLES, &p, &samples, e)) < 0 ||
	    (x = js_opt_arr(r->doc, "errors", MAX_ERRORS, &p, &errors, e)) < 0)
		goto fail;
	{
		size_t a = js_path_push_key(&p, "inventory");

		x = parse_inventory(r, inv, &p, e);
		js_path_pop(&p, a);
		if (x < 0)
			goto fail;
	}
	if ((x = parse_samples(r, samples, reg, &p, e)) < 0 || (x = resolve_ranks(r, &p, e)) < 0)
		goto fail;
	spool = json_object_get(r->doc, "spool");
	if (spool) {
		static const char *const spool_keys[] = { "dropped_reports", "queued_reports", NULL };
		size_t a = js_path_push_key(&p, "spool");

		if (!json_is_object(spool)) {
			x = js_fail(e, &p, NULL, "must be an object");
			goto fail;
		}
		if ((x = js_check_keys(spool, spool_keys, &p, e)) < 0 ||
		    (x = js_opt_int(spool, "dropped_reports", 0, INT64_MAX, &p, &r->spool_dropped,
				    e)) < 0 ||
		    (x = js_opt_int(spool, "queued_reports", 0, INT64_MAX, &p, &r->spool_queued,
				    e)) < 0)
			goto fail;
		js_path_pop(&p, a);
	}
	if (errors && (x = parse_errors(r, errors, &p, e)) < 0)
		goto fail;
	if (json_object_get(r->doc, "config")) {
		size_t a = js_path_push_key(&p, "config");

		x = parse_config(r, json_object_get(r->doc, "config"), &p, e);
		js_path_pop(&p, a);
		if (x < 0)
			goto fail;
	}
	if (json_object_get(r->doc, "probes")) {
		size_t a = js_path_push_key(&p, "probes");

		x = parse_probes(r, json_object_get(r->doc, "probes"), &p, e);
		js_path_pop(&p, a);
		if (x < 0)
			goto fail;
	}
	if (json_object_get(r->doc, "qps")) {
		size_t a = js_path_push_key(&p, "qps");

		x = parse_qps(r, json_object_get(r->doc, "qps"), &p, e);
		js_path_pop(&p, a);
		if (x < 0)
			goto fail;
	}
	{
		json_t *results = NULL;

		if ((x = js_opt_arr(r->doc, "command_results", MAX_RESULTS, &p, &results, e)) < 0 ||
		    (results && (x = parse_results(r, results, &p, e)) < 0))
			goto fail;
	}
	*ret = r;
	return 0;
fail:
	report_free(r);
	return x;
}

/* --- the fast PFC lane ---------------------------------------------------------------------- */

#define MAX_PFC_SAMPLES 4096

/* A PFC report has no inventory: its ports are the samples' (device, port), grouped by device
 * in order of appearance (a device's ports contiguous, as report_parse's inventory has them).
 * Hash maps keep it linear in the samples. */
static int ports_of_samples(struct report *r, json_t *samples, struct js_path *p, struct rf_err *e)
{
	size_t n = json_array_size(samples), i;
	const char **dev = calloc(n ? n : 1, sizeof(*dev)), **port = calloc(n ? n : 1, sizeof(*port));
	uint32_t *devof = calloc(n ? n : 1, sizeof(*devof)), *count = NULL, *fill = NULL;
	char **keys = calloc(n ? n : 1, sizeof(*keys));
	struct hmap devs, seen;
	json_t *js;
	int x = -ENOMEM;

	hmap_init(&devs);
	hmap_init(&seen);
	r->devices = calloc(n ? n : 1, sizeof(*r->devices));
	r->ports = calloc(n ? n : 1, sizeof(*r->ports));
	if (!dev || !port || !devof || !keys || !r->devices || !r->ports)
		goto out;
	json_array_foreach(samples, i, js) {
		size_t a = js_path_push_key(p, "samples");
		void *hit;

		js_path_push_idx(p, i);
		if (!json_is_object(js)) {
			x = js_fail(e, p, NULL, "a sample must be an object");
			goto out;
		}
		if ((x = js_req_str(js, "device", 64, true, p, &dev[i], e)) < 0 ||
		    (x = js_req_str(js, "port", 64, true, p, &port[i], e)) < 0)
			goto out;
		x = -ENOMEM;
		js_path_pop(p, a);
		if ((hit = hmap_get(&devs, dev[i]))) {
			devof[i] = (uint32_t)((uintptr_t)hit - 1);
			continue;
		}
		if (r->ndevices == MAX_DEVICES) {
			x = rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/samples", "more than %d devices", MAX_DEVICES);
			goto out;
		}
		if (hmap_put(&devs, dev[i], (void *)(uintptr_t)(r->ndevices + 1), NULL) < 0)
			goto out;
		r->devices[r->ndevices] = (struct report_device){ .name = dev[i], .kind = "rdma" };
		devof[i] = r->ndevices++;
	}
	/* each device's distinct ports, devices in order */
	count = calloc(r->ndevices + 1, sizeof(*count));
	fill = calloc(r->ndevices + 1, sizeof(*fill));
	if (!count || !fill)
		goto out;
	for (i = 0; i < n; i++) {
		size_t dl = strlen(dev[i]), pl = strlen(port[i]);

		if (!(keys[i] = malloc(dl + pl + 2)))
			goto out;
		memcpy(keys[i], dev[i], dl);
		keys[i][dl] = '\x1f';
		memcpy(keys[i] + dl + 1, port[i], pl + 1);
		if (hmap_get(&seen, keys[i])) {
			free(keys[i]);
			keys[i] = NULL;
			continue;
		}
		if (hmap_put(&seen, keys[i], (void *)1, NULL) < 0)
			goto out;
		count[devof[i]]++;
	}
	for (uint32_t d = 0, at = 0; d < r->ndevices; d++) {
		r->devices[d].first_port = at;
		at += count[d];
	}
	for (i = 0; i < n; i++) {
		struct report_device *d;

		if (!keys[i])
			continue; /* a port seen before */
		d = &r->devices[devof[i]];
		r->ports[d->first_port + fill[devof[i]]] = (struct report_port){
			.device = dev[i], .port = port[i], .speed_mbps = -1, .mtu = -1, .device_idx = devof[i] };
		/* the map now says where the port is: parse_samples finds ports through it */
		hmap_put(&seen, keys[i], (void *)(uintptr_t)(d->first_port + fill[devof[i]] + 1), NULL);
		fill[devof[i]]++;
		d->nports++;
		r->nports++;
	}
	r->port_idx = malloc(sizeof(*r->port_idx));
	if (!r->port_idx)
		goto out;
	*r->port_idx = seen; /* it owns the keys from now on */
	hmap_init(&seen);
	memset(keys, 0, n * sizeof(*keys));
	x = 0;
out:
	for (i = 0; keys && i < n; i++)
		free(keys[i]);
	hmap_fini(&devs);
	hmap_fini(&seen);
	free(keys);
	free(count);
	free(fill);
	free(devof);
	free(dev);
	free(port);
	return x;
}

int report_parse_pfc(const char *body, size_t len, const struct reg *reg, struct report **ret,
		     struct rf_err *e)
{
	static const char *const keys[] = { "schema", "agent", "seq", "time_ns", "interval_ms", "samples", NULL };
	struct report *r = calloc(1, sizeof(*r));
	json_t *samples;
	struct js_path p;
	int x;

	if (!r)
		return -ENOMEM;
	if ((x = parse_head(r, body, len, keys, "PFC report", &p, e)) < 0)
		goto fail;
	if ((x = js_req_int(r->doc, "seq", 1, MAX_SEQ, &p, &r->seq, e)) < 0 ||
	    (x = js_req_int(r->doc, "time_ns", MIN_TIME_NS, MAX_TIME_NS, &p, &r->time_ns, e)) < 0 ||
	    (x = js_req_int(r->doc, "interval_ms", 10, 3600000, &p, &r->interval_ms, e)) < 0 ||
	    (x = js_req_arr(r->doc, "samples", MAX_PFC_SAMPLES, &p, &samples, e)) < 0 ||
	    (x = ports_of_samples(r, samples, &p, e)) < 0 ||
	    (x = parse_samples(r, samples, reg, &p, e)) < 0 || (x = resolve_ranks(r, &p, e)) < 0)
		goto fail;
	*ret = r;
	return 0;
fail:
	report_free(r);
	return x;
}
