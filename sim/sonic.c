/* SONiC-shaped simulated switches (rocefab-sim serve --sonic SWITCH=REDIS): see serve.h.
 *
 * The publisher stands where SONiC's syncd, orchagent and lldp containers stand on a real
 * switch.  At start it owns the redis it is given: it empties APPL_DB, COUNTERS_DB and
 * CONFIG_DB and writes the simulated switch there in SONiC's layout:
 *   CONFIG_DB   DEVICE_METADATA|localhost (hostname = the switch), PORT|EthernetN (alias =
 *               the simulator's port name, 4 lanes a port), PORT_QOS_MAP|EthernetN
 *               (pfc_enable), WRED_PROFILE (queues with the same ECN settings share one, the
 *               most used is AZURE_LOSSLESS) bound by QUEUE|EthernetN|A-B keys,
 *               BUFFER_POOL|ingress_lossless_pool, BUFFER_PROFILE (shared the same way) bound
 *               by BUFFER_PG|EthernetN|P, PFC_WD|EthernetN
 *   COUNTERS_DB the name maps of ports, queues and priority groups, with object ids
 *   APPL_DB     PORT_TABLE:EthernetN, LLDP_ENTRY_TABLE:EthernetN
 * Then, every interval: the switch's counters into COUNTERS:<oid> and the watermark tables
 * (each simulator counter under its SONiC name, from the registry's sim and sonic_* sources),
 * port state and neighbours into APPL_DB, and CONFIG_DB back onto the simulated switch: the
 * configuration is read as the sonic backend reads it (the same code), compared with the
 * switch's, and the differences applied through the simulator's control API, as orchagent
 * programs the ASIC.  What the switch refuses is logged once, as orchagent would. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "agents/backend.h"
#include "agents/sim.h"
#include "agents/sonic.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "sim/serve.h"

#define NPRIO 8
#define SAI_PORT 0x1
#define SAI_QUEUE 0x15
#define SAI_PG 0x1a

/* The SONiC name of a simulator counter: by registry counter id. */
struct sonic_name {
	const char *group; /* sonic_port, sonic_queue, ... */
	const char *name;  /* with %d for the priority */
};

struct pubsw {
	char name[64];
	char addr[256];
	redisContext *w;
	struct backend *sim; /* the simulated switch, in process */
	struct backend *son; /* the same redis read as the sonic backend reads it */
	struct agent_inventory inv;
	size_t nports;
	char (*pnames)[64];  /* the simulator's port names, in its order */
	struct hmap by_port; /* of pnames -> index + 1 */
	json_t *refused;     /* what the switch refused, by port/queue: logged once */
};

struct sonic_pub {
	struct simctl *c;
	struct reg *reg;
	struct sonic_name *names; /* reg_size() entries */
	struct pubsw *sw;
	size_t nsw;
	int64_t interval_ns;
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
};

static int ctl_call(void *ctx, const char *method, const char *path, json_t *body, json_t **ret)
{
	return simctl_call(ctx, method, path, body, ret);
}

static void oid(char out[40], unsigned type, size_t port, int idx)
{
	snprintf(out, 40, "oid:0x%x%013zx", type, port * 16 + (size_t)(idx + 1) + 1);
}

static void sonic_port(char out[32], size_t i)
{
	snprintf(out, 32, "Ethernet%zu", i * 4);
}

/* Sends commands (argv arrays of strings) in one round trip; the first error into e. */
static int send_all(struct pubsw *p, json_t *cmds, struct rf_err *e)
{
	size_t n = json_array_size(cmds), i;
	json_t *cmd;
	int r = 0;

	json_array_foreach(cmds, i, cmd) {
		size_t argc = json_array_size(cmd);
		const char **argv = calloc(argc + 1, sizeof(*argv));

		if (!argv)
			return -ENOMEM;
		for (size_t k = 0; k < argc; k++)
			argv[k] = json_string_value(json_array_get(cmd, k));
		redisAppendCommandArgv(p->w, (int)argc, argv, NULL);
		free(argv);
	}
	for (i = 0; i < n; i++) {
		redisReply *rep = NULL;

		if (redisGetReply(p->w, (void **)&rep) != REDIS_OK) {
			r = rf_err_set(e, -EHOSTUNREACH, "SONIC_UNREACHABLE", p->addr, "redis: %s", p->w->errstr);
			redisFree(p->w);
			p->w = NULL;
			return r;
		}
		if (!r && rep->type == REDIS_REPLY_ERROR)
			r = rf_err_set(e, -EIO, "SONIC_REDIS_ERROR", p->addr, "redis refused: %s", rep->str);
		freeReplyObject(rep);
	}
	return r;
}

static json_t *cmd(const char *a, const char *b, const char *c)
{
	json_t *x = json_array();

	json_array_append_new(x, json_string(a));
	if (b)
		json_array_append_new(x, json_string(b));
	if (c)
		json_array_append_new(x, json_string(c));
	return x;
}

static void field(json_t *hset, const char *f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void field(json_t *hset, const char *f, const char *fmt, ...)
{
	char v[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	json_array_append_new(hset, json_string(f));
	json_array_append_new(hset, json_string(v));
}

static json_t *hset(json_t *cmds, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static json_t *hset(json_t *cmds, const char *fmt, ...)
{
	char key[300];
	va_list ap;
	json_t *x;

	va_start(ap, fmt);
	vsnprintf(key, sizeof(key), fmt, ap);
	va_end(ap);
	x = cmd("HSET", key, NULL);
	json_array_append_new(cmds, x);
	return x;
}

static const char *range(char out[32], int a, int b)
{
	if (a == b)
		snprintf(out, 32, "%d", a);
	else
		snprintf(out, 32, "%d-%d", a, b);
	return out;
}

/* --- the switch's configuration into CONFIG_DB ---------------------------------------------- */

/* A profile per distinct value (a JSON dump), the most used first. */
static const char *profile_name(json_t *names, json_t *counts, const char *value, const char *first,
				const char *other)
{
	json_t *n = json_object_get(names, value);
	char buf[64];

	if (n)
		return json_string_value(n);
	/* the most used value (counted beforehand) gets the first name */
	{
		const char *k, *best = NULL;
		json_int_t most = -1;
		json_t *v;

		json_object_foreach(counts, k, v)
			if (json_integer_value(v) > most) {
				most = json_integer_value(v);
				best = k;
			}
		if (best && !strcmp(best, value))
			snprintf(buf, sizeof(buf), "%s", first);
		else
			snprintf(buf, sizeof(buf), "%s_%zu", other, json_object_size(names) + 1);
	}
	json_object_set_new(names, value, json_string(buf));
	return json_string_value(json_object_get(names, value));
}

/* A queue's ECN settings as a WRED profile would hold them (drop probability in whole
 * percent), as a string that tells profiles apart. */
static char *ecn_key(json_t *ent)
{
	json_t *o = json_pack("{s:O,s:O,s:i}", "kmin", json_object_get(ent, "kmin_bytes"), "kmax",
			      json_object_get(ent, "kmax_bytes"), "pct",
			      (int)lround(json_number_value(json_object_get(ent, "pmax")) * 100));
	char *k = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(o);
	return k;
}

static int write_config(struct pubsw *p, struct rf_err *e)
{
	json_t *cfg = NULL, *cmds = json_array(), *x, *ent, *ecn, *pfc;
	json_t *wnames = json_object(), *wcount = json_object(), *bnames = json_object(), *bcount = json_object();
	struct agent_device *d = &p->inv.devs[0];
	int r;
	size_t i;

	if ((r = p->sim->ops->read_config(p->sim, &cfg)) < 0) {
		rf_err_set(e, r, "SIM_ERROR", p->name, "cannot read the simulated switch's configuration");
		goto out;
	}
	ecn = json_object_get(cfg, "ecn");
	pfc = json_object_get(cfg, "pfc");
	json_array_append_new(cmds, cmd("SELECT", "4", NULL));
	json_array_append_new(cmds, cmd("FLUSHDB", NULL, NULL));
	x = hset(cmds, "DEVICE_METADATA|localhost");
	field(x, "hostname", "%s", p->name);
	field(x, "hwsku", "rocefab-sim");
	field(x, "platform", "x86_64-rocefab_sim-r0");
	field(x, "type", "%s", "LeafRouter");
	field(x, "buffer_model", "traditional");
	x = hset(cmds, "BUFFER_POOL|ingress_lossless_pool");
	field(x, "type", "ingress");
	field(x, "mode", "dynamic");
	field(x, "size", "%" JSON_INTEGER_FORMAT,
	      json_integer_value(json_object_get(json_array_get(pfc, 0), "shared_bytes")));
	/* count the distinct settings first: the most used gets SONiC's default name */
	json_array_foreach(ecn, i, ent) {
		char *k;

		if (!json_is_true(json_object_get(ent, "enabled")))
			continue;
		k = ecn_key(ent);
		if (k)
			json_object_set_new(wcount, k, json_integer(json_integer_value(json_object_get(wcount, k)) + 1));
		free(k);
	}
	for (i = 0; i < p->nports; i++) {
		struct agent_port *ap = &d->ports[i];
		json_t *pe = NULL, *qs[NPRIO] = { 0 };
		char sp[32], rg[32];
		const char *names[NPRIO] = { 0 };
		size_t k;
		int mask;

		sonic_port(sp, i);
		x = hset(cmds, "PORT|%s", sp);
		field(x, "alias", "%s", ap->port);
		field(x, "index", "%zu", i);
		field(x, "lanes", "%zu,%zu,%zu,%zu", 4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3);
		field(x, "speed", "%" PRId64, ap->speed_mbps > 0 ? ap->speed_mbps : 100000);
		field(x, "mtu", "9100");
		field(x, "admin_status", "up");
		if (ap->peer_system[0])
			field(x, "description", "%s:%s", ap->peer_system, ap->peer_port);
		json_array_foreach(pfc, k, ent)
			if (!strcmp(json_string_value(json_object_get(ent, "port")) ?: "", ap->port))
				pe = ent;
		json_array_foreach(ecn, k, ent) {
			json_int_t q = json_integer_value(json_object_get(ent, "queue"));

			if (!strcmp(json_string_value(json_object_get(ent, "port")) ?: "", ap->port) && q >= 0 && q < NPRIO)
				qs[q] = ent;
		}
		mask = (int)json_integer_value(json_object_get(pe, "enable"));
		x = hset(cmds, "PORT_QOS_MAP|%s", sp);
		{
			char list[32] = "";
			size_t len = 0;

			for (int pr = 0; pr < NPRIO; pr++)
				if (mask & (1 << pr))
					len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", pr);
			field(x, "pfc_enable", "%s", list);
			field(x, "pfcwd_sw_enable", "%s", list);
		}
		field(x, "dscp_to_tc_map", "AZURE");
		field(x, "tc_to_queue_map", "AZURE");
		field(x, "tc_to_pg_map", "AZURE");
		x = hset(cmds, "PFC_WD|%s", sp);
		field(x, "action", "drop");
		field(x, "detection_time", "200");
		field(x, "restoration_time", "200");
		/* the lossless PGs' buffer profile */
		if (pe && mask) {
			const char *mode = json_string_value(json_object_get(pe, "mode")) ?: "dynamic";
			json_t *bv = json_pack("{s:s,s:I,s:I,s:I,s:I}", "mode", mode, "alpha",
					       json_integer_value(json_object_get(pe, "alpha_shift")), "xoff",
					       json_integer_value(json_object_get(pe, "xoff_bytes")), "off",
					       json_integer_value(json_object_get(pe, "xon_offset_bytes")), "head",
					       json_integer_value(json_object_get(pe, "headroom_bytes")));
			char *bk = json_dumps(bv, JSON_COMPACT | JSON_SORT_KEYS);
			const char *bn;

			json_object_set_new(bcount, bk, json_integer(json_integer_value(json_object_get(bcount, bk)) + 1));
			bn = profile_name(bnames, bcount, bk, "pg_lossless_100000_5m_profile", "pg_lossless_profile");
			x = hset(cmds, "BUFFER_PROFILE|%s", bn);
			field(x, "pool", "ingress_lossless_pool");
			field(x, "xoff", "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(bv, "head")));
			field(x, "size", "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(bv, "head")));
			field(x, "xon_offset", "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(bv, "off")));
			field(x, "xon", "0");
			if (!strcmp(mode, "static"))
				field(x, "static_th", "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(bv, "xoff")));
			else
				field(x, "dynamic_th", "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(bv, "alpha")));
			for (int a = 0; a < NPRIO; a++) {
				int b = a;

				if (!(mask & (1 << a)))
					continue;
				while (b + 1 < NPRIO && (mask & (1 << (b + 1))))
					b++;
				x = hset(cmds, "BUFFER_PG|%s|%s", sp, range(rg, a, b));
				field(x, "profile", "%s", bn);
				a = b;
			}
			json_decref(bv);
			free(bk);
		}
		/* ECN: queues with the same settings share a WRED profile; runs of queues with the
		 * same profile share a binding key */
		for (int q = 0; q < NPRIO; q++) {
			char *wk;

			if (!qs[q] || !json_is_true(json_object_get(qs[q], "enabled")) || !(wk = ecn_key(qs[q])))
				continue;
			names[q] = profile_name(wnames, wcount, wk, "AZURE_LOSSLESS", "ROCEFAB_WRED");
			free(wk);
		}
		for (int a = 0; a < NPRIO; a++) {
			int b = a;

			if (!names[a])
				continue;
			while (b + 1 < NPRIO && names[b + 1] && !strcmp(names[b + 1], names[a]))
				b++;
			x = hset(cmds, "QUEUE|%s|%s", sp, range(rg, a, b));
			field(x, "wred_profile", "%s", names[a]);
			field(x, "scheduler", "scheduler.0");
			a = b;
		}
	}
	/* the WRED profiles, from their keys */
	{
		const char *k;
		json_t *v;

		json_object_foreach(wnames, k, v) {
			json_t *s = json_loads(k, 0, NULL);
			static const char *const colors[] = { "green", "yellow", "red" };

			x = hset(cmds, "WRED_PROFILE|%s", json_string_value(v));
			field(x, "ecn", "ecn_all");
			for (int c = 0; c < 3; c++) {
				char f[64];

				snprintf(f, sizeof(f), "wred_%s_enable", colors[c]);
				field(x, f, "true");
				snprintf(f, sizeof(f), "%s_min_threshold", colors[c]);
				field(x, f, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(s, "kmin")));
				snprintf(f, sizeof(f), "%s_max_threshold", colors[c]);
				field(x, f, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(s, "kmax")));
				snprintf(f, sizeof(f), "%s_drop_probability", colors[c]);
				field(x, f, "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(s, "pct")));
			}
			json_decref(s);
		}
	}
	r = send_all(p, cmds, e);
out:
	json_decref(cfg);
	json_decref(cmds);
	json_decref(wnames);
	json_decref(wcount);
	json_decref(bnames);
	json_decref(bcount);
	return r;
}

/* The name maps of COUNTERS_DB: ports, queues (unicast), priority groups. */
static int write_maps(struct pubsw *p, struct rf_err *e)
{
	json_t *cmds = json_array(), *pm, *qm, *qt, *qi, *gm;
	struct agent_device *d = &p->inv.devs[0];
	int r;

	json_array_append_new(cmds, cmd("SELECT", "0", NULL));
	json_array_append_new(cmds, cmd("FLUSHDB", NULL, NULL));
	json_array_append_new(cmds, cmd("SELECT", "2", NULL));
	json_array_append_new(cmds, cmd("FLUSHDB", NULL, NULL));
	pm = hset(cmds, "COUNTERS_PORT_NAME_MAP");
	qm = hset(cmds, "COUNTERS_QUEUE_NAME_MAP");
	qt = hset(cmds, "COUNTERS_QUEUE_TYPE_MAP");
	qi = hset(cmds, "COUNTERS_QUEUE_INDEX_MAP");
	gm = hset(cmds, "COUNTERS_PG_NAME_MAP");
	for (size_t i = 0; i < p->nports; i++) {
		char sp[32], o[40], n[64];

		sonic_port(sp, i);
		oid(o, SAI_PORT, i, -1);
		field(pm, sp, "%s", o);
		for (int q = 0; q < NPRIO; q++) {
			snprintf(n, sizeof(n), "%s:%d", sp, q);
			oid(o, SAI_QUEUE, i, q);
			field(qm, n, "%s", o);
			field(qt, o, "SAI_QUEUE_TYPE_UNICAST");
			field(qi, o, "%d", q);
			oid(o, SAI_PG, i, q);
			field(gm, n, "%s", o);
		}
	}
	(void)d;
	r = send_all(p, cmds, e);
	json_decref(cmds);
	return r;
}

/* --- every interval ---------------------------------------------------------------------------- */

static int write_state(struct sonic_pub *pub, struct pubsw *p, struct rf_err *e)
{
	json_t *samples = json_array(), *errors = json_array(), *cmds = json_array(), *s, *clk;
	struct agent_device *d;
	size_t i;
	int r;

	if ((r = p->sim->ops->inventory(p->sim, &p->inv, errors)) < 0 ||
	    (r = p->sim->ops->collect(p->sim, &p->inv, samples, errors)) < 0) {
		rf_err_set(e, r, "SIM_ERROR", p->name, "the simulated switch does not answer");
		goto out;
	}
	d = &p->inv.devs[0];
	/* APPL_DB: state and neighbours */
	json_array_append_new(cmds, cmd("SELECT", "0", NULL));
	for (i = 0; i < d->nports && i < p->nports; i++) {
		struct agent_port *ap = &d->ports[i];
		char sp[32];
		json_t *x;

		sonic_port(sp, i);
		x = hset(cmds, "PORT_TABLE:%s", sp);
		field(x, "oper_status", "%s", !strcmp(ap->state, "up") ? "up" : "down");
		field(x, "admin_status", "up");
		field(x, "alias", "%s", ap->port);
		field(x, "speed", "%" PRId64, ap->speed_mbps > 0 ? ap->speed_mbps : 100000);
		field(x, "mtu", "9100");
		if (ap->peer_system[0]) {
			x = hset(cmds, "LLDP_ENTRY_TABLE:%s", sp);
			field(x, "lldp_rem_sys_name", "%s", ap->peer_system);
			field(x, "lldp_rem_port_id_subtype", "7");
			field(x, "lldp_rem_port_id", "%s", ap->peer_port);
			field(x, "lldp_rem_port_desc", "%s", ap->peer_port);
		} else {
			char k[64];

			snprintf(k, sizeof(k), "LLDP_ENTRY_TABLE:%s", sp);
			json_array_append_new(cmds, cmd("DEL", k, NULL));
		}
	}
	/* COUNTERS_DB: each counter under its SONiC name, and the fabric time they were read at,
	 * in one transaction */
	json_array_append_new(cmds, cmd("SELECT", "2", NULL));
	json_array_append_new(cmds, cmd("MULTI", NULL, NULL));
	{
		char t[32];

		snprintf(t, sizeof(t), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(json_object_get(json_array_get(samples, 0), "t_ns")));
		clk = hset(cmds, SONIC_SIM_CLOCK);
		field(clk, "time_ns", "%s", t);
	}
	json_array_foreach(samples, i, s) {
		uintptr_t at = (uintptr_t)hmap_get(&p->by_port, json_string_value(json_object_get(s, "port")) ?: "");
		json_t *keys = json_object(), *v, *x;
		const char *name;

		if (!at)
			continue;
		json_object_foreach(json_object_get(s, "values"), name, v) {
			const struct reg_source *src = reg_lookup(pub->reg, "sim", "sim", name);
			const struct sonic_name *sn;
			char key[80], o[40], f[100];
			const char *table;
			int prio;

			if (!src || !(sn = &pub->names[src->counter->id])->group)
				continue;
			prio = src->prio == REG_NO_PRIO ? -1 : src->prio;
			if (!strcmp(sn->group, "sonic_port"))
				oid(o, SAI_PORT, at - 1, -1);
			else if (!strcmp(sn->group, "sonic_pg"))
				oid(o, SAI_PG, at - 1, prio);
			else
				oid(o, SAI_QUEUE, at - 1, prio);
			table = !strcmp(sn->group, "sonic_queue_watermark")	     ? "PERSISTENT_WATERMARKS"
				: !strcmp(sn->group, "sonic_queue_periodic_watermark") ? "PERIODIC_WATERMARKS"
										       : "COUNTERS";
			snprintf(key, sizeof(key), "%s:%s", table, o);
			if (!(x = json_object_get(keys, key))) {
				x = cmd("HSET", key, NULL);
				json_object_set_new(keys, key, x);
			}
			/* the name without the index: FIELD@%d -> FIELD, %d in a port field -> prio */
			{
				const char *pct = strstr(sn->name, "%d");
				const char *at_sign = strchr(sn->name, '@');

				if (at_sign)
					snprintf(f, sizeof(f), "%.*s", (int)(at_sign - sn->name), sn->name);
				else if (pct)
					snprintf(f, sizeof(f), "%.*s%d%s", (int)(pct - sn->name), sn->name, prio, pct + 2);
				else
					snprintf(f, sizeof(f), "%s", sn->name);
			}
			if (!strcmp(f, "SAI_QUEUE_ATTR_PAUSE_STATUS"))
				field(x, f, "%s", json_integer_value(v) ? "true" : "false");
			else
				field(x, f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		}
		{
			const char *k;

			json_object_foreach(keys, k, x)
				if (json_array_size(x) > 2)
					json_array_append(cmds, x);
		}
		json_decref(keys);
	}
	json_array_append_new(cmds, cmd("EXEC", NULL, NULL));
	r = send_all(p, cmds, e);
out:
	json_decref(samples);
	json_decref(errors);
	json_decref(cmds);
	return r;
}

static bool same_num(json_t *a, json_t *b)
{
	if (!a || !b)
		return !a && !b;
	return fabs(json_number_value(a) - json_number_value(b)) < 1e-9;
}

/* Applies one change to the simulated switch; a refusal is logged once per value. */
static void sim_apply(struct pubsw *p, const char *kind, json_t *params, const char *what)
{
	json_t *c = json_pack("{s:s,s:s,s:O}", "id", "sonic-config", "kind", kind, "params", params), *o = NULL;
	char *want = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS);

	p->sim->ops->apply(p->sim, c, &o);
	if (strcmp(json_string_value(json_object_get(o, "outcome")) ?: "", "applied")) {
		if (want && strcmp(json_string_value(json_object_get(p->refused, what)) ?: "", want)) {
			log_warning("sonic", "%s: CONFIG_DB asks %s %s, which the switch refuses: %s", p->name,
				    kind, want,
				    json_string_value(json_object_get(json_object_get(o, "error"), "message")) ?: "no reason");
			json_object_set_new(p->refused, what, json_string(want));
		}
	} else {
		log_info("sonic", "%s: applied %s %s from CONFIG_DB", p->name, kind, want ? want : "");
		json_object_del(p->refused, what);
	}
	free(want);
	json_decref(c);
	json_decref(o);
}

/* CONFIG_DB onto the simulated switch: what differs. */
static int sync_config(struct pubsw *p, struct rf_err *e)
{
	json_t *want = NULL, *have = NULL, *x;
	size_t i;
	int r;

	if ((r = p->son->ops->read_config(p->son, &want)) < 0)
		return rf_err_set(e, r, "SONIC_UNREACHABLE", p->addr, "cannot read CONFIG_DB");
	if ((r = p->sim->ops->read_config(p->sim, &have)) < 0) {
		json_decref(want);
		return rf_err_set(e, r, "SIM_ERROR", p->name, "cannot read the switch's configuration");
	}
	json_array_foreach(json_object_get(want, "ecn"), i, x) {
		const char *port = json_string_value(json_object_get(x, "port"));
		json_int_t q = json_integer_value(json_object_get(x, "queue"));
		json_t *h = config_entry(json_object_get(have, "ecn"), port, q), *params;
		bool on = json_is_true(json_object_get(x, "enabled"));
		char what[100];

		if (!h)
			continue;
		snprintf(what, sizeof(what), "ecn %s %d", port, (int)q);
		if (on && (!json_is_true(json_object_get(h, "enabled")) ||
			   !same_num(json_object_get(x, "kmin_bytes"), json_object_get(h, "kmin_bytes")) ||
			   !same_num(json_object_get(x, "kmax_bytes"), json_object_get(h, "kmax_bytes")) ||
			   !same_num(json_object_get(x, "pmax"), json_object_get(h, "pmax")))) {
			params = json_pack("{s:s,s:I,s:b}", "port", port, "queue", q, "enabled", 1);
			json_object_set(params, "kmin_bytes", json_object_get(x, "kmin_bytes"));
			json_object_set(params, "kmax_bytes", json_object_get(x, "kmax_bytes"));
			json_object_set(params, "pmax", json_object_get(x, "pmax"));
			sim_apply(p, "set_ecn", params, what);
			json_decref(params);
		} else if (!on && json_is_true(json_object_get(h, "enabled"))) {
			params = json_pack("{s:s,s:I,s:b}", "port", port, "queue", q, "enabled", 0);
			sim_apply(p, "set_ecn", params, what);
			json_decref(params);
		}
	}
	json_array_foreach(json_object_get(want, "pfc"), i, x) {
		const char *port = json_string_value(json_object_get(x, "port"));
		json_t *h = config_entry(json_object_get(have, "pfc"), port, -1), *params;
		const char *mode = json_string_value(json_object_get(x, "mode"));
		char what[100];

		if (!h)
			continue;
		params = json_pack("{s:s}", "port", port);
		if (json_object_get(x, "enable") &&
		    json_integer_value(json_object_get(x, "enable")) != json_integer_value(json_object_get(h, "enable")))
			json_object_set(params, "enable", json_object_get(x, "enable"));
		if (mode && !strcmp(mode, "dynamic") &&
		    (strcmp(json_string_value(json_object_get(h, "mode")) ?: "", "dynamic") ||
		     !same_num(json_object_get(x, "alpha_shift"), json_object_get(h, "alpha_shift"))))
			json_object_set(params, "alpha_shift", json_object_get(x, "alpha_shift"));
		if (mode && !strcmp(mode, "static") &&
		    (strcmp(json_string_value(json_object_get(h, "mode")) ?: "", "static") ||
		     !same_num(json_object_get(x, "xoff_bytes"), json_object_get(h, "xoff_bytes")) ||
		     (json_object_get(x, "xon_bytes") &&
		      !same_num(json_object_get(x, "xon_bytes"), json_object_get(h, "xon_bytes"))))) {
			json_object_set(params, "xoff_bytes", json_object_get(x, "xoff_bytes"));
			if (json_object_get(x, "xon_bytes"))
				json_object_set(params, "xon_bytes", json_object_get(x, "xon_bytes"));
		}
		snprintf(what, sizeof(what), "pfc %s", port);
		if (json_object_size(params) > 1)
			sim_apply(p, "set_pfc", params, what);
		json_decref(params);
	}
	json_decref(want);
	json_decref(have);
	return 0;
}

/* 1 when CONFIG_DB holds the switch (DEVICE_METADATA|localhost), 0 when not. */
static int config_present(struct pubsw *p, struct rf_err *e)
{
	redisReply *rep;
	int r;

	if (!(rep = redisCommand(p->w, "SELECT %d", SONIC_CONFIG_DB)))
		goto lost;
	freeReplyObject(rep);
	if (!(rep = redisCommand(p->w, "EXISTS DEVICE_METADATA|localhost")))
		goto lost;
	r = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
	freeReplyObject(rep);
	return r;
lost:
	r = rf_err_set(e, -EHOSTUNREACH, "SONIC_UNREACHABLE", p->addr, "redis: %s", p->w->errstr);
	redisFree(p->w);
	p->w = NULL;
	return r;
}

/* --- lifecycle ----------------------------------------------------------------------------------- */

static int open_switch(struct sonic_pub *pub, struct pubsw *p, struct rf_err *e)
{
	struct sim_settings ss = { .device = p->name, .call = ctl_call, .ctx = pub->c };
	struct backend_env env = { .settings = &ss, .reg = pub->reg };
	struct sonic_settings son = { .redis = p->addr, .port_names = SONIC_PORT_ALIAS,
				      .timeout = 2 * NSEC_PER_SEC };
	json_t *errors = json_array();
	int r;

	hmap_init(&p->by_port);
	p->refused = json_object();
	if ((r = sonic_redis_connect(p->addr, 2 * NSEC_PER_SEC, &p->w, e)) < 0) {
		snprintf(e->where, sizeof(e->where), "--sonic %s", p->name);
		goto out;
	}
	if ((r = backend_new("sim", &env, &p->sim, e)) < 0) {
		rf_err_set(e, -EINVAL, "UNKNOWN_SWITCH", "--sonic", "'%s' is not a device of the scenario", p->name);
		r = -EINVAL;
		goto out;
	}
	if (p->sim->ops->is_switch(p->sim) != 1) {
		r = rf_err_set(e, -EINVAL, "NOT_A_SWITCH", "--sonic", "'%s' is not a switch of the scenario", p->name);
		goto out;
	}
	if ((r = p->sim->ops->inventory(p->sim, &p->inv, errors)) < 0 || !p->inv.ndevs) {
		r = rf_err_set(e, r < 0 ? r : -EIO, "SIM_ERROR", p->name, "no inventory");
		goto out;
	}
	p->nports = p->inv.devs[0].nports;
	if (!(p->pnames = calloc(p->nports + 1, sizeof(*p->pnames)))) {
		r = rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < p->nports; i++) {
		str_copy(p->pnames[i], sizeof(p->pnames[i]), p->inv.devs[0].ports[i].port);
		hmap_put(&p->by_port, p->pnames[i], (void *)(uintptr_t)(i + 1), NULL);
	}
	if ((r = write_maps(p, e)) < 0 || (r = write_config(p, e)) < 0 || (r = write_state(pub, p, e)) < 0)
		goto out;
	env.settings = &son;
	r = backend_new("sonic", &env, &p->son, e);
out:
	json_decref(errors);
	return r;
}

static void close_switch(struct pubsw *p)
{
	backend_free(p->sim);
	backend_free(p->son);
	inventory_clear(&p->inv);
	hmap_fini(&p->by_port);
	free(p->pnames);
	json_decref(p->refused);
	if (p->w)
		redisFree(p->w);
}

static void *run(void *arg)
{
	struct sonic_pub *pub = arg;
	bool said[64] = { false };

	pthread_mutex_lock(&pub->lock);
	while (!pub->stop) {
		struct timespec until;

		pthread_mutex_unlock(&pub->lock);
		for (size_t i = 0; i < pub->nsw; i++) {
			struct pubsw *p = &pub->sw[i];
			struct rf_err e = { 0 };
			char buf[600];
			int r = 0;

			if (!p->w)
				r = sonic_redis_connect(p->addr, 2 * NSEC_PER_SEC, &p->w, &e);
			/* a redis that came back empty (restarted): the switch written again first,
			 * or its empty CONFIG_DB would be applied as "nothing lossless" */
			if (r == 0 && (r = config_present(p, &e)) == 0) {
				log_warning("sonic", "%s: the redis at %s has no DEVICE_METADATA: writing the "
					    "switch's configuration and maps again", p->name, p->addr);
				if ((r = write_maps(p, &e)) == 0)
					r = write_config(p, &e);
			}
			if (r >= 0 && (r = write_state(pub, p, &e)) == 0)
				r = sync_config(p, &e);
			if (r < 0 && !said[i % 64])
				log_warning("sonic", "%s: %s", p->name, rf_err_str(&e, buf, sizeof(buf)));
			said[i % 64] = r < 0;
		}
		pthread_mutex_lock(&pub->lock);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += pub->interval_ns % NSEC_PER_SEC;
		until.tv_sec += pub->interval_ns / NSEC_PER_SEC + until.tv_nsec / NSEC_PER_SEC;
		until.tv_nsec %= NSEC_PER_SEC;
		while (!pub->stop && pthread_cond_timedwait(&pub->wake, &pub->lock, &until) == 0)
			;
	}
	pthread_mutex_unlock(&pub->lock);
	return NULL;
}

/* The registry's SONiC name of every counter the simulator has too. */
static int load_names(struct sonic_pub *pub, struct rf_err *e)
{
	json_t *doc = reg_document(pub->reg), *c, *s;
	size_t i, k;

	pub->names = calloc(reg_size(pub->reg) + 1, sizeof(*pub->names));
	if (!pub->names)
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	json_array_foreach(json_object_get(doc, "counters"), i, c) {
		const struct reg_counter *rc = reg_find(pub->reg, json_string_value(json_object_get(c, "name")) ?: "");

		if (!rc)
			continue;
		json_array_foreach(json_object_get(c, "sources"), k, s) {
			const char *g = json_string_value(json_object_get(s, "group")) ?: "";

			if (!strncmp(g, "sonic_", 6) && !pub->names[rc->id].group) {
				pub->names[rc->id].group = g;
				pub->names[rc->id].name = json_string_value(json_object_get(s, "name"));
			}
		}
	}
	return 0;
}

int sonic_pub_start(struct simctl *c, char *const *specs, size_t n, int64_t interval_ns,
		    struct sonic_pub **ret, struct rf_err *e)
{
	struct sonic_pub *pub = calloc(1, sizeof(*pub));
	int r;

	*ret = NULL;
	if (!pub || !(pub->sw = calloc(n + 1, sizeof(*pub->sw)))) {
		free(pub);
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	}
	pub->c = c;
	pub->interval_ns = interval_ns;
	pthread_mutex_init(&pub->lock, NULL);
	pthread_cond_init(&pub->wake, NULL);
	if ((r = reg_load_builtin(&pub->reg, e)) < 0 || (r = load_names(pub, e)) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct pubsw *p = &pub->sw[i];
		const char *eq = strchr(specs[i], '=');

		if (!eq || eq == specs[i] || (size_t)(eq - specs[i]) >= sizeof(p->name) ||
		    str_copy(p->addr, sizeof(p->addr), eq + 1) < 0 || !p->addr[0]) {
			r = rf_err_set(e, -EINVAL, "BAD_SONIC", "--sonic",
				       "'%s' is not SWITCH=REDIS (e.g. leaf0=unix:/run/leaf0/redis.sock)", specs[i]);
			goto fail;
		}
		snprintf(p->name, sizeof(p->name), "%.*s", (int)(eq - specs[i]), specs[i]);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(pub->sw[k].name, p->name) || !strcmp(pub->sw[k].addr, p->addr)) {
				r = rf_err_set(e, -EINVAL, "BAD_SONIC", "--sonic",
					       "'%s': one switch per redis, one redis per switch", specs[i]);
				goto fail;
			}
		pub->nsw = i + 1;
		if ((r = open_switch(pub, p, e)) < 0)
			goto fail;
		log_info("sonic", "%s: SONiC-shaped in the redis at %s (%zu ports)", p->name, p->addr, p->nports);
	}
	if ((r = -pthread_create(&pub->thread, NULL, run, pub)) < 0) {
		rf_err_set(e, r, "NO_THREAD", NULL, "cannot start a thread");
		goto fail;
	}
	pub->running = true;
	*ret = pub;
	return 0;
fail:
	sonic_pub_stop(pub);
	return r;
}

void sonic_pub_stop(struct sonic_pub *pub)
{
	if (!pub)
		return;
	if (pub->running) {
		pthread_mutex_lock(&pub->lock);
		pub->stop = true;
		pthread_cond_signal(&pub->wake);
		pthread_mutex_unlock(&pub->lock);
		pthread_join(pub->thread, NULL);
	}
	for (size_t i = 0; i < pub->nsw; i++)
		close_switch(&pub->sw[i]);
	free(pub->sw);
	free(pub->names);
	reg_free(pub->reg);
	pthread_mutex_destroy(&pub->lock);
	pthread_cond_destroy(&pub->wake);
	free(pub);
}
