/* Switches: forwarding (shortest paths, ECMP by flow hash, static overrides), a shared buffer
 * with per-ingress-port/priority accounting, PFC generation with a static or dynamic (alpha)
 * threshold and headroom, egress queues per priority (strict or round robin) and ECN marking by
 * RED on the instantaneous queue at dequeue.
 *
 * Buffer model (as in the HPCC and DCQCN simulators, ../shared/reference §4.3):
 *   buffer = headroom (per lossless ingress port/priority) + reserve (per port/priority) + shared
 *   an arriving packet is counted against its ingress port and priority: in the shared part
 *   while that port/priority holds less than reserve + threshold, where threshold is static
 *   (xoff_bytes) or 2^alpha_shift x the free shared buffer; a lossless priority then overflows
 *   into its headroom and XOFF goes upstream; a lossy priority drops.  XON once the headroom is
 *   empty and the port/priority is xon_offset below the threshold. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "sim/internal.h"

static uint64_t threshold(const struct swtch *sw, const struct port *in)
{
	uint64_t free_shared = sw->shared_size > sw->shared_used ? sw->shared_size - sw->shared_used : 0;

	if (!in->pfc.dynamic)
		return in->pfc.xoff_bytes;
	return in->pfc.alpha_shift >= 0 ? free_shared << in->pfc.alpha_shift
					: free_shared >> -in->pfc.alpha_shift;
}

static bool lossless(const struct port *in, uint8_t prio)
{
	return in->pfc.enabled & (1u << prio);
}

static uint64_t headroom_of(const struct port *p)
{
	uint64_t bdp;

	if (p->pfc.headroom)
		return p->pfc.headroom;
	/* data in flight while XOFF travels up and the peer reacts: 3 x (rate x delay), plus the
	 * two largest frames that cannot be cut off (HPCC simulator's rule) */
	bdp = (uint64_t)((double)p->rate_bps / 8 * (double)p->delay / (double)PS_PER_S);
	return 3 * bdp + 2 * 9216;
}

struct port *sim_switch_next_port(const struct node *n, uint32_t dst, uint64_t flow_hash, bool data)
{
	const struct swtch *sw = &n->sw;
	const struct route_set *rs;
	uint64_t h;

	for (uint32_t i = 0; i < sw->nov; i++)
		if (sw->ov[i].dst == dst)
			return n->ports[sw->ov[i].port];
	rs = &sw->routes[dst];
	if (!rs->n)
		return NULL;
	if (rs->n == 1)
		return n->ports[sw->route_ports[rs->off]];
	/* both directions of a flow hash alike but independently per switch */
	h = hash_mix64(flow_hash ^ sw->seed ^ (data ? 0 : 0x5bd1e995));
	return n->ports[sw->route_ports[rs->off + h % rs->n]];
}

static struct port *route(struct sim *s, struct node *n, struct pkt *k, uint32_t dst)
{
	(void)s;
	return sim_switch_next_port(n, dst, k->flow->hash, k->type == PKT_DATA);
}

static void maybe_xon(struct sim *s, struct swtch *sw, struct port *in, uint8_t pr)
{
	uint64_t thr = sw->reserve + threshold(sw, in);

	if (in->xoff[pr] && in->hdrm[pr] == 0 && in->shared[pr] + in->pfc.xon_offset <= thr)
		sim_port_send_pfc(s, in, pr, false);
}

void sim_switch_release(struct sim *s, struct pkt *k)
{
	struct port *in = k->in_port;
	struct swtch *sw;
	uint8_t pr = k->prio;

	if (!in || !k->acct)
		return;
	sw = &in->node->sw;
	if (k->acct == 2) {
		in->hdrm[pr] -= k->bytes;
	} else {
		in->shared[pr] -= k->bytes;
		sw->shared_used -= k->bytes;
	}
	k->acct = 0;
	if (in->xoff[pr])
		maybe_xon(s, sw, in, pr);
}

/* Counts the packet against its ingress port/priority; false: no room, drop it. */
static bool admit(struct sim *s, struct swtch *sw, struct port *in, struct pkt *k)
{
	uint8_t pr = k->prio;
	uint64_t b = k->bytes, thr = sw->reserve + threshold(sw, in);
	bool fits_shared = in->shared[pr] + b <= thr && sw->shared_used + b <= sw->shared_size;

	k->in_port = in;
	if (fits_shared && !(lossless(in, pr) && in->hdrm[pr])) {
		in->shared[pr] += b;
		sw->shared_used += b;
		k->acct = 1;
	} else if (lossless(in, pr) && in->hdrm[pr] + b <= headroom_of(in)) {
		in->hdrm[pr] += b;
		k->acct = 2;
	} else {
		return false;
	}
	if (lossless(in, pr) && !in->xoff[pr] && (in->hdrm[pr] || in->shared[pr] >= thr))
		sim_port_send_pfc(s, in, pr, true);
	return true;
}

void sim_switch_rx(struct sim *s, struct port *in, struct pkt *k)
{
	struct node *n = in->node;
	struct swtch *sw = &n->sw;
	uint32_t dst = k->type == PKT_DATA ? k->flow->dst->hid : k->flow->src->hid;
	struct port *out;

	/* (neither is for want of buffer: phy_rx_discards, not prio_rx_buf_discards) */
	if (--k->ttl == 0) {
		sw->ttl_drops++;
		in->c.rx_ttl++;
		sim_pkt_free(s, k);
		return;
	}
	out = route(s, n, k, dst);
	if (!out) {
		in->c.rx_noroute++;
		sim_pkt_free(s, k);
		return;
	}
	if (!out->link->up) { /* dropped at that egress, its link down (not for want of buffer) */
		out->c.tx_discards++;
		sim_pkt_free(s, k);
		return;
	}
	if (out->wd_drop[k->prio] && k->type == PKT_DATA) {
		sim_switch_count_drop(s, n, k, true);
		out->c.tx_discards++;
		sim_pkt_free(s, k);
		return;
	}
	if (!admit(s, sw, in, k)) {
		in->c.buf_discards[k->prio]++;
		sim_switch_count_drop(s, n, k, false);
		sim_pkt_free(s, k);
		return;
	}
	sim_queue_push(s, &out->q[k->prio], k);
	if (out->q[k->prio].bytes > out->c.q_watermark[k->prio])
		out->c.q_watermark[k->prio] = out->q[k->prio].bytes;
	if (out->q[k->prio].bytes > out->c.q_watermark_periodic[k->prio])
		out->c.q_watermark_periodic[k->prio] = out->q[k->prio].bytes;
	sim_port_kick(s, out);
}

static void mark_ecn(struct sim *s, struct port *p, struct pkt *k)
{
	const struct ecn_cfg *c = &p->ecn[k->prio];
	uint64_t q = p->q[k->prio].bytes;
	double prob;

	if (!c->enabled || !(k->ecn & ECN_ECT) || q <= c->kmin)
		return;
	if (q > c->kmax)
		prob = 1.0;
	else
		prob = c->pmax * (double)(q - c->kmin) / (double)(c->kmax - c->kmin);
	if (prob >= 1.0 || sim_rng_uniform(s) < prob) {
		k->ecn |= ECN_CE;
		p->c.ecn_marked[k->prio]++;
	}
}

struct pkt *sim_switch_dequeue(struct sim *s, struct port *p, simtime_t *ret_wake)
{
	const struct swtch *sw = &p->node->sw;
	simtime_t wake = 0;
	struct pkt *k = NULL;
	int pr = -1;

	/* priorities 6 and 7 (control: CNP, ACK) are always strict */
	for (int i = NPRIO - 1; i >= 0 && pr < 0; i--) {
		if (!p->q[i].head)
			continue;
		if (sim_port_paused(s, p, (uint8_t)i)) {
			if (!wake || p->paused_until[i] < wake)
				wake = p->paused_until[i];
			continue;
		}
		if (sw->strict || i >= 6)
			pr = i;
	}
	if (pr < 0 && !sw->strict) {
		/* deficit round robin among the data priorities 0..5 */
		for (int n = 0; n < 13 && pr < 0; n++) {
			int i = p->rr;
			struct queue *q = &p->q[i];

			if (q->head && !sim_port_paused(s, p, (uint8_t)i)) {
				if (!p->turn) {
					p->deficit[i] += sw->quantum[i];
					p->turn = true;
				}
				if (p->deficit[i] >= q->head->bytes) {
					p->deficit[i] -= q->head->bytes;
					pr = i;
					break;
				}
			} else if (!q->head) {
				p->deficit[i] = 0;
			}
			p->rr = (uint8_t)((i + 1) % 6);
			p->turn = false;
		}
	}
	if (pr < 0) {
		*ret_wake = wake;
		return NULL;
	}
	k = sim_queue_pop(s, &p->q[pr]);
	if (k->type == PKT_DATA)
		p->last_tx[pr] = s->now;
	mark_ecn(s, p, k);
	sim_switch_release(s, k);
	return k;
}

int sim_set_queue_drop(struct sim *s, int dev, int port, int prio, bool on)
{
	struct port *p;
	struct pkt *k;

	if (dev < 0 || (uint32_t)dev >= s->nnodes || s->nodes[dev]->kind != NODE_SWITCH || port < 0 ||
	    port >= s->nodes[dev]->nports || prio < 0 || prio >= NPRIO)
		return -ENOENT;
	p = s->nodes[dev]->ports[port];
	p->wd_drop[prio] = on;
	if (!on) {
		sim_port_kick(s, p);
		return 0;
	}
	while ((k = sim_queue_pop(s, &p->q[prio]))) {
		sim_switch_count_drop(s, p->node, k, true);
		p->c.tx_discards++;
		sim_switch_release(s, k);
		sim_pkt_free(s, k);
	}
	return 0;
}

int64_t sim_queue_last_tx(const struct sim *s, int dev, int port, int prio)
{
	if (dev < 0 || (uint32_t)dev >= s->nnodes || port < 0 || port >= s->nodes[dev]->nports || prio < 0 ||
	    prio >= NPRIO)
		return -1;
	return s->nodes[dev]->ports[port]->last_tx[prio];
}

/* The packet's route from switch n never reaches its destination (it loops, or stops). */
static bool undeliverable(const struct sim *s, const struct node *n, const struct pkt *k)
{
	uint32_t dst = k->flow->dst->hid;

	for (uint32_t hops = 0; hops <= s->nnodes; hops++) {
		const struct port *out = sim_switch_next_port(n, dst, k->flow->hash, true);

		if (!out || !out->link->up)
			return true;
		if (out->peer->node->kind == NODE_HOST)
			return false;
		n = out->peer->node;
	}
	return true; /* more hops than nodes: a loop */
}

void sim_switch_count_drop(struct sim *s, const struct node *n, const struct pkt *k, bool watchdog)
{
	if (k->type != PKT_DATA)
		return;
	if (undeliverable(s, n, k))
		s->st.drop_bytes_looping += k->bytes;
	else if (watchdog)
		s->st.drop_bytes_wd += k->bytes;
	else
		s->st.drop_bytes_buffer += k->bytes;
}

void sim_drop_bytes(const struct sim *s, uint64_t *buffer, uint64_t *watchdog, uint64_t *looping)
{
	*buffer = s->st.drop_bytes_buffer;
	*watchdog = s->st.drop_bytes_wd;
	*looping = s->st.drop_bytes_looping;
}

/* --- routing -------------------------------------------------------------------------------- */

/* Shortest paths over up links to every host; a switch's ECMP set for a host is every port
 * toward a neighbour one hop closer.  Hosts do not forward. */
void sim_switch_routes(struct sim *s)
{
	uint32_t *dist = malloc(s->nnodes * sizeof(*dist));
	uint32_t *fifo = malloc(s->nnodes * sizeof(*fifo));
	uint32_t **lists = calloc(s->nnodes, sizeof(*lists));
	size_t *len = calloc(s->nnodes, sizeof(*len));
	size_t *cap = calloc(s->nnodes, sizeof(*cap));

	if (!dist || !fifo || !lists || !len || !cap)
		abort();
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct node *n = s->nodes[i];

		if (n->kind == NODE_SWITCH && !n->sw.routes) {
			n->sw.routes = calloc(s->nhosts, sizeof(*n->sw.routes));
			if (!n->sw.routes)
				abort();
		}
	}
	for (uint32_t h = 0; h < s->nhosts; h++) {
		struct node *dst = s->hosts[h];
		uint32_t head = 0, tail = 0;

		for (uint32_t i = 0; i < s->nnodes; i++)
			dist[i] = UINT32_MAX;
		dist[dst->id] = 0;
		fifo[tail++] = dst->id;
		while (head < tail) {
			struct node *n = s->nodes[fifo[head++]];

			if (n->kind == NODE_HOST && n != dst)
				continue;
			for (uint16_t k = 0; k < n->nports; k++) {
				struct port *p = n->ports[k];
				struct node *m = p->peer->node;

				if (!p->link->up || dist[m->id] != UINT32_MAX)
					continue;
				dist[m->id] = dist[n->id] + 1;
				fifo[tail++] = m->id;
			}
		}
		for (uint32_t i = 0; i < s->nnodes; i++) {
			struct node *n = s->nodes[i];
			uint32_t off = (uint32_t)len[i];
			uint16_t cnt = 0;

			if (n->kind != NODE_SWITCH)
				continue;
			if (dist[i] != UINT32_MAX) {
				for (uint16_t k = 0; k < n->nports; k++) {
					struct port *p = n->ports[k];
					struct node *m = p->peer->node;

					if (!p->link->up || dist[m->id] + 1 != dist[i])
						continue;
					if (m->kind == NODE_HOST && m != dst)
						continue;
					if (len[i] == cap[i]) {
						cap[i] = cap[i] ? cap[i] * 2 : 256;
						lists[i] = realloc(lists[i], cap[i] * sizeof(**lists));
						if (!lists[i])
							abort();
					}
					lists[i][len[i]++] = k;
					cnt++;
				}
			}
			n->sw.routes[h] = (struct route_set){ .off = off, .n = cnt };
		}
	}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct node *n = s->nodes[i];

		if (n->kind != NODE_SWITCH)
			continue;
		free(n->sw.route_ports);
		n->sw.route_ports = malloc((len[i] ? len[i] : 1) * sizeof(*n->sw.route_ports));
		if (!n->sw.route_ports)
			abort();
		for (size_t k = 0; k < len[i]; k++)
			n->sw.route_ports[k] = (uint16_t)lists[i][k];
		free(lists[i]);
	}
	free(lists);
	free(len);
	free(cap);
	free(fifo);
	free(dist);
}

int sim_switch_init(struct sim *s, struct node *n, const struct sim_switch_cfg *c)
{
	struct swtch *sw = &n->sw;
	uint64_t hdrm = 0, reserve;
	int lossless_prios = 0;

	sw->buffer = c->buffer_bytes;
	sw->reserve = c->reserve_bytes;
	sw->strict = c->strict;
	for (int pr = 0; pr < NPRIO; pr++)
		sw->quantum[pr] = (uint32_t)(c->weights[pr] ? c->weights[pr] : 1) * (s->p.mtu + HDR_BYTES);
	sw->seed = hash_mix64(s->p.seed ^ (0x1000 + n->id));
	for (int pr = 0; pr < NPRIO; pr++)
		lossless_prios += !!(c->pfc.enabled & (1u << pr));
	for (uint16_t k = 0; k < n->nports; k++) {
		struct port *p = n->ports[k];

		p->pfc = (struct pfc_cfg){ .enabled = c->pfc.enabled, .dynamic = c->pfc.dynamic,
					   .alpha_shift = c->pfc.alpha_shift,
					   .xoff_bytes = c->pfc.xoff_bytes,
					   .xon_offset = c->pfc.xon_offset_bytes,
					   .headroom = c->pfc.headroom_bytes, .quanta = c->pfc.quanta };
		/* headroom for every priority that could be made lossless later, too */
		hdrm += headroom_of(p) * (uint64_t)lossless_prios;
		p->ecn = calloc(NPRIO, sizeof(*p->ecn));
		if (!p->ecn)
			return -ENOMEM;
		for (int pr = 0; pr < NPRIO; pr++)
			p->ecn[pr] = (struct ecn_cfg){ .enabled = c->ecn.enabled && pr < 6,
						       .kmin = c->ecn.kmin_bytes,
						       .kmax = c->ecn.kmax_bytes, .pmax = c->ecn.pmax };
	}
	reserve = sw->reserve * n->nports * NPRIO;
	if (hdrm + reserve >= sw->buffer) {
		snprintf(s->err, sizeof(s->err),
			 "switch %s: a buffer of %llu bytes cannot hold the headroom (%llu) and "
			 "reserve (%llu) of its %u ports",
			 n->name, (unsigned long long)sw->buffer, (unsigned long long)hdrm,
			 (unsigned long long)reserve, n->nports);
		return -EINVAL;
	}
	sw->shared_size = sw->buffer - hdrm - reserve;
	return 0;
}
