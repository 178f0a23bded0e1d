// TypeScript declarations of the shardpsi JavaScript package (js/index.mjs).
// Messages are wire bytes (Uint8Array), byte-identical to OpenMined PSI 2.0.6's
// serialized protobuf messages.

import type { ShardPsiModule, ShardPsiFactoryOptions } from './glue.js';
export type { ShardPsiModule, ShardPsiFactoryOptions };

/** Where a library error found the bad input (psi_error_detail); each part null when unknown. */
export interface PsiErrorDetail {
  /** The message field or argument, e.g. "Request.encrypted_elements", "ServerSetup.gcs.div", "key". */
  readonly field: string | null;
  /** 0-based element index within field, counted in the whole message (also from a worker pool). */
  readonly index: number | null;
  /** Byte offset in the message. */
  readonly offset: number | null;
}

/** A library error: every non-zero psi_error code of the C library.  The message is
 *  psi_error_message's: psi_strerror's text, preceded by the place when known, e.g.
 *  "Request.encrypted_elements[3]: invalid point: prefix byte is not 02 or 03" or
 *  "ServerSetup (byte 12): malformed message: ..."; errors found in JS add ": " and a note. */
export declare class PsiError extends Error implements PsiErrorDetail {
  constructor(code: number, message: string, codeName: string, func?: string,
    detail?: Partial<PsiErrorDetail> | null);
  /** The negative psi_error code, e.g. -10. */
  readonly code: number;
  /** The code's identifier (psi_error_name), e.g. "PSI_E_POINT_PREFIX". */
  readonly codeName: string;
  /** Same as codeName. */
  readonly name: string;
  /** The C function that returned the code, e.g. "psi_server_process_request", when known. */
  readonly func?: string;
  readonly field: string | null;
  readonly index: number | null;
  readonly offset: number | null;
}

/** A ciphersuite (PROTOCOL.md §16), by its C name (psi_suite_name).  openmined-p256 is the
 *  default and psi.js's; the messages of the others start with a suite header, so psi.js and
 *  the other suites refuse them (PSI_E_SUITE_MISMATCH). */
export type SuiteName = 'openmined-p256' | 'p256-sswu' | 'ristretto255';
/** The suite names, by psi_suite id (0, 1, 2); the first is the default. */
export declare const suites: readonly ['openmined-p256', 'p256-sswu', 'ristretto255'];
export declare const DEFAULT_SUITE: 'openmined-p256';
/** Options of a party: its suite (default: the library's, see LoadOptions.suite).  A suite
 *  may also be given by its psi_suite id; an unknown name or id throws PsiError PSI_E_SUITE. */
export interface PartyOptions {
  suite?: SuiteName;
}

/** Thrown (as a plain Error) by every method of a deleted object. */
export declare const ERROR_INSTANCE_DELETED: 'Instance was deleted';

/** psi.js's DataStructure names; values equal psi.js's enum `.value` and psi_structure. */
export type DataStructure = 0 | 1 | 2;
export interface DataStructureWrapper {
  readonly Raw: 0;
  readonly GCS: 1;
  readonly BloomFilter: 2;
}
export declare const dataStructure: DataStructureWrapper;

/** A data structure argument: one of psi.dataStructure, or a psi.js enum object. */
export type DataStructureArg = DataStructure | { readonly value: number };

/** Message arguments: wire bytes, or a psi.js protobuf message (its serializeBinary() is used). */
export type MessageArg = Uint8Array | ArrayBuffer | { serializeBinary(): Uint8Array };

/** Inputs: strings are hashed as their UTF-8 bytes (lone surrogates are refused with a
 *  PsiError PSI_E_INVALID_ARG); a Uint8Array is hashed as its bytes (extension). */
export type Input = string | Uint8Array;

export interface SetupWithPermutation {
  /** The ServerSetup wire bytes (raw structure). */
  readonly setup: Uint8Array;
  /** permutation[j] = index in the server's inputs of the element at setup position j. */
  readonly permutation: Uint32Array;
}

export interface Server {
  /** The party's suite (extension). */
  readonly suite: SuiteName;
  /** Frees the engine (and wipes its key). Calling it again does nothing. */
  readonly delete: () => void;
  /** The ServerSetup message. fpr and numClientInputs are ignored for Raw. */
  readonly createSetupMessage: (fpr: number, numClientInputs: number | bigint,
    inputs: readonly Input[], dataStructure?: DataStructureArg) => Uint8Array;
  /** A raw ServerSetup and its sorting permutation, for getAssociationTable (extension). */
  readonly createSetupMessageWithPermutation: (fpr: number, numClientInputs: number | bigint,
    inputs: readonly Input[], dataStructure?: DataStructureArg) => SetupWithPermutation;
  /** The Response to a client's Request. */
  readonly processRequest: (clientRequest: MessageArg) => Uint8Array;
  /** The payload table of the inputs (extension, PROTOCOL.md §22): payloads[i] is sealed so
   *  that only a client holding inputs[i] opens it.  A value twice is refused
   *  (PSI_E_PAYLOAD_DUPLICATE), as is a payload longer than padLen (PSI_E_PAYLOAD_LENGTH). */
  readonly createPayloadTable: (inputs: readonly Input[], payloads: readonly Input[],
    options?: PayloadTableOptions) => Uint8Array;
  /** A copy of the 32-byte key: big-endian; little-endian for ristretto255. */
  readonly getPrivateKeyBytes: () => Uint8Array;
}

/** Options of a payload table. */
export interface PayloadTableOptions {
  /** Every payload padded to this length; default 0: the longest payload's. */
  padLen?: number;
  /** The table's 32-byte salt; default a fresh random one (tests pin it). */
  salt?: Uint8Array;
}

/** The intersection with the server's payloads: payloads[i] belongs to indices[i]; null where
 *  the table has no record (a GCS or Bloom false positive; against a raw setup, a table of
 *  another key or input). */
export interface IntersectionWithPayloads {
  indices: number[];
  payloads: (Uint8Array | null)[];
}

/** [clientIndices, serverIndices], pair i = (clientIndices[i], serverIndices[i]). */
export type AssociationTable = [number[], number[]];

export interface Client {
  /** The party's suite (extension). */
  readonly suite: SuiteName;
  readonly delete: () => void;
  /** The Request message for the client's inputs, in input order. */
  readonly createRequest: (clientInputs: readonly Input[]) => Uint8Array;
  /** Indices into clientInputs, in OpenMined's order. Needs reveal on both sides. */
  readonly getIntersection: (serverSetup: MessageArg, serverResponse: MessageArg) => number[];
  readonly getIntersectionSize: (serverSetup: MessageArg, serverResponse: MessageArg) => number;
  /** The association table of a raw setup (extension): without a permutation the server
   *  indices are setup positions, ordered by them; with the permutation of
   *  createSetupMessageWithPermutation they are server input indices, ordered by them. */
  readonly getAssociationTable: (serverSetup: MessageArg, serverResponse: MessageArg,
    permutation?: ArrayLike<number>) => AssociationTable;
  /** getIntersection and the payloads the server's table (createPayloadTable) holds for the
   *  matched inputs (extension, PROTOCOL.md §22).  A record that does not decrypt throws
   *  PSI_E_PAYLOAD_AUTH: the table was damaged or forged. */
  readonly getIntersectionWithPayloads: (serverSetup: MessageArg, serverResponse: MessageArg,
    payloadTable: Uint8Array) => IntersectionWithPayloads;
  readonly getPrivateKeyBytes: () => Uint8Array;
}

/** The options argument of the party factories: PartyOptions or just a suite name. */
export type PartyOptionsArg = PartyOptions | SuiteName;

export interface ServerWrapper {
  readonly createWithNewKey: (revealIntersection?: boolean, options?: PartyOptionsArg) => Server;
  /** key: P-256 suites, a big-endian integer of any length, 1 <= k < n (never reduced);
   *  ristretto255, 32 little-endian bytes, 1 <= k < l. */
  readonly createFromKey: (key: Uint8Array, revealIntersection?: boolean, options?: PartyOptionsArg) => Server;
}
export interface ClientWrapper {
  readonly createWithNewKey: (revealIntersection?: boolean, options?: PartyOptionsArg) => Client;
  readonly createFromKey: (key: Uint8Array, revealIntersection?: boolean, options?: PartyOptionsArg) => Client;
}

export interface PSILibrary {
  readonly package: { readonly name: 'shardpsi'; readonly version: string };
  readonly dataStructure: DataStructureWrapper;
  readonly server: ServerWrapper;
  readonly client: ClientWrapper;
  /** The suite names (extension); the same array as `suites`. */
  readonly suites: readonly SuiteName[];
  /** The default suite of this library's parties (LoadOptions.suite; extension). */
  readonly suite: SuiteName;
  /** Throws the PsiError of psi_point_check (psi_point_check_suite) for a bad partner element
   *  of the suite (default: the library's) (extension). */
  readonly checkPoint: (point: Uint8Array, suite?: SuiteName) => void;
  /** psi_error_name: the identifier of a code, or null if unknown (extension). */
  readonly errorName: (code: number) => string | null;
  /** psi_strerror: the message of a code (extension). */
  readonly errorMessage: (code: number) => string;
}

/** Where the module comes from; all optional.  With no option: in Node the files are read
 *  from $SHARDPSI_WASM_DIR, else the package's dist/, else ../build-wasm/wasm (a clone of the
 *  repository); in a browser the package's dist/shardpsi.{mjs,wasm} are loaded (a bundler
 *  emits them with the page). */
export interface LoadOptions {
  /** Directory holding shardpsi.mjs and shardpsi.wasm (Node; a path or a file: URL). */
  dir?: string | URL;
  /** URL of the ES module glue shardpsi.mjs (Node: a file: URL), loaded with import(). */
  jsUrl?: string | URL;
  /** URL of shardpsi.wasm. */
  wasmUrl?: string | URL;
  /** The wasm bytes. */
  wasmBinary?: Uint8Array | ArrayBuffer;
  /** A compiled module, e.g. posted to a worker; instantiated with instantiateWasm. */
  module?: WebAssembly.Module;
  /** The createShardPsi factory, when the glue is already loaded (its default export). */
  factory?: (options: ShardPsiFactoryOptions) => Promise<ShardPsiModule>;
  print?: (text: string) => void;
  printErr?: (text: string) => void;
  /** The default suite of the library's parties (createPSI only); default openmined-p256. */
  suite?: SuiteName;
}

/** Loads one module instance and returns the library (psi.js: `await PSI()`). */
export declare function createPSI(options?: LoadOptions): Promise<PSILibrary>;
export { createPSI as PSI };
export default createPSI;

/** The library of an already loaded emscripten Module object. */
export declare function createLibrary(module: ShardPsiModule, options?: { suite?: SuiteName }): PSILibrary;
/** Loads the emscripten Module object itself (low level). */
export declare function loadModule(options?: LoadOptions): Promise<ShardPsiModule>;
/** Compiles shardpsi.wasm once, to hand to workers as { module }. */
export declare function compileModule(options?: LoadOptions): Promise<WebAssembly.Module>;
