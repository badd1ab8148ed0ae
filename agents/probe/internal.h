/* Internals of the probe engine, shared by its files and its unit tests. */
#ifndef ROCEFAB_PROBE_INTERNAL_H
#define ROCEFAB_PROBE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <jansson.h>

#include "agents/probe/probe.h"

/* --- control channel: one JSON object per line over TCP, every wait bounded --------------- */

struct ctl {
	int fd;
	char buf[8192];
	size_t len;
};

int ctl_listen(const char *listen, struct rf_err *e); /* returns the listening fd */
int ctl_accept(int lfd, int64_t timeout_ns, struct ctl *c);
int ctl_connect(const char *host, unsigned port, int64_t timeout_ns, struct ctl *c, struct rf_err *e);
int ctl_send(struct ctl *c, json_t *msg, int64_t timeout_ns);
/* -ETIMEDOUT, -ECONNRESET (peer gone), -EBADMSG (not JSON) or 0 with *ret. */
int ctl_recv(struct ctl *c, json_t **ret, int64_t timeout_ns);
/* Whether a message is waiting (or the peer closed): for poll loops. */
bool ctl_readable(struct ctl *c, int timeout_ms);
void ctl_close(struct ctl *c);

/* --- verbs ------------------------------------------------------------------------------- */

struct pv_ctx;

/* The verbs calls on the probe path, through a table so that unit tests can inject completion
 * errors, silence and a NIC clock (ibv_post_send and friends are inline in verbs.h). */
struct pv_ops {
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	/* Up to n completions of the context's CQ.  With ts (n entries) and a CQ that has them,
	 * the NIC clock's cycle count at which the NIC wrote each completion. */
	int (*poll_cq)(struct pv_ctx *p, int n, struct ibv_wc *wc, uint64_t *ts);
	/* The NIC's free-running clock now, in its cycles (the clock of the completion
	 * timestamps); -errno when the device has none. */
	int (*read_clock)(struct pv_ctx *p, uint64_t *ret);
};
extern const struct pv_ops pv_real_ops;

#define PV_BUF 65536
#define PV_GRH 40
#define PV_SLOTS 16
#define PV_SLOT (PV_BUF + PV_GRH)
#define PV_OFF_LOCAL 0
#define PV_OFF_TARGET PV_BUF
#define PV_OFF_ATOMIC (2 * PV_BUF)		 /* 8 bytes: the remote atomic counter */
#define PV_OFF_ATOMIC_RES (2 * PV_BUF + 8)	 /* 8 bytes: an atomic's result */
#define PV_OFF_RECV (2 * PV_BUF + 4096)	 /* PV_SLOTS receive slots */
#define PV_OFF_TARGET2 (PV_OFF_RECV + PV_SLOTS * PV_SLOT) /* ping-pong: the odd probes land here */
#define PV_POOL (PV_OFF_TARGET2 + PV_BUF)
#define PV_MAX_PATHS 16
#define PV_QKEY 0x11111111u

/* One device's verbs objects, created once; the memory pool is registered once. */
struct pv_ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cq_ex; /* the CQ with completion timestamps, when the device has them */
	uint64_t clock_khz;	 /* the NIC clock: its rate (hca_core_clock) ... */
	uint64_t clock_mask;	 /* ... and its width (completion_timestamp_mask) */
	bool nic_clock;		 /* probes are timed with the NIC clock (pv_clock_check passed) */
	struct ibv_mr *mr;
	uint8_t *pool;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	char name[64];
	const struct pv_ops *ops;
};

int pv_open(const char *device, int gid_index, struct pv_ctx *ret, struct rf_err *e);
/* Whether the NIC clock can time probes: two reads around a pause agree with CLOCK_MONOTONIC
 * to within 5 % (a clock in another mode or unit would not).  Sets p->nic_clock. */
bool pv_clock_check(struct pv_ctx *p);
/* NIC clock cycles (from, to] in microseconds, across the counter's wrap. */
double pv_cycles_us(const struct pv_ctx *p, uint64_t from, uint64_t to);
void pv_close(struct pv_ctx *p);

/* A session's queue pairs (RC: one per path; UD: one). */
struct pv_session {
	struct pv_ctx *p;
	enum probe_op op;
	unsigned size, paths;
	bool pingpong;	    /* WRITE, perftest style: each side polls its memory and writes back */
	unsigned inline_max; /* bytes the QPs take inline (0: none) */
	unsigned nic_samples;	 /* of the last client loop: samples timed by the NIC clock ... */
	unsigned clock_fallbacks; /* ... and those where its reading was implausible (CPU clock) */
	struct ibv_qp *qp[PV_MAX_PATHS];
	uint32_t psn;
	struct ibv_ah *ah; /* UD: towards the peer */
	uint32_t peer_qpn[PV_MAX_PATHS], peer_rkey;
	uint64_t peer_addr, peer_addr2, peer_atomic;
	union ibv_gid peer_gid;
};

int pv_session_create(struct pv_ctx *p, enum probe_op op, unsigned size, unsigned paths,
		      bool pingpong, struct pv_session *s, struct rf_err *e);
/* This side's connection data: {"qpns": [...], "psn", "gid", "addr", "addr2", "rkey", "atomic",
 * "mtu"}. */
json_t *pv_local_info(const struct pv_session *s);
/* Takes the peer's connection data and moves the QPs to RTS (RC) or RTS + an AH (UD). */
int pv_connect(struct pv_session *s, json_t *peer, struct rf_err *e);
void pv_session_destroy(struct pv_session *s);
/* Server side, before answering: receive buffers for SEND and UD. */
int pv_post_recvs(struct pv_session *s);

/* Client side: runs the probes one at a time; samples (iters entries, microseconds) and the
 * path of each sample.  With p->nic_clock a sample is NIC time: from a read of the NIC clock
 * just before the post to the completion's timestamp (for UD, the echo's), so the host's
 * scheduling and polling are not in it; a NIC reading that does not fit inside the CPU's own
 * measure of the same probe is replaced by the CPU's and counted in s->clock_fallbacks. */
int pv_client_loop(struct pv_session *s, unsigned iters, int64_t timeout_ns, double *samples,
		   uint8_t *sample_path, size_t *ret_n, uint64_t errors[PE_NERRS],
		   uint64_t *ret_data_errors, uint32_t *ret_last);
/* WRITE ping-pong, as perftest's ib_write_lat measures: the client writes probe seq into the
 * server's memory, the server busy-polls that memory and writes the same probe back, the
 * client busy-polls its own; one sample is half the round trip (perftest's figure), from one
 * clock read per probe as perftest (the reads are not free where the kernel distrusts the TSC).
 * Writes are inline where the device allows and signaled one in PV_PP_SIGNAL, so the loop
 * costs what perftest's does.  The last 4 bytes of each message carry seq + 1, the rest
 * pv_pattern(seq).  Even probes land in PV_OFF_TARGET, odd ones in PV_OFF_TARGET2, so that
 * each side checks the payload of the previous probe while the next one is in flight: the
 * check is off the measured path, and nothing can overwrite what is being checked. */
#define PV_PP_SIGNAL 16
int pv_pp_client_loop(struct pv_session *s, unsigned iters, int64_t timeout_ns, double *samples,
		      size_t *ret_n, uint64_t errors[PE_NERRS], uint64_t *ret_data_errors,
		      uint32_t *ret_last);
/* Server side of the ping-pong: answers until the control channel has a message or nothing
 * arrives before idle_deadline (monotonic ns); counts the probes answered. */
int pv_pp_server_loop(struct pv_session *s, struct ctl *c, int64_t idle_deadline, uint64_t *answered,
		      uint64_t *bad);

/* Server side: serves the receives one poll finds (at most 8: SEND re-posts and checks, UD
 * echoes), counting what arrived and how much of it was bad.  How many completions it took
 * (0: none queued), or -EIO. */
int pv_server_poll(struct pv_session *s, uint64_t *received, uint64_t *bad);
/* Server side, at the end: checks the data the client left (WRITE target, atomic counter). */
bool pv_server_verify(struct pv_session *s, json_t *done, char *detail, size_t len);

enum probe_err pv_classify(enum ibv_wc_status st);
void pv_pattern(uint8_t *buf, unsigned size, uint32_t seq);
bool pv_pattern_ok(const uint8_t *buf, unsigned size, uint32_t seq);

/* --- kernel sockets ------------------------------------------------------------------------ */

int sock_server_open(enum probe_op op, const char *bind_host, int *ret_fd, unsigned *ret_port);
/* Echoes what arrives on fd until the control channel has a message. */
int sock_server_serve(enum probe_op op, int fd, struct ctl *c, uint64_t *echoed);
int sock_client_loop(enum probe_op op, const char *host, unsigned port, unsigned size,
		     unsigned iters, int64_t timeout_ns, double *samples, size_t *ret_n,
		     uint64_t errors[PE_NERRS], uint64_t *ret_data_errors);

#endif
