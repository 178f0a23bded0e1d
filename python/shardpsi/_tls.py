"""TLS 1.3 for net.py (PROTOCOL.md §15.6) through Python's ssl module: the
identity files checked as the C command checks them, a CA or a pinned key
(the SHA-256 of the peer's DER SubjectPublicKeyInfo, read with a small DER
reader), and the pinned leaf's dates."""
from __future__ import annotations

import datetime
import hashlib
import os
import ssl
import stat
from dataclasses import dataclass
from typing import Optional, Tuple

from ._wire import NetError

# --- TLS (PROTOCOL.md §15.6) ----------------------------------------------

@dataclass
class TLS:
    """This side's TLS 1.3 identity and how it authenticates the peer.

    ``cert``, ``key``: this side's certificate (a chain is allowed) and key
    files, as ``shardpsi tls-keygen`` makes them.  Then one of two forms:

    * ``ca``: the CA certificates the peer's chain must come from; a client
      also checks that the server's certificate names the host it connects
      to (or ``name``).
    * ``peer_key``: the peer's key fingerprint (``sha256:`` and 64 hex
      digits, as tls-keygen prints it); the peer's leaf must hold that key
      and be within its dates.  Names are not checked.  A server (``serve``)
      also needs ``peer_cert``, the client's certificate file: Python's ssl
      module cannot take an unknown self-signed certificate from a client
      and check its key itself, so it trusts that one certificate.

    The files must be regular files owned by this user or root and not
    writable by others; the key file must give others no access."""

    cert: str
    key: str
    ca: Optional[str] = None
    peer_key: Optional[str] = None
    peer_cert: Optional[str] = None
    name: Optional[str] = None


def _check_file(path: str, what: str, secret: bool) -> None:
    try:
        st = os.lstat(path)
    except OSError as e:
        raise ValueError(f"{what} {path}: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{what} {path}: not a regular file (a symbolic link is refused)")
    if st.st_uid not in (os.getuid(), 0):
        raise ValueError(f"{what} {path}: owned by another user")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ValueError(f"{what} {path}: writable by the group or others")
    if secret and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"{what} {path}: readable by the group or others (chmod 600 {path})")


def _parse_fingerprint(fp: str) -> str:
    s = fp.strip()
    if s[:7].lower() == "sha256:":
        s = s[7:]
    parts = s.split(":")
    if len(parts) > 1 and not all(len(p) == 2 for p in parts):
        raise ValueError(f"peer_key {fp!r}: ':' goes only between byte pairs")
    h = "".join(parts).lower()
    if len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
        raise ValueError(f"peer_key {fp!r}: expected 'sha256:' and 64 hex digits, as "
                         "tls-keygen prints them")
    return h


def _der(buf: bytes, pos: int) -> Tuple[int, int, int]:
    """One DER element at pos: (tag, start of its content, end)."""
    if pos + 2 > len(buf):
        raise ValueError("truncated")
    tag, n = buf[pos], buf[pos + 1]
    pos += 2
    if n & 0x80:
        k = n & 0x7F
        if k == 0 or k > 4 or pos + k > len(buf):
            raise ValueError("bad length")
        n = int.from_bytes(buf[pos:pos + k], "big")
        pos += k
    if pos + n > len(buf):
        raise ValueError("truncated")
    return tag, pos, pos + n


def _der_time(tag: int, raw: bytes) -> datetime.datetime:
    s = raw.decode("ascii")
    if tag == 0x17:  # UTCTime: YYMMDDHHMMSSZ
        year = int(s[:2])
        s = str(1900 + year if year >= 50 else 2000 + year) + s[2:]
    return datetime.datetime.strptime(s, "%Y%m%d%H%M%SZ").replace(tzinfo=datetime.timezone.utc)


def _leaf_key_and_dates(der: bytes) -> Tuple[str, datetime.datetime, datetime.datetime]:
    """The SHA-256 of a certificate's DER SubjectPublicKeyInfo, and its
    validity dates."""
    _, c, _ = _der(der, 0)               # Certificate
    _, t, t_end = _der(der, c)           # tbsCertificate
    fields = []
    p = t
    while p < t_end and len(fields) < 7:
        tag, s, e = _der(der, p)
        fields.append((tag, p, s, e))
        p = e
    if fields and fields[0][0] == 0xA0:  # [0] version
        fields = fields[1:]
    _, _, vs, _ = fields[3]              # serial, signature, issuer, validity
    tag1, s1, e1 = _der(der, vs)
    tag2, s2, e2 = _der(der, e1)
    _, spki_at, _, spki_end = fields[5]
    return (hashlib.sha256(der[spki_at:spki_end]).hexdigest(),
            _der_time(tag1, der[s1:e1]), _der_time(tag2, der[s2:e2]))


def _cert_fingerprint(path: str) -> str:
    with open(path, "r", encoding="ascii", errors="replace") as f:
        pem = f.read()
    try:
        return _leaf_key_and_dates(ssl.PEM_cert_to_DER_cert(pem))[0]
    except (ValueError, IndexError) as e:
        raise ValueError(f"peer_cert {path}: not a PEM certificate ({e})") from None


def _tls_context(tls: TLS, server: bool) -> Tuple[ssl.SSLContext, Optional[str]]:
    """The context of one side, and the fingerprint to pin (or None)."""
    if not isinstance(tls, TLS):
        raise TypeError("tls must be a shardpsi.net.TLS")
    if (tls.ca is None) == (tls.peer_key is None and tls.peer_cert is None):
        raise ValueError("TLS: give either ca (a CA) or peer_key (a pinned key), not both "
                         "or neither")
    if server and tls.ca is None and tls.peer_cert is None:
        raise ValueError("TLS: a server with a pinned key needs peer_cert, the client's "
                         "certificate file (Python's ssl cannot check an unknown client "
                         "certificate's key itself)")
    _check_file(tls.cert, "TLS certificate", False)
    _check_file(tls.key, "TLS key", True)
    pin = _parse_fingerprint(tls.peer_key) if tls.peer_key is not None else None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.options |= ssl.OP_NO_TICKET
    try:
        ctx.load_cert_chain(tls.cert, tls.key)
    except ssl.SSLError as e:
        raise ValueError(f"TLS: the certificate {tls.cert} and key {tls.key} cannot be "
                         f"loaded together ({e.reason})") from None
    trust = tls.ca if tls.ca is not None else tls.peer_cert
    if trust is not None:
        _check_file(trust, "TLS CA" if tls.ca is not None else "TLS peer certificate", False)
        if tls.peer_cert is not None:
            want = _cert_fingerprint(tls.peer_cert)
            if pin is not None and pin != want:
                raise ValueError(f"TLS: peer_cert {tls.peer_cert} holds key sha256:{want}, "
                                 f"not the pinned sha256:{pin}")
            pin = want
        ctx.load_verify_locations(cafile=trust)
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.check_hostname = not server and tls.ca is not None
    else:  # a client pinning the server's key: checked after the handshake
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx, pin


def _check_pin(sock: ssl.SSLSocket, pin: str, peer: str) -> None:
    der = sock.getpeercert(binary_form=True)
    if der is None:
        raise NetError(f"TLS: the {peer} sent no certificate")
    try:
        fp, not_before, not_after = _leaf_key_and_dates(der)
    except (ValueError, IndexError):
        raise NetError(f"TLS: the {peer}'s certificate was refused: its key cannot be "
                       "read") from None
    if fp != pin:
        raise NetError(f"TLS: the {peer}'s key sha256:{fp} is not the pinned key "
                       f"(peer_key sha256:{pin})")
    now = datetime.datetime.now(datetime.timezone.utc)
    if now < not_before:
        raise NetError(f"TLS: the {peer}'s certificate was refused: certificate is not "
                       "yet valid")
    if now > not_after:
        raise NetError(f"TLS: the {peer}'s certificate was refused: certificate has expired")
