// Every committed vector file through the JS API (js/index.mjs), byte for byte:
// psi-wire-vectors/1 (OpenMined psi.js 2.0.6 and its sample, vectors/reference/; the
// p256-sswu and ristretto255 suites' files, whose top-level "suite" names their suite) and
// shardpsi-extra-vectors/1 (association tables and rejections).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createPSI } from '../js/index.mjs';
import { readRejectCase, runReject } from '../bin/vector-cases.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const WIRE_FILES = ['vectors/openmined-psi-2.0.6.json', 'vectors/reference/sample-vectors.json'];
const SUITE_FILES = { 'p256-sswu': 'vectors/shardpsi-p256-sswu.json', ristretto255: 'vectors/shardpsi-ristretto255.json' };
const EXTRA_FILE = 'vectors/shardpsi-extra.json';
const load = (f) => JSON.parse(readFileSync(root + f, 'utf8'));
const bytes = (h) => Uint8Array.from(Buffer.from(h, 'hex'));
const hex = (u8) => Buffer.from(u8).toString('hex');
const STRUCT = { raw: 0, gcs: 1, bloom_filter: 2 };

const psi = await createPSI();

function withParties(c, reveal, fn, suite) {
  const server = psi.server.createFromKey(bytes(c.server_key), reveal, { suite });
  const client = psi.client.createFromKey(bytes(c.client_key), reveal, { suite });
  try { return fn(server, client); } finally { server.delete(); client.delete(); }
}

const wireFiles = [...WIRE_FILES.map((f) => [f, undefined]), ...Object.entries(SUITE_FILES).map(([s, f]) => [f, s])];
for (const [file, suite] of wireFiles) {
  test(`wire vectors: ${file}`, () => {
    const doc = load(file);
    assert.equal(doc.format, 'psi-wire-vectors/1');
    assert.equal(doc.suite, suite);
    assert.ok(doc.cases.length > 0);
    for (const c of doc.cases) {
      withParties(c, c.reveal_intersection, (server, client) => {
        assert.equal(server.suite, suite ?? 'openmined-p256');
        const ds = STRUCT[c.data_structure];
        const setup = server.createSetupMessage(c.fpr, c.num_client_inputs, c.server_inputs, ds);
        assert.equal(hex(setup), c.server_setup, `${c.name}: setup`);
        assert.equal(hex(client.createRequest(c.client_inputs)), c.request, `${c.name}: request`);
        assert.equal(hex(server.processRequest(bytes(c.request))), c.response, `${c.name}: response`);
        const s = bytes(c.server_setup), r = bytes(c.response);
        if (c.reveal_intersection) assert.deepEqual(client.getIntersection(s, r), c.intersection, `${c.name}: intersection`);
        else assert.throws(() => client.getIntersection(s, r), { codeName: 'PSI_E_REVEAL_DISABLED' });
        assert.equal(client.getIntersectionSize(s, r), c.intersection_size, `${c.name}: size`);
        // the key round-trips as 32 bytes (big-endian; ristretto255: the 32 little-endian bytes)
        assert.equal(hex(server.getPrivateKeyBytes()), c.server_key.padStart(64, '0'));
      }, suite);
    }
  });
}

test(`extra vectors: association cases of ${EXTRA_FILE}`, () => {
  const doc = load(EXTRA_FILE);
  assert.equal(doc.format, 'shardpsi-extra-vectors/1');
  assert.ok(doc.association_cases.length > 0);
  for (const c of doc.association_cases) {
    withParties(c, true, (server, client) => {
      const { setup, permutation } = server.createSetupMessageWithPermutation(0, 0, c.server_inputs);
      assert.equal(hex(setup), c.server_setup, `${c.name}: setup`);
      assert.ok(permutation instanceof Uint32Array);
      assert.deepEqual(Array.from(permutation), c.permutation, `${c.name}: permutation`);
      assert.equal(hex(client.createRequest(c.client_inputs)), c.request, `${c.name}: request`);
      assert.equal(hex(server.processRequest(bytes(c.request))), c.response, `${c.name}: response`);
      const [ci, si] = client.getAssociationTable(bytes(c.server_setup), bytes(c.response), c.permutation);
      assert.deepEqual(ci.map((x, i) => [x, si[i]]), c.association, `${c.name}: association`);
      // without the permutation: setup positions, ordered by position
      const [, pos] = client.getAssociationTable(bytes(c.server_setup), bytes(c.response));
      assert.deepEqual([...pos].sort((a, b) => a - b), pos);
      assert.deepEqual(pos.map((p) => c.permutation[p]).sort((a, b) => a - b), [...si].sort((a, b) => a - b));
    });
  }
});

test(`extra vectors: rejection cases of ${EXTRA_FILE}`, async () => {
  const doc = load(EXTRA_FILE);
  assert.ok(doc.rejection_cases.length > 0);
  for (const obj of doc.rejection_cases) {
    const r = readRejectCase(obj, psi);
    const { rc, msg } = await runReject(psi, r);
    assert.equal(rc, 0, `${r.name}: ${msg}`);
  }
});
