// Routers, services and middlewares lists. Search and filters are the API's
// own `search`, `status`, `provider` and `page` parameters, kept in the
// address so a filtered view can be bookmarked or shared.

import { get, getPage, optional, query } from './api.js';
import { h, priority, list, render, statusBadge, objLink, rule, table, tag, empty, KINDS, qualify, icon, problemItems, joined, sleepBadge, timeAgo, wakeDuration } from './dom.js';
import { STREAM_LISTS } from './tcp.js';

const PER_PAGE = 50;

const LEADS = {
  routers: 'Each router matches requests by its rule and sends them through its middlewares to a service.',
  services: 'Services answer requests: load balancers over servers, or weighted, mirroring and failover services over other services.',
  middlewares: 'Middlewares change requests and responses on their way: redirects, headers, authentication, limits.',
  'tcp/routers': 'TCP routers pick connections by server name (or take a whole entry point) and send the bytes to a service.',
  'tcp/services': 'TCP services forward connections to servers, or to other TCP services by weight.',
  'tcp/middlewares': 'TCP middlewares admit or refuse connections: allowed source ranges, connections per client.',
  'udp/routers': 'UDP routers send each client\u2019s datagrams on an entry point to a service.',
  'udp/services': 'UDP services forward datagrams to servers, or to other UDP services by weight.',
};

const STATUSES = [
  { value: '', label: 'All', key: 'total' },
  { value: 'disabled', label: 'Errors', key: 'errors', cls: 'err' },
  { value: 'warning', label: 'Warnings', key: 'warnings', cls: 'warn' },
  { value: 'enabled', label: 'OK', key: 'ok', cls: 'ok' },
];

function nameCell(kind, o) {
  return h('div', { class: 'name-cell' }, objLink(kind, o.name));
}

/** An object's errors, shown on a line under its row. */
function errorLine(o) {
  const errors = problemItems(o);
  if (!errors.length) return null;
  return h('div', { class: `obj-error ${o.status === 'warning' ? 'warn' : ''}` },
    icon(o.status === 'warning' ? 'warn' : 'cross'), h('span', {}, joined(errors)));
}

/** Why a sleeping service's last wake-up failed, on a line under its row while the backoff lasts. */
function sleepErrorLine(o) {
  if (!o.sleep || !o.sleep.error) return null;
  return h('div', { class: 'obj-error sleep-error' }, icon('cross'), h('span', {}, `Wake-up failed: ${o.sleep.error}`));
}

/** A sleeping service's state, and since when it sleeps or when it last woke. */
function sleepSummary(sleep) {
  const since = sleep.state === 'asleep' && sleep.asleepSince
    ? h('small', { class: 'muted' }, ' since ', timeAgo(sleep.asleepSince))
    : sleep.lastWake
      ? h('small', { class: 'muted' }, ' woke ', timeAgo(sleep.lastWake), sleep.lastWakeMs !== undefined ? ` in ${wakeDuration(sleep.lastWakeMs)}` : '')
      : null;
  return h('div', { class: 'sleep-sum' }, sleepBadge(sleep), since);
}

function links(kind, names, provider, max = 3) {
  const all = list(names);
  if (!all.length) return h('span', { class: 'muted' }, '—');
  const shown = all.slice(0, max).map((n) => objLink(kind, qualify(n, provider)));
  return h('div', { class: 'links' }, shown, all.length > max ? h('span', { class: 'muted' }, `+${all.length - max} more`) : null);
}

/** A one-line health summary of a service's servers: "2 servers · 1 down". */
export function serversSummary(s) {
  const provider = s.provider;
  if (s.loadBalancer) {
    const servers = list(s.loadBalancer.servers);
    const st = s.serverStatus || {};
    const states = s.serverStates || {};
    // The model of serving when the API gives it; Traefik's UP/DOWN otherwise.
    const state = (v) => (states[v.url] ? states[v.url].state : String(st[v.url] || '').toLowerCase());
    const count = (...which) => servers.filter((v) => which.includes(state(v))).length;
    const up = count('up');
    const down = count('down', 'unreachable');
    const erroring = count('erroring');
    const unknown = count('unknown');
    return h('span', { class: 'servers-sum' },
      `${servers.length} server${servers.length === 1 ? '' : 's'}`,
      up ? h('span', { class: 'health up' }, ` · ${up} up`) : null,
      erroring ? h('span', { class: 'health down' }, ` · ${erroring} answering errors`) : null,
      down ? h('span', { class: 'health down' }, ` · ${down} down`) : null,
      unknown ? h('span', { class: 'muted' }, ` · ${unknown} not tried yet`) : null);
  }
  if (s.weighted) return h('div', { class: 'links' }, list(s.weighted.services).map((c) => h('span', {}, objLink('services', qualify(c.name, provider)), h('small', { class: 'muted' }, ` ×${c.weight ?? 1}`))));
  if (s.mirroring) return h('span', {}, objLink('services', qualify(s.mirroring.service, provider)), h('small', { class: 'muted' }, ` + ${list(s.mirroring.mirrors).length} mirror(s)`));
  if (s.failover) return h('span', {}, objLink('services', qualify(s.failover.service, provider)), h('small', { class: 'muted' }, ' or '), objLink('services', qualify(s.failover.fallback, provider)));
  if (s.provider === 'internal') return h('span', { class: 'muted' }, 'built in');
  return h('span', { class: 'muted' }, '—');
}

function typeTag(o) {
  if (o.type) return tag(o.type);
  return o.provider === 'internal' ? tag('internal', 'accent') : h('span', { class: 'muted' }, '—');
}

const COLUMNS = {
  routers: [
    { title: 'Status', sort: 'status' }, { title: 'Name', sort: 'name' }, { title: 'Rule', cls: 'wide', sort: 'rule' }, { title: 'Entry points', sort: 'entryPoints' },
    { title: 'Service', sort: 'service' }, { title: 'Middlewares', sort: 'middlewares' }, { title: 'TLS', sort: 'tls' }, { title: 'Priority', cls: 'num', sort: 'priority' },
  ],
  services: [{ title: 'Status', sort: 'status' }, { title: 'Name', sort: 'name' }, { title: 'Type', sort: 'type' }, { title: 'Servers', cls: 'wide', sort: 'servers' }, { title: 'Used by', sort: 'usedBy' }],
  middlewares: [{ title: 'Status', sort: 'status' }, { title: 'Name', sort: 'name' }, { title: 'Type', sort: 'type' }, { title: 'Used by', cls: 'wide', sort: 'usedBy' }],
  ...Object.fromEntries(Object.entries(STREAM_LISTS).map(([kind, s]) => [kind, s.columns])),
};

function cells(kind, o) {
  const provider = o.provider;
  if (STREAM_LISTS[kind]) return STREAM_LISTS[kind].cells(o);
  switch (kind) {
    case 'routers':
      return [
        statusBadge(o.status), nameCell(kind, o), rule(o.rule),
        list(o.using).length || list(o.entryPoints).length
          ? h('span', { class: 'chips' }, list(o.using).length ? list(o.using).map((e) => tag(e)) : list(o.entryPoints).map((e) => tag(e)))
          : h('span', { class: 'muted' }, '—'),
        o.service ? objLink('services', qualify(o.service, provider)) : h('span', { class: 'muted' }, '—'),
        links('middlewares', o.middlewares, provider, 2),
        o.tls ? h('span', { class: 'tls-on', title: o.tls.certResolver ? `certificate resolver ${o.tls.certResolver}` : 'TLS' }, icon('lock'), o.tls.certResolver || 'TLS') : h('span', { class: 'muted' }, '—'),
        priority(o.priority),
      ];
    case 'services':
      return [statusBadge(o.status), nameCell(kind, o), typeTag(o),
        o.sleep ? h('div', {}, serversSummary(o), sleepSummary(o.sleep)) : serversSummary(o),
        links('routers', o.usedBy, null)];
    default:
      return [statusBadge(o.status), nameCell(kind, o), typeTag(o), links('routers', o.usedBy, null, 5)];
  }
}

export function listPage(kind, initial) {
  const meta = KINDS[kind];
  let q = initial;
  const search = h('input', {
    type: 'search', id: 'search', placeholder: kind.endsWith('routers') ? 'Search names, rules, services' : 'Search names',
    'aria-label': `Search ${kind}`, autocomplete: 'off', spellcheck: 'false',
  });
  const provider = h('select', { id: 'provider-filter', 'aria-label': 'Provider' });
  const chips = h('nav', { class: 'chips-nav', 'aria-label': 'Filter by status' });
  const results = h('div', { class: 'results' });
  const pager = h('div', { class: 'pager' });

  const hashFor = (changes) => {
    const next = Object.fromEntries(q.entries());
    Object.assign(next, changes);
    if (!('page' in changes)) delete next.page;
    return `#/${kind}${query(next)}`;
  };
  // replace() keeps typing out of the back button's history.
  let debounce;
  search.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => location.replace(hashFor({ search: search.value.trim() })), 200);
  });
  provider.addEventListener('change', () => location.replace(hashFor({ provider: provider.value })));

  const showQuery = () => {
    if (document.activeElement !== search) search.value = q.get('search') || '';
  };
  showQuery();

  const el = h('div', {},
    h('div', { class: 'page-head' }, h('h1', {}, meta.title), h('p', { class: 'lead' }, LEADS[kind])),
    h('div', { class: 'toolbar' }, h('div', { class: 'search-box' }, search), chips, h('label', { class: 'select' }, provider)),
    results, pager);

  return {
    title: meta.title,
    el,
    setQuery(next) {
      q = next;
      showQuery();
    },
    async refresh(signal) {
      const page = Math.max(1, Number(q.get('page') || '1'));
      const params = { search: q.get('search'), status: q.get('status'), provider: q.get('provider'), page, per_page: PER_PAGE };
      const sortBy = q.get('sortBy') || '';
      const direction = q.get('direction') === 'desc' ? 'desc' : 'asc';
      Object.assign(params, sortBy ? { sortBy, direction } : {});
      const [{ items, next, total }, overview, providers] = await Promise.all([
        getPage(`${meta.api}${query(params)}`, signal),
        get('/api/overview', signal).catch(() => ({})),
        optional('/api/providers', {}, signal),
      ]);
      const [proto, key] = kind.includes('/') ? kind.split('/') : ['http', kind];
      const counts = { ...(((overview[proto] || {})[key]) || {}) };
      counts.ok = Math.max(0, (counts.total || 0) - (counts.errors || 0) - (counts.warnings || 0));
      const status = q.get('status') || '';
      render(chips, { counts, q: q.toString() }, () => STATUSES.map((s) => h('a', {
        href: hashFor({ status: s.value }),
        class: `chip-link ${s.cls || ''}`,
        'aria-current': s.value === status ? 'true' : null,
      }, s.label, h('span', { class: `n${counts[s.key] ? ' some' : ''}` }, String(counts[s.key] ?? '')))));

      const names = new Set(Object.keys(providers || {}));
      for (const o of list(items)) if (o.provider) names.add(o.provider);
      const current = q.get('provider') || '';
      if (current) names.add(current);
      render(provider, { names: [...names].sort(), current }, () => [
        h('option', { value: '' }, 'All providers'),
        ...[...names].sort().map((n) => h('option', { value: n, selected: n === current }, n)),
      ]);
      provider.value = current;

      render(results, { items, sortBy, direction }, () => {
        if (!list(items).length) {
          const filtered = q.get('search') || q.get('status') || q.get('provider');
          return filtered
            ? empty(`No ${meta.title.toLowerCase()} match`, 'Nothing matches this search and these filters.', h('a', { href: `#/${kind}` }, 'Show all'))
            : empty(`No ${meta.title.toLowerCase()}`, kind === 'middlewares'
              ? 'No middleware is configured. Define them under http.middlewares in the file provider or with labels.'
              : `No ${meta.one} is configured yet.`);
        }
        // Each column sorts the whole list on the server; again, the other way.
        const columns = COLUMNS[kind].map((c) => (c.sort ? {
          ...c,
          href: hashFor({ sortBy: c.sort, direction: sortBy === c.sort && direction === 'asc' ? 'desc' : 'asc' }),
          sorted: sortBy === c.sort ? (direction === 'asc' ? 'ascending' : 'descending') : null,
        } : c));
        return table(columns, list(items).map((o) => ({
          cells: cells(kind, o),
          cls: o.status === 'disabled' ? 'row-error' : o.status === 'warning' ? 'row-warn' : '',
          data: { name: o.name },
          after: kind === 'services' && o.sleep && o.sleep.error
            ? [errorLine(o), sleepErrorLine(o)].filter(Boolean) : errorLine(o),
        })), `list list-${kind.replace('/', '-')}`);
      });
      const pages = total === null ? null : Math.max(1, Math.ceil(total / PER_PAGE));
      render(pager, { page, next, total, q: q.toString() }, () => (page === 1 && next <= 1 ? [] : [
        page > 1 ? h('a', { href: hashFor({ page: String(page - 1) }) }, '← Previous') : h('span'),
        h('span', { class: 'muted', id: 'page-of' }, pages ? `Page ${page} of ${pages} (${total} ${meta.title.toLowerCase()})` : `Page ${page}`),
        next > page ? h('a', { href: hashFor({ page: String(next) }) }, 'Next →') : h('span'),
      ]));
    },
  };
}
