#!/usr/bin/env node
// Values per second of createRequest and processRequest in Node: @openmined/psi.js 2.0.6
// (from vectors/node_modules, loaded and checked as vectors/psijs-common.mjs does), one
// shardpsi wasm instance (js/index.mjs) and the shardpsi worker pool (js/pool.mjs) at 2 and 4
// workers, in the same process; and the ceiling of the machine at that moment: two 1-worker
// pools running at once, each on half the values.  Same keys and inputs everywhere; every message is compared
// with the first configuration's bytes.  Rounds are interleaved (each round runs every
// configuration once), so machine drift hits all alike; the best of the rounds is kept.
//   node wasm/bench/bench-node.mjs [--values N] [--rounds R] [--workers LIST] [--json]
// --workers: comma-separated pool sizes (default 2,4).  SHARDPSI_WASM_DIR picks the build.
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createPSI, compileModule } from '../js/index.mjs';
import { createPool } from '../js/pool.mjs';

function parseArgs(argv) {
  const o = { values: 10000, rounds: 2, workers: [2, 4], json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1] ?? '';
    if (a === '--json') o.json = true;
    else if ((a === '--values' || a === '--rounds') && /^[1-9][0-9]*$/.test(v)) { o[a.slice(2)] = Number(v); i++; }
    else if (a === '--workers' && /^[1-9][0-9]*(,[1-9][0-9]*)*$/.test(v)) { o.workers = v.split(',').map(Number); i++; }
    else throw new Error(`usage: bench-node.mjs [--values N] [--rounds R] [--workers LIST] [--json] (bad argument '${a}')`);
  }
  return o;
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

async function loadOpenMined() {
  if (!existsSync(new URL('../../vectors/node_modules/@openmined/psi.js/package.json', import.meta.url))) {
    console.error('bench-node: @openmined/psi.js is not installed in vectors/ (scripts/setup-js.sh); skipping it');
    return null;
  }
  return (await import(new URL('../../vectors/psijs-common.mjs', import.meta.url).href)).loadPsi();
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const ours = await createPSI();
  const module = await compileModule();
  const om = await loadOpenMined();
  const SKEY = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
  const CKEY = Uint8Array.from({ length: 32 }, (_, i) => 64 - i);
  const inputs = Array.from({ length: o.values }, (_, i) => `user-${i}@example.org`);

  const configs = [];
  if (om) {
    configs.push([`@openmined/psi.js ${om.package.version}`, async () => {
      const s = om.server.createFromKey(SKEY, true), c = om.client.createFromKey(CKEY, true);
      return { request: async (xs) => c.createRequest(xs).serializeBinary(),
        response: async (r) => s.processRequest(om.request.deserializeBinary(r)).serializeBinary(),
        close: async () => { s.delete(); c.delete(); } };
    }]);
  }
  configs.push([`shardpsi ${ours.package.version}, 1 instance`, async () => {
    const s = ours.server.createFromKey(SKEY, true), c = ours.client.createFromKey(CKEY, true);
    return { request: async (xs) => c.createRequest(xs), response: async (r) => s.processRequest(r),
      close: async () => { s.delete(); c.delete(); } };
  }]);
  for (const workers of o.workers) {
    configs.push([`shardpsi pool, ${workers} workers`, async () => {
      const s = await createPool({ role: 'server', reveal: true, key: SKEY.slice(), workers, module });
      const c = await createPool({ role: 'client', reveal: true, key: CKEY.slice(), workers, module });
      return { request: (xs) => c.createRequest(xs), response: (r) => s.processRequest(r),
        close: async () => { await s.close(); await c.close(); } };
    }]);
  }
  // The ceiling: two 1-worker pools at once, each on half the values (share-nothing
  // parallelism with the same machinery; two messages, so no byte check).
  configs.push(['ceiling: 2 x 1 worker, half each', async () => {
    const open = async (role, key) => Promise.all([0, 1].map(() => createPool({ role, reveal: true, key: key.slice(), workers: 1, module })));
    const s = await open('server', SKEY), c = await open('client', CKEY);
    const half = (n) => [0, n >> 1, n];
    return { ceiling: true,
      request: async (xs) => { const h = half(xs.length); return Promise.all([0, 1].map((i) => c[i].createRequest(xs.slice(h[i], h[i + 1])))); },
      response: async (rs) => Promise.all(rs.map((r, i) => s[i].processRequest(r))),
      close: async () => { for (const p of [...s, ...c]) await p.close(); } };
  }]);
  const parties = [];
  for (const [name, make] of configs) {
    const p = await make();
    await p.response(await p.request(inputs.slice(0, 200))); // warm-up, untimed
    parties.push({ name, p, best: { request: Infinity, response: Infinity } });
  }
  let ref = null;
  try {
    for (let round = 0; round < o.rounds; round++) {
      for (const x of parties) {
        let t = performance.now();
        const request = await x.p.request(inputs);
        x.best.request = Math.min(x.best.request, performance.now() - t);
        t = performance.now();
        const response = await x.p.response(request);
        x.best.response = Math.min(x.best.response, performance.now() - t);
        if (x.p.ceiling) continue;
        ref = ref || { request, response };
        if (!same(request, ref.request) || !same(response, ref.response)) throw new Error(`${x.name}: messages differ from ${parties[0].name}'s`);
      }
    }
  } finally {
    for (const x of parties) await x.p.close();
  }
  const rate = (ms) => Math.round(o.values / (ms / 1000));
  const rows = parties.map((x) => ({ name: x.name, request: rate(x.best.request), response: rate(x.best.response) }));
  const info = { values: o.values, rounds: o.rounds, node: process.versions.node };
  if (o.json) { console.log(JSON.stringify({ rows, info }, null, 2)); return; }
  const omRow = om ? rows[0] : null, one = rows[om ? 1 : 0];
  console.log(`# Node ${info.node}, ${o.values} values, best of ${o.rounds} interleaved rounds; messages identical in every configuration`);
  console.log(`configuration                     request/s${om ? '  x psi.js' : ''}  x 1 inst.   response/s${om ? '  x psi.js' : ''}  x 1 inst.`);
  for (const x of rows) {
    const f = (op) => `${String(x[op]).padStart(10)}${om ? `  ${(x[op] / omRow[op]).toFixed(2).padStart(7)}x` : ''}  ${(x[op] / one[op]).toFixed(2).padStart(8)}x`;
    console.log(`${x.name.padEnd(32)}${f('request')}   ${f('response')}`);
  }
}

main().catch((e) => { console.error(`bench-node: ${e.message || e}`); process.exitCode = 1; });
