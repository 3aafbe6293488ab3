// "Why is my container not routed?": every container the Docker provider
// saw, the ones without a route first, each with its reasons.

import { get, optional } from './api.js';
import { h, list, render, empty, objLink, tag, section, table, icon, kv, callout } from './dom.js';

/** One container from /api/containers, in one shape whatever the API spelled. */
export function normalizeContainer(c) {
  const id = String(c.id ?? c.Id ?? '');
  const rawName = c.name ?? list(c.names ?? c.Names)[0] ?? id.slice(0, 12);
  const reasons = list(c.reasons ?? c.reason ?? c.notRouted ?? c.why ?? c.errors);
  const routers = list(c.routers);
  const routed = typeof c.routed === 'boolean' ? c.routed : reasons.length === 0 && routers.length > 0;
  return {
    id,
    name: String(rawName || '(unnamed)').replace(/^\//, ''),
    image: c.image ?? c.Image,
    state: c.state ?? c.status ?? c.State,
    health: c.health,
    routed,
    reasons,
    routers,
    services: list(c.services),
    labels: c.labels ?? c.Labels,
    provenance: c.provenance,
    raw: c,
  };
}

/** A reason is a sentence, or an object with a message and the label it is about. */
function reasonItem(r) {
  if (typeof r !== 'object' || r === null) return h('li', {}, icon('warn'), h('span', {}, String(r)));
  const text = r.message ?? r.reason ?? r.text ?? r.error ?? JSON.stringify(r);
  const key = r.label ?? r.key;
  return h('li', {}, icon('warn'), h('span', {}, String(text), key ? [' ', h('code', { class: 'chip' }, key)] : null));
}

function meta(c) {
  return h('div', { class: 'meta' },
    c.state ? tag(String(c.state), `state-${String(c.state).toLowerCase()}`) : null,
    c.health ? tag(`health: ${c.health}`) : null,
    c.image ? h('code', { class: 'chip' }, c.image) : null,
    c.id ? h('span', { class: 'muted mono', title: c.id }, c.id.slice(0, 12)) : null);
}

function notRoutedCard(c) {
  const labels = c.labels && typeof c.labels === 'object' ? Object.entries(c.labels) : [];
  return h('article', { class: 'card container-card', dataset: { container: c.name } },
    h('div', { class: 'card-head' }, h('h3', {}, c.name), meta(c)),
    c.reasons.length
      ? h('ul', { class: 'reasons' }, c.reasons.map(reasonItem))
      : h('p', { class: 'muted' }, 'Not routed; the provider gave no reason.'),
    labels.length ? h('details', {}, h('summary', {}, `Labels (${labels.length})`),
      h('dl', { class: 'kv labels' }, labels.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, h('code', {}, String(v)))]))) : null,
    c.provenance ? h('details', {}, h('summary', {}, 'Provenance'), kv(c.provenance)) : null);
}

function routedTable(items) {
  return table(
    [{ title: 'Container' }, { title: 'Image' }, { title: 'State' }, { title: 'Routers' }],
    items.map((c) => ({
      cells: [
        h('strong', {}, c.name),
        c.image ? h('code', {}, c.image) : h('span', { class: 'muted' }, '—'),
        c.state ? tag(String(c.state)) : h('span', { class: 'muted' }, '—'),
        c.routers.length ? h('div', { class: 'links' }, c.routers.map((r) => objLink('routers', r))) : h('span', { class: 'muted' }, '—'),
      ],
    })));
}

export function containersPage() {
  const body = h('div');
  const el = h('div', {},
    h('div', { class: 'page-head' },
      h('h1', {}, 'Containers'),
      h('p', { class: 'lead' }, 'Every container the Docker provider saw. Those without a route come first, each with the reasons why.')),
    body);
  return {
    title: 'Containers',
    el,
    async refresh(signal) {
      const [raw, providers] = await Promise.all([
        optional('/api/containers', null, signal),
        get('/api/providers', signal).catch(() => ({})),
      ]);
      const dockerOn = Object.keys(providers || {}).some((p) => p.toLowerCase().startsWith('docker') || p.toLowerCase() === 'swarm');
      render(body, { raw, dockerOn }, () => {
        if (raw === null) return empty('No container information', 'This gangway does not report containers.');
        const all = list(raw).map(normalizeContainer);
        const notRouted = all.filter((c) => !c.routed);
        const routed = all.filter((c) => c.routed);
        const out = [];
        out.push(h('div', { class: 'summary' },
          h('span', { class: 'pill' }, `${all.length} container${all.length === 1 ? '' : 's'} seen`),
          h('span', { class: `pill ${notRouted.length ? 'warn' : 'ok'}` }, `${notRouted.length} not routed`)));
        if (notRouted.length) {
          out.push(h('h2', { class: 'section-title' }, 'Not routed'));
          out.push(h('div', { class: 'cards', id: 'not-routed' }, notRouted.map(notRoutedCard)));
        } else if (!dockerOn && all.length === 0) {
          out.push(h('div', { id: 'not-routed' }, empty('The Docker provider is off',
            'When providers.docker is configured, every container it finds is listed here, and a container that gets no route is shown with the reasons why (not exposed, no port, a label it could not read, a router with an error…).',
            'Routers from the file provider are under Routers.')));
        } else {
          out.push(h('div', { id: 'not-routed' }, callout('ok', 'Every container is routed',
            [all.length ? 'Each container the Docker provider saw has at least one working router.' : 'The Docker provider is on and has seen no container yet.'])));
        }
        if (routed.length) out.push(h('h2', { class: 'section-title' }, 'Routed'), section(null, routedTable(routed)));
        return out;
      });
    },
  };
}
