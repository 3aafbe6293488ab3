// Overview: what needs attention first, then counts, entry points,
// providers and certificates that expire soon.

import { get, getPage, optional, query } from './api.js';
import { h, list, render, section, statusBadge, objLink, table, tag, timeAgo, KINDS, callout, icon, problemItems, joined } from './dom.js';
import { normalizeCert, needsLook, sortCerts, certTable, SOON_DAYS } from './certificates.js';

const KIND_NAMES = ['routers', 'services', 'middlewares'];
// TCP and UDP kinds: where the overview's counts are, and the card titles.
const STREAM_KINDS = [
  { kind: 'tcp/routers', proto: 'tcp', key: 'routers', title: 'TCP routers' },
  { kind: 'tcp/services', proto: 'tcp', key: 'services', title: 'TCP services' },
  { kind: 'tcp/middlewares', proto: 'tcp', key: 'middlewares', title: 'TCP middlewares' },
  { kind: 'udp/routers', proto: 'udp', key: 'routers', title: 'UDP routers' },
  { kind: 'udp/services', proto: 'udp', key: 'services', title: 'UDP services' },
];

/** Objects with problems read per kind and status; the rest are counted, with a link to them all. */
const PROBLEMS_READ = 100;

async function problems(kind, counts, signal) {
  if (!counts || (counts.errors || 0) + (counts.warnings || 0) === 0) return [];
  const fetchStatus = (status, n) => (n > 0 ? getPage(`${KINDS[kind].api}${query({ status, per_page: PROBLEMS_READ })}`, signal)
    : { items: [], total: 0 });
  const [errors, warnings] = await Promise.all([fetchStatus('disabled', counts.errors), fetchStatus('warning', counts.warnings)]);
  const out = [];
  for (const [status, got] of [['disabled', errors], ['warning', warnings]]) {
    const items = list(got.items);
    out.push(...items.map((o) => ({ kind, name: o.name, status: o.status, problems: list(o.problems) })));
    // Never fewer than the list says there are: those not read are one line.
    const more = (got.total === null ? items.length : got.total) - items.length;
    if (more > 0) out.push({ kind, status, more });
  }
  return out;
}

/** One line of "Needs attention" for objects counted but not read. */
function moreItem(o) {
  const what = o.more === 1 ? KINDS[o.kind].one : `${KINDS[o.kind].one}s`;
  const state = o.status === 'disabled' ? 'with an error' : 'with a warning';
  return h('li', { class: `problem ${o.status}`, dataset: { more: String(o.more) } }, statusBadge(o.status),
    h('span', { class: 'problem-kind' }, KINDS[o.kind].one),
    h('a', { href: `#/${o.kind}?status=${o.status}` }, `${o.more} more ${what} ${state}`),
    h('div', { class: 'problem-text' }, 'Not listed here: follow the link for all of them.'));
}

/** Problems shown on one page of "Needs attention"; the pager links the others. */
const ATTENTION_PER_PAGE = 20;

function attention(d, pageNo) {
  const items = [];
  // Errors first: disabled objects, failing providers, failed certificates.
  // Within each, the count of those not listed first: seen on page one.
  const rank = (o) => (o.status === 'disabled' ? 0 : 2) + (o.more ? 0 : 1);
  const objs = [...d.problems].sort((a, b) => rank(a) - rank(b));
  for (const o of objs) {
    if (o.more) {
      items.push(moreItem(o));
      continue;
    }
    items.push(h('li', { class: `problem ${o.status}`, dataset: { object: o.name } },
      statusBadge(o.status),
      h('span', { class: 'problem-kind' }, KINDS[o.kind].one),
      objLink(o.kind, o.name),
      h('div', { class: 'problem-text' }, o.problems.length ? joined(problemItems(o)) : 'no detail given')));
  }
  for (const [name, p] of Object.entries(d.providers)) {
    if (p && (p.lastError || p.connected === false)) {
      items.push(h('li', { class: 'problem disabled' }, statusBadge('disabled'), h('span', { class: 'problem-kind' }, 'provider'),
        h('strong', {}, name), h('div', { class: 'problem-text' }, p.lastError || 'not connected')));
    }
  }
  for (const c of d.certs.filter(needsLook)) {
    const failed = c.status === 'error';
    items.push(h('li', { class: `problem ${failed ? 'disabled' : 'warning'}` }, statusBadge(failed ? 'disabled' : 'warning'),
      h('span', { class: 'problem-kind' }, 'certificate'), h('a', { href: '#/certificates' }, c.domains[0] || '(no domain)'),
      h('div', { class: 'problem-text' }, failed ? (c.lastError || 'the last order failed')
        : c.storageError ? 'not stored (served from memory): ' + c.storageError
        : 'expires within ' + SOON_DAYS + ' days')));
  }
  // A container with no label of the prefix (gangway's own, a database)
  // asks for nothing: not being routed is no problem.
  const notRouted = d.containers.filter((c) => !c.routed && !c.unlabelled);
  if (notRouted.length) {
    items.push(h('li', { class: 'problem warning' }, statusBadge('warning'), h('span', { class: 'problem-kind' }, 'containers'),
      h('a', { href: '#/containers' }, `${notRouted.length} not routed`),
      h('div', { class: 'problem-text' }, notRouted.slice(0, 5).map((c) => c.name).join(', ') + (notRouted.length > 5 ? ', …' : ''))));
  }
  for (const w of list(d.overview.warnings)) {
    items.push(h('li', { class: 'problem warning' }, statusBadge('warning'), h('span', { class: 'problem-kind' }, 'config'),
      h('div', { class: 'problem-text' }, w.message)));
  }
  if (!items.length) {
    const http = d.overview.http || {};
    const n = (k) => (http[k] && http[k].total) || 0;
    const tcp = d.overview.tcp || {};
    const udp = d.overview.udp || {};
    const m = (section, k) => (section[k] && section[k].total) || 0;
    const streams = m(tcp, 'routers') + m(udp, 'routers');
    return callout('ok', 'Everything is working', [`${n('routers')} routers, ${n('services')} services and ${n('middlewares')} middlewares without an error or warning`
      + (streams ? `, and ${m(tcp, 'routers')} TCP and ${m(udp, 'routers')} UDP routers.` : '.')]);
  }
  // Each line is one problem, except a "more" line, which is as many as it
  // says: the heading counts problems, the pager lines.
  const problemCount = items.reduce((n, li) => n + Number(li.dataset.more || 1), 0);
  const pages = Math.ceil(items.length / ATTENTION_PER_PAGE);
  const current = Math.min(Math.max(1, pageNo), pages);
  const shown = items.slice((current - 1) * ATTENTION_PER_PAGE, current * ATTENTION_PER_PAGE);
  const pager = pages > 1 ? h('div', { class: 'pager', id: 'attention-pager' },
    current > 1 ? h('a', { href: `#/?attention=${current - 1}` }, '← Previous') : h('span'),
    h('span', { class: 'muted' }, `Page ${current} of ${pages}`),
    current < pages ? h('a', { href: `#/?attention=${current + 1}` }, 'Next →') : h('span')) : null;
  return h('section', { class: 'card attention', id: 'attention' },
    h('h2', {}, icon('warn'), `Needs attention (${problemCount})`), h('ul', { class: 'problems' }, shown), pager);
}

function countCard(kind, c, title = KINDS[kind].title) {
  const total = c.total || 0;
  const errors = c.errors || 0;
  const warnings = c.warnings || 0;
  const ok = Math.max(0, total - errors - warnings);
  const pct = (n) => (total ? `${(100 * n) / total}%` : '0');
  const link = (status, n, label, cls) => h('a', { href: `#/${kind}?status=${status}`, class: `count ${cls}${n ? '' : ' zero'}` },
    h('strong', {}, String(n)), ` ${label}`);
  return h('section', { class: 'card count-card', dataset: { kind } },
    h('a', { href: `#/${kind}`, class: 'count-title' }, h('span', {}, title), h('span', { class: 'total' }, String(total))),
    h('div', { class: 'bar', role: 'img', 'aria-label': `${ok} OK, ${warnings} warnings, ${errors} errors` },
      h('span', { class: 'bar-ok', style: `width:${pct(ok)}` }),
      h('span', { class: 'bar-warn', style: `width:${pct(warnings)}` }),
      h('span', { class: 'bar-err', style: `width:${pct(errors)}` })),
    h('div', { class: 'counts' },
      link('disabled', errors, errors === 1 ? 'error' : 'errors', 'err'),
      link('warning', warnings, warnings === 1 ? 'warning' : 'warnings', 'warn'),
      link('enabled', ok, 'OK', 'ok')));
}

/** The internal entry point: `gangway`, or `traefik` when only that one is configured. */
function internal(ep, eps) {
  return ep.name === 'gangway' || (ep.name === 'traefik' && !eps.some((e) => e.name === 'gangway'));
}

/** Whether a listen address (`:8080`, `0.0.0.0:8080`, `[::]:8080`) takes connections on every interface. */
function everyInterface(address) {
  const a = String(address || '');
  return a.startsWith(':') || a.startsWith('0.0.0.0:') || a.startsWith('[::]:');
}

function entryPointsTable(eps) {
  return table([{ title: 'Name' }, { title: 'Address' }, { title: 'Notes', cls: 'wide' }], eps.map((ep) => {
    const notes = [];
    if (internal(ep, eps)) {
      notes.push(tag('internal', 'accent'), ' API, dashboard, /ping and /metrics');
      notes.push(everyInterface(ep.address)
        ? h('span', { class: 'warn-text listen-note', dataset: { listen: 'all' } }, ' · listens on every interface, as Traefik\'s :8080 does, so a container\'s published port reaches it; anyone who reaches the port reads this dashboard')
        : h('span', { class: 'muted listen-note', dataset: { listen: 'this-host' } }, ' · this host only'));
    }
    const http = ep.http || {};
    if (http.tls) notes.push(tag('TLS'), ' ');
    if (ep.http3) {
      const port = ep.http3.advertisedPort;
      notes.push(tag('HTTP/3'), port ? ` advertised on :${port} ` : ' ');
    }
    if (http.redirections) {
      const to = http.redirections.entryPoint || {};
      notes.push(tag('redirect'), ` to ${to.to || '?'}${to.scheme ? ` (${to.scheme})` : ''} `);
    }
    if (ep.asDefault) notes.push(tag('default'), ' ');
    return {
      data: { entrypoint: ep.name },
      cells: [h('strong', {}, ep.name), h('code', {}, ep.address || '—'), notes.length ? h('span', {}, notes) : h('span', { class: 'muted' }, '—')],
    };
  }));
}

function providersTable(providers) {
  const names = Object.keys(providers);
  if (!names.length) return h('p', { class: 'muted' }, 'No provider has reported yet.');
  return table([{ title: 'Provider' }, { title: 'State' }, { title: 'Last sync' }, { title: 'Objects', cls: 'wide' }], names.map((name) => {
    const p = providers[name] || {};
    const failing = p.lastError || p.connected === false;
    const state = failing
      ? h('span', { class: 'state state-bad', title: p.lastError || '' }, h('span', { class: 'dot' }), p.connected === false ? 'disconnected' : 'error')
      : p.lastSync
        ? h('span', { class: 'state state-good' }, h('span', { class: 'dot' }), p.connected === true ? 'connected' : 'in sync')
        : h('span', { class: 'state' }, h('span', { class: 'dot' }), 'waiting');
    const stream = [['tcpRouters', 'TCP routers'], ['tcpServices', 'TCP services'], ['tcpMiddlewares', 'TCP middlewares'],
      ['udpRouters', 'UDP routers'], ['udpServices', 'UDP services']]
      .filter(([key]) => p[key]).map(([key, what]) => `${p[key]} ${what}`);
    const counts = [`${p.routers} routers`, `${p.services} services`, `${p.middlewares} middlewares`, ...stream,
      ...(p.containers ? [`${p.containers.length} containers`] : [])].join(' · ');
    return {
      data: { provider: name },
      cells: [
        h('a', { href: `#/routers?provider=${encodeURIComponent(name)}` }, h('strong', {}, name)),
        h('div', {}, state, p.lastError ? h('div', { class: 'error-text small' }, p.lastError) : null),
        timeAgo(p.lastSync),
        counts,
      ],
    };
  }));
}

function certificatesCard(all) {
  // The default certificate is no certificate anyone asked for: it is
  // counted apart, by the routers that are served it.
  const certs = all.filter((c) => c.source !== 'default');
  const fallback = all.find((c) => c.source === 'default' && c.selfSigned && c.routers.length);
  const soon = sortCerts(certs.filter(needsLook));
  let body;
  if (!certs.length) body = h('p', { class: 'muted' }, 'No certificates yet. Routers with tls.certResolver get theirs automatically.');
  else if (!soon.length) body = h('p', {}, icon('check'), ` All ${certs.length} certificate${certs.length === 1 ? ' is' : 's are'} valid for more than ${SOON_DAYS} days.`);
  else body = certTable(soon, { compact: true });
  const onDefault = fallback ? h('p', { class: 'warn-text', id: 'default-cert' }, icon('warn'),
    ` ${fallback.routers.length === 1 ? 'One TLS router is' : `${fallback.routers.length} TLS routers are`} served gangway's self-signed default certificate, which browsers will not trust: `,
    h('span', { class: 'links' }, fallback.routers.map((r) => objLink('routers', r)))) : null;
  return section(null, h('h2', {}, h('a', { href: '#/certificates' }, 'Certificates'), soon.length ? ` expiring within ${SOON_DAYS} days or failing` : ''), body, onDefault);
}

function features(f) {
  if (!f) return null;
  const item = (label, on, text) => h('li', { class: on ? 'on' : 'off' }, icon(on ? 'check' : 'cross'), h('span', {}, label), text ? h('small', {}, ` ${text}`) : null);
  return h('ul', { class: 'features' },
    item('Metrics', !!f.metrics, f.metrics ? `${f.metrics} at /metrics` : 'off'),
    item('Access log', !!f.accessLog, f.accessLog ? 'on' : 'off'),
    item('Tracing', !!f.tracing, f.tracing || 'off'));
}

export function overviewPage(initial) {
  let attentionPage = Number((initial && initial.get('attention')) || '1') || 1;
  const body = h('div');
  const el = h('div', {},
    h('div', { class: 'page-head' }, h('h1', {}, 'Overview'),
      h('p', { class: 'lead' }, 'What gangway routes right now. Problems come first.')),
    body);
  return {
    title: 'Overview',
    el,
    setQuery(q) {
      attentionPage = Number(q.get('attention') || '1') || 1;
    },
    async refresh(signal) {
      const [overview, eps, providers, certs, containers] = await Promise.all([
        get('/api/overview', signal),
        get('/api/entrypoints', signal).catch(() => []),
        optional('/api/providers', {}, signal),
        optional('/api/tls/certificates', [], signal),
        optional('/api/containers', [], signal),
      ]);
      const http = overview.http || {};
      const streamCounts = (k) => (overview[k.proto] || {})[k.key] || {};
      const probs = (await Promise.all([
        ...KIND_NAMES.map((k) => problems(k, http[k], signal)),
        ...STREAM_KINDS.map((k) => problems(k.kind, streamCounts(k), signal)),
      ])).flat();
      const d = {
        overview,
        eps: list(eps),
        providers: providers || {},
        certs: list(certs).map(normalizeCert),
        containers: list(containers),
        problems: probs,
      };
      render(body, { overview, eps, providers, certs, containers, probs, attentionPage }, () => [
        attention(d, attentionPage),
        h('div', { class: 'counts-grid' }, KIND_NAMES.map((k) => countCard(k, http[k] || {}))),
        h('div', { class: 'counts-grid streams', id: 'stream-counts' },
          STREAM_KINDS.map((k) => countCard(k.kind, streamCounts(k), k.title))),
        h('div', { class: 'two' },
          section('Entry points', entryPointsTable(d.eps)),
          section('Providers', providersTable(d.providers))),
        certificatesCard(d.certs),
        section('Features', features(overview.features),
          overview.generation !== undefined ? h('p', { class: 'muted small' }, `Configuration generation ${overview.generation}: each change a provider sends makes a new one.`) : null),
      ]);
    },
  };
}
