// Overview: rocefabd's warnings (GET /api/v1/health: every agent stale, the store failing, ...),
// agents ok/stale, active alerts, ingest rate, the tuner, and the ports with the most pause
// time, ECN marks and drops over the detector's recent intervals (the last 10 to 20 s, summed).
import { api } from '../lib/api.js';
import { add, fmtNum, fmtPct, fmtUs, h, link, put, table } from '../lib/dom.js';
import { recentLoad } from '../lib/fabric.js';

function portHref(p) {
  return p.kind === 'switch' ? `#/switch/${encodeURIComponent(p.node)}` : `#/host/${encodeURIComponent(p.node)}`;
}

function topTable(title, rows, value, unit, id) {
  return h('div', { class: 'card wide', id }, h('h2', {}, title),
    table([
      { label: 'Port', value: (p) => link(portHref(p), `${p.node} ${p.port}`) },
      { label: 'Peer', value: (p) => p.peer || '–' },
      { label: unit, num: true, value },
    ], rows, { empty: 'none in these intervals' }));
}

export async function render(root, ctx) {
  const body = h('div', { class: 'cards' });
  add(root, h('h1', {}, 'Fabric overview'), body);

  async function refresh() {
    const [health, agents, alerts, recent, cc] = await Promise.all([
      api('/api/v1/health'), api('/api/v1/agents'), api('/api/v1/alerts?state=active'),
      recentLoad(ctx.features), ctx.features.tuner ? api('/api/v1/cc') : null,
    ]);
    const items = agents.items || [];
    const hosts = items.filter((a) => a.role === 'host');
    const switches = items.filter((a) => a.role === 'switch');
    const stale = items.filter((a) => a.status !== 'ok');
    const load = recent ? [...recent.load.values()] : [];
    const top = (key, only = () => true) => load.filter((p) => p[key] > 0 && only(p)).sort((a, b) => b[key] - a[key]).slice(0, 8);
    const waiting = cc ? (await api('/api/v1/cc/proposals')).filter((p) => p.state === 'waiting').length : 0;
    const allStale = items.length > 0 && stale.length === items.length;
    const warnings = health.warnings || [];

    put(body, 
      warnings.length ? h('div', { class: 'card wide warn', id: 'health-warnings', role: 'alert' }, h('h2', {}, 'rocefabd warns'),
        warnings.map((w) => h('p', {}, h('code', {}, w.code), ' ', w.detail))) : null,
      h('div', { class: 'card', id: 'card-agents' }, h('h2', {}, 'Agents'),
        h('p', { class: 'big' }, `${items.length - stale.length} ok`, stale.length ? h('span', { class: 'bad' }, ` · ${stale.length} stale`) : ''),
        h('p', {}, h('span', { id: 'count-hosts' }, `${hosts.length} hosts`), ' · ', h('span', { id: 'count-switches' }, `${switches.length} switches`)),
        stale.length ? h('p', { class: 'bad' }, '⚠ stale: ', stale.slice(0, 12).map((a) => a.id).join(', '), stale.length > 12 ? ' …' : '') : null),
      h('div', { class: 'card', id: 'card-alerts' }, h('h2', {}, 'Active alerts'),
        h('p', { class: 'big' }, h('a', { href: '#/alerts' }, String(alerts.items.length))),
        alerts.items.slice(0, 5).map((a) => h('p', { class: 'alert-line' }, h('span', { class: `kind kind-${a.kind}` }, a.kind), a.subject === a.kind ? '' : ` ${a.subject}`))),
      h('div', { class: 'card' }, h('h2', {}, 'Ingest'),
        h('p', { class: 'big' }, `${fmtNum(Math.round(health.ingest?.samples_per_s || 0))} samples/s`),
        h('p', {}, `${fmtNum(health.ingest?.reports || 0)} reports since start · store queue ${health.store?.queue_depth ?? '–'} of ${health.store?.queue_max ?? '–'}`)),
      h('div', { class: 'card' }, h('h2', {}, 'Congestion-control tuner'),
        cc ? [h('p', { class: 'big' }, `mode ${cc.mode}`), h('p', {}, h('a', { href: '#/tuner' }, `${waiting} proposal${waiting === 1 ? '' : 's'} waiting`), ` · ${cc.steps} steps · ${cc.rolled_back} rolled back`)]
          : h('p', {}, 'not running (cc.interval is 0, or no detector.interval: it reads the fast lane)')),
      recent?.samples ? [
        topTable('Most pause time', top('pause'), (p) => fmtPct(p.pause), 'Paused (share of time)'),
        // where the marking happens: switch queues (a host NIC counts the marked packets it
        // received, which points at the receiver, not at the congested queue)
        topTable('Most ECN marks (switch queues)', top('ecn_per_s', (p) => p.kind === 'switch'), (p) => fmtNum(+p.ecn_per_s.toPrecision(3)), 'Marked packets/s', 'top-ecn'),
        topTable('Most drops', top('drops_per_s'), (p) => fmtNum(+p.drops_per_s.toPrecision(3)), 'Dropped packets/s'),
        h('p', { class: `note wide${allStale ? ' bad' : ''}`, id: 'load-span' }, allStale ? '⚠ Every agent is stale: these rankings are what their last reports said, not the fabric now. ' : '', `Over every interval of the PFC fast lane in the last 10 to 20 s: ${recent.samples} interval${recent.samples === 1 ? '' : 's'}, ${fmtUs(recent.span_us)} in all (per second of the counters' clock: fabric time in the simulator).`),
      ] : h('p', { class: 'note wide' }, ctx.features.detector ? 'No fast-lane interval in the last 10 to 20 s: the rankings of pause time, ECN marks and drops come with the agents\' next fast reports.'
        : 'No PFC fast lane (detector.interval is 0): per-port pause, ECN and drop rankings are not available.'),
    );
  }
  await refresh();
  return { title: 'overview', refresh, poll: 3000, onEvent: () => refresh().catch(() => {}) };
}
