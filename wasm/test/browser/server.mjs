// A tiny static server for the browser test of the worker pool: 127.0.0.1, a random
// port, no COOP/COEP headers (the pool must work without cross-origin isolation).
//   /                      index.html (the test page)
//   /test/<file>           files of wasm/test/browser/
//   /js/<file>.mjs         the package's wasm/js/*.mjs
//   /wasm/shardpsi.{mjs,wasm}  the built module from $SHARDPSI_WASM_DIR, else build-wasm/wasm
//   /bench/<file>          files of wasm/bench/browser/ (bench.html is served for /bench/)
//   /psijs/psi_wasm_web.js @openmined/psi.js 2.0.6's browser build, from vectors/node_modules
// Run alone (to open the page by hand): SHARDPSI_SERVE=1 node wasm/test/browser/server.mjs
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

const HERE = fileURLToPath(new URL('./', import.meta.url));
const JS_DIR = fileURLToPath(new URL('../../js/', import.meta.url));
const BENCH_DIR = fileURLToPath(new URL('../../bench/browser/', import.meta.url));
export const PSIJS_WEB = fileURLToPath(new URL('../../../vectors/node_modules/@openmined/psi.js/psi_wasm_web.js', import.meta.url));
export const WASM_DIR = path.resolve(process.env.SHARDPSI_WASM_DIR ||
  fileURLToPath(new URL('../../../build-wasm/wasm/', import.meta.url)));

// Headless Chromium as root, no network of its own, fresh profile (the caller's).
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const TYPES = { '.html': 'text/html; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json' };
const SAFE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function resolve(urlPath) {
  if (urlPath === '/' || urlPath === '/index.html') return path.join(HERE, 'index.html');
  if (urlPath === '/bench/') return path.join(BENCH_DIR, 'bench.html');
  if (urlPath === '/bench/memory') return path.join(BENCH_DIR, 'memory.html');
  if (urlPath === '/psijs/psi_wasm_web.js') return PSIJS_WEB;
  const m = /^\/(test|js|wasm|bench)\/([^/]+)$/.exec(urlPath);
  if (!m || !SAFE.test(m[2])) return null;
  if (m[1] === 'test') return path.join(HERE, m[2]);
  if (m[1] === 'bench') return path.join(BENCH_DIR, m[2]);
  if (m[1] === 'js') return m[2].endsWith('.mjs') ? path.join(JS_DIR, m[2]) : null;
  return m[2] === 'shardpsi.mjs' || m[2] === 'shardpsi.wasm' ? path.join(WASM_DIR, m[2]) : null;
}

// isolated: send COOP/COEP (cross-origin isolation), which the memory bench needs for
// performance.measureUserAgentSpecificMemory; the tests serve without them.
// handle(req, res, urlPath): tried first; returns true where it answered (the memory
// bench's peer answers under /peer/).
export async function startServer({ log, isolated = false, handle = null } = {}) {
  const server = http.createServer(async (req, res) => {
    const urlPath = new URL(req.url, 'http://x').pathname;
    if (handle && await handle(req, res, urlPath)) return;
    const file = req.method === 'GET' ? resolve(urlPath) : null;
    let body = null;
    if (file) body = await readFile(file).catch(() => null);
    if (!body) {
      if (log) log(`404 ${req.method} ${urlPath}`);
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found\n');
      return;
    }
    const isolation = isolated ? { 'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp' } : {};
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream',
      'Content-Length': body.length, 'Cache-Control': 'no-store', ...isolation });
    res.end(body);
  });
  await new Promise((ok, bad) => { server.once('error', bad); server.listen(0, '127.0.0.1', ok); });
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((ok) => server.close(ok)) };
}

if (process.env.SHARDPSI_SERVE === '1' && import.meta.url === pathToFileURL(process.argv[1] || '').href) {
  const s = await startServer({ log: console.error });
  console.log(`${s.url} (module from ${WASM_DIR})`);
}
