"""The typed layer over the C library: errors, values, and a party (one
engine, or shards of it on a thread pool) whose calls each take a whole
batch.  Both public APIs (shardpsi and shardpsi.openmined) are built on it.
"""
from __future__ import annotations

import sys
import threading
from array import array
from itertools import accumulate
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from ._native import ffi, lib, shard

SUITES = {"openmined-p256": 0, "p256-sswu": 1, "ristretto255": 2}
STRUCTURES = {"raw": 0, "gcs": 1, "bloom_filter": 2, "bloom": 2}

Value = Union[str, bytes, bytearray, memoryview]


class PsiError(Exception):
    """A failure of the C library: its code (a negative int), the code's
    name (``PSI_E_...``) and where it found the bad input (``field``,
    ``index``, ``offset``; None when not known)."""

    def __init__(self, code: int, what: str = ""):
        self.code = code
        self.name = ffi.string(lib.psi_error_name(code)).decode() if lib.psi_error_name(code) else "?"
        self.reason = ffi.string(lib.psi_strerror(code)).decode()
        d = ffi.new("psi_error_detail *")
        lib.psi_error_detail_get(d)
        described = d.code == code
        self.field: Optional[str] = ffi.string(d.field).decode() if described and d.field else None
        self.index: Optional[int] = d.index if described and d.index >= 0 else None
        self.offset: Optional[int] = d.offset if described and d.offset >= 0 else None
        where = []
        if self.field:
            where.append(self.field)
        if self.index is not None:
            where.append(f"index {self.index}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        text = f"{what + ': ' if what else ''}{self.reason} ({self.name})"
        if where:
            text += " at " + ", ".join(where)
        super().__init__(text)


def check(rc: int, what: str = "") -> None:
    if rc != 0:
        raise PsiError(rc, what)


def suite_number(suite: Union[str, int]) -> int:
    if isinstance(suite, int) and suite in SUITES.values():
        return suite
    if isinstance(suite, str) and suite in SUITES:
        return SUITES[suite]
    raise ValueError(f"unknown suite {suite!r}: one of {', '.join(SUITES)}")


def structure_number(structure: Union[str, int]) -> int:
    if isinstance(structure, int) and structure in (0, 1, 2):
        return structure
    if isinstance(structure, str) and structure.lower() in STRUCTURES:
        return STRUCTURES[structure.lower()]
    raise ValueError(f"unknown structure {structure!r}: raw, gcs or bloom_filter")


def as_bytes(msg, what: str) -> bytes:
    """A message: bytes-like, or an object with SerializeToString (the
    OpenMined-style wrappers)."""
    if hasattr(msg, "SerializeToString"):
        msg = msg.SerializeToString()
    if isinstance(msg, (bytes, bytearray, memoryview)):
        return bytes(msg)
    raise TypeError(f"{what} must be bytes, not {type(msg).__name__}")


class Values:
    """A batch of values as the C library takes it: one buffer holding every
    value's bytes and an array of (pointer, length) records into it, built
    without a C call per value.  str is encoded as UTF-8.

    A one-dimensional numpy array of fixed-width bytes (dtype ``S``) is
    taken without a copy: the records point into the array itself, each
    value its item without the trailing NUL bytes (numpy's own reading of
    an ``S`` item).  A numpy array of str (dtype ``U``) is encoded in one
    vectorised pass.  Anything else (a list, a pandas Series, a generator)
    is read once, each value encoded (str) or taken (bytes) and gathered
    into the one buffer."""

    def __init__(self, inputs: Iterable[Value]):
        if isinstance(inputs, (str, bytes, bytearray, memoryview)):
            raise TypeError("values must be an iterable of str or bytes, not one "
                            f"{type(inputs).__name__}")
        dtype = getattr(inputs, "dtype", None)
        if getattr(dtype, "kind", None) in ("S", "U") and getattr(inputs, "ndim", 0) == 1 \
                and hasattr(inputs, "__array_interface__"):
            self._fixed(inputs)
            return
        items = inputs if isinstance(inputs, (list, tuple)) else list(inputs)
        n = self.n = len(items)
        types = set(map(type, items))
        blob = None
        if types <= {str}:
            joined = "".join(items)
            if joined.isascii():  # UTF-8 is the text itself: one join, one encode
                blob, lens = joined.encode("ascii") + b"\0", list(map(len, items))
            del joined
        if blob is None:
            if types <= {bytes}:
                parts = list(items)
            elif types <= {str}:
                parts = [v.encode("utf-8") for v in items]
            else:
                parts = []
                for i, v in enumerate(items):
                    if isinstance(v, str):
                        parts.append(v.encode("utf-8"))
                    elif isinstance(v, (bytes, bytearray, memoryview)):
                        parts.append(bytes(v))
                    else:
                        raise TypeError(f"value {i} is a {type(v).__name__}, not str or bytes")
            lens = list(map(len, parts))
            parts.append(b"\0")
            blob = b"".join(parts)
            del parts
        self.longest = max(lens, default=0)
        self._buf = ffi.from_buffer(blob)
        base = int(ffi.cast("uintptr_t", self._buf))
        # numpy builds the records faster, but only where it is already
        # loaded: importing it would cost more than it saves below a few
        # million values.
        np = sys.modules.get("numpy")
        if np is None:
            flat = [0] * (2 * n)
            flat[0::2] = list(accumulate(lens[:-1], initial=base)) if n else []
            flat[1::2] = lens
            self._set_records(array("Q", flat))
            return
        ln = np.fromiter(lens, dtype=np.uint64, count=n)
        recs = np.empty(2 * n, dtype=np.uint64)
        if n:
            recs[0] = base
            np.cumsum(ln[:-1], out=recs[2::2])
            recs[2::2] += np.uint64(base)
        recs[1::2] = ln
        self._set_records(recs)

    def _fixed(self, arr) -> None:
        import numpy as np  # present: arr is a numpy array

        a = np.ascontiguousarray(arr)
        if a.dtype.kind == "U":
            a = np.char.encode(a, "utf-8")
        n = self.n = int(a.shape[0])
        lens = np.char.str_len(a).astype(np.uint64) if n else np.zeros(0, np.uint64)
        self.longest = int(lens.max()) if n else 0
        self._arr = a  # the values' bytes, pointed into
        self._buf = ffi.from_buffer(a.view(np.uint8).reshape(-1) if n else b"\0")
        base = int(ffi.cast("uintptr_t", self._buf))
        recs = np.empty(2 * n, dtype=np.uint64)
        recs[0::2] = base + np.arange(n, dtype=np.uint64) * np.uint64(a.dtype.itemsize)
        recs[1::2] = lens
        self._set_records(recs)

    def _set_records(self, recs) -> None:
        self._recs = recs
        self._recs_c = ffi.from_buffer(recs)  # kept alive with the pointer into it
        self.ptr = ffi.cast("psi_value *", self._recs_c) if self.n else ffi.NULL


class Party:
    """One side's key: an engine, and with threads or shards given, shards
    of it on a thread pool (psi_shard.h).  Calls on a party are serialised
    by a lock (shards take one call at a time); different parties run in
    parallel."""

    def __init__(self, role: int, key: Optional[bytes], suite: Union[str, int], reveal: bool,
                 threads: Optional[int], shards: Optional[int]):
        self.suite = suite_number(suite)
        self.reveal = bool(reveal)
        self._lock = threading.Lock()
        st = ffi.new("psi_settings *")
        lib.psi_settings_default(st)
        st.role = role
        st.reveal_intersection = 1 if reveal else 0
        st.suite = self.suite
        out = ffi.new("psi_engine **")
        if key is None:
            check(lib.psi_engine_create(out, st), "cannot make a key")
        else:
            key = as_bytes(key, "key")
            check(lib.psi_engine_create_from_key(out, st, key, len(key)), "the key")
        self._engine = ffi.gc(out[0], lib.psi_engine_free)
        self._shards = None
        if threads is not None or shards is not None:
            ss = ffi.new("psi_shard_settings *")
            shard.psi_shard_settings_default(ss)
            ss.threads = 0 if threads is None else int(threads)
            ss.shards = 0 if shards is None else int(shards)
            g = ffi.new("psi_shards **")
            check(shard.psi_shards_create(g, self._engine, ss), "cannot start the shards")
            self._shards = ffi.gc(g[0], shard.psi_shards_free)

    @property
    def shard_count(self) -> int:
        return int(shard.psi_shards_count(self._shards)) if self._shards is not None else 1

    def key(self) -> bytes:
        buf = ffi.new("uint8_t[32]")
        n = ffi.new("size_t *", 32)
        check(lib.psi_engine_export_key(self._engine, buf, n))
        out = bytes(ffi.buffer(buf, n[0]))
        ffi.memmove(buf, b"\0" * 32, 32)
        return out

    def _call(self, name: str, *args):
        """The sharded call when there are shards, else the engine's."""
        if self._shards is not None:
            return getattr(shard, "psi_shards_" + name)(self._shards, *args)
        return getattr(lib, "psi_" + name)(self._engine, *args)

    def setup(self, values: Iterable[Value], structure, fpr: float, num_client_inputs: int,
              with_perm: bool = False) -> Tuple[bytes, Optional[List[int]]]:
        v = values if isinstance(values, Values) else Values(values)
        p = setup_params(structure, fpr, num_client_inputs)
        cap = ffi.new("size_t *", _setup_bound(self.suite, p, v.n))
        out = ffi.new("uint8_t[]", max(cap[0], 1))
        perm = ffi.new("size_t[]", max(v.n, 1)) if with_perm else ffi.NULL
        with self._lock:
            check(self._call("server_create_setup", out, cap, perm, p, v.ptr, v.n),
                  "cannot build the setup")
        return bytes(ffi.buffer(out, cap[0])), (list(perm[0:v.n]) if with_perm else None)

    def process_request(self, request) -> bytes:
        req = as_bytes(request, "request")
        cap = ffi.new("size_t *", lib.psi_response_bound(
            self.suite, lib.psi_message_element_bound(self.suite, len(req))))
        out = ffi.new("uint8_t[]", max(cap[0], 1))
        with self._lock:
            check(self._call("server_process_request", out, cap, req, len(req)),
                  "cannot answer the request")
        return bytes(ffi.buffer(out, cap[0]))

    def request(self, values: Iterable[Value]) -> bytes:
        v = values if isinstance(values, Values) else Values(values)
        cap = ffi.new("size_t *", lib.psi_request_bound(self.suite, v.n))
        out = ffi.new("uint8_t[]", max(cap[0], 1))
        with self._lock:
            check(self._call("client_create_request", out, cap, v.ptr, v.n),
                  "cannot build the request")
        return bytes(ffi.buffer(out, cap[0]))

    def intersection(self, setup, response) -> List[int]:
        s, r = as_bytes(setup, "setup"), as_bytes(response, "response")
        cap = lib.psi_message_element_bound(self.suite, len(r))
        out = ffi.new("size_t[]", max(cap, 1))
        count = ffi.new("size_t *", cap)
        with self._lock:
            check(self._call("client_get_intersection", out, count, s, len(s), r, len(r)),
                  "cannot compute the intersection")
        return list(out[0:count[0]])

    def intersection_size(self, setup, response) -> int:
        s, r = as_bytes(setup, "setup"), as_bytes(response, "response")
        count = ffi.new("size_t *")
        with self._lock:
            check(self._call("client_get_intersection_size", count, s, len(s), r, len(r)),
                  "cannot count the intersection")
        return int(count[0])

    def association(self, setup, response,
                    permutation: Optional[Sequence[int]] = None) -> List[Tuple[int, int]]:
        s, r = as_bytes(setup, "setup"), as_bytes(response, "response")
        cap = lib.psi_message_element_bound(self.suite, len(r))
        out = ffi.new("psi_pair[]", max(cap, 1))
        count = ffi.new("size_t *", cap)
        with self._lock:
            check(self._call("client_get_association", out, count, s, len(s), r, len(r)),
                  "cannot compute the association table")
        k = count[0]
        if permutation is not None:
            perm = ffi.new("size_t[]", [int(x) for x in permutation] or [0])
            check(lib.psi_association_map(out, k, perm, len(permutation)),
                  "the permutation")
        return [(int(out[i].client_index), int(out[i].server_index)) for i in range(k)]

    def payload_table(self, values: Iterable[Value], payloads: Iterable[Value],
                      pad_len: int = 0, salt: Optional[bytes] = None) -> bytes:
        """The payload table of the server's values and their payloads
        (PROTOCOL.md §22): the values masked with this party's key, then
        sealed; pad_len 0 pads to the longest payload."""
        v = values if isinstance(values, Values) else Values(values)
        p = payloads if isinstance(payloads, Values) else Values(payloads)
        if p.n != v.n:
            raise ValueError(f"{p.n} payloads for {v.n} values: one payload a value")
        if not isinstance(pad_len, int) or pad_len < 0:
            raise ValueError("pad_len must be an int >= 0")
        if salt is not None:
            salt = as_bytes(salt, "salt")
            if len(salt) != 32:
                raise ValueError("salt must be 32 bytes (None: a fresh one)")
        L = pad_len or p.longest
        cap = ffi.new("size_t *", payload_table_size(v.n, L))
        if cap[0] == 0:
            raise ValueError(f"the padded length {L} is past the largest, {PAYLOAD_MAX}, or "
                             f"a table of {v.n} records of it cannot be addressed")
        out = ffi.new("uint8_t[]", cap[0])
        s_ptr = salt if salt is not None else ffi.NULL
        with self._lock:
            if self._shards is not None:
                rc = shard.psi_shards_payload_table_build(self._shards, out, cap, v.ptr, p.ptr,
                                                          v.n, pad_len, s_ptr)
            else:
                el_len = ffi.new("size_t *", v.n * ELEMENT_BYTES)
                el = ffi.new("uint8_t[]", max(el_len[0], 1))
                rc = lib.psi_engine_mask(self._engine, el, el_len, v.ptr, v.n)
                if rc == 0:
                    rc = lib.psi_payload_table_build(self.suite, out, cap, el, p.ptr, v.n,
                                                     pad_len, s_ptr)
        check(rc, "cannot build the payload table")
        return bytes(ffi.buffer(out, cap[0]))

    def open_payloads(self, table, response, indices: Sequence[int]) -> List[Optional[bytes]]:
        """The payloads of the client's matched values (``indices`` into its
        request, as the intersection gives them) from the server's table:
        each response element unmasked again and its record opened.  None
        for an index whose element has no record (a GCS or Bloom false
        positive); a record that does not open is a PsiError."""
        t, r = as_bytes(table, "payload table"), as_bytes(response, "response")
        cap = lib.psi_message_element_bound(self.suite, len(r))
        elements = ffi.new("uint8_t[]", max(cap, 1) * ELEMENT_BYTES)
        count = ffi.new("size_t *", cap)
        check(lib.psi_response_decode(elements, count, self.suite, r, len(r)), "the response")
        idx = [int(i) for i in indices]
        k = len(idx)
        bad = next((i for i in idx if not 0 <= i < count[0]), None)
        if bad is not None:
            raise ValueError(f"index {bad} is not one of the response's {count[0]} elements")
        L = payload_head_check(self.suite, t)  # the whole table: psi_payload_open
        whole = ffi.buffer(elements, count[0] * ELEMENT_BYTES)
        picked = b"".join(whole[i * ELEMENT_BYTES:(i + 1) * ELEMENT_BYTES] for i in idx)
        un_len = ffi.new("size_t *", k * ELEMENT_BYTES)
        un = ffi.new("uint8_t[]", max(un_len[0], 1))
        out = ffi.new("uint8_t[]", max(k * L, 1))
        lens = ffi.new("size_t[]", max(k, 1))
        with self._lock:
            if k:
                rc = (shard.psi_shards_unmask(self._shards, un, un_len, picked, k)
                      if self._shards is not None else
                      lib.psi_engine_unmask(self._engine, un, un_len, picked, k))
                check(rc, "cannot unmask the matches")
            check(lib.psi_payload_open(self.suite, t, len(t), un, k, out, k * L, lens),
                  "cannot open the payloads")
        return [None if lens[i] == _PAYLOAD_NONE else bytes(ffi.buffer(out + i * L, lens[i]))
                for i in range(k)]


ELEMENT_BYTES = 33          # PSI_ELEMENT_BYTES: the stride of masked elements
PAYLOAD_MAX = 1 << 20      # PSI_PAYLOAD_MAX: the largest padded length L
_PAYLOAD_NONE = (1 << 64) - 1 if ffi.sizeof("size_t") == 8 else (1 << 32) - 1


def payload_table_size(n: int, pad_len: int) -> int:
    """The bytes of a payload table of n records padded to pad_len (0 when
    pad_len is past PAYLOAD_MAX or the size overflows)."""
    return int(lib.psi_payload_table_bytes(n, pad_len))


def payload_table_check(suite: int, table) -> Tuple[int, int]:
    """(records, padded length L) of a payload table, after the checks of
    PROTOCOL.md §22 (PsiError otherwise)."""
    t = as_bytes(table, "payload table")
    n, L = ffi.new("size_t *"), ffi.new("size_t *")
    check(lib.psi_payload_table_check(suite, t, len(t), n, L), "the payload table")
    return int(n[0]), int(L[0])


def payload_head_check(suite: int, table) -> int:
    """The padded length L of a payload table, from its header alone
    (psi_payload_head_check: PsiError for a bad header); the records are
    checked by whatever reads them."""
    t = as_bytes(table, "payload table")
    L = ffi.new("size_t *")
    check(lib.psi_payload_head_check(suite, t, len(t), ffi.NULL, L), "the payload table")
    return int(L[0])


def setup_params(structure, fpr: float, num_client_inputs: int):
    p = ffi.new("psi_setup_params *")
    p.structure = structure_number(structure)
    p.fpr = float(fpr)
    p.num_client_inputs = int(num_client_inputs)
    return p


def setup_bound(suite: int, structure, fpr: float, num_client_inputs: int,
                n_server: int) -> int:
    """The largest setup of these parameters (PSI_E_PARAM_OVERFLOW, PSI_E_FPR
    as PsiError when they are impossible)."""
    return _setup_bound(suite, setup_params(structure, fpr, num_client_inputs), n_server)


def _setup_bound(suite: int, params, n_server: int) -> int:
    """setup_bound() of parameters already built by setup_params()."""
    cap = ffi.new("size_t *")
    check(lib.psi_setup_bound(cap, suite, params, n_server), "the setup's parameters")
    return int(cap[0])


def setup_check(suite: int, structure, fpr: float, num_client_inputs: int, n_server: int,
                setup) -> None:
    """Refuses (PsiError) a setup that no honest server of at most n_server
    values sends for these parameters (PROTOCOL.md §9.7)."""
    s = as_bytes(setup, "setup")
    check(lib.psi_setup_check(suite, setup_params(structure, fpr, num_client_inputs),
                              n_server, s, len(s)),
          "the server's setup is not one of the agreed parameters")


def version() -> str:
    return ffi.string(lib.psi_version()).decode()
