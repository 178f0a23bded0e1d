// Loading the WebAssembly module (build-wasm/wasm/shardpsi.{js,wasm}, a
// -sMODULARIZE=1 CommonJS factory `createShardPsi`), in Node ESM or in a
// browser worker.  No Node-only import at the top level: node:fs, node:module
// and node:url are imported dynamically, only when running under Node.
//
// Ways to load (wasm-build-notes.md section 4):
//   loadModule()                        Node: read the files from the default dir
//   loadModule({ dir })                 Node: read shardpsi.{js,wasm} from dir
//   loadModule({ jsUrl, wasmUrl })      Node: absolute file: URLs; browser: importScripts(jsUrl)
//                                       in a classic worker, else (module worker, page) fetch +
//                                       new Function (test/browser/ runs this in Chromium)
//   loadModule({ wasmBinary })          compile these bytes
//   loadModule({ module })              instantiate a compiled WebAssembly.Module
//                                       (one compiled by the main thread, posted to a worker)
//   loadModule({ factory, ... })        use this createShardPsi factory instead of loading the glue
//
// Default dir in Node: $SHARDPSI_WASM_DIR if set, else dist/ next to package.json (filled by
// `npm run build`), else ../build-wasm/wasm relative to the package (the output of wasm/build.sh).

const PACKAGE_URL = new URL('../', import.meta.url);
const DIST_URL = new URL('dist/', PACKAGE_URL);
const BUILD_URL = new URL('../build-wasm/wasm/', PACKAGE_URL);
export const JS_FILE = 'shardpsi.js';
export const WASM_FILE = 'shardpsi.wasm';

export const isNode =
  typeof process === 'object' && process !== null && typeof process.versions === 'object' &&
  typeof process.versions.node === 'string';

// Where the module files are in Node: the directory as a file: URL ending in '/'.
async function nodeDirUrl(dir) {
  const { pathToFileURL } = await import('node:url');
  const { existsSync } = await import('node:fs');
  const asDir = (u) => (u.href.endsWith('/') ? u : new URL(u.href + '/'));
  if (dir !== undefined) return asDir(dir instanceof URL ? dir : pathToFileURL(String(dir)));
  const env = process.env.SHARDPSI_WASM_DIR;
  if (env) return asDir(pathToFileURL(env));
  if (existsSync(new URL(JS_FILE, DIST_URL)) && existsSync(new URL(WASM_FILE, DIST_URL))) return DIST_URL;
  return BUILD_URL;
}

// Where the files of a Node load are: { jsUrl, wasmUrl } as URL objects.
export async function locateNodeFiles(options = {}) {
  const base = options.jsUrl === undefined || options.wasmUrl === undefined
    ? await nodeDirUrl(options.dir) : null;
  const jsUrl = options.jsUrl !== undefined ? new URL(options.jsUrl) : new URL(JS_FILE, base);
  const wasmUrl = options.wasmUrl !== undefined ? new URL(options.wasmUrl) : new URL(WASM_FILE, base);
  return { jsUrl, wasmUrl };
}

// The createShardPsi factory.
async function getFactory(options, files) {
  if (typeof options.factory === 'function') return options.factory;
  if (isNode) {
    const { createRequire } = await import('node:module');
    const { fileURLToPath } = await import('node:url');
    return createRequire(files.jsUrl)(fileURLToPath(files.jsUrl));
  }
  if (typeof globalThis.createShardPsi === 'function') return globalThis.createShardPsi;
  if (options.jsUrl !== undefined && typeof importScripts === 'function') { // a worker
    // A module worker has importScripts too, but it throws a TypeError there ("Module
    // scripts don't support importScripts()"): then fall through to fetch below.
    let imported = false;
    try { importScripts(String(options.jsUrl)); imported = true; } catch (e) { // eslint-disable-line no-undef
      if (!(e instanceof TypeError) || typeof fetch !== 'function') throw e;
    }
    if (imported && typeof globalThis.createShardPsi === 'function') return globalThis.createShardPsi;
  }
  if (options.jsUrl !== undefined && typeof fetch === 'function') {
    // A module worker or page: evaluate the classic script's text (needs a CSP
    // allowing it; otherwise pass { factory }).
    const res = await fetch(String(options.jsUrl));
    if (!res.ok) throw new Error(`shardpsi: fetching ${options.jsUrl} failed: HTTP ${res.status}`);
    const text = await res.text();
    return new Function(`${text}\nreturn createShardPsi;`)(); // eslint-disable-line no-new-func
  }
  throw new Error('shardpsi: cannot load the module glue here; pass { factory } ' +
    '(self.createShardPsi after importScripts) or { jsUrl }');
}

// The options handed to the factory: the wasm source and the random source for libsodium
// (in Node ESM the glue has no `self` and no `require` for it, notes pitfall 5).
async function factoryOptions(options, files) {
  const o = {};
  // An instantiation error inside instantiateWasm is reported through this rejection.
  let fail;
  const failed = new Promise((_, reject) => { fail = reject; });
  failed.catch(() => {}); // only observed through Promise.race
  const cryptoObj = globalThis.crypto;
  if (cryptoObj && typeof cryptoObj.getRandomValues === 'function') {
    const word = new Uint32Array(1);
    o.getRandomValue = () => cryptoObj.getRandomValues(word)[0];
  }
  if (options.print) o.print = options.print;
  if (options.printErr) o.printErr = options.printErr;
  if (options.module !== undefined) {
    if (!(options.module instanceof WebAssembly.Module)) throw new TypeError('module must be a WebAssembly.Module');
    const mod = options.module;
    o.instantiateWasm = (imports, receive) => {
      WebAssembly.instantiate(mod, imports).then((inst) => receive(inst, mod), (e) => fail(e));
      return {};
    };
  } else if (options.wasmBinary !== undefined) {
    o.wasmBinary = options.wasmBinary;
  } else if (isNode) {
    const { readFile } = await import('node:fs/promises');
    o.wasmBinary = await readFile(files.wasmUrl);
  } else if (options.wasmUrl !== undefined) {
    const url = String(options.wasmUrl);
    o.locateFile = (p) => (p === WASM_FILE ? url : p);
  }
  return { o, failed };
}

// Loads and instantiates one module instance.  Returns a Promise of the
// emscripten Module object (its _psi_* functions, _malloc, _free, HEAPU8, ...).
export async function loadModule(options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const files = isNode ? await locateNodeFiles(options) : {};
  const factory = await getFactory(options, files);
  const { o, failed } = await factoryOptions(options, files);
  const M = await Promise.race([factory(o), failed]);
  if (typeof M._psi_version !== 'function') throw new Error('shardpsi: the module exports no _psi_version');
  return M;
}

// Compiles the module's wasm once, for handing to workers (loadModule({ module })).
// Node: from the default dir, dir or wasmUrl; elsewhere: fetch(wasmUrl).
export async function compileModule(options = {}) {
  if (options.wasmBinary !== undefined) return WebAssembly.compile(options.wasmBinary);
  if (isNode) {
    const { readFile } = await import('node:fs/promises');
    return WebAssembly.compile(await readFile((await locateNodeFiles(options)).wasmUrl));
  }
  if (options.wasmUrl === undefined) throw new Error('shardpsi: compileModule needs { wasmUrl } here');
  return WebAssembly.compileStreaming(fetch(String(options.wasmUrl)));
}
