/* qp-hold: holds an RC and a UD QP on an RDMA device until told, for the QP tests in the
 * soft-RoCE guest (tests/rxe): the agent must see them (types, states, this process), and the
 * RC one driven into the error state on SIGUSR1, as a QP is after a fatal completion error.
 *   usage: qp-hold DEVICE      prints "ready" once both QPs exist, "err" after SIGUSR1 moved
 *                              the RC QP to ERR; exits on SIGTERM or SIGINT */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

static int fail(const char *what)
{
	fprintf(stderr, "qp-hold: %s\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *rc, *ud;
	sigset_t sigs;
	int n, sig;

	if (argc != 2)
		return fail("usage: qp-hold DEVICE");
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	if (!(list = ibv_get_device_list(&n)))
		return fail("no RDMA devices");
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		return fail("cannot open the device");
	if (!(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)))
		return fail("cannot allocate a PD and a CQ");
	{
		struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					      .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						       .max_recv_sge = 1 } };
		struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

		if (!(rc = ibv_create_qp(pd, &a)) ||
		    ibv_modify_qp(rc, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			return fail("cannot create the RC QP");
		a.qp_type = IBV_QPT_UD;
		if (!(ud = ibv_create_qp(pd, &a)))
			return fail("cannot create the UD QP");
		memset(&m, 0, sizeof(m));
		m.qp_state = IBV_QPS_INIT;
		m.port_num = 1;
		m.qkey = 0x11111111;
		if (ibv_modify_qp(ud, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
			return fail("cannot bring the UD QP to INIT");
		m.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(ud, &m, IBV_QP_STATE))
			return fail("cannot bring the UD QP to RTR");
		m.qp_state = IBV_QPS_RTS;
		m.sq_psn = 1;
		if (ibv_modify_qp(ud, &m, IBV_QP_STATE | IBV_QP_SQ_PSN))
			return fail("cannot bring the UD QP to RTS");
	}
	printf("ready rc=%u ud=%u\n", rc->qp_num, ud->qp_num);
	fflush(stdout);
	while (sigwait(&sigs, &sig) == 0) {
		if (sig == SIGUSR1) {
			struct ibv_qp_attr m = { .qp_state = IBV_QPS_ERR };

			if (ibv_modify_qp(rc, &m, IBV_QP_STATE))
				return fail("cannot move the RC QP to ERR");
			printf("err\n");
			fflush(stdout);
			continue;
		}
		break;
	}
	ibv_destroy_qp(ud);
	ibv_destroy_qp(rc);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
