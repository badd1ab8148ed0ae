/* Switches, links and topology: see topo.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/changes.h"
#include "daemon/topo.h"
#include "lib/hmap.h"
#include "lib/timeutil.h"
#include "lib/validate.h"

#define SWITCH_SQL                                                                                 \
	"SELECT a.id, a.hostname, a.version, a.last_seen_ns, a.interval_ms, a.devices, a.ports, " \
	"a.ports_up, a.backend FROM agents a WHERE a.role = 'switch'"

static json_t *switch_row(sqlite3_stmt *st, const void *ctx)
{
	const struct views_opts *o = ctx;

	return json_pack("{s:o,s:o,s:o,s:s,s:o,s:I,s:I,s:o}", "id", store_col_text(st, 0), "hostname",
			 store_col_text(st, 1), "agent_version", store_col_text(st, 2), "status",
			 views_agent_status(o, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4)),
			 "last_seen", store_time_json(sqlite3_column_int64(st, 3)), "ports",
			 (json_int_t)sqlite3_column_int64(st, 6), "ports_up",
			 (json_int_t)sqlite3_column_int64(st, 7), "backend", store_col_text(st, 8));
}

int views_switches(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		   struct rf_err *e)
{
	return store_list(store_reader_stmt(rd, SWITCH_SQL " ORDER BY a.id"), switch_row, o, ret, e);
}

int views_switch(struct store_reader *rd, const struct views_opts *o, const char *id,
		 json_t **ret, struct rf_err *e)
{
	static const char ports_sql[] =
		"SELECT key, device, port, state, speed_mbps, peer_system, peer_port FROM ports "
		"WHERE agent_id = ? AND present ORDER BY device COLLATE natsort, port COLLATE natsort";
	sqlite3_stmt *st = store_reader_stmt(rd, SWITCH_SQL " AND a.id = ?");
	json_t *sw = NULL, *ports, *pfc = NULL, *ecn = NULL;
	bool stale;
	int rc;

	if (st)
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if ((rc = store_one(st, switch_row, o, &sw, e)) == -ENOENT)
		return rf_err_set(e, -ENOENT, "UNKNOWN_SWITCH", NULL, "no switch '%s'", id);
	if (rc < 0)
		return rc;
	if (configs_get(rd, id, CHANGE_PFC, NULL, NULL, -2, &pfc, e) < 0 ||
	    configs_get(rd, id, CHANGE_ECN, NULL, NULL, -2, &ecn, e) < 0) {
		json_decref(sw);
		json_decref(pfc);
		return -EIO;
	}
	/* its agent silent: the ports' states are as it last reported them */
	stale = strcmp(json_string_value(json_object_get(sw, "status")) ?: "", "ok") != 0;
	ports = json_array();
	if (!(st = store_reader_stmt(rd, ports_sql))) {
		json_decref(sw);
		return -ENOMEM;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *pname = (const char *)sqlite3_column_text(st, 2);
		json_t *p = json_pack("{s:o,s:o,s:o,s:o,s:b}", "id", store_col_text(st, 0), "device",
				      store_col_text(st, 1), "port", store_col_text(st, 2), "state",
				      store_col_text(st, 3), "stale", stale);
		json_t *q = json_array(), *it;
		size_t i;

		json_object_set_new(p, "speed_mbps", sqlite3_column_type(st, 4) == SQLITE_NULL
							     ? json_null()
							     : json_integer(sqlite3_column_int64(st, 4)));
		json_object_set_new(p, "peer", sqlite3_column_type(st, 5) == SQLITE_NULL
						       ? json_null()
						       : json_pack("{s:o,s:o}", "system", store_col_text(st, 5),
								   "port", store_col_text(st, 6)));
		json_array_foreach(pfc, i, it)
			if (!strcmp(json_string_value(json_object_get(it, "port")) ?: "", pname)) {
				const char *from;
				int64_t xoff = validate_port_xoff(json_object_get(it, "values"), &from);
				json_t *thr;

				json_object_set(p, "pfc", json_object_get(it, "values"));
				/* what Kmax is checked against */
				if (xoff > 0 && (thr = json_pack("{s:I,s:s}", "bytes", (json_int_t)xoff, "from", from)))
					json_object_set_new(p, "xoff_threshold", thr);
			}
		json_array_foreach(ecn, i, it)
			if (!strcmp(json_string_value(json_object_get(it, "port")) ?: "", pname)) {
				json_t *v = json_deep_copy(json_object_get(it, "values"));

				json_object_set(v, "queue", json_object_get(it, "queue"));
				json_array_append_new(q, v);
			}
		json_object_set_new(p, "ecn", q);
		json_array_append_new(ports, p);
	}
	sqlite3_reset(st);
	json_decref(pfc);
	json_decref(ecn);
	if (rc != SQLITE_DONE) {
		json_decref(sw);
		json_decref(ports);
		return store_read_failed(st, rc, e);
	}
	json_object_set_new(sw, "port_list", ports);
	*ret = sw;
	return 0;
}

/* --- links ------------------------------------------------------------------------------------- */

struct end {
	char agent[65], label[130], key[200], role[16], state[16];
	char peer_agent[65], peer_label[65];
	char netdev[65]; /* a host port's interface: what LLDP on the other side names */
	char hkey[200]; /* "agent|label", the key in the map of ends */
	char nkey[200]; /* "agent|netdev" of a host port, when no label is called that */
	int64_t speed;
	bool used;
};

/* A port as its neighbours name it: a switch port by its name, a host port as DEVICE:PORT. */
static void label_of(struct end *x, const char *device, const char *port)
{
	if (!strcmp(x->role, "switch"))
		snprintf(x->label, sizeof(x->label), "%s", port);
	else
		snprintf(x->label, sizeof(x->label), "%s:%s", device, port);
}

/* Whether name is how a neighbour names end x: its label, or a host port's interface (LLDP
 * from a switch, or another host, sees the interface name, not the RDMA device). */
static bool names_end(const struct end *x, const char *name)
{
	return !strcmp(x->label, name) || (strcmp(x->role, "switch") && x->netdev[0] && !strcmp(x->netdev, name));
}

static json_t *end_json(const struct end *x)
{
	return json_pack("{s:s,s:s,s:s,s:s}", "node", x->agent, "port", x->label, "port_id", x->key,
			 "state", x->state);
}

static int links_build(struct store_reader *rd, json_t **ret, struct rf_err *e)
{
	static const char sql[] =
		"SELECT p.agent_id, a.role, p.device, p.port, p.key, p.state, p.speed_mbps, "
		"p.peer_system, p.peer_port, p.netdev FROM ports p JOIN agents a ON a.id = p.agent_id "
		"WHERE p.present AND (p.peer_system IS NOT NULL OR (a.role = 'host' AND p.netdev IS NOT NULL "
		"AND EXISTS (SELECT 1 FROM ports q WHERE q.peer_system = p.agent_id AND q.peer_port = p.netdev))) "
		"ORDER BY p.key COLLATE natsort";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	struct end *ends = NULL;
	size_t n = 0, cap = 0;
	struct hmap by;
	json_t *links = json_array();
	int rc, r = 0;

	if (!st || !links) {
		json_decref(links);
		return -ENOMEM;
	}
	hmap_init(&by);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct end *x;

		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct end *ne = realloc(ends, nc * sizeof(*ne));

			if (!ne) {
				r = -ENOMEM;
				break;
			}
			ends = ne;
			cap = nc;
		}
		x = &ends[n++];
		memset(x, 0, sizeof(*x));
		snprintf(x->agent, sizeof(x->agent), "%s", (const char *)sqlite3_column_text(st, 0));
		snprintf(x->role, sizeof(x->role), "%s", (const char *)sqlite3_column_text(st, 1));
		label_of(x, (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3));
		snprintf(x->key, sizeof(x->key), "%s", (const char *)sqlite3_column_text(st, 4));
		snprintf(x->state, sizeof(x->state), "%s", (const char *)sqlite3_column_text(st, 5));
		x->speed = sqlite3_column_int64(st, 6);
		snprintf(x->peer_agent, sizeof(x->peer_agent), "%s", (const char *)sqlite3_column_text(st, 7) ?: "");
		snprintf(x->peer_label, sizeof(x->peer_label), "%s", (const char *)sqlite3_column_text(st, 8) ?: "");
		snprintf(x->netdev, sizeof(x->netdev), "%s", (const char *)sqlite3_column_text(st, 9) ?: "");
	}
	sqlite3_reset(st);
	if (!r && rc != SQLITE_DONE)
		r = store_read_failed(st, rc, e);
	/* ends does not move any more: its keys can go into the map */
	for (size_t i = 0; !r && i < n; i++) {
		snprintf(ends[i].hkey, sizeof(ends[i].hkey), "%s|%s", ends[i].agent, ends[i].label);
		if (hmap_put(&by, ends[i].hkey, &ends[i], NULL) < 0)
			r = -ENOMEM;
	}
	/* a host port also by its interface, unless a label is called that */
	for (size_t i = 0; !r && i < n; i++) {
		if (!strcmp(ends[i].role, "switch") || !ends[i].netdev[0])
			continue;
		snprintf(ends[i].nkey, sizeof(ends[i].nkey), "%s|%s", ends[i].agent, ends[i].netdev);
		if (!hmap_get(&by, ends[i].nkey) && hmap_put(&by, ends[i].nkey, &ends[i], NULL) < 0)
			r = -ENOMEM;
	}
	for (size_t i = 0; !r && i < n; i++) {
		struct end *a = &ends[i], *b;
		char k[200];
		json_t *l;
		bool up;

		if (a->used || !a->peer_agent[0])
			continue; /* (ends without a neighbour are there to be found by others) */
		a->used = true;
		snprintf(k, sizeof(k), "%s|%s", a->peer_agent, a->peer_label);
		b = hmap_get(&by, k);
		/* the neighbour names someone else: show a's side only.  A host port that names no
		 * one (a host without LLDP) is taken at its switch's word, and only a switch's */
		if (b && (b->used ||
			  (b->peer_agent[0] ? strcmp(b->peer_agent, a->agent) || !names_end(a, b->peer_label)
					    : strcmp(a->role, "switch"))))
			b = NULL;
		if (b)
			b->used = true;
		up = !strcmp(a->state, "up") && (!b || !strcmp(b->state, "up"));
		/* order the ends: the switch (or the smaller name) first */
		if (b && (strcmp(a->role, b->role) < 0 ||
			  (!strcmp(a->role, b->role) && strcmp(a->key, b->key) > 0))) {
			struct end *t = a;

			a = b;
			b = t;
		}
		l = json_pack("{s:s,s:o,s:o,s:s,s:o}", "id", "", "a", end_json(a), "b",
			      b ? end_json(b) : json_pack("{s:s,s:s,s:n,s:s}", "node", a->peer_agent,
							   "port", a->peer_label, "port_id", "state", "unknown"),
			      "state", up ? "up" : "down", "speed_mbps",
			      a->speed > 0 ? json_integer(a->speed) : json_null());
		{
			char id[300];

			snprintf(id, sizeof(id), "%s/%s~%s/%s",
				 json_string_value(json_object_get(json_object_get(l, "a"), "node")),
				 json_string_value(json_object_get(json_object_get(l, "a"), "port")),
				 json_string_value(json_object_get(json_object_get(l, "b"), "node")),
				 json_string_value(json_object_get(json_object_get(l, "b"), "port")));
			json_object_set_new(l, "id", json_string(id));
		}
		json_array_append_new(links, l);
	}
	hmap_fini(&by);
	free(ends);
	if (r < 0) {
		json_decref(links);
		return r;
	}
	*ret = links;
	return 0;
}

int topo_links(struct store_reader *rd, json_t **ret, struct rf_err *e)
{
	return links_build(rd, ret, e);
}

/* The agents as nodes: id, role, status, ports and ports up. */
static int nodes_of(struct store_reader *rd, const struct views_opts *o, json_t **ret, struct rf_err *e)
{
	static const char sql[] = "SELECT id, role, last_seen_ns, interval_ms, ports, ports_up "
				  "FROM agents ORDER BY role DESC, id";
	sqlite3_stmt *st = store_reader_stmt(rd, sql);
	json_t *nodes = json_array();
	int rc;

	if (!st || !nodes) {
		json_decref(nodes);
		return -ENOMEM;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(nodes, json_pack("{s:o,s:o,s:s,s:I,s:I}", "id", store_col_text(st, 0),
						       "role", store_col_text(st, 1), "status",
						       views_agent_status(o, sqlite3_column_int64(st, 2),
								 sqlite3_column_int64(st, 3)),
						       "ports", (json_int_t)sqlite3_column_int64(st, 4),
						       "ports_up", (json_int_t)sqlite3_column_int64(st, 5)));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(nodes);
		return store_read_failed(st, rc, e);
	}
	*ret = nodes;
	return 0;
}

/* Each link stale when the node at either end is: its state is as that agent last reported
 * it (before, a silent agent's links read up). */
static void mark_stale(json_t *links, const json_t *nodes)
{
	json_t *stale = json_object(), *l, *n;
	size_t i;

	json_array_foreach(nodes, i, n)
		if (strcmp(json_string_value(json_object_get(n, "status")) ?: "", "ok"))
			json_object_set_new(stale, json_string_value(json_object_get(n, "id")) ?: "", json_true());
	json_array_foreach(links, i, l) {
		const char *a = json_string_value(json_object_get(json_object_get(l, "a"), "node")) ?: "";
		const char *b = json_string_value(json_object_get(json_object_get(l, "b"), "node")) ?: "";

		json_object_set_new(l, "stale", json_boolean(json_object_get(stale, a) || json_object_get(stale, b)));
	}
	json_decref(stale);
}

int views_links(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		struct rf_err *e)
{
	json_t *links, *nodes;
	size_t up = 0, i;
	json_t *l;
	int r;

	if ((r = links_build(rd, &links, e)) < 0)
		return r;
	if ((r = nodes_of(rd, o, &nodes, e)) < 0) {
		json_decref(links);
		return r;
	}
	mark_stale(links, nodes);
	json_decref(nodes);
	json_array_foreach(links, i, l)
		/* (a stale one is up only as last reported) */
		up += !strcmp(json_string_value(json_object_get(l, "state")), "up") &&
		      !json_is_true(json_object_get(l, "stale"));
	*ret = json_pack("{s:o,s:I,s:I}", "items", links, "count", (json_int_t)json_array_size(links),
			 "up", (json_int_t)up);
	return *ret ? 0 : -ENOMEM;
}

int views_topology(struct store_reader *rd, const struct views_opts *o, json_t **ret,
		   struct rf_err *e)
{
	json_t *nodes, *links;
	int r;

	if ((r = nodes_of(rd, o, &nodes, e)) < 0)
		return r;
	if ((r = links_build(rd, &links, e)) < 0) {
		json_decref(nodes);
		return r;
	}
	mark_stale(links, nodes);
	*ret = json_pack("{s:o,s:o}", "nodes", nodes, "links", links);
	return *ret ? 0 : -ENOMEM;
}

int views_agent_role(struct store_reader *rd, const char *id, const char **ret)
{
	sqlite3_stmt *st = store_reader_stmt(rd, "SELECT role FROM agents WHERE id = ?");
	int rc;

	if (!st)
		return -ENOMEM;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret = !strcmp((const char *)sqlite3_column_text(st, 0), "switch") ? "switch" : "host";
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
}

int views_port_speed(struct store_reader *rd, const char *agent, const char *device,
		     const char *port, int64_t *ret)
{
	sqlite3_stmt *st = store_reader_stmt(rd, "SELECT coalesce(speed_mbps, 0) FROM ports "
						 "WHERE agent_id = ?1 AND (?2 IS NULL OR device = ?2) "
						 "AND port = ?3 AND present");
	int rc;

	if (!st)
		return -ENOMEM;
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	store_bind_text_or_null(st, 2, device);
	sqlite3_bind_text(st, 3, port, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
}
