/* What the parts of test_codec share (test_codec_internal.c holds main;
 * codec_vectors.c, codec_errors.c and codec_malformed.c the rest): the
 * vectors, hex and random helpers, the malformed-message table (test_chunks
 * uses it too) and the test cases main runs. */
#ifndef PSI_TEST_CODEC_COMMON_H
#define PSI_TEST_CODEC_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "setup.h"

#define EB PSI_ELEMENT_BYTES

/* ------------------------------------------------------------ vectors */

extern const char SMALL_REQUEST[];
extern const char SMALL_RESPONSE[];
extern const char SMALL_SETUP_RAW[];
extern const char SMALL_SETUP_GCS[];
extern const char SMALL_SETUP_BLOOM[];
extern const char JS_REQUEST[];
extern const char JS_SETUP_RAW[];
extern const char JS_SETUP_GCS[];
extern const char JS_SETUP_BLOOM[];
extern const char EDGE_RAW_A[];
extern const char EDGE_BLOOM_EMPTY[];

/* Synthetic 33-byte elements for hand-made messages. */
#define X32 "1111111111111111111111111111111111111111111111111111111111111111"
#define EL_A "02" X32
#define EL_B "03" X32
#define VARINT_MINUS_1 "ffffffffffffffffff01"

/* ------------------------------------------------------------ helpers */

uint8_t *hex_alloc(const char *hex, size_t *len);
void assert_hex_equal(const uint8_t *got, size_t got_len, const char *hex);
/* xorshift64*, seeded by main: reproducible from the printed seed. */
extern uint64_t rng_state;
uint64_t rng_next(void);
void rng_fill(uint8_t *p, size_t n);
uint64_t env_u64(const char *name, uint64_t dflt);
int cmp_element(const void *a, const void *b);
uint8_t *raw_elements(const char *hex, size_t *n);
psi_setup *parse_hex(const char *hex, int expect);

/* ---------------------------------------------------------- test cases */

/* codec_vectors.c */
void test_codec_reference_requests_responses(void **state);
void test_codec_reference_setups_parse(void **state);
void test_codec_reference_setups_encode(void **state);
void test_codec_allocation_failures(void **state);

/* codec_errors.c */
void test_codec_encode_errors(void **state);
void test_codec_encode_buffer_too_small(void **state);
void test_codec_decode_buffer_too_small(void **state);
void test_codec_null_args_encoders(void **state);
void test_codec_null_args_decoders(void **state);

/* codec_malformed.c; its table is also fed in pieces by test_chunks.c. */
enum decoder { DEC_REQUEST, DEC_RESPONSE, DEC_SETUP };
/* A malformed (or barely valid) message of the OpenMined suite and the
 * code its decoder must return. */
typedef struct malformed_case {
    const char *name;
    enum decoder decoder;
    const char *hex;
    int expect;
} malformed_case;
extern const malformed_case codec_malformed_cases[];
extern const size_t codec_malformed_count;
void test_codec_malformed_table(void **state);
void test_codec_unknown_fields_skipped(void **state);
void test_codec_scalar_rules(void **state);
void test_codec_damaged_messages(void **state);

#endif
