// The dashboard's shell: the token, the router (each view is a URL: #/topology, #/port/ID, ...),
// the live event stream, and the polling of the view shown.
import { api, setToken, setUnauthorizedHandler, subscribe, takeTokenFromUrl, token } from './lib/api.js';
import { clear, errorBox, h } from './lib/dom.js';

const VIEWS = {
  '': () => import('./views/overview.js'),
  topology: () => import('./views/topology.js'),
  nodes: () => import('./views/nodes.js'),
  pingmesh: () => import('./views/pingmesh.js'),
  alerts: () => import('./views/alerts.js'),
  changes: () => import('./views/changes.js'),
  tuner: () => import('./views/tuner.js'),
  host: () => import('./views/node.js'),
  switch: () => import('./views/node.js'),
  port: () => import('./views/port.js'),
};

const main = document.getElementById('main');
const live = document.getElementById('live');
let session = { role: 'none', token: null };
let features = {}; // what this rocefabd runs (GET /api/v1/version)
let current = null; // { view, timer }
let generation = 0;
let unsubscribe = null;

function route() {
  const path = (location.hash.replace(/^#\/?/, '').split('?')[0] || '');
  const parts = path.split('/').map(decodeURIComponent);
  return { name: parts[0] || '', args: parts.slice(1), path };
}

function markNav(name) {
  for (const a of document.querySelectorAll('header nav a')) {
    const target = a.getAttribute('href').replace(/^#\/?/, '');
    if (target === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function stopView() {
  if (!current) return;
  clearInterval(current.timer);
  current.view?.destroy?.();
  current = null;
}

async function show() {
  const gen = ++generation;
  const r = route();
  stopView();
  markNav(r.name);
  const load = VIEWS[r.name];
  clear(main);
  if (!load) {
    main.append(h('h1', {}, 'Not found'), h('p', {}, `No view "${r.path}". `, h('a', { href: '#/' }, 'Overview')));
    return;
  }
  const loading = h('p', { class: 'loading' }, 'Loading…');
  const root = h('section', { class: `view view-${r.name || 'overview'}` });
  main.append(loading, root); // in the document while it renders: views measure their width
  const ctx = {
    route: r,
    role: session.role,
    canWrite: session.role === 'operator' || session.role === 'admin',
    features,
  };
  let view;
  try {
    const mod = await load();
    if (gen !== generation) return;
    view = await mod.render(root, ctx);
    if (gen !== generation) { view?.destroy?.(); return; }
    loading.remove();
    root.dataset.ready = 'true';
  } catch (e) {
    if (gen !== generation) return;
    clear(main).append(h('h1', {}, 'Error'), errorBox(e));
    return;
  }
  current = { view, timer: null };
  if (view?.refresh && view.poll) {
    current.timer = setInterval(() => {
      if (document.hidden) return;
      if (interacting()) { hold(true); return; }
      hold(false);
      view.refresh().catch((e) => console.warn('refresh failed:', e.message));
    }, view.poll);
  }
  document.title = `rocefab · ${view?.title || r.name || 'overview'}`;
}

function setLive(state) {
  live.textContent = state === 'live' ? 'live' : state;
  live.dataset.state = state;
}

// Events reach the view at most once a second, one per type seen meanwhile: a burst (a bulk
// change of hundreds of ports, an alert per pass) costs one refresh, not hundreds.
const EVENT_GAP_MS = 1000;
let eventTypes = new Map(); // type -> the last event of that type since the last delivery
let eventTimer = null;
let lastDelivery = 0;

// While the operator works in the view (a focused control, the heatmap's cursor, a node reached
// with Tab), it is not redrawn under them: polls wait, events are held (and said so).
function interacting() {
  const a = document.activeElement;
  if (!a || a === document.body || !main.contains(a) || current?.view?.keepsFocus) return false;
  return a.matches('select, input, textarea, canvas, summary, svg a');
}

function hold(on) {
  live.classList.toggle('held', on);
  live.title = on ? 'updates held while you work in the view (move the focus out to resume)' : 'live updates (server-sent events)';
}

function deliver() {
  eventTimer = null;
  if (interacting()) { // try again in a second
    hold(true);
    eventTimer = setTimeout(deliver, EVENT_GAP_MS);
    return;
  }
  hold(false);
  lastDelivery = performance.now();
  const evs = [...eventTypes.values()];
  eventTypes = new Map();
  for (const ev of evs) current?.view?.onEvent?.(ev);
}

function onEvent(ev) {
  if (!['reset', 'alert', 'change', 'proposal', 'cc'].includes(ev.type)) return;
  eventTypes.set(ev.type, ev);
  if (!eventTimer) eventTimer = setTimeout(deliver, Math.max(0, lastDelivery + EVENT_GAP_MS - performance.now()));
}

const dialog = document.getElementById('login');
function askToken(message) {
  stopView();
  setLive('off');
  clear(main).append(h('p', {}, 'A token is needed to see the fabric. '),
    h('button', { type: 'button', id: 'ask-token', onclick: () => askToken('') }, 'Enter a token'));
  document.getElementById('login-error').textContent = message || '';
  if (!dialog.open) dialog.showModal();
  document.getElementById('login-token').focus();
}

async function start() {
  let who;
  try {
    who = await api('/api/v1/whoami');
  } catch (e) {
    clear(main).append(h('h1', {}, 'rocefabd does not answer'), errorBox(e));
    return;
  }
  if (!who.authenticated && token()) {
    setToken('');
    askToken('That token is unknown or revoked.');
    return;
  }
  if (who.role === 'none' || who.role === 'agent') {
    askToken(who.role === 'agent' ? 'An agent token cannot open the dashboard: use a viewer or operator token.' : '');
    return;
  }
  session = who;
  features = (await api('/api/v1/version')).features || {};
  document.getElementById('who').textContent = who.token ? `${who.token} (${who.role})` : `anonymous (${who.role})`;
  document.getElementById('logout').hidden = !who.token;
  unsubscribe?.();
  if (features.events) unsubscribe = subscribe(onEvent, setLive);
  else setLive('off');
  await show();
}

document.getElementById('login-form').addEventListener('submit', (e) => {
  const t = document.getElementById('login-token').value.trim();
  if (!t) { e.preventDefault(); return; }
  setToken(t);
  document.getElementById('login-token').value = '';
  start();
});
document.getElementById('logout').addEventListener('click', () => {
  setToken('');
  unsubscribe?.();
  location.hash = '#/';
  location.reload();
});
setUnauthorizedHandler(() => {
  setToken('');
  unsubscribe?.();
  askToken('The token is no longer valid.');
});

window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#token=')) { // a new token handed over: start again with it
    // this page is leaving: what it still has in flight goes out with the new token, and a 401
    // of it must not clear that token before the reload reads it (the prompt then opened
    // empty: a web test's race)
    setUnauthorizedHandler(() => {});
    unsubscribe?.();
    stopView();
    takeTokenFromUrl();
    location.reload();
    return;
  }
  if (session.role !== 'none') show();
});
takeTokenFromUrl();
start();
