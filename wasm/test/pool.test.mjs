// The worker pool (js/pool.mjs, js/pool-worker.mjs) under Node worker_threads:
// every committed wire vector file byte for byte at 1 and 3 workers, the key
// path (no key bytes reach the main thread), and failures: a helper terminated
// mid-run, a crashing helper, a silent worker (progress timeout), a helper with
// no key; after each, close() and a new pool works.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createPSI, compileModule, PsiError } from '../js/index.mjs';
import { createPool, PoolError } from '../js/pool.mjs';
import { readWireCase, runCase } from '../bin/vector-cases.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const FILES = ['vectors/openmined-psi-2.0.6.json', 'vectors/reference/sample-vectors.json'];
const psi = await createPSI();
const module = await compileModule();

const poolPsi = (workers) => {
  const maker = (role) => ({ createFromKey: (key, reveal) => createPool({ role, reveal, key, workers, module }) });
  return { ...psi, server: maker('server'), client: maker('client') };
};

for (const workers of [1, 3]) {
  for (const file of FILES) {
    test(`pool, ${workers} worker(s): every case of ${file} byte for byte`, async () => {
      const doc = JSON.parse(readFileSync(root + file, 'utf8'));
      assert.ok(doc.cases.length > 0);
      const p = poolPsi(workers);
      for (const obj of doc.cases) {
        const c = readWireCase(obj);
        const { rc, msg } = await runCase(p, c);
        assert.equal(rc, 0, `${c.name}: ${msg}`);
      }
    });
  }
}

const SERVER_IN = Array.from({ length: 300 }, (_, i) => `item-${i}`);
const CLIENT_IN = Array.from({ length: 120 }, (_, i) => `item-${i * 5}`);
const EXPECTED = CLIENT_IN.map((v, i) => [v, i]).filter(([v]) => SERVER_IN.includes(v)).map(([, i]) => i);

// Every typed array / ArrayBuffer inside a message.
function buffers(x, out = [], seen = new Set()) {
  if (x === null || typeof x !== 'object' || seen.has(x)) return out;
  seen.add(x);
  if (x instanceof ArrayBuffer) out.push(new Uint8Array(x));
  else if (ArrayBuffer.isView(x)) out.push(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
  else for (const v of Object.values(x)) buffers(v, out, seen);
  return out;
}
const contains = (hay, needle) => Buffer.from(hay).indexOf(Buffer.from(needle)) >= 0;

test('pool: the key never reaches the main thread', async () => {
  const seen = [];
  const _test = { onMessage: (m) => seen.push(m) };
  const userKey = psi.client.createWithNewKey(true);
  const ckey = userKey.getPrivateKeyBytes();
  userKey.delete();
  // The server makes its own key in its lead worker; the client's key is handed once to its lead.
  const server = await createPool({ role: 'server', reveal: true, workers: 3, module, _test });
  const client = await createPool({ role: 'client', reveal: true, workers: 3, module, key: ckey, _test });
  try {
    assert.equal(server.getPrivateKeyBytes, undefined);
    assert.equal(client.getPrivateKeyBytes, undefined);
    for (const p of [server, client]) {
      for (const v of Object.values(p)) assert.ok(!(v instanceof Uint8Array) && !(v instanceof ArrayBuffer));
    }
    const setup = await server.createSetupMessage(0.001, CLIENT_IN.length, SERVER_IN, psi.dataStructure.Raw);
    const request = await client.createRequest(CLIENT_IN);
    const response = await server.processRequest(request);
    // Every shard masked with the same key: the intersection is right.
    assert.deepEqual((await client.getIntersection(setup, response)).sort((a, b) => a - b), EXPECTED);
    assert.equal(await client.getIntersectionSize(setup, response), EXPECTED.length);
    assert.ok(seen.length > 0);
    for (const m of seen) {
      for (const b of buffers(m)) {
        assert.notEqual(b.length, 32, `a 32-byte buffer reached the page in a '${m.type}' message`);
        assert.ok(!contains(b, ckey), 'the client key reached the page');
      }
    }
    assert.ok(seen.every((m) => ['ready', 'progress', 'result', 'fail'].includes(m.type)));
  } finally {
    await server.close();
    await client.close();
  }
});

// The merge runs in the lead worker: whatever the worker count, the page receives the merged
// messages and nothing else, so its memory does not grow with the number of workers.
test('pool: the page receives only the merged messages, the same bytes at 1, 2 and 4 workers', async () => {
  const received = {};
  for (const workers of [1, 2, 4]) {
    const seen = [];
    const _test = { onMessage: (m) => seen.push(m) };
    // fixed keys, so that the GCS setup's length is the same in every run
    const server = await createPool({ role: 'server', reveal: true, workers, module, _test, key: new Uint8Array(32).fill(7) });
    const client = await createPool({ role: 'client', reveal: true, workers, module, _test, key: new Uint8Array(32).fill(9) });
    try {
      const setup = await server.createSetupMessage(0.001, CLIENT_IN.length, SERVER_IN, psi.dataStructure.GCS);
      const request = await client.createRequest(CLIENT_IN);
      const response = await server.processRequest(request);
      const hits = await client.getIntersection(setup, response);
      const total = seen.reduce((a, m) => a + buffers(m).reduce((b, x) => b + x.length, 0), 0);
      assert.equal(total, setup.length + request.length + response.length + 4 * hits.length,
        `${workers} worker(s): the page received more than the merged results`);
      assert.equal(seen.filter((m) => m.type === 'result').length, 4);
      received[workers] = total;
    } finally {
      await server.close();
      await client.close();
    }
  }
  assert.equal(received[2], received[1]);
  assert.equal(received[4], received[1]);
});

test('pool: close() has every worker free its engine (wiping its key) before it is terminated', async () => {
  for (const workers of [1, 3]) {
    const closedBy = [];
    const p = await createPool({ role: 'client', reveal: true, workers, module, _test: { onClosed: (k) => closedBy.push(k) } });
    await p.createRequest(CLIENT_IN);
    await p.close();
    assert.deepEqual(closedBy.sort(), [...Array(workers).keys()], `${workers} worker(s)`);
    await assert.rejects(p.createRequest(CLIENT_IN), (e) => e instanceof PoolError && /closed/.test(e.message));
  }
});

test('pool: default worker count is the CPU count capped at 4, overridable', async () => {
  const p = await createPool({ role: 'client', module });
  assert.equal(p.workers, Math.min(availableParallelism(), 4));
  await p.close();
  const q = await createPool({ role: 'client', module, maxWorkers: 1 });
  assert.equal(q.workers, 1);
  await q.close();
});

// A new pool after a failure works.
async function freshPoolWorks() {
  const p = await createPool({ role: 'client', reveal: true, workers: 3, module });
  const r = await p.createRequest(CLIENT_IN);
  assert.ok(r.length > CLIENT_IN.length * 33);
  await p.close();
}

async function failedThenClosed(pool, run, re) {
  await assert.rejects(run, (e) => e instanceof PoolError && re.test(e.message));
  await assert.rejects(pool.createRequest(['x']), (e) => e instanceof PoolError && /has failed|closed/.test(e.message));
  await pool.close();
  await freshPoolWorks();
}

test('pool: a helper terminated mid-run fails the run with a clear error', async () => {
  let raw;
  const pool = await createPool({ role: 'client', workers: 3, module, _test: { hang: 2, onWorkers: (w) => { raw = w; } } });
  const run = pool.createRequest(CLIENT_IN);
  setTimeout(() => raw[2].terminate(), 200);
  await failedThenClosed(pool, run, /worker 2 exited/);
});

test('pool: a helper that throws fails the run', async () => {
  const pool = await createPool({ role: 'client', workers: 3, module, _test: { crash: 1 } });
  await failedThenClosed(pool, pool.createRequest(CLIENT_IN), /worker 1 threw: test hook: helper crashed/);
});

test('pool: a silent helper is named by the lead after half the progress timeout', async () => {
  // (4 s: the start runs under the same timeout, and takes most of a second on a loaded machine)
  const pool = await createPool({ role: 'client', workers: 3, module, timeoutMs: 4000, _test: { hang: 1 } });
  const t = performance.now();
  await assert.rejects(pool.createRequest(CLIENT_IN), (e) => e instanceof PoolError &&
    /worker 1 has not answered for 2000 ms, holding slice [0-9, ]+ of psi_client_create_request: it was killed or hangs; the run failed/.test(e.message));
  assert.ok(performance.now() - t < 4000, 'before the page\'s own timeout');
  await pool.close();
});

test('pool: a silent lead is named by the progress timeout', async () => {
  // (2 s: the start, under the same timeout, takes most of a second on a loaded machine)
  const pool = await createPool({ role: 'server', workers: 2, module, timeoutMs: 2000, _test: { hang: 0 } });
  await assert.rejects(pool.createSetupMessage(0.001, 10, SERVER_IN),
    /no progress for 2000 ms during setup: worker 0 \(the lead\) is silent/);
  await pool.close();
});

test('pool: memoryUsage() reports each worker\'s wasm heap, the lead first', async () => {
  const pool = await createPool({ role: 'client', workers: 3, module, slicesPerWorker: 4 });
  try {
    const before = await pool.memoryUsage();
    assert.equal(before.wasmHeapBytes.length, 3);
    assert.ok(before.wasmHeapBytes[0] >= 16 * 1024 * 1024, 'the lead\'s initial heap');
    assert.deepEqual(before.wasmHeapBytes.slice(1), [null, null], 'helpers before their first slice');
    await pool.createRequest(CLIENT_IN);
    const after = await pool.memoryUsage();
    assert.ok(after.wasmHeapBytes.every((b) => Number.isInteger(b) && b >= 16 * 1024 * 1024), JSON.stringify(after));
    assert.equal(after.totalWasmHeapBytes, after.wasmHeapBytes.reduce((a, b) => a + b, 0));
  } finally { await pool.close(); }
});

test('pool: a worker out of memory is named, with its heap', async () => {
  // a helper in one of its slices; the lead as the call begins (the input's copy in its heap)
  for (const [k, where] of [[2, 'in slice [0-9]+ of psi_client_create_request'], [0, 'during createRequest']]) {
    const pool = await createPool({ role: 'client', workers: 3, module, _test: { starve: k } });
    await failedThenClosed(pool, pool.createRequest(CLIENT_IN), new RegExp(`worker ${k} ran out of memory ` +
      `${where} \\(its wasm heap holds [0-9]+ MiB.*\\); the run failed`));
  }
});

test('pool: a helper without a key refuses to run', async () => {
  const pool = await createPool({ role: 'client', workers: 3, module, _test: { noKey: 2 } });
  await failedThenClosed(pool, pool.createRequest(CLIENT_IN), /helper has no key and cannot make one; refusing to run/);
});

// Many slices (2,000 values at 3 workers: 32 slices of 62-63 values, handed out as workers
// free up) give the single instance's bytes: raw setup and permutation (the k-way merge over
// all slices), request, response, intersection and association table.
test('pool: 32 slices on 3 workers give the single instance\'s bytes', async () => {
  const skey = new Uint8Array(32).fill(5), ckey = new Uint8Array(32).fill(6);
  const big = Array.from({ length: 2000 }, (_, i) => `big-${i}`);
  const mine = Array.from({ length: 2000 }, (_, i) => `big-${3 * i}`);
  const s1 = psi.server.createFromKey(skey, true), c1 = psi.client.createFromKey(ckey, true);
  const sp = await createPool({ role: 'server', reveal: true, workers: 3, module, key: skey.slice() });
  const cp = await createPool({ role: 'client', reveal: true, workers: 3, module, key: ckey.slice() });
  try {
    const want = s1.createSetupMessageWithPermutation(0, 0, big, psi.dataStructure.Raw);
    const got = await sp.createSetupMessageWithPermutation(0, 0, big, psi.dataStructure.Raw);
    assert.deepEqual(got.setup, want.setup);
    assert.deepEqual(got.permutation, want.permutation);
    const request = c1.createRequest(mine);
    assert.deepEqual(await cp.createRequest(mine), request);
    const response = s1.processRequest(request);
    assert.deepEqual(await sp.processRequest(request), response);
    assert.deepEqual(await cp.getIntersection(want.setup, response), c1.getIntersection(want.setup, response));
    assert.deepEqual(await cp.getAssociationTable(want.setup, response, want.permutation),
      c1.getAssociationTable(want.setup, response, want.permutation));
  } finally {
    s1.delete(); c1.delete();
    await sp.close(); await cp.close();
  }
});

// Slices are handed out as workers free up; the error must still be the one the single
// engine meets first: the lowest-numbered failing slice's.
test('pool: of two bad points in a request, the first one\'s error wins, as with one instance', async () => {
  const key = new Uint8Array(32).fill(3);
  const single = psi.server.createFromKey(key, true);
  const pool = await createPool({ role: 'server', reveal: true, workers: 3, module, key: key.slice() });
  const client = psi.client.createWithNewKey(true);
  try {
    const clean = client.createRequest(Array.from({ length: 600 }, (_, i) => `v${i}`));
    let request = clean;
    // elements are repeated field 2 (tag 0x12), each 0x12 0x21 + 33 bytes (PROTOCOL.md §10)
    let base = 0;
    while (!(clean[base] === 0x12 && clean[base + 1] === 0x21)) base++;
    const at = (i) => base + 35 * i + 2;
    const spoil = (i, how) => {
      if (how === 'prefix') request[at(i)] = 0x05;
      else request.fill(0xff, at(i) + 1, at(i) + 33); // x >= p
    };
    for (const [first, second] of [['prefix', 'x'], ['x', 'prefix']]) {
      request = clean.slice();
      spoil(50, first);
      spoil(500, second);
      let want;
      try { single.processRequest(request); } catch (e) { want = e; }
      assert.ok(want && want.codeName === (first === 'prefix' ? 'PSI_E_POINT_PREFIX' : 'PSI_E_POINT_X_RANGE'), String(want));
      await assert.rejects(pool.processRequest(request), (e) => e.codeName === want.codeName && e.message === want.message);
    }
  } finally {
    single.delete(); client.delete();
    await pool.close();
  }
});

// The page packs the values into one UTF-8 buffer and moves it to the lead (pool.mjs): strings
// of 1 to 4 UTF-8 bytes a character are masked as their UTF-8 bytes given to one instance,
// and the page's own Uint8Arrays stay whole (copied, not moved).
test('pool: packed values give one instance\'s bytes, the page\'s arrays untouched', async () => {
  const bytes = new Uint8Array([0, 255, 10, 200]);
  const values = [...SERVER_IN.slice(0, 40), 'é', 'naïve-ü', '中文-値', '😀🙂', '', bytes, 'a😀b', ...SERVER_IN.slice(40, 60)];
  const key = new Uint8Array(32).fill(5);
  const one = psi.server.createFromKey(key, true), oneClient = psi.client.createFromKey(key, true);
  const server = await createPool({ role: 'server', reveal: true, workers: 3, module, key: key.slice() });
  const client = await createPool({ role: 'client', reveal: true, workers: 3, module, key: key.slice() });
  try {
    // The reference takes the UTF-8 bytes, encoded apart from the packing under test.
    const utf8 = values.map((v) => (typeof v === 'string' ? new TextEncoder().encode(v) : v));
    const want = one.createSetupMessage(0.001, 10, utf8, psi.dataStructure.Raw);
    assert.deepEqual(await server.createSetupMessage(0.001, 10, values, psi.dataStructure.Raw), want);
    assert.deepEqual(await client.createRequest(values), oneClient.createRequest(utf8));
    assert.equal(bytes.length, 4, 'a byte value was moved out of the page');
    assert.deepEqual([...bytes], [0, 255, 10, 200]);
  } finally {
    one.delete();
    oneClient.delete();
    await server.close();
    await client.close();
  }
});

// A value packing refuses on the page (a lone surrogate) reaches the lead as it is, which
// refuses it with one instance's error and message; a value of another type is a TypeError.
test('pool: a lone surrogate is refused as one instance refuses it', async () => {
  const key = new Uint8Array(32).fill(6);
  const one = psi.server.createFromKey(key, true), oneClient = psi.client.createFromKey(key, true);
  const server = await createPool({ role: 'server', reveal: true, workers: 2, module, key: key.slice() });
  const client = await createPool({ role: 'client', reveal: true, workers: 2, module, key: key.slice() });
  const same = (want) => (e) => {
    assert.ok(e instanceof PsiError, `not a PsiError: ${e}`);
    assert.equal(e.codeName, want.codeName);
    assert.equal(e.message, want.message);
    return true;
  };
  const caught = (f) => { try { f(); } catch (e) { return e; } return assert.fail('no error'); };
  try {
    const bad = ['ok', 'a\udc00b'];
    await assert.rejects(client.createRequest(bad), same(caught(() => oneClient.createRequest(bad))));
    await assert.rejects(server.createSetupMessage(0.001, 10, bad),
      same(caught(() => one.createSetupMessage(0.001, 10, bad))));
    await assert.rejects(client.createRequest(['ok', 5]), (e) => e instanceof TypeError &&
      e.message === caught(() => oneClient.createRequest(['ok', 5])).message);
    assert.equal((await client.createRequest(['a', 'b'])).length > 0, true, 'the pool is usable');
  } finally {
    one.delete();
    oneClient.delete();
    await server.close();
    await client.close();
  }
});

test('pool: library errors are PsiErrors and leave the pool usable', async () => {
  const pool = await createPool({ role: 'server', reveal: true, workers: 3, module });
  try {
    await assert.rejects(pool.processRequest(new Uint8Array([1, 2, 3])), (e) => e.code === -16 && e.func === 'psi_server_process_request');
    await assert.rejects(pool.createSetupMessage(0.001, 10, ['a', '\ud800']), (e) => e.codeName === 'PSI_E_INVALID_ARG');
    await assert.rejects(pool.createSetupMessage(0.001, 10, 'nope'), TypeError);
    assert.ok((await pool.createSetupMessage(0.001, 10, SERVER_IN)).length > 0);
  } finally {
    await pool.close();
  }
  await assert.rejects(createPool({ role: 'client', workers: 2, module, key: new Uint8Array(32).fill(255) }),
    (e) => e.codeName === 'PSI_E_KEY_OUT_OF_RANGE');
});

test('pool: a module glue that fails to load is a PoolError naming the worker, well within the timeout', async () => {
  const t = Date.now();
  await assert.rejects(createPool({ role: 'client', workers: 2, module, load: { dir: '/nonexistent-shardpsi' }, timeoutMs: 60000 }),
    (e) => e instanceof PoolError && /worker [01] failed: .*nonexistent-shardpsi/.test(e.message));
  assert.ok(Date.now() - t < 10000, `${Date.now() - t} ms`);
});
