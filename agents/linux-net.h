/* Interface state and statistics for the linux backend, from one of two sources:
 *   live   rtnetlink (libnl-route-3) for state, MTU and interface statistics; the ethtool ioctl
 *          for link speed (ETHTOOL_GLINKSETTINGS) and driver statistics (ETHTOOL_GSTATS, the
 *          names ethtool -S prints, including mlx5's per-priority PFC counters)
 *   files  a recorded host tree: ROOT/sys/class/net/IF/{operstate,mtu,speed,statistics/NAME} and
 *          ROOT/ethtool/IF (the output of `ethtool -S IF`), see tests/data/hosts/README. */
#ifndef ROCEFAB_LINUX_NET_H
#define ROCEFAB_LINUX_NET_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct netinfo;

struct link_info {
	char state[16]; /* up, down, unknown */
	int64_t mtu, speed_mbps; /* -1 unknown */
};

/* want() says whether a counter name of a group should be sent. */
typedef bool (*net_want_fn)(void *ctx, const char *group, const char *name);

/* root NULL: live; else the recorded tree at root. */
int netinfo_open(const char *root, struct netinfo **ret);
void netinfo_close(struct netinfo *n);
/* Reads a small sysfs attribute into buf, without its trailing newline: 0 or a negative errno.
 * A FIFO in its place reads empty, never waited on. */
int sysfs_read_attr(const char *path, char *buf, size_t len);
/* Re-reads the link table (live); call once per collection. */
int netinfo_refresh(struct netinfo *n);
/* -ENODEV when the interface does not exist. */
int netinfo_link(struct netinfo *n, const char *ifname, struct link_info *ret);
int netinfo_stats(struct netinfo *n, const char *ifname, json_t *values, net_want_fn want,
		  void *ctx, json_t *errors);
int netinfo_ethtool(struct netinfo *n, const char *ifname, json_t *values, net_want_fn want,
		    void *ctx, json_t *errors);
/* Parses `ethtool -S` text: the counters wanted into values, their count; the lines that are
 * no "name: counter" (a wanted name with a value that is no counter, or no "name: value" at all;
 * a header such as "NIC statistics:" has no value and is none) one error into errors (NULL:
 * none) at where.  Exposed for tests. */
int ethtool_parse_text(const char *text, json_t *values, net_want_fn want, void *ctx, json_t *errors,
		       const char *where);

#endif
