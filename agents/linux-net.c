/* Interface information for the linux backend: see linux-net.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/sockios.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "agents/backend.h"
#include "agents/linux-net.h"
#include "lib/fileutil.h"
#include "lib/hmap.h"

struct gstrings_cache {
	char ifname[IFNAMSIZ];
	uint32_t n;
	char (*names)[ETH_GSTRING_LEN + 1];
	struct gstrings_cache *next;
};

struct netinfo {
	char *root; /* NULL: live */
	struct nl_sock *sk;
	struct nl_cache *links;
	int ioctl_fd;
	struct gstrings_cache *gs;
};

int netinfo_open(const char *root, struct netinfo **ret)
{
	struct netinfo *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return -ENOMEM;
	n->ioctl_fd = -1;
	if (root) {
		n->root = strdup(root);
		if (!n->root) {
			free(n);
			return -ENOMEM;
		}
		*ret = n;
		return 0;
	}
	n->sk = nl_socket_alloc();
	if (!n->sk) {
		free(n);
		return -ENOMEM;
	}
	if ((r = nl_connect(n->sk, NETLINK_ROUTE)) < 0 ||
	    (r = rtnl_link_alloc_cache(n->sk, AF_UNSPEC, &n->links)) < 0) {
		nl_socket_free(n->sk);
		free(n);
		return -EIO;
	}
	n->ioctl_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	*ret = n;
	return 0;
}

void netinfo_close(struct netinfo *n)
{
	if (!n)
		return;
	while (n->gs) {
		struct gstrings_cache *g = n->gs;

		n->gs = g->next;
		free(g->names);
		free(g);
	}
	if (n->links)
		nl_cache_free(n->links);
	if (n->sk)
		nl_socket_free(n->sk);
	if (n->ioctl_fd >= 0)
		close(n->ioctl_fd);
	free(n->root);
	free(n);
}

int netinfo_refresh(struct netinfo *n)
{
	if (!n->links)
		return 0;
	return nl_cache_refill(n->sk, n->links) < 0 ? -EIO : 0;
}

/* --- files -------------------------------------------------------------------------------- */

int sysfs_read_attr(const char *path, char *buf, size_t len)
{
	/* a FIFO in a file's place is never waited on (a regular sysfs file ignores O_NONBLOCK) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	ssize_t got;
	size_t n;

	if (fd < 0)
		return -errno;
	got = read(fd, buf, len - 1);
	if (got < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	n = (size_t)got;
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static int64_t read_int_or(const char *path, int64_t def)
{
	char buf[64], *end;
	long long v;

	if (sysfs_read_attr(path, buf, sizeof(buf)) < 0)
		return def;
	errno = 0;
	v = strtoll(buf, &end, 10);
	return errno || end == buf || *end ? def : v;
}

static int files_link(struct netinfo *n, const char *ifname, struct link_info *ret)
{
	char path[PATH_MAX], buf[64];
	int64_t speed;

	snprintf(path, sizeof(path), "%s/sys/class/net/%s/operstate", n->root, ifname);
	if (sysfs_read_attr(path, buf, sizeof(buf)) < 0)
		return -ENODEV;
	snprintf(ret->state, sizeof(ret->state), "%s",
		 strcmp(buf, "up") == 0 ? "up" : strcmp(buf, "down") == 0 ? "down" : "unknown");
	snprintf(path, sizeof(path), "%s/sys/class/net/%s/mtu", n->root, ifname);
	ret->mtu = read_int_or(path, -1);
	snprintf(path, sizeof(path), "%s/sys/class/net/%s/speed", n->root, ifname);
	speed = read_int_or(path, -1);
	ret->speed_mbps = speed > 0 ? speed : -1;
	return 0;
}

static bool put_value(json_t *values, const char *name, unsigned long long v)
{
	if (v > INT64_MAX)
		return false; /* not representable in a report; cannot happen for real counters */
	return json_object_set_new(values, name, json_integer((json_int_t)v)) == 0;
}

/* An ethtool statistic into values (fresh for the device): 1; a name given again (a driver's
 * bug: two queues' counters under one name) into *dups instead, that dups_drop leaves it out:
 * 0; -1 when it cannot be put. */
static int stat_put(json_t *values, json_t **dups, const char *name, unsigned long long v)
{
	if (json_object_get(values, name)) {
		if (!*dups)
			*dups = json_object();
		return *dups && json_object_set_new(*dups, name, json_true()) == 0 ? 0 : -1;
	}
	return put_value(values, name, v) ? 1 : -1;
}

/* The names given twice left out, and said (the last value won, which of the two it was
 * cannot be told); how many went. */
static int dups_drop(json_t *values, json_t *dups, json_t *errors, const char *where)
{
	const char *name, *first = NULL;
	size_t n = json_object_size(dups);
	json_t *x;

	if (!n) {
		json_decref(dups);
		return 0;
	}
	json_object_foreach(dups, name, x) {
		json_object_del(values, name);
		if (!first)
			first = name;
	}
	collect_error(errors, "ETHTOOL_DUPLICATE", where,
		      "%zu name%s given more than once in the statistics, left out (which value is which "
		      "counter cannot be told); the first: '%s'", n, n == 1 ? " is" : "s are", first);
	json_decref(dups);
	return (int)n;
}

static int files_stats(struct netinfo *n, const char *ifname, json_t *values, net_want_fn want,
		       void *ctx, json_t *errors)
{
	static const char *const names[] = { "rx_bytes",  "tx_bytes",	  "rx_packets",
					     "tx_packets", "rx_errors",	  "tx_errors",
					     "rx_dropped", "tx_dropped",  "rx_crc_errors",
					     "rx_missed_errors", NULL };
	char path[PATH_MAX], buf[64], *end;

	for (int i = 0; names[i]; i++) {
		unsigned long long v;

		if (!want(ctx, "netdev", names[i]))
			continue;
		snprintf(path, sizeof(path), "%s/sys/class/net/%s/statistics/%s", n->root, ifname,
			 names[i]);
		if (sysfs_read_attr(path, buf, sizeof(buf)) < 0)
			continue;
		errno = 0;
		v = strtoull(buf, &end, 10);
		if (!errno && end != buf && !*end && buf[0] != '-' && put_value(values, names[i], v))
			continue;
		/* left out, and said (a counter that vanished without a word looks like zero
		 * traffic) */
		collect_error(errors, "SYSFS_GARBAGE", path, "'%.40s' is not a counter value (a decimal number up "
			      "to 2^63-1)", buf);
	}
	if (want(ctx, "netdev", "carrier_changes")) {
		int64_t v;

		snprintf(path, sizeof(path), "%s/sys/class/net/%s/carrier_changes", n->root, ifname);
		v = read_int_or(path, -1);
		if (v >= 0)
			put_value(values, "carrier_changes", (unsigned long long)v);
	}
	return 0;
}

int ethtool_parse_text(const char *text, json_t *values, net_want_fn want, void *ctx, json_t *errors,
		       const char *where)
{
	const char *line = text, *first_bad = NULL;
	json_t *dups = NULL;
	size_t first_len = 0;
	unsigned bad = 0;
	int n = 0;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char l[256], *colon, *name, *val, *end;
		unsigned long long v;
		bool ok = true;

		if (len >= sizeof(l)) {
			ok = false; /* no counter line is that long */
		} else {
			memcpy(l, line, len);
			l[len] = '\0';
			for (char *t = l + len - 1; t >= l && (*t == ' ' || *t == '\t' || *t == '\r'); t--)
				*t = '\0';
			colon = strrchr(l, ':');
			if (!colon) {
				ok = !l[strspn(l, " \t")]; /* a blank line, or no "name: value" */
			} else {
				*colon = '\0';
				name = l + strspn(l, " \t");
				/* some kernels print names with a trailing space */
				for (char *t = colon - 1; t >= name && (*t == ' ' || *t == '\t'); t--)
					*t = '\0';
				val = colon + 1 + strspn(colon + 1, " \t");
				/* a header ("NIC statistics:") has no value; a name not wanted is not read */
				if (*name && *val && want(ctx, "ethtool", name)) {
					int put;

					errno = 0;
					v = strtoull(val, &end, 10);
					if (errno || end == val || *end || *val == '-' ||
					    (put = stat_put(values, &dups, name, v)) < 0)
						ok = false;
					else
						n += put;
				}
			}
		}
		if (!ok && !bad++) {
			first_bad = line;
			first_len = len;
		}
		line = nl ? nl + 1 : NULL;
	}
	if (bad)
		collect_error(errors, "ETHTOOL_GARBAGE", where ?: "ethtool",
			      "%u line%s not \"name: counter\" (a decimal number up to 2^63-1), left out; the first: "
			      "'%.*s'", bad, bad == 1 ? " is" : "s are", (int)(first_len > 60 ? 60 : first_len),
			      first_bad);
	return n - dups_drop(values, dups, errors, where ?: "ethtool");
}

static int files_ethtool(struct netinfo *n, const char *ifname, json_t *values, net_want_fn want,
			 void *ctx, json_t *errors)
{
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	int r;

	snprintf(path, sizeof(path), "%s/ethtool/%s", n->root, ifname);
	/* (a FIFO or a device in its place is refused, never waited on) */
	if ((r = file_read_at(AT_FDCWD, path, 1 << 20, &text, &len)) == -ENOENT)
		return 0; /* no recorded ethtool output: nothing to add */
	if (r < 0) {
		collect_error(errors, "ETHTOOL_UNREADABLE", path, "%s",
			      r == -EISDIR ? "not a regular file" : strerror(-r));
		return 0;
	}
	if (memchr(text, '\0', len)) {
		collect_error(errors, "ETHTOOL_GARBAGE", path, "binary data in ethtool output");
		free(text);
		return 0;
	}
	r = ethtool_parse_text(text, values, want, ctx, errors, path);
	free(text);
	return r < 0 ? r : 0;
}

/* --- live ----------------------------------------------------------------------------------- */

static int live_link(struct netinfo *n, const char *ifname, struct link_info *ret)
{
	struct rtnl_link *l = rtnl_link_get_by_name(n->links, ifname);
	uint8_t op;

	if (!l)
		return -ENODEV;
	op = rtnl_link_get_operstate(l);
	snprintf(ret->state, sizeof(ret->state), "%s",
		 op == IF_OPER_UP ? "up" : op == IF_OPER_DOWN || op == IF_OPER_LOWERLAYERDOWN ? "down"
											     : "unknown");
	ret->mtu = rtnl_link_get_mtu(l);
	rtnl_link_put(l);
	ret->speed_mbps = -1;
	if (n->ioctl_fd >= 0) {
		/* ETHTOOL_GLINKSETTINGS handshake: the first call learns the mask size. */
		struct {
			struct ethtool_link_settings s;
			uint32_t masks[3 * 127];
		} req;
		struct ifreq ifr = { 0 };

		memset(&req, 0, sizeof(req));
		req.s.cmd = ETHTOOL_GLINKSETTINGS;
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		ifr.ifr_data = (void *)&req;
		if (ioctl(n->ioctl_fd, SIOCETHTOOL, &ifr) == 0 && req.s.link_mode_masks_nwords < 0) {
			req.s.link_mode_masks_nwords = (int8_t)-req.s.link_mode_masks_nwords;
			if (ioctl(n->ioctl_fd, SIOCETHTOOL, &ifr) == 0 && req.s.speed != (uint32_t)-1 &&
			    req.s.speed != 0)
				ret->speed_mbps = req.s.speed;
		}
	}
	return 0;
}

static int live_stats(struct netinfo *n, const char *ifname, json_t *values, net_want_fn want,
		      void *ctx)
{
	static const struct {
		const char *name;
		rtnl_link_stat_id_t id;
	} stats[] = {
		{ "rx_bytes", RTNL_LINK_RX_BYTES },	  { "tx_bytes", RTNL_LINK_TX_BYTES },
		{ "rx_packets", RTNL_LINK_RX_PACKETS },	  { "tx_packets", RTNL_LINK_TX_PACKETS },
		{ "rx_errors", RTNL_LINK_RX_ERRORS },	  { "tx_errors", RTNL_LINK_TX_ERRORS },
		{ "rx_dropped", RTNL_LINK_RX_DROPPED },	  { "tx_dropped", RTNL_LINK_TX_DROPPED },
		{ "rx_crc_errors", RTNL_LINK_RX_CRC_ERR }, { "rx_missed_errors", RTNL_LINK_RX_MISSED_ERR },
	};
	struct rtnl_link *l = rtnl_link_get_by_name(n->links, ifname);
	uint32_t cc;

	if (!l)
		return -ENODEV;
	for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++)
		if (want(ctx, "netdev", stats[i].name))
			put_value(values, stats[i].name, rtnl_link_get_stat(l, stats[i].id));
	if (want(ctx, "netdev", "carrier_changes") && rtnl_link_get_carrier_changes(l, &cc) == 0)
		put_value(values, "carrier_changes", cc);
	rtnl_link_put(l);
	return 0;
}

static struct gstrings_cache *gstrings(struct netinfo *n, const char *ifname, uint32_t count)
{
	struct gstrings_cache *g;
	struct ethtool_gstrings *gs;
	struct ifreq ifr = { 0 };

	for (g = n->gs; g; g = g->next)
		if (strcmp(g->ifname, ifname) == 0 && g->n == count)
			return g;
	gs = calloc(1, sizeof(*gs) + (size_t)count * ETH_GSTRING_LEN);
	if (!gs)
		return NULL;
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = count;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)gs;
	if (ioctl(n->ioctl_fd, SIOCETHTOOL, &ifr) < 0) {
		free(gs);
		return NULL;
	}
	for (g = n->gs; g; g = g->next)
		if (strcmp(g->ifname, ifname) == 0)
			break;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			free(gs);
			return NULL;
		}
		snprintf(g->ifname, sizeof(g->ifname), "%s", ifname);
		g->next = n->gs;
		n->gs = g;
	}
	free(g->names);
	g->names = calloc(count ? count : 1, sizeof(*g->names));
	if (!g->names) {
		free(gs);
		g->n = 0;
		return NULL;
	}
	g->n = count;
	for (uint32_t i = 0; i < count; i++) {
		char *name = g->names[i];

		memcpy(name, gs->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = '\0';
		for (size_t k = strlen(name); k > 0 && name[k - 1] == ' '; k--)
			name[k - 1] = '\0';
	}
	free(gs);
	return g;
}

static int live_ethtool(struct netinfo *n, const char *ifname, json_t *values, net_want_fn want,
			void *ctx, json_t *errors)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t buf[1];
	} sset = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ULL << ETH_SS_STATS } };
	struct ifreq ifr = { 0 };
	struct gstrings_cache *g;
	struct ethtool_stats *st;
	json_t *dups = NULL;
	uint32_t count;

	if (n->ioctl_fd < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&sset;
	if (ioctl(n->ioctl_fd, SIOCETHTOOL, &ifr) < 0 || !sset.hdr.sset_mask)
		return 0; /* the driver has no statistics */
	count = sset.hdr.data[0];
	if (count == 0 || count > 65536)
		return 0;
	g = gstrings(n, ifname, count);
	if (!g) {
		collect_error(errors, "ETHTOOL_FAILED", ifname, "cannot read statistics names");
		return 0;
	}
	st = calloc(1, sizeof(*st) + (size_t)count * sizeof(uint64_t));
	if (!st)
		return -ENOMEM;
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = count;
	ifr.ifr_data = (void *)st;
	if (ioctl(n->ioctl_fd, SIOCETHTOOL, &ifr) == 0) {
		for (uint32_t i = 0; i < count && i < st->n_stats; i++)
			if (g->names[i][0] && want(ctx, "ethtool", g->names[i]))
				stat_put(values, &dups, g->names[i], st->data[i]);
		dups_drop(values, dups, errors, ifname);
	} else {
		collect_error(errors, "ETHTOOL_FAILED", ifname, "ETHTOOL_GSTATS: %s", strerror(errno));
	}
	free(st);
	return 0;
}

int netinfo_link(struct netinfo *n, const char *ifname, struct link_info *ret)
{
	return n->root ? files_link(n, ifname, ret) : live_link(n, ifname, ret);
}

int netinfo_stats(struct netinfo *n, const char *ifname, json_t *values, net_want_fn want,
		  void *ctx, json_t *errors)
{
	return n->root ? files_stats(n, ifname, values, want, ctx, errors)
		       : live_stats(n, ifname, values, want, ctx);
}

int netinfo_ethtool(struct netinfo *n, const char *ifname, json_t *values, net_want_fn want,
		    void *ctx, json_t *errors)
{
	return n->root ? files_ethtool(n, ifname, values, want, ctx, errors)
		       : live_ethtool(n, ifname, values, want, ctx, errors);
}
