/* What every report the parser accepts must hold, full or PFC-only (daemon/report.h): its
 * samples, ports and devices point inside it, and each value names a registered counter with a
 * scale.  Shared by the fuzz targets of both parsers; a broken invariant aborts, which libFuzzer
 * reports as a crash with its input. */
#ifndef ROCEFAB_FUZZ_REPORT_INVARIANTS_H
#define ROCEFAB_FUZZ_REPORT_INVARIANTS_H

#include <stdint.h>
#include <stdlib.h>

#include "daemon/report.h"

static inline void report_check_invariants(const struct reg *reg, const struct report *r)
{
	for (uint32_t s = 0; s < r->nsamples; s++)
		if (r->samples[s].port_idx >= r->nports ||
		    r->samples[s].first_value + r->samples[s].nvalues > r->nvalues)
			abort();
	for (uint32_t p = 0; p < r->nports; p++)
		if (r->ports[p].device_idx >= r->ndevices)
			abort();
	for (uint32_t d = 0; d < r->ndevices; d++)
		if (r->devices[d].first_port + r->devices[d].nports > r->nports)
			abort();
	for (uint32_t v = 0; v < r->nvalues; v++)
		if (!reg_counter(reg, r->values[v].counter) || r->values[v].scale == 0)
			abort();
}

#endif
