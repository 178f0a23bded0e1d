// The npm package as a user gets it: builds the module (npm run build), packs it (npm pack,
// whose prepack refuses a package without the module), installs the tarball into fresh
// projects in a temporary directory outside the repository, and there runs
//   examples/node/     (Node ESM: a round with one instance and a 2-worker pool),
//   require.cjs        (the package through require()),
//   examples/browser/  (npm install vite, a production `vite build` that must print no
//                       warning, then the page in headless Chromium from 127.0.0.1 without
//                       COOP/COEP: one instance and a 2-worker pool).
// Each check prints "ok ..." or "FAIL ..."; the last line is "N passed, M failed", and the
// exit status is 0 only if all passed.  Every step has a time limit.
//   bash wasm/test/package/run.sh      (SHARDPSI_PACKAGE_KEEP=1 keeps the temporary directory)
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('./', import.meta.url));
const WASM = path.resolve(HERE, '../..');
const REPO = path.resolve(WASM, '..');
const EXPECTED = 'alice, bob, dave'; // the examples' known intersection
const tmp = mkdtempSync('/tmp/shardpsi-package-');

let passed = 0, failed = 0;
function report(ok, name, detail) {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok' : 'FAIL'} ${name}${detail ? ` (${detail})` : ''}`);
  return ok;
}
function finish() {
  if (process.env.SHARDPSI_PACKAGE_KEEP === '1') console.log(`# kept ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}
const tail = (s, n = 15) => s.trim().split('\n').slice(-n).map((l) => `#   ${l}`).join('\n');
// Runs a command with a time limit; returns { ok, out } (stdout and stderr together).
function run(cmd, args, { cwd, timeoutS = 120, env } = {}) {
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: timeoutS * 1000, killSignal: 'SIGKILL',
    env: { ...process.env, npm_config_update_notifier: 'false', ...env }, maxBuffer: 64 << 20 });
  const out = `${r.stdout || ''}${r.stderr || ''}`;
  const ok = r.status === 0;
  const why = r.error ? r.error.message : r.signal ? `killed by ${r.signal} after ${timeoutS} s` : `exit ${r.status}`;
  if (!ok) console.log(`# ${cmd} ${args.join(' ')}: ${why}\n${tail(out)}`);
  return { ok, out, stdout: r.stdout || '', ms: Date.now() - t0 };
}
// npm in a fresh project: no lock file, no install scripts, no audit.
const NPM_FLAGS = ['--no-package-lock', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'];
const gitStatus = () => run('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: REPO, timeoutS: 30 }).out;
const before = gitStatus();

// ------------------------------------------------------------------ build and pack
// The package ships the repository's licence: prepack refuses to pack without it.
if (!report(existsSync(path.join(REPO, 'LICENSE')), 'the repository has a LICENSE (the package ships it; npm pack refuses without)')) finish();
const build = run('npm', ['run', 'build', '--silent'], { cwd: WASM, timeoutS: 600 });
if (!report(build.ok, 'npm run build', `${build.ms} ms`)) finish();
const pack = run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: WASM, timeoutS: 120 });
let tarball = null, files = [];
try {
  const info = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('\n[') + 1))[0];
  tarball = path.join(tmp, info.filename);
  files = info.files.map((f) => f.path);
} catch { /* reported below */ }
if (!report(pack.ok && tarball && existsSync(tarball), 'npm pack', tarball ? path.basename(tarball) : 'no tarball')) finish();
const want = ['package.json', 'README.md', 'LICENSE', 'dist/shardpsi.mjs', 'dist/shardpsi.wasm', 'js/index.mjs',
  'js/index.d.ts', 'js/pool.mjs', 'js/pool-worker.mjs', 'js/node-env.mjs', 'js/lowlevel.d.ts', 'js/module.d.ts'];
const missing = want.filter((f) => !files.includes(f));
const extra = files.filter((f) => f.startsWith('test/') || f.startsWith('node_modules/') || f.endsWith('.tgz'));
report(missing.length === 0 && extra.length === 0, 'the tarball holds the module, the declarations, README and LICENSE, and no tests',
  missing.length ? `missing ${missing.join(', ')}` : extra.length ? `extra ${extra.join(', ')}` : `${files.length} files`);

// prepack refuses a package without its module, or without the licence: a copy of
// package.json and tools/ with no dist/ beside a repository root with no LICENSE.
{
  const fake = path.join(tmp, 'refuse');
  mkdirSync(path.join(fake, 'wasm'), { recursive: true });
  cpSync(path.join(WASM, 'package.json'), path.join(fake, 'wasm/package.json'));
  cpSync(path.join(WASM, 'tools'), path.join(fake, 'wasm/tools'), { recursive: true });
  const r1 = spawnSync('npm', ['pack', '--dry-run'], { cwd: path.join(fake, 'wasm'), encoding: 'utf8', timeout: 60000 });
  report(r1.status !== 0 && /dist\/shardpsi\.mjs is missing/.test(r1.stderr), 'npm pack refuses without dist/ (prepack)');
  mkdirSync(path.join(fake, 'wasm/dist'));
  for (const f of ['shardpsi.mjs', 'shardpsi.wasm']) cpSync(path.join(WASM, 'dist', f), path.join(fake, 'wasm/dist', f));
  const r2 = spawnSync('npm', ['pack', '--dry-run'], { cwd: path.join(fake, 'wasm'), encoding: 'utf8', timeout: 60000,
    env: { ...process.env, SHARDPSI_BUILD_DIR: path.join(fake, 'none') } });
  report(r2.status !== 0 && /LICENSE is missing/.test(r2.stderr), 'npm pack refuses without ../LICENSE (prepack)');
}

// A fresh project from an example: its files, and the tarball as its shardpsi dependency.
function project(name, example) {
  const dir = path.join(tmp, name);
  cpSync(path.join(REPO, 'examples', example), dir, { recursive: true, filter: (f) => !/node_modules|dist$/.test(f) });
  const pkgFile = path.join(dir, 'package.json');
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
  pkg.dependencies.shardpsi = `file:${tarball}`;
  writeFileSync(pkgFile, JSON.stringify(pkg, null, 2));
  writeFileSync(path.join(dir, '.npmrc'), 'package-lock=false\nignore-scripts=true\naudit=false\nfund=false\n');
  return dir;
}

// ------------------------------------------------------------------ Node
{
  const dir = project('node', 'node');
  const inst = run('npm', ['install', ...NPM_FLAGS], { cwd: dir, timeoutS: 120 });
  report(inst.ok, 'node project: npm install of the tarball', `${inst.ms} ms`);
  if (inst.ok) {
    const r = run(process.execPath, ['round.mjs'], { cwd: dir, timeoutS: 60 });
    report(r.ok && r.out.includes(`single instance: ${EXPECTED}\n`), 'Node ESM: examples/node round, one instance', r.out.split('\n')[0]);
    report(r.ok && r.out.includes(`pool of 2 workers: ${EXPECTED}\n`), 'Node ESM: examples/node round, pool of 2 workers', r.out.split('\n')[1]);
    cpSync(path.join(HERE, 'require.cjs'), path.join(dir, 'require.cjs'));
    const q = run(process.execPath, ['require.cjs'], { cwd: dir, timeoutS: 60 });
    let v = {};
    try { v = JSON.parse(q.out.trim().split('\n').pop()); } catch { /* reported below */ }
    report(q.ok && JSON.stringify(v.hits) === '[0,2]' && v.psiError === 'function' && v.pool === 2,
      "Node require('shardpsi'), require('shardpsi/pool'): a round and a pool", q.out.trim().split('\n').pop());
    report(!/ExperimentalWarning|Warning:/.test(q.out + r.out), 'Node: no warning printed');
  }
}

// ------------------------------------------------------------------ browser (Vite)
{
  const dir = project('browser', 'browser');
  const inst = run('npm', ['install', ...NPM_FLAGS], { cwd: dir, timeoutS: 180 });
  report(inst.ok, 'browser project: npm install of the tarball and vite', `${inst.ms} ms`);
  if (inst.ok) {
    const vite = run(process.execPath, ['node_modules/vite/bin/vite.js', 'build'], { cwd: dir, timeoutS: 120, env: { NO_COLOR: '1', CI: '1' } });
    // Every line of the build's output must be one of Vite's progress lines: anything
    // else (a warning, an externalized node: module, a chunk size note) fails.
    const normal = /^(vite v\S+ building .*|transforming\.\.\.|✓ \d+ modules transformed\.|rendering chunks\.\.\.|computing gzip size\.\.\.|dist\/\S+\s+[\d.,]+ kB.*|✓ built in .*|)$/;
    const odd = vite.out.split('\n').map((l) => l.trim()).filter((l) => !normal.test(l));
    const version = (/vite v(\S+)/.exec(vite.out) || [])[1];
    report(vite.ok && odd.length === 0, 'vite build (production) with no warning', odd.length ? odd.slice(0, 3).join(' | ') : `vite ${version}, ${vite.ms} ms`);
    const out = path.join(dir, 'dist');
    const assets = existsSync(path.join(out, 'assets')) ? readdirSync(path.join(out, 'assets')) : [];
    report(assets.some((f) => f.endsWith('.wasm')) && assets.some((f) => /pool-worker.*\.js$/.test(f)),
      'the build emitted the wasm and the pool worker', assets.join(' '));
    if (vite.ok) {
      const b = run(process.execPath, [path.join(HERE, 'browser.mjs'), out, '60000'], { cwd: dir, timeoutS: 120 });
      let v = {};
      try { v = JSON.parse(b.out.trim().split('\n').pop()); } catch { /* reported below */ }
      report(b.ok && v.single === EXPECTED, 'Chromium: the built page, one instance', v.error || v.single);
      report(b.ok && v.pool === EXPECTED, 'Chromium: the built page, pool of 2 workers', v.error || v.pool);
      report(b.ok && v.crossOriginIsolated === false, 'Chromium: served without COOP/COEP (not cross-origin isolated)');
    }
  }
}

report(gitStatus() === before, 'the repository has no new or changed files');
finish();

