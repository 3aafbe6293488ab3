// One router, service or middleware: everything the API says about it,
// with the objects it uses and is used by as links.

import { get, optional, ApiError } from './api.js';
import { h, priority, list, render, statusBadge, objLink, rule, table, tag, empty, KINDS, listHref, qualify, section, kv, callout, icon, problemItems, toDate, shortDate, sleepBadge, timeAgo, wakeDuration } from './dom.js';
import { normalizeCert, certTable, sortCerts } from './certificates.js';

const INTERNAL = {
  'api@internal': 'The read-only API (/api/…).',
  'dashboard@internal': 'This dashboard (/dashboard/).',
  'ping@internal': 'The health check answering /ping.',
  'prometheus@internal': 'Prometheus metrics at /metrics.',
  'noop@internal': 'Answers nothing; for routers whose middlewares answer by themselves (redirects).',
};

/** A field list: label on the left, value on the right; rows with no value are left out. */
export function fields(rows) {
  return h('dl', { class: 'fields' }, rows.filter(([, v]) => v !== undefined && v !== null && v !== false)
    .flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export function head(kind, o) {
  return h('div', { class: 'page-head detail-head' },
    h('a', { href: listHref(kind), class: 'back' }, `← ${KINDS[kind].title}`),
    h('h1', {}, h('span', { class: 'obj-name' }, o.name)),
    h('div', { class: 'meta' }, statusBadge(o.status), o.sleep ? sleepBadge(o.sleep) : null, tag(KINDS[kind].one), o.type ? tag(o.type, 'accent') : null, o.provider ? tag(`provider: ${o.provider}`) : null));
}

/** Problems the API reads from the servers' health, not from the configuration. */
const HEALTH_KINDS = ['serversDown', 'serversErroring', 'noMemberUp', 'serviceDown', 'serviceFailing', 'membersFailing', 'membersDown', 'onFallback'];

/** The share of requests failing now, from the API's typed problems (100 when none is up). */
function failingPercent(o) {
  let worst = 0;
  for (const p of list(o.problems)) {
    if (p.kind === 'noMemberUp' || p.kind === 'serviceDown') worst = 100;
    else if (p.kind === 'serversDown' && p.down >= p.total) worst = 100;
    else if (p.percent) worst = Math.max(worst, p.percent);
  }
  return worst;
}

/**
 * For an object of a file that no longer reads: it comes from the file's
 * last good version, which stays in use; the file's current error on top.
 */
export function lastGood(o) {
  const kept = o.file && o.file.lastGood;
  if (!kept) return null;
  const since = toDate(kept.rejectedSince);
  const read = toDate(kept.readAt);
  return h('div', { id: 'last-good' }, callout('error',
    h('span', {}, 'From the last good version of ', h('code', {}, o.file.path), since ? ` (since ${shortDate(since)})` : ''),
    [h('span', { class: 'problem-item' }, h('strong', {}, 'The file is rejected now: '), kept.message),
      `That version${read ? `, read ${shortDate(read)},` : ''} stays in use until the file reads again; what this page shows is that version.`]));
}

export function errors(o) {
  const errs = problemItems(o);
  const kept = lastGood(o);
  if (!errs.length) return kept;
  if (kept) {
    // The errors of the version in use, not of the file as it is now.
    return h('div', { id: 'errors' }, kept, callout('info', 'Problems of the last good version', errs));
  }
  const disabled = o.status === 'disabled';
  // Servers down are not a configuration error: the object is in use and
  // comes back by itself when a server answers again.
  const health = list(o.problems).length > 0 && list(o.problems).every((p) => HEALTH_KINDS.includes(p.kind));
  const failing = health ? failingPercent(o) : 0;
  const title = health
    ? (failing >= 100 ? 'Not serving: every request fails'
      : failing > 0 ? `Failing: ${failing} % of requests get an error`
        : 'Serving, with servers down')
    : (disabled ? 'Not in use because of an error' : 'Working, with a warning');
  return h('div', { id: 'errors' }, callout(disabled ? 'error' : 'warning', title, errs));
}

/** The containers (or Swarm tasks) and labels behind an object, and for a service the servers each adds; or the store keys it is written in. */
export function provenance(o) {
  const sources = list(o.provenance);
  if (o.file) {
    return section('Where it comes from', h('div', { id: 'provenance' },
      h('p', {}, 'Written in ', h('code', { class: 'file-line' }, `${o.file.path}:${o.file.line}`))));
  }
  if (o.keys) {
    return section('Where it comes from', h('div', { id: 'provenance' },
      h('p', {}, `${o.keys.provider} keys:`),
      h('span', { class: 'chips' }, list(o.keys.keys).map((k) => h('code', { class: 'chip' }, k)))));
  }
  if (!sources.length) return null;
  const swarm = sources.some((p) => p.swarm);
  const servers = sources.some((p) => list(p.servers).length);
  const who = (p) => {
    if (!p.swarm) return h('span', { title: p.containerId }, p.containerName);
    const task = p.swarm.taskId
      ? h('span', { class: 'muted mono', title: `task ${p.swarm.taskId}` }, ` task ${p.swarm.taskId.slice(0, 12)}`)
      : h('span', { class: 'muted' }, ' (the service)');
    const node = p.swarm.nodeId ? h('span', { class: 'muted mono', title: `node ${p.swarm.nodeId}` }, ` on ${p.swarm.nodeId.slice(0, 12)}`) : null;
    return h('span', { title: `service ${p.swarm.serviceId}` }, p.swarm.serviceName, task, node);
  };
  const group = (p) => {
    if (p.swarm) return p.composeProject ? h('code', {}, p.composeProject) : h('span', { class: 'muted' }, '—');
    return p.composeService ? h('code', {}, `${p.composeProject || ''}/${p.composeService}`) : h('span', { class: 'muted' }, '—');
  };
  const columns = [{ title: swarm ? 'Service and task' : 'Container' }, { title: swarm ? 'Stack' : 'Compose service' }];
  if (servers) columns.push({ title: 'Servers' });
  columns.push({ title: 'Labels', cls: 'wide' });
  return section('Where it comes from', h('div', { id: 'provenance' }, table(
    columns,
    sources.map((p) => ({
      cells: [
        who(p),
        group(p),
        servers ? h('span', { class: 'chips' }, list(p.servers).map((u) => h('code', { class: 'chip' }, u))) : null,
        p.labels ? h('span', { class: 'chips' }, list(p.labels).map((l) => h('code', { class: 'chip' }, l))) : h('span', { class: 'muted' }, 'implicit'),
      ].filter((c) => c !== null),
    })))));
}

export function raw(o) {
  return h('details', { class: 'raw' }, h('summary', {}, 'Raw JSON from the API'), h('pre', {}, JSON.stringify(o, null, 2)));
}

/** What a server's requests got lately (gangway's `serverStates`), in words. */
const SERVER_STATES = {
  unknown: ['unknown', '', 'no request was sent to it yet'],
  up: ['UP', 'up', 'it answers'],
  erroring: ['ERRORING', 'down', 'it answers with errors of its own'],
  unreachable: ['UNREACHABLE', 'down', 'its requests get no answer'],
  down: ['DOWN', 'down', 'its health check fails'],
};

/** A server's badge from the model of serving: its state, and what its requests got lately. */
export function serverState(st, check) {
  const [word, cls, why] = SERVER_STATES[st.state] || [st.state, '', ''];
  const counts = st.answered + st.failed
    ? ` ${st.failed} of ${st.answered + st.failed} lately failed${st.status ? ` (${st.status})` : ''}`
    : '';
  const badge = h('span', { class: `health-badge ${cls}`, title: why, dataset: { state: st.state } }, h('span', { class: 'dot' }), word);
  const error = check && check.lastError ? ` ${check.lastError}` : '';
  return h('span', { class: 'health-detail' }, badge, h('small', { class: 'muted' }, `${counts}${error}`));
}

/** A server's UP/DOWN badge; `check` (gangway's `serverHealth`) adds why the last health check failed. */
export function health(status, check) {
  if (!status) return h('span', { class: 'muted', title: 'no health information' }, 'unknown');
  const s = String(status).toUpperCase();
  const when = check && check.lastCheck ? `last checked ${new Date(check.lastCheck * 1000).toLocaleString()}` : '';
  const badge = h('span', { class: `health-badge ${s === 'UP' ? 'up' : s === 'DOWN' ? 'down' : ''}`, title: when }, h('span', { class: 'dot' }), s);
  if (!check || !check.lastError) return badge;
  return h('span', { class: 'health-detail' }, badge, h('small', { class: 'muted' }, ` ${check.lastError}`));
}

function serversTable(s) {
  const servers = list(s.loadBalancer && s.loadBalancer.servers);
  if (!servers.length && s.sleep && ['asleep', 'waking'].includes(s.sleep.state)) {
    return h('p', { class: 'muted' }, 'No servers while its containers sleep: the next request starts them.');
  }
  if (!servers.length) return h('p', { class: 'muted' }, 'No servers: every request gets 503 Service Unavailable.');
  const st = s.serverStatus || {};
  const checks = s.serverHealth || {};
  const states = s.serverStates || {};
  const weights = servers.some((v) => v.weight !== undefined);
  const cols = [{ title: 'Server', cls: 'wide' }, { title: 'Health' }];
  if (weights) cols.push({ title: 'Weight', cls: 'num' });
  return table(cols, servers.map((v) => {
    const known = states[v.url];
    const cells = [h('code', {}, v.url), known ? serverState(known, checks[v.url]) : health(st[v.url], checks[v.url])];
    if (weights) cells.push(String(v.weight ?? 1));
    return { cells, data: { server: v.url } };
  }), 'servers');
}

export function flowNode(kindLabel, content, sub, cls = '') {
  return h('li', { class: `flow-node ${cls}` }, h('span', { class: 'flow-kind' }, kindLabel), h('span', { class: 'flow-name' }, content), sub ? h('span', { class: 'flow-sub' }, sub) : null);
}

/** The rule, with the column of its syntax error marked when it has one. */
function ruleWithError(o) {
  const bad = list(o.problems).find((p) => p.kind === 'ruleSyntax' && p.column);
  if (!bad) return rule(o.rule);
  return h('span', {}, rule(o.rule, bad.column),
    h('small', { class: 'muted rule-at-note' }, ` the error is at column ${bad.column}`));
}

function routerBody(o, mws, svc, certs) {
  const provider = o.provider;
  const using = list(o.using);
  const configured = list(o.entryPoints);
  const tls = o.tls;
  const out = [errors(o)];
  if (o.read) {
    // Left out by its provider: show what was read, assume nothing else.
    out.push(section('Values read', h('div', { id: 'read' },
      h('p', { class: 'muted' }, 'This router does not read, so it was left out and takes no request. These are the values read from its definition; nothing else is assumed.'),
      kv(o.read))));
    out.push(provenance(o), raw(o));
    return out;
  }

  out.push(section('Route', fields([
    ['Rule', ruleWithError(o)],
    ['Hosts', o.hosts.length || o.hostRegexps.length ? h('span', { class: 'chips', id: 'hosts' },
      o.hosts.map((x) => h('code', { class: 'chip' }, x)),
      o.hostRegexps.map((x) => h('code', { class: 'chip', title: 'HostRegexp' }, x))) : null],
    ['Paths', o.paths.length || o.pathPrefixes.length ? h('span', { class: 'chips', id: 'paths' },
      o.paths.map((x) => h('code', { class: 'chip', title: 'Path' }, x)),
      o.pathPrefixes.map((x) => h('code', { class: 'chip', title: 'PathPrefix' }, `${x}…`))) : null],
    ['Priority', h('span', {}, priority(o.priority), h('small', { class: 'muted' }, ' higher wins; by default the length of the rule'))],
    ['Entry points', h('span', { class: 'chips' }, (using.length ? using : configured).map((e) => tag(e)),
      !configured.length ? h('small', { class: 'muted' }, ' (none configured: every entry point but the internal one)') : null)],
    ['TLS', tls
      ? h('div', {}, h('span', { class: 'tls-on' }, icon('lock'), ' TLS only'),
        fields([['Resolver', tls.certResolver], ['Options', tls.options],
          ['Domains', list(tls.domains).length ? kv(tls.domains) : null]]))
      : h('span', { class: 'muted' }, 'no: plain HTTP')],
    ['Rule syntax', o.ruleSyntax],
  ])));

  // Entry points where a router tried before this one has the same rule:
  // no request reaches it there, so no path is drawn through them.
  const shadowing = list(o.problems).filter((p) => p.kind === 'shadowed');
  const lost = new Set(shadowing.flatMap((p) => list(p.entryPoints)));
  const reached = (using.length ? using : configured.length ? configured : ['all']).filter((e) => !lost.has(e));
  if (shadowing.length && !reached.length) {
    out.push(section('What a request goes through', h('div', { id: 'chain', dataset: { shadowed: 'true' } },
      callout('warning', 'No request reaches this router', shadowing.map((p) => h('span', {},
        'On ', h('span', { class: 'chips' }, list(p.entryPoints).map((e) => tag(e))), ', ',
        objLink('routers', p.winner), ' has the same rule',
        p.winnerPriority === p.priority ? ' and priority, and its name sorts first' : ' and a higher priority',
        ': it takes every request this router would match. Give one of them another rule or a higher priority.'))))));
  }
  // The way a request takes: entry point → middlewares in order → service → servers.
  const steps = [flowNode('entry point', h('span', { class: 'chips' }, reached.map((e) => tag(e))))];
  steps.push(flowNode('router', h('span', {}, o.name.replace(/@[^@]*$/, '')), statusBadge(o.status), o.status === 'disabled' ? 'flow-router flow-bad' : 'flow-router'));
  for (const m of mws) {
    steps.push(flowNode(m.missing ? 'middleware (missing)' : `middleware · ${m.type || '?'}`,
      objLink('middlewares', m.name), m.missing ? statusBadge('disabled') : statusBadge(m.status),
      m.missing ? 'flow-missing' : m.status === 'disabled' ? 'flow-bad' : ''));
  }
  const svcName = o.service ? qualify(o.service, provider) : null;
  steps.push(flowNode(svc ? `service · ${svc.type || 'built in'}` : 'service (missing)',
    svcName ? objLink('services', svcName) : '—',
    svc ? statusBadge(svc.status) : statusBadge('disabled'), svc ? 'flow-service' : 'flow-missing'));
  if (reached.length) {
    out.push(section('What a request goes through', h('ol', { class: 'flow', id: 'chain' },
      steps.flatMap((s, i) => (i ? [h('li', { class: 'flow-arrow', 'aria-hidden': 'true' }, icon('arrow')), s] : [s])))));
  }

  if (svc) {
    out.push(section(null, h('h2', {}, 'Service ', objLink('services', svc.name)),
      svc.loadBalancer ? serversTable(svc) : h('p', {}, INTERNAL[svc.name] || serviceSummaryText(svc))));
  }

  if (tls) {
    const hosts = new Set([...o.hosts, ...list(tls.domains).flatMap((d) => [d.main, ...list(d.sans)]).filter(Boolean)]);
    const mine = certs.filter((c) => c.routers.includes(o.name) || c.domains.some((d) => hosts.has(d.toLowerCase()) ||
      (d.startsWith('*.') && [...hosts].some((x) => x.endsWith(d.slice(1))))));
    // What each host is served today, as the API says (file, resolver or
    // the default certificate); then the certificates themselves.
    const served = list(o.certificates);
    const servedList = served.length ? h('ul', { class: 'problems', id: 'served-certs' }, served.map((c) =>
      h('li', { class: c.warning ? 'warn' : '' },
        c.warning ? icon('warn') : icon('lock'), ' ',
        h('strong', {}, c.host || 'any name'), ': ',
        c.source === 'file' ? `file ${c.certFile}` : c.source === 'acme' ? `certificate from resolver ${c.resolver}`
          : c.source === 'none' ? 'no certificate (handshakes are refused)' : 'the default certificate',
        c.warning ? h('div', { class: 'warn-text' }, c.warning) : null))) : null;
    // The default certificate is named in the list above; the table holds
    // the certificates that cover the router's hosts.
    const shown = mine.filter((c) => c.source !== 'default');
    out.push(section('Certificate', servedList, shown.length ? certTable(sortCerts(shown), { compact: true })
      : servedList ? null : h('p', { class: 'muted' }, 'No certificate is reported for this router yet.')));
  }
  out.push(provenance(o), raw(o));
  return out;
}

function serviceSummaryText(s) {
  if (s.weighted) return 'Weighted round robin over other services.';
  if (s.mirroring) return 'Sends to one service and copies requests to mirrors.';
  if (s.failover) return 'Sends to one service, and to a fallback while it is down.';
  return '';
}

/** A moment as "3 min ago (2026-03-01 14:02)". */
function moment(v) {
  const d = toDate(v);
  if (!d) return null;
  return h('span', {}, timeAgo(v), h('small', { class: 'muted' }, ` (${shortDate(d)})`));
}

/** What the sleeper says of a service whose containers sleep when idle (`gangway.sleep.*`). */
function sleepSection(sleep) {
  const wake = sleep.lastWake
    ? h('span', {}, moment(sleep.lastWake), sleep.lastWakeMs !== undefined ? ` · took ${wakeDuration(sleep.lastWakeMs)}` : '')
    : null;
  return section('Sleep', h('div', { id: 'sleep', dataset: { state: sleep.state } },
    sleep.error ? callout('error', 'The last wake-up failed', [sleep.error,
      'Requests get this error at once until the backoff ends; the first request after it starts the containers again.']) : null,
    fields([
      ['State', sleepBadge(sleep)],
      ['Asleep since', sleep.state === 'asleep' ? moment(sleep.asleepSince) : null],
      ['Last request', moment(sleep.lastRequest)],
      ['Last wake-up', wake],
      ['Sleeps after', sleep.idle ? `${sleep.idle} without a request` : h('span', { class: 'muted' }, 'never by itself (woken only)')],
      ['While asleep', sleep.mode === 'page'
        ? 'a browser gets a page that reloads until the service answers; other clients wait for it'
        : 'requests wait until the service answers'],
      ['Sleeps and wakes as', sleep.unit],
      ['Containers', h('span', { class: 'chips' }, list(sleep.containers).map((c) => h('code', { class: 'chip' }, c)))],
    ])));
}

function serviceBody(o) {
  const provider = o.provider;
  const out = [errors(o)];
  if (o.sleep) out.push(sleepSection(o.sleep));
  if (INTERNAL[o.name]) out.push(section('Built-in service', h('p', {}, INTERNAL[o.name])));
  if (o.loadBalancer) {
    const { servers, ...settings } = o.loadBalancer;
    out.push(section('Servers', serversTable(o)));
    if (Object.keys(settings).length) out.push(section('Load balancer settings', kv(settings)));
  }
  if (o.weighted) {
    const kids = list(o.weighted.services);
    const total = kids.reduce((n, c) => n + Number(c.weight ?? 1), 0) || 1;
    const { services, ...rest } = o.weighted;
    out.push(section('Weighted services', table([{ title: 'Service', cls: 'wide' }, { title: 'Weight', cls: 'num' }, { title: 'Share', cls: 'num' }],
      kids.map((c) => ({ cells: [objLink('services', qualify(c.name, provider)), String(c.weight ?? 1), `${Math.round((100 * Number(c.weight ?? 1)) / total)}%`] })))));
    if (Object.keys(rest).length) out.push(section('Settings', kv(rest)));
  }
  if (o.mirroring) {
    const { service, mirrors, ...rest } = o.mirroring;
    out.push(section('Mirroring', fields([['Main service', objLink('services', qualify(service, provider))]]),
      table([{ title: 'Mirror', cls: 'wide' }, { title: 'Percent', cls: 'num' }],
        list(mirrors).map((m) => ({ cells: [objLink('services', qualify(m.name, provider)), `${m.percent ?? 0}%`] })))));
    if (Object.keys(rest).length) out.push(section('Settings', kv(rest)));
  }
  if (o.failover) {
    const { service, fallback, ...rest } = o.failover;
    out.push(section('Failover', fields([
      ['Service', service ? objLink('services', qualify(service, provider)) : null],
      ['Fallback', fallback ? objLink('services', qualify(fallback, provider)) : null],
    ]), Object.keys(rest).length ? kv(rest) : null));
  }
  out.push(section('Used by', usedBy(o)), provenance(o), raw(o));
  return out;
}

/** The routers (of `routers`, a kind) and chains that use an object. */
export function usedBy(o, routers = 'routers') {
  const names = list(o.usedBy);
  const chains = list(o.inChains);
  if (!names.length && !chains.length) return h('p', { class: 'muted' }, 'No router uses it.');
  return h('ul', { class: 'used-by' },
    names.map((n) => h('li', {}, objLink(routers, n))),
    chains.map((n) => h('li', {}, objLink('middlewares', n), h('small', { class: 'muted' }, ' (chain)'))));
}

/** A middleware's options; a chain's members are links to their pages. */
function options(o) {
  const key = o.optionsKey;
  if (!key) return h('p', { class: 'muted' }, 'none');
  if (key === 'chain' && o.chain) {
    const { middlewares, ...rest } = o.chain;
    const members = list(middlewares);
    return h('div', {},
      members.length
        ? h('ol', { class: 'chain-members' }, members.map((m) => h('li', {}, objLink('middlewares', qualify(m, o.provider)))))
        : h('p', { class: 'muted' }, 'no members'),
      Object.keys(rest).length ? kv(rest) : null);
  }
  return kv(o[key]);
}

function middlewareBody(o) {
  const key = o.optionsKey;
  return [
    errors(o),
    section(key ? `Options (${key})` : 'Options', h('div', { id: 'options' }, options(o))),
    section('Used by', usedBy(o)),
    provenance(o),
    raw(o),
  ];
}

/** One object of `kind` from the API, or `missing` when it does not exist (404). */
export function fetchOne(kind, name, signal, missing) {
  return get(`${KINDS[kind].api}/${encodeURIComponent(name)}`, signal).catch((e) => {
    if (missing !== undefined && e instanceof ApiError && e.status === 404) return missing;
    throw e;
  });
}

/**
 * The page of one object of `kind`: `show(o, signal)` reads what else the
 * page needs and renders it into `body`; a name the API does not know
 * shows that it is gone, and the page comes back with the object.
 */
export function objectPage(kind, name, show) {
  const meta = KINDS[kind];
  const top = h('div', {}, h('div', { class: 'page-head detail-head' },
    h('a', { href: listHref(kind), class: 'back' }, `← ${meta.title}`), h('h1', {}, name)));
  const body = h('div', { class: 'detail' });
  const el = h('div', {}, top, body);
  return {
    title: name,
    el,
    async refresh(signal) {
      const o = await fetchOne(kind, name, signal, null);
      if (!o) {
        top.hidden = false;
        render(body, { gone: name }, () => empty(`No ${meta.one} named ${name}`,
          'It is not in the configuration gangway runs now. If it comes back, this page shows it again.',
          h('a', { href: listHref(kind) }, `All ${meta.title.toLowerCase()}`)));
        return;
      }
      await show(body, o, signal);
      top.hidden = true;
    },
  };
}

export function detailPage(kind, name) {
  return objectPage(kind, name, async (body, o, signal) => {
    if (kind === 'routers') {
      const provider = o.provider;
      const [mws, svc, certs] = await Promise.all([
        Promise.all(list(o.middlewares).map((m) => qualify(m, provider)).map((m) =>
          fetchOne('middlewares', m, signal, { name: m, missing: true }))),
        o.service ? fetchOne('services', qualify(o.service, provider), signal, null) : null,
        o.tls ? optional('/api/tls/certificates', [], signal) : [],
      ]);
      const certList = list(certs).map(normalizeCert);
      render(body, { o, mws, svc, certs }, () => [head(kind, o), ...routerBody(o, mws, svc, certList)]);
    } else if (kind === 'services') {
      render(body, o, () => [head(kind, o), ...serviceBody(o)]);
    } else {
      render(body, o, () => [head(kind, o), ...middlewareBody(o)]);
    }
  });
}
