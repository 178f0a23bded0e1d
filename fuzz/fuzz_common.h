/*
 * Helpers shared by the libFuzzer harnesses (fuzz/fuzz_*.c): the fixed keys,
 * the tables of documented error codes, and the checks that abort on a
 * violation.  Header-only (static inline), so that each harness is one
 * file plus the library.
 *
 * The contract checked is psi.h's: every code a call returns is one its
 * "Returns:" line (or the line it refers to) documents, PSI_E_INVALID_ARG
 * never (the calls here are well-formed whatever the bytes), and a failed
 * call leaves *len / *count at 0 and no partial result in the buffer.
 * Codes the arguments rule out are left out of the tables too: for
 * example PSI_E_WRONG_ROLE for an engine of the right role, and
 * PSI_E_BUFFER_TOO_SMALL when the capacity is the one the header calls
 * enough.
 */
#ifndef PSI_FUZZ_COMMON_H
#define PSI_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psi.h"
#include "psi_shard.h"

/* The library's codec and matchers (internal: the harnesses link psi/ statically). */
#include "codec.h"

/* The entry point libFuzzer (or fuzz/driver.c) calls; declared here for
 * -Werror=missing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The keys of the psi.js 2.0.6 vectors, tests/data/openmined-psi-js/ (32 x
 * 07 for the server, 32 x 09 for the client): the seed corpus holds psi.js's
 * setups, requests and responses made with them, so matches are reachable. */
#define FUZZ_SERVER_KEY_BYTE 0x07
#define FUZZ_CLIENT_KEY_BYTE 0x09

/* Fills bytes that a failed call must leave alone (or wipe to zero). */
#define FUZZ_SENTINEL 0xa5

/* Error-code families, for building the per-function tables. */
#define FUZZ_MSG_CODES                                                         \
    PSI_E_MSG_TRUNCATED, PSI_E_MSG_VARINT, PSI_E_MSG_TAG,                     \
        PSI_E_MSG_ONEOF_MISSING, PSI_E_MSG_ONEOF_DOUBLED,                     \
        PSI_E_MSG_ELEMENT_SIZE, PSI_E_MSG_TOO_LARGE, PSI_E_SUITE_MISMATCH
#define FUZZ_POINT_CODES                                                       \
    PSI_E_POINT_LENGTH, PSI_E_POINT_PREFIX, PSI_E_POINT_X_RANGE,              \
        PSI_E_POINT_NOT_ON_CURVE, PSI_E_POINT_IDENTITY, PSI_E_POINT_ENCODING
#define FUZZ_GCS_CODES PSI_E_GCS_HASH_RANGE, PSI_E_GCS_DIV, PSI_E_GCS_STREAM
#define FUZZ_BLOOM_CODES PSI_E_BLOOM_HASHES, PSI_E_BLOOM_BITS, PSI_E_BLOOM_FORMAT

#define FUZZ_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Reports a violation and aborts, so that libFuzzer keeps the input. */
static inline void fuzz_fail(const char *fn, int code, const char *what)
{
    const char *name = psi_error_name(code);

    fprintf(stderr, "fuzz: %s returned %d (%s): %s\n", fn, code,
            name != NULL ? name : "unknown code", what);
    abort();
}

/* Aborts unless cond holds. */
static inline void fuzz_require(int cond, const char *fn, int code, const char *what)
{
    if (!cond)
        fuzz_fail(fn, code, what);
}

/* Aborts unless code is in the table (PSI_OK always is). */
static inline void fuzz_expect_code(const char *fn, int code, const int *allowed, size_t n)
{
    if (code == PSI_OK)
        return;
    for (size_t i = 0; i < n; i++)
        if (allowed[i] == code)
            return;
    fuzz_fail(fn, code, "code not documented for this call");
}

#define FUZZ_EXPECT(fn, code, table) fuzz_expect_code(fn, code, table, FUZZ_COUNT(table))

/* Aborts unless every byte of buf is the sentinel or zero: a failed call
 * leaves no partial result ("nothing written, or wiped"). */
static inline void fuzz_require_untouched(const char *fn, int code, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    for (size_t i = 0; i < len; i++)
        if (p[i] != FUZZ_SENTINEL && p[i] != 0)
            fuzz_fail(fn, code, "failed call left a partial result in the output");
}

/* malloc that never returns NULL (size 0 gives a 1-byte block) and fills
 * the block with the sentinel. */
/* The suite a message names by its header (PROTOCOL.md §16.1): a
 * harness decodes each input with that suite, so the fuzzer reaches every
 * suite's decoder, and checks that the other suites refuse it. */
static inline int fuzz_message_suite(const uint8_t *data, size_t size)
{
    if (size >= PSI_SUITE_HEADER_BYTES && data[0] == 0x7f &&
        (data[1] == PSI_SUITE_P256_SSWU || data[1] == PSI_SUITE_RISTRETTO255))
        return data[1];
    return PSI_SUITE_OPENMINED_P256;
}

/* Bytes of an element of `suite` in a message: tag, length, element. */
static inline size_t fuzz_element_wire_bytes(int suite)
{
    return 2 + psi_suite_element_bytes(suite);
}

static inline void *fuzz_alloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);

    if (p == NULL) {
        fprintf(stderr, "fuzz: out of memory for %zu bytes\n", n);
        abort();
    }
    memset(p, FUZZ_SENTINEL, n > 0 ? n : 1);
    return p;
}

/* An engine of `suite` from the fixed key 32 x key_byte; aborts on failure.  The
 * harnesses create theirs once and keep them for the whole run. */
static inline psi_engine *fuzz_engine(psi_role role, int reveal, uint8_t key_byte, int suite)
{
    uint8_t key[PSI_KEY_BYTES];
    psi_settings s;
    psi_engine *e = NULL;
    int rc;

    memset(key, key_byte, sizeof key);
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    s.suite = (psi_suite)suite; /* 32 x key_byte is a valid key in every suite */
    rc = psi_engine_create_from_key(&e, &s, key, sizeof key);
    if (rc != PSI_OK)
        fuzz_fail("psi_engine_create_from_key", rc, "fixed key refused");
    return e;
}

/* Number of shards the differential checks split the work into: the
 * sharded calls must give the single engine's bytes and codes (§14). */
#define FUZZ_SHARDS 3

/* A psi_shards of FUZZ_SHARDS clones of e on the inline executor (no
 * thread: libFuzzer runs one input at a time); aborts on failure. */
static inline psi_shards *fuzz_shards(const psi_engine *e)
{
    psi_shard_settings s;
    psi_shards *g = NULL;
    int rc;

    psi_shard_settings_default(&s);
    s.threads = 1;
    s.shards = FUZZ_SHARDS;
    rc = psi_shards_create(&g, e, &s);
    if (rc != PSI_OK)
        fuzz_fail("psi_shards_create", rc, "inline executor");
    return g;
}

/* Aborts unless a sharded call agreed with the single engine: the same
 * code and, on success, the same len bytes (a, b) of output. */
static inline void fuzz_require_same(const char *fn, int rc_engine, int rc_shards,
                                     const void *a, const void *b, size_t len_a, size_t len_b)
{
    if (rc_engine == PSI_E_NOMEM || rc_engine == PSI_E_CRYPTO || rc_shards == PSI_E_NOMEM ||
        rc_shards == PSI_E_CRYPTO)
        return;
    if (rc_shards != rc_engine)
        fuzz_fail(fn, rc_shards, "sharded call's code differs from the single engine's");
    if (rc_engine == PSI_OK && (len_a != len_b || (len_a > 0 && memcmp(a, b, len_a) != 0)))
        fuzz_fail(fn, rc_shards, "sharded call's output differs from the single engine's");
}

/* Decodes a Response with the capacity the header calls enough, for the
 * harnesses that only need its elements.  Returns: the code; *elements
 * (malloc'd, freed by the caller, also on failure) and *n. */
static inline int fuzz_decode_response(uint8_t **elements, size_t *n, int suite,
                                       const uint8_t *msg, size_t len)
{
    *n = psi_message_element_bound(suite, len);
    *elements = fuzz_alloc(*n * PSI_ELEMENT_BYTES);
    return psi_response_decode(*elements, n, suite, msg, len);
}

#endif /* PSI_FUZZ_COMMON_H */
