// The worker script of the pool (js/pool-worker.mjs, package export "shardpsi/pool-worker"):
// it exports nothing; run it as a module Worker (browser) or a worker thread (Node).  The pool
// starts it itself; pass its URL as createPool({ workerUrl }) only when the package's own
// copy cannot be used (e.g. `import workerUrl from 'shardpsi/pool-worker?worker&url'` in Vite).
export {};

/** A worker's error as the cloneable object posted to the page (internal; used by the pool). */
export declare function errorToWire(e: unknown): {
  kind: string; message: string; fatal: boolean; [part: string]: unknown;
};
