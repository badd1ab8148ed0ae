/* rocefab-sim internals: the data model shared by the files of sim/.  Other directories use
 * sim/sim.h only.
 *
 * Time is int64 picoseconds.  Packets are small pooled structs without payload.  A port's
 * transmitter is driven by two events per packet (transmission done, arrival at the peer);
 * a NIC pulls the next packet from its flows when its port is free, so flows hold no packet
 * queues.  Timers are cancelled in O(1) by bumping a generation: stale heap entries are skipped
 * when popped.  Nothing schedules events while idle: paused or rate-limited senders arm one
 * wake-up, DCQCN timers run only while a flow is below line rate. */
#ifndef ROCEFAB_SIM_INTERNAL_H
#define ROCEFAB_SIM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/hmap.h"
#include "sim/sim.h"

#define NPRIO 8
#define PS_PER_NS INT64_C(1000)
#define PS_PER_US INT64_C(1000000)
#define PS_PER_MS INT64_C(1000000000)
#define PS_PER_S  INT64_C(1000000000000)

#define HDR_BYTES 48	 /* Ethernet + IP + UDP + BTH + ICRC + FCS, on every data packet */
#define CTRL_BYTES 64	 /* ACK, NAK, CNP, PFC frames */
#define PAUSE_QUANTUM_BITS 512

typedef int64_t simtime_t;

/* --- events ------------------------------------------------------------------------------- */

enum ev_type {
	EV_TX_DONE,   /* obj: port finished serializing */
	EV_ARRIVE,    /* obj: packet reached pkt->to */
	EV_TIMER,     /* obj: struct timer; the core runs its function */
	EV_NTYPES
};

/* The handler of an event type other than EV_TIMER.  The model that owns the type registers it
 * with the core when the simulation is built (sim_ev_register), so that the core calls no model
 * by name. */
typedef void (*sim_ev_fn)(struct sim *s, void *obj);

struct ev {
	simtime_t t;
	uint64_t seq; /* ties in t are served in scheduling order: deterministic */
	void *obj;
	uint32_t type;
	uint32_t gen;
};

/* The near future (most events: a port's serialization, a packet's flight) in a ring of
 * buckets of EVQ_WIDTH ps from base, the bucket being served sorted by (t, seq); the rest, and
 * anything before base, in a 4-ary heap.  The next event is the earlier of the two. */
#define EVQ_WIDTH_LOG2 12 /* 4.1 ns */
#define EVQ_NBUCKETS 1024 /* 4.2 us of near future */

struct evq_bucket {
	struct ev *v;
	uint32_t n, cap;
};

struct evq {
	struct ev *h; /* the heap */
	size_t n, cap;
	uint64_t seq;
	struct evq_bucket b[EVQ_NBUCKETS];
	simtime_t base;	 /* the start of bucket cur */
	unsigned cur;	 /* the bucket being served: b[cur].v[pos..n) sorted when sorted */
	uint32_t pos;
	bool sorted;
	size_t nring; /* events in the ring */
};

struct timer;
typedef void (*timer_fn)(struct sim *s, struct timer *t);

struct timer {
	timer_fn fn;
	void *owner;
	uint32_t arg;
	uint32_t gen;
	simtime_t at;	/* when armed, the time it fires */
	simtime_t last; /* the latest time it was ever armed for: no heap entry is later */
	bool armed;
};

/* --- packets -------------------------------------------------------------------------------- */

enum pkt_type { PKT_DATA, PKT_ACK, PKT_NAK, PKT_CNP, PKT_PFC };

#define ECN_ECT 1
#define ECN_CE 2

struct port;
struct flow;

struct pkt {
	struct pkt *next;
	struct port *to;      /* the port receiving it (set when it leaves a port) */
	struct port *in_port; /* ingress port at the switch holding it, for buffer accounting */
	struct flow *flow;    /* NULL for PFC frames */
	uint32_t psn;	      /* data: sequence number; ACK/NAK: next expected */
	uint16_t bytes;	      /* on the wire */
	uint8_t type;
	uint8_t prio;
	uint8_t ecn;
	uint8_t ttl;
	uint8_t acct; /* 0 not counted, 1 shared buffer, 2 headroom */
	uint8_t last;
	uint16_t quanta; /* PFC */
	uint8_t pfc_prio;
};

struct queue {
	struct pkt *head, *tail;
	uint64_t bytes;
	uint32_t n;
	/* time-weighted occupancy, for the mean queue */
	simtime_t last_change;
	long double area; /* byte-picoseconds */
	uint64_t max_bytes;
};

/* --- ports and links ---------------------------------------------------------------------------- */

struct port_ctr {
	uint64_t tx_bytes, rx_bytes, tx_packets, rx_packets;
	uint64_t prio_tx_bytes[NPRIO], prio_rx_bytes[NPRIO];
	uint64_t prio_tx_packets[NPRIO], prio_rx_packets[NPRIO];
	uint64_t pfc_tx_frames[NPRIO], pfc_rx_frames[NPRIO], pfc_rx_transitions[NPRIO];
	uint64_t ecn_marked[NPRIO];  /* CE marks made at this egress queue */
	uint64_t buf_discards[NPRIO]; /* dropped at this ingress: buffer full */
	uint64_t rx_noroute, rx_ttl;  /* dropped at this ingress: no route (its links down), TTL */
	uint64_t tx_discards;	      /* dropped at this egress: link down, TTL */
	uint64_t wire_losses;	      /* lost on the link out of this port (the peer counts them: phy_rx_crc_errors) */
	uint64_t carrier_changes;
	uint64_t q_watermark[NPRIO];
	uint64_t q_watermark_periodic[NPRIO]; /* since sim_watermarks_clear() */
};

struct ecn_cfg {
	bool enabled;
	uint64_t kmin, kmax;
	double pmax;
};

struct pfc_cfg {
	uint8_t enabled; /* bitmap of lossless priorities */
	bool dynamic;
	int alpha_shift;	/* dynamic threshold: 2^shift x free shared buffer */
	uint64_t xoff_bytes; /* static threshold (shared bytes of one ingress port/priority) */
	uint64_t xon_offset;
	uint64_t headroom; /* per ingress port and lossless priority; 0: from the link */
	uint16_t quanta;
	bool refresh;
};

struct node;
struct link;

struct port {
	struct node *node;
	struct port *peer;
	struct link *link;
	uint32_t gid; /* index in sim->ports */
	uint16_t idx; /* index in node->ports */
	char name[32];

	/* transmitter */
	uint64_t rate_bps;
	simtime_t delay;
	bool busy;		/* serializing until busy_until */
	bool txdone_pending;	/* an EV_TX_DONE is in the queue for busy_until */
	simtime_t busy_until;
	struct timer wake;	/* paused or rate-limited sender */
	struct queue ctrl;	/* PFC frames, ACKs, NAKs, CNPs: before data */
	struct queue q[NPRIO]; /* switch egress queues (unused on hosts) */
	uint8_t rr;		/* deficit round robin: the queue whose turn it is */
	bool turn;		/* it got its quantum this turn */
	uint32_t deficit[NPRIO];

	/* PFC received from the peer (we may not send on a paused priority) */
	simtime_t paused_until[NPRIO];
	simtime_t pause_mark[NPRIO];
	simtime_t paused_acc[NPRIO];

	/* PFC sent to the peer: switch ingress (or NIC receive) accounting */
	uint64_t shared[NPRIO], hdrm[NPRIO];
	bool xoff[NPRIO];
	simtime_t xoff_since[NPRIO];
	simtime_t xoff_acc[NPRIO];
	struct timer refresh[NPRIO];

	/* a watchdog's "drop" action on this egress queue: what waits and what arrives for it is
	 * discarded (sim_set_queue_drop) */
	bool wd_drop[NPRIO];
	simtime_t last_tx[NPRIO]; /* the last data packet sent from the queue: ground truth */

	struct ecn_cfg *ecn; /* switch ports: per priority (NPRIO entries); NULL on hosts */
	struct pfc_cfg pfc;  /* PFC of this port: which priorities, and (switches) its thresholds */
	struct port_ctr c;
};

struct link {
	struct port *a, *b;
	char name[64];
	bool up;
	double loss;
	uint32_t flaps_left;
	simtime_t flap_period;
	struct timer flap;
};

/* --- switches ------------------------------------------------------------------------------------ */

struct route_set {
	uint32_t off;
	uint16_t n;
};

struct override {
	uint32_t dst;	  /* host index */
	uint16_t port;	  /* egress port index */
	uint32_t fault;	  /* the fault that set it */
};

struct swtch {
	uint64_t buffer;   /* total */
	uint64_t reserve;  /* per ingress port and priority, guaranteed */
	uint64_t shared_size;
	uint64_t shared_used;
	bool strict;
	uint32_t quantum[NPRIO]; /* deficit round robin among data priorities: weight x packet */	      /* strict priority; else round robin among data priorities */
	struct route_set *routes; /* by destination host */
	uint16_t *route_ports;
	struct override *ov;
	uint32_t nov;
	uint64_t seed;
	uint64_t ttl_drops;
};

/* --- hosts ---------------------------------------------------------------------------------------- */

struct dcqcn_cfg {
	bool enabled;
	uint64_t line_rate_bps;
	double max_rate_bps, min_rate_bps;
	double ai_bps, hai_bps;
	double g;		/* EWMA gain of alpha: (1024 - dce_tcp_g) / 1024 */
	simtime_t alpha_period; /* dce_tcp_rtt */
	double initial_alpha;
	simtime_t timer;	/* rpg_time_reset */
	uint64_t byte_reset;	/* rpg_byte_reset */
	uint32_t threshold;	/* rpg_threshold (F) */
	simtime_t monitor;	/* rate_reduce_monitor_period */
	double min_dec_fac;	/* fraction */
	int gd;
	bool clamp, clamp_ati;
	double first_cnp_rate_bps; /* 0: keep */
	simtime_t cnp_interval;	   /* NP: min time between CNPs */
	bool cnp_per_port;
	uint8_t cnp_prio;
};

struct nic {
	struct flow **tx;	/* flows with data to send */
	uint32_t ntx, captx;
	uint32_t rr;
	struct dcqcn_cfg cc;
	uint32_t ack_interval;
	simtime_t rto, nak_interval;
	uint8_t ctrl_prio;
	struct sim_nic_cfg cfg; /* as configured, for reads and partial updates */
	simtime_t last_cnp; /* per-port CNP pacing */
	/* receive side: infinitely fast unless slowed by a fault */
	double rx_rate_bps; /* 0: infinite */
	uint64_t rx_queue_bytes;
	simtime_t rx_drain_t;
	uint64_t rx_xoff, rx_xon;
	bool storm;
	uint8_t storm_prio;
	struct timer rx_timer;
	/* counters (host scope) */
	uint64_t out_of_sequence, duplicate_request, packet_seq_err, local_ack_timeout_err;
	uint64_t retransmitted, np_ecn_marked, np_cnp_sent, rp_cnp_handled, rx_discards;
	uint64_t roce_tx_bytes, roce_rx_bytes, roce_tx_packets, roce_rx_packets;
};

enum node_kind { NODE_HOST, NODE_SWITCH };

struct node {
	enum node_kind kind;
	uint32_t id;  /* index in sim->nodes */
	uint32_t hid; /* host index (hosts only) */
	char name[32];
	struct port **ports;
	uint16_t nports;
	union {
		struct swtch sw;
		struct nic nic;
	};
};

/* --- flows ------------------------------------------------------------------------------------------ */

struct flow {
	uint32_t id;
	struct node *src, *dst;
	uint64_t bytes;
	uint32_t npkts;
	uint16_t mtu;	    /* payload per packet */
	uint8_t prio;
	bool started, done;
	uint64_t hash;
	simtime_t start, finish, ideal;
	struct timer t_start;
	/* flows that start when this one completes (ring all-reduce steps) */
	struct flow *then;
	/* transient flows (made by a looping workload) are freed once complete, with no packet
	 * in flight referring to them (refs) and no timer entry left in the event queue */
	struct loop_gen *gen;
	struct probe_gen *probe; /* a latency probe (sim_probe_start) */
	struct flow *grave_next, *tprev, *tnext;
	simtime_t free_at;
	uint32_t refs;
	bool transient;
	bool is_probe; /* a latency probe's (probe stays set only while its run waits for it) */
	uint32_t waiting; /* predecessors not yet complete */
	/* sender */
	uint32_t snd_nxt, snd_una, max_sent;
	bool in_tx;
	simtime_t next_send, last_progress;
	struct timer rto;
	/* DCQCN reaction point */
	double rc, rt, alpha;
	simtime_t alpha_t;	 /* alpha decayed up to this time */
	simtime_t last_decrease;
	bool dec_pending, increased_since_dec, first_cnp_seen;
	uint32_t t_events, b_events;
	uint64_t bytes_since;
	struct timer t_inc, t_dec;
	/* receiver */
	uint32_t rcv_nxt, since_ack;
	simtime_t last_cnp, last_nak;
	bool nak_outstanding;
	simtime_t rx_done;
};

#define RECENT_MAX 16384

struct flow_rec {
	simtime_t fct, ideal;
	uint64_t bytes;
};

/* --- the world -------------------------------------------------------------------------------------- */

struct fault;

struct sim_stats_acc {
	uint64_t events, data_packets, ctrl_packets;
	uint64_t flows_done;
	/* periodic samples of non-empty switch data queues, in a log-linear histogram: bucket
	 * (e, m) holds values in [2^e (1 + m/16), 2^e (1 + (m+1)/16)), so percentiles are
	 * within 6% and memory stays constant however long the run */
	uint64_t qhist[64][16];
	uint64_t nq, qmax;
	uint64_t drop_bytes_buffer, drop_bytes_wd; /* data bytes dropped for lack of buffer; by a
						      * watchdog's drop action */
	uint64_t drop_bytes_looping; /* of either, packets that were looping (undeliverable) */
};

struct sim {
	struct sim_params p;
	struct evq q;
	sim_ev_fn ev_fn[EV_NTYPES]; /* by event type: see sim_ev_register() */
	simtime_t now;
	uint64_t rng[4];
	struct pkt *free_pkts;
	struct pkt **pkt_chunks;
	size_t npkt_chunks;
	uint64_t pkts_live;

	struct node **nodes;
	uint32_t nnodes;
	struct node **hosts;
	uint32_t nhosts;
	struct port **ports;
	uint32_t nports;
	struct link **links;
	uint32_t nlinks;
	struct flow **flows;
	uint32_t nflows, capflows;
	uint32_t flows_started;
	struct fault **faults;
	uint32_t nfaults;
	struct hmap names; /* node name -> struct node */

	struct timer sampler;
	struct timer wm_clear; /* clears the periodic queue watermarks every wm_period */
	simtime_t wm_period;
	simtime_t sample_every;
	/* looping workloads (run until stopped) and the flows they made that wait to be freed */
	struct loop_gen **gens;
	uint32_t ngens;
	struct flow *grave, *tlive; /* freeable; every transient flow not yet freed */
	struct timer reaper;
	uint64_t transient_started, transient_done, transient_live;
	struct flow_rec *recent; /* ring of the last RECENT_MAX completed transient flows */
	uint32_t nrecent, recent_head;
	struct probe_gen **probes; /* latency probes in progress or not yet collected */
	uint32_t nprobes;
	/* collected runs, oldest first, freed once no stale timer entry can name them */
	struct probe_gen *probes_dead, *probes_dead_tail;
	struct sim_stats_acc st;
	bool stop;
	char err[256];
};

/* core.c */
void sim_evq_push(struct sim *s, simtime_t t, uint32_t type, void *obj, uint32_t gen);
/* Every event of this type runs fn(s, obj); every type that is scheduled needs one. */
void sim_ev_register(struct sim *s, enum ev_type type, sim_ev_fn fn);
void sim_timer_init(struct timer *t, timer_fn fn, void *owner, uint32_t arg);
void sim_timer_arm(struct sim *s, struct timer *t, simtime_t at);
void sim_timer_cancel(struct timer *t);
struct pkt *sim_pkt_new(struct sim *s);
void sim_pkt_free(struct sim *s, struct pkt *p);
uint64_t sim_rng_next(struct sim *s);
double sim_rng_uniform(struct sim *s); /* [0, 1) */
void sim_queue_push(struct sim *s, struct queue *q, struct pkt *p);
struct pkt *sim_queue_pop(struct sim *s, struct queue *q);
simtime_t sim_tx_time(const struct port *p, uint32_t bytes);

/* workload.c: flows made while running */
void sim_flow_unref(struct sim *s, struct flow *f);
/* After a flow completed: records, the next round of its loop, its probe run. */
void sim_flow_completed(struct sim *s, struct flow *f);
void sim_loops_free(struct sim *s);
void sim_probes_free(struct sim *s);

/* port.c: the transmitter and PFC, shared by hosts and switches */
void sim_port_kick(struct sim *s, struct port *p);
void sim_port_send_ctrl(struct sim *s, struct port *p, struct pkt *k);
void sim_port_send_pfc(struct sim *s, struct port *p, uint8_t prio, bool xoff);
bool sim_port_paused(const struct sim *s, const struct port *p, uint8_t prio);
simtime_t sim_port_paused_time(const struct sim *s, const struct port *p, uint8_t prio);
simtime_t sim_port_xoff_time(const struct sim *s, const struct port *p, uint8_t prio);
void sim_port_link_down(struct sim *s, struct port *p);
void sim_port_init(struct port *p);
/* Registers the handlers of the ports' events (EV_TX_DONE, EV_ARRIVE) with the core. */
void sim_port_register(struct sim *s);

/* switch.c */
/* The port a switch forwards to (overrides, then ECMP on the flow's hash), or NULL. */
struct port *sim_switch_next_port(const struct node *n, uint32_t dst, uint64_t flow_hash,
				  bool data);
void sim_switch_rx(struct sim *s, struct port *in, struct pkt *k);
struct pkt *sim_switch_dequeue(struct sim *s, struct port *p, simtime_t *ret_wake);
void sim_switch_release(struct sim *s, struct pkt *k);
void sim_switch_routes(struct sim *s);
/* Counts a data packet dropped at switch n as a buffer or watchdog drop, or as looping when its
 * route from n never reaches its destination. */
void sim_switch_count_drop(struct sim *s, const struct node *n, const struct pkt *k, bool watchdog);
int sim_switch_init(struct sim *s, struct node *n, const struct sim_switch_cfg *c);

/* nic.c */
void sim_nic_rx(struct sim *s, struct port *in, struct pkt *k);
struct pkt *sim_nic_next_packet(struct sim *s, struct port *p, simtime_t *ret_wake);
void sim_nic_flow_start(struct sim *s, struct flow *f);
void sim_nic_set_storm(struct sim *s, struct node *h, bool on, uint8_t prio);
void sim_nic_set_rx_rate(struct sim *s, struct node *h, double bps);
void sim_nic_init(struct sim *s, struct node *n, const struct sim_nic_cfg *c);
void sim_nic_configure(struct node *n, const struct sim_nic_cfg *c);

#endif
