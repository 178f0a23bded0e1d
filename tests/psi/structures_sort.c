/* test_structures, the client's sort (psi/cxx_sort.c): libc++'s std::sort
 * order, pinned by known cases and checked on random ones, and GCS matches
 * in psi.js 2.0.6's order end to end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cxx_sort.h"
#include "gcs.h"
#include "structures_common.h"

/* ------------------------------------------- libc++ std::sort order */

/* The client sorts its (hash, index) pairs with libc++'s unstable std::sort
 * (LLVM 20.1.4 in psi.js 2.0.6), and psi.js emits matching indices in that
 * order, so ties must land exactly where libc++ puts them.  Each case below
 * is a hash sequence made by sort_case_hashes(); its digest is that of the
 * index order libc++ 20.1.4 (emscripten 4.0.10's headers) produced, and the
 * same order came out of psi.js 2.0.6's getIntersection for client inputs
 * whose GCS hashes follow the sequence (order-preservingly relabelled).
 * The cases cover n < 24 (sorting networks, insertion sort), 24..128
 * (median of 3), > 128 (ninther), long runs of ties, and inputs that reach
 * the heap-sort fallback (SORT_KILLER). */
enum { SORT_RANDOM, SORT_EQUAL, SORT_ASC, SORT_DESC, SORT_ORGAN, SORT_SAW, SORT_KILLER };

/* McIlroy's adversary against libc++'s sort, with values halved so that
 * pairs tie: drives introsort to its heap-sort fallback (twice). */
static const uint8_t SORT_KILLER_200[200] = {
    0,  1,  2,  89, 3,  6,  4,  88, 88, 5,  39, 7,  87, 87, 8,  9,  10, 85, 86, 86,
    11, 12, 13, 84, 84, 85, 14, 15, 16, 82, 83, 83, 17, 18, 19, 81, 81, 82, 20, 21,
    22, 79, 80, 80, 23, 24, 25, 78, 78, 79, 26, 27, 28, 76, 77, 77, 29, 30, 31, 75,
    75, 76, 32, 33, 34, 73, 74, 74, 35, 36, 37, 72, 72, 73, 38, 70, 71, 71, 100, 98,
    99, 98, 97, 97, 96, 96, 95, 95, 94, 94, 93, 93, 92, 92, 91, 91, 90, 90, 89, 1,
    0,  2,  3,  5,  6,  7,  9,  8,  10, 12, 11, 13, 15, 14, 16, 18, 17, 19, 21, 20,
    22, 24, 23, 25, 27, 26, 28, 30, 29, 31, 33, 32, 34, 36, 35, 37, 70, 69, 39, 69,
    68, 68, 67, 67, 66, 66, 65, 65, 64, 64, 63, 63, 62, 62, 61, 61, 60, 60, 59, 59,
    58, 58, 57, 57, 56, 56, 55, 55, 54, 54, 53, 53, 52, 52, 51, 51, 50, 50, 49, 49,
    48, 48, 47, 47, 46, 46, 45, 45, 44, 44, 43, 43, 42, 42, 41, 41, 40, 40, 4,  38,
};

static uint64_t sort_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Fills hashes[0..n) for one case; range >= 1. */
static void sort_case_hashes(uint64_t *h, size_t n, int kind, uint64_t range, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case SORT_RANDOM: h[i] = sort_xorshift(&s) % range; break;
        case SORT_EQUAL: h[i] = range - 1; break;
        case SORT_ASC: h[i] = (uint64_t)i * range / n; break;
        case SORT_DESC: h[i] = (uint64_t)(n - 1 - i) * range / n; break;
        case SORT_ORGAN: h[i] = (uint64_t)(i < n - 1 - i ? i : n - 1 - i) % range; break;
        case SORT_SAW: h[i] = (uint64_t)i % range; break;
        default: h[i] = SORT_KILLER_200[i % 200] + (uint64_t)(i / 200) * 101; break;
        }
    }
}

/* FNV-1a over the output index sequence. */
static uint64_t sort_digest(const size_t *idx, size_t n)
{
    uint64_t d = 14695981039346656037u;
    for (size_t i = 0; i < n; i++) {
        d ^= (uint64_t)idx[i];
        d *= 1099511628211u;
    }
    return d;
}

typedef struct sort_case {
    size_t n;
    int kind;
    uint64_t range;
    uint64_t seed;
    uint64_t digest; /* of libc++'s output order */
} sort_case;

static const sort_case SORT_CASES[] = {
    {0, SORT_RANDOM, 1, 1, 0xcbf29ce484222325u},
    {1, SORT_RANDOM, 1, 1, 0xaf63bd4c8601b7dfu},
    {2, SORT_EQUAL, 1, 1, 0x08328707b4eb6e3au},
    {3, SORT_EQUAL, 1, 1, 0xd949aa186c0c4928u},
    {4, SORT_EQUAL, 1, 1, 0x4475327f98e05411u},
    {5, SORT_EQUAL, 1, 1, 0x3378e3d0c52edfafu},
    {5, SORT_RANDOM, 2, 7, 0x5829878d4f0b5147u},
    {6, SORT_EQUAL, 1, 1, 0xa54ac5bf0ea60ddeu},
    {23, SORT_RANDOM, 3, 11, 0x8e38f41903b29790u},
    {24, SORT_EQUAL, 1, 1, 0x4d6366cf7d8aa54du},
    {24, SORT_RANDOM, 3, 12, 0x036900d8b7b5d171u},
    {25, SORT_DESC, 5, 1, 0x72d18a4418b6bf13u},
    {40, SORT_RANDOM, 4, 13, 0x673ab4b1813ac3f7u},
    {64, SORT_ORGAN, 7, 1, 0xf23836f1bc50a8afu},
    {128, SORT_RANDOM, 10, 14, 0xc6e42d72ef84268fu},
    {128, SORT_EQUAL, 1, 1, 0x356c6cc8137514a5u},
    {129, SORT_RANDOM, 10, 15, 0xe263b3da3878516fu},
    {130, SORT_ASC, 20, 1, 0x6ed8393616e62dbau},
    {200, SORT_KILLER, 1, 1, 0xfcd22a172374015fu},
    {200, SORT_SAW, 9, 1, 0x6cf867c5cfa5be4fu},
    {333, SORT_DESC, 40, 1, 0x0403386fb8faf7d3u},
    {500, SORT_RANDOM, 50, 16, 0xb5cb0ec1f1eea6f7u},
    {777, SORT_ORGAN, 100, 1, 0x984bafd8b52316fbu},
    {1000, SORT_RANDOM, 3, 17, 0x06e17b92c6039305u},
    {1000, SORT_EQUAL, 1, 1, 0xb1a3f67a8a6c3095u},
    {1000, SORT_KILLER, 1, 1, 0xcaffc7403a5f5b09u},
    {2048, SORT_SAW, 31, 1, 0x01d3c9ed871b65b3u},
    {3000, SORT_RANDOM, 1000, 18, 0x9ab6d77229b8db71u},
    {3000, SORT_DESC, 300, 1, 0x4736b8d77da785d5u},
};

void test_structures_cxx_sort_known(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof SORT_CASES / sizeof SORT_CASES[0]; c++) {
        const sort_case *k = &SORT_CASES[c];
        uint64_t *h = malloc((k->n + 1) * sizeof *h);
        psi_hash_index *items = malloc((k->n + 1) * sizeof *items);
        size_t *idx = malloc((k->n + 1) * sizeof *idx);
        uint8_t *seen = calloc(k->n + 1, 1);
        assert_true(h != NULL && items != NULL && idx != NULL && seen != NULL);
        sort_case_hashes(h, k->n, k->kind, k->range, k->seed);
        for (size_t i = 0; i < k->n; i++)
            items[i] = (psi_hash_index){h[i], i};
        psi_cxx_sort_by_hash(items, k->n);
        for (size_t i = 0; i < k->n; i++) {
            assert_true(items[i].index < k->n && !seen[items[i].index]);
            seen[items[i].index] = 1;
            assert_int_equal(items[i].hash, h[items[i].index]);
            if (i > 0)
                assert_true(items[i - 1].hash <= items[i].hash);
            idx[i] = items[i].index;
        }
        if (sort_digest(idx, k->n) != k->digest)
            fail_msg("libc++ order differs in case %zu (n %zu)", c, k->n);
        free(h);
        free(items);
        free(idx);
        free(seen);
    }
}

/* Random sequences: always a sorted permutation (the order itself is
 * pinned by the cases above and the psi.js runs). */
void test_structures_cxx_sort_random(void **state)
{
    (void)state;
    for (unsigned long it = 0; it < test_iters; it++) {
        size_t n = (size_t)rng_below(it % 4 == 0 ? 2000 : 200);
        uint64_t range = 1 + rng_below(it % 2 ? 4 : n + 1);
        psi_hash_index *items = malloc((n + 1) * sizeof *items);
        uint8_t *seen = calloc(n + 1, 1);
        assert_true(items != NULL && seen != NULL);
        for (size_t i = 0; i < n; i++)
            items[i] = (psi_hash_index){rng_below(range), i};
        psi_cxx_sort_by_hash(items, n);
        for (size_t i = 0; i < n; i++) {
            assert_true(items[i].index < n && !seen[items[i].index]);
            seen[items[i].index] = 1;
            if (i > 0)
                assert_true(items[i - 1].hash <= items[i].hash);
        }
        free(items);
        free(seen);
    }
}

/* End to end through the structures, against psi.js 2.0.6: server key
 * 01 02 .. 20, server inputs "s0".."s59", client inputs among
 * "s0".."s89", reveal on; the client's elements
 * are its inputs under the server key, as after unmasking.  want is
 * psi.js's getIntersection for the same setup and client. */
static void check_gcs_match_psijs(double fpr, const size_t *client_ids, size_t n,
                                  const size_t *want, size_t n_want)
{
    psi_settings st;
    psi_settings_default(&st);
    st.role = PSI_ROLE_SERVER;
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i + 1);
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create_from_key(&e, &st, key, sizeof key), PSI_OK);
    char names[90][8];
    psi_value vals[150];
    for (size_t i = 0; i < 90; i++)
        snprintf(names[i], sizeof names[i], "s%zu", i);
    for (size_t i = 0; i < 60; i++)
        vals[i] = (psi_value){(const uint8_t *)names[i], strlen(names[i])};
    uint8_t *srv = malloc(60 * PSI_ELEMENT_BYTES), *cli = malloc((n + 1) * PSI_ELEMENT_BYTES);
    assert_true(srv != NULL && cli != NULL);
    size_t len = 60 * PSI_ELEMENT_BYTES;
    assert_int_equal(psi_engine_mask(e, srv, &len, vals, 60), PSI_OK);
    for (size_t i = 0; i < n; i++) {
        assert_true(client_ids[i] < 90);
        vals[i] = (psi_value){(const uint8_t *)names[client_ids[i]], strlen(names[client_ids[i]])};
    }
    len = n * PSI_ELEMENT_BYTES;
    assert_int_equal(psi_engine_mask(e, cli, &len, vals, n), PSI_OK);
    int64_t hr;
    assert_int_equal(psi_gcs_hash_range(&hr, fpr, 1, 60), PSI_OK);
    int32_t div;
    size_t bits_len;
    uint8_t *bits = gcs_build_checked(&div, &bits_len, hr, srv, 60);
    uint64_t *values;
    size_t n_values;
    assert_int_equal(psi_gcs_decode(&values, &n_values, hr, div, bits, bits_len), PSI_OK);
    size_t out[150], count = n;
    assert_int_equal(psi_gcs_match(out, &count, values, n_values, hr, cli, n, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, n_want);
    for (size_t i = 0; i < n_want; i++)
        if (out[i] != want[i])
            fail_msg("position %zu: index %zu, psi.js has %zu", i, out[i], want[i]);
    psi_free(values);
    free(bits);
    free(srv);
    free(cli);
    psi_engine_free(e);
}

void test_structures_gcs_match_psijs_order(void **state)
{
    (void)state;
    size_t ids[150];
    /* fpr 0.99: hash_range 60.  Client "s(i*i mod 45)", i < 150: every
     * element matches, many ties, ninther pivots. */
    for (size_t i = 0; i < 150; i++)
        ids[i] = (i * i) % 45;
    static const size_t want150[] = {
        70,  115, 20,  110, 65,  25,  100, 10,  55,  145, 80,  35,  125, 2,   97,  43,  92,
        7,   88,  128, 38,  83,  142, 133, 47,  137, 52,  114, 69,  66,  24,  141, 21,  111,
        126, 144, 36,  81,  84,  39,  54,  9,   6,   96,  51,  99,  129, 101, 119, 74,  106,
        56,  11,  34,  146, 16,  61,  124, 79,  29,  130, 95,  5,   40,  85,  140, 50,  147,
        87,  138, 27,  117, 72,  102, 3,   93,  123, 18,  78,  63,  33,  42,  108, 12,  57,
        132, 48,  86,  76,  59,  41,  104, 14,  149, 94,  131, 4,   31,  139, 49,  121, 0,
        60,  15,  105, 90,  30,  135, 45,  120, 75,  91,  19,  89,  109, 26,  136, 1,   134,
        116, 71,  44,  46,  64,  98,  62,  8,   127, 53,  17,  143, 118, 37,  107, 73,  82,
        28,  77,  112, 113, 23,  22,  32,  68,  67,  103, 13,  122, 148, 58,
    };
    check_gcs_match_psijs(0.99, ids, 150, want150, 150);
    /* fpr 0.5: hash_range 120.  Client "s(7i mod 90)", i < 40: some miss
     * (s60.. are not in the set), median-of-3 pivots. */
    for (size_t i = 0; i < 40; i++)
        ids[i] = (i * 7) % 90;
    static const size_t want40[] = {8,  29, 1,  18, 14, 3, 27, 4,  22, 32, 15,
                                    6,  16, 30, 2,  25, 31, 39, 10, 17, 28, 7,
                                    0,  33, 5,  26, 34, 21, 13, 19, 20};
    check_gcs_match_psijs(0.5, ids, 40, want40, 31);
    /* fpr 0.9: 12 elements, insertion sort. */
    static const size_t ids12[] = {3, 3, 50, 3, 7, 3, 50, 64, 3, 7, 3, 3};
    static const size_t want12[] = {0, 1, 3, 5, 8, 10, 11, 4, 9, 2, 6, 7};
    check_gcs_match_psijs(0.9, ids12, 12, want12, 12);
}
