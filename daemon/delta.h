/* Counter deltas from raw cumulative values: pure functions, no I/O.
 *
 * A device counter is read as a raw cumulative value.  Between two reads it may have grown
 * (the normal case), wrapped at its bit width, been reset (driver reload, ethtool reset, device
 * re-created), restarted with the host (a new host boot id), or saturated (IB PMA error counters
 * stop at their maximum).  delta_compute() tells these apart and never yields a negative delta
 * or one that implies a physically impossible rate. */
#ifndef ROCEFAB_DELTA_H
#define ROCEFAB_DELTA_H

#include <stdbool.h>
#include <stdint.h>

enum delta_flags {
	DELTA_VALID = 1 << 0,	  /* delta is meaningful (otherwise the sample is a baseline) */
	DELTA_RESET = 1 << 1,	  /* the counter went back and was taken as restarted from 0 */
	DELTA_WRAP = 1 << 2,	  /* the counter wrapped at its width */
	DELTA_NEW_BOOT = 1 << 3,  /* the host rebooted since the previous sample */
	DELTA_SATURATED = 1 << 4, /* a saturating counter sits at its maximum: delta may undercount */
	DELTA_CLOCK = 1 << 5,	  /* read time did not advance: no delta */
	DELTA_IMPLAUSIBLE = 1 << 6, /* the change implies an impossible rate: taken as a baseline */
};

struct delta_in {
	uint64_t prev_raw, cur_raw;
	int64_t prev_t_ns, cur_t_ns;
	uint8_t width; /* of the source, 1..64 */
	bool saturate; /* REG_SATURATE: stays at its maximum instead of wrapping */
	bool have_prev;
	bool new_boot;
	/* a counter of the port that cannot wrap (64 bits) went back in the same read: the port's
	 * counters were reset (a driver reload), so one that went back is reset, not wrapped (a
	 * 32-bit counter reset from above half its range read as a wrap of billions) */
	bool port_reset;
	double max_rate; /* raw units per second that no device can exceed; 0 = unbounded */
};

/* Returns the flags; *ret_delta is the increase in raw units (0 unless DELTA_VALID). */
unsigned delta_compute(const struct delta_in *in, uint64_t *ret_delta);
/* Raw units per second that no port can exceed, by the registry unit ("bytes", ...), for a
 * source with the given scale: used to reject absurd wraps and resets. */
double delta_max_rate(const char *unit, uint32_t scale);

#endif
