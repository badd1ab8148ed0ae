/* The QPs of a real host (backend linux): the QP table of every RDMA device through RDMA
 * netlink (agents/rdmanl.h), summarized for the report's "qps" (schemas/agent-report.schema.json):
 * totals by type and state, the processes that own them, the QPs that entered the error state
 * since the last report, and a bounded list of QPs (those in error first, then the busiest by
 * their bound counters, where the driver keeps per-QP counters).
 *
 * A recorded tree (linux.sysfs_root) is read from its rdma-netlink/ directory instead of the
 * kernel: the answers as the kernel gave them, devs.bin (RDMA_NLDEV_CMD_GET), qp-DEV.bin
 * (RDMA_NLDEV_CMD_RES_QP_GET) and stat-DEV-PORT.bin (RDMA_NLDEV_CMD_STAT_GET of QP counters),
 * which linux.rdma_record=DIR writes from a live host. */
#ifndef ROCEFAB_LINUX_QP_H
#define ROCEFAB_LINUX_QP_H

#include <jansson.h>

#include "lib/err.h"

struct lqp;

/* root: "" for the kernel, else a recorded tree; record: "" or where to write the answers;
 * max_items: the most QPs listed in a report. */
int lqp_new(const char *root, const char *record, unsigned max_items, struct lqp **ret);
/* Reads at most every interval_ns (0: every time); between reads lqp_read() says -EAGAIN. */
void lqp_set_interval(struct lqp *q, int64_t interval_ns);
void lqp_free(struct lqp *q);
/* The report's "qps" (a new reference) or a negative errno with a collection error in errors
 * (no RDMA in this kernel, an answer that is garbage). */
int lqp_read(struct lqp *q, json_t **ret, json_t *errors);

#endif
