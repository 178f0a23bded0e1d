#!/usr/bin/env node
// `shardpsi vectors check` for the JavaScript package: replays psi-wire-vectors/1
// and shardpsi-extra-vectors/1 files (of any suite: a top-level "suite" names it,
// PROTOCOL.md §16; absent = openmined-p256) through the JS API (js/index.mjs) and
// prints the same lines as the C tool: "FAIL <file>: <case>: <what>" for each
// failing case ("ok ..." too with --verbose) and a last line "N passed, M failed".
//   node wasm/bin/check-vectors.mjs [--quiet | --verbose] [--workers N] FILE...
// Exit status: 0 every case passed; 1 a case failed; 2 usage error, unreadable or
// invalid file, or malformed case (which counts as failed).

import { readFileSync } from 'node:fs';
import { createPSI, compileModule } from '../js/index.mjs';
import { createPool } from '../js/pool.mjs';
import { Malformed, readWireCase, readAssocCase, readRejectCase, runCase, runReject, readPayloadCase,
  readTamperedCase, runPayloadCase, runTamperedCase } from './vector-cases.mjs';

const WIRE = 'psi-wire-vectors/1';
const EXTRA = 'shardpsi-extra-vectors/1';
const PAYLOAD = 'shardpsi-payload-vectors/1';
const PROG = 'check-vectors';

const USAGE = `Usage: node wasm/bin/check-vectors.mjs [--quiet | --verbose] [--workers N] FILE...

Checks vector files against the shardpsi WebAssembly module through its
JavaScript API, as \`shardpsi vectors check\` does against the C library.
A file's top-level "suite" (openmined-p256, p256-sswu or ristretto255)
names the ciphersuite of its cases; without it they are openmined-p256.

"${WIRE}": for every case it rebuilds the server setup, the request and
the response (from the stored request) from the case's keys and inputs, and
the intersection (when revealed) and its size from the stored setup and
response, and compares each with the stored value byte for byte.

"${EXTRA}": each association case is checked like a wire case with
a raw setup, plus the setup's permutation, and the association table computed
from the stored setup, response and permutation; each rejection case runs its
operation on bad input, which must fail with exactly the named PSI_E_* error.

"${PAYLOAD}" (PROTOCOL.md §22): each case's payload table is
rebuilt from its server key, values, payloads, padded length and salt and
compared byte for byte, and a whole round of its parties (raw setup) opens the
matched values' payloads, compared with the stored ones; each damaged table
must fail the round with exactly the named PSI_E_* error.  Its cases name
their own suite.

Prints "FAIL <file>: <case>: <what differed>" for each failing case and a
last line "N passed, M failed" counting the cases of all files.

Options:
  --verbose    also print "ok <file>: <case>" for each passing case
  --quiet      print nothing for passing cases (the default)
  --workers N  run every case through the worker pool (js/pool.mjs) with N
               workers (N >= 1; 1 = the pool's lead worker only); without
               the option every case runs on one wasm instance in this thread
  -h, --help   show this help

Exit status: 0 if every case passed; 1 if a case failed; 2 on a usage error
or a file that cannot be read, is not valid JSON, has another format or holds
a malformed case (which counts as failed).
`;

const error = (msg) => process.stderr.write(`${PROG}: ${msg}\n`);
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

class Usage extends Error {}

function parseArgs(argv) {
  const o = { verbose: false, workers: 0, files: [] };
  let i = 0;
  for (; i < argv.length && argv[i].startsWith('-') && argv[i] !== '-'; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') return { help: true };
    if (a === '--verbose' || a === '-v') o.verbose = true;
    else if (a === '--quiet' || a === '-q') o.verbose = false;
    else if (a === '--') { i++; break; } else if (a === '--workers' || a.startsWith('--workers=')) {
      let v = a.slice('--workers='.length);
      if (a === '--workers') {
        if (i + 1 >= argv.length) throw new Usage('option --workers needs a value');
        v = argv[++i];
      }
      if (!/^[0-9]+$/.test(v) || Number(v) < 1) throw new Usage(`--workers: '${v}' is not a positive integer`);
      o.workers = Number(v);
    } else throw new Usage(`unknown option '${a}'`);
  }
  o.files = argv.slice(i);
  if (o.files.length === 0) throw new Usage("no FILE given (see 'check-vectors.mjs --help')");
  return o;
}

// The parsed file, or null after a message.  cJSON refuses strings with lone
// surrogates and the C tool object keys holding U+0000; so does this.
function loadJson(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    error(`${path}: ${e.code === 'ENOENT' ? 'cannot open' : 'cannot read'}: ${e.message}`);
    return null;
  }
  let why = null;
  let root;
  try {
    root = JSON.parse(text, (key, value) => {
      if (key.includes('\0')) why = why ?? 'an object key holds U+0000';
      if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
        why = why ?? 'not valid JSON: a string holds a lone surrogate';
      }
      return value;
    });
  } catch (e) {
    error(`${path}: not valid JSON: ${where(text, e.message)}`);
    return null;
  }
  if (why) { error(`${path}: ${why}`); return null; }
  return root;
}

// V8's "... at position P" as "syntax error at line L, column C" (as the C tool says it).
function where(text, message) {
  const m = / at position (\d+)/.exec(message);
  if (!m) return message;
  const before = text.slice(0, Number(m[1])).split('\n');
  return `syntax error at line ${before.length}, column ${before[before.length - 1].length + 1} (${message})`;
}

function formatOf(path, root) {
  const want = `expected "${WIRE}", "${EXTRA}" or "${PAYLOAD}"`;
  if (root === null || typeof root !== 'object' || Array.isArray(root)) {
    error(`${path}: the top level is not a JSON object`);
    return null;
  }
  const f = root.format;
  if (typeof f !== 'string') {
    error(`${path}: "format" is ${f === undefined ? 'missing' : 'not a string'}, ${want}`);
    return null;
  }
  if (f === WIRE || f === EXTRA || f === PAYLOAD) return f;
  error(`${path}: unknown format "${f.slice(0, 60)}", ${want}`);
  return null;
}

// The file's suite (top-level "suite", PROTOCOL.md §16): undefined when absent (the
// OpenMined suite), a name of psi.suites, or null after a message.
function suiteOf(psi, path, root) {
  const s = root.suite;
  if (s === undefined) return undefined;
  if (typeof s === 'string' && psi.suites.includes(s)) return s;
  // as the C tool (cli/cli_vectors.c vcheck_suite) says it
  if (typeof s !== 'string') error(`${path}: "suite" is not a string`);
  else error(`${path}: unknown suite "${s.split('\0')[0].slice(0, 60)}" (${psi.suites.slice(0, -1).join(', ')} or ${psi.suites.at(-1)})`);
  return null;
}

function arrayOf(path, root, name) {
  const a = root[name];
  if (Array.isArray(a)) return a;
  error(`${path}: "${name}" is ${a === undefined ? 'missing' : 'not an array'}`);
  return null;
}

function main(argv) {
  let opts;
  try {
    opts = parseArgs(argv);
  } catch (e) {
    if (!(e instanceof Usage)) throw e;
    error(e.message);
    return Promise.resolve(2);
  }
  if (opts.help) { process.stdout.write(USAGE); return Promise.resolve(0); }
  return loadParties(opts).then((psi) => checkFiles(psi, opts), (e) => {
    error(`cannot load the WebAssembly module: ${e.message}`);
    return 2;
  });
}

// The library of one instance; with --workers, its parties are worker pools
// (createFromKey returns a Promise of a pool, delete() closes it).
async function loadParties(opts) {
  const psi = await createPSI();
  if (opts.workers === 0) return psi;
  const module = await compileModule();
  const maker = (role) => Object.freeze({
    createFromKey: (key, reveal = false, options = undefined) =>
      createPool({ role, reveal, key, suite: options && options.suite, workers: opts.workers, module }),
  });
  return { ...psi, server: maker('server'), client: maker('client') };
}

async function checkFiles(psi, opts) {
  const st = { passed: 0, failed: 0, fileErrors: 0 };
  const report = (path, array, index, name, { rc, msg }) => {
    if (rc < 0) {
      error(`${path}: ${array}[${index}]${name !== undefined ? ` (${name})` : ''}: malformed: ${msg}`);
      st.fileErrors++;
      st.failed++;
    } else if (rc > 0) {
      console.log(`FAIL ${path}: ${name}: ${msg}`);
      st.failed++;
    } else {
      if (opts.verbose) console.log(`ok ${path}: ${name}`);
      st.passed++;
    }
  };
  const runAll = async (path, cases, array, read, run, suite) => {
    for (let index = 0; index < cases.length; index++) {
      let c;
      try {
        c = read(cases[index], psi);
        if (c.suite === undefined) c.suite = suite; // payload cases name their own
      } catch (e) {
        if (!(e instanceof Malformed)) throw e;
        report(path, array, index, e.caseName, { rc: -1, msg: e.message });
        continue;
      }
      report(path, array, index, c.name, await run(psi, c));
    }
  };

  for (const path of opts.files) {
    const root = loadJson(path);
    let format = root === null ? null : formatOf(path, root);
    const suite = format === null ? undefined : suiteOf(psi, path, root);
    if (suite === null) format = null;
    if (format === WIRE) {
      const cases = arrayOf(path, root, 'cases');
      if (cases) await runAll(path, cases, 'cases', readWireCase, runCase, suite);
      else st.fileErrors++;
    } else if (format === EXTRA) {
      const assoc = arrayOf(path, root, 'association_cases');
      const reject = assoc && arrayOf(path, root, 'rejection_cases');
      if (reject) {
        await runAll(path, assoc, 'association_cases', readAssocCase, runCase, suite);
        await runAll(path, reject, 'rejection_cases', readRejectCase, runReject, suite);
      } else st.fileErrors++;
    } else if (format === PAYLOAD) {
      const cases = arrayOf(path, root, 'cases');
      const tampered = cases && arrayOf(path, root, 'tampered');
      if (tampered) {
        await runAll(path, cases, 'cases', readPayloadCase, runPayloadCase, undefined);
        const read = [];
        for (const obj of cases) { try { read.push(readPayloadCase(obj)); } catch { /* reported */ } }
        const baseOf = (t) => read.find((c) => c.suite === t.suite && c.name === t.of);
        await runAll(path, tampered, 'tampered', readTamperedCase, (p, t) => runTamperedCase(p, t, baseOf(t)), undefined);
      } else st.fileErrors++;
    } else {
      st.fileErrors++;
    }
  }
  console.log(`${st.passed} passed, ${st.failed} failed`);
  if (st.fileErrors > 0) return 2;
  return st.failed > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  console.error(e);
  process.exitCode = 2;
});
