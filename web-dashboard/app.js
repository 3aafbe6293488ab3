// The dashboard shell: hash routing, the live poll, the theme toggle.
// Each page is built once when it is opened and then refreshed every
// POLL_MS; a refresh only touches the DOM when the API's answer changed.

import { get } from './api.js';
import { h, refreshTimes, callout, empty, KINDS } from './dom.js';
import { overviewPage } from './overview.js';
import { listPage } from './lists.js';
import { detailPage } from './detail.js';
import { certificatesPage } from './certificates.js';
import { containersPage } from './containers.js';
import { explainPage } from './explain.js';
import { tcpPage, streamDetailPage } from './tcp.js';

const POLL_MS = 2000;

const app = document.getElementById('app');
const live = document.getElementById('live');

/** The page for a hash path, or null. */
function pageFor(parts, query) {
  const [section, ...rest] = parts;
  const name = rest.length ? decodeURIComponent(rest.join('/')) : null;
  switch (section || 'overview') {
    case 'overview': return rest.length ? null : overviewPage(query);
    case 'routers':
    case 'services':
    case 'middlewares':
      return name ? detailPage(section, name) : listPage(section, query);
    case 'tcp':
    case 'udp': {
      // `#/tcp` lists both; `#/tcp/routers/<name>`, `#/udp/services/<name>`, … are one object.
      if (!rest.length) return section === 'tcp' ? tcpPage() : null;
      const kind = `${section}/${rest[0]}`;
      if (rest.length === 1) return KINDS[kind] ? listPage(kind, query) : null;
      const one = rest.length > 1 ? decodeURIComponent(rest.slice(1).join('/')) : null;
      return one && KINDS[kind] ? streamDetailPage(kind, one) : null;
    }
    case 'certificates': return rest.length ? null : certificatesPage();
    case 'containers': return rest.length ? null : containersPage();
    case 'explain': return rest.length ? null : explainPage(query);
    default: return null;
  }
}

function notFoundPage(path) {
  const el = h('div', {}, h('h1', {}, 'Page not found'),
    empty(`Nothing at #${path}`, 'Use the sections above to find routers, services and middlewares.'));
  return { title: 'Not found', el, refresh: async () => {} };
}

function parseHash() {
  const raw = location.hash.replace(/^#/, '');
  const [path, qs = ''] = raw.split('?');
  const parts = path.split('/').filter(Boolean);
  return { hash: raw, path, parts, query: new URLSearchParams(qs) };
}

let current = null; // { hash, path, page }
let inflight = null;
let timer = null;

function route() {
  const { hash, path, parts, query } = parseHash();
  const section = parts[0] || 'overview';
  // UDP objects live under the TCP and UDP section.
  const navSection = section === 'udp' ? 'tcp' : section;
  for (const a of document.querySelectorAll('.nav a')) {
    if (a.dataset.section === navSection) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  // Same page, new query (a filter or a new explain request): keep the page
  // and its focused input, just read again.
  if (current && current.path === path && current.page.setQuery) {
    current.hash = hash;
    current.page.setQuery(query);
    tick();
    return;
  }
  const page = pageFor(parts, query) || notFoundPage(path);
  current = { hash, path, page };
  document.title = `${page.title} · gangway`;
  page.el.classList.add('page-body');
  page.el.dataset.page = section;
  const banner = h('div', { id: 'banner' });
  app.replaceChildren(banner, page.el);
  app.removeAttribute('data-loaded');
  app.removeAttribute('data-path');
  window.scrollTo(0, 0);
  tick();
}

// One polite live region, told only what changed: the page opened, the API
// lost or found again. A poll that changes the page says nothing.
const announcer = document.getElementById('announce');
let announced = null;

function announce(text) {
  if (text === announced) return;
  announced = text;
  announcer.textContent = text;
}

document.getElementById('skip').addEventListener('click', (e) => {
  // The hash is the page's address: the link moves the focus, not the route.
  e.preventDefault();
  app.focus();
});

function setLive(ok, error) {
  const was = live.classList.contains('ok') ? 'ok' : live.classList.contains('down') ? 'down' : null;
  if (was && was !== (ok ? 'ok' : 'down')) announce(ok ? 'gangway answers again.' : 'gangway does not answer; showing the last answer.');
  live.classList.toggle('ok', ok);
  live.classList.toggle('down', !ok);
  live.querySelector('.live-text').textContent = ok ? 'Live' : 'Offline';
  live.title = ok
    ? `Updated ${new Date().toLocaleTimeString()}; refreshes every ${POLL_MS / 1000} s`
    : `Cannot read the API (${error && error.message}); retrying every ${POLL_MS / 1000} s`;
  const banner = document.getElementById('banner');
  if (!banner) return;
  if (ok) banner.replaceChildren();
  else {
    banner.replaceChildren(callout('error', 'gangway does not answer',
      [`${error && error.message ? error.message : 'The API could not be read'}. Showing the last answer; retrying.`]));
  }
}

async function tick() {
  clearTimeout(timer);
  if (inflight) inflight.abort();
  const ctrl = new AbortController();
  inflight = ctrl;
  const here = current;
  const hash = here.hash;
  try {
    await here.page.refresh(ctrl.signal);
    if (here === current && !ctrl.signal.aborted) {
      setLive(true);
      // For tests and scripts: which page has been read (with its query),
      // and how often.
      app.dataset.path = here.path;
      app.dataset.hash = hash;
      if (!app.dataset.loaded) announce(`${here.page.title} loaded.`);
      app.dataset.loaded = String(Number(app.dataset.loaded || 0) + 1);
    }
  } catch (e) {
    if (ctrl.signal.aborted || e.name === 'AbortError') return;
    if (here === current) setLive(false, e);
    console.warn('refresh failed:', e);
  } finally {
    if (inflight === ctrl) {
      inflight = null;
      refreshTimes(app);
      if (!document.hidden) timer = setTimeout(tick, POLL_MS);
    }
  }
}

// === theme ===

function effectiveTheme() {
  const set = document.documentElement.dataset.theme;
  if (set) return set;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function showThemeButton() {
  const btn = document.getElementById('theme');
  const next = effectiveTheme() === 'dark' ? 'light' : 'dark';
  btn.setAttribute('aria-label', `Switch to the ${next} theme`);
  btn.title = `Switch to the ${next} theme (only changes this view)`;
  btn.querySelector('.theme-label').textContent = next === 'dark' ? 'Dark' : 'Light';
}

document.getElementById('theme').addEventListener('click', () => {
  const next = effectiveTheme() === 'dark' ? 'light' : 'dark';
  const system = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  // Back to the system's own theme is back to following the system: no
  // choice is kept, so a later change of the system setting shows again.
  try {
    if (next === system) {
      delete document.documentElement.dataset.theme;
      localStorage.removeItem('gangway-theme');
    } else {
      document.documentElement.dataset.theme = next;
      localStorage.setItem('gangway-theme', next);
    }
  } catch (_) { /* storage may be off */ }
  showThemeButton();
});
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', showThemeButton);
showThemeButton();

// === start ===

document.addEventListener('visibilitychange', () => {
  if (!document.hidden && current) tick();
});
window.addEventListener('hashchange', route);
route();

get('/api/version').then((v) => {
  const el = document.getElementById('version');
  if (el && v && v.Version) el.textContent = `gangway ${v.Version}`;
}).catch(() => {});
