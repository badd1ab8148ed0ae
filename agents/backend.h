/* Agent backends: where an agent reads inventory and counters, and applies changes.
 *
 * A backend is a table of operations (DESIGN.md §5).  backend_new() fills every slot the
 * backend leaves NULL with a stub that returns -EOPNOTSUPP, so callers never test for NULL.
 *   linux  sysfs (/sys/class/infiniband, /sys/class/net), ethtool statistics, rtnetlink
 *   sim    one device of a running rocefab-sim, through its control API */
#ifndef ROCEFAB_BACKEND_H
#define ROCEFAB_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"
#include "lib/registry.h"

struct agent_port {
	char port[64];
	char netdev[64]; /* "" when none */
	char state[16];	 /* up, down, init, unknown */
	char link_layer[16];
	int64_t speed_mbps, mtu; /* -1 unknown */
	/* the neighbour (LLDP, or the simulator's topology): its system name (agent id) and
	 * port; "" when unknown */
	char peer_system[64];
	char peer_port[64];
};

struct agent_device {
	char name[64];
	char kind[16]; /* rdma, netdev, switch */
	char driver[64];
	char fw_version[64];
	char node_guid[64];
	struct agent_port *ports;
	size_t nports;
};

struct agent_inventory {
	struct agent_device *devs;
	size_t ndevs;
	char (*absent)[64]; /* configured devices or interfaces that are not there */
	size_t nabsent;
};

void inventory_clear(struct agent_inventory *inv);
struct agent_device *inventory_add_device(struct agent_inventory *inv);
struct agent_port *inventory_add_port(struct agent_device *d);
int inventory_add_absent(struct agent_inventory *inv, const char *name);

/* Problems met while collecting go into the report's "errors" (bounded, deduplicated). */
void collect_error(json_t *errors, const char *code, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

struct backend;

struct backend_ops {
	const char *name;
	int (*open)(struct backend *b, struct rf_err *e);
	void (*close)(struct backend *b);
	/* Replaces *inv with what is there now. */
	int (*inventory)(struct backend *b, struct agent_inventory *inv, json_t *errors);
	/* Appends report samples (schema: samples[]) for the ports of inv. */
	int (*collect)(struct backend *b, const struct agent_inventory *inv, json_t *samples,
		       json_t *errors);
	/* Current configuration (PFC, ECN, DCQCN) as JSON; new reference. */
	int (*read_config)(struct backend *b, json_t **ret);
	/* Applies a command (schemas/command.schema.json); *ret_outcome is a new reference. */
	int (*apply)(struct backend *b, json_t *command, json_t **ret_outcome);
	/* Optional: 1 when the device is a switch, 0 a host, negative when unknown. */
	int (*is_switch)(struct backend *b);
	/* Optional: one round of a probe plan (the params of a probe_plan command).  Rounds run
	 * in the background: a call collects the last round's results when it is over (a new
	 * array in *ret_results, else NULL) and starts the next one. */
	int (*probe_round)(struct backend *b, json_t *plan, json_t **ret_results);
	/* Optional, with probe_round: where this host's probe server listens (ADDRESS:PORT), told
	 * to the other hosts through rocefabd; NULL: this agent does not probe (not configured).
	 * Without the op, the agent probes and has no endpoint (the simulator routes by name). */
	const char *(*probe_endpoint)(struct backend *b);
};

/* In-process transport of the sim backend (rocefab-sim's virtual agents): a control API call
 * as simctl_call().  Returns the HTTP status. */
typedef int (*sim_call_fn)(void *ctx, const char *method, const char *path, json_t *body,
			   json_t **ret_doc);

struct backend_env {
	const struct reg *reg;
	bool all_counters; /* send counters the registry does not know too */
	/* linux */
	const char *sysfs_root;
	const char *devices;	/* comma-separated filter; "" = all */
	const char *interfaces; /* comma-separated netdevs without RDMA to report */
	int net_source;		/* 0 auto, 1 live, 2 files */
	const char *probe_listen; /* pingmesh: ADDRESS:PORT of the probe server; "" none */
	const char *probe_device; /* RDMA device for verbs probes; "" the first */
	unsigned probe_cpu_pct;	  /* the probe rounds' CPU budget, percent of a core (0: 5) */
	/* DCB netlink transport for PFC; NULL: the kernel's (tests give a fake) */
	int (*dcb_xfer)(void *ctx, const void *req, size_t len, void *reply, size_t cap,
			size_t *ret_len);
	void *dcb_ctx;
	/* sim */
	const char *sim_url;	/* http://ADDR:PORT of rocefab-sim serve --control */
	const char *sim_device; /* the simulated host or switch */
	sim_call_fn sim_call;	/* in-process instead of HTTP */
	void *sim_ctx;
};

struct backend {
	const struct backend_ops *ops;
	struct backend_env env;
	void *priv;
};

/* Looks a backend up by name and opens it.  -ENOENT for an unknown name. */
int backend_new(const char *name, const struct backend_env *env, struct backend **ret,
		struct rf_err *e);
void backend_free(struct backend *b);

extern const struct backend_ops backend_linux_ops;
extern const struct backend_ops backend_sim_ops;

#endif
