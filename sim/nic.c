/* NICs: RC flows over go-back-N, DCQCN (reaction point at the sender, notification point at
 * the receiver), PFC honoured per priority, and receive-side faults.
 *
 * Sending: when the port is free the NIC takes the next flow round robin whose priority is not
 * paused and whose rate limiter allows a packet now; the packet is made on the spot (no per-flow
 * queues).  If none can send, one wake-up is armed for the earliest time one can.
 * Receiving: in-order packets advance rcv_nxt and are acknowledged every ack_interval packets
 * and at the end of the message; the first out-of-order packet is answered with a NAK (again
 * after nak_interval if still missing); CE-marked packets make a CNP, at most one per
 * min_time_between_cnps per flow (DCQCN paper) or per port (NVIDIA firmware).
 * DCQCN (Zhu et al. 2015; ../shared/reference §5.1, NVIDIA parameter names §3.2):
 *   on CNP  alpha <- (1-g) alpha + g; Rt <- Rc (see clamp); Rc <- Rc (1 - alpha/2^(gd-10))
 *           at most once per rate_reduce_monitor_period
 *   alpha decays by (1-g) every dce_tcp_rtt without a CNP (applied lazily)
 *   increase events every rpg_time_reset (timer) and every rpg_byte_reset bytes sent; with T
 *   and B the events of each kind since the last decrease and F = rpg_threshold:
 *   max(T,B) < F: Rc <- (Rt+Rc)/2;  min(T,B) > F: Rt += i R_HAI (i = min - F + 1);  else
 *   Rt += R_AI; Rc <- (Rt+Rc)/2.  Timers run only while the flow is below its maximum rate. */
#include <math.h>
#include <stdlib.h>

#include "sim/internal.h"

static struct port *nic_port(struct node *h)
{
	return h->ports[0];
}

/* --- the transmit list ------------------------------------------------------------------------ */

static void tx_add(struct node *h, struct flow *f)
{
	struct nic *nic = &h->nic;

	if (f->in_tx || f->done)
		return;
	if (nic->ntx == nic->captx) {
		uint32_t nc = nic->captx ? nic->captx * 2 : 8;
		struct flow **n = realloc(nic->tx, nc * sizeof(*n));

		if (!n)
			abort();
		nic->tx = n;
		nic->captx = nc;
	}
	nic->tx[nic->ntx++] = f;
	f->in_tx = true;
}

static void tx_remove(struct node *h, struct flow *f)
{
	struct nic *nic = &h->nic;

	if (!f->in_tx)
		return;
	for (uint32_t i = 0; i < nic->ntx; i++) {
		if (nic->tx[i] == f) {
			/* keep the round-robin order of the others */
			for (uint32_t k = i + 1; k < nic->ntx; k++)
				nic->tx[k - 1] = nic->tx[k];
			nic->ntx--;
			if (nic->rr > i)
				nic->rr--;
			if (nic->rr >= nic->ntx)
				nic->rr = 0;
			break;
		}
	}
	f->in_tx = false;
}

/* --- DCQCN reaction point ------------------------------------------------------------------------ */

static void alpha_decay(struct sim *s, const struct dcqcn_cfg *c, struct flow *f)
{
	int64_t n;

	if (c->alpha_period <= 0)
		return;
	n = (s->now - f->alpha_t) / c->alpha_period;
	if (n > 0) {
		f->alpha *= pow(1.0 - c->g, (double)n);
		f->alpha_t += n * c->alpha_period;
	}
}

static void rate_increase(struct sim *s, const struct dcqcn_cfg *c, struct flow *f)
{
	uint32_t F = c->threshold, hi = f->t_events > f->b_events ? f->t_events : f->b_events,
		 lo = f->t_events < f->b_events ? f->t_events : f->b_events;

	(void)s;
	if (hi < F) {
		/* fast recovery */
	} else if (lo > F) {
		f->rt += (double)(lo - F + 1) * c->hai_bps;
	} else {
		f->rt += c->ai_bps;
	}
	if (f->rt > c->max_rate_bps)
		f->rt = c->max_rate_bps;
	f->rc = (f->rt + f->rc) / 2;
	if (f->rc > c->max_rate_bps)
		f->rc = c->max_rate_bps;
	f->increased_since_dec = true;
}

static bool below_max(const struct dcqcn_cfg *c, const struct flow *f)
{
	return f->rc < c->max_rate_bps * (1 - 1e-9);
}

static void inc_timer_fn(struct sim *s, struct timer *t)
{
	struct flow *f = t->owner;
	const struct dcqcn_cfg *c = &f->src->nic.cc;

	if (f->done)
		return;
	f->t_events++;
	rate_increase(s, c, f);
	if (below_max(c, f))
		sim_timer_arm(s, &f->t_inc, s->now + c->timer);
}

static void rate_decrease(struct sim *s, const struct dcqcn_cfg *c, struct flow *f)
{
	double old = f->rc, factor = f->alpha / (double)(1u << (c->gd > 10 ? c->gd - 10 : 0));

	if (c->clamp || f->increased_since_dec || f->last_decrease < 0)
		f->rt = f->rc;
	f->rc *= 1.0 - factor;
	if (f->rc < old * c->min_dec_fac)
		f->rc = old * c->min_dec_fac;
	if (f->rc < c->min_rate_bps)
		f->rc = c->min_rate_bps;
	f->last_decrease = s->now;
	f->increased_since_dec = false;
	f->dec_pending = false;
	f->t_events = f->b_events = 0;
	f->bytes_since = 0;
	sim_timer_arm(s, &f->t_inc, s->now + c->timer);
}

static void dec_timer_fn(struct sim *s, struct timer *t)
{
	struct flow *f = t->owner;

	if (f->dec_pending && !f->done)
		rate_decrease(s, &f->src->nic.cc, f);
}

static void on_cnp(struct sim *s, struct flow *f)
{
	const struct dcqcn_cfg *c = &f->src->nic.cc;

	f->src->nic.rp_cnp_handled++;
	if (!c->enabled || f->done)
		return;
	alpha_decay(s, c, f);
	if (!f->first_cnp_seen) {
		f->first_cnp_seen = true;
		if (c->first_cnp_rate_bps > 0)
			f->rc = f->rt = c->first_cnp_rate_bps;
	}
	f->alpha = (1.0 - c->g) * f->alpha + c->g;
	f->alpha_t = s->now;
	if (c->monitor > 0 && f->last_decrease >= 0 && s->now - f->last_decrease < c->monitor) {
		if (!f->dec_pending) {
			f->dec_pending = true;
			sim_timer_arm(s, &f->t_dec, f->last_decrease + c->monitor);
		}
		return;
	}
	rate_decrease(s, c, f);
}

/* --- sending ---------------------------------------------------------------------------------------- */

static void send_ctrl(struct sim *s, struct node *h, struct flow *f, uint8_t type, uint32_t psn)
{
	struct pkt *k = sim_pkt_new(s);

	k->type = type;
	k->flow = f;
	f->refs++;
	k->psn = psn;
	k->bytes = CTRL_BYTES;
	k->prio = type == PKT_CNP ? h->nic.cc.cnp_prio : h->nic.ctrl_prio;
	k->ttl = 64;
	s->st.ctrl_packets++;
	sim_port_send_ctrl(s, nic_port(h), k);
}

static void rto_fn(struct sim *s, struct timer *t);

static struct pkt *make_data(struct sim *s, struct node *h, struct flow *f, struct port *p)
{
	const struct dcqcn_cfg *c = &h->nic.cc;
	struct pkt *k = sim_pkt_new(s);
	uint32_t psn = f->snd_nxt++;
	uint32_t payload = psn + 1 == f->npkts ? (uint32_t)(f->bytes - (uint64_t)psn * f->mtu) : f->mtu;
	simtime_t gap;

	k->type = PKT_DATA;
	k->flow = f;
	f->refs++;
	k->psn = psn;
	k->bytes = (uint16_t)(payload + HDR_BYTES);
	k->prio = f->prio;
	k->ecn = ECN_ECT;
	k->ttl = 64;
	k->last = psn + 1 == f->npkts;
	if (psn < f->max_sent)
		h->nic.retransmitted++;
	else
		f->max_sent = psn + 1;
	h->nic.roce_tx_bytes += k->bytes;
	h->nic.roce_tx_packets++;
	s->st.data_packets++;
	/* the rate limiter: the next packet may leave one packet time at Rc later */
	if (c->enabled && below_max(c, f)) {
		gap = (simtime_t)((double)k->bytes * 8.0 * (double)PS_PER_S / f->rc);
		f->next_send = (f->next_send > s->now ? f->next_send : s->now) + gap;
		f->bytes_since += k->bytes;
		if (f->bytes_since >= c->byte_reset) {
			f->bytes_since -= c->byte_reset;
			f->b_events++;
			rate_increase(s, c, f);
		}
	} else {
		f->next_send = s->now;
	}
	if (f->snd_nxt >= f->npkts)
		tx_remove(h, f);
	if (!f->rto.armed)
		sim_timer_arm(s, &f->rto, s->now + h->nic.rto);
	(void)p;
	return k;
}

struct pkt *sim_nic_next_packet(struct sim *s, struct port *p, simtime_t *ret_wake)
{
	struct node *h = p->node;
	struct nic *nic = &h->nic;
	simtime_t earliest = 0;

	for (uint32_t n = 0; n < nic->ntx; n++) {
		uint32_t i = (nic->rr + n) % nic->ntx;
		struct flow *f = nic->tx[i];
		simtime_t when = 0;

		if (sim_port_paused(s, p, f->prio))
			when = p->paused_until[f->prio];
		else if (f->next_send > s->now)
			when = f->next_send;
		if (when) {
			if (!earliest || when < earliest)
				earliest = when;
			continue;
		}
		nic->rr = (i + 1) % nic->ntx;
		return make_data(s, h, f, p);
	}
	*ret_wake = earliest;
	return NULL;
}

/* --- flows ------------------------------------------------------------------------------------------ */

static void flow_complete(struct sim *s, struct flow *f)
{
	f->done = true;
	f->finish = s->now;
	if (f->transient)
		s->transient_done += !f->is_probe;
	else
		s->st.flows_done++;
	tx_remove(f->src, f);
	sim_timer_cancel(&f->rto);
	sim_timer_cancel(&f->t_inc);
	sim_timer_cancel(&f->t_dec);
	for (struct flow *n = f->then; n; n = NULL) {
		/* the next step of an all-reduce ring starts when its input arrived */
		if (n->waiting && --n->waiting == 0 && !n->started) {
			n->start = s->now;
			sim_nic_flow_start(s, n);
		}
	}
	sim_flow_completed(s, f);
}

static void rto_fn(struct sim *s, struct timer *t)
{
	struct flow *f = t->owner;
	struct node *h = f->src;

	if (f->done)
		return;
	if (s->now < f->last_progress + h->nic.rto) {
		sim_timer_arm(s, &f->rto, f->last_progress + h->nic.rto);
		return;
	}
	if (f->snd_una >= f->max_sent && f->snd_nxt >= f->npkts)
		return;
	/* no progress for a whole timeout: go back to the oldest unacknowledged packet */
	h->nic.local_ack_timeout_err++;
	f->snd_nxt = f->snd_una;
	f->last_progress = s->now;
	tx_add(h, f);
	sim_timer_arm(s, &f->rto, s->now + h->nic.rto);
	sim_port_kick(s, nic_port(h));
}

void sim_nic_flow_start(struct sim *s, struct flow *f)
{
	const struct dcqcn_cfg *c = &f->src->nic.cc;

	f->started = true;
	if (!f->transient)
		s->flows_started++;
	f->rc = f->rt = c->max_rate_bps;
	f->alpha = c->initial_alpha;
	f->alpha_t = s->now;
	f->last_decrease = -1;
	f->last_progress = s->now;
	f->last_cnp = f->last_nak = -PS_PER_S;
	f->next_send = s->now;
	sim_timer_init(&f->rto, rto_fn, f, 0);
	sim_timer_init(&f->t_inc, inc_timer_fn, f, 0);
	sim_timer_init(&f->t_dec, dec_timer_fn, f, 0);
	if (f->npkts == 0) {
		flow_complete(s, f);
		return;
	}
	tx_add(f->src, f);
	sim_port_kick(s, nic_port(f->src));
}

/* --- receiving ----------------------------------------------------------------------------------------- */

static void process_data(struct sim *s, struct node *h, struct pkt *k)
{
	struct nic *nic = &h->nic;
	struct flow *f = k->flow;

	nic->roce_rx_bytes += k->bytes;
	nic->roce_rx_packets++;
	if (k->ecn & ECN_CE) {
		simtime_t *last = nic->cc.cnp_per_port ? &nic->last_cnp : &f->last_cnp;

		nic->np_ecn_marked++;
		if (s->now - *last >= nic->cc.cnp_interval) {
			*last = s->now;
			nic->np_cnp_sent++;
			send_ctrl(s, h, f, PKT_CNP, 0);
		}
	}
	if (k->psn == f->rcv_nxt) {
		f->rcv_nxt++;
		f->since_ack++;
		f->nak_outstanding = false;
		if (f->rcv_nxt == f->npkts)
			f->rx_done = s->now;
		if (f->since_ack >= nic->ack_interval || f->rcv_nxt == f->npkts) {
			f->since_ack = 0;
			send_ctrl(s, h, f, PKT_ACK, f->rcv_nxt);
		}
	} else if (k->psn > f->rcv_nxt) {
		nic->out_of_sequence++;
		if (!f->nak_outstanding || s->now - f->last_nak >= nic->nak_interval) {
			f->nak_outstanding = true;
			f->last_nak = s->now;
			send_ctrl(s, h, f, PKT_NAK, f->rcv_nxt);
		}
	} else {
		/* already have it: a retransmission after a lost ACK */
		nic->duplicate_request++;
		if (k->last)
			send_ctrl(s, h, f, PKT_ACK, f->rcv_nxt);
	}
}

static void rx_queue_check(struct sim *s, struct node *h)
{
	struct nic *nic = &h->nic;
	struct port *p = nic_port(h);

	for (int pr = 0; pr < NPRIO; pr++) {
		if (!(p->pfc.enabled & (1u << pr)) || (nic->storm && pr == nic->storm_prio))
			continue;
		if (!p->xoff[pr] && p->shared[pr] > nic->rx_xoff)
			sim_port_send_pfc(s, p, (uint8_t)pr, true);
		else if (p->xoff[pr] && p->shared[pr] <= nic->rx_xon)
			sim_port_send_pfc(s, p, (uint8_t)pr, false);
	}
}

/* The receive pipeline of a slowed host: packets wait in the NIC and leave at rx_rate. */
static struct queue *rxq_of(struct node *h)
{
	return &nic_port(h)->q[0];
}

/* How long the receiver takes to take in the packet at the head of its queue. */
static simtime_t drain_time(const struct nic *nic, const struct queue *q)
{
	if (nic->rx_rate_bps > 0)
		return (simtime_t)((double)q->head->bytes * 8 * (double)PS_PER_S / nic->rx_rate_bps);
	return 0; /* infinitely fast */
}

static void rx_drain_fn(struct sim *s, struct timer *t)
{
	struct node *h = t->owner;
	struct nic *nic = &h->nic;
	struct queue *q = rxq_of(h);
	struct pkt *k = sim_queue_pop(s, q);

	if (!k)
		return;
	nic_port(h)->shared[k->prio] -= k->bytes;
	process_data(s, h, k);
	sim_pkt_free(s, k);
	rx_queue_check(s, h);
	if (q->head)
		sim_timer_arm(s, &nic->rx_timer, s->now + drain_time(nic, q));
}

void sim_nic_rx(struct sim *s, struct port *in, struct pkt *k)
{
	struct node *h = in->node;
	struct nic *nic = &h->nic;

	switch (k->type) {
	case PKT_DATA:
		if (k->flow->dst != h)
			break; /* misrouted */
		if (nic->rx_rate_bps > 0 || rxq_of(h)->head) {
			struct queue *q = rxq_of(h);

			if (q->bytes + k->bytes > 4 * nic->rx_xoff + 65536) {
				nic->rx_discards++;
				break;
			}
			in->shared[k->prio] += k->bytes;
			sim_queue_push(s, q, k);
			if (!nic->rx_timer.armed)
				sim_timer_arm(s, &nic->rx_timer, s->now + drain_time(nic, q));
			rx_queue_check(s, h);
			return;
		}
		process_data(s, h, k);
		break;
	case PKT_ACK:
	case PKT_NAK: {
		struct flow *f = k->flow;

		if (f->src != h || f->done)
			break;
		if (k->type == PKT_NAK)
			nic->packet_seq_err++;
		if (k->psn > f->snd_una) {
			f->snd_una = k->psn;
			f->last_progress = s->now;
		}
		if (f->snd_una >= f->npkts) {
			flow_complete(s, f);
			break;
		}
		if (k->type == PKT_NAK && k->psn >= f->snd_una && k->psn < f->snd_nxt) {
			f->snd_nxt = k->psn; /* go back */
			tx_add(h, f);
			sim_port_kick(s, nic_port(h));
		}
		if (f->snd_nxt < f->snd_una)
			f->snd_nxt = f->snd_una;
		break;
	}
	case PKT_CNP:
		if (k->flow->src == h)
			on_cnp(s, k->flow);
		break;
	default:
		break;
	}
	sim_pkt_free(s, k);
}

/* --- faults ---------------------------------------------------------------------------------------------- */

void sim_nic_set_storm(struct sim *s, struct node *h, bool on, uint8_t prio)
{
	struct nic *nic = &h->nic;

	nic->storm = on;
	nic->storm_prio = prio;
	/* a stalled receive pipeline: the NIC keeps pausing its switch port */
	sim_port_send_pfc(s, nic_port(h), prio, on);
	if (!on)
		rx_queue_check(s, h);
}

void sim_nic_set_rx_rate(struct sim *s, struct node *h, double bps)
{
	struct nic *nic = &h->nic;

	nic->rx_rate_bps = bps;
	if (bps <= 0) {
		/* back to full speed: what waits is processed now */
		while (rxq_of(h)->head)
			rx_drain_fn(s, &nic->rx_timer);
		sim_timer_cancel(&nic->rx_timer);
	}
}

/* Applies a configuration (at start, or changed while running: flows keep their state). */
void sim_nic_configure(struct node *n, const struct sim_nic_cfg *c)
{
	struct nic *nic = &n->nic;
	struct port *p = nic_port(n);
	double line = (double)p->rate_bps;

	nic->cfg = *c;
	nic->cc = (struct dcqcn_cfg){
		.enabled = c->dcqcn,
		.line_rate_bps = p->rate_bps,
		.max_rate_bps = c->rpg_max_rate_mbps > 0 && c->rpg_max_rate_mbps * 1e6 < line
					? c->rpg_max_rate_mbps * 1e6
					: line,
		.min_rate_bps = c->rpg_min_rate_mbps * 1e6,
		.ai_bps = c->rpg_ai_rate_mbps * 1e6,
		.hai_bps = c->rpg_hai_rate_mbps * 1e6,
		.g = (1024.0 - c->dce_tcp_g) / 1024.0,
		.alpha_period = (simtime_t)(c->dce_tcp_rtt_us * PS_PER_US),
		.initial_alpha = c->initial_alpha_value / 1024.0,
		.timer = (simtime_t)(c->rpg_time_reset_us * PS_PER_US),
		/* rpg_byte_reset counts 64-byte units: NVIDIA documents "bytes", but 32767 bytes
		 * (the default) would give a fast-recovery event every 32 KB and undo every rate
		 * cut within microseconds; 64-byte units (2 MB by default) agree with the byte
		 * counters of the DCQCN paper (10 MB) and its author's simulator (300 KB).
		 * ../shared/reference/rdma-fabric-facts.md, Appendix B. */
		.byte_reset = c->rpg_byte_reset * 64,
		.threshold = c->rpg_threshold,
		.monitor = (simtime_t)(c->rate_reduce_monitor_period_us * PS_PER_US),
		.min_dec_fac = c->rpg_min_dec_fac / 100.0,
		.gd = (int)c->rpg_gd,
		.clamp = c->clamp_tgt_rate,
		.clamp_ati = c->clamp_tgt_rate_ati,
		.first_cnp_rate_bps = c->rate_to_set_on_first_cnp_mbps * 1e6,
		.cnp_interval = (simtime_t)(c->min_time_between_cnps_us * PS_PER_US),
		.cnp_per_port = c->cnp_per_port,
		.cnp_prio = c->cnp_prio,
	};
	nic->ack_interval = c->ack_interval ? c->ack_interval : 1;
	nic->rto = (simtime_t)(c->rto_us * PS_PER_US);
	nic->nak_interval = (simtime_t)(c->nak_interval_us * PS_PER_US);
	nic->ctrl_prio = c->cnp_prio;
	p->pfc.enabled = c->pfc_enabled;
}

void sim_nic_init(struct sim *s, struct node *n, const struct sim_nic_cfg *c)
{
	struct nic *nic = &n->nic;
	struct port *p = nic_port(n);

	p->pfc = (struct pfc_cfg){ .quanta = 65535 };
	sim_nic_configure(n, c);
	nic->last_cnp = -PS_PER_S;
	/* pause the switch when the receive pipeline holds more than ~2 BDP of the host link */
	nic->rx_xoff = (uint64_t)((double)p->rate_bps / 8 * (double)p->delay / (double)PS_PER_S) * 2 +
		       4 * 1024;
	nic->rx_xon = nic->rx_xoff / 2;
	sim_timer_init(&nic->rx_timer, rx_drain_fn, n, 0);
	(void)s;
}
