#!/usr/bin/env python3
"""Writes tests/psi/malformed/cases.json: one case a documented error of psi.h.

Each case names an operation, its input bytes (hex), the error it must give
(psi_error_name), and where: the field, the element index and the byte
offset that psi_error_detail_get must report (null when none).  The
expectations are written here by hand from PROTOCOL.md §10 and psi.h; the
inputs are built with the small protobuf helpers below, so each case says
what it breaks.  Read by tests/psi/test_malformed.c (native, single
engine and sharded) and wasm/test/malformed.test.mjs (the wasm build).

Run: python3 tests/psi/malformed/make-cases.py  (deterministic; commit the
output)."""
import json
import os

P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffff
N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551
B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b
GX = 0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296
# The generator, compressed: its y is odd.
G = bytes([3]) + GX.to_bytes(32, 'big')


def on_curve_x(x):
    rhs = (x * x * x - 3 * x + B) % P
    return pow(rhs, (P - 1) // 2, P) in (0, 1)


# The smallest x with no curve point: a well-formed encoding that is not a point.
X_OFF = next(x for x in range(1, 100) if not on_curve_x(x))
NOT_ON_CURVE = bytes([2]) + X_OFF.to_bytes(32, 'big')
X_TOO_BIG = bytes([2]) + b'\xff' * 32
BAD_PREFIX = bytes([5]) + GX.to_bytes(32, 'big')


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def tag(field, wire):
    return varint(field << 3 | wire)


def ld(field, data):
    return tag(field, 2) + varint(len(data)) + data


def vi(field, v):
    return tag(field, 0) + varint(v)


REVEAL = vi(1, 1)                       # Request.reveal_intersection = true
EMPTY_RAW = ld(1, b'')                  # ServerSetup{raw: {}}
EMPTY_GCS = ld(2, vi(2, 1))             # ServerSetup{gcs: {hash_range: 1}}
KEY_ONE = (1).to_bytes(32, 'big')

# The other suites (PROTOCOL.md §16): each message starts with 7f <suite>.
SSWU_HEADER = b'\x7f\x01'
R255_HEADER = b'\x7f\x02'
# ristretto255: the generator's encoding (RFC 9496 A.1), a non-canonical
# field element and a negative one (RFC 9496 A.2), and the group order l,
# little-endian.
R255_B = bytes.fromhex('e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76')
R255_NONCANONICAL = bytes.fromhex('00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff')
R255_NEGATIVE = bytes.fromhex('0100000000000000000000000000000000000000000000000000000000000000')
R255_L = (2**252 + 27742317777372353535851937790883648493).to_bytes(32, 'little')


def case(name, op, error, field=None, index=None, offset=None, **inputs):
    c = {'name': name, 'op': op}
    for k, v in inputs.items():
        c[k] = v.hex() if isinstance(v, (bytes, bytearray)) else v
    c.update({'error': error, 'field': field, 'index': index, 'offset': offset})
    return c


def request_cases():
    E = 'Request.encrypted_elements'
    return [
        case('request: element length runs past the end', 'request_decode',
             'PSI_E_MSG_TRUNCATED', E, 0, 2, msg=REVEAL + tag(2, 2) + varint(33) + G[:10]),
        case('request: length 2^62 claimed by a 14-byte message (bounded before allocating)',
             'request_decode', 'PSI_E_MSG_TRUNCATED', E, 0, 2,
             msg=REVEAL + tag(2, 2) + varint(1 << 62) + b'\x01\x02'),
        case('request: second element 32 bytes', 'request_decode', 'PSI_E_MSG_ELEMENT_SIZE',
             E, 1, 37, msg=REVEAL + ld(2, G) + ld(2, G[:32])),
        case('request: element 34 bytes', 'request_decode', 'PSI_E_MSG_ELEMENT_SIZE', E, 0, 0,
             msg=ld(2, G + b'\x00')),
        case('request: element as a varint (wrong wire type)', 'request_decode', 'PSI_E_MSG_TAG',
             E, 0, 0, msg=vi(2, 1)),
        case('request: reveal flag length-delimited (wrong wire type)', 'request_decode',
             'PSI_E_MSG_TAG', 'Request.reveal_intersection', None, 0, msg=ld(1, b'')),
        case('request: reveal flag varint of 11 bytes', 'request_decode', 'PSI_E_MSG_VARINT',
             'Request.reveal_intersection', None, 35, msg=ld(2, G) + tag(1, 0) + b'\xff' * 10 + b'\x01'),
        case('request: field number 0', 'request_decode', 'PSI_E_MSG_TAG', 'Request', None, 0,
             msg=b'\x00'),
        case('request: wire type 3 (group)', 'request_decode', 'PSI_E_MSG_TAG', 'Request', None,
             35, msg=ld(2, G) + tag(5, 3)),
        case('request: tag varint cut off', 'request_decode', 'PSI_E_MSG_TRUNCATED', 'Request',
             None, 2, msg=REVEAL + b'\x80'),
        case('response: element length runs past the end', 'response_decode',
             'PSI_E_MSG_TRUNCATED', 'Response.encrypted_elements', 1, 35,
             msg=ld(1, G) + tag(1, 2) + varint(33) + G[:5]),
        case('response: element 1 byte', 'response_decode', 'PSI_E_MSG_ELEMENT_SIZE',
             'Response.encrypted_elements', 0, 0, msg=ld(1, b'\x00')),
        case('response: element as fixed64 (wrong wire type)', 'response_decode', 'PSI_E_MSG_TAG',
             'Response.encrypted_elements', 2, 70, msg=ld(1, G) * 2 + tag(1, 1) + b'\x00' * 8),
    ]


def server_cases():
    E = 'Request.encrypted_elements'
    op = 'server_process_request'
    return [
        case('server: reveal flag differs from the server\'s', op, 'PSI_E_REVEAL_MISMATCH',
             'Request.reveal_intersection', None, None, reveal=0, msg=REVEAL + ld(2, G)),
        case('server: third point has prefix 05', op, 'PSI_E_POINT_PREFIX', E, 2, None, reveal=1,
             msg=REVEAL + ld(2, G) * 2 + ld(2, BAD_PREFIX)),
        case('server: first point has x >= p', op, 'PSI_E_POINT_X_RANGE', E, 0, None, reveal=1,
             msg=REVEAL + ld(2, X_TOO_BIG)),
        case('server: x with no curve point', op, 'PSI_E_POINT_NOT_ON_CURVE', E, 1, None, reveal=0,
             msg=ld(2, G) + ld(2, NOT_ON_CURVE)),
        case('server: the identity (00) as an element', op, 'PSI_E_MSG_ELEMENT_SIZE', E, 0, 2,
             reveal=1, msg=REVEAL + ld(2, b'\x00')),
        case('server: element 33 zero bytes', op, 'PSI_E_POINT_PREFIX', E, 0, None, reveal=1,
             msg=REVEAL + ld(2, b'\x00' * 33)),
        case('server: malformed request', op, 'PSI_E_MSG_TRUNCATED', E, 1, 37, reveal=1,
             msg=REVEAL + ld(2, G) + tag(2, 2)),
    ]


def setup_cases():
    R = 'ServerSetup.raw.encrypted_elements'
    op = 'setup_parse'
    return [
        case('setup: empty message (no data structure)', op, 'PSI_E_MSG_ONEOF_MISSING',
             'ServerSetup', None, None, msg=b''),
        case('setup: only an unknown field', op, 'PSI_E_MSG_ONEOF_MISSING', 'ServerSetup', None,
             None, msg=vi(9, 1)),
        case('setup: raw and gcs both set', op, 'PSI_E_MSG_ONEOF_DOUBLED', 'ServerSetup.gcs',
             None, 2, msg=EMPTY_RAW + ld(2, b'')),
        case('setup: raw as a varint (wrong wire type)', op, 'PSI_E_MSG_TAG', 'ServerSetup.raw',
             None, 0, msg=vi(1, 1)),
        case('setup: member length runs past the end', op, 'PSI_E_MSG_TRUNCATED', 'ServerSetup',
             None, 0, msg=tag(1, 2) + varint(5) + b'\x00'),
        case('setup: member length 2^63 (bounded before allocating)', op, 'PSI_E_MSG_TRUNCATED',
             'ServerSetup', None, 0, msg=tag(3, 2) + varint(1 << 63)),
        case('setup: raw element 1 byte', op, 'PSI_E_MSG_ELEMENT_SIZE', R, 0, 2,
             msg=ld(1, ld(1, b'\x00'))),
        case('setup: raw second element cut off', op, 'PSI_E_MSG_TRUNCATED', R, 1, 37,
             msg=ld(1, ld(1, G) + tag(1, 2) + varint(33) + G[:3])),
        case('setup: raw elements out of byte order', op, 'PSI_E_SETUP_UNSORTED', R, 2, None,
             msg=ld(1, ld(1, NOT_ON_CURVE) + ld(1, G) + ld(1, NOT_ON_CURVE))),
        case('setup: gcs hash_range missing (0)', op, 'PSI_E_GCS_HASH_RANGE',
             'ServerSetup.gcs.hash_range', None, None, msg=ld(2, vi(1, 1))),
        case('setup: gcs hash_range negative', op, 'PSI_E_GCS_HASH_RANGE',
             'ServerSetup.gcs.hash_range', None, None, msg=ld(2, vi(2, (1 << 64) - 5))),
        case('setup: gcs div 64', op, 'PSI_E_GCS_DIV', 'ServerSetup.gcs.div', None, None,
             msg=ld(2, vi(1, 64) + vi(2, 10))),
        case('setup: gcs div -1', op, 'PSI_E_GCS_DIV', 'ServerSetup.gcs.div', None, None,
             msg=ld(2, vi(1, (1 << 64) - 1) + vi(2, 10))),
        case('setup: gcs stream cut inside a remainder', op, 'PSI_E_GCS_STREAM',
             'ServerSetup.gcs.bits', 0, None, msg=ld(2, vi(1, 5) + vi(2, 100) + ld(3, b'\x80'))),
        case('setup: gcs second value >= hash_range', op, 'PSI_E_GCS_STREAM',
             'ServerSetup.gcs.bits', 1, None, msg=ld(2, vi(2, 3) + ld(3, b'\x11'))),
        case('setup: gcs bits as a varint (wrong wire type)', op, 'PSI_E_MSG_TAG',
             'ServerSetup.gcs.bits', None, 2, msg=ld(2, vi(3, 1))),
        case('setup: gcs div varint of 11 bytes', op, 'PSI_E_MSG_VARINT', 'ServerSetup.gcs.div',
             None, 2, msg=ld(2, tag(1, 0) + b'\xff' * 10 + b'\x01')),
        case('setup: bloom num_hash_functions 0', op, 'PSI_E_BLOOM_HASHES',
             'ServerSetup.bloom_filter.num_hash_functions', None, None, msg=ld(3, ld(2, b'\xff'))),
        case('setup: bloom num_hash_functions -1', op, 'PSI_E_BLOOM_HASHES',
             'ServerSetup.bloom_filter.num_hash_functions', None, None,
             msg=ld(3, vi(1, (1 << 64) - 1) + ld(2, b'\xff'))),
        case('setup: bloom bits empty', op, 'PSI_E_BLOOM_BITS', 'ServerSetup.bloom_filter.bits',
             None, None, msg=ld(3, vi(1, 3))),
        case('setup: bloom num_hash_functions length-delimited', op, 'PSI_E_MSG_TAG',
             'ServerSetup.bloom_filter.num_hash_functions', None, 2, msg=ld(3, ld(1, b''))),
    ]


def client_cases():
    E = 'Response.encrypted_elements'
    return [
        case('client: second response point has x >= p', 'client_get_intersection',
             'PSI_E_POINT_X_RANGE', E, 1, None, reveal=1, setup=EMPTY_RAW,
             msg=ld(1, G) + ld(1, X_TOO_BIG)),
        case('client: response point not on the curve (size only)', 'client_get_intersection_size',
             'PSI_E_POINT_NOT_ON_CURVE', E, 3, None, reveal=0, setup=EMPTY_RAW,
             msg=ld(1, G) * 3 + ld(1, NOT_ON_CURVE)),
        case('client: response cut off', 'client_get_intersection', 'PSI_E_MSG_TRUNCATED', E, 0, 0,
             reveal=1, setup=EMPTY_RAW, msg=tag(1, 2) + varint(33)),
        case('client: setup malformed before the response is read', 'client_get_intersection',
             'PSI_E_GCS_DIV', 'ServerSetup.gcs.div', None, None, reveal=1,
             setup=ld(2, vi(1, 70) + vi(2, 10)), msg=ld(1, G)),
        case('client: intersection with reveal off', 'client_get_intersection',
             'PSI_E_REVEAL_DISABLED', None, None, None, reveal=0, setup=EMPTY_RAW, msg=ld(1, G)),
        case('client: association table of a GCS setup', 'client_get_association',
             'PSI_E_STRUCTURE', 'ServerSetup', None, None, reveal=1, setup=EMPTY_GCS, msg=b''),
    ]


def other_cases():
    return [
        case('point: the identity (00)', 'point_check', 'PSI_E_POINT_IDENTITY', 'point', None, None,
             point=b'\x00'),
        case('point: 32 bytes', 'point_check', 'PSI_E_POINT_LENGTH', 'point', None, None,
             point=G[:32]),
        case('point: uncompressed 04 form (65 bytes)', 'point_check', 'PSI_E_POINT_LENGTH', 'point',
             None, None, point=b'\x04' + b'\x11' * 64),
        case('point: prefix 06 (hybrid form)', 'point_check', 'PSI_E_POINT_PREFIX', 'point', None,
             None, point=b'\x06' + G[1:]),
        case('point: x = p', 'point_check', 'PSI_E_POINT_X_RANGE', 'point', None, None,
             point=b'\x02' + P.to_bytes(32, 'big')),
        case('remask: third point not on the curve', 'engine_remask', 'PSI_E_POINT_NOT_ON_CURVE',
             'points', 2, None, points=G + G + NOT_ON_CURVE),
        case('unmask: first point with prefix 00', 'engine_unmask', 'PSI_E_POINT_PREFIX', 'points',
             0, None, points=b'\x00' * 33),
        case('key: n, the group order', 'engine_from_key', 'PSI_E_KEY_OUT_OF_RANGE', 'key', None,
             None, key=N.to_bytes(32, 'big')),
        case('key: zero', 'engine_from_key', 'PSI_E_KEY_OUT_OF_RANGE', 'key', None, None,
             key=bytes(32)),
        case('key: empty', 'engine_from_key', 'PSI_E_KEY_OUT_OF_RANGE', 'key', None, None, key=b''),
        case('key: 33 bytes above n', 'engine_from_key', 'PSI_E_KEY_OUT_OF_RANGE', 'key', None,
             None, key=b'\x01' + bytes(32)),
        case('params: fpr 0', 'setup_bound', 'PSI_E_FPR', 'params.fpr', None, None,
             structure=1, fpr=0.0, num_client_inputs=10, n=10),
        case('params: fpr / num_client_inputs above 1', 'setup_bound', 'PSI_E_FPR', 'params.fpr',
             None, None, structure=2, fpr=3.0, num_client_inputs=2, n=10),
        case('params: num_client_inputs 0', 'setup_bound', 'PSI_E_FPR', 'params.num_client_inputs',
             None, None, structure=2, fpr=0.01, num_client_inputs=0, n=10),
        case('params: GCS hash range past 2^63', 'setup_bound', 'PSI_E_PARAM_OVERFLOW', 'params.fpr',
             None, None, structure=1, fpr=1e-9, num_client_inputs=100000, n=100000),
        case('params: Bloom filter past 2^53 bytes', 'setup_bound', 'PSI_E_PARAM_OVERFLOW',
             'params.fpr', None, None, structure=2, fpr=1e-300, num_client_inputs=1 << 60, n=10),
        case('params: unknown structure 7', 'setup_bound', 'PSI_E_STRUCTURE', 'params.structure',
             None, None, structure=7, fpr=0.01, num_client_inputs=10, n=10),
    ]


def suite_cases():
    E = 'Request.encrypted_elements'
    R = 'ristretto255'
    return [
        case('suite: a p256-sswu request read as openmined-p256', 'request_decode',
             'PSI_E_SUITE_MISMATCH', 'Request', None, 0, msg=SSWU_HEADER + REVEAL + ld(2, G)),
        case('suite: an openmined-p256 request read as p256-sswu', 'request_decode',
             'PSI_E_SUITE_MISMATCH', 'Request', None, 0, suite='p256-sswu',
             msg=REVEAL + ld(2, G)),
        case('suite: a ristretto255 response read as p256-sswu', 'response_decode',
             'PSI_E_SUITE_MISMATCH', 'Response', None, 0, suite='p256-sswu',
             msg=R255_HEADER + ld(1, R255_B)),
        case('suite: a ristretto255 setup read as p256-sswu', 'setup_parse',
             'PSI_E_SUITE_MISMATCH', 'ServerSetup', None, 0, suite='p256-sswu',
             msg=R255_HEADER + EMPTY_RAW),
        case('suite: a ristretto255 server given an openmined-p256 request',
             'server_process_request', 'PSI_E_SUITE_MISMATCH', 'Request', None, 0, suite=R,
             reveal=1, msg=REVEAL + ld(2, G)),
        case('suite: a p256-sswu client given an openmined-p256 setup', 'client_get_intersection',
             'PSI_E_SUITE_MISMATCH', 'ServerSetup', None, 0, suite='p256-sswu', setup=EMPTY_RAW,
             msg=SSWU_HEADER),
        case('suite: unknown name', 'suite_from_name', 'PSI_E_SUITE', 'suite', suite_name='p384'),
        case('ristretto255: request element of 33 bytes', 'request_decode',
             'PSI_E_MSG_ELEMENT_SIZE', E, 0, 4, suite=R, msg=R255_HEADER + REVEAL + ld(2, G)),
        case('ristretto255: server, second element a non-canonical encoding',
             'server_process_request', 'PSI_E_POINT_ENCODING', E, 1, None, suite=R, reveal=1,
             msg=R255_HEADER + REVEAL + ld(2, R255_B) + ld(2, R255_NONCANONICAL)),
        case('ristretto255: server, the identity as an element', 'server_process_request',
             'PSI_E_POINT_IDENTITY', E, 0, None, suite=R, reveal=0,
             msg=R255_HEADER + ld(2, bytes(32))),
        case('ristretto255: client, response element negative', 'client_get_intersection',
             'PSI_E_POINT_ENCODING', 'Response.encrypted_elements', 0, None, suite=R,
             setup=R255_HEADER + EMPTY_RAW, msg=R255_HEADER + ld(1, R255_NEGATIVE)),
        case('ristretto255: point negative', 'point_check', 'PSI_E_POINT_ENCODING', 'point', None,
             None, suite=R, point=R255_NEGATIVE),
        # libsodium 1.0.18 accepts this one: it ignores bit 255 (psi/ristretto.c).
        case('ristretto255: generator with bit 255 set', 'point_check', 'PSI_E_POINT_ENCODING',
             'point', None, None, suite=R, point=R255_B[:31] + bytes([R255_B[31] | 0x80])),
        case('ristretto255: server, element with bit 255 set', 'server_process_request',
             'PSI_E_POINT_ENCODING', E, 0, None, suite=R, reveal=1,
             msg=R255_HEADER + REVEAL + ld(2, R255_B[:31] + bytes([R255_B[31] | 0x80]))),
        case('ristretto255: point of 33 bytes', 'point_check', 'PSI_E_POINT_LENGTH', 'point', None,
             None, suite=R, point=G),
        case('ristretto255: remask, the identity', 'engine_remask', 'PSI_E_POINT_IDENTITY',
             'points', 1, None, suite=R, points=R255_B + b'\x00' + bytes(33)),
        case('ristretto255: key l, the group order', 'engine_from_key', 'PSI_E_KEY_OUT_OF_RANGE',
             'key', None, None, suite=R, key=R255_L),
        case('ristretto255: key of 33 bytes', 'engine_from_key', 'PSI_E_KEY_OUT_OF_RANGE', 'key',
             None, None, suite=R, key=b'\x01' + bytes(32)),
        case('p256-sswu: key n, the group order', 'engine_from_key', 'PSI_E_KEY_OUT_OF_RANGE',
             'key', None, None, suite='p256-sswu', key=N.to_bytes(32, 'big')),
        # Bloom setups of the project's suites are format 2 (PROTOCOL.md §7.4): one
        # without the format field is the old format 1 (psi.js's probes), refused.
        case('p256-sswu: Bloom setup of the old format 1 (no format field)', 'setup_parse',
             'PSI_E_BLOOM_FORMAT', 'ServerSetup.bloom_filter.format', None, None,
             suite='p256-sswu', msg=SSWU_HEADER + ld(3, vi(1, 3) + ld(2, b'\x00' * 4))),
        case('ristretto255: Bloom setup of format 3', 'setup_parse', 'PSI_E_BLOOM_FORMAT',
             'ServerSetup.bloom_filter.format', None, None, suite=R,
             msg=R255_HEADER + ld(3, vi(1, 3) + vi(3, 3) + ld(2, b'\x00' * 4))),
        case('ristretto255: Bloom format field length-delimited', 'setup_parse', 'PSI_E_MSG_TAG',
             'ServerSetup.bloom_filter.format', None, 6, suite=R,
             msg=R255_HEADER + ld(3, vi(1, 3) + ld(3, b'') + ld(2, b'\x00' * 4))),
    ]


def main():
    cases = (request_cases() + server_cases() + setup_cases() + client_cases() + other_cases() +
             suite_cases())
    names = [c['name'] for c in cases]
    assert len(names) == len(set(names)), 'case names must be unique'
    doc = {
        'description': 'Malformed inputs, one case a documented error of psi.h: the operation, '
                       'its inputs (hex), the error code (psi_error_name) and where '
                       '(psi_error_detail: field, element index, byte offset; null when none). '
                       'Written by tests/psi/malformed/make-cases.py.',
        'server_key': KEY_ONE.hex(),
        'client_key': (2).to_bytes(32, 'big').hex(),
        'ristretto255_server_key': (1).to_bytes(32, 'little').hex(),
        'ristretto255_client_key': (2).to_bytes(32, 'little').hex(),
        'cases': cases,
    }
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, 'cases.json'), 'w') as f:
        json.dump(doc, f, indent=1)
        f.write('\n')
    print('%d cases' % len(cases))


if __name__ == '__main__':
    main()
