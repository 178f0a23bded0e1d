// The worker script of the pool (pool.mjs).  Each worker instantiates its own
// copy of the wasm module from the WebAssembly.Module the page compiled once and
// posted in the 'init' message.
//
// Worker 0 is the lead: it makes the engine (a new random key, or the key the page
// handed it once), sends the key to each helper over the helper's MessagePort (a
// MessageChannel the page created and only connected), cuts every step into slices
// (psi_shard_plan; slicesPerWorker per worker when there are several), hands them out to the helpers
// as they free up and runs slices itself in between, merges (PROTOCOL.md §14, as
// shard/shard_ops.c) and posts only the merged result to the page.
// A helper makes its engine from the key it receives from the lead; it has no way
// to make a key, and refuses to run a slice before it has one.  Lead and helpers
// exchange whole slices (batches), never single values.
//
// Messages:
//   page -> worker   { type: 'init', index, module, load, role, reveal, suite, shards, slicesPerWorker, key?, ports?|port?, test? }
//   lead -> page     { type: 'ready', value: { suite } } | { type: 'progress', id, done } |
//                    { type: 'result', id, value } | { type: 'fail', id, error, fatal }
//   page -> lead     { type: 'call', id, op, args }
//   page -> worker   { type: 'close' }   (frees the engine, wiping the key; answers { type: 'closed' })
//   lead -> helper   { type: 'key', key } | { type: 'run', id, slice, step, offset, input }
//   helper -> lead   { type: 'ready' } | { type: 'done', id, slice, out, perm } | { type: 'fail', id, slice, error, fatal }
//
// A library error crosses as { kind: 'psi', code, codeName, message, func, field, index,
// offset } (errorToWire): the message and place as the worker's PsiError had them, the index
// already counted in the whole input (psi_shard_run_one adds the slice's offset).  The lead
// renames the place of a bad point found by a step ("points") to the message field it came
// from, as shard/shard_ops.c does, so the page gets the single engine's error.

import { loadModule } from './module.mjs';
import { LowLevel, PsiError, STEP, STRUCTURE, packValues, packedCount, toU32 } from './lowlevel.mjs';
import { parentChannel, wrapPort } from './pool-env.mjs';

// How many slices a helper holds at once, and the fewest values worth a slice of their own.
const HELPER_DEPTH = 2;
const MIN_SLICE = 64;

// Resolves after pending messages (finished slices from helpers) have been handled.
const yieldToEvents = typeof setImmediate === 'function'
  ? () => new Promise((resolve) => setImmediate(resolve))
  : (() => {
    const ch = new MessageChannel();
    const waiters = [];
    ch.port1.onmessage = () => waiters.shift()();
    return () => new Promise((resolve) => { waiters.push(resolve); ch.port2.postMessage(0); });
  })();

const PSI_E_REVEAL_MISMATCH = -7;
const PSI_E_REVEAL_DISABLED = -8;
const PSI_E_STRUCTURE = -23;

// An error as a cloneable object; fatal for anything but the library's argument and
// protocol errors (a trap or an internal fault leaves the instance unusable).
export function errorToWire(e) {
  if (e instanceof PsiError) {
    return { kind: 'psi', code: e.code, codeName: e.codeName, message: e.message, func: e.func,
      field: e.field ?? null, index: e.index ?? null, offset: e.offset ?? null, fatal: false };
  }
  const name = e && e.name;
  const ordinary = e instanceof TypeError || e instanceof RangeError;
  return { kind: ordinary ? name : 'Error', name, message: String(e && e.message !== undefined ? e.message : e), fatal: !ordinary };
}

// Sub-view of packed values [a, b), offsets rebased (copied, so it can be transferred).
function slicePacked(packed, a, b) {
  const o = packed.offsets, base = o[a];
  const data = packed.data.slice(base, o[b]);
  const offsets = new Uint32Array(b - a + 1);
  for (let i = a; i <= b; i++) offsets[i - a] = o[i] - base;
  return { data, offsets };
}

// ------------------------------------------------------------ setup parse / match
// psi_setup_match/count/associate (exported by the module, not wrapped in lowlevel.mjs).
const withSetup = (ll, setup, fn, suite) => ll.withSetup(setup, fn, suite);
function setupRun(ll, s, f, kind, elements) {
  const n = elements.length / ll.ELEMENT_BYTES, ep = f.put(elements);
  if (kind === 'count') {
    const c = f.alloc(4);
    ll.check(ll.M._psi_setup_count(s, c, ep, n), 'psi_setup_count');
    return ll.u32(c);
  }
  if (kind === 'match') {
    const out = f.alloc(4 * n), c = f.alloc(4);
    ll.M.HEAPU32[c >>> 2] = n;
    ll.check(ll.M._psi_setup_match(s, out, c, ep, n), 'psi_setup_match');
    return ll.u32At(out, ll.u32(c));
  }
  const out = f.alloc(8 * n), c = f.alloc(4);
  ll.M.HEAPU32[c >>> 2] = n;
  ll.check(ll.M._psi_setup_associate(s, out, c, ep, n), 'psi_setup_associate');
  return ll.u32At(out, 2 * ll.u32(c));
}

// Runs fn, relabelling a PsiError's C function as the single-engine call it stands for.
function as(func, fn) {
  try { return fn(); } catch (e) { if (e instanceof PsiError) e.func = func; throw e; }
}

// Awaits a step (runStep) whose bad point is the message's element at the same index: a
// library error with a place, from this worker or a helper (e.wire), is reported as the
// single-engine call func would report it, at field (psi_detail_rename / detail_rename).
async function stepAt(ll, func, field, run) {
  try {
    return await run();
  } catch (e) {
    const w = e instanceof PsiError ? e : e && e.wire && e.wire.kind === 'psi' ? e.wire : null;
    if (w && w.field !== null && w.field !== undefined) {
      throw ll.errorAt(w.code, func, { field, index: w.index ?? null, offset: w.offset ?? null });
    }
    if (e instanceof PsiError) e.func = func;
    throw e;
  }
}

// ------------------------------------------------------------------- the worker

// Frees this worker's engine (psi_engine_free wipes its key); set once the engine exists.
let freeEngine = () => {};

async function main() {
  const parent = await parentChannel();
  let started = false;
  parent.onMessage((msg) => {
    if (msg && msg.type === 'close') { // the page closes the pool: wipe the key before terminating
      try { freeEngine(); } finally { parent.post({ type: 'closed' }); }
      return;
    }
    if (!msg || msg.type !== 'init' || started) return;
    started = true;
    (msg.index === 0 ? lead(parent, msg) : helper(parent, msg)).catch((e) => {
      parent.post({ type: 'fail', id: -1, error: errorToWire(e), fatal: true });
    });
  });
}

async function instance(msg) {
  const M = await loadModule({ ...(msg.load || {}), module: msg.module });
  return new LowLevel(M);
}

// ------------------------------------------------------------------- helper

async function helper(parent, msg) {
  const ll = await instance(msg);
  const port = wrapPort(msg.port);
  const hang = msg.test && msg.test.hang === msg.index;
  let engine = 0;
  port.onMessage((m) => {
    if (m.type === 'key') {
      if (engine) return;
      const key = new Uint8Array(m.key);
      try {
        engine = ll.engineFromKey(msg.role, msg.reveal, key, msg.suite);
        freeEngine = () => { ll.engineFree(engine); engine = 0; };
        port.post({ type: 'ready' });
      } catch (e) {
        port.post({ type: 'fail', id: -1, error: errorToWire(e), fatal: true });
      } finally {
        key.fill(0);
      }
      return;
    }
    if (m.type !== 'run' || hang) return; // test hook: a silent helper
    if (msg.test && msg.test.crash === msg.index) { setTimeout(() => { throw new Error('test hook: helper crashed'); }); return; }
    if (!engine) {
      port.post({ type: 'fail', id: m.id, slice: m.slice, error: { kind: 'Error', message: 'shardpsi pool: a helper has no key and cannot make one; refusing to run' }, fatal: true });
      return;
    }
    try {
      const { out, perm } = ll.shardRunOne(engine, m.step, m.offset, m.input);
      const transfer = [out.buffer];
      if (perm) transfer.push(perm.buffer);
      port.post({ type: 'done', id: m.id, slice: m.slice, out, perm }, transfer);
    } catch (e) {
      const error = errorToWire(e);
      port.post({ type: 'fail', id: m.id, slice: m.slice, error, fatal: error.fatal });
    }
  });
  // The page hears from a helper only if it fails to start (through the worker's error event).
}

// ------------------------------------------------------------------- lead

async function lead(parent, msg) {
  const ll = await instance(msg);
  const shards = msg.shards, slicesPerWorker = msg.slicesPerWorker;
  const helpers = (msg.ports || []).map(wrapPort);
  const hang = msg.test && msg.test.hang === 0;
  let engine;
  if (msg.key) {
    const key = new Uint8Array(msg.key);
    try { engine = ll.engineFromKey(msg.role, msg.reveal, key, msg.suite); } finally { key.fill(0); }
  } else {
    engine = ll.engineCreate(msg.role, msg.reveal, msg.suite);
  }
  freeEngine = () => { ll.engineFree(engine); engine = 0; };
  // The engine's suite (PROTOCOL.md §16): the codec steps below encode and decode its messages.
  const suite = ll.engineSuite(engine);

  // Replies of helper k: the pending run's resolver.
  const waiting = new Map(); // `${id}:${slice}` -> { resolve }
  let ready = 0, startFail = null;
  let readyResolve;
  const allReady = new Promise((r) => { readyResolve = r; });
  helpers.forEach((h, i) => {
    const k = i + 1;
    h.onMessage((m) => {
      if (m.type === 'ready') { if (++ready === helpers.length) readyResolve(); return; }
      if (m.id === -1) { startFail = startFail || m.error; readyResolve(); return; }
      const w = waiting.get(`${m.id}:${m.slice}`);
      if (w) { waiting.delete(`${m.id}:${m.slice}`); w.resolve(m); }
    });
  });
  if (helpers.length === 0 || (msg.test && msg.test.noKey !== undefined && helpers.length === 1)) readyResolve();
  else {
    const key = ll.engineExportKey(engine);
    try {
      for (const [i, h] of helpers.entries()) {
        if (msg.test && msg.test.noKey === i + 1) { ready++; continue; } // test hook: a helper without key
        const copy = key.slice();
        h.post({ type: 'key', key: copy.buffer }, [copy.buffer]);
      }
    } finally { key.fill(0); }
  }
  await allReady;
  if (startFail) { parent.post({ type: 'fail', id: -1, error: startFail, fatal: true }); return; }
  parent.post({ type: 'ready', value: { suite: ll.suiteName(suite) } });

  // One step over all slices.  With W workers the step is cut into W * slicesPerWorker
  // slices (fewer for small steps, at least W and 64 values a slice when possible; one
  // when W = 1), handed out in order as workers free up: each helper holds up
  // to HELPER_DEPTH slices (so it never waits while the lead computes), and the lead runs
  // a slice itself between refills.  A worker the machine runs slower then simply does
  // fewer slices.  Results are kept in slice order; after a failure no further slice is
  // handed out, every slice already out is waited for, and the lowest-numbered failing
  // slice's error wins: every slice below it was handed out, so it is the error the
  // single engine, which runs the slices in order, meets first (PROTOCOL.md §14.4).
  async function runStep(id, step, n, input) {
    const total = shards > 1 ? Math.max(shards, Math.min(shards * slicesPerWorker, Math.ceil(n / MIN_SLICE))) : 1;
    const slices = [];
    for (let k = 0; k < total; k++) slices.push(ll.shardPlan(n, total, k));
    const cut = (k) => {
      const { offset, count } = slices[k];
      if (step === STEP.MASK || step === STEP.MASK_SORT) return slicePacked(input, offset, offset + count);
      return input.slice(offset * ll.ELEMENT_BYTES, (offset + count) * ll.ELEMENT_BYTES);
    };
    const results = new Array(total);
    const out = []; // promises of the slices handed to helpers
    let next = 0, stop = false, done = 0;
    const record = (j, m) => {
      results[j] = m;
      if (m.type === 'fail') stop = true;
      parent.post({ type: 'progress', id, done: ++done });
    };
    const give = (h) => { // hands the next slice to helper h (0-based)
      if (stop || next >= total) return;
      const j = next++;
      const part = cut(j);
      const transfer = part.data ? [part.data.buffer, part.offsets.buffer] : [part.buffer];
      out.push(new Promise((resolve) => {
        waiting.set(`${id}:${j}`, { resolve });
        helpers[h].post({ type: 'run', id, slice: j, step, offset: slices[j].offset, input: part }, transfer);
      }).then((m) => { record(j, m); give(h); }));
    };
    // with one slice per worker each helper takes one and the lead the last (a static split)
    const depth = total >= 2 * shards ? HELPER_DEPTH : 1;
    for (let d = 0; d < depth; d++) helpers.forEach((_, h) => give(h));
    while (!stop && next < total) {
      const j = next++;
      try {
        const r = ll.shardRunOne(engine, step, slices[j].offset, cut(j));
        record(j, { type: 'done', out: r.out, perm: r.perm });
      } catch (e) {
        const error = errorToWire(e);
        record(j, { type: 'fail', error, fatal: error.fatal, local: e });
      }
      if (helpers.length) await yieldToEvents(); // let finished helpers in, to be refilled
    }
    while (out.length) await out.shift();
    const failed = results.find((m) => m && m.type === 'fail');
    if (failed) {
      if (failed.local && !failed.fatal) throw failed.local;
      const err = new Error('shard failed');
      err.wire = failed.error;
      err.fatal = failed.fatal;
      throw err;
    }
    const merged = new Uint8Array(results.reduce((s, m) => s + m.out.length, 0));
    let at = 0;
    for (const m of results) { merged.set(m.out, at); at += m.out.length; }
    let perm = null;
    if (step === STEP.MASK_SORT) {
      perm = new Uint32Array(n);
      at = 0;
      for (const m of results) { perm.set(m.perm, at); at += m.perm.length; }
    }
    return { out: merged, perm, total };
  }

  const packInputs = (values) => {
    try { return packValues(values); } catch (e) { throw e instanceof PsiError ? ll.invalid(e.message, e.func) : e; }
  };

  const ops = {
    // createSetupMessage / WithPermutation: (fpr, numClientInputs, inputs, structure, wantPerm)
    async setup(id, [fpr, numClientInputs, inputs, structure, wantPerm]) {
      if (wantPerm && structure !== STRUCTURE.RAW) {
        throw ll.jsError(PSI_E_STRUCTURE, 'psi_server_create_setup',
          'a permutation exists only for psi.dataStructure.Raw');
      }
      const packed = packInputs(inputs);
      const params = { structure, fpr, numClientInputs };
      const n = packedCount(packed);
      ll.setupBound(params, n, suite); // bad parameters before masking (func psi_setup_bound[_suite])
      let elements, perm = null;
      if (structure === STRUCTURE.RAW) {
        const r = await runStep(id, STEP.MASK_SORT, n, packed);
        const m = as('psi_server_create_setup', () => ll.shardMergeSorted(r.out, r.perm, n, r.total));
        elements = m.elements; perm = m.perm;
      } else {
        elements = (await runStep(id, STEP.MASK, n, packed)).out;
      }
      const setup = as('psi_server_create_setup', () => ll.setupEncode(params, elements, suite));
      return { setup, perm: wantPerm ? perm : null };
    },
    async processRequest(id, [request]) {
      const { elements, reveal } = as('psi_server_process_request', () => ll.requestDecode(request, suite));
      if (reveal !== !!msg.reveal) {
        throw ll.errorAt(PSI_E_REVEAL_MISMATCH, 'psi_server_process_request', { field: 'Request.reveal_intersection' });
      }
      const n = elements.length / ll.ELEMENT_BYTES;
      let masked = (await stepAt(ll, 'psi_server_process_request', 'Request.encrypted_elements',
        () => runStep(id, STEP.REMASK, n, elements))).out;
      if (!msg.reveal) masked = ll.elementsSort(masked).elements;
      return as('psi_server_process_request', () => ll.responseEncode(masked, suite));
    },
    async createRequest(id, [inputs]) {
      const packed = packInputs(inputs);
      const n = packedCount(packed);
      if (ll.requestBound(suite, n) === 0) throw ll.invalid('too many inputs for one request', 'psi_request_bound');
      const elements = (await runStep(id, STEP.MASK, n, packed)).out;
      return as('psi_client_create_request', () => ll.requestEncode(msg.reveal, elements, suite));
    },
    // (kind: 'match' | 'count' | 'associate', setup, response, permutation?)
    async match(id, [kind, setup, response, permutation]) {
      const func = { match: 'psi_client_get_intersection', count: 'psi_client_get_intersection_size', associate: 'psi_client_get_association' }[kind];
      if (kind !== 'count' && !msg.reveal) throw ll.jsError(PSI_E_REVEAL_DISABLED, func);
      as(func, () => withSetup(ll, setup, () => 0, suite)); // setup errors first, as the single engine
      const masked = as(func, () => ll.responseDecode(response, suite));
      const n = masked.length / ll.ELEMENT_BYTES;
      const unmasked = (await stepAt(ll, func, 'Response.encrypted_elements',
        () => runStep(id, STEP.UNMASK, n, masked))).out;
      // The match step once over all unmasked elements (§14.4).
      let r = as(func, () => withSetup(ll, setup, (f, s) => setupRun(ll, s, f, kind, unmasked), suite));
      if (kind === 'associate' && permutation !== undefined && permutation !== null) {
        r = ll.associationMap(r, toU32(permutation, 'permutation'));
      }
      return r;
    },
  };

  // Calls from the page, one at a time.
  let queue = Promise.resolve();
  parent.onMessage((m) => {
    if (!m || m.type !== 'call' || hang) return; // test hook: a silent lead
    queue = queue.then(async () => {
      try {
        const value = await ops[m.op](m.id, m.args);
        const transfer = [];
        const add = (x) => { if (x && x.buffer instanceof ArrayBuffer) transfer.push(x.buffer); };
        if (value instanceof Uint8Array || value instanceof Uint32Array) add(value);
        else if (value && typeof value === 'object') { add(value.setup); add(value.perm); }
        parent.post({ type: 'result', id: m.id, value }, transfer);
      } catch (e) {
        const error = e.wire || errorToWire(e);
        parent.post({ type: 'fail', id: m.id, error, fatal: e.wire ? !!e.fatal : error.fatal });
      }
    });
  });
}

main();
