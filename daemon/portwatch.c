/* Ports that went down: see portwatch.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/alerts.h"
#include "daemon/portwatch.h"
#include "daemon/views.h"
#include "lib/timeutil.h"

struct portwatch {
	struct store *store;
	int64_t stale_intervals; /* (read and written whole: one 64-bit word) */
};

static const char *const kinds[] = { "port_down", NULL };

int portwatch_new(struct store *s, int64_t stale_intervals, struct portwatch **ret)
{
	struct portwatch *pw = calloc(1, sizeof(*pw));

	if (!pw)
		return -ENOMEM;
	pw->store = s;
	pw->stale_intervals = stale_intervals;
	*ret = pw;
	return 0;
}

void portwatch_free(struct portwatch *pw)
{
	free(pw);
}

void portwatch_set_stale_intervals(struct portwatch *pw, int64_t n)
{
	__atomic_store_n(&pw->stale_intervals, n, __ATOMIC_RELAXED);
}

int portwatch_pass(void *ctx, int64_t now)
{
	static const char sql[] =
		"SELECT p.key, p.state_ns, p.peer_system, p.peer_port, a.last_seen_ns, a.interval_ms FROM ports p "
		"JOIN agents a ON a.id = p.agent_id WHERE p.present = 1 AND p.state = 'down' AND p.was_up = 1 "
		"ORDER BY p.key";
	struct portwatch *pw = ctx;
	struct views_opts o = { .now_ns = now,
				.stale_intervals = __atomic_load_n(&pw->stale_intervals, __ATOMIC_RELAXED) };
	struct store_reader *rd = store_reader_get(pw->store);
	struct alert_finding *af = NULL;
	char (*subj)[200] = NULL, (*ev)[400] = NULL;
	sqlite3_stmt *st;
	size_t n = 0;
	int rc, r;

	if (!rd)
		return -EAGAIN;
	af = calloc(PORTWATCH_MAX, sizeof(*af));
	subj = calloc(PORTWATCH_MAX, sizeof(*subj));
	ev = calloc(PORTWATCH_MAX, sizeof(*ev));
	if (!af || !subj || !ev || !(st = store_reader_stmt(rd, sql))) {
		r = -ENOMEM;
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < PORTWATCH_MAX) {
		const char *peer = (const char *)sqlite3_column_text(st, 2);
		const char *peer_port = (const char *)sqlite3_column_text(st, 3);
		char since[40] = "";

		if (strcmp(views_agent_status(&o, sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5)), "ok"))
			continue; /* its agent is gone: that alert says it */
		snprintf(subj[n], sizeof(subj[n]), "%s", (const char *)sqlite3_column_text(st, 0));
		if (sqlite3_column_type(st, 1) != SQLITE_NULL)
			tu_format_rfc3339(sqlite3_column_int64(st, 1), since, sizeof(since));
		snprintf(ev[n], sizeof(ev[n]), "the port is down%s%s, after it was up%s%s%s%s", since[0] ? " since " : "",
			 since, peer ? "; its neighbour was " : "", peer ?: "", peer && peer_port ? " port " : "",
			 peer && peer_port ? peer_port : "");
		af[n] = (struct alert_finding){ .kind = "port_down", .subject = subj[n], .evidence = ev[n] };
		n++;
	}
	sqlite3_reset(st);
	r = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_errno(rc);
out:
	store_reader_put(pw->store, rd);
	if (r == 0)
		r = alerts_sync(pw->store, "portwatch", kinds, af, n, now);
	free(af);
	free(subj);
	free(ev);
	return r;
}
