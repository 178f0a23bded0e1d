// TypeScript declarations of the low-level layer (js/lowlevel.mjs, package export
// "shardpsi/lowlevel"): one method per C call over a loaded module (loadModule()).  Engines
// are plain pointers (numbers) that the caller frees with engineFree, plans are Plan objects
// freed with planFree; element arrays are
// 33-byte slots (ELEMENT_BYTES) in every suite.  Every non-zero C code throws a PsiError.
// The psi.js-like surface ("shardpsi") and the pool ("shardpsi/pool") build on it.

import type { PsiError as PsiErrorClass, PsiErrorDetail, SuiteName } from './index.js';
import type { ShardPsiModule } from './glue.js';

export { PsiError } from './index.js';
export declare const PSI_E_INVALID_ARG: -1;
export declare const PSI_E_NOMEM: -2;
export declare const SUITES: readonly ['openmined-p256', 'p256-sswu', 'ristretto255'];
export declare const DEFAULT_SUITE: 'openmined-p256';
export declare const ROLE: Readonly<{ CLIENT: 1; SERVER: 2 }>;
export declare const STRUCTURE: Readonly<{ RAW: 0; GCS: 1; BLOOM_FILTER: 2 }>;
export declare const OP: Readonly<{ SETUP: 1; REQUEST: 2; RESPONSE: 3; INTERSECTION: 4;
  INTERSECTION_SIZE: 5; ASSOCIATION: 6; STEP: 7 }>;
export declare const STEP: Readonly<{ MASK: 1; MASK_SORT: 2; REMASK: 3; UNMASK: 4; REMASK_SORT: 5;
  UNMASK_SORT: 6 }>;
export declare const SUITE: Readonly<{ OPENMINED_P256: 0; P256_SSWU: 1; RISTRETTO255: 2 }>;

/** Inputs packed as UTF-8 (strings) or bytes: data, and n + 1 offsets into it. */
export interface PackedValues { data: Uint8Array; offsets: Uint32Array }
export declare function packValues(values: readonly (string | Uint8Array)[], what?: string): PackedValues;
export declare function packedCount(packed: PackedValues): number;
export declare function asBytes(x: unknown, what: string): Uint8Array;
export declare function toU32(arr: ArrayLike<number>, what: string): Uint32Array;

/** A suite by id (SUITE) or name; undefined/null is openmined-p256. */
export type SuiteArg = number | SuiteName | undefined | null;
/** Setup parameters (psi_setup_params). */
export interface SetupParams { structure: number; fpr: number; numClientInputs: number | bigint }
/** Elements and, when asked for, the permutation (index of the input at each position). */
export interface Sorted { elements: Uint8Array; perm: Uint32Array | null }

/** A plan of steps (psi_plan_begin); free it with planFree. */
export interface Plan { ptr: number; readonly op: number; readonly func: string; readonly n: number | null }
/** What a plan runs (psi_op_args); unused fields may be left out. */
export interface PlanArgs {
  op: number;
  values?: readonly (string | Uint8Array)[] | PackedValues;
  message?: Uint8Array;
  setup?: Uint8Array;
  params?: SetupParams;
  step?: number;
  slices?: number;
}
/** A slice's step (psi_step): values and points are heap pointers into the plan (0: none). */
export interface Step { kind: number; offset: number; count: number; values: number; points: number }
/** A step's input copied out of the heap: packed values (MASK kinds) or points' bytes. */
export type StepInput = PackedValues | Uint8Array;
/** A step's outcome: the elements (and input indices for the _SORT kinds), or the failure. */
export interface StepOutcome { out: Uint8Array | null; perm: Uint32Array | null; code: number; index: number | null }

export declare class LowLevel {
  constructor(module: ShardPsiModule);
  readonly M: ShardPsiModule;
  /** Bytes of an element slot in memory (33), of a key (32), of a P-256 element on the wire. */
  readonly ELEMENT_BYTES: number;
  readonly KEY_BYTES: number;
  readonly ELEMENT_WIRE_BYTES: number;
  readonly heapBytes: number;

  version(): string;
  errorName(code: number): string | null;
  strerror(code: number): string;
  codeName(code: number): string;
  errorMessage(code: number): string;
  detail(): ({ code: number } & PsiErrorDetail) | null;
  /** Throws the PsiError of code (with this thread's detail) unless code is 0. */
  check(code: number, func: string): void;
  error(code: number, func: string): PsiErrorClass;
  jsError(code: number, func: string, note?: string): PsiErrorClass;
  invalid(note: string, func?: string): PsiErrorClass;

  suiteId(suite: SuiteArg): number;
  suiteName(id: number): SuiteName | null;
  suiteElementBytes(id: number): number;
  requestBound(suite: number, n: number): number;
  responseBound(suite: number, n: number): number;
  messageElementBound(suite: number, len: number): number;

  engineCreate(role: number, reveal: boolean, suite?: SuiteArg): number;
  engineFromKey(role: number, reveal: boolean, key: Uint8Array, suite?: SuiteArg): number;
  engineFree(engine: number): void;
  engineRole(engine: number): number;
  engineReveal(engine: number): boolean;
  engineSuite(engine: number): number;
  engineExportKey(engine: number): Uint8Array;

  mask(engine: number, values: readonly (string | Uint8Array)[] | PackedValues): Uint8Array;
  remask(engine: number, points: Uint8Array): Uint8Array;
  unmask(engine: number, points: Uint8Array): Uint8Array;
  pointCheck(point: Uint8Array, suite?: number): void;
  /** The payload table (PROTOCOL.md §22) of the server's masked elements and payloads. */
  payloadTableBuild(suite: number, elements: Uint8Array,
    payloads: readonly (string | Uint8Array)[] | PackedValues, padLen?: number,
    salt?: Uint8Array | null): Uint8Array;
  payloadTableCheck(suite: number, table: Uint8Array): { count: number; padLen: number };
  /** { padLen, salt } of a payload table's options, checked. */
  payloadOptions(options?: { padLen?: number; salt?: Uint8Array | null } | null):
    { padLen: number; salt: Uint8Array | null };
  /** A Response's elements at the given indices, in their order. */
  pickElements(response: Uint8Array, suite: number, indices: readonly number[]): Uint8Array;
  /** The payloads of a client's unmasked elements; null where the table has none. */
  payloadOpen(suite: number, table: Uint8Array, elements: Uint8Array): (Uint8Array | null)[];
  setupParse(setup: Uint8Array, suite?: number): number;
  setupBound(params: SetupParams, n: number, suite?: number): number;
  createSetup(engine: number, params: SetupParams, values: readonly (string | Uint8Array)[] | PackedValues,
    wantPerm?: boolean): { setup: Uint8Array; perm: Uint32Array | null };
  processRequest(engine: number, request: Uint8Array): Uint8Array;
  createRequest(engine: number, values: readonly (string | Uint8Array)[] | PackedValues): Uint8Array;
  intersection(engine: number, setup: Uint8Array, response: Uint8Array): Uint32Array;
  intersectionSize(engine: number, setup: Uint8Array, response: Uint8Array): number;
  /** Pairs (client index, setup position), flattened. */
  association(engine: number, setup: Uint8Array, response: Uint8Array): Uint32Array;
  associationMap(pairs: ArrayLike<number>, perm: ArrayLike<number>): Uint32Array;

  setupEncode(params: SetupParams, elements: Uint8Array, suite?: number): Uint8Array;
  requestEncode(reveal: boolean, elements: Uint8Array, suite?: number): Uint8Array;
  responseEncode(elements: Uint8Array, suite?: number): Uint8Array;
  requestDecode(request: Uint8Array, suite?: number): { elements: Uint8Array; reveal: boolean };
  responseDecode(response: Uint8Array, suite?: number): Uint8Array;

  /** psi_plan_begin; a failure throws the PsiError of begin's checks, named func. */
  planBegin(engine: number, args: PlanArgs, func?: string): Plan;
  planFree(plan: Plan): void;
  planSlices(plan: Plan): number;
  planBound(plan: Plan): number;
  planStep(plan: Plan, k: number): Step;
  stepInput(step: Step): StepInput;
  /** psi_step_run on any engine with the key: a failure is returned, not thrown. */
  stepRun(engine: number, step: { kind: number; offset: number; count: number; input: StepInput }): StepOutcome;
  /** psi_plan_run: the step's code (kept in the plan for finish). */
  planRun(plan: Plan, engine: number, k: number): number;
  planPut(plan: Plan, k: number, outcome: { code: number; index?: number | null; out?: Uint8Array | null;
    perm?: ArrayLike<number> | null }): void;
  /** psi_plan_finish: by the plan's op, SETUP { bytes, perm }, REQUEST and RESPONSE the bytes,
   *  STEP { elements, perm }, INTERSECTION indices, INTERSECTION_SIZE the count, ASSOCIATION
   *  flattened pairs. */
  planFinish(plan: Plan, options?: { perm?: boolean }):
    { bytes: Uint8Array; perm: Uint32Array | null } | Sorted | Uint8Array | Uint32Array | number;
}
