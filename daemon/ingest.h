/* Ingest of agent reports: deduplication, inventory, counter deltas, storage.
 *
 * A validated report (daemon/report.h) becomes one store job.  On the writer thread the job
 * checks (agent, boot_id, seq) against what is stored (a report seen before is accepted and
 * ignored), records the agent and, when it changed, its inventory, then turns every port's raw
 * values into deltas against the previous sample of that port and stores one encoded row per
 * port.  The previous samples live in an in-memory cache that is a copy of the newest stored row
 * of each port: it is filled lazily from the database and dropped when a commit fails, so the
 * database stays the truth.  The same cache serves /metrics. */
#ifndef ROCEFAB_INGEST_H
#define ROCEFAB_INGEST_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <sqlite3.h>

#include "daemon/codec.h"
#include "daemon/report.h"
#include "daemon/store.h"
#include "lib/buf.h"
#include "lib/registry.h"

struct ingest;

struct ingest_result {
	int status;	   /* 0 or a negative errno */
	bool duplicate;	   /* already stored: accepted and ignored */
	uint32_t samples;  /* normalized values stored */
	uint32_t baseline; /* of which without a delta (first sample, reset beyond belief, ...) */
	uint32_t ignored;  /* raw values the registry does not know */
	int64_t seq;
	json_t *commands; /* for the agent (a new array; the callback takes it), NULL on failure */
};

typedef void (*ingest_cb)(void *ctx, const struct ingest_result *res);

int ingest_new(struct store *s, const struct reg *reg, struct ingest **ret, struct rf_err *e);
void ingest_free(struct ingest *ing);

/* A hook runs with every report on the writer thread, inside the report's transaction, once
 * the report is stored (and for a duplicate too): the configuration changes (changes.h), the
 * pingmesh (pingmesh.h).  It may write and append commands for the agent; a failure rolls the
 * whole report back.  Hooks run in the order they were added; add them before the first
 * report.  -ENOSPC beyond INGEST_HOOKS_MAX. */
#define INGEST_HOOKS_MAX 8
/* The most ports and devices rocefabd keeps of one agent, present or gone (gone ports stay
 * with their data): new ones beyond are not stored, and the agent's errors say so
 * (PORTS_NOT_STORED). */
#define INGEST_MAX_AGENT_PORTS 8192
#define INGEST_MAX_AGENT_DEVICES 1024
typedef int (*ingest_hook_fn)(void *ctx, struct store *s, const struct report *rep, int64_t now,
			      json_t *commands);
int ingest_add_hook(struct ingest *ing, ingest_hook_fn fn, void *ctx);

/* Takes ownership of rep.  cb runs on the writer thread once the report is committed (or
 * failed).  Returns -EAGAIN when the store queue is full (cb is not called then). */
int ingest_submit(struct ingest *ing, struct report *rep, ingest_cb cb, void *ctx);

/* The db id of a registry counter, or 0. */
uint32_t ingest_counter_dbid(const struct ingest *ing, unsigned reg_id);
/* The registry counter of a db counter id, or NULL. */
const struct reg_counter *ingest_counter_by_dbid(const struct ingest *ing, uint32_t dbid);
const struct reg *ingest_registry(const struct ingest *ing);

struct ingest_stats {
	uint64_t reports, duplicates, samples, baseline, ignored, failed;
	double samples_per_s; /* over the last 10 s */
};
void ingest_get_stats(struct ingest *ing, struct ingest_stats *ret);
/* The same at a given CLOCK_MONOTONIC time (for tests: a machine booted seconds ago). */
void ingest_get_stats_at(struct ingest *ing, int64_t mono_ns, struct ingest_stats *ret);

/* A scheduler pass (daemon/sched.h; ctx is the ingest): queues a job that writes the open minute
 * of every port whose last sample was stored more than ingest_set_idle()'s time ago, so that a
 * silent port's last minute reaches the rollups before its raw samples are pruned.  (A port
 * that then reports again in that same minute has that minute merged again when it closes;
 * meanwhile a query shows the minute's row without those samples.) */
void ingest_set_idle(struct ingest *ing, int64_t idle_ns);
int ingest_flush_idle(void *ctx, int64_t now);
/* At a clean stop, once the last reports are in: queues the job that writes the open minute of
 * every port (flush the store after it), so that a port that does not report again (or only
 * after its raw samples are pruned) keeps its last minute; one that reports again in that same
 * minute has it merged again as above.  -errno when it could not be queued. */
int ingest_flush_open(struct ingest *ing);
/* Forgets an agent gone for good (a host retired, a switch replaced): its ports' samples and
 * rollups, its ports, devices, configuration, QPs and boots, and the agent; the audit log keeps
 * what happened to it.  Only a stale agent (o: daemon/views.h; -EALREADY AGENT_ACTIVE), with
 * no change to it pending, sent or in doubt (-EALREADY CHANGES_OPEN); -ENOENT UNKNOWN_AGENT.
 * Its data goes in steps, a writer job each (reports are stored between them), each checking
 * again that it may go: 0 when the first is queued, and cb->done comes on the writer thread
 * once all is gone ({forgotten, ports, rows}: the callback owns it) or a step failed (an
 * error that says how much went before); cb->go_on (may be NULL), asked between steps, stops
 * them when false (-ECANCELED: rocefabd stopping).  Else a negative errno and e (no callback).
 * A report of it later makes it anew. */
struct views_opts;
struct ingest_forget_cb {
	bool (*go_on)(void *ctx);
	void (*done)(void *ctx, int r, json_t *doc, const struct rf_err *e);
};
int ingest_forget_agent(struct ingest *ing, const char *id, const struct views_opts *o,
			const struct ingest_forget_cb *cb, void *ctx, struct rf_err *e);
/* Who may report as which agent id, beyond its token: daemon/idguard.h. */
struct idguard *ingest_idguard(struct ingest *ing);
/* A pass (every second): the closed hours (days) of up to INGEST_COMPACT_PORTS ports into
 * their blocks (daemon/rollup.h), in one store job: ~5 ms a port for an hour of 127 counters,
 * so an hour's end at 4,096 ports takes ~4 minutes of 80 ms jobs, between the reports. */
#define INGEST_COMPACT_PORTS 16
int ingest_compact(void *ctx, int64_t now);

/* Prometheus text of every port's normalized counters (families rocefab_port_*); of the
 * per-priority ones only the priorities whose bit prio_mask sets (a family none of whose
 * series is left is not named). */
/* A port's newest raw row, read as a chain from its minute's start (daemon/codec.h).  The
 * statements: INGEST_NEWEST_SQL (port_id) and INGEST_ROWS_SQL (port_id, from, to), on the
 * caller's connection. */
#define INGEST_NEWEST_SQL "SELECT max(t_ns) FROM samples WHERE port_id = ?"
#define INGEST_ROWS_SQL                                                                          \
	"SELECT t_ns, data FROM samples WHERE port_id = ? AND t_ns >= ? AND t_ns <= ? ORDER BY t_ns"
int ingest_read_newest(sqlite3_stmt *max_st, sqlite3_stmt *rows_st, int64_t port_id,
		       struct codec_chain *chain, int64_t *ret_t,
		       int (*fn)(const struct sample_entry *e, void *ctx), void *ctx);
/* An entry callback that keeps nothing (a row read only to follow its chain). */
int ingest_skip_entry(const struct sample_entry *e, void *ctx);

/* Every sample of a committed report also to remote-write (NULL: off); set before reports. */
struct rwrite;
void ingest_set_rwrite(struct ingest *ing, struct rwrite *rw);

int ingest_render_metrics(struct ingest *ing, uint8_t prio_mask, struct buf *out);

#endif
