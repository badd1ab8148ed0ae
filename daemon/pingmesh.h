/* Pingmesh: who probes whom, the results, the latency matrix and the faults it points at.
 *
 * rocefabd plans: every host probes every other host under its ToR, and a rotating sample of
 * hosts under other ToRs (pingmesh.inter_tor per round, a new sample every rotate_s).  The plan
 * rides to each host's agent as a probe_plan command in the answer to its report whenever the
 * plan the agent reports it runs differs; the agent runs a round every report interval and
 * reports per-target, per-path statistics.  The matrix is the results over a window; the
 * localization (cc/localize.h) names the host, link, ToR or fabric that explains the bad pairs,
 * and becomes an alert while it lasts. */
#ifndef ROCEFAB_PINGMESH_H
#define ROCEFAB_PINGMESH_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/report.h"
#include "daemon/store.h"
#include "lib/err.h"

#define PINGMESH_MAX_OPS 4
#define PINGMESH_MAX_SIZES 4

/* Every round probes each target with every op at every size; the first op and the first
 * size are the primary ones: the matrix, the localization and /metrics use them unless asked
 * for another. */
struct pingmesh_conf {
	bool enabled;
	char ops[PINGMESH_MAX_OPS][8];
	unsigned nops;
	unsigned sizes[PINGMESH_MAX_SIZES];
	unsigned nsizes;
	unsigned count, paths, inter_tor;
	unsigned rotate_s;
	double timeout_us;
};

extern const struct pingmesh_conf pingmesh_defaults;

/* The configuration as JSON, and a change of it (validated; unknown fields refused). */
json_t *pingmesh_conf_json(const struct pingmesh_conf *c);
int pingmesh_conf_apply(struct pingmesh_conf *c, json_t *changes, struct rf_err *e);
/* Load from, and save to, the store (meta key "pingmesh"); save runs as a store job. */
int pingmesh_conf_load(struct store_reader *rd, struct pingmesh_conf *ret);
int pingmesh_conf_save(struct store *s, const struct pingmesh_conf *c);

/* On the writer thread, inside a report's transaction: stores the report's probe results and,
 * for a host agent that probes, appends its plan to *commands when it runs another. */
int pingmesh_on_report(struct store *s, const struct report *rep, int64_t now, json_t *commands);

/* The latency matrix of one op and size (NULL, 0: the configuration's primary ones) over the
 * last window_ns: per pair and path, and per pair; with the localization's finding. */
int pingmesh_matrix(struct store_reader *rd, int64_t now, int64_t window_ns, const char *op,
		    unsigned size, json_t **ret, struct rf_err *e);
/* Results by source, destination, op and size (NULL or 0: any) and time. */
int pingmesh_results(struct store_reader *rd, const char *src, const char *dst, const char *op,
		     unsigned size, int64_t from, int64_t to, unsigned limit, json_t **ret,
		     struct rf_err *e);

/* Runs the localization over the current matrix and keeps the alerts table in step: a new
 * finding opens an alert, one that is gone clears it; keeps the finding (and with pairs, the
 * latency and loss per pair) for /metrics.  For the daemon's loop. */
int pingmesh_alerts_update(struct store *s, int64_t now, int64_t window_ns, bool pairs);
struct buf;
/* The pingmesh families of /metrics (per-pair p50, p99 and loss, the finding) as of the last
 * pingmesh_alerts_update; nothing before the first. */
void pingmesh_render_metrics(struct buf *out);
int pingmesh_alerts(struct store_reader *rd, const char *state, json_t **ret, struct rf_err *e);

#endif
