/* Controllers inside the simulation (rocefab-sim run --controller): every interval of fabric
 * time, the snapshot the agents would report (sim/snapshot.h) goes to the same cc/ library
 * rocefabd runs; the changes it proposes are applied after an actuation delay.  A SONiC-style
 * PFC watchdog (cc/pfcwd.h) can run beside it on the same snapshots, as a shadow that only
 * records what it would do (--baseline pfcwd), or as the acting controller (--controller
 * pfcwd) so that its drops and recovery can be measured.  The results hold the findings,
 * the actions, the baseline's, and ground truth for judging them (when the named queues really
 * froze, bytes dropped, per-host goodput per interval): none of it is the controllers' input.
 * The congestion-control tuner runs through the same entry points (sim/tunectl.h). */
#ifndef ROCEFAB_SIM_CTL_H
#define ROCEFAB_SIM_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "cc/deadlock.h"
#include "lib/err.h"
#include "sim/sim.h"
#include "sim/tunectl.h"

enum sim_ctl_kind { SIM_CTL_NONE, SIM_CTL_DETECTOR, SIM_CTL_PFCWD, SIM_CTL_TUNER };

struct sim_ctl_opts {
	enum sim_ctl_kind controller;
	int64_t interval_ps;  /* default 100 us */
	int64_t delay_ps;     /* actuation delay; default one interval */
	int64_t restore_ps;   /* the detector's restore time; default 3 intervals */
	enum cc_dl_mode mitigate; /* default auto */
	bool baseline_pfcwd;
	/* hosts whose readings the controller does not get (their agents silent: a hung host's),
	 * comma-separated; NULL: none.  Their ports are in its snapshots without readings, as
	 * rocefabd's hold them (cc_port.silent) */
	const char *silent;
	struct sim_tune_opts tune; /* --controller tuner (its interval and delay are the above) */
};

struct sim_ctl;

int sim_ctl_new(struct sim *s, const struct sim_ctl_opts *o, struct sim_ctl **ret, struct rf_err *e);
void sim_ctl_free(struct sim_ctl *c);
/* The next fabric time the controller needs to run at (an interval's end or an actuation). */
int64_t sim_ctl_next(const struct sim_ctl *c);
/* Runs what is due at sim_now.  0 or -ENOMEM. */
int sim_ctl_step(struct sim_ctl *c);
/* The controller's part of the results (a new reference); with timing, the detector's run
 * time too (it differs run to run). */
json_t *sim_ctl_json(const struct sim_ctl *c, bool timing);

#endif
