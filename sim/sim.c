/* The simulator as a library: see sim.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "sim/build.h"


static void sample_fn(struct sim *s, struct timer *t)
{
	/* queue occupancy of the switches' data queues, for the percentiles of the summary */
	for (uint32_t i = 0; i < s->nports; i++) {
		struct port *p = s->ports[i];

		if (p->node->kind != NODE_SWITCH)
			continue;
		for (int pr = 0; pr < 6; pr++) {
			uint64_t b = p->q[pr].bytes;
			int e;

			if (!b)
				continue;
			e = 63 - __builtin_clzll(b);
			s->st.qhist[e][e >= 4 ? (b >> (e - 4)) & 15 : (b << (4 - e)) & 15]++;
			s->st.nq++;
			if (b > s->st.qmax)
				s->st.qmax = b;
		}
	}
	/* keep sampling while anything can still happen */
	if ((s->p.until_ps > 0 && s->now < s->p.until_ps) ||
	    (s->p.until_ps <= 0 && (s->st.flows_done < s->nflows || s->flows_started < s->nflows ||
				     s->ngens)))
		sim_timer_arm(s, t, s->now + s->sample_every);
}

int sim_load(const char *text, size_t len, const char *origin, const char *base_dir,
	     int64_t seed, int64_t until_ps, struct sim **ret, struct rf_err *e)
{
	struct sim *s = calloc(1, sizeof(*s));
	json_error_t je;
	json_t *doc;
	int r;

	(void)origin; /* the caller names the file; errors carry the JSON pointer */
	if (!s)
		return -ENOMEM;
	hmap_init(&s->names);
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		sim_free(s);
		return rf_err_set(e, -EINVAL, "BAD_SCENARIO", NULL, "malformed JSON at line %d column %d: %s",
				  je.line, je.column, je.text);
	}
	r = sim_build(s, doc, base_dir, seed, until_ps, e);
	json_decref(doc);
	if (r < 0) {
		sim_free(s);
		return r;
	}
	s->sample_every = s->p.sample_ps;
	sim_timer_init(&s->sampler, sample_fn, NULL, 0);
	sim_timer_arm(s, &s->sampler, s->sample_every);
	*ret = s;
	return 0;
}

void sim_free(struct sim *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nflows; i++)
		free(s->flows[i]);
	free(s->flows);
	sim_probes_free(s);
	sim_loops_free(s);
	for (uint32_t i = 0; i < s->nports; i++) {
		free(s->ports[i]->ecn);
		free(s->ports[i]);
	}
	free(s->ports);
	for (uint32_t i = 0; i < s->nlinks; i++)
		free(s->links[i]);
	free(s->links);
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct node *n = s->nodes[i];

		if (n->kind == NODE_SWITCH) {
			free(n->sw.routes);
			free(n->sw.route_ports);
			free(n->sw.ov);
		} else {
			free(n->nic.tx);
		}
		free(n->ports);
		free(n);
	}
	free(s->nodes);
	free(s->hosts);
	sim_faults_free(s);
	for (size_t i = 0; i < s->npkt_chunks; i++)
		free(s->pkt_chunks[i]);
	free(s->pkt_chunks);
	free(s->q.h);
	for (unsigned i = 0; i < EVQ_NBUCKETS; i++)
		free(s->q.b[i].v);
	hmap_fini(&s->names);
	free(s);
}

int64_t sim_now(const struct sim *s)
{
	return s->now;
}

int64_t sim_until(const struct sim *s)
{
	return s->p.until_ps;
}

double sim_progress(const struct sim *s)
{
	if (s->p.until_ps > 0)
		return (double)s->now / (double)s->p.until_ps;
	return s->nflows ? (double)s->st.flows_done / s->nflows : 1.0;
}

void sim_keep_running(struct sim *s)
{
	s->p.until_ps = INT64_MAX / 4;
	if (!s->sampler.armed)
		sim_timer_arm(s, &s->sampler, s->now + s->sample_every);
}

double sim_serve_pace(const struct sim *s)
{
	return s->p.serve_pace;
}

bool sim_runs_forever(const struct sim *s)
{
	return s->ngens && s->p.until_ps <= 0;
}

uint64_t sim_events(const struct sim *s)
{
	return s->st.events;
}

uint64_t sim_data_packets(const struct sim *s)
{
	return s->st.data_packets;
}

uint32_t sim_flow_count(const struct sim *s)
{
	return s->nflows;
}

int sim_flow_result(const struct sim *s, uint32_t id, int64_t *start, int64_t *finish,
		    int64_t *ideal)
{
	const struct flow *f;

	if (id >= s->nflows)
		return -ENOENT;
	f = s->flows[id];
	*start = f->start;
	*finish = f->done ? f->finish : -1;
	*ideal = f->ideal;
	return 0;
}

/* --- devices ------------------------------------------------------------------------------------- */

int sim_device_count(const struct sim *s)
{
	return (int)s->nnodes;
}

const char *sim_device_name(const struct sim *s, int dev)
{
	return dev >= 0 && (uint32_t)dev < s->nnodes ? s->nodes[dev]->name : NULL;
}

bool sim_device_is_switch(const struct sim *s, int dev)
{
	return dev >= 0 && (uint32_t)dev < s->nnodes && s->nodes[dev]->kind == NODE_SWITCH;
}

int sim_device_find(const struct sim *s, const char *name)
{
	const struct node *n = hmap_get(&s->names, name);

	return n ? (int)n->id : -1;
}

int sim_port_count(const struct sim *s, int dev)
{
	return dev >= 0 && (uint32_t)dev < s->nnodes ? s->nodes[dev]->nports : -1;
}

const char *sim_port_name(const struct sim *s, int dev, int port)
{
	if (dev < 0 || (uint32_t)dev >= s->nnodes || port < 0 || port >= s->nodes[dev]->nports)
		return NULL;
	return s->nodes[dev]->ports[port]->name;
}

int sim_port_find(const struct sim *s, int dev, const char *name)
{
	if (dev < 0 || (uint32_t)dev >= s->nnodes)
		return -1;
	for (int i = 0; i < s->nodes[dev]->nports; i++)
		if (!strcmp(s->nodes[dev]->ports[i]->name, name))
			return i;
	return -1;
}

uint64_t sim_queue_bytes(const struct sim *s, int dev, int port, int prio)
{
	if (dev < 0 || (uint32_t)dev >= s->nnodes || port < 0 || port >= s->nodes[dev]->nports ||
	    prio < 0 || prio >= NPRIO)
		return 0;
	return s->nodes[dev]->ports[port]->q[prio].bytes;
}

static void watermarks_clear(struct sim *s)
{
	for (uint32_t d = 0; d < s->nnodes; d++)
		for (int p = 0; p < s->nodes[d]->nports; p++)
			for (int pr = 0; pr < NPRIO; pr++)
				s->nodes[d]->ports[p]->c.q_watermark_periodic[pr] = s->nodes[d]->ports[p]->q[pr].bytes;
}

static void wm_clear_fn(struct sim *s, struct timer *t)
{
	watermarks_clear(s);
	if ((s->p.until_ps > 0 && s->now < s->p.until_ps) ||
	    (s->p.until_ps <= 0 && (s->st.flows_done < s->nflows || s->flows_started < s->nflows || s->ngens)))
		sim_timer_arm(s, t, s->now + s->wm_period);
}

void sim_watermark_period(struct sim *s, int64_t period_ps)
{
	sim_timer_cancel(&s->wm_clear);
	s->wm_period = period_ps;
	if (period_ps > 0) {
		sim_timer_init(&s->wm_clear, wm_clear_fn, NULL, 0);
		watermarks_clear(s);
		sim_timer_arm(s, &s->wm_clear, s->now + period_ps);
	}
}

uint64_t sim_switch_shared_bytes(const struct sim *s, int dev)
{
	if (dev < 0 || (uint32_t)dev >= s->nnodes || s->nodes[dev]->kind != NODE_SWITCH)
		return 0;
	return s->nodes[dev]->sw.shared_size;
}

bool sim_port_up(const struct sim *s, int dev, int port)
{
	if (dev < 0 || (uint32_t)dev >= s->nnodes || port < 0 || port >= s->nodes[dev]->nports)
		return false;
	return s->nodes[dev]->ports[port]->link->up;
}

uint64_t sim_port_rate_bps(const struct sim *s, int dev, int port)
{
	if (dev < 0 || (uint32_t)dev >= s->nnodes || port < 0 || port >= s->nodes[dev]->nports)
		return 0;
	return s->nodes[dev]->ports[port]->rate_bps;
}

uint8_t sim_port_lossless(const struct sim *s, int dev, int port)
{
	if (dev < 0 || (uint32_t)dev >= s->nnodes || port < 0 || port >= s->nodes[dev]->nports)
		return 0;
	return s->nodes[dev]->ports[port]->pfc.enabled;
}

int sim_port_peer(const struct sim *s, int dev, int port, int *ret_dev, int *ret_port)
{
	const struct port *p;

	if (dev < 0 || (uint32_t)dev >= s->nnodes || port < 0 || port >= s->nodes[dev]->nports)
		return -ENOENT;
	p = s->nodes[dev]->ports[port]->peer;
	*ret_dev = (int)p->node->id;
	*ret_port = p->idx;
	return 0;
}

int sim_counters(const struct sim *s, int dev, int port, sim_counter_fn fn, void *ctx)
{
	const struct port *p;
	const struct node *n;

	if (dev < 0 || (uint32_t)dev >= s->nnodes || port < 0 || port >= s->nodes[dev]->nports)
		return -ENOENT;
	n = s->nodes[dev];
	p = n->ports[port];
	fn(ctx, "tx_bytes", -1, p->c.tx_bytes);
	fn(ctx, "rx_bytes", -1, p->c.rx_bytes);
	fn(ctx, "tx_packets", -1, p->c.tx_packets);
	fn(ctx, "rx_packets", -1, p->c.rx_packets);
	fn(ctx, "phy_tx_discards", -1, p->c.tx_discards);
	if (n->kind == NODE_SWITCH)
		fn(ctx, "phy_rx_discards", -1, p->c.rx_noroute + p->c.rx_ttl);
	/* a frame lost on the wire is not known where it left: the receiver counts it, as a bad FCS */
	fn(ctx, "phy_rx_crc_errors", -1, p->peer->c.wire_losses);
	fn(ctx, "carrier_changes", -1, p->c.carrier_changes);
	for (int pr = 0; pr < NPRIO; pr++) {
		fn(ctx, "pfc_rx_pause_frames", pr, p->c.pfc_rx_frames[pr]);
		fn(ctx, "pfc_tx_pause_frames", pr, p->c.pfc_tx_frames[pr]);
		fn(ctx, "pfc_rx_pause_duration_us", pr,
		   (uint64_t)(sim_port_paused_time(s, p, (uint8_t)pr) / PS_PER_US));
		fn(ctx, "pfc_tx_pause_duration_us", pr,
		   (uint64_t)(sim_port_xoff_time(s, p, (uint8_t)pr) / PS_PER_US));
		fn(ctx, "pfc_rx_pause_transitions", pr, p->c.pfc_rx_transitions[pr]);
		fn(ctx, "pfc_paused", pr, sim_port_paused(s, p, (uint8_t)pr));
		fn(ctx, "pfc_pausing", pr, p->xoff[pr]);
		fn(ctx, "prio_tx_bytes", pr, p->c.prio_tx_bytes[pr]);
		fn(ctx, "prio_rx_bytes", pr, p->c.prio_rx_bytes[pr]);
		fn(ctx, "prio_tx_packets", pr, p->c.prio_tx_packets[pr]);
		fn(ctx, "prio_rx_packets", pr, p->c.prio_rx_packets[pr]);
		if (n->kind == NODE_SWITCH) {
			fn(ctx, "ecn_marked_packets", pr, p->c.ecn_marked[pr]);
			fn(ctx, "prio_rx_buf_discards", pr, p->c.buf_discards[pr]);
			fn(ctx, "queue_depth_bytes", pr, p->q[pr].bytes);
			fn(ctx, "queue_watermark_bytes", pr, p->c.q_watermark[pr]);
			fn(ctx, "queue_watermark_periodic_bytes", pr, p->c.q_watermark_periodic[pr]);
		}
	}
	if (n->kind == NODE_HOST) {
		const struct nic *c = &n->nic;

		fn(ctx, "roce_tx_bytes", -1, c->roce_tx_bytes);
		fn(ctx, "roce_rx_bytes", -1, c->roce_rx_bytes);
		fn(ctx, "roce_tx_packets", -1, c->roce_tx_packets);
		fn(ctx, "roce_rx_packets", -1, c->roce_rx_packets);
		fn(ctx, "out_of_sequence", -1, c->out_of_sequence);
		fn(ctx, "duplicate_request", -1, c->duplicate_request);
		fn(ctx, "packet_seq_err", -1, c->packet_seq_err);
		fn(ctx, "local_ack_timeout_err", -1, c->local_ack_timeout_err);
		fn(ctx, "retransmitted_packets", -1, c->retransmitted);
		fn(ctx, "np_ecn_marked_roce_packets", -1, c->np_ecn_marked);
		fn(ctx, "np_cnp_sent", -1, c->np_cnp_sent);
		fn(ctx, "rp_cnp_handled", -1, c->rp_cnp_handled);
		fn(ctx, "phy_rx_discards", -1, c->rx_discards);
	}
	return 0;
}
