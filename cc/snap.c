/* The controllers' snapshot of one interval: see snap.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc/snap.h"
#include "lib/hmap.h"
#include "lib/vec.h"

struct cc_snap *cc_snap_new(uint8_t prios, int64_t t_us, int64_t interval_us)
{
	struct cc_snap *s;

	if (!prios)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->t_us = t_us;
	s->interval_us = interval_us;
	s->prios = prios;
	for (unsigned pr = 0; pr < CC_NPRIO; pr++)
		s->rank[pr] = (prios & (1u << pr)) ? (int8_t)s->nprios++ : -1;
	s->node_idx = calloc(1, sizeof(*s->node_idx));
	s->port_idx = calloc(1, sizeof(*s->port_idx));
	if (!s->node_idx || !s->port_idx) {
		cc_snap_free(s);
		return NULL;
	}
	hmap_init(s->node_idx);
	hmap_init(s->port_idx);
	return s;
}

void cc_snap_free(struct cc_snap *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		free((char *)s->nodes[i].name);
		free(s->nodes[i].ports);
	}
	for (uint32_t i = 0; i < s->nports; i++)
		free(s->ports[i].key);
	if (s->node_idx)
		hmap_fini(s->node_idx);
	if (s->port_idx)
		hmap_fini(s->port_idx);
	free(s->node_idx);
	free(s->port_idx);
	free(s->nodes);
	free(s->ports);
	free(s->prbuf);
	free(s);
}

int cc_snap_node(struct cc_snap *s, const char *name, enum cc_node_kind kind)
{
	void *hit = hmap_get(s->node_idx, name);
	struct cc_node *n;
	char *copy;

	if (hit) {
		uint32_t i = (uint32_t)((uintptr_t)hit - 1);

		return s->nodes[i].kind == kind ? (int)i : -EINVAL;
	}
	if (s->nnodes >= INT32_MAX || vec_room((void **)&s->nodes, &s->capnodes, s->nnodes, sizeof(*s->nodes)) < 0)
		return -ENOMEM;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	if (hmap_put(s->node_idx, copy, (void *)(uintptr_t)(s->nnodes + 1), NULL) < 0) {
		free(copy);
		return -ENOMEM;
	}
	n = &s->nodes[s->nnodes];
	*n = (struct cc_node){ .name = copy, .kind = kind };
	return (int)s->nnodes++;
}

int cc_snap_port(struct cc_snap *s, uint32_t node, const char *name)
{
	struct cc_node *n;
	struct cc_port *p;
	size_t nl, pl;
	char *key;
	void *hit;

	if (node >= s->nnodes)
		return -EINVAL;
	n = &s->nodes[node];
	nl = strlen(n->name);
	pl = strlen(name);
	key = malloc(nl + pl + 2);
	if (!key)
		return -ENOMEM;
	memcpy(key, n->name, nl);
	key[nl] = '\x1f';
	memcpy(key + nl + 1, name, pl + 1);
	hit = hmap_get(s->port_idx, key);
	if (hit) {
		free(key);
		return (int)((uintptr_t)hit - 1);
	}
	if (s->nports >= INT32_MAX || vec_room((void **)&s->ports, &s->capports, s->nports, sizeof(*s->ports)) < 0 ||
	    vec_room((void **)&n->ports, &n->capports, n->nports, sizeof(*n->ports)) < 0)
		goto nomem;
	if (s->prcap < s->capports) { /* the priorities' entries keep pace with the ports */
		struct cc_prio *pb = realloc(s->prbuf, s->capports * s->nprios * sizeof(*pb));

		if (!pb)
			goto nomem;
		s->prbuf = pb;
		s->prcap = s->capports;
	}
	if (hmap_put(s->port_idx, key, (void *)(uintptr_t)(s->nports + 1), NULL) < 0)
		goto nomem;
	memset(&s->prbuf[(size_t)s->nports * s->nprios], 0, s->nprios * sizeof(*s->prbuf));
	p = &s->ports[s->nports];
	*p = (struct cc_port){ .name = key + nl + 1, .node = node, .peer = CC_NONE, .key = key };
	n->ports[n->nports++] = s->nports;
	return (int)s->nports++;
nomem:
	free(key);
	return -ENOMEM;
}

int cc_snap_link(struct cc_snap *s, uint32_t a, uint32_t b)
{
	if (a >= s->nports || b >= s->nports || a == b)
		return -EINVAL;
	if ((s->ports[a].peer != CC_NONE && s->ports[a].peer != b) ||
	    (s->ports[b].peer != CC_NONE && s->ports[b].peer != a))
		return -EINVAL;
	s->ports[a].peer = b;
	s->ports[b].peer = a;
	return 0;
}

int cc_snap_set(struct cc_snap *s, uint32_t port, const char *name, int prio, uint64_t value)
{
	struct cc_prio *e;
	int f;

	if (port >= s->nports || prio < -1 || prio >= CC_NPRIO)
		return -EINVAL;
	if (prio < 0) {
		struct cc_port *p = &s->ports[port];

		if ((f = lane_field_of(name, false)) >= 0) {
			p->pv[f] = value;
			p->phave |= 1u << f;
		}
		return 0;
	}
	e = cc_snap_prio(s, port, (unsigned)prio);
	if (e && (f = lane_field_of(name, true)) >= 0) {
		e->v[f] = value;
		e->have |= 1u << f;
	}
	return 0;
}

/* Node name as kind in acc.  One summed under the other kind (its agent's role flipped within
 * the intervals) takes the new one, and what it summed before is dropped: its ports stay, silent
 * and unlinked, until readings of them come (before, the node was left out of the sum until
 * the next: a decision interval of the tuner without it). */
static int merge_node(struct cc_snap *acc, const char *name, enum cc_node_kind kind)
{
	int node = cc_snap_node(acc, name, kind);
	struct cc_node *n;

	if (node != -EINVAL)
		return node;
	node = cc_snap_find_node(acc, name);
	if (node < 0)
		return node;
	n = &acc->nodes[node];
	n->kind = kind;
	for (uint32_t i = 0; i < n->nports; i++) {
		struct cc_port *p = &acc->ports[n->ports[i]];

		memset(p->pv, 0, sizeof(p->pv));
		p->phave = 0;
		memset(&acc->prbuf[(size_t)n->ports[i] * acc->nprios], 0, acc->nprios * sizeof(*acc->prbuf));
		p->silent = true;
		if (p->peer != CC_NONE)
			acc->ports[p->peer].peer = CC_NONE;
		p->peer = CC_NONE;
	}
	return node;
}

int cc_snap_merge(struct cc_snap *acc, const struct cc_snap *s)
{
	int *map = malloc((s->nports ? s->nports : 1) * sizeof(*map));

	if (!map)
		return -ENOMEM;
	for (uint32_t p = 0; p < s->nports; p++) {
		const struct cc_port *sp = &s->ports[p];
		const struct cc_node *sn = &s->nodes[sp->node];
		struct cc_port *ap;
		uint32_t had = acc->nports;
		int node, port;

		map[p] = -1;
		node = merge_node(acc, sn->name, sn->kind);
		if (node < 0 || (port = cc_snap_port(acc, (uint32_t)node, sp->name)) < 0) {
			free(map);
			return -ENOMEM;
		}
		map[p] = port;
		ap = &acc->ports[port];
		/* a silent port adds nothing but its place: the port of a host whose agent is
		 * silent, at the end of the switch port it pauses (before, the sum left it out,
		 * and the tuner could not tell whose pauses its switch port counted); its state is
		 * s's while the sum has no readings of it */
		if (sp->silent && (uint32_t)port < had && !ap->silent)
			continue;
		ap->silent = sp->silent;
		ap->down = sp->down;
		ap->lossless = sp->lossless;
		if (sp->speed_mbps)
			ap->speed_mbps = sp->speed_mbps;
		for (int f = 0; f < CP_N; f++)
			if (sp->phave & (1u << f)) {
				ap->pv[f] += sp->pv[f];
				ap->phave |= 1u << f;
			}
		for (unsigned pr = 0; pr < CC_NPRIO; pr++) {
			const struct cc_prio *se = cc_snap_prio(s, p, pr);
			struct cc_prio *ae = cc_snap_prio(acc, (uint32_t)port, pr);

			if (!se || !ae)
				continue;
			for (int f = 0; f < CF_N; f++) {
				if (!(se->have & (1u << f)))
					continue;
				if (f == CF_QUEUE_PEAK)
					ae->v[f] = (ae->have & (1u << f)) && ae->v[f] > se->v[f] ? ae->v[f] : se->v[f];
				else if (lane_field_is_gauge(f))
					ae->v[f] = se->v[f];
				else
					ae->v[f] += se->v[f];
				ae->have |= 1u << f;
			}
		}
	}
	for (uint32_t p = 0; p < s->nports; p++)
		if (map[p] >= 0 && s->ports[p].peer != CC_NONE && map[s->ports[p].peer] >= 0) {
			struct cc_port *ap = &acc->ports[map[p]];

			if (ap->peer == CC_NONE)
				cc_snap_link(acc, (uint32_t)map[p], (uint32_t)map[s->ports[p].peer]);
		}
	free(map);
	acc->interval_us += s->interval_us;
	acc->t_us = s->t_us;
	return 0;
}

static int cmp_port(const void *a, const void *b, void *ctx)
{
	const struct cc_snap *s = ctx;

	return strcmp(s->ports[*(const uint32_t *)a].name, s->ports[*(const uint32_t *)b].name);
}

void cc_snap_finish(struct cc_snap *s)
{
	for (uint32_t i = 0; i < s->nnodes; i++)
		qsort_r(s->nodes[i].ports, s->nodes[i].nports, sizeof(uint32_t), cmp_port, s);
}

bool cc_prio_paused(const struct cc_prio *e)
{
	return e && (((e->have & (1u << CF_RX_PAUSE_US)) && e->v[CF_RX_PAUSE_US]) ||
		     ((e->have & (1u << CF_RX_PAUSE_FRAMES)) && e->v[CF_RX_PAUSE_FRAMES]) ||
		     ((e->have & (1u << CF_PAUSED)) && e->v[CF_PAUSED]));
}

bool cc_prio_reads_paused(const struct cc_prio *e)
{
	return e && (e->have & (1u << CF_RX_PAUSE_US | 1u << CF_RX_PAUSE_FRAMES | 1u << CF_PAUSED));
}

const char *cc_snap_port_label(const struct cc_snap *s, uint32_t port, char *buf, size_t len)
{
	if (port >= s->nports)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%s:%s", s->nodes[s->ports[port].node].name, s->ports[port].name);
	return buf;
}

int cc_snap_find_node(const struct cc_snap *s, const char *name)
{
	void *hit = hmap_get(s->node_idx, name);

	return hit ? (int)((uintptr_t)hit - 1) : -ENOENT;
}

int cc_snap_find_port(const struct cc_snap *s, const char *node, const char *port)
{
	char key[512];
	void *hit;

	if ((size_t)snprintf(key, sizeof(key), "%s\x1f%s", node, port) >= sizeof(key))
		return -ENOENT;
	hit = hmap_get(s->port_idx, key);
	return hit ? (int)((uintptr_t)hit - 1) : -ENOENT;
}

static int cmp_node(const void *a, const void *b, void *ctx)
{
	const struct cc_snap *s = ctx;

	return strcmp(s->nodes[*(const uint32_t *)a].name, s->nodes[*(const uint32_t *)b].name);
}

static json_t *port_json(const struct cc_snap *s, uint32_t pi)
{
	const struct cc_port *p = &s->ports[pi];
	json_t *o, *prio = json_object(), *lossless = json_array();
	char buf[160];

	for (unsigned pr = 0; pr < CC_NPRIO; pr++) {
		const struct cc_prio *e = cc_snap_prio(s, pi, pr);
		json_t *f;
		char k[4];

		if (p->lossless & (1u << pr))
			json_array_append_new(lossless, json_integer(pr));
		if (!e)
			continue;
		f = json_object();
		for (int i = 0; i < CF_N; i++)
			if (e->have & (1u << i))
				json_object_set_new(f, lane_field_names[i], json_integer((json_int_t)e->v[i]));
		snprintf(k, sizeof(k), "%u", pr);
		json_object_set_new(prio, k, f);
	}
	o = json_pack("{s:s,s:o,s:b,s:o,s:o}", "name", p->name, "peer",
		      p->peer == CC_NONE ? json_null() : json_string(cc_snap_port_label(s, p->peer, buf, sizeof(buf))),
		      "down", p->down, "lossless", lossless, "prio", prio);
	if (o && p->speed_mbps)
		json_object_set_new(o, "speed_mbps", json_integer((json_int_t)p->speed_mbps));
	if (o && p->silent)
		json_object_set_new(o, "silent", json_true());
	if (o && p->phave) {
		json_t *c = json_object();

		for (int i = 0; i < CP_N; i++)
			if (p->phave & (1u << i))
				json_object_set_new(c, lane_port_field_names[i], json_integer((json_int_t)p->pv[i]));
		json_object_set_new(o, "counters", c);
	}
	return o;
}

json_t *cc_snap_json(const struct cc_snap *s)
{
	uint32_t *order = malloc((s->nnodes ? s->nnodes : 1) * sizeof(*order));
	json_t *nodes = json_array(), *prios = json_array(), *doc;

	if (!order || !nodes || !prios) {
		free(order);
		json_decref(nodes);
		json_decref(prios);
		return NULL;
	}
	for (uint32_t i = 0; i < s->nnodes; i++)
		order[i] = i;
	qsort_r(order, s->nnodes, sizeof(*order), cmp_node, (void *)s);
	for (uint32_t k = 0; k < s->nnodes; k++) {
		const struct cc_node *n = &s->nodes[order[k]];
		json_t *ports = json_array();

		for (uint32_t j = 0; j < n->nports; j++)
			json_array_append_new(ports, port_json(s, n->ports[j]));
		json_array_append_new(nodes, json_pack("{s:s,s:s,s:o}", "name", n->name, "kind",
						       n->kind == CC_HOST ? "host" : "switch", "ports", ports));
	}
	free(order);
	for (unsigned pr = 0; pr < CC_NPRIO; pr++)
		if (s->prios & (1u << pr))
			json_array_append_new(prios, json_integer(pr));
	doc = json_pack("{s:I,s:I,s:o,s:o}", "t_us", (json_int_t)s->t_us, "interval_us",
			(json_int_t)s->interval_us, "priorities", prios, "nodes", nodes);
	return doc;
}
