/* Pingmesh: who probes whom, the results, the latency matrix and the faults it points at.
 *
 * rocefabd plans: every host probes every other host under its ToR, and a rotating sample of
 * hosts under other ToRs (pingmesh.inter_tor per round, a new sample every rotate_s).  The plan
 * rides to each host's agent as a probe_plan command in the answer to its report whenever the
 * plan the agent reports it runs differs; the agent runs a round every report interval and
 * reports per-target, per-path statistics.  The matrix is the results over a window; the
 * localization (cc/localize.h) names the host, link, ToR or fabric that explains the bad pairs,
 * and becomes an alert (daemon/alerts.h) while it lasts.
 *
 * A struct pingmesh holds the state: the writer thread's view of the configuration, the hosts'
 * ToRs and probe endpoints (pingmesh_on_report, an ingest hook), and the last localization's
 * /metrics text (pingmesh_localize, a scheduler pass).  The matrix and the results are read
 * from the store by any reader (pingmesh_matrix, pingmesh_results). */
#ifndef ROCEFAB_PINGMESH_H
#define ROCEFAB_PINGMESH_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/report.h"
#include "daemon/store.h"
#include "lib/buf.h"
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
/* Load from the store (meta key "pingmesh"), on a reader connection. */
int pingmesh_conf_load(struct store_reader *rd, struct pingmesh_conf *ret);

/* --- the pingmesh of a rocefabd ----------------------------------------------------------- */

struct pingmesh;

/* The window of results the localization pass reads, and how often rocefabd runs it. */
#define PINGMESH_WINDOW_NS (10 * INT64_C(1000000000))
#define PINGMESH_PASS_NS (5 * INT64_C(1000000000))

struct pingmesh_opts {
	int64_t window_ns;  /* of the localization pass; 0: PINGMESH_WINDOW_NS */
	bool metrics_pairs; /* per-pair families in /metrics (api.metrics_probe_pairs) */
};

int pingmesh_new(struct store *s, const struct pingmesh_opts *o, struct pingmesh **ret);
void pingmesh_free(struct pingmesh *pm);

/* Saves a configuration (a store job; waits for its commit), as asked by actor for reason over
 * the one before, was (the settings log, store_meta_put_by; actor NULL: not logged); the plans
 * follow it at once. */
int pingmesh_conf_save(struct pingmesh *pm, const struct pingmesh_conf *c, const struct pingmesh_conf *was,
		       const char *actor, const char *reason);
/* A change of the configuration as stored (PUT /api/v1/probes/config): merged, validated (e
 * names what is wrong: nothing saved) and saved as above, one change at a time; *ret the new
 * one.  -EAGAIN: the store could not be read or written (STORE_ERROR, STORE_UNAVAILABLE). */
int pingmesh_conf_change(struct pingmesh *pm, json_t *changes, const char *actor, const char *reason,
			 struct pingmesh_conf *ret, struct rf_err *e);

/* An ingest hook (daemon/ingest.h), on the writer thread inside a report's transaction:
 * stores the report's probe results and, for a host agent that probes, appends its plan to
 * commands when it runs another.  ctx is the struct pingmesh. */
int pingmesh_on_report(void *ctx, struct store *s, const struct report *rep, int64_t now,
		       json_t *commands);

/* What may explain a localization over its window (window_ns back from now: the PFC
 * detector's findings, active or over within it): returns true, the cause's alert subject in
 * buf and its alert kind in *ret_kind (a static string) when one does.  The pass then
 * attributes its finding to it (evidence and details say so) instead of raising it as a root
 * cause of its own. */
typedef bool (*pingmesh_explain_fn)(void *ctx, const char *kind, const char *subject, int64_t window_ns, char *buf,
				    size_t len, const char **ret_kind);
void pingmesh_set_explainer(struct pingmesh *pm, pingmesh_explain_fn fn, void *ctx);
/* Each finding of a matrix document (pingmesh_matrix's, over window_ns) that the explainer
 * explains gets "attributed_to" {kind, subject}, as the localization pass's own matrix has. */
void pingmesh_attribute(struct pingmesh *pm, json_t *doc, int64_t window_ns);

/* A scheduler pass (daemon/sched.h): localizes from the current matrix, keeps the alerts in
 * step (a new finding raises one, one that is gone is cleared) and keeps the finding (and
 * with metrics_pairs, the latency and loss per pair) for /metrics.  ctx is the pingmesh. */
int pingmesh_localize(void *ctx, int64_t now);
/* The pingmesh families of /metrics (per-pair p50, p99 and loss, the finding) as of the last
 * pingmesh_localize(); nothing before the first. */
void pingmesh_render_metrics(struct pingmesh *pm, struct buf *out);

/* The tail latency the congestion-control tuner watches (daemon/tuner.h): over the pairs whose
 * results of the primary op and size reports brought since the previous call (the latest per
 * pair; a pair whose probes were all lost counts as the probe timeout), the median pair's p99
 * (the fabric's typical tail, which one bad pair does not move) in *p99_us, and how many pairs
 * in *n (may be NULL).  -ENOENT: none came.  Each call starts the next interval; nothing is
 * kept before the first (a rocefabd without the tuner pays nothing on ingest).  A result
 * counts once stored, even if its report's transaction then fails: it was measured. */
int pingmesh_take_tail(struct pingmesh *pm, double *p99_us, size_t *n);

/* --- reading (any reader connection) ------------------------------------------------------ */

/* The latency matrix of one op and size (NULL, 0: the configuration's primary ones) over the
 * last window_ns: per pair and path (without paths: per pair only, and "through" on the pairs
 * whose paths cross the finding's link), and per pair; with the localization's finding. */
int pingmesh_matrix(struct store_reader *rd, int64_t now, int64_t window_ns, const char *op,
		    unsigned size, bool paths, json_t **ret, struct rf_err *e);
/* The matrix of pairs (as pingmesh_matrix without paths, with "as_of") that the last
 * localization pass computed, when it is of this op and size (NULL, 0: any, i.e. the primary
 * ones), of window_ns, and no older than two passes: a copy of its JSON text in *ret (0), or
 * -ENOENT.  Serves the heatmap of a large fabric at once, whoever asks how often.  A call
 * (found or not) asks the passes of the next minute to keep it ready. */
int pingmesh_matrix_cached(struct pingmesh *pm, const char *op, unsigned size, int64_t window_ns,
			   int64_t now, char **ret, size_t *ret_len);
/* Results by source, destination, op and size (NULL or 0: any) and time. */
int pingmesh_results(struct store_reader *rd, const char *src, const char *dst, const char *op,
		     unsigned size, int64_t from, int64_t to, unsigned limit, json_t **ret,
		     struct rf_err *e);

#endif
