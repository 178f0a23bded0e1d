// TypeScript declarations of the module loader (js/module.mjs, package export
// "shardpsi/module"): one emscripten Module instance of dist/shardpsi.wasm.

import type { LoadOptions } from './index.js';
import type { ShardPsiModule } from './glue.js';

export type { LoadOptions, ShardPsiModule };

/** File names of the module: the ES module glue and the wasm. */
export declare const JS_FILE: 'shardpsi.mjs';
export declare const WASM_FILE: 'shardpsi.wasm';
/** True when running under Node (the Node half, node-env.mjs, is then used). */
export declare const isNode: boolean;

/** Loads and instantiates one module instance. */
export declare function loadModule(options?: LoadOptions): Promise<ShardPsiModule>;
/** Compiles shardpsi.wasm once, to hand to workers as { module }.  Node: from the default
 *  directory, dir or wasmUrl; elsewhere from wasmUrl, else the package's dist/shardpsi.wasm. */
export declare function compileModule(options?: LoadOptions): Promise<WebAssembly.Module>;
/** Node only: where the files of a load are (file: URLs). */
export declare function locateNodeFiles(options?: LoadOptions): Promise<{ jsUrl: URL; wasmUrl: URL }>;
/** Node only: the Node half of the package (files, worker threads), imported on demand. */
export declare function nodeEnv(): Promise<unknown>;
