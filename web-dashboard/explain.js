// "Explain a request": which router would take it, through which
// middlewares to which service, and why each router that could have did
// not; routers for other hosts are counted, not listed. The
// form only reads /api/explain; the answer refreshes with the configuration.

import { get, query } from './api.js';
import { h, priority, list, render, objLink, rule, table, tag, empty, qualify, providerOf, section, callout, icon, statusBadge } from './dom.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

function field(label, input, hint) {
  return h('label', { class: 'field' }, h('span', { class: 'field-label' }, label), input, hint ? h('small', { class: 'muted' }, hint) : null);
}

function verdict(c) {
  if (c.matched) return h('span', { class: 'verdict win' }, icon('check'), 'takes the request');
  const reason = String(c.reason || '');
  if (/higher priority|equal priority/.test(reason)) return h('span', { class: 'verdict shadowed' }, icon('warn'), reason);
  return h('span', { class: 'verdict miss' }, icon('cross'), reason || 'does not match');
}

function winnerBlock(w) {
  const provider = providerOf(w.router);
  const steps = [
    h('li', { class: 'flow-node flow-router' }, h('span', { class: 'flow-kind' }, 'router'), objLink('routers', w.router)),
    ...list(w.middlewares).map((m) => h('li', { class: 'flow-node' }, h('span', { class: 'flow-kind' }, 'middleware'), objLink('middlewares', qualify(m, provider)))),
    h('li', { class: 'flow-node flow-service' }, h('span', { class: 'flow-kind' }, 'service'),
      w.service ? objLink('services', qualify(w.service, provider)) : '—',
      list(w.servers).length ? h('span', { class: 'flow-sub' }, list(w.servers).map((s) => h('code', { class: 'chip' }, s))) : null),
  ];
  const a = w.answer || { outcome: 'served' };
  const outcome = a.outcome === 'fails'
    ? h('p', { class: 'answer error-text', dataset: { outcome: a.outcome } }, icon('cross'),
      ` Every such request gets ${a.status} now: ${a.reason}.`)
    : a.outcome === 'sometimes'
      ? h('p', { class: 'answer warn-text', dataset: { outcome: a.outcome } }, icon('warn'),
        ` ${a.failingPercent} % of such requests get ${a.status} now: ${a.reason}.`)
      : a.outcome === 'unknown'
        ? h('p', { class: 'answer muted', dataset: { outcome: a.outcome } }, ` Not known yet: ${a.reason}.`)
        : null;
  const mark = a.outcome === 'fails' ? icon('cross') : a.outcome === 'sometimes' ? icon('warn') : icon('check');
  return h('div', { class: `winner answer-${a.outcome}`, dataset: { winner: w.router, outcome: a.outcome } },
    h('div', { class: 'winner-title' }, mark, 'Taken by ', objLink('routers', w.router)),
    outcome,
    h('ol', { class: 'flow' }, steps.flatMap((s, i) => (i ? [h('li', { class: 'flow-arrow', 'aria-hidden': 'true' }, icon('arrow')), s] : [s]))));
}

/** What the API's `hint` says would get the request routed, as a sentence. */
function hintText(hint) {
  if (!hint) return null;
  if (hint.kind === 'needsTls') return h('span', { dataset: { hint: hint.kind } }, objLink('routers', hint.router), ' takes it over TLS (https) only: tick "Over TLS" to follow it.');
  if (hint.kind === 'needsPlainHttp') return h('span', { dataset: { hint: hint.kind } }, objLink('routers', hint.router), ' takes it over plain HTTP only: untick "Over TLS" to follow it.');
  if (hint.kind === 'otherEntryPoint') return h('span', { dataset: { hint: hint.kind } }, 'On entry point ', tag(hint.entryPoint), ', ', objLink('routers', hint.router), ' takes it.');
  return null;
}

function noWinner(ep, candidates) {
  const hint = ep.hint || {};
  if (hint.kind === 'needsTls') return callout('warning', 'This request needs TLS here', [hintText(hint)]);
  if (hint.kind === 'needsPlainHttp') return callout('warning', 'This request needs plain HTTP here', [hintText(hint)]);
  return callout('error', 'No router takes this request here', [
    candidates.length ? 'gangway answers 404 Not Found on this entry point. The reasons each router said no are below.'
      : 'No enabled router listens on this entry point.',
    hintText(ep.hint)].filter(Boolean));
}

function candidateTable(candidates, cls) {
  return table([
    { title: '#', cls: 'num' }, { title: 'Router' }, { title: 'Priority', cls: 'num' }, { title: 'Rule' }, { title: 'Verdict', cls: 'wide' },
  ], candidates.map((c, i) => ({
    cells: [String(i + 1), objLink('routers', c.router), priority(c.priority), rule(c.rule), verdict(c)],
    cls: c.matched ? 'row-win' : '',
    data: { candidate: c.router },
  })), cls);
}

/** What the answer counts instead of listing: routers tried past the list, and routers for other hosts. */
function untold(ep) {
  const more = ep.notListed || 0;
  const others = ep.otherHosts || 0;
  const parts = [];
  if (more) parts.push(`${more} more router${more === 1 ? '' : 's'} for this host or any host also said no and ${more === 1 ? 'is' : 'are'} not listed`);
  if (others) parts.push(`${others} router${others === 1 ? ' names' : 's name'} other hosts only and ${others === 1 ? 'was' : 'were'} not tried`);
  return parts.length ? h('p', { class: 'muted small untold', dataset: { notListed: String(more), otherHosts: String(others) } }, `${parts.join('; ')}.`) : null;
}

function entryPointResult(ep) {
  const candidates = list(ep.candidates);
  const near = list(ep.nearHosts);
  return h('section', { class: 'card ep-result', dataset: { entrypoint: ep.entryPoint } },
    h('h2', {}, 'Entry point ', tag(ep.entryPoint)),
    ep.winner ? winnerBlock(ep.winner) : noWinner(ep, candidates),
    candidates.length ? candidateTable(candidates, 'candidates') : null,
    near.length ? h('div', { class: 'near-hosts' }, h('h3', {}, 'Routers for a host close to the one asked'), candidateTable(near, 'near')) : null,
    untold(ep));
}

function result(d) {
  const eps = list(d.entryPoints);
  // The internal entry point (API, dashboard) last: people ask about their own.
  const internal = (ep) => (ep.entryPoint === 'gangway' ? 1 : 0);
  const rank = (ep) => (list(ep.candidates).length || list(ep.nearHosts).length || ep.otherHosts ? 0 : 2);
  const sorted = [...eps].sort((a, b) => rank(a) - rank(b) || internal(a) - internal(b) || (a.winner ? 0 : 1) - (b.winner ? 0 : 1));
  const winners = sorted.filter((e) => e.winner);
  const r = d.request || {};
  const target = `${r.method || 'GET'} ${r.tls ? 'https' : 'http'}://${r.host || '(no host)'}${r.path || '/'}`;
  // Would another kind of connection be routed? (The API never answers for
  // the internal entry point unless it is asked about by name.)
  const tlsHints = sorted.filter((e) => !e.winner && e.hint && e.hint.kind !== 'otherEntryPoint');
  let none;
  if (tlsHints.length) {
    none = h('div', {}, h('p', { class: 'warn-text' }, icon('warn'), r.tls ? ' Not routed over TLS.' : ' Not routed over plain HTTP.'),
      h('ul', { class: 'winners' }, tlsHints.map((e) => h('li', {}, tag(e.entryPoint), ' ', hintText(e.hint)))));
  } else {
    none = h('p', { class: 'error-text' }, 'Not routed: no router takes this request on any entry point, so gangway answers 404 Not Found.');
  }
  const out = [
    h('div', { class: 'explain-summary card', id: 'explain-summary', dataset: { routed: winners.length ? 'true' : 'false' } },
      h('code', { class: 'request-line' }, target),
      winners.length
        ? h('ul', { class: 'winners' }, winners.map((e) => {
          const a = e.winner.answer || { outcome: 'served' };
          const mark = a.outcome === 'fails' ? icon('cross') : a.outcome === 'sometimes' ? icon('warn') : icon('check');
          const gets = a.outcome === 'fails' ? h('span', { class: 'error-text' }, ` → ${a.status} (${a.reason})`)
            : a.outcome === 'sometimes' ? h('span', { class: 'warn-text' }, ` → ${a.failingPercent} % get ${a.status} (${a.reason})`) : null;
          return h('li', { dataset: { outcome: a.outcome } }, mark, tag(e.entryPoint), icon('arrow'), objLink('routers', e.winner.router),
            e.winner.service ? [h('span', { class: 'muted' }, ' then service '), objLink('services', e.winner.service)] : null, gets);
        }))
        : none),
  ];
  const busy = sorted.filter((e) => rank(e) < 2);
  const idle = sorted.filter((e) => rank(e) === 2);
  out.push(...busy.map(entryPointResult));
  if (idle.length) out.push(h('p', { class: 'muted small' }, `No enabled router on ${idle.map((e) => e.entryPoint).join(', ')}.`));
  const disabled = list(d.disabledRouters);
  const moreDisabled = d.disabledNotListed || 0;
  if (disabled.length) {
    out.push(section(`Disabled routers (${disabled.length + moreDisabled}), not considered`,
      h('ul', { class: 'problems' }, disabled.map((x) => h('li', { class: 'problem disabled' }, statusBadge('disabled'),
        objLink('routers', x.router), h('div', { class: 'problem-text' }, list(x.errors).join(' · '))))),
      moreDisabled ? h('p', { class: 'muted small', id: 'disabled-more' }, `Those naming this host first; ${moreDisabled} more are `,
        h('a', { href: '#/routers?status=disabled' }, 'in the routers list'), '.') : null));
  }
  return out;
}

export function explainPage(initial) {
  let q = initial;
  const method = h('select', { name: 'method', id: 'x-method' }, METHODS.map((m) => h('option', { value: m }, m)));
  const host = h('input', { name: 'host', id: 'x-host', placeholder: 'app.example.com', autocomplete: 'off', spellcheck: 'false' });
  const path = h('input', { name: 'path', id: 'x-path', placeholder: '/', autocomplete: 'off', spellcheck: 'false' });
  const headers = h('textarea', { name: 'header', id: 'x-headers', rows: 3, placeholder: 'X-Api-Version: 2\nCookie: lang=en', spellcheck: 'false' });
  const clientIp = h('input', { name: 'clientIp', id: 'x-client', placeholder: '127.0.0.1', autocomplete: 'off' });
  const entryPoint = h('select', { name: 'entryPoint', id: 'x-entrypoint' }, h('option', { value: '' }, 'All entry points'));
  const tls = h('input', { type: 'checkbox', name: 'tls', id: 'x-tls' });
  const submit = h('button', { type: 'submit', class: 'primary', 'data-safe': 'explain' }, 'Explain');

  const fill = () => {
    method.value = (q.get('method') || 'GET').toUpperCase();
    host.value = q.get('host') || '';
    path.value = q.get('path') || '';
    headers.value = q.getAll('header').join('\n');
    clientIp.value = q.get('clientIp') || '';
    entryPoint.value = q.get('entryPoint') || '';
    tls.checked = q.get('tls') === 'true';
  };

  // GET only: the form is read by script and turned into an address of this page.
  const form = h('form', { method: 'get', class: 'explain-form card', id: 'explain-form', autocomplete: 'off' },
    h('div', { class: 'form-row' },
      field('Method', method),
      field('Host', host, 'The Host header (or TLS server name).'),
      field('Path', path, 'With a query if you like: /search?q=x')),
    h('div', { class: 'form-row' },
      field('Headers', headers, 'One per line: Name: value'),
      h('div', { class: 'form-col' },
        field('Client IP', clientIp, 'For ClientIP rules.'),
        field('Entry point', entryPoint),
        h('label', { class: 'check' }, tls, ' Over TLS (https)'))),
    h('div', { class: 'form-actions' }, submit,
      h('small', { class: 'muted' }, 'Only asks gangway how it would route this request; nothing is sent to any service.')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const params = {
      method: method.value,
      host: host.value.trim(),
      path: path.value.trim() || '/',
      header: headers.value.split('\n').map((l) => l.trim()).filter(Boolean),
      clientIp: clientIp.value.trim(),
      entryPoint: entryPoint.value,
      tls: tls.checked ? 'true' : '',
    };
    location.hash = `#/explain${query(params)}`;
  });

  const out = h('div', { class: 'explain-result', id: 'explain-result' });
  const el = h('div', {},
    h('div', { class: 'page-head' }, h('h1', {}, 'Explain a request'),
      h('p', { class: 'lead' }, 'Which router would take a request, through which middlewares to which service, and why each router that could have taken it said no.')),
    form, out);
  fill();

  return {
    title: 'Explain',
    el,
    setQuery(next) {
      q = next;
      fill();
    },
    async refresh(signal) {
      const eps = await get('/api/entrypoints', signal).catch(() => []);
      const names = list(eps).map((e) => e.name).filter(Boolean);
      if (render(entryPoint, names, () => [h('option', { value: '' }, 'All entry points'), ...names.map((n) => h('option', { value: n }, n))])) {
        entryPoint.value = q.get('entryPoint') || '';
      }
      if (!q.get('host') && !q.get('path')) {
        render(out, 'intro', () => empty('Ask about a request',
          'Fill in at least a host or a path and press Explain. The answer shows the router that wins, its middlewares in order and its service, then each router that could have taken it with the reason it did not match.'));
        return;
      }
      const params = {
        method: q.get('method'), host: q.get('host'), path: q.get('path'), header: q.getAll('header'),
        clientIp: q.get('clientIp'), entryPoint: q.get('entryPoint'), tls: q.get('tls'),
      };
      let d;
      try {
        d = await get(`/api/explain${query(params)}`, signal);
      } catch (e) {
        if (e.status === 400) {
          render(out, { bad: e.message }, () => callout('error', 'gangway cannot read this request', [e.message]));
          return;
        }
        throw e;
      }
      render(out, d, () => result(d));
    },
  };
}
