// SPDX-License-Identifier: Apache-2.0
//
// Code shared by generate.mjs and generate-extra.mjs (generate-random.mjs reuses generate.mjs). Both generators must load psi.js with the
// same version and integrity checks and encode bytes, keys and output files the same way, so
// that code lives here once instead of being copied into each generator.
// This source file is ASCII only.

import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The vectors/ directory: psi.js is resolved from here and the output files are written here.
export const HERE = path.dirname(fileURLToPath(import.meta.url));

// The pinned package (README.md, "Pinned package"). Both generators refuse any other build.
export const PKG_NAME = '@openmined/psi.js';
export const PKG_VERSION = '2.0.6';
export const PKG_INTEGRITY =
  'sha512-ZJVe0AXGx5cvSaHbVGBiV1UEDLzWU0S8KYqKux6l1b8/9nYMhrthKuPNGdRT5VBBLj161xsZiwV27AQuxnKUrQ==';

// ---------------------------------------------------------------------------------------
// Failed checks. runMain() prints a VectorError as one line; anything else is a bug and is
// printed with its stack.

export class VectorError extends Error {}
export function check(cond, msg) {
  if (!cond) throw new VectorError(msg);
}

// Runs a generator's main(); on failure prints the reason and exits with status 1, so no
// output file is written (main() writes it last).
export function runMain(scriptName, main) {
  main().catch((e) => {
    console.error(e instanceof VectorError ? `${scriptName}: ${e.message}` : e);
    process.exit(1);
  });
}

// ---------------------------------------------------------------------------------------
// Bytes, hex and hashing

const te = new TextEncoder();
export const utf8 = (s) => Buffer.from(te.encode(s));
// Strings are hashed as their UTF-8 bytes.
export function sha256(...parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(typeof p === 'string' ? utf8(p) : p);
  return h.digest();
}
export const hex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('hex');
export const fromHex = (s) => Uint8Array.from(Buffer.from(s, 'hex'));
export const big = (u8) => (u8.length ? BigInt('0x' + hex(u8)) : 0n);
export const be32hex = (x) => x.toString(16).padStart(64, '0');
export const cmpHex = (a, b) => (a < b ? -1 : a > b ? 1 : 0); // equal-length lowercase hex = bytewise order
export const sameJson = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// ---------------------------------------------------------------------------------------
// P-256 (PROTOCOL.md section 1)

export const P = BigInt('0xffffffff00000001000000000000000000000000ffffffffffffffffffffffff');
export const N = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551');
export const CURVE_B = BigInt('0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b');

export function modpow(b, e, m) {
  let r = 1n;
  b %= m;
  while (e > 0n) {
    if (e & 1n) r = (r * b) % m;
    b = (b * b) % m;
    e >>= 1n;
  }
  return r;
}

// Keys: SHA-256 of a label, retried with "#1", "#2", ... until in [1, n-1]. The label's prefix
// keeps the two generators' keys apart.
export function derivedKey(label) {
  for (let i = 0; ; i++) {
    const d = sha256(label + (i ? `#${i}` : ''));
    const k = big(d);
    if (k > 0n && k < N) return hex(d);
  }
}

// ---------------------------------------------------------------------------------------
// Deterministic randomness: SHA-256 in counter mode over a seed label. Subclasses supply u32():
// the two generators draw their words from the blocks differently, and must keep doing so, or
// their inputs (and so their files) change.

export class CounterRng {
  constructor(seedLabel) {
    this.seed = sha256(seedLabel);
    this.ctr = 0n;
  }
  // the next 32-byte block: SHA-256(seed || 64-bit big-endian counter)
  block() {
    const c = Buffer.alloc(8);
    c.writeBigUInt64BE(this.ctr++);
    return sha256(this.seed, c);
  }
  below(n) {
    // uniform integer in [0, n), 1 <= n <= 2^32
    const lim = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const v = this.u32();
      if (v < lim) return v % n;
    }
  }
  pick(arr) {
    return arr[this.below(arr.length)];
  }
  shuffle(arr) {
    const a = arr.slice();
    for (let i = a.length - 1; i > 0; i--) {
      const j = this.below(i + 1);
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  }
}

// ---------------------------------------------------------------------------------------
// Loading psi.js. Both generators must run exactly the pinned build, so they share this.

function loadPsiModule() {
  const require = createRequire(path.join(HERE, 'package.json'));
  let pkgJsonPath;
  try {
    pkgJsonPath = require.resolve(`${PKG_NAME}/package.json`);
  } catch {
    throw new VectorError(`${PKG_NAME} is not installed: run "npm install --ignore-scripts" in ${HERE}`);
  }
  check(pkgJsonPath.startsWith(path.join(HERE, 'node_modules') + path.sep),
    `${PKG_NAME} resolved outside vectors/node_modules (${pkgJsonPath}); run "npm install --ignore-scripts" in ${HERE}`);
  const pkg = JSON.parse(readFileSync(pkgJsonPath, 'utf8'));
  check(pkg.version === PKG_VERSION, `installed ${PKG_NAME} is ${pkg.version}, expected ${PKG_VERSION}`);
  // npm records the tarball integrity of what it installed in its hidden lock file.
  const hidden = path.join(HERE, 'node_modules', '.package-lock.json');
  if (existsSync(hidden)) {
    const lock = JSON.parse(readFileSync(hidden, 'utf8'));
    const entry = lock.packages && lock.packages[`node_modules/${PKG_NAME}`];
    check(entry && entry.integrity === PKG_INTEGRITY,
      `integrity of installed ${PKG_NAME} is ${entry && entry.integrity}, expected ${PKG_INTEGRITY}`);
  } else {
    console.warn(`warning: ${hidden} missing, cannot check the package integrity`);
  }
  return require(PKG_NAME); // psi_wasm_node.js: a factory returning a Promise of the library
}

// The loaded library, after checking the version it reports itself.
export async function loadPsi() {
  const factory = loadPsiModule();
  const psi = await factory();
  check(psi.package.version === PKG_VERSION, `psi.js reports version ${psi.package.version}`);
  return psi;
}

// ---------------------------------------------------------------------------------------
// psi.js objects

// The repeated encrypted_elements of a psi.js message (Request, Response, raw setup), as hex.
export function elementsOf(msg) {
  return msg.getEncryptedElementsList_asU8().map(hex);
}

// Runs fn(server, client) with two psi.js parties and frees their WebAssembly objects afterwards.
export function withParties(psi, serverKey, clientKey, reveal, fn) {
  const server = psi.server.createFromKey(fromHex(serverKey), reveal);
  const client = psi.client.createFromKey(fromHex(clientKey), reveal);
  try {
    return fn(server, client);
  } finally {
    server.delete();
    client.delete();
  }
}

// ---------------------------------------------------------------------------------------
// Output

// Writes value as the vector files' JSON (2-space indent, final newline) through a temporary
// file, so a failed run never leaves a partial file. Returns the text written.
export function writeJson(file, value) {
  const text = JSON.stringify(value, null, 2) + '\n';
  check(sameJson(JSON.parse(text), value), 'output does not survive a JSON round trip');
  const tmp = file + '.tmp';
  writeFileSync(tmp, text);
  renameSync(tmp, file);
  return text;
}

// "<bytes> bytes, sha256 <hex>, <seconds> s": the end of each generator's summary line.
export function sizeHashTime(text, t0) {
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  return `${Buffer.byteLength(text)} bytes, sha256 ${sha256(text).toString('hex')}, ${(ms / 1000).toFixed(1)} s`;
}
