/* The fast lane's counters: see lane.h. */
#include <string.h>

#include "lib/lane.h"

const char *const lane_field_names[CF_N] = {
	[CF_RX_PAUSE_FRAMES] = "pfc_rx_pause_frames",
	[CF_RX_PAUSE_US] = "pfc_rx_pause_duration_us",
	[CF_RX_PAUSE_TRANSITIONS] = "pfc_rx_pause_transitions",
	[CF_TX_PAUSE_FRAMES] = "pfc_tx_pause_frames",
	[CF_TX_PAUSE_US] = "pfc_tx_pause_duration_us",
	[CF_TX_BYTES] = "prio_tx_bytes",
	[CF_RX_BYTES] = "prio_rx_bytes",
	[CF_TX_PACKETS] = "prio_tx_packets",
	[CF_RX_PACKETS] = "prio_rx_packets",
	[CF_RX_BUF_DISCARDS] = "prio_rx_buf_discards",
	[CF_PAUSED] = "pfc_paused",
	[CF_PAUSING] = "pfc_pausing",
	[CF_QUEUE_DEPTH] = "queue_depth_bytes",
	[CF_QUEUE_WATERMARK] = "queue_watermark_bytes",
	[CF_ECN_MARKED] = "ecn_marked_packets",
	[CF_QUEUE_PEAK] = "queue_watermark_periodic_bytes",
};

const char *const lane_port_field_names[CP_N] = {
	[CP_TX_BYTES] = "tx_bytes",
	[CP_RX_BYTES] = "rx_bytes",
	[CP_ECN_RX] = "np_ecn_marked_roce_packets",
	[CP_CNP_SENT] = "np_cnp_sent",
	[CP_CNP_HANDLED] = "rp_cnp_handled",
	[CP_RETX] = "retransmitted_packets",
	[CP_OOS] = "out_of_sequence",
	[CP_SEQ_ERR] = "packet_seq_err",
	[CP_ACK_TIMEOUT] = "local_ack_timeout_err",
	[CP_TX_DISCARDS] = "phy_tx_discards",
	[CP_RX_CRC] = "phy_rx_crc_errors",
	[CP_CARRIER] = "carrier_changes",
};

int lane_field_of(const char *name, bool prio)
{
	const char *const *names = prio ? lane_field_names : lane_port_field_names;
	int n = prio ? CF_N : CP_N;

	for (int i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}
