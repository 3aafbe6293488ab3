// TCP and UDP: routers, services and middlewares of connections rather
// than requests. One page, a section per kind, each row with its status,
// its errors (with their file and line, or container and label) and what
// a connection goes through: entry points, TLS, middlewares, service,
// servers.

import { optional } from './api.js';
import { h, list, render, statusBadge, table, tag, empty, section, icon, problemItems, joined, rule, priority } from './dom.js';

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
    key: 'tcpRouters', path: '/api/tcp/routers', title: 'TCP routers',
    columns: [{ title: 'Status' }, { title: 'Name' }, { title: 'Rule', cls: 'wide' }, { title: 'Entry points' }, { title: 'TLS' }, { title: 'Middlewares' }, { title: 'Service' }, { title: 'Priority', cls: 'num' }],
    cells: (r) => [statusBadge(r.status), h('strong', {}, r.name), rule(r.rule), chips(list(r.using).length ? r.using : r.entryPoints), tlsMode(r), chips(r.middlewares), r.service ? h('code', {}, r.service) : h('span', { class: 'muted' }, '—'), priority(r.priority)],
  },
  {
    key: 'tcpServices', path: '/api/tcp/services', title: 'TCP services',
    columns: [{ title: 'Status' }, { title: 'Name' }, { title: 'Type' }, { title: 'Servers', cls: 'wide' }, { title: 'Used by' }],
    cells: (s) => [statusBadge(s.status), h('strong', {}, s.name), s.type ? tag(s.type) : h('span', { class: 'muted' }, '—'), servers(s), chips(s.usedBy)],
  },
  {
    key: 'tcpMiddlewares', path: '/api/tcp/middlewares', title: 'TCP middlewares',
    columns: [{ title: 'Status' }, { title: 'Name' }, { title: 'Type' }, { title: 'Lets through', cls: 'wide' }, { title: 'Used by' }],
    cells: (m) => [statusBadge(m.status), h('strong', {}, m.name), m.type ? tag(m.type) : h('span', { class: 'muted' }, '—'), middlewareOptions(m), chips(m.usedBy)],
  },
  {
    key: 'udpRouters', path: '/api/udp/routers', title: 'UDP routers',
    columns: [{ title: 'Status' }, { title: 'Name' }, { title: 'Entry points', cls: 'wide' }, { title: 'Service' }],
    cells: (r) => [statusBadge(r.status), h('strong', {}, r.name), chips(list(r.using).length ? r.using : r.entryPoints), r.service ? h('code', {}, r.service) : h('span', { class: 'muted' }, '—')],
  },
  {
    key: 'udpServices', path: '/api/udp/services', title: 'UDP services',
    columns: [{ title: 'Status' }, { title: 'Name' }, { title: 'Type' }, { title: 'Servers', cls: 'wide' }, { title: 'Used by' }],
    cells: (s) => [statusBadge(s.status), h('strong', {}, s.name), s.type ? tag(s.type) : h('span', { class: 'muted' }, '—'), servers(s), chips(s.usedBy)],
  },
];

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
      const answers = await Promise.all(SECTIONS.map((s) => optional(s.path, [], signal)));
      const data = Object.fromEntries(SECTIONS.map((s, i) => [s.key, list(answers[i])]));
      render(body, data, () => {
        const any = SECTIONS.some((s) => data[s.key].length);
        if (!any) {
          return empty('No TCP or UDP routing',
            'TCP routers come from tcp sections of the file provider or tcp.* labels; UDP routers from udp sections, on entry points whose address ends in /udp.');
        }
        return SECTIONS.filter((s) => data[s.key].length).map((s) =>
          h('div', { id: s.key }, section(`${s.title} (${data[s.key].length})`,
            table(s.columns, data[s.key].map((o) => row(o, s.cells(o))), s.key))));
      });
    },
  };
}
