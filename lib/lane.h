/* The fast PFC lane's counters (registry names, schemas/counters.json): what an agent sends
 * every agent.pfc_interval (the lossless priorities' per priority counters and the port's
 * own), and what the controllers' snapshot holds (cc/snap.h) and rocefabd's detector reads
 * from the lane.  One list for all of them: a counter the agents do not send is one the
 * controllers never see. */
#ifndef ROCEFAB_LANE_H
#define ROCEFAB_LANE_H

#include <stdbool.h>

/* The per port and priority counters, in registry names (lane_field_names). */
enum lane_field {
	CF_RX_PAUSE_FRAMES,	  /* pfc_rx_pause_frames: delta */
	CF_RX_PAUSE_US,		  /* pfc_rx_pause_duration_us: delta */
	CF_RX_PAUSE_TRANSITIONS,  /* pfc_rx_pause_transitions: delta */
	CF_TX_PAUSE_FRAMES,	  /* pfc_tx_pause_frames: delta */
	CF_TX_PAUSE_US,		  /* pfc_tx_pause_duration_us: delta */
	CF_TX_BYTES,		  /* prio_tx_bytes: delta */
	CF_RX_BYTES,		  /* prio_rx_bytes: delta */
	CF_TX_PACKETS,		  /* prio_tx_packets: delta */
	CF_RX_PACKETS,		  /* prio_rx_packets: delta */
	CF_RX_BUF_DISCARDS,	  /* prio_rx_buf_discards: delta */
	CF_PAUSED,		  /* pfc_paused: gauge */
	CF_PAUSING,		  /* pfc_pausing: gauge */
	CF_QUEUE_DEPTH,		  /* queue_depth_bytes: gauge */
	CF_QUEUE_WATERMARK,	  /* queue_watermark_bytes: gauge */
	CF_ECN_MARKED,		  /* ecn_marked_packets: delta (switch egress queues) */
	CF_QUEUE_PEAK,		  /* queue_watermark_periodic_bytes: gauge, the interval's peak */
	CF_N
};

/* The per port counters (no priority), in registry names (lane_port_field_names): deltas
 * (the tuner's). */
enum lane_pfield {
	CP_TX_BYTES,	/* tx_bytes */
	CP_RX_BYTES,	/* rx_bytes */
	CP_ECN_RX,	/* np_ecn_marked_roce_packets: CE-marked packets a NIC received */
	CP_CNP_SENT,	/* np_cnp_sent */
	CP_CNP_HANDLED, /* rp_cnp_handled */
	CP_RETX,	/* retransmitted_packets */
	CP_OOS,		/* out_of_sequence */
	CP_SEQ_ERR,	/* packet_seq_err */
	CP_ACK_TIMEOUT, /* local_ack_timeout_err */
	CP_TX_DISCARDS, /* phy_tx_discards */
	CP_RX_CRC,	/* phy_rx_crc_errors: frames lost on the link into the port */
	CP_CARRIER,	/* carrier_changes: the link went down or up */
	CP_N
};

extern const char *const lane_port_field_names[CP_N];

/* Whether a priority field is a gauge (read as is) rather than a counter (a delta). */
static inline bool lane_field_is_gauge(int f)
{
	return f == CF_PAUSED || f == CF_PAUSING || f == CF_QUEUE_DEPTH || f == CF_QUEUE_WATERMARK ||
	       f == CF_QUEUE_PEAK;
}

extern const char *const lane_field_names[CF_N];

/* A counter (a registry name) of the lane: its field, of a priority (prio: enum lane_field)
 * or of the port (enum lane_pfield); -1 when it is none of the lane's. */
int lane_field_of(const char *name, bool prio);

#endif
