import { api } from './api.js';

// The detector's last snapshot, or null when this rocefabd runs no detector or it has none yet
// (asked first: a 404 would be a console error in the browser).
export async function lastSnapshot(features) {
  if (!features?.detector) return null;
  const st = await api('/api/v1/detector');
  return st.has_snapshot ? api('/api/v1/detector/snapshot') : null;
}

// What several views share: the fabric's tiers and the load of each link and port in the
// detector's last snapshot (GET /api/v1/detector/snapshot: deltas over interval_us).

// Per port "node|port": util (tx share of line rate), pause (share of the interval its
// transmitter was paused: pause time received), ecn (marked packets), drops, queue (bytes).
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
        pause += q.pfc_rx_pause_duration_us || 0;
        ecn += q.ecn_marked_packets || 0;
        drops += q.prio_rx_buf_discards || 0;
        queue = Math.max(queue, q.queue_watermark_periodic_bytes || q.queue_depth_bytes || 0);
      }
      const tx = c.tx_bytes || 0;
      out.set(`${n.name}|${p.name}`, {
        node: n.name, port: p.name, kind: n.kind, peer: p.peer, down: !!p.down,
        util: iv && p.speed_mbps ? (tx * 8) / (iv * p.speed_mbps) : null,
        pause: iv ? Math.min(1, pause / iv) : null,
        pause_us: pause, ecn, drops, queue, tx_bytes: tx,
      });
    }
  }
  return out;
}

// The load of each port over the last snapshots a view fetched, not one: an interval of the
// fast lane is short (200 ms; 2 ms of fabric time in the demo's simulator), and its pauses and
// ECN marks come and go with it, so a ranking or a colour of one interval flickers.  Each
// snapshot counts once (the same one fetched again is skipped; one older than the newest kept,
// as after the simulator started again, starts the window anew); the last `n` of them, none
// older than `maxAgeMs`.  The ports are the newest snapshot's (one gone stale drops out at
// once), each over the intervals it is in: util and pause (shares), ecn_per_s and drops_per_s
// (per second of the snapshots' clock: fabric time in the simulator), the largest queue; name,
// peer and state from the newest.  Returns a function: snapshot (or null) in,
// { load, samples, span_us } out.
export function loadHistory(n = 10, maxAgeMs = 60000) {
  let kept = [];
  return (snap, now = Date.now()) => {
    const last = kept[kept.length - 1];
    if (snap && snap.interval_us > 0 && !kept.some((k) => k.t_us === snap.t_us && k.iv === snap.interval_us)) {
      if (last && snap.t_us < last.t_us) kept = [];
      kept.push({ t_us: snap.t_us, at: now, iv: snap.interval_us, load: portLoad(snap) });
    }
    while (kept.length > n || (kept.length && now - kept[0].at > maxAgeMs)) kept.shift();
    const newest = kept.length ? kept[kept.length - 1].load : new Map();
    const sums = new Map();
    for (const k of kept) {
      for (const [key, p] of k.load) {
        if (!newest.has(key)) continue;
        const o = sums.get(key) || { util: 0, utilUs: 0, pauseUs: 0, us: 0, ecn: 0, drops: 0, queue: 0 };
        Object.assign(o, { node: p.node, port: p.port, kind: p.kind, peer: p.peer, down: p.down });
        if (p.util !== null) { o.util += p.util * k.iv; o.utilUs += k.iv; }
        o.pauseUs += Math.min(p.pause_us, k.iv); // (priorities paused at once: the port's time once)
        o.us += k.iv;
        o.ecn += p.ecn;
        o.drops += p.drops;
        o.queue = Math.max(o.queue, p.queue);
        sums.set(key, o);
      }
    }
    const load = new Map();
    for (const [key, o] of sums) {
      load.set(key, {
        node: o.node, port: o.port, kind: o.kind, peer: o.peer, down: o.down, queue: o.queue,
        util: o.utilUs ? o.util / o.utilUs : null, pause: Math.min(1, o.pauseUs / o.us),
        ecn_per_s: (o.ecn * 1e6) / o.us, drops_per_s: (o.drops * 1e6) / o.us,
      });
    }
    return { load, samples: kept.length, span_us: kept.reduce((t, k) => t + k.iv, 0) };
  };
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
