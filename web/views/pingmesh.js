// Pingmesh: the latency/loss heatmap of every probed pair (source rows, destination columns,
// hosts grouped by ToR), p50 / p99 / loss selectable, and the localization's finding outlined.
// The canvas takes the keyboard: arrows move across pairs, the readout says the values.
import { api } from '../lib/api.js';
import { legend, viridisRgb } from '../lib/color.js';
import { add, fmtPct, fmtTime, fmtUs, h, put, query, select, setQuery } from '../lib/dom.js';

const METRICS = { p50: 'p50 latency', p99: 'p99 latency', loss: 'loss' };
const WINDOWS = [['10s', '10 s'], ['30s', '30 s'], ['1m', '1 min'], ['5m', '5 min'], ['15m', '15 min']];

// Every fault the localization names (an older rocefabd: its one finding, unless none).
const findingsOf = (m) => m.findings || (m.finding && m.finding.kind && m.finding.kind !== 'none' ? [m.finding] : []);

export function drawHeatmap(m, metric) {
  const t0 = performance.now();
  const natural = (x, y) => x.localeCompare(y, 'en', { numeric: true });
  const hosts = [...m.hosts].sort((a, b) => natural(a.tor || '', b.tor || '') || natural(a.host, b.host));
  const N = hosts.length;
  const idx = new Map(hosts.map((x, i) => [x.host, i]));
  const cell = Math.max(1, Math.min(24, Math.floor(768 / Math.max(1, N))));
  const margin = 56;
  const size = N * cell;
  const canvas = document.createElement('canvas');
  canvas.width = size + margin;
  canvas.height = size + margin;
  canvas.className = 'heatmap';
  canvas.tabIndex = 0;
  canvas.setAttribute('role', 'img');
  const g = canvas.getContext('2d');
  const grid = new Map();
  const vals = new Float64Array(N * N).fill(NaN); // the metric per cell; NaN: not probed
  let lo = Infinity, hi = 0;
  for (const p of m.pairs) {
    const i = idx.get(p.src), j = idx.get(p.dst);
    if (i === undefined || j === undefined) continue;
    grid.set(i * N + j, p);
    const v = metric === 'loss' ? p.loss : p[`${metric}_us`];
    if (v === null || v === undefined) continue;
    vals[i * N + j] = v;
    if (metric !== 'loss' && v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  }
  if (!(hi > lo)) { lo = lo === Infinity ? 1 : lo; hi = lo * 2; }
  const norm = metric === 'loss' ? (v) => v / 0.1 : (v) => Math.log(v / lo) / Math.log(hi / lo);
  // 256 colours computed once; pixels written as 32-bit words (little-endian RGBA)
  const lut = new Uint32Array(257);
  for (let k = 0; k < 256; k++) {
    const [r, gg, b] = viridisRgb(k / 255);
    lut[k] = (255 << 24) | (b << 16) | (gg << 8) | r;
  }
  lut[256] = (255 << 24) | (230 << 16) | (230 << 8) | 230; // not probed: light grey
  const img = g.createImageData(size, size);
  const px = new Uint32Array(img.data.buffer);
  for (let i = 0; i < N; i++) {
    for (let j = 0; j < N; j++) {
      const v = vals[i * N + j];
      const c = Number.isNaN(v) ? lut[256] : lut[Math.max(0, Math.min(255, Math.round(norm(v) * 255)))];
      for (let y = i * cell; y < (i + 1) * cell; y++) px.fill(c, y * size + j * cell, y * size + (j + 1) * cell);
    }
  }
  g.fillStyle = '#fff';
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.putImageData(img, margin, margin);
  // ToR groups: separators and labels
  g.strokeStyle = '#fff';
  g.fillStyle = '#222';
  g.font = '11px sans-serif';
  let start = 0;
  for (let i = 1; i <= N; i++) {
    if (i === N || hosts[i].tor !== hosts[start].tor) {
      const a = margin + start * cell, b = margin + i * cell;
      if (i < N) { g.beginPath(); g.moveTo(b, margin); g.lineTo(b, margin + size); g.moveTo(margin, b); g.lineTo(margin + size, b); g.stroke(); }
      g.save(); g.translate((a + b) / 2, margin - 6); g.rotate(-Math.PI / 4); g.fillText(hosts[start].tor || '?', 0, 0); g.restore();
      g.fillText(hosts[start].tor || '?', 2, (a + b) / 2 + 4);
      start = i;
    }
  }
  // hosts by name when there is room; pairs flagged bad or that lost probes marked in every view
  if (cell >= 12) {
    g.font = '9px sans-serif';
    hosts.forEach((x, i) => g.fillText(x.host, margin - 30, margin + i * cell + cell / 2 + 3));
    g.font = '11px sans-serif';
  }
  if (cell >= 4) {
    g.fillStyle = '#000';
    for (const [k, p] of grid) {
      if (!p.bad && !p.lost) continue;
      const i = Math.floor(k / N), j = k % N, d = Math.max(2, Math.floor(cell / 3));
      g.fillRect(margin + j * cell + (cell - d) / 2, margin + i * cell + (cell - d) / 2, d, d);
    }
    g.fillStyle = '#222';
  }
  g.fillText('dst →', margin + size - 36, 12);
  g.fillText('src ↓', 2, 12);
  // each finding: its host's or ToR's rows and columns, or the pairs through its links
  g.strokeStyle = '#000';
  g.lineWidth = 2;
  g.setLineDash([4, 3]);
  const mark = (i0, i1) => {
    g.strokeRect(margin, margin + i0 * cell, size, (i1 - i0) * cell);
    g.strokeRect(margin + i0 * cell, margin, (i1 - i0) * cell, size);
  };
  for (const f of findingsOf(m)) {
    if (f.kind === 'host' && idx.has(f.subject)) mark(idx.get(f.subject), idx.get(f.subject) + 1);
    if (f.kind === 'tor') {
      const ii = hosts.map((x, i) => (x.tor === f.subject ? i : -1)).filter((i) => i >= 0);
      if (ii.length) mark(Math.min(...ii), Math.max(...ii) + 1);
    }
  }
  if (findingsOf(m).some((f) => f.kind === 'link')) {
    for (const p of m.pairs) {
      if (!p.through) continue;
      g.strokeRect(margin + idx.get(p.dst) * cell, margin + idx.get(p.src) * cell, Math.max(cell, 2), Math.max(cell, 2));
    }
  }
  g.setLineDash([]);
  return { canvas, hosts, idx, grid, cell, margin, N, lo, hi, ms: performance.now() - t0 };
}

export async function render(root) {
  const q = query();
  let metric = METRICS[q.get('metric')] ? q.get('metric') : 'p99';
  // 10 s: the localization's own window, whose matrix rocefabd keeps from its last pass
  let win = WINDOWS.some(([w]) => w === q.get('window')) ? q.get('window') : '10s';
  const head = h('div', { class: 'toolbar' });
  const finding = h('div', { class: 'card wide', id: 'pm-finding' });
  const wrap = h('div', { class: 'heatmap-wrap', id: 'heatmap' });
  const readout = h('p', { class: 'readout', 'aria-live': 'polite', id: 'pm-readout' }, 'Point at a cell, or focus the map and use the arrow keys.');
  add(root, h('h1', {}, 'Pingmesh'), head, finding, wrap, readout);
  let cur = [0, 0];

  async function refresh() {
    const started = performance.now();
    const m = await api(`/api/v1/probes/matrix?window=${win}&paths=false`);
    if (!m.hosts.length || !m.pairs.length) {
      put(head, select('Window', 'pm-window', WINDOWS, win, (v) => { win = v; setQuery({ metric, window: win }); refresh(); }));
      put(finding, h('h2', {}, 'Localization'), h('p', {}, m.finding?.evidence || 'no finding'));
      put(wrap, h('p', { class: 'note', id: 'pm-empty' }, `No probe results in the last ${m.window_s} s: the pingmesh is off (GET /api/v1/probes/config), no host with a probe endpoint reports yet, or the hosts are stale (the overview says).`));
      root.dataset.renderMs = (performance.now() - started).toFixed(1);
      return;
    }
    const hm = drawHeatmap(m, metric);
    const say = (i, j) => {
      cur = [i, j];
      const p = hm.grid.get(i * hm.N + j);
      const a = hm.hosts[i]?.host, b = hm.hosts[j]?.host;
      // (a pair whose every probe was lost has no latency: not 0, which reads as a perfect one)
      const lat = p && p.n > 0 && p.lost >= p.n ? 'no probe answered' : p && `p50 ${fmtUs(p.p50_us)}, p99 ${fmtUs(p.p99_us)}`;
      readout.textContent = p
        ? `${a} → ${b}: ${lat}, loss ${fmtPct(p.loss, 2)} (${p.n} probes${p.bad ? ', BAD' : ''})`
        : `${a} → ${b}: not probed in this window`;
    };
    hm.canvas.setAttribute('aria-label', `${METRICS[metric]} between ${hm.N} hosts`);
    hm.canvas.addEventListener('mousemove', (e) => {
      const r = hm.canvas.getBoundingClientRect();
      const x = Math.floor((e.clientX - r.left - hm.margin) / hm.cell), y = Math.floor((e.clientY - r.top - hm.margin) / hm.cell);
      if (x >= 0 && y >= 0 && x < hm.N && y < hm.N) say(y, x);
    });
    hm.canvas.addEventListener('keydown', (e) => {
      const d = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
      if (!d) return;
      e.preventDefault();
      say(Math.min(hm.N - 1, Math.max(0, cur[0] + d[0])), Math.min(hm.N - 1, Math.max(0, cur[1] + d[1])));
    });
    put(wrap, hm.canvas);
    const fs = findingsOf(m);
    put(finding, h('h2', {}, fs.length > 1 ? `Localization: ${fs.length} faults apart` : 'Localization'),
      ...(fs.length ? fs : [m.finding || {}]).map((f) =>
        h('p', { class: f.kind && f.kind !== 'none' ? 'bad pm-fault' : '' }, f.kind && f.kind !== 'none' ? h('strong', {}, `${f.kind} ${f.subject}: `) : '', f.evidence || 'no finding',
          // the PFC detector's finding explains it (its alert says how)
          f.attributed_to ? h('em', { class: 'pm-attributed' }, ` — explained by the PFC detector's ${f.attributed_to.kind.replace('_', ' ')} of ${f.attributed_to.subject}`) : '')),
      fs.some((f) => ['host', 'tor', 'link'].includes(f.kind))
        ? h('p', { class: 'note' }, `Outlined (dashed) on the map: the pairs ${fs.length > 1 ? 'they explain' : 'it explains'}.`) : null);
    put(head, 
      select('Show', 'pm-metric', Object.entries(METRICS), metric, (v) => { metric = v; setQuery({ metric, window: win }); refresh(); }),
      select('Window', 'pm-window', WINDOWS, win, (v) => { win = v; setQuery({ metric, window: win }); refresh(); }),
      legend(document, metric === 'loss' ? '0 %' : fmtUs(hm.lo), metric === 'loss' ? '≥ 10 %' : fmtUs(hm.hi), metric === 'loss' ? 'Loss' : `${METRICS[metric]} (log scale)`),
      h('span', { class: 'note' }, '■ in a cell: the pair is flagged bad or lost probes · '),
      h('span', { class: 'note' }, `${hm.N} hosts, ${m.pairs.length} pairs, ${m.op} ${m.size} B, last ${m.window_s} s${m.as_of ? ` as of ${fmtTime(m.as_of)}` : ''} · grey: not probed`));
    root.dataset.renderMs = (performance.now() - started).toFixed(1);
    root.dataset.drawMs = hm.ms.toFixed(1);
  }
  await refresh();
  return { title: 'pingmesh', refresh, poll: 5000 };
}
