/* Workloads: the flows of a scenario.
 *   incast        N senders -> 1 receiver, size each, optionally repeated every interval
 *   permutation   every host sends to one other, a random permutation without fixed points
 *   all_reduce    ring all-reduce: 2(n-1) steps, each host sends size/n to the next; a step
 *                 starts when the previous step's chunk has arrived
 *   cdf           Poisson arrivals per host at a target load of its link, sizes from a CDF,
 *                 destinations uniform among the other hosts (HPCC traffic generator's model)
 *   flows         an explicit list, or a file of "src dst size_bytes start_us [priority]"
 * and the ideal completion time of a flow alone on an idle fabric, for its slowdown. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/strutil.h"
#include "sim/build.h"

extern const char sim_cdf_websearch[], sim_cdf_fbhdp[], sim_cdf_alistorage[], sim_cdf_googlerpc[];

#define DATA_PRIO 3

static void start_fn(struct sim *s, struct timer *t)
{
	struct flow *f = t->owner;

	if (!f->started && !f->waiting)
		sim_nic_flow_start(s, f);
}

/* Follows the first route from src to dst: the one-way time of one packet of each size, and
 * the slowest link. */
static simtime_t path_time(struct sim *s, struct node *src, struct node *dst, uint32_t bytes,
			   uint64_t *ret_min_rate)
{
	struct node *n = src;
	simtime_t t = 0;
	uint64_t min_rate = UINT64_MAX;

	(void)s;
	for (int hops = 0; n != dst && hops < 64; hops++) {
		struct port *p;

		if (n->kind == NODE_HOST) {
			p = n->ports[0];
		} else {
			const struct route_set *rs = &n->sw.routes[dst->hid];

			if (!rs->n)
				return -1;
			p = n->ports[n->sw.route_ports[rs->off]];
		}
		t += p->delay + sim_tx_time(p, bytes);
		if (p->rate_bps < min_rate)
			min_rate = p->rate_bps;
		n = p->peer->node;
	}
	if (ret_min_rate)
		*ret_min_rate = min_rate;
	return n == dst ? t : -1;
}

/* Alone on an idle fabric: the first packet crosses the path store-and-forward, the others
 * follow at the slowest link's rate, and the last ACK comes back. */
static simtime_t ideal_fct(struct sim *s, const struct flow *f)
{
	uint32_t full = f->mtu + HDR_BYTES;
	uint64_t rate;
	simtime_t there = path_time(s, f->src, f->dst, f->npkts > 1 ? full : (uint32_t)f->bytes + HDR_BYTES,
				    &rate);
	simtime_t back = path_time(s, f->dst, f->src, CTRL_BYTES, NULL);
	uint64_t rest;

	if (there < 0 || back < 0)
		return 0;
	rest = f->npkts > 1 ? f->bytes - f->mtu + (uint64_t)(f->npkts - 1) * HDR_BYTES : 0;
	return there + (simtime_t)((double)rest * 8 * (double)PS_PER_S / (double)rate) + back;
}

/* The flows a scenario's workloads may make before the run (those of looping workloads are
 * made while running): a cdf workload's count is load x rate x duration / mean size, with no
 * bound of its own, and each flow takes memory until the end. */
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define SIM_MAX_FLOWS (1u << 20)
#else
#define SIM_MAX_FLOWS (1u << 14) /* make fuzz: the same refusal, within the fuzzer's memory */
#endif

/* NULL when out of memory, or past SIM_MAX_FLOWS with e set (flow_err() says which). */
static struct flow *flow_add(struct build *b, struct node *src, struct node *dst, uint64_t bytes,
			     simtime_t start, uint8_t prio)
{
	struct sim *s = b->s;
	struct flow *f;

	if (s->nflows >= SIM_MAX_FLOWS) {
		sim_build_bad(b, NULL, "the workloads make more than %u flows before the run; shorten "
			      "or lighten them", SIM_MAX_FLOWS);
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	if (s->nflows == s->capflows) {
		uint32_t nc = s->capflows ? s->capflows * 2 : 1024;
		struct flow **n = realloc(s->flows, nc * sizeof(*n));

		if (!n) {
			free(f);
			return NULL;
		}
		s->flows = n;
		s->capflows = nc;
	}
	f->id = s->nflows;
	f->src = src;
	f->dst = dst;
	f->bytes = bytes;
	f->mtu = (uint16_t)s->p.mtu;
	f->npkts = (uint32_t)((bytes + s->p.mtu - 1) / s->p.mtu);
	f->prio = prio;
	f->start = start;
	f->hash = sim_rng_next(s);
	f->ideal = ideal_fct(s, f);
	sim_timer_init(&f->t_start, start_fn, f, 0);
	s->flows[s->nflows++] = f;
	return f;
}

static int flow_err(const struct build *b)
{
	return b->s->nflows >= SIM_MAX_FLOWS ? -EINVAL : -ENOMEM;
}

static void flow_schedule(struct sim *s, struct flow *f)
{
	if (!f->waiting)
		sim_timer_arm(s, &f->t_start, f->start);
}

/* --- looping workloads: flows made while running, freed when done ------------------------------- */

enum loop_kind { LOOP_INCAST, LOOP_ALL_REDUCE };

struct loop_gen {
	enum loop_kind kind;
	struct node **hosts; /* the ring, or the senders */
	uint32_t n;
	struct node *rcv;
	uint64_t bytes; /* per flow */
	uint8_t prio;
	simtime_t period; /* incast: from one round's start to the next; all-reduce: gap */
	simtime_t next;	  /* incast: when the next round is due */
	uint32_t left;	  /* flows of the current round not complete */
	uint64_t rounds;
	struct timer t;
};

/* A flow made while the fabric runs, on the ECMP path hash picks: a loop's round (g) or a
 * latency probe (probe; not a workload's flow: the looping workloads' counts and recent
 * results leave it out). */
static struct flow *flow_transient(struct sim *s, struct loop_gen *g, struct probe_gen *probe, struct node *src,
				   struct node *dst, uint64_t bytes, simtime_t start, uint64_t hash)
{
	struct flow *f = calloc(1, sizeof(*f));

	if (!f)
		abort(); /* a running fabric cannot drop a flow silently */
	f->id = s->nflows + (uint32_t)s->transient_started;
	f->transient = true;
	f->gen = g;
	f->probe = probe;
	f->is_probe = probe != NULL;
	f->src = src;
	f->dst = dst;
	f->bytes = bytes;
	f->mtu = (uint16_t)s->p.mtu;
	f->npkts = (uint32_t)((bytes + s->p.mtu - 1) / s->p.mtu);
	f->prio = g ? g->prio : DATA_PRIO;
	f->start = start;
	f->hash = hash;
	f->ideal = ideal_fct(s, f);
	sim_timer_init(&f->t_start, start_fn, f, 0);
	f->tnext = s->tlive;
	if (s->tlive)
		s->tlive->tprev = f;
	s->tlive = f;
	s->transient_started += !probe;
	s->transient_live++;
	if (g)
		g->left++;
	return f;
}

static void reap_fn(struct sim *s, struct timer *t)
{
	struct flow **pp = &s->grave;

	(void)t;
	while (*pp) {
		struct flow *f = *pp;

		if (f->free_at > s->now) {
			pp = &f->grave_next;
			continue;
		}
		*pp = f->grave_next;
		if (f->tprev)
			f->tprev->tnext = f->tnext;
		else
			s->tlive = f->tnext;
		if (f->tnext)
			f->tnext->tprev = f->tprev;
		s->transient_live--;
		free(f);
	}
	if (s->grave)
		sim_timer_arm(s, &s->reaper, s->now + PS_PER_MS);
}

/* A transient flow is complete and nothing refers to it: free it once the last event queue
 * entry of its timers has gone by. */
static void bury(struct sim *s, struct flow *f)
{
	simtime_t last = f->rto.last;

	if (f->t_inc.last > last)
		last = f->t_inc.last;
	if (f->t_dec.last > last)
		last = f->t_dec.last;
	if (f->t_start.last > last)
		last = f->t_start.last;
	f->free_at = (last > s->now ? last : s->now) + 1;
	f->grave_next = s->grave;
	s->grave = f;
	if (!s->reaper.armed) {
		sim_timer_init(&s->reaper, reap_fn, NULL, 0);
		sim_timer_arm(s, &s->reaper, s->now + PS_PER_MS);
	}
}

void sim_flow_unref(struct sim *s, struct flow *f)
{
	if (--f->refs == 0 && f->transient && f->done)
		bury(s, f);
}

static void loop_round(struct sim *s, struct loop_gen *g);
static void probe_flow_done(struct sim *s, struct flow *f);

static void loop_fn(struct sim *s, struct timer *t)
{
	loop_round(s, t->owner);
}

void sim_flow_completed(struct sim *s, struct flow *f)
{
	struct loop_gen *g = f->gen;

	if (!f->transient)
		return;
	if (!f->is_probe) {
		struct flow_rec *r;

		if (!s->recent)
			s->recent = calloc(RECENT_MAX, sizeof(*s->recent));
		if (s->recent) {
			r = &s->recent[s->recent_head];
			*r = (struct flow_rec){ .fct = f->finish - f->start, .ideal = f->ideal,
						.bytes = f->bytes };
			s->recent_head = (s->recent_head + 1) % RECENT_MAX;
			if (s->nrecent < RECENT_MAX)
				s->nrecent++;
		}
	}
	if (f->refs == 0)
		bury(s, f);
	if (f->probe)
		probe_flow_done(s, f);
	if (g && --g->left == 0) {
		/* the round is complete: the next one starts after the gap (all-reduce) or when it
		 * is due (incast; a round never overlaps the previous one, so a fabric that cannot
		 * keep up slows the workload down instead of piling flows up) */
		simtime_t at = g->kind == LOOP_ALL_REDUCE ? s->now + g->period : g->next;

		sim_timer_arm(s, &g->t, at > s->now ? at : s->now);
	}
}

static void loop_round(struct sim *s, struct loop_gen *g)
{
	g->rounds++;
	if (g->kind == LOOP_INCAST) {
		g->next = s->now + g->period;
		for (uint32_t i = 0; i < g->n; i++)
			flow_schedule(s, flow_transient(s, g, NULL, g->hosts[i], g->rcv, g->bytes, s->now, sim_rng_next(s)));
		return;
	}
	/* ring all-reduce: 2(n-1) steps; host i's step k starts when its step k-1 input arrived */
	{
		struct flow *prev[1024], *cur[1024];
		uint32_t n = g->n;

		memset(prev, 0, sizeof(prev));
		for (uint32_t step = 0; step < 2 * (n - 1); step++) {
			for (uint32_t i = 0; i < n; i++)
				cur[i] = flow_transient(s, g, NULL, g->hosts[i], g->hosts[(i + 1) % n], g->bytes,
							s->now, sim_rng_next(s));
			for (uint32_t i = 0; i < n; i++) {
				struct flow *p = prev[(i + n - 1) % n];

				if (p) {
					p->then = cur[i];
					cur[i]->waiting = 1;
				}
				flow_schedule(s, cur[i]);
			}
			memcpy(prev, cur, n * sizeof(*prev));
		}
	}
}

static int loop_add(struct build *b, enum loop_kind kind, struct node **hosts, uint32_t n,
		    struct node *rcv, uint64_t bytes, uint8_t prio, simtime_t start, simtime_t period)
{
	struct sim *s = b->s;
	struct loop_gen *g = calloc(1, sizeof(*g));
	struct loop_gen **ng = realloc(s->gens, (s->ngens + 1) * sizeof(*ng));

	if (!g || !ng) {
		free(g);
		return -ENOMEM;
	}
	s->gens = ng;
	*g = (struct loop_gen){ .kind = kind, .hosts = hosts, .n = n, .rcv = rcv, .bytes = bytes,
				.prio = prio, .period = period };
	sim_timer_init(&g->t, loop_fn, g, 0);
	sim_timer_arm(s, &g->t, start);
	s->gens[s->ngens++] = g;
	return 0;
}

void sim_loops_free(struct sim *s)
{
	while (s->tlive) {
		struct flow *f = s->tlive;

		s->tlive = f->tnext;
		free(f);
	}
	for (uint32_t i = 0; i < s->ngens; i++) {
		free(s->gens[i]->hosts);
		free(s->gens[i]);
	}
	free(s->gens);
	free(s->recent);
}

/* --- helpers -------------------------------------------------------------------------------------- */

static int hosts_of(struct build *b, json_t *w, struct node ***ret, uint32_t *ret_n)
{
	json_t *h = json_object_get(w, "hosts"), *v;
	struct node **list;
	size_t i;

	if (!h || (json_is_string(h) && !strcmp(json_string_value(h), "all"))) {
		list = malloc(b->s->nhosts * sizeof(*list));
		if (!list)
			return -ENOMEM;
		memcpy(list, b->s->hosts, b->s->nhosts * sizeof(*list));
		*ret = list;
		*ret_n = b->s->nhosts;
		return 0;
	}
	if (!json_is_array(h) || !json_array_size(h))
		return sim_build_bad(b, "hosts", "must be \"all\" or a list of hosts");
	list = calloc(json_array_size(h), sizeof(*list));
	if (!list)
		return -ENOMEM;
	json_array_foreach(h, i, v) {
		size_t a = js_path_push_key(&b->p, "hosts");

		js_path_push_idx(&b->p, i);
		list[i] = sim_build_resolve_host(b, v, NULL);
		js_path_pop(&b->p, a);
		if (!list[i]) {
			free(list);
			return -EINVAL;
		}
	}
	*ret = list;
	*ret_n = (uint32_t)json_array_size(h);
	return 0;
}

static int common(struct build *b, json_t *w, simtime_t *start, uint8_t *prio)
{
	double us = 0;
	int64_t p = DATA_PRIO;
	int r;

	if ((r = sim_build_opt_num(b, w, "start_us", 0, 1e9, false, &us)) < 0 ||
	    (r = sim_build_opt_int(b, w, "priority", 0, 5, &p)) < 0)
		return r;
	*start = (simtime_t)llround(us * PS_PER_US);
	*prio = (uint8_t)p;
	return 0;
}

static int size_of(struct build *b, json_t *w, uint64_t *ret)
{
	int64_t v = 0;
	int r = sim_build_opt_int(b, w, "size_bytes", 0, 1000000000000000LL, &v);

	if (r == 0)
		return sim_build_bad(b, "size_bytes", "required field is missing");
	*ret = (uint64_t)v;
	return r < 0 ? r : 0;
}

/* --- the workloads ----------------------------------------------------------------------------------- */

static int incast(struct build *b, json_t *w)
{
	static const char *const keys[] = { "type", "receiver", "senders", "size_bytes", "repeat",
					    "interval_us", "start_us", "priority", "loop", NULL };
	json_t *snd = json_object_get(w, "senders");
	bool loop = false;
	struct node *rcv, **list = NULL;
	uint32_t n = 0;
	int64_t repeat = 1;
	double interval = 0;
	simtime_t start;
	uint64_t bytes = 0;
	uint8_t prio;
	int r;

	if ((r = sim_build_check_keys(b, w, keys)) < 0 || (r = common(b, w, &start, &prio)) < 0 ||
	    (r = size_of(b, w, &bytes)) < 0 ||
	    (r = sim_build_opt_int(b, w, "repeat", 1, 100000, &repeat)) < 0 ||
	    (r = sim_build_opt_period_us(b, w, "interval_us", 1e9, &interval)) < 0 ||
	    (r = sim_build_opt_bool(b, w, "loop", &loop)) < 0)
		return r;
	if ((repeat > 1 || loop) && interval <= 0)
		return sim_build_bad(b, "interval_us", "a repeated incast needs interval_us");
	if (loop && json_object_get(w, "repeat"))
		return sim_build_bad(b, "repeat",
				     "a looping incast repeats until stopped: leave repeat out");
	rcv = sim_build_resolve_host(b, json_object_get(w, "receiver"), "receiver");
	if (!rcv)
		return -EINVAL;
	if (json_is_integer(snd)) {
		json_int_t want = json_integer_value(snd);

		if (want < 1 || (uint64_t)want >= b->s->nhosts)
			return sim_build_bad(b, "senders",
					     "%lld senders: the fabric has %u other hosts",
					     (long long)want, b->s->nhosts - 1);
		list = calloc((size_t)want, sizeof(*list));
		if (!list)
			return -ENOMEM;
		for (uint32_t h = 0; h < b->s->nhosts && n < want; h++)
			if (b->s->hosts[h] != rcv)
				list[n++] = b->s->hosts[h];
	} else if (json_is_array(snd) && json_array_size(snd)) {
		size_t i;
		json_t *v;

		list = calloc(json_array_size(snd), sizeof(*list));
		if (!list)
			return -ENOMEM;
		json_array_foreach(snd, i, v) {
			size_t a = js_path_push_key(&b->p, "senders");

			js_path_push_idx(&b->p, i);
			list[n] = sim_build_resolve_host(b, v, NULL);
			if (list[n] == rcv)
				r = sim_build_bad(b, NULL, "the receiver cannot be a sender");
			js_path_pop(&b->p, a);
			if (!list[n] || r < 0) {
				free(list);
				return -EINVAL;
			}
			n++;
		}
	} else {
		return sim_build_bad(b, "senders", "a number of senders or a list of hosts");
	}
	if (loop)
		return loop_add(b, LOOP_INCAST, list, n, rcv, bytes, prio, start,
				(simtime_t)llround(interval * PS_PER_US));
	for (int64_t k = 0; k < repeat; k++)
		for (uint32_t i = 0; i < n; i++) {
			struct flow *f = flow_add(b, list[i], rcv, bytes,
						  start + (simtime_t)llround(k * interval * PS_PER_US), prio);

			if (!f) {
				free(list);
				return flow_err(b);
			}
			flow_schedule(b->s, f);
		}
	free(list);
	return 0;
}

static int permutation(struct build *b, json_t *w)
{
	static const char *const keys[] = { "type", "hosts", "size_bytes", "start_us", "priority", NULL };
	struct node **h;
	uint32_t n, *perm;
	simtime_t start;
	uint64_t bytes = 0;
	uint8_t prio;
	int r;

	if ((r = sim_build_check_keys(b, w, keys)) < 0 || (r = common(b, w, &start, &prio)) < 0 ||
	    (r = size_of(b, w, &bytes)) < 0 || (r = hosts_of(b, w, &h, &n)) < 0)
		return r;
	if (n < 2) {
		free(h);
		return sim_build_bad(b, "hosts", "a permutation needs two hosts or more");
	}
	perm = malloc(n * sizeof(*perm));
	if (!perm) {
		free(h);
		return -ENOMEM;
	}
	/* a random cyclic shift of a shuffled order has no fixed point */
	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(sim_rng_next(b->s) % (i + 1)), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint32_t i = 0; i < n && r == 0; i++) {
		struct flow *f = flow_add(b, h[perm[i]], h[perm[(i + 1) % n]], bytes, start, prio);

		if (!f)
			r = flow_err(b);
		else
			flow_schedule(b->s, f);
	}
	free(perm);
	free(h);
	return r;
}

static int all_reduce(struct build *b, json_t *w)
{
	static const char *const keys[] = { "type", "hosts", "size_bytes", "iterations", "start_us",
					    "priority", "loop", "gap_us", NULL };
	bool loop = false;
	double gap = 0;
	struct flow **prev = NULL, **cur = NULL;
	int64_t iters = 1;
	struct node **h;
	simtime_t start;
	uint64_t bytes = 0, chunk;
	uint32_t n;
	uint8_t prio;
	int r;

	if ((r = sim_build_check_keys(b, w, keys)) < 0 || (r = common(b, w, &start, &prio)) < 0 ||
	    (r = size_of(b, w, &bytes)) < 0 ||
	    (r = sim_build_opt_int(b, w, "iterations", 1, 1000, &iters)) < 0 ||
	    (r = sim_build_opt_bool(b, w, "loop", &loop)) < 0 ||
	    (r = sim_build_opt_num(b, w, "gap_us", 0, 1e9, false, &gap)) < 0)
		return r;
	if (loop && json_object_get(w, "iterations"))
		return sim_build_bad(
			b, "iterations",
			"a looping all-reduce iterates until stopped: leave iterations out");
	if (!loop && json_object_get(w, "gap_us"))
		return sim_build_bad(
			b, "gap_us",
			"gap_us (compute time between iterations) needs \"loop\": true");
	if ((r = hosts_of(b, w, &h, &n)) < 0)
		return r;
	if (n < 2) {
		free(h);
		return sim_build_bad(b, "hosts", "an all-reduce needs two hosts or more");
	}
	if (loop && n > 1024) {
		free(h);
		return sim_build_bad(b, "hosts",
				     "a looping all-reduce ring has at most 1024 hosts");
	}
	chunk = (bytes + n - 1) / n;
	if (loop)
		return loop_add(b, LOOP_ALL_REDUCE, h, n, NULL, chunk, prio, start,
				(simtime_t)llround(gap * PS_PER_US));
	prev = calloc(n, sizeof(*prev));
	cur = calloc(n, sizeof(*cur));
	if (!prev || !cur) {
		r = -ENOMEM;
		goto out;
	}
	for (int64_t it = 0; it < iters; it++) {
		for (uint32_t step = 0; step < 2 * (n - 1); step++) {
			for (uint32_t i = 0; i < n; i++) {
				struct flow *f = flow_add(b, h[i], h[(i + 1) % n], chunk, start, prio);

				if (!f) {
					r = flow_err(b);
					goto out;
				}
				cur[i] = f;
			}
			for (uint32_t i = 0; i < n; i++) {
				/* host i sends at this step what it received from i-1 before */
				struct flow *p = prev[(i + n - 1) % n];

				if (p) {
					p->then = cur[i];
					cur[i]->waiting = 1;
				}
				flow_schedule(b->s, cur[i]);
			}
			memcpy(prev, cur, n * sizeof(*prev));
		}
	}
out:
	free(prev);
	free(cur);
	free(h);
	return r;
}

struct cdf {
	double *size, *pct;
	size_t n;
	double mean;
};

static int cdf_parse(struct build *b, const char *text, const char *what, struct cdf *c)
{
	const char *line = text;

	while (line && *line) {
		double sz, pc;
		const char *nl = strchr(line, '\n');

		if (sscanf(line, "%lf %lf", &sz, &pc) == 2) {
			double *ns = realloc(c->size, (c->n + 1) * sizeof(*ns));
			double *np = realloc(c->pct, (c->n + 1) * sizeof(*np));

			if (!ns || !np)
				return -ENOMEM;
			c->size = ns;
			c->pct = np;
			if (sz < 0 || pc < 0 || pc > 100 || (c->n && (sz < c->size[c->n - 1] || pc < c->pct[c->n - 1])))
				return sim_build_bad(b, "cdf",
						     "%s: sizes and percentages must grow (0..100)",
						     what);
			c->size[c->n] = sz;
			c->pct[c->n++] = pc;
		}
		line = nl ? nl + 1 : NULL;
	}
	if (c->n < 2 || c->pct[c->n - 1] < 100 - 1e-9)
		return sim_build_bad(b, "cdf",
				     "%s: a CDF needs two points or more and must reach 100", what);
	for (size_t i = 1; i < c->n; i++)
		c->mean += (c->size[i] + c->size[i - 1]) / 2 * (c->pct[i] - c->pct[i - 1]) / 100;
	/* flows come mean x 8 / rate apart: a mean of 0 would make them all at one instant */
	if (!(c->mean >= 1))
		return sim_build_bad(b, "cdf", "%s: the mean flow size is below 1 byte", what);
	return 0;
}

static double cdf_sample(struct sim *s, const struct cdf *c)
{
	double u = sim_rng_uniform(s) * 100;

	for (size_t i = 1; i < c->n; i++) {
		if (u <= c->pct[i]) {
			double span = c->pct[i] - c->pct[i - 1];

			if (span <= 0)
				return c->size[i];
			return c->size[i - 1] + (c->size[i] - c->size[i - 1]) * (u - c->pct[i - 1]) / span;
		}
	}
	return c->size[c->n - 1];
}

static int load_cdf(struct build *b, json_t *spec, struct cdf *c)
{
	static const struct {
		const char *name;
		const char *text;
	} builtin[] = { { "websearch", sim_cdf_websearch },
			{ "fbhdp", sim_cdf_fbhdp },
			{ "alistorage", sim_cdf_alistorage },
			{ "googlerpc", sim_cdf_googlerpc } };

	if (json_is_string(spec)) {
		const char *name = json_string_value(spec);
		char path[4200], *text;
		size_t len;
		int r;

		for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
			if (!strcmp(name, builtin[i].name))
				return cdf_parse(b, builtin[i].text, name, c);
		if (name[0] == '/' || !b->base_dir)
			str_copy(path, sizeof(path), name);
		else
			str_fmt(path, sizeof(path), "%s/%s", b->base_dir, name);
		/* a directory or a pipe is no CDF file: str_slurp() refuses what has no size */
		text = str_slurp(path, &len);
		if (!text)
			return sim_build_bad(
				b, "cdf",
				"'%s' is not a built-in CDF (websearch, fbhdp, alistorage, "
				"googlerpc) and %s cannot be read",
				name, path);
		r = cdf_parse(b, text, path, c);
		free(text);
		return r;
	}
	if (json_is_array(spec)) {
		size_t i;
		json_t *pt;
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		int r;

		if (!m)
			return -ENOMEM;
		json_array_foreach(spec, i, pt)
			fprintf(m, "%.17g %.17g\n", json_number_value(json_array_get(pt, 0)),
				json_number_value(json_array_get(pt, 1)));
		fclose(m);
		r = cdf_parse(b, text, "the inline CDF", c);
		free(text);
		return r;
	}
	return sim_build_bad(b, "cdf", "a CDF name, a file, or a list of [size_bytes, percent]");
}

/* The next arrival after t, an exponential gap of mean mean_gap_s seconds, or end when it
 * falls there or past it (a load so small that the gap is past the clock's range included:
 * converted, it overflowed, found by the fuzzer with a load of 2e-94). */
static simtime_t next_arrival(struct sim *s, simtime_t t, double mean_gap_s, simtime_t end)
{
	double gap = -log(1 - sim_rng_uniform(s)) * mean_gap_s * PS_PER_S;

	return !(gap < (double)(end - t)) ? end : t + (simtime_t)gap;
}

static int cdf_workload(struct build *b, json_t *w)
{
	static const char *const keys[] = { "type", "cdf", "load", "duration_us", "hosts",
					    "start_us", "priority", NULL };
	struct cdf c = { 0 };
	double load = 0, dur = 0;
	struct node **h = NULL;
	simtime_t start;
	uint8_t prio;
	uint32_t n;
	int r;

	if ((r = sim_build_check_keys(b, w, keys)) < 0 || (r = common(b, w, &start, &prio)) < 0 ||
	    (r = sim_build_opt_num(b, w, "load", 0, 1, true, &load)) < 0 ||
	    (r = sim_build_opt_period_us(b, w, "duration_us", 1e9, &dur)) < 0)
		return r;
	if (!load)
		return sim_build_bad(b, "load", "required field is missing");
	if (!dur)
		return sim_build_bad(b, "duration_us", "required field is missing");
	if ((r = load_cdf(b, json_object_get(w, "cdf"), &c)) < 0 || (r = hosts_of(b, w, &h, &n)) < 0)
		goto out;
	if (n < 2) {
		r = sim_build_bad(b, "hosts", "needs two hosts or more");
		goto out;
	}
	{
		/* per host, exponential gaps: mean = mean size x 8 / (link rate x load); flows in
		 * order of their start so that ids follow time */
		simtime_t end = start + (simtime_t)llround(dur * PS_PER_US);
		simtime_t *next = malloc(n * sizeof(*next));

		if (!next) {
			r = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < n; i++) {
			double mean_gap = c.mean * 8 / ((double)h[i]->ports[0]->rate_bps * load);

			next[i] = next_arrival(b->s, start, mean_gap, end);
		}
		for (;;) {
			uint32_t i = 0, dst;
			double mean_gap;
			uint64_t bytes;
			struct flow *f;

			for (uint32_t k = 1; k < n; k++)
				if (next[k] < next[i])
					i = k;
			if (next[i] >= end)
				break;
			dst = (uint32_t)(sim_rng_next(b->s) % (n - 1));
			if (dst >= i)
				dst++;
			bytes = (uint64_t)llround(cdf_sample(b->s, &c));
			if (!bytes)
				bytes = 1;
			f = flow_add(b, h[i], h[dst], bytes, next[i], prio);
			if (!f) {
				r = flow_err(b);
				break;
			}
			flow_schedule(b->s, f);
			mean_gap = c.mean * 8 / ((double)h[i]->ports[0]->rate_bps * load);
			next[i] = next_arrival(b->s, next[i], mean_gap, end);
		}
		free(next);
	}
out:
	free(h);
	free(c.size);
	free(c.pct);
	return r;
}

static int flow_list(struct build *b, json_t *w)
{
	static const char *const keys[] = { "type", "flows", "file", NULL };
	static const char *const fk[] = { "src", "dst", "size_bytes", "start_us", "priority", NULL };
	json_t *flows = json_object_get(w, "flows"), *v;
	const char *file = js_str(w, "file", NULL);
	size_t i;
	int r;

	if ((r = sim_build_check_keys(b, w, keys)) < 0)
		return r;
	if (!flows && !file)
		return sim_build_bad(b, NULL, "give \"flows\" or \"file\"");
	json_array_foreach(flows, i, v) {
		size_t a = js_path_push_key(&b->p, "flows");
		struct node *src, *dst;
		simtime_t start;
		uint64_t bytes = 0;
		uint8_t prio;
		struct flow *f;

		js_path_push_idx(&b->p, i);
		r = sim_build_check_keys(b, v, fk);
		if (r == 0)
			r = common(b, v, &start, &prio);
		if (r == 0)
			r = size_of(b, v, &bytes);
		src = r == 0 ? sim_build_resolve_host(b, json_object_get(v, "src"), "src") : NULL;
		dst = src ? sim_build_resolve_host(b, json_object_get(v, "dst"), "dst") : NULL;
		if (r == 0 && src && dst && src == dst)
			r = sim_build_bad(b, "dst", "a flow from a host to itself");
		if (r == 0 && (!src || !dst))
			r = -EINVAL;
		if (r == 0) {
			f = flow_add(b, src, dst, bytes, start, prio);
			if (!f)
				r = flow_err(b);
			else
				flow_schedule(b->s, f);
		}
		js_path_pop(&b->p, a);
		if (r < 0)
			return r;
	}
	if (file) {
		char path[4200], line[512];
		FILE *f;
		int lineno = 0;

		if (file[0] == '/' || !b->base_dir)
			str_copy(path, sizeof(path), file);
		else
			str_fmt(path, sizeof(path), "%s/%s", b->base_dir, file);
		f = fopen(path, "re");
		if (!f)
			return sim_build_bad(b, "file", "cannot read %s", path);
		while (fgets(line, sizeof(line), f)) {
			char sn[64], dn[64];
			double us;
			unsigned long long bytes;
			int prio = DATA_PRIO, k;
			json_t *sr, *dr;
			struct node *src, *dst;
			struct flow *fl;

			lineno++;
			if (line[strspn(line, " \t")] == '#' || line[strspn(line, " \t\r\n")] == '\0')
				continue;
			k = sscanf(line, "%63s %63s %llu %lf %d", sn, dn, &bytes, &us, &prio);
			if (k < 4 || us < 0 || prio < 0 || prio > 5) {
				fclose(f);
				return sim_build_bad(
					b, "file",
					"%s:%d: expected src dst size_bytes start_us [priority]",
					path, lineno);
			}
			sr = strspn(sn, "0123456789") == strlen(sn) ? json_integer(atoll(sn)) : json_string(sn);
			dr = strspn(dn, "0123456789") == strlen(dn) ? json_integer(atoll(dn)) : json_string(dn);
			src = sim_build_resolve_host(b, sr, "file");
			dst = src ? sim_build_resolve_host(b, dr, "file") : NULL;
			json_decref(sr);
			json_decref(dr);
			if (!src || !dst || src == dst) {
				fclose(f);
				if (src && dst)
					return sim_build_bad(b, "file",
							     "%s:%d: a flow from a host to itself",
							     path, lineno);
				snprintf(b->e->msg + strlen(b->e->msg),
					 sizeof(b->e->msg) - strlen(b->e->msg), " (%s:%d)", path, lineno);
				return -EINVAL;
			}
			fl = flow_add(b, src, dst, bytes, (simtime_t)llround(us * PS_PER_US), (uint8_t)prio);
			if (!fl) {
				fclose(f);
				return flow_err(b);
			}
			flow_schedule(b->s, fl);
		}
		fclose(f);
	}
	return 0;
}

int sim_build_workloads(struct build *b, json_t *workloads)
{
	static const char *const types[] = { "incast", "permutation", "all_reduce", "cdf", "flows", NULL };
	static int (*const fn[])(struct build *, json_t *) = { incast, permutation, all_reduce,
							      cdf_workload, flow_list };
	size_t i;
	json_t *w;
	int r = 0;

	if (!workloads)
		return 0;
	if (!json_is_array(workloads))
		return sim_build_bad(b, "workloads", "must be an array");
	json_array_foreach(workloads, i, w) {
		size_t a = js_path_push_key(&b->p, "workloads");
		int type;

		js_path_push_idx(&b->p, i);
		if (!json_is_object(w))
			r = sim_build_bad(b, NULL, "a workload is an object");
		else if ((r = js_req_enum(w, "type", types, &b->p, &type, b->e)) < 0)
			snprintf(b->e->code, sizeof(b->e->code), "BAD_SCENARIO");
		else
			r = fn[type](b, w);
		js_path_pop(&b->p, a);
		if (r < 0)
			return r;
	}
	return 0;
}

/* --- latency probes ------------------------------------------------------------------------------ */

/* count probes of size bytes from src to dst, one after the other, on one ECMP path (the flow
 * hash stands for the 5-tuple, which a RoCE v2 QP's UDP source port fixes; label picks among
 * paths as a flow label would).  Each probe is a flow like the workloads' (same queues, PFC,
 * ECN and go-back-N); its latency is its completion time, data out and ACK back. */
struct probe_gen {
	int id;
	struct node *src, *dst;
	uint64_t hash;
	uint32_t size, count, started, ok, lost;
	simtime_t timeout, cur_start;
	struct flow *cur;
	double *samples;
	struct timer t;
	bool done;
	struct probe_gen *next_dead;
};

static void probe_next(struct sim *s, struct probe_gen *g);

static void probe_timeout_fn(struct sim *s, struct timer *t)
{
	struct probe_gen *g = t->owner;

	/* the probe is lost (it may still complete, and is then ignored) */
	if (g->cur)
		g->cur->probe = NULL;
	g->cur = NULL;
	g->lost++;
	probe_next(s, g);
}

static void probe_next(struct sim *s, struct probe_gen *g)
{
	struct flow *f;

	if (g->started == g->count) {
		g->done = true;
		return;
	}
	g->started++;
	/* its own path, and no draw: probes leave the workloads' random sequence alone */
	f = flow_transient(s, NULL, g, g->src, g->dst, g->size, s->now, g->hash);
	g->cur = f;
	g->cur_start = s->now;
	sim_timer_arm(s, &g->t, s->now + g->timeout);
	flow_schedule(s, f);
}

static void probe_flow_done(struct sim *s, struct flow *f)
{
	struct probe_gen *g = f->probe;

	f->probe = NULL;
	if (g->cur != f)
		return;
	sim_timer_cancel(&g->t);
	g->samples[g->ok++] = (double)(f->finish - g->cur_start) / PS_PER_US;
	g->cur = NULL;
	probe_next(s, g);
}

void sim_probe_room(const struct sim *s, uint32_t *ret_runs, uint64_t *ret_probes)
{
	uint32_t free_slots = 0;
	uint64_t probes = 0;

	for (uint32_t i = 0; i < s->nprobes; i++) {
		if (!s->probes[i])
			free_slots++;
		else
			probes += s->probes[i]->count;
	}
	*ret_runs = free_slots + (s->nprobes < 65536 ? 65536 - s->nprobes : 0);
	*ret_probes = probes;
}

int sim_probe_start(struct sim *s, int src, int dst, uint32_t size, uint32_t label, uint32_t count,
		    int64_t timeout_ps, struct rf_err *e)
{
	struct probe_gen *g, **np;
	uint32_t slot = s->nprobes;

	if (src < 0 || (uint32_t)src >= s->nnodes || s->nodes[src]->kind != NODE_HOST ||
	    dst < 0 || (uint32_t)dst >= s->nnodes || s->nodes[dst]->kind != NODE_HOST)
		return rf_err_set(e, -ENOENT, "UNKNOWN_HOST", NULL, "probes run between two hosts");
	if (src == dst)
		return rf_err_set(e, -EINVAL, "BAD_VALUE", "/dst", "a host does not probe itself");
	if (size < 1 || size > 1 << 20 || count < 1 || count > 100000 || timeout_ps <= 0)
		return rf_err_set(e, -EINVAL, "BAD_VALUE", NULL,
				  "size 1 B to 1 MiB, count 1 to 100000, a positive timeout");
	for (uint32_t i = 0; i < s->nprobes; i++)
		if (!s->probes[i]) {
			slot = i;
			break;
		}
	if (slot == s->nprobes) {
		if (s->nprobes >= 65536)
			return rf_err_set(e, -ENOSPC, "TOO_MANY_PROBES", NULL,
					  "65536 probe runs wait to be collected");
		np = realloc(s->probes, (s->nprobes + 1) * sizeof(*np));
		if (!np)
			return -ENOMEM;
		s->probes = np;
		s->probes[s->nprobes++] = NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g || !(g->samples = calloc(count, sizeof(double)))) {
		free(g);
		return -ENOMEM;
	}
	g->id = (int)slot;
	g->src = s->nodes[src];
	g->dst = s->nodes[dst];
	g->hash = hash_mix64(((uint64_t)g->src->hid << 40) ^ ((uint64_t)g->dst->hid << 16) ^ label ^ 0x9e3779b97f4a7c15ULL);
	g->size = size;
	g->count = count;
	g->timeout = timeout_ps;
	sim_timer_init(&g->t, probe_timeout_fn, g, 0);
	s->probes[slot] = g;
	probe_next(s, g);
	return (int)slot;
}

/* The links a probe takes as the switches' ECMP picks them: its data from src to dst, then its
 * ACK back (which hashes on its own and may cross other links). */
static void walk(const struct node *from, const struct node *to, uint64_t hash, bool data, json_t *path)
{
	const struct node *n = from;
	struct port *p = n->ports[0];

	for (int hops = 0; p && hops < 16; hops++) {
		const char *name = p->link->name;
		bool dup = false;
		size_t i;
		json_t *x;

		json_array_foreach(path, i, x)
			dup |= !strcmp(json_string_value(x), name);
		if (!dup)
			json_array_append_new(path, json_string(name));
		n = p->peer->node;
		if (n == to || n->kind != NODE_SWITCH)
			break;
		p = sim_switch_next_port(n, to->hid, hash, data);
	}
}

static json_t *probe_path(const struct probe_gen *g)
{
	json_t *path = json_array();

	walk(g->src, g->dst, g->hash, true, path);
	walk(g->dst, g->src, g->hash, false, path);
	return path;
}

/* Frees the collected runs that no event can name any more. */
static void probes_reap(struct sim *s)
{
	/* oldest first: the runs' last timer times mostly grow along the list, so stopping at the
	 * first one still named costs nothing and only delays a few */
	while (s->probes_dead && s->probes_dead->t.last < s->now) {
		struct probe_gen *g = s->probes_dead;

		s->probes_dead = g->next_dead;
		if (!s->probes_dead)
			s->probes_dead_tail = NULL;
		free(g);
	}
}

bool sim_probe_done(const struct sim *s, int id)
{
	return id >= 0 && (uint32_t)id < s->nprobes && s->probes[id] && s->probes[id]->done;
}

json_t *sim_probe_result(struct sim *s, int id)
{
	struct probe_gen *g;
	json_t *o, *samples;

	if (id < 0 || (uint32_t)id >= s->nprobes || !(g = s->probes[id]))
		return NULL;
	samples = json_array();
	for (uint32_t i = 0; i < g->ok; i++)
		json_array_append_new(samples, json_real(round(g->samples[i] * 1000) / 1000));
	o = json_pack("{s:i,s:s,s:s,s:b,s:I,s:I,s:I,s:o,s:o}", "id", id, "src", g->src->name, "dst",
		      g->dst->name, "done", g->done, "count", (json_int_t)g->count, "ok",
		      (json_int_t)g->ok, "lost", (json_int_t)g->lost, "samples_us", samples, "path",
		      probe_path(g));
	if (g->done) {
		/* collected: the slot is free again.  A cancelled timer leaves its entry in the event
		 * heap (it is skipped when it comes up), so the run is freed only once the fabric's
		 * time has passed the last time its timer was armed for. */
		s->probes[id] = NULL;
		free(g->samples);
		g->samples = NULL;
		g->next_dead = NULL;
		if (s->probes_dead_tail)
			s->probes_dead_tail->next_dead = g;
		else
			s->probes_dead = g;
		s->probes_dead_tail = g;
	}
	probes_reap(s);
	return o;
}

void sim_probes_free(struct sim *s)
{
	for (uint32_t i = 0; i < s->nprobes; i++)
		if (s->probes[i]) {
			if (s->probes[i]->cur)
				s->probes[i]->cur->probe = NULL;
			free(s->probes[i]->samples);
			free(s->probes[i]);
		}
	free(s->probes);
	while (s->probes_dead) {
		struct probe_gen *g = s->probes_dead;

		s->probes_dead = g->next_dead;
		free(g);
	}
	s->probes_dead_tail = NULL;
}
