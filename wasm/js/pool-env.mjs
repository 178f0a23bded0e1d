// The environment adapter of the worker pool: one small surface over browser
// module Workers (self / new Worker(url, { type: 'module' })) and Node
// worker_threads (node-env.mjs, imported only under Node: no node: import is
// reachable from a browser build).

import { isNode, nodeEnv } from './module.mjs';
import { detectCores, detectMemory } from './policy.mjs';

export { isNode };

// Worker side: the channel to the page, { post(msg, transfer), onMessage(fn) }.
export async function parentChannel() {
  if (isNode) {
    const ch = (await nodeEnv()).parentChannel();
    if (ch) return ch;
  }
  const g = globalThis;
  if (typeof g.postMessage !== 'function' || typeof g.addEventListener !== 'function') {
    throw new Error('shardpsi pool-worker: not running in a worker');
  }
  return {
    post: (msg, transfer = []) => g.postMessage(msg, transfer),
    onMessage: (fn) => g.addEventListener('message', (e) => fn(e.data)),
  };
}

// A MessagePort (browser or Node) as { post, onMessage, close }.
export function wrapPort(port) {
  return {
    post: (msg, transfer = []) => port.postMessage(msg, transfer),
    onMessage(fn) {
      if (typeof port.on === 'function') port.on('message', fn); // Node: the data itself
      else port.onmessage = (e) => fn(e.data);
    },
    close: () => port.close(),
  };
}

// Page side: starts a module worker running url, by default the package's pool-worker.mjs
// (written literally below, so that a bundler builds it as a worker with its imports).
// Returns { post, onMessage, onError, onExit (Node: the exit event; browsers have none: only
// raw.terminate() is reported), terminate, raw }.
// `name` names the worker in the browser's developer tools (and to the worker: self.name).
export async function spawnWorker(url, name = undefined) {
  if (isNode) return (await nodeEnv()).spawnWorker(url);
  const w = url === undefined || url === null
    ? new Worker(new URL('./pool-worker.mjs', import.meta.url), { type: 'module', name })
    : new Worker(url, { type: 'module', name });
  // Browsers give no exit event.  A terminate() called on the raw Worker (by the page, or
  // the pool's test hook onWorkers) is reported to onExit as an exit; the pool's own
  // terminate below uses the original method and reports nothing.
  const exitFns = [];
  const terminate = w.terminate.bind(w);
  w.terminate = () => { terminate(); for (const fn of exitFns.splice(0)) fn('terminated by the page'); };
  return {
    post: (msg, transfer = []) => w.postMessage(msg, transfer),
    onMessage: (fn) => w.addEventListener('message', (e) => fn(e.data)),
    onError: (fn) => {
      w.addEventListener('error', (e) => {
        if (e.preventDefault) e.preventDefault();
        fn(e.error || new Error(e.message || 'worker error'));
      });
      w.addEventListener('messageerror', () => fn(new Error('a message from the worker could not be deserialized')));
    },
    onExit: (fn) => { exitFns.push(fn); },
    terminate: () => { exitFns.length = 0; terminate(); return Promise.resolve(); },
    raw: w,
  };
}

// What the shard policy (policy.mjs) reads of the environment: { cores, memoryBytes (null
// when not reported), navigator (the browser's, for its platform reports; undefined in Node) }.
export async function environmentFacts() {
  // Node: its own counts (its navigator, from Node 21, reports the host's platform, and the
  // platform bound is about browsers' renderers).
  if (isNode) {
    const env = await nodeEnv();
    return { cores: env.cpuCount(), memoryBytes: env.freeMemory(), navigator: undefined };
  }
  const nav = typeof navigator === 'object' && navigator ? navigator : undefined;
  return { cores: detectCores(nav), memoryBytes: detectMemory(nav), navigator: nav };
}
