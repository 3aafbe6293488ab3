// Debian's Chromium on gangway's dashboard, for the scripts the tests run:
// a fresh profile, every page and console error collected, and `open`,
// which waits until the dashboard shows the route it was sent to.

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export class Check extends Error {}

export function check(cond, message) {
  if (!cond) throw new Check(message);
}

/** Chromium on `base`'s dashboard; `options` go to Playwright's context (a viewport). */
export async function launch(base, options = {}) {
  const problems = [];
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gangway-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    ...options,
  });
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(30000);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  const open = async (hash) => {
    await page.goto(`${base}/dashboard/#${hash}`);
    await page.waitForFunction(() => {
      const app = document.getElementById('app');
      return app.dataset.loaded && app.dataset.hash === location.hash.slice(1);
    });
  };
  const text = (sel) => page.locator(sel).first().innerText();
  const close = async () => {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return { page, problems, open, text, close };
}

/**
 * Runs `steps`, then checks that the browser reported no error; prints
 * PASS or FAIL with the first failed check and the page it was on (then
 * runs `onFailure`, a screenshot say), closes the browser and exits with
 * 0 or 1.
 */
export async function conclude(browser, steps, onFailure = async () => {}) {
  let failed = false;
  try {
    await steps();
    check(browser.problems.length === 0, `the browser reported: ${browser.problems.join('; ')}`);
    console.log('PASS');
  } catch (e) {
    failed = true;
    console.log(`FAIL: ${e instanceof Check ? e.message : e.stack} (at ${browser.page.url()})`);
    try {
      await onFailure();
    } catch (_) { /* the page may be gone */ }
  } finally {
    await browser.close();
  }
  process.exit(failed ? 1 : 0);
}
