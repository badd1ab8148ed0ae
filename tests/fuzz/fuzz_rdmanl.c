/* libFuzzer target: RDMA netlink answers (agents/rdmanl.c) as the kernel would send them to the
 * agent: the device list, the QP table and the counters bound to QPs.  Any input either parses
 * (QPs whose strings are terminated and within their fields, counters within their bounds) or
 * is refused with a code; ASan/UBSan catch memory and arithmetic errors.  The corpus starts
 * from answers real rxe gave (tests/data/rdma-netlink).  Run with `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agents/rdmanl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmanl_qps q = { 0 };
	struct rdmanl_dev *devs = NULL;
	struct rf_err e = { 0 };
	size_t n = 0;

	if (rdmanl_parse_devs(data, size, &devs, &n, &e) == 0) {
		for (size_t i = 0; i < n; i++)
			if (memchr(devs[i].name, '\0', sizeof(devs[i].name)) == NULL)
				abort();
	} else if (!e.code[0]) {
		abort();
	}
	free(devs);
	memset(&e, 0, sizeof(e));
	if (rdmanl_parse_qps(data, size, &q, &e) < 0 && !e.code[0])
		abort();
	memset(&e, 0, sizeof(e));
	if (rdmanl_parse_counters(data, size, &q, &e) < 0 && !e.code[0])
		abort();
	rdmanl_bind_counters(&q);
	for (size_t i = 0; i < q.n; i++) {
		if (!memchr(q.qps[i].comm, '\0', sizeof(q.qps[i].comm)) || !memchr(q.qps[i].dev, '\0', sizeof(q.qps[i].dev)))
			abort();
		if (q.qps[i].counter >= (int)q.ncounters)
			abort();
		rdmanl_qp_type(q.qps[i].type);
		rdmanl_qp_state(q.qps[i].state);
	}
	for (size_t i = 0; i < q.ncounters; i++)
		if (q.counters[i].nvalues > RDMANL_QP_COUNTERS)
			abort();
	rdmanl_qps_clear(&q);
	return 0;
}
