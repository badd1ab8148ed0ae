/* Between the files of the pingmesh (pingmesh.c plans on the writer thread, pingmesh-matrix.c
 * reads): the hosts and their ToRs.  Not for other modules. */
#ifndef ROCEFAB_PINGMESH_INTERNAL_H
#define ROCEFAB_PINGMESH_INTERNAL_H

#include <stddef.h>

#include <sqlite3.h>

struct host_tor {
	char host[65], tor[65]; /* tor "": none known (no LLDP) */
};

/* The hosts and their ToRs: each host's smallest LLDP neighbour (for the writer's planning and
 * the readers' matrix alike). */
#define PINGMESH_HOST_TORS_SQL                                                                    \
	"SELECT p.agent_id, min(p.peer_system) FROM ports p JOIN agents a ON a.id = p.agent_id "  \
	"WHERE a.role = 'host' AND p.present AND p.peer_system IS NOT NULL "                      \
	"GROUP BY p.agent_id ORDER BY p.agent_id"

/* Steps st (PINGMESH_HOST_TORS_SQL) to its end: a new array in *ret (NULL when empty). */
void pingmesh_read_host_tors(sqlite3_stmt *st, struct host_tor **ret, size_t *ret_n);

#endif
