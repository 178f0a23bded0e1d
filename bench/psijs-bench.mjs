#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// The psi.js column of `shardpsi bench` (bench/bench_cmd_psijs.c starts it once):
//
//   node --expose-gc bench/psijs-bench.mjs SERVER_FILE CLIENT_FILE
//
// Loads @openmined/psi.js 2.0.6 from vectors/node_modules with the loader the vector
// generators use (vectors/psijs-common.mjs: resolved with createRequire from vectors/, version
// and integrity checked), reads one value a line from each file, makes a server and a client
// with fresh keys and reveal on (untimed), prints {"ready":true,...} and then answers each line
// of standard input with exactly one JSON line:
//
//   run OP   {"op":OP,"seconds":S,"values":N,"peak_mib":M|null,"count":K}, or {"op":OP,"error":E}
//   quit     exits; so does the end of the input
//
// OP is one of `shardpsi bench`'s operations; each keeps its output for the later ones, as on the
// C side: setup_raw and setup_gcs (createSetupMessage, fpr 1e-6 for N client inputs), request
// (createRequest), response (processRequest of the kept request), intersection (getIntersection
// against the GCS setup) and association.  psi.js has no association table, so association
// times getIntersection against the raw setup: the same unmasking and matching, without the
// pairs.  N is the client's value count; K is the result's length for intersection and
// association, else the output message's length in bytes.  Each timed call includes
// serializing its output and deserializing its inputs, because the C side reads and writes
// wire bytes too.  peak_mib is VmHWM after the call minus VmRSS before it, after gc() and a
// reset of VmHWM through /proc/self/clear_refs; null where that file cannot be written.
// If psi.js cannot be loaded, the first line is {"error":...} and the exit status 3.
// This source file is ASCII only.
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

const FPR = 1e-6;

const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

function readValues(file) {
  const values = readFileSync(file, 'utf8').split('\n');
  if (values.length > 0 && values[values.length - 1] === '') values.pop(); // the last newline
  return values;
}

// ------------------------------------------------------------------------- memory (Linux)

function statusKib(field) {
  const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${field}:\\s+(\\d+)`, 'm'));
  return m ? Number(m[1]) : null;
}

// Returns the RSS in KiB after resetting the peak to it, or null if the peak cannot be reset.
function memBegin() {
  if (typeof globalThis.gc === 'function') globalThis.gc(); // garbage of earlier ops is not this op's
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    return null;
  }
  return statusKib('VmRSS');
}

function memEnd(base) {
  const hwm = base === null ? null : statusKib('VmHWM');
  return hwm === null ? null : Math.max(0, hwm - base) / 1024;
}

// ------------------------------------------------------------------------------ the ops

function makeOps(psi, server, client, serverValues, clientValues) {
  const kept = {};
  const need = (name, op) => {
    if (!kept[name]) throw new Error(`run ${name} before ${op}`);
    return kept[name];
  };
  const setup = (name, ds) => () => {
    kept[name] = server.createSetupMessage(FPR, clientValues.length, serverValues, ds).serializeBinary();
    return kept[name].length;
  };
  const match = (setupName, op) => () => {
    const st = psi.serverSetup.deserializeBinary(need(setupName, op));
    return client.getIntersection(st, psi.response.deserializeBinary(need('response', op))).length;
  };
  return {
    setup_raw: setup('setup_raw', psi.dataStructure.Raw),
    setup_gcs: setup('setup_gcs', psi.dataStructure.GCS),
    request: () => {
      kept.request = client.createRequest(clientValues).serializeBinary();
      return kept.request.length;
    },
    response: () => {
      const req = psi.request.deserializeBinary(need('request', 'response'));
      kept.response = server.processRequest(req).serializeBinary();
      return kept.response.length;
    },
    intersection: match('setup_gcs', 'intersection'),
    association: match('setup_raw', 'association'),
  };
}

function runOp(ops, op, values) {
  if (!Object.hasOwn(ops, op)) return { op, error: `unknown op '${op}'` };
  try {
    const base = memBegin();
    const t0 = performance.now();
    const count = ops[op]();
    const seconds = (performance.now() - t0) / 1000;
    return { op, seconds, values, peak_mib: memEnd(base), count };
  } catch (e) {
    return { op, error: String(e && e.message ? e.message : e) };
  }
}

// ------------------------------------------------------------------------------- main

async function load(files) {
  if (files.length !== 2) throw new Error('usage: psijs-bench.mjs SERVER_FILE CLIENT_FILE');
  const { loadPsi } = await import(new URL('../vectors/psijs-common.mjs', import.meta.url).href);
  const psi = await loadPsi();
  return { psi, serverValues: readValues(files[0]), clientValues: readValues(files[1]) };
}

async function main() {
  let loaded;
  try {
    loaded = await load(process.argv.slice(2));
  } catch (e) {
    say({ error: `psi.js: ${e && e.message ? e.message : e}` });
    process.exitCode = 3;
    return;
  }
  const { psi, serverValues, clientValues } = loaded;
  const server = psi.server.createWithNewKey(true);
  const client = psi.client.createWithNewKey(true);
  const ops = makeOps(psi, server, client, serverValues, clientValues);
  say({ ready: true, node: process.version, psijs: psi.package.version,
        server: serverValues.length, client: clientValues.length });
  try {
    for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
      const words = line.trim().split(/\s+/);
      if (words[0] === 'quit') break;
      if (words[0] === 'run' && words.length === 2) say(runOp(ops, words[1], clientValues.length));
      else say({ error: `unknown command '${line.trim()}' (run OP or quit)` });
    }
  } finally {
    server.delete();
    client.delete();
  }
}

main();
