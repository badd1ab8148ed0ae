// The REST client: the token from session storage as a bearer header, problem+json errors as
// ApiError (field-level errors kept for forms), and the event stream over fetch (EventSource
// cannot send an Authorization header).
const KEY = 'rocefab.token';

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
    this.code = this.problem.code || '';
  }
}

export function token() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

// A token handed over in the address (#token=...; what `make demo` prints) is taken into
// session storage and removed from the address at once (never sent to the server, and not
// left in the history).
export function takeTokenFromUrl() {
  const m = /^#token=([^&]+)(?:&(.*))?$/.exec(location.hash);
  if (!m) return;
  setToken(decodeURIComponent(m[1]));
  history.replaceState(null, '', location.pathname + (m[2] ? '#' + m[2] : '#/'));
}

// fn(err) runs on a 401 for the token in force. A 401 for a token that has been replaced
// since the request left (a poll in flight while a new token is handed over) is stale: it must
// not cost the new token.
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }
function unauthorized(err, used) {
  if (used === token()) onUnauthorized(err);
}

export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, {
    method, headers, signal, cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const ctype = resp.headers.get('Content-Type') || '';
  const doc = ctype.includes('json') ? await resp.json() : await resp.text();
  if (!resp.ok) {
    const err = new ApiError(resp.status, typeof doc === 'object' ? doc : { detail: doc });
    if (resp.status === 401) unauthorized(err, t);
    throw err;
  }
  return doc;
}

// GET /api/v1/events as a stream of {type, id, data}; reconnects with Last-Event-ID after a
// drop (after `retry` ms), and calls onState('live' | 'reconnecting' | 'off').
export function subscribe(onEvent, onState) {
  let lastId = '';
  let retry = 3000;
  let stopped = false;
  let ctrl = null;

  async function run() {
    while (!stopped) {
      ctrl = new AbortController();
      try {
        const used = token();
        const headers = { Accept: 'text/event-stream', Authorization: `Bearer ${used}` };
        if (lastId) headers['Last-Event-ID'] = lastId;
        const resp = await fetch('/api/v1/events', { headers, signal: ctrl.signal, cache: 'no-store' });
        if (resp.status === 401 && used !== token()) continue; // stale: again with the new token
        if (resp.status === 401) { onState('off'); unauthorized(new ApiError(401), used); return; }
        if (!resp.ok || !resp.body) throw new Error(`HTTP ${resp.status}`);
        onState('live');
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const ev = { type: 'message', id: '', data: '' };
            for (const line of block.split('\n')) {
              if (!line || line.startsWith(':')) continue;
              const c = line.indexOf(':');
              const f = c < 0 ? line : line.slice(0, c);
              const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
              if (f === 'event') ev.type = v;
              else if (f === 'data') ev.data += (ev.data ? '\n' : '') + v;
              else if (f === 'id') ev.id = v;
              else if (f === 'retry' && /^\d+$/.test(v)) retry = +v;
            }
            if (ev.id) lastId = ev.id;
            if (ev.data) {
              try { ev.data = JSON.parse(ev.data); } catch { /* left as text */ }
              onEvent(ev);
            }
          }
        }
      } catch (e) {
        if (stopped) return;
      }
      if (stopped) return;
      onState('reconnecting');
      await new Promise((r) => setTimeout(r, retry));
    }
  }
  run();
  return () => { stopped = true; ctrl?.abort(); };
}
