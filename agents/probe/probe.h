/* The probe engine (DESIGN.md section 8): latency probes between two hosts over real RDMA
 * operations, and over kernel UDP/TCP for comparison or for hosts without RDMA.
 *
 * A client connects to a server's control channel (TCP, one JSON object per line; every read
 * and write has a deadline), names an operation, a size and a count, and exchanges what the
 * data path needs (QPN, PSN, GID, address, rkey; never assumed).  It then runs the probes,
 * timestamping each into a preallocated array, and finishes with the server verifying the data
 * that arrived.  The result is library-grade statistics: n, lost, min, p50, mean, stdev, p99,
 * p99.9 and max in microseconds, errors classified from work completion statuses, and the CPU
 * time spent per operation.
 *
 *   write, read, send, cas, faa   RC QP: RDMA WRITE, RDMA READ, SEND/RECV, atomics
 *   ud                            UD QP: ping (the server echoes)
 *   udp, tcp                      kernel sockets: ping (the server echoes) */
#ifndef ROCEFAB_PROBE_H
#define ROCEFAB_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"
#include "lib/probeops.h" /* enum probe_op, its names, PROBE_MIN_SIZE, PROBE_MAX_SIZE */

/* How a probe that did not succeed ended (from ibv_wc_status, or the engine's deadline). */
enum probe_err { PE_TIMEOUT, PE_RNR_RETRY, PE_TRANSPORT_RETRY, PE_REMOTE_ACCESS, PE_REMOTE_OP,
		 PE_LOCAL, PE_FLUSHED, PE_OTHER, PE_NERRS };

const char *probe_err_name(enum probe_err e);

#define PROBE_MAX_ITERS 1000000
#define PROBE_MAX_TIMEOUT_MS (3600 * 1000) /* a session's timeout_ms is cut to this */
#define PROBE_DEFAULT_PORT 9770

struct probe_stats {
	uint64_t n;	      /* probes attempted */
	uint64_t ok;	      /* completed successfully (samples) */
	uint64_t lost;	      /* never completed: timed out, failed, or not run after a failure */
	uint64_t errors[PE_NERRS];
	uint64_t data_errors; /* completed, but the data did not check out */
	double min, p50, mean, stdev, p99, p999, max; /* microseconds, over the ok samples */
	double cpu_us_per_op;			      /* user + system CPU of this process */
};

/* Statistics of samples (microseconds; sorted in place).  n = attempts, ok = nsamples. */
void probe_stats_compute(double *samples, size_t nsamples, uint64_t attempts,
			 struct probe_stats *ret);
json_t *probe_stats_json(const struct probe_stats *st);

struct probe_client_conf {
	const char *host;     /* the server's address */
	unsigned port;
	const char *device;   /* RDMA device; NULL: the first one */
	int gid_index;	      /* -1: the first RoCE v2 IPv4 GID */
	enum probe_op op;
	unsigned size;
	unsigned iters;
	int64_t timeout_ns;   /* per probe, and per control message */
	int64_t ctl_timeout_ns; /* per control message when not timeout_ns (0: timeout_ns) */
	unsigned paths;	      /* RC: QPs with different flow labels (ECMP sweep); 0 or 1: one */
	bool pingpong;	      /* write only: perftest's ib_write_lat method (half round trips) */
};

struct probe_result {
	struct probe_stats st;
	enum probe_op op;
	unsigned size, paths;
	bool pingpong;	/* the samples are half round trips of a write ping-pong */
	bool inline_data; /* the writes went inline (ping-pong) */
	char device[64];
	int gid_index;
	char clock[16]; /* "monotonic" (or "nic" when completion timestamps are used) */
	bool verified;	/* the server checked the data that arrived */
	char verify_detail[128];
	struct probe_stats *per_path; /* paths entries, NULL for one path */
};

/* Runs one probe session against a server.  On a failure that prevents the run (unknown
 * device, unreachable server, refused session), e names it and nothing is in *ret; probe
 * failures during the run are in the statistics. */
int probe_client_run(const struct probe_client_conf *c, struct probe_result *ret,
		     struct rf_err *e);
void probe_result_fini(struct probe_result *r);
json_t *probe_result_json(const struct probe_result *r);

struct probe_server_conf {
	const char *listen; /* ADDRESS:PORT */
	const char *device; /* NULL: the first RDMA device, or none (udp/tcp only) */
	int gid_index;
	bool once;	    /* serve one session, then return */
	int64_t timeout_ns;
};

/* Serves sessions until *stop becomes true (checked at least every second) or, with once,
 * after one session.  Returns 0, or a negative errno with e when it cannot listen. */
int probe_server_run(const struct probe_server_conf *c, volatile int *stop, struct rf_err *e);
/* The same on a socket that already listens (ctl_listen); closes it at the end. */
int probe_server_serve(const struct probe_server_conf *c, int lfd, volatile int *stop, struct rf_err *e);
/* Listens on c->listen (ADDRESS:PORT); the socket for probe_server_serve, or a negative errno
 * with e. */
int probe_server_listen(const struct probe_server_conf *c, struct rf_err *e);

#endif
