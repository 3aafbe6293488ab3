// TCP and UDP: routers, services and middlewares of connections rather
// than requests. One page, a section per kind, each row with its status,
// its errors (with their file and line, or container and label) and what
// a connection goes through: entry points, TLS, middlewares, service,
// servers; and a page per object with everything the API says about it.

import { optional } from './api.js';
import { h, list, render, statusBadge, table, tag, empty, section, icon, problemItems, joined, rule, priority, objLink, qualify, kv } from './dom.js';
import { fields, head, errors, provenance, raw, health, serverState, flowNode, usedBy, fetchOne, objectPage } from './detail.js';

/** The errors of an object, for the line under its row. */
function errorLine(o) {
  const errors = problemItems(o);
  if (!errors.length) return null;
  return h('div', { class: `obj-error ${o.status === 'warning' ? 'warn' : ''}` },
    icon(o.status === 'warning' ? 'warn' : 'cross'), h('span', {}, joined(errors)));
}

function row(o, cells) {
  return {
    cells,
    after: errorLine(o),
    cls: o.status === 'disabled' ? 'row-error' : o.status === 'warning' ? 'row-warn' : '',
    data: { name: o.name },
  };
}

function chips(names) {
  const all = list(names);
  return all.length ? h('span', { class: 'chips' }, all.map((n) => tag(n))) : h('span', { class: 'muted' }, '—');
}

/** What a TCP router does with TLS, in words. */
function tlsMode(r) {
  if (!r.tls) return h('span', { class: 'muted' }, 'plain');
  if (r.tls.passthrough) return h('span', { class: 'tls-on', title: 'the TLS stream goes to the server untouched' }, icon('lock'), 'passthrough');
  return h('span', { class: 'tls-on', title: 'gangway terminates TLS and forwards the plain bytes' }, icon('lock'), 'terminated');
}

function servers(s) {
  if (s.loadBalancer) {
    const all = list(s.loadBalancer.servers).map((v) => v.address);
    return h('div', { class: 'links' }, all.map((a) => h('code', { class: 'chip' }, a)),
      s.loadBalancer.proxyProtocol ? h('small', { class: 'muted' }, ` PROXY v${s.loadBalancer.proxyProtocol.version}`) : null);
  }
  if (s.weighted) {
    return h('div', { class: 'links' }, list(s.weighted.services).map((c) => h('span', {}, h('code', {}, c.name), h('small', { class: 'muted' }, ` ×${c.weight ?? 1}`))));
  }
  return h('span', { class: 'muted' }, '—');
}

function middlewareOptions(m) {
  if (m.ipAllowList || m.ipWhiteList) return h('span', {}, 'from ', chips((m.ipAllowList || m.ipWhiteList).sourceRange));
  if (m.inFlightConn) return h('span', {}, `at most ${m.inFlightConn.amount} open per client`);
  return h('span', { class: 'muted' }, '—');
}

const SECTIONS = [
  {
    key: 'tcpRouters', kind: 'tcp/routers', path: '/api/tcp/routers', title: 'TCP routers',
    columns: [{ title: 'Status', sort: 'status' }, { title: 'Name', sort: 'name' }, { title: 'Rule', cls: 'wide', sort: 'rule' }, { title: 'Entry points', sort: 'entryPoints' }, { title: 'TLS', sort: 'tls' }, { title: 'Middlewares', sort: 'middlewares' }, { title: 'Service', sort: 'service' }, { title: 'Priority', cls: 'num', sort: 'priority' }],
    cells: (r) => [statusBadge(r.status), h('strong', {}, objLink('tcp/routers', r.name)), rule(r.rule), chips(list(r.using).length ? r.using : r.entryPoints), tlsMode(r), chips(r.middlewares), r.service ? objLink('tcp/services', qualify(r.service, r.provider)) : h('span', { class: 'muted' }, '—'), priority(r.priority)],
  },
  {
    key: 'tcpServices', kind: 'tcp/services', path: '/api/tcp/services', title: 'TCP services',
    columns: [{ title: 'Status', sort: 'status' }, { title: 'Name', sort: 'name' }, { title: 'Type', sort: 'type' }, { title: 'Servers', cls: 'wide', sort: 'servers' }, { title: 'Used by', sort: 'usedBy' }],
    cells: (s) => [statusBadge(s.status), h('strong', {}, objLink('tcp/services', s.name)), s.type ? tag(s.type) : h('span', { class: 'muted' }, '—'), servers(s), chips(s.usedBy)],
  },
  {
    key: 'tcpMiddlewares', kind: 'tcp/middlewares', path: '/api/tcp/middlewares', title: 'TCP middlewares',
    columns: [{ title: 'Status', sort: 'status' }, { title: 'Name', sort: 'name' }, { title: 'Type', sort: 'type' }, { title: 'Lets through', cls: 'wide' }, { title: 'Used by', sort: 'usedBy' }],
    cells: (m) => [statusBadge(m.status), h('strong', {}, objLink('tcp/middlewares', m.name)), m.type ? tag(m.type) : h('span', { class: 'muted' }, '—'), middlewareOptions(m), chips(m.usedBy)],
  },
  {
    key: 'udpRouters', kind: 'udp/routers', path: '/api/udp/routers', title: 'UDP routers',
    columns: [{ title: 'Status', sort: 'status' }, { title: 'Name', sort: 'name' }, { title: 'Entry points', cls: 'wide', sort: 'entryPoints' }, { title: 'Service', sort: 'service' }],
    cells: (r) => [statusBadge(r.status), h('strong', {}, objLink('udp/routers', r.name)), chips(list(r.using).length ? r.using : r.entryPoints), r.service ? objLink('udp/services', qualify(r.service, r.provider)) : h('span', { class: 'muted' }, '—')],
  },
  {
    key: 'udpServices', kind: 'udp/services', path: '/api/udp/services', title: 'UDP services',
    columns: [{ title: 'Status', sort: 'status' }, { title: 'Name', sort: 'name' }, { title: 'Type', sort: 'type' }, { title: 'Servers', cls: 'wide' }, { title: 'Used by', sort: 'usedBy' }],
    cells: (s) => [statusBadge(s.status), h('strong', {}, objLink('udp/services', s.name)), s.type ? tag(s.type) : h('span', { class: 'muted' }, '—'), servers(s), chips(s.usedBy)],
  },
];

/** The columns and cells of each TCP and UDP list, by kind (`tcp/routers`, …). */
export const STREAM_LISTS = Object.fromEntries(SECTIONS.map((s) => [s.kind, s]));

/** The first rows of each kind shown on the TCP and UDP page; the rest on each kind's list. */
const FIRST = 10;

export function tcpPage() {
  const body = h('div');
  const el = h('div', {},
    h('div', { class: 'page-head' },
      h('h1', {}, 'TCP and UDP'),
      h('p', { class: 'lead' }, 'Connections rather than requests: TCP routers pick them by server name (or take a whole entry point) and send the bytes to a service; UDP routers send each client\u2019s datagrams to its own server.')),
    body);
  return {
    title: 'TCP and UDP',
    el,
    async refresh(signal) {
      // The problems first, then the others, FIRST of each; the totals
      // from the overview, and every kind's own list for the rest.
      const [answers, overview] = await Promise.all([
        Promise.all(SECTIONS.map((s) => optional(`${s.path}?sortBy=status&direction=desc&per_page=${FIRST}`, [], signal))),
        optional('/api/overview', {}, signal),
      ]);
      const totals = Object.fromEntries(SECTIONS.map((s) => {
        const [proto, key] = s.kind.split('/');
        return [s.key, (((overview || {})[proto] || {})[key] || {}).total];
      }));
      const data = Object.fromEntries(SECTIONS.map((s, i) => [s.key, list(answers[i])]));
      render(body, { data, totals }, () => {
        const any = SECTIONS.some((s) => data[s.key].length);
        if (!any) {
          return empty('No TCP or UDP routing',
            'TCP routers come from tcp sections of the file provider or tcp.* labels; UDP routers from udp sections, on entry points whose address ends in /udp.');
        }
        return SECTIONS.filter((s) => data[s.key].length).map((s) => {
          const total = totals[s.key] ?? data[s.key].length;
          const more = total > data[s.key].length;
          return h('div', { id: s.key }, section(h('span', {}, h('a', { href: `#/${s.kind}` }, s.title), ` (${total})`),
            table(s.columns.map(({ title, cls }) => ({ title, cls })), data[s.key].map((o) => row(o, s.cells(o))), s.key),
            h('p', { class: 'small' }, h('a', { href: `#/${s.kind}`, class: 'all-link' },
              more ? `All ${total} ${s.title}, with search, filters and sorting →` : `Search, filter and sort ${s.title} →`))));
        });
      });
    },
  };
}

/** A TCP or UDP service's servers with their state, when the API has one. */
function serverTable(s) {
  const all = list(s.loadBalancer && s.loadBalancer.servers);
  if (!all.length) return h('p', { class: 'muted' }, 'No servers.');
  const st = s.serverStatus || {};
  const states = s.serverStates || {};
  const tls = all.some((v) => v.tls);
  const cols = [{ title: 'Server', cls: 'wide' }, { title: 'State' }];
  if (tls) cols.push({ title: 'TLS to the server' });
  const state = (a) => (states[a] ? serverState(states[a])
    : st[a] ? health(st[a]) : h('span', { class: 'muted', title: 'tried when a connection comes' }, 'in rotation'));
  return table(cols, all.map((v) => {
    const cells = [h('code', {}, v.address), state(v.address)];
    if (tls) cells.push(v.tls ? h('span', { class: 'tls-on' }, icon('lock'), ' yes') : h('span', { class: 'muted' }, 'no'));
    return { cells, data: { server: v.address } };
  }), 'servers');
}

/** The steps of a connection, joined by arrows. */
function flow(steps) {
  return h('ol', { class: 'flow', id: 'chain' },
    steps.flatMap((s, i) => (i ? [h('li', { class: 'flow-arrow', 'aria-hidden': 'true' }, icon('arrow')), s] : [s])));
}

function routerBody(kind, o, mws, svc) {
  const proto = kind.split('/')[0];
  const using = list(o.using);
  const eps = using.length ? using : list(o.entryPoints);
  const tls = o.tls;
  const out = [errors(o)];
  out.push(section('Route', fields([
    ['Rule', o.rule ? rule(o.rule) : null],
    ['Priority', o.rule ? h('span', {}, priority(o.priority), h('small', { class: 'muted' }, ' higher wins; by default the length of the rule')) : null],
    ['Entry points', eps.length ? h('span', { class: 'chips' }, eps.map((e) => tag(e))) : h('span', { class: 'muted' }, 'none')],
    ['TLS', proto === 'udp' ? null : tls
      ? h('div', {}, tlsMode(o), fields([['Resolver', tls.certResolver], ['Options', tls.options],
        ['Domains', list(tls.domains).length ? kv(tls.domains) : null]]))
      : h('span', { class: 'muted' }, 'no: plain connections only')],
    ['Rule syntax', o.ruleSyntax],
  ])));
  const steps = [flowNode('entry point', eps.length ? h('span', { class: 'chips' }, eps.map((e) => tag(e))) : h('span', { class: 'muted' }, 'none'))];
  if (tls) steps.push(flowNode('TLS', tlsMode(o)));
  steps.push(flowNode('router', h('span', {}, o.name.replace(/@[^@]*$/, '')), statusBadge(o.status), o.status === 'disabled' ? 'flow-router flow-bad' : 'flow-router'));
  for (const m of mws) {
    steps.push(flowNode(m.missing ? 'middleware (missing)' : `middleware · ${m.type || '?'}`,
      objLink('tcp/middlewares', m.name), statusBadge(m.missing ? 'disabled' : m.status),
      m.missing ? 'flow-missing' : m.status === 'disabled' ? 'flow-bad' : ''));
  }
  const svcName = o.service ? qualify(o.service, o.provider) : null;
  steps.push(flowNode(svc ? `service · ${svc.type || '?'}` : 'service (missing)',
    svcName ? objLink(`${proto}/services`, svcName) : '—',
    statusBadge(svc ? svc.status : 'disabled'), svc ? 'flow-service' : 'flow-missing'));
  out.push(section(proto === 'udp' ? 'What a client\u2019s datagrams go through' : 'What a connection goes through', flow(steps)));
  if (svc && svc.loadBalancer) out.push(section(null, h('h2', {}, 'Service ', objLink(`${proto}/services`, svc.name)), serverTable(svc)));
  out.push(provenance(o), raw(o));
  return out;
}

function serviceBody(kind, o) {
  const proto = kind.split('/')[0];
  const out = [errors(o)];
  if (o.loadBalancer) {
    const { servers: _servers, ...settings } = o.loadBalancer;
    out.push(section('Servers', serverTable(o)));
    if (Object.keys(settings).length) out.push(section('Load balancer settings', kv(settings)));
  }
  if (o.weighted) {
    const kids = list(o.weighted.services);
    const total = kids.reduce((n, c) => n + Number(c.weight ?? 1), 0) || 1;
    out.push(section('Weighted services', table([{ title: 'Service', cls: 'wide' }, { title: 'Weight', cls: 'num' }, { title: 'Share', cls: 'num' }],
      kids.map((c) => ({ cells: [objLink(`${proto}/services`, qualify(c.name, o.provider)), String(c.weight ?? 1), `${Math.round((100 * Number(c.weight ?? 1)) / total)}%`] })))));
  }
  out.push(section('Used by', usedBy(o, `${proto}/routers`)), provenance(o), raw(o));
  return out;
}

function middlewareBody(o) {
  const options = o.ipAllowList || o.ipWhiteList || o.inFlightConn;
  return [
    errors(o),
    section(o.type ? `Options (${o.type})` : 'Options', h('div', { id: 'options' }, options ? kv(options) : h('p', { class: 'muted' }, 'none'))),
    section('What it lets through', middlewareOptions(o)),
    section('Used by', usedBy(o, 'tcp/routers')),
    provenance(o),
    raw(o),
  ];
}

/** The page of one TCP or UDP router, service or middleware (`kind` is `tcp/routers`, `udp/services`, …). */
export function streamDetailPage(kind, name) {
  const proto = kind.split('/')[0];
  return objectPage(kind, name, async (body, o, signal) => {
    if (kind.endsWith('/routers')) {
      const [mws, svc] = await Promise.all([
        Promise.all(list(o.middlewares).map((m) => qualify(m, o.provider)).map((m) =>
          fetchOne('tcp/middlewares', m, signal, { name: m, missing: true }))),
        o.service ? fetchOne(`${proto}/services`, qualify(o.service, o.provider), signal, null) : null,
      ]);
      render(body, { o, mws, svc }, () => [head(kind, o), ...routerBody(kind, o, mws, svc)]);
    } else if (kind.endsWith('/services')) {
      render(body, o, () => [head(kind, o), ...serviceBody(kind, o)]);
    } else {
      render(body, o, () => [head(kind, o), ...middlewareBody(o)]);
    }
  });
}
