/* Scenarios (schemas/scenario.schema.json): parameters with their defaults, the topology, and
 * the whole build of a simulation.  Every problem names the JSON pointer of the field, with the
 * code BAD_SCENARIO.  Workloads and faults are read by workload.c and fault.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/hmap.h"
#include "lib/jsonutil.h"
#include "lib/strutil.h"
#include "sim/build.h"

int sim_build_bad(struct build *b, const char *key, const char *fmt, ...)
{
	struct js_path q = b->p;
	char msg[256];
	va_list ap;

	if (key)
		js_path_push_key(&q, key);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return rf_err_set(b->e, -EINVAL, "BAD_SCENARIO", js_path_str(&q), "%s", msg);
}

/* Schema violations from the js_* helpers become BAD_SCENARIO too. */
static int rekey(struct build *b, int r)
{
	if (r < 0 && b->e)
		snprintf(b->e->code, sizeof(b->e->code), "BAD_SCENARIO");
	return r;
}

int sim_build_opt_num(struct build *b, json_t *o, const char *key, double min, double max,
		      bool excl_min, double *v)
{
	double d = *v;
	int r = js_opt_num(o, key, min, max, &b->p, &d, b->e);

	if (r < 0)
		return rekey(b, r);
	if (r > 0 && excl_min && d <= min)
		return sim_build_bad(b, key, "must be greater than %g", min);
	*v = d;
	return r;
}

int sim_build_opt_period_us(struct build *b, json_t *o, const char *key, double max, double *v)
{
	int r = sim_build_opt_num(b, o, key, 0, max, true, v);

	if (r > 0 && *v < (1 - 1e-9) / (double)PS_PER_US) /* (the schema's minimum: 0.000001) */
		return sim_build_bad(b, key, "%g us is below 1 ps (0.000001), the simulator's step", *v);
	return r;
}

int sim_build_opt_int(struct build *b, json_t *o, const char *key, int64_t min, int64_t max,
		      int64_t *v)
{
	return rekey(b, js_opt_int(o, key, min, max, &b->p, v, b->e));
}

int sim_build_opt_bool(struct build *b, json_t *o, const char *key, bool *v)
{
	return rekey(b, js_opt_bool(o, key, &b->p, v, b->e));
}

int sim_build_check_keys(struct build *b, json_t *o, const char *const *keys)
{
	if (!json_is_object(o))
		return sim_build_bad(b, NULL, "must be an object");
	return rekey(b, js_check_keys(o, keys, &b->p, b->e));
}

/* --- nodes and links --------------------------------------------------------------------- */

static struct node *node_new(struct build *b, enum node_kind kind, const char *name)
{
	struct sim *s = b->s;
	struct node *n;
	struct node **nn;

	if (hmap_get(&b->s->names, name)) {
		sim_build_bad(b, NULL, "the name '%s' is used twice", name);
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	nn = realloc(s->nodes, (s->nnodes + 1) * sizeof(*nn));
	if (!n || !nn) {
		free(n);
		return NULL;
	}
	s->nodes = nn;
	n->kind = kind;
	n->id = s->nnodes;
	str_copy(n->name, sizeof(n->name), name);
	s->nodes[s->nnodes++] = n;
	if (kind == NODE_HOST) {
		struct node **nh = realloc(s->hosts, (s->nhosts + 1) * sizeof(*nh));

		if (!nh)
			return NULL;
		s->hosts = nh;
		n->hid = s->nhosts;
		s->hosts[s->nhosts++] = n;
	}
	if (hmap_put(&b->s->names, n->name, n, NULL) < 0)
		return NULL;
	return n;
}

static struct port *port_new(struct sim *s, struct node *n)
{
	struct port *p = calloc(1, sizeof(*p));
	struct port **np = realloc(n->ports, (n->nports + 1) * sizeof(*np));
	struct port **sp = realloc(s->ports, (s->nports + 1) * sizeof(*sp));

	if (!p || !np || !sp) {
		free(p);
		return NULL;
	}
	n->ports = np;
	s->ports = sp;
	p->node = n;
	p->idx = n->nports;
	p->gid = s->nports;
	n->ports[n->nports++] = p;
	s->ports[s->nports++] = p;
	sim_port_init(p);
	return p;
}

static int link_new(struct build *b, struct node *a, struct node *z, double gbps, double delay_ns)
{
	struct sim *s = b->s;
	struct link *l, **nl;
	struct port *pa, *pz;

	if (a->kind == NODE_HOST && a->nports)
		return sim_build_bad(b, NULL, "host %s has a link already (hosts have one port)",
				     a->name);
	if (z->kind == NODE_HOST && z->nports)
		return sim_build_bad(b, NULL, "host %s has a link already (hosts have one port)",
				     z->name);
	if (a == z)
		return sim_build_bad(b, NULL, "a link from %s to itself", a->name);
	l = calloc(1, sizeof(*l));
	nl = realloc(s->links, (s->nlinks + 1) * sizeof(*nl));
	if (nl)
		s->links = nl;
	if (!l || !nl) {
		free(l);
		return -ENOMEM;
	}
	pa = port_new(s, a);
	pz = port_new(s, z);
	if (!pa || !pz) {
		free(l);
		return -ENOMEM;
	}
	l->a = pa;
	l->b = pz;
	l->up = true;
	snprintf(l->name, sizeof(l->name), "%s-%s", a->name, z->name);
	s->links[s->nlinks++] = l;
	for (int i = 0; i < 2; i++) {
		struct port *p = i ? pz : pa;

		p->peer = i ? pa : pz;
		p->link = l;
		p->rate_bps = (uint64_t)llround(gbps * 1e9);
		p->delay = (simtime_t)llround(delay_ns * PS_PER_NS);
		str_copy(p->name, sizeof(p->name), p->peer->node->name);
	}
	return 0;
}

struct node *sim_build_find_node(struct build *b, const char *name)
{
	return hmap_get(&b->s->names, name);
}

struct node *sim_build_resolve_host(struct build *b, json_t *ref, const char *key)
{
	struct node *n = NULL;

	if (json_is_integer(ref)) {
		json_int_t i = json_integer_value(ref);

		if (i >= 0 && (uint64_t)i < b->s->nhosts)
			return b->s->hosts[i];
		sim_build_bad(b, key, "host index %lld is out of range (the fabric has %u hosts)",
			      (long long)i, b->s->nhosts);
		return NULL;
	}
	if (!ref) {
		sim_build_bad(b, key, "required field is missing (a host's name or index)");
		return NULL;
	}
	if (!json_is_string(ref)) {
		sim_build_bad(b, key, "a host is a name or an index");
		return NULL;
	}
	n = sim_build_find_node(b, json_string_value(ref));
	if (!n || n->kind != NODE_HOST) {
		sim_build_bad(b, key, "no host named %s", json_string_value(ref));
		return NULL;
	}
	return n;
}

struct link *sim_build_resolve_link(struct build *b, json_t *ref, const char *key)
{
	const char *an = NULL, *bn = NULL;
	char buf[80];

	if (json_is_string(ref)) {
		const char *dash;

		if (str_copy(buf, sizeof(buf), json_string_value(ref)) == 0 && (dash = strchr(buf, '-'))) {
			buf[dash - buf] = '\0';
			an = buf;
			bn = buf + (dash - buf) + 1;
		}
	} else if (json_is_object(ref)) {
		an = js_str(ref, "a", NULL);
		bn = js_str(ref, "b", NULL);
	}
	if (an && bn) {
		for (uint32_t i = 0; i < b->s->nlinks; i++) {
			struct link *l = b->s->links[i];
			const char *x = l->a->node->name, *y = l->b->node->name;

			if ((!strcmp(x, an) && !strcmp(y, bn)) || (!strcmp(x, bn) && !strcmp(y, an)))
				return l;
		}
	}
	sim_build_bad(b, key,
		      "no such link (name it A-B with the two nodes' names, e.g. leaf0-spine1)");
	return NULL;
}

/* --- parameters ------------------------------------------------------------------------------ */

static int prio_mask(struct build *b, json_t *o, const char *key, uint8_t *mask)
{
	json_t *arr = NULL, *v;
	size_t i;
	int r = rekey(b, js_opt_arr(o, key, 8, &b->p, &arr, b->e));

	if (r <= 0)
		return r;
	*mask = 0;
	json_array_foreach(arr, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 7) {
			size_t a = js_path_push_key(&b->p, key);
			int x;

			js_path_push_idx(&b->p, i);
			x = sim_build_bad(b, NULL, "a priority is an integer 0..7");
			js_path_pop(&b->p, a);
			return x;
		}
		*mask |= (uint8_t)(1u << json_integer_value(v));
	}
	return 0;
}

int sim_build_parse_pfc(struct build *b, json_t *x, struct sim_pfc_cfg *c)
{
	static const char *const pfc_keys[] = { "priorities",	    "threshold",      "alpha_shift",
						"xoff_bytes",	    "xon_offset_bytes", "headroom_bytes",
						"quanta",	    NULL };
	int64_t v;
	int r;

	if ((r = sim_build_check_keys(b, x, pfc_keys)) < 0 ||
	    (r = prio_mask(b, x, "priorities", &c->enabled)) < 0)
		return r;
	if (json_object_get(x, "threshold")) {
		static const char *const th[] = { "dynamic", "static", NULL };
		int i;

		if ((r = rekey(b, js_req_enum(x, "threshold", th, &b->p, &i, b->e))) < 0)
			return r;
		c->dynamic = i == 0;
	}
	v = c->alpha_shift;
	if ((r = sim_build_opt_int(b, x, "alpha_shift", -8, 8, &v)) < 0)
		return r;
	c->alpha_shift = (int)v;
	v = (int64_t)c->xoff_bytes;
	if ((r = sim_build_opt_int(b, x, "xoff_bytes", 1, INT64_MAX, &v)) < 0)
		return r;
	c->xoff_bytes = (uint64_t)v;
	v = (int64_t)c->xon_offset_bytes;
	if ((r = sim_build_opt_int(b, x, "xon_offset_bytes", 0, INT64_MAX, &v)) < 0)
		return r;
	c->xon_offset_bytes = (uint64_t)v;
	v = (int64_t)c->headroom_bytes;
	if ((r = sim_build_opt_int(b, x, "headroom_bytes", 0, INT64_MAX, &v)) < 0)
		return r;
	c->headroom_bytes = (uint64_t)v;
	v = c->quanta;
	if ((r = sim_build_opt_int(b, x, "quanta", 1, 65535, &v)) < 0)
		return r;
	c->quanta = (uint16_t)v;
	if (!c->dynamic && !c->xoff_bytes)
		return sim_build_bad(b, "threshold", "a static threshold needs xoff_bytes");
	if (!c->dynamic && c->xon_offset_bytes >= c->xoff_bytes)
		return sim_build_bad(b, "xon_offset_bytes",
				     "XON (xoff_bytes - xon_offset_bytes) must be above 0");
	return 0;
}

int sim_build_parse_ecn(struct build *b, json_t *x, struct sim_ecn_cfg *c)
{
	static const char *const ecn_keys[] = { "enabled", "kmin_bytes", "kmax_bytes", "pmax", NULL };
	int64_t v;
	int r;

	if ((r = sim_build_check_keys(b, x, ecn_keys)) < 0 ||
	    (r = rekey(b, js_opt_bool(x, "enabled", &b->p, &c->enabled, b->e))) < 0)
		return r;
	v = (int64_t)c->kmin_bytes;
	if ((r = sim_build_opt_int(b, x, "kmin_bytes", 0, INT64_MAX, &v)) < 0)
		return r;
	c->kmin_bytes = (uint64_t)v;
	v = (int64_t)c->kmax_bytes;
	if ((r = sim_build_opt_int(b, x, "kmax_bytes", 1, INT64_MAX, &v)) < 0)
		return r;
	c->kmax_bytes = (uint64_t)v;
	if ((r = sim_build_opt_num(b, x, "pmax", 0, 1, false, &c->pmax)) < 0)
		return r;
	if (c->kmin_bytes >= c->kmax_bytes) {
		r = sim_build_bad(b, "kmin_bytes", "Kmin (%llu) must be below Kmax (%llu)",
				  (unsigned long long)c->kmin_bytes,
				  (unsigned long long)c->kmax_bytes);
		snprintf(b->e->code, sizeof(b->e->code), "%s", b->runtime ? "BAD_THRESHOLD_ORDER" : "BAD_SCENARIO");
		return r;
	}
	return 0;
}

static int parse_switch(struct build *b, json_t *o, struct sim_switch_cfg *c)
{
	static const char *const keys[] = { "buffer_bytes", "reserve_bytes", "scheduling", "weights",
					    "pfc", "ecn", NULL };
	int64_t v;
	json_t *x;
	int r;

	if (!o)
		return 0;
	if ((r = sim_build_check_keys(b, o, keys)) < 0)
		return r;
	v = (int64_t)c->buffer_bytes;
	if ((r = sim_build_opt_int(b, o, "buffer_bytes", 1024, INT64_MAX, &v)) < 0)
		return r;
	c->buffer_bytes = (uint64_t)v;
	v = (int64_t)c->reserve_bytes;
	if ((r = sim_build_opt_int(b, o, "reserve_bytes", 0, INT64_MAX, &v)) < 0)
		return r;
	c->reserve_bytes = (uint64_t)v;
	if (json_object_get(o, "scheduling")) {
		static const char *const sch[] = { "strict", "dwrr", NULL };
		int i;

		if ((r = rekey(b, js_req_enum(o, "scheduling", sch, &b->p, &i, b->e))) < 0)
			return r;
		c->strict = i == 0;
	}
	if ((x = json_object_get(o, "weights"))) {
		size_t i;
		json_t *w;

		if (!json_is_array(x) || json_array_size(x) != 6)
			return sim_build_bad(b, "weights", "six weights, for priorities 0 to 5");
		json_array_foreach(x, i, w) {
			if (!json_is_integer(w) || json_integer_value(w) < 1 || json_integer_value(w) > 100) {
				size_t a = js_path_push_key(&b->p, "weights");

				js_path_push_idx(&b->p, i);
				r = sim_build_bad(b, NULL, "a weight is an integer 1..100");
				js_path_pop(&b->p, a);
				return r;
			}
			c->weights[i] = (uint8_t)json_integer_value(w);
		}
	}
	if ((x = json_object_get(o, "pfc"))) {
		size_t a = js_path_push_key(&b->p, "pfc");

		r = sim_build_parse_pfc(b, x, &c->pfc);
		js_path_pop(&b->p, a);
		if (r < 0)
			return r;
	}
	if ((x = json_object_get(o, "ecn"))) {
		size_t a = js_path_push_key(&b->p, "ecn");

		r = sim_build_parse_ecn(b, x, &c->ecn);
		js_path_pop(&b->p, a);
		if (r < 0)
			return r;
	}
	return 0;
}

int sim_build_parse_dcqcn(struct build *b, json_t *d, struct sim_nic_cfg *c)
{
	static const char *const dk[] = {
		"rpg_time_reset_us",   "rpg_byte_reset",	"rpg_threshold",
		"rpg_ai_rate_mbps",    "rpg_hai_rate_mbps",	"rpg_min_rate_mbps",
		"rpg_max_rate_mbps",   "rpg_gd",		"rpg_min_dec_fac",
		"dce_tcp_g",	       "dce_tcp_rtt_us",	"rate_reduce_monitor_period_us",
		"initial_alpha_value", "rate_to_set_on_first_cnp_mbps", "min_time_between_cnps_us",
		"cnp_per_port",	       "clamp_tgt_rate",	"clamp_tgt_rate_ati",
		"cnp_prio",	       NULL,
	};
	int64_t v;
	bool bv;
	int r;

#define NUM(k, lo, hi, ex, f)                                                                      \
	if (r == 0)                                                                                \
		r = sim_build_opt_num(b, d, k, lo, hi, ex, &c->f) < 0 ? -EINVAL : 0;
#define INT(k, lo, hi, f)                                                                          \
	if (r == 0) {                                                                              \
		v = (int64_t)c->f;                                                                 \
		r = sim_build_opt_int(b, d, k, lo, hi, &v) < 0 ? -EINVAL : 0;                      \
		c->f = (typeof(c->f))v;                                                            \
	}
#define BOOL(k, f)                                                                                 \
	if (r == 0) {                                                                              \
		bv = c->f;                                                                         \
		r = rekey(b, js_opt_bool(d, k, &b->p, &bv, b->e)) < 0 ? -EINVAL : 0;               \
		c->f = bv;                                                                         \
	}
	r = sim_build_check_keys(b, d, dk) < 0 ? -EINVAL : 0;
	NUM("rpg_time_reset_us", 1, 131071, false, rpg_time_reset_us)
	INT("rpg_byte_reset", 1, INT64_MAX, rpg_byte_reset)
	INT("rpg_threshold", 1, 31, rpg_threshold)
	NUM("rpg_ai_rate_mbps", 0, 1e7, true, rpg_ai_rate_mbps)
	NUM("rpg_hai_rate_mbps", 0, 1e7, true, rpg_hai_rate_mbps)
	NUM("rpg_min_rate_mbps", 0, 1e7, true, rpg_min_rate_mbps)
	NUM("rpg_max_rate_mbps", 0, 1e7, false, rpg_max_rate_mbps)
	INT("rpg_gd", 10, 20, rpg_gd)
	INT("rpg_min_dec_fac", 0, 100, rpg_min_dec_fac)
	INT("dce_tcp_g", 0, 1023, dce_tcp_g)
	NUM("dce_tcp_rtt_us", 0, 1e6, false, dce_tcp_rtt_us)
	NUM("rate_reduce_monitor_period_us", 0, 1e9, false, rate_reduce_monitor_period_us)
	INT("initial_alpha_value", 1, 1024, initial_alpha_value)
	NUM("rate_to_set_on_first_cnp_mbps", 0, 1e7, false, rate_to_set_on_first_cnp_mbps)
	NUM("min_time_between_cnps_us", 0, 4095, false, min_time_between_cnps_us)
	BOOL("cnp_per_port", cnp_per_port)
	BOOL("clamp_tgt_rate", clamp_tgt_rate)
	BOOL("clamp_tgt_rate_ati", clamp_tgt_rate_ati)
	INT("cnp_prio", 0, 7, cnp_prio)
#undef NUM
#undef INT
#undef BOOL
	return r;
}

static int parse_nic(struct build *b, json_t *o, struct sim_nic_cfg *c)
{
	static const char *const keys[] = { "cc", "dcqcn", "ack_interval", "rto_us", "nak_interval_us",
					    "pfc_priorities", NULL };
	int64_t v;
	json_t *d;
	int r;

	if (!o)
		return 0;
	if ((r = sim_build_check_keys(b, o, keys)) < 0)
		return r;
	if (json_object_get(o, "cc")) {
		static const char *const cc[] = { "dcqcn", "none", NULL };
		int i;

		if ((r = rekey(b, js_req_enum(o, "cc", cc, &b->p, &i, b->e))) < 0)
			return r;
		c->dcqcn = i == 0;
	}
	v = c->ack_interval;
	if ((r = sim_build_opt_int(b, o, "ack_interval", 1, 1024, &v)) < 0)
		return r;
	c->ack_interval = (uint32_t)v;
	if ((r = sim_build_opt_num(b, o, "rto_us", 1, 1e9, false, &c->rto_us)) < 0 ||
	    (r = sim_build_opt_num(b, o, "nak_interval_us", 0, 1e9, false,
				   &c->nak_interval_us)) < 0 ||
	    (r = prio_mask(b, o, "pfc_priorities", &c->pfc_enabled)) < 0)
		return r;
	if ((d = json_object_get(o, "dcqcn"))) {
		size_t a = js_path_push_key(&b->p, "dcqcn");

		r = sim_build_parse_dcqcn(b, d, c);
		js_path_pop(&b->p, a);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The defaults: ../shared/reference/rdma-fabric-facts.md (NVIDIA NIC defaults §3.2, HPCC
 * artifact ECN thresholds at 100G §4.2, HPCC buffer model §4.3). */
static void defaults(struct sim_params *p)
{
	*p = (struct sim_params){
		.seed = 1,
		.mtu = 1000,
		.sample_ps = 10 * PS_PER_US,
		.sw = { .buffer_bytes = 32u << 20,
			.reserve_bytes = 0,
			.pfc = { .enabled = 1u << 3, .dynamic = true, .alpha_shift = -3,
				 .xoff_bytes = 0, .xon_offset_bytes = 3 * 1024, .headroom_bytes = 0,
				 .quanta = 65535 },
			.ecn = { .enabled = true, .kmin_bytes = 400000, .kmax_bytes = 1600000,
				 .pmax = 0.2 },
			.strict = true },
		.nic = { .dcqcn = true,
			 .rpg_time_reset_us = 300,
			 .rpg_byte_reset = 32767,
			 .rpg_threshold = 1,
			 .rpg_ai_rate_mbps = 5,
			 .rpg_hai_rate_mbps = 50,
			 .rpg_min_rate_mbps = 1,
			 .rpg_max_rate_mbps = 0,
			 .rpg_gd = 11,
			 .rpg_min_dec_fac = 50,
			 .dce_tcp_g = 1019,
			 .dce_tcp_rtt_us = 1,
			 .rate_reduce_monitor_period_us = 4,
			 .initial_alpha_value = 1023,
			 .rate_to_set_on_first_cnp_mbps = 0,
			 .min_time_between_cnps_us = 4,
			 .cnp_per_port = true,
			 .clamp_tgt_rate = false,
			 .clamp_tgt_rate_ati = true,
			 .cnp_prio = 6,
			 .ack_interval = 4,
			 .rto_us = 1000,
			 .nak_interval_us = 500,
			 .pfc_enabled = 1u << 3 },
	};
}

/* --- topology ---------------------------------------------------------------------------------- */

static int parse_link_cfg(struct build *b, json_t *o, const char *key, double *gbps, double *delay)
{
	static const char *const keys[] = { "rate_gbps", "delay_ns", NULL };
	size_t a = js_path_push_key(&b->p, key);
	json_t *x = json_object_get(o, key);
	int r;

	*delay = 1000;
	if (!x)
		r = sim_build_bad(b, NULL, "required field is missing");
	else if ((r = sim_build_check_keys(b, x, keys)) == 0 &&
		 (r = sim_build_opt_num(b, x, "rate_gbps", 0, 1600, true, gbps)) >= 0 &&
		 (r = sim_build_opt_num(b, x, "delay_ns", 0, 1e9, false, delay)) >= 0) {
		r = json_object_get(x, "rate_gbps")
			    ? 0
			    : sim_build_bad(b, "rate_gbps", "required field is missing");
	}
	js_path_pop(&b->p, a);
	return r < 0 ? r : 0;
}

static int leaf_spine(struct build *b, json_t *t)
{
	static const char *const keys[] = { "type", "spines", "leaves", "hosts_per_leaf",
					    "host_link", "fabric_link", NULL };
	int64_t spines = 0, leaves = 0, hpl = 0;
	double hr = 0, hd, fr = 0, fd;
	char name[32];
	struct node **lv, **sp;
	int r;

	if ((r = sim_build_check_keys(b, t, keys)) < 0 ||
	    (r = rekey(b, js_req_int(t, "spines", 1, 1024, &b->p, &spines, b->e))) < 0 ||
	    (r = rekey(b, js_req_int(t, "leaves", 1, 1024, &b->p, &leaves, b->e))) < 0 ||
	    (r = rekey(b, js_req_int(t, "hosts_per_leaf", 1, 1024, &b->p, &hpl, b->e))) < 0 ||
	    (r = parse_link_cfg(b, t, "host_link", &hr, &hd)) < 0 ||
	    (r = parse_link_cfg(b, t, "fabric_link", &fr, &fd)) < 0)
		return r;
	if (leaves * hpl > 65535)
		return sim_build_bad(b, "hosts_per_leaf", "at most 65535 hosts");
	lv = calloc((size_t)leaves, sizeof(*lv));
	sp = calloc((size_t)spines, sizeof(*sp));
	if (!lv || !sp) {
		free(lv);
		free(sp);
		return -ENOMEM;
	}
	/* hosts first, so that host i is h<i> and hosts index like names */
	for (int64_t i = 0; i < leaves * hpl && r == 0; i++) {
		snprintf(name, sizeof(name), "h%lld", (long long)i);
		r = node_new(b, NODE_HOST, name) ? 0 : -ENOMEM;
	}
	for (int64_t i = 0; i < leaves && r == 0; i++) {
		snprintf(name, sizeof(name), "leaf%lld", (long long)i);
		r = (lv[i] = node_new(b, NODE_SWITCH, name)) ? 0 : -ENOMEM;
	}
	for (int64_t i = 0; i < spines && r == 0; i++) {
		snprintf(name, sizeof(name), "spine%lld", (long long)i);
		r = (sp[i] = node_new(b, NODE_SWITCH, name)) ? 0 : -ENOMEM;
	}
	for (int64_t i = 0; i < leaves * hpl && r == 0; i++)
		r = link_new(b, b->s->hosts[i], lv[i / hpl], hr, hd);
	for (int64_t l = 0; l < leaves && r == 0; l++)
		for (int64_t k = 0; k < spines && r == 0; k++)
			r = link_new(b, lv[l], sp[k], fr, fd);
	free(lv);
	free(sp);
	return r;
}

/* Every host reaches every other through the links: a flow between two pieces of the fabric
 * would never end (its packets dropped at the first switch, counted as buffer drops). */
static int connected(struct build *b)
{
	struct sim *s = b->s;
	uint32_t *queue = calloc(s->nnodes ? s->nnodes : 1, sizeof(*queue)), n = 0;
	bool *seen = calloc(s->nnodes ? s->nnodes : 1, sizeof(*seen));
	int r = 0;

	if (!queue || !seen) {
		r = rf_err_set(b->e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
		goto out;
	}
	if (!s->nhosts)
		goto out;
	queue[n++] = s->hosts[0]->id;
	seen[s->hosts[0]->id] = true;
	for (uint32_t i = 0; i < n; i++) {
		const struct node *x = s->nodes[queue[i]];

		for (uint16_t p = 0; p < x->nports; p++) {
			const struct port *peer = x->ports[p]->peer;

			if (peer && !seen[peer->node->id]) {
				seen[peer->node->id] = true;
				queue[n++] = peer->node->id;
			}
		}
	}
	for (uint32_t h = 1; h < s->nhosts; h++)
		if (!seen[s->hosts[h]->id]) {
			size_t a = js_path_push_key(&b->p, "links");

			r = sim_build_bad(b, NULL, "host %s cannot reach host %s: no path of links joins them (the "
						   "fabric is in pieces)", s->hosts[0]->name, s->hosts[h]->name);
			js_path_pop(&b->p, a);
			break;
		}
out:
	free(queue);
	free(seen);
	return r;
}

static int explicit_topology(struct build *b, json_t *t)
{
	static const char *const keys[] = { "type", "hosts", "switches", "links", NULL };
	static const char *const lk[] = { "a", "b", "rate_gbps", "delay_ns", NULL };
	json_t *hosts, *sws, *links, *v;
	size_t i;
	int r;

	if ((r = sim_build_check_keys(b, t, keys)) < 0 ||
	    (r = rekey(b, js_req_arr(t, "hosts", 65535, &b->p, &hosts, b->e))) < 0 ||
	    (r = rekey(b, js_req_arr(t, "switches", 65535, &b->p, &sws, b->e))) < 0 ||
	    (r = rekey(b, js_req_arr(t, "links", 1 << 20, &b->p, &links, b->e))) < 0)
		return r;
	if (!json_array_size(hosts)) /* (a fabric of nothing ran, and said it carried nothing) */
		return sim_build_bad(b, "hosts", "name at least one host");
	for (int pass = 0; pass < 2; pass++) {
		json_t *arr = pass ? sws : hosts;

		json_array_foreach(arr, i, v) {
			size_t a = js_path_push_key(&b->p, pass ? "switches" : "hosts");
			const char *n = json_string_value(v);

			js_path_push_idx(&b->p, i);
			if (!n || !js_is_id(n, 31))
				r = sim_build_bad(
					b, NULL,
					"a name uses letters, digits, '.', '_', '-' (at most 31)");
			else if (!node_new(b, pass ? NODE_SWITCH : NODE_HOST, n))
				r = b->e && b->e->err ? b->e->err : -ENOMEM;
			js_path_pop(&b->p, a);
			if (r < 0)
				return r;
		}
	}
	json_array_foreach(links, i, v) {
		size_t a = js_path_push_key(&b->p, "links");
		double gbps = 0, delay = 1000;
		struct node *x, *z;

		js_path_push_idx(&b->p, i);
		if ((r = sim_build_check_keys(b, v, lk)) < 0 ||
		    (r = sim_build_opt_num(b, v, "rate_gbps", 0, 1600, true, &gbps)) < 0 ||
		    (r = sim_build_opt_num(b, v, "delay_ns", 0, 1e9, false, &delay)) < 0) {
			js_path_pop(&b->p, a);
			return r;
		}
		x = sim_build_find_node(b, js_str(v, "a", ""));
		z = sim_build_find_node(b, js_str(v, "b", ""));
		if (!gbps)
			r = sim_build_bad(b, "rate_gbps", "required field is missing");
		else if (!x)
			r = sim_build_bad(b, "a", "no node named '%s'", js_str(v, "a", ""));
		else if (!z)
			r = sim_build_bad(b, "b", "no node named '%s'", js_str(v, "b", ""));
		else
			r = link_new(b, x, z, gbps, delay);
		js_path_pop(&b->p, a);
		if (r < 0)
			return r;
	}
	for (uint32_t h = 0; h < b->s->nhosts; h++) {
		if (!b->s->hosts[h]->nports) {
			size_t a = js_path_push_key(&b->p, "hosts");

			js_path_push_idx(&b->p, h);
			r = sim_build_bad(b, NULL, "host %s has no link", b->s->hosts[h]->name);
			js_path_pop(&b->p, a);
			return r;
		}
	}
	return connected(b);
}

static int topology(struct build *b, json_t *t)
{
	static const char *const types[] = { "leaf_spine", "explicit", NULL };
	size_t a = js_path_push_key(&b->p, "topology");
	int type, r;

	if (!json_is_object(t))
		r = sim_build_bad(b, NULL, "must be an object");
	else if ((r = rekey(b, js_req_enum(t, "type", types, &b->p, &type, b->e))) == 0)
		r = type == 0 ? leaf_spine(b, t) : explicit_topology(b, t);
	js_path_pop(&b->p, a);
	return r;
}

/* --- the build --------------------------------------------------------------------------------- */

int sim_build(struct sim *s, json_t *doc, const char *base_dir, int64_t seed, int64_t until,
	      struct rf_err *e)
{
	static const char *const keys[] = { "schema", "name",	   "description", "seed",
					    "until_us", "mtu_bytes", "sample_us",   "topology",
					    "switch", "nic",	     "workloads",   "faults",
					    "serve",  NULL };
	struct build b = { .s = s, .doc = doc, .base_dir = base_dir, .e = e };
	double until_us = 0, sample_us = 10;
	int64_t v, schema;
	int r;

	js_path_init(&b.p);
	defaults(&s->p);
	sim_port_register(s);
	if (!json_is_object(doc)) {
		r = sim_build_bad(&b, NULL, "a scenario is a JSON object");
		goto out;
	}
	if ((r = rekey(&b, js_req_int(doc, "schema", 1, 1, &b.p, &schema, e))) < 0 ||
	    (r = sim_build_check_keys(&b, doc, keys)) < 0 ||
	    (r = rekey(&b, js_opt_str(doc, "name", 128, false, &b.p, &(const char *){ NULL }, e))) < 0 ||
	    (r = rekey(&b, js_opt_str(doc, "description", 65536, false, &b.p, &(const char *){ NULL }, e))) < 0)
		goto out;
	v = (int64_t)s->p.seed;
	if ((r = sim_build_opt_int(&b, doc, "seed", 0, INT64_MAX, &v)) < 0)
		goto out;
	s->p.seed = (uint64_t)(seed >= 0 ? seed : v);
	v = s->p.mtu;
	if ((r = sim_build_opt_int(&b, doc, "mtu_bytes", 256, 9000, &v)) < 0)
		goto out;
	s->p.mtu = (uint32_t)v;
	if ((r = sim_build_opt_period_us(&b, doc, "until_us", 1e9, &until_us)) < 0 ||
	    (r = sim_build_opt_period_us(&b, doc, "sample_us", 1e9, &sample_us)) < 0)
		goto out;
	s->p.until_ps = until >= 0 ? until : (int64_t)llround(until_us * PS_PER_US);
	s->p.sample_ps = (int64_t)llround(sample_us * PS_PER_US);
	if (json_object_get(doc, "serve")) {
		static const char *const sk[] = { "pace", NULL };
		json_t *sv = json_object_get(doc, "serve");
		size_t a = js_path_push_key(&b.p, "serve");

		r = sim_build_check_keys(&b, sv, sk);
		if (r == 0)
			r = sim_build_opt_num(&b, sv, "pace", 0, 1000, true, &s->p.serve_pace) < 0
				    ? -EINVAL
				    : 0;
		js_path_pop(&b.p, a);
		if (r < 0)
			goto out;
	}
	{
		size_t a = js_path_push_key(&b.p, "switch");

		r = parse_switch(&b, json_object_get(doc, "switch"), &s->p.sw);
		js_path_pop(&b.p, a);
		if (r < 0)
			goto out;
		a = js_path_push_key(&b.p, "nic");
		r = parse_nic(&b, json_object_get(doc, "nic"), &s->p.nic);
		js_path_pop(&b.p, a);
		if (r < 0)
			goto out;
	}
	s->rng[0] = hash_mix64(s->p.seed);
	s->rng[1] = hash_mix64(s->rng[0]);
	s->rng[2] = hash_mix64(s->rng[1]);
	s->rng[3] = hash_mix64(s->rng[2]);
	if (!json_object_get(doc, "topology")) {
		r = sim_build_bad(&b, "topology", "required field is missing");
		goto out;
	}
	if ((r = topology(&b, json_object_get(doc, "topology"))) < 0)
		goto out;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct node *n = s->nodes[i];

		if (n->kind == NODE_SWITCH) {
			if ((r = sim_switch_init(s, n, &s->p.sw)) < 0) {
				size_t a = js_path_push_key(&b.p, "switch");

				r = sim_build_bad(&b, "buffer_bytes", "%s", s->err);
				js_path_pop(&b.p, a);
				goto out;
			}
		} else {
			sim_nic_init(s, n, &s->p.nic);
		}
	}
	sim_switch_routes(s);
	if ((r = sim_build_workloads(&b, json_object_get(doc, "workloads"))) < 0 ||
	    (r = sim_build_faults(&b, json_object_get(doc, "faults"))) < 0)
		goto out;
	if (s->p.until_ps <= 0 && !s->nflows && !s->ngens) {
		r = sim_build_bad(&b, "until_us", "a scenario without flows needs until_us");
		goto out;
	}
	r = 0;
out:
	return r;
}
