/* The sonic backend's settings (keys sonic.* of the agent's configuration), and SONiC's
 * databases as both the backend and rocefab-sim's SONiC-shaped switches use them.
 *
 * A SONiC switch keeps its state in one redis, in numbered databases: APPL_DB 0 (port
 * operational state, LLDP neighbours), COUNTERS_DB 2 (SAI statistics by object id, with name
 * maps), CONFIG_DB 4 (the configuration: ports, QoS maps, WRED/ECN profiles, buffer profiles),
 * STATE_DB 6.  CONFIG_DB keys are TABLE|KEY, APPL_DB and COUNTERS_DB keys TABLE:KEY. */
#ifndef ROCEFAB_AGENTS_SONIC_H
#define ROCEFAB_AGENTS_SONIC_H

#include <stdint.h>

#include "lib/conf.h"
#include "lib/err.h"

#define SONIC_APPL_DB 0
#define SONIC_COUNTERS_DB 2
#define SONIC_CONFIG_DB 4

enum sonic_port_names { SONIC_PORT_NAME, SONIC_PORT_ALIAS };
enum sonic_clock { SONIC_CLOCK_AGENT, SONIC_CLOCK_SIM };

/* Where rocefab-sim's SONiC-shaped switches keep the fabric time (Unix ns) their counters were
 * read at, field time_ns, updated with the counters in one transaction (sonic.clock = sim). */
#define SONIC_SIM_CLOCK "ROCEFAB_SIM_CLOCK"

struct sonic_settings {
	char *redis;	 /* unix:PATH, an absolute PATH, or HOST:PORT */
	int port_names;	 /* enum sonic_port_names: how reports name ports */
	int clock;	 /* enum sonic_clock: the counters' read time */
	int64_t timeout; /* ns, to connect and for each reply */
};

extern const struct conf_opt backend_sonic_opts[];

struct redisContext;

/* Connects to a redis at address (as sonic.redis takes it).  -EINVAL (BAD_SONIC_REDIS) for an
 * address that is not one, -EHOSTUNREACH (SONIC_UNREACHABLE) when nothing answers there. */
int sonic_redis_connect(const char *address, int64_t timeout_ns, struct redisContext **ret,
			struct rf_err *e);

#endif
