/* Faults, at given times or injected while running:
 *   link_down       the link is down from at_us (until until_us); routes converge at once
 *   link_flap       down and up again every period_us/2, count times
 *   lossy_link      each packet on the link is lost with probability loss
 *   pause_storm     the host's NIC pauses its switch port continuously (stalled receive pipeline)
 *   slow_receiver   the host's receive pipeline drains at rate_gbps; its NIC sends PFC when full
 *   route_override  switches forward a destination to a given neighbour, e.g. into a loop that
 *                   creates a cyclic buffer dependency.  As in a real fabric the deadlock it
 *                   causes does not clear by itself when the routes are restored; clearing the
 *                   fault also discards the packets waiting on the overridden ports for those
 *                   destinations, as an operator or a PFC watchdog would. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/build.h"

#define FAULTS_MAX 4096

enum fault_type { F_LINK_DOWN, F_LINK_FLAP, F_LOSSY, F_STORM, F_SLOW_RX, F_ROUTE };

struct fault {
	int id;
	enum fault_type type;
	struct link *link;
	struct node *host;
	uint8_t prio;
	double loss, saved_loss, rate_bps;
	struct override_spec {
		struct node *sw;
		uint32_t dst;
		uint16_t port;
	} *routes;
	uint32_t nroutes;
	simtime_t at, until, period;
	uint32_t count, toggles;
	json_t *spec; /* as given, for listings */
	bool cleared;
	bool active;
	struct timer t_on, t_off;
};

static void set_link(struct sim *s, struct link *l, bool up)
{
	if (l->up == up)
		return;
	l->up = up;
	l->a->c.carrier_changes++;
	l->b->c.carrier_changes++;
	if (!up) {
		sim_port_link_down(s, l->a);
		sim_port_link_down(s, l->b);
	}
	sim_switch_routes(s);
	if (up) {
		sim_port_kick(s, l->a);
		sim_port_kick(s, l->b);
	}
}

static void apply(struct sim *s, struct fault *f)
{
	f->active = true;
	switch (f->type) {
	case F_LINK_DOWN:
	case F_LINK_FLAP:
		set_link(s, f->link, false);
		break;
	case F_LOSSY:
		f->saved_loss = f->link->loss;
		f->link->loss = f->loss;
		break;
	case F_STORM:
		sim_nic_set_storm(s, f->host, true, f->prio);
		break;
	case F_SLOW_RX:
		sim_nic_set_rx_rate(s, f->host, f->rate_bps);
		break;
	case F_ROUTE:
		for (uint32_t i = 0; i < f->nroutes; i++) {
			struct swtch *sw = &f->routes[i].sw->sw;
			struct override *n = realloc(sw->ov, (sw->nov + 1) * sizeof(*n));

			if (!n)
				abort();
			sw->ov = n;
			sw->ov[sw->nov++] = (struct override){ .dst = f->routes[i].dst,
							       .port = f->routes[i].port,
							       .fault = (uint32_t)f->id };
		}
		break;
	}
}

static void clear(struct sim *s, struct fault *f)
{
	if (!f->active)
		return;
	f->active = false;
	switch (f->type) {
	case F_LINK_DOWN:
	case F_LINK_FLAP:
		set_link(s, f->link, true);
		break;
	case F_LOSSY:
		f->link->loss = f->saved_loss;
		break;
	case F_STORM:
		sim_nic_set_storm(s, f->host, false, f->prio);
		break;
	case F_SLOW_RX:
		sim_nic_set_rx_rate(s, f->host, 0);
		break;
	case F_ROUTE:
		for (uint32_t i = 0; i < f->nroutes; i++) {
			struct node *n = f->routes[i].sw;
			struct swtch *sw = &n->sw;
			struct port *p = n->ports[f->routes[i].port];
			uint32_t k = 0;

			for (uint32_t j = 0; j < sw->nov; j++)
				if (sw->ov[j].fault != (uint32_t)f->id)
					sw->ov[k++] = sw->ov[j];
			sw->nov = k;
			/* discard what loops: packets for the overridden destination on that port */
			for (int pr = 0; pr < NPRIO; pr++) {
				struct queue keep = p->q[pr];
				struct pkt *pk, *next;

				memset(&p->q[pr], 0, sizeof(p->q[pr]));
				p->q[pr].last_change = s->now;
				p->q[pr].area = keep.area;
				p->q[pr].max_bytes = keep.max_bytes;
				for (pk = keep.head; pk; pk = next) {
					next = pk->next;
					if (pk->type == PKT_DATA && pk->flow->dst->hid == f->routes[i].dst) {
						p->c.tx_discards++;
						sim_switch_release(s, pk);
						sim_pkt_free(s, pk);
					} else {
						sim_queue_push(s, &p->q[pr], pk);
					}
				}
			}
			sim_port_kick(s, p);
		}
		break;
	}
}

static void on_fn(struct sim *s, struct timer *t)
{
	struct fault *f = t->owner;

	if (f->type == F_LINK_FLAP) {
		/* toggle every half period; count full down-up cycles */
		if (f->toggles % 2 == 0)
			apply(s, f);
		else
			clear(s, f);
		if (++f->toggles < 2 * f->count)
			sim_timer_arm(s, &f->t_on, s->now + f->period / 2);
		return;
	}
	apply(s, f);
}

static void off_fn(struct sim *s, struct timer *t)
{
	clear(s, t->owner);
}

static int parse_fault(struct build *b, json_t *j, struct fault *f)
{
	static const char *const types[] = { "link_down", "link_flap", "lossy_link", "pause_storm",
					     "slow_receiver", "route_override", NULL };
	static const char *const keys[][8] = {
		{ "type", "link", "at_us", "until_us", NULL },
		{ "type", "link", "at_us", "period_us", "count", NULL },
		{ "type", "link", "loss", "at_us", "until_us", NULL },
		{ "type", "host", "priority", "at_us", "until_us", NULL },
		{ "type", "host", "rate_gbps", "at_us", "until_us", NULL },
		{ "type", "routes", "at_us", "until_us", NULL },
	};
	double at = -1, until = 0, v;
	int64_t iv;
	int type, r;

	if (!json_is_object(j))
		return sim_build_bad(b, NULL, "a fault is an object");
	if ((r = js_req_enum(j, "type", types, &b->p, &type, b->e)) < 0) {
		snprintf(b->e->code, sizeof(b->e->code), "BAD_SCENARIO");
		return r;
	}
	f->type = type;
	if ((r = sim_build_check_keys(b, j, keys[type])) < 0 ||
	    (r = sim_build_opt_num(b, j, "at_us", 0, 1e9, false, &at)) < 0 ||
	    (r = sim_build_opt_num(b, j, "until_us", 0, 1e9, false, &until)) < 0)
		return r;
	if (at < 0 && b->runtime)
		at = (double)b->s->now / PS_PER_US; /* injected while running: now */
	if (at < 0)
		return sim_build_bad(b, "at_us", "required field is missing");
	if (until && until <= at)
		return sim_build_bad(b, "until_us", "must be after at_us");
	f->at = (simtime_t)llround(at * PS_PER_US);
	f->until = (simtime_t)llround(until * PS_PER_US);
	switch (f->type) {
	case F_LINK_DOWN:
	case F_LINK_FLAP:
	case F_LOSSY:
		if (!(f->link = sim_build_resolve_link(b, json_object_get(j, "link"), "link")))
			return -EINVAL;
		if (f->type == F_LOSSY) {
			v = -1;
			if ((r = sim_build_opt_num(b, j, "loss", 0, 1, false, &v)) < 0)
				return r;
			if (v < 0)
				return sim_build_bad(b, "loss", "required field is missing");
			f->loss = v;
		}
		if (f->type == F_LINK_FLAP) {
			v = 0;
			iv = 0;
			if ((r = sim_build_opt_period_us(b, j, "period_us", 1e9, &v)) < 0 ||
			    (r = sim_build_opt_int(b, j, "count", 1, 100000, &iv)) < 0)
				return r;
			if (!v || !iv)
				return sim_build_bad(b, v ? "count" : "period_us",
						     "required field is missing");
			f->period = (simtime_t)llround(v * PS_PER_US);
			f->count = (uint32_t)iv;
		}
		break;
	case F_STORM:
	case F_SLOW_RX:
		if (!(f->host = sim_build_resolve_host(b, json_object_get(j, "host"), "host")))
			return -EINVAL;
		iv = 3;
		if ((r = sim_build_opt_int(b, j, "priority", 0, 7, &iv)) < 0)
			return r;
		f->prio = (uint8_t)iv;
		if (f->type == F_SLOW_RX) {
			v = 0;
			if ((r = sim_build_opt_num(b, j, "rate_gbps", 0, 1600, true, &v)) < 0)
				return r;
			if (!v)
				return sim_build_bad(b, "rate_gbps", "required field is missing");
			/* (a drain time must fit: 1e-300 Gb/s overflowed it, and the receiver drained
			 * at once) */
			if (v < 0.001)
				return sim_build_bad(b, "rate_gbps", "at least 0.001 (1 Mb/s)");
			f->rate_bps = v * 1e9;
		}
		break;
	case F_ROUTE: {
		static const char *const rk[] = { "switch", "dst", "via", NULL };
		json_t *routes = json_object_get(j, "routes"), *rt;
		size_t i;

		if (!json_is_array(routes) || !json_array_size(routes))
			return sim_build_bad(b, "routes", "a list of {switch, dst, via}");
		f->routes = calloc(json_array_size(routes), sizeof(*f->routes));
		if (!f->routes)
			return -ENOMEM;
		json_array_foreach(routes, i, rt) {
			size_t a = js_path_push_key(&b->p, "routes");
			struct node *sw, *dst, *via;

			js_path_push_idx(&b->p, i);
			r = sim_build_check_keys(b, rt, rk);
			sw = r == 0 ? sim_build_find_node(b, js_str(rt, "switch", "")) : NULL;
			if (r == 0 && (!sw || sw->kind != NODE_SWITCH))
				r = sim_build_bad(b, "switch", "no switch named '%s'",
						  js_str(rt, "switch", ""));
			dst = r == 0 ? sim_build_resolve_host(b, json_object_get(rt, "dst"), "dst")
				     : NULL;
			if (r == 0 && !dst)
				r = -EINVAL;
			via = r == 0 ? sim_build_find_node(b, js_str(rt, "via", "")) : NULL;
			if (r == 0) {
				int port = -1;

				for (uint16_t k = 0; via && k < sw->nports; k++)
					if (sw->ports[k]->peer->node == via)
						port = k;
				if (port < 0)
					r = sim_build_bad(b, "via", "'%s' is not a neighbour of %s",
							  js_str(rt, "via", ""), sw->name);
				else
					f->routes[f->nroutes++] = (struct override_spec){
						.sw = sw, .dst = dst->hid, .port = (uint16_t)port
					};
			}
			js_path_pop(&b->p, a);
			if (r < 0)
				return r;
		}
		break;
	}
	}
	return 0;
}

static int fault_add(struct build *b, json_t *j)
{
	struct sim *s = b->s;
	struct fault *f = calloc(1, sizeof(*f));
	struct fault **nf;
	int r;

	if (!f)
		return -ENOMEM;
	/* every fault stays listed, cleared ones too (GET /v1/faults): bounded */
	if (s->nfaults >= FAULTS_MAX) {
		free(f);
		return sim_build_bad(b, NULL, "a run holds at most %d faults, cleared ones included", FAULTS_MAX);
	}
	r = parse_fault(b, j, f);
	nf = r == 0 ? realloc(s->faults, (s->nfaults + 1) * sizeof(*nf)) : NULL;
	if (r < 0 || !nf) {
		free(f->routes);
		free(f);
		return r < 0 ? r : -ENOMEM;
	}
	s->faults = nf;
	f->spec = json_deep_copy(j);
	f->id = (int)s->nfaults;
	s->faults[s->nfaults++] = f;
	sim_timer_init(&f->t_on, on_fn, f, 0);
	sim_timer_init(&f->t_off, off_fn, f, 0);
	sim_timer_arm(s, &f->t_on, f->at < s->now ? s->now : f->at);
	if (f->until && f->type != F_LINK_FLAP)
		sim_timer_arm(s, &f->t_off, f->until);
	return f->id;
}

int sim_build_faults(struct build *b, json_t *faults)
{
	size_t i;
	json_t *j;
	int r;

	if (!faults)
		return 0;
	if (!json_is_array(faults))
		return sim_build_bad(b, "faults", "must be an array");
	json_array_foreach(faults, i, j) {
		size_t a = js_path_push_key(&b->p, "faults");

		js_path_push_idx(&b->p, i);
		r = fault_add(b, j);
		js_path_pop(&b->p, a);
		if (r < 0)
			return r;
	}
	return 0;
}

int sim_fault(struct sim *s, json_t *fault, int *ret_id, struct rf_err *e)
{
	struct build b = { .s = s, .e = e, .runtime = true };
	int r;

	js_path_init(&b.p);
	r = fault_add(&b, fault);
	if (r < 0)
		return r;
	if (ret_id)
		*ret_id = r;
	return 0;
}

int sim_fault_clear(struct sim *s, int id, struct rf_err *e)
{
	struct fault *f;

	if (id < 0 || (uint32_t)id >= s->nfaults)
		return rf_err_set(e, -ENOENT, "UNKNOWN_FAULT", NULL, "no fault %d", id);
	f = s->faults[id];
	sim_timer_cancel(&f->t_on);
	sim_timer_cancel(&f->t_off);
	clear(s, f);
	f->cleared = true;
	return 0;
}

json_t *sim_faults(const struct sim *s)
{
	json_t *list = json_array();

	for (uint32_t i = 0; i < s->nfaults; i++) {
		const struct fault *f = s->faults[i];

		json_array_append_new(list, json_pack("{s:i,s:O,s:b,s:b}", "id", f->id, "spec",
						      f->spec ? f->spec : json_null(), "active",
						      f->active, "cleared", f->cleared));
	}
	return list;
}

void sim_faults_free(struct sim *s)
{
	for (uint32_t i = 0; i < s->nfaults; i++) {
		free(s->faults[i]->routes);
		json_decref(s->faults[i]->spec);
		free(s->faults[i]);
	}
	free(s->faults);
}
