/* String-keyed hash map: see hmap.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/hmap.h"

uint32_t hmap_hash(const char *s)
{
	/* FNV-1a, then a final avalanche so that linear probing sees well-spread low bits. */
	return (uint32_t)hash_mix64(hash_str64(s));
}

void hmap_init(struct hmap *h)
{
	memset(h, 0, sizeof(*h));
}

void hmap_fini(struct hmap *h)
{
	free(h->slots);
	memset(h, 0, sizeof(*h));
}

static size_t find_slot(const struct hmap *h, const char *key, uint32_t hash, bool *found)
{
	size_t mask = h->cap - 1;
	size_t i = hash & mask;

	for (;;) {
		const struct hmap_slot *s = &h->slots[i];

		if (!s->key) {
			*found = false;
			return i;
		}
		if (s->hash == hash && strcmp(s->key, key) == 0) {
			*found = true;
			return i;
		}
		i = (i + 1) & mask;
	}
}

void *hmap_get(const struct hmap *h, const char *key)
{
	bool found;
	size_t i;

	if (!h->cap)
		return NULL;
	i = find_slot(h, key, hmap_hash(key), &found);
	return found ? h->slots[i].val : NULL;
}

static int grow(struct hmap *h)
{
	size_t ncap = h->cap ? h->cap * 2 : 16;
	struct hmap_slot *ns = calloc(ncap, sizeof(*ns));
	struct hmap_slot *old = h->slots;
	size_t ocap = h->cap;

	if (!ns)
		return -ENOMEM;
	h->slots = ns;
	h->cap = ncap;
	for (size_t i = 0; i < ocap; i++) {
		bool found;
		size_t j;

		if (!old[i].key)
			continue;
		j = find_slot(h, old[i].key, old[i].hash, &found);
		h->slots[j] = old[i];
	}
	free(old);
	return 0;
}

int hmap_put(struct hmap *h, const char *key, void *val, void **ret_old)
{
	uint32_t hash = hmap_hash(key);
	bool found;
	size_t i;

	if ((h->len + 1) * 4 > h->cap * 3) {
		int r = grow(h);

		if (r < 0)
			return r;
	}
	i = find_slot(h, key, hash, &found);
	if (ret_old)
		*ret_old = found ? h->slots[i].val : NULL;
	if (!found)
		h->len++;
	h->slots[i] = (struct hmap_slot){ .key = key, .val = val, .hash = hash };
	return 0;
}

/* Empties slot i: backward-shift moves later members of its probe run into the hole, so that
 * every lookup still finds them; only slots after i (cyclically, up to the next empty one) move. */
static void remove_slot(struct hmap *h, size_t i)
{
	size_t mask = h->cap - 1;
	size_t j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!h->slots[j].key)
			break;
		home = h->slots[j].hash & mask;
		/* Move j into i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			h->slots[i] = h->slots[j];
			i = j;
		}
	}
	h->slots[i] = (struct hmap_slot){ 0 };
	h->len--;
}

void *hmap_del(struct hmap *h, const char *key)
{
	bool found;
	size_t i;
	void *val;

	if (!h->cap)
		return NULL;
	i = find_slot(h, key, hmap_hash(key), &found);
	if (!found)
		return NULL;
	val = h->slots[i].val;
	remove_slot(h, i);
	return val;
}

size_t hmap_sweep(struct hmap *h, bool (*drop)(const char *key, void *val, void *ctx), void *ctx)
{
	size_t mask = h->cap - 1, start, n = 0;

	if (!h->len)
		return 0;
	/* Start past an empty slot (the load stays under 3/4, so there is one): no probe run crosses
	 * it, so the shifts of a removal move only slots not yet visited, into the one just emptied
	 * or later, and each member is offered to drop() exactly once. */
	for (start = 0; h->slots[start].key; start++)
		;
	for (size_t i = (start + 1) & mask, left = h->cap - 1; left;) {
		const struct hmap_slot *sl = &h->slots[i];

		if (sl->key && drop(sl->key, sl->val, ctx)) {
			remove_slot(h, i);
			n++;
			if (h->slots[i].key)
				continue; /* a later member moved in: slot i again */
		}
		i = (i + 1) & mask;
		left--;
	}
	return n;
}

int hmap_next(const struct hmap *h, size_t *iter, const char **ret_key, void **ret_val)
{
	while (*iter < h->cap) {
		const struct hmap_slot *s = &h->slots[(*iter)++];

		if (s->key) {
			if (ret_key)
				*ret_key = s->key;
			if (ret_val)
				*ret_val = s->val;
			return 1;
		}
	}
	return 0;
}
