/* Neighbours from lldpd, for the linux backend: `lldpcli -f json0 show neighbors` on a live
 * system (when lldpd runs), or the file lldp/neighbors.json0 of a recorded tree.  json0 keeps
 * the same structure whatever the number of interfaces and neighbours:
 *   {"lldp": [{"interface": [{"name": IF, "chassis": [{"name": [{"value": SYSTEM}], ...}],
 *                             "port": [{"id": [{"type": T, "value": V}],
 *                                       "descr": [{"value": D}]}]}]}]}
 * A neighbour's port is its id when the id is an interface name (type ifname or local), else
 * its description, else the id. */
#ifndef ROCEFAB_LLDP_H
#define ROCEFAB_LLDP_H

#include <stddef.h>

struct lldp_neighbor {
	char ifname[64];
	char system[64];
	char port[64];
};

/* Parses lldpcli's json0 output.  0, or -EBADMSG for text that is not that. */
int lldp_parse_json0(const char *text, size_t len, struct lldp_neighbor **ret, size_t *ret_n);
/* The neighbours of this system (root "" or "/"; lldpd's control socket sock, NULL or "" for
 * its default) or of a recorded tree.  0 with none when lldpd is not there. */
int lldp_neighbors(const char *root, const char *sock, struct lldp_neighbor **ret, size_t *ret_n);

#endif
