/* The flow-size distributions of sim/workloads/, built into rocefab-sim (workload.c). */
	.section .rodata
	.global sim_cdf_websearch, sim_cdf_fbhdp, sim_cdf_alistorage, sim_cdf_googlerpc
sim_cdf_websearch:
	.incbin "sim/workloads/WebSearch_distribution.txt"
	.byte 0
sim_cdf_fbhdp:
	.incbin "sim/workloads/FbHdp_distribution.txt"
	.byte 0
sim_cdf_alistorage:
	.incbin "sim/workloads/AliStorage2019.txt"
	.byte 0
sim_cdf_googlerpc:
	.incbin "sim/workloads/GoogleRPC2008.txt"
	.byte 0
	.section .note.GNU-stack,"",@progbits
