/* Prometheus remote-write: every sample rocefabd stores, also sent to one or more time-series
 * databases that scale out (Prometheus with --web.enable-remote-write-receiver, VictoriaMetrics,
 * Mimir, Thanos receive, ...), as the standard protocol: a protobuf WriteRequest compressed
 * with snappy, POSTed with Content-Encoding: snappy (remote-write 1.0).
 *
 * The series are the ones /metrics exposes (rocefab_port_<metric>[_total]{host, device, port,
 * priority}), at the samples' read times, with the same values (a counter's cumulative total
 * in its unit, a gauge's value), every priority.  A late sample (older than its port's newest)
 * is not sent: a receiver refuses samples out of order.
 *
 * Per URL: the samples of committed reports gather in memory and go every second (or at
 * remote_write.batch samples) into an on-disk queue of requests (remote_write.queue_dir, one
 * file each, snappy already applied), which a thread sends oldest first.  A 2xx answer
 * removes the request; a network error, a 5xx or a 429 keeps it and retries with backoff
 * (0.5 s doubling to 30 s), as does a 3xx (redirects are not followed); another 4xx (the
 * receiver refuses the data) drops it, counted and logged.  While a request is out, the
 * samples waiting still go to disk every second, and a stop aborts it (it stays queued).
 * One request at a time per URL, in order: at 5,000 samples a request and a 50 ms round
 * trip, ~100k samples/s a URL at most.  The queue is bounded (remote_write.max_queue_bytes): beyond it the oldest
 * requests go, counted.  A restart resumes the queue on disk (its files are synced before
 * they count); what was in memory (at most a second of samples) is lost when rocefabd is
 * killed.  Two samples of a port in the same millisecond are sent once (the first). */
#ifndef ROCEFAB_RWRITE_H
#define ROCEFAB_RWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/err.h"

struct rwrite;

struct rwrite_conf {
	const char *urls;	  /* comma-separated http(s) URLs; "" or NULL: off */
	const char *queue_dir;	  /* where the queues live (a directory per URL) */
	uint64_t max_queue_bytes; /* per URL */
	unsigned batch;		  /* samples per request at most */
	int64_t timeout_ns;	  /* per request */
	const char *user_agent;
};

struct rwrite_stats {
	char url[256];		/* without credentials */
	uint64_t sent, dropped_full, dropped_rejected;
	uint64_t retries; /* failed attempts that will be made again */
	uint64_t failures;
	uint64_t queue_bytes, queue_samples;
	int64_t last_success_ns; /* wall clock; 0: never */
	int64_t failing_since_ns; /* wall clock of the first failure in a row; 0: not failing */
	char last_error[256];	/* "" when the last attempt succeeded */
	int64_t last_rejected_ns, last_dropped_ns; /* wall clock; 0: never */
	char last_rejection[256]; /* the receiver's answer then */
};

/* -EINVAL with e (BAD_REMOTE_WRITE_URL, where remote_write.urls) for a URL that is not
 * http(s)://host...; *ret NULL when no URL is configured. */
int rwrite_check(const char *urls, struct rf_err *e);
int rwrite_new(const struct rwrite_conf *c, struct rwrite **ret, struct rf_err *e);
/* Writes what is in memory to the queues, stops the threads. */
void rwrite_free(struct rwrite *rw);

/* The samples of one committed report, as rwrite_series() encoded them. */
void rwrite_enqueue(struct rwrite *rw, const struct buf *series, size_t nsamples);
/* One sample of a series into out (a WriteRequest's repeated timeseries field): labels in
 * pairs (name, value; sorted by name, "__name__" first), value, time. */
int rwrite_series(struct buf *out, const char *const *labels, size_t nlabels, double value,
		  int64_t t_ns);

size_t rwrite_targets(const struct rwrite *rw);
void rwrite_get_stats(struct rwrite *rw, size_t i, struct rwrite_stats *ret);

/* The URL without user:password@, into out. */
void rwrite_redact(const char *url, char *out, size_t len);

#endif
