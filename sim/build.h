/* Building a simulation from a scenario: shared by scenario.c, workload.c and fault.c. */
#ifndef ROCEFAB_SIM_BUILD_H
#define ROCEFAB_SIM_BUILD_H

#include <jansson.h>

#include "lib/hmap.h"
#include "lib/jsonutil.h"
#include "sim/internal.h"

struct build {
	struct sim *s;
	json_t *doc;
	const char *base_dir;
	struct rf_err *e;
	struct js_path p;
	bool runtime; /* a change while running (codes name the problem), not a scenario */
};

int sim_build_parse_dcqcn(struct build *b, json_t *d, struct sim_nic_cfg *c);
int sim_build_parse_ecn(struct build *b, json_t *x, struct sim_ecn_cfg *c);
int sim_build_parse_pfc(struct build *b, json_t *x, struct sim_pfc_cfg *c);

int sim_build(struct sim *s, json_t *doc, const char *base_dir, int64_t seed, int64_t until,
	      struct rf_err *e);

/* Fill e with BAD_SCENARIO at the current path (+ key) and return -EINVAL. */
int sim_build_bad(struct build *b, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sim_build_opt_num(struct build *b, json_t *o, const char *key, double min, double max,
		      bool excl_min, double *v);
/* A period or a length in microseconds, greater than 0: at least 1 ps, the simulator's step (a
 * sample_us of 1e-9 rounded to 0 ps, and the sampler re-armed itself at the same instant for
 * ever). */
int sim_build_opt_period_us(struct build *b, json_t *o, const char *key, double max, double *v);
int sim_build_opt_int(struct build *b, json_t *o, const char *key, int64_t min, int64_t max,
		      int64_t *v);
int sim_build_opt_bool(struct build *b, json_t *o, const char *key, bool *v);
int sim_build_check_keys(struct build *b, json_t *o, const char *const *keys);

struct node *sim_build_find_node(struct build *b, const char *name);
struct node *sim_build_resolve_host(struct build *b, json_t *ref, const char *key);
struct link *sim_build_resolve_link(struct build *b, json_t *ref, const char *key);

/* workload.c */
int sim_build_workloads(struct build *b, json_t *workloads);

/* fault.c */
int sim_build_faults(struct build *b, json_t *faults);
void sim_faults_free(struct sim *s);

#endif
