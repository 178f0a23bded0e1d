// bin/check-vectors.mjs prints what `shardpsi vectors check` prints and exits with
// its status: on the CLI fixtures (tests/cli/fixtures/), the extra vectors and usage
// errors; compared line for line with the C tool when build/cli/shardpsi exists.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tool = root + 'wasm/bin/check-vectors.mjs';
const cPsi = root + 'build/cli/shardpsi';
const fx = (f) => `${root}tests/cli/fixtures/${f}.json`;
const extra = root + 'vectors/shardpsi-extra.json';

function run(...args) {
  const r = spawnSync(process.execPath, [tool, ...args], { encoding: 'utf8' });
  return { status: r.status, out: r.stdout, err: r.stderr };
}
const lastLine = (s) => s.trimEnd().split('\n').pop();

// [fixture, exit status, last line, lines that must be printed]
const FIXTURES = [
  ['empty_cases', 0, '0 passed, 0 failed'],
  ['nul_inside', 0, '4 passed, 0 failed'],
  ['nul_dropped', 1, '0 passed, 2 failed', [/^FAIL .*: nul-dropped\/gcs\/reveal: request differs at byte /m]],
  ['altered_byte', 1, '1 passed, 1 failed',
    [/^FAIL .*\/altered_byte\.json: trailing-byte\/raw\/reveal: response differs at byte 40 /m]],
  ['altered_result', 1, '0 passed, 4 failed', [
    /^FAIL .*: altered\/intersection-order: intersection differs at position 1 /m,
    /^FAIL .*: altered\/intersection-size: intersection_size: expected 10, got 9$/m,
    /^FAIL .*: altered\/request-point: request differs at byte 2 .*response: error -10 /m]],
  ['malformed_cases', 2, '1 passed, 13 failed'],
  ['extra_altered', 1, '2 passed, 4 failed', [
    /^FAIL .*: altered\/association-pair: association differs at pair 1 /m,
    /^FAIL .*: altered\/permutation: permutation differs at position 3 /m,
    /^FAIL .*: altered\/expected-error: psi_point_check: expected PSI_E_POINT_LENGTH, got PSI_E_POINT_IDENTITY$/m,
    /^FAIL .*: altered\/intersection-error: psi_client_get_intersection_size: expected PSI_E_GCS_HASH_RANGE, got PSI_E_GCS_DIV$/m]],
  ['extra_malformed', 2, '2 passed, 8 failed'],
  ['bad_syntax', 2, '0 passed, 0 failed'],
  ['wrong_format', 2, '0 passed, 0 failed'],
  ['not_object', 2, '0 passed, 0 failed'],
  ['missing_cases', 2, '0 passed, 0 failed'],
];

test('CLI fixtures: exit status, FAIL lines and summary', () => {
  for (const [name, status, last, lines = []] of FIXTURES) {
    const r = run(fx(name));
    assert.equal(r.status, status, `${name}: ${r.out}${r.err}`);
    assert.equal(lastLine(r.out), last, name);
    for (const re of lines) assert.match(r.out, re, name);
  }
  const m = run(fx('malformed_cases'));
  assert.match(m.err, /malformed_cases\.json: cases\[[0-9]+\] \(key-zero\): malformed: client_key: /);
  assert.match(m.err, /\(request-not-hex\): malformed: field "request": bad hex digit/);
  assert.match(run(fx('wrong_format')).err, /unknown format "psi-wire-vectors\/2"/);
});

test('same stdout and exit status as the C tool', { skip: !existsSync(cPsi) && 'build/cli/shardpsi not built' }, () => {
  for (const [name] of FIXTURES) {
    const c = spawnSync(cPsi, ['vectors', 'check', '--verbose', fx(name)], { encoding: 'utf8' });
    const js = run('--verbose', fx(name));
    assert.equal(js.status, c.status, name);
    assert.equal(js.out, c.stdout, name);
  }
});

test('extra vectors pass; an altered expected error fails', () => {
  const r = run('--verbose', extra);
  assert.equal(r.status, 0, r.out + r.err);
  assert.match(r.out, /^ok .*: worked-example$/m);
  assert.match(r.out, /^ok .*: point\/identity-00$/m);
  assert.match(lastLine(r.out), /^[1-9][0-9]* passed, 0 failed$/);
  const dir = mkdtempSync(tmpdir() + '/shardpsi-cv-');
  try {
    const text = readFileSync(extra, 'utf8');
    writeFileSync(dir + '/x.json', text.replace('"error": "PSI_E_POINT_IDENTITY"', '"error": "PSI_E_POINT_PREFIX"'));
    const a = run(dir + '/x.json');
    assert.equal(a.status, 1);
    assert.match(a.out, /^FAIL .*x\.json: point\/identity-00: psi_point_check: expected PSI_E_POINT_PREFIX, got PSI_E_POINT_IDENTITY$/m);
    assert.match(lastLine(a.out), /^[0-9]+ passed, 1 failed$/);
    writeFileSync(dir + '/y.json', text.replace('"error": "PSI_E_POINT_IDENTITY"', '"error": "PSI_E_POINT_BOGUS"'));
    const b = run(dir + '/y.json');
    assert.equal(b.status, 2);
    assert.match(b.err, /rejection_cases\[[0-9]+\] \(point\/identity-00\): malformed: field "error": "PSI_E_POINT_BOGUS" is not/);
  } finally { rmSync(dir, { recursive: true }); }
});

test('usage errors and --workers', () => {
  assert.equal(run().status, 2);
  assert.equal(run('--bogus', extra).status, 2);
  assert.equal(run('--workers').status, 2);
  assert.equal(run('--workers', '0', extra).status, 2);
  assert.equal(run('--workers', 'x', extra).status, 2);
  assert.equal(run('--workers', '1', fx('empty_cases')).status, 0);
  const h = run('--help');
  assert.equal(h.status, 0);
  assert.match(h.out, /N passed, M failed/);
});

test('--workers N: the worker pool prints what the single instance prints', () => {
  for (const [name] of FIXTURES) {
    const one = run('--verbose', fx(name));
    for (const n of ['1', '3']) {
      const pool = run('--verbose', '--workers', n, fx(name));
      assert.equal(pool.status, one.status, `${name} --workers ${n}: ${pool.err}`);
      assert.equal(pool.out, one.out, `${name} --workers ${n}`);
    }
  }
  const one = run('--verbose', extra), pool = run('--verbose', '--workers', '2', extra);
  assert.equal(pool.status, 0, pool.out + pool.err);
  assert.equal(pool.out, one.out);
});

// Every committed vector file, single instance and a pool of 4 workers, prints what the C tool
// prints for it (when built) and passes every case.  (A pool of one worker: pool.test.mjs runs
// the committed wire files through it byte for byte, and the fixtures above print alike.)
const COMMITTED = ['vectors/openmined-psi-2.0.6.json', 'vectors/shardpsi-extra.json',
  'vectors/shardpsi-payloads.json',
  'vectors/reference/sample-vectors.json'].map((f) => root + f);

function checkEverywhere(files) {
  const one = run(...files);
  assert.equal(one.status, 0, one.out + one.err);
  assert.match(lastLine(one.out), /^[1-9][0-9]* passed, 0 failed$/);
  if (existsSync(cPsi)) {
    const c = spawnSync(cPsi, ['vectors', 'check', ...files], { encoding: 'utf8' });
    assert.equal(one.out, c.stdout, 'check-vectors and shardpsi vectors check print the same');
  }
  const pool = run('--workers', '4', ...files);
  assert.equal(pool.status, 0, `--workers 4: ${pool.out}${pool.err}`);
  assert.equal(pool.out, one.out, '--workers 4');
  return lastLine(one.out);
}

test('every committed vector file passes, single instance and 4 workers', () => {
  checkEverywhere(COMMITTED);
});

// The suites' files (top-level "suite", PROTOCOL.md §16): they pass, single instance and pool;
// the same cases read as openmined-p256 (no "suite") fail; an unknown suite is a file error.
const SUITE_FILES = ['vectors/shardpsi-p256-sswu.json', 'vectors/shardpsi-ristretto255.json'].map((f) => root + f);
test('the p256-sswu and ristretto255 vector files pass; without their "suite" they fail',
  () => {
    const one = run('--verbose', ...SUITE_FILES);
    assert.equal(one.status, 0, one.out + one.err);
    assert.match(lastLine(one.out), /^[1-9][0-9]* passed, 0 failed$/);
    if (existsSync(cPsi)) { // once the C tool reads "suite" too, both must print the same
      const c = spawnSync(cPsi, ['vectors', 'check', '--verbose', ...SUITE_FILES], { encoding: 'utf8' });
      if (c.status === 0) assert.equal(one.out, c.stdout, 'check-vectors and shardpsi vectors check print the same');
    }
    const pool = run('--verbose', '--workers', '2', ...SUITE_FILES);
    assert.equal(pool.status, 0, pool.out + pool.err);
    assert.equal(pool.out, one.out);
    const dir = mkdtempSync(tmpdir() + '/shardpsi-cv-');
    try {
      for (const f of SUITE_FILES) {
        const doc = JSON.parse(readFileSync(f, 'utf8'));
        const n = doc.cases.length;
        delete doc.suite;
        writeFileSync(dir + '/nosuite.json', JSON.stringify(doc));
        const a = run(dir + '/nosuite.json');
        assert.equal(a.status, 1, a.out + a.err);
        assert.equal(lastLine(a.out), `0 passed, ${n} failed`);
        doc.suite = 'p256-ristretto';
        writeFileSync(dir + '/badsuite.json', JSON.stringify(doc));
        const b = run(dir + '/badsuite.json');
        assert.equal(b.status, 2);
        assert.equal(lastLine(b.out), '0 passed, 0 failed');
        assert.match(b.err, /badsuite\.json: unknown suite "p256-ristretto" \(openmined-p256, p256-sswu or ristretto255\)$/m);
        doc.suite = 2;
        writeFileSync(dir + '/numsuite.json', JSON.stringify(doc));
        const d = run(dir + '/numsuite.json');
        assert.equal(d.status, 2);
        assert.match(d.err, /numsuite\.json: "suite" is not a string$/m);
      }
    } finally { rmSync(dir, { recursive: true }); }
  });

// A file psi.js writes now, from a seed no one has run before, must pass too.  Needs
// @openmined/psi.js in vectors/node_modules (scripts/setup-js.sh installs it).
const psijs = root + 'vectors/node_modules/@openmined/psi.js/package.json';
test('an unseen psi.js-generated vector file passes, single instance and 4 workers',
  { skip: !existsSync(psijs) && 'psi.js not installed in vectors/ (scripts/setup-js.sh)' }, (t) => {
    const dir = mkdtempSync(tmpdir() + '/shardpsi-rand-');
    try {
      const seed = `wasm-test-${Date.now()}-${process.pid}`;
      const file = dir + '/random.json';
      const g = spawnSync(process.execPath, ['generate-random.mjs', '--seed', seed, '--cases', '12', '--out', file],
        { cwd: root + 'vectors', encoding: 'utf8' });
      assert.equal(g.status, 0, g.stdout + g.stderr);
      t.diagnostic(`seed ${seed}: ${checkEverywhere([file])}`);
    } finally { rmSync(dir, { recursive: true }); }
  });
