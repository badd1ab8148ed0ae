/* Ground truth for judging the PFC controllers: the deadlocks the simulation really holds.
 *
 * A switch egress queue is frozen when it holds packets, is paused by its peer and has sent no
 * data for at least min_frozen.  The exact wait-for graph needs what no device reports: which
 * packets in which queues came in through which ingress port (pkt->in_port).  A frozen queue
 * A->B waits on B's ingress from A, that is on every queue of B holding a packet that came in
 * through it; a strongly connected component of two or more frozen queues is a deadlock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/internal.h"
#include "lib/vec.h"

struct tq {
	struct port *p;
	uint8_t prio;
};

struct tstate {
	struct tq *v;
	uint32_t nv;
	uint32_t *index, *low, *comp, *stack;
	bool *on;
	uint32_t idx, sp, ncomp;
};

static int find(const struct tstate *t, const struct port *p, uint8_t prio)
{
	for (uint32_t i = 0; i < t->nv; i++)
		if (t->v[i].p == p && t->v[i].prio == prio)
			return (int)i;
	return -1;
}

/* Successors of u: the frozen queues of the peer node holding a packet from u's peer port. */
static void strong(struct tstate *t, uint32_t u)
{
	struct port *in = t->v[u].p->peer;
	struct node *b = in->node;

	t->index[u] = t->low[u] = t->idx++;
	t->stack[t->sp++] = u;
	t->on[u] = true;
	if (b->kind == NODE_SWITCH)
		for (uint16_t k = 0; k < b->nports; k++) {
			struct port *q = b->ports[k];
			int w = find(t, q, t->v[u].prio);
			struct pkt *pk;
			bool from = false;

			if (w < 0)
				continue;
			for (pk = q->q[t->v[u].prio].head; pk && !from; pk = pk->next)
				from = pk->in_port == in;
			if (!from)
				continue;
			if (t->index[w] == UINT32_MAX) {
				strong(t, (uint32_t)w);
				if (t->low[w] < t->low[u])
					t->low[u] = t->low[w];
			} else if (t->on[w] && t->index[w] < t->low[u]) {
				t->low[u] = t->index[w];
			}
		}
	if (t->low[u] == t->index[u]) {
		uint32_t w;

		do {
			w = t->stack[--t->sp];
			t->on[w] = false;
			t->comp[w] = t->ncomp;
		} while (w != u);
		t->ncomp++;
	}
}

json_t *sim_deadlocks(const struct sim *s, int64_t min_frozen_ps)
{
	struct tstate t = { 0 };
	json_t *out = json_array();
	size_t cap = 0;

	for (uint32_t i = 0; i < s->nports; i++) {
		struct port *p = s->ports[i];

		if (p->node->kind != NODE_SWITCH)
			continue;
		for (int pr = 0; pr < NPRIO; pr++) {
			if (!p->q[pr].head || !sim_port_paused(s, p, (uint8_t)pr) ||
			    s->now - p->last_tx[pr] < min_frozen_ps)
				continue;
			if (vec_room((void **)&t.v, &cap, t.nv, sizeof(*t.v)) < 0)
				abort(); /* as the simulator does when it runs out of memory */
			t.v[t.nv++] = (struct tq){ p, (uint8_t)pr };
		}
	}
	if (t.nv) {
		t.index = malloc(t.nv * sizeof(*t.index));
		t.low = malloc(t.nv * sizeof(*t.low));
		t.comp = malloc(t.nv * sizeof(*t.comp));
		t.stack = malloc(t.nv * sizeof(*t.stack));
		t.on = calloc(t.nv, sizeof(*t.on));
		if (!t.index || !t.low || !t.comp || !t.stack || !t.on)
			abort();
		for (uint32_t i = 0; i < t.nv; i++)
			t.index[i] = UINT32_MAX;
		for (uint32_t i = 0; i < t.nv; i++)
			if (t.index[i] == UINT32_MAX)
				strong(&t, i); /* recursion depth: at most the frozen queues */
		for (uint32_t c = 0; c < t.ncomp; c++) {
			json_t *ports = json_array();
			simtime_t since = 0;
			uint8_t prio = 0;

			for (uint32_t i = 0; i < t.nv; i++)
				if (t.comp[i] == c) {
					char buf[80];

					snprintf(buf, sizeof(buf), "%s:%s", t.v[i].p->node->name, t.v[i].p->name);
					json_array_append_new(ports, json_string(buf));
					if (t.v[i].p->last_tx[t.v[i].prio] > since)
						since = t.v[i].p->last_tx[t.v[i].prio];
					prio = t.v[i].prio;
				}
			if (json_array_size(ports) < 2) {
				json_decref(ports);
				continue;
			}
			json_array_append_new(out, json_pack("{s:o,s:i,s:f}", "ports", ports, "priority", prio,
							     "frozen_since_us", (double)since / 1e6));
		}
	}
	free(t.v);
	free(t.index);
	free(t.low);
	free(t.comp);
	free(t.stack);
	free(t.on);
	return out;
}
