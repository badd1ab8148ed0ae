// Changes: the audit log of configuration changes (who, why, what, the value read back).
import { api } from '../lib/api.js';
import { add, clear, errorBox, fmtTime, h, link, put, query, select, setQuery, table } from '../lib/dom.js';

const reasons = new Map(); // change id -> the reason typed so far for settling it (kept when the page redraws)

function values(v) {
  if (!v || typeof v !== 'object') return '–';
  return Object.entries(v).map(([k, x]) => `${k}=${x}`).join(', ');
}

// A change timed out unanswered, perhaps applied (in doubt), whose agent cannot say: an
// operator who checked the device settles it, with why (required).
function settle(c, act) {
  const why = h('input', { type: 'text', class: 'reason', maxlength: 512, placeholder: 'what was checked (required)', 'aria-label': `reason for settling change ${c.id}`, oninput: (e) => reasons.set(c.id, e.target.value) });
  why.value = reasons.get(c.id) || '';
  return h('span', { class: 'actions' }, why,
    h('button', { type: 'button', onclick: () => act(c, true, why.value) }, 'Applied'),
    h('button', { type: 'button', onclick: () => act(c, false, why.value) }, 'Not applied'));
}

function stateText(c) {
  if (c.state === 'pending' && c.after?.length) return `pending (after ${c.after.join(', ')})`;
  if (c.in_doubt) return `${c.state} (in doubt)`;
  if (c.settled) return `${c.state} (settled by ${c.settled.by}: ${c.settled.applied ? 'applied' : 'not applied'}${c.settled.reason ? `, ${c.settled.reason}` : ''})`;
  return c.state;
}

export async function render(root, ctx) {
  let state = query().get('state') || '';
  const msg = h('div', { 'aria-live': 'polite' });
  const list = h('div', { id: 'changes-list' });
  add(root, h('h1', {}, 'Configuration changes'),
    h('div', { class: 'toolbar' }, select('State', 'changes-state', [['', 'all'], ['pending', 'pending'], ['sent', 'sent'], ['applied', 'applied'], ['failed', 'failed'], ['timed_out', 'timed out'], ['in_doubt', 'in doubt']], state, (v) => { state = v; setQuery(v ? { state } : {}); refresh(); })),
    msg, list);

  async function act(c, applied, reason) {
    clear(msg);
    try {
      await api(`/api/v1/changes/${c.id}/settle`, { method: 'POST', body: { applied, reason } });
      reasons.delete(c.id);
      put(msg, h('p', { class: 'ok' }, `Change ${c.id}: settled as ${applied ? 'applied' : 'not applied'}.`));
      await refresh();
    } catch (e) {
      put(msg, errorBox(e));
    }
  }

  async function refresh() {
    const doc = await api(`/api/v1/changes?limit=200${state ? `&state=${state}` : ''}`);
    const cols = [
      { label: 'Id', num: true, value: (c) => String(c.id) },
      { label: 'Created', value: (c) => fmtTime(c.created) },
      { label: 'By', value: (c) => c.actor },
      { label: 'Reason', value: (c) => c.reason || '–' },
      { label: 'Target', value: (c) => link(`#/${c.target.role === 'switch' ? 'switch' : 'host'}/${encodeURIComponent(c.target.agent)}`, [c.target.agent, c.target.device, c.target.port, c.target.queue !== undefined && c.target.queue >= 0 ? `queue ${c.target.queue}` : ''].filter(Boolean).join(' ')) },
      { label: 'Kind', value: (c) => c.target.kind },
      { label: 'Asked', value: (c) => values(c.params) },
      { label: 'Read back', value: (c) => values(c.new) },
      // a pending change whose check counted changes still out goes once they are applied
      { label: 'State', value: (c) => h('span', { class: `state state-${c.state}` }, stateText(c)) },
      { label: 'Error', value: (c) => (c.error?.message ? `${c.error.code ? `${c.error.code}: ` : ''}${c.error.message}` : '') },
    ];
    if (ctx?.canWrite) cols.push({ label: 'Actions', value: (c) => (c.in_doubt ? settle(c, act) : null) });
    for (const id of reasons.keys()) if (!doc.items.some((c) => c.id === id && c.in_doubt)) reasons.delete(id);
    put(list, table(cols, doc.items, { empty: 'no changes', rowAttrs: (c) => ({ 'data-id': c.id, 'data-state': c.state }) }),
    doc.truncated ? h('p', { class: 'note', id: 'changes-more' }, `The newest ${doc.items.length}; older ones: GET /api/v1/changes?limit=N or rocefabctl changes --limit N.`) : null);
  }
  await refresh();
  return { title: 'changes', refresh, poll: 10000, onEvent: (ev) => { if (ev.type === 'change' || ev.type === 'reset') refresh().catch(() => {}); } };
}
