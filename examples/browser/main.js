// A private set intersection round in the browser with the shardpsi npm package, bundled by
// Vite: once with one instance (in the page), once with a pool of 2 Web Workers per party.
// No configuration is needed: the bundler emits the wasm and the pool's worker itself, and
// the page needs no cross-origin isolation (COOP/COEP).
//   npm install && npx vite build && npx vite preview
// package.json takes the package from the tarball `npm pack` makes in wasm/ of the repository
// (cd ../../wasm && npm run build && npm pack); in your own project, depend on "shardpsi".
import PSI from 'shardpsi';
import { createPool } from 'shardpsi/pool';

const serverInputs = ['alice', 'bob', 'carol', 'dave'];
const clientInputs = ['bob', 'erin', 'dave', 'frank', 'alice'];
const fpr = 1e-9;
const names = (indices) => indices.map((i) => clientInputs[i]).sort().join(', ');
const out = document.getElementById('out');

async function single() {
  const psi = await PSI();
  const server = psi.server.createWithNewKey(true);
  const client = psi.client.createWithNewKey(true);
  try {
    const setup = server.createSetupMessage(fpr, clientInputs.length, serverInputs);
    const response = server.processRequest(client.createRequest(clientInputs));
    return names(client.getIntersection(setup, response));
  } finally {
    server.delete();
    client.delete();
  }
}

async function pooled() {
  const server = await createPool({ role: 'server', reveal: true, workers: 2 });
  const client = await createPool({ role: 'client', reveal: true, workers: 2 });
  try {
    const setup = await server.createSetupMessage(fpr, clientInputs.length, serverInputs);
    const response = await server.processRequest(await client.createRequest(clientInputs));
    return names(await client.getIntersection(setup, response));
  } finally {
    await server.close();
    await client.close();
  }
}

const result = {};
try {
  result.single = await single();
  result.pool = await pooled();
} catch (e) {
  result.error = `${e.name}: ${e.message}`;
}
out.textContent = result.error ?? `single instance: ${result.single}\npool of 2 workers: ${result.pool}`;
window.shardpsiResult = result; // read by the package test (wasm/test/package/)
