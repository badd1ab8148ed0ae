/* The sim backend's settings (keys sim.* of the agent's configuration): which device of a
 * running rocefab-sim an agent stands in for, and how to reach the simulator. */
#ifndef ROCEFAB_AGENTS_SIM_H
#define ROCEFAB_AGENTS_SIM_H

#include <jansson.h>

#include "lib/conf.h"

/* In-process transport (rocefab-sim's virtual agents): a control API call as simctl_call().
 * Returns the HTTP status. */
typedef int (*sim_call_fn)(void *ctx, const char *method, const char *path, json_t *body,
			   json_t **ret_doc);

struct sim_settings {
	char *url;    /* http://ADDR:PORT of rocefab-sim serve --control */
	char *device; /* the simulated host or switch */
	/* not configuration: in-process calls instead of HTTP (NULL: HTTP to url) */
	sim_call_fn call;
	void *ctx;
};

/* How an agent names a simulated host's one port: RDMA device, port, netdev.  (A switch is a
 * device named after the switch, its ports named by their neighbour.) */
#define SIM_AGENT_HOST_DEV "nic0"
#define SIM_AGENT_HOST_PORT "1"
#define SIM_AGENT_HOST_NETDEV "eth0"

extern const struct conf_opt backend_sim_opts[];

#endif
