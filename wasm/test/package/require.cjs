// The package through require() (Node 20.19+ loads an ES module graph without top-level
// await): a round with one instance, checked against the known intersection.
const { PSI, PsiError } = require('shardpsi');
const { createPool } = require('shardpsi/pool');

(async () => {
  const psi = await PSI();
  const server = psi.server.createWithNewKey(true);
  const client = psi.client.createWithNewKey(true);
  const setup = server.createSetupMessage(1e-9, 3, ['a', 'b', 'c']);
  const hits = client.getIntersection(setup, server.processRequest(client.createRequest(['c', 'x', 'a'])));
  const pool = await createPool({ role: 'client', workers: 2 });
  await pool.close();
  console.log(JSON.stringify({ hits: hits.sort(), psiError: typeof PsiError, pool: pool.workers }));
})().catch((e) => { console.error(e); process.exit(1); });
