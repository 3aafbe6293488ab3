// Reads what the dashboard's certificates page says about certificates
// ordered through a CA with renewal information (ARI) and profiles, in
// Debian's Chromium: the profile asked for, when the next renewal happens
// and why (a point in the CA's window), and a profile the CA refused. Run
// by tests/it/tls/acme_ari.rs against pebble behind the ARI test double.
//
// Environment: GANGWAY_URL (the internal entry point), CHROMIUM, DOMAIN
// (a certificate ordered with PROFILE), REFUSED (a domain whose resolver
// asks for a profile the CA does not offer). Exit status 0 means every
// check passed.

import { check, conclude, launch } from './browser.mjs';

const base = process.env.GANGWAY_URL;
const domain = process.env.DOMAIN;
const profile = process.env.PROFILE;
const refused = process.env.REFUSED;
if (!base || !domain || !profile || !refused) {
  console.log('FAIL: GANGWAY_URL, DOMAIN, PROFILE and REFUSED must be set');
  process.exit(2);
}

const browser = await launch(base, { viewport: { width: 1400, height: 900 } });
const { page, open } = browser;

/** The text of the certificates table's row whose domains start with `name`, once it includes `words` (the page polls every 2 s); null if it never does. */
async function row(name, words, ms = 20000) {
  try {
    const handle = await page.waitForFunction(([n, w]) => {
      for (const tr of document.querySelectorAll('table.certs tbody tr')) {
        const main = tr.querySelector('.domains strong');
        if (main && main.textContent === n && tr.innerText.includes(w)) return tr.innerText;
      }
      return null;
    }, [name, words], { timeout: ms });
    return handle.jsonValue();
  } catch (_) {
    return null;
  }
}

/** The whole table's text, for a failure's message. */
const table = () => page.locator('table.certs').first().innerText().catch(() => '(no table)');

await conclude(browser, async () => {
  console.log('step: the certificates page');
  await open('/certificates');
  const ordered = await row(domain, `profile ${profile}`);
  check(ordered, `${domain}: its profile ${profile} is shown (${await table()})`);
  const why = await row(domain, "in the CA's renewal window (ARI)");
  check(why, `${domain}: the next renewal is said to be in the CA's window (${await table()})`);
  check(/in \d+ (s|min|h|days?)|just now/.test(why), `${domain}: when the next renewal happens (${why})`);
  const failed = await row(refused, 'does not offer profile');
  check(failed, `${refused}: the refused profile is shown with its error (${await table()})`);
});
