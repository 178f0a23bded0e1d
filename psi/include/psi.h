/*
 * shardpsi: ECDH private set intersection, wire-compatible with OpenMined
 * PSI 2.0.6 (@openmined/psi.js) in its default suite, with two more suites
 * (p256-sswu, ristretto255: PROTOCOL.md §16).  PROTOCOL.md is the
 * specification; section numbers below (§n) refer to it.
 *
 * Global rules of this header:
 *  - Every pointer argument must be non-NULL unless its description says
 *    "may be NULL".  A pointer paired with a count of 0 may be NULL.
 *  - Arguments come in the order: context, outputs, in/out, inputs; every
 *    length follows its buffer.
 *  - Fallible functions return PSI_OK (0) or a negative psi_error;
 *    psi_strerror() turns a code into a message.  Error numbers never change
 *    once released; new ones are only appended.
 *  - Output buffers are passed as (buf, size_t *len): *len holds the capacity
 *    on entry and the number of bytes (or items) written on return.  *len
 *    (and every other scalar output) is set to 0 on entry, before any other
 *    work, and a failed call leaves *len at 0 and no partial result in the
 *    buffer (nothing written, or wiped).  The *_bound() functions give a
 *    capacity that is always enough.
 *  - The library keeps no pointer to caller memory after a call returns and
 *    hands no memory to the caller except opaque objects with their own
 *    *_free function.
 *  - Thread-safety: functions taking `const psi_engine *` may run
 *    concurrently on the same engine; psi_engine_free needs exclusive
 *    access.  Functions without an engine are reentrant.
 *  - Misuse (NULL where not allowed, impossible lengths) returns
 *    PSI_E_INVALID_ARG; a build with -DPSI_ABORT_ON_MISUSE aborts instead.
 */
#ifndef PSI_H
#define PSI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PSI_BUILDING) && defined(__GNUC__)
#define PSI_API __attribute__((visibility("default")))
#else
#define PSI_API
#endif

/* ------------------------------------------------------------------ sizes */

/** A masked element: a compressed P-256 point, `02|03 || x` (§4.1).  Every
 *  array of elements in this API has PSI_ELEMENT_BYTES per element, in
 *  every suite; a ristretto255 element (32 bytes, §16.3) fills the first 32
 *  bytes of its slot and the 33rd is zero. */
#define PSI_ELEMENT_BYTES 33
/** An exported key: the scalar as 32 big-endian bytes (§2.3). */
#define PSI_KEY_BYTES 32
/** Bytes one element takes in a Request or Response (tag, length, point). */
#define PSI_ELEMENT_WIRE_BYTES 35

PSI_API size_t psi_element_bytes(void);
PSI_API size_t psi_key_bytes(void);

/* ----------------------------------------------------------------- suites */

/** The group and hash-to-group of a run (§16).  Both parties must use the
 *  same suite; every message of a suite other than the OpenMined one starts
 *  with a suite header (§16.1), so a message of one suite is refused by
 *  another (PSI_E_SUITE_MISMATCH) and by psi.js. */
typedef enum psi_suite {
    /** OpenMined PSI 2.0.6: P-256, try-and-increment hashing (§3), psi.js's
     *  bytes.  The default. */
    PSI_SUITE_OPENMINED_P256 = 0,
    /** P-256 with RFC 9380 hashing, P256_XMD:SHA-256_SSWU_RO_ (§16.2),
     *  constant time in the value. */
    PSI_SUITE_P256_SSWU = 1,
    /** ristretto255 (RFC 9496) through libsodium (§16.3), 32-byte elements,
     *  constant time in the value. */
    PSI_SUITE_RISTRETTO255 = 2
} psi_suite;

/** Bytes of the header in front of every message of a suite other than
 *  PSI_SUITE_OPENMINED_P256 (§16.1). */
#define PSI_SUITE_HEADER_BYTES 2

/** Returns: the suite's name ("openmined-p256", "p256-sswu",
 *  "ristretto255"), a static string, or NULL for an unknown value. */
PSI_API const char *psi_suite_name(int suite);
/** Out: *suite, the suite named `name` (as psi_suite_name gives it;
 *  PSI_SUITE_OPENMINED_P256 on failure).  Returns: PSI_OK, PSI_E_SUITE
 *  (unknown name, with the detail's field "suite"), PSI_E_INVALID_ARG. */
PSI_API int psi_suite_from_name(psi_suite *suite, const char *name);
/** Returns: the bytes of one element of the suite on the wire (33 for the
 *  P-256 suites, 32 for ristretto255), or 0 for an unknown suite. */
PSI_API size_t psi_suite_element_bytes(int suite);

/* ----------------------------------------------------------------- errors */

typedef enum psi_error {
    PSI_OK = 0,
    PSI_E_INVALID_ARG = -1,        /* caller bug: NULL, bad length, bad enum */
    PSI_E_NOMEM = -2,              /* an allocation failed */
    PSI_E_CRYPTO = -3,             /* OpenSSL or libsodium failed internally */
    PSI_E_BUFFER_TOO_SMALL = -4,   /* output capacity below what is needed */
    PSI_E_KEY_OUT_OF_RANGE = -5,   /* key is 0 or >= group order n (§2.1) */
    PSI_E_WRONG_ROLE = -6,         /* server call on a client engine or back */
    PSI_E_REVEAL_MISMATCH = -7,    /* request's reveal flag differs (§8) */
    PSI_E_REVEAL_DISABLED = -8,    /* intersection asked with reveal off */
    PSI_E_POINT_LENGTH = -9,       /* point is not 33 bytes */
    PSI_E_POINT_PREFIX = -10,      /* point prefix is not 02 or 03 */
    PSI_E_POINT_X_RANGE = -11,     /* point x >= p */
    PSI_E_POINT_NOT_ON_CURVE = -12,/* no curve point has this x */
    PSI_E_POINT_IDENTITY = -13,    /* the point at infinity */
    PSI_E_MSG_TRUNCATED = -14,     /* varint or length runs past the end */
    PSI_E_MSG_VARINT = -15,        /* varint longer than 10 bytes */
    PSI_E_MSG_TAG = -16,           /* field 0, bad wire type, or known field
                                      with the wrong wire type */
    PSI_E_MSG_ONEOF_MISSING = -17, /* ServerSetup names no data structure */
    PSI_E_MSG_ONEOF_DOUBLED = -18, /* ServerSetup names more than one */
    PSI_E_MSG_ELEMENT_SIZE = -19,  /* an encrypted element is not 33 bytes */
    PSI_E_MSG_TOO_LARGE = -20,     /* counts or sizes past what fits */
    PSI_E_FPR = -21,               /* num_client_inputs < 1, or fpr /
                                      num_client_inputs not in (0,1) */
    PSI_E_PARAM_OVERFLOW = -22,    /* GCS hash_range or Bloom size overflows */
    PSI_E_STRUCTURE = -23,         /* unknown data structure value */
    PSI_E_GCS_HASH_RANGE = -24,    /* GCS hash_range < 1 */
    PSI_E_GCS_DIV = -25,           /* GCS div outside [0, 63] */
    PSI_E_GCS_STREAM = -26,        /* GCS bit stream cut inside a value, or a
                                      value >= hash_range */
    PSI_E_BLOOM_HASHES = -27,      /* Bloom num_hash_functions < 1 or
                                      > PSI_BLOOM_K_MAX */
    PSI_E_BLOOM_BITS = -28,        /* Bloom bit array empty */
    PSI_E_SETUP_UNSORTED = -29,    /* raw setup elements not in byte order */
    PSI_E_HASH_TO_CURVE = -30,     /* hash-to-curve found no point (never
                                      expected: probability 2^-512) */
    PSI_E_THREAD = -31,            /* a thread, mutex or condition variable
                                      could not be created (sharding layer,
                                      psi_shard.h) */
    PSI_E_SUITE = -32,             /* unknown suite name or number (§16) */
    PSI_E_SUITE_MISMATCH = -33,    /* a message or setup of another suite
                                      than the engine's or the caller's
                                      (§16.1) */
    PSI_E_POINT_ENCODING = -34,    /* not a canonical ristretto255 encoding
                                      of a group element (§16.3) */
    PSI_E_IO = -35,                /* the caller's sink refused the output
                                      (psi_op_output.sink), or its reader
                                      failed (psi_read_fn) */
    PSI_E_SETUP_MISMATCH = -36,    /* a well-formed ServerSetup that no honest
                                      server of the agreed parameters and
                                      count sends (psi_setup_check) */
    PSI_E_PAYLOAD_FORMAT = -37,    /* a payload table's header: not its
                                      magic, or reserved bytes not zero (§22) */
    PSI_E_PAYLOAD_TRUNCATED = -38, /* a payload table's length is not its
                                      header plus n records (a truncated or
                                      extra record) */
    PSI_E_PAYLOAD_LENGTH = -39,    /* a padded length past PSI_PAYLOAD_MAX,
                                      or an opened record whose length field
                                      exceeds it or whose padding is not zero */
    PSI_E_PAYLOAD_ORDER = -40,     /* payload tags not strictly ascending */
    PSI_E_PAYLOAD_AUTH = -41,      /* a record with a matched tag that does
                                      not decrypt */
    PSI_E_PAYLOAD_DUPLICATE = -42, /* two equal values given payloads */
    PSI_E_BLOOM_FORMAT = -43       /* a Bloom setup of p256-sswu or
                                      ristretto255 not in format 2 (no
                                      format field: the old format 1,
                                      §7.4) */
} psi_error;

/** Returns: a static, NUL-terminated English message for `code`; unknown
 *  codes give "unknown error".  Never NULL.  Thread-safety: reentrant. */
PSI_API const char *psi_strerror(int code);

/** Returns: the code's identifier as a static string, e.g.
 *  "PSI_E_POINT_PREFIX" for PSI_E_POINT_PREFIX and "PSI_OK" for 0, or NULL
 *  for an unknown code.  For logs, bindings and vector files that name
 *  expected errors.  Thread-safety: reentrant. */
PSI_API const char *psi_error_name(int code);

/* ----------------------------------------------------------- error detail */

/** Where a failed call found the bad input.  A call that takes a partner's
 *  bytes or the caller's parameters (every decoder, psi_point_check*, the
 *  engine's batch calls, psi_setup_bound*, psi_suite_from_name, the server and client calls and
 *  the psi_shards_* calls of psi_shard.h) clears this thread's detail when
 *  it starts and, when it fails on bad input, records the field and the
 *  element at fault.  Failures without a place (PSI_E_NOMEM, PSI_E_CRYPTO,
 *  PSI_E_INVALID_ARG, PSI_E_BUFFER_TOO_SMALL, PSI_E_WRONG_ROLE, ...) leave
 *  it clear.  Details never hold key material or partner data, only names
 *  and numbers. */
typedef struct psi_error_detail {
    int code;          /* the failure described; PSI_OK when clear */
    const char *field; /* static name of the message field or argument,
                          e.g. "Request.encrypted_elements"; NULL if none */
    int64_t index;     /* 0-based element index within field, or -1 */
    int64_t offset;    /* byte offset in the message, or -1 */
} psi_error_detail;

/** Out: *d, this thread's detail (code PSI_OK, field NULL, index and offset
 *  -1 when clear).  Thread-safety: each thread has its own detail. */
PSI_API void psi_error_detail_get(psi_error_detail *d);

/** Sets this thread's detail; NULL clears it.  For executors that run a
 *  call on another thread and report its failure on the caller's (the
 *  sharding layer, the wasm worker pool): they read the detail on the
 *  worker and set it here, with the index counted in the caller's input.
 *  `field` must be a static string. */
PSI_API void psi_error_detail_set(const psi_error_detail *d);

/** A buffer always large enough for psi_error_message. */
#define PSI_ERROR_MESSAGE_BYTES 256

/** Writes the message for a failure with `code`: psi_strerror(code),
 *  preceded by the place when this thread's detail describes this code,
 *  e.g. "Request.encrypted_elements[3]: invalid point: prefix byte is not
 *  02 or 03" or "ServerSetup (byte 12): malformed message: a varint or a
 *  length runs past the end".  Out: buf, NUL-terminated, truncated to len
 *  bytes (nothing written when len is 0; buf may then be NULL).  Returns:
 *  the length of the whole message, without the NUL. */
PSI_API size_t psi_error_message(char *buf, size_t len, int code);

/** Makes OpenSSL wipe every block it frees, for the whole process:
 *  OpenSSL 3.0's P-256 multiplication on x86-64 and arm64 frees copies of
 *  the scalar without wiping them, so without this every mask, re-mask and
 *  unmask leaves the key (or its inverse) in freed heap memory
 *  (PROTOCOL.md §12.5).  Installs allocation functions with
 *  CRYPTO_set_mem_functions, which OpenSSL accepts only before its first
 *  allocation: call it first thing in main, before anything uses OpenSSL.
 *  The `shardpsi` command does.  Returns: PSI_OK, or PSI_E_CRYPTO when OpenSSL
 *  has already allocated (nothing changed).  Thread-safety: call once,
 *  before other threads start. */
PSI_API int psi_openssl_wipe_on_free(void);

/* ---------------------------------------------------------------- version */

/** The version of this header, in semantic versioning (README.md,
 *  "Versions and the ABI"): while MAJOR is 0, a MINOR release may change
 *  the API or ABI and then changes the SONAME; a PATCH release never does.
 *  SHARDPSI_VERSION_NUMBER is 0xMMmmpp, for #if comparisons.  The build
 *  refuses to configure when these differ from meson.build's version. */
#define SHARDPSI_VERSION_MAJOR 0
#define SHARDPSI_VERSION_MINOR 1
#define SHARDPSI_VERSION_PATCH 0
#define SHARDPSI_VERSION_STRING "0.1.0"
#define SHARDPSI_VERSION_NUMBER \
    ((SHARDPSI_VERSION_MAJOR << 16) | (SHARDPSI_VERSION_MINOR << 8) | SHARDPSI_VERSION_PATCH)

/** Returns: the version of the library loaded at run time, e.g. "0.1.0", a
 *  static string: SHARDPSI_VERSION_STRING of the header it was built with,
 *  which may differ from the header a program was compiled against. */
PSI_API const char *psi_version(void);

/* ------------------------------------------------------------- arithmetic */

/** Which arithmetic masks, re-masks and unmasks (PROTOCOL.md §21).  Every
 *  choice gives the same bytes; only the speed differs. */
typedef enum psi_arith {
    /** Eight values at a time on AVX-512 IFMA where the CPU has it and the
     *  OS saves its registers, the portable code elsewhere (the default). */
    PSI_ARITH_AUTO = 0,
    /** The portable code only. */
    PSI_ARITH_PORTABLE = 1,
    /** Reported by psi_arith_get when the IFMA code runs; not a choice. */
    PSI_ARITH_IFMA = 2
} psi_arith;

/** Chooses the arithmetic of every engine in the process, for calls that
 *  start afterwards.  The environment variable SHARDPSI_ARITH=portable,
 *  read at the first call that masks, chooses PSI_ARITH_PORTABLE the same
 *  way; this call overrides it.
 *  Returns: PSI_OK, or PSI_E_INVALID_ARG for any other value. */
PSI_API int psi_arith_set(psi_arith arith);

/** Returns: PSI_ARITH_IFMA when the IFMA code runs, else
 *  PSI_ARITH_PORTABLE. */
PSI_API psi_arith psi_arith_get(void);

/* --------------------------------------------------------------- settings */

typedef enum psi_role {
    PSI_ROLE_CLIENT = 1,
    PSI_ROLE_SERVER = 2
} psi_role;

/** Progress callback: `done` of `total` values processed by the current call.
 *  Called from the thread running the call, at most every 1024 values and
 *  once at the end.  If an engine is used from several threads at once, the
 *  callback must be thread-safe. */
typedef void (*psi_progress_fn)(void *arg, uint64_t done, uint64_t total);

typedef struct psi_settings {
    psi_role role;               /* default PSI_ROLE_CLIENT */
    int reveal_intersection;     /* 0 or 1; default 1.  Must equal the
                                    partner's flag (§5). */
    psi_progress_fn progress;    /* may be NULL (default) */
    void *progress_arg;          /* passed to progress */
    psi_suite suite;             /* default PSI_SUITE_OPENMINED_P256 (§16) */
    unsigned char reserved[28];  /* zero; room to grow without an ABI break */
} psi_settings;

/** Fills `s` with the defaults above. */
PSI_API void psi_settings_default(psi_settings *s);

/* ----------------------------------------------------------------- engine */

/** An engine holds one party's secret key (in guarded memory, §2) and its
 *  role.  It is the only object that touches the key. */
typedef struct psi_engine psi_engine;

/** Creates an engine with a fresh uniformly random key in [1, n-1].
 *  Returns: PSI_OK, PSI_E_INVALID_ARG, PSI_E_NOMEM, PSI_E_CRYPTO.
 *  Out: *out, the engine (NULL on failure).  In: s, the settings.
 *  Ownership: the caller frees *out with psi_engine_free. */
PSI_API int psi_engine_create(psi_engine **out, const psi_settings *s);

/** Creates an engine from a known key.  P-256 suites: OpenMined's rule
 *  (§2.1), the bytes are one big-endian integer of any length, accepted if
 *  1 <= k < n, never reduced.  ristretto255 (§16.3): exactly 32 bytes, a
 *  little-endian scalar, accepted if 1 <= k < l (canonical), never reduced.  For tests and known-answer vectors: reusing a key across runs
 *  lets the partner link them.
 *  Returns: PSI_OK, PSI_E_KEY_OUT_OF_RANGE, PSI_E_INVALID_ARG, PSI_E_NOMEM,
 *  PSI_E_CRYPTO.  Out: *out.  In: s; key, key_len (key may be NULL when
 *  key_len is 0, which is out of range).  The library keeps no copy of `key`
 *  outside the engine; wiping the caller's buffer is the caller's job. */
PSI_API int psi_engine_create_from_key(psi_engine **out, const psi_settings *s,
                                       const uint8_t *key, size_t key_len);

/** Creates a second engine with the same key, for another thread, shard or
 *  worker: with the settings `s` (role, reveal flag, suite must be the
 *  engine's, progress callback), or the engine's own when s is NULL.  The
 *  key is copied from guarded memory to guarded memory and never passes
 *  through the caller.  Returns: PSI_OK, PSI_E_INVALID_ARG (also for a bad
 *  role or reveal flag in `s`), PSI_E_NOMEM, PSI_E_CRYPTO.  Ownership: the
 *  caller frees *out with psi_engine_free. */
PSI_API int psi_engine_clone(psi_engine **out, const psi_engine *e, const psi_settings *s);

/** Wipes the key and frees the engine.  NULL is a no-op. */
PSI_API void psi_engine_free(psi_engine *e);

/** Writes the key as exactly PSI_KEY_BYTES bytes: big-endian for the P-256
 *  suites (§2.3), little-endian for ristretto255 (§16.3).
 *  Returns: PSI_OK, PSI_E_INVALID_ARG, PSI_E_BUFFER_TOO_SMALL.
 *  Out: out, *out_len (capacity in, 32 out).  The caller should wipe it
 *  (sodium_memzero) when done. */
PSI_API int psi_engine_export_key(const psi_engine *e, uint8_t *out, size_t *out_len);

/** Returns: the engine's role, or 0 for NULL. */
PSI_API psi_role psi_engine_role(const psi_engine *e);
/** Returns: the engine's reveal flag (0 or 1), or 0 for NULL. */
PSI_API int psi_engine_reveal(const psi_engine *e);
/** Returns: the engine's suite, or PSI_SUITE_OPENMINED_P256 for NULL. */
PSI_API psi_suite psi_engine_suite(const psi_engine *e);

/* --------------------------------------------- batch primitives (§3, §4) */

/** A byte string supplied by the user; data may be NULL when len is 0. */
typedef struct psi_value {
    const uint8_t *data;
    size_t len;
} psi_value;

/** Masks values: out[i] = ser(k * H(values[i])), PSI_ELEMENT_BYTES each,
 *  contiguous, in input order, with the engine suite's H and ser.  The
 *  OpenMined suite's hash-to-curve is variable-time in the value (§3,
 *  §12.4); the other suites' are constant time (§16).  Either role.
 *  Returns: PSI_OK, PSI_E_INVALID_ARG, PSI_E_BUFFER_TOO_SMALL, PSI_E_NOMEM,
 *  PSI_E_CRYPTO.  Out: out, *out_len (capacity >= n * 33 bytes). */
PSI_API int psi_engine_mask(const psi_engine *e, uint8_t *out, size_t *out_len,
                            const psi_value *values, size_t n);

/** Re-masks points received from the partner: out[i] = ser(k * P_i).
 *  Every input point is decoded strictly (psi_point_check with the
 *  engine's suite); the first bad one fails the whole call with its
 *  PSI_E_POINT_* code.
 *  Returns: PSI_OK, any PSI_E_POINT_* code, PSI_E_INVALID_ARG,
 *  PSI_E_BUFFER_TOO_SMALL, PSI_E_NOMEM, PSI_E_CRYPTO.
 *  In: points, n * 33 contiguous bytes. */
PSI_API int psi_engine_remask(const psi_engine *e, uint8_t *out, size_t *out_len,
                              const uint8_t *points, size_t n);

/** Unmasks points: out[i] = ser(k^-1 * P_i); strict decoding and returns
 *  as above. */
PSI_API int psi_engine_unmask(const psi_engine *e, uint8_t *out, size_t *out_len,
                              const uint8_t *points, size_t n);

/** Strictly decodes one partner point of `suite`.  P-256 suites (§4.2):
 *  exactly 33 bytes, prefix 02 or 03, x < p, on the curve; the 1-byte
 *  identity encoding `00` gives PSI_E_POINT_IDENTITY, and the 65-byte 04
 *  forms and hybrid 06/07 forms, which OpenSSL or psi.js accept, are
 *  refused.  ristretto255 (§16.3): exactly 32 bytes, a canonical encoding
 *  of a group element other than the identity.
 *  Returns: PSI_OK, one PSI_E_POINT_* code (PSI_E_POINT_LENGTH,
 *  PSI_E_POINT_ENCODING, PSI_E_POINT_IDENTITY, ...), PSI_E_SUITE (unknown
 *  suite), PSI_E_NOMEM, PSI_E_CRYPTO. */
PSI_API int psi_point_check(int suite, const uint8_t *point, size_t len);

/* -------------------------------------------------------- message sizes */

typedef enum psi_structure {
    PSI_STRUCTURE_RAW = 0,
    PSI_STRUCTURE_GCS = 1,
    PSI_STRUCTURE_BLOOM_FILTER = 2
} psi_structure;

/** Server setup parameters (§7).  fpr is the false-positive rate for the
 *  whole client query, divided by num_client_inputs per element; both are
 *  ignored for PSI_STRUCTURE_RAW. */
typedef struct psi_setup_params {
    psi_structure structure;
    double fpr;
    int64_t num_client_inputs;
} psi_setup_params;

/** The largest num_hash_functions a Bloom setup can have (§7.3): the
 *  sizing formula is k = ceil(-log2(fpr_c)) with fpr_c = fpr /
 *  num_client_inputs a double in (0, 1), so k is largest for the smallest
 *  positive double, the subnormal 2^-1074, where log2 is exact: k = 1074.
 *  Every larger fpr_c gives a smaller or equal k (log2 is monotone), and
 *  the filter's size never limits k (m = 1 at fpr_c = 2^-1074 needs 194
 *  bytes).  psi_setup_parse refuses a Bloom setup with k > this
 *  (PSI_E_BLOOM_HASHES): no honest server sends one. */
#define PSI_BLOOM_K_MAX 1074

/* The sizes below are those of `suite`'s messages (§10, §16.1); every one
 * is 0 (or PSI_E_SUITE) for an unknown suite. */

/** Returns: the size of a Request for n elements with reveal on (2 bytes
 *  less with reveal off), so always enough; 0 if it overflows. */
PSI_API size_t psi_request_bound(int suite, size_t n);
/** Returns: the exact size of a Response for n elements (0 when it
 *  overflows: check n <= SIZE_MAX / 35 first). */
PSI_API size_t psi_response_bound(int suite, size_t n);
/** Returns: an upper bound on the number of elements in a Request or
 *  Response of msg_len bytes (each element takes at least 34 bytes), which
 *  also bounds the intersection and association-table sizes. */
PSI_API size_t psi_message_element_bound(int suite, size_t msg_len);

/** Out: *bound, a capacity always enough for a ServerSetup built with `p`
 *  from n_server values.  Returns: PSI_OK, PSI_E_INVALID_ARG, PSI_E_FPR,
 *  PSI_E_PARAM_OVERFLOW, PSI_E_STRUCTURE, PSI_E_SUITE. */
PSI_API int psi_setup_bound(size_t *bound, int suite, const psi_setup_params *p,
                            size_t n_server);

/* --------------------------------------------- messages in chunks (§10.1) */
/* A Request, a Response or a raw ServerSetup is a head and then one
 * record per element, so it can be written and read in pieces: a message
 * larger than memory, or one still arriving over a network, never has to
 * be held whole.  The whole-message calls below are built from these, so
 * both give the same bytes and the same errors. */

/** The messages made of element records. */
typedef enum psi_message_kind {
    PSI_MESSAGE_REQUEST = 1,
    PSI_MESSAGE_RESPONSE = 2,
    PSI_MESSAGE_SETUP_RAW = 3
} psi_message_kind;

/** A capacity always enough for psi_message_head. */
#define PSI_MESSAGE_HEAD_MAX 16

/** Writes the bytes of a message of `kind` that come before its element
 *  records: the suite header (§16.1); for a Request its reveal field when
 *  reveal is 1; for a raw ServerSetup the RawInfo field's tag and length,
 *  which depend on the n elements that follow (n is ignored otherwise).
 *  The head, then n records written by psi_message_records in any number
 *  of pieces, is byte for byte the message the library writes for the
 *  same elements (psi_client_create_request, psi_server_process_request,
 *  a raw psi_server_create_setup; every plan writes through these).
 *  Returns: PSI_OK, PSI_E_SUITE, PSI_E_INVALID_ARG (bad kind, reveal not 0
 *  or 1), PSI_E_MSG_TOO_LARGE (the RawInfo length, or the whole message,
 *  overflows size_t), PSI_E_BUFFER_TOO_SMALL.
 *  Out: out, *out_len (capacity PSI_MESSAGE_HEAD_MAX is enough).
 *  In: suite; kind; reveal (0 or 1; only a Request carries it); n (the
 *  number of elements of a raw setup). */
PSI_API int psi_message_head(uint8_t *out, size_t *out_len, int suite, psi_message_kind kind,
                             int reveal, uint64_t n);

/** Writes n element records of `kind` (each its tag, its length and the
 *  suite's element bytes, §10) from n PSI_ELEMENT_BYTES slots.  For a raw
 *  setup the records of all the pieces together must be in byte order
 *  (psi_setup_parse refuses them otherwise); this call does not check it.
 *  Returns: as psi_message_head.
 *  Out: out, *out_len (capacity n * (2 + psi_suite_element_bytes(suite))).
 *  In: suite, kind; elements, n * PSI_ELEMENT_BYTES bytes. */
PSI_API int psi_message_records(uint8_t *out, size_t *out_len, int suite,
                                psi_message_kind kind, const uint8_t *elements, size_t n);

/** A decoder of a Request or Response fed its bytes as they arrive.  It
 *  holds at most one element record and a tag of the message, whatever
 *  the message's size and whatever lengths its fields claim.  It is the
 *  only decoder of these messages: psi_request_decode and
 *  psi_response_decode run it over the whole message. */
typedef struct psi_reader psi_reader;

/** Creates a reader for one message of `kind` (PSI_MESSAGE_REQUEST or
 *  PSI_MESSAGE_RESPONSE) in `suite`.
 *  Returns: PSI_OK, PSI_E_SUITE, PSI_E_INVALID_ARG, PSI_E_NOMEM.
 *  Out: *out (NULL on failure).  Ownership: the caller frees *out with
 *  psi_reader_free. */
PSI_API int psi_reader_create(psi_reader **out, int suite, psi_message_kind kind);

/** Feeds the next len bytes of the message.  Writes the complete elements
 *  found into `elements` and sets *used to the bytes taken.  It stops
 *  early only when an element is complete and the capacity is full: then
 *  *used < len, and the caller calls again with the rest (bytes + *used)
 *  and room for more.  The bytes of a field cut by the end of the chunk
 *  are kept inside the reader (at most one element record plus a tag);
 *  an unknown length-delimited field, or an element field of a wrong
 *  length, is skipped without being held, however long.
 *  Returns: PSI_OK; the codes psi_request_decode or
 *  psi_response_decode give for the same whole message
 *  (PSI_E_SUITE_MISMATCH, PSI_E_MSG_VARINT, PSI_E_MSG_TAG,
 *  PSI_E_MSG_ELEMENT_SIZE) with the same detail: the field, the element
 *  index counted in the whole message, the byte offset from the message's
 *  start; PSI_E_INVALID_ARG (also after a successful psi_reader_end).
 *  After an error every later call returns the same error and detail.
 *  Out: elements, *count (capacity in elements in, the number written
 *  out; on failure 0, and the elements this call wrote are wiped, those
 *  of earlier calls are the caller's); *used (0 on failure).
 *  In: bytes, len (bytes may be NULL when len is 0). */
PSI_API int psi_reader_feed(psi_reader *r, uint8_t *elements, size_t *count, size_t *used,
                            const uint8_t *bytes, size_t len);

/** Ends the message: every byte has been fed.
 *  Returns: PSI_OK; PSI_E_MSG_TRUNCATED when the bytes stopped inside a
 *  field, and PSI_E_SUITE_MISMATCH inside the suite header, with the
 *  whole decoder's code and detail for the bytes fed; an earlier error of
 *  the reader; PSI_E_INVALID_ARG.  Calling it again gives the same result.
 *  Out: *reveal (the Request's flag, 0 or 1; 0 for a Response), *total
 *  (the elements of the whole message); both 0 on failure. */
PSI_API int psi_reader_end(psi_reader *r, int *reveal, uint64_t *total);

/** Wipes and frees a reader.  NULL is a no-op. */
PSI_API void psi_reader_free(psi_reader *r);

/* ------------------------------------------------------------ the server */

/** Builds the ServerSetup message (§7) from the server's values.
 *  perm may be NULL; if given it must hold n entries and receives, for the
 *  raw structure, the sorting permutation: perm[j] = index in `values` of
 *  the element at setup position j (stable: equal masked values keep input
 *  order, §7.1, §9.6).  For GCS and Bloom perm is left untouched.
 *  Returns: PSI_OK, PSI_E_WRONG_ROLE, PSI_E_FPR, PSI_E_PARAM_OVERFLOW,
 *  PSI_E_STRUCTURE, PSI_E_BUFFER_TOO_SMALL, PSI_E_INVALID_ARG, PSI_E_NOMEM,
 *  PSI_E_CRYPTO.  Out: out, *out_len (capacity from psi_setup_bound). */
PSI_API int psi_server_create_setup(const psi_engine *e, uint8_t *out, size_t *out_len,
                                    size_t *perm, const psi_setup_params *p,
                                    const psi_value *values, size_t n);

/** Answers a Request (§8): re-masks each element in order; if the reveal
 *  flag is off the response is sorted by bytes.
 *  Returns: PSI_OK, PSI_E_WRONG_ROLE, PSI_E_REVEAL_MISMATCH, any PSI_E_MSG_*
 *  or PSI_E_POINT_* code, PSI_E_BUFFER_TOO_SMALL, PSI_E_NOMEM, PSI_E_CRYPTO.
 *  Out: out, *out_len (capacity psi_response_bound of
 *  psi_message_element_bound(suite, request_len) is enough). */
PSI_API int psi_server_process_request(const psi_engine *e, uint8_t *out, size_t *out_len,
                                       const uint8_t *request, size_t request_len);

/* ------------------------------------------------------------ the client */

/** Builds a Request (§6): the masked values in input order, duplicates kept,
 *  with the engine's reveal flag.  Out: capacity psi_request_bound(suite, n). */
PSI_API int psi_client_create_request(const psi_engine *e, uint8_t *out, size_t *out_len,
                                      const psi_value *values, size_t n);

/** Computes the intersection (§9): indices into the response (= into the
 *  client's request when reveal is on), in OpenMined's order for each
 *  structure (raw: by matching ciphertext; GCS: by hash; Bloom: ascending).
 *  Returns: PSI_OK, PSI_E_WRONG_ROLE, PSI_E_REVEAL_DISABLED, any PSI_E_MSG_*,
 *  PSI_E_POINT_*, PSI_E_GCS_*, PSI_E_BLOOM_*, PSI_E_SETUP_UNSORTED code,
 *  PSI_E_BUFFER_TOO_SMALL, PSI_E_NOMEM, PSI_E_CRYPTO.
 *  Out: out, *out_count (capacity in items:
 *  psi_message_element_bound(suite, response_len) is enough). */
PSI_API int psi_client_get_intersection(const psi_engine *e, size_t *out, size_t *out_count,
                                        const uint8_t *setup, size_t setup_len,
                                        const uint8_t *response, size_t response_len);

/** Counts the intersection; works with reveal on or off (§9).
 *  Out: *count.  Errors as psi_client_get_intersection, without
 *  PSI_E_REVEAL_DISABLED and PSI_E_BUFFER_TOO_SMALL. */
PSI_API int psi_client_get_intersection_size(const psi_engine *e, size_t *count,
                                             const uint8_t *setup, size_t setup_len,
                                             const uint8_t *response, size_t response_len);

/* ---------------------------------------------- association table (§9.6) */

/** One matched pair.  server_index is a setup position as returned by
 *  psi_client_get_association, a server input index after
 *  psi_association_map. */
typedef struct psi_pair {
    size_t client_index;
    size_t server_index;
} psi_pair;

/** Computes the association table for a raw setup: each matching client
 *  index with the setup position of its partner, each setup element used at
 *  most once, ordered by setup position (ties by client index).  Needs
 *  reveal on.  Returns: as psi_client_get_intersection, plus
 *  PSI_E_STRUCTURE when the setup is not raw.
 *  Out: out, *out_count (capacity psi_message_element_bound(suite, response_len)). */
PSI_API int psi_client_get_association(const psi_engine *e, psi_pair *out, size_t *out_count,
                                       const uint8_t *setup, size_t setup_len,
                                       const uint8_t *response, size_t response_len);

/** Maps setup positions to server input indices with the permutation from
 *  psi_server_create_setup, then reorders the pairs by server index (ties by
 *  client index).  In-Out: pairs.  In: perm, n_perm.
 *  Returns: PSI_OK, PSI_E_INVALID_ARG (a position >= n_perm). */
PSI_API int psi_association_map(psi_pair *pairs, size_t n_pairs,
                                const size_t *perm, size_t n_perm);


/* ---------------------------------------------- plans of steps (§14, §19) */
/* Every message operation is written once, as a plan: psi_plan_begin checks
 * the arguments, decodes the input message and cuts the work into slices;
 * each slice is one pure step (an engine call on a contiguous part of the
 * input, psi_step_run) that any executor may run on any thread, worker or
 * process, with any engine holding the key; psi_plan_finish applies the
 * merge rule of §14 and encodes the result.  The message calls above are a
 * plan of one slice run inline (psi_op_run with no executor); psi_shard.h
 * runs the slices on a thread pool, the wasm package on Web Workers and
 * shardpsi-mpi on MPI ranks (§19).  Nothing outside the library repeats a
 * check, a sort order, a merge rule or an encoding. */

/** The operations a plan runs. */
typedef enum psi_op {
    PSI_OP_SETUP = 1,             /* server: values -> ServerSetup (§7) */
    PSI_OP_REQUEST = 2,           /* client: values -> Request (§6) */
    PSI_OP_RESPONSE = 3,          /* server: Request -> Response (§8) */
    PSI_OP_INTERSECTION = 4,      /* client: ServerSetup, Response -> indices (§9) */
    PSI_OP_INTERSECTION_SIZE = 5, /* client: -> their number */
    PSI_OP_ASSOCIATION = 6,       /* client: -> pairs, raw setup (§9.6) */
    PSI_OP_STEP = 7               /* either: one step over the whole input,
                                     its elements (and indices) as output */
} psi_op;

/** The kinds of step.  The _SORT steps also sort their slice by bytes,
 *  stably, and give each element's input index (counted in the whole
 *  input); the plan merges the sorted slices in (bytes, index) order. */
typedef enum psi_step_kind {
    PSI_STEP_MASK = 1,        /* values -> masked elements */
    PSI_STEP_MASK_SORT = 2,   /* raw setup */
    PSI_STEP_REMASK = 3,      /* partner points -> re-masked (response) */
    PSI_STEP_UNMASK = 4,      /* response points -> unmasked (match) */
    PSI_STEP_REMASK_SORT = 5, /* response with reveal off (§14.3) */
    PSI_STEP_UNMASK_SORT = 6  /* match against a raw setup (§14.4) */
} psi_step_kind;

/** Most slices a plan may have. */
#define PSI_PLAN_MAX_SLICES 4096
/** Elements a plan's serial merge handles between two calls of its
 *  progress callback. */
#define PSI_PLAN_TICK 4096

/** Reads `len` bytes at `offset` of a message held outside memory (a file,
 *  through pread).  Returns: 0 when all len bytes were read, else non-zero
 *  (the call reading then returns PSI_E_IO).  Called from the thread of
 *  that call, so a setup matched from several threads calls it from each. */
typedef int (*psi_read_fn)(void *arg, uint64_t offset, uint8_t *buf, size_t len);

/** What to run.  Unused fields must be zero. */
typedef struct psi_op_args {
    psi_op op;
    const psi_value *values;   /* SETUP, REQUEST, STEP with a MASK kind:
                                  n_values values */
    size_t n_values;           /* also the input count of an external plan */
    const uint8_t *message;    /* RESPONSE: the Request; client ops: the
                                  Response; STEP with a point kind: points,
                                  n_values * PSI_ELEMENT_BYTES bytes */
    size_t message_len;
    const uint8_t *setup;      /* client ops: the ServerSetup */
    size_t setup_len;          /* its bytes (also with setup_read) */
    psi_setup_params params;   /* SETUP */
    psi_step_kind step;        /* STEP */
    size_t slices;             /* slices to cut; 0 means 1 */
    const size_t *slice_counts;/* may be NULL: the cut of §14.1; else
                                  `slices` counts adding up to the input
                                  count, for executors that hold the input
                                  cut their own way (shardpsi-mpi's ranks) */
    int external;              /* 1: the executor holds the inputs (values
                                  and message are NULL; n_values is the
                                  input count; a RESPONSE's reveal flag is
                                  then the executor's to check), runs the
                                  steps on them and hands the outputs to
                                  finish through psi_plan_source */
    psi_progress_fn progress;  /* may be NULL: called by finish during its
                                  serial merge with done = total every
                                  PSI_PLAN_TICK elements (so a caller can
                                  send keepalives) */
    void *progress_arg;
    psi_read_fn setup_read;    /* client ops, may be NULL: with setup NULL,
                                  the ServerSetup of setup_len bytes is read
                                  through this, as psi_setup_parse_read
                                  reads it (a raw setup in windows, never
                                  whole), until the plan is freed */
    void *setup_read_arg;
    uint64_t setup_max_held;   /* with setup_read, may be 0 (no limit): a
                                  GCS or Bloom setup, which the plan holds
                                  whole, longer than this many bytes is
                                  refused before it is read, as
                                  psi_setup_parse_read refuses it */
    unsigned char reserved[24 - sizeof(psi_read_fn) - sizeof(void *)];
} psi_op_args;

/** Where a message is written in pieces (psi_op_output.sink): len bytes,
 *  in order.  Returns: 0, or non-zero to stop (the call then returns
 *  PSI_E_IO). */
typedef int (*psi_sink_fn)(void *arg, const uint8_t *bytes, size_t len);

/** Where an operation's result goes.  Capacities in, sizes out; unused
 *  fields are ignored. */
typedef struct psi_op_output {
    uint8_t *bytes;     /* SETUP, REQUEST, RESPONSE: the message; STEP: the
                           elements (n * PSI_ELEMENT_BYTES) */
    size_t len;         /* capacity of bytes in, bytes written out (also
                           with a sink) */
    psi_sink_fn sink;   /* may be NULL: SETUP, REQUEST, RESPONSE write the
                           message to sink in pieces (PROTOCOL.md §10.1)
                           instead of into bytes, so a message of any size
                           can go to a file or a socket through a 64 KiB
                           buffer: a raw setup, a request and a response
                           are streamed as they are merged; GCS and Bloom
                           setups are built whole (§10.1), then written */
    void *sink_arg;
    size_t *perm;       /* may be NULL: SETUP raw: perm[j] = input index of
                           setup element j (§9.6); STEP _SORT kinds: each
                           element's input index (n entries) */
    size_t *indices;    /* INTERSECTION */
    psi_pair *pairs;    /* ASSOCIATION */
    size_t count;       /* capacity of indices or pairs in, items out;
                           INTERSECTION_SIZE: the size */
} psi_op_output;

/** A plan in progress.  Thread-safety: psi_plan_run may run concurrently
 *  for distinct slices; every other call needs exclusive access. */
typedef struct psi_plan psi_plan;

/** One slice's step: an engine call on count inputs from offset. */
typedef struct psi_step {
    psi_step_kind kind;
    size_t offset;           /* index of the slice's first input in the whole */
    size_t count;            /* inputs in the slice */
    const psi_value *values; /* MASK kinds: count values (NULL: external) */
    const uint8_t *points;   /* point kinds: count * 33 bytes (NULL: external) */
} psi_step;

/** Begins an operation: every check of the message call of the same
 *  operation, in its order (arguments, role, reveal, parameters, setup
 *  parsing, message decoding), then the cut into slices.  Records this
 *  thread's error detail on failure.  Returns: PSI_OK or the message
 *  call's error.  Ownership: the caller frees *out with psi_plan_free; the
 *  plan borrows args->values until it is freed and keeps no other pointer
 *  to caller memory. */
PSI_API int psi_plan_begin(psi_plan **out, const psi_engine *e, const psi_op_args *args);

/** Wipes and frees a plan.  NULL is a no-op. */
PSI_API void psi_plan_free(psi_plan *p);

/** Returns: the number of slices (0 for NULL). */
PSI_API size_t psi_plan_slices(const psi_plan *p);

/** Out: *s, slice k's step, its inputs pointing into the plan (NULL for an
 *  external plan).  Returns: PSI_OK, PSI_E_INVALID_ARG (k out of range). */
PSI_API int psi_plan_step(const psi_plan *p, psi_step *s, size_t k);

/** Runs one step on `e` (any engine with the key; no threads): the engine
 *  call of its kind, then for the _SORT kinds the stable byte sort with
 *  each element's input index.  Out: out (s->count * PSI_ELEMENT_BYTES
 *  bytes, wiped on failure), perm (s->count entries for the _SORT kinds,
 *  else may be NULL), *detail (may be NULL): where the step failed, the
 *  index counted in the whole input.  Returns: as psi_engine_mask,
 *  psi_engine_remask or psi_engine_unmask. */
PSI_API int psi_step_run(const psi_engine *e, uint8_t *out, size_t *perm,
                         psi_error_detail *detail, const psi_step *s);

/** Runs slice k of the plan on `e` and keeps its output and outcome in
 *  the plan.  Returns: the step's code (also kept for finish). */
PSI_API int psi_plan_run(psi_plan *p, const psi_engine *e, size_t k);

/** Stores the outcome of slice k run elsewhere (psi_step_run in another
 *  worker or process): code and, on failure, the detail's index; on
 *  success its output and, for _SORT kinds, its indices (copied).  An
 *  external plan takes only failures here (its outputs come from its
 *  source), so that finish reports them as the single engine would.
 *  Returns: PSI_OK, PSI_E_INVALID_ARG. */
PSI_API int psi_plan_put(psi_plan *p, size_t k, int code, int64_t index,
                         const uint8_t *out, const size_t *perm);

/** Where an external plan's finish gets the steps' outputs: the next chunk
 *  of slice k's output (*count > 0 elements, and their input indices for
 *  _SORT kinds, else *index may be NULL), valid until the next call for
 *  slice k.  Slices are asked in order, or interleaved for a merge; the
 *  plan never asks past a slice's count.  Returns: PSI_OK or an error
 *  code, which finish returns. */
typedef int (*psi_plan_source_fn)(void *arg, size_t k, const uint8_t **elements,
                                  const size_t **index, size_t *count);

/** Sets the source of an external plan.  Returns: PSI_OK,
 *  PSI_E_INVALID_ARG (not external). */
PSI_API int psi_plan_source(psi_plan *p, psi_plan_source_fn fn, void *arg);

/** Where a raw setup's permutation goes in pieces (psi_plan_perm_sink):
 *  the input indices of the next n setup elements, in setup order.
 *  Returns: 0, or non-zero to stop (finish then returns PSI_E_IO). */
typedef int (*psi_perm_sink_fn)(void *arg, const size_t *index, size_t n);

/** Sends a SETUP plan's permutation (§7.1, §9.6) to `fn` in pieces of at
 *  most PSI_PLAN_TICK indices as finish writes the records, instead of
 *  into psi_op_output.perm (then ignored), so a permutation of any length
 *  goes to a file through a fixed buffer.  A structure other than raw has
 *  no permutation and never calls fn.  What fn took before a failure is the
 *  caller's to discard.  Returns: PSI_OK, PSI_E_INVALID_ARG (not a SETUP
 *  plan, or fn NULL). */
PSI_API int psi_plan_perm_sink(psi_plan *p, psi_perm_sink_fn fn, void *arg);

/** Sends an INTERSECTION plan's matched input indices to `fn` in pieces
 *  of at most PSI_PLAN_TICK as finish finds them, instead of into
 *  psi_op_output.indices (then ignored; psi_op_output.count gets their
 *  number), so an intersection of any size goes to a file through a fixed
 *  buffer.  The pieces hold the same indices as the whole call's result,
 *  in another order: against a raw setup, the order of the unmasked
 *  elements' bytes (§9.1); against a GCS or Bloom setup, ascending (each
 *  element's match depends on it alone, so finish matches each chunk of a
 *  slice as it comes and never gathers the elements, §20).  What fn took
 *  before a failure is the caller's to discard.  Returns: PSI_OK,
 *  PSI_E_INVALID_ARG (not an INTERSECTION plan, or fn NULL). */
PSI_API int psi_plan_match_sink(psi_plan *p, psi_perm_sink_fn fn, void *arg);

/** Where an association table goes in pieces (psi_plan_pair_sink): the
 *  next n pairs (client index, setup position), in setup order.
 *  Returns: 0, or non-zero to stop (finish then returns PSI_E_IO). */
typedef int (*psi_pair_sink_fn)(void *arg, const psi_pair *pairs, size_t n);

/** Sends an ASSOCIATION plan's pairs to `fn` in pieces of at most
 *  PSI_PLAN_TICK as finish finds them, instead of into psi_op_output.pairs
 *  (then ignored; psi_op_output.count gets their number), so a table of
 *  any size goes to a file through a fixed buffer.  The pieces hold the
 *  whole call's pairs in its order (setup position ascending, §9.6), so
 *  a caller maps the positions through the server's permutation read in
 *  order.  What fn took before a failure is the caller's to discard.
 *  Returns: PSI_OK, PSI_E_INVALID_ARG (not an ASSOCIATION plan, or fn
 *  NULL). */
PSI_API int psi_plan_pair_sink(psi_plan *p, psi_pair_sink_fn fn, void *arg);

/** Returns: the capacity finish needs: message bytes (SETUP, REQUEST,
 *  RESPONSE), element bytes (STEP), or items (client ops). */
PSI_API size_t psi_plan_bound(const psi_plan *p);

/** Finishes: the lowest-numbered failing slice's error (with its detail,
 *  named as the message call names it), else the merge rule of §14 and
 *  the encoding into `o` (its buffer, or its sink).  A failed finish
 *  leaves no partial result in o's buffers (what a sink has taken is the
 *  caller's to discard).  Returns: PSI_OK or the message call's error,
 *  PSI_E_IO (the sink refused). */
PSI_API int psi_plan_finish(psi_plan *p, psi_op_output *o);

/** An executor: runs every slice of p (psi_plan_run, or psi_step_run
 *  elsewhere and psi_plan_put).  Returns: PSI_OK, or an error of its own
 *  (PSI_E_THREAD, ...); the steps' errors are the plan's. */
typedef int (*psi_exec_fn)(void *arg, psi_plan *p);

/** A whole operation: begin, the slices through `exec` (NULL: inline on
 *  e, in order), finish into o.  Checks o's capacities where the message
 *  call does (a request's before masking).  Returns: as the message call. */
PSI_API int psi_op_run(const psi_engine *e, const psi_op_args *args, psi_op_output *o,
                       psi_exec_fn exec, void *exec_arg);

/* ------------------------------------------- reading messages (§10) */

/** Decodes a Request of `suite` into contiguous PSI_ELEMENT_BYTES slots (a
 *  ristretto255 element fills the first 32 bytes of its slot).  Only the
 *  encoding is checked here (PSI_E_MSG_*); points are checked when used.
 *  A message of another suite (§16.1) gives PSI_E_SUITE_MISMATCH, here and
 *  in every call that reads a message; an unknown suite PSI_E_SUITE.
 *  Returns: PSI_OK, PSI_E_SUITE, PSI_E_SUITE_MISMATCH, PSI_E_MSG_TRUNCATED,
 *  PSI_E_MSG_VARINT, PSI_E_MSG_TAG, PSI_E_MSG_ELEMENT_SIZE,
 *  PSI_E_BUFFER_TOO_SMALL (more elements than the capacity),
 *  PSI_E_INVALID_ARG.  Out: elements, *count (capacity in elements in,
 *  number decoded out; psi_message_element_bound(suite, len) is enough);
 *  *reveal (0 or 1). */
PSI_API int psi_request_decode(uint8_t *elements, size_t *count, int *reveal, int suite,
                               const uint8_t *msg, size_t len);

/** Decodes a Response of `suite`, as above, with the same returns. */
PSI_API int psi_response_decode(uint8_t *elements, size_t *count, int suite,
                                const uint8_t *msg, size_t len);

/** A decoded and validated ServerSetup. */
typedef struct psi_setup psi_setup;

/** Decodes and validates a ServerSetup of `suite` (§10, §9.4, §16.1): raw
 *  elements of the suite's length and in byte order; GCS hash_range >= 1,
 *  div in [0, 63], the whole stream decodable; Bloom at least one hash
 *  function and a non-empty bit array.  For callers that check or describe
 *  a setup before a round (the client calls parse it themselves).
 *  Returns: PSI_OK, PSI_E_SUITE, PSI_E_SUITE_MISMATCH, any PSI_E_MSG_*,
 *  PSI_E_GCS_*, PSI_E_BLOOM_* code, PSI_E_SETUP_UNSORTED, PSI_E_NOMEM,
 *  PSI_E_INVALID_ARG.  Ownership: the caller frees *out with
 *  psi_setup_free; it keeps no pointer to msg.  Thread-safety: read-only
 *  after parsing. */
PSI_API int psi_setup_parse(psi_setup **out, int suite, const uint8_t *msg, size_t len);

/** Checks that `msg` is a ServerSetup of `suite` that an honest server
 *  holding at most n_server values sends for the agreed parameters `p`
 *  (structure, fpr, num_client_inputs), byte for byte (PROTOCOL.md §9.7):
 *  the canonical encoding (no unknown, repeated or overlong fields) of
 *  p->structure, and
 *   - raw: exactly n_server elements (fpr and num_client_inputs ignored);
 *   - Bloom: num_hash_functions equal to the k of §7.3 for p, and a bit
 *     array of n_bytes(p, ns) bytes for some ns in [0, n_server];
 *   - GCS: at most n_server distinct values (refused while counting,
 *     before any is stored), hash_range(p, ns) and the div of §7.2 for
 *     some ns in [count, n_server], and a stream ending in the byte of
 *     its last value, without repeated values.
 *  Monotone for gcs and Bloom: a setup that passes for n_server passes
 *  for every larger count.  Parses msg as psi_setup_parse does, first.
 *  Records this thread's error detail on failure.
 *  Returns: PSI_OK; PSI_E_SETUP_MISMATCH; the codes of psi_setup_parse;
 *  PSI_E_FPR, PSI_E_PARAM_OVERFLOW (gcs, Bloom: p itself is impossible
 *  even for no server values), PSI_E_STRUCTURE (unknown p->structure),
 *  PSI_E_INVALID_ARG.  Thread-safety: reentrant. */
PSI_API int psi_setup_check(int suite, const psi_setup_params *p, uint64_t n_server,
                            const uint8_t *msg, size_t len);

/** psi_setup_parse of a ServerSetup of `len` bytes read through `fn` (a
 *  file), with the same codes and details.  A raw setup is read in windows
 *  of a fixed size: its elements are checked as they pass and not kept,
 *  and every match against the setup reads them again through fn, in
 *  order, so the setup holds a window whatever its size (PROTOCOL.md
 *  §20).  A GCS or Bloom setup is held as psi_setup_parse holds it, so its
 *  message is read whole, unless it is longer than max_held bytes: then it
 *  is refused before it is read (PSI_E_MSG_TOO_LARGE, detail field
 *  "ServerSetup.gcs" or "ServerSetup.bloom_filter"; UINT64_MAX: no limit).
 *  The setup borrows fn and arg until it is freed, and the bytes must not
 *  change: a match that finds a raw setup's records changed returns
 *  PSI_E_IO.  Returns: as psi_setup_parse, and PSI_E_IO (fn failed).
 *  Thread-safety: the setup is read-only; each match reads through fn from
 *  its own thread with its own window. */
PSI_API int psi_setup_parse_read(psi_setup **out, int suite, psi_read_fn fn, void *arg,
                                 uint64_t len, uint64_t max_held);

/** psi_setup_check of a ServerSetup of `len` bytes read through fn as
 *  psi_setup_parse_read reads it (a raw setup in windows; a GCS or Bloom
 *  setup longer than max_held refused before it is read).  Returns: as
 *  psi_setup_check, and PSI_E_IO, PSI_E_MSG_TOO_LARGE as
 *  psi_setup_parse_read. */
PSI_API int psi_setup_check_read(int suite, const psi_setup_params *p, uint64_t n_server,
                                 psi_read_fn fn, void *arg, uint64_t len, uint64_t max_held);

/** Frees a setup.  NULL is a no-op. */
PSI_API void psi_setup_free(psi_setup *s);

/** Returns: the setup's structure. */
PSI_API psi_structure psi_setup_structure(const psi_setup *s);

/** Returns: the number of elements of a raw setup, 0 for other structures. */
PSI_API size_t psi_setup_raw_count(const psi_setup *s);

/** Returns: the elements of a raw setup parsed whole (psi_setup_parse):
 *  psi_setup_raw_count(s) slots of PSI_ELEMENT_BYTES, in the setup's byte
 *  order, owned by s and valid until psi_setup_free; NULL for a GCS or
 *  Bloom setup, an empty one, or one read through a psi_read_fn
 *  (psi_setup_parse_read).  They are the server's masked elements (§9.1),
 *  what psi_payload_table_build takes. */
PSI_API const uint8_t *psi_setup_raw_elements(const psi_setup *s);

/* ---- Payloads: the server's columns for matched values (PROTOCOL.md §22) ----
 *
 * The server publishes beside its setup a payload table: for each of its
 * values x, a tag and an AEAD ciphertext of its payload, both derived from
 * its masked element ser(k * H(x)) and a salt of the table, ordered by tag,
 * every payload padded to one length.  A client that ends the round holding
 * the same element for one of its values (its unmasked response element)
 * finds the tag and opens the payload; for any other value it learns
 * nothing but the table's size. */

#define PSI_PAYLOAD_HEAD_BYTES 56   /* magic 8, suite 1, zero 3, L 4, n 8, salt 32 */
#define PSI_PAYLOAD_SALT_BYTES 32
#define PSI_PAYLOAD_TAG_BYTES 16
#define PSI_PAYLOAD_MAX ((size_t)1 << 20) /* the largest padded length L */
#define PSI_PAYLOAD_NONE SIZE_MAX   /* psi_payload_open: no record has the tag */

/** Returns: the bytes of a table of n records of padded length pad_len
 *  (PSI_PAYLOAD_HEAD_BYTES + n * (36 + pad_len)), or 0 when pad_len exceeds
 *  PSI_PAYLOAD_MAX or the size overflows. */
PSI_API size_t psi_payload_table_bytes(size_t n, size_t pad_len);

/** Builds the payload table of n server values of `suite` from their masked
 *  elements (PSI_ELEMENT_BYTES each, as the server's psi_engine_mask or a
 *  MASK step of any executor writes them: ser(k * H(x)), never another
 *  party's) and their payloads.  pad_len: the padded length L, at least the
 *  longest payload (0: the longest payload's length); salt:
 *  PSI_PAYLOAD_SALT_BYTES, NULL for a fresh random one (a table a round; a
 *  given salt is for known-answer tests).  Returns: PSI_OK,
 *  PSI_E_PAYLOAD_LENGTH (a payload longer than pad_len, detail index: the
 *  value; or L past PSI_PAYLOAD_MAX), PSI_E_PAYLOAD_DUPLICATE (two equal
 *  elements, so two equal values; detail index: the second in input
 *  order), PSI_E_BUFFER_TOO_SMALL (*out_len is then the size needed),
 *  PSI_E_MSG_TOO_LARGE, PSI_E_SUITE, PSI_E_INVALID_ARG, PSI_E_NOMEM,
 *  PSI_E_CRYPTO.  Out: out, *out_len (capacity psi_payload_table_bytes(n, L)
 *  in, bytes written out). */
PSI_API int psi_payload_table_build(int suite, uint8_t *out, size_t *out_len,
                                    const uint8_t *elements, const psi_value *payloads,
                                    size_t n, size_t pad_len, const uint8_t *salt);

/** Checks a payload table of `suite`: its header, its length and the
 *  strict order of its tags (the records' ciphertexts are checked only
 *  when opened).  Returns: PSI_OK, PSI_E_PAYLOAD_FORMAT,
 *  PSI_E_SUITE_MISMATCH, PSI_E_PAYLOAD_TRUNCATED, PSI_E_PAYLOAD_LENGTH,
 *  PSI_E_PAYLOAD_ORDER (detail index: the first record out of order),
 *  PSI_E_SUITE, PSI_E_INVALID_ARG.  Out: *n (records), *pad_len (L); either
 *  may be NULL. */
PSI_API int psi_payload_table_check(int suite, const uint8_t *table, size_t len, size_t *n,
                                    size_t *pad_len);

/** Opens the payloads of k unmasked elements (a client's, for its matched
 *  values: PSI_ELEMENT_BYTES each, as psi_engine_unmask writes them) from
 *  a table, after checking it as psi_payload_table_check does.  Payload i
 *  goes to out + i * L, its length to lens[i], or PSI_PAYLOAD_NONE when no
 *  record has its tag (a false positive of a GCS or Bloom match; against a
 *  raw setup, a table that does not cover the setup).  A record with the
 *  tag that does not decrypt, or whose length field or padding is wrong,
 *  fails the call.  Returns: PSI_OK, the codes of psi_payload_table_check,
 *  PSI_E_PAYLOAD_AUTH and PSI_E_PAYLOAD_LENGTH (detail index: the element),
 *  PSI_E_BUFFER_TOO_SMALL (out_len < k * L), PSI_E_INVALID_ARG,
 *  PSI_E_CRYPTO.  On failure lens is zeroed, and out too once the table has
 *  passed its checks (before, nothing is written). */
PSI_API int psi_payload_open(int suite, const uint8_t *table, size_t len,
                             const uint8_t *elements, size_t k, uint8_t *out, size_t out_len,
                             size_t *lens);

/* ---- A payload table in parts (PROTOCOL.md §22.4) ----
 *
 * For a table too large to hold: the header, then the records, a batch at
 * a time.  A builder makes the header (n and L known first), seals each
 * batch's records, and orders all of them by tag (an external sort past
 * memory: equal adjacent tags are two equal values); a reader checks the
 * header, then each batch's order against the record before it, and opens
 * the record whose tag an element derives.  The whole-table calls above are
 * these parts composed in memory, so both give the same bytes and codes. */

/* A record's bytes beyond the padded payload: tag 16, length 4, AEAD tag 16. */
#define PSI_PAYLOAD_RECORD_EXTRA 36

/** Makes a table's header: suite, L = pad_len, n records, salt
 *  (PSI_PAYLOAD_SALT_BYTES; NULL for a fresh random one).  Returns: PSI_OK,
 *  PSI_E_PAYLOAD_LENGTH (pad_len past PSI_PAYLOAD_MAX), PSI_E_MSG_TOO_LARGE
 *  (the table's size past 2^64), PSI_E_SUITE, PSI_E_INVALID_ARG.  Out: head. */
PSI_API int psi_payload_head_make(int suite, uint8_t head[PSI_PAYLOAD_HEAD_BYTES], uint64_t n,
                                  size_t pad_len, const uint8_t *salt);

/** Checks a header as psi_payload_table_check does, in its order, given
 *  the first len bytes of a table (len below PSI_PAYLOAD_HEAD_BYTES:
 *  PSI_E_PAYLOAD_TRUNCATED); the table's length, 56 + n * (36 + L), is the
 *  caller's to check.  Returns: PSI_OK or the header codes of
 *  psi_payload_table_check.  Out: *n, *pad_len (either may be NULL). */
PSI_API int psi_payload_head_check(int suite, const uint8_t *head, size_t len, uint64_t *n,
                                   size_t *pad_len);

/** Seals the records of k values under a header made by
 *  psi_payload_head_make: record i (36 + L bytes, at out + i * (36 + L))
 *  for elements + i * PSI_ELEMENT_BYTES (the server's masked elements) and
 *  payloads[i], in the elements' order: the caller orders the records by
 *  tag (their first PSI_PAYLOAD_TAG_BYTES).  Returns: PSI_OK,
 *  PSI_E_PAYLOAD_LENGTH (a payload longer than L; detail index: i), the
 *  header's codes, PSI_E_NOMEM, PSI_E_CRYPTO, PSI_E_INVALID_ARG. */
PSI_API int psi_payload_seal(int suite, const uint8_t head[PSI_PAYLOAD_HEAD_BYTES],
                             const uint8_t *elements, const psi_value *payloads, size_t k,
                             uint8_t *out);

/** The tags the records of k elements have under a header (a client's
 *  unmasked elements, to look their records up; a builder's, to order
 *  them): tag i at tags + i * PSI_PAYLOAD_TAG_BYTES.  Returns: PSI_OK, the
 *  header's codes, PSI_E_INVALID_ARG. */
PSI_API int psi_payload_tags(int suite, const uint8_t head[PSI_PAYLOAD_HEAD_BYTES],
                             const uint8_t *elements, size_t k, uint8_t *tags);

/** Checks that count consecutive records of a checked header's table,
 *  records [first, first + count), are in strictly ascending order of
 *  their tags, the first of them after prev (the record before them; NULL
 *  for the table's first).  Returns: PSI_OK or PSI_E_PAYLOAD_ORDER (detail
 *  index: the record's number in the table, offset: its offset),
 *  PSI_E_INVALID_ARG. */
PSI_API int psi_payload_records_check(const uint8_t head[PSI_PAYLOAD_HEAD_BYTES],
                                      const uint8_t *prev, const uint8_t *records,
                                      size_t count, uint64_t first);

/** Opens the record an element's tag found (36 + L bytes of a table with
 *  this header): its payload to out (L bytes; NULL when L is 0) and its
 *  length to *len.  A record of another tag does not authenticate.
 *  Returns: PSI_OK, PSI_E_PAYLOAD_AUTH, PSI_E_PAYLOAD_LENGTH (a length field
 *  past L or padding that is not zero), the header's codes, PSI_E_NOMEM,
 *  PSI_E_INVALID_ARG; on failure *len is PSI_PAYLOAD_NONE. */
PSI_API int psi_payload_record_open(int suite, const uint8_t head[PSI_PAYLOAD_HEAD_BYTES],
                                    const uint8_t *element, const uint8_t *record,
                                    uint8_t *out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* PSI_H */
