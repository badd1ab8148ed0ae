/* Controllers inside the simulation: see ctl.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/pfcwd.h"
#include "lib/timeutil.h"
#include "lib/vec.h"
#include "sim/ctl.h"
#include "sim/snapshot.h"

struct pending {
	int64_t at;
	bool wd;
	struct cc_dl_action a;
	struct cc_wd_action w;
	json_t *rec; /* its record in the results (borrowed) */
};

struct sim_ctl {
	struct sim *s;
	struct sim_ctl_opts o;
	struct sim_snapper *sn;
	struct cc_dl *dl;
	struct cc_wd *wd;     /* acting (--controller pfcwd) */
	struct cc_wd *shadow; /* --baseline pfcwd */
	int64_t next_snap;
	struct pending *pend;
	size_t npend, cappend;
	json_t *findings; /* "id" -> record */
	json_t *actions, *baseline;
	json_t *tl_t, *tl_rx; /* timeline: times, host -> per-interval bytes received */
	json_t *truth;	      /* "sorted ports" -> the deadlock the simulation really holds */
	int *hosts;
	int nhosts;
	uint64_t *host_prev;
	uint64_t intervals, stuck_max;
	bool *silent; /* by device: its readings withheld (--silent) */
	struct sim_tune *tn; /* --controller tuner: everything else is unused */
	double cc_ns_total, cc_ns_max; /* the detector's run time (wall clock) */
};

static uint64_t host_rx(const struct sim *s, int dev);

int sim_ctl_new(struct sim *s, const struct sim_ctl_opts *o, struct sim_ctl **ret, struct rf_err *e)
{
	struct sim_ctl *c = calloc(1, sizeof(*c));
	struct cc_wd_conf wc;
	int r;

	if (!c)
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	c->s = s;
	c->o = *o;
	if (c->o.interval_ps <= 0)
		c->o.interval_ps = 100 * INT64_C(1000000);
	if (o->controller == SIM_CTL_TUNER) {
		struct sim_tune_opts to = o->tune;

		to.interval_ps = c->o.interval_ps;
		to.delay_ps = o->delay_ps;
		to.silent = o->silent;
		if ((r = sim_tune_new(s, &to, &c->tn, e)) < 0) {
			free(c);
			return r;
		}
		*ret = c;
		return 0;
	}
	if (c->o.delay_ps < 0)
		c->o.delay_ps = c->o.interval_ps;
	if (c->o.restore_ps <= 0)
		c->o.restore_ps = 3 * c->o.interval_ps;
	if (!sim_lossless_prios(s)) {
		free(c);
		return rf_err_set(e, -EINVAL, "NO_LOSSLESS_PRIORITY", NULL,
				  "no port has PFC on: a PFC controller has nothing to watch");
	}
	wc = cc_wd_scaled(c->o.interval_ps / 1000000);
	c->sn = sim_snapper_new(s);
	c->findings = json_object();
	c->actions = json_array();
	c->baseline = json_array();
	c->tl_t = json_array();
	c->tl_rx = json_object();
	c->truth = json_object();
	if (!c->truth || !c->sn || !c->findings || !c->actions || !c->baseline || !c->tl_t || !c->tl_rx)
		goto nomem;
	if (c->o.controller == SIM_CTL_DETECTOR) {
		struct cc_dl_conf dc = cc_dl_defaults;

		dc.deadlock_mode = dc.storm_mode = c->o.mitigate;
		dc.restore_us = c->o.restore_ps / 1000000;
		if (!(c->dl = cc_dl_new(&dc)))
			goto nomem;
	} else if (c->o.controller == SIM_CTL_PFCWD && !(c->wd = cc_wd_new(&wc))) {
		goto nomem;
	}
	if (c->o.baseline_pfcwd && !(c->shadow = cc_wd_new(&wc)))
		goto nomem;
	if ((r = sim_silent_hosts(s, o->silent, &c->silent, e)) < 0) {
		sim_ctl_free(c);
		return r;
	}
	for (int d = 0; d < sim_device_count(s); d++)
		if (!sim_device_is_switch(s, d))
			c->nhosts++;
	c->hosts = calloc((size_t)c->nhosts + 1, sizeof(*c->hosts));
	c->host_prev = calloc((size_t)c->nhosts + 1, sizeof(*c->host_prev));
	if (!c->hosts || !c->host_prev)
		goto nomem;
	c->nhosts = 0;
	for (int d = 0; d < sim_device_count(s); d++)
		if (!sim_device_is_switch(s, d)) {
			c->host_prev[c->nhosts] = host_rx(s, d);
			c->hosts[c->nhosts++] = d;
			json_object_set_new(c->tl_rx, sim_device_name(s, d), json_array());
		}
	c->next_snap = sim_now(s) + c->o.interval_ps;
	*ret = c;
	return 0;
nomem:
	sim_ctl_free(c);
	return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
}

void sim_ctl_free(struct sim_ctl *c)
{
	if (!c)
		return;
	sim_tune_free(c->tn);
	sim_snapper_free(c->sn);
	cc_dl_free(c->dl);
	cc_wd_free(c->wd);
	cc_wd_free(c->shadow);
	free(c->pend);
	json_decref(c->findings);
	json_decref(c->actions);
	json_decref(c->baseline);
	json_decref(c->tl_t);
	json_decref(c->tl_rx);
	json_decref(c->truth);
	free(c->hosts);
	free(c->host_prev);
	free(c->silent);
	free(c);
}

int64_t sim_ctl_next(const struct sim_ctl *c)
{
	int64_t t = c->next_snap;

	if (c->tn)
		return sim_tune_next(c->tn);
	for (size_t i = 0; i < c->npend; i++)
		if (c->pend[i].at < t)
			t = c->pend[i].at;
	return t;
}

static void rx_fn(void *ctx, const char *name, int prio, uint64_t value)
{
	if (prio < 0 && !strcmp(name, "roce_rx_bytes"))
		*(uint64_t *)ctx = value;
}

static uint64_t host_rx(const struct sim *s, int dev)
{
	uint64_t v = 0;

	sim_counters(s, dev, 0, rx_fn, &v);
	return v;
}

static double us(int64_t ps)
{
	return (double)ps / 1e6;
}

static int queue(struct sim_ctl *c, const struct pending *p)
{
	if (vec_room((void **)&c->pend, &c->cappend, c->npend, sizeof(*c->pend)) < 0)
		return -ENOMEM;
	c->pend[c->npend++] = *p;
	return 0;
}

static int find_port(const struct sim *s, const char *node, const char *port, int *ret_dev)
{
	int d = sim_device_find(s, node);

	*ret_dev = d;
	if (d < 0)
		return -1;
	if (!sim_device_is_switch(s, d))
		return 0; /* a host has one port */
	return sim_port_find(s, d, port);
}

/* Takes a port's priority out of lossless mode, or puts it back. */
static bool apply_dl(struct sim_ctl *c, const struct cc_dl_action *a, char *err, size_t len)
{
	int d, p = find_port(c->s, a->node, a->port, &d);
	uint8_t mask;
	json_t *prios, *params;
	struct rf_err e = { 0 };
	int r;

	if (p < 0) {
		snprintf(err, len, "no port %s:%s", a->node, a->port);
		return false;
	}
	mask = sim_port_lossless(c->s, d, p);
	mask = a->op == CC_DL_LOSSY ? (uint8_t)(mask & ~(1u << a->prio)) : (uint8_t)(mask | (1u << a->prio));
	prios = json_array();
	for (int pr = 0; pr < 8; pr++)
		if (mask & (1u << pr))
			json_array_append_new(prios, json_integer(pr));
	params = json_pack("{s:o}", "priorities", prios);
	r = sim_set_pfc(c->s, d, p, params, &e);
	json_decref(params);
	if (r < 0)
		rf_err_str(&e, err, len);
	return r == 0;
}

static void run_due(struct sim_ctl *c)
{
	int64_t now = sim_now(c->s);

	for (size_t i = 0; i < c->npend;) {
		struct pending p = c->pend[i];
		char err[600] = "";
		bool ok;

		if (p.at > now) {
			i++;
			continue;
		}
		c->pend[i] = c->pend[--c->npend];
		if (p.wd) {
			int d, port = find_port(c->s, p.w.node, p.w.port, &d);

			ok = port >= 0 && sim_set_queue_drop(c->s, d, port, p.w.prio, p.w.op == CC_WD_DROP) == 0;
		} else {
			ok = apply_dl(c, &p.a, err, sizeof(err));
			cc_dl_action_done(c->dl, p.a.id, ok);
		}
		json_object_set_new(p.rec, "applied_us", json_real(us(now)));
		json_object_set_new(p.rec, "ok", json_boolean(ok));
		if (!ok)
			json_object_set_new(p.rec, "error", json_string(err));
	}
}

static json_t *labels(const struct cc_dl_queue *q, unsigned n)
{
	json_t *a = json_array();
	char buf[2 * CC_DL_NAME + 2];

	for (unsigned i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%s:%s", q[i].node, q[i].port);
		json_array_append_new(a, json_string(buf));
	}
	return a;
}

/* When the finding's queues last sent anything (ground truth): a deadlock froze then. */
static int64_t frozen_since(const struct sim *s, const struct cc_dl_finding *f)
{
	int64_t t = 0;

	for (unsigned i = 0; i < f->nports; i++) {
		int d, p = find_port(s, f->ports[i].node, f->ports[i].port, &d);
		int64_t x = p >= 0 ? sim_queue_last_tx(s, d, p, f->prio) : -1;

		if (x > t)
			t = x;
	}
	return t;
}

static int record_findings(struct sim_ctl *c, const struct cc_dl_result *r)
{
	char key[32];

	for (size_t i = 0; i < r->nfindings; i++) {
		const struct cc_dl_finding *f = &r->findings[i];
		json_t *rec;

		snprintf(key, sizeof(key), "%llu", (unsigned long long)f->id);
		rec = json_object_get(c->findings, key);
		if (!rec) {
			rec = json_pack("{s:I,s:s,s:i,s:o,s:f,s:s}", "id", (json_int_t)f->id, "class",
					cc_dl_class_name(f->cls), "priority", f->prio, "ports",
					labels(f->ports, f->nports), "detected_us", (double)r->t_us, "summary",
					f->summary);
			if (!rec)
				return -ENOMEM;
			if (f->culprit[0])
				json_object_set_new(rec, "culprit", json_string(f->culprit));
			if (f->cls == CC_DL_PAUSE_STORM) {
				json_object_set_new(rec, "victims", json_array());
				json_object_set_new(rec, "victims_total", json_integer(0));
			}
			if (f->cls == CC_DL_CONGESTION)
				json_object_set_new(rec, "queues_total", json_integer(f->victims_total));
			if (f->cls == CC_DL_DEADLOCK || f->cls == CC_DL_PERSISTENT)
				json_object_set_new(rec, "frozen_since_us", json_real(us(frozen_since(c->s, f))));
			if (f->suggested.node[0])
				json_object_set_new(rec, "suggested",
						    json_pack("{s:s,s:s}", "node", f->suggested.node, "port",
							      f->suggested.port));
			json_object_set_new(c->findings, key, rec);
		}
		if (strcmp(json_string_value(json_object_get(rec, "class")), cc_dl_class_name(f->cls)))
			json_object_set_new(rec, "class", json_string(cc_dl_class_name(f->cls)));
		json_object_set_new(rec, "last_us", json_real((double)r->t_us));
		if (f->cls == CC_DL_PAUSE_STORM) {
			/* every queue it froze while it lasted */
			json_t *all = json_object_get(rec, "victims"), *now = labels(f->victims, f->nvictims), *x;
			size_t k;

			json_array_foreach(now, k, x) {
				size_t m;
				json_t *y;
				bool dup = false;

				json_array_foreach(all, m, y)
					dup = dup || json_equal(x, y);
				if (!dup)
					json_array_append(all, x);
			}
			json_decref(now);
			if ((json_int_t)f->victims_total > json_integer_value(json_object_get(rec, "victims_total")))
				json_object_set_new(rec, "victims_total", json_integer(f->victims_total));
		}
		if (f->mitigated)
			json_object_set_new(rec, "mitigated", json_true());
	}
	for (size_t i = 0; i < r->ncleared; i++) {
		json_t *rec;

		snprintf(key, sizeof(key), "%llu", (unsigned long long)r->cleared[i]);
		rec = json_object_get(c->findings, key);
		if (rec && !json_object_get(rec, "cleared_us"))
			json_object_set_new(rec, "cleared_us", json_real((double)r->t_us));
	}
	return 0;
}

static int wd_record(struct sim_ctl *c, json_t *to, const struct cc_wd_action *a, size_t n, bool act)
{
	int64_t now = sim_now(c->s);

	for (size_t i = 0; i < n; i++) {
		json_t *rec = json_pack("{s:f,s:s,s:s,s:s,s:i}", "t_us", us(now), "op",
					a[i].op == CC_WD_DROP ? "drop" : "restore", "node", a[i].node, "port",
					a[i].port, "priority", a[i].prio);

		if (!rec || json_array_append_new(to, rec) < 0)
			return -ENOMEM;
		if (act) {
			struct pending p = { .at = now + c->o.delay_ps, .wd = true, .w = a[i], .rec = rec };

			if (queue(c, &p) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The deadlocks the simulation holds (queues frozen for half an interval), each once. */
static int record_truth(struct sim_ctl *c)
{
	json_t *now = sim_deadlocks(c->s, c->o.interval_ps / 2), *d;
	size_t i;

	json_array_foreach(now, i, d) {
		json_t *ports = json_object_get(d, "ports");
		size_t n = json_array_size(ports), len = 0;
		const char **v = calloc(n, sizeof(*v));
		char *key;

		if (!v) {
			json_decref(now);
			return -ENOMEM;
		}
		for (size_t k = 0; k < n; k++) {
			v[k] = json_string_value(json_array_get(ports, k));
			len += strlen(v[k]) + 1;
		}
		qsort(v, n, sizeof(*v), cmp_str);
		key = calloc(1, len + 8);
		if (!key) {
			free(v);
			json_decref(now);
			return -ENOMEM;
		}
		for (size_t k = 0, o = 0; k < n; k++)
			o += (size_t)snprintf(key + o, len + 8 - o, "%s,", v[k]);
		if (!json_object_get(c->truth, key)) {
			json_t *sorted = json_array();

			for (size_t k = 0; k < n; k++)
				json_array_append_new(sorted, json_string(v[k]));
			json_object_set_new(c->truth, key,
					    json_pack("{s:o,s:O,s:O,s:f}", "ports", sorted, "priority",
						      json_object_get(d, "priority"), "frozen_since_us",
						      json_object_get(d, "frozen_since_us"), "seen_us",
						      us(sim_now(c->s))));
		}
		free(key);
		free(v);
	}
	json_decref(now);
	return 0;
}

static int interval(struct sim_ctl *c)
{
	struct cc_snap *snap = sim_snapper_take(c->sn);
	int64_t now = sim_now(c->s);
	const struct cc_wd_action *wa;
	size_t nwa;
	int r = -ENOMEM;

	if (!snap)
		return -ENOMEM;
	sim_silence(c->s, c->silent, snap);
	c->intervals++;
	if (c->dl) {
		const struct cc_dl_result *res;
		int64_t t0 = tu_mono_ns();
		double ns;

		if (cc_dl_run(c->dl, snap, &res) < 0)
			goto out;
		ns = (double)(tu_mono_ns() - t0);
		c->cc_ns_total += ns;
		if (ns > c->cc_ns_max)
			c->cc_ns_max = ns;
		if (res->stuck_queues > c->stuck_max)
			c->stuck_max = res->stuck_queues;
		if (record_findings(c, res) < 0)
			goto out;
		for (size_t i = 0; i < res->nactions; i++) {
			const struct cc_dl_action *a = &res->actions[i];
			json_t *rec = cc_dl_action_json(a);
			struct pending p = { .at = now + c->o.delay_ps, .a = *a, .rec = rec };

			json_object_set_new(rec, "t_us", json_real(us(now)));
			if (json_array_append_new(c->actions, rec) < 0 || queue(c, &p) < 0)
				goto out;
		}
	}
	if (c->wd && (cc_wd_poll(c->wd, snap, &wa, &nwa) < 0 || wd_record(c, c->actions, wa, nwa, true) < 0))
		goto out;
	if (c->shadow &&
	    (cc_wd_poll(c->shadow, snap, &wa, &nwa) < 0 || wd_record(c, c->baseline, wa, nwa, false) < 0))
		goto out;
	if (record_truth(c) < 0)
		goto out;
	json_array_append_new(c->tl_t, json_real(us(now)));
	for (int i = 0; i < c->nhosts; i++) {
		uint64_t v = host_rx(c->s, c->hosts[i]);

		json_array_append_new(json_object_get(c->tl_rx, sim_device_name(c->s, c->hosts[i])),
				      json_integer((json_int_t)(v - c->host_prev[i])));
		c->host_prev[i] = v;
	}
	r = 0;
out:
	cc_snap_free(snap);
	return r;
}

int sim_ctl_step(struct sim_ctl *c)
{
	int64_t now = sim_now(c->s);

	if (c->tn)
		return sim_tune_step(c->tn);
	run_due(c);
	if (now >= c->next_snap) {
		c->next_snap = now + c->o.interval_ps;
		if (interval(c) < 0)
			return -ENOMEM;
		run_due(c); /* a zero actuation delay */
	}
	return 0;
}

static const char *kind_name(enum sim_ctl_kind k)
{
	return k == SIM_CTL_DETECTOR ? "detector" : k == SIM_CTL_PFCWD ? "pfcwd" : "none";
}

json_t *sim_ctl_json(const struct sim_ctl *c, bool timing)
{
	json_t *findings = json_array(), *o;
	uint64_t buffer, wd, looping;
	json_t *v;

	if (c->tn) {
		json_decref(findings);
		return sim_tune_json(c->tn, timing);
	}

	/* by id */
	for (uint64_t id = 1, left = json_object_size(c->findings); left; id++) {
		char key[32];

		snprintf(key, sizeof(key), "%llu", (unsigned long long)id);
		if ((v = json_object_get(c->findings, key))) {
			json_array_append(findings, v);
			left--;
		}
	}
	sim_drop_bytes(c->s, &buffer, &wd, &looping);
	o = json_pack("{s:s,s:f,s:f,s:f,s:s,s:o,s:o,s:O,s:O,s:{s:I,s:I,s:I},s:{s:O,s:O},s:I,s:I}", "kind",
		      kind_name(c->o.controller), "interval_us", us(c->o.interval_ps), "delay_us",
		      us(c->o.delay_ps), "restore_us", us(c->o.restore_ps), "mitigate",
		      cc_dl_mode_name(c->o.mitigate), "baseline", c->shadow ? json_string("pfcwd") : json_null(),
		      "findings", findings, "actions", c->actions, "baseline_actions", c->baseline, "drops",
		      "buffer_bytes", (json_int_t)buffer, "watchdog_bytes", (json_int_t)wd, "looping_bytes", (json_int_t)looping, "timeline", "t_us",
		      c->tl_t, "host_rx_bytes", c->tl_rx, "intervals", (json_int_t)c->intervals,
		      "stuck_queues_max", (json_int_t)c->stuck_max);
	if (o) {
		json_t *t = json_array();
		const char *k;

		json_object_foreach(c->truth, k, v)
			json_array_append(t, v);
		json_object_set_new(o, "truth_deadlocks", t);
	}
	if (o && timing && c->dl && c->intervals)
		json_object_set_new(o, "detector_ms", json_pack("{s:f,s:f}", "mean", c->cc_ns_total / (double)c->intervals / 1e6,
								"max", c->cc_ns_max / 1e6));
	return o;
}
