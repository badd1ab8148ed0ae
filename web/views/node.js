// Host and switch detail: ports with their state and settings, links to each port's charts,
// and for operators the edit forms (ECN of a switch queue, DCQCN of a host); the server's
// validation errors are shown at the field they name (problem+json "pointer").
import { api } from '../lib/api.js';
import { add, clear, errorBox, fmtBits, fmtBytes, fmtNum, fmtTime, h, link, put, table } from '../lib/dom.js';

// A size as typed: plain bytes as a number, "100KB" as the string the API parses (and refuses,
// at the field, when it is not a size).
function size(text) {
  const t = text.trim().replace(/\s+/g, '');
  return /^\d+$/.test(t) ? Number(t) : t;
}

function field(name, label, attrs, help) {
  return h('div', { class: 'field' },
    h('label', { for: `f-${name}` }, label),
    h('input', { id: `f-${name}`, name, ...attrs }),
    help ? h('span', { class: 'help' }, help) : null,
    h('span', { class: 'field-error', id: `err-${name}`, role: 'alert' }));
}

// Submits body through fn; a problem pointing at a field ("/kmin_bytes") is shown under it.
// Follows changes until they are settled, and says how they went (with what the agent read
// back); the page's tables follow through the change events.
async function follow(ids, msg) {
  const done = ['applied', 'failed', 'timed_out'];
  for (let i = 0; i < 120; i++) {
    await new Promise((r) => setTimeout(r, 500));
    if (!msg.isConnected) return;
    const cs = await Promise.all(ids.map((id) => api(`/api/v1/changes/${id}`).catch(() => null)));
    if (cs.some((c) => !c || !done.includes(c.state))) continue;
    const bad = cs.filter((c) => c.state !== 'applied');
    put(msg, h('p', { class: bad.length ? 'error' : 'ok', id: 'change-outcome' },
      bad.length ? `Change ${bad.map((c) => `${c.id} ${c.state}${c.error?.message ? `: ${c.error.message}` : ''}`).join('; ')}.`
        : `Applied (change${ids.length === 1 ? '' : 's'} ${ids.join(', ')}); read back: ${Object.entries(cs[0].new || {}).filter(([k]) => k in (cs[0].params || {})).map(([k, v]) => `${k}=${fmtNum(v)}`).join(', ')}.`));
    return;
  }
}

function clearErrors(form, msg) {
  for (const e of form.querySelectorAll('.field-error')) e.textContent = '';
  for (const e of form.querySelectorAll('[aria-invalid]')) e.removeAttribute('aria-invalid');
  clear(msg);
}

// Whether a number field holds text that is no number ("e", "abc"): the browser gives it as ''
// (empty), which would leave the setting out and change the rest as if it had not been typed.
// Said at each such field; nothing is sent.
function badNumbers(form, msg) {
  clearErrors(form, msg);
  const bad = [...form.querySelectorAll('input[type=number]')].filter((i) => i.validity.badInput);
  for (const i of bad) {
    i.setAttribute('aria-invalid', 'true');
    form.querySelector(`#err-${CSS.escape(i.name)}`).textContent = 'not a number';
  }
  if (!bad.length) return false;
  bad[0].focus();
  put(msg, h('p', { class: 'error' }, `Nothing sent: ${bad.map((i) => i.name).join(', ')} ${bad.length === 1 ? 'is' : 'are'} not a number.`));
  return true;
}

async function submit(form, msg, fn) {
  clearErrors(form, msg);
  try {
    const res = await fn();
    const ids = (res.changes || []).map((c) => c.id);
    put(msg, h('p', { class: 'ok' }, `Change${ids.length === 1 ? '' : 's'} ${ids.join(', ')} ${res.count === 1 ? 'is' : 'are'} pending: `, link('#/changes', 'follow it in the audit log'), '.'));
    follow(ids, msg);
  } catch (e) {
    const ptr = e.problem?.pointer?.replace(/^\//, '');
    const input = ptr && form.querySelector(`[name="${CSS.escape(ptr)}"]`);
    if (input) {
      input.setAttribute('aria-invalid', 'true');
      form.querySelector(`#err-${CSS.escape(ptr)}`).textContent = e.message;
      input.focus();
    }
    put(msg, errorBox(e));
  }
}

function ecnForm(sw, portsNow) {
  const ports = portsNow();
  const msg = h('div', { 'aria-live': 'polite' });
  const portSel = h('select', { id: 'f-port', name: 'port' }, ports.map((p) => h('option', { value: p.port }, p.port)));
  const queueSel = h('select', { id: 'f-queue', name: 'queue' }, [0, 1, 2, 3, 4, 5, 6, 7].map((q) => h('option', { value: q, selected: q === 3 }, String(q))));
  const form = h('form', { class: 'edit', id: 'ecn-form', novalidate: true },
    h('h2', {}, 'Change ECN of a queue'),
    h('div', { class: 'field' }, h('label', { for: 'f-port' }, 'Port'), portSel),
    h('div', { class: 'field' }, h('label', { for: 'f-queue' }, 'Queue'), queueSel),
    h('div', { class: 'field' }, h('label', { for: 'f-enabled' }, 'Marking enabled'), h('input', { id: 'f-enabled', name: 'enabled', type: 'checkbox', checked: true })),
    field('kmin_bytes', 'Kmin', { type: 'text', inputmode: 'decimal', autocomplete: 'off' }, 'marking starts above this queue depth: bytes, or with a unit (100KB, 1.5MB, 64KiB)'),
    field('kmax_bytes', 'Kmax', { type: 'text', inputmode: 'decimal', autocomplete: 'off' }, 'marking probability reaches Pmax here (same units)'),
    field('pmax', 'Pmax (0–1)', { type: 'number', min: 0, max: 1, step: 'any' }, 'marking probability at Kmax'),
    field('reason', 'Reason', { type: 'text', maxlength: 512 }, 'kept in the audit log'),
    h('button', { type: 'submit', class: 'primary' }, 'Apply'), msg);
  const fill = () => {
    const p = portsNow().find((x) => x.port === portSel.value);
    const q = (p?.ecn || []).find((x) => String(x.queue) === queueSel.value);
    form.kmin_bytes.value = q?.kmin_bytes ?? '';
    form.kmax_bytes.value = q?.kmax_bytes ?? '';
    form.pmax.value = q?.pmax ?? '';
    form.enabled.checked = q ? !!q.enabled : true;
  };
  portSel.addEventListener('change', fill);
  queueSel.addEventListener('change', fill);
  fill();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (badNumbers(form, msg)) return;
    const body = { enabled: form.enabled.checked };
    for (const k of ['kmin_bytes', 'kmax_bytes']) if (form[k].value.trim() !== '') body[k] = size(form[k].value);
    if (form.pmax.value !== '') body.pmax = Number(form.pmax.value);
    if (form.reason.value) body.reason = form.reason.value;
    submit(form, msg, () => api(`/api/v1/switches/${encodeURIComponent(sw)}/ports/${encodeURIComponent(portSel.value)}/queues/${queueSel.value}/ecn`, { method: 'PUT', body }));
  });
  return form;
}

// PFC of one port: the lossless priorities (a bit mask), XOFF/XON and the dynamic threshold's
// alpha.  base: the URL of the port's PFC without the port ("/api/v1/switches/leaf0/ports/").
function pfcForm(base, ports, current) {
  const msg = h('div', { 'aria-live': 'polite' });
  const portSel = h('select', { id: 'fp-port', name: 'port' }, ports.map((p) => h('option', { value: p.port }, p.label || p.port)));
  const boxes = [0, 1, 2, 3, 4, 5, 6, 7].map((b) => h('label', { class: 'prio' },
    h('input', { type: 'checkbox', id: `fp-prio-${b}`, value: b }), ` ${b}`));
  const form = h('form', { class: 'edit', id: 'pfc-form', novalidate: true },
    h('h2', {}, 'Change PFC of a port'),
    h('div', { class: 'field' }, h('label', { for: 'fp-port' }, 'Port'), portSel),
    h('fieldset', { class: 'field' }, h('legend', {}, 'Lossless priorities'), h('span', { class: 'prios' }, boxes),
      h('span', { class: 'field-error', id: 'err-enable', role: 'alert' }), h('input', { type: 'hidden', name: 'enable' })),
    field('xoff_bytes', 'XOFF', { type: 'text', inputmode: 'decimal', autocomplete: 'off' }, 'static threshold: bytes, or with a unit (100KB); empty: unchanged'),
    field('xon_bytes', 'XON', { type: 'text', inputmode: 'decimal', autocomplete: 'off' }, 'same units; empty: unchanged'),
    field('alpha_shift', 'Alpha shift', { type: 'number', min: -8, max: 8, step: 1 }, 'dynamic threshold: shared buffer × 2^alpha'),
    field('reason', 'Reason', { type: 'text', maxlength: 512 }, 'kept in the audit log'),
    h('button', { type: 'submit', class: 'primary' }, 'Apply'), msg);
  let cur = {};
  const fill = async () => {
    cur = (await current(portSel.value).catch(() => null)) || {};
    for (const b of boxes) { const i = b.querySelector('input'); i.checked = !!((cur.enable ?? 0) & (1 << +i.value)); }
    form.xoff_bytes.value = '';
    form.xon_bytes.value = '';
    form.alpha_shift.value = cur.alpha_shift ?? '';
  };
  portSel.addEventListener('change', fill);
  fill();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (badNumbers(form, msg)) return;
    const body = {};
    const mask = boxes.reduce((m, b) => (b.querySelector('input').checked ? m | (1 << +b.querySelector('input').value) : m), 0);
    if (mask !== (cur.enable ?? -1)) body.enable = mask;
    for (const k of ['xoff_bytes', 'xon_bytes']) if (form[k].value.trim() !== '') body[k] = size(form[k].value);
    if (form.alpha_shift.value !== '' && Number(form.alpha_shift.value) !== cur.alpha_shift) body.alpha_shift = Number(form.alpha_shift.value);
    if (!Object.keys(body).length) { put(msg, h('p', {}, 'Nothing changed.')); return; }
    if (form.reason.value) body.reason = form.reason.value;
    submit(form, msg, () => api(`${base}${encodeURIComponent(portSel.value)}/pfc`, { method: 'PUT', body }));
  });
  return form;
}

function dcqcnForm(host, cur, params) {
  const msg = h('div', { 'aria-live': 'polite' });
  const first = cur.items?.[0]?.values || {};
  const knobs = (params.dcqcn || []).filter((p) => p.name in first);
  const form = h('form', { class: 'edit', id: 'dcqcn-form', novalidate: true },
    h('h2', {}, 'Change DCQCN of this host (all its RDMA ports)'),
    knobs.map((p) => field(p.name, `${p.name}${p.unit ? ` (${p.unit})` : ''}`, {
      type: 'number', step: 1, value: first[p.name], min: p.min, max: typeof p.max === 'number' ? p.max : undefined, dataset: { initial: first[p.name] },
    }, p.help)),
    field('reason', 'Reason', { type: 'text', maxlength: 512 }, 'kept in the audit log'),
    h('button', { type: 'submit', class: 'primary' }, 'Apply the changed values'), msg);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (badNumbers(form, msg)) return;
    const body = {};
    for (const p of knobs) {
      const v = form[p.name].value;
      if (v !== '' && String(v) !== String(first[p.name])) body[p.name] = Number(v);
    }
    if (!Object.keys(body).length) { put(msg, h('p', {}, 'Nothing changed.')); return; }
    if (form.reason.value) body.reason = form.reason.value;
    submit(form, msg, () => api(`/api/v1/hosts/${encodeURIComponent(host)}/dcqcn`, { method: 'PUT', body }));
  });
  return form;
}

function switchHead(sw) {
  return h('p', { class: sw.status === 'ok' ? '' : 'bad' }, `agent ${sw.status}${sw.status === 'ok' ? '' : ' ⚠'} · last seen ${fmtTime(sw.last_seen)} · ${sw.ports_up}/${sw.ports} ports up · backend ${sw.backend}`);
}

// a port's state; its agent silent: as last reported
function portState(p) {
  return (p.state === 'up' ? 'up' : `✕ ${p.state}`) + (p.stale ? ' (stale)' : '');
}

function switchPorts(ports) {
  return table([
      { label: 'Port', value: (p) => link(`#/port/${encodeURIComponent(p.id)}`, p.port) },
      { label: 'State', value: portState },
      { label: 'Speed', num: true, value: (p) => (p.speed_mbps ? fmtBits(p.speed_mbps * 1e6) : '–') },
      { label: 'Peer', value: (p) => (p.peer ? `${p.peer.system} ${p.peer.port}` : '–') },
      { label: 'PFC priorities', value: (p) => (p.pfc ? [0, 1, 2, 3, 4, 5, 6, 7].filter((b) => p.pfc.enable & (1 << b)).join(',') || 'none' : '–') },
      // reported, static, or computed from a dynamic threshold's alpha and shared buffer (SONiC)
      { label: 'XOFF threshold', num: true, value: (p) => (p.xoff_threshold ? `${fmtBytes(p.xoff_threshold.bytes)}${p.xoff_threshold.from === 'computed' ? ' (computed)' : ''}` : '–') },
      { label: 'ECN (lossless queues): Kmin / Kmax / Pmax', value: (p) => (p.ecn || []).filter((q) => p.pfc && p.pfc.enable & (1 << q.queue)).map((q) => `q${q.queue}: ${q.enabled ? `${fmtBytes(q.kmin_bytes)} / ${fmtBytes(q.kmax_bytes)} / ${q.pmax}` : 'off'}`).join('; ') || '–' },
    ], ports, { caption: 'Ports' });
}

async function renderSwitch(root, ctx, id) {
  const url = `/api/v1/switches/${encodeURIComponent(id)}`;
  let sw = await api(url);
  let ports = sw.port_list || [];
  const head = switchHead(sw), tbl = h('div', { id: 'switch-ports' }, switchPorts(ports));
  add(root, h('h1', {}, `Switch ${sw.id}`), head, tbl,
    ctx.canWrite ? [ecnForm(id, () => ports),
      pfcForm(`${url}/ports/`, ports, async (port) => ports.find((p) => p.port === port)?.pfc)]
      : h('p', { class: 'note' }, 'Your token has the viewer role: settings are shown, not edited.'));
  // the table and the forms' current values follow the changes (the forms keep what is typed)
  async function refresh() {
    sw = await api(url);
    ports = sw.port_list || [];
    const fresh = switchHead(sw);
    head.className = fresh.className;
    head.textContent = fresh.textContent;
    put(tbl, switchPorts(ports));
  }
  // keepsFocus: a refresh redraws the table only, never the forms
  return { title: `switch ${id}`, refresh, poll: 10000, keepsFocus: true, onEvent: (ev) => { if (ev.type === 'change') refresh().catch(() => {}); } };
}

async function renderHost(root, ctx, id) {
  const [host, dcqcn, params, links] = await Promise.all([
    api(`/api/v1/hosts/${encodeURIComponent(id)}`), api(`/api/v1/hosts/${encodeURIComponent(id)}/dcqcn`), api('/api/v1/params'),
    api('/api/v1/links').catch(() => ({ items: [] })), // (the links are a help: the page without them)
  ]);
  const ports = (host.devices_detail || []).flatMap((d) => d.ports.map((p) => ({ ...p, driver: d.driver, kind: d.kind })));
  // the switch port at the other end of each port's link (from the ports' neighbours)
  const far = new Map();
  for (const l of links.items || []) {
    for (const [x, y] of [[l.a, l.b], [l.b, l.a]]) if (x.node === id && x.port_id) far.set(x.port_id, y);
  }
  add(root, h('h1', {}, `Host ${host.id}`),
    h('p', { class: host.status === 'ok' ? '' : 'bad' }, `agent ${host.status}${host.status === 'ok' ? '' : ' ⚠'} · last seen ${fmtTime(host.last_seen)} · ${host.ports_up}/${host.ports} ports up · version ${host.agent_version}`),
    table([
      { label: 'Port', value: (p) => link(`#/port/${encodeURIComponent(p.id)}`, `${p.device} ${p.port}`) },
      { label: 'Netdev', value: (p) => p.netdev || '–' },
      { label: 'Driver', value: (p) => p.driver || '–' },
      { label: 'State', value: portState },
      { label: 'Speed', num: true, value: (p) => (p.speed_mbps ? fmtBits(p.speed_mbps * 1e6) : '–') },
      { label: 'Switch port', value: (p) => { const y = far.get(p.id); return y ? [link(`#/switch/${encodeURIComponent(y.node)}`, y.node), ' ', y.port_id ? link(`#/port/${encodeURIComponent(y.port_id)}`, y.port) : y.port] : '–'; } },
    ], ports, { caption: 'RDMA ports' }),
    h('h2', {}, 'DCQCN settings'),
    table([
      { label: 'Device port', value: (i) => `${i.device} ${i.port}` },
      { label: 'Values', value: (i) => Object.entries(i.values).map(([k, v]) => `${k}=${fmtNum(v)}`).join(', ') },
      { label: 'Updated', value: (i) => fmtTime(i.updated) },
    ], dcqcn.items || [], { empty: 'not reported' }),
    ctx.canWrite && dcqcn.items?.length ? dcqcnForm(id, dcqcn, params) : !ctx.canWrite ? h('p', { class: 'note' }, 'Your token has the viewer role: settings are shown, not edited.') : null,
    ctx.canWrite && ports.length ? pfcForm(`/api/v1/hosts/${encodeURIComponent(id)}/ports/`,
      ports.map((p) => ({ port: `${p.device}:${p.port}`, label: `${p.device} ${p.port}` })),
      async (port) => (await api(`/api/v1/hosts/${encodeURIComponent(id)}/ports/${encodeURIComponent(port)}/pfc`)).items?.[0]?.values) : null);
  return { title: `host ${id}` };
}

export async function render(root, ctx) {
  const id = ctx.route.args.join('/');
  try {
    return ctx.route.name === 'switch' ? await renderSwitch(root, ctx, id) : await renderHost(root, ctx, id);
  } catch (e) {
    add(root, h('h1', {}, id), errorBox(e));
    return { title: id };
  }
}
