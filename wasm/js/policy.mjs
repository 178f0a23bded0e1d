// The pool's shard policy: how many workers a party should run, from the cores, the memory
// the browser reports, the platform and the set it will hold.  createPool uses it when no
// `workers` is given; a page can call it to show or override the choice.
//
//   import { recommendedWorkers, workerPlan } from 'shardpsi/pool'
//   const n = recommendedWorkers({ role: 'client', values: inputs.length })
//   const plan = workerPlan({ role: 'server', values: 1e6 })   // { workers, reasons, ... }
//
// Each bound and why it is there (wasm/README.md, "How many workers"):
// - cores: a worker per core, at most POLICY.maxWorkers (4): past the cores a worker only
//   takes turns with another, and the pool measured no gain from 2 to 4 workers on 2 cores.
// - memory: two bounds, each from what Chromium measured (wasm/README.md).  The renderer:
//   every worker costs POLICY.workerBytes at rest (its wasm heap, the module instance and a
//   JavaScript isolate), and the renderer grows by POLICY.valueBytes[role] a value of the set
//   at its peak.  Where the browser reports the device's memory (navigator.deviceMemory;
//   Node: MemAvailable or os.freemem()), the pool takes at most POLICY.memoryShare of it;
//   where it reports nothing (Firefox, Safari), it plans for POLICY.assumedMemoryBytes, the
//   most Chromium ever reports, and a page that knows better passes memoryBytes.  Workers
//   are dropped until the estimate fits.  The first worker's wasm heap: it holds the whole
//   messages of a step, POLICY.heapValueBytes[role] a value over its initial
//   POLICY.heapBaseBytes, and ends at POLICY.heapLimitBytes.  A set that fits neither even on
//   one worker is refused before any work (PoolError).
// - platform: one worker on Apple platforms (macOS, and iOS/iPadOS, whose browsers share
//   WebKit or report themselves as Macs).  A design this pool follows saw full Chrome's
//   renderer on macOS crash in 3 of 123 sharded runs at 100,000 values, with no crash
//   report and whatever the worker count, and none on one worker; until a newer Chrome is
//   shown free of it, any platform report that names an Apple system (the user-agent client
//   hints, navigator.platform or the user agent) means one worker.
// Override: createPool({ workers: n }) runs n workers whatever the policy says (the memory
// check of each call still applies); workerPlan({ ..., platformCheck: false }) leaves the
// platform bound out.

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export const POLICY = Object.freeze({
  maxWorkers: 4,
  // A worker: its 16 MiB initial wasm heap, the instance and an isolate, counted whole (in
  // Chromium a worker added 2 to 18 MiB to the renderer's peak: wasm/README.md).
  workerBytes: 32 * MiB,
  // The renderer's growth a value of the party's set at its peak, both sides' data in the
  // page included, read every second of a round of 3,500,000 values on 2 workers: the
  // server's renderer peaked at 2,632 MiB, 739 bytes a value over the 166 MiB of a small
  // set, the client's at 2,795 MiB, 788 bytes a value.
  valueBytes: Object.freeze({ server: 768, client: 832 }),
  // The first worker's wasm heap: 16 MiB at start, and a value of the set adds at most
  // heapValueBytes (at 3,500,000 values the server's heap ended at 551.5 MiB, 161 bytes a
  // value, the client's at 488.1 MiB, 141; the heap's growth steps included).
  heapBaseBytes: 16 * MiB,
  heapValueBytes: Object.freeze({ server: 192, client: 192 }),
  // The share of the memory the pool may plan for, and what it plans for where the browser
  // reports none (8 GiB: navigator.deviceMemory reports at most 8).
  memoryShare: 0.5,
  assumedMemoryBytes: 8 * GiB,
  // A wasm32 heap ends at 2 GiB (emscripten's default maximum).
  heapLimitBytes: 2 * GiB,
});

const APPLE = /\b(mac|macos|macintosh|macintel|iphone|ipad|ipod)\b|mac os x/i;

// Whether any platform report of `nav` (a navigator, or an object with its fields) names an
// Apple system: userAgentData.platform (Chromium's client hints: "macOS"), platform
// ("MacIntel", "iPhone", "iPad") or userAgent ("Macintosh; Intel Mac OS X 10_15_7", "iPhone;
// CPU iPhone OS 17_0 like Mac OS X").  Any one is enough: the policy errs toward one worker.
export function isApplePlatform(nav = globalThis.navigator) {
  if (nav === null || typeof nav !== 'object') return false;
  const reports = [];
  const uad = nav.userAgentData;
  if (uad !== null && typeof uad === 'object' && typeof uad.platform === 'string') reports.push(uad.platform);
  if (typeof nav.platform === 'string') reports.push(nav.platform);
  if (typeof nav.userAgent === 'string') reports.push(nav.userAgent);
  return reports.some((s) => APPLE.test(s));
}

// The cores and the device memory (bytes; null: not reported) a navigator reports;
// pool-env.mjs reads the page's with these too.
export function detectCores(nav) {
  if (nav !== null && typeof nav === 'object' && Number.isInteger(nav.hardwareConcurrency) && nav.hardwareConcurrency > 0) {
    return nav.hardwareConcurrency;
  }
  return 1;
}

export function detectMemory(nav) {
  if (nav !== null && typeof nav === 'object' && typeof nav.deviceMemory === 'number' && nav.deviceMemory > 0) {
    return nav.deviceMemory * GiB;
  }
  return null;
}

function checkCount(v, name, max) {
  if (v === undefined || v === null) return;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max || (name !== 'memoryBytes' && !Number.isInteger(v))) {
    throw new RangeError(`${name} must be ${name === 'memoryBytes' ? 'a number of bytes' : 'an integer'} in [0, ${max}]`);
  }
}

// The policy's choice with its reasons: { workers, cores, memoryBytes (what it planned
// for), memoryReported (false: nothing was reported, POLICY.assumedMemoryBytes), budgetBytes,
// estimateBytes and heapBytes (of the chosen count: the renderer's and the first worker's
// wasm heap), fits (false: even one worker exceeds the budget or the wasm heap: the pool
// refuses the set), reasons: [strings] }.
// Options: role ('server' | 'client'), values (the set the party will hold; 0 if unknown),
// cores, memoryBytes and navigator (default: the environment's), maxWorkers (POLICY's),
// platformCheck (true).
export function workerPlan(options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const { role, values = 0, maxWorkers = POLICY.maxWorkers, platformCheck = true } = options;
  if (role !== 'server' && role !== 'client') throw new TypeError("role must be 'server' or 'client'");
  checkCount(values, 'values', Number.MAX_SAFE_INTEGER);
  checkCount(options.cores, 'cores', 4096);
  checkCount(options.memoryBytes, 'memoryBytes', Number.MAX_SAFE_INTEGER);
  checkCount(maxWorkers, 'maxWorkers', 4096);
  if (maxWorkers < 1) throw new RangeError('maxWorkers must be at least 1');
  const nav = 'navigator' in options ? options.navigator : globalThis.navigator;
  const cores = options.cores ?? detectCores(nav);
  const memoryBytes = options.memoryBytes ?? detectMemory(nav);
  const reasons = [];
  let n = Math.max(1, Math.min(cores, maxWorkers));
  reasons.push(cores > maxWorkers ? `${cores} cores, at most ${maxWorkers} workers` : `${cores} core${cores === 1 ? '' : 's'}`);
  if (platformCheck && n > 1 && isApplePlatform(nav)) {
    n = 1;
    reasons.push('one worker on Apple platforms (a sharded renderer crashed on macOS Chrome)');
  }
  const before = n;
  let fit = memoryFit({ role, values, workers: n, memoryBytes });
  // Only the renderer's bound counts workers: the first worker's heap holds as much at any
  // count, so a set past it keeps the count and is refused.
  while (n > 1 && fit.bound === 'renderer') fit = memoryFit({ role, values, workers: --n, memoryBytes });
  if (n < before && fit.fits) reasons.push(`${n} worker${n === 1 ? '' : 's'} fit the memory budget of ${Math.round(fit.budgetBytes / MiB)} MiB`);
  if (!fit.fits) reasons.push(fit.reason);
  return { workers: n, cores, memoryBytes: fit.memoryBytes, memoryReported: fit.memoryReported,
    budgetBytes: fit.budgetBytes, estimateBytes: fit.estimateBytes, heapBytes: fit.heapBytes, fits: fit.fits, reasons };
}

// Whether `workers` workers of a party holding `values` fit: { fits, estimateBytes (the
// renderer's growth), heapBytes (the first worker's wasm heap), memoryBytes (planned for),
// memoryReported (false: memoryBytes was null, the assumed figure was used), budgetBytes,
// bound and reason (when not: 'heap', the first worker's wasm heap, which fewer workers do
// not shrink, or 'renderer', the budget) }.
export function memoryFit({ role, values, workers, memoryBytes = null }) {
  const memoryReported = memoryBytes !== null;
  const planned = memoryReported ? memoryBytes : POLICY.assumedMemoryBytes;
  const estimateBytes = workers * POLICY.workerBytes + POLICY.valueBytes[role] * values;
  const heapBytes = POLICY.heapBaseBytes + POLICY.heapValueBytes[role] * values;
  const budgetBytes = Math.floor(planned * POLICY.memoryShare);
  const r = { fits: false, estimateBytes, heapBytes, memoryBytes: planned, memoryReported, budgetBytes,
    bound: null, reason: null };
  if (heapBytes > POLICY.heapLimitBytes) {
    r.bound = 'heap';
    r.reason = `${values} values need about ${Math.round(heapBytes / MiB)} MiB in the first ` +
      "worker's wasm heap, past its 2 GiB";
  } else if (estimateBytes > budgetBytes) {
    r.bound = 'renderer';
    r.reason = `${values} values on ${workers} worker${workers === 1 ? '' : 's'} need about ` +
      `${Math.round(estimateBytes / MiB)} MiB, past the budget of ${Math.round(budgetBytes / MiB)} MiB ` +
      `(${POLICY.memoryShare * 100}% of the ${Math.round(planned / MiB)} MiB ` +
      `${memoryReported ? 'reported' : 'assumed where the browser reports none'})`;
  } else {
    r.fits = true;
  }
  return r;
}

// The number of workers the policy chooses (workerPlan(options).workers).
export function recommendedWorkers(options = {}) {
  return workerPlan(options).workers;
}
