#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses, fuzz/corpus/<name>/.

Sources (read only):
  - <testdata>/wycheproof/ecdh_secp256r1_ecpoint_test.json: P-256 public keys
    as raw SEC1 points, valid and invalid (point);
  - <testdata>/openmined-psi-js/psi_js_2.0.6_vectors.json: psi.js's
    request, response and setups (raw, GCS, Bloom) with fixed keys, the
    keys the server, client and setup harnesses use, so matches are
    reachable; and its hash-to-curve points (point);
  - vectors/openmined-psi-2.0.6.json and vectors/shardpsi-extra.json: the
    repository's wire vectors, including the rejection cases (request,
    response, setup, server, client, point);
  - hand-made frames for the network framing (frame);
  - payload tables (PROTOCOL.md section 22) built by vectors/payload-ref.py with the
    fuzzing server key from "v0".."v11", whole and damaged (payload).

Deterministic: inputs are gathered in file order, deduplicated, and each
file is named by the SHA-1 of its contents (as libFuzzer names its own), so
running the script again changes nothing.  Files of a corpus directory
that the script no longer produces are removed; other names (README,
dotfiles) are left alone.  Python 3 standard library only.

Usage: fuzz/make-corpus.py [--testdata DIR]
       (default DIR: tests/data, the repository's copy of those files)
"""

import argparse
import hashlib
import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The largest input each harness gets (scripts/fuzz.sh passes the same
# -max_len); seeds above it are left out.
MAX_LEN = {
    'point': 256,
    'request': 65536,
    'response': 65536,
    'setup': 65536,
    'server': 4096,
    'client': 8192,
    'frame': 65537,
    'payload': 4096,
}

# P-256 field prime (PROTOCOL.md §1).
P = 2**256 - 2**224 + 2**192 + 2**96 - 1

HASH_NAME = re.compile(r'^[0-9a-f]{40}$')


def load(path):
    with open(path, encoding='utf-8') as f:
        return json.load(f)


def unhex(s):
    return bytes.fromhex(s)


class Corpus:
    """The inputs of one harness, in insertion order, without duplicates."""

    def __init__(self, name):
        self.name = name
        self.items = {}

    def add(self, data):
        if len(data) <= MAX_LEN[self.name]:
            self.items.setdefault(hashlib.sha1(data).hexdigest(), data)

    def write(self):
        d = os.path.join(HERE, 'corpus', self.name)
        os.makedirs(d, exist_ok=True)
        for f in sorted(os.listdir(d)):
            if HASH_NAME.match(f) and f not in self.items:
                os.remove(os.path.join(d, f))
        for h in sorted(self.items):
            path = os.path.join(d, h)
            data = self.items[h]
            if os.path.exists(path):
                with open(path, 'rb') as f:
                    if f.read() == data:
                        continue
            with open(path, 'wb') as f:
                f.write(data)
        return len(self.items), sum(len(v) for v in self.items.values())


def compress(point):
    """The 33-byte compressed form of a 65-byte 04 point (as bytes), or None."""
    if len(point) != 65 or point[0] != 4:
        return None
    y = int.from_bytes(point[33:], 'big')
    return bytes([2 | (y & 1)]) + point[1:33]


def client_input(setup, response):
    """The client harness's input: setup length (u32 LE), setup, response."""
    return struct.pack('<I', len(setup)) + setup + response


def frame(ftype, payload, length=None):
    """One frame: type, payload length (u64 BE), payload (PROTOCOL.md §15.1)."""
    n = len(payload) if length is None else length
    return bytes([ftype]) + struct.pack('>Q', n) + payload


def hello(flags=1, structure=0, n=3):
    """A HELLO/ACCEPT handshake payload of §15.2 (28 bytes)."""
    return (b'SHARDPSI' + struct.pack('>HBB', 1, flags, structure) +
            struct.pack('>d', 1e-6) + struct.pack('>Q', n))


def point_seeds(c, testdata, psijs, extra):
    wp = load(os.path.join(testdata, 'wycheproof', 'ecdh_secp256r1_ecpoint_test.json'))
    uncompressed_kept = 0
    for group in wp['testGroups']:
        for t in group['tests']:
            pub = unhex(t['public'])
            if len(pub) != 65 or t['result'] != 'valid' or uncompressed_kept < 8:
                c.add(pub)  # every odd one; a few of the many valid 04 forms
                uncompressed_kept += len(pub) == 65 and t['result'] == 'valid'
            comp = compress(pub)
            if comp is not None:
                c.add(comp)
                if t['result'] != 'valid':
                    # the same x with the other y: a point, or still off the curve
                    c.add(bytes([comp[0] ^ 1]) + comp[1:])
    for h in psijs['hash_to_curve']:
        c.add(unhex(h['point']))
    for r in extra['rejection_cases']:
        if r['operation'] == 'point':
            c.add(unhex(r['point']))
    # x = 0, x = p - 1, x = p: the range edges (§4.2)
    for prefix in (2, 3):
        c.add(bytes([prefix]) + bytes(32))
        c.add(bytes([prefix]) + (P - 1).to_bytes(32, 'big'))
        c.add(bytes([prefix]) + P.to_bytes(32, 'big'))
    c.add(b'\x00')
    # batches for the remask/unmask round trip: good points, then a bad one
    good = [unhex(h['point']) for h in psijs['hash_to_curve']]
    for k in (2, 3, 4):
        c.add(b''.join(good[:k]))
    c.add(good[0] + b'\x04' + good[1][1:])
    c.add(good[0] + good[1][:1] + P.to_bytes(32, 'big'))


def wire_cases(psijs, om, extra):
    """Yields (setups, request, response) triples from every vector file,
    hex already decoded; setups is a list."""
    for p in psijs['protocol']:
        setups = [unhex(s['serialized']) for s in p['server_setup'].values()]
        yield setups, unhex(p['request']['serialized']), unhex(p['response']['serialized'])
    for case in om['cases']:
        yield [unhex(case['server_setup'])], unhex(case['request']), unhex(case['response'])
    for case in extra['association_cases']:
        yield [unhex(case['server_setup'])], unhex(case['request']), unhex(case['response'])


def message_seeds(corpora, psijs, om, extra):
    for setups, request, response in wire_cases(psijs, om, extra):
        for s in setups:
            corpora['setup'].add(s)
        corpora['request'].add(request)
        corpora['server'].add(request)
        corpora['response'].add(response)
        for s in setups:
            corpora['client'].add(client_input(s, response))
    for r in extra['rejection_cases']:
        if r['operation'] == 'process_request':
            req = unhex(r['request'])
            corpora['request'].add(req)
            corpora['server'].add(req)
        elif r['operation'] == 'intersection':
            setup, response = unhex(r['server_setup']), unhex(r['response'])
            corpora['setup'].add(setup)
            corpora['response'].add(response)
            corpora['client'].add(client_input(setup, response))
    # the empty message: a valid Request and Response, an invalid setup
    for name in ('request', 'response', 'setup', 'server', 'client'):
        corpora[name].add(b'')


def suite_seeds(corpora, testdata):
    """The other suites (PROTOCOL.md §16): every message of their vector
    files, and ristretto255 encodings for the point harness (RFC 9496's
    generator multiples and invalid encodings)."""
    for name in ('shardpsi-p256-sswu.json', 'shardpsi-ristretto255.json'):
        for case in load(os.path.join(ROOT, 'vectors', name))['cases']:
            setup, request = unhex(case['server_setup']), unhex(case['request'])
            response = unhex(case['response'])
            corpora['setup'].add(setup)
            corpora['request'].add(request)
            corpora['server'].add(request)
            corpora['response'].add(response)
            corpora['client'].add(client_input(setup, response))
    r255 = load(os.path.join(testdata, 'ristretto255', 'ristretto255_rfc9496.json'))
    for group in ('multiples_of_generator', 'invalid_encodings'):
        for v in r255[group]['vectors']:
            corpora['point'].add(unhex(v['encoding']))


def frame_seeds(c, psijs):
    """The frame harness's inputs: a control byte (bit 0: expect the type
    that comes next; bits 1-3: the expected type otherwise; bits 4-7: the
    first payload limit), then the peer's bytes."""
    setup = unhex(psijs['protocol'][0]['server_setup']['raw']['serialized'])
    request = unhex(psijs['protocol'][0]['request']['serialized'])
    ka = frame(9, b'')
    streams = [
        frame(1, hello()),
        frame(2, hello(flags=1, structure=2, n=5)),
        frame(3, setup),
        frame(4, request),
        frame(5, b'\x0a\x21' + bytes(33)),
        frame(6, struct.pack('>QQ', 1, 0)),
        frame(7, b''),
        frame(8, b'the peer gave up: bad request'),
        frame(8, b'ctrl\x01\x1f\x7f and utf-8 \xc3\xa9 and bad \xff'),
        ka,
        ka + ka + frame(3, setup),
        frame(1, hello()) + frame(4, request) + frame(7, b''),
        frame(3, setup) + frame(5, b'') + frame(6, b'') + frame(8, b'bye'),
        ka + frame(8, b'x' * 1024),
        frame(8, b'x' * 1025),                      # ERROR above its limit
        frame(9, b'\x00'),                          # keepalive with a payload
        frame(0, b''),                              # unknown types
        frame(10, b''),
        frame(255, b'abc'),
        frame(3, b'', length=2**63),                # huge lengths
        frame(3, b'', length=2**64 - 1),
        frame(4, b'', length=65537),
        frame(3, setup[:10], length=len(setup)),    # payload cut by EOF
        frame(8, b'cut', length=100),
        frame(1, hello())[:5],                      # header cut by EOF
        ka[:8],
        b'',
    ]
    for s in streams:
        for ctl in (0x01, 0x11, 0x31, 0x41, 0x04, 0x26):
            c.add(bytes([ctl]) + s)


def payload_seeds(c):
    """Tables of the fuzzing server key (32 x 07) holding "v0".."v11", whose
    first eight are the elements fuzz_payload.c opens: byte 0 the suite, byte
    1 how many to open, then the table, whole or damaged."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('payload_ref', os.path.join(ROOT, 'vectors', 'payload-ref.py'))
    pr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pr)
    salt = hashlib.sha256(b'shardpsi fuzz payload salt').digest()
    for name, suite in pr.ref.SUITES.items():
        values = [b'v%d' % i for i in range(4, 12)]
        pays = [(b'region %d' % i)[:i] for i in range(len(values))]
        t = pr.build_table(suite, bytes([0x07]) * 32, values, pays, 12, salt)
        for k in (0, 3, 8):
            c.add(bytes([suite.sid, k]) + t)
        rec = 36 + 12
        flip = bytearray(t)
        for j in range(len(values)):
            flip[56 + j * rec + 20] ^= 1
        swap = bytearray(t)
        swap[56:56 + 16], swap[56 + rec:56 + rec + 16] = t[56 + rec:56 + rec + 16], t[56:56 + 16]
        for bad in (bytes(flip), bytes(swap), t[:-5], t[:56]):
            c.add(bytes([suite.sid, 8]) + bad)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--testdata', default=os.path.join(ROOT, 'tests', 'data'))
    args = ap.parse_args()
    psijs = load(os.path.join(args.testdata, 'openmined-psi-js', 'psi_js_2.0.6_vectors.json'))
    om = load(os.path.join(ROOT, 'vectors', 'openmined-psi-2.0.6.json'))
    extra = load(os.path.join(ROOT, 'vectors', 'shardpsi-extra.json'))

    corpora = {name: Corpus(name) for name in MAX_LEN}
    point_seeds(corpora['point'], args.testdata, psijs, extra)
    message_seeds(corpora, psijs, om, extra)
    suite_seeds(corpora, args.testdata)
    frame_seeds(corpora['frame'], psijs)
    payload_seeds(corpora['payload'])
    total = 0
    for name in sorted(corpora):
        n, size = corpora[name].write()
        total += size
        print(f'fuzz/corpus/{name}: {n} files, {size} bytes')
    print(f'total {total} bytes')
    return 0


if __name__ == '__main__':
    sys.exit(main())
