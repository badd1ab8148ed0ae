/* libFuzzer target: the fast PFC lane — the PFC report parser (daemon/report.c,
 * report_parse_pfc) with the built-in counter registry, and the detector's lane that keeps what
 * it accepts (daemon/detector.c, detector_put).  Any input must either parse into a consistent
 * report (ports synthesized from its samples) or be rejected with a code; ASan/UBSan catch
 * memory and arithmetic errors.  Run with `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/detector.h"
#include "daemon/report.h"
#include "tests/fuzz/report_invariants.h"

static struct reg *reg;
static struct detector *det;
static unsigned long nput;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rf_err e = { 0 };
	struct report *r = NULL;

	if (!reg && reg_load_builtin(&reg, &e) < 0)
		abort();
	if (!det) {
		/* the lane needs no store: only the pass reads one */
		struct detector_opts o = { .interval_ns = 200000000, .deadline_ns = 60000000000, .conf = detector_defaults };

		if (detector_new(NULL, reg, &o, &det) < 0)
			abort();
	}
	if (report_parse_pfc((const char *)data, size, reg, &r, &e) == 0) {
		report_check_invariants(reg, r);
		detector_put(det, r, size, NULL); /* -ENOSPC past the lane's bounds is fine */
		report_free(r);
		if (++nput % 4096 == 0) { /* a fresh lane now and then: memory stays bounded */
			struct detector_opts o = { .interval_ns = 200000000, .deadline_ns = 60000000000,
						   .conf = detector_defaults };

			detector_free(det);
			if (detector_new(NULL, reg, &o, &det) < 0)
				abort();
		}
	} else if (!e.code[0] && e.err != -ENOMEM) {
		abort(); /* a rejection always says why */
	}
	return 0;
}
