#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// Generates shardpsi-extra.json: shardpsi's own known-answer cases for what psi.js cannot
// produce (format "shardpsi-extra-vectors/1", described in README.md):
//
//   association_cases  raw protocol runs made by psi.js, with the association table of
//                      PROTOCOL.md section 9.6 worked out here from the plaintext inputs;
//   rejection_cases    malformed keys, points, messages and parameters, each with the error
//                      PROTOCOL.md prescribes (the section is cited next to every case).
//
//   cd vectors && npm install --ignore-scripts && node generate-extra.mjs
//
// Nothing here uses shardpsi's C code. Messages come from psi.js 2.0.6, or are built from its
// messages by changing bytes, or are protobuf encoded by hand below. The output is deterministic
// (keys and inputs come from SHA-256 of fixed labels): two runs give byte-identical files.
// This source file is ASCII only; non-ASCII test strings are written with \u escapes.

import path from 'node:path';
import {
  HERE, PKG_NAME, PKG_VERSION, check, runMain, sha256, hex, fromHex, big, be32hex, cmpHex, sameJson,
  P, N, CURVE_B, modpow, derivedKey, CounterRng, loadPsi, elementsOf, withParties, writeJson, sizeHashTime,
} from './psijs-common.mjs';

const OUT_FILE = path.join(HERE, 'shardpsi-extra.json');
const FORMAT = 'shardpsi-extra-vectors/1';
const GENERATOR = `vectors/generate-extra.mjs with ${PKG_NAME} ${PKG_VERSION}`;

// ---------------------------------------------------------------------------------------
// Helpers (the ones shared with generate.mjs are in psijs-common.mjs)

// The P-256 generator (PROTOCOL.md section 1).
const GX = '6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296';
const GY = '4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5';

const curveRhs = (x) => (((x * x * x - 3n * x + CURVE_B) % P) + P) % P;
const isSquare = (t) => t === 0n || modpow(t, (P - 1n) / 2n, P) === 1n;

// Deterministic randomness: SHA-256 in counter mode over a label, one block per 32-bit word
// (its first 4 bytes).
class Rng extends CounterRng {
  constructor(label) {
    super('shardpsi-extra/' + label);
  }
  u32() {
    return this.block().readUInt32BE(0);
  }
}

// ---------------------------------------------------------------------------------------
// Protobuf encoding by hand (PROTOCOL.md section 10). Results are hex strings.

function varint(v) {
  let x = BigInt.asUintN(64, BigInt(v)); // negative numbers: 64-bit two's complement
  const out = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return Buffer.from(out).toString('hex');
}
const tag = (field, wt) => varint((BigInt(field) << 3n) | BigInt(wt));
const vfield = (field, v) => tag(field, 0) + varint(v);
const bfield = (field, h) => tag(field, 2) + varint(h.length / 2) + h;
const elements = (field, list) => list.map((e) => bfield(field, e)).join('');
const rawSetup = (list) => bfield(1, elements(1, list));
function gcsSetup({ div, hashRange, bits }) {
  let body = '';
  if (div !== undefined) body += vfield(1, div);
  if (hashRange !== undefined) body += vfield(2, hashRange);
  if (bits !== undefined) body += bfield(3, bits);
  return bfield(2, body);
}
function bloomSetup({ k, bits }) {
  let body = '';
  if (k !== undefined) body += vfield(1, k);
  if (bits !== undefined) body += bfield(2, bits);
  return bfield(3, body);
}
const request = (reveal, list) => (reveal ? vfield(1, 1) : '') + elements(2, list);
const response = (list) => elements(1, list);

// Decodes the repeated 33-byte elements of a message made only of `field` entries.
function elementsOfHex(h, field) {
  const b = Buffer.from(h, 'hex');
  const out = [];
  for (let i = 0; i < b.length; i += 35) {
    check(b[i] === ((field << 3) | 2) && b[i + 1] === 33, `unexpected message layout in ${h.slice(0, 40)}`);
    out.push(hex(b.subarray(i + 2, i + 35)));
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// psi.js runs

let psi; // the loaded library
let RAW; // psi.dataStructure.Raw

// The whole protocol with a raw setup, every message going through its bytes.
function runRaw(serverKey, clientKey, reveal, server, client, ds = RAW, fpr = 0.001, nc = 1) {
  return withParties(psi, serverKey, clientKey, reveal, (s, c) => {
    const setupBytes = s.createSetupMessage(fpr, nc, server, ds).serializeBinary();
    const reqBytes = c.createRequest(client).serializeBinary();
    const respBytes = s.processRequest(psi.request.deserializeBinary(reqBytes)).serializeBinary();
    const setup = psi.serverSetup.deserializeBinary(setupBytes);
    const resp = psi.response.deserializeBinary(respBytes);
    const out = { setup: hex(setupBytes), request: hex(reqBytes), response: hex(respBytes) };
    out.size = c.getIntersectionSize(setup, resp);
    if (reveal) out.intersection = c.getIntersection(setup, resp);
    return out;
  });
}

// The masked element s*H(x) of one value: psi.js's raw setup of the one-element set [x].
const maskCache = new Map();
function masked(serverKey, x) {
  const key = serverKey + '\u0000' + x;
  if (!maskCache.has(key)) {
    const s = psi.server.createFromKey(fromHex(serverKey), true);
    try {
      const setup = s.createSetupMessage(0.001, 1, [x], RAW);
      const list = elementsOf(setup.getRaw());
      check(list.length === 1 && /^0[23][0-9a-f]{64}$/.test(list[0]), 'one-element setup is not one point');
      maskCache.set(key, list[0]);
    } finally {
      s.delete();
    }
  }
  return maskCache.get(key);
}

// ---------------------------------------------------------------------------------------
// Association cases (PROTOCOL.md sections 7.1 and 9.6)

// perm[j] = server input index at setup position j: a stable sort by masked element.
function permutationOf(serverKey, server) {
  const m = server.map((x) => masked(serverKey, x));
  return server.map((_, i) => i).sort((a, b) => cmpHex(m[a], m[b]) || a - b);
}

// Brute force over the plaintext: each server index in ascending order takes the lowest
// client index with an equal value that is not used yet. Pairs come out ordered by server index.
function associationOf(server, client) {
  const used = new Set();
  const pairs = [];
  server.forEach((y, j) => {
    const i = client.findIndex((x, ci) => x === y && !used.has(ci));
    if (i >= 0) {
      used.add(i);
      pairs.push([i, j]);
    }
  });
  return pairs;
}

function associationCase(name, server, client, keys = {}) {
  const serverKey = keys.server ?? derivedKey(`shardpsi-extra/${name}/server`);
  const clientKey = keys.client ?? derivedKey(`shardpsi-extra/${name}/client`);
  const run = runRaw(serverKey, clientKey, true, server, client);
  const perm = permutationOf(serverKey, server);
  const pairs = associationOf(server, client);
  // psi.js's setup is the masked server values in the order perm gives.
  const setupEl = elementsOf(psi.serverSetup.deserializeBinary(fromHex(run.setup)).getRaw());
  check(sameJson(setupEl, perm.map((j) => masked(serverKey, server[j]))), `${name}: setup != sorted masked values`);
  check(run.setup === rawSetup(setupEl), `${name}: psi.js setup is not the canonical raw encoding`);
  // psi.js's raw intersection holds exactly the client indices of the table.
  check(sameJson(run.intersection.slice().sort((a, b) => a - b), pairs.map((p) => p[0]).sort((a, b) => a - b)),
    `${name}: psi.js intersection ${JSON.stringify(run.intersection)} disagrees with the table`);
  check(run.size === pairs.length, `${name}: psi.js size differs from the table`);
  return {
    name,
    server_key: serverKey,
    client_key: clientKey,
    server_inputs: server,
    client_inputs: client,
    server_setup: run.setup,
    request: run.request,
    response: run.response,
    permutation: perm,
    association: pairs,
  };
}

const idents = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

function buildAssociationCases() {
  const out = [];
  const add = (...a) => out.push(associationCase(...a));

  // PROTOCOL.md section 11, with its keys: perm [4, 3, 0, 2, 1], table (2,0), (4,1), (1,3).
  const k11 = {
    client: Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('hex'),
    server: Buffer.from(Array.from({ length: 32 }, (_, i) => i + 1)).toString('hex'),
  };
  add('worked-example', ['Element 0', 'Element 2', 'Element 4', 'abc', 'zzz'],
    ['', 'abc', 'Element 0', 'Element 1', 'Element 2', 'Element 3'], k11);
  check(sameJson(out[0].permutation, [4, 3, 0, 2, 1]), 'worked example: permutation differs from section 11');
  check(sameJson(out[0].association, [[2, 0], [4, 1], [1, 3]]), 'worked example: table differs from section 11');
  // Section 9.5's duplicates: the mapped table is (0, 0), (3, 1) whatever the keys.
  add('duplicates-doc-example', ['x', 'z', 'z'], ['x', 'y', 'x', 'z', 'x']);
  check(sameJson(out[1].association, [[0, 0], [3, 1]]), 'section 9.5 example: table differs');

  add('no-overlap', idents('server-', 6), idents('client-', 7));
  const r = new Rng('full-overlap');
  add('full-overlap', idents('v', 9), r.shuffle(idents('v', 9)));
  add('more-client-copies', ['x', 'y', 'x', 'w'], ['x', 'x', 'y', 'x', 'x', 'y', 'z', 'x']);
  add('more-server-copies', ['x', 'x', 'y', 'x', 'z', 'y', 'x', 'q'], ['y', 'x', 'z', 'x', 'p']);
  add('one-value', ['s', 's', 's'], ['s', 's', 'o', 's', 's']);
  add('empty-server', [], ['a', 'b', 'a']);
  add('empty-client', ['a', 'b', 'a'], []);
  add('empty-both', [], []);
  add('empty-and-nul', ['', '\u0000', '', 'a\u0000', '\u0000'], ['\u0000', '', '', '', 'a', 'a\u0000']);
  add('unicode', ['caf\u00e9', 'cafe\u0301', '\u00df', '\ud83d\ude00', 'caf\u00e9', '\u65e5\u672c', '\u212b'],
    ['cafe\u0301', '\u00c5', 'caf\u00e9', '\ud83d\ude00', '\ud83d\ude00', 'caf\u00e9', 'SS', '\u00df', 'caf\u00e9']);
  // 200 x 200 drawn from small pools, so most values repeat on both sides.
  const r200 = new Rng('duplicates-200');
  const pool = [...idents('shared-', 30), ...idents('server-only-', 10)];
  const cpool = [...idents('shared-', 30), ...idents('client-only-', 10)];
  add('duplicates-200', Array.from({ length: 200 }, () => r200.pick(pool)),
    Array.from({ length: 200 }, () => r200.pick(cpool)));
  return out;
}

// ---------------------------------------------------------------------------------------
// Rejection cases. Every expected error is written here by hand from PROTOCOL.md.

function buildRejectionCases() {
  const out = [];
  const names = new Set();
  const reject = (name, operation, fields, section, error) => {
    check(!names.has(name), `duplicate rejection case ${name}`);
    names.add(name);
    out.push({ name, operation, ...fields, protocol_section: section, error });
  };
  keyCases(reject);
  pointCases(reject);
  requestCases(reject);
  intersectionCases(reject);
  setupParamCases(reject);
  return out;
}

// Section 2.1: k = int(bytes) of any length; 0 or >= n is out of range, never reduced.
function keyCases(reject) {
  const key = (name, k) => reject(`key/${name}`, 'key', { key: k }, '2.1', 'PSI_E_KEY_OUT_OF_RANGE');
  key('empty', '');
  key('one-zero-byte', '00');
  key('zero', '00'.repeat(32));
  key('n', be32hex(N));
  key('n-plus-1-33-bytes', '00' + be32hex(N + 1n));
  key('all-ff', 'ff'.repeat(32));
  key('2^256-33-bytes', '01' + '00'.repeat(32));
}

// Section 4.2: the checks in order: identity, length, prefix, x < p, on the curve.
function pointCases(reject) {
  const pt = (name, p, error) => reject(`point/${name}`, 'point', { point: p }, '4.2', error);
  check(curveRhs(big(fromHex(GX))) === modpow(big(fromHex(GY)), 2n, P), 'generator is not on the curve');
  check(!isSquare(curveRhs(1n)), 'x = 1 should not be on the curve');
  check(big(fromHex(GY)) % 2n === 1n, 'the generator has an even y');
  pt('identity-00', '00', 'PSI_E_POINT_IDENTITY');
  pt('empty', '', 'PSI_E_POINT_LENGTH');
  pt('uncompressed-generator', '04' + GX + GY, 'PSI_E_POINT_LENGTH');
  pt('hybrid-06-generator', '06' + GX + GY, 'PSI_E_POINT_LENGTH');
  pt('hybrid-07-generator', '07' + GX + GY, 'PSI_E_POINT_LENGTH');
  pt('32-bytes', GX, 'PSI_E_POINT_LENGTH');
  pt('34-bytes', '02' + GX + '00', 'PSI_E_POINT_LENGTH');
  pt('2-bytes-0000', '0000', 'PSI_E_POINT_LENGTH');
  pt('33-bytes-prefix-04', '04' + GX, 'PSI_E_POINT_PREFIX');
  pt('33-bytes-prefix-00', '00' + GX, 'PSI_E_POINT_PREFIX');
  pt('33-bytes-prefix-05', '05' + GX, 'PSI_E_POINT_PREFIX');
  pt('prefix-before-x-range', '04' + 'ff'.repeat(32), 'PSI_E_POINT_PREFIX');
  pt('x-equals-p', '02' + be32hex(P), 'PSI_E_POINT_X_RANGE');
  pt('x-all-ff', '03' + 'ff'.repeat(32), 'PSI_E_POINT_X_RANGE');
  pt('x-not-on-curve', '02' + be32hex(1n), 'PSI_E_POINT_NOT_ON_CURVE');
  pt('x-not-on-curve-03', '03' + be32hex(1n), 'PSI_E_POINT_NOT_ON_CURVE');
}

// Material shared by the message cases: a psi.js run with a raw, a GCS and a Bloom setup.
const BASE_SERVER = ['beta', 'delta', 'alpha', 'epsilon', 'zeta'];
const BASE_CLIENT = ['alpha', 'beta', 'gamma'];
let base;
function baseRuns() {
  if (base) return base;
  const sk = derivedKey('shardpsi-extra/rejection/server');
  const ck = derivedKey('shardpsi-extra/rejection/client');
  const on = runRaw(sk, ck, true, BASE_SERVER, BASE_CLIENT);
  const off = runRaw(sk, ck, false, BASE_SERVER, BASE_CLIENT);
  const gcs = runRaw(sk, ck, true, BASE_SERVER, BASE_CLIENT, psi.dataStructure.GCS, 0.01, 3);
  check(on.size === 2 && off.size === 2 && gcs.size >= 2, 'base runs: unexpected intersection size');
  base = { sk, ck, on, off, gcs, reqEl: elementsOfHex(on.request.slice(4), 2) };
  base.respEl = elementsOfHex(on.response, 1);
  base.setupEl = elementsOfHex(on.setup.slice(6), 1); // after 0a <len 2 bytes>
  check(on.setup.startsWith('0aaf01'), 'base raw setup has an unexpected header');
  check(on.request === request(true, base.reqEl) && off.request === request(false, base.reqEl),
    'base requests are not the canonical encoding');
  return base;
}

// Section 4.2 (decoding): psi.js accepts the 65-byte 04 form that shardpsi refuses.
function checkPsiJsAcceptsUncompressed() {
  const b = baseRuns();
  const s = psi.server.createFromKey(fromHex(b.sk), true);
  try {
    const req = psi.request.deserializeBinary(fromHex(vfield(1, 1) + bfield(2, '04' + GX + GY)));
    const el = elementsOf(s.processRequest(req));
    check(el.length === 1 && /^0[23]/.test(el[0]) && el[0].length === 66, 'psi.js answer to a 04 point');
  } finally {
    s.delete();
  }
}

const BAD_X = '02' + be32hex(1n); // 33 bytes, prefix 02, not on the curve (section 4.2)

// Sections 8 and 10: decode (PSI_E_MSG_*), then the reveal flag, then every point in order.
function requestCases(reject) {
  const b = baseRuns();
  const el = b.reqEl;
  const pr = (name, reveal, req, section, error) =>
    reject(`process_request/${name}`, 'process_request',
      { server_key: b.sk, reveal_intersection: reveal, request: req }, section, error);
  pr('reveal-mismatch-server-on', true, b.off.request, '8', 'PSI_E_REVEAL_MISMATCH');
  pr('reveal-mismatch-server-off', false, b.on.request, '8', 'PSI_E_REVEAL_MISMATCH');
  pr('empty-request-server-on', true, '', '8', 'PSI_E_REVEAL_MISMATCH');
  pr('mismatch-before-points', true, request(false, [BAD_X]), '8', 'PSI_E_REVEAL_MISMATCH');
  pr('bad-point-second', true, request(true, [el[0], BAD_X, el[2]]), '8', 'PSI_E_POINT_NOT_ON_CURVE');
  pr('first-bad-point-wins', true, request(true, [el[0], BAD_X, '04' + GX]), '8', 'PSI_E_POINT_NOT_ON_CURVE');
  pr('point-prefix-04', false, request(false, [el[1], '04' + GX]), '8', 'PSI_E_POINT_PREFIX');
  pr('point-x-equals-p', true, request(true, ['03' + be32hex(P)]), '8', 'PSI_E_POINT_X_RANGE');
  pr('unknown-field-then-bad-point', true, vfield(7, 5) + request(true, [BAD_X]), '10', 'PSI_E_POINT_NOT_ON_CURVE');
  pr('tag-varint-cut', true, b.on.request + '92', '10', 'PSI_E_MSG_TRUNCATED');
  pr('value-varint-missing', true, '08', '10', 'PSI_E_MSG_TRUNCATED');
  pr('value-varint-cut', true, '0881', '10', 'PSI_E_MSG_TRUNCATED');
  pr('length-past-end', true, b.on.request.slice(0, -2), '10', 'PSI_E_MSG_TRUNCATED');
  pr('length-past-end-appended', true, b.on.request + '12210102', '10', 'PSI_E_MSG_TRUNCATED');
  pr('length-varint-cut', true, '080112', '10', 'PSI_E_MSG_TRUNCATED');
  pr('element-32-bytes', true, vfield(1, 1) + bfield(2, el[0].slice(0, 64)), '10', 'PSI_E_MSG_ELEMENT_SIZE');
  pr('element-34-bytes', true, vfield(1, 1) + bfield(2, el[0] + '00'), '10', 'PSI_E_MSG_ELEMENT_SIZE');
  pr('element-empty', true, vfield(1, 1) + bfield(2, ''), '10', 'PSI_E_MSG_ELEMENT_SIZE');
  pr('element-65-bytes', true, vfield(1, 1) + bfield(2, '04' + GX + GY), '10', 'PSI_E_MSG_ELEMENT_SIZE');
  pr('reveal-as-bytes', true, bfield(1, '01') + elements(2, el), '10', 'PSI_E_MSG_TAG');
  pr('elements-as-varint', true, vfield(1, 1) + vfield(2, 1), '10', 'PSI_E_MSG_TAG');
  pr('elements-as-fixed32', true, vfield(1, 1) + tag(2, 5) + '00000000', '10', 'PSI_E_MSG_TAG');
  for (const wt of [3, 4, 6, 7]) {
    pr(`wire-type-${wt}`, true, vfield(1, 1) + tag(5, wt) + '00', '10', 'PSI_E_MSG_TAG');
  }
  pr('wire-type-3-known-field', true, b.on.request + tag(2, 3), '10', 'PSI_E_MSG_TAG');
  pr('field-number-0', true, vfield(1, 1) + tag(0, 0) + '00', '10', 'PSI_E_MSG_TAG');
  pr('field-number-2^29', true, vfield(1, 1) + tag(1 << 29, 0) + '00', '10', 'PSI_E_MSG_TAG');
  pr('varint-11-bytes', true, '08' + 'ff'.repeat(10) + '01', '10', 'PSI_E_MSG_VARINT');
  pr('varint-10th-byte-02', true, '08' + 'ff'.repeat(9) + '02', '10', 'PSI_E_MSG_VARINT');
  pr('length-varint-11-bytes', true, '0801' + '12' + '80'.repeat(10) + '00', '10', 'PSI_E_MSG_VARINT');
}

// Sections 9, 9.4 and 10: the setup is parsed and checked first, then the response.
function intersectionCases(reject) {
  const b = baseRuns();
  const ix = (name, setup, resp, section, error, reveal = true) =>
    reject(`intersection/${name}`, 'intersection', {
      client_key: b.ck, reveal_intersection: reveal, server_setup: setup,
      response: resp ?? (reveal ? b.on.response : b.off.response),
    }, section, error);
  const hr = 1000;
  ix('gcs-hash-range-missing', gcsSetup({ div: 3, bits: '01' }), null, '9.4', 'PSI_E_GCS_HASH_RANGE');
  ix('gcs-hash-range-0', gcsSetup({ div: 3, hashRange: 0, bits: '01' }), null, '9.4', 'PSI_E_GCS_HASH_RANGE');
  ix('gcs-hash-range-negative', gcsSetup({ div: 3, hashRange: -5, bits: '01' }), null, '9.4', 'PSI_E_GCS_HASH_RANGE');
  ix('gcs-hash-range-min-int64', gcsSetup({ hashRange: -(2n ** 63n) }), null, '9.4', 'PSI_E_GCS_HASH_RANGE');
  ix('gcs-hash-range-before-div', gcsSetup({ div: 64, hashRange: 0 }), null, '9.4', 'PSI_E_GCS_HASH_RANGE');
  ix('gcs-div-64', gcsSetup({ div: 64, hashRange: hr, bits: '01' }), null, '9.4', 'PSI_E_GCS_DIV');
  ix('gcs-div-minus-1', gcsSetup({ div: -1, hashRange: hr, bits: '01' }), null, '9.4', 'PSI_E_GCS_DIV');
  // int32: the low 32 bits of the varint, so 2^32 + 5 is div 5 and 2^32 - 1 is div -1.
  ix('gcs-div-minus-1-5-bytes', gcsSetup({ div: 2 ** 32 - 1, hashRange: hr, bits: '01' }), null, '10', 'PSI_E_GCS_DIV');
  ix('gcs-div-before-stream', gcsSetup({ div: 64, hashRange: hr, bits: '80' }), null, '9.4', 'PSI_E_GCS_DIV');
  ix('gcs-stream-cut-in-remainder', gcsSetup({ div: 9, hashRange: hr, bits: '01' }), null, '9.2', 'PSI_E_GCS_STREAM');
  ix('gcs-stream-cut-second-value', gcsSetup({ div: 4, hashRange: hr, bits: '0120' }), null, '9.2', 'PSI_E_GCS_STREAM');
  ix('gcs-value-equals-hash-range', gcsSetup({ hashRange: 5, bits: '20' }), null, '9.2', 'PSI_E_GCS_STREAM');
  ix('gcs-sum-reaches-hash-range', gcsSetup({ hashRange: 5, bits: '44' }), null, '9.2', 'PSI_E_GCS_STREAM');
  ix('gcs-value-overflow', gcsSetup({ div: 63, hashRange: 2n ** 63n - 1n, bits: '02' + '00'.repeat(8) }), null,
    '9.2', 'PSI_E_GCS_STREAM');
  ix('gcs-bad-setup-size-only', gcsSetup({ div: 9, hashRange: hr, bits: '01' }), null, '9.2', 'PSI_E_GCS_STREAM', false);
  ix('bloom-k-missing', bloomSetup({ bits: '00'.repeat(10) }), null, '9.4', 'PSI_E_BLOOM_HASHES');
  ix('bloom-k-0', bloomSetup({ k: 0, bits: 'ff'.repeat(10) }), null, '9.4', 'PSI_E_BLOOM_HASHES');
  ix('bloom-k-negative', bloomSetup({ k: -3, bits: 'ff'.repeat(10) }), null, '9.4', 'PSI_E_BLOOM_HASHES');
  ix('bloom-bits-empty', bloomSetup({ k: 3 }), null, '9.4', 'PSI_E_BLOOM_BITS');
  ix('bloom-bits-empty-written', bloomSetup({ k: 3, bits: '' }), null, '9.4', 'PSI_E_BLOOM_BITS');
  ix('bloom-empty-member', bloomSetup({}), null, '9.4', 'PSI_E_BLOOM_HASHES');
  ix('bloom-bad-size-only', bloomSetup({ k: 0, bits: '01' }), null, '9.4', 'PSI_E_BLOOM_HASHES', false);
  const s = b.setupEl;
  check(s.length === 5 && cmpHex(s[0], s[1]) < 0, 'base raw setup');
  ix('raw-unsorted', rawSetup([s[1], s[0], ...s.slice(2)]), null, '9.4', 'PSI_E_SETUP_UNSORTED');
  ix('raw-unsorted-last', rawSetup([...s.slice(0, 3), s[4], s[3]]), null, '9.4', 'PSI_E_SETUP_UNSORTED');
  ix('raw-unsorted-size-only', rawSetup([s[4], s[0]]), null, '9.4', 'PSI_E_SETUP_UNSORTED', false);
  ix('raw-element-32-bytes', bfield(1, elements(1, s.slice(0, 2)) + bfield(1, s[2].slice(0, 64))), null,
    '9.4', 'PSI_E_MSG_ELEMENT_SIZE');
  // The list is read whole before its order is checked.
  ix('raw-size-before-order', bfield(1, elements(1, [s[3], s[0]]) + bfield(1, s[4] + '00')), null,
    '9.4', 'PSI_E_MSG_ELEMENT_SIZE');
  ix('raw-elements-as-varint', bfield(1, vfield(1, 7)), null, '10', 'PSI_E_MSG_TAG');
  ix('setup-empty', '', null, '9.4', 'PSI_E_MSG_ONEOF_MISSING');
  ix('setup-unknown-field-only', vfield(9, 1), null, '10', 'PSI_E_MSG_ONEOF_MISSING');
  ix('setup-raw-and-gcs', b.on.setup + gcsSetup({ hashRange: hr }), null, '10', 'PSI_E_MSG_ONEOF_DOUBLED');
  ix('setup-raw-twice', '0a000a00', null, '10', 'PSI_E_MSG_ONEOF_DOUBLED');
  ix('setup-gcs-then-bloom', b.gcs.setup + bloomSetup({ k: 2, bits: '01' }), null, '10', 'PSI_E_MSG_ONEOF_DOUBLED');
  // The top level is scanned completely before the member's contents are parsed.
  ix('doubled-before-contents', rawSetup([s[1], s[0]]) + '0a00', null, '10', 'PSI_E_MSG_ONEOF_DOUBLED');
  ix('setup-member-truncated', b.on.setup.slice(0, -2), null, '10', 'PSI_E_MSG_TRUNCATED');
  ix('setup-member-as-varint', vfield(1, 0), null, '10', 'PSI_E_MSG_TAG');
  const r = b.respEl;
  ix('response-bad-point', b.on.setup, response([r[0], BAD_X, r[2]]), '9', 'PSI_E_POINT_NOT_ON_CURVE');
  ix('response-bad-point-gcs', b.gcs.setup, response([r[0], r[1], '05' + GX]), '9', 'PSI_E_POINT_PREFIX');
  ix('response-bad-point-size-only', b.on.setup, response(['02' + be32hex(P)]), '9', 'PSI_E_POINT_X_RANGE', false);
  ix('setup-checked-before-response', rawSetup([s[1], s[0]]), response([BAD_X]), '9', 'PSI_E_SETUP_UNSORTED');
  ix('response-element-34-bytes', b.on.setup, response([r[0]]) + bfield(1, r[1] + '00'), '10', 'PSI_E_MSG_ELEMENT_SIZE');
  ix('response-element-32-bytes', b.on.setup, bfield(1, r[0].slice(0, 64)), '10', 'PSI_E_MSG_ELEMENT_SIZE');
  ix('response-truncated', b.on.setup, b.on.response.slice(0, -2), '10', 'PSI_E_MSG_TRUNCATED');
  ix('response-elements-as-varint', b.on.setup, vfield(1, 1), '10', 'PSI_E_MSG_TAG');
  ix('response-wire-type-7', b.on.setup, b.on.response + tag(3, 7), '10', 'PSI_E_MSG_TAG');
  ix('response-varint-11-bytes', b.on.setup, tag(4, 0) + 'ff'.repeat(10) + '01', '10', 'PSI_E_MSG_VARINT');
}

// Section 7.2, in doubles exactly as written there (JavaScript numbers are IEEE doubles).
function gcsHashRangeOf(fpr, nc, ns) {
  return Math.max(nc, ns) / (fpr / nc);
}
function gcsDivOf(values) {
  const avg = (Number(values[values.length - 1]) + 1) / values.length;
  const prob = 1.0 / avg;
  return -Math.log2(-Math.log2(1.0 - prob));
}

// Section 7: fpr_c = fpr / nc must be in (0, 1) and nc > 0 (PSI_E_FPR); sizes that do not fit
// give PSI_E_PARAM_OVERFLOW (7.2, 7.3). Raw ignores both parameters, so only GCS and Bloom.
function setupParamCases(reject) {
  const b = baseRuns();
  const sp = (name, ds, fpr, nc, inputs, section, error) =>
    reject(`setup_params/${ds}/${name}`, 'setup_params', {
      server_key: b.sk, data_structure: ds, fpr, num_client_inputs: nc, server_inputs: inputs,
    }, section, error);
  for (const ds of ['gcs', 'bloom_filter']) {
    sp('fpr-0', ds, 0, 1, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('fpr-1', ds, 1, 1, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('fpr-1.5', ds, 1.5, 1, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('fpr-minus-0.1', ds, -0.1, 1, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('fpr-NaN', ds, 'NaN', 10, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('fpr-per-input-1', ds, 4, 4, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('nc-0', ds, 0.01, 0, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('nc-minus-5', ds, 0.01, -5, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('nc-minus-5-fpr-negative', ds, -0.01, -5, BASE_SERVER, '7', 'PSI_E_FPR');
    sp('nc-0-empty-set', ds, 0.01, 0, [], '7', 'PSI_E_FPR');
  }
  // GCS: a quotient >= 2^63 (psi.js crashes on it).
  check(gcsHashRangeOf(1e-9, 100000, 5) >= 2 ** 63, 'GCS overflow case does not overflow');
  sp('hash-range-overflow', 'gcs', 1e-9, 100000, BASE_SERVER, '7.2', 'PSI_E_PARAM_OVERFLOW');
  // GCS: div infinite, because 1 - prob rounds to 1. One value hashed into a huge range.
  const one = ['huge-range'];
  const fpr = 1.1e-19;
  const hr = Math.trunc(gcsHashRangeOf(fpr, 1, 1));
  check(hr < 2 ** 63, 'GCS div case: hash_range overflows');
  const h = big(sha256(Buffer.from(masked(b.sk, one[0]), 'hex'))) % BigInt(hr);
  check(gcsDivOf([h]) === Infinity, `GCS div case: div is ${gcsDivOf([h])}, not infinite`);
  sp('div-infinite', 'gcs', fpr, 1, one, '7.2', 'PSI_E_PARAM_OVERFLOW');
  // Bloom: n_bytes = ceil(-m * log2(fpr_c) / ln 2 / 8) >= 2^60.
  const bnc = 9e15;
  const bfpr = 1e-300;
  const nBytes = Math.ceil(-bnc * Math.log2(bfpr / bnc) / Math.log(2.0) / 8.0);
  check(bfpr / bnc > 0 && nBytes >= 2 ** 60, 'Bloom overflow case does not overflow');
  sp('size-overflow', 'bloom_filter', bfpr, bnc, BASE_SERVER, '7.3', 'PSI_E_PARAM_OVERFLOW');
}

// ---------------------------------------------------------------------------------------

async function main() {
  const t0 = process.hrtime.bigint();
  psi = await loadPsi();
  RAW = psi.dataStructure.Raw;

  const association = buildAssociationCases();
  const rejection = buildRejectionCases();
  checkPsiJsAcceptsUncompressed();
  const names = new Set(association.map((c) => c.name));
  check(names.size === association.length, 'duplicate association case name');

  const out = { format: FORMAT, generator: GENERATOR, association_cases: association, rejection_cases: rejection };
  const text = writeJson(OUT_FILE, out);
  console.log(`${path.basename(OUT_FILE)}: ${association.length} association cases, ` +
    `${rejection.length} rejection cases, ${sizeHashTime(text, t0)}`);
}

runMain('generate-extra.mjs', main);
