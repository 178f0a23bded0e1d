#!/usr/bin/env node
// Values per second of createRequest and processRequest in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core): @openmined/psi.js 2.0.6's browser build and one
// shardpsi instance in the page's main thread, and the shardpsi worker pool at 1, 2 and 4
// workers, in the same page, interleaved rounds, best of the rounds; every message is compared
// with psi.js's bytes.  Needs `npm install` in wasm/ and in vectors/ (scripts/setup-js.sh).
//   node wasm/bench/bench-browser.mjs [--values N] [--rounds R] [--workers LIST] [--slices LIST] [--json]
// --workers: pool sizes (default 1,2,4); --slices: slicesPerWorker values to compare.
// Env: SHARDPSI_WASM_DIR (default build-wasm/wasm), CHROMIUM (default /usr/bin/chromium).
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startServer, CHROMIUM_ARGS, PSIJS_WEB } from '../test/browser/server.mjs';

const o = { values: 10000, rounds: 2, workers: '1,2,4', slices: '', json: false };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--json') o.json = true;
  else if ((a === '--values' || a === '--rounds') && /^[1-9][0-9]*$/.test(argv[i + 1] ?? '')) o[a.slice(2)] = Number(argv[++i]);
  else if ((a === '--workers' || a === '--slices') && /^[1-9][0-9]*(,[1-9][0-9]*)*$/.test(argv[i + 1] ?? '')) o[a.slice(2)] = argv[++i];
  else { console.error(`usage: bench-browser.mjs [--values N] [--rounds R] [--workers LIST] [--slices LIST] [--json] (bad argument '${a}')`); process.exit(2); }
}
if (!existsSync(PSIJS_WEB)) { console.error(`bench-browser: ${PSIJS_WEB} missing: npm install in vectors/`); process.exit(2); }

const server = await startServer();
const profile = mkdtempSync(path.join(tmpdir(), 'shardpsi-bench-'));
let ctx, status = 0;
try {
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  const page = ctx.pages()[0] || await ctx.newPage();
  await page.goto(`${server.url}bench/?n=${o.values}&rounds=${o.rounds}&workers=${o.workers}${o.slices ? `&slices=${o.slices}` : ''}`);
  await page.waitForFunction(() => window.__done === true, null, { timeout: 1800000, polling: 500 });
  const r = await page.evaluate(() => window.__bench);
  if (r.error) throw new Error(r.error);
  if (o.json) console.log(JSON.stringify(r, null, 2));
  else {
    const om = r.rows[0], one = r.rows[1];
    console.log(`# ${r.info.userAgent}; hardwareConcurrency ${r.info.hardwareConcurrency}, crossOriginIsolated ${r.info.crossOriginIsolated}`);
    console.log(`# ${r.info.n} values, best of ${r.info.rounds} interleaved rounds; messages equal psi.js's bytes`);
    console.log('configuration                  request/s  x psi.js  x 1 inst.   response/s  x psi.js  x 1 inst.');
    for (const x of r.rows) {
      const f = (op) => `${String(x[op]).padStart(10)}  ${(x[op] / om[op]).toFixed(2).padStart(7)}x  ${(x[op] / one[op]).toFixed(2).padStart(8)}x`;
      console.log(`${x.name.padEnd(29)}${f('request')}   ${f('response')}`);
    }
  }
} catch (e) {
  console.error(`bench-browser: ${e.message}`);
  status = 1;
} finally {
  if (ctx) await ctx.close().catch(() => {});
  await server.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(status);
