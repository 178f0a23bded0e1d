"""OpenMined PSI's Python API on shardpsi: ``import shardpsi.openmined as psi``
in place of ``import openmined_psi as psi``.

The names and behaviour of openmined_psi 2.0: ``psi.server`` and
``psi.client`` with ``CreateWithNewKey(reveal_intersection)``,
``CreateFromKey(key_bytes, reveal_intersection)`` and
``GetPrivateKeyBytes()``; ``CreateSetupMessage(fpr, num_client_inputs,
inputs, ds=DataStructure.GCS)``, ``ProcessRequest(request)``,
``CreateRequest(inputs)``, ``GetIntersection(setup, response)``,
``GetIntersectionSize(setup, response)`` (and ``GetAssociationTable``, the
pairs of §9.6 as two lists); and the messages ``ServerSetup``, ``Request``, ``Response`` with
``SerializeToString()`` and ``ParseFromString(data)``.  Every method that
takes a message also takes its bytes.  The bytes are OpenMined PSI 2.0.6's
(the default suite of PROTOCOL.md).  A failure raises ``shardpsi.PsiError``
(a RuntimeError would carry less).
"""
from __future__ import annotations

import enum
import os
from typing import Iterable, List, Optional, Tuple

from ._core import Party, PsiError, Value, as_bytes, version

__all__ = ["client", "server", "DataStructure", "ServerSetup", "Request", "Response",
           "PsiError", "__version__"]
__version__ = "2.0.6"


def _threads() -> Optional[int]:
    """Threads for a party: SHARDPSI_THREADS, else every core (the point
    of shardpsi); 1 runs one engine on the calling thread."""
    t = os.environ.get("SHARDPSI_THREADS")
    return int(t) if t else None


class DataStructure(enum.IntEnum):
    RAW = 0
    GCS = 1
    BLOOM_FILTER = 2


class _Message:
    """A protocol message held as its bytes, with the protobuf methods
    openmined_psi's messages have."""

    def __init__(self, data: bytes = b""):
        self._data = bytes(data)

    def SerializeToString(self) -> bytes:  # noqa: N802 (OpenMined's name)
        return self._data

    def ParseFromString(self, data: bytes) -> int:  # noqa: N802
        self._data = as_bytes(data, type(self).__name__)
        return len(self._data)

    def __bytes__(self) -> bytes:
        return self._data

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._data == self._data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._data)} bytes)"


class ServerSetup(_Message):
    pass


class Request(_Message):
    pass


class Response(_Message):
    pass


def _party(role: int, key: Optional[bytes], reveal: bool) -> Party:
    t = _threads()
    if t == 1:
        return Party(role, key, "openmined-p256", reveal, None, None)
    return Party(role, key, "openmined-p256", reveal, t or 0, None)


class server:  # noqa: N801 (OpenMined's name)
    """The server party of openmined_psi."""

    def __init__(self, party: Party):
        self._p = party

    @classmethod
    def CreateWithNewKey(cls, reveal_intersection: bool) -> "server":  # noqa: N802
        return cls(_party(2, None, reveal_intersection))

    @classmethod
    def CreateFromKey(cls, key_bytes: bytes, reveal_intersection: bool) -> "server":  # noqa: N802
        return cls(_party(2, key_bytes, reveal_intersection))

    def GetPrivateKeyBytes(self) -> bytes:  # noqa: N802
        return self._p.key()

    def CreateSetupMessage(self, fpr: float, num_client_inputs: int,  # noqa: N802
                           inputs: Iterable[Value],
                           ds: DataStructure = DataStructure.GCS) -> ServerSetup:
        return ServerSetup(self._p.setup(inputs, int(ds), fpr, num_client_inputs)[0])

    def ProcessRequest(self, client_request) -> Response:  # noqa: N802
        return Response(self._p.process_request(client_request))


class client:  # noqa: N801
    """The client party of openmined_psi."""

    def __init__(self, party: Party):
        self._p = party

    @classmethod
    def CreateWithNewKey(cls, reveal_intersection: bool) -> "client":  # noqa: N802
        return cls(_party(1, None, reveal_intersection))

    @classmethod
    def CreateFromKey(cls, key_bytes: bytes, reveal_intersection: bool) -> "client":  # noqa: N802
        return cls(_party(1, key_bytes, reveal_intersection))

    def GetPrivateKeyBytes(self) -> bytes:  # noqa: N802
        return self._p.key()

    def CreateRequest(self, client_inputs: Iterable[Value]) -> Request:  # noqa: N802
        return Request(self._p.request(client_inputs))

    def GetIntersection(self, server_setup, server_response) -> List[int]:  # noqa: N802
        return self._p.intersection(server_setup, server_response)

    def GetIntersectionSize(self, server_setup, server_response) -> int:  # noqa: N802
        return self._p.intersection_size(server_setup, server_response)

    def GetAssociationTable(self, server_setup,  # noqa: N802
                            server_response) -> Tuple[List[int], List[int]]:
        """The association table of a raw setup (§9.6): two lists, the
        client indices and the setup positions they pair with."""
        pairs = self._p.association(server_setup, server_response)
        return [c for c, _ in pairs], [s for _, s in pairs]
