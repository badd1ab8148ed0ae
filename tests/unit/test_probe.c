/* Unit tests of the probe engine without RDMA hardware: statistics against known data, and the
 * probe loop's error paths through a fake verbs layer (completion errors classified, a device
 * that never completes, a QP that refuses work), timing by a fake NIC clock (completion
 * timestamps), plus the control channel's deadlines. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agents/probe/internal.h"
#include "lib/timeutil.h"
#include "lib/vec.h"
#include "tests/unit/unit.h"

/* --- statistics ------------------------------------------------------------------------------ */

static void test_stats(void **state)
{
	double v[1000];
	struct probe_stats st = { 0 };

	(void)state;
	/* 1..1000 shuffled: nearest-rank percentiles are exact values */
	for (int i = 0; i < 1000; i++)
		v[i] = (double)((i * 7919) % 1000 + 1);
	st.errors[PE_TIMEOUT] = 3;
	probe_stats_compute(v, 1000, 1003, &st);
	assert_int_equal(st.n, 1003);
	assert_int_equal(st.ok, 1000);
	assert_int_equal(st.lost, 3);
	assert_int_equal(st.errors[PE_TIMEOUT], 3); /* kept */
	assert_true(st.min == 1 && st.max == 1000);
	assert_true(st.p50 == 500 && st.p99 == 990 && st.p999 == 999);
	assert_true(st.mean == 500.5);
	assert_true(st.stdev > 288.8 && st.stdev < 288.9); /* sample stdev of 1..1000: 288.82 */
	/* a single sample, and none */
	v[0] = 7;
	probe_stats_compute(v, 1, 1, &st);
	assert_true(st.p50 == 7 && st.p99 == 7 && st.stdev == 0);
	probe_stats_compute(v, 0, 5, &st);
	assert_int_equal(st.lost, 5);
	assert_true(st.max == 0);
	/* percentiles of a small set */
	{
		double s[4] = { 10, 20, 30, 40 };

		assert_true(vec_percentile(s, 4, 50) == 20);
		assert_true(vec_percentile(s, 4, 75) == 30);
		assert_true(vec_percentile(s, 4, 76) == 40);
		assert_true(vec_percentile(s, 4, 0) == 10);
	}
}

/* --- a fake verbs layer ------------------------------------------------------------------------ */

enum fake_mode { FAKE_OK, FAKE_STATUS_AT, FAKE_SILENT_AT, FAKE_POST_FAILS_AT, FAKE_UD_DROP_AT, FAKE_CORRUPT_AT };

static struct {
	enum fake_mode mode;
	unsigned at;
	enum ibv_wc_status status;
	struct ibv_wc pending[4];
	uint64_t pending_ts[4]; /* the NIC clock when each completion was written */
	int npending;
	unsigned posted, signaled, inlined;
	struct pv_session *s;
	/* the NIC clock: in cycles; each completion lat cycles after its post (an echo 2 lat),
	 * then the clock moves on; skew is added to every completion's timestamp */
	uint64_t clock, lat;
	int64_t skew;
	bool mono;    /* the clock is CLOCK_MONOTONIC in ns (for pv_clock_check) */
	bool no_clock;
} fk;

static int fake_read_clock(struct pv_ctx *p, uint64_t *ret)
{
	if (fk.no_clock)
		return -EOPNOTSUPP;
	/* a counter of clock_mask's width, as the device's */
	*ret = fk.mono ? (uint64_t)tu_mono_ns() : fk.clock & (p->clock_mask ? p->clock_mask : UINT64_MAX);
	return 0;
}

static void fake_complete(struct ibv_wc wc, unsigned lats)
{
	uint64_t mask = fk.s->p->clock_mask ? fk.s->p->clock_mask : UINT64_MAX;

	fk.pending_ts[fk.npending] = (fk.clock + lats * fk.lat + (uint64_t)fk.skew) & mask;
	fk.pending[fk.npending++] = wc;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	unsigned k = fk.posted++;
	struct ibv_wc wc = { .wr_id = wr->wr_id, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RDMA_WRITE };

	(void)qp;
	(void)bad;
	if (fk.mode == FAKE_POST_FAILS_AT && k == fk.at)
		return ENOMEM;
	if (fk.mode == FAKE_SILENT_AT && k >= fk.at)
		return 0; /* accepted, never completes */
	if (fk.mode == FAKE_STATUS_AT && k == fk.at)
		wc.status = fk.status;
	if (fk.s->pingpong) {
		/* the peer polls its memory and writes the same probe back into ours; unsignaled
		 * writes complete only when they fail */
		fk.inlined += !!(wr->send_flags & IBV_SEND_INLINE);
		if (wc.status == IBV_WC_SUCCESS) {
			uint8_t *slot = fk.s->p->pool +
					(wr->wr.rdma.remote_addr == fk.s->peer_addr2 ? PV_OFF_TARGET2 : PV_OFF_TARGET);

			assert_true(wr->wr.rdma.remote_addr == (k & 1 ? fk.s->peer_addr2 : fk.s->peer_addr));
			memcpy(slot, (void *)(uintptr_t)wr->sg_list->addr, fk.s->size);
			if (fk.mode == FAKE_CORRUPT_AT && k == fk.at)
				slot[10] ^= 0xff;
		}
		if (!(wr->send_flags & IBV_SEND_SIGNALED) && wc.status == IBV_WC_SUCCESS)
			return 0;
		fk.signaled += wc.status == IBV_WC_SUCCESS;
	}
	if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		/* the remote counter's old value lands in the local result */
		uint64_t old = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? wr->wr.atomic.compare_add : k;

		memcpy((void *)(uintptr_t)wr->sg_list->addr, &old, 8);
	}
	fake_complete(wc, 1);
	if (wr->opcode == IBV_WR_SEND && fk.s->op == PROBE_UD &&
	    !(fk.mode == FAKE_UD_DROP_AT && k == fk.at)) {
		/* the echo arrives in receive slot 0 */
		struct ibv_wc r = { .wr_id = 0, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
				    .byte_len = PV_GRH + fk.s->size };

		memcpy(fk.s->p->pool + PV_OFF_RECV + PV_GRH, (void *)(uintptr_t)wr->sg_list->addr,
		       fk.s->size);
		fake_complete(r, 2);
	}
	fk.clock += 10 * fk.lat;
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)wr;
	(void)bad;
	return 0;
}

static int fake_poll_cq(struct pv_ctx *p, int n, struct ibv_wc *wc, uint64_t *ts)
{
	(void)p;
	if (!fk.npending || n < 1)
		return 0;
	wc[0] = fk.pending[0];
	if (ts)
		ts[0] = fk.pending_ts[0];
	fk.npending--;
	memmove(fk.pending, fk.pending + 1, (size_t)fk.npending * sizeof(fk.pending[0]));
	memmove(fk.pending_ts, fk.pending_ts + 1, (size_t)fk.npending * sizeof(fk.pending_ts[0]));
	return 1;
}

static const struct pv_ops fake_ops = { fake_post_send, fake_post_recv, fake_poll_cq, fake_read_clock };

static struct ibv_mr fake_mr = { .lkey = 1, .rkey = 2 };

static void setup_session(struct pv_ctx *p, struct pv_session *s, enum probe_op op, unsigned size)
{
	memset(p, 0, sizeof(*p));
	memset(s, 0, sizeof(*s));
	memset(&fk, 0, sizeof(fk));
	p->pool = calloc(1, PV_POOL);
	p->mr = &fake_mr;
	p->cq = (struct ibv_cq *)p; /* never dereferenced by the fake */
	p->ops = &fake_ops;
	s->p = p;
	s->op = op;
	s->size = size;
	s->paths = 1;
	s->qp[0] = (struct ibv_qp *)p;
	fk.s = s;
}

/* Runs the client loop; the samples land in samples when not NULL (iters entries). */
static void run(struct pv_session *s, unsigned iters, int64_t timeout, size_t *n, uint64_t *errors,
		uint64_t *data, double *samples)
{
	double *v = samples ? samples : calloc(iters, sizeof(double));
	uint32_t last = 0;

	assert_int_equal(pv_client_loop(s, iters, timeout, v, NULL, n, errors, data, &last), 0);
	for (size_t i = 0; i < *n; i++)
		assert_true(v[i] >= 0);
	if (!samples)
		free(v);
}

static void test_probe_loop_errors(void **state)
{
	struct pv_ctx p;
	struct pv_session s;
	uint64_t errors[PE_NERRS], data;
	size_t n;
	static const struct {
		enum ibv_wc_status st;
		enum probe_err want;
	} cases[] = {
		{ IBV_WC_RNR_RETRY_EXC_ERR, PE_RNR_RETRY },   { IBV_WC_RETRY_EXC_ERR, PE_TRANSPORT_RETRY },
		{ IBV_WC_REM_ACCESS_ERR, PE_REMOTE_ACCESS },  { IBV_WC_REM_OP_ERR, PE_REMOTE_OP },
		{ IBV_WC_LOC_PROT_ERR, PE_LOCAL },	      { IBV_WC_WR_FLUSH_ERR, PE_FLUSHED },
		{ IBV_WC_GENERAL_ERR, PE_OTHER },
	};

	(void)state;
	/* all good: every probe a sample */
	setup_session(&p, &s, PROBE_WRITE, 64);
	memset(errors, 0, sizeof(errors));
	run(&s, 100, NSEC_PER_SEC, &n, errors, &data, NULL);
	assert_int_equal(n, 100);
	for (int i = 0; i < PE_NERRS; i++)
		assert_int_equal(errors[i], 0);
	free(p.pool);
	/* a completion error stops an RC run: classified, the rest is lost (not hidden) */
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		setup_session(&p, &s, PROBE_SEND, 64);
		fk.mode = FAKE_STATUS_AT;
		fk.at = 10;
		fk.status = cases[c].st;
		memset(errors, 0, sizeof(errors));
		run(&s, 100, NSEC_PER_SEC, &n, errors, &data, NULL);
		assert_int_equal(n, 10);
		assert_int_equal(errors[cases[c].want], 1);
		free(p.pool);
	}
	/* silence: the deadline, not a hang */
	setup_session(&p, &s, PROBE_READ, 64);
	fk.mode = FAKE_SILENT_AT;
	fk.at = 5;
	memset(errors, 0, sizeof(errors));
	{
		int64_t t0 = tu_mono_ns();

		run(&s, 100, 50 * NSEC_PER_MSEC, &n, errors, &data, NULL);
		assert_true(tu_mono_ns() - t0 < 2 * NSEC_PER_SEC);
	}
	assert_int_equal(n, 5);
	assert_int_equal(errors[PE_TIMEOUT], 1);
	/* READ checks the data it got: the fake returned nothing, all 5 are data errors */
	assert_int_equal(data, 5);
	free(p.pool);
	/* a QP that refuses a post */
	setup_session(&p, &s, PROBE_WRITE, 64);
	fk.mode = FAKE_POST_FAILS_AT;
	fk.at = 3;
	memset(errors, 0, sizeof(errors));
	run(&s, 100, NSEC_PER_SEC, &n, errors, &data, NULL);
	assert_int_equal(n, 3);
	assert_int_equal(errors[PE_LOCAL], 1);
	free(p.pool);
	/* atomics: the old values are checked */
	setup_session(&p, &s, PROBE_FAA, 8);
	memset(errors, 0, sizeof(errors));
	run(&s, 50, NSEC_PER_SEC, &n, errors, &data, NULL);
	assert_int_equal(n, 50);
	assert_int_equal(data, 0);
	free(p.pool);
	/* UD: a lost datagram is a timeout, and the run goes on */
	setup_session(&p, &s, PROBE_UD, 64);
	fk.mode = FAKE_UD_DROP_AT;
	fk.at = 7;
	memset(errors, 0, sizeof(errors));
	run(&s, 20, 20 * NSEC_PER_MSEC, &n, errors, &data, NULL);
	assert_int_equal(n, 19);
	assert_int_equal(errors[PE_TIMEOUT], 1);
	assert_int_equal(data, 0);
	free(p.pool);
}

/* WRITE ping-pong (perftest's ib_write_lat method) through the fake: the peer's write lands in
 * our memory, samples are half round trips, one write in PV_PP_SIGNAL is signaled */
static void run_pp(struct pv_session *s, unsigned iters, int64_t timeout, size_t *n, uint64_t *errors,
		   uint64_t *data)
{
	double *samples = calloc(iters, sizeof(double));
	uint32_t last = 0;

	s->pingpong = true;
	s->inline_max = 220;
	s->peer_addr = 0x1000; /* even probes land in the peer's first target, odd ones in its second */
	s->peer_addr2 = 0x2000;
	memset(errors, 0, PE_NERRS * sizeof(*errors));
	assert_int_equal(pv_pp_client_loop(s, iters, timeout, samples, n, errors, data, &last), 0);
	for (size_t i = 0; i < *n; i++)
		assert_true(samples[i] >= 0);
	free(samples);
}

static void test_pingpong(void **state)
{
	struct pv_ctx p;
	struct pv_session s;
	uint64_t errors[PE_NERRS], data;
	size_t n;

	(void)state;
	setup_session(&p, &s, PROBE_WRITE, 64);
	run_pp(&s, 100, NSEC_PER_SEC, &n, errors, &data);
	assert_int_equal(n, 100);
	assert_int_equal(data, 0);
	for (int i = 0; i < PE_NERRS; i++)
		assert_int_equal(errors[i], 0);
	assert_int_equal(fk.signaled, 100 / PV_PP_SIGNAL + 1); /* on the schedule, and the last */
	assert_int_equal(fk.inlined, 100);
	free(p.pool);
	/* too big for inline: posted from the registered pool */
	setup_session(&p, &s, PROBE_WRITE, 4096);
	run_pp(&s, 20, NSEC_PER_SEC, &n, errors, &data);
	assert_int_equal(n, 20);
	assert_int_equal(fk.inlined, 0);
	free(p.pool);
	/* what came back is checked */
	setup_session(&p, &s, PROBE_WRITE, 64);
	fk.mode = FAKE_CORRUPT_AT;
	fk.at = 7;
	run_pp(&s, 30, NSEC_PER_SEC, &n, errors, &data);
	assert_int_equal(n, 30);
	assert_int_equal(data, 1);
	free(p.pool);
	setup_session(&p, &s, PROBE_WRITE, 64);
	fk.mode = FAKE_CORRUPT_AT;
	fk.at = 29; /* the last answer is checked after the loop */
	run_pp(&s, 30, NSEC_PER_SEC, &n, errors, &data);
	assert_int_equal(data, 1);
	free(p.pool);
	/* a peer that stops answering: a timeout at the deadline, the rest lost */
	setup_session(&p, &s, PROBE_WRITE, 64);
	fk.mode = FAKE_SILENT_AT;
	fk.at = 5;
	run_pp(&s, 30, 50 * NSEC_PER_MSEC, &n, errors, &data);
	assert_int_equal(n, 5);
	assert_int_equal(errors[PE_TIMEOUT], 1);
	free(p.pool);
	/* an unsignaled write that fails still completes: classified, not a timeout */
	setup_session(&p, &s, PROBE_WRITE, 64);
	fk.mode = FAKE_STATUS_AT;
	fk.at = 3;
	fk.status = IBV_WC_REM_ACCESS_ERR;
	run_pp(&s, 30, NSEC_PER_SEC, &n, errors, &data);
	assert_int_equal(n, 3);
	assert_int_equal(errors[PE_REMOTE_ACCESS], 1);
	assert_int_equal(errors[PE_TIMEOUT], 0);
	free(p.pool);
}

/* The server's poll says how many completions it took (0: none queued), so that it can drain
 * the queue when the client is done: it took at most 8 a poll, and a server behind by 12
 * counted 96 of 100 sends (CI, soft-RoCE). */
static void test_server_poll_counts(void **state)
{
	struct pv_ctx p;
	struct pv_session s;
	uint64_t received = 0, bad = 0;
	struct ibv_wc r = { .wr_id = 0, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV, .byte_len = 64 };

	(void)state;
	setup_session(&p, &s, PROBE_SEND, 64);
	assert_int_equal(pv_server_poll(&s, &received, &bad), 0);
	pv_pattern(p.pool + PV_OFF_RECV, 64, 7);
	fake_complete(r, 1);
	fake_complete(r, 1);
	assert_int_equal(pv_server_poll(&s, &received, &bad), 1); /* (the fake gives one a poll) */
	assert_int_equal(pv_server_poll(&s, &received, &bad), 1);
	assert_int_equal(pv_server_poll(&s, &received, &bad), 0);
	assert_true(received == 2 && bad == 0);
	free(p.pool);
}

static void test_pattern(void **state)
{
	uint8_t buf[256];

	(void)state;
	pv_pattern(buf, sizeof(buf), 42);
	assert_true(pv_pattern_ok(buf, sizeof(buf), 42));
	assert_false(pv_pattern_ok(buf, sizeof(buf), 43));
	buf[100] ^= 1;
	assert_false(pv_pattern_ok(buf, sizeof(buf), 42));
}

/* --- the control channel's deadlines ------------------------------------------------------------ */

static void test_ctl_deadlines(void **state)
{
	struct rf_err e = { 0 };
	struct ctl c = { .fd = -1 }, srv = { .fd = -1 };
	int lfd = ctl_listen("127.0.0.1:0", &e), sv[2];
	json_t *msg = NULL;
	int64_t t0;

	(void)state;
	assert_true(lfd >= 0);
	close(lfd);
	/* a peer that never answers: ctl_recv returns at its deadline */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c.fd = sv[0];
	t0 = tu_mono_ns();
	assert_int_equal(ctl_recv(&c, &msg, 100 * NSEC_PER_MSEC), -ETIMEDOUT);
	assert_true(tu_mono_ns() - t0 < NSEC_PER_SEC);
	/* two messages in one read, then garbage */
	assert_int_equal(write(sv[1], "{\"a\":1}\n{\"b\":2}\nnot json\n", 25), 25);
	assert_int_equal(ctl_recv(&c, &msg, NSEC_PER_SEC), 0);
	assert_int_equal(json_integer_value(json_object_get(msg, "a")), 1);
	json_decref(msg);
	assert_int_equal(ctl_recv(&c, &msg, NSEC_PER_SEC), 0);
	assert_int_equal(json_integer_value(json_object_get(msg, "b")), 2);
	json_decref(msg);
	assert_int_equal(ctl_recv(&c, &msg, NSEC_PER_SEC), -EBADMSG);
	/* the peer goes away */
	close(sv[1]);
	assert_int_equal(ctl_recv(&c, &msg, NSEC_PER_SEC), -ECONNRESET);
	ctl_close(&c);
	/* nobody listens */
	assert_true(ctl_connect("127.0.0.1", 1, NSEC_PER_SEC, &srv, &e) < 0);
	assert_string_equal(e.code, "PEER_UNREACHABLE");
	/* a session refused for a bad size, before anything is set up */
	{
		struct probe_client_conf cc = { .host = "127.0.0.1", .port = 1, .op = PROBE_WRITE,
						.size = 100000, .iters = 10, .gid_index = -1 };
		struct probe_result r;

		assert_true(probe_client_run(&cc, &r, &e) < 0);
		assert_string_equal(e.code, "BAD_SIZE");
		/* UD at most one MTU, UDP 65000 bytes: refused as such (the API refuses such plans) */
		cc.op = PROBE_UD;
		cc.size = 8192;
		assert_true(probe_client_run(&cc, &r, &e) < 0);
		assert_string_equal(e.code, "BAD_SIZE");
		assert_string_equal(e.msg, "a UD probe is at most 4096 bytes (a UD message fits in one MTU)");
		cc.op = PROBE_UDP;
		cc.size = 65536;
		assert_true(probe_client_run(&cc, &r, &e) < 0);
		assert_string_equal(e.msg, "a UDP probe is at most 65000 bytes");
	}
}

/* --- the NIC clock ------------------------------------------------------------------------------- */

/* The session's device has a NIC clock of 1 GHz and mask's width. */
static void nic_clock_on(struct pv_ctx *p, uint64_t mask)
{
	p->clock_khz = 1000000;
	p->clock_mask = mask;
	p->nic_clock = true;
}

static void *serve_once(void *arg)
{
	struct probe_server_conf conf = { .listen = "127.0.0.1:0", .gid_index = -1, .once = true,
					  .timeout_ns = NSEC_PER_SEC };
	struct rf_err e = { 0 };

	probe_server_serve(&conf, *(int *)arg, NULL, &e);
	return NULL;
}

/* A client's timeout_ms beyond int64 nanoseconds is cut to an hour, not overflowed (UBSan:
 * signed overflow in the server, from a message anyone who reaches the port can send; seen
 * while writing fuzz_probe, whose corpus has it). */
static void test_huge_timeout(void **state)
{
	struct rf_err e = { 0 };
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int lfd = ctl_listen("127.0.0.1:0", &e);
	struct ctl c = { .fd = -1 };
	json_t *hello, *ans = NULL;
	pthread_t th;

	(void)state;
	assert_true(lfd >= 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(pthread_create(&th, NULL, serve_once, &lfd), 0);
	assert_int_equal(ctl_connect("127.0.0.1", ntohs(sa.sin_port), NSEC_PER_SEC, &c, &e), 0);
	hello = json_pack("{s:s,s:i,s:i,s:I}", "op", "udp", "size", 64, "iters", 1000000, "timeout_ms",
			  (json_int_t)9223372036854775LL);
	assert_int_equal(ctl_send(&c, hello, NSEC_PER_SEC), 0);
	assert_int_equal(ctl_recv(&c, &ans, NSEC_PER_SEC), 0);
	assert_true(json_is_true(json_object_get(ans, "ok")));
	ctl_close(&c); /* the server ends the session */
	pthread_join(th, NULL);
	json_decref(hello);
	json_decref(ans);
}

static void test_nic_clock(void **state)
{
	struct pv_ctx p;
	struct pv_session s;
	double samples[64];
	uint64_t errors[PE_NERRS], data;
	size_t n;

	(void)state;
	/* a 1 GHz NIC clock of 48 bits that wraps during the run; each completion 500 ns after
	 * its post: every sample is exactly 0.5 us, whatever the host's own timing was */
	setup_session(&p, &s, PROBE_WRITE, 64);
	nic_clock_on(&p, (UINT64_C(1) << 48) - 1);
	fk.clock = p.clock_mask - 20 * 500;
	fk.lat = 500;
	memset(errors, 0, sizeof(errors));
	run(&s, 64, NSEC_PER_SEC, &n, errors, &data, samples);
	assert_int_equal(data, 0);
	assert_int_equal(n, 64);
	assert_int_equal(s.nic_samples, 64);
	assert_int_equal(s.clock_fallbacks, 0);
	for (size_t i = 0; i < n; i++)
		assert_true(samples[i] > 0.4999 && samples[i] < 0.5001);
	free(p.pool);
	/* UD: from the post to the echo's arrival (two lat) */
	setup_session(&p, &s, PROBE_UD, 64);
	nic_clock_on(&p, UINT64_MAX);
	fk.lat = 400;
	memset(errors, 0, sizeof(errors));
	run(&s, 16, NSEC_PER_SEC, &n, errors, &data, samples);
	assert_int_equal(data, 0);
	assert_int_equal(n, 16);
	assert_int_equal(s.nic_samples, 16);
	for (size_t i = 0; i < n; i++)
		assert_true(samples[i] > 0.7999 && samples[i] < 0.8001);
	free(p.pool);
	/* timestamps that cannot be (before the post: a clock in another mode): the CPU's
	 * measure, counted, never a negative or wrapped-around sample */
	setup_session(&p, &s, PROBE_SEND, 64);
	nic_clock_on(&p, (UINT64_C(1) << 48) - 1);
	fk.lat = 100;
	fk.skew = -1000;
	memset(errors, 0, sizeof(errors));
	run(&s, 32, NSEC_PER_SEC, &n, errors, &data, samples);
	assert_int_equal(data, 0);
	assert_int_equal(n, 32);
	assert_int_equal(s.nic_samples, 0);
	assert_int_equal(s.clock_fallbacks, 32);
	for (size_t i = 0; i < n; i++)
		assert_true(samples[i] >= 0 && samples[i] < 1e6);
	free(p.pool);
	/* the clock disappears mid-run: a local error, the rest lost (not timed another way) */
	setup_session(&p, &s, PROBE_WRITE, 64);
	nic_clock_on(&p, 0);
	fk.no_clock = true;
	memset(errors, 0, sizeof(errors));
	run(&s, 8, NSEC_PER_SEC, &n, errors, &data, samples);
	assert_int_equal(n, 0);
	assert_int_equal(errors[PE_LOCAL], 1);
	free(p.pool);
	/* pv_clock_check: a clock that runs at the rate the device says passes; one read in other
	 * units (a real-time clock in ns taken for 156.25 MHz cycles) does not; no clock, no */
	setup_session(&p, &s, PROBE_WRITE, 64);
	fk.mono = true;
	p.clock_khz = 1000000;
	assert_true(pv_clock_check(&p) && p.nic_clock);
	p.clock_khz = 156250;
	assert_false(pv_clock_check(&p) || p.nic_clock);
	fk.no_clock = true;
	p.clock_khz = 1000000;
	assert_false(pv_clock_check(&p));
	p.clock_khz = 0;
	fk.no_clock = false;
	assert_false(pv_clock_check(&p));
	free(p.pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_probe_loop_errors),
		cmocka_unit_test(test_pingpong),
		cmocka_unit_test(test_nic_clock),
		cmocka_unit_test(test_pattern), cmocka_unit_test(test_server_poll_counts),
		cmocka_unit_test(test_ctl_deadlines),
		cmocka_unit_test(test_huge_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
