/* A string-keyed hash map (open addressing, linear probing, backward-shift deletion).
 * Keys are borrowed: the caller keeps each key alive while its entry exists (usually the key
 * is a field of the value).  Not thread-safe; callers lock. */
#ifndef ROCEFAB_HMAP_H
#define ROCEFAB_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hmap_slot {
	const char *key; /* NULL: empty */
	void *val;
	uint32_t hash;
};

struct hmap {
	struct hmap_slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t len;
};

uint32_t hmap_hash(const char *s);
void hmap_init(struct hmap *h);
void hmap_fini(struct hmap *h); /* frees the table, not keys or values */
void *hmap_get(const struct hmap *h, const char *key);
/* Inserts or replaces.  0 or -ENOMEM.  If ret_old is set it receives the replaced value or NULL. */
int hmap_put(struct hmap *h, const char *key, void *val, void **ret_old);
/* Returns the removed value or NULL. */
void *hmap_del(struct hmap *h, const char *key);
/* Removes every member for which drop() returns true, offering each member once, in no order;
 * drop() may free the value (and the key it holds) before returning true, and must not touch
 * the map.  Never allocates, so it cannot fail.  Returns how many were removed. */
size_t hmap_sweep(struct hmap *h, bool (*drop)(const char *key, void *val, void *ctx), void *ctx);

/* Iterate: for (size_t i = 0; hmap_next(h, &i, &k, &v);) ... (do not modify while iterating) */
int hmap_next(const struct hmap *h, size_t *iter, const char **ret_key, void **ret_val);

#endif
