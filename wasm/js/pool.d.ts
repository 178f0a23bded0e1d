// TypeScript declarations of the worker pool (js/pool.mjs, package export "shardpsi/pool").
// One party whose setup, request, response and match steps are split across N workers (Web
// Workers in a browser, worker_threads in Node), each with its own wasm instance built from one
// key, and merged in the first worker: the messages are byte-identical to one instance's.

import type { AssociationTable, DataStructureArg, Input, IntersectionWithPayloads, LoadOptions,
  MessageArg, PayloadTableOptions, SetupWithPermutation, SuiteName } from './index.js';

/** An error of the pool itself, naming the worker and the cause: a worker could not start,
 *  threw, exited, was terminated, ran out of memory, or went silent (a helper for timeoutMs/2,
 *  the lead for timeoutMs), or the pool is closed.  The pool is then failed: every later call rejects with a
 *  PoolError; close() it and create a new one.  Library errors (bad messages, bad keys) are
 *  PsiErrors, as with one instance (same code, message, field, index and offset: an index found
 *  by a worker counts in the whole message), and leave the pool usable. */
/** pool.memoryUsage(): each worker's wasm heap size in bytes, worker 0 (the lead) first.  A wasm
 *  heap only grows, so each is that worker's peak so far; a helper's is as of its last slice
 *  (null before its first). */
export interface PoolMemoryUsage {
  wasmHeapBytes: Array<number | null>;
  totalWasmHeapBytes: number;
}

export declare class PoolError extends Error {
  readonly name: 'PoolError';
}

/** The platform reports the policy reads (a browser's navigator, or a stand-in). */
export interface PlatformReports {
  userAgent?: string;
  platform?: string;
  userAgentData?: { platform?: string } | null;
  hardwareConcurrency?: number;
  deviceMemory?: number;
}

export interface WorkerPlanOptions {
  role: 'server' | 'client';
  /** The set the party will hold; default 0 (unknown). */
  values?: number;
  /** Default: navigator.hardwareConcurrency, else 1. */
  cores?: number;
  /** Default: navigator.deviceMemory in bytes; where nothing is reported (null), the policy
   *  plans for POLICY.assumedMemoryBytes (8 GiB, the most Chromium reports). */
  memoryBytes?: number | null;
  /** Default: globalThis.navigator. */
  navigator?: PlatformReports;
  /** Default POLICY.maxWorkers (4). */
  maxWorkers?: number;
  /** false leaves the Apple-platform bound out; default true. */
  platformCheck?: boolean;
}

export interface WorkerPlan {
  readonly workers: number;
  readonly cores: number;
  /** The memory planned for: the report, or POLICY.assumedMemoryBytes. */
  readonly memoryBytes: number;
  /** false: the environment reported no memory and the assumed figure was planned for. */
  readonly memoryReported: boolean;
  /** memoryShare of memoryBytes. */
  readonly budgetBytes: number;
  /** The renderer's growth for the chosen count. */
  readonly estimateBytes: number;
  /** The first worker's wasm heap. */
  readonly heapBytes: number;
  /** false: even one worker exceeds the budget or the first worker's wasm heap. */
  readonly fits: boolean;
  readonly reasons: readonly string[];
}

export interface MemoryFit {
  readonly fits: boolean;
  readonly estimateBytes: number;
  readonly heapBytes: number;
  readonly memoryBytes: number;
  readonly memoryReported: boolean;
  readonly budgetBytes: number;
  /** Which bound failed: 'heap' (the first worker's wasm heap, whatever the count) or 'renderer' (the budget). */
  readonly bound: 'heap' | 'renderer' | null;
  readonly reason: string | null;
}

/** The shard policy (js/policy.mjs): the count and why. */
export declare function workerPlan(options: WorkerPlanOptions): WorkerPlan;
/** workerPlan(options).workers. */
export declare function recommendedWorkers(options: WorkerPlanOptions): number;
/** Whether `workers` workers of a party holding `values` fit the memory. */
export declare function memoryFit(options: { role: 'server' | 'client'; values: number; workers: number;
  memoryBytes?: number | null }): MemoryFit;
/** Whether any platform report names an Apple system (the policy then runs one worker). */
export declare function isApplePlatform(nav?: PlatformReports): boolean;
export declare const POLICY: {
  readonly maxWorkers: number;
  readonly workerBytes: number;
  /** The renderer's growth a value of the set. */
  readonly valueBytes: { readonly server: number; readonly client: number };
  /** The first worker's wasm heap: at start, and a value of the set. */
  readonly heapBaseBytes: number;
  readonly heapValueBytes: { readonly server: number; readonly client: number };
  readonly memoryShare: number;
  /** Planned for where the environment reports no memory. */
  readonly assumedMemoryBytes: number;
  readonly heapLimitBytes: number;
};

export interface PoolOptions {
  role: 'server' | 'client';
  /** Reveal the intersection (psi.js's revealIntersection); default false. */
  reveal?: boolean;
  /** The ciphersuite (PROTOCOL.md §16); default openmined-p256.  An unknown name rejects
   *  createPool with the PsiError PSI_E_SUITE. */
  suite?: SuiteName;
  /** The key (big-endian, 1 <= k < n; ristretto255: 32 little-endian bytes), handed once to the first worker and not kept in the
   *  page; without it the first worker makes a random key.  The pool never gives it back. */
  key?: Uint8Array | ArrayBuffer;
  /** Number of workers; default the shard policy's (workerPlan): the cores, at most
   *  maxWorkers, one on Apple platforms, fewer where the reported memory is short. */
  workers?: number;
  /** Cap of the default worker count; default 4. */
  maxWorkers?: number;
  /** The set size the party will hold, for the policy's memory bound; default 0 (unknown). */
  values?: number;
  /** The memory to plan for, in bytes; default the environment's report
   *  (navigator.deviceMemory; Node: MemAvailable or os.freemem()), POLICY.assumedMemoryBytes
   *  where it reports nothing.  Each call
   *  whose estimate exceeds the pool's share of it is refused with a PoolError before any
   *  work. */
  memoryBytes?: number;
  /** Each step is cut into this many slices per worker (fewer for small steps), handed out as
   *  workers free up, so a worker the machine runs slower does fewer; 1 = a static split.
   *  A slice never holds more than 16,384 values, so progress comes every few seconds.
   *  Default 16.  The bytes never depend on it. */
  slicesPerWorker?: number;
  /** A run fails when no worker reports progress for this long; default 120000 ms. */
  timeoutMs?: number;
  /** The compiled module (compileModule()); compiled once here when absent. */
  module?: WebAssembly.Module;
  /** URL of pool-worker.mjs, when the package is served from elsewhere. */
  workerUrl?: string | URL;
  /** Where the workers load the module glue from ({ dir } in Node, { jsUrl } in a browser). */
  load?: LoadOptions;
}

interface PoolBase {
  readonly role: 'server' | 'client';
  readonly reveal: boolean;
  /** The pool's suite. */
  readonly suite: SuiteName;
  readonly workers: number;
  /** The shard policy's choice for this pool (workers given or not). */
  readonly plan: WorkerPlan;
  /** Each worker's wasm heap size, after the calls already queued (see PoolMemoryUsage). */
  readonly memoryUsage: () => Promise<PoolMemoryUsage>;
  /** Stops the pool: each worker frees its engine, which wipes its copy of the key (a worker
   *  that does not answer within a second is terminated as it is), then every worker is
   *  terminated; pending calls reject with a PoolError. */
  readonly close: () => Promise<void>;
  /** Same as close (psi.js's delete). */
  readonly delete: () => Promise<void>;
}

export interface ServerPool extends PoolBase {
  readonly role: 'server';
  readonly createSetupMessage: (fpr: number, numClientInputs: number | bigint,
    inputs: readonly Input[], dataStructure?: DataStructureArg) => Promise<Uint8Array>;
  readonly createSetupMessageWithPermutation: (fpr: number, numClientInputs: number | bigint,
    inputs: readonly Input[], dataStructure?: DataStructureArg) => Promise<SetupWithPermutation>;
  readonly processRequest: (clientRequest: MessageArg) => Promise<Uint8Array>;
  /** The payload table (PROTOCOL.md §22), as Server.createPayloadTable: the values masked by
   *  the workers, the same bytes as one instance for the same key and salt. */
  readonly createPayloadTable: (inputs: readonly Input[], payloads: readonly Input[],
    options?: PayloadTableOptions) => Promise<Uint8Array>;
}

export interface ClientPool extends PoolBase {
  readonly role: 'client';
  readonly createRequest: (clientInputs: readonly Input[]) => Promise<Uint8Array>;
  readonly getIntersection: (serverSetup: MessageArg, serverResponse: MessageArg) => Promise<number[]>;
  readonly getIntersectionSize: (serverSetup: MessageArg, serverResponse: MessageArg) => Promise<number>;
  readonly getAssociationTable: (serverSetup: MessageArg, serverResponse: MessageArg,
    permutation?: ArrayLike<number>) => Promise<AssociationTable>;
  /** As Client.getIntersectionWithPayloads, the match and the unmasking on the workers. */
  readonly getIntersectionWithPayloads: (serverSetup: MessageArg, serverResponse: MessageArg,
    payloadTable: Uint8Array) => Promise<IntersectionWithPayloads>;
}

export declare function createPool(options: PoolOptions & { role: 'server' }): Promise<ServerPool>;
export declare function createPool(options: PoolOptions & { role: 'client' }): Promise<ClientPool>;
export default createPool;
