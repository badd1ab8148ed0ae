/* RDMA netlink (NETLINK_RDMA, the nldev client): the QPs of this host's RDMA devices and the
 * per-QP counters bound to them, read the way `rdma resource show qp` and `rdma statistic qp
 * show` read them, through libnl's core socket.
 *
 * A query is a dump: the kernel answers with a run of netlink messages.  rdmanl_query() sends
 * the request and returns the answer's bytes as received; the rdmanl_parse_*() functions take
 * such bytes (live, or recorded in a test) and never trust them: every attribute is checked
 * against its type and length, and garbage is an error naming what was wrong. */
#ifndef ROCEFAB_AGENTS_RDMANL_H
#define ROCEFAB_AGENTS_RDMANL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

#define RDMANL_MAX_REPLY (64u << 20) /* bytes of one dump's answer */
#define RDMANL_MAX_QPS 1000000
#define RDMANL_QP_COUNTERS 32 /* values kept per counter */

struct rdmanl_dev {
	uint32_t index;
	char name[64];
};

struct rdmanl_qp {
	char dev[64];
	uint32_t port; /* 0: not bound to a port yet */
	uint32_t lqpn;
	uint32_t rqpn; /* when has_rqpn (connected QPs) */
	bool has_rqpn;
	uint8_t type;  /* enum ib_qp_type */
	uint8_t state; /* enum ib_qp_state */
	uint32_t pid;  /* the creating thread's id (the caller maps it to its process); 0 for a
			* kernel QP or an orphan */
	char comm[64]; /* kernel QP: its owner's name (RDMA_NLDEV_ATTR_RES_KERN_NAME) */
	bool orphan;   /* a user QP whose creating thread is gone: no pid */
	int counter;   /* index into the counters bound to it, or -1 */
};

/* A counter (rdma statistic qp): its values, and the QPs bound to it. */
struct rdmanl_counter {
	char dev[64];
	uint32_t port, id;
	size_t nvalues;
	char names[RDMANL_QP_COUNTERS][64];
	uint64_t values[RDMANL_QP_COUNTERS];
	uint32_t *lqpns;
	size_t nlqpns;
};

struct rdmanl_qps {
	struct rdmanl_qp *qps;
	size_t n, cap;
	struct rdmanl_counter *counters;
	size_t ncounters;
};

void rdmanl_qps_clear(struct rdmanl_qps *q);

/* The parsers: buf holds the messages of one dump's answer.  0, or a negative errno with e:
 * -EBADMSG (RDMANL_GARBAGE) for bytes that are not such an answer, the kernel's error
 * (RDMANL_KERNEL_ERROR, -EOPNOTSUPP when the driver cannot) for an NLMSG_ERROR. */
int rdmanl_parse_devs(const void *buf, size_t len, struct rdmanl_dev **ret, size_t *ret_n,
		      struct rf_err *e);
int rdmanl_parse_qps(const void *buf, size_t len, struct rdmanl_qps *q, struct rf_err *e);
int rdmanl_parse_counters(const void *buf, size_t len, struct rdmanl_qps *q, struct rf_err *e);
/* Links each QP to the counter it is bound to (after both were parsed). */
void rdmanl_bind_counters(struct rdmanl_qps *q);

const char *rdmanl_qp_type(uint8_t type);   /* "RC", "UD", ... as rdma(8) names them */
const char *rdmanl_qp_state(uint8_t state); /* "RTS", "ERR", ... */

/* The live side. */
struct rdmanl;
int rdmanl_open(struct rdmanl **ret, struct rf_err *e);
void rdmanl_close(struct rdmanl *nl);
/* Sends one dump request of an nldev command with up to three u32 attributes (attr 0 ends
 * the list) and returns the answer's bytes (to free).  A kernel that does not answer within
 * a second is an error. */
int rdmanl_query(struct rdmanl *nl, uint16_t cmd, const uint16_t attrs[3], const uint32_t vals[3],
		 void **ret_buf, size_t *ret_len, struct rf_err *e);
/* A query as rdmanl_query() makes it: live (ctx a struct rdmanl), or from a recording. */
typedef int (*rdmanl_query_fn)(void *ctx, uint16_t cmd, const uint16_t attrs[3], const uint32_t vals[3],
			       void **ret_buf, size_t *ret_len, struct rf_err *e);
int rdmanl_query_live(void *nl, uint16_t cmd, const uint16_t attrs[3], const uint32_t vals[3],
		      void **ret_buf, size_t *ret_len, struct rf_err *e);
/* Every QP of every device (and the counters bound to them where the driver keeps any; a
 * driver that cannot is not an error: *ret_counters_why says why there are none). */
int rdmanl_read_qps(rdmanl_query_fn query, void *ctx, struct rdmanl_qps *q,
		    const char **ret_counters_why, struct rf_err *e);

#endif
