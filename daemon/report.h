/* Agent reports (schemas/agent-report.schema.json): parsing and complete validation, and the
 * mapping of every raw value through the counter registry.  Nothing is written anywhere until a
 * report has passed report_parse(). */
#ifndef ROCEFAB_REPORT_H
#define ROCEFAB_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"
#include "lib/registry.h"

struct hmap;

enum report_role { REPORT_ROLE_HOST, REPORT_ROLE_SWITCH };

struct report_port {
	const char *device, *port; /* borrowed from the document */
	const char *netdev, *state, *link_layer;
	int64_t speed_mbps, mtu; /* -1: absent */
	const char *peer_system, *peer_port; /* the neighbour, NULL when unknown */
	uint32_t device_idx;
};

struct report_device {
	const char *name, *kind, *driver, *fw_version, *node_guid;
	uint32_t first_port, nports;
};

struct report_value {
	uint64_t raw;
	uint32_t scale;
	uint16_t counter; /* registry id */
	uint8_t prio;	  /* REG_NO_PRIO */
	uint8_t width;
	uint8_t wrap;
	uint8_t rank;
	bool skip; /* another source of the same port has a better rank */
};

struct report_sample {
	uint32_t port_idx;
	int64_t t_ns;
	uint32_t first_value, nvalues;
};

struct report {
	json_t *doc; /* owns every borrowed string */
	struct hmap *port_idx; /* private: "device\x1fport" -> port index + 1 (PFC reports) */
	const char *agent_id, *boot_id, *host_boot_id, *version, *hostname, *backend;
	enum report_role role;
	int64_t seq, time_ns, interval_ms;
	struct report_device *devices;
	struct report_port *ports;
	struct report_sample *samples;
	struct report_value *values;
	uint32_t ndevices, nports, nsamples, nvalues;
	json_t *absent; /* borrowed array of device names, NULL when absent */
	uint32_t unknown_values; /* raw values the registry does not know (ignored) */
	int64_t spool_dropped, spool_queued;
	json_t *errors; /* borrowed; NULL when absent */
	json_t *config; /* borrowed {"dcqcn": [...], "pfc": [...], "ecn": [...]}; NULL when absent */
	json_t *command_results; /* borrowed array; NULL when absent */
	const char *probe_plan;	 /* the plan the agent runs ("" none); NULL: it does not probe */
	json_t *probe_results;	 /* borrowed array; NULL when absent */
	const char *probe_endpoint; /* ADDRESS:PORT of its probe server; NULL: none (simulated) */
	const char *probe_endpoint_refused; /* one given that is not handed to the probers (a name, a
					     * link-local address, ...): the agent's errors say so */
	json_t *qps;		    /* borrowed: the host's QP table, summarized; NULL when absent */
	/* spooled by its agent before it took another id (POST ...?replay=true): stored, but it
	 * gets no commands and does not make the agent seen now (its time does) */
	bool replay;
};

/* Parses and validates body.  On failure e names the JSON pointer of the first problem and
 * carries code BAD_JSON, SCHEMA_VIOLATION or UNSUPPORTED_SCHEMA. */
int report_parse(const char *body, size_t len, const struct reg *reg, struct report **ret,
		 struct rf_err *e);
/* A fast-lane PFC report (schemas/pfc-report.schema.json): agent, seq, time_ns, interval_ms
 * and samples only; its ports are its samples' (no inventory).  Same errors. */
int report_parse_pfc(const char *body, size_t len, const struct reg *reg, struct report **ret,
		     struct rf_err *e);
void report_free(struct report *r);
const char *report_role_name(enum report_role r);

#endif
