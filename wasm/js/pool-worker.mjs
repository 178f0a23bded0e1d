// The worker script of the pool (pool.mjs).  Each worker instantiates its own
// copy of the wasm module from the WebAssembly.Module the page compiled once and
// posted in the 'init' message.
//
// Worker 0 is the lead: it makes the engine (a new random key, or the key the page
// handed it once) and sends the key to each helper over the helper's MessagePort (a
// MessageChannel the page created and only connected).  For each call of the page it
// begins the library's plan of that operation (psi_plan_begin: every check, the reading of
// the input message and the cut into slices), runs slices itself (psi_plan_run) or sends a
// slice's step with a copy of its input to a helper as it frees up, puts the helpers'
// outcomes back (psi_plan_put) and finishes (psi_plan_finish: the slices put together as
// PROTOCOL.md §14 says, the encoding or the match, and the lowest failing slice's error
// with one engine's place).  It posts only the result to the page.  Nothing of the
// protocol is written here.
// A helper makes its engine from the key it receives from the lead; it has no way
// to make a key, and refuses to run a step before it has one.  It runs the steps it is
// sent (psi_step_run) and returns each outcome as data: the elements, or the code and the
// index of the failure.  Lead and helpers exchange whole slices, never single values.
//
// Messages:
//   page -> worker   { type: 'init', index, module, load, role, reveal, suite, shards, slicesPerWorker, timeoutMs, key?, ports?|port?, test? }
//   lead -> page     { type: 'ready', value: { suite } } | { type: 'progress', id, done } |
//                    { type: 'result', id, value } | { type: 'fail', id, error, fatal }
//   page -> lead     { type: 'call', id, op, args }   (op 'memory': the workers' wasm heap sizes)
//   page -> worker   { type: 'close' }   (frees the engine, wiping the key; answers { type: 'closed' })
//   lead -> helper   { type: 'key', key } | { type: 'run', id, slice, step: { kind, offset, count }, input }
//   helper -> lead   { type: 'ready' } | { type: 'done', id, slice, code, index, out, perm, heap } |
//                    { type: 'fail', id, slice, error, fatal }   (a fault, not a step's outcome)
//
// A library error crosses to the page as { kind: 'psi', code, codeName, message, func, field,
// index, offset } (errorToWire): as the lead's PsiError of the plan has them, which are the
// single engine's.
//
// A worker's own failures are named by the lead, with the worker's index: a slice that ran
// out of memory (PSI_E_NOMEM: its wasm heap could not grow; the heap's size is given), and a
// helper that has not answered for half the page's progress timeout while it holds slices
// (it was killed, or it hangs: a browser reports neither).  The page names a silent lead.

import { loadModule } from './module.mjs';
import { LowLevel, PsiError, PSI_E_NOMEM, OP, STEP, STRUCTURE, toU32 } from './lowlevel.mjs';
import { parentChannel, wrapPort } from './pool-env.mjs';
import { packedCount } from './values.mjs';

// The values of a call: packed on the page, or an array the page could not pack.
const countOf = (v) => (Array.isArray(v) ? v.length : packedCount(v));

// How many slices a helper holds at once, the fewest values worth a slice of their own,
// and the most slices of a plan (PSI_PLAN_MAX_SLICES).
const HELPER_DEPTH = 2;
const MIN_SLICE = 64;
const MAX_SLICE = 16384; // about 3 s of one worker in a browser (5,000 values a second)
const MAX_SLICES = 4096;

// Resolves after pending messages (finished slices from helpers) have been handled.
const yieldToEvents = typeof setImmediate === 'function'
  ? () => new Promise((resolve) => setImmediate(resolve))
  : (() => {
    const ch = new MessageChannel();
    const waiters = [];
    ch.port1.onmessage = () => waiters.shift()();
    return () => new Promise((resolve) => { waiters.push(resolve); ch.port2.postMessage(0); });
  })();

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
      parent.post({ type: 'fail', id: -1, error: startFailure(e, msg.index), fatal: true });
    });
  });
}

async function instance(msg) {
  const M = await loadModule({ ...(msg.load || {}), module: msg.module });
  return new LowLevel(M);
}

// Test hook: before its first step, worker `starve` fills its wasm heap to the limit (the
// allocations are kept, and their pages are never written, so they cost address space, not
// memory), so that the step's allocations fail as they would at the limit.
const starved = [];
function starve(msg, M) {
  if (!msg.test || msg.test.starve !== msg.index || starved.length) return;
  for (let size = 256 * 1024 * 1024; size >= 16; size >>>= 1) {
    for (;;) {
      const p = M._malloc(size) >>> 0;
      if (p === 0) break;
      starved.push(p);
    }
  }
}

const MiB = (b) => Math.round(b / 1048576);
// A worker's out-of-memory failure, as the page's PoolError will name it.
function outOfMemory(worker, where, heap = null) {
  const held = heap === null ? '' : ` (its wasm heap holds ${MiB(heap)} MiB` +
    `${heap >= 2 ** 31 ? ', the most a wasm32 heap can hold here' : ''})`;
  return { kind: 'worker', worker, message: `ran out of memory ${where}${held}` };
}
// A worker's failure to start, for the page: out of memory named as such, else its error.
const startFailure = (e, worker) => (e instanceof PsiError && e.code === PSI_E_NOMEM
  ? outOfMemory(worker, 'while starting') : { ...errorToWire(e), worker });

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
        port.post({ type: 'fail', id: -1, error: startFailure(e, msg.index), fatal: true });
      } finally {
        key.fill(0);
      }
      return;
    }
    if (m.type !== 'run' || hang) return; // test hook: a silent helper
    if (msg.test && msg.test.crash === msg.index) { setTimeout(() => { throw new Error('test hook: helper crashed'); }); return; }
    starve(msg, ll.M);
    if (!engine) {
      port.post({ type: 'fail', id: m.id, slice: m.slice, error: { kind: 'Error', message: 'shardpsi pool: a helper has no key and cannot make one; refusing to run' }, fatal: true });
      return;
    }
    try {
      const r = ll.stepRun(engine, { ...m.step, input: m.input }); // a step's failure is data
      const transfer = [r.out, r.perm].filter(Boolean).map((x) => x.buffer);
      port.post({ type: 'done', id: m.id, slice: m.slice, ...r, heap: ll.M.HEAPU8.length }, transfer);
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
  // A helper that holds slices and has not answered for this long is reported by name: half
  // the page's progress timeout, so that the lead speaks before the page gives up on it.
  const silenceMs = Math.max(1, Math.floor((msg.timeoutMs ?? 120000) / 2));
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
  // The engine's suite (PROTOCOL.md §16), named to the page; its element size bounds a
  // message's element count.
  const suite = ll.engineSuite(engine);

  // Replies of helper k: the pending run's resolver.
  const waiting = new Map(); // `${id}:${slice}` -> { resolve }
  // Each helper's wasm heap size as its last answer gave it (a heap only grows).
  const helperHeaps = (msg.ports || []).map(() => null);
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

  // The slices of a call over n inputs: W * slicesPerWorker with W workers, fewer for
  // small calls (at least W, and 64 values a slice when possible), and never more than
  // MAX_SLICE values a slice, one worker included: the lead reports progress after each
  // slice, and a step of 1,000,000 values cut once ran for 260 s without a word, past the
  // page's 120 s progress timeout.  At most MAX_SLICES.
  const sliceCount = (n) => Math.min(MAX_SLICES, Math.max(shards,
    Math.min(shards * slicesPerWorker, Math.ceil(n / MIN_SLICE)), Math.ceil(n / MAX_SLICE)));

  // Runs every slice of the plan.  Slices are handed out in order as workers free up: each
  // helper holds up to HELPER_DEPTH (so it never waits while the lead computes), and the
  // lead runs one itself between refills, so a worker the machine runs slower does fewer.
  // After a step fails no further slice is handed out and every slice already out is
  // waited for: every slice below the failing ones has then run, and finish reports the
  // lowest failing one, the error the single engine meets first (PROTOCOL.md §14.4).  A
  // helper's fault (not a step's outcome) fails the call, fatally when the helper says so.
  async function runSlices(id, plan, func) {
    const total = ll.planSlices(plan);
    const out = []; // promises of the slices handed to helpers
    let next = 0, stop = false, done = 0, fault = null;
    const record = (code) => {
      if (code !== 0) stop = true;
      parent.post({ type: 'progress', id, done: ++done });
    };
    const failWith = (error) => { fault = fault || { error, fatal: true }; stop = true; };
    // Each helper's slices out and its silence timer: armed while it holds slices, reset by
    // each answer; when it fires, the helper's slices are given up and the call fails.
    const held = helpers.map(() => new Map()); // slice -> resolve
    const silent = helpers.map(() => null);
    const watch = (h) => {
      clearTimeout(silent[h]);
      silent[h] = held[h].size === 0 ? null : setTimeout(() => {
        const slices = [...held[h].keys()];
        const m = { type: 'fail', error: { kind: 'worker', worker: h + 1, message: `has not answered for ` +
          `${silenceMs} ms, holding slice ${slices.join(', ')} of ${func}: it was killed or hangs` }, fatal: true };
        for (const [k, resolve] of held[h]) { waiting.delete(`${id}:${k}`); resolve(m); }
      }, silenceMs);
    };
    const give = (h) => { // hands the next slice to helper h (0-based)
      if (stop || next >= total) return;
      const k = next++;
      const { kind, offset, count, ...at } = ll.planStep(plan, k);
      const input = ll.stepInput({ kind, count, ...at });
      const transfer = input.data ? [input.data.buffer, input.offsets.buffer] : [input.buffer];
      out.push(new Promise((resolve) => {
        waiting.set(`${id}:${k}`, { resolve });
        held[h].set(k, resolve);
        if (held[h].size === 1) watch(h);
        helpers[h].post({ type: 'run', id, slice: k, step: { kind, offset, count }, input }, transfer);
      }).then((m) => {
        if (!held[h].delete(k)) return; // given up already
        watch(h);
        if (Number.isInteger(m.heap)) helperHeaps[h] = m.heap;
        if (m.type !== 'done') { fault = fault || m; stop = true; return; }
        if (m.code === PSI_E_NOMEM) { failWith(outOfMemory(h + 1, `in slice ${k} of ${func}`, m.heap)); return; }
        ll.planPut(plan, k, m);
        record(m.code);
        give(h);
      }).catch((e) => failWith({ ...errorToWire(e), worker: h + 1 })));
    };
    // with one slice per worker each helper takes one and the lead the last (a static split)
    const depth = total >= 2 * shards ? HELPER_DEPTH : 1;
    for (let d = 0; d < depth; d++) helpers.forEach((_, h) => give(h));
    while (!stop && next < total) {
      const k = next++, code = ll.planRun(plan, engine, k);
      if (code === PSI_E_NOMEM) failWith(outOfMemory(0, `in slice ${k} of ${func}`, ll.M.HEAPU8.length));
      else record(code);
      if (helpers.length) await yieldToEvents(); // let finished helpers in, to be refilled
    }
    while (out.length) await out.shift();
    silent.forEach((t) => clearTimeout(t));
    if (fault) {
      const err = new Error('a helper failed');
      err.wire = fault.error;
      err.fatal = fault.fatal;
      throw err;
    }
  }

  // One call of the page: begin the plan (named as the single engine's call), run its
  // slices, finish.  n: the input count the slices are cut for (a message's element bound).
  async function run(id, func, args, n, finish) {
    const plan = ll.planBegin(engine, { ...args, slices: sliceCount(n) }, func);
    try {
      await runSlices(id, plan, func);
      return ll.planFinish(plan, finish);
    } finally {
      ll.planFree(plan);
    }
  }
  const elements = (message) => ll.messageElementBound(suite, message.length);

  const ops = {
    // memoryUsage: each worker's wasm heap size, the lead's now, a helper's at its last answer
    memory: () => [ll.M.HEAPU8.length, ...helperHeaps],
    // createSetupMessage / WithPermutation: (fpr, numClientInputs, inputs, structure, wantPerm)
    async setup(id, [fpr, numClientInputs, inputs, structure, wantPerm]) {
      if (wantPerm && structure !== STRUCTURE.RAW) { // index.mjs's argument check
        throw ll.jsError(PSI_E_STRUCTURE, 'psi_server_create_setup',
          'a permutation exists only for psi.dataStructure.Raw');
      }
      const r = await run(id, 'psi_server_create_setup',
        { op: OP.SETUP, values: inputs, params: { structure, fpr, numClientInputs } }, countOf(inputs), { perm: !!wantPerm });
      return { setup: r.bytes, perm: wantPerm ? r.perm : null };
    },
    processRequest: (id, [request]) =>
      run(id, 'psi_server_process_request', { op: OP.RESPONSE, message: request }, elements(request)),
    createRequest: (id, [inputs]) =>
      run(id, 'psi_client_create_request', { op: OP.REQUEST, values: inputs }, countOf(inputs)),
    // createPayloadTable: (inputs, payloads, padLen, salt): the masks on the workers (a STEP
    // plan), the table sealed here.
    async payloadTable(id, [inputs, payloads, padLen, salt]) {
      const { padLen: pad, salt: s } = ll.payloadOptions({ padLen, salt });
      const n = countOf(inputs), np = countOf(payloads);
      if (np !== n) { // the library's check, before any masking
        throw ll.invalid(`${np} payloads for ${n} inputs`, 'psi_payload_table_build');
      }
      const el = n === 0 ? new Uint8Array(0)
        : (await run(id, 'psi_engine_mask', { op: OP.STEP, step: STEP.MASK, values: inputs }, n)).elements;
      return ll.payloadTableBuild(suite, el, payloads, pad, s);
    },
    // getIntersectionWithPayloads: (setup, response, table): the match and the matched
    // elements' second unmasking on the workers, the opening here.
    async payloads(id, [setup, response, table]) {
      ll.payloadTableCheck(suite, table); // a bad table fails before the match
      const indices = await run(id, 'psi_client_get_intersection',
        { op: OP.INTERSECTION, setup, message: response }, elements(response));
      const picked = ll.pickElements(response, suite, Array.from(indices));
      const un = indices.length === 0 ? picked
        : (await run(id, 'psi_engine_unmask', { op: OP.STEP, step: STEP.UNMASK, message: picked }, indices.length)).elements;
      return { indices, payloads: ll.payloadOpen(suite, table, un) };
    },
    // (kind: 'match' | 'count' | 'associate', setup, response, permutation?)
    async match(id, [kind, setup, response, permutation]) {
      const [op, func] = {
        match: [OP.INTERSECTION, 'psi_client_get_intersection'],
        count: [OP.INTERSECTION_SIZE, 'psi_client_get_intersection_size'],
        associate: [OP.ASSOCIATION, 'psi_client_get_association'],
      }[kind];
      const r = await run(id, func, { op, setup, message: response }, elements(response));
      // the page-level call of index.mjs: setup positions to server input indices
      if (kind === 'associate' && permutation !== undefined && permutation !== null) {
        return ll.associationMap(r, toU32(permutation, 'permutation'));
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
        starve(msg, ll.M);
        const value = await ops[m.op](m.id, m.args);
        const transfer = [];
        const add = (x) => { if (x && x.buffer instanceof ArrayBuffer) transfer.push(x.buffer); };
        if (value instanceof Uint8Array || value instanceof Uint32Array) add(value);
        else if (value && typeof value === 'object') { add(value.setup); add(value.perm); }
        parent.post({ type: 'result', id: m.id, value }, transfer);
      } catch (e) {
        // the lead's own heap could not grow (its merge, or a call's copy of its input)
        const oom = e instanceof PsiError && e.code === PSI_E_NOMEM;
        const error = e.wire || (oom ? outOfMemory(0, `during ${m.op}`, ll.M.HEAPU8.length) : errorToWire(e));
        parent.post({ type: 'fail', id: m.id, error, fatal: e.wire ? !!e.fatal : oom || error.fatal });
      }
    });
  });
}

main();
