/* The linux backend's settings (keys linux.* and probe.* of the agent's configuration). */
#ifndef ROCEFAB_AGENTS_LINUX_H
#define ROCEFAB_AGENTS_LINUX_H

#include <stdint.h>

#include "agents/dcb.h"
#include "lib/conf.h"

enum linux_net_source { LINUX_NET_AUTO, LINUX_NET_LIVE, LINUX_NET_FILES };

struct linux_settings {
	char *sysfs_root; /* root of /sys (and /proc, ethtool/): a recorded tree for tests */
	char *devices;	  /* RDMA devices to report, comma-separated; "": all */
	char *interfaces; /* network interfaces without RDMA to report */
	int net_source;	  /* enum linux_net_source */
	char *lldp_socket;    /* lldpd's control socket; "": its default */
	int64_t qp_items;      /* the most QPs listed in a report */
	int64_t qp_interval;   /* how often the QP table is read */
	char *rdma_record;     /* where to record RDMA netlink answers; "": not */
	int64_t lldp_interval; /* how often lldpd's neighbours are read */
	char *probe_listen; /* pingmesh: ADDRESS:PORT of this host's probe server; "": none */
	char *probe_device; /* RDMA device for verbs probes; "": the first */
	int64_t probe_cpu_pct; /* the probe rounds' CPU budget, percent of a core */
	/* not configuration: the DCB netlink transport for PFC; NULL: the kernel's (tests give a
	 * fake) */
	dcb_xfer_fn dcb_xfer;
	void *dcb_ctx;
};

extern const struct conf_opt backend_linux_opts[];

#endif
