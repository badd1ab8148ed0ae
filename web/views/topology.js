// Topology: the leaf-spine in tiers (spines, leaves, the hosts under each leaf), links
// coloured by utilization or pause time in the detector's last interval, stale agents, their
// links (state as last reported) and down links marked, and the active alerts drawn on it: a
// deadlock's cycle, a storm's culprit and victims, the link, host or ToR the pingmesh names.
// Nodes are links: Tab moves through them, Enter opens one.
import { api } from '../lib/api.js';
import { legend, viridis } from '../lib/color.js';
import { add, fmtPct, fmtUs, h, link, put, query, s, select, setQuery } from '../lib/dom.js';
import { recentLoad, tiers } from '../lib/fabric.js';

const METRICS = {
  util: { label: 'Utilization', scale: 1, fmt: (v) => fmtPct(v, 0), low: '0 %', high: '100 %' },
  pause: { label: 'Pause time', scale: 0.1, fmt: (v) => fmtPct(v, 2), low: '0 %', high: '≥ 10 % of the time' },
};
const DETECTOR_KINDS = new Set(['deadlock', 'pause_storm', 'slow_receiver', 'persistent']);
// the pingmesh localization's findings: a link ("a-b", links that tie "a-b|c-d"), a host, a ToR
const PINGMESH_KINDS = new Set(['link', 'host', 'tor', 'fabric']);

function nodeHref(id, role) {
  return `#/${role === 'host' ? 'host' : 'switch'}/${encodeURIComponent(id)}`;
}

// Link value: the worse of its two ends (utilization: transmitted; pause: paused).
function linkValue(l, load, metric) {
  const a = load.get(`${l.a.node}|${l.a.port}`), b = load.get(`${l.b.node}|${l.b.port}`);
  const v = [a?.[metric], b?.[metric]].filter((x) => x !== null && x !== undefined);
  return v.length ? Math.max(...v) : null;
}

// load: per "node|port", the util and pause of recentLoad().
export function draw(topo, load, alerts, metric, width = 960) {
  const t0 = performance.now();
  const m = METRICS[metric];
  const tr = tiers(topo);
  const byId = new Map(topo.nodes.map((n) => [n.id, n]));
  const nl = Math.max(1, tr.leaves.length);
  const perLeaf = Math.max(1, ...tr.leaves.map((l) => tr.hostsOf.get(l).length));
  // one row of hosts under each leaf when they fit, else a grid
  const W = Math.max(width, Math.min(4000, nl * perLeaf * 8));
  const slot = W / nl;
  let pitch = Math.min(40, (slot - 8) / perLeaf), hs, cols;
  const grid = pitch < 8; // a large fabric: a host's square carries its link (no line drawn)
  if (!grid) {
    hs = Math.min(16, pitch - 3);
    cols = perLeaf;
  } else {
    hs = 5;
    pitch = hs + 2;
    cols = Math.max(1, Math.floor((slot - 8) / pitch));
  }
  const rows = Math.ceil(perLeaf / cols);
  const labelHosts = pitch >= 26;
  const ySpine = 40, yLeaf = 190, yHost = 270;
  const H = yHost + rows * pitch + (labelHosts ? 30 : 10);
  const pos = new Map();
  tr.spines.forEach((id, i) => pos.set(id, [(i + 0.5) * (W / Math.max(1, tr.spines.length)), ySpine]));
  tr.leaves.forEach((id, i) => {
    pos.set(id, [(i + 0.5) * slot, yLeaf]);
    const hosts = tr.hostsOf.get(id);
    const bw = Math.min(cols, hosts.length) * pitch;
    hosts.forEach((ho, k) => {
      const x = (i + 0.5) * slot - bw / 2 + (k % cols) * pitch + pitch / 2;
      pos.set(ho, [x, yHost + Math.floor(k / cols) * pitch + hs / 2]);
    });
  });

  // what the active detector alerts point at
  const culprits = new Set(), victims = new Set(), hlPorts = new Map(), suspectLinks = new Set(), suspects = new Set();
  for (const a of alerts) {
    const d = a.details || {};
    if (a.kind === 'link') a.subject.split('|').forEach((x) => suspectLinks.add(x));
    else if (a.kind === 'host' || a.kind === 'tor') suspects.add(a.subject);
    if (!DETECTOR_KINDS.has(a.kind)) continue;
    if (d.culprit) culprits.add(d.culprit);
    for (const p of d.ports || []) hlPorts.set(`${p.node}|${p.port}`, a.kind === 'deadlock' ? 'cycle' : 'source');
    for (const p of d.victims || []) {
      victims.add(p.node);
      if (!hlPorts.has(`${p.node}|${p.port}`)) hlPorts.set(`${p.node}|${p.port}`, 'victim');
    }
  }

  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'topo', role: 'img', 'aria-label': `Topology coloured by ${m.label.toLowerCase()}` });
  const gLinks = s('g', { class: 'links' }), gHl = s('g', { class: 'highlights' }), gNodes = s('g', { class: 'nodes' });
  let ndown = 0, nstale = 0, nsuspect = 0;
  const hostVal = new Map(); // a host's colour: its link's value
  for (const l of topo.links) {
    const pa = pos.get(l.a.node), pb = pos.get(l.b.node);
    if (!pa || !pb) continue;
    const v = linkValue(l, load, metric);
    const down = l.state !== 'up';
    const stale = !!l.stale; // an agent at either end is stale: the state is as last reported
    ndown += down && !stale;
    nstale += stale;
    const hl = hlPorts.get(`${l.a.node}|${l.a.port}`) || hlPorts.get(`${l.b.node}|${l.b.port}`);
    const suspect = suspectLinks.has(`${l.a.node}-${l.b.node}`) || suspectLinks.has(`${l.b.node}-${l.a.node}`);
    nsuspect += suspect;
    const hostLink = byId.get(l.a.node)?.role === 'host' || byId.get(l.b.node)?.role === 'host';
    if (hostLink) {
      const ho = byId.get(l.a.node)?.role === 'host' ? l.a.node : l.b.node;
      hostVal.set(ho, down ? 'down' : v);
      if (grid && !hl && !suspect) continue;
    }
    const [x1, y1] = pa, [x2, y2] = pb;
    const up = y1 < y2 ? [x1, y1, x2, y2] : [x2, y2, x1, y1];
    const attrs = { x1: up[0], y1: up[1] + (hostLink ? 10 : 12), x2: up[2], y2: up[3] - (hostLink ? hs / 2 : 12) };
    // (a link both the detector and the pingmesh point at: both drawn, the pingmesh's under)
    if (suspect) gHl.append(s('line', { ...attrs, class: 'hl hl-suspect', 'data-link': l.id }));
    if (hl) gHl.append(s('line', { ...attrs, class: `hl hl-${hl}`, 'data-link': l.id }));
    const title = `${l.a.node} ${l.a.port} ↔ ${l.b.node} ${l.b.port}: ${stale ? `stale (an agent at its ends is silent; last reported ${down ? 'down' : 'up'})` : down ? 'DOWN' : `${m.label.toLowerCase()} ${v === null ? 'unknown' : m.fmt(v)}`}${suspect ? '; the pingmesh names this link' : ''}`;
    // a link opens its upper end's port (the switch side); by mouse: the keyboard goes through
    // the nodes, whose pages list their ports
    const end = y1 <= y2 ? l.a : l.b;
    gLinks.append(s('a', { href: `#/port/${encodeURIComponent(end.port_id)}`, tabindex: '-1', class: 'link-a' },
      s('line', { ...attrs, class: `link${down ? ' down' : ''}${stale ? ' stale' : ''}`, stroke: stale ? '#c4c4c4' : down ? '#777' : viridis(v === null ? null : v / m.scale), 'data-link': l.id }, s('title', {}, title))));
    if (down && !stale) gLinks.append(s('text', { x: (attrs.x1 + attrs.x2) / 2, y: (attrs.y1 + attrs.y2) / 2 + 4, class: 'down-mark' }, '✕'));
  }
  for (const n of topo.nodes) {
    const p = pos.get(n.id);
    if (!p) continue;
    const stale = n.status !== 'ok';
    const suspectNode = suspects.has(n.id);
    nsuspect += suspectNode;
    const cls = ['node', n.role, stale ? 'stale' : '', culprits.has(n.id) ? 'culprit' : '', victims.has(n.id) ? 'victim' : '', suspectNode ? 'suspect' : ''].join(' ');
    const state = `${stale ? 'stale agent' : 'ok'}${culprits.has(n.id) ? ', culprit' : ''}${victims.has(n.id) ? ', victim' : ''}${suspectNode ? ', the pingmesh\'s suspect' : ''}`;
    const a = s('a', { href: nodeHref(n.id, n.role), class: cls, 'data-node': n.id, 'aria-label': `${n.id} (${n.role}, ${state})` }, s('title', {}, `${n.id}: ${state}, ${n.ports_up}/${n.ports} ports up`));
    if (n.role === 'switch') {
      a.append(s('rect', { x: p[0] - 34, y: p[1] - 12, width: 68, height: 24, rx: 4 }),
        s('text', { x: p[0], y: p[1] + 4 }, n.id + (stale ? ' ⚠' : '')));
    } else {
      const v = hostVal.get(n.id);
      a.append(s('rect', { x: p[0] - hs / 2, y: p[1] - hs / 2, width: hs, height: hs, fill: v === 'down' ? '#777' : viridis(v === undefined || v === null ? null : v / m.scale) }));
      if (grid && v === 'down') a.append(s('text', { x: p[0], y: p[1] + hs / 2, class: 'down-mark' }, '✕'));
      if (labelHosts) a.append(s('text', { x: p[0], y: p[1] + hs / 2 + 11, class: 'host-label' }, n.id + (stale ? '⚠' : '')));
    }
    if (culprits.has(n.id)) a.append(s('text', { x: p[0], y: p[1] - (n.role === 'switch' ? 16 : hs / 2 + 3), class: 'badge' }, '⚡ culprit'));
    gNodes.append(a);
  }
  svg.append(gHl, gLinks, gNodes);
  const stats = { nodes: topo.nodes.length, links: topo.links.length, down: ndown, stale: nstale, suspects: nsuspect, culprits: [...culprits], victims: victims.size, ms: performance.now() - t0 };
  return { svg, stats };
}

export async function render(root, ctx) {
  const q = query();
  let metric = METRICS[q.get('color')] ? q.get('color') : 'util';
  const head = h('div', { class: 'toolbar' });
  const canvas = h('div', { class: 'topo-wrap', id: 'topology' });
  const side = h('div', { class: 'topo-side' });
  add(root, h('h1', {}, 'Topology'), head, canvas, side);

  async function refresh() {
    const started = performance.now();
    const [topo, recent, alerts] = await Promise.all([
      api('/api/v1/topology'), recentLoad(ctx.features), api('/api/v1/alerts?state=active'),
    ]);
    const { svg, stats } = draw(topo, recent ? recent.load : new Map(), alerts.items, metric, Math.max(600, canvas.clientWidth - 4));
    put(canvas, svg);
    const det = alerts.items.filter((a) => DETECTOR_KINDS.has(a.kind) || PINGMESH_KINDS.has(a.kind));
    put(head, 
      select('Colour links by', 'topo-color', Object.entries(METRICS).map(([k, v]) => [k, v.label]), metric, (v) => {
        metric = v; setQuery({ color: v }); refresh();
      }),
      legend(document, METRICS[metric].low, METRICS[metric].high, METRICS[metric].label),
      h('span', { class: 'key' }, h('span', { class: 'key-down' }, '✕ - - down link'), ' ', h('span', { class: 'key-stale' }, '⚠ stale agent (its links faded: as last reported)'), ' ', h('span', { class: 'key-culprit' }, '⚡ culprit'), ' ', h('span', { class: 'key-victim' }, '▢ victim'), ' ', h('span', { class: 'key-cycle' }, '▬ black outline: a deadlock\'s cycle, a storm\'s source link (dashed grey: its victims)'), ' ', h('span', { class: 'key-suspect' }, '▬ red outline: what the pingmesh names (a link, a host, a ToR)')),
      h('span', { class: 'note', id: 'topo-stats' }, `${stats.nodes} nodes, ${stats.links} links, ${stats.down} down${stats.stale ? `, ${stats.stale} stale` : ''}${recent?.samples
        ? ` · load over every fast-lane interval of the last 10 to 20 s (${recent.samples}, ${fmtUs(recent.span_us)} in all, of the counters' clock: fabric time in the simulator); a host's square: its link`
        : ctx.features.detector ? ' · no link load: no fast-lane interval in the last 10 to 20 s (are the agents reporting?)' : ' · no PFC fast lane (detector.interval is 0): no link load'}`),
    );
    put(side, det.length
      ? h('div', { class: 'card wide', id: 'topo-findings' }, h('h2', {}, 'On the topology'),
        det.map((a) => h('p', {}, h('span', { class: `kind kind-${a.kind}` }, a.kind), ' ', link('#/alerts', a.subject), ': ', a.evidence)))
      : h('p', { class: 'note' }, 'No active deadlock, pause storm, slow receiver or pingmesh finding.'));
    root.dataset.renderMs = (performance.now() - started).toFixed(1);
    root.dataset.drawMs = stats.ms.toFixed(1);
  }
  await refresh();
  return { title: 'topology', refresh, poll: 3000, onEvent: (ev) => { if (ev.type !== 'proposal') refresh().catch(() => {}); } };
}
