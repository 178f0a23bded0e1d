#!/usr/bin/env node
// Values per second of createSetupMessage (GCS), createRequest, processRequest and
// getIntersection in Node: @openmined/psi.js 2.0.6
// (from vectors/node_modules, loaded and checked as vectors/psijs-common.mjs does), one
// shardpsi wasm instance (js/index.mjs) and the shardpsi worker pool (js/pool.mjs) at 2 and 4
// workers, in the same process; and the ceiling of the machine at that moment: two 1-worker
// pools running at once, each on half the values.  Same keys and inputs everywhere; every message is compared
// with the first configuration's bytes.  Rounds are interleaved (each round runs every
// configuration once), so machine drift hits all alike; the best of the rounds is kept.
//   node wasm/bench/bench-node.mjs [--values N] [--rounds R] [--workers LIST] [--slices LIST] [--suites LIST|all] [--no-psijs] [--json]
// --workers: comma-separated pool sizes (default 2,4); --slices: comma-separated slicesPerWorker
// values to compare (default: the pool's default).  SHARDPSI_WASM_DIR picks the build.
// --suites: comma-separated ciphersuites (PROTOCOL.md §16; 'all' = openmined-p256,p256-sswu,
// ristretto255): one wasm instance (one thread) per suite, in the same interleaved rounds, plus
// psi.js (openmined-p256 only) unless --no-psijs, and pools only with an explicit --workers; no
// ceiling.  Messages are compared within a suite (each suite has its own bytes).
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createPSI, compileModule, suites as SUITES } from '../js/index.mjs';
import { createPool } from '../js/pool.mjs';

function parseArgs(argv) {
  const o = { values: 10000, rounds: 2, workers: [2, 4], slices: [undefined], json: false, suites: null };
  let workersGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1] ?? '';
    if (a === '--json') o.json = true;
    else if (a === '--no-psijs') o.noPsijs = true;
    else if ((a === '--values' || a === '--rounds') && /^[1-9][0-9]*$/.test(v)) { o[a.slice(2)] = Number(v); i++; }
    else if (a === '--workers' && /^[1-9][0-9]*(,[1-9][0-9]*)*$/.test(v)) { o.workers = v.split(',').map(Number); workersGiven = true; i++; }
    else if (a === '--suites' && (v === 'all' || (v !== '' && v.split(',').every((x) => SUITES.includes(x))))) {
      o.suites = v === 'all' ? [...SUITES] : v.split(','); i++;
    }
    else if (a === '--slices' && /^[1-9][0-9]*(,[1-9][0-9]*)*$/.test(v)) { o.slices = v.split(',').map(Number); i++; }
    else throw new Error(`usage: bench-node.mjs [--values N] [--rounds R] [--workers LIST] [--slices LIST] [--suites LIST|all] [--no-psijs] [--json] (bad argument '${a}')`);
  }
  if (o.suites && !workersGiven) o.workers = [];
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
  const suiteMode = o.suites !== null;
  const suiteList = suiteMode ? o.suites : [undefined];
  const om = o.noPsijs || (suiteMode && !suiteList.includes('openmined-p256')) ? null : await loadOpenMined();
  const SKEY0 = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
  const CKEY0 = Uint8Array.from({ length: 32 }, (_, i) => 64 - i);
  // ristretto255 keys are little-endian and below l < 2^253: the same bytes with a small top byte
  const keyOf = (k, suite) => { const c = k.slice(); if (suite === 'ristretto255') c[31] = 0x01; return c; };
  const suiteTag = (suite) => (suiteMode ? `${suite}: ` : '');
  const inputs = Array.from({ length: o.values }, (_, i) => `user-${i}@example.org`);
  // the server holds every other client value, and as many of its own
  const serverInputs = inputs.map((v, i) => (i % 2 ? `server-only-${i}@example.org` : v));
  const GCS = 1, FPR = 1e-6;

  const configs = []; // [name, make, suite]
  if (om) {
    const SKEY = SKEY0, CKEY = CKEY0;
    configs.push([`${suiteTag('openmined-p256')}@openmined/psi.js ${om.package.version}`, async () => {
      const s = om.server.createFromKey(SKEY, true), c = om.client.createFromKey(CKEY, true);
      return {
        setup: async (xs) => s.createSetupMessage(FPR, o.values, xs, om.dataStructure.GCS).serializeBinary(),
        request: async (xs) => c.createRequest(xs).serializeBinary(),
        response: async (r) => s.processRequest(om.request.deserializeBinary(r)).serializeBinary(),
        intersection: async (st, r) => c.getIntersection(om.serverSetup.deserializeBinary(st), om.response.deserializeBinary(r)),
        close: async () => { s.delete(); c.delete(); },
      };
    }, suiteMode ? 'openmined-p256' : undefined]);
  }
  for (const suite of suiteList) {
    const SKEY = keyOf(SKEY0, suite), CKEY = keyOf(CKEY0, suite), opt = suite === undefined ? undefined : { suite };
    configs.push([`${suiteTag(suite)}shardpsi ${ours.package.version}, 1 instance`, async () => {
      const s = ours.server.createFromKey(SKEY, true, opt), c = ours.client.createFromKey(CKEY, true, opt);
      return {
        setup: async (xs) => s.createSetupMessage(FPR, o.values, xs, GCS),
        request: async (xs) => c.createRequest(xs), response: async (r) => s.processRequest(r),
        intersection: async (st, r) => c.getIntersection(st, r),
        close: async () => { s.delete(); c.delete(); },
      };
    }, suite]);
    for (const workers of o.workers) for (const slicesPerWorker of o.slices) {
      const tag = slicesPerWorker === undefined ? '' : `, ${slicesPerWorker} sl/w`;
      configs.push([`${suiteTag(suite)}shardpsi pool, ${workers} workers${tag}`, async () => {
        const s = await createPool({ role: 'server', reveal: true, key: SKEY.slice(), suite, workers, module, slicesPerWorker });
        const c = await createPool({ role: 'client', reveal: true, key: CKEY.slice(), suite, workers, module, slicesPerWorker });
        return {
          setup: (xs) => s.createSetupMessage(FPR, o.values, xs, GCS),
          request: (xs) => c.createRequest(xs), response: (r) => s.processRequest(r),
          intersection: (st, r) => c.getIntersection(st, r),
          close: async () => { await s.close(); await c.close(); },
        };
      }, suite]);
    }
  }
  const SKEY = SKEY0, CKEY = CKEY0;
  // The ceiling: two 1-worker pools at once, each on half the values (share-nothing
  // parallelism with the same machinery; two messages each time, so no byte check).
  if (!suiteMode) configs.push(['ceiling: 2 x 1 worker, half each', async () => {
    const open = async (role, key) => Promise.all([0, 1].map(() => createPool({ role, reveal: true, key: key.slice(), workers: 1, module })));
    const s = await open('server', SKEY), c = await open('client', CKEY);
    const halves = (xs) => [xs.slice(0, xs.length >> 1), xs.slice(xs.length >> 1)];
    return { ceiling: true,
      setup: async (xs) => Promise.all(halves(xs).map((h, i) => s[i].createSetupMessage(FPR, o.values >> 1, h, GCS))),
      request: async (xs) => Promise.all(halves(xs).map((h, i) => c[i].createRequest(h))),
      response: async (rs) => Promise.all(rs.map((r, i) => s[i].processRequest(r))),
      intersection: async (sts, rs) => Promise.all(rs.map((r, i) => c[i].getIntersection(sts[i], r))),
      close: async () => { for (const p of [...s, ...c]) await p.close(); } };
  }]);

  const OPS = ['setup', 'request', 'response', 'intersection'];
  const parties = [];
  for (const [name, make, suite] of configs) {
    const p = await make();
    const few = inputs.slice(0, 200);
    await p.intersection(await p.setup(few), await p.response(await p.request(few))); // warm-up, untimed
    parties.push({ name, p, suite, best: Object.fromEntries(OPS.map((op) => [op, Infinity])) });
  }
  const timed = async (x, op, f) => {
    const t = performance.now();
    const r = await f();
    x.best[op] = Math.min(x.best[op], performance.now() - t);
    return r;
  };
  const refs = new Map(); // suite -> the first configuration's { name, messages }
  try {
    for (let round = 0; round < o.rounds; round++) {
      for (const x of parties) {
        const setup = await timed(x, 'setup', () => x.p.setup(serverInputs));
        const request = await timed(x, 'request', () => x.p.request(inputs));
        const response = await timed(x, 'response', () => x.p.response(request));
        const hits = await timed(x, 'intersection', () => x.p.intersection(setup, response));
        if (x.p.ceiling) continue;
        const got = { setup, request, response, hits: Uint32Array.from(hits) };
        if (!refs.has(x.suite)) refs.set(x.suite, { name: x.name, got });
        const ref = refs.get(x.suite);
        for (const k of Object.keys(got)) {
          if (!same(got[k], ref.got[k])) throw new Error(`${x.name}: ${k} differs from ${ref.name}'s`);
        }
        if (hits.length !== o.values >> 1 && hits.length !== (o.values + 1) >> 1) throw new Error(`${x.name}: ${hits.length} hits`);
      }
    }
  } finally {
    for (const x of parties) await x.p.close();
  }
  const rate = (ms) => Math.round(o.values / (ms / 1000));
  const rows = parties.map((x) => ({ name: x.name, ...(suiteMode ? { suite: x.suite } : {}),
    ...Object.fromEntries(OPS.map((op) => [op, rate(x.best[op])])) }));
  const info = { values: o.values, rounds: o.rounds, node: process.versions.node, setup: 'GCS, fpr 1e-6', reveal: true };
  if (suiteMode) info.suites = suiteList;
  if (o.json) { console.log(JSON.stringify({ rows, info }, null, 2)); return; }
  if (suiteMode) {
    // one table: a row per configuration, values/s of each operation; x = ratio to the
    // openmined-p256 single instance when it ran
    const base = rows.find((x) => x.suite === 'openmined-p256' && /1 instance$/.test(x.name));
    console.log(`# Node ${info.node}, ${o.values} values (GCS setup, fpr 1e-6, reveal on), best of ${o.rounds} interleaved rounds; ` +
      'messages and intersections identical within each suite');
    const w = Math.max(...rows.map((x) => x.name.length)) + 2;
    console.log(`${'configuration'.padEnd(w)}${OPS.map((op) => op.padStart(base ? 20 : 13)).join('')}`);
    for (const x of rows) {
      console.log(`${x.name.padEnd(w)}${OPS.map((op) => (base
        ? `${x[op]} (${(x[op] / base[op]).toFixed(2)}x)`.padStart(20) : String(x[op]).padStart(13))).join('')}`);
    }
    return;
  }
  const omRow = om ? rows[0] : null, one = rows[om ? 1 : 0];
  console.log(`# Node ${info.node}, ${o.values} values (GCS setup), best of ${o.rounds} interleaved rounds; messages and intersections identical in every configuration`);
  console.log(`operation     configuration                      values/s${om ? '  x psi.js' : ''}  x 1 inst.`);
  for (const op of OPS) {
    for (const x of rows) {
      console.log(`${op.padEnd(14)}${x.name.padEnd(33)}${String(x[op]).padStart(9)}${om ? `  ${(x[op] / omRow[op]).toFixed(2).padStart(7)}x` : ''}  ${(x[op] / one[op]).toFixed(2).padStart(8)}x`);
    }
  }
}

main().catch((e) => { console.error(`bench-node: ${e.message || e}`); process.exitCode = 1; });
