/* Configuration while running: DCQCN of a host, ECN of a switch queue, PFC of a port, as JSON
 * with the scenario's field names.  A change is parsed and checked on a copy of the current
 * configuration and applied only when all of it is valid; absent fields keep their values. */
#include <string.h>

#include "sim/build.h"

static struct port *find_port(const struct sim *s, int dev, int port, bool want_switch,
			      struct rf_err *e)
{
	const struct node *n;

	if (dev < 0 || (uint32_t)dev >= s->nnodes) {
		rf_err_set(e, -ENOENT, "UNKNOWN_DEVICE", NULL, "no such device");
		return NULL;
	}
	n = s->nodes[dev];
	if (want_switch && n->kind != NODE_SWITCH) {
		rf_err_set(e, -ENOENT, "UNKNOWN_SWITCH", NULL, "%s is not a switch", n->name);
		return NULL;
	}
	if (port < 0 || port >= n->nports) {
		rf_err_set(e, -ENOENT, "UNKNOWN_PORT", NULL, "%s has no such port", n->name);
		return NULL;
	}
	return n->ports[port];
}

static void init_build(struct build *b, struct sim *s, struct rf_err *e)
{
	*b = (struct build){ .s = s, .e = e, .runtime = true };
	js_path_init(&b->p);
}

/* The scenario parser says BAD_SCENARIO; a change names what is wrong. */
static int recode(struct rf_err *e, int r)
{
	if (r < 0 && e && !strcmp(e->code, "BAD_SCENARIO"))
		snprintf(e->code, sizeof(e->code), "%s", strstr(e->msg, "unknown field") ? "UNKNOWN_FIELD" : "BAD_VALUE");
	return r;
}

json_t *sim_get_dcqcn(const struct sim *s, int host)
{
	const struct sim_nic_cfg *c;

	if (host < 0 || (uint32_t)host >= s->nnodes || s->nodes[host]->kind != NODE_HOST)
		return NULL;
	c = &s->nodes[host]->nic.cfg;
	return json_pack("{s:b,s:f,s:I,s:i,s:f,s:f,s:f,s:f,s:i,s:i,s:i,s:f,s:f,s:i,s:f,s:f,s:b,s:b,s:b,s:i}",
			 "enabled", c->dcqcn, "rpg_time_reset_us", c->rpg_time_reset_us,
			 "rpg_byte_reset", (json_int_t)c->rpg_byte_reset, "rpg_threshold", (int)c->rpg_threshold,
			 "rpg_ai_rate_mbps", c->rpg_ai_rate_mbps, "rpg_hai_rate_mbps", c->rpg_hai_rate_mbps,
			 "rpg_min_rate_mbps", c->rpg_min_rate_mbps, "rpg_max_rate_mbps", c->rpg_max_rate_mbps,
			 "rpg_gd", (int)c->rpg_gd, "rpg_min_dec_fac", (int)c->rpg_min_dec_fac, "dce_tcp_g",
			 (int)c->dce_tcp_g, "dce_tcp_rtt_us", c->dce_tcp_rtt_us,
			 "rate_reduce_monitor_period_us", c->rate_reduce_monitor_period_us,
			 "initial_alpha_value", (int)c->initial_alpha_value, "rate_to_set_on_first_cnp_mbps",
			 c->rate_to_set_on_first_cnp_mbps, "min_time_between_cnps_us",
			 c->min_time_between_cnps_us, "cnp_per_port", c->cnp_per_port, "clamp_tgt_rate",
			 c->clamp_tgt_rate, "clamp_tgt_rate_ati", c->clamp_tgt_rate_ati, "cnp_prio",
			 (int)c->cnp_prio);
}

int sim_set_dcqcn(struct sim *s, int host, json_t *params, struct rf_err *e)
{
	struct sim_nic_cfg c;
	struct build b;
	json_t *copy;
	int r;

	if (host < 0 || (uint32_t)host >= s->nnodes || s->nodes[host]->kind != NODE_HOST)
		return rf_err_set(e, -ENOENT, "UNKNOWN_HOST", NULL, "no such host");
	if (!json_is_object(params))
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "/", "DCQCN parameters are a JSON object");
	init_build(&b, s, e);
	c = s->nodes[host]->nic.cfg;
	/* "enabled" switches DCQCN on or off; everything else is a knob of the scenario's nic.dcqcn */
	copy = json_deep_copy(params);
	if (!copy)
		return -ENOMEM;
	if (json_object_get(copy, "enabled")) {
		if (!json_is_boolean(json_object_get(copy, "enabled"))) {
			json_decref(copy);
			return rf_err_set(e, -EINVAL, "BAD_VALUE", "/enabled", "must be true or false");
		}
		c.dcqcn = json_is_true(json_object_get(copy, "enabled"));
		json_object_del(copy, "enabled");
	}
	r = recode(e, sim_build_parse_dcqcn(&b, copy, &c));
	json_decref(copy);
	if (r < 0)
		return r;
	sim_nic_configure(s->nodes[host], &c);
	return 0;
}

json_t *sim_get_ecn(const struct sim *s, int sw, int port, int queue)
{
	const struct port *p = find_port(s, sw, port, true, NULL);

	if (!p || queue < 0 || queue >= NPRIO)
		return NULL;
	return json_pack("{s:b,s:I,s:I,s:f}", "enabled", p->ecn[queue].enabled, "kmin_bytes",
			 (json_int_t)p->ecn[queue].kmin, "kmax_bytes", (json_int_t)p->ecn[queue].kmax, "pmax",
			 p->ecn[queue].pmax);
}

int sim_set_ecn(struct sim *s, int sw, int port, int queue, json_t *params, struct rf_err *e)
{
	struct port *p = find_port(s, sw, port, true, e);
	struct sim_ecn_cfg c;
	struct build b;
	int r;

	if (!p)
		return -ENOENT;
	if (queue < 0 || queue >= NPRIO)
		return rf_err_set(e, -ENOENT, "UNKNOWN_QUEUE", NULL, "queues are 0..7");
	init_build(&b, s, e);
	c = (struct sim_ecn_cfg){ .enabled = p->ecn[queue].enabled, .kmin_bytes = p->ecn[queue].kmin,
				  .kmax_bytes = p->ecn[queue].kmax, .pmax = p->ecn[queue].pmax };
	if ((r = recode(e, sim_build_parse_ecn(&b, params, &c))) < 0)
		return r;
	p->ecn[queue] = (struct ecn_cfg){ .enabled = c.enabled, .kmin = c.kmin_bytes,
					  .kmax = c.kmax_bytes, .pmax = c.pmax };
	return 0;
}

json_t *sim_get_pfc(const struct sim *s, int dev, int port)
{
	const struct port *p = find_port(s, dev, port, false, NULL);
	json_t *prios;

	if (!p)
		return NULL;
	prios = json_array();
	for (int pr = 0; pr < NPRIO; pr++)
		if (p->pfc.enabled & (1u << pr))
			json_array_append_new(prios, json_integer(pr));
	if (p->node->kind == NODE_HOST)
		return json_pack("{s:o}", "priorities", prios);
	return json_pack("{s:o,s:s,s:i,s:I,s:I,s:I}", "priorities", prios, "threshold",
			 p->pfc.dynamic ? "dynamic" : "static", "alpha_shift", p->pfc.alpha_shift, "xoff_bytes",
			 (json_int_t)p->pfc.xoff_bytes, "xon_offset_bytes", (json_int_t)p->pfc.xon_offset,
			 "headroom_bytes", (json_int_t)p->pfc.headroom);
}

int sim_set_pfc(struct sim *s, int dev, int port, json_t *params, struct rf_err *e)
{
	struct port *p = find_port(s, dev, port, false, e);
	struct sim_pfc_cfg c;
	struct build b;
	int r;

	if (!p)
		return -ENOENT;
	if (json_object_get(params, "headroom_bytes"))
		return rf_err_set(e, -EINVAL, "READ_ONLY", "/headroom_bytes",
				  "headroom is partitioned at start and cannot change while running");
	if (p->node->kind == NODE_HOST && json_object_size(params) != (json_object_get(params, "priorities") ? 1u : 0u))
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "/",
				  "a NIC port has only \"priorities\" (thresholds are the switch's)");
	init_build(&b, s, e);
	c = (struct sim_pfc_cfg){ .enabled = p->pfc.enabled, .dynamic = p->pfc.dynamic,
				  .alpha_shift = p->pfc.alpha_shift, .xoff_bytes = p->pfc.xoff_bytes,
				  .xon_offset_bytes = p->pfc.xon_offset, .headroom_bytes = p->pfc.headroom,
				  .quanta = p->pfc.quanta };
	if (p->node->kind == NODE_HOST)
		c.dynamic = true; /* no thresholds on a NIC */
	if ((r = recode(e, sim_build_parse_pfc(&b, params, &c))) < 0)
		return r;
	p->pfc.enabled = c.enabled;
	p->pfc.dynamic = c.dynamic;
	p->pfc.alpha_shift = c.alpha_shift;
	p->pfc.xoff_bytes = c.xoff_bytes;
	p->pfc.xon_offset = c.xon_offset_bytes;
	p->pfc.quanta = c.quanta;
	if (p->node->kind == NODE_HOST)
		p->node->nic.cfg.pfc_enabled = c.enabled;
	/* priorities no longer lossless: XOFF sent for them is withdrawn */
	for (int pr = 0; pr < NPRIO; pr++)
		if (p->xoff[pr] && !(p->pfc.enabled & (1u << pr)))
			sim_port_send_pfc(s, p, (uint8_t)pr, false);
	sim_port_kick(s, p);
	return 0;
}
