// The pool's shard policy (js/policy.mjs): the platform check against the reports Chrome,
// Safari and Firefox give on macOS, iOS and elsewhere; the cores and memory bounds; the
// pool's default count following the policy, and a set refused up front without breaking
// the pool.
import test from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { compileModule } from '../js/index.mjs';
import { createPool, PoolError, workerPlan, recommendedWorkers, memoryFit, isApplePlatform, POLICY } from '../js/pool.mjs';

const MiB = 1024 * 1024;

// What each browser reports (user agent, navigator.platform, client hints' platform).
const BROWSERS = [
  ['Chrome 131, macOS', true, {
    userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    platform: 'MacIntel', userAgentData: { platform: 'macOS', mobile: false } }],
  ['Safari 18, macOS', true, {
    userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
    platform: 'MacIntel' }],
  ['Firefox 133, macOS', true, {
    userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0',
    platform: 'MacIntel' }],
  ['Chrome, macOS, a reduced user agent and no platform', true, {
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    platform: '', userAgentData: { platform: 'macOS' } }],
  ['Safari, iPhone', true, {
    userAgent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1',
    platform: 'iPhone' }],
  ['Safari, iPad in desktop mode', true, {
    userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Safari/605.1.15',
    platform: 'MacIntel' }],
  ['Chrome 131, Windows', false, {
    userAgent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    platform: 'Win32', userAgentData: { platform: 'Windows', mobile: false } }],
  ['Firefox 133, Windows', false, {
    userAgent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0',
    platform: 'Win32' }],
  ['Chrome 131, Linux', false, {
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    platform: 'Linux x86_64', userAgentData: { platform: 'Linux', mobile: false } }],
  ['Firefox 133, Linux', false, {
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
    platform: 'Linux x86_64' }],
  ['Chrome 131, Android', false, {
    userAgent: 'Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
    platform: 'Linux armv81', userAgentData: { platform: 'Android', mobile: true } }],
  ['Chrome, ChromeOS', false, {
    userAgent: 'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    platform: 'Linux x86_64', userAgentData: { platform: 'Chrome OS' } }],
  ['headless Chromium here', false, {
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36',
    platform: 'Linux x86_64' }],
];

for (const [name, apple, nav] of BROWSERS) {
  test(`platform: ${name} -> ${apple ? 'one worker' : 'a worker per core'}`, () => {
    assert.equal(isApplePlatform(nav), apple);
    const plan = workerPlan({ role: 'client', navigator: { ...nav, hardwareConcurrency: 8 } });
    assert.equal(plan.workers, apple ? 1 : 4);
    assert.equal(plan.reasons.some((r) => r.includes('Apple')), apple);
    // The documented override: the platform bound left out.
    assert.equal(workerPlan({ role: 'client', navigator: nav, cores: 8, platformCheck: false }).workers, 4);
  });
}

test('platform: no reports, or reports of other types, are not Apple', () => {
  assert.equal(isApplePlatform(undefined), false);
  assert.equal(isApplePlatform(null), false);
  assert.equal(isApplePlatform({}), false);
  assert.equal(isApplePlatform({ userAgent: 42, platform: null, userAgentData: 'macOS' }), false);
  assert.equal(isApplePlatform({ userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Machine/1.0' }), false);
});

test('cores: one a core, at most maxWorkers', () => {
  const p = (cores, extra = {}) => recommendedWorkers({ role: 'server', cores, navigator: undefined, memoryBytes: null, ...extra });
  assert.deepEqual([1, 2, 3, 4, 8, 64].map((c) => p(c)), [1, 2, 3, 4, 4, 4]);
  assert.equal(p(8, { maxWorkers: 8 }), 8);
  assert.equal(p(0), 1);
});

test('memory: workers dropped to fit, a set refused when even one does not', () => {
  const base = { role: 'client', cores: 8, navigator: undefined };
  // 256 MiB reported: a budget of 128 MiB, four idle workers of 32 MiB fit exactly.
  const idle = workerPlan({ ...base, memoryBytes: 256 * MiB });
  assert.deepEqual([idle.workers, idle.budgetBytes, idle.fits], [4, 128 * MiB, true]);
  const values = 100000, held = POLICY.valueBytes.client * values;
  const some = workerPlan({ ...base, memoryBytes: 256 * MiB, values });
  assert.equal(some.workers, Math.floor((128 * MiB - held) / POLICY.workerBytes));
  assert.ok(some.workers >= 1 && some.workers < 4 && some.fits);
  assert.ok(some.reasons.some((r) => r.includes('memory budget')));
  const none = workerPlan({ ...base, memoryBytes: 64 * MiB, values: 1e6 });
  assert.equal(none.workers, 1);
  assert.equal(none.fits, false);
  assert.match(none.reasons.at(-1), /1000000 values on 1 worker need about \d+ MiB, past the budget of 32 MiB/);
  // Nothing reported: the policy plans for the most Chromium reports (8 GiB), and says so.
  const assumed = workerPlan({ ...base, memoryBytes: null, values: 1e6 });
  assert.deepEqual([assumed.fits, assumed.memoryReported, assumed.memoryBytes, assumed.budgetBytes],
    [true, false, POLICY.assumedMemoryBytes, POLICY.assumedMemoryBytes / 2]);
  const most = (workers) => Math.floor((POLICY.assumedMemoryBytes / 2 - workers * POLICY.workerBytes) / POLICY.valueBytes.server);
  assert.equal(memoryFit({ role: 'server', values: most(2), workers: 2 }).fits, true);
  const past = memoryFit({ role: 'server', values: most(2) + 1, workers: 2 });
  assert.deepEqual([past.fits, past.bound], [false, 'renderer']);
  assert.match(past.reason, /past the budget of 4096 MiB \(50% of the 8192 MiB assumed where the browser reports none\)/);
  // The first worker's wasm heap bounds whatever the memory: 16 MiB and heapValueBytes a value.
  const huge = 2 ** 50;
  const heapMost = Math.floor((POLICY.heapLimitBytes - POLICY.heapBaseBytes) / POLICY.heapValueBytes.client);
  assert.equal(memoryFit({ role: 'client', values: heapMost, workers: 1, memoryBytes: huge }).fits, true);
  // Fewer workers do not shrink the first one's heap: the plan keeps its count and refuses.
  const over = workerPlan({ ...base, memoryBytes: huge, values: heapMost + 1 });
  assert.deepEqual([over.fits, over.workers], [false, POLICY.maxWorkers]);
  assert.equal(memoryFit({ role: 'client', values: heapMost + 1, workers: 1, memoryBytes: huge }).bound, 'heap');
  assert.match(over.reasons.at(-1), new RegExp(`^${heapMost + 1} values need about 2048 MiB in the first worker's wasm heap, past its 2 GiB$`));
  assert.ok(!over.reasons.some((r) => r.includes('fit the memory budget')), 'a refused plan does not say it fits');
  // navigator.deviceMemory is read in GiB.
  assert.equal(workerPlan({ role: 'server', navigator: { hardwareConcurrency: 8, deviceMemory: 0.25 } }).budgetBytes, 128 * MiB);
  assert.equal(memoryFit({ role: 'server', values: 0, workers: 2, memoryBytes: 128 * MiB }).fits, true);
  assert.equal(memoryFit({ role: 'server', values: 0, workers: 3, memoryBytes: 128 * MiB }).fits, false);
});

test('bad options are refused', () => {
  assert.throws(() => workerPlan({}), TypeError);
  assert.throws(() => workerPlan(null), TypeError);
  assert.throws(() => workerPlan({ role: 'server', values: -1 }), RangeError);
  assert.throws(() => workerPlan({ role: 'server', values: 1.5 }), RangeError);
  assert.throws(() => workerPlan({ role: 'server', cores: 'many' }), RangeError);
  assert.throws(() => workerPlan({ role: 'server', maxWorkers: 0 }), RangeError);
  assert.throws(() => workerPlan({ role: 'server', memoryBytes: -5 }), RangeError);
});

const module = await compileModule();

test('createPool follows the policy, and refuses a set up front without breaking', async () => {
  const p = await createPool({ role: 'client', reveal: true, module });
  try {
    assert.equal(p.workers, p.plan.workers);
    assert.equal(p.workers, Math.min(availableParallelism(), POLICY.maxWorkers));
  } finally { await p.close(); }
  // 96 MiB to plan for: one worker (a 48 MiB budget), and a million values refused at once.
  const q = await createPool({ role: 'client', reveal: true, module, memoryBytes: 96 * MiB });
  try {
    assert.equal(q.workers, 1);
    const big = Array.from({ length: 1e6 }, (_, i) => `v${i}`);
    const t0 = Date.now();
    await assert.rejects(q.createRequest(big), (e) => e instanceof PoolError &&
      /the request refused before any work: 1000000 values on 1 worker need about \d+ MiB, past the budget of 48 MiB/.test(e.message) &&
      /still usable/.test(e.message));
    assert.ok(Date.now() - t0 < 1000, 'refused before any work');
    const req = await q.createRequest(['a', 'b']);
    assert.ok(req instanceof Uint8Array && req.length > 0);
  } finally { await q.close(); }
  // workers given: the policy is not asked for the count.
  const r = await createPool({ role: 'server', module, workers: 3, memoryBytes: 96 * MiB });
  try {
    assert.equal(r.workers, 3);
    assert.equal(r.plan.workers, 1);
    await assert.rejects(r.createSetupMessage(0.001, 10, ['a']),
      /the setup refused before any work: 1 values on 3 workers.*; use fewer workers or a smaller set \(the pool/);
  } finally { await r.close(); }
  // Past the first worker's heap, fewer workers would not help, and the refusal does not
  // suggest them (a request of that many elements, counted from its bytes before any work).
  const heapMost = Math.floor((POLICY.heapLimitBytes - POLICY.heapBaseBytes) / POLICY.heapValueBytes.server);
  const h = await createPool({ role: 'server', reveal: true, module, workers: 2, memoryBytes: 2 ** 50 });
  try {
    await assert.rejects(h.processRequest(new Uint8Array(35 * (heapMost + 1))), (e) => e instanceof PoolError &&
      e.message.endsWith(`the response refused before any work: ${heapMost + 1} values need about 2048 MiB in ` +
        "the first worker's wasm heap, past its 2 GiB; use a smaller set; fewer workers do not help, as the " +
        'first worker holds the whole messages at any count (the pool is still usable)'));
  } finally { await h.close(); }
});

// A message's values are counted as the workers' library bounds them (35 bytes an element in
// the P-256 suites, 34 in ristretto255): a server allowed to set up n values answers a
// request of n values, and a request of n + 1 is refused.  Counting 32 bytes an element
// refused the answer to a request of 3,500,000 values in Chromium.
test('pool: the largest set a server may set up, it may answer', async () => {
  const n = 1000;
  for (const suite of ['openmined-p256', 'ristretto255']) {
    // a budget of exactly one worker and n values
    const memoryBytes = 2 * (POLICY.workerBytes + POLICY.valueBytes.server * n);
    const server = await createPool({ role: 'server', reveal: true, module, workers: 1, memoryBytes, suite });
    const client = await createPool({ role: 'client', reveal: true, module, workers: 1, suite });
    try {
      const values = Array.from({ length: n + 1 }, (_, i) => `v${i}`);
      const setup = await server.createSetupMessage(0.001, n, values.slice(0, n));
      await assert.rejects(server.createSetupMessage(0.001, n, values), /the setup refused before any work/);
      const response = await server.processRequest(await client.createRequest(values.slice(0, n)));
      assert.equal(await client.getIntersectionSize(setup, response), n, suite);
      await assert.rejects(server.processRequest(await client.createRequest(values)),
        (e) => e instanceof PoolError && new RegExp(`the response refused before any work: ${n + 1} values`).test(e.message), suite);
    } finally {
      await server.close();
      await client.close();
    }
  }
});
