/* Pingmesh on a real host (backend linux): the agent's probe server, which answers the other
 * hosts' probes, and the probe rounds of the plan rocefabd gives, run one target at a time on
 * a thread of their own with the probe engine (agents/probe/).
 *
 * The plan (a probe_plan command's params) names its targets by agent id and, in
 * "endpoints", where each one's probe server listens (each agent says where in its reports).
 * A target without an endpoint is not probed.  A target whose server cannot be reached, or
 * stops answering, counts every probe of the round as lost: that is what a dead host or a
 * broken path looks like.  A failure on this side (no RDMA device, a server that refuses the
 * operation) is logged and not reported: it says nothing about the network. */
#ifndef ROCEFAB_LINUX_PROBE_H
#define ROCEFAB_LINUX_PROBE_H

#include <jansson.h>

#include "lib/err.h"

struct lprobe;

/* Listens on listen (ADDRESS:PORT, the address other hosts reach this one at) and serves
 * probes there; device: the RDMA device for verbs probes ("" or NULL: the first). */
int lprobe_start(const char *listen, const char *device, struct lprobe **ret, struct rf_err *e);
void lprobe_stop(struct lprobe *lp);
const char *lprobe_endpoint(const struct lprobe *lp);
/* The last round's results (a new array when a round is over, else NULL), and the next round
 * started with plan. */
int lprobe_round(struct lprobe *lp, json_t *plan, json_t **ret_results);

#endif
