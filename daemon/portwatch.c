/* Ports that went down: see portwatch.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/alerts.h"
#include "daemon/portwatch.h"
#include "lib/log.h"
#include "lib/timeutil.h"

struct portwatch {
	struct store *store;
	/* a pass's findings (kept: the pass runs every few seconds) */
	struct alert_finding af[PORTWATCH_MAX];
	char subj[PORTWATCH_MAX][200], ev[PORTWATCH_MAX][400];
	bool over;	 /* more were down than alerted: said once until fewer are */
	bool none_synced; /* the last pass found none and said so: no writer job till one is */
};

static const char *const kinds[] = { "port_down", NULL };

int portwatch_new(struct store *s, struct portwatch **ret)
{
	struct portwatch *pw = calloc(1, sizeof(*pw));

	if (!pw)
		return -ENOMEM;
	pw->store = s;
	*ret = pw;
	return 0;
}

void portwatch_free(struct portwatch *pw)
{
	free(pw);
}

int portwatch_pass(void *ctx, int64_t now)
{
	/* (ports down longest first: past the cap, the newest are left out, and those alerted
	 * stay so) */
	static const char sql[] =
		"SELECT key, state_ns, peer_system, peer_port FROM ports "
		"WHERE present = 1 AND state = 'down' AND was_up = 1 ORDER BY state_ns, key";
	struct portwatch *pw = ctx;
	struct store_reader *rd = store_reader_get(pw->store);
	sqlite3_stmt *st;
	size_t n = 0, more = 0;
	int rc, r;

	if (!rd)
		return -EAGAIN;
	if (!(st = store_reader_stmt(rd, sql))) {
		store_reader_put(pw->store, rd);
		return -EIO;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *peer = (const char *)sqlite3_column_text(st, 2);
		const char *peer_port = (const char *)sqlite3_column_text(st, 3);
		char since[40] = "";

		if (n == PORTWATCH_MAX) {
			more++;
			continue;
		}
		snprintf(pw->subj[n], sizeof(pw->subj[n]), "%s", (const char *)sqlite3_column_text(st, 0));
		if (sqlite3_column_type(st, 1) != SQLITE_NULL)
			tu_format_rfc3339(sqlite3_column_int64(st, 1), since, sizeof(since));
		snprintf(pw->ev[n], sizeof(pw->ev[n]), "the port is down%s%s, after it was up%s%s%s%s",
			 since[0] ? " since " : "", since, peer ? "; its neighbour was " : "", peer ?: "",
			 peer && peer_port ? " port " : "", peer && peer_port ? peer_port : "");
		pw->af[n] = (struct alert_finding){ .kind = "port_down", .subject = pw->subj[n], .evidence = pw->ev[n] };
		n++;
	}
	sqlite3_reset(st);
	store_reader_put(pw->store, rd);
	if (rc != SQLITE_DONE)
		return store_errno(rc);
	if (more && !pw->over)
		log_msg(LOG_WARNING, "portwatch", "PORTS_DOWN",
			"%zu ports are down after they were up: alerts for the %d down longest, the other %zu left "
			"out (rocefabctl ports --state down)", n + more, PORTWATCH_MAX, more);
	pw->over = more > 0;
	if (!n && pw->none_synced)
		return 0;
	r = alerts_sync(pw->store, "portwatch", kinds, pw->af, n, now);
	pw->none_synced = !n && r == 0;
	return r;
}
