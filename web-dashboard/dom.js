// Small DOM and formatting helpers shared by every page. Text always goes in
// through textContent, never innerHTML, so names and errors from the API can
// never inject markup.

/** Builds an element: h('a', { href, class }, 'text', child, [more children]). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** SVG icon by name, drawn with strokes so it follows the text colour. */
export function icon(name) {
  const paths = {
    check: 'M5 12l5 5L20 7',
    cross: 'M6 6l12 12M18 6L6 18',
    warn: 'M12 3l10 18H2zM12 10v5M12 18v.5',
    arrow: 'M4 12h15M13 6l6 6-6 6',
    lock: 'M6 11h12v10H6zM8.5 11V8a3.5 3.5 0 0 1 7 0v3',
    box: 'M3 7l9-4 9 4v10l-9 4-9-4zM3 7l9 4 9-4M12 11v10',
    info: 'M12 8v.5M12 11v6M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20z',
  };
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', `icon icon-${name}`);
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', paths[name] || paths.info);
  svg.appendChild(p);
  return svg;
}

const STATUS_TEXT = { enabled: 'OK', warning: 'Warning', disabled: 'Error' };

/** The status badge of a router, service or middleware. */
export function statusBadge(status) {
  const s = String(status || 'enabled').toLowerCase();
  const name = { enabled: 'check', warning: 'warn', disabled: 'cross' }[s] || 'info';
  return h('span', { class: `badge status-${s}`, title: `status: ${s}` }, icon(name), STATUS_TEXT[s] || s);
}

const SLEEP_TEXT = { awake: 'Awake', stopping: 'Stopping', asleep: 'Asleep', waking: 'Waking', stopped: 'Stopped' };
const SLEEP_TITLE = {
  awake: 'running; stopped again after its idle time',
  stopping: 'being stopped after its idle time',
  asleep: 'stopped by gangway; the next request starts it',
  waking: 'being started for a request',
  stopped: 'stopped by someone else: requests do not wake it',
};

/** The state of a service whose containers sleep when idle (the API's `sleep`). */
export function sleepBadge(sleep) {
  const s = String((sleep && sleep.state) || '').toLowerCase();
  return h('span', { class: `badge sleep sleep-${s}`, title: SLEEP_TITLE[s] || s, dataset: { sleep: s } },
    h('span', { class: 'dot' }), SLEEP_TEXT[s] || s);
}

/** A wake-up's duration in milliseconds, as "850 ms" or "2.4 s". */
export function wakeDuration(ms) {
  if (ms === undefined || ms === null) return null;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A neutral small label (provider, type). */
export function tag(text, cls = '') {
  return h('span', { class: `tag ${cls}`.trim() }, text);
}

/** Section names in URLs and the API paths they read. */
export const KINDS = {
  routers: { api: '/api/http/routers', one: 'router', title: 'Routers' },
  services: { api: '/api/http/services', one: 'service', title: 'Services' },
  middlewares: { api: '/api/http/middlewares', one: 'middleware', title: 'Middlewares' },
  // TCP and UDP objects have lists and detail pages of their own; the TCP
  // and UDP page shows the first few of each.
  'tcp/routers': { api: '/api/tcp/routers', one: 'TCP router', title: 'TCP routers' },
  'tcp/services': { api: '/api/tcp/services', one: 'TCP service', title: 'TCP services' },
  'tcp/middlewares': { api: '/api/tcp/middlewares', one: 'TCP middleware', title: 'TCP middlewares' },
  'udp/routers': { api: '/api/udp/routers', one: 'UDP router', title: 'UDP routers' },
  'udp/services': { api: '/api/udp/services', one: 'UDP service', title: 'UDP services' },
};

/** The dashboard address of the list an object kind belongs to. */
export function listHref(kind) {
  return `#/${KINDS[kind].list || kind}`;
}

/** The dashboard address of one object. */
export function href(kind, name) {
  return `#/${kind}/${encodeURIComponent(name)}`;
}

/** A link to one object, showing its name (without the provider when `short`). */
export function objLink(kind, name, short = false) {
  const text = short ? String(name).replace(/@[^@]*$/, '') : name;
  return h('a', { href: href(kind, name), class: 'obj', title: name }, text);
}

/** `name` qualified with `provider` unless it already names one, as the API resolves it. */
export function qualify(name, provider) {
  const n = String(name);
  return n.includes('@') || !provider ? n : `${n}@${provider}`;
}

/** The provider part of a qualified name. */
export function providerOf(name) {
  const i = String(name).lastIndexOf('@');
  return i < 0 ? '' : String(name).slice(i + 1);
}

/** A value from the API that may be a list, a single value or missing, as a list. */
export function list(v) {
  if (v === undefined || v === null || v === '') return [];
  return Array.isArray(v) ? v : [v];
}

/** A time from the API (seconds since the epoch, milliseconds, or an ISO string) as a Date. */
export function toDate(v) {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v === 'number') return new Date(v < 1e12 ? v * 1000 : v);
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** "3 s ago", "in 12 days" — relative to now. */
export function relative(date, now = Date.now()) {
  const secs = Math.round((date.getTime() - now) / 1000);
  const abs = Math.abs(secs);
  const [n, unit] =
    abs < 60 ? [abs, 's'] :
    abs < 3600 ? [Math.round(abs / 60), 'min'] :
    abs < 86400 ? [Math.round(abs / 3600), 'h'] :
    [Math.round(abs / 86400), abs < 172800 ? 'day' : 'days'];
  if (abs < 2) return 'just now';
  return secs < 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
}

/** A <time> element whose relative text the app refreshes on every tick. */
export function timeAgo(v) {
  const d = toDate(v);
  if (!d) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: d.toISOString(), title: d.toLocaleString(), dataset: { rel: '1' } }, relative(d));
}

/** Refreshes every relative time under `root`. */
export function refreshTimes(root) {
  const now = Date.now();
  for (const t of root.querySelectorAll('time[data-rel]')) {
    t.textContent = relative(new Date(t.dateTime), now);
  }
}

/** A date as "2025-03-01 14:02". */
export function shortDate(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * A router rule with its matchers and quoted values told apart, e.g.
 * Host(`a`) && PathPrefix(`/b`). With `column` (1-based, in characters, as
 * the rule parser counts), the character there is marked: where a rule
 * error was found.
 */
export function rule(text, column) {
  const el = h('code', { class: 'rule' });
  const all = String(text || '');
  if (!column) {
    highlight(el, all);
    return el;
  }
  const chars = Array.from(all);
  const at = Math.min(Math.max(Number(column), 1), chars.length + 1) - 1;
  highlight(el, chars.slice(0, at).join(''));
  // Past the end the error is a missing piece: mark the gap after the rule.
  el.appendChild(h('mark', { class: 'rule-at', title: `rule error at column ${column}` }, chars[at] ?? ' '));
  highlight(el, chars.slice(at + 1).join(''));
  return el;
}

function highlight(el, text) {
  const re = /(`[^`]*`|"[^"]*")|([A-Za-z][A-Za-z0-9]*)(?=\s*\()|(&&|\|\||!)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) el.appendChild(document.createTextNode(text.slice(last, m.index)));
    const cls = m[1] ? 'r-str' : m[2] ? 'r-fn' : 'r-op';
    el.appendChild(h('span', { class: cls }, m[0]));
    last = m.index + m[0].length;
  }
  if (last < text.length) el.appendChild(document.createTextNode(text.slice(last)));
}

/**
 * Internal routers sit at the highest priority; say so instead of printing
 * 2147483646. A negative priority (-1, as Traefik gives a `HostSNI(`*`)`
 * catch-all) is tried after every other router: say that too.
 */
export function priority(p) {
  if (p === undefined || p === null) return h('span', { class: 'muted' }, '—');
  if (Number(p) >= 2147483646) return h('span', { class: 'muted', title: String(p) }, 'highest');
  if (Number(p) < 0) return h('span', { class: 'muted', title: `${p}: tried after every router of priority 0 or more` }, `${p} (last)`);
  return h('span', { class: 'mono' }, String(p));
}

/** An empty state: a title and a sentence or two. */
export function empty(title, ...text) {
  return h('div', { class: 'empty' }, h('div', { class: 'empty-icon' }, icon('box')), h('h3', {}, title), ...text.map((t) => h('p', {}, t)));
}

/** A coloured box with a title and lines. */
export function callout(kind, title, lines) {
  const ico = { error: 'cross', warning: 'warn', ok: 'check', info: 'info' }[kind] || 'info';
  return h('div', { class: `callout ${kind}` },
    h('div', { class: 'callout-title' }, icon(ico), title),
    list(lines).length ? h('ul', {}, list(lines).map((l) => h('li', {}, l))) : null);
}

/**
 * Where a problem is written, from the API's typed `origin`:
 * `dynamic.toml:4`, or `container web-1 · label gangway.http.routers.web.rule`.
 */
export function originText(origin) {
  if (!origin) return null;
  if (origin.type === 'file') return `${origin.path}:${origin.line}`;
  if (origin.type === 'container') return origin.label ? `container ${origin.name} · label ${origin.label}` : `container ${origin.name}`;
  if (origin.type === 'key') return `${origin.provider} key ${origin.key}`;
  return null;
}

/** An object's problems (the API's `problems`), each with its place in front. */
export function problemItems(o) {
  return list(o.problems).map((p) => {
    const where = originText(p.origin);
    // A shadowed router links the router that takes its requests.
    const winner = p.kind === 'shadowed' && p.winner
      ? h('span', { class: 'problem-link' }, '. Requests go to ', objLink('routers', p.winner), '.') : null;
    return h('span', { class: 'problem-item', dataset: p.kind ? { kind: p.kind } : {} }, where ? [h('code', { class: 'origin' }, where), ' '] : null, p.message, winner);
  });
}

/** Items in one line, separated by a dot. */
export function joined(items) {
  return items.flatMap((item, i) => (i ? [' · ', item] : [item]));
}

/** A page section with a heading. */
export function section(title, ...children) {
  return h('section', { class: 'card' }, title ? h('h2', {}, title) : null, ...children);
}

/**
 * Any JSON value as readable nested key/value lists: used for middleware
 * options, load-balancer settings, provenance and anything new the API adds.
 */
export function kv(value) {
  if (value === null || value === undefined) return h('span', { class: 'muted' }, '—');
  if (typeof value === 'boolean') return h('span', { class: value ? 'yes' : 'no' }, value ? 'yes' : 'no');
  if (typeof value !== 'object') return h('span', { class: 'val' }, String(value));
  if (Array.isArray(value)) {
    if (value.length === 0) return h('span', { class: 'muted' }, 'none');
    if (value.every((v) => typeof v !== 'object' || v === null)) {
      return h('span', { class: 'chips' }, value.map((v) => h('code', { class: 'chip' }, String(v))));
    }
    return h('ol', { class: 'kv-list' }, value.map((v) => h('li', {}, kv(v))));
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return h('span', { class: 'muted' }, 'none');
  return h('dl', { class: 'kv' }, entries.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, kv(v))]));
}

/** A cell that only says "—" (a phone leaves it out). */
function blank(cell) {
  return cell instanceof Element && cell.classList.contains('muted') && cell.textContent === '—';
}

/**
 * A table whose cells carry their column name, so a phone can show rows as
 * cards. A row is { cells, cls, data, after }; `after` spans a line below it.
 */
export function table(columns, rows, cls = '') {
  return h('div', { class: 'table-wrap' },
    h('table', { class: `grid ${cls}`.trim() },
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.cls, 'aria-sort': c.sorted || null },
        // A sortable column's title is a link that sorts by it (again: the other way).
        c.href ? h('a', { href: c.href, class: 'sort-link', dataset: { sort: c.sort } }, c.title,
          c.sorted ? h('span', { class: 'sort-mark', 'aria-hidden': 'true' }, c.sorted === 'ascending' ? ' ▲' : ' ▼') : null)
          : c.title)))),
      h('tbody', {}, rows.map((r) => [
        h('tr', { class: `${r.cls || ''}${r.after ? ' has-after' : ''}`.trim() || null, dataset: r.data },
          columns.map((c, i) => h('td', { class: blank(r.cells[i]) ? `${c.cls || ''} blank`.trim() : c.cls, dataset: { label: c.title } }, r.cells[i]))),
        // A line under the row, across every column: an object's errors.
        r.after ? h('tr', { class: `row-after ${r.cls || ''}`.trim() }, h('td', { colspan: columns.length }, r.after)) : null,
      ]))));
}

/**
 * Replaces the children of `el` with what `build` returns, unless `data` is
 * the same as last time: a poll that finds nothing new leaves the page, its
 * scroll position and any selected text alone.
 */
export function render(el, data, build) {
  const key = JSON.stringify(data);
  if (el._key === key) return false;
  el._key = key;
  const focused = focusedIn(el);
  el.replaceChildren(...list(build()).flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  // What had the focus is drawn anew: the focus goes to its new self (a
  // column just sorted by), not back to the top of the page.
  const again = focused && el.querySelector(focused);
  if (again) again.focus();
  return true;
}

/** A selector for the element with the focus inside `el`, found again after a redraw; null if none. */
function focusedIn(el) {
  const a = document.activeElement;
  if (!a || a === document.body || !el.contains(a)) return null;
  if (a.id) return `#${CSS.escape(a.id)}`;
  for (const attr of ['data-sort', 'data-safe', 'name', 'href']) {
    const v = a.getAttribute(attr);
    if (v !== null) return `${a.tagName.toLowerCase()}[${attr}="${CSS.escape(v)}"]`;
  }
  return null;
}
