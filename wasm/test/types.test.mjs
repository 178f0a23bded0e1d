// The TypeScript declarations (js/index.d.ts, js/pool.d.ts) type-check a program that uses
// the package through its exports map (test/types/usage.ts), with tsc --strict; the program's
// @ts-expect-error lines check that misuse is refused.  Needs the typescript devDependency
// (scripts/setup-js.sh runs npm install in wasm/).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const wasmDir = fileURLToPath(new URL('../', import.meta.url));
const tsc = wasmDir + 'node_modules/typescript/bin/tsc';

test('TypeScript declarations type-check the documented usage, strictly',
  { skip: !existsSync(tsc) && 'typescript not installed in wasm/ (scripts/setup-js.sh)' }, () => {
    const r = spawnSync(process.execPath, [tsc, '-p', 'test/types/tsconfig.json'], { cwd: wasmDir, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
