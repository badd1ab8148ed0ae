// Port detail: time-series charts of tx/rx rate, pause time received and sent, ECN marks,
// CNPs and queue depth over a chosen range (GET /ports/{id}/counters?step=), and the latest
// value of every counter.
import { api } from '../lib/api.js';
import { lineChart } from '../lib/chart.js';
import { add, clear, errorBox, fmtBits, fmtBytes, fmtNum, fmtTime, h, link, put, query, select, setQuery, si, table } from '../lib/dom.js';

const RANGES = [['auto', 0], ['1s', 1], ['10s', 10], ['1m', 60], ['5m', 300], ['15m', 900], ['1h', 3600], ['6h', 21600], ['24h', 86400]];

// [title, unit, formatter, [[label, counter, transform]]]; a counter the port lacks is left out.
const CHARTS = [
  ['Throughput', 'bits/s', fmtBits, [['tx', 'tx_bytes', (p) => p.rate * 8], ['rx', 'rx_bytes', (p) => p.rate * 8]]],
  ['Pause time', '% of the time', (v) => `${+v.toPrecision(3)} %`, [['paused (rx pause)', 'pfc_rx_pause_duration_us', (p) => p.rate / 1e4], ['pausing (tx pause)', 'pfc_tx_pause_duration_us', (p) => p.rate / 1e4]]],
  ['ECN marks', 'packets/s', (v) => si(v, 'pkt/s'), [['marked (switch queue)', 'ecn_marked_packets', (p) => p.rate], ['marked (received by NIC)', 'np_ecn_marked_roce_packets', (p) => p.rate]]],
  ['CNPs', 'CNPs/s', (v) => si(v, '/s'), [['sent (NP)', 'np_cnp_sent', (p) => p.rate], ['handled (RP)', 'rp_cnp_handled', (p) => p.rate]]],
  ['Queue depth', 'bytes', fmtBytes, [['depth (max in step)', 'queue_depth_bytes', (p) => p.max ?? p.value], ['periodic watermark', 'queue_watermark_periodic_bytes', (p) => p.max ?? p.value]]],
];

// A counter's rate as an operator reads it: bits/s for bytes, the share of the time for pause
// durations, SI prefixes for the rest.
function rate(c) {
  if (c.rate === null || c.rate === undefined) return '–';
  if (c.unit === 'bytes') return fmtBits(c.rate * 8);
  if (c.unit === 'microseconds') return `${Math.min(100, c.rate / 1e4).toFixed(2)} % of the time`;
  return si(c.rate, `${c.unit}/s`);
}

// The series of one counter summed over priorities (gauges: the max) per bucket.
function combine(series, name, fn) {
  const acc = new Map();
  let any = false;
  for (const s of series) {
    if (s.name !== name) continue;
    any = true;
    for (const p of s.points) {
      if (p.rate === null && p.value === undefined) continue;
      const v = fn(p);
      if (v === null || v === undefined || Number.isNaN(v)) continue;
      acc.set(p.t, s.kind === 'gauge' ? Math.max(acc.get(p.t) ?? 0, v) : (acc.get(p.t) ?? 0) + v);
    }
  }
  return any ? [...acc.entries()].sort((a, b) => a[0] - b[0]) : null;
}

// "auto": the last hour, or less when the port's samples start later (a new agent; the
// simulator's fabric time, which runs slower than the wall clock).
async function autoSpan(id, to) {
  const from = new Date(to.getTime() - 3600e3);
  const doc = await api(`/api/v1/ports/${encodeURIComponent(id)}/counters?names=tx_bytes,rx_bytes&from=${from.toISOString()}&to=${to.toISOString()}&step=30s`);
  const ts = doc.series.flatMap((s) => s.points.map((p) => p.t));
  if (!ts.length) return 300;
  const first = Math.min(...ts);
  if (first > from.getTime() / 1000 + 60) {
    // within one 30 s bucket: ask the raw samples of it for the first one's time
    const raw = await api(`/api/v1/ports/${encodeURIComponent(id)}/counters?names=tx_bytes&from=${new Date(first * 1000).toISOString()}&to=${new Date(first * 1000 + 30e3).toISOString()}`).catch(() => null);
    const t0 = raw?.series?.[0]?.points?.[0]?.t ?? first;
    return Math.max(0.05, to.getTime() / 1000 - t0);
  }
  return 3600;
}

export async function render(root, ctx) {
  const id = ctx.route.args.join('/');
  let range = RANGES.find(([r]) => r === query().get('range'))?.[0] || 'auto';
  const port = await api(`/api/v1/ports/${encodeURIComponent(id)}`);
  const agent = await api(`/api/v1/agents/${encodeURIComponent(port.host)}`).catch(() => ({ role: 'host' }));
  const has = new Set(port.counters.map((c) => c.name));
  const charts = h('div', { class: 'charts' });
  const latest = h('div', {});
  const toolbar = h('div', { class: 'toolbar' });
  let live = [];
  add(root, h('h1', {}, `Port ${port.id}`),
    h('p', {}, link(`#/${agent.role === 'switch' ? 'switch' : 'host'}/${encodeURIComponent(port.host)}`, port.host), ` · device ${port.device} port ${port.port} · ${port.state}${port.stale ? ' (stale: as its agent last reported it)' : ''} · ${port.speed_mbps ? fmtBits(port.speed_mbps * 1e6) : 'speed unknown'} · last sample ${fmtTime(port.sampled_at)}`),
    toolbar, charts, h('h2', {}, 'Latest counters'), latest);

  async function refresh() {
    const now = await api(`/api/v1/ports/${encodeURIComponent(id)}`);
    const to = new Date(now.sampled_at || Date.now());
    const span = range === 'auto' ? await autoSpan(id, to) : RANGES.find(([r]) => r === range)[1];
    const from = new Date(to.getTime() - span * 1000);
    const step = Math.max(0.001, +(span / 120).toPrecision(3));
    const names = [...new Set(CHARTS.flatMap(([, , , ss]) => ss.map(([, n]) => n)))].filter((n) => has.has(n));
    const doc = await api(`/api/v1/ports/${encodeURIComponent(id)}/counters?names=${names.join(',')}&from=${from.toISOString()}&to=${to.toISOString()}&step=${step}s`);
    for (const c of live) c.destroy();
    live = [];
    clear(charts);
    for (const [title, unit, fmt, specs] of CHARTS) {
      const series = specs.map(([label, name, fn]) => ({ label, points: has.has(name) ? combine(doc.series, name, fn) : null })).filter((s) => s.points);
      if (!series.length) continue;
      const canvas = h('canvas', { role: 'img', 'aria-label': `${title} of ${id}, ${unit}` });
      charts.append(h('div', { class: 'chart' }, canvas));
      live.push(await lineChart(canvas, title, unit, series, fmt, span, {
        yMax: unit === '% of the time' ? 100 : undefined,
        xTitle: doc.clock === 'fabric' ? 'fabric time (a simulated device: not the wall clock)' : undefined,
      }));
    }
    put(latest, table([
      { label: 'Counter', value: (c) => c.name },
      { label: 'Priority', num: true, value: (c) => (c.priority === null ? '–' : String(c.priority)) },
      { label: 'Value', num: true, value: (c) => `${fmtNum(c.kind === 'gauge' ? c.value ?? c.raw : c.raw)}${c.unit && c.unit !== 'state' ? ` ${c.unit}` : ''}` },
      { label: 'Rate', num: true, value: (c) => (c.kind === 'gauge' ? '–' : rate(c)) },
    ], now.counters.filter((c) => c.priority === null || c.raw || c.value || c.rate)));
  }
  toolbar.append(select('Range', 'port-range', RANGES.map(([r]) => [r, r === 'auto' ? 'since the first sample (up to 1 h)' : `last ${r}`]), range, (v) => {
    range = v; setQuery({ range }); refresh().catch((e) => put(charts, errorBox(e)));
  }), h('span', { class: 'note' }, 'Ranges end at the port\'s last sample; times are the samples\' own (in the simulator: fabric time, slower than the wall clock).'));
  await refresh();
  return { title: `port ${id}`, refresh, poll: 5000, destroy: () => live.forEach((c) => c.destroy()) };
}
