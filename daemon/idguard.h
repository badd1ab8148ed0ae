/* One agent id, two agents: a host cloned from another keeps its host name, the default
 * agent.id, and both report as one agent.  Their reports interleave; every switch between
 * their boots reads as a reboot, a counter's whole value as traffic, and the two hosts'
 * counters mix in one series of each port.  A restarted agent also comes with a new boot id,
 * but once: its spool's full reports of the boot before go before its new ones (its fast PFC
 * reports go beside them: they are no turns).  So a full report of the boot before the current
 * one, twice (A, B, A, B), means two agents: from then on the boot that came second is refused
 * (the first keeps the id) until it, or the first, has been silent for IDGUARD_HOLD_NS.  A
 * third boot (the first one's host rebooted) is taken as ever, and keeps the id if the first
 * did.  Safe for several threads;
 * at most IDGUARD_MAX_AGENTS ids are followed (agents are those tokens may report as). */
#ifndef ROCEFAB_DAEMON_IDGUARD_H
#define ROCEFAB_DAEMON_IDGUARD_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define IDGUARD_HOLD_NS (600 * INT64_C(1000000000))
#define IDGUARD_MAX_AGENTS 1048576

struct idguard;

int idguard_new(struct idguard **ret);
void idguard_free(struct idguard *g);
/* Whether an agent id is followed yet; its boot as the store holds it, for the first sight of
 * it in this process (so that after a restart of rocefabd the boot that held the id keeps it,
 * not the first to report). */
bool idguard_knows(struct idguard *g, const char *agent);
void idguard_seed(struct idguard *g, const char *agent, const char *boot);
/* A report of agent `agent` made by agent boot `boot` at mono (CLOCK_MONOTONIC), a full one or
 * a fast PFC report (full false: refused with the boot refused, never counted as a turn: the
 * fast lane of a restarted agent goes beside its spool's reports of the boot before): 0 to
 * take it, -EUSERS to refuse it (held: the boot that holds the id, since: when the two were
 * seen to share it, on mono's clock), -ENOMEM.  A refusal ends when the refused boot or the
 * one that holds the id has been silent for IDGUARD_HOLD_NS. */
int idguard_check(struct idguard *g, const char *agent, const char *boot, bool full, int64_t mono, char held[65],
		  int64_t *since);
/* The ids shared now, for /api/v1/health: [{agent, held_by, refused, refused_reports}] (a new
 * array; NULL on allocation failure). */
json_t *idguard_shared(struct idguard *g, int64_t mono);

#endif
