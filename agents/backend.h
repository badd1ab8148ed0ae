/* Agent backends: where an agent reads inventory and counters, and applies changes.
 *
 * A backend is a table of operations (DESIGN.md §5) with settings and private data of its own.
 * backend_new() fills every slot the backend leaves NULL with a default (a stub that returns
 * -EOPNOTSUPP), so callers never test for NULL.
 *   linux  sysfs (/sys/class/infiniband, /sys/class/net), ethtool statistics, rtnetlink
 *   sim    one device of a running rocefab-sim, through its control API
 *   sonic  a SONiC switch through its redis (COUNTERS_DB, CONFIG_DB, APPL_DB)
 * A new backend: its file with its ops, settings and keys, and its line in backend.c's two
 * tables (docs/architecture.md). */
#ifndef ROCEFAB_BACKEND_H
#define ROCEFAB_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/conf.h"
#include "lib/err.h"
#include "lib/registry.h"

/* The largest speed and MTU rocefabd takes (daemon/report.c); the agent leaves out larger. */
#define PORT_MAX_SPEED_MBPS 10000000
#define PORT_MAX_MTU 1048576

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

/* The entry of a configuration list (read_config's "dcqcn", "pfc" or "ecn") for port, and for
 * queue when it is not negative; NULL when none. */
json_t *config_entry(json_t *list, const char *port, json_int_t queue);

/* Problems met while collecting go into the report's "errors" (bounded, deduplicated). */
void collect_error(json_t *errors, const char *code, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

struct backend;

/* Every slot has a default (backend_new() fills the ones a backend leaves NULL): callers never
 * test for NULL.  The defaults fail with -EOPNOTSUPP, as in rdma-core's dummy_ops. */
struct backend_ops {
	const char *name;
	const char *summary; /* for --help: "sysfs, netlink and verbs of this host" */

	/* Before the backend is opened, from its settings: the agent id it stands for when
	 * agent.id is empty (into id, 0), -ENOENT when none (then: the host name), or another
	 * negative errno with e naming the setting.  Default -ENOENT. */
	int (*default_id)(const void *settings, char id[65], struct rf_err *e);
	/* Where this host's proc/sys/kernel/random/boot_id is, or NULL when the agent does not
	 * report the host's boot (it runs elsewhere).  Default NULL. */
	const char *(*host_root)(const void *settings);

	int (*open)(struct backend *b, struct rf_err *e); /* default: nothing to open */
	void (*close)(struct backend *b);		  /* default: nothing to close */
	/* Replaces *inv with what is there now. */
	int (*inventory)(struct backend *b, struct agent_inventory *inv, json_t *errors);
	/* Appends report samples (schema: samples[]) for the ports of inv. */
	int (*collect)(struct backend *b, const struct agent_inventory *inv, json_t *samples,
		       json_t *errors);
	/* Current configuration (PFC, ECN, DCQCN) as JSON; new reference. */
	int (*read_config)(struct backend *b, json_t **ret);
	/* Applies a command (schemas/command.schema.json); *ret_outcome is a new reference. */
	int (*apply)(struct backend *b, json_t *command, json_t **ret_outcome);
	/* 1 when the device is a switch, 0 a host; negative when unknown (the agent's role
	 * setting decides). */
	int (*is_switch)(struct backend *b);
	/* Whether this agent probes (pingmesh): 0 when it does, with where its probe server
	 * listens (ADDRESS:PORT, told to the other hosts through rocefabd) in *ret_endpoint, or
	 * NULL when it has no endpoint (the simulator routes by name); -EOPNOTSUPP when not. */
	int (*probe_endpoint)(struct backend *b, const char **ret_endpoint);
	/* The QPs of this host (schema: the report's qps), a new reference in *ret; collection
	 * problems into errors.  Default -EOPNOTSUPP (no QP section in the report). */
	int (*qps)(struct backend *b, json_t **ret, json_t *errors);
	/* One round of a probe plan (the params of a probe_plan command).  Rounds run in the
	 * background: a call collects the last round's results when it is over (a new array in
	 * *ret_results, else NULL) and starts the next one. */
	int (*probe_round)(struct backend *b, json_t *plan, json_t **ret_results);
};

struct backend_env {
	const struct reg *reg;
	bool all_counters; /* send counters the registry does not know too */
	/* the backend's own settings: struct linux_settings (agents/linux.h), struct
	 * sim_settings (agents/sim.h), struct sonic_settings (agents/sonic.h); NULL: its
	 * defaults.  Read while backend_new() opens the
	 * backend, which copies what it needs later. */
	const void *settings;
};

struct backend {
	const struct backend_ops *ops;
	struct backend_env env;
	void *priv;
};

/* Every backend of this build, NULL-terminated, in the order messages list them. */
extern const struct backend_ops *const backend_list[];
/* A backend by name, or NULL. */
const struct backend_ops *backend_find(const char *name);
/* "linux, sim": the names of backend_list, into buf. */
const char *backend_names(char *buf, size_t len);
/* The ops above for a backend that is not open yet, by name (defaults for the slots it leaves
 * out, -ENOENT and NULL for an unknown name). */
int backend_default_id(const char *name, const void *settings, char id[65], struct rf_err *e);
const char *backend_host_root(const char *name, const void *settings);

/* Looks a backend up by name and opens it.  -ENOENT (UNKNOWN_BACKEND, naming the backends of
 * this build) for an unknown name. */
int backend_new(const char *name, const struct backend_env *env, struct backend **ret,
		struct rf_err *e);
void backend_free(struct backend *b);

/* The settings of every backend in one configuration (the agent's): a CONF_GROUP of this
 * table over a struct backend_settings holds each backend's keys (backend_<name>_opts over its
 * own settings struct). */
extern const struct conf_opt backend_conf_opts[];
#define BACKENDS_MAX 8
struct backend_settings {
	void *of[BACKENDS_MAX]; /* in backend_list's order */
};
/* The settings of the backend called name within bs, or NULL. */
const void *backend_settings_of(const struct backend_settings *bs, const char *name);

extern const struct backend_ops backend_linux_ops;
extern const struct backend_ops backend_sim_ops;
extern const struct backend_ops backend_sonic_ops;

#endif
