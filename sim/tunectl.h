/* The congestion-control tuner inside the simulation (rocefab-sim run --controller tuner):
 * every interval of fabric time the tuner (cc/tuner.h) gets the snapshot the agents would
 * report; the changes it proposes are applied after an actuation delay, read back, and checked
 * against the invariants by the harness itself (not by the tuner's word).  The results hold
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
	json_t *policy; /* borrowed; NULL: the defaults */
	/* a forced step (a test of the rollback): at force_at_ps */
	bool force;
	int64_t force_at_ps;
	char force_cls[32]; /* a class's name (a host class of the policy too) */
	enum cc_tn_knob force_knob;
	double force_value;
};

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
