// Alerts: the pingmesh's, the PFC detector's and ports that went down (port_down), with their
// evidence; an operator acknowledges them, and mitigates a detector finding that waits in
// advise mode.
import { api } from '../lib/api.js';
import { add, clear, errorBox, fmtTime, h, link, put, query, select, setQuery, table } from '../lib/dom.js';

const openDetails = new Set(); // alert ids whose details the operator opened (kept across redraws)
const reasons = new Map(); // alert id -> the reason typed so far for its mitigation (kept when the page redraws)
const confirming = new Set(); // alert ids whose Mitigate asks for its confirmation

function details(a) {
  const d = a.details;
  if (!d) return null;
  const parts = [];
  // unread: a storm kept isolated while neither its host nor the port it paused reports (no
  // counters to show)
  const source = d.unread ? ' (no readings from it, nor pause counts from the port it paused; check the host, its agent and the switch\'s agent)'
    : d.source_silent ? ` (no readings of its own: read from ${d.paused?.node ?? 'the switch'} ${d.paused?.port ?? 'port it pauses'}; check the host and its agent)` : '';
  if (d.culprit) parts.push(h('p', {}, 'Culprit: ', link(`#/host/${encodeURIComponent(d.culprit)}`, d.culprit), source));
  if (d.class === 'deadlock' && d.ports) parts.push(h('p', {}, 'Cycle: ', d.ports.map((p) => `${p.node} ${p.port}`).join(' → '), ' → …'));
  if (d.paused) {
    parts.push(h('p', {}, d.unread ? `Pauses: ${d.paused.node} ${d.paused.port} (no pause readings: kept out of lossless mode while nothing read says the storm is over)`
      : `Pauses: ${d.paused.node} ${d.paused.port} (paused ${d.paused.paused_us} µs of an interval, as the summary says)`));
  }
  if (d.victims?.length) parts.push(h('p', {}, `Victims (${d.victims_total ?? d.victims.length}): `, d.victims.slice(0, 12).map((p) => `${p.node} ${p.port}`).join(', '), d.victims.length > 12 ? ' …' : ''));
  if (d.suggested) parts.push(h('p', {}, `Suggested: ${d.suggested.change} on ${d.suggested.node} ${d.suggested.port} priority ${d.suggested.priority}`));
  if (d.attributed_to) parts.push(h('p', {}, `Attributed to ${d.attributed_to.kind} ${d.attributed_to.subject}`));
  if (d.may_add) parts.push(h('p', {}, `Found before the PFC detector's ${d.may_add.kind} ${d.may_add.subject}, which may add to it`));
  if (d.mitigated) parts.push(h('p', {}, 'Mitigated.'));
  return parts.length ? h('details', {
    open: openDetails.has(a.id),
    ontoggle: (e) => (e.target.open ? openDetails.add(a.id) : openDetails.delete(a.id)),
  }, h('summary', {}, 'Details'), parts) : null;
}

// Mitigate, with why (optional): the change's reason in the audit log, after the finding's.  It
// changes the fabric (a port out of lossless mode): the button asks first, naming the change,
// and Confirm sends it (the question stays while the page redraws).
function mitigate(a, act) {
  const s = a.details.suggested;
  const why = h('input', { type: 'text', class: 'reason', maxlength: 512, placeholder: 'reason (optional)', 'aria-label': `reason for mitigating alert ${a.id}`, oninput: (e) => reasons.set(a.id, e.target.value) });
  const span = h('span', { class: 'actions' });
  why.value = reasons.get(a.id) || '';
  const ask = () => put(span, why, h('button', { type: 'button', onclick: () => { confirming.add(a.id); confirm(); } }, 'Mitigate'));
  const confirm = () => put(span, why,
    h('span', { class: 'confirm' }, `${s.change} on ${s.node} ${s.port} priority ${s.priority}: the port stops obeying pauses until the detector restores it. `),
    h('button', { type: 'button', onclick: () => { confirming.delete(a.id); act(a, 'mitigate', why.value); } }, 'Confirm'),
    h('button', { type: 'button', onclick: () => { confirming.delete(a.id); ask(); } }, 'Cancel'));
  if (confirming.has(a.id)) confirm(); else ask();
  return span;
}

export async function render(root, ctx) {
  let state = query().get('state') || 'active';
  const msg = h('div', { 'aria-live': 'polite' });
  const list = h('div', { id: 'alerts-list' });
  add(root, h('h1', {}, 'Alerts'),
    h('div', { class: 'toolbar' }, select('Show', 'alerts-state', [['active', 'active'], ['cleared', 'cleared'], ['all', 'all']], state, (v) => { state = v; setQuery({ state }); refresh(); })),
    msg, list);

  async function act(a, what, reason) {
    clear(msg);
    try {
      await api(`/api/v1/alerts/${a.id}/${what}`, { method: 'POST', body: reason ? { reason } : undefined });
      if (what === 'mitigate') reasons.delete(a.id);
      put(msg, h('p', { class: 'ok' }, `Alert ${a.id}: ${what === 'ack' ? 'acknowledged' : 'mitigation requested'}.`));
      await refresh();
    } catch (e) {
      put(msg, errorBox(e));
    }
  }

  async function refresh() {
    const doc = await api(`/api/v1/alerts${state === 'all' ? '' : `?state=${state}`}`);
    const cols = [
      { label: 'Id', num: true, value: (a) => String(a.id) },
      { label: 'Kind', value: (a) => h('span', { class: `kind kind-${a.kind}` }, a.kind) },
      { label: 'Subject', value: (a) => a.subject },
      { label: 'State', value: (a) => a.state },
      { label: 'First seen', value: (a) => fmtTime(a.first_seen) },
      { label: 'Last seen', value: (a) => fmtTime(a.last_seen) },
      { label: 'Evidence', value: (a) => [a.evidence, details(a)] },
      { label: 'Acknowledged', value: (a) => (a.acked ? `${a.acked.by}, ${fmtTime(a.acked.at)}` : '–') },
      // the changes on the finding, newest first: what, who (an operator, or the detector in
      // auto mode and for every restoration), when, the change queued, why
      { label: 'Changes made', value: (a) => (a.mitigations.length ? a.mitigations.slice().reverse().map((m) => h('div', { class: 'mitigation' }, `${m.op === 'restore' ? 'restored' : 'mitigated'} by ${m.by}, ${fmtTime(m.at)}, change ${m.change}${m.reason ? `: ${m.reason}` : ''}`)) : '–') },
    ];
    if (ctx.canWrite) {
      cols.push({ label: 'Actions', value: (a) => [
        !a.acked ? h('button', { type: 'button', onclick: () => act(a, 'ack') }, 'Acknowledge') : null,
        a.state === 'active' && a.details && !a.details.mitigated && a.details.suggested ? mitigate(a, act) : null,
      ] });
    }
    for (const id of reasons.keys()) if (!doc.items.some((a) => a.id === id && a.state === 'active')) reasons.delete(id);
    for (const id of confirming) if (!doc.items.some((a) => a.id === id && a.state === 'active')) confirming.delete(id);
    put(list, table(cols, doc.items, { empty: `no ${state === 'all' ? '' : state + ' '}alerts`, rowAttrs: (a) => ({ 'data-kind': a.kind, 'data-id': a.id }) }));
  }
  await refresh();
  return { title: 'alerts', refresh, poll: 10000, onEvent: (ev) => { if (ev.type === 'alert' || ev.type === 'reset') refresh().catch(() => {}); } };
}
