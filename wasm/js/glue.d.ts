// TypeScript declarations of the module glue dist/shardpsi.mjs (package export
// "shardpsi/dist/shardpsi.mjs"): emscripten's -sMODULARIZE=1 -sEXPORT_ES6=1 factory.
// js/module.mjs's loadModule() calls it with the right options; call it yourself only with
// a wasm source (wasmBinary, instantiateWasm or locateFile) and getRandomValue.

/** The instantiated module: every PSI_API C function as `_name` (wasm/exports.txt), the
 *  allocator and the heap views.  Pointers and sizes are wasm32 numbers. */
export interface ShardPsiModule {
  readonly HEAPU8: Uint8Array;
  readonly HEAPU32: Uint32Array;
  UTF8ToString(ptr: number, maxBytes?: number): string;
  _malloc(size: number): number;
  _free(ptr: number): void;
  _psi_version(): number;
  /** The other exported C functions (_psi_engine_create, _psi_server_process_request, ...). */
  readonly [name: `_${string}`]: ((...args: number[]) => unknown) | undefined;
}

/** Options of the factory (a subset of emscripten's Module object). */
export interface ShardPsiFactoryOptions {
  /** The wasm bytes. */
  wasmBinary?: Uint8Array | ArrayBuffer;
  /** Instantiates the wasm (e.g. from a compiled WebAssembly.Module); see emscripten. */
  instantiateWasm?: (imports: WebAssembly.Imports,
    receive: (instance: WebAssembly.Instance, module?: WebAssembly.Module) => void) => object;
  /** Where a file (shardpsi.wasm) is fetched from in a browser. */
  locateFile?: (path: string, prefix: string) => string;
  /** libsodium's random source: a uniformly random 32-bit unsigned integer. */
  getRandomValue?: () => number;
  print?: (text: string) => void;
  printErr?: (text: string) => void;
}

declare function createShardPsi(options?: ShardPsiFactoryOptions): Promise<ShardPsiModule>;
export default createShardPsi;
