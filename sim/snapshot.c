/* The simulator's snapshot builder: see snapshot.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/sim.h"
#include "sim/snapshot.h"

struct sim_snapper {
	const struct sim *s;
	uint32_t nports;  /* every port of every device, in device order */
	uint32_t *first;  /* by device: index of its first port */
	uint64_t *prev;	  /* nports x STRIDE cumulative values at the last snapshot */
	int64_t last_ps;
};

/* A port's values: CC_NPRIO x CF_N priority fields, then CP_N port fields. */
#define STRIDE (CC_NPRIO * CF_N + CP_N)

uint8_t sim_lossless_prios(const struct sim *s)
{
	uint8_t m = 0;

	for (int d = 0; d < sim_device_count(s); d++)
		for (int p = 0; p < sim_port_count(s, d); p++)
			m |= sim_port_lossless(s, d, p);
	return m;
}

const char *sim_snap_port_name(const struct sim *s, int dev, int port, char *buf, size_t len)
{
	if (sim_device_is_switch(s, dev))
		snprintf(buf, len, "%s", sim_port_name(s, dev, port));
	else
		snprintf(buf, len, "%s:%s", SIM_AGENT_HOST_DEV, SIM_AGENT_HOST_PORT);
	return buf;
}

struct reading {
	uint64_t *cur; /* STRIDE */
	uint32_t seen; /* priority fields reported */
	uint32_t pseen; /* port fields reported */
};

static void read_fn(void *ctx, const char *name, int prio, uint64_t value)
{
	struct reading *r = ctx;
	int f;

	if (prio < 0) {
		if ((f = lane_field_of(name, false)) >= 0) {
			r->cur[CC_NPRIO * CF_N + f] = value;
			r->pseen |= 1u << f;
		}
		return;
	}
	if (prio >= CC_NPRIO || (f = lane_field_of(name, true)) < 0)
		return;
	r->cur[prio * CF_N + f] = value;
	r->seen |= 1u << f;
}

static void read_port(const struct sim *s, int d, int p, uint64_t *cur, uint32_t *seen, uint32_t *pseen)
{
	struct reading r = { .cur = cur };

	memset(cur, 0, STRIDE * sizeof(*cur));
	sim_counters(s, d, p, read_fn, &r);
	*seen = r.seen;
	*pseen = r.pseen;
}

struct sim_snapper *sim_snapper_new(const struct sim *s)
{
	struct sim_snapper *sn = calloc(1, sizeof(*sn));
	int nd = sim_device_count(s);
	uint32_t seen, pseen, k = 0;

	if (!sn)
		return NULL;
	sn->s = s;
	sn->first = calloc((size_t)nd + 1, sizeof(*sn->first));
	if (!sn->first)
		goto fail;
	for (int d = 0; d < nd; d++) {
		sn->first[d] = sn->nports;
		sn->nports += (uint32_t)sim_port_count(s, d);
	}
	sn->first[nd] = sn->nports;
	sn->prev = calloc((size_t)(sn->nports ? sn->nports : 1) * STRIDE, sizeof(*sn->prev));
	if (!sn->prev)
		goto fail;
	for (int d = 0; d < nd; d++)
		for (int p = 0; p < sim_port_count(s, d); p++, k++)
			read_port(s, d, p, &sn->prev[(size_t)k * STRIDE], &seen, &pseen);
	sn->last_ps = sim_now(s);
	return sn;
fail:
	sim_snapper_free(sn);
	return NULL;
}

void sim_snapper_free(struct sim_snapper *sn)
{
	if (!sn)
		return;
	free(sn->first);
	free(sn->prev);
	free(sn);
}

struct cc_snap *sim_snapper_take(struct sim_snapper *sn)
{
	const struct sim *s = sn->s;
	uint8_t prios = sim_lossless_prios(s);
	int64_t now = sim_now(s);
	uint64_t cur[STRIDE];
	struct cc_snap *snap;
	char name[96];
	uint32_t k = 0;

	snap = cc_snap_new(prios ? prios : 1u << 3, now / 1000000, (now - sn->last_ps) / 1000000);
	if (!snap)
		return NULL;
	for (int d = 0; d < sim_device_count(s); d++) {
		int node = cc_snap_node(snap, sim_device_name(s, d), sim_device_is_switch(s, d) ? CC_SWITCH : CC_HOST);

		if (node < 0)
			goto fail;
		for (int p = 0; p < sim_port_count(s, d); p++)
			if (cc_snap_port(snap, (uint32_t)node, sim_snap_port_name(s, d, p, name, sizeof(name))) < 0)
				goto fail;
	}
	for (int d = 0; d < sim_device_count(s); d++)
		for (int p = 0; p < sim_port_count(s, d); p++, k++) {
			uint64_t *prev = &sn->prev[(size_t)k * STRIDE];
			int pd, pp, me, peer;
			char pname[96];
			uint32_t seen, pseen;

			me = cc_snap_find_port(snap, sim_device_name(s, d), sim_snap_port_name(s, d, p, name, sizeof(name)));
			if (sim_port_peer(s, d, p, &pd, &pp) == 0 &&
			    (peer = cc_snap_find_port(snap, sim_device_name(s, pd),
						      sim_snap_port_name(s, pd, pp, pname, sizeof(pname)))) >= 0)
				cc_snap_link(snap, (uint32_t)me, (uint32_t)peer);
			snap->ports[me].down = !sim_port_up(s, d, p);
			snap->ports[me].lossless = sim_port_lossless(s, d, p);
			read_port(s, d, p, cur, &seen, &pseen);
			for (int pr = 0; pr < CC_NPRIO; pr++)
				for (int f = 0; f < CF_N; f++) {
					uint64_t v = cur[pr * CF_N + f];

					if (!(seen & (1u << f)))
						continue;
					cc_snap_set(snap, (uint32_t)me, lane_field_names[f], pr,
						    lane_field_is_gauge(f) ? v : v - prev[pr * CF_N + f]);
				}
			snap->ports[me].speed_mbps = sim_port_rate_bps(s, d, p) / 1000000;
			for (int f = 0; f < CP_N; f++)
				if (pseen & (1u << f))
					cc_snap_set(snap, (uint32_t)me, lane_port_field_names[f], -1,
						    cur[CC_NPRIO * CF_N + f] - prev[CC_NPRIO * CF_N + f]);
			memcpy(prev, cur, sizeof(cur));
		}
	sn->last_ps = now;
	cc_snap_finish(snap);
	return snap;
fail:
	cc_snap_free(snap);
	return NULL;
}

int sim_silent_hosts(const struct sim *s, const char *list, bool **ret, struct rf_err *e)
{
	bool *silent = calloc((size_t)sim_device_count(s) + 1, sizeof(*silent));

	if (!silent)
		return rf_err_set(e, -ENOMEM, "NO_MEMORY", NULL, "out of memory");
	for (const char *p = list; p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char name[128];
		int d = -1;

		snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1), p);
		if (!*name || (d = sim_device_find(s, name)) < 0 || sim_device_is_switch(s, d)) {
			free(silent);
			return rf_err_set(e, -EINVAL, "BAD_ARGUMENT", "--silent", "%s%s%s",
					  *name ? "'" : "an empty host name", name,
					  !*name ? "" : d >= 0 ? "' is a switch: only hosts' agents can be silenced"
								: "' is no host of the fabric");
		}
		silent[d] = true;
		p = end ? end + 1 : NULL;
	}
	*ret = silent;
	return 0;
}

void sim_silence(const struct sim *s, const bool *silent, struct cc_snap *snap)
{
	for (int d = 0; silent && d < sim_device_count(s); d++) {
		int n = silent[d] ? cc_snap_find_node(snap, sim_device_name(s, d)) : -1;

		for (uint32_t i = 0; n >= 0 && i < snap->nodes[n].nports; i++) {
			struct cc_port *p = &snap->ports[snap->nodes[n].ports[i]];

			for (unsigned pr = 0; pr < CC_NPRIO; pr++) {
				struct cc_prio *e = cc_snap_prio(snap, snap->nodes[n].ports[i], pr);

				if (e)
					memset(e, 0, sizeof(*e));
			}
			memset(p->pv, 0, sizeof(p->pv));
			p->phave = 0;
			p->silent = true;
		}
	}
}
