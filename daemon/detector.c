/* The PFC detector of rocefabd: see detector.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/snap.h"
#include "daemon/alerts.h"
#include "daemon/changes.h"
#include "daemon/delta.h"
#include "daemon/detector.h"
#include "daemon/topo.h"
#include "lib/hmap.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"
#include "lib/vec.h"

const struct detector_conf detector_defaults = {
	.deadlock_mode = CC_DL_ADVISE,
	.storm_mode = CC_DL_ADVISE,
	.restore_ns = 600 * NSEC_PER_MSEC,
};

#define MAX_RESTORE_MS 3600000
#define CACHE_EVERY (2 * NSEC_PER_SEC) /* topology and PFC settings re-read */
#define CACHE_NEW (250 * NSEC_PER_MSEC) /* sooner when the lane has ports it does not know */
#define STALE_INTERVALS 3		/* a port silent this many intervals leaves the snapshot */
#define RATE_WINDOW_NS (10 * NSEC_PER_SEC) /* the lane's reports and bytes per second: over this */
#define FORGET_NS (60 * NSEC_PER_SEC)	/* and this long, the lane */
#define RECENT_NS (10 * NSEC_PER_SEC)	/* snapshot?span=recent: the intervals of the last 10 to 20 s */
#define LANE_MAX_PORTS 262144		/* ports the lane holds at most (a fabric's, with room) */
#define LANE_MAX_AGENT_PORTS 1024	/* and of one agent (a switch has up to a few hundred) */
#define LANE_FUTURE_NS (60 * NSEC_PER_SEC) /* a reading this far ahead of rocefabd's clock is refused */

static const char *const alert_kinds[] = { "deadlock", "pause_storm", "slow_receiver", "persistent",
					   "restore_failed", NULL };

/* --- configuration ----------------------------------------------------------------------------- */

json_t *detector_conf_json(const struct detector_conf *c)
{
	return json_pack("{s:s,s:s,s:I}", "deadlock_mode", cc_dl_mode_name(c->deadlock_mode), "storm_mode",
			 cc_dl_mode_name(c->storm_mode), "restore_ms", (json_int_t)(c->restore_ns / NSEC_PER_MSEC));
}

int detector_conf_apply(struct detector_conf *c, json_t *changes, struct rf_err *e)
{
	struct detector_conf n = *c;
	const char *k;
	json_t *v;

	if (!json_is_object(changes))
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/", "the configuration must be a JSON object");
	if (!json_object_size(changes))
		return rf_err_set(e, -EINVAL, "NO_CHANGE", "/", "name at least one of deadlock_mode, storm_mode, restore_ms");
	json_object_foreach(changes, k, v) {
		struct js_path path = { .len = 0 };
		const char *ptr; /* the field, as a JSON pointer */

		js_path_push_key(&path, k);
		ptr = js_path_str(&path);
		if (!strcmp(k, "deadlock_mode") || !strcmp(k, "storm_mode")) {
			enum cc_dl_mode m;

			if (!json_is_string(v) || cc_dl_mode_parse(json_string_value(v), &m) < 0)
				return rf_err_set(e, -EINVAL, "BAD_VALUE", ptr,
						  "%s must be \"off\", \"advise\" or \"auto\"", k);
			*(!strcmp(k, "deadlock_mode") ? &n.deadlock_mode : &n.storm_mode) = m;
		} else if (!strcmp(k, "restore_ms")) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_RESTORE_MS)
				return rf_err_set(e, -EINVAL, "BAD_VALUE", ptr,
						  "restore_ms must be an integer from 1 to %d", MAX_RESTORE_MS);
			n.restore_ns = json_integer_value(v) * NSEC_PER_MSEC;
		} else {
			return rf_err_set(e, -EINVAL, "UNKNOWN_FIELD", ptr,
					  "'%s' is not a detector setting (deadlock_mode, storm_mode, restore_ms)", k);
		}
	}
	*c = n;
	return 0;
}

/* --- state ---------------------------------------------------------------------------------------- */

/* One priority of a port in the fast lane: its last two readings (a port's own fields too:
 * lport.portv). */
_Static_assert((int)CP_N <= (int)CF_N, "an lprio holds a port's own fields as well");
struct lprio {
	uint8_t prio;
	uint8_t width[CF_N];
	uint32_t have[2];
	uint32_t scale[CF_N];
	uint64_t raw[2][CF_N]; /* [1]: the last reading, [0]: the one before */
};

/* The last two readings of one port in the fast lane (only the priorities it reports: the
 * lossless ones). */
struct lport {
	char *key; /* "agent\x1fdevice\x1fport" */
	char agent[65], label[132];
	bool is_switch;
	uint8_t npr;
	struct lprio *pr;
	struct lprio portv; /* the port's own counters (lane_pfield), for the tuner */
	int64_t t[2];
	int n;		 /* readings held, 0..2 */
	int64_t rx_mono; /* when the last one came */
};

/* An agent in the fast lane: how many of its ports it holds (bounded per agent). */
struct lagent {
	char *id;
	unsigned nports;
};

/* The topology and settings the snapshot needs, re-read every CACHE_EVERY. */
struct cport {
	char *key; /* "agent\x1flabel" */
	char peer_agent[65], peer_label[132];
	bool down, have_peer;
	bool host; /* a host's port (the agents table's role) */
	int lossless; /* -1: unknown */
	uint64_t speed_mbps; /* 0: unknown */
	int64_t silent_until; /* a switch port: its host's silent port stays in the snapshots
			       * until then (monotonic ns; silent_port) */
};

struct inflight {
	uint64_t action;
	int64_t change;
	int mask; /* the port's PFC priorities once applied */
	enum cc_dl_op op;
	enum cc_dl_class cls;
	char *subject; /* a restoration's alert subject (owned, or NULL): recorded there once applied */
	char node[CC_DL_NAME], port[CC_DL_NAME];
	uint8_t prio;
};

struct subject {
	char *key; /* finding id as text */
	uint64_t finding;
	char *subject;
	bool seen;
	int64_t last_us, last_ns; /* the finding's last_us, and rocefabd's clock when it changed */
};

struct detector {
	struct store *store;
	const struct reg *reg;
	struct detector_opts o;
	int *field_of; /* registry counter id -> cc field, CF_N + port field, -1 */
	pthread_mutex_t lock;	 /* the lane, the cache, the figures */
	pthread_mutex_t dl_lock; /* the analysis: dl, findings, subjects, inf, restore_failed, last */
	pthread_mutex_t conf_lock; /* a change of the configuration: read, save and apply, one at a time */
	struct detector_conf conf;
	bool conf_loaded;
	struct cc_dl *dl;
	struct hmap lane;  /* key -> struct lport */
	struct hmap agents; /* agent id -> struct lagent */
	struct hmap cache; /* key -> struct cport */
	int64_t cache_at;
	struct hmap subjects; /* finding id -> struct subject */
	struct inflight *inf;
	size_t ninf, capinf;
	struct cc_snap *last;
	/* every interval analysed, summed (snapshot?span=recent): since recent_at in [1], over the
	 * RECENT_NS before in [0]; how many intervals each holds */
	struct cc_snap *recent[2];
	unsigned nrecent[2];
	int64_t recent_from_us[2]; /* where the first interval of each began (counters' clock) */
	int64_t recent_at;
	uint64_t fed_gen; /* lane_gen of the last snapshot summed and given to the listener */
	json_t *findings; /* the last run's, for status */
	json_t *ended;	  /* alert findings over within ENDED_KEEP_NS: [{"f": finding, "at": mono ns}] */
	/* restorations that failed, until one succeeds or the queue is no longer held (an operator
	 * put the port back): their queues and alert subjects */
	struct rfail {
		char *subject;
		char node[CC_DL_NAME], port[CC_DL_NAME];
		uint8_t prio;
	} restore_failed[64];
	unsigned nrestore_failed;
	/* figures */
	uint64_t lane_reports, lane_bytes, lane_stale, lane_full, lane_future;
	uint64_t lane_gen, analysed_gen; /* readings taken; as of the last analysis */
	int64_t analysed_mono, lane_rx_mono; /* the last analysis; the newest reading's arrival */
	/* the lane's rates over the last RATE_WINDOW_NS or so: reports and bytes then, and now */
	int64_t rate_mono;
	uint64_t rate_reports, rate_bytes;
	double reports_per_s, bytes_per_s;
	bool rates_ready; /* a window was measured (before: the averages since the start) */
	bool lane_unknown; /* a lane port the cache does not know (yet) */
	bool recovered;	   /* recover_holds() ran */
	uint64_t runs, actions_ok, actions_failed, restores_ok, restores_failed;
	int64_t lane_since_mono, last_run_ns, last_run_t;
	unsigned stuck, holds;
	unsigned by_class[CC_DL_NCLASSES];
	/* per priority, the last run's first fault congestion control cannot cure (cc_dl_fault):
	 * what holds the tuner's harder steps on it (detector_fault); "" none */
	char fault[CC_NPRIO][CC_DL_FAULT_LEN];
	detector_snap_fn listener;
	void *listener_ctx;
};

/* A map whose keys are its values' first member (char *key or char *id). */
static void lane_free(struct hmap *h)
{
	const char *k;
	void *v;

	for (size_t i = 0; hmap_next(h, &i, &k, &v);) {
		free((char *)k);
		free(v);
	}
	hmap_fini(h);
}

static void lports_free(struct hmap *h)
{
	const char *k;
	void *v;

	for (size_t i = 0; hmap_next(h, &i, &k, &v);) {
		free(((struct lport *)v)->pr);
		free((char *)k);
		free(v);
	}
	hmap_fini(h);
}

int detector_new(struct store *s, const struct reg *reg, const struct detector_opts *o, struct detector **ret)
{
	struct detector *d = calloc(1, sizeof(*d));
	struct cc_dl_conf dc = cc_dl_defaults;

	if (!d)
		return -ENOMEM;
	d->store = s;
	d->reg = reg;
	d->o = *o;
	d->conf = o->conf;
	d->field_of = calloc(reg_size(reg) + 1, sizeof(*d->field_of));
	dc.deadlock_mode = d->conf.deadlock_mode;
	dc.storm_mode = d->conf.storm_mode;
	dc.restore_us = d->conf.restore_ns / 1000;
	d->dl = cc_dl_new(&dc);
	if (!d->field_of || !d->dl) {
		detector_free(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < reg_size(reg); i++) {
		const char *name = reg_counter(reg, (unsigned)i)->name;
		int f = lane_field_of(name, false);

		d->field_of[i] = f >= 0 ? CF_N + f : lane_field_of(name, true);
	}
	hmap_init(&d->lane);
	hmap_init(&d->agents);
	hmap_init(&d->cache);
	hmap_init(&d->subjects);
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->dl_lock, NULL);
	pthread_mutex_init(&d->conf_lock, NULL);
	d->lane_since_mono = tu_mono_ns();
	d->findings = json_array();
	d->ended = json_array();
	*ret = d;
	return 0;
}

static void subjects_free(struct hmap *h)
{
	const char *k;
	void *v;

	for (size_t i = 0; hmap_next(h, &i, &k, &v);) {
		struct subject *s = v;

		free(s->key);
		free(s->subject);
		free(s);
	}
	hmap_fini(h);
}

void detector_free(struct detector *d)
{
	if (!d)
		return;
	lports_free(&d->lane);
	lane_free(&d->agents);
	lane_free(&d->cache);
	subjects_free(&d->subjects);
	cc_dl_free(d->dl);
	cc_snap_free(d->last);
	cc_snap_free(d->recent[0]);
	cc_snap_free(d->recent[1]);
	json_decref(d->findings);
	json_decref(d->ended);
	for (unsigned i = 0; i < d->nrestore_failed; i++)
		free(d->restore_failed[i].subject);
	for (size_t i = 0; i < d->ninf; i++)
		free(d->inf[i].subject);
	free(d->inf);
	free(d->field_of);
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->dl_lock);
	pthread_mutex_destroy(&d->conf_lock);
	free(d);
}

/* A port as its neighbours name it (daemon/topo.c): a switch port by its name, a host port as
 * DEVICE:PORT. */
static void port_label(bool is_switch, const char *device, const char *port, char *buf, size_t len)
{
	if (is_switch)
		snprintf(buf, len, "%s", port);
	else
		snprintf(buf, len, "%s:%s", device, port);
}

/* --- the fast lane -------------------------------------------------------------------------------- */

static struct lprio *lprio_of(struct lport *lp, uint8_t prio)
{
	struct lprio *v;

	for (uint8_t i = 0; i < lp->npr; i++)
		if (lp->pr[i].prio == prio)
			return &lp->pr[i];
	if (lp->npr >= CC_NPRIO || !(v = realloc(lp->pr, (lp->npr + 1u) * sizeof(*v))))
		return NULL;
	lp->pr = v;
	memset(&v[lp->npr], 0, sizeof(*v));
	v[lp->npr].prio = prio;
	return &v[lp->npr++];
}

/* The lane's port of a sample, made when new within the bounds.  Under the lock. */
static struct lport *lport_get(struct detector *d, const struct report *rep, const struct report_port *p, int *r)
{
	struct lport *lp;
	struct lagent *ag;
	char key[200];

	snprintf(key, sizeof(key), "%s\x1f%s\x1f%s", rep->agent_id, p->device, p->port);
	if ((lp = hmap_get(&d->lane, key))) {
		/* an agent's role may change (its backend came to know the device; a setting fixed):
		 * the port's label with it */
		if (lp->is_switch != (rep->role == REPORT_ROLE_SWITCH)) {
			lp->is_switch = rep->role == REPORT_ROLE_SWITCH;
			port_label(lp->is_switch, p->device, p->port, lp->label, sizeof(lp->label));
		}
		return lp;
	}
	ag = hmap_get(&d->agents, rep->agent_id);
	if (d->lane.len >= LANE_MAX_PORTS || (ag && ag->nports >= LANE_MAX_AGENT_PORTS)) {
		d->lane_full++; /* bounds against a flood of made-up ports: counted, not kept */
		*r = -ENOSPC;
		return NULL;
	}
	if (!ag) {
		ag = calloc(1, sizeof(*ag));
		if (!ag || !(ag->id = strdup(rep->agent_id)) || hmap_put(&d->agents, ag->id, ag, NULL) < 0) {
			if (ag)
				free(ag->id);
			free(ag);
			*r = -ENOMEM;
			return NULL;
		}
	}
	lp = calloc(1, sizeof(*lp));
	if (!lp || !(lp->key = strdup(key)) || hmap_put(&d->lane, lp->key, lp, NULL) < 0) {
		if (lp)
			free(lp->key);
		free(lp);
		*r = -ENOMEM;
		return NULL;
	}
	ag->nports++;
	snprintf(lp->agent, sizeof(lp->agent), "%s", rep->agent_id);
	lp->is_switch = rep->role == REPORT_ROLE_SWITCH;
	port_label(lp->is_switch, p->device, p->port, lp->label, sizeof(lp->label));
	return lp;
}

int detector_put(struct detector *d, const struct report *rep, size_t body_bytes, unsigned *ret_refused)
{
	int64_t mono = tu_mono_ns(), future = tu_now_ns() + LANE_FUTURE_NS;
	unsigned refused = 0;
	int r = 0;

	pthread_mutex_lock(&d->lock);
	d->lane_reports++;
	d->lane_bytes += body_bytes;
	for (uint32_t i = 0; i < rep->nsamples; i++) {
		const struct report_sample *smp = &rep->samples[i];
		struct lport *lp;

		if (smp->t_ns > future) {
			d->lane_future++; /* a clock far ahead would move the detector's time */
			refused++;
			continue;
		}
		if (!(lp = lport_get(d, rep, &rep->ports[smp->port_idx], &r))) {
			refused++;
			if (r == -ENOMEM)
				break;
			continue;
		}
		if (lp->n && smp->t_ns <= lp->t[1]) {
			/* the same reading again (a paused fabric, a retry) keeps the port fresh; an
			 * older one is ignored */
			if (smp->t_ns < lp->t[1])
				d->lane_stale++;
			else
				lp->rx_mono = mono;
			continue;
		}
		for (uint8_t k = 0; k <= lp->npr; k++) {
			struct lprio *e = k < lp->npr ? &lp->pr[k] : &lp->portv;

			memcpy(e->raw[0], e->raw[1], sizeof(e->raw[0]));
			e->have[0] = e->have[1];
			e->have[1] = 0;
		}
		lp->t[0] = lp->t[1];
		for (uint32_t v = smp->first_value; v < smp->first_value + smp->nvalues; v++) {
			const struct report_value *rv = &rep->values[v];
			int f = rv->counter < reg_size(d->reg) ? d->field_of[rv->counter] : -1;
			struct lprio *e;

			if (rv->skip || f < 0)
				continue;
			if (f >= CF_N) { /* a port counter */
				if (rv->prio != REG_NO_PRIO)
					continue;
				e = &lp->portv;
				f -= CF_N;
			} else if (rv->prio >= CC_NPRIO || !(e = lprio_of(lp, rv->prio))) {
				continue;
			}
			e->raw[1][f] = rv->raw;
			e->have[1] |= 1u << f;
			e->width[f] = rv->width;
			e->scale[f] = rv->scale ? rv->scale : 1;
		}
		lp->t[1] = smp->t_ns;
		lp->n = lp->n < 2 ? lp->n + 1 : 2;
		lp->rx_mono = mono;
		d->lane_gen++;
		d->lane_rx_mono = mono;
	}
	pthread_mutex_unlock(&d->lock);
	if (ret_refused)
		*ret_refused = refused;
	return r;
}

/* --- the topology and settings cache ------------------------------------------------------------ */

static struct cport *cport_get(struct hmap *h, const char *agent, const char *label, bool make)
{
	char key[200];
	struct cport *c;

	snprintf(key, sizeof(key), "%s\x1f%s", agent, label);
	c = hmap_get(h, key);
	if (c || !make)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->key = strdup(key)) || hmap_put(h, c->key, c, NULL) < 0) {
		if (c)
			free(c->key);
		free(c);
		return NULL;
	}
	c->lossless = -1;
	return c;
}

static int cache_refresh(struct detector *d, struct store_reader *rd)
{
	static const char cfg_sql[] = "SELECT c.agent_id, a.role, c.device, c.port, c.value FROM configs c "
				      "JOIN agents a ON a.id = c.agent_id WHERE c.kind = 'pfc'";
	static const char speed_sql[] = "SELECT p.agent_id, a.role, p.device, p.port, p.speed_mbps FROM ports p "
					"JOIN agents a ON a.id = p.agent_id WHERE p.present = 1";
	struct rf_err e = { 0 };
	struct hmap h;
	json_t *links = NULL, *l;
	sqlite3_stmt *st;
	size_t i;
	int rc;

	hmap_init(&h);
	if (topo_links(rd, &links, &e) < 0)
		return -EAGAIN;
	json_array_foreach(links, i, l) {
		json_t *a = json_object_get(l, "a"), *b = json_object_get(l, "b");
		bool down = strcmp(json_string_value(json_object_get(l, "state")) ?: "", "up") != 0;

		/* both ends must have reported and name each other (topo shows a one-sided claim
		 * without the other end's port_id): an agent cannot link itself to a port it is
		 * not on */
		if (!json_is_string(json_object_get(a, "port_id")) || !json_is_string(json_object_get(b, "port_id")))
			continue;
		for (int side = 0; side < 2; side++) {
			json_t *x = side ? b : a, *y = side ? a : b;
			struct cport *c;

			c = cport_get(&h, json_string_value(json_object_get(x, "node")),
				      json_string_value(json_object_get(x, "port")), true);
			if (!c)
				continue;
			c->down = down;
			c->have_peer = true;
			snprintf(c->peer_agent, sizeof(c->peer_agent), "%s", json_string_value(json_object_get(y, "node")));
			snprintf(c->peer_label, sizeof(c->peer_label), "%s", json_string_value(json_object_get(y, "port")));
		}
	}
	json_decref(links);
	if ((st = store_reader_stmt(rd, speed_sql))) {
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			bool sw = !strcmp((const char *)sqlite3_column_text(st, 1) ?: "", "switch");
			char label[132];
			struct cport *c;

			port_label(sw, (const char *)sqlite3_column_text(st, 2) ?: "",
				   (const char *)sqlite3_column_text(st, 3) ?: "", label, sizeof(label));
			c = cport_get(&h, (const char *)sqlite3_column_text(st, 0) ?: "", label, true);
			if (!c)
				continue;
			c->host = !sw;
			if (sqlite3_column_int64(st, 4) > 0)
				c->speed_mbps = (uint64_t)sqlite3_column_int64(st, 4);
		}
		sqlite3_reset(st);
	}
	if ((st = store_reader_stmt(rd, cfg_sql))) {
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			char label[132];
			json_t *v = json_loads((const char *)sqlite3_column_text(st, 4) ?: "", 0, NULL);
			struct cport *c;

			port_label(!strcmp((const char *)sqlite3_column_text(st, 1) ?: "", "switch"),
				   (const char *)sqlite3_column_text(st, 2) ?: "",
				   (const char *)sqlite3_column_text(st, 3) ?: "", label, sizeof(label));
			c = cport_get(&h, (const char *)sqlite3_column_text(st, 0) ?: "", label, true);
			if (c && json_is_integer(json_object_get(v, "enable")))
				c->lossless = (int)(json_integer_value(json_object_get(v, "enable")) & 0xff);
			json_decref(v);
		}
		sqlite3_reset(st);
	}
	pthread_mutex_lock(&d->lock);
	{
		const char *k;
		void *v;

		/* (what the snapshots keep of a port carries over) */
		for (size_t j = 0; hmap_next(&h, &j, &k, &v);) {
			const struct cport *old = hmap_get(&d->cache, k);

			if (old)
				((struct cport *)v)->silent_until = old->silent_until;
		}
	}
	lane_free(&d->cache);
	d->cache = h;
	d->cache_at = tu_mono_ns();
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* --- the snapshot --------------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

struct agent_time {
	const char *agent;
	int64_t t, iv;
};

static int cmp_agent(const void *a, const void *b)
{
	return strcmp(((const struct agent_time *)a)->agent, ((const struct agent_time *)b)->agent);
}

/* The snapshot's time and interval: medians over the agents (one vote each, from their ports'
 * readings), so that one agent's clock — wrong, or lying — moves neither. */
static void lane_clock(struct agent_time *at, size_t n, int64_t *ret_t, int64_t *ret_iv)
{
	int64_t *t = malloc((n + 1) * sizeof(*t)), *iv = malloc((n + 1) * sizeof(*iv));
	size_t na = 0;

	*ret_t = *ret_iv = 0;
	if (!t || !iv || !n) {
		free(t);
		free(iv);
		return;
	}
	qsort(at, n, sizeof(*at), cmp_agent);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		int64_t tmax = 0;

		/* an agent: its newest reading, and its ports' median interval */
		while (j < n && !strcmp(at[j].agent, at[i].agent))
			j++;
		for (size_t k = i; k < j; k++) {
			if (at[k].t > tmax)
				tmax = at[k].t;
			iv[k - i] = at[k].iv;
		}
		qsort(iv, j - i, sizeof(*iv), cmp_i64);
		t[na] = tmax;
		at[na].iv = iv[(j - i) / 2]; /* reuses at[] below i: safe, na <= i */
		na++;
		i = j;
	}
	for (size_t k = 0; k < na; k++)
		iv[k] = at[k].iv;
	qsort(t, na, sizeof(*t), cmp_i64);
	qsort(iv, na, sizeof(*iv), cmp_i64);
	*ret_t = t[na / 2];
	*ret_iv = iv[na / 2];
	free(t);
	free(iv);
}

/* Port p received pauses in the snapshot's interval, on any priority the snapshot holds. */
static bool pauses_received(const struct cc_snap *s, uint32_t p)
{
	for (unsigned pr = 0; pr < CC_NPRIO; pr++)
		if (cc_prio_paused(cc_snap_prio(s, p, pr)))
			return true;
	return false;
}

/* The host port at the other end of switch port c (a paused one) when its readings are not in
 * the snapshot (its agent silent or hung, its fast lane off, its interval out of step): added
 * without readings (silent), so that the detector can read a storm or a slow receiver of it from
 * the switch's side (a hung host's NIC may pause its switch port while its agent is dead).  Only
 * for ports paused in this interval or in the last slow_hold ones (a slow receiver pauses in
 * bursts: its finding, held between them, needs its port; before, it cleared at the first
 * interval without a pause and came back as a new alert): the snapshot does not grow with every
 * host off the lane.  Its index, or -1. */
static int silent_port(struct detector *d, struct cc_snap *s, const struct cport *c, uint8_t prios)
{
	struct cport *pc = cport_get(&d->cache, c->peer_agent, c->peer_label, false);
	int node, port;

	if (!pc || !pc->host || (node = cc_snap_node(s, c->peer_agent, CC_HOST)) < 0 ||
	    (port = cc_snap_port(s, (uint32_t)node, c->peer_label)) < 0)
		return -1;
	s->ports[port].silent = true;
	s->ports[port].lossless = pc->lossless >= 0 ? (uint8_t)pc->lossless : prios;
	s->ports[port].down = pc->down;
	s->ports[port].speed_mbps = pc->speed_mbps;
	return port;
}

/* Under the lock. */
static struct cc_snap *build(struct detector *d, int64_t mono)
{
	int64_t fresh = STALE_INTERVALS * d->o.interval_ns, t_snap, snap_iv;
	size_t n = 0, cap = d->lane.len;
	struct agent_time *at;
	uint8_t prios = 0;
	struct cc_snap *s;
	const char *k;
	void *v;

	if (!cap)
		return NULL;
	at = malloc(cap * sizeof(*at));
	if (!at)
		return NULL;
	for (size_t i = 0; hmap_next(&d->lane, &i, &k, &v);) {
		struct lport *lp = v;
		struct cport *c;

		if (lp->n < 2 || mono - lp->rx_mono > fresh)
			continue;
		at[n++] = (struct agent_time){ .agent = lp->agent, .t = lp->t[1], .iv = lp->t[1] - lp->t[0] };
		c = cport_get(&d->cache, lp->agent, lp->label, false);
		if (c && c->lossless > 0)
			prios |= (uint8_t)c->lossless;
		if (!c || !c->have_peer)
			d->lane_unknown = true;
	}
	lane_clock(at, n, &t_snap, &snap_iv);
	free(at);
	if (!n || snap_iv <= 0)
		return NULL;
	if (!prios)
		prios = 1u << 3; /* no PFC settings reported yet: RoCE's usual lossless priority */
	s = cc_snap_new(prios, t_snap / 1000, snap_iv / 1000);
	if (!s)
		return NULL;
	for (size_t i = 0; hmap_next(&d->lane, &i, &k, &v);) {
		struct lport *lp = v;
		int64_t port_iv = lp->t[1] - lp->t[0];
		struct cport *c;
		int node, port;
		double norm;

		if (lp->n < 2 || mono - lp->rx_mono > fresh)
			continue;
		/* a port whose interval is far from the fabric's would be scaled beyond reason */
		if (port_iv <= 0 || port_iv > 4 * snap_iv || 4 * port_iv < snap_iv)
			continue;
		if ((node = cc_snap_node(s, lp->agent, lp->is_switch ? CC_SWITCH : CC_HOST)) < 0 ||
		    (port = cc_snap_port(s, (uint32_t)node, lp->label)) < 0)
			continue;
		c = cport_get(&d->cache, lp->agent, lp->label, false);
		s->ports[port].lossless = c && c->lossless >= 0 ? (uint8_t)c->lossless : prios;
		s->ports[port].down = c && c->down;
		s->ports[port].speed_mbps = c ? c->speed_mbps : 0;
		s->ports[port].read_from_us = lp->t[0] / 1000;
		s->ports[port].read_to_us = lp->t[1] / 1000;
		/* counters over this port's own interval, brought to the snapshot's */
		norm = (double)snap_iv / (double)port_iv;
		for (uint8_t q = 0; q < lp->npr; q++) {
			const struct lprio *e = &lp->pr[q];

			if (!(prios & (1u << e->prio)))
				continue;
			for (int f = 0; f < CF_N; f++) {
				uint64_t val;

				if (!(e->have[1] & (1u << f)))
					continue;
				if (lane_field_is_gauge(f)) {
					val = e->raw[1][f] * e->scale[f];
				} else {
					struct delta_in in = { .prev_raw = e->raw[0][f], .cur_raw = e->raw[1][f],
							       .prev_t_ns = lp->t[0], .cur_t_ns = lp->t[1],
							       .width = e->width[f] ? e->width[f] : 64, .have_prev = true };
					uint64_t dl = 0;

					if (!(e->have[0] & (1u << f)) || !(delta_compute(&in, &dl) & DELTA_VALID))
						continue;
					val = dl * e->scale[f];
					if (norm < 0.99 || norm > 1.01)
						val = (uint64_t)((double)val * norm + 0.5);
				}
				cc_snap_set(s, (uint32_t)port, lane_field_names[f], (int)e->prio, val);
			}
		}
		for (int f = 0; f < CP_N; f++) {
			const struct lprio *e = &lp->portv;
			struct delta_in in = { .prev_raw = e->raw[0][f], .cur_raw = e->raw[1][f], .prev_t_ns = lp->t[0],
					       .cur_t_ns = lp->t[1], .width = e->width[f] ? e->width[f] : 64,
					       .have_prev = true };
			uint64_t dl = 0, val;

			if (!(e->have[1] & (1u << f)) || !(e->have[0] & (1u << f)) ||
			    !(delta_compute(&in, &dl) & DELTA_VALID))
				continue;
			val = dl * e->scale[f];
			if (norm < 0.99 || norm > 1.01)
				val = (uint64_t)((double)val * norm + 0.5);
			cc_snap_set(s, (uint32_t)port, lane_port_field_names[f], -1, val);
		}
	}
	/* the links between ports both in the snapshot; and a paused switch port's host whose
	 * readings are not here, added without them (silent_port) */
	for (uint32_t p = 0; p < s->nports; p++) {
		const char *agent = s->nodes[s->ports[p].node].name;
		struct cport *c = cport_get(&d->cache, agent, s->ports[p].name, false);
		bool sw = s->nodes[s->ports[p].node].kind == CC_SWITCH;
		int peer;

		if (!c || !c->have_peer)
			continue;
		/* (the hold counts the switch port's readings: as many as come in that time, one
		 * more for one late) */
		if (sw && pauses_received(s, p))
			c->silent_until = mono + (int64_t)(cc_dl_defaults.slow_hold + 1) *
							 (snap_iv > d->o.interval_ns ? snap_iv : d->o.interval_ns);
		if (s->ports[p].peer != CC_NONE)
			continue;
		peer = cc_snap_find_port(s, c->peer_agent, c->peer_label);
		if (peer < 0 && sw && mono < c->silent_until)
			peer = silent_port(d, s, c, prios);
		if (peer >= 0)
			cc_snap_link(s, p, (uint32_t)peer);
	}
	cc_snap_finish(s);
	return s;
}

/* --- actions through the change path --------------------------------------------------------------- */

/* The device and port of a snapshot port name on a node. */
static void split_port(const char *node, const char *label, bool is_switch, char *dev, size_t dl, char *port,
		       size_t pl)
{
	const char *colon = strrchr(label, ':');

	if (is_switch || !colon) {
		snprintf(dev, dl, "%s", node);
		snprintf(port, pl, "%s", label);
	} else {
		snprintf(dev, dl, "%.*s", (int)(colon - label), label);
		snprintf(port, pl, "%s", colon + 1);
	}
}

/* The PFC priorities a port will have once the changes in flight for it are applied, when
 * some are (under dl_lock); -1 when none is. */
static int intended_mask(const struct detector *d, const char *node, const char *port)
{
	int mask = -1;

	for (size_t i = 0; i < d->ninf; i++)
		if (!strcmp(d->inf[i].node, node) && !strcmp(d->inf[i].port, port))
			mask = d->inf[i].mask; /* the latest: entries are in order */
	return mask;
}

/* Queues the change of an action; 0 and its id and the port's new priorities, or an error.
 * base: the priorities the changes in flight leave (-1: as last reported). */
static int apply_action_once(struct detector *d, struct store_reader *rd, const struct cc_dl_action *a,
			     const char *actor, int base, int64_t *ret_change, int *ret_mask, struct rf_err *e)
{
	const char *role = NULL;
	char dev[CC_DL_NAME], port[CC_DL_NAME];
	struct change_set cs;
	json_t *entries = NULL, *entry, *params;
	int64_t cur, batch = 0, mask;
	bool sw;
	int r;

	if (views_agent_role(rd, a->node, &role) < 0)
		return rf_err_set(e, -ENOENT, "UNKNOWN_NODE", NULL, "no agent '%s'", a->node);
	sw = !strcmp(role, "switch");
	split_port(a->node, a->port, sw, dev, sizeof(dev), port, sizeof(port));
	if ((r = changes_lookup(rd, role, CHANGE_PFC, a->node, dev, port, -2, &entries, e)) < 0)
		return r;
	entry = json_array_get(entries, 0);
	cur = base;
	if (cur < 0) {
		/* the priorities as they will be once the changes on their way (an operator's)
		 * are applied: this one goes after them and sets the whole mask */
		json_t *v = NULL;

		if ((r = changes_expected(rd, a->node, CHANGE_PFC, dev, port, -2, &v, e)) < 0) {
			json_decref(entries);
			return r;
		}
		cur = json_integer_value(json_object_get(v ? v : json_object_get(entry, "values"), "enable"));
		json_decref(v);
	}
	mask = a->op == CC_DL_LOSSY ? (cur & ~(1 << a->prio)) : (cur | (1 << a->prio));
	params = json_pack("{s:I}", "enable", (json_int_t)mask);
	r = change_set_init(&cs, CHANGE_PFC, sw, params);
	json_decref(params);
	if (r < 0) {
		json_decref(entries);
		return r;
	}
	/* the mask is made from what was read: a change to the port's PFC stored since, or one
	 * the base did not know (an operator's after the detector's own in flight), refuses it */
	cs.refuse_changed = true;
	if ((r = change_set_add(rd, &cs, a->node, entry, e)) == 0 &&
	    json_integer_value(json_object_get(cs.t[0].expect, "enable")) != cur)
		r = rf_err_set(e, -EALREADY, "CHANGED_MEANWHILE", NULL,
			       "a change to %s port %s was stored while its priorities were read", a->node, a->port);
	if (r == 0 && (r = change_set_check(&cs, false, e)) == 0)
		r = change_set_commit(d->store, &cs, actor, a->reason, tu_now_ns() + d->o.deadline_ns, &batch, e);
	change_set_fini(&cs);
	json_decref(entries);
	if (r < 0)
		return r;
	*ret_change = batch;
	*ret_mask = (int)mask;
	return 0;
}

/* apply_action_once, tried again (CHANGES_CLASH_TRIES in all), from the priorities as stored,
 * when another change to the port's PFC was stored while it was made (CHANGED_MEANWHILE). */
static int apply_action(struct detector *d, struct store_reader *rd, const struct cc_dl_action *a, const char *actor,
			int base, int64_t *ret_change, int *ret_mask, struct rf_err *e)
{
	int r, tries = 0;

	while ((r = apply_action_once(d, rd, a, actor, base, ret_change, ret_mask, e)) == -EALREADY &&
	       ++tries < CHANGES_CLASH_TRIES)
		base = -1;
	return r;
}

/* Under dl_lock.  0, or -ENOMEM (the caller tells cc the action failed). */
static int inflight_add(struct detector *d, const struct cc_dl_action *a, const char *subject, int64_t change,
			int mask)
{
	char *copy = NULL;

	if (vec_room((void **)&d->inf, &d->capinf, d->ninf, sizeof(*d->inf)) < 0)
		return -ENOMEM;
	if (subject && !(copy = strdup(subject)))
		return -ENOMEM;
	d->inf[d->ninf] = (struct inflight){ .action = a->id, .change = change, .op = a->op, .cls = a->cls,
					     .subject = copy, .prio = a->prio, .mask = mask };
	snprintf(d->inf[d->ninf].node, sizeof(d->inf[0].node), "%s", a->node);
	snprintf(d->inf[d->ninf].port, sizeof(d->inf[0].port), "%s", a->port);
	d->ninf++;
	return 0;
}

/* Queues an action's change and follows it; on failure cc forgets it.  subject: the alert of a
 * restoration, to record it on once applied (NULL: none).  Not under a lock. */
static int act(struct detector *d, struct store_reader *rd, const struct cc_dl_action *a, const char *actor,
	       const char *subject, int64_t *ret_change, struct rf_err *e)
{
	int64_t change = 0;
	int base, mask = 0, r;

	pthread_mutex_lock(&d->dl_lock);
	base = intended_mask(d, a->node, a->port);
	pthread_mutex_unlock(&d->dl_lock);
	r = apply_action(d, rd, a, actor, base, &change, &mask, e);
	pthread_mutex_lock(&d->dl_lock);
	if (r == 0 && inflight_add(d, a, subject, change, mask) < 0)
		r = rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	if (r < 0) {
		cc_dl_action_done(d->dl, a->id, false);
		d->actions_failed++;
	}
	pthread_mutex_unlock(&d->dl_lock);
	if (r == 0 && ret_change)
		*ret_change = change;
	return r;
}

/* The alert kind of a finding's class (NULL: none, congestion). */
static const char *alert_kind(enum cc_dl_class c)
{
	return c == CC_DL_DEADLOCK ? "deadlock" : c == CC_DL_PAUSE_STORM ? "pause_storm"
					    : c == CC_DL_SLOW_RECEIVER ? "slow_receiver"
					    : c == CC_DL_PERSISTENT ? "persistent" : NULL;
}

/* Under dl_lock. */
static void restore_failed_drop(struct detector *d, unsigned i)
{
	free(d->restore_failed[i].subject);
	d->restore_failed[i] = d->restore_failed[--d->nrestore_failed];
}

/* Under dl_lock. */
static void restore_failed_set(struct detector *d, const struct inflight *f, bool failed)
{
	char subj[3 * CC_DL_NAME];
	char *copy;

	snprintf(subj, sizeof(subj), "%s:%s priority %u", f->node, f->port, f->prio);
	for (unsigned i = 0; i < d->nrestore_failed; i++)
		if (!strcmp(d->restore_failed[i].subject, subj)) {
			if (!failed)
				restore_failed_drop(d, i);
			return;
		}
	if (failed && d->nrestore_failed < 64 && (copy = strdup(subj))) {
		struct rfail *rf = &d->restore_failed[d->nrestore_failed++];

		*rf = (struct rfail){ .subject = copy, .prio = f->prio };
		memcpy(rf->node, f->node, sizeof(rf->node));
		memcpy(rf->port, f->port, sizeof(rf->port));
	}
}

/* Under dl_lock, after a run: a failed restoration whose queue the detector no longer holds
 * (an operator put the port back, and the hold is theirs) has nothing left to try: its alert
 * clears.  Before, it stayed active until rocefabd restarted. */
static void restore_failed_settle(struct detector *d)
{
	for (unsigned i = 0; i < d->nrestore_failed; i++) {
		const struct rfail *rf = &d->restore_failed[i];

		if (!cc_dl_holds_queue(d->dl, rf->node, rf->port, rf->prio))
			restore_failed_drop(d, i--);
	}
}

/* The outcomes of the changes in flight, from the change log: the entries are copied out
 * under dl_lock, read without it, and settled under it again by action id (an operator's
 * mitigation may add entries meanwhile). */
static void check_inflight(struct detector *d, struct store_reader *rd)
{
	struct inflight *copy;
	size_t n;

	pthread_mutex_lock(&d->dl_lock);
	n = d->ninf;
	copy = n ? malloc(n * sizeof(*copy)) : NULL;
	if (copy)
		memcpy(copy, d->inf, n * sizeof(*copy));
	pthread_mutex_unlock(&d->dl_lock);
	if (!copy)
		return;
	for (size_t i = 0; i < n; i++) {
		struct rf_err e = { 0 };
		json_t *c = NULL;
		const char *state;
		char *record = NULL; /* the alert subject to record an applied restoration on */
		bool ok, timed_out;

		if (changes_get(rd, copy[i].change, &c, &e) < 0)
			continue;
		state = json_string_value(json_object_get(c, "state")) ?: "";
		if (!strcmp(state, "pending") || !strcmp(state, "sent")) {
			json_decref(c);
			continue;
		}
		ok = !strcmp(state, "applied");
		timed_out = !strcmp(state, "timed_out");
		pthread_mutex_lock(&d->dl_lock);
		for (size_t k = 0; k < d->ninf; k++) {
			if (d->inf[k].action != copy[i].action)
				continue;
			/* a break that timed out may still be applied by its agent later: kept as if it
			 * were (restoring a port that is lossless changes nothing); a restoration that
			 * timed out is tried again */
			cc_dl_action_done(d->dl, d->inf[k].action, ok || (timed_out && d->inf[k].op == CC_DL_LOSSY));
			if (d->inf[k].op == CC_DL_RESTORE) {
				restore_failed_set(d, &d->inf[k], !ok);
				ok ? d->restores_ok++ : d->restores_failed++;
			} else {
				ok ? d->actions_ok++ : d->actions_failed++;
			}
			if (ok)
				record = d->inf[k].subject;
			else
				free(d->inf[k].subject);
			/* in order: intended_mask() reads the latest of a port */
			memmove(&d->inf[k], &d->inf[k + 1], (d->ninf - k - 1) * sizeof(*d->inf));
			d->ninf--;
			break;
		}
		pthread_mutex_unlock(&d->dl_lock);
		if (record) {
			/* (a restoration that failed is tried again: only the one applied is told) */
			struct alert_action aa = { "detector", "restore", NULL, copy[i].change };

			aa.reason = json_string_value(json_object_get(c, "reason"));

			if (alerts_mitigated(d->store, 0, alert_kind(copy[i].cls), record, &aa, tu_now_ns(), &e) < 0)
				log_warning("detector", "change %lld: not recorded on its alert: %s",
					    (long long)copy[i].change, e.msg);
			free(record);
		}
		if (!ok)
			log_msg(LOG_WARNING, "detector", copy[i].op == CC_DL_RESTORE ? "RESTORE_FAILED" : "ACTION_FAILED",
				"change %lld (%s %s:%s priority %u) %s: %s", (long long)copy[i].change,
				copy[i].op == CC_DL_RESTORE ? "restoring lossless mode of" : "taking out of lossless mode",
				copy[i].node, copy[i].port, copy[i].prio, state,
				json_string_value(json_object_get(c, "error")) ?: "no detail");
		json_decref(c);
	}
	free(copy);
}

/* At the first pass after a start: a port the detector of the previous run took out of lossless
 * mode and never put back (rocefabd stopped in between, and nobody changed the port since) is
 * restored now.  Its hold was in memory only; if the fault is still there it is found again. */
static void recover_holds(struct detector *d, struct store_reader *rd)
{
	static const char sql[] =
		"SELECT c.id, c.agent_id, c.device, c.port, c.params, c.old FROM changes c "
		"WHERE c.kind = 'pfc' AND c.actor LIKE 'detector%' AND c.state IN ('applied', 'sent', 'pending', 'timed_out') "
		"AND c.id = (SELECT max(x.id) FROM changes x WHERE x.kind = 'pfc' AND x.agent_id = c.agent_id "
		"AND x.device = c.device AND x.port = c.port)";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	struct cc_dl_action *todo = NULL;
	size_t n = 0;
	int rc;

	if (!st)
		return;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *params = json_loads((const char *)sqlite3_column_text(st, 4) ?: "", 0, NULL);
		json_t *old = json_loads((const char *)sqlite3_column_text(st, 5) ?: "", 0, NULL);
		int64_t removed = json_integer_value(json_object_get(old, "enable")) &
				  ~json_integer_value(json_object_get(params, "enable")) & 0xff;
		const char *agent = (const char *)sqlite3_column_text(st, 1) ?: "", *role = NULL;
		struct cc_dl_action *v;

		json_decref(params);
		json_decref(old);
		if (!removed || views_agent_role(rd, agent, &role) < 0)
			continue;
		for (int pr = 0; pr < CC_NPRIO; pr++) {
			if (!(removed & (1 << pr)) || !(v = realloc(todo, (n + 1) * sizeof(*v))))
				continue;
			todo = v;
			memset(&todo[n], 0, sizeof(todo[n]));
			todo[n].op = CC_DL_RESTORE;
			todo[n].prio = (uint8_t)pr;
			snprintf(todo[n].node, sizeof(todo[n].node), "%s", agent);
			port_label(!strcmp(role, "switch"), (const char *)sqlite3_column_text(st, 2) ?: "",
				   (const char *)sqlite3_column_text(st, 3) ?: "", todo[n].port, sizeof(todo[n].port));
			snprintf(todo[n].reason, sizeof(todo[n].reason),
				 "rocefabd restarted: restoring lossless mode the detector took away before (change %lld)",
				 (long long)sqlite3_column_int64(st, 0));
			n++;
		}
	}
	sqlite3_reset(st);
	for (size_t i = 0; i < n; i++) {
		struct rf_err e = { 0 };
		int64_t change = 0;
		int mask = 0;
		char buf[600];

		if (apply_action(d, rd, &todo[i], "detector", -1, &change, &mask, &e) < 0)
			log_msg(LOG_WARNING, "detector", e.code, "cannot restore %s:%s priority %u after a restart: %s",
				todo[i].node, todo[i].port, todo[i].prio, rf_err_str(&e, buf, sizeof(buf)));
		else
			log_notice("detector", "change %lld: %s", (long long)change, todo[i].reason);
	}
	free(todo);
}

/* --- findings as alerts ------------------------------------------------------------------------------- */

/* The subject kept for a finding (NULL: none); id gets its key.  Under the lock. */
static struct subject *subject_get(struct detector *d, uint64_t finding, char id[24])
{
	snprintf(id, 24, "%llu", (unsigned long long)finding);
	return hmap_get(&d->subjects, id);
}

/* The alert subject of a finding, kept by id so that it stays the same while it lasts (a
 * persistent deadlock held broken lists no ports any more); NULL when out of memory.  Under
 * the lock. */
static struct subject *subject_of(struct detector *d, const struct cc_dl_finding *f)
{
	char id[24], buf[1024];
	struct subject *s = subject_get(d, f->id, id);
	size_t o;

	if (s) {
		s->seen = true;
		return s;
	}
	if (f->cls == CC_DL_DEADLOCK || f->cls == CC_DL_PERSISTENT) {
		o = (size_t)snprintf(buf, sizeof(buf), "priority %u:", f->prio);
		for (unsigned i = 0; i < f->nports && o < sizeof(buf); i++)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s:%s", i ? " -> " : " ", f->ports[i].node,
					      f->ports[i].port);
		if (!f->nports)
			snprintf(buf + o, sizeof(buf) - o, " held at %s:%s", f->suggested.node, f->suggested.port);
	} else {
		/* the host, its port (a NIC may have several) and the priority */
		snprintf(buf, sizeof(buf), "%s %s priority %u", f->culprit, f->nports ? f->ports[0].port : "?", f->prio);
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->key = strdup(id)) || !(s->subject = strdup(buf)) || hmap_put(&d->subjects, s->key, s, NULL) < 0) {
		if (s) {
			free(s->key);
			free(s->subject);
		}
		free(s);
		return NULL;
	}
	s->finding = f->id;
	s->seen = true;
	return s;
}

/* When finding f, whose subject is s, was last seen, by rocefabd's clock (now unless its
 * last_us stayed: a slow receiver held between its slow intervals, whose alert's last seen
 * stays with them).  Under the lock. */
static int64_t seen_ns(struct subject *s, const struct cc_dl_finding *f, int64_t now)
{
	if (!s->last_ns || s->last_us != f->last_us) {
		s->last_us = f->last_us;
		s->last_ns = now;
	}
	return s->last_ns;
}

/* A copy of the subject of a finding (NULL: none known, or out of memory).  Under the lock. */
static char *subject_copy(struct detector *d, uint64_t finding)
{
	char id[24];
	struct subject *s = subject_get(d, finding, id);

	return s ? strdup(s->subject) : NULL;
}

/* --- the pass ---------------------------------------------------------------------------------------- */

/* The configuration as saved (PUT /api/v1/detector/config) over the options': 0, or -errno
 * when it could not be read. */
static int saved_conf(struct detector *d, struct store_reader *rd, struct detector_conf *ret)
{
	struct rf_err e = { 0 };
	json_t *doc;
	char *raw;
	int r;

	if ((r = store_meta_text(rd, "detector", &raw)) < 0)
		return r;
	*ret = d->o.conf;
	if (raw && (doc = json_loads(raw, 0, NULL))) {
		detector_conf_apply(ret, doc, &e);
		json_decref(doc);
	}
	free(raw);
	return 0;
}

static void sync_conf(struct detector *d, struct store_reader *rd)
{
	struct detector_conf c;
	struct cc_dl_conf dc;

	/* not between a change's save and its taking force (it would take the one before back) */
	pthread_mutex_lock(&d->conf_lock);
	if (saved_conf(d, rd, &c) < 0) { /* as it is, until the next pass reads it */
		pthread_mutex_unlock(&d->conf_lock);
		return;
	}
	pthread_mutex_lock(&d->lock);
	d->conf = c;
	d->conf_loaded = true;
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_lock(&d->dl_lock);
	dc = *cc_dl_config(d->dl);
	dc.deadlock_mode = c.deadlock_mode;
	dc.storm_mode = c.storm_mode;
	dc.restore_us = c.restore_ns / 1000;
	cc_dl_configure(d->dl, &dc);
	pthread_mutex_unlock(&d->dl_lock);
	pthread_mutex_unlock(&d->conf_lock);
}

/* Ports that have not reported for FORGET_NS are forgotten, and an agent with none left. */
struct forget {
	struct detector *d;
	int64_t now;
};

static bool forget_port(const char *key, void *val, void *ctx)
{
	struct forget *f = ctx;
	struct lport *lp = val;
	struct lagent *ag;

	(void)key;
	if (f->now - lp->rx_mono <= FORGET_NS)
		return false;
	ag = hmap_get(&f->d->agents, lp->agent);
	if (ag && !--ag->nports) {
		hmap_del(&f->d->agents, ag->id);
		free(ag->id);
		free(ag);
	}
	free(lp->key);
	free(lp->pr);
	free(lp);
	return true;
}

/* The subject of a finding no longer seen, and no longer held: its restoration is recorded on
 * its alert too.  Under the lock. */
static bool drop_subject(const char *key, void *val, void *ctx)
{
	struct subject *sj = val;

	(void)key;
	if (sj->seen)
		return false;
	if (cc_dl_held(ctx, sj->finding)) {
		/* kept for its hold; its alert cleared, so seen again it is raised anew, seen then
		 * (not at the last seen of before: before its first seen) */
		sj->last_ns = 0;
		return false;
	}
	free(sj->key);
	free(sj->subject);
	free(sj);
	return true;
}

/* Under dl_lock: the sums of intervals turned once the newer is RECENT_NS old, on a clock of
 * RECENT_NS steps from the first (the newer sum holds what was analysed over one step, the
 * older the step before: nothing older than two steps is shown, however late the turn; a turn
 * that comes later than that, nothing analysed since, drops both). */
static void recent_turn(struct detector *d, int64_t now)
{
	bool keep = d->recent_at && now - d->recent_at < 2 * RECENT_NS;

	if (d->recent_at && now - d->recent_at < RECENT_NS)
		return;
	cc_snap_free(d->recent[0]);
	d->recent[0] = keep ? d->recent[1] : NULL;
	d->nrecent[0] = keep ? d->nrecent[1] : 0;
	d->recent_from_us[0] = d->recent_from_us[1];
	if (!keep)
		cc_snap_free(d->recent[1]);
	d->recent[1] = NULL;
	d->nrecent[1] = 0;
	d->recent_at = keep ? d->recent_at + RECENT_NS : now;
}

/* Under dl_lock: the intervals the recent sums hold (a sum dropped short of memory: none). */
static unsigned recent_n(const struct detector *d)
{
	return (d->recent[0] ? d->nrecent[0] : 0) + (d->recent[1] ? d->nrecent[1] : 0);
}

/* Under dl_lock: interval s analysed, into the recent sums (left out of them when short of
 * memory: the sum since recent_at is then dropped, not shown short). */
static void recent_add(struct detector *d, const struct cc_snap *s, int64_t now)
{
	recent_turn(d, now);
	if (!d->recent[1] && !d->nrecent[1]) {
		d->recent[1] = cc_snap_new(s->prios, s->t_us, 0);
		d->recent_from_us[1] = s->t_us - s->interval_us;
	}
	if (d->recent[1] && cc_snap_merge(d->recent[1], s) == 0) {
		d->nrecent[1]++;
		return;
	}
	cc_snap_free(d->recent[1]);
	d->recent[1] = NULL;
	d->nrecent[1]++; /* (not 0: nothing is summed until the next turn) */
}

/* How long a finding that is over may still explain the pingmesh's (detector_explains): the
 * longest window a localization looks back over. */
#define ENDED_KEEP_NS (10 * 60 * NSEC_PER_SEC)
#define ENDED_MAX 256

/* The alert findings of before that this run no longer has go to d->ended, at mono; those
 * older than ENDED_KEEP_NS (or past ENDED_MAX) go.  Under dl_lock. */
static void keep_ended(struct detector *d, json_t *before, int64_t mono)
{
	json_t *f, *g, *x;
	size_t i, k;

	json_array_foreach(before, i, f) {
		bool still = false;

		if (!*(json_string_value(json_object_get(f, "subject")) ?: ""))
			continue; /* (congestion: no alert) */
		json_array_foreach(d->findings, k, g)
			if ((still = json_equal(json_object_get(f, "id"), json_object_get(g, "id"))))
				break;
		if (!still)
			json_array_append_new(d->ended, json_pack("{s:O,s:I}", "f", f, "at", (json_int_t)mono));
	}
	while ((x = json_array_get(d->ended, 0)) &&
	       (json_array_size(d->ended) > ENDED_MAX ||
		mono - json_integer_value(json_object_get(x, "at")) > ENDED_KEEP_NS))
		json_array_remove(d->ended, 0);
}

int detector_run(void *ctx, int64_t now)
{
	struct detector *d = ctx;
	struct store_reader *rd = store_reader_get(d->store);
	int64_t t0 = tu_mono_ns();
	const struct cc_dl_result *res = NULL;
	struct alert_finding *af = NULL;
	struct cc_dl_action *acts = NULL;
	char **texts = NULL, **asubj = NULL; /* the alert subject of each action's finding */
	int64_t *achange = NULL;	      /* each action's change (0: none queued) */
	size_t naf = 0, nacts = 0, ntexts = 0;
	struct cc_snap *snap;
	json_t *before;
	bool silent, fresh;
	int r = 0;

	if (!rd)
		return -EAGAIN;
	/* The pass runs four times an interval so that a snapshot follows new readings closely;
	 * the analysis runs once an interval, when readings came since the last. */
	pthread_mutex_lock(&d->lock);
	if (t0 - d->rate_mono >= RATE_WINDOW_NS) {
		double secs = (double)(t0 - d->rate_mono) / 1e9;

		if (d->rate_mono) {
			d->reports_per_s = (double)(d->lane_reports - d->rate_reports) / secs;
			d->bytes_per_s = (double)(d->lane_bytes - d->rate_bytes) / secs;
			d->rates_ready = true;
		}
		d->rate_mono = t0;
		d->rate_reports = d->lane_reports;
		d->rate_bytes = d->lane_bytes;
	}
	/* no new readings: nothing to analyse, unless the lane fell silent since the last
	 * analysis (every agent gone): once, to drop what it knew (the findings clear) */
	silent = d->last && t0 - d->lane_rx_mono > STALE_INTERVALS * d->o.interval_ns;
	if (d->analysed_mono &&
	    (t0 - d->analysed_mono < d->o.interval_ns * 3 / 4 || (d->lane_gen == d->analysed_gen && !silent))) {
		pthread_mutex_unlock(&d->lock);
		store_reader_put(d->store, rd);
		return 0;
	}
	d->analysed_mono = t0;
	d->analysed_gen = d->lane_gen;
	pthread_mutex_unlock(&d->lock);
	sync_conf(d, rd);
	if (!d->recovered) {
		d->recovered = true;
		recover_holds(d, rd);
	}
	if (!d->cache_at || t0 - d->cache_at > CACHE_EVERY || (d->lane_unknown && t0 - d->cache_at > CACHE_NEW)) {
		d->lane_unknown = false;
		cache_refresh(d, rd);
	}
	check_inflight(d, rd);

	pthread_mutex_lock(&d->lock);
	hmap_sweep(&d->lane, forget_port, &(struct forget){ d, t0 });
	snap = build(d, t0);
	/* The same interval again (the counters' clocks stood still: a simulator paused, agents
	 * reporting the same readings, which keep their ports fresh but are no new readings):
	 * analysed, but not summed again, nor given to the tuner, which would judge its steps on
	 * it as on a new one (a trial: steps rolled out in auto mode, on the same signals, for
	 * the 100 s the simulator was paused).  New is any newer reading of any port: not the
	 * snapshot's time, a median over agents, which a few agents' new readings may not move. */
	fresh = snap && d->lane_gen != d->fed_gen;
	if (fresh)
		d->fed_gen = d->lane_gen;
	pthread_mutex_unlock(&d->lock);
	if (fresh && d->listener)
		d->listener(d->listener_ctx, snap);

	/* the analysis, under its own lock: reports keep coming in meanwhile */
	pthread_mutex_lock(&d->dl_lock);
	{
		const char *k;
		void *v;

		for (size_t i = 0; hmap_next(&d->subjects, &i, &k, &v);)
			((struct subject *)v)->seen = false;
	}
	before = json_copy(d->findings); /* (its members shared: kept by the copy) */
	if (snap && (r = cc_dl_run(d->dl, snap, &res)) == 0) {
		restore_failed_settle(d);
		af = calloc(res->nfindings + d->nrestore_failed + 1, sizeof(*af));
		texts = calloc(res->nfindings + 1, sizeof(*texts));
		acts = calloc(res->nactions + 1, sizeof(*acts));
		asubj = calloc(res->nactions + 1, sizeof(*asubj));
		achange = calloc(res->nactions + 1, sizeof(*achange));
		if (!af || !texts || !acts || !asubj || !achange) {
			r = -ENOMEM;
		} else {
			memset(d->by_class, 0, sizeof(d->by_class));
			json_array_clear(d->findings);
			for (size_t i = 0; i < res->nfindings; i++) {
				const struct cc_dl_finding *f = &res->findings[i];
				json_t *fj = cc_dl_finding_json(f);
				struct subject *sj = alert_kind(f->cls) ? subject_of(d, f) : NULL;
				const char *subject = sj ? sj->subject : alert_kind(f->cls) ? "?" : "";

				d->by_class[f->cls]++;
				json_object_set_new(fj, "subject", json_string(subject));
				json_array_append(d->findings, fj);
				if (alert_kind(f->cls)) {
					texts[ntexts] = json_dumps(fj, JSON_COMPACT);
					af[naf++] = (struct alert_finding){ .kind = alert_kind(f->cls),
									    .subject = subject,
									    .evidence = f->summary,
									    .details = texts[ntexts],
									    .last_ns = sj ? seen_ns(sj, f, now) : now };
					ntexts++;
				}
				json_decref(fj);
			}
			/* (a deadlock once it has lasted three runs) */
			for (unsigned pr = 0; pr < CC_NPRIO; pr++)
				cc_dl_fault(res, pr, d->o.interval_ns / 1000 * 3 / 2, d->fault[pr],
					    sizeof(d->fault[pr]));
			if (res->nactions) /* actions may be NULL when there are none */
				memcpy(acts, res->actions, res->nactions * sizeof(*acts));
			nacts = res->nactions;
			for (size_t i = 0; i < nacts; i++) /* (a held finding's subject is kept) */
				asubj[i] = subject_copy(d, acts[i].finding);
			d->stuck = res->stuck_queues;
		}
		if (fresh)
			recent_add(d, snap, t0);
		cc_snap_free(d->last);
		d->last = snap;
		snap = NULL;
	} else if (!snap) {
		/* no fresh readings: nothing is known to be wrong (the alerts clear) */
		memset(d->by_class, 0, sizeof(d->by_class));
		memset(d->fault, 0, sizeof(d->fault));
		json_array_clear(d->findings);
		d->stuck = 0;
		cc_snap_free(d->last);
		d->last = NULL;
		af = calloc(d->nrestore_failed + 1, sizeof(*af));
	}
	keep_ended(d, before, t0);
	json_decref(before);
	for (unsigned i = 0; af && r == 0 && i < d->nrestore_failed; i++)
		af[naf++] = (struct alert_finding){
			.kind = "restore_failed",
			.subject = d->restore_failed[i].subject,
			.evidence = "the detector could not put this port's priority back into lossless mode (its "
				    "change failed or timed out: is the switch's agent reporting?); it tries again"
		};
	d->holds = (unsigned)cc_dl_holds(d->dl);
	d->runs++;
	d->last_run_t = now;
	pthread_mutex_unlock(&d->dl_lock);
	cc_snap_free(snap);

	/* the changes, outside the locks (the commit waits for the writer) */
	for (size_t i = 0; r == 0 && i < nacts; i++) {
		struct rf_err e = { 0 };
		int64_t change = 0;
		char buf[600];

		if (act(d, rd, &acts[i], "detector", acts[i].op == CC_DL_RESTORE ? asubj[i] : NULL, &change, &e) < 0) {
			log_msg(LOG_WARNING, "detector", e.code, "cannot queue the change for %s:%s priority %u: %s",
				acts[i].node, acts[i].port, acts[i].prio, rf_err_str(&e, buf, sizeof(buf)));
			continue;
		}
		achange[i] = change;
		log_notice("detector", "change %lld: %s", (long long)change, acts[i].reason);
	}
	store_reader_put(d->store, rd);
	if (r == 0 && af)
		r = alerts_sync(d->store, "detector", alert_kinds, af, naf, now);
	/* an isolation or break in auto mode on its finding's alert, after the sync that raised it
	 * (a restoration: once applied, check_inflight) */
	for (size_t i = 0; r == 0 && i < nacts; i++) {
		struct alert_action aa = { "detector", cc_dl_op_name(acts[i].op), acts[i].reason, achange[i] };
		struct rf_err e = { 0 };

		if (acts[i].op == CC_DL_LOSSY && achange[i] && asubj[i] && alert_kind(acts[i].cls) &&
		    alerts_mitigated(d->store, 0, alert_kind(acts[i].cls), asubj[i], &aa, now, &e) < 0)
			log_warning("detector", "change %lld: not recorded on its alert: %s", (long long)achange[i],
				    e.msg);
	}
	for (size_t i = 0; asubj && i < nacts; i++)
		free(asubj[i]);
	free(asubj);
	free(achange);
	for (size_t i = 0; i < ntexts; i++)
		free(texts[i]);
	free(texts);
	free(af);
	free(acts);
	pthread_mutex_lock(&d->dl_lock);
	hmap_sweep(&d->subjects, drop_subject, d->dl); /* the alerts have copied them */
	d->last_run_ns = tu_mono_ns() - t0;
	pthread_mutex_unlock(&d->dl_lock);
	return r;
}

void detector_set_listener(struct detector *d, detector_snap_fn fn, void *ctx)
{
	d->listener = fn;
	d->listener_ctx = ctx;
}

/* --- configuration, mitigation, status ------------------------------------------------------------------ */

json_t *detector_config(struct detector *d)
{
	json_t *o;

	pthread_mutex_lock(&d->lock);
	o = detector_conf_json(&d->conf);
	pthread_mutex_unlock(&d->lock);
	return o;
}

/* Under conf_lock: two changes at once would each merge into the same configuration before, and
 * the second saved would undo the first (the settings log showing both).  The change merges
 * into the configuration as saved (before the first pass read it, the one in force is the
 * options'). */
static int set_config_locked(struct detector *d, json_t *changes, const char *actor, const char *reason,
			     struct rf_err *e)
{
	struct store_reader *rd = store_reader_get(d->store);
	struct detector_conf c, was;
	json_t *doc, *before;
	int r;

	if (!rd)
		return rf_err_set(e, -EAGAIN, "BUSY", NULL, "no database connection free; retry");
	r = saved_conf(d, rd, &was);
	store_reader_put(d->store, rd);
	if (r < 0)
		return rf_err_set(e, r, "STORE_ERROR", NULL, "the configuration saved could not be read: %s", strerror(-r));
	c = was;
	if ((r = detector_conf_apply(&c, changes, e)) < 0)
		return r;
	doc = detector_conf_json(&c);
	before = detector_conf_json(&was);
	r = doc && before ? store_meta_put_by(d->store, "detector", doc, before, actor, reason) : -ENOMEM;
	json_decref(doc);
	json_decref(before);
	if (r < 0)
		return store_write_failed(r, "the configuration could not be saved", e);
	pthread_mutex_lock(&d->lock);
	d->conf = c;
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_lock(&d->dl_lock);
	{
		struct cc_dl_conf dc = *cc_dl_config(d->dl);

		dc.deadlock_mode = c.deadlock_mode;
		dc.storm_mode = c.storm_mode;
		dc.restore_us = c.restore_ns / 1000;
		cc_dl_configure(d->dl, &dc);
	}
	pthread_mutex_unlock(&d->dl_lock);
	log_notice("detector", "configuration changed by %s%s%s%s: deadlock %s, storm %s, restore %lld ms", actor,
		   reason ? " (reason \"" : "", reason ?: "", reason ? "\")" : "", cc_dl_mode_name(c.deadlock_mode),
		   cc_dl_mode_name(c.storm_mode), (long long)(c.restore_ns / NSEC_PER_MSEC));
	return 0;
}

int detector_set_config(struct detector *d, json_t *changes, const char *actor, const char *reason,
			struct rf_err *e)
{
	int r;

	pthread_mutex_lock(&d->conf_lock);
	r = set_config_locked(d, changes, actor, reason, e);
	pthread_mutex_unlock(&d->conf_lock);
	return r;
}

#define REASON_TAIL_MAX (sizeof(((struct cc_dl_action *)0)->reason) - 100) /* the rest: the evidence */

/* "; asked by ACTOR: WHY" (at most REASON_TAIL_MAX bytes) after an action's reason, all of it:
 * the evidence before it is cut short ("...", at a character's start) if both do not fit (the
 * alert keeps it whole). */
static void reason_add(struct cc_dl_action *a, const char *actor, const char *why)
{
	char tail[sizeof(a->reason)];
	size_t n = strlen(a->reason), nt;

	if (!why || !*why)
		return;
	nt = (size_t)snprintf(tail, sizeof(tail), "; asked by %s: %s", actor, why);
	if (n + nt >= sizeof(a->reason)) {
		n = str_utf8_prefix(a->reason, sizeof(a->reason) - nt - 4);
		memcpy(a->reason + n, "...", 3);
		n += 3;
	}
	memcpy(a->reason + n, tail, nt + 1);
}

int detector_mitigate(struct detector *d, int64_t alert, const char *actor, const char *reason, json_t **ret,
		      struct rf_err *e)
{
	const char *kind, *subject, *state;
	struct store_reader *rd;
	struct cc_dl_action a;
	json_t *al = NULL, *f, *found = NULL;
	int64_t change = 0;
	char who[200];
	size_t i;
	int r;

	/* (the API's 512 bytes and a token's name fit: one of a caller in C may not) */
	if (reason && strlen("; asked by : ") + strlen(actor) + strlen(reason) > REASON_TAIL_MAX)
		return rf_err_set(e, -EINVAL, "SCHEMA_VIOLATION", "/reason",
				  "the reason is %zu bytes with the caller's name: %zu at most beside the finding's "
				  "evidence",
				  strlen(actor) + strlen(reason), REASON_TAIL_MAX - strlen("; asked by : "));
	rd = store_reader_get(d->store);
	if (!rd)
		return rf_err_set(e, -EAGAIN, "BUSY", NULL, "no database connection free; retry");
	if ((r = alerts_get(rd, alert, &al, e)) < 0)
		goto out;
	kind = json_string_value(json_object_get(al, "kind"));
	subject = json_string_value(json_object_get(al, "subject"));
	state = json_string_value(json_object_get(al, "state"));
	if (strcmp(state, "active")) {
		/* (409: the alert is there, and cannot be acted on any more) */
		r = rf_err_set(e, -EALREADY, "NOT_ACTIVE", NULL,
			       "alert %lld is over (%s): nothing to mitigate (a detector alert clears once the "
			       "detector no longer finds it: the fault ended, or no readings show it any more, its "
			       "agents silent)",
			       (long long)alert, state);
		goto out;
	}
	pthread_mutex_lock(&d->dl_lock);
	json_array_foreach(d->findings, i, f)
		if (!strcmp(json_string_value(json_object_get(f, "class")), kind) &&
		    !strcmp(json_string_value(json_object_get(f, "subject")), subject)) {
			found = f;
			break;
		}
	if (!found) {
		pthread_mutex_unlock(&d->dl_lock);
		r = rf_err_set(e, -EINVAL, "NO_ACTION", NULL,
			       "alert %lld (%s) is not one the detector can act on (pause_storm, deadlock, persistent)",
			       (long long)alert, kind);
		goto out;
	}
	r = cc_dl_mitigate(d->dl, (uint64_t)json_integer_value(json_object_get(found, "id")), &a);
	pthread_mutex_unlock(&d->dl_lock);
	if (r == -EALREADY)
		r = rf_err_set(e, r, "MITIGATED", NULL, "alert %lld is being mitigated already", (long long)alert);
	else if (r == -EPERM)
		r = rf_err_set(e, r, "MITIGATION_OFF", NULL,
			       "mitigation of %s is off (rocefabctl detector config, or PUT "
			       "/api/v1/detector/config, changes it)", kind);
	else if (r == -EINVAL)
		r = rf_err_set(e, r, "NO_ACTION", NULL, "%s findings have no mitigation", kind);
	else if (r == -ENOENT)
		r = rf_err_set(e, -EALREADY, "NOT_ACTIVE", NULL, "the finding of alert %lld is over", (long long)alert);
	if (r < 0)
		goto out;
	snprintf(who, sizeof(who), "detector (asked by %s)", actor);
	reason_add(&a, actor, reason);
	if ((r = act(d, rd, &a, who, NULL, &change, e)) < 0)
		goto out;
	log_notice("detector", "change %lld (asked by %s): %s", (long long)change, actor, a.reason);
	{
		/* on the alert too: the change is queued whatever comes of this (it names the
		 * caller and the reason itself) */
		struct rf_err e2 = { 0 };

		struct alert_action aa = { actor, cc_dl_op_name(a.op), reason, change };

		if (alerts_mitigated(d->store, alert, NULL, NULL, &aa, tu_now_ns(), &e2) < 0)
			log_warning("detector", "alert %lld: %s", (long long)alert, e2.msg);
	}
	*ret = json_pack("{s:I,s:o,s:I}", "alert", (json_int_t)alert, "action", cc_dl_action_json(&a), "change",
			 (json_int_t)change);
out:
	json_decref(al);
	store_reader_put(d->store, rd);
	return r;
}

/* The ports whose last reading is fresh (not gone stale; a snapshot takes those of them with
 * two), and the read times of the oldest and newest of them (0: none); under d->lock. */
static size_t lane_fresh(struct detector *d, int64_t mono, int64_t *ret_oldest, int64_t *ret_newest)
{
	int64_t oldest = 0, newest = 0;
	size_t n = 0;
	const char *k;
	void *v;

	for (size_t i = 0; hmap_next(&d->lane, &i, &k, &v);) {
		const struct lport *lp = v;

		if (!lp->n || mono - lp->rx_mono > STALE_INTERVALS * d->o.interval_ns)
			continue;
		n++;
		if (!oldest || lp->t[1] < oldest)
			oldest = lp->t[1];
		if (lp->t[1] > newest)
			newest = lp->t[1];
	}
	if (ret_oldest)
		*ret_oldest = oldest;
	if (ret_newest)
		*ret_newest = newest;
	return n;
}

json_t *detector_status(struct detector *d)
{
	json_t *o;
	double secs;
	int64_t oldest = 0, newest = 0, mono;
	size_t nfresh;

	pthread_mutex_lock(&d->lock);
	pthread_mutex_lock(&d->dl_lock); /* the order: lock, then dl_lock */
	mono = tu_mono_ns();
	/* the read times of the ports' last readings (those not gone stale): how far the lane lags */
	nfresh = lane_fresh(d, mono, &oldest, &newest);
	secs = (double)(mono - d->lane_since_mono) / 1e9;
	o = json_pack("{s:o,s:I,s:f,s:{s:I,s:I,s:I,s:f,s:f,s:I,s:I,s:I},s:I,s:I,s:O,s:I}", "config",
		      detector_conf_json(&d->conf), "interval_ms", (json_int_t)(d->o.interval_ns / NSEC_PER_MSEC),
		      "last_run_ms", (double)d->last_run_ns / 1e6, "lane", "ports", (json_int_t)d->lane.len, "reports",
		      (json_int_t)d->lane_reports, "bytes", (json_int_t)d->lane_bytes, "reports_per_s",
		      d->rates_ready ? d->reports_per_s : secs > 0 ? (double)d->lane_reports / secs : 0.0,
		      "bytes_per_s", d->rates_ready ? d->bytes_per_s : secs > 0 ? (double)d->lane_bytes / secs : 0.0,
		      "oldest_reading_us", (json_int_t)(oldest / 1000),
		      "newest_reading_us", (json_int_t)(newest / 1000), "unanalysed",
		      (json_int_t)(d->lane_gen - d->analysed_gen), "stuck_queues", (json_int_t)d->stuck, "holds",
		      (json_int_t)d->holds, "findings", d->findings, "runs", (json_int_t)d->runs);
	json_object_set_new(json_object_get(o, "lane"), "fresh_ports", json_integer((json_int_t)nfresh));
	json_object_set_new(o, "has_snapshot", json_boolean(d->last != NULL));
	recent_turn(d, mono);
	json_object_set_new(o, "recent_intervals", json_integer((json_int_t)recent_n(d)));
	json_object_set_new(o, "held", cc_dl_holds_json(d->dl));
	pthread_mutex_unlock(&d->dl_lock);
	pthread_mutex_unlock(&d->lock);
	return o;
}

json_t *detector_snapshot(struct detector *d)
{
	json_t *o = NULL;

	pthread_mutex_lock(&d->dl_lock);
	if (d->last)
		o = cc_snap_json(d->last);
	pthread_mutex_unlock(&d->dl_lock);
	return o;
}

bool detector_fault(struct detector *d, unsigned prio, char *buf, size_t len)
{
	bool r;

	pthread_mutex_lock(&d->dl_lock);
	r = prio < CC_NPRIO && d->fault[prio][0];
	snprintf(buf, len, "%s", r ? d->fault[prio] : "");
	pthread_mutex_unlock(&d->dl_lock);
	return r;
}

json_t *detector_recent(struct detector *d)
{
	struct cc_snap *sum = NULL;
	int64_t from = 0, span;
	unsigned n = 0;
	json_t *o;

	pthread_mutex_lock(&d->dl_lock);
	recent_turn(d, tu_mono_ns());
	for (int i = 0; i < 2; i++) {
		if (!d->recent[i])
			continue;
		if (!sum) {
			if (!(sum = cc_snap_new(d->recent[i]->prios, d->recent[i]->t_us, 0)))
				break;
			from = d->recent_from_us[i];
		}
		if (cc_snap_merge(sum, d->recent[i]) < 0) {
			cc_snap_free(sum);
			sum = NULL;
			break;
		}
	}
	n = recent_n(d);
	pthread_mutex_unlock(&d->dl_lock);
	if (!sum)
		return NULL;
	cc_snap_finish(sum);
	o = cc_snap_json(sum);
	/* the time they cover: less than interval_us when an analysis reused a port's readings of
	 * the one before (its agent not heard from in between: counted twice, its rates the same) */
	span = sum->t_us > from ? sum->t_us - from : 0;
	cc_snap_free(sum);
	if (o) {
		json_object_set_new(o, "intervals", json_integer(n));
		json_object_set_new(o, "span_us", json_integer(span));
	}
	return o;
}

static bool victim_node(json_t *victims, const char *node)
{
	json_t *v;
	size_t k;

	json_array_foreach(victims, k, v)
		if (!strcmp(json_string_value(json_object_get(v, "node")) ?: "", node))
			return true;
	return false;
}

/* The switch the host's next port from *i on leads to, in the snapshot (*i then past it);
 * NULL: no more. */
static const char *next_tor(const struct cc_snap *s, const char *host, uint32_t *i)
{
	int n = s ? cc_snap_find_node(s, host) : -1;

	if (n < 0)
		return NULL;
	while (*i < s->nodes[n].nports) {
		uint32_t peer = s->ports[s->nodes[n].ports[(*i)++]].peer;

		if (peer != CC_NONE)
			return s->nodes[s->ports[peer].node].name;
	}
	return NULL;
}

/* The host's ports lead to that switch (in the snapshot). */
static bool same_tor(const struct cc_snap *s, const char *host, const char *tor)
{
	const char *t;
	uint32_t i = 0;

	while ((t = next_tor(s, host, &i)))
		if (!strcmp(t, tor))
			return true;
	return false;
}

/* The switch a host's (first) port leads to, in the snapshot; NULL: none known. */
static const char *tor_of(const struct cc_snap *s, const char *host)
{
	uint32_t i = 0;

	return next_tor(s, host, &i);
}

/* A pingmesh link's name ("a-b", either way round) is the link between a and b. */
static bool link_is(const char *subject, const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);

	return (!strncmp(subject, a, na) && subject[na] == '-' && !strcmp(subject + na + 1, b)) ||
	       (!strncmp(subject, b, nb) && subject[nb] == '-' && !strcmp(subject + nb + 1, a));
}

/* A pause storm explains a finding of the host it comes from (or a victim, or one under its
 * ToR), of that ToR, of a link its victims wait on, and losses spread over the fabric. */
static bool storm_explains(const struct detector *d, json_t *f, const char *kind, const char *subject)
{
	const char *culprit = json_string_value(json_object_get(f, "culprit"));
	json_t *victims = json_object_get(f, "victims"), *v, *suggested = json_object_get(f, "suggested");
	const char *tor = json_string_value(json_object_get(suggested, "node")) ?: "";
	size_t k;

	if (!culprit)
		return false;
	/* one kept as last read (neither end reads it now): its culprit only, not what it may no
	 * longer freeze (a ToR whose agent died with it is to be seen) */
	if (json_is_true(json_object_get(f, "unread")))
		return !strcmp(kind, "host") && !strcmp(subject, culprit);
	if (!strcmp(kind, "fabric"))
		return true; /* losses spread everywhere while a storm's pauses spread */
	if (!strcmp(kind, "host"))
		/* the culprit; or a host the storm froze (a victim), or one hanging off the
		 * culprit's ToR, whose probes cross the frozen switch */
		return !strcmp(subject, culprit) || victim_node(victims, subject) ||
		       (suggested && same_tor(d->last, subject, tor));
	if (!strcmp(kind, "tor"))
		return suggested && !strcmp(tor, subject); /* the switch port facing the culprit is on it */
	if (!strcmp(kind, "link"))
		json_array_foreach(victims, k, v)
			if (link_is(subject, json_string_value(json_object_get(v, "node")) ?: "",
				    json_string_value(json_object_get(v, "port")) ?: ""))
				return true;
	return false;
}

/* A slow receiver explains a finding of itself, of the hosts under its ToR (their probes queue
 * behind its pauses there), of that ToR and of its link to it, and losses spread over the
 * fabric (its pauses spread as a storm's do). */
static bool slow_explains(const struct detector *d, json_t *f, const char *kind, const char *subject)
{
	const char *culprit = json_string_value(json_object_get(f, "culprit")), *tor;

	if (culprit && !strcmp(kind, "fabric"))
		return true; /* (probes lost to their timeout behind its pauses) */
	if (!culprit || !(tor = tor_of(d->last, culprit)))
		return culprit && !strcmp(kind, "host") && !strcmp(subject, culprit);
	if (!strcmp(kind, "host"))
		return !strcmp(subject, culprit) || same_tor(d->last, subject, tor);
	if (!strcmp(kind, "tor"))
		return !strcmp(subject, tor);
	return !strcmp(kind, "link") && link_is(subject, culprit, tor);
}

/* Whether finding f (active, or over) explains a pingmesh finding. */
static bool explains(const struct detector *d, json_t *f, const char *kind, const char *subject)
{
	const char *cls = json_string_value(json_object_get(f, "class")) ?: "";

	if (!strcmp(cls, "pause_storm"))
		return storm_explains(d, f, kind, subject);
	if (!strcmp(cls, "deadlock") || !strcmp(cls, "persistent"))
		/* a frozen cycle stops what crosses it and what waits behind it: losses and delays
		 * anywhere in the fabric are its while it lasts; one broken (a mitigation holds: a
		 * persistent one is held broken for days) freezes nothing (one over: it froze
		 * the window's probes while it lasted, unless it was broken already then) */
		return !json_is_true(json_object_get(f, "mitigated"));
	if (!strcmp(cls, "slow_receiver"))
		return slow_explains(d, f, kind, subject);
	return false;
}

bool detector_explains(struct detector *d, const char *kind, const char *subject, int64_t window_ns, char *buf,
		       size_t len, const char **ret_class)
{
	int64_t mono = tu_mono_ns();
	json_t *f, *x;
	size_t i, n;
	bool hit = false;

	pthread_mutex_lock(&d->dl_lock);
	/* the active findings first, then those over within the window, the latest first: a
	 * storm over still explains the losses its window holds */
	n = json_array_size(d->findings) + json_array_size(d->ended);
	for (i = 0; i < n; i++) {
		bool ended = i >= json_array_size(d->findings);

		if (!ended) {
			f = json_array_get(d->findings, i);
		} else {
			x = json_array_get(d->ended, n - 1 - i);
			if (mono - json_integer_value(json_object_get(x, "at")) > window_ns)
				break;
			f = json_object_get(x, "f");
		}
		hit = explains(d, f, kind, subject);
		if (hit) {
			const char *cls = json_string_value(json_object_get(f, "class")) ?: "";

			snprintf(buf, len, "%s", json_string_value(json_object_get(f, "subject")) ?: "");
			*ret_class = cc_dl_class_name(CC_DL_DEADLOCK);
			for (int c = 0; c < CC_DL_NCLASSES; c++) /* (the class's own static name) */
				if (!strcmp(cls, cc_dl_class_name((enum cc_dl_class)c)))
					*ret_class = cc_dl_class_name((enum cc_dl_class)c);
			break;
		}
	}
	pthread_mutex_unlock(&d->dl_lock);
	return hit;
}

json_t *detector_hold_warnings(struct detector *d, const char *agent, bool is_switch, const char *device,
				const char *port, int64_t enable)
{
	json_t *holds, *h, *out = NULL;
	char label[2 * CC_DL_NAME];
	size_t i;

	port_label(is_switch, device ?: "", port ?: "", label, sizeof(label));
	pthread_mutex_lock(&d->dl_lock);
	holds = cc_dl_holds_json(d->dl);
	pthread_mutex_unlock(&d->dl_lock);
	json_array_foreach(holds, i, h) {
		int prio = (int)json_integer_value(json_object_get(h, "priority"));
		const char *cls = json_string_value(json_object_get(h, "class")) ?: "?";
		char detail[600];

		if (strcmp(json_string_value(json_object_get(h, "node")) ?: "", agent) ||
		    strcmp(json_string_value(json_object_get(h, "port")) ?: "", label) || !(enable & (1 << prio)))
			continue;
		snprintf(detail, sizeof(detail),
			 "%s %s priority %d is held out of lossless mode by the detector (%s #%lld); this change puts "
			 "it back: the detector drops its hold, and %s",
			 agent, label, prio, cls, (long long)json_integer_value(json_object_get(h, "finding")),
			 !strcmp(cls, "pause_storm")
				 ? "while the storm lasts, in auto mode, isolates the port again (storm_mode advise "
				   "or off in PUT /api/v1/detector/config leaves it to you)"
				 : "a cycle that forms again is a new deadlock, broken again in auto mode");
		if (!out)
			out = json_array();
		json_array_append_new(out, json_pack("{s:s,s:s}", "code", "DETECTOR_HOLD", "detail", detail));
	}
	json_decref(holds);
	return out;
}

void detector_render_metrics(struct detector *d, struct buf *out)
{
	pthread_mutex_lock(&d->lock);
	pthread_mutex_lock(&d->dl_lock); /* the order: lock, then dl_lock */
	buf_puts(out, "# HELP rocefab_detector_findings Findings of the PFC deadlock and storm detector's last run, by "
		      "class (congestion is recorded, never an alert).\n# TYPE rocefab_detector_findings gauge\n");
	for (int c = 0; c < CC_DL_NCLASSES; c++)
		buf_printf(out, "rocefab_detector_findings{class=\"%s\"} %u\n", cc_dl_class_name((enum cc_dl_class)c),
			   d->by_class[c]);
	buf_printf(out,
		   "# HELP rocefab_detector_stuck_queues Queues paused the whole interval that sent nothing.\n"
		   "# TYPE rocefab_detector_stuck_queues gauge\nrocefab_detector_stuck_queues %u\n"
		   "# HELP rocefab_detector_holds Ports the detector holds out of lossless mode now.\n"
		   "# TYPE rocefab_detector_holds gauge\nrocefab_detector_holds %u\n"
		   "# HELP rocefab_detector_restore_failed Ports the detector took out of lossless mode and could not "
		   "put back (restore_failed alerts).\n"
		   "# TYPE rocefab_detector_restore_failed gauge\nrocefab_detector_restore_failed %u\n"
		   "# HELP rocefab_detector_runs_total Runs of the detector.\n"
		   "# TYPE rocefab_detector_runs_total counter\nrocefab_detector_runs_total %llu\n"
		   "# HELP rocefab_detector_run_seconds How long the last run took.\n"
		   "# TYPE rocefab_detector_run_seconds gauge\nrocefab_detector_run_seconds %.6f\n"
		   "# HELP rocefab_detector_changes_total The detector's changes by what they do and how they ended.\n"
		   "# TYPE rocefab_detector_changes_total counter\n"
		   "rocefab_detector_changes_total{op=\"lossless_off\",outcome=\"applied\"} %llu\n"
		   "rocefab_detector_changes_total{op=\"lossless_off\",outcome=\"failed\"} %llu\n"
		   "rocefab_detector_changes_total{op=\"restore\",outcome=\"applied\"} %llu\n"
		   "rocefab_detector_changes_total{op=\"restore\",outcome=\"failed\"} %llu\n"
		   "# HELP rocefab_pfc_lane_reports_total Fast PFC reports received.\n"
		   "# TYPE rocefab_pfc_lane_reports_total counter\nrocefab_pfc_lane_reports_total %llu\n"
		   "# HELP rocefab_pfc_lane_bytes_total Bytes of fast PFC reports received (request bodies).\n"
		   "# TYPE rocefab_pfc_lane_bytes_total counter\nrocefab_pfc_lane_bytes_total %llu\n"
		   "# HELP rocefab_pfc_lane_ports Ports whose fast-lane readings are fresh (the last within 3 "
		   "detector intervals).\n"
		   "# TYPE rocefab_pfc_lane_ports gauge\nrocefab_pfc_lane_ports %zu\n",
		   d->stuck, d->holds, d->nrestore_failed, (unsigned long long)d->runs, (double)d->last_run_ns / 1e9,
		   (unsigned long long)d->actions_ok, (unsigned long long)d->actions_failed,
		   (unsigned long long)d->restores_ok, (unsigned long long)d->restores_failed,
		   (unsigned long long)d->lane_reports, (unsigned long long)d->lane_bytes,
		   lane_fresh(d, tu_mono_ns(), NULL, NULL));
	buf_printf(out,
		   "# HELP rocefab_pfc_lane_refused_total Fast-lane readings refused: beyond the lane's bounds, or "
		   "timed far ahead of rocefabd's clock.\n# TYPE rocefab_pfc_lane_refused_total counter\n"
		   "rocefab_pfc_lane_refused_total{reason=\"full\"} %llu\nrocefab_pfc_lane_refused_total{reason=\"future\"} "
		   "%llu\n",
		   (unsigned long long)d->lane_full, (unsigned long long)d->lane_future);
	pthread_mutex_unlock(&d->dl_lock);
	pthread_mutex_unlock(&d->lock);
}
