/* rocefabctl's printers: one REST answer as text (aligned tables, "key: value" lines) or as
 * JSON (-j), on the stream they are given.  They only read the document (a borrowed
 * reference); a member that is absent or of another type prints as "-" in a table. */
#ifndef ROCEFAB_CLI_PRINT_H
#define ROCEFAB_CLI_PRINT_H

#include <stdio.h>

#include <jansson.h>

/* What every printer looks like: the command table holds them. */
typedef void print_fn(FILE *f, const json_t *doc);

/* The document as the REST API sent it, indented, and a newline. */
void print_json(FILE *f, const json_t *doc);

/* GET /api/v1/health, agents, hosts, counters (the registry), switches, links, params, alerts */
void print_health(FILE *f, const json_t *doc);
void print_agents(FILE *f, const json_t *doc);
void print_hosts(FILE *f, const json_t *doc);
void print_registry(FILE *f, const json_t *doc);
void print_switches(FILE *f, const json_t *doc);
void print_links(FILE *f, const json_t *doc);
/* GET /api/v1/topology: the nodes, then the links; GET /api/v1/version beside rocefabctl's. */
void print_topology(FILE *f, const json_t *doc);
void print_version(FILE *f, const json_t *doc);
void print_qps(FILE *f, const json_t *doc);
void print_params(FILE *f, const json_t *doc);
void print_alerts(FILE *f, const json_t *doc);
void print_alert(FILE *f, const json_t *alert);
void print_detector(FILE *f, const json_t *doc);
/* POST /api/v1/alerts/ID/mitigate's answer: the change queued. */
void print_mitigation(FILE *f, const json_t *doc);
void print_cc(FILE *f, const json_t *doc);
/* GET /api/v1/cc's outside_policy: how many, and the first (nothing when none). */
void print_cc_outside(FILE *f, const json_t *outside_policy);
/* GET /api/v1/hosts/HOST: the host, then each device with its port table. */
void print_host(FILE *f, const json_t *doc);
void print_agent(FILE *f, const json_t *doc);
void print_forgotten(FILE *f, const json_t *doc);
/* GET /api/v1/ports: the port table. */
void print_ports(FILE *f, const json_t *doc);
/* GET /api/v1/ports/PORT/counters: the last point of each series. */
void print_counters(FILE *f, const json_t *doc);
/* GET /api/v1/switches/SWITCH: its ports with neighbour, PFC and the ECN of lossless queues. */
void print_switch(FILE *f, const json_t *doc);
/* GET /api/v1/probes/matrix: the finding and the 20 worst pairs (loss, then p99). */
void print_probes(FILE *f, const json_t *doc);
/* A list of changes ("items", or "changes" as a batch's answer has them) as a table; one change
 * (GET /api/v1/changes/ID) a field a line. */
void print_changes(FILE *f, const json_t *doc);
/* An answer's "warnings" ({code, detail} each), a line each: "rocefabctl: warning: ...". */
void print_warnings(FILE *f, const json_t *doc);
void print_settings_log(FILE *f, const json_t *doc);

#endif
