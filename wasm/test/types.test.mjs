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

test('every entry of the exports map has declarations, and they exist', async () => {
  const { readFileSync } = await import('node:fs');
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  for (const [entry, target] of Object.entries(pkg.exports)) {
    if (entry === './package.json') continue;
    assert.equal(typeof target, 'object', `${entry}: conditions with "types" first`);
    assert.equal(Object.keys(target)[0], 'types', `${entry}: "types" must come first`);
    assert.ok(existsSync(new URL(`../${target.types}`, import.meta.url)), `${entry}: ${target.types} exists`);
    assert.ok(pkg.files.some((f) => target.default.slice(2).startsWith(f)), `${entry}: ${target.default} is in "files"`);
  }
});
