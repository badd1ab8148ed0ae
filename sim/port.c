/* Ports: the transmitter of every link end, and PFC (IEEE 802.1Qbb) on both sides.
 *
 * A free port takes the next packet (control frames first, then the switch's egress queues or
 * the NIC's flows) and schedules two events: transmission done (the port is free again) and
 * arrival at the peer.  A priority paused by the peer is skipped; the pause lasts the frame's
 * quanta (512 bit times each at the link rate) unless refreshed, or ends with an XON (quanta 0).
 * The receiving side sends XOFF/XON from its buffer accounting (switch.c, nic.c) and refreshes
 * XOFF at half the pause time while still congested. */
#include <stdlib.h>

#include "sim/internal.h"

static simtime_t quanta_time(const struct port *p, uint16_t quanta)
{
	return (simtime_t)((uint64_t)quanta * PAUSE_QUANTUM_BITS * (uint64_t)PS_PER_S / p->rate_bps);
}

bool sim_port_paused(const struct sim *s, const struct port *p, uint8_t prio)
{
	return p->paused_until[prio] > s->now;
}

simtime_t sim_port_paused_time(const struct sim *s, const struct port *p, uint8_t prio)
{
	simtime_t end = p->paused_until[prio] < s->now ? p->paused_until[prio] : s->now;

	return p->paused_acc[prio] + (end > p->pause_mark[prio] ? end - p->pause_mark[prio] : 0);
}

simtime_t sim_port_xoff_time(const struct sim *s, const struct port *p, uint8_t prio)
{
	return p->xoff_acc[prio] + (p->xoff[prio] ? s->now - p->xoff_since[prio] : 0);
}

static struct pkt *next_packet(struct sim *s, struct port *p, simtime_t *wake)
{
	if (p->ctrl.head)
		return sim_queue_pop(s, &p->ctrl);
	if (p->node->kind == NODE_SWITCH)
		return sim_switch_dequeue(s, p, wake);
	return sim_nic_next_packet(s, p, wake);
}

/* Whether the port may have another packet to send once it is free. */
static bool has_more(const struct port *p)
{
	if (p->ctrl.head)
		return true;
	if (p->node->kind == NODE_HOST)
		return p->node->nic.ntx > 0;
	for (int pr = 0; pr < NPRIO; pr++)
		if (p->q[pr].head)
			return true;
	return false;
}

void sim_port_kick(struct sim *s, struct port *p)
{
	simtime_t wake = 0, t;
	struct pkt *k;

	if (p->busy) {
		if (s->now < p->busy_until) {
			/* something to send while serializing: be told when the port is free.  A port
			 * with nothing queued skips that event altogether. */
			if (!p->txdone_pending) {
				p->txdone_pending = true;
				sim_evq_push(s, p->busy_until, EV_TX_DONE, p, 0);
			}
			return;
		}
		p->busy = false;
	}
	if (!p->link->up)
		return;
	k = next_packet(s, p, &wake);
	if (!k) {
		if (wake > s->now)
			sim_timer_arm(s, &p->wake, wake);
		return;
	}
	t = sim_tx_time(p, k->bytes);
	p->busy = true;
	p->busy_until = s->now + t;
	if (has_more(p) && !p->txdone_pending) {
		p->txdone_pending = true;
		sim_evq_push(s, p->busy_until, EV_TX_DONE, p, 0);
	}
	if (k->type != PKT_PFC) {
		p->c.tx_bytes += k->bytes;
		p->c.tx_packets++;
		p->c.prio_tx_bytes[k->prio] += k->bytes;
		p->c.prio_tx_packets[k->prio]++;
	}
	if (p->link->loss > 0 && k->type != PKT_PFC && sim_rng_uniform(s) < p->link->loss) {
		p->c.wire_losses++;
		sim_pkt_free(s, k);
		return;
	}
	k->to = p->peer;
	sim_evq_push(s, s->now + t + p->delay, EV_ARRIVE, k, 0);
}

/* EV_TX_DONE */
static void tx_done(struct sim *s, void *obj)
{
	struct port *p = obj;

	p->txdone_pending = false;
	sim_port_kick(s, p);
}

static void wake_fn(struct sim *s, struct timer *t)
{
	sim_port_kick(s, t->owner);
}

void sim_port_send_ctrl(struct sim *s, struct port *p, struct pkt *k)
{
	sim_queue_push(s, &p->ctrl, k);
	sim_port_kick(s, p);
}

static void refresh_fn(struct sim *s, struct timer *t)
{
	struct port *p = t->owner;
	uint8_t prio = (uint8_t)t->arg;

	if (p->xoff[prio])
		sim_port_send_pfc(s, p, prio, true);
}

void sim_port_send_pfc(struct sim *s, struct port *p, uint8_t prio, bool xoff)
{
	struct pkt *k;
	uint16_t quanta = xoff ? (p->pfc.quanta ? p->pfc.quanta : 65535) : 0;

	if (xoff && !p->xoff[prio]) {
		p->xoff[prio] = true;
		p->xoff_since[prio] = s->now;
	} else if (!xoff && p->xoff[prio]) {
		p->xoff[prio] = false;
		p->xoff_acc[prio] += s->now - p->xoff_since[prio];
		sim_timer_cancel(&p->refresh[prio]);
	}
	if (!p->link->up)
		return;
	k = sim_pkt_new(s);
	k->type = PKT_PFC;
	k->bytes = CTRL_BYTES;
	k->pfc_prio = prio;
	k->quanta = quanta;
	k->prio = 7;
	/* PFC frames go before any other control frame */
	k->next = p->ctrl.head;
	p->ctrl.head = k;
	if (!p->ctrl.tail)
		p->ctrl.tail = k;
	p->ctrl.bytes += k->bytes;
	p->ctrl.n++;
	p->c.pfc_tx_frames[prio]++;
	if (xoff)
		/* still congested at half the pause time: say it again */
		sim_timer_arm(s, &p->refresh[prio], s->now + quanta_time(p, quanta) / 2);
	sim_port_kick(s, p);
}

static void rx_pfc(struct sim *s, struct port *p, const struct pkt *k)
{
	uint8_t prio = k->pfc_prio;
	bool was_paused = sim_port_paused(s, p, prio);
	simtime_t end = p->paused_until[prio] < s->now ? p->paused_until[prio] : s->now;

	p->c.pfc_rx_frames[prio]++;
	if (!(p->pfc.enabled & (1u << prio)))
		return; /* PFC is off for that priority here: the frame is counted, not obeyed */

	if (end > p->pause_mark[prio])
		p->paused_acc[prio] += end - p->pause_mark[prio];
	p->pause_mark[prio] = s->now;
	p->paused_until[prio] = s->now + quanta_time(p, k->quanta);
	if (!k->quanta) {
		if (was_paused)
			p->c.pfc_rx_transitions[prio]++;
		sim_port_kick(s, p);
	}
}

/* The link went down: what waits on this port is lost; the peer side too. */
void sim_port_link_down(struct sim *s, struct port *p)
{
	struct pkt *k;

	while ((k = sim_queue_pop(s, &p->ctrl)))
		sim_pkt_free(s, k);
	if (p->node->kind == NODE_SWITCH) {
		for (int pr = 0; pr < NPRIO; pr++) {
			while ((k = sim_queue_pop(s, &p->q[pr]))) {
				p->c.tx_discards++;
				sim_switch_release(s, k);
				sim_pkt_free(s, k);
			}
		}
	}
	/* pauses in either direction end with the link */
	for (int pr = 0; pr < NPRIO; pr++) {
		if (p->xoff[pr]) {
			p->xoff[pr] = false;
			p->xoff_acc[pr] += s->now - p->xoff_since[pr];
			sim_timer_cancel(&p->refresh[pr]);
		}
		if (sim_port_paused(s, p, pr)) {
			p->paused_acc[pr] += s->now - p->pause_mark[pr];
			p->pause_mark[pr] = s->now;
			p->paused_until[pr] = s->now;
		}
	}
	sim_timer_cancel(&p->wake);
}

/* EV_ARRIVE */
static void deliver(struct sim *s, void *obj)
{
	struct pkt *k = obj;
	struct port *p = k->to;

	if (!p->link->up) {
		p->peer->c.tx_discards++;
		sim_pkt_free(s, k);
		return;
	}
	if (k->type == PKT_PFC) {
		rx_pfc(s, p, k);
		sim_pkt_free(s, k);
		return;
	}
	p->c.rx_bytes += k->bytes;
	p->c.rx_packets++;
	p->c.prio_rx_bytes[k->prio] += k->bytes;
	p->c.prio_rx_packets[k->prio]++;
	if (p->node->kind == NODE_SWITCH)
		sim_switch_rx(s, p, k);
	else
		sim_nic_rx(s, p, k);
}

void sim_port_init(struct port *p)
{
	sim_timer_init(&p->wake, wake_fn, p, 0);
	for (int pr = 0; pr < NPRIO; pr++)
		sim_timer_init(&p->refresh[pr], refresh_fn, p, (uint32_t)pr);
}

void sim_port_register(struct sim *s)
{
	sim_ev_register(s, EV_TX_DONE, tx_done);
	sim_ev_register(s, EV_ARRIVE, deliver);
}
