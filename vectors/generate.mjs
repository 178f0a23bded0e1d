#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// Generates openmined-psi-2.0.6.json: known-answer wire vectors produced by the
// published npm package @openmined/psi.js 2.0.6 (OpenMined PSI compiled to WebAssembly).
//
//   cd vectors && npm install --ignore-scripts && node generate.mjs
//
// Everything is deterministic: keys and inputs come from SHA-256 of fixed labels
// ("shardpsi-vectors/<case name>/server" ...), so running this twice gives a
// byte-identical file. Every case is validated before it is written (see validate*()
// below); any surprise aborts the run with a non-zero exit status and no output file.
//
// This source file is ASCII only; non-ASCII test strings are written with \u escapes.

import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  HERE, PKG_NAME, PKG_VERSION, check, runMain, utf8, sha256, hex, big, be32hex, cmpHex, sameJson,
  P, N, CURVE_B, modpow, derivedKey, CounterRng, loadPsi, elementsOf, withParties, writeJson, sizeHashTime,
} from './psijs-common.mjs';

const OUT_FILE = path.join(HERE, 'openmined-psi-2.0.6.json');
export const FORMAT = 'psi-wire-vectors/1';
export const GENERATOR = `${PKG_NAME} ${PKG_VERSION}`;

// ---------------------------------------------------------------------------------------
// Small helpers (the ones shared with generate-extra.mjs are in psijs-common.mjs)

// With the u flag a surrogate pair is one code point, so this only matches lone surrogates,
// which have no UTF-8 encoding. psi.js accepts them silently, writing 3-byte WTF-8 but
// counting 4 bytes, so "\ud800x" is hashed as ed a0 80 78 (pinned in wasm/test/api.test.mjs).
export const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

// ---------------------------------------------------------------------------------------
// OpenMined's hash-to-curve on P-256 (reference doc section 3; P, N and CURVE_B come from
// psijs-common.mjs), used only to check that psi.js hashes exactly the UTF-8 bytes of every input.

const CURVE_A = P - 3n;

function minbe(x) {
  if (x === 0n) return Buffer.alloc(0);
  let h = x.toString(16);
  if (h.length % 2) h = '0' + h;
  return Buffer.from(h, 'hex');
}
const h2cCache = new Map();
function hashToCurve(msgBytes) {
  const key = msgBytes.toString('latin1');
  const hit = h2cCache.get(key);
  if (hit) return hit;
  const ro = (m) => big(Buffer.concat([sha256(Buffer.of(1), m), sha256(Buffer.of(2), m)])) % P;
  let x = ro(msgBytes);
  for (;;) {
    const t = (((x * x) % P) * x + CURVE_A * x + CURVE_B) % P;
    if (modpow(t, (P - 1n) / 2n, P) === 1n) break; // square: the even root is taken -> prefix 02
    x = ro(minbe(x));
  }
  const out = '02' + be32hex(x);
  h2cCache.set(key, out);
  return out;
}
export function selfTestHashToCurve() {
  const known = [
    ['', '026b51b9d722460e1f8073e65a824ebe2282f2d7d945491f150c1c04e6e553bb23'],
    ['a', '02a2584c304a4a67a0ce0e30fa6788f41bc4ff173d354eded0c89575b5c0a099c7'],
    ['abc', '024a7bcb50c5b44beff90f58600a36aab7c4f606587ed715496be543139bf899a5'],
    ['h\u00e9llo', '02712727ef895dfdac864b4d2ac9cbf4a945ab842fb8c3bd999c50464f296bdd77'],
    ['Element 0', '0215e10790d464efb81bed744bbd5d75d0d8936445791aae873ec0964daec761df'],
    ['Element 1', '02452435dd6a0dfc708753448dcfc77c63ad9e4f16faef63d93b11e93364482090'],
  ];
  for (const [m, h] of known) check(hashToCurve(utf8(m)) === h, `hash-to-curve self-test failed for ${JSON.stringify(m)}`);
  const e372 = hashToCurve(utf8('Element 372')); // needs the minimal-bytes re-hash
  check(e372.startsWith('02bf75f846') && e372.endsWith('66b1e1'), 'hash-to-curve self-test failed for "Element 372"');
}

// ---------------------------------------------------------------------------------------
// Deterministic randomness: SHA-256 in counter mode over a label. The blocks are used as one
// byte stream (every byte is used, in order). generate-random.mjs passes its own prefix.

export class Rng extends CounterRng {
  constructor(label, prefix = 'shardpsi-vectors/') {
    super(prefix + label);
    this.pool = Buffer.alloc(0);
  }
  bytes(n) {
    const blocks = [this.pool];
    let have = this.pool.length;
    while (have < n) {
      blocks.push(this.block());
      have += 32;
    }
    const all = Buffer.concat(blocks);
    this.pool = all.subarray(n);
    return Buffer.from(all.subarray(0, n));
  }
  u32() {
    return this.bytes(4).readUInt32BE(0);
  }
  range(lo, hi) {
    return lo + this.below(hi - lo + 1);
  }
}

// ---------------------------------------------------------------------------------------
// Keys

const KEY_ONE = be32hex(1n);
function keyHex(x) {
  check(x > 0n && x < N, `key out of range: ${x.toString(16)}`);
  return be32hex(x);
}

// ---------------------------------------------------------------------------------------
// Input material

const NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy',
  'mallory', 'niaj', 'olivia', 'peggy', 'rupert', 'sybil', 'trent', 'victor', 'walter', 'zoe'];
const DOMAINS = ['example.org', 'example.com', 'mail.test', 'corp.invalid'];

export function ident(rng) {
  switch (rng.below(6)) {
    case 0: return `${rng.pick(NAMES)}${rng.below(1000000)}`;
    case 1: return `${rng.pick(NAMES)}.${rng.below(100000)}@${rng.pick(DOMAINS)}`;
    case 2: return `+1-${rng.range(200, 999)}-${rng.range(100, 999)}-${String(rng.below(10000)).padStart(4, '0')}`;
    case 3: return `id:${rng.u32() >>> 1}`;
    case 4: {
      const h = hex(rng.bytes(16));
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }
    default: return `${rng.pick(NAMES)}-${hex(rng.bytes(5)).slice(0, 9)}`;
  }
}
function distinctIdents(rng, count, taken) {
  const out = [];
  while (out.length < count) {
    const s = ident(rng);
    if (!taken.has(s)) {
      taken.add(s);
      out.push(s);
    }
  }
  return out;
}
// ns server / nc client distinct identifiers, exactly `common` of them on both sides.
function overlapSets(rng, ns, nc, common) {
  const taken = new Set();
  const shared = distinctIdents(rng, common, taken);
  const sOnly = distinctIdents(rng, ns - common, taken);
  const cOnly = distinctIdents(rng, nc - common, taken);
  return { server: rng.shuffle([...shared, ...sOnly]), client: rng.shuffle([...shared, ...cOnly]) };
}

// random printable ASCII (no control characters)
const ASCII = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .:-_/@+';
export function asciiString(rng, len) {
  let s = '';
  for (let i = 0; i < len; i++) s += ASCII[rng.below(ASCII.length)];
  return s;
}
// random well-formed Unicode scalar values, mixing 1-, 2-, 3- and 4-byte UTF-8 sequences
export function randomUnicode(rng, ncp) {
  let s = '';
  for (let i = 0; i < ncp; i++) {
    let cp;
    switch (rng.below(4)) {
      case 0: cp = rng.range(0x20, 0x7e); break;
      case 1: cp = rng.range(0x80, 0x7ff); break;
      case 2: do { cp = rng.range(0x800, 0xffff); } while (cp >= 0xd800 && cp <= 0xdfff); break;
      default: cp = rng.range(0x10000, 0x10ffff);
    }
    s += String.fromCodePoint(cp);
  }
  return s;
}
// change one UTF-8 byte of an ASCII string at position i (stays ASCII, stays different)
function flipAscii(s, i) {
  const c = s.charCodeAt(i);
  const d = c === 0x7a ? 0x61 : c === 0x7e ? 0x21 : c + 1;
  return s.slice(0, i) + String.fromCharCode(d) + s.slice(i + 1);
}
function addDuplicates(rng, arr, extra) {
  const out = arr.slice();
  for (let i = 0; i < extra; i++) out.push(rng.pick(arr));
  return rng.shuffle(out);
}

// Fixed Unicode corner cases (both spellings of visually identical strings are distinct inputs).
export const UNICODE_FIXED = [
  'caf\u00e9', // NFC
  'cafe\u0301', // NFD (combining acute)
  '\u00df', 'SS', 'ss', '\u1e9e', // sharp s, capital sharp s
  '\u0130stanbul', 'i\u0307stanbul', 'Istanbul',
  '\u00c5', '\u212b', 'A\u030a', // A-ring, Angstrom sign, A + combining ring
  '\ufb01', 'fi', // ligature
  '\uff21\uff22\uff23', 'ABC', // fullwidth
  '\u0663', '3', // Arabic-Indic digit three
  '\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac',
  '\u043f\u0440\u0438\u0432\u0435\u0442',
  '\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8',
  '\u05e2\u05d1\u05e8\u05d9\u05ea', '\u0627\u0644\u0639\u0631\u0628\u064a\u0629',
  '\u202eevil\u202c', // RTL override
  '\ud83d\ude00', '\ud83d\ude00\ud83d\ude00',
  '\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67\u200d\ud83d\udc66', // ZWJ family
  '\ud83c\udff3\ufe0f\u200d\ud83c\udf08', '\ud83c\udff3\u200d\ud83c\udf08', // with/without VS16
  '\ud83c\uddfa\ud83c\uddf3', // flag (regional indicators)
  '\ud83d\udc4d\ud83c\udffd', // skin-tone modifier
  '\ufeff', '\ufeffbom', 'bom', 'bom\ufeff', // byte order mark
  'a\u200bb', 'ab', 'a\u200cb', 'a\u200db', '\u200b', '\u2060', // zero-width characters
  'e\u0301\u0302\u0303\u0304\u0305', // stacked combining marks
  'Z\u0324\u0354\u0367\u0311a\u0308\u0356\u032dl\u036e\u0312g\u030c\u0317o\u0319\u0314\u036e', // zalgo
  '\u00a0', ' ', '\u3000', // NBSP, space, ideographic space
  '\u2028', '\u2029', '\u0085', // line/paragraph separators, NEL
  '\ufffd', '\ufffe', '\uffff', // replacement char, noncharacters
  '\udbff\udfff', // U+10FFFF
  '\udb40\udc01', // U+E0001 language tag
  '\u0080', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\ud800\udc00', // UTF-8 length boundaries
];

// Values around the empty string and U+0000.
export const NUL_FIXED = [
  '', '\u0000', '\u0000\u0000', 'a', 'a\u0000', 'a\u0000\u0000', '\u0000a', 'a\u0000b', 'ab',
  'abc', 'abc\u0000', 'abc\u0000def', 'abcdef', '\u0000abc', ' ', '0', 'null', '\u0000\u00e9',
];

// ---------------------------------------------------------------------------------------
// Case list

export const DSS = ['raw', 'gcs', 'bloom_filter'];
export const mode = (reveal) => (reveal ? 'reveal' : 'size-only');

function buildCases() {
  const cases = [];
  const add = (group, ds, reveal, inputs, opts = {}) => {
    const name = `${group}/${ds}/${mode(reveal)}`;
    const server = inputs.server;
    const client = inputs.client;
    cases.push({
      name,
      serverKey: opts.serverKey ?? derivedKey(`shardpsi-vectors/${name}/server`),
      clientKey: opts.clientKey ?? derivedKey(`shardpsi-vectors/${name}/client`),
      reveal,
      ds,
      fpr: opts.fpr ?? 0.001,
      nc: opts.nc ?? Math.max(client.length, ds === 'raw' ? 0 : 1),
      server,
      client,
      responseIsHash: !!opts.responseIsHash,
    });
  };
  const inputsFor = (group, fn) => fn(new Rng(`${group}/inputs`));

  // Every data structure x reveal on/off.
  const basic = inputsFor('basic', (r) => overlapSets(r, 24, 17, 9));
  for (const ds of DSS) for (const rev of [true, false]) add('basic', ds, rev, basic);

  // Single elements.
  add('single-match', 'raw', true, { server: ['x'], client: ['x'] });
  add('single-match', 'gcs', true, { server: ['x'], client: ['x'] });
  add('single-match', 'bloom_filter', true, { server: ['x'], client: ['x'] });
  add('single-miss', 'gcs', true, { server: ['x'], client: ['y'] });

  // False-positive rates (GCS and Bloom use them; Raw ignores them).
  const fprSets = inputsFor('fpr', (r) => overlapSets(r, 40, 30, 15));
  for (const [label, fpr] of [['0.5', 0.5], ['0.1', 0.1], ['0.001', 0.001], ['1e-6', 1e-6], ['1e-9', 1e-9]]) {
    for (const ds of ['gcs', 'bloom_filter']) add(`fpr=${label}`, ds, true, fprSets, { fpr });
  }
  add('fpr=1e-9', 'gcs', false, fprSets, { fpr: 1e-9 });
  add('fpr=0.5', 'bloom_filter', false, fprSets, { fpr: 0.5 });
  add('fpr=0.5', 'raw', true, fprSets, { fpr: 0.5 });
  // Raw does not look at fpr / num_client_inputs at all (even 0 is accepted).
  add('raw-ignores-params', 'raw', true, fprSets, { fpr: 0, nc: 0 });
  // Many false positives: tiny per-element budget (fpr / num_client_inputs close to 1).
  const fpSets = inputsFor('false-positives', (r) => overlapSets(r, 64, 64, 30));
  add('false-positives', 'gcs', true, fpSets, { fpr: 0.5, nc: 1 });
  add('false-positives', 'bloom_filter', true, fpSets, { fpr: 0.5, nc: 1 });
  const tiny = inputsFor('tiny-containers', (r) => overlapSets(r, 3, 12, 2));
  add('tiny-containers', 'gcs', true, tiny, { fpr: 0.99, nc: 1 }); // hash_range 3
  add('tiny-containers', 'bloom_filter', true, tiny, { fpr: 0.99, nc: 1 }); // 1 hash function, 1 byte
  // fpr / nc / max(nc, ns) chosen so that the double division truncates (3599.99... -> 3599).
  const trunc = inputsFor('gcs-hash-range-truncation', (r) => overlapSets(r, 5, 6, 3));
  add('gcs-hash-range-truncation', 'gcs', true, trunc, { fpr: 0.01, nc: 6 });

  // num_client_inputs larger / smaller than the real client set.
  const ncSets = inputsFor('num-client-inputs', (r) => overlapSets(r, 20, 25, 9));
  for (const ds of DSS) add('num-client-inputs-larger', ds, true, ncSets, { nc: 1000 });
  for (const ds of DSS) add('num-client-inputs-smaller', ds, true, ncSets, { nc: 3 });
  add('num-client-inputs-smaller', 'gcs', false, ncSets, { nc: 3 });

  // Empty sets.
  const someSets = inputsFor('empty', (r) => overlapSets(r, 5, 5, 2));
  for (const ds of DSS) {
    add('empty-server', ds, true, { server: [], client: someSets.client });
    add('empty-client', ds, true, { server: someSets.server, client: [] });
    add('empty-both', ds, true, { server: [], client: [] });
    add('empty-both', ds, false, { server: [], client: [] });
  }
  add('empty-server', 'gcs', false, { server: [], client: someSets.client });
  add('empty-client', 'bloom_filter', false, { server: someSets.server, client: [] });
  add('empty-client-nc', 'gcs', true, { server: someSets.server, client: [] }, { nc: 10, fpr: 0.01 });

  // Duplicates (OpenMined's rules differ per container, see reference doc 9.5).
  const dup95 = { server: ['x', 'z', 'z'], client: ['x', 'y', 'x', 'z', 'x'] };
  for (const ds of DSS) add('duplicates-doc-example', ds, true, dup95);
  const dups = inputsFor('duplicates', (r) => {
    const base = overlapSets(r, 10, 10, 5);
    return { server: addDuplicates(r, base.server, 8), client: addDuplicates(r, base.client, 9) };
  });
  for (const ds of DSS) for (const rev of [true, false]) add('duplicates', ds, rev, dups);
  const dupsBig = inputsFor('duplicates-200', (r) => {
    const base = overlapSets(r, 60, 60, 30);
    return { server: addDuplicates(r, base.server, 140), client: addDuplicates(r, base.client, 140) };
  });
  for (const ds of DSS) add('duplicates-200', ds, true, dupsBig);
  const dupsSame = { server: ['same', 'same', 'same'], client: ['same', 'same', 'other', 'same', 'same'] };
  for (const ds of DSS) add('duplicates-one-value', ds, true, dupsSame);

  // Unicode.
  const uni = inputsFor('unicode', (r) => {
    const server = [];
    const client = [];
    for (const s of UNICODE_FIXED) {
      const where = r.below(3); // 0: server only, 1: client only, 2: both
      if (where !== 1) server.push(s);
      if (where !== 0) client.push(s);
    }
    for (let i = 0; i < 12; i++) {
      const s = randomUnicode(r, r.range(1, 8));
      const where = r.below(3);
      if (where !== 1) server.push(s);
      if (where !== 0) client.push(s);
    }
    return { server: r.shuffle(server), client: r.shuffle(client) };
  });
  for (const ds of DSS) add('unicode', ds, true, uni);
  add('unicode', 'gcs', false, uni);

  // Empty string and U+0000 (inside and at the end of values).
  const nul = inputsFor('nul-and-empty', (r) => {
    const server = [];
    const client = [];
    for (const s of NUL_FIXED) {
      const where = r.below(3);
      if (where !== 1) server.push(s);
      if (where !== 0) client.push(s);
    }
    server.push(''); // the empty string is in both sets
    client.push('');
    return { server: r.shuffle(server), client: r.shuffle(client) };
  });
  for (const ds of DSS) add('nul-and-empty', ds, true, nul);
  add('nul-and-empty', 'raw', false, nul);
  const emptyOnly = { server: [''], client: ['', '\u0000', ' '] };
  for (const ds of DSS) add('empty-string-only', ds, true, emptyOnly);

  // Lengths: SHA-256 block boundaries and long values (1000+ bytes).
  const lengths = inputsFor('lengths', (r) => {
    const server = [];
    const client = [];
    for (const len of [1, 31, 32, 33, 54, 55, 56, 62, 63, 64, 65, 119, 120, 1000, 1024, 4096]) {
      const s = asciiString(r, len);
      const where = r.below(3);
      if (where !== 1) server.push(s);
      if (where !== 0) client.push(s);
    }
    const longA = asciiString(r, 1000);
    server.push(longA);
    client.push(longA); // exact long match
    client.push(flipAscii(longA, 999)); // last byte differs
    client.push(flipAscii(longA, 0)); // first byte differs
    client.push(flipAscii(longA, 500)); // middle byte differs
    client.push(longA + 'x'); // one byte longer
    client.push(longA.slice(0, 999)); // one byte shorter
    client.push(longA + '\u0000'); // NUL at the end
    const longU = '\u00e9'.repeat(600) + '\ud83d\ude00'.repeat(100); // 1600 bytes, multi-byte
    server.push(longU);
    client.push(longU);
    client.push('\u00e9'.repeat(599) + 'e\u0301' + '\ud83d\ude00'.repeat(100)); // NFD near miss
    const longNul = asciiString(r, 700) + '\u0000' + asciiString(r, 700);
    server.push(longNul);
    client.push(longNul);
    server.push('z'.repeat(10000));
    client.push('z'.repeat(10000));
    client.push('z'.repeat(9999));
    return { server: r.shuffle(server), client: r.shuffle(client) };
  });
  for (const ds of DSS) add('lengths', ds, true, lengths);
  add('lengths', 'bloom_filter', false, lengths);

  // Near misses: values that differ from a server value in a single byte (or by one byte).
  const near = inputsFor('near-miss', (r) => {
    const taken = new Set();
    const bases = distinctIdents(r, 16, taken);
    const server = bases.slice();
    const client = [];
    bases.forEach((b, i) => {
      switch (i % 8) {
        case 0: client.push(b); break; // exact
        case 1: client.push(flipAscii(b, b.length - 1)); break; // last byte
        case 2: client.push(flipAscii(b, 0)); break; // first byte
        case 3: client.push(flipAscii(b, b.length >> 1)); break; // middle byte
        case 4: client.push(b + ' '); break; // trailing space
        case 5: client.push(b + '\u0000'); break; // trailing NUL
        case 6: client.push(b.slice(0, -1)); break; // truncated
        default: client.push(b.toUpperCase() === b ? b.toLowerCase() : b.toUpperCase()); // case
      }
    });
    client.push(bases[3], bases[9]); // a couple of exact matches as well
    server.push('abc', 'abd', 'caf\u00e9');
    client.push('abe', 'Abc', 'caf\u00e8', 'cafe');
    return { server: r.shuffle(server), client: r.shuffle(client) };
  });
  for (const ds of DSS) add('near-miss', ds, true, near);

  // 1,000 elements on both sides.
  const large = inputsFor('large-1000', (r) => overlapSets(r, 1000, 1000, 300));
  add('large-1000', 'raw', true, large);
  add('large-1000', 'gcs', true, large, { fpr: 1e-9 });
  add('large-1000', 'bloom_filter', true, large, { fpr: 1e-6 });
  add('large-1000', 'raw', false, large);
  add('large-1000', 'gcs', false, large);
  add('large-1000', 'bloom_filter', false, large);

  // Edge keys.
  const ek = inputsFor('edge-keys', (r) => overlapSets(r, 12, 9, 5));
  const ekH = { // hash-to-curve corner inputs
    server: ['', 'abc', 'Element 0', 'Element 372', 'caf\u00e9', '\u0000', 'x'.repeat(1000)],
    client: ['', 'a', 'abc', 'h\u00e9llo', 'Element 0', 'Element 1', 'Element 372', '\u0000', 'caf\u00e9',
      'cafe\u0301', '\ud83d\ude00', '\ufeff', 'x'.repeat(1000)],
  };
  // client key 1: the request is H(x) itself.
  add('edge-keys/client-key-one', 'raw', true, ekH, { clientKey: KEY_ONE });
  // server key 1: the Raw setup holds H(y) itself, the response equals the request (sorted).
  add('edge-keys/server-key-one', 'raw', false, ekH, { serverKey: KEY_ONE });
  // server key 2, client key 2^-1 mod n: the response decrypts... and also *is* H(x).
  add('edge-keys/inverse-pair', 'raw', true, ekH,
    { serverKey: keyHex(2n), clientKey: keyHex((N + 1n) / 2n), responseIsHash: true });
  add('edge-keys/n-minus-1', 'bloom_filter', true, ek, { serverKey: keyHex(N - 1n), clientKey: keyHex(N - 1n) });
  add('edge-keys/small-client-key', 'raw', true, ek, { serverKey: keyHex(N - 2n), clientKey: keyHex(0x3c3an) });
  add('edge-keys/small-server-key', 'gcs', true, ek, { serverKey: keyHex(0x05n), clientKey: keyHex(N - 0xdab8n) });
  add('edge-keys/leading-zero-keys', 'gcs', true, ek, {
    serverKey: '0000' + derivedKey('shardpsi-vectors/edge-keys/leading-zero-keys/server').slice(4),
    clientKey: '00' + derivedKey('shardpsi-vectors/edge-keys/leading-zero-keys/client').slice(2),
  });
  add('edge-keys/many-leading-zeros', 'bloom_filter', false, ek, {
    serverKey: '00'.repeat(16) + derivedKey('shardpsi-vectors/edge-keys/many-leading-zeros/server').slice(32),
    clientKey: '00'.repeat(31) + '02',
  });
  add('edge-keys/high-keys', 'gcs', false, ek, {
    serverKey: keyHex(1n << 255n),
    clientKey: keyHex(BigInt('0xffffffff00000000ffffffffffffffff00000000000000000000000000000000')),
  });
  const same = derivedKey('shardpsi-vectors/edge-keys/same-key');
  add('edge-keys/same-key', 'raw', true, ek, { serverKey: same, clientKey: same });

  const names = new Set();
  for (const c of cases) {
    check(!names.has(c.name), `duplicate case name ${c.name}`);
    names.add(c.name);
  }
  return cases;
}

// ---------------------------------------------------------------------------------------
// Running and validating one case

// s*H(x) for every input, in input order, computed with psi.js itself: a client with key 1
// sends H(x) (checked against our own hash-to-curve), the server multiplies by s.
function serverEncrypt(psi, serverKey, inputs) {
  return withParties(psi, serverKey, KEY_ONE, true, (hs, hc) => {
    const req = hc.createRequest(inputs);
    const hashes = elementsOf(req);
    check(hashes.length === inputs.length, 'helper request has the wrong length');
    inputs.forEach((s, i) => check(hashes[i] === hashToCurve(utf8(s)),
      `psi.js does not hash the UTF-8 bytes of input ${JSON.stringify(s).slice(0, 60)}`));
    return { hashes, enc: elementsOf(hs.processRequest(req)) };
  });
}

function gcsHash(elemHex, hashRange) {
  return big(sha256(Buffer.from(elemHex, 'hex'))) % hashRange;
}
function gcsDecode(bits, div) {
  const out = [];
  const nbits = bits.length * 8;
  const bit = (j) => (bits[j >> 3] >> (j & 7)) & 1;
  let pos = 0;
  let acc = 0n;
  for (;;) {
    let q = 0n;
    while (pos < nbits && bit(pos) === 0) {
      q++;
      pos++;
    }
    if (pos >= nbits) break;
    pos++;
    let r = 0n;
    for (let j = 0; j < div; j++) {
      check(pos < nbits, 'GCS stream ends inside a remainder');
      if (bit(pos)) r |= 1n << BigInt(j);
      pos++;
    }
    acc += (q << BigInt(div)) | r;
    out.push(acc);
  }
  return out;
}
function bloomMember(elemHex, k, bits) {
  const nbits = BigInt(bits.length * 8);
  const e = Buffer.from(elemHex, 'hex');
  const h1 = big(sha256('1', e)) % nbits;
  const h2 = big(sha256('2', e)) % nbits;
  for (let i = 0n; i < BigInt(k); i++) {
    const idx = Number((h1 + i * h2) % nbits);
    if (!((bits[idx >> 3] >> (idx & 7)) & 1)) return false;
  }
  return true;
}

// The intersection expected from plain comparison of the inputs.
//  exact: client indices whose value is in the server set
//  rawSet: the Raw rule - per value v, the first min(#client v, #server v) client indices of v
function plainExpectation(server, client) {
  const sCount = new Map();
  for (const s of server) sCount.set(s, (sCount.get(s) || 0) + 1);
  const exact = [];
  const rawSet = [];
  const used = new Map();
  client.forEach((x, i) => {
    if (!sCount.has(x)) return;
    exact.push(i);
    const u = used.get(x) || 0;
    if (u < sCount.get(x)) {
      rawSet.push(i);
      used.set(x, u + 1);
    }
  });
  return { exact, rawSet };
}
const sortedNums = (a) => a.slice().sort((x, y) => x - y);

// Expected Raw result, in order: merge walk of sorted (D[i], i) against the sorted setup.
function rawMerge(dec, setupElems) {
  const pairs = dec.map((d, i) => [d, i]).sort((a, b) => cmpHex(a[0], b[0]) || a[1] - b[1]);
  const out = [];
  let a = 0;
  let b = 0;
  while (a < pairs.length && b < setupElems.length) {
    const c = cmpHex(pairs[a][0], setupElems[b]);
    if (c < 0) a++;
    else if (c > 0) b++;
    else {
      out.push(pairs[a][1]);
      a++;
      b++;
    }
  }
  return out;
}

export const stats = { gcsTieOrderNotByIndex: [], falsePositives: 0 };

export function runCase(psi, DS, c) {
  const where = `case ${c.name}`;
  for (const s of [...c.server, ...c.client]) {
    check(typeof s === 'string' && !LONE_SURROGATE.test(s), `${where}: input is not well-formed Unicode`);
  }
  return withParties(psi, c.serverKey, c.clientKey, c.reveal, (server, client) => {
    check(hex(server.getPrivateKeyBytes()) === c.serverKey, `${where}: server key does not round-trip`);
    check(hex(client.getPrivateKeyBytes()) === c.clientKey, `${where}: client key does not round-trip`);

    // The protocol, with every message going through bytes as on the wire.
    const setupBytes = server.createSetupMessage(c.fpr, c.nc, c.server, DS[c.ds]).serializeBinary();
    const reqBytes = client.createRequest(c.client).serializeBinary();
    const req = psi.request.deserializeBinary(reqBytes);
    check(hex(req.serializeBinary()) === hex(reqBytes), `${where}: request does not re-serialize identically`);
    const respBytes = server.processRequest(req).serializeBinary();
    const resp = psi.response.deserializeBinary(respBytes);
    check(hex(resp.serializeBinary()) === hex(respBytes), `${where}: response does not re-serialize identically`);
    const setup = psi.serverSetup.deserializeBinary(setupBytes);
    check(hex(setup.serializeBinary()) === hex(setupBytes), `${where}: setup does not re-serialize identically`);
    const size = client.getIntersectionSize(setup, resp);
    const intersection = c.reveal ? client.getIntersection(setup, resp) : undefined;

    // --- message structure
    const reqEl = elementsOf(req);
    const respEl = elementsOf(resp);
    check(req.getRevealIntersection() === c.reveal, `${where}: request reveal flag`);
    check(reqEl.length === c.client.length && respEl.length === c.client.length, `${where}: message lengths`);
    for (const e of [...reqEl, ...respEl]) check(/^0[23][0-9a-f]{64}$/.test(e), `${where}: bad point encoding ${e}`);
    if (!c.reveal) {
      for (let i = 1; i < respEl.length; i++) check(cmpHex(respEl[i - 1], respEl[i]) <= 0, `${where}: size-only response not sorted`);
    }
    const dsCase = { raw: 1, gcs: 2, bloom_filter: 3 }[c.ds]; // oneof field numbers
    check(setup.getDataStructureCase() === dsCase, `${where}: setup carries the wrong data structure`);

    // --- reference values: D[i] = s*H(client[i]) (what the client decrypts when reveal = true),
    //     E[j] = s*H(server[j])
    const { hashes: hx, enc: D } = serverEncrypt(psi, c.serverKey, c.client);
    const { enc: E } = serverEncrypt(psi, c.serverKey, c.server);
    if (c.clientKey === KEY_ONE) check(sameJson(reqEl, hx), `${where}: request with key 1 is not H(x)`);
    if (c.reveal && c.clientKey === KEY_ONE && c.serverKey === KEY_ONE) check(sameJson(respEl, hx), `${where}`);
    if (c.responseIsHash) check(sameJson(respEl, hx), `${where}: response is not H(x) for inverse keys`);
    const distinctClient = new Set(c.client).size;
    check(new Set(D).size === distinctClient, `${where}: distinct inputs collide after encryption`);

    // --- expected intersection (indices into client inputs, valid for reveal = true; for
    //     size-only only the count is defined)
    let expected;
    let sameAsSet = false; // true when the order of equal-hash entries is unspecified (GCS)
    if (c.ds === 'raw') {
      const setupEl = elementsOf(setup.getRaw());
      check(sameJson(setupEl, E.slice().sort(cmpHex)), `${where}: Raw setup is not sort(s*H(server inputs))`);
      expected = rawMerge(D, setupEl);
    } else if (c.ds === 'gcs') {
      const g = setup.getGcs();
      const hrNum = g.getHashRange();
      check(Number.isSafeInteger(hrNum) && hrNum >= 1, `${where}: GCS hash_range ${hrNum}`);
      const hr = BigInt(hrNum);
      const div = g.getDiv();
      check(Number.isInteger(div) && div >= 0 && div < 64, `${where}: GCS div ${div}`);
      const values = gcsDecode(g.getBits_asU8(), div);
      const want = [...new Set(E.map((e) => gcsHash(e, hr)))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      check(sameJson(values.map(String), want.map(String)), `${where}: GCS bits do not decode to the server hashes`);
      const vset = new Set(values.map(String));
      const hD = D.map((d) => gcsHash(d, hr));
      expected = D.map((_, i) => i).filter((i) => vset.has(String(hD[i])))
        .sort((a, b) => (hD[a] < hD[b] ? -1 : hD[a] > hD[b] ? 1 : a - b));
      sameAsSet = true;
      if (intersection) {
        for (let j = 1; j < intersection.length; j++) {
          const ha = hD[intersection[j - 1]];
          const hb = hD[intersection[j]];
          check(ha <= hb, `${where}: GCS intersection is not in ascending hash order`);
          if (ha === hb && intersection[j - 1] > intersection[j]) stats.gcsTieOrderNotByIndex.push(c.name);
        }
      }
    } else {
      const bf = setup.getBloomFilter();
      const k = bf.getNumHashFunctions();
      const bits = bf.getBits_asU8();
      check(k >= 1 && bits.length >= 1, `${where}: degenerate Bloom filter (k ${k}, ${bits.length} bytes)`);
      for (const e of E) check(bloomMember(e, k, bits), `${where}: Bloom filter misses a server element`);
      expected = D.map((_, i) => i).filter((i) => bloomMember(D[i], k, bits));
    }

    // --- plain comparison of the inputs
    const plain = plainExpectation(c.server, c.client);
    if (c.ds === 'raw') {
      check(sameJson(sortedNums(expected), plain.rawSet), `${where}: Raw expectation disagrees with plain comparison`);
    } else {
      const ex = new Set(expected);
      for (const i of plain.exact) check(ex.has(i), `${where}: true match ${i} missing`);
      // equal inputs are indistinguishable to GCS / Bloom: all copies match or none does
      for (const i of expected) {
        c.client.forEach((x, j) => check(x !== c.client[i] || ex.has(j), `${where}: duplicate ${j} of ${i} missing`));
      }
    }

    // --- compare with psi.js
    check(Number.isInteger(size) && size === expected.length,
      `${where}: getIntersectionSize = ${size}, expected ${expected.length}`);
    if (c.reveal) {
      check(Array.isArray(intersection) && intersection.every((i) => Number.isInteger(i)),
        `${where}: getIntersection did not return an array of integers`);
      check(new Set(intersection).size === intersection.length, `${where}: intersection has repeated indices`);
      if (sameAsSet) check(sameJson(sortedNums(intersection), sortedNums(expected)), `${where}: GCS intersection differs from expectation`);
      else check(sameJson(intersection, expected), `${where}: intersection ${JSON.stringify(intersection)} != expected ${JSON.stringify(expected)}`);
      if (c.ds !== 'raw') stats.falsePositives += intersection.length - plain.exact.length;
    }

    // --- size-only: the same parties with reveal = true must agree on everything but order/flag
    if (!c.reveal) {
      withParties(psi, c.serverKey, c.clientKey, true, (s2, c2) => {
        const setup2 = s2.createSetupMessage(c.fpr, c.nc, c.server, DS[c.ds]);
        check(hex(setup2.serializeBinary()) === hex(setupBytes), `${where}: setup depends on the reveal flag`);
        const req2 = c2.createRequest(c.client);
        check(sameJson(elementsOf(req2), reqEl), `${where}: request elements depend on the reveal flag`);
        const resp2 = s2.processRequest(req2);
        check(sameJson(elementsOf(resp2).sort(cmpHex), respEl), `${where}: size-only response != sorted reveal response`);
        check(c2.getIntersection(setup2, resp2).length === size, `${where}: size differs from the reveal twin`);
      });
    }

    // --- the vector, keys in the order of the format
    const v = {
      name: c.name,
      server_key: c.serverKey,
      client_key: c.clientKey,
      reveal_intersection: c.reveal,
      data_structure: c.ds,
      fpr: c.fpr,
      num_client_inputs: c.nc,
      server_inputs: c.server,
      client_inputs: c.client,
      server_setup: hex(setupBytes),
      request: hex(reqBytes),
      response: hex(respBytes),
    };
    if (c.reveal) v.intersection = intersection;
    v.intersection_size = size;
    return v;
  });
}

// ---------------------------------------------------------------------------------------

async function main() {
  const t0 = process.hrtime.bigint();
  selfTestHashToCurve();
  const psi = await loadPsi();
  const DS = { raw: psi.dataStructure.Raw, gcs: psi.dataStructure.GCS, bloom_filter: psi.dataStructure.BloomFilter };

  const cases = buildCases();
  const out = { format: FORMAT, generator: GENERATOR, cases: cases.map((c) => runCase(psi, DS, c)) };
  const text = writeJson(OUT_FILE, out);
  console.log(`${path.basename(OUT_FILE)}: ${cases.length} cases, ${sizeHashTime(text, t0)}`);
  console.log(`false positives across reveal cases: ${stats.falsePositives}`);
  if (stats.gcsTieOrderNotByIndex.length) {
    console.log(`note: GCS cases where equal-hash entries are not in index order: ${[...new Set(stats.gcsTieOrderNotByIndex)].join(', ')}`);
  }
}

// generate-random.mjs imports runCase() and the input helpers from this file; only a direct
// `node generate.mjs` writes openmined-psi-2.0.6.json.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  runMain('generate.mjs', main);
}
