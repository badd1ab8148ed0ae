/* The SONiC-style PFC watchdog baseline: see pfcwd.h.  State per switch queue, kept by
 * "node\x1fport\x1fprio" so that it survives snapshots built in a different order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/pfcwd.h"
#include "lib/hmap.h"
#include "lib/vec.h"

struct wdq {
	char *key;
	char node[96], port[96];
	uint8_t prio;
	bool was_paused;   /* at the previous poll */
	bool stormed;
	int64_t countdown; /* us left before detection */
	int64_t quiet_us;  /* stormed: time without pause frames */
};

struct cc_wd {
	struct cc_wd_conf conf;
	struct hmap q;
	struct cc_wd_action *acts;
	size_t nacts, capacts;
	size_t nstormed;
};

struct cc_wd_conf cc_wd_scaled(int64_t interval_us)
{
	return (struct cc_wd_conf){ .detection_us = interval_us, .restoration_us = interval_us };
}

struct cc_wd *cc_wd_new(const struct cc_wd_conf *c)
{
	struct cc_wd *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->conf = *c;
	hmap_init(&w->q);
	return w;
}

void cc_wd_free(struct cc_wd *w)
{
	const char *k;
	void *v;

	if (!w)
		return;
	for (size_t i = 0; hmap_next(&w->q, &i, &k, &v);) {
		free(((struct wdq *)v)->key);
		free(v);
	}
	hmap_fini(&w->q);
	free(w->acts);
	free(w);
}

size_t cc_wd_stormed(const struct cc_wd *w)
{
	return w->nstormed;
}

static int act(struct cc_wd *w, const struct wdq *q, enum cc_wd_op op)
{
	if (vec_room((void **)&w->acts, &w->capacts, w->nacts, sizeof(*w->acts)) < 0)
		return -ENOMEM;
	w->acts[w->nacts] = (struct cc_wd_action){ .op = op, .prio = q->prio };
	snprintf(w->acts[w->nacts].node, sizeof(w->acts[0].node), "%s", q->node);
	snprintf(w->acts[w->nacts].port, sizeof(w->acts[0].port), "%s", q->port);
	w->nacts++;
	return 0;
}

int cc_wd_poll(struct cc_wd *w, const struct cc_snap *s, const struct cc_wd_action **ret, size_t *ret_n)
{
	w->nacts = 0;
	for (uint32_t p = 0; p < s->nports; p++) {
		const struct cc_port *port = &s->ports[p];

		if (s->nodes[port->node].kind != CC_SWITCH)
			continue;
		for (unsigned pr = 0; pr < CC_NPRIO; pr++) {
			const struct cc_prio *e = cc_snap_prio(s, p, pr);
			char key[256];
			struct wdq *q;
			bool paused, frames, stormed_poll;

			if (!e || !(port->lossless & (1u << pr) || (e->have & (1u << CF_PAUSED))))
				continue;
			snprintf(key, sizeof(key), "%s\x1f%s\x1f%u", s->nodes[port->node].name, port->name, pr);
			q = hmap_get(&w->q, key);
			if (!q) {
				q = calloc(1, sizeof(*q));
				if (!q || !(q->key = strdup(key))) {
					free(q);
					return -ENOMEM;
				}
				snprintf(q->node, sizeof(q->node), "%s", s->nodes[port->node].name);
				snprintf(q->port, sizeof(q->port), "%s", port->name);
				q->prio = (uint8_t)pr;
				q->countdown = w->conf.detection_us;
				if (hmap_put(&w->q, q->key, q, NULL) < 0) {
					free(q->key);
					free(q);
					return -ENOMEM;
				}
			}
			paused = e->v[CF_PAUSED] != 0;
			frames = e->v[CF_RX_PAUSE_FRAMES] > 0;
			if (q->stormed) {
				/* restoration: no pause frame for restoration_us */
				q->quiet_us = frames ? 0 : q->quiet_us + s->interval_us;
				if (q->quiet_us >= w->conf.restoration_us) {
					q->stormed = false;
					q->countdown = w->conf.detection_us;
					w->nstormed--;
					if (act(w, q, CC_WD_RESTORE) < 0)
						return -ENOMEM;
				}
			} else if (port->lossless & (1u << pr)) {
				stormed_poll = frames && !e->v[CF_RX_PAUSE_TRANSITIONS] && paused && q->was_paused;
				if (stormed_poll) {
					q->countdown -= s->interval_us;
					if (q->countdown <= 0) {
						q->stormed = true;
						q->quiet_us = 0;
						w->nstormed++;
						if (act(w, q, CC_WD_DROP) < 0)
							return -ENOMEM;
					}
				} else {
					q->countdown = w->conf.detection_us;
				}
			}
			q->was_paused = paused;
		}
	}
	*ret = w->acts;
	*ret_n = w->nacts;
	return 0;
}
