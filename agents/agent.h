/* rocefab-agent: one agent = a backend, a report sequence, an outbox, a spool and a sender.
 *
 * Reports are built on a fixed cadence (agent.interval, plus up to agent.jitter of random
 * delay so that a fleet does not report in lock step).  Each report goes to an in-memory outbox
 * that a sender thread delivers; when rocefabd cannot be reached the report and everything
 * after it goes to the on-disk spool, which the sender drains first, oldest first, once
 * rocefabd answers again.  Order is kept: spool (oldest) -> outbox -> new reports. */
#ifndef ROCEFAB_AGENT_H
#define ROCEFAB_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "lib/conf.h"
#include "lib/err.h"

struct agent_settings {
	int log_level_idx, log_target;
	char *id;
	int role;
	char *server;
	char *token_file;
	int64_t interval;
	int64_t jitter_pct;
	int64_t timeout;
	char *ca_file;
	char *backend;
	char *spool_dir;
	uint64_t spool_max;
	bool spool_fsync;
	char *registry;
	bool all_counters;
	char *sysfs_root;
	char *devices;
	char *interfaces;
	int net_source;
};

extern const struct conf_opt agent_opts[];

struct agent;

/* Builds an agent from settings.  With deliver false (--once) nothing is sent: no server,
 * token or spool is needed. */
int agent_new(const struct agent_settings *s, bool deliver, struct agent **ret,
	      struct rf_err *e);
void agent_free(struct agent *a);
/* Collects and builds the next report (a new reference). */
int agent_build_report(struct agent *a, json_t **ret);
/* Runs until SIGTERM/SIGINT; returns the exit status. */
int agent_run(struct agent *a);

#endif
