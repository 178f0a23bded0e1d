// The browser test of the worker pool: serves wasm/js/*.mjs, the built module and a test
// page (server.mjs, no COOP/COEP), opens the page in Debian's headless Chromium through
// playwright-core (a devDependency: `npm install` in wasm/; no browser is downloaded),
// prints each check as "ok ..."/"FAIL ..." and ends with "N passed, M failed".
// Exit status 0 only if all passed.
//   node wasm/test/browser/run-browser.mjs
// Env: SHARDPSI_WASM_DIR (default build-wasm/wasm), CHROMIUM (default /usr/bin/chromium),
//      SHARDPSI_BROWSER_TIMEOUT_MS (default 300000), SHARDPSI_BROWSER_VERBOSE=1 (console log).
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, WASM_DIR, CHROMIUM_ARGS } from './server.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TIMEOUT_MS = Number(process.env.SHARDPSI_BROWSER_TIMEOUT_MS || 300000);
const verbose = process.env.SHARDPSI_BROWSER_VERBOSE === '1';

let passed = 0, failed = 0;
const report = (ok, name, detail) => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok' : 'FAIL'} ${name}${detail ? ` (${detail})` : ''}`);
};
const finish = () => { console.log(`${passed} passed, ${failed} failed`); process.exit(failed === 0 && passed > 0 ? 0 : 1); };

// A worker stopped mid-round at 1,000,000 values, from outside the page: the worker's own
// close() run through the DevTools protocol, so the page gets no event, as when the browser
// kills a worker.  The run must end with a PoolError naming the worker (a helper by the lead,
// after half the progress timeout of its silence; the lead by the page) no later than the
// progress timeout after the last progress the page heard: the page never waits longer
// than that on a stopped worker, whatever the machine's speed; then a new pool must work.
const BIG_N = 1000000, BIG_TIMEOUT_MS = 20000;
async function killedMidRound(page) {
  for (const victim of [1, 0]) {
    const what = `${BIG_N} values on 2 workers, worker ${victim} stopped mid-round`;
    await page.evaluate((o) => window.__bigStart(o), { n: BIG_N, workers: 2, timeoutMs: BIG_TIMEOUT_MS });
    await page.waitForFunction(() => window.__big.progress >= 4 || window.__big.done, null, { timeout: 120000, polling: 100 });
    let named = null;
    for (const w of page.workers()) {
      const name = await w.evaluate(() => self.name).catch(() => null);
      if (name === `shardpsi pool worker ${victim}`) { named = w; break; }
    }
    const progress = await page.evaluate(() => window.__big.progress);
    if (!named) { report(false, `${what}: the worker is found by its name`, page.workers().length); continue; }
    const t0 = Date.now();
    named.evaluate(() => self.close()).catch(() => {}); // no answer comes from a closed worker
    await page.waitForFunction(() => window.__big.done, null, { timeout: 3 * BIG_TIMEOUT_MS, polling: 200 });
    const big = await page.evaluate(() => window.__big);
    const ms = Date.now() - t0;
    const e = big.error || {};
    const want = victim === 0
      ? new RegExp(`no progress for ${BIG_TIMEOUT_MS} ms during createRequest: worker 0 \\(the lead\\) is silent`)
      : new RegExp(`worker 1 has not answered for ${BIG_TIMEOUT_MS / 2} ms, holding slice [0-9, ]+ of psi_client_create_request`);
    report(!big.ok && e.isPoolError && want.test(e.message) && big.silentMs <= BIG_TIMEOUT_MS + 1000,
      `${what}: a PoolError naming it within the progress timeout`,
      `stopped after ${progress} slices; rejected ${ms} ms later, ${big.silentMs} ms after the last progress: ${e.message}`);
    report(big.after > BIG_N / 1000 * 33, `${what}: a new pool works after it`, big.after);
  }
}

let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch (e) {
  report(false, 'load playwright-core', `${e.message}; run \`npm install\` in wasm/`);
  finish();
}
for (const [f, what] of [[CHROMIUM, 'Chromium'], [path.join(WASM_DIR, 'shardpsi.wasm'), 'the built module'], [path.join(WASM_DIR, 'shardpsi.mjs'), 'the module glue']]) {
  if (!existsSync(f)) { report(false, `${what} exists`, f); finish(); }
}

const consoleLog = [];
const server = await startServer({ log: (s) => consoleLog.push(`[server] ${s}`) });
const profile = mkdtempSync(path.join(tmpdir(), 'shardpsi-chromium-'));
let ctx;
try {
  const t0 = Date.now();
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true,
    args: CHROMIUM_ARGS,
  });
  const launchMs = Date.now() - t0;
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('console', (m) => consoleLog.push(`[console.${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => consoleLog.push(`[pageerror] ${e.message}`));
  page.on('worker', (w) => consoleLog.push(`[worker] ${w.url()}`));
  await page.goto(server.url);
  await page.waitForFunction(() => window.__done === true, null, { timeout: TIMEOUT_MS, polling: 200 });
  const { results, info } = await page.evaluate(() => ({ results: window.__results, info: window.__info }));
  for (const r of results) report(r.ok, r.name, r.detail);
  console.log(`# ${info.userAgent}`);
  console.log(`# launch ${launchMs} ms; crossOriginIsolated=${info.crossOriginIsolated}, typeof SharedArrayBuffer=${info.sharedArrayBuffer}, ` +
    `hardwareConcurrency=${info.hardwareConcurrency}`);
  if (info.single) console.log(`# single instance (page main thread): load ${info.singleLoadMs} ms, round ${info.single.ms} ms, ${info.single.valuesPerSec} values/s; compileModule ${info.compileMs} ms`);
  for (const [n, p] of Object.entries(info.pool || {})) {
    const v = p.valuesPerSec;
    console.log(`# pool ${n} worker(s): start ${p.startMs} ms; values/s request ${v.request}, setup ${v.setup}, ` +
      `response ${v.response}, intersection ${v.intersection}, whole round ${v.round}`);
  }
  if (info.terminateRejectMs !== undefined) console.log(`# terminated helper: rejected after ${info.terminateRejectMs} ms`);
  await killedMidRound(page);
} catch (e) {
  report(false, 'browser run', e.message.split('\n')[0]);
} finally {
  if (ctx) await ctx.close().catch(() => {});
  await server.close();
  rmSync(profile, { recursive: true, force: true });
}
if (verbose || failed) for (const l of consoleLog) console.log(`# ${l}`);
finish();
