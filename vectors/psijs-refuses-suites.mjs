// SPDX-License-Identifier: Apache-2.0
//
// Checks PROTOCOL.md §16.1's claim that psi.js cannot misread a message of the
// other suites: every ServerSetup, Request and Response in the suite vector
// files (vectors/shardpsi-p256-sswu.json, vectors/shardpsi-ristretto255.json)
// must make psi.js 2.0.6's deserializeBinary throw.  The p256-sswu messages
// matter most: their elements are valid P-256 points, so without the suite
// header psi.js would answer them with a wrong result.
// Prints one line a file; exits 1 if psi.js accepted any message.
// Usage: node vectors/psijs-refuses-suites.mjs   (psi.js from vectors/node_modules)
// This source file is ASCII only.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { HERE, loadPsi, runMain } from './psijs-common.mjs';

const FILES = ['shardpsi-p256-sswu.json', 'shardpsi-ristretto255.json'];

async function main() {
  const psi = await loadPsi();
  const kinds = [['server_setup', psi.serverSetup], ['request', psi.request], ['response', psi.response]];
  let passed = 0;
  let failed = 0;
  for (const f of FILES) {
    const doc = JSON.parse(readFileSync(path.join(HERE, f), 'utf8'));
    let refused = 0;
    for (const c of doc.cases) {
      for (const [field, type] of kinds) {
        const bytes = Uint8Array.from(Buffer.from(c[field], 'hex'));
        let threw = false;
        try {
          type.deserializeBinary(bytes);
        } catch (e) {
          threw = /Invalid wire type/.test(String(e && e.message));
        }
        if (threw) {
          refused++;
          passed++;
        } else {
          failed++;
          console.log(`FAIL ${f} ${c.name} ${field}: psi.js did not refuse it with "Invalid wire type"`);
        }
      }
    }
    console.log(`${f}: psi.js refused ${refused} of ${doc.cases.length * kinds.length} messages`);
  }
  console.log(`psi.js refused ${passed} suite messages, accepted ${failed}`);
  if (failed > 0) process.exit(1);
}

runMain('psijs-refuses-suites.mjs', main);
