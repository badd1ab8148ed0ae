import { api } from './api.js';

// What several views share: the fabric's tiers and the load of each link and port in the
// detector's snapshots (GET /api/v1/detector/snapshot: deltas over interval_us).

// Per port "node|port": util (tx share of line rate), pause (share of the interval its
// transmitter was paused: pause time received on its most paused priority — priorities paused
// at once count once, where adding them read up to twice the time), ecn (marked packets) and
// drops, each also per second (ecn_per_s, drops_per_s: of the counters' clock, fabric time in
// the simulator), queue (bytes: the highest watermark).
export function portLoad(snap) {
  const out = new Map();
  if (!snap || !snap.nodes) return out;
  const iv = snap.interval_us || 0;
  for (const n of snap.nodes) {
    for (const p of n.ports || []) {
      if (p.silent) continue; // (a port without readings: nothing known, not zeros)
      const c = p.counters || {};
      // (drops: discarded at either end, or lost on the link into the port: its bad FCS count)
      let pause = 0, ecn = c.np_ecn_marked_roce_packets || 0, queue = 0;
      let drops = (c.phy_tx_discards || 0) + (c.phy_rx_discards || 0) + (c.phy_rx_crc_errors || 0);
      for (const q of Object.values(p.prio || {})) {
        pause = Math.max(pause, q.pfc_rx_pause_duration_us || 0);
        ecn += q.ecn_marked_packets || 0;
        drops += q.prio_rx_buf_discards || 0;
        queue = Math.max(queue, q.queue_watermark_periodic_bytes || q.queue_depth_bytes || 0);
      }
      const tx = c.tx_bytes || 0;
      out.set(`${n.name}|${p.name}`, {
        node: n.name, port: p.name, kind: n.kind, peer: p.peer, down: !!p.down,
        util: iv && p.speed_mbps ? (tx * 8) / (iv * p.speed_mbps) : null,
        pause: iv ? Math.min(1, pause / iv) : null, // (at most 1: a reading's rounding)
        pause_us: pause, ecn, drops, queue, tx_bytes: tx,
        ecn_per_s: iv ? (ecn * 1e6) / iv : 0, drops_per_s: iv ? (drops * 1e6) / iv : 0,
      });
    }
  }
  return out;
}

// The load of each port over the fast lane's recent intervals, every one of them: GET
// /api/v1/detector/snapshot?span=recent, the intervals rocefabd's detector analysed over the
// last 10 to 20 s, summed.  One interval is short (200 ms; 2 ms of fabric time in the demo's
// simulator) and its pauses and ECN marks come and go with it: a ranking or a colour of one
// flickers, and one fetched at each refresh misses what falls between two (before, the views
// summed those: the demo's incast, which marks in one interval of every 25, went unseen for a
// minute when the refreshes ran in step with it).  Per port as portLoad() gives it, with
// ecn_per_s and drops_per_s; { load, samples: the intervals summed, span_us: the time they
// cover } (no ports and 0 when there were none in that time), or null when this rocefabd runs no
// detector
// (the detector asked first whether it has any: a 404 would be a console error in the browser).
export async function recentLoad(features) {
  if (!features?.detector) return null;
  const none = { load: new Map(), samples: 0, span_us: 0 };
  if (!(await api('/api/v1/detector')).recent_intervals) return none;
  let snap;
  try {
    snap = await api('/api/v1/detector/snapshot?span=recent');
  } catch (e) {
    if (e.status === 404) return none; // (aged out since: every agent silent for 10 s or more)
    throw e;
  }
  return { load: portLoad(snap), samples: snap.intervals || 0, span_us: snap.span_us || 0 };
}

// Tiers of a leaf-spine: switches with hosts below are leaves (ToRs), the other switches spines.
export function tiers(topo) {
  const role = new Map(topo.nodes.map((n) => [n.id, n.role]));
  const hostsOf = new Map();
  const torOf = new Map();
  for (const l of topo.links) {
    const a = l.a.node, b = l.b.node;
    for (const [sw, ho] of [[a, b], [b, a]]) {
      if (role.get(sw) === 'switch' && role.get(ho) === 'host') {
        if (!hostsOf.has(sw)) hostsOf.set(sw, []);
        hostsOf.get(sw).push(ho);
        torOf.set(ho, sw);
      }
    }
  }
  const natural = (x, y) => x.localeCompare(y, 'en', { numeric: true });
  const switches = topo.nodes.filter((n) => n.role === 'switch').map((n) => n.id).sort(natural);
  const leaves = switches.filter((s) => hostsOf.has(s));
  const spines = switches.filter((s) => !hostsOf.has(s));
  const hosts = topo.nodes.filter((n) => n.role === 'host').map((n) => n.id).sort(natural);
  for (const v of hostsOf.values()) v.sort(natural);
  return { spines, leaves, hosts, hostsOf, torOf, natural };
}
