/* Probe sessions: the client that runs probes and the server that answers them (probe.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agents/probe/internal.h"
#include "lib/log.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

static double cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int check_conf(enum probe_op op, bool pingpong, unsigned size, unsigned iters, struct rf_err *e)
{
	if (size < PROBE_MIN_SIZE || size > PROBE_MAX_SIZE)
		return rf_err_set(e, -EINVAL, "BAD_SIZE", "size", "the size is %d to %d bytes",
				  PROBE_MIN_SIZE, PROBE_MAX_SIZE);
	if (pingpong && op != PROBE_WRITE)
		return rf_err_set(e, -EINVAL, "BAD_OP", "pingpong", "ping-pong is a mode of write probes");
	if (size > probe_op_max_size(op))
		return rf_err_set(e, -EINVAL, "BAD_SIZE", "size", "a %s probe is at most %u bytes%s",
				  op == PROBE_UD ? "UD" : "UDP", probe_op_max_size(op),
				  op == PROBE_UD ? " (a UD message fits in one MTU)" : "");
	if (iters < 1 || iters > PROBE_MAX_ITERS)
		return rf_err_set(e, -EINVAL, "BAD_ITERS", "iters", "1 to %d probes", PROBE_MAX_ITERS);
	return 0;
}

void probe_result_fini(struct probe_result *r)
{
	free(r->per_path);
	r->per_path = NULL;
}

json_t *probe_result_json(const struct probe_result *r)
{
	json_t *o = json_pack("{s:s,s:I,s:I,s:s,s:s,s:b,s:s,s:o}", "op", probe_op_name(r->op), "size",
			      (json_int_t)r->size, "paths", (json_int_t)r->paths, "device", r->device,
			      "clock", r->clock, "verified", r->verified, "verify_detail",
			      r->verify_detail, "stats", probe_stats_json(&r->st));

	if (r->gid_index >= 0)
		json_object_set_new(o, "gid_index", json_integer(r->gid_index));
	if (r->pingpong) {
		json_object_set_new(o, "pingpong", json_true());
		json_object_set_new(o, "inline", json_boolean(r->inline_data));
	}
	if (r->per_path) {
		json_t *pp = json_array();

		for (unsigned i = 0; i < r->paths; i++)
			json_array_append_new(pp, probe_stats_json(&r->per_path[i]));
		json_object_set_new(o, "per_path", pp);
	}
	return o;
}

/* --- client -------------------------------------------------------------------------------------- */

static int session_error(json_t *reply, struct rf_err *e)
{
	const char *code = json_string_value(json_object_get(reply, "code"));
	const char *msg = json_string_value(json_object_get(reply, "error"));

	return rf_err_set(e, -EPROTO, code ? code : "SERVER_REFUSED", NULL, "the server refused: %s",
			  msg ? msg : "no reason given");
}

int probe_client_run(const struct probe_client_conf *c, struct probe_result *ret, struct rf_err *e)
{
	int64_t ptmo = c->timeout_ns > 0 ? c->timeout_ns : 2 * NSEC_PER_SEC;
	int64_t tmo = c->ctl_timeout_ns > 0 ? c->ctl_timeout_ns : ptmo;
	struct pv_ctx pv = { 0 };
	struct pv_session s = { 0 };
	struct ctl ctl = { .fd = -1 };
	json_t *hello, *reply = NULL, *done;
	double *samples = NULL, c0, c1;
	uint8_t *paths = NULL;
	size_t n = 0;
	uint32_t last = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->op = c->op;
	ret->size = c->op == PROBE_CAS || c->op == PROBE_FAA ? 8 : c->size;
	ret->paths = 1;
	ret->pingpong = c->pingpong;
	ret->gid_index = -1;
	snprintf(ret->clock, sizeof(ret->clock), "monotonic");
	if ((r = check_conf(c->op, c->pingpong, c->size, c->iters, e)) < 0)
		return r;
	samples = calloc(c->iters, sizeof(*samples));
	paths = calloc(c->iters, 1);
	if (!samples || !paths) {
		r = -ENOMEM;
		goto out;
	}
	hello = json_pack("{s:s,s:I,s:I,s:I}", "op", probe_op_name(c->op), "size",
			  (json_int_t)ret->size, "iters", (json_int_t)c->iters, "timeout_ms",
			  (json_int_t)((tmo > ptmo ? tmo : ptmo) / 1000000));
	if (probe_op_is_verbs(c->op)) {
		if ((r = pv_open(c->device, c->gid_index, &pv, e)) < 0) {
			json_decref(hello);
			goto out;
		}
		str_copy(ret->device, sizeof(ret->device), pv.name);
		ret->gid_index = pv.gid_index;
		if ((r = pv_session_create(&pv, c->op, ret->size, c->paths, c->pingpong, &s, e)) < 0) {
			json_decref(hello);
			goto out;
		}
		ret->paths = s.paths;
		ret->inline_data = c->pingpong && ret->size <= s.inline_max;
		json_object_set_new(hello, "paths", json_integer(s.paths));
		if (c->pingpong)
			json_object_set_new(hello, "pingpong", json_true());
		{
			json_t *info = pv_local_info(&s);

			json_object_update(hello, info);
			json_decref(info);
		}
	}
	if ((r = ctl_connect(c->host, c->port ? c->port : PROBE_DEFAULT_PORT, tmo, &ctl, e)) < 0) {
		json_decref(hello);
		goto out;
	}
	r = ctl_send(&ctl, hello, tmo);
	json_decref(hello);
	if (r < 0 || (r = ctl_recv(&ctl, &reply, 2 * tmo)) < 0) {
		rf_err_set(e, r, "PEER_SILENT", c->host, "the server did not answer the session request: %s",
			   strerror(-r));
		goto out;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		r = session_error(reply, e);
		goto out;
	}
	if (probe_op_is_verbs(c->op) && (r = pv_connect(&s, reply, e)) < 0)
		goto out;
	c0 = cpu_us(); /* the probe loop's CPU, not the setup's */
	if (probe_op_is_verbs(c->op)) {
		/* the server has its receives posted and its QPs in RTR/RTS before it answered */
		if (c->pingpong)
			r = pv_pp_client_loop(&s, c->iters, ptmo, samples, &n, ret->st.errors,
					      &ret->st.data_errors, &last);
		else
			r = pv_client_loop(&s, c->iters, ptmo, samples, paths, &n, ret->st.errors,
					   &ret->st.data_errors, &last);
	} else {
		r = sock_client_loop(c->op, c->host, (unsigned)json_integer_value(json_object_get(reply, "port")),
				     c->size, c->iters, ptmo, samples, &n, ret->st.errors, &ret->st.data_errors);
		last = n ? (uint32_t)n - 1 : 0;
	}
	c1 = cpu_us();
	if (r < 0) {
		rf_err_set(e, r, "PROBE_FAILED", NULL, "the probes could not run: %s", strerror(-r));
		goto out;
	}
	if (probe_op_is_verbs(c->op) && !c->pingpong && s.nic_samples) {
		/* NIC time; where a reading was implausible, that sample is the CPU's (said so) */
		snprintf(ret->clock, sizeof(ret->clock), s.clock_fallbacks ? "nic+monotonic" : "nic");
		if (s.clock_fallbacks)
			log_warning("probe", "%s: %u of %zu samples timed with CLOCK_MONOTONIC: the NIC "
				    "clock's reading did not fit the probe", pv.name, s.clock_fallbacks, n);
	}
	ret->st.cpu_us_per_op = (c1 - c0) / (double)c->iters;
	/* the server checks what arrived */
	done = json_pack("{s:b,s:I,s:I}", "done", 1, "ok", (json_int_t)n, "last", (json_int_t)last);
	json_decref(reply);
	reply = NULL;
	if (ctl_send(&ctl, done, tmo) == 0 && ctl_recv(&ctl, &reply, 2 * tmo) == 0) {
		ret->verified = json_is_true(json_object_get(reply, "verified"));
		str_copy(ret->verify_detail, sizeof(ret->verify_detail),
			 json_string_value(json_object_get(reply, "detail")) ?: "");
		if (c->op == PROBE_SEND || c->pingpong) {
			json_int_t got = json_integer_value(json_object_get(reply, "received"));
			json_int_t bad = json_integer_value(json_object_get(reply, "bad"));

			ret->st.data_errors += (uint64_t)bad + ((json_int_t)n > got ? (uint64_t)((json_int_t)n - got) : 0);
			ret->verified = bad == 0 && got >= (json_int_t)n;
		}
	} else {
		str_copy(ret->verify_detail, sizeof(ret->verify_detail), "the server did not answer the check");
	}
	json_decref(done);
	if (ret->paths > 1) {
		ret->per_path = calloc(ret->paths, sizeof(*ret->per_path));
		for (unsigned pth = 0; ret->per_path && pth < ret->paths; pth++) {
			double *ps = calloc(n + 1, sizeof(*ps));
			size_t k = 0;

			for (size_t i = 0; ps && i < n; i++)
				if (paths[i] == pth)
					ps[k++] = samples[i];
			probe_stats_compute(ps, k, (c->iters + ret->paths - 1 - pth) / ret->paths, &ret->per_path[pth]);
			free(ps);
		}
	}
	probe_stats_compute(samples, n, c->iters, &ret->st);
	r = 0;
out:
	json_decref(reply);
	ctl_close(&ctl);
	if (s.p)
		pv_session_destroy(&s);
	if (pv.ctx)
		pv_close(&pv);
	free(samples);
	free(paths);
	return r;
}

/* --- server -------------------------------------------------------------------------------------- */

static void refuse(struct ctl *c, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void refuse(struct ctl *c, const char *code, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = json_pack("{s:b,s:s,s:s}", "ok", 0, "code", code, "error", msg);
	ctl_send(c, o, NSEC_PER_SEC);
	json_decref(o);
	log_info("probe", "refused a session: %s", msg);
}

static void serve_session(const struct probe_server_conf *conf, struct pv_ctx *pv, bool *pv_open_done,
			  struct ctl *c)
{
	int64_t tmo = conf->timeout_ns > 0 ? conf->timeout_ns : 2 * NSEC_PER_SEC;
	json_t *hello = NULL, *done = NULL, *ans;
	struct pv_session s = { 0 };
	struct rf_err e = { 0 };
	enum probe_op op;
	json_int_t size, iters, paths;
	bool pingpong;
	uint64_t received = 0, bad = 0;
	int64_t idle_limit;
	char detail[128] = "";
	bool verified = true;
	int sfd = -1;
	unsigned sport = 0;

	if (ctl_recv(c, &hello, 5 * NSEC_PER_SEC) < 0)
		return;
	size = json_integer_value(json_object_get(hello, "size"));
	iters = json_integer_value(json_object_get(hello, "iters"));
	paths = json_integer_value(json_object_get(hello, "paths"));
	pingpong = json_is_true(json_object_get(hello, "pingpong"));
	if (probe_op_parse(json_string_value(json_object_get(hello, "op")), &op) < 0 ||
	    check_conf(op, pingpong, (unsigned)size, (unsigned)iters, &e) < 0) {
		refuse(c, e.code[0] ? e.code : "BAD_OP", "%s", e.msg[0] ? e.msg : "unknown operation");
		goto out;
	}
	/* the client's timeout, up to an hour: more would overflow the deadlines, the session's
	 * being iters of them */
	if (json_integer_value(json_object_get(hello, "timeout_ms")) > 0)
		tmo = (json_integer_value(json_object_get(hello, "timeout_ms")) < PROBE_MAX_TIMEOUT_MS
			       ? json_integer_value(json_object_get(hello, "timeout_ms"))
			       : PROBE_MAX_TIMEOUT_MS) *
		      NSEC_PER_MSEC;
	if (probe_op_is_verbs(op)) {
		if (!*pv_open_done) {
			if (pv_open(conf->device, conf->gid_index, pv, &e) < 0) {
				refuse(c, e.code, "%s", e.msg);
				goto out;
			}
			*pv_open_done = true;
		}
		if (pv_session_create(pv, op, (unsigned)size, (unsigned)paths, pingpong, &s, &e) < 0 ||
		    pv_connect(&s, hello, &e) < 0) {
			refuse(c, e.code, "%s", e.msg);
			goto out;
		}
		/* the data the client will read, the counter its atomics move */
		if (pingpong)
		{
			memset(pv->pool + PV_OFF_TARGET, 0, PV_BUF); /* no probe has landed */
			memset(pv->pool + PV_OFF_TARGET2, 0, PV_BUF);
		}
		else
			pv_pattern(pv->pool + PV_OFF_TARGET, PV_BUF, 0);
		memset(pv->pool + PV_OFF_ATOMIC, 0, 8);
		if (pv_post_recvs(&s) < 0) {
			refuse(c, "DEVICE_ERROR", "cannot post receive buffers");
			goto out;
		}
		ans = pv_local_info(&s);
	} else {
		/* on the address the client came to: a reply from another one (the kernel picks
		 * the source of an unbound socket's datagrams) would not pass its connected socket */
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char here[INET6_ADDRSTRLEN] = "";

		if (getsockname(c->fd, (struct sockaddr *)&ss, &sl) == 0)
			inet_ntop(ss.ss_family,
				  ss.ss_family == AF_INET6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
							   : (void *)&((struct sockaddr_in *)&ss)->sin_addr,
				  here, sizeof(here));
		if (sock_server_open(op, here[0] ? here : NULL, &sfd, &sport) < 0) {
			refuse(c, "SOCKET_ERROR", "cannot open a %s socket", probe_op_name(op));
			goto out;
		}
		ans = json_pack("{s:I}", "port", (json_int_t)sport);
	}
	json_object_set_new(ans, "ok", json_true());
	if (ctl_send(c, ans, tmo) < 0) {
		json_decref(ans);
		goto out;
	}
	json_decref(ans);
	/* serve until the client says it is done (bounded: every probe has a timeout) */
	idle_limit = tu_mono_ns() + (int64_t)iters * tmo + 10 * NSEC_PER_SEC;
	if (pingpong) {
		if (pv_pp_server_loop(&s, c, idle_limit, &received, &bad) < 0)
			log_info("probe", "a ping-pong session ended on a device error");
	} else if (probe_op_is_verbs(op)) {
		while (!ctl_readable(c, s.op == PROBE_SEND || s.op == PROBE_UD ? 0 : 100)) {
			if (s.op == PROBE_SEND || s.op == PROBE_UD)
				pv_server_poll(&s, &received, &bad);
			if (tu_mono_ns() > idle_limit)
				goto out;
		}
	} else {
		sock_server_serve(op, sfd, c, &received);
	}
	if (ctl_recv(c, &done, tmo) < 0)
		goto out;
	if (probe_op_is_verbs(op) && !pingpong && (s.op == PROBE_SEND || s.op == PROBE_UD)) {
		/* what arrived before the client's word: every completion still queued (a poll takes
		 * 8; a server that fell behind counted 96 of 100 sends), and for sends those the
		 * client saw acknowledged, whose completions may come a moment after (at most the
		 * session's probes, for at most a second: the client's word is no order to spin) */
		json_int_t want = json_integer_value(json_object_get(done, "ok"));
		int64_t until = tu_mono_ns() + (tmo < NSEC_PER_SEC ? tmo : NSEC_PER_SEC);
		int n;

		if (want > (json_int_t)iters)
			want = (json_int_t)iters;

		while ((n = pv_server_poll(&s, &received, &bad)) > 0 ||
		       (n == 0 && s.op == PROBE_SEND && (json_int_t)received < want && tu_mono_ns() < until))
			;
	}
	if (probe_op_is_verbs(op))
		verified = pv_server_verify(&s, done, detail, sizeof(detail));
	else
		snprintf(detail, sizeof(detail), "%llu echoed", (unsigned long long)received);
	if (op == PROBE_SEND)
		snprintf(detail, sizeof(detail), "%llu messages received, %llu bad", (unsigned long long)received,
			 (unsigned long long)bad);
	ans = json_pack("{s:b,s:s,s:I,s:I}", "verified", verified && !bad, "detail", detail, "received",
			(json_int_t)received, "bad", (json_int_t)bad);
	ctl_send(c, ans, tmo);
	json_decref(ans);
	log_info("probe", "session %s %lld B x %lld: %s", probe_op_name(op), (long long)size,
		 (long long)iters, detail);
out:
	if (sfd >= 0)
		close(sfd);
	if (s.p)
		pv_session_destroy(&s);
	json_decref(hello);
	json_decref(done);
}

int probe_server_listen(const struct probe_server_conf *conf, struct rf_err *e)
{
	return ctl_listen(conf->listen, e);
}

int probe_server_run(const struct probe_server_conf *conf, volatile int *stop, struct rf_err *e)
{
	int lfd = ctl_listen(conf->listen, e);

	return lfd < 0 ? lfd : probe_server_serve(conf, lfd, stop, e);
}

int probe_server_serve(const struct probe_server_conf *conf, int lfd, volatile int *stop, struct rf_err *e)
{
	struct pv_ctx pv = { 0 };
	bool pv_ok = false;

	if (conf->device && pv_open(conf->device, conf->gid_index, &pv, e) < 0) {
		close(lfd);
		return e->err;
	}
	pv_ok = conf->device != NULL;
	log_info("probe", "serving probes on %s (RDMA device %s)", conf->listen,
		 pv_ok ? pv.name : "opened on first use");
	while (!stop || !*stop) {
		struct ctl c = { .fd = -1 };

		if (ctl_accept(lfd, NSEC_PER_SEC, &c) < 0)
			continue;
		serve_session(conf, &pv, &pv_ok, &c);
		ctl_close(&c);
		if (conf->once)
			break;
	}
	close(lfd);
	if (pv_ok)
		pv_close(&pv);
	return 0;
}
