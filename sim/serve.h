/* rocefab-sim serve: the simulator paced against the wall clock, its control API, and the
 * virtual agents that report its devices to rocefabd.  Internal to sim/. */
#ifndef ROCEFAB_SIM_SERVE_H
#define ROCEFAB_SIM_SERVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/sim.h"

/* The running simulation and its clock, shared by the pacing loop, the control API's threads
 * and the virtual agents.  Everything below lock is protected by it. */
struct simctl {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the pacing loop waits on it; clock changes signal it */
	struct sim *s;
	const char *scenario;
	int64_t epoch_ns; /* Unix time of fabric time 0: counters' read time = epoch + fabric */
	double pace;	  /* fabric seconds per wall second requested */
	double max_pace;  /* 1 when counters go to rocefabd (--agents, --sonic): above, fabric time
			   * would run ahead of the wall clock, and it refuses times a minute ahead */
	bool paused;
	/* pacing: fabric time anchor_fab was reached at wall (monotonic) time anchor_wall */
	int64_t anchor_wall_ns, anchor_fab_ps;
	/* the effective pace over the last window */
	double pace_effective;
	int64_t win_wall_ns, win_fab_ps;
	uint64_t behind_windows;
	bool stopping;
	/* the virtual agents' totals, for GET /v1/status; NULL without --agents */
	json_t *(*agents_status)(void *ctx);
	void *agents_ctx;
	struct sim_snapper *snapper; /* POST /v1/snapshot/mark */
};

int simctl_init(struct simctl *c, struct sim *s, const char *scenario, double pace);
void simctl_fini(struct simctl *c);

/* The control API: method and path as in HTTP (path starts with /v1/), body may be NULL.
 * Returns the HTTP status and sets *ret_doc (a new reference).  Takes c->lock itself. */
int simctl_call(struct simctl *c, const char *method, const char *path, json_t *body,
		json_t **ret_doc);

/* With c->lock held: the Unix time in ns that the fabric's current time maps to. */
int64_t simctl_time_ns(const struct simctl *c);

int sim_serve_main(int argc, char **argv);

/* SONiC-shaped switches (sim/sonic.c): each spec SWITCH=REDIS publishes a simulated switch
 * into that redis in SONiC's layout every interval and applies its CONFIG_DB to the switch. */
struct sonic_pub;
#define SONIC_PUB_MAX 64
int sonic_pub_start(struct simctl *c, char *const *specs, size_t n, int64_t interval_ns,
		    struct sonic_pub **ret, struct rf_err *e);
void sonic_pub_stop(struct sonic_pub *pub);

#endif
