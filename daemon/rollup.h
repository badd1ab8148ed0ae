/* Rollups: what the raw samples of a port add up to over a minute and over an hour, one row per
 * port and bucket (table rollups, key res, port_id, t_ns = the bucket's start), so that long
 * windows are read from a few rows and kept long after the raw samples are pruned.
 *
 * Per counter and priority a bucket keeps exactly what a step bucket of the raw series shows
 * (daemon/views.c): for a counter the sum of the deltas and of their intervals (an exact mean
 * rate), the smallest and largest per-sample rate, the samples with and without a delta, and
 * the last raw value; for a gauge the sum (mean), smallest, largest and last value.  Buckets
 * merge: two rollups of the same bucket (or of adjacent ones into a larger) add up to the
 * rollup of all their samples, whatever the order they are merged in.
 *
 * The writer (daemon/ingest.c) keeps each port's open minute in memory, writes it when a sample
 * of a later minute arrives, and merges it into the hour's row then.  After a restart the open
 * minute is rebuilt from the port's raw samples after the newest one the last written minute
 * holds (a minute is written open when its port falls silent and at a clean stop).
 *
 * Stored form (a sqlite BLOB):
 *   u8 version (1) | varint count | count x entry
 *   entry: varint counter id | u8 prio | u8 flags (bit 0 gauge, bit 1 min/max present) |
 *          varint n | counter: varint n_valid | varint delta | varint dt_ns |
 *          varint last | varint last_off_ns (last's time after the bucket's start) |
 *          gauge: f64 sum | present: f64 min | f64 max          (f64: IEEE 754, little endian) */
#ifndef ROCEFAB_ROLLUP_H
#define ROCEFAB_ROLLUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/codec.h"
#include "lib/buf.h"

#define ROLLUP_VERSION 1
#define ROLLUP_1M_NS (60 * (int64_t)1000000000)
#define ROLLUP_1H_NS (3600 * (int64_t)1000000000)

struct rollup_entry {
	uint32_t counter; /* db counter id */
	uint8_t prio;	  /* 0xff: none */
	bool gauge;
	uint32_t n;	  /* samples */
	uint32_t n_valid; /* counter: samples with a delta */
	uint64_t delta;	  /* counter: sum of the deltas, in the counter's unit */
	int64_t dt_ns;	  /* counter: sum of their intervals */
	uint64_t last;	  /* the raw value of the newest sample */
	int64_t last_ns;  /* its time */
	double sum;	  /* gauge: of the values */
	double min, max;  /* gauge: of the values; counter: of the per-sample rates (per second) */
	bool have_minmax;
};

struct rollup {
	int64_t t_ns; /* the bucket's start */
	struct rollup_entry *e; /* sorted by (counter, prio) */
	size_t n, cap;
};

/* The bucket of width w that holds t (floor, for negative times too). */
int64_t rollup_bucket(int64_t t_ns, int64_t w);

void rollup_init(struct rollup *r, int64_t t_ns);
void rollup_fini(struct rollup *r);
/* An empty rollup of bucket t_ns (keeps the memory). */
void rollup_reset(struct rollup *r, int64_t t_ns);
/* dst becomes a copy of src. */
int rollup_copy(struct rollup *dst, const struct rollup *src);
/* One raw entry read at t_ns (gauge: the counter is a gauge). */
int rollup_add_sample(struct rollup *r, const struct sample_entry *se, int64_t t_ns, bool gauge);
/* The rollup entry of that one sample alone. */
void rollup_entry_of_sample(struct rollup_entry *e, const struct sample_entry *se, int64_t t_ns,
			    bool gauge);
/* Everything of src into r (r's bucket stays). */
int rollup_merge(struct rollup *r, const struct rollup *src);

/* Blocks: the closed buckets of a port in one row, an hour of minutes (res -60) or a day of
 * hours (res -3600), t_ns the block's start.  Written when the port's next hour (day) starts,
 * from the rows of the buckets, which go; a late sample's bucket in a block is merged into it.
 *
 *   u8 version (2) | varint body length | zlib (deflate) of the body:
 *   varint nslots | nslots x varint slot (its bucket's index in the block) |
 *   varint nkeys | nkeys x (varint counter - the key before's | u8 prio | u8 gauge) |
 *   per key, per slot: varint n | [u8 have_minmax | counter: varint n_valid, delta, dt_ns |
 *     varint last's step | varint last_off_ns | gauge: sum | min | max]        (when n > 0)
 *
 * Integers are zigzag residuals: n, n_valid, dt_ns and last_off_ns against the slot's key
 * before (a port's counters are read together), delta and the step of last against the
 * counter's slot before; doubles are 8 bytes big endian XOR the counter's slot before.  What
 * does not change is 0 bytes, which deflate takes to nearly nothing. */
#define ROLLUP_BLOCK_VERSION 2
#define ROLLUP_BLOCK_MAX_SLOTS 60
#define ROLLUP_BLOCK_MAX_BODY (64u << 20)
#define ROLLUP_1D_NS (24 * ROLLUP_1H_NS)

/* slots: sorted, each at t0 + k width (k < ROLLUP_BLOCK_MAX_SLOTS); -EINVAL otherwise. */
int rollup_block_encode(const struct rollup *slots, size_t nslots, int64_t t0, int64_t width,
			struct buf *out);
/* The slots of a block (*ret, rollup_fini each, then free); -EBADMSG. */
int rollup_block_decode(const void *blob, size_t len, int64_t t0, int64_t width,
			struct rollup **ret, size_t *ret_n);

int rollup_encode(const struct rollup *r, struct buf *out);
/* Replaces r's entries by the blob's (r->t_ns is the bucket's start, for last_ns); -EBADMSG. */
int rollup_decode(const void *blob, size_t len, struct rollup *r);

#endif
