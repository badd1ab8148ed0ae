/* The sonic backend: a SONiC switch through its redis (agents/sonic.h), with no vendor SDK.
 *
 * Inventory: the device is DEVICE_METADATA|localhost's hostname; its ports are CONFIG_DB's
 * PORT table (speed, MTU, alias), their state APPL_DB's PORT_TABLE oper_status, their
 * neighbours APPL_DB's LLDP_ENTRY_TABLE (filled by SONiC's lldp container).
 *
 * Counters: COUNTERS_DB's name maps (COUNTERS_PORT_NAME_MAP "Ethernet0" -> oid,
 * COUNTERS_QUEUE_NAME_MAP and COUNTERS_PG_NAME_MAP "Ethernet0:3" -> oid) lead to the hashes
 * COUNTERS:<oid> (SAI statistics by their SAI names), PERSISTENT_WATERMARKS:<oid> and
 * PERIODIC_WATERMARKS:<oid>.  Each goes into the report under its registry group
 * (schemas/counters.json): sonic_port, sonic_queue, sonic_pg, sonic_queue_watermark,
 * sonic_queue_periodic_watermark; a queue's or PG's fields are named FIELD@INDEX.  Only
 * unicast queues 0-7 are read.  A value that is not a decimal number (or true/false, as the
 * PFC watchdog writes SAI_QUEUE_ATTR_PAUSE_STATUS) is a collection error and left out.
 *
 * Configuration, in rocefab's names (schemas/command.schema.json):
 *   PFC    PORT_QOS_MAP|PORT pfc_enable "3,4" is the enable mask; the lossless priority
 *          group's BUFFER_PG|PORT|PGS profile is the buffer profile: dynamic_th -> alpha_shift
 *          (mode dynamic), static_th -> xoff_bytes (mode static; the shared-buffer use at which
 *          the PG sends XOFF), static_th - xon_offset -> xon_bytes, xoff (the headroom) ->
 *          headroom_bytes, its pool's size -> shared_bytes.
 *   ECN    QUEUE|PORT|QUEUES wred_profile names a WRED_PROFILE: green_min_threshold ->
 *          kmin_bytes, green_max_threshold -> kmax_bytes, green_drop_probability (percent) ->
 *          pmax, enabled when it marks green (ecn ecn_all, ecn_green, ...) with
 *          wred_green_enable.  A queue without a profile is not marking.
 * Keys may name several ports (Ethernet0,Ethernet4) and ranges of queues or PGs (3-4), and
 * references may be bare names or the older [TABLE|NAME].
 *
 * Changes go to CONFIG_DB in one MULTI/EXEC and are read back.  A WRED or buffer profile is
 * shared: a change for one queue (or one port's PGs) edits the profile in place only when
 * nothing else uses it, and otherwise writes a copy named PROFILE_PORT_qQUEUE (PROFILE_PORT)
 * bound to that queue alone, splitting a binding key that covered others; the read-back says
 * which (wred_profile, wred_profile_cloned_from).  What SONiC cannot express (a drop
 * probability that is not a whole percent, XOFF on a port without a lossless PG) fails. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "agents/backend.h"
#include "agents/sonic.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/params.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

static const char *const port_name_choices[] = { "name", "alias", NULL };
static const char *const clock_choices[] = { "agent", "sim", NULL };

#define S struct sonic_settings
const struct conf_opt backend_sonic_opts[] = {
	CONF_OPT("sonic.redis", CONF_STRING, S, redis, "unix:/var/run/redis/redis.sock",
		 "the switch's redis, SONiC's databases (backend sonic): unix:PATH or HOST:PORT"),
	CONF_OPT("sonic.port_names", CONF_ENUM, S, port_names, "name",
		 "how reports name the switch's ports: name (Ethernet0) or alias (CONFIG_DB PORT "
		 "alias)", .choices = port_name_choices),
	CONF_OPT("sonic.clock", CONF_ENUM, S, clock, "agent",
		 "the counters' read time: agent (this agent's clock) or sim (the fabric clock that "
		 "rocefab-sim's SONiC-shaped switches write into COUNTERS_DB " SONIC_SIM_CLOCK ")",
		 .choices = clock_choices),
	CONF_OPT("sonic.timeout", CONF_DURATION, S, timeout, "2s",
		 "to connect to the redis, and for each of its replies", .min = 10 * NSEC_PER_MSEC,
		 .max = 60 * NSEC_PER_SEC),
	CONF_OPT_END,
};
#undef S

#define NQUEUES 8
#define MAX_PORTS 1024
#define MAX_KEYS 200000 /* in one CONFIG_DB table */

struct sport {
	char name[64];	 /* Ethernet0 */
	char alias[64];	 /* "" when none */
	char report[64]; /* the name in reports */
};

struct sonicb {
	char addr[256];
	int names; /* enum sonic_port_names */
	int clock; /* enum sonic_clock */
	int64_t timeout_ns;
	redisContext *c;
	int db; /* selected; -1 unknown */
	char host[64];
	struct sport *ports;
	size_t nports;
	json_t *cfg_errors; /* problems of the configuration, reported with the next collect */
	bool said_down;
	const struct reg *reg;
	bool all;
};

/* --- redis --------------------------------------------------------------------------------- */

static void cfg_problem(struct sonicb *sb, const char *code, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

int sonic_redis_connect(const char *address, int64_t timeout_ns, redisContext **ret,
			struct rf_err *e)
{
	struct timeval tv = { .tv_sec = timeout_ns / NSEC_PER_SEC,
			      .tv_usec = (timeout_ns % NSEC_PER_SEC) / 1000 };
	const char *path = NULL, *colon;
	redisContext *c;
	char host[256];
	uint64_t port;

	*ret = NULL;
	if (!address || !*address)
		return rf_err_set(e, -EINVAL, "BAD_SONIC_REDIS", "sonic.redis",
				  "empty: unix:PATH or HOST:PORT of the switch's redis");
	if (!strncmp(address, "unix:", 5))
		path = address + 5;
	else if (address[0] == '/')
		path = address;
	if (path) {
		if (path[0] != '/')
			return rf_err_set(e, -EINVAL, "BAD_SONIC_REDIS", "sonic.redis",
					  "'%s': a unix socket needs an absolute path", address);
		c = redisConnectUnixWithTimeout(path, tv);
	} else {
		const char *h = !strncmp(address, "tcp:", 4) ? address + 4 : address;

		colon = strrchr(h, ':');
		if (!colon || colon == h || (size_t)(colon - h) >= sizeof(host) ||
		    str_parse_uint(colon + 1, 65535, &port) < 0 || !port)
			return rf_err_set(e, -EINVAL, "BAD_SONIC_REDIS", "sonic.redis",
					  "'%s' is not unix:PATH or HOST:PORT", address);
		if (h[0] == '[' && colon[-1] == ']') /* [::1]:6379 */
			snprintf(host, sizeof(host), "%.*s", (int)(colon - h - 2), h + 1);
		else
			snprintf(host, sizeof(host), "%.*s", (int)(colon - h), h);
		c = redisConnectWithTimeout(host, (int)port, tv);
	}
	if (!c)
		return -ENOMEM;
	if (c->err) {
		rf_err_set(e, -EHOSTUNREACH, "SONIC_UNREACHABLE", "sonic.redis", "redis at %s: %s", address,
			   c->errstr);
		redisFree(c);
		return -EHOSTUNREACH;
	}
	redisSetTimeout(c, tv);
	*ret = c;
	return 0;
}

static void rdrop(struct sonicb *sb)
{
	if (sb->c)
		redisFree(sb->c);
	sb->c = NULL;
	sb->db = -1;
}

static int rconnect(struct sonicb *sb, struct rf_err *e)
{
	int r;

	if (sb->c)
		return 0;
	if ((r = sonic_redis_connect(sb->addr, sb->timeout_ns, &sb->c, e)) < 0) {
		if (!sb->said_down)
			log_warning("sonic", "%s; reporting errors until it answers", e->msg);
		sb->said_down = true;
		return r;
	}
	if (sb->said_down)
		log_info("sonic", "redis at %s answers again", sb->addr);
	sb->said_down = false;
	sb->db = -1;
	return 0;
}

/* A reply that is an error or none at all, as e; an I/O error drops the connection. */
static int reply_err(struct sonicb *sb, redisReply *rep, const char *what, struct rf_err *e)
{
	if (!rep) {
		rf_err_set(e, -EHOSTUNREACH, "SONIC_UNREACHABLE", "sonic.redis", "redis at %s: %s (%s)",
			   sb->addr, sb->c && sb->c->errstr[0] ? sb->c->errstr : "no reply", what);
		rdrop(sb);
		return -EHOSTUNREACH;
	}
	if (rep->type == REDIS_REPLY_ERROR) {
		rf_err_set(e, -EIO, "SONIC_REDIS_ERROR", what, "redis refused %s: %.*s", what,
			   (int)rep->len, rep->str);
		return -EIO;
	}
	return 0;
}

static int rselect(struct sonicb *sb, int db, struct rf_err *e)
{
	redisReply *rep;
	int r;

	if ((r = rconnect(sb, e)) < 0)
		return r;
	if (sb->db == db)
		return 0;
	rep = redisCommand(sb->c, "SELECT %d", db);
	if ((r = reply_err(sb, rep, "SELECT", e)) == 0)
		sb->db = db;
	if (rep)
		freeReplyObject(rep);
	return r;
}

/* One command in database db; the reply (to free) or NULL with e. */
static redisReply *rcmd(struct sonicb *sb, int db, struct rf_err *e, const char *fmt, ...)
{
	redisReply *rep;
	va_list ap;

	if (rselect(sb, db, e) < 0)
		return NULL;
	va_start(ap, fmt);
	rep = redisvCommand(sb->c, fmt, ap);
	va_end(ap);
	if (reply_err(sb, rep, fmt, e) < 0) {
		if (rep)
			freeReplyObject(rep);
		return NULL;
	}
	return rep;
}

/* HGETALL of every key of keys (a JSON array of strings) in one round trip: *ret[i] is key i's
 * reply (an array, empty when the key is not there). */
static int hgetall_many(struct sonicb *sb, int db, const char *const *keys, size_t n,
			redisReply ***ret, struct rf_err *e)
{
	redisReply **reps;
	int r;

	*ret = NULL;
	if ((r = rselect(sb, db, e)) < 0)
		return r;
	reps = calloc(n + 1, sizeof(*reps));
	if (!reps)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		redisAppendCommand(sb->c, "HGETALL %s", keys[i]);
	for (size_t i = 0; i < n; i++) {
		void *p = NULL;

		if (redisGetReply(sb->c, &p) != REDIS_OK) {
			reply_err(sb, NULL, "HGETALL", e);
			for (size_t k = 0; k < i; k++)
				freeReplyObject(reps[k]);
			free(reps);
			return -EHOSTUNREACH;
		}
		reps[i] = p;
	}
	*ret = reps;
	return 0;
}

static void free_replies(redisReply **reps, size_t n)
{
	for (size_t i = 0; reps && i < n; i++)
		if (reps[i])
			freeReplyObject(reps[i]);
	free(reps);
}

/* A field/value array as {field: value}.  Fields that cannot be held (a name longer than 127
 * or with a NUL, a value that is not UTF-8) are left out, and *ret_lossy says so: a hash read
 * that way must not be copied or rewritten. */
static json_t *hash_json_lossy(const redisReply *rep, bool *ret_lossy)
{
	json_t *o = json_object();

	if (ret_lossy)
		*ret_lossy = false;
	if (!rep || rep->type != REDIS_REPLY_ARRAY)
		return o;
	for (size_t i = 0; i + 1 < rep->elements; i += 2) {
		const redisReply *f = rep->element[i], *v = rep->element[i + 1];
		json_t *js = NULL;
		char name[128];

		if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING && f->len < sizeof(name) &&
		    !memchr(f->str, '\0', f->len) && (js = json_stringn(v->str, v->len))) {
			memcpy(name, f->str, f->len);
			name[f->len] = '\0';
			json_object_set_new(o, name, js);
		} else if (ret_lossy) {
			*ret_lossy = true;
		}
	}
	return o;
}

static json_t *hash_json(const redisReply *rep)
{
	return hash_json_lossy(rep, NULL);
}

/* Every key matching TABLE<sep>* of database db, with its hash: {REST: {field: value}} under
 * *ret (REST is the key without TABLE<sep>).  A key that is not a hash is a configuration
 * problem and left out.  With watch, the keys are WATCHed before they are read (a change by
 * someone else until EXEC makes the transaction fail, and it is tried again), and the keys
 * whose hash could not be read whole go into lossy (TABLE|REST). */
static int load_table_w(struct sonicb *sb, int db, const char *table, char sep, bool watch,
			json_t *lossy, json_t **ret, struct rf_err *e)
{
	json_t *out = json_object();
	char cursor[32] = "0", pattern[80];
	const char **keys = NULL;
	size_t n = 0, cap = 0, plen;
	redisReply **reps = NULL;
	int r = 0;

	*ret = NULL;
	plen = (size_t)snprintf(pattern, sizeof(pattern), "%s%c*", table, sep) - 1;
	do {
		redisReply *rep = rcmd(sb, db, e, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
		redisReply *list;

		if (!rep) {
			r = e->err;
			goto out;
		}
		if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
		    rep->element[0]->type != REDIS_REPLY_STRING ||
		    rep->element[1]->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(rep);
			r = rf_err_set(e, -EIO, "SONIC_REDIS_ERROR", table, "SCAN: unexpected reply");
			goto out;
		}
		snprintf(cursor, sizeof(cursor), "%.*s", (int)rep->element[0]->len, rep->element[0]->str);
		list = rep->element[1];
		for (size_t i = 0; i < list->elements; i++) {
			redisReply *k = list->element[i];
			char *key;

			if (k->type != REDIS_REPLY_STRING || k->len <= plen || k->len > 512)
				continue;
			if (n == cap) {
				const char **nk;

				cap = cap ? cap * 2 : 64;
				if (n >= MAX_KEYS || !(nk = realloc(keys, cap * sizeof(*keys)))) {
					freeReplyObject(rep);
					r = rf_err_set(e, -E2BIG, "SONIC_TOO_BIG", table,
						       "more than %d keys in %s", MAX_KEYS, table);
					goto out;
				}
				keys = nk;
			}
			if (!(key = strndup(k->str, k->len))) {
				freeReplyObject(rep);
				r = -ENOMEM;
				goto out;
			}
			keys[n++] = key;
		}
		freeReplyObject(rep);
	} while (strcmp(cursor, "0"));
	if (watch && n) {
		/* in pieces: one WATCH of a few thousand keys is fine, of 200,000 not */
		for (size_t at = 0; at < n; at += 1000) {
			size_t k = n - at < 1000 ? n - at : 1000;
			const char **argv = calloc(k + 1, sizeof(*argv));
			redisReply *rep;

			if (!argv) {
				r = -ENOMEM;
				goto out;
			}
			argv[0] = "WATCH";
			memcpy(argv + 1, keys + at, k * sizeof(*argv));
			rep = redisCommandArgv(sb->c, (int)k + 1, argv, NULL);
			free(argv);
			if ((r = reply_err(sb, rep, "WATCH", e)) < 0) {
				if (rep)
					freeReplyObject(rep);
				goto out;
			}
			freeReplyObject(rep);
		}
	}
	/* SCAN may return a key twice: the object keeps one */
	if (n && (r = hgetall_many(sb, db, keys, n, &reps, e)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		bool lost;

		if (reps[i]->type == REDIS_REPLY_ERROR) {
			cfg_problem(sb, "SONIC_BAD_CONFIG", keys[i], "not a hash (%.*s)", 60, reps[i]->str);
			continue;
		}
		json_object_set_new(out, keys[i] + plen, hash_json_lossy(reps[i], &lost));
		if (lost && lossy)
			json_object_set_new(lossy, keys[i], json_true());
	}
out:
	free_replies(reps, n);
	for (size_t i = 0; i < n; i++)
		free((char *)keys[i]);
	free(keys);
	if (r < 0) {
		json_decref(out);
		return r;
	}
	*ret = out;
	return 0;
}

static int load_table(struct sonicb *sb, int db, const char *table, char sep, json_t **ret,
		      struct rf_err *e)
{
	return load_table_w(sb, db, table, sep, false, NULL, ret, e);
}

/* --- CONFIG_DB's shapes ----------------------------------------------------------------------- */

static void cfg_problem(struct sonicb *sb, const char *code, const char *where, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!sb->cfg_errors)
		sb->cfg_errors = json_array();
	{
		/* one problem once (a WRED profile is met at every queue that names it) */
		size_t i;
		json_t *x;

		json_array_foreach(sb->cfg_errors, i, x)
			if (!strcmp(json_string_value(json_object_get(x, "where")) ?: "", where) &&
			    !strcmp(json_string_value(json_object_get(x, "message")) ?: "", msg))
				return;
	}
	if (json_array_size(sb->cfg_errors) < 32)
		json_array_append_new(sb->cfg_errors, json_pack("{s:s,s:s,s:s}", "code", code, "where",
								 where, "message", msg));
}

/* "3", "3-4", "0,2-3": a set of indexes 0-31 as a mask; 0 when it is not one. */
static uint32_t index_set(const char *s)
{
	uint32_t mask = 0;

	while (*s) {
		char *end;
		unsigned long a, b;

		if (*s < '0' || *s > '9') /* no sign, no space */
			return 0;
		a = strtoul(s, &end, 10);
		if (end == s || a > 31)
			return 0;
		b = a;
		if (*end == '-') {
			s = end + 1;
			if (*s < '0' || *s > '9')
				return 0;
			b = strtoul(s, &end, 10);
			if (end == s || b > 31 || b < a)
				return 0;
		}
		for (unsigned long i = a; i <= b; i++)
			mask |= 1u << i;
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			return 0;
		s = end;
	}
	return mask;
}

/* Whether a key PORTS|INDEXES (of QUEUE or BUFFER_PG) covers port and index; *ret_size is how
 * many (port, index) pairs it covers. */
static bool key_covers(const char *rest, const char *port, int idx, unsigned *ret_size)
{
	const char *bar = strrchr(rest, '|');
	uint32_t set;
	unsigned nports = 0;
	bool has = false;

	*ret_size = 0;
	if (!bar || !(set = index_set(bar + 1)))
		return false;
	for (const char *p = rest; p < bar;) {
		const char *end = memchr(p, ',', (size_t)(bar - p));
		size_t len = end ? (size_t)(end - p) : (size_t)(bar - p);

		if (len == strlen(port) && !strncmp(p, port, len))
			has = true;
		nports++;
		p = end ? end + 1 : bar;
	}
	*ret_size = nports * (unsigned)__builtin_popcount(set);
	return has && idx >= 0 && idx < 32 && (set & (1u << idx));
}

/* A reference to a profile: NAME or [TABLE|NAME]; the name into name. */
static bool profile_ref(const char *v, char name[128], bool *ret_bracket)
{
	const char *bar;

	*ret_bracket = v[0] == '[';
	if (*ret_bracket) {
		size_t len = strlen(v);

		if (len < 3 || v[len - 1] != ']' || !(bar = strchr(v, '|')))
			return false;
		snprintf(name, 128, "%.*s", (int)(v + len - 1 - bar - 1), bar + 1);
	} else {
		snprintf(name, 128, "%s", v);
	}
	return name[0] != '\0';
}

/* The binding of (port, idx) in table (QUEUE, field wred_profile; BUFFER_PG, field profile):
 * the most specific key covering it.  Its key into *ret_key, the profile's name into name. */
static bool find_binding(json_t *table, const char *field, const char *port, int idx,
			 const char **ret_key, char name[128], bool *ret_bracket)
{
	const char *k, *best = NULL;
	unsigned best_size = ~0u, size;
	json_t *v;

	json_object_foreach(table, k, v) {
		if (key_covers(k, port, idx, &size) && json_is_string(json_object_get(v, field)) &&
		    size < best_size) {
			best = k;
			best_size = size;
		}
	}
	if (ret_key)
		*ret_key = best;
	if (!best)
		return false;
	return profile_ref(json_string_value(json_object_get(json_object_get(table, best), field)), name,
			   ret_bracket);
}

/* A CONFIG_DB number: an integer (bytes, percent, log2), or false with a problem noted. */
static bool cfg_int(struct sonicb *sb, json_t *hash, const char *field, const char *where,
		    int64_t *ret)
{
	const char *s = json_string_value(json_object_get(hash, field));
	char *end;
	long long v;

	if (!s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end || errno) {
		cfg_problem(sb, "SONIC_BAD_CONFIG", where, "%s: '%s' is not a number", field, s);
		return false;
	}
	*ret = v;
	return true;
}

static bool is_true(json_t *hash, const char *field)
{
	return !strcmp(json_string_value(json_object_get(hash, field)) ?: "", "true");
}

static bool marks_green(json_t *prof)
{
	const char *m = json_string_value(json_object_get(prof, "ecn")) ?: "ecn_none";

	return is_true(prof, "wred_green_enable") &&
	       (!strcmp(m, "ecn_all") || !strcmp(m, "ecn_green") || !strcmp(m, "ecn_green_yellow") ||
		!strcmp(m, "ecn_green_red"));
}

struct cfgdb {
	json_t *qos, *queue, *wred, *pg, *bprof, *pool;
	json_t *lossy; /* TABLE|KEY of hashes not read whole */
};

static void cfgdb_free(struct cfgdb *d)
{
	json_decref(d->qos);
	json_decref(d->queue);
	json_decref(d->wred);
	json_decref(d->pg);
	json_decref(d->bprof);
	json_decref(d->pool);
	json_decref(d->lossy);
	memset(d, 0, sizeof(*d));
}

/* The tables of the configuration; watch: for a change (see load_table_w). */
static int cfgdb_load_w(struct sonicb *sb, struct cfgdb *d, bool watch, struct rf_err *e)
{
	int r;

	memset(d, 0, sizeof(*d));
	d->lossy = json_object();
	if ((r = load_table_w(sb, SONIC_CONFIG_DB, "PORT_QOS_MAP", '|', watch, d->lossy, &d->qos, e)) < 0 ||
	    (r = load_table_w(sb, SONIC_CONFIG_DB, "QUEUE", '|', watch, d->lossy, &d->queue, e)) < 0 ||
	    (r = load_table_w(sb, SONIC_CONFIG_DB, "WRED_PROFILE", '|', watch, d->lossy, &d->wred, e)) < 0 ||
	    (r = load_table_w(sb, SONIC_CONFIG_DB, "BUFFER_PG", '|', watch, d->lossy, &d->pg, e)) < 0 ||
	    (r = load_table_w(sb, SONIC_CONFIG_DB, "BUFFER_PROFILE", '|', watch, d->lossy, &d->bprof, e)) < 0 ||
	    (r = load_table_w(sb, SONIC_CONFIG_DB, "BUFFER_POOL", '|', watch, d->lossy, &d->pool, e)) < 0) {
		cfgdb_free(d);
		return r;
	}
	return 0;
}

static int cfgdb_load(struct sonicb *sb, struct cfgdb *d, struct rf_err *e)
{
	return cfgdb_load_w(sb, d, false, e);
}

/* A hash the change would copy or rewrite that was not read whole: refused, naming it. */
static int refuse_lossy(struct cfgdb *d, const char *table, const char *key, struct rf_err *e)
{
	char full[600];

	snprintf(full, sizeof(full), "%s|%s", table, key);
	if (!json_object_get(d->lossy, full))
		return 0;
	return rf_err_set(e, -EOPNOTSUPP, "SONIC_UNREPRESENTABLE", full,
			  "%s has a field this agent cannot carry over (a name longer than 127, or a value "
			  "that is not UTF-8): change it by hand", full);
}

/* pfc_enable "3,4" as a mask; -1 (a problem noted) when it is not a list of priorities. */
static int pfc_mask(struct sonicb *sb, const char *port, json_t *qos)
{
	const char *s = json_string_value(json_object_get(qos, "pfc_enable"));
	uint32_t m;

	if (!s || !*s)
		return 0;
	m = index_set(s);
	if (!m || m > 0xff) {
		cfg_problem(sb, "SONIC_BAD_CONFIG", port, "PORT_QOS_MAP pfc_enable '%s' is not a list of priorities 0-7", s);
		return -1;
	}
	return (int)m;
}

/* The lossless buffer profile of a port: the profile of the PG of its lowest lossless
 * priority (the priority's PG, as SONiC's default TC_TO_PRIORITY_GROUP_MAP has it). */
static bool lossless_profile(struct cfgdb *d, const char *port, int mask, const char **ret_key,
			     char name[128], bool *ret_bracket)
{
	for (int p = 0; p < 8; p++)
		if ((mask & (1 << p)) && find_binding(d->pg, "profile", port, p, ret_key, name, ret_bracket))
			return true;
	return false;
}

static json_t *pfc_entry(struct sonicb *sb, struct cfgdb *d, const struct sport *sp)
{
	json_t *o, *prof, *pool;
	int mask = pfc_mask(sb, sp->name, json_object_get(d->qos, sp->name));
	char name[128], where[200];
	int64_t v, off;
	bool br;

	o = json_pack("{s:s,s:s}", "device", sb->host, "port", sp->report);
	if (mask >= 0)
		json_object_set_new(o, "enable", json_integer(mask));
	if (mask <= 0 || !lossless_profile(d, sp->name, mask, NULL, name, &br))
		return o;
	snprintf(where, sizeof(where), "BUFFER_PROFILE|%s", name);
	prof = json_object_get(d->bprof, name);
	if (!prof) {
		cfg_problem(sb, "SONIC_BAD_CONFIG", sp->name, "its lossless PG names buffer profile '%s', which is not there", name);
		return o;
	}
	json_object_set_new(o, "buffer_profile", json_string(name));
	if (cfg_int(sb, prof, "dynamic_th", where, &v)) {
		json_object_set_new(o, "mode", json_string("dynamic"));
		json_object_set_new(o, "alpha_shift", json_integer(v));
	} else if (cfg_int(sb, prof, "static_th", where, &v)) {
		json_object_set_new(o, "mode", json_string("static"));
		json_object_set_new(o, "xoff_bytes", json_integer(v));
		if (cfg_int(sb, prof, "xon_offset", where, &off))
			json_object_set_new(o, "xon_bytes", json_integer(v > off ? v - off : 0));
	}
	if (cfg_int(sb, prof, "xon_offset", where, &v))
		json_object_set_new(o, "xon_offset_bytes", json_integer(v));
	if (cfg_int(sb, prof, "xoff", where, &v))
		json_object_set_new(o, "headroom_bytes", json_integer(v));
	if (profile_ref(json_string_value(json_object_get(prof, "pool")) ?: "", name, &br) &&
	    (pool = json_object_get(d->pool, name)) && cfg_int(sb, pool, "size", "BUFFER_POOL", &v))
		json_object_set_new(o, "shared_bytes", json_integer(v));
	return o;
}

/* A WRED profile's fields in rocefab's names (into o). */
static void wred_values(struct sonicb *sb, json_t *prof, const char *name, json_t *o)
{
	char where[200];
	int64_t v;

	snprintf(where, sizeof(where), "WRED_PROFILE|%s", name);
	json_object_set_new(o, "enabled", json_boolean(marks_green(prof)));
	if (cfg_int(sb, prof, "green_min_threshold", where, &v))
		json_object_set_new(o, "kmin_bytes", json_integer(v));
	if (cfg_int(sb, prof, "green_max_threshold", where, &v))
		json_object_set_new(o, "kmax_bytes", json_integer(v));
	/* reported as it is (the switch marks so), and said: the tuner leaves such a port out */
	if (json_object_get(o, "kmax_bytes") &&
	    json_integer_value(json_object_get(o, "kmin_bytes")) > json_integer_value(json_object_get(o, "kmax_bytes")))
		cfg_problem(sb, "SONIC_BAD_CONFIG", where, "green_min_threshold (%" JSON_INTEGER_FORMAT
			    ") is above green_max_threshold (%" JSON_INTEGER_FORMAT ")",
			    json_integer_value(json_object_get(o, "kmin_bytes")),
			    json_integer_value(json_object_get(o, "kmax_bytes")));
	if (cfg_int(sb, prof, "green_drop_probability", where, &v))
		json_object_set_new(o, "pmax", json_real((double)v / 100.0));
}

static json_t *ecn_entry(struct sonicb *sb, struct cfgdb *d, const struct sport *sp, int q)
{
	json_t *o = json_pack("{s:s,s:s,s:i}", "device", sb->host, "port", sp->report, "queue", q), *prof;
	char name[128];
	bool br;

	if (!find_binding(d->queue, "wred_profile", sp->name, q, NULL, name, &br)) {
		json_object_set_new(o, "enabled", json_false());
		return o;
	}
	json_object_set_new(o, "wred_profile", json_string(name));
	if (!(prof = json_object_get(d->wred, name))) {
		cfg_problem(sb, "SONIC_BAD_CONFIG", sp->name, "queue %d names WRED profile '%s', which is not there", q, name);
		json_object_set_new(o, "enabled", json_false());
		return o;
	}
	wred_values(sb, prof, name, o);
	return o;
}

/* --- the backend ---------------------------------------------------------------------------- */

static int sonic_open(struct backend *b, struct rf_err *e)
{
	static const struct sonic_settings none = { .redis = "unix:/var/run/redis/redis.sock",
						    .timeout = 2 * NSEC_PER_SEC };
	const struct sonic_settings *set = b->env.settings ? b->env.settings : &none;
	struct sonicb *sb = calloc(1, sizeof(*sb));
	struct rf_err ce = { 0 };
	int r;

	if (!sb)
		return -ENOMEM;
	b->priv = sb;
	sb->db = -1;
	sb->names = set->port_names;
	sb->clock = set->clock;
	sb->timeout_ns = set->timeout > 0 ? set->timeout : 2 * NSEC_PER_SEC;
	sb->reg = b->env.reg;
	sb->all = b->env.all_counters;
	snprintf(sb->host, sizeof(sb->host), "sonic");
	if (str_copy(sb->addr, sizeof(sb->addr), set->redis ?: "") < 0)
		return rf_err_set(e, -EINVAL, "BAD_SONIC_REDIS", "sonic.redis", "longer than %zu",
				  sizeof(sb->addr) - 1);
	/* a bad address is refused now; a redis that does not answer yet is waited for */
	if ((r = rconnect(sb, &ce)) == -EINVAL) {
		*e = ce;
		return r;
	}
	return 0;
}

static void sonic_close(struct backend *b)
{
	struct sonicb *sb = b->priv;

	if (!sb)
		return;
	rdrop(sb);
	free(sb->ports);
	json_decref(sb->cfg_errors);
	free(sb);
}

static void add_err(json_t *errors, const struct rf_err *e)
{
	collect_error(errors, e->code[0] ? e->code : "SONIC_ERROR", e->where[0] ? e->where : NULL, "%s", e->msg);
}

/* Ports in SONiC's order: Ethernet4 before Ethernet12 (the number, then the name). */
static int port_cmp(const void *a, const void *b)
{
	const struct sport *x = a, *y = b;
	const char *dx = strpbrk(x->name, "0123456789"), *dy = strpbrk(y->name, "0123456789");

	if (dx && dy && dx - x->name == dy - y->name && !strncmp(x->name, y->name, (size_t)(dx - x->name))) {
		unsigned long nx = strtoul(dx, NULL, 10), ny = strtoul(dy, NULL, 10);

		if (nx != ny)
			return nx < ny ? -1 : 1;
	}
	return strcmp(x->name, y->name);
}

/* The neighbour's port as LLDP gives it: the port id when it is an interface name (subtype
 * 5) or locally assigned (7, SONiC's own: the alias), else the description, else the id. */
static const char *lldp_port(json_t *ent)
{
	const char *sub = json_string_value(json_object_get(ent, "lldp_rem_port_id_subtype")) ?: "";
	const char *id = json_string_value(json_object_get(ent, "lldp_rem_port_id"));
	const char *desc = json_string_value(json_object_get(ent, "lldp_rem_port_desc"));

	if (id && *id && (!strcmp(sub, "5") || !strcmp(sub, "7")))
		return id;
	return desc && *desc ? desc : id;
}

static int sonic_inventory(struct backend *b, struct agent_inventory *inv, json_t *errors)
{
	struct sonicb *sb = b->priv;
	json_t *ports = NULL, *meta, *v;
	struct agent_device *d;
	struct rf_err e = { 0 };
	redisReply **reps = NULL;
	const char **keys = NULL;
	struct sport *sps = NULL;
	size_t n = 0, i;
	const char *k;
	int r;

	/* the configuration's problems met since the last report (read_config has no errors of
	 * its own; the inventory runs in full reports only, not in the fast PFC lane) */
	{
		json_t *x;

		json_array_foreach(sb->cfg_errors, i, x)
			collect_error(errors, json_string_value(json_object_get(x, "code")),
				      json_string_value(json_object_get(x, "where")), "%s",
				      json_string_value(json_object_get(x, "message")));
		json_array_clear(sb->cfg_errors);
	}
	{
		static const char *const mkey[] = { "DEVICE_METADATA|localhost" };
		redisReply **mr = NULL;
		const char *h;

		if ((r = hgetall_many(sb, SONIC_CONFIG_DB, mkey, 1, &mr, &e)) < 0)
			goto fail;
		meta = hash_json(mr[0]);
		h = json_string_value(json_object_get(meta, "hostname"));
		if (h && *h && strlen(h) < sizeof(sb->host)) {
			snprintf(sb->host, sizeof(sb->host), "%s", h);
		} else {
			/* (an empty CONFIG_DB during a config reload): the name it had */
			collect_error(errors, "SONIC_NO_HOSTNAME", "DEVICE_METADATA|localhost",
				      "CONFIG_DB has no usable hostname%s; the device is called '%s'",
				      mr[0]->type == REDIS_REPLY_ERROR ? " (not a hash)" : "", sb->host);
		}
		free_replies(mr, 1);
		json_decref(meta);
	}
	if ((r = load_table(sb, SONIC_CONFIG_DB, "PORT", '|', &ports, &e)) < 0)
		goto fail;
	if (json_object_size(ports) > MAX_PORTS) {
		collect_error(errors, "SONIC_TOO_BIG", "PORT", "more than %d ports: the others are left out", MAX_PORTS);
	}
	sps = calloc(json_object_size(ports) + 1, sizeof(*sps));
	if (!sps)
		goto nomem;
	json_object_foreach(ports, k, v) {
		struct sport *sp = &sps[n];
		const char *alias = json_string_value(json_object_get(v, "alias")) ?: "";

		if (n >= MAX_PORTS)
			break;
		if (str_copy(sp->name, sizeof(sp->name), k) < 0) {
			collect_error(errors, "SONIC_BAD_PORT", k, "port name longer than 63");
			continue;
		}
		if (str_copy(sp->alias, sizeof(sp->alias), alias) < 0)
			sp->alias[0] = '\0'; /* too long to be a name in reports */
		if (sb->names == SONIC_PORT_ALIAS && !sp->alias[0])
			collect_error(errors, "SONIC_NO_ALIAS", k, "no usable alias in CONFIG_DB: reported by its name");
		str_copy(sp->report, sizeof(sp->report),
			 sb->names == SONIC_PORT_ALIAS && sp->alias[0] ? sp->alias : sp->name);
		n++;
	}
	qsort(sps, n, sizeof(*sps), port_cmp);
	/* two ports reported under one name (a duplicate alias): the second by its SONiC name */
	for (i = 1; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(sps[i].report, sps[j].report)) {
				collect_error(errors, "SONIC_DUPLICATE_ALIAS", sps[i].name,
					      "alias '%s' is %s's too: reported as %s", sps[i].alias, sps[j].name,
					      sps[i].name);
				snprintf(sps[i].report, sizeof(sps[i].report), "%s", sps[i].name);
				break;
			}
	/* APPL_DB: the ports' state and their LLDP neighbours */
	keys = calloc(2 * n + 1, sizeof(*keys));
	if (!keys)
		goto nomem;
	for (i = 0; i < n; i++) {
		char *a = NULL, *l = NULL;

		if (asprintf(&a, "PORT_TABLE:%s", sps[i].name) < 0 || asprintf(&l, "LLDP_ENTRY_TABLE:%s", sps[i].name) < 0) {
			free(a);
			goto nomem;
		}
		keys[2 * i] = a;
		keys[2 * i + 1] = l;
	}
	if (n && (r = hgetall_many(sb, SONIC_APPL_DB, keys, 2 * n, &reps, &e)) < 0)
		goto fail;
	inventory_clear(inv);
	if (!(d = inventory_add_device(inv)))
		goto nomem;
	str_copy(d->name, sizeof(d->name), sb->host);
	str_copy(d->kind, sizeof(d->kind), "switch");
	str_copy(d->driver, sizeof(d->driver), "sonic");
	for (i = 0; i < n; i++) {
		json_t *cfg = json_object_get(ports, sps[i].name), *st = hash_json(reps[2 * i]);
		json_t *nb = hash_json(reps[2 * i + 1]);
		struct agent_port *p = inventory_add_port(d);
		const char *oper = json_string_value(json_object_get(st, "oper_status"));
		const char *sys = json_string_value(json_object_get(nb, "lldp_rem_sys_name"));
		int64_t x;

		if (!p) {
			json_decref(st);
			json_decref(nb);
			goto nomem;
		}
		str_copy(p->port, sizeof(p->port), sps[i].report);
		str_copy(p->netdev, sizeof(p->netdev), sps[i].name);
		str_copy(p->state, sizeof(p->state),
			 oper && (!strcmp(oper, "up") || !strcmp(oper, "down")) ? oper : "unknown");
		/* what is none of those is said, not taken as unknown in silence */
		if (oper && strcmp(oper, "up") && strcmp(oper, "down")) {
			char key[160];

			snprintf(key, sizeof(key), "PORT_TABLE:%s", sps[i].name);
			cfg_problem(sb, "SONIC_BAD_CONFIG", key, "oper_status: '%.40s' is neither up nor down", oper);
		}
		str_copy(p->link_layer, sizeof(p->link_layer), "ethernet");
		p->speed_mbps = p->mtu = -1;
		if (cfg_int(sb, cfg, "speed", sps[i].name, &x)) {
			if (x > 0 && x <= PORT_MAX_SPEED_MBPS)
				p->speed_mbps = x;
			else
				cfg_problem(sb, "SONIC_BAD_CONFIG", sps[i].name,
					    "speed: %" PRId64 " Mb/s is out of range", x);
		}
		if (cfg_int(sb, cfg, "mtu", sps[i].name, &x)) {
			if (x > 0 && x <= PORT_MAX_MTU)
				p->mtu = x;
			else
				cfg_problem(sb, "SONIC_BAD_CONFIG", sps[i].name, "mtu: %" PRId64 " is out of range", x);
		}
		if (sys && *sys && lldp_port(nb)) {
			str_copy(p->peer_system, sizeof(p->peer_system), sys);
			str_copy(p->peer_port, sizeof(p->peer_port), lldp_port(nb));
		}
		json_decref(st);
		json_decref(nb);
	}
	free(sb->ports);
	sb->ports = sps;
	sb->nports = n;
	free_replies(reps, 2 * n);
	for (i = 0; keys && i < 2 * n; i++)
		free((char *)keys[i]);
	free(keys);
	json_decref(ports);
	return 0;
nomem:
	e.err = -ENOMEM;
	rf_err_set(&e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
fail:
	add_err(errors, &e);
	free(sps);
	free_replies(reps, 2 * n);
	for (i = 0; keys && i < 2 * n; i++)
		free((char *)keys[i]);
	free(keys);
	json_decref(ports);
	return e.err ? e.err : -EIO;
}

/* --- counters -------------------------------------------------------------------------------- */

/* The objects of one port in COUNTERS_DB. */
struct pobj {
	char port[64];
	char queue[NQUEUES][40];
	char pg[NQUEUES][40];
};

/* Fills objs from a name map (PORT:INDEX -> oid) reply; kind 'q' or 'g'. */
static void map_objects(const redisReply *rep, struct hmap *by_port, char kind,
			const redisReply *types)
{
	struct hmap unicast;

	hmap_init(&unicast);
	/* SAI_QUEUE_TYPE_MULTICAST queues are not read: they carry no RoCE */
	for (size_t i = 0; types && types->type == REDIS_REPLY_ARRAY && i + 1 < types->elements; i += 2) {
		const redisReply *o = types->element[i], *t = types->element[i + 1];

		if (o->type == REDIS_REPLY_STRING && t->type == REDIS_REPLY_STRING &&
		    strstr(t->str, "MULTICAST"))
			hmap_put(&unicast, o->str, (void *)1, NULL);
	}
	for (size_t i = 0; rep && rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
		const redisReply *nm = rep->element[i], *oid = rep->element[i + 1];
		char name[80], *colon;
		struct pobj *o;
		unsigned long idx;
		char *end;

		if (nm->type != REDIS_REPLY_STRING || oid->type != REDIS_REPLY_STRING ||
		    nm->len >= sizeof(name) || oid->len >= sizeof(o->queue[0]))
			continue;
		memcpy(name, nm->str, nm->len);
		name[nm->len] = '\0';
		if (!(colon = strrchr(name, ':')))
			continue;
		*colon = '\0';
		idx = strtoul(colon + 1, &end, 10);
		if (*end || end == colon + 1 || idx >= NQUEUES || !(o = hmap_get(by_port, name)))
			continue;
		if (hmap_get(&unicast, oid->str))
			continue;
		snprintf(kind == 'q' ? o->queue[idx] : o->pg[idx], sizeof(o->queue[0]), "%s", oid->str);
	}
	hmap_fini(&unicast);
}

/* A sample's values from one hash: the fields the registry knows (all with all_counters),
 * under FIELD (index < 0) or FIELD@INDEX. */
static json_t *values_of(struct sonicb *sb, const redisReply *rep, const char *group, int idx,
			 const char *key, json_t *errors)
{
	json_t *vals = json_object();

	for (size_t i = 0; rep && rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
		const redisReply *f = rep->element[i], *v = rep->element[i + 1];
		char name[100], val[32];
		uint64_t x;

		if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING || f->len > 80)
			continue;
		/* FIELD or FIELD@INDEX (this runs for every value: no printf) */
		memcpy(name, f->str, f->len);
		name[f->len] = '\0';
		if (idx >= 0) {
			name[f->len] = '@';
			name[f->len + 1] = (char)('0' + idx);
			name[f->len + 2] = '\0';
		}
		/* the sonic_* sources apply to any driver: one lookup */
		if (!sb->all && !reg_lookup(sb->reg, group, NULL, name))
			continue;
		memcpy(val, v->str, v->len < sizeof(val) ? v->len : sizeof(val) - 1);
		val[v->len < sizeof(val) ? v->len : sizeof(val) - 1] = '\0';
		if (!strcmp(val, "true") || !strcmp(val, "false")) {
			x = val[0] == 't';
		} else if (v->len >= sizeof(val) || str_parse_uint(val, INT64_MAX, &x) < 0) {
			char where[200];

			snprintf(where, sizeof(where), "%s %.*s", key, (int)f->len, f->str);
			collect_error(errors, "SONIC_BAD_COUNTER", where, "'%.*s' is not a counter value (a decimal number up to 2^63-1)",
				      (int)(v->len > 40 ? 40 : v->len), v->str);
			continue;
		}
		json_object_set_new(vals, name, json_integer((json_int_t)x));
	}
	return vals;
}

static void add_sample(json_t *samples, struct sonicb *sb, const char *port, const char *group,
		       int64_t t, json_t *vals)
{
	if (!json_object_size(vals)) {
		json_decref(vals);
		return;
	}
	json_array_append_new(samples, json_pack("{s:s,s:s,s:s,s:s,s:I,s:o}", "device", sb->host, "port", port,
						 "source", group, "driver", "sonic", "t_ns", (json_int_t)t,
						 "values", vals));
}

/* What one collection reads of an object: its table and the registry group of its fields. */
static const struct {
	const char *table, *group;
	char kind; /* p port, q queue, g PG */
} reads[] = {
	{ "COUNTERS", "sonic_port", 'p' },
	{ "COUNTERS", "sonic_queue", 'q' },
	{ "PERSISTENT_WATERMARKS", "sonic_queue_watermark", 'q' },
	{ "PERIODIC_WATERMARKS", "sonic_queue_periodic_watermark", 'q' },
	{ "COUNTERS", "sonic_pg", 'g' },
};

/* rocefab-sim's fabric clock in a reply of HGETALL ROCEFAB_SIM_CLOCK; 0 when none. */
static int64_t sim_clock(const redisReply *rep)
{
	for (size_t i = 0; rep && rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
		uint64_t v;

		if (rep->element[i]->type == REDIS_REPLY_STRING && !strcmp(rep->element[i]->str, "time_ns") &&
		    rep->element[i + 1]->type == REDIS_REPLY_STRING &&
		    str_parse_uint(rep->element[i + 1]->str, INT64_MAX, &v) == 0)
			return (int64_t)v;
	}
	return 0;
}

static int sonic_collect(struct backend *b, const struct agent_inventory *inv, json_t *samples,
			 json_t *errors)
{
	struct sonicb *sb = b->priv;
	static const char *const maps[] = { "COUNTERS_PORT_NAME_MAP", "COUNTERS_QUEUE_NAME_MAP",
					    "COUNTERS_QUEUE_TYPE_MAP", "COUNTERS_PG_NAME_MAP" };
	redisReply **mreps = NULL, **reps = NULL;
	struct pobj *objs = NULL;
	struct rf_err e = { 0 };
	char **keys = NULL;
	size_t nkeys = 0, i, at;
	struct hmap by_port;
	int64_t t0, t1;
	int r;

	(void)inv;
	hmap_init(&by_port);
	if ((r = hgetall_many(sb, SONIC_COUNTERS_DB, maps, 4, &mreps, &e)) < 0)
		goto fail;
	if (mreps[0]->type != REDIS_REPLY_ARRAY || !mreps[0]->elements) {
		collect_error(errors, "SONIC_NO_COUNTER_MAPS", "COUNTERS_PORT_NAME_MAP",
			      "COUNTERS_DB has no port name map: are SONiC's port counters on (counterpoll port enable)?");
		goto out;
	}
	if (mreps[1]->type != REDIS_REPLY_ARRAY || !mreps[1]->elements)
		collect_error(errors, "SONIC_NO_COUNTER_MAPS", "COUNTERS_QUEUE_NAME_MAP",
			      "no queue name map: queue counters are not reported (counterpoll queue enable)");
	if (mreps[3]->type != REDIS_REPLY_ARRAY || !mreps[3]->elements)
		collect_error(errors, "SONIC_NO_COUNTER_MAPS", "COUNTERS_PG_NAME_MAP",
			      "no priority group name map: ingress PG counters are not reported (counterpoll pg-drop enable)");
	objs = calloc(sb->nports + 1, sizeof(*objs));
	if (!objs)
		goto nomem;
	for (i = 0; i < sb->nports; i++)
		hmap_put(&by_port, sb->ports[i].name, &objs[i], NULL);
	for (size_t k = 0; mreps[0]->type == REDIS_REPLY_ARRAY && k + 1 < mreps[0]->elements; k += 2) {
		const redisReply *nm = mreps[0]->element[k], *oid = mreps[0]->element[k + 1];
		struct pobj *o;

		if (nm->type == REDIS_REPLY_STRING && oid->type == REDIS_REPLY_STRING && oid->len < sizeof(o->port) &&
		    (o = hmap_get(&by_port, nm->str)))
			snprintf(o->port, sizeof(o->port), "%s", oid->str);
	}
	map_objects(mreps[1], &by_port, 'q', mreps[2]);
	map_objects(mreps[3], &by_port, 'g', NULL);
	/* every hash of every port in one round trip */
	keys = calloc(sb->nports * (1 + 3 * NQUEUES + NQUEUES) + 3, sizeof(*keys));
	if (!keys)
		goto nomem;
	/* the simulator's clock before and after: the same when no update came in between */
	if (sb->clock == SONIC_CLOCK_SIM && (keys[nkeys] = strdup(SONIC_SIM_CLOCK)))
		nkeys++;
	for (i = 0; i < sb->nports; i++) {
		if (!objs[i].port[0]) {
			collect_error(errors, "SONIC_NO_COUNTERS", sb->ports[i].name,
				      "not in COUNTERS_PORT_NAME_MAP: no counters for this port");
			continue;
		}
		for (size_t k = 0; k < ARRAY_SIZE(reads); k++)
			for (int q = 0; q < (reads[k].kind == 'p' ? 1 : NQUEUES); q++) {
				const char *oid = reads[k].kind == 'p' ? objs[i].port
						  : reads[k].kind == 'q' ? objs[i].queue[q] : objs[i].pg[q];

				if (oid[0] && asprintf(&keys[nkeys], "%s:%s", reads[k].table, oid) >= 0)
					nkeys++;
			}
	}
	if (sb->clock == SONIC_CLOCK_SIM && (keys[nkeys] = strdup(SONIC_SIM_CLOCK)))
		nkeys++;
	for (int attempt = 0;; attempt++) {
		int64_t c0, c1;

		t0 = tu_now_ns();
		if (nkeys && (r = hgetall_many(sb, SONIC_COUNTERS_DB, (const char *const *)keys, nkeys, &reps, &e)) < 0)
			goto fail;
		t1 = tu_now_ns();
		if (sb->clock != SONIC_CLOCK_SIM)
			break;
		c0 = sim_clock(reps[0]);
		c1 = sim_clock(reps[nkeys - 1]);
		if (c0 > 0 && c0 == c1) {
			t0 = t1 = c0;
			break;
		}
		if (c0 <= 0 || c1 <= 0 || attempt == 3) {
			collect_error(errors, "SONIC_NO_SIM_CLOCK", SONIC_SIM_CLOCK,
				      "sonic.clock is sim, but COUNTERS_DB has no steady %s: the agent's clock is used",
				      SONIC_SIM_CLOCK);
			break;
		}
		free_replies(reps, nkeys);
		reps = NULL;
	}
	/* the same walk again, now with the replies */
	at = sb->clock == SONIC_CLOCK_SIM ? 1 : 0;
	for (i = 0; i < sb->nports; i++) {
		const char *report = sb->ports[i].report;

		if (!objs[i].port[0])
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(reads); k++) {
			json_t *vals = reads[k].kind == 'p' ? NULL : json_object();

			for (int q = 0; q < (reads[k].kind == 'p' ? 1 : NQUEUES); q++) {
				const char *oid = reads[k].kind == 'p' ? objs[i].port
						  : reads[k].kind == 'q' ? objs[i].queue[q] : objs[i].pg[q];
				json_t *v;

				if (!oid[0])
					continue;
				if (reads[k].kind == 'p' && reps[at]->type == REDIS_REPLY_ARRAY && !reps[at]->elements)
					collect_error(errors, "SONIC_NO_COUNTERS", sb->ports[i].name,
						      "COUNTERS:%s is empty: the port's counters vanished", oid);
				/* a key of another type (WRONGTYPE): its counters left out, said so */
				if (reps[at]->type == REDIS_REPLY_ERROR)
					collect_error(errors, "SONIC_BAD_COUNTER", sb->ports[i].name,
						      "COUNTERS:%s (the port's %s counters) could not be read: "
						      "%.*s", oid,
						      reads[k].kind == 'p'   ? "port"
						      : reads[k].kind == 'q' ? "queue"
									     : "PG",
						      (int)(reps[at]->len > 120 ? 120 : reps[at]->len),
						      reps[at]->str);
				v = values_of(sb, reps[at], reads[k].group, reads[k].kind == 'p' ? -1 : q, keys[at], errors);
				at++;
				if (!vals) {
					vals = v;
				} else {
					json_object_update(vals, v);
					json_decref(v);
				}
			}
			add_sample(samples, sb, report, reads[k].group, t0 + (t1 - t0) / 2, vals);
		}
	}
	r = 0;
	goto out;
nomem:
	rf_err_set(&e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
fail:
	add_err(errors, &e);
	r = e.err ? e.err : -EIO;
out:
	free_replies(mreps, 4);
	free_replies(reps, nkeys);
	for (i = 0; i < nkeys; i++)
		free(keys[i]);
	free(keys);
	free(objs);
	hmap_fini(&by_port);
	return r;
}

/* --- configuration ----------------------------------------------------------------------------- */

/* The ports when no inventory was taken yet (read_config first). */
static int ensure_ports(struct sonicb *sb, struct rf_err *e)
{
	struct agent_inventory inv = { 0 };
	json_t *errors;
	int r;

	if (sb->nports)
		return 0;
	errors = json_array();
	r = sonic_inventory(&(struct backend){ .priv = sb }, &inv, errors);
	if (r < 0 && json_array_size(errors))
		rf_err_set(e, r, json_string_value(json_object_get(json_array_get(errors, 0), "code")), NULL,
			   "%s", json_string_value(json_object_get(json_array_get(errors, 0), "message")));
	json_decref(errors);
	inventory_clear(&inv);
	return r;
}

static int read_config(struct sonicb *sb, json_t **ret, struct rf_err *e)
{
	struct cfgdb d;
	json_t *out;
	int r;

	*ret = NULL;
	if ((r = ensure_ports(sb, e)) < 0 || (r = cfgdb_load(sb, &d, e)) < 0)
		return r;
	out = json_pack("{s:[],s:[]}", "pfc", "ecn");
	for (size_t i = 0; i < sb->nports; i++) {
		json_array_append_new(json_object_get(out, "pfc"), pfc_entry(sb, &d, &sb->ports[i]));
		for (int q = 0; q < NQUEUES; q++)
			json_array_append_new(json_object_get(out, "ecn"), ecn_entry(sb, &d, &sb->ports[i], q));
	}
	cfgdb_free(&d);
	*ret = out;
	return 0;
}

static int sonic_read_config(struct backend *b, json_t **ret)
{
	struct sonicb *sb = b->priv;
	struct rf_err e = { 0 };
	int r = read_config(sb, ret, &e);

	if (r < 0 && e.msg[0]) /* said with the next report's errors */
		cfg_problem(sb, e.code[0] ? e.code : "SONIC_CONFIG_UNREADABLE", "CONFIG_DB", "%s", e.msg);
	return r;
}

static const struct sport *port_by_report(struct sonicb *sb, const char *name)
{
	const struct sport *found = NULL;

	for (size_t i = 0; i < sb->nports; i++)
		if (!strcmp(sb->ports[i].report, name)) {
			if (found)
				return NULL; /* ambiguous: no change */
			found = &sb->ports[i];
		}
	return found;
}

/* A transaction: commands as arrays of strings, sent between MULTI and EXEC. */
static void tx_add(json_t *tx, const char *first, ...)
{
	json_t *cmd = json_array();
	const char *s = first;
	va_list ap;

	va_start(ap, first);
	while (s) {
		json_array_append_new(cmd, json_string(s));
		s = va_arg(ap, const char *);
	}
	va_end(ap);
	json_array_append_new(tx, cmd);
}

static int tx_run(struct sonicb *sb, json_t *tx, struct rf_err *e)
{
	redisReply *rep;
	json_t *cmd;
	size_t i, n = json_array_size(tx) + 2;
	int r;

	if ((r = rselect(sb, SONIC_CONFIG_DB, e)) < 0)
		return r;
	redisAppendCommand(sb->c, "MULTI");
	json_array_foreach(tx, i, cmd) {
		const char *argv[64];
		size_t argc = json_array_size(cmd), k;

		if (argc > ARRAY_SIZE(argv))
			argc = ARRAY_SIZE(argv);
		for (k = 0; k < argc; k++)
			argv[k] = json_string_value(json_array_get(cmd, k));
		redisAppendCommandArgv(sb->c, (int)argc, argv, NULL);
	}
	redisAppendCommand(sb->c, "EXEC");
	r = 0;
	for (i = 0; i < n; i++) {
		void *p = NULL;

		if (redisGetReply(sb->c, &p) != REDIS_OK)
			return reply_err(sb, NULL, "EXEC", e);
		rep = p;
		if (!r && rep->type == REDIS_REPLY_ERROR)
			r = reply_err(sb, rep, "MULTI/EXEC", e);
		if (!r && i == n - 1) {
			if (rep->type == REDIS_REPLY_NIL)
				/* a key read was changed by someone else: read again, decide again */
				r = rf_err_set(e, -EAGAIN, "SONIC_CONFLICT", "CONFIG_DB",
					       "CONFIG_DB changed while this change was prepared");
			else if (rep->type != REDIS_REPLY_ARRAY)
				r = rf_err_set(e, -EIO, "SONIC_REDIS_ERROR", "EXEC", "the transaction was not run");
			for (size_t k = 0; !r && k < rep->elements; k++)
				if (rep->element[k]->type == REDIS_REPLY_ERROR)
					r = rf_err_set(e, -EIO, "SONIC_PARTIAL_WRITE", "CONFIG_DB",
						       "redis refused part of the change (%.*s): CONFIG_DB may be "
						       "partly written; the read-back shows what it holds",
						       (int)(rep->element[k]->len > 200 ? 200 : rep->element[k]->len),
						       rep->element[k]->str);
		}
		freeReplyObject(rep);
	}
	return r;
}

/* After a change that did not reach EXEC: the keys are no longer watched. */
static void unwatch(struct sonicb *sb, int r)
{
	redisReply *rep;

	if (r >= 0 || !sb->c)
		return;
	if ((rep = redisCommand(sb->c, "UNWATCH")))
		freeReplyObject(rep);
	else
		rdrop(sb);
}

/* Every (port, index) a profile is bound to in table, as "PORT|INDEX" keys of users. */
static void users_of(json_t *table, const char *field, const char *profile, json_t *users)
{
	const char *k;
	json_t *v;

	json_object_foreach(table, k, v) {
		char name[128];
		const char *bar = strrchr(k, '|');
		uint32_t set;
		bool br;

		if (!bar || !json_is_string(json_object_get(v, field)) ||
		    !profile_ref(json_string_value(json_object_get(v, field)), name, &br) ||
		    strcmp(name, profile) || !(set = index_set(bar + 1)))
			continue;
		for (const char *p = k; p < bar;) {
			const char *end = memchr(p, ',', (size_t)(bar - p));
			size_t len = end ? (size_t)(end - p) : (size_t)(bar - p);

			for (int i = 0; i < 32; i++)
				if (set & (1u << i)) {
					char u[200];

					snprintf(u, sizeof(u), "%.*s|%d", (int)len, p, i);
					json_object_set_new(users, u, json_true());
				}
			p = end ? end + 1 : bar;
		}
	}
}

/* Rewrites the binding key key of table (one that covers several pairs) as one key per pair,
 * into tx.  A pair that a more specific key binds (field) keeps that binding, and a pair's own
 * key keeps its own fields: only the fields it lacks come from the shared key. */
static void split_key(json_t *tx, const char *table, json_t *tbl, const char *key, const char *field)
{
	json_t *fields = json_object_get(tbl, key), *v;
	const char *bar = strrchr(key, '|'), *f;
	uint32_t set = index_set(bar + 1);
	char full[600];

	snprintf(full, sizeof(full), "%s|%s", table, key);
	tx_add(tx, "DEL", full, NULL);
	for (const char *p = key; p < bar;) {
		const char *end = memchr(p, ',', (size_t)(bar - p));
		size_t len = end ? (size_t)(end - p) : (size_t)(bar - p);
		char port[128];

		snprintf(port, sizeof(port), "%.*s", (int)len, p);
		for (int i = 0; i < 32; i++) {
			const char *governs = NULL;
			char own[200], name[128];
			json_t *mine;
			bool br;

			if (!(set & (1u << i)))
				continue;
			snprintf(own, sizeof(own), "%s|%d", port, i);
			mine = json_object_get(tbl, own);
			find_binding(tbl, field, port, i, &governs, name, &br);
			snprintf(full, sizeof(full), "%s|%s", table, own);
			json_object_foreach(fields, f, v) {
				if (json_object_get(mine, f))
					continue; /* its own value */
				if (!strcmp(f, field) && governs && strcmp(governs, key))
					continue; /* bound by another key */
				tx_add(tx, "HSET", full, f, json_string_value(v), NULL);
			}
		}
		p = end ? end + 1 : bar;
	}
}

static json_t *outcome_failed(const char *id, const struct rf_err *e, json_t *before)
{
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "outcome", "failed", "error", "code",
			      e->code[0] ? e->code : "FAILED", "message", e->msg[0] ? e->msg : "failed");

	if (e->where[0])
		json_object_set_new(json_object_get(o, "error"), "field", json_string(e->where));
	json_object_set(o, "previous", before ? before : json_null());
	return o;
}

/* The fields of a WRED profile for the change: thresholds of green, and of yellow and red
 * where they were equal to green's (the colours kept in step stay in step). */
static int ecn_fields(json_t *prof, json_t *params, json_t **ret, struct rf_err *e)
{
	static const char *const colors[] = { "green", "yellow", "red" };
	json_t *out = prof ? json_deep_copy(prof) : json_object(), *v;
	const char *gmin = json_string_value(json_object_get(out, "green_min_threshold"));
	const char *gmax = json_string_value(json_object_get(out, "green_max_threshold"));
	const char *gp = json_string_value(json_object_get(out, "green_drop_probability"));
	char smin[32] = "", smax[32] = "", sp[32] = "";
	bool same[3] = { true, false, false };

	*ret = out;
	if (!prof) { /* a new profile: every colour */
		same[1] = same[2] = true;
	} else {
		for (int c = 1; c < 3; c++) {
			char f1[64], f2[64], f3[64];

			snprintf(f1, sizeof(f1), "%s_min_threshold", colors[c]);
			snprintf(f2, sizeof(f2), "%s_max_threshold", colors[c]);
			snprintf(f3, sizeof(f3), "%s_drop_probability", colors[c]);
			same[c] = !strcmp(json_string_value(json_object_get(out, f1)) ?: "", gmin ?: "") &&
				  !strcmp(json_string_value(json_object_get(out, f2)) ?: "", gmax ?: "") &&
				  !strcmp(json_string_value(json_object_get(out, f3)) ?: "", gp ?: "");
		}
	}
	if ((v = json_object_get(params, "kmin_bytes")))
		snprintf(smin, sizeof(smin), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	if ((v = json_object_get(params, "kmax_bytes")))
		snprintf(smax, sizeof(smax), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	if ((v = json_object_get(params, "pmax"))) {
		double pct = json_number_value(v) * 100.0;

		if (!pmax_whole_percent(json_number_value(v)))
			return rf_err_set(e, -EOPNOTSUPP, "NOT_SUPPORTED", "pmax",
					  "SONiC's WRED profile takes a whole percent (green_drop_probability): "
					  "%g is %.4g %%", json_number_value(v), pct);
		snprintf(sp, sizeof(sp), "%d", (int)round(pct));
	}
	if (!prof && (!smin[0] || !smax[0] || !sp[0]))
		return rf_err_set(e, -EINVAL, "INCOMPLETE", "kmin_bytes",
				  "the queue has no WRED profile: enabling ECN on it needs kmin_bytes, "
				  "kmax_bytes and pmax");
	for (int c = 0; c < 3; c++) {
		char f[64];

		if (!same[c])
			continue;
		if (smin[0]) {
			snprintf(f, sizeof(f), "%s_min_threshold", colors[c]);
			json_object_set_new(out, f, json_string(smin));
		}
		if (smax[0]) {
			snprintf(f, sizeof(f), "%s_max_threshold", colors[c]);
			json_object_set_new(out, f, json_string(smax));
		}
		if (sp[0]) {
			snprintf(f, sizeof(f), "%s_drop_probability", colors[c]);
			json_object_set_new(out, f, json_string(sp));
		}
	}
	{
		long long mn = strtoll(json_string_value(json_object_get(out, "green_min_threshold")) ?: "0", NULL, 10);
		long long mx = strtoll(json_string_value(json_object_get(out, "green_max_threshold")) ?: "0", NULL, 10);

		if (mx < mn)
			return rf_err_set(e, -EINVAL, "BAD_THRESHOLD_ORDER", "kmax_bytes",
					  "Kmax (%lld) must not be below Kmin (%lld)", mx, mn);
	}
	v = json_object_get(params, "enabled");
	if ((v && json_is_true(v)) || (!v && !prof)) {
		json_object_set_new(out, "ecn", json_string("ecn_all"));
		for (int c = 0; c < 3; c++) {
			char f[64];

			snprintf(f, sizeof(f), "wred_%s_enable", colors[c]);
			json_object_set_new(out, f, json_string("true"));
		}
	} else if (v) {
		/* not marking, and not dropping either: the queue is lossless */
		json_object_set_new(out, "ecn", json_string("ecn_none"));
		for (int c = 0; c < 3; c++) {
			char f[64];

			snprintf(f, sizeof(f), "wred_%s_enable", colors[c]);
			json_object_set_new(out, f, json_string("false"));
		}
	}
	return 0;
}

/* Writes a profile into tx: fields that changed from old (NULL: a new profile) are set and
 * the ones that went are deleted, so that SONiC sees an update of the object, never its
 * removal while queues use it. */
static void tx_profile(json_t *tx, const char *table, const char *name, json_t *fields, json_t *old)
{
	char key[300];
	const char *f;
	json_t *v;

	snprintf(key, sizeof(key), "%s|%s", table, name);
	json_object_foreach(fields, f, v)
		if (!old || !json_equal(json_object_get(old, f), v))
			tx_add(tx, "HSET", key, f, json_string_value(v), NULL);
	json_object_foreach(old, f, v)
		if (!json_object_get(fields, f))
			tx_add(tx, "HDEL", key, f, NULL);
}

/* The name of a copy of profile for one user: PROFILE_SUFFIX, with _2, _3... when that is
 * taken (the name is cut to fit; SONiC's names have no length limit, ours 127). */
static bool name_for(json_t *profiles, const char *profile, const char *suffix, char out[128])
{
	char tail[112];
	int n = snprintf(tail, sizeof(tail), "_%s", suffix);

	if (n < 0 || (size_t)n >= sizeof(tail))
		tail[sizeof(tail) - 1] = '\0';
	snprintf(out, 128, "%.*s%s", (int)(127 - strlen(tail)), profile, tail);
	for (int i = 2; json_object_get(profiles, out); i++) {
		char num[16];

		if (i == 1000)
			return false;
		snprintf(num, sizeof(num), "_%d", i);
		snprintf(out, 128, "%.*s%s%s", (int)(127 - strlen(tail) - strlen(num)), profile, tail, num);
	}
	return true;
}

static int apply_ecn(struct sonicb *sb, const struct sport *sp, int q, json_t *params,
		     json_t **ret_extra, struct rf_err *e)
{
	json_t *tx = json_array(), *fields = NULL, *users = json_object(), *prof;
	const char *bkey = NULL;
	char profile[128] = "", name[128], suffix[100], qkey[200];
	bool bound, br = false, clone = false;
	struct cfgdb d;
	int r;

	*ret_extra = NULL;
	if ((r = cfgdb_load_w(sb, &d, true, e)) < 0)
		goto out;
	bound = find_binding(d.queue, "wred_profile", sp->name, q, &bkey, profile, &br);
	prof = bound ? json_object_get(d.wred, profile) : NULL;
	if (bound && !prof) {
		r = rf_err_set(e, -EINVAL, "SONIC_BAD_CONFIG", "wred_profile",
			       "queue %d of %s names WRED profile '%s', which is not there", q, sp->name, profile);
		goto out;
	}
	if (!bound && json_is_false(json_object_get(params, "enabled")))
		goto out; /* not marking already, nothing to write */
	if ((r = ecn_fields(prof, params, &fields, e)) < 0)
		goto out;
	snprintf(suffix, sizeof(suffix), "%s_q%d", sp->name, q);
	snprintf(qkey, sizeof(qkey), "%s|%d", sp->name, q);
	if (bound) {
		users_of(d.queue, "wred_profile", profile, users);
		clone = !(json_object_size(users) == 1 && json_object_get(users, qkey));
		if (!clone)
			snprintf(name, sizeof(name), "%s", profile);
	}
	if ((bound && clone && !name_for(d.wred, profile, suffix, name)) ||
	    (!bound && !name_for(d.wred, "ROCEFAB", suffix, name))) {
		r = rf_err_set(e, -EEXIST, "SONIC_NAME_TAKEN", "wred_profile",
			       "no free name for a WRED profile of %s queue %d", sp->name, q);
		goto out;
	}
	/* copied (or edited) hashes must have been read whole */
	if ((r = refuse_lossy(&d, "WRED_PROFILE", profile, e)) < 0)
		goto out;
	tx_profile(tx, "WRED_PROFILE", name, fields, clone || !bound ? NULL : prof);
	if (strcmp(name, profile)) {
		char ref[200], full[300];
		unsigned size = 1;

		if (bkey)
			key_covers(bkey, sp->name, q, &size);
		if (bkey && size > 1 && (r = refuse_lossy(&d, "QUEUE", bkey, e)) < 0)
			goto out;
		if (bkey && size > 1)
			split_key(tx, "QUEUE", d.queue, bkey, "wred_profile");
		snprintf(ref, sizeof(ref), br ? "[WRED_PROFILE|%s]" : "%s", name);
		snprintf(full, sizeof(full), "QUEUE|%s", qkey);
		tx_add(tx, "HSET", full, "wred_profile", ref, NULL);
	}
	if ((r = tx_run(sb, tx, e)) < 0)
		goto out;
	if (clone)
		*ret_extra = json_pack("{s:s}", "wred_profile_cloned_from", profile);
out:
	unwatch(sb, r);
	cfgdb_free(&d);
	json_decref(tx);
	json_decref(fields);
	json_decref(users);
	return r;
}

static int apply_pfc(struct sonicb *sb, const struct sport *sp, json_t *params,
		     json_t **ret_extra, struct rf_err *e)
{
	json_t *tx = json_array(), *users = json_object(), *fields = NULL, *v;
	const char *bkey = NULL;
	char profile[128], name[128], full[300];
	bool br = false, clone = false;
	struct cfgdb d;
	int mask, r;

	*ret_extra = NULL;
	if ((r = cfgdb_load_w(sb, &d, true, e)) < 0)
		goto out;
	mask = pfc_mask(sb, sp->name, json_object_get(d.qos, sp->name));
	if ((v = json_object_get(params, "enable"))) {
		char list[32] = "";
		size_t len = 0;

		mask = (int)json_integer_value(v);
		for (int p = 0; p < 8; p++)
			if (mask & (1 << p))
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", p);
		snprintf(full, sizeof(full), "PORT_QOS_MAP|%s", sp->name);
		tx_add(tx, "HSET", full, "pfc_enable", list, NULL);
	}
	if (json_object_get(params, "alpha_shift") || json_object_get(params, "xoff_bytes") ||
	    json_object_get(params, "xon_bytes")) {
		json_t *prof;
		char ref[200], qkey[200], val[32];
		int64_t xoff = -1;

		if (mask <= 0 || !lossless_profile(&d, sp->name, mask, &bkey, profile, &br)) {
			r = rf_err_set(e, -EOPNOTSUPP, "NOT_SUPPORTED", "xoff_bytes",
				       "%s has no lossless priority group (BUFFER_PG of a PFC priority) whose "
				       "buffer profile could take thresholds", sp->name);
			goto out;
		}
		if (!(prof = json_object_get(d.bprof, profile))) {
			r = rf_err_set(e, -EINVAL, "SONIC_BAD_CONFIG", "profile",
				       "BUFFER_PG of %s names buffer profile '%s', which is not there", sp->name, profile);
			goto out;
		}
		fields = json_deep_copy(prof);
		if ((v = json_object_get(params, "alpha_shift"))) {
			snprintf(val, sizeof(val), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			json_object_set_new(fields, "dynamic_th", json_string(val));
			json_object_del(fields, "static_th");
		}
		if ((v = json_object_get(params, "xoff_bytes"))) {
			xoff = json_integer_value(v);
			snprintf(val, sizeof(val), "%" PRId64, xoff);
			json_object_set_new(fields, "static_th", json_string(val));
			json_object_del(fields, "dynamic_th");
		} else if ((v = json_object_get(params, "xon_bytes"))) {
			const char *s = json_string_value(json_object_get(fields, "static_th"));

			if (!s) {
				r = rf_err_set(e, -EOPNOTSUPP, "NOT_SUPPORTED", "xon_bytes",
					       "buffer profile '%s' has a dynamic threshold: XON is set with a "
					       "static XOFF (xoff_bytes)", profile);
				goto out;
			}
			xoff = strtoll(s, NULL, 10);
		}
		if ((v = json_object_get(params, "xon_bytes"))) {
			if (json_integer_value(v) >= xoff) {
				r = rf_err_set(e, -EINVAL, "BAD_THRESHOLD_ORDER", "xon_bytes",
					       "XON (%" JSON_INTEGER_FORMAT ") must be below XOFF (%" PRId64 ")",
					       json_integer_value(v), xoff);
				goto out;
			}
			snprintf(val, sizeof(val), "%" PRId64, xoff - (int64_t)json_integer_value(v));
			json_object_set_new(fields, "xon_offset", json_string(val));
		}
		/* the port's PGs are one user: the profile is its own when only they use it */
		users_of(d.pg, "profile", profile, users);
		{
			json_t *mine = json_object(), *x;
			const char *u;
			void *tmp;

			json_object_foreach_safe(users, tmp, u, x) {
				size_t len = strlen(sp->name);

				if (!strncmp(u, sp->name, len) && u[len] == '|')
					json_object_set_new(mine, u, json_true());
			}
			clone = json_object_size(mine) != json_object_size(users);
			json_decref(mine);
		}
		if (clone && !name_for(d.bprof, profile, sp->name, name)) {
			r = rf_err_set(e, -EEXIST, "SONIC_NAME_TAKEN", "profile",
				       "no free name for a buffer profile of %s", sp->name);
			goto out;
		}
		if (!clone)
			snprintf(name, sizeof(name), "%s", profile);
		if ((r = refuse_lossy(&d, "BUFFER_PROFILE", profile, e)) < 0)
			goto out;
		tx_profile(tx, "BUFFER_PROFILE", name, fields, clone ? NULL : prof);
		if (clone) {
			/* rebind this port's lossless PGs that used the profile */
			json_t *split = json_object();

			snprintf(ref, sizeof(ref), br ? "[BUFFER_PROFILE|%s]" : "%s", name);
			for (int p = 0; p < 8; p++) {
				const char *k = NULL;
				char pn[128];
				unsigned size;
				bool b2;

				if (!find_binding(d.pg, "profile", sp->name, p, &k, pn, &b2) || strcmp(pn, profile))
					continue;
				key_covers(k, sp->name, p, &size);
				if (size > 1 && !json_object_get(split, k)) { /* split once */
					if ((r = refuse_lossy(&d, "BUFFER_PG", k, e)) < 0) {
						json_decref(split);
						goto out;
					}
					split_key(tx, "BUFFER_PG", d.pg, k, "profile");
					json_object_set_new(split, k, json_true());
				}
				snprintf(qkey, sizeof(qkey), "BUFFER_PG|%s|%d", sp->name, p);
				tx_add(tx, "HSET", qkey, "profile", ref, NULL);
			}
			json_decref(split);
			*ret_extra = json_pack("{s:s}", "buffer_profile_cloned_from", profile);
		}
	}
	r = tx_run(sb, tx, e);
	if (r < 0) {
		json_decref(*ret_extra);
		*ret_extra = NULL;
	}
out:
	unwatch(sb, r);
	cfgdb_free(&d);
	json_decref(tx);
	json_decref(users);
	json_decref(fields);
	return r;
}

static int sonic_apply(struct backend *b, json_t *command, json_t **ret_outcome)
{
	struct sonicb *sb = b->priv;
	const char *id = json_string_value(json_object_get(command, "id")) ?: "";
	const char *kind = json_string_value(json_object_get(command, "kind")) ?: "";
	json_t *params = json_object_get(command, "params"), *before = NULL, *after = NULL;
	json_t *extra = NULL, *cur = NULL, *now;
	const char *port = json_string_value(json_object_get(params, "port"));
	const struct sport *sp;
	struct rf_err e = { 0 };
	int q = -1, r;

	if ((r = read_config(sb, &before, &e)) < 0)
		goto fail;
	if (!strcmp(kind, "set_dcqcn")) {
		rf_err_set(&e, -EINVAL, "NOT_A_HOST", NULL, "%s is a switch: DCQCN runs on NICs", sb->host);
		goto fail;
	}
	if (strcmp(kind, "set_ecn") && strcmp(kind, "set_pfc")) {
		rf_err_set(&e, -EOPNOTSUPP, "NOT_SUPPORTED", "/kind", "the sonic backend does not apply %s", kind);
		goto fail;
	}
	if (!port || !(sp = port_by_report(sb, port))) {
		rf_err_set(&e, -ENOENT, "UNKNOWN_PORT", "/params/port", "%s has no port '%s'", sb->host,
			   port ? port : "");
		goto fail;
	}
	if (!strcmp(kind, "set_ecn")) {
		q = (int)json_integer_value(json_object_get(params, "queue"));
		if (q < 0 || q >= NQUEUES) {
			rf_err_set(&e, -EINVAL, "BAD_VALUE", "/params/queue", "queues are 0-7");
			goto fail;
		}
		cur = config_entry(json_object_get(before, "ecn"), sp->report, q);
	} else {
		cur = config_entry(json_object_get(before, "pfc"), sp->report, -1);
	}
	/* a change by someone else in between: read again and decide again, a few times */
	for (int attempt = 0; attempt < 4; attempt++) {
		memset(&e, 0, sizeof(e));
		r = q >= 0 ? apply_ecn(sb, sp, q, params, &extra, &e) : apply_pfc(sb, sp, params, &extra, &e);
		if (r != -EAGAIN)
			break;
	}
	if (r < 0)
		goto fail;
	/* read back */
	if ((r = read_config(sb, &after, &e)) < 0) {
		json_decref(extra);
		rf_err_set(&e, r, e.code[0] ? e.code : "SONIC_UNREACHABLE", NULL,
			   "written, but the configuration cannot be read back: %s", e.msg);
		goto fail;
	}
	now = json_deep_copy(config_entry(json_object_get(after, q >= 0 ? "ecn" : "pfc"), sp->report, q));
	if (now && extra)
		json_object_update(now, extra);
	json_decref(extra);
	*ret_outcome = json_pack("{s:s,s:s,s:O,s:o}", "id", id, "outcome", "applied", "previous",
				 cur ? cur : json_null(), "values", now ? now : json_null());
	json_decref(before);
	json_decref(after);
	return 0;
fail:
	*ret_outcome = outcome_failed(id, &e, cur);
	json_decref(before);
	json_decref(after);
	return 0;
}

static int sonic_is_switch(struct backend *b)
{
	(void)b;
	return 1;
}

/* The switch's host name from CONFIG_DB, when the redis answers. */
static int sonic_default_id(const void *settings, char id[65], struct rf_err *e)
{
	const struct sonic_settings *set = settings;
	redisContext *c = NULL;
	redisReply *rep;
	int r;

	if ((r = sonic_redis_connect(set && set->redis ? set->redis : "unix:/var/run/redis/redis.sock",
				     set && set->timeout > 0 ? set->timeout : 2 * NSEC_PER_SEC, &c, e)) < 0) {
		if (r == -EHOSTUNREACH)
			snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg),
				 "; set agent.id, or start the agent once the switch's redis answers");
		return r;
	}
	rep = redisCommand(c, "SELECT %d", SONIC_CONFIG_DB);
	if (rep)
		freeReplyObject(rep);
	rep = rep ? redisCommand(c, "HGET DEVICE_METADATA|localhost hostname") : NULL;
	r = -ENOENT;
	if (rep && rep->type == REDIS_REPLY_STRING && rep->len && rep->len < 65) {
		memcpy(id, rep->str, rep->len);
		id[rep->len] = '\0';
		r = 0;
	}
	if (rep)
		freeReplyObject(rep);
	redisFree(c);
	return r;
}

const struct backend_ops backend_sonic_ops = {
	.name = "sonic",
	.summary = "a SONiC switch through its redis (COUNTERS_DB, CONFIG_DB, APPL_DB)",
	.default_id = sonic_default_id,
	.is_switch = sonic_is_switch,
	.open = sonic_open,
	.close = sonic_close,
	.inventory = sonic_inventory,
	.collect = sonic_collect,
	.read_config = sonic_read_config,
	.apply = sonic_apply,
};
