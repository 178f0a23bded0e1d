// Payload tables (PROTOCOL.md §22) through the package's LowLevel API, against the
// independent Python implementation's vectors (vectors/shardpsi-payloads.json): every
// table built byte for byte from the server's masks, the payloads opened after a round
// with the case's keys, and every damaged table refused with its code.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { compileModule, PsiError } from '../js/index.mjs';
import { loadModule } from '../js/module.mjs';
import { LowLevel, ROLE, SUITES } from '../js/lowlevel.mjs';

const ll = new LowLevel(await loadModule({ module: await compileModule() }));
const doc = JSON.parse(readFileSync(new URL('../../vectors/shardpsi-payloads.json', import.meta.url), 'utf8'));
const hex = (b) => Buffer.from(b).toString('hex');
const unhex = (h) => Uint8Array.from(Buffer.from(h, 'hex'));

// The client's unmasked elements of a case's client values, after the round.
function clientElements(c, suite) {
  const se = ll.engineFromKey(ROLE.SERVER, true, unhex(c.server_key), suite);
  const ce = ll.engineFromKey(ROLE.CLIENT, true, unhex(c.client_key), suite);
  try {
    return ll.unmask(ce, ll.remask(se, ll.mask(ce, c.client_inputs)));
  } finally {
    ll.engineFree(se);
    ll.engineFree(ce);
  }
}

test('every table of the vectors, built and opened as the Python implementation does', () => {
  assert.ok(doc.cases.length >= 12);
  for (const c of doc.cases) {
    const suite = SUITES.indexOf(c.suite);
    const se = ll.engineFromKey(ROLE.SERVER, false, unhex(c.server_key), suite);
    let table;
    try {
      table = ll.payloadTableBuild(suite, ll.mask(se, c.server_inputs), c.payloads, c.pad_len,
        unhex(c.salt));
    } finally {
      ll.engineFree(se);
    }
    assert.equal(hex(table), c.table, `${c.suite}/${c.name}: table`);
    const got = ll.payloadOpen(suite, table, clientElements(c, suite))
      .map((p) => (p === null ? null : new TextDecoder().decode(p)));
    assert.deepEqual(got, c.expected, `${c.suite}/${c.name}: opened payloads`);
    assert.deepEqual(ll.payloadTableCheck(suite, table),
      { count: c.server_inputs.length, padLen: c.pad_len });
  }
});

test('every damaged table refused with its code', () => {
  assert.ok(doc.tampered.length >= 24);
  for (const x of doc.tampered) {
    const suite = SUITES.indexOf(x.suite);
    const base = doc.cases.find((c) => c.suite === x.suite && c.name === x.of);
    assert.throws(() => ll.payloadOpen(suite, unhex(x.table), clientElements(base, suite)),
      (e) => e instanceof PsiError && e.name === x.error, `${x.suite}: ${x.name}`);
  }
});

test('a fresh salt each table; bad arguments refused', () => {
  const se = ll.engineFromKey(ROLE.SERVER, false, Uint8Array.from({ length: 32 }, () => 7), 0);
  try {
    const el = ll.mask(se, ['a', 'b']);
    const a = ll.payloadTableBuild(0, el, ['x', 'yy']), b = ll.payloadTableBuild(0, el, ['x', 'yy']);
    assert.notEqual(hex(a.subarray(24, 56)), hex(b.subarray(24, 56)));
    assert.throws(() => ll.payloadTableBuild(0, el, ['x']), (e) => e.name === 'PSI_E_INVALID_ARG');
    assert.throws(() => ll.payloadTableBuild(0, el, ['x', 'yy'], 0, new Uint8Array(5)),
      (e) => e.name === 'PSI_E_INVALID_ARG');
    assert.throws(() => ll.payloadTableBuild(0, el, ['x', 'yy'], 1), (e) => e.name === 'PSI_E_PAYLOAD_LENGTH');
    assert.throws(() => ll.payloadTableBuild(0, ll.mask(se, ['a', 'a']), ['x', 'y']),
      (e) => e.name === 'PSI_E_PAYLOAD_DUPLICATE');
  } finally {
    ll.engineFree(se);
  }
});

// The psi.js-style API (createPayloadTable, getIntersectionWithPayloads) and the worker pool
// at 1 and 3 workers: every case's table byte for byte with its key and salt, and the
// payloads a client opens after a whole round (raw setup) are the vectors'.
const { createPSI } = await import('../js/index.mjs');
const { createPool } = await import('../js/pool.mjs');
const psi = await createPSI();
const module = await compileModule();
const text = (p) => (p === null ? null : new TextDecoder().decode(p));

async function joinCase(c, makeServer, makeClient) {
  const server = await makeServer(unhex(c.server_key), c.suite);
  const client = await makeClient(unhex(c.client_key), c.suite);
  try {
    const table = await server.createPayloadTable(c.server_inputs, c.payloads,
      { padLen: c.pad_len, salt: unhex(c.salt) });
    assert.equal(hex(table), c.table, `${c.suite}/${c.name}: table`);
    const setup = await server.createSetupMessage(0, 0, c.server_inputs, psi.dataStructure.Raw);
    const response = await server.processRequest(await client.createRequest(c.client_inputs));
    const r = await client.getIntersectionWithPayloads(setup, response, table);
    // The indices are getIntersection's (a raw setup pairs a value's copies one to one,
    // PROTOCOL.md §9.5), and every one has the vectors' payload.
    assert.deepEqual(r.indices, await client.getIntersection(setup, response), `${c.suite}/${c.name}: indices`);
    assert.equal(new Set(r.indices.map((i) => c.client_inputs[i])).size,
      new Set(c.client_inputs.filter((v, i) => c.expected[i] !== null)).size, `${c.suite}/${c.name}: every value`);
    r.indices.forEach((i, k) => assert.equal(text(r.payloads[k]), c.expected[i], `${c.suite}/${c.name}: row ${i}`));
    return table;
  } finally {
    await server.delete();
    await client.delete();
  }
}

test('the psi.js-style API: every case, table and opened payloads', async () => {
  for (const c of doc.cases) {
    await joinCase(c, (k, suite) => psi.server.createFromKey(k, true, { suite }),
      (k, suite) => psi.client.createFromKey(k, true, { suite }));
  }
});

for (const workers of [1, 3]) {
  test(`the pool, ${workers} worker(s): every case, table and opened payloads`, async () => {
    const make = (role) => (key, suite) => createPool({ role, reveal: true, key, suite, workers, module });
    for (const c of doc.cases) await joinCase(c, make('server'), make('client'));
  });
}

test('payloads through the API: refusals', async () => {
  const server = psi.server.createWithNewKey(true), client = psi.client.createWithNewKey(true);
  try {
    assert.throws(() => server.createPayloadTable(['a', 'b'], ['x']), (e) => e.name === 'PSI_E_INVALID_ARG');
    assert.throws(() => server.createPayloadTable(['a', 'a'], ['x', 'y']), (e) => e.name === 'PSI_E_PAYLOAD_DUPLICATE');
    assert.throws(() => server.createPayloadTable(['a'], 'x'), TypeError);
    assert.throws(() => server.createPayloadTable(['a'], ['xyz'], { padLen: 2 }), (e) => e.name === 'PSI_E_PAYLOAD_LENGTH');
    const table = server.createPayloadTable(['a', 'b', 'c'], ['1', '2', '3']);
    const setup = server.createSetupMessage(0, 0, ['a', 'b', 'c'], psi.dataStructure.Raw);
    const response = server.processRequest(client.createRequest(['b', 'z']));
    const ok = client.getIntersectionWithPayloads(setup, response, table);
    assert.deepEqual(ok.indices, [0]);
    assert.equal(text(ok.payloads[0]), '2');
    // Every record's ciphertext changed (L = 1): b's record is matched and fails.
    for (let j = 0; j < 3; j++) table[56 + j * (36 + 1) + 20] ^= 1;
    assert.throws(() => client.getIntersectionWithPayloads(setup, response, table), (e) => e.name === 'PSI_E_PAYLOAD_AUTH');
    assert.throws(() => client.getIntersectionWithPayloads(setup, response, table.subarray(0, 60)),
      (e) => e.name === 'PSI_E_PAYLOAD_TRUNCATED');
  } finally {
    server.delete();
    client.delete();
  }
  const pool = await createPool({ role: 'client', reveal: true, workers: 2, module });
  try {
    await assert.rejects(pool.getIntersectionWithPayloads(new Uint8Array(3), new Uint8Array(3), new Uint8Array(10)),
      (e) => e.name === 'PSI_E_PAYLOAD_TRUNCATED');
  } finally {
    await pool.close();
  }
});
