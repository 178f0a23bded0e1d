#!/usr/bin/env python3
"""payload-ref.py - independent pure-Python reference for shardpsi's payload tables.

Written from PROTOCOL.md §22, RFC 8439 (ChaCha20, Poly1305, the AEAD),
draft-irtf-cfrg-xchacha (HChaCha20, XChaCha20-Poly1305) and RFC 7693 (BLAKE2b,
from Python's hashlib), with suite-ref.py's masking (hash to the group, scalar
multiplication, encodings), not from shardpsi's C code. Nothing here is constant
time; it only writes and checks known-answer vector files.

  payload-ref.py --selftest
  payload-ref.py --generate OUT.json
  payload-ref.py --check FILE.json
"""
import argparse
import hashlib
import importlib.util
import json
import os
import struct
import sys
import time

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("suite_ref", os.path.join(_here, "suite-ref.py"))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

# ---------------------------------------------------------------------------
# ChaCha20, Poly1305 and the AEAD (RFC 8439); HChaCha20 and XChaCha20-Poly1305
# (draft-irtf-cfrg-xchacha-03)
# ---------------------------------------------------------------------------
M32 = 0xFFFFFFFF

def _rotl(v, c):
    return ((v << c) & M32) | (v >> (32 - c))

def _qr(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & M32; s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & M32; s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & M32; s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & M32; s[b] = _rotl(s[b] ^ s[c], 7)

def _rounds(s):
    for _ in range(10):
        _qr(s, 0, 4, 8, 12); _qr(s, 1, 5, 9, 13); _qr(s, 2, 6, 10, 14); _qr(s, 3, 7, 11, 15)
        _qr(s, 0, 5, 10, 15); _qr(s, 1, 6, 11, 12); _qr(s, 2, 7, 8, 13); _qr(s, 3, 4, 9, 14)

SIGMA = struct.unpack("<4I", b"expand 32-byte k")

def chacha20_block(key, counter, nonce12):
    init = list(SIGMA) + list(struct.unpack("<8I", key)) + [counter] + list(struct.unpack("<3I", nonce12))
    s = init[:]
    _rounds(s)
    return struct.pack("<16I", *[(x + y) & M32 for x, y in zip(s, init)])

def chacha20_xor(key, counter, nonce12, data):
    out = bytearray()
    for i in range(0, len(data), 64):
        ks = chacha20_block(key, counter + i // 64, nonce12)
        out += bytes(a ^ b for a, b in zip(data[i:i + 64], ks))
    return bytes(out)

def hchacha20(key, nonce16):
    s = list(SIGMA) + list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", nonce16))
    _rounds(s)
    return struct.pack("<8I", *(s[0:4] + s[12:16]))

def poly1305(key, msg):
    r = int.from_bytes(key[:16], "little") & 0x0ffffffc0ffffffc0ffffffc0fffffff
    s, p, acc = int.from_bytes(key[16:], "little"), (1 << 130) - 5, 0
    for i in range(0, len(msg), 16):
        acc = (acc + int.from_bytes(msg[i:i + 16] + b"\x01", "little")) * r % p
    return ((acc + s) & ((1 << 128) - 1)).to_bytes(16, "little")

def _pad16(b):
    return b"\x00" * (-len(b) % 16)

def _aead_tag(otk, aad, ct):
    return poly1305(otk, aad + _pad16(aad) + ct + _pad16(ct) + struct.pack("<QQ", len(aad), len(ct)))

def chacha20poly1305_encrypt(key, nonce12, aad, pt):
    otk = chacha20_block(key, 0, nonce12)[:32]
    ct = chacha20_xor(key, 1, nonce12, pt)
    return ct + _aead_tag(otk, aad, ct)

def chacha20poly1305_decrypt(key, nonce12, aad, ctt):
    ct, tag = ctt[:-16], ctt[-16:]
    otk = chacha20_block(key, 0, nonce12)[:32]
    if _aead_tag(otk, aad, ct) != tag: return None
    return chacha20_xor(key, 1, nonce12, ct)

def xchacha20poly1305_encrypt(key, nonce24, aad, pt):
    return chacha20poly1305_encrypt(hchacha20(key, nonce24[:16]), b"\x00" * 4 + nonce24[16:], aad, pt)

def xchacha20poly1305_decrypt(key, nonce24, aad, ctt):
    return chacha20poly1305_decrypt(hchacha20(key, nonce24[:16]), b"\x00" * 4 + nonce24[16:], aad, ctt)

# ---------------------------------------------------------------------------
# Payload tables (PROTOCOL.md §22)
# ---------------------------------------------------------------------------
MAGIC, LABEL, HEAD, TAG, PAYLOAD_MAX = b"SPSIPAY1", b"shardpsi payload v1", 56, 16, 1 << 20

def derive(suite, salt, element):
    d = hashlib.blake2b(LABEL + bytes([suite.sid]) + element, digest_size=64, key=salt).digest()
    return d[:16], d[32:64]

def header(suite, pad_len, n, salt):
    return MAGIC + bytes([suite.sid, 0, 0, 0]) + struct.pack("<IQ", pad_len, n) + salt

def record(suite, head, salt, element, payload, pad_len, length=None, padding=None):
    """One record; length and padding override the honest ones (tampered vectors)."""
    tag, key = derive(suite, salt, element)
    pt = struct.pack("<I", len(payload) if length is None else length) + payload
    pt += padding if padding is not None else b"\x00" * (pad_len - len(payload))
    return tag, tag + xchacha20poly1305_encrypt(key, b"\x00" * 24, head + tag, pt)

def build_table(suite, skey, values, payloads, pad_len, salt):
    k = suite.parse_key(skey)
    elements = [suite.encrypt(k, v) for v in values]
    if len(set(elements)) != len(elements): raise ValueError("PSI_E_PAYLOAD_DUPLICATE")
    if any(len(p) > pad_len for p in payloads) or pad_len > PAYLOAD_MAX:
        raise ValueError("PSI_E_PAYLOAD_LENGTH")
    head = header(suite, pad_len, len(values), salt)
    recs = sorted(record(suite, head, salt, e, p, pad_len) for e, p in zip(elements, payloads))
    return head + b"".join(r for _, r in recs)

class Refused(Exception):
    pass

def check_table(suite, t):
    if len(t) < HEAD: raise Refused("PSI_E_PAYLOAD_TRUNCATED")
    if t[:8] != MAGIC or t[9:12] != b"\x00\x00\x00": raise Refused("PSI_E_PAYLOAD_FORMAT")
    if t[8] != suite.sid: raise Refused("PSI_E_SUITE_MISMATCH")
    pad_len, n = struct.unpack("<IQ", t[12:24])
    if pad_len > PAYLOAD_MAX: raise Refused("PSI_E_PAYLOAD_LENGTH")
    rec = 36 + pad_len
    if len(t) - HEAD != n * rec: raise Refused("PSI_E_PAYLOAD_TRUNCATED")
    tags = [t[HEAD + j * rec:HEAD + j * rec + TAG] for j in range(n)]
    if any(tags[j - 1] >= tags[j] for j in range(1, n)): raise Refused("PSI_E_PAYLOAD_ORDER")
    return pad_len, {tg: t[HEAD + j * rec + TAG:HEAD + (j + 1) * rec] for j, tg in enumerate(tags)}

def open_payloads(suite, t, elements):
    """The payload of each element (None: no record has its tag)."""
    pad_len, recs = check_table(suite, t)
    out = []
    for e in elements:
        tag, key = derive(suite, t[24:56], e)
        if tag not in recs:
            out.append(None)
            continue
        pt = xchacha20poly1305_decrypt(key, b"\x00" * 24, t[:HEAD] + tag, recs[tag])
        if pt is None: raise Refused("PSI_E_PAYLOAD_AUTH")
        n = struct.unpack("<I", pt[:4])[0]
        if n > pad_len or any(pt[4 + n:]): raise Refused("PSI_E_PAYLOAD_LENGTH")
        out.append(pt[4:4 + n])
    return out

def client_elements(suite, skey, ckey, inputs):
    """The client's unmasked response elements: ser(ks * H(y)) through the round."""
    ks, kc = suite.parse_key(skey), suite.parse_key(ckey)
    return [suite.decrypt(kc, suite.reencrypt(ks, suite.encrypt(kc, y))) for y in inputs]

# ---------------------------------------------------------------------------
# Vectors
# ---------------------------------------------------------------------------
def _case(suite, name, n_server, n_client, pad_len, overlap=3):
    lab = "shardpsi-payload-vectors/%s/%s/" % (suite.name, name)
    srv = ["%s-%d@example.org" % (name, i) for i in range(n_server)]
    text = ["region %d,segment %s" % (i % 5, "ab"[i % 2]) + "é" * (i % 3) for i in range(n_server)]
    pays = ([""] * n_server if name == "empty-payloads" else
            text if pad_len else [x[:i % 17] for i, x in enumerate(text)])
    cli = [srv[(i * 5) % n_server] if n_server and overlap and i % overlap == 0 else "%s-client-%d" % (name, i)
           for i in range(n_client)]
    salt = hashlib.sha256((lab + "salt").encode()).digest()
    skey, ckey = ref.derive_key(suite, lab + "server"), ref.derive_key(suite, lab + "client")
    b = [p.encode() for p in pays]
    L = pad_len if pad_len else max((len(x) for x in b), default=0)
    table = build_table(suite, skey, [s.encode() for s in srv], b, L, salt)
    els = client_elements(suite, skey, ckey, [c.encode() for c in cli])
    opened = open_payloads(suite, table, els)
    return {"name": name, "suite": suite.name, "server_key": skey.hex(), "client_key": ckey.hex(),
            "salt": salt.hex(), "pad_len": L, "server_inputs": srv, "payloads": pays,
            "client_inputs": cli, "table": table.hex(),
            "expected": [None if o is None else o.decode() for o in opened]}

def _tampered(suite, case):
    """Tables damaged one way each, with the code that refuses them when the
    case's client opens its payloads."""
    t = bytes.fromhex(case["table"])
    L = case["pad_len"]
    rec, head, salt = 36 + L, t[:HEAD], t[24:56]
    out = []
    def add(name, table, err):
        out.append({"name": name, "of": case["name"], "suite": suite.name, "table": table.hex(),
                    "error": err})
    # The record of the first matched client value: its offset in the table.
    els = client_elements(suite, bytes.fromhex(case["server_key"]), bytes.fromhex(case["client_key"]),
                          [case["client_inputs"][0].encode()])
    tag0, _ = derive(suite, salt, els[0])
    j0 = next(j for j in range(len(t[HEAD:]) // rec) if t[HEAD + j * rec:HEAD + j * rec + TAG] == tag0)
    flip = bytearray(t)
    flip[HEAD + j0 * rec + TAG + 3] ^= 0x04
    add("a flipped ciphertext bit", flip, "PSI_E_PAYLOAD_AUTH")
    swap = bytearray(t)
    a, b = HEAD + 1 * rec, HEAD + 2 * rec
    swap[a:a + TAG], swap[b:b + TAG] = t[b:b + TAG], t[a:a + TAG]
    add("two tags swapped", swap, "PSI_E_PAYLOAD_ORDER")
    add("a truncated record", t[:-7], "PSI_E_PAYLOAD_TRUNCATED")
    wrong = bytearray(t)
    wrong[12:16] = struct.pack("<I", L + 1)
    add("a wrong padded length in the header", wrong, "PSI_E_PAYLOAD_TRUNCATED")
    wrong[12:16] = struct.pack("<I", PAYLOAD_MAX + 1)
    add("a padded length past the limit", wrong, "PSI_E_PAYLOAD_LENGTH")
    # A server that encrypts a length field past L, or padding that is not zero.
    for name, kw in (("a length field past the padded length", {"length": L + 1}),
                     ("padding that is not zero", {"length": 0, "padding": b"\x01" * L})):
        bad = bytearray(t)
        _, r = record(suite, head, salt, els[0], b"", L, **kw)
        bad[HEAD + j0 * rec:HEAD + (j0 + 1) * rec] = r
        add(name, bad, "PSI_E_PAYLOAD_LENGTH")
    add("another magic", b"SPSIPAY2" + t[8:], "PSI_E_PAYLOAD_FORMAT")
    return out

def generate(path):
    cases, tampered = [], []
    for suite in ref.SUITES.values():
        for name, ns, nc, pad in (("basic", 24, 12, 0), ("padded", 9, 9, 40),
                                  ("empty-payloads", 5, 5, 0), ("no-overlap", 6, 4, 30)):
            c = _case(suite, name, ns, nc, pad, overlap=0 if name == "no-overlap" else 3)
            cases.append(c)
            if name == "padded": tampered += _tampered(suite, c)
    doc = {"format": "shardpsi-payload-vectors/1",
           "generator": "vectors/payload-ref.py (independent pure-Python implementation)",
           "spec": "PROTOCOL.md §22", "cases": cases, "tampered": tampered}
    with open(path + ".tmp", "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    os.replace(path + ".tmp", path)
    return len(cases), len(tampered)

def check_file(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    for c in doc["cases"]:
        suite = ref.SUITES[c["suite"]]
        t = build_table(suite, bytes.fromhex(c["server_key"]), [s.encode() for s in c["server_inputs"]],
                        [p.encode() for p in c["payloads"]], c["pad_len"], bytes.fromhex(c["salt"]))
        if t.hex() != c["table"]: return "%s/%s: table" % (c["suite"], c["name"])
        els = client_elements(suite, bytes.fromhex(c["server_key"]), bytes.fromhex(c["client_key"]),
                              [y.encode() for y in c["client_inputs"]])
        got = [None if o is None else o.decode() for o in open_payloads(suite, t, els)]
        if got != c["expected"]: return "%s/%s: opened payloads" % (c["suite"], c["name"])
    for x in doc["tampered"]:
        suite = ref.SUITES[x["suite"]]
        base = next(c for c in doc["cases"] if c["suite"] == x["suite"] and c["name"] == x["of"])
        els = client_elements(suite, bytes.fromhex(base["server_key"]), bytes.fromhex(base["client_key"]),
                              [y.encode() for y in base["client_inputs"]])
        try:
            open_payloads(suite, bytes.fromhex(x["table"]), els)
            return "%s: %s accepted" % (x["suite"], x["name"])
        except Refused as e:
            if str(e) != x["error"]: return "%s: %s gave %s" % (x["suite"], x["name"], e)
    return None

def selftest():
    fails = []
    def check(ok, what):
        if not ok: fails.append(what)
    # RFC 8439 §2.3.2 (the block function), §2.5.2 (Poly1305), §2.8.2 (the AEAD's tag).
    key = bytes(range(32))
    check(chacha20_block(key, 1, bytes.fromhex("000000090000004a00000000"))[:16].hex()
          == "10f1e7e4d13b5915500fdd1fa32071c4", "chacha20 block")
    check(poly1305(bytes.fromhex("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b"),
                   b"Cryptographic Forum Research Group").hex() == "a8061dc1305136c6c22b8baf0c0127a9",
          "poly1305")
    pt = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for "
          b"the future, sunscreen would be it.")
    ct = chacha20poly1305_encrypt(bytes(range(0x80, 0xa0)), bytes.fromhex("070000004041424344454647"),
                                  bytes.fromhex("50515253c0c1c2c3c4c5c6c7"), pt)
    check(ct[:8].hex() == "d31a8d34648e60db" and ct[-16:].hex() == "1ae10b594f09e26a7e902ecbd0600691",
          "chacha20-poly1305")
    # draft-irtf-cfrg-xchacha-03 §2.2.1 (HChaCha20).
    check(hchacha20(key, bytes.fromhex("000000090000004a0000000031415927")).hex()
          == "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc", "hchacha20")
    x = xchacha20poly1305_encrypt(key, bytes(range(24)), b"ad", b"payload")
    check(xchacha20poly1305_decrypt(key, bytes(range(24)), b"ad", x) == b"payload", "xchacha round trip")
    check(xchacha20poly1305_decrypt(key, bytes(range(24)), b"ae", x) is None, "xchacha wrong ad")
    return fails

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--generate", metavar="OUT")
    ap.add_argument("--check", metavar="FILE")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.selftest:
        fails = selftest()
        for f in fails: print("FAIL " + f)
        print("payload selftest: %d failed (%.1fs)" % (len(fails), time.perf_counter() - t0))
        return 1 if fails else 0
    if args.generate:
        n, m = generate(args.generate)
        print("%s: %d cases and %d tampered tables written in %.1fs" % (args.generate, n, m,
                                                                      time.perf_counter() - t0))
        return 0
    if args.check:
        err = check_file(args.check)
        if err:
            print("MISMATCH: " + err)
            return 1
        print("%s: OK (%.1fs)" % (args.check, time.perf_counter() - t0))
        return 0
    ap.print_help()
    return 2

if __name__ == "__main__": sys.exit(main())
