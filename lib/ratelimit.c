/* Log lines limited per key: see ratelimit.h. */
#include <stdlib.h>
#include <string.h>

#include "lib/ratelimit.h"

struct entry {
	int64_t last_ns; /* of the key's last line */
	uint64_t suppressed;
	char key[]; /* the map's key */
};

/* Drops the keys whose last line is an interval old; notes when the oldest kept one will be. */
static void sweep(struct ratelimit *rl, int64_t now_ns)
{
	struct hmap kept;
	int64_t oldest = INT64_MAX;
	size_t it = 0;
	void *v;

	hmap_init(&kept);
	while (hmap_next(&rl->keys, &it, NULL, &v)) {
		struct entry *en = v;

		if (now_ns - en->last_ns >= rl->interval_ns || hmap_put(&kept, en->key, en, NULL) < 0) {
			free(en);
			continue;
		}
		if (en->last_ns < oldest)
			oldest = en->last_ns;
	}
	hmap_fini(&rl->keys);
	rl->keys = kept;
	rl->sweep_after_ns = oldest == INT64_MAX ? now_ns : oldest + rl->interval_ns;
}

bool ratelimit_due(struct ratelimit *rl, const char *key, int64_t now_ns, uint64_t *ret_suppressed)
{
	struct entry *en;
	bool due = false;

	pthread_mutex_lock(&rl->lock);
	en = hmap_get(&rl->keys, key);
	if (en) {
		if (now_ns - en->last_ns >= rl->interval_ns) {
			if (ret_suppressed)
				*ret_suppressed = en->suppressed;
			en->last_ns = now_ns;
			en->suppressed = 0;
			due = true;
		} else {
			en->suppressed++;
		}
		goto out;
	}
	if (rl->keys.len >= rl->max_keys && now_ns >= rl->sweep_after_ns)
		sweep(rl, now_ns);
	if (rl->keys.len >= rl->max_keys)
		goto out;
	en = malloc(sizeof(*en) + strlen(key) + 1);
	if (!en)
		goto out;
	en->last_ns = now_ns;
	en->suppressed = 0;
	memcpy(en->key, key, strlen(key) + 1);
	if (hmap_put(&rl->keys, en->key, en, NULL) < 0) {
		free(en);
		goto out;
	}
	if (ret_suppressed)
		*ret_suppressed = 0;
	due = true;
out:
	pthread_mutex_unlock(&rl->lock);
	return due;
}

void ratelimit_fini(struct ratelimit *rl)
{
	size_t it = 0;
	void *v;

	pthread_mutex_lock(&rl->lock);
	while (hmap_next(&rl->keys, &it, NULL, &v))
		free(v);
	hmap_fini(&rl->keys);
	rl->sweep_after_ns = 0;
	pthread_mutex_unlock(&rl->lock);
}
