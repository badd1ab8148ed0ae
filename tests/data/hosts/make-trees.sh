#!/bin/bash
# Writes the host trees under tests/data/hosts/ (committed; rerun only to change them).
# They follow the layouts documented in ../shared/reference/rdma-fabric-facts.md (mlx5) and
# ../shared/reference/soft-roce-guest.md (rxe); see README.md here for what is and is not real.
set -euo pipefail
cd "$(dirname "$0")"

w() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }

ib_counters() { # dir, seed
	local d=$1 s=$2
	w "$d/port_xmit_data" $((s * 250000000)); w "$d/port_rcv_data" $((s * 240000000))
	w "$d/port_xmit_packets" $((s * 1000000)); w "$d/port_rcv_packets" $((s * 960000))
	w "$d/unicast_xmit_packets" $((s * 1000000)); w "$d/unicast_rcv_packets" $((s * 960000))
	w "$d/multicast_xmit_packets" 0; w "$d/multicast_rcv_packets" 0
	for c in port_xmit_discards port_rcv_errors symbol_error link_downed link_error_recovery \
		port_rcv_remote_physical_errors port_rcv_switch_relay_errors local_link_integrity_errors \
		excessive_buffer_overrun_errors VL15_dropped port_xmit_constraint_errors \
		port_rcv_constraint_errors; do w "$d/$c" 0; done
	w "$d/port_xmit_wait" $((s * 17))
}

mlx5_hw_counters() { # dir, seed, accl(0/1)
	local d=$1 s=$2
	w "$d/lifespan" 10
	w "$d/rx_write_requests" $((s * 51000)); w "$d/rx_read_requests" $((s * 1200))
	w "$d/rx_atomic_requests" 0; w "$d/rx_dct_connect" 0; w "$d/out_of_buffer" 0
	w "$d/out_of_sequence" $((s * 3)); w "$d/duplicate_request" $((s * 2))
	for c in rnr_nak_retry_err packet_seq_err implied_nak_seq_err local_ack_timeout_err \
		resp_local_length_error resp_cqe_error req_cqe_error req_remote_invalid_request \
		req_remote_access_errors resp_remote_access_errors resp_cqe_flush_error \
		req_cqe_flush_error; do w "$d/$c" 0; done
	if [ "$3" = 1 ]; then
		for c in roce_adp_retrans roce_adp_retrans_to roce_slow_restart roce_slow_restart_cnps \
			roce_slow_restart_trans req_transport_retries_exceeded req_rnr_retries_exceeded; do
			w "$d/$c" 0; done
	fi
	w "$d/rp_cnp_ignored" 0; w "$d/rp_cnp_handled" $((s * 4000))
	w "$d/np_ecn_marked_roce_packets" $((s * 9000)); w "$d/np_cnp_sent" $((s * 3900))
	w "$d/rx_icrc_encapsulated" 0
}

mlx5_ethtool() { # file, seed, lossless priorities...
	local f=$1 s=$2; shift 2
	mkdir -p "$(dirname "$f")"
	{
		echo "NIC statistics:"
		echo "     rx_packets: $((s * 900))"
		echo "     tx_packets: $((s * 950))"
		echo "     rx_bytes: $((s * 90000))"
		echo "     tx_bytes: $((s * 95000))"
		echo "     rx_csum_complete: $((s * 800))"
		echo "     rx_out_of_buffer: 0"
		echo "     rx_vport_rdma_unicast_packets: $((s * 960000))"
		echo "     tx_vport_rdma_unicast_packets: $((s * 1000000))"
		echo "     rx_packets_phy: $((s * 961000))"
		echo "     tx_packets_phy: $((s * 1001000))"
		echo "     rx_bytes_phy: $((s * 960000000))"
		echo "     tx_bytes_phy: $((s * 1000000000))"
		echo "     rx_crc_errors_phy: 0"
		echo "     rx_symbol_err_phy: 0"
		echo "     rx_discards_phy: 0"
		echo "     tx_discards_phy: 0"
		echo "     rx_buffer_passed_thres_phy: $((s * 2))"
		echo "     link_down_events_phy: 1"
		echo "     rx_pause_ctrl_phy: $((s * 40))"
		echo "     tx_pause_ctrl_phy: $((s * 30))"
		for p in 0 1 2 3 4 5 6 7; do
			echo "     rx_prio${p}_bytes: $((p == 3 ? s * 950000000 : s * 100))"
			echo "     rx_prio${p}_packets: $((p == 3 ? s * 950000 : s))"
			echo "     tx_prio${p}_bytes: $((p == 3 ? s * 990000000 : s * 100))"
			echo "     tx_prio${p}_packets: $((p == 3 ? s * 990000 : s))"
		done
		for p in "$@"; do
			echo "     rx_prio${p}_pause: $((s * 20))"
			echo "     rx_prio${p}_pause_duration: $((s * 55))"
			echo "     tx_prio${p}_pause: $((s * 15))"
			echo "     tx_prio${p}_pause_duration: $((s * 41))"
			echo "     rx_prio${p}_pause_transition: $((s * 10))"
		done
		echo "     tx_pause_storm_warning_events : 0"
		echo "     tx_pause_storm_error_events: 0"
		echo "     module_unplug: 0"
	} > "$f"
}

netdev() { # root, ifname, speed, mtu, seed
	local n=$1/sys/class/net/$2 s=$5
	w "$n/operstate" up; w "$n/speed" "$3"; w "$n/mtu" "$4"; w "$n/carrier_changes" 2
	for c in rx_bytes tx_bytes; do w "$n/statistics/$c" $((s * 95000)); done
	for c in rx_packets tx_packets; do w "$n/statistics/$c" $((s * 900)); done
	for c in rx_errors tx_errors rx_dropped tx_dropped rx_crc_errors rx_missed_errors \
		collisions multicast; do w "$n/statistics/$c" 0; done
}

mlx5_device() { # root, dev, netdev, rate, speed, seed, accl, prios...
	local r=$1 dev=$2 nd=$3 rate=$4 speed=$5 s=$6 accl=$7; shift 7
	local d=$r/sys/class/infiniband/$dev
	w "$d/fw_ver" "28.39.1002"; w "$d/node_guid" "b8ce:f603:00a1:2b3$s"; w "$d/hca_type" MT4129
	w "$d/node_type" "1: CA"
	mkdir -p "$r/sys/bus/pci/drivers/mlx5_core" "$d"
	ln -sfn ../../../bus/pci/drivers/mlx5_core "$d/device_driver_link_tmp"
	mkdir -p "$d/device"
	rm "$d/device_driver_link_tmp"
	ln -sfn ../../../../bus/pci/drivers/mlx5_core "$d/device/driver"
	w "$d/ports/1/state" "4: ACTIVE"; w "$d/ports/1/phys_state" "5: LinkUp"
	w "$d/ports/1/rate" "$rate"; w "$d/ports/1/link_layer" Ethernet
	w "$d/ports/1/gid_attrs/ndevs/0" "$nd"
	ib_counters "$d/ports/1/counters" "$s"
	mlx5_hw_counters "$d/ports/1/hw_counters" "$s" "$accl"
	netdev "$r" "$nd" "$speed" 4200 "$s"
	mlx5_ethtool "$r/ethtool/$nd" "$s" "$@"
}

rm -rf gpu-a1 gpu-a2 stor-b1

# gpu-a1: two ConnectX-7 400G ports, lossless priority 3, RoCE accelerator counters present
mlx5_device gpu-a1 mlx5_0 enp65s0f0np0 "400 Gb/sec (4X NDR)" 400000 7 1 3
mlx5_device gpu-a1 mlx5_1 enp65s0f1np1 "400 Gb/sec (4X NDR)" 400000 8 1 3
w gpu-a1/proc/sys/kernel/random/boot_id 3f5c1e0a-7d4b-4c2e-9a51-0c7d2e9b1a01

# gpu-a2: one ConnectX-6 Dx 100G port, lossless priorities 3 and 4, older firmware
mlx5_device gpu-a2 mlx5_0 ens1f0np0 "100 Gb/sec (4X EDR)" 100000 3 0 3 4
w gpu-a2/sys/class/infiniband/mlx5_0/fw_ver "22.36.1010"
w gpu-a2/proc/sys/kernel/random/boot_id 8b2d4f61-1c3e-4a7b-b0e5-5d9c6a4f2b02

# stor-b1: soft-RoCE (rxe) on a virtio NIC: rxe hw_counters, no PMA counters/, no PFC
d=stor-b1/sys/class/infiniband/rxe0
w "$d/parent" eth1; w "$d/node_guid" "5054:00ff:fe12:3456"; w "$d/fw_ver" "0.0.0"
w "$d/ports/1/state" "4: ACTIVE"; w "$d/ports/1/phys_state" "5: LinkUp"
w "$d/ports/1/rate" "10 Gb/sec (1X QDR)"; w "$d/ports/1/link_layer" Ethernet
for c in ack_deferred completer_retry_err duplicate_request link_downed out_of_seq_request \
	rcvd_rnr_err rcvd_seq_err rdma_recvs rdma_sends retry_exceeded_err retry_rnr_exceeded_err \
	send_err send_rnr_err; do w "$d/ports/1/hw_counters/$c" 0; done
w "$d/ports/1/hw_counters/lifespan" 12
w "$d/ports/1/hw_counters/sent_pkts" 4000; w "$d/ports/1/hw_counters/rcvd_pkts" 4000
netdev stor-b1 eth1 10000 1500 5
mkdir -p stor-b1/ethtool
printf 'NIC statistics:\n     rx_queue_0_packets: 4500\n     rx_queue_0_bytes: 450000\n     tx_queue_0_packets: 4400\n     tx_queue_0_bytes: 440000\n' > stor-b1/ethtool/eth1
w stor-b1/proc/sys/kernel/random/boot_id 1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c03
echo "trees written"
