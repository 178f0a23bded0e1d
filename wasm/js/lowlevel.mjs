// The thin typed layer over the C API of one module instance (psi.h), shared by
// the psi.js-like surface (index.mjs) and the worker pool.  Engines and plans are
// plain heap pointers here: their owner frees them.
//
// Rules kept by every function:
//  - heap memory is allocated in a Frame and freed in `finally`, on every path;
//    heap copies of secret bytes (keys) are zeroed before they are freed;
//  - a non-zero return code throws PsiError (code, codeName = psi_error_name,
//    message = psi_error_message: psi_strerror preceded by the place of the bad input
//    when the thread's psi_error_detail describes this code, func = the C function,
//    field/index/offset = that detail's, null when none); errors found in JS carry no
//    place (jsError);
//  - results are copied out of the heap (the heap views change when memory grows,
//    so they are read afresh from the Module after every allocation or call);
//  - sizes come from psi_*_bytes() and the *_bound() functions, not literals.
//
// Suites (PROTOCOL.md §16): engines carry their suite (psi_settings.suite); the calls on
// an engine use it.  The pure codec steps take a suite id (SUITE; default openmined-p256)
// and call the plain C functions for the default suite and their _suite forms
// (psi_*_suite) for the others.  Elements in memory are ELEMENT_BYTES (33) slots in every
// suite: a ristretto255 element fills 32 bytes and a zero byte.
//
// wasm32 layouts (checked by static asserts in wasm/shardpsi_wasm.c and the tests):
//   size_t 4 bytes; psi_value {data ptr, len} 8; psi_pair {client, server} 8;
//   psi_settings {role u32, reveal u32, progress ptr, progress_arg ptr, suite u32 @16, reserved[28]} 48;
//   psi_setup_params {structure u32, pad, double fpr @8, int64 num_client_inputs @16} 24;
//   psi_error_detail {code i32, field ptr @4, index i64 @8, offset i64 @16} 24;
//   psi_op_args {op u32, values ptr @4, n_values @8, message ptr @12, message_len @16,
//     setup ptr @20, setup_len @24, params @32 (24), step u32 @56, slices @60,
//     slice_counts ptr @64, external i32 @68, progress ptr @72, progress_arg ptr @76,
//     setup_read fn @80 (0 here), setup_read_arg ptr @84, setup_max_held u64 @88 (0),
//     reserved[16] @96} 112;
//   psi_op_output {bytes ptr, len @4, sink fn @8 (0 here), sink_arg @12, perm ptr @16,
//                  indices ptr @20, pairs ptr @24, count @28} 32;
//   psi_step {kind u32, offset @4, count @8, values ptr @12, points ptr @16} 20.
// int64 arguments (psi_plan_put's index) cross the JS boundary as two i32 halves, low first.

import { PsiError, PSI_E_INVALID_ARG, PSI_E_NOMEM, packValues, packedCount, asBytes, toU32,
  SUITES, DEFAULT_SUITE } from './values.mjs';

export { PsiError, PSI_E_INVALID_ARG, PSI_E_NOMEM, packValues, packedCount, asBytes, toU32, SUITES, DEFAULT_SUITE };

export const ROLE = Object.freeze({ CLIENT: 1, SERVER: 2 });
export const STRUCTURE = Object.freeze({ RAW: 0, GCS: 1, BLOOM_FILTER: 2 });
// psi_op: the operations of a plan; psi_step_kind: the kinds of step.
export const OP = Object.freeze({ SETUP: 1, REQUEST: 2, RESPONSE: 3, INTERSECTION: 4,
  INTERSECTION_SIZE: 5, ASSOCIATION: 6, STEP: 7 });
export const STEP = Object.freeze({ MASK: 1, MASK_SORT: 2, REMASK: 3, UNMASK: 4, REMASK_SORT: 5,
  UNMASK_SORT: 6 });
const stepMasks = (kind) => kind === STEP.MASK || kind === STEP.MASK_SORT;
const stepSorts = (kind) => kind === STEP.MASK_SORT || kind === STEP.REMASK_SORT || kind === STEP.UNMASK_SORT;
// psi_suite: the ids of SUITES' names.
export const SUITE = Object.freeze({ OPENMINED_P256: 0, P256_SSWU: 1, RISTRETTO255: 2 });

const SETTINGS_BYTES = 48;
const SETTINGS_SUITE = 16; // offset of psi_settings.suite
const PSI_E_SUITE = -32;
const PARAMS_BYTES = 24;
const DETAIL_BYTES = 24;
const ARGS_BYTES = 112;
const ARGS = { op: 0, values: 4, nValues: 8, message: 12, messageLen: 16, setup: 20, setupLen: 24,
  params: 32, step: 56, slices: 60 };
const OUTPUT_BYTES = 32;
const OUTPUT = { bytes: 0, len: 4, perm: 16, indices: 20, pairs: 24, count: 28 };
const STEP_BYTES = 20;
// psi_message_kind and PSI_MESSAGE_HEAD_MAX (psi.h, messages in chunks).
const MESSAGE = Object.freeze({ REQUEST: 1, RESPONSE: 2, SETUP_RAW: 3 });
const MESSAGE_HEAD_MAX = 16;
const ERROR_MESSAGE_BYTES = 256; // PSI_ERROR_MESSAGE_BYTES

// An int64 index or offset of a psi_error_detail: a number, null for -1 (none).
function detailInt(dv, at) {
  const v = dv.getBigInt64(at, true);
  return v < 0n ? null : Number(v);
}

// ------------------------------------------------------------------ the heap

// The allocations of one call, all freed by free(), secret ones zeroed first.
class Frame {
  constructor(M) { this.M = M; this.ptrs = []; this.secrets = []; }
  alloc(n) {
    const p = this.M._malloc(n > 0 ? n : 1) >>> 0;
    if (p === 0) throw new PsiError(PSI_E_NOMEM, 'out of memory (wasm heap)', 'PSI_E_NOMEM', 'malloc');
    this.ptrs.push(p);
    return p;
  }
  allocSecret(n) { const p = this.alloc(n); this.secrets.push([p, n]); return p; }
  put(bytes) { const p = this.alloc(bytes.length); this.M.HEAPU8.set(bytes, p); return p; }
  putSecret(bytes) { const p = this.allocSecret(bytes.length); this.M.HEAPU8.set(bytes, p); return p; }
  putU32(arr) { const p = this.alloc(4 * arr.length); this.M.HEAPU32.set(arr, p >>> 2); return p; }
  free() {
    const { M } = this;
    for (const [p, n] of this.secrets) M.HEAPU8.fill(0, p, p + n);
    for (let i = this.ptrs.length - 1; i >= 0; i--) M._free(this.ptrs[i]);
    this.ptrs = [];
    this.secrets = [];
  }
}

export class LowLevel {
  constructor(M) {
    this.M = M;
    this.ELEMENT_BYTES = M._psi_element_bytes() >>> 0;
    this.KEY_BYTES = M._psi_key_bytes() >>> 0;
    this.ELEMENT_WIRE_BYTES = 2 + (M._psi_suite_element_bytes(0) >>> 0); // openmined-p256's record
  }

  // Runs fn(frame) and frees the frame's memory whatever happens.
  frame(fn) {
    const f = new Frame(this.M);
    try { return fn(f); } finally { f.free(); }
  }

  get heapBytes() { return this.M.HEAPU8.length; }
  u32(p) { return this.M.HEAPU32[p >>> 2]; }
  bytesAt(p, n) { return this.M.HEAPU8.slice(p, p + n); }
  u32At(p, n) { return this.M.HEAPU32.slice(p >>> 2, (p >>> 2) + n); }
  cstr(p) { return p ? this.M.UTF8ToString(p) : null; }

  version() { return this.cstr(this.M._psi_version()); }
  errorName(code) { return this.cstr(this.M._psi_error_name(code)); }
  strerror(code) { return this.cstr(this.M._psi_strerror(code)); }
  codeName(code) { return this.errorName(code) ?? `PSI error ${code}`; }
  // This thread's psi_error_detail as { code, field, index, offset } (index and offset
  // null for -1), or null if the heap has no room for it.
  detail() {
    const M = this.M, p = M._malloc(DETAIL_BYTES) >>> 0;
    if (p === 0) return null;
    try {
      M._psi_error_detail_get(p);
      const dv = new DataView(M.HEAPU8.buffer, p, DETAIL_BYTES);
      return { code: dv.getInt32(0, true), field: this.cstr(dv.getUint32(4, true)),
        index: detailInt(dv, 8), offset: detailInt(dv, 16) };
    } finally { M._free(p); }
  }
  // psi_error_message(code): psi_strerror's text, preceded by the place when this thread's
  // detail describes code; psi_strerror's alone if the heap has no room for it.
  errorMessage(code) {
    const M = this.M;
    let cap = ERROR_MESSAGE_BYTES;
    for (;;) {
      const p = M._malloc(cap) >>> 0;
      if (p === 0) return this.strerror(code);
      try {
        const len = M._psi_error_message(p, cap, code) >>> 0;
        if (len < cap) return M.UTF8ToString(p, len);
        cap = len + 1; // never with PSI_ERROR_MESSAGE_BYTES; kept for a longer field name
      } finally { M._free(p); }
    }
  }
  // The PsiError of a C call that has just returned code (no library call in between: the
  // next one clears this thread's detail): message from psi_error_message, and field, index
  // and offset from psi_error_detail_get when the detail describes this code.
  error(code, func) {
    const d = this.detail();
    const message = this.errorMessage(code);
    return new PsiError(code, message, this.codeName(code), func, d && d.code === code ? d : null);
  }
  check(rc, func) { if (rc !== 0) throw this.error(rc, func); }
  // An error found on the JS side: psi_strerror's message (then ": " and note, if given),
  // no place (the thread's detail belongs to some earlier call).
  jsError(code, func, note) {
    const text = this.strerror(code);
    return new PsiError(code, note ? `${text}: ${note}` : text, this.codeName(code), func);
  }
  // PSI_E_INVALID_ARG found on the JS side, with what was wrong.
  invalid(note, func) { return this.jsError(PSI_E_INVALID_ARG, func, note); }

  // ---------------------------------------------------------------- suites

  // The suite id (psi_suite) of a suite given by name ("openmined-p256", "p256-sswu",
  // "ristretto255", as psi_suite_name gives them) or by id; undefined/null is the default
  // suite.  An unknown name or id throws the PsiError PSI_E_SUITE of psi_suite_from_name;
  // anything else a TypeError.
  suiteId(suite) {
    if (suite === undefined || suite === null) return SUITE.OPENMINED_P256;
    if (typeof suite === 'number' && Number.isInteger(suite)) {
      if (suite >= 0 && suite <= 0x7fffffff && this.M._psi_suite_name(suite) !== 0) return suite;
      throw this.jsError(PSI_E_SUITE, 'psi_suite_name', `no suite has the id ${suite}`);
    }
    if (typeof suite !== 'string') throw new TypeError(`suite must be one of ${SUITES.join(', ')}`);
    // a name holding U+0000 would be cut short in C
    if (suite.includes('\0')) throw this.jsError(PSI_E_SUITE, 'psi_suite_from_name', 'the name holds U+0000');
    return this.frame((f) => {
      const out = f.alloc(4);
      this.check(this.M._psi_suite_from_name(out, f.put(new TextEncoder().encode(`${suite}\0`))), 'psi_suite_from_name');
      return this.u32(out);
    });
  }
  // psi_suite_name of an id, or null.
  suiteName(id) { return Number.isInteger(id) && id >= 0 ? this.cstr(this.M._psi_suite_name(id)) : null; }
  // Bytes of one element of the suite on the wire (33, or 32 for ristretto255).
  suiteElementBytes(id) { return this.M._psi_suite_element_bytes(id) >>> 0; }
  // Bounds of the suite (the plain functions for the default suite).
  requestBound(suite, n) {
    return this.M._psi_request_bound(suite, n) >>> 0;
  }
  responseBound(suite, n) {
    return this.M._psi_response_bound(suite, n) >>> 0;
  }
  messageElementBound(suite, len) {
    return this.M._psi_message_element_bound(suite, len) >>> 0;
  }
  // psi_setup_bound(_suite) into the size_t at out; checks the code.
  setupBoundAt(f, out, suite, p, n) {
    this.check(this.M._psi_setup_bound(out, suite, p, n), 'psi_setup_bound');
  }

  // Calls fn(out, lenPtr) with cap bytes of output; returns a copy of the bytes written.
  outBytes(f, cap, func, fn) {
    const out = f.alloc(cap), len = f.alloc(4);
    this.M.HEAPU32[len >>> 2] = cap;
    this.check(fn(out, len), func);
    return this.bytesAt(out, this.u32(len));
  }
  // As outBytes for an output of cap size_t items (size_t = u32 on wasm32).
  outU32(f, cap, func, fn) {
    const out = f.alloc(4 * cap), cnt = f.alloc(4);
    this.M.HEAPU32[cnt >>> 2] = cap;
    this.check(fn(out, cnt), func);
    return this.u32At(out, this.u32(cnt));
  }

  // psi_value[] for packed values; returns the array's pointer (0 for none).
  putValues(f, values) {
    let packed;
    try {
      packed = packValues(values);
    } catch (e) {
      throw e instanceof PsiError ? this.invalid(e.message, e.func) : e;
    }
    const n = packedCount(packed);
    if (n === 0) return { arr: 0, n };
    const data = f.put(packed.data), arr = f.alloc(8 * n), H = this.M.HEAPU32, o = packed.offsets;
    for (let i = 0, w = arr >>> 2; i < n; i++, w += 2) {
      H[w] = data + o[i];
      H[w + 1] = o[i + 1] - o[i];
    }
    return { arr, n };
  }

  // psi_setup_params from { structure, fpr, numClientInputs }, written at p (PARAMS_BYTES).
  writeParams(p, { structure, fpr, numClientInputs }) {
    if (!Number.isInteger(structure)) throw new TypeError('dataStructure must be an integer');
    if (typeof fpr !== 'number') throw new TypeError('fpr must be a number');
    let nci = numClientInputs;
    if (typeof nci === 'number') {
      if (!Number.isInteger(nci)) throw new RangeError('numClientInputs must be an integer');
      nci = BigInt(nci);
    }
    if (typeof nci !== 'bigint') throw new TypeError('numClientInputs must be an integer');
    if (nci < -(2n ** 63n) || nci >= 2n ** 63n) throw new RangeError('numClientInputs is outside int64');
    const dv = new DataView(this.M.HEAPU8.buffer, p, PARAMS_BYTES);
    dv.setInt32(0, structure, true);
    dv.setInt32(4, 0, true);
    dv.setFloat64(8, fpr, true);
    dv.setBigInt64(16, nci, true);
    return p;
  }
  putParams(f, params) { return this.writeParams(f.alloc(PARAMS_BYTES), params); }

  // --------------------------------------------------------------- engines

  // psi_settings with role, reveal and suite (a name or id, see suiteId; default
  // openmined-p256).
  putSettings(f, role, reveal, suite) {
    const id = this.suiteId(suite);
    const s = f.alloc(SETTINGS_BYTES);
    this.M._psi_settings_default(s);
    this.M.HEAPU32[s >>> 2] = role;
    this.M.HEAPU32[(s >>> 2) + 1] = reveal ? 1 : 0;
    this.M.HEAPU32[(s + SETTINGS_SUITE) >>> 2] = id;
    return s;
  }
  // A fresh random key.  Returns the engine pointer; free it with engineFree.
  engineCreate(role, reveal, suite) {
    return this.frame((f) => {
      const out = f.alloc(4), s = this.putSettings(f, role, reveal, suite);
      this.check(this.M._psi_engine_create(out, s), 'psi_engine_create');
      return this.u32(out);
    });
  }
  // From a key: P-256 suites, any number of big-endian bytes, 1 <= k < n (PROTOCOL.md
  // §2.1); ristretto255, 32 little-endian bytes, 1 <= k < l (§16.3).
  engineFromKey(role, reveal, key, suite) {
    const k = asBytes(key, 'key');
    return this.frame((f) => {
      const out = f.alloc(4), s = this.putSettings(f, role, reveal, suite), kp = f.putSecret(k);
      this.check(this.M._psi_engine_create_from_key(out, s, kp, k.length), 'psi_engine_create_from_key');
      return this.u32(out);
    });
  }
  engineFree(e) { if (e) this.M._psi_engine_free(e); }
  engineRole(e) { return this.M._psi_engine_role(e); }
  engineReveal(e) { return this.M._psi_engine_reveal(e) !== 0; }
  // The engine's suite id (SUITE).
  engineSuite(e) { return this.M._psi_engine_suite(e); }
  // The key as KEY_BYTES bytes, big-endian (P-256 suites) or little-endian (ristretto255)
  // (a copy; the heap copy is zeroed).
  engineExportKey(e) {
    return this.frame((f) => {
      const out = f.allocSecret(this.KEY_BYTES), len = f.alloc(4);
      this.M.HEAPU32[len >>> 2] = this.KEY_BYTES;
      this.check(this.M._psi_engine_export_key(e, out, len), 'psi_engine_export_key');
      return this.bytesAt(out, this.u32(len));
    });
  }

  // ------------------------------------------------------ batch primitives

  mask(e, values) {
    return this.frame((f) => {
      const { arr, n } = this.putValues(f, values);
      return this.outBytes(f, n * this.ELEMENT_BYTES, 'psi_engine_mask',
        (o, l) => this.M._psi_engine_mask(e, o, l, arr, n));
    });
  }
  // The number of whole elements in bytes el (PsiError PSI_E_INVALID_ARG otherwise).
  elementCount(el, func) {
    const n = el.length / this.ELEMENT_BYTES;
    if (!Number.isInteger(n)) throw this.invalid(`not a whole number of ${this.ELEMENT_BYTES}-byte elements`, func);
    return n;
  }
  pointsCall(func, e, points) {
    const pts = asBytes(points, 'points'), n = this.elementCount(pts, func);
    return this.frame((f) => {
      const p = f.put(pts);
      return this.outBytes(f, pts.length, func, (o, l) => this.M['_' + func](e, o, l, p, n));
    });
  }
  remask(e, points) { return this.pointsCall('psi_engine_remask', e, points); }
  unmask(e, points) { return this.pointsCall('psi_engine_unmask', e, points); }
  // Checks a partner's element (psi_point_check; psi_point_check_suite for another suite).
  pointCheck(point, suite = 0) {
    const b = asBytes(point, 'point');
    this.frame((f) => {
      this.check(this.M._psi_point_check(suite, f.put(b), b.length), 'psi_point_check');
    });
  }
  // ---------------------------------------------------- payloads (PROTOCOL.md §22)

  // The payload table of n server values of suite from their masked elements (mask() of
  // the server engine: n * ELEMENT_BYTES bytes) and their payloads (as values for mask());
  // padLen: the padded length (0: the longest payload); salt: 32 bytes, or null for a
  // fresh random one (a given salt is for known-answer tests).
  payloadTableBuild(suite, elements, payloads, padLen = 0, salt = null) {
    const func = 'psi_payload_table_build';
    const el = asBytes(elements, 'elements'), n = this.elementCount(el, func);
    const sb = salt == null ? null : asBytes(salt, 'salt');
    if (sb && sb.length !== 32) throw this.invalid('salt must be 32 bytes', func);
    return this.frame((f) => {
      const { arr, n: np } = this.putValues(f, payloads);
      if (np !== n) throw this.invalid(`${np} payloads for ${n} elements`, func);
      const ep = f.put(el), sp = sb ? f.put(sb) : 0, need = f.alloc(4);
      this.M.HEAPU32[need >>> 2] = 0;
      const rc = this.M._psi_payload_table_build(suite, 0, need, ep, arr, n, padLen >>> 0, sp);
      if (rc !== -4) this.check(rc === 0 ? -1 : rc, func); // PSI_E_BUFFER_TOO_SMALL gives the size
      return this.outBytes(f, this.u32(need), func,
        (o, l) => this.M._psi_payload_table_build(suite, o, l, ep, arr, n, padLen >>> 0, sp));
    });
  }
  // The options of a payload table: { padLen (0: the longest payload), salt (32 bytes, or
  // null for a fresh one) }.
  payloadOptions(options, func = 'psi_payload_table_build') {
    if (options === undefined || options === null) return { padLen: 0, salt: null };
    if (typeof options !== 'object') throw new TypeError('options must be an object ({ padLen, salt })');
    const padLen = options.padLen ?? 0;
    if (!Number.isInteger(padLen) || padLen < 0) throw this.invalid('padLen must be a non-negative integer', func);
    const salt = options.salt === undefined || options.salt === null ? null : asBytes(options.salt, 'salt');
    return { padLen, salt };
  }
  // The elements of a Response (of suite) at the given indices, in their order: the
  // matched values' elements a client unmasks again to open their payloads.
  pickElements(response, suite, indices) {
    const all = this.responseDecode(response, suite), E = this.ELEMENT_BYTES;
    const out = new Uint8Array(indices.length * E);
    indices.forEach((i, k) => {
      if (!Number.isInteger(i) || i < 0 || (i + 1) * E > all.length) {
        throw this.invalid(`index ${i} is not an element of the response`, 'psi_response_decode');
      }
      out.set(all.subarray(i * E, (i + 1) * E), k * E);
    });
    return out;
  }
  // Checks a payload table of suite: { count, padLen }, else PsiError.
  payloadTableCheck(suite, table) {
    const t = asBytes(table, 'table');
    return this.frame((f) => {
      const n = f.alloc(4), l = f.alloc(4);
      this.check(this.M._psi_payload_table_check(suite, f.put(t), t.length, n, l),
        'psi_payload_table_check');
      return { count: this.u32(n), padLen: this.u32(l) };
    });
  }
  // Opens the payloads of unmasked elements (a client's, n * ELEMENT_BYTES bytes): an
  // array of Uint8Array, or null where no record has the element's tag.  A damaged table,
  // or a record that does not open, throws its PsiError.
  payloadOpen(suite, table, elements) {
    const func = 'psi_payload_open';
    const t = asBytes(table, 'table'), el = asBytes(elements, 'elements');
    const k = this.elementCount(el, func), { padLen } = this.payloadTableCheck(suite, t);
    return this.frame((f) => {
      const out = f.alloc(k * padLen), lens = f.alloc(4 * k);
      this.check(this.M._psi_payload_open(suite, f.put(t), t.length, f.put(el), k, out,
        k * padLen, lens), func);
      const L = this.u32At(lens, k);
      return Array.from(L, (len, i) => (len === 0xffffffff ? null
        : this.bytesAt(out + i * padLen, len)));
    });
  }

  // Parses a ServerSetup of suite (psi_setup_parse, or psi_setup_parse_suite for another
  // suite) and runs fn(frame, setupPtr); the parsed setup is freed (psi_setup_free)
  // whatever happens.
  withSetup(setup, fn, suite = 0) {
    const b = asBytes(setup, 'setup');
    return this.frame((f) => {
      const out = f.alloc(4), sp = f.put(b);
      this.check(this.M._psi_setup_parse(out, suite, sp, b.length), 'psi_setup_parse');
      const s = this.u32(out);
      try { return fn(f, s); } finally { this.M._psi_setup_free(s); }
    });
  }
  // Checks a ServerSetup: its data structure (STRUCTURE) if it parses, else PsiError.
  setupParse(setup, suite = 0) { return this.withSetup(setup, (f, s) => this.M._psi_setup_structure(s), suite); }

  // ------------------------------------------------------------- messages

  setupBound(params, n, suite = 0) {
    return this.frame((f) => {
      const out = f.alloc(4), p = this.putParams(f, params);
      this.setupBoundAt(f, out, suite, p, n);
      return this.u32(out);
    });
  }
  // Returns { setup, perm } (perm: Uint32Array of input indices in setup order, only when
  // asked for and only meaningful for the raw structure; null otherwise).
  createSetup(e, params, values, wantPerm = false) {
    return this.frame((f) => {
      const { arr, n } = this.putValues(f, values), p = this.putParams(f, params);
      const bp = f.alloc(4);
      this.setupBoundAt(f, bp, this.engineSuite(e), p, n);
      const perm = wantPerm ? f.alloc(4 * n) : 0;
      const setup = this.outBytes(f, this.u32(bp), 'psi_server_create_setup',
        (o, l) => this.M._psi_server_create_setup(e, o, l, perm, p, arr, n));
      return { setup, perm: wantPerm ? this.u32At(perm, n) : null };
    });
  }
  processRequest(e, request) {
    const req = asBytes(request, 'request'), suite = this.engineSuite(e);
    const cap = this.responseBound(suite, this.messageElementBound(suite, req.length));
    return this.frame((f) => {
      const rp = f.put(req);
      return this.outBytes(f, cap, 'psi_server_process_request',
        (o, l) => this.M._psi_server_process_request(e, o, l, rp, req.length));
    });
  }
  createRequest(e, values) {
    return this.frame((f) => {
      const { arr, n } = this.putValues(f, values);
      const cap = this.requestBound(this.engineSuite(e), n);
      if (cap === 0) throw this.invalid('too many inputs for one request', 'psi_request_bound');
      return this.outBytes(f, cap, 'psi_client_create_request',
        (o, l) => this.M._psi_client_create_request(e, o, l, arr, n));
    });
  }

  // The client's match calls of engine e: fn(frame, setupPtr, setupLen, respPtr, respLen, cap).
  matchCall(e, setup, response, fn) {
    const s = asBytes(setup, 'setup'), r = asBytes(response, 'response');
    const cap = this.messageElementBound(this.engineSuite(e), r.length);
    return this.frame((f) => fn(f, f.put(s), s.length, f.put(r), r.length, cap));
  }
  // Indices into the request (reveal on), in OpenMined's order: Uint32Array.
  intersection(e, setup, response) {
    return this.matchCall(e, setup, response, (f, sp, sl, rp, rl, cap) =>
      this.outU32(f, cap, 'psi_client_get_intersection',
        (o, c) => this.M._psi_client_get_intersection(e, o, c, sp, sl, rp, rl)));
  }
  intersectionSize(e, setup, response) {
    return this.matchCall(e, setup, response, (f, sp, sl, rp, rl) => {
      const out = f.alloc(4);
      this.check(this.M._psi_client_get_intersection_size(e, out, sp, sl, rp, rl),
        'psi_client_get_intersection_size');
      return this.u32(out);
    });
  }
  // Association pairs (raw setup, reveal on) as a Uint32Array [c0, s0, c1, s1, ...],
  // s = setup positions, ordered by setup position.
  association(e, setup, response) {
    return this.matchCall(e, setup, response, (f, sp, sl, rp, rl, cap) => {
      const out = f.alloc(8 * cap), cnt = f.alloc(4);
      this.M.HEAPU32[cnt >>> 2] = cap; // capacity in pairs
      this.check(this.M._psi_client_get_association(e, out, cnt, sp, sl, rp, rl), 'psi_client_get_association');
      return this.u32At(out, 2 * this.u32(cnt));
    });
  }
  // Maps pairs' setup positions to server input indices and reorders them by server index.
  associationMap(pairs, perm) {
    const pr = toU32(pairs, 'pairs'), pm = toU32(perm, 'permutation');
    if (pr.length % 2 !== 0) throw this.invalid('pairs must hold an even number of indices', 'psi_association_map');
    return this.frame((f) => {
      const pp = f.putU32(pr), mp = f.putU32(pm);
      this.check(this.M._psi_association_map(pp, pr.length / 2, mp, pm.length), 'psi_association_map');
      return this.u32At(pp, pr.length);
    });
  }

  // ------------------------------------------------------------ codec steps

  // The encoders take the suite id last (default openmined-p256).  Requests and responses
  // are the library's head and records (psi.h, PROTOCOL.md §10.1); a setup is a plan of the
  // library given the elements as its one slice's output, so its structure (GCS, Bloom) is
  // built, and a raw setup's order checked, by the library.
  messageEncode(kind, reveal, elements, suite, func) {
    const el = asBytes(elements, 'elements'), n = this.elementCount(el, func);
    return this.frame((f) => {
      const ep = f.put(el), hp = f.alloc(MESSAGE_HEAD_MAX), hl = f.alloc(4);
      this.M.HEAPU32[hl >>> 2] = MESSAGE_HEAD_MAX;
      this.check(this.M._psi_message_head(hp, hl, suite, kind, reveal ? 1 : 0, n, 0), func);
      const head = this.bytesAt(hp, this.u32(hl));
      const body = this.outBytes(f, n * (2 + (this.M._psi_suite_element_bytes(suite) >>> 0)), func,
        (o, l) => this.M._psi_message_records(o, l, suite, kind, ep, n));
      const msg = new Uint8Array(head.length + body.length);
      msg.set(head, 0);
      msg.set(body, head.length);
      return msg;
    });
  }
  requestEncode(reveal, elements, suite = 0) {
    return this.messageEncode(MESSAGE.REQUEST, reveal, elements, suite, 'psi_message_records');
  }
  responseEncode(elements, suite = 0) {
    return this.messageEncode(MESSAGE.RESPONSE, false, elements, suite, 'psi_message_records');
  }
  setupEncode(params, elements, suite = 0) {
    const el = asBytes(elements, 'elements'), n = this.elementCount(el, 'psi_server_create_setup');
    const key = new Uint8Array(this.KEY_BYTES);
    key[suite === SUITE.RISTRETTO255 ? 0 : key.length - 1] = 1; // the key 1: no step runs
    const e = this.engineFromKey(ROLE.SERVER, true, key, suite);
    try {
      // n empty values, none of them masked: the elements are put as the slice's output.
      const plan = this.planBegin(e, { op: OP.SETUP, values: new Array(n).fill(''), params },
        'psi_server_create_setup');
      try {
        const perm = new Uint32Array(n);
        for (let i = 0; i < n; i++) perm[i] = i;
        this.planPut(plan, 0, { code: 0, out: el, perm });
        return this.planFinish(plan).bytes;
      } finally { this.planFree(plan); }
    } finally { this.engineFree(e); }
  }
  // Decodes a message of suite into contiguous elements: fn(out, countPtr, msgPtr, len) -> rc.
  decodeCall(msg, func, extra, fn, suite = 0) {
    const m = asBytes(msg, 'message'), cap = this.messageElementBound(suite, m.length);
    return this.frame((f) => {
      const mp = f.put(m), out = f.alloc(cap * this.ELEMENT_BYTES), cnt = f.alloc(4), x = f.alloc(4);
      this.M.HEAPU32[cnt >>> 2] = cap;
      this.check(fn(out, cnt, x, mp, m.length), func);
      return { elements: this.bytesAt(out, this.u32(cnt) * this.ELEMENT_BYTES), extra: extra ? this.u32(x) : 0 };
    });
  }
  // { elements, reveal } of a Request.
  requestDecode(msg, suite = 0) {
    const r = suite
      ? this.decodeCall(msg, 'psi_request_decode', true,
        (o, c, x, m, l) => this.M._psi_request_decode(o, c, x, suite, m, l), suite)
      : this.decodeCall(msg, 'psi_request_decode', true,
        (o, c, x, m, l) => this.M._psi_request_decode(o, c, x, 0, m, l));
    return { elements: r.elements, reveal: r.extra !== 0 };
  }
  // The elements of a Response.
  responseDecode(msg, suite = 0) {
    return (suite
      ? this.decodeCall(msg, 'psi_response_decode', false,
        (o, c, x, m, l) => this.M._psi_response_decode(o, c, suite, m, l), suite)
      : this.decodeCall(msg, 'psi_response_decode', false,
        (o, c, x, m, l) => this.M._psi_response_decode(o, c, 0, m, l))).elements;
  }

  // ------------------------------------------------------- plans of steps (psi.h)
  // A plan is { ptr, op, func, n, frame }: func names its errors (the message call the
  // plan stands for, e.g. 'psi_server_process_request', as one engine reports them); n is
  // the number of values or points given (null for a message); frame holds the arguments
  // (the plan borrows the values) until planFree.  Every plan must be freed.

  // psi_plan_begin on engine e: { op (OP), values (SETUP, REQUEST, STEP of a MASK kind),
  // message (RESPONSE: the Request; client ops: the Response; STEP of a point kind: the
  // points), setup (client ops: the ServerSetup), params (SETUP: { structure, fpr,
  // numClientInputs }), step (STEP: its kind), slices (default 1) }.  Throws the PsiError
  // of begin's checks (arguments, role, reveal, parameters, setup, message), named func.
  planBegin(e, { op, values, message, setup, params, step = 0, slices = 1 }, func = 'psi_plan_begin') {
    const f = new Frame(this.M);
    try {
      const { arr, n } = values !== undefined && values !== null ? this.putValues(f, values) : { arr: 0, n: 0 };
      const m = message !== undefined && message !== null ? asBytes(message, 'message') : null;
      const st = setup !== undefined && setup !== null ? asBytes(setup, 'setup') : null;
      const points = op === OP.STEP && !stepMasks(step) && m !== null;
      const count = points ? this.elementCount(m, func) : n;
      const mp = m ? f.put(m) : 0, sp = st ? f.put(st) : 0;
      const a = f.alloc(ARGS_BYTES), out = f.alloc(4);
      this.M.HEAPU8.fill(0, a, a + ARGS_BYTES); // unused fields and reserved[] are zero
      if (params !== undefined && params !== null) this.writeParams(a + ARGS.params, params);
      const at = (off, v) => { this.M.HEAPU32[(a + off) >>> 2] = v; };
      at(ARGS.op, op);
      at(ARGS.values, arr);
      at(ARGS.nValues, count);
      at(ARGS.message, mp);
      at(ARGS.messageLen, m ? m.length : 0);
      at(ARGS.setup, sp);
      at(ARGS.setupLen, st ? st.length : 0);
      at(ARGS.step, step);
      at(ARGS.slices, slices);
      this.check(this.M._psi_plan_begin(out, e, a), func);
      return { ptr: this.u32(out), op, func, n: values !== undefined && values !== null || points ? count : null, frame: f };
    } catch (err) {
      f.free();
      throw err;
    }
  }
  // Wipes and frees the plan and its arguments (psi_plan_free); a second call does nothing.
  planFree(plan) {
    if (plan.ptr) this.M._psi_plan_free(plan.ptr);
    plan.ptr = 0;
    plan.frame.free();
  }
  planSlices(plan) { return this.M._psi_plan_slices(plan.ptr) >>> 0; }
  // psi_plan_bound: the capacity finish needs (message bytes, element bytes or items).
  planBound(plan) { return this.M._psi_plan_bound(plan.ptr) >>> 0; }
  // Slice k's step (psi_plan_step): { kind, offset, count, values, points }, values and
  // points heap pointers into the plan (0 when the kind has none), valid until planFree.
  planStep(plan, k) {
    return this.frame((f) => {
      const s = f.alloc(STEP_BYTES);
      this.check(this.M._psi_plan_step(plan.ptr, s, k), 'psi_plan_step');
      const [kind, offset, count, values, points] = this.u32At(s, 5);
      return { kind, offset, count, values, points };
    });
  }
  // A copy of a step's input out of the heap, for a step run elsewhere (stepRun): packed
  // values { data, offsets } for the MASK kinds, else the points' bytes.
  stepInput({ kind, count, values, points }) {
    if (!stepMasks(kind)) return this.bytesAt(points, count * this.ELEMENT_BYTES);
    const H = this.M.HEAPU32, U8 = this.M.HEAPU8, w = values >>> 2;
    const offsets = new Uint32Array(count + 1);
    for (let i = 0; i < count; i++) offsets[i + 1] = offsets[i] + H[w + 2 * i + 1];
    const data = new Uint8Array(offsets[count]);
    for (let i = 0; i < count; i++) {
      const p = H[w + 2 * i];
      data.set(U8.subarray(p, p + offsets[i + 1] - offsets[i]), offsets[i]);
    }
    return { data, offsets };
  }
  // Runs a step on engine e, anywhere (psi_step_run): { kind, offset, count, input } with
  // input as stepInput gives it.  Its outcome is data, never thrown: { out, perm, code,
  // index }: on success the count elements and, for the _SORT kinds, their input indices;
  // on failure out and perm null, code the error and index where it failed, counted in the
  // whole input (null when unknown).  Only a JS misuse (a wrong input type) throws.
  stepRun(e, { kind, offset, count, input }) {
    const E = this.ELEMENT_BYTES;
    try {
      return this.frame((f) => {
        let values = 0, points = 0, n;
        if (stepMasks(kind)) {
          ({ arr: values, n } = this.putValues(f, input));
        } else {
          const pts = asBytes(input, 'points');
          n = this.elementCount(pts, 'psi_step_run');
          points = f.put(pts);
        }
        if (n !== count) throw this.invalid(`the input holds ${n} items, the step ${count}`, 'psi_step_run');
        const s = f.alloc(STEP_BYTES), out = f.alloc(count * E), d = f.alloc(DETAIL_BYTES);
        const perm = stepSorts(kind) ? f.alloc(4 * count) : 0;
        this.M.HEAPU32.set([kind, offset, count, values, points], s >>> 2);
        const code = this.M._psi_step_run(e, out, perm, d, s);
        if (code !== 0) {
          const dv = new DataView(this.M.HEAPU8.buffer, d, DETAIL_BYTES);
          return { out: null, perm: null, code, index: dv.getInt32(0, true) === code ? detailInt(dv, 8) : null };
        }
        return { out: this.bytesAt(out, count * E), perm: perm ? this.u32At(perm, count) : null, code: 0, index: null };
      });
    } catch (err) {
      if (err instanceof PsiError) return { out: null, perm: null, code: err.code, index: null };
      throw err;
    }
  }
  // Runs slice k of the plan here, on engine e, keeping its outcome in the plan
  // (psi_plan_run).  Returns the step's code: a failure is the plan's, reported by finish.
  planRun(plan, e, k) { return this.M._psi_plan_run(plan.ptr, e, k); }
  // Stores the outcome of slice k run elsewhere, as stepRun gives it (psi_plan_put).
  planPut(plan, k, { code, index = null, out = null, perm = null }) {
    const { count } = this.planStep(plan, k);
    const el = code === 0 && out !== null ? asBytes(out, 'out') : null;
    const pm = code === 0 && perm !== null ? toU32(perm, 'perm') : null;
    if ((el && el.length !== count * this.ELEMENT_BYTES) || (pm && pm.length !== count)) {
      throw this.invalid(`slice ${k} has ${count} elements`, 'psi_plan_put');
    }
    this.frame((f) => {
      const i = index ?? -1; // int64: low and high halves
      const rc = this.M._psi_plan_put(plan.ptr, k, code, i | 0, Math.floor(i / 2 ** 32) | 0,
        el ? f.put(el) : 0, pm ? f.putU32(pm) : 0);
      this.check(rc, 'psi_plan_put');
    });
  }
  // psi_plan_finish: the lowest failing slice's error (thrown, named plan.func, with the
  // single engine's place), else the result: SETUP { bytes, perm } (perm: input indices in
  // setup order, raw structure, when asked for with { perm: true }), REQUEST and RESPONSE the
  // message bytes, STEP { elements, perm } (perm for the _SORT kinds when asked for),
  // INTERSECTION indices (Uint32Array), INTERSECTION_SIZE a number, ASSOCIATION pairs
  // flattened [c0, s0, c1, s1, ...] (Uint32Array).
  planFinish(plan, { perm: wantPerm = false } = {}) {
    const { op } = plan, cap = this.planBound(plan), E = this.ELEMENT_BYTES;
    const message = op === OP.SETUP || op === OP.REQUEST || op === OP.RESPONSE || op === OP.STEP;
    const withPerm = wantPerm && (op === OP.SETUP || op === OP.STEP);
    const nPerm = !withPerm ? 0 : op === OP.SETUP ? plan.n : cap / E;
    return this.frame((f) => {
      const o = f.alloc(OUTPUT_BYTES), bytes = message ? f.alloc(cap) : 0;
      const perm = withPerm ? f.alloc(4 * nPerm) : 0;
      const indices = op === OP.INTERSECTION ? f.alloc(4 * cap) : 0;
      const pairs = op === OP.ASSOCIATION ? f.alloc(8 * cap) : 0;
      if (perm) this.M.HEAPU32.fill(0, perm >>> 2, (perm >>> 2) + nPerm);
      const H = this.M.HEAPU32, w = o >>> 2;
      H.set([bytes, message ? cap : 0, 0, 0, perm, indices, pairs, message ? 0 : cap], w);
      this.check(this.M._psi_plan_finish(plan.ptr, o), plan.func);
      const len = this.u32(o + OUTPUT.len), count = this.u32(o + OUTPUT.count);
      switch (op) {
        case OP.SETUP: return { bytes: this.bytesAt(bytes, len), perm: withPerm ? this.u32At(perm, nPerm) : null };
        case OP.STEP: return { elements: this.bytesAt(bytes, len), perm: withPerm ? this.u32At(perm, nPerm) : null };
        case OP.REQUEST: case OP.RESPONSE: return this.bytesAt(bytes, len);
        case OP.INTERSECTION: return this.u32At(indices, count);
        case OP.ASSOCIATION: return this.u32At(pairs, 2 * count);
        default: return count;
      }
    });
  }
}
