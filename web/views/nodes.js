// Nodes: every host and switch that reports (GET /api/v1/agents), filtered by name, role and
// status, each opening its page: the way to a host in a fabric too large for the topology's
// labels.
import { api } from '../lib/api.js';
import { add, fmtNum, fmtTime, h, link, put, query, select, setQuery, table } from '../lib/dom.js';
import { tiers } from '../lib/fabric.js';

export async function render(root) {
  const q = query();
  let role = ['host', 'switch'].includes(q.get('role')) ? q.get('role') : '';
  let status = ['ok', 'stale'].includes(q.get('status')) ? q.get('status') : '';
  let text = q.get('q') || '';
  const count = h('span', { class: 'note', id: 'nodes-count', 'aria-live': 'polite' });
  const list = h('div', { id: 'nodes-list' });
  const search = h('input', { type: 'search', id: 'nodes-q', placeholder: 'name contains', 'aria-label': 'name contains', value: text });
  let items = [];
  const save = () => setQuery(Object.fromEntries(Object.entries({ role, status, q: text }).filter(([, v]) => v)));
  search.addEventListener('input', () => { text = search.value.trim(); save(); draw(); });
  add(root, h('h1', {}, 'Nodes'),
    h('div', { class: 'toolbar' },
      h('label', { for: 'nodes-q' }, 'Name '), search,
      select('Role', 'nodes-role', [['', 'all'], ['host', 'hosts'], ['switch', 'switches']], role, (v) => { role = v; save(); draw(); }),
      select('Status', 'nodes-status', [['', 'all'], ['ok', 'ok'], ['stale', 'stale']], status, (v) => { status = v; save(); draw(); }),
      count),
    list);

  let torOf = new Map();
  function draw() {
    const natural = (x, y) => x.localeCompare(y, 'en', { numeric: true });
    const rows = items.filter((a) => (!role || a.role === role) && (!status || a.status === status) &&
      (!text || a.id.toLowerCase().includes(text.toLowerCase()))).sort((x, y) => natural(x.id, y.id));
    put(count, `${rows.length} of ${items.length}`);
    put(list, table([
      { label: 'Name', value: (a) => link(`#/${a.role === 'switch' ? 'switch' : 'host'}/${encodeURIComponent(a.id)}`, a.id) },
      { label: 'Role', value: (a) => a.role },
      { label: 'ToR', value: (a) => (torOf.get(a.id) ? link(`#/switch/${encodeURIComponent(torOf.get(a.id))}`, torOf.get(a.id)) : '–') },
      { label: 'Status', value: (a) => h('span', { class: a.status === 'ok' ? '' : 'bad' }, a.status) },
      { label: 'Last report', value: (a) => fmtTime(a.last_seen) },
      { label: 'Collection errors', num: true, value: (a) => (a.errors?.length ? h('span', { class: 'bad' }, fmtNum(a.errors.length)) : '0') },
      { label: 'Backend', value: (a) => a.backend },
    ], rows, { empty: items.length ? 'no node matches' : 'no agent has reported yet' }));
  }

  async function refresh() {
    const [agents, topo] = await Promise.all([api('/api/v1/agents'), api('/api/v1/topology')]);
    items = agents.items || [];
    torOf = tiers(topo).torOf;
    draw();
  }
  await refresh();
  return { title: 'nodes', refresh, poll: 10000 };
}
