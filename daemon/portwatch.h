/* Ports that went down: a port its agent reports down (or reported down last, if it went
 * silent), present, that was up while rocefabd watched (ports.was_up, reset when the port
 * leaves the inventory; one never up is unused, not a fault) raises a port_down alert until it
 * is up again, gone from the inventory, or its agent forgotten.  A scheduler pass. */
#ifndef ROCEFAB_PORTWATCH_H
#define ROCEFAB_PORTWATCH_H

#include <stdint.h>

#include "daemon/store.h"

/* At most this many port_down alerts at a time, the ports down longest (the alerts list shows
 * 200: the others' alerts must stay in it); the rest is logged */
#define PORTWATCH_MAX 64

struct portwatch;

int portwatch_new(struct store *s, struct portwatch **ret);
void portwatch_free(struct portwatch *pw);
/* The pass (daemon/sched.h): reads the ports down and keeps the port_down alerts in step.
 * ctx is the portwatch. */
int portwatch_pass(void *ctx, int64_t now);

#endif
