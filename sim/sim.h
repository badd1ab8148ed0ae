/* rocefab-sim as a library: a discrete-event, packet-level simulator of RoCEv2 fabrics
 * (links, shared-buffer switches with PFC and ECN, NICs with go-back-N and DCQCN).
 *
 *   sim_load()       parse and validate a scenario (schemas/scenario.schema.json) and build it
 *   sim_run_until()  advance simulated time; sim_done() when every flow finished
 *   sim_counters()   a device's counters under the registry's names (schemas/counters.json)
 *   sim_set_*()      change ECN, PFC or DCQCN parameters while running
 *   sim_fault()      inject or clear a fault while running
 *   sim_summary()    the results (FCT and slowdown, pauses, marks, queues, run figures)
 *
 * The same scenario and seed give the same results, event for event. */
#ifndef ROCEFAB_SIM_H
#define ROCEFAB_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"

struct sim;

struct sim_pfc_cfg {
	uint8_t enabled; /* bitmap of lossless priorities */
	bool dynamic;
	int alpha_shift;
	uint64_t xoff_bytes, xon_offset_bytes, headroom_bytes;
	uint16_t quanta;
};

struct sim_ecn_cfg {
	bool enabled;
	uint64_t kmin_bytes, kmax_bytes;
	double pmax;
};

struct sim_switch_cfg {
	uint64_t buffer_bytes;
	uint64_t reserve_bytes; /* per ingress port and priority */
	struct sim_pfc_cfg pfc;
	struct sim_ecn_cfg ecn;
	bool strict;
	uint8_t weights[8]; /* deficit round robin among priorities 0..5 when not strict */
};

struct sim_nic_cfg {
	bool dcqcn;
	/* DCQCN knobs, NVIDIA names and units (../shared/reference/rdma-fabric-facts.md §3.2) */
	double rpg_time_reset_us, rpg_ai_rate_mbps, rpg_hai_rate_mbps, rpg_min_rate_mbps;
	double rpg_max_rate_mbps; /* 0: line rate */
	uint64_t rpg_byte_reset;
	uint32_t rpg_threshold, rpg_gd, rpg_min_dec_fac, dce_tcp_g, initial_alpha_value;
	double dce_tcp_rtt_us, rate_reduce_monitor_period_us, rate_to_set_on_first_cnp_mbps;
	double min_time_between_cnps_us;
	bool cnp_per_port;
	bool clamp_tgt_rate, clamp_tgt_rate_ati;
	uint8_t cnp_prio;
	/* transport */
	uint32_t ack_interval;
	double rto_us, nak_interval_us;
	uint8_t pfc_enabled;
};

struct sim_params {
	uint64_t seed;
	uint32_t mtu; /* payload bytes per packet */
	int64_t until_ps; /* stop time; 0: when every flow completes */
	int64_t sample_ps; /* queue sampling period for the summary */
	double serve_pace; /* "serve": {"pace"}: 0 unless the scenario gives one */
	struct sim_switch_cfg sw;
	struct sim_nic_cfg nic;
};

/* Parses, validates and builds a scenario.  base_dir resolves relative files (CDFs, flow
 * lists).  seed/until override the scenario's when >= 0.  On a bad scenario, e names the
 * JSON pointer of the field and the code BAD_SCENARIO. */
int sim_load(const char *text, size_t len, const char *origin, const char *base_dir,
	     int64_t seed, int64_t until_ps, struct sim **ret, struct rf_err *e);
void sim_free(struct sim *s);

/* Runs events up to time t (picoseconds) or until the scenario ends; returns the events run. */
uint64_t sim_run_until(struct sim *s, int64_t t);
/* Runs at most n events. */
uint64_t sim_step(struct sim *s, uint64_t n);
int64_t sim_now(const struct sim *s);
/* The scenario's end: its stop time, or every flow complete (and stop time 0). */
bool sim_done(const struct sim *s);
int64_t sim_until(const struct sim *s);
/* Looping workloads and no stop time: the scenario runs until stopped (serve mode). */
bool sim_runs_forever(const struct sim *s);
/* Serve mode: fabric time keeps passing whatever the workloads do (no stop time). */
void sim_keep_running(struct sim *s);
double sim_serve_pace(const struct sim *s);
double sim_progress(const struct sim *s); /* 0..1 */

/* Devices: hosts and switches, and their ports (named by the peer). */
int sim_device_count(const struct sim *s);
const char *sim_device_name(const struct sim *s, int dev);
bool sim_device_is_switch(const struct sim *s, int dev);
int sim_device_find(const struct sim *s, const char *name);
int sim_port_count(const struct sim *s, int dev);
const char *sim_port_name(const struct sim *s, int dev, int port);
int sim_port_find(const struct sim *s, int dev, const char *name);
/* A switch's shared buffer: total less headroom and reserves. */
uint64_t sim_switch_shared_bytes(const struct sim *s, int dev);
bool sim_port_up(const struct sim *s, int dev, int port);
uint64_t sim_port_rate_bps(const struct sim *s, int dev, int port);
/* The priorities with PFC on at the port (bitmap). */
uint8_t sim_port_lossless(const struct sim *s, int dev, int port);
/* The device and port at the other end of the port's link. */
int sim_port_peer(const struct sim *s, int dev, int port, int *ret_dev, int *ret_port);

/* Counters of one port under registry names: fn(name, priority or -1, value). */
typedef void (*sim_counter_fn)(void *ctx, const char *name, int prio, uint64_t value);
int sim_counters(const struct sim *s, int dev, int port, sim_counter_fn fn, void *ctx);
uint64_t sim_queue_bytes(const struct sim *s, int dev, int port, int prio);
/* Every period_ps of fabric time the switches clear their queues' periodic watermarks
 * (queue_watermark_periodic_bytes) to the depth then, as SONiC does every telemetry interval;
 * 0 (the start): never, the watermark is the peak since the start. */
void sim_watermark_period(struct sim *s, int64_t period_ps);

/* Configuration while running, as JSON objects with the scenario's field names (see
 * schemas/scenario.schema.json: nic.dcqcn, switch.ecn, switch.pfc).  A set changes only the
 * fields it names (an absent field keeps its value) and changes nothing when any field is bad:
 * -EINVAL with e naming the field (code BAD_VALUE, BAD_THRESHOLD_ORDER, UNKNOWN_FIELD), -ENOENT
 * for an unknown device, port or queue.  Gets return new references. */
json_t *sim_get_dcqcn(const struct sim *s, int host);
int sim_set_dcqcn(struct sim *s, int host, json_t *params, struct rf_err *e);
json_t *sim_get_ecn(const struct sim *s, int sw, int port, int queue);
int sim_set_ecn(struct sim *s, int sw, int port, int queue, json_t *params, struct rf_err *e);
json_t *sim_get_pfc(const struct sim *s, int dev, int port);
int sim_set_pfc(struct sim *s, int dev, int port, json_t *params, struct rf_err *e);

/* A watchdog's drop action on a switch's egress queue: while on, what waits there and what
 * arrives for it is discarded.  0 or -ENOENT. */
int sim_set_queue_drop(struct sim *s, int dev, int port, int prio, bool on);
/* Ground truth for judging controllers (no agent reports these): when the egress queue last
 * sent a data packet (ps, 0: never, -1: no such queue), and the data bytes dropped since the
 * start for lack of buffer and by watchdog drop actions, and apart, those of either that were
 * undeliverable: their route from where they were dropped loops (or stops). */
int64_t sim_queue_last_tx(const struct sim *s, int dev, int port, int prio);
void sim_drop_bytes(const struct sim *s, uint64_t *buffer, uint64_t *watchdog, uint64_t *looping);
/* The deadlocks the simulation holds now, from which packet came in where (what no device
 * reports): cycles of switch queues that hold packets, are paused and sent nothing for
 * min_frozen_ps.  [{ports: ["node:port", ...], priority, frozen_since_us}] (a new reference). */
json_t *sim_deadlocks(const struct sim *s, int64_t min_frozen_ps);

/* Faults while running, as in the scenario's "faults" (JSON object).  Returns a fault id. */
int sim_fault(struct sim *s, json_t *fault, int *ret_id, struct rf_err *e);
int sim_fault_clear(struct sim *s, int id, struct rf_err *e);
/* Every fault of the run: [{id, spec, active, cleared}] (a new reference). */
json_t *sim_faults(const struct sim *s);

/* Latency probes between two hosts: count probes of size bytes one after the other on the ECMP
 * path that label picks (like a RoCE v2 flow label / UDP source port); each is a flow through
 * the same queues as the workloads, its latency the time from its start to its last ACK.  A
 * probe not done after timeout_ps is lost.  Returns an id; sim_probe_result() gives
 * {id, src, dst, done, count, ok, lost, samples_us, path} (a new reference; the run is freed
 * once a done result was returned), NULL for an unknown id. */
int sim_probe_start(struct sim *s, int src, int dst, uint32_t size, uint32_t label, uint32_t count,
		    int64_t timeout_ps, struct rf_err *e);
json_t *sim_probe_result(struct sim *s, int id);
/* Whether a run's every probe is done (came back or lost); false for an unknown id. */
bool sim_probe_done(const struct sim *s, int id);
/* How many more runs may start (65536 wait to be collected at most), and how many probes the
 * runs not collected hold in all (each keeps a sample per probe). */
void sim_probe_room(const struct sim *s, uint32_t *ret_runs, uint64_t *ret_probes);

/* The results; with timing, the run's wall-clock figures too (they differ run to run). */
json_t *sim_summary(struct sim *s, bool timing, double wall_s);

/* Per-flow results for tests: 0 and the times in ps, or -ENOENT. */
int sim_flow_result(const struct sim *s, uint32_t id, int64_t *start, int64_t *finish,
		    int64_t *ideal);
uint32_t sim_flow_count(const struct sim *s);
uint64_t sim_events(const struct sim *s);
uint64_t sim_data_packets(const struct sim *s);

#endif
