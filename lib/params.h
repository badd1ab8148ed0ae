/* The configuration knobs rocefab can change, with the names, units, ranges and defaults of
 * ../shared/reference/rdma-fabric-facts.md (section 3.2 for DCQCN on NVIDIA NICs, 4.x for
 * switch ECN and PFC).  One table shared by rocefabd (validation), the agents' backends (file
 * and simulator names) and rocefabctl (help). */
#ifndef ROCEFAB_PARAMS_H
#define ROCEFAB_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#define PARAM_LINE_RATE (-1) /* max: the port's line rate in Mb/s */

struct dcqcn_param {
	const char *name;    /* MLNX_OFED sysfs name (ecn/roce_rp/NAME, ecn/roce_np/NAME) */
	const char *node;    /* "rp" (reaction point) or "np" (notification point) */
	const char *debugfs; /* upstream mlx5 debugfs cc_params file, NULL when none */
	const char *sim;     /* rocefab-sim field (scenario nic.dcqcn), NULL when not modelled */
	const char *unit;
	int64_t min, max, def; /* max PARAM_LINE_RATE: the port speed */
	const char *help;
};

extern const struct dcqcn_param dcqcn_params[];
extern const unsigned dcqcn_nparams;
const struct dcqcn_param *dcqcn_param_find(const char *name);

/* Per-priority enables are bit masks (bit p = priority p) in rocefab, one file per priority in
 * sysfs (ecn/roce_rp/enable/P). */
#define DCQCN_RP_ENABLE "rp_enable"
#define DCQCN_NP_ENABLE "np_enable"

/* Whether a marking probability is a whole percent, as SONiC's WRED profile takes it
 * (green_drop_probability), within floating point (0.1 + 0.2 is 30 %). */
bool pmax_whole_percent(double pmax);

#endif
