// Memory: the JS layer frees every heap allocation on every path (success and
// error), repeated protocol rounds do not grow the wasm heap or its high-water
// mark, and key bytes copied into the heap are zeroed.
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadModule } from '../js/module.mjs';
import { createLibrary } from '../js/index.mjs';
import { LowLevel, OP, ROLE } from '../js/lowlevel.mjs';

// A module whose JS-side malloc/free calls are counted (C-internal ones are not).
const M = await loadModule();
let live = 0;
M._free(M._malloc(1)); // the glue's first call replaces M._malloc/_free by the raw exports
const { _malloc: malloc, _free: free } = M;
M._malloc = (n) => { const p = malloc(n); if (p) live++; return p; };
M._free = (p) => { if (p) live--; free(p); };
const psi = createLibrary(M);

const KEY_S = Uint8Array.from({ length: 32 }, (_, i) => 0x40 + i);
const KEY_C = Uint8Array.from({ length: 32 }, (_, i) => 0x10 + i);
const server = psi.server.createFromKey(KEY_S, true);
const client = psi.client.createFromKey(KEY_C, true);
const serverInputs = Array.from({ length: 40 }, (_, i) => `server ${i}`);
const clientInputs = Array.from({ length: 20 }, (_, i) => `server ${i * 3}`);
const matches = clientInputs.filter((v) => serverInputs.includes(v)).length; // 14

function round(ds) {
  const setup = ds === 0
    ? server.createSetupMessageWithPermutation(0, 0, serverInputs).setup
    : server.createSetupMessage(0.001, clientInputs.length, serverInputs, ds);
  const resp = server.processRequest(client.createRequest(clientInputs));
  assert.equal(client.getIntersection(setup, resp).length, matches);
  assert.equal(client.getIntersectionSize(setup, resp), matches);
  if (ds === 0) assert.equal(client.getAssociationTable(setup, resp).length, 2);
  server.getPrivateKeyBytes();
}

// The address of a fresh 4 MiB block: it moves up when the heap below it grows.
function probe() {
  const p = malloc(4 << 20);
  assert.notEqual(p, 0);
  free(p);
  return p >>> 0;
}

test('100 rounds of setup, request, response and intersection do not grow the heap', () => {
  for (const ds of [0, 1, 2]) round(ds); // warm-up: lazy OpenSSL and libsodium state
  const heap = M.HEAPU8.length, high = probe(), before = live;
  for (let i = 0; i < 100; i++) round(i % 3);
  assert.equal(live, before, 'JS-side allocations left behind');
  assert.equal(M.HEAPU8.length, heap, 'the wasm memory grew');
  assert.ok(probe() <= high, 'the malloc high-water mark moved up');
});

test('failed calls free their allocations too', () => {
  const before = live, heap = M.HEAPU8.length;
  const bad = [
    () => server.processRequest(Uint8Array.of(0x08, 0x01, 0x12, 0x21, 0x05, ...new Uint8Array(32))),
    () => client.getIntersection(Uint8Array.of(0xff), new Uint8Array(0)),
    () => client.getAssociationTable(server.createSetupMessage(0.1, 1, ['a']), new Uint8Array(0)),
    () => client.createRequest(['ok', '\ud800']),
    () => server.createSetupMessage(5, 1, ['a']),
    () => server.createSetupMessage(0.1, 1, ['a'], 9),
    () => psi.client.createFromKey(new Uint8Array(32)),
    () => psi.checkPoint(Uint8Array.of(2, 1)),
  ];
  for (let i = 0; i < 20; i++) for (const f of bad) assert.throws(f);
  assert.equal(live, before);
  assert.equal(M.HEAPU8.length, heap);
});

// The plans of the pool's lead, through LowLevel on the same instance: every path frees the
// plan's arguments and its own memory (a failed begin, a failed step, a failed finish).
test('plans free their memory, also when begin, a step or finish fails', () => {
  const ll = new LowLevel(M);
  const sv = ll.engineFromKey(ROLE.SERVER, true, KEY_S), cl = ll.engineFromKey(ROLE.CLIENT, true, KEY_C);
  const run = (e, args, finish) => {
    const plan = ll.planBegin(e, args);
    try {
      for (let k = 0; k < ll.planSlices(plan); k++) {
        if (k % 2 === 0) { ll.planRun(plan, e, k); continue; }
        const step = ll.planStep(plan, k);
        ll.planPut(plan, k, ll.stepRun(e, { ...step, input: ll.stepInput(step) }));
      }
      return ll.planFinish(plan, finish);
    } finally { ll.planFree(plan); }
  };
  try {
    const request = run(cl, { op: OP.REQUEST, values: clientInputs, slices: 3 });
    const badPoint = request.slice(); badPoint[2 + 35 * 7 + 2] = 0x05;
    const gcs = ll.createSetup(sv, { structure: 1, fpr: 0.001, numClientInputs: 20 }, serverInputs).setup;
    const once = () => {
      const setup = run(sv, { op: OP.SETUP, values: serverInputs, params: { structure: 0, fpr: 0, numClientInputs: 0 }, slices: 4 }, { perm: true }).bytes;
      const response = run(sv, { op: OP.RESPONSE, message: request, slices: 3 });
      assert.equal(run(cl, { op: OP.INTERSECTION, setup, message: response, slices: 2 }).length, matches);
      assert.throws(() => run(sv, { op: OP.RESPONSE, message: request.subarray(0, 9) }), { codeName: 'PSI_E_MSG_TRUNCATED' });
      assert.throws(() => run(sv, { op: OP.RESPONSE, message: badPoint, slices: 3 }), { codeName: 'PSI_E_POINT_PREFIX' });
      assert.throws(() => run(cl, { op: OP.ASSOCIATION, setup: gcs, message: response, slices: 2 }), { codeName: 'PSI_E_STRUCTURE' });
    };
    once(); // warm-up
    const before = live, heap = M.HEAPU8.length, high = probe();
    for (let i = 0; i < 30; i++) once();
    assert.equal(live, before, 'JS-side allocations left behind');
    assert.equal(M.HEAPU8.length, heap, 'the wasm memory grew');
    assert.ok(probe() <= high, 'the malloc high-water mark moved up');
  } finally { ll.engineFree(sv); ll.engineFree(cl); }
});

test('every object can be deleted, twice, without leaking', () => {
  const before = live, high = probe();
  for (let i = 0; i < 200; i++) {
    const objs = [psi.server.createWithNewKey(), psi.client.createWithNewKey(true),
      psi.server.createFromKey(KEY_S, true), psi.client.createFromKey(KEY_C)];
    for (const o of objs) { o.delete(); o.delete(); }
  }
  assert.equal(live, before);
  assert.ok(probe() <= high);
});

test('key bytes do not stay in the heap', () => {
  const key = Uint8Array.from({ length: 32 }, (_, i) => 0xa0 ^ (i * 37));
  // A freed chunk's first 8 bytes hold allocator links: look for the key's last 16.
  const find = () => Buffer.from(M.HEAPU8.buffer).indexOf(Buffer.from(key.subarray(16)));
  const s = psi.server.createFromKey(key, true);
  assert.deepEqual(s.getPrivateKeyBytes(), key);
  const copy = s.getPrivateKeyBytes();
  copy.fill(0); // a copy: the engine's key is unchanged
  assert.deepEqual(s.getPrivateKeyBytes(), key);
  s.delete();
  assert.equal(find(), -1, 'the big-endian key is still somewhere in the wasm heap');
});

test.after(() => { server.delete(); client.delete(); });
