/* Ports that went down: a port its agent reports down, present, that was up once while
 * rocefabd watched (ports.was_up; one never up is unused, not a fault), of an agent that
 * reports on time (one gone stale has its own alert), raises a port_down alert until it is
 * up again, gone from the inventory, or its agent stale or forgotten.  A scheduler pass. */
#ifndef ROCEFAB_PORTWATCH_H
#define ROCEFAB_PORTWATCH_H

#include <stdint.h>

#include "daemon/store.h"

/* At most this many port_down alerts at a time (the first by port key; a switch that lost
 * every link is one thing to look at) */
#define PORTWATCH_MAX 256

struct portwatch;

int portwatch_new(struct store *s, int64_t stale_intervals, struct portwatch **ret);
void portwatch_free(struct portwatch *pw);
/* agents.stale_after, reloaded (SIGHUP) */
void portwatch_set_stale_intervals(struct portwatch *pw, int64_t n);
/* The pass (daemon/sched.h): reads the ports down and keeps the port_down alerts in step.
 * ctx is the portwatch. */
int portwatch_pass(void *ctx, int64_t now);

#endif
