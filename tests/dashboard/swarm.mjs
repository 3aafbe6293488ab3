// Reads what the dashboard shows of Swarm services, in Debian's Chromium:
// on the containers page, a service that is not routed with its reason and
// its Swarm chip; on a router's page, its server traced to the service's
// task and the node the task runs on. Run by tests/it/providers/swarm.rs.
//
// Environment: GANGWAY_URL (the internal entry point), CHROMIUM,
// NOT_ROUTED (a service without a route), ROUTER (a routed router's
// qualified name). Exit status 0 means every check passed.

import { check, conclude, launch } from './browser.mjs';

const base = process.env.GANGWAY_URL;
const notRouted = process.env.NOT_ROUTED;
const router = process.env.ROUTER;
if (!base || !notRouted || !router) {
  console.log('FAIL: GANGWAY_URL, NOT_ROUTED and ROUTER must be set');
  process.exit(2);
}

const browser = await launch(base);
const { page, open, text } = browser;

await conclude(browser, async () => {
  console.log('step: containers');
  await open('/containers');
  const card = await text(`#not-routed [data-container="${notRouted}"]`);
  check(card.includes('port must be given by label') && card.includes('loadbalancer.server.port'),
    `containers: ${notRouted} is not routed, with the reason (${card})`);
  check(/\btask [0-9a-z]{12}\b/i.test(card), `containers: ${notRouted} shows its Swarm task (${card})`);

  console.log('step: router');
  const api = await (await fetch(`${base}/api/http/routers/${encodeURIComponent(router)}`)).json();
  const source = (api.provenance || []).find((p) => p.swarm && p.swarm.taskId);
  check(source, `the API traces ${router} to a Swarm task: ${JSON.stringify(api.provenance)}`);
  await open(`/routers/${router}`);
  const where = await text('#provenance');
  check(/service and task/i.test(where), `router: the provenance is headed by service and task (${where})`);
  check(where.includes(source.swarm.serviceName), `router: the service is named (${where})`);
  check(where.includes(`task ${source.swarm.taskId.slice(0, 12)}`), `router: the task is shown (${where})`);
  check(where.includes(`on ${source.swarm.nodeId.slice(0, 12)}`), `router: the node is shown (${where})`);
  for (const server of source.servers || []) {
    check(where.includes(server), `router: the task's server ${server} is shown (${where})`);
  }
});
