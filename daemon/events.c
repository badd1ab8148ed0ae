/* The event ring of GET /api/v1/events.  See events.h. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/events.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

struct event {
	uint64_t seq;
	char *text; /* "id: ...\nevent: ...\ndata: ...\n\n" */
	size_t len;
};

struct events {
	pthread_mutex_t lock;
	struct event *ring;
	unsigned cap;
	uint64_t last;	/* seq of the newest event; the ring holds last-cap+1 .. last */
	char epoch[17]; /* hex */
	void (*wake)(void *ctx);
	void *wake_ctx;
	unsigned waking;       /* wake calls in progress (outside the lock) */
	pthread_cond_t woken; /* signalled when one ends */
};

int events_new(unsigned cap, struct events **ret)
{
	struct events *ev = calloc(1, sizeof(*ev));

	if (cap < 16)
		cap = 16;
	if (!ev || !(ev->ring = calloc(cap, sizeof(*ev->ring)))) {
		free(ev);
		return -ENOMEM;
	}
	ev->cap = cap;
	snprintf(ev->epoch, sizeof(ev->epoch), "%" PRIx64, (uint64_t)(tu_now_ns() / 1000));
	pthread_mutex_init(&ev->lock, NULL);
	pthread_cond_init(&ev->woken, NULL);
	*ret = ev;
	return 0;
}

void events_free(struct events *ev)
{
	if (!ev)
		return;
	for (unsigned i = 0; i < ev->cap; i++)
		free(ev->ring[i].text);
	free(ev->ring);
	pthread_cond_destroy(&ev->woken);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

void events_set_wake(struct events *ev, void (*fn)(void *ctx), void *ctx)
{
	pthread_mutex_lock(&ev->lock);
	ev->wake = fn;
	ev->wake_ctx = ctx;
	/* a wake of the old function still running: the caller may free its context next */
	while (ev->waking)
		pthread_cond_wait(&ev->woken, &ev->lock);
	pthread_mutex_unlock(&ev->lock);
}

int events_format_id(struct events *ev, uint64_t seq, char *buf, size_t len)
{
	return snprintf(buf, len, "%s-%" PRIu64, ev->epoch, seq);
}

uint64_t events_publish(struct events *ev, const char *type, json_t *data_stolen)
{
	char *data = data_stolen ? json_dumps(data_stolen, JSON_COMPACT) : NULL;
	void (*wake)(void *ctx);
	void *wake_ctx;
	struct event *slot;
	uint64_t seq;
	char *text;
	int n;

	json_decref(data_stolen);
	if (!data)
		return 0;
	pthread_mutex_lock(&ev->lock);
	seq = ev->last + 1;
	/* json_dumps escapes newlines inside strings: the data is one line, as SSE needs */
	n = asprintf(&text, "id: %s-%" PRIu64 "\nevent: %s\ndata: %s\n\n", ev->epoch, seq, type,
		     data);
	free(data);
	if (n < 0) {
		pthread_mutex_unlock(&ev->lock);
		return 0;
	}
	slot = &ev->ring[seq % ev->cap];
	free(slot->text);
	*slot = (struct event){ seq, text, (size_t)n };
	ev->last = seq;
	wake = ev->wake;
	wake_ctx = ev->wake_ctx;
	ev->waking += wake != NULL;
	pthread_mutex_unlock(&ev->lock);
	if (wake) {
		wake(wake_ctx);
		pthread_mutex_lock(&ev->lock);
		ev->waking--;
		pthread_cond_broadcast(&ev->woken);
		pthread_mutex_unlock(&ev->lock);
	}
	return seq;
}

uint64_t events_last(struct events *ev)
{
	uint64_t last;

	pthread_mutex_lock(&ev->lock);
	last = ev->last;
	pthread_mutex_unlock(&ev->lock);
	return last;
}

/* Events after seq are all still in the ring. */
static bool holds_after(const struct events *ev, uint64_t seq)
{
	return seq <= ev->last && ev->last - seq <= ev->cap;
}

int events_parse_id(struct events *ev, const char *id, uint64_t *ret)
{
	size_t elen = strlen(ev->epoch);
	uint64_t seq;
	int r = -ESTALE;

	if (strncmp(id, ev->epoch, elen) != 0 || id[elen] != '-' ||
	    str_parse_uint(id + elen + 1, UINT64_MAX, &seq) < 0)
		return -ESTALE;
	pthread_mutex_lock(&ev->lock);
	if (holds_after(ev, seq)) {
		*ret = seq;
		r = 0;
	}
	pthread_mutex_unlock(&ev->lock);
	return r;
}

int events_since(struct events *ev, uint64_t after, size_t max_bytes, struct buf *out,
		 uint64_t *ret_last)
{
	int r = 0;

	pthread_mutex_lock(&ev->lock);
	if (after >= ev->last)
		goto out;
	if (!holds_after(ev, after)) {
		r = -ESTALE;
		goto out;
	}
	for (uint64_t s = after + 1; s <= ev->last; s++) {
		const struct event *e = &ev->ring[s % ev->cap];

		if (r == 1 && out->len + e->len > max_bytes)
			break;
		if (buf_append(out, e->text, e->len) < 0)
			break;
		*ret_last = s;
		r = 1;
	}
out:
	pthread_mutex_unlock(&ev->lock);
	return r;
}
