// Changes: the audit log of configuration changes (who, why, what, the value read back).
import { api } from '../lib/api.js';
import { add, fmtTime, h, link, put, query, select, setQuery, table } from '../lib/dom.js';

function values(v) {
  if (!v || typeof v !== 'object') return '–';
  return Object.entries(v).map(([k, x]) => `${k}=${x}`).join(', ');
}

export async function render(root) {
  let state = query().get('state') || '';
  const list = h('div', { id: 'changes-list' });
  add(root, h('h1', {}, 'Configuration changes'),
    h('div', { class: 'toolbar' }, select('State', 'changes-state', [['', 'all'], ['pending', 'pending'], ['sent', 'sent'], ['applied', 'applied'], ['failed', 'failed'], ['timed_out', 'timed out']], state, (v) => { state = v; setQuery(v ? { state } : {}); refresh(); })),
    list);

  async function refresh() {
    const doc = await api(`/api/v1/changes?limit=200${state ? `&state=${state}` : ''}`);
    put(list, table([
      { label: 'Id', num: true, value: (c) => String(c.id) },
      { label: 'Created', value: (c) => fmtTime(c.created) },
      { label: 'By', value: (c) => c.actor },
      { label: 'Reason', value: (c) => c.reason || '–' },
      { label: 'Target', value: (c) => link(`#/${c.target.role === 'switch' ? 'switch' : 'host'}/${encodeURIComponent(c.target.agent)}`, [c.target.agent, c.target.device, c.target.port, c.target.queue !== undefined && c.target.queue >= 0 ? `queue ${c.target.queue}` : ''].filter(Boolean).join(' ')) },
      { label: 'Kind', value: (c) => c.target.kind },
      { label: 'Asked', value: (c) => values(c.params) },
      { label: 'Read back', value: (c) => values(c.new) },
      // a pending change whose check counted changes still out goes once they are applied
      { label: 'State', value: (c) => h('span', { class: `state state-${c.state}` }, c.state === 'pending' && c.after?.length ? `pending (after ${c.after.join(', ')})` : c.in_doubt ? `${c.state} (in doubt)` : c.state) },
      { label: 'Error', value: (c) => (c.error?.message ? `${c.error.code ? `${c.error.code}: ` : ''}${c.error.message}` : '') },
    ], doc.items, { empty: 'no changes', rowAttrs: (c) => ({ 'data-id': c.id, 'data-state': c.state }) }),
    doc.truncated ? h('p', { class: 'note', id: 'changes-more' }, `The newest ${doc.items.length}; older ones: GET /api/v1/changes?limit=N or rocefabctl changes --limit N.`) : null);
  }
  await refresh();
  return { title: 'changes', refresh, poll: 10000, onEvent: (ev) => { if (ev.type === 'change' || ev.type === 'reset') refresh().catch(() => {}); } };
}
