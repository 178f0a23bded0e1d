// A first known-answer check of the wasm module through its C API: for
// every case of a psi-wire-vectors/1 file, the request and the server setup
// rebuilt from the case's keys and inputs must equal the file's bytes, and
// the intersection from its messages must equal the file's.  (The JS
// package and the worker pool are issue 4's; this only proves the module.)
//   node wasm/test/kat-smoke.cjs MODULE_DIR FILE...
// With no argument (as `node --test wasm/test/` runs it) it checks
// $SHARDPSI_WASM_DIR or build-wasm/wasm on the two committed wire files and the
// p256-sswu and ristretto255 suites' files.  A file's top-level "suite" names its suite
// (psi_settings.suite, the _suite bound functions; PROTOCOL.md §16).
'use strict';
const fs = require('fs');
const path = require('path');

// The glue is an ES module built for web and worker: it gets the wasm bytes and, for
// libsodium, a random source (Node has no `self` for it to find one).
async function load(dir) {
  const { pathToFileURL } = require('url');
  const { default: factory } = await import(pathToFileURL(path.resolve(dir, 'shardpsi.mjs')).href);
  const word = new Uint32Array(1);
  return factory({ wasmBinary: fs.readFileSync(path.resolve(dir, 'shardpsi.wasm')),
    getRandomValue: () => require('crypto').getRandomValues(word)[0] });
}

function main(M) {
  const u32 = (p) => M.HEAPU32[p >> 2];
  const put = (bytes) => { const p = M._malloc(bytes.length || 1); M.HEAPU8.set(bytes, p); return p; };
  const cstr = (s) => Buffer.from(s, 'utf8');
  const check = (rc, what) => {
    if (rc !== 0) throw new Error(`${what}: ${M.UTF8ToString(M._psi_strerror(rc))} (${rc})`);
  };
  function suiteId(name) {
    if (name === undefined) return 0;
    const out = M._malloc(4), n = put(cstr(`${name}\0`));
    check(M._psi_suite_from_name(out, n), `suite ${name}`);
    const id = u32(out); M._free(out); M._free(n); return id;
  }
  function engine(keyHex, role, reveal, suite = 0) {
    const s = M._malloc(64), out = M._malloc(4), key = put(Buffer.from(keyHex, 'hex'));
    M._psi_settings_default(s);
    M.HEAPU32[s >> 2] = role; M.HEAPU32[(s >> 2) + 1] = reveal ? 1 : 0;
    M.HEAPU32[(s >> 2) + 4] = suite;   // psi_settings.suite at offset 16
    check(M._psi_engine_create_from_key(out, s, key, keyHex.length / 2), 'create');
    const e = u32(out); M._free(s); M._free(out); M._free(key); return e;
  }
  function values(list) {   // psi_value[] {ptr, len} in the heap
    const arr = M._malloc(8 * list.length + 8), ptrs = [arr];
    list.forEach((v, i) => { const b = cstr(v), p = put(b); ptrs.push(p);
      M.HEAPU32[(arr >> 2) + 2 * i] = p; M.HEAPU32[(arr >> 2) + 2 * i + 1] = b.length; });
    return { arr, free: () => ptrs.forEach((p) => M._free(p)) };
  }
  function call(cap, fn) {  // fn(outPtr, lenPtr) -> rc; returns the bytes
    const out = M._malloc(cap || 1), len = M._malloc(4);
    M.HEAPU32[len >> 2] = cap;
    const rc = fn(out, len), n = u32(len), bytes = Buffer.from(M.HEAPU8.subarray(out, out + n));
    M._free(out); M._free(len); return { rc, bytes };
  }
  return { engine, values, call, check, put, suiteId };
}

(async () => {
  let [dir, ...files] = process.argv.slice(2);
  if (dir === undefined) {
    const root = path.resolve(__dirname, '../..');
    dir = process.env.SHARDPSI_WASM_DIR || path.join(root, 'build-wasm/wasm');
    files = ['vectors/openmined-psi-2.0.6.json', 'vectors/reference/sample-vectors.json',
      'vectors/shardpsi-p256-sswu.json', 'vectors/shardpsi-ristretto255.json']
      .map((f) => path.join(root, f));
  }
  const M = await load(dir);
  const api = main(M);
  let passed = 0, failed = 0;
  for (const file of files) {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8')), suite = api.suiteId(doc.suite);
    for (const c of doc.cases) {
      const fail = (what) => { failed++; console.log(`FAIL ${path.basename(file)}: ${c.name}: ${what}`); };
      const cl = api.engine(c.client_key, 1, c.reveal_intersection, suite);
      const sv = api.engine(c.server_key, 2, c.reveal_intersection, suite);
      const cv = api.values(c.client_inputs), svv = api.values(c.server_inputs);
      const req = api.call(Number(M._psi_request_bound(suite, c.client_inputs.length)),
        (o, l) => M._psi_client_create_request(cl, o, l, cv.arr, c.client_inputs.length));
      const structure = { raw: 0, gcs: 1, bloom_filter: 2 }[c.data_structure];
      const p = M._malloc(24);   // psi_setup_params {int, pad, double, int64}
      M.HEAPU32[p >> 2] = structure;
      new Float64Array(M.HEAPU8.buffer, p + 8, 1)[0] = c.fpr;
      new BigInt64Array(M.HEAPU8.buffer, p + 16, 1)[0] = BigInt(c.num_client_inputs);
      const bound = M._malloc(4);
      api.check(M._psi_setup_bound(bound, suite, p, c.server_inputs.length), 'setup bound');
      const setup = api.call(M.HEAPU32[bound >> 2], (o, l) =>
        M._psi_server_create_setup(sv, o, l, 0, p, svv.arr, c.server_inputs.length));
      let ok = true;
      if (req.rc !== 0 || req.bytes.toString('hex') !== c.request) { fail('request differs'); ok = false; }
      if (setup.rc !== 0 || setup.bytes.toString('hex') !== c.server_setup) { fail('setup differs'); ok = false; }
      if (c.reveal_intersection) {
        const s = api.put(Buffer.from(c.server_setup, 'hex')), r = api.put(Buffer.from(c.response, 'hex'));
        const cap = c.client_inputs.length, out = M._malloc(4 * cap + 4), cnt = M._malloc(4);
        M.HEAPU32[cnt >> 2] = cap;
        const rc = M._psi_client_get_intersection(cl, out, cnt, s, c.server_setup.length / 2, r,
          c.response.length / 2);
        const idx = Array.from(M.HEAPU32.subarray(out >> 2, (out >> 2) + M.HEAPU32[cnt >> 2]));
        if (rc !== 0 || JSON.stringify(idx) !== JSON.stringify(c.intersection)) {
          fail(`intersection differs (rc ${rc})`); ok = false;
        }
        [s, r, out, cnt].forEach((q) => M._free(q));
      }
      if (ok) passed++;
      M._free(p); M._free(bound); cv.free(); svv.free();
      M._psi_engine_free(cl); M._psi_engine_free(sv);
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
})().catch((e) => { console.error(e); process.exit(2); });
