/* The linux backend: RDMA devices and ports and their counters from sysfs
 * (/sys/class/infiniband/DEV/ports/N/{counters,hw_counters}), each port's netdev statistics and
 * ethtool statistics (per-priority PFC) through linux-net.c.  Every path is relative to
 * linux.sysfs_root so that tests and support cases can point the agent at a recorded tree. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/backend.h"
#include "agents/dcb.h"
#include "agents/linux-net.h"
#include "agents/linux-probe.h"
#include "agents/linux.h"
#include "agents/linux-qp.h"
#include "agents/lldp.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "lib/params.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

/* The RDMA ports of the last inventory with their netdevs, for configuration. */
struct cfg_port {
	char dev[64], port[64], netdev[64];
};

static const char *const net_sources[] = { "auto", "live", "files", NULL };

#define S struct linux_settings
const struct conf_opt backend_linux_opts[] = {
	CONF_OPT("linux.sysfs_root", CONF_STRING, S, sysfs_root, "/",
		 "root of /sys (and /proc, ethtool/) to read; a recorded tree for tests"),
	CONF_OPT("linux.devices", CONF_STRING, S, devices, "",
		 "RDMA devices to report, comma-separated; empty: all"),
	CONF_OPT("linux.interfaces", CONF_STRING, S, interfaces, "",
		 "network interfaces without RDMA to report, comma-separated"),
	CONF_OPT("linux.net_source", CONF_ENUM, S, net_source, "auto",
		 "auto, live (rtnetlink and ethtool) or files (the recorded tree)",
		 .choices = net_sources),
	CONF_OPT("linux.lldp_socket", CONF_STRING, S, lldp_socket, "",
		 "lldpd's control socket (lldpcli -u); empty: lldpd's default"),
	CONF_OPT("linux.lldp_interval", CONF_DURATION, S, lldp_interval, "30s",
		 "how often the neighbours lldpd learned are read (lldpcli runs as a process)",
		 .min = 100 * NSEC_PER_MSEC, .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("linux.qp_items", CONF_INT, S, qp_items, "64",
		 "the most QPs listed one by one in a report (those in error first, then the busiest); "
		 "totals always cover them all", .min = 0, .max = 4096),
	CONF_OPT("linux.qp_interval", CONF_DURATION, S, qp_interval, "10s",
		 "how often the QP table is read (RDMA netlink; some drivers answer each QP with a "
		 "firmware command): reports in between carry none, rocefabd keeps the last",
		 .min = 0, .max = 3600 * NSEC_PER_SEC),
	CONF_OPT("linux.rdma_record", CONF_STRING, S, rdma_record, "",
		 "debugging: a directory to write the RDMA netlink answers to (the QP table, as "
		 "linux.sysfs_root reads them back from rdma-netlink/); empty: none"),
	CONF_OPT("probe.listen", CONF_STRING, S, probe_listen, "",
		 "pingmesh (backend linux): ADDRESS:PORT where this host answers probes, the address "
		 "other hosts reach it at (port 9770 by convention); empty: this host does not probe"),
	CONF_OPT("probe.device", CONF_STRING, S, probe_device, "",
		 "RDMA device for verbs probes; empty: the first"),
	CONF_OPT("probe.cpu_percent", CONF_INT, S, probe_cpu_pct, "5",
		 "the most CPU the probe rounds may use, in percent of one core (they pause between "
		 "targets to stay under it)", .min = 1, .max = 100),
	CONF_OPT_END,
};
#undef S

struct linux_priv {
	struct linux_settings set; /* a copy, for dcb_xfer and dcb_ctx (its strings are not used after open) */
	char root[PATH_MAX]; /* "" for the real / */
	struct cfg_port *cports;
	size_t ncports;
	/* lldpd's neighbours, read at most every LLDP_EVERY */
	struct lldp_neighbor *nbs;
	size_t nnbs;
	int64_t nbs_at;
	int64_t lldp_interval;
	char lldp_socket[108]; /* sun_path */
	struct netinfo *net;
	char **dev_filter;
	size_t ndev_filter;
	char **ifaces;
	size_t nifaces;
	struct lprobe *probe; /* pingmesh: NULL unless probe.listen is set */
	struct lqp *qp;	      /* the QP table */
};

struct want_ctx {
	const struct backend *b;
	const char *driver;
};

static bool want_counter(void *arg, const char *group, const char *name)
{
	struct want_ctx *w = arg;

	if (w->b->env.all_counters)
		return true;
	return reg_lookup(w->b->env.reg, group, w->driver, name) != NULL;
}

static int split_list(const char *s, char ***ret, size_t *ret_n)
{
	char *copy, *save = NULL;
	char **v = NULL;
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!s || !*s)
		return 0;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		char **nv;
		bool dup = false;

		/* a name listed twice is reported once (rocefabd refuses a device twice) */
		for (size_t i = 0; i < n && !dup; i++)
			dup = strcmp(v[i], t) == 0;
		if (dup)
			continue;
		nv = realloc(v, (n + 1) * sizeof(*nv));

		if (!nv || !(nv[n] = strdup(t))) {
			free(nv ? nv : v);
			free(copy);
			return -ENOMEM;
		}
		v = nv;
		n++;
	}
	free(copy);
	*ret = v;
	*ret_n = n;
	return 0;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Whether root/rel is a directory. */
static bool root_has(const char *root, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	return snprintf(path, sizeof(path), "%s/%s", root, rel) < (int)sizeof(path) && stat(path, &st) == 0 &&
	       S_ISDIR(st.st_mode);
}

static int linux_open(struct backend *b, struct rf_err *e)
{
	static const struct linux_settings defaults = { .net_source = LINUX_NET_AUTO, .qp_items = 64,
							.qp_interval = 10 * NSEC_PER_SEC,
							.lldp_interval = 30 * NSEC_PER_SEC };
	const struct linux_settings *set = b->env.settings ? b->env.settings : &defaults;
	struct linux_priv *p = calloc(1, sizeof(*p));
	const char *root = set->sysfs_root;
	bool files;
	int r;

	if (!p)
		return -ENOMEM;
	p->set = *set;
	p->lldp_interval = set->lldp_interval > 0 ? set->lldp_interval : 30 * NSEC_PER_SEC;
	if (str_copy(p->lldp_socket, sizeof(p->lldp_socket), set->lldp_socket ?: "") < 0) {
		free(p);
		return rf_err_set(e, -ENAMETOOLONG, "BAD_LLDP_SOCKET", "linux.lldp_socket",
				  "longer than a unix socket path (%zu)", sizeof(p->lldp_socket) - 1);
	}
	if (root && *root && strcmp(root, "/") != 0) {
		size_t n = strlen(root);

		if (n >= sizeof(p->root)) {
			free(p);
			return rf_err_set(e, -ENAMETOOLONG, "BAD_SYSFS_ROOT", "linux.sysfs_root",
					  "path too long");
		}
		memcpy(p->root, root, n + 1);
		while (n > 1 && p->root[n - 1] == '/')
			p->root[--n] = '\0';
		if (access(p->root, R_OK | X_OK) < 0) {
			r = rf_err_set(e, -errno, "BAD_SYSFS_ROOT", p->root, "cannot read: %s",
				       strerror(errno));
			free(p);
			return r;
		}
		/* a tree holds sys/class/...: its sys directory given instead reported nothing */
		if (root_has(p->root, "class/net") || root_has(p->root, "class/infiniband")) {
			r = rf_err_set(e, -EINVAL, "BAD_SYSFS_ROOT", "linux.sysfs_root",
				       "%s is a sys directory: give the directory that holds it (the tree's root, "
				       "as /)", p->root);
			free(p);
			return r;
		}
		if (!root_has(p->root, "sys/class/net") && !root_has(p->root, "sys/class/infiniband"))
			log_warning("linux", "linux.sysfs_root %s holds neither sys/class/net nor "
					     "sys/class/infiniband: the reports will name no device", p->root);
	}
	/* auto: a recorded tree brings its own network files; the real root uses the kernel */
	files = set->net_source == LINUX_NET_FILES || (set->net_source == LINUX_NET_AUTO && p->root[0]);
	r = netinfo_open(files ? (p->root[0] ? p->root : "") : NULL, &p->net);
	if (r < 0) {
		free(p);
		return rf_err_set(e, r, "NETLINK_FAILED", NULL, "cannot open rtnetlink: %s",
				  strerror(-r));
	}
	if (split_list(set->devices, &p->dev_filter, &p->ndev_filter) < 0 ||
	    split_list(set->interfaces, &p->ifaces, &p->nifaces) < 0) {
		netinfo_close(p->net);
		free_list(p->dev_filter, p->ndev_filter);
		free(p);
		return -ENOMEM;
	}
	if (lqp_new(p->root, set->rdma_record, (unsigned)set->qp_items, &p->qp) < 0) {
		netinfo_close(p->net);
		free_list(p->dev_filter, p->ndev_filter);
		free_list(p->ifaces, p->nifaces);
		free(p);
		return -ENOMEM;
	}
	lqp_set_interval(p->qp, set->qp_interval);
	if (set->probe_listen && *set->probe_listen &&
	    (r = lprobe_start(set->probe_listen, set->probe_device, (unsigned)set->probe_cpu_pct, &p->probe,
			      e)) < 0) {
		lqp_free(p->qp);
		netinfo_close(p->net);
		free_list(p->dev_filter, p->ndev_filter);
		free_list(p->ifaces, p->nifaces);
		free(p);
		return r;
	}
	b->priv = p;
	return 0;
}

static void linux_close(struct backend *b)
{
	struct linux_priv *p = b->priv;

	if (!p)
		return;
	lprobe_stop(p->probe);
	lqp_free(p->qp);
	netinfo_close(p->net);
	free_list(p->dev_filter, p->ndev_filter);
	free_list(p->ifaces, p->nifaces);
	free(p->cports);
	free(p->nbs);
	free(p);
	b->priv = NULL;
}

static int is_dir_entry(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static int list_dir(const char *path, struct dirent ***ret)
{
	int n = scandir(path, ret, is_dir_entry, alphasort);

	return n < 0 ? -errno : n;
}

static void free_dir(struct dirent **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool in_list(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* The driver family: mlx5_core -> mlx5; without a driver link (software devices such as rxe),
 * the device name's prefix (rxe0 -> rxe). */
static void device_driver(const char *root, const char *dev, char *out, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/device/driver", root, dev);
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		const char *base;
		char *core;

		link[n] = '\0';
		base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
		str_copy(out, len, base);
		core = strstr(out, "_core");
		if (core && core[5] == '\0')
			*core = '\0';
		return;
	}
	str_copy(out, len, dev);
	for (size_t i = strlen(out); i > 0; i--) {
		if ((out[i - 1] >= '0' && out[i - 1] <= '9') || out[i - 1] == '_')
			out[i - 1] = '\0';
		else
			break;
	}
	if (!out[0])
		snprintf(out, len, "unknown");
}

static void port_state(const char *text, char *out, size_t len)
{
	/* "4: ACTIVE", "1: DOWN", "2: INIT", "3: ARMED", "5: ACTIVE_DEFER" */
	const char *s = strchr(text, ':') ? strchr(text, ':') + 1 : text;

	while (*s == ' ')
		s++;
	snprintf(out, len, "%s",
		 strncmp(s, "ACTIVE", 6) == 0 ? "up"
		 : strcmp(s, "DOWN") == 0     ? "down"
		 : strcmp(s, "INIT") == 0 || strcmp(s, "ARMED") == 0 ? "init"
								     : "unknown");
}

static void port_netdev(const char *root, const char *dev, const char *port, char *out,
			size_t len)
{
	char path[PATH_MAX], buf[64];
	struct dirent **ents;
	int n;

	out[0] = '\0';
	str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%s/gid_attrs/ndevs/0", root,
		 dev, port);
	if (sysfs_read_attr(path, buf, sizeof(buf)) == 0 && buf[0]) {
		str_copy(out, len, buf);
		return;
	}
	str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/parent", root, dev);
	if (sysfs_read_attr(path, buf, sizeof(buf)) == 0 && buf[0]) { /* rxe */
		str_copy(out, len, buf);
		return;
	}
	str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/device/net", root, dev);
	n = list_dir(path, &ents);
	if (n == 1)
		str_copy(out, len, ents[0]->d_name);
	if (n > 0)
		free_dir(ents, n);
}

static int rdma_inventory(struct backend *b, struct agent_inventory *inv, json_t *errors)
{
	struct linux_priv *p = b->priv;
	char path[PATH_MAX], buf[128];
	struct dirent **devs;
	int ndevs;

	str_fmt(path, sizeof(path), "%s/sys/class/infiniband", p->root);
	ndevs = list_dir(path, &devs);
	if (ndevs < 0)
		ndevs = 0; /* no RDMA subsystem: no RDMA devices */
	for (int i = 0; i < ndevs; i++) {
		const char *name = devs[i]->d_name;
		struct agent_device *d;
		struct dirent **ports;
		int nports;

		if (p->ndev_filter && !in_list(p->dev_filter, p->ndev_filter, name))
			continue;
		d = inventory_add_device(inv);
		if (!d)
			goto oom;
		str_copy(d->name, sizeof(d->name), name);
		snprintf(d->kind, sizeof(d->kind), "rdma");
		device_driver(p->root, name, d->driver, sizeof(d->driver));
		str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/fw_ver", p->root, name);
		if (sysfs_read_attr(path, buf, sizeof(buf)) == 0)
			str_copy(d->fw_version, sizeof(d->fw_version), buf);
		str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/node_guid", p->root, name);
		if (sysfs_read_attr(path, buf, sizeof(buf)) == 0)
			str_copy(d->node_guid, sizeof(d->node_guid), buf);
		str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/ports", p->root, name);
		nports = list_dir(path, &ports);
		if (nports < 0) {
			collect_error(errors, "SYSFS_UNREADABLE", path, "cannot list ports: %s",
				      strerror(-nports));
			continue;
		}
		for (int k = 0; k < nports; k++) {
			struct agent_port *port = inventory_add_port(d);
			struct link_info li;
			double gbps;

			if (!port) {
				free_dir(ports, nports);
				goto oom;
			}
			str_copy(port->port, sizeof(port->port), ports[k]->d_name);
			str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%s/state",
				 p->root, name, port->port);
			if (sysfs_read_attr(path, buf, sizeof(buf)) == 0)
				port_state(buf, port->state, sizeof(port->state));
			str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%s/rate",
				 p->root, name, port->port);
			if (sysfs_read_attr(path, buf, sizeof(buf)) == 0 && sscanf(buf, "%lf", &gbps) == 1 &&
			    gbps > 0 && gbps * 1000 <= PORT_MAX_SPEED_MBPS) /* "1e30 Gb/sec": unknown */
				port->speed_mbps = (int64_t)(gbps * 1000 + 0.5);
			str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%s/link_layer",
				 p->root, name, port->port);
			if (sysfs_read_attr(path, buf, sizeof(buf)) == 0)
				snprintf(port->link_layer, sizeof(port->link_layer), "%s",
					 strcmp(buf, "Ethernet") == 0	  ? "ethernet"
					 : strcmp(buf, "InfiniBand") == 0 ? "infiniband"
									  : "unknown");
			port_netdev(p->root, name, port->port, port->netdev, sizeof(port->netdev));
			if (port->netdev[0] && netinfo_link(p->net, port->netdev, &li) == 0)
				port->mtu = li.mtu;
		}
		free_dir(ports, nports);
	}
	for (size_t i = 0; i < p->ndev_filter; i++) {
		bool found = false;

		for (size_t k = 0; k < inv->ndevs; k++)
			found |= strcmp(inv->devs[k].name, p->dev_filter[i]) == 0;
		if (!found && inventory_add_absent(inv, p->dev_filter[i]) < 0)
			goto oom;
	}
	if (ndevs > 0)
		free_dir(devs, ndevs);
	return 0;
oom:
	free_dir(devs, ndevs);
	return -ENOMEM;
}

static void remember_ports(struct linux_priv *p, const struct agent_inventory *inv)
{
	size_t n = 0;

	for (size_t i = 0; i < inv->ndevs; i++)
		if (!strcmp(inv->devs[i].kind, "rdma"))
			n += inv->devs[i].nports;
	free(p->cports);
	p->ncports = 0;
	p->cports = calloc(n ? n : 1, sizeof(*p->cports));
	if (!p->cports)
		return;
	for (size_t i = 0; i < inv->ndevs; i++) {
		const struct agent_device *d = &inv->devs[i];

		if (strcmp(d->kind, "rdma"))
			continue;
		for (size_t k = 0; k < d->nports; k++) {
			struct cfg_port *c = &p->cports[p->ncports++];

			str_copy(c->dev, sizeof(c->dev), d->name);
			str_copy(c->port, sizeof(c->port), d->ports[k].port);
			str_copy(c->netdev, sizeof(c->netdev), d->ports[k].netdev);
		}
	}
}

static void add_neighbors(struct linux_priv *p, struct agent_inventory *inv, json_t *errors)
{
	int r;

	/* neighbours (LLDP): lldpcli is a process, so not on every report */
	if (!p->nbs_at || tu_mono_ns() - p->nbs_at >= p->lldp_interval) {
		struct lldp_neighbor *nb = NULL;
		size_t nn = 0;

		p->nbs_at = tu_mono_ns();
		if ((r = lldp_neighbors(p->root, p->lldp_socket, &nb, &nn)) < 0) {
			collect_error(errors, "LLDP_UNREADABLE", NULL, "lldpd's neighbours: %s", strerror(-r));
		} else {
			free(p->nbs);
			p->nbs = nb;
			p->nnbs = nn;
		}
	}
	for (size_t i = 0; i < inv->ndevs; i++)
		for (size_t k = 0; k < inv->devs[i].nports; k++) {
			struct agent_port *port = &inv->devs[i].ports[k];

			for (size_t j = 0; port->netdev[0] && j < p->nnbs; j++)
				if (!strcmp(p->nbs[j].ifname, port->netdev)) {
					str_copy(port->peer_system, sizeof(port->peer_system), p->nbs[j].system);
					str_copy(port->peer_port, sizeof(port->peer_port), p->nbs[j].port);
				}
		}
}

static int linux_inventory(struct backend *b, struct agent_inventory *inv, json_t *errors)
{
	struct linux_priv *p = b->priv;
	int r;

	inventory_clear(inv);
	netinfo_refresh(p->net);
	if ((r = rdma_inventory(b, inv, errors)) < 0)
		return r;
	remember_ports(p, inv);
	for (size_t i = 0; i < p->nifaces; i++) {
		struct agent_device *d;
		struct agent_port *port;
		struct link_info li;

		if (netinfo_link(p->net, p->ifaces[i], &li) < 0) {
			if (inventory_add_absent(inv, p->ifaces[i]) < 0)
				return -ENOMEM;
			continue;
		}
		d = inventory_add_device(inv);
		port = d ? inventory_add_port(d) : NULL;
		if (!port)
			return -ENOMEM;
		str_copy(d->name, sizeof(d->name), p->ifaces[i]);
		snprintf(d->kind, sizeof(d->kind), "netdev");
		snprintf(port->port, sizeof(port->port), "1");
		str_copy(port->netdev, sizeof(port->netdev), p->ifaces[i]);
		str_copy(port->state, sizeof(port->state), li.state);
		snprintf(port->link_layer, sizeof(port->link_layer), "ethernet");
		port->mtu = li.mtu;
		port->speed_mbps = li.speed_mbps;
	}
	add_neighbors(p, inv, errors);
	return 0;
}

static json_t *new_sample(const char *dev, const char *port, const char *group, const char *driver)
{
	json_t *s = json_pack("{s:s,s:s,s:s,s:{}}", "device", dev, "port", port, "source", group,
			      "values");

	if (s && driver && *driver)
		json_object_set_new(s, "driver", json_string(driver));
	return s;
}

/* Appends the sample if it has values; stamps it with the middle of the read. */
static void add_sample(json_t *samples, json_t *s, int64_t t0)
{
	int64_t t1 = tu_now_ns();

	if (json_object_size(json_object_get(s, "values")) == 0) {
		json_decref(s);
		return;
	}
	json_object_set_new(s, "t_ns", json_integer(t0 + (t1 - t0) / 2));
	json_array_append_new(samples, s);
}

/* Reads every counter file of a sysfs counters directory. */
static void read_counter_dir(struct backend *b, const char *dir, const char *group,
			     struct want_ctx *w, json_t *values, json_t *errors)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int dfd;

	if (!d)
		return; /* a port without that directory (rxe has no counters/) */
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		char buf[64], *end, path[PATH_MAX];
		unsigned long long v;
		ssize_t n;
		int fd;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "lifespan") == 0)
			continue;
		if (!want_counter(w, group, de->d_name))
			continue;
		/* a FIFO in a counter's place is never waited on (a regular sysfs file ignores
		 * O_NONBLOCK) */
		fd = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		str_fmt(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (fd < 0) {
			/* (a dangling link, a loop, no permission: said, not silently missing; one
			 * gone since the directory was read is not news) */
			struct stat lst;
			int err = errno;

			if (err != ENOENT)
				collect_error(errors, "COUNTER_UNREADABLE", path, "%s", strerror(err));
			else if (fstatat(dfd, de->d_name, &lst, AT_SYMLINK_NOFOLLOW) == 0)
				collect_error(errors, "COUNTER_UNREADABLE", path, "a symbolic link to nothing");
			continue;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n < 0) {
			/* firmware without the counter answers EINVAL/EOPNOTSUPP: not news */
			if (errno != EINVAL && errno != EOPNOTSUPP)
				collect_error(errors, "COUNTER_UNREADABLE", path, "%s", strerror(errno));
			continue;
		}
		buf[n] = '\0';
		errno = 0;
		v = strtoull(buf, &end, 10);
		while (*end == '\n' || *end == ' ')
			end++;
		/* digits only, from the first byte ("+7" and " 7" are not what sysfs writes), with no
		 * NUL inside ("12\0 34") and no more than the buffer took ("000...05" cut at 63) */
		if (errno || end == buf || *end || buf[0] < '0' || buf[0] > '9' || v > INT64_MAX ||
		    strlen(buf) != (size_t)n || (size_t)n == sizeof(buf) - 1) {
			while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) /* (not shown as '?') */
				buf[--n] = '\0';
			for (ssize_t i = 0; i < n; i++)
				if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e)
					buf[i] = '?';
			collect_error(errors, "SYSFS_GARBAGE", path,
				      "'%.40s' is not a counter value (a decimal number up to 2^63-1)", buf);
			continue;
		}
		json_object_set_new(values, de->d_name, json_integer((json_int_t)v));
	}
	closedir(d);
	(void)b;
}

static int linux_collect(struct backend *b, const struct agent_inventory *inv, json_t *samples,
			 json_t *errors)
{
	struct linux_priv *p = b->priv;
	char dir[PATH_MAX];

	for (size_t i = 0; i < inv->ndevs; i++) {
		const struct agent_device *d = &inv->devs[i];
		struct want_ctx w = { .b = b, .driver = d->driver };

		for (size_t k = 0; k < d->nports; k++) {
			const struct agent_port *port = &d->ports[k];
			json_t *s;
			int64_t t0;

			if (strcmp(d->kind, "rdma") == 0) {
				static const char *const groups[][2] = { { "counters", "ib_counters" },
									 { "hw_counters", "hw_counters" } };

				for (size_t g = 0; g < 2; g++) {
					str_fmt(dir, sizeof(dir), "%s/sys/class/infiniband/%s/ports/%s/%s",
						 p->root, d->name, port->port, groups[g][0]);
					s = new_sample(d->name, port->port, groups[g][1], d->driver);
					if (!s)
						return -ENOMEM;
					t0 = tu_now_ns();
					read_counter_dir(b, dir, groups[g][1], &w, json_object_get(s, "values"),
							 errors);
					add_sample(samples, s, t0);
				}
			}
			if (!port->netdev[0])
				continue;
			s = new_sample(d->name, port->port, "ethtool", d->driver);
			if (!s)
				return -ENOMEM;
			t0 = tu_now_ns();
			netinfo_ethtool(p->net, port->netdev, json_object_get(s, "values"),
					want_counter, &w, errors);
			add_sample(samples, s, t0);
			s = new_sample(d->name, port->port, "netdev", d->driver);
			if (!s)
				return -ENOMEM;
			t0 = tu_now_ns();
			netinfo_stats(p->net, port->netdev, json_object_get(s, "values"), want_counter,
				      &w, errors);
			add_sample(samples, s, t0);
		}
	}
	return 0;
}


/* --- configuration: DCQCN knobs (sysfs or debugfs) and PFC (DCB netlink) ---------------------- */

/* Where a port's DCQCN knobs live: MLNX_OFED's sysfs (ecn/roce_rp, ecn/roce_np, with or without
 * a params/ directory; per-priority enable/P files), or upstream mlx5's debugfs cc_params (no
 * per-priority enable).  Facts file section 3.1. */
struct knobs {
	enum { KNOBS_NONE, KNOBS_SYSFS, KNOBS_DEBUGFS } kind;
	char rp[PATH_MAX], np[PATH_MAX]; /* sysfs: the two directories; debugfs: cc_params twice */
};

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void find_knobs(const struct linux_priv *p, const struct cfg_port *c, struct knobs *k)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	k->kind = KNOBS_NONE;
	if (c->netdev[0]) {
		str_fmt(path, sizeof(path), "%s/sys/class/net/%s/ecn/roce_rp", p->root, c->netdev);
		if (is_dir(path)) {
			char params[PATH_MAX];

			k->kind = KNOBS_SYSFS;
			str_fmt(params, sizeof(params), "%s/params", path);
			str_copy(k->rp, sizeof(k->rp), is_dir(params) ? params : path);
			str_fmt(path, sizeof(path), "%s/sys/class/net/%s/ecn/roce_np", p->root, c->netdev);
			str_fmt(params, sizeof(params), "%s/params", path);
			str_copy(k->np, sizeof(k->np), is_dir(params) ? params : path);
			return;
		}
	}
	/* debugfs is per PCI function: /sys/kernel/debug/mlx5/<BDF>/cc_params */
	str_fmt(path, sizeof(path), "%s/sys/class/infiniband/%s/device", p->root, c->dev);
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		const char *bdf;

		link[n] = '\0';
		bdf = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
		str_fmt(path, sizeof(path), "%s/sys/kernel/debug/mlx5/%s/cc_params", p->root, bdf);
		if (is_dir(path)) {
			k->kind = KNOBS_DEBUGFS;
			str_copy(k->rp, sizeof(k->rp), path);
			str_copy(k->np, sizeof(k->np), path);
		}
	}
}

static int knob_path(const struct knobs *k, const struct dcqcn_param *prm, int prio, char *out,
		     size_t len)
{
	const char *dir = !strcmp(prm->node, "rp") ? k->rp : k->np;

	if (!strcmp(prm->name, DCQCN_RP_ENABLE) || !strcmp(prm->name, DCQCN_NP_ENABLE)) {
		char base[PATH_MAX];

		if (k->kind != KNOBS_SYSFS)
			return -EOPNOTSUPP;
		/* enable/ sits next to params/ when there is one */
		str_copy(base, sizeof(base), dir);
		if (strlen(base) > 7 && !strcmp(base + strlen(base) - 7, "/params"))
			base[strlen(base) - 7] = '\0';
		return str_fmt(out, len, "%s/enable/%d", base, prio);
	}
	if (k->kind == KNOBS_DEBUGFS) {
		if (!prm->debugfs)
			return -EOPNOTSUPP;
		return str_fmt(out, len, "%s/%s", dir, prm->debugfs);
	}
	return str_fmt(out, len, "%s/%s", dir, prm->name);
}

static int read_knob(const struct knobs *k, const struct dcqcn_param *prm, int64_t *ret)
{
	char path[PATH_MAX], buf[64], *end;
	long long v;

	if (!strcmp(prm->name, DCQCN_RP_ENABLE) || !strcmp(prm->name, DCQCN_NP_ENABLE)) {
		int64_t mask = 0;

		for (int pr = 0; pr < 8; pr++) {
			if (knob_path(k, prm, pr, path, sizeof(path)) < 0 ||
			    sysfs_read_attr(path, buf, sizeof(buf)) < 0)
				return -ENOENT;
			if (!strcmp(buf, "1"))
				mask |= 1 << pr;
			else if (strcmp(buf, "0"))
				return -EBADMSG;
		}
		*ret = mask;
		return 0;
	}
	if (knob_path(k, prm, 0, path, sizeof(path)) < 0 || sysfs_read_attr(path, buf, sizeof(buf)) < 0)
		return -ENOENT;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || end == buf || *end)
		return -EBADMSG; /* garbage in the file: reported, not guessed */
	*ret = v;
	return 0;
}

static int write_file(const char *path, int64_t v)
{
	char buf[32];
	/* (a knob is a file of its own: a link in its place, in a recorded tree, is not followed out of it) */
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	int len = snprintf(buf, sizeof(buf), "%lld\n", (long long)v), r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)len) != len)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && !r)
		r = -errno;
	return r;
}

static int write_knob(const struct knobs *k, const struct dcqcn_param *prm, int64_t v)
{
	char path[PATH_MAX];
	int r;

	if (!strcmp(prm->name, DCQCN_RP_ENABLE) || !strcmp(prm->name, DCQCN_NP_ENABLE)) {
		for (int pr = 0; pr < 8; pr++) {
			if ((r = knob_path(k, prm, pr, path, sizeof(path))) < 0 ||
			    (r = write_file(path, (v >> pr) & 1)) < 0)
				return r;
		}
		return 0;
	}
	if ((r = knob_path(k, prm, 0, path, sizeof(path))) < 0)
		return r;
	return write_file(path, v);
}

static json_t *dcqcn_values(const struct knobs *k, json_t *errors, const char *where)
{
	json_t *o = json_object();

	for (unsigned i = 0; i < dcqcn_nparams; i++) {
		int64_t v;
		int r = read_knob(k, &dcqcn_params[i], &v);

		if (r == 0)
			json_object_set_new(o, dcqcn_params[i].name, json_integer(v));
		else if (r == -EBADMSG && errors)
			collect_error(errors, "SYSFS_GARBAGE", where, "%s is not a number",
				      dcqcn_params[i].name);
	}
	return o;
}

static int pfc_get(struct backend *b, const char *ifname, struct ieee_pfc *ret)
{
	struct linux_priv *p = b->priv;

	if (p->set.dcb_xfer)
		return dcb_get_pfc(p->set.dcb_xfer, p->set.dcb_ctx, ifname, ret);
	if (p->root[0])
		return -EOPNOTSUPP; /* a recorded tree has no kernel to ask */
	return dcb_get_pfc(dcb_xfer_netlink, NULL, ifname, ret);
}

static int linux_read_config(struct backend *b, json_t **ret)
{
	struct linux_priv *p = b->priv;
	json_t *out = json_pack("{s:[],s:[]}", "dcqcn", "pfc");

	for (size_t i = 0; i < p->ncports; i++) {
		const struct cfg_port *c = &p->cports[i];
		struct ieee_pfc pfc;
		struct knobs k;

		find_knobs(p, c, &k);
		if (k.kind != KNOBS_NONE) {
			json_t *v = dcqcn_values(&k, NULL, c->netdev);

			json_object_set_new(v, "device", json_string(c->dev));
			json_object_set_new(v, "port", json_string(c->port));
			json_array_append_new(json_object_get(out, "dcqcn"), v);
		}
		if (c->netdev[0] && pfc_get(b, c->netdev, &pfc) == 0)
			json_array_append_new(json_object_get(out, "pfc"),
					      json_pack("{s:s,s:s,s:i,s:i,s:i}", "device", c->dev, "port",
							c->port, "enable", pfc.pfc_en, "pfc_cap",
							pfc.pfc_cap, "delay", pfc.delay));
	}
	*ret = out;
	return 0;
}

static const struct cfg_port *port_of(const struct linux_priv *p, json_t *params)
{
	const char *dev = json_string_value(json_object_get(params, "device"));
	const char *port = json_string_value(json_object_get(params, "port"));

	for (size_t i = 0; i < p->ncports; i++) {
		const struct cfg_port *c = &p->cports[i];

		if ((!dev || !strcmp(dev, c->dev)) && port &&
		    (!strcmp(port, c->port) || !strcmp(port, c->netdev)))
			return c;
	}
	return NULL;
}

static json_t *failed(const char *id, const char *code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static json_t *failed(const char *id, const char *code, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the message may quote what was read (a netdev's name), which need not be UTF-8 */
	o = json_pack("{s:s,s:s,s:{s:s,s:o}}", "id", id, "outcome", "failed", "error", "code", code,
		      "message", js_string_lossy(msg));
	if (field)
		json_object_set_new(json_object_get(o, "error"), "field", json_string(field));
	return o;
}

/* Read-modify-write of the knobs a command names; what was written is restored when a later
 * write fails, so that a refused change leaves the device as it was. */
static json_t *apply_dcqcn(struct linux_priv *p, const char *id, json_t *params)
{
	const struct cfg_port *c = port_of(p, params);
	json_t *before, *after, *o;
	const struct dcqcn_param *done[64];
	int64_t old[64];
	unsigned ndone = 0;
	struct knobs k;
	const char *name;
	json_t *v;

	if (!c)
		return failed(id, "UNKNOWN_PORT", "port", "no RDMA port %s %s here",
			      json_string_value(json_object_get(params, "device")) ?: "",
			      json_string_value(json_object_get(params, "port")) ?: "");
	find_knobs(p, c, &k);
	if (k.kind == KNOBS_NONE)
		return failed(id, "NOT_SUPPORTED", NULL,
			      "%s exposes no DCQCN knobs (no ecn/roce_rp in sysfs, no mlx5 debugfs cc_params)",
			      c->netdev[0] ? c->netdev : c->dev);
	before = dcqcn_values(&k, NULL, NULL);
	json_object_foreach(params, name, v) {
		const struct dcqcn_param *prm = dcqcn_param_find(name);
		int64_t cur;
		int r;

		if (!strcmp(name, "device") || !strcmp(name, "port"))
			continue;
		if (!prm || !json_is_integer(v)) {
			o = failed(id, "BAD_COMMAND", name, "not a DCQCN parameter with an integer value");
			goto undo;
		}
		if ((r = read_knob(&k, prm, &cur)) < 0) {
			o = failed(id, "NOT_SUPPORTED", name, "%s: %s", name,
				   r == -EBADMSG ? "the file holds garbage" : "this device has no such knob");
			goto undo;
		}
		if ((r = write_knob(&k, prm, json_integer_value(v))) < 0) {
			/* the knobs are root's files: the agent's unit grants what writing them needs
			 * only with its dcqcn drop-in (README: the agent's privileges) */
			if (r == -EACCES || r == -EPERM)
				o = failed(id, "PERMISSION_DENIED", name,
					   "writing %s = %lld: %s (DCQCN knobs need CAP_DAC_OVERRIDE: install "
					   "rocefab-agent.service.d/dcqcn.conf)",
					   name, (long long)json_integer_value(v), strerror(-r));
			else if (r == -EROFS) /* no capability helps: the mount */
				o = failed(id, "PERMISSION_DENIED", name,
					   "writing %s = %lld: %s (/sys is mounted read-only for the "
					   "agent: ProtectKernelTunables= in its unit, or a container)",
					   name, (long long)json_integer_value(v), strerror(-r));
			else
				o = failed(id, "DEVICE_REFUSED", name, "writing %s = %lld: %s", name,
					   (long long)json_integer_value(v), strerror(-r));
			write_knob(&k, prm, cur);
			goto undo;
		}
		if (ndone < 64) {
			done[ndone] = prm;
			old[ndone++] = cur;
		}
	}
	after = dcqcn_values(&k, NULL, NULL);
	/* read back: the device must hold what was asked */
	json_object_foreach(params, name, v) {
		if (dcqcn_param_find(name) && !json_equal(json_object_get(after, name), v)) {
			json_t *got = json_object_get(after, name);

			o = failed(id, "NOT_APPLIED", name, "%s reads back as %lld, not %lld", name,
				   (long long)json_integer_value(got), (long long)json_integer_value(v));
			json_decref(after);
			goto undo;
		}
	}
	o = json_pack("{s:s,s:s,s:o,s:o}", "id", id, "outcome", "applied", "previous", before,
		      "values", after);
	return o;
undo:
	while (ndone--)
		write_knob(&k, done[ndone], old[ndone]);
	json_object_set_new(o, "previous", before);
	return o;
}

static json_t *apply_pfc(struct backend *b, const char *id, json_t *params)
{
	struct linux_priv *p = b->priv;
	const struct cfg_port *c = port_of(p, params);
	dcb_xfer_fn xfer = p->set.dcb_xfer ? p->set.dcb_xfer : dcb_xfer_netlink;
	struct ieee_pfc before, after;
	const char *name;
	json_t *v, *en = json_object_get(params, "enable");
	int r;

	if (!c || !c->netdev[0])
		return failed(id, "UNKNOWN_PORT", "port", "no RDMA port with a netdev matches %s",
			      json_string_value(json_object_get(params, "port")) ?: "");
	json_object_foreach(params, name, v)
		if (strcmp(name, "device") && strcmp(name, "port") && strcmp(name, "enable"))
			return failed(id, "NOT_SUPPORTED", name,
				      "a NIC port takes only the lossless priorities (enable); its "
				      "buffer thresholds follow from the cable length (dcb buffer)");
	if (!json_is_integer(en) || json_integer_value(en) < 0 || json_integer_value(en) > 255)
		return failed(id, "BAD_COMMAND", "enable", "enable is a priority bit mask 0..255");
	if (!p->set.dcb_xfer && p->root[0])
		return failed(id, "NOT_SUPPORTED", NULL, "a recorded tree has no DCB to configure");
	r = dcb_set_pfc_enable(xfer, p->set.dcb_ctx, c->netdev, (uint8_t)json_integer_value(en),
			       &before, &after);
	if (r < 0)
		return failed(id, r == -EOPNOTSUPP ? "NOT_SUPPORTED" : r == -EPERM ? "PERMISSION_DENIED"
										 : "DEVICE_REFUSED",
			      NULL, "DCB PFC on %s: %s", c->netdev, strerror(-r));
	if (after.pfc_en != json_integer_value(en))
		return failed(id, "NOT_APPLIED", "enable", "%s reads back pfc_en 0x%02x", c->netdev,
			      after.pfc_en);
	return json_pack("{s:s,s:s,s:{s:i},s:{s:i,s:i}}", "id", id, "outcome", "applied", "previous",
			 "enable", before.pfc_en, "values", "enable", after.pfc_en, "pfc_cap",
			 after.pfc_cap);
}

static int linux_apply(struct backend *b, json_t *command, json_t **ret)
{
	const char *id = json_string_value(json_object_get(command, "id")) ?: "";
	const char *kind = json_string_value(json_object_get(command, "kind")) ?: "";
	json_t *params = json_object_get(command, "params");

	if (!strcmp(kind, "set_dcqcn"))
		*ret = apply_dcqcn(b->priv, id, params);
	else if (!strcmp(kind, "set_pfc"))
		*ret = apply_pfc(b, id, params);
	else
		*ret = failed(id, "NOT_SUPPORTED", "kind",
			      "a host's agent does not apply %s (ECN marking is a switch setting)", kind);
	return 0;
}

static int linux_probe_round(struct backend *b, json_t *plan, json_t **ret)
{
	struct linux_priv *p = b->priv;

	*ret = NULL;
	return p->probe ? lprobe_round(p->probe, plan, ret) : -EOPNOTSUPP;
}

static int linux_probe_endpoint(struct backend *b, const char **ret_endpoint)
{
	struct linux_priv *p = b->priv;

	if (!p->probe)
		return -EOPNOTSUPP; /* probe.listen is not set: this host does not probe */
	*ret_endpoint = lprobe_endpoint(p->probe);
	return 0;
}

/* The host's boot id is under the same root as sysfs. */
static const char *linux_host_root(const void *settings)
{
	const struct linux_settings *set = settings;

	return set ? set->sysfs_root : NULL;
}

static int linux_qps(struct backend *b, json_t **ret, json_t *errors)
{
	struct linux_priv *p = b->priv;

	return lqp_read(p->qp, ret, errors);
}

const struct backend_ops backend_linux_ops = {
	.name = "linux",
	.summary = "this host's RDMA devices and network interfaces (sysfs, netlink, verbs)",
	.host_root = linux_host_root,
	.open = linux_open,
	.close = linux_close,
	.inventory = linux_inventory,
	.collect = linux_collect,
	.read_config = linux_read_config,
	.apply = linux_apply,
	.probe_round = linux_probe_round,
	.probe_endpoint = linux_probe_endpoint,
	.qps = linux_qps,
};
