/* The stored form of one port's counters at one read: a compact byte string (a sqlite BLOB).
 *
 *   u8 version (1) | varint count | count x entry
 *   entry: varint counter id (the db's counters.id) | u8 prio (0xff = none) | u8 flags |
 *          varint raw | [varint delta | [varint dt_ns]]     -- when flags has DELTA_VALID;
 *   raw is the device's value; delta is already scaled into the counter's unit (bytes for
 *   port_xmit_data, which counts 4-byte words), so readers need no registry source;
 *          dt_ns is omitted when bit 7 of flags says "same dt as the previous entry"
 *
 * Typical entries take 8-12 bytes.  Decoding checks every length: a corrupt blob is -EBADMSG.
 *
 * A port's rows form chains (codec_chain): the writer stores a row as what changed since the
 * port's row before it, when that row is of the same minute and has the same counters:
 *
 *   u8 version (2) | u8 kind (NEXT) | varint gap_ns (to the row before) | varint count |
 *   varint ntokens | tokens
 *
 * The values, per entry in order: flags XOR the entry before's; the raw step less the step
 * before (0 after a full row); with DELTA_VALID, the delta less the raw step times the scale
 * the entry before showed, and dt_ns less gap_ns (zigzag, so small negative values stay
 * short).  A steady counter gives 0s, and a token is a varint run of 0s then the varint of the
 * next non-zero value less one; trailing 0s are not written.  An idle port's row is ~10 bytes
 * where a full one is ~700.  The first row of a port in each minute is full, so a reader
 * starts a chain at a minute's start (and retention deletes whole minutes); a row written late
 * (older than the port's newest) is a full row marked DETACHED, outside the chain:
 *
 *   u8 version (2) | u8 kind (DETACHED) | varint count | count x entry   (as version 1) */
#ifndef ROCEFAB_CODEC_H
#define ROCEFAB_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

#define CODEC_VERSION 1
#define CODEC_VERSION_2 2
#define CODEC_NEXT 1	 /* kind: what changed since the row before */
#define CODEC_DETACHED 2 /* kind: a full row outside the chain */

struct sample_entry {
	uint32_t counter; /* db counter id */
	uint8_t prio;	  /* 0xff: none */
	uint8_t flags;	  /* enum delta_flags */
	uint64_t raw;
	uint64_t delta; /* in the counter's unit (raw units x source scale), with DELTA_VALID */
	int64_t dt_ns;	/* time since the previous read, valid with DELTA_VALID */
};

int codec_encode(const struct sample_entry *e, size_t n, struct buf *out);
/* Calls fn for every entry; stops and returns fn's value when it is non-zero. */
int codec_decode(const void *blob, size_t len,
		 int (*fn)(const struct sample_entry *e, void *ctx), void *ctx);
/* Full rows only: a NEXT row is -ESRCH (codec_decode_row reads it). */
/* Number of entries, or -EBADMSG. */
int codec_count(const void *blob, size_t len);

/* A port's row that the next may follow: its time and entries, and each entry's raw step
 * from the row before it (0 after a full row). */
struct codec_chain {
	int64_t t_ns; /* 0: none */
	struct sample_entry *e;
	uint64_t *rdiff;
	uint32_t n, cap;
};

void codec_chain_init(struct codec_chain *c);
void codec_chain_fini(struct codec_chain *c);
void codec_chain_reset(struct codec_chain *c);
/* The row of t_ns with these entries follows c (next: written by codec_encode_next; otherwise
 * a full row), as writer and reader both track it. */
int codec_chain_push(struct codec_chain *c, int64_t t_ns, const struct sample_entry *e, size_t n,
		     bool next);
/* The row of t_ns as what changed since c's; -EAGAIN when it cannot follow c (no row, an older
 * time, other counters): write it full. */
int codec_encode_next(const struct codec_chain *c, int64_t t_ns, const struct sample_entry *e,
		      size_t n, struct buf *out);
/* A full row outside the chain (written late). */
int codec_encode_detached(const struct sample_entry *e, size_t n, struct buf *out);
/* Any row, read in time order from a minute's start with c tracking the chain: fn for every
 * entry of the row (all or none of them).  -ESRCH: a NEXT row whose row before was not the one
 * read before it (read from mid-chain, or pruned); -EBADMSG: corrupt. */
int codec_decode_row(struct codec_chain *c, int64_t t_ns, const void *blob, size_t len,
		     int (*fn)(const struct sample_entry *e, void *ctx), void *ctx);

/* A difference (two's complement, wrapping) as an unsigned value that is small when the
 * difference is small either way (protobuf's sint64), and back. */
uint64_t codec_zigzag(uint64_t d);
uint64_t codec_unzigzag(uint64_t z);

/* LEB128 unsigned varints, the integers of this encoding and of daemon/rollup.h's. */
int codec_put_varint(struct buf *b, uint64_t v);
/* -EBADMSG when the bytes end before the varint or it exceeds 64 bits. */
int codec_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret);

#endif
