// shardpsi for JavaScript: a psi.js-like surface (@openmined/psi.js 2.0.6) over
// one instance of the WebAssembly module, exchanging wire bytes (Uint8Array)
// instead of protobuf objects.  wasm/README.md lists every difference from psi.js.
//
//   import PSI from 'shardpsi'
//   const psi = await PSI()
//   const server = psi.server.createWithNewKey(true)
//   const setup = server.createSetupMessage(0.001, 10, serverInputs)   // Uint8Array
//   ...
//
// Ciphersuites (PROTOCOL.md §16): every party has a suite, by name (`suites`):
// 'openmined-p256' (the default; psi.js's bytes), 'p256-sswu' or 'ristretto255'.  It is the
// library's (`PSI({ suite })`) unless the party's options name one:
//   psi.server.createWithNewKey(true, { suite: 'ristretto255' })
//   psi.client.createFromKey(key, true, { suite: 'p256-sswu' })
// Both parties of a run must use the same suite: a message of another suite is refused
// with PSI_E_SUITE_MISMATCH.

import { loadModule } from './module.mjs';
import { LowLevel, PsiError, ROLE, STRUCTURE, SUITES, DEFAULT_SUITE, asBytes } from './lowlevel.mjs';

export { PsiError };
// The suite names, by psi_suite id; the first is the default.
export const suites = SUITES;
export { DEFAULT_SUITE };
export { loadModule, compileModule } from './module.mjs';

// The message of every call on a deleted object (psi.js's constant).
export const ERROR_INSTANCE_DELETED = 'Instance was deleted';
const PSI_E_STRUCTURE = -23;

// psi.js's DataStructure names; the values are psi.js's enum values (its `.value`) and
// the C library's psi_structure.
export const dataStructure = Object.freeze({
  Raw: STRUCTURE.RAW, GCS: STRUCTURE.GCS, BloomFilter: STRUCTURE.BLOOM_FILTER,
});

// A data structure given as a number or as a psi.js enum object ({ value }).
function structureOf(ds) {
  if (typeof ds === 'number') return ds;
  if (ds !== null && typeof ds === 'object' && typeof ds.value === 'number') return ds.value;
  throw new TypeError('dataStructure must be one of psi.dataStructure (Raw, GCS, BloomFilter)');
}

// Message bytes: a Uint8Array, an ArrayBuffer, or a psi.js protobuf message.
function messageBytes(msg, what) {
  if (msg !== null && typeof msg === 'object' && typeof msg.serializeBinary === 'function') {
    return msg.serializeBinary();
  }
  return asBytes(msg, what);
}

function inputsOf(inputs) {
  if (!Array.isArray(inputs)) throw new TypeError('inputs must be an array of strings');
  return inputs;
}

// Party objects own one engine; a FinalizationRegistry frees engines whose object was
// dropped without delete() (a safety net only: call delete()).
function makeParties(ll, defaultSuite) {
  const registry = typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry((e) => ll.engineFree(e)) : null;

  // The engine cell of a party: get() throws once deleted; del() is idempotent;
  // track(obj) frees the engine if obj is collected before delete().
  function own(e) {
    let engine = e;
    const cell = {
      get() {
        if (!engine) throw new Error(ERROR_INSTANCE_DELETED);
        return engine;
      },
      del() {
        if (!engine) return;
        if (registry) registry.unregister(cell);
        ll.engineFree(engine);
        engine = 0;
      },
      track(obj) {
        if (registry) registry.register(obj, engine, cell);
        return obj;
      },
    };
    return cell;
  }

  // The suite of a party's options: { suite } or a suite name; the library's by default.
  function suiteOf(options) {
    if (options === undefined || options === null) return defaultSuite;
    if (typeof options === 'string' || typeof options === 'number') return ll.suiteId(options);
    if (typeof options !== 'object') throw new TypeError('options must be an object ({ suite })');
    return options.suite === undefined || options.suite === null ? defaultSuite : ll.suiteId(options.suite);
  }

  function server(e) {
    const cell = own(e);
    const suite = ll.suiteName(ll.engineSuite(e));
    function setup(fpr, numClientInputs, inputs, ds, wantPerm) {
      const params = { structure: structureOf(ds), fpr, numClientInputs };
      return ll.createSetup(cell.get(), params, inputsOf(inputs), wantPerm);
    }
    return cell.track(Object.freeze({
      suite,
      delete: () => cell.del(),
      createSetupMessage(fpr, numClientInputs, inputs, ds = dataStructure.GCS) {
        return setup(fpr, numClientInputs, inputs, ds, false).setup;
      },
      createSetupMessageWithPermutation(fpr, numClientInputs, inputs, ds = dataStructure.Raw) {
        cell.get();
        if (structureOf(ds) !== STRUCTURE.RAW) {
          throw ll.jsError(PSI_E_STRUCTURE, 'psi_server_create_setup',
            'a permutation exists only for psi.dataStructure.Raw');
        }
        const { setup: bytes, perm } = setup(fpr, numClientInputs, inputs, ds, true);
        return { setup: bytes, permutation: perm };
      },
      processRequest: (request) => ll.processRequest(cell.get(), messageBytes(request, 'request')),
      // Extension (PROTOCOL.md §22): the payload table of the inputs, payloads[i] the bytes
      // (or string) of inputs[i], for getIntersectionWithPayloads.
      createPayloadTable(inputs, payloads, options = undefined) {
        const e = cell.get(), { padLen, salt } = ll.payloadOptions(options);
        if (!Array.isArray(payloads)) throw new TypeError('payloads must be an array of strings or Uint8Arrays');
        return ll.payloadTableBuild(ll.engineSuite(e), ll.mask(e, inputsOf(inputs)), payloads,
          padLen, salt);
      },
      getPrivateKeyBytes: () => ll.engineExportKey(cell.get()),
    }));
  }

  function client(e) {
    const cell = own(e);
    const suite = ll.suiteName(ll.engineSuite(e));
    const args = (setup, response) => [cell.get(), messageBytes(setup, 'setup'), messageBytes(response, 'response')];
    return cell.track(Object.freeze({
      suite,
      delete: () => cell.del(),
      createRequest: (inputs) => ll.createRequest(cell.get(), inputsOf(inputs)),
      getIntersection: (setup, response) => Array.from(ll.intersection(...args(setup, response))),
      getIntersectionSize: (setup, response) => ll.intersectionSize(...args(setup, response)),
      getAssociationTable(setup, response, permutation) {
        let pairs = ll.association(...args(setup, response));
        if (permutation !== undefined && permutation !== null) pairs = ll.associationMap(pairs, permutation);
        const n = pairs.length / 2, c = new Array(n), s = new Array(n);
        for (let i = 0; i < n; i++) { c[i] = pairs[2 * i]; s[i] = pairs[2 * i + 1]; }
        return [c, s];
      },
      // Extension (PROTOCOL.md §22): getIntersection's indices and, for each, the payload the
      // server's table holds for it (null: none, a GCS or Bloom false positive).
      getIntersectionWithPayloads(setup, response, table) {
        const [e, st, resp] = args(setup, response), id = ll.engineSuite(e);
        const t = asBytes(table, 'table');
        ll.payloadTableCheck(id, t); // a bad table fails before the match
        const indices = Array.from(ll.intersection(e, st, resp));
        const opened = ll.payloadOpen(id, t, ll.unmask(e, ll.pickElements(resp, id, indices)));
        return { indices, payloads: opened };
      },
      getPrivateKeyBytes: () => ll.engineExportKey(cell.get()),
    }));
  }

  const wrapper = (role, make) => Object.freeze({
    createWithNewKey: (revealIntersection = false, options = undefined) =>
      make(ll.engineCreate(role, !!revealIntersection, suiteOf(options))),
    createFromKey: (key, revealIntersection = false, options = undefined) =>
      make(ll.engineFromKey(role, !!revealIntersection, asBytes(key, 'key'), suiteOf(options))),
  });
  return { server: wrapper(ROLE.SERVER, server), client: wrapper(ROLE.CLIENT, client) };
}

// The library object of one module instance; options.suite: the parties' default suite
// (a name of `suites`; default openmined-p256).
export function createLibrary(M, options = {}) {
  const ll = new LowLevel(M);
  const defaultSuite = ll.suiteId(options && options.suite);
  const { server, client } = makeParties(ll, defaultSuite);
  const version = ll.version();
  return Object.freeze({
    package: Object.freeze({ name: 'shardpsi', version }),
    dataStructure,
    server,
    client,
    // Extensions (not in psi.js):
    // the suite names (by id) and the default suite of this library's parties
    suites: SUITES,
    suite: ll.suiteName(defaultSuite),
    // checkPoint(point, suite?) throws the PsiError of psi_point_check (psi_point_check_suite
    // for a suite other than openmined-p256) for a bad partner element; suite: the library's.
    checkPoint: (point, suite) => ll.pointCheck(point, suite === undefined ? defaultSuite : ll.suiteId(suite)),
    errorName: (code) => ll.errorName(code),
    errorMessage: (code) => ll.strerror(code),
  });
}

// Loads a module instance (options: see module.mjs loadModule) and returns the library.
export async function createPSI(options = {}) {
  return createLibrary(await loadModule(options), options);
}

export { createPSI as PSI };
export default createPSI;
