/* Switches, links and the fabric topology as read-side views (REST GET /api/v1/switches,
 * /links, /topology).  Links come from the neighbours each port reports (LLDP on real
 * hosts and switches, the simulator's topology under rocefab-sim): a link joins two ports that
 * name each other, or a port and a neighbour that has not reported (yet). */
#ifndef ROCEFAB_TOPO_H
#define ROCEFAB_TOPO_H

#include <jansson.h>

#include "daemon/store.h"
#include "daemon/views.h"
#include "lib/err.h"

int views_switches(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		   struct rf_err *e);
int views_switch(struct store_reader *rd, const struct views_opts *o, const char *id,
		 json_t **ret, struct rf_err *e);
int views_links(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		struct rf_err *e);
int views_topology(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		   struct rf_err *e);

/* Every link as GET /api/v1/links lists it, unfiltered: [{id, a: {node, port, port_id, state},
 * b: {...}, state, speed_mbps}] (a new array); a neighbour that has not reported has a null
 * port_id. */
int topo_links(struct store_reader *rd, json_t **ret, struct rf_err *e);
/* The role of an agent ("host", "switch") in *ret (static string), or -ENOENT. */
int views_agent_role(struct store_reader *rd, const char *id, const char **ret);
/* A port's speed in Mb/s (0 unknown), or -ENOENT when the agent has no such port. */
int views_port_speed(struct store_reader *rd, const char *agent, const char *device,
		     const char *port, int64_t *ret);

#endif
