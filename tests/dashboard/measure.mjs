// Measures the dashboard in Debian's Chromium, for docs/dashboard.md: no
// test runs it, and nothing here asserts a time. Start a gangway with the
// configuration to measure, then:
//
//   GANGWAY_URL=http://127.0.0.1:PORT node measure.mjs load   # page loads and a search
//   GANGWAY_URL=http://127.0.0.1:PORT node measure.mjs idle   # bytes of an idle open overview (PAGE=/services: another page)
//
// `load` times the overview, the routers list, a search in it (SEARCH,
// default `r199`), a sort by priority and the TCP
// routers list, each from navigation until the page has read the API and
// drawn it. `idle` opens the overview, then counts the requests and bytes
// (headers and bodies, as received) over IDLE_SECONDS (default 60); with
// BEFORE=1 the browser keeps nothing and asks for no compression, as the
// dashboard did before answers carried entity tags and files came gzipped.

import { launch } from './browser.mjs';

const base = process.env.GANGWAY_URL;
const mode = process.argv[2];
if (!base || !['load', 'idle'].includes(mode)) {
  console.log('usage: GANGWAY_URL=http://127.0.0.1:PORT node measure.mjs load|idle');
  process.exit(2);
}

const browser = await launch(base, { viewport: { width: 1440, height: 900 } });
const { page, open } = browser;
page.setDefaultTimeout(120000);

/**
 * Milliseconds from navigation until the page at `hash` has read the API
 * (not the page it came from: `open` waits for its own query) and, with
 * `ready`, until `ready` holds.
 */
async function timed(hash, ready) {
  const start = Date.now();
  await open(hash);
  if (ready) await page.waitForFunction(ready);
  return Date.now() - start;
}

try {
  if (mode === 'load') {
    const out = {};
    // A first load: nothing in the browser's cache.
    out.overviewFirst = await timed('/');
    out.routers = await timed('/routers', () => document.querySelector('table.list tbody tr[data-name]'));
    const start = Date.now();
    const term = process.env.SEARCH || 'r199';
    await page.fill('#search', term);
    await page.waitForFunction((t) => {
      const rows = [...document.querySelectorAll('table.list tbody tr[data-name]')];
      return rows.length > 0 && rows.every((r) => r.dataset.name.includes(t));
    }, term);
    out.search = Date.now() - start;
    const sortStart = Date.now();
    await page.click('th a.sort-link[data-sort=priority]');
    await page.waitForFunction(() => document.querySelector('th[aria-sort] a[data-sort=priority]')
      && document.querySelector('table.list tbody tr[data-name]'));
    out.sortByPriority = Date.now() - sortStart;
    out.tcpRouters = await timed('/tcp/routers', () => document.querySelector('table.list tbody tr[data-name]'));
    console.log(JSON.stringify(out));
  } else {
    const seconds = Number(process.env.IDLE_SECONDS || '60');
    const seen = [];
    if (process.env.BEFORE === '1') {
      // The dashboard as it was: nothing kept by the browser, nothing
      // compressed (every answer whole, every visit).
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      await page.setExtraHTTPHeaders({ 'accept-encoding': 'identity' });
    }
    page.on('requestfinished', async (r) => {
      try {
        const s = await r.sizes();
        seen.push({ url: r.url(), bytes: s.responseBodySize + s.responseHeadersSize, at: Date.now() });
      } catch (_) { /* the page may be gone */ }
    });
    await open(process.env.PAGE || '/');
    await page.waitForTimeout(1000);
    const firstLoad = { requests: seen.length, bytes: seen.reduce((n, r) => n + r.bytes, 0) };
    const from = Date.now();
    await page.waitForTimeout(seconds * 1000);
    const idle = seen.filter((r) => r.at >= from);
    console.log(JSON.stringify({
      firstLoad,
      idleSeconds: seconds,
      idleRequests: idle.length,
      idleBytes: idle.reduce((n, r) => n + r.bytes, 0),
    }));
  }
} finally {
  await browser.close();
}
