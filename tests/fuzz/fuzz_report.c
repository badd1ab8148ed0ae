/* libFuzzer target: the agent report parser and validator (daemon/report.c) with the built-in
 * counter registry.  Any input must either parse into a consistent report or be rejected with
 * a code; ASan/UBSan catch memory and arithmetic errors.  Run with `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/report.h"
#include "tests/fuzz/report_invariants.h"

static struct reg *reg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rf_err e = { 0 };
	struct report *r = NULL;

	if (!reg && reg_load_builtin(&reg, &e) < 0)
		abort();
	if (report_parse((const char *)data, size, reg, &r, &e) == 0) {
		report_check_invariants(reg, r);
		report_free(r);
	} else if (!e.code[0] && e.err != -ENOMEM) {
		abort(); /* a rejection always says why */
	}
	return 0;
}
