/* The simulator's builder of the controllers' snapshot (cc/snap.h): every device's counters as
 * its virtual agent would report them (sim_counters, registry names), counters as deltas since
 * the previous snapshot, gauges as read now; ports named as the agents name them (a switch port
 * by its neighbour, a host's port "nic0:1"). */
#ifndef ROCEFAB_SIM_SNAPSHOT_H
#define ROCEFAB_SIM_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "cc/snap.h"
#include "lib/err.h"
#include "sim/sim.h"

struct sim_snapper;

/* Starts counting from now.  NULL when out of memory. */
struct sim_snapper *sim_snapper_new(const struct sim *s);
void sim_snapper_free(struct sim_snapper *sn);
/* The interval since the previous snapshot (or the start), at sim_now.  NULL when out of
 * memory. */
struct cc_snap *sim_snapper_take(struct sim_snapper *sn);
/* The priorities lossless at any port (the snapshot's priorities); 0 when none. */
uint8_t sim_lossless_prios(const struct sim *s);
/* The snapshot name of a device's port (host ports: "nic0:1"), into buf. */
const char *sim_snap_port_name(const struct sim *s, int dev, int port, char *buf, size_t len);
/* The hosts named in list (comma-separated; NULL: none) whose readings a controller does not get
 * (--silent: their agents silent, as a hung host's): *ret, by device, to free.  0, -EINVAL (e
 * set: a name that is no host of the fabric) or -ENOMEM. */
int sim_silent_hosts(const struct sim *s, const char *list, bool **ret, struct rf_err *e);
/* The ports of the devices silent[] marks, without their readings, as rocefabd holds a host whose
 * readings do not come (cc_port.silent). */
void sim_silence(const struct sim *s, const bool *silent, struct cc_snap *snap);

#endif
