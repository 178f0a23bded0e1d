// Compiled (never run) by types.test.mjs with tsc --strict: the package's declarations
// (js/*.d.ts) describe the API as used here, through the package's own
// exports map (every entry).  Each @ts-expect-error line must be an error.
import createPSI, { PsiError, suites, type PSILibrary, type AssociationTable, type SuiteName,
  type IntersectionWithPayloads } from 'shardpsi';
import { createPool, PoolError, recommendedWorkers, workerPlan, memoryFit, POLICY, type ServerPool, type ClientPool, type WorkerPlan } from 'shardpsi/pool';

export async function single(): Promise<number> {
  const psi: PSILibrary = await createPSI();
  const server = psi.server.createWithNewKey(true);
  const client = psi.client.createFromKey(new Uint8Array(32).fill(1), true);
  const setup: Uint8Array = server.createSetupMessage(0.001, 2, ['a', 'b'], psi.dataStructure.GCS);
  const { setup: raw, permutation } = server.createSetupMessageWithPermutation(0, 0, ['a', 'b'], psi.dataStructure.Raw);
  const first: number | undefined = permutation[0];
  const request = client.createRequest(['a', new Uint8Array([0x62])]);
  const response = server.processRequest(request);
  const hits: number[] = client.getIntersection(setup, response);
  const table: AssociationTable = client.getAssociationTable(raw, response, permutation);
  const key: Uint8Array = server.getPrivateKeyBytes();
  // payloads (PROTOCOL.md §22)
  const pays: Uint8Array = server.createPayloadTable(['a', 'b'], ['x', new Uint8Array(2)], { padLen: 8 });
  const joined: IntersectionWithPayloads = client.getIntersectionWithPayloads(raw, response, pays);
  const p0: Uint8Array | null | undefined = joined.payloads[0]; void p0;
  // @ts-expect-error: padLen is a number
  server.createPayloadTable(['a'], ['x'], { padLen: '8' });
  try {
    psi.checkPoint(new Uint8Array(33));
  } catch (e) {
    if (e instanceof PsiError) {
      const c: number = e.code; const n: string = e.codeName; void c; void n;
      const where: string = `${e.field ?? '?'}[${e.index ?? '-'}] (byte ${e.offset ?? '-'})`; void where;
      // @ts-expect-error: index may be null
      const i: number = e.index; void i;
    }
  }
  // @ts-expect-error: inputs are strings or bytes
  client.createRequest([1, 2]);
  // @ts-expect-error: a structure is 0, 1 or 2
  server.createSetupMessage(0.001, 2, ['a'], 3);
  // ciphersuites: per party, or the library's default
  const r = psi.server.createWithNewKey(true, { suite: 'ristretto255' });
  const sswu = psi.client.createFromKey(new Uint8Array(32).fill(1), true, 'p256-sswu');
  const name: SuiteName = r.suite; void name; void sswu.suite;
  const all: readonly SuiteName[] = suites; void all;
  psi.checkPoint(new Uint8Array(32), 'ristretto255');
  const lib: PSILibrary = await createPSI({ suite: 'p256-sswu' }); void lib.suite;
  // @ts-expect-error: not a suite name
  psi.server.createWithNewKey(true, { suite: 'p256' });
  r.delete(); sswu.delete();
  server.delete(); client.delete();
  return hits.length + table[0].length + key.length + (first ?? 0) + client.getIntersectionSize(setup, response);
}

export async function pooled(): Promise<number> {
  const server: ServerPool = await createPool({ role: 'server', reveal: true, workers: 2 });
  const client: ClientPool = await createPool({ role: 'client', reveal: true, key: new Uint8Array(32).fill(1), timeoutMs: 60000, suite: 'ristretto255' });
  const suite: 'ristretto255' | 'p256-sswu' | 'openmined-p256' = client.suite; void suite;
  // @ts-expect-error: not a suite name
  void createPool({ role: 'server', suite: 'ed25519' });
  try {
    const setup: Uint8Array = await server.createSetupMessage(0.001, 2, ['a', 'b']);
    const response: Uint8Array = await server.processRequest(await client.createRequest(['a']));
    const size: number = await client.getIntersectionSize(setup, response);
    const table: AssociationTable = await client.getAssociationTable(setup, response);
    const pays: Uint8Array = await server.createPayloadTable(['a', 'b'], ['x', 'y'], { salt: new Uint8Array(32) });
    const joined: IntersectionWithPayloads = await client.getIntersectionWithPayloads(setup, response, pays);
    void joined.indices;
    // @ts-expect-error: the pool's results are promises
    const now: IntersectionWithPayloads = client.getIntersectionWithPayloads(setup, response, pays);
    void now;
    // @ts-expect-error: the pool never hands the key back
    server.getPrivateKeyBytes();
    // @ts-expect-error: a server pool has no createRequest
    await server.createRequest(['a']);
    // @ts-expect-error: a client pool's results are promises
    const wrong: number = client.getIntersectionSize(setup, response);
    void wrong;
    return size + table[1].length + server.workers;
  } catch (e) {
    if (e instanceof PoolError) return -1;
    throw e;
  } finally {
    await server.close();
    await client.delete();
  }
}

// @ts-expect-error: role is required
void createPool({ reveal: true });

// The other entries of the exports map: the low level, the loader, the glue, the worker
// script and the wasm file.
import { LowLevel, OP, ROLE, STEP, STRUCTURE, SUITE, packValues, type PackedValues, type Plan, type StepOutcome } from 'shardpsi/lowlevel';
import { loadModule, compileModule, JS_FILE, type ShardPsiModule } from 'shardpsi/module';
import createShardPsi from 'shardpsi/dist/shardpsi.mjs';
import 'shardpsi/pool-worker';
import 'shardpsi/dist/shardpsi.wasm';

export async function low(): Promise<number> {
  const M: ShardPsiModule = await loadModule({ module: await compileModule() });
  const ll = new LowLevel(M);
  const e: number = ll.engineCreate(ROLE.SERVER, true, SUITE.RISTRETTO255);
  try {
    const packed: PackedValues = packValues(['a', 'b']);
    const { setup } = ll.createSetup(e, { structure: STRUCTURE.RAW, fpr: 0, numClientInputs: 0 }, packed);
    const name: 'shardpsi.mjs' = JS_FILE; void name;
    // @ts-expect-error: engines are numbers
    ll.engineFree('e');
    // a plan of steps: one slice here, one as a pure step
    const plan: Plan = ll.planBegin(e, { op: OP.SETUP, values: packed, params: { structure: STRUCTURE.GCS, fpr: 0.01, numClientInputs: 2 }, slices: 2 });
    try {
      ll.planRun(plan, e, 0);
      const step = ll.planStep(plan, 1);
      const r: StepOutcome = ll.stepRun(e, { ...step, input: ll.stepInput(step) });
      ll.planPut(plan, 1, r);
      void ll.planFinish(plan);
      // @ts-expect-error: a step's kind is a number (STEP)
      ll.stepRun(e, { kind: 'mask', offset: 0, count: 0, input: new Uint8Array(0) });
      void STEP.REMASK_SORT;
    } finally { ll.planFree(plan); }
    return setup.length + ll.ELEMENT_BYTES;
  } finally { ll.engineFree(e); }
}

export async function glue(bytes: Uint8Array): Promise<number> {
  const M = await createShardPsi({ wasmBinary: bytes, getRandomValue: () => 4 });
  // @ts-expect-error: the factory's options are emscripten's, not the loader's
  void createShardPsi({ dir: '.' });
  return M._psi_version();
}

// The shard policy: a count, a plan with its reasons, and a pool told the set it will hold.
export async function policy(): Promise<number> {
  const n: number = recommendedWorkers({ role: 'client', values: 1e5 });
  const plan: WorkerPlan = workerPlan({ role: 'server', navigator: { userAgent: 'x', hardwareConcurrency: 8 } });
  const reasons: readonly string[] = plan.reasons;
  // the memory planned for is always a number; whether it was reported is a flag
  const planned: number = plan.memoryBytes + plan.budgetBytes + plan.heapBytes + POLICY.heapValueBytes.server;
  const reported: boolean = plan.memoryReported;
  // which bound refused a set: the heap's or the renderer's
  const bound: 'heap' | 'renderer' | null = memoryFit({ role: 'server', values: 1e8, workers: 1 }).bound;
  // @ts-expect-error: the plan is read-only
  plan.memoryBytes = 0;
  const p = await createPool({ role: 'client', values: 1e5, memoryBytes: 2 ** 30 });
  const chosen: number = p.plan.workers;
  // @ts-expect-error: a role is required
  void workerPlan({ values: 3 });
  await p.close();
  return n + chosen + reasons.length + (reported ? planned : 0);
}
