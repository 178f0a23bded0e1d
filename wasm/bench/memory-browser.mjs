#!/usr/bin/env node
// Memory of the worker pool in headless Chromium: for each role, set size and worker count,
// the page's and each worker's peak memory while the role runs its steps, from the browser's
// own report (performance.measureUserAgentSpecificMemory on a cross-origin isolated page,
// bench/browser/memory-page.mjs: JavaScript heaps, which leave the wasm heaps out), the
// renderer process's peak resident memory (/proc: everything, wasm heaps included), and
// whether the round completed, with the step in which the renderer's resident memory peaked
// (each second's VmRSS charged to the step the page last named).  Each configuration runs
// in a fresh browser, so a renderer that fails is one configuration's result.
//   node wasm/bench/memory-browser.mjs [--values LIST] [--workers LIST] [--roles LIST] [--json]
//                                 [--fpr F] [--memory-bytes B] [--limit-bytes L] [--peer node|page]
// Defaults: --values 10000,100000 --workers 1,2,4 --roles server,client --fpr 1e-6.  The setup
// is a GCS of false-positive rate F for as many client values as the server holds: its hash
// range, n * n / F, must stay below 2^63 (PROTOCOL.md §7.2), so at 1e-6 a set is at most
// 3,037,000 values; past that, a larger F (1e-5: 9,603,000).  --memory-bytes: the memory the
// measured pool plans for in place of navigator.deviceMemory (the shard policy's budget is
// half of it; the first worker's 2 GiB wasm heap still bounds), to take a set past the
// policy's refusal and find where the renderer itself fails.  The peer plans for unbounded
// memory: it stands in for a party that runs elsewhere.  --limit-bytes L: the browser runs in
// a memory cgroup of L bytes (memory-limit.mjs; Linux, root), a device with that memory, so
// that a set at which the kernel kills the renderer is found in minutes; a row then says how
// many processes the limit killed and the most memory the browser was charged.  Give
// --memory-bytes too, or the pool plans for the memory the browser reports, not the limit.
// --peer: where the other party runs.  node (the default): in this process, a pool of one
// worker, outside the browser and its limit; its messages reach the page by fetch, as a real
// party's would over the network, so the renderer holds only the measured party (its
// inputs, its pool, the messages it sends and receives).  page: a pool of one worker in the
// same page, which then holds both parties' inputs and steps (the README's rows up to
// 2026-12-06 were measured so).
// Env: SHARDPSI_WASM_DIR (default build-wasm/wasm), CHROMIUM (default /usr/bin/chromium),
//      SHARDPSI_MEMORY_TIMEOUT_S (a configuration's limit, default 3600).
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startServer, CHROMIUM_ARGS } from '../test/browser/server.mjs';
import { serverValues, clientValues } from './browser/inputs.mjs';
import { memoryLimit } from './memory-limit.mjs';
import { compileModule } from '../js/index.mjs';
import { createPool } from '../js/pool.mjs';

const o = { values: '10000,100000', workers: '1,2,4', roles: 'server,client', fpr: '1e-6', memoryBytes: null, limitBytes: null, peer: 'node', json: false };
const argv = process.argv.slice(2);
const LIST = /^[1-9][0-9]*(,[1-9][0-9]*)*$/;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--json') o.json = true;
  else if ((a === '--values' || a === '--workers') && LIST.test(argv[i + 1] ?? '')) o[a.slice(2)] = argv[++i];
  else if (a === '--fpr' && Number(argv[i + 1]) > 0 && Number(argv[i + 1]) < 1) o.fpr = argv[++i];
  else if (a === '--memory-bytes' && /^[1-9][0-9]{0,15}$/.test(argv[i + 1] ?? '')) o.memoryBytes = argv[++i];
  else if (a === '--limit-bytes' && /^[1-9][0-9]{0,15}$/.test(argv[i + 1] ?? '')) o.limitBytes = argv[++i];
  else if (a === '--peer' && /^(node|page)$/.test(argv[i + 1] ?? '')) o.peer = argv[++i];
  else if (a === '--roles' && /^(server|client)(,(server|client))*$/.test(argv[i + 1] ?? '')) o.roles = argv[++i];
  else { console.error(`usage: memory-browser.mjs [--values LIST] [--workers LIST] [--roles server,client] [--fpr F] [--memory-bytes B] [--limit-bytes L] [--peer node|page] [--json] (bad argument '${a}')`); process.exit(2); }
}
const TIMEOUT_MS = Number(process.env.SHARDPSI_MEMORY_TIMEOUT_S || 3600) * 1000;
const MiB = (b) => (b / 1048576).toFixed(1);

// The renderer processes of the browser started with `profile` (their command line, which
// Chromium rewrites into one string, names the profile and --type=renderer), with their peak
// resident memory (VmHWM, Linux, or VmRSS if larger): the wasm heaps, which the browser's
// report leaves out, are in it.  Chromium resets a renderer's VmHWM during a run (at
// 3,500,000 values one read 2,420,384 kB, and ten minutes later 1,633,488), so the peak is
// the largest of reads taken every second of the run, not one read at its end.
function rendererPeaks(profile) {
  const peaks = [];
  for (const d of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (!cmd.includes(profile) || !cmd.includes('--type=renderer')) continue;
      const st = readFileSync(`/proc/${d}/status`, 'utf8');
      const [hwm, rss] = [/VmHWM:\s+(\d+) kB/, /VmRSS:\s+(\d+) kB/].map((re) => Number((re.exec(st) || [0, 0])[1]));
      peaks.push({ peak: Math.max(hwm, rss) * 1024, rss: rss * 1024 });
    } catch { /* gone */ }
  }
  return peaks;
}

// The other party with --peer node: the message the page will fetch first is made before the
// browser starts, the rest as the page posts.  msgs: name -> { p, ok, bad } (a message or
// the count of hits, as bytes).
const peerModule = o.peer === 'node' ? await compileModule() : null;
let peer = null;
const deferred = () => { const d = {}; d.p = new Promise((ok, bad) => Object.assign(d, { ok, bad })); d.p.catch(() => {}); return d; };
async function startPeer(role, n) {
  const pool = await createPool({ role: role === 'server' ? 'client' : 'server', reveal: true, workers: 1,
    module: peerModule, memoryBytes: 2 ** 50 });
  const msgs = Object.fromEntries(['setup', 'request', 'response', 'hits'].map((k) => [k, deferred()]));
  peer = { pool, msgs };
  if (role === 'server') msgs.request.ok(await pool.createRequest(clientValues(n)));
  else msgs.setup.ok(await pool.createSetupMessage(Number(o.fpr), n, serverValues(n)));
}
async function peerAnswers(req, res, urlPath) {
  const m = /^\/peer\/(setup|request|response|hits)$/.exec(urlPath);
  if (!m || !peer) return false;
  const { pool, msgs } = peer;
  const send = (code, body) => { res.writeHead(code, { 'Content-Length': body.length }); res.end(body); };
  try {
    if (req.method === 'POST') {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const body = new Uint8Array(Buffer.concat(chunks));
      msgs[m[1]].ok(body);
      send(200, Buffer.alloc(0));
      if (m[1] === 'request') pool.processRequest(body).then(msgs.response.ok, msgs.response.bad);
      if (m[1] === 'response') {
        pool.getIntersection(await msgs.setup.p, body)
          .then((h) => msgs.hits.ok(Buffer.from(String(h.length))), msgs.hits.bad);
      }
    } else {
      send(200, Buffer.from(await msgs[m[1]].p));
    }
  } catch (e) {
    if (!res.headersSent) send(500, Buffer.from(String(e && e.message)));
  }
  return true;
}

const server = await startServer({ isolated: true, handle: peerAnswers });
const rows = [];
try {
  for (const role of o.roles.split(',')) {
    for (const n of o.values.split(',').map(Number)) {
      for (const workers of o.workers.split(',').map(Number)) {
        const profile = mkdtempSync(path.join(tmpdir(), 'shardpsi-memory-'));
        let ctx, limit = null, row = { role, n, workers, fpr: Number(o.fpr), peer: o.peer,
          ...(o.memoryBytes ? { memoryBytes: Number(o.memoryBytes) } : {}),
          ...(o.limitBytes ? { limitBytes: Number(o.limitBytes) } : {}) };
        const executable = process.env.CHROMIUM || '/usr/bin/chromium';
        try {
          if (o.peer === 'node') await startPeer(role, n);
          if (o.limitBytes) limit = memoryLimit(Number(o.limitBytes), path.basename(profile), profile, executable);
          ctx = await chromium.launchPersistentContext(profile, {
            executablePath: limit ? limit.launcher : executable, headless: true,
            args: [...CHROMIUM_ARGS, '--enable-blink-features=ForceEagerMeasureMemory'] });
          const page = ctx.pages()[0] || await ctx.newPage();
          let crashed = false;
          page.on('crash', () => { crashed = true; });
          // The page names each step as it starts (a console message, which reaches us even
          // if the renderer dies later); each second's VmRSS is charged to the step under
          // way, so that a row says in which step, and how far in, the renderer peaked.
          const t0 = Date.now();
          let current = { step: 'loading', at: 0, rss: 0, rssAt: 0 };
          const steps = [current];
          page.on('console', (m) => {
            const s = /^step: (.*)$/.exec(m.text());
            if (s) steps.push(current = { step: s[1], at: (Date.now() - t0) / 1000, rss: 0, rssAt: 0 });
          });
          await page.goto(`${server.url}bench/memory?role=${role}&n=${n}&workers=${workers}&fpr=${o.fpr}&peer=${o.peer}${o.memoryBytes ? `&memory=${o.memoryBytes}` : ''}`);
          // Read every second of the run (a reset VmHWM, a renderer that crashes).
          let peak = 0;
          const sample = () => {
            const r = rendererPeaks(profile);
            peak = Math.max(peak, ...r.map((x) => x.peak));
            const rss = Math.max(0, ...r.map((x) => x.rss));
            if (rss > current.rss) Object.assign(current, { rss, rssAt: (Date.now() - t0) / 1000 });
          };
          const sampler = setInterval(sample, 1000);
          try {
            await page.waitForFunction(() => window.__done === true, null, { timeout: TIMEOUT_MS, polling: 1000 });
            const r = await page.evaluate(() => window.__result);
            row = { ...row, ...r };
          } catch (e) {
            row.error = crashed ? 'the renderer crashed' : `${e.name}: ${e.message.split('\n')[0]}`;
          } finally {
            clearInterval(sampler);
            sample();
            row.rendererPeakBytes = peak;
            row.steps = steps;
          }
        } catch (e) {
          if (!limit) throw e;
          row.error = `${e.name}: ${e.message.split('\n')[0]}`; // the browser did not start in the limit
        } finally {
          if (ctx) await ctx.close().catch(() => {});
          if (peer) { await peer.pool.close().catch(() => {}); peer = null; }
          if (limit) {
            row.limitKills = limit.kills();
            row.limitPeakBytes = limit.peak();
            await limit.close();
          }
          rmSync(profile, { recursive: true, force: true });
        }
        rows.push(row);
        if (!o.json) {
          const bySteps = (row.steps || []).filter((s) => s.rss > 0).map((s) =>
            `${s.step} (from ${s.at.toFixed(0)} s) ${MiB(s.rss)} at ${s.rssAt.toFixed(0)} s`).join('; ');
          const limited = !row.limitBytes ? '' : `; the ${MiB(row.limitBytes)} MiB limit: ` +
            `${row.limitKills ?? '?'} process(es) killed, ${MiB(row.limitPeakBytes ?? 0)} MiB charged at most`;
          console.log(row.error
            ? `${role} ${n} values, ${workers} worker(s): FAILED${row.step ? ` in ${row.step}` : ''}: ${row.error}; ` +
              `renderer process peak RSS ${MiB(row.rendererPeakBytes ?? 0)}${limited}`
            : `${role} ${n} values, ${workers} worker(s): ${row.seconds.toFixed(1)} s, ${row.hits} hits; ` +
              `peak MiB: page ${MiB(row.peaks.page)}, workers ${row.peaks.workers.map(MiB).join(' / ')}, ` +
              `reported in all ${MiB(row.peaks.total)} (at rest ${MiB(row.rest.total)}); ` +
              `renderer process peak RSS ${MiB(row.rendererPeakBytes)}; ` +
              `wasm heaps ${(row.wasmHeaps || []).map((b) => (b === null ? '-' : MiB(b))).join(' / ')}${limited}`);
          if (bySteps) console.log(`  renderer VmRSS peak by step, MiB: ${bySteps}`);
        }
      }
    }
  }
} finally {
  await server.close();
}
if (o.json) console.log(JSON.stringify(rows, null, 2));
