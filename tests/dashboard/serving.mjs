// Whether the dashboard tells the truth about serving: run by
// tests/it/api/dashboard.rs once with every backend up, once with some stopped
// (after real requests failed on them) and once after they were started
// again; then once more after the file was broken (PHASE `rejected`: its
// last good version stays in use, and the pages say so). PHASE says which;
// the Rust test owns the backends, the traffic and the file.
//
// Environment: GANGWAY_URL, CHROMIUM, PHASE (`up`, `down`, `rejected`), SCREENSHOT_DIR
// (optional: screenshots of the overview, the TCP list and the weighted
// service at 1440x900 and 390x844). Exit status 0 means every check passed.

import fs from 'node:fs';
import path from 'node:path';
import { check, conclude, launch } from './browser.mjs';

const base = process.env.GANGWAY_URL;
const phase = process.env.PHASE;
const shots = process.env.SCREENSHOT_DIR;
if (!base || !['up', 'down', 'rejected'].includes(phase)) {
  console.log('FAIL: GANGWAY_URL and PHASE (up, down or rejected) must be set');
  process.exit(2);
}

const browser = await launch(base, { viewport: { width: 1440, height: 900 } });
const { page, open, text } = browser;
const api = async (p) => (await fetch(`${base}${p}`)).json();
async function snap(name) {
  if (!shots) return;
  fs.mkdirSync(shots, { recursive: true });
  for (const [w, hgt] of [[1440, 900], [390, 844]]) {
    await page.setViewportSize({ width: w, height: hgt });
    await page.screenshot({ path: path.join(shots, `${name}-${phase}-${w}x${hgt}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

/** The explain page's verdict for a host on entry point web. */
async function explain(host) {
  await open(`/explain?host=${host}&path=/`);
  await page.waitForSelector('[data-entrypoint=web] [data-winner]');
  return {
    outcome: await page.getAttribute('[data-entrypoint=web] [data-winner]', 'data-outcome'),
    text: await text('[data-entrypoint=web] .winner'),
    summary: await text('#explain-summary'),
  };
}

await conclude(browser, async () => {
  if (phase === 'rejected') {
    // The file no longer reads: every object is its last good version's,
    // marked with the file, since when and the error of the file now.
    const typo = await api('/api/http/routers/typo@file');
    const kept = typo.file && typo.file.lastGood;
    check(kept && kept.rejectedSince >= kept.readAt && /dynamic\.toml:\d+/.test(kept.message),
      `API: typo@file is from the last good version: ${JSON.stringify(typo.file)}`);
    const db = await api('/api/tcp/routers/db@file');
    check(db.file && db.file.lastGood && db.file.lastGood.message === kept.message, `API: the TCP router too: ${JSON.stringify(db.file)}`);
    await open('/routers/typo@file');
    const top = await text('#last-good');
    check(top.includes('From the last good version of') && top.includes('dynamic.toml') && top.includes(kept.message),
      `router page: the last good version and the file's error now: ${top}`);
    // The old version's own error is that version's, not the file's now.
    const errs = await text('#errors');
    check(errs.indexOf('From the last good version') < errs.indexOf('Problems of the last good version') && errs.includes('servce'),
      `router page: the current error on top, the old one under its version: ${errs}`);
    await snap('last-good');
    await open('/tcp/routers/db@file');
    check((await text('#last-good')).includes(kept.message), 'TCP router page: marked too');
  } else if (phase === 'down') {
    // The weighted service: its larger member (3 of 4 shares) has its only
    // server stopped; the refused requests went on to the other member, so
    // every request was served: a warning, and the router serves.
    const flaky = await api('/api/http/services/flaky@file');
    check(flaky.status === 'warning' && flaky.problems.some((p) => p.kind === 'membersDown' && p.members.includes('bad@file'))
      && !flaky.problems.some((p) => p.kind === 'membersFailing'), `API: flaky@file is a warning, bad@file passed by: ${JSON.stringify(flaky.problems)}`);
    await open('/services/flaky@file');
    const errors = await text('#errors');
    check(errors.includes('bad@file') && errors.includes('the other members take their traffic') && !errors.includes('%'),
      `service page: bad@file cannot serve, the others take its traffic: ${errors}`);
    check((await page.getAttribute('.detail-head .badge', 'class')).includes('status-warning'), 'service page: the badge is a warning');
    await snap('weighted-service');
    check((await api('/api/http/routers/flaky@file')).status === 'enabled', 'the router of flaky@file serves every request');
    // The stopped server reads unreachable, with what its requests got.
    await open('/services/bad@file');
    const bad = await text('[data-state]');
    check(bad.includes('UNREACHABLE'), `service page: bad@file's server is unreachable: ${bad}`);
    // The failover whose main service is bad@file: its fallback served every
    // request, and the page says so (never that nothing has a server up).
    const fo = await api('/api/http/services/fo@file');
    check(fo.status === 'warning' && fo.problems.some((p) => p.kind === 'onFallback') && !fo.problems.some((p) => p.kind === 'noMemberUp'),
      `API: fo@file runs on its fallback: ${JSON.stringify(fo.problems)}`);
    await open('/services/fo@file');
    const foErrors = await text('#errors');
    check(foErrors.includes('requests go to the fallback') && !foErrors.includes('no service it sends to has a server up'),
      `service page: fo@file on its fallback: ${foErrors}`);
    check((await api('/api/http/routers/fo@file')).status === 'enabled', 'the router of fo@file serves every request');
    const f = await explain('fo.test');
    check(f.outcome === 'served', `explain fo.test: served: ${f.text}`);
    // Servers answering 502 of their own: an error, with the status, and
    // the server's badge says it answers errors.
    const erring = await api('/api/http/services/erring@file');
    check(erring.status === 'disabled' && erring.problems.some((p) => p.kind === 'serversErroring' && p.status === 502 && p.percent === 100),
      `API: erring@file's server answers 502: ${JSON.stringify(erring.problems)}`);
    await open('/services/erring@file');
    const erringErrors = await text('#errors');
    check(erringErrors.includes('answer 502') && erringErrors.includes('Not serving'), `service page: erring@file answers 502: ${erringErrors}`);
    check((await text('[data-state]')).includes('ERRORING'), 'service page: its server is erroring');
    await open('/routers/erring@file');
    const erringRouter = await text('#errors');
    check(erringRouter.includes('every request fails with 502') && erringRouter.includes('the servers answer 502'),
      `router page: every request to erring@file gets 502 from its servers: ${erringRouter}`);
    const e = await explain('erring.test');
    check(e.outcome === 'fails' && e.text.includes('502'), `explain erring.test: every request gets 502: ${e.text}`);
    // A health-checked member that is down is skipped by the proxy: the
    // other member takes everything, so a warning, not an error.
    const steady = await api('/api/http/services/steady@file');
    check(steady.status === 'warning' && steady.problems.some((p) => p.kind === 'membersDown' && p.members.includes('checked@file')),
      `API: steady@file is a warning, its checked member skipped: ${JSON.stringify(steady.problems)}`);
    check((await api('/api/http/routers/steady@file')).status === 'enabled', 'the router of steady@file serves every request');
    // A router whose only server refuses connections: every request fails.
    await open('/routers/down@file');
    check((await text('#errors')).includes('Not serving'), `router page: down@file is not serving: ${await text('#errors')}`);
    // Explain says what a request gets, not only which router takes it.
    const x = await explain('flaky.test');
    check(x.outcome === 'served' && !x.text.includes('502'), `explain flaky.test: served: ${x.text}`);
    const y = await explain('down.test');
    check(y.outcome === 'fails' && y.text.includes('502') && y.summary.includes('502'), `explain down.test: every request gets 502: ${y.text} / ${y.summary}`);
    // TCP: the service whose only server is stopped is an error, and so is
    // its router; both are on the overview with their counts.
    const db = await api('/api/tcp/services/db@file');
    check(db.status === 'disabled', `API: TCP service db@file is an error: ${JSON.stringify(db.problems)}`);
    const dbRouter = await api('/api/tcp/routers/db@file');
    check(dbRouter.status === 'disabled' && dbRouter.problems.some((p) => p.kind === 'serviceDown'),
      `API: TCP router db@file takes its service's state: ${JSON.stringify(dbRouter.problems)}`);
    await open('/');
    await page.waitForSelector('#attention');
    const attention = await text('#attention');
    for (const [kind, name] of [['service', 'flaky@file'], ['router', 'erring@file'], ['TCP service', 'db@file'], ['TCP router', 'db@file'], ['service', 'steady@file']]) {
      const rows = await page.$$eval(`#attention li[data-object="${name}"]`, (lis) => lis.map((li) => li.innerText));
      check(rows.some((r) => r.toLowerCase().includes(kind.toLowerCase())), `overview: ${kind} ${name} needs attention: ${attention}`);
    }
    check(await page.locator('#attention li[data-object="flaky@file"]').filter({ hasText: /router/i }).count() === 0,
      'overview: the router of flaky@file, which serves every request, does not need attention');
    // On a phone too, the router and the service of one name read apart.
    await page.setViewportSize({ width: 390, height: 844 });
    const erringRows = await page.$$eval('#attention li[data-object="erring@file"]', (lis) => lis.map((li) => li.innerText.toLowerCase()));
    check(erringRows.some((r) => r.includes('router')) && erringRows.some((r) => r.includes('service')),
      `overview on a phone: erring@file's router and service are told apart: ${JSON.stringify(erringRows)}`);
    await page.setViewportSize({ width: 1440, height: 900 });
    const overview = await api('/api/overview');
    const tcpCard = await text('.count-card[data-kind="tcp/services"]');
    check(tcpCard.includes(String(overview.tcp.services.total)) && tcpCard.includes(`${overview.tcp.services.errors} error`),
      `overview: the TCP services card counts ${JSON.stringify(overview.tcp.services)}: ${tcpCard}`);
    check(overview.tcp.routers.errors >= 1, `API overview counts the TCP router error: ${JSON.stringify(overview.tcp.routers)}`);
    await snap('overview');
    await open('/tcp');
    await snap('tcp');
  } else {
    // Every backend up (before the stop, and after the start): nothing of
    // these objects needs attention, and explain says the request is served.
    for (const [path, name] of [['/api/http/services/', 'flaky@file'], ['/api/http/services/', 'steady@file'],
      ['/api/http/routers/', 'flaky@file'], ['/api/http/routers/', 'down@file'],
      ['/api/tcp/services/', 'db@file'], ['/api/tcp/routers/', 'db@file']]) {
      const o = await api(`${path}${name}`);
      check(o.status === 'enabled', `API: ${path}${name} is enabled: ${JSON.stringify(o.problems)}`);
    }
    await open('/services/flaky@file');
    check(await page.locator('#errors').count() === 0, 'service page: no problem shown for flaky@file');
    // A server no request was sent to is not claimed to be up.
    const idle = await api('/api/http/services/idle@file');
    check(Object.values(idle.serverStates || {}).every((st) => st.state === 'unknown'), `API: idle@file's server is unknown: ${JSON.stringify(idle.serverStates)}`);
    await open('/services/idle@file');
    const idleState = await text('[data-state]');
    check(idleState.includes('unknown') && !idleState.includes('UP'), `service page: idle@file's server is unknown: ${idleState}`);
    const i = await explain('idle.test');
    check(i.outcome === 'unknown' && i.text.includes('Not known yet'), `explain idle.test: not known yet: ${i.text}`);
    const x = await explain('flaky.test');
    check(x.outcome === 'served' && !x.text.includes('502'), `explain flaky.test: served: ${x.text}`);
    await open('/');
    const overview = await api('/api/overview');
    for (const name of ['flaky@file', 'steady@file', 'db@file', 'down@file']) {
      check(await page.locator(`#attention li[data-object="${name}"]`).count() === 0, `overview: ${name} does not need attention`);
    }
    const tcpCard = await text('.count-card[data-kind="tcp/routers"]');
    check(tcpCard.includes(String(overview.tcp.routers.total)), `overview: TCP routers counted: ${tcpCard}`);
    await snap('overview');

    // A router with a mistyped key: disabled, its error, and what was read
    // of it; no invented priority, no service, no link to one.
    const typo = await api('/api/http/routers/typo@file');
    check(typo.status === 'disabled' && typo.problems.some((p) => p.kind === 'unknownOption' && p.option === 'servce'),
      `API: typo@file is disabled for its unknown key: ${JSON.stringify(typo.problems)}`);
    check(typo.service === undefined && typo.priority === undefined && typo.rule === 'Host(`typo.test`)'
      && typo.read && typo.read.servce === 'good', `API: typo@file has only the values read: ${JSON.stringify(typo)}`);
    await open('/routers/typo@file');
    await page.waitForSelector('#read');
    const read = await text('#read');
    check(read.includes('servce') && read.includes('Host(`typo.test`)'), `router page: the values read are shown: ${read}`);
    check((await text('#errors')).includes('servce'), `router page: the error names the key: ${await text('#errors')}`);
    check(await page.locator('.detail a[href*="#/services/"], #app a[href*="#/services/%40file"]').count() === 0, 'router page: no link to a service');
    check(/dynamic\.toml:\d+/.test(await text('#provenance')), `router page: where it is written: ${await text('#provenance')}`);
    await open('/routers');
    const row = await page.$eval('tr[data-name="typo@file"]', (r) => r.innerText);
    check(!row.includes('@file\t') && !row.includes(' 0'), `routers list: no invented service or priority: ${row}`);
    // Every file object says where it is written.
    await open('/services/flaky@file');
    check(/dynamic\.toml:\d+/.test(await text('#provenance')), `service page: file and line: ${await text('#provenance')}`);
    await open('/tcp/services/db@file');
    check(/dynamic\.toml:\d+/.test(await text('#provenance')), `TCP service page: file and line: ${await text('#provenance')}`);
  }
  console.log(`ok: phase ${phase}`);
});
