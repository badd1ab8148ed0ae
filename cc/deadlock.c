/* PFC deadlock and pause-storm detection: see deadlock.h.
 *
 * Per interval: mark the stuck queues, find the strongly connected components of the
 * pause-dependency graph among them (Tarjan, iterative), name each component a deadlock, then
 * look for pause sources (storms), slow receivers and congestion.  The graph's edges are never
 * stored: the stuck queues are sorted by (node, priority), so the successors of a queue are one
 * range of that array (the stuck queues of its peer's node) and its predecessors one range of
 * the same array sorted by (peer node, priority).  Findings are matched to the previous
 * interval's by a key (class, priority, sorted ports) so that their ids and first-seen times
 * last; the holds (breaks and isolations in force) carry over too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/deadlock.h"
#include "lib/hmap.h"
#include "lib/vec.h"

const struct cc_dl_conf cc_dl_defaults = {
	.deadlock_mode = CC_DL_ADVISE,
	.storm_mode = CC_DL_ADVISE,
	.restore_us = 600000, /* 3 fast intervals of 200 ms */
	.stuck_share = 0.9,
	.slow_share = 0.2,
	.slow_hold = 25,
	.congestion_share = 0.5,
	.max_listed = 64,
	.action_timeout_us = 120000000, /* longer than a change's deadline and grace */
};

const char *cc_dl_class_name(enum cc_dl_class c)
{
	static const char *const names[] = { "deadlock", "pause_storm", "slow_receiver", "congestion",
					     "persistent" };

	return (unsigned)c < CC_DL_NCLASSES ? names[c] : "?";
}

const char *cc_dl_op_name(enum cc_dl_op op)
{
	return op == CC_DL_LOSSY ? "lossless_off" : "restore";
}

const char *cc_dl_mode_name(enum cc_dl_mode m)
{
	return m == CC_DL_AUTO ? "auto" : m == CC_DL_ADVISE ? "advise" : "off";
}

int cc_dl_mode_parse(const char *s, enum cc_dl_mode *ret)
{
	if (!strcmp(s, "off"))
		*ret = CC_DL_OFF;
	else if (!strcmp(s, "advise"))
		*ret = CC_DL_ADVISE;
	else if (!strcmp(s, "auto"))
		*ret = CC_DL_AUTO;
	else
		return -EINVAL;
	return 0;
}

const char *cc_dl_conf_check(const struct cc_dl_conf *c)
{
	if (c->restore_us <= 0)
		return "restore time must be above 0";
	if (!(c->stuck_share > 0 && c->stuck_share <= 1) || !(c->slow_share > 0 && c->slow_share <= 1) ||
	    !(c->congestion_share > 0 && c->congestion_share <= 1))
		return "shares of the interval must be in (0, 1]";
	if ((unsigned)c->deadlock_mode > CC_DL_AUTO || (unsigned)c->storm_mode > CC_DL_AUTO)
		return "unknown mode";
	return NULL;
}

/* --- state that lasts across intervals --------------------------------------------------- */

struct track {
	char *key;
	uint64_t id;
	int64_t first_us, last_us;
	bool seen;
};

enum hold_state { H_APPLYING, H_ACTIVE, H_RESTORING };

struct hold {
	enum cc_dl_class cls;
	enum hold_state state;
	uint64_t finding;
	char *fkey;		   /* the finding's key */
	uint64_t action;	   /* the action waiting for cc_dl_action_done, 0: none */
	char node[CC_DL_NAME], port[CC_DL_NAME]; /* the queue made lossy */
	uint8_t prio;
	int64_t until_us;	   /* deadlock: restore then (INT64_MAX: persistent, kept) */
	char cnode[CC_DL_NAME], cport[CC_DL_NAME]; /* storm: the culprit */
	int64_t quiet_since;	   /* storm: -1 while the culprit pauses */
	int64_t state_since;	   /* when it entered its state */
	bool restore_due;
	bool seen_lossy;	   /* a snapshot showed the port out of lossless mode since ACTIVE */
	bool via_peer;		   /* storm: its culprit's own readings missing in the last run: judged
				    * by the port it paused */
	bool blind;		   /* storm: and that port read no pauses either: its last verdict kept */
};

/* A storm hold nothing reads either way, on as last read (add_unread_storms). */
static bool hold_unread(const struct hold *h)
{
	return h->blind && h->quiet_since < 0;
}

/* A slow receiver candidate, and once found (raised), what its last interval as one said: a
 * slow receiver pauses only while more comes to it than it takes, so a bursty load leaves
 * intervals between with nothing to pause for; it stays raised until slow_hold of them in a
 * row (before, its alert was cleared and raised again every few seconds while the fault went
 * on).  Those are counted as its port's readings come (a run that sees the same readings again
 * is not another interval), not by the snapshots' clock, which may step. */
struct slowc {
	uintptr_t run;	     /* the run that saw it last (runs count from 1) */
	int64_t read_to_us; /* the port's readings then (cc_port.read_to_us; 0: not known) */
	bool raised;
	unsigned quiet;		 /* raised: intervals since its last as one */
	int64_t quiet_read_to_us; /* the readings the last of them counted */
	bool quiet_silent;	  /* those were its switch port's (another agent's clock) */
	int64_t last_us, interval_us; /* the end and length of its last interval as one */
	uint64_t paused_us, rx_bytes;  /* and what it paused and took then */
	bool silent;		       /* then read from its switch port (slow_reading) */
	unsigned prio;
	char node[CC_DL_NAME], port[CC_DL_NAME];
	char key[];
};

/* A break restored: a deadlock that forms again through it within PERSIST_RESTORES restore
 * times is persistent (a routing loop forms again at once).  One later, or after an operator
 * put a persistent one's port back (routing fixed), is a deadlock of its own: before, every
 * deadlock through a queue once restored was persistent for the life of the process. */
#define PERSIST_RESTORES 10
struct restored {
	int64_t at_us;
	char key[]; /* "node\x1fport\x1fprio" */
};

/* A share of the interval, worked out once a run (the loops ask for it for every queue). */
struct share {
	uint64_t us;
	bool most; /* more than half: the rule without duration counters applies */
};

struct cc_dl {
	struct cc_dl_conf conf;
	struct hmap tracks; /* key -> struct track */
	struct hold *holds;
	size_t nholds, capholds;
	struct hmap restored; /* "node\x1fport\x1fprio" of a restored break -> struct restored */
	struct hmap slow; /* slow receiver candidates: key -> the run that saw them last */
	uintptr_t runs;
	struct share sh_stuck, sh_cong, sh_slow; /* this run's */
	uint64_t next_id, next_action;
	int64_t now_us;
	/* the result of the last run */
	struct cc_dl_result res;
	size_t capfindings, capcleared, capactions;
};

struct cc_dl *cc_dl_new(const struct cc_dl_conf *c)
{
	struct cc_dl *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->conf = c ? *c : cc_dl_defaults;
	hmap_init(&d->tracks);
	hmap_init(&d->restored);
	hmap_init(&d->slow);
	d->next_id = 1;
	d->next_action = 1;
	return d;
}

static void result_clear(struct cc_dl_result *r)
{
	for (size_t i = 0; i < r->nfindings; i++) {
		free(r->findings[i].ports);
		free(r->findings[i].victims);
	}
	r->nfindings = r->ncleared = r->nactions = 0;
	r->stuck_queues = 0;
}

void cc_dl_free(struct cc_dl *d)
{
	const char *k;
	void *v;

	if (!d)
		return;
	for (size_t i = 0; hmap_next(&d->tracks, &i, &k, &v);) {
		free(((struct track *)v)->key);
		free(v);
	}
	hmap_fini(&d->tracks);
	for (size_t i = 0; hmap_next(&d->restored, &i, &k, &v);)
		free(v);
	hmap_fini(&d->restored);
	for (size_t i = 0; hmap_next(&d->slow, &i, &k, &v);)
		free(v);
	hmap_fini(&d->slow);
	for (size_t i = 0; i < d->nholds; i++)
		free(d->holds[i].fkey);
	free(d->holds);
	result_clear(&d->res);
	free(d->res.findings);
	free(d->res.cleared);
	free(d->res.actions);
	free(d);
}

void cc_dl_configure(struct cc_dl *d, const struct cc_dl_conf *c)
{
	d->conf = *c;
}

const struct cc_dl_conf *cc_dl_config(const struct cc_dl *d)
{
	return &d->conf;
}

size_t cc_dl_holds(const struct cc_dl *d)
{
	return d->nholds;
}

json_t *cc_dl_holds_json(const struct cc_dl *d)
{
	static const char *const states[] = { [H_APPLYING] = "applying", [H_ACTIVE] = "in_force",
					      [H_RESTORING] = "restoring" };
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < d->nholds; i++) {
		const struct hold *h = &d->holds[i];
		json_t *o = json_pack("{s:s,s:s,s:i,s:s,s:I,s:s,s:I}", "node", h->node, "port", h->port, "priority",
				      h->prio, "class", cc_dl_class_name(h->cls), "finding", (json_int_t)h->finding,
				      "state", states[h->state], "since_us", (json_int_t)h->state_since);
		int64_t until = -1;

		if (!o)
			continue;
		if (h->cls == CC_DL_PAUSE_STORM) {
			json_object_set_new(o, "culprit", json_pack("{s:s,s:s}", "node", h->cnode, "port", h->cport));
			if (hold_unread(h))
				json_object_set_new(o, "unread", json_true());
			if (h->quiet_since >= 0)
				until = h->quiet_since + d->conf.restore_us;
		} else if (h->until_us != INT64_MAX) {
			until = h->until_us;
		}
		json_object_set_new(o, "until_us", until >= 0 ? json_integer(until) : json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

/* --- the interval's analysis ---------------------------------------------------------------- */

struct vq {
	uint32_t port, node, peer_node; /* peer_node CC_NONE: no known peer (or a host) */
	uint8_t prio;
	bool stuck; /* else paused most of the interval but draining */
	bool victim;
	uint64_t depth;
};

struct run {
	struct cc_dl *d;
	const struct cc_snap *s;
	struct vq *v;	       /* stuck queues, sorted by (node, prio) */
	uint32_t nv;
	uint32_t *by_peer;     /* indexes of v sorted by (peer_node, prio) */
	/* Tarjan */
	uint32_t *index, *low, *stack, *comp, *cstack, *citer;
	bool *on_stack;
	uint32_t ncomp;
	const bool *removed; /* vertices left out (break choice) */
};

static bool has(const struct cc_prio *e, enum lane_field f)
{
	return e && (e->have & (1u << f));
}

static struct share share_of(const struct cc_snap *s, double share)
{
	return (struct share){ .us = (uint64_t)((double)s->interval_us * share), .most = share > 0.5 };
}

/* Paused by the peer for the share of the interval. */
static bool paused_for(const struct cc_prio *e, struct share sh)
{
	if (has(e, CF_RX_PAUSE_US))
		return e->v[CF_RX_PAUSE_US] >= sh.us;
	/* no duration counter: SONiC's rule — paused now, pause frames came, no XON */
	return sh.most && has(e, CF_PAUSED) && e->v[CF_PAUSED] && has(e, CF_RX_PAUSE_FRAMES) &&
	       e->v[CF_RX_PAUSE_FRAMES] > 0 && (!has(e, CF_RX_PAUSE_TRANSITIONS) || !e->v[CF_RX_PAUSE_TRANSITIONS]);
}

/* Pausing its peer for the share of the interval. */
static bool pausing_for(const struct cc_prio *e, struct share sh)
{
	if (has(e, CF_TX_PAUSE_US))
		return e->v[CF_TX_PAUSE_US] >= sh.us;
	return sh.most && has(e, CF_PAUSING) && e->v[CF_PAUSING] && has(e, CF_TX_PAUSE_FRAMES) &&
	       e->v[CF_TX_PAUSE_FRAMES] > 0;
}

static bool pausing_any(const struct cc_snap *s, uint32_t port, unsigned prio)
{
	const struct cc_prio *e = cc_snap_prio(s, port, prio);
	uint32_t peer = s->ports[port].peer;
	const struct cc_prio *pe = peer != CC_NONE ? cc_snap_prio(s, peer, prio) : NULL;

	return (has(e, CF_TX_PAUSE_US) && e->v[CF_TX_PAUSE_US] > 0) || (has(e, CF_PAUSING) && e->v[CF_PAUSING]) ||
	       (has(e, CF_TX_PAUSE_FRAMES) && e->v[CF_TX_PAUSE_FRAMES] > 0) ||
	       (has(pe, CF_RX_PAUSE_FRAMES) && pe->v[CF_RX_PAUSE_FRAMES] > 0);
}

static bool sent_nothing(const struct cc_prio *e)
{
	if (has(e, CF_TX_BYTES))
		return e->v[CF_TX_BYTES] == 0;
	if (has(e, CF_TX_PACKETS))
		return e->v[CF_TX_PACKETS] == 0;
	return false;
}

/* Received nothing on the priority (from its own counter, or the peer's transmit counter). */
static bool took_nothing(const struct cc_snap *s, uint32_t port, unsigned prio)
{
	const struct cc_prio *e = cc_snap_prio(s, port, prio);
	uint32_t peer = s->ports[port].peer;

	if (has(e, CF_RX_BYTES))
		return e->v[CF_RX_BYTES] == 0;
	if (has(e, CF_RX_PACKETS))
		return e->v[CF_RX_PACKETS] == 0;
	return peer != CC_NONE && sent_nothing(cc_snap_prio(s, peer, prio));
}

static bool stuck(const struct cc_dl *d, const struct cc_snap *s, uint32_t pi, unsigned prio)
{
	const struct cc_port *p = &s->ports[pi];
	const struct cc_prio *e = cc_snap_prio(s, pi, prio);

	if (p->down || !(p->lossless & (1u << prio)) || !e)
		return false;
	if (!paused_for(e, d->sh_stuck) || !sent_nothing(e))
		return false;
	/* a switch queue says whether anything waits; a NIC's does not (its flows do) */
	return !has(e, CF_QUEUE_DEPTH) || e->v[CF_QUEUE_DEPTH] > 0;
}

/* Paused for most of the interval while something waits (not stuck: it drained a little). */
static bool waiting(const struct cc_dl *d, const struct cc_snap *s, uint32_t pi, unsigned prio)
{
	const struct cc_port *p = &s->ports[pi];
	const struct cc_prio *e = cc_snap_prio(s, pi, prio);

	if (p->down || !(p->lossless & (1u << prio)) || !e || !paused_for(e, d->sh_cong))
		return false;
	return !has(e, CF_QUEUE_DEPTH) || e->v[CF_QUEUE_DEPTH] > 0;
}

static int cmp_node_prio(const void *a, const void *b)
{
	const struct vq *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return (x->port > y->port) - (x->port < y->port);
}

static int cmp_peer_prio(const void *a, const void *b, void *ctx)
{
	const struct vq *v = ctx, *x = &v[*(const uint32_t *)a], *y = &v[*(const uint32_t *)b];

	if (x->peer_node != y->peer_node)
		return x->peer_node < y->peer_node ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return (x->port > y->port) - (x->port < y->port);
}

/* The range [*lo, *hi) of r->v at (node, prio). */
static void range_at(const struct run *r, uint32_t node, uint8_t prio, uint32_t *lo, uint32_t *hi)
{
	uint32_t a = 0, b = r->nv;

	while (a < b) {
		uint32_t m = a + (b - a) / 2;

		if (r->v[m].node < node || (r->v[m].node == node && r->v[m].prio < prio))
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	b = r->nv;
	while (a < b) {
		uint32_t m = a + (b - a) / 2;

		if (r->v[m].node == node && r->v[m].prio == prio)
			a = m + 1;
		else
			b = m;
	}
	*hi = a;
}

/* The range of r->by_peer whose queues' peer node is node, at prio. */
static void pred_range(const struct run *r, uint32_t node, uint8_t prio, uint32_t *lo, uint32_t *hi)
{
	uint32_t a = 0, b = r->nv;

	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		const struct vq *q = &r->v[r->by_peer[m]];

		if (q->peer_node < node || (q->peer_node == node && q->prio < prio))
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	b = r->nv;
	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		const struct vq *q = &r->v[r->by_peer[m]];

		if (q->peer_node == node && q->prio == prio)
			a = m + 1;
		else
			b = m;
	}
	*hi = a;
}

/* Tarjan's strongly connected components, iteratively; comp[v] numbers them.  Vertices in
 * r->removed are skipped. */
static void tarjan(struct run *r)
{
	uint32_t idx = 0, sp = 0, csp = 0;

	r->ncomp = 0;
	for (uint32_t i = 0; i < r->nv; i++) {
		r->index[i] = UINT32_MAX;
		r->on_stack[i] = false;
		r->comp[i] = UINT32_MAX;
	}
	for (uint32_t root = 0; root < r->nv; root++) {
		if (r->index[root] != UINT32_MAX || (r->removed && r->removed[root]))
			continue;
		r->cstack[csp] = root;
		r->citer[csp++] = UINT32_MAX; /* not started */
		while (csp) {
			uint32_t u = r->cstack[csp - 1], lo, hi, it;
			bool descended = false;

			if (r->citer[csp - 1] == UINT32_MAX) {
				r->index[u] = r->low[u] = idx++;
				r->stack[sp++] = u;
				r->on_stack[u] = true;
			}
			range_at(r, r->v[u].peer_node, r->v[u].prio, &lo, &hi);
			if (r->v[u].peer_node == CC_NONE)
				lo = hi = 0;
			it = r->citer[csp - 1] == UINT32_MAX ? lo : r->citer[csp - 1];
			for (; it < hi; it++) {
				uint32_t w = it;

				if (r->removed && r->removed[w])
					continue;
				if (r->index[w] == UINT32_MAX) {
					r->citer[csp - 1] = it + 1;
					r->cstack[csp] = w;
					r->citer[csp++] = UINT32_MAX;
					descended = true;
					break;
				}
				if (r->on_stack[w] && r->index[w] < r->low[u])
					r->low[u] = r->index[w];
			}
			if (descended)
				continue;
			r->citer[csp - 1] = hi;
			if (r->low[u] == r->index[u]) {
				uint32_t w;

				do {
					w = r->stack[--sp];
					r->on_stack[w] = false;
					r->comp[w] = r->ncomp;
				} while (w != u);
				r->ncomp++;
			}
			csp--;
			if (csp) {
				uint32_t parent = r->cstack[csp - 1];

				if (r->low[u] < r->low[parent])
					r->low[parent] = r->low[u];
			}
		}
	}
}

static void queue_of(const struct cc_snap *s, uint32_t port, unsigned prio, struct cc_dl_queue *q)
{
	const struct cc_port *p = &s->ports[port];
	const struct cc_prio *e = cc_snap_prio(s, port, prio);

	memset(q, 0, sizeof(*q));
	snprintf(q->node, sizeof(q->node), "%s", s->nodes[p->node].name);
	snprintf(q->port, sizeof(q->port), "%s", p->name);
	if (e) {
		q->paused_us = e->v[CF_RX_PAUSE_US];
		q->tx_bytes = e->v[CF_TX_BYTES];
		q->depth_bytes = e->v[CF_QUEUE_DEPTH];
	}
}

static const char *label(const struct cc_snap *s, uint32_t port, char *buf, size_t len)
{
	return cc_snap_port_label(s, port, buf, len);
}

static int qkey(char *buf, size_t len, const char *node, const char *port, unsigned prio)
{
	return snprintf(buf, len, "%s\x1f%s\x1f%u", node, port, prio);
}

/* --- findings ---------------------------------------------------------------------------------- */

static struct cc_dl_finding *new_finding(struct cc_dl *d)
{
	struct cc_dl_result *r = &d->res;

	if (vec_room((void **)&r->findings, &d->capfindings, r->nfindings, sizeof(*r->findings)) < 0)
		return NULL;
	memset(&r->findings[r->nfindings], 0, sizeof(r->findings[0]));
	return &r->findings[r->nfindings++];
}

/* The finding is the tracked one, seen again in this interval. */
static void stamp(struct cc_dl *d, struct cc_dl_finding *f, struct track *t)
{
	t->seen = true;
	t->last_us = d->now_us;
	f->id = t->id;
	f->first_us = t->first_us;
	f->last_us = d->now_us;
}

/* Gives the finding its id and first-seen time by its key. */
static int track(struct cc_dl *d, struct cc_dl_finding *f, const char *key)
{
	struct track *t = hmap_get(&d->tracks, key);

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t || !(t->key = strdup(key))) {
			free(t);
			return -ENOMEM;
		}
		t->id = d->next_id++;
		t->first_us = d->now_us;
		if (hmap_put(&d->tracks, t->key, t, NULL) < 0) {
			free(t->key);
			free(t);
			return -ENOMEM;
		}
		f->fresh = true;
	}
	stamp(d, f, t);
	return 0;
}

static struct cc_dl_action *new_action(struct cc_dl *d)
{
	struct cc_dl_result *r = &d->res;

	if (vec_room((void **)&r->actions, &d->capactions, r->nactions, sizeof(*r->actions)) < 0)
		return NULL;
	memset(&r->actions[r->nactions], 0, sizeof(r->actions[0]));
	r->actions[r->nactions].id = d->next_action++;
	return &r->actions[r->nactions++];
}

static struct hold *find_hold_finding(const struct cc_dl *d, uint64_t finding)
{
	for (size_t i = 0; i < d->nholds; i++)
		if (d->holds[i].finding == finding)
			return &d->holds[i];
	return NULL;
}

bool cc_dl_held(const struct cc_dl *d, uint64_t finding)
{
	return find_hold_finding(d, finding) != NULL;
}

static struct hold *find_hold_queue(const struct cc_dl *d, const char *node, const char *port, unsigned prio)
{
	for (size_t i = 0; i < d->nholds; i++)
		if (d->holds[i].prio == prio && !strcmp(d->holds[i].node, node) && !strcmp(d->holds[i].port, port))
			return &d->holds[i];
	return NULL;
}

bool cc_dl_holds_queue(const struct cc_dl *d, const char *node, const char *port, unsigned prio)
{
	return find_hold_queue(d, node, port, prio) != NULL;
}

static const char *key_of(const struct cc_dl *d, uint64_t finding)
{
	const char *k;
	void *v;

	for (size_t i = 0; hmap_next(&d->tracks, &i, &k, &v);)
		if (((struct track *)v)->id == finding)
			return k;
	return NULL;
}

/* A duration for an operator: "300 us", "2 s", "1.5 s". */
static const char *dur(int64_t us, char *buf, size_t len)
{
	if (us < 1000)
		snprintf(buf, len, "%lld us", (long long)us);
	else if (us < 1000000)
		snprintf(buf, len, "%g ms", (double)us / 1e3);
	else
		snprintf(buf, len, "%g s", (double)us / 1e6);
	return buf;
}

/* Starts a mitigation: a hold (applying) and the action that makes the queue lossy. */
static int mitigate(struct cc_dl *d, const struct cc_dl_finding *f, struct cc_dl_action *ret)
{
	const char *fkey = key_of(d, f->id);
	char dbuf[32];
	struct hold *h;
	struct cc_dl_action *a;

	if (!f->suggested.node[0])
		return -EINVAL;
	if (find_hold_finding(d, f->id) || find_hold_queue(d, f->suggested.node, f->suggested.port, f->prio))
		return -EALREADY;
	if (vec_room((void **)&d->holds, &d->capholds, d->nholds, sizeof(*d->holds)) < 0)
		return -ENOMEM;
	h = &d->holds[d->nholds];
	memset(h, 0, sizeof(*h));
	h->fkey = fkey ? strdup(fkey) : NULL;
	if (fkey && !h->fkey)
		return -ENOMEM;
	a = ret ? ret : new_action(d);
	if (!a) {
		free(h->fkey);
		return -ENOMEM;
	}
	if (ret) {
		memset(a, 0, sizeof(*a));
		a->id = d->next_action++;
	}
	d->nholds++;
	h->cls = f->cls;
	h->state = H_APPLYING;
	h->state_since = d->now_us;
	h->finding = f->id;
	h->action = a->id;
	snprintf(h->node, sizeof(h->node), "%s", f->suggested.node);
	snprintf(h->port, sizeof(h->port), "%s", f->suggested.port);
	h->prio = f->prio;
	h->until_us = f->cls == CC_DL_PERSISTENT ? INT64_MAX : d->now_us + d->conf.restore_us;
	h->quiet_since = -1;
	if (f->cls == CC_DL_PAUSE_STORM && f->nports) {
		snprintf(h->cnode, sizeof(h->cnode), "%s", f->ports[0].node);
		snprintf(h->cport, sizeof(h->cport), "%s", f->ports[0].port);
	}
	a->finding = f->id;
	a->cls = f->cls;
	a->op = CC_DL_LOSSY;
	snprintf(a->node, sizeof(a->node), "%s", h->node);
	snprintf(a->port, sizeof(a->port), "%s", h->port);
	a->prio = h->prio;
	if (f->cls == CC_DL_PAUSE_STORM)
		snprintf(a->reason, sizeof(a->reason),
			 "pause_storm #%llu: %s pauses priority %u while taking nothing; %s:%s stops obeying its "
			 "pauses until it has not paused for %s",
			 (unsigned long long)f->id, f->culprit, f->prio, h->node, h->port,
			 dur(d->conf.restore_us, dbuf, sizeof(dbuf)));
	else if (f->cls == CC_DL_PERSISTENT)
		snprintf(a->reason, sizeof(a->reason),
			 "persistent deadlock #%llu on priority %u formed again after its break was restored: %s:%s "
			 "stays out of lossless mode until the routing is fixed",
			 (unsigned long long)f->id, f->prio, h->node, h->port);
	else
		snprintf(a->reason, sizeof(a->reason),
			 "deadlock #%llu: a cycle of %u paused queues on priority %u; breaking it at %s:%s for %s",
			 (unsigned long long)f->id, f->nports, f->prio, h->node, h->port,
			 dur(d->conf.restore_us, dbuf, sizeof(dbuf)));
	return 0;
}

static int restore(struct cc_dl *d, struct hold *h)
{
	struct cc_dl_action *a = new_action(d);
	char dbuf[32];

	if (!a)
		return -ENOMEM;
	a->finding = h->finding;
	a->cls = h->cls;
	a->op = CC_DL_RESTORE;
	snprintf(a->node, sizeof(a->node), "%s", h->node);
	snprintf(a->port, sizeof(a->port), "%s", h->port);
	a->prio = h->prio;
	if (h->cls == CC_DL_PAUSE_STORM)
		snprintf(a->reason, sizeof(a->reason),
			 "pause_storm #%llu over: %s:%s has not paused for %s%s; %s:%s priority %u lossless again",
			 (unsigned long long)h->finding, h->cnode, h->cport, dur(d->conf.restore_us, dbuf, sizeof(dbuf)),
			 h->blind      ? " (as last read: neither it nor the port it paused reads pauses now)"
			 : h->via_peer ? " (as the port it paused read it: no readings of its own)"
				       : "",
			 h->node, h->port, h->prio);
	else
		snprintf(a->reason, sizeof(a->reason),
			 "deadlock #%llu: break of %s over; %s:%s priority %u lossless again",
			 (unsigned long long)h->finding, dur(d->conf.restore_us, dbuf, sizeof(dbuf)), h->node, h->port,
			 h->prio);
	h->state = H_RESTORING;
	h->state_since = d->now_us;
	h->action = a->id;
	return 0;
}

/* A deadlock's break restored, now (no memory: then the next one there is not persistent). */
static void mark_restored(struct cc_dl *d, const struct hold *h)
{
	char k[2 * CC_DL_NAME + 16];
	struct restored *rs;

	qkey(k, sizeof(k), h->node, h->port, h->prio);
	if ((rs = hmap_get(&d->restored, k))) {
		rs->at_us = d->now_us;
	} else if ((rs = malloc(sizeof(*rs) + strlen(k) + 1))) {
		rs->at_us = d->now_us;
		strcpy(rs->key, k);
		if (hmap_put(&d->restored, rs->key, rs, NULL) < 0)
			free(rs);
	}
}

static void drop_hold(struct cc_dl *d, size_t i)
{
	free(d->holds[i].fkey);
	d->holds[i] = d->holds[--d->nholds];
}

void cc_dl_action_done(struct cc_dl *d, uint64_t action, bool ok)
{
	for (size_t i = 0; i < d->nholds; i++) {
		struct hold *h = &d->holds[i];

		if (h->action != action)
			continue;
		h->action = 0;
		if (h->state == H_APPLYING) {
			if (ok) {
				h->state = H_ACTIVE;
				h->state_since = d->now_us;
				/* the break lasts restore_us from when it is in force */
				if (h->until_us != INT64_MAX)
					h->until_us = d->now_us + d->conf.restore_us;
			} else {
				drop_hold(d, i);
			}
		} else if (h->state == H_RESTORING) {
			if (ok) {
				if (h->cls != CC_DL_PAUSE_STORM)
					mark_restored(d, h);
				drop_hold(d, i);
			} else {
				h->state = H_ACTIVE;
				h->state_since = d->now_us;
				h->restore_due = true; /* retried at the next interval */
			}
		}
		return;
	}
}

int cc_dl_mitigate(struct cc_dl *d, uint64_t finding, struct cc_dl_action *ret)
{
	for (size_t i = 0; i < d->res.nfindings; i++) {
		const struct cc_dl_finding *f = &d->res.findings[i];
		enum cc_dl_mode m;

		if (f->id != finding)
			continue;
		if (f->cls != CC_DL_DEADLOCK && f->cls != CC_DL_PERSISTENT && f->cls != CC_DL_PAUSE_STORM)
			return -EINVAL;
		m = f->cls == CC_DL_PAUSE_STORM ? d->conf.storm_mode : d->conf.deadlock_mode;
		if (m == CC_DL_OFF)
			return -EPERM;
		if (f->mitigated)
			return -EALREADY;
		return mitigate(d, f, ret);
	}
	return -ENOENT;
}

/* Labels compared without formatting them: node names, then port names. */
static int cmp_label(const struct cc_snap *s, uint32_t a, uint32_t b)
{
	int c = strcmp(s->nodes[s->ports[a].node].name, s->nodes[s->ports[b].node].name);

	return c ? c : strcmp(s->ports[a].name, s->ports[b].name);
}

/* The cycle order of a component: from its first queue by label, follow an unvisited
 * successor in the component (the first by label) while there is one; then the rest.  A
 * step looks at the stuck queues of one node only: O(members x node degree). */
static int cycle_order(struct run *r, const uint32_t *members, uint32_t n, uint32_t *out)
{
	const struct cc_snap *s = r->s;
	uint8_t *mark = calloc(r->nv, sizeof(*mark)); /* 1: in the component, 2: used */
	uint32_t k = 0, cur = members[0];

	if (!mark)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		mark[members[i]] = 1;
		if (cmp_label(s, r->v[members[i]].port, r->v[cur].port) < 0)
			cur = members[i];
	}
	for (;;) {
		uint32_t lo, hi, best = UINT32_MAX;

		mark[cur] = 2;
		out[k++] = cur;
		if (r->v[cur].peer_node == CC_NONE)
			break;
		range_at(r, r->v[cur].peer_node, r->v[cur].prio, &lo, &hi);
		for (uint32_t w = lo; w < hi; w++)
			if (mark[w] == 1 && (best == UINT32_MAX || cmp_label(s, r->v[w].port, r->v[best].port) < 0))
				best = w;
		if (best == UINT32_MAX)
			break;
		cur = best;
	}
	for (uint32_t i = 0; i < n; i++)
		if (mark[members[i]] == 1)
			out[k++] = members[i];
	free(mark);
	return 0;
}

/* The member whose release frees most of the component (fewest members left on a cycle),
 * then the shallowest queue (least dropped), then the first by label. */
static uint32_t break_choice(struct run *r, const uint32_t *members, uint32_t n)
{
	bool *removed = n <= 256 ? calloc(r->nv, sizeof(*removed)) : NULL;
	uint32_t best = 0, best_left = UINT32_MAX;
	char a[2 * CC_DL_NAME], b[2 * CC_DL_NAME];
	uint32_t *comp_save = NULL, ncomp_save = r->ncomp;

	if (removed) {
		comp_save = malloc(r->nv * sizeof(*comp_save));
		if (!comp_save) {
			free(removed);
			removed = NULL;
		} else {
			memcpy(comp_save, r->comp, r->nv * sizeof(*comp_save));
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t left = 0;

		if (removed) {
			/* only the component's vertices take part */
			for (uint32_t v = 0; v < r->nv; v++)
				removed[v] = true;
			for (uint32_t j = 0; j < n; j++)
				removed[members[j]] = j == i;
			r->removed = removed;
			tarjan(r);
			r->removed = NULL;
			for (uint32_t j = 0; j < n; j++) {
				uint32_t c = r->comp[members[j]], size = 0;

				if (j == i)
					continue;
				for (uint32_t k = 0; k < n; k++)
					size += k != i && r->comp[members[k]] == c;
				left += size > 1;
			}
		}
		if (left < best_left ||
		    (left == best_left &&
		     (r->v[members[i]].depth < r->v[members[best]].depth ||
		      (r->v[members[i]].depth == r->v[members[best]].depth &&
		       strcmp(label(r->s, r->v[members[i]].port, a, sizeof(a)),
			      label(r->s, r->v[members[best]].port, b, sizeof(b))) < 0)))) {
			best = i;
			best_left = left;
		}
	}
	if (comp_save) {
		memcpy(r->comp, comp_save, r->nv * sizeof(*comp_save));
		r->ncomp = ncomp_save;
	}
	free(comp_save);
	free(removed);
	return members[best];
}

static int cmp_port_label(const void *a, const void *b, void *ctx)
{
	return cmp_label(ctx, *(const uint32_t *)a, *(const uint32_t *)b);
}

static int add_deadlocks(struct run *r, bool *in_cycle)
{
	struct cc_dl *d = r->d;
	const struct cc_snap *s = r->s;
	uint32_t *members = malloc((r->nv ? r->nv : 1) * sizeof(*members));
	uint32_t *order = malloc((r->nv ? r->nv : 1) * sizeof(*order));
	uint32_t *count = calloc(r->ncomp ? r->ncomp : 1, sizeof(*count));
	/* the vertices grouped by component (a counting sort): members of c from first[c] */
	uint32_t *first = calloc((size_t)r->ncomp + 1, sizeof(*first));
	uint32_t *byc = malloc((r->nv ? r->nv : 1) * sizeof(*byc));
	int ret = -ENOMEM;

	if (!members || !order || !count || !first || !byc)
		goto out;
	for (uint32_t v = 0; v < r->nv; v++)
		if (r->comp[v] != UINT32_MAX)
			count[r->comp[v]]++;
	for (uint32_t c = 0; c < r->ncomp; c++)
		first[c + 1] = first[c] + count[c];
	{
		uint32_t *fill = calloc((size_t)r->ncomp + 1, sizeof(*fill));

		if (!fill)
			goto out;
		for (uint32_t v = 0; v < r->nv; v++)
			if (r->comp[v] != UINT32_MAX)
				byc[first[r->comp[v]] + fill[r->comp[v]]++] = v;
		free(fill);
	}
	for (uint32_t c = 0; c < r->ncomp; c++) {
		struct cc_dl_finding *f;
		uint32_t n = 0, brk;
		char key[64], lab[2 * CC_DL_NAME];
		char *fullkey;
		size_t klen, kcap;
		bool persistent = false;

		if (count[c] < 2)
			continue;
		if (d->res.nfindings >= CC_DL_MAX_FINDINGS)
			break; /* a fabric in that state has bigger problems than a list can show */
		for (uint32_t i = first[c]; i < first[c + 1]; i++) {
			members[n++] = byc[i];
			in_cycle[byc[i]] = true;
		}
		if (cycle_order(r, members, n, order) < 0)
			goto out;
		f = new_finding(d);
		if (!f)
			goto out;
		f->prio = r->v[members[0]].prio;
		f->ports = calloc(n, sizeof(*f->ports));
		if (!f->ports)
			goto out;
		f->nports = n;
		for (uint32_t i = 0; i < n; i++) {
			queue_of(s, r->v[order[i]].port, f->prio, &f->ports[i]);
			if (!persistent) {
				char k[2 * CC_DL_NAME + 16];

				qkey(k, sizeof(k), f->ports[i].node, f->ports[i].port, f->prio);
				persistent = hmap_get(&d->restored, k) != NULL; /* (those too old are gone) */
			}
		}
		f->cls = persistent ? CC_DL_PERSISTENT : CC_DL_DEADLOCK;
		/* the key: class, priority and the sorted labels */
		kcap = 64 + (size_t)n * (2 * CC_DL_NAME + 2);
		fullkey = malloc(kcap);
		if (!fullkey)
			goto out;
		snprintf(key, sizeof(key), "deadlock/%u/", f->prio); /* persistent keeps the id */
		klen = (size_t)snprintf(fullkey, kcap, "%s", key);
		{
			/* the key lists the ports in label order */
			uint32_t *ports = malloc(n * sizeof(*ports));

			if (!ports) {
				free(fullkey);
				goto out;
			}
			for (uint32_t i = 0; i < n; i++)
				ports[i] = r->v[members[i]].port;
			qsort_r(ports, n, sizeof(*ports), cmp_port_label, (void *)s);
			for (uint32_t i = 0; i < n && klen < kcap; i++)
				klen += (size_t)snprintf(fullkey + klen, kcap - klen, "%s,",
							 label(s, ports[i], lab, sizeof(lab)));
			free(ports);
		}
		ret = track(d, f, fullkey);
		free(fullkey);
		if (ret < 0)
			goto out;
		ret = -ENOMEM;
		brk = break_choice(r, members, n);
		queue_of(s, r->v[brk].port, f->prio, &f->suggested);
		{
			size_t o = (size_t)snprintf(f->summary, sizeof(f->summary), "%s on priority %u: ",
						    f->cls == CC_DL_PERSISTENT ? "persistent deadlock (fix routing)"
									       : "deadlock",
						    f->prio);

			for (uint32_t i = 0; i < n && o < sizeof(f->summary); i++)
				o += (size_t)snprintf(f->summary + o, sizeof(f->summary) - o, "%s%s:%s",
						      i ? " -> " : "", f->ports[i].node, f->ports[i].port);
		}
	}
	ret = 0;
out:
	free(first);
	free(byc);
	free(members);
	free(order);
	free(count);
	return ret;
}

/* Stuck queues that wait on vertex start (itself included), nearest first; returns how many. */
static uint32_t victims_of(struct run *r, uint32_t start, uint32_t *out)
{
	bool *seen = calloc(r->nv, sizeof(*seen));
	uint32_t head = 0, tail = 0;

	if (!seen)
		return 0;
	out[tail++] = start;
	seen[start] = true;
	while (head < tail) {
		uint32_t u = out[head++], lo, hi;

		pred_range(r, r->v[u].node, r->v[u].prio, &lo, &hi);
		for (uint32_t k = lo; k < hi; k++) {
			uint32_t w = r->by_peer[k];

			if (!seen[w]) {
				seen[w] = true;
				out[tail++] = w;
			}
		}
	}
	free(seen);
	return tail;
}

static uint32_t find_vertex(const struct run *r, uint32_t port, uint8_t prio)
{
	uint32_t lo, hi;

	range_at(r, r->s->ports[port].node, prio, &lo, &hi);
	for (uint32_t k = lo; k < hi; k++)
		if (r->v[k].port == port)
			return k;
	return UINT32_MAX;
}

/* A finding of one queue, the port's on the priority, its node the culprit; tracked by class,
 * priority and queue.  NULL when out of memory. */
static struct cc_dl_finding *one_port_finding(struct run *r, enum cc_dl_class cls, uint32_t port,
					      unsigned prio)
{
	const struct cc_snap *s = r->s;
	struct cc_dl_finding *f = new_finding(r->d);
	char key[3 * CC_DL_NAME], lab[2 * CC_DL_NAME];

	if (!f)
		return NULL;
	f->cls = cls;
	f->prio = (uint8_t)prio;
	f->ports = calloc(1, sizeof(*f->ports));
	if (!f->ports)
		return NULL;
	f->nports = 1;
	queue_of(s, port, prio, &f->ports[0]);
	if (s->ports[port].peer != CC_NONE)
		queue_of(s, s->ports[port].peer, prio, &f->paused);
	snprintf(f->culprit, sizeof(f->culprit), "%s", s->nodes[s->ports[port].node].name);
	snprintf(key, sizeof(key), "%s/%u/%s", cc_dl_class_name(cls), prio, label(s, port, lab, sizeof(lab)));
	return track(r->d, f, key) < 0 ? NULL : f;
}

static int add_storm(struct run *r, uint32_t culprit, unsigned prio, bool held, uint32_t *buf)
{
	struct cc_dl *d = r->d;
	const struct cc_snap *s = r->s;
	const struct cc_port *c = &s->ports[culprit];
	struct cc_dl_finding *f = one_port_finding(r, CC_DL_PAUSE_STORM, culprit, prio);
	char lab[2 * CC_DL_NAME];
	uint32_t start, nvict = 0;

	if (!f)
		return -ENOMEM;
	if (c->peer != CC_NONE) {
		f->suggested = f->paused; /* (the port it pauses: isolated, it ignores the pauses) */
		start = find_vertex(r, c->peer, (uint8_t)prio);
		if (start != UINT32_MAX)
			nvict = victims_of(r, start, buf);
	}
	f->victims_total = nvict;
	f->nvictims = nvict < d->conf.max_listed ? nvict : d->conf.max_listed;
	if (f->nvictims) {
		f->victims = calloc(f->nvictims, sizeof(*f->victims));
		if (!f->victims)
			return -ENOMEM;
		for (uint32_t i = 0; i < f->nvictims; i++)
			queue_of(s, r->v[buf[i]].port, prio, &f->victims[i]);
	}
	for (uint32_t i = 0; i < nvict; i++)
		r->v[buf[i]].victim = true;
	f->silent = c->silent;
	snprintf(f->summary, sizeof(f->summary),
		 "pause storm from %s on priority %u%s: it pauses %s while taking nothing%s; "
		 "%u queue%s paused behind it",
		 f->culprit, prio, held ? " (isolated)" : "",
		 c->peer != CC_NONE ? label(s, c->peer, lab, sizeof(lab)) : "its peer",
		 c->silent ? " (read from that port: no readings of its own)" : "", nvict, nvict == 1 ? "" : "s");
	return 0;
}

/* The storms the detector holds isolated (or is isolating) that nothing read says are over,
 * as they were last read on (update_holds): the source has no readings (its agent is gone), and
 * neither has the port it paused (its switch's agent is gone too) or that port does not count
 * pause frames.  The port stays isolated, so the finding stays, as it was last read (its last_us
 * does not move); before, its alert cleared while the port stayed out of lossless mode. */
static int add_unread_storms(struct run *r, bool *culprit_node)
{
	struct cc_dl *d = r->d;

	for (size_t i = 0; i < d->nholds; i++) {
		const struct hold *h = &d->holds[i];
		struct cc_dl_finding *f;
		struct track *t;
		bool gone = cc_snap_find_port(r->s, h->node, h->port) < 0;
		int64_t last;
		int cn;

		/* (only one that goes on: a storm over, or restored, is not raised again) */
		if (h->cls != CC_DL_PAUSE_STORM || !hold_unread(h) || !h->fkey || !(t = hmap_get(&d->tracks, h->fkey)) ||
		    d->res.nfindings >= CC_DL_MAX_FINDINGS)
			continue;
		/* (a culprit: no slow receiver of it besides, read from the port it isolated, which
		 * sends again while the host pauses it) */
		if ((cn = cc_snap_find_node(r->s, h->cnode)) >= 0)
			culprit_node[cn] = true;
		if (!(f = new_finding(d)) || !(f->ports = calloc(1, sizeof(*f->ports))))
			return -ENOMEM;
		f->cls = CC_DL_PAUSE_STORM;
		f->prio = h->prio;
		f->nports = 1;
		snprintf(f->ports[0].node, sizeof(f->ports[0].node), "%s", h->cnode);
		snprintf(f->ports[0].port, sizeof(f->ports[0].port), "%s", h->cport);
		snprintf(f->paused.node, sizeof(f->paused.node), "%s", h->node);
		snprintf(f->paused.port, sizeof(f->paused.port), "%s", h->port);
		f->suggested = f->paused;
		snprintf(f->culprit, sizeof(f->culprit), "%s", h->cnode);
		f->silent = f->unread = true;
		last = t->last_us; /* as it was last read */
		stamp(d, f, t);
		f->last_us = t->last_us = last;
		/* (device and port names are 64 characters at most) */
		snprintf(f->summary, sizeof(f->summary),
			 "pause storm from %.64s on priority %u (%s): no readings from it%s%.64s:%.64s, the port it "
			 "paused%s; kept isolated until they report or an operator puts it back",
			 h->cnode, h->prio, h->state == H_ACTIVE ? "isolated" : "being isolated",
			 gone ? " or from " : ", and ", h->node, h->port, gone ? "" : ", does not count pause frames");
	}
	return 0;
}

/* The port whose readings tell of host port p as a receiver: its own, or when it has none (its
 * agent silent) the switch port it faces, which counts the pause it receives and the bytes it
 * sends to p (PFC is hop by hop: only p's NIC pauses it).  CC_NONE: none, or p keeps no
 * priority lossless (the link the topology gives is then in doubt). */
static uint32_t reading_port(const struct cc_snap *s, uint32_t p)
{
	const struct cc_port *cp = &s->ports[p];

	if (!cp->silent)
		return p;
	if (cp->peer == CC_NONE || !cp->lossless || s->ports[cp->peer].down || s->ports[cp->peer].silent)
		return CC_NONE;
	return cp->peer;
}

/* Host port p as a slow receiver on prio this interval: pausing its switch port for the share
 * while it takes traffic, as its own readings or (silent) its switch port's say; the pause and
 * the bytes taken in *paused_us and *rx_bytes.  The port read (reading_port), or CC_NONE: not
 * one. */
static uint32_t slow_reading(const struct run *r, uint32_t p, unsigned prio, uint64_t *paused_us,
			     uint64_t *rx_bytes)
{
	const struct cc_snap *s = r->s;
	uint32_t rp = reading_port(s, p);
	const struct cc_prio *e = rp != CC_NONE ? cc_snap_prio(s, rp, prio) : NULL;

	if (!e)
		return CC_NONE;
	if (rp == p) {
		if (!pausing_for(e, r->d->sh_slow) || took_nothing(s, p, prio) || !has(e, CF_TX_PAUSE_US) ||
		    !has(e, CF_RX_BYTES))
			return CC_NONE;
		*paused_us = e->v[CF_TX_PAUSE_US];
		*rx_bytes = e->v[CF_RX_BYTES];
		return rp;
	}
	/* (both ends lossless: a switch port isolated from the host, lossy, sends whatever the
	 * host pauses, which is a storm's, not a slow receiver's) */
	if (!(s->ports[p].lossless & s->ports[rp].lossless & (1u << prio)) || !has(e, CF_RX_PAUSE_US) ||
	    !has(e, CF_TX_BYTES) || e->v[CF_RX_PAUSE_US] < r->d->sh_slow.us || !e->v[CF_TX_BYTES])
		return CC_NONE;
	*paused_us = e->v[CF_RX_PAUSE_US];
	*rx_bytes = e->v[CF_TX_BYTES];
	return rp;
}

/* The finding of c, as its last interval as one said; when that was before this one (held),
 * with how many intervals ago. */
static int add_slow_receiver(struct run *r, uint32_t port, const struct slowc *c)
{
	struct cc_dl_finding *f = one_port_finding(r, CC_DL_SLOW_RECEIVER, port, c->prio);
	int n;

	if (!f)
		return -ENOMEM;
	f->silent = c->silent;
	n = snprintf(f->summary, sizeof(f->summary),
		     "slow receiver %s on priority %u: paused its switch port %llu of %lld us while taking %llu "
		     "bytes%s",
		     f->culprit, c->prio, (unsigned long long)c->paused_us, (long long)c->interval_us,
		     (unsigned long long)c->rx_bytes,
		     c->silent ? " (read from that port: no readings of its own)" : "");
	/* what the summary says it paused (held between slow intervals: this one's would read 0) */
	f->paused.paused_us = c->paused_us;
	if (c->quiet) {
		f->last_us = c->last_us;
		if (n > 0 && (size_t)n < sizeof(f->summary))
			snprintf(f->summary + n, sizeof(f->summary) - (size_t)n,
				 ", %u interval%s ago (raised until it has not been one for %u in a row)", c->quiet,
				 c->quiet == 1 ? "" : "s", r->d->conf.slow_hold);
	}
	return 0;
}

/* The slow receivers found before and not in this interval: kept until slow_hold intervals in
 * a row without it, counted by their port's readings (cleared at once when the host is a pause
 * source now, or its port went down or away). */
static int hold_slow_receivers(struct run *r, const bool *culprit_node)
{
	struct cc_dl *d = r->d;
	const struct cc_snap *s = r->s;
	const char *k;
	void *v;

	for (size_t i = 0; hmap_next(&d->slow, &i, &k, &v);) {
		struct slowc *c = v;
		uint32_t rp;
		int p;

		if (!c->raised || c->run == d->runs || d->res.nfindings >= CC_DL_MAX_FINDINGS)
			continue;
		p = cc_snap_find_port(s, c->node, c->port);
		if (p < 0 || s->ports[p].down || culprit_node[s->ports[p].node] ||
		    (rp = reading_port(s, (uint32_t)p)) == CC_NONE || !cc_snap_prio(s, rp, c->prio))
			continue;
		/* another interval without it: new readings, or (readings not known) another run;
		 * readings of the other port (the host's agent gone or back) are on another agent's
		 * clock, not compared: counted from the next */
		if ((rp != (uint32_t)p) != c->quiet_silent) {
			c->quiet_silent = rp != (uint32_t)p;
			c->quiet_read_to_us = s->ports[rp].read_to_us;
		} else if (!s->ports[rp].read_to_us || s->ports[rp].read_to_us != c->quiet_read_to_us) {
			c->quiet++;
			c->quiet_read_to_us = s->ports[rp].read_to_us;
		}
		if (c->quiet >= d->conf.slow_hold)
			continue;
		c->run = d->runs; /* (kept by the sweep) */
		if (add_slow_receiver(r, (uint32_t)p, c) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int cmp_paused_desc(const void *a, const void *b)
{
	const struct cc_dl_queue *x = a, *y = b;

	return (x->paused_us < y->paused_us) - (x->paused_us > y->paused_us);
}

static int add_congestion(struct run *r)
{
	struct cc_dl *d = r->d;
	const struct cc_snap *s = r->s;

	for (unsigned pr = 0; pr < CC_NPRIO; pr++) {
		struct cc_dl_queue *q = NULL;
		uint32_t n = 0;
		size_t cap = 0;
		struct cc_dl_finding *f;
		char key[32];

		if (!(s->prios & (1u << pr)))
			continue;
		for (uint32_t p = 0; p < s->nports; p++) {
			const struct cc_prio *e = cc_snap_prio(s, p, pr);

			uint32_t vx;

			if (!(s->ports[p].lossless & (1u << pr)) || !paused_for(e, d->sh_cong) ||
			    sent_nothing(e))
				continue;
			vx = find_vertex(r, p, (uint8_t)pr);
			if (vx != UINT32_MAX && r->v[vx].victim)
				continue; /* listed as a storm's victim */
			if (vec_room((void **)&q, &cap, n, sizeof(*q)) < 0) {
				free(q);
				return -ENOMEM;
			}
			queue_of(s, p, pr, &q[n++]);
		}
		if (!n)
			continue;
		qsort(q, n, sizeof(*q), cmp_paused_desc);
		f = new_finding(d);
		if (!f) {
			free(q);
			return -ENOMEM;
		}
		f->cls = CC_DL_CONGESTION;
		f->prio = (uint8_t)pr;
		f->ports = q;
		f->nports = n < d->conf.max_listed ? n : d->conf.max_listed;
		f->victims_total = n;
		snprintf(key, sizeof(key), "congestion/%u", pr);
		if (track(d, f, key) < 0)
			return -ENOMEM;
		snprintf(f->summary, sizeof(f->summary),
			 "congestion on priority %u: %u queue%s paused most of the interval but draining (%s:%s the most)",
			 pr, n, n == 1 ? "" : "s", q[0].node, q[0].port);
	}
	return 0;
}

/* Any egress queue of the node on the priority holds bytes (a downstream cause). */
static bool node_backlogged(const struct cc_snap *s, uint32_t node, unsigned prio)
{
	const struct cc_node *n = &s->nodes[node];

	for (uint32_t i = 0; i < n->nports; i++) {
		const struct cc_prio *e = cc_snap_prio(s, n->ports[i], prio);

		if (has(e, CF_QUEUE_DEPTH) ? e->v[CF_QUEUE_DEPTH] > 0 : !has(e, CF_TX_BYTES))
			return true;
	}
	return false;
}

/* A silent host port (no readings of its own: a hung host's agent often sends none) is a pause
 * source when the switch port it faces says so: stuck (paused for stuck_share of the interval,
 * sending nothing, holding frames when it reports its queue) and still paused at the end when
 * it says.  Only the host's NIC pauses that port (PFC is hop by hop), and with nothing going to
 * it the host takes nothing.  Not when the switch port pauses the host too (the host may pause
 * because its own sending waits: a victim), nor on a priority the host does not keep lossless
 * (then the link the topology gives is in doubt). */
static bool is_silent_storm_culprit(const struct run *r, uint32_t p, unsigned prio)
{
	const struct cc_snap *s = r->s;
	uint32_t q = s->ports[p].peer;
	const struct cc_prio *e;

	if (q == CC_NONE || s->ports[p].down || s->nodes[s->ports[p].node].kind != CC_HOST ||
	    !(s->ports[p].lossless & (1u << prio)) || !stuck(r->d, s, q, prio) || pausing_any(s, q, prio))
		return false;
	e = cc_snap_prio(s, q, prio);
	return !has(e, CF_PAUSED) || e->v[CF_PAUSED];
}

/* The switch port facing a storm's culprit whose own readings are missing still counts the
 * pauses it receives (frames, pause time, its paused state).  Once isolated (lossy: it no
 * longer obeys them, so it is never paused) only its frame count tells. */
static bool reads_peer_pauses(const struct cc_prio *e, bool lossy)
{
	return lossy ? has(e, CF_RX_PAUSE_FRAMES) : cc_prio_reads_paused(e);
}

/* Whether that port was paused; when it reads none of it, assume it was: a switch that does not
 * count pause frames holds the isolation until the culprit's own readings come back or an
 * operator puts the port back (a review: it was put back while the host still paused, then
 * isolated again). */
static bool paused_by_peer(const struct cc_prio *e, bool lossy)
{
	if (!reads_peer_pauses(e, lossy))
		return true;
	return lossy ? e->v[CF_RX_PAUSE_FRAMES] > 0 : cc_prio_paused(e);
}

/* A pause source with no downstream cause: pausing its peer the whole interval and still at
 * its end, taking nothing; a NIC (whose receive side waits on nothing in the fabric), or a
 * switch port whose node has nothing queued on the priority. */
static bool is_storm_culprit(const struct run *r, uint32_t p, unsigned prio, const bool *node_has_stuck)
{
	const struct cc_snap *s = r->s;
	const struct cc_prio *e = cc_snap_prio(s, p, prio);
	uint32_t node = s->ports[p].node;

	if (s->ports[p].silent)
		return is_silent_storm_culprit(r, p, prio);
	if (!e || s->ports[p].down || !pausing_for(e, r->d->sh_stuck))
		return false;
	if (has(e, CF_PAUSING) && !e->v[CF_PAUSING])
		return false; /* it stopped by the end of the interval */
	if (node_has_stuck[(size_t)node * CC_NPRIO + prio])
		return false; /* a switch pausing because its own queues are stuck: a victim */
	if (s->nodes[node].kind == CC_SWITCH && node_backlogged(s, node, prio))
		return false; /* congestion behind it */
	return took_nothing(s, p, prio);
}

/* Holds: storms held while their culprit pauses; restorations that are due. */
static int update_holds(struct run *r, bool *held_culprit)
{
	struct cc_dl *d = r->d;
	const struct cc_snap *s = r->s;

	for (size_t i = 0; i < d->nholds; i++) {
		struct hold *h = &d->holds[i];
		int hp = cc_snap_find_port(s, h->node, h->port);

		/* an action whose outcome never came (a lost change): assume the likely end and go on;
		 * restoring a port that is lossless already changes nothing */
		if ((h->state == H_APPLYING || h->state == H_RESTORING) && s->t_us - h->state_since > d->conf.action_timeout_us) {
			if (h->state == H_APPLYING && h->until_us != INT64_MAX)
				h->until_us = s->t_us + d->conf.restore_us;
			if (h->state == H_RESTORING)
				h->restore_due = true;
			h->state = H_ACTIVE;
			h->state_since = s->t_us;
			h->action = 0;
		}
		/* someone put the port back into lossless mode (an operator, after fixing the
		 * routing): the hold is theirs now */
		if (h->state == H_ACTIVE && hp >= 0) {
			bool lossy = !(s->ports[hp].lossless & (1u << h->prio));

			if (lossy) {
				h->seen_lossy = true;
			} else if (h->seen_lossy) {
				char k[2 * CC_DL_NAME + 16];

				/* (a loop that forms there again is a new deadlock: broken, not held) */
				qkey(k, sizeof(k), h->node, h->port, h->prio);
				free(hmap_del(&d->restored, k));
				drop_hold(d, i--);
				continue;
			}
		}
		if (h->cls == CC_DL_PAUSE_STORM) {
			int c = cc_snap_find_port(s, h->cnode, h->cport);
			bool pausing;

			/* the culprit's own counters gone (a hung host's agent often is): its switch
			 * port still counts the pauses it receives; when it reads none either (or is
			 * gone too), nothing read says the storm is over (add_unread_storms) */
			h->blind = false;
			h->via_peer = !(c >= 0 && !s->ports[c].silent);
			if (!h->via_peer) {
				pausing = pausing_any(s, (uint32_t)c, h->prio);
			} else {
				const struct cc_prio *e = hp >= 0 ? cc_snap_prio(s, (uint32_t)hp, h->prio) : NULL;
				bool lossy = hp >= 0 && !(s->ports[hp].lossless & (1u << h->prio));

				pausing = paused_by_peer(e, lossy);
				/* nothing read either way: as last read (on, or over and counting down) */
				if ((h->blind = !reads_peer_pauses(e, lossy)))
					pausing = h->quiet_since < 0;
			}
			/* the storm goes on while the culprit pauses, whether or not the isolation
			 * is in force yet (it takes traffic once it is: no longer "taking nothing") */
			if (pausing && c >= 0 && !hold_unread(h))
				held_culprit[(size_t)c * CC_NPRIO + h->prio] = true;
			if (h->state != H_ACTIVE)
				continue;
			if (pausing) { /* (a failed restore's retry too: it pauses again) */
				h->quiet_since = -1;
				h->restore_due = false;
			} else if (h->quiet_since < 0) {
				h->quiet_since = s->t_us - s->interval_us;
			}
			if (h->quiet_since >= 0 && s->t_us - h->quiet_since >= d->conf.restore_us)
				h->restore_due = true;
		} else if (h->state == H_ACTIVE && h->until_us != INT64_MAX && s->t_us >= h->until_us) {
			h->restore_due = true;
		}
		if (h->restore_due) {
			h->restore_due = false;
			if (restore(d, h) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* A tracked finding not seen in this run is over: its id goes to the cleared list (which the
 * caller made room for). */
static bool clear_track(const char *key, void *val, void *ctx)
{
	struct cc_dl_result *res = ctx;
	struct track *t = val;

	(void)key;
	if (t->seen)
		return false;
	res->cleared[res->ncleared++] = t->id;
	free(t->key);
	free(t);
	return true;
}

static bool forget_slow(const char *key, void *val, void *ctx)
{
	struct slowc *c = val;

	(void)key;
	if (c->run == *(const uintptr_t *)ctx)
		return false;
	free(c);
	return true;
}

static bool restored_old(const char *key, void *val, void *ctx)
{
	const struct cc_dl *d = ctx;
	struct restored *rs = val;

	(void)key;
	if (d->now_us - rs->at_us <= PERSIST_RESTORES * d->conf.restore_us)
		return false;
	free(rs);
	return true;
}

int cc_dl_run(struct cc_dl *d, const struct cc_snap *s, const struct cc_dl_result **ret)
{
	struct run r = { .d = d, .s = s };
	bool *node_has_stuck = NULL, *in_cycle = NULL, *not_stuck = NULL, *held_culprit = NULL, *culprit_node = NULL;
	uint32_t *buf = NULL;
	size_t cap = 0;
	const char *k;
	void *v;
	int rc = -ENOMEM;

	result_clear(&d->res);
	d->runs++;
	d->now_us = s->t_us;
	d->sh_stuck = share_of(s, d->conf.stuck_share);
	d->sh_cong = share_of(s, d->conf.congestion_share);
	d->sh_slow = share_of(s, d->conf.slow_share);
	d->res.t_us = s->t_us;
	for (size_t i = 0; hmap_next(&d->tracks, &i, &k, &v);)
		((struct track *)v)->seen = false;
	hmap_sweep(&d->restored, restored_old, d);

	/* the stuck queues */
	for (uint32_t p = 0; p < s->nports; p++)
		for (unsigned pr = 0; pr < CC_NPRIO; pr++) {
			uint32_t peer;

			bool is_stuck;

			if (!(s->prios & (1u << pr)))
				continue;
			is_stuck = stuck(d, s, p, pr);
			if (!is_stuck && !waiting(d, s, p, pr))
				continue;
			if (vec_room((void **)&r.v, &cap, r.nv, sizeof(*r.v)) < 0)
				goto out;
			peer = s->ports[p].peer;
			r.v[r.nv++] = (struct vq){
				.port = p,
				.node = s->ports[p].node,
				.peer_node = peer != CC_NONE && s->nodes[s->ports[peer].node].kind == CC_SWITCH
						     ? s->ports[peer].node
						     : CC_NONE,
				.prio = (uint8_t)pr,
				.stuck = is_stuck,
				.depth = cc_snap_prio(s, p, pr)->v[CF_QUEUE_DEPTH],
			};
		}
	for (uint32_t i = 0; i < r.nv; i++)
		d->res.stuck_queues += r.v[i].stuck;
	if (r.nv)
		qsort(r.v, r.nv, sizeof(*r.v), cmp_node_prio);
	{
		size_t n = r.nv ? r.nv : 1;

		r.by_peer = malloc(n * sizeof(*r.by_peer));
		r.index = malloc(n * sizeof(*r.index));
		r.low = malloc(n * sizeof(*r.low));
		r.stack = malloc(n * sizeof(*r.stack));
		r.comp = malloc(n * sizeof(*r.comp));
		r.cstack = malloc(n * sizeof(*r.cstack));
		r.citer = malloc(n * sizeof(*r.citer));
		r.on_stack = malloc(n * sizeof(*r.on_stack));
		buf = malloc(n * sizeof(*buf));
		in_cycle = calloc(n, sizeof(*in_cycle));
		not_stuck = calloc(n, sizeof(*not_stuck));
	}
	node_has_stuck = calloc((size_t)(s->nnodes ? s->nnodes : 1) * CC_NPRIO, sizeof(*node_has_stuck));
	held_culprit = calloc((size_t)(s->nports ? s->nports : 1) * CC_NPRIO, sizeof(*held_culprit));
	culprit_node = calloc(s->nnodes ? s->nnodes : 1, sizeof(*culprit_node));
	if (!r.by_peer || !r.index || !r.low || !r.stack || !r.comp || !r.cstack || !r.citer || !r.on_stack ||
	    !buf || !in_cycle || !not_stuck || !node_has_stuck || !held_culprit || !culprit_node)
		goto out;
	for (uint32_t i = 0; i < r.nv; i++) {
		r.by_peer[i] = i;
		if (r.v[i].stuck)
			node_has_stuck[(size_t)r.v[i].node * CC_NPRIO + r.v[i].prio] = true;
		not_stuck[i] = !r.v[i].stuck;
	}
	if (r.nv)
		qsort_r(r.by_peer, r.nv, sizeof(*r.by_peer), cmp_peer_prio, r.v);

	if (update_holds(&r, held_culprit) < 0)
		goto out;

	r.removed = not_stuck; /* cycles of stuck queues only */
	tarjan(&r);
	r.removed = NULL;
	if (add_deadlocks(&r, in_cycle) < 0)
		goto out;

	/* storms: pause sources with no downstream cause (and those we isolate, while they pause) */
	for (uint32_t p = 0; p < s->nports; p++)
		for (unsigned pr = 0; pr < CC_NPRIO; pr++) {
			bool held;

			if (!(s->prios & (1u << pr)))
				continue;
			held = held_culprit[(size_t)p * CC_NPRIO + pr];
			if (!held && !is_storm_culprit(&r, p, pr, node_has_stuck))
				continue;
			if (d->res.nfindings >= CC_DL_MAX_FINDINGS)
				break;
			if (add_storm(&r, p, pr, held, buf) < 0)
				goto out;
			culprit_node[s->ports[p].node] = true;
		}
	if (add_unread_storms(&r, culprit_node) < 0)
		goto out;

	/* slow receivers: hosts pausing a good share while they take traffic */
	for (uint32_t p = 0; p < s->nports; p++) {
		if (s->nodes[s->ports[p].node].kind != CC_HOST || culprit_node[s->ports[p].node])
			continue;
		for (unsigned pr = 0; pr < CC_NPRIO; pr++) {
			const struct cc_port *cp;
			char key[3 * CC_DL_NAME], lab[2 * CC_DL_NAME];
			uint64_t paused_us, rx_bytes;
			struct slowc *c;
			bool again, tracked, same_clock, via_switch;
			uint32_t rp;

			if ((rp = slow_reading(&r, p, pr, &paused_us, &rx_bytes)) == CC_NONE)
				continue;
			cp = &s->ports[rp]; /* (the readings: its own, or its switch port's) */
			via_switch = rp != p;
			/* two intervals in a row: a storm's first interval looks like this (it still
			 * takes what was in flight when it began to pause) */
			snprintf(key, sizeof(key), "%s/%u/%s", cc_dl_class_name(CC_DL_SLOW_RECEIVER), pr,
				 label(s, p, lab, sizeof(lab)));
			c = hmap_get(&d->slow, key);
			if (!c) {
				size_t kl = strlen(key) + 1;

				c = calloc(1, sizeof(*c) + kl);
				if (!c)
					goto out;
				memcpy(c->key, key, kl);
				c->prio = pr;
				snprintf(c->node, sizeof(c->node), "%s", s->nodes[s->ports[p].node].name);
				snprintf(c->port, sizeof(c->port), "%s", s->ports[p].name);
				if (hmap_put(&d->slow, c->key, c, NULL) < 0) {
					free(c);
					goto out;
				}
			}
			/* the intervals of the port's own readings where it says (a run that saw the
			 * same readings again, before new ones came, is not a second interval: a
			 * storm's last interval, paused for part of it and then taking traffic, read
			 * as a slow receiver); newer ones are, whether or not a run saw those between
			 * (runs may come slower than readings).  Readings of the other port than the
			 * last time (its switch's: the host's agent gone, or back) are on another
			 * agent's clock: a run after the last is a second interval */
			tracked = hmap_get(&d->tracks, key) != NULL;
			same_clock = c->run && c->silent == via_switch; /* (the same agent's) */
			if (cp->read_to_us && same_clock && c->read_to_us == cp->read_to_us)
				again = tracked;
			else if (cp->read_to_us && same_clock)
				again = cp->read_from_us >= c->read_to_us || tracked;
			else
				again = c->run && (c->run + 1 == d->runs || tracked);
			c->run = d->runs;
			c->read_to_us = cp->read_to_us;
			c->last_us = s->t_us;
			c->interval_us = s->interval_us;
			c->quiet = 0;
			c->quiet_read_to_us = cp->read_to_us;
			c->paused_us = paused_us;
			c->rx_bytes = rx_bytes;
			c->silent = c->quiet_silent = via_switch;
			if (again && d->res.nfindings < CC_DL_MAX_FINDINGS) {
				c->raised = true;
				if (add_slow_receiver(&r, p, c) < 0)
					goto out;
			}
		}
	}
	if (hold_slow_receivers(&r, culprit_node) < 0)
		goto out;
	if (add_congestion(&r) < 0)
		goto out;

	/* a storm that paused for a moment and came back is a new finding of the same hold */
	for (size_t i = 0; i < d->res.nfindings; i++) {
		struct cc_dl_finding *f = &d->res.findings[i];
		struct hold *h;

		if (f->cls != CC_DL_PAUSE_STORM || !f->suggested.node[0] || find_hold_finding(d, f->id))
			continue;
		h = find_hold_queue(d, f->suggested.node, f->suggested.port, f->prio);
		if (h && h->cls == CC_DL_PAUSE_STORM && !strcmp(h->cnode, f->culprit)) {
			const char *fkey = key_of(d, f->id);
			char *copy = fkey ? strdup(fkey) : NULL;

			if (copy) {
				free(h->fkey);
				h->fkey = copy;
			}
			h->finding = f->id;
		}
	}
	/* holds: mark their findings; persistent deadlocks stay raised while their break holds */
	for (size_t i = 0; i < d->res.nfindings; i++) {
		struct cc_dl_finding *f = &d->res.findings[i];

		f->mitigated = find_hold_finding(d, f->id) != NULL;
	}
	for (size_t i = 0; i < d->nholds; i++) {
		struct hold *h = &d->holds[i];
		struct track *t = h->fkey ? hmap_get(&d->tracks, h->fkey) : NULL;
		struct cc_dl_finding *f;

		if (h->cls != CC_DL_PERSISTENT || !t || t->seen)
			continue;
		f = new_finding(d);
		if (!f)
			goto out;
		f->cls = CC_DL_PERSISTENT;
		f->prio = h->prio;
		f->mitigated = true;
		stamp(d, f, t);
		snprintf(f->suggested.node, sizeof(f->suggested.node), "%s", h->node);
		snprintf(f->suggested.port, sizeof(f->suggested.port), "%s", h->port);
		snprintf(f->summary, sizeof(f->summary),
			 "persistent deadlock on priority %u: held broken at %s:%s; fix routing", h->prio, h->node,
			 h->port);
	}

	/* mitigations in auto mode */
	for (size_t i = 0; i < d->res.nfindings; i++) {
		struct cc_dl_finding *f = &d->res.findings[i];
		enum cc_dl_mode m;

		if (f->cls == CC_DL_PAUSE_STORM)
			m = d->conf.storm_mode;
		else if (f->cls == CC_DL_DEADLOCK || f->cls == CC_DL_PERSISTENT)
			m = d->conf.deadlock_mode;
		else
			continue;
		if (m != CC_DL_AUTO || f->mitigated || !f->suggested.node[0])
			continue;
		rc = mitigate(d, f, NULL);
		if (rc == -ENOMEM)
			goto out;
		f = &d->res.findings[i]; /* the array may not move, but be safe */
		f->mitigated = rc == 0;
	}

	/* cleared: tracked before, not seen now (room for all first: the sweep cannot fail) */
	if (d->tracks.len > d->capcleared) {
		uint64_t *c = realloc(d->res.cleared, d->tracks.len * sizeof(*c));

		if (!c)
			goto out;
		d->res.cleared = c;
		d->capcleared = d->tracks.len;
	}
	hmap_sweep(&d->tracks, clear_track, &d->res);
	hmap_sweep(&d->slow, forget_slow, &d->runs); /* candidates not seen in this run */
	rc = 0;
	*ret = &d->res;
out:
	free(r.v);
	free(r.by_peer);
	free(r.index);
	free(r.low);
	free(r.stack);
	free(r.comp);
	free(r.cstack);
	free(r.citer);
	free(r.on_stack);
	free(buf);
	free(in_cycle);
	free(not_stuck);
	free(node_has_stuck);
	free(held_culprit);
	free(culprit_node);
	return rc;
}

/* --- JSON ---------------------------------------------------------------------------------------- */

static json_t *queue_json(const struct cc_dl_queue *q)
{
	return json_pack("{s:s,s:s,s:I,s:I,s:I}", "node", q->node, "port", q->port, "paused_us",
			 (json_int_t)q->paused_us, "tx_bytes", (json_int_t)q->tx_bytes, "queue_bytes",
			 (json_int_t)q->depth_bytes);
}

bool cc_dl_fault(const struct cc_dl_result *r, unsigned prio, int64_t min_age_us, char *buf, size_t len)
{
	const struct cc_dl_finding *first = NULL;
	unsigned n = 0;

	for (size_t i = 0; i < r->nfindings; i++) {
		const struct cc_dl_finding *f = &r->findings[i];
		bool dl = f->cls == CC_DL_DEADLOCK || f->cls == CC_DL_PERSISTENT;

		if (f->cls != CC_DL_CONGESTION && f->prio == prio && (!dl || r->t_us - f->first_us >= min_age_us) &&
		    !n++)
			first = f;
	}
	if (len)
		buf[0] = '\0';
	if (!first)
		return false;
	if (first->cls == CC_DL_PAUSE_STORM || first->cls == CC_DL_SLOW_RECEIVER)
		snprintf(buf, len, "%s %.64s%s", cc_dl_class_name(first->cls), first->culprit,
			 n > 1 ? " and more" : "");
	else if (first->nports)
		snprintf(buf, len, "%s at %.64s:%.64s%s", cc_dl_class_name(first->cls), first->ports[0].node,
			 first->ports[0].port, n > 1 ? " and more" : "");
	else /* a persistent one its break holds: no cycle this interval */
		snprintf(buf, len, "%s at %.64s:%.64s%s", cc_dl_class_name(first->cls), first->suggested.node,
			 first->suggested.port, n > 1 ? " and more" : "");
	return true;
}

json_t *cc_dl_finding_json(const struct cc_dl_finding *f)
{
	json_t *ports = json_array(), *victims = json_array();
	json_t *o;

	for (unsigned i = 0; i < f->nports; i++)
		json_array_append_new(ports, queue_json(&f->ports[i]));
	for (unsigned i = 0; i < f->nvictims; i++)
		json_array_append_new(victims, queue_json(&f->victims[i]));
	o = json_pack("{s:I,s:s,s:i,s:o,s:I,s:I,s:b,s:s}", "id", (json_int_t)f->id, "class",
		      cc_dl_class_name(f->cls), "priority", f->prio, "ports", ports, "first_us",
		      (json_int_t)f->first_us, "last_us", (json_int_t)f->last_us, "mitigated", f->mitigated,
		      "summary", f->summary);
	if (!o) {
		json_decref(victims);
		return NULL;
	}
	if (f->culprit[0])
		json_object_set_new(o, "culprit", json_string(f->culprit));
	if (f->cls == CC_DL_PAUSE_STORM || f->cls == CC_DL_CONGESTION) {
		json_object_set_new(o, f->cls == CC_DL_CONGESTION ? "listed" : "victims",
				    f->cls == CC_DL_CONGESTION ? json_integer(f->nports) : victims);
		json_object_set_new(o, f->cls == CC_DL_CONGESTION ? "queues_total" : "victims_total",
				    json_integer(f->victims_total));
		if (f->cls == CC_DL_CONGESTION)
			json_decref(victims);
	} else {
		json_decref(victims);
	}
	if (f->cls == CC_DL_PAUSE_STORM || f->cls == CC_DL_SLOW_RECEIVER)
		json_object_set_new(o, "source_silent", json_boolean(f->silent));
	if (f->unread)
		json_object_set_new(o, "unread", json_true());
	if (f->paused.node[0])
		json_object_set_new(o, "paused", queue_json(&f->paused));
	if (f->suggested.node[0])
		json_object_set_new(o, "suggested", json_pack("{s:s,s:s,s:i,s:s}", "node", f->suggested.node, "port",
							      f->suggested.port, "priority", f->prio, "change",
							      "lossless_off"));
	return o;
}

json_t *cc_dl_action_json(const struct cc_dl_action *a)
{
	return json_pack("{s:I,s:I,s:s,s:s,s:s,s:s,s:i,s:s}", "id", (json_int_t)a->id, "finding",
			 (json_int_t)a->finding, "class", cc_dl_class_name(a->cls), "op",
			 cc_dl_op_name(a->op), "node", a->node, "port", a->port,
			 "priority", a->prio, "reason", a->reason);
}
