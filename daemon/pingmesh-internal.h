/* Between the files of the pingmesh (pingmesh.c plans on the writer thread and runs the
 * localization pass, pingmesh-matrix.c reads): the hosts and their ToRs, the analysis of a
 * window.  Not for other modules. */
#ifndef ROCEFAB_PINGMESH_INTERNAL_H
#define ROCEFAB_PINGMESH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <sqlite3.h>

#include "cc/localize.h"
#include "daemon/store.h"

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

/* Loads the window of one op and size and localizes: the findings in ret[0..*ret_n)
 * (loc_analyze_all: at least one, ret[0] LOC_NONE when nothing is named; ret holds
 * LOC_MAX_FINDINGS) and, when doc is not NULL, the matrix document in *doc (a new reference;
 * without paths, its pairs carry no per-path detail but "through" when a path crosses a
 * finding's link). */
int pingmesh_analyze(struct store_reader *rd, int64_t now, int64_t window_ns, const char *op,
		     unsigned size, bool with_paths, struct loc_finding *ret, size_t *ret_n, json_t **doc);
/* The finding as the matrix and /metrics show it (a new reference). */
json_t *pingmesh_finding_json(const struct loc_finding *f);
/* The /metrics text of the findings f[0..n) and, with a matrix document, its pairs (malloc'd). */
char *pingmesh_metrics_text(json_t *doc, const struct loc_finding *f, size_t n, int64_t window_ns);

#endif
