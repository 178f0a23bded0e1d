// The worker pool against one wasm instance in the same Node process:
// values per second of createRequest on 10,000 values, for one instance
// and for pools of 2 and 4 workers (same key, bytes compared), two rounds.
//   node wasm/bench/bench-pool.mjs      (SHARDPSI_WASM_DIR picks the build)
import { PSI } from '../js/index.mjs';
import { createPool } from '../js/pool.mjs';

const n = 10000;
const inputs = Array.from({ length: n }, (_, i) => `user-${i}@example.org`);
const key = Uint8Array.from({ length: 32 }, (_, i) => i + 7);
const psi = await PSI();
const single = psi.client.createFromKey(key, true);
single.createRequest(inputs.slice(0, 500)); // JIT warm-up, untimed

async function timed(f) {
  const t0 = performance.now();
  const r = await f();
  return [performance.now() - t0, r];
}

for (let round = 0; round < 2; round++) {
  const [ts, want] = await timed(() => single.createRequest(inputs));
  const row = [`single ${(n / ts * 1000).toFixed(0)}/s`];
  for (const workers of [2, 4]) {
    const pool = await createPool({ role: 'client', reveal: true, key: key.slice(), workers });
    await pool.createRequest(inputs.slice(0, 500)); // warm-up, untimed
    const [tp, got] = await timed(() => pool.createRequest(inputs));
    const same = Buffer.compare(Buffer.from(want), Buffer.from(got)) === 0;
    row.push(`pool${workers} ${(n / tp * 1000).toFixed(0)}/s (${(ts / tp).toFixed(2)}x${same ? '' : ', BYTES DIFFER'})`);
    await pool.close();
    if (!same) process.exitCode = 1;
  }
  console.log(row.join('  '));
}
single.delete();
