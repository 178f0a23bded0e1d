/* test_structures, GCS (PROTOCOL.md §7.2, §9.2-§9.4): encoding, the hash,
 * building, decoding and its validation, the size bound, and matching. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gcs.h"
#include "structures_common.h"

/* end_to_end_20x50's GCS stream (SERVER50_HEX; div 10, hash_range 100000). */
static const char GCS50_HEX[] =
    "be50d8afb912200dfed30a4831c918a0c1ccc50b0dc948ce03701d1e841c3a8a"
    "f3a938493837d20961c3be83d4be96b8d8fb42082afb02bc0b8b428ca27083da"
    "c799181e0493c90c520452aa408205";

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts v and drops repeats; returns the new count. */
static size_t sort_unique(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[i] != v[m - 1])
            v[m++] = v[i];
    return m;
}

/* ------------------------------------------------------- GCS encoding */

/* Encodes hash values directly and compares with the expected stream. */
static void check_encode(const uint64_t *in, size_t n, int32_t want_div, const char *hex)
{
    uint64_t *v = malloc((n + 1) * sizeof *v);
    assert_non_null(v);
    if (n > 0)
        memcpy(v, in, n * sizeof *v);
    uint8_t bits[64];
    size_t len = sizeof bits;
    int32_t div = -1;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, v, n), PSI_OK);
    assert_int_equal(div, want_div);
    assert_bytes_hex(bits, len, hex);
    free(v);
}

void test_structures_gcs_encode_known(void **state)
{
    (void)state;
    static const uint64_t seven[] = {7};
    static const uint64_t four[] = {100, 0, 10, 1}; /* sorted by the encoder */
    static const uint64_t s11[] = {2757, 458, 1010, 1624, 2090};
    static const uint64_t dup7[] = {7, 7};
    static const uint64_t dups[] = {9, 3, 20, 3, 9, 3};
    check_encode(seven, 1, 2, "0e"); /* OpenMined golomb_test */
    check_encode(four, 4, 4, "614c5001");
    check_encode(s11, 5, 9, "958b4233a5bb09");
    check_encode(dup7, 2, 1, "18"); /* avg counts both copies */
    check_encode(dups, 6, 1, "4660");
    check_encode(NULL, 0, 0, "");
    static const uint64_t zero[] = {0};
    check_encode(zero, 1, 0, "01"); /* prob 1: log2(0) path gives div 0 */
}

void test_structures_gcs_encode_capacity(void **state)
{
    (void)state;
    uint64_t v[] = {2757, 458, 1010, 1624, 2090};
    uint8_t bits[7] = {0};
    size_t len = 6;
    int32_t div = 5;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, v, 5), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(len, 0);
    assert_int_equal(div, 0);
    len = 7;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, v, 5), PSI_OK);
    assert_int_equal(len, 7);
    /* A lone value whose avg makes 1 - prob round to 1: +inf div. */
    uint64_t huge[] = {UINT64_C(1) << 60};
    len = 7;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, huge, 1), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(len, 0);
    /* A long unary quotient does not fit a small buffer. */
    uint64_t run[64] = {0};
    run[63] = 1000;
    len = 7;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, run, 64), PSI_E_BUFFER_TOO_SMALL);
    uint64_t bad[] = {(uint64_t)INT64_MAX};
    len = 7;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, bad, 1), PSI_E_INVALID_ARG);
}

void test_structures_gcs_hash_known(void **state)
{
    (void)state;
    size_t n;
    uint8_t *e = unhex_elements(SERVER5_HEX, &n);
    static const uint64_t want[] = {458, 1624, 1010, 2757, 2090};
    for (size_t i = 0; i < n; i++)
        assert_int_equal(psi_gcs_hash(e + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES, 3599), want[i]);
    assert_int_equal(psi_gcs_hash(e, PSI_ELEMENT_BYTES, 1), 0);
    free(e);
}

/* Builds from hex elements and checks div and the stream. */
static void check_build(const char *elements_hex, int64_t hr, int32_t want_div,
                        const char *want_hex)
{
    size_t n, len;
    int32_t div;
    uint8_t *e = unhex_elements(elements_hex, &n);
    uint8_t *bits = gcs_build_checked(&div, &len, hr, e, n);
    assert_int_equal(div, want_div);
    assert_bytes_hex(bits, len, want_hex);
    free(bits);
    free(e);
}

void test_structures_gcs_build_known(void **state)
{
    (void)state;
    check_build(SERVER5_HEX, 3599, 9, "958b4233a5bb09");
    check_build(SERVER50_HEX, 100000, 10, GCS50_HEX);
    check_build(ELEM_A_HEX, 2, 0, "01");
    char twice[2 * sizeof ELEM_A_HEX];
    snprintf(twice, sizeof twice, "%s%s", ELEM_A_HEX, ELEM_A_HEX);
    check_build(twice, 400, 7, "a403");
    check_build("", 10000, 0, "");
}

/* ------------------------------------------------------- GCS decoding */

/* Decodes hex and compares with the expected values. */
static void check_decode(int64_t hr, int32_t div, const char *hex, const uint64_t *want,
                         size_t n_want)
{
    size_t len, count = 99;
    uint8_t *bits = unhex(hex, &len);
    uint64_t *v = (uint64_t *)bits; /* any non-NULL value: must be reset */
    assert_int_equal(psi_gcs_decode(&v, &count, hr, div, bits, len), PSI_OK);
    assert_int_equal(count, n_want);
    if (n_want == 0)
        assert_null(v);
    for (size_t i = 0; i < n_want; i++)
        assert_int_equal(v[i], want[i]);
    psi_free(v);
    free(bits);
}

static void check_decode_fails(int64_t hr, int32_t div, const char *hex, int want_rc)
{
    size_t len, count = 99;
    uint8_t *bits = unhex(hex, &len);
    uint64_t *v = (uint64_t *)bits;
    assert_int_equal(psi_gcs_decode(&v, &count, hr, div, bits, len), want_rc);
    assert_null(v);
    assert_int_equal(count, 0);
    free(bits);
}

void test_structures_gcs_decode_known(void **state)
{
    (void)state;
    static const uint64_t s11[] = {458, 1010, 1624, 2090, 2757};
    static const uint64_t seven[] = {7};
    static const uint64_t four[] = {0, 1, 10, 100};
    check_decode(3599, 9, "958b4233a5bb09", s11, 5);
    check_decode(8, 2, "0e", seven, 1);
    check_decode(101, 4, "614c5001", four, 4);
    check_decode(10000, 0, "", NULL, 0);
    check_decode(10000, 0, "000000", NULL, 0); /* only padding */
    check_decode(INT64_MAX, 63, "", NULL, 0);
}

void test_structures_gcs_decode_rejects_params(void **state)
{
    (void)state;
    check_decode_fails(0, 2, "0e", PSI_E_GCS_HASH_RANGE);
    check_decode_fails(-1, 2, "0e", PSI_E_GCS_HASH_RANGE);
    check_decode_fails(INT64_MIN, 2, "", PSI_E_GCS_HASH_RANGE);
    check_decode_fails(0, 64, "0e", PSI_E_GCS_HASH_RANGE); /* range first */
    check_decode_fails(8, -1, "0e", PSI_E_GCS_DIV);
    check_decode_fails(8, 64, "0e", PSI_E_GCS_DIV);
    check_decode_fails(8, INT32_MIN, "", PSI_E_GCS_DIV);
    check_decode_fails(8, INT32_MAX, "", PSI_E_GCS_DIV);
}

void test_structures_gcs_decode_rejects_truncated(void **state)
{
    (void)state;
    /* {7} written with div 2, read with div 7: after the 1 at bit 1 only
     * six bits remain for a seven-bit remainder. */
    check_decode_fails(1000, 7, "0e", PSI_E_GCS_STREAM);
    /* A 1 in the last bit with no room for its two remainder bits. */
    check_decode_fails(1000, 2, "80", PSI_E_GCS_STREAM);
    /* The §11 stream cut after its sixth byte ends inside 2757's
     * remainder. */
    check_decode_fails(3599, 9, "958b4233a5bb", PSI_E_GCS_STREAM);
    check_decode_fails(3599, 9, "958b4233a5", PSI_E_GCS_STREAM);
}

void test_structures_gcs_decode_rejects_out_of_range(void **state)
{
    (void)state;
    static const uint64_t seven[] = {7};
    check_decode(8, 2, "0e", seven, 1);
    check_decode_fails(7, 2, "0e", PSI_E_GCS_STREAM); /* 7 >= hash_range */
    check_decode_fails(1, 0, "02", PSI_E_GCS_STREAM); /* 1 >= 1 */
    check_decode_fails(2757, 9, "958b4233a5bb09", PSI_E_GCS_STREAM);
    /* q = 1 with div 63: the delta is 2^63 + r, past any int64. */
    check_decode_fails(INT64_MAX, 63, "020000000000000000", PSI_E_GCS_STREAM);
    /* Two deltas of 2^62 with div 62: the sum reaches 2^63. */
    check_decode_fails(INT64_MAX, 62, "02000000000000000200000000000000", PSI_E_GCS_STREAM);
    /* The largest value a hash_range of INT64_MAX admits is fine. */
    static const uint64_t top[] = {UINT64_C(9223372036854775806)};
    check_decode(INT64_MAX, 62, "faffffffffffffff", top, 1);
    /* 30 bytes of zeros, then a 1: q = 240 >= hash_range with div 0. */
    char hex[64] = {0};
    memset(hex, '0', 60);
    strcat(hex, "01");
    check_decode_fails(240, 0, hex, PSI_E_GCS_STREAM);
    static const uint64_t q240[] = {240};
    check_decode(241, 0, hex, q240, 1);
}

void test_structures_gcs_decode_zero_runs_and_repeats(void **state)
{
    (void)state;
    /* div 0: "1 1 1" is 0 then two repeats of 0. */
    static const uint64_t zero[] = {0};
    check_decode(5, 0, "07", zero, 1);
    /* "1 0 1": 0, then 1. */
    static const uint64_t zero_one[] = {0, 1};
    check_decode(5, 0, "05", zero_one, 2);
    /* "1 1 0 0 1": 0, a repeat, then a delta of 2. */
    static const uint64_t zero_two[] = {0, 2};
    check_decode(5, 0, "13", zero_two, 2);
    /* A long zero run inside a byte-spanning stream: 8000 zeros then 1. */
    size_t len = 1001;
    uint8_t *bits = calloc(len, 1);
    assert_non_null(bits);
    bits[1000] = 0x01;
    uint64_t *v = NULL;
    size_t count;
    assert_int_equal(psi_gcs_decode(&v, &count, 8001, 0, bits, len), PSI_OK);
    assert_int_equal(count, 1);
    assert_int_equal(v[0], 8000);
    psi_free(v);
    free(bits);
}

void test_structures_gcs_round_trip(void **state)
{
    (void)state;
    for (unsigned long it = 0; it < test_iters; it++) {
        size_t n = (size_t)rng_below(300), len, count;
        int64_t hr;
        double fpr = (double)(1 + rng_below(500)) / 1000.0;
        int64_t nc = 1 + (int64_t)rng_below(1000);
        assert_int_equal(psi_gcs_hash_range(&hr, fpr, nc, n), PSI_OK);
        uint8_t *e = malloc(n * PSI_ELEMENT_BYTES + 1);
        uint64_t *want = malloc((n + 1) * sizeof *want), *got = NULL;
        assert_true(e != NULL && want != NULL);
        rng_bytes(e, n * PSI_ELEMENT_BYTES);
        for (size_t i = 0; n > 1 && i < n / 8; i++) /* some duplicates */
            memcpy(e + rng_below(n) * PSI_ELEMENT_BYTES, e, PSI_ELEMENT_BYTES);
        for (size_t i = 0; i < n; i++)
            want[i] = psi_gcs_hash(e + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES, hr);
        size_t m = sort_unique(want, n);
        int32_t div;
        uint8_t *bits = gcs_build_checked(&div, &len, hr, e, n);
        assert_int_equal(psi_gcs_decode(&got, &count, hr, div, bits, len), PSI_OK);
        assert_int_equal(count, m);
        if (m > 0)
            assert_memory_equal(got, want, m * sizeof *got);
        psi_free(got);
        free(bits), free(want), free(e);
    }
}

/* -------------------------------------------------------- GCS bound */

/* Encodes values (sorted in place) and checks the stream fits the bound
 * for hr; returns 1 if encoding succeeded, 0 if div was infinite. */
static int check_bound_values(uint64_t *v, size_t n, int64_t hr)
{
    size_t bound;
    assert_int_equal(psi_gcs_bits_bound(&bound, hr, n), PSI_OK);
    uint8_t *bits = malloc(bound + 1);
    assert_non_null(bits);
    size_t len = bound;
    int32_t div;
    int rc = psi_gcs_encode_values(&div, bits, &len, v, n);
    free(bits);
    if (rc == PSI_E_PARAM_OVERFLOW)
        return 0;
    if (rc != PSI_OK)
        fail_msg("bound %zu too small: hr %" PRId64 " n %zu rc %d", bound, hr, n, rc);
    assert_true(len <= bound);
    return 1;
}

/* Fills v with one adversarial pattern of n values below hr. */
static void fill_pattern(uint64_t *v, size_t n, int64_t hr, int pattern, uint64_t vlast)
{
    uint64_t top = (uint64_t)hr - 1;
    for (size_t i = 0; i < n; i++) {
        switch (pattern) {
        case 0: v[i] = top; break;                                   /* all at the top */
        case 1: v[i] = n > 1 ? top / (n - 1) * i : top; break;       /* evenly spread */
        case 2: v[i] = i + 1 < n ? 0 : top; break;                   /* zeros, one top */
        case 3: v[i] = i + 1 < n ? (i < top ? i : top) : vlast; break; /* dense, one far */
        case 4: v[i] = i < 64 ? top >> i : 0; break;                 /* geometric */
        default: v[i] = rng_below(top + 1); break;                   /* random */
        }
    }
    if (pattern == 1 && n > 1)
        v[n - 1] = top;
}

void test_structures_gcs_bound_adversarial(void **state)
{
    (void)state;
    static const int64_t ranges[] = {1, 2, 3, 7, 3599, 100000, (INT64_C(1) << 20) + 3,
                                     INT64_C(1) << 40, INT64_C(1) << 53,
                                     (INT64_C(1) << 54) + 1, INT64_C(1) << 62, INT64_MAX};
    static const size_t sizes[] = {1, 2, 3, 5, 64, 1000};
    size_t ok = 0;
    uint64_t *v = malloc(1000 * sizeof *v);
    assert_non_null(v);
    for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            uint64_t top = (uint64_t)ranges[r] - 1;
            for (int p = 0; p < 6; p++) {
                /* For the dense pattern, walk vlast down from the top so
                 * every div boundary below it is crossed. */
                for (int shift = 0; shift < (p == 3 ? 64 : 1); shift++) {
                    fill_pattern(v, sizes[s], ranges[r], p, top >> shift);
                    ok += (size_t)check_bound_values(v, sizes[s], ranges[r]);
                }
            }
        }
    }
    assert_true(ok > 1000);
    free(v);
}

/* Near each div boundary the stream is longest; probe values around the
 * points where div changes for random hash ranges. */
void test_structures_gcs_bound_random(void **state)
{
    (void)state;
    uint64_t *v = malloc(512 * sizeof *v);
    assert_non_null(v);
    for (unsigned long it = 0; it < test_iters * 10; it++) {
        int64_t hr = (int64_t)(rng_next() >> (1 + rng_below(63)));
        hr = hr < 1 ? 1 : hr;
        size_t n = 1 + (size_t)rng_below(rng_below(2) ? 8 : 512);
        uint64_t vlast = rng_below((uint64_t)hr);
        fill_pattern(v, n, hr, 3, vlast);
        check_bound_values(v, n, hr);
        fill_pattern(v, n, hr, 5, 0);
        check_bound_values(v, n, hr);
    }
    size_t bound;
    assert_int_equal(psi_gcs_bits_bound(&bound, 3599, 5), PSI_OK);
    assert_true(bound >= 7 && bound <= 16); /* real but not wasteful */
    assert_int_equal(psi_gcs_bits_bound(&bound, 3599, 0), PSI_OK);
    assert_int_equal(bound, 0);
    assert_int_equal(psi_gcs_bits_bound(&bound, INT64_MAX, SIZE_MAX), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(bound, 0);
    assert_int_equal(psi_gcs_bits_bound(&bound, 0, 5), PSI_E_INVALID_ARG);
    free(v);
}

/* --------------------------------------------------------- GCS match */

static void check_gcs_match(const uint8_t *c, size_t n, const size_t *want, size_t n_want)
{
    static const uint64_t s11[] = {458, 1010, 1624, 2090, 2757};
    size_t out[8], count = n;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 3599, c, n, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, n_want);
    for (size_t i = 0; i < n_want; i++)
        assert_int_equal(out[i], want[i]);
}

void test_structures_gcs_match_known(void **state)
{
    (void)state;
    uint8_t *c = client6();
    static const size_t want[] = {2, 1, 4}; /* by hash, as psi.js */
    check_gcs_match(c, 6, want, 3);
    size_t out[1], count = 0;
    assert_int_equal(psi_gcs_match(out, &count, NULL, 0, 3599, c, 6, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, 0);
    count = 6;
    uint64_t none[] = {0};
    assert_int_equal(psi_gcs_match(NULL, &count, none, 1, 3599, NULL, 0, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 0;
    assert_int_equal(psi_gcs_match(NULL, &count, none, 1, 3599, NULL, 0, PSI_ELEMENT_BYTES), PSI_OK);
    free(c);
}

void test_structures_gcs_match_duplicates(void **state)
{
    (void)state;
    uint8_t *c = client_dups();
    static const size_t want[] = {0, 2, 4, 3}; /* §9.5: every copy matches */
    check_gcs_match(c, 5, want, 4);
    /* A value repeated in the set does not re-emit indices. */
    static const uint64_t rep[] = {1010, 1010, 2090, 2090};
    size_t out[5], count = 5;
    assert_int_equal(psi_gcs_match(out, &count, rep, 4, 3599, c, 5, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, 4);
    free(c);
}

void test_structures_gcs_match_capacity(void **state)
{
    (void)state;
    uint8_t *c = client_dups();
    static const uint64_t s11[] = {458, 1010, 1624, 2090, 2757};
    size_t out[5] = {7, 7, 7, 7, 7}, count = 3;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 3599, c, 5, PSI_ELEMENT_BYTES), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(count, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(out[i], 0); /* no partial result */
    count = 4;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 3599, c, 5, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, 4);
    count = 5;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 0, c, 5, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    free(c);
}
