/* Counter delta math: see delta.h.  The rules, in order:
 *   no previous sample            -> baseline
 *   read time did not advance     -> baseline (DELTA_CLOCK)
 *   new host boot                 -> delta = cur (the counter restarted from 0 at boot)
 *   cur >= prev                   -> delta = cur - prev (beyond max_rate for dt + 2 s: another
 *                                    counter, as a NIC swapped by a driver reload: a baseline)
 *   cur < prev, wrapping counter  -> a wrap when the wrapped distance is under half the range
 *                                    and no 64-bit counter of the port went back in the same
 *                                    read (port_reset), else a reset (delta = cur)
 *   cur < prev, saturating        -> a reset (delta = cur)
 * and any wrap, reset or boot delta that implies more than max_rate becomes a baseline. */
#include <string.h>

#include "daemon/delta.h"

#define GROWTH_SLACK_S 2.0 /* seconds of growth at max_rate a sample may show beyond its interval */

unsigned delta_compute(const struct delta_in *in, uint64_t *ret_delta)
{
	/* A report with a value beyond its source's registered width is refused
	 * (daemon/report.c); one stored before that check, or a caller that did not check, still
	 * gets the counter treated as 64-bit rather than a misread wrap. */
	unsigned width = in->width;
	uint64_t max, d;
	unsigned flags;
	double dt;

	*ret_delta = 0;
	if (!in->have_prev)
		return 0;
	if (in->cur_t_ns <= in->prev_t_ns)
		return DELTA_CLOCK;
	if (width < 64 && ((in->cur_raw >> width) || (in->prev_raw >> width)))
		width = 64;
	max = width >= 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
	dt = (double)(in->cur_t_ns - in->prev_t_ns) / 1e9;

	if (in->new_boot) {
		d = in->cur_raw;
		flags = DELTA_VALID | DELTA_NEW_BOOT;
	} else if (in->cur_raw >= in->prev_raw) {
		/* growth is taken as it is, fast or not: a switch that updates its counters once a
		 * second (SONiC's flex counters), read twice in that second, shows up to two seconds'
		 * growth at once; beyond that at max_rate it is no growth of this counter (a trial
		 * swapped two NICs' names, and saw 7.9 Tb/s on a 400 Gb/s port) */
		d = in->cur_raw - in->prev_raw;
		if (in->max_rate > 0 && (double)d > in->max_rate * (dt + GROWTH_SLACK_S))
			return DELTA_IMPLAUSIBLE;
		*ret_delta = d;
		flags = DELTA_VALID;
		if (in->saturate && in->cur_raw == max)
			flags |= DELTA_SATURATED;
		return flags;
	} else if (!in->saturate && !in->port_reset && (max - in->prev_raw) + in->cur_raw + 1 <= max / 2) {
		d = (max - in->prev_raw) + in->cur_raw + 1;
		flags = DELTA_VALID | DELTA_WRAP;
	} else {
		d = in->cur_raw;
		flags = DELTA_VALID | DELTA_RESET;
	}
	if (in->max_rate > 0 && (double)d > in->max_rate * dt) {
		/* A wrap that fast is really a reset; a reset or boot delta that large means
		 * the counter did not restart from 0 inside the interval.  Do not guess. */
		if ((flags & DELTA_WRAP) && (double)in->cur_raw <= in->max_rate * dt) {
			*ret_delta = in->cur_raw;
			return DELTA_VALID | DELTA_RESET;
		}
		return (flags & ~DELTA_VALID) | DELTA_IMPLAUSIBLE;
	}
	*ret_delta = d;
	return flags;
}

double delta_max_rate(const char *unit, uint32_t scale)
{
	/* Per port, with margin: 1.6 Tb/s of bytes, 2.5 G packets or events per second (800G at
	 * 64-byte frames is 1.2 Gpps), and no more than one second of pause per second. */
	double per_sec;

	if (strcmp(unit, "bytes") == 0)
		per_sec = 2e11;
	else if (strcmp(unit, "microseconds") == 0)
		per_sec = 1.05e6;
	else
		per_sec = 2.5e9;
	return per_sec / (scale ? scale : 1);
}
