/* Agent ids that two agents report as: see idguard.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/idguard.h"
#include "lib/hmap.h"

struct track {
	char cur[65], prev[65]; /* the boot of the last report taken, and the one before it */
	char older[65];		/* the boot that was cur when the newest boot came */
	unsigned flips;		/* reports of prev after cur, in a row of switches */
	char held[65], refused[65]; /* while shared: who keeps the id, who is refused */
	int64_t since, last_refused;
	int64_t cur_seen; /* the last full report of cur (of the one that keeps the id, while shared) */
	uint64_t refusals;
};

struct idguard {
	pthread_mutex_t lock;
	struct hmap agents; /* id -> struct track (the key is the id's copy after it) */
};

int idguard_new(struct idguard **ret)
{
	struct idguard *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	hmap_init(&g->agents);
	*ret = g;
	return 0;
}

static bool drop_all(const char *key, void *val, void *ctx)
{
	(void)key;
	(void)ctx;
	free(val);
	return true;
}

void idguard_free(struct idguard *g)
{
	if (!g)
		return;
	hmap_sweep(&g->agents, drop_all, NULL);
	hmap_fini(&g->agents);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

static void copy_id(char dst[65], const char *src)
{
	size_t n = strnlen(src, 64);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The agent's track, made on first sight (with *made set); NULL when the table is full or on
 * allocation failure (*r -ENOMEM). */
static struct track *track_of(struct idguard *g, const char *agent, bool *made, int *r)
{
	struct track *t = hmap_get(&g->agents, agent);
	size_t n = strlen(agent);

	*made = false;
	if (t)
		return t;
	if (g->agents.len >= IDGUARD_MAX_AGENTS)
		return NULL;
	if (!(t = calloc(1, sizeof(*t) + n + 1))) {
		*r = -ENOMEM;
		return NULL;
	}
	memcpy(t + 1, agent, n + 1);
	if (hmap_put(&g->agents, (const char *)(t + 1), t, NULL) < 0) {
		free(t);
		*r = -ENOMEM;
		return NULL;
	}
	*made = true;
	return t;
}

void idguard_seed(struct idguard *g, const char *agent, const char *boot)
{
	struct track *t;
	bool made;
	int r = 0;

	pthread_mutex_lock(&g->lock);
	if ((t = track_of(g, agent, &made, &r)) && made)
		copy_id(t->cur, boot);
	pthread_mutex_unlock(&g->lock);
}

bool idguard_knows(struct idguard *g, const char *agent)
{
	bool known;

	pthread_mutex_lock(&g->lock);
	known = hmap_get(&g->agents, agent) != NULL;
	pthread_mutex_unlock(&g->lock);
	return known;
}

/* A report of the boot refused: counted, and who holds the id since when. */
static int refuse(struct track *t, int64_t mono, char held[65], int64_t *since)
{
	t->last_refused = mono;
	t->refusals++;
	copy_id(held, t->held);
	*since = t->since;
	return -EUSERS;
}

int idguard_check(struct idguard *g, const char *agent, const char *boot, bool full, int64_t mono, char held[65],
		  int64_t *since)
{
	struct track *t;
	bool made;
	int r = 0;

	pthread_mutex_lock(&g->lock);
	if (!(t = track_of(g, agent, &made, &r)))
		goto out;
	if (made) {
		copy_id(t->cur, boot);
		t->cur_seen = mono;
		goto out;
	}
	/* the second agent silent, or the one that kept the id: back to normal */
	if (t->refused[0] && (mono - t->last_refused > IDGUARD_HOLD_NS || mono - t->cur_seen > IDGUARD_HOLD_NS))
		t->refused[0] = t->held[0] = '\0';
	if (t->refused[0] && !strncmp(boot, t->refused, 64)) {
		r = refuse(t, mono, held, since);
		goto out;
	}
	/* the fast PFC lane's reports go beside the full ones (a restarted agent's go while its
	 * spool of the boot before drains): they are refused with the boot refused, not turns */
	if (!full || !strncmp(boot, t->cur, 64)) {
		if (!strncmp(boot, t->cur, 64))
			t->cur_seen = mono;
		goto out;
	}
	if (t->prev[0] && !strncmp(boot, t->prev, 64)) {
		/* back to the boot before: two agents take turns (A, B, A, B) */
		copy_id(t->prev, t->cur);
		copy_id(t->cur, boot);
		t->cur_seen = mono;
		if (++t->flips >= 2) {
			/* the one that came first keeps the id, the other is refused */
			copy_id(t->held, t->older);
			copy_id(t->refused, strncmp(t->cur, t->older, 64) ? t->cur : t->prev);
			copy_id(t->cur, t->held);
			t->prev[0] = '\0';
			t->since = t->last_refused = mono;
			t->flips = 0;
			if (!strncmp(boot, t->refused, 64))
				r = refuse(t, mono, held, since);
		}
		goto out;
	}
	/* a boot not seen lately: a restart, a reboot (or a second agent, not known yet); the one
	 * that keeps the id restarted: its new boot keeps it */
	if (t->held[0] && !strncmp(t->cur, t->held, 64))
		copy_id(t->held, boot);
	copy_id(t->older, t->cur);
	copy_id(t->prev, t->cur);
	copy_id(t->cur, boot);
	t->cur_seen = mono;
	t->flips = 0;
out:
	pthread_mutex_unlock(&g->lock);
	return r;
}

json_t *idguard_shared(struct idguard *g, int64_t mono)
{
	json_t *arr = json_array();
	const char *id;
	size_t it = 0;
	void *v;

	pthread_mutex_lock(&g->lock);
	while (arr && hmap_next(&g->agents, &it, &id, &v)) {
		const struct track *t = v;

		if (!t->refused[0] || mono - t->last_refused > IDGUARD_HOLD_NS)
			continue;
		if (json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:I}", "agent", id, "held_by", t->held,
							  "refused", t->refused, "refused_reports",
							  (json_int_t)t->refusals)) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	pthread_mutex_unlock(&g->lock);
	return arr;
}
