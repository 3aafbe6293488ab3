// Reads what the dashboard shows of services whose containers sleep when
// idle, in Debian's Chromium: the state badge in the services list and on
// a service's page, since when it sleeps, the last request, the last
// wake-up and how long it took, and why a wake-up failed while its backoff
// lasts. Run by tests/it/servers/sleep.rs against real containers.
//
// Environment: GANGWAY_URL (the internal entry point), CHROMIUM,
// PROXY_PORT (gangway's web entry point on 127.0.0.1), WOKEN (a service
// woken once), BROKEN (an asleep service whose container exits when
// started) and BROKEN_HOST (its host), SCREENSHOT_DIR (optional). Exit
// status 0 means every check passed.

import { Check, check, conclude, launch } from './browser.mjs';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const base = process.env.GANGWAY_URL;
const proxyPort = Number(process.env.PROXY_PORT);
const woken = process.env.WOKEN;
const broken = process.env.BROKEN;
const brokenHost = process.env.BROKEN_HOST;
const shots = process.env.SCREENSHOT_DIR;
if (!base || !proxyPort || !woken || !broken || !brokenHost) {
  console.log('FAIL: GANGWAY_URL, PROXY_PORT, WOKEN, BROKEN and BROKEN_HOST must be set');
  process.exit(2);
}

/** A GET through gangway to `host`, as a client of the service would send it; its status. */
function request(host) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: proxyPort, path: '/', headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
  });
}

const browser = await launch(base, { viewport: { width: 1280, height: 860 } });
const { page, open, text } = browser;
/** Whether `sel` shows `words` within `ms` (the page refreshes itself every 2 s). */
async function shows(sel, words, ms) {
  try {
    await page.waitForFunction(([s, w]) => {
      const el = document.querySelector(s);
      return el && el.innerText.includes(w);
    }, [sel, words], { timeout: ms });
    return true;
  } catch (_) {
    return false;
  }
}
/**
 * Asks the broken service until `sel` shows the wake-up's failure: a
 * request during the backoff gets the error at once, one after it starts
 * the container again, which fails again; either way the error is shown.
 */
async function failureShown(sel, where) {
  for (let i = 0; i < 5; i += 1) {
    const status = await request(brokenHost);
    check(status === 502, `${where}: the broken service answers 502, not ${status}`);
    if (await shows(sel, 'exit code 3', 5000)) return;
  }
  throw new Check(`${where}: no wake-up error shown in ${sel}: ${await text('#app')}`);
}
const shot = async (name) => {
  if (shots) {
    fs.mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  }
};

await conclude(browser, async () => {
  console.log('step: services list');
  await open('/services');
  const brokenRow = `tr[data-name="${broken}"]`;
  const wokenRow = `tr[data-name="${woken}"]`;
  check(await shows(`${brokenRow} .badge.sleep[data-sleep="asleep"]`, 'Asleep', 20000),
    `list: ${broken} has the asleep badge (${await text('table.list')})`);
  const asleepCell = await text(`${brokenRow} .sleep-sum`);
  check(/since (just now|\d+ (s|min) ago)/.test(asleepCell), `list: since when ${broken} sleeps (${asleepCell})`);
  check(await shows(`${wokenRow} .sleep-sum`, 'woke', 20000), `list: ${woken} shows its last wake-up (${await text('table.list')})`);
  const wokenCell = await text(`${wokenRow} .sleep-sum`);
  check(/woke .* in \d+(\.\d)? (ms|s)/.test(wokenCell), `list: how long ${woken}'s wake-up took (${wokenCell})`);
  await shot('sleep-services');

  console.log('step: the woken service');
  await open(`/services/${woken}`);
  const wokenPage = await text('#sleep');
  check(/Last wake-up\s+(just now|\d+ (s|min) ago) \(\d{4}-\d\d-\d\d \d\d:\d\d\) · took \d+(\.\d)? (ms|s)/.test(wokenPage),
    `${woken}: the last wake-up, when and how long (${wokenPage})`);
  check(/Last request\s+(just now|\d+ (s|min) ago)/.test(wokenPage), `${woken}: the last request (${wokenPage})`);
  check(wokenPage.includes('1h without a request'), `${woken}: its idle time (${wokenPage})`);
  check(/State\s+Awake/.test(wokenPage), `${woken}: awake (${wokenPage})`);
  check(await page.locator('.detail-head .badge.sleep').count() === 1, `${woken}: a sleep badge beside its status`);

  console.log('step: the broken service, asleep');
  await open(`/services/${broken}`);
  check(await shows('#sleep[data-state="asleep"] .badge.sleep', 'Asleep', 20000), `${broken}: the asleep badge (${await text('#sleep')})`);
  const asleepPage = await text('#sleep');
  check(/Asleep since\s+(just now|\d+ (s|min) ago)/.test(asleepPage), `${broken}: since when it sleeps (${asleepPage})`);
  check(asleepPage.includes('requests wait until the service answers'), `${broken}: how requests are answered (${asleepPage})`);
  check(await shows('#app', 'No servers while its containers sleep', 5000), `${broken}: no servers while it sleeps, said so`);

  console.log('step: a wake-up that fails');
  await failureShown('#sleep .callout.error', `${broken}'s page`);
  await shot('sleep-service-failed');
  await open('/services');
  await failureShown(`${brokenRow} + tr.row-after .sleep-error`, 'list');

});
