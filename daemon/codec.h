/* The stored form of one port's counters at one read: a compact byte string (a sqlite BLOB).
 *
 *   u8 version (1) | varint count | count x entry
 *   entry: varint counter id (the db's counters.id) | u8 prio (0xff = none) | u8 flags |
 *          varint raw | [varint delta | [varint dt_ns]]     -- when flags has DELTA_VALID;
 *   raw is the device's value; delta is already scaled into the counter's unit (bytes for
 *   port_xmit_data, which counts 4-byte words), so readers need no registry source;
 *          dt_ns is omitted when bit 7 of flags says "same dt as the previous entry"
 *
 * Typical entries take 8-12 bytes.  Decoding checks every length: a corrupt blob is -EBADMSG. */
#ifndef ROCEFAB_CODEC_H
#define ROCEFAB_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

#define CODEC_VERSION 1

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
/* Number of entries, or -EBADMSG. */
int codec_count(const void *blob, size_t len);

/* LEB128 unsigned varints, the integers of this encoding and of daemon/rollup.h's. */
int codec_put_varint(struct buf *b, uint64_t v);
/* -EBADMSG when the bytes end before the varint or it exceeds 64 bits. */
int codec_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret);

#endif
