// Errors: every non-zero library code throws a PsiError carrying the code, its
// name (psi_error_name) and message (psi_strerror); JS-side misuse throws
// TypeError/RangeError; deleted objects throw psi.js's "Instance was deleted".
import test from 'node:test';
import assert from 'node:assert/strict';
import { createPSI, PsiError, ERROR_INSTANCE_DELETED } from '../js/index.mjs';
import { loadModule } from '../js/module.mjs';
import { LowLevel, ROLE, packValues } from '../js/lowlevel.mjs';

const psi = await createPSI();
const N = Buffer.from('ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551', 'hex');
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 1);

// assert.throws matcher: a PsiError with this name, its code and psi_strerror's message.
function psiError(codeName, func) {
  return (e) => {
    assert.ok(e instanceof PsiError && e instanceof Error, `not a PsiError: ${e}`);
    assert.equal(e.codeName, codeName);
    assert.equal(e.name, codeName);
    assert.equal(typeof e.code, 'number');
    assert.ok(e.code < 0);
    assert.equal(psi.errorName(e.code), codeName);
    // psi_strerror's text, with the place of bad input before it and a JS note after
    const text = psi.errorMessage(e.code);
    assert.ok(e.message === text || e.message.endsWith(`: ${text}`) || e.message.startsWith(`${text}: `),
      e.message);
    if (func) assert.equal(e.func, func);
    return true;
  };
}

test('bad keys: 0, n, n + 1, 2^256 - 1, empty', () => {
  const nPlus1 = Uint8Array.from(N); nPlus1[31]++;
  for (const key of [new Uint8Array(32), new Uint8Array(0), Uint8Array.from(N), nPlus1, new Uint8Array(32).fill(255)]) {
    assert.throws(() => psi.server.createFromKey(key), psiError('PSI_E_KEY_OUT_OF_RANGE', 'psi_engine_create_from_key'));
    assert.throws(() => psi.client.createFromKey(key, true), psiError('PSI_E_KEY_OUT_OF_RANGE'));
  }
  const nMinus1 = Uint8Array.from(N); nMinus1[31]--;
  psi.server.createFromKey(nMinus1).delete();
  psi.client.createFromKey(Uint8Array.of(1)).delete(); // any length, never reduced
  assert.throws(() => psi.client.createFromKey('01'), TypeError);
});

test('bad points in a request', () => {
  const server = psi.server.createFromKey(KEY, true), client = psi.client.createFromKey(KEY, true);
  try {
    const req = client.createRequest(['a', 'b']);
    assert.equal(req[4], 0x02); // 08 01 12 21 | 02 x...
    const bad = (at, value) => { const r = Uint8Array.from(req); r[at] = value; return r; };
    assert.throws(() => server.processRequest(bad(4, 0x05)), psiError('PSI_E_POINT_PREFIX', 'psi_server_process_request'));
    const xff = Uint8Array.from(req); xff.fill(0xff, 5, 37);
    assert.throws(() => server.processRequest(xff), psiError('PSI_E_POINT_X_RANGE'));
    assert.throws(() => server.processRequest(req.subarray(0, req.length - 1)), psiError('PSI_E_MSG_TRUNCATED'));
    assert.throws(() => server.processRequest(Uint8Array.of(0x08, 0x00)), psiError('PSI_E_REVEAL_MISMATCH'));
    assert.throws(() => psi.checkPoint(Uint8Array.of(0)), psiError('PSI_E_POINT_IDENTITY', 'psi_point_check'));
    assert.throws(() => psi.checkPoint(req.subarray(4, 36)), psiError('PSI_E_POINT_LENGTH'));
    psi.checkPoint(req.subarray(4, 37));
  } finally { server.delete(); client.delete(); }
});

test('malformed setups and responses', () => {
  const server = psi.server.createFromKey(KEY, true), client = psi.client.createFromKey(KEY, true);
  try {
    const resp = server.processRequest(client.createRequest(['a']));
    const gcs = server.createSetupMessage(0.01, 1, ['a', 'b']);
    assert.deepEqual(client.getIntersection(gcs, resp), [0]);
    assert.throws(() => client.getIntersection(gcs.subarray(0, gcs.length - 3), resp), (e) => e instanceof PsiError && /^PSI_E_(MSG|GCS)_/.test(e.codeName));
    assert.throws(() => client.getIntersectionSize(new Uint8Array(0), resp), psiError('PSI_E_MSG_ONEOF_MISSING', 'psi_client_get_intersection_size'));
    assert.throws(() => client.getIntersection(Uint8Array.of(0xff), resp), psiError('PSI_E_MSG_TRUNCATED'));
    assert.throws(() => client.getIntersection(gcs, Uint8Array.of(0x0a, 0x21, 0x02)), psiError('PSI_E_MSG_TRUNCATED'));
    assert.throws(() => server.createSetupMessage(2, 1, ['a']), psiError('PSI_E_FPR', 'psi_setup_bound'));
    assert.throws(() => server.createSetupMessage(0.01, 0, ['a'], psi.dataStructure.BloomFilter), psiError('PSI_E_FPR'));
    assert.throws(() => server.createSetupMessage(0.01, 1, ['a'], 7), psiError('PSI_E_STRUCTURE'));
    assert.throws(() => server.createSetupMessageWithPermutation(0.01, 1, ['a'], psi.dataStructure.GCS), psiError('PSI_E_STRUCTURE'));
    assert.throws(() => client.getAssociationTable(gcs, resp), psiError('PSI_E_STRUCTURE', 'psi_client_get_association'));
  } finally { server.delete(); client.delete(); }
});

test('reveal disabled, reveal mismatch', () => {
  const server = psi.server.createWithNewKey(), client = psi.client.createWithNewKey();
  try {
    const setup = server.createSetupMessage(0.001, 2, ['x', 'y']);
    const resp = server.processRequest(client.createRequest(['x', 'z']));
    assert.equal(client.getIntersectionSize(setup, resp), 1);
    assert.throws(() => client.getIntersection(setup, resp), psiError('PSI_E_REVEAL_DISABLED', 'psi_client_get_intersection'));
    const revealing = psi.client.createWithNewKey(true);
    try {
      assert.throws(() => server.processRequest(revealing.createRequest(['x'])), psiError('PSI_E_REVEAL_MISMATCH'));
    } finally { revealing.delete(); }
  } finally { server.delete(); client.delete(); }
});

test('wrong role (reachable only through the low-level layer)', async () => {
  const ll = new LowLevel(await loadModule());
  const e = ll.engineFromKey(ROLE.CLIENT, true, KEY);
  try {
    const req = ll.createRequest(e, ['a']);
    assert.throws(() => ll.processRequest(e, req), psiError('PSI_E_WRONG_ROLE', 'psi_server_process_request'));
    assert.throws(() => ll.createSetup(e, { structure: 0, fpr: 0, numClientInputs: 0 }, ['a']), psiError('PSI_E_WRONG_ROLE'));
    assert.equal(ll.engineRole(e), ROLE.CLIENT);
    assert.equal(ll.engineReveal(e), true);
  } finally { ll.engineFree(e); }
});

test('inputs: lone surrogates refused, UTF-8 and bytes hashed alike', () => {
  const client = psi.client.createFromKey(KEY, true);
  try {
    for (const bad of ['\ud800', 'a\udc00b', '\udc00\ud800']) {
      assert.throws(() => client.createRequest(['ok', bad]),
        (e) => psiError('PSI_E_INVALID_ARG')(e) && /input 1 holds a lone surrogate/.test(e.message));
    }
    const s = ['h\u00e9llo', '\ud83d\ude00', '', 'a\0b'];
    const asBytes = s.map((x) => new TextEncoder().encode(x));
    assert.deepEqual(client.createRequest(s), client.createRequest(asBytes));
    assert.throws(() => client.createRequest([1]), TypeError);
    assert.throws(() => client.createRequest('abc'), TypeError);
    assert.throws(() => client.getIntersection('x', new Uint8Array()), TypeError);
  } finally { client.delete(); }
});

// packValues writes UTF-8 itself (not with TextEncoder: values.mjs says why): its bytes must be
// TextEncoder's for code points at every length boundary, pairs included, and each lone
// surrogate, wherever it stands, must be refused.
test('packValues: the UTF-8 of every code point class, as TextEncoder writes it', () => {
  const cps = [0, 0x41, 0x7f, 0x80, 0xe9, 0x7ff, 0x800, 0x4e2d, 0xd7ff, 0xe000, 0xfffd, 0xffff,
    0x10000, 0x1f600, 0x10ffff];
  const values = [''];
  for (const a of cps) for (const b of cps) values.push(String.fromCodePoint(a, b), `x${String.fromCodePoint(a)}y`);
  values.push(new Uint8Array([0xff, 0xc0]), 'z'.repeat(1000));
  const p = packValues(values);
  const enc = new TextEncoder();
  const want = values.map((v) => (typeof v === 'string' ? enc.encode(v) : v));
  assert.equal(p.offsets.length, values.length + 1);
  assert.equal(p.data.length, want.reduce((a, b) => a + b.length, 0));
  want.forEach((w, i) => assert.deepEqual(p.data.subarray(p.offsets[i], p.offsets[i + 1]), w, `value ${i}`));
  for (const bad of ['\ud800', '\udbff', '\udc00', 'a\ud83d', '\ud83da', '\ude00\ud83d', '\ud83d\ud83d']) {
    assert.throws(() => packValues(['ok', bad]), (e) => e instanceof PsiError &&
      e.codeName === 'PSI_E_INVALID_ARG' && /^input 1 holds a lone surrogate/.test(e.message),
      JSON.stringify(bad));
  }
});

test('argument types of createSetupMessage', () => {
  const server = psi.server.createFromKey(KEY);
  try {
    assert.throws(() => server.createSetupMessage('0.1', 1, ['a']), TypeError);
    assert.throws(() => server.createSetupMessage(0.1, 1.5, ['a']), RangeError);
    assert.throws(() => server.createSetupMessage(0.1, 2n ** 63n, ['a']), RangeError);
    assert.throws(() => server.createSetupMessage(0.1, 1, ['a'], 'GCS'), TypeError);
    assert.deepEqual(server.createSetupMessage(0.1, 10n, ['a']), server.createSetupMessage(0.1, 10, ['a']));
    // psi.js enum objects ({ value }) are accepted; GCS is the default
    assert.deepEqual(server.createSetupMessage(0.1, 10, ['a'], { value: 1 }), server.createSetupMessage(0.1, 10, ['a']));
  } finally { server.delete(); }
});

test('delete: works, is idempotent, later calls throw "Instance was deleted"', () => {
  const server = psi.server.createWithNewKey(true), client = psi.client.createWithNewKey(true);
  server.delete(); server.delete(); client.delete(); client.delete();
  const deleted = { message: ERROR_INSTANCE_DELETED };
  assert.throws(() => server.createSetupMessage(0.1, 1, ['a']), deleted);
  assert.throws(() => server.createSetupMessageWithPermutation(0, 0, ['a']), deleted);
  assert.throws(() => server.processRequest(new Uint8Array()), deleted);
  assert.throws(() => server.getPrivateKeyBytes(), deleted);
  assert.throws(() => client.createRequest(['a']), deleted);
  assert.throws(() => client.getIntersection(new Uint8Array(), new Uint8Array()), deleted);
  assert.throws(() => client.getIntersectionSize(new Uint8Array(), new Uint8Array()), deleted);
  assert.throws(() => client.getAssociationTable(new Uint8Array(), new Uint8Array()), deleted);
  assert.throws(() => client.getPrivateKeyBytes(), deleted);
});
