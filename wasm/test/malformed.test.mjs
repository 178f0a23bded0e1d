// The malformed-input table, tests/psi/malformed/cases.json (written by make-cases.py there;
// tests/psi/test_malformed.c runs it natively), through the wasm build.  Every case runs through the
// LowLevel class of one instance (the lowest layer that has every operation of the table), the
// cases of the psi.js-like surface (index.mjs) through it too, and the server, client and key
// cases through the worker pool at 2 workers.  Each must throw a PsiError with the case's code,
// the field, index and offset of the case (null when none), and the message
//   field + "[" + index + "]" (if any) + " (byte " + offset + ")" (if any) + ": " + psi_strerror(code)
// (psi_strerror(code) alone when the case has no field).  A case's "suite" (PROTOCOL.md §16;
// default openmined-p256) is its engine's suite, or the suite its codec call is for (every C
// function that reads a message takes the suite); ristretto255 engines use the document's
// ristretto255 keys.
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createLibrary } from '../js/index.mjs';
import { loadModule, compileModule } from '../js/module.mjs';
import { LowLevel, PsiError, ROLE } from '../js/lowlevel.mjs';
import { createPool } from '../js/pool.mjs';

const doc = JSON.parse(readFileSync(new URL('../../tests/psi/malformed/cases.json', import.meta.url), 'utf8'));
const CASES = doc.cases;
const M = await loadModule();
const ll = new LowLevel(M);
const psi = createLibrary(M); // the same instance as ll
const module = await compileModule();

const hex = (h) => Uint8Array.from(Buffer.from(h, 'hex'));
const SERVER_KEY = hex(doc.server_key);
const CLIENT_KEY = hex(doc.client_key);
const reveal = (c) => (c.reveal === undefined ? true : c.reveal !== 0); // as the C test: default 1
// The case's suite name (undefined: openmined-p256) and id; the keys of its engines.
const suiteOf = (c) => c.suite;
const suiteIdOf = (c) => ll.suiteId(c.suite);
const keyOf = (role, c) => (c.suite === 'ristretto255'
  ? hex(role === 'server' || role === ROLE.SERVER ? doc.ristretto255_server_key : doc.ristretto255_client_key)
  : role === 'server' || role === ROLE.SERVER ? SERVER_KEY : CLIENT_KEY);

// psi_error_name -> code, over every code of the library (as the C test walks them).
const CODES = new Map();
for (let code = 0; ll.errorName(code) !== null; code--) CODES.set(ll.errorName(code), code);

// The C function a single instance names in the error of each operation.
const FUNC = {
  request_decode: 'psi_request_decode',
  response_decode: 'psi_response_decode',
  setup_parse: 'psi_setup_parse',
  point_check: 'psi_point_check',
  engine_from_key: 'psi_engine_create_from_key',
  setup_bound: 'psi_setup_bound',
  server_process_request: 'psi_server_process_request',
  client_get_intersection: 'psi_client_get_intersection',
  client_get_intersection_size: 'psi_client_get_intersection_size',
  client_get_association: 'psi_client_get_association',
  engine_remask: 'psi_engine_remask',
  engine_unmask: 'psi_engine_unmask',
  suite_from_name: 'psi_suite_from_name',
};
const funcOf = (c) => FUNC[c.op];

// What a case must give: the summary of its PsiError.
function expected(c, func = funcOf(c)) {
  const code = CODES.get(c.error);
  assert.equal(typeof code, 'number', `${c.name}: unknown error name ${c.error}`);
  let place = '';
  if (c.field !== null) {
    place = c.field;
    if (c.index !== null) place += `[${c.index}]`;
    if (c.offset !== null) place += ` (byte ${c.offset})`;
  }
  const text = ll.strerror(code);
  return {
    error: c.error, code, name: c.error, func,
    message: place ? `${place}: ${text}` : text,
    field: c.field, index: c.index, offset: c.offset,
  };
}

const summary = (e) => ({
  error: e.codeName, code: e.code, name: e.name, func: e.func,
  message: e.message, field: e.field, index: e.index, offset: e.offset,
});

// Runs fn (sync or async); it must throw the case's PsiError.
async function check(c, where, fn, want = expected(c)) {
  let err = null;
  try { await fn(); } catch (e) { err = e; }
  assert.ok(err !== null, `${c.name} (${where}): no error, expected ${c.error}`);
  assert.ok(err instanceof PsiError, `${c.name} (${where}): not a PsiError: ${err && err.stack}`);
  assert.deepEqual(summary(err), want, `${c.name} (${where})`);
}

// ------------------------------------------------------------- one instance, LowLevel

function withEngine(role, c, fn) {
  const e = ll.engineFromKey(role, reveal(c), keyOf(role, c), suiteOf(c));
  try { return fn(e); } finally { ll.engineFree(e); }
}

const LOW = {
  request_decode: (c) => ll.requestDecode(hex(c.msg), suiteIdOf(c)),
  response_decode: (c) => ll.responseDecode(hex(c.msg), suiteIdOf(c)),
  setup_parse: (c) => ll.setupParse(hex(c.msg), suiteIdOf(c)),
  point_check: (c) => ll.pointCheck(hex(c.point), suiteIdOf(c)),
  engine_from_key: (c) => ll.engineFree(ll.engineFromKey(ROLE.CLIENT, true, hex(c.key), suiteOf(c))),
  setup_bound: (c) => ll.setupBound({ structure: c.structure, fpr: c.fpr, numClientInputs: c.num_client_inputs }, c.n, suiteIdOf(c)),
  suite_from_name: (c) => ll.suiteId(c.suite_name),
  server_process_request: (c) => withEngine(ROLE.SERVER, c, (e) => ll.processRequest(e, hex(c.msg))),
  client_get_intersection: (c) => withEngine(ROLE.CLIENT, c, (e) => ll.intersection(e, hex(c.setup), hex(c.msg))),
  client_get_intersection_size: (c) => withEngine(ROLE.CLIENT, c, (e) => ll.intersectionSize(e, hex(c.setup), hex(c.msg))),
  client_get_association: (c) => withEngine(ROLE.CLIENT, c, (e) => ll.association(e, hex(c.setup), hex(c.msg))),
  engine_remask: (c) => withEngine(ROLE.CLIENT, c, (e) => ll.remask(e, hex(c.points))),
  engine_unmask: (c) => withEngine(ROLE.CLIENT, c, (e) => ll.unmask(e, hex(c.points))),
};

test('the table: cases, each with a known operation and error, unique names', () => {
  assert.ok(CASES.length > 0);
  assert.equal(new Set(CASES.map((c) => c.name)).size, CASES.length);
  for (const c of CASES) {
    assert.ok(Object.hasOwn(LOW, c.op), `${c.name}: no runner for op ${c.op}`);
    assert.ok(CODES.has(c.error), `${c.name}: unknown error ${c.error}`);
  }
});

let lowRan = 0;
for (const c of CASES) {
  test(`LowLevel: ${c.name}`, async () => {
    assert.ok(Object.hasOwn(LOW, c.op), `no runner for op ${c.op}`);
    await check(c, 'LowLevel', () => LOW[c.op](c));
    lowRan++;
  });
}

test('LowLevel ran every case of the table', () => assert.equal(lowRan, CASES.length));

// An error found in JS has no place, even right after a C call left a detail behind.
test('a JS-side error does not borrow the detail of the last failed call', () => {
  assert.throws(() => ll.pointCheck(new Uint8Array(32)), (e) => e.field === 'point');
  const e = ll.invalid('a note', 'f');
  assert.deepEqual([e.field, e.index, e.offset], [null, null, null]);
  assert.equal(e.message, `${ll.strerror(e.code)}: a note`);
});

// ---------------------------------------------- one instance, the psi.js-like surface

const SURFACE = {
  point_check: (c) => psi.checkPoint(hex(c.point), suiteOf(c)),
  engine_from_key: (c) => psi.client.createFromKey(hex(c.key), true, { suite: suiteOf(c) }).delete(),
  suite_from_name: (c) => psi.client.createWithNewKey(true, { suite: c.suite_name }).delete(),
  server_process_request: (c) => party('server', c, (s) => s.processRequest(hex(c.msg))),
  client_get_intersection: (c) => party('client', c, (p) => p.getIntersection(hex(c.setup), hex(c.msg))),
  client_get_intersection_size: (c) => party('client', c, (p) => p.getIntersectionSize(hex(c.setup), hex(c.msg))),
  client_get_association: (c) => party('client', c, (p) => p.getAssociationTable(hex(c.setup), hex(c.msg))),
};
function party(role, c, fn) {
  const p = psi[role].createFromKey(keyOf(role, c), reveal(c), { suite: suiteOf(c) });
  try { return fn(p); } finally { p.delete(); }
}

for (const c of CASES.filter((x) => Object.hasOwn(SURFACE, x.op))) {
  test(`psi surface: ${c.name}`, () => check(c, 'index.mjs', () => SURFACE[c.op](c)));
}

// ------------------------------------------------------------ the worker pool, 2 workers

const pools = new Map(); // `${role}:${reveal}:${suite}` -> pool, shared by the cases (errors leave it usable)
after(async () => { for (const p of pools.values()) await p.close(); });
async function pool(role, rev, c = {}) {
  const k = `${role}:${rev}:${c.suite}`;
  if (!pools.has(k)) {
    pools.set(k, await createPool({ role, reveal: rev, workers: 2, module, key: keyOf(role, c), suite: suiteOf(c) }));
  }
  return pools.get(k);
}

const POOL = {
  server_process_request: async (c) => (await pool('server', reveal(c), c)).processRequest(hex(c.msg)),
  client_get_intersection: async (c) => (await pool('client', reveal(c), c)).getIntersection(hex(c.setup), hex(c.msg)),
  client_get_intersection_size: async (c) => (await pool('client', reveal(c), c)).getIntersectionSize(hex(c.setup), hex(c.msg)),
  client_get_association: async (c) => (await pool('client', reveal(c), c)).getAssociationTable(hex(c.setup), hex(c.msg)),
  // The key (or the suite name) goes to the lead, which fails to start; the page gets the PsiError.
  engine_from_key: async (c) => (await createPool({ role: 'client', reveal: true, workers: 2, module, key: hex(c.key), suite: suiteOf(c) })).close(),
  suite_from_name: async (c) => (await createPool({ role: 'client', reveal: true, workers: 2, module, suite: c.suite_name })).close(),
};

for (const c of CASES.filter((x) => Object.hasOwn(POOL, x.op))) {
  test(`pool, 2 workers: ${c.name}`, () => check(c, 'pool', () => POOL[c.op](c)));
}

// A bad point in a slice a helper runs (not the first slice): the helper's index counts in the
// whole request, and the place is renamed from "points" to the message's field, as one instance
// names it.  600 elements at 2 workers: 10 slices of 60, slices 0 and 1 go to the helper first.
test('pool, 2 workers: a bad point found by a helper carries the whole message\'s index', async () => {
  const G = hex('036b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296');
  const elementAt = (tag, i, bad) => { const e = new Uint8Array(35); e.set([tag, 0x21]); e.set(G, 2); if (i === bad) e[2] = 0x05; return e; };
  const message = (head, tag, n, bad) => {
    const parts = [head];
    for (let i = 0; i < n; i++) parts.push(elementAt(tag, i, bad));
    return Uint8Array.from(Buffer.concat(parts));
  };
  const server = await pool('server', true), client = await pool('client', true);
  for (const bad of [100, 0, 599]) {
    const request = message(Uint8Array.of(0x08, 0x01), 0x12, 600, bad); // reveal on, field 2
    const c = { name: `request, bad point ${bad}`, error: 'PSI_E_POINT_PREFIX', field: 'Request.encrypted_elements', index: bad, offset: null };
    const want = expected(c, 'psi_server_process_request');
    await check(c, 'LowLevel', () => withEngine(ROLE.SERVER, { reveal: 1 }, (e) => ll.processRequest(e, request)), want);
    await check(c, 'pool', () => server.processRequest(request), want);
    const response = message(new Uint8Array(0), 0x0a, 600, bad); // field 1
    const r = { ...c, name: `response, bad point ${bad}`, field: 'Response.encrypted_elements' };
    const setup = hex('0a00'); // ServerSetup { raw: {} }
    const wantR = expected(r, 'psi_client_get_intersection_size');
    await check(r, 'LowLevel', () => withEngine(ROLE.CLIENT, { reveal: 1 }, (e) => ll.intersectionSize(e, setup, response)), wantR);
    await check(r, 'pool', () => client.getIntersectionSize(setup, response), wantR);
  }
});
