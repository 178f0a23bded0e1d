#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// Writes fresh random known-answer wire vectors straight from @openmined/psi.js 2.0.6, in the
// format of openmined-psi-2.0.6.json ("psi-wire-vectors/1"). Used to show that
// `psi vectors check` passes unseen psi.js files, not only the committed one.
//
//   cd vectors && node generate-random.mjs [--seed S] [--cases K] [--out FILE]
//
//   --seed S   letters, digits, '.', '_', '-' (default: the clock in milliseconds; printed)
//   --cases K  number of cases, 1..10000 (default 40, about a minute)
//   --out F    output file (default <tmpdir>/psi-random-<seed>.json). Never commit it.
//
// A given seed always gives the same file. Keys are SHA-256("shardpsi-random/<seed>/<i>/server")
// (and ".../client"); inputs come from a SHA-256 counter-mode generator seeded with
// "shardpsi-random/<seed>/<i>/inputs". Every case goes through generate.mjs's runCase(): psi.js
// produces every message, intersection and size, and the same validation applies. Any failed
// check stops the run with a non-zero exit status and no output file.
//
// This source file is ASCII only.

import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { check, runMain, derivedKey, loadPsi, writeJson, sizeHashTime, VectorError } from './psijs-common.mjs';
import {
  FORMAT, GENERATOR, Rng, ident, asciiString, randomUnicode, UNICODE_FIXED, NUL_FIXED, DSS, mode,
  stats, runCase, selfTestHashToCurve,
} from './generate.mjs';

const PREFIX = 'shardpsi-random/';
const FPRS = [1e-9, 1e-6, 0.001, 0.01, 0.1, 0.5];

function usageError(msg) {
  throw new VectorError(`${msg}\nusage: node generate-random.mjs [--seed S] [--cases K] [--out FILE]`);
}

function parseOptions() {
  let values;
  try {
    ({ values } = parseArgs({
      options: { seed: { type: 'string' }, cases: { type: 'string' }, out: { type: 'string' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    usageError(e.message);
  }
  const seed = values.seed ?? String(Date.now());
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(seed)) usageError(`bad --seed ${JSON.stringify(seed)}`);
  const cases = values.cases === undefined ? 40 : Number(values.cases);
  if (!Number.isInteger(cases) || cases < 1 || cases > 10000) usageError(`bad --cases ${values.cases}`);
  const out = path.resolve(values.out ?? path.join(os.tmpdir(), `psi-random-${seed}.json`));
  return { seed, cases, out };
}

// ---------------------------------------------------------------------------------------
// Random inputs

// One random value: identifiers, ASCII of random length (including ""), random Unicode, the
// fixed Unicode and U+0000 corner cases of generate.mjs, mixtures, and a few long values.
function randomValue(r) {
  const k = r.below(100);
  if (k < 30) return ident(r);
  if (k < 52) return asciiString(r, r.below(41));
  if (k < 57) return '';
  if (k < 70) return randomUnicode(r, r.range(1, 12));
  if (k < 77) return r.pick(UNICODE_FIXED);
  if (k < 82) return r.pick(NUL_FIXED);
  if (k < 90) return asciiString(r, r.below(8)) + r.pick(UNICODE_FIXED) + asciiString(r, r.below(8));
  if (k < 96) return `Element ${r.below(2000)}`;
  return r.below(2) ? asciiString(r, r.range(100, 2000)) : randomUnicode(r, r.range(50, 500));
}
function distinctValues(r, count, taken) {
  const out = [];
  while (out.length < count) {
    const s = randomValue(r);
    if (!taken.has(s)) {
      taken.add(s);
      out.push(s);
    }
  }
  return out;
}

// Set sizes: mostly 0..300, sometimes 0..3 (empty sets and singletons), sometimes up to 1000.
function setSize(r) {
  const k = r.below(20);
  if (k === 0) return r.below(4);
  if (k === 1) return r.range(300, 1000);
  return r.below(301);
}

// A side of `size` elements holding `distinct` of them once each plus repeats; repeats favour
// the shared values, so duplicated values are often also in the intersection.
function withRepeats(r, distinct, shared, size) {
  const out = distinct.slice();
  while (out.length < size) out.push(shared.length && r.below(2) ? r.pick(shared) : r.pick(distinct));
  return r.shuffle(out);
}

function makeInputs(r) {
  const ns = setSize(r);
  const nc = setSize(r);
  // copies beyond the first occurrence: at least one per side when the side has 2+ elements
  const dS = ns - (ns >= 2 ? r.range(1, ns >> 1) : 0);
  const dC = nc - (nc >= 2 ? r.range(1, nc >> 1) : 0);
  const common = r.below(Math.min(dS, dC) + 1);
  const taken = new Set();
  const shared = distinctValues(r, common, taken);
  const sOnly = distinctValues(r, dS - common, taken);
  const cOnly = distinctValues(r, dC - common, taken);
  return {
    server: withRepeats(r, [...shared, ...sOnly], shared, ns),
    client: withRepeats(r, [...shared, ...cOnly], shared, nc),
  };
}

// ---------------------------------------------------------------------------------------
// Case list: every (data structure, reveal) pair equally often, in a seeded order.

function buildCases(seed, count) {
  const plan = new Rng(`${seed}/plan`, PREFIX);
  const combos = [];
  for (let i = 0; i < count; i++) combos.push(i % (DSS.length * 2));
  const order = plan.shuffle(combos);
  const width = String(count - 1).length;
  const cases = [];
  for (let i = 0; i < count; i++) {
    const ds = DSS[order[i] >> 1];
    const reveal = (order[i] & 1) === 0;
    const r = new Rng(`${seed}/${i}/inputs`, PREFIX);
    const { server, client } = makeInputs(r);
    const fpr = r.pick(FPRS);
    const minNc = ds === 'raw' ? 0 : 1;
    // num_client_inputs: usually the client count; sometimes larger or smaller, and smaller
    // means a larger per-element fpr, so GCS and Bloom false positives (Raw ignores it)
    const k = r.below(20);
    const nc = k < 14 ? Math.max(client.length, minNc)
      : k < 17 ? r.range(minNc, 2 * client.length + 10)
        : r.range(minNc, Math.max(minNc, client.length >> 3));
    const name = `random-${seed}/${String(i).padStart(width, '0')}/${ds}/${mode(reveal)}`;
    cases.push({
      name,
      serverKey: derivedKey(`${PREFIX}${seed}/${i}/server`),
      clientKey: derivedKey(`${PREFIX}${seed}/${i}/client`),
      reveal,
      ds,
      fpr,
      nc,
      server,
      client,
      responseIsHash: false,
    });
  }
  return cases;
}

// ---------------------------------------------------------------------------------------

async function main() {
  const t0 = process.hrtime.bigint();
  const opt = parseOptions();
  console.log(`seed ${opt.seed}, ${opt.cases} cases (reproduce: node generate-random.mjs --seed ${opt.seed} --cases ${opt.cases})`);
  selfTestHashToCurve();
  const psi = await loadPsi();
  const DS = { raw: psi.dataStructure.Raw, gcs: psi.dataStructure.GCS, bloom_filter: psi.dataStructure.BloomFilter };

  const cases = buildCases(opt.seed, opt.cases);
  const names = new Set(cases.map((c) => c.name));
  check(names.size === cases.length, 'duplicate case name');
  const out = { format: FORMAT, generator: GENERATOR, cases: cases.map((c) => runCase(psi, DS, c)) };
  const text = writeJson(opt.out, out);

  const nIn = cases.reduce((a, c) => a + c.server.length + c.client.length, 0);
  const maxIn = cases.reduce((a, c) => Math.max(a, c.server.length, c.client.length), 0);
  const dupSides = cases.reduce((a, c) => a + (new Set(c.server).size < c.server.length) + (new Set(c.client).size < c.client.length), 0);
  console.log(`${opt.out}: ${cases.length} cases, ${sizeHashTime(text, t0)}`);
  console.log(`inputs: ${nIn} in all, largest set ${maxIn}, ${dupSides} of ${2 * cases.length} sets with duplicates`);
  console.log(`false positives across reveal cases: ${stats.falsePositives}`);
}

runMain('generate-random.mjs', main);
