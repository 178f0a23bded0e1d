#!/usr/bin/env node
// Values per second of createRequest and processRequest on 10,000 values: one
// shardpsi wasm instance (js/index.mjs) against @openmined/psi.js 2.0.6 (from
// vectors/node_modules, loaded and checked as vectors/psijs-common.mjs does),
// in the same Node process.  Both use the same keys and inputs, and their
// messages are compared byte for byte first.
//   node wasm/bench/bench-node.mjs [--values N] [--iters K] [--csv]
// Prints one line per library and operation (the best of K runs), or CSV rows
// "impl,op,values,best_s,values_per_s" with --csv.

import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createPSI } from '../js/index.mjs';

function parseArgs(argv) {
  const o = { values: 10000, iters: 2, csv: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--csv') o.csv = true;
    else if ((a === '--values' || a === '--iters') && /^[1-9][0-9]*$/.test(argv[i + 1] ?? '')) o[a.slice(2)] = Number(argv[++i]);
    else throw new Error(`usage: bench-node.mjs [--values N] [--iters K] [--csv] (bad argument '${a}')`);
  }
  return o;
}

const best = (k, fn) => {
  let t = Infinity, out;
  for (let i = 0; i < k; i++) {
    const t0 = performance.now();
    out = fn();
    t = Math.min(t, performance.now() - t0);
  }
  return { ms: t, out };
};
const toBytes = (m) => (m instanceof Uint8Array ? m : m.serializeBinary());
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

async function loadOpenMined() {
  const common = new URL('../../vectors/psijs-common.mjs', import.meta.url);
  if (!existsSync(new URL('../../vectors/node_modules/@openmined/psi.js/package.json', import.meta.url))) {
    console.error('bench-node: @openmined/psi.js is not installed in vectors/ (npm install --ignore-scripts there); skipping it');
    return null;
  }
  return (await import(common.href)).loadPsi();
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const ours = await createPSI();
  const om = await loadOpenMined();
  const serverKey = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
  const clientKey = Uint8Array.from({ length: 32 }, (_, i) => 64 - i);
  const inputs = Array.from({ length: o.values }, (_, i) => `user-${i}@example.com`);
  const libs = [[`shardpsi ${ours.package.version} (wasm, 1 instance)`, ours]];
  if (om) libs.push([`@openmined/psi.js ${om.package.version}`, om]);

  const rows = [], requests = [], responses = [];
  for (const [name, lib] of libs) {
    const client = lib.client.createFromKey(clientKey, true), server = lib.server.createFromKey(serverKey, true);
    try {
      client.createRequest(inputs.slice(0, 100)); // warm-up
      const req = best(o.iters, () => client.createRequest(inputs));
      const reqMsg = lib === om ? om.request.deserializeBinary(toBytes(req.out)) : req.out;
      const resp = best(o.iters, () => server.processRequest(reqMsg));
      requests.push(toBytes(req.out));
      responses.push(toBytes(resp.out));
      rows.push([name, 'createRequest', req.ms], [name, 'processRequest', resp.ms]);
    } finally { client.delete(); server.delete(); }
  }
  if (requests.length === 2 && !(same(requests[0], requests[1]) && same(responses[0], responses[1]))) {
    throw new Error('the two libraries gave different messages for the same keys and inputs');
  }
  if (o.csv) console.log('impl,op,values,best_s,values_per_s');
  for (const [name, op, ms] of rows) {
    const rate = Math.round(o.values / (ms / 1000));
    if (o.csv) console.log(`"${name}",${op},${o.values},${(ms / 1000).toFixed(3)},${rate}`);
    else console.log(`${name.padEnd(36)} ${op.padEnd(15)} ${o.values} values  ${(ms / 1000).toFixed(2).padStart(6)} s  ${String(rate).padStart(6)} values/s`);
  }
  if (requests.length === 2 && !o.csv) console.log('(requests and responses identical byte for byte; best of ' + o.iters + ' runs, Node ' + process.versions.node + ')');
}

main().catch((e) => { console.error(e.message || e); process.exitCode = 1; });
