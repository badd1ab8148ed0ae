/* Log lines limited per key: a line for a key is due at most once per interval, whatever a
 * client does (one line per token and agent a minute, not one per request).  The table of keys
 * is bounded; safe for several threads.  A static one: RATELIMIT_INIT. */
#ifndef ROCEFAB_RATELIMIT_H
#define ROCEFAB_RATELIMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/hmap.h"

/* Fields are the module's own. */
struct ratelimit {
	pthread_mutex_t lock;
	struct hmap keys; /* key -> struct entry (ratelimit.c) */
	size_t max_keys;
	int64_t interval_ns;
	int64_t sweep_after_ns; /* when full: no entry is old enough to go before this */
};

#define RATELIMIT_INIT(max, interval)                                                              \
	{ .lock = PTHREAD_MUTEX_INITIALIZER, .max_keys = (max), .interval_ns = (interval) }

/* Whether a line for key is due at now_ns (monotonic): the first call for a key is, then the
 * first one interval after the key's last line.  When due, *ret_suppressed (may be NULL)
 * receives how many calls for key were not due since its last line.  Keys not due for an
 * interval are forgotten when the table is full; while it is full of keys seen within the
 * interval, a new key is not due (the number of lines stays bounded). */
bool ratelimit_due(struct ratelimit *rl, const char *key, int64_t now_ns, uint64_t *ret_suppressed);
/* Forgets every key (the lock stays usable). */
void ratelimit_fini(struct ratelimit *rl);

#endif
