/* The congestion-control tuner inside the simulation (rocefab-sim run --controller tuner):
 * every interval of fabric time the tuner (cc/tuner.h) gets the snapshot the agents would
 * report; the changes it proposes are applied after an actuation delay, read back, and checked
 * against the invariants by the harness itself (not by the tuner's word).  A pingmesh runs
 * beside it, as rocefabd's would: every interval each host probes probe_peers others (a
 * rotation over all of them, each lap on the other of two paths), SIM_TUNE_PROBE_COUNT writes
 * of SIM_TUNE_PROBE_BYTES one after the other, each lost after an interval; the tuner gets the
 * median over the runs done at the interval of each run's p99 (nearest rank; a run whose
 * probes were all lost counts as the timeout), as rocefabd feeds it (daemon/pingmesh.c
 * pingmesh_take_tail; a host's peers of one round are distinct, so a run stands for a pair).  A
 * run still going is read at a later interval, and its slot (host i's k-th) starts no other
 * meanwhile.  The results hold
 * every proposal, the class settings per interval, the invariant violations (none, or the run
 * is wrong) and, with a forced step, how long its rollback took. */
#ifndef ROCEFAB_SIM_TUNECTL_H
#define ROCEFAB_SIM_TUNECTL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "cc/tuner.h"
#include "lib/err.h"
#include "sim/sim.h"

struct sim_tune_opts {
	int64_t interval_ps, delay_ps;
	enum cc_tn_mode mode;
	bool mode_given; /* mode was asked for: over the policy's own */
	json_t *policy; /* borrowed; NULL: the defaults */
	/* the pingmesh whose p99 the tuner reads: each host probes this many others per interval
	 * (0: no probes, the tuner goes without) */
	unsigned probe_peers;
	/* hosts whose readings the tuner and the detector beside it do not get (--silent) */
	const char *silent;
	/* a forced step (a test of the rollback): at force_at_ps */
	bool force;
	int64_t force_at_ps;
	char force_cls[32]; /* a class's name (a host class of the policy too) */
	enum cc_tn_knob force_knob;
	double force_value;
};

#define SIM_TUNE_PROBE_COUNT 10 /* rocefabd's pingmesh's defaults (daemon/pingmesh.c) */
#define SIM_TUNE_PROBE_BYTES 64
#define SIM_TUNE_PROBE_PEERS 2

struct sim_tune;

int sim_tune_new(struct sim *s, const struct sim_tune_opts *o, struct sim_tune **ret, struct rf_err *e);
void sim_tune_free(struct sim_tune *t);
int64_t sim_tune_next(const struct sim_tune *t);
/* Runs what is due at sim_now.  0 or -ENOMEM. */
int sim_tune_step(struct sim_tune *t);
json_t *sim_tune_json(const struct sim_tune *t, bool timing);
/* "CLASS:KNOB=VALUE@TIME" (e.g. tor_down:kmin_bytes=3000000@2ms) into o; -EINVAL. */
int sim_tune_parse_force(const char *s, struct sim_tune_opts *o);

#endif
