/* DCQCN knobs of NVIDIA NICs: ../shared/reference/rdma-fabric-facts.md section 3.2. */
#include <math.h>
#include <string.h>

#include "lib/params.h"

const struct dcqcn_param dcqcn_params[] = {
	{ "rp_enable", "rp", NULL, "enabled", "priority mask", 0, 255, 255,
	  "DCQCN reaction point (rate limiting on CNPs) per priority; sysfs roce_rp/enable/P" },
	{ "np_enable", "np", NULL, "enabled", "priority mask", 0, 255, 255,
	  "DCQCN notification point (CNPs for ECN-marked packets) per priority; sysfs roce_np/enable/P" },
	{ "min_time_between_cnps", "np", "np_min_time_between_cnps", "min_time_between_cnps_us",
	  "us", 0, 4095, 4, "NP: minimum gap between CNPs sent from the port" },
	{ "cnp_dscp", "np", "np_cnp_dscp", NULL, "", 0, 63, 48, "DSCP of generated CNPs" },
	{ "cnp_802p_prio", "np", "np_cnp_prio", "cnp_prio", "", 0, 7, 6,
	  "802.1p priority of generated CNPs" },
	{ "clamp_tgt_rate", "rp", "rp_clamp_tgt_rate", "clamp_tgt_rate", "bool", 0, 1, 0,
	  "1: target rate := current rate on every decrease" },
	{ "clamp_tgt_rate_ati", "rp", "rp_clamp_tgt_rate_ati", "clamp_tgt_rate_ati", "bool", 0, 1, 1,
	  "clamp the target after a timer-driven increase" },
	{ "rpg_time_reset", "rp", "rp_time_reset", "rpg_time_reset_us", "us", 1, 131071, 300,
	  "rate-increase timer period" },
	{ "rpg_byte_reset", "rp", "rp_byte_reset", "rpg_byte_reset", "bytes (64-byte units)", 1,
	  32767, 32767, "byte counter between increase events" },
	{ "rpg_threshold", "rp", "rp_threshold", "rpg_threshold", "events", 1, 31, 1,
	  "increase events before fast recovery moves to additive increase" },
	{ "rpg_max_rate", "rp", "rp_max_rate", "rpg_max_rate_mbps", "Mb/s", 0, PARAM_LINE_RATE, 0,
	  "maximum rate of a rate-limited QP; 0 = line rate" },
	{ "rpg_ai_rate", "rp", "rp_ai_rate", "rpg_ai_rate_mbps", "Mb/s", 1, PARAM_LINE_RATE, 5,
	  "additive-increase step (R_AI)" },
	{ "rpg_hai_rate", "rp", "rp_hai_rate", "rpg_hai_rate_mbps", "Mb/s", 1, PARAM_LINE_RATE, 50,
	  "hyper-increase step (R_HAI)" },
	{ "rpg_gd", "rp", "rp_gd", "rpg_gd", "log2", 10, 11, 11,
	  "couples alpha to the decrease factor (11: rate x (1 - alpha/2))" },
	{ "rpg_min_dec_fac", "rp", "rp_min_dec_fac", "rpg_min_dec_fac", "%", 0, 100, 50,
	  "largest decrease per event: new rate >= this % of the old" },
	{ "rpg_min_rate", "rp", "rp_min_rate", "rpg_min_rate_mbps", "Mb/s", 1, PARAM_LINE_RATE, 1,
	  "floor rate" },
	{ "rate_to_set_on_first_cnp", "rp", "rp_rate_to_set_on_first_cnp",
	  "rate_to_set_on_first_cnp_mbps", "Mb/s", 0, PARAM_LINE_RATE, 0,
	  "rate set on a flow's first CNP; 0 = keep the current rate" },
	{ "dce_tcp_g", "rp", "rp_dce_tcp_g", "dce_tcp_g", "1/1024", 0, 1023, 1019,
	  "alpha EWMA weight" },
	{ "dce_tcp_rtt", "rp", "rp_dce_tcp_rtt", "dce_tcp_rtt_us", "us", 1, 131071, 1,
	  "alpha update period" },
	{ "rate_reduce_monitor_period", "rp", "rp_rate_reduce_monitor_period",
	  "rate_reduce_monitor_period_us", "us", 0, 4294967295LL, 4,
	  "minimum gap between two decreases of one QP" },
	{ "initial_alpha_value", "rp", "rp_initial_alpha_value", "initial_alpha_value", "1/1024", 1,
	  1023, 1023, "alpha on the first CNP" },
};

const unsigned dcqcn_nparams = sizeof(dcqcn_params) / sizeof(dcqcn_params[0]);

const struct dcqcn_param *dcqcn_param_find(const char *name)
{
	for (unsigned i = 0; i < dcqcn_nparams; i++)
		if (!strcmp(dcqcn_params[i].name, name))
			return &dcqcn_params[i];
	return NULL;
}

bool pmax_whole_percent(double pmax)
{
	double pct = pmax * 100.0;

	return fabs(pct - round(pct)) <= 1e-6;
}
