"""The frames of PROTOCOL.md §15.1 and the handshake of §15.2: a connection
that sends frames under a lock (a keepalive thread sends too) and receives
them bounded before their payload is read, the 37-byte handshake, and the
escaping of a peer's text.  Used by net.py."""
from __future__ import annotations

import socket
import ssl
import struct
import threading
from dataclasses import dataclass
from typing import Optional

VERSION = 2
HELLO, ACCEPT, SETUP, REQUEST, RESPONSE, PERM, DONE, ERROR, KEEPALIVE = range(1, 10)
PAYLOAD_HEAD, PAYLOADS, RESULT = 10, 11, 12
_NAMES = {HELLO: "HELLO", ACCEPT: "ACCEPT", SETUP: "SETUP", REQUEST: "REQUEST",
          RESPONSE: "RESPONSE", PERM: "PERM", DONE: "DONE", ERROR: "ERROR",
          KEEPALIVE: "KEEPALIVE", PAYLOAD_HEAD: "PAYLOAD_HEAD", PAYLOADS: "PAYLOADS",
          RESULT: "RESULT"}
_MAGIC = b"SHARDPSI"
_HANDSHAKE_BYTES = 37
_MSG_MAX = 1024
_ANY = 255
_STRUCTURE_NAMES = {0: "raw", 1: "gcs", 2: "bloom", _ANY: "the server's choice"}
_SUITE_NAMES = {0: "openmined-p256", 1: "p256-sswu", 2: "ristretto255"}
_ELEMENT_WIRE_BYTES = 35
_PAYLOAD_HEAD_MAX = 65536


class NetError(Exception):
    """A round that did not complete: the connection failed or timed out,
    TLS refused the peer, the handshake disagreed, or the peer ended the
    round (``by_peer`` True; the message then holds the peer's text, with
    every character a terminal could act on escaped as §15.1 says)."""

    def __init__(self, message: str, by_peer: bool = False):
        super().__init__(message)
        self.by_peer = by_peer


def escape(data: bytes) -> str:
    """The peer's text made safe for a terminal (PROTOCOL.md §15.1): C0
    controls, DEL and bytes that are not UTF-8 as \\xNN, the C1 controls and
    the format characters that reorder or hide text as \\u{XXXX}, and a
    backslash as \\\\."""
    out, i = [], 0
    hidden = set(range(0x80, 0xA0)) | {0x061C, 0xFEFF} | set(range(0x200B, 0x2010)) | \
        set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))
    while i < len(data):
        ch, n = None, 1
        for n in (1, 2, 3, 4):
            try:
                ch = data[i:i + n].decode("utf-8")
                break
            except UnicodeDecodeError:
                ch = None
        if ch is None or len(ch) != 1:
            out.append("\\x%02X" % data[i])
            i += 1
            continue
        cp = ord(ch)
        if cp < 0x20 or cp == 0x7F:
            out.append("\\x%02X" % cp)
        elif ch == "\\":
            out.append("\\\\")
        elif cp in hidden:
            out.append("\\u{%04X}" % cp)
        else:
            out.append(ch)
        i += n
    return "".join(out)


# --- frames (PROTOCOL.md §15.1) -----------------------------------------

class _Conn:
    """One connection: frames out under a lock (the keepalive thread sends
    too), frames in with the silence deadline of ``timeout``."""

    def __init__(self, sock: socket.socket, peer: str, role: str, timeout: float):
        self.sock = sock
        self.peer = peer          # "HOST:PORT"
        self.role = role          # the peer's role: "server" or "client"
        self.timeout = timeout
        self.lock = threading.Lock()
        self.agreed = False       # keepalives are allowed after the handshake
        self.broken = False

    def _io_error(self, e: BaseException, doing: str) -> NetError:
        self.broken = True
        if isinstance(e, socket.timeout):
            return NetError(f"the {self.role} ({self.peer}) sent nothing for "
                            f"{self.timeout:g} s while {doing}")
        if isinstance(e, ssl.SSLError):
            if "BAD_RECORD_MAC" in str(e) or "DECRYPTION_FAILED" in str(e):
                return NetError(f"TLS: a record from the {self.role} ({self.peer}) failed "
                                f"the integrity check while {doing}")
            return NetError(f"TLS: {e.reason or e} while {doing} ({self.peer})")
        return NetError(f"the connection to the {self.role} ({self.peer}) failed while "
                        f"{doing}: {getattr(e, 'strerror', None) or e}")

    def send(self, ftype: int, payload: bytes = b"") -> None:
        head = bytes([ftype]) + len(payload).to_bytes(8, "big")
        doing = f"sending {_NAMES[ftype]}"
        try:
            with self.lock:
                self.sock.settimeout(self.timeout)
                if len(payload) < 65536:
                    self.sock.sendall(head + payload)
                else:
                    self.sock.sendall(head)
                    self.sock.sendall(memoryview(payload))
        except (OSError, ssl.SSLError) as e:
            raise self._io_error(e, doing) from None

    def _read(self, n: int, doing: str, allow_eof: bool = False) -> Optional[bytearray]:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        try:
            self.sock.settimeout(self.timeout)
            while got < n:
                k = self.sock.recv_into(view[got:], min(n - got, 1 << 20))
                if k == 0:
                    if allow_eof and got == 0:
                        return None
                    self.broken = True
                    raise NetError(f"the {self.role} ({self.peer}) closed the connection "
                                   f"while {doing}")
                got += k
        except (OSError, ssl.SSLError) as e:
            raise self._io_error(e, doing) from None
        return buf

    def recv(self, expect: int, max_len: int, doing: str) -> bytes:
        """The next frame of type ``expect`` of at most ``max_len`` bytes,
        refused before its payload is read when it is longer."""
        while True:
            head = self._read(9, doing)
            ftype, n = head[0], int.from_bytes(head[1:], "big")
            if ftype == KEEPALIVE and n == 0 and self.agreed:
                continue
            if ftype == ERROR and n <= _MSG_MAX:
                text = bytes(self._read(n, doing))
                self.broken = True
                raise NetError(f"the {self.role} ({self.peer}) ended the round: "
                               f"{escape(text)}", by_peer=True)
            if ftype != expect:
                what = _NAMES.get(ftype, f"an unknown frame (type {ftype})")
                raise NetError(f"the {self.role} ({self.peer}) sent {what} of {n} bytes while "
                               f"{doing}; expected {_NAMES[expect]}")
            if n > max_len:
                raise NetError(f"the {self.role} ({self.peer}) sent {_NAMES[ftype]} of {n} "
                               f"bytes while {doing}; at most {max_len} were agreed")
            return bytes(self._read(n, doing))

    def send_error(self, text: str) -> None:
        """Tells the peer why this side gives up (best effort: never on a
        stream that already failed)."""
        if self.broken:
            return
        try:
            self.send(ERROR, text.encode("utf-8")[:_MSG_MAX])
        except NetError:
            pass

    def busy(self) -> "_Keepalive":
        return _Keepalive(self)

    def close(self) -> None:
        # No TLS close_notify exchange: the round's last frame (DONE) has
        # ended it on both sides, and waiting for the peer's reply would
        # only delay this side.
        try:
            self.sock.close()
        except OSError:
            pass


class _Keepalive:
    """While this side computes, a KEEPALIVE every quarter of the timeout (at
    most every 5 s), so the peer's --timeout measures silence, not work."""

    def __init__(self, conn: _Conn):
        self.conn = conn
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        every = min(self.conn.timeout / 4, 5.0)
        while not self.stop.wait(every):
            try:
                self.conn.send(KEEPALIVE)
            except NetError:
                return

    def __enter__(self) -> "_Keepalive":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


# --- the handshake (PROTOCOL.md §15.2) -----------------------------------

@dataclass
class _Hello:
    reveal: bool = False
    association: bool = False
    share_result: bool = False
    payloads: bool = False
    structure: int = _ANY
    fpr: float = 0.0
    n: int = 0
    suite: int = 0
    setup_clients: int = 0

    def encode(self) -> bytes:
        flags = (1 if self.reveal else 0) | (2 if self.association else 0) | \
            (4 if self.share_result else 0) | (8 if self.payloads else 0)
        return (_MAGIC + struct.pack(">HBB", VERSION, flags, self.structure) +
                struct.pack(">d", self.fpr) + struct.pack(">QBQ", self.n, self.suite,
                                                          self.setup_clients))

    @staticmethod
    def decode(p: bytes, sender: str) -> "_Hello":
        if len(p) < 10 or p[:8] != _MAGIC:
            raise NetError(f"{sender} does not speak the shardpsi network protocol "
                           "(bad handshake)")
        version = int.from_bytes(p[8:10], "big")
        if version != VERSION:
            why = ("upgrade the other side: this side sends the setup only after the "
                   "client's request" if version < VERSION else "upgrade this side")
            raise NetError(f"protocol version: {sender} speaks version {version}, this side "
                           f"version {VERSION} ({why})")
        if len(p) != _HANDSHAKE_BYTES or p[10] & ~15:
            raise NetError(f"{sender} sent a malformed handshake ({len(p)} bytes, flags "
                           f"{p[10] if len(p) > 10 else 0})")
        (fpr,) = struct.unpack(">d", p[12:20])
        n, suite, clients = struct.unpack(">QBQ", p[20:37])
        h = _Hello(bool(p[10] & 1), bool(p[10] & 2), bool(p[10] & 4), bool(p[10] & 8),
                   p[11], fpr, n, suite, clients)
        if suite not in _SUITE_NAMES:
            raise NetError(f"suite: {sender} uses suite number {suite}, unknown to this side "
                           f"(which knows {', '.join(_SUITE_NAMES.values())})")
        if h.structure > 2 and h.structure != _ANY:
            raise NetError(f"{sender} sent an unknown setup type {h.structure}")
        if not (0 <= fpr < 1):
            raise NetError(f"{sender} sent an fpr outside [0, 1)")
        return h


def _num_clients(h: _Hello) -> int:
    return min(h.setup_clients, 2**63 - 1) if h.setup_clients > 0 else 1
