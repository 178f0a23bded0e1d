// A private set intersection round in Node with the shardpsi npm package: once with one
// instance, once with a worker pool of 2 threads per party.  The client learns which of its
// inputs the server also has; the server learns nothing.
//   npm install && node round.mjs
// package.json takes the package from the tarball `npm pack` makes in wasm/ of the repository
// (cd ../../wasm && npm run build && npm pack); in your own project, depend on "shardpsi".
import PSI from 'shardpsi';
import { createPool } from 'shardpsi/pool';

const serverInputs = ['alice', 'bob', 'carol', 'dave'];
const clientInputs = ['bob', 'erin', 'dave', 'frank', 'alice'];
const fpr = 1e-9; // false-positive rate of the setup's filter (GCS, the default)
const names = (indices) => indices.map((i) => clientInputs[i]).sort().join(', ');

// One instance: synchronous calls, messages are Uint8Arrays.
const psi = await PSI();
const server = psi.server.createWithNewKey(true); // true: reveal the intersection, not only its size
const client = psi.client.createWithNewKey(true);
const setup = server.createSetupMessage(fpr, clientInputs.length, serverInputs); // server -> client
const request = client.createRequest(clientInputs);                               // client -> server
const response = server.processRequest(request);                                  // server -> client
console.log(`single instance: ${names(client.getIntersection(setup, response))}`);
server.delete();
client.delete();

// A pool: the same calls, as promises, each step split across the workers.
const serverPool = await createPool({ role: 'server', reveal: true, workers: 2 });
const clientPool = await createPool({ role: 'client', reveal: true, workers: 2 });
try {
  const setup2 = await serverPool.createSetupMessage(fpr, clientInputs.length, serverInputs);
  const response2 = await serverPool.processRequest(await clientPool.createRequest(clientInputs));
  console.log(`pool of 2 workers: ${names(await clientPool.getIntersection(setup2, response2))}`);
} finally {
  await serverPool.close();
  await clientPool.close();
}
