/* libFuzzer target: the agent report parser and validator (daemon/report.c) with the built-in
 * counter registry.  Any input must either parse into a consistent report or be rejected with
 * a code; ASan/UBSan catch memory and arithmetic errors.  Run with `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/report.h"

static struct reg *reg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rf_err e = { 0 };
	struct report *r = NULL;

	if (!reg && reg_load_builtin(&reg, &e) < 0)
		abort();
	if (report_parse((const char *)data, size, reg, &r, &e) == 0) {
		/* invariants an accepted report must hold */
		for (uint32_t s = 0; s < r->nsamples; s++) {
			if (r->samples[s].port_idx >= r->nports ||
			    r->samples[s].first_value + r->samples[s].nvalues > r->nvalues)
				abort();
		}
		for (uint32_t p = 0; p < r->nports; p++)
			if (r->ports[p].device_idx >= r->ndevices)
				abort();
		for (uint32_t v = 0; v < r->nvalues; v++)
			if (!reg_counter(reg, r->values[v].counter) || r->values[v].scale == 0)
				abort();
		report_free(r);
	} else if (!e.code[0] && e.err != -ENOMEM) {
		abort(); /* a rejection always says why */
	}
	return 0;
}
