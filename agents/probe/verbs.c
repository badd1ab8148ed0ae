/* The verbs data path of the probe engine: one context per device (PD, CQ, one registered
 * pool), queue pairs per session, and the probe loop.  QP state changes live in
 * pv_connect() only. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents/probe/internal.h"
#include "lib/log.h"
#include "lib/strutil.h"
#include "lib/timeutil.h"

static int real_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return ibv_post_send(qp, wr, bad);
}

static int real_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}

static int real_poll_cq(struct pv_ctx *p, int n, struct ibv_wc *wc, uint64_t *ts)
{
	struct ibv_cq_ex *cq = p->cq_ex;
	struct ibv_poll_cq_attr attr = { 0 };
	int k = 0, r;

	if (!cq)
		return ibv_poll_cq(p->cq, n, wc);
	/* the extended CQ is polled only through its own API */
	if (n < 1 || (r = ibv_start_poll(cq, &attr)) == ENOENT)
		return 0;
	if (r)
		return -r;
	do {
		memset(&wc[k], 0, sizeof(wc[k]));
		wc[k].wr_id = cq->wr_id;
		wc[k].status = cq->status;
		if (cq->status == IBV_WC_SUCCESS) {
			wc[k].opcode = ibv_wc_read_opcode(cq);
			wc[k].byte_len = ibv_wc_read_byte_len(cq);
			wc[k].src_qp = ibv_wc_read_src_qp(cq);
		}
		if (ts)
			ts[k] = ibv_wc_read_completion_ts(cq);
		k++;
	} while (k < n && ibv_next_poll(cq) == 0);
	ibv_end_poll(cq);
	return k;
}

static int real_read_clock(struct pv_ctx *p, uint64_t *ret)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	int r = ibv_query_rt_values_ex(p->ctx, &v);

	if (r)
		return r > 0 ? -r : r;
	if (!(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return -EOPNOTSUPP;
	*ret = (uint64_t)v.raw_clock.tv_nsec; /* the providers (mlx4, mlx5) put the cycles there */
	return 0;
}

const struct pv_ops pv_real_ops = { real_post_send, real_post_recv, real_poll_cq, real_read_clock };

double pv_cycles_us(const struct pv_ctx *p, uint64_t from, uint64_t to)
{
	uint64_t d = (to - from) & (p->clock_mask ? p->clock_mask : UINT64_MAX);

	return p->clock_khz ? (double)d * 1000.0 / (double)p->clock_khz : 0;
}

bool pv_clock_check(struct pv_ctx *p)
{
	uint64_t c1, c2;
	int64_t t1, t2;
	struct timespec pause = { 0, 2 * 1000 * 1000 };
	double nic_us, cpu_us;

	p->nic_clock = false;
	if (!p->clock_khz || !p->ops->read_clock)
		return false;
	t1 = tu_mono_ns();
	if (p->ops->read_clock(p, &c1) < 0)
		return false;
	nanosleep(&pause, NULL);
	if (p->ops->read_clock(p, &c2) < 0)
		return false;
	t2 = tu_mono_ns();
	nic_us = pv_cycles_us(p, c1, c2);
	cpu_us = (double)(t2 - t1) / 1000.0;
	p->nic_clock = nic_us > 0 && nic_us <= cpu_us * 1.05 && nic_us >= 0.95 * 2000.0;
	if (!p->nic_clock)
		log_info("probe", "%s: the NIC clock (%" PRIu64 " kHz) does not agree with the CPU's "
			 "(%.0f us against %.0f us): probes are timed with CLOCK_MONOTONIC",
			 p->name, p->clock_khz, nic_us, cpu_us);
	return p->nic_clock;
}

/* The CQ: with completion timestamps when the device has them. */
static int open_cq(struct pv_ctx *p, int cqe)
{
	struct ibv_device_attr_ex a;

	memset(&a, 0, sizeof(a));
	if (ibv_query_device_ex(p->ctx, NULL, &a) == 0 && a.completion_timestamp_mask && a.hca_core_clock) {
		struct ibv_cq_init_attr_ex ca = {
			.cqe = (uint32_t)cqe,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SRC_QP |
				    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
		};

		p->cq_ex = ibv_create_cq_ex(p->ctx, &ca);
		if (p->cq_ex) {
			p->cq = ibv_cq_ex_to_cq(p->cq_ex);
			p->clock_khz = a.hca_core_clock;
			p->clock_mask = a.completion_timestamp_mask;
			pv_clock_check(p);
			return 0;
		}
		log_info("probe", "%s: no CQ with completion timestamps (%s): probes are timed with "
			 "CLOCK_MONOTONIC", p->name, strerror(errno));
	}
	p->cq = ibv_create_cq(p->ctx, cqe, NULL, NULL, 0);
	return p->cq ? 0 : -ENOMEM;
}

enum probe_err pv_classify(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return PE_RNR_RETRY;
	case IBV_WC_RETRY_EXC_ERR:
		return PE_TRANSPORT_RETRY;
	case IBV_WC_REM_ACCESS_ERR:
		return PE_REMOTE_ACCESS;
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
		return PE_REMOTE_OP;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_LOC_RDD_VIOL_ERR:
	case IBV_WC_MW_BIND_ERR:
	case IBV_WC_BAD_RESP_ERR:
		return PE_LOCAL;
	case IBV_WC_WR_FLUSH_ERR:
		return PE_FLUSHED;
	default:
		return PE_OTHER;
	}
}

/* The payload of probe seq: a 4-byte sequence number, then bytes derived from it. */
void pv_pattern(uint8_t *buf, unsigned size, uint32_t seq)
{
	memcpy(buf, &seq, size < 4 ? size : 4);
	for (unsigned i = 4; i < size; i++)
		buf[i] = (uint8_t)(seq * 31 + i * 7 + 13);
}

bool pv_pattern_ok(const uint8_t *buf, unsigned size, uint32_t seq)
{
	uint32_t got;

	memcpy(&got, buf, size < 4 ? size : 4);
	if (size >= 4 && got != seq)
		return false;
	for (unsigned i = 4; i < size; i++)
		if (buf[i] != (uint8_t)(seq * 31 + i * 7 + 13))
			return false;
	return true;
}

/* --- the context ------------------------------------------------------------------------------ */

static int pick_gid(struct pv_ctx *p, struct rf_err *e)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(p->ctx, p->port, &pa))
		return rf_err_set(e, -EIO, "DEVICE_ERROR", p->name, "cannot query port %u", p->port);
	if (pa.state != IBV_PORT_ACTIVE)
		return rf_err_set(e, -ENETDOWN, "PORT_DOWN", p->name, "port %u is not active", p->port);
	p->mtu = pa.active_mtu;
	if (p->gid_index >= 0) {
		if (ibv_query_gid(p->ctx, p->port, p->gid_index, &p->gid))
			return rf_err_set(e, -ENOENT, "BAD_GID_INDEX", p->name, "no GID %d", p->gid_index);
		return 0;
	}
	/* the first RoCE v2 GID that carries an IPv4 address (::ffff:a.b.c.d), as perftest -x */
	for (int i = 0; i < 16 && i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry ge;

		if (ibv_query_gid_ex(p->ctx, p->port, (uint32_t)i, &ge, 0))
			continue;
		if (ge.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(ge.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			p->gid_index = i;
			p->gid = ge.gid;
			return 0;
		}
	}
	/* InfiniBand or no IPv4 address: the first GID */
	if (ibv_query_gid(p->ctx, p->port, 0, &p->gid))
		return rf_err_set(e, -ENOENT, "NO_GID", p->name, "the port has no usable GID");
	p->gid_index = 0;
	return 0;
}

int pv_open(const char *device, int gid_index, struct pv_ctx *p, struct rf_err *e)
{
	struct ibv_device **list;
	int n = 0, r;

	memset(p, 0, sizeof(*p));
	p->ops = &pv_real_ops;
	p->port = 1;
	p->gid_index = gid_index;
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		if (list)
			ibv_free_device_list(list);
		return rf_err_set(e, -ENODEV, "NO_RDMA_DEVICE", device,
				  "this host has no RDMA device (verbs probes need one; udp and tcp do not)");
	}
	for (int i = 0; i < n && !p->ctx; i++)
		if (!device || !strcmp(ibv_get_device_name(list[i]), device)) {
			p->ctx = ibv_open_device(list[i]);
			str_copy(p->name, sizeof(p->name), ibv_get_device_name(list[i]));
		}
	if (!p->ctx) {
		char names[256] = "";

		for (int i = 0; i < n; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
				 ibv_get_device_name(list[i]));
		ibv_free_device_list(list);
		return rf_err_set(e, -ENODEV, "UNKNOWN_DEVICE", device, "no RDMA device '%s' (there is: %s)",
				  device ? device : "", names);
	}
	ibv_free_device_list(list);
	if ((r = pick_gid(p, e)) < 0)
		goto fail;
	p->pool = aligned_alloc(4096, PV_POOL);
	p->pd = ibv_alloc_pd(p->ctx);
	if (!p->pool || !p->pd || open_cq(p, 2 * PV_SLOTS + 2 * PV_MAX_PATHS + 8) < 0) {
		r = rf_err_set(e, -ENOMEM, "DEVICE_ERROR", p->name, "cannot allocate PD, CQ or memory");
		goto fail;
	}
	memset(p->pool, 0, PV_POOL);
	/* one registration for everything the probes touch: never on the probe path */
	p->mr = ibv_reg_mr(p->pd, p->pool, PV_POOL,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	if (!p->mr) {
		r = rf_err_set(e, -errno, "DEVICE_ERROR", p->name, "cannot register memory: %s", strerror(errno));
		goto fail;
	}
	return 0;
fail:
	pv_close(p);
	return r;
}

void pv_close(struct pv_ctx *p)
{
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->ctx)
		ibv_close_device(p->ctx);
	free(p->pool);
	memset(p, 0, sizeof(*p));
}

/* --- sessions ---------------------------------------------------------------------------------- */

int pv_session_create(struct pv_ctx *p, enum probe_op op, unsigned size, unsigned paths,
		      bool pingpong, struct pv_session *s, struct rf_err *e)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = p->cq,
		.recv_cq = p->cq,
		.qp_type = op == PROBE_UD ? IBV_QPT_UD : IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = PV_SLOTS, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	uint32_t rnd;

	memset(s, 0, sizeof(*s));
	s->p = p;
	s->op = op;
	s->size = size;
	if (pingpong && op != PROBE_WRITE)
		return rf_err_set(e, -EINVAL, "BAD_OP", "pingpong", "ping-pong is a mode of write probes");
	s->pingpong = pingpong;
	if (pingpong) {
		/* unsignaled writes queue up to PV_PP_SIGNAL deep; small ones go inline if the
		 * device takes them (perftest asks for 220 bytes on latency tests) */
		qa.cap.max_send_wr = 2 * PV_PP_SIGNAL;
		qa.cap.max_inline_data = size <= 220 ? 220 : 0;
	}
	s->paths = op == PROBE_UD || pingpong || paths < 1 ? 1 : paths > PV_MAX_PATHS ? PV_MAX_PATHS : paths;
	if (size > probe_op_max_size(op))
		return rf_err_set(e, -EINVAL, "BAD_SIZE", "size",
				  "a UD message fits in one MTU: at most 4096 bytes");
	if ((op == PROBE_CAS || op == PROBE_FAA) && size != 8)
		s->size = 8; /* atomics are 8 bytes */
	for (unsigned i = 0; i < s->paths; i++) {
		s->qp[i] = ibv_create_qp(p->pd, &qa);
		if (!s->qp[i] && qa.cap.max_inline_data) {
			qa.cap.max_inline_data = 0; /* the device has no inline data: without */
			s->qp[i] = ibv_create_qp(p->pd, &qa);
		}
		if (s->qp[i] && i == 0)
			s->inline_max = qa.cap.max_inline_data; /* what the device granted */
		if (!s->qp[i]) {
			pv_session_destroy(s);
			return rf_err_set(e, -errno, "DEVICE_ERROR", p->name, "cannot create a QP: %s",
					  strerror(errno));
		}
	}
	rnd = (uint32_t)tu_mono_ns();
	s->psn = rnd & 0xffffff;
	return 0;
}

void pv_session_destroy(struct pv_session *s)
{
	if (s->ah)
		ibv_destroy_ah(s->ah);
	for (unsigned i = 0; i < PV_MAX_PATHS; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	if (s->p && s->p->cq) {
		/* drain what the destroyed QPs left, so that the next session starts clean */
		struct ibv_wc wc[16];

		while (s->p->ops->poll_cq(s->p, 16, wc, NULL) > 0)
			;
	}
	memset(s, 0, sizeof(*s));
}

static void gid_hex(const union ibv_gid *g, char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", g->raw[i]);
}

static int gid_parse(const char *s, union ibv_gid *g)
{
	if (!s || strlen(s) != 32)
		return -EINVAL;
	for (int i = 0; i < 16; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		g->raw[i] = (uint8_t)v;
	}
	return 0;
}

json_t *pv_local_info(const struct pv_session *s)
{
	json_t *qpns = json_array();
	char gid[33];

	for (unsigned i = 0; i < s->paths; i++)
		json_array_append_new(qpns, json_integer(s->qp[i]->qp_num));
	gid_hex(&s->p->gid, gid);
	return json_pack("{s:o,s:I,s:s,s:I,s:I,s:I,s:I,s:i}", "qpns", qpns, "psn", (json_int_t)s->psn,
			 "gid", gid, "addr", (json_int_t)(uintptr_t)(s->p->pool + PV_OFF_TARGET), "addr2",
			 (json_int_t)(uintptr_t)(s->p->pool + PV_OFF_TARGET2), "rkey",
			 (json_int_t)s->p->mr->rkey, "atomic",
			 (json_int_t)(uintptr_t)(s->p->pool + PV_OFF_ATOMIC), "mtu", (int)s->p->mtu);
}

static int to_rts_rc(struct pv_session *s, unsigned i, uint32_t peer_psn, enum ibv_mtu mtu,
		     struct rf_err *e)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = s->p->port,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };
	struct ibv_qp *qp = s->qp[i];

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return rf_err_set(e, -EIO, "QP_ERROR", s->p->name, "QP to INIT failed");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = s->peer_qpn[i];
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = s->peer_gid;
	a.ah_attr.grh.sgid_index = (uint8_t)s->p->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	/* a flow label per path: RoCE v2 devices derive the UDP source port from it, which is
	 * what ECMP hashes on, so the paths spread over the fabric's routes */
	a.ah_attr.grh.flow_label = s->paths > 1 ? i + 1 : 0;
	a.ah_attr.port_num = s->p->port;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return rf_err_set(e, -EIO, "QP_ERROR", s->p->name, "QP to RTR failed (peer GID or QPN wrong?)");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = s->psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return rf_err_set(e, -EIO, "QP_ERROR", s->p->name, "QP to RTS failed");
	return 0;
}

static int to_rts_ud(struct pv_session *s, struct rf_err *e)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = s->p->port, .qkey = PV_QKEY };
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = s->p->port };

	if (ibv_modify_qp(s->qp[0], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return rf_err_set(e, -EIO, "QP_ERROR", s->p->name, "UD QP to INIT failed");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(s->qp[0], &a, IBV_QP_STATE))
		return rf_err_set(e, -EIO, "QP_ERROR", s->p->name, "UD QP to RTR failed");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s->psn;
	if (ibv_modify_qp(s->qp[0], &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return rf_err_set(e, -EIO, "QP_ERROR", s->p->name, "UD QP to RTS failed");
	ah.grh.dgid = s->peer_gid;
	ah.grh.sgid_index = (uint8_t)s->p->gid_index;
	ah.grh.hop_limit = 64;
	s->ah = ibv_create_ah(s->p->pd, &ah);
	if (!s->ah)
		return rf_err_set(e, -EIO, "DEVICE_ERROR", s->p->name, "cannot create an address handle");
	return 0;
}

int pv_connect(struct pv_session *s, json_t *peer, struct rf_err *e)
{
	json_t *qpns = json_object_get(peer, "qpns");
	enum ibv_mtu mtu = s->p->mtu;
	json_int_t pmtu = json_integer_value(json_object_get(peer, "mtu"));

	if (!json_is_array(qpns) || json_array_size(qpns) != s->paths ||
	    gid_parse(json_string_value(json_object_get(peer, "gid")), &s->peer_gid) < 0)
		return rf_err_set(e, -EPROTO, "BAD_PEER_INFO", NULL,
				  "the peer's connection data is incomplete (QPNs, GID)");
	for (unsigned i = 0; i < s->paths; i++)
		s->peer_qpn[i] = (uint32_t)json_integer_value(json_array_get(qpns, i));
	s->peer_addr = (uint64_t)json_integer_value(json_object_get(peer, "addr"));
	s->peer_addr2 = (uint64_t)json_integer_value(json_object_get(peer, "addr2"));
	if (s->pingpong && !s->peer_addr2)
		return rf_err_set(e, -EPROTO, "BAD_PEER_INFO", NULL,
				  "the peer does not do ping-pong (no second target in its connection data)");
	s->peer_atomic = (uint64_t)json_integer_value(json_object_get(peer, "atomic"));
	s->peer_rkey = (uint32_t)json_integer_value(json_object_get(peer, "rkey"));
	if (pmtu > 0 && pmtu < mtu)
		mtu = (enum ibv_mtu)pmtu; /* the smaller of the two ports' MTUs */
	if (s->op == PROBE_UD)
		return to_rts_ud(s, e);
	for (unsigned i = 0; i < s->paths; i++) {
		int r = to_rts_rc(s, i, (uint32_t)json_integer_value(json_object_get(peer, "psn")), mtu, e);

		if (r < 0)
			return r;
	}
	return 0;
}

static int post_recv_slot(struct pv_session *s, unsigned slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(s->p->pool + PV_OFF_RECV + (size_t)slot * PV_SLOT),
			       .length = PV_SLOT, .lkey = s->p->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return s->p->ops->post_recv(s->qp[slot % s->paths], &wr, &bad) ? -EIO : 0;
}

int pv_post_recvs(struct pv_session *s)
{
	if (s->op != PROBE_SEND && s->op != PROBE_UD)
		return 0;
	for (unsigned i = 0; i < PV_SLOTS; i++)
		if (post_recv_slot(s, i) < 0)
			return -EIO;
	return 0;
}

/* Busy-poll loops look at the clock (and the ping-pong at the CQ) once in this many spins: a
 * clock read is not free (a system call where the kernel does not trust the TSC, as in
 * emulated guests), and reading it on every spin shows in the latency. */
#define PV_SPIN_CHECK 1024

/* --- the probe loop ---------------------------------------------------------------------------- */

/* Waits for the completion of wr_id (or, with want_recv, any receive).  0 and *ret_wc (and its
 * NIC timestamp in *ret_ts, when the CQ has them), or -ETIMEDOUT. */
static int wait_wc(struct pv_session *s, uint64_t want_id, bool want_recv, int64_t deadline,
		   struct ibv_wc *ret_wc, uint64_t *ret_ts)
{
	unsigned spins = 0;

	for (;;) {
		struct ibv_wc wc;
		uint64_t ts = 0;
		int n = s->p->ops->poll_cq(s->p, 1, &wc, &ts);

		if (n < 0)
			return -EIO;
		if (n == 1) {
			bool is_recv = wc.opcode & IBV_WC_RECV;

			if (wc.status != IBV_WC_SUCCESS || (want_recv ? is_recv : (!is_recv && wc.wr_id == want_id))) {
				*ret_wc = wc;
				*ret_ts = ts;
				return 0;
			}
			if (is_recv && !want_recv)
				post_recv_slot(s, (unsigned)wc.wr_id); /* a stale echo: keep the slot */
			continue;
		}
		/* busy-poll (latency), checking the clock every few spins */
		if (++spins % PV_SPIN_CHECK == 0 && tu_mono_ns() > deadline)
			return -ETIMEDOUT;
	}
}

static int post_op(struct pv_session *s, unsigned path, uint32_t seq, uint64_t wr_id)
{
	struct pv_ctx *p = s->p;
	struct ibv_sge sge = { .addr = (uintptr_t)(p->pool + PV_OFF_LOCAL), .length = s->size,
			       .lkey = p->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	switch (s->op) {
	case PROBE_WRITE:
		pv_pattern(p->pool + PV_OFF_LOCAL, s->size, seq);
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = s->peer_addr;
		wr.wr.rdma.rkey = s->peer_rkey;
		break;
	case PROBE_READ:
		memset(p->pool + PV_OFF_LOCAL, 0, s->size);
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = s->peer_addr;
		wr.wr.rdma.rkey = s->peer_rkey;
		break;
	case PROBE_SEND:
	case PROBE_UD:
		pv_pattern(p->pool + PV_OFF_LOCAL, s->size, seq);
		wr.opcode = IBV_WR_SEND;
		if (s->op == PROBE_UD) {
			wr.wr.ud.ah = s->ah;
			wr.wr.ud.remote_qpn = s->peer_qpn[0];
			wr.wr.ud.remote_qkey = PV_QKEY;
		}
		break;
	case PROBE_CAS:
	case PROBE_FAA:
		sge.addr = (uintptr_t)(p->pool + PV_OFF_ATOMIC_RES);
		sge.length = 8;
		wr.opcode = s->op == PROBE_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = s->peer_atomic;
		wr.wr.atomic.rkey = s->peer_rkey;
		wr.wr.atomic.compare_add = s->op == PROBE_CAS ? seq : 1;
		wr.wr.atomic.swap = seq + 1;
		break;
	default:
		return -EINVAL;
	}
	return p->ops->post_send(s->qp[path], &wr, &bad) ? -EIO : 0;
}

/* The result of probe seq, read back where it landed locally. */
static bool check_result(struct pv_session *s, uint32_t seq, const struct ibv_wc *recv)
{
	const uint8_t *pool = s->p->pool;
	uint64_t v;

	switch (s->op) {
	case PROBE_READ: /* the server's target holds pattern 0 */
		return pv_pattern_ok(pool + PV_OFF_LOCAL, s->size, 0);
	case PROBE_CAS:
	case PROBE_FAA: /* the counter counts the probes: each one sees the value before it */
		memcpy(&v, pool + PV_OFF_ATOMIC_RES, 8);
		return v == seq;
	case PROBE_UD:
		return recv && pv_pattern_ok(pool + PV_OFF_RECV + recv->wr_id * PV_SLOT + PV_GRH, s->size, seq);
	default:
		return true; /* write, send: the server checks */
	}
}

int pv_client_loop(struct pv_session *s, unsigned iters, int64_t timeout_ns, double *samples,
		   uint8_t *sample_path, size_t *ret_n, uint64_t errors[PE_NERRS],
		   uint64_t *ret_data_errors, uint32_t *ret_last)
{
	size_t n = 0;
	bool nic = s->p->nic_clock;

	*ret_data_errors = 0;
	s->nic_samples = s->clock_fallbacks = 0;
	if (s->op == PROBE_UD && pv_post_recvs(s) < 0)
		return -EIO;
	for (uint32_t seq = 0; seq < iters; seq++) {
		unsigned path = seq % s->paths;
		struct ibv_wc wc, rwc = { 0 };
		uint64_t c0 = 0, cts = 0; /* NIC clock: before the post, and the completion's */
		int64_t t0, deadline;
		double cpu_us;
		int r;

		t0 = tu_mono_ns();
		deadline = t0 + timeout_ns;
		if (nic && s->p->ops->read_clock(s->p, &c0) < 0) {
			errors[PE_LOCAL]++;
			break; /* the NIC clock went away: the rest is lost, not timed differently */
		}
		if (post_op(s, path, seq, seq) < 0) {
			errors[PE_LOCAL]++;
			break; /* the QP is not usable: the rest is lost */
		}
		if (s->op == PROBE_UD) {
			/* the send's completion and the echo, in whichever order they come */
			bool sent = false, got = false, failed = false;
			unsigned spins = 0;

			while (!(sent && got) && !failed) {
				struct ibv_wc x;
				uint64_t xts = 0;
				int k = s->p->ops->poll_cq(s->p, 1, &x, &xts);

				if (k < 0) {
					errors[PE_OTHER]++;
					failed = true;
				} else if (k == 1) {
					if (x.status != IBV_WC_SUCCESS) {
						errors[pv_classify(x.status)]++;
						failed = true;
					} else if (x.opcode & IBV_WC_RECV) {
						if (pv_pattern_ok(s->p->pool + PV_OFF_RECV + x.wr_id * PV_SLOT + PV_GRH, 4, seq)) {
							rwc = x;
							cts = xts; /* the echo's arrival */
							got = true;
						} else {
							post_recv_slot(s, (unsigned)x.wr_id); /* a late echo */
						}
					} else if (x.wr_id == seq) {
						sent = true;
					}
				} else if (++spins % PV_SPIN_CHECK == 0 && tu_mono_ns() > deadline) {
					errors[PE_TIMEOUT]++;
					failed = true;
				}
			}
			if (failed)
				continue; /* a lost datagram; the next ping may pass */
		} else {
			r = wait_wc(s, seq, false, deadline, &wc, &cts);
			if (r == -ETIMEDOUT) {
				errors[PE_TIMEOUT]++;
				break; /* an RC QP with a probe outstanding cannot go on */
			}
			if (r < 0 || wc.status != IBV_WC_SUCCESS) {
				errors[r < 0 ? PE_OTHER : pv_classify(wc.status)]++;
				break;
			}
		}
		cpu_us = (double)(tu_mono_ns() - t0) / 1000.0;
		samples[n] = cpu_us;
		if (nic) {
			/* the NIC's measure lies inside the CPU's (read before the post, written before
			 * the poll saw it); anything else is a clock we misread: the CPU's, counted */
			double nic_us = pv_cycles_us(s->p, c0, cts);

			if (nic_us > 0 && nic_us <= cpu_us * 1.05 + 1.0) {
				samples[n] = nic_us;
				s->nic_samples++;
			} else {
				s->clock_fallbacks++;
			}
		}
		if (sample_path)
			sample_path[n] = (uint8_t)path;
		n++;
		if (!check_result(s, seq, s->op == PROBE_UD ? &rwc : NULL))
			(*ret_data_errors)++;
		if (s->op == PROBE_UD)
			post_recv_slot(s, (unsigned)rwc.wr_id);
		*ret_last = seq;
	}
	*ret_n = n;
	return 0;
}

/* --- WRITE ping-pong (internal.h) ----------------------------------------------------------------- */

static void pp_fill(uint8_t *buf, unsigned size, uint32_t seq)
{
	uint32_t mark = seq + 1;

	pv_pattern(buf, size - 4, seq);
	memcpy(buf + size - 4, &mark, 4);
}

static bool pp_ok(const uint8_t *buf, unsigned size, uint32_t seq)
{
	uint32_t mark;

	memcpy(&mark, buf + size - 4, 4);
	return mark == seq + 1 && pv_pattern_ok(buf, size - 4, seq);
}

/* Where probe seq lands on this side. */
static inline uint8_t *pp_slot(const struct pv_session *s, uint32_t seq)
{
	return s->p->pool + (seq & 1 ? PV_OFF_TARGET2 : PV_OFF_TARGET);
}

/* The mark of the last message in probe seq's slot (0: none yet). */
static inline uint32_t pp_mark(const struct pv_session *s, uint32_t seq)
{
	return __atomic_load_n((const uint32_t *)(pp_slot(s, seq) + s->size - 4), __ATOMIC_ACQUIRE);
}

/* Posts write seq to the peer (signaled one in PV_PP_SIGNAL, and the last); a signaled write's
 * completion is reaped before the next signaled one is posted, so the send queue never fills. */
static int pp_post(struct pv_session *s, uint32_t seq, bool last, int64_t deadline, uint64_t errors[PE_NERRS])
{
	struct pv_ctx *p = s->p;
	bool signaled = last || seq % PV_PP_SIGNAL == PV_PP_SIGNAL - 1;
	struct ibv_sge sge = { .addr = (uintptr_t)(p->pool + PV_OFF_LOCAL), .length = s->size,
			       .lkey = p->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = seq, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE },
			   *bad;
	struct ibv_wc wc;
	uint64_t ts;
	int r;

	/* the previous write from this buffer is out: the peer answered it */
	pp_fill(p->pool + PV_OFF_LOCAL, s->size, seq);
	wr.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) | (s->size <= s->inline_max ? IBV_SEND_INLINE : 0);
	wr.wr.rdma.remote_addr = seq & 1 ? s->peer_addr2 : s->peer_addr;
	wr.wr.rdma.rkey = s->peer_rkey;
	if (p->ops->post_send(s->qp[0], &wr, &bad)) {
		errors[PE_LOCAL]++;
		return -EIO;
	}
	if (!signaled)
		return 0;
	r = wait_wc(s, seq, false, deadline, &wc, &ts);
	if (r == -ETIMEDOUT) {
		errors[PE_TIMEOUT]++;
		return r;
	}
	if (r < 0 || wc.status != IBV_WC_SUCCESS) {
		errors[r < 0 ? PE_OTHER : pv_classify(wc.status)]++;
		return -EIO;
	}
	return 0;
}

/* Busy-polls until probe seq has landed here (0), the deadline passes (-ETIMEDOUT), or an
 * unsignaled write failed (-EIO, the error counted: failures complete even unsignaled). */
static int pp_wait(struct pv_session *s, uint32_t seq, int64_t deadline, uint64_t errors[PE_NERRS])
{
	unsigned spins = 0;

	while (pp_mark(s, seq) != seq + 1) {
		if (++spins % PV_SPIN_CHECK == 0) {
			struct ibv_wc wc;

			if (s->p->ops->poll_cq(s->p, 1, &wc, NULL) == 1 && wc.status != IBV_WC_SUCCESS) {
				errors[pv_classify(wc.status)]++;
				return -EIO;
			}
			if (tu_mono_ns() > deadline)
				return -ETIMEDOUT;
		}
	}
	return 0;
}

int pv_pp_client_loop(struct pv_session *s, unsigned iters, int64_t timeout_ns, double *samples,
		      size_t *ret_n, uint64_t errors[PE_NERRS], uint64_t *ret_data_errors,
		      uint32_t *ret_last)
{
	int64_t t = tu_mono_ns();
	size_t n = 0;

	*ret_data_errors = 0;
	for (uint32_t seq = 0; seq < iters; seq++) {
		int64_t t1;
		int r;

		if (pp_post(s, seq, seq + 1 == iters, t + timeout_ns, errors) < 0)
			break;
		/* the previous answer, while this probe is in flight */
		if (seq > 0 && !pp_ok(pp_slot(s, seq - 1), s->size, seq - 1))
			(*ret_data_errors)++;
		r = pp_wait(s, seq, t + timeout_ns, errors);
		t1 = tu_mono_ns(); /* the end of this probe, the start of the next */
		if (r == -ETIMEDOUT)
			errors[PE_TIMEOUT]++;
		if (r < 0)
			break; /* an RC QP with a probe outstanding cannot go on */
		samples[n++] = (double)(t1 - t) / 2000.0; /* half the round trip, as perftest */
		t = t1;
		*ret_last = seq;
	}
	if (n && !pp_ok(pp_slot(s, (uint32_t)n - 1), s->size, (uint32_t)n - 1))
		(*ret_data_errors)++;
	*ret_n = n;
	return 0;
}

int pv_pp_server_loop(struct pv_session *s, struct ctl *c, int64_t idle_deadline, uint64_t *answered,
		      uint64_t *bad)
{
	uint64_t errors[PE_NERRS] = { 0 };
	uint32_t seq = 0;

	for (;;) {
		/* the next probe, or every 50 ms a look at the control channel (the client is done,
		 * or gone) */
		int r = pp_wait(s, seq, tu_mono_ns() + 50 * 1000000, errors);

		if (r == -EIO)
			return r;
		if (r == -ETIMEDOUT) {
			if (ctl_readable(c, 0) || tu_mono_ns() > idle_deadline)
				return 0;
			continue;
		}
		/* the last probe is not known here: signal on the schedule only, and reap what is
		 * left when the session ends */
		if (pp_post(s, seq, false, tu_mono_ns() + NSEC_PER_SEC, errors) < 0)
			return -EIO;
		/* what arrived, while the answer is in flight (the next probe lands in the other slot) */
		if (!pp_ok(pp_slot(s, seq), s->size, seq))
			(*bad)++;
		(*answered)++;
		seq++;
	}
}

#define ECHO_FLAG (UINT64_C(1) << 32)

int pv_server_poll(struct pv_session *s, uint64_t *received, uint64_t *bad)
{
	struct ibv_wc wc[8];
	int n = s->p->ops->poll_cq(s->p, 8, wc, NULL);

	for (int i = 0; i < n; i++) {
		unsigned hdr = s->op == PROBE_UD ? PV_GRH : 0;
		uint8_t *buf;
		uint32_t seq;

		if (!(wc[i].opcode & IBV_WC_RECV)) {
			/* an echo went out: its slot can receive again */
			if (wc[i].wr_id & ECHO_FLAG)
				post_recv_slot(s, (unsigned)(wc[i].wr_id & 0xffff));
			continue;
		}
		if (wc[i].status != IBV_WC_SUCCESS)
			continue; /* flushed at the end of the session */
		buf = s->p->pool + PV_OFF_RECV + wc[i].wr_id * PV_SLOT + hdr;
		memcpy(&seq, buf, 4);
		(*received)++;
		if (wc[i].byte_len - hdr != s->size || !pv_pattern_ok(buf, wc[i].byte_len - hdr, seq))
			(*bad)++;
		if (s->op == PROBE_UD) {
			/* echo to the sender (its QPN from the completion, the AH made at connect); the
			 * slot is posted again when the echo's send completes */
			struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = s->size, .lkey = s->p->mr->lkey };
			struct ibv_send_wr swr = { .wr_id = ECHO_FLAG | wc[i].wr_id, .sg_list = &sge,
						   .num_sge = 1, .opcode = IBV_WR_SEND,
						   .send_flags = IBV_SEND_SIGNALED },
					   *sbad;

			swr.wr.ud.ah = s->ah;
			swr.wr.ud.remote_qpn = wc[i].src_qp;
			swr.wr.ud.remote_qkey = PV_QKEY;
			if (s->p->ops->post_send(s->qp[0], &swr, &sbad) == 0)
				continue;
		}
		post_recv_slot(s, (unsigned)wc[i].wr_id);
	}
	return n < 0 ? -EIO : n;
}

bool pv_server_verify(struct pv_session *s, json_t *done, char *detail, size_t len)
{
	json_int_t ok = json_integer_value(json_object_get(done, "ok"));
	json_int_t last = json_integer_value(json_object_get(done, "last"));
	uint64_t v;

	switch (s->op) {
	case PROBE_WRITE:
		if (!ok) {
			snprintf(detail, len, "no write completed");
			return true;
		}
		if (s->pingpong ? !pp_ok(pp_slot(s, (uint32_t)last), s->size, (uint32_t)last)
				: !pv_pattern_ok(s->p->pool + PV_OFF_TARGET, s->size, (uint32_t)last)) {
			snprintf(detail, len, "the target does not hold write %lld's data", (long long)last);
			return false;
		}
		snprintf(detail, len, "the target holds the last write's %u bytes", s->size);
		return true;
	case PROBE_CAS:
	case PROBE_FAA:
		memcpy(&v, s->p->pool + PV_OFF_ATOMIC, 8);
		snprintf(detail, len, "the counter is %llu after %lld atomics", (unsigned long long)v, (long long)ok);
		return (json_int_t)v == ok;
	case PROBE_READ:
		snprintf(detail, len, "reads checked by the client");
		return true;
	default:
		snprintf(detail, len, "checked per message");
		return true;
	}
}
