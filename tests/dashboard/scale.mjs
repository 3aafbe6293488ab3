// The dashboard at 10,000 routers, in Debian's Chromium: "Needs attention"
// counts every problem the overview counts and says how many it does not
// list; the explain page stays short; an idle overview asks only whether
// anything changed (every API answer a 304); the internal entry point says
// where it listens; a skip link, focus kept after sorting, and no
// page-wide live region. Run by tests/api_scale.rs.
//
// Environment: GANGWAY_URL (the internal entry point), CHROMIUM, HOST (a
// routed host) and ITS_ROUTER (the router that takes it). Prints the idle
// page's bytes per hour as `IDLE <json>`. Exit status 0: every check passed.

import { check, conclude, launch } from './browser.mjs';

const base = process.env.GANGWAY_URL;
const host = process.env.HOST;
const itsRouter = process.env.ITS_ROUTER;
if (!base || !host || !itsRouter) {
  console.log('FAIL: GANGWAY_URL, HOST and ITS_ROUTER must be set');
  process.exit(2);
}

const browser = await launch(base, { viewport: { width: 1280, height: 860 } });
const { page, open, text } = browser;
page.setDefaultTimeout(90000);

async function api(path) {
  return page.evaluate(async (p) => (await fetch(p)).json(), `${base}${path}`);
}

/** Waits until the page has been read `n` more times (each poll counts one). */
async function polls(n) {
  const now = Number(await page.getAttribute('#app', 'data-loaded'));
  await page.waitForFunction((want) => Number(document.getElementById('app').dataset.loaded) >= want, now + n);
}

await conclude(browser, async () => {
  // Needs attention: its heading counts what the overview's counts say,
  // and what it does not list is one line saying how many.
  await open('/');
  await page.waitForSelector('#attention');
  const overview = await api('/api/overview');
  const sections = [overview.http, overview.tcp, overview.udp];
  const counted = sections.flatMap((s) => Object.values(s)).reduce((n, c) => n + c.errors + c.warnings, 0);
  const heading = await text('#attention h2');
  const shown = Number((heading.match(/\((\d+)\)/) || [])[1]);
  check(shown === counted, `Needs attention says ${shown}, the overview counts ${counted}: ${heading}`);
  const more = await page.$$eval('#attention [data-more]', (els) => els.map((e) => Number(e.dataset.more)));
  check(more.length > 0 && more.every((n) => n > 0), `the routers not listed are counted on a line of their own: ${more}`);
  const attentionText = await text('#attention');
  check(/more routers with an error/.test(attentionText) && attentionText.includes('Page 1 of'), `it says it pages and how many are not listed: ${attentionText.slice(0, 400)}`);

  // The internal entry point, bound to loopback here, says so.
  const listen = await page.getAttribute('[data-entrypoint=gangway] .listen-note', 'data-listen');
  check(listen === 'this-host', `the internal entry point says where it listens: ${listen}`);

  // One live region, saying the page opened; a poll changes nothing in it.
  check(await page.$('#app[aria-live]') === null, 'the page itself is no live region');
  const said = await text('#announce');
  check(said === 'Overview loaded.', `the status line says the page opened: ${said}`);

  // Idle: every API request of a poll is answered 304 (the browser then
  // shows the page its kept copy: no body crosses the wire).
  const seen = [];
  page.on('requestfinished', async (r) => {
    try {
      const resp = await r.response();
      const s = await r.sizes();
      seen.push({ url: r.url(), status: resp.status(), body: s.responseBodySize, bytes: s.responseBodySize + s.responseHeadersSize, at: Date.now() });
    } catch (_) { /* the page may be gone */ }
  });
  const from = Date.now();
  await polls(5);
  const seconds = (Date.now() - from) / 1000;
  const idle = seen.filter((r) => r.url.includes('/api/'));
  const changed = idle.filter((r) => r.body > 0);
  check(idle.length > 0 && changed.length === 0, `an idle overview is answered 304 only: ${JSON.stringify(changed.slice(0, 3))}`);
  check(await text('#announce') === said, 'five polls later the status line has said nothing more');
  const bytes = idle.reduce((n, r) => n + r.bytes, 0);
  console.log(`IDLE ${JSON.stringify({ seconds, requests: idle.length, bytes, mbPerHour: (bytes * 3600) / seconds / 1e6 })}`);

  // Explain at 10,000 routers: the winner, its host's routers, the rest
  // counted; a page of ordinary height.
  await open(`/explain?host=${encodeURIComponent(host)}&path=%2Fp2%2Fx`);
  await page.waitForSelector(`[data-entrypoint=web] [data-winner="${itsRouter}"]`);
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  check(height < 5000, `the explain page is ${height} px tall`);
  const untold = await text('[data-entrypoint=web] .untold');
  check(/routers name other hosts only and were not tried/.test(untold), `the routers for other hosts are counted: ${untold}`);

  // A skip link first in the tab order, moving the focus to the content.
  await open('/routers');
  await page.waitForSelector('table.list tbody tr[data-name]');
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await page.keyboard.press('Tab');
  check(await page.evaluate(() => document.activeElement.id) === 'skip', 'the skip link comes first');
  await page.keyboard.press('Enter');
  check(await page.evaluate(() => document.activeElement.id) === 'app', 'the skip link moves the focus to the content');
  check(page.url().endsWith('#/routers'), `the skip link leaves the page where it is: ${page.url()}`);

  // Sorting by a column from the keyboard keeps the focus on that column.
  await page.focus('th a.sort-link[data-sort=priority]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('th[aria-sort] a.sort-link[data-sort=priority]');
  const focused = await page.evaluate(() => document.activeElement && document.activeElement.dataset.sort);
  check(focused === 'priority', `the focus stays on the column sorted by: ${focused}`);
});
