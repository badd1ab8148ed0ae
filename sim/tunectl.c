/* The tuner inside the simulation: see tunectl.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/deadlock.h"
#include "lib/timeutil.h"
#include "lib/vec.h"
#include "sim/snapshot.h"
#include "sim/tunectl.h"

struct due {
	int64_t at;
	uint64_t id;
	json_t *rec; /* borrowed: its record */
};

struct sim_tune {
	struct sim *s;
	struct sim_tune_opts o;
	struct sim_snapper *sn;
	struct cc_tn *tn;
	/* the PFC detector beside it, as in rocefabd, mitigating nothing: a fault it names (a
	 * deadlock, a pause storm, a slow receiver) holds the tuner's harder steps */
	struct cc_dl *dl;
	bool *silent; /* by device: its readings withheld (--silent) */
	unsigned prio;
	uint64_t xoff;
	int64_t next_snap;
	struct due *due;
	size_t ndue, capdue;
	json_t *props;	  /* id -> record */
	uint64_t last_id; /* the newest proposal recorded */
	json_t *timeline; /* per interval: t_us, settings, signals */
	json_t *violations;
	size_t class_size[CC_TN_NCLASSES]; /* members of each class, from the topology */
	enum cc_tn_class force_cls;
	uint64_t intervals, changes;
	bool forced;
	int64_t forced_applied_ps, rollback_applied_ps;
	char forced_refused[160]; /* the tuner's refusal of the forced step (not a violation) */
	uint64_t forced_step;
	double ns_total, ns_max;
	/* the pingmesh: the hosts, each one's run going (-1: none), the runs' p99 read at an
	 * interval */
	int *hosts, *run; /* run[i x peers + k]: host i's k-th */
	size_t nhosts, peers, nruns;
	uint64_t round, runs_read, runs_lost, probes_lost, runs_refused;
	double *tail;
};

static double us(int64_t ps)
{
	return (double)ps / 1e6;
}

/* The XOFF threshold an ingress reaches alone in an empty buffer: static, or the dynamic
 * threshold T = 2^alpha_shift x (shared - T). */
static uint64_t effective_xoff(const struct sim *s, int dev)
{
	json_t *pfc = sim_get_pfc(s, dev, 0);
	uint64_t r = 0;

	if (pfc && !strcmp(json_string_value(json_object_get(pfc, "threshold")) ?: "", "static")) {
		r = (uint64_t)json_integer_value(json_object_get(pfc, "xoff_bytes"));
	} else if (pfc) {
		double a = ldexp(1.0, (int)json_integer_value(json_object_get(pfc, "alpha_shift")));

		r = (uint64_t)(a * (double)sim_switch_shared_bytes(s, dev) / (1 + a));
	}
	json_decref(pfc);
	return r;
}

static void ecn_of(json_t *o, struct cc_tn_ecn *e)
{
	e->kmin_bytes = (uint64_t)json_integer_value(json_object_get(o, "kmin_bytes"));
	e->kmax_bytes = (uint64_t)json_integer_value(json_object_get(o, "kmax_bytes"));
	e->pmax = json_number_value(json_object_get(o, "pmax"));
}

static void dcqcn_of(json_t *o, struct cc_tn_dcqcn *d)
{
	d->min_time_between_cnps_us = json_number_value(json_object_get(o, "min_time_between_cnps_us"));
	d->rpg_time_reset_us = json_number_value(json_object_get(o, "rpg_time_reset_us"));
	d->rpg_ai_rate_mbps = json_number_value(json_object_get(o, "rpg_ai_rate_mbps"));
	d->rpg_hai_rate_mbps = json_number_value(json_object_get(o, "rpg_hai_rate_mbps"));
	d->rpg_byte_reset = (uint64_t)json_integer_value(json_object_get(o, "rpg_byte_reset"));
	d->dce_tcp_g = (uint32_t)json_integer_value(json_object_get(o, "dce_tcp_g"));
}

/* How many members a class has, from the simulation's own topology (a host's class from the
 * policy's patterns). */
static size_t class_size(const struct sim *s, const struct cc_tn_policy *pol, enum cc_tn_class cls)
{
	size_t n = 0;

	for (int d = 0; d < sim_device_count(s); d++) {
		bool has_hosts = false;

		if (!sim_device_is_switch(s, d)) {
			n += cls == cc_tn_host_class_of(pol, sim_device_name(s, d));
			continue;
		}
		for (int p = 0; p < sim_port_count(s, d); p++) {
			int pd, pp;

			if (sim_port_peer(s, d, p, &pd, &pp) == 0 && !sim_device_is_switch(s, pd))
				has_hosts = true;
		}
		for (int p = 0; p < sim_port_count(s, d); p++) {
			int pd, pp;
			bool to_host = sim_port_peer(s, d, p, &pd, &pp) == 0 && !sim_device_is_switch(s, pd);
			enum cc_tn_class c = to_host ? CC_TN_TOR_DOWN : has_hosts ? CC_TN_TOR_UP : CC_TN_SPINE;

			n += c == cls;
		}
	}
	return n;
}

static int probes_start(struct sim_tune *t);

/* The pingmesh's hosts and runs, and its first round (read at the first interval). */
static int probes_new(struct sim_tune *t)
{
	int ndev = sim_device_count(t->s);

	if (!(t->hosts = calloc((size_t)ndev + 1, sizeof(*t->hosts))))
		return -ENOMEM;
	for (int d = 0; d < ndev; d++)
		if (!sim_device_is_switch(t->s, d))
			t->hosts[t->nhosts++] = d;
	t->peers = t->nhosts > 1 ? t->nhosts - 1 : 0;
	if (t->o.probe_peers < t->peers)
		t->peers = t->o.probe_peers;
	t->nruns = t->nhosts * t->peers;
	if (!(t->run = malloc((t->nruns + 1) * sizeof(*t->run))) ||
	    !(t->tail = malloc((t->nruns + 1) * sizeof(*t->tail))))
		return -ENOMEM;
	for (size_t r = 0; r < t->nruns; r++)
		t->run[r] = -1;
	return probes_start(t);
}

int sim_tune_new(struct sim *s, const struct sim_tune_opts *o, struct sim_tune **ret, struct rf_err *e)
{
	struct sim_tune *t = calloc(1, sizeof(*t));
	struct cc_tn_policy pol = cc_tn_defaults;
	struct cc_dl_conf dlc = cc_dl_defaults;
	uint8_t prios = sim_lossless_prios(s);
	char err[300];
	char name[96];
	int r;

	if (!t)
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	t->s = s;
	t->o = *o;
	if (t->o.interval_ps <= 0)
		t->o.interval_ps = 100 * INT64_C(1000000);
	if (t->o.delay_ps < 0)
		t->o.delay_ps = t->o.interval_ps / 10;
	if ((r = sim_silent_hosts(s, o->silent, &t->silent, e)) < 0) {
		free(t);
		return r;
	}
	if (o->policy && cc_tn_policy_from_json(o->policy, &pol, err, sizeof(err)) < 0) {
		sim_tune_free(t);
		return rf_err_set(e, -EINVAL, "BAD_POLICY", NULL, "%s", err);
	}
	if (o->mode_given || !(o->policy && json_object_get(o->policy, "mode")))
		pol.mode = o->mode;
	if (!prios) {
		sim_tune_free(t);
		return rf_err_set(e, -EINVAL, "NO_LOSSLESS_PRIORITY", NULL,
				  "no port has PFC on: the tuner keeps a lossless priority's queues short");
	}
	for (t->prio = 0; !(prios & (1u << t->prio)); t->prio++)
		;
	t->sn = sim_snapper_new(s);
	t->tn = cc_tn_new(&pol);
	dlc.deadlock_mode = dlc.storm_mode = CC_DL_OFF; /* findings, no action */
	t->dl = cc_dl_new(&dlc);
	t->props = json_object();
	t->timeline = json_array();
	t->violations = json_array();
	if (!t->sn || !t->tn || !t->dl || !t->props || !t->timeline || !t->violations)
		goto nomem;
	for (int d = 0; d < sim_device_count(s); d++) {
		if (sim_device_is_switch(s, d)) {
			uint64_t x = effective_xoff(s, d);

			if (!t->xoff || x < t->xoff)
				t->xoff = x;
			for (int p = 0; p < sim_port_count(s, d); p++) {
				json_t *g = sim_get_ecn(s, d, p, (int)t->prio);
				struct cc_tn_ecn ecn;

				ecn_of(g, &ecn);
				json_decref(g);
				if (cc_tn_track_port(t->tn, sim_device_name(s, d),
						     sim_snap_port_name(s, d, p, name, sizeof(name)), &ecn) < 0)
					goto nomem;
			}
		} else {
			json_t *g = sim_get_dcqcn(s, d);
			struct cc_tn_dcqcn dc;

			dcqcn_of(g, &dc);
			json_decref(g);
			if (cc_tn_track_host(t->tn, sim_device_name(s, d), &dc) < 0)
				goto nomem;
		}
	}
	for (int c = 0; c < CC_TN_NCLASSES; c++)
		t->class_size[c] = class_size(s, &pol, (enum cc_tn_class)c);
	if (probes_new(t) < 0)
		goto nomem;
	if (o->force && cc_tn_class_lookup(&pol, o->force_cls, &t->force_cls) < 0) {
		sim_tune_free(t);
		return rf_err_set(e, -EINVAL, "BAD_FORCE", NULL,
				  "--force-step: no class '%s' (tor_down, tor_up, spine, hosts, or a host class "
				  "of the policy)",
				  o->force_cls);
	}
	t->next_snap = sim_now(s) + t->o.interval_ps;
	/* the switches clear their periodic watermarks every interval: each interval's peak */
	sim_watermark_period(s, t->o.interval_ps);
	*ret = t;
	return 0;
nomem:
	sim_tune_free(t);
	return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
}

void sim_tune_free(struct sim_tune *t)
{
	if (!t)
		return;
	sim_snapper_free(t->sn);
	cc_tn_free(t->tn);
	cc_dl_free(t->dl);
	free(t->silent);
	free(t->hosts);
	free(t->run);
	free(t->tail);
	free(t->due);
	json_decref(t->props);
	json_decref(t->timeline);
	json_decref(t->violations);
	free(t);
}

int64_t sim_tune_next(const struct sim_tune *t)
{
	int64_t n = t->next_snap;

	for (size_t i = 0; i < t->ndue; i++)
		if (t->due[i].at < n)
			n = t->due[i].at;
	/* a forced step due is tried at its time, and again at each interval while the class is
	 * busy with a step of its own (sim_tune_step) */
	if (t->o.force && !t->forced && t->o.force_at_ps < n && t->o.force_at_ps > sim_now(t->s))
		n = t->o.force_at_ps;
	return n;
}

static void violation(struct sim_tune *t, const char *what, const char *node, const char *port)
{
	json_array_append_new(t->violations, json_pack("{s:f,s:s,s:s,s:s}", "t_us", us(sim_now(t->s)), "what",
						       what, "node", node, "port", port));
}

/* Applies one change and reads it back; the harness checks the invariants on what it read. */
static bool apply_change(struct sim_tune *t, const struct cc_tn_proposal *pr, const struct cc_tn_change *c, char *err,
			 size_t len)
{
	struct sim *s = t->s;
	int d = sim_device_find(s, c->node);
	struct rf_err e = { 0 };
	json_t *params, *back;
	const struct cc_tn_policy *pol = cc_tn_get_policy(t->tn);
	int r;

	if (d < 0) {
		snprintf(err, len, "no device %s", c->node);
		return false;
	}
	if (c->host) {
		struct cc_tn_dcqcn got;
		const char *why;

		params = json_pack("{s:f,s:f,s:f,s:f,s:I,s:i}", "min_time_between_cnps_us",
				   c->dc_to.min_time_between_cnps_us, "rpg_time_reset_us", c->dc_to.rpg_time_reset_us,
				   "rpg_ai_rate_mbps", c->dc_to.rpg_ai_rate_mbps, "rpg_hai_rate_mbps",
				   c->dc_to.rpg_hai_rate_mbps, "rpg_byte_reset", (json_int_t)c->dc_to.rpg_byte_reset,
				   "dce_tcp_g", (int)c->dc_to.dce_tcp_g);
		r = sim_set_dcqcn(s, d, params, &e);
		json_decref(params);
		if (r < 0) {
			rf_err_str(&e, err, len);
			return false;
		}
		back = sim_get_dcqcn(s, d);
		dcqcn_of(back, &got);
		json_decref(back);
		if (got.min_time_between_cnps_us != c->dc_to.min_time_between_cnps_us ||
		    got.rpg_time_reset_us != c->dc_to.rpg_time_reset_us ||
		    got.rpg_ai_rate_mbps != c->dc_to.rpg_ai_rate_mbps ||
		    got.rpg_hai_rate_mbps != c->dc_to.rpg_hai_rate_mbps ||
		    got.rpg_byte_reset != c->dc_to.rpg_byte_reset || got.dce_tcp_g != c->dc_to.dce_tcp_g) {
			snprintf(err, len, "read back differs from what was set");
			return false;
		}
		/* a rollback restores what was there, inside the policy's ranges or not */
		if (pr->phase != CC_TN_ROLLBACK && (why = cc_tn_dcqcn_check(pol, &got)))
			violation(t, why, c->node, "");
	} else {
		int p = sim_port_find(s, d, c->port);
		struct cc_tn_ecn got;

		if (p < 0) {
			snprintf(err, len, "no port %s:%s", c->node, c->port);
			return false;
		}
		params = json_pack("{s:I,s:I,s:f}", "kmin_bytes", (json_int_t)c->ecn_to.kmin_bytes, "kmax_bytes",
				   (json_int_t)c->ecn_to.kmax_bytes, "pmax", c->ecn_to.pmax);
		r = sim_set_ecn(s, d, p, (int)t->prio, params, &e);
		json_decref(params);
		if (r < 0) {
			rf_err_str(&e, err, len);
			return false;
		}
		back = sim_get_ecn(s, d, p, (int)t->prio);
		ecn_of(back, &got);
		json_decref(back);
		if (got.kmin_bytes != c->ecn_to.kmin_bytes || got.kmax_bytes != c->ecn_to.kmax_bytes ||
		    fabs(got.pmax - c->ecn_to.pmax) > 1e-9) {
			snprintf(err, len, "read back differs from what was set");
			return false;
		}
		/* the harness's own check of the invariants, on what the switch holds */
		if (!(got.kmin_bytes < got.kmax_bytes))
			violation(t, "kmin_bytes >= kmax_bytes", c->node, c->port);
		if (got.kmax_bytes + pol->loop_bytes > t->xoff)
			violation(t, "kmax_bytes within one control loop of XOFF", c->node, c->port);
		/* the ranges, of the knob the step moves (a rollback restores what was there) */
		if (pr->phase != CC_TN_ROLLBACK &&
		    ((pr->knob == CC_TN_KMIN && got.kmin_bytes < pol->kmin_floor_bytes) ||
		     (pr->knob == CC_TN_KMAX && got.kmax_bytes > pol->kmax_ceiling_bytes) ||
		     (pr->knob == CC_TN_PMAX && (got.pmax < pol->pmax_floor || got.pmax > pol->pmax_ceiling))))
			violation(t, "outside the policy's range", c->node, c->port);
	}
	t->changes++;
	return true;
}

static void run_due(struct sim_tune *t)
{
	int64_t now = sim_now(t->s);

	for (size_t i = 0; i < t->ndue;) {
		struct due d = t->due[i];
		struct cc_tn_proposal *p;
		char err[400] = "";
		bool ok = true;

		if (d.at > now) {
			i++;
			continue;
		}
		t->due[i] = t->due[--t->ndue];
		p = cc_tn_find(t->tn, d.id);
		for (size_t k = 0; p && k < p->nchanges && ok; k++)
			ok = apply_change(t, p, &p->changes[k], err, sizeof(err));
		if (p && p->forced && p->phase == CC_TN_CANARY)
			t->forced_applied_ps = now;
		if (p && p->step == t->forced_step && p->phase == CC_TN_ROLLBACK && !t->rollback_applied_ps)
			t->rollback_applied_ps = now;
		cc_tn_applied(t->tn, d.id, ok ? CC_TN_OUT_APPLIED : CC_TN_OUT_FAILED);
		/* the record says how it ended (it was made when approved) */
		json_object_set_new(d.rec, "state", json_string(ok ? "applied" : "failed"));
		json_object_set_new(d.rec, "applied_us", json_real(us(now)));
		json_object_set_new(d.rec, "ok", json_boolean(ok));
		if (!ok)
			json_object_set_new(d.rec, "error", json_string(err));
	}
}

/* Records the proposals made and queues those to apply. */
static int take_proposals(struct sim_tune *t)
{
	size_t n;
	struct cc_tn_proposal **v = cc_tn_pending(t->tn, &n);
	const struct cc_tn_policy *pol = cc_tn_get_policy(t->tn);

	size_t nnew;
	struct cc_tn_proposal **made = cc_tn_made_since(t->tn, t->last_id, &nnew);

	/* every proposal made, those that wait or apply and those done when made (a step's
	 * completion, a canary of members already there) */
	for (size_t i = 0; i < nnew; i++) {
		char key[32];
		json_t *rec;

		snprintf(key, sizeof(key), "%llu", (unsigned long long)made[i]->id);
		if (!(rec = cc_tn_proposal_json(made[i])) || json_object_set_new(t->props, key, rec) < 0)
			return -ENOMEM;
		json_object_del(rec, "changes"); /* nchanges says how many */
		t->last_id = made[i]->id;
	}
	for (size_t i = 0; i < n; i++) {
		struct cc_tn_proposal *p = v[i];
		char key[32];
		json_t *rec;
		bool queued = false;

		snprintf(key, sizeof(key), "%llu", (unsigned long long)p->id);
		if (!(rec = json_object_get(t->props, key)))
			continue; /* not possible: recorded above */
		if (p->state != CC_TN_APPROVED)
			continue;
		for (size_t k = 0; k < t->ndue; k++)
			queued = queued || t->due[k].id == p->id;
		if (queued)
			continue;
		if (p->phase != CC_TN_ROLLBACK && p->nchanges > 0) {
			/* the share of a class changed per step: checked here, not taken on trust */
			size_t members = 0;

			members = t->class_size[p->cls];
			if (members && (double)p->nchanges > ceil(pol->max_share * (double)members))
				violation(t, "more than max_share of the class changed in one step",
					  p->cls_name, "");
		}
		if (vec_room((void **)&t->due, &t->capdue, t->ndue, sizeof(*t->due)) < 0)
			return -ENOMEM;
		t->due[t->ndue++] = (struct due){ .at = sim_now(t->s) + t->o.delay_ps, .id = p->id, .rec = rec };
	}
	return 0;
}

/* The median over the runs done since the last interval of each one's p99: -1 when none was
 * done.  Reads (and so frees) the runs done; those still going stay. */
static double probes_take(struct sim_tune *t)
{
	size_t k = 0;

	for (size_t i = 0; i < t->nruns; i++) {
		json_t *res, *x;
		double v[SIM_TUNE_PROBE_COUNT];
		size_t n = 0, j;

		if (t->run[i] < 0 || !sim_probe_done(t->s, t->run[i]) || !(res = sim_probe_result(t->s, t->run[i])))
			continue;
		t->run[i] = -1;
		json_array_foreach(json_object_get(res, "samples_us"), j, x)
			if (n < SIM_TUNE_PROBE_COUNT)
				v[n++] = json_number_value(x);
		t->probes_lost += (uint64_t)json_integer_value(json_object_get(res, "lost"));
		json_decref(res);
		t->runs_read++;
		if (n) {
			qsort(v, n, sizeof(*v), vec_cmp_double);
			t->tail[k++] = vec_percentile(v, n, 99);
		} else {
			t->runs_lost++;
			t->tail[k++] = us(t->o.interval_ps); /* nothing came back in time */
		}
	}
	if (!k)
		return -1;
	qsort(t->tail, k, sizeof(*t->tail), vec_cmp_double);
	return vec_median(t->tail, k);
}

/* The next round: run k of host i probes the host (round x peers + k) further along its
 * rotation over the others, unless its last run is still going; each lap of the rotation on
 * the other of two paths (a pair comes round once a lap). */
static int probes_start(struct sim_tune *t)
{
	size_t n = t->nhosts;

	for (size_t r = 0; r < t->nruns; r++) {
		uint64_t turn = t->round * t->peers + r % t->peers;
		size_t i = r / t->peers, j = (i + 1 + turn % (n - 1)) % n;
		struct rf_err e = { 0 };
		int id;

		if (t->run[r] >= 0)
			continue;
		id = sim_probe_start(t->s, t->hosts[i], t->hosts[j], SIM_TUNE_PROBE_BYTES,
				     (uint32_t)(turn / (n - 1) % 2), SIM_TUNE_PROBE_COUNT, t->o.interval_ps, &e);
		if (id == -ENOMEM)
			return -ENOMEM;
		if (id >= 0)
			t->run[r] = id;
		else
			t->runs_refused++; /* a signal lost: the simulation holds too many runs */
	}
	t->round++;
	return 0;
}

static int interval(struct sim_tune *t)
{
	struct cc_snap *snap = sim_snapper_take(t->sn);
	const struct cc_dl_result *res;
	struct cc_tn_input in;
	char fault[CC_DL_FAULT_LEN];
	json_t *st, *e;
	int64_t t0;
	double ns;
	int r;

	if (!snap)
		return -ENOMEM;
	sim_silence(t->s, t->silent, snap);
	in = (struct cc_tn_input){ .snap = snap, .prio = t->prio, .xoff_bytes = t->xoff, .probe_p99_us = probes_take(t) };
	if (cc_dl_run(t->dl, snap, &res) < 0) {
		cc_snap_free(snap);
		return -ENOMEM;
	}
	/* (a deadlock once it has lasted three intervals) */
	if (cc_dl_fault(res, t->prio, t->o.interval_ps / 1000000 * 3 / 2, fault, sizeof(fault)))
		in.fault = fault;
	t0 = tu_mono_ns();
	r = cc_tn_run(t->tn, &in);
	ns = (double)(tu_mono_ns() - t0);
	t->ns_total += ns;
	if (ns > t->ns_max)
		t->ns_max = ns;
	cc_snap_free(snap);
	if (r < 0 || (r = probes_start(t)) < 0)
		return r;
	t->intervals++;
	st = cc_tn_json(t->tn);
	if (!st)
		return -ENOMEM;
	e = json_pack("{s:f,s:s,s:O,s:O}", "t_us", us(sim_now(t->s)), "state",
		      json_string_value(json_object_get(st, "state")), "settings", json_object_get(st, "settings"),
		      "signals", json_object_get(st, "signals"));
	/* (a fault: why no harder step starts) */
	if (e && json_object_get(st, "harder_held_for"))
		json_object_set(e, "harder_held_for", json_object_get(st, "harder_held_for"));
	json_decref(st);
	if (!e || json_array_append_new(t->timeline, e) < 0)
		return -ENOMEM;
	return take_proposals(t);
}

int sim_tune_step(struct sim_tune *t)
{
	int64_t now = sim_now(t->s);

	run_due(t);
	if (t->o.force && !t->forced && now >= t->o.force_at_ps) {
		const char *why;
		int r = cc_tn_force(t->tn, t->force_cls, t->o.force_knob, t->o.force_value, &why);

		if (r == 0) {
			size_t n;
			struct cc_tn_proposal **v = cc_tn_pending(t->tn, &n);

			t->forced = true;
			for (size_t i = 0; i < n; i++)
				if (v[i]->forced)
					t->forced_step = v[i]->step;
			if (take_proposals(t) < 0)
				return -ENOMEM;
		} else if (r != -EBUSY) {
			/* refused by the tuner's own checks: said in the results, not retried; the
			 * violations are the harness's findings on values applied */
			t->forced = true;
			snprintf(t->forced_refused, sizeof(t->forced_refused), "%s", why ? why : "refused");
		}
	}
	if (now >= t->next_snap) {
		t->next_snap = now + t->o.interval_ps;
		if (interval(t) < 0)
			return -ENOMEM;
		run_due(t);
	}
	return 0;
}

json_t *sim_tune_json(const struct sim_tune *t, bool timing)
{
	json_t *props = json_array(), *st = cc_tn_json(t->tn), *o, *v;
	uint64_t rb, steps = cc_tn_steps(t->tn, &rb);

	for (uint64_t id = 1, left = json_object_size(t->props); left; id++) {
		char key[32];

		snprintf(key, sizeof(key), "%llu", (unsigned long long)id);
		if ((v = json_object_get(t->props, key))) {
			json_array_append(props, v);
			left--;
		}
	}
	o = json_pack("{s:s,s:f,s:f,s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:O,s:O,s:O,s:o}", "kind", "tuner", "interval_us",
		      us(t->o.interval_ps), "delay_us", us(t->o.delay_ps), "mode",
		      cc_tn_mode_name(cc_tn_get_policy(t->tn)->mode), "priority", (json_int_t)t->prio, "xoff_bytes",
		      (json_int_t)t->xoff, "intervals", (json_int_t)t->intervals, "steps", (json_int_t)steps,
		      "rolled_back", (json_int_t)rb, "proposals", props, "timeline", t->timeline, "violations",
		      t->violations, "final", json_object_get(st, "settings"), "policy",
		      cc_tn_policy_json(cc_tn_get_policy(t->tn)));
	json_object_set_new(o, "changes_applied", json_integer((json_int_t)t->changes));
	json_object_set_new(o, "probes",
			    json_pack("{s:I,s:i,s:i,s:I,s:I,s:I,s:I}", "peers", (json_int_t)t->peers, "count",
				      SIM_TUNE_PROBE_COUNT,
				      "bytes", SIM_TUNE_PROBE_BYTES, "runs_read", (json_int_t)t->runs_read,
				      "runs_all_lost", (json_int_t)t->runs_lost, "probes_lost",
				      (json_int_t)t->probes_lost, "runs_not_started", (json_int_t)t->runs_refused));
	if (timing && t->intervals)
		json_object_set_new(o, "tuner_ms", json_pack("{s:f,s:f}", "mean", t->ns_total / (double)t->intervals / 1e6,
							     "max", t->ns_max / 1e6));
	if (t->o.force) {
		json_t *f = json_pack("{s:s,s:s,s:f,s:f}", "class", t->o.force_cls, "knob",
				      cc_tn_knob_name(t->o.force_knob), "value", t->o.force_value, "at_us",
				      us(t->o.force_at_ps));

		if (t->forced_applied_ps)
			json_object_set_new(f, "applied_us", json_real(us(t->forced_applied_ps)));
		if (t->forced_refused[0])
			json_object_set_new(f, "refused", json_string(t->forced_refused));
		if (t->rollback_applied_ps) {
			json_object_set_new(f, "rolled_back_us", json_real(us(t->rollback_applied_ps)));
			json_object_set_new(f, "rollback_intervals",
					    json_real((double)(t->rollback_applied_ps - t->forced_applied_ps) /
						      (double)t->o.interval_ps));
		}
		json_object_set_new(o, "forced", f);
	}
	json_decref(st);
	return o;
}

int sim_tune_parse_force(const char *s, struct sim_tune_opts *o)
{
	char cls[32], knob[48], val[32], at[32];
	int64_t ns;
	char *end;

	if (sscanf(s, "%31[^:]:%47[^=]=%31[^@]@%31s", cls, knob, val, at) != 4 ||
	    cc_tn_knob_parse(knob, &o->force_knob) < 0)
		return -EINVAL;
	snprintf(o->force_cls, sizeof(o->force_cls), "%s", cls); /* a host class is known with the policy */
	o->force_value = strtod(val, &end);
	if (*end || !isfinite(o->force_value) || tu_parse_duration(at, &ns) < 0 || ns < 0)
		return -EINVAL;
	o->force_at_ps = ns * 1000;
	o->force = true;
	return 0;
}
