"""shardpsi: ECDH private set intersection (PROTOCOL.md) on the shardpsi C
library, wire-compatible with OpenMined PSI 2.0.6 in its default suite.

Two APIs:

* this module's ``Server`` and ``Client``, with keyword arguments and
  exceptions (``PsiError``) that carry the library's code and the place of
  the bad input;
* ``shardpsi.openmined``, OpenMined PSI's Python names and behaviour
  (``server.CreateWithNewKey``, ``client.GetIntersection``, ...), so a script
  written for ``openmined_psi`` runs after changing its import.

``connect()`` and ``serve()`` (``shardpsi.net``) run a whole round over the
network with the C command ``shardpsi server``/``client`` or another Python
side, over TLS 1.3 (PROTOCOL.md §15).

Every call passes a whole batch to C (the values of a set, a whole message)
and releases the GIL while it runs; with ``threads`` or ``shards`` a party's
key is cloned into shards that run on a thread pool, with the same bytes as
one engine.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple, Union

from ._core import PsiError, Party, Value, version
from .net import TLS, NetError, RoundResult, ServeResult, connect, serve

__all__ = ["Server", "Client", "PsiError", "version", "SUITES", "STRUCTURES", "connect",
           "serve", "TLS", "NetError", "RoundResult", "ServeResult"]
__version__ = "0.1.0"

SUITES = ("openmined-p256", "p256-sswu", "ristretto255")
STRUCTURES = ("raw", "gcs", "bloom_filter")


class _Party:
    """What both sides share: the key (None: a fresh random one), the suite,
    the reveal flag, and the shards."""

    _role = 0

    def __init__(self, key: Optional[bytes] = None, *, suite: str = "openmined-p256",
                 reveal: bool = True, threads: Optional[int] = None,
                 shards: Optional[int] = None):
        self._p = Party(self._role, key, suite, reveal, threads, shards)

    @property
    def key(self) -> bytes:
        """The secret key (keep it secret: it links this party's rounds)."""
        return self._p.key()

    @property
    def shards(self) -> int:
        return self._p.shard_count


class Server(_Party):
    """The party holding the set the other side queries.

    ``key``: 32 bytes (a P-256 suite: big-endian; ristretto255:
    little-endian) or None for a fresh random key.  ``reveal``: whether the
    client learns the intersection (True) or only its size; both sides must
    agree.  ``threads``/``shards``: run on shards of the key on a thread pool
    (None for both: one engine on the calling thread)."""

    _role = 2

    def setup(self, values: Iterable[Value], *, structure: str = "gcs", fpr: float = 1e-9,
              num_client_inputs: int = 1) -> bytes:
        """The ServerSetup message of ``values`` (PROTOCOL.md §7)."""
        return self._p.setup(values, structure, fpr, num_client_inputs)[0]

    def setup_with_permutation(self, values: Iterable[Value]) -> Tuple[bytes, List[int]]:
        """A raw setup and its permutation (position j holds input row
        perm[j]), for the association table (§9.6)."""
        return self._p.setup(values, "raw", 1e-9, 1, with_perm=True)  # type: ignore[return-value]

    def process_request(self, request: bytes) -> bytes:
        """The Response to a client's Request (§8)."""
        return self._p.process_request(request)

    def payload_table(self, values: Iterable[Value], payloads: Iterable[Value], *,
                      pad_to: int = 0, salt: Optional[bytes] = None) -> bytes:
        """The payload table of ``values`` (the setup's, in any order) and
        one payload each (§22): a client opens the payloads of its matched
        values and learns nothing of the others.  Every payload is padded
        to ``pad_to`` bytes (0: the longest).  ``salt``: None for a fresh
        one (one table a round); 32 given bytes are for known-answer
        tests."""
        return self._p.payload_table(values, payloads, pad_to, salt)


class Client(_Party):
    """The party that learns the intersection (or its size); arguments as
    Server's."""

    _role = 1

    def request(self, values: Iterable[Value]) -> bytes:
        """The Request of ``values``, in their order (§6)."""
        return self._p.request(values)

    def intersection(self, setup: bytes, response: bytes) -> List[int]:
        """Indices into the request's values that the server holds, in
        OpenMined's order for the setup's structure (§9)."""
        return self._p.intersection(setup, response)

    def intersection_size(self, setup: bytes, response: bytes) -> int:
        return self._p.intersection_size(setup, response)

    def payloads(self, table: bytes, response: bytes,
                 indices: Sequence[int]) -> List[Optional[bytes]]:
        """The payloads of the matched values ``indices`` (as
        ``intersection`` gives them) from the server's payload table; None
        where a GCS or Bloom false positive has no record.  A record that
        does not open raises PsiError (PSI_E_PAYLOAD_AUTH)."""
        return self._p.open_payloads(table, response, indices)

    def association(self, setup: bytes, response: bytes,
                    permutation: Optional[Sequence[int]] = None) -> List[Tuple[int, int]]:
        """Pairs (client index, setup position) of a raw setup, or (client
        index, server row) given the server's permutation (§9.6)."""
        return self._p.association(setup, response, permutation)
