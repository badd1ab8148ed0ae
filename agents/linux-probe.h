/* Pingmesh on a real host (backend linux): the agent's probe server, which answers the other
 * hosts' probes, and the probe rounds of the plan rocefabd gives, run one target at a time on
 * a thread of their own with the probe engine (agents/probe/).
 *
 * The plan (a probe_plan command's params) names its targets by agent id and, in
 * "endpoints", where each one's probe server listens (each agent says where in its reports).
 * A target without an endpoint is not probed.  A target whose server cannot be reached, or
 * stops answering, counts every probe of the round as lost: that is what a dead host or a
 * broken path looks like.  A failure on this side (no RDMA device, a server that refuses the
 * operation) is logged and not reported: it says nothing about the network.
 *
 * The rounds keep to a CPU budget (probe.cpu_percent of one core, CPU time of the round's
 * thread, system time included): after each target, the thread pauses until what it has used
 * is within the budget of the time the round has taken.  Busy-polled verbs probes are cheap
 * per probe but poll at 100 %; the budget spreads them out instead of cutting them short. */
#ifndef ROCEFAB_LINUX_PROBE_H
#define ROCEFAB_LINUX_PROBE_H

#include <jansson.h>

#include "lib/err.h"

struct lprobe;

/* Listens on listen (ADDRESS:PORT, the address other hosts reach this one at) and serves
 * probes there; device: the RDMA device for verbs probes ("" or NULL: the first); cpu_pct:
 * the rounds' CPU budget in percent of one core (0: 5). */
int lprobe_start(const char *listen, const char *device, unsigned cpu_pct, struct lprobe **ret,
		 struct rf_err *e);
/* How long a round that has used cpu_ms of CPU in wall_ms must pause to be back within
 * cpu_pct percent (0: it is). */
double lprobe_pause_ms(double cpu_ms, double wall_ms, unsigned cpu_pct);
void lprobe_stop(struct lprobe *lp);
const char *lprobe_endpoint(const struct lprobe *lp);
/* The last round's results (a new array when a round is over, else NULL), and the next round
 * started with plan. */
int lprobe_round(struct lprobe *lp, json_t *plan, json_t **ret_results);

#endif
