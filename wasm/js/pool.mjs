// The worker pool, page side: one party (server or client) whose every expensive
// step is split across N workers (pool-worker.mjs) and merged there.
//
//   import { createPool } from 'shardpsi/pool'
//   const server = await createPool({ role: 'server', reveal: true })
//   const setup = await server.createSetupMessage(0.001, 10, inputs)    // Uint8Array
//   const response = await server.processRequest(request)
//   await server.close()
//
// Options: role ('server' | 'client'), reveal (false), key (optional: the key bytes, handed
// once to the first worker; without it the first worker makes a random key), workers (default:
// the shard policy of policy.mjs: the cores, at most maxWorkers = 4, one on Apple platforms,
// fewer where the memory the browser reports is short; values (the set size to plan for) and
// memoryBytes (the memory to plan for, default the environment's report) refine it), timeoutMs
// (no progress from the workers for this long fails the run; default 120000), slicesPerWorker
// (default 16: each step is cut into that many slices per worker, handed out as workers free
// up; 1 = one slice each, a static split; a slice never holds more than 16,384 values, so
// progress comes every few seconds at any size and worker count), suite (the ciphersuite, by name: 'openmined-p256'
// (default), 'p256-sswu' or 'ristretto255'; PROTOCOL.md §16), module (a
// compiled WebAssembly.Module; compiled here once when absent), workerUrl, load ({ dir } or
// { jsUrl } for the workers' module glue).
//
// The key stays in the workers: the pool has no getPrivateKeyBytes().  The page only
// connects the MessageChannels between the first worker (the lead) and the helpers; the
// lead sends the key over them.  The page receives only merged messages from the lead.
//
// A worker that throws, exits, is terminated, runs out of memory or goes silent fails the run
// (no retry, no fallback) and the pool, with a PoolError naming the worker (0 is the lead) and
// the cause: later calls reject; close() it and create a new one.  A helper silent for half of
// timeoutMs while it holds slices is named by the lead; a silent lead by the page at timeoutMs.  Library errors are
// PsiErrors with the message, field, index and offset one instance would give.

import { PsiError, packValues } from './values.mjs';
import { compileModule } from './module.mjs';
import { spawnWorker, environmentFacts } from './pool-env.mjs';
import { workerPlan, memoryFit, recommendedWorkers, isApplePlatform, POLICY } from './policy.mjs';

export { workerPlan, memoryFit, recommendedWorkers, isApplePlatform, POLICY };

const ROLES = { client: 1, server: 2 };
const DEFAULT_TIMEOUT_MS = 120000;
const CLOSE_GRACE_MS = 1000;
// Slices per worker: many small slices handed out as workers free up, so that a worker the
// machine runs slower (common in browsers) does fewer; measured in wasm/README.md.
const DEFAULT_SLICES_PER_WORKER = 16;
const PREFIX = 'shardpsi pool';

// An error of the pool itself (a worker failed, exited or went silent; the pool is closed).
export class PoolError extends Error {
  constructor(message) { super(`${PREFIX}: ${message}`); this.name = 'PoolError'; }
}

// A worker's error (pool-worker.mjs errorToWire) as the page's: a library error keeps its
// message and place (field, index counted in the whole input, offset).
function wireToError(w) {
  if (w.kind === 'psi') {
    return new PsiError(w.code, w.message, w.codeName, w.func,
      { field: w.field ?? null, index: w.index ?? null, offset: w.offset ?? null });
  }
  if (w.kind === 'TypeError') return new TypeError(w.message);
  if (w.kind === 'worker') return new PoolError(`worker ${w.worker} ${w.message}; the run failed`); // named by the lead
  if (w.kind === 'RangeError') return new RangeError(w.message);
  const who = Number.isInteger(w.worker) ? `worker ${w.worker}` : 'a worker';
  return new PoolError(`${who} failed: ${w.name ? `${w.name}: ` : ''}${w.message}`);
}

function structureOf(ds) {
  if (typeof ds === 'number') return ds;
  if (ds !== null && typeof ds === 'object' && typeof ds.value === 'number') return ds.value;
  throw new TypeError('dataStructure must be one of psi.dataStructure (Raw, GCS, BloomFilter)');
}
function bytesOf(msg, what) {
  if (msg !== null && typeof msg === 'object' && typeof msg.serializeBinary === 'function') return msg.serializeBinary();
  if (msg instanceof Uint8Array) return msg;
  if (msg instanceof ArrayBuffer) return new Uint8Array(msg);
  if (ArrayBuffer.isView(msg)) return new Uint8Array(msg.buffer, msg.byteOffset, msg.byteLength);
  throw new TypeError(`${what} must be a Uint8Array`);
}
function inputsOf(inputs) {
  if (!Array.isArray(inputs)) throw new TypeError('inputs must be an array of strings');
  return inputs;
}
// Values packed here into one UTF-8 buffer (values.mjs) and moved to the lead, not cloned: a
// clone of N strings leaves a copy of each in the lead's JavaScript heap (225.6 MiB at
// 2,000,000 values: wasm/README.md), where the buffer is the bytes' own size and moves
// without a copy.  Values that packing refuses (a lone surrogate) go as they are, so that the
// lead refuses them with the error and message one instance gives.
function packed(values) {
  try {
    return packValues(values);
  } catch (e) {
    if (e instanceof PsiError) return values;
    throw e;
  }
}
const buffersOf = (...ps) => ps.flatMap((p) => (Array.isArray(p) ? [] : [p.data.buffer, p.offsets.buffer]));
// call()'s arguments of a call over `values`: argsOf(the packed values), with their buffers.
const withValues = (values, argsOf) => () => {
  const v = packed(values);
  return { args: argsOf(v), transfer: buffersOf(v) };
};

export async function createPool(options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const role = ROLES[options.role];
  if (!role) throw new TypeError("role must be 'server' or 'client'");
  const reveal = !!options.reveal;
  // The suite is checked by the workers' library (an unknown name rejects with its PsiError
  // PSI_E_SUITE); here only its type.
  const suite = options.suite ?? undefined;
  if (suite !== undefined && typeof suite !== 'string' && !Number.isInteger(suite)) {
    throw new TypeError("suite must be a suite name ('openmined-p256', 'p256-sswu', 'ristretto255')");
  }
  const maxWorkers = options.maxWorkers ?? POLICY.maxWorkers;
  // The shard policy (policy.mjs) chooses the count unless `workers` is given; `values` (the
  // set the party will hold) and `memoryBytes` (the memory to plan for) refine it.
  const facts = await environmentFacts();
  const memoryBytes = options.memoryBytes ?? facts.memoryBytes;
  const plan = workerPlan({ role: options.role, values: options.values ?? 0, maxWorkers,
    cores: facts.cores, memoryBytes, navigator: facts.navigator });
  const n = options.workers ?? plan.workers;
  if (!Number.isInteger(n) || n < 1 || n > 4096) throw new RangeError('workers must be an integer in [1, 4096]');
  const slicesPerWorker = options.slicesPerWorker ?? DEFAULT_SLICES_PER_WORKER;
  if (!Number.isInteger(slicesPerWorker) || slicesPerWorker < 1 || slicesPerWorker > 64) {
    throw new RangeError('slicesPerWorker must be an integer in [1, 64]');
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw new RangeError('timeoutMs must be positive');
  const module = options.module ?? await compileModule(options.load || {});
  // Test hooks (not API): { hang: k (worker k ignores runs), crash: k (worker k throws an uncaught
  // error on a run), noKey: k (the lead sends helper k no key), starve: k (worker k fills its
  // wasm heap to the limit before its first step, so that its steps run out of memory), onMessage(msg) (sees every message
  // the page receives), onWorkers(rawWorkers), onClosed(k) (worker k freed its engine on close) }.
  const test = options._test || null;
  let key = null;
  if (options.key !== undefined && options.key !== null) key = bytesOf(options.key, 'key').slice();

  // undefined or null: the package's pool-worker.mjs (pool-env.mjs names it where bundlers see it)
  const url = options.workerUrl;
  const workers = [];
  let failure = null; // the PoolError that broke the pool
  let closed = false;
  let nextId = 1;
  const pending = new Map(); // id -> { resolve, reject, timer, arm }
  let suiteName = null; // the suite's name, as the lead's engine reports it

  // Stops every worker, once: asks each to free its engine (which wipes its key) and waits
  // for its answer, at most CLOSE_GRACE_MS (a silent or busy worker is not waited for), then
  // terminates it.
  let stopping = null;
  function shutdown() {
    stopping = stopping || Promise.all(workers.map((w, k) => new Promise((resolve) => {
      const timer = setTimeout(resolve, CLOSE_GRACE_MS);
      w.onMessage((m) => {
        if (!m || m.type !== 'closed') return;
        clearTimeout(timer);
        if (test && typeof test.onClosed === 'function') test.onClosed(k);
        resolve();
      });
      try { w.post({ type: 'close' }); } catch { clearTimeout(timer); resolve(); }
    }).then(() => w.terminate().catch(() => {}))));
    return stopping;
  }

  // Fails the pool: every pending call (and the start) rejects with err; workers are stopped.
  function fail(err) {
    if (failure) return;
    failure = err;
    for (const p of pending.values()) { clearTimeout(p.timer); p.reject(err); }
    pending.clear();
    shutdown();
  }

  function onLead(m) {
    if (test && typeof test.onMessage === 'function') test.onMessage(m);
    if (!m || failure) return;
    const p = pending.get(m.id);
    if (m.type === 'progress') { if (p) p.arm(); return; }
    if (m.type === 'fail' && m.id === -1) { fail(wireToError(m.error)); return; } // start failed (e.g. a bad key)
    if (m.type === 'fail' && m.fatal) {
      const err = wireToError(m.error);
      fail(err instanceof PoolError ? err : new PoolError(`a worker failed: ${err.message}`));
      return;
    }
    if (!p) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.type === 'result' || m.type === 'ready') p.resolve(m.value);
    else p.reject(wireToError(m.error));
  }

  // A call awaiting the lead's answer under the progress timeout.
  function await_(id, what) {
    return new Promise((resolve, reject) => {
      const p = { resolve, reject, timer: null };
      p.arm = () => {
        clearTimeout(p.timer);
        // The lead names a silent helper after half this time, so silence here is the lead's.
        p.timer = setTimeout(() => fail(new PoolError(`no progress for ${timeoutMs} ms during ${what}: ` +
          'worker 0 (the lead) is silent: it was killed or hangs; the run failed and the pool is stopped')), timeoutMs);
      };
      p.arm();
      pending.set(id, p);
    });
  }

  try {
    const channels = [];
    for (let k = 1; k < n; k++) channels.push(new MessageChannel());
    const started = await_(0, 'start');
    for (let k = 0; k < n; k++) {
      const w = await spawnWorker(url, `shardpsi pool worker ${k}`);
      workers.push(w);
      w.onError((e) => fail(new PoolError(`worker ${k} threw: ${e && e.message ? e.message : e}`)));
      w.onExit((code) => { if (!closed) fail(new PoolError(`worker ${k} exited (${typeof code === 'number' ? `code ${code}` : code}); the run failed`)); });
      if (k === 0) w.onMessage((m) => onLead(m && m.type === 'ready' ? { ...m, id: 0 } : m));
      // A helper speaks to the page only to say it could not start (its module or engine).
      else w.onMessage((m) => { if (m && m.type === 'fail' && m.id === -1) fail(wireToError({ ...m.error, worker: k })); });
    }
    const common = { type: 'init', module, load: options.load, role, reveal, suite, shards: n, slicesPerWorker, timeoutMs,
      test: test ? { hang: test.hang, crash: test.crash, noKey: test.noKey, starve: test.starve } : undefined };
    for (let k = 1; k < n; k++) {
      const port = channels[k - 1].port2;
      workers[k].post({ ...common, index: k, port }, [port]);
    }
    if (test && typeof test.onWorkers === 'function') test.onWorkers(workers.map((w) => w.raw));
    const ports = channels.map((c) => c.port1);
    const transfer = [...ports];
    const init = { ...common, index: 0, ports };
    if (key) { init.key = key.buffer; transfer.push(key.buffer); } // handed once, not kept here
    key = null;
    workers[0].post(init, transfer);
    const info = await started;
    suiteName = info && typeof info.suite === 'string' ? info.suite : 'openmined-p256';
  } catch (e) {
    fail(e);
    closed = true;
    await shutdown();
    throw e;
  }

  // Refuses, before any work, a call whose set would not fit (policy.mjs memoryFit): the
  // call rejects with a PoolError and the pool stays usable.
  function fitOrRefuse(values, what) {
    const f = memoryFit({ role: options.role, values, workers: n, memoryBytes });
    if (!f.fits) {
      const remedy = f.bound === 'heap' ? 'a smaller set; fewer workers do not help, as the first ' +
        'worker holds the whole messages at any count' : 'fewer workers or a smaller set';
      throw new PoolError(`${what} refused before any work: ${f.reason}; use ${remedy} (the pool is still usable)`);
    }
  }
  // The most values a message of these bytes holds, as the workers' library bounds it
  // (psi_message_element_bound): each element takes its tag and length bytes and 33 bytes in
  // the P-256 suites, 32 in ristretto255 (PROTOCOL.md §16).  Counting more would refuse a
  // server's answer to a request of the size of the set it was allowed to set up.
  const elementsIn = (bytes) => Math.floor(bytes.length / (2 + (suiteName === 'ristretto255' ? 32 : 33)));

  // Runs op on the lead, after the refusal up front of a call over `values` values (`what`
  // names it).
  let queue = Promise.resolve();
  // args: the arguments, or a function giving { args, transfer }, run after the refusal (the
  // values are packed only for a call that is not refused).
  function call(op, args, values, what, transfer = []) {
    fitOrRefuse(values, what);
    if (typeof args === 'function') ({ args, transfer } = args());
    const run = async () => {
      if (closed) throw new PoolError('the pool is closed');
      if (failure) throw new PoolError(`the pool has failed (${failure.message}); close() it and create a new one`);
      const id = nextId++;
      const done = await_(id, op);
      workers[0].post({ type: 'call', id, op, args }, transfer);
      return done;
    };
    const r = queue.then(run, run);
    queue = r.catch(() => {});
    return r;
  }

  async function close() {
    closed = true;
    const err = new PoolError('the pool was closed');
    for (const p of pending.values()) { clearTimeout(p.timer); p.reject(err); }
    pending.clear();
    await shutdown();
  }

  // Each worker's wasm heap size (a heap only grows, so it is the worker's peak so far): the
  // lead's after the calls queued before this one, a helper's as of its last slice (null
  // before its first).
  async function memoryUsage() {
    const heaps = await call('memory', [], 0, 'the memory report');
    return { wasmHeapBytes: heaps, totalWasmHeapBytes: heaps.reduce((a, b) => a + (b ?? 0), 0) };
  }
  const base = { role: options.role, reveal, suite: suiteName, workers: n, plan: Object.freeze(plan),
    memoryUsage, close, delete: close };
  if (role === ROLES.server) {
    return Object.freeze({
      ...base,
      async createSetupMessage(fpr, numClientInputs, inputs, ds = 1) {
        const r = await call('setup', withValues(inputs, (v) => [fpr, numClientInputs, v, structureOf(ds), false]),
          inputsOf(inputs).length, 'the setup');
        return r.setup;
      },
      async createSetupMessageWithPermutation(fpr, numClientInputs, inputs, ds = 0) {
        const r = await call('setup', withValues(inputs, (v) => [fpr, numClientInputs, v, structureOf(ds), true]),
          inputsOf(inputs).length, 'the setup');
        return { setup: r.setup, permutation: r.perm };
      },
      async processRequest(request) {
        const req = bytesOf(request, 'request');
        return call('processRequest', [req], elementsIn(req), 'the response');
      },
      // The payload table (PROTOCOL.md §22): the values masked by the workers, the table
      // sealed by the first; the bytes of one instance with the same key and salt.
      async createPayloadTable(inputs, payloads, options = undefined) {
        if (!Array.isArray(payloads)) throw new TypeError('payloads must be an array of strings or Uint8Arrays');
        const o = options ?? {};
        if (typeof o !== 'object') throw new TypeError('options must be an object ({ padLen, salt })');
        const salt = o.salt === undefined || o.salt === null ? null : bytesOf(o.salt, 'salt').slice();
        return call('payloadTable', () => {
          const v = packed(inputs), p = packed(payloads);
          return { args: [v, p, o.padLen ?? 0, salt], transfer: buffersOf(v, p) };
        }, inputsOf(inputs).length, 'the payload table');
      },
    });
  }
  const match = async (kind, setup, response, perm) => {
    const s = bytesOf(setup, 'setup'), r = bytesOf(response, 'response');
    return call('match', [kind, s, r, perm], Math.max(elementsIn(s), elementsIn(r)), 'the match');
  };
  return Object.freeze({
    ...base,
    async createRequest(inputs) {
      return call('createRequest', withValues(inputs, (v) => [v]), inputsOf(inputs).length, 'the request');
    },
    getIntersection: async (setup, response) => Array.from(await match('match', setup, response)),
    getIntersectionSize: async (setup, response) => match('count', setup, response),
    // The intersection and its payloads (PROTOCOL.md §22): the match and the second
    // unmasking of the matched elements run on the workers, the opening on the first.
    async getIntersectionWithPayloads(setup, response, table) {
      const resp = bytesOf(response, 'response');
      const r = await call('payloads', [bytesOf(setup, 'setup'), resp, bytesOf(table, 'payload table')],
        elementsIn(resp), 'the match');
      return { indices: Array.from(r.indices), payloads: r.payloads };
    },
    async getAssociationTable(setup, response, permutation) {
      const pairs = await match('associate', setup, response, permutation ?? undefined);
      const m = pairs.length / 2, c = new Array(m), s = new Array(m);
      for (let i = 0; i < m; i++) { c[i] = pairs[2 * i]; s[i] = pairs[2 * i + 1]; }
      return [c, s];
    },
  });
}

export default createPool;
