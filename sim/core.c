/* Simulator core: the event queue (ordered by time, then by scheduling order: a ring of short
 * buckets for the next few microseconds, where most events fall, and a 4-ary heap for the rest),
 * timers with O(1) cancel, the packet pool, the random number generator, and packet queues.
 * It calls no model by name: a timer carries its function, and the models register the
 * handlers of the other event types (sim_ev_register). */
#include <stdlib.h>
#include <string.h>

#include "sim/internal.h"

static inline bool ev_before(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(struct evq *q, const struct ev *ev)
{
	struct ev e = *ev;
	size_t i;

	if (q->n == q->cap) {
		size_t nc = q->cap ? q->cap * 2 : 4096;
		struct ev *nh = realloc(q->h, nc * sizeof(*nh));

		if (!nh)
			abort(); /* the simulation cannot continue without its event queue */
		q->h = nh;
		q->cap = nc;
	}
	i = q->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 4;

		if (!ev_before(&e, &q->h[parent]))
			break;
		q->h[i] = q->h[parent];
		i = parent;
	}
	q->h[i] = e;
}

void sim_evq_push(struct sim *s, simtime_t t, uint32_t type, void *obj, uint32_t gen)
{
	struct evq *q = &s->q;
	struct ev e = { .t = t, .seq = q->seq++, .obj = obj, .type = type, .gen = gen };
	struct evq_bucket *b;
	uint64_t k;

	if (!q->nring && t >= q->base + ((simtime_t)EVQ_NBUCKETS << EVQ_WIDTH_LOG2) && s->now >= q->base) {
		/* an empty ring left behind: from now on (its bucket served last, if any, holds
		 * events popped already) */
		q->b[q->cur].n = 0;
		q->base = s->now >> EVQ_WIDTH_LOG2 << EVQ_WIDTH_LOG2;
		q->cur = 0;
		q->pos = 0;
		q->sorted = false;
	}
	if (t < q->base || (k = (uint64_t)(t - q->base) >> EVQ_WIDTH_LOG2) >= EVQ_NBUCKETS) {
		heap_push(q, &e);
		return;
	}
	b = &q->b[(q->cur + k) % EVQ_NBUCKETS];
	if (b->n == b->cap) {
		uint32_t nc = b->cap ? b->cap * 2 : 16;
		struct ev *nv = realloc(b->v, nc * sizeof(*nv));

		if (!nv)
			abort(); /* as the heap's */
		b->v = nv;
		b->cap = nc;
	}
	q->nring++;
	if (k == 0 && q->sorted) {
		/* into the bucket being served, in its place (after every earlier one: its seq is
		 * the largest) */
		uint32_t i = b->n++;

		while (i > q->pos && e.t < b->v[i - 1].t) {
			b->v[i] = b->v[i - 1];
			i--;
		}
		b->v[i] = e;
		return;
	}
	b->v[b->n++] = e;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return ev_before(x, y) ? -1 : ev_before(y, x);
}

/* The ring's earliest event (moving on to the first bucket that holds one), NULL: none. */
static struct ev *ring_first(struct evq *q)
{
	struct evq_bucket *b;

	if (!q->nring)
		return NULL;
	for (;;) {
		b = &q->b[q->cur];
		if (q->pos < b->n)
			break;
		b->n = 0;
		q->pos = 0;
		q->sorted = false;
		q->cur = (q->cur + 1) % EVQ_NBUCKETS;
		q->base += (simtime_t)1 << EVQ_WIDTH_LOG2;
	}
	if (!q->sorted) {
		if (b->n <= 16) {
			for (uint32_t i = 1; i < b->n; i++) {
				struct ev e = b->v[i];
				uint32_t j = i;

				while (j > 0 && ev_before(&e, &b->v[j - 1])) {
					b->v[j] = b->v[j - 1];
					j--;
				}
				b->v[j] = e;
			}
		} else {
			qsort(b->v, b->n, sizeof(*b->v), ev_cmp);
		}
		q->sorted = true;
	}
	return &b->v[q->pos];
}

/* An event's place in the order as one number: time, then scheduling order (times are never
 * negative).  Comparing these compiles to flag arithmetic and conditional moves: the choice
 * among a node's four children costs no mispredicted branch, which is what made the pop half
 * of the simulator's run time (perf, 64-host WebSearch at 70 % load). */
static inline unsigned __int128 ev_key(const struct ev *e)
{
	return (unsigned __int128)(uint64_t)e->t << 64 | e->seq;
}

/* Pops the heap's earliest event into *ret (the heap holds one at least). */
static void heap_pop(struct evq *q, struct ev *ret)
{
	struct ev *h = q->h;
	unsigned __int128 lk;
	size_t i = 0, n;

	*ret = h[0];
	n = --q->n;
	if (!n)
		return;
	lk = ev_key(&h[n]);
	for (;;) {
		size_t c = 4 * i + 1, best = c;
		unsigned __int128 bk;

		if (c >= n)
			break;
		bk = ev_key(&h[c]);
		if (c + 4 <= n) {
			unsigned __int128 k1 = ev_key(&h[c + 1]), k2 = ev_key(&h[c + 2]),
					  k3 = ev_key(&h[c + 3]);
			size_t b23 = k3 < k2 ? c + 3 : c + 2;
			unsigned __int128 m23 = k3 < k2 ? k3 : k2;

			best = k1 < bk ? c + 1 : c;
			bk = k1 < bk ? k1 : bk;
			best = m23 < bk ? b23 : best;
			bk = m23 < bk ? m23 : bk;
		} else {
			for (size_t k = c + 1; k < n; k++) {
				unsigned __int128 kk = ev_key(&h[k]);

				best = kk < bk ? k : best;
				bk = kk < bk ? kk : bk;
			}
		}
		if (bk >= lk)
			break;
		h[i] = h[best];
		i = best;
	}
	h[i] = h[n];
}

/* The earliest event: the ring's or the heap's; NULL when there is none. */
static struct ev *evq_peek(struct evq *q)
{
	struct ev *r = ring_first(q);

	if (q->n && (!r || ev_before(q->h, r)))
		return q->h;
	return r;
}

/* Pops the event evq_peek() returned. */
static void evq_pop(struct evq *q, struct ev *first, struct ev *ret)
{
	if (first == q->h) { /* (q->h is NULL before the heap's first push: no &q->h[0]) */
		heap_pop(q, ret);
		return;
	}
	*ret = *first;
	q->pos++;
	q->nring--;
}

void sim_ev_register(struct sim *s, enum ev_type type, sim_ev_fn fn)
{
	s->ev_fn[type] = fn;
}

void sim_timer_init(struct timer *t, timer_fn fn, void *owner, uint32_t arg)
{
	*t = (struct timer){ .fn = fn, .owner = owner, .arg = arg };
}

void sim_timer_arm(struct sim *s, struct timer *t, simtime_t at)
{
	if (t->armed) {
		if (t->at == at)
			return;
		t->gen++; /* the old entry becomes stale */
	}
	t->armed = true;
	t->at = at < s->now ? s->now : at;
	if (t->at > t->last)
		t->last = t->at;
	sim_evq_push(s, t->at, EV_TIMER, t, t->gen);
}

void sim_timer_cancel(struct timer *t)
{
	if (t->armed) {
		t->armed = false;
		t->gen++;
	}
}

/* Runs one event; false when there is none. */
static bool run_one(struct sim *s, simtime_t limit)
{
	struct ev e;

	for (;;) {
		struct ev *first = evq_peek(&s->q);

		if (!first || first->t > limit)
			return false;
		evq_pop(&s->q, first, &e);
		if (e.type == EV_TIMER) {
			struct timer *t = e.obj;

			if (e.gen != t->gen || !t->armed)
				continue; /* cancelled or re-armed */
			t->armed = false;
			s->now = e.t;
			s->st.events++;
			t->fn(s, t);
			return true;
		}
		s->now = e.t;
		s->st.events++;
		/* a call site per type (a new type gets its case): each always calls the same
		 * handler, which any CPU predicts like a direct call; one shared site can miss
		 * whenever the type changes (callgrind --branch-sim: a third of the time) */
		switch (e.type) {
		case EV_TX_DONE:
			s->ev_fn[EV_TX_DONE](s, e.obj);
			break;
		case EV_ARRIVE:
			s->ev_fn[EV_ARRIVE](s, e.obj);
			break;
		}
		return true;
	}
}

static bool sim_finished(const struct sim *s)
{
	if (s->p.until_ps > 0)
		return s->now >= s->p.until_ps;
	return s->st.flows_done == s->nflows && s->flows_started == s->nflows && !s->ngens;
}

uint64_t sim_run_until(struct sim *s, int64_t t)
{
	uint64_t n0 = s->st.events;
	simtime_t limit = t;

	if (s->p.until_ps > 0 && limit > s->p.until_ps)
		limit = s->p.until_ps;
	while (!s->stop && !sim_finished(s) && run_one(s, limit))
		;
	if (!s->stop && s->now < limit && (s->p.until_ps > 0 || !sim_finished(s)))
		s->now = limit; /* nothing happened in between: time still passes */
	return s->st.events - n0;
}

uint64_t sim_step(struct sim *s, uint64_t n)
{
	uint64_t n0 = s->st.events;
	simtime_t limit = s->p.until_ps > 0 ? s->p.until_ps : INT64_MAX;

	while (n-- && !s->stop && !sim_finished(s) && run_one(s, limit))
		;
	return s->st.events - n0;
}

bool sim_done(const struct sim *s)
{
	return s->stop || sim_finished(s) || (!s->q.n && !s->q.nring && s->p.until_ps <= 0);
}

/* --- packets ---------------------------------------------------------------------------------- */

#define PKT_CHUNK 4096

struct pkt *sim_pkt_new(struct sim *s)
{
	struct pkt *p = s->free_pkts;

	if (!p) {
		/* the pool grows while the fabric fills up, then recycles */
		struct pkt *chunk = malloc(PKT_CHUNK * sizeof(*chunk));
		struct pkt **nc = realloc(s->pkt_chunks, (s->npkt_chunks + 1) * sizeof(*nc));

		if (!chunk || !nc)
			abort();
		s->pkt_chunks = nc;
		s->pkt_chunks[s->npkt_chunks++] = chunk;
		for (size_t i = 0; i < PKT_CHUNK - 1; i++)
			chunk[i].next = &chunk[i + 1];
		chunk[PKT_CHUNK - 1].next = NULL;
		p = chunk;
	}
	s->free_pkts = p->next;
	memset(p, 0, sizeof(*p));
	s->pkts_live++;
	return p;
}

void sim_pkt_free(struct sim *s, struct pkt *p)
{
	if (p->flow)
		sim_flow_unref(s, p->flow);
	p->next = s->free_pkts;
	s->free_pkts = p;
	s->pkts_live--;
}

/* --- randomness (xoshiro256**; sim_build() seeds it with splitmix64, lib/hash.h) ------------------- */

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(struct sim *s)
{
	uint64_t *r = s->rng;
	uint64_t result = rotl(r[1] * 5, 7) * 9;
	uint64_t t = r[1] << 17;

	r[2] ^= r[0];
	r[3] ^= r[1];
	r[1] ^= r[2];
	r[0] ^= r[3];
	r[2] ^= t;
	r[3] = rotl(r[3], 45);
	return result;
}

double sim_rng_uniform(struct sim *s)
{
	return (double)(sim_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* --- queues -------------------------------------------------------------------------------------- */

static inline void queue_account(struct sim *s, struct queue *q)
{
	q->area += (long double)q->bytes * (long double)(s->now - q->last_change);
	q->last_change = s->now;
}

void sim_queue_push(struct sim *s, struct queue *q, struct pkt *p)
{
	queue_account(s, q);
	p->next = NULL;
	if (q->tail)
		q->tail->next = p;
	else
		q->head = p;
	q->tail = p;
	q->bytes += p->bytes;
	q->n++;
	if (q->bytes > q->max_bytes)
		q->max_bytes = q->bytes;
}

struct pkt *sim_queue_pop(struct sim *s, struct queue *q)
{
	struct pkt *p = q->head;

	if (!p)
		return NULL;
	queue_account(s, q);
	q->head = p->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= p->bytes;
	q->n--;
	p->next = NULL;
	return p;
}

simtime_t sim_tx_time(const struct port *p, uint32_t bytes)
{
	return (simtime_t)((uint64_t)bytes * 8 * (uint64_t)PS_PER_S / p->rate_bps);
}
