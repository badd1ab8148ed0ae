/* One agent id, two agents: a host cloned from another keeps its host name, the default
 * agent.id, and both report as one agent.  Their reports interleave; every switch between
 * their boots reads as a reboot, a counter's whole value as traffic, and the two hosts'
 * counters mix in one series of each port.  A restarted agent also comes with a new boot id,
 * but once: its spool's reports of the boot before go first.  So a report of the boot before
 * the current one, twice (A, B, A, B), means two agents: from then on the boot that came
 * second is refused (the first keeps the id) until it has been silent for IDGUARD_HOLD_NS.
 * A third boot (the first one's host rebooted) is taken as ever.  Safe for several threads;
 * at most IDGUARD_MAX_AGENTS ids are followed (agents are those tokens may report as). */
#ifndef ROCEFAB_DAEMON_IDGUARD_H
#define ROCEFAB_DAEMON_IDGUARD_H

#include <stdint.h>

#include <jansson.h>

#define IDGUARD_HOLD_NS (600 * INT64_C(1000000000))
#define IDGUARD_MAX_AGENTS 1048576

struct idguard;

int idguard_new(struct idguard **ret);
void idguard_free(struct idguard *g);
/* A report of agent `agent` made by agent boot `boot` at mono (CLOCK_MONOTONIC): 0 to take it,
 * -EUSERS to refuse it (held: the boot that holds the id, since: when the two were seen to
 * share it, on mono's clock), -ENOMEM. */
int idguard_check(struct idguard *g, const char *agent, const char *boot, int64_t mono, char held[65],
		  int64_t *since);
/* The ids shared now, for /api/v1/health: [{agent, held_by, refused, refused_reports}] (a new
 * array; NULL on allocation failure). */
json_t *idguard_shared(struct idguard *g, int64_t mono);

#endif
