// The Node half of the package: everything that needs Node's own modules (files, worker
// threads, the CPU count).  module.mjs and pool-env.mjs import it only under Node, through a
// dynamic import of a specifier bundlers are told to leave alone, so that no node: import is
// reachable from a browser build.
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import os from 'node:os';
import { Worker, parentPort } from 'node:worker_threads';
import { JS_FILE, WASM_FILE } from './module.mjs';

const PACKAGE_URL = new URL('../', import.meta.url);
const DIST_URL = new URL('dist/', PACKAGE_URL);
const BUILD_URL = new URL('../build-wasm/wasm/', PACKAGE_URL);

// The directory of the module files as a file: URL ending in '/': dir, else
// $SHARDPSI_WASM_DIR, else dist/ of the package when both files are there, else the
// build tree's ../build-wasm/wasm (a clone of the repository).
function dirUrl(dir) {
  const asDir = (u) => (u.href.endsWith('/') ? u : new URL(u.href + '/'));
  if (dir !== undefined) return asDir(dir instanceof URL ? dir : pathToFileURL(String(dir)));
  const env = process.env.SHARDPSI_WASM_DIR;
  if (env) return asDir(pathToFileURL(env));
  if (existsSync(new URL(JS_FILE, DIST_URL)) && existsSync(new URL(WASM_FILE, DIST_URL))) return DIST_URL;
  return BUILD_URL;
}

// Where the files of a load are: { jsUrl, wasmUrl } as URL objects (file: URLs).
export function locateNodeFiles(options = {}) {
  const base = options.jsUrl === undefined || options.wasmUrl === undefined ? dirUrl(options.dir) : null;
  const jsUrl = options.jsUrl !== undefined ? new URL(options.jsUrl) : new URL(JS_FILE, base);
  const wasmUrl = options.wasmUrl !== undefined ? new URL(options.wasmUrl) : new URL(WASM_FILE, base);
  return { jsUrl, wasmUrl };
}

// The createShardPsi factory of the ES module glue at jsUrl.
export async function importFactory(jsUrl) {
  const ns = await import(jsUrl.href);
  if (typeof ns.default !== 'function') throw new Error(`shardpsi: ${jsUrl.href} exports no module factory`);
  return ns.default;
}

export const readWasm = (wasmUrl) => readFile(wasmUrl);

// ------------------------------------------------------------------ worker pool

// Worker side: the channel to the page, or null outside a worker thread.
export function parentChannel() {
  if (!parentPort) return null;
  return {
    post: (msg, transfer = []) => parentPort.postMessage(msg, transfer),
    onMessage: (fn) => parentPort.on('message', fn),
  };
}

// Page side: a worker thread running url (default: the pool's worker script).
export function spawnWorker(url) {
  const w = new Worker(url ?? new URL('./pool-worker.mjs', import.meta.url));
  return {
    post: (msg, transfer = []) => w.postMessage(msg, transfer),
    onMessage: (fn) => w.on('message', fn),
    onError: (fn) => w.on('error', fn),
    onExit: (fn) => w.on('exit', fn),
    terminate: () => w.terminate().then(() => undefined),
    raw: w,
  };
}

export const cpuCount = () =>
  (typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
// The memory a new allocation can get: Linux's MemAvailable (free memory and the page cache
// it can drop), else os.freemem(), which on Linux counts the cache as used.
export function freeMemory() {
  try {
    const m = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch { /* not Linux */ }
  return os.freemem();
}
