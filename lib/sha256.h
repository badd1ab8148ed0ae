/* SHA-256 (FIPS 180-4), used to store API tokens as hashes only. */
#ifndef ROCEFAB_SHA256_H
#define ROCEFAB_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_DIGEST_LEN]);
void sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN]);
/* Lower-case hex of a byte string; out must hold 2*len+1 bytes. */
void hex_encode(const uint8_t *in, size_t len, char *out);

#endif
