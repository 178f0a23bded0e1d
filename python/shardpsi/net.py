"""Whole rounds over the network with ``shardpsi server`` and ``shardpsi
client`` (PROTOCOL.md §15): ``connect()`` runs the client's side against a
listening server, ``serve()`` the server's side for one client.  Either peer
may be the C command or this package.

The transport is TLS 1.3 with both sides authenticated (§15.6), through
Python's ``ssl`` module, or plain TCP on a loopback address.  The masking,
the checks of the server's setup (§9.7) and the matching are the C
library's, on the party's shards; this module carries the frames (§15.1),
the handshake (§15.2) and the order of a round (§15.3), bounding every frame
it receives by what the handshake agreed before reading it.  Payload tables
(§22.2) are carried both ways.  Not carried here: a shared result (§22.3),
prebuilt setups (§15.5) and rounds past a memory budget (§20); a client
asking to share its result is refused in the handshake.
"""
from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import struct
import time
from dataclasses import dataclass
from typing import Callable, Iterable, List, NamedTuple, Optional, Tuple

from ._core import (PAYLOAD_MAX, PsiError, Party, Value, Values, payload_table_check,
                    payload_table_size, setup_bound, setup_check, structure_number,
                    suite_number)
from ._native import lib
from ._tls import TLS, _check_pin, _tls_context
from ._wire import (ACCEPT, DONE, ERROR, HELLO, PAYLOAD_HEAD, PAYLOADS, PERM, REQUEST,
                    RESPONSE, SETUP, NetError, _ANY, _Conn,
                    _ELEMENT_WIRE_BYTES, _Hello, _MSG_MAX, _PAYLOAD_HEAD_MAX, _STRUCTURE_NAMES,
                    _SUITE_NAMES, _num_clients, escape)

__all__ = ["TLS", "NetError", "RoundResult", "ServeResult", "connect", "serve", "escape"]

DEFAULT_TIMEOUT = 120.0
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
DEFAULT_MAX_PEER_VALUES = 100_000_000
DEFAULT_FPR = 1e-9

# --- addresses -------------------------------------------------------------

def _split_addr(addr: str) -> Tuple[str, int]:
    """HOST:PORT or [IPv6]:PORT."""
    if not isinstance(addr, str):
        raise TypeError(f"the address must be a str HOST:PORT, not {type(addr).__name__}")
    if addr.startswith("["):
        host, sep, rest = addr[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f"address {addr!r}: expected [IPV6]:PORT")
        port = rest[1:]
    else:
        host, sep, port = addr.rpartition(":")
        if not sep or not host or ":" in host:
            raise ValueError(f"address {addr!r}: expected HOST:PORT (IPv6 as [ADDR]:PORT)")
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"address {addr!r}: the port must be a number from 0 to 65535")
    return host, int(port)


def _is_loopback(host: str) -> bool:
    """Whether every address the host resolves to is a loopback one."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback
                               for i in infos)


def _check_accept(acc: _Hello, hello: _Hello, max_peer: int) -> None:
    """The client's checks of the server's ACCEPT."""
    if acc.suite != hello.suite:
        raise NetError(f"suite: the client uses {_SUITE_NAMES[hello.suite]}, the server "
                       f"answered {_SUITE_NAMES[acc.suite]} (run both with the same suite)")
    mine = (hello.reveal, hello.association, hello.share_result, hello.payloads)
    theirs = (acc.reveal, acc.association, acc.share_result, acc.payloads)
    if mine != theirs:
        raise NetError("the server answered with reveal %d, association %d, shared result %d "
                       "and payloads %d, the client asked for %d, %d, %d and %d"
                       % (theirs + mine))
    if acc.structure == _ANY or (hello.structure != _ANY and acc.structure != hello.structure):
        raise NetError(f"setup type: the client asked for {_STRUCTURE_NAMES[hello.structure]}, "
                       f"the server answered {_STRUCTURE_NAMES[acc.structure]}")
    if acc.structure != 0 and (acc.fpr <= 0 or (hello.fpr != 0 and acc.fpr != hello.fpr)):
        raise NetError(f"fpr: the client asked for {hello.fpr:g}, the server answered "
                       f"{acc.fpr:g}")
    if acc.association and acc.structure != 0:
        raise NetError(f"the server offers an association table with a "
                       f"{_STRUCTURE_NAMES[acc.structure]} setup")
    if acc.n > max_peer:
        raise NetError(f"the server announces {acc.n} values, more than this client accepts "
                       f"(max_peer_values {max_peer})")
    most = max(max_peer, hello.n)
    if acc.setup_clients < hello.n or (acc.structure == 0 and acc.setup_clients != hello.n) \
            or acc.setup_clients > most:
        raise NetError(f"the server's setup is made for {acc.setup_clients} client values, "
                       f"and this client has {hello.n} (and accepts at most {most})")


def _check_hello(hello: _Hello, me: _Hello, association: bool, max_peer: int) -> None:
    """The server's checks of the client's HELLO (``me``: the server's own
    handshake, setup_clients the client's n)."""
    if hello.suite != me.suite:
        raise NetError(f"suite: the client uses {_SUITE_NAMES[hello.suite]}, the server uses "
                       f"{_SUITE_NAMES[me.suite]} (run both with the same suite)")
    if hello.reveal and not me.reveal:
        raise NetError("the client asks for the intersection itself, and this server reveals "
                       "only its size: serve with reveal=True, or run the client with "
                       "--count-only")
    if hello.association and not association:
        raise NetError("the client asks for the association table, and this server does not "
                       "send it: serve with association=True")
    if hello.association and not hello.reveal:
        raise NetError("the client asks for the association table without the intersection")
    if hello.payloads and not me.payloads:
        raise NetError("the client asks for the server's payload columns, and this server "
                       "has none: serve with payloads=...")
    if hello.payloads and not hello.reveal:
        raise NetError("the client asks for payloads without the intersection")
    if hello.share_result:
        raise NetError("the client asks to share the result with the server, and this "
                       "server does not take it (the Python package takes no shared result)")
    if hello.n > max_peer or hello.n > (2**64 - 1) // _ELEMENT_WIRE_BYTES:
        raise NetError(f"the client announces {hello.n} values, more than this server "
                       f"accepts (max_peer_values {max_peer})")
    if hello.setup_clients != 0:
        raise NetError(f"the client sent a HELLO with setup_clients {hello.setup_clients} "
                       "(must be 0)")
    if hello.structure != _ANY and hello.structure != me.structure:
        raise NetError(f"setup type: the client asks for {_STRUCTURE_NAMES[hello.structure]}, "
                       f"the server uses {_STRUCTURE_NAMES[me.structure]}")
    if me.structure != 0 and hello.fpr != 0 and hello.fpr != me.fpr:
        raise NetError(f"fpr: the client asks for {hello.fpr:g}, the server uses {me.fpr:g}")
    try:
        setup_bound(me.suite, me.structure, me.fpr, _num_clients(me), me.n)
    except PsiError as e:
        raise NetError(f"fpr {me.fpr:g} is too small for a {_STRUCTURE_NAMES[me.structure]} "
                       f"setup of {me.n} values queried with {hello.n}: {e.reason} (raise "
                       "fpr on the server, or use the raw structure)") from None


# --- the two sides (PROTOCOL.md §15.3) -----------------------------------

@dataclass
class RoundResult:
    """What a client learns.  ``count``: the size of the intersection.
    With reveal: ``indices``, the positions of the matched values in the
    client's input, ascending, and ``values``, those values.  With the
    association table: ``association``, (client index, server input row)
    pairs ordered by client index.  With payloads: ``payloads``, the
    server's payload of each matched value (aligned with ``indices``), and
    ``payload_header``, the names the server gave them (the C command: its
    payload columns joined by ","; each payload is those columns of the
    row, as CSV)."""

    count: int
    indices: Optional[List[int]]
    values: Optional[List[Value]]
    association: Optional[List[Tuple[int, int]]]
    payloads: Optional[List[bytes]]
    payload_header: Optional[str]
    server_values: int
    suite: str
    structure: str
    fpr: float
    peer: str


@dataclass
class ServeResult:
    """What a server's round did: the client's set size, what it learned
    (``reveal``: the intersection, else only its size) and the setup."""

    client_values: int
    reveal: bool
    association: bool
    payloads: bool
    suite: str
    structure: str
    peer: str


@contextlib.contextmanager
def _telling_the_peer(conn: _Conn):
    """A side's part of a round: a failure of this side is told to the peer
    (an ERROR frame, not on a stream that failed) before it is raised, and
    the connection is closed however the part ends."""
    try:
        yield
    except NetError as e:
        if not e.by_peer:
            conn.send_error(str(e))
        raise
    except PsiError as e:
        conn.send_error(str(e))
        raise
    finally:
        conn.close()


def _check_common(timeout: float, handshake_timeout: float, max_peer_values: int) -> None:
    for name, v in (("timeout", timeout), ("handshake_timeout", handshake_timeout)):
        if not isinstance(v, (int, float)) or not 0 < v <= 86400:
            raise ValueError(f"{name} must be a number of seconds in (0, 86400]")
    if not isinstance(max_peer_values, int) or max_peer_values < 0:
        raise ValueError("max_peer_values must be an int >= 0")


def _transport(host: str, tls: Optional[TLS], no_tls: bool, trusted_network: bool,
               server: bool):
    if tls is not None and no_tls:
        raise ValueError("give tls or no_tls=True, not both")
    if tls is None and not no_tls:
        raise ValueError("a round runs over TLS 1.3 (tls=shardpsi.net.TLS(...)) unless "
                         "no_tls=True asks for plain TCP")
    if no_tls and not trusted_network and not _is_loopback(host):
        raise ValueError(f"plain TCP only on a loopback address, and {host} is not one: "
                         "use TLS, or trusted_network=True if the network between the two "
                         "sides is trusted")
    return _tls_context(tls, server) if tls is not None else (None, None)


def connect(address: str, values: Iterable[Value], *, reveal: bool = True,
            association: bool = False, payloads: bool = False,
            suite: str = "openmined-p256", structure: Optional[str] = None,
            fpr: Optional[float] = None, key: Optional[bytes] = None,
            threads: Optional[int] = None, shards: Optional[int] = None,
            tls: Optional[TLS] = None, no_tls: bool = False,
            trusted_network: bool = False, timeout: float = DEFAULT_TIMEOUT,
            handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
            max_peer_values: int = DEFAULT_MAX_PEER_VALUES) -> RoundResult:
    """Runs the client's side of one round against ``shardpsi server`` (or
    ``serve()``) at ``address`` ("HOST:PORT") and returns what it learned.

    ``reveal``: learn the intersection (the server must reveal it), else
    only its size.  ``association``: also the server's input row of each
    match (a raw setup; the server must offer it).  ``payloads``: also
    the server's payload of each matched value (PROTOCOL.md §22.2; the
    server must have payload columns); a record that does not open fails
    the round.  ``structure`` and
    ``fpr``: None takes the server's.  ``key``: None for a fresh key.
    ``tls``: see ``TLS``; plain TCP needs ``no_tls=True`` and a loopback
    address (or ``trusted_network=True``).  ``timeout``: the longest
    silence of the server, in seconds (it sends keepalives while it works);
    ``handshake_timeout``: until its ACCEPT.  ``max_peer_values``: the
    largest server set accepted, which bounds every message received.

    Raises NetError (the round did not complete; ``by_peer`` when the server
    ended it), PsiError (the library refused a message or input),
    ValueError or TypeError (bad arguments, before any connection)."""
    _check_common(timeout, handshake_timeout, max_peer_values)
    host, port = _split_addr(address)
    sn = suite_number(suite)
    hello = _Hello(reveal=bool(reveal) or bool(association), association=bool(association),
                   payloads=bool(payloads),
                   structure=_ANY if structure is None else structure_number(structure),
                   fpr=0.0 if fpr is None else float(fpr), suite=sn)
    if association and not reveal:
        raise ValueError("association=True needs reveal=True")
    if payloads and (not reveal or association):
        raise ValueError("payloads=True needs reveal=True, and not association")
    if fpr is not None and (not isinstance(fpr, (int, float)) or not 0 < fpr < 1):
        raise ValueError("fpr must be in (0, 1), or None for the server's")
    ctx, pin = _transport(host, tls, no_tls, trusted_network, False)
    vals = list(values)
    batch = Values(vals)  # a value that is not str or bytes fails before connecting
    hello.n = len(vals)
    party = Party(1, key, sn, hello.reveal, threads, shards)
    peer = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        sock = socket.create_connection((host, port), timeout=handshake_timeout)
    except OSError as e:
        raise NetError(f"cannot connect to {peer}: {e.strerror or e}") from None
    conn = _Conn(sock, peer, "server", handshake_timeout)
    with _telling_the_peer(conn):
        if ctx is not None:
            try:
                conn.sock = ctx.wrap_socket(sock, server_hostname=tls.name or host)
            except ssl.SSLCertVerificationError as e:
                raise NetError(f"TLS: the server's certificate was refused: "
                               f"{e.verify_message}") from None
            except (ssl.SSLError, OSError) as e:
                raise conn._io_error(e, "the TLS handshake") from None
            if pin is not None:
                _check_pin(conn.sock, pin, "server")
        return _client_round(conn, party, hello, vals, batch, timeout, max_peer_values)


def _client_round(conn: _Conn, party: Party, hello: _Hello, vals: List[Value], batch: Values,
                  timeout: float, max_peer: int) -> RoundResult:
    conn.send(HELLO, hello.encode())
    acc = _Hello.decode(conn.recv(ACCEPT, _MSG_MAX, "waiting for the ACCEPT"), "the server")
    _check_accept(acc, hello, max_peer)
    conn.agreed, conn.timeout = True, timeout
    sn, n = hello.suite, hello.n
    with conn.busy():
        request = party.request(batch)
    conn.send(REQUEST, request)
    del request
    clients = _num_clients(acc)
    setup = conn.recv(SETUP, setup_bound(sn, acc.structure, acc.fpr, clients, acc.n),
                      "receiving the setup")
    with conn.busy():
        setup_check(sn, acc.structure, acc.fpr, clients, acc.n, setup)
    response = conn.recv(RESPONSE, lib.psi_response_bound(sn, n), "receiving the response")
    perm = None
    if acc.association:
        raw = conn.recv(PERM, 8 * acc.n, "receiving the association table")
        if len(raw) != 8 * acc.n:
            raise NetError(f"the server's association table holds {len(raw)} bytes, not 8 for "
                           f"each of its {acc.n} values")
        perm = struct.unpack(f">{acc.n}Q", raw)
        bad = next((i for i, v in enumerate(perm) if v >= acc.n), None)
        if bad is not None:
            raise NetError(f"the server's association table: entry {bad} names row "
                           f"{perm[bad]} of {acc.n}")
    table = head = None
    if acc.payloads:
        table, head = _recv_payloads(conn, sn, acc.n)
    indices = values = pairs = opened = None
    with conn.busy():
        if not hello.reveal:
            count = party.intersection_size(setup, response)
        elif perm is not None:
            pairs = sorted(party.association(setup, response, perm))
            count = len(pairs)
        else:
            indices = sorted(party.intersection(setup, response))
            count = len(indices)
            if table is not None:
                opened = party.open_payloads(table, response, indices)
    if pairs is not None:
        indices = sorted({c for c, _ in pairs})
    if opened is not None:
        missing = [i for i, p in zip(indices, opened) if p is None]
        if missing and acc.structure == 0:
            raise NetError(f"the server's payload table has no record for matched row "
                           f"{missing[0]} (a table of another key or input)")
        # Against GCS or Bloom, a match without a record is a false positive.
        indices = [i for i, p in zip(indices, opened) if p is not None]
        opened = [p for p in opened if p is not None]
        count = len(indices)
    if indices is not None:
        values = [vals[i] for i in indices]
    conn.send(DONE)
    return RoundResult(count, indices, values, pairs, opened, head, acc.n, _SUITE_NAMES[sn],
                       _STRUCTURE_NAMES[acc.structure], acc.fpr, conn.peer)


def _recv_payloads(conn: _Conn, suite: int, n_server: int) -> Tuple[bytes, str]:
    """PAYLOAD_HEAD and PAYLOADS (PROTOCOL.md §22.2): the table bounded by
    the head's L and the server's n before it is read, then checked."""
    raw = conn.recv(PAYLOAD_HEAD, 4 + _PAYLOAD_HEAD_MAX, "receiving the payload head")
    L = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else PAYLOAD_MAX + 1
    if L > PAYLOAD_MAX or b"\n" in raw[4:]:
        raise NetError(f"the server's payload head is malformed ({len(raw)} bytes)")
    bound = payload_table_size(n_server, L)
    if bound == 0:
        raise NetError(f"the server's payload table of {n_server} values padded to {L} bytes "
                       "is too large to address")
    table = conn.recv(PAYLOADS, bound, "receiving the payload table")
    try:
        n, pad = payload_table_check(suite, table)
    except PsiError as e:
        raise NetError(f"the server's payload table is invalid: {e}") from None
    if (n, pad) != (n_server, L):
        raise NetError(f"the server's payload table is invalid: {n} records padded to {pad} "
                       f"bytes, where the handshake and head announced {n_server} and {L}")
    return table, escape(raw[4:])


def serve(values: Iterable[Value], listen: str = "127.0.0.1:0", *, reveal: bool = False,
          association: bool = False, payloads: Optional[Iterable[Value]] = None,
          payload_header: str = "payload", pad_to: int = 0,
          suite: str = "openmined-p256", structure: str = "raw",
          fpr: float = DEFAULT_FPR, key: Optional[bytes] = None,
          threads: Optional[int] = None, shards: Optional[int] = None,
          tls: Optional[TLS] = None, no_tls: bool = False, trusted_network: bool = False,
          timeout: float = DEFAULT_TIMEOUT,
          handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
          max_peer_values: int = DEFAULT_MAX_PEER_VALUES,
          on_listening: Optional[Callable[[str, int], None]] = None,
          log: Optional[Callable[[str], None]] = None) -> ServeResult:
    """Listens on ``listen`` ("HOST:PORT"; port 0 picks a free one, which
    ``on_listening(host, port)`` is told), serves one round to the first
    client that completes a handshake (``shardpsi client`` or ``connect()``)
    and returns what the round did.

    ``reveal``: let the client learn the intersection (False: only its
    size).  ``association``: send the client the server's input row of each
    match (raw setup, reveal).  ``payloads``: one payload (str or bytes)
    a value, sent as the payload table of PROTOCOL.md §22 to a client that
    asks (``shardpsi client --payloads``, ``connect(payloads=True)``), with
    ``payload_header`` as its names and every payload padded to ``pad_to``
    bytes (0: the longest); the table is sealed with the round's key and a
    fresh salt.  ``structure``, ``fpr``: the setup's.
    ``key``: None for a fresh key.  ``tls``, ``no_tls``, ``timeout``,
    ``handshake_timeout``, ``max_peer_values``: as for ``connect()``, with
    the client as the peer.  A connection that ends before its HELLO (or
    fails TLS) is skipped, with a line to ``log`` if given, and the server
    keeps listening; one that fails later raises NetError or PsiError."""
    _check_common(timeout, handshake_timeout, max_peer_values)
    host, port = _split_addr(listen)
    sn = suite_number(suite)
    st = structure_number(structure)
    if association and (not reveal or st != 0):
        raise ValueError("association=True needs reveal=True and the raw structure")
    if not isinstance(fpr, (int, float)) or not 0 < fpr < 1:
        raise ValueError("fpr must be in (0, 1)")
    ctx, _pin = _transport(host, tls, no_tls, trusted_network, True)
    vals = Values(values)  # a value that is not str or bytes fails before listening
    pays = None
    if payloads is not None:
        pays = _check_payloads(vals, payloads, payload_header, pad_to, reveal)
    me = _Hello(reveal=bool(reveal), structure=st, fpr=float(fpr), n=vals.n, suite=sn,
                payloads=pays is not None)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    lsock = socket.socket(family, socket.SOCK_STREAM)
    try:
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((host, port))
        lsock.listen(8)
    except OSError as e:
        lsock.close()
        raise NetError(f"cannot listen on {listen}: {e.strerror or e}") from None
    try:
        bound = lsock.getsockname()
        if on_listening is not None:
            on_listening(host, bound[1])
        while True:
            sock, addr = lsock.accept()
            peer = f"[{addr[0]}]:{addr[1]}" if family == socket.AF_INET6 else \
                f"{addr[0]}:{addr[1]}"
            result = _serve_one(sock, peer, ctx, _pin, me, association, vals, pays, key,
                                threads, shards, timeout, handshake_timeout, max_peer_values,
                                log)
            if result is not None:
                return result
    finally:
        lsock.close()


def _serve_one(sock, peer, ctx, pin, me: _Hello, association: bool, vals, pays, key, threads,
               shards, timeout, handshake_timeout, max_peer, log) -> Optional[ServeResult]:
    def skip(why: str) -> None:
        if log is not None:
            log(f"skipped {peer}: {why}; still listening")

    conn = _Conn(sock, peer, "client", handshake_timeout)
    deadline = time.monotonic() + handshake_timeout
    with _telling_the_peer(conn):
        if ctx is not None:
            try:
                sock.settimeout(handshake_timeout)
                conn.sock = ctx.wrap_socket(sock, server_side=True)
            except ssl.SSLCertVerificationError as e:
                skip(f"TLS: the client's certificate was refused: {e.verify_message}")
                return None
            except (ssl.SSLError, OSError) as e:
                skip(f"TLS: {getattr(e, 'reason', None) or e}")
                return None
            if pin is not None:
                try:
                    _check_pin(conn.sock, pin, "client")
                except NetError as e:
                    skip(str(e))
                    return None
        try:
            conn.timeout = max(deadline - time.monotonic(), 0.001)
            raw = conn.recv(HELLO, _MSG_MAX, "waiting for the HELLO")
        except NetError as e:
            if e.by_peer:
                raise
            skip(str(e))
            return None
        hello = _Hello.decode(raw, "the client")
        mine = _Hello(**{**me.__dict__, "setup_clients": hello.n})
        try:
            _check_hello(hello, mine, association, max_peer)
        except NetError as e:
            raise NetError(f"the server refused the client: {e}") from None
        mine.reveal, mine.association = hello.reveal, hello.association
        mine.payloads = hello.payloads
        conn.send(ACCEPT, mine.encode())
        conn.agreed, conn.timeout = True, timeout
        party = Party(2, key, me.suite, hello.reveal, threads, shards)
        _server_round(conn, party, mine, vals, pays if hello.payloads else None)
        return ServeResult(hello.n, hello.reveal, hello.association, hello.payloads,
                           _SUITE_NAMES[me.suite], _STRUCTURE_NAMES[me.structure], peer)


class _Payloads(NamedTuple):
    """serve()'s payloads, checked before it listens."""
    values: Values     # a payload a server value
    head: bytes        # the PAYLOAD_HEAD frame: L, then the header line
    pad_to: int        # the padded length asked for (0: the longest payload)


def _check_payloads(vals: Values, payloads, header: str, pad_to: int,
                    reveal: bool) -> _Payloads:
    """The payloads, header and padded length of serve(), checked before it
    listens."""
    if not reveal:
        raise ValueError("payloads need reveal=True (a client learns the payloads of its "
                         "matched values)")
    pays = Values(payloads)
    if pays.n != vals.n:
        raise ValueError(f"{pays.n} payloads for {vals.n} values: one payload a value")
    if not isinstance(header, str) or "\n" in header or \
            len(header.encode("utf-8")) > _PAYLOAD_HEAD_MAX:
        raise ValueError("payload_header must be a str of at most 65,536 bytes, one line")
    if not isinstance(pad_to, int) or not 0 <= pad_to <= PAYLOAD_MAX:
        raise ValueError(f"pad_to must be an int from 0 to {PAYLOAD_MAX}")
    if pad_to and pays.longest > pad_to:
        raise ValueError(f"a payload of {pays.longest} bytes is longer than pad_to={pad_to}")
    if pays.longest > PAYLOAD_MAX:
        raise ValueError(f"a payload of {pays.longest} bytes is past the largest, "
                         f"{PAYLOAD_MAX}")
    L = pad_to or pays.longest
    return _Payloads(pays, struct.pack(">I", L) + header.encode("utf-8"), pad_to)


def _server_round(conn: _Conn, party: Party, me: _Hello, vals: Values,
                  pays: Optional[_Payloads] = None) -> None:
    sn, n = me.suite, me.setup_clients
    perm: Optional[List[int]] = None
    with conn.busy():  # a raw setup does not depend on the client: masked now
        if me.structure == 0:
            setup, perm = party.setup(vals, 0, me.fpr, _num_clients(me),
                                      with_perm=me.association)
    request = conn.recv(REQUEST, lib.psi_request_bound(sn, n), "receiving the request")
    with conn.busy():
        response = party.process_request(request)
        if len(response) != lib.psi_response_bound(sn, n):
            raise NetError(f"the client's request does not hold the {n} values its "
                           "handshake announced")
        if me.structure != 0:
            setup, _ = party.setup(vals, me.structure, me.fpr, _num_clients(me))
        table = None
        if pays is not None:
            try:
                table = party.payload_table(vals, pays.values, pays.pad_to)
            except PsiError as e:
                conn.send_error("the server's payload table cannot be built")
                conn.broken = True  # told: no second ERROR
                raise e
    conn.send(SETUP, setup)
    conn.send(RESPONSE, response)
    if me.association:
        conn.send(PERM, struct.pack(f">{len(perm)}Q", *perm))
    if table is not None:
        conn.send(PAYLOAD_HEAD, pays.head)
        conn.send(PAYLOADS, table)
    conn.recv(DONE, 0, "waiting for the client's DONE")
