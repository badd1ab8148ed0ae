/* The baseline the detector is measured against: a SONiC-style PFC watchdog, per switch queue,
 * on the same snapshots (../shared/reference/rdma-fabric-facts.md section 4.4).
 *
 * A poll counts as "stormed" for a lossless queue when the port received PFC frames for the
 * priority, saw no XON transition, and was paused at the previous poll and at this one (two
 * agreeing samples).  Each stormed poll charges the elapsed time to a countdown of detection_us;
 * any other poll resets it.  At zero the queue is "stormed": action drop
 * (its packets and arrivals are discarded and its pauses ignored).  It is restored after
 * restoration_us with no pause frame received.  No I/O: the caller applies the actions. */
#ifndef ROCEFAB_CC_PFCWD_H
#define ROCEFAB_CC_PFCWD_H

#include <stdbool.h>
#include <stdint.h>

#include "cc/snap.h"

struct cc_wd_conf {
	int64_t detection_us, restoration_us; /* SONiC: 200 ms, 200 ms, polled every 200 ms */
};

enum cc_wd_op { CC_WD_DROP, CC_WD_RESTORE };

struct cc_wd_action {
	enum cc_wd_op op;
	char node[96], port[96];
	uint8_t prio;
};

struct cc_wd;

/* SONiC's defaults scaled to a polling interval: detection = restoration = the interval. */
struct cc_wd_conf cc_wd_scaled(int64_t interval_us);
struct cc_wd *cc_wd_new(const struct cc_wd_conf *c);
void cc_wd_free(struct cc_wd *w);
/* One poll.  *ret and *ret_n: the actions of this poll (valid until the next call).  0 or -ENOMEM. */
int cc_wd_poll(struct cc_wd *w, const struct cc_snap *s, const struct cc_wd_action **ret, size_t *ret_n);
/* Queues in the stormed state now. */
size_t cc_wd_stormed(const struct cc_wd *w);

#endif
