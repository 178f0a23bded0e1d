// The cases of psi-wire-vectors/1 and shardpsi-extra-vectors/1 files, read and
// replayed through the JS API (js/index.mjs) exactly as `shardpsi vectors check`
// does in C (cli/cli_vector_case.c, cli_vector_run.c, cli_vector_extra.c):
// same checks in the same order, same messages.  The replay functions are async:
// the parties may be single instances (js/index.mjs) or worker pools (js/pool.mjs,
// through an object with the same server/client.createFromKey returning Promises).
// A case's `suite` (the file's top-level "suite", PROTOCOL.md §16; undefined = openmined-p256)
// is passed to createFromKey as { suite } and to checkPoint.

export class Malformed extends Error {}
const MAX_EXACT = 2 ** 53;
const LIST_SHOWN = 12;
const MSG_CAP = 1024; // the C message buffer: later notes are dropped when it is full
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const hex2 = (b) => b.toString(16).padStart(2, '0');

// ------------------------------------------------------------ field readers

function field(obj, name) {
  if (!Object.prototype.hasOwnProperty.call(obj, name)) throw new Malformed(`field "${name}" is missing`);
  return obj[name];
}
const wrong = (name, want) => new Malformed(`field "${name}" is not ${want}`);

function str(obj, name) {
  const v = field(obj, name);
  if (typeof v !== 'string') throw wrong(name, 'a string');
  if (v.includes('\0')) throw wrong(name, 'a string without U+0000');
  return v;
}
function bool(obj, name) {
  const v = field(obj, name);
  if (typeof v !== 'boolean') throw wrong(name, 'true or false');
  return v;
}
function hex(obj, name) {
  const v = field(obj, name);
  if (typeof v !== 'string') throw wrong(name, 'a hex string');
  if (v.length % 2 !== 0) throw new Malformed(`field "${name}": odd number of hex digits (${v.length})`);
  const bad = v.search(/[^0-9a-fA-F]/);
  if (bad >= 0) throw new Malformed(`field "${name}": bad hex digit at position ${bad}`);
  return Uint8Array.from(Buffer.from(v, 'hex'));
}
function integer(obj, name, lo, hi) {
  const v = field(obj, name);
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) throw wrong(name, 'an integer in range');
  return v;
}
function array(obj, name, want) {
  const v = field(obj, name);
  if (!Array.isArray(v)) throw wrong(name, want);
  return v;
}
function inputs(obj, name) {
  const v = array(obj, name, 'an array of strings');
  v.forEach((s, i) => {
    if (typeof s !== 'string') throw new Malformed(`field "${name}": item ${i} is not a string`);
  });
  return v;
}
const isIndex = (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_EXACT;
function indices(obj, name) {
  const v = array(obj, name, 'an array of integers');
  v.forEach((x, i) => {
    if (!isIndex(x)) throw new Malformed(`field "${name}": item ${i} is not an index`);
  });
  return v;
}
function pairs(obj) {
  const v = array(obj, 'association', 'an array of pairs');
  v.forEach((p, i) => {
    if (!Array.isArray(p) || p.length !== 2 || !isIndex(p[0]) || !isIndex(p[1])) {
      throw new Malformed(`field "association": item ${i} is not a pair of indices`);
    }
  });
  return v;
}
const STRUCTURES = { raw: 0, gcs: 1, bloom_filter: 2 };
function structure(obj) {
  const v = field(obj, 'data_structure');
  if (typeof v !== 'string') throw wrong('data_structure', 'a string');
  if (Object.prototype.hasOwnProperty.call(STRUCTURES, v)) return STRUCTURES[v];
  const shown = Buffer.from(v.split('\0')[0]).subarray(0, 40).toString();
  throw new Malformed(`field "data_structure": unknown value "${shown}"${v.includes('\0') ? ' (holds U+0000)' : ''} ` +
    '(expected raw, gcs or bloom_filter)');
}
function number(obj, name) {
  const v = field(obj, name);
  if (typeof v !== 'number') throw wrong(name, 'a number');
  return v;
}

// ------------------------------------------------------------ case readers

// Each reader returns the case, or throws Malformed with .caseName set when known.
function start(obj) {
  if (!isObject(obj)) throw new Malformed('case is not an object');
  return str(obj, 'name');
}
function named(name, fn) {
  try { return fn(); } catch (e) { if (e instanceof Malformed) e.caseName = name; throw e; }
}
function common(c, obj) {
  c.serverKey = hex(obj, 'server_key');
  c.clientKey = hex(obj, 'client_key');
  c.serverInputs = inputs(obj, 'server_inputs');
  c.clientInputs = inputs(obj, 'client_inputs');
  c.setup = hex(obj, 'server_setup');
  c.request = hex(obj, 'request');
  c.response = hex(obj, 'response');
}

export function readWireCase(obj) {
  const name = start(obj);
  return named(name, () => {
    const c = { name, association: false, reveal: bool(obj, 'reveal_intersection') };
    c.fpr = number(obj, 'fpr');
    c.numClientInputs = integer(obj, 'num_client_inputs', -MAX_EXACT, MAX_EXACT);
    c.intersectionSize = integer(obj, 'intersection_size', 0, MAX_EXACT);
    c.structure = structure(obj);
    common(c, obj);
    if (c.reveal) c.intersection = indices(obj, 'intersection');
    return c;
  });
}

export function readAssocCase(obj) {
  const name = start(obj);
  return named(name, () => {
    const c = { name, association: true, reveal: true, structure: 0, fpr: 0, numClientInputs: 0 };
    common(c, obj);
    c.perm = indices(obj, 'permutation');
    c.pairs = pairs(obj);
    return c;
  });
}

const OPS = ['key', 'point', 'process_request', 'intersection', 'setup_params'];

export function readRejectCase(obj, psi) {
  const name = start(obj);
  return named(name, () => {
    const r = { name, op: str(obj, 'operation') };
    if (!OPS.includes(r.op)) throw new Malformed(`field "operation": unknown value "${r.op.slice(0, 40)}"`);
    if (r.op === 'key') r.key = hex(obj, 'key');
    else if (r.op === 'point') r.data = hex(obj, 'point');
    else if (r.op === 'process_request') {
      r.key = hex(obj, 'server_key'); r.reveal = bool(obj, 'reveal_intersection'); r.data = hex(obj, 'request');
    } else if (r.op === 'intersection') {
      r.key = hex(obj, 'client_key'); r.reveal = bool(obj, 'reveal_intersection');
      r.data = hex(obj, 'server_setup'); r.response = hex(obj, 'response');
    } else {
      r.key = hex(obj, 'server_key');
      r.structure = structure(obj);
      const f = field(obj, 'fpr');
      if (typeof f === 'number') r.fpr = f;
      else if (f === 'NaN') r.fpr = NaN;
      else throw new Malformed('field "fpr" is not a number or "NaN"');
      r.numClientInputs = integer(obj, 'num_client_inputs', -MAX_EXACT, MAX_EXACT);
      r.serverInputs = inputs(obj, 'server_inputs');
    }
    const error = str(obj, 'error');
    r.error = errorCode(psi, error);
    if (r.error === null) throw new Malformed(`field "error": "${error.slice(0, 60)}" is not the name of a PSI_E_* error`);
    return r;
  });
}

function errorCode(psi, name) {
  for (let c = -1, known; (known = psi.errorName(c)) !== null && c > -1000; c--) {
    if (known === name) return c;
  }
  return null;
}

// ------------------------------------------------------------ replaying

// The differences found, joined by "; " as the C report does.
class Report {
  constructor() { this.msg = ''; this.failed = false; }
  note(text) {
    this.failed = true;
    if (this.msg.length + 3 >= MSG_CAP) return;
    if (this.msg.length > 0) this.msg += '; ';
    this.msg += text.slice(0, MSG_CAP - 1 - this.msg.length);
  }
  error(psi, what, e) {
    if (e && typeof e.code === 'number') this.note(`${what}: error ${e.code} (${psi.errorMessage(e.code)})`);
    else this.note(`${what}: ${e && e.message}`);
  }
  bytes(what, got, want) {
    const n = Math.min(got.length, want.length);
    let i = 0;
    while (i < n && got[i] === want[i]) i++;
    if (i === n && got.length === want.length) return;
    if (got.length === want.length) this.note(`${what} differs at byte ${i} of ${n} (expected ${hex2(want[i])}, got ${hex2(got[i])})`);
    else this.note(`${what} differs at byte ${i} (expected ${want.length} bytes, got ${got.length})`);
  }
  list(what, got, want) {
    let i = 0;
    while (i < got.length && i < want.length && got[i] === want[i]) i++;
    if (i === got.length && got.length === want.length) return;
    const from = i > 2 ? i - 2 : 0;
    this.note(`${what} differs at position ${i} (expected ${want.length} items ${showList(want, from)}, ` +
      `got ${got.length} items ${showList(got, from)})`);
  }
}

function showList(v, from) {
  const end = Math.min(v.length, from + LIST_SHOWN);
  return `[${from > 0 ? '..., ' : ''}${v.slice(from, end).join(', ')}${end < v.length ? ', ...' : ''}]`;
}

// A party from a case's key: { party } or { rc, msg } (-1: the key is invalid).
async function party(psi, role, reveal, key, what, suite) {
  try {
    return { party: await psi[role].createFromKey(key, reveal, suite === undefined ? undefined : { suite }) };
  } catch (e) {
    const bad = e.codeName === 'PSI_E_KEY_OUT_OF_RANGE' || e.codeName === 'PSI_E_INVALID_ARG';
    return { rc: bad ? -1 : 1, msg: `${what}: ${typeof e.code === 'number' ? psi.errorMessage(e.code) : e.message}` };
  }
}

async function attempt(fn) {
  try { return { value: await fn() }; } catch (e) { return { e }; }
}

async function runParties(psi, c, r, server, client) {
  // server setup (and the permutation of an association case)
  const s = await attempt(async () => (c.association
    ? await server.createSetupMessageWithPermutation(c.fpr, c.numClientInputs, c.serverInputs, psi.dataStructure.Raw)
    : { setup: await server.createSetupMessage(c.fpr, c.numClientInputs, c.serverInputs, c.structure) }));
  if (s.e) r.error(psi, /^psi_setup_bound/.test(s.e.func) ? 'server_setup (size bound)' : 'server_setup', s.e);
  else {
    r.bytes('server_setup', s.value.setup, c.setup);
    if (c.association) r.list('permutation', Array.from(s.value.permutation), c.perm);
  }
  const q = await attempt(() => client.createRequest(c.clientInputs));
  if (q.e) r.error(psi, 'request', q.e); else r.bytes('request', q.value, c.request);
  const p = await attempt(() => server.processRequest(c.request)); // from the stored request
  if (p.e) r.error(psi, 'response', p.e); else r.bytes('response', p.value, c.response);
  if (c.association) {
    const a = await attempt(() => client.getAssociationTable(c.setup, c.response, c.perm));
    if (a.e) return r.error(psi, 'association', a.e);
    const [gc, gs] = a.value, n = gc.length;
    let i = 0;
    while (i < n && i < c.pairs.length && gc[i] === c.pairs[i][0] && gs[i] === c.pairs[i][1]) i++;
    if (i < n || i < c.pairs.length) {
      const want = i < c.pairs.length ? `(${c.pairs[i][0]}, ${c.pairs[i][1]})` : 'none';
      const got = i < n ? `(${gc[i]}, ${gs[i]})` : 'none';
      r.note(`association differs at pair ${i} (expected ${c.pairs.length} pairs, ${want}; got ${n} pairs, ${got})`);
    }
    return undefined;
  }
  if (c.reveal) {
    const x = await attempt(() => client.getIntersection(c.setup, c.response));
    if (x.e) r.error(psi, 'intersection', x.e); else r.list('intersection', x.value, c.intersection);
  }
  const z = await attempt(() => client.getIntersectionSize(c.setup, c.response));
  if (z.e) r.error(psi, 'intersection_size', z.e);
  else if (z.value !== c.intersectionSize) r.note(`intersection_size: expected ${c.intersectionSize}, got ${z.value}`);
  return undefined;
}

// Replays a wire or association case: { rc: 0 | 1 | -1, msg }.
export async function runCase(psi, c) {
  const sv = await party(psi, 'server', c.reveal, c.serverKey, 'server_key', c.suite);
  if (!sv.party) return sv;
  const cl = await party(psi, 'client', c.reveal, c.clientKey, 'client_key', c.suite);
  try {
    if (!cl.party) return cl;
    const r = new Report();
    await runParties(psi, c, r, sv.party, cl.party);
    return { rc: r.failed ? 1 : 0, msg: r.msg };
  } finally {
    await sv.party.delete();
    if (cl.party) await cl.party.delete();
  }
}

// Runs fn; 0 if it threw exactly the expected error, else 1 with a message naming `call`.
async function expect(psi, r, call, fn) {
  const got = await attempt(fn);
  const code = got.e ? got.e.code : 0;
  if (got.e && typeof code !== 'number') return { rc: 1, msg: `${call}: ${got.e.message}` };
  if (code === r.error) return { rc: 0, msg: '' };
  const name = (k) => (k === 0 ? 'PSI_OK' : psi.errorName(k) ?? 'an unknown error code');
  return { rc: 1, msg: `${call}: expected ${name(r.error)}, got ${name(code)}` };
}

// Replays a rejection case: { rc, msg } as runCase.
export async function runReject(psi, r) {
  if (r.op === 'key') {
    return expect(psi, r, 'psi_engine_create_from_key',
      async () => (await psi.client.createFromKey(r.key, true, r.suite === undefined ? undefined : { suite: r.suite })).delete());
  }
  if (r.op === 'point') return expect(psi, r, 'psi_point_check', () => psi.checkPoint(r.data, r.suite));
  const isClient = r.op === 'intersection';
  const p = await party(psi, isClient ? 'client' : 'server', r.op === 'setup_params' ? true : r.reveal, r.key,
    isClient ? 'client_key' : 'server_key', r.suite);
  if (!p.party) return p;
  try {
    if (r.op === 'process_request') {
      return await expect(psi, r, 'psi_server_process_request', () => p.party.processRequest(r.data));
    }
    if (isClient) {
      const size = await expect(psi, r, 'psi_client_get_intersection_size',
        () => p.party.getIntersectionSize(r.data, r.response));
      if (size.rc !== 0 || !r.reveal) return size;
      return await expect(psi, r, 'psi_client_get_intersection', () => p.party.getIntersection(r.data, r.response));
    }
    // setup_params: the size bound, then the setup, must refuse the parameters; the JS API
    // runs both in one call, and the error says which of them failed.
    let call = 'psi_server_create_setup';
    const res = await expect(psi, r, call, async () => {
      try {
        await p.party.createSetupMessage(r.fpr, r.numClientInputs, r.serverInputs, r.structure);
      } catch (e) {
        if (/^psi_setup_bound/.test(e.func)) call = 'psi_setup_bound';
        throw e;
      }
    });
    return res.rc === 0 ? res : { rc: 1, msg: res.msg.replace(/^psi_server_create_setup/, call) };
  } finally {
    await p.party.delete();
  }
}

// ------------------------------------------------- payload files (PROTOCOL.md §22)

// A table case of a "shardpsi-payload-vectors/1" file; its cases name their own suite.
export function readPayloadCase(obj) {
  const name = start(obj);
  return named(name, () => {
    const c = { name, suite: str(obj, 'suite'), serverKey: hex(obj, 'server_key'),
      clientKey: hex(obj, 'client_key'), salt: hex(obj, 'salt'), table: hex(obj, 'table'),
      padLen: integer(obj, 'pad_len', 0, 1 << 20), serverInputs: inputs(obj, 'server_inputs'),
      payloads: inputs(obj, 'payloads'), clientInputs: inputs(obj, 'client_inputs') };
    c.expected = array(obj, 'expected', 'an array of strings and nulls');
    c.expected.forEach((p, i) => {
      if (p !== null && typeof p !== 'string') throw new Malformed(`field "expected": item ${i} is neither a string nor null`);
    });
    if (c.payloads.length !== c.serverInputs.length || c.expected.length !== c.clientInputs.length) {
      throw new Malformed(`${c.payloads.length} payloads for ${c.serverInputs.length} server inputs, ` +
        `${c.expected.length} expected for ${c.clientInputs.length} client inputs`);
    }
    return c;
  });
}

// A damaged table: { name, suite, of (the case it damages), table, error }.
export function readTamperedCase(obj) {
  const name = start(obj);
  return named(name, () => ({ name, suite: str(obj, 'suite'), of: str(obj, 'of'),
    table: hex(obj, 'table'), error: str(obj, 'error') }));
}

// A whole round of the case's parties (raw setup): the table rebuilt (compared byte for
// byte unless `damaged` is given, which replaces it), then getIntersectionWithPayloads.
async function payloadRound(psi, c, damaged) {
  const s = await party(psi, 'server', true, c.serverKey, 'server_key', c.suite);
  if (!s.party) return s;
  const k = await party(psi, 'client', true, c.clientKey, 'client_key', c.suite);
  if (!k.party) { await s.party.delete(); return k; }
  const rep = new Report();
  try {
    let table = damaged;
    if (table === undefined) {
      table = await s.party.createPayloadTable(c.serverInputs, c.payloads, { padLen: c.padLen, salt: c.salt });
      rep.bytes('table', table, c.table);
    }
    const setup = await s.party.createSetupMessage(0, 0, c.serverInputs, psi.dataStructure.Raw);
    const response = await s.party.processRequest(await k.party.createRequest(c.clientInputs));
    const r = await k.party.getIntersectionWithPayloads(setup, response, table);
    const dec = new TextDecoder();
    r.indices.forEach((i, n) => {
      const got = r.payloads[n] === null ? null : dec.decode(r.payloads[n]);
      if (got !== c.expected[i]) rep.note(`the payload of client input ${i} differs from the stored one`);
    });
    // A raw setup pairs a value's copies one to one (PROTOCOL.md §9.5): every value counts once.
    const got = new Set(r.indices.map((i) => c.clientInputs[i]));
    const want = new Set(c.clientInputs.filter((v, i) => c.expected[i] !== null));
    if (got.size !== want.size || [...want].some((v) => !got.has(v))) rep.note('the matched values differ from the stored ones');
    return { rc: rep.failed ? 1 : 0, msg: rep.msg };
  } catch (e) {
    return { rc: 1, msg: '', error: e };
  } finally {
    await s.party.delete();
    await k.party.delete();
  }
}

export async function runPayloadCase(psi, c) {
  const r = await payloadRound(psi, c);
  if (r.error) {
    const e = r.error;
    return { rc: 1, msg: typeof e.code === 'number' ? `${e.func}: error ${e.code} (${psi.errorMessage(e.code)})` : String(e.message) };
  }
  return r;
}

// Runs the damaged table of t in a round of its base case: it must fail with t.error.
export async function runTamperedCase(psi, t, base) {
  if (base === undefined) return { rc: -1, msg: `no case "${t.of}" of its suite` };
  const r = await payloadRound(psi, base, t.table);
  if (r.rc < 0) return r;
  const got = r.error ? (r.error.codeName ?? r.error.name) : 'PSI_OK';
  return got === t.error ? { rc: 0, msg: '' } : { rc: 1, msg: `gave ${got}, expected ${t.error}` };
}
