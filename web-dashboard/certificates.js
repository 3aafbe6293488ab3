// Certificates: what each resolver (or the file provider) holds, and when
// it expires.

import { optional } from './api.js';
import { h, list, toDate, timeAgo, shortDate, relative, table, render, empty, objLink, tag, section, icon } from './dom.js';

/** Days before expiry from which a certificate is flagged. */
export const SOON_DAYS = 30;
const DAY = 86400 * 1000;

/**
 * One certificate from /api/tls/certificates, with its dates as Date objects.
 * `source` is `acme` (with the resolver's order state), `file` (with
 * `status` `valid` or `expired`) or `default`: the certificate served for a
 * name no other covers (gangway's self-signed one unless configured).
 */
export function normalizeCert(c) {
  return {
    source: c.source,
    domains: list(c.domains),
    resolver: c.resolver || '',
    challenge: c.challenge || '',
    pendingChallenge: c.pendingChallenge || null,
    status: c.status,
    issuer: c.issuer,
    notAfter: toDate(c.notAfter),
    nextAttempt: c.nextAttempt,
    lastError: c.lastError,
    storageError: c.storageError,
    leaseHolder: c.leaseHolder || '',
    failures: c.failures,
    profile: c.profile || '',
    renewalReason: c.renewalReason || '',
    renewalWindow: c.renewalWindow || null,
    fallback: list(c.fallback),
    issuedThrough: c.issuedThrough || '',
    routers: list(c.routers),
    tcpRouters: list(c.tcpRouters),
    selfSigned: Boolean(c.selfSigned),
    warning: c.warning || '',
    raw: c,
  };
}

/** How a certificate's expiry reads, and how worrying it is: ok, soon, expired. */
export function expiry(notAfter, now = Date.now()) {
  if (!notAfter) return { level: 'none', text: '—' };
  const left = notAfter.getTime() - now;
  if (left <= 0) return { level: 'expired', text: `expired ${relative(notAfter, now)}` };
  return { level: left < SOON_DAYS * DAY ? 'soon' : 'ok', text: `expires ${relative(notAfter, now)}` };
}

/** The expiry cell: date plus "in N days", coloured by urgency. */
export function expiryCell(notAfter) {
  const e = expiry(notAfter);
  if (e.level === 'none') return h('span', { class: 'muted' }, 'not issued yet');
  return h('span', { class: `expiry expiry-${e.level}` },
    h('strong', {}, shortDate(notAfter)), h('br'), h('small', {}, e.text));
}

/** The status of one certificate as a badge. */
export function certBadge(status) {
  const cls = { valid: 'enabled', renewing: 'warning', pending: 'pending', error: 'disabled', expired: 'disabled' }[status] || 'pending';
  return h('span', { class: `badge status-${cls}` }, icon(cls === 'enabled' ? 'check' : cls === 'disabled' ? 'cross' : 'info'), status);
}

/** Whether a certificate needs a look: an error, or expiry within SOON_DAYS. */
export function needsLook(c) {
  const level = expiry(c.notAfter).level;
  return c.status === 'error' || Boolean(c.storageError) || level === 'soon' || level === 'expired';
}

/**
 * Why the next renewal happens when it does: at a point the CA chose in its
 * renewal window (ARI), or by the certificate's lifetime where the CA gives
 * no window.
 */
export function renewalWhy(c) {
  const w = c.renewalWindow;
  if (c.renewalReason === 'ari' && w) {
    return h('small', { class: 'muted renewal-why' }, 'in the CA\'s renewal window (ARI) ',
      timeAgo(w.start), ' – ', timeAgo(w.end),
      w.explanationUrl ? h('a', { href: w.explanationUrl, rel: 'noopener' }, ' why') : null);
  }
  if (c.renewalReason === 'lifetime') {
    return h('small', { class: 'muted renewal-why' }, 'by its lifetime (the CA gives no renewal window)');
  }
  return null;
}

/** The resolver cell: its name, challenge, profile, and the fallback resolvers. */
function resolverCell(c) {
  if (!c.resolver) return h('span', { class: 'muted' }, c.source === 'default' ? 'default' : 'file');
  return h('span', {}, tag(c.resolver),
    c.challenge ? h('div', { class: 'muted challenge' }, h('small', {}, c.challenge)) : null,
    c.profile ? h('div', { class: 'muted profile' }, h('small', {}, `profile ${c.profile}`)) : null,
    c.fallback.length ? h('div', { class: 'muted fallback' }, h('small', {}, `then ${c.fallback.join(', ')}`)) : null,
    c.issuedThrough ? h('div', { class: 'warn-text issued-through' }, h('small', {}, `issued through ${c.issuedThrough}`)) : null);
}

function domainsCell(c) {
  if (!c.domains.length) return h('span', { class: 'muted' }, '—');
  const [main, ...sans] = c.domains;
  return h('div', { class: 'domains' }, h('strong', {}, main),
    sans.length ? h('div', { class: 'chips' }, sans.map((d) => h('code', { class: 'chip' }, d))) : null);
}

/** The certificate table (also used by the overview and router pages). */
export function certTable(certs, { compact = false } = {}) {
  const cols = [
    { title: 'Status' },
    { title: 'Domains' },
    { title: 'Resolver' },
    { title: 'Expires' },
  ];
  if (!compact) cols.push({ title: 'Issuer' }, { title: 'Next attempt' }, { title: 'Routers' });
  cols.push({ title: 'Last error', cls: 'wide' });
  const rows = certs.map((c) => {
    const cells = [
      c.source === 'default'
        ? h('span', { class: `badge status-${c.selfSigned ? 'warning' : 'enabled'}` }, icon(c.selfSigned ? 'warn' : 'check'), c.selfSigned ? 'self-signed' : 'valid')
        : certBadge(c.status),
      domainsCell(c),
      resolverCell(c),
      expiryCell(c.notAfter),
    ];
    if (!compact) {
      cells.push(
        c.issuer ? h('span', {}, c.issuer) : h('span', { class: 'muted' }, '—'),
        c.nextAttempt
          ? h('span', { class: 'next-attempt' }, timeAgo(c.nextAttempt), h('br'), renewalWhy(c))
          : h('span', { class: 'muted' }, '—'),
        c.routers.length || c.tcpRouters.length
          ? h('div', { class: 'links' },
            c.routers.map((r) => objLink('routers', r)),
            c.tcpRouters.map((r) => h('span', {}, h('small', { class: 'muted' }, 'TCP '), objLink('tcp/routers', r))))
          : h('span', { class: 'muted' }, '—'),
      );
    }
    const pending = c.pendingChallenge;
    cells.push(c.warning
      ? h('span', { class: 'warn-text' }, c.warning)
      : pending
      ? h('span', { class: 'pending-challenge' }, `${pending.type} ${pending.step}: `, h('code', {}, pending.fqdn),
        c.lastError ? h('div', { class: 'error-text' }, `last failure: ${c.lastError}`) : null)
      : c.lastError
      ? h('span', { class: 'error-text' }, c.lastError, c.failures ? h('small', {}, ` (${c.failures} failed in a row)`) : null)
      : c.leaseHolder
      ? h('span', { class: 'pending-challenge' }, 'being ordered by another instance: ', h('code', {}, c.leaseHolder))
      : c.storageError
        ? h('span', { class: 'error-text' }, `not stored (served from memory): ${c.storageError}`)
        : h('span', { class: 'muted' }, '—'));
    return { cells, cls: c.status === 'error' ? 'row-error' : '' };
  });
  return table(cols, rows, 'certs');
}

/**
 * One resolver from /api/certificateresolvers: where it keeps its account
 * and certificates, and, for a store shared by several instances, whether
 * the store answers.
 */
export function normalizeResolver(r) {
  const storage = r.storage || {};
  return {
    name: r.name,
    ca: r.caServer || '',
    challenge: r.challenge || '',
    kind: storage.kind || '',
    location: storage.location || '',
    encrypted: storage.encrypted,
    reachable: storage.reachable,
    lastError: storage.lastError || '',
    instance: storage.instance || '',
    warnings: list(r.warnings),
    unanswered: list(r.unansweredValidations),
  };
}

/** The resolvers table: storage and, for shared stores, their health. */
export function resolverTable(resolvers) {
  const cols = [{ title: 'Resolver' }, { title: 'CA' }, { title: 'Storage' }, { title: 'Store' }, { title: 'Warnings', cls: 'wide' }];
  const rows = resolvers.map((r) => {
    const shared = r.kind && r.kind !== 'file';
    const store = !shared
      ? h('span', { class: 'muted' }, 'this instance only')
      : r.reachable === false
        ? h('span', { class: 'error-text' }, icon('cross'), ` unreachable: ${r.lastError}`)
        : r.reachable
          ? h('span', { class: 'badge status-enabled' }, icon('check'), 'reachable')
          : h('span', { class: 'muted' }, 'not asked yet');
    const notes = [...r.warnings, ...r.unanswered.map((u) => `a ${u.challenge} validation for ${u.name} found no answer: another ACME client orders for it`)];
    return {
      cells: [
        h('span', {}, tag(r.name), r.challenge ? h('div', { class: 'muted challenge' }, h('small', {}, r.challenge)) : null),
        h('code', {}, r.ca),
        h('span', {}, h('strong', {}, r.kind || '—'), h('div', {}, h('small', { class: 'muted' }, r.location)),
          shared ? h('div', {}, h('small', {}, r.encrypted ? 'private keys encrypted' : 'private keys in clear')) : null,
          r.instance ? h('div', {}, h('small', { class: 'muted' }, `this instance: ${r.instance}`)) : null),
        store,
        notes.length ? h('div', {}, notes.map((n) => h('div', { class: 'warn-text' }, n))) : h('span', { class: 'muted' }, '—'),
      ],
      cls: r.reachable === false ? 'row-error' : '',
    };
  });
  return table(cols, rows, 'resolvers');
}

/** Errors first, then soonest expiry. */
export function sortCerts(certs) {
  const rank = (c) => (c.status === 'error' ? 0 : 1);
  const t = (c) => (c.notAfter ? c.notAfter.getTime() : Infinity);
  return [...certs].sort((a, b) => rank(a) - rank(b) || t(a) - t(b));
}

export function certificatesPage() {
  const summary = h('div', { class: 'summary' });
  const body = h('div');
  const resolverBox = h('div', { id: 'resolvers' });
  const el = h('div', {},
    h('div', { class: 'page-head' },
      h('h1', {}, 'Certificates'),
      h('p', { class: 'lead' }, 'Certificates gangway serves: who issued them, when they expire, and why an order failed.')),
    summary, body, resolverBox);
  return {
    title: 'Certificates',
    el,
    async refresh(signal) {
      const [raw, resolvers] = await Promise.all([
        optional('/api/tls/certificates', null, signal),
        optional('/api/certificateresolvers', null, signal),
      ]);
      render(resolverBox, resolvers, () => (resolvers && list(resolvers).length
        ? section('Resolvers', resolverTable(list(resolvers).map(normalizeResolver)))
        : h('div')));
      render(body, raw, () => {
        if (raw === null) return empty('No certificate information', 'This gangway does not report certificates.');
        const certs = sortCerts(list(raw).map(normalizeCert));
        const soon = certs.filter(needsLook);
        summary.replaceChildren(...(certs.length ? [
          h('span', { class: 'pill' }, `${certs.length} certificate${certs.length === 1 ? '' : 's'}`),
          soon.length ? h('span', { class: 'pill warn' }, `${soon.length} need a look`) : h('span', { class: 'pill ok' }, `none expires within ${SOON_DAYS} days`),
        ] : []));
        if (!certs.length) {
          return empty('No certificates',
            'Certificates appear here when a router asks for one with tls.certResolver (obtained from an ACME server such as Let\u2019s Encrypt) or when the file provider lists tls.certificates.',
            'Routers without TLS are served over plain HTTP.');
        }
        return section(null, certTable(certs));
      });
    },
  };
}
