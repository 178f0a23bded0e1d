// The memory of the page and of each pool worker while one party runs its steps, from the
// browser's own report: performance.measureUserAgentSpecificMemory (the page is served
// cross-origin isolated, and memory-browser.mjs starts Chromium with ForceEagerMeasureMemory
// so that each report comes at once).
// ?role=server|client&n=N&workers=W&fpr=F[&memory=B][&peer=node]
// (memory: the bytes the measured pool plans for, in place of what the browser reports).
// The measured party is a pool of W workers.  The other party (peer=node) runs in the
// bench's process and its messages come and go by fetch, or (the default) is a pool of one
// worker in this page whose script URL carries "?peer", so that its worker is told apart
// in the report and left out; the page then holds both parties' inputs.
// The peer stands in for a party that runs elsewhere: it plans for unbounded memory (its
// wasm heap's bound stays), so that the policy refuses only what the measured party would.
import { compileModule } from '/js/index.mjs';
import { createPool } from '/js/pool.mjs';
import { serverValues, clientValues } from './inputs.mjs';

const q = new URLSearchParams(location.search);
const N = Number(q.get('n'));
const ROLE = q.get('role');
const WORKERS = Number(q.get('workers'));
const FPR = Number(q.get('fpr') || 1e-6);
const PEER = q.get('peer') || 'page';
const MEMORY = q.has('memory') ? { memoryBytes: Number(q.get('memory')) } : {};
const PEER_MEMORY = { memoryBytes: 2 ** 50 };
let step = 'start'; // the step under way, named in a failure and on the console as it starts
const begin = (name) => { step = name; console.log(`step: ${name}`); };
const peaks = { page: 0, total: 0, workers: [] }; // the measured steps' peaks, reported with a failure too
const base = new URL('/wasm/', location.href).href;
const load = { jsUrl: `${base}shardpsi.mjs`, wasmUrl: `${base}shardpsi.wasm` };
const PEER_URL = new URL('/js/pool-worker.mjs?peer', location.href);

// One report: the page's bytes, the measured workers' bytes (largest first), and the total.
async function report() {
  const r = await performance.measureUserAgentSpecificMemory();
  let page = 0;
  const workers = [];
  for (const b of r.breakdown) {
    const a = b.attribution && b.attribution[0];
    if (!a) continue;
    if (a.scope === 'Window') page += b.bytes;
    else if (a.scope === 'DedicatedWorkerGlobalScope' && !String(a.url).includes('?peer')) workers.push(b.bytes);
  }
  workers.sort((x, y) => y - x);
  return { page, workers, total: r.bytes };
}

// Runs step() while reporting every 250 ms; returns its value and the peaks.
async function measured(step, peaks) {
  let running = true;
  const loop = (async () => {
    while (running) {
      const m = await report();
      peaks.page = Math.max(peaks.page, m.page);
      peaks.total = Math.max(peaks.total, m.total);
      m.workers.forEach((b, i) => { peaks.workers[i] = Math.max(peaks.workers[i] ?? 0, b); });
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  try {
    return await step();
  } finally {
    running = false;
    await loop;
  }
}

// The other party.  peer=node: the bench's own process (memory-browser.mjs), reached by
// fetch as a real party would be over the network, so that the page holds only what the
// measured party holds; else a pool of one worker in this page.
async function makePeer(module) {
  if (PEER !== 'node') {
    const pool = await createPool({ role: ROLE === 'server' ? 'client' : 'server', reveal: true, workers: 1,
      module, load, workerUrl: PEER_URL, ...PEER_MEMORY });
    return {
      createRequest: (inputs) => pool.createRequest(inputs),
      createSetupMessage: (inputs) => pool.createSetupMessage(FPR, N, inputs),
      processRequest: (request) => pool.processRequest(request),
      count: async (setup, response) => (await pool.getIntersection(setup, response)).length,
      close: () => pool.close(),
    };
  }
  const answer = async (r, name) => {
    if (!r.ok) throw new Error(`the peer's ${name}: ${await r.text()}`);
    return new Uint8Array(await r.arrayBuffer());
  };
  const get = async (name) => answer(await fetch(`/peer/${name}`), name);
  // A Blob, not the bytes: with the DevTools protocol's network events on (the driver's), a
  // POST of a 25 MiB Uint8Array took the renderer 380 MiB above its size for a moment (the
  // body copied into the event), a Blob of it 23.
  const post = async (name, body) => answer(await fetch(`/peer/${name}`, { method: 'POST', body: new Blob([body]) }), name);
  return {
    createRequest: () => get('request'),
    createSetupMessage: () => get('setup'),
    processRequest: async (request) => { await post('request', request); return get('response'); },
    count: async (setup, response) => {
      await post('setup', setup);
      await post('response', response);
      return Number(new TextDecoder().decode(await get('hits')));
    },
    close: async () => {},
  };
}

async function main() {
  if (!crossOriginIsolated || typeof performance.measureUserAgentSpecificMemory !== 'function') {
    throw new Error('performance.measureUserAgentSpecificMemory is not available (not cross-origin isolated?)');
  }
  const module = await compileModule({ wasmUrl: load.wasmUrl });
  begin('making the inputs');
  const own = PEER === 'node' ? [ROLE] : ['server', 'client']; // whose inputs this page holds
  const serverIn = own.includes('server') ? serverValues(N) : null;
  const clientIn = own.includes('client') ? clientValues(N) : null;
  const rest = await report();
  const t0 = performance.now();
  let hits, wasmHeaps; // the measured pool's wasm heaps at its end (a heap only grows)
  begin('starting the pools');
  if (ROLE === 'server') {
    const server = await createPool({ role: 'server', reveal: true, workers: WORKERS, module, load, ...MEMORY });
    const peer = await makePeer(module);
    begin('the measured setup');
    const setup = await measured(() => server.createSetupMessage(FPR, N, serverIn), peaks);
    begin('the peer\'s request');
    const request = await peer.createRequest(clientIn);
    begin('the measured response');
    const response = await measured(() => server.processRequest(request), peaks);
    begin('the peer\'s intersection');
    hits = await peer.count(setup, response);
    begin('closing');
    wasmHeaps = (await server.memoryUsage()).wasmHeapBytes;
    await server.close();
    await peer.close();
  } else {
    const client = await createPool({ role: 'client', reveal: true, workers: WORKERS, module, load, ...MEMORY });
    const peer = await makePeer(module);
    begin('the peer\'s setup');
    const setup = await peer.createSetupMessage(serverIn);
    begin('the measured request');
    const request = await measured(() => client.createRequest(clientIn), peaks);
    begin('the peer\'s response');
    const response = await peer.processRequest(request);
    begin('the measured intersection');
    hits = (await measured(() => client.getIntersection(setup, response), peaks)).length;
    begin('closing');
    wasmHeaps = (await client.memoryUsage()).wasmHeapBytes;
    await client.close();
    await peer.close();
  }
  return { role: ROLE, n: N, workers: WORKERS, hits, seconds: (performance.now() - t0) / 1000, rest, peaks, wasmHeaps };
}

main().then((r) => { window.__result = r; },
  (e) => { window.__result = { step, peaks, error: `${e && e.name}: ${e && e.message}` }; })
  .finally(() => { window.__done = true; });
