/* Hashing for tables, identities and sampling: FNV-1a (64 bits) over bytes or a string, and the
 * splitmix64 finalizer to spread a value's bits.  Not cryptographic (lib/sha256.h is). */
#ifndef ROCEFAB_HASH_H
#define ROCEFAB_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV_OFFSET UINT64_C(0xcbf29ce484222325)

/* FNV-1a of len bytes, continuing from h (HASH_FNV_OFFSET to start). */
static inline uint64_t hash_fnv1a64(const void *data, size_t len, uint64_t h)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h;
}

/* FNV-1a of a NUL-terminated string. */
static inline uint64_t hash_str64(const char *s)
{
	uint64_t h = HASH_FNV_OFFSET;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
	return h;
}

/* splitmix64's finalizer: every input bit affects every output bit. */
static inline uint64_t hash_mix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

#endif
