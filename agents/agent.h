/* rocefab-agent core: agents and the fleet that delivers their reports.
 *
 * An agent is one reporting identity (a host or a switch) with a backend, a report sequence,
 * an outbox, an on-disk spool and the results of the commands rocefabd sent it.  A fleet runs
 * any number of agents in one process: a scheduler thread builds each agent's report on its
 * cadence (agent.interval, plus up to agent.jitter of random delay; a fleet spreads its agents
 * over the interval), and a few delivery threads post them to rocefabd.  rocefab-agent is a
 * fleet of one; rocefab-sim serve --agents is a fleet of one agent per simulated device.
 *
 * Delivery keeps each agent's order: spool (oldest) -> outbox -> new reports.  When rocefabd
 * cannot be reached, the report and everything after it goes to the agent's spool, which is
 * sent first, oldest first, once rocefabd answers again (with per-agent backoff).  Commands
 * come back in the answers to reports; the agent applies each one once (read-modify-write in
 * the backend, unless its deadline passed) and reports the outcome in its following reports
 * until one of them is acknowledged. */
#ifndef ROCEFAB_AGENT_H
#define ROCEFAB_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "agents/backend.h"
#include "lib/conf.h"
#include "lib/err.h"
#include "lib/registry.h"

struct agent_settings {
	int log_level_idx, log_target;
	char *id;
	int role;
	char *server;
	char *token_file;
	int64_t interval;
	int64_t pfc_interval;
	int64_t jitter_pct;
	int64_t timeout;
	char *ca_file;
	char *tls_cert, *tls_key;
	char *backend;
	char *spool_dir;
	uint64_t spool_max;
	bool spool_fsync;
	char *registry;
	bool all_counters;
	struct backend_settings *backends; /* each backend's own (agents/backend.h) */
};

extern const struct conf_opt agent_opts[];

enum agent_role { AGENT_HOST, AGENT_SWITCH };

struct agent;

struct agent_conf {
	const char *id;
	enum agent_role role;
	const char *backend_name; /* for reports */
	struct backend *backend;  /* the agent owns it */
	const char *spool_dir;	  /* NULL: no spool (agent_create() for --once) */
	uint64_t spool_max;
	bool spool_fsync;
	int64_t interval_ns;
	int64_t pfc_interval_ns; /* the fast PFC lane's reports; 0: none */
	const char *host_boot_root; /* where proc/sys/kernel/random/boot_id is; NULL: none */
	bool use_hostname;	     /* report this machine's host name */
};

/* An agent without delivery (rocefab-agent --once, tests). */
int agent_create(const struct agent_conf *c, struct agent **ret, struct rf_err *e);
void agent_destroy(struct agent *a);
/* Collects and builds the next report (a new reference). */
int agent_build_report(struct agent *a, json_t **ret);
const char *agent_id(const struct agent *a);
/* Builds a fast PFC report (schemas/pfc-report.schema.json; a new reference): the lossless
 * priorities' pause counters and states, queue depths and traffic of every port. */
int agent_build_pfc_report(struct agent *a, json_t **ret);
/* Handles the answer to a report: applies its commands, forgets the command results it
 * acknowledges. */
void agent_handle_answer(struct agent *a, json_t *answer);

/* Builds the agent of rocefab-agent from its settings (loads the registry and opens the
 * backend).  The registry must outlive the agent. */
int agent_from_settings(const struct agent_settings *s, bool deliver, struct reg **ret_reg,
			struct agent **ret, struct rf_err *e);

struct fleet_conf {
	const char *server; /* http(s)://host:port of rocefabd */
	const char *token;
	const char *token_file; /* where token was read: read again while rocefabd refuses it (NULL: not) */
	const char *ca_file;
	const char *client_cert, *client_key; /* PEM (mTLS); NULL: none */
	int64_t timeout_ns;
	int64_t interval_ns;
	int jitter_pct;
	unsigned threads; /* delivery threads */
	bool spread;	  /* spread the agents' first reports over one interval */
};

struct fleet;

int fleet_new(const struct fleet_conf *c, struct fleet **ret, struct rf_err *e);
/* Adds an agent built with agent_create() (with a spool); the fleet owns it from then on. */
int fleet_add(struct fleet *f, struct agent *a, struct rf_err *e);
int fleet_start(struct fleet *f, struct rf_err *e);
/* Stops the threads; whatever was not delivered stays in the spools.  Frees the agents. */
void fleet_free(struct fleet *f);
/* Totals: agents, reports built, delivered, refused, waiting, commands applied and failed. */
json_t *fleet_status(struct fleet *f);
/* Reads a token file as tokenfile_read() does (lib/tokenfile.h: refused when others may read
 * or write it), logging its warning when the group may. */
int agent_read_token(const char *path, char **ret, struct rf_err *e);

#endif
