/* The results of a run: flow completion times and slowdowns (by size bucket), throughput,
 * PFC pauses and paused time per port and priority, ECN marks, CNPs, drops, retransmissions,
 * queue depths (sampled percentiles and time-weighted means per queue), and the run's figures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lib/jsonutil.h"
#include "lib/vec.h"
#include "sim/internal.h"

/* The p-th percentile of the queue histogram: the middle of the bucket it falls in. */
static uint64_t qpct(const struct sim *s, double p)
{
	uint64_t rank = (uint64_t)ceil(p / 100 * (double)s->st.nq), seen = 0;

	if (!s->st.nq)
		return 0;
	if (!rank)
		rank = 1;
	for (int e = 0; e < 64; e++) {
		for (int m = 0; m < 16; m++) {
			seen += s->st.qhist[e][m];
			if (seen >= rank) {
				double lo = ldexp(1.0 + m / 16.0, e), hi = ldexp(1.0 + (m + 1) / 16.0, e);
				uint64_t v = (uint64_t)((lo + hi) / 2);

				return v > s->st.qmax ? s->st.qmax : v;
			}
		}
	}
	return s->st.qmax;
}

static double round6(double v)
{
	return round(v * 1e6) / 1e6;
}

static json_t *dist_json(double *v, size_t n)
{
	double sum = 0;

	if (!n)
		return json_pack("{s:i}", "n", 0);
	qsort(v, n, sizeof(*v), vec_cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	return json_pack("{s:I,s:f,s:f,s:f,s:f,s:f}", "n", (json_int_t)n, "mean", round6(sum / n), "p50",
			 round6(vec_percentile(v, n, 50)), "p95", round6(vec_percentile(v, n, 95)), "p99",
			 round6(vec_percentile(v, n, 99)), "max", round6(v[n - 1]));
}

static json_t *flows_json(struct sim *s, json_t **ret_slowdown, json_t **ret_fct)
{
	double *sd[4], *fct = malloc((s->nflows + 1) * sizeof(*fct));
	size_t nsd[4] = { 0 }, nfct = 0;
	json_t *per = json_array();
	uint64_t delivered = 0;
	simtime_t last = 0;

	for (int b = 0; b < 4; b++)
		sd[b] = malloc((s->nflows + 1) * sizeof(double));
	for (uint32_t i = 0; i < s->nflows; i++) {
		const struct flow *f = s->flows[i];
		json_t *o = json_pack("{s:I,s:s,s:s,s:I,s:f}", "id", (json_int_t)f->id, "src", f->src->name,
				      "dst", f->dst->name, "bytes", (json_int_t)f->bytes, "start_us",
				      round6((double)f->start / PS_PER_US));

		if (f->done) {
			double us = (double)(f->finish - f->start) / PS_PER_US;
			double slow = f->ideal > 0 ? (double)(f->finish - f->start) / (double)f->ideal : 1;
			int bucket = f->bytes < 100000 ? 1 : f->bytes < 1000000 ? 2 : 3;

			if (slow < 1)
				slow = 1;
			delivered += f->bytes;
			if (f->finish > last)
				last = f->finish;
			json_object_set_new(o, "fct_us", json_real(round6(us)));
			json_object_set_new(o, "slowdown", json_real(round6(slow)));
			sd[0][nsd[0]++] = slow;
			sd[bucket][nsd[bucket]++] = slow;
			fct[nfct++] = us;
		} else {
			json_object_set_new(o, "fct_us", json_null());
			json_object_set_new(o, "slowdown", json_null());
			json_object_set_new(o, "delivered_packets", json_integer(f->rcv_nxt));
		}
		json_array_append_new(per, o);
	}
	*ret_slowdown = json_pack("{s:o,s:o,s:o,s:o}", "all", dist_json(sd[0], nsd[0]), "lt_100KB",
				  dist_json(sd[1], nsd[1]), "100KB_1MB", dist_json(sd[2], nsd[2]),
				  "ge_1MB", dist_json(sd[3], nsd[3]));
	*ret_fct = dist_json(fct, nfct);
	for (int b = 0; b < 4; b++)
		free(sd[b]);
	free(fct);
	/* when the last completed: a run whose --until lies past it simulated idle time after */
	return json_pack("{s:I,s:I,s:I,s:o,s:o}", "total", (json_int_t)s->nflows, "completed",
			 (json_int_t)s->st.flows_done, "delivered_bytes", (json_int_t)delivered, "last_completed_us",
			 last ? json_real(round6((double)last / PS_PER_US)) : json_null(), "per_flow", per);
}

/* Looping workloads: flows are made and freed while running, so their results are the
 * distributions over the last RECENT_MAX completed flows. */
static json_t *looping_json(const struct sim *s)
{
	double *sd = malloc((s->nrecent + 1) * sizeof(*sd)), *fct = malloc((s->nrecent + 1) * sizeof(*fct));
	json_t *o;

	for (uint32_t i = 0; sd && fct && i < s->nrecent; i++) {
		const struct flow_rec *r = &s->recent[i];
		double slow = r->ideal > 0 ? (double)r->fct / (double)r->ideal : 1;

		sd[i] = slow < 1 ? 1 : slow;
		fct[i] = (double)r->fct / PS_PER_US;
	}
	o = json_pack("{s:I,s:I,s:I,s:I,s:o,s:o}", "workloads", (json_int_t)s->ngens, "flows_started",
		      (json_int_t)s->transient_started, "flows_completed", (json_int_t)s->transient_done,
		      "flows_in_memory", (json_int_t)s->transient_live, "recent_slowdown",
		      dist_json(sd, sd && fct ? s->nrecent : 0), "recent_fct_us",
		      dist_json(fct, sd && fct ? s->nrecent : 0));
	free(sd);
	free(fct);
	return o;
}

static json_t *port_ref(const struct port *p, int prio)
{
	json_t *o = json_pack("{s:s,s:s}", "device", p->node->name, "port", p->name);

	if (prio >= 0)
		json_object_set_new(o, "priority", json_integer(prio));
	return o;
}

json_t *sim_summary(struct sim *s, bool timing, double wall_s)
{
	json_t *doc, *slowdown, *fct, *flows, *pfc_ports = json_array(), *ecn_ports = json_array(),
		     *q_ports = json_array();
	uint64_t pause_tx = 0, pause_rx = 0, marks = 0, buf_drops = 0, link_drops = 0, ttl = 0,
		 cnp_sent = 0, cnp_handled = 0, retx = 0, rto = 0, naks = 0, oos = 0, nic_drops = 0,
		 tx_data = 0;
	double paused_us = 0, sim_s = (double)s->now / PS_PER_S, busy_s;

	flows = flows_json(s, &slowdown, &fct);
	/* the goodput until the last flow completed, of a run that completed (--until past it
	 * averaged the idle time in) */
	busy_s = s->st.flows_done == s->nflows && json_is_number(json_object_get(flows, "last_completed_us"))
			 ? json_number_value(json_object_get(flows, "last_completed_us")) / 1e6
			 : 0;
	for (uint32_t i = 0; i < s->nports; i++) {
		const struct port *p = s->ports[i];

		for (int pr = 0; pr < NPRIO; pr++) {
			simtime_t rxp = sim_port_paused_time(s, p, (uint8_t)pr),
				  txp = sim_port_xoff_time(s, p, (uint8_t)pr);

			if (p->c.pfc_tx_frames[pr] || p->c.pfc_rx_frames[pr]) {
				json_t *o = port_ref(p, pr);

				json_object_set_new(o, "tx_pause_frames", json_integer((json_int_t)p->c.pfc_tx_frames[pr]));
				json_object_set_new(o, "rx_pause_frames", json_integer((json_int_t)p->c.pfc_rx_frames[pr]));
				json_object_set_new(o, "paused_us", json_real(round6((double)rxp / PS_PER_US)));
				json_object_set_new(o, "xoff_us", json_real(round6((double)txp / PS_PER_US)));
				json_array_append_new(pfc_ports, o);
			}
			pause_tx += p->c.pfc_tx_frames[pr];
			pause_rx += p->c.pfc_rx_frames[pr];
			paused_us += (double)rxp / PS_PER_US;
			marks += p->c.ecn_marked[pr];
			buf_drops += p->c.buf_discards[pr];
			if (p->c.ecn_marked[pr]) {
				json_t *o = port_ref(p, pr);

				json_object_set_new(o, "marked_packets", json_integer((json_int_t)p->c.ecn_marked[pr]));
				json_array_append_new(ecn_ports, o);
			}
			if (p->node->kind == NODE_SWITCH && p->q[pr].max_bytes) {
				const struct queue *q = &p->q[pr];
				long double area = q->area + (long double)q->bytes * (long double)(s->now - q->last_change);
				json_t *o = port_ref(p, pr);

				json_object_set_new(o, "mean_bytes",
						    json_real(round6(s->now ? (double)(area / (long double)s->now) : 0)));
				json_object_set_new(o, "max_bytes", json_integer((json_int_t)q->max_bytes));
				json_array_append_new(q_ports, o);
			}
		}
		link_drops += p->c.tx_discards + p->c.wire_losses + p->c.rx_noroute;
		if (p->node->kind == NODE_HOST)
			tx_data += p->c.tx_bytes;
	}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct node *n = s->nodes[i];

		if (n->kind == NODE_SWITCH) {
			ttl += n->sw.ttl_drops;
			continue;
		}
		cnp_sent += n->nic.np_cnp_sent;
		cnp_handled += n->nic.rp_cnp_handled;
		retx += n->nic.retransmitted;
		rto += n->nic.local_ack_timeout_err;
		naks += n->nic.packet_seq_err;
		oos += n->nic.out_of_sequence;
		nic_drops += n->nic.rx_discards;
	}
	doc = json_pack(
		"{s:i,s:I,s:f,s:b,s:o,s:o,s:o,s:{s:I,s:f,s:f,s:o},"
		"s:{s:I,s:I,s:f,s:o},s:{s:I,s:o},s:{s:I,s:I},"
		"s:{s:I,s:I,s:I,s:I},s:{s:I,s:I,s:I,s:I},"
		"s:{s:I,s:I,s:I,s:I,s:I,s:o}}",
		"schema", 1, "seed", (json_int_t)s->p.seed, "sim_time_us", round6((double)s->now / PS_PER_US),
		"complete", s->st.flows_done == s->nflows, "flows", flows, "slowdown", slowdown, "fct_us", fct,
		"throughput", "host_tx_bytes", (json_int_t)tx_data, "host_tx_gbps",
		sim_s > 0 ? round6((double)tx_data * 8 / sim_s / 1e9) : 0.0, "goodput_gbps",
		sim_s > 0 ? round6((double)json_integer_value(json_object_get(flows, "delivered_bytes")) * 8 / sim_s / 1e9)
			  : 0.0,
		"goodput_completed_gbps",
		busy_s > 0 ? json_real(round6((double)json_integer_value(json_object_get(flows, "delivered_bytes")) *
					      8 / busy_s / 1e9))
			   : json_null(),
		"pfc", "tx_pause_frames", (json_int_t)pause_tx, "rx_pause_frames", (json_int_t)pause_rx,
		"paused_us", round6(paused_us), "ports", pfc_ports,
		"ecn", "marked_packets", (json_int_t)marks, "ports", ecn_ports,
		"cnp", "sent", (json_int_t)cnp_sent, "handled", (json_int_t)cnp_handled,
		"drops", "buffer", (json_int_t)buf_drops, "link", (json_int_t)link_drops, "ttl",
		(json_int_t)ttl, "nic", (json_int_t)nic_drops,
		"transport", "retransmitted_packets", (json_int_t)retx, "timeouts", (json_int_t)rto, "naks",
		(json_int_t)naks, "out_of_sequence", (json_int_t)oos,
		"queues", "samples", (json_int_t)s->st.nq, "p50_bytes", (json_int_t)qpct(s, 50),
		"p99_bytes", (json_int_t)qpct(s, 99), "max_bytes", (json_int_t)s->st.qmax, "sample_us",
		(json_int_t)(s->sample_every / PS_PER_US), "ports", q_ports);
	{
		json_t *run = json_pack("{s:I,s:I,s:I}", "events", (json_int_t)s->st.events,
					"data_packets", (json_int_t)s->st.data_packets, "control_packets",
					(json_int_t)s->st.ctrl_packets);

		if (timing) {
			struct rusage ru;

			getrusage(RUSAGE_SELF, &ru);
			json_object_set_new(run, "wall_s", json_real(round6(wall_s)));
			json_object_set_new(run, "events_per_s",
					    json_real(wall_s > 0 ? round((double)s->st.events / wall_s) : 0));
			json_object_set_new(run, "data_packets_per_s",
					    json_real(wall_s > 0 ? round((double)s->st.data_packets / wall_s) : 0));
			json_object_set_new(run, "peak_rss_kb", json_integer(ru.ru_maxrss));
		}
		json_object_set_new(doc, "run", run);
	}
	if (s->ngens)
		json_object_set_new(doc, "looping", looping_json(s));
	return doc;
}
