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
