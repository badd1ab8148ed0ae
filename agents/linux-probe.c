/* Pingmesh on a real host: see linux-probe.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "agents/linux-probe.h"
#include "agents/probe/probe.h"
#include "lib/log.h"
#include "lib/probeops.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

/* The control channel's deadline per message, and the least time a probe may take before it
 * counts as lost (the plan's timeout is tuned for the fabric's RTTs; kernel sockets on a busy
 * host need more). */
#define CTL_TIMEOUT (2 * NSEC_PER_SEC)
#define MIN_VERBS_TIMEOUT (1 * NSEC_PER_MSEC)
#define MIN_SOCK_TIMEOUT (100 * NSEC_PER_MSEC)

struct lprobe {
	char endpoint[80];
	char *device;
	unsigned cpu_pct; /* the rounds' CPU budget, percent of one core */
	int lfd;
	volatile int stop;
	pthread_t server;
	bool server_running;

	pthread_mutex_t lock;
	pthread_t round;
	bool round_running; /* a round thread exists (maybe finished, not joined) */
	bool round_done;
	json_t *plan;	    /* the round's copy */
	json_t *results;    /* what it found */
	unsigned round_no;
};

static void *server_main(void *arg)
{
	struct lprobe *lp = arg;
	struct probe_server_conf sc = { .listen = lp->endpoint, .device = lp->device, .gid_index = -1,
					.timeout_ns = CTL_TIMEOUT };
	struct rf_err e = { 0 };
	char buf[512];

	if (probe_server_serve(&sc, lp->lfd, &lp->stop, &e) < 0)
		log_warning("probe", "the probe server stopped: %s", rf_err_str(&e, buf, sizeof(buf)));
	return NULL;
}

int lprobe_start(const char *listen, const char *device, unsigned cpu_pct, struct lprobe **ret,
		 struct rf_err *e)
{
	struct probe_server_conf sc = { .listen = listen };
	struct lprobe *lp;
	int r;

	if (!strncmp(listen, "0.0.0.0:", 8) || !strncmp(listen, "[::]:", 5) || !strncmp(listen, "*:", 2))
		return rf_err_set(e, -EINVAL, "BAD_CONFIG", "probe.listen",
				  "'%s': name the address other hosts reach this one at (the RoCE "
				  "interface's), not a wildcard: it is also what rocefabd tells them",
				  listen);
	if (!strrchr(listen, ':') || !probe_endpoint_address_ok(listen, (size_t)(strrchr(listen, ':') - listen)))
		return rf_err_set(e, -EINVAL, "BAD_CONFIG", "probe.listen",
				  "'%s': give this host's own unicast address in digits (IPv4, or IPv6 in brackets) "
				  "and a port: not a name, nor a link-local, multicast or broadcast address (rocefabd "
				  "hands it to every host that probes this one, and refuses other ones)",
				  listen);
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	pthread_mutex_init(&lp->lock, NULL);
	str_copy(lp->endpoint, sizeof(lp->endpoint), listen);
	lp->cpu_pct = cpu_pct ? (cpu_pct > 100 ? 100 : cpu_pct) : 5;
	lp->device = device && *device ? strdup(device) : NULL;
	lp->lfd = probe_server_listen(&sc, e);
	if (lp->lfd < 0) {
		char why[sizeof(e->msg)];

		r = lp->lfd;
		str_copy(why, sizeof(why), e->msg);
		rf_err_set(e, r, "LISTEN_FAILED", "probe.listen", "cannot serve probes on %s: %s", listen, why);
		goto fail;
	}
	if ((r = -pthread_create(&lp->server, NULL, server_main, lp)) < 0) {
		close(lp->lfd);
		rf_err_set(e, r, "THREAD_FAILED", NULL, "cannot start the probe server");
		goto fail;
	}
	lp->server_running = true;
	*ret = lp;
	return 0;
fail:
	free(lp->device);
	pthread_mutex_destroy(&lp->lock);
	free(lp);
	return r;
}

const char *lprobe_endpoint(const struct lprobe *lp)
{
	return lp->endpoint;
}

/* ADDRESS:PORT or [ADDRESS]:PORT into its parts. */
static int split_endpoint(const char *ep, char *host, size_t len, unsigned *port)
{
	const char *colon = ep ? strrchr(ep, ':') : NULL;
	uint64_t p;
	size_t hl;

	if (!colon || colon == ep || str_parse_uint(colon + 1, 65535, &p) < 0 || !p)
		return -EINVAL;
	hl = (size_t)(colon - ep);
	if (ep[0] == '[' && hl >= 2 && ep[hl - 1] == ']') {
		ep++;
		hl -= 2;
	}
	if (hl >= len)
		return -EINVAL;
	memcpy(host, ep, hl);
	host[hl] = '\0';
	*port = (unsigned)p;
	return 0;
}

static double thread_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static json_t *result_json(const char *target, unsigned label, const char *op, unsigned size,
			   const struct probe_stats *st)
{
	json_t *o = json_pack("{s:s,s:I,s:s,s:I,s:I,s:I,s:I}", "target", target, "label", (json_int_t)label,
			      "op", op, "size", (json_int_t)size, "n", (json_int_t)st->n, "ok",
			      (json_int_t)st->ok, "lost", (json_int_t)(st->n - st->ok));

	if (st->ok) {
		json_object_set_new(o, "min_us", json_real(st->min));
		json_object_set_new(o, "p50_us", json_real(st->p50));
		json_object_set_new(o, "p99_us", json_real(st->p99));
		json_object_set_new(o, "max_us", json_real(st->max));
		json_object_set_new(o, "mean_us", json_real(st->mean));
	}
	return o;
}

/* What the plan asks of one op at one size, into cc: the engine's op, the size, the paths (RC
 * QPs with their own flow labels; UD and sockets have one; at most the plan's 16) and the
 * iterations over all of them (the plan's count is per path, as in the simulator). */
static int plan_shape(json_t *plan, const char *opname, json_int_t size, struct probe_client_conf *cc)
{
	json_int_t iters = json_integer_value(json_object_get(plan, "iterations"));
	json_int_t paths = json_integer_value(json_object_get(plan, "paths"));
	double tmo_us = json_number_value(json_object_get(plan, "timeout_us"));

	if (probe_op_parse(opname, &cc->op) < 0)
		return -EINVAL;
	cc->size = size >= PROBE_MIN_SIZE && size <= PROBE_MAX_SIZE ? (unsigned)size : 64;
	if (probe_op_is_verbs(cc->op) && cc->op != PROBE_UD && paths > 1 && paths <= 16)
		cc->paths = (unsigned)paths;
	else
		cc->paths = 1;
	cc->iters = (iters > 0 && iters <= 10000 ? (unsigned)iters : 10) * cc->paths;
	cc->timeout_ns = (int64_t)(tmo_us * 1000);
	if (cc->timeout_ns < (probe_op_is_verbs(cc->op) ? MIN_VERBS_TIMEOUT : MIN_SOCK_TIMEOUT))
		cc->timeout_ns = probe_op_is_verbs(cc->op) ? MIN_VERBS_TIMEOUT : MIN_SOCK_TIMEOUT;
	return 0;
}

/* Every probe of one op and size to a target counted lost (a dead host, or no way there). */
static void all_lost(const char *target, const char *opname, const struct probe_client_conf *cc, json_t *out)
{
	struct probe_stats st = { .n = cc->iters };

	for (unsigned l = 0; l < cc->paths; l++)
		json_array_append_new(out, result_json(target, l, opname, cc->size, &st));
}

/* One target of a round with one op at one size: its results appended to out.  When the
 * peer cannot be reached, all its probes are lost and -EHOSTUNREACH is returned; the rest of
 * the target's ops and sizes are then lost without trying (unreachable set), each try would
 * wait for the control channel's timeout again. */
static int probe_target(struct lprobe *lp, json_t *plan, const char *target, const char *ep,
			const char *opname, json_int_t size, bool unreachable, json_t *out)
{
	struct probe_client_conf cc = { .device = lp->device, .gid_index = -1, .ctl_timeout_ns = CTL_TIMEOUT };
	struct probe_result r;
	struct rf_err e = { 0 };
	char host[64], buf[512];
	unsigned port;

	if (split_endpoint(ep, host, sizeof(host), &port) < 0) {
		log_warning("probe", "%s: '%s' is not ADDRESS:PORT; not probed", target, ep);
		return -EINVAL;
	}
	if (plan_shape(plan, opname, size, &cc) < 0) {
		log_warning("probe", "the plan's operation '%s' is unknown; not probed", opname);
		return -EINVAL;
	}
	if (unreachable) {
		all_lost(target, opname, &cc, out);
		return -EHOSTUNREACH;
	}
	cc.host = host;
	cc.port = port;
	if (probe_client_run(&cc, &r, &e) < 0) {
		if (!strcmp(e.code, "PEER_UNREACHABLE") || !strcmp(e.code, "PEER_TIMEOUT") ||
		    !strcmp(e.code, "PEER_SILENT")) {
			all_lost(target, opname, &cc, out);
			log_debug("probe", "%s at %s: %s", target, ep, rf_err_str(&e, buf, sizeof(buf)));
			return -EHOSTUNREACH;
		}
		log_warning("probe", "%s at %s: %s %u B not probed: %s", target, ep, opname, cc.size,
			    rf_err_str(&e, buf, sizeof(buf)));
		return -EIO;
	}
	if (r.per_path) {
		for (unsigned l = 0; l < r.paths; l++)
			json_array_append_new(out, result_json(target, l, opname, r.size, &r.per_path[l]));
	} else {
		json_array_append_new(out, result_json(target, 0, opname, r.size, &r.st));
	}
	if (r.st.data_errors)
		log_warning("probe", "%s: %llu probes completed with the wrong data", target,
			    (unsigned long long)r.st.data_errors);
	probe_result_fini(&r);
	return 0;
}

double lprobe_pause_ms(double cpu_ms, double wall_ms, unsigned cpu_pct)
{
	double need = cpu_pct ? cpu_ms * 100.0 / cpu_pct : 0; /* the wall time cpu_ms is worth */

	return need > wall_ms ? need - wall_ms : 0;
}

/* Pauses (in steps, so that a stop is seen) until the round is within its CPU budget. */
static void keep_budget(struct lprobe *lp, double c0, int64_t t0)
{
	double wall_ms = (double)(tu_mono_ns() - t0) / 1e6;
	double pause = lprobe_pause_ms(thread_cpu_ms() - c0, wall_ms, lp->cpu_pct);

	while (pause > 0 && !lp->stop) {
		double step = pause < 100 ? pause : 100;
		struct timespec ts = { 0, (long)(step * 1e6) };

		nanosleep(&ts, NULL);
		pause -= step;
	}
}

/* One target of a round with every op at every size; the budget is kept after each run. */
static void probe_target_all(struct lprobe *lp, const char *target, const char *ep, json_t *out, double c0,
			     int64_t t0)
{
	json_t *ops = json_object_get(lp->plan, "ops"), *sizes = json_object_get(lp->plan, "sizes");
	size_t no = json_array_size(ops) ?: 1, ns = json_array_size(sizes) ?: 1;
	bool unreachable = false;

	for (size_t oi = 0; oi < no && !lp->stop; oi++) {
		const char *opname = json_string_value(json_array_get(ops, oi)) ?: "write";

		for (size_t si = 0; si < ns && !lp->stop; si++) {
			json_int_t size = json_integer_value(json_array_get(sizes, si));
			bool tried = !unreachable;

			unreachable |= probe_target(lp, lp->plan, target, ep, opname, size, unreachable, out) ==
				       -EHOSTUNREACH;
			if (tried)
				keep_budget(lp, c0, t0);
		}
	}
}

static void *round_main(void *arg)
{
	struct lprobe *lp = arg;
	json_t *out = json_array(), *t, *eps = json_object_get(lp->plan, "endpoints");
	double c0 = thread_cpu_ms();
	int64_t t0 = tu_mono_ns();
	size_t i, probed = 0;

	json_array_foreach(json_object_get(lp->plan, "targets"), i, t) {
		const char *ep = json_string_value(json_object_get(eps, json_string_value(t) ?: ""));

		if (lp->stop)
			break;
		if (!json_is_string(t) || !ep)
			continue; /* its endpoint is not known yet */
		probe_target_all(lp, json_string_value(t), ep, out, c0, t0);
		probed++;
	}
	if (lp->stop) /* cut short: its last pause with it */
		log_debug("probe", "round %u: stopped after %zu targets", lp->round_no, probed);
	else
		log_debug("probe", "round %u: %zu targets in %.1f ms, %.2f ms of CPU (budget %u %%)",
			  lp->round_no, probed, (double)(tu_mono_ns() - t0) / 1e6, thread_cpu_ms() - c0,
			  lp->cpu_pct);
	pthread_mutex_lock(&lp->lock);
	lp->results = out;
	lp->round_done = true;
	pthread_mutex_unlock(&lp->lock);
	return NULL;
}

int lprobe_round(struct lprobe *lp, json_t *plan, json_t **ret)
{
	bool done;

	*ret = NULL;
	pthread_mutex_lock(&lp->lock);
	done = lp->round_done;
	pthread_mutex_unlock(&lp->lock);
	if (lp->round_running && !done)
		return 0; /* the last round is still going: one at a time bounds the CPU */
	if (lp->round_running) {
		pthread_join(lp->round, NULL);
		*ret = lp->results;
		lp->results = NULL;
		json_decref(lp->plan);
		lp->plan = NULL;
		lp->round_running = lp->round_done = false;
	}
	if (lp->stop || !plan)
		return 0;
	lp->plan = json_deep_copy(plan);
	lp->round_no++;
	if (!lp->plan || pthread_create(&lp->round, NULL, round_main, lp)) {
		json_decref(lp->plan);
		lp->plan = NULL;
		return -ENOMEM;
	}
	lp->round_running = true;
	return 0;
}

void lprobe_stop(struct lprobe *lp)
{
	if (!lp)
		return;
	lp->stop = 1;
	if (lp->round_running) {
		pthread_join(lp->round, NULL);
		json_decref(lp->results);
		json_decref(lp->plan);
	}
	if (lp->server_running)
		pthread_join(lp->server, NULL);
	pthread_mutex_destroy(&lp->lock);
	free(lp->device);
	free(lp);
}
