// Tuner: the congestion-control tuner's mode, signals and each class's settings; its proposals
// with their evidence and expected effect, which an operator applies or rejects (advise mode);
// and the history of its steps.
import { api } from '../lib/api.js';
import { add, clear, errorBox, fmtNum, fmtPct, fmtTime, fmtUs, h, put, table } from '../lib/dom.js';

const closedEvidence = new Set(); // proposals whose evidence the operator folded (kept across redraws)
const reasons = new Map(); // proposal id -> the reason typed so far (kept when the page redraws)

function evidence(ev, id) {
  if (!ev || typeof ev !== 'object') return null;
  return h('details', {
    open: !closedEvidence.has(id),
    ontoggle: (e) => (e.target.open ? closedEvidence.delete(id) : closedEvidence.add(id)),
  }, h('summary', {}, 'Evidence'),
    h('dl', { class: 'kv' }, Object.entries(ev).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v && typeof v === 'object'
      ? Object.entries(v).map(([k2, x]) => `${k2} ${typeof x === 'number' ? fmtNum(x) : x}`).join(', ') : fmtNum(v))])));
}

// How old a proposal is, by this browser's clock against rocefabd's made_at.
const STALE_WAIT_S = 300;
function ageS(iso) {
  return Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
}
function ago(iso) {
  const s = ageS(iso);
  return s < 90 ? `${Math.round(s)} s ago` : s < 5400 ? `${Math.round(s / 60)} min ago` : `${+(s / 3600).toFixed(1)} h ago`;
}

function proposalCard(p, ctx, act) {
  return h('div', { class: 'card wide proposal', 'data-id': p.id, 'data-state': p.state },
    h('h3', {}, `#${p.id} · step ${p.step} ${p.phase}: ${p.class} ${p.knob} ${fmtNum(p.from)} → ${fmtNum(p.to)}`),
    h('p', {}, h('strong', {}, 'State: '), h('span', { class: `state state-${p.state}` }, p.state), p.decided_by ? ` (by ${p.decided_by}${p.decision_reason ? `: ${p.decision_reason}` : ''})` : '', p.outcome ? ` · outcome ${p.outcome}` : ''),
    h('p', { class: 'made' }, h('strong', {}, 'Made: '), p.made_at ? [fmtTime(p.made_at), ' ', h('span', { class: p.state === 'waiting' && ageS(p.made_at) > STALE_WAIT_S ? 'bad' : '' }, `(${ago(p.made_at)}${p.state === 'waiting' && ageS(p.made_at) > STALE_WAIT_S ? ': its evidence is that old, look at the signals now' : ''})`)] : '–',
      ' · ', h('span', { class: 'note' }, "its decision interval ended at ", p.t_us ? fmtTime(p.t_us / 1e6) : '–', " by the counters' clock (fabric time in a simulation)")),
    h('p', {}, h('strong', {}, 'Why: '), p.reason),
    h('p', {}, h('strong', {}, 'Expected: '), p.expected_effect),
    h('p', {}, `${p.nchanges ?? p.changes?.length ?? 0} objects: `, (p.changes || []).slice(0, 8).map((c) => `${c.node}${c.port ? ' ' + c.port : ''}`).join(', '), (p.nchanges || 0) > 8 ? ' …' : ''),
    evidence(p.evidence, p.id),
    ctx.canWrite && p.state === 'waiting' ? reasonActions(p, act) : null);
}

// Apply and Reject, with why (optional): the proposal's decision_reason, and its changes'
// reason in the audit log after the tuner's.
function reasonActions(p, act) {
  const why = h('input', { type: 'text', class: 'reason', maxlength: 512, placeholder: 'reason (optional, for the audit log)', 'aria-label': `reason for proposal ${p.id}`, 'data-id': p.id, oninput: (e) => reasons.set(p.id, e.target.value) });
  why.value = reasons.get(p.id) || '';
  return h('p', { class: 'actions' }, why,
    h('button', { type: 'button', class: 'primary', onclick: () => act(p, 'apply', why.value) }, 'Apply'),
    h('button', { type: 'button', onclick: () => act(p, 'reject', why.value) }, 'Reject'),
    p.phase === 'canary' ? h('span', { class: 'note' }, ' Apply approves the step: its canary now, then its rollout to the rest of the class once the canary did no harm (or its rollback), without asking again.') : null);
}

export async function render(root, ctx) {
  const msg = h('div', { 'aria-live': 'polite' });
  const status = h('div', { class: 'cards', id: 'cc-status' });
  const props = h('div', { id: 'proposals' });
  const hist = h('div', { id: 'cc-history' });
  add(root, h('h1', {}, 'Congestion-control tuner'), msg, status, h('h2', {}, 'Proposals'), props, h('h2', {}, 'History'), hist);

  async function act(p, what, reason) {
    clear(msg);
    try {
      await api(`/api/v1/cc/proposals/${p.id}/${what}`, { method: 'POST', body: reason ? { reason } : undefined });
      put(msg, h('p', { class: 'ok' }, `Proposal ${p.id}: ${what === 'apply' ? "approved; its changes go out at the tuner's next pass" : 'rejected'}.`));
      await refresh();
    } catch (e) {
      put(msg, errorBox(e));
    }
  }

  async function refresh() {
    if (!ctx.features.tuner) {
      put(status, h('p', {}, 'The tuner is not running (cc.interval is 0, or there is no PFC fast lane: detector.interval is 0).'));
      return;
    }
    const cc = await api('/api/v1/cc');
    const [proposals, history] = await Promise.all([api('/api/v1/cc/proposals?all=true'), api('/api/v1/cc/history')]);
    const sig = cc.signals || {};
    put(status, 
      h('div', { class: 'card' }, h('h2', {}, 'Mode'), h('p', { class: 'big', id: 'cc-mode' }, cc.mode), h('p', {}, `state ${cc.state} · priority ${cc.priority} · a decision every ${cc.interval_ms / 1000} s, ${cc.decisions} so far · last ${fmtTime(cc.last_decision)}`),
        cc.lowest_lossless != null && cc.lowest_lossless !== cc.priority ? h('p', { class: 'note', id: 'cc-priority' }, `Priority ${cc.lowest_lossless} is the lowest lossless one: the tuner moves to it once its steps on priority ${cc.priority} are undone (rocefabctl cc rollback).`) : null,
        cc.restoring ? h('p', { class: 'note', id: 'cc-restoring' }, 'Restoring: the state saved before rocefabd started, if any, comes back at the first decision once the agents reported (a step under way then rolls back).') : null,
        cc.host_classes_pending ? h('p', { class: 'note' }, 'New host classes wait until the step under way in a host class is done.') : null,
        (cc.empty_host_classes || []).map((x) => h('p', { class: 'note' }, `Host class ${x.name}: no host matches ${x.hosts}.`))),
      h('div', { class: 'card' }, h('h2', {}, 'Signals'), h('p', { class: 'note' }, 'Of the last decision interval; counts per host or port are over that interval.'), h('p', {}, `pause ${fmtPct(sig.pause_share, 3)} of the time · host utilization ${fmtPct(sig.host_util)}`),
        h('p', {}, `CNPs/host ${fmtNum(sig.cnp_per_host)} · retransmits/host ${fmtNum(sig.retransmits_per_host)} · probe p99 ${fmtUs(sig.probe_p99_us)}` + (sig.link_errors > 0 ? ` · link errors ${fmtNum(sig.link_errors)} (retransmissions not held against a step)` : '')),
        ['tor_down', 'tor_up', 'spine'].map((c) => sig[c] ? h('p', {}, `${c}: queue p90 ${fmtUs(sig[c].queue_delay_p90_us)}, util ${fmtPct(sig[c].utilization)}, marked ${fmtPct(sig[c].marked_share, 2)}`) : null),
        // each host class's own: its edge links' pauses, the queues of the ToR ports facing it
        Object.entries(sig.host_classes || {}).map(([c, x]) => h('p', {}, `${c} (hosts): paused ${fmtPct(x.pause_share, 3)}, ToR queue p90 ${fmtUs(x.tor_queue_delay_p90_us)}, sent ${fmtPct(x.host_util)}, CNPs/host ${fmtNum(x.cnp_per_host)}`))),
      h('div', { class: 'card' }, h('h2', {}, 'Settings by class'),
        Object.keys(cc.settings || {}).length ? h('dl', { class: 'kv kv-stack' }, Object.entries(cc.settings).flatMap(([cls, v]) => [h('dt', {}, cls), h('dd', {}, Object.entries(v).map(([k, x]) => `${k}=${fmtNum(x)}`).join(', '))])) : h('p', {}, 'not known yet'),
        // members whose setting the policy refuses: the tuner steps most of a class at one value
        // back inside and leaves the others alone, so the operator widens the policy or sets
        // them back
        cc.outside_policy?.members ? h('div', { class: 'note', id: 'cc-outside' },
          h('p', {}, `Outside the policy (most of a class at one value is stepped back inside unless the tuner is off; members set apart stay): ${cc.outside_policy.members}`),
          h('ul', {}, (cc.outside_policy.first || []).map((x) => h('li', {}, `${x.node}${x.port ? ' ' + x.port : ''} (${x.class}): ${x.why}`)))) : null,
        // members inside the policy not at their class's setting (an operator's own): a step
        // moves those at the class's setting only
        cc.set_apart?.members ? h('div', { class: 'note', id: 'cc-set-apart' },
          h('p', {}, `Set apart (inside the policy, not at their class's setting; steps leave them as they are): ${cc.set_apart.members}`),
          h('ul', {}, (cc.set_apart.first || []).map((x) => h('li', {}, `${x.node}${x.port ? ' ' + x.port : ''} (${x.class}): ${x.knob}=${fmtNum(x.value)}, the class's ${fmtNum(x.class_value)}`)))) : null,
        // a fault no congestion control cures (the detector's deadlock, pause storm or slow
        // receiver, or a host pausing its switch port): no harder step starts, whatever the pauses
        cc.harder_held_for ? h('div', { class: 'note', id: 'cc-harder-held' },
          h('p', {}, `No harder step while the fabric has a fault (${cc.harder_held_for}): its pauses are not congestion control's to fix.`,
            cc.harder_held_since ? ` Held since ${fmtTime(cc.harder_held_since)} (${ago(cc.harder_held_since)}).` : '')) : null,
        // moves the tuner will not make for a while (a rollback's tabu, no softening after a
        // harder step): why it does not do what the signals seem to ask
        cc.holds?.length ? h('div', { class: 'note', id: 'cc-holds' },
          h('p', {}, 'Held back:'),
          h('ul', {}, cc.holds.map((x) => h('li', {}, `${x.class} ${x.knob}${x.direction ? ' ' + x.direction : ''}: ${x.intervals} more intervals${x.unless_pausing ? ' (unless ports pause)' : ''}`)))) : null),
    );
    const open = proposals.filter((p) => p.state === 'waiting' || p.state === 'approved');
    // (no redraw while a reason is typed: app.js holds updates while a field has the focus)
    put(props, open.length ? h('div', { class: 'cards' }, open.map((p) => proposalCard(p, ctx, act))) : h('p', { class: 'note' }, 'No proposal waiting.'));
    for (const id of reasons.keys()) if (!open.some((p) => String(p.id) === String(id) && p.state === 'waiting')) reasons.delete(id);
    const items = Array.isArray(history) ? history : history.items || [];
    put(hist, table([
      { label: 'Id', num: true, value: (p) => String(p.id) },
      // when rocefabd made it (a record of before it kept that: the end of its decision
      // interval, by the counters' clock, marked *)
      { label: 'Made', value: (p) => (p.made_at ? fmtTime(p.made_at) : p.t_us ? `${fmtTime(p.t_us / 1e6)}*` : '–') },
      { label: 'Step', num: true, value: (p) => String(p.step) },
      { label: 'Phase', value: (p) => p.phase },
      { label: 'Change', value: (p) => `${p.class} ${p.knob} ${fmtNum(p.from)} → ${fmtNum(p.to)}` },
      { label: 'State', value: (p) => p.state },
      { label: 'Decided by', value: (p) => (p.decided_by ? `${p.decided_by}${p.decision_reason ? `: ${p.decision_reason}` : ''}` : '–') },
      { label: 'Outcome', value: (p) => p.outcome || '–' },
      // why it failed or was turned down (the tuner turned off, the policy changed) first
      { label: 'Why', value: (p) => (p.error ? `${p.error}; made for: ${p.reason}` : p.reason) },
    ], items.slice().reverse().slice(0, 100), { empty: 'no steps yet' }),
    items.some((p) => !p.made_at && p.t_us) ? h('p', { class: 'note' }, "Made*: a record saved before rocefabd kept when it made it: the end of its decision interval, by the counters' clock (fabric time in a simulation).") : null);
  }
  await refresh();
  return { title: 'tuner', refresh, poll: 10000, onEvent: (ev) => { if (ev.type !== 'alert') refresh().catch(() => {}); } };
}
