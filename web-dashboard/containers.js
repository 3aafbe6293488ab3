// "Why is my container not routed?": every container the Docker provider
// saw and every Swarm task, the ones without a route first, each with its
// reasons.

import { get, optional } from './api.js';
import { h, list, render, empty, objLink, tag, section, table, icon, callout } from './dom.js';

/** The sentences of a container's `reasons`, each with a warning icon. */
function reasonItem(text) {
  return h('li', {}, icon('warn'), h('span', {}, text));
}

function meta(c) {
  return h('div', { class: 'meta' },
    tag(c.state, `state-${c.state.toLowerCase()}`),
    c.health ? tag(`health: ${c.health}`) : null,
    c.swarm
      ? h('code', { class: 'chip', title: `Swarm service ${c.swarm.serviceId}` }, c.swarm.taskId ? `task ${c.swarm.taskId.slice(0, 12)}` : 'swarm service')
      : null,
    c.composeProject ? h('code', { class: 'chip', title: c.swarm ? 'stack' : 'compose project / service' }, c.swarm ? c.composeProject : `${c.composeProject}/${c.composeService || ''}`) : null,
    h('span', { class: 'muted mono', title: c.id }, c.id.slice(0, 12)));
}

function notRoutedCard(c) {
  return h('article', { class: 'card container-card', dataset: { container: c.name } },
    h('div', { class: 'card-head' }, h('h3', {}, c.name), meta(c)),
    c.reasons.length
      ? h('ul', { class: 'reasons' }, c.reasons.map(reasonItem))
      : h('p', { class: 'muted' }, 'Not routed; the provider gave no reason.'));
}

function routedTable(items) {
  return table(
    [{ title: 'Container' }, { title: 'Compose service' }, { title: 'State' }, { title: 'Routers' }],
    items.map((c) => ({
      cells: [
        h('strong', {}, c.name),
        c.composeService ? h('code', {}, c.composeService) : h('span', { class: 'muted' }, '—'),
        tag(c.state),
        c.routers.length ? h('div', { class: 'links' }, c.routers.map((r) => objLink('routers', r))) : h('span', { class: 'muted' }, '—'),
      ],
    })));
}

export function containersPage() {
  const body = h('div');
  const el = h('div', {},
    h('div', { class: 'page-head' },
      h('h1', {}, 'Containers'),
      h('p', { class: 'lead' }, 'Every container the Docker provider saw, and every Swarm task (or service without one) the Swarm provider saw. Those without a route come first, each with the reasons why.')),
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
        const all = list(raw);
        // Containers without a label of the prefix ask for no route: listed
        // apart, not counted as a problem.
        const notRouted = all.filter((c) => !c.routed && !c.unlabelled);
        const unlabelled = all.filter((c) => !c.routed && c.unlabelled);
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
        if (unlabelled.length) {
          out.push(h('h2', { class: 'section-title' }, 'Without routing labels'),
            h('p', { class: 'muted', id: 'unlabelled' }, `No label of the provider's prefix, so nothing asks for a route: ${unlabelled.map((c) => c.name).join(', ')}.`));
        }
        return out;
      });
    },
  };
}
