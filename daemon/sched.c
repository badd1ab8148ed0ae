/* The scheduler: see sched.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sched.h"
#include "lib/log.h"
#include "lib/timeutil.h"

struct entry {
	struct sched_pass p;
	int64_t due; /* monotonic ns */
	struct sched_stats st;
	bool warned; /* a failure was logged: say when it works again */
};

struct sched {
	struct entry *v;
	size_t n;
};

int sched_new(struct sched **ret)
{
	struct sched *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	free(s->v);
	free(s);
}

int sched_add(struct sched *s, const struct sched_pass *p, int64_t mono_now)
{
	struct entry *nv;

	if (!p->run || p->period_ns <= 0 || !p->name)
		return -EINVAL;
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].p.name, p->name))
			return -EEXIST;
	if (!(nv = realloc(s->v, (s->n + 1) * sizeof(*nv))))
		return -ENOMEM;
	s->v = nv;
	nv[s->n] = (struct entry){ .p = *p, .due = mono_now + (p->first_ns > 0 ? p->first_ns : 0) };
	s->n++;
	return 0;
}

int64_t sched_run_due(struct sched *s, int64_t mono_now, int64_t now)
{
	int64_t next = INT64_MAX;

	for (size_t i = 0; i < s->n; i++) {
		struct entry *e = &s->v[i];

		if (mono_now >= e->due) {
			int64_t t0 = tu_mono_ns();
			int r = e->p.run(e->p.ctx, now);

			e->st.last_ns = tu_mono_ns() - t0;
			e->st.runs++;
			if (r == -EAGAIN) {
				/* busy (the store's queue is full under a burst of reports): the next
				 * period does it */
				e->st.skipped++;
				log_debug(e->p.name, "periodic pass skipped: the store is busy");
			} else if (r < 0) {
				e->st.failures++;
				if (!e->warned)
					log_warning(e->p.name, "periodic pass failed: %s (said once until it works again)",
						    strerror(-r));
				e->warned = true;
			} else if (e->warned) {
				log_notice(e->p.name, "periodic pass works again");
				e->warned = false;
			}
			e->st.last_result = r;
			/* the next period starts now: a late run does not cause a burst of catch-ups */
			e->due = mono_now + e->p.period_ns;
		}
		if (e->due < next)
			next = e->due;
	}
	return next == INT64_MAX ? INT64_MAX : (next > mono_now ? next - mono_now : 0);
}

int sched_get_stats(const struct sched *s, const char *name, struct sched_stats *ret)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].p.name, name)) {
			*ret = s->v[i].st;
			return 0;
		}
	return -ENOENT;
}
