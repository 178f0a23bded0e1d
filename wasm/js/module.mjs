// Loading the WebAssembly module (dist/shardpsi.{mjs,wasm}: an ES module glue whose default
// export is the -sMODULARIZE=1 factory `createShardPsi`, built for web and worker only, and
// the wasm it instantiates), in Node, in a browser page and in a worker.
//
// No node: import is reachable from here in a browser build: the Node half (node-env.mjs) is
// imported only under Node, through a specifier bundlers do not follow.  The browser
// defaults are written literally, `import('../dist/shardpsi.mjs')` and
// `new URL('../dist/shardpsi.wasm', import.meta.url)`, so that a bundler (Vite, webpack,
// esbuild, ...) emits both files with the page and its workers.
//
// Ways to load:
//   loadModule()                        Node: the files of the default dir (node-env.mjs);
//                                       browser: the package's dist/ (bundled, or served as is)
//   loadModule({ dir })                 Node: shardpsi.{mjs,wasm} from dir
//   loadModule({ jsUrl, wasmUrl })      the glue and the wasm from these URLs (Node: file: URLs)
//   loadModule({ wasmBinary })          compile these bytes
//   loadModule({ module })              instantiate a compiled WebAssembly.Module
//                                       (one compiled by the main thread, posted to a worker)
//   loadModule({ factory, ... })        use this createShardPsi factory instead of the glue

export const JS_FILE = 'shardpsi.mjs';
export const WASM_FILE = 'shardpsi.wasm';

export const isNode =
  typeof process === 'object' && process !== null && typeof process.versions === 'object' &&
  typeof process.versions.node === 'string';

// The Node half.  The specifier is a variable and the comments tell bundlers to leave the
// import alone: it is never evaluated in a browser.
const NODE_ENV = './node-env.mjs';
export const nodeEnv = () => import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_ENV);

// The package's own files, for a browser (and a bundler).
const packagedWasmUrl = () => new URL('../dist/shardpsi.wasm', import.meta.url);
const packagedFactory = () => import('../dist/shardpsi.mjs');

// Where the files of a Node load are: { jsUrl, wasmUrl } as URL objects.
export async function locateNodeFiles(options = {}) {
  return (await nodeEnv()).locateNodeFiles(options);
}

// The createShardPsi factory.
async function getFactory(options, files) {
  if (typeof options.factory === 'function') return options.factory;
  if (isNode) return (await nodeEnv()).importFactory(files.jsUrl);
  const ns = options.jsUrl !== undefined
    ? await import(/* webpackIgnore: true */ /* @vite-ignore */ String(options.jsUrl))
    : await packagedFactory();
  if (typeof ns.default !== 'function') throw new Error('shardpsi: the module glue exports no factory');
  return ns.default;
}

// The options handed to the factory: the wasm source and the random source for libsodium
// (the glue is built for web and worker, and Node has no `self`: notes pitfall 5).
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
    o.wasmBinary = await (await nodeEnv()).readWasm(files.wasmUrl);
  } else {
    const url = String(options.wasmUrl ?? packagedWasmUrl());
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
// Node: from the default dir, dir or wasmUrl; elsewhere: wasmUrl, else the package's.
export async function compileModule(options = {}) {
  if (options.wasmBinary !== undefined) return WebAssembly.compile(options.wasmBinary);
  if (isNode) {
    const env = await nodeEnv();
    return WebAssembly.compile(await env.readWasm(env.locateNodeFiles(options).wasmUrl));
  }
  const url = String(options.wasmUrl ?? packagedWasmUrl());
  if (typeof WebAssembly.compileStreaming === 'function') {
    try {
      return await WebAssembly.compileStreaming(fetch(url));
    } catch (e) {
      // A server that does not send application/wasm: compile the bytes instead.
      if (!(e instanceof TypeError)) throw e;
    }
  }
  const res = await fetch(url);
  if (!res.ok) throw new Error(`shardpsi: fetching ${url} failed: HTTP ${res.status}`);
  return WebAssembly.compile(await res.arrayBuffer());
}
