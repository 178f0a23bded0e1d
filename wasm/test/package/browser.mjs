// Serves a built page (DIR) from 127.0.0.1 with no COOP/COEP headers, opens it in Debian's
// headless Chromium through playwright-core (wasm/'s devDependency) and prints the page's
// window.shardpsiResult as JSON.  Exit status 0 when the page reported a result.
//   node browser.mjs DIR [TIMEOUT_MS]
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CHROMIUM_ARGS } from '../browser/server.mjs';

const [dir, timeoutArg] = process.argv.slice(2);
const TIMEOUT_MS = Number(timeoutArg || 60000);
const { chromium } = createRequire(new URL('../../package.json', import.meta.url))('playwright-core');
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.wasm': 'application/wasm', '.css': 'text/css' };

const root = path.resolve(dir);
const server = http.createServer(async (req, res) => {
  let p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (p.endsWith('/')) p += 'index.html';
  const file = path.join(root, p);
  const body = file.startsWith(root + path.sep) ? await readFile(file).catch(() => null) : null;
  if (!body) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' });
  res.end(body);
});
await new Promise((ok, bad) => { server.once('error', bad); server.listen(0, '127.0.0.1', ok); });
const profile = mkdtempSync(path.join(tmpdir(), 'shardpsi-chromium-'));
const log = [];
let ctx, status = 1;
const timer = setTimeout(() => { console.error(`browser.mjs: no result in ${TIMEOUT_MS} ms`); process.exit(2); }, TIMEOUT_MS + 15000);
try {
  ctx = await chromium.launchPersistentContext(profile, { executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true, args: CHROMIUM_ARGS, timeout: 30000 });
  const page = ctx.pages()[0] || await ctx.newPage();
  page.on('console', (m) => log.push(`[console.${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => log.push(`[pageerror] ${e.message}`));
  await page.goto(`http://127.0.0.1:${server.address().port}/`, { timeout: 30000 });
  await page.waitForFunction(() => window.shardpsiResult !== undefined, null, { timeout: TIMEOUT_MS, polling: 100 });
  const result = await page.evaluate(() => ({ ...window.shardpsiResult, crossOriginIsolated: self.crossOriginIsolated }));
  console.log(JSON.stringify(result));
  status = 0;
} catch (e) {
  console.error(`browser.mjs: ${e.message.split('\n')[0]}`);
  for (const l of log) console.error(l);
} finally {
  if (ctx) await ctx.close().catch(() => {});
  server.close();
  rmSync(profile, { recursive: true, force: true });
  clearTimeout(timer);
}
process.exit(status);
