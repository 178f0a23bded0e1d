// The browser test page of the worker pool (driven by run-browser.mjs).  Runs in the
// page's main thread; the pool runs in browser module Workers (js/pool-worker.mjs), each
// importing the ES module glue and instantiating the WebAssembly.Module compiled once here.
// Results: window.__results = [{ ok, name, detail }], window.__info, window.__done.
// window.__bigStart and window.__big serve the driver's 1,000,000-value runs, in which it
// stops a worker from outside the page (bigStart below).
import { createPSI, compileModule, dataStructure, suites } from '/js/index.mjs';
import { createPool, PoolError, workerPlan, isApplePlatform } from '/js/pool.mjs';

const results = [];
const info = {};
const out = document.getElementById('out');
const note = (s) => { out.textContent += `${s}\n`; };
function check(ok, name, detail = '') {
  results.push({ ok: !!ok, name, detail: String(detail) });
  note(`${ok ? 'ok' : 'FAIL'} ${name}${detail ? ` (${detail})` : ''}`);
}
async function checkRejects(name, run, test) {
  try {
    await run;
    check(false, name, 'did not reject');
  } catch (e) {
    check(test(e), name, `${e && e.name}: ${e && e.message}`);
  }
}

const base = new URL('/wasm/', location.href).href;
const load = { jsUrl: `${base}shardpsi.mjs`, wasmUrl: `${base}shardpsi.wasm` }; // strings: posted to workers
const eq = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
// The module, compiled once for the page's checks and the driver's 1,000,000-value runs.
let compiled = null;
const theModule = () => (compiled ??= compileModule({ wasmUrl: load.wasmUrl }));
// The length of a request of `values` from a new client pool of `workers` workers: after a
// failed pool, a new one must work.
async function freshRequestLength(module, workers, values) {
  const p = await createPool({ role: 'client', reveal: true, workers, module, load });
  try { return (await p.createRequest(values)).length; } finally { await p.close(); }
}
const now = () => performance.now();

const N = 2000;
const SERVER_IN = Array.from({ length: N }, (_, i) => `server-${i}`);
const CLIENT_IN = Array.from({ length: N }, (_, i) => (i % 3 === 0 ? `server-${i}` : `client-${i}`));
const EXPECTED = CLIENT_IN.map((v, i) => [v, i]).filter(([v]) => v.startsWith('server-')).map(([, i]) => i);
const FPR = 1e-6;
// Bloom hits: every member of want, each index once, and at most two extras, all non-members.
const bloomHitsOk = (hits, want, cIn) => {
  const got = [...hits].sort((a, b) => a - b), extra = got.filter((i) => !want.includes(i));
  return new Set(got).size === got.length && want.every((i) => got.includes(i)) &&
    extra.length <= 2 && extra.every((i) => !cIn[i].startsWith('server-'));
};

async function main() {
  info.crossOriginIsolated = globalThis.crossOriginIsolated;
  info.sharedArrayBuffer = typeof SharedArrayBuffer;
  info.hardwareConcurrency = navigator.hardwareConcurrency;
  info.userAgent = navigator.userAgent;
  check(globalThis.crossOriginIsolated === false, 'page is not cross-origin isolated (no COOP/COEP)',
    `crossOriginIsolated=${globalThis.crossOriginIsolated}, typeof SharedArrayBuffer=${typeof SharedArrayBuffer}`);

  // The reference: one module instance in the page's main thread.
  let t = now();
  const psi = await createPSI(load);
  info.singleLoadMs = Math.round(now() - t);
  const sKey = psi.server.createWithNewKey(true);
  const cKey = psi.client.createWithNewKey(true);
  const skey = sKey.getPrivateKeyBytes(), ckey = cKey.getPrivateKeyBytes();
  t = now();
  const refRequest = cKey.createRequest(CLIENT_IN);
  const refSetup = sKey.createSetupMessage(FPR, N, SERVER_IN, dataStructure.GCS);
  const refResponse = sKey.processRequest(refRequest);
  const refHits = cKey.getIntersection(refSetup, refResponse).sort((a, b) => a - b);
  const singleMs = now() - t;
  info.single = { ms: Math.round(singleMs), valuesPerSec: Math.round((4 * N) / (singleMs / 1000)) };
  check(eq(refHits, EXPECTED), `single instance (page main thread): GCS round of ${N} values gives the expected intersection`,
    `${refHits.length} hits, ${info.single.valuesPerSec} values/s`);

  t = now();
  const module = await theModule();
  info.compileMs = Math.round(now() - t);

  info.pool = {};
  for (const workers of [1, 2, 4]) {
    const tag = `pool, ${workers} worker(s)`;
    let server, client;
    try {
      t = now();
      [server, client] = await Promise.all([
        createPool({ role: 'server', reveal: true, key: skey, workers, module, load }),
        createPool({ role: 'client', reveal: true, key: ckey, workers, module, load }),
      ]);
      const startMs = now() - t;
      check(server.workers === workers && client.workers === workers, `${tag}: started`, `${Math.round(startMs)} ms for both pools`);
      const times = {};
      t = now(); const request = await client.createRequest(CLIENT_IN); times.request = now() - t;
      t = now(); const setup = await server.createSetupMessage(FPR, N, SERVER_IN, dataStructure.GCS); times.setup = now() - t;
      t = now(); const response = await server.processRequest(request); times.response = now() - t;
      t = now(); const hits = (await client.getIntersection(setup, response)).sort((a, b) => a - b); times.intersection = now() - t;
      check(eq(request, refRequest), `${tag}: request of ${N} values byte for byte as the single instance`, `${request.length} bytes`);
      check(eq(setup, refSetup), `${tag}: GCS setup byte for byte as the single instance`, `${setup.length} bytes`);
      check(eq(response, refResponse), `${tag}: response byte for byte as the single instance`, `${response.length} bytes`);
      check(eq(hits, refHits), `${tag}: intersection equals the single instance's`, `${hits.length} hits`);
      const total = times.request + times.setup + times.response + times.intersection;
      const rate = (ms) => Math.round(N / (ms / 1000));
      info.pool[workers] = {
        startMs: Math.round(startMs),
        valuesPerSec: { request: rate(times.request), setup: rate(times.setup), response: rate(times.response),
          intersection: rate(times.intersection), round: Math.round((4 * N) / (total / 1000)) },
      };
    } catch (e) {
      check(false, `${tag}: round`, `${e && e.name}: ${e && e.message}`);
    } finally {
      if (server) await server.close();
      if (client) await client.close();
    }
  }

  // Every ciphersuite (PROTOCOL.md §16): a 2-worker pool against the page's single instance,
  // byte for byte, for raw, GCS and Bloom setups (reveal on), and the plain set intersection;
  // a Request of another suite is refused with PSI_E_SUITE_MISMATCH.
  {
    const n = 500, sIn = SERVER_IN.slice(0, n), cIn = CLIENT_IN.slice(0, n);
    const want = EXPECTED.filter((i) => i < n);
    const requests = {};
    for (const suite of suites) {
      const tag = `suite ${suite}, pool of 2 workers`;
      const opt = { suite };
      const s1 = psi.server.createWithNewKey(true, opt), c1 = psi.client.createWithNewKey(true, opt);
      let server, client;
      try {
        [server, client] = await Promise.all([
          createPool({ role: 'server', reveal: true, key: s1.getPrivateKeyBytes(), suite, workers: 2, module, load }),
          createPool({ role: 'client', reveal: true, key: c1.getPrivateKeyBytes(), suite, workers: 2, module, load }),
        ]);
        const request = await client.createRequest(cIn);
        requests[suite] = request;
        const response = await server.processRequest(request);
        let same = eq(request, c1.createRequest(cIn)) && eq(response, s1.processRequest(request));
        let hitsOk = true;
        for (const ds of Object.values(dataStructure)) {
          const setup = await server.createSetupMessage(FPR, n, sIn, ds);
          same = same && eq(setup, s1.createSetupMessage(FPR, n, sIn, ds));
          const hits = await client.getIntersection(setup, response);
          same = same && eq(hits, c1.getIntersection(setup, response));
          // an openmined-p256 Bloom filter (psi.js's probes) may add non-members with a random
          // key (PROTOCOL.md §12.8 item 2: about one key in 70 at these sizes), never drop a
          // member; the other suites' filters (format 2, §7.4) probe k distinct bits: exact here
          const loose = ds === dataStructure.BloomFilter && suite === 'openmined-p256';
          hitsOk = hitsOk && (loose ? bloomHitsOk(hits, want, cIn) : eq([...hits].sort((a, b) => a - b), want));
        }
        check(server.suite === suite && same, `${tag}: request, raw/GCS/Bloom setups, response and intersections byte for byte as the single instance`);
        check(hitsOk, `${tag}: intersection equals the plain set comparison for every data structure`, `${want.length} hits`);
      } catch (e) {
        check(false, `${tag}: round`, `${e && e.name}: ${e && e.message}`);
      } finally {
        s1.delete(); c1.delete();
        if (server) await server.close();
        if (client) await client.close();
      }
    }
    const server = await createPool({ role: 'server', reveal: true, suite: 'ristretto255', workers: 2, module, load });
    try {
      await checkRejects('a p256-sswu Request to a ristretto255 pool: PSI_E_SUITE_MISMATCH', server.processRequest(requests['p256-sswu']),
        (e) => e && e.codeName === 'PSI_E_SUITE_MISMATCH' && e.code === -33);
    } finally { await server.close(); }
  }

  // Failures, with the pool's test hooks.
  {
    for (const k of [2, 0]) {
      const pool = await createPool({ role: 'client', workers: 3, module, load, _test: { starve: k } });
      await checkRejects(`worker ${k} out of memory (its wasm heap filled to the limit) fails the run, naming it`,
        pool.createRequest(CLIENT_IN), (e) => e instanceof PoolError &&
          new RegExp(`worker ${k} ran out of memory .*its wasm heap holds [0-9]+ MiB`).test(e.message));
      await pool.close();
    }
  }
  const freshPoolWorks = async (what) => {
    const len = await freshRequestLength(module, 3, CLIENT_IN.slice(0, 200));
    check(len > 200 * 33, `after ${what}: a new pool works`, `${len} bytes`);
  };
  {
    let raw;
    const pool = await createPool({ role: 'client', workers: 3, module, load, timeoutMs: 20000,
      _test: { hang: 2, onWorkers: (w) => { raw = w; } } });
    const run = pool.createRequest(CLIENT_IN);
    setTimeout(() => raw[2].terminate(), 200);
    t = now();
    await checkRejects('a helper terminated mid-run fails the run with a clear PoolError', run,
      (e) => e instanceof PoolError && /worker 2 exited \(terminated by the page\); the run failed/.test(e.message));
    info.terminateRejectMs = Math.round(now() - t);
    await checkRejects('after that, the pool rejects further calls', pool.createRequest(['x']),
      (e) => e instanceof PoolError && /has failed/.test(e.message));
    await pool.close();
    await freshPoolWorks('a terminated helper');
  }
  {
    const pool = await createPool({ role: 'client', workers: 3, module, load, timeoutMs: 20000, _test: { crash: 1 } });
    await checkRejects('a helper that throws fails the run (worker error event)', pool.createRequest(CLIENT_IN),
      (e) => e instanceof PoolError && /worker 1 threw: .*test hook: helper crashed/.test(e.message));
    await pool.close();
  }
  {
    const pool = await createPool({ role: 'client', workers: 3, module, load, timeoutMs: 2000, _test: { hang: 1 } });
    await checkRejects('a silent helper is named by the lead after half the progress timeout', pool.createRequest(CLIENT_IN),
      (e) => e instanceof PoolError && /worker 1 has not answered for 1000 ms, holding slice/.test(e.message));
    await pool.close();
  }
  // The shard policy as Chromium reports itself: the platform is not Apple's, the default
  // count is the plan's, and a set past the memory to plan for is refused up front.
  {
    const plan = workerPlan({ role: 'client' });
    check(!isApplePlatform(navigator) && plan.workers === Math.min(navigator.hardwareConcurrency, 4),
      'the policy in Chromium: a worker a core, at most 4', `${plan.workers} (${plan.reasons.join('; ')})`);
    info.deviceMemory = navigator.deviceMemory ?? null;
    const p = await createPool({ role: 'client', reveal: true, module, load });
    try {
      check(p.workers === p.plan.workers && p.workers === workerPlan({ role: 'client' }).workers,
        'createPool takes the policy\'s count by default', `${p.workers}`);
    } finally { await p.close(); }
    const q = await createPool({ role: 'client', reveal: true, module, load, memoryBytes: 96 * 1024 * 1024 });
    try {
      t = now();
      await checkRejects('a set past the memory to plan for is refused before any work', q.createRequest(new Array(1e6).fill('v')),
        (e) => e instanceof PoolError && /refused before any work/.test(e.message) && now() - t < 1000);
      const r = await q.createRequest(['a']);
      check(q.workers === 1 && r.length > 33, 'and the pool still works', `${q.workers} worker, ${r.length} bytes`);
    } finally { await q.close(); }
  }
  sKey.delete(); cKey.delete();
}

// A round of 1,000,000 client values on `workers` workers, for the driver (run-browser.mjs),
// which stops one of them from outside the page once window.__big.progress has grown.  The
// outcome lands in window.__big: { progress, done, ok, error, ms, silentMs (from the last
// progress the page heard to the end), after (a new pool's request length) }.
const bigValues = (n) => Array.from({ length: n }, (_, i) => `big-${i}@example.org`);
window.__bigStart = async ({ n = 1000000, workers = 2, timeoutMs = 20000 } = {}) => {
  const module = await theModule();
  const big = { progress: 0, done: false, ok: false, error: null, ms: 0, silentMs: 0, workers };
  let last = now();
  window.__big = big;
  const values = bigValues(n);
  const pool = await createPool({ role: 'client', reveal: true, workers, module, load, timeoutMs,
    _test: { onMessage: (m) => { if (m && m.type === 'progress') { big.progress++; last = now(); } } } });
  const t = now();
  pool.createRequest(values).then(() => { big.ok = true; }, (e) => {
    big.error = { name: e && e.name, message: e && e.message, isPoolError: e instanceof PoolError };
  }).finally(async () => {
    big.ms = Math.round(now() - t);
    big.silentMs = Math.round(now() - last);
    await pool.close();
    try { // and a new pool works after it
      big.after = await freshRequestLength(module, workers, values.slice(0, 1000));
    } catch (e) { big.after = `${e && e.name}: ${e && e.message}`; }
    big.done = true;
  });
};

main().catch((e) => check(false, 'page', `${e && e.name}: ${e && e.message}\n${e && e.stack}`))
  .finally(() => { window.__results = results; window.__info = info; window.__done = true; note('done'); });
