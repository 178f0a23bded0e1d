// The benchmark page (driven by ../bench-browser.mjs): values per second of createRequest and
// processRequest on N values in headless Chromium, for @openmined/psi.js 2.0.6 (its browser
// build, in this page's main thread), one shardpsi instance (main thread) and the shardpsi
// worker pool at 1, 2 and 4 workers.  Same keys and inputs everywhere; every message is
// compared with psi.js's bytes first.  Rounds are interleaved (each round runs every
// configuration once), so machine drift hits all alike; the best of the rounds is kept.
// Query: ?n=N&rounds=R&workers=LIST&slices=LIST (slicesPerWorker values to compare).  Results: window.__bench = { rows, info } or { error }.
import { createPSI, compileModule } from '/js/index.mjs';
import { createPool } from '/js/pool.mjs';

const q = new URLSearchParams(location.search);
const N = Number(q.get('n') || 10000);
const ROUNDS = Number(q.get('rounds') || 2);
const WORKERS = (q.get('workers') || '1,2,4').split(',').map(Number);
const SLICES = q.get('slices') ? q.get('slices').split(',').map(Number) : [undefined];
const out = document.getElementById('out');
const note = (s) => { out.textContent += `${s}\n`; };
const base = new URL('/wasm/', location.href).href;
const load = { jsUrl: `${base}shardpsi.mjs`, wasmUrl: `${base}shardpsi.wasm` };
const eq = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const now = () => performance.now();
const inputs = Array.from({ length: N }, (_, i) => `user-${i}@example.org`);
const SKEY = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
const CKEY = Uint8Array.from({ length: 32 }, (_, i) => 64 - i);

async function main() {
  if (typeof globalThis.PSI !== 'function') throw new Error('psi.js browser build not loaded (npm install in vectors/)');
  const om = await globalThis.PSI();
  const psi = await createPSI(load);
  const module = await compileModule({ wasmUrl: load.wasmUrl });

  // psi.js: request and response, its bytes the reference.
  const omServer = om.server.createFromKey(SKEY, true), omClient = om.client.createFromKey(CKEY, true);
  const configs = [
    ['psi.js 2.0.6', async () => ({
      request: async (xs) => omClient.createRequest(xs).serializeBinary(),
      response: async (r) => omServer.processRequest(om.request.deserializeBinary(r)).serializeBinary(),
      close: async () => { omServer.delete(); omClient.delete(); },
    })],
    ['shardpsi, 1 instance', async () => {
      const s = psi.server.createFromKey(SKEY, true), c = psi.client.createFromKey(CKEY, true);
      return { request: async (xs) => c.createRequest(xs), response: async (r) => s.processRequest(r),
        close: async () => { s.delete(); c.delete(); } };
    }],
  ];
  for (const workers of WORKERS) for (const slicesPerWorker of SLICES) {
    const tag = slicesPerWorker === undefined ? '' : `, ${slicesPerWorker} sl/w`;
    configs.push([`shardpsi pool, ${workers} worker(s)${tag}`, async () => {
      const s = await createPool({ role: 'server', reveal: true, key: SKEY.slice(), workers, module, load, slicesPerWorker });
      const c = await createPool({ role: 'client', reveal: true, key: CKEY.slice(), workers, module, load, slicesPerWorker });
      return { request: (xs) => c.createRequest(xs), response: (r) => s.processRequest(r),
        close: async () => { await s.close(); await c.close(); } };
    }]);
  }
  const parties = [];
  for (const [name, make] of configs) {
    const p = await make();
    await p.response(await p.request(inputs.slice(0, 200))); // warm-up, untimed
    parties.push({ name, p, best: { request: Infinity, response: Infinity } });
  }
  let refRequest = null, refResponse = null;
  for (let round = 0; round < ROUNDS; round++) {
    for (const x of parties) {
      let t = now();
      const request = await x.p.request(inputs);
      x.best.request = Math.min(x.best.request, now() - t);
      t = now();
      const response = await x.p.response(request);
      x.best.response = Math.min(x.best.response, now() - t);
      if (!refRequest) { refRequest = request; refResponse = response; }
      if (!eq(request, refRequest) || !eq(response, refResponse)) throw new Error(`${x.name}: messages differ from psi.js's`);
      note(`round ${round + 1}: ${x.name} done`);
    }
  }
  for (const x of parties) await x.p.close();
  const rate = (ms) => Math.round(N / (ms / 1000));
  const rows = parties.map((x) => ({ name: x.name, request: rate(x.best.request), response: rate(x.best.response) }));
  return { rows, info: { n: N, rounds: ROUNDS, userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency,
    crossOriginIsolated: globalThis.crossOriginIsolated } };
}

main().then((r) => { window.__bench = r; }, (e) => { window.__bench = { error: `${e && e.name}: ${e && e.message}` }; })
  .finally(() => { window.__done = true; });
