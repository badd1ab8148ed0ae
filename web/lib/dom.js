// Small DOM and formatting helpers (no framework): h() builds elements, the fmt* functions
// give every number its unit.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const SVGNS = 'http://www.w3.org/2000/svg';
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  append(el, children);
  return el;
}

// Appends children to el (arrays flattened; null, undefined and false skipped).
export function add(el, ...children) {
  append(el, children);
  return el;
}

// Replaces el's children (arrays flattened; null, undefined and false skipped).
export function put(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// A table: columns [{label, value(row) -> Node|string, num: bool}], rows.
// A table of many columns (STACK_COLUMNS or more) is stacked in a narrow window (style.css):
// each row a block, each cell under its column's name (data-label), so that the page does not
// scroll sideways.
const STACK_COLUMNS = 7;
export function table(columns, rows, { caption, empty = 'none', rowAttrs } = {}) {
  return h('table', { class: columns.length >= STACK_COLUMNS ? 'stack' : null },
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.label)))),
    h('tbody', {}, rows.length
      ? rows.map((r) => h('tr', rowAttrs ? rowAttrs(r) : {}, columns.map((c) => h('td', { class: c.num ? 'num' : null, 'data-label': c.label }, c.value(r)))))
      : h('tr', {}, h('td', { colspan: columns.length, class: 'empty' }, empty))));
}

export function link(href, text) {
  return h('a', { href }, text);
}

const SI = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
export function si(v, unit, digits = 3) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  for (const [f, p] of SI) if (Math.abs(v) >= f) return `${+(v / f).toPrecision(digits)} ${p}${unit}`;
  return `${+v.toPrecision(digits)} ${unit}`;
}
export const fmtBytes = (v) => si(v, 'B');
export const fmtBits = (v) => si(v, 'b/s');
export function fmtPct(v, digits = 1) {
  return v === null || v === undefined ? '–' : `${(100 * v).toFixed(digits)} %`;
}
export function fmtUs(v) {
  if (v === null || v === undefined) return '–';
  if (v >= 1e6) return `${+(v / 1e6).toPrecision(3)} s`;
  if (v >= 1e3) return `${+(v / 1e3).toPrecision(3)} ms`;
  return `${+v.toPrecision(3)} µs`;
}
export function fmtTime(iso) {
  if (!iso) return '–';
  const d = typeof iso === 'number' ? new Date(iso * 1000) : new Date(iso);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
export function fmtNum(v) {
  return v === null || v === undefined ? '–' : Number(v).toLocaleString('en-US', { maximumFractionDigits: 3 });
}

// Parses the route's query ("#/topology?color=pause") and writes it back.
export function query() {
  const i = location.hash.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : location.hash.slice(i + 1));
}
export function setQuery(params) {
  const path = location.hash.split('?')[0] || '#/';
  const q = new URLSearchParams(params).toString();
  history.replaceState(null, '', `${location.pathname}${path}${q ? '?' + q : ''}`);
}

// A labelled <select> of choices [[value, label]] that calls onchange(value).
export function select(label, id, choices, value, onchange) {
  return h('label', { for: id, class: 'inline' }, `${label} `,
    h('select', { id, onchange: (e) => onchange(e.target.value) },
      choices.map(([v, l]) => h('option', { value: v, selected: v === value }, l))));
}

export function errorBox(err) {
  const p = err?.problem || {};
  return h('p', { class: 'error', role: 'alert' },
    `${err?.message || err}`, p.code ? h('code', {}, ` ${p.code}`) : null);
}
